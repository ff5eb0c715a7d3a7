/* Plain C tests of the event loop's timer heap (csrc/core/box/timers.c),
 * without Node, under ASan/UBSan (see the Makefile).
 *
 * Fixed cases (order, re-arming earlier and later, disarming in the middle
 * and twice, a callback that frees its owner), then a differential run:
 * random arms, re-arms, disarms and pops against a plain array, checking
 * after each step that the heap's next time and every pop agree with it
 * and that each timer's slot is its place in the heap. The Makefile builds
 * it twice: as the addon has it, and with the array capped at 64 slots, so
 * that timers past it go to the spill list and are still fired in order
 * of time among what is due. */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "box/timers.h"
#include "check.h"

static int fired;

static void on_fire(void *ctx, struct ks_timer *t, uint64_t now) {
  (void) ctx;
  (void) t;
  (void) now;
  fired++;
}

/* Every timer in the heap sits in its slot, and no child is due before its
 * parent. */
static bool heap_ok(const struct ks_timers *h) {
  for (size_t i = 0; i < h->n; i++) {
    if (h->heap[i]->index != i)
      return false;
    if (i > 0 && h->heap[(i - 1) / 2]->at > h->heap[i]->at)
      return false;
  }
  return true;
}

static void test_basics(void) {
  struct ks_timers h;
  struct ks_timer t[5];
  uint64_t at[5] = {50, 10, 40, 20, 30};

  ks_timers_init(&h);
  CHECK(ks_timers_next(&h) == UINT64_MAX);
  CHECK(ks_timers_pop_due(&h, UINT64_MAX - 2) == NULL);
  for (int i = 0; i < 5; i++) {
    ks_timer_init(&t[i], on_fire, &t[i]);
    CHECK(!ks_timer_armed(&t[i]));
    ks_timers_arm(&h, &t[i], at[i]);
    CHECK(ks_timer_armed(&t[i]));
  }
  CHECK(heap_ok(&h));
  CHECK(ks_timers_next(&h) == 10);
  CHECK(ks_timers_pop_due(&h, 9) == NULL); /* nothing due before its time */
  ks_timers_arm(&h, &t[0], 5);             /* re-armed earlier: first now */
  CHECK(ks_timers_next(&h) == 5 && heap_ok(&h));
  ks_timers_arm(&h, &t[0], 45);            /* and later again */
  CHECK(ks_timers_next(&h) == 10 && heap_ok(&h));
  ks_timers_disarm(&h, &t[2]);             /* the 40 goes from the middle */
  CHECK(!ks_timer_armed(&t[2]) && heap_ok(&h));
  ks_timers_disarm(&h, &t[2]);             /* twice is nothing */
  CHECK(h.n == 4);
  {
    uint64_t want[4] = {10, 20, 30, 45};
    for (int i = 0; i < 4; i++) {
      struct ks_timer *p = ks_timers_pop_due(&h, 100);
      CHECK(p != NULL && p->at == want[i] && !ks_timer_armed(p));
      CHECK(heap_ok(&h));
    }
  }
  CHECK(ks_timers_pop_due(&h, 100) == NULL);
  CHECK(ks_timers_next(&h) == UINT64_MAX);
  /* Same time twice: both fire. */
  ks_timers_arm(&h, &t[0], 7);
  ks_timers_arm(&h, &t[1], 7);
  CHECK(ks_timers_pop_due(&h, 7) != NULL && ks_timers_pop_due(&h, 7) != NULL);
  CHECK(ks_timers_pop_due(&h, 7) == NULL);
  ks_timers_destroy(&h);
}

/* A callback may free its timer's owner: the heap no longer holds it. */
static void test_free_in_callback(void) {
  struct ks_timers h;
  struct ks_timer *t;
  struct ks_timer *keep = malloc(sizeof *keep);

  ks_timers_init(&h);
  MUST(keep != NULL);
  ks_timer_init(keep, on_fire, NULL);
  ks_timers_arm(&h, keep, 1000);
  for (int i = 0; i < 100; i++) {
    struct ks_timer *own = malloc(sizeof *own);
    MUST(own != NULL);
    ks_timer_init(own, on_fire, own);
    ks_timers_arm(&h, own, (uint64_t) (i * 7 % 31));
  }
  fired = 0;
  while ((t = ks_timers_pop_due(&h, 999)) != NULL) {
    t->fn(NULL, t, 999);
    free(t->owner);
  }
  CHECK(fired == 100);
  CHECK(h.n + (h.spill != NULL) == 1 && ks_timers_next(&h) == 1000);
  CHECK(ks_timers_pop_due(&h, 1000) == keep && !ks_timer_armed(keep));
  ks_timers_destroy(&h);
  free(keep);
}

/* Many armed at once, past the capped build's array: they pop in the
 * order of their times, the spilled ones among them. */
static void test_many(void) {
  static struct ks_timer t[300];
  struct ks_timers h;
  struct ks_timer *p;
  uint64_t last = 0;
  int n = 0;

  ks_timers_init(&h);
  for (int i = 0; i < 300; i++) {
    ks_timer_init(&t[i], on_fire, &t[i]);
    ks_timers_arm(&h, &t[i], (uint64_t) ((i * 7919) % 1000));
  }
#ifdef KS_TIMERS_CAP_LIMIT
  CHECK(h.spill != NULL && h.n == KS_TIMERS_CAP_LIMIT);
#else
  CHECK(h.spill == NULL && h.n == 300);
#endif
  CHECK(ks_timers_next(&h) == 0);
  ks_timers_arm(&h, &t[0], 5000); /* a spilled or heaped one re-armed later */
  ks_timers_disarm(&h, &t[299]);
  while ((p = ks_timers_pop_due(&h, 1000)) != NULL) {
    CHECK(p->at >= last && !ks_timer_armed(p));
    last = p->at;
    n++;
  }
  CHECK(n == 298);
  CHECK(ks_timers_next(&h) == 5000);
  CHECK(ks_timers_pop_due(&h, 5000) == &t[0]);
  CHECK(ks_timers_next(&h) == UINT64_MAX);
  ks_timers_destroy(&h);
}

/* A small deterministic generator: the same run every time. */
static uint64_t rng = 20261204;
static uint64_t next_rand(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

#define NT 500

static void test_differential(void) {
  static struct ks_timer t[NT];
  static uint64_t ref[NT]; /* UINT64_MAX: not armed */
  struct ks_timers h;
  uint64_t now = 0;
  long steps = 0, pops = 0;

  ks_timers_init(&h);
  for (int i = 0; i < NT; i++) {
    ks_timer_init(&t[i], on_fire, &t[i]);
    ref[i] = UINT64_MAX;
  }
  for (int step = 0; step < 200000; step++) {
    int i = (int) (next_rand() % NT);
    unsigned op = (unsigned) (next_rand() % 10);
    uint64_t min = UINT64_MAX;

    if (op < 5) { /* arm or re-arm, at or after now */
      ref[i] = now + next_rand() % 1000;
      ks_timers_arm(&h, &t[i], ref[i]);
    } else if (op < 7) {
      ref[i] = UINT64_MAX;
      ks_timers_disarm(&h, &t[i]);
    } else { /* time moves on; everything due pops, never early */
      struct ks_timer *p;
      now += next_rand() % 200;
      while ((p = ks_timers_pop_due(&h, now)) != NULL) {
        int j = (int) (p - t);
        if (ref[j] > now || ref[j] == UINT64_MAX) {
          CHECK(!"a timer popped early, or one not armed");
          break;
        }
        ref[j] = UINT64_MAX;
        pops++;
      }
      for (int j = 0; j < NT; j++) {
        if (ref[j] <= now) {
          CHECK(!"a due timer did not pop");
          break;
        }
      }
    }
    for (int j = 0; j < NT; j++) {
      if (ref[j] < min)
        min = ref[j];
      if (ks_timer_armed(&t[j]) != (ref[j] != UINT64_MAX)) {
        CHECK(!"armed differs from the reference");
        step = 1 << 30;
        break;
      }
    }
      if (ks_timers_next(&h) != min || !heap_ok(&h)) {
      CHECK(!"next time or heap order differs from the reference");
      break;
    }
    steps++;
  }
  CHECK(steps == 200000);
  CHECK(pops > 1000);
  ks_timers_destroy(&h);
}

int main(void) {
#ifdef KS_TIMERS_CAP_LIMIT
  mode_name = "capped";
#else
  mode_name = "heap";
#endif
  test_basics();
  test_free_in_callback();
  test_many();
  test_differential();
  printf("test_timers [%s]: %d checks, %d failures\n", mode_name, checks, failures);
  return failures == 0 ? 0 : 1;
}
