/* The host's side of a box's interpreter (interp.h), on the supervisor
 * thread: the socket the init hands over (ATTACH), the message that starts
 * a one-shot call (RUN) and the rich results it sends back, and a kernel's
 * cells: each with stdout and stderr pipes of its own, a deadline that
 * interrupts (shared mode) or kills (fork mode) only the cell, and a grace
 * past which the kernel itself goes.
 *
 * Everything the interpreter sends is untrusted (the code it runs shares its
 * memory and descriptors): a record that breaks the protocol ends the
 * kernel, never this thread; a message for a cell that is not the current
 * one is ignored. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sup-internal.h"
#include "../util.h"

#define KS__CELL_GRACE_NS (1000 * KS__MS) /* an ignored interrupt: then the kernel goes */
#define KS__IP_MAX_FDS 4

/* ---- results ----------------------------------------------------------- */

void ks_results_init(struct ks_results *r, size_t max) {
  memset(r, 0, sizeof *r);
  r->max = max;
}

void ks_results_free(struct ks_results *r) {
  for (size_t i = 0; i < r->n; i++)
    free(r->items[i]);
  free(r->items);
  free(r->lens);
  ks_results_init(r, r->max);
}

/* Keeps a copy of one result, if it fits what is left of the budget. */
static void ks__results_add(struct ks_results *r, const unsigned char *body, size_t len) {
  char *copy;
  if (len > r->max - r->bytes) {
    r->dropped = true; /* dropped whole, never cut */
    return;
  }
  if (r->n == r->cap) {
    size_t cap = r->cap ? r->cap * 2 : 4;
    char **items = realloc(r->items, cap * sizeof *items);
    size_t *lens;
    if (items == NULL) {
      r->dropped = true;
      return;
    }
    r->items = items;
    lens = realloc(r->lens, cap * sizeof *lens);
    if (lens == NULL) {
      r->dropped = true;
      return;
    }
    r->lens = lens;
    r->cap = cap;
  }
  copy = malloc(len ? len : 1);
  if (copy == NULL) {
    r->dropped = true;
    return;
  }
  memcpy(copy, body, len);
  r->items[r->n] = copy;
  r->lens[r->n] = len;
  r->n++;
  r->bytes += len;
}

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

/* The supervisor's watches on a cell's read ends, once the cell is its. */
static void ks__cell_watch(struct ks_sup *sup, struct ks_cell *cell) {
  for (int s = 0; s < 2; s++) {
    cell->watch[s].kind = s == KS_STDOUT ? KS__W_CELL_OUT : KS__W_CELL_ERR;
    cell->watch[s].owner = cell;
    (void) ks__watch_add(sup, cell->fd[s], &cell->watch[s]);
  }
}

/* Room for the two descriptors a message may carry (a cell's pipes). */
union ks__fd_control {
  struct cmsghdr align;
  char buf[CMSG_SPACE(2 * sizeof(int))];
};

/* Puts nfds (1 or 2) descriptors on msg, as SCM_RIGHTS in control. */
static void ks__attach_fds(struct msghdr *msg, union ks__fd_control *control, const int *fds,
                           int nfds) {
  struct cmsghdr *c;
  memset(control, 0, sizeof *control);
  msg->msg_control = control->buf;
  msg->msg_controllen = CMSG_SPACE((size_t) nfds * sizeof(int));
  c = CMSG_FIRSTHDR(msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN((size_t) nfds * sizeof(int));
  memcpy(CMSG_DATA(c), fds, (size_t) nfds * sizeof(int));
}

struct ks_cell *ks_cell_new(struct ks_cell_request *req, void *user) {
  struct ks_cell *cell = calloc(1, sizeof *cell);
  if (cell == NULL)
    return NULL;
  cell->req = *req;
  memset(req, 0, sizeof *req);
  cell->user = user;
  cell->fd[0] = cell->fd[1] = -1;
  cell->pidfd = -1;
  cell->start_ns = ks__now_ns(); /* submitted now: a kernel's start counts from here */
  ks_outbuf_init(&cell->res.out[KS_STDOUT], cell->req.cap);
  ks_outbuf_init(&cell->res.out[KS_STDERR], cell->req.cap);
  ks_results_init(&cell->res.results, cell->req.cap);
  return cell;
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

static int ks__pidfd_signal(int pidfd, int sig) {
  if (pidfd < 0)
    return -EBADF;
  return syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0) < 0 ? -errno : 0;
}

static void ks__emit_cell_output(struct ks_sup *sup, void *owner, enum ks_stream s,
                                 const char *data, size_t len) {
  sup->hooks.on_cell_output(sup->ctx, owner, s, data, len);
}

static void ks__cell_drain(struct ks_sup *sup, struct ks_cell *cell, enum ks_stream s) {
  (void) ks__drain_fd(sup, &cell->fd[s], &cell->res.out[s], cell->req.stream[s],
                      ks__emit_cell_output, cell, s, 4u << 20);
}

void ks__cell_on_output(struct ks_sup *sup, struct ks__watch *w) {
  struct ks_cell *cell = w->owner;
  ks__cell_drain(sup, cell, w->kind == KS__W_CELL_OUT ? KS_STDOUT : KS_STDERR);
}

/* A finished cell's pipe still open: some process the cell started holds
 * its write end. Drained into nothing until that process lets go, so it
 * never blocks on a full pipe, and never reaches a later cell's output. */
static void ks__stray_add(struct ks_sup *sup, struct ks__kernel *k, int *fd) {
  struct ks__stray *st = calloc(1, sizeof *st);
  if (st == NULL) {
    ks__watch_close(sup, fd);
    return;
  }
  st->fd = *fd;
  *fd = -1;
  st->kernel = k;
  st->watch.kind = KS__W_STRAY;
  st->watch.owner = st;
  (void) ks__watch_mod(sup, st->fd, &st->watch, EPOLLIN);
  st->next = k->strays;
  k->strays = st;
}

static void ks__stray_free(struct ks_sup *sup, struct ks__stray *st) {
  struct ks__stray **pp = &st->kernel->strays;
  while (*pp != NULL && *pp != st)
    pp = &(*pp)->next;
  if (*pp == st)
    *pp = st->next;
  ks__watch_close(sup, &st->fd);
  free(st);
}

void ks__stray_drain(struct ks_sup *sup, struct ks__watch *w) {
  struct ks__stray *st = w->owner;
  for (;;) {
    ssize_t n = read(st->fd, sup->scratch, sizeof sup->scratch);
    if (n > 0 || (n < 0 && errno == EINTR))
      continue;
    if (n < 0 && errno == EAGAIN)
      return;
    ks__stray_free(sup, st); /* its last writer is gone */
    return;
  }
}

static void ks__kernel_pump(struct ks_sup *sup, struct ks_box *box, uint64_t now);

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
static void ks__cell_finish(struct ks_sup *sup, struct ks_box *box, struct ks_cell *cell,
                            enum ks_cell_end how, uint64_t now) {
  struct ks__kernel *k = box->kernel;

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

static void ks__kernel_kill(struct ks_sup *sup, struct ks_box *box, const char *why,
                            uint64_t now) {
  ks__sendable_remove(sup, box->req.kernel_key);
  if (box->kernel != NULL && box->kernel->dead_why == NULL)
    box->kernel->dead_why = why;
  if (ks__box_alive(box))
    ks__kill_box(sup, box, now, false);
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
static void ks__sendable_add(struct ks_sup *sup, struct ks_box *box) {
  struct ks__sendable *e = calloc(1, sizeof *e);
  if (e == NULL)
    return; /* cells go through the supervisor, as before READY */
  e->key = box->req.kernel_key;
  e->fd = fcntl(box->ip, F_DUPFD_CLOEXEC, 3);
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
  cell->start_ns = ks__now_ns();
  r = ks__queue_cell(sup, cell);
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
  ks__wake(sup);
  return 1;
}

/* ---- the socket ---------------------------------------------------------- */

void ks__ip_box_init(struct ks_box *box) {
  box->ip = -1;
  box->ip_out.fds[0] = box->ip_out.fds[1] = -1;
  ks_ip_reader_init(&box->ipr, box->req.result_max);
  if (box->req.kernel_key != 0) {
    box->kernel = calloc(1, sizeof *box->kernel);
    if (box->kernel != NULL)
      box->kernel->pidfd = -1;
  }
}

static void ks__ip_out_clear(struct ks__ip_out *o) {
  free(o->data);
  o->data = NULL;
  o->len = o->off = 0;
  for (int i = 0; i < o->nfds; i++) {
    if (o->fds[i] >= 0)
      ks_close_keep_errno(o->fds[i]);
    o->fds[i] = -1;
  }
  o->nfds = 0;
}

void ks__ip_box_free(struct ks_box *box) {
  if (box->ip >= 0)
    ks_close_keep_errno(box->ip);
  box->ip = -1;
  ks__ip_out_clear(&box->ip_out);
  ks_ip_reader_free(&box->ipr);
  /* Cells and strays were ended with the box (ks__ip_box_end). */
  free(box->kernel);
  box->kernel = NULL;
}

/* Sends what is left of the outgoing message, a record per send(); on a
 * full socket, EPOLLOUT carries on from there. */
static void ks__ip_send(struct ks_sup *sup, struct ks_box *box) {
  struct ks__ip_out *o = &box->ip_out;

  while (box->ip >= 0 && o->data != NULL && o->off < o->len) {
    size_t rec = ks_ip_record_size(o->data + o->off);
    struct iovec iov = {.iov_base = o->data + o->off, .iov_len = rec};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
    union ks__fd_control control;
    ssize_t n;

    if (o->off == 0 && o->nfds > 0)
      ks__attach_fds(&msg, &control, o->fds, o->nfds);
    n = sendmsg(box->ip, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n >= 0) {
      if (o->off == 0) {
        /* The box has its copies now; ours must go, or the cell's pipes
         * would never see EOF. */
        for (int i = 0; i < o->nfds; i++) {
          ks_close_keep_errno(o->fds[i]);
          o->fds[i] = -1;
        }
        o->nfds = 0;
      }
      o->off += rec;
      continue;
    }
    if (errno == EINTR)
      continue;
    if (errno == EAGAIN) {
      if (!box->ip_out_watched)
        (void) ks__watch_mod(sup, box->ip, &box->ip_watch, EPOLLIN | EPOLLOUT);
      box->ip_out_watched = true;
      return;
    }
    break; /* the interpreter is gone: its EOF tells the rest */
  }
  if (box->ip_out_watched && box->ip >= 0)
    (void) ks__watch_mod(sup, box->ip, &box->ip_watch, EPOLLIN);
  box->ip_out_watched = false;
  ks__ip_out_clear(o);
}

/* Starts sending data (owned) with fds on its first record. */
static void ks__ip_send_new(struct ks_sup *sup, struct ks_box *box, char *data, size_t len,
                            const int *fds, int nfds) {
  ks__ip_out_clear(&box->ip_out);
  box->ip_out.data = data;
  box->ip_out.len = len;
  for (int i = 0; i < nfds; i++)
    box->ip_out.fds[i] = fds[i];
  box->ip_out.nfds = nfds;
  ks__ip_send(sup, box);
}

/* A one-shot box's RUN goes once the box is attached; a prewarm box's
 * comes with the call that claims it, in the claimer's box. */
static void ks__ip_start_run(struct ks_sup *sup, struct ks_box *box) {
  char *msg = box->req.ip_msg;
  if (box->ip < 0 || ks__box_prewarm(box) || msg == NULL)
    return;
  box->req.ip_msg = NULL;
  ks__ip_send_new(sup, box, msg, box->req.ip_msg_len, NULL, 0);
}

void ks__ip_attach(struct ks_sup *sup, struct ks_box *box, int fd) {
  if (box->ip >= 0 || fcntl(fd, F_SETFL, O_NONBLOCK) < 0) {
    ks_close_keep_errno(fd);
    return;
  }
  box->ip = fd;
  box->ip_watch.kind = KS__W_IP;
  box->ip_watch.owner = box;
  if (ks__watch_add(sup, box->ip, &box->ip_watch) < 0) {
    ks_close_keep_errno(box->ip);
    box->ip = -1;
    return;
  }
  ks__ip_start_run(sup, box);
  if (box->kernel != NULL && !ks__box_prewarm(box))
    ks__kernel_pump(sup, box, ks__now_ns());
}

void ks__ip_adopt(struct ks_sup *sup, struct ks_box *box, struct ks_box *parked) {
  box->ip = parked->ip;
  parked->ip = -1;
  if (box->ip >= 0) {
    box->ip_watch.kind = KS__W_IP;
    box->ip_watch.owner = box;
    (void) ks__watch_mod(sup, box->ip, &box->ip_watch, EPOLLIN);
  }
  ks__ip_start_run(sup, box);
  if (box->kernel != NULL)
    ks__kernel_pump(sup, box, ks__now_ns());
}

/* ---- messages from the box ----------------------------------------------- */

/* Closes a message's descriptors; with keep, the first goes to *keep
 * instead (closing what that held). Either way none are left in fds. */
static void ks__ip_fds(int *fds, int *nfds, int *keep) {
  for (int i = 0; i < *nfds; i++) {
    if (i == 0 && keep != NULL) {
      if (*keep >= 0)
        ks_close_keep_errno(*keep);
      *keep = fds[0];
    } else {
      ks_close_keep_errno(fds[i]);
    }
  }
  *nfds = 0;
}

/* One whole message of a kernel box. */
static void ks__kernel_message(struct ks_sup *sup, struct ks_box *box, const struct ks_ip_msg *m,
                               int *fds, int *nfds, uint64_t now) {
  struct ks__kernel *k = box->kernel;
  struct ks_cell *cell = k->current;
  bool mine = cell != NULL && cell->sent && m->id == cell->req.id;

  switch (m->type) {
  case KS_IP_RESULT:
    if (mine && cell->req.type == KS_IP_CELL)
      ks__results_add(&cell->res.results, m->body, m->len);
    break;
  case KS_IP_DONE:
    if (mine && cell->req.type == KS_IP_CELL) {
      memcpy(&cell->res.done, m->body, sizeof cell->res.done);
      if (cell->res.done.flags & KS_IP_RESULTS_DROPPED)
        cell->res.results.dropped = true;
      ks__cell_finish(sup, box, cell, KS_CELL_DONE, now);
      ks__kernel_pump(sup, box, now);
    }
    break;
  case KS_IP_READY:
    if (cell != NULL && cell->sent && cell->req.type == KS_IP_KERNEL && !k->ready) {
      memcpy(&cell->res.ready, m->body, sizeof cell->res.ready);
      k->ready = true;
      k->mode = cell->res.ready.mode;
      ks__sendable_add(sup, box);
      if (k->mode == KS_IP_SHARED)
        ks__ip_fds(fds, nfds, &k->pidfd);
      ks__cell_finish(sup, box, cell, KS_CELL_READY, now);
      ks__kernel_pump(sup, box, now);
    }
    break;
  case KS_IP_FORKED:
    if (mine && cell->req.type == KS_IP_CELL) {
      ks__ip_fds(fds, nfds, &cell->pidfd);
      if (cell->stopping)
        (void) ks__pidfd_signal(cell->pidfd, SIGKILL); /* its deadline came first */
    }
    break;
  case KS_IP_ENDED:
    /* A cell's process died (its parent says so), or a rollback's target
     * state took over. Anything else (a state that died while idle) only
     * moves the kernel back to an older state, which the next DONE says. */
    if ((mine && cell->req.type == KS_IP_CELL) ||
        (cell != NULL && cell->sent && cell->req.type == KS_IP_ROLLBACK)) {
      memcpy(&cell->res.ended, m->body, sizeof cell->res.ended);
      ks__cell_finish(sup, box, cell, KS_CELL_ENDED, now);
      ks__kernel_pump(sup, box, now);
    }
    break;
  default:
    break; /* TAKEN: not a kernel's */
  }
}

/* A RUN's final DONE (KS_IP_DONE_FINAL): the call settles at the sweep,
 * with DONE's account of the exit, and the interpreter's own teardown
 * (~1.2 ms of unmapping here) goes on off the call's path. The interpreter
 * is SIGKILLed first, through the pidfd the init took of it: whether the
 * DONE was honest (the process is on its way out) or forged by the code (it
 * would run on), nothing of it runs once the call has settled, and the init
 * kills whatever else is left, as after any exit. Without that pidfd, or
 * with a cap byte still to learn, the init's report settles the call. */
static void ks__ip_final_done(struct ks_box *box, const struct ks_ip_done *done) {
  int r;

  if (box->state != KS_BOX_RUNNING || box->res.reported || box->final_done ||
      box->req.early_cap < 0 || box->workload_pidfd < 0 || done->end == KS_IP_INTERRUPTED ||
      done->value < 0 || done->value > 255)
    return;
  r = ks__pidfd_signal(box->workload_pidfd, SIGKILL);
  if (r < 0 && r != -ESRCH) /* ESRCH: it has exited already */
    return;
  memset(&box->final_rep, 0, sizeof box->final_rep);
  box->final_rep.end = KS_INIT_EXITED;
  box->final_rep.value = done->value;
  box->final_rep.utime_us = done->utime_us;
  box->final_rep.stime_us = done->stime_us;
  box->final_rep.maxrss_kb = done->maxrss_kb;
  box->final_done = true;
  box->res.reported = true;
  box->res.report_end = KS_INIT_EXITED;
  box->res.report_value = done->value;
  ks__box_to(box, KS_BOX_SETTLING);
}

/* One whole message of a one-shot box (RUN). */
static void ks__run_message(struct ks_box *box, const struct ks_ip_msg *m) {
  struct ks_ip_done done;
  switch (m->type) {
  case KS_IP_TAKEN:
    box->res.taken = true;
    break;
  case KS_IP_RESULT:
    ks__results_add(&box->res.results, m->body, m->len);
    break;
  case KS_IP_DONE:
    memcpy(&done, m->body, sizeof done);
    if (done.flags & KS_IP_RESULTS_DROPPED)
      box->res.results.dropped = true;
    if (done.flags & KS_IP_DONE_FINAL)
      ks__ip_final_done(box, &done);
    break;
  default:
    break;
  }
}

/* The descriptors of one received record, into fds (at most max). */
static int ks__recv_fds(struct msghdr *msg, int *fds, int max) {
  int n = 0;
  for (struct cmsghdr *c = CMSG_FIRSTHDR(msg); c != NULL; c = CMSG_NXTHDR(msg, c)) {
    size_t k;
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
      continue;
    k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < k; i++) {
      int fd;
      memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      if (n < max)
        fds[n++] = fd;
      else
        ks_close_keep_errno(fd);
    }
  }
  return n;
}

/* The socket broke or closed: for a kernel, that is its death. */
static void ks__ip_lost(struct ks_sup *sup, struct ks_box *box, const char *why, uint64_t now) {
  ks__watch_close(sup, &box->ip);
  if (box->kernel != NULL)
    ks__kernel_kill(sup, box, why, now);
}

/* Every record the socket holds now. */
void ks__ip_drain(struct ks_sup *sup, struct ks_box *box, uint64_t now) {
  union {
    struct cmsghdr align;
    char buf[CMSG_SPACE(KS__IP_MAX_FDS * sizeof(int))];
  } control;

  while (box->ip >= 0) {
    struct iovec iov = {.iov_base = sup->scratch, .iov_len = sizeof sup->scratch};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
                         .msg_controllen = sizeof control.buf};
    int fds[KS__IP_MAX_FDS];
    int nfds;
    struct ks_ip_msg m;
    enum ks_ip_verdict v;
    ssize_t n = recvmsg(box->ip, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);

    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && errno == EAGAIN)
      return;
    if (n <= 0) {
      ks__ip_lost(sup, box, "the kernel's interpreter is gone", now);
      return;
    }
    nfds = ks__recv_fds(&msg, fds, KS__IP_MAX_FDS);
    if (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC))
      v = KS_IP_BAD;
    else
      v = ks_ip_feed(&box->ipr, sup->scratch, (size_t) n, &m);
    if (v == KS_IP_BAD) {
      ks__ip_fds(fds, &nfds, NULL);
      ks__ip_lost(sup, box, "the kernel broke the host's protocol", now);
      return;
    }
    if (v == KS_IP_DROPPED) {
      /* A result over the budget: dropped whole, and said so. */
      struct ks_cell *cell = box->kernel != NULL ? box->kernel->current : NULL;
      if (box->kernel == NULL)
        box->res.results.dropped = true;
      else if (cell != NULL && cell->sent && m.id == cell->req.id)
        cell->res.results.dropped = true;
    } else if (v == KS_IP_MESSAGE) {
      if (box->kernel != NULL)
        ks__kernel_message(sup, box, &m, fds, &nfds, now);
      else
        ks__run_message(box, &m);
    }
    ks__ip_fds(fds, &nfds, NULL); /* what no message kept */
    if (box->ip < 0)
      return;
  }
}

void ks__ip_on_event(struct ks_sup *sup, struct ks_box *box, uint32_t events, uint64_t now) {
  if ((events & EPOLLOUT) && box->ip_out.data != NULL)
    ks__ip_send(sup, box);
  ks__ip_drain(sup, box, now);
}

/* ---- a kernel's cells -------------------------------------------------------- */

/* Sends the next cell if the kernel is free for it. */
static void ks__kernel_pump(struct ks_sup *sup, struct ks_box *box, uint64_t now) {
  struct ks__kernel *k = box->kernel;
  struct ks_cell *cell;
  struct ks_err err;
  int out[2] = {-1, -1};
  int errp[2] = {-1, -1};
  int fds[2] = {-1, -1};

  if (k == NULL || k->current != NULL || k->queue == NULL || box->ip < 0 || !ks__box_runs(box))
    return;
  cell = k->queue;
  if (cell->req.type != KS_IP_KERNEL && !k->ready)
    return; /* cells wait for READY */
  k->queue = cell->next;
  if (k->queue == NULL)
    k->queue_tail = NULL;
  cell->next = NULL;
  if (ks__key_cancelled(sup, cell->req.call)) {
    ks__cell_skip(sup, cell);
    ks__kernel_pump(sup, box, now);
    return;
  }
  k->current = cell;
  cell->start_ns = now;
  if (cell->req.type != KS_IP_KERNEL || cell->deadline_ns == 0) /* a start's: from its submission */
    cell->deadline_ns = now + cell->req.timeout_ns;
  box->ipr.max = cell->req.cap;
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
    if (box->req.kernel_key == key && box->kernel != NULL && ks__box_alive(box))
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
    if (box == NULL || box->kernel->current != NULL || box->ip < 0) {
      /* Gone meanwhile (or, never when the caller kept its word, a cell
       * under way): it ends as a cell of a dead kernel does. */
      ks__cell_fail(sup, cell, box == NULL ? "the kernel is gone"
                                           : "a cell was sent while another ran");
      continue;
    }
    cell->box = box;
    cell->sent = true;
    cell->deadline_ns = cell->start_ns + cell->req.timeout_ns;
    box->kernel->current = cell;
    box->ipr.max = cell->req.cap;
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
    if (box->kernel->queue_tail != NULL)
      box->kernel->queue_tail->next = cell;
    else
      box->kernel->queue = cell;
    box->kernel->queue_tail = cell;
    ks__kernel_pump(sup, box, now);
  }
}

/* The current cell's deadline or abort: interrupted in a shared kernel
 * (KeyboardInterrupt in the cell; the state survives), killed in a fork
 * kernel (its parent holds the state). The start of a kernel or a
 * rollback cannot be interrupted: the kernel goes. */
static void ks__cell_stop(struct ks_sup *sup, struct ks_box *box, struct ks_cell *cell,
                          uint64_t now) {
  struct ks__kernel *k = box->kernel;
  cell->stopping = true;
  cell->grace_ns = now + KS__CELL_GRACE_NS;
  if (cell->req.type != KS_IP_CELL) {
    ks__kernel_kill(sup, box,
                    cell->req.type == KS_IP_KERNEL ? "the kernel did not start in time"
                                                   : "the rollback did not finish in time",
                    now);
    return;
  }
  if (k->mode == KS_IP_FORK)
    (void) ks__pidfd_signal(cell->pidfd, SIGKILL); /* or once FORKED names it */
  else if (ks__pidfd_signal(k->pidfd, SIGINT) < 0)
    ks__kernel_kill(sup, box, "the kernel could not be interrupted", now);
}

/* A kernel's start still queued: its box's interpreter has not attached,
 * so the start is not yet the current cell (once sent it is, with the same
 * deadline). NULL when there is none. The sweep and the next-deadline scan
 * both ask this, so they cannot disagree about which cells have a clock. */
static struct ks_cell *ks__queued_start(const struct ks__kernel *k) {
  struct ks_cell *q = k->queue;
  return k->current == NULL && q != NULL && q->req.type == KS_IP_KERNEL ? q : NULL;
}

void ks__cells_sweep(struct ks_sup *sup, uint64_t now) {
  ks__cells_flush(sup);
  for (struct ks_box *box = sup->live; box != NULL; box = box->next) {
    struct ks__kernel *k = box->kernel;
    struct ks_cell *cell, *start;
    if (k == NULL || !ks__box_alive(box))
      continue;
    /* Queued cells whose call was aborted end now, never run. */
    for (struct ks_cell **pp = &k->queue; *pp != NULL;) {
      struct ks_cell *q = *pp;
      if (ks__key_cancelled(sup, q->req.call)) {
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
      continue;
    }
    cell = k->current;
    if (cell == NULL || !cell->sent)
      continue;
    if (!cell->stopping) {
      bool cancelled = ks__key_cancelled(sup, cell->req.call);
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
    }
  }
  ks__cells_flush(sup); /* the ones the deadlines and aborts ended */
}

uint64_t ks__cells_next_deadline(struct ks_sup *sup) {
  uint64_t next = UINT64_MAX;
  for (struct ks_box *box = sup->live; box != NULL; box = box->next) {
    struct ks__kernel *k = box->kernel;
    struct ks_cell *cell;
    uint64_t t;
    if (k == NULL || !ks__box_alive(box))
      continue;
    cell = k->current != NULL ? k->current : ks__queued_start(k);
    if (cell == NULL || (cell == k->current && !cell->sent))
      continue;
    t = cell->stopping ? cell->grace_ns : cell->deadline_ns;
    if (t < next)
      next = t;
  }
  return next;
}

void ks__ip_box_end(struct ks_sup *sup, struct ks_box *box, const char *why) {
  struct ks__kernel *k = box->kernel;
  uint64_t now = ks__now_ns();

  ks__watch_close(sup, &box->ip);
  ks__ip_out_clear(&box->ip_out);
  if (k == NULL)
    return;
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
