/* A JS call the supervisor is working on (a box's run, or a kernel cell)
 * (call.c): the promise and callbacks, the messages that carry chunks and
 * ends to the JS thread through the one TSFN, and the event-loop hold.
 * JS-thread and supervisor-thread sides are marked. */
#ifndef KS_NAPI_CALL_H
#define KS_NAPI_CALL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "../core/box/supervisor.h"
#include "../core/box/text.h"
#include "addon.h"
#include "convert.h"

/* Bytes of onStdout/onStderr chunks queued for JS per call; past this a
 * slow callback loses chunks (the documented best-effort contract) instead
 * of back-pressuring the box or growing our memory. The result is
 * unaffected. */
#define KS_NAPI_STREAM_BUDGET (8u << 20)
/* A flow call's (a process's, BoxOptions.flow) window: the engine reads its
 * box's pipes while less than this is queued for JS, and again once JS has
 * taken it below half; past FLOW_CAP (what the engine reads in one wakeup,
 * and at the box's end, over the window) chunks are dropped as for other
 * calls. */
#define KS_NAPI_FLOW_WINDOW (4u << 20)
#define KS_NAPI_FLOW_CAP (32u << 20)

struct ks_napi_msg;
struct ks_napi_call;

/* JS thread: settles the call's promise from what ended (a box or a cell):
 * the hook of the call's kind (run.c for boxes, cell.c for cells). */
typedef void (*ks_napi_settle_fn)(napi_env env, struct ks_napi_call *call, struct ks_box *box,
                                  struct ks_cell *cell);


struct ks_napi_call {
  struct ks_addon *addon;
  napi_deferred deferred;
  napi_ref cb[2];
  _Atomic size_t queued_bytes;
  /* onStdout/onStderr chunks (and their bytes) not delivered: past the
   * budget, or no memory to queue them; the result's output still has them. */
  _Atomic uint64_t missed_chunks[2];
  _Atomic uint64_t missed_bytes[2];
  /* A prewarm or kernel box's run: it holds no loop_holds, so an idle box
   * never keeps the process alive; JS holds the loop while it waits for
   * such a box's end (holdLoop). */
  bool parked;
  struct ks_napi_output output; /* its captured output, decoded off the JS thread */
  ks_napi_settle_fn settle;
  /* The message that hands the finished box or cell to the JS thread,
   * allocated with the call: if it could fail at the end, the promise would
   * never settle, and freeing the call there would free it under its
   * chunks still queued for the JS thread. */
  struct ks_napi_msg *done;
  /* opts.onStdin: the box's stdin feed has room for the next chunk (or is
   * gone); NULL without a feed. */
  napi_ref on_stdin;
  /* opts.onStarted: a process's workload started (hooks.on_started); NULL
   * for other calls. */
  napi_ref on_started;
  /* BoxOptions.flow with a stream: the engine reads its output no faster
   * than JS takes it (hooks.output_room); flow_paused: a stream waits for
   * room, and the JS thread wakes the engine once there is. */
  bool flow;
  atomic_bool flow_paused;
};

enum ks_napi_msg_kind {
  KS_NAPI_MSG_CHUNK,
  KS_NAPI_MSG_DONE,
  KS_NAPI_MSG_CELL_DONE,
  KS_NAPI_MSG_STDIN, /* the feed's slot is free: len 1 if the feed is gone */
  KS_NAPI_MSG_STARTED, /* a process's workload started */
};

struct ks_napi_msg {
  enum ks_napi_msg_kind kind;
  struct ks_napi_call *run;
  struct ks_box *box;   /* KS_NAPI_MSG_DONE */
  struct ks_cell *cell; /* KS_NAPI_MSG_CELL_DONE */
  enum ks_stream stream;
  size_t len;
  char data[];
};

/* JS thread: a call with its callbacks (functions or anything else: none)
 * referenced, settled by settle; NULL with an exception pending. */
struct ks_napi_call *ks_napi_call_new(napi_env env, struct ks_addon *addon,
                                      const napi_value cbs[2], const bool stream[2],
                                      ks_napi_settle_fn settle);
/* JS thread (env NULL: the environment is gone). */
void ks_napi_call_free(napi_env env, struct ks_napi_call *call);
/* JS thread: the supervisor, started on first use. */
int ks_napi_ensure_supervisor(napi_env env, struct ks_addon *addon, struct ks_err *err);
/* JS thread: a call was submitted (the TSFN's reference, held until it settles). */
void ks_napi_call_begun(napi_env env, struct ks_napi_call *call);
/* JS thread: one more / one fewer reason to keep the event loop alive. */
void ks_napi_loop_hold(napi_env env, struct ks_addon *addon);
void ks_napi_loop_release(napi_env env, struct ks_addon *addon);

/* Supervisor thread: a chunk for the call's callback. */
void ks_napi_queue_chunk(struct ks_napi_call *call, enum ks_stream s, const char *data,
                         size_t len);
/* Supervisor or scan thread: hands the end to the JS thread. */
void ks_napi_send_done(struct ks_napi_call *call, struct ks_box *box, struct ks_cell *cell);

/* cell.c: registers kernelCell. */
bool ks_napi_init_cell(napi_env env, napi_value exports);

#endif
