/* startBox, parkBox, claimBox, startKernel: hand a box to the supervisor
 * (its request read by request.c) and settle its promise with the raw
 * result (raw-result.h) when it ends; and the group natives (cancelGroup,
 * forgetGroup, dropParked), the claim's SPEC from this thread (claimSend),
 * and the loop hold (holdLoop/releaseLoop). The engine's counts, for the
 * tests only, are testing.c's. The call object and the TSFN that carries its end are call.c's. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../core/box/supervisor.h"
#include "../core/box/text.h"
#include "addon.h"
#include "call.h"
#include "handle.h"
#include "raw-result.h"
#include "request.h"

/* The values of the raw result's fields (raw-result.h). */
static napi_value ks__exit_code(napi_env env, const struct ks_box_result *res) {
  return res->status_known && WIFEXITED(res->wait_status)
             ? ks_napi_number(env, WEXITSTATUS(res->wait_status))
             : ks_napi_null(env);
}

static napi_value ks__term_signal(napi_env env, const struct ks_box_result *res) {
  return res->status_known && WIFSIGNALED(res->wait_status)
             ? ks_napi_number(env, WTERMSIG(res->wait_status))
             : ks_napi_null(env);
}

/* The first (at most 4) bytes kern wrote on KERN_STARTED_FD, the first in
 * the low byte (lib/faults.js, startedByte). */
static uint32_t ks__started_word(const struct ks_box_result *res) {
  size_t nkeep = res->nstarted < sizeof res->started ? res->nstarted : sizeof res->started;
  uint32_t word = 0;
  for (size_t i = 0; i < nkeep && i < 4; i++)
    word |= (uint32_t) res->started[i] << (8 * i);
  return word;
}

static double ks__ms(const struct timeval *tv) {
  return tv->tv_sec * 1e3 + tv->tv_usec / 1e3;
}

/* Nothing changed, the common case: 0, not an empty packed list (its two
 * typed arrays and four named properties would cost a call's path). null:
 * no scan, or it failed. */
static napi_value ks__files_value(napi_env env, struct ks_box *box, const struct ks_box_result *res) {
  if (!ks_box_request_scans(box) || res->scan_errnum != 0)
    return ks_napi_null(env);
  if (res->nchanges == 0)
    return ks_napi_number(env, 0);
  return ks_napi_changes_value(env, res->changes, res->nchanges);
}

/* The raw outcome, made by the JS function lib/binding.js gave configure()
 * (makeRawResult) from the fields of raw-result.h in its order: one call
 * into JS and an object literal of a fixed shape, far cheaper on a call's
 * path than named properties set from here. */
#define KS__RAW_INDEX(name, value) KS__RAW_##name,
enum { KS_RAW_RESULT_FIELDS(KS__RAW_INDEX) KS__RAW_FIELDS };
#undef KS__RAW_INDEX

static napi_value ks__result_object(napi_env env, struct ks_napi_call *run, struct ks_box *box) {
  struct ks_box_result *res = ks_box_result(box);
  napi_value v[KS__RAW_FIELDS];

#define KS__RAW_VALUE(name, value)                                                               \
  if ((v[KS__RAW_##name] = (value)) == NULL)                                                      \
    return NULL;
  KS_RAW_RESULT_FIELDS(KS__RAW_VALUE)
#undef KS__RAW_VALUE
  return ks_napi_make(env, run->addon->make_raw, KS__RAW_FIELDS, v);
}

/* RAW_RESULT_FIELDS: the names makeRawResult takes, in order. */
static bool ks__export_raw_fields(napi_env env, napi_value exports) {
  static const char *const names[] = {
#define KS__RAW_NAME(name, value) #name,
      KS_RAW_RESULT_FIELDS(KS__RAW_NAME)
#undef KS__RAW_NAME
  };
  return ks_napi_export_names(env, exports, "RAW_RESULT_FIELDS", names, KS__RAW_FIELDS);
}

/* The call's settle hook (call.h): the run's promise from its box. */
static void ks__settle(napi_env env, struct ks_napi_call *run, struct ks_box *box,
                       struct ks_cell *cell) {
  (void) cell;
  struct ks_box_result *res = ks_box_result(box);
  napi_value value;

  if (res->spawn_errnum != 0) {
    struct ks_err err = {
        .errnum = res->spawn_errnum, .syscall = res->spawn_syscall, .path = NULL};
    /* Only execve failures are about kern's path; the rest are resources. */
    if (res->spawn_syscall != NULL && strcmp(res->spawn_syscall, "execve") == 0)
      err.path = ks_box_request_path(box);
    ks_napi_reject_system(env, run->deferred, &err);
    return;
  }
  value = ks__result_object(env, run, box);
  if (value != NULL)
    (void) napi_resolve_deferred(env, run->deferred, value);
  else
    ks_napi_reject_pending(env, run->deferred, "kern-sandbox: could not build the run result");
}

/* ---- the box entry points, each taking one options object (request.c):
 *   startBox(opts) -> Promise<RawRunResult>: a cold box.
 *   parkBox(opts) -> { parked, channel, done }: a prewarm box, started and
 *     parked under opts.parkKey; parked is its handle (handle.h), channel
 *     whether the handle holds a copy of its channel (opts.shareChannel),
 *     done settles when it ends ({ claimed: true } once a call took it over)
 *     and holds no reference on the loop; dropParked(parked) recycles it.
 *   claimBox(parked, opts) -> Promise<RawRunResult>: a call in that parked
 *     box if it is still there, else cold (or `missed`, with claimOnly).
 *   startKernel(opts) -> Promise<RawRunResult>: a kernel's box, in the
 *     parked box opts.claim if given and still there. ------------------ */

/* The result of parkBox: { parked, channel, done }. */
static napi_value ks__parked_result(napi_env env, struct ks_addon *addon, int shared,
                                    uint64_t park_key, napi_value promise) {
  napi_value out;
  napi_value handle;
  bool channel = shared >= 0;

  if (napi_create_object(env, &out) != napi_ok) {
    if (shared >= 0)
      (void) close(shared);
    ks_napi_throw_last(env);
    return NULL;
  }
  handle = ks_handle_new(env, addon, KS_HANDLE_PARKED, shared, NULL, park_key);
  if (handle == NULL)
    return NULL;
  if (!ks_napi_set(env, out, "parked", handle) ||
      !ks_napi_set(env, out, "channel", ks_napi_bool(env, channel)) ||
      !ks_napi_set(env, out, "done", promise)) {
    /* No one will ever see the handle: its channel copy must not stay
     * held until the environment's teardown. (An exception is pending; the
     * release's own errors cannot add to it for a handle made here.) */
    int fd;
    if (ks_handle_release(env, addon, handle, KS_HANDLE_PARKED, "parkBox", &fd) == 1 && fd >= 0)
      (void) close(fd);
    return NULL;
  }
  return out;
}

/* An entry point of mode: reads its arguments, submits the box, and
 * returns what the entry point returns (request.h). */
static napi_value ks__start(napi_env env, napi_callback_info info, enum ks_napi_box_mode mode,
                            const char *fn) {
  size_t want = mode == KS_NAPI_CLAIM ? 2 : 1;
  size_t argc = 2;
  napi_value argv[2];
  napi_value streams[4];
  struct ks_addon *addon;
  struct ks_box_request req;
  struct ks_napi_call *run = NULL;
  struct ks_box *box = NULL;
  struct ks_err err;
  napi_value promise = NULL;
  napi_value out;
  uint64_t park_key;
  int shared = -1;

  KS_NAPI_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  KS_NAPI_CALL(env, napi_get_instance_data(env, (void **) &addon));
  if (argc != want) {
    char msg[96];
    (void) snprintf(msg, sizeof msg, "kern-sandbox: %s(%s) takes %zu argument%s", fn,
                    want == 2 ? "parked, opts" : "opts", want, want == 2 ? "s" : "");
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", msg);
    return NULL;
  }
  if (!ks_napi_box_request(env, addon, mode, fn, argv[0], argv[want - 1], &req, streams, &shared))
    goto fail;
  run = ks_napi_call_new(env, addon, streams, req.stream, ks__settle);
  if (run == NULL)
    goto fail;
  if ((streams[2] != NULL && napi_create_reference(env, streams[2], 1, &run->on_stdin) != napi_ok) ||
      (streams[3] != NULL && napi_create_reference(env, streams[3], 1, &run->on_started) != napi_ok)) {
    ks_napi_throw_last(env);
    goto fail;
  }
  /* Neither an idle prewarmed box nor an idle kernel keeps the process
   * alive: a kernel's cells do, while they run. */
  run->parked = req.park_key != 0 || req.kernel_key != 0;
  run->flow = req.flow && (req.stream[KS_STDOUT] || req.stream[KS_STDERR]);
  park_key = req.park_key; /* req moves into the box below */

  ks_err_clear(&err);
  if (ks_napi_ensure_supervisor(env, addon, &err) < 0) {
    ks_napi_throw_system(env, &err);
    goto fail;
  }
  box = ks_box_new(&req, run);
  if (box == NULL) {
    napi_throw_error(env, "ENOMEM", "kern-sandbox: out of memory");
    goto fail;
  }
  KS_NAPI_CALL_GOTO(env, napi_create_promise(env, &run->deferred, &promise), fail);
  out = promise;
  if (mode == KS_NAPI_PARK) {
    /* The caller's copy of the channel: held like a session's descriptors
     * (closed at a Worker's teardown if JS never does), in the handle. */
    out = ks__parked_result(env, addon, shared, park_key, promise);
    shared = -1;
    if (out == NULL)
      goto fail;
  }
  /* A claim always wakes the engine and opens no turn (turn.c): its box
   * is up already, and the takeover is on the call's path. */
  if (ks_sup_submit(addon->sup, box, mode == KS_NAPI_CLAIM || ks_napi_submit_wakes(env, addon)) < 0) {
    ks_err_set(&err, ECANCELED, "spawn", NULL);
    ks_napi_reject_system(env, run->deferred, &err);
    ks_box_free(box);
    ks_napi_call_free(env, run);
    return out;
  }
  ks_napi_call_begun(env, run);
  return out;

fail:
  if (shared >= 0)
    close(shared);
  if (box != NULL)
    ks_box_free(box);
  else
    ks_box_request_free(&req);
  if (run != NULL)
    ks_napi_call_free(env, run);
  return NULL;
}

static napi_value ks__start_box(napi_env env, napi_callback_info info) {
  return ks__start(env, info, KS_NAPI_START, "startBox");
}

static napi_value ks__park_box(napi_env env, napi_callback_info info) {
  return ks__start(env, info, KS_NAPI_PARK, "parkBox");
}

static napi_value ks__claim_box(napi_env env, napi_callback_info info) {
  return ks__start(env, info, KS_NAPI_CLAIM, "claimBox");
}

static napi_value ks__start_kernel(napi_env env, napi_callback_info info) {
  return ks__start(env, info, KS_NAPI_KERNEL, "startKernel");
}

/* holdLoop() / releaseLoop(): JS is about to wait / has waited for a box
 * whose run holds nothing (a parked or kernel box it has killed), so the
 * loop is held meanwhile (lib/hold.js pairs them). */
static napi_value ks__hold_loop(napi_env env, napi_callback_info info) {
  struct ks_addon *addon;
  (void) info;
  KS_NAPI_CALL(env, napi_get_instance_data(env, (void **) &addon));
  ks_napi_loop_hold(env, addon);
  return NULL;
}

static napi_value ks__release_loop(napi_env env, napi_callback_info info) {
  struct ks_addon *addon;
  (void) info;
  KS_NAPI_CALL(env, napi_get_instance_data(env, (void **) &addon));
  ks_napi_loop_release(env, addon);
  return NULL;
}

/* shutdown(): what the environment's teardown does, now: kills and reaps
 * every box, removes the workspaces sessions created and closes their
 * descriptors. For process.exit() and an uncaught exception, after which
 * Node runs no cleanup hook of the main environment. No run starts after. */
static napi_value ks__shutdown(napi_env env, napi_callback_info info) {
  struct ks_addon *addon;
  (void) info;
  KS_NAPI_CALL(env, napi_get_instance_data(env, (void **) &addon));
  ks_addon_shutdown(addon);
  ks_addon_drop_held(addon);
  return NULL;
}

/* The group argument of cancelGroup and forgetGroup. */
static bool ks__group_arg(napi_env env, napi_callback_info info, struct ks_addon **addon,
                          uint64_t *group) {
  size_t argc = 1;
  napi_value argv[1];
  double g;

  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok ||
      napi_get_instance_data(env, (void **) addon) != napi_ok) {
    ks_napi_throw_last(env);
    return false;
  }
  if (argc != 1 || napi_get_value_double(env, argv[0], &g) != napi_ok || !(g > 0) ||
      !(g <= 9007199254740991.0)) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", "kern-sandbox: a group is a number > 0");
    return false;
  }
  *group = (uint64_t) g;
  return true;
}

/* signalCall(cancelKey, signo, graceMs): a process's kill() (lib/process.js):
 * signo to the workload of the call's box through its init, then the box
 * killed once graceMs is over unless it ended first (ks_sup_signal_call).
 * Returns 0, or a negative errno (-ESRCH: no supervisor yet). */
static napi_value ks__signal_call(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  double a[3];
  struct ks_addon *addon;
  napi_value out;
  int r = -ESRCH;

  KS_NAPI_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  KS_NAPI_CALL(env, napi_get_instance_data(env, (void **) &addon));
  for (size_t i = 0; i < 3; i++) {
    if (i >= argc || napi_get_value_double(env, argv[i], &a[i]) != napi_ok || !(a[i] >= 0) ||
        !(a[i] <= 9007199254740991.0)) {
      napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE",
                            "kern-sandbox: signalCall(cancelKey, signo, graceMs) takes numbers");
      return NULL;
    }
  }
  if (addon->sup != NULL)
    r = ks_sup_signal_call(addon->sup, (uint64_t) a[0], (int) a[1], (uint64_t) (a[2] * 1e6));
  KS_NAPI_CALL(env, napi_create_int32(env, r, &out));
  return out;
}

/* cancelGroup(group): kills every box of a closing session. */
static napi_value ks__cancel_group(napi_env env, napi_callback_info info) {
  struct ks_addon *addon;
  uint64_t group;

  if (!ks__group_arg(env, info, &addon, &group))
    return NULL;
  if (addon->sup != NULL && ks_sup_cancel_group(addon->sup, group) < 0)
    napi_throw_error(env, "ENOMEM", "kern-sandbox: out of memory");
  return NULL;
}

/* forgetGroup(group): the closed session's calls have all settled. */
static napi_value ks__forget_group(napi_env env, napi_callback_info info) {
  struct ks_addon *addon;
  uint64_t group;

  if (!ks__group_arg(env, info, &addon, &group))
    return NULL;
  if (addon->sup != NULL)
    ks_sup_forget_group(addon->sup, group);
  return NULL;
}

/* dropParked(parked): recycles a prewarm box if it is still parked. */
static napi_value ks__drop_parked(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  struct ks_addon *addon;
  uint64_t key;

  KS_NAPI_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  KS_NAPI_CALL(env, napi_get_instance_data(env, (void **) &addon));
  if (argc != 1) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", "kern-sandbox: dropParked(parked) takes 1 argument");
    return NULL;
  }
  if (!ks_handle_park_key(env, argv[0], "dropParked", &key))
    return NULL;
  if (addon->sup != NULL && ks_sup_drop_parked(addon->sup, key) < 0)
    napi_throw_error(env, "ENOMEM", "kern-sandbox: out of memory");
  return NULL;
}

/* A claim's frame up to this size is written to the parked box's channel
 * by the calling thread (a fresh socket's buffer takes ~200 KiB). */
#define KS__CLAIM_SEND_MAX (64u << 10)

/* The SPEC frame of argv (an array of strings, JS-checked for NUL bytes):
 * malloc'd, its length in *len; NULL with an exception pending. The one
 * check of argv: anything but a non-empty array of strings throws. */
static char *ks__spec_frame(napi_env env, napi_value argv, uint32_t flags, size_t *len) {
  struct ks_init_frame_header h = {.magic = KS_INIT_FRAME_MAGIC, .type = KS_INIT_SPEC | flags};
  uint32_t n = 0;
  size_t body = 0, at;
  char *frame;
  napi_value v;

  if (napi_get_array_length(env, argv, &n) != napi_ok || n == 0)
    goto bad;
  for (uint32_t i = 0; i < n; i++) {
    size_t l;
    if (napi_get_element(env, argv, i, &v) != napi_ok ||
        napi_get_value_string_utf8(env, v, NULL, 0, &l) != napi_ok)
      goto bad;
    body += l + 1;
  }
  if (body > KS_INIT_SPEC_MAX)
    goto bad;
  frame = malloc(sizeof h + body);
  if (frame == NULL) {
    napi_throw_error(env, "ENOMEM", "kern-sandbox: out of memory");
    return NULL;
  }
  h.len = (uint32_t) body;
  memcpy(frame, &h, sizeof h);
  at = sizeof h;
  for (uint32_t i = 0; i < n && at < sizeof h + body; i++) {
    size_t l = 0;
    /* Each string again: its bytes and a NUL, within the room counted. */
    if (napi_get_element(env, argv, i, &v) != napi_ok ||
        napi_get_value_string_utf8(env, v, frame + at, sizeof h + body - at, &l) != napi_ok) {
      free(frame);
      goto bad;
    }
    at += l + 1;
  }
  if (at != sizeof h + body) { /* a string changed length in between: cannot happen */
    free(frame);
    goto bad;
  }
  *len = at;
  return frame;
bad:
  napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE",
                        "a SPEC frame's argv must be a non-empty array of strings");
  return NULL;
}

/* claimSend(parked, argv) -> bytes of the frame left unsent (0: all went):
 * a claim's SPEC frame, built from argv and written by the calling thread
 * to the parked box's channel (parkBox's shareChannel), so that the box
 * starts the call before the engine's thread even wakes; then the handle's
 * copy of the channel is closed. Never blocks: a full channel, a box gone,
 * a handle whose copy is closed already (or never was) or a frame over
 * KS__CLAIM_SEND_MAX leaves bytes unsent, which the caller hands to the
 * engine. */
static napi_value ks__claim_send(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  struct ks_addon *addon;
  int fd = -1;
  int held;
  char *frame;
  size_t len = 0;
  ssize_t n = -1;
  napi_value out;

  KS_NAPI_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  KS_NAPI_CALL(env, napi_get_instance_data(env, (void **) &addon));
  if (argc != 2) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", "kern-sandbox: claimSend(parked, argv) takes 2 arguments");
    return NULL;
  }
  frame = ks__spec_frame(env, argv[1], 0, &len); /* checks argv */
  if (frame == NULL)
    return NULL;
  held = ks_handle_release(env, addon, argv[0], KS_HANDLE_PARKED, "claimSend", &fd);
  if (held < 0) {
    free(frame);
    return NULL;
  }
  if (held > 0) {
    if (len <= KS__CLAIM_SEND_MAX) {
      do
        n = send(fd, frame, len, MSG_DONTWAIT | MSG_NOSIGNAL);
      while (n < 0 && errno == EINTR);
    }
    (void) close(fd); /* EINTR closes it too */
  }
  free(frame);
  KS_NAPI_CALL(env, napi_create_double(env, (double) (len - (n > 0 ? (size_t) n : 0)), &out));
  return out;
}

/* specFrame(argv[, process]) -> Buffer: the SPEC frame of argv, as
 * claimSend writes it (the engine sends it when the caller could not:
 * claimBox's opts.spec); with process true, a process's, which asks the
 * init for STARTED and SIGNAL (KS_INIT_SAY_STARTED). */
static napi_value ks__spec_frame_buffer(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  char *frame;
  size_t len = 0;
  void *data;
  bool process = false;
  napi_value out;

  KS_NAPI_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 1 || argc > 2 ||
      (argc == 2 && napi_get_value_bool(env, argv[1], &process) != napi_ok)) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", "specFrame(argv[, process])");
    return NULL;
  }
  frame = ks__spec_frame(env, argv[0], process ? KS_INIT_SAY_STARTED : 0, &len); /* checks argv */
  if (frame == NULL)
    return NULL;
  if (napi_create_buffer_copy(env, len, frame, &data, &out) != napi_ok) {
    free(frame);
    ks_napi_throw_last(env);
    return NULL;
  }
  free(frame);
  return out;
}

bool ks_napi_init_run(napi_env env, napi_value exports) {
  static const struct ks_napi_fn fns[] = {
      {"cancelGroup", ks__cancel_group}, {"signalCall", ks__signal_call}, {"forgetGroup", ks__forget_group},
      {"startBox", ks__start_box}, {"parkBox", ks__park_box},
      {"claimBox", ks__claim_box}, {"startKernel", ks__start_kernel},
      {"shutdown", ks__shutdown},
      {"dropParked", ks__drop_parked}, {"holdLoop", ks__hold_loop},
      {"releaseLoop", ks__release_loop},
      {"claimSend", ks__claim_send}, {"specFrame", ks__spec_frame_buffer},
  };
  napi_value v;

  if (!ks_napi_export(env, exports, fns, sizeof fns / sizeof fns[0]) ||
      !ks__export_raw_fields(env, exports))
    return false;
  if (napi_create_int32(env, KS_BOX_STARTED_FD, &v) != napi_ok ||
      !ks_napi_set(env, exports, "STARTED_FD", v))
    return false;
  if (napi_create_int32(env, KS_BOX_ENV_FD, &v) != napi_ok ||
      !ks_napi_set(env, exports, "ENV_FD", v))
    return false;
  return true;
}
