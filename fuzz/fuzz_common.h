/* Helpers shared by the libFuzzer targets. Harness code, not library code:
 * a violated property prints what it saw and aborts, which libFuzzer turns
 * into a crash report with the input saved as an artifact. */
#ifndef KS_FUZZ_COMMON_H
#define KS_FUZZ_COMMON_H

#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Reports a property violation (or a harness failure) and aborts. */
__attribute__((format(printf, 1, 2), noreturn)) static inline void
ks_fuzz_fail(const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "\n==ks-fuzz== PROPERTY VIOLATION: ");
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\n");
  abort();
}

#define KS_FUZZ_CHECK(cond, ...) \
  do {                           \
    if (!(cond))                 \
      ks_fuzz_fail(__VA_ARGS__); \
  } while (0)

/* "C:" at the start: a drive prefix to Windows. */
static inline bool ks_fuzz_drive_prefix(const char *p) {
  return ((p[0] >= 'a' && p[0] <= 'z') || (p[0] >= 'A' && p[0] <= 'Z')) && p[1] == ':';
}

/* Prints s (len bytes) with C escapes, for failure messages. */
static inline void ks_fuzz_dump(const char *label, const void *s, size_t len) {
  const unsigned char *p = s;
  fprintf(stderr, "%s (%zu bytes): \"", label, len);
  for (size_t i = 0; i < len && i < 600; i++) {
    if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '"' && p[i] != '\\')
      fputc(p[i], stderr);
    else
      fprintf(stderr, "\\x%02x", p[i]);
  }
  fprintf(stderr, "%s\"\n", len > 600 ? "..." : "");
}

/* The lowest free descriptor number. Compared before and after a call
 * under test, it shows a descriptor the call leaked (nothing else in a
 * fuzz target opens files between the two probes). */
static inline int ks_fuzz_lowest_free_fd(void) {
  int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    ks_fuzz_fail("harness: open /dev/null: %s", strerror(errno));
  (void) close(fd);
  return fd;
}

static inline int ks__fuzz_rm_one(const char *path, const struct stat *st, int type,
                                  struct FTW *ftw) {
  (void) st;
  (void) ftw;
  if (type == FTW_DP || type == FTW_D || type == FTW_DNR) {
    (void) chmod(path, 0700);
    return rmdir(path) < 0 ? -1 : 0;
  }
  return unlink(path) < 0 ? -1 : 0;
}

/* rm -rf without following symlinks. */
static inline void ks_fuzz_rm_rf(const char *path) {
  if (nftw(path, ks__fuzz_rm_one, 16, FTW_DEPTH | FTW_PHYS) < 0 && errno != ENOENT)
    ks_fuzz_fail("harness: cannot remove %s: %s", path, strerror(errno));
}

/* Number of entries (other than "." and "..") in the directory path. */
static inline size_t ks_fuzz_count_entries(const char *path, char *first,
                                           size_t first_size) {
  DIR *d = opendir(path);
  struct dirent *e;
  size_t n = 0;

  if (d == NULL)
    ks_fuzz_fail("harness: opendir %s: %s", path, strerror(errno));
  if (first_size > 0)
    first[0] = '\0';
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
      continue;
    if (n == 0 && first_size > 0)
      snprintf(first, first_size, "%s", e->d_name);
    n++;
  }
  (void) closedir(d);
  return n;
}

/* A directory for per-process temp trees: $KS_FUZZ_TMPDIR, else /dev/shm
 * (tmpfs keeps the restore target fast), else $TMPDIR, else /tmp. */
static inline const char *ks_fuzz_tmp_base(void) {
  const char *e = getenv("KS_FUZZ_TMPDIR");
  struct stat st;
  if (e != NULL && *e != '\0')
    return e;
  if (stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) && access("/dev/shm", W_OK) == 0)
    return "/dev/shm";
  e = getenv("TMPDIR");
  return e != NULL && *e != '\0' ? e : "/tmp";
}

/* The shape every accepted tar member path must have (A1, A2, A5, A10):
 * relative, no "", "." or ".." component, no backslash, no drive prefix,
 * components <= 255 bytes, <= 256 bytes in all, no top-level ".ks-" name. */
static inline void ks_fuzz_check_member_path(const char *path, const char *what) {
  size_t len = strlen(path);
  size_t i = 0;
  bool first = true;

  KS_FUZZ_CHECK(len > 0, "%s: empty member path accepted", what);
  KS_FUZZ_CHECK(len <= 256, "%s: path of %zu bytes accepted", what, len);
  KS_FUZZ_CHECK(path[0] != '/', "%s: absolute path \"%s\" accepted", what, path);
  KS_FUZZ_CHECK(strchr(path, '\\') == NULL, "%s: backslash in \"%s\"", what, path);
  KS_FUZZ_CHECK(!ks_fuzz_drive_prefix(path), "%s: drive prefix in \"%s\"", what, path);
  while (i <= len) {
    size_t s = i;
    while (i < len && path[i] != '/')
      i++;
    size_t cl = i - s;
    KS_FUZZ_CHECK(cl > 0, "%s: empty component in \"%s\"", what, path);
    KS_FUZZ_CHECK(!(cl == 1 && path[s] == '.'), "%s: \".\" component in \"%s\"", what,
                  path);
    KS_FUZZ_CHECK(!(cl == 2 && path[s] == '.' && path[s + 1] == '.'),
                  "%s: \"..\" component in \"%s\"", what, path);
    KS_FUZZ_CHECK(cl <= 255, "%s: component of %zu bytes in \"%s\"", what, cl, path);
    KS_FUZZ_CHECK(!(first && cl >= 4 && memcmp(path + s, ".ks-", 4) == 0),
                  "%s: private top-level name in \"%s\"", what, path);
    first = false;
    i++;
  }
}

#endif
