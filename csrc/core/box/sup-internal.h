/* The supervisor's own structures and the few helpers its files share
 * (supervisor.c: boxes, helpers, tails; interpreter.c: the interpreter
 * socket, results and kernel cells). Not for use outside csrc/core/box/. */
#ifndef KS_CORE_SUP_INTERNAL_H
#define KS_CORE_SUP_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "boxstate.h"
#include "interp.h"
#include "kit.h"
#include "supervisor.h"

#define KS__MS 1000000ULL
#define KS__SEC 1000000000ULL
/* After kern exits, a process outside its group (a double-forked daemon) may
 * still hold the pipes: read what it already wrote, but only this long. */
#define KS__DRAIN_GRACE_NS (250 * KS__MS)
/* A SIGKILLed kern that is still not reapable after this long (stuck in the
 * kernel) is left to the helper list, and the run completes without it. */
#define KS__KILL_GRACE_NS (3 * KS__SEC)
/* `kern stop` gets this long before it is killed too. */
#define KS__STOP_DEADLINE_NS (10 * KS__SEC)
/* At teardown, how long all kerns together get to end after SIGKILL before
 * the ones left are waited for by their own threads. */
#define KS__TEARDOWN_WAIT_NS (KS__SEC / 2)
/* Bytes read from one pipe per wakeup, so one flood cannot starve the rest. */
#define KS__READ_BUDGET (4u << 20)
/* A read goes into the output buffer's free tail once that tail holds at
 * least this much; below it the buffer doubles first. Asking for a big tail
 * on every read (256 KiB, as this once did) made a kern that writes its
 * one-line warning in three pieces cost a 256 KiB then a 512 KiB block, a
 * 256 KiB copy and ~130 page faults: ~1.5 ms of this thread per call. */
#define KS__READ_ROOM_MIN (4u << 10)
/* Bytes past the cap go to /dev/null this many at a time. */
#define KS__SPLICE_CHUNK (1u << 20)
#define KS__SCRATCH_SIZE (64u << 10)
/* A box whose call settled at the init's report is left to kern's teardown
 * (~5-10 ms) this long, then killed and `kern stop`ped like a timed-out one:
 * close() promises no kern of the session 500 ms after it. */
#define KS__TAIL_GRACE_NS (400 * KS__MS)
#define KS__MAX_EVENTS 64

enum ks__watch_kind {
  KS__W_STDOUT = KS_STDOUT,
  KS__W_STDERR = KS_STDERR,
  KS__W_STARTED,
  KS__W_PIDFD,
  KS__W_WAKE,
  KS__W_AUX,
  KS__W_CTL,
  KS__W_TAIL_FD,
  KS__W_TAIL_PIDFD,
  KS__W_IP,       /* a box's interpreter socket (interpreter.c) */
  KS__W_CELL_OUT, /* a kernel cell's stdout pipe; + KS_STDERR for stderr */
  KS__W_CELL_ERR,
  KS__W_STRAY,    /* a finished cell's pipe, still held by a process it left */
};

struct ks__watch {
  enum ks__watch_kind kind;
  void *owner;
};

/* The read ends we hold for one box: stdout, stderr, started. */
#define KS__BOX_PIPES KS_KIT_PIPES

enum ks__scan_phase { KS__SCAN_BEFORE, KS__SCAN_AFTER };

/* A message of the interpreter protocol on its way out: its records, sent
 * one per send() (a seqpacket socket keeps them apart), the descriptors
 * riding on the first. */
struct ks__ip_out {
  char *data; /* owned */
  size_t len;
  size_t off; /* bytes sent so far, always at a record boundary */
  int fds[2]; /* owned until sent; -1 */
  int nfds;
};

struct ks__kernel;

struct ks_box {
  struct ks_box_request req;
  struct ks_box_result res;
  void *user;
  struct ks_ws_watch_call wcall;
  bool wcall_open; /* begun on the scan thread, not yet ended */
  enum ks__scan_phase scan_phase;
  struct ks_box *next;
  struct ks_box *prev;
  struct ks_proc proc;
  struct ks_proc_kids kids; /* a parked box's kern's children (its watchdog), pinned once
                             * it started: ks_proc_kill_tree needs no /proc read then */
  int fd[KS__BOX_PIPES];
  bool pipe_grown[2]; /* stdout/stderr pipe enlarged for a heavy writer */
  struct ks__watch watch[KS__BOX_PIPES + 1];
  uint64_t start_ns;
  /* When the state's time is up (ks__sweep): parked, running or settling,
   * the call's deadline (UINT64_MAX: none); KILLED, the kill grace's end;
   * DRAINING, the drain grace's end (at once for a kern given up on). */
  uint64_t deadline_ns;
  enum ks_box_state state;    /* where it is in its life (boxstate.h); moved only
                               * by ks__box_to */
  int ctl;                    /* our end of the init's control channel, or -1 */
  int release;                /* a box settled at the init's report: a copy of ctl
                               * whose shutdown at ks_box_free, once the result is
                               * the caller's, lets the init exit (protocol.h,
                               * REPORT); -1 */
  struct ks__watch ctl_watch;
  struct ks_chan_reader chan;
  size_t spec_sent;           /* bytes of req.spec written to ctl */
  bool ctl_out;               /* ctl is watched for EPOLLOUT too */
  int pending_fd[2];          /* descriptors that came on ctl, for its ATTACH */
  int workload_pidfd;         /* from ATTACH: a pidfd of the interpreter, or -1 */
  bool final_done;            /* settling at the interpreter's final DONE, whose
                               * account is final_rep (see ks__ip_final_done) */
  struct ks_init_report final_rep;
  /* The interpreter socket (interp.h) of a box started with --interp. */
  int ip;                     /* its host end, or -1 (not attached yet, or gone) */
  struct ks__watch ip_watch;
  struct ks_ip_reader ipr;
  struct ks__ip_out ip_out;   /* the message being sent */
  bool ip_out_watched;        /* ip is watched for EPOLLOUT too */
  struct ks__kernel *kernel;  /* a kernel box's cells (req.kernel_key), or NULL */
  struct ks_box *claimed;     /* the parked box this call took, its run still to
                               * settle: with this box's, one wakeup of the JS
                               * thread, not one more while the call runs */
  uint64_t forget;            /* nonzero: not a box but ks_sup_forget_group's
                               * marker in the pending list (see there) */
};

/* Moves the box to another state of its life, checked (boxstate.h). */
static inline void ks__box_to(struct ks_box *box, enum ks_box_state to) {
  (void) ks_box_state_set(&box->state, to);
}

/* kern runs and we have not killed it: the box is parked, running or
 * settling. */
static inline bool ks__box_alive(const struct ks_box *box) {
  return box->state == KS_BOX_PARKED || box->state == KS_BOX_RUNNING ||
         box->state == KS_BOX_SETTLING;
}

/* Its call runs: kern alive and not parked. */
static inline bool ks__box_runs(const struct ks_box *box) {
  return box->state == KS_BOX_RUNNING || box->state == KS_BOX_SETTLING;
}

/* A prewarm box: parked once it started, and still one once killed or
 * reaped there (a claim's request has no park key). */
static inline bool ks__box_prewarm(const struct ks_box *box) { return box->req.park_key != 0; }

/* We killed its kern: ks__kill_box is what marks a box's result timed out
 * or cancelled, and nothing else does. */
static inline bool ks__box_was_killed(const struct ks_box *box) {
  return box->res.timed_out || box->res.cancelled;
}

/* A kern still tearing down a box whose call settled at the init's report:
 * its descriptors are drained and dropped (kern must never write into a
 * closed pipe), its exit reaped, and past the grace it is killed and
 * `kern stop`ped. */
#define KS__TAIL_FDS (KS__BOX_PIPES + 1) /* the pipes and the channel */
struct ks__tail {
  struct ks_proc proc;
  int fd[KS__TAIL_FDS];
  struct ks__watch watch[KS__TAIL_FDS];
  struct ks__watch pid_watch;
  bool reaped; /* freed at the sweep: later events of the batch may name it */
  uint64_t deadline_ns;
  char *path;
  int exec_fd;
  char **stop_argv;
  char **envp;
  struct ks__tail *next;
  struct ks__tail *prev;
};

/* A helper process we still owe a reap: `kern stop`, or a kern we gave up
 * waiting for. */
struct ks__aux {
  struct ks_proc proc;
  uint64_t deadline_ns;
  struct ks__watch watch;
  struct ks__aux *next;
  struct ks__aux *prev;
};

/* The scan thread's queue. */
struct ks__scanner {
  pthread_t thread;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  struct ks_box *head; /* guarded by lock */
  struct ks_box *tail; /* guarded by lock */
  bool stopped;        /* guarded by lock */
};

struct ks_sup {
  pthread_t thread;
  struct ks__scanner scanner;
  int epfd;
  int wakefd;
  int devnull;
  pthread_mutex_t lock;
  struct ks_box *pending_head; /* guarded by lock */
  struct ks_box *pending_tail; /* guarded by lock */
  struct ks_cell *cells_head;  /* cells submitted, guarded by lock */
  struct ks_cell *cells_tail;  /* guarded by lock */
  struct ks_cell *cells_done;  /* finished cells, handed to JS after the batch */
  /* Ready kernels whose cells the submitting thread may send itself
   * (ks_sup_send_cell), guarded by kernels_lock. */
  pthread_mutex_t kernels_lock;
  struct ks__sendable *sendable;
  bool stopping;               /* guarded by lock */
  uint64_t *cancelled;         /* cancelled groups, guarded by lock */
  size_t ncancelled;           /* guarded by lock */
  size_t cancelled_cap;        /* guarded by lock */
  size_t forgets_pending;      /* forget markers queued, guarded by lock */
  uint64_t *drops;             /* park keys to recycle, guarded by lock */
  size_t ndrops;               /* guarded by lock */
  size_t drops_cap;            /* guarded by lock */
  _Atomic size_t live_count;
  struct ks_box *live;
  struct ks__aux *aux;
  _Atomic size_t aux_count;
  _Atomic size_t stops_queued; /* `kern stop`s queued by a sweep, not yet started */
  struct ks__tail *tails;
  _Atomic size_t tail_count;
  struct ks_sup_hooks hooks;
  void *ctx;
  struct ks__watch wake_watch;
  struct ks_box_kit kit;       /* the next cold box's pipes and channel, made ahead */
  _Atomic int kit_fds[KS_KIT_FDS]; /* its descriptors, for ks_sup_spare_fds (-1: none) */
  uint64_t kit_retry_ns;       /* after a failure to make it (EMFILE), not before this */
#ifdef KS_FAILPOINTS
  /* The Debug build's pause after the thread took the cells (from
   * KS_FAILPOINT_SUP_TAKE_MS): it widens the window a test races into. */
  unsigned failpoint_take_ms;
#endif
  char scratch[KS__SCRATCH_SIZE];
};

/* A ready kernel, as the submitting thread sees it: a copy of its socket to
 * send a cell on, once the host knows no cell of it is under way. */
struct ks__sendable {
  uint64_t key;
  int fd;
  struct ks__sendable *next;
};

/* A kernel's cell, from submission to on_cell_done (interpreter.c). */
struct ks_cell {
  struct ks_cell_request req;
  struct ks_cell_result res;
  void *user;
  struct ks_cell *next;
  struct ks_box *box;        /* the kernel box it runs in, once queued there */
  int fd[2];                 /* read ends of its stdout and stderr pipes, or -1 */
  struct ks__watch watch[2];
  uint64_t start_ns;          /* its submission; then its sending */
  uint64_t deadline_ns;      /* then: the interrupt or kill (a kernel's start: from its
                              * submission, sent or not) */
  uint64_t grace_ns;         /* after that: the kernel goes (0: not yet) */
  int pidfd;                 /* fork mode: the process running it (FORKED), or -1 */
  bool sent;                 /* its message went out */
  bool present;              /* the submitting thread sent it (ks_sup_send_cell) */
  bool stopping;             /* interrupted or killed at its deadline or abort */
};

/* A pipe of a finished cell that some process the cell left behind still
 * holds: drained into nothing until its last writer is gone. */
struct ks__stray {
  int fd;
  struct ks__watch watch;
  struct ks__kernel *kernel;
  struct ks__stray *next;
};

/* A kernel box's cells and what the host knows of its interpreter. */
struct ks__kernel {
  struct ks_cell *current; /* sent, not finished */
  struct ks_cell *queue;   /* waiting, in order */
  struct ks_cell *queue_tail;
  int pidfd;               /* shared mode: the interpreter (READY), or -1 */
  bool ready;              /* READY came: cells may go */
  uint32_t mode;           /* enum ks_ip_mode, from READY */
  const char *dead_why;    /* why the host is ending the kernel, or NULL */
  struct ks__stray *strays;
};

uint64_t ks__now_ns(void);
/* Queues a cell for the supervisor thread without waking it (0, or
 * -ECANCELED after shutdown began); ks__wake then wakes it. */
int ks__queue_cell(struct ks_sup *sup, struct ks_cell *cell);
/* Wakes the supervisor thread (its eventfd). */
void ks__wake(struct ks_sup *sup);
int ks__watch_add(struct ks_sup *sup, int fd, struct ks__watch *w);
int ks__watch_mod(struct ks_sup *sup, int fd, struct ks__watch *w, uint32_t events);
void ks__watch_close(struct ks_sup *sup, int *fd);
void ks__kill_box(struct ks_sup *sup, struct ks_box *box, uint64_t now, bool timeout);
bool ks__key_cancelled(struct ks_sup *sup, uint64_t key);

/* Reads what one output pipe holds, up to budget bytes: into b under its
 * cap, past it dropped (spliced to /dev/null when nobody streams it). emit,
 * when report is set, gets each chunk read. Closes *fd at EOF. Returns the
 * bytes read. */
size_t ks__drain_fd(struct ks_sup *sup, int *fd, struct ks_outbuf *b, bool report,
                    void (*emit)(struct ks_sup *sup, void *owner, enum ks_stream s,
                                 const char *data, size_t len),
                    void *owner, enum ks_stream s, size_t budget);

/* interpreter.c */
void ks__ip_box_init(struct ks_box *box);
void ks__ip_box_free(struct ks_box *box);
/* ATTACH came with fd: the box's interpreter socket. Sends what waits. */
void ks__ip_attach(struct ks_sup *sup, struct ks_box *box, int fd);
/* Moves a parked box's interpreter socket into the box that claims it. */
void ks__ip_adopt(struct ks_sup *sup, struct ks_box *box, struct ks_box *parked);
void ks__ip_on_event(struct ks_sup *sup, struct ks_box *box, uint32_t events, uint64_t now);
void ks__ip_drain(struct ks_sup *sup, struct ks_box *box, uint64_t now);
void ks__cell_on_output(struct ks_sup *sup, struct ks__watch *w);
void ks__stray_drain(struct ks_sup *sup, struct ks__watch *w);
/* The cells submitted since the last turn: to their kernels' queues. */
void ks__cells_take(struct ks_sup *sup, struct ks_cell *cells, uint64_t now);
/* Of those, the ones the submitting thread sent itself, now; returns the
 * rest, in order. */
struct ks_cell *ks__cells_take_present(struct ks_sup *sup, struct ks_cell *cells);
/* Deadlines, aborts and graces of every kernel's cells. */
void ks__cells_sweep(struct ks_sup *sup, uint64_t now);
uint64_t ks__cells_next_deadline(struct ks_sup *sup);
/* The box is finished (or gone): its cells end with it. */
void ks__ip_box_end(struct ks_sup *sup, struct ks_box *box, const char *why);
/* Teardown: cells never taken end as if their kernel were gone. */
void ks__cells_cancel(struct ks_sup *sup, struct ks_cell *cells);
/* Hands the cells finished during the batch to on_cell_done: never in the
 * middle of one, where a later event may still name a cell's pipes. */
void ks__cells_flush(struct ks_sup *sup);

#endif
