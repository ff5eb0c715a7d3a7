/* The event loop's timers: a binary min-heap of deadlines (loop.h arms
 * and fires them; the subsystems arm theirs on it). A timer lives in its
 * owner's memory, as a watch does; the heap holds pointers to timers and
 * each timer knows its slot, so arming again, disarming and firing are
 * O(log n) and no one scans every owner for the next deadline.
 *
 * Single-threaded: the loop's thread only. Plain C, no box. */
#ifndef KS_CORE_TIMERS_H
#define KS_CORE_TIMERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ks_timer;

/* A timer is due: ctx as the heap's user gave it (the loop's ctx); now,
 * the time it fired at. The timer is disarmed before this runs, so fn may
 * arm it again or free its owner. */
typedef void ks_timer_fn(void *ctx, struct ks_timer *t, uint64_t now);

#define KS_TIMER_IDLE SIZE_MAX /* index of a timer not armed */

struct ks_timer {
  uint64_t at;      /* when it is due (ks_now_ns), while armed */
  size_t index;     /* its slot in the heap; KS_TIMER_IDLE; or KS_TIMER_SPILLED */
  ks_timer_fn *fn;
  void *owner;
  struct ks_timer *spill_next; /* on the spill list (see struct ks_timers) */
};

/* A timer the heap had no room for (its array could not grow): kept on a
 * list instead, scanned only while it is not empty, so no deadline is ever
 * lost to an allocation failure. */
#define KS_TIMER_SPILLED (SIZE_MAX - 1)

struct ks_timers {
  struct ks_timer **heap; /* heap[0] is due first; heap[i]->index == i */
  size_t n;
  size_t cap;
  struct ks_timer *spill;
};

void ks_timers_init(struct ks_timers *h);
/* Frees the heap's array. The timers in it are their owners' and are not
 * touched: each owner disarms its own before it goes. */
void ks_timers_destroy(struct ks_timers *h);

/* A timer not armed yet, for fn with owner. */
void ks_timer_init(struct ks_timer *t, ks_timer_fn *fn, void *owner);
static inline bool ks_timer_armed(const struct ks_timer *t) { return t->index != KS_TIMER_IDLE; }

/* Arms t for at, or moves it there if it is armed already. */
void ks_timers_arm(struct ks_timers *h, struct ks_timer *t, uint64_t at);
/* Disarms t; nothing if it is not armed. */
void ks_timers_disarm(struct ks_timers *h, struct ks_timer *t);
/* When the first timer is due, UINT64_MAX when none is armed. */
uint64_t ks_timers_next(const struct ks_timers *h);
/* Disarms and returns the earliest timer, if it is due at or before now;
 * NULL when none is. */
struct ks_timer *ks_timers_pop_due(struct ks_timers *h, uint64_t now);

#endif
