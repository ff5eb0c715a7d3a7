/* Child processes held by a pidfd.
 *
 * A child is always held in a struct ks_proc, never as a bare pid. Until it is
 * reaped its pid, and so its process group id, cannot be given to another
 * process; once `reaped` is set, nothing here signals it again. A child is
 * waited for through its pidfd (by number only on Linux 5.3, which has no
 * P_PIDFD), so a child reaped by someone else whose pid went to one of Node's
 * own children is never waited for, or reaped, in its place (A39). Nothing
 * here calls waitpid(-1) or touches SIGCHLD: Node's own children are not
 * ours. */
#ifndef KS_CORE_PROC_H
#define KS_CORE_PROC_H

#include <stdbool.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "../err.h"

#define KS_SPAWN_MAX_FDS 8

struct ks_proc {
  pid_t pid;
  int pidfd;   /* -1 once closed */
  bool reaped; /* once set, pid may belong to some other process */
};

#define KS_PROC_INIT {.pid = 0, .pidfd = -1, .reaped = true}

/* What the child gets. Everything is built before the fork: between clone
 * and execve the child may not allocate, lock or read the environment. */
struct ks_spawn_plan {
  const char *path;   /* executed as is with execve(2); absolute */
  int exec_fd;        /* > 2: execute this open file instead of path (execveat with
                       * AT_EMPTY_PATH; path is then only for errors); 0: by path.
                       * Must be close-on-exec: kern never sees it. */
  char *const *argv;  /* NULL-terminated */
  char *const *envp;  /* NULL-terminated */
  const char *cwd;    /* the child's working directory; NULL keeps ours */
  int fds[KS_SPAWN_MAX_FDS]; /* child fd i becomes a copy of fds[i] */
  int nfds;           /* 3..KS_SPAWN_MAX_FDS; every other fd is closed */
};

/* Starts plan->path in a new session (so in its own process group), with
 * PR_SET_PDEATHSIG = SIGKILL tied to the calling thread, every signal
 * disposition reset and an empty signal mask. Call it from a thread that
 * lives as long as the child should: the parent-death signal follows the
 * thread, not the process.
 *
 * Returns 0, or a negative errno:
 *   -ENOENT, -EACCES, ...  execve failed (err->syscall "execve", path = plan->path)
 *   -ENOENT (chdir)        plan->cwd is missing
 *   -EAGAIN, -ENOMEM       clone failed (process or memory limit)
 *   -EMFILE                no descriptor left for the pidfd
 *   -ENOSYS                the kernel has no pidfd support (Linux < 5.3) */
int ks_proc_spawn(const struct ks_spawn_plan *plan, struct ks_proc *ret_proc,
                  struct ks_err *err);

/* Sends sig through the pidfd. An already-exited child is not an error. */
int ks_proc_signal(struct ks_proc *p, int sig);

/* Sends sig to the child's process group, only while the child is unreaped
 * (a zombie leader still pins the group id). Returns 0 or a negative errno;
 * an empty group is not an error. */
int ks_proc_signal_group(struct ks_proc *p, int sig);

/* Reaps the child if it has exited. Returns 1 with *ret_status (a wait(2)
 * status) when reaped, 0 if still running, or a negative errno. */
int ks_proc_try_reap(struct ks_proc *p, int *ret_status, struct rusage *ret_usage);

/* A child's own children outside its process group, pinned by pidfd. */
#define KS_PROC_KIDS_MAX 16
struct ks_proc_kids {
  int n;
  int fd[KS_PROC_KIDS_MAX];
};

/* Pins p's direct children (best effort: none without /proc or pidfds),
 * read while p is alive and unreaped: each pidfd is kept only if, once
 * taken, it still names a child of p, never a reused pid. Replaces what
 * kids held. */
void ks_proc_pin_kids(const struct ks_proc *p, struct ks_proc_kids *kids);

/* Closes what kids pinned. */
void ks_proc_kids_close(struct ks_proc_kids *kids);

/* SIGKILLs the child, its process group and its direct children outside
 * that group, while the child is unreaped. kern's watchdog of a foreground
 * --timeout calls setsid(): a SIGKILL of kern leaves it running, for the
 * rest of the box's --timeout (a day for a kernel's box) when it could not
 * pin the box's PID 1 in time (kern bc2026a, spawn_foreground_timeout).
 * The children are those pinned ahead in kids (a parked box's, pinned off
 * any call's path; closed here) or, with none, pinned now: before the
 * child dies, since afterwards they are no longer listed as its own. */
void ks_proc_kill_tree(struct ks_proc *p, struct ks_proc_kids *kids);

/* SIGKILLs the child and what it forked (ks_proc_kill_tree) if still
 * unreaped and reaps it if it ends within wait_ms; a child that has not (frozen, or in uninterruptible
 * sleep) is waited for by a detached thread. Never blocks longer than
 * wait_ms. Leaves *p closed (KS_PROC_INIT). For the supervisor, which must
 * never stall on one child. */
void ks_proc_kill_and_release(struct ks_proc *p, int wait_ms);

/* Closes the pidfd. Safe on a half-built or already closed handle. */
void ks_proc_close(struct ks_proc *p);

#endif
