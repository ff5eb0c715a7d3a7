/* libFuzzer target: the whole restore pipeline, ks_restore_from (gzip
 * stream, tar parser, vetting, staged extraction) into a real directory,
 * then ks_snapshot_write on what it restored (SECURITY-CASES A1-A13, A15
 * in part, A16 second target, D3, D5).
 *
 * The input is the raw bytes of a snapshot. One that starts with the gzip
 * magic (1f 8b) is restored as it is, which fuzzes the gzip layer (CRCs,
 * truncation, concatenated members, trailing data, bombs); any other input
 * is plain tar, which the target gzips first (deflate level 1), so that
 * mutations reach the tar parser instead of dying on a CRC. (Restore's
 * refusal of a non-gzip file is reached through inputs like 1f 8b + junk.)
 * Per input:
 *
 *   <parent>/outside/    canary sibling of the workspace, created once, and
 *                        the working directory during each restore, so a
 *                        write that slipped to AT_FDCWD lands there and is
 *                        seen
 *   <parent>/ws-XXXXXX/  a fresh workspace, removed afterwards
 *   /tmp/ks-fuzz-abs-canary/  a fixed absolute canary that seeds aim
 *                        absolute members at
 *
 * The bytes go into a memfd and ks_restore_from restores them into the
 * workspace. Properties, checked with lstat (no symlink is followed):
 *
 *   R1  the workspace holds only regular files and directories: no symlink,
 *       FIFO, socket or device (A3, A6), no hardlinked file (A4), no
 *       set-id or sticky bit (A13);
 *   R2  nothing outside the workspace changed: <parent> holds exactly
 *       "outside" and the workspace, both canaries are empty (A1, A2, A5);
 *   R3  no staging leftover: no top-level ".ks-" name at all;
 *   R4  a refused archive leaves the workspace empty (A11), and the result
 *       is 0 or one of the documented errors, with the report filled in
 *       for the archive's own faults;
 *   R5  no descriptor leaks;
 *   R6  an accepted archive restored a second time over its own result
 *       succeeds and leaves the same tree (paths, types, sizes);
 *   R7  ks_snapshot_write of the restored workspace succeeds (unless a path
 *       does not fit USTAR, as documented; on failure err.path is still
 *       readable, not left pointing into the freed walk) and that snapshot
 *       restores into a fresh workspace to the same files: paths and sizes,
 *       leaving out what snapshots skip by design (".ks-*" names, top-level
 *       ".kern-env*" files).
 *
 * Run with -rss_limit_mb=2048: restore caps inflated bytes at 1 GiB, and
 * those land on the workspace's file system (tmpfs by default), not in the
 * process's memory. */
#include "fuzz_common.h"

#include <sys/mman.h>
#include <zlib.h>

#include "err.h"
#include "archive/snapshot.h"

#define ABS_CANARY "/tmp/ks-fuzz-abs-canary"

static char parent[4096];
static char outside[4096 + 16];
static int outside_fd = -1; /* the working directory during each restore */
static int home_fd = -1;    /* and the one libFuzzer started in */
static bool verbose;        /* KS_FUZZ_VERBOSE=1: one line per input */

static void cleanup_at_exit(void) {
  if (parent[0] != '\0')
    ks_fuzz_rm_rf(parent);
  (void) rmdir(ABS_CANARY); /* only if empty; another run may still use it */
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void) argc;
  (void) argv;
  snprintf(parent, sizeof parent, "%s/ks-fuzz-restore-XXXXXX", ks_fuzz_tmp_base());
  if (mkdtemp(parent) == NULL)
    ks_fuzz_fail("harness: mkdtemp %s: %s", parent, strerror(errno));
  snprintf(outside, sizeof outside, "%s/outside", parent);
  if (mkdir(outside, 0755) < 0)
    ks_fuzz_fail("harness: mkdir %s: %s", outside, strerror(errno));
  outside_fd = open(outside, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  home_fd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (outside_fd < 0 || home_fd < 0)
    ks_fuzz_fail("harness: open %s or .: %s", outside, strerror(errno));
  if (mkdir(ABS_CANARY, 0755) < 0 && errno != EEXIST)
    ks_fuzz_fail("harness: mkdir %s: %s", ABS_CANARY, strerror(errno));
  atexit(cleanup_at_exit);
  verbose =
      getenv("KS_FUZZ_VERBOSE") != NULL && strcmp(getenv("KS_FUZZ_VERBOSE"), "1") == 0;
  fprintf(stderr, "fuzz_restore: workspaces under %s\n", parent);
  return 0;
}

/* ---- the tree check ------------------------------------------------------- */

struct tree {
  size_t files;
  size_t dirs;
  uint64_t digest;      /* order-independent: sum of one hash per entry */
  uint64_t snap_digest; /* the same over the files a snapshot must carry */
  size_t snap_files;
  bool unencodable; /* a file path USTAR cannot hold (see snapshot_fits) */
};

static struct tree *cur_tree;
static size_t cur_root_len;

static uint64_t hash_entry(const char *rel, int kind, uint64_t size) {
  uint64_t h = 1469598103934665603ULL;
  for (const char *p = rel; *p; p++)
    h = (h ^ (unsigned char) *p) * 1099511628211ULL;
  h = (h ^ (uint64_t) kind) * 1099511628211ULL;
  h = (h ^ size) * 1099511628211ULL;
  return h ^ (h >> 29);
}

/* Does a snapshot carry the file rel? Not when some component is private
 * to the binding (".ks-...", skipped at any depth) or when it is a
 * top-level ".kern-env..." file (the JS facade's env files), as
 * ks_ws_walk_flags documents. */
static bool snapshot_carries(const char *rel) {
  const char *p = rel;
  if (strncmp(rel, ".kern-env", 9) == 0 && strchr(rel, '/') == NULL)
    return false;
  for (;;) {
    if (strncmp(p, ".ks-", 4) == 0)
      return false;
    p = strchr(p, '/');
    if (p == NULL)
      return true;
    p++;
  }
}

/* Can USTAR hold the path: <= 100 bytes, or split at a '/' into a prefix
 * of <= 155 and a name of 1..100 (ks_tar_encode's contract)? */
static bool snapshot_fits(const char *rel) {
  size_t len = strlen(rel);
  if (len <= 100)
    return true;
  for (size_t i = 0; i < len; i++) {
    if (rel[i] == '/' && i <= 155 && len - i - 1 >= 1 && len - i - 1 <= 100)
      return true;
  }
  return false;
}

static int check_entry(const char *path, const struct stat *st, int type,
                       struct FTW *ftw) {
  const char *rel = path + cur_root_len;
  const char *name = path + ftw->base;

  if (ftw->level == 0)
    return 0; /* the workspace itself */
  if (*rel == '/')
    rel++;
  if (type == FTW_NS || type == FTW_DNR)
    ks_fuzz_fail("R1: cannot stat or read %s", path);
  if (type == FTW_SL || type == FTW_SLN || S_ISLNK(st->st_mode))
    ks_fuzz_fail("R1 (A3): restore left a symlink at %s", rel);
  if (!S_ISREG(st->st_mode) && !S_ISDIR(st->st_mode))
    ks_fuzz_fail("R1 (A6): restore left a special file (mode %o) at %s",
                 (unsigned) st->st_mode, rel);
  if ((st->st_mode & 07000) != 0)
    ks_fuzz_fail("R1 (A13): %s has mode %o", rel, (unsigned) st->st_mode & 07777);
  if (S_ISREG(st->st_mode) && st->st_nlink != 1)
    ks_fuzz_fail("R1 (A4): %s has %lu links", rel, (unsigned long) st->st_nlink);
  if (ftw->level == 1 && strncmp(name, ".ks-", 4) == 0)
    ks_fuzz_fail("R3: restore left %s behind", rel);
  if (S_ISREG(st->st_mode)) {
    cur_tree->files++;
    if (snapshot_carries(rel)) {
      cur_tree->snap_files++;
      cur_tree->snap_digest += hash_entry(rel, 'f', (uint64_t) st->st_size);
      if (!snapshot_fits(rel))
        cur_tree->unencodable = true;
    }
  } else {
    cur_tree->dirs++;
  }
  cur_tree->digest += hash_entry(rel, S_ISDIR(st->st_mode) ? 'd' : 'f',
                                 S_ISREG(st->st_mode) ? (uint64_t) st->st_size : 0);
  return 0;
}

static void scan_tree(const char *root, struct tree *t) {
  memset(t, 0, sizeof *t);
  cur_tree = t;
  cur_root_len = strlen(root);
  if (nftw(root, check_entry, 32, FTW_PHYS) < 0)
    ks_fuzz_fail("harness: nftw %s: %s", root, strerror(errno));
  cur_tree = NULL;
}

static void check_outside(const char *ws) {
  char first[256];
  struct stat st;
  size_t n;

  n = ks_fuzz_count_entries(outside, first, sizeof first);
  KS_FUZZ_CHECK(n == 0, "R2: the canary %s is not empty: %s", outside, first);
  n = ks_fuzz_count_entries(parent, first, sizeof first);
  KS_FUZZ_CHECK(n == 2, "R2: %s holds %zu entries, not just outside and %s (one: %s)",
                parent, n, ws, first);
  if (lstat(ABS_CANARY, &st) == 0) {
    KS_FUZZ_CHECK(S_ISDIR(st.st_mode), "R2: %s was replaced", ABS_CANARY);
    n = ks_fuzz_count_entries(ABS_CANARY, first, sizeof first);
    KS_FUZZ_CHECK(n == 0, "R2 (A1): %s is not empty: %s", ABS_CANARY, first);
  }
}

/* ---- the target ------------------------------------------------------------- */

static int restore_once(int wsfd, int infd, struct ks_restore_report *rep) {
  struct ks_err err;
  int before;
  int after;
  int r;

  if (lseek(infd, 0, SEEK_SET) != 0)
    ks_fuzz_fail("harness: lseek: %s", strerror(errno));
  ks_err_clear(&err);
  before = ks_fuzz_lowest_free_fd();
  /* A path the core wrongly resolved against AT_FDCWD lands in the canary. */
  if (fchdir(outside_fd) < 0)
    ks_fuzz_fail("harness: fchdir: %s", strerror(errno));
  r = ks_restore_from(wsfd, infd, rep, &err);
  if (fchdir(home_fd) < 0)
    ks_fuzz_fail("harness: fchdir: %s", strerror(errno));
  after = ks_fuzz_lowest_free_fd();
  KS_FUZZ_CHECK(before == after, "R5: restore leaked a descriptor (%d -> %d), result %d",
                before, after, r);
  KS_FUZZ_CHECK(memchr(rep->message, 0, sizeof rep->message) != NULL &&
                    memchr(rep->member, 0, sizeof rep->member) != NULL,
                "R4: the report is not NUL-terminated");
  if (r == 0)
    return 0;
  KS_FUZZ_CHECK(err.errnum == -r && err.syscall != NULL,
                "R4: result %d but err = {%d, %s}", r, err.errnum,
                err.syscall ? err.syscall : "(null)");
  KS_FUZZ_CHECK(r == -EINVAL || r == -EFBIG || r == -ELOOP || r == -ENOTDIR ||
                    r == -EISDIR,
                "R4: undocumented result %d (%s, syscall %s, message \"%s\")", r,
                strerror(-r), err.syscall, rep->message);
  KS_FUZZ_CHECK(rep->message[0] != '\0', "R4: refused (%s, syscall %s) without a message",
                strerror(-r), err.syscall);
  return r;
}

static void write_input(int fd, const uint8_t *data, size_t size) {
  for (size_t off = 0; off < size;) {
    ssize_t n = write(fd, data + off, size - off);
    if (n <= 0)
      ks_fuzz_fail("harness: write memfd: %s", strerror(errno));
    off += (size_t) n;
  }
}

/* One gzip member holding data (deflate level 1). */
static unsigned char *gzip_bytes(const uint8_t *data, size_t size, size_t *ret_len) {
  z_stream zs;
  unsigned char *out;
  size_t cap;

  memset(&zs, 0, sizeof zs);
  if (deflateInit2(&zs, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    ks_fuzz_fail("harness: deflateInit2");
  cap = deflateBound(&zs, (uLong) size) + 64;
  out = malloc(cap);
  if (out == NULL)
    abort();
  zs.next_in = (Bytef *) data;
  zs.avail_in = (uInt) size;
  zs.next_out = out;
  zs.avail_out = (uInt) cap;
  if (deflate(&zs, Z_FINISH) != Z_STREAM_END)
    ks_fuzz_fail("harness: deflate did not finish");
  *ret_len = cap - zs.avail_out;
  (void) deflateEnd(&zs);
  return out;
}

/* R7: a snapshot of the restored workspace restores, into a fresh one,
 * to the same files (paths and sizes). */
static void check_snapshot(int wsfd, const struct tree *t) {
  char ws2[sizeof parent + 16];
  char errpath[4096];
  struct ks_restore_report rep;
  struct ks_err err;
  struct tree back;
  int snapfd;
  int ws2fd;
  int before;
  int r;

  snapfd = memfd_create("ks-fuzz-snapshot", MFD_CLOEXEC);
  if (snapfd < 0)
    ks_fuzz_fail("harness: memfd_create: %s", strerror(errno));
  ks_err_clear(&err);
  before = ks_fuzz_lowest_free_fd();
  r = ks_snapshot_write(wsfd, snapfd, errpath, sizeof errpath, &err);
  KS_FUZZ_CHECK(before == ks_fuzz_lowest_free_fd(), "R5: snapshot leaked a descriptor");
  /* err.path must still be readable (ASan reports it otherwise): the walk
   * that held the member's path is freed by the time we look. */
  if (r < 0 && err.path != NULL)
    (void) strlen(err.path);
  if (r == -ENAMETOOLONG && t->unencodable) {
    (void) close(snapfd);
    return; /* documented: a path USTAR cannot hold */
  }
  KS_FUZZ_CHECK(r == 0,
                "R7: snapshot of a restored workspace failed: %s (syscall %s, %s)",
                strerror(-r), err.syscall, err.path ? err.path : "");
  KS_FUZZ_CHECK(!t->unencodable, "R7: snapshot archived a path USTAR cannot hold");

  snprintf(ws2, sizeof ws2, "%s/ws-XXXXXX", parent);
  if (mkdtemp(ws2) == NULL)
    ks_fuzz_fail("harness: mkdtemp %s: %s", ws2, strerror(errno));
  ws2fd = open(ws2, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (ws2fd < 0)
    ks_fuzz_fail("harness: open %s: %s", ws2, strerror(errno));
  r = restore_once(ws2fd, snapfd, &rep);
  KS_FUZZ_CHECK(r == 0, "R7: restoring the snapshot failed: %s (\"%s\", member \"%s\")",
                strerror(-r), rep.message, rep.member);
  scan_tree(ws2, &back);
  KS_FUZZ_CHECK(back.files == t->snap_files && back.snap_digest == t->snap_digest,
                "R7: snapshot + restore gave %zu files, the workspace has %zu",
                back.files, t->snap_files);
  (void) close(ws2fd);
  (void) close(snapfd);
  ks_fuzz_rm_rf(ws2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char ws[sizeof parent + 16];
  struct ks_restore_report rep;
  struct tree first;
  struct tree second;
  int wsfd;
  int infd;
  int r;

  snprintf(ws, sizeof ws, "%s/ws-XXXXXX", parent);
  if (mkdtemp(ws) == NULL)
    ks_fuzz_fail("harness: mkdtemp %s: %s", ws, strerror(errno));
  wsfd = open(ws, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (wsfd < 0)
    ks_fuzz_fail("harness: open %s: %s", ws, strerror(errno));
  infd = memfd_create("ks-fuzz-input", MFD_CLOEXEC);
  if (infd < 0)
    ks_fuzz_fail("harness: memfd_create: %s", strerror(errno));
  if (size >= 2 && data[0] == 0x1f && data[1] == 0x8b) {
    write_input(infd, data, size);
  } else {
    size_t glen;
    unsigned char *g = gzip_bytes(data, size, &glen);
    write_input(infd, g, glen);
    free(g);
  }

  r = restore_once(wsfd, infd, &rep);
  scan_tree(ws, &first);
  if (verbose)
    fprintf(stderr, "==ks-fuzz== restore: %s%s%s%s%s (%zu files, %zu dirs)\n",
            r == 0 ? "ok" : strerror(-r), rep.message[0] ? ": " : "", rep.message,
            rep.member[0] ? ", member " : "", rep.member, first.files, first.dirs);
  check_outside(ws);
  if (r < 0) {
    KS_FUZZ_CHECK(
        first.files == 0 && first.dirs == 0,
        "R4 (A11): refused archive (%s: \"%s\", member \"%s\") left %zu files and "
        "%zu directories",
        strerror(-r), rep.message, rep.member, first.files, first.dirs);
  } else {
    r = restore_once(wsfd, infd, &rep);
    KS_FUZZ_CHECK(r == 0,
                  "R6: restoring an accepted archive again failed: %s (\"%s\", "
                  "member \"%s\")",
                  strerror(-r), rep.message, rep.member);
    scan_tree(ws, &second);
    check_outside(ws);
    KS_FUZZ_CHECK(first.files == second.files && first.dirs == second.dirs &&
                      first.digest == second.digest,
                  "R6: restoring again changed the tree (%zu/%zu files, %zu/%zu dirs)",
                  first.files, second.files, first.dirs, second.dirs);
  }

  if (r == 0)
    check_snapshot(wsfd, &second);

  (void) close(infd);
  (void) close(wsfd);
  ks_fuzz_rm_rf(ws);
  return 0;
}
