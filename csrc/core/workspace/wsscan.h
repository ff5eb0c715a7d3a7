/* The per-call change scan: which workspace files a run created or modified.
 *
 * A run's result lists the files it touched. The scan before the run and the
 * one after are both full walks of the workspace (the walk and exclusions of
 * ks_ws_list), kept as a hash map from path to (size, mtime), so the
 * comparison costs one lookup per file, not a sort or a second walk. */
#ifndef KS_CORE_WSSCAN_H
#define KS_CORE_WSSCAN_H

#include <stddef.h>
#include <stdint.h>

#include "../err.h"

struct ks_ws_scan;

enum ks_ws_change_kind {
  KS_WS_CREATED = 0, /* not in the earlier scan */
  KS_WS_MODIFIED = 1 /* in both, with a different size or mtime */
};

struct ks_ws_change {
  const char *path; /* borrowed from the later scan */
  uint64_t size;
  enum ks_ws_change_kind kind;
};

/* Scans the whole workspace beneath rootfd. Free the result with
 * ks_ws_scan_free. Errors as for ks_ws_list (path NULL): -E2BIG past
 * 1,000,000 files, -ENAMETOOLONG for a path over 4095 bytes, -ENOMEM... */
int ks_ws_scan(int rootfd, struct ks_ws_scan **ret, struct ks_err *err);

/* The files of after that are missing from before (created) or differ in
 * size or mtime (modified), sorted by path (strcmp). Deleted files are not
 * reported. *ret is one malloc()ed array (free() it; NULL when *ret_n is 0);
 * its paths point into after, which must outlive it.
 * Returns 0, or -ENOMEM. */
int ks_ws_scan_diff(const struct ks_ws_scan *before, const struct ks_ws_scan *after,
                    struct ks_ws_change **ret, size_t *ret_n);

/* ks_ws_scan followed by ks_ws_scan_diff, for callers (a worker thread) that
 * make one core call per job. *ret_after receives the new scan, which owns
 * the paths of *ret: free both. Errors as for ks_ws_scan. */
int ks_ws_rescan_diff(int rootfd, const struct ks_ws_scan *before,
                      struct ks_ws_scan **ret_after, struct ks_ws_change **ret,
                      size_t *ret_n, struct ks_err *err);

/* Number of distinct files in the scan, and the bytes it holds (for
 * telling a garbage collector what it keeps alive). */
size_t ks_ws_scan_count(const struct ks_ws_scan *scan);
size_t ks_ws_scan_bytes(const struct ks_ws_scan *scan);

void ks_ws_scan_free(struct ks_ws_scan *scan);

#endif
