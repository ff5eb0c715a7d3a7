/* The supervisor's structures, shared by its two subsystems on the loop
 * (loop.h): boxes (box.c, box-*.c) and the interpreter with its kernels and
 * cells (interpreter.c, interpreter-cells.c). Structures and inline
 * predicates only: what each subsystem offers the other is declared in its
 * own header (box-internal.h, interpreter.h). Not for use outside
 * csrc/core/box/. */
#ifndef KS_CORE_SUP_INTERNAL_H
#define KS_CORE_SUP_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "boxstate.h"
#include "interp.h"
#include "keys.h"
#include "boxpipes.h"
#include "loop.h"
#include "supervisor.h"

#define KS__MS KS_LOOP_MS
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
/* A box whose call settled at the init's report is left to kern's teardown
 * (~5-10 ms) this long, then killed and `kern stop`ped like a timed-out one:
 * close() promises no kern of the session 500 ms after it. */
#define KS__TAIL_GRACE_NS (400 * KS__MS)

/* What a command on the loop (struct ks_cmd) carries. */
enum ks__cmd_kind {
  KS__CMD_BOX,    /* a box to spawn: struct ks_box */
  KS__CMD_CELL,   /* a kernel's cell: struct ks_cell */
  KS__CMD_FORGET, /* a group to forget: struct ks__forget */
  KS__CMD_FEED,   /* a stdin feed to write on: struct ks_feed */
};

/* The read ends we hold for one box: stdout, stderr, started. */
#define KS__BOX_PIPES KS_BOX_PIPES

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
struct ks__stop;

/* What kern and the init said before the call that reads it settles: the
 * parked start's output and started bytes, a TAKEN or report that came
 * while the box was parked. The call's result takes it at the call's end
 * (ks__call_take_said), never before: a claim hands it over with the kern. */
struct ks__said {
  struct ks_outbuf out[2];     /* the call's cap from its attach on */
  unsigned char started[4];
  size_t nstarted;
  bool taken;
  uint64_t started_ns; /* the init said STARTED (ks_now_ns); 0: not */
  bool reported;
  int report_end;
  int report_value;
};

/* A running kern: its process and what talks to it. One struct, owned by
 * the call it serves (struct ks_box, `kern`), which it names (`box`): every
 * watch below has the kern as its owner and reaches the call through it,
 * so a claim moves the whole kern from the parked run to the claiming call
 * by two pointers (ks__kern_attach) and nothing field by field. */
struct ks__kern {
  struct ks_box *box;        /* the call it serves now */
  struct ks_proc proc;
  struct ks_proc_kids kids; /* a parked box's kern's children (its watchdog), pinned once
                             * it started: ks_proc_kill_tree needs no /proc read then */
  int fd[KS__BOX_PIPES];
  bool pipe_grown[2]; /* stdout/stderr pipe enlarged for a heavy writer */
  struct ks_watch watch[KS__BOX_PIPES + 1]; /* the pipes, then the pidfd */
  int ctl;                    /* our end of the init's control channel, or -1 */
  int release;                /* a box settled at the init's report: a copy of ctl
                               * whose shutdown at ks_box_free, once the result is
                               * the caller's, lets the init exit (protocol.h,
                               * REPORT); -1 */
  struct ks_watch ctl_watch;
  struct ks_chan_reader chan;
  bool ctl_out;               /* ctl is watched for EPOLLOUT too */
  int pending_fd[2];          /* descriptors that came on ctl, for its ATTACH */
  int workload_pidfd;         /* from ATTACH: a pidfd of the interpreter, or -1 */
  bool final_done;            /* settling at the interpreter's final DONE, whose
                               * account is final_rep (see ks__ip_final_done) */
  struct ks_init_report final_rep;
  /* The interpreter socket (interp.h) of a box started with --interp. */
  int ip;                     /* its host end, or -1 (not attached yet, or gone) */
  struct ks_watch ip_watch;
  struct ks_ip_reader ipr;
  struct ks__ip_out ip_out;   /* the message being sent */
  bool ip_out_watched;        /* ip is watched for EPOLLOUT too */
  struct ks__kernel *kernel;  /* a kernel box's cells (req.kernel_key), or NULL */
  struct ks__said said;
  /* `kern stop` must name the box kern runs, with the environment kern
   * had: its start's, taken from that start's request. */
  char **stop_argv;
  char **envp;
};

/* A call: the request, its deadline and its result, and the kern it runs
 * in. The state (boxstate.h) is the call's, not the kern's: it says where
 * the call is (a command, the scan thread, the live list, the caller's),
 * and PENDING, CLAIMED and ENDED are states of a call with no kern of its
 * own; a kern is only ever reached through the one call it serves, whose
 * state then also tells what that kern is doing for it (parked, running,
 * killed, draining). A kern that outlives its call is no box any more but
 * a tail (struct ks__tail). */
struct ks_box {
  struct ks_cmd cmd; /* KS__CMD_BOX, on its way to the supervisor thread */
  struct ks_box_request req;
  struct ks_box_result res;
  void *user;
  struct ks_ws_watch_call wcall;
  bool wcall_open; /* begun on the scan thread, not yet ended */
  enum ks__scan_phase scan_phase;
  struct ks_box *next;
  struct ks_box *prev;
  /* Its kern: the one it started, or the parked one it claimed; NULL once
   * a claim took it (a parked run that was claimed). */
  struct ks__kern *kern;
  /* A caller's kill (ks_sup_signal_call) set its deadline: the kill at it
   * is the caller's, no timeout. */
  bool caller_kill;
  uint64_t start_ns;
  /* When the state's time is up (ks__sweep): parked, running or settling,
   * the call's deadline (UINT64_MAX: none); KILLED, the kill grace's end;
   * DRAINING, the drain grace's end (at once for a kern given up on). */
  uint64_t deadline_ns;
  struct ks_timer timer;      /* armed for deadline_ns while live (ks__box_deadline) */
  enum ks_box_state state;    /* where it is in its life (boxstate.h); moved only
                               * by ks__box_to */
  size_t spec_sent;           /* bytes of req.spec written to the kern's ctl */
  struct ks_box *claimed;     /* the parked box this call took, its run still to
                               * settle: with this box's, one wakeup of the JS
                               * thread, not one more while the call runs */
  /* Its stdin pipe, with a feed (req.feed; box-feed.c). */
  int feed_fd;                /* our write end, nonblocking, or -1 */
  int feed_rd;                /* the box's read end until sent (STDIN or SPEC), or -1 */
  struct ks_watch feed_watch;
  bool feed_live;             /* the workload holds the pipe: write (cold: at once;
                               * a claim: at TAKEN, so a box that never took the
                               * call had nothing written and its retry loses nothing) */
  bool feed_out;              /* feed_fd is watched for EPOLLOUT */
  /* A process's stream whose reading waits for the caller to take what
   * it has (req.flow; box-proc.c): its pipe is not watched for EPOLLIN. */
  bool out_paused[2];
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
  struct ks_watch watch[KS__TAIL_FDS];
  struct ks_watch pid_watch;
  bool reaped; /* freed at the sweep: later events of the batch may name it */
  uint64_t deadline_ns;
  struct ks_timer timer; /* armed for deadline_ns: the grace's end */
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
  struct ks_timer timer; /* armed for deadline_ns */
  struct ks_watch watch;
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

/* What the interpreter (interpreter*.c) needs of the box subsystem, which
 * calls the interpreter (interpreter.h) and is not called back by it: the
 * box subsystem fills this in when the supervisor starts. */
struct ks__box_hooks {
  /* Kills the box's kern now, as cancelled (its kernel is over). */
  void (*kill)(struct ks_sup *sup, struct ks_box *box, uint64_t now);
};

struct ks_sup {
  pthread_t thread;
  struct ks__scanner scanner;
  struct ks_loop loop;         /* the supervisor thread's (loop.h) */
  struct ks_keys keys;         /* cancelled groups and calls, parks to drop */
  struct ks__box_hooks box_hooks;
  struct ks_cell *turn_cells;  /* the cells taken this turn, not sent yet:
                                * queued on their kernels after the boxes */
  struct ks_cell *cells_done;  /* finished cells, handed to JS after the batch */
  /* Ready kernels whose cells the submitting thread may send itself
   * (ks_sup_send_cell), guarded by kernels_lock. */
  pthread_mutex_t kernels_lock;
  struct ks__sendable *sendable;
  _Atomic size_t live_count;
  struct ks_box *live;
  struct ks__aux *aux;
  _Atomic size_t aux_count;
  _Atomic size_t stops_queued; /* `kern stop`s queued by a sweep, not yet started */
  struct ks__stop *stops;      /* those: boxes finished this turn, by a timer or the
                                * sweep, whose `kern stop` the sweep starts */
  struct ks__tail *tails;
  _Atomic size_t tail_count;
  struct ks_sup_hooks hooks;
  unsigned off; /* bench switches (enum ks_sup_off), fixed at its start */
  void *ctx;
#ifdef KS_FAILPOINTS
  /* The Debug build's pause after the thread took the commands (from
   * KS_FAILPOINT_SUP_TAKE_MS): it widens the window a test races into. */
  unsigned failpoint_take_ms;
#endif
};

/* A ready kernel, as the submitting thread sees it: a copy of its socket to
 * send a cell on, once the host knows no cell of it is under way. */
struct ks__sendable {
  uint64_t key;
  int fd;
  struct ks__sendable *next;
};

/* A kernel's cell, from submission to on_cell_done (interpreter-cells.c). */
struct ks_cell {
  struct ks_cmd cmd;         /* KS__CMD_CELL, on its way to the supervisor thread */
  struct ks_cell_request req;
  struct ks_cell_result res;
  void *user;
  struct ks_cell *next;
  struct ks_box *box;        /* the kernel box it runs in, once queued there */
  int fd[2];                 /* read ends of its stdout and stderr pipes, or -1 */
  struct ks_watch watch[2];
  uint64_t start_ns;          /* its submission; then its sending */
  uint64_t deadline_ns;      /* then: the interrupt or kill (a kernel's start: from its
                              * submission, sent or not) */
  uint64_t grace_ns;         /* after that: the kernel goes (0: not yet) */
  uint64_t again_ns;         /* shared mode, stopping: the interrupt's next repeat */
  int pidfd;                 /* fork mode: the process running it (FORKED), or -1 */
  bool sent;                 /* its message went out */
  bool present;              /* the submitting thread sent it (ks_sup_send_cell) */
  bool stopping;             /* interrupted or killed at its deadline or abort */
};

/* A pipe of a finished cell that some process the cell left behind still
 * holds: drained into nothing until its last writer is gone. */
struct ks__stray {
  int fd;
  struct ks_watch watch;
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
  struct ks_timer timer;   /* the cells' clock: a queued start's deadline, or the
                            * current cell's deadline or grace (ks__kernel_clock);
                            * its owner is the kern */
};

#endif
