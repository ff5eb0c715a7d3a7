/* Small helpers shared by the core: cleanup attributes, fd hand-off, the clock. */
#ifndef KS_CORE_UTIL_H
#define KS_CORE_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define KS_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Monotonic nanoseconds: a jump of the wall clock moves no deadline. */
static inline uint64_t ks_now_ns(void) {
  struct timespec ts;
  (void) clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

/* close(2) that keeps errno intact, so cleanup never hides the real error. */
static inline void ks_close_keep_errno(int fd) {
  int saved = errno;
  if (fd >= 0)
    (void) close(fd);
  errno = saved;
}

static inline void ks__cleanup_close(int *fd) { ks_close_keep_errno(*fd); }
static inline void ks__cleanup_free(void *p) { free(*(void **) p); }

#define _cleanup_close_ __attribute__((cleanup(ks__cleanup_close)))
#define _cleanup_free_ __attribute__((cleanup(ks__cleanup_free)))

/* Hands ownership of an fd to the caller: the variable becomes -1, so its
 * cleanup attribute closes nothing. */
static inline int ks_take_fd(int *fd) {
  int ret = *fd;
  *fd = -1;
  return ret;
}

static inline void *ks_take_ptr(void *pp) {
  void **p = pp;
  void *ret = *p;
  *p = NULL;
  return ret;
}

/* Makes room for `need` bytes in a growing buffer (doubling from 4 KiB).
 * Returns 0 or -ENOMEM (the buffer is unchanged then). */
static inline int ks_buf_reserve(char **buf, size_t *cap, size_t need) {
  size_t ncap;
  char *nbuf;
  if (need <= *cap)
    return 0;
  ncap = *cap != 0 ? *cap * 2 : 4096;
  while (ncap < need)
    ncap *= 2;
  nbuf = realloc(*buf, ncap);
  if (nbuf == NULL)
    return -ENOMEM;
  *buf = nbuf;
  *cap = ncap;
  return 0;
}

/* FNV-1a (64-bit) of a byte string: the key of the core's hash tables of
 * paths. The paths are the box's to choose, so they may collide on purpose;
 * that only slows the lookups of the workspace the box itself lives in. */
static inline uint64_t ks_hash_bytes(const char *s, size_t len) {
  uint64_t h = 14695981039346656037u;
  for (size_t i = 0; i < len; i++) {
    h ^= (unsigned char) s[i];
    h *= 1099511628211u;
  }
  return h;
}

#endif
