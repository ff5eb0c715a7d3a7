/* The host's side of a box's interpreter (interp.h), on the supervisor
 * thread: the socket the init hands over (ATTACH), the message that starts
 * a one-shot call (RUN) and the rich results it sends back, and the
 * messages of a kernel's cells (interpreter-cells.c keeps the cells).
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

#include "interpreter-internal.h"
#include "../util.h"

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
int ks__pidfd_signal(int pidfd, int sig) {
  if (pidfd < 0)
    return -EBADF;
  return syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0) < 0 ? -errno : 0;
}

/* ---- the socket ---------------------------------------------------------- */

int ks__ip_kern_init(struct ks__kern *k, const struct ks_box_request *req) {
  k->ip = -1;
  k->ip_out.fds[0] = k->ip_out.fds[1] = -1;
  ks_ip_reader_init(&k->ipr, req->result_max);
  if (req->kernel_key != 0) {
    k->kernel = calloc(1, sizeof *k->kernel);
    if (k->kernel == NULL)
      return -1;
    k->kernel->pidfd = -1;
    ks_timer_init(&k->kernel->timer, ks__kernel_due, k);
  }
  return 0;
}

void ks__ip_out_clear(struct ks__ip_out *o) {
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

void ks__ip_kern_free(struct ks__kern *k) {
  if (k->ip >= 0)
    ks_close_keep_errno(k->ip);
  k->ip = -1;
  ks__ip_out_clear(&k->ip_out);
  ks_ip_reader_free(&k->ipr);
  /* Cells and strays were ended with the box (ks__ip_box_end). */
  free(k->kernel);
  k->kernel = NULL;
}

/* Sends what is left of the outgoing message, a record per send(); on a
 * full socket, EPOLLOUT carries on from there. */
static void ks__ip_send(struct ks_sup *sup, struct ks_box *box) {
  struct ks__ip_out *o = &box->kern->ip_out;

  while (box->kern->ip >= 0 && o->data != NULL && o->off < o->len) {
    size_t rec = ks_ip_record_size(o->data + o->off);
    struct iovec iov = {.iov_base = o->data + o->off, .iov_len = rec};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
    union ks__fd_control control;
    ssize_t n;

    if (o->off == 0 && o->nfds > 0)
      ks__attach_fds(&msg, &control, o->fds, o->nfds);
    n = sendmsg(box->kern->ip, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
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
      if (!box->kern->ip_out_watched)
        (void) ks_loop_watch_mod(&sup->loop, box->kern->ip, &box->kern->ip_watch,
                                 EPOLLIN | EPOLLOUT);
      box->kern->ip_out_watched = true;
      return;
    }
    break; /* the interpreter is gone: its EOF tells the rest */
  }
  if (box->kern->ip_out_watched && box->kern->ip >= 0)
    (void) ks_loop_watch_mod(&sup->loop, box->kern->ip, &box->kern->ip_watch, EPOLLIN);
  box->kern->ip_out_watched = false;
  ks__ip_out_clear(o);
}

void ks__ip_send_new(struct ks_sup *sup, struct ks_box *box, char *data, size_t len,
                            const int *fds, int nfds) {
  ks__ip_out_clear(&box->kern->ip_out);
  box->kern->ip_out.data = data;
  box->kern->ip_out.len = len;
  for (int i = 0; i < nfds; i++)
    box->kern->ip_out.fds[i] = fds[i];
  box->kern->ip_out.nfds = nfds;
  ks__ip_send(sup, box);
}

/* A one-shot box's RUN goes once the box is attached; a prewarm box's
 * comes with the call that claims it, in the claimer's box. */
static void ks__ip_start_run(struct ks_sup *sup, struct ks_box *box) {
  char *msg = box->req.ip_msg;
  if (box->kern->ip < 0 || ks__box_prewarm(box) || msg == NULL)
    return;
  box->req.ip_msg = NULL;
  ks__ip_send_new(sup, box, msg, box->req.ip_msg_len, NULL, 0);
}

/* The socket's watch: room to send on, or records to read. */
static void ks__ip_on_event(void *ctx, struct ks_watch *w, uint32_t events, uint64_t now) {
  struct ks_sup *sup = ctx;
  struct ks__kern *k = w->owner;
  struct ks_box *box = k->box;

  if ((events & EPOLLOUT) && box->kern->ip_out.data != NULL)
    ks__ip_send(sup, box);
  ks__ip_drain(sup, box, now);
}

void ks__ip_attach(struct ks_sup *sup, struct ks_box *box, int fd) {
  if (box->kern->ip >= 0 || fcntl(fd, F_SETFL, O_NONBLOCK) < 0) {
    ks_close_keep_errno(fd);
    return;
  }
  box->kern->ip = fd;
  box->kern->ip_watch.fn = ks__ip_on_event;
  box->kern->ip_watch.owner = box->kern;
  if (ks_loop_watch_add(&sup->loop, box->kern->ip, &box->kern->ip_watch) < 0) {
    ks_close_keep_errno(box->kern->ip);
    box->kern->ip = -1;
    return;
  }
  ks__ip_start_run(sup, box);
  if (box->kern->kernel != NULL && !ks__box_prewarm(box))
    ks__kernel_pump(sup, box, ks_now_ns());
}

void ks__ip_claimed(struct ks_sup *sup, struct ks_box *box) {
  ks__ip_start_run(sup, box);
  if (box->kern->kernel != NULL)
    ks__kernel_pump(sup, box, ks_now_ns());
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
  struct ks__kernel *k = box->kern->kernel;
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
 * with DONE's account of the exit, and the interpreter's own teardown (its
 * unmapping) goes on off the call's path. The interpreter
 * is SIGKILLed first, through the pidfd the init took of it: whether the
 * DONE was honest (the process is on its way out) or forged by the code (it
 * would run on), nothing of it runs once the call has settled, and the init
 * kills whatever else is left, as after any exit. Without that pidfd, or
 * with a cap byte still to learn, the init's report settles the call. */
static void ks__ip_final_done(struct ks_box *box, const struct ks_ip_done *done) {
  int r;

  if (box->state != KS_BOX_RUNNING || box->kern->said.reported || box->kern->final_done ||
      box->req.early_cap < 0 || box->kern->workload_pidfd < 0 || done->end == KS_IP_INTERRUPTED ||
      done->value < 0 || done->value > 255)
    return;
  r = ks__pidfd_signal(box->kern->workload_pidfd, SIGKILL);
  if (r < 0 && r != -ESRCH) /* ESRCH: it has exited already */
    return;
  memset(&box->kern->final_rep, 0, sizeof box->kern->final_rep);
  box->kern->final_rep.end = KS_INIT_EXITED;
  box->kern->final_rep.value = done->value;
  box->kern->final_rep.utime_us = done->utime_us;
  box->kern->final_rep.stime_us = done->stime_us;
  box->kern->final_rep.maxrss_kb = done->maxrss_kb;
  box->kern->final_done = true;
  box->kern->said.reported = true;
  box->kern->said.report_end = KS_INIT_EXITED;
  box->kern->said.report_value = done->value;
  ks__box_to(box, KS_BOX_SETTLING);
}

/* One whole message of a one-shot box (RUN). */
static void ks__run_message(struct ks_box *box, const struct ks_ip_msg *m) {
  struct ks_ip_done done;
  switch (m->type) {
  case KS_IP_TAKEN:
    box->kern->said.taken = true;
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
  ks_loop_watch_close(&sup->loop, &box->kern->ip);
  if (box->kern->kernel != NULL)
    ks__kernel_kill(sup, box, why, now);
}

/* Every record the socket holds now. */
void ks__ip_drain(struct ks_sup *sup, struct ks_box *box, uint64_t now) {
  union {
    struct cmsghdr align;
    char buf[CMSG_SPACE(KS__IP_MAX_FDS * sizeof(int))];
  } control;

  while (box->kern->ip >= 0) {
    struct iovec iov = {.iov_base = sup->loop.scratch, .iov_len = sizeof sup->loop.scratch};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
                         .msg_controllen = sizeof control.buf};
    int fds[KS__IP_MAX_FDS];
    int nfds;
    struct ks_ip_msg m;
    enum ks_ip_verdict v;
    ssize_t n = recvmsg(box->kern->ip, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);

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
      v = ks_ip_feed(&box->kern->ipr, sup->loop.scratch, (size_t) n, &m);
    if (v == KS_IP_BAD) {
      ks__ip_fds(fds, &nfds, NULL);
      ks__ip_lost(sup, box, "the kernel broke the host's protocol", now);
      return;
    }
    if (v == KS_IP_DROPPED) {
      /* A result over the budget: dropped whole, and said so. */
      struct ks_cell *cell = box->kern->kernel != NULL ? box->kern->kernel->current : NULL;
      if (box->kern->kernel == NULL)
        box->res.results.dropped = true;
      else if (cell != NULL && cell->sent && m.id == cell->req.id)
        cell->res.results.dropped = true;
    } else if (v == KS_IP_MESSAGE) {
      if (box->kern->kernel != NULL)
        ks__kernel_message(sup, box, &m, fds, &nfds, now);
      else
        ks__run_message(box, &m);
    }
    ks__ip_fds(fds, &nfds, NULL); /* what no message kept */
    if (box->kern->ip < 0)
      return;
  }
}
