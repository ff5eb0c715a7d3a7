/* A box's life on the supervisor thread (boxstate.h): its spawn, its pipes
 * and started bytes, kern's exit, the kill at a deadline (its timer) or a
 * cancel, the drain, and the sweep after each turn.
 *
 * Ownership: a box (a call) and its kern part belong to the submitter until
 * ks_sup_submit, then to the supervisor thread (a command on the loop, then
 * the live list) until on_done hands the box back; a kern part goes with
 * the call that holds it at the end, and is freed with it (ks_box_free).
 * Only the supervisor thread touches a submitted box. A box is never freed
 * in the middle of an epoll batch, so no event of the batch can point at
 * freed memory. */
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
#include "interpreter.h"
#include "../envfd.h"
#include "../util.h"

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
  ks_feed_unref(req->feed);
  if (req->has_stdin_rd)
    ks_close_keep_errno(req->stdin_rd);
  if (req->has_tty)
    ks_close_keep_errno(req->tty_fd);
  memset(req, 0, sizeof *req);
}

/* A kern part not started yet: nothing open. The box's request says
 * whether it will be a kernel's (its cells) and what its interpreter
 * reader may take. */
static struct ks__kern *ks__kern_new(struct ks_box *box) {
  struct ks__kern *k = calloc(1, sizeof *k);
  if (k == NULL)
    return NULL;
  k->box = box;
  k->proc = (struct ks_proc) KS_PROC_INIT;
  for (int i = 0; i < KS__BOX_PIPES; i++)
    k->fd[i] = -1;
  k->ctl = -1;
  k->release = -1;
  k->pending_fd[0] = k->pending_fd[1] = -1;
  k->workload_pidfd = -1;
  ks_chan_init(&k->chan);
  ks_outbuf_init(&k->said.out[KS_STDOUT], box->req.cap);
  ks_outbuf_init(&k->said.out[KS_STDERR], box->req.cap);
  if (ks__ip_kern_init(k, &box->req) < 0) {
    free(k);
    return NULL;
  }
  return k;
}

void ks__kern_free(struct ks__kern *k) {
  if (k == NULL)
    return;
  ks_proc_kids_close(&k->kids);
  if (k->ctl >= 0)
    ks_close_keep_errno(k->ctl);
  if (k->release >= 0) {
    /* The init waits for this after its report: now it may exit, and kern's
     * teardown begins (the caller has the result). */
    (void) shutdown(k->release, SHUT_WR);
    ks_close_keep_errno(k->release);
  }
  for (int i = 0; i < 2; i++) {
    if (k->pending_fd[i] >= 0)
      ks_close_keep_errno(k->pending_fd[i]);
  }
  if (k->workload_pidfd >= 0)
    ks_close_keep_errno(k->workload_pidfd);
  ks__ip_kern_free(k);
  ks_outbuf_free(&k->said.out[KS_STDOUT]);
  ks_outbuf_free(&k->said.out[KS_STDERR]);
  ks__free_strv(k->stop_argv);
  ks__free_strv(k->envp);
  free(k);
}

static void ks__box_due(void *ctx, struct ks_timer *t, uint64_t now);

struct ks_box *ks_box_new(struct ks_box_request *req, void *user) {
  struct ks_box *box = calloc(1, sizeof *box);
  if (box == NULL)
    return NULL;
  box->req = *req;
  box->kern = ks__kern_new(box);
  if (box->kern == NULL) {
    memset(&box->req, 0, sizeof box->req); /* the caller keeps its request */
    free(box);
    return NULL;
  }
  memset(req, 0, sizeof *req);
  if (box->req.has_begun) {
    box->wcall = box->req.begun; /* the call counts from before the argv went out */
    box->wcall_open = true;
    box->req.has_begun = false;
  }
  box->user = user;
  box->cmd.kind = KS__CMD_BOX;
  box->deadline_ns = UINT64_MAX;
  box->feed_fd = box->feed_rd = -1;
  ks_timer_init(&box->timer, ks__box_due, box);
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
  int fd = -1;
  if (box->kern != NULL) {
    fd = box->kern->release;
    box->kern->release = -1;
  }
  return fd;
}

void ks_box_free(struct ks_box *box) {
  if (box == NULL)
    return;
  /* Only at engine shutdown can a box still hold an open call here. */
  if (box->wcall_open)
    ks_ws_watch_abandon(box->req.watch, &box->wcall);
  if (box->feed_fd >= 0) /* detached at its end (ks__after_box): only a box never submitted */
    ks_close_keep_errno(box->feed_fd);
  if (box->feed_rd >= 0)
    ks_close_keep_errno(box->feed_rd);
  ks__kern_free(box->kern);
  ks_results_free(&box->res.results);
  ks_box_request_free(&box->req);
  free(box->res.changes);
  ks_outbuf_free(&box->res.out[KS_STDOUT]);
  ks_outbuf_free(&box->res.out[KS_STDERR]);
  free(box);
}

void ks__call_take_said(struct ks_box *box) {
  struct ks__said *said;

  if (box->kern == NULL)
    return;
  said = &box->kern->said;
  for (int s = 0; s < 2; s++) {
    struct ks_outbuf o = box->res.out[s];
    box->res.out[s] = said->out[s];
    said->out[s] = o;
  }
  memcpy(box->res.started, said->started, sizeof box->res.started);
  box->res.nstarted = said->nstarted;
  box->res.taken = said->taken;
  box->res.started_ns = said->started_ns;
  box->res.reported = said->reported;
  box->res.report_end = said->report_end;
  box->res.report_value = said->report_value;
}

/* ---- the live list ----------------------------------------------------- */

void ks__live_link(struct ks_sup *sup, struct ks_box *box) {
  box->prev = NULL;
  box->next = sup->live;
  if (sup->live != NULL)
    sup->live->prev = box;
  sup->live = box;
  atomic_fetch_add(&sup->live_count, 1);
}

void ks__live_unlink(struct ks_sup *sup, struct ks_box *box) {
  if (box->prev != NULL)
    box->prev->next = box->next;
  else
    sup->live = box->next;
  if (box->next != NULL)
    box->next->prev = box->prev;
  box->next = box->prev = NULL;
  ks_loop_timer_disarm(&sup->loop, &box->timer); /* only a live box is timed */
  atomic_fetch_sub(&sup->live_count, 1);
}

void ks__box_deadline(struct ks_sup *sup, struct ks_box *box, uint64_t at) {
  box->deadline_ns = at;
  ks_loop_timer_arm(&sup->loop, &box->timer, at);
}

/* ---- spawning ---------------------------------------------------------- */

void ks__report_spawn_failure(struct ks_sup *sup, struct ks_box *box, const struct ks_err *err) {
  box->res.spawn_errnum = err->errnum;
  box->res.spawn_syscall = err->syscall;
  /* Through the scan thread: the call it began must end there. */
  ks__after_box(sup, box);
}

/* The descriptors a cold box starts with: its pipes, the init's channel
 * (made with the pipes, or the caller's: *shared), and the env file. 0, or
 * -1 with err set. */
static int ks__spawn_fds(struct ks_sup *sup, struct ks_box *box, int pipes[][2], int chan[2],
                         bool *shared, int *envfd, struct ks_err *err) {
  bool own_chan = box->req.channel && !box->req.chan_given;
  int r = 0;

  for (int i = 0; i < KS__BOX_PIPES; i++)
    pipes[i][0] = pipes[i][1] = -1;
  /* A terminal's master is the stdout stream's read end; nothing of
   * kern's writes it. */
  if (box->req.has_tty) {
    pipes[KS_STDOUT][0] = box->req.tty_fd;
    box->req.has_tty = false;
  }
  for (int i = 0; i < KS__BOX_PIPES && r == 0; i++) {
    if (pipes[i][0] < 0)
      r = ks_pipe_nonblocking_read(pipes[i], err);
  }
  /* The init's channel, on kern's stdin (which kern hands to the box). */
  if (r == 0 && own_chan)
    r = ks_channel_pair(chan, err);
  if (r == 0 && box->req.channel && box->req.chan_given) {
    chan[0] = box->req.chan[0];
    chan[1] = box->req.chan[1];
    box->req.chan_given = false;
    *shared = true;
  }
  /* The stdin pipe's read end, before anything can read the channel. */
  if (r == 0 && chan[0] >= 0)
    r = ks__feed_send_stdin_frame(box, chan[0], err);
  if (r == 0 && box->req.env_data != NULL)
    r = ks_envfd_create(box->req.env_data, box->req.env_len, box->req.tmpdir, envfd, err);
  return r;
}

/* Spawns kern with the box's descriptors where kern expects them
 * (supervisor.h: KS_BOX_STARTED_FD, KS_BOX_ENV_FD). */
static int ks__spawn_kern(struct ks_sup *sup, struct ks_box *box, int pipes[][2],
                          const int chan[2], int envfd, struct ks_err *err) {
  struct ks_spawn_plan plan;

  memset(&plan, 0, sizeof plan);
  plan.path = box->req.path;
  plan.exec_fd = box->req.exec_fd;
  plan.argv = box->req.argv;
  plan.envp = box->req.envp;
  plan.cwd = "/";
  /* Without a channel, a stdin pipe is kern's stdin, which kern hands to
   * the box (the workload is its command). */
  plan.fds[0] = chan[1] >= 0 ? chan[1] : box->feed_rd >= 0 ? box->feed_rd : sup->loop.devnull;
  /* With a terminal, kern's stdout (its own lines, if any) joins its stderr. */
  plan.fds[1] = pipes[KS_STDOUT][1] >= 0 ? pipes[KS_STDOUT][1] : pipes[KS_STDERR][1];
  plan.fds[2] = pipes[KS_STDERR][1];
  plan.fds[KS_BOX_STARTED_FD] = pipes[2][1];
  plan.nfds = KS_BOX_STARTED_FD + 1;
  if (envfd >= 0) {
    plan.fds[KS_BOX_ENV_FD] = envfd;
    plan.nfds = KS_BOX_ENV_FD + 1;
  }
  box->start_ns = ks_now_ns();
  return ks_proc_spawn(&plan, &box->kern->proc, err);
}

/* Moves the read ends and our end of the channel into the spawned box and
 * watches them and its pidfd. On failure kern is killed and every one of
 * them closed: 0, or -1 with err set. */
static int ks__spawn_watch(struct ks_sup *sup, struct ks_box *box, int pipes[][2], int chan[2],
                           bool shared, struct ks_err *err) {
  int r = 0;

  ks__box_watches(box->kern);
  for (int i = 0; i < KS__BOX_PIPES; i++)
    box->kern->fd[i] = ks_take_fd(&pipes[i][0]);
  for (int i = 0; i < KS__BOX_PIPES && r == 0; i++)
    r = ks_loop_watch_add(&sup->loop, box->kern->fd[i], &box->kern->watch[i]);
  if (r == 0)
    r = ks_loop_watch_add(&sup->loop, box->kern->proc.pidfd, &box->kern->watch[KS__BOX_PIPES]);
  if (r == 0 && chan[0] >= 0) {
    box->kern->ctl = ks_take_fd(&chan[0]);
    ks__ctl_watch(box->kern);
    r = ks_loop_watch_add(&sup->loop, box->kern->ctl, &box->kern->ctl_watch);
    /* A parked box whose caller sends the spec itself says nothing before
     * its TAKEN, which we need only when the box ends (ks__finish_box
     * reads it then) or once a claim has taken it over (which watches
     * for it again): waking for it would only take the CPU the call's
     * workload is starting on. */
    if (r == 0 && shared && box->req.park_key != 0)
      r = ks_loop_watch_mod(&sup->loop, box->kern->ctl, &box->kern->ctl_watch, 0);
  }
  /* A cold box's init takes its stdin before the workload starts: write now. */
  if (r == 0)
    r = ks__feed_attach(sup, box, true);
  if (r == 0)
    return 0;
  ks_err_set(err, -r, "epoll_ctl", NULL);
  if (box->kern->proc.pidfd >= 0)
    ks_loop_watch_del(&sup->loop, box->kern->proc.pidfd);
  ks_proc_kill_and_release(&box->kern->proc, 0);
  for (int i = 0; i < KS__BOX_PIPES; i++)
    ks_loop_watch_close(&sup->loop, &box->kern->fd[i]);
  ks_loop_watch_close(&sup->loop, &box->kern->ctl);
  return -1;
}

void ks__spawn_box(struct ks_sup *sup, struct ks_box *box) {
  int pipes[KS__BOX_PIPES][2];
  int chan[2] = {-1, -1};
  bool shared = false; /* chan is the caller's (terms.shareChannel) */
  _cleanup_close_ int envfd = -1;
  struct ks_err err;
  int r;

  ks_err_clear(&err);
  if (ks__box_cancelled(sup, box)) {
    ks__claim_cancelled(sup, box);
    ks_err_set(&err, ECANCELED, "spawn", NULL);
    ks__report_spawn_failure(sup, box, &err);
    return;
  }
  /* A call for a prewarmed box runs there if the box is still parked;
   * otherwise (recycled, died, not started yet) it starts cold, now. */
  if (ks__feed_pipe(box, &err) < 0) {
    ks__report_spawn_failure(sup, box, &err);
    return;
  }
  if (box->req.claim_key != 0 && ks__adopt_parked(sup, box))
    return;
  if (box->req.claim_only) {
    box->res.missed = true; /* the caller decides, from the parked box's result */
    ks__after_box(sup, box);
    return;
  }
  r = ks__spawn_fds(sup, box, pipes, chan, &shared, &envfd, &err);
  if (r == 0)
    r = ks__spawn_kern(sup, box, pipes, chan, envfd, &err);
  /* Our copies of the write ends must go, or we would never see EOF. */
  for (int i = 0; i < KS__BOX_PIPES; i++)
    ks_close_keep_errno(pipes[i][1]);
  ks_close_keep_errno(chan[1]);
  if (box->feed_rd >= 0) { /* kern's stdin (no channel): kern has it now */
    ks_close_keep_errno(box->feed_rd);
    box->feed_rd = -1;
  }
  if (r == 0)
    r = ks__spawn_watch(sup, box, pipes, chan, shared, &err);
  for (int i = 0; i < KS__BOX_PIPES; i++)
    ks_close_keep_errno(pipes[i][0]);
  ks_close_keep_errno(chan[0]);
  if (r < 0) {
    ks__report_spawn_failure(sup, box, &err);
    return;
  }
  /* kern's `kern stop` and environment are its own from now on: a call
   * that claims it has neither. */
  box->kern->stop_argv = box->req.stop_argv;
  box->req.stop_argv = NULL;
  box->kern->envp = box->req.envp;
  box->req.envp = NULL;
  ks__box_to(box, ks__box_prewarm(box) ? KS_BOX_PARKED : KS_BOX_RUNNING);
  if (box->state == KS_BOX_PARKED)
    ks__box_deadline(sup, box, UINT64_MAX); /* no call: no deadline until one claims it */
  else if (box->req.kernel_key != 0)
    ks__box_deadline(sup, box, UINT64_MAX); /* a kernel lives until closed; its cells
                                              * have deadlines */
  else
    ks__box_deadline(sup, box, box->start_ns + box->req.timeout_ns);
  ks__live_link(sup, box);
  if (box->state == KS_BOX_RUNNING && box->req.spec != NULL)
    ks__send_spec(sup, box);
}

/* ---- pipes ---------------------------------------------------------------- */

/* A box that filled its 64 KiB pipe in one wakeup is a heavy writer: a
 * bigger pipe halves the wakeups (its and ours) per byte. Only such boxes
 * get one, because big pipes count against the user's pipe-user-pages
 * budget; where the kernel refuses, the pipe simply stays as it was. */
#define KS__PIPE_HEAVY (64u << 10)
#define KS__PIPE_GROWN (1u << 20)

static void ks__maybe_grow_pipe(struct ks_box *box, enum ks_stream s, size_t drained) {
  if (box->kern->pipe_grown[s] || drained < KS__PIPE_HEAVY || box->kern->fd[s] < 0)
    return;
  box->kern->pipe_grown[s] = true;
  (void) fcntl(box->kern->fd[s], F_SETPIPE_SZ, (int) KS__PIPE_GROWN);
}

static void ks__emit_box_output(void *ctx, void *owner, int s, const char *data, size_t len) {
  struct ks_sup *sup = ctx;
  sup->hooks.on_output(sup->ctx, owner, (enum ks_stream) s, data, len);
}

void ks__drain_output(struct ks_sup *sup, struct ks_box *box, enum ks_stream s, size_t budget) {
  size_t done = ks_loop_drain(&sup->loop, &box->kern->fd[s], &box->kern->said.out[s],
                              box->req.stream[s], ks__emit_box_output, box, (int) s, budget);
  if (box->kern->fd[s] >= 0 && done < budget)
    ks__maybe_grow_pipe(box, s, done); /* drained to EAGAIN */
}

static void ks__drain_started(struct ks_sup *sup, struct ks_box *box) {
  unsigned char buf[64];

  while (box->kern->fd[2] >= 0) {
    ssize_t n = read(box->kern->fd[2], buf, sizeof buf);
    if (n > 0) {
      /* kern forked its watchdog before the box, so it is there now: a
       * parked box's kern's children are pinned here, off any call's path,
       * and close() of an idle session reads no /proc to kill them. */
      if (box->state == KS_BOX_PARKED && box->kern->said.nstarted == 0)
        ks_proc_pin_kids(&box->kern->proc, &box->kern->kids);
      for (ssize_t i = 0; i < n; i++) {
        if (box->kern->said.nstarted < sizeof box->kern->said.started)
          box->kern->said.started[box->kern->said.nstarted] = buf[i];
        box->kern->said.nstarted++;
      }
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && errno == EAGAIN)
      break;
    ks_loop_watch_close(&sup->loop, &box->kern->fd[2]);
  }
}



/* ---- kern's end, kills, the sweep ------------------------------------------ */

static void ks__on_kern_exit(struct ks_sup *sup, struct ks_box *box, uint64_t now) {
  int status = 0;
  int r;

  if (box->state == KS_BOX_DRAINING)
    return;
  /* kern is a zombie now, so its group id is still pinned: take down
   * whatever it left in its group (a helper, a holder of our pipes) before
   * the reap frees the id. */
  (void) ks_proc_signal_group(&box->kern->proc, SIGKILL);
  r = ks_proc_try_reap(&box->kern->proc, &status, &box->res.usage);
  if (r == 0)
    return; /* not reapable yet; the pidfd will report again */
  box->res.status_known = (r == 1);
  box->res.wait_status = status;
  ks__box_to(box, KS_BOX_DRAINING);
  box->res.duration_ns = now - box->start_ns;
  ks__box_deadline(sup, box, now + KS__DRAIN_GRACE_NS);
  ks_loop_watch_del(&sup->loop, box->kern->proc.pidfd);
  ks_proc_close(&box->kern->proc);
}

/* A box's pipe: watch[0] and [1] its stdout and stderr, [2] the started
 * bytes. */
static void ks__on_box_pipe(void *ctx, struct ks_watch *w, uint32_t events, uint64_t now) {
  struct ks__kern *k = w->owner;
  struct ks_box *box = k->box;
  int i = (int) (w - k->watch);

  (void) now;
  if (i == 2)
    ks__drain_started(ctx, box);
  /* A hangup is read whatever the flow says: the writer is gone, what is
   * left is at most a pipe's worth, and a paused pipe would report it at
   * every turn. */
  else if ((events & (EPOLLHUP | EPOLLERR)) || ks__flow_read(ctx, box, i))
    ks__drain_output(ctx, box, (enum ks_stream) i, KS__READ_BUDGET);
}

/* kern's pidfd (watch[KS__BOX_PIPES]): it exited. */
static void ks__on_pidfd(void *ctx, struct ks_watch *w, uint32_t events, uint64_t now) {
  struct ks__kern *k = w->owner;
  (void) events;
  ks__on_kern_exit(ctx, k->box, now);
}

void ks__box_watches(struct ks__kern *k) {
  for (int i = 0; i < KS__BOX_PIPES; i++) {
    k->watch[i].fn = ks__on_box_pipe;
    k->watch[i].owner = k;
  }
  k->watch[KS__BOX_PIPES].fn = ks__on_pidfd;
  k->watch[KS__BOX_PIPES].owner = k;
}

bool ks__box_cancelled(struct ks_sup *sup, const struct ks_box *box) {
  /* a parked box answers to its park key too; a call's box that claimed one,
   * to the call's keys */
  uint64_t park = box->state == KS_BOX_PARKED ? box->req.park_key : 0;
  return ks_keys_has(&sup->keys, box->req.group, box->req.call, park);
}

void ks__kill_box(struct ks_sup *sup, struct ks_box *box, uint64_t now, bool timeout) {
  ks__box_to(box, KS_BOX_KILLED);
  if (timeout)
    box->res.timed_out = true;
  else if (!box->res.killed_by_caller)
    box->res.cancelled = true;
  ks__box_deadline(sup, box, now + KS__KILL_GRACE_NS);
  /* Group first, while kern (unreaped) still pins the group id. kern's
   * die-with-parent chain takes the box down with it; its watchdog, in a
   * session of its own, is killed with it (ks_proc_kill_tree). */
  ks_proc_kill_tree(&box->kern->proc, &box->kern->kids);
}

/* kern outlived its SIGKILL by the grace period: it is frozen, or stuck in
 * an uninterruptible sleep (a hung FUSE or NFS mount), and ends only when
 * the kernel lets it. Its call settles now; a thread of its own waits for
 * it, so this one never blocks on it. */
static void ks__abandon_kern(struct ks_sup *sup, struct ks_box *box, uint64_t now) {
  ks_loop_watch_del(&sup->loop, box->kern->proc.pidfd);
  ks__box_to(box, KS_BOX_DRAINING);
  box->res.status_known = false;
  box->res.duration_ns = now - box->start_ns;
  ks__box_deadline(sup, box, now);
  ks_proc_kill_and_release(&box->kern->proc, 0);
}

static void ks__finish_box(struct ks_sup *sup, struct ks_box *box) {
  ks_proc_kids_close(&box->kern->kids); /* kern has exited: nothing of it to kill */
  ks__ip_drain(sup, box, ks_now_ns());
  ks__ip_box_end(sup, box,
                 ks__box_was_killed(box) ? "the kernel's box was killed" : "the kernel's box ended");
  /* Whatever is still buffered in the pipes was written before the end. */
  ks__drain_output(sup, box, KS_STDOUT, KS__READ_BUDGET);
  ks__drain_output(sup, box, KS_STDERR, KS__READ_BUDGET);
  ks__drain_started(sup, box);
  if (box->kern->ctl >= 0)
    ks__on_ctl(sup, box, EPOLLIN); /* a report still unread */
  for (int i = 0; i < KS__BOX_PIPES; i++)
    ks_loop_watch_close(&sup->loop, &box->kern->fd[i]);
  ks_loop_watch_close(&sup->loop, &box->kern->ctl);
  if (box->kern->final_done) {
    /* kern ended before the sweep could settle at the final DONE: the exit
     * is DONE's (the interpreter died of our SIGKILL after it). */
    box->res.status_known = true;
    box->res.wait_status = (ks_chan_exit_code(&box->kern->final_rep) & 0xff) << 8;
    ks__usage_from_report(box, &box->kern->final_rep);
  } else if (box->kern->said.reported) {
    ks__usage_from_report(box, &box->kern->chan.rep);
  }
  ks__live_unlink(sup, box);
  ks__queue_stop(sup, box, &sup->stops);
  ks__after_box(sup, box);
}

static bool ks__box_quiet(const struct ks_box *box) {
  return box->kern->fd[0] < 0 && box->kern->fd[1] < 0 && box->kern->fd[2] < 0;
}

/* A recycled prewarm box: killed if still parked; a key whose box has gone
 * (claimed, or died) leaves nothing behind. */
struct ks__drop_ctx {
  struct ks_sup *sup;
  uint64_t now;
};

static void ks__drop_parked(void *arg, uint64_t key) {
  struct ks__drop_ctx *c = arg;
  struct ks_box *p = ks__find_parked(c->sup, key);
  if (p != NULL && p->state == KS_BOX_PARKED)
    ks__kill_box(c->sup, p, c->now, false);
}

/* The box's deadline (ks__box_deadline) is due: the call's, the kill
 * grace's or the drain grace's end, by its state. A box settling at its
 * report is left to the sweep of this turn, which settles it first, as a
 * report that came before the deadline's turn ends wins over it. */
static void ks__box_due(void *ctx, struct ks_timer *t, uint64_t now) {
  struct ks_sup *sup = ctx;
  struct ks_box *box = t->owner;

  if (box->state == KS_BOX_SETTLING)
    return;
  if (ks__box_alive(box))
    ks__kill_box(sup, box, now, !box->caller_kill);
  else if (box->state == KS_BOX_KILLED)
    ks__abandon_kern(sup, box, now); /* its drain grace ends at once: finished below */
  if (box->state == KS_BOX_DRAINING && now >= box->deadline_ns)
    ks__finish_box(sup, box);
}

void ks__sweep(struct ks_sup *sup, uint64_t now) {
  struct ks_box *box = sup->live;
  struct ks__stop *stops;
  bool cancels;

  struct ks__drop_ctx drop = {.sup = sup, .now = now};

  cancels = ks_keys_any(&sup->keys);
  ks_keys_take_drops(&sup->keys, ks__drop_parked, &drop);
  ks__take_signals(sup, now);

  /* Deadlines are the timers' (ks__box_due, fired before this); what is
   * left is what no clock says: settles, cancels, drained boxes. */
  while (box != NULL) {
    struct ks_box *next = box->next;
    if (box->state == KS_BOX_SETTLING) {
      ks__settle_early(sup, box, now);
      box = next;
      continue;
    }
    if (ks__box_alive(box) && cancels && ks__box_cancelled(sup, box))
      ks__kill_box(sup, box, now, false);
    if (box->state == KS_BOX_DRAINING && ks__box_quiet(box))
      ks__finish_box(sup, box);
    else if (box->kern != NULL)
      ks__flow_resume(sup, box);
    box = next;
  }
  stops = sup->stops;
  sup->stops = NULL;
  ks__run_stops(sup, stops);
  ks__cells_sweep(sup, now);
  for (struct ks__tail *t = sup->tails, *next; t != NULL; t = next) {
    next = t->next;
    if (t->reaped)
      ks__tail_free(sup, t);
  }
}
