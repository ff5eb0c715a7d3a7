/* The supervisor thread's event loop. It knows no box: subsystems (boxes,
 * kernels and their cells) register watches on descriptors, each with a
 * callback and an owner of their own, post commands to it from any thread,
 * and connect to its turn through one set of hooks (struct ks_loop_hooks).
 *
 * Deadlines are timers (timers.h) the subsystems arm on the loop's heap,
 * each with a callback and an owner of its own, as a watch has.
 *
 * One turn: wait in epoll_wait until an event or the first timer's time;
 * take the commands posted since the last turn (hooks.on_commands, before
 * any event of the batch is dispatched); dispatch the batch's events to
 * their watches; fire the timers that are due; then hooks.on_turn, or
 * hooks.on_stop once ks_loop_stop was called (no timer fires then), after
 * which the loop returns.
 *
 * Everything here but ks_loop_post, ks_loop_queue, ks_loop_wake,
 * ks_loop_stop and ks_loop_stopped is for the loop's own thread. */
#ifndef KS_CORE_LOOP_H
#define KS_CORE_LOOP_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "outbuf.h"
#include "timers.h"
#include "../err.h"

#define KS_LOOP_MS 1000000ULL
/* Bytes of the loop thread's scratch buffer (ks_loop.scratch). */
#define KS_LOOP_SCRATCH_SIZE (64u << 10)

struct ks_watch;

/* An event on a watched descriptor: events as epoll reports them; ctx is
 * the loop's (ks_loop_init); now, the turn's time. */
typedef void ks_watch_fn(void *ctx, struct ks_watch *w, uint32_t events, uint64_t now);

/* A registration of one descriptor, kept in its owner's memory for as long
 * as the descriptor is watched: epoll names the watch, the watch its owner. */
struct ks_watch {
  ks_watch_fn *fn;
  void *owner;
};

/* A command for the loop's thread, posted from any thread: embedded in what
 * it carries, which the subsystem that posted it finds from kind. */
struct ks_cmd {
  struct ks_cmd *next;
  int kind;
};

struct ks_loop_hooks {
  /* The commands posted since the last turn, in the order they were posted,
   * taken before the turn's events are dispatched (a command may need to be
   * in place before an event of the same batch that answers it). What is
   * left in *cmds goes to on_turn, or to on_stop. */
  void (*on_commands)(void *ctx, struct ks_cmd **cmds);
  /* After the turn's events: the commands on_commands left. */
  void (*on_turn)(void *ctx, struct ks_cmd *cmds);
  /* ks_loop_stop was called: the last turn, instead of on_turn. The loop
   * returns after it, and no command is taken any more. */
  void (*on_stop)(void *ctx, struct ks_cmd *cmds);
};

struct ks_loop {
  int epfd;
  int wakefd;   /* an eventfd: posting a command writes it */
  int devnull;  /* /dev/null, read-write: where discarded bytes go, and an
                 * empty descriptor for whoever needs one */
  struct ks_watch wake_watch;
  const struct ks_loop_hooks *hooks;
  void *ctx;
  pthread_mutex_t lock;
  struct ks_cmd *head; /* guarded by lock */
  struct ks_cmd *tail; /* guarded by lock */
  bool stopping;       /* guarded by lock */
  struct ks_timers timers; /* the loop thread's */
  /* The loop thread's scratch buffer: for bytes read only to be dropped,
   * or looked at during one call. */
  char scratch[KS_LOOP_SCRATCH_SIZE];
};

/* Makes the loop's descriptors. 0, or a negative errno with err set. */
int ks_loop_init(struct ks_loop *loop, const struct ks_loop_hooks *hooks, void *ctx,
                 struct ks_err *err);
/* Closes them; the loop is not running. */
void ks_loop_destroy(struct ks_loop *loop);
/* Turns until ks_loop_stop (see the top). */
void ks_loop_run(struct ks_loop *loop);

/* Queues cmd for the next turn and wakes the loop. 0, or -ECANCELED once
 * the loop is stopping (cmd is then still the caller's). */
int ks_loop_post(struct ks_loop *loop, struct ks_cmd *cmd);
/* The same without the wakeup, for a caller that wakes the loop itself
 * (ks_loop_wake) when it is ready for the command to be taken. */
int ks_loop_queue(struct ks_loop *loop, struct ks_cmd *cmd);
/* Wakes the loop's thread for a turn. */
void ks_loop_wake(struct ks_loop *loop);
/* Asks the loop for its last turn (hooks.on_stop); from then on posts fail. */
void ks_loop_stop(struct ks_loop *loop);
bool ks_loop_stopped(struct ks_loop *loop);

/* Arms t (ks_timer_init) to fire at (ks_now_ns), or moves it there;
 * UINT64_MAX disarms it. Its callback gets the loop's ctx. */
void ks_loop_timer_arm(struct ks_loop *loop, struct ks_timer *t, uint64_t at);
/* Disarms t; nothing if it is not armed. */
void ks_loop_timer_disarm(struct ks_loop *loop, struct ks_timer *t);

/* Watches fd for input (EPOLLIN), for w. 0 or a negative errno. */
int ks_loop_watch_add(struct ks_loop *loop, int fd, struct ks_watch *w);
/* Watches fd for events (0: only the EPOLLERR and EPOLLHUP epoll always
 * reports), for w. 0 or a negative errno. */
int ks_loop_watch_add_for(struct ks_loop *loop, int fd, struct ks_watch *w, uint32_t events);
/* Changes what fd is watched for (0: nothing), and for which watch: a
 * descriptor whose owner changed is pointed at the new owner's watch. */
int ks_loop_watch_mod(struct ks_loop *loop, int fd, struct ks_watch *w, uint32_t events);
/* Stops watching fd (which stays open). */
void ks_loop_watch_del(struct ks_loop *loop, int fd);
/* Stops watching *fd, closes it and sets it to -1; nothing if it is < 0.
 * Deregistered first: a forked child elsewhere in the host may share the
 * open file description, and epoll would keep reporting it. */
void ks_loop_watch_close(struct ks_loop *loop, int *fd);

/* Receives each chunk ks_loop_drain read from a reported stream: owner and
 * stream as given to it; ctx, the loop's. */
typedef void ks_drain_emit_fn(void *ctx, void *owner, int stream, const char *data, size_t len);

/* Reads what one output pipe holds, up to budget bytes: into b under its
 * cap, past it dropped (spliced to /dev/null when nobody streams it). emit,
 * when report is set, gets each chunk read. Closes *fd at EOF. Returns the
 * bytes read. */
size_t ks_loop_drain(struct ks_loop *loop, int *fd, struct ks_outbuf *b, bool report,
                     ks_drain_emit_fn *emit, void *owner, int stream, size_t budget);

/* Reads what fd holds into nothing. Returns false once it would block, true
 * at EOF or on an error (fd still open: the caller closes it). */
bool ks_loop_discard(struct ks_loop *loop, int fd);

#endif
