/* The supervisor: one long-lived thread that runs every live box, and a
 * second one that scans workspaces before and after their boxes (so a run
 * uses no libuv threadpool thread at all, and a slow scan of a big workspace
 * never delays another box's drain or deadline).
 *
 * It spawns kern (so the parent-death signal follows a thread that lives as
 * long as the supervisor), drains stdout and stderr into capped buffers,
 * reads kern's started-fd bytes, watches the pidfd and the deadline, kills on
 * timeout and runs `kern stop` as one more supervised child. A box never
 * occupies a libuv threadpool thread, and the JS thread never waits on it. */
#ifndef KS_CORE_SUPERVISOR_H
#define KS_CORE_SUPERVISOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>

#include "channel.h"
#include "feed.h"
#include "interp.h"
#include "outbuf.h"
#include "proc.h"
#include "../workspace/wsscan.h"
#include "../workspace/wswatch.h"

/* kern's view of the descriptors we give it. */
#define KS_BOX_STARTED_FD 3 /* kern writes its started bytes here */
#define KS_BOX_ENV_FD 4     /* the env file, read as /dev/fd/4 */

enum ks_stream { KS_STDOUT = 0, KS_STDERR = 1 };

/* What to run. Every pointer is owned by the box and freed with it. A
 * vector (argv, envp, stop_argv) is one allocation, its strings after its
 * pointers (ks_napi_get_strv): free() frees it whole. */
struct ks_box_request {
  char *path;       /* absolute path of kern */
  int exec_fd;      /* > 2: kern held open (O_PATH, close-on-exec), executed
                     * instead of path, owned; 0: exec by path */
  char **argv;      /* NULL-terminated */
  char **envp;      /* NULL-terminated; kern's own environment */
  char **stop_argv; /* `kern stop NAME`, run after a timeout; may be NULL */
  char *env_data;   /* content of the env file, or NULL for none */
  size_t env_len;
  char *tmpdir;     /* where an env file may go if memfd is missing */
  uint64_t timeout_ns;
  size_t cap;       /* bytes kept of each stream */
  bool stream[2];   /* report chunks of this stream through on_output */
  struct ks_ws_watch *watch; /* the workspace whose changes to report, or NULL;
                              * one reference owned */
  struct ks_ws_watch_call begun; /* with has_begun: watch's call, begun on the
                                  * calling thread before a claim's caller sent
                                  * the box its argv (owned; ended with the box) */
  bool has_begun;
  uint64_t group;   /* the session it belongs to, for ks_sup_cancel_group; 0: none */
  uint64_t call;    /* a key of its own, for ks_sup_cancel_group too (a call's
                     * AbortSignal kills this box alone); 0: none */
  /* The in-box init (csrc/init/). */
  bool channel;     /* argv runs ks-init: give it a control channel on stdin */
  int early_cap;    /* >= 0: settle at the init's report (not a SIGKILL), with
                     * this as kern's cap byte; -1: always wait for kern's exit */
  char *spec;       /* a spec frame for a waiting init (a claimed box), or NULL */
  size_t spec_len;
  bool claim_only;  /* a claim that brings no box of its own (no argv): with no
                     * parked box to adopt it settles as `missed` and starts
                     * nothing. Its caller either wrote the spec to the parked
                     * box's channel already (the box may have taken the call
                     * before it died) or retries cold (a Python claim, whose
                     * RUN goes out only when the box is adopted) */
  bool chan_given;  /* chan: the channel's two ends, made by the caller (who
                     * keeps a copy of ours to send a claim's spec itself);
                     * owned */
  int chan[2];
  uint64_t park_key;  /* nonzero: a prewarm box: start it and park it under this
                       * key, with no call and no deadline, until a claim takes
                       * it over (it then ends as `claimed`) or it is dropped
                       * (ks_sup_drop_parked) or its group cancelled */
  uint64_t claim_key; /* nonzero: run in the parked box of this key if it is
                       * still there (sending spec), else start argv cold;
                       * never with a park_key of its own */
  /* The interpreter protocol (interp.h), for a box whose init runs with
   * --interp. */
  char *ip_msg;       /* a message to send once the box is attached and
                       * claimed (a RUN), or NULL; its records, as ks_ip_frame
                       * makes them */
  size_t ip_msg_len;
  size_t result_max;  /* bytes of rich results kept */
  uint64_t kernel_key; /* nonzero: a kernel box, whose cells are submitted
                        * under this key (ks_sup_submit_cell); no deadline */
  /* The call's stdin (feed.h), one reference owned, or NULL: fd 0 is then
   * /dev/null. With it the box gets a pipe: through a STDIN frame (argv
   * runs `ks-init --stdin`) or its SPEC (a claim), or as kern's stdin when
   * there is no channel. */
  struct ks_feed *feed;
  /* A process's box: its init says STARTED (hooks.on_started), and takes
   * the caller's signals (ks_sup_signal_call). The init learns it from its
   * argv (`--started`) or the SPEC's type (KS_INIT_SAY_STARTED), which the
   * caller made so. */
  bool want_started;
  /* A process's output (with stream[]): while the box runs, its pipes are
   * read no faster than the caller takes the chunks (hooks.output_room),
   * as a pipe to a Node child process is, instead of chunks being dropped
   * past a budget; the caller then keeps what its reader has not taken.
   * At the box's end what is left in the pipes is read at once. */
  bool flow;
  /* A process's stdin: the read end of a pipe whose write end the caller
   * writes itself (not through a feed), owned, with has_stdin_rd. It
   * reaches the workload as a feed's would (a STDIN frame, or on the
   * SPEC). */
  bool has_stdin_rd;
  int stdin_rd;
  /* A process's terminal: the master of the pty whose slave is stdin_rd,
   * owned, with has_tty. The box's stdout is what the master reads (kern's
   * own stdout joins its stderr pipe), and a feed's chunks are written to
   * it: the workload's input. A cold box's only (startBox). */
  bool has_tty;
  int tty_fd;
  /* A process's stdout read by the caller itself from its start on: at
   * STARTED the engine stops reading the stdout pipe and hands its read
   * end to hooks.on_started, whose owner it is from then on (what the
   * engine read before went out as chunks first). The caller reads it
   * as a Node pipe does, with no thread between the box and the reader,
   * and drains what is left once the call settled: every box process
   * has exited by then. */
  bool hand_stdout;
};

/* Rich results (interp.h, RESULT): JSON texts within a byte budget; one
 * that does not fit is dropped whole. */
struct ks_results {
  char **items;
  size_t *lens;
  size_t n;
  size_t cap;
  size_t bytes;
  size_t max;
  bool dropped;
};

void ks_results_init(struct ks_results *r, size_t max);
void ks_results_free(struct ks_results *r);

/* What happened. Filled by the supervisor, read after on_done. */
struct ks_box_result {
  int spawn_errnum;            /* nonzero: nothing ran */
  const char *spawn_syscall;
  bool status_known;           /* false if a foreign reaper took the status */
  int wait_status;             /* a wait(2) status, valid if status_known */
  bool timed_out;              /* our deadline fired and we killed kern */
  bool cancelled;              /* its group was cancelled and we killed kern */
  unsigned char started[4];    /* the first bytes kern wrote on its started fd */
  size_t nstarted;             /* how many it wrote in all */
  struct ks_outbuf out[2];
  uint64_t duration_ns;        /* spawn to exit of kern */
  struct rusage usage;          /* kern's, or the workload's from the init's report */
  bool reported;               /* the init's report arrived */
  int report_end;              /* enum ks_init_end, when reported */
  int report_value;
  bool settled_early;          /* settled at the report; kern's teardown ran on */
  bool prewarmed;              /* ran in a box started ahead (a claim that found it) */
  bool claimed;                /* a prewarm box that a call took over: nothing else here */
  bool taken;                  /* a claimed box's init or interpreter took the call
                                * (TAKEN): without it the call never ran there */
  bool killed_by_caller;       /* ks_sup_signal_call reached it while it ran */
  uint64_t started_ns;         /* the init said STARTED, its workload's exec succeeded
                                * (--exec and --wait inits): when; 0: it did not */
  bool missed;                 /* a claim_only claim found no parked box: nothing ran
                                * here; the parked box's own result says whether it
                                * took the call */
  struct ks_results results;   /* a RUN's rich results */
  /* The files the box created or modified (requests with scan_rootfd). */
  int scan_errnum;             /* nonzero: no change list (e.g. -E2BIG) */
  struct ks_ws_change *changes;
  size_t nchanges;
};

struct ks_box;

/* A kernel's cell (or its start, or a rollback): a message to the
 * interpreter of a kernel box, and what came back. */
struct ks_cell_request {
  uint64_t kernel;     /* the kernel box's key (ks_box_request.kernel_key) */
  uint32_t id;         /* the message's id */
  uint16_t type;       /* KS_IP_KERNEL, KS_IP_CELL or KS_IP_ROLLBACK */
  char *msg;           /* its records (ks_ip_frame), owned */
  size_t msg_len;
  uint64_t timeout_ns; /* then a CELL is interrupted (shared) or killed (fork) */
  size_t cap;          /* bytes kept of each stream, and of results */
  bool stream[2];      /* report chunks through on_cell_output */
  uint64_t call;       /* cancel key (an AbortSignal); 0: none */
};

enum ks_cell_end {
  KS_CELL_DONE = 1,      /* DONE came: res.done */
  KS_CELL_ENDED = 2,     /* its process died (fork mode), or a rollback ended:
                          * res.ended */
  KS_CELL_READY = 3,     /* a KERNEL message's READY: res.ready */
  KS_CELL_DEAD = 4,      /* the kernel is gone: res.why */
  KS_CELL_NO_KERNEL = 5, /* no live kernel box has that key */
  KS_CELL_SKIPPED = 6,   /* its call was aborted before it was sent: never ran */
};

struct ks_cell_result {
  enum ks_cell_end how;
  struct ks_ip_done done;
  struct ks_ip_ended ended;
  struct ks_ip_ready ready;
  bool timed_out;          /* its deadline fired (interrupted or killed) */
  bool cancelled;          /* its call was aborted */
  const char *why;         /* KS_CELL_DEAD: a static reason */
  struct ks_outbuf out[2];
  struct ks_results results;
  uint64_t duration_ns;
};

struct ks_cell;

struct ks_cell *ks_cell_new(struct ks_cell_request *req, void *user);
void *ks_cell_user(const struct ks_cell *cell);
struct ks_cell_result *ks_cell_result(struct ks_cell *cell);
void ks_cell_free(struct ks_cell *cell);
void ks_cell_request_free(struct ks_cell_request *req);

struct ks_sup_hooks {
  /* A chunk just read from a stream the request asked to report. Runs on the
   * supervisor thread and must not block; data is only valid during the call. */
  void (*on_output)(void *ctx, struct ks_box *box, enum ks_stream s, const char *data,
                    size_t len);
  /* The box is finished (or could not start); it is now the hook's to free
   * with ks_box_free. Called exactly once per submitted box. */
  void (*on_done)(void *ctx, struct ks_box *box);
  /* The same for a kernel's cells. */
  void (*on_cell_output)(void *ctx, struct ks_cell *cell, enum ks_stream s, const char *data,
                         size_t len);
  void (*on_cell_done)(void *ctx, struct ks_cell *cell);
  /* The box's stdin feed took the chunk in its slot (the slot is free for
   * the next), or dropped it: gone, the workload's end of the pipe is
   * closed and every byte from now on is dropped. Runs on the supervisor
   * thread, before the box's on_done; must not block. */
  void (*on_stdin)(void *ctx, struct ks_box *box, bool gone);
  /* A process box's workload started: its init said STARTED (its exec
   * succeeded). At most once per box, only for a request with
   * want_started, before the box's on_done; must not block. stdout_fd:
   * with req.hand_stdout, the stdout pipe's read end, the hook's to own
   * (and close) when it returns true; else -1. */
  bool (*on_started)(void *ctx, struct ks_box *box, int stdout_fd);
  /* A flow box's caller (req.flow) can take more output now: true; false,
   * and it wakes the supervisor (ks_sup_wake) once it can, when the box's
   * paused streams are read again. Runs on the supervisor thread; must not
   * block. */
  bool (*output_room)(void *ctx, struct ks_box *box);
};

struct ks_sup;

/* Allocates a box for req (ownership of req's pointers moves in). */
struct ks_box *ks_box_new(struct ks_box_request *req, void *user);
void *ks_box_user(const struct ks_box *box);
const char *ks_box_request_path(const struct ks_box *box);
bool ks_box_request_scans(const struct ks_box *box);
struct ks_box_result *ks_box_result(struct ks_box *box);
void ks_box_free(struct ks_box *box);
/* The descriptor whose shutdown releases a box's init once the caller has
 * its result (protocol.h), now the caller's to shut down and close; -1 if
 * none. ks_box_free otherwise does it. */
int ks_box_take_release(struct ks_box *box);
/* Frees a request's owned pointers; for callers that never made a box. */
void ks_box_request_free(struct ks_box_request *req);

/* Bench switches (KERN_SANDBOX_BENCH_OFF via configure(), bench/ab.js):
 * speed mechanisms a supervisor started after this call runs without, so
 * that an A/B can measure what each one moves. Nothing else changes. */
enum ks_sup_off {
  KS_SUP_OFF_INLINE_ENDS = 1 << 0, /* every box ends through the scan thread */
};
void ks_sup_bench_off(unsigned off);

/* Starts the supervisor thread. Returns 0 or a negative errno. */
int ks_sup_start(const struct ks_sup_hooks *hooks, void *ctx, struct ks_sup **ret_sup,
                 struct ks_err *err);

/* Hands a box to the supervisor, which spawns it on its own thread. Never
 * blocks on a running box. Without wake, the supervisor takes the box at
 * its next wakeup, which the caller owes it (ks_sup_wake). Returns 0, or
 * -ECANCELED after shutdown began (the box is then still the caller's). */
int ks_sup_submit(struct ks_sup *sup, struct ks_box *box, bool wake);

/* Hands a cell to its kernel box, queued behind that kernel's others.
 * Returns 0, or -ECANCELED after shutdown began (the cell is then still the
 * caller's). */
int ks_sup_submit_cell(struct ks_sup *sup, struct ks_cell *cell);

/* For a caller that knows no cell of this kernel is under way (the previous
 * ones have all been handed back): sends the cell's message on the calling
 * thread, then hands the cell over as ks_sup_submit_cell does, sparing the
 * supervisor's wakeup on its path. Returns 1 if sent and submitted; 0 if it
 * cannot be sent here (the kernel is not ready, is gone, or the message
 * spans records or would block): submit it instead; or -ECANCELED. */
int ks_sup_send_cell(struct ks_sup *sup, struct ks_cell *cell);

/* Wakes the supervisor for a feed whose slot was filled or which ended
 * (ks_feed_put, ks_feed_end): it writes on to the box the feed is attached
 * to, if any (a box not started yet starts with it). Thread-safe; never
 * blocks on a box. 0, or -ECANCELED after shutdown began. */
int ks_sup_feed_wake(struct ks_sup *sup, struct ks_feed *feed);

/* Kills every box of a group (a session being closed), or whose call key it
 * is (an aborted call), now and as they come: a box of the group that has
 * not started yet is reported as ECANCELED. Groups and call keys share one
 * number space, which the caller allocates.
 * Thread-safe; never blocks on a box. Returns 0 or -ENOMEM. */
int ks_sup_cancel_group(struct ks_sup *sup, uint64_t group);

/* Drops a cancelled group from the list every spawn and sweep consults,
 * once the caller knows no box of it is pending, live or still to be
 * submitted (a closed session whose calls have all settled). Without it the
 * list, and the sweep's cost, grow with every session a process closes. */
void ks_sup_forget_group(struct ks_sup *sup, uint64_t group);

/* Recycles the parked prewarm box of this key (ks_box_request.park_key), if
 * it is still parked; nothing otherwise. Thread-safe. 0 or -ENOMEM. */
int ks_sup_drop_parked(struct ks_sup *sup, uint64_t key);

/* A caller's kill of a running call (docs/plan-processes.md, section 3):
 * the call of cancel key `call` gets signo through its init's SIGNAL frame
 * (protocol.h) and its box is killed grace_ns later if it has not ended by
 * then (0: at once). Its result then says killed_by_caller, not cancelled:
 * the caller asked. A call not running by then is left alone. Any thread;
 * 0 or -ENOMEM. */
int ks_sup_signal_call(struct ks_sup *sup, uint64_t call, int signo, uint64_t grace_ns);
/* Wakes the supervisor for a turn (a flow box's caller has room again:
 * hooks.output_room; boxes were submitted without a wakeup). Any thread. */
void ks_sup_wake(struct ks_sup *sup);

/* Kills every live box and helper, reaps them, reports each box through
 * on_done, joins the thread and frees the supervisor. */
void ks_sup_shutdown(struct ks_sup *sup);

/* Counts for tests and the leak census: boxes with a call or parked, and
 * kerns still tearing down a box whose call settled at its report or
 * helpers (`kern stop`) still running. */
size_t ks_sup_live_boxes(struct ks_sup *sup);
size_t ks_sup_tails(struct ks_sup *sup);
size_t ks_sup_cancelled_groups(struct ks_sup *sup);

#endif
