/* A process stream's ring (ring.h). Stream positions are 64-bit counts from
 * the stream's start; the byte at position p sits at buf[p % size] while
 * the ring holds it. Growth happens only while no position has wrapped
 * (written <= size), so every held byte is at buf[p] and stays there. */
#define _GNU_SOURCE
#include "ring.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The buffer's first size: a quiet stream never costs more. */
#ifndef KS_RING_FIRST
#define KS_RING_FIRST (64u << 10)
#endif

/* The tests swap in an allocator that fails on demand. */
#ifndef KS_RING_REALLOC
#define KS_RING_REALLOC realloc
#else
void *KS_RING_REALLOC(void *p, size_t n);
#endif

int ks_ring_init(struct ks_ring *r, size_t cap) {
  memset(r, 0, sizeof *r);
  if (cap == 0)
    return -EINVAL;
  r->size = cap < KS_RING_FIRST ? cap : KS_RING_FIRST;
  r->buf = KS_RING_REALLOC(NULL, r->size);
  if (r->buf == NULL)
    return -ENOMEM;
  if (pthread_mutex_init(&r->mu, NULL) != 0) {
    free(r->buf);
    r->buf = NULL;
    return -ENOMEM;
  }
  r->cap = cap;
  return 0;
}

void ks_ring_destroy(struct ks_ring *r) {
  if (r->buf == NULL)
    return;
  free(r->buf);
  r->buf = NULL;
  pthread_mutex_destroy(&r->mu);
}

/* Under mu: room for `need` stream bytes, as far as cap and memory allow;
 * only before the first wrap. A failed growth keeps the buffer as it is. */
static void ks__ring_grow(struct ks_ring *r, uint64_t need) {
  size_t to;
  char *nb;

  if (r->written > r->size || r->size >= r->cap || need <= r->size)
    return;
  to = r->size > r->cap / 2 ? r->cap : r->size * 2;
  if (need > to)
    to = need < r->cap ? (size_t) need : r->cap;
  nb = KS_RING_REALLOC(r->buf, to);
  if (nb == NULL)
    return;
  r->buf = nb;
  r->size = to;
}

/* Under mu: copies n bytes between buf at stream position pos and mem,
 * in at most two pieces (the buffer's end wraps to its start). */
static void ks__ring_copy(struct ks_ring *r, uint64_t pos, void *mem, size_t n, bool in) {
  size_t at = (size_t) (pos % r->size);
  size_t first = r->size - at < n ? r->size - at : n;

  if (n == 0)
    return;
  if (in) {
    memcpy(r->buf + at, mem, first);
    memcpy(r->buf, (char *) mem + first, n - first);
  } else {
    memcpy(mem, r->buf + at, first);
    memcpy((char *) mem + first, r->buf, n - first);
  }
}

bool ks_ring_put(struct ks_ring *r, const void *data, size_t len) {
  size_t keep;
  uint64_t floor;
  bool tell;

  if (len == 0)
    return false;
  pthread_mutex_lock(&r->mu);
  ks__ring_grow(r, r->written + len);
  /* Of more than the ring holds, the first bytes would be overwritten by
   * the last at once: they are only counted. */
  keep = len < r->size ? len : r->size;
  ks__ring_copy(r, r->written + (len - keep), (char *) data + (len - keep), keep, true);
  r->written += len;
  floor = r->written > r->size ? r->written - r->size : 0;
  if (r->readpos < floor) {
    r->dropped += floor - r->readpos;
    r->readpos = floor;
  }
  tell = r->want;
  r->want = false;
  pthread_mutex_unlock(&r->mu);
  return tell;
}

bool ks_ring_close(struct ks_ring *r) {
  bool tell;

  pthread_mutex_lock(&r->mu);
  r->eof = true;
  tell = r->want;
  r->want = false;
  pthread_mutex_unlock(&r->mu);
  return tell;
}

size_t ks_ring_read(struct ks_ring *r, void *out, size_t max, bool *eof) {
  uint64_t unread;
  size_t n;

  pthread_mutex_lock(&r->mu);
  unread = r->written - r->readpos;
  n = unread < max ? (size_t) unread : max;
  ks__ring_copy(r, r->readpos, out, n, false);
  r->readpos += n;
  if (n == 0 && max > 0 && !r->eof)
    r->want = true;
  if (eof != NULL)
    *eof = r->eof && r->readpos == r->written;
  pthread_mutex_unlock(&r->mu);
  return n;
}

void ks_ring_counts(struct ks_ring *r, uint64_t *written, uint64_t *read, uint64_t *dropped) {
  pthread_mutex_lock(&r->mu);
  if (written != NULL)
    *written = r->written;
  if (read != NULL)
    *read = r->readpos - r->dropped;
  if (dropped != NULL)
    *dropped = r->dropped;
  pthread_mutex_unlock(&r->mu);
}

size_t ks_ring_tail(struct ks_ring *r, void *out, size_t max, bool *truncated) {
  uint64_t held;
  size_t n;

  pthread_mutex_lock(&r->mu);
  held = r->written < r->size ? r->written : r->size;
  n = held < max ? (size_t) held : max;
  ks__ring_copy(r, r->written - n, out, n, false);
  if (truncated != NULL)
    *truncated = r->written > n;
  pthread_mutex_unlock(&r->mu);
  return n;
}
