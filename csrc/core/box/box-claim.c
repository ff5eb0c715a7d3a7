/* A box's control channel to its init (the spec out, TAKEN, ATTACH and
 * the report in), the settle at the report, and the claim of a parked
 * box by a call. */
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
#include "fdpass.h"
#include "interpreter.h"
#include "../util.h"

/* Sends what is left of the spec from its first byte on; the first send
 * carries the stdin pipe's read end (feed_rd), if any, as SCM_RIGHTS on
 * the spec's first byte, where the waiting init's recvmsg of the header
 * finds it (protocol.h). */
static ssize_t ks__spec_send(struct ks_box *box) {
  union ks__fd_control control;
  struct iovec iov = {.iov_base = box->req.spec + box->spec_sent,
                      .iov_len = box->req.spec_len - box->spec_sent};
  struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
  ssize_t n;

  if (box->spec_sent == 0 && box->feed_rd >= 0)
    ks__attach_fds(&msg, &control, &box->feed_rd, 1);
  n = sendmsg(box->kern->ctl, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
  if (n > 0 && box->feed_rd >= 0) {
    ks_close_keep_errno(box->feed_rd); /* in the init's hands (or the socket's) now */
    box->feed_rd = -1;
  }
  return n;
}

void ks__send_spec(struct ks_sup *sup, struct ks_box *box) {
  while (box->kern->ctl >= 0 && box->req.spec != NULL && box->spec_sent < box->req.spec_len) {
    ssize_t n = ks__spec_send(box);
    if (n > 0) {
      box->spec_sent += (size_t) n;
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && errno == EAGAIN) {
      if (!box->kern->ctl_out)
        (void) ks_loop_watch_mod(&sup->loop, box->kern->ctl, &box->kern->ctl_watch,
                                 EPOLLIN | EPOLLOUT);
      box->kern->ctl_out = true;
      return;
    }
    break; /* the init is gone: kern's exit tells the rest */
  }
  if (box->kern->ctl_out && box->kern->ctl >= 0)
    (void) ks_loop_watch_mod(&sup->loop, box->kern->ctl, &box->kern->ctl_watch, EPOLLIN);
  box->kern->ctl_out = false;
  free(box->req.spec);
  box->req.spec = NULL;
}

/* RUSAGE_CHILDREN in the box, not kern's. */
void ks__usage_from_report(struct ks_box *box, const struct ks_init_report *rep) {
  memset(&box->res.usage, 0, sizeof box->res.usage);
  box->res.usage.ru_utime.tv_sec = (time_t) (rep->utime_us / 1000000u);
  box->res.usage.ru_utime.tv_usec = (suseconds_t) (rep->utime_us % 1000000u);
  box->res.usage.ru_stime.tv_sec = (time_t) (rep->stime_us / 1000000u);
  box->res.usage.ru_stime.tv_usec = (suseconds_t) (rep->stime_us % 1000000u);
  box->res.usage.ru_maxrss = (long) rep->maxrss_kb;
}

/* The init reported: every process of the box is dead, so every byte they
 * wrote is in our pipes. Settle now, and leave kern's teardown to a tail.
 * Not for a SIGKILLed workload, whose OOM attribution needs kern's cap byte
 * at its exit, nor when the caller has no cap byte to report. */
void ks__settle_early(struct ks_sup *sup, struct ks_box *box, uint64_t now) {
  const struct ks_init_report *rep =
      box->kern->final_done ? &box->kern->final_rep : &box->kern->chan.rep;
  int code = ks_chan_exit_code(rep);
  struct ks__tail *tail;

  ks__ip_drain(sup, box, now); /* results and the TAKEN sent before the exit */
  ks__ip_box_end(sup, box, "the kernel's interpreter exited");
  ks__drain_output(sup, box, KS_STDOUT, KS__READ_BUDGET);
  ks__drain_output(sup, box, KS_STDERR, KS__READ_BUDGET);
  box->res.status_known = true;
  box->res.wait_status = (code & 0xff) << 8; /* as kern's exit status */
  box->kern->said.started[0] = 0x01;
  box->kern->said.started[1] = (unsigned char) box->req.early_cap;
  box->kern->said.nstarted = 2;
  ks__usage_from_report(box, rep);
  box->res.duration_ns = now - box->start_ns;
  box->res.settled_early = true;
  if (box->kern->ctl >= 0)
    box->kern->release = fcntl(box->kern->ctl, F_DUPFD_CLOEXEC, 3);
  tail = ks__tail_adopt(sup, box, now);
  ks__live_unlink(sup, box);
  ks__after_box(sup, box); /* the call first: arming the tail is 5 syscalls */
  ks__tail_arm(sup, tail);
}

/* Descriptors that came with bytes of the channel: the first two are kept
 * for the ATTACH frame they rode on (the init sends nothing else with
 * any); any other is closed at once. */
static void ks__take_fds(struct ks_box *box, struct msghdr *msg) {
  for (struct cmsghdr *c = CMSG_FIRSTHDR(msg); c != NULL; c = CMSG_NXTHDR(msg, c)) {
    size_t n;
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
      continue;
    n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < n; i++) {
      int fd;
      memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      if (box->kern->pending_fd[0] < 0)
        box->kern->pending_fd[0] = fd;
      else if (box->kern->pending_fd[1] < 0)
        box->kern->pending_fd[1] = fd;
      else
        ks_close_keep_errno(fd);
    }
  }
}

/* req.hand_stdout: the stdout pipe's read end, no longer watched, for the
 * caller (-1: none, or no longer open). */
static int ks__hand_stdout(struct ks_sup *sup, struct ks_box *box) {
  int fd = box->kern->fd[KS_STDOUT];

  if (!box->req.hand_stdout || fd < 0)
    return -1;
  ks_loop_watch_del(&sup->loop, fd);
  box->kern->fd[KS_STDOUT] = -1;
  box->out_paused[KS_STDOUT] = false;
  return fd;
}

/* A stdout the caller could not take: watched by the engine again. */
static void ks__keep_stdout(struct ks_sup *sup, struct ks_box *box, int fd) {
  box->kern->fd[KS_STDOUT] = fd;
  if (ks_loop_watch_add(&sup->loop, fd, &box->kern->watch[KS_STDOUT]) < 0)
    ks_loop_watch_close(&sup->loop, &box->kern->fd[KS_STDOUT]); /* as at EOF */
}

/* What one frame of the channel completed. */
static void ks__on_chan_event(struct ks_sup *sup, struct ks_box *box, enum ks_chan_event ev) {
  int fd;
  switch (ev) {
  case KS_CHAN_TAKEN:
    box->kern->said.taken = true;
    /* The workload holds its stdin pipe now: the feed's bytes may go. */
    if (box->feed_fd >= 0 && !box->feed_live && box->state == KS_BOX_RUNNING) {
      box->feed_live = true;
      ks__feed_pump(sup, box);
    }
    break;
  case KS_CHAN_STARTED:
    if (box->kern->said.started_ns != 0)
      break;
    box->kern->said.started_ns = ks_now_ns();
    /* Only a process's own box: a parked one's user is not a call. */
    if (box->req.want_started && box->state == KS_BOX_RUNNING) {
      fd = ks__hand_stdout(sup, box);
      if (!sup->hooks.on_started(sup->ctx, box, fd) && fd >= 0)
        ks__keep_stdout(sup, box, fd);
    }
    break;
  case KS_CHAN_ATTACH:
    fd = box->kern->pending_fd[0];
    box->kern->pending_fd[0] = -1;
    if (box->kern->workload_pidfd < 0) {
      box->kern->workload_pidfd = box->kern->pending_fd[1];
      box->kern->pending_fd[1] = -1;
    }
    if (fd >= 0)
      ks__ip_attach(sup, box, fd);
    break;
  default:
    break;
  }
}

static void ks__on_report(struct ks_sup *sup, struct ks_box *box);

void ks__on_ctl(struct ks_sup *sup, struct ks_box *box, uint32_t events) {
  unsigned char buf[256];
  union {
    struct cmsghdr align;
    char buf[CMSG_SPACE(4 * sizeof(int))];
  } control;
  const struct ks_init_report *rep = &box->kern->chan.rep;

  if ((events & EPOLLOUT) && box->req.spec != NULL)
    ks__send_spec(sup, box);
  while (box->kern->ctl >= 0) {
    struct iovec iov = {.iov_base = buf, .iov_len = sizeof buf};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
                         .msg_controllen = sizeof control.buf};
    ssize_t n = recvmsg(box->kern->ctl, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (n > 0) {
      size_t off = 0;
      ks__take_fds(box, &msg);
      while (off < (size_t) n) {
        enum ks_chan_event ev;
        off += ks_chan_feed(&box->kern->chan, buf + off, (size_t) n - off, &ev);
        ks__on_chan_event(sup, box, ev);
      }
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && errno == EAGAIN)
      break;
    ks_loop_watch_close(&sup->loop, &box->kern->ctl); /* EOF: the init has exited */
  }
  if (box->kern->chan.state != KS_CHAN_DONE || box->kern->said.reported)
    return;
  box->kern->said.reported = true;
  box->kern->said.report_end = (int) rep->end;
  box->kern->said.report_value = rep->value;
  ks__on_report(sup, box);
}

/* The channel's watch. */
static void ks__on_ctl_event(void *ctx, struct ks_watch *w, uint32_t events, uint64_t now) {
  struct ks__kern *k = w->owner;
  (void) now;
  ks__on_ctl(ctx, k->box, events);
}

void ks__ctl_watch(struct ks__kern *k) {
  k->ctl_watch.fn = ks__on_ctl_event;
  k->ctl_watch.owner = k;
}

/* The init's report is in: settle at it, or close the channel so that the
 * init exits and we wait for kern's. A parked box whose init took a spec
 * the caller sent itself keeps it for the claim on its way. */
static void ks__on_report(struct ks_sup *sup, struct ks_box *box) {
  const struct ks_init_report *rep = &box->kern->chan.rep;

  if (ks__box_prewarm(box) && box->kern->said.taken)
    return;
  if (box->state == KS_BOX_RUNNING && box->req.early_cap >= 0 &&
      !(rep->end == KS_INIT_SIGNALED && rep->value == SIGKILL))
    ks__box_to(box, KS_BOX_SETTLING); /* at the sweep, after the batch: later
                                        * events of it may name this box */
  else
    ks_loop_watch_close(&sup->loop, &box->kern->ctl); /* we wait for kern's exit: the init may go */
}

struct ks_box *ks__find_parked(struct ks_sup *sup, uint64_t key) {
  for (struct ks_box *b = sup->live; b != NULL; b = b->next) {
    if (ks__box_prewarm(b) && b->req.park_key == key)
      return b;
  }
  return NULL;
}

/* Detaches the parked run's kern and attaches it, whole, to the claiming
 * call: the call's pointer and the kern's back pointer. Every watch of the
 * kern names the kern, so its events reach the call from now on without a
 * watch being touched. What the start said (its output, started bytes, a
 * TAKEN or report that came while it was parked) and its `kern stop` stay
 * with the kern, read by the call at its end (ks__call_take_said). The
 * call's own kern part, never started, goes; a kernel's cell state (made
 * for the call's request) comes with the call. */
static void ks__kern_attach(struct ks_sup *sup, struct ks_box *box, struct ks_box *p) {
  struct ks__kern *k = p->kern;
  struct ks__kern *spare = box->kern;

  p->kern = NULL;
  k->box = box;
  box->kern = k;
  if (k->kernel == NULL && spare->kernel != NULL) {
    k->kernel = spare->kernel;
    spare->kernel = NULL;
    k->kernel->timer.owner = k; /* not armed yet: the spare never ran */
  }
  ks__kern_free(spare);
  k->ipr.max = box->req.result_max; /* the call's, as a cold start's reader has */
  /* What kern printed while the box started counts against this call's cap. */
  for (int s = 0; s < 2; s++) {
    struct ks_outbuf *b = &k->said.out[s];
    b->cap = box->req.cap;
    if (b->len > b->cap) {
      b->discarded += b->len - b->cap;
      b->len = b->cap;
    }
    if (box->req.stream[s] && b->len > 0)
      sup->hooks.on_output(sup->ctx, box, (enum ks_stream) s, b->data, b->len);
  }
}

/* A claiming call cancelled before the loop took it in. An exec claim's
 * argv may have reached its parked box from the JS thread (claimSend)
 * before the claim did, so that box may be running the workload for a call
 * that will never take it over: it is killed, as a recycled box is. (A
 * Python claim sends its RUN only at the takeover; its box goes too, which
 * costs the pool one refill, on a path only an abort takes.) */
void ks__claim_cancelled(struct ks_sup *sup, const struct ks_box *box) {
  struct ks_box *p;

  if (box->req.claim_key == 0)
    return;
  p = ks__find_parked(sup, box->req.claim_key);
  if (p != NULL && p->state == KS_BOX_PARKED)
    ks__kill_box(sup, p, ks_now_ns(), false);
}

/* Runs the claiming call in the parked box of its claim key, if that is
 * still parked: the call takes its kern (ks__kern_attach) and runs from
 * now, its deadline and duration counted from the call. */
bool ks__adopt_parked(struct ks_sup *sup, struct ks_box *box) {
  struct ks_box *p = ks__find_parked(sup, box->req.claim_key);
  uint64_t now;

  if (p == NULL || p->state != KS_BOX_PARKED || p->kern->ctl < 0 || ks__box_cancelled(sup, p))
    return false;
  now = ks_now_ns();
  ks__box_to(box, KS_BOX_RUNNING);
  ks__kern_attach(sup, box, p);
  /* The stdin pipe goes with the spec; it is written from TAKEN on. A
   * watch that cannot be added leaves the feed unattached: the workload
   * reads EOF once the spec's copy of the read end is gone. */
  (void) ks__feed_attach(sup, box, false);
  /* The call's message first: the box starts it at once. */
  ks__send_spec(sup, box);
  ks__ip_claimed(sup, box); /* a Python box's RUN, a kernel's first cells */
  /* A parked box's channel may have been left unwatched (ks__spawn_watch). */
  if (!box->kern->ctl_out && box->kern->ctl >= 0)
    (void) ks_loop_watch_mod(&sup->loop, box->kern->ctl, &box->kern->ctl_watch, EPOLLIN);
  box->start_ns = now;
  ks__box_deadline(sup, box, box->req.kernel_key != 0 ? UINT64_MAX : now + box->req.timeout_ns);
  box->res.prewarmed = true;
  ks__live_unlink(sup, p);
  ks__live_link(sup, box);
  /* The parked run settles with nothing of its own: a kernel's now, a
   * call's with the call (waking the JS thread for it while the call runs
   * would take CPU from the box). */
  ks__box_to(p, KS_BOX_CLAIMED);
  p->res.claimed = true;
  p->res.status_known = false;
  if (box->req.kernel_key != 0)
    ks__after_box(sup, p);
  else
    box->claimed = p;
  if (box->kern->said.reported)
    ks__on_report(sup, box);
  return true;
}

