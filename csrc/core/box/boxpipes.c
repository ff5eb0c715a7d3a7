#define _GNU_SOURCE
#include "boxpipes.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../util.h"

static void ks__pair_close(int fds[2]) {
  ks_close_keep_errno(fds[0]);
  ks_close_keep_errno(fds[1]);
  fds[0] = fds[1] = -1;
}

/* Our end, fds[0], made nonblocking; on failure both ends go. */
static int ks__our_end_nonblocking(int fds[2], struct ks_err *err) {
  if (fcntl(fds[0], F_SETFL, O_NONBLOCK) < 0) {
    int saved = errno;
    ks__pair_close(fds);
    return ks_err_set(err, saved, "fcntl", NULL);
  }
  return 0;
}

int ks_pipe_nonblocking_read(int fds[2], struct ks_err *err) {
  if (pipe2(fds, O_CLOEXEC) < 0)
    return ks_err_set(err, errno, "pipe2", NULL);
  /* Only our end: kern and the box write in blocking mode as usual. */
  return ks__our_end_nonblocking(fds, err);
}

int ks_channel_pair(int fds[2], struct ks_err *err) {
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) < 0) {
    fds[0] = fds[1] = -1;
    return ks_err_set(err, errno, "socketpair", NULL);
  }
  return ks__our_end_nonblocking(fds, err);
}
