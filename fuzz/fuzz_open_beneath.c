/* libFuzzer target: ks_open_beneath, through openat2 and through the
 * openat walk, in one process (SECURITY-CASES A17 (static part), A19, A20,
 * A23, H7).
 *
 * ks_compat_disable is one-way, so one process cannot switch openat2 off
 * and on again. Instead the Makefile links csrc/core/workspace/wsfs.c twice: as is,
 * and as a second object whose public symbols are renamed ks_ -> ksw_ and
 * whose ks_compat_disabled call goes to ksw_compat_disabled below, which
 * reports openat2 as disabled. Same source, same code, separate caches:
 * ks_open_beneath takes openat2 (when the kernel has it) and
 * ksw_open_beneath always takes the fallback walk.
 *
 * A fixed tree is built once per process:
 *
 *   <tmp>/ks-fuzz-ob-XXXXXX/outside/secret      the canary, outside the root
 *   <tmp>/ks-fuzz-ob-XXXXXX/root/               rootfd
 *     file  empty/  d/  d/file  d/e/  d/e/f.txt  fifo  d/fifo2  sock
 *     d/link_up -> ..       d/link_file -> ../file    dirlink -> d
 *     link_out -> ../outside     link_abs -> <tmp>/.../outside
 *     link_root -> /        proc_root -> /proc/self/root
 *     loop1 -> loop2        loop2 -> loop1        self -> self
 *     dangling -> nowhere
 *
 * The input is a path (bytes up to the first NUL, at most 4096). It is
 * opened with three flag sets: O_RDONLY|O_NONBLOCK (the brief's), O_PATH,
 * and O_RDONLY|O_NONBLOCK|O_DIRECTORY. Properties:
 *
 *   B1  on success the descriptor is the object the path names lexically
 *       beneath the root ("" and "." dropped): /proc/self/fd/N reads back
 *       exactly <root>/<path>, its device and inode are those of an lstat
 *       of that name, so no symlink was followed anywhere, and it is never
 *       the canary;
 *   B2  openat2 and the walk give the same result: success, or the same
 *       errno;
 *   B3  both match a model computed here with fstatat(AT_SYMLINK_NOFOLLOW)
 *       one component at a time: EINVAL / ENAMETOOLONG for a bad shape,
 *       ENOENT, ENOTDIR (a non-directory parent, or a trailing slash or
 *       O_DIRECTORY on a non-directory), ELOOP for any symlink, ENXIO for a
 *       socket opened for reading, else success;
 *   B4  nothing leaks: no descriptor on failure, one (closed here) on
 *       success; and no call blocks (a FIFO is opened O_NONBLOCK), which
 *       libFuzzer's -timeout would catch. */
#include "fuzz_common.h"

#include <sys/socket.h>
#include <sys/un.h>

#include "compat.h"
#include "err.h"
#include "workspace/wsfs.h"

int ksw_open_beneath(int rootfd, const char *rel, int flags, mode_t mode, int *ret_fd,
                     struct ks_err *err);
bool ksw_compat_disabled(enum ks_feature feature);

/* The renamed copy of wsfs.c asks this instead of ks_compat_disabled. */
bool ksw_compat_disabled(enum ks_feature feature) {
  return feature == KS_FEATURE_OPENAT2 || ks_compat_disabled(feature);
}

#define FUZZ_MAX_INPUT 4097

static char top[4096];
static char root_path[4096 + 16];
static char outside_path[4096 + 16];
static int rootfd = -1;

static void cleanup_at_exit(void) {
  if (top[0] != '\0')
    ks_fuzz_rm_rf(top);
}

static void mk(int kind, const char *rel, const char *target) {
  char p[8192];
  int r;
  snprintf(p, sizeof p, "%s/%s", top, rel);
  switch (kind) {
  case 'd': r = mkdir(p, 0755); break;
  case 'l': r = symlink(target, p); break;
  case 'p': r = mkfifo(p, 0644); break;
  case 'f': {
    int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    r = fd;
    if (fd >= 0) {
      r = (int) write(fd, rel, strlen(rel));
      (void) close(fd);
    }
    break;
  }
  case 's': {
    struct sockaddr_un sa;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    if (strlen(p) >= sizeof sa.sun_path)
      ks_fuzz_fail("harness: socket path too long: %s", p);
    memcpy(sa.sun_path, p, strlen(p) + 1);
    r = fd < 0 ? -1 : bind(fd, (struct sockaddr *) &sa, sizeof sa);
    if (fd >= 0)
      (void) close(fd); /* the socket inode stays */
    break;
  }
  default: r = -1; errno = EINVAL;
  }
  if (r < 0)
    ks_fuzz_fail("harness: making %s: %s", p, strerror(errno));
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  char abs_out[8192];
  (void) argc;
  (void) argv;
  snprintf(top, sizeof top, "%s/ks-fuzz-ob-XXXXXX", ks_fuzz_tmp_base());
  if (mkdtemp(top) == NULL)
    ks_fuzz_fail("harness: mkdtemp %s: %s", top, strerror(errno));
  {
    /* /proc/self/fd shows the canonical path; so must we. */
    char *real = realpath(top, NULL);
    if (real == NULL)
      ks_fuzz_fail("harness: realpath %s: %s", top, strerror(errno));
    snprintf(top, sizeof top, "%s", real);
    free(real);
  }
  atexit(cleanup_at_exit);
  snprintf(root_path, sizeof root_path, "%s/root", top);
  snprintf(outside_path, sizeof outside_path, "%s/outside", top);
  snprintf(abs_out, sizeof abs_out, "%s/outside", top);
  mk('d', "outside", NULL);
  mk('f', "outside/secret", NULL);
  mk('d', "root", NULL);
  mk('f', "root/file", NULL);
  mk('d', "root/empty", NULL);
  mk('d', "root/d", NULL);
  mk('f', "root/d/file", NULL);
  mk('d', "root/d/e", NULL);
  mk('f', "root/d/e/f.txt", NULL);
  mk('p', "root/fifo", NULL);
  mk('p', "root/d/fifo2", NULL);
  mk('s', "root/sock", NULL);
  mk('l', "root/d/link_up", "..");
  mk('l', "root/d/link_file", "../file");
  mk('l', "root/dirlink", "d");
  mk('l', "root/link_out", "../outside");
  mk('l', "root/link_abs", abs_out);
  mk('l', "root/link_root", "/");
  mk('l', "root/proc_root", "/proc/self/root");
  mk('l', "root/loop1", "loop2");
  mk('l', "root/loop2", "loop1");
  mk('l', "root/self", "self");
  mk('l', "root/dangling", "nowhere");
  rootfd = open(root_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (rootfd < 0)
    ks_fuzz_fail("harness: open %s: %s", root_path, strerror(errno));
  {
    /* Say which path the unrenamed copy takes: without openat2 both
     * copies walk, and B2 compares the walk with itself. */
    struct {
      uint64_t flags, mode, resolve;
    } how = {O_PATH | O_CLOEXEC, 0, 0x08 | 0x04 | 0x02};
    long fd = syscall(SYS_openat2, rootfd, ".", &how, sizeof how);
    fprintf(stderr, "fuzz_open_beneath: tree %s; openat2 %s\n", top,
            fd >= 0 ? "available" : strerror(errno));
    if (fd >= 0)
      (void) close((int) fd);
  }
  return 0;
}

/* ---- the model ------------------------------------------------------------- */

struct expect {
  int errnum; /* 0: success */
  dev_t dev;
  ino_t ino;
  char norm[4096]; /* the path with "" and "." components dropped */
};

/* What opening path beneath the root with flags must give. */
static void model(const char *path, size_t len, int flags, struct expect *e) {
  const char *comp[2100];
  size_t clen[2100];
  size_t n = 0;
  size_t i = 0;
  size_t o = 0;
  bool trailing = false;
  int dirfd = rootfd;
  int cur = -1;
  struct stat st;

  e->errnum = 0;
  e->norm[0] = '\0';
  /* The shape: the same rules as ks_ws_check_dir_rel, as documented. */
  if (len > 0 && path[0] == '/') {
    e->errnum = EINVAL;
    return;
  }
  if (len > 4095) {
    e->errnum = ENAMETOOLONG;
    return;
  }
  while (i < len) {
    size_t s = i;
    while (i < len && path[i] != '/')
      i++;
    size_t cl = i - s;
    if (cl == 2 && path[s] == '.' && path[s + 1] == '.') {
      e->errnum = EINVAL;
      return;
    }
    if (cl > 255) {
      e->errnum = ENAMETOOLONG;
      return;
    }
    trailing = cl == 0 || (cl == 1 && path[s] == '.');
    if (!trailing) {
      comp[n] = path + s;
      clen[n] = cl;
      n++;
    }
    if (i < len) {
      i++;
      if (i == len)
        trailing = true;
    }
  }
  for (size_t k = 0; k < n; k++) {
    if (k > 0)
      e->norm[o++] = '/';
    memcpy(e->norm + o, comp[k], clen[k]);
    o += clen[k];
  }
  e->norm[o] = '\0';
  if (n == 0) {
    if (fstat(rootfd, &st) < 0)
      ks_fuzz_fail("harness: fstat root: %s", strerror(errno));
    e->dev = st.st_dev;
    e->ino = st.st_ino;
    return;
  }
  for (size_t k = 0; k < n; k++) {
    char name[256];
    bool last = k + 1 == n;
    memcpy(name, comp[k], clen[k]);
    name[clen[k]] = '\0';
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
      e->errnum = errno;
      break;
    }
    if (S_ISLNK(st.st_mode)) {
      e->errnum = ELOOP;
      break;
    }
    if (!last || trailing || (flags & O_DIRECTORY) != 0) {
      if (!S_ISDIR(st.st_mode)) {
        e->errnum = ENOTDIR;
        break;
      }
    }
    if (last) {
      if (S_ISSOCK(st.st_mode) && (flags & O_PATH) == 0)
        e->errnum = ENXIO;
      e->dev = st.st_dev;
      e->ino = st.st_ino;
      break;
    }
    int fd = openat(dirfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
      ks_fuzz_fail("harness: openat %s: %s", name, strerror(errno));
    if (cur >= 0)
      (void) close(cur);
    cur = dirfd = fd;
  }
  if (cur >= 0)
    (void) close(cur);
}

/* ---- the target -------------------------------------------------------------- */

static const char *mode_name(int walk) { return walk ? "walk" : "openat2"; }

static int open_one(int walk, const char *path, int flags, const struct expect *e) {
  struct ks_err err;
  int before;
  int after;
  int fd = -1;
  int r;

  ks_err_clear(&err);
  before = ks_fuzz_lowest_free_fd();
  if (walk)
    r = ksw_open_beneath(rootfd, path, flags, 0, &fd, &err);
  else
    r = ks_open_beneath(rootfd, path, flags, 0, &fd, &err);
  if (r < 0) {
    after = ks_fuzz_lowest_free_fd();
    KS_FUZZ_CHECK(before == after, "B4: %s leaked a descriptor on failure",
                  mode_name(walk));
    KS_FUZZ_CHECK(err.errnum == -r, "%s: result %d but err.errnum %d", mode_name(walk), r,
                  err.errnum);
    if (-r != e->errnum) {
      ks_fuzz_dump("path", path, strlen(path));
      ks_fuzz_fail("B3: %s (flags %#o) failed with %s (syscall %s), the model says %s",
                   mode_name(walk), flags, strerror(-r), err.syscall,
                   e->errnum ? strerror(e->errnum) : "success");
    }
    return -r;
  }

  char link[64];
  char got[8192];
  char want[8192];
  struct stat st;
  ssize_t n;

  KS_FUZZ_CHECK(fd >= 0, "%s returned 0 without a descriptor", mode_name(walk));
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  n = readlink(link, got, sizeof got - 1);
  if (n < 0 || fstat(fd, &st) < 0)
    ks_fuzz_fail("harness: readlink/fstat %s: %s", link, strerror(errno));
  got[n] = '\0';
  (void) close(fd);
  after = ks_fuzz_lowest_free_fd();
  KS_FUZZ_CHECK(before == after, "B4: %s leaked a descriptor on success",
                mode_name(walk));

  size_t olen = strlen(outside_path);
  if (strncmp(got, outside_path, olen) == 0 && (got[olen] == '\0' || got[olen] == '/')) {
    ks_fuzz_dump("path", path, strlen(path));
    ks_fuzz_fail("B1: %s opened the canary: %s", mode_name(walk), got);
  }
  if (e->norm[0] == '\0')
    snprintf(want, sizeof want, "%s", root_path);
  else
    snprintf(want, sizeof want, "%s/%s", root_path, e->norm);
  if (strcmp(got, want) != 0 || st.st_dev != e->dev || st.st_ino != e->ino) {
    ks_fuzz_dump("path", path, strlen(path));
    ks_fuzz_fail("B1: %s (flags %#o) opened %s (inode %lu), expected %s (inode %lu)",
                 mode_name(walk), flags, got, (unsigned long) st.st_ino, want,
                 (unsigned long) e->ino);
  }
  if (e->errnum != 0) {
    ks_fuzz_dump("path", path, strlen(path));
    ks_fuzz_fail("B3: %s (flags %#o) succeeded, the model says %s", mode_name(walk),
                 flags, strerror(e->errnum));
  }
  KS_FUZZ_CHECK(S_ISDIR(st.st_mode) || S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode) ||
                    ((flags & O_PATH) != 0 && S_ISSOCK(st.st_mode)),
                "B1: %s opened an object of mode %o", mode_name(walk),
                (unsigned) st.st_mode);
  return 0;
}

static struct expect expect_buf;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const int flag_sets[] = {
      O_RDONLY | O_NONBLOCK,
      O_PATH,
      O_RDONLY | O_NONBLOCK | O_DIRECTORY,
  };
  size_t len;
  char *path;

  if (size > FUZZ_MAX_INPUT)
    size = FUZZ_MAX_INPUT;
  len = strnlen((const char *) data, size);
  path = malloc(len + 1);
  if (path == NULL)
    abort();
  memcpy(path, data, len);
  path[len] = '\0';

  for (size_t k = 0; k < sizeof flag_sets / sizeof flag_sets[0]; k++) {
    int a;
    int b;
    model(path, len, flag_sets[k], &expect_buf);
    a = open_one(0, path, flag_sets[k], &expect_buf);
    b = open_one(1, path, flag_sets[k], &expect_buf);
    if (a != b) {
      ks_fuzz_dump("path", path, len);
      ks_fuzz_fail("B2: flags %#o: openat2 gives %s, the walk %s", flag_sets[k],
                   a ? strerror(a) : "success", b ? strerror(b) : "success");
    }
  }
  free(path);
  return 0;
}
