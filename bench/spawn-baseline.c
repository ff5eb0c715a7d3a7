/* The baseline of the per-call overhead figure: spawn the same kern argv
 * directly from C, N times in a row, with stdout/stderr drained and the
 * started fd and env fd wired as the addon does, and print the mean wall
 * time per call in microseconds. No supervision, no JS: the floor. */
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

int main(int argc, char **argv) {
  int n;
  double t0;
  char buf[65536];

  if (argc < 3) {
    fprintf(stderr, "usage: spawn-baseline N KERN ARGS...\n");
    return 2;
  }
  n = atoi(argv[1]);
  t0 = now_us();
  for (int i = 0; i < n; i++) {
    int out[2], st[2];
    int envfd = lift(memfd_create("env", MFD_CLOEXEC));
    posix_spawn_file_actions_t fa;
    pid_t pid;
    int status;
    ssize_t r;

    if (write(envfd, "PYTHONPATH=/workspace/.deps\n", 28) != 28 || lseek(envfd, 0, SEEK_SET) != 0)
      return 1;
    if (pipe2(out, O_CLOEXEC) < 0 || pipe2(st, O_CLOEXEC) < 0)
      return 1;
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
    if (posix_spawn(&pid, argv[2], &fa, NULL, argv + 2, environ) != 0)
      return 1;
    posix_spawn_file_actions_destroy(&fa);
    close(out[1]);
    close(st[1]);
    close(envfd);
    while ((r = read(out[0], buf, sizeof buf)) > 0) {
    }
    while ((r = read(st[0], buf, sizeof buf)) > 0) {
    }
    close(out[0]);
    close(st[0]);
    waitpid(pid, &status, 0);
  }
  printf("%.1f\n", (now_us() - t0) / n);
  return 0;
}
