/* A kernel box's cells, on the supervisor thread: each with stdout and
 * stderr pipes of its own, a deadline that interrupts (shared mode) or
 * kills (fork mode) only the cell, and a grace past which the kernel itself
 * goes (its box killed through sup->box_hooks). A cell comes as a command
 * on the loop (ks_sup_submit_cell), or sent by the submitting thread itself
 * to a ready kernel (ks_sup_send_cell). The messages that answer them are
 * read by interpreter.c. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "interpreter-internal.h"
#include "../util.h"

#define KS__CELL_GRACE_NS (1000 * KS__MS) /* an ignored interrupt: then the kernel goes */
/* A SIGINT that lands after the interpreter's last check for signals but
 * before a blocking system call (time.sleep's clock_nanosleep) is handled
 * only when that call returns: the interrupt is repeated through the grace
 * until the cell ends. */
#define KS__CELL_AGAIN_NS (100 * KS__MS)

/* ---- cells ------------------------------------------------------------- */

/* A cell's two pipes: out[0] and errp[0] the host's (nonblocking) read ends,
 * out[1] and errp[1] the ends the box writes. On failure none is left open. */
static void ks__close_pipes(int out[2], int errp[2]);

static int ks__cell_pipes(int out[2], int errp[2], struct ks_err *err) {
  if (ks_pipe_nonblocking_read(out, err) == 0 && ks_pipe_nonblocking_read(errp, err) == 0)
    return 0;
  ks__close_pipes(out, errp);
  return -1;
}

static void ks__close_pipes(int out[2], int errp[2]) {
  for (int i = 0; i < 2; i++) {
    ks_close_keep_errno(out[i]);
    ks_close_keep_errno(errp[i]);
    out[i] = errp[i] = -1;
  }
}

static void ks__cell_on_output(void *ctx, struct ks_watch *w, uint32_t events, uint64_t now);

/* The supervisor's watches on a cell's read ends, once the cell is its. */
static void ks__cell_watch(struct ks_sup *sup, struct ks_cell *cell) {
  for (int s = 0; s < 2; s++) {
    cell->watch[s].fn = ks__cell_on_output;
    cell->watch[s].owner = cell;
    (void) ks_loop_watch_add(&sup->loop, cell->fd[s], &cell->watch[s]);
  }
}

struct ks_cell *ks_cell_new(struct ks_cell_request *req, void *user) {
  struct ks_cell *cell = calloc(1, sizeof *cell);
  if (cell == NULL)
    return NULL;
  cell->req = *req;
  memset(req, 0, sizeof *req);
  cell->user = user;
  cell->cmd.kind = KS__CMD_CELL;
  cell->fd[0] = cell->fd[1] = -1;
  cell->pidfd = -1;
  cell->start_ns = ks_now_ns(); /* submitted now: a kernel's start counts from here */
  ks_outbuf_init(&cell->res.out[KS_STDOUT], cell->req.cap);
  ks_outbuf_init(&cell->res.out[KS_STDERR], cell->req.cap);
  ks_results_init(&cell->res.results, cell->req.cap);
  return cell;
}

int ks_sup_submit_cell(struct ks_sup *sup, struct ks_cell *cell) {
  return ks_loop_post(&sup->loop, &cell->cmd);
}

void *ks_cell_user(const struct ks_cell *cell) { return cell->user; }

struct ks_cell_result *ks_cell_result(struct ks_cell *cell) { return &cell->res; }

void ks_cell_request_free(struct ks_cell_request *req) {
  free(req->msg);
  memset(req, 0, sizeof *req);
}

void ks_cell_free(struct ks_cell *cell) {
  if (cell == NULL)
    return;
  for (int i = 0; i < 2; i++) {
    if (cell->fd[i] >= 0)
      ks_close_keep_errno(cell->fd[i]);
  }
  if (cell->pidfd >= 0)
    ks_close_keep_errno(cell->pidfd);
  ks_cell_request_free(&cell->req);
  ks_outbuf_free(&cell->res.out[KS_STDOUT]);
  ks_outbuf_free(&cell->res.out[KS_STDERR]);
  ks_results_free(&cell->res.results);
  free(cell);
}



static void ks__emit_cell_output(void *ctx, void *owner, int s, const char *data, size_t len) {
  struct ks_sup *sup = ctx;
  sup->hooks.on_cell_output(sup->ctx, owner, (enum ks_stream) s, data, len);
}

static void ks__cell_drain(struct ks_sup *sup, struct ks_cell *cell, enum ks_stream s) {
  (void) ks_loop_drain(&sup->loop, &cell->fd[s], &cell->res.out[s], cell->req.stream[s],
                       ks__emit_cell_output, cell, (int) s, 4u << 20);
}

/* A cell's pipe: watch[0] its stdout's, watch[1] its stderr's. */
static void ks__cell_on_output(void *ctx, struct ks_watch *w, uint32_t events, uint64_t now) {
  struct ks_cell *cell = w->owner;
  (void) events;
  (void) now;
  ks__cell_drain(ctx, cell, w == &cell->watch[KS_STDOUT] ? KS_STDOUT : KS_STDERR);
}

/* A finished cell's pipe still open: some process the cell started holds
 * its write end. Drained into nothing until that process lets go, so it
 * never blocks on a full pipe, and never reaches a later cell's output. */
static void ks__stray_on_event(void *ctx, struct ks_watch *w, uint32_t events, uint64_t now);

static void ks__stray_add(struct ks_sup *sup, struct ks__kernel *k, int *fd) {
  struct ks__stray *st = calloc(1, sizeof *st);
  if (st == NULL) {
    ks_loop_watch_close(&sup->loop, fd);
    return;
  }
  st->fd = *fd;
  *fd = -1;
  st->kernel = k;
  st->watch.fn = ks__stray_on_event;
  st->watch.owner = st;
  (void) ks_loop_watch_mod(&sup->loop, st->fd, &st->watch, EPOLLIN);
  st->next = k->strays;
  k->strays = st;
}

static void ks__stray_free(struct ks_sup *sup, struct ks__stray *st) {
  struct ks__stray **pp = &st->kernel->strays;
  while (*pp != NULL && *pp != st)
    pp = &(*pp)->next;
  if (*pp == st)
    *pp = st->next;
  ks_loop_watch_close(&sup->loop, &st->fd);
  free(st);
}

/* A stray's pipe: read into nothing; freed once its last writer is gone. */
static void ks__stray_on_event(void *ctx, struct ks_watch *w, uint32_t events, uint64_t now) {
  struct ks__stray *st = w->owner;
  (void) events;
  (void) now;
  if (ks_loop_discard(&((struct ks_sup *) ctx)->loop, st->fd))
    ks__stray_free(ctx, st);
}

/* A finished cell waits for the end of the batch (ks__cells_flush). */
static void ks__cell_done(struct ks_sup *sup, struct ks_cell *cell) {
  cell->next = sup->cells_done;
  sup->cells_done = cell;
}

void ks__cells_flush(struct ks_sup *sup) {
  /* In the order they finished. */
  struct ks_cell *list = NULL;
  while (sup->cells_done != NULL) {
    struct ks_cell *c = sup->cells_done;
    sup->cells_done = c->next;
    c->next = list;
    list = c;
  }
  while (list != NULL) {
    struct ks_cell *c = list;
    list = c->next;
    c->next = NULL;
    sup->hooks.on_cell_done(sup->ctx, c);
  }
}

/* The current cell is finished: what its pipes hold was written before
 * the message that ended it (a write returns once its bytes are in the
 * pipe), so one drain to EAGAIN takes all of the cell's output. */
void ks__cell_finish(struct ks_sup *sup, struct ks_box *box, struct ks_cell *cell,
                     enum ks_cell_end how, uint64_t now) {
  struct ks__kernel *k = box->kern->kernel;

  cell->res.how = how;
  for (int s = 0; s < 2; s++) {
    ks__cell_drain(sup, cell, (enum ks_stream) s);
    if (cell->fd[s] >= 0)
      ks__stray_add(sup, k, &cell->fd[s]);
  }
  if (cell->pidfd >= 0) {
    ks_close_keep_errno(cell->pidfd);
    cell->pidfd = -1;
  }
  if (cell->sent)
    cell->res.duration_ns = now - cell->start_ns;
  if (k->current == cell)
    k->current = NULL;
  cell->box = NULL;
  ks__cell_done(sup, cell);
}

/* Aborted while it waited: never sent, the kernel untouched. */
static void ks__cell_skip(struct ks_sup *sup, struct ks_cell *cell) {
  cell->res.how = KS_CELL_SKIPPED;
  cell->res.cancelled = true;
  cell->box = NULL;
  ks__cell_done(sup, cell);
}

static void ks__cell_fail(struct ks_sup *sup, struct ks_cell *cell, const char *why) {
  cell->res.how = KS_CELL_DEAD;
  cell->res.why = why;
  cell->box = NULL;
  ks__cell_done(sup, cell);
}

/* The kernel is over: the host ends it (protocol broken, an interrupt
 * ignored past its grace) by killing its box; its cells end as the box's
 * end is handled. */
static void ks__sendable_remove(struct ks_sup *sup, uint64_t key);

void ks__kernel_kill(struct ks_sup *sup, struct ks_box *box, const char *why, uint64_t now) {
  ks__sendable_remove(sup, box->req.kernel_key);
  if (box->kern->kernel != NULL && box->kern->kernel->dead_why == NULL)
    box->kern->kernel->dead_why = why;
  if (ks__box_alive(box))
    sup->box_hooks.kill(sup, box, now);
}

/* ---- kernels the submitting thread may send to --------------------------- */

/* Under kernels_lock: the entry of key, or NULL. */
static struct ks__sendable **ks__sendable_find(struct ks_sup *sup, uint64_t key) {
  struct ks__sendable **pp = &sup->sendable;
  while (*pp != NULL && (*pp)->key != key)
    pp = &(*pp)->next;
  return pp;
}

/* The kernel is READY: cells may go from the submitting thread, on a copy
 * of its socket (ours stays the supervisor's, closed with the box). */
void ks__sendable_add(struct ks_sup *sup, struct ks_box *box) {
  struct ks__sendable *e = calloc(1, sizeof *e);
  if (e == NULL)
    return; /* cells go through the supervisor, as before READY */
  e->key = box->req.kernel_key;
  e->fd = fcntl(box->kern->ip, F_DUPFD_CLOEXEC, 3);
  if (e->fd < 0) {
    free(e);
    return;
  }
  pthread_mutex_lock(&sup->kernels_lock);
  e->next = sup->sendable;
  sup->sendable = e;
  pthread_mutex_unlock(&sup->kernels_lock);
}

static void ks__sendable_remove(struct ks_sup *sup, uint64_t key) {
  struct ks__sendable *e = NULL;
  struct ks__sendable **pp;
  pthread_mutex_lock(&sup->kernels_lock);
  pp = ks__sendable_find(sup, key);
  if (*pp != NULL) {
    e = *pp;
    *pp = e->next;
  }
  pthread_mutex_unlock(&sup->kernels_lock);
  if (e != NULL) {
    ks_close_keep_errno(e->fd);
    free(e);
  }
}

/* On the submitting thread; see supervisor.h. The lock is held from the
 * queueing to the end of the send: the supervisor takes such a cell only
 * once it can take the lock, so it never sees one half sent. It is woken
 * only after the unlock: woken before, it would wake only to sleep on the
 * lock, and wake again, while the kernel starts on the cell (three threads
 * on this host's two CPUs). */
int ks_sup_send_cell(struct ks_sup *sup, struct ks_cell *cell) {
  struct ks__sendable *e;
  struct ks_err err;
  int out[2] = {-1, -1};
  int errp[2] = {-1, -1};
  union ks__fd_control control;
  struct iovec iov = {.iov_base = cell->req.msg, .iov_len = cell->req.msg_len};
  struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
  int fds[2];
  ssize_t n;
  int r;

  if (cell->req.type != KS_IP_CELL || cell->req.msg_len == 0 ||
      ks_ip_record_size(cell->req.msg) != cell->req.msg_len)
    return 0; /* more than one record: the supervisor sends it, awaiting room */
  pthread_mutex_lock(&sup->kernels_lock);
  e = *ks__sendable_find(sup, cell->req.kernel);
  if (e == NULL || ks__cell_pipes(out, errp, &err) < 0) {
    pthread_mutex_unlock(&sup->kernels_lock);
    return 0;
  }
  cell->fd[KS_STDOUT] = out[0];
  cell->fd[KS_STDERR] = errp[0];
  cell->present = true;
  cell->start_ns = ks_now_ns();
  r = ks_loop_queue(&sup->loop, &cell->cmd);
  if (r < 0) {
    cell->fd[0] = cell->fd[1] = -1;
    cell->present = false;
    pthread_mutex_unlock(&sup->kernels_lock);
    ks__close_pipes(out, errp);
    return r;
  }
  /* From here the cell is the supervisor's; it touches it once we unlock. */
  fds[0] = out[1];
  fds[1] = errp[1];
  ks__attach_fds(&msg, &control, fds, 2);
  do
    n = sendmsg(e->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
  while (n < 0 && errno == EINTR);
  if (n < 0) {
    /* No room (never while the kernel waits for a cell), or another failure
     * (ENOBUFS, ENOMEM; or the kernel is gone): the supervisor sends it,
     * with pipes of its own making, and finds a dead kernel's socket at its
     * end as for any cell. */
    ks_close_keep_errno(cell->fd[0]);
    ks_close_keep_errno(cell->fd[1]);
    cell->fd[0] = cell->fd[1] = -1;
    cell->present = false;
  }
  ks_close_keep_errno(out[1]);
  ks_close_keep_errno(errp[1]);
  pthread_mutex_unlock(&sup->kernels_lock);
  ks_loop_wake(&sup->loop);
  return 1;
}


/* ---- a kernel's cells -------------------------------------------------------- */

/* Sends the next cell if the kernel is free for it. */
void ks__kernel_pump(struct ks_sup *sup, struct ks_box *box, uint64_t now) {
  struct ks__kernel *k = box->kern->kernel;
  struct ks_cell *cell;
  struct ks_err err;
  int out[2] = {-1, -1};
  int errp[2] = {-1, -1};
  int fds[2] = {-1, -1};

  if (k == NULL || k->current != NULL || k->queue == NULL || box->kern->ip < 0 ||
      !ks__box_runs(box))
    return;
  cell = k->queue;
  if (cell->req.type != KS_IP_KERNEL && !k->ready)
    return; /* cells wait for READY */
  k->queue = cell->next;
  if (k->queue == NULL)
    k->queue_tail = NULL;
  cell->next = NULL;
  if (ks_keys_has(&sup->keys, cell->req.call, 0, 0)) {
    ks__cell_skip(sup, cell);
    ks__kernel_pump(sup, box, now);
    return;
  }
  k->current = cell;
  cell->start_ns = now;
  if (cell->req.type != KS_IP_KERNEL || cell->deadline_ns == 0) /* a start's: from its submission */
    cell->deadline_ns = now + cell->req.timeout_ns;
  box->kern->ipr.max = cell->req.cap;
  if (cell->req.type == KS_IP_CELL) {
    if (ks__cell_pipes(out, errp, &err) < 0) {
      k->current = NULL;
      ks__cell_fail(sup, cell, "the host could not make the cell's pipes (out of descriptors)");
      ks__kernel_pump(sup, box, now);
      return;
    }
    cell->fd[KS_STDOUT] = out[0];
    cell->fd[KS_STDERR] = errp[0];
    ks__cell_watch(sup, cell);
    fds[0] = out[1];
    fds[1] = errp[1];
  }
  cell->sent = true;
  ks__ip_send_new(sup, box, cell->req.msg, cell->req.msg_len, fds,
                  cell->req.type == KS_IP_CELL ? 2 : 0);
  cell->req.msg = NULL;
}

/* A live, ready kernel box of this key, or NULL. */
static struct ks_box *ks__kernel_box(struct ks_sup *sup, uint64_t key) {
  for (struct ks_box *box = sup->live; box != NULL; box = box->next) {
    if (box->req.kernel_key == key && box->kern->kernel != NULL && ks__box_alive(box))
      return box;
  }
  return NULL;
}

struct ks_cell *ks__cells_take_present(struct ks_sup *sup, struct ks_cell *cells) {
  struct ks_cell *rest = NULL;
  struct ks_cell **tail = &rest;
  bool synced = false;

  while (cells != NULL) {
    struct ks_cell *cell = cells;
    struct ks_box *box;
    cells = cell->next;
    cell->next = NULL;
    if (!synced) {
      /* The sender holds the lock until its send is done. */
      pthread_mutex_lock(&sup->kernels_lock);
      pthread_mutex_unlock(&sup->kernels_lock);
      synced = true;
    }
    if (!cell->present) {
      *tail = cell;
      tail = &cell->next;
      continue;
    }
    box = ks__kernel_box(sup, cell->req.kernel);
    if (box == NULL || box->kern->kernel->current != NULL || box->kern->ip < 0) {
      /* Gone meanwhile (or, never when the caller kept its word, a cell
       * under way): it ends as a cell of a dead kernel does. */
      ks__cell_fail(sup, cell, box == NULL ? "the kernel is gone"
                                           : "a cell was sent while another ran");
      continue;
    }
    cell->box = box;
    cell->sent = true;
    cell->deadline_ns = cell->start_ns + cell->req.timeout_ns;
    box->kern->kernel->current = cell;
    box->kern->ipr.max = cell->req.cap;
    ks__cell_watch(sup, cell);
  }
  return rest;
}

void ks__cells_take(struct ks_sup *sup, struct ks_cell *cells, uint64_t now) {
  while (cells != NULL) {
    struct ks_cell *cell = cells;
    struct ks_box *box = ks__kernel_box(sup, cell->req.kernel);
    cells = cell->next;
    cell->next = NULL;
    if (box == NULL) {
      cell->res.how = KS_CELL_NO_KERNEL;
      ks__cell_done(sup, cell);
      continue;
    }
    cell->box = box;
    /* A kernel's start counts from its submission, not from its sending:
     * it waits for the box's interpreter, and a box whose interpreter
     * never comes (a kern stuck in its setup) must not keep kernel()
     * waiting for the kernel's 24-hour backstop. */
    if (cell->req.type == KS_IP_KERNEL)
      cell->deadline_ns = cell->start_ns + cell->req.timeout_ns;
    if (box->kern->kernel->queue_tail != NULL)
      box->kern->kernel->queue_tail->next = cell;
    else
      box->kern->kernel->queue = cell;
    box->kern->kernel->queue_tail = cell;
    ks__kernel_pump(sup, box, now);
  }
}

/* SIGINT to a shared kernel; one that cannot be signalled goes. */
static void ks__kernel_interrupt(struct ks_sup *sup, struct ks_box *box, uint64_t now) {
  if (ks__pidfd_signal(box->kern->kernel->pidfd, SIGINT) < 0)
    ks__kernel_kill(sup, box, "the kernel could not be interrupted", now);
}

/* The current cell's deadline or abort: interrupted in a shared kernel
 * (KeyboardInterrupt in the cell; the state survives), killed in a fork
 * kernel (its parent holds the state). The start of a kernel or a
 * rollback cannot be interrupted: the kernel goes. */
static void ks__cell_stop(struct ks_sup *sup, struct ks_box *box, struct ks_cell *cell,
                          uint64_t now) {
  struct ks__kernel *k = box->kern->kernel;
  cell->stopping = true;
  cell->grace_ns = now + KS__CELL_GRACE_NS;
  cell->again_ns = now + KS__CELL_AGAIN_NS;
  if (cell->req.type != KS_IP_CELL) {
    ks__kernel_kill(sup, box,
                    cell->req.type == KS_IP_KERNEL ? "the kernel did not start in time"
                                                   : "the rollback did not finish in time",
                    now);
    return;
  }
  if (k->mode == KS_IP_FORK)
    (void) ks__pidfd_signal(cell->pidfd, SIGKILL); /* or once FORKED names it */
  else
    ks__kernel_interrupt(sup, box, now);
}

/* A kernel's start still queued: its box's interpreter has not attached,
 * so the start is not yet the current cell (once sent it is, with the same
 * deadline). NULL when there is none. The sweep and the kernel's timer
 * both ask this, so they cannot disagree about which cells have a clock. */
static struct ks_cell *ks__queued_start(const struct ks__kernel *k) {
  struct ks_cell *q = k->queue;
  return k->current == NULL && q != NULL && q->req.type == KS_IP_KERNEL ? q : NULL;
}

/* When the kernel's cells need the clock next (UINT64_MAX: not at all):
 * a queued start's deadline, or the current sent cell's deadline, or its
 * grace once it is being stopped. */
static uint64_t ks__kernel_next(const struct ks__kernel *k) {
  struct ks_cell *cell = k->current != NULL ? k->current : ks__queued_start(k);
  if (cell == NULL || (cell == k->current && !cell->sent))
    return UINT64_MAX;
  if (!cell->stopping)
    return cell->deadline_ns;
  return k->mode == KS_IP_FORK || cell->again_ns > cell->grace_ns ? cell->grace_ns : cell->again_ns;
}

/* Arms the kernel's timer for what its cells need next; a box that is no
 * longer alive has no clock for its cells. */
static void ks__kernel_clock(struct ks_sup *sup, struct ks_box *box) {
  struct ks__kernel *k = box->kern->kernel;
  ks_loop_timer_arm(&sup->loop, &k->timer, ks__box_alive(box) ? ks__kernel_next(k) : UINT64_MAX);
}

/* One kernel's aborted queued cells, its start's deadline, its current
 * cell's deadline, abort or grace. */
static void ks__kernel_sweep(struct ks_sup *sup, struct ks_box *box, uint64_t now) {
  struct ks__kernel *k = box->kern->kernel;
  struct ks_cell *cell, *start;

  /* Queued cells whose call was aborted end now, never run. */
  for (struct ks_cell **pp = &k->queue; *pp != NULL;) {
    struct ks_cell *q = *pp;
    if (ks_keys_has(&sup->keys, q->req.call, 0, 0)) {
      *pp = q->next;
      if (k->queue_tail == q) {
        k->queue_tail = NULL;
        for (struct ks_cell *t = k->queue; t != NULL; t = t->next)
          k->queue_tail = t;
      }
      q->next = NULL;
      ks__cell_skip(sup, q);
    } else {
      pp = &q->next;
    }
  }
  start = ks__queued_start(k);
  if (start != NULL && now >= start->deadline_ns) {
    start->res.timed_out = true; /* as a start that was sent says */
    ks__kernel_kill(sup, box, "the kernel did not start in time", now);
    return;
  }
  cell = k->current;
  if (cell == NULL || !cell->sent)
    return;
  if (!cell->stopping) {
    bool cancelled = ks_keys_has(&sup->keys, cell->req.call, 0, 0);
    if (cancelled || now >= cell->deadline_ns) {
      if (cancelled)
        cell->res.cancelled = true;
      else
        cell->res.timed_out = true;
      ks__cell_stop(sup, box, cell, now);
    }
  } else if (now >= cell->grace_ns) {
    ks__kernel_kill(sup, box,
                    k->mode == KS_IP_FORK
                        ? "the kernel did not report the end of its killed cell within 1 s"
                        : "the cell ignored the interrupt for 1 s, so the kernel was killed",
                    now);
  } else if (k->mode != KS_IP_FORK && now >= cell->again_ns) {
    cell->again_ns = now + KS__CELL_AGAIN_NS;
    ks__kernel_interrupt(sup, box, now);
  }
}

void ks__kernel_due(void *ctx, struct ks_timer *t, uint64_t now) {
  struct ks_sup *sup = ctx;
  struct ks__kern *kern = t->owner;
  struct ks_box *box = kern->box;

  if (!ks__box_alive(box))
    return;
  ks__kernel_sweep(sup, box, now);
  ks__kernel_clock(sup, box);
  ks__cells_flush(sup);
}

void ks__cells_sweep(struct ks_sup *sup, uint64_t now) {
  ks__cells_flush(sup);
  for (struct ks_box *box = sup->live; box != NULL; box = box->next) {
    if (box->kern->kernel == NULL)
      continue;
    if (ks__box_alive(box))
      ks__kernel_sweep(sup, box, now);
    /* Whatever moved the cells since the last turn (a DONE, a cell sent,
     * a stop) moved the clock: armed again here, once per turn. */
    ks__kernel_clock(sup, box);
  }
  ks__cells_flush(sup); /* the ones the deadlines and aborts ended */
}

void ks__ip_box_end(struct ks_sup *sup, struct ks_box *box, const char *why) {
  struct ks__kernel *k = box->kern->kernel;
  uint64_t now = ks_now_ns();

  ks_loop_watch_close(&sup->loop, &box->kern->ip);
  ks__ip_out_clear(&box->kern->ip_out);
  if (k == NULL)
    return;
  ks_loop_timer_disarm(&sup->loop, &k->timer); /* its cells end here */
  ks__sendable_remove(sup, box->req.kernel_key);
  if (k->dead_why != NULL)
    why = k->dead_why;
  if (k->current != NULL) {
    struct ks_cell *cell = k->current;
    cell->res.why = why;
    ks__cell_finish(sup, box, cell, KS_CELL_DEAD, now);
  }
  while (k->queue != NULL) {
    struct ks_cell *cell = k->queue;
    k->queue = cell->next;
    cell->next = NULL;
    ks__cell_fail(sup, cell, why);
  }
  k->queue_tail = NULL;
  while (k->strays != NULL)
    ks__stray_free(sup, k->strays);
  if (k->pidfd >= 0)
    ks_close_keep_errno(k->pidfd);
  k->pidfd = -1;
  k->ready = false;
}

void ks__cells_cancel(struct ks_sup *sup, struct ks_cell *cells) {
  while (cells != NULL) {
    struct ks_cell *next = cells->next;
    cells->next = NULL;
    ks__cell_fail(sup, cells, "the engine is shutting down");
    cells = next;
  }
}
