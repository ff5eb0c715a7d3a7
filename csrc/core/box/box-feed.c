/* A box's stdin pipe and the feed that writes it (feed.h), on the
 * supervisor thread: the pipe made before the spawn or the claim, its read
 * end sent to the init (a STDIN frame, or on the SPEC), the chunks written
 * to the nonblocking write end as the pipe makes room (EPOLLOUT), the
 * caller told each time the slot is free, and the write end closed at the
 * feed's end, or when the box ends. Nothing here ever blocks: an endless
 * source fills the pipe and waits, and the box's deadline fires as for any
 * box. A workload that exits before reading everything closes its end
 * (EPOLLERR, or EPIPE on the next write: this thread blocks SIGPIPE, as
 * every engine thread does), and the rest is dropped. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "box-internal.h"
#include "fdpass.h"
#include "../util.h"

/* The pipe's size asked for: a chunk fits whole, so one write per chunk.
 * Where the kernel refuses (pipe-max-size, the user's pipe pages) it stays
 * as it was. */
#define KS__FEED_PIPE_SIZE (1u << 20)

int ks__feed_pipe(struct ks_box *box, struct ks_err *err) {
  int fds[2];

  if (box->req.has_stdin_rd) { /* a process's: its caller writes the pipe */
    box->feed_rd = box->req.stdin_rd;
    box->req.has_stdin_rd = false;
    /* A terminal's input: the feed writes its master (nonblocking, as the
     * caller opened it). */
    if (box->req.has_tty && box->req.feed != NULL) {
      box->feed_fd = fcntl(box->req.tty_fd, F_DUPFD_CLOEXEC, 3);
      if (box->feed_fd < 0)
        return ks_err_set(err, errno, "fcntl", NULL);
    }
    return 0;
  }
  if (box->req.feed == NULL)
    return 0;
  if (pipe2(fds, O_CLOEXEC) < 0)
    return ks_err_set(err, errno, "pipe2", NULL);
  if (fcntl(fds[1], F_SETFL, O_NONBLOCK) < 0) {
    int saved = errno;
    ks_close_keep_errno(fds[0]);
    ks_close_keep_errno(fds[1]);
    return ks_err_set(err, saved, "fcntl", NULL);
  }
  (void) fcntl(fds[1], F_SETPIPE_SZ, (int) KS__FEED_PIPE_SIZE);
  box->feed_rd = fds[0];
  box->feed_fd = fds[1];
  return 0;
}

int ks__feed_send_stdin_frame(struct ks_box *box, int ch, struct ks_err *err) {
  struct ks_init_frame_header h = {.magic = KS_INIT_FRAME_MAGIC, .type = KS_INIT_STDIN, .len = 0};
  union ks__fd_control control;
  struct iovec iov = {.iov_base = &h, .iov_len = sizeof h};
  struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
  ssize_t n;

  if (box->feed_rd < 0)
    return 0;
  ks__attach_fds(&msg, &control, &box->feed_rd, 1);
  /* A new socket's buffer is empty: the frame goes whole, at once. */
  do
    n = sendmsg(ch, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
  while (n < 0 && errno == EINTR);
  if (n != (ssize_t) sizeof h)
    return ks_err_set(err, n < 0 ? errno : EIO, "sendmsg", NULL);
  ks_close_keep_errno(box->feed_rd);
  box->feed_rd = -1;
  return 0;
}

static void ks__on_feed_event(void *ctx, struct ks_watch *w, uint32_t events, uint64_t now);

int ks__feed_attach(struct ks_sup *sup, struct ks_box *box, bool live) {
  int r;

  if (box->feed_fd < 0)
    return 0;
  box->feed_watch.fn = ks__on_feed_event;
  box->feed_watch.owner = box;
  /* Watched for nothing but EPOLLERR and EPOLLHUP until a chunk waits
   * for room (a terminal's master is readable too: its output is the
   * stdout watch's). */
  r = ks_loop_watch_add_for(&sup->loop, box->feed_fd, &box->feed_watch, 0);
  if (r < 0) {
    /* Unwatched, it could never be written or closed: closed now, the
     * workload reads EOF. */
    ks_close_keep_errno(box->feed_fd);
    box->feed_fd = -1;
    return r;
  }
  box->req.feed->box = box;
  box->feed_live = live;
  if (live)
    ks__feed_pump(sup, box);
  return 0;
}

void ks__feed_detach(struct ks_sup *sup, struct ks_box *box) {
  struct ks_feed *f = box->req.feed;

  ks_loop_watch_close(&sup->loop, &box->feed_fd);
  if (box->feed_rd >= 0)
    ks_close_keep_errno(box->feed_rd);
  box->feed_rd = -1;
  box->feed_live = false;
  box->feed_out = false;
  if (f != NULL && f->box == box)
    f->box = NULL;
}

/* The write end is done with: the box read it all and the feed ended, or
 * its end closed (gone). */
static void ks__feed_close(struct ks_sup *sup, struct ks_box *box) {
  ks_loop_watch_close(&sup->loop, &box->feed_fd);
  box->feed_out = false;
}

static void ks__feed_want_room(struct ks_sup *sup, struct ks_box *box, bool want) {
  if (box->feed_out == want || box->feed_fd < 0)
    return;
  box->feed_out = want;
  (void) ks_loop_watch_mod(&sup->loop, box->feed_fd, &box->feed_watch, want ? EPOLLOUT : 0);
}

/* Writes cur; returns false once the pipe is full (EPOLLOUT armed). A
 * write that fails otherwise (EPIPE: the workload's end is closed) makes
 * the feed gone. */
static bool ks__feed_write(struct ks_sup *sup, struct ks_box *box, struct ks_feed *f) {
  while (f->cur_off < f->cur_len) {
    ssize_t n = write(box->feed_fd, f->cur + f->cur_off, f->cur_len - f->cur_off);
    if (n > 0) {
      f->cur_off += (size_t) n;
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && errno == EAGAIN) {
      ks__feed_want_room(sup, box, true);
      return false;
    }
    f->gone = true;
    ks__feed_close(sup, box);
    break;
  }
  free(f->cur);
  f->cur = NULL;
  f->cur_len = f->cur_off = 0;
  return true;
}

void ks__feed_pump(struct ks_sup *sup, struct ks_box *box) {
  struct ks_feed *f = box->req.feed;
  bool freed = false; /* the slot was taken: the caller may put the next */

  if (f == NULL || f->box != box || !box->feed_live)
    return;
  for (;;) {
    bool ended = false;
    if (f->cur == NULL) {
      if (ks_feed_take(f, &f->cur, &f->cur_len, &ended)) {
        f->cur_off = 0;
        freed = true;
      } else {
        if (ended && box->feed_fd >= 0)
          ks__feed_close(sup, box); /* everything written: EOF for the workload */
        break;
      }
    }
    if (f->gone || box->feed_fd < 0) {
      free(f->cur); /* dropped: the workload no longer reads */
      f->cur = NULL;
      f->gone = true;
      continue;
    }
    if (!ks__feed_write(sup, box, f))
      break;
  }
  if (box->feed_fd >= 0 && f->cur == NULL)
    ks__feed_want_room(sup, box, false);
  if (freed)
    sup->hooks.on_stdin(sup->ctx, box, f->gone);
}

/* The write end's watch: room (EPOLLOUT), or the read end closed
 * (EPOLLERR), which the next write sees as EPIPE. */
static void ks__on_feed_event(void *ctx, struct ks_watch *w, uint32_t events, uint64_t now) {
  struct ks_sup *sup = ctx;
  struct ks_box *box = w->owner;
  struct ks_feed *f = box->req.feed;

  (void) now;
  if (!(events & (EPOLLERR | EPOLLHUP))) {
    ks__feed_pump(sup, box);
    return;
  }
  /* Before TAKEN the read end went with a box that never took the call:
   * the feed is not gone, its retry gets it whole. */
  if (box->feed_live && f != NULL)
    f->gone = true;
  ks__feed_close(sup, box);
  ks__feed_pump(sup, box);
}

void ks__feed_wake(struct ks_sup *sup, struct ks_feed *f) {
  ks_feed_unpost(f);
  if (f->box != NULL)
    ks__feed_pump(sup, f->box);
  ks_feed_unref(f);
}
