/* Spawning and owning kern processes.
 *
 * The child is created with clone(CLONE_VM | CLONE_VFORK | CLONE_PIDFD): it
 * borrows our memory until execve, like posix_spawn, so spawning costs no page
 * table copy however large the Node heap is, and the pidfd arrives atomically
 * with the pid. The parent thread is suspended until the child has exec'd or
 * exited, which also makes the child's failure report (written to our memory)
 * safe to read once clone returns. */
#define _GNU_SOURCE
#include "proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../compat.h"
#include "../util.h"

#if defined(__SANITIZE_ADDRESS__)
#define KS__ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KS__ASAN 1
#endif
#endif
#ifdef KS__ASAN
#include <sanitizer/asan_interface.h>
#endif
#if defined(__SANITIZE_THREAD__)
#define KS__TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define KS__TSAN 1
#endif
#endif
#ifdef KS__TSAN
/* ThreadSanitizer (npm run test:tsan) intercepts clone as if it were fork:
 * in the child it resets the sanitizer's state, which CLONE_VM shares with
 * this process, and every report after the first spawn is then noise (no
 * lock orders anything any more). So under TSan the child is made by glibc's
 * own clone, runs uninstrumented code that makes raw system calls where
 * libc's would be interceptors writing shared state (see the child's system
 * calls below), and whatever it still does is not counted as the spawning
 * thread's. */
#include <dlfcn.h>
#include <sys/syscall.h>
void __tsan_ignore_thread_begin(void);
void __tsan_ignore_thread_end(void);
typedef int (*ks__clone_fn)(int (*)(void *), void *, int, void *, ...);

static ks__clone_fn ks__libc_clone(void) {
  static _Atomic(ks__clone_fn) fn;
  ks__clone_fn f = atomic_load(&fn);
  if (f == NULL) {
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    f = libc != NULL ? (ks__clone_fn) dlsym(libc, "clone") : NULL;
    if (f == NULL) {
      /* The interceptor would make every later report noise: say so loudly
       * (the TSan run fails on anything but a clean log). */
      static const char msg[] = "ThreadSanitizer: kern-sandbox found no glibc clone\n";
      (void) write(2, msg, sizeof msg - 1);
      abort();
    }
    atomic_store(&fn, f);
  }
  return f;
}
#define KS__CLONE (ks__libc_clone())
#define KS__TSAN_IGNORE_BEGIN() __tsan_ignore_thread_begin()
#define KS__TSAN_IGNORE_END() __tsan_ignore_thread_end()
/* The child's code is not instrumented either: it never returns from its
 * frames (it execs or exits), and each instrumented frame would be left on
 * the spawning thread's shadow stack, which then overflows after enough
 * spawns. Nor may it call an interceptor it does not return from (_exit):
 * that leaves the thread ignoring every access from then on. */
#if defined(__clang__)
#define KS__CHILD_FN __attribute__((disable_sanitizer_instrumentation))
#else
#define KS__CHILD_FN __attribute__((no_sanitize_thread))
#endif
#define KS__CHILD_EXIT(status) ((void) syscall(SYS_exit_group, (status)), __builtin_unreachable())
#else
#define KS__CLONE clone
#define KS__TSAN_IGNORE_BEGIN() ((void) 0)
#define KS__TSAN_IGNORE_END() ((void) 0)
#define KS__CHILD_FN
#define KS__CHILD_EXIT(status) _exit(status)
#endif

#define KS__CHILD_STACK_SIZE (64 * 1024)
#define KS__FALLBACK_FD_LIMIT 65536
#define KS__FD_SCAN_MARGIN 64

enum ks__child_step {
  KS__STEP_NONE = 0,
  KS__STEP_SETSID,
  KS__STEP_PDEATHSIG,
  KS__STEP_PARENT_GONE,
  KS__STEP_DUP,
  KS__STEP_CHDIR,
  KS__STEP_EXECVE,
};

struct ks__child {
  const struct ks_spawn_plan *plan;
  int fds[KS_SPAWN_MAX_FDS]; /* each >= plan->nfds, or already equal to its index */
  int exec_fd;               /* plan->exec_fd lifted to >= plan->nfds, or -1 */
  pid_t parent;
  int fd_limit;
  bool use_close_range;
  /* Written by the child into our memory (CLONE_VM), read after clone returns. */
  volatile int step;
  volatile int errnum;
  volatile bool close_range_failed;
};

/* Set once a child found close_range missing (Linux < 5.9): from then on the
 * parent sizes the close loop by the descriptors actually open. */
static _Atomic bool ks__close_range_missing = false;

/* -1 unknown, 0 unsupported, 1 supported */
static _Atomic int ks__clone_pidfd_support = -1;

static const char *ks__step_syscall(int step) {
  switch (step) {
  case KS__STEP_SETSID: return "setsid";
  case KS__STEP_PDEATHSIG: return "prctl";
  case KS__STEP_PARENT_GONE: return "getppid";
  case KS__STEP_DUP: return "dup2";
  case KS__STEP_CHDIR: return "chdir";
  default: return "execve";
  }
}

static KS__CHILD_FN __attribute__((noreturn)) void ks__child_fail(struct ks__child *c, int step,
                                                                  int errnum) {
  c->errnum = errnum;
  c->step = step;
  KS__CHILD_EXIT(127);
}

/* The child's system calls. It shares our memory (CLONE_VM), and under TSan
 * libc's dup2, close, fcntl and sigaction are interceptors that rewrite the
 * sanitizer's tables of this process (its descriptors, its handlers): there
 * the child makes them raw. close_range and execveat are raw in every build
 * (compat.h's wrappers are not inlined into uninstrumented code, and an
 * instrumented frame that never returns, as execveat's, stays on the spawning
 * thread's shadow stack). */
#ifdef KS__TSAN
#define KS__C_DUP2(o, n) ((int) syscall(SYS_dup3, (o), (n), 0)) /* o != n here */
#define KS__C_CLOSE(fd) ((int) syscall(SYS_close, (fd)))
#define KS__C_FCNTL(fd, cmd, arg) ((int) syscall(SYS_fcntl, (fd), (cmd), (arg)))
#else
#define KS__C_DUP2(o, n) dup2((o), (n))
#define KS__C_CLOSE(fd) close(fd)
#define KS__C_FCNTL(fd, cmd, arg) fcntl((fd), (cmd), (arg))
#endif
#define KS__C_CLOSE_RANGE(first, last) ((int) syscall(SYS_close_range, (first), (last), 0))

static KS__CHILD_FN void ks__child_default_signal(int sig) {
#ifdef KS__TSAN
  /* All zero is SIG_DFL, no flags and an empty mask in every kernel layout
   * of struct sigaction (64 bytes hold the largest); the kernel's signal set
   * is (_NSIG - 1) / 8 bytes. */
  unsigned long act[64 / sizeof(unsigned long)] = {0};
  (void) syscall(SYS_rt_sigaction, sig, act, NULL, (_NSIG - 1) / 8);
#else
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  (void) sigaction(sig, &dfl, NULL);
#endif
}

/* Runs in the child, on its own stack but in our address space: only
 * async-signal-safe calls, no allocation, no locks, no writes to our memory
 * except the failure report. */
static KS__CHILD_FN int ks__child_main(void *arg) {
  struct ks__child *c = arg;
  const struct ks_spawn_plan *plan = c->plan;
  sigset_t empty;
  int i;

  /* Node ignores SIGPIPE and installs handlers; execve keeps ignored
   * dispositions, so reset every one or `yes | head -1` hangs in the box.
   * Without CLONE_SIGHAND this changes only the child's table. */
  for (i = 1; i < NSIG; i++) {
    if (i != SIGKILL && i != SIGSTOP)
      ks__child_default_signal(i);
  }

  /* A new session: its own process group to kill as a unit, and no
   * controlling terminal to push input into (TIOCSTI). */
  if (setsid() < 0)
    ks__child_fail(c, KS__STEP_SETSID, errno);

  if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
    ks__child_fail(c, KS__STEP_PDEATHSIG, errno);
  /* The parent may have died before prctl: then nothing would ever deliver
   * the signal, so give up instead of running unsupervised. */
  if (getppid() != c->parent)
    ks__child_fail(c, KS__STEP_PARENT_GONE, ESRCH);

  for (i = 0; i < plan->nfds; i++) {
    int src = c->fds[i];
    if (src == i) {
      int flags = KS__C_FCNTL(i, F_GETFD, 0);
      if (flags < 0 || KS__C_FCNTL(i, F_SETFD, flags & ~FD_CLOEXEC) < 0)
        ks__child_fail(c, KS__STEP_DUP, errno);
    } else if (KS__C_DUP2(src, i) < 0) {
      ks__child_fail(c, KS__STEP_DUP, errno);
    }
  }

  /* Descriptors other threads of the host opened without O_CLOEXEC must not
   * reach kern or the box. The held kern file stays until execveat, which
   * closes it (close-on-exec). */
  if (c->exec_fd < 0) {
    if (!c->use_close_range || KS__C_CLOSE_RANGE((unsigned) plan->nfds, ~0U) < 0) {
      c->close_range_failed = c->use_close_range;
      for (i = plan->nfds; i < c->fd_limit; i++)
        (void) KS__C_CLOSE(i);
    }
  } else if (!c->use_close_range ||
             (c->exec_fd > plan->nfds &&
              KS__C_CLOSE_RANGE((unsigned) plan->nfds, (unsigned) c->exec_fd - 1) < 0) ||
             KS__C_CLOSE_RANGE((unsigned) c->exec_fd + 1, ~0U) < 0) {
    c->close_range_failed = c->use_close_range;
    for (i = plan->nfds; i < c->fd_limit; i++) {
      if (i != c->exec_fd)
        (void) KS__C_CLOSE(i);
    }
  }

  /* A deliberate working directory: never whatever the host process happened
   * to be in (a workspace a box can write, or a directory fd leaked in). */
  if (plan->cwd != NULL && chdir(plan->cwd) < 0)
    ks__child_fail(c, KS__STEP_CHDIR, errno);

  sigemptyset(&empty);
  (void) sigprocmask(SIG_SETMASK, &empty, NULL);
  /* The file the session resolved and checked, not whatever the path names
   * now: a kern renamed over after the lookup never runs (A36). */
  if (c->exec_fd >= 0)
    (void) syscall(SYS_execveat, c->exec_fd, "", plan->argv, plan->envp, AT_EMPTY_PATH);
  else
    execve(plan->path, plan->argv, plan->envp);
  ks__child_fail(c, KS__STEP_EXECVE, errno);
}

/* Where the child's close loop stops, used only when close_range is
 * missing or fails: the soft limit, capped for the first spawn (Node raises
 * it to the hard limit, often 1,048,576, and a loop that long would cost more
 * than the box); once close_range is known missing, one past the highest
 * descriptor open now, with a margin for ones other threads open meanwhile.
 * A descriptor opened without O_CLOEXEC above all of those, in the moment
 * between this scan and the clone, is the only one this misses. */
static int ks__fd_limit(bool scan) {
  struct rlimit rl;
  int limit = KS__FALLBACK_FD_LIMIT;
  DIR *d;
  int dfd;

  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
      rl.rlim_cur <= KS__FALLBACK_FD_LIMIT)
    limit = (int) rl.rlim_cur;
  if (!scan)
    return limit;
  dfd = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0)
    return limit;
  d = fdopendir(dfd);
  if (d == NULL) {
    ks_close_keep_errno(dfd);
    return limit;
  }
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    char *end;
    long fd = strtol(e->d_name, &end, 10);
    if (*end == '\0' && end != e->d_name && fd >= limit - KS__FD_SCAN_MARGIN &&
        fd < INT_MAX - KS__FD_SCAN_MARGIN)
      limit = (int) fd + 1 + KS__FD_SCAN_MARGIN;
  }
  (void) closedir(d);
  return limit;
}

/* The child's stack, one per spawning thread, kept for the thread's life.
 * CLONE_VFORK returns only once the child has exec'd or exited, so the
 * stack is free again by then. Mapping and unmapping it per spawn (as
 * posix_spawn does) costs a TLB shootdown across all of Node's threads at
 * every munmap, which a VM pays in inter-processor interrupts. */
static pthread_key_t ks__stack_key;
static pthread_once_t ks__stack_once = PTHREAD_ONCE_INIT;

/* Under ASan: the child never returns from its frames (it execs or
 * _exits), so their redzones stay poisoned in the shadow of a stack ASan
 * knows nothing of. Left so, they would be reported against the next child's
 * frames, or against whatever the process maps there once the stack is
 * unmapped (V8's heap did: a "stack-buffer-underflow" in the scavenger). */
static void ks__stack_unpoison(void *stack) {
#ifdef KS__ASAN
  ASAN_UNPOISON_MEMORY_REGION(stack, KS__CHILD_STACK_SIZE);
#else
  (void) stack;
#endif
}

static void ks__stack_release(void *stack) {
  ks__stack_unpoison(stack);
  (void) munmap(stack, KS__CHILD_STACK_SIZE);
}

static void ks__stack_key_init(void) {
  if (pthread_key_create(&ks__stack_key, ks__stack_release) != 0)
    ks__stack_key = (pthread_key_t) -1;
}

static void *ks__child_stack(void) {
  void *stack;
  (void) pthread_once(&ks__stack_once, ks__stack_key_init);
  if (ks__stack_key != (pthread_key_t) -1 &&
      (stack = pthread_getspecific(ks__stack_key)) != NULL)
    return stack;
  stack = mmap(NULL, KS__CHILD_STACK_SIZE, PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED)
    return NULL;
  if (ks__stack_key == (pthread_key_t) -1 || pthread_setspecific(ks__stack_key, stack) != 0) {
    (void) munmap(stack, KS__CHILD_STACK_SIZE);
    errno = ENOMEM;
    return NULL;
  }
  return stack;
}

/* One clone attempt. Returns the pid, or -1 with errno set. */
static pid_t ks__clone(struct ks__child *c, bool with_pidfd, int *ret_pidfd) {
  sigset_t all;
  sigset_t old;
  void *stack;
  pid_t pid;
  int saved;
  /* SIGCHLD as the exit signal, like fork: exec resets any other choice to
   * SIGCHLD anyway (de_thread), so a quieter exit signal is not available to
   * a child that execs. */
  int flags = CLONE_VM | CLONE_VFORK | SIGCHLD;

  if (with_pidfd)
    flags |= CLONE_PIDFD;
  stack = ks__child_stack();
  if (stack == NULL)
    return -1;
  /* No handler of ours may run in the child while it shares our memory. */
  sigfillset(&all);
  (void) pthread_sigmask(SIG_SETMASK, &all, &old);
  KS__TSAN_IGNORE_BEGIN();
  pid = KS__CLONE(ks__child_main, (char *) stack + KS__CHILD_STACK_SIZE, flags, c, ret_pidfd);
  saved = errno;
  KS__TSAN_IGNORE_END();
  ks__stack_unpoison(stack); /* CLONE_VFORK: the child is done with it */
  (void) pthread_sigmask(SIG_SETMASK, &old, NULL);
  errno = saved;
  return pid;
}

/* -1 unknown, 0 unsupported (Linux < 5.4), 1 supported */
static _Atomic int ks__waitid_pidfd_support = -1;

/* A wait(2) status from what waitid reported. */
static int ks__wait_status(const siginfo_t *si) {
  switch (si->si_code) {
  case CLD_EXITED: return (si->si_status & 0xff) << 8;
  case CLD_DUMPED: return (si->si_status & 0x7f) | 0x80;
  default: return si->si_status & 0x7f; /* CLD_KILLED */
  }
}

/* Waits for the child (WNOHANG or not in options) through its pidfd, never
 * by number where the kernel allows: after a foreign waitpid(-1) in the host
 * has reaped kern, its number may already belong to another child of this
 * process (one of Node's), whose status a wait by number would steal, or on
 * which it would block. Through the pidfd that case is a plain ECHILD.
 * Returns the pid (status in *ret_status), 0 (WNOHANG, still running) or -1
 * with errno. */
static pid_t ks__wait(const struct ks_proc *p, int options, int *ret_status,
                      struct rusage *ret_usage) {
  siginfo_t si;
  int r;

  if (p->pidfd >= 0 && atomic_load(&ks__waitid_pidfd_support) != 0) {
    memset(&si, 0, sizeof si);
    do {
      r = ks_sys_waitid(P_PIDFD, p->pidfd, &si, options | WEXITED | __WALL, ret_usage);
    } while (r < 0 && errno == EINTR);
    if (r == 0) {
      atomic_store(&ks__waitid_pidfd_support, 1);
      if (si.si_pid == 0)
        return 0; /* WNOHANG: not exited yet */
      *ret_status = ks__wait_status(&si);
      return si.si_pid;
    }
    if (errno != EINVAL || atomic_load(&ks__waitid_pidfd_support) == 1)
      return -1;
    /* Linux 5.3 has pidfds but not P_PIDFD: by number, as the only way. */
    atomic_store(&ks__waitid_pidfd_support, 0);
  }
  do {
    r = wait4(p->pid, ret_status, options | __WALL, ret_usage);
  } while (r < 0 && errno == EINTR);
  return r;
}

int ks_proc_spawn(const struct ks_spawn_plan *plan, struct ks_proc *ret_proc,
                  struct ks_err *err) {
  struct ks__child c;
  int low_dups[KS_SPAWN_MAX_FDS];
  _cleanup_close_ int exec_dup = -1;
  int pidfd = -1;
  int support;
  pid_t pid;
  int ret = 0;
  int i;

  *ret_proc = (struct ks_proc) KS_PROC_INIT;
  if (plan->nfds < 3 || plan->nfds > KS_SPAWN_MAX_FDS)
    return ks_err_set(err, EINVAL, "spawn", plan->path);

  memset(&c, 0, sizeof c);
  c.plan = plan;
  c.parent = getpid();
  c.use_close_range =
      !ks_compat_disabled(KS_FEATURE_CLOSE_RANGE) && !atomic_load(&ks__close_range_missing);
  c.fd_limit = ks__fd_limit(!c.use_close_range);
  for (i = 0; i < KS_SPAWN_MAX_FDS; i++)
    low_dups[i] = -1;

  /* The child installs fds[i] as fd i in index order; a source below nfds
   * (other than i itself) could be overwritten before it is copied, so
   * lift such sources out of the way first. */
  for (i = 0; i < plan->nfds; i++) {
    int src = plan->fds[i];
    if (src < 0) {
      ret = ks_err_set(err, EBADF, "spawn", plan->path);
      goto out;
    }
    if (src != i && src < plan->nfds) {
      low_dups[i] = fcntl(src, F_DUPFD_CLOEXEC, plan->nfds);
      if (low_dups[i] < 0) {
        ret = ks_err_set(err, errno, "fcntl", NULL);
        goto out;
      }
      src = low_dups[i];
    }
    c.fds[i] = src;
  }

  /* The held kern file must survive the dup2s onto 0..nfds-1. */
  c.exec_fd = -1;
  if (plan->exec_fd > 2) {
    c.exec_fd = plan->exec_fd;
    if (c.exec_fd < plan->nfds) {
      exec_dup = fcntl(c.exec_fd, F_DUPFD_CLOEXEC, plan->nfds);
      if (exec_dup < 0) {
        ret = ks_err_set(err, errno, "fcntl", NULL);
        goto out;
      }
      c.exec_fd = exec_dup;
    }
  }

  support = atomic_load(&ks__clone_pidfd_support);
  if (ks_compat_disabled(KS_FEATURE_CLONE_PIDFD))
    support = 0;
  pid = ks__clone(&c, support != 0, &pidfd);
  if (pid < 0 && support != 0 && errno == EINVAL) {
    /* Kernels before 5.2 refuse CLONE_PIDFD; delete once 5.3 is the floor. */
    atomic_store(&ks__clone_pidfd_support, 0);
    pid = ks__clone(&c, false, &pidfd);
  } else if (pid > 0 && support < 0) {
    atomic_store(&ks__clone_pidfd_support, 1);
  }
  if (pid < 0) {
    ret = ks_err_set(err, errno, "clone", plan->path);
    goto out;
  }
  if (c.close_range_failed)
    atomic_store(&ks__close_range_missing, true);

  if (c.step != KS__STEP_NONE) {
    /* CLONE_VFORK returned, so the child has already _exit'ed: reap it now
     * so that a failed spawn leaves no zombie. */
    struct ks_proc failed = {.pid = pid, .pidfd = pidfd, .reaped = false};
    int status;
    (void) ks__wait(&failed, 0, &status, NULL);
    ks_close_keep_errno(pidfd);
    ret = ks_err_set(err, c.errnum, ks__step_syscall(c.step), plan->path);
    goto out;
  }

  if (pidfd < 0) {
    /* Race-free: the child is unreaped, so its pid cannot have been reused. */
    pidfd = ks_sys_pidfd_open(pid, 0);
    if (pidfd < 0) {
      int saved = errno;
      int status;
      (void) kill(pid, SIGKILL);
      while (waitpid(pid, &status, __WALL) < 0 && errno == EINTR) {
      }
      ret = ks_err_set(err, saved, "pidfd_open", plan->path);
      goto out;
    }
  }

  ret_proc->pid = pid;
  ret_proc->pidfd = pidfd;
  ret_proc->reaped = false;

out:
  for (i = 0; i < KS_SPAWN_MAX_FDS; i++)
    ks_close_keep_errno(low_dups[i]);
  return ret;
}

int ks_proc_signal(struct ks_proc *p, int sig) {
  if (p->reaped)
    return 0;
  if (p->pidfd >= 0) {
    if (ks_sys_pidfd_send_signal(p->pidfd, sig, 0) == 0 || errno == ESRCH)
      return 0;
    if (errno != ENOSYS)
      return -errno;
  }
  /* No pidfd_send_signal (Linux < 5.1): the pid is still ours because the
   * child is unreaped. */
  if (kill(p->pid, sig) < 0 && errno != ESRCH)
    return -errno;
  return 0;
}

/* Whether someone else (a foreign waitpid(-1) in the host) reaped the child:
 * its pid, and so its group id, may then belong to another process. */
static bool ks__reaped_elsewhere(struct ks_proc *p) {
  siginfo_t si;
  if (p->pidfd < 0)
    return false;
  memset(&si, 0, sizeof si);
  if (waitid((idtype_t) P_PIDFD, (id_t) p->pidfd, &si, WEXITED | WNOHANG | WNOWAIT | __WALL) < 0 &&
      errno == ECHILD) {
    p->reaped = true;
    return true;
  }
  return false;
}

int ks_proc_signal_group(struct ks_proc *p, int sig) {
  static _Atomic int pgrp_support = 0; /* 0 unknown, 1 yes, -1 no */

  /* Linux >= 6.9 signals the group through the pidfd: the group is named by
   * kern's struct pid, which no other process can ever have, reaped or not. */
  if (p->pidfd >= 0 && atomic_load(&pgrp_support) >= 0 &&
      !ks_compat_disabled(KS_FEATURE_PIDFD_PGRP)) {
    if (ks_sys_pidfd_send_signal(p->pidfd, sig, PIDFD_SIGNAL_PROCESS_GROUP) == 0 ||
        errno == ESRCH) {
      atomic_store(&pgrp_support, 1);
      return 0;
    }
    if (errno != EINVAL && errno != ENOSYS)
      return -errno;
    atomic_store(&pgrp_support, -1);
  }
  /* By number: safe only while kern is unreaped, since an unreaped leader
   * pins its group id. */
  if (p->reaped || ks__reaped_elsewhere(p))
    return 0;
  if (kill(-p->pid, sig) < 0 && errno != ESRCH)
    return -errno;
  return 0;
}

int ks_proc_try_reap(struct ks_proc *p, int *ret_status, struct rusage *ret_usage) {
  int status = 0;
  pid_t r;

  if (p->reaped)
    return -ECHILD;
  r = ks__wait(p, WNOHANG, &status, ret_usage);
  if (r == 0)
    return 0;
  if (r < 0) {
    /* ECHILD: a foreign waitpid(-1) in the host took our child's status.
     * The pid is gone either way; never signal it again. */
    int saved = errno;
    p->reaped = true;
    return -saved;
  }
  p->reaped = true;
  *ret_status = status;
  return 1;
}

/* Waits, on a thread of its own, for a child that SIGKILL has not ended yet,
 * then closes its pidfd. The library is pinned in memory (binding.c), so
 * this code outlives an unloaded addon. */
static void *ks__reaper_main(void *arg) {
  struct ks_proc *p = arg;
  int status;

  (void) pthread_setname_np(pthread_self(), "ks-reaper");
  (void) ks__wait(p, 0, &status, NULL);
  ks_close_keep_errno(p->pidfd);
  free(p);
  return NULL;
}

static int ks__reap_detached(struct ks_proc *p) {
  struct ks_proc *owned = malloc(sizeof *owned);
  pthread_attr_t attr;
  pthread_t thread;
  sigset_t all, old;
  int r;

  if (owned == NULL)
    return -ENOMEM;
  *owned = *p;
  if (pthread_attr_init(&attr) != 0) {
    free(owned);
    return -ENOMEM;
  }
  (void) pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  /* The thread takes none of the process's signals. */
  sigfillset(&all);
  (void) pthread_sigmask(SIG_SETMASK, &all, &old);
  r = pthread_create(&thread, &attr, ks__reaper_main, owned);
  (void) pthread_sigmask(SIG_SETMASK, &old, NULL);
  (void) pthread_attr_destroy(&attr);
  if (r != 0) {
    free(owned);
    return -r;
  }
  *p = (struct ks_proc) KS_PROC_INIT;
  return 0;
}

/* The parent pid of pid, from /proc, or -1. */
static pid_t ks__parent_of(pid_t pid) {
  char path[64], buf[512];
  const char *close_paren;
  ssize_t len;
  int fd, ppid;
  char state;

  (void) snprintf(path, sizeof path, "/proc/%d/stat", (int) pid);
  fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  len = read(fd, buf, sizeof buf - 1);
  ks_close_keep_errno(fd);
  if (len <= 0)
    return -1;
  buf[len] = '\0';
  /* The name in parentheses may hold anything, ')' included. */
  close_paren = strrchr(buf, ')');
  if (close_paren == NULL || sscanf(close_paren + 1, " %c %d", &state, &ppid) != 2)
    return -1;
  return (pid_t) ppid;
}

void ks_proc_pin_kids(const struct ks_proc *p, struct ks_proc_kids *kids) {
  char path[64], buf[1024];
  char *s, *end;
  ssize_t len;
  int fd;

  ks_proc_kids_close(kids);
  if (p->reaped || p->pid <= 0)
    return;
  (void) snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int) p->pid, (int) p->pid);
  fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return;
  len = read(fd, buf, sizeof buf - 1);
  ks_close_keep_errno(fd);
  if (len <= 0)
    return;
  buf[len] = '\0';
  for (s = buf; kids->n < KS_PROC_KIDS_MAX; s = end) {
    long pid = strtol(s, &end, 10);
    int pidfd;
    if (end == s)
      break;
    if (pid <= 0 || pid > INT_MAX)
      continue;
    pidfd = ks_sys_pidfd_open((pid_t) pid, 0);
    if (pidfd < 0)
      continue;
    if (ks__parent_of((pid_t) pid) != p->pid) {
      ks_close_keep_errno(pidfd);
      continue;
    }
    kids->fd[kids->n++] = pidfd;
  }
}

void ks_proc_kids_close(struct ks_proc_kids *kids) {
  for (int i = 0; i < kids->n; i++)
    ks_close_keep_errno(kids->fd[i]);
  kids->n = 0;
}

void ks_proc_kill_tree(struct ks_proc *p, struct ks_proc_kids *kids) {
  struct ks_proc_kids now = {.n = 0};

  if (kids == NULL || kids->n == 0) {
    ks_proc_pin_kids(p, &now);
    kids = &now;
  }
  (void) ks_proc_signal_group(p, SIGKILL);
  (void) ks_proc_signal(p, SIGKILL);
  for (int i = 0; i < kids->n; i++)
    (void) ks_sys_pidfd_send_signal(kids->fd[i], SIGKILL, 0);
  ks_proc_kids_close(kids);
}

void ks_proc_kill_and_release(struct ks_proc *p, int wait_ms) {
  int status;

  if (!p->reaped) {
    ks_proc_kill_tree(p, NULL);
    if (p->pidfd >= 0 && wait_ms > 0) {
      struct pollfd pfd = {.fd = p->pidfd, .events = POLLIN};
      uint64_t end = ks_now_ns() + (uint64_t) wait_ms * 1000000u;
      int left = wait_ms;
      /* A signal does not restart the wait's clock: a program's SIGCHLD
       * handler may run on the supervisor's thread (ks__accept_sigchld), and
       * at a teardown many kerns exit at once. */
      while (poll(&pfd, 1, left) < 0 && errno == EINTR) {
        uint64_t now = ks_now_ns();
        if (now >= end)
          break;
        left = (int) ((end - now + 999999u) / 1000000u);
      }
    }
    /* Still running: a frozen task, or one in uninterruptible sleep, ends
     * only when the kernel lets it. Leaving it unreaped would make it a
     * zombie for the life of the process; if no thread can be had for the
     * wait, that is still better than blocking the caller. */
    if (ks_proc_try_reap(p, &status, NULL) == 0 && ks__reap_detached(p) == 0)
      return;
  }
  ks_proc_close(p);
}

void ks_proc_close(struct ks_proc *p) {
  ks_close_keep_errno(p->pidfd);
  p->pidfd = -1;
}
