/* The baselines of the per-call overhead and concurrency figures: spawn the
 * same kern argv directly from C, with stdout/stderr drained and the started
 * fd and env fd wired as the addon does. No supervision, no JS: the floor.
 *
 *   spawn-baseline N KERN ARGS...      N calls in a row: mean wall time per
 *                                      call, in microseconds
 *   spawn-baseline -c N KERN ARGS...   N calls at once (spawned back to back,
 *                                      then all waited for): total wall time,
 *                                      in microseconds
 *   spawn-baseline -p MS N KERN ARGS...  N calls in a row, MS milliseconds
 *                                      apart: the median call, in microseconds
 *                                      (a paced call meets cold caches, as a
 *                                      paced call of the package does) */
#define _GNU_SOURCE
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* Moves fd above the child's fd plan (0-4), so no dup2 overwrites a source. */
static int lift(int fd) {
  int high = fcntl(fd, F_DUPFD_CLOEXEC, 10);
  close(fd);
  return high;
}

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

struct child {
  pid_t pid;
  int out;
  int st;
};

/* Starts one kern with the addon's fd plan; 0 on success. */
static int start(char **argv, struct child *c) {
  int out[2], st[2];
  int envfd = lift(memfd_create("env", MFD_CLOEXEC));
  posix_spawn_file_actions_t fa;

  if (write(envfd, "PYTHONPATH=/workspace/.deps\n", 28) != 28 || lseek(envfd, 0, SEEK_SET) != 0)
    return -1;
  if (pipe2(out, O_CLOEXEC) < 0 || pipe2(st, O_CLOEXEC) < 0)
    return -1;
  out[0] = lift(out[0]);
  out[1] = lift(out[1]);
  st[0] = lift(st[0]);
  st[1] = lift(st[1]);
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, out[1], 2);
  posix_spawn_file_actions_adddup2(&fa, st[1], 3);
  posix_spawn_file_actions_adddup2(&fa, envfd, 4);
  if (posix_spawn(&c->pid, argv[0], &fa, NULL, argv, environ) != 0)
    return -1;
  posix_spawn_file_actions_destroy(&fa);
  close(out[1]);
  close(st[1]);
  close(envfd);
  c->out = out[0];
  c->st = st[0];
  return 0;
}

/* Drains both pipes to EOF and reaps the child. */
static void finish(struct child *c) {
  char buf[65536];
  int status;
  while (read(c->out, buf, sizeof buf) > 0) {
  }
  while (read(c->st, buf, sizeof buf) > 0) {
  }
  close(c->out);
  close(c->st);
  waitpid(c->pid, &status, 0);
}

/* KS_BASELINE_UNIQUE=K: argument K (the box name) gets "-<call index>"
 * appended for every call, as the package uses a fresh name per box. */
static void unique_name(char **argv, int index) {
  static char buf[256];
  static char *base;
  const char *k = getenv("KS_BASELINE_UNIQUE");
  int pos = k != NULL ? atoi(k) : -1;
  if (pos <= 0)
    return;
  if (base == NULL)
    base = argv[pos];
  snprintf(buf, sizeof buf, "%s-%d", base, index);
  argv[pos] = buf;
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *) a, y = *(const double *) b;
  return (x > y) - (x < y);
}

/* N calls gap_ms apart: prints the median call. */
static int paced(char **argv, int n, int gap_ms) {
  double *took = calloc((size_t) n, sizeof *took);
  if (took == NULL || n <= 0)
    return 1;
  for (int i = 0; i < n; i++) {
    struct child c;
    struct timespec gap = {.tv_sec = gap_ms / 1000, .tv_nsec = (gap_ms % 1000) * 1000000L};
    double t;
    nanosleep(&gap, NULL);
    unique_name(argv, i);
    t = now_us();
    if (start(argv, &c) < 0)
      return 1;
    finish(&c);
    took[i] = now_us() - t;
  }
  qsort(took, (size_t) n, sizeof *took, by_value);
  printf("%.1f\n", n % 2 ? took[n / 2] : (took[n / 2 - 1] + took[n / 2]) / 2);
  free(took);
  return 0;
}

int main(int argc, char **argv) {
  int concurrent = argc > 1 && strcmp(argv[1], "-c") == 0;
  int n;
  double t0;

  if (argc > 4 && strcmp(argv[1], "-p") == 0)
    return paced(argv + 4, atoi(argv[3]), atoi(argv[2]));
  if (argc < 3 + concurrent) {
    fprintf(stderr, "usage: spawn-baseline [-c | -p MS] N KERN ARGS...\n");
    return 2;
  }
  n = atoi(argv[1 + concurrent]);
  argv += 2 + concurrent;
  t0 = now_us();
  if (concurrent) {
    struct child *cs = calloc((size_t) n, sizeof *cs);
    if (cs == NULL)
      return 1;
    for (int i = 0; i < n; i++) {
      unique_name(argv, i);
      if (start(argv, &cs[i]) < 0)
        return 1;
    }
    for (int i = 0; i < n; i++)
      finish(&cs[i]);
    printf("%.1f\n", now_us() - t0);
    free(cs);
    return 0;
  }
  for (int i = 0; i < n; i++) {
    struct child c;
    unique_name(argv, i);
    if (start(argv, &c) < 0)
      return 1;
    finish(&c);
  }
  printf("%.1f\n", (now_us() - t0) / n);
  return 0;
}
