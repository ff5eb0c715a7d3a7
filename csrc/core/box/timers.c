/* The loop's timer heap (timers.h). */
#include "timers.h"

#include <stdlib.h>

#define KS__TIMERS_MIN_CAP 64
/* The test build (test/c) caps the array to drive the spill list. */
#ifndef KS_TIMERS_CAP_LIMIT
#define KS_TIMERS_CAP_LIMIT SIZE_MAX
#endif

void ks_timers_init(struct ks_timers *h) {
  h->heap = NULL;
  h->n = h->cap = 0;
  h->spill = NULL;
}

void ks_timers_destroy(struct ks_timers *h) {
  /* The timers are their owners' and may be gone: not touched. */
  free(h->heap);
  ks_timers_init(h);
}

void ks_timer_init(struct ks_timer *t, ks_timer_fn *fn, void *owner) {
  t->at = UINT64_MAX;
  t->index = KS_TIMER_IDLE;
  t->fn = fn;
  t->owner = owner;
  t->spill_next = NULL;
}

static void ks__place(struct ks_timers *h, size_t i, struct ks_timer *t) {
  h->heap[i] = t;
  t->index = i;
}

static void ks__sift_up(struct ks_timers *h, size_t i) {
  struct ks_timer *t = h->heap[i];
  while (i > 0) {
    size_t parent = (i - 1) / 2;
    if (h->heap[parent]->at <= t->at)
      break;
    ks__place(h, i, h->heap[parent]);
    i = parent;
  }
  ks__place(h, i, t);
}

static void ks__sift_down(struct ks_timers *h, size_t i) {
  struct ks_timer *t = h->heap[i];
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= h->n)
      break;
    if (c + 1 < h->n && h->heap[c + 1]->at < h->heap[c]->at)
      c++;
    if (t->at <= h->heap[c]->at)
      break;
    ks__place(h, i, h->heap[c]);
    i = c;
  }
  ks__place(h, i, t);
}

/* Takes the timer in slot i out of the heap. */
static void ks__remove_at(struct ks_timers *h, size_t i) {
  struct ks_timer *last = h->heap[--h->n];
  h->heap[i]->index = KS_TIMER_IDLE;
  if (i == h->n)
    return;
  ks__place(h, i, last);
  ks__sift_down(h, i);
  ks__sift_up(h, last->index);
}

static void ks__spill_remove(struct ks_timers *h, struct ks_timer *t) {
  for (struct ks_timer **pp = &h->spill; *pp != NULL; pp = &(*pp)->spill_next) {
    if (*pp == t) {
      *pp = t->spill_next;
      break;
    }
  }
  t->spill_next = NULL;
  t->index = KS_TIMER_IDLE;
}

void ks_timers_disarm(struct ks_timers *h, struct ks_timer *t) {
  if (t->index == KS_TIMER_SPILLED)
    ks__spill_remove(h, t);
  else if (t->index != KS_TIMER_IDLE)
    ks__remove_at(h, t->index);
}

void ks_timers_arm(struct ks_timers *h, struct ks_timer *t, uint64_t at) {
  if (t->index != KS_TIMER_IDLE && t->index != KS_TIMER_SPILLED) {
    uint64_t was = t->at;
    t->at = at;
    if (at < was)
      ks__sift_up(h, t->index);
    else
      ks__sift_down(h, t->index);
    return;
  }
  ks_timers_disarm(h, t);
  t->at = at;
  if (h->n == h->cap) {
    size_t cap = h->cap ? h->cap * 2 : KS__TIMERS_MIN_CAP;
    struct ks_timer **heap =
        cap <= KS_TIMERS_CAP_LIMIT ? realloc(h->heap, cap * sizeof *heap) : NULL;
    if (heap == NULL) {
      t->index = KS_TIMER_SPILLED;
      t->spill_next = h->spill;
      h->spill = t;
      return;
    }
    h->heap = heap;
    h->cap = cap;
  }
  h->heap[h->n] = t;
  t->index = h->n++;
  ks__sift_up(h, t->index);
}

uint64_t ks_timers_next(const struct ks_timers *h) {
  uint64_t next = h->n > 0 ? h->heap[0]->at : UINT64_MAX;
  for (const struct ks_timer *t = h->spill; t != NULL; t = t->spill_next) {
    if (t->at < next)
      next = t->at;
  }
  return next;
}

struct ks_timer *ks_timers_pop_due(struct ks_timers *h, uint64_t now) {
  struct ks_timer *t = h->n > 0 ? h->heap[0] : NULL;

  for (struct ks_timer *s = h->spill; s != NULL; s = s->spill_next) {
    if (t == NULL || s->at < t->at)
      t = s;
  }
  if (t == NULL || t->at > now)
    return NULL;
  ks_timers_disarm(h, t);
  return t;
}
