/* The part of a C library that ks-init uses, on raw system calls, so that
 * the init starts without glibc's start-up: glibc probes the CPU's features
 * and caches with many CPUID instructions in every process it starts, and
 * on a VM each one is a trap to the hypervisor (bench/README.md has what
 * that costs every cold box). ks-init.c
 * stays plain C against the usual headers; this file gives it, with glibc's
 * prototypes, the functions it calls, and _start. Built for x86-64 and
 * arm64 (binding.gyp); elsewhere ks-init links glibc.
 *
 * What must match glibc exactly: execvp (the box runs commands by it, as
 * kern does: the PATH search, its errnos, the ENOEXEC /bin/sh fallback) and
 * strerror's words (the init prints kern's messages). Everything else is
 * the system call itself. Single-threaded, no locale, no stdio buffers. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
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
#include <time.h>
#include <unistd.h>

#include "strerror-table.h"

#if !defined(__x86_64__) && !defined(__aarch64__)
#error "nolibc.c: x86-64 and arm64 only (binding.gyp links glibc elsewhere)"
#endif

static int ks_errno;
char **environ;

int *__errno_location(void) { return &ks_errno; }

/* ---- system calls ------------------------------------------------------ */

static long ks_syscall6(long n, long a, long b, long c, long d, long e, long f) {
#if defined(__x86_64__)
  register long r10 __asm__("r10") = d;
  register long r8 __asm__("r8") = e;
  register long r9 __asm__("r9") = f;
  long ret;
  __asm__ volatile("syscall"
                   : "=a"(ret)
                   : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                   : "rcx", "r11", "memory");
  return ret;
#else
  register long x8 __asm__("x8") = n;
  register long x0 __asm__("x0") = a;
  register long x1 __asm__("x1") = b;
  register long x2 __asm__("x2") = c;
  register long x3 __asm__("x3") = d;
  register long x4 __asm__("x4") = e;
  register long x5 __asm__("x5") = f;
  __asm__ volatile("svc 0"
                   : "+r"(x0)
                   : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
                   : "memory");
  return x0;
#endif
}

/* The kernel's -errno as -1 and errno, as libc returns it. */
static long ks_ret(long r) {
  if (r < 0 && r > -4096) {
    ks_errno = (int) -r;
    return -1;
  }
  return r;
}

#define SC(n, a, b, c, d, e, f) ks_ret(ks_syscall6((n), (long) (a), (long) (b), (long) (c), \
                                                   (long) (d), (long) (e), (long) (f)))

/* n variadic arguments, each read as a long (as the kernel takes them). */
static void ks_longs(va_list ap, long *a, int n) {
  for (int i = 0; i < n; i++)
    a[i] = va_arg(ap, long);
}

long syscall(long n, ...) {
  va_list ap;
  long a[6];
  va_start(ap, n);
  ks_longs(ap, a, 6);
  va_end(ap);
  return SC(n, a[0], a[1], a[2], a[3], a[4], a[5]);
}

void _exit(int code) {
  for (;;)
    (void) ks_syscall6(SYS_exit_group, code, 0, 0, 0, 0, 0);
}

ssize_t read(int fd, void *buf, size_t n) { return SC(SYS_read, fd, buf, n, 0, 0, 0); }
ssize_t write(int fd, const void *buf, size_t n) { return SC(SYS_write, fd, buf, n, 0, 0, 0); }
int close(int fd) { return (int) SC(SYS_close, fd, 0, 0, 0, 0, 0); }
pid_t getpid(void) { return (pid_t) SC(SYS_getpid, 0, 0, 0, 0, 0, 0); }
pid_t getppid(void) { return (pid_t) SC(SYS_getppid, 0, 0, 0, 0, 0, 0); }
uid_t geteuid(void) { return (uid_t) SC(SYS_geteuid, 0, 0, 0, 0, 0, 0); }
pid_t setsid(void) { return (pid_t) SC(SYS_setsid, 0, 0, 0, 0, 0, 0); }
int kill(pid_t pid, int sig) { return (int) SC(SYS_kill, pid, sig, 0, 0, 0, 0); }
int fstat(int fd, struct stat *st) { return (int) SC(SYS_fstat, fd, st, 0, 0, 0, 0); }
int getrusage(__rusage_who_t who, struct rusage *ru) { return (int) SC(SYS_getrusage, who, ru, 0, 0, 0, 0); }

int pipe2(int fds[2], int flags) { return (int) SC(SYS_pipe2, fds, flags, 0, 0, 0, 0); }

int socketpair(int domain, int type, int proto, int sv[2]) {
  return (int) SC(SYS_socketpair, domain, type, proto, sv, 0, 0);
}

ssize_t sendmsg(int fd, const struct msghdr *msg, int flags) {
  return SC(SYS_sendmsg, fd, msg, flags, 0, 0, 0);
}

ssize_t recvmsg(int fd, struct msghdr *msg, int flags) {
  return SC(SYS_recvmsg, fd, msg, flags, 0, 0, 0);
}

int open(const char *path, int flags, ...) {
  mode_t mode = 0;
  if (flags & (O_CREAT | __O_TMPFILE)) {
    va_list ap;
    va_start(ap, flags);
    mode = va_arg(ap, mode_t);
    va_end(ap);
  }
  return (int) SC(SYS_openat, AT_FDCWD, path, flags, mode, 0, 0);
}

int fcntl(int fd, int cmd, ...) {
  va_list ap;
  long arg;
  va_start(ap, cmd);
  arg = va_arg(ap, long);
  va_end(ap);
  return (int) SC(SYS_fcntl, fd, cmd, arg, 0, 0, 0);
}

int ioctl(int fd, unsigned long req, ...) {
  long a[1];
  va_list ap;
  va_start(ap, req);
  ks_longs(ap, a, 1);
  va_end(ap);
  return (int) SC(SYS_ioctl, fd, req, a[0], 0, 0, 0);
}

int dup2(int from, int to) {
  if (from == to) /* dup3 refuses this; dup2 checks from and returns it */
    return fcntl(from, F_GETFD) < 0 ? -1 : to;
  return (int) SC(SYS_dup3, from, to, 0, 0, 0, 0);
}

int prctl(int op, ...) {
  va_list ap;
  long a[4];
  va_start(ap, op);
  ks_longs(ap, a, 4);
  va_end(ap);
  return (int) SC(SYS_prctl, op, a[0], a[1], a[2], a[3], 0);
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
  long r = ks_syscall6(SYS_mmap, (long) addr, (long) len, prot, flags, fd, off);
  if (r < 0 && r > -4096) {
    ks_errno = (int) -r;
    return MAP_FAILED;
  }
  return (void *) r;
}

int poll(struct pollfd *fds, nfds_t n, int timeout_ms) {
  struct timespec ts = {.tv_sec = timeout_ms / 1000, .tv_nsec = (timeout_ms % 1000) * 1000000L};
  return (int) SC(SYS_ppoll, fds, n, timeout_ms < 0 ? NULL : &ts, NULL, 8, 0);
}

pid_t fork(void) { return (pid_t) SC(SYS_clone, SIGCHLD, 0, 0, 0, 0, 0); }

pid_t waitpid(pid_t pid, int *status, int options) {
  return (pid_t) SC(SYS_wait4, pid, status, options, NULL, 0, 0);
}

int execve(const char *path, char *const argv[], char *const envp[]) {
  return (int) SC(SYS_execve, path, argv, envp, 0, 0, 0);
}

/* ---- signals ----------------------------------------------------------- */

/* The kernel's struct sigaction (the same layout on x86-64 and arm64). */
struct ks_ksigaction {
  void (*handler)(int);
  unsigned long flags;
  void (*restorer)(void);
  unsigned long mask;
};

#ifndef SA_RESTORER
#define SA_RESTORER 0x04000000
#endif

#if defined(__x86_64__)
/* x86-64 returns from a handler through the restorer the process gives. */
void ks_restore_rt(void);
__asm__(".text\n"
        ".type ks_restore_rt,@function\n"
        "ks_restore_rt:\n"
        "  mov $15, %rax\n" /* rt_sigreturn */
        "  syscall\n");
#endif

int sigemptyset(sigset_t *set) {
  memset(set, 0, sizeof *set);
  return 0;
}

int sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
  struct ks_ksigaction k, ko;
  long r;

  if (act != NULL) {
    memset(&k, 0, sizeof k);
    k.handler = act->sa_handler;
    k.flags = (unsigned long) act->sa_flags;
    memcpy(&k.mask, &act->sa_mask, sizeof k.mask);
#if defined(__x86_64__)
    k.flags |= SA_RESTORER;
    k.restorer = ks_restore_rt;
#endif
  }
  r = SC(SYS_rt_sigaction, sig, act != NULL ? &k : NULL, old != NULL ? &ko : NULL,
         sizeof k.mask, 0, 0);
  if (r < 0)
    return -1;
  if (old != NULL) {
    memset(old, 0, sizeof *old);
    old->sa_handler = ko.handler;
    old->sa_flags = (int) ko.flags;
    old->sa_restorer = ko.restorer;
    memcpy(&old->sa_mask, &ko.mask, sizeof ko.mask);
  }
  return 0;
}

/* ---- memory and strings ------------------------------------------------ */

void *memcpy(void *dst, const void *src, size_t n) {
  unsigned char *d = dst;
  const unsigned char *s = src;
  while (n-- > 0)
    *d++ = *s++;
  return dst;
}

void *memmove(void *dst, const void *src, size_t n) {
  unsigned char *d = dst;
  const unsigned char *s = src;
  if (d < s) {
    while (n-- > 0)
      *d++ = *s++;
  } else {
    while (n-- > 0)
      d[n] = s[n];
  }
  return dst;
}

void *memset(void *dst, int c, size_t n) {
  unsigned char *d = dst;
  while (n-- > 0)
    *d++ = (unsigned char) c;
  return dst;
}

int memcmp(const void *a, const void *b, size_t n) {
  const unsigned char *x = a, *y = b;
  for (; n > 0; n--, x++, y++) {
    if (*x != *y)
      return *x - *y;
  }
  return 0;
}

size_t strlen(const char *s) {
  const char *p = s;
  while (*p != '\0')
    p++;
  return (size_t) (p - s);
}

static size_t ks_strnlen(const char *s, size_t max) {
  size_t n = 0;
  while (n < max && s[n] != '\0')
    n++;
  return n;
}

int strcmp(const char *a, const char *b) {
  while (*a != '\0' && *a == *b)
    a++, b++;
  return (unsigned char) *a - (unsigned char) *b;
}

static const char *ks_strchrnul(const char *s, int c) {
  while (*s != '\0' && *s != (char) c)
    s++;
  return s;
}

long strtol(const char *s, char **end, int base) {
  const char *p = s;
  unsigned long v = 0;
  bool neg = false, any = false;

  (void) base; /* base 10 only: the init parses pids */
  while (*p == ' ' || (*p >= '\t' && *p <= '\r'))
    p++;
  if (*p == '-' || *p == '+')
    neg = *p++ == '-';
  for (; *p >= '0' && *p <= '9'; p++, any = true) {
    unsigned digit = (unsigned) (*p - '0');
    v = v > (unsigned long) LONG_MAX / 10 ? (unsigned long) LONG_MAX + 1 : v * 10 + digit;
  }
  if (end != NULL)
    *end = (char *) (any ? p : s);
  if (v > (unsigned long) LONG_MAX)
    return neg ? LONG_MIN : LONG_MAX;
  return neg ? -(long) v : (long) v;
}

/* Memory for the two allocations of a prewarmed box's child (its spec and
 * its argv): each an anonymous mapping of its own, never freed (it execs). */
void *malloc(size_t n) {
  void *p = mmap(NULL, n > 0 ? n : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

void *calloc(size_t count, size_t size) {
  if (size != 0 && count > SIZE_MAX / size) {
    ks_errno = ENOMEM;
    return NULL;
  }
  return malloc(count * size); /* fresh anonymous pages are zero */
}

void free(void *p) { (void) p; }

char *strerror(int n) {
  static char unknown[32];
  if (n >= 0 && (size_t) n < sizeof ks_strerror_table / sizeof ks_strerror_table[0])
    return (char *) ks_strerror_table[n];
  (void) snprintf(unknown, sizeof unknown, "Unknown error %d", n);
  return unknown;
}

/* ---- formatting: %s %d %u %% only, all the init prints ----------------- */

struct ks_out {
  char *buf;
  size_t cap; /* room for bytes, not counting the NUL */
  size_t len; /* bytes written (or that would have been) */
  int fd;     /* >= 0: flush to fd when full */
};

static void ks_out_flush(struct ks_out *o) {
  size_t off = 0;
  while (o->fd >= 0 && off < o->len) {
    ssize_t n = write(o->fd, o->buf + off, o->len - off);
    if (n < 0 && ks_errno == EINTR)
      continue;
    if (n <= 0)
      break;
    off += (size_t) n;
  }
  o->len = 0;
}

static void ks_out_put(struct ks_out *o, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (o->fd >= 0 && o->len == o->cap)
      ks_out_flush(o);
    if (o->len < o->cap)
      o->buf[o->len] = s[i];
    o->len++;
  }
}

static void ks_out_number(struct ks_out *o, unsigned long v, bool neg) {
  char digits[24];
  size_t i = sizeof digits;
  do
    digits[--i] = (char) ('0' + v % 10);
  while ((v /= 10) > 0);
  if (neg)
    digits[--i] = '-';
  ks_out_put(o, digits + i, sizeof digits - i);
}

static void ks_format(struct ks_out *o, const char *fmt, va_list ap) {
  for (const char *p = fmt; *p != '\0'; p++) {
    if (*p != '%') {
      ks_out_put(o, p, 1);
      continue;
    }
    switch (*++p) {
    case 's': {
      const char *s = va_arg(ap, const char *);
      if (s == NULL)
        s = "(null)";
      ks_out_put(o, s, strlen(s));
      break;
    }
    case 'd': {
      int v = va_arg(ap, int);
      ks_out_number(o, v < 0 ? -(unsigned long) (long) v : (unsigned long) v, v < 0);
      break;
    }
    case 'u':
      ks_out_number(o, va_arg(ap, unsigned), false);
      break;
    case '%':
      ks_out_put(o, "%", 1);
      break;
    default: /* not used by the init: printed as written */
      ks_out_put(o, p - 1, *p != '\0' ? 2 : 1);
      if (*p == '\0')
        return;
    }
  }
}

int snprintf(char *buf, size_t size, const char *fmt, ...) {
  struct ks_out o = {.buf = buf, .cap = size > 0 ? size - 1 : 0, .len = 0, .fd = -1};
  va_list ap;
  va_start(ap, fmt);
  ks_format(&o, fmt, ap);
  va_end(ap);
  if (size > 0)
    buf[o.len < o.cap ? o.len : o.cap] = '\0';
  return (int) o.len;
}

int dprintf(int fd, const char *fmt, ...) {
  char buf[4096];
  struct ks_out o = {.buf = buf, .cap = sizeof buf, .len = 0, .fd = fd};
  va_list ap;
  va_start(ap, fmt);
  ks_format(&o, fmt, ap);
  va_end(ap);
  ks_out_flush(&o);
  return 0;
}

/* ---- execvp: glibc's __execvpe (posix/execvpe.c), rule for rule -------- */

static char *ks_getenv(const char *name) {
  size_t n = strlen(name);
  for (char **e = environ; e != NULL && *e != NULL; e++) {
    if (memcmp(*e, name, n) == 0 && (*e)[n] == '=')
      return *e + n + 1;
  }
  return NULL;
}

/* A file the kernel would not run (ENOEXEC): run it with /bin/sh. */
static void ks_script_execute(const char *file, char *const argv[]) {
  size_t argc = 0;
  while (argv[argc] != NULL)
    argc++;
  if (argc >= INT_MAX - 1) {
    ks_errno = E2BIG;
    return;
  }
  {
    char *new_argv[argc > 1 ? 2 + argc : 3];
    new_argv[0] = (char *) "/bin/sh";
    new_argv[1] = (char *) file;
    if (argc > 1)
      memcpy(new_argv + 2, argv + 1, argc * sizeof(char *));
    else
      new_argv[2] = NULL;
    (void) execve(new_argv[0], new_argv, environ);
  }
}

int execvp(const char *file, char *const argv[]) {
  const char *path;
  size_t file_len, path_len;
  bool got_eacces = false;

  if (*file == '\0') {
    ks_errno = ENOENT;
    return -1;
  }
  if (ks_strchrnul(file, '/')[0] != '\0') {
    (void) execve(file, argv, environ);
    if (ks_errno == ENOEXEC)
      ks_script_execute(file, argv);
    return -1;
  }
  path = ks_getenv("PATH");
  if (path == NULL)
    path = "/bin:/usr/bin"; /* glibc's confstr(_CS_PATH) */
  file_len = ks_strnlen(file, NAME_MAX) + 1;
  path_len = ks_strnlen(path, PATH_MAX - 1) + 1;
  if (file_len > NAME_MAX) {
    ks_errno = ENAMETOOLONG;
    return -1;
  }
  {
    char buffer[path_len + file_len + 1];
    const char *subp;
    for (const char *p = path;; p = subp) {
      subp = ks_strchrnul(p, ':');
      /* An entry longer than PATH_MAX: the end if it is the last; otherwise
       * (as glibc does) the search goes on from its ':', an empty entry. */
      if ((size_t) (subp - p) >= path_len) {
        if (*subp == '\0')
          break;
        continue;
      }
      /* The entry, a '/' if it is not empty, and the file. */
      char *pend = (char *) memcpy(buffer, p, (size_t) (subp - p)) + (subp - p);
      *pend = '/';
      memcpy(pend + (p < subp), file, file_len);
      (void) execve(buffer, argv, environ);
      if (ks_errno == ENOEXEC)
        ks_script_execute(buffer, argv); /* and its errno decides, as in glibc */
      switch (ks_errno) {
      case EACCES:
        got_eacces = true;
        /* fall through */
      case ENOENT:
      case ESTALE:
      case ENOTDIR:
      case ENODEV:
      case ETIMEDOUT:
        break;
      default:
        return -1;
      }
      if (*subp++ == '\0')
        break;
    }
  }
  if (got_eacces)
    ks_errno = EACCES;
  return -1;
}

/* ---- the start --------------------------------------------------------- */

int main(int argc, char **argv);

/* From the kernel's initial stack: argc, argv[], NULL, envp[], NULL. */
__attribute__((used)) void ks_start_c(long *sp) {
  int argc = (int) sp[0];
  char **argv = (char **) (sp + 1);
  environ = argv + argc + 1;
  _exit(main(argc, argv));
}

#if defined(__x86_64__)
__asm__(".text\n"
        ".global _start\n"
        "_start:\n"
        "  xor %rbp, %rbp\n"
        "  mov %rsp, %rdi\n"
        "  and $-16, %rsp\n"
        "  call ks_start_c\n"
        "  hlt\n");
#else
__asm__(".text\n"
        ".global _start\n"
        "_start:\n"
        "  mov x29, #0\n"
        "  mov x30, #0\n"
        "  mov x0, sp\n"
        "  and x1, x0, #-16\n"
        "  mov sp, x1\n"
        "  bl ks_start_c\n"
        "  brk #0\n");
#endif
