/* Host-side workspace I/O that never follows a symlink the box planted.
 *
 * The reference implementation checked paths with lstat and then opened
 * them by name, and truncated the target before knowing where it was (W1,
 * W2): a box swapping a directory for a symlink between the two steps made
 * the host write outside the workspace. Here every path is resolved from the
 * workspace's descriptor, one kernel-checked step at a time, and writes go to
 * a fresh file that replaces the target by rename, so no existing file is
 * ever opened for writing. */
#define _GNU_SOURCE
#include "wsfs.h"
#include "wsfs-internal.h"

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../compat.h"
#include "../envfd.h"
#include "../util.h"

#ifndef RESOLVE_NO_MAGICLINKS
#define RESOLVE_NO_MAGICLINKS 0x02
#endif
#ifndef RESOLVE_NO_SYMLINKS
#define RESOLVE_NO_SYMLINKS 0x04
#endif
#ifndef RESOLVE_BENEATH
#define RESOLVE_BENEATH 0x08
#endif

#define KS__RESOLVE (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)

/* Our own copy of struct open_how (the first version, 24 bytes): C
 * libraries before glibc 2.36 do not declare it. */
struct ks__open_how {
  uint64_t flags;
  uint64_t mode;
  uint64_t resolve;
};

/* openat2 answers EAGAIN when a rename raced the lookup; a box can keep that
 * up forever, so retry a few times and then let the caller see EAGAIN. */
#define KS__OPENAT2_RETRIES 16
#define KS__MKDIR_RETRIES 8

/* -1 unknown, 0 unsupported, 1 supported */
static _Atomic int ks__openat2_support = -1;
static _Atomic uint64_t ks__name_counter;

/* ---- path shape ------------------------------------------------------------ */

/* Yields the components of [*pp, end) other than "" and ".". */
bool ks_wsfs_next_comp(const char **pp, const char *end, const char **ret,
                          size_t *ret_len) {
  const char *p = *pp;

  for (;;) {
    const char *s;
    while (p < end && *p == '/')
      p++;
    if (p >= end) {
      *pp = p;
      return false;
    }
    s = p;
    while (p < end && *p != '/')
      p++;
    if (p - s == 1 && s[0] == '.')
      continue;
    *ret = s;
    *ret_len = (size_t) (p - s);
    *pp = p;
    return true;
  }
}

/* Shared by the file and directory checks; *ret_ncomp counts the real
 * components, *ret_trailing says the last one is "" or "." ("a/", "a/."). */
static int ks__check_shape(const char *rel, size_t len, size_t *ret_ncomp,
                           bool *ret_trailing, struct ks_err *err) {
  const char *p = rel;
  const char *end = rel + len;
  size_t ncomp = 0;
  bool trailing = false;

  if (rel == NULL)
    return ks_err_set(err, EINVAL, "path", NULL);
  if (memchr(rel, '\0', len) != NULL)
    return ks_err_set(err, EINVAL, "path", rel);
  if (len > 0 && rel[0] == '/')
    return ks_err_set(err, EINVAL, "path", rel);
  if (len > KS_WS_PATH_MAX)
    return ks_err_set(err, ENAMETOOLONG, "path", rel);
  while (p < end) {
    const char *s = p;
    size_t cl;
    while (p < end && *p != '/')
      p++;
    cl = (size_t) (p - s);
    if (cl == 2 && s[0] == '.' && s[1] == '.')
      return ks_err_set(err, EINVAL, "path", rel);
    if (cl > KS_WS_NAME_MAX)
      return ks_err_set(err, ENAMETOOLONG, "path", rel);
    trailing = cl == 0 || (cl == 1 && s[0] == '.');
    if (!trailing)
      ncomp++;
    if (p < end) {
      p++;
      if (p == end)
        trailing = true; /* "a/": an empty last component */
    }
  }
  *ret_ncomp = ncomp;
  *ret_trailing = trailing;
  return 0;
}

int ks_ws_check_rel(const char *rel, size_t len, struct ks_err *err) {
  size_t ncomp;
  bool trailing;
  int r = ks__check_shape(rel, len, &ncomp, &trailing, err);

  if (r < 0)
    return r;
  if (ncomp == 0)
    return ks_err_set(err, EINVAL, "path", rel);
  /* open("f/", O_NOFOLLOW) follows a symlink f (A19), and a file path
   * ending in "/" or "/." names a directory anyway: refuse it up front. */
  if (trailing)
    return ks_err_set(err, EISDIR, "path", rel);
  return 0;
}

int ks_ws_check_dir_rel(const char *rel, size_t len, struct ks_err *err) {
  size_t ncomp;
  bool trailing;
  return ks__check_shape(rel, len, &ncomp, &trailing, err);
}

/* ---- resolution -------------------------------------------------------------- */

static long ks__openat2(int dirfd, const char *path, int flags, mode_t mode) {
  struct ks__open_how how;

  memset(&how, 0, sizeof how);
  how.flags = (uint64_t) (unsigned) flags;
  /* openat2 refuses a mode without O_CREAT or O_TMPFILE (which contains
   * the O_DIRECTORY bit, hence the full comparison). */
  how.mode = ((flags & O_CREAT) != 0 || (flags & O_TMPFILE) == O_TMPFILE) ? mode : 0;
  how.resolve = KS__RESOLVE;
  return syscall(SYS_openat2, dirfd, path, &how, sizeof how);
}

/* Kernels before 5.6 lack openat2(2), and seccomp filters written before it
 * answer ENOSYS or EPERM (EINVAL where a filter or an older open_how check
 * rejects the call): delete the fallback once 5.6 is the floor and no
 * supported runtime filters it. The probe runs once per process, so a later
 * EINVAL is the caller's own. */
static bool ks__have_openat2(int rootfd) {
  int support;
  long fd;

  if (ks_compat_disabled(KS_FEATURE_OPENAT2))
    return false;
  support = atomic_load(&ks__openat2_support);
  if (support >= 0)
    return support == 1;
  fd = ks__openat2(rootfd, ".", O_PATH | O_CLOEXEC, 0);
  if (fd >= 0) {
    (void) close((int) fd);
    atomic_store(&ks__openat2_support, 1);
    return true;
  }
  if (errno == ENOSYS || errno == EPERM || errno == EINVAL || errno == E2BIG)
    atomic_store(&ks__openat2_support, 0);
  /* EMFILE, ENOMEM, EBADF...: no verdict, and the walk is just as safe. */
  return false;
}

/* ENOTDIR from openat(O_DIRECTORY | O_NOFOLLOW) means a symlink as often as
 * a file; report the symlink as ELOOP, like openat2 does. */
static int ks__open_failed(int dirfd, const char *name, int errnum,
                           const char *syscall_name, const char *path,
                           struct ks_err *err) {
  struct stat st;

  if (errnum == ENOTDIR && fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
      S_ISLNK(st.st_mode))
    errnum = ELOOP;
  return ks_err_set(err, errnum, syscall_name, path);
}

static int ks__walk_open(int rootfd, const char *rel, size_t len, const char *errpath,
                         int flags, mode_t mode, int *ret_fd, struct ks_err *err) {
  _cleanup_close_ int cur = -1;
  int dirfd = rootfd;
  const char *p = rel;
  const char *end = rel + len;
  const char *comp = NULL;
  size_t comp_len = 0;
  bool have = ks_wsfs_next_comp(&p, end, &comp, &comp_len);
  char name[KS_WS_NAME_MAX + 1];
  size_t depth = 0;

  if (!have) {
    cur = openat(rootfd, ".", flags | O_CLOEXEC, mode);
    if (cur < 0)
      return ks_err_set(err, errno, "openat", errpath);
  }
  while (have) {
    const char *next = NULL;
    size_t next_len = 0;
    bool more = ks_wsfs_next_comp(&p, end, &next, &next_len);
    int fd;

    /* Unreachable after the shape check; kept so the loop is bounded by
     * itself, not by its callers. */
    if (++depth > KS__MAX_DEPTH)
      return ks_err_set(err, ENAMETOOLONG, "openat", errpath);
    memcpy(name, comp, comp_len);
    name[comp_len] = '\0';
    if (more)
      fd = openat(dirfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    else
      fd = openat(dirfd, name, flags | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0)
      return ks__open_failed(dirfd, name, errno, "openat", errpath, err);
    ks_close_keep_errno(cur);
    cur = fd;
    dirfd = fd;
    comp = next;
    comp_len = next_len;
    have = more;
  }
  *ret_fd = ks_take_fd(&cur);
  return 0;
}

/* Resolves rel[0 .. len) (which need not be NUL-terminated) beneath rootfd;
 * errors name errpath. The shape was checked by the caller. */
int ks_wsfs_open_beneath_n(int rootfd, const char *rel, size_t len,
                              const char *errpath, int flags, mode_t mode, int *ret_fd,
                              struct ks_err *err) {
  char copy[KS_WS_PATH_MAX + 1];
  const char *path = rel;
  _cleanup_close_ int fd = -1;
  struct stat st;

  if (ks__have_openat2(rootfd)) {
    if (len == 0) {
      path = ".";
    } else if (rel[len] != '\0') {
      memcpy(copy, rel, len);
      copy[len] = '\0';
      path = copy;
    }
    /* RESOLVE_NO_SYMLINKS already refuses every symlink, the last one
     * included, with ELOOP; O_NOFOLLOW would turn that into ENOTDIR for
     * O_DIRECTORY opens, or into an fd of the link itself for O_PATH. */
    for (int i = 0; i < KS__OPENAT2_RETRIES; i++) {
      fd = (int) ks__openat2(rootfd, path, (flags & ~O_NOFOLLOW) | O_CLOEXEC, mode);
      if (fd >= 0 || errno != EAGAIN)
        break;
    }
    if (fd < 0 && errno == ENOSYS) {
      atomic_store(&ks__openat2_support, 0);
    } else if (fd < 0) {
      return ks_err_set(err, errno, "openat2", errpath);
    }
  }
  if (fd < 0) {
    int r = ks__walk_open(rootfd, rel, len, errpath, flags, mode, &fd, err);
    if (r < 0)
      return r;
  }
  /* Only an O_PATH open can yield the link itself; never hand that out. */
  if ((flags & O_PATH) != 0) {
    if (fstat(fd, &st) < 0)
      return ks_err_set(err, errno, "fstat", errpath);
    if (S_ISLNK(st.st_mode))
      return ks_err_set(err, ELOOP, "openat", errpath);
  }
  *ret_fd = ks_take_fd(&fd);
  return 0;
}

int ks_open_beneath(int rootfd, const char *rel, int flags, mode_t mode, int *ret_fd,
                    struct ks_err *err) {
  size_t len = rel != NULL ? strlen(rel) : 0;
  size_t ncomp;
  bool trailing;
  int r = ks__check_shape(rel, len, &ncomp, &trailing, err);

  if (r < 0)
    return r;
  /* The walk drops a trailing slash with the empty component; keep its
   * meaning ("must be a directory") in both modes. */
  if (trailing && ncomp > 0)
    flags |= O_DIRECTORY;
  return ks_wsfs_open_beneath_n(rootfd, rel, len, rel, flags, mode, ret_fd, err);
}

/* ---- writing ----------------------------------------------------------------- */

void ks_wsfs_random_name(char *out, size_t size, const char *prefix) {
  uint64_t v = 0;
  uint64_t n = atomic_fetch_add(&ks__name_counter, 1);

  if (getrandom(&v, sizeof v, GRND_NONBLOCK) != (ssize_t) sizeof v) {
    /* Early boot or a seccomp filter: uniqueness, not secrecy, is what
     * matters (O_EXCL settles collisions), so time, pid and a counter do. */
    struct timespec ts;
    (void) clock_gettime(CLOCK_MONOTONIC, &ts);
    v = (uint64_t) ts.tv_nsec ^ ((uint64_t) ts.tv_sec << 30) ^
        ((uint64_t) getpid() << 40);
  }
  v ^= n * UINT64_C(0x9E3779B97F4A7C15);
  (void) snprintf(out, size, "%s%016" PRIx64, prefix, v);
}

/* Opens the directory rel[0 .. len), creating each missing level with
 * mkdirat and entering it with O_NOFOLLOW: a level the box replaces by a
 * symlink between the two calls is refused, never followed. */
static int ks__mkdir_walk(int rootfd, const char *rel, size_t len, int *ret_fd,
                          struct ks_err *err) {
  _cleanup_close_ int cur = -1;
  int dirfd = rootfd;
  const char *p = rel;
  const char *end = rel + len;
  const char *comp;
  size_t comp_len;
  char name[KS_WS_NAME_MAX + 1];

  while (ks_wsfs_next_comp(&p, end, &comp, &comp_len)) {
    int fd = -1;

    memcpy(name, comp, comp_len);
    name[comp_len] = '\0';
    for (int tries = 0;; tries++) {
      fd = openat(dirfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (fd >= 0)
        break;
      if (errno != ENOENT || tries == KS__MKDIR_RETRIES)
        return ks__open_failed(dirfd, name, errno, "openat", rel, err);
      /* EEXIST: someone (the box) made it first; the next openat decides
       * whether it is a real directory. */
      if (mkdirat(dirfd, name, 0755) < 0 && errno != EEXIST)
        return ks_err_set(err, errno, "mkdirat", rel);
    }
    ks_close_keep_errno(cur);
    cur = fd;
    dirfd = fd;
  }
  *ret_fd = ks_take_fd(&cur);
  return 0;
}

int ks_ws_open_dirs(int rootfd, const char *rel, size_t len, int *ret_fd,
                    struct ks_err *err) {
  int fd = -1;
  int r = ks__mkdir_walk(rootfd, rel, len, &fd, err);
  if (r < 0)
    return r;
  if (fd < 0) {
    /* No component at all: the root itself. */
    fd = openat(rootfd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
      return ks_err_set(err, errno, "openat", rel);
  }
  *ret_fd = fd;
  return 0;
}

/* Creates the temp file next to the target, writes data into it and closes
 * it. On success *tmp holds its name; on failure nothing is left behind. */
static int ks__write_temp(int dirfd, const char *rel, const void *data, size_t len,
                          int mode, char *tmp, size_t tmp_size, struct ks_err *err) {
  _cleanup_close_ int fd = -1;
  int r;

  for (int i = 0; i < KS__NAME_RETRIES && fd < 0; i++) {
    ks_wsfs_random_name(tmp, tmp_size, KS_WS_PRIVATE_PREFIX "tmp-");
    fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 && errno != EEXIST)
      return ks_err_set(err, errno, "openat", rel);
  }
  if (fd < 0)
    return ks_err_set(err, EEXIST, "openat", rel);
  /* Replacing a file keeps its permission bits, as truncating it would
   * (a script stays executable); never set-id or sticky bits. */
  if (mode >= 0 && fchmod(fd, (mode_t) mode & 0777) < 0) {
    int saved = errno;
    (void) unlinkat(dirfd, tmp, 0);
    return ks_err_set(err, saved, "fchmod", rel);
  }
  r = ks_write_all(fd, data, len);
  if (r < 0) {
    (void) unlinkat(dirfd, tmp, 0);
    return ks_err_set(err, -r, "write", rel);
  }
  /* close reports delayed write errors on some file systems (NFS, quota). */
  r = close(ks_take_fd(&fd));
  if (r < 0 && errno != EINTR) {
    int saved = errno;
    (void) unlinkat(dirfd, tmp, 0);
    return ks_err_set(err, saved, "close", rel);
  }
  return 0;
}

int ks_ws_write_file(int rootfd, const char *rel, const void *data, size_t len,
                     struct ks_err *err) {
  _cleanup_close_ int pfd = -1;
  int dirfd = rootfd;
  size_t rel_len;
  const char *leaf;
  size_t parent_len;
  size_t ncomp;
  bool trailing;
  char name[KS_WS_NAME_MAX + 1];
  char tmp[64];
  struct stat st;
  int mode = -1;
  int r;

  if (rel == NULL)
    return ks_err_set(err, EINVAL, "path", NULL);
  rel_len = strlen(rel);
  r = ks_ws_check_rel(rel, rel_len, err);
  if (r < 0)
    return r;
  /* The shape check guarantees the last component is a real name. */
  leaf = rel + rel_len;
  while (leaf > rel && leaf[-1] != '/')
    leaf--;
  parent_len = (size_t) (leaf - rel);
  memcpy(name, leaf, rel_len - parent_len + 1);

  r = ks__check_shape(rel, parent_len, &ncomp, &trailing, err);
  if (r < 0)
    return r;
  if (ncomp > 0) {
    r = ks_wsfs_open_beneath_n(rootfd, rel, parent_len, rel, O_PATH | O_DIRECTORY, 0, &pfd,
                           err);
    if (r == -ENOENT)
      r = ks__mkdir_walk(rootfd, rel, parent_len, &pfd, err);
    if (r < 0)
      return r;
    dirfd = pfd;
  }

  /* Refuse what the rename would silently replace. The box can still swap
   * the name afterwards; then the rename replaces whatever is there (a
   * symlink or FIFO as a name, never followed) or fails with EISDIR. */
  if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (S_ISDIR(st.st_mode))
      return ks_err_set(err, EISDIR, "fstatat", rel);
    if (S_ISLNK(st.st_mode))
      return ks_err_set(err, ELOOP, "fstatat", rel);
    if (!S_ISREG(st.st_mode))
      return ks_err_set(err, EINVAL, "fstatat", rel);
    mode = (int) st.st_mode;
  } else if (errno != ENOENT) {
    return ks_err_set(err, errno, "fstatat", rel);
  }

  r = ks__write_temp(dirfd, rel, data, len, mode, tmp, sizeof tmp, err);
  if (r < 0)
    return r;
  if (renameat(dirfd, tmp, dirfd, name) < 0) {
    int saved = errno;
    (void) unlinkat(dirfd, tmp, 0);
    return ks_err_set(err, saved, "renameat", rel);
  }
  return 0;
}

/* ---- reading ----------------------------------------------------------------- */

int ks_ws_read_file(int rootfd, const char *rel, size_t max, void **ret_data,
                    size_t *ret_len, struct ks_err *err) {
  _cleanup_close_ int fd = -1;
  _cleanup_free_ char *buf = NULL;
  size_t rel_len;
  size_t cap;
  size_t len = 0;
  struct stat st;
  int r;

  if (rel == NULL)
    return ks_err_set(err, EINVAL, "path", NULL);
  rel_len = strlen(rel);
  r = ks_ws_check_rel(rel, rel_len, err);
  if (r < 0)
    return r;
  /* O_NONBLOCK: opening a FIFO for reading would wait for a writer. */
  r = ks_wsfs_open_beneath_n(rootfd, rel, rel_len, rel, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0,
                         &fd, err);
  if (r < 0)
    return r;
  if (fstat(fd, &st) < 0)
    return ks_err_set(err, errno, "fstat", rel);
  if (S_ISDIR(st.st_mode))
    return ks_err_set(err, EISDIR, "fstat", rel);
  if (!S_ISREG(st.st_mode))
    return ks_err_set(err, EINVAL, "fstat", rel); /* not a regular file */
  if (max > SIZE_MAX / 2)
    max = SIZE_MAX / 2; /* so max + 1 and doubling cannot overflow */
  if (st.st_size < 0 || (uint64_t) st.st_size > max)
    return ks_err_set(err, EFBIG, "fstat", rel);

  /* One byte more than the size: a file still growing shows up as a read
   * past it, without a second allocation in the common case. */
  cap = (size_t) st.st_size + 1;
  if (cap < 4096)
    cap = max + 1 < 4096 ? max + 1 : 4096;
  buf = malloc(cap);
  if (buf == NULL)
    return ks_err_set(err, ENOMEM, "malloc", rel);
  for (;;) {
    ssize_t n;
    if (len == cap) {
      /* len <= max here (checked below), so cap < max + 1 and grows. */
      size_t ncap = cap <= (max + 1) / 2 ? cap * 2 : max + 1;
      char *nbuf = realloc(buf, ncap);
      if (nbuf == NULL)
        return ks_err_set(err, ENOMEM, "malloc", rel);
      buf = nbuf;
      cap = ncap;
    }
    n = read(fd, buf + len, cap - len);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return ks_err_set(err, errno, "read", rel);
    }
    if (n == 0)
      break;
    len += (size_t) n;
    if (len > max)
      return ks_err_set(err, EFBIG, "read", rel); /* grew while we read (A22) */
  }
  *ret_data = ks_take_ptr(&buf);
  *ret_len = len;
  return 0;
}
