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

/* The layout getdents64(2) writes; glibc only wraps it since 2.30. */
struct ks__dirent64 {
  uint64_t d_ino;
  int64_t d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[];
};

#define KS__DENTS_BUF (64 * 1024)
/* openat2 answers EAGAIN when a rename raced the lookup; a box can keep that
 * up forever, so retry a few times and then let the caller see EAGAIN. */
#define KS__OPENAT2_RETRIES 16
/* A name we create (temp file, hoisted directory) can collide only with one
 * the box guessed; a handful of fresh random names settles it. */
#define KS__NAME_RETRIES 16
#define KS__MKDIR_RETRIES 8
#define KS__RM_WINDOW 64
#define KS__RM_MAX_PASSES 10000
/* A directory path is at most 4095 bytes and every level adds at least
 * two, so a walk never holds more descriptors than this. */
#define KS__MAX_DEPTH (KS_WS_PATH_MAX / 2 + 2)

/* -1 unknown, 0 unsupported, 1 supported */
static _Atomic int ks__openat2_support = -1;
static _Atomic uint64_t ks__name_counter;

/* ---- path shape ------------------------------------------------------------ */

/* Yields the components of [*pp, end) other than "" and ".". */
static bool ks__next_comp(const char **pp, const char *end, const char **ret,
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
  bool have = ks__next_comp(&p, end, &comp, &comp_len);
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
    bool more = ks__next_comp(&p, end, &next, &next_len);
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
static int ks__open_beneath_n(int rootfd, const char *rel, size_t len,
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
  return ks__open_beneath_n(rootfd, rel, len, rel, flags, mode, ret_fd, err);
}

/* ---- writing ----------------------------------------------------------------- */

static void ks__random_name(char *out, size_t size, const char *prefix) {
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

  while (ks__next_comp(&p, end, &comp, &comp_len)) {
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
    ks__random_name(tmp, tmp_size, KS_WS_PRIVATE_PREFIX "tmp-");
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
    r = ks__open_beneath_n(rootfd, rel, parent_len, rel, O_PATH | O_DIRECTORY, 0, &pfd,
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
  r = ks__open_beneath_n(rootfd, rel, rel_len, rel, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0,
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

/* ---- walking ----------------------------------------------------------------- */

/* Directories still to visit, depth first: a byte stack of entries, each a
 * name followed by its header, so a pop reads the header at the end. */
struct ks__todo {
  char *buf;
  size_t len;
  size_t cap;
};

struct ks__todo_hdr {
  uint32_t depth;
  uint16_t name_len;
  uint8_t kind;
};

enum { KS__TODO_VISIT = 0, KS__TODO_RMDIR = 1 };

static int ks__todo_push(struct ks__todo *t, uint32_t depth, uint8_t kind,
                         const char *name, size_t name_len) {
  struct ks__todo_hdr h = {.depth = depth, .name_len = (uint16_t) name_len, .kind = kind};
  size_t need = t->len + name_len + sizeof h;

  if (ks_buf_reserve(&t->buf, &t->cap, need) < 0)
    return -ENOMEM;
  memcpy(t->buf + t->len, name, name_len);
  memcpy(t->buf + t->len + name_len, &h, sizeof h);
  t->len = need;
  return 0;
}

static bool ks__todo_pop(struct ks__todo *t, uint32_t *ret_depth, uint8_t *ret_kind,
                         char name[KS_WS_NAME_MAX + 1]) {
  struct ks__todo_hdr h;

  if (t->len == 0)
    return false;
  memcpy(&h, t->buf + t->len - sizeof h, sizeof h);
  t->len -= sizeof h + h.name_len;
  memcpy(name, t->buf + t->len, h.name_len);
  name[h.name_len] = '\0';
  *ret_depth = h.depth;
  *ret_kind = h.kind;
  return true;
}

static bool ks__is_dot(const char *name) {
  return name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'));
}

static bool ks__is_private(const char *name, size_t len) {
  return len >= sizeof KS_WS_PRIVATE_PREFIX - 1 &&
         memcmp(name, KS_WS_PRIVATE_PREFIX, sizeof KS_WS_PRIVATE_PREFIX - 1) == 0;
}

struct ks__frame {
  int fd;
  size_t path_len; /* of this directory's path in the walk's path buffer */
};

struct ks__walker {
  struct ks_ws_walk *w;
  struct ks__todo todo;
  struct ks__frame *frames;
  size_t nframes;
  char *dents;
  char path[KS_WS_PATH_MAX + 1];
  const char *subdir; /* for errors */
  unsigned flags;     /* KS_WS_WALK_* */
};

static int ks__walk_record(struct ks__walker *k, size_t plen, const char *name,
                           size_t nlen, const struct stat *st, struct ks_err *err) {
  struct ks_ws_walk *w = k->w;
  size_t sep = plen > 0 ? 1 : 0;
  size_t len = plen + sep + nlen;
  struct ks_ws_rec *rec;

  if (len > KS_WS_PATH_MAX)
    return ks_err_set(err, ENAMETOOLONG, "walk", k->subdir);
  if (w->n >= KS_WS_MAX_ENTRIES || w->arena_len + len + 1 > KS_WS_MAX_PATH_BYTES)
    return ks_err_set(err, E2BIG, "walk", k->subdir);
  if (w->n == w->cap) {
    size_t ncap = w->cap != 0 ? w->cap * 2 : 256;
    struct ks_ws_rec *nrecs = realloc(w->recs, ncap * sizeof *nrecs);
    if (nrecs == NULL)
      return ks_err_set(err, ENOMEM, "malloc", k->subdir);
    w->recs = nrecs;
    w->cap = ncap;
  }
  if (w->arena_len + len + 1 > w->arena_cap) {
    size_t ncap = w->arena_cap != 0 ? w->arena_cap * 2 : 16384;
    char *narena;
    while (ncap < w->arena_len + len + 1)
      ncap *= 2;
    narena = realloc(w->arena, ncap);
    if (narena == NULL)
      return ks_err_set(err, ENOMEM, "malloc", k->subdir);
    w->arena = narena;
    w->arena_cap = ncap;
  }
  rec = &w->recs[w->n++];
  rec->off = w->arena_len;
  rec->len = (uint32_t) len;
  rec->hash = 0;
  rec->size = (uint64_t) st->st_size;
  rec->mtime_ns = (int64_t) st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
  memcpy(w->arena + w->arena_len, k->path, plen);
  if (sep)
    w->arena[w->arena_len + plen] = '/';
  memcpy(w->arena + w->arena_len + plen + sep, name, nlen + 1);
  w->arena_len += len + 1;
  return 0;
}

/* Reads one directory to the end: records its regular files, queues its
 * subdirectories. top says it is the workspace root. */
static int ks__walk_dir(struct ks__walker *k, int fd, uint32_t depth, size_t plen,
                        bool top, struct ks_err *err) {
  for (;;) {
    long n = syscall(SYS_getdents64, fd, k->dents, KS__DENTS_BUF);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      /* ENOENT: the directory was removed (or renamed over) after we
       * opened it; it has nothing left to list. */
      if (errno == ENOENT)
        return 0;
      return ks_err_set(err, errno, "getdents64", k->subdir);
    }
    if (n == 0)
      return 0;
    for (long off = 0; off < n;) {
      struct ks__dirent64 *e = (struct ks__dirent64 *) (k->dents + off);
      const char *name = e->d_name;
      unsigned char type = e->d_type;
      size_t nlen;
      struct stat st;
      bool have_st = false;
      int r;

      off += e->d_reclen;
      if (ks__is_dot(name))
        continue;
      nlen = strlen(name);
      if (ks__is_private(name, nlen))
        continue;
      /* Only odd file systems (FUSE, CIFS) exceed NAME_MAX; such a name
       * could not be handed back to any operation here anyway. */
      if (nlen > KS_WS_NAME_MAX)
        return ks_err_set(err, ENAMETOOLONG, "walk", k->subdir);
      if (type == DT_UNKNOWN) {
        /* Some file systems leave d_type out; ask, still without following. */
        if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
          if (errno == ENOENT)
            continue;
          return ks_err_set(err, errno, "fstatat", k->subdir);
        }
        have_st = true;
        type = (unsigned char) IFTODT(st.st_mode);
      }
      if (type == DT_DIR) {
        if (top && !(k->flags & KS_WS_WALK_WITH_DEPS) && strcmp(name, KS_WS_DEPS_DIR) == 0)
          continue;
        if (plen + (plen > 0) + nlen > KS_WS_PATH_MAX)
          return ks_err_set(err, ENAMETOOLONG, "walk", k->subdir);
        if (ks__todo_push(&k->todo, depth + 1, KS__TODO_VISIT, name, nlen) < 0)
          return ks_err_set(err, ENOMEM, "malloc", k->subdir);
      } else if (type == DT_REG) {
        if (top && strncmp(name, KS_WS_ENV_PREFIX, sizeof KS_WS_ENV_PREFIX - 1) == 0)
          continue;
        if (k->flags & KS_WS_WALK_NAMES_ONLY) {
          /* The caller opens and checks each file itself. */
          if (!have_st)
            memset(&st, 0, sizeof st);
        } else {
          if (!have_st && fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
            if (errno == ENOENT)
              continue;
            return ks_err_set(err, errno, "fstatat", k->subdir);
          }
          if (!S_ISREG(st.st_mode))
            continue; /* swapped for something else since getdents */
        }
        r = ks__walk_record(k, plen, name, nlen, &st, err);
        if (r < 0)
          return r;
      }
      /* Symlinks, FIFOs, sockets, devices: not user files, never followed. */
    }
  }
}

static void ks__walker_close_from(struct ks__walker *k, size_t depth) {
  while (k->nframes > depth) {
    k->nframes--;
    ks_close_keep_errno(k->frames[k->nframes].fd);
  }
}

int ks_ws_walk(int rootfd, const char *subdir, struct ks_ws_walk *w, struct ks_err *err) {
  return ks_ws_walk_flags(rootfd, subdir, 0, w, err);
}

int ks_ws_walk_flags(int rootfd, const char *subdir, unsigned flags, struct ks_ws_walk *w,
                     struct ks_err *err) {
  struct ks__walker *k = NULL;
  size_t sub_len;
  const char *p;
  const char *comp;
  size_t comp_len;
  size_t plen = 0;
  int fd = -1;
  uint32_t depth;
  uint8_t kind;
  char name[KS_WS_NAME_MAX + 1];
  int r;

  if (subdir == NULL)
    subdir = "";
  sub_len = strlen(subdir);
  r = ks_ws_check_dir_rel(subdir, sub_len, err);
  if (r < 0)
    return r;
  k = calloc(1, sizeof *k);
  if (k == NULL)
    return ks_err_set(err, ENOMEM, "malloc", subdir);
  k->w = w;
  k->subdir = subdir;
  k->flags = flags;
  k->frames = calloc(KS__MAX_DEPTH + 1, sizeof *k->frames);
  k->dents = malloc(KS__DENTS_BUF);
  if (k->frames == NULL || k->dents == NULL) {
    r = ks_err_set(err, ENOMEM, "malloc", subdir);
    goto fail;
  }

  /* Paths are reported from the root, in canonical form ("a//./b/" is
   * "a/b"), whatever spelling the caller used. */
  p = subdir;
  while (ks__next_comp(&p, subdir + sub_len, &comp, &comp_len)) {
    if (plen > 0)
      k->path[plen++] = '/';
    memcpy(k->path + plen, comp, comp_len);
    plen += comp_len;
  }
  /* A fresh descriptor even for the root: getdents moves the file offset,
   * and rootfd is shared with every other operation in flight. */
  if (plen == 0) {
    fd = openat(rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
      r = ks_err_set(err, errno, "openat", subdir);
      goto fail;
    }
  } else {
    r = ks__open_beneath_n(rootfd, subdir, sub_len, subdir, O_RDONLY | O_DIRECTORY, 0,
                           &fd, err);
    if (r < 0)
      goto fail;
  }
  k->frames[0].fd = fd;
  k->frames[0].path_len = plen;
  k->nframes = 1;

  r = ks__walk_dir(k, fd, 0, plen, plen == 0, err);
  while (r == 0 && ks__todo_pop(&k->todo, &depth, &kind, name)) {
    struct ks__frame *parent;
    size_t nlen = strlen(name);
    size_t child_len;

    ks__walker_close_from(k, depth);
    parent = &k->frames[depth - 1];
    fd = openat(parent->fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
      /* Gone, replaced by a symlink or a file, or unreadable: nothing of
       * it can be listed, and nothing in it is followed. */
      if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP || errno == EACCES ||
          errno == EPERM)
        continue;
      r = ks_err_set(err, errno, "openat", subdir);
      break;
    }
    child_len = parent->path_len;
    if (child_len > 0)
      k->path[child_len++] = '/';
    memcpy(k->path + child_len, name, nlen); /* length checked when queued */
    child_len += nlen;
    k->frames[depth].fd = fd;
    k->frames[depth].path_len = child_len;
    k->nframes = depth + 1;
    r = ks__walk_dir(k, fd, depth, child_len, false, err);
  }

fail:
  if (k != NULL) {
    ks__walker_close_from(k, 0);
    free(k->frames);
    free(k->dents);
    free(k->todo.buf);
    free(k);
  }
  return r;
}

void ks_ws_walk_free(struct ks_ws_walk *w) {
  if (w == NULL)
    return;
  free(w->recs);
  free(w->arena);
  memset(w, 0, sizeof *w);
}

static int ks__entry_cmp(const void *a, const void *b) {
  return strcmp(((const struct ks_ws_entry *) a)->path,
                ((const struct ks_ws_entry *) b)->path);
}

int ks_ws_list(int rootfd, const char *subdir, struct ks_ws_entry **ret, size_t *ret_n,
               struct ks_err *err) {
  struct ks_ws_walk w;
  struct ks_ws_entry *entries;
  char *strings;
  size_t n = 0;
  int r;

  memset(&w, 0, sizeof w);
  r = ks_ws_walk(rootfd, subdir, &w, err);
  if (r < 0) {
    ks_ws_walk_free(&w);
    return r;
  }
  /* One block: the entries, then their paths, so free() releases both. */
  entries = malloc(w.n * sizeof *entries + w.arena_len + 1);
  if (entries == NULL) {
    ks_ws_walk_free(&w);
    return ks_err_set(err, ENOMEM, "malloc", subdir);
  }
  strings = (char *) (entries + w.n);
  if (w.arena_len > 0)
    memcpy(strings, w.arena, w.arena_len);
  for (size_t i = 0; i < w.n; i++) {
    entries[i].path = strings + w.recs[i].off;
    entries[i].size = w.recs[i].size;
    entries[i].mtime_ns = w.recs[i].mtime_ns;
  }
  if (w.n > 1)
    qsort(entries, w.n, sizeof *entries, ks__entry_cmp);
  /* A name renamed during the walk can be returned twice by getdents. */
  for (size_t i = 0; i < w.n; i++) {
    if (n > 0 && strcmp(entries[n - 1].path, entries[i].path) == 0)
      continue;
    entries[n++] = entries[i];
  }
  ks_ws_walk_free(&w);
  *ret = entries;
  *ret_n = n;
  return 0;
}

/* ---- removing ---------------------------------------------------------------- */

struct ks__rm {
  int top; /* our own descriptor of the workspace root */
  int fds[KS__RM_WINDOW + 1]; /* fds[0] == top, not owned */
  size_t nfds;
  struct ks__todo todo;
  char *dents;
  bool progress; /* this pass removed or moved something */
  size_t seen_top; /* entries found at the top level this pass */
};

static void ks__rm_close_from(struct ks__rm *rm, size_t depth) {
  if (depth < 1)
    depth = 1;
  while (rm->nfds > depth) {
    rm->nfds--;
    ks_close_keep_errno(rm->fds[rm->nfds]);
  }
}

/* A directory the box made read-only (Go's module cache does this too)
 * refuses unlinkat in it: give the owner write and search permission back,
 * through a descriptor, never by name. */
static bool ks__rm_unlock_fd(int dirfd) {
  return fchmod(dirfd, 0700) == 0;
}

/* The same for a directory we cannot even open: change it through an
 * O_PATH descriptor (opened O_NOFOLLOW, so it is the directory itself) and
 * its /proc/self/fd link, which names exactly that inode. */
static bool ks__rm_unlock_name(int dirfd, const char *name) {
  _cleanup_close_ int fd =
      openat(dirfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  char proc[64];

  if (fd < 0)
    return false;
  (void) snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
  return chmod(proc, 0700) == 0;
}

static int ks__rm_unlinkat(struct ks__rm *rm, int dirfd, const char *name, int flags) {
  if (unlinkat(dirfd, name, flags) == 0) {
    rm->progress = true;
    return 0;
  }
  if ((errno == EACCES || errno == EPERM) && ks__rm_unlock_fd(dirfd) &&
      unlinkat(dirfd, name, flags) == 0) {
    rm->progress = true;
    return 0;
  }
  return -errno;
}

/* Moves a directory too deep for the descriptor window to the top level,
 * where a later pass starts over with it. renameat never follows. */
static int ks__rm_hoist(struct ks__rm *rm, int dirfd, const char *name,
                        struct ks_err *err) {
  char tmp[64];

  for (int i = 0; i < KS__NAME_RETRIES; i++) {
    ks__random_name(tmp, sizeof tmp, KS_WS_PRIVATE_PREFIX "rm-");
    if (renameat(dirfd, name, rm->top, tmp) == 0 ||
        ((errno == EACCES || errno == EPERM) && ks__rm_unlock_fd(dirfd) &&
         renameat(dirfd, name, rm->top, tmp) == 0)) {
      rm->progress = true; /* the next pass finds it at the top */
      return 0;
    }
    if (errno == ENOENT)
      return 0;
    if (errno != EEXIST && errno != ENOTEMPTY && errno != EISDIR && errno != ENOTDIR)
      return ks_err_set(err, errno, "renameat", NULL);
  }
  return ks_err_set(err, EEXIST, "renameat", NULL);
}

static int ks__rm_queue_dir(struct ks__rm *rm, int dirfd, uint32_t depth,
                            const char *name, size_t nlen, struct ks_err *err) {
  if (depth >= KS__RM_WINDOW)
    return ks__rm_hoist(rm, dirfd, name, err);
  /* The RMDIR entry pops after everything the VISIT queues. */
  if (ks__todo_push(&rm->todo, depth + 1, KS__TODO_RMDIR, name, nlen) < 0 ||
      ks__todo_push(&rm->todo, depth + 1, KS__TODO_VISIT, name, nlen) < 0)
    return ks_err_set(err, ENOMEM, "malloc", NULL);
  return 0;
}

/* Unlinks every non-directory of the open directory fd and queues its
 * subdirectories. */
static int ks__rm_dir(struct ks__rm *rm, int fd, uint32_t depth, struct ks_err *err) {
  for (;;) {
    long n = syscall(SYS_getdents64, fd, rm->dents, KS__DENTS_BUF);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      if (errno == ENOENT)
        return 0; /* removed under us: nothing left in it */
      return ks_err_set(err, errno, "getdents64", NULL);
    }
    if (n == 0)
      return 0;
    for (long off = 0; off < n;) {
      struct ks__dirent64 *e = (struct ks__dirent64 *) (rm->dents + off);
      const char *name = e->d_name;
      unsigned char type = e->d_type;
      size_t nlen;
      int r;

      off += e->d_reclen;
      if (ks__is_dot(name))
        continue;
      nlen = strlen(name);
      if (nlen > KS_WS_NAME_MAX)
        return ks_err_set(err, ENAMETOOLONG, "unlinkat", NULL);
      if (depth == 0)
        rm->seen_top++;
      if (type == DT_UNKNOWN) {
        struct stat st;
        if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
          if (errno == ENOENT)
            continue;
          return ks_err_set(err, errno, "fstatat", NULL);
        }
        type = (unsigned char) IFTODT(st.st_mode);
      }
      if (type != DT_DIR) {
        r = ks__rm_unlinkat(rm, fd, name, 0);
        if (r == -ENOENT)
          continue;
        if (r != -EISDIR) {
          if (r < 0)
            return ks_err_set(err, -r, "unlinkat", NULL);
          continue;
        }
        /* It became a directory since getdents: treat it as one. */
      }
      r = ks__rm_queue_dir(rm, fd, depth, name, nlen, err);
      if (r < 0)
        return r;
    }
  }
}

static int ks__rm_pop(struct ks__rm *rm, uint32_t depth, uint8_t kind, const char *name,
                      struct ks_err *err) {
  int pfd;
  int fd;
  int r;

  ks__rm_close_from(rm, depth);
  pfd = rm->fds[depth - 1];
  if (kind == KS__TODO_RMDIR) {
    r = ks__rm_unlinkat(rm, pfd, name, AT_REMOVEDIR);
    if (r == 0 || r == -ENOENT)
      return 0;
    if (r == -ENOTEMPTY || r == -EEXIST)
      return 0; /* something appeared or was missed: the next pass */
    if (r == -ENOTDIR) {
      /* Swapped for a symlink or file after we emptied it. */
      r = ks__rm_unlinkat(rm, pfd, name, 0);
      if (r == 0 || r == -ENOENT)
        return 0;
      if (r == -EISDIR)
        return 0; /* a directory again: the next pass */
    }
    return ks_err_set(err, -r, "unlinkat", NULL);
  }

  fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 && errno == EACCES && ks__rm_unlock_name(pfd, name))
    fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT)
      return 0;
    if (errno == ENOTDIR || errno == ELOOP) {
      /* A symlink (or file) took the directory's place: unlink the name,
       * never enter it (A24). */
      r = ks__rm_unlinkat(rm, pfd, name, 0);
      if (r == 0 || r == -ENOENT || r == -EISDIR)
        return 0; /* EISDIR: a directory again, for the next pass */
      return ks_err_set(err, -r, "unlinkat", NULL);
    }
    return ks_err_set(err, errno, "openat", NULL);
  }
  rm->fds[depth] = fd;
  rm->nfds = depth + 1;
  return ks__rm_dir(rm, fd, depth, err);
}

int ks_ws_remove_tree(int rootfd, struct ks_err *err) {
  struct ks__rm rm;
  _cleanup_close_ int top = -1;
  char name[KS_WS_NAME_MAX + 1];
  int r = 0;

  memset(&rm, 0, sizeof rm);
  /* Our own descriptor: getdents moves the offset of the one it reads. */
  top = openat(rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (top < 0 && errno == EACCES && ks__rm_unlock_fd(rootfd))
    top = openat(rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (top < 0)
    return ks_err_set(err, errno, "openat", NULL);
  rm.top = top;
  rm.fds[0] = top;
  rm.dents = malloc(KS__DENTS_BUF);
  if (rm.dents == NULL)
    return ks_err_set(err, ENOMEM, "malloc", NULL);

  for (int pass = 0;; pass++) {
    uint32_t depth;
    uint8_t kind;

    if (pass == KS__RM_MAX_PASSES) {
      r = ks_err_set(err, ENOTEMPTY, "unlinkat", NULL);
      break;
    }
    rm.progress = false;
    rm.seen_top = 0;
    rm.nfds = 1;
    rm.todo.len = 0;
    if (lseek(top, 0, SEEK_SET) < 0) {
      r = ks_err_set(err, errno, "lseek", NULL);
      break;
    }
    r = ks__rm_dir(&rm, top, 0, err);
    while (r == 0 && ks__todo_pop(&rm.todo, &depth, &kind, name))
      r = ks__rm_pop(&rm, depth, kind, name, err);
    ks__rm_close_from(&rm, 1);
    if (r < 0)
      break;
    /* Done once a pass finds the top level already empty: entries removed
     * while getdents was reading can hide others until the next read. */
    if (rm.seen_top == 0)
      break;
    if (!rm.progress) {
      r = ks_err_set(err, ENOTEMPTY, "unlinkat", NULL);
      break;
    }
  }
  free(rm.dents);
  free(rm.todo.buf);
  return r;
}
