/* A process stream's ring (docs/plan-processes.md, section 3): the bytes a
 * process box wrote on one stream, between the supervisor, which puts what
 * it drained from the pipe, and the JS thread, which reads them.
 *
 * It always holds the last `cap` bytes written (fewer until that many were
 * written). A put never waits and never fails: when unread bytes would not
 * fit, the oldest unread ones are evicted and counted in `dropped`, so the
 * box is never stalled by a slow or absent reader and host memory never
 * grows past cap. Every byte written is read exactly once or dropped
 * exactly once:
 *
 *     read + dropped + unread == written,   readpos == read + dropped
 *
 * The same buffer is the process's final tail (ks_ring_tail): the last
 * bytes written, read or not, truncated when written > held.
 *
 * The buffer grows by doubling up to cap, and only before its first wrap,
 * so an idle or quiet stream costs little. A growth that fails leaves the
 * ring at the size it has: it then holds fewer bytes than cap, and the
 * identity above still holds.
 *
 * Thread-safe: one lock, held for a memcpy and never across a system call.
 * `want` is the reader's request to be told: a read that finds nothing sets
 * it, and the next put (or the close) clears it and says so, so a writer
 * sends one coalesced "readable" however many puts follow. */
#ifndef KS_CORE_RING_H
#define KS_CORE_RING_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ks_ring {
  pthread_mutex_t mu;
  /* Under mu. */
  char *buf;          /* size bytes; the byte at stream position p is buf[p % size] */
  size_t size;        /* what buf holds now, <= cap */
  size_t cap;         /* the most it ever holds */
  uint64_t written;   /* bytes put */
  uint64_t readpos;   /* stream position of the next unread byte */
  uint64_t dropped;   /* bytes evicted unread */
  bool want;          /* a reader found it empty and waits to be told */
  bool eof;           /* closed: no byte follows */
};

/* A ring that will hold at most cap (>= 1) bytes: 0, or -EINVAL or -ENOMEM.
 * The buffer starts small (KS_RING_FIRST) and grows as bytes come. */
int ks_ring_init(struct ks_ring *r, size_t cap);
void ks_ring_destroy(struct ks_ring *r);

/* Appends len bytes (any length; of more than the ring holds only the last
 * ones are kept). Returns true when a reader waits to be told (`want` was
 * set; it is now clear): the caller tells it once. */
bool ks_ring_put(struct ks_ring *r, const void *data, size_t len);

/* No byte follows. Returns true when a reader waits to be told. */
bool ks_ring_close(struct ks_ring *r);

/* Copies up to max unread bytes into out and returns how many. When none
 * is unread and the ring is open, sets `want` (the next put says so).
 * *eof (may be NULL): the ring is closed and nothing is left unread. */
size_t ks_ring_read(struct ks_ring *r, void *out, size_t max, bool *eof);

/* The counts, read together under the lock (any pointer may be NULL). */
void ks_ring_counts(struct ks_ring *r, uint64_t *written, uint64_t *read, uint64_t *dropped);

/* Copies the last bytes written that the ring still holds, read or not,
 * oldest first, up to max (the newest when max is smaller), and returns
 * how many; *truncated: they are not the whole stream. */
size_t ks_ring_tail(struct ks_ring *r, void *out, size_t max, bool *truncated);

#endif
