#define _GNU_SOURCE
#include "compat.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdatomic.h>
#include <string.h>

static _Atomic unsigned ks__disabled_features;

void ks_compat_disable(unsigned features) {
  atomic_fetch_or(&ks__disabled_features, features);
}

bool ks_compat_disabled(enum ks_feature feature) {
  return (atomic_load(&ks__disabled_features) & (unsigned) feature) != 0;
}

void ks_compat_probe_host(struct ks_host_features *out) {
  /* struct open_how's first version, and RESOLVE_BENEATH: C libraries
   * before glibc 2.36 declare neither (wsfs.c keeps the same copy). */
  struct {
    uint64_t flags;
    uint64_t mode;
    uint64_t resolve;
  } how;
  int fd;

  memset(out, 0, sizeof *out);
  fd = ks_sys_pidfd_open(getpid(), 0);
  if (fd >= 0) {
    out->pidfd_open = true;
    (void) close(fd);
  }
  memset(&how, 0, sizeof how);
  how.flags = O_PATH | O_CLOEXEC;
  how.resolve = 0x08; /* RESOLVE_BENEATH */
  fd = (int) syscall(SYS_openat2, AT_FDCWD, ".", &how, sizeof how);
  if (fd >= 0) {
    out->openat2 = true;
    (void) close(fd);
  }
  /* An empty range (first > last) is refused with EINVAL where the call
   * exists, ENOSYS (or EPERM under an old seccomp filter) where not. */
  out->close_range = syscall(SYS_close_range, 2U, 1U, 0U) < 0 && errno == EINVAL;
}
