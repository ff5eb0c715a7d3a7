#define _GNU_SOURCE
#include "wswatch.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../util.h"
#include "wstrack.h"

/* The inotify tracker is on unless KERN_SANDBOX_TRACKER=0. A hostile box
 * cannot make it dearer than full scans by much: every drain gives up on
 * events past about one scan's worth of work and rescans (wstrack.c). */
static _Atomic bool ks__tracking_enabled;

void ks_ws_watch_enable_tracking(bool on) { atomic_store(&ks__tracking_enabled, on); }

struct ks_ws_watch {
  _Atomic unsigned refs;
  /* Normally only the scan thread uses the tracker; at engine shutdown
   * boxes may be released from other threads, so every use is locked (an
   * uncontended lock costs nothing next to a scan). */
  pthread_mutex_t lock;
  int rootfd;
  struct ks_ws_tracker *tracker;
  bool tracker_refused; /* open failed once: full scans from then on */
};

int ks_ws_watch_new(int rootfd, struct ks_ws_watch **ret) {
  struct ks_ws_watch *w = calloc(1, sizeof *w);
  if (w == NULL)
    return -ENOMEM;
  atomic_init(&w->refs, 1);
  pthread_mutex_init(&w->lock, NULL);
  w->rootfd = rootfd;
  *ret = w;
  return 0;
}

void ks_ws_watch_ref(struct ks_ws_watch *w) { atomic_fetch_add(&w->refs, 1); }

void ks_ws_watch_unref(struct ks_ws_watch *w) {
  if (w == NULL || atomic_fetch_sub(&w->refs, 1) != 1)
    return;
  /* Nobody else holds it: no call is in flight, no thread is inside. */
  if (w->tracker != NULL)
    ks_ws_tracker_close(w->tracker);
  ks_close_keep_errno(w->rootfd);
  pthread_mutex_destroy(&w->lock);
  free(w);
}

void ks_ws_watch_begin(struct ks_ws_watch *w, struct ks_ws_watch_call *c) {
  struct ks_err err;
  int r;

  pthread_mutex_lock(&w->lock);
  memset(c, 0, sizeof *c);
  ks_err_clear(&err);
  /* Opened on the first call, not at open(): its walk costs what a full
   * scan costs, and sessions that never run pay nothing. */
  if (w->tracker == NULL && !w->tracker_refused && atomic_load(&ks__tracking_enabled)) {
    if (ks_ws_tracker_open(w->rootfd, &w->tracker, &err) < 0) {
      w->tracker = NULL;
      w->tracker_refused = true;
    }
  }
  if (w->tracker != NULL && ks_ws_tracker_begin(w->tracker, &c->tracked, &err) == 0) {
    pthread_mutex_unlock(&w->lock);
    return;
  }
  c->tracked = NULL;
  r = ks_ws_scan(w->rootfd, &c->before, &err);
  if (r < 0) {
    c->before = NULL;
    c->begin_errnum = -r;
  }
  pthread_mutex_unlock(&w->lock);
}

bool ks_ws_watch_try_begin(struct ks_ws_watch *w, struct ks_ws_watch_call *c) {
  struct ks_err err;
  bool ok = false;

  if (pthread_mutex_trylock(&w->lock) != 0)
    return false;
  if (w->tracker != NULL && ks_ws_tracker_quiet(w->tracker)) {
    memset(c, 0, sizeof *c);
    ks_err_clear(&err);
    ok = ks_ws_tracker_begin(w->tracker, &c->tracked, &err) == 0;
    if (!ok)
      c->tracked = NULL; /* the scan thread's begin falls back to a scan */
  }
  pthread_mutex_unlock(&w->lock);
  return ok;
}

/* One block: the array, then the path bytes it points into. */
static int ks__pack_changes(const struct ks_ws_change *src, size_t n,
                            struct ks_ws_change **ret) {
  size_t bytes = n * sizeof *src;
  struct ks_ws_change *out;
  char *p;

  for (size_t i = 0; i < n; i++)
    bytes += strlen(src[i].path) + 1;
  out = malloc(bytes ? bytes : 1);
  if (out == NULL)
    return -ENOMEM;
  p = (char *) (out + n);
  for (size_t i = 0; i < n; i++) {
    size_t len = strlen(src[i].path) + 1;
    out[i] = src[i];
    memcpy(p, src[i].path, len);
    out[i].path = p;
    p += len;
  }
  *ret = out;
  return 0;
}

int ks_ws_watch_end(struct ks_ws_watch *w, struct ks_ws_watch_call *c,
                    struct ks_ws_change **ret, size_t *ret_n) {
  struct ks_ws_scan *after = NULL;
  struct ks_ws_change *changes = NULL;
  struct ks_err err;
  size_t n = 0;
  int r;

  *ret = NULL;
  *ret_n = 0;
  ks_err_clear(&err);
  pthread_mutex_lock(&w->lock);
  if (c->tracked != NULL) {
    r = ks_ws_tracker_end(w->tracker, c->tracked, ret, ret_n, &err);
    c->tracked = NULL;
    pthread_mutex_unlock(&w->lock);
    return r;
  }
  pthread_mutex_unlock(&w->lock);
  if (c->before == NULL)
    return -(c->begin_errnum != 0 ? c->begin_errnum : EIO);
  r = ks_ws_rescan_diff(w->rootfd, c->before, &after, &changes, &n, &err);
  ks_ws_scan_free(c->before);
  c->before = NULL;
  if (r == 0 && n > 0)
    r = ks__pack_changes(changes, n, ret);
  if (r == 0)
    *ret_n = n;
  free(changes);
  ks_ws_scan_free(after);
  return r;
}

bool ks_ws_watch_try_end(struct ks_ws_watch *w, struct ks_ws_watch_call *c, size_t max_files,
                         struct ks_ws_change **ret, size_t *ret_n, int *ret_r) {
  struct ks_err err;
  bool ok = false;

  if (c->tracked == NULL || pthread_mutex_trylock(&w->lock) != 0)
    return false;
  if (w->tracker != NULL && ks_ws_tracker_quiet(w->tracker) &&
      ks_ws_tracker_call_size(c->tracked) <= max_files) {
    *ret = NULL;
    *ret_n = 0;
    ks_err_clear(&err);
    *ret_r = ks_ws_tracker_end(w->tracker, c->tracked, ret, ret_n, &err);
    c->tracked = NULL;
    ok = true;
  }
  pthread_mutex_unlock(&w->lock);
  return ok;
}

void ks_ws_watch_abandon(struct ks_ws_watch *w, struct ks_ws_watch_call *c) {
  pthread_mutex_lock(&w->lock);
  if (c->tracked != NULL)
    ks_ws_tracker_abandon(w->tracker, c->tracked);
  c->tracked = NULL;
  pthread_mutex_unlock(&w->lock);
  ks_ws_scan_free(c->before);
  c->before = NULL;
}
