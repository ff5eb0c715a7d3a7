/* The supervisor thread's event loop (loop.h): epoll, the wakeup, the
 * command queue, the timers and the wait for the first, and the read helpers every
 * subsystem on it drains its pipes with. */
#define _GNU_SOURCE
#include "loop.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "../util.h"

#define KS__MAX_EVENTS 64
/* A read goes into the output buffer's free tail once that tail holds at
 * least this much; below it the buffer doubles first. A large minimum would
 * make every small write (a kern's one-line warning comes in pieces) cost a
 * large block, a copy and its page faults. */
#define KS__READ_ROOM_MIN (4u << 10)
/* Bytes past the cap go to /dev/null this many at a time. */
#define KS__SPLICE_CHUNK (1u << 20)

int ks_loop_init(struct ks_loop *loop, const struct ks_loop_hooks *hooks, void *ctx,
                 struct ks_err *err) {
  int r;

  pthread_mutex_init(&loop->lock, NULL);
  loop->hooks = hooks;
  loop->ctx = ctx;
  loop->head = loop->tail = NULL;
  loop->stopping = false;
  ks_timers_init(&loop->timers);
  loop->wake_watch.fn = NULL; /* read by the loop itself (ks__take_wakeup) */
  loop->wake_watch.owner = loop;
  loop->epfd = epoll_create1(EPOLL_CLOEXEC);
  loop->wakefd = -1;
  loop->devnull = -1;
  if (loop->epfd < 0) {
    r = ks_err_set(err, errno, "epoll_create1", NULL);
    goto fail;
  }
  loop->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (loop->wakefd < 0) {
    r = ks_err_set(err, errno, "eventfd", NULL);
    goto fail;
  }
  loop->devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (loop->devnull < 0) {
    r = ks_err_set(err, errno, "open", "/dev/null");
    goto fail;
  }
  r = ks_loop_watch_add(loop, loop->wakefd, &loop->wake_watch);
  if (r < 0) {
    r = ks_err_set(err, -r, "epoll_ctl", NULL);
    goto fail;
  }
  return 0;

fail:
  ks_close_keep_errno(loop->epfd);
  ks_close_keep_errno(loop->wakefd);
  ks_close_keep_errno(loop->devnull);
  loop->epfd = loop->wakefd = loop->devnull = -1;
  pthread_mutex_destroy(&loop->lock);
  return r;
}

void ks_loop_destroy(struct ks_loop *loop) {
  ks_timers_destroy(&loop->timers);
  ks_close_keep_errno(loop->epfd);
  ks_close_keep_errno(loop->wakefd);
  ks_close_keep_errno(loop->devnull);
  loop->epfd = loop->wakefd = loop->devnull = -1;
  pthread_mutex_destroy(&loop->lock);
}

/* ---- watches ------------------------------------------------------------- */

int ks_loop_watch_add(struct ks_loop *loop, int fd, struct ks_watch *w) {
  return ks_loop_watch_add_for(loop, fd, w, EPOLLIN);
}

int ks_loop_watch_add_for(struct ks_loop *loop, int fd, struct ks_watch *w, uint32_t events) {
  struct epoll_event ev = {.events = events, .data.ptr = w};
  return epoll_ctl(loop->epfd, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

int ks_loop_watch_mod(struct ks_loop *loop, int fd, struct ks_watch *w, uint32_t events) {
  struct epoll_event ev = {.events = events, .data.ptr = w};
  return epoll_ctl(loop->epfd, EPOLL_CTL_MOD, fd, &ev) < 0 ? -errno : 0;
}

void ks_loop_watch_del(struct ks_loop *loop, int fd) {
  (void) epoll_ctl(loop->epfd, EPOLL_CTL_DEL, fd, NULL);
}

void ks_loop_watch_close(struct ks_loop *loop, int *fd) {
  if (*fd < 0)
    return;
  ks_loop_watch_del(loop, *fd);
  ks_close_keep_errno(*fd);
  *fd = -1;
}

/* ---- timers -------------------------------------------------------------- */

void ks_loop_timer_arm(struct ks_loop *loop, struct ks_timer *t, uint64_t at) {
  if (at == UINT64_MAX)
    ks_timers_disarm(&loop->timers, t);
  else
    ks_timers_arm(&loop->timers, t, at);
}

void ks_loop_timer_disarm(struct ks_loop *loop, struct ks_timer *t) {
  ks_timers_disarm(&loop->timers, t);
}

/* Fires what is due at now. A callback may arm timers again, its own too;
 * one armed for now or before fires in this pass. */
static void ks__fire_timers(struct ks_loop *loop, uint64_t now) {
  struct ks_timer *t;
  while ((t = ks_timers_pop_due(&loop->timers, now)) != NULL)
    t->fn(loop->ctx, t, now);
}

/* ---- commands and the wakeup ----------------------------------------------- */

void ks_loop_wake(struct ks_loop *loop) {
  uint64_t one = 1;
  /* EAGAIN means the counter is already nonzero: the thread will wake. */
  while (write(loop->wakefd, &one, sizeof one) < 0 && errno == EINTR) {
  }
}

int ks_loop_queue(struct ks_loop *loop, struct ks_cmd *cmd) {
  pthread_mutex_lock(&loop->lock);
  if (loop->stopping) {
    pthread_mutex_unlock(&loop->lock);
    return -ECANCELED;
  }
  cmd->next = NULL;
  if (loop->tail != NULL)
    loop->tail->next = cmd;
  else
    loop->head = cmd;
  loop->tail = cmd;
  pthread_mutex_unlock(&loop->lock);
  return 0;
}

int ks_loop_post(struct ks_loop *loop, struct ks_cmd *cmd) {
  int r = ks_loop_queue(loop, cmd);
  if (r == 0)
    ks_loop_wake(loop);
  return r;
}

void ks_loop_stop(struct ks_loop *loop) {
  pthread_mutex_lock(&loop->lock);
  loop->stopping = true;
  pthread_mutex_unlock(&loop->lock);
  ks_loop_wake(loop);
}

bool ks_loop_stopped(struct ks_loop *loop) {
  bool stopping;
  pthread_mutex_lock(&loop->lock);
  stopping = loop->stopping;
  pthread_mutex_unlock(&loop->lock);
  return stopping;
}

/* ---- the turn ---------------------------------------------------------------- */

/* Milliseconds to wait for the next deadline: -1 for none, rounded up
 * (waking early would only cost another turn). */
static int ks__timeout_ms(uint64_t next, uint64_t now) {
  uint64_t wait_ns;

  if (next == UINT64_MAX)
    return -1;
  if (next <= now)
    return 0;
  wait_ns = next - now;
  if (wait_ns / KS_LOOP_MS >= (uint64_t) INT32_MAX)
    return INT32_MAX;
  return (int) ((wait_ns + KS_LOOP_MS - 1) / KS_LOOP_MS);
}

/* Reads the wakeup counter, if this batch has it. It must be read before
 * the commands are taken, never after: a post's wakeup that came between
 * the take and the read would be read with the batch's, and its command
 * would wait for whatever woke the thread next. Read first, a post after it
 * leaves the counter set, and the next epoll_wait returns at once. */
static void ks__take_wakeup(struct ks_loop *loop, const struct epoll_event *events, int n) {
  uint64_t v;
  for (int i = 0; i < n; i++) {
    if (events[i].data.ptr != &loop->wake_watch)
      continue;
    while (read(loop->wakefd, &v, sizeof v) < 0 && errno == EINTR) {
    }
    return;
  }
}

void ks_loop_run(struct ks_loop *loop) {
  struct epoll_event events[KS__MAX_EVENTS];
  const struct ks_loop_hooks *h = loop->hooks;

  for (;;) {
    struct ks_cmd *cmds;
    bool stopping;
    uint64_t now = ks_now_ns();
    int n = epoll_wait(loop->epfd, events, KS__MAX_EVENTS,
                       ks__timeout_ms(ks_timers_next(&loop->timers), now));

    now = ks_now_ns();
    ks__take_wakeup(loop, events, n);
    pthread_mutex_lock(&loop->lock);
    cmds = loop->head;
    loop->head = loop->tail = NULL;
    stopping = loop->stopping;
    pthread_mutex_unlock(&loop->lock);
    h->on_commands(loop->ctx, &cmds);
    for (int i = 0; i < n; i++) {
      struct ks_watch *w = events[i].data.ptr;
      if (w->fn != NULL)
        w->fn(loop->ctx, w, events[i].events, now);
    }
    if (stopping) {
      h->on_stop(loop->ctx, cmds);
      return;
    }
    ks__fire_timers(loop, now);
    h->on_turn(loop->ctx, cmds);
  }
}

/* ---- reading ------------------------------------------------------------------- */

size_t ks_loop_drain(struct ks_loop *loop, int *fd, struct ks_outbuf *b, bool report,
                     ks_drain_emit_fn *emit, void *owner, int stream, size_t budget) {
  size_t done = 0;

  while (*fd >= 0 && done < budget) {
    ssize_t n;
    size_t room;

    if (ks_outbuf_reserve(b, KS__READ_ROOM_MIN, &room) == 0) {
      n = read(*fd, b->data + b->len, room);
      if (n > 0) {
        ks_outbuf_commit(b, (size_t) n);
        if (report)
          emit(loop->ctx, owner, stream, b->data + b->len - n, (size_t) n);
      }
    } else if (!report) {
      n = splice(*fd, NULL, loop->devnull, NULL, KS__SPLICE_CHUNK, SPLICE_F_NONBLOCK);
      if (n < 0 && (errno == EINVAL || errno == ENOSYS)) /* no splice to this fd */
        n = read(*fd, loop->scratch, sizeof loop->scratch);
      if (n > 0)
        b->discarded += (uint64_t) n;
    } else {
      /* Full, or out of memory: either way keep the pipe moving. */
      n = read(*fd, loop->scratch, sizeof loop->scratch);
      if (n > 0) {
        b->discarded += (uint64_t) n;
        emit(loop->ctx, owner, stream, loop->scratch, (size_t) n);
      }
    }

    if (n > 0) {
      done += (size_t) n;
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && errno == EAGAIN)
      break;
    ks_loop_watch_close(loop, fd); /* EOF or a broken pipe */
  }
  return done;
}

bool ks_loop_discard(struct ks_loop *loop, int fd) {
  for (;;) {
    ssize_t n = read(fd, loop->scratch, sizeof loop->scratch);
    if (n > 0 || (n < 0 && errno == EINTR))
      continue;
    return !(n < 0 && errno == EAGAIN);
  }
}
