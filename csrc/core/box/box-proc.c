/* A process box's parts of a box's life (docs/plan-processes.md, section
 * 3). The caller's kill: a signal goes to the workload through its init (a
 * SIGNAL frame, protocol.h), and the box is killed once the grace the
 * caller gave is over, unless it ended first; that kill is the caller's
 * (res.killed_by_caller), not a timeout and not a cancel. Its output's
 * flow: a stream is read no faster than the caller takes it (req.flow). */
#define _GNU_SOURCE
#include <errno.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "box-internal.h"

struct ks__signal_ctx {
  struct ks_sup *sup;
  uint64_t now;
};

/* The SIGNAL frame on the box's channel, once its whole spec went (a frame
 * between the spec's bytes would corrupt it): 20 bytes to a socket the
 * init empties, so a short send does not happen but to a gone init, whose
 * box the grace's kill ends anyway. */
static void ks__send_signal(struct ks_box *box, int signo) {
  struct {
    struct ks_init_frame_header h;
    struct ks_init_signal s;
  } f = {{KS_INIT_FRAME_MAGIC, KS_INIT_SIGNAL, sizeof(struct ks_init_signal)}, {signo, 0}};
  ssize_t n;

  if (box->kern->ctl < 0 || box->req.spec != NULL)
    return;
  do
    n = send(box->kern->ctl, &f, sizeof f, MSG_DONTWAIT | MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
}

static void ks__signal_one(void *arg, uint64_t key, int signo, uint64_t grace_ns) {
  struct ks__signal_ctx *c = arg;

  for (struct ks_box *box = c->sup->live; box != NULL; box = box->next) {
    if (box->req.call != key || box->state != KS_BOX_RUNNING)
      continue;
    box->res.killed_by_caller = true;
    if (grace_ns == 0) {
      ks__kill_box(c->sup, box, c->now, false);
      continue;
    }
    ks__send_signal(box, signo);
    if (c->now + grace_ns < box->deadline_ns) {
      box->caller_kill = true;
      ks__box_deadline(c->sup, box, c->now + grace_ns);
    }
  }
}

void ks__take_signals(struct ks_sup *sup, uint64_t now) {
  struct ks__signal_ctx c = {.sup = sup, .now = now};
  ks_keys_take_signals(&sup->keys, ks__signal_one, &c);
}

/* ---- output flow (req.flow) ---------------------------------------------- */

static void ks__flow_pause(struct ks_sup *sup, struct ks_box *box, int s) {
  if (box->out_paused[s] || box->kern->fd[s] < 0)
    return;
  if (ks_loop_watch_mod(&sup->loop, box->kern->fd[s], &box->kern->watch[s], 0) == 0)
    box->out_paused[s] = true;
}

bool ks__flow_read(struct ks_sup *sup, struct ks_box *box, int s) {
  if (!box->req.flow || box->state != KS_BOX_RUNNING)
    return true;
  if (sup->hooks.output_room(sup->ctx, box))
    return true;
  ks__flow_pause(sup, box, s);
  return false;
}

void ks__flow_resume(struct ks_sup *sup, struct ks_box *box) {
  if (!(box->out_paused[0] || box->out_paused[1]))
    return;
  if (box->state == KS_BOX_RUNNING && !sup->hooks.output_room(sup->ctx, box))
    return;
  for (int s = 0; s < 2; s++) {
    if (!box->out_paused[s])
      continue;
    box->out_paused[s] = false;
    if (box->kern->fd[s] < 0)
      continue;
    (void) ks_loop_watch_mod(&sup->loop, box->kern->fd[s], &box->kern->watch[s], EPOLLIN);
    ks__drain_output(sup, box, (enum ks_stream) s, KS__READ_BUDGET);
  }
}
