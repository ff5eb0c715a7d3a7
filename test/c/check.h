/* What the plain C tests share: counting checks, failing a broken fixture
 * loudly, and making fixture files. Each test program is one translation
 * unit, so the state here is simply static. */
#ifndef KS_TEST_CHECK_H
#define KS_TEST_CHECK_H

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int failures;
static int checks;
/* The mode under test (openat2 or its fallback), printed with each failure. */
static const char *mode_name = "openat2";

#define CHECK(cond)                                                                      \
  do {                                                                                   \
    checks++;                                                                            \
    if (!(cond)) {                                                                       \
      failures++;                                                                        \
      fprintf(stderr, "FAIL [%s] %s:%d: %s\n", mode_name, __FILE__, __LINE__, #cond);    \
    }                                                                                    \
  } while (0)

/* Setup helpers abort: a broken fixture is not a finding. */
#define MUST(cond)                                                                       \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      fprintf(stderr, "setup failed %s:%d: %s: %s\n", __FILE__, __LINE__, #cond,         \
              strerror(errno));                                                          \
      abort();                                                                           \
    }                                                                                    \
  } while (0)

static inline double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static inline void put_file(const char *dir, const char *rel, const char *content) {
  char p[8192];
  int fd;
  snprintf(p, sizeof p, "%s/%s", dir, rel);
  fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  MUST(fd >= 0);
  MUST(write(fd, content, strlen(content)) == (ssize_t) strlen(content));
  close(fd);
}

static inline void put_dir(const char *dir, const char *rel) {
  char p[8192];
  snprintf(p, sizeof p, "%s/%s", dir, rel);
  MUST(mkdir(p, 0755) == 0 || errno == EEXIST);
}

/* Removes a fixture tree, even one a test left without permissions. */
static inline void rm_rf(const char *path) {
  char cmd[2 * PATH_MAX + 64];
  snprintf(cmd, sizeof cmd, "chmod -R u+rwx '%s' 2>/dev/null; rm -rf '%s'", path, path);
  if (system(cmd) != 0)
    fprintf(stderr, "warning: could not remove %s\n", path);
}

#endif
