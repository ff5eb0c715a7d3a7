/* A JS call the supervisor works on (call.h): its creation and end, the
 * messages that carry its output chunks and its end to the JS thread
 * through the addon's one TSFN, the supervisor's hooks that queue them, and
 * the event-loop hold. What a call's end becomes in JS is its kind's hook
 * (call->settle: run.c for a box, cell.c for a cell). */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "call.h"

void ks_napi_call_free(napi_env env, struct ks_napi_call *run) {
  /* With env NULL the environment is gone, and its references with it. */
  if (env != NULL) {
    for (int i = 0; i < 2; i++) {
      if (run->cb[i] != NULL)
        (void) napi_delete_reference(env, run->cb[i]);
    }
    if (run->on_stdin != NULL)
      (void) napi_delete_reference(env, run->on_stdin);
    if (run->on_started != NULL)
      (void) napi_delete_reference(env, run->on_started);
  }
  ks_napi_output_free(&run->output);
  free(run->done);
  free(run);
}

static void ks__missed(struct ks_napi_call *run, enum ks_stream s, size_t len) {
  atomic_fetch_add(&run->missed_chunks[s], 1);
  atomic_fetch_add(&run->missed_bytes[s], len);
}

void ks_napi_queue_chunk(struct ks_napi_call *run, enum ks_stream s, const char *data,
                         size_t len) {
  struct ks_napi_msg *msg;

  if (atomic_load(&run->queued_bytes) + len >
      (run->flow ? KS_NAPI_FLOW_CAP : KS_NAPI_STREAM_BUDGET)) {
    ks__missed(run, s, len);
    return;
  }
  msg = malloc(sizeof *msg + len);
  if (msg == NULL) {
    ks__missed(run, s, len);
    return;
  }
  msg->kind = KS_NAPI_MSG_CHUNK;
  msg->run = run;
  msg->box = NULL;
  msg->cell = NULL;
  msg->stream = s;
  msg->len = len;
  memcpy(msg->data, data, len);
  atomic_fetch_add(&run->queued_bytes, len);
  if (napi_call_threadsafe_function(run->addon->tsfn, msg, napi_tsfn_nonblocking) != napi_ok) {
    atomic_fetch_sub(&run->queued_bytes, len);
    ks__missed(run, s, len);
    free(msg);
  }
}

/* Whether a flow call can take more output; if not, the JS thread is to
 * wake the engine once it can (flow_paused, then checked again: a JS
 * thread that took the queue down in between has either seen the flag or
 * left the queue low enough for this check). */
static bool ks__output_room(void *ctx, struct ks_box *box) {
  struct ks_napi_call *run = ks_box_user(box);
  (void) ctx;
  if (atomic_load(&run->queued_bytes) < KS_NAPI_FLOW_WINDOW)
    return true;
  atomic_store(&run->flow_paused, true);
  if (atomic_load(&run->queued_bytes) < KS_NAPI_FLOW_WINDOW / 2) {
    atomic_store(&run->flow_paused, false);
    return true;
  }
  return false;
}

/* JS thread: a flow call's chunk was taken; below half the window a
 * paused box is read again. */
static void ks__took_chunk(struct ks_napi_call *run, size_t len) {
  size_t left = atomic_fetch_sub(&run->queued_bytes, len) - len;
  if (run->flow && left < KS_NAPI_FLOW_WINDOW / 2 && atomic_load(&run->flow_paused) &&
      atomic_exchange(&run->flow_paused, false) && run->addon->sup != NULL)
    ks_sup_wake(run->addon->sup);
}

static void ks__on_output(void *ctx, struct ks_box *box, enum ks_stream s, const char *data,
                          size_t len) {
  (void) ctx;
  ks_napi_queue_chunk(ks_box_user(box), s, data, len);
}

/* A bodiless event for the call's callback on the JS thread (kind, and len
 * as its one argument's bit), queued behind what the TSFN already holds,
 * so before the box's end. Without memory for it the event is lost: the
 * call's end is its caller's fallback (see each hook). */
static bool ks__queue_event(struct ks_box *box, enum ks_napi_msg_kind kind, size_t len) {
  struct ks_napi_call *run = ks_box_user(box);
  struct ks_napi_msg *msg = malloc(sizeof *msg);

  if (msg == NULL)
    return false;
  msg->kind = kind;
  msg->run = run;
  msg->box = NULL;
  msg->cell = NULL;
  msg->stream = KS_STDOUT;
  msg->len = len;
  if (napi_call_threadsafe_function(run->addon->tsfn, msg, napi_tsfn_nonblocking) == napi_ok)
    return true;
  free(msg);
  return false;
}

/* The feed's slot is free (or the feed gone): onStdin(gone) on the JS
 * thread. One message per chunk taken, so at most one or two are ever
 * queued for a call; without memory for one the caller waits for the
 * call's end instead. */
static void ks__on_stdin(void *ctx, struct ks_box *box, bool gone) {
  (void) ctx;
  ks__queue_event(box, KS_NAPI_MSG_STDIN, gone ? 1 : 0);
}

/* The process's workload started: onStarted(stdoutFd) on the JS thread,
 * the descriptor (or null) carried as len - 1. Without memory for the
 * message the process is taken as started at its end, and the engine
 * keeps reading its stdout (false: not taken). */
static bool ks__on_started(void *ctx, struct ks_box *box, int stdout_fd) {
  (void) ctx;
  return ks__queue_event(box, KS_NAPI_MSG_STARTED, (size_t) (stdout_fd + 1));
}

/* A STARTED message's descriptor, if any, closed: nobody took it. */
static void ks__drop_started_fd(const struct ks_napi_msg *msg) {
  if (msg->kind == KS_NAPI_MSG_STARTED && msg->len > 0)
    (void) close((int) msg->len - 1);
}

/* One of the call's event callbacks (onStdin(gone), onStarted(stdoutFd)).
 * onStarted owns the descriptor only once it returned true: one that threw,
 * or could not run (a Worker being torn down), leaves it to be closed here. */
static void ks__deliver_event(napi_env env, struct ks_napi_msg *msg) {
  bool started = msg->kind == KS_NAPI_MSG_STARTED;
  napi_ref ref = started ? msg->run->on_started : msg->run->on_stdin;
  napi_value cb = NULL;
  napi_value arg;
  napi_value undefined;
  napi_value ignored;
  napi_status st;

  if (ref == NULL || napi_get_reference_value(env, ref, &cb) != napi_ok || cb == NULL ||
      napi_get_undefined(env, &undefined) != napi_ok) {
    ks__drop_started_fd(msg);
    return;
  }
  if (!started)
    st = napi_get_boolean(env, msg->len != 0, &arg);
  else if (msg->len == 0)
    st = napi_get_null(env, &arg);
  else
    st = napi_create_int32(env, (int32_t) msg->len - 1, &arg);
  if (st != napi_ok) {
    ks__drop_started_fd(msg);
    return;
  }
  if (napi_call_function(env, undefined, cb, 1, &arg, &ignored) != napi_ok) {
    napi_value exception;
    (void) napi_get_and_clear_last_exception(env, &exception);
    ks__drop_started_fd(msg);
    return;
  }
  if (started && msg->len > 0) {
    bool owned = false;
    if (napi_get_value_bool(env, ignored, &owned) != napi_ok || !owned)
      ks__drop_started_fd(msg);
  }
}

static void ks__on_cell_output(void *ctx, struct ks_cell *cell, enum ks_stream s,
                               const char *data, size_t len) {
  (void) ctx;
  ks_napi_queue_chunk(ks_cell_user(cell), s, data, len);
}

void ks_napi_send_done(struct ks_napi_call *run, struct ks_box *box, struct ks_cell *cell) {
  struct ks_napi_msg *msg = run->done;

  run->done = NULL; /* the message owns itself from here */
  msg->kind = box != NULL ? KS_NAPI_MSG_DONE : KS_NAPI_MSG_CELL_DONE;
  msg->run = run;
  msg->box = box;
  msg->cell = cell;
  msg->len = 0;
  if (napi_call_threadsafe_function(run->addon->tsfn, msg, napi_tsfn_nonblocking) == napi_ok)
    return;
  /* The environment is closing: nobody is left to settle the promise, and
   * chunks still queued reach ks__call_js without an env, which never
   * touches their run. Only what C owns is freed. */
  free(msg);
  ks_napi_call_free(NULL, run);
  ks_box_free(box);
  ks_cell_free(cell);
}

static void ks__on_done(void *ctx, struct ks_box *box) {
  struct ks_napi_call *run = ks_box_user(box);
  (void) ctx;
  ks_napi_decode_outputs(&run->output, ks_box_result(box)->out);
  ks_napi_send_done(run, box, NULL);
}

static void ks__on_cell_done(void *ctx, struct ks_cell *cell) {
  struct ks_napi_call *run = ks_cell_user(cell);
  (void) ctx;
  ks_napi_decode_outputs(&run->output, ks_cell_result(cell)->out);
  ks_napi_send_done(run, NULL, cell);
}

static void ks__deliver_chunk(napi_env env, struct ks_napi_msg *msg) {
  struct ks_napi_call *run = msg->run;
  napi_value cb = NULL;
  napi_value buf;
  napi_value undefined;
  napi_value ignored;
  void *data;

  ks__took_chunk(run, msg->len);
  if (run->cb[msg->stream] == NULL ||
      napi_get_reference_value(env, run->cb[msg->stream], &cb) != napi_ok || cb == NULL)
    return;
  if (napi_create_buffer_copy(env, msg->len, msg->data, &data, &buf) != napi_ok ||
      napi_get_undefined(env, &undefined) != napi_ok)
    return;
  if (napi_call_function(env, undefined, cb, 1, &buf, &ignored) != napi_ok) {
    /* A callback that throws changes nothing: the run goes on. */
    napi_value exception;
    (void) napi_get_and_clear_last_exception(env, &exception);
  }
}

static void ks__call_js(napi_env env, napi_value js_cb, void *context, void *data) {
  struct ks_addon *addon = context;
  struct ks_napi_msg *msg = data;
  (void) js_cb;

  if (msg->kind == KS_NAPI_MSG_CHUNK) {
    if (env != NULL) /* NULL: teardown, nobody left to deliver to */
      ks__deliver_chunk(env, msg);
    free(msg);
    return;
  }
  if (msg->kind == KS_NAPI_MSG_STDIN || msg->kind == KS_NAPI_MSG_STARTED) {
    if (env != NULL) /* NULL: teardown; the run may be gone, never touched */
      ks__deliver_event(env, msg);
    else
      ks__drop_started_fd(msg);
    free(msg);
    return;
  }
  if (env != NULL) {
    msg->run->settle(env, msg->run, msg->box, msg->cell);
    if (!msg->run->parked)
      ks_napi_loop_release(env, addon);
  }
  ks_napi_call_free(env, msg->run);
  if (msg->box != NULL)
    ks_addon_release_after_turn(env, addon, ks_box_take_release(msg->box));
  ks_box_free(msg->box);
  ks_cell_free(msg->cell);
  free(msg);
}

static void ks__tsfn_finalize(napi_env env, void *data, void *hint) {
  struct ks_addon *addon = data;
  (void) env;
  (void) hint;
  /* The TSFN is about to be deleted: the supervisor must be stopped (and so
   * stop calling it) before this returns. */
  ks_addon_shutdown(addon);
  addon->tsfn = NULL;
}

int ks_napi_ensure_supervisor(napi_env env, struct ks_addon *addon, struct ks_err *err) {
  static const struct ks_sup_hooks hooks = {.on_output = ks__on_output,
                                            .on_done = ks__on_done,
                                            .on_cell_output = ks__on_cell_output,
                                            .on_cell_done = ks__on_cell_done,
                                            .on_stdin = ks__on_stdin,
                                            .on_started = ks__on_started,
                                            .output_room = ks__output_room};
  napi_value name;

  if (addon->sup != NULL)
    return 0;
  if (addon->shut_down)
    return ks_err_set(err, ECANCELED, "spawn", NULL);
  if (addon->tsfn == NULL) {
    if (napi_create_string_utf8(env, "kern-sandbox supervisor", NAPI_AUTO_LENGTH, &name) !=
            napi_ok ||
        napi_create_threadsafe_function(env, NULL, NULL, name, 0, 1, addon, ks__tsfn_finalize,
                                        addon, ks__call_js, &addon->tsfn) != napi_ok)
      return ks_err_set(err, ENOMEM, "napi_create_threadsafe_function", NULL);
    /* Held only while something waits on it (ks_napi_loop_hold). */
    if (addon->loop_holds == 0)
      (void) napi_unref_threadsafe_function(env, addon->tsfn);
  }
  return ks_sup_start(&hooks, addon, &addon->sup, err);
}

struct ks_napi_call *ks_napi_call_new(napi_env env, struct ks_addon *addon,
                                      const napi_value cbs[2], const bool stream[2],
                                      ks_napi_settle_fn settle) {
  struct ks_napi_call *run = calloc(1, sizeof *run);
  if (run == NULL) {
    napi_throw_error(env, "ENOMEM", "kern-sandbox: out of memory");
    return NULL;
  }
  run->addon = addon;
  run->settle = settle;
  run->done = malloc(sizeof *run->done);
  if (run->done == NULL) {
    napi_throw_error(env, "ENOMEM", "kern-sandbox: out of memory");
    ks_napi_call_free(env, run);
    return NULL;
  }
  for (int s = 0; s < 2; s++) {
    if (stream[s] && napi_create_reference(env, cbs[s], 1, &run->cb[s]) != napi_ok) {
      ks_napi_throw_last(env);
      ks_napi_call_free(env, run);
      return NULL;
    }
  }
  return run;
}

void ks_napi_call_begun(napi_env env, struct ks_napi_call *run) {
  if (!run->parked)
    ks_napi_loop_hold(env, run->addon);
}

/* The rule for the event loop (every unref of ours follows it): the addon
 * may leave the loop free only while no promise it returned is pending on
 * something JS waits for. Every promise of a box or a cell settles through
 * the TSFN, so the TSFN is held (ref'd) while any such promise is awaited:
 * a call's own promise from its submission (ks_napi_call_begun), and a
 * parked or kernel box's end while JS waits for it (holdLoop, below). An
 * idle prewarmed box or an open kernel holds nothing, so a program that
 * forgets a Sandbox still exits. */
void ks_napi_loop_hold(napi_env env, struct ks_addon *addon) {
  if (addon->loop_holds++ == 0 && addon->tsfn != NULL)
    (void) napi_ref_threadsafe_function(env, addon->tsfn);
}

void ks_napi_loop_release(napi_env env, struct ks_addon *addon) {
  if (addon->loop_holds == 0)
    return;
  if (--addon->loop_holds == 0 && addon->tsfn != NULL)
    (void) napi_unref_threadsafe_function(env, addon->tsfn);
}
