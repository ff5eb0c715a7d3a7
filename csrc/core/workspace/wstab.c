/* The hash table of wstab.h. */
#include "wstab.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct ks_tab_slot *ks_tab_find(const struct ks_tab *tab, uint64_t hash, ks_tab_eq_fn eq,
                                const void *key) {
  if (tab->slots == NULL)
    return NULL;
  for (size_t i = hash & tab->mask;; i = (i + 1) & tab->mask) {
    struct ks_tab_slot *s = &tab->slots[i];
    if (s->p == NULL)
      return NULL;
    if (s->hash == hash && eq(s->p, key))
      return s;
  }
}

static int ks__tab_grow(struct ks_tab *tab) {
  size_t cap = tab->slots != NULL ? (tab->mask + 1) * 2 : 64;
  struct ks_tab_slot *slots = calloc(cap, sizeof *slots);

  if (slots == NULL)
    return -ENOMEM;
  for (size_t i = 0; tab->slots != NULL && i <= tab->mask; i++) {
    size_t j;
    if (tab->slots[i].p == NULL)
      continue;
    for (j = tab->slots[i].hash & (cap - 1); slots[j].p != NULL; j = (j + 1) & (cap - 1))
      ;
    slots[j] = tab->slots[i];
  }
  free(tab->slots);
  tab->slots = slots;
  tab->mask = cap - 1;
  return 0;
}

/* Adds p, which the caller knows is not in the table. At most half full, so
 * probes stay short. */
int ks_tab_add(struct ks_tab *tab, uint64_t hash, void *p) {
  size_t i;

  if (tab->slots == NULL || (tab->n + 1) * 2 > tab->mask + 1) {
    if (ks__tab_grow(tab) < 0)
      return -ENOMEM;
  }
  for (i = hash & tab->mask; tab->slots[i].p != NULL; i = (i + 1) & tab->mask)
    ;
  tab->slots[i].hash = hash;
  tab->slots[i].p = p;
  tab->n++;
  return 0;
}

/* Backward-shift deletion: no tombstones, so a table that sees adds and
 * removes for a whole session never degrades and never needs a rebuild. */
void ks_tab_del(struct ks_tab *tab, struct ks_tab_slot *slot) {
  size_t mask = tab->mask;
  size_t i = (size_t) (slot - tab->slots);
  size_t j = i;

  for (;;) {
    size_t k;
    j = (j + 1) & mask;
    if (tab->slots[j].p == NULL)
      break;
    k = tab->slots[j].hash & mask;
    /* An entry whose home k lies cyclically in (i, j] must stay put. */
    if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
      continue;
    tab->slots[i] = tab->slots[j];
    i = j;
  }
  tab->slots[i].p = NULL;
  tab->n--;
}

void ks_tab_free(struct ks_tab *tab) {
  free(tab->slots);
  memset(tab, 0, sizeof *tab);
}

/* The splitmix64 finaliser: watch descriptors and inode numbers are
 * sequential, and linear probing wants their low bits spread. */
uint64_t ks_tab_hash_u64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9u;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebu;
  x ^= x >> 31;
  return x;
}
