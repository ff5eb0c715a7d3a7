/* Kernel interfaces newer than some supported kernels or C libraries.
 *
 * Each probe is cached in a static _Atomic tri-state by its user, because
 * worker and supervisor threads probe concurrently. A transient EMFILE or
 * ENOMEM is never cached as "unsupported". */
#ifndef KS_CORE_COMPAT_H
#define KS_CORE_COMPAT_H

#include <signal.h>
#include <stdbool.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#ifndef SYS_openat2
#define SYS_openat2 437
#endif
#ifndef SYS_execveat
#define SYS_execveat 322 /* x86_64; every other architecture's headers define it */
#endif
#ifndef AT_EMPTY_PATH
#define AT_EMPTY_PATH 0x1000
#endif
#ifndef PIDFD_SIGNAL_PROCESS_GROUP
#define PIDFD_SIGNAL_PROCESS_GROUP (1U << 2)
#endif
#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif
#ifndef P_PIDFD
#define P_PIDFD 3
#endif

enum ks_feature {
  KS_FEATURE_OPENAT2 = 1 << 0,
  KS_FEATURE_CLONE_PIDFD = 1 << 1,
  KS_FEATURE_CLOSE_RANGE = 1 << 2,
  KS_FEATURE_MEMFD = 1 << 3,
  KS_FEATURE_PIDFD_PGRP = 1 << 4, /* pidfd_send_signal(PIDFD_SIGNAL_PROCESS_GROUP), 6.9 */
};

/* What this kernel offers of the interfaces above, asked directly (for
 * doctor(): the engine itself probes each at its first use). */
struct ks_host_features {
  bool pidfd_open;  /* pidfd_open(2), Linux 5.3: timeout kills without pid reuse */
  bool openat2;     /* openat2(2) RESOLVE_BENEATH, Linux 5.6; else an O_NOFOLLOW walk */
  bool close_range; /* close_range(2), Linux 5.9; else a descriptor-by-descriptor close */
};
void ks_compat_probe_host(struct ks_host_features *out);

/* Tests force the fallback paths on a kernel that has every feature:
 * features listed here behave as if the kernel answered ENOSYS. */
void ks_compat_disable(unsigned features);
bool ks_compat_disabled(enum ks_feature feature);

static inline int ks_sys_pidfd_open(pid_t pid, unsigned flags) {
  return (int) syscall(SYS_pidfd_open, pid, flags);
}

static inline int ks_sys_pidfd_send_signal(int pidfd, int sig, unsigned flags) {
  return (int) syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, flags);
}

/* The raw waitid: unlike glibc's wrapper it also fills a struct rusage, as
 * wait4 does. P_PIDFD needs Linux >= 5.4. */
static inline int ks_sys_waitid(int idtype, int id, siginfo_t *info, int options,
                                struct rusage *usage) {
  return (int) syscall(SYS_waitid, idtype, id, info, options, usage);
}

/* Linux >= 3.19; glibc has a wrapper only since 2.34. */
static inline int ks_sys_execveat(int dirfd, const char *path, char *const argv[],
                                  char *const envp[], int flags) {
  return (int) syscall(SYS_execveat, dirfd, path, argv, envp, flags);
}

static inline int ks_sys_close_range(unsigned first, unsigned last, unsigned flags) {
  return (int) syscall(SYS_close_range, first, last, flags);
}

#endif
