/* The scan thread: a workspace's scan before a box (when the watch must
 * scan first) and after it, and the hand-back of a finished box. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "box-internal.h"
#include "../util.h"

static void ks__scan_job(struct ks_sup *sup, struct ks_box *box) {
  int r;

  if (box->scan_phase == KS__SCAN_BEFORE) {
    ks_ws_watch_begin(box->req.watch, &box->wcall);
    box->wcall_open = true;
    ks__queue_spawn(sup, box, true);
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

void ks__scanner_push(struct ks_sup *sup, struct ks_box *box, enum ks__scan_phase phase) {
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

void *ks__scanner_main(void *arg) {
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
 * already (a few files, nothing unread): it spares the call two thread
 * switches (bench switch inline-ends). */
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

/* A finished box: scanned for changes first if it asked for that. A box
 * ends through the scan thread, with or without a watch, unless its end
 * costs next to nothing (ks__end_inline): on_done may take time in
 * proportion to the output (the ASCII pass, decoding), which must never
 * hold the supervisor's deadlines. */
void ks__after_box(struct ks_sup *sup, struct ks_box *box) {
  struct ks_box *p = box->claimed;

  box->claimed = NULL;
  ks__feed_detach(sup, box); /* every way a box ends comes here, on this thread */
  ks__call_take_said(box);
  ks__box_to(box, KS_BOX_ENDED); /* from here on the box is the caller's */
  if (!(sup->off & KS_SUP_OFF_INLINE_ENDS) && ks__end_inline(box))
    sup->hooks.on_done(sup->ctx, box);
  else
    ks__scanner_push(sup, box, KS__SCAN_AFTER);
  /* The parked run the call took, after the call: the JS thread settles
   * the call first. */
  if (p != NULL)
    ks__after_box(sup, p);
}

