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
 *                                      paced call of the package does)
 *   spawn-baseline -r [-p MS] N ...    the floor of an engine that settles at
 *                                      the in-box init's report (ARGS run
 *                                      ks-init): stdin is the init's channel,
 *                                      a call ends at its REPORT frame, the
 *                                      init is released at once and kern is
 *                                      drained and reaped between calls, as
 *                                      the package's tail does. Nothing but
 *                                      posix_spawn and a read: what an engine
 *                                      that cost nothing on the host would
 *                                      measure, teardown overlap included
 *   spawn-baseline -w CMD -p MS N ...  the floor of a prewarmed call (ARGS
 *                                      run ks-init --wait): each box is
 *                                      started MS milliseconds before its
 *                                      call, which sends the SPEC frame of
 *                                      the one-word argv CMD and ends at the
 *                                      REPORT frame; the median call, in
 *                                      microseconds. What a prewarmed call
 *                                      of an engine that cost nothing on
 *                                      the host would measure */
#define _GNU_SOURCE
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../csrc/init/protocol.h"

extern char **environ;

/* -r: settle at the init's report (see above). */
static int report_mode;
/* -w: the one-word argv a prewarmed box is sent; else NULL. */
static const char *warm_cmd;

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
  int chan; /* -r: the init's channel; else -1 */
};

/* Starts one kern with the addon's fd plan; 0 on success. */
static int start(char **argv, struct child *c) {
  int out[2], st[2], chan[2] = {-1, -1};
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
  if (report_mode) {
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, chan) < 0)
      return -1;
    chan[0] = lift(chan[0]);
    chan[1] = lift(chan[1]);
  }
  posix_spawn_file_actions_init(&fa);
  if (report_mode)
    posix_spawn_file_actions_adddup2(&fa, chan[1], 0);
  else
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
  if (chan[1] >= 0)
    close(chan[1]);
  c->out = out[0];
  c->st = st[0];
  c->chan = chan[0];
  return 0;
}

/* kern processes whose call settled at the report: drained and reaped
 * between calls and at the end (a ring: one call at a time keeps few). */
#define MAX_TAILS 64
static struct child tails[MAX_TAILS];
static int ntails;

static void finish(struct child *c);

static void tails_poll(int wait) {
  char buf[65536];
  for (int i = 0; i < ntails;) {
    struct child *t = &tails[i];
    int status;
    if (!wait) {
      while (read(t->out, buf, sizeof buf) > 0) {
      }
      while (read(t->st, buf, sizeof buf) > 0) {
      }
      if (waitpid(t->pid, &status, WNOHANG) == 0) {
        i++;
        continue;
      }
      t->pid = -1;
    }
    finish(t);
    tails[i] = tails[--ntails];
  }
}

/* -w: the SPEC frame of the argv {warm_cmd}, in one write. */
static int send_spec(struct child *c) {
  char frame[sizeof(struct ks_init_frame_header) + 256];
  size_t len = strlen(warm_cmd) + 1;
  struct ks_init_frame_header h = {.magic = KS_INIT_FRAME_MAGIC, .type = KS_INIT_SPEC,
                                   .len = (uint32_t) len};
  if (len > 256)
    return -1;
  memcpy(frame, &h, sizeof h);
  memcpy(frame + sizeof h, warm_cmd, len);
  return write(c->chan, frame, sizeof h + len) == (ssize_t) (sizeof h + len) ? 0 : -1;
}

/* -r: waits for the REPORT frame (the TAKEN and STARTED before it are
 * skipped), releases the init; kern becomes a tail. */
static void settle_at_report(struct child *c) {
  char frame[sizeof(struct ks_init_frame_header) + sizeof(struct ks_init_report)];
  size_t got = 0;
  while (got < sizeof frame) {
    ssize_t n = read(c->chan, frame + got, sizeof frame - got);
    if (n <= 0)
      break; /* no init (the test double): its EOF, at the box's end */
    got += (size_t) n;
    while (got >= sizeof(struct ks_init_frame_header)) {
      struct ks_init_frame_header h;
      memcpy(&h, frame, sizeof h);
      if (h.type != KS_INIT_TAKEN && h.type != KS_INIT_STARTED)
        break;
      got -= sizeof h; /* empty: the report follows */
      memmove(frame, frame + sizeof h, got);
    }
  }
  (void) shutdown(c->chan, SHUT_WR);
  close(c->chan);
  c->chan = -1;
  if (ntails == MAX_TAILS)
    tails_poll(1);
  (void) fcntl(c->out, F_SETFL, O_NONBLOCK);
  (void) fcntl(c->st, F_SETFL, O_NONBLOCK);
  tails[ntails++] = *c;
}

/* Ends one call: at the report with -r, else at kern's exit. */
static void end_call(struct child *c) {
  if (report_mode)
    settle_at_report(c);
  else
    finish(c);
}

/* Drains both pipes to EOF and reaps the child (if not yet reaped). */
static void finish(struct child *c) {
  char buf[65536];
  int status;
  (void) fcntl(c->out, F_SETFL, 0);
  (void) fcntl(c->st, F_SETFL, 0);
  while (read(c->out, buf, sizeof buf) > 0) {
  }
  while (read(c->st, buf, sizeof buf) > 0) {
  }
  close(c->out);
  close(c->st);
  if (c->pid > 0)
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
    /* -w: the box is started before the gap and waits through it, as a
     * prewarmed one does; the call is its SPEC frame. Else the call is the
     * start. */
    if (warm_cmd == NULL)
      nanosleep(&gap, NULL);
    tails_poll(0);
    unique_name(argv, i);
    t = now_us();
    if (start(argv, &c) < 0)
      return 1;
    if (warm_cmd != NULL) {
      nanosleep(&gap, NULL);
      t = now_us();
      if (send_spec(&c) < 0)
        return 1;
    }
    end_call(&c);
    took[i] = now_us() - t;
  }
  tails_poll(1);
  qsort(took, (size_t) n, sizeof *took, by_value);
  printf("%.1f\n", n % 2 ? took[n / 2] : (took[n / 2 - 1] + took[n / 2]) / 2);
  free(took);
  return 0;
}

int main(int argc, char **argv) {
  int concurrent = argc > 1 && strcmp(argv[1], "-c") == 0;
  int n;
  double t0;

  if (argc > 1 && strcmp(argv[1], "-r") == 0) {
    report_mode = 1;
    argv++;
    argc--;
  } else if (argc > 2 && strcmp(argv[1], "-w") == 0) {
    report_mode = 1;
    warm_cmd = argv[2];
    argv += 2;
    argc -= 2;
    if (!(argc > 4 && strcmp(argv[1], "-p") == 0)) {
      fprintf(stderr, "usage: spawn-baseline -w CMD -p MS N KERN ARGS...\n");
      return 2;
    }
  }
  if (argc > 4 && strcmp(argv[1], "-p") == 0)
    return paced(argv + 4, atoi(argv[3]), atoi(argv[2]));
  if (argc < 3 + concurrent || (concurrent && report_mode)) {
    fprintf(stderr, "usage: spawn-baseline [-c | [-r] [-p MS] | -w CMD -p MS] N KERN ARGS...\n");
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
    tails_poll(0);
    unique_name(argv, i);
    if (start(argv, &c) < 0)
      return 1;
    end_call(&c);
  }
  printf("%.1f\n", (now_us() - t0) / n);
  tails_poll(1);
  return 0;
}
