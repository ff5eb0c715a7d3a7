/* Plain C tests of a process stream's ring (csrc/core/box/ring.c), without
 * Node, under ASan/UBSan (see the Makefile).
 *
 * Fixed cases (reads in order, eviction of the oldest unread bytes, a put
 * longer than the ring, the one coalesced "tell" per empty read, the close,
 * the tail), a growth that fails, a writer and a reader on two threads,
 * then a differential run: random puts and reads of random sizes on rings
 * of random capacities against a model that knows the whole stream,
 * checking after every step that the bytes read are the stream's next
 * ones, that read + dropped + unread == written, and now and then that the
 * tail is the stream's last bytes. The Makefile builds it twice: as the
 * addon has ring.c, and with an 8-byte first buffer and an allocator the
 * test can make fail, so that growth by doubling and its failure are
 * driven on small rings.
 *
 *   KS_RING_STEPS=n  the differential run's length (default 300000)
 *   KS_RING_SEED=n   its seed (default: the time; printed) */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "box/ring.h"
#include "check.h"

static bool fail_alloc;

/* The allocator of the small build (KS_RING_REALLOC). */
void *ks_test_realloc(void *p, size_t n);
void *ks_test_realloc(void *p, size_t n) { return fail_alloc ? NULL : realloc(p, n); }

static uint64_t rng_state;

static uint64_t rnd(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

static size_t rnd_below(size_t n) { return n == 0 ? 0 : (size_t) (rnd() % n); }

/* The byte at stream position p of the differential run's stream. */
static unsigned char stream_byte(uint64_t p, uint64_t salt) {
  uint64_t x = (p + 1) * 0x9e3779b97f4a7c15ull ^ salt;
  return (unsigned char) (x >> 29);
}

static bool read_is(struct ks_ring *r, size_t max, const char *want) {
  char out[256];
  size_t n = ks_ring_read(r, out, max, NULL);
  return n == strlen(want) && memcmp(out, want, n) == 0;
}

static bool counts_are(struct ks_ring *r, uint64_t w, uint64_t rd, uint64_t d) {
  uint64_t cw, cr, cd;
  ks_ring_counts(r, &cw, &cr, &cd);
  return cw == w && cr == rd && cd == d;
}

static void test_fixed(void) {
  struct ks_ring r;
  char out[64];
  bool eof, trunc;
  size_t n;

  CHECK(ks_ring_init(&r, 0) == -EINVAL);
  ks_ring_destroy(&r); /* a failed init leaves nothing to free */

  MUST(ks_ring_init(&r, 8) == 0);
  CHECK(!ks_ring_put(&r, "abc", 3));
  CHECK(read_is(&r, 2, "ab"));
  CHECK(read_is(&r, 10, "c"));
  CHECK(!r.want);
  CHECK(read_is(&r, 10, ""));          /* empty: the reader asks to be told */
  CHECK(r.want);
  CHECK(read_is(&r, 0, ""));           /* a zero-byte read asks nothing more */
  CHECK(ks_ring_put(&r, "d", 1));      /* told once */
  CHECK(!ks_ring_put(&r, "e", 1));     /* not again */
  CHECK(!ks_ring_put(&r, "", 0));
  CHECK(read_is(&r, 10, "de"));
  CHECK(counts_are(&r, 5, 5, 0));

  /* Unread bytes past the capacity: the oldest are dropped and counted. */
  CHECK(!ks_ring_put(&r, "0123456789", 10));
  CHECK(counts_are(&r, 15, 5, 2));
  CHECK(read_is(&r, 3, "234"));
  CHECK(!ks_ring_put(&r, "ABCDE", 5)); /* 56789 unread + 5: 2 more dropped */
  CHECK(counts_are(&r, 20, 8, 4));
  CHECK(read_is(&r, 64, "789ABCDE"));
  CHECK(counts_are(&r, 20, 16, 4));

  /* The tail: the last 8 bytes written, read or not. */
  n = ks_ring_tail(&r, out, sizeof out, &trunc);
  CHECK(n == 8 && memcmp(out, "789ABCDE", 8) == 0 && trunc);
  n = ks_ring_tail(&r, out, 3, &trunc); /* the newest when max is smaller */
  CHECK(n == 3 && memcmp(out, "CDE", 3) == 0 && trunc);

  /* A put longer than the ring keeps its last bytes only. */
  CHECK(!ks_ring_put(&r, "abcdefghijklmnopqrstuvwxyz", 26));
  CHECK(counts_are(&r, 46, 16, 22));
  CHECK(read_is(&r, 64, "stuvwxyz"));

  /* The close: a waiting reader is told; an empty closed ring is EOF and
   * asks nothing. */
  CHECK(read_is(&r, 64, "") && r.want);
  CHECK(ks_ring_close(&r));
  CHECK(ks_ring_read(&r, out, sizeof out, &eof) == 0 && eof && !r.want);
  CHECK(!ks_ring_close(&r));
  CHECK(counts_are(&r, 46, 24, 22));
  ks_ring_destroy(&r);

  /* A short stream: not truncated, EOF only once read. */
  MUST(ks_ring_init(&r, 100) == 0);
  ks_ring_put(&r, "hello", 5);
  ks_ring_close(&r);
  n = ks_ring_tail(&r, out, sizeof out, &trunc);
  CHECK(n == 5 && memcmp(out, "hello", 5) == 0 && !trunc);
  CHECK(ks_ring_read(&r, out, 2, &eof) == 2 && !eof);
  CHECK(ks_ring_read(&r, out, 10, &eof) == 3 && eof);
  ks_ring_destroy(&r);
}

/* A growth that fails leaves the ring at its size: it holds fewer bytes, and
 * the counts still add up. Only in the small build (first buffer 8 bytes). */
static void test_grow_fails(void) {
#ifdef KS_RING_REALLOC
  struct ks_ring r;
  char out[64];
  size_t n;

  fail_alloc = true;
  CHECK(ks_ring_init(&r, 64) == -ENOMEM);
  fail_alloc = false;

  MUST(ks_ring_init(&r, 64) == 0);
  CHECK(r.size == 8);
  ks_ring_put(&r, "abcd", 4);
  ks_ring_put(&r, "efghijkl", 8); /* grows to 16 */
  CHECK(r.size == 16);
  fail_alloc = true;
  ks_ring_put(&r, "mnopqrstuvwxyz", 14); /* no growth: 16 bytes held */
  fail_alloc = false;
  CHECK(r.size == 16);
  CHECK(counts_are(&r, 26, 0, 10));
  ks_ring_put(&r, "!", 1); /* it wrapped: no growth any more */
  CHECK(r.size == 16);
  n = ks_ring_read(&r, out, sizeof out, NULL);
  CHECK(n == 16 && memcmp(out, "lmnopqrstuvwxyz!", 16) == 0);
  CHECK(counts_are(&r, 27, 16, 11));
  ks_ring_destroy(&r);
#endif
}

/* A writer and a reader on two threads. The stream's byte at position p is
 * p % 251, so each chunk read must be a run of consecutive positions, and
 * at the end read + dropped == written. */
struct duo {
  struct ks_ring r;
  uint64_t total;
};

static void *duo_writer(void *arg) {
  struct duo *d = arg;
  unsigned char chunk[5000];
  uint64_t p = 0;

  while (p < d->total) {
    size_t n = 1 + (size_t) (p * 7919 % sizeof chunk);
    if (n > d->total - p)
      n = (size_t) (d->total - p);
    for (size_t i = 0; i < n; i++)
      chunk[i] = (unsigned char) ((p + i) % 251);
    ks_ring_put(&d->r, chunk, n);
    p += n;
  }
  ks_ring_close(&d->r);
  return NULL;
}

static void test_threads(void) {
  struct duo d;
  pthread_t t;
  unsigned char out[3000];
  uint64_t got = 0, w, rd, dr;
  bool eof = false, runs_ok = true;
  unsigned reads = 0;

  MUST(ks_ring_init(&d.r, 4096) == 0);
  d.total = 20u << 20;
  MUST(pthread_create(&t, NULL, duo_writer, &d) == 0);
  while (!eof) {
    size_t n = ks_ring_read(&d.r, out, 1 + reads++ % sizeof out, &eof);
    for (size_t i = 1; i < n; i++)
      if (out[i] != (out[i - 1] + 1) % 251)
        runs_ok = false;
    got += n;
  }
  pthread_join(t, NULL);
  ks_ring_counts(&d.r, &w, &rd, &dr);
  CHECK(runs_ok);
  CHECK(w == d.total && rd == got && rd + dr == w);
  ks_ring_destroy(&d.r);
}

/* A size for a put or a read: mostly small, sometimes around the
 * capacity, now and then far past it. */
static size_t rnd_size(size_t cap) {
  switch (rnd_below(8)) {
  case 0:
    return rnd_below(3 * cap + 2);
  case 1:
    return cap - 1 + rnd_below(3);
  case 2:
    return 0;
  default:
    return 1 + rnd_below(cap < 64 ? cap : 64);
  }
}

static size_t rnd_cap(void) {
  switch (rnd_below(6)) {
  case 0:
    return 1 + rnd_below(4);
  case 1:
    return 60000 + rnd_below(20000); /* across the default first size */
  default:
    return 1 + rnd_below(400);
  }
}

static void test_differential(unsigned long steps) {
  unsigned char *buf = NULL, *out = NULL;
  size_t bufcap = 0;
  unsigned long bad = 0;

  for (unsigned long step = 0; step < steps && bad < 5;) {
    struct ks_ring r;
    size_t cap = rnd_cap();
    uint64_t salt = rnd(), written = 0, readpos = 0, dropped = 0, read = 0;
    unsigned long ops = 50 + rnd_below(2000);

    if (3 * cap + 2 > bufcap) {
      bufcap = 3 * cap + 2;
      MUST((buf = realloc(buf, bufcap)) != NULL);
      MUST((out = realloc(out, bufcap)) != NULL);
    }
    MUST(ks_ring_init(&r, cap) == 0);
    for (unsigned long op = 0; op < ops && step < steps; op++, step++) {
      size_t n = rnd_size(cap);
      if (rnd_below(2)) {
        for (size_t i = 0; i < n; i++)
          buf[i] = stream_byte(written + i, salt);
        ks_ring_put(&r, buf, n);
        written += n;
        if (written > cap && readpos < written - cap) {
          dropped += written - cap - readpos;
          readpos = written - cap;
        }
      } else {
        size_t got = ks_ring_read(&r, out, n, NULL);
        size_t want = written - readpos < n ? (size_t) (written - readpos) : n;
        bool same = got == want;
        for (size_t i = 0; same && i < got; i++)
          same = out[i] == stream_byte(readpos + i, salt);
        if (!same && bad++ < 5)
          fprintf(stderr, "step %lu: cap %zu read %zu of %zu at %llu: wrong bytes\n", step, cap,
                  got, n, (unsigned long long) readpos);
        CHECK(same);
        readpos += got;
        read += got;
      }
      {
        uint64_t cw, cr, cd;
        ks_ring_counts(&r, &cw, &cr, &cd);
        CHECK(cw == written && cr == read && cd == dropped && cr + cd + (cw - readpos) == cw);
      }
      if (rnd_below(50) == 0) {
        bool trunc;
        size_t max = rnd_size(cap) + 1;
        size_t held = written < cap ? (size_t) written : cap;
        size_t want = held < max ? held : max;
        size_t got = ks_ring_tail(&r, out, max, &trunc);
        bool same = got == want && trunc == (written > want);
        for (size_t i = 0; same && i < got; i++)
          same = out[i] == stream_byte(written - want + i, salt);
        CHECK(same);
      }
    }
    ks_ring_destroy(&r);
  }
  free(buf);
  free(out);
}

int main(void) {
  mode_name = "ring";
  const char *steps_env = getenv("KS_RING_STEPS");
  const char *seed_env = getenv("KS_RING_SEED");
  unsigned long steps = steps_env != NULL ? strtoul(steps_env, NULL, 10) : 300000;
  unsigned long long seed =
      seed_env != NULL ? strtoull(seed_env, NULL, 10) : (unsigned long long) time(NULL);

  rng_state = seed * 2654435761ull + 1;
  test_fixed();
  test_grow_fails();
  test_threads();
  test_differential(steps);
  printf("test_ring: seed %llu, %lu steps, %d checks, %d failures\n", seed, steps, checks,
         failures);
  return failures == 0 ? 0 : 1;
}
