/* What outlives a box's call on the supervisor thread: tails (a kern
 * still tearing down a box whose call settled at the init's report),
 * helpers (`kern stop`, a kern given up on) and the `kern stop`s a sweep
 * queues. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "box-internal.h"
#include "../util.h"

/* ---- helpers: kern stop, abandoned kerns -------------------------------- */

static void ks__aux_on_exit(void *ctx, struct ks_watch *w, uint32_t events, uint64_t now);

/* The helper outlived its deadline: killed, and reaped if it can be. */
static void ks__aux_due(void *ctx, struct ks_timer *t, uint64_t now) {
  (void) now;
  ks__aux_release(ctx, t->owner, 0);
}

static void ks__aux_adopt(struct ks_sup *sup, struct ks_proc *proc, uint64_t deadline_ns) {
  struct ks__aux *a = calloc(1, sizeof *a);
  if (a == NULL) {
    ks_proc_kill_and_release(proc, 0);
    return;
  }
  a->proc = *proc;
  *proc = (struct ks_proc) KS_PROC_INIT;
  a->deadline_ns = deadline_ns;
  a->watch.fn = ks__aux_on_exit;
  a->watch.owner = a;
  ks_timer_init(&a->timer, ks__aux_due, a);
  if (ks_loop_watch_add(&sup->loop, a->proc.pidfd, &a->watch) < 0) {
    ks_proc_kill_and_release(&a->proc, 0);
    free(a);
    return;
  }
  ks_loop_timer_arm(&sup->loop, &a->timer, deadline_ns);
  a->next = sup->aux;
  if (sup->aux != NULL)
    sup->aux->prev = a;
  sup->aux = a;
  atomic_fetch_add(&sup->aux_count, 1);
}

void ks__aux_release(struct ks_sup *sup, struct ks__aux *a, int wait_ms) {
  if (a->prev != NULL)
    a->prev->next = a->next;
  else
    sup->aux = a->next;
  if (a->next != NULL)
    a->next->prev = a->prev;
  atomic_fetch_sub(&sup->aux_count, 1);
  ks_loop_timer_disarm(&sup->loop, &a->timer);
  if (a->proc.pidfd >= 0)
    ks_loop_watch_del(&sup->loop, a->proc.pidfd);
  /* A helper that SIGKILL cannot end within wait_ms is waited for
   * elsewhere: this thread drains every other box. */
  ks_proc_kill_and_release(&a->proc, wait_ms);
  free(a);
}

/* The helper's pidfd: it exited. */
static void ks__aux_on_exit(void *ctx, struct ks_watch *w, uint32_t events, uint64_t now) {
  struct ks__aux *a = w->owner;
  int status;
  struct rusage ru;

  (void) events;
  (void) now;
  if (ks_proc_try_reap(&a->proc, &status, &ru) != 0)
    ks__aux_release(ctx, a, 0);
}

/* A `kern stop NAME` still to start, with what it needs moved out of its
 * box: the box itself belongs to the scan thread (and then JS) once it is
 * handed over. */
struct ks__stop {
  char *path;
  int exec_fd; /* > 2: kern held open, owned; 0: exec by path */
  char **argv;
  char **envp;
  struct ks__stop *next;
};

static void ks__run_stop(struct ks_sup *sup, const char *path, int exec_fd, char **argv,
                         char **envp) {
  struct ks_spawn_plan plan;
  struct ks_proc proc;
  struct ks_err err;

  memset(&plan, 0, sizeof plan);
  plan.path = path;
  plan.exec_fd = exec_fd;
  plan.argv = argv;
  plan.envp = envp;
  plan.cwd = "/";
  plan.fds[0] = plan.fds[1] = plan.fds[2] = sup->loop.devnull;
  plan.nfds = 3;
  /* Best effort: the SIGKILL already sent takes the box down with kern. */
  if (ks_proc_spawn(&plan, &proc, &err) == 0)
    ks__aux_adopt(sup, &proc, ks_now_ns() + KS__STOP_DEADLINE_NS);
}

/* A killed box is finished: its `kern stop` is queued on *stops, to start
 * once every box finished in this sweep is on its way to JS: each `kern
 * stop` takes this thread a spawn, and its CPU competes with the boxes'
 * ends. Without memory for the entry it starts now. */
void ks__queue_stop(struct ks_sup *sup, struct ks_box *box, struct ks__stop **stops) {
  struct ks_box_request *req = &box->req;
  struct ks__kern *k = box->kern;
  struct ks__stop *stop;

  if (!ks__box_was_killed(box) || k->stop_argv == NULL)
    return;
  stop = calloc(1, sizeof *stop);
  if (stop != NULL)
    stop->path = strdup(req->path);
  if (stop == NULL || stop->path == NULL) {
    free(stop);
    ks__run_stop(sup, req->path, req->exec_fd, k->stop_argv, k->envp);
    return;
  }
  atomic_fetch_add(&sup->stops_queued, 1);
  stop->exec_fd = req->exec_fd;
  stop->argv = k->stop_argv;
  stop->envp = k->envp;
  req->exec_fd = 0;
  k->stop_argv = NULL;
  k->envp = NULL;
  stop->next = *stops;
  *stops = stop;
}

void ks__run_stops(struct ks_sup *sup, struct ks__stop *stops) {
  while (stops != NULL) {
    struct ks__stop *next = stops->next;
    ks__run_stop(sup, stops->path, stops->exec_fd, stops->argv, stops->envp);
    if (stops->exec_fd > 2)
      ks_close_keep_errno(stops->exec_fd);
    free(stops->path);
    ks__free_strv(stops->argv);
    ks__free_strv(stops->envp);
    free(stops);
    atomic_fetch_sub(&sup->stops_queued, 1); /* now a helper, counted as one */
    stops = next;
  }
}

/* ---- tails ------------------------------------------------------------------ */

static void ks__tail_link(struct ks_sup *sup, struct ks__tail *t) {
  t->prev = NULL;
  t->next = sup->tails;
  if (sup->tails != NULL)
    sup->tails->prev = t;
  sup->tails = t;
  atomic_fetch_add(&sup->tail_count, 1);
}

void ks__tail_free(struct ks_sup *sup, struct ks__tail *t) {
  if (t->prev != NULL)
    t->prev->next = t->next;
  else
    sup->tails = t->next;
  if (t->next != NULL)
    t->next->prev = t->prev;
  ks_loop_timer_disarm(&sup->loop, &t->timer);
  for (int i = 0; i < KS__TAIL_FDS; i++)
    ks_loop_watch_close(&sup->loop, &t->fd[i]);
  if (t->exec_fd > 2)
    ks_close_keep_errno(t->exec_fd);
  free(t->path);
  ks__free_strv(t->stop_argv);
  ks__free_strv(t->envp);
  free(t);
  atomic_fetch_sub(&sup->tail_count, 1);
}

/* kern's teardown outlived the tail's grace, unless it was reaped in
 * this turn's batch (the sweep would free it). */
static void ks__tail_due(void *ctx, struct ks_timer *timer, uint64_t now) {
  struct ks__tail *t = timer->owner;
  if (t->reaped)
    ks__tail_free(ctx, t);
  else
    ks__tail_expire(ctx, t, now);
}

struct ks__tail *ks__tail_adopt(struct ks_sup *sup, struct ks_box *box, uint64_t now) {
  struct ks__tail *t = calloc(1, sizeof *t);
  char *path = t != NULL ? strdup(box->req.path) : NULL;

  if (path == NULL) {
    /* No memory to wait for it: end it as a timed-out box is ended. */
    free(t);
    (void) ks_proc_signal_group(&box->kern->proc, SIGKILL);
    ks_loop_watch_del(&sup->loop, box->kern->proc.pidfd);
    ks_proc_kill_and_release(&box->kern->proc, 0);
    for (int i = 0; i < KS__BOX_PIPES; i++)
      ks_loop_watch_close(&sup->loop, &box->kern->fd[i]);
    ks_loop_watch_close(&sup->loop, &box->kern->ctl);
    if (box->kern->stop_argv != NULL)
      ks__run_stop(sup, box->req.path, box->req.exec_fd, box->kern->stop_argv, box->kern->envp);
    return NULL;
  }
  t->path = path;
  t->proc = box->kern->proc;
  box->kern->proc = (struct ks_proc) KS_PROC_INIT;
  ks_proc_kids_close(&box->kern->kids); /* kern ends its watchdog itself at its exit */
  for (int i = 0; i < KS__BOX_PIPES; i++) {
    t->fd[i] = box->kern->fd[i];
    box->kern->fd[i] = -1;
  }
  t->fd[KS__BOX_PIPES] = box->kern->ctl;
  box->kern->ctl = -1;
  t->deadline_ns = now + KS__TAIL_GRACE_NS;
  ks_timer_init(&t->timer, ks__tail_due, t);
  ks_loop_timer_arm(&sup->loop, &t->timer, t->deadline_ns);
  t->exec_fd = box->req.exec_fd;
  box->req.exec_fd = 0;
  t->stop_argv = box->kern->stop_argv;
  box->kern->stop_argv = NULL;
  t->envp = box->kern->envp;
  box->kern->envp = NULL;
  ks__tail_link(sup, t);
  return t;
}

/* Points the tail's watches at it. Until then they still name the box it
 * came from: only for the rest of a sweep, with no epoll_wait before this,
 * so the call can be handed back first. */
static void ks__tail_on_fd(void *ctx, struct ks_watch *w, uint32_t events, uint64_t now);
static void ks__tail_on_exit(void *ctx, struct ks_watch *w, uint32_t events, uint64_t now);

void ks__tail_arm(struct ks_sup *sup, struct ks__tail *t) {
  if (t == NULL)
    return;
  for (int i = 0; i < KS__TAIL_FDS; i++) {
    t->watch[i].fn = ks__tail_on_fd;
    t->watch[i].owner = t;
    /* A descriptor whose entry could not be pointed at the tail must not
     * stay watched under the kern's watch (the kern is freed with its call). */
    if (t->fd[i] >= 0 && ks_loop_watch_mod(&sup->loop, t->fd[i], &t->watch[i], EPOLLIN) < 0)
      ks_loop_watch_close(&sup->loop, &t->fd[i]);
  }
  t->pid_watch.fn = ks__tail_on_exit;
  t->pid_watch.owner = t;
  if (ks_loop_watch_mod(&sup->loop, t->proc.pidfd, &t->pid_watch, EPOLLIN) < 0)
    ks_loop_watch_del(&sup->loop, t->proc.pidfd); /* its grace timer still ends it */
}

/* Whatever kern or a dying box still writes goes nowhere; EOF closes. */
static void ks__tail_on_fd(void *ctx, struct ks_watch *w, uint32_t events, uint64_t now) {
  struct ks_sup *sup = ctx;
  struct ks__tail *t = w->owner;
  int *fd = &t->fd[w - t->watch];

  (void) events;
  (void) now;
  if (*fd >= 0 && ks_loop_discard(&sup->loop, *fd))
    ks_loop_watch_close(&sup->loop, fd);
}

static void ks__tail_on_exit(void *ctx, struct ks_watch *w, uint32_t events, uint64_t now) {
  struct ks_sup *sup = ctx;
  struct ks__tail *t = w->owner;
  int status;
  struct rusage ru;
  int r;

  (void) events;
  (void) now;
  (void) ks_proc_signal_group(&t->proc, SIGKILL); /* as ks__on_kern_exit: its group first */
  r = ks_proc_try_reap(&t->proc, &status, &ru);
  if (r == 0)
    return;
  ks_loop_watch_del(&sup->loop, t->proc.pidfd);
  ks_proc_close(&t->proc);
  t->reaped = true;
}

void ks__tail_expire(struct ks_sup *sup, struct ks__tail *t, uint64_t now) {
  ks_proc_kill_tree(&t->proc, NULL);
  ks_loop_watch_del(&sup->loop, t->proc.pidfd);
  ks__aux_adopt(sup, &t->proc, now + KS__KILL_GRACE_NS);
  if (t->stop_argv != NULL)
    ks__run_stop(sup, t->path, t->exec_fd, t->stop_argv, t->envp);
  ks__tail_free(sup, t);
}

