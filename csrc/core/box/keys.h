/* The keys the supervisor is told to act on from other threads: cancelled
 * groups and call keys (ks_sup_cancel_group), and the park keys of prewarm
 * boxes to recycle (ks_sup_drop_parked). One lock guards them; the
 * supervisor thread consults the cancelled set at every spawn and sweep, so
 * a key stays in it until the caller forgets it (ks_sup_forget_group). */
#ifndef KS_CORE_KEYS_H
#define KS_CORE_KEYS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ks_keys {
  pthread_mutex_t lock;
  uint64_t *cancelled; /* guarded by lock */
  size_t ncancelled;   /* guarded by lock */
  size_t cancelled_cap;
  /* Forgets queued behind the boxes submitted before them, not yet done:
   * their groups already count as forgotten (ks_keys_count). */
  size_t forgets_pending; /* guarded by lock */
  /* Signals for calls (ks_keys_signal): pairs of the call key and
   * signo | grace_ns << 8. Guarded by lock. */
  uint64_t *signals;
  size_t nsignals;
  size_t signals_cap;
  uint64_t *drops;     /* guarded by lock */
  size_t ndrops;       /* guarded by lock */
  size_t drops_cap;
};

void ks_keys_init(struct ks_keys *k);
void ks_keys_destroy(struct ks_keys *k);

/* Adds a cancelled key. 0 or -ENOMEM. */
int ks_keys_cancel(struct ks_keys *k, uint64_t key);
/* Whether any key is cancelled. */
bool ks_keys_any(struct ks_keys *k);
/* Whether any of the three keys (0: none) is cancelled. */
bool ks_keys_has(struct ks_keys *k, uint64_t a, uint64_t b, uint64_t c);
/* A forget of key is on its way (forgets_pending); ks_keys_forget ends it. */
void ks_keys_forget_queued(struct ks_keys *k);
/* Drops every entry of key from the cancelled set (a key can be cancelled
 * twice, and one entry left behind would be checked by every sweep
 * forever); with queued, one queued forget is done. */
void ks_keys_forget(struct ks_keys *k, uint64_t key, bool queued);
/* How many keys are cancelled and not on their way to be forgotten. */
size_t ks_keys_count(struct ks_keys *k);

/* Adds a park key to recycle. 0 or -ENOMEM. */
int ks_keys_drop(struct ks_keys *k, uint64_t key);
/* Calls fn for each park key added since the last call, with the lock held
 * (fn must not call back into k), and empties the list. */
void ks_keys_take_drops(struct ks_keys *k, void (*fn)(void *ctx, uint64_t key), void *ctx);

/* A signal for the call of key, its box killed grace_ns later (< 2^56).
 * 0 or -ENOMEM. */
int ks_keys_signal(struct ks_keys *k, uint64_t key, int signo, uint64_t grace_ns);
/* Calls fn for each signal added since the last call, with the lock held
 * (fn must not call back into k), and empties the list. */
void ks_keys_take_signals(struct ks_keys *k,
                          void (*fn)(void *ctx, uint64_t key, int signo, uint64_t grace_ns),
                          void *ctx);

#endif
