/* Plain C tests of the inotify change tracker (wstrack.c), without Node.
 *
 * They run under ASan/UBSan (see the Makefile). The reference for every
 * report is what two full scans (ks_ws_scan before, ks_ws_rescan_diff after)
 * say about the same call: the scenario tests check named cases against
 * hand-written expectations, the differential test checks thousands of
 * random operations against the scans, as sets. Timings are printed, not
 * asserted. Several tests need root (a tiny inotify queue); they say SKIP
 * otherwise.
 *
 * Knobs of the differential test (for hunting a failure down):
 *   KS_WSTRACK_STEPS=n      its length (default 4000)
 *   KS_WSTRACK_SEED=n       its seed (default: the time; printed)
 *   KS_WSTRACK_ONLY_DIFF=1  run nothing else (with openat2 unless told)
 *   KS_WSTRACK_QUEUE=n      ... with an inotify queue of n events
 *   KS_WSTRACK_FALLBACK=1   ... with the openat fallback (openat2 disabled)
 *   KS_WSTRACK_TRACE=1      print every operation
 *   KS_WSTRACK_VERIFY_FROM=n  compare the index with a full scan after every
 *                           step from n on (this drains, so it changes the
 *                           batching: bisect n to find the guilty batch)
 *   KS_WSTRACK_DUMP_FROM=n  list the workspace after every step from n on */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "compat.h"
#include "util.h"
#include "workspace/wsfs.h"
#include "workspace/wsscan.h"
#include "workspace/wstrack.h"

#define CHECK_ERR(expr, want)                                                            \
  do {                                                                                   \
    int got_ = (expr);                                                                   \
    checks++;                                                                            \
    if (got_ != (want)) {                                                                \
      failures++;                                                                        \
      fprintf(stderr, "FAIL %s:%d: %s = %d (%s; syscall %s, path %s), want %d\n",        \
              __FILE__, __LINE__, #expr, got_, strerror(-got_),                          \
              e.syscall ? e.syscall : "-", e.path ? e.path : "-", (want));               \
    }                                                                                    \
  } while (0)

static char base[256];
static char ws[300];
static char outer[300];
static struct ks_err e;

static void path_of(char *out, size_t size, const char *dir, const char *rel) {
  (void) snprintf(out, size, "%s/%s", dir, rel);
}

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...) {
  char cmd[4096];
  va_list ap;
  va_start(ap, fmt);
  (void) vsnprintf(cmd, sizeof cmd, fmt, ap);
  va_end(ap);
  MUST(system(cmd) == 0);
}

static void set_mtime(const char *dir, const char *rel, time_t sec, long nsec) {
  char p[8192];
  struct timespec ts[2] = {{.tv_sec = sec, .tv_nsec = nsec},
                           {.tv_sec = sec, .tv_nsec = nsec}};
  path_of(p, sizeof p, dir, rel);
  MUST(utimensat(AT_FDCWD, p, ts, AT_SYMLINK_NOFOLLOW) == 0);
}

static int count_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  struct dirent *de;
  int n = 0;
  MUST(d != NULL);
  while ((de = readdir(d)) != NULL)
    n++;
  closedir(d);
  return n;
}

static int fresh_ws(void) {
  int fd;
  rm_rf(ws);
  rm_rf(outer);
  MUST(mkdir(ws, 0755) == 0);
  MUST(mkdir(outer, 0755) == 0);
  put_dir(outer, "dir");
  put_file(outer, "dir/keep", "keep me\n");
  fd = open(ws, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  MUST(fd >= 0);
  return fd;
}

/* "path:C" / "path:M" items separated by spaces, sorted like the result. */
static void format_changes(const struct ks_ws_change *ch, size_t n, char *out,
                           size_t size) {
  size_t len = 0;
  out[0] = '\0';
  for (size_t i = 0; i < n && len < size; i++)
    len += (size_t) snprintf(out + len, size - len, "%s%s:%c", i ? " " : "", ch[i].path,
                             ch[i].kind == KS_WS_CREATED ? 'C' : 'M');
}

#define EXPECT_CHANGES(ch, n, want)                                                      \
  do {                                                                                   \
    char got_[8192];                                                                     \
    format_changes((ch), (n), got_, sizeof got_);                                        \
    checks++;                                                                            \
    if (strcmp(got_, (want)) != 0) {                                                     \
      failures++;                                                                        \
      fprintf(stderr, "FAIL %s:%d: changes\n   got: [%s]\n  want: [%s]\n", __FILE__,     \
              __LINE__, got_, (want));                                                   \
    }                                                                                    \
  } while (0)

/* Ends a call and checks its report against want (and frees it). */
#define END_EXPECT(t, call, want)                                                        \
  do {                                                                                   \
    struct ks_ws_change *ch_ = NULL;                                                     \
    size_t n_ = 0;                                                                       \
    CHECK_ERR(ks_ws_tracker_end((t), (call), &ch_, &n_, &e), 0);                         \
    EXPECT_CHANGES(ch_, n_, (want));                                                     \
    free(ch_);                                                                           \
  } while (0)

static uint64_t rescans(struct ks_ws_tracker *t) {
  struct ks_ws_tracker_stats st;
  ks_ws_tracker_get_stats(t, &st);
  return st.rescans;
}

/* ---- scenarios ---------------------------------------------------------------- */

static void test_basic(int root) {
  struct ks_ws_tracker *t = NULL;
  struct ks_ws_call *c = NULL;
  char p[512];

  put_file(ws, "same", "same");
  put_file(ws, "grows", "1");
  put_file(ws, "touched", "tt");
  put_file(ws, "deleted", "d");
  put_file(ws, "replaced", "r");
  put_dir(ws, "sub");
  put_file(ws, "sub/old", "o");
  put_dir(ws, ".deps");
  put_file(ws, ".deps/lib", "l");
  set_mtime(ws, "touched", 1000000000, 0);

  CHECK_ERR(ks_ws_tracker_open(root, &t, &e), 0);
  MUST(t != NULL);
  CHECK_ERR(ks_ws_tracker_verify(t, &e), 0);

  CHECK_ERR(ks_ws_tracker_begin(t, &c, &e), 0);
  put_file(ws, "grows", "12");
  /* Same size, later mtime: modified. */
  put_file(ws, "touched", "TT");
  set_mtime(ws, "touched", 1000000000, 1);
  path_of(p, sizeof p, ws, "deleted");
  MUST(unlink(p) == 0);
  put_file(ws, "sub/new", "new!");
  put_file(ws, "a-new", "");
  /* Replaced by rename: the new inode is a modification of the path. */
  put_file(ws, "replacement.tmp", "R2");
  sh("mv '%s/replacement.tmp' '%s/replaced'", ws, ws);
  /* Created and deleted within the call: never reported. */
  put_file(ws, "ephemeral", "e");
  path_of(p, sizeof p, ws, "ephemeral");
  MUST(unlink(p) == 0);
  /* Exclusions. */
  put_file(ws, ".deps/lib2", "not reported");
  put_file(ws, ".kern-env", "not reported");
  put_file(ws, ".kern-env-extra", "not reported");
  put_file(ws, ".ks-tmp-1", "not reported");
  put_dir(ws, ".ks-dir");
  put_file(ws, ".ks-dir/x", "not reported");
  put_dir(ws, "sub/.ks-deep");
  put_file(ws, "sub/.ks-deep/x", "not reported");
  put_file(ws, "sub/.ks-f", "not reported");
  /* Only top-level .kern-env files and the top-level .deps directory are
   * excluded. */
  put_file(ws, "sub/.kern-env", "reported");
  put_dir(ws, "sub/.deps");
  put_file(ws, "sub/.deps/x", "reported");
  put_dir(ws, ".kern-env.d");
  put_file(ws, ".kern-env.d/x", "reported");
  END_EXPECT(t, c,
             ".kern-env.d/x:C a-new:C grows:M replaced:M sub/.deps/x:C sub/.kern-env:C "
             "sub/new:C touched:M");

  /* A call that changes nothing reports nothing. */
  CHECK_ERR(ks_ws_tracker_begin(t, &c, &e), 0);
  END_EXPECT(t, c, "");

  /* A mtime moved back (same size) is a modification too. */
  CHECK_ERR(ks_ws_tracker_begin(t, &c, &e), 0);
  set_mtime(ws, "same", 1, 0);
  END_EXPECT(t, c, "same:M");

  /* .deps turned into a file is a user file; back into a directory, not. */
  path_of(p, sizeof p, ws, ".deps");
  CHECK_ERR(ks_ws_tracker_begin(t, &c, &e), 0);
  rm_rf(p);
  put_file(ws, ".deps", "a file");
  END_EXPECT(t, c, ".deps:C");
  CHECK_ERR(ks_ws_tracker_begin(t, &c, &e), 0);
  MUST(unlink(p) == 0);
  put_dir(ws, ".deps");
  put_file(ws, ".deps/y", "y");
  END_EXPECT(t, c, "");

  CHECK_ERR(ks_ws_tracker_verify(t, &e), 0);
  CHECK(rescans(t) == 0);
  /* abandon releases a call that never ends. */
  CHECK_ERR(ks_ws_tracker_begin(t, &c, &e), 0);
  ks_ws_tracker_abandon(t, c);
  ks_ws_tracker_close(t);
}

static void test_new_dirs(int root) {
  struct ks_ws_tracker *t = NULL;
  struct ks_ws_call *c = NULL;

  put_file(ws, "x", "x");
  CHECK_ERR(ks_ws_tracker_open(root, &t, &e), 0);
  MUST(t != NULL);
  /* The files are written before the tracker had a chance to watch the new
   * directories: the walk of the new subtree finds them. */
  CHECK_ERR(ks_ws_tracker_begin(t, &c, &e), 0);
  sh("mkdir -p '%s/a/b/c' && echo hi > '%s/a/b/c/f' && echo top > '%s/a/t'", ws, ws, ws);
  sh("mkdir -p '%s/a/b/c/d/e' && touch '%s/a/b/c/d/e/g'", ws, ws);
  END_EXPECT(t, c, "a/b/c/d/e/g:C a/b/c/f:C a/t:C");

  /* Now watched: changes deep inside are reported by events. */
  CHECK_ERR(ks_ws_tracker_begin(t, &c, &e), 0);
  sh("echo more >> '%s/a/b/c/f' && echo n > '%s/a/b/c/d/e/h'", ws, ws);
  END_EXPECT(t, c, "a/b/c/d/e/h:C a/b/c/f:M");

  /* rm -rf of a subtree: deletions are not reported. */
  CHECK_ERR(ks_ws_tracker_begin(t, &c, &e), 0);
  sh("rm -rf '%s/a/b'", ws);
  END_EXPECT(t, c, "");
  CHECK_ERR(ks_ws_tracker_begin(t, &c, &e), 0);
  sh("mkdir -p '%s/a/b/c' && echo other > '%s/a/b/c/f'", ws, ws);
  END_EXPECT(t, c, "a/b/c/f:C");
  /* Removed and made again within one call: the same path with a new
   * mtime, so modified. */
  CHECK_ERR(ks_ws_tracker_begin(t, &c, &e), 0);
  sh("rm -rf '%s/a/b' && mkdir -p '%s/a/b/c' && echo other > '%s/a/b/c/f'", ws, ws, ws);
  set_mtime(ws, "a/b/c/f", 7, 7);
  END_EXPECT(t, c, "a/b/c/f:M");
  CHECK_ERR(ks_ws_tracker_verify(t, &e), 0);
  CHECK(rescans(t) == 0);
  ks_ws_tracker_close(t);
}

static void test_renames(int root) {
  struct ks_ws_tracker *t = NULL;
  struct ks_ws_call *c = NULL;
  struct ks_ws_tracker_stats st;

  put_dir(ws, "d");
  put_file(ws, "d/f1", "1");
  put_file(ws, "d/f2", "22");
  put_dir(ws, "d/sub");
  put_file(ws, "d/sub/f3", "333");
  put_file(ws, "stay", "s");
  put_file(outer, "incoming", "from outside");
  put_dir(outer, "indir");
  put_file(outer, "indir/g", "g");
  CHECK_ERR(ks_ws_tracker_open(root, &t, &e), 0);
  MUST(t != NULL);

  /* A file renamed into the workspace from outside, within it, and out. */
  CHECK_ERR(ks_ws_tracker_begin(t, &c, &e), 0);
  sh("mv '%s/incoming' '%s/in'", outer, ws);
  sh("mv '%s/d/f1' '%s/moved-f1'", ws, ws);
  sh("mv '%s/d/f2' '%s/out-f2'", ws, outer);
  END_EXPECT(t, c, "in:C moved-f1:C");

  /* A directory renamed within the workspace: its files appear under the
   * new path, and changes in it afterwards are still seen. */
  CHECK_ERR(ks_ws_tracker_begin(t, &c, &e), 0);
  sh("mv '%s/d' '%s/e'", ws, ws);
  sh("echo x >> '%s/e/sub/f3' && echo new > '%s/e/sub/f4'", ws, ws);
  END_EXPECT(t, c, "e/sub/f3:C e/sub/f4:C");
  CHECK_ERR(ks_ws_tracker_begin(t, &c, &e), 0);
  sh("echo y >> '%s/e/sub/f3'", ws);
  END_EXPECT(t, c, "e/sub/f3:M");
  /* ... and back, with a modification before the move (the same call). */
  CHECK_ERR(ks_ws_tracker_begin(t, &c, &e), 0);
  sh("echo z >> '%s/e/sub/f4' && mv '%s/e' '%s/d'", ws, ws, ws);
  END_EXPECT(t, c, "d/sub/f3:C d/sub/f4:C");
  /* Moved away and back within one call: only what changed is reported. */
  CHECK_ERR(ks_ws_tracker_begin(t, &c, &e), 0);
  sh("mv '%s/d' '%s/tmp-d' && echo w >> '%s/tmp-d/sub/f4' && mv '%s/tmp-d' '%s/d'", ws,
     ws, ws, ws, ws);
  END_EXPECT(t, c, "d/sub/f4:M");

  /* Two directories swapped by RENAME_EXCHANGE: the arrival of one is
   * queued before the departure of the other. Both stay watched. */
  {
    char x[512];
    char y[512];
    put_dir(ws, "x");
    put_file(ws, "x/xf", "x");
    put_dir(ws, "y");
    put_file(ws, "y/yf", "y");
    path_of(x, sizeof x, ws, "x");
    path_of(y, sizeof y, ws, "y");
    CHECK_ERR(ks_ws_tracker_begin(t, &c, &e), 0);
    MUST(renameat2(AT_FDCWD, x, AT_FDCWD, y, RENAME_EXCHANGE) == 0);
    END_EXPECT(t, c, "x/yf:C y/xf:C");
    CHECK_ERR(ks_ws_tracker_begin(t, &c, &e), 0);
    sh("echo 1 >> '%s/x/yf' && echo 2 >> '%s/y/xf'", ws, ws);
    END_EXPECT(t, c, "x/yf:M y/xf:M");
    /* Swapped and modified within one call, then swapped back. */
    CHECK_ERR(ks_ws_tracker_begin(t, &c, &e), 0);
    MUST(renameat2(AT_FDCWD, x, AT_FDCWD, y, RENAME_EXCHANGE) == 0);
    sh("echo 3 >> '%s/x/xf'", ws);
    MUST(renameat2(AT_FDCWD, x, AT_FDCWD, y, RENAME_EXCHANGE) == 0);
    END_EXPECT(t, c, "y/xf:M");
    sh("rm -rf '%s' '%s'", x, y);
  }

  /* Directories in from outside and out again. */
  CHECK_ERR(ks_ws_tracker_begin(t, &c, &e), 0);
  sh("mv '%s/indir' '%s/indir'", outer, ws);
  sh("mv '%s/d/sub' '%s/subout'", ws, outer);
  END_EXPECT(t, c, "indir/g:C");
  /* The directory moved out is no longer watched. */
  CHECK_ERR(ks_ws_tracker_begin(t, &c, &e), 0);
  sh("echo q > '%s/subout/q'", outer);
  END_EXPECT(t, c, "");
  ks_ws_tracker_get_stats(t, &st);
  CHECK(st.dirs == 3); /* the root, d, indir */

  /* A directory swapped for a symlink to the outside: nothing written
   * through the symlink is watched or reported. */
  CHECK_ERR(ks_ws_tracker_begin(t, &c, &e), 0);
  sh("mv '%s/indir' '%s/indir2' && ln -s '%s/dir' '%s/indir'", ws, ws, outer, ws);
  sh("echo planted > '%s/dir/planted' && echo m >> '%s/indir2/g'", outer, ws);
  END_EXPECT(t, c, "indir2/g:C");
  CHECK_ERR(ks_ws_tracker_verify(t, &e), 0);
  CHECK(rescans(t) == 0);
  ks_ws_tracker_close(t);
}

/* Whether the tracker's inotify instance watches the inode of path: the
 * kernel lists every watch in /proc/self/fdinfo/<fd> ("inotify wd:1
 * ino:2a3f sdev:..."). */
static bool watches_inode_of(struct ks_ws_tracker *t, const char *path) {
  char p[64];
  char line[512];
  struct stat st;
  bool found = false;
  FILE *f;

  MUST(stat(path, &st) == 0);
  snprintf(p, sizeof p, "/proc/self/fdinfo/%d", ks_ws_tracker_fd(t));
  f = fopen(p, "r");
  MUST(f != NULL);
  while (fgets(line, sizeof line, f) != NULL) {
    const char *ino = strstr(line, " ino:");
    if (strncmp(line, "inotify ", 8) == 0 && ino != NULL &&
        strtoull(ino + 5, NULL, 16) == (unsigned long long) st.st_ino)
      found = true;
  }
  fclose(f);
  return found;
}

static void test_symlink_outside(int root) {
  struct ks_ws_tracker *t = NULL;
  struct ks_ws_call *c = NULL;
  struct ks_ws_tracker_stats st;
  char p[512];
  char target[512];

  put_dir(ws, "real");
  put_file(ws, "real/r", "r");
  path_of(p, sizeof p, ws, "link");
  path_of(target, sizeof target, outer, "dir");
  MUST(symlink(target, p) == 0);
  path_of(p, sizeof p, ws, "flink");
  path_of(target, sizeof target, outer, "dir/keep");
  MUST(symlink(target, p) == 0);
  CHECK_ERR(ks_ws_tracker_open(root, &t, &e), 0);
  MUST(t != NULL);
  ks_ws_tracker_get_stats(t, &st);
  CHECK(st.dirs == 2 && st.files == 1);

  CHECK_ERR(ks_ws_tracker_begin(t, &c, &e), 0);
  put_file(outer, "dir/new-outside", "never reported");
  put_file(outer, "dir/keep", "changed through nothing of ours");
  /* A symlink planted during the call, to a directory outside. */
  path_of(p, sizeof p, ws, "link2");
  path_of(target, sizeof target, outer, "dir");
  MUST(symlink(target, p) == 0);
  put_file(outer, "dir/after-link2", "never reported");
  /* Writing through the symlink changes the outside only. */
  put_file(ws, "link/through-link", "never reported");
  END_EXPECT(t, c, "");
  ks_ws_tracker_get_stats(t, &st);
  CHECK(st.dirs == 2);
  path_of(target, sizeof target, outer, "dir");
  CHECK(!watches_inode_of(t, target));
  path_of(target, sizeof target, ws, "real");
  CHECK(watches_inode_of(t, target));
  CHECK_ERR(ks_ws_tracker_verify(t, &e), 0);
  ks_ws_tracker_close(t);
}

static atomic_bool stop_swapper;

/* Swaps ws/sw between a real directory and a symlink to the outside, as
 * fast as it can. */
static void *swapper_main(void *arg) {
  char d[512];
  char tmp[512];
  char target[512];
  (void) arg;
  path_of(d, sizeof d, ws, "sw");
  path_of(tmp, sizeof tmp, ws, "sw.real");
  path_of(target, sizeof target, outer, "dir");
  while (!atomic_load(&stop_swapper)) {
    if (rename(d, tmp) == 0) {
      (void) symlink(target, d);
      (void) unlink(d);
      (void) rename(tmp, d);
    }
  }
  return NULL;
}

/* A box swapping a directory for a symlink while the tracker watches and
 * walks it: the outside directory is never watched, nothing in it is ever
 * reported. */
static void test_symlink_race(int root) {
  struct ks_ws_tracker *t = NULL;
  struct ks_ws_call *c = NULL;
  struct ks_ws_change *ch = NULL;
  size_t n = 0;
  pthread_t th;
  char outside[512];
  int leaked = 0;

  put_dir(ws, "sw");
  put_dir(ws, "sw/sub");
  put_file(ws, "sw/sub/f", "f");
  put_dir(outer, "dir/sub");
  path_of(outside, sizeof outside, outer, "dir");
  CHECK_ERR(ks_ws_tracker_open(root, &t, &e), 0);
  MUST(t != NULL);
  atomic_store(&stop_swapper, false);
  MUST(pthread_create(&th, NULL, swapper_main, NULL) == 0);
  for (int i = 0; i < 300; i++) {
    CHECK_ERR(ks_ws_tracker_begin(t, &c, &e), 0);
    if (i % 50 == 0)
      ks_ws_tracker_request_rescan(t);
    CHECK_ERR(ks_ws_tracker_end(t, c, &ch, &n, &e), 0);
    /* Only sw/sub/f (or sw.real/sub/f, caught mid-swap) exists in the
     * workspace; "keep" lives in the outside directory. */
    for (size_t k = 0; k < n; k++)
      leaked += strstr(ch[k].path, "keep") != NULL;
    free(ch);
    ch = NULL;
    CHECK(!watches_inode_of(t, outside));
  }
  atomic_store(&stop_swapper, true);
  pthread_join(th, NULL);
  CHECK(leaked == 0);
  CHECK_ERR(ks_ws_tracker_verify(t, &e), 0);
  CHECK(!watches_inode_of(t, outside));
  path_of(outside, sizeof outside, outer, "dir/sub");
  CHECK(!watches_inode_of(t, outside));
  CHECK_ERR(ks_ws_tracker_begin(t, &c, &e), 0);
  put_file(outer, "dir/x", "outside");
  put_file(outer, "dir/sub/x", "outside");
  END_EXPECT(t, c, "");
  ks_ws_tracker_close(t);
}

static void test_overlap(int root) {
  struct ks_ws_tracker *t = NULL;
  struct ks_ws_call *a = NULL;
  struct ks_ws_call *b = NULL;

  put_file(ws, "shared", "0");
  put_file(ws, "only-b", "0");
  CHECK_ERR(ks_ws_tracker_open(root, &t, &e), 0);
  MUST(t != NULL);

  CHECK_ERR(ks_ws_tracker_begin(t, &a, &e), 0);
  put_file(ws, "by-a", "a");
  put_file(ws, "shared", "01");
  CHECK_ERR(ks_ws_tracker_begin(t, &b, &e), 0);
  put_file(ws, "by-b", "b");
  put_file(ws, "shared", "012");
  put_file(ws, "only-b", "0b");
  put_dir(ws, "dir-b");
  put_file(ws, "dir-b/f", "f");
  /* a ends while b runs: it sees everything up to now. */
  END_EXPECT(t, a, "by-a:C by-b:C dir-b/f:C only-b:M shared:M");
  put_file(ws, "after-a", "x");
  /* b began after by-a and the first change of shared. */
  END_EXPECT(t, b, "after-a:C by-b:C dir-b/f:C only-b:M shared:M");

  /* Changes between calls belong to no call. */
  put_file(ws, "between", "x");
  CHECK_ERR(ks_ws_tracker_begin(t, &a, &e), 0);
  END_EXPECT(t, a, "");
  ks_ws_tracker_close(t);
}

static void test_hardlinks(int root) {
  struct ks_ws_tracker *t = NULL;
  struct ks_ws_call *c = NULL;
  char p[512];
  char q[512];

  put_file(ws, "a", "a");
  path_of(p, sizeof p, ws, "a");
  path_of(q, sizeof q, ws, "b");
  MUST(link(p, q) == 0);
  /* A link from outside the tracked tree (.deps) that exists when the
   * tracker starts. */
  put_file(ws, "c", "c");
  put_dir(ws, ".deps");
  path_of(p, sizeof p, ws, "c");
  path_of(q, sizeof q, ws, ".deps/c-alias");
  MUST(link(p, q) == 0);
  CHECK_ERR(ks_ws_tracker_open(root, &t, &e), 0);
  MUST(t != NULL);

  CHECK_ERR(ks_ws_tracker_begin(t, &c, &e), 0);
  sh("echo more >> '%s/b'", ws);
  sh("echo more >> '%s/.deps/c-alias'", ws);
  END_EXPECT(t, c, "a:M b:M c:M");

  /* A link made within the call, then a write through the new name. */
  put_file(ws, "d", "d");
  CHECK_ERR(ks_ws_tracker_begin(t, &c, &e), 0);
  sh("ln '%s/d' '%s/d2' && echo more >> '%s/d2'", ws, ws, ws);
  END_EXPECT(t, c, "d:M d2:C");

  /* Links under names the tracker does not index, in watched directories:
   * a ".ks-" file anywhere, a top-level ".kern-env" file. */
  put_file(ws, "e", "e");
  put_dir(ws, "sub");
  put_file(ws, "sub/f", "f");
  CHECK_ERR(ks_ws_tracker_begin(t, &c, &e), 0);
  sh("ln '%s/e' '%s/sub/.ks-alias' && echo more >> '%s/sub/.ks-alias'", ws, ws, ws);
  sh("ln '%s/sub/f' '%s/.kern-env-f' && echo more >> '%s/.kern-env-f'", ws, ws, ws);
  END_EXPECT(t, c, "e:M sub/f:M");
  /* From then on both are stat'ed at every drain: the links may move
   * where nothing is watched. */
  CHECK_ERR(ks_ws_tracker_begin(t, &c, &e), 0);
  sh("mv '%s/sub/.ks-alias' '%s/.deps/e-alias' && echo again >> '%s/.deps/e-alias'", ws,
     ws, ws);
  END_EXPECT(t, c, "e:M");
  CHECK_ERR(ks_ws_tracker_verify(t, &e), 0);
  ks_ws_tracker_close(t);
}

/* Opens a tracker whose kernel queue holds only queue_len events
 * (fs.inotify.max_queued_events is read when an instance is created, so the
 * system value is restored right after). Returns false, with a tracker of
 * the usual queue, where the knob cannot be written (not root). */
/* A box that moves a big directory away and back in a loop costs itself two
 * renames per round and an unbudgeted tracker a walk of the subtree per
 * round. The drain must give up on such events after about one scan's worth
 * of work and rescan instead: its work stays within a few full scans, and
 * the call still reports exactly what changed. */
static void move_big_dir(int rounds) {
  char a[600], b[600];
  path_of(a, sizeof a, ws, "big");
  path_of(b, sizeof b, ws, "big.away");
  for (int i = 0; i < rounds; i++) {
    MUST(rename(a, b) == 0);
    MUST(rename(b, a) == 0);
  }
}

static void test_drain_budget(int root) {
  enum { SUBDIRS = 3000 };
  struct ks_ws_tracker_stats st0, st;
  struct ks_ws_tracker *t = NULL;
  struct ks_ws_call *c = NULL;
  uint64_t size;

  put_file(ws, "f", "f");
  put_dir(ws, "big");
  for (int i = 0; i < SUBDIRS; i++) {
    char rel[32];
    snprintf(rel, sizeof rel, "big/d%04d", i);
    put_dir(ws, rel);
  }
  put_file(ws, "big/d0000/inner", "i");
  CHECK_ERR(ks_ws_tracker_open(root, &t, &e), 0);
  ks_ws_tracker_get_stats(t, &st0);
  size = st0.files + st0.dirs;

  /* Positive control: one round trip is walked, not rescanned. */
  CHECK_ERR(ks_ws_tracker_begin(t, &c, &e), 0);
  move_big_dir(1);
  put_file(ws, "f", "ff");
  END_EXPECT(t, c, "f:M");
  ks_ws_tracker_get_stats(t, &st);
  CHECK(st.budget_rescans == 0 && st.rescans == st0.rescans);
  CHECK(st.walks - st0.walks >= SUBDIRS); /* the walk really happened */

  /* The attack: 300 round trips between two drains. Unbudgeted, that is
   * 300 walks of 3,001 directories (900,000 directory listings). */
  st0 = st;
  CHECK_ERR(ks_ws_tracker_begin(t, &c, &e), 0);
  move_big_dir(300);
  put_file(ws, "big/d0000/inner", "changed");
  put_file(ws, "g", "new");
  END_EXPECT(t, c, "big/d0000/inner:M g:C");
  ks_ws_tracker_get_stats(t, &st);
  printf("  drain budget: 300 round trips of a %d-directory tree cost %llu listings and "
         "%llu stats (%llu budget rescans); index size %llu\n",
         SUBDIRS, (unsigned long long) (st.walks - st0.walks),
         (unsigned long long) (st.stats - st0.stats),
         (unsigned long long) st.budget_rescans, (unsigned long long) size);
  CHECK(st.budget_rescans >= 1);
  CHECK(st.walks + st.stats - st0.walks - st0.stats <= 4 * (size > 4096 ? size : 4096));
  CHECK_ERR(ks_ws_tracker_verify(t, &e), 0);
  ks_ws_tracker_close(t);
}


static bool open_small_queue(int root, const char *queue_len,
                             struct ks_ws_tracker **ret) {
  const char *knob = "/proc/sys/fs/inotify/max_queued_events";
  char old[64] = "";
  bool small = false;
  FILE *f = fopen(knob, "r");

  if (f != NULL) {
    if (fgets(old, sizeof old, f) == NULL)
      old[0] = '\0';
    fclose(f);
  }
  f = old[0] != '\0' ? fopen(knob, "w") : NULL;
  if (f != NULL) {
    small = fputs(queue_len, f) >= 0;
    small = fclose(f) == 0 && small;
  }
  CHECK_ERR(ks_ws_tracker_open(root, ret, &e), 0);
  if (small) {
    f = fopen(knob, "w");
    MUST(f != NULL && fputs(old, f) >= 0 && fclose(f) == 0);
  }
  MUST(*ret != NULL);
  return small;
}

/* IN_Q_OVERFLOW for real, with a queue of 16 events. */
static void test_overflow(int root) {
  struct ks_ws_tracker *t = NULL;
  struct ks_ws_call *c = NULL;
  struct ks_ws_call *c2 = NULL;
  char want[8192];
  size_t len = 0;
  bool small;

  put_file(ws, "mod", "m");
  put_file(ws, "same", "s");
  put_dir(ws, "d");
  put_file(ws, "d/x", "x");
  small = open_small_queue(root, "16\n", &t);
  if (!small)
    printf(
        "  SKIP real overflow (cannot set max_queued_events): the forced rescan runs\n");

  CHECK_ERR(ks_ws_tracker_begin(t, &c, &e), 0);
  put_file(ws, "mod", "mm");
  for (int i = 0; i < 40; i++) {
    char rel[32];
    snprintf(rel, sizeof rel, "d/n%02d", i);
    put_file(ws, rel, "n");
    len += (size_t) snprintf(want + len, sizeof want - len, "d/n%02d:C ", i);
  }
  sh("mv '%s/d' '%s/e'", ws, ws);
  CHECK_ERR(ks_ws_tracker_begin(t, &c2, &e), 0);
  put_file(ws, "later", "l");
  if (!small)
    ks_ws_tracker_request_rescan(t);
  /* Everything under d moved to e. */
  len = 0;
  for (int i = 0; i < 40; i++)
    len += (size_t) snprintf(want + len, sizeof want - len, "e/n%02d:C ", i);
  snprintf(want + len, sizeof want - len, "e/x:C later:C mod:M");
  END_EXPECT(t, c, want);
  END_EXPECT(t, c2, "later:C");
  CHECK(rescans(t) >= 1);

  /* A forced rescan with a call in flight (the hook tests use). */
  CHECK_ERR(ks_ws_tracker_begin(t, &c, &e), 0);
  put_file(ws, "same", "SS");
  set_mtime(ws, "mod", 5, 5);
  put_file(ws, "e/n00", "changed");
  ks_ws_tracker_request_rescan(t);
  CHECK_ERR(ks_ws_tracker_drain(t, &e), 0);
  put_file(ws, "e/n01", "changed after");
  END_EXPECT(t, c, "e/n00:M e/n01:M mod:M same:M");
  CHECK_ERR(ks_ws_tracker_verify(t, &e), 0);
  ks_ws_tracker_close(t);
}

/* ---- the differential test ---------------------------------------------------- */

static uint64_t rng_state;
/* The tracker to drain right after a hard link is made (the differential
 * test only: the concurrent writer must not touch the tracker). */
static struct ks_ws_tracker *link_tracker;
static bool trace; /* KS_WSTRACK_TRACE: print every operation of the differential test */
static int verify_from = -1; /* KS_WSTRACK_VERIFY_FROM: verify after every step from */

static uint32_t rnd(uint32_t n) {
  /* xorshift64*: reproducible from the printed seed. */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return (uint32_t) ((rng_state * 2685821657736338717u) >> 33) % n;
}

/* A small name space, so operations collide a lot: one to three
 * components, mostly plain names, sometimes excluded ones, sometimes a path
 * outside the workspace. */
static void rnd_path(char *out, size_t size) {
  static const char *names[] = {"d0", "d1", "d2", "f0", "f1", "d0", "d1", "f0"};
  static const char *odd[] = {".deps", ".ks-x", ".kern-env", ".ks-t"};
  size_t len;
  int ncomp = 1 + (int) rnd(3);

  if (rnd(20) == 0) {
    (void) snprintf(out, size, "%s/%s", outer, names[rnd(KS_ARRAY_SIZE(names))]);
    return;
  }
  len = (size_t) snprintf(out, size, "%s", ws);
  for (int i = 0; i < ncomp; i++) {
    const char *c =
        rnd(12) == 0 ? odd[rnd(KS_ARRAY_SIZE(odd))] : names[rnd(KS_ARRAY_SIZE(names))];
    len += (size_t) snprintf(out + len, size - len, "/%s", c);
  }
}

static void op_write(const char *p, int flags) {
  char buf[64];
  int fd = open(p, O_WRONLY | O_CLOEXEC | O_NOFOLLOW | flags, 0644);
  size_t n = 1 + rnd(20);
  if (fd < 0)
    return;
  memset(buf, 'a' + (int) rnd(26), n);
  (void) write(fd, buf, n);
  close(fd);
}

/* Whether the path lies in a directory the tracker does not watch: outside
 * the workspace, in .deps, in a ".ks-" directory. */
static bool in_unwatched(const char *p) {
  size_t wl = strlen(ws);
  const char *c;
  bool first = true;

  if (strncmp(p, ws, wl) != 0 || p[wl] != '/')
    return true;
  for (c = p + wl + 1;; first = false) {
    const char *slash = strchr(c, '/');
    if (slash == NULL)
      return false; /* the last component names the file itself */
    if (strncmp(c, ".ks-", 4) == 0 ||
        (first && slash - c == 5 && strncmp(c, ".deps", 5) == 0))
      return true;
    c = slash + 1;
  }
}

/* Whether a new name at p would land where nothing is watched, once the
 * symlinks on the way to its directory are followed: link() follows them
 * (only the last component is not), so "ws/f0/d2/f1" lands outside when
 * f0/d2 is a symlink to the outer directory. Also true when the directory
 * does not resolve (the link would fail anyway). */
static bool lands_unwatched(const char *p) {
  static char ws_real[PATH_MAX];
  char dir[PATH_MAX];
  char dir_real[PATH_MAX];
  char where[2 * PATH_MAX];
  const char *slash = strrchr(p, '/');
  size_t wl;

  if (ws_real[0] == '\0' && realpath(ws, ws_real) == NULL)
    return true;
  if (slash == NULL || (size_t) (slash - p) >= sizeof dir)
    return true;
  memcpy(dir, p, (size_t) (slash - p));
  dir[slash - p] = '\0';
  if (realpath(dir, dir_real) == NULL)
    return true;
  (void) snprintf(where, sizeof where, "%s%s", dir_real, slash);
  /* in_unwatched() reads paths under ws: map the resolved prefix back. */
  wl = strlen(ws_real);
  if (strncmp(where, ws_real, wl) != 0 || where[wl] != '/')
    return true;
  (void) snprintf(dir, sizeof dir, "%s%s", ws, where + wl);
  return in_unwatched(dir);
}

/* One random operation; most fail harmlessly (missing parents...). */
static void rnd_op(void) {
  char p[1024];
  char q[1024];
  uint32_t op = rnd(100);

  rnd_path(p, sizeof p);
  rnd_path(q, sizeof q);
  if (trace)
    printf("    op %u %s %s\n", op, p + strlen(base), q + strlen(base));
  if (op < 20) {
    op_write(p, O_CREAT | O_TRUNC);
  } else if (op < 30) {
    op_write(p, O_APPEND);
  } else if (op < 36) {
    /* Same size, different mtime. */
    struct timespec ts[2] = {{.tv_sec = 0, .tv_nsec = UTIME_OMIT},
                             {.tv_sec = 1000000 + rnd(1000), .tv_nsec = rnd(1000)}};
    (void) utimensat(AT_FDCWD, p, ts, AT_SYMLINK_NOFOLLOW);
  } else if (op < 44) {
    (void) unlink(p);
  } else if (op < 54) {
    (void) mkdir(p, 0755);
  } else if (op < 58) {
    (void) rmdir(p);
  } else if (op < 60) {
    if (rnd(4) == 0) {
      char cmd[1100];
      /* May fail (a symlink loop on the way): fine. */
      (void) snprintf(cmd, sizeof cmd, "rm -rf '%s' 2>/dev/null", p);
      if (system(cmd) != 0)
        (void) 0;
    }
  } else if (op < 80) {
    (void) rename(p, q);
  } else if (op < 84) {
    (void) renameat2(AT_FDCWD, p, AT_FDCWD, q, RENAME_EXCHANGE);
  } else if (op < 88) {
    /* Not into a directory nobody watches, lexically or through a symlink
     * (see the limits in wstrack.h): a link made there and written through
     * is invisible to inotify. And only with a tracker to drain at once: the
     * concurrent test's writer (link_tracker NULL) drains at times set by
     * the scheduler, so a link made, written through and removed between
     * two drains (the limit in wstrack.h) would fail it by luck. Calls no
     * rnd(): the sequences of both tests stay as they were. */
    if (link_tracker != NULL && !lands_unwatched(q) && link(p, q) == 0) {
      /* The tracker learns of a link from its name; a link made, written
       * through and removed before it looks is beyond it (see wstrack.h). */
      CHECK_ERR(ks_ws_tracker_drain(link_tracker, &e), 0);
    }
  } else if (op < 91) {
    (void) symlink(rnd(2) ? outer : "d0", p);
  } else if (op < 94) {
    /* A burst of files in a fresh directory. */
    char r[1100];
    if (mkdir(p, 0755) == 0) {
      for (int i = 0; i < 5; i++) {
        (void) snprintf(r, sizeof r, "%s/b%d", p, i);
        op_write(r, O_CREAT);
      }
    }
  } else if (op < 97) {
    (void) truncate(p, rnd(4));
  } else {
    /* The file replaced by rename of a fresh temp file (how editors save). */
    char r[1100];
    (void) snprintf(r, sizeof r, "%s.tmp-swap", p);
    op_write(r, O_CREAT | O_TRUNC);
    if (rename(r, p) < 0)
      (void) unlink(r);
  }
}

struct diff_call {
  struct ks_ws_call *call;
  struct ks_ws_scan *before;
};

static bool compare_call(int root, struct ks_ws_tracker *t, struct diff_call *dc,
                         int step, uint64_t seed) {
  struct ks_ws_change *got = NULL;
  struct ks_ws_change *want = NULL;
  struct ks_ws_scan *after = NULL;
  size_t ngot = 0;
  size_t nwant = 0;
  bool same;
  int r = ks_ws_tracker_end(t, dc->call, &got, &ngot, &e);

  dc->call = NULL;
  CHECK_ERR(r, 0);
  CHECK_ERR(ks_ws_rescan_diff(root, dc->before, &after, &want, &nwant, &e), 0);
  same = r == 0 && ngot == nwant;
  for (size_t i = 0; same && i < ngot; i++)
    same = strcmp(got[i].path, want[i].path) == 0 && got[i].kind == want[i].kind &&
           got[i].size == want[i].size;
  checks++;
  if (!same) {
    char a[8192];
    char b[8192];
    failures++;
    format_changes(got, ngot, a, sizeof a);
    format_changes(want, nwant, b, sizeof b);
    fprintf(stderr,
            "FAIL differential step %d, seed %llu:\n  tracker: [%s]\n  scans:   [%s]\n",
            step, (unsigned long long) seed, a, b);
  }
  free(got);
  free(want);
  ks_ws_scan_free(after);
  ks_ws_scan_free(dc->before);
  dc->before = NULL;
  return same;
}

/* queue_len: NULL for the system's queue, or a tiny one, so that events
 * overflow all the time and every call lives through rescans. */
static void test_differential(int root, uint64_t seed, int steps, const char *queue_len) {
  struct ks_ws_tracker *t = NULL;
  struct diff_call calls[3];
  int ncalls_done = 0;
  int max_inflight = 0;
  int forced = 0;
  int bad = 0;
  struct ks_ws_tracker_stats st;

  memset(calls, 0, sizeof calls);
  rng_state = seed != 0 ? seed : 1;
  put_dir(ws, "d0");
  put_dir(ws, "d1");
  put_dir(ws, ".deps");
  put_dir(ws, ".ks-x");
  if (queue_len == NULL) {
    CHECK_ERR(ks_ws_tracker_open(root, &t, &e), 0);
    MUST(t != NULL);
  } else if (!open_small_queue(root, queue_len, &t)) {
    printf("  SKIP differential with a small queue (cannot set max_queued_events)\n");
    ks_ws_tracker_close(t);
    return;
  }
  link_tracker = t;
  for (int step = 0; step < steps && bad < 3; step++) {
    uint32_t what = rnd(100);
    int inflight = 0;

    for (int i = 0; i < 3; i++)
      inflight += calls[i].call != NULL;
    if (inflight > max_inflight)
      max_inflight = inflight;
    if (what < 8) {
      int i = (int) rnd(3);
      if (trace)
        printf("  step %d: %s call %d\n", step, calls[i].call ? "end" : "begin", i);
      if (calls[i].call == NULL) {
        CHECK_ERR(ks_ws_scan(root, &calls[i].before, &e), 0);
        CHECK_ERR(ks_ws_tracker_begin(t, &calls[i].call, &e), 0);
      } else {
        if (!compare_call(root, t, &calls[i], step, seed))
          bad++;
        ncalls_done++;
      }
    } else if (what < 10) {
      if (trace)
        printf("  step %d: drain\n", step);
      CHECK_ERR(ks_ws_tracker_drain(t, &e), 0);
    } else if (what < 11) {
      /* Rarely: every forced rescan hides what came before it. */
      if (rnd(5) == 0) {
        ks_ws_tracker_request_rescan(t);
        forced++;
      }
    } else if (what < 12) {
      if (ks_ws_tracker_verify(t, &e) != 0) {
        fprintf(stderr, "FAIL verify at step %d (seed %llu): %s %s\n", step,
                (unsigned long long) seed, e.syscall, e.path ? e.path : "");
        failures++;
        bad++;
      }
      checks++;
    } else {
      rnd_op();
    }
    if (getenv("KS_WSTRACK_DUMP_FROM") != NULL &&
        step >= atoi(getenv("KS_WSTRACK_DUMP_FROM"))) {
      char cmd[600];
      fflush(stdout);
      snprintf(cmd, sizeof cmd,
               "cd '%s' && find . -printf '      %%P %%y i%%i n%%n s%%s\\n' | sort", ws);
      if (system(cmd) != 0)
        printf("dump failed\n");
    }
    if (verify_from >= 0 && step >= verify_from) {
      int r = ks_ws_tracker_verify(t, &e);
      if (r != 0) {
        printf("  verify after step %d: %s %s\n", step, e.syscall, e.path ? e.path : "");
        break;
      }
    }
  }
  for (int i = 0; i < 3; i++) {
    if (calls[i].call != NULL) {
      compare_call(root, t, &calls[i], steps, seed);
      ncalls_done++;
    }
  }
  link_tracker = NULL;
  CHECK_ERR(ks_ws_tracker_verify(t, &e), 0);
  ks_ws_tracker_get_stats(t, &st);
  printf("  differential%s: seed %llu, %d steps, %d calls compared (up to %d in flight), "
         "%llu events, %llu rescans (%d forced), %zu files, %zu dirs at the end\n",
         queue_len != NULL ? " (tiny queue)" : "", (unsigned long long) seed, steps,
         ncalls_done, max_inflight, (unsigned long long) st.events,
         (unsigned long long) st.rescans, forced, st.files, st.dirs);
  ks_ws_tracker_close(t);
}

/* ---- a concurrent writer ------------------------------------------------------ */

static atomic_bool stop_writer;

static void *writer_main(void *arg) {
  uint64_t *state = arg;
  while (!atomic_load(&stop_writer)) {
    /* rnd() is not thread-safe: the writer has its own state. */
    uint64_t saved = rng_state;
    rng_state = *state;
    rnd_op();
    *state = rng_state;
    rng_state = saved;
  }
  return NULL;
}

/* Runs begin/end while another thread keeps changing the tree: no report
 * can be checked exactly then, but nothing may crash or leak, and once the
 * writer stops the index must agree with a full scan. */
static void test_concurrent(int root) {
  struct ks_ws_tracker *t = NULL;
  struct ks_ws_call *c = NULL;
  struct ks_ws_change *ch = NULL;
  size_t n = 0;
  pthread_t th;
  uint64_t wstate = 0x9e3779b97f4a7c15u;
  double t0 = now_ms();
  int calls = 0;

  put_dir(ws, "d0");
  put_dir(ws, "d1");
  CHECK_ERR(ks_ws_tracker_open(root, &t, &e), 0);
  MUST(t != NULL);
  atomic_store(&stop_writer, false);
  /* The writer uses the same random helpers as rnd_op; this thread does
   * not call them meanwhile. */
  MUST(pthread_create(&th, NULL, writer_main, &wstate) == 0);
  while (now_ms() - t0 < 1500) {
    CHECK_ERR(ks_ws_tracker_begin(t, &c, &e), 0);
    usleep(500);
    CHECK_ERR(ks_ws_tracker_end(t, c, &ch, &n, &e), 0);
    free(ch);
    ch = NULL;
    calls++;
  }
  atomic_store(&stop_writer, true);
  pthread_join(th, NULL);
  CHECK_ERR(ks_ws_tracker_verify(t, &e), 0);
  printf("  concurrent writer: %d calls, %llu rescans\n", calls,
         (unsigned long long) rescans(t));
  ks_ws_tracker_close(t);
}

/* ---- timing ------------------------------------------------------------------- */

#if defined(__SANITIZE_ADDRESS__)
#define KS_BUILD_KIND "ASan/UBSan"
#else
#define KS_BUILD_KIND "plain"
#endif

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *) a, y = *(const double *) b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t) n, sizeof *v, cmp_double);
  return v[n / 2];
}

/* Begin + end of calls that touch one file (rewritten in place, like a run
 * that edits one file), median of many. */
static double call_cost(struct ks_ws_tracker *t, const char *rel, int reps) {
  double v[201];
  struct ks_ws_call *c = NULL;
  struct ks_ws_change *ch = NULL;
  size_t n = 0;

  if (reps > 201)
    reps = 201;
  for (int i = 0; i < reps; i++) {
    double t0;
    double t1;
    CHECK_ERR(ks_ws_tracker_begin(t, &c, &e), 0);
    t1 = now_ms();
    if (rel != NULL)
      put_file(ws, rel, i % 2 ? "xy" : "x");
    t0 = now_ms() - t1; /* not part of the cost */
    t1 = now_ms();
    CHECK_ERR(ks_ws_tracker_end(t, c, &ch, &n, &e), 0);
    CHECK(n == (rel != NULL ? 1u : 0u));
    free(ch);
    ch = NULL;
    v[i] = now_ms() - t1;
    (void) t0;
  }
  return median(v, reps);
}

static double begin_cost(struct ks_ws_tracker *t, int reps) {
  double v[201];
  struct ks_ws_call *c = NULL;

  if (reps > 201)
    reps = 201;
  for (int i = 0; i < reps; i++) {
    double t0 = now_ms();
    CHECK_ERR(ks_ws_tracker_begin(t, &c, &e), 0);
    v[i] = now_ms() - t0;
    ks_ws_tracker_abandon(t, c);
  }
  return median(v, reps);
}

static void test_timing(void) {
  struct ks_ws_tracker *t = NULL;
  struct ks_ws_scan *scan = NULL;
  double open_ms[5];
  double empty_call;
  double empty_begin;
  double one_call;
  double one_begin;
  double scan_ms[5];
  double rescan_ms[5];
  int root = fresh_ws();

  /* Empty workspace first: the baseline of the budget. */
  CHECK_ERR(ks_ws_tracker_open(root, &t, &e), 0);
  MUST(t != NULL);
  empty_begin = begin_cost(t, 101);
  empty_call = call_cost(t, NULL, 101);
  ks_ws_tracker_close(t);

  for (int d = 0; d < 100; d++) {
    char rel[64];
    snprintf(rel, sizeof rel, "dir%03d", d);
    put_dir(ws, rel);
    for (int f = 0; f < 100; f++) {
      snprintf(rel, sizeof rel, "dir%03d/file%03d.txt", d, f);
      put_file(ws, rel, "x");
    }
  }
  CHECK_ERR(ks_ws_scan(root, &scan, &e), 0); /* warm the dentry cache */
  ks_ws_scan_free(scan);
  for (int i = 0; i < 5; i++) {
    double t0 = now_ms();
    scan = NULL;
    CHECK_ERR(ks_ws_scan(root, &scan, &e), 0);
    scan_ms[i] = now_ms() - t0;
    ks_ws_scan_free(scan);
  }
  for (int i = 0; i < 5; i++) {
    double t0 = now_ms();
    t = NULL;
    CHECK_ERR(ks_ws_tracker_open(root, &t, &e), 0);
    open_ms[i] = now_ms() - t0;
    MUST(t != NULL);
    if (i < 4)
      ks_ws_tracker_close(t);
  }
  {
    struct ks_ws_tracker_stats st;
    ks_ws_tracker_get_stats(t, &st);
    CHECK(st.files == 10000 && st.dirs == 101);
  }
  one_begin = begin_cost(t, 101);
  one_call = call_cost(t, "dir050/file050.txt", 101);
  for (int i = 0; i < 5; i++) {
    double t0 = now_ms();
    ks_ws_tracker_request_rescan(t);
    CHECK_ERR(ks_ws_tracker_drain(t, &e), 0);
    rescan_ms[i] = now_ms() - t0;
  }
  ks_ws_tracker_close(t);
  close(root);
  printf("  timing, 10,000 files in 100 directories (%s build, medians):\n"
         "    open (initial index + 101 watches): %.2f ms; one full ks_ws_scan: %.2f ms\n"
         "    begin alone: %.3f ms (empty workspace %.3f ms)\n"
         "    end of a call that rewrote 1 file: %.3f ms (empty workspace, no change: "
         "%.3f ms)\n"
         "    => per call, over the empty workspace: %.3f ms\n"
         "    a forced rescan (the fallback): %.2f ms\n",
         KS_BUILD_KIND, median(open_ms, 5), median(scan_ms, 5), one_begin, empty_begin,
         one_call, empty_call, (one_begin + one_call) - (empty_begin + empty_call),
         median(rescan_ms, 5));
}

int main(void) {
  const char *tmp = getenv("TMPDIR");
  const char *steps_env = getenv("KS_WSTRACK_STEPS");
  const char *seed_env = getenv("KS_WSTRACK_SEED");
  int steps = steps_env != NULL ? atoi(steps_env) : 4000;
  uint64_t seed = seed_env != NULL ? strtoull(seed_env, NULL, 0) : (uint64_t) time(NULL);

  trace = getenv("KS_WSTRACK_TRACE") != NULL;
  if (getenv("KS_WSTRACK_VERIFY_FROM") != NULL)
    verify_from = atoi(getenv("KS_WSTRACK_VERIFY_FROM"));
  int root;
  int fds;

  umask(022);
  snprintf(base, sizeof base, "%s/ks-wstrack-XXXXXX", tmp != NULL && *tmp ? tmp : "/tmp");
  MUST(mkdtemp(base) != NULL);
  snprintf(ws, sizeof ws, "%s/ws", base);
  snprintf(outer, sizeof outer, "%s/outer", base);
  fds = count_fds();

  if (getenv("KS_WSTRACK_ONLY_DIFF") != NULL) {
    /* For long hunts: many seeds, nothing else. */
    if (getenv("KS_WSTRACK_FALLBACK") != NULL)
      ks_compat_disable(KS_FEATURE_OPENAT2);
    root = fresh_ws();
    const char *queue = getenv("KS_WSTRACK_QUEUE");
    test_differential(root, seed, steps, queue != NULL && *queue ? queue : NULL);
    close(root);
    rm_rf(base);
    printf("%d checks, %d failures\n", checks, failures);
    return failures != 0;
  }
  for (int mode = 0; mode < 2; mode++) {
    if (mode == 1) {
      /* The per-component fallback of ks_open_beneath resolves every
       * directory the tracker opens (for good: there is no way back). */
      ks_compat_disable(KS_FEATURE_OPENAT2);
      printf("suite with the openat fallback (openat2 disabled)\n");
    } else {
      printf("suite with openat2 (where the kernel has it)\n");
    }
    root = fresh_ws();
    test_basic(root);
    close(root);
    root = fresh_ws();
    test_new_dirs(root);
    close(root);
    root = fresh_ws();
    test_renames(root);
    close(root);
    root = fresh_ws();
    test_symlink_outside(root);
    close(root);
    root = fresh_ws();
    test_symlink_race(root);
    close(root);
    root = fresh_ws();
    test_overlap(root);
    close(root);
    root = fresh_ws();
    test_hardlinks(root);
    close(root);
    root = fresh_ws();
    test_overflow(root);
    close(root);
    root = fresh_ws();
    test_drain_budget(root);
    close(root);
    root = fresh_ws();
    test_differential(root, seed + (uint64_t) mode, mode == 0 ? steps : steps / 4, NULL);
    close(root);
    if (mode == 0) {
      root = fresh_ws();
      test_differential(root, seed + 7, steps / 4, "8\n");
      close(root);
      root = fresh_ws();
      test_concurrent(root);
      close(root);
      test_timing();
    }
  }
  CHECK(count_fds() == fds);

  rm_rf(base);
  printf("%d checks, %d failures\n", checks, failures);
  return failures != 0;
}
