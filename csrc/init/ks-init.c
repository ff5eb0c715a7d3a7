/* ks-init: the box's first process, between kern and the workload.
 *
 *   ks-init [--apparmor NAME] --exec [--stdin [--tty [--keep-term]]] [--started] -- CMD...
 *                                                 start CMD now (a cold box)
 *   ks-init [--apparmor NAME] --wait              fork the workload now; it
 *                                                 execs the argv of the host's
 *                                                 spec frame when that comes
 *                                                 (a prewarmed box)
 *   ks-init [--apparmor NAME] --interp -- CMD...  start CMD now with one end of
 *                                                 the interpreter socket on
 *                                                 fd 3, and pass the host the
 *                                                 other (a Python box)
 *
 * With --stdin (--exec or --interp), the host's STDIN frame comes first on
 * the channel, with the read end of the call's stdin pipe: the workload
 * gets it on fd 0. Without it, and for a waiting box's spec without one,
 * the workload's fd 0 is /dev/null (EOF at once).
 *
 * With --tty (--exec --stdin), what the STDIN frame brought is a terminal
 * (the slave of a pty the host made, whose master it keeps): the workload
 * leads a session whose controlling terminal it is, on fds 0, 1 and 2, with
 * TERM=xterm-256color unless --keep-term (the caller set TERM itself).
 *
 * For a process's box (--exec --started, or a waiting box whose SPEC asks
 * with KS_INIT_SAY_STARTED) it says STARTED on the channel once the
 * workload's exec succeeded, and from then on takes the host's SIGNAL
 * frames while it waits for the workload (protocol.h). Other calls get
 * neither.
 *
 * It starts the workload as its child (in a session of its own), reaps
 * everything, and once the workload has exited kills and reaps whatever the
 * workload left behind: in a real box it is PID 1 of the box's PID namespace,
 * so kill(-1) reaches every process of the box; outside one (the test
 * double) it is a child subreaper and kills its descendants. Only then does
 * it report on the channel (protocol.h): every byte the box's processes
 * wrote is in the host's pipes by then, so the host can settle the call at
 * the report while kern tears the box down off the call's path. It exits
 * once the host has closed the channel (it has the result by then).
 *
 * It exits with the status kern would have reported for the workload (its
 * exit code, or 128+N for signal N), so a host that ignores the report gets
 * the same result from kern's exit status as without an init.
 *
 * Static, single-threaded, no allocation after the workload starts. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "protocol.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434 /* the same on every architecture */
#endif
#include "spec.h"

#define KS_INIT_CODE_FD 3 /* where an interpreter started with --pre reads its code */
#define KS_INIT_SETUP_FAILED 125

static volatile pid_t workload_pid = -1;

/* --tty and --keep-term (see the top). */
static bool tty_mode = false;
static bool keep_term = false;

/* In the workload's process until its exec: the write end of the started
 * pipe (close-on-exec). Every way out of that process other than a
 * successful exec writes one byte on it first (fail_start), so the init
 * reads EOF with no byte only once the exec succeeded. One byte at most:
 * the init closes its end after it, and a second write would be a
 * SIGPIPE that changes the workload's exit status. */
static int start_fd = -1;

static void fail_start(int code) {
  if (start_fd >= 0) {
    char b = 1;
    (void) write(start_fd, &b, 1);
  }
  _exit(code);
}

/* The signals whose disposition the init changes, and what they were when
 * kern started it: the workload gets exactly those back, so it starts with
 * the dispositions it would have had as the box's first process. */
static const int changed_signals[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGPIPE};
#define NCHANGED (sizeof changed_signals / sizeof changed_signals[0])
static struct sigaction inherited[NCHANGED];

/* --exec and --wait: SIGCHLD's self-pipe (nonblocking, close-on-exec), so
 * that the wait for the workload can take the host's SIGNAL frames too,
 * and SIGCHLD's disposition as kern gave it, given back to the workload. */
static int chld_pipe[2] = {-1, -1};
static struct sigaction inherited_chld;

static void on_sigchld(int sig) {
  int saved = errno;
  char b = 0;
  (void) sig;
  (void) write(chld_pipe[1], &b, 1);
  errno = saved;
}

static void forward_signal(int sig) {
  int saved = errno; /* the interrupted code may be about to read it */
  pid_t pid = workload_pid;
  if (pid > 0)
    (void) kill(pid, sig);
  errno = saved;
}

/* The workload's diagnostics for a command that cannot be executed: kern's
 * own words and exit codes (126 found but refused, 127 not found), so a
 * result reads the same with or without the init. */
static void exec_failed(const char *cmd, int errnum, const char *apparmor) {
  const char *why = strerror(errnum);
  uid_t uid = geteuid();
  if (errnum == EACCES && uid != 0) {
    dprintf(2,
            "kern: cannot start '%s' as uid %u in box: %s (os error %d)\n"
            "hint: a rootless box's rootfs is owned by the box's root uid, so a non-root --user "
            "often can't exec it - drop --user (runs as the box's root) or provide a rootfs owned "
            "by uid %u%s%s%s\n",
            cmd, (unsigned) uid, why, errnum, (unsigned) uid,
            apparmor ? "\n      (or the AppArmor profile '" : "", apparmor ? apparmor : "",
            apparmor ? "' refused the exec - is it loaded on the host?)" : "");
  } else if (errnum == EACCES && apparmor != NULL) {
    dprintf(2,
            "kern: cannot start '%s' in box: %s (os error %d)\n"
            "hint: the AppArmor profile '%s' would not admit the exec - is it loaded on the "
            "host? (`apparmor_parser -r <profile>` loads it; `-R` removes it)\n",
            cmd, why, errnum, apparmor);
  } else {
    dprintf(2,
            "kern: cannot start '%s' in box: %s (os error %d)\n"
            "hint: the command must exist inside the box (try a full path like /bin/sh) and, if "
            "dynamically linked, its libraries/loader must be present in the rootfs\n",
            cmd, why, errnum);
  }
  fail_start(errnum == EACCES ? 126 : 127);
}

/* In the workload's process, before its exec: the signal dispositions kern
 * gave the init, code_fd on fd 3 if given. As PID 1 of the box the init
 * gives it a session of its own (so its `kill 0` stays within it): the
 * namespace ends everything at the end. Outside one (the test double) it
 * stays in kern's process group, which the host kills at a deadline, and
 * dies with the init. */
/* --tty: a step of the terminal's set-up failed, in the workload's
 * process: said on its stderr (kern's, or the terminal once it is fd 2). */
static void terminal_failed(const char *what) {
  dprintf(2, "kern: sandbox setup failed: ks-init: terminal: %s: %s\n", what, strerror(errno));
  fail_start(KS_INIT_SETUP_FAILED);
}

/* TERM=xterm-256color in the environment the workload's exec gets, in the
 * place of the one kern set (or added). */
static void put_term(void) {
  static char term[] = "TERM=xterm-256color";
  size_t n = 0;
  char **env;

  for (char **e = environ; e != NULL && *e != NULL; e++, n++) {
    if (memcmp(*e, "TERM=", 5) == 0) {
      *e = term;
      return;
    }
  }
  env = malloc((n + 2) * sizeof *env);
  if (env == NULL)
    terminal_failed("TERM");
  if (n > 0)
    memcpy(env, environ, n * sizeof *env);
  env[n] = term;
  env[n + 1] = NULL;
  environ = env;
}

/* --tty, in the workload's process: the terminal fd becomes the controlling
 * terminal of a session the workload leads (as PID 1's child it has one
 * already; outside a PID namespace it makes one, and its PDEATHSIG still
 * ties it to the init), and its stdin, stdout and stderr. */
static void take_terminal(int fd, bool pid1) {
  if (!pid1 && setsid() < 0)
    terminal_failed("setsid");
  if (ioctl(fd, TIOCSCTTY, 0L) < 0)
    terminal_failed("TIOCSCTTY");
  for (int i = 0; i < 3; i++) {
    if (dup2(fd, i) < 0)
      terminal_failed("dup2");
  }
  if (!keep_term)
    put_term();
}

static void prepare_workload(int code_fd, int stdin_fd, pid_t parent, bool pid1) {
  for (size_t i = 0; i < NCHANGED; i++)
    (void) sigaction(changed_signals[i], &inherited[i], NULL);
  if (chld_pipe[1] >= 0)
    (void) sigaction(SIGCHLD, &inherited_chld, NULL);
  if (pid1) {
    (void) setsid();
  } else if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent) {
    fail_start(KS_INIT_SETUP_FAILED);
  }
  /* dup2 onto itself would keep close-on-exec: clear it instead. */
  if (code_fd == KS_INIT_CODE_FD ? fcntl(code_fd, F_SETFD, 0) < 0
      : code_fd >= 0 && dup2(code_fd, KS_INIT_CODE_FD) < 0)
    fail_start(KS_INIT_SETUP_FAILED);
  /* The stdin pipe (>= 10, close-on-exec) replaces /dev/null, or the
   * terminal all three. */
  if (stdin_fd >= 0 && tty_mode)
    take_terminal(stdin_fd, pid1);
  else if (stdin_fd >= 0 && dup2(stdin_fd, 0) < 0)
    fail_start(KS_INIT_SETUP_FAILED);
}

static void exec_workload(char **argv, const char *apparmor) {
  execvp(argv[0], argv);
  exec_failed(argv[0], errno, apparmor);
}

/* Forks the workload and starts cmd in it now; started (>= 0): the write
 * end of the started pipe, the child's until its exec. */
static pid_t start_workload(char **argv, int code_fd, int stdin_fd, const char *apparmor,
                            bool pid1, int started) {
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid != 0)
    return pid;
  start_fd = started;
  prepare_workload(code_fd, stdin_fd, parent, pid1);
  exec_workload(argv, apparmor);
  return -1;
}

/* All of len bytes read (writing false) or written, across short transfers
 * and EINTR; false at EOF or on an error. */
static bool transfer_full(int fd, void *buf, size_t len, bool writing) {
  char *p = buf;
  while (len > 0) {
    ssize_t n = writing ? write(fd, p, len) : read(fd, p, len);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    p += n;
    len -= (size_t) n;
  }
  return true;
}

#define write_full(fd, buf, len) transfer_full((fd), (void *) (buf), (len), true)

/* One frame to the host, with fd (>= 0) as SCM_RIGHTS on its first byte.
 * Frames are at most a few dozen bytes, sent one at a time into a buffer
 * the host drains: a short write only happens to a host that is gone, and
 * then kern's exit tells the rest. */
static void send_frame(int ch, uint32_t type, const void *body, uint32_t len, const int *fds,
                       int nfds) {
  char frame[sizeof(struct ks_init_frame_header) + sizeof(struct ks_init_report)];
  struct ks_init_frame_header h = {.magic = KS_INIT_FRAME_MAGIC, .type = type, .len = len};
  union {
    struct cmsghdr align;
    char buf[CMSG_SPACE(2 * sizeof(int))];
  } control;
  struct iovec iov;
  struct msghdr msg;
  size_t total = sizeof h + len;
  ssize_t n;

  if (ch < 0 || total > sizeof frame || nfds < 0 || nfds > 2)
    return;
  memcpy(frame, &h, sizeof h);
  if (len > 0)
    memcpy(frame + sizeof h, body, len);
  iov.iov_base = frame;
  iov.iov_len = total;
  memset(&msg, 0, sizeof msg);
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (nfds > 0) {
    struct cmsghdr *c;
    memset(&control, 0, sizeof control);
    msg.msg_control = control.buf;
    msg.msg_controllen = CMSG_SPACE((size_t) nfds * sizeof(int));
    c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN((size_t) nfds * sizeof(int));
    memcpy(CMSG_DATA(c), fds, (size_t) nfds * sizeof(int));
  }
  do
    n = sendmsg(ch, &msg, MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  if (n > 0 && (size_t) n < total)
    (void) write_full(ch, frame + n, total - (size_t) n);
}

/* A prewarmed box's workload, forked while the box waits for its call, so
 * that the fork and the child's setup are off the call's path: the child
 * reads the host's spec itself, marks *taken (a page it shares with the
 * init), says TAKEN and execs the spec's argv. A child that ends without
 * marking it never ran anything: the host recycled the box (EOF) or sent
 * something malformed. The channel is close-on-exec, so the workload never
 * has it. */
static pid_t start_waiting_workload(int ch, const char *apparmor, bool pid1,
                                    volatile uint32_t *taken, int started) {
  pid_t parent = getpid();
  pid_t pid = fork();
  char *body = NULL;
  size_t len = 0;
  char **spec_argv = NULL;
  int stdin_fd = -1;
  uint32_t flags = KS_INIT_SAY_STARTED;

  if (pid != 0)
    return pid;
  start_fd = started;
  prepare_workload(-1, -1, parent, pid1);
  if (ch < 0 ||
      ks_init_recv_frame(ch, KS_INIT_SPEC, KS_INIT_SPEC_MAX, &body, &len, &stdin_fd, &flags) < 0 ||
      ks_init_split_argv(body, len, &spec_argv) < 1)
    fail_start(0);
  /* The call's stdin, when its spec brought one: on fd 0, in the place of
   * /dev/null (the received descriptor is close-on-exec). */
  if (stdin_fd >= 0 && (stdin_fd == 0 || dup2(stdin_fd, 0) < 0))
    fail_start(0);
  /* 2: a process's call, which the init says STARTED for (protocol.h). */
  *taken = (flags & KS_INIT_SAY_STARTED) ? 2 : 1;
  send_frame(ch, KS_INIT_TAKEN, NULL, 0, NULL, 0);
  exec_workload(spec_argv, apparmor);
  return -1;
}

/* Outside a PID namespace of its own: SIGKILLs every child it has (its
 * orphaned descendants are reparented to it, a child subreaper) and each
 * child's process group. Returns how many it found. */
static int kill_children(void) {
  char path[64];
  char buf[4096];
  int found = 0;
  int fd;
  ssize_t n;

  snprintf(path, sizeof path, "/proc/self/task/%d/children", (int) getpid());
  fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return 0;
  n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0)
    return 0;
  buf[n] = '\0';
  for (char *p = buf; *p != '\0';) {
    char *end;
    long pid = strtol(p, &end, 10);
    if (end == p)
      break;
    if (pid > 1) {
      (void) kill((pid_t) -pid, SIGKILL);
      (void) kill((pid_t) pid, SIGKILL);
      found++;
    }
    p = end;
  }
  return found;
}

/* Everything the workload left: killed and reaped. */
static void kill_leftovers(bool pid1) {
  int status;
  for (;;) {
    if (pid1)
      (void) kill(-1, SIGKILL); /* every process of the namespace but us */
    else
      (void) kill_children();
    pid_t r = waitpid(-1, &status, 0);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      return; /* ECHILD: none left */
  }
}

/* After the report: waits for the host to close the channel (at most
 * KS_INIT_RELEASE_MAX_MS). Our exit starts kern's teardown of the box (its
 * namespaces and mounts, with an expedited RCU grace period that interrupts
 * every CPU), which would otherwise run while the host hands the result to
 * its caller. */
static void await_release(int ch) {
  struct pollfd p = {.fd = ch, .events = POLLIN};
  char buf[64];

  while (ch >= 0 && poll(&p, 1, KS_INIT_RELEASE_MAX_MS) > 0) {
    if (read(ch, buf, sizeof buf) <= 0)
      return; /* EOF: released (or an error: nothing more to wait for) */
  }
}

/* The init's end of the started pipe: blocks until the workload's process
 * execs (EOF, no byte: true) or leaves without an exec (a byte, false).
 * The wait is the workload's start, or for a waiting box its wait for a
 * call: nothing else runs in the box before either, so nothing needs
 * reaping meanwhile. A signal forwarded to a child that has not exec'd yet
 * kills it with no byte written: a false "started" that only a host
 * already ending the box can cause, and the report follows it. */
static bool await_exec(int rd) {
  char b;
  ssize_t n;

  do
    n = read(rd, &b, 1);
  while (n < 0 && errno == EINTR);
  close(rd);
  return n == 0;
}

/* A SIGNAL frame from the host, readable on ch: sent on to the workload's
 * process group (its session) in a box, to the workload alone outside one
 * (its group there is kern's). False when the channel ended or brought
 * anything else: the init stops listening. Frames are 20 bytes, sent whole
 * by the host, so the reads do not wait on a partial one. */
static bool take_signal(int ch, pid_t pid, bool pid1) {
  char frame[sizeof(struct ks_init_frame_header) + sizeof(struct ks_init_signal)];
  struct ks_init_frame_header h;
  int sig;

  if (!transfer_full(ch, frame, sizeof h, false))
    return false;
  memcpy(&h, frame, sizeof h);
  if (h.magic != KS_INIT_FRAME_MAGIC || h.type != KS_INIT_SIGNAL ||
      h.len != sizeof(struct ks_init_signal) ||
      !transfer_full(ch, frame + sizeof h, h.len, false))
    return false;
  sig = ks_init_parse_signal(frame, sizeof frame);
  if (sig < 0)
    return false;
  (void) kill(pid1 ? -pid : pid, sig);
  return true;
}

/* Waits for the workload's end, reaping whatever else ends meanwhile, and
 * returns its status. With listen, the host's SIGNAL frames are taken
 * meanwhile: a SIGCHLD wakes the poll through its self-pipe (written by
 * the handler, so one that comes between the waitpid and the poll is not
 * lost). */
static int wait_workload(int ch, pid_t pid, bool listen, bool pid1) {
  int status = 0;

  for (;;) {
    pid_t r = waitpid(-1, &status, listen ? WNOHANG : 0);
    if (r == pid)
      return status;
    if (r > 0 || (r < 0 && errno == EINTR))
      continue;
    if (r < 0)
      return 0; /* cannot happen: the workload is our child */
    {
      struct pollfd p[2] = {{.fd = chld_pipe[0], .events = POLLIN}, {.fd = ch, .events = POLLIN}};
      char buf[64];
      if (poll(p, 2, -1) < 0)
        continue;
      if (p[0].revents & POLLIN)
        (void) read(chld_pipe[0], buf, sizeof buf);
      if ((p[1].revents & (POLLIN | POLLHUP | POLLERR)) && !take_signal(ch, pid, pid1))
        listen = false;
    }
  }
}

static void usage(void) {
  dprintf(2, "ks-init: usage: ks-init [--apparmor NAME] (--exec [--stdin [--tty [--keep-term]]] "
             "[--started] -- CMD... | --wait | "
             "--interp [--stdin] -- CMD...)\n");
  _exit(KS_INIT_SETUP_FAILED);
}

static void setup_failed(const char *what) {
  dprintf(2, "kern: sandbox setup failed: ks-init: %s: %s\n", what, strerror(errno));
  _exit(KS_INIT_SETUP_FAILED);
}

/* --exec (cmd) or --wait (no cmd): forks the workload, the write end of a
 * new started pipe its until the exec (close-on-exec), and gives the init
 * the read end (*started_rd) and, waiting, the page its child marks when it
 * takes a spec (*taken). */
static pid_t start_plain(char **cmd, int ch, int stdin_fd, const char *apparmor, bool pid1,
                         volatile uint32_t **taken, int *started_rd) {
  int started[2];
  pid_t pid;

  if (pipe2(started, O_CLOEXEC) < 0)
    setup_failed("pipe2");
  if (ch >= 0 && pipe2(chld_pipe, O_CLOEXEC | O_NONBLOCK) == 0) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigchld;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    if (sigaction(SIGCHLD, &sa, &inherited_chld) < 0) {
      close(chld_pipe[0]);
      close(chld_pipe[1]);
      chld_pipe[0] = chld_pipe[1] = -1;
    }
  }
  if (cmd == NULL) {
    *taken = mmap(NULL, sizeof **taken, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (*taken == MAP_FAILED)
      setup_failed("mmap");
    pid = start_waiting_workload(ch, apparmor, pid1, *taken, started[1]);
  } else {
    pid = start_workload(cmd, -1, stdin_fd, apparmor, pid1, started[1]);
  }
  close(started[1]);
  *started_rd = started[0];
  return pid;
}

/* --stdin: the host's STDIN frame, first on the channel, and the pipe it
 * carries, moved to a close-on-exec descriptor >= 10 (the workload gets it
 * on fd 0 in prepare_workload). */
static int take_stdin(int ch) {
  char *body = NULL;
  size_t len = 0;
  int fd = -1;
  int moved;

  if (ks_init_recv_frame(ch, KS_INIT_STDIN, 0, &body, &len, &fd, NULL) < 0 || fd < 0) {
    dprintf(2, "kern: sandbox setup failed: ks-init: no stdin frame on the channel\n");
    _exit(KS_INIT_SETUP_FAILED);
  }
  moved = fcntl(fd, F_DUPFD_CLOEXEC, 10);
  if (moved < 0)
    setup_failed("stdin");
  close(fd);
  free(body);
  return moved;
}

/* kern's backstop and a host's SIGTERM reach the workload, as they did
 * when it was the box's first process; a host gone mid-report is not our
 * death (SIGPIPE, the last). The mask is left as kern set it. */
static void install_forwarding(void) {
  struct sigaction fwd;

  memset(&fwd, 0, sizeof fwd);
  fwd.sa_handler = forward_signal;
  sigemptyset(&fwd.sa_mask);
  fwd.sa_flags = SA_RESTART;
  for (size_t i = 0; i < NCHANGED; i++) {
    struct sigaction ign;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    (void) sigaction(changed_signals[i], changed_signals[i] == SIGPIPE ? &ign : &fwd,
                     &inherited[i]);
  }
}

/* The workload's end and rusage as a REPORT body. */
static void fill_report(struct ks_init_report *rep, int status) {
  struct rusage ru;
  memset(rep, 0, sizeof *rep);
  memset(&ru, 0, sizeof ru);
  (void) getrusage(RUSAGE_CHILDREN, &ru);
  if (WIFSIGNALED(status)) {
    rep->end = KS_INIT_SIGNALED;
    rep->value = WTERMSIG(status);
    rep->flags = WCOREDUMP(status) ? KS_INIT_CORE_DUMPED : 0;
  } else {
    rep->end = KS_INIT_EXITED;
    rep->value = WEXITSTATUS(status);
  }
  rep->utime_us = (uint64_t) ru.ru_utime.tv_sec * 1000000u + (uint64_t) ru.ru_utime.tv_usec;
  rep->stime_us = (uint64_t) ru.ru_stime.tv_sec * 1000000u + (uint64_t) ru.ru_stime.tv_usec;
  rep->maxrss_kb = (uint64_t) ru.ru_maxrss;
}

int main(int argc, char **argv) {
  const char *apparmor = NULL;
  bool exec_now = false, wait_spec = false, interp = false, want_stdin = false;
  int stdin_fd = -1; /* --stdin: the pipe the STDIN frame brought, >= 10 */
  char **cmd = NULL;
  int ch = -1;
  int sp[2] = {-1, -1};
  int started_rd = -1; /* --exec, --wait: the init's end of the started pipe */
  struct stat st;
  struct ks_init_report rep;
  int status = 0;
  pid_t pid = -1;
  volatile uint32_t *taken = NULL; /* a prewarmed box's: its child took the spec */
  bool pid1 = getpid() == 1;
  bool listen = false; /* the host's SIGNAL frames are taken while the workload runs */
  bool say_started = false; /* --started: a process's cold box (protocol.h, STARTED) */

  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--apparmor") == 0 && i + 1 < argc)
      apparmor = argv[++i];
    else if (strcmp(argv[i], "--exec") == 0)
      exec_now = true;
    else if (strcmp(argv[i], "--wait") == 0)
      wait_spec = true;
    else if (strcmp(argv[i], "--interp") == 0)
      interp = true;
    else if (strcmp(argv[i], "--stdin") == 0)
      want_stdin = true;
    else if (strcmp(argv[i], "--started") == 0)
      say_started = true;
    else if (strcmp(argv[i], "--tty") == 0)
      tty_mode = true;
    else if (strcmp(argv[i], "--keep-term") == 0)
      keep_term = true;
    else if (strcmp(argv[i], "--") == 0 && i + 1 < argc) {
      cmd = argv + i + 1;
      break;
    } else
      usage();
  }
  if (exec_now + wait_spec + interp != 1 || (wait_spec == (cmd != NULL)) ||
      (want_stdin && wait_spec) || (say_started && !exec_now) ||
      (tty_mode && !(exec_now && want_stdin)) || (keep_term && !tty_mode))
    usage();

  /* The channel leaves fd 0 before anything else can inherit it. */
  if (fstat(0, &st) == 0 && S_ISSOCK(st.st_mode))
    ch = fcntl(0, F_DUPFD_CLOEXEC, 10);
  if ((wait_spec || interp || want_stdin) && ch < 0) {
    /* Nothing could ever reach a waiting init: say so rather than exit 0. */
    dprintf(2, "kern: sandbox setup failed: ks-init: no control channel on stdin\n");
    _exit(KS_INIT_SETUP_FAILED);
  }
  if (want_stdin)
    stdin_fd = take_stdin(ch);
  {
    int nul = open("/dev/null", O_RDWR);
    if (nul < 0 || (nul != 0 && dup2(nul, 0) < 0))
      setup_failed("/dev/null");
    if (nul != 0)
      close(nul);
  }
  /* No ptrace attach and no /proc/1/fd for the workload (same uid). */
  (void) prctl(PR_SET_DUMPABLE, 0);
  if (!pid1)
    (void) prctl(PR_SET_CHILD_SUBREAPER, 1);

  install_forwarding();

  if (interp) {
    /* Seqpacket: every record the interpreter sends arrives whole, also
     * when several processes share its end (a fork-mode kernel). */
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
      setup_failed("socketpair");
    pid = start_workload(cmd, sp[1], stdin_fd, apparmor, pid1, -1);
    close(sp[1]);
    if (pid > 0) {
      /* With a pidfd of the interpreter, when the kernel gives one: the
       * host kills it through that once it has settled the call at the
       * interpreter's final message (interp.h, KS_IP_DONE_FINAL). */
      int fds[2] = {sp[0], (int) syscall(SYS_pidfd_open, pid, 0)};
      send_frame(ch, KS_INIT_ATTACH, NULL, 0, fds, fds[1] >= 0 ? 2 : 1);
      if (fds[1] >= 0)
        close(fds[1]);
    }
    close(sp[0]);
  } else {
    pid = start_plain(cmd, ch, stdin_fd, apparmor, pid1, &taken, &started_rd);
  }
  /* Only the workload holds the stdin pipe: once its processes are gone,
   * the host's writes fail (EPIPE) rather than fill a pipe nobody reads. */
  if (stdin_fd >= 0)
    close(stdin_fd);
  if (pid < 0)
    setup_failed("fork");
  workload_pid = pid;
  if (started_rd >= 0 && await_exec(started_rd) &&
      (taken == NULL ? say_started : *taken == 2)) {
    send_frame(ch, KS_INIT_STARTED, NULL, 0, NULL, 0);
    listen = chld_pipe[0] >= 0; /* the channel is ours now (a waiting child read its spec) */
  }
  status = wait_workload(ch, pid, listen, pid1);
  workload_pid = -1;
  kill_leftovers(pid1);
  if (taken != NULL && !*taken)
    _exit(0); /* recycled unused (or a broken host): nothing ran, nothing to say */

  fill_report(&rep, status);
  send_frame(ch, KS_INIT_REPORT, &rep, sizeof rep, NULL, 0);
  await_release(ch);
  _exit(rep.end == KS_INIT_SIGNALED ? 128 + rep.value : rep.value);
}
