/* A process's terminal (lib/process.js, `pty`): ptyPair(cols, rows) opens
 * a pty on the host and gives [slaveFd, masterFd, control]: the slave for
 * the box (BoxOptions.stdinFd; the workload's controlling terminal), the
 * master for the engine (BoxOptions.ttyFd; it reads the output and writes
 * the input there), and a handle on a second descriptor of the master for
 * ttyResize(control, cols, rows), closed with wsClose() when the process
 * ends, or by the environment's teardown (a terminated Worker).
 * The box never gets a master: only the slave, as kern's own `-t` gives a
 * box, with the size set before the workload can read it. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "addon.h"
#include "handle.h"
#include "util.h"
#include "../core/util.h"

#define KS__TTY_DIM_MAX 65535 /* a struct winsize field */

/* args[i] as a terminal dimension, 1-65535; false with a TypeError pending. */
static bool ks__dim(napi_env env, napi_value v, const char *what, unsigned short *out) {
  double d;
  char msg[96];

  if (napi_get_value_double(env, v, &d) == napi_ok && d >= 1 && d <= KS__TTY_DIM_MAX &&
      d == (double) (unsigned) d) {
    *out = (unsigned short) d;
    return true;
  }
  (void) snprintf(msg, sizeof msg, "kern-sandbox: %s must be a whole number from 1 to %d", what,
                  KS__TTY_DIM_MAX);
  napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", msg);
  return false;
}

/* The arguments (the size last) and the addon; false with an exception
 * pending. */
static bool ks__size_args(napi_env env, napi_callback_info info, size_t want, napi_value *argv,
                          struct winsize *ws, struct ks_addon **addon) {
  size_t argc = want;

  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok ||
      napi_get_instance_data(env, (void **) addon) != napi_ok) {
    ks_napi_throw_last(env);
    return false;
  }
  if (argc != want) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE",
                          want == 2 ? "kern-sandbox: ptyPair(cols, rows) takes 2 arguments"
                                    : "kern-sandbox: ttyResize(control, cols, rows) takes 3 arguments");
    return false;
  }
  ws->ws_xpixel = ws->ws_ypixel = 0;
  return ks__dim(env, argv[want - 2], "cols", &ws->ws_col) &&
         ks__dim(env, argv[want - 1], "rows", &ws->ws_row);
}

/* The slave of master, opened by the master itself (no path lookup in
 * /dev/pts, so no race with another pty of the same number). */
static int ks__open_slave(int master) {
  int unlock = 0;

  if (ioctl(master, TIOCSPTLCK, &unlock) < 0)
    return -1;
  return ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
}

static napi_value ks__pty_pair(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  struct winsize ws;
  struct termios t;
  int fds[3] = {-1, -1, -1}; /* slave, master, control */
  napi_value out;
  napi_value v;
  struct ks_err err;
  const char *syscall = "open";
  struct ks_addon *addon = NULL;

  if (!ks__size_args(env, info, 2, argv, &ws, &addon))
    return NULL;
  fds[1] = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
  if (fds[1] >= 0) {
    syscall = "ioctl";
    fds[0] = ks__open_slave(fds[1]);
  }
  /* A terminal as a modern one starts: the kernel's defaults (cooked,
   * echo, signals from ^C and ^Z), UTF-8 input, and the size given. */
  if (fds[0] >= 0 && tcgetattr(fds[0], &t) == 0) {
    t.c_iflag |= IUTF8;
    (void) tcsetattr(fds[0], TCSANOW, &t);
  }
  if (fds[0] >= 0 && ioctl(fds[1], TIOCSWINSZ, &ws) == 0) {
    syscall = "fcntl";
    fds[2] = fcntl(fds[1], F_DUPFD_CLOEXEC, 3);
  }
  if (fds[2] < 0) {
    ks_err_set(&err, errno, syscall, syscall[0] == 'o' ? "/dev/ptmx" : NULL);
    for (int i = 0; i < 3; i++)
      ks_close_keep_errno(fds[i]);
    ks_napi_throw_system(env, &err);
    return NULL;
  }
  if (napi_create_array_with_length(env, 3, &out) != napi_ok)
    goto fail;
  for (uint32_t i = 0; i < 2; i++) {
    if (napi_create_int32(env, fds[i], &v) != napi_ok || napi_set_element(env, out, i, v) != napi_ok)
      goto fail;
  }
  /* The handle takes the control descriptor whatever happens. */
  v = ks_handle_new(env, addon, KS_HANDLE_TTY, fds[2], NULL, 0);
  fds[2] = -1;
  if (v == NULL || napi_set_element(env, out, 2, v) != napi_ok)
    goto fail;
  return out;
fail:
  for (int i = 0; i < 3; i++)
    ks_close_keep_errno(fds[i]);
  ks_napi_throw_last(env);
  return NULL;
}

/* The terminal's new size: the kernel sends SIGWINCH to its foreground
 * process group when it changed. */
static napi_value ks__tty_resize(napi_env env, napi_callback_info info) {
  napi_value argv[3];
  struct winsize ws;
  int fd;
  struct ks_err err;
  struct ks_addon *addon = NULL;

  if (!ks__size_args(env, info, 3, argv, &ws, &addon))
    return NULL;
  if (!ks_handle_fd(env, addon, argv[0], KS_HANDLE_TTY, "ttyResize", &fd))
    return NULL;
  if (ioctl(fd, TIOCSWINSZ, &ws) < 0) {
    ks_err_set(&err, errno, "ioctl", NULL);
    ks_napi_throw_system(env, &err);
  }
  return NULL;
}

bool ks_napi_init_tty(napi_env env, napi_value exports) {
  static const struct ks_napi_fn fns[] = {
      {"ptyPair", ks__pty_pair},
      {"ttyResize", ks__tty_resize},
  };
  return ks_napi_export(env, exports, fns, sizeof fns / sizeof fns[0]);
}
