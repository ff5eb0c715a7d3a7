/* Cancelled and dropped keys (keys.h). */
#include "keys.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void ks_keys_init(struct ks_keys *k) {
  memset(k, 0, sizeof *k);
  pthread_mutex_init(&k->lock, NULL);
}

void ks_keys_destroy(struct ks_keys *k) {
  pthread_mutex_destroy(&k->lock);
  free(k->cancelled);
  free(k->drops);
  free(k->signals);
  k->cancelled = k->drops = k->signals = NULL;
}

/* Appends key to a growing array. With the lock held. */
static int ks__push(uint64_t **v, size_t *n, size_t *cap, uint64_t key) {
  if (*n == *cap) {
    size_t c = *cap ? *cap * 2 : 16;
    uint64_t *p = realloc(*v, c * sizeof *p);
    if (p == NULL)
      return -ENOMEM;
    *v = p;
    *cap = c;
  }
  (*v)[(*n)++] = key;
  return 0;
}

int ks_keys_cancel(struct ks_keys *k, uint64_t key) {
  int r;
  pthread_mutex_lock(&k->lock);
  r = ks__push(&k->cancelled, &k->ncancelled, &k->cancelled_cap, key);
  pthread_mutex_unlock(&k->lock);
  return r;
}

bool ks_keys_any(struct ks_keys *k) {
  bool any;
  pthread_mutex_lock(&k->lock);
  any = k->ncancelled > 0;
  pthread_mutex_unlock(&k->lock);
  return any;
}

bool ks_keys_has(struct ks_keys *k, uint64_t a, uint64_t b, uint64_t c) {
  bool found = false;
  if (a == 0 && b == 0 && c == 0)
    return false;
  pthread_mutex_lock(&k->lock);
  for (size_t i = 0; i < k->ncancelled && !found; i++) {
    uint64_t key = k->cancelled[i];
    found = (a != 0 && key == a) || (b != 0 && key == b) || (c != 0 && key == c);
  }
  pthread_mutex_unlock(&k->lock);
  return found;
}

void ks_keys_forget_queued(struct ks_keys *k) {
  pthread_mutex_lock(&k->lock);
  k->forgets_pending++;
  pthread_mutex_unlock(&k->lock);
}

void ks_keys_forget(struct ks_keys *k, uint64_t key, bool queued) {
  pthread_mutex_lock(&k->lock);
  for (size_t i = 0; i < k->ncancelled;) {
    if (k->cancelled[i] == key)
      k->cancelled[i] = k->cancelled[--k->ncancelled];
    else
      i++;
  }
  if (queued)
    k->forgets_pending--;
  pthread_mutex_unlock(&k->lock);
}

size_t ks_keys_count(struct ks_keys *k) {
  size_t n;
  pthread_mutex_lock(&k->lock);
  n = k->ncancelled > k->forgets_pending ? k->ncancelled - k->forgets_pending : 0;
  pthread_mutex_unlock(&k->lock);
  return n;
}

int ks_keys_drop(struct ks_keys *k, uint64_t key) {
  int r;
  pthread_mutex_lock(&k->lock);
  r = ks__push(&k->drops, &k->ndrops, &k->drops_cap, key);
  pthread_mutex_unlock(&k->lock);
  return r;
}

void ks_keys_take_drops(struct ks_keys *k, void (*fn)(void *ctx, uint64_t key), void *ctx) {
  pthread_mutex_lock(&k->lock);
  for (size_t i = 0; i < k->ndrops; i++)
    fn(ctx, k->drops[i]);
  k->ndrops = 0;
  pthread_mutex_unlock(&k->lock);
}

int ks_keys_signal(struct ks_keys *k, uint64_t key, int signo, uint64_t grace_ns) {
  int r;
  pthread_mutex_lock(&k->lock);
  r = ks__push(&k->signals, &k->nsignals, &k->signals_cap, key);
  if (r == 0)
    r = ks__push(&k->signals, &k->nsignals, &k->signals_cap,
                 (uint64_t) (signo & 0xff) | grace_ns << 8);
  if (r != 0)
    k->nsignals &= ~(size_t) 1; /* no half pair */
  pthread_mutex_unlock(&k->lock);
  return r;
}

void ks_keys_take_signals(struct ks_keys *k,
                          void (*fn)(void *ctx, uint64_t key, int signo, uint64_t grace_ns),
                          void *ctx) {
  pthread_mutex_lock(&k->lock);
  for (size_t i = 0; i + 1 < k->nsignals; i += 2)
    fn(ctx, k->signals[i], (int) (k->signals[i + 1] & 0xff), k->signals[i + 1] >> 8);
  k->nsignals = 0;
  pthread_mutex_unlock(&k->lock);
}
