/* A hash table of pointers (wstab.c): open addressing with linear probing,
 * the caller's hash kept in each slot and the caller's equality test. The
 * change tracker's indexes (by path, by watch, by inode) are tables of it. */
#ifndef KS_CORE_WSTAB_H
#define KS_CORE_WSTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Open addressing with linear probing over pointers; the full hash is kept
 * in the slot so growing never rehashes a key. */
struct ks_tab_slot {
  uint64_t hash;
  void *p; /* NULL: empty */
};

struct ks_tab {
  struct ks_tab_slot *slots;
  size_t mask;
  size_t n;
};

typedef bool (*ks_tab_eq_fn)(const void *p, const void *key);

/* The slot holding the entry equal to key, or NULL. */
struct ks_tab_slot *ks_tab_find(const struct ks_tab *tab, uint64_t hash, ks_tab_eq_fn eq,
                                const void *key);
/* Adds p, which the caller knows is not in the table: 0 or -ENOMEM. */
int ks_tab_add(struct ks_tab *tab, uint64_t hash, void *p);
/* Removes the entry of slot (from ks_tab_find). */
void ks_tab_del(struct ks_tab *tab, struct ks_tab_slot *slot);
void ks_tab_free(struct ks_tab *tab);
/* A hash of a number: sequential numbers get spread low bits. */
uint64_t ks_tab_hash_u64(uint64_t x);

#endif
