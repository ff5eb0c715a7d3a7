/* The supervisor thread: an epoll loop over every live box.
 *
 * Ownership: a box belongs to the submitter until ks_sup_submit, then to the
 * supervisor thread (pending list, then live list) until on_done hands it
 * back. Only the supervisor thread touches a submitted box, except the
 * pending list, which the lock guards. A box is never freed in the middle of
 * an epoll batch, so no event of the batch can point at freed memory. */
#define _GNU_SOURCE
#include "sup-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../envfd.h"
#include "../util.h"

uint64_t ks__now_ns(void) { return ks_now_ns(); }

/* A vector of the request: one block (supervisor.h). */
static void ks__free_strv(char **v) { free(v); }

void ks_box_request_free(struct ks_box_request *req) {
  if (req->has_begun)
    ks_ws_watch_abandon(req->watch, &req->begun);
  ks_ws_watch_unref(req->watch);
  if (req->exec_fd > 2)
    ks_close_keep_errno(req->exec_fd);
  free(req->path);
  ks__free_strv(req->argv);
  ks__free_strv(req->envp);
  ks__free_strv(req->stop_argv);
  free(req->env_data);
  free(req->tmpdir);
  free(req->spec);
  free(req->ip_msg);
  if (req->chan_given) {
    ks_close_keep_errno(req->chan[0]);
    ks_close_keep_errno(req->chan[1]);
  }
  memset(req, 0, sizeof *req);
}

struct ks_box *ks_box_new(struct ks_box_request *req, void *user) {
  struct ks_box *box = calloc(1, sizeof *box);
  if (box == NULL)
    return NULL;
  box->req = *req;
  memset(req, 0, sizeof *req);
  if (box->req.has_begun) {
    box->wcall = box->req.begun; /* the call counts from before the argv went out */
    box->wcall_open = true;
    box->req.has_begun = false;
  }
  box->user = user;
  box->proc = (struct ks_proc) KS_PROC_INIT;
  for (int i = 0; i < KS__BOX_PIPES; i++)
    box->fd[i] = -1;
  box->ctl = -1;
  box->release = -1;
  box->pending_fd[0] = box->pending_fd[1] = -1;
  box->workload_pidfd = -1;
  ks_chan_init(&box->chan);
  ks__ip_box_init(box);
  ks_results_init(&box->res.results, box->req.result_max);
  ks_outbuf_init(&box->res.out[KS_STDOUT], box->req.cap);
  ks_outbuf_init(&box->res.out[KS_STDERR], box->req.cap);
  return box;
}

void *ks_box_user(const struct ks_box *box) { return box->user; }

const char *ks_box_request_path(const struct ks_box *box) { return box->req.path; }

bool ks_box_request_scans(const struct ks_box *box) { return box->req.watch != NULL; }

struct ks_box_result *ks_box_result(struct ks_box *box) { return &box->res; }

int ks_box_take_release(struct ks_box *box) {
  int fd = box->release;
  box->release = -1;
  return fd;
}

void ks_box_free(struct ks_box *box) {
  if (box == NULL)
    return;
  ks_proc_kids_close(&box->kids);
  /* Only at engine shutdown can a box still hold an open call here. */
  if (box->wcall_open)
    ks_ws_watch_abandon(box->req.watch, &box->wcall);
  if (box->ctl >= 0)
    ks_close_keep_errno(box->ctl);
  if (box->release >= 0) {
    /* The init waits for this after its report: now it may exit, and kern's
     * teardown begins (the caller has the result). */
    (void) shutdown(box->release, SHUT_WR);
    ks_close_keep_errno(box->release);
  }
  for (int i = 0; i < 2; i++) {
    if (box->pending_fd[i] >= 0)
      ks_close_keep_errno(box->pending_fd[i]);
  }
  if (box->workload_pidfd >= 0)
    ks_close_keep_errno(box->workload_pidfd);
  ks__ip_box_free(box);
  ks_results_free(&box->res.results);
  ks_box_request_free(&box->req);
  free(box->res.changes);
  ks_outbuf_free(&box->res.out[KS_STDOUT]);
  ks_outbuf_free(&box->res.out[KS_STDERR]);
  free(box);
}

/* ---- epoll bookkeeping ------------------------------------------------- */

int ks__watch_add(struct ks_sup *sup, int fd, struct ks__watch *w) {
  struct epoll_event ev = {.events = EPOLLIN, .data.ptr = w};
  return epoll_ctl(sup->epfd, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

/* Deregister before closing: a forked child elsewhere in the host may share
 * the open file description, and epoll would keep reporting it to a watch
 * that no longer exists. */
void ks__watch_close(struct ks_sup *sup, int *fd) {
  if (*fd < 0)
    return;
  (void) epoll_ctl(sup->epfd, EPOLL_CTL_DEL, *fd, NULL);
  ks_close_keep_errno(*fd);
  *fd = -1;
}

static void ks__live_link(struct ks_sup *sup, struct ks_box *box) {
  box->prev = NULL;
  box->next = sup->live;
  if (sup->live != NULL)
    sup->live->prev = box;
  sup->live = box;
  atomic_fetch_add(&sup->live_count, 1);
}

static void ks__live_unlink(struct ks_sup *sup, struct ks_box *box) {
  if (box->prev != NULL)
    box->prev->next = box->next;
  else
    sup->live = box->next;
  if (box->next != NULL)
    box->next->prev = box->prev;
  box->next = box->prev = NULL;
  atomic_fetch_sub(&sup->live_count, 1);
}

/* ---- helpers: kern stop, abandoned kerns -------------------------------- */

static void ks__aux_adopt(struct ks_sup *sup, struct ks_proc *proc, uint64_t deadline_ns) {
  struct ks__aux *a = calloc(1, sizeof *a);
  if (a == NULL) {
    ks_proc_kill_and_release(proc, 0);
    return;
  }
  a->proc = *proc;
  *proc = (struct ks_proc) KS_PROC_INIT;
  a->deadline_ns = deadline_ns;
  a->watch.kind = KS__W_AUX;
  a->watch.owner = a;
  if (ks__watch_add(sup, a->proc.pidfd, &a->watch) < 0) {
    ks_proc_kill_and_release(&a->proc, 0);
    free(a);
    return;
  }
  a->next = sup->aux;
  if (sup->aux != NULL)
    sup->aux->prev = a;
  sup->aux = a;
  atomic_fetch_add(&sup->aux_count, 1);
}

/* Unlinks a helper, kills it and reaps it, waiting up to wait_ms for that. */
static void ks__aux_release(struct ks_sup *sup, struct ks__aux *a, int wait_ms) {
  if (a->prev != NULL)
    a->prev->next = a->next;
  else
    sup->aux = a->next;
  if (a->next != NULL)
    a->next->prev = a->prev;
  atomic_fetch_sub(&sup->aux_count, 1);
  if (a->proc.pidfd >= 0)
    (void) epoll_ctl(sup->epfd, EPOLL_CTL_DEL, a->proc.pidfd, NULL);
  /* A helper that SIGKILL cannot end within wait_ms is waited for
   * elsewhere: this thread drains every other box. */
  ks_proc_kill_and_release(&a->proc, wait_ms);
  free(a);
}

static void ks__aux_on_exit(struct ks_sup *sup, struct ks__aux *a) {
  int status;
  struct rusage ru;
  if (ks_proc_try_reap(&a->proc, &status, &ru) != 0)
    ks__aux_release(sup, a, 0);
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
  plan.fds[0] = plan.fds[1] = plan.fds[2] = sup->devnull;
  plan.nfds = 3;
  /* Best effort: the SIGKILL already sent takes the box down with kern. */
  if (ks_proc_spawn(&plan, &proc, &err) == 0)
    ks__aux_adopt(sup, &proc, ks__now_ns() + KS__STOP_DEADLINE_NS);
}

/* A killed box is finished: its `kern stop` is queued on *stops, to start
 * once every box finished in this sweep is on its way to JS. Started at the
 * kill, as it once was, 20 boxes aborted by one signal settled in 25-35 ms
 * instead of 5-25: each real `kern stop` costs the order of a millisecond to
 * spawn on this thread, and their CPU competes with the boxes' ends. Without
 * memory for the entry it starts now. */
static void ks__queue_stop(struct ks_sup *sup, struct ks_box *box, struct ks__stop **stops) {
  struct ks_box_request *req = &box->req;
  struct ks__stop *stop;

  if (!ks__box_was_killed(box) || req->stop_argv == NULL)
    return;
  stop = calloc(1, sizeof *stop);
  if (stop != NULL)
    stop->path = strdup(req->path);
  if (stop == NULL || stop->path == NULL) {
    free(stop);
    ks__run_stop(sup, req->path, req->exec_fd, req->stop_argv, req->envp);
    return;
  }
  atomic_fetch_add(&sup->stops_queued, 1);
  stop->exec_fd = req->exec_fd;
  stop->argv = req->stop_argv;
  stop->envp = req->envp;
  req->exec_fd = 0;
  req->stop_argv = NULL;
  req->envp = NULL;
  stop->next = *stops;
  *stops = stop;
}

static void ks__run_stops(struct ks_sup *sup, struct ks__stop *stops) {
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

/* ---- the scan thread ------------------------------------------------------ */

static void ks__queue_spawn(struct ks_sup *sup, struct ks_box *box);
static bool ks__box_cancelled(struct ks_sup *sup, const struct ks_box *box);

static void ks__scan_job(struct ks_sup *sup, struct ks_box *box) {
  int r;

  if (box->scan_phase == KS__SCAN_BEFORE) {
    ks_ws_watch_begin(box->req.watch, &box->wcall);
    box->wcall_open = true;
    ks__queue_spawn(sup, box);
    return;
  }
  if (box->wcall_open) {
    box->wcall_open = false;
    r = ks_ws_watch_end(box->req.watch, &box->wcall, &box->res.changes, &box->res.nchanges);
    if (r < 0)
      box->res.scan_errnum = -r; /* the run's result stands, without a file list */
  }
  sup->hooks.on_done(sup->ctx, box);
}

/* Hands a box to the scan thread; once that has stopped, does what it
 * would have done short of scanning. */
static void ks__scanner_push(struct ks_sup *sup, struct ks_box *box, enum ks__scan_phase phase) {
  struct ks__scanner *sc = &sup->scanner;

  box->scan_phase = phase;
  box->next = NULL;
  pthread_mutex_lock(&sc->lock);
  if (!sc->stopped) {
    if (sc->tail != NULL)
      sc->tail->next = box;
    else
      sc->head = box;
    sc->tail = box;
    pthread_cond_signal(&sc->cond);
    pthread_mutex_unlock(&sc->lock);
    return;
  }
  pthread_mutex_unlock(&sc->lock);
  if (phase == KS__SCAN_BEFORE) {
    box->res.spawn_errnum = ECANCELED;
    box->res.spawn_syscall = "spawn";
  }
  sup->hooks.on_done(sup->ctx, box);
}

static void *ks__scanner_main(void *arg) {
  struct ks_sup *sup = arg;
  struct ks__scanner *sc = &sup->scanner;

  (void) pthread_setname_np(pthread_self(), "ks-scan"); /* what top -H and perf show */
  pthread_mutex_lock(&sc->lock);
  for (;;) {
    struct ks_box *box;
    while (sc->head == NULL && !sc->stopped)
      pthread_cond_wait(&sc->cond, &sc->lock);
    if (sc->stopped)
      break;
    box = sc->head;
    sc->head = box->next;
    if (sc->head == NULL)
      sc->tail = NULL;
    box->next = NULL;
    pthread_mutex_unlock(&sc->lock);
    ks__scan_job(sup, box);
    pthread_mutex_lock(&sc->lock);
  }
  pthread_mutex_unlock(&sc->lock);
  return NULL;
}

/* A box whose end costs next to nothing ends on this thread: little output
 * to decode, and no change list to make but a short one the tracker has
 * already (a few files, nothing unread). The thread hop it spares is ~50 us
 * of a prewarmed call's 1.5-2 ms here. */
#define KS__INLINE_OUTPUT (64u << 10)
#define KS__INLINE_FILES 16

static bool ks__end_inline(struct ks_box *box) {
  struct ks_box_result *res = &box->res;
  int r = 0;

  if (res->out[KS_STDOUT].len + res->out[KS_STDERR].len > KS__INLINE_OUTPUT ||
      res->results.bytes > KS__INLINE_OUTPUT)
    return false;
  if (box->wcall_open) {
    if (!ks_ws_watch_try_end(box->req.watch, &box->wcall, KS__INLINE_FILES, &res->changes,
                             &res->nchanges, &r))
      return false;
    box->wcall_open = false;
    if (r < 0)
      res->scan_errnum = -r; /* the run's result stands, without a file list */
  } else if (box->req.watch != NULL) {
    return false; /* a full scan's diff: the scan thread's */
  }
  return true;
}

/* A finished box: scanned for changes first if it asked for that. Every
 * box ends through the scan thread, with or without a watch, unless its end
 * costs next to nothing (ks__end_inline): on_done may take time in
 * proportion to the output (the ASCII pass, decoding), which must never
 * hold the supervisor's deadlines. */
static void ks__after_box(struct ks_sup *sup, struct ks_box *box) {
  struct ks_box *p = box->claimed;

  box->claimed = NULL;
  ks__box_to(box, KS_BOX_ENDED); /* from here on the box is the caller's */
  if (ks__end_inline(box))
    sup->hooks.on_done(sup->ctx, box);
  else
    ks__scanner_push(sup, box, KS__SCAN_AFTER);
  /* The parked run the call took, after the call: the JS thread settles
   * the call first. */
  if (p != NULL)
    ks__after_box(sup, p);
}

/* ---- boxes ------------------------------------------------------------- */

static void ks__after_box(struct ks_sup *sup, struct ks_box *box);

static void ks__report_spawn_failure(struct ks_sup *sup, struct ks_box *box,
                                     const struct ks_err *err) {
  box->res.spawn_errnum = err->errnum;
  box->res.spawn_syscall = err->syscall;
  /* Through the scan thread: the call it began must end there. */
  ks__after_box(sup, box);
}

static bool ks__adopt_parked(struct ks_sup *sup, struct ks_box *box);
static void ks__send_spec(struct ks_sup *sup, struct ks_box *box);

static void ks__forget_now(struct ks_sup *sup, struct ks_box *marker);
static void ks__kit_publish(struct ks_sup *sup);

static void ks__spawn_box(struct ks_sup *sup, struct ks_box *box) {
  int pipes[KS__BOX_PIPES][2];
  int chan[2] = {-1, -1};
  bool shared = false; /* chan is the caller's (terms.shareChannel) */
  _cleanup_close_ int envfd = -1;
  struct ks_spawn_plan plan;
  struct ks_err err;
  int i;
  int r = 0;

  ks_err_clear(&err);
  if (ks__box_cancelled(sup, box)) {
    ks_err_set(&err, ECANCELED, "spawn", NULL);
    ks__report_spawn_failure(sup, box, &err);
    return;
  }
  /* A call for a prewarmed box runs there if the box is still parked;
   * otherwise (recycled, died, not started yet) it starts cold, now. */
  if (box->req.claim_key != 0 && ks__adopt_parked(sup, box))
    return;
  if (box->req.claim_only) {
    box->res.missed = true; /* the caller decides, from the parked box's result */
    ks__after_box(sup, box);
    return;
  }
  bool own_chan = box->req.channel && !box->req.chan_given;
  if (ks_kit_ready(&sup->kit)) {
    /* Made ahead (ks__kit_refill); the init's channel, on kern's stdin
     * (which kern hands to the box), only if the box has no channel yet. */
    ks_kit_take(&sup->kit, pipes, own_chan ? chan : NULL);
    ks__kit_publish(sup);
  } else {
    for (i = 0; i < KS__BOX_PIPES; i++)
      pipes[i][0] = pipes[i][1] = -1;
    for (i = 0; i < KS__BOX_PIPES && r == 0; i++)
      r = ks_pipe_nonblocking_read(pipes[i], &err);
    if (r == 0 && own_chan)
      r = ks_channel_pair(chan, &err);
  }
  if (r == 0 && box->req.channel && box->req.chan_given) {
    chan[0] = box->req.chan[0];
    chan[1] = box->req.chan[1];
    box->req.chan_given = false;
    shared = true;
  }
  if (r == 0 && box->req.env_data != NULL)
    r = ks_envfd_create(box->req.env_data, box->req.env_len, box->req.tmpdir, &envfd, &err);

  if (r == 0) {
    memset(&plan, 0, sizeof plan);
    plan.path = box->req.path;
    plan.exec_fd = box->req.exec_fd;
    plan.argv = box->req.argv;
    plan.envp = box->req.envp;
    plan.cwd = "/";
    plan.fds[0] = chan[1] >= 0 ? chan[1] : sup->devnull;
    plan.fds[1] = pipes[KS_STDOUT][1];
    plan.fds[2] = pipes[KS_STDERR][1];
    plan.fds[KS_BOX_STARTED_FD] = pipes[2][1];
    plan.nfds = KS_BOX_STARTED_FD + 1;
    if (envfd >= 0) {
      plan.fds[KS_BOX_ENV_FD] = envfd;
      plan.nfds = KS_BOX_ENV_FD + 1;
    }
    box->start_ns = ks__now_ns();
    r = ks_proc_spawn(&plan, &box->proc, &err);
  }

  /* Our copies of the write ends must go, or we would never see EOF. */
  for (i = 0; i < KS__BOX_PIPES; i++)
    ks_close_keep_errno(pipes[i][1]);
  ks_close_keep_errno(chan[1]);

  if (r == 0) {
    for (i = 0; i < KS__BOX_PIPES; i++) {
      box->fd[i] = pipes[i][0];
      pipes[i][0] = -1;
      box->watch[i].kind = (enum ks__watch_kind) i;
      box->watch[i].owner = box;
    }
    box->watch[KS__BOX_PIPES].kind = KS__W_PIDFD;
    box->watch[KS__BOX_PIPES].owner = box;
    for (i = 0; i < KS__BOX_PIPES && r == 0; i++)
      r = ks__watch_add(sup, box->fd[i], &box->watch[i]);
    if (r == 0)
      r = ks__watch_add(sup, box->proc.pidfd, &box->watch[KS__BOX_PIPES]);
    if (r == 0 && chan[0] >= 0) {
      box->ctl = chan[0];
      chan[0] = -1;
      box->ctl_watch.kind = KS__W_CTL;
      box->ctl_watch.owner = box;
      r = ks__watch_add(sup, box->ctl, &box->ctl_watch);
      /* A parked box whose caller sends the spec itself says nothing before
       * its TAKEN, which we need only when the box ends (ks__finish_box
       * reads it then) or once a claim has taken it over (which watches
       * for it again): waking for it would only take the CPU the call's
       * workload is starting on. */
      if (r == 0 && shared && box->req.park_key != 0)
        r = ks__watch_mod(sup, box->ctl, &box->ctl_watch, 0);
    }
    if (r < 0) {
      ks_err_set(&err, -r, "epoll_ctl", NULL);
      if (box->proc.pidfd >= 0)
        (void) epoll_ctl(sup->epfd, EPOLL_CTL_DEL, box->proc.pidfd, NULL);
      ks_proc_kill_and_release(&box->proc, 0);
      for (i = 0; i < KS__BOX_PIPES; i++)
        ks__watch_close(sup, &box->fd[i]);
      ks__watch_close(sup, &box->ctl);
    }
  }

  for (i = 0; i < KS__BOX_PIPES; i++)
    ks_close_keep_errno(pipes[i][0]);
  ks_close_keep_errno(chan[0]);
  if (r < 0) {
    ks__report_spawn_failure(sup, box, &err);
    return;
  }
  ks__box_to(box, ks__box_prewarm(box) ? KS_BOX_PARKED : KS_BOX_RUNNING);
  if (box->state == KS_BOX_PARKED)
    box->deadline_ns = UINT64_MAX; /* no call: no deadline until one claims it */
  else if (box->req.kernel_key != 0)
    box->deadline_ns = UINT64_MAX; /* a kernel lives until closed; its cells have deadlines */
  else
    box->deadline_ns = box->start_ns + box->req.timeout_ns;
  ks__live_link(sup, box);
  if (box->state == KS_BOX_RUNNING && box->req.spec != NULL)
    ks__send_spec(sup, box);
}

/* Reads what one output pipe holds, up to a budget. Under the cap the bytes
 * land directly in the result buffer; past it they are dropped (spliced to
 * /dev/null without a copy when nobody wants to see them). */
/* A box that filled its 64 KiB pipe in one wakeup is a heavy writer: a
 * bigger pipe halves the wakeups (its and ours) per byte. Only such boxes
 * get one, because big pipes count against the user's pipe-user-pages
 * budget; where the kernel refuses, the pipe simply stays as it was. */
#define KS__PIPE_HEAVY (64u << 10)
#define KS__PIPE_GROWN (1u << 20)

static void ks__maybe_grow_pipe(struct ks_box *box, enum ks_stream s, size_t drained) {
  if (box->pipe_grown[s] || drained < KS__PIPE_HEAVY || box->fd[s] < 0)
    return;
  box->pipe_grown[s] = true;
  (void) fcntl(box->fd[s], F_SETPIPE_SZ, (int) KS__PIPE_GROWN);
}

size_t ks__drain_fd(struct ks_sup *sup, int *fd, struct ks_outbuf *b, bool report,
                    void (*emit)(struct ks_sup *sup, void *owner, enum ks_stream s,
                                 const char *data, size_t len),
                    void *owner, enum ks_stream s, size_t budget) {
  size_t done = 0;

  while (*fd >= 0 && done < budget) {
    ssize_t n;
    size_t room;

    if (ks_outbuf_reserve(b, KS__READ_ROOM_MIN, &room) == 0) {
      n = read(*fd, b->data + b->len, room);
      if (n > 0) {
        ks_outbuf_commit(b, (size_t) n);
        if (report)
          emit(sup, owner, s, b->data + b->len - n, (size_t) n);
      }
    } else if (!report) {
      n = splice(*fd, NULL, sup->devnull, NULL, KS__SPLICE_CHUNK, SPLICE_F_NONBLOCK);
      if (n < 0 && (errno == EINVAL || errno == ENOSYS)) /* no splice to this fd */
        n = read(*fd, sup->scratch, sizeof sup->scratch);
      if (n > 0)
        b->discarded += (uint64_t) n;
    } else {
      /* Full, or out of memory: either way keep the pipe moving. */
      n = read(*fd, sup->scratch, sizeof sup->scratch);
      if (n > 0) {
        b->discarded += (uint64_t) n;
        emit(sup, owner, s, sup->scratch, (size_t) n);
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
    ks__watch_close(sup, fd); /* EOF or a broken pipe */
  }
  return done;
}

static void ks__emit_box_output(struct ks_sup *sup, void *owner, enum ks_stream s,
                                const char *data, size_t len) {
  sup->hooks.on_output(sup->ctx, owner, s, data, len);
}

static void ks__drain_output(struct ks_sup *sup, struct ks_box *box, enum ks_stream s,
                             size_t budget) {
  size_t done = ks__drain_fd(sup, &box->fd[s], &box->res.out[s], box->req.stream[s],
                             ks__emit_box_output, box, s, budget);
  if (box->fd[s] >= 0 && done < budget)
    ks__maybe_grow_pipe(box, s, done); /* drained to EAGAIN */
}

static void ks__drain_started(struct ks_sup *sup, struct ks_box *box) {
  unsigned char buf[64];

  while (box->fd[2] >= 0) {
    ssize_t n = read(box->fd[2], buf, sizeof buf);
    if (n > 0) {
      /* kern forked its watchdog before the box, so it is there now: a
       * parked box's kern's children are pinned here, off any call's path,
       * and close() of an idle session reads no /proc to kill them. */
      if (box->state == KS_BOX_PARKED && box->res.nstarted == 0)
        ks_proc_pin_kids(&box->proc, &box->kids);
      for (ssize_t i = 0; i < n; i++) {
        if (box->res.nstarted < sizeof box->res.started)
          box->res.started[box->res.nstarted] = buf[i];
        box->res.nstarted++;
      }
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && errno == EAGAIN)
      break;
    ks__watch_close(sup, &box->fd[2]);
  }
}


/* ---- the init's channel, prewarmed boxes, tails ------------------------- */

int ks__watch_mod(struct ks_sup *sup, int fd, struct ks__watch *w, uint32_t events) {
  struct epoll_event ev = {.events = events, .data.ptr = w};
  return epoll_ctl(sup->epfd, EPOLL_CTL_MOD, fd, &ev) < 0 ? -errno : 0;
}

/* Writes what is left of the spec frame; EPOLLOUT carries on from there. */
static void ks__send_spec(struct ks_sup *sup, struct ks_box *box) {
  while (box->ctl >= 0 && box->req.spec != NULL && box->spec_sent < box->req.spec_len) {
    ssize_t n = send(box->ctl, box->req.spec + box->spec_sent, box->req.spec_len - box->spec_sent,
                     MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      box->spec_sent += (size_t) n;
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && errno == EAGAIN) {
      if (!box->ctl_out)
        (void) ks__watch_mod(sup, box->ctl, &box->ctl_watch, EPOLLIN | EPOLLOUT);
      box->ctl_out = true;
      return;
    }
    break; /* the init is gone: kern's exit tells the rest */
  }
  if (box->ctl_out && box->ctl >= 0)
    (void) ks__watch_mod(sup, box->ctl, &box->ctl_watch, EPOLLIN);
  box->ctl_out = false;
  free(box->req.spec);
  box->req.spec = NULL;
}

/* The workload's own rusage (RUSAGE_CHILDREN in the box), not kern's. */
static void ks__usage_from_report(struct ks_box *box, const struct ks_init_report *rep) {
  memset(&box->res.usage, 0, sizeof box->res.usage);
  box->res.usage.ru_utime.tv_sec = (time_t) (rep->utime_us / 1000000u);
  box->res.usage.ru_utime.tv_usec = (suseconds_t) (rep->utime_us % 1000000u);
  box->res.usage.ru_stime.tv_sec = (time_t) (rep->stime_us / 1000000u);
  box->res.usage.ru_stime.tv_usec = (suseconds_t) (rep->stime_us % 1000000u);
  box->res.usage.ru_maxrss = (long) rep->maxrss_kb;
}

static struct ks__tail *ks__tail_adopt(struct ks_sup *sup, struct ks_box *box, uint64_t now);
static void ks__tail_arm(struct ks_sup *sup, struct ks__tail *t);

/* The init reported: every process of the box is dead, so every byte they
 * wrote is in our pipes. Settle now, and leave kern's teardown to a tail.
 * Not for a SIGKILLed workload, whose OOM attribution needs kern's cap byte
 * at its exit, nor when the caller has no cap byte to report. */
static void ks__settle_early(struct ks_sup *sup, struct ks_box *box, uint64_t now) {
  const struct ks_init_report *rep = box->final_done ? &box->final_rep : &box->chan.rep;
  int code = ks_chan_exit_code(rep);
  struct ks__tail *tail;

  ks__ip_drain(sup, box, now); /* results and the TAKEN sent before the exit */
  ks__ip_box_end(sup, box, "the kernel's interpreter exited");
  ks__drain_output(sup, box, KS_STDOUT, KS__READ_BUDGET);
  ks__drain_output(sup, box, KS_STDERR, KS__READ_BUDGET);
  box->res.status_known = true;
  box->res.wait_status = (code & 0xff) << 8; /* as kern's exit status */
  box->res.started[0] = 0x01;
  box->res.started[1] = (unsigned char) box->req.early_cap;
  box->res.nstarted = 2;
  ks__usage_from_report(box, rep);
  box->res.duration_ns = now - box->start_ns;
  box->res.settled_early = true;
  if (box->ctl >= 0)
    box->release = fcntl(box->ctl, F_DUPFD_CLOEXEC, 3);
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
      if (box->pending_fd[0] < 0)
        box->pending_fd[0] = fd;
      else if (box->pending_fd[1] < 0)
        box->pending_fd[1] = fd;
      else
        ks_close_keep_errno(fd);
    }
  }
}

/* What one frame of the channel completed. */
static void ks__on_chan_event(struct ks_sup *sup, struct ks_box *box, enum ks_chan_event ev) {
  int fd;
  switch (ev) {
  case KS_CHAN_TAKEN:
    box->res.taken = true;
    break;
  case KS_CHAN_ATTACH:
    fd = box->pending_fd[0];
    box->pending_fd[0] = -1;
    if (box->workload_pidfd < 0) {
      box->workload_pidfd = box->pending_fd[1];
      box->pending_fd[1] = -1;
    }
    if (fd >= 0)
      ks__ip_attach(sup, box, fd);
    break;
  default:
    break;
  }
}

static void ks__on_report(struct ks_sup *sup, struct ks_box *box);

static void ks__on_ctl(struct ks_sup *sup, struct ks_box *box, uint32_t events, uint64_t now) {
  unsigned char buf[256];
  union {
    struct cmsghdr align;
    char buf[CMSG_SPACE(4 * sizeof(int))];
  } control;
  const struct ks_init_report *rep = &box->chan.rep;

  if ((events & EPOLLOUT) && box->req.spec != NULL)
    ks__send_spec(sup, box);
  while (box->ctl >= 0) {
    struct iovec iov = {.iov_base = buf, .iov_len = sizeof buf};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
                         .msg_controllen = sizeof control.buf};
    ssize_t n = recvmsg(box->ctl, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (n > 0) {
      size_t off = 0;
      ks__take_fds(box, &msg);
      while (off < (size_t) n) {
        enum ks_chan_event ev;
        off += ks_chan_feed(&box->chan, buf + off, (size_t) n - off, &ev);
        ks__on_chan_event(sup, box, ev);
      }
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && errno == EAGAIN)
      break;
    ks__watch_close(sup, &box->ctl); /* EOF: the init has exited */
  }
  (void) now;
  if (box->chan.state != KS_CHAN_DONE || box->res.reported)
    return;
  box->res.reported = true;
  box->res.report_end = (int) rep->end;
  box->res.report_value = rep->value;
  ks__on_report(sup, box);
}

/* The init's report is in: settle at it, or close the channel so that the
 * init exits and we wait for kern's. A parked box whose init took a spec
 * the caller sent itself keeps it for the claim on its way. */
static void ks__on_report(struct ks_sup *sup, struct ks_box *box) {
  const struct ks_init_report *rep = &box->chan.rep;

  if (ks__box_prewarm(box) && box->res.taken)
    return;
  if (box->state == KS_BOX_RUNNING && box->req.early_cap >= 0 &&
      !(rep->end == KS_INIT_SIGNALED && rep->value == SIGKILL))
    ks__box_to(box, KS_BOX_SETTLING); /* at the sweep, after the batch: later
                                        * events of it may name this box */
  else
    ks__watch_close(sup, &box->ctl); /* we wait for kern's exit: the init may go */
}

static struct ks_box *ks__find_parked(struct ks_sup *sup, uint64_t key) {
  for (struct ks_box *b = sup->live; b != NULL; b = b->next) {
    if (ks__box_prewarm(b) && b->req.park_key == key)
      return b;
  }
  return NULL;
}

/* Moves a parked box's kern into the claiming call's box, which runs from
 * now: its deadline, duration and output count from the call. */
static bool ks__adopt_parked(struct ks_sup *sup, struct ks_box *box) {
  struct ks_box *p = ks__find_parked(sup, box->req.claim_key);
  uint64_t now;
  char **stop;

  if (p == NULL || p->state != KS_BOX_PARKED || p->ctl < 0 || ks__box_cancelled(sup, p))
    return false;
  now = ks__now_ns();
  ks__box_to(box, KS_BOX_RUNNING);
  /* The call's message first: the box starts it while we move the watches. */
  box->ctl = p->ctl;
  p->ctl = -1;
  box->ctl_out = false;
  box->ctl_watch.kind = KS__W_CTL;
  box->ctl_watch.owner = box;
  ks__send_spec(sup, box);
  ks__ip_adopt(sup, box, p); /* a Python box's RUN */
  if (!box->ctl_out && box->ctl >= 0)
    (void) ks__watch_mod(sup, box->ctl, &box->ctl_watch, EPOLLIN);
  box->proc = p->proc;
  p->proc = (struct ks_proc) KS_PROC_INIT;
  box->kids = p->kids;
  p->kids.n = 0;
  for (int i = 0; i < KS__BOX_PIPES; i++) {
    box->fd[i] = p->fd[i];
    p->fd[i] = -1;
    box->watch[i].kind = (enum ks__watch_kind) i;
    box->watch[i].owner = box;
    if (box->fd[i] >= 0)
      (void) ks__watch_mod(sup, box->fd[i], &box->watch[i], EPOLLIN);
  }
  box->pipe_grown[0] = p->pipe_grown[0];
  box->pipe_grown[1] = p->pipe_grown[1];
  box->watch[KS__BOX_PIPES].kind = KS__W_PIDFD;
  box->watch[KS__BOX_PIPES].owner = box;
  (void) ks__watch_mod(sup, box->proc.pidfd, &box->watch[KS__BOX_PIPES], EPOLLIN);
  box->chan = p->chan;
  /* A spec the caller sent itself may have been taken, even answered,
   * while the box was still parked. */
  box->res.taken = p->res.taken;
  box->res.reported = p->res.reported;
  box->res.report_end = p->res.report_end;
  box->res.report_value = p->res.report_value;
  for (int i = 0; i < 2; i++) {
    box->pending_fd[i] = p->pending_fd[i];
    p->pending_fd[i] = -1;
  }
  box->workload_pidfd = p->workload_pidfd;
  p->workload_pidfd = -1;
  /* What kern printed while the box started belongs to this call. */
  for (int s = 0; s < 2; s++) {
    struct ks_outbuf mine = box->res.out[s];
    struct ks_outbuf *b = &box->res.out[s];
    *b = p->res.out[s];
    p->res.out[s] = mine;
    b->cap = mine.cap;
    if (b->len > b->cap) {
      b->discarded += b->len - b->cap;
      b->len = b->cap;
    }
    if (box->req.stream[s] && b->len > 0)
      sup->hooks.on_output(sup->ctx, box, (enum ks_stream) s, b->data, b->len);
  }
  memcpy(box->res.started, p->res.started, sizeof box->res.started);
  box->res.nstarted = p->res.nstarted;
  /* `kern stop` must name the box that runs, with the environment its kern
   * had (a claim whose caller sent its argv brings neither). */
  stop = box->req.stop_argv;
  box->req.stop_argv = p->req.stop_argv;
  p->req.stop_argv = stop;
  stop = box->req.envp;
  box->req.envp = p->req.envp;
  p->req.envp = stop;
  box->start_ns = now;
  box->deadline_ns = box->req.kernel_key != 0 ? UINT64_MAX : now + box->req.timeout_ns;
  box->res.prewarmed = true;
  ks__live_unlink(sup, p);
  ks__live_link(sup, box);
  /* The parked run settles with nothing of its own: a kernel's now, a
   * call's with the call (waking the JS thread while the call runs cost
   * 1-2 ms in a third of prewarmed calls here: it shares two CPUs with the
   * box). */
  ks__box_to(p, KS_BOX_CLAIMED);
  p->res.claimed = true;
  p->res.status_known = false;
  if (box->req.kernel_key != 0)
    ks__after_box(sup, p);
  else
    box->claimed = p;
  if (box->res.reported)
    ks__on_report(sup, box);
  return true;
}

static void ks__tail_link(struct ks_sup *sup, struct ks__tail *t) {
  t->prev = NULL;
  t->next = sup->tails;
  if (sup->tails != NULL)
    sup->tails->prev = t;
  sup->tails = t;
  atomic_fetch_add(&sup->tail_count, 1);
}

static void ks__tail_free(struct ks_sup *sup, struct ks__tail *t) {
  if (t->prev != NULL)
    t->prev->next = t->next;
  else
    sup->tails = t->next;
  if (t->next != NULL)
    t->next->prev = t->prev;
  for (int i = 0; i < KS__TAIL_FDS; i++)
    ks__watch_close(sup, &t->fd[i]);
  if (t->exec_fd > 2)
    ks_close_keep_errno(t->exec_fd);
  free(t->path);
  ks__free_strv(t->stop_argv);
  ks__free_strv(t->envp);
  free(t);
  atomic_fetch_sub(&sup->tail_count, 1);
}

/* Moves kern's process and descriptors out of a box whose call settles at
 * the report into a tail (NULL: no memory, kern killed instead); arm it
 * with ks__tail_arm. */
static struct ks__tail *ks__tail_adopt(struct ks_sup *sup, struct ks_box *box, uint64_t now) {
  struct ks__tail *t = calloc(1, sizeof *t);
  char *path = t != NULL ? strdup(box->req.path) : NULL;

  if (path == NULL) {
    /* No memory to wait for it: end it as a timed-out box is ended. */
    free(t);
    (void) ks_proc_signal_group(&box->proc, SIGKILL);
    (void) epoll_ctl(sup->epfd, EPOLL_CTL_DEL, box->proc.pidfd, NULL);
    ks_proc_kill_and_release(&box->proc, 0);
    for (int i = 0; i < KS__BOX_PIPES; i++)
      ks__watch_close(sup, &box->fd[i]);
    ks__watch_close(sup, &box->ctl);
    if (box->req.stop_argv != NULL)
      ks__run_stop(sup, box->req.path, box->req.exec_fd, box->req.stop_argv, box->req.envp);
    return NULL;
  }
  t->path = path;
  t->proc = box->proc;
  box->proc = (struct ks_proc) KS_PROC_INIT;
  ks_proc_kids_close(&box->kids); /* kern ends its watchdog itself at its exit */
  for (int i = 0; i < KS__BOX_PIPES; i++) {
    t->fd[i] = box->fd[i];
    box->fd[i] = -1;
  }
  t->fd[KS__BOX_PIPES] = box->ctl;
  box->ctl = -1;
  t->deadline_ns = now + KS__TAIL_GRACE_NS;
  t->exec_fd = box->req.exec_fd;
  box->req.exec_fd = 0;
  t->stop_argv = box->req.stop_argv;
  box->req.stop_argv = NULL;
  t->envp = box->req.envp;
  box->req.envp = NULL;
  ks__tail_link(sup, t);
  return t;
}

/* Points the tail's watches at it. Until then they still name the box it
 * came from: only for the rest of a sweep, with no epoll_wait before this,
 * so the call can be handed back first. */
static void ks__tail_arm(struct ks_sup *sup, struct ks__tail *t) {
  if (t == NULL)
    return;
  for (int i = 0; i < KS__TAIL_FDS; i++) {
    t->watch[i].kind = KS__W_TAIL_FD;
    t->watch[i].owner = t;
    if (t->fd[i] >= 0)
      (void) ks__watch_mod(sup, t->fd[i], &t->watch[i], EPOLLIN);
  }
  t->pid_watch.kind = KS__W_TAIL_PIDFD;
  t->pid_watch.owner = t;
  (void) ks__watch_mod(sup, t->proc.pidfd, &t->pid_watch, EPOLLIN);
}

/* Whatever kern or a dying box still writes goes nowhere; EOF closes. */
static void ks__tail_drain(struct ks_sup *sup, struct ks__watch *w) {
  struct ks__tail *t = w->owner;
  int *fd = &t->fd[w - t->watch];
  while (*fd >= 0) {
    ssize_t n = read(*fd, sup->scratch, sizeof sup->scratch);
    if (n > 0 || (n < 0 && errno == EINTR))
      continue;
    if (n < 0 && errno == EAGAIN)
      break;
    ks__watch_close(sup, fd);
  }
}

static void ks__tail_on_exit(struct ks_sup *sup, struct ks__tail *t) {
  int status;
  struct rusage ru;
  int r;

  (void) ks_proc_signal_group(&t->proc, SIGKILL); /* as ks__on_kern_exit: its group first */
  r = ks_proc_try_reap(&t->proc, &status, &ru);
  if (r == 0)
    return;
  (void) epoll_ctl(sup->epfd, EPOLL_CTL_DEL, t->proc.pidfd, NULL);
  ks_proc_close(&t->proc);
  t->reaped = true;
}

/* kern's teardown outlived the grace: killed, reaped as a helper, stopped. */
static void ks__tail_expire(struct ks_sup *sup, struct ks__tail *t, uint64_t now) {
  ks_proc_kill_tree(&t->proc, NULL);
  (void) epoll_ctl(sup->epfd, EPOLL_CTL_DEL, t->proc.pidfd, NULL);
  ks__aux_adopt(sup, &t->proc, now + KS__KILL_GRACE_NS);
  if (t->stop_argv != NULL)
    ks__run_stop(sup, t->path, t->exec_fd, t->stop_argv, t->envp);
  ks__tail_free(sup, t);
}

static void ks__on_kern_exit(struct ks_sup *sup, struct ks_box *box, uint64_t now) {
  int status = 0;
  int r;

  if (box->state == KS_BOX_DRAINING)
    return;
  /* kern is a zombie now, so its group id is still pinned: take down
   * whatever it left in its group (a helper, a holder of our pipes) before
   * the reap frees the id. */
  (void) ks_proc_signal_group(&box->proc, SIGKILL);
  r = ks_proc_try_reap(&box->proc, &status, &box->res.usage);
  if (r == 0)
    return; /* not reapable yet; the pidfd will report again */
  box->res.status_known = (r == 1);
  box->res.wait_status = status;
  ks__box_to(box, KS_BOX_DRAINING);
  box->res.duration_ns = now - box->start_ns;
  box->deadline_ns = now + KS__DRAIN_GRACE_NS;
  (void) epoll_ctl(sup->epfd, EPOLL_CTL_DEL, box->proc.pidfd, NULL);
  ks_proc_close(&box->proc);
}

bool ks__key_cancelled(struct ks_sup *sup, uint64_t key) {
  bool found = false;
  if (key == 0)
    return false;
  pthread_mutex_lock(&sup->lock);
  for (size_t i = 0; i < sup->ncancelled && !found; i++)
    found = sup->cancelled[i] == key;
  pthread_mutex_unlock(&sup->lock);
  return found;
}

/* Whether the box's session group or its own call key was cancelled. */
static bool ks__box_cancelled(struct ks_sup *sup, const struct ks_box *box) {
  uint64_t group = box->req.group;
  uint64_t call = box->req.call;
  /* a parked box answers to its park key too; a call's box that claimed one,
   * to the call's keys */
  uint64_t park = box->state == KS_BOX_PARKED ? box->req.park_key : 0;
  bool found = false;
  if (group == 0 && call == 0 && park == 0)
    return false;
  pthread_mutex_lock(&sup->lock);
  for (size_t i = 0; i < sup->ncancelled && !found; i++)
    found = (group != 0 && sup->cancelled[i] == group) || (call != 0 && sup->cancelled[i] == call) ||
            (park != 0 && sup->cancelled[i] == park);
  pthread_mutex_unlock(&sup->lock);
  return found;
}

/* Our deadline fired, or the box's session was closed or its call aborted:
 * kern goes now. */
void ks__kill_box(struct ks_sup *sup, struct ks_box *box, uint64_t now, bool timeout) {
  ks__box_to(box, KS_BOX_KILLED);
  if (timeout)
    box->res.timed_out = true;
  else
    box->res.cancelled = true;
  box->deadline_ns = now + KS__KILL_GRACE_NS;
  /* Group first, while kern (unreaped) still pins the group id. kern's
   * die-with-parent chain takes the box down with it; its watchdog, in a
   * session of its own, is killed with it (ks_proc_kill_tree). */
  ks_proc_kill_tree(&box->proc, &box->kids);
}

/* kern outlived its SIGKILL by the grace period: it is frozen, or stuck in
 * an uninterruptible sleep (a hung FUSE or NFS mount), and ends only when
 * the kernel lets it. Its call settles now; a thread of its own waits for
 * it, so this one never blocks on it. */
static void ks__abandon_kern(struct ks_sup *sup, struct ks_box *box, uint64_t now) {
  (void) epoll_ctl(sup->epfd, EPOLL_CTL_DEL, box->proc.pidfd, NULL);
  ks__box_to(box, KS_BOX_DRAINING);
  box->res.status_known = false;
  box->res.duration_ns = now - box->start_ns;
  box->deadline_ns = now;
  ks_proc_kill_and_release(&box->proc, 0);
}

static void ks__finish_box(struct ks_sup *sup, struct ks_box *box, struct ks__stop **stops) {
  ks_proc_kids_close(&box->kids); /* kern has exited: nothing of it to kill */
  ks__ip_drain(sup, box, ks__now_ns());
  ks__ip_box_end(sup, box,
                 ks__box_was_killed(box) ? "the kernel's box was killed" : "the kernel's box ended");
  /* Whatever is still buffered in the pipes was written before the end. */
  ks__drain_output(sup, box, KS_STDOUT, KS__READ_BUDGET);
  ks__drain_output(sup, box, KS_STDERR, KS__READ_BUDGET);
  ks__drain_started(sup, box);
  if (box->ctl >= 0)
    ks__on_ctl(sup, box, EPOLLIN, ks__now_ns()); /* a report still unread */
  for (int i = 0; i < KS__BOX_PIPES; i++)
    ks__watch_close(sup, &box->fd[i]);
  ks__watch_close(sup, &box->ctl);
  if (box->final_done) {
    /* kern ended before the sweep could settle at the final DONE: the exit
     * is DONE's (the interpreter died of our SIGKILL after it). */
    box->res.status_known = true;
    box->res.wait_status = (ks_chan_exit_code(&box->final_rep) & 0xff) << 8;
    ks__usage_from_report(box, &box->final_rep);
  } else if (box->res.reported) {
    ks__usage_from_report(box, &box->chan.rep);
  }
  ks__live_unlink(sup, box);
  ks__queue_stop(sup, box, stops);
  ks__after_box(sup, box);
}

static bool ks__box_quiet(const struct ks_box *box) {
  return box->fd[0] < 0 && box->fd[1] < 0 && box->fd[2] < 0;
}

/* Deadlines, and boxes ready to hand back. Runs after each epoll batch. */
static void ks__sweep(struct ks_sup *sup, uint64_t now) {
  struct ks_box *box = sup->live;
  struct ks__aux *a = sup->aux;
  struct ks__stop *stops = NULL;
  bool cancels;

  pthread_mutex_lock(&sup->lock);
  cancels = sup->ncancelled > 0;
  /* Recycled prewarm boxes: killed if still parked; a key whose box has
   * gone (claimed, or died) leaves nothing behind. */
  for (size_t i = 0; i < sup->ndrops; i++) {
    struct ks_box *p = ks__find_parked(sup, sup->drops[i]);
    if (p != NULL && p->state == KS_BOX_PARKED)
      ks__kill_box(sup, p, now, false);
  }
  sup->ndrops = 0;
  pthread_mutex_unlock(&sup->lock);

  while (box != NULL) {
    struct ks_box *next = box->next;
    if (box->state == KS_BOX_SETTLING) {
      ks__settle_early(sup, box, now);
      box = next;
      continue;
    }
    if (ks__box_alive(box) && now >= box->deadline_ns)
      ks__kill_box(sup, box, now, true);
    else if (ks__box_alive(box) && cancels && ks__box_cancelled(sup, box))
      ks__kill_box(sup, box, now, false);
    else if (box->state == KS_BOX_KILLED && now >= box->deadline_ns)
      ks__abandon_kern(sup, box, now);
    if (box->state == KS_BOX_DRAINING && (ks__box_quiet(box) || now >= box->deadline_ns))
      ks__finish_box(sup, box, &stops);
    box = next;
  }
  ks__run_stops(sup, stops);
  ks__cells_sweep(sup, now);
  for (struct ks__tail *t = sup->tails, *next; t != NULL; t = next) {
    next = t->next;
    if (t->reaped)
      ks__tail_free(sup, t);
    else if (now >= t->deadline_ns)
      ks__tail_expire(sup, t, now);
  }
  while (a != NULL) {
    struct ks__aux *next = a->next;
    if (now >= a->deadline_ns)
      ks__aux_release(sup, a, 0);
    a = next;
  }
}

static int ks__next_timeout_ms(struct ks_sup *sup, uint64_t now) {
  uint64_t next = UINT64_MAX;
  uint64_t wait_ns;

  for (struct ks_box *b = sup->live; b != NULL; b = b->next) {
    if (b->deadline_ns < next)
      next = b->deadline_ns;
  }
  for (struct ks__aux *a = sup->aux; a != NULL; a = a->next) {
    if (a->deadline_ns < next)
      next = a->deadline_ns;
  }
  for (struct ks__tail *t = sup->tails; t != NULL; t = t->next) {
    if (t->deadline_ns < next)
      next = t->deadline_ns;
  }
  {
    uint64_t c = ks__cells_next_deadline(sup);
    if (c < next)
      next = c;
  }
  if (next == UINT64_MAX)
    return -1;
  if (next <= now)
    return 0;
  wait_ns = next - now;
  /* Round up: waking early would only cost another turn of the loop. */
  if (wait_ns / KS__MS >= (uint64_t) INT32_MAX)
    return INT32_MAX;
  return (int) ((wait_ns + KS__MS - 1) / KS__MS);
}

static void ks__dispatch(struct ks_sup *sup, struct ks__watch *w, uint32_t events, uint64_t now) {
  struct ks_box *box = w->owner;

  switch (w->kind) {
  case KS__W_STDOUT:
  case KS__W_STDERR:
    ks__drain_output(sup, box, (enum ks_stream) w->kind, KS__READ_BUDGET);
    break;
  case KS__W_STARTED:
    ks__drain_started(sup, box);
    break;
  case KS__W_PIDFD:
    ks__on_kern_exit(sup, box, now);
    break;
  case KS__W_AUX:
    ks__aux_on_exit(sup, w->owner);
    break;
  case KS__W_CTL:
    ks__on_ctl(sup, box, events, now);
    break;
  case KS__W_TAIL_FD:
    ks__tail_drain(sup, w);
    break;
  case KS__W_TAIL_PIDFD:
    ks__tail_on_exit(sup, w->owner);
    break;
  case KS__W_IP:
    ks__ip_on_event(sup, box, events, now);
    break;
  case KS__W_CELL_OUT:
  case KS__W_CELL_ERR:
    ks__cell_on_output(sup, w);
    break;
  case KS__W_STRAY:
    ks__stray_drain(sup, w);
    break;
  case KS__W_WAKE:
    break; /* read before the lists were taken (ks__take_wakeup) */
  }
}

/* Reads the wakeup counter, if this batch has it. It must be read before
 * the submission lists are taken, never after: a submission's wakeup that
 * came between the take and the read would be read with the batch's, and
 * its cell would wait for whatever woke the thread next (a kernel's start
 * on a quiet prewarmed box waited until the next call of the process, two
 * minutes once). Read first, a submission after it leaves the counter set,
 * and the next epoll_wait returns at once. */
static void ks__take_wakeup(struct ks_sup *sup, const struct epoll_event *events, int n) {
  uint64_t v;
  for (int i = 0; i < n; i++) {
    if (events[i].data.ptr != &sup->wake_watch)
      continue;
    while (read(sup->wakefd, &v, sizeof v) < 0 && errno == EINTR) {
    }
    return;
  }
}

/* Milliseconds from now until end, 0 once it has passed. */
static int ks__ms_until(uint64_t end) {
  uint64_t now = ks__now_ns();
  return now >= end ? 0 : (int) ((end - now + KS__MS - 1) / KS__MS);
}

/* The next cold box's descriptors, made while this thread has nothing to
 * do (its boxes are starting): a spawn then only takes them. A failure
 * leaves the kit empty, and the spawn makes its own and reports the error;
 * the kit is tried again only after KS__KIT_RETRY_NS, not on every wakeup
 * while the process is out of descriptors. */
#define KS__KIT_RETRY_NS (100 * KS__MS)

static void ks__kit_publish(struct ks_sup *sup) {
  int fds[KS_KIT_FDS];

  ks_kit_fds(&sup->kit, fds);
  for (int i = 0; i < KS_KIT_FDS; i++)
    atomic_store(&sup->kit_fds[i], fds[i]);
}

static void ks__kit_refill(struct ks_sup *sup, uint64_t now) {
  struct ks_err err;

  if (!ks_kit_ready(&sup->kit) && now >= sup->kit_retry_ns) {
    if (ks_kit_make(&sup->kit, &err) < 0)
      sup->kit_retry_ns = now + KS__KIT_RETRY_NS;
    ks__kit_publish(sup);
  }
}

static void ks__teardown(struct ks_sup *sup, struct ks_box *pending) {
  uint64_t budget_end;

  ks_kit_close(&sup->kit);
  ks__kit_publish(sup);
  while (pending != NULL) {
    struct ks_box *next = pending->next;
    struct ks_err err;
    if (pending->forget != 0) {
      free(pending);
    } else {
      ks_err_set(&err, ECANCELED, "spawn", NULL);
      ks__report_spawn_failure(sup, pending, &err);
    }
    pending = next;
  }
  /* Every kern and helper is killed first, then each is reaped within one
   * shared budget; any SIGKILL cannot end by then is waited for by a thread
   * of its own, so a frozen kern never holds up process exit or a Worker's
   * end. */
  for (struct ks_box *box = sup->live; box != NULL; box = box->next) {
    if (box->state != KS_BOX_DRAINING)
      ks_proc_kill_tree(&box->proc, &box->kids);
  }
  for (struct ks__aux *a = sup->aux; a != NULL; a = a->next)
    ks_proc_kill_tree(&a->proc, NULL);
  for (struct ks__tail *t = sup->tails; t != NULL; t = t->next)
    ks_proc_kill_tree(&t->proc, NULL);
  budget_end = ks__now_ns() + KS__TEARDOWN_WAIT_NS;
  while (sup->live != NULL) {
    struct ks_box *box = sup->live;
    if (box->state != KS_BOX_DRAINING) {
      (void) epoll_ctl(sup->epfd, EPOLL_CTL_DEL, box->proc.pidfd, NULL);
      ks_proc_kill_and_release(&box->proc, ks__ms_until(budget_end));
      ks__box_to(box, KS_BOX_DRAINING);
      box->res.status_known = false;
    }
    for (int i = 0; i < KS__BOX_PIPES; i++)
      ks__watch_close(sup, &box->fd[i]);
    ks__watch_close(sup, &box->ctl);
    ks__ip_box_end(sup, box, "the engine is shutting down");
    ks__live_unlink(sup, box);
    ks__after_box(sup, box);
  }
  ks__cells_flush(sup);
  while (sup->tails != NULL) {
    struct ks__tail *t = sup->tails;
    if (t->proc.pidfd >= 0)
      (void) epoll_ctl(sup->epfd, EPOLL_CTL_DEL, t->proc.pidfd, NULL);
    ks_proc_kill_and_release(&t->proc, ks__ms_until(budget_end));
    ks__tail_free(sup, t);
  }
  while (sup->aux != NULL)
    ks__aux_release(sup, sup->aux, ks__ms_until(budget_end));
}

/* This thread is the parent of every kern it spawns, and the kernel asks
 * the parent thread's mask whether the SIGCHLD of a child's exit is
 * ignored. Blocked here, it never is: it was queued for the process and
 * woke the JS thread (the one thread that takes it) to drop it, once per
 * box, while the caller's next call started (ftrace: complete_signal <-
 * do_notify_parent <- do_exit of kern). Unblocked, the default disposition
 * drops it where it is made. A program that handles SIGCHLD (Node's
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
  struct epoll_event events[KS__MAX_EVENTS];

  (void) pthread_setname_np(pthread_self(), "ks-supervisor");
  ks__accept_sigchld();
  for (;;) {
    struct ks_box *pending;
    struct ks_cell *cells;
    bool stopping;
    uint64_t now = ks__now_ns();
    int n = epoll_wait(sup->epfd, events, KS__MAX_EVENTS, ks__next_timeout_ms(sup, now));

    now = ks__now_ns();
    ks__take_wakeup(sup, events, n);
    pthread_mutex_lock(&sup->lock);
    cells = sup->cells_head;
    sup->cells_head = sup->cells_tail = NULL;
    pthread_mutex_unlock(&sup->lock);
#ifdef KS_FAILPOINTS
    if (sup->failpoint_take_ms > 0)
      (void) usleep(sup->failpoint_take_ms * 1000u);
#endif
    /* A cell the submitting thread sent itself was queued before it was
     * sent: one whose answer is in this batch is taken before the answer
     * is read. (It names a kernel that is up already; every other cell
     * waits for the boxes submitted with it, spawned after the batch.) */
    cells = ks__cells_take_present(sup, cells);
    for (int i = 0; i < n; i++)
      ks__dispatch(sup, events[i].data.ptr, events[i].events, now);

    pthread_mutex_lock(&sup->lock);
    pending = sup->pending_head;
    sup->pending_head = sup->pending_tail = NULL;
    stopping = sup->stopping;
    pthread_mutex_unlock(&sup->lock);

    if (stopping) {
      ks__cells_cancel(sup, cells);
      ks__teardown(sup, pending);
      return NULL;
    }
    struct ks_box *forgets = NULL;
    while (pending != NULL) {
      struct ks_box *next = pending->next;
      pending->next = NULL;
      if (pending->forget != 0) {
        pending->next = forgets;
        forgets = pending;
      } else {
        ks__spawn_box(sup, pending);
      }
      pending = next;
    }
    /* After the boxes: a kernel's box is submitted before its first cell. */
    ks__cells_take(sup, cells, ks__now_ns());
    ks__sweep(sup, ks__now_ns());
    ks__kit_refill(sup, ks__now_ns());
    /* Only after the sweep: it is what kills the group's live boxes. */
    while (forgets != NULL) {
      struct ks_box *next = forgets->next;
      ks__forget_now(sup, forgets);
      forgets = next;
    }
  }
}

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
  sup->epfd = sup->wakefd = sup->devnull = -1;
  sup->wake_watch.kind = KS__W_WAKE;
  sup->wake_watch.owner = NULL;
  ks_kit_init(&sup->kit);
  for (int i = 0; i < KS_KIT_FDS; i++)
    atomic_init(&sup->kit_fds[i], -1);
#ifdef KS_FAILPOINTS
  {
    const char *ms = getenv("KS_FAILPOINT_SUP_TAKE_MS"); /* read here, on the JS thread */
    unsigned long v = ms != NULL ? strtoul(ms, NULL, 10) : 0;
    sup->failpoint_take_ms = v > 10000 ? 10000 : (unsigned) v;
  }
#endif
  pthread_mutex_init(&sup->lock, NULL);
  pthread_mutex_init(&sup->kernels_lock, NULL);
  pthread_mutex_init(&sup->scanner.lock, NULL);
  pthread_cond_init(&sup->scanner.cond, NULL);

  sup->epfd = epoll_create1(EPOLL_CLOEXEC);
  if (sup->epfd < 0) {
    r = ks_err_set(err, errno, "epoll_create1", NULL);
    goto fail;
  }
  sup->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (sup->wakefd < 0) {
    r = ks_err_set(err, errno, "eventfd", NULL);
    goto fail;
  }
  sup->devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (sup->devnull < 0) {
    r = ks_err_set(err, errno, "open", "/dev/null");
    goto fail;
  }
  r = ks__watch_add(sup, sup->wakefd, &sup->wake_watch);
  if (r < 0) {
    r = ks_err_set(err, -r, "epoll_ctl", NULL);
    goto fail;
  }

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
    goto fail;
  }
  *ret_sup = sup;
  return 0;

fail:
  ks_close_keep_errno(sup->epfd);
  ks_close_keep_errno(sup->wakefd);
  ks_close_keep_errno(sup->devnull);
  pthread_mutex_destroy(&sup->lock);
  pthread_mutex_destroy(&sup->kernels_lock);
  pthread_mutex_destroy(&sup->scanner.lock);
  pthread_cond_destroy(&sup->scanner.cond);
  free(sup);
  return r;
}

void ks__wake(struct ks_sup *sup) {
  uint64_t one = 1;
  /* EAGAIN means the counter is already nonzero: the thread will wake. */
  while (write(sup->wakefd, &one, sizeof one) < 0 && errno == EINTR) {
  }
}

/* Queues a box for the supervisor thread to spawn. After shutdown began it
 * is reported as cancelled. */
static void ks__queue_spawn(struct ks_sup *sup, struct ks_box *box) {
  pthread_mutex_lock(&sup->lock);
  if (sup->stopping) {
    pthread_mutex_unlock(&sup->lock);
    box->res.spawn_errnum = ECANCELED;
    box->res.spawn_syscall = "spawn";
    sup->hooks.on_done(sup->ctx, box);
    return;
  }
  box->next = NULL;
  if (sup->pending_tail != NULL)
    sup->pending_tail->next = box;
  else
    sup->pending_head = box;
  sup->pending_tail = box;
  pthread_mutex_unlock(&sup->lock);
  ks__wake(sup);
}

int ks_sup_submit_cell(struct ks_sup *sup, struct ks_cell *cell) {
  int r = ks__queue_cell(sup, cell);
  if (r == 0)
    ks__wake(sup);
  return r;
}

int ks__queue_cell(struct ks_sup *sup, struct ks_cell *cell) {
  pthread_mutex_lock(&sup->lock);
  if (sup->stopping) {
    pthread_mutex_unlock(&sup->lock);
    return -ECANCELED;
  }
  cell->next = NULL;
  if (sup->cells_tail != NULL)
    sup->cells_tail->next = cell;
  else
    sup->cells_head = cell;
  sup->cells_tail = cell;
  pthread_mutex_unlock(&sup->lock);
  return 0;
}

int ks_sup_submit(struct ks_sup *sup, struct ks_box *box) {
  pthread_mutex_lock(&sup->lock);
  if (sup->stopping) {
    pthread_mutex_unlock(&sup->lock);
    return -ECANCELED;
  }
  pthread_mutex_unlock(&sup->lock);
  /* From here on the box is ours: a shutdown racing with this reports it
   * through on_done as cancelled. */
  if (box->wcall_open) {
    ks__queue_spawn(sup, box); /* begun by the caller (ks_box_request.begun) */
  } else if (box->req.watch != NULL && ks_ws_watch_try_begin(box->req.watch, &box->wcall)) {
    box->wcall_open = true; /* begun here, at no cost: straight to the spawn */
    ks__queue_spawn(sup, box);
  } else if (box->req.watch != NULL) {
    ks__scanner_push(sup, box, KS__SCAN_BEFORE);
  } else {
    ks__queue_spawn(sup, box);
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

  pthread_mutex_lock(&sup->lock);
  sup->stopping = true;
  pthread_mutex_unlock(&sup->lock);
  ks__wake(sup);
  (void) pthread_join(sup->thread, NULL);
  ks_close_keep_errno(sup->epfd);
  ks_close_keep_errno(sup->wakefd);
  ks_close_keep_errno(sup->devnull);
  pthread_mutex_destroy(&sup->lock);
  pthread_mutex_destroy(&sup->kernels_lock);
  pthread_mutex_destroy(&sc->lock);
  pthread_cond_destroy(&sc->cond);
  free(sup->cancelled);
  free(sup->drops);
  while (sup->sendable != NULL) {
    struct ks__sendable *e = sup->sendable;
    sup->sendable = e->next;
    ks_close_keep_errno(e->fd);
    free(e);
  }
  free(sup);
}

int ks_sup_cancel_group(struct ks_sup *sup, uint64_t group) {
  pthread_mutex_lock(&sup->lock);
  if (sup->ncancelled == sup->cancelled_cap) {
    size_t cap = sup->cancelled_cap ? sup->cancelled_cap * 2 : 16;
    uint64_t *p = realloc(sup->cancelled, cap * sizeof *p);
    if (p == NULL) {
      pthread_mutex_unlock(&sup->lock);
      return -ENOMEM;
    }
    sup->cancelled = p;
    sup->cancelled_cap = cap;
  }
  sup->cancelled[sup->ncancelled++] = group;
  pthread_mutex_unlock(&sup->lock);
  ks__wake(sup);
  return 0;
}

int ks_sup_drop_parked(struct ks_sup *sup, uint64_t key) {
  pthread_mutex_lock(&sup->lock);
  if (sup->ndrops == sup->drops_cap) {
    size_t cap = sup->drops_cap ? sup->drops_cap * 2 : 16;
    uint64_t *p = realloc(sup->drops, cap * sizeof *p);
    if (p == NULL) {
      pthread_mutex_unlock(&sup->lock);
      return -ENOMEM;
    }
    sup->drops = p;
    sup->drops_cap = cap;
  }
  sup->drops[sup->ndrops++] = key;
  pthread_mutex_unlock(&sup->lock);
  ks__wake(sup);
  return 0;
}

/* Drops every entry of a group from the cancelled list. With the lock held. */
static void ks__forget_locked(struct ks_sup *sup, uint64_t group) {
  /* Every entry: a group can be cancelled twice (close() during open()
   * cancels the setup box's group, then the failed open()'s teardown does
   * again), and one left behind would be checked by every sweep forever. */
  for (size_t i = 0; i < sup->ncancelled;) {
    if (sup->cancelled[i] == group)
      sup->cancelled[i] = sup->cancelled[--sup->ncancelled];
    else
      i++;
  }
}

static void ks__forget_now(struct ks_sup *sup, struct ks_box *marker) {
  pthread_mutex_lock(&sup->lock);
  ks__forget_locked(sup, marker->forget);
  sup->forgets_pending--;
  pthread_mutex_unlock(&sup->lock);
  free(marker);
}

/* The group is forgotten once the supervisor has taken in every box
 * submitted before this call: a marker queued behind them does it. Forgotten
 * at once, a group whose prewarm box was still queued would let that box
 * start after its session was closed, and park for good. */
void ks_sup_forget_group(struct ks_sup *sup, uint64_t group) {
  struct ks_box *marker = calloc(1, sizeof *marker);

  pthread_mutex_lock(&sup->lock);
  if (marker == NULL || sup->stopping) {
    ks__forget_locked(sup, group);
    pthread_mutex_unlock(&sup->lock);
    free(marker);
    return;
  }
  marker->forget = group;
  if (sup->pending_tail != NULL)
    sup->pending_tail->next = marker;
  else
    sup->pending_head = marker;
  sup->pending_tail = marker;
  sup->forgets_pending++;
  pthread_mutex_unlock(&sup->lock);
  ks__wake(sup);
}

size_t ks_sup_live_boxes(struct ks_sup *sup) { return atomic_load(&sup->live_count); }

_Static_assert(KS_KIT_FDS <= KS_SUP_SPARE_FDS_MAX, "spareFds() holds a whole kit");

size_t ks_sup_spare_fds(struct ks_sup *sup, int out[KS_SUP_SPARE_FDS_MAX]) {
  size_t n = 0;
  for (int i = 0; i < KS_KIT_FDS; i++) {
    int fd = atomic_load(&sup->kit_fds[i]);
    if (fd >= 0)
      out[n++] = fd;
  }
  return n;
}

size_t ks_sup_tails(struct ks_sup *sup) {
  /* A stop queued before the count of helpers it becomes: never a moment
   * between the two when both read 0. */
  size_t queued = atomic_load(&sup->stops_queued);
  return atomic_load(&sup->tail_count) + atomic_load(&sup->aux_count) + queued;
}

size_t ks_sup_cancelled_groups(struct ks_sup *sup) {
  size_t n;
  pthread_mutex_lock(&sup->lock);
  /* A group whose forget is queued counts as forgotten. */
  n = sup->ncancelled > sup->forgets_pending ? sup->ncancelled - sup->forgets_pending : 0;
  pthread_mutex_unlock(&sup->lock);
  return n;
}
