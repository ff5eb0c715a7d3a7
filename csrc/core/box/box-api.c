/* The supervisor's thread and the entry points of supervisor.h: start and
 * shutdown, the hooks that connect the loop (loop.h) to the box and
 * interpreter subsystems (the turn's commands, its end, the next deadline,
 * the last turn), submissions, cancels, drops and forgets, and the counts
 * the leak census reads. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "box-internal.h"
#include "interpreter.h"
#include "../util.h"

/* Milliseconds from now until end, 0 once it has passed. */
static int ks__ms_until(uint64_t end) {
  uint64_t now = ks_now_ns();
  return now >= end ? 0 : (int) ((end - now + KS__MS - 1) / KS__MS);
}

/* A group to forget once the boxes submitted before it are taken in
 * (ks_sup_forget_group): a command of its own on the loop. */
struct ks__forget {
  struct ks_cmd cmd; /* KS__CMD_FORGET */
  uint64_t group;
};

static struct ks_box *ks__box_of(struct ks_cmd *cmd) {
  return (struct ks_box *) ((char *) cmd - offsetof(struct ks_box, cmd));
}

static struct ks_cell *ks__cell_of(struct ks_cmd *cmd) {
  return (struct ks_cell *) ((char *) cmd - offsetof(struct ks_cell, cmd));
}

static struct ks__forget *ks__forget_of(struct ks_cmd *cmd) {
  return (struct ks__forget *) ((char *) cmd - offsetof(struct ks__forget, cmd));
}

static struct ks_feed *ks__feed_of(struct ks_cmd *cmd) {
  return (struct ks_feed *) ((char *) cmd - offsetof(struct ks_feed, cmd));
}

/* ---- the loop's hooks ---------------------------------------------------- */

/* The turn's commands, before its events: the cells come out of the list
 * (the ones the submitting thread sent itself are taken in now, before an
 * answer in the batch is read: each names a kernel that is up already);
 * boxes and forgets stay, in order, for ks__on_turn. */
static void ks__on_commands(void *ctx, struct ks_cmd **cmds) {
  struct ks_sup *sup = ctx;
  struct ks_cell *cells = NULL;
  struct ks_cell **cell_tail = &cells;
  struct ks_cmd **pp = cmds;

  while (*pp != NULL) {
    struct ks_cmd *c = *pp;
    if (c->kind != KS__CMD_CELL) {
      pp = &c->next;
      continue;
    }
    *pp = c->next;
    c->next = NULL;
    *cell_tail = ks__cell_of(c);
    (*cell_tail)->next = NULL;
    cell_tail = &(*cell_tail)->next;
  }
#ifdef KS_FAILPOINTS
  if (sup->failpoint_take_ms > 0)
    (void) usleep(sup->failpoint_take_ms * 1000u);
#endif
  sup->turn_cells = cells != NULL ? ks__cells_take_present(sup, cells) : NULL;
}

static void ks__forget_now(struct ks_sup *sup, struct ks__forget *f) {
  ks_keys_forget(&sup->keys, f->group, true);
  free(f);
}

/* After the turn's events: the boxes are spawned, then the cells queued on
 * their kernels (a kernel's box is submitted before its first cell), then
 * the sweep; groups are forgotten only after it, which is what kills their
 * live boxes. */
static void ks__on_turn(void *ctx, struct ks_cmd *cmds) {
  struct ks_sup *sup = ctx;
  struct ks_cmd *forgets = NULL;
  struct ks_cmd **forget_tail = &forgets;
  struct ks_cell *cells = sup->turn_cells;

  sup->turn_cells = NULL;
  while (cmds != NULL) {
    struct ks_cmd *next = cmds->next;
    cmds->next = NULL;
    if (cmds->kind == KS__CMD_FORGET) {
      *forget_tail = cmds;
      forget_tail = &cmds->next;
    } else if (cmds->kind == KS__CMD_FEED) {
      ks__feed_wake(sup, ks__feed_of(cmds));
    } else {
      ks__spawn_box(sup, ks__box_of(cmds));
    }
    cmds = next;
  }
  ks__cells_take(sup, cells, ks_now_ns());
  ks__sweep(sup, ks_now_ns());
  while (forgets != NULL) {
    struct ks_cmd *next = forgets->next;
    ks__forget_now(sup, ks__forget_of(forgets));
    forgets = next;
  }
}

/* The loop's last turn (ks_sup_shutdown): cells and boxes never taken end
 * as cancelled; every live box, tail and helper is killed and reaped. */
static void ks__on_stop(void *ctx, struct ks_cmd *cmds) {
  struct ks_sup *sup = ctx;
  uint64_t budget_end;

  ks__cells_cancel(sup, sup->turn_cells);
  sup->turn_cells = NULL;
  while (cmds != NULL) {
    struct ks_cmd *next = cmds->next;
    struct ks_err err;
    if (cmds->kind == KS__CMD_FORGET) {
      free(ks__forget_of(cmds));
    } else if (cmds->kind == KS__CMD_FEED) {
      struct ks_feed *f = ks__feed_of(cmds);
      ks_feed_unpost(f);
      ks_feed_unref(f);
    } else {
      ks_err_set(&err, ECANCELED, "spawn", NULL);
      ks__report_spawn_failure(sup, ks__box_of(cmds), &err);
    }
    cmds = next;
  }
  /* Every kern and helper is killed first, then each is reaped within one
   * shared budget; any SIGKILL cannot end by then is waited for by a thread
   * of its own, so a frozen kern never holds up process exit or a Worker's
   * end. */
  for (struct ks_box *box = sup->live; box != NULL; box = box->next) {
    if (box->state != KS_BOX_DRAINING)
      ks_proc_kill_tree(&box->kern->proc, &box->kern->kids);
  }
  for (struct ks__aux *a = sup->aux; a != NULL; a = a->next)
    ks_proc_kill_tree(&a->proc, NULL);
  for (struct ks__tail *t = sup->tails; t != NULL; t = t->next)
    ks_proc_kill_tree(&t->proc, NULL);
  budget_end = ks_now_ns() + KS__TEARDOWN_WAIT_NS;
  while (sup->live != NULL) {
    struct ks_box *box = sup->live;
    if (box->state != KS_BOX_DRAINING) {
      ks_loop_watch_del(&sup->loop, box->kern->proc.pidfd);
      ks_proc_kill_and_release(&box->kern->proc, ks__ms_until(budget_end));
      ks__box_to(box, KS_BOX_DRAINING);
      box->res.status_known = false;
    }
    for (int i = 0; i < KS__BOX_PIPES; i++)
      ks_loop_watch_close(&sup->loop, &box->kern->fd[i]);
    ks_loop_watch_close(&sup->loop, &box->kern->ctl);
    ks__ip_box_end(sup, box, "the engine is shutting down");
    ks__live_unlink(sup, box);
    ks__after_box(sup, box);
  }
  ks__cells_flush(sup);
  while (sup->tails != NULL) {
    struct ks__tail *t = sup->tails;
    if (t->proc.pidfd >= 0)
      ks_loop_watch_del(&sup->loop, t->proc.pidfd);
    ks_proc_kill_and_release(&t->proc, ks__ms_until(budget_end));
    ks__tail_free(sup, t);
  }
  while (sup->aux != NULL)
    ks__aux_release(sup, sup->aux, ks__ms_until(budget_end));
}

/* This thread is the parent of every kern it spawns, and the kernel asks
 * the parent thread's mask whether the SIGCHLD of a child's exit is
 * ignored. Blocked here, it never is: it is queued for the process and
 * wakes the JS thread (the one thread that takes it) to drop it, once per
 * box. Unblocked, the default disposition drops it where it is made. A program that handles SIGCHLD (Node's
 * child_process does, while it has children) may now have its handler run
 * on this thread, as on any of libuv's; every blocking call here handles EINTR. */
static void ks__accept_sigchld(void) {
  sigset_t chld;

  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  (void) pthread_sigmask(SIG_UNBLOCK, &chld, NULL);
}

static void *ks__sup_main(void *arg) {
  struct ks_sup *sup = arg;

  (void) pthread_setname_np(pthread_self(), "ks-supervisor");
  ks__accept_sigchld();
  ks_loop_run(&sup->loop);
  return NULL;
}

static const struct ks_loop_hooks ks__loop_hooks = {
    .on_commands = ks__on_commands,
    .on_turn = ks__on_turn,
    .on_stop = ks__on_stop,
};

/* The box subsystem's side of what the interpreter needs of it. */
static void ks__kill_cancelled(struct ks_sup *sup, struct ks_box *box, uint64_t now) {
  ks__kill_box(sup, box, now, false);
}

static _Atomic unsigned ks__bench_off;

void ks_sup_bench_off(unsigned off) { atomic_store(&ks__bench_off, off); }

int ks_sup_start(const struct ks_sup_hooks *hooks, void *ctx, struct ks_sup **ret_sup,
                 struct ks_err *err) {
  struct ks_sup *sup;
  sigset_t all;
  sigset_t old;
  int r;

  sup = calloc(1, sizeof *sup);
  if (sup == NULL)
    return ks_err_set(err, ENOMEM, "calloc", NULL);
  sup->hooks = *hooks;
  sup->ctx = ctx;
  sup->box_hooks.kill = ks__kill_cancelled;
  sup->off = atomic_load(&ks__bench_off);
#ifdef KS_FAILPOINTS
  {
    const char *ms = getenv("KS_FAILPOINT_SUP_TAKE_MS"); /* read here, on the JS thread */
    unsigned long v = ms != NULL ? strtoul(ms, NULL, 10) : 0;
    sup->failpoint_take_ms = v > 10000 ? 10000 : (unsigned) v;
  }
#endif
  r = ks_loop_init(&sup->loop, &ks__loop_hooks, sup, err);
  if (r < 0) {
    free(sup);
    return r;
  }
  ks_keys_init(&sup->keys);
  pthread_mutex_init(&sup->scanner.lock, NULL);
  pthread_mutex_init(&sup->kernels_lock, NULL);
  pthread_cond_init(&sup->scanner.cond, NULL);

  /* The threads start with every signal blocked: the host's handlers run on
   * its own threads, and our syscalls see no EINTR storms (the supervisor
   * then takes SIGCHLD alone, ks__accept_sigchld). */
  sigfillset(&all);
  (void) pthread_sigmask(SIG_SETMASK, &all, &old);
  r = pthread_create(&sup->scanner.thread, NULL, ks__scanner_main, sup);
  if (r == 0) {
    r = pthread_create(&sup->thread, NULL, ks__sup_main, sup);
    if (r != 0) {
      pthread_mutex_lock(&sup->scanner.lock);
      sup->scanner.stopped = true;
      pthread_cond_signal(&sup->scanner.cond);
      pthread_mutex_unlock(&sup->scanner.lock);
      (void) pthread_join(sup->scanner.thread, NULL);
    }
  }
  (void) pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (r != 0) {
    r = ks_err_set(err, r, "pthread_create", NULL);
    ks_loop_destroy(&sup->loop);
    ks_keys_destroy(&sup->keys);
    pthread_mutex_destroy(&sup->kernels_lock);
    pthread_mutex_destroy(&sup->scanner.lock);
    pthread_cond_destroy(&sup->scanner.cond);
    free(sup);
    return r;
  }
  *ret_sup = sup;
  return 0;
}

void ks__queue_spawn(struct ks_sup *sup, struct ks_box *box, bool wake) {
  if ((wake ? ks_loop_post(&sup->loop, &box->cmd) : ks_loop_queue(&sup->loop, &box->cmd)) == 0)
    return;
  box->res.spawn_errnum = ECANCELED;
  box->res.spawn_syscall = "spawn";
  sup->hooks.on_done(sup->ctx, box);
}

int ks_sup_submit(struct ks_sup *sup, struct ks_box *box, bool wake) {
  if (ks_loop_stopped(&sup->loop))
    return -ECANCELED;
  /* From here on the box is ours: a shutdown racing with this reports it
   * through on_done as cancelled. */
  if (box->wcall_open) {
    ks__queue_spawn(sup, box, wake); /* begun by the caller (ks_box_request.begun) */
  } else if (box->req.watch != NULL && ks_ws_watch_try_begin(box->req.watch, &box->wcall)) {
    box->wcall_open = true; /* begun here, at no cost: straight to the spawn */
    ks__queue_spawn(sup, box, wake);
  } else if (box->req.watch != NULL) {
    ks__scanner_push(sup, box, KS__SCAN_BEFORE);
  } else {
    ks__queue_spawn(sup, box, wake);
  }
  return 0;
}

void ks_sup_shutdown(struct ks_sup *sup) {
  struct ks__scanner *sc = &sup->scanner;
  struct ks_box *left;

  /* The scan thread first: it may still hand boxes to the supervisor. */
  pthread_mutex_lock(&sc->lock);
  sc->stopped = true;
  left = sc->head;
  sc->head = sc->tail = NULL;
  pthread_cond_signal(&sc->cond);
  pthread_mutex_unlock(&sc->lock);
  (void) pthread_join(sc->thread, NULL);
  while (left != NULL) {
    struct ks_box *next = left->next;
    if (left->scan_phase == KS__SCAN_BEFORE) {
      left->res.spawn_errnum = ECANCELED;
      left->res.spawn_syscall = "spawn";
    }
    sup->hooks.on_done(sup->ctx, left);
    left = next;
  }

  ks_loop_stop(&sup->loop);
  (void) pthread_join(sup->thread, NULL);
  ks_loop_destroy(&sup->loop);
  ks_keys_destroy(&sup->keys);
  pthread_mutex_destroy(&sup->kernels_lock);
  while (sup->sendable != NULL) {
    struct ks__sendable *e = sup->sendable;
    sup->sendable = e->next;
    ks_close_keep_errno(e->fd);
    free(e);
  }
  pthread_mutex_destroy(&sc->lock);
  pthread_cond_destroy(&sc->cond);
  free(sup);
}

int ks_sup_feed_wake(struct ks_sup *sup, struct ks_feed *feed) {
  if (!ks_feed_mark_posted(feed))
    return 0; /* its wake is queued already: that turn sees the slot as it is then */
  feed->cmd.kind = KS__CMD_FEED;
  if (ks_loop_post(&sup->loop, &feed->cmd) == 0)
    return 0;
  ks_feed_unpost(feed);
  ks_feed_unref(feed);
  return -ECANCELED;
}

int ks_sup_cancel_group(struct ks_sup *sup, uint64_t group) {
  int r = ks_keys_cancel(&sup->keys, group);
  if (r == 0)
    ks_loop_wake(&sup->loop);
  return r;
}

int ks_sup_drop_parked(struct ks_sup *sup, uint64_t key) {
  int r = ks_keys_drop(&sup->keys, key);
  if (r == 0)
    ks_loop_wake(&sup->loop);
  return r;
}

void ks_sup_wake(struct ks_sup *sup) {
  ks_loop_wake(&sup->loop);
}

int ks_sup_signal_call(struct ks_sup *sup, uint64_t call, int signo, uint64_t grace_ns) {
  int r;
  if (call == 0 || signo < 1 || signo > 64 || grace_ns >> 56 != 0)
    return -EINVAL;
  r = ks_keys_signal(&sup->keys, call, signo, grace_ns);
  if (r == 0)
    ks_loop_wake(&sup->loop);
  return r;
}

/* The group is forgotten once the supervisor has taken in every box
 * submitted before this call: a command queued behind them does it.
 * Forgotten at once, a group whose prewarm box was still queued would let
 * that box start after its session was closed, and park for good. The
 * command wakes nothing: nothing waits for it (the census counts a queued
 * forget as done), and the loop's next turn, whatever wakes it, or its stop
 * takes it; a wake here would cost close() a thread switch. */
void ks_sup_forget_group(struct ks_sup *sup, uint64_t group) {
  struct ks__forget *f = calloc(1, sizeof *f);

  if (f == NULL) {
    ks_keys_forget(&sup->keys, group, false);
    return;
  }
  f->cmd.kind = KS__CMD_FORGET;
  f->group = group;
  ks_keys_forget_queued(&sup->keys);
  if (ks_loop_queue(&sup->loop, &f->cmd) < 0) {
    free(f);
    ks_keys_forget(&sup->keys, group, true); /* the loop has stopped: at once */
  }
}

size_t ks_sup_live_boxes(struct ks_sup *sup) { return atomic_load(&sup->live_count); }

size_t ks_sup_tails(struct ks_sup *sup) {
  /* A stop queued before the count of helpers it becomes: never a moment
   * between the two when both read 0. */
  size_t queued = atomic_load(&sup->stops_queued);
  return atomic_load(&sup->tail_count) + atomic_load(&sup->aux_count) + queued;
}

size_t ks_sup_cancelled_groups(struct ks_sup *sup) {
  /* A group whose forget is queued counts as forgotten. */
  return ks_keys_count(&sup->keys);
}
