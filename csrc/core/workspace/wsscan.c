/* The change scan: one walk into one arena, then an open-addressing table.
 *
 * Nothing is allocated per file: paths go into the walk's arena, records
 * into one array, and the table is a single array of record indices. The
 * cost of a scan is therefore the kernel's (getdents64 and one fstatat per
 * regular file), which is what the per-call latency budget is spent on. */
#define _GNU_SOURCE
#include "wsscan.h"

#include <stdlib.h>
#include <string.h>

#include "../util.h"
#include "wsfs.h"

struct ks_ws_scan {
  struct ks_ws_walk walk;
  uint32_t *slots; /* record index + 1, 0 for an empty slot */
  size_t mask;     /* number of slots - 1, a power of two minus one */
  size_t count;    /* distinct paths */
};

/* The table keeps 32 bits of the path's hash per record. */
static uint32_t ks__hash(const char *s, size_t len) {
  return (uint32_t) ks_hash_bytes(s, len);
}

static const struct ks_ws_rec *ks__lookup(const struct ks_ws_scan *scan, const char *path,
                                          uint32_t len, uint32_t hash) {
  size_t i;

  if (scan->slots == NULL)
    return NULL;
  for (i = hash & scan->mask;; i = (i + 1) & scan->mask) {
    uint32_t slot = scan->slots[i];
    const struct ks_ws_rec *rec;
    if (slot == 0)
      return NULL;
    rec = &scan->walk.recs[slot - 1];
    if (rec->hash == hash && rec->len == len &&
        memcmp(scan->walk.arena + rec->off, path, len) == 0)
      return rec;
  }
}

static int ks__index(struct ks_ws_scan *scan) {
  size_t n = scan->walk.n;
  size_t cap = 16;

  /* At most half full, so probes stay short. n <= 1,000,000 (the walk's
   * cap), so indices fit in 32 bits. */
  while (cap < n * 2)
    cap *= 2;
  scan->slots = calloc(cap, sizeof *scan->slots);
  if (scan->slots == NULL)
    return -ENOMEM;
  scan->mask = cap - 1;
  for (size_t r = 0; r < n; r++) {
    struct ks_ws_rec *rec = &scan->walk.recs[r];
    const char *path = scan->walk.arena + rec->off;
    size_t i;

    rec->hash = ks__hash(path, rec->len);
    for (i = rec->hash & scan->mask;; i = (i + 1) & scan->mask) {
      uint32_t slot = scan->slots[i];
      const struct ks_ws_rec *other;
      if (slot == 0) {
        scan->slots[i] = (uint32_t) r + 1;
        scan->count++;
        break;
      }
      other = &scan->walk.recs[slot - 1];
      /* getdents can return a name twice when it is renamed during the
       * walk: keep the first record. */
      if (other->hash == rec->hash && other->len == rec->len &&
          memcmp(scan->walk.arena + other->off, path, rec->len) == 0)
        break;
    }
  }
  return 0;
}

int ks_ws_scan(int rootfd, struct ks_ws_scan **ret, struct ks_err *err) {
  struct ks_ws_scan *scan = calloc(1, sizeof *scan);
  int r;

  if (scan == NULL)
    return ks_err_set(err, ENOMEM, "malloc", NULL);
  r = ks_ws_walk(rootfd, "", &scan->walk, err);
  if (r < 0) {
    ks_ws_scan_free(scan);
    return r;
  }
  if (ks__index(scan) < 0) {
    ks_ws_scan_free(scan);
    return ks_err_set(err, ENOMEM, "malloc", NULL);
  }
  *ret = scan;
  return 0;
}

static int ks__change_cmp(const void *a, const void *b) {
  return strcmp(((const struct ks_ws_change *) a)->path,
                ((const struct ks_ws_change *) b)->path);
}

int ks_ws_scan_diff(const struct ks_ws_scan *before, const struct ks_ws_scan *after,
                    struct ks_ws_change **ret, size_t *ret_n) {
  struct ks_ws_change *out = NULL;
  size_t n = 0;
  size_t cap = 0;

  /* Walk the slots, not the records: each distinct path once. */
  for (size_t i = 0; after->slots != NULL && i <= after->mask; i++) {
    const struct ks_ws_rec *rec;
    const struct ks_ws_rec *old;
    const char *path;
    enum ks_ws_change_kind kind;

    if (after->slots[i] == 0)
      continue;
    rec = &after->walk.recs[after->slots[i] - 1];
    path = after->walk.arena + rec->off;
    old = ks__lookup(before, path, rec->len, rec->hash);
    if (old == NULL)
      kind = KS_WS_CREATED;
    else if (old->size != rec->size || old->mtime_ns != rec->mtime_ns)
      kind = KS_WS_MODIFIED;
    else
      continue;
    if (n == cap) {
      size_t ncap = cap != 0 ? cap * 2 : 64;
      struct ks_ws_change *nout = realloc(out, ncap * sizeof *nout);
      if (nout == NULL) {
        free(out);
        return -ENOMEM;
      }
      out = nout;
      cap = ncap;
    }
    out[n].path = path;
    out[n].size = rec->size;
    out[n].kind = kind;
    n++;
  }
  if (n > 1)
    qsort(out, n, sizeof *out, ks__change_cmp);
  *ret = out;
  *ret_n = n;
  return 0;
}

int ks_ws_rescan_diff(int rootfd, const struct ks_ws_scan *before,
                      struct ks_ws_scan **ret_after, struct ks_ws_change **ret,
                      size_t *ret_n, struct ks_err *err) {
  struct ks_ws_scan *after = NULL;
  int r = ks_ws_scan(rootfd, &after, err);

  if (r < 0)
    return r;
  r = ks_ws_scan_diff(before, after, ret, ret_n);
  if (r < 0) {
    ks_ws_scan_free(after);
    return ks_err_set(err, -r, "malloc", NULL);
  }
  *ret_after = after;
  return 0;
}

size_t ks_ws_scan_count(const struct ks_ws_scan *scan) {
  return scan->count;
}

size_t ks_ws_scan_bytes(const struct ks_ws_scan *scan) {
  return sizeof *scan + scan->walk.cap * sizeof *scan->walk.recs + scan->walk.arena_cap +
         (scan->slots != NULL ? (scan->mask + 1) * sizeof *scan->slots : 0);
}

void ks_ws_scan_free(struct ks_ws_scan *scan) {
  if (scan == NULL)
    return;
  ks_ws_walk_free(&scan->walk);
  free(scan->slots);
  free(scan);
}
