/* A call's stdin feed (feed.h): the slot between the submitting thread and
 * the supervisor, under the feed's lock, which no system call runs under. */
#define _GNU_SOURCE
#include "feed.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct ks_feed *ks_feed_new(void) {
  struct ks_feed *f = calloc(1, sizeof *f);
  if (f == NULL)
    return NULL;
  if (pthread_mutex_init(&f->mu, NULL) != 0) {
    free(f);
    return NULL;
  }
  atomic_init(&f->refs, 1);
  return f;
}

void ks_feed_ref(struct ks_feed *f) { atomic_fetch_add_explicit(&f->refs, 1, memory_order_relaxed); }

void ks_feed_unref(struct ks_feed *f) {
  if (f == NULL || atomic_fetch_sub_explicit(&f->refs, 1, memory_order_acq_rel) != 1)
    return;
  free(f->slot);
  free(f->cur);
  pthread_mutex_destroy(&f->mu);
  free(f);
}

int ks_feed_put(struct ks_feed *f, const void *data, size_t len) {
  char *copy;
  bool full;

  if (len == 0 || len > KS_FEED_CHUNK_MAX)
    return -EINVAL;
  pthread_mutex_lock(&f->mu);
  full = f->slot != NULL || f->ended;
  pthread_mutex_unlock(&f->mu);
  if (full)
    return 0;
  /* Copied outside the lock: only this thread fills the slot. */
  copy = malloc(len);
  if (copy == NULL)
    return -ENOMEM;
  memcpy(copy, data, len);
  pthread_mutex_lock(&f->mu);
  f->slot = copy;
  f->slot_len = len;
  pthread_mutex_unlock(&f->mu);
  return 1;
}

void ks_feed_end(struct ks_feed *f) {
  pthread_mutex_lock(&f->mu);
  f->ended = true;
  pthread_mutex_unlock(&f->mu);
}

bool ks_feed_take(struct ks_feed *f, char **data, size_t *len, bool *ended) {
  bool took;

  pthread_mutex_lock(&f->mu);
  took = f->slot != NULL;
  *data = f->slot;
  *len = f->slot_len;
  f->slot = NULL;
  f->slot_len = 0;
  *ended = f->ended;
  pthread_mutex_unlock(&f->mu);
  return took;
}

void ks_feed_unpost(struct ks_feed *f) {
  pthread_mutex_lock(&f->mu);
  f->posted = false;
  pthread_mutex_unlock(&f->mu);
}

bool ks_feed_mark_posted(struct ks_feed *f) {
  bool was;

  pthread_mutex_lock(&f->mu);
  was = f->posted;
  f->posted = true;
  pthread_mutex_unlock(&f->mu);
  if (!was)
    ks_feed_ref(f);
  return !was;
}
