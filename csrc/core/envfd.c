#define _GNU_SOURCE
#include "envfd.h"

#include <fcntl.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <unistd.h>

#include "compat.h"
#include "util.h"

#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008U
#endif

/* -1 unknown, 0 unsupported, 1 supported */
static _Atomic int ks__memfd_support = -1;

int ks_write_all(int fd, const char *buf, size_t len) {
  while (len > 0) {
    ssize_t n = write(fd, buf, len);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return -errno;
    }
    if (n == 0)
      return -ENOSPC;
    buf += n;
    len -= (size_t) n;
  }
  return 0;
}

static int ks__memfd(int *ret_fd, struct ks_err *err) {
  int fd;

  if (ks_compat_disabled(KS_FEATURE_MEMFD) || atomic_load(&ks__memfd_support) == 0)
    return -ENOSYS;
  /* NOEXEC_SEAL (6.3+) first; older kernels reject the flag with EINVAL. */
  fd = memfd_create("kern-sandbox-env", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_NOEXEC_SEAL);
  if (fd < 0 && errno == EINVAL)
    fd = memfd_create("kern-sandbox-env", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) {
    if (errno == ENOSYS) {
      atomic_store(&ks__memfd_support, 0);
      return -ENOSYS;
    }
    return ks_err_set(err, errno, "memfd_create", NULL);
  }
  atomic_store(&ks__memfd_support, 1);
  *ret_fd = fd;
  return 0;
}

int ks_envfd_create(const char *data, size_t len, const char *tmpdir, int *ret_fd,
                    struct ks_err *err) {
  _cleanup_close_ int fd = -1;
  int r;

  r = ks__memfd(&fd, err);
  if (r == -ENOSYS) {
    /* Kernels before 3.17 (or a seccomp filter) lack memfd_create. An
     * O_TMPFILE file has no name, so nothing is left on disk either way. */
    fd = open(tmpdir, O_TMPFILE | O_RDWR | O_CLOEXEC | O_EXCL, 0600);
    if (fd < 0)
      return ks_err_set(err, errno, "open", tmpdir);
  } else if (r < 0) {
    return r;
  }

  r = ks_write_all(fd, data, len);
  if (r < 0)
    return ks_err_set(err, -r, "write", NULL);
  /* Nobody, kern included, may change what the box will get. */
  (void) fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL);
  if (lseek(fd, 0, SEEK_SET) < 0)
    return ks_err_set(err, errno, "lseek", NULL);
  *ret_fd = ks_take_fd(&fd);
  return 0;
}
