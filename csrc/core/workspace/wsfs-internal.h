/* What wsfs.c (paths, resolution, reading and writing) and wswalk.c
 * (walking, listing and removing a tree) share. Not for use outside
 * csrc/core/workspace/; included after wsfs.h (KS_WS_PATH_MAX), which it
 * does not include itself, so that the two stay one module. */
#ifndef KS_CORE_WSFS_INTERNAL_H
#define KS_CORE_WSFS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../err.h"

/* The layout getdents64(2) writes; glibc only wraps it since 2.30. */
struct ks__dirent64 {
  uint64_t d_ino;
  int64_t d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[];
};

#define KS__DENTS_BUF (64 * 1024)
/* A name we create (temp file, hoisted directory) can collide only with one
 * the box guessed; a handful of fresh random names settles it. */
#define KS__NAME_RETRIES 16
/* A directory path is at most 4095 bytes and every level adds at least
 * two, so a walk never holds more descriptors than this. */
#define KS__MAX_DEPTH (KS_WS_PATH_MAX / 2 + 2)

/* Yields the components of [*pp, end) other than "" and ".". */
bool ks_wsfs_next_comp(const char **pp, const char *end, const char **ret, size_t *ret_len);
/* Resolves rel[0 .. len) (which need not be NUL-terminated) beneath rootfd;
 * errors name errpath. The shape was checked by the caller. */
int ks_wsfs_open_beneath_n(int rootfd, const char *rel, size_t len, const char *errpath, int flags,
                           mode_t mode, int *ret_fd, struct ks_err *err);
/* A fresh name with prefix, random enough that only a guess collides. */
void ks_wsfs_random_name(char *out, size_t size, const char *prefix);

#endif
