/* Error reporting for the plain-C core.
 *
 * A core function that can fail returns 0 (or a non-negative count) or a
 * negative errno, and describes the failure in a caller-provided struct that
 * owns no memory: worker and supervisor threads never allocate to report. */
#ifndef KS_CORE_ERR_H
#define KS_CORE_ERR_H

#include <errno.h>
#include <stddef.h>

struct ks_err {
  int errnum;          /* positive errno; 0 means no error */
  const char *syscall; /* a string literal naming the call that failed */
  const char *path;    /* borrowed from the request's own inputs, or NULL */
};

/* Records the failure and returns -errnum, so a failure site is one line:
 *   return ks_err_set(err, errno, "openat", rel); */
static inline int ks_err_set(struct ks_err *err, int errnum, const char *syscall,
                             const char *path) {
  if (errnum <= 0)
    errnum = EIO; /* a caller passed a stale errno; never report "success" */
  if (err != NULL) {
    err->errnum = errnum;
    err->syscall = syscall;
    err->path = path;
  }
  return -errnum;
}

static inline void ks_err_clear(struct ks_err *err) {
  err->errnum = 0;
  err->syscall = NULL;
  err->path = NULL;
}

#endif
