#define _GNU_SOURCE
#include "kit.h"

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

void ks_kit_init(struct ks_box_kit *kit) {
  for (int i = 0; i < KS_KIT_PIPES; i++)
    kit->pipes[i][0] = kit->pipes[i][1] = -1;
  kit->chan[0] = kit->chan[1] = -1;
}

bool ks_kit_ready(const struct ks_box_kit *kit) {
  return kit->pipes[0][0] >= 0 && kit->chan[0] >= 0;
}

int ks_kit_make(struct ks_box_kit *kit, struct ks_err *err) {
  int r = 0;

  for (int i = 0; i < KS_KIT_PIPES && r == 0; i++) {
    if (kit->pipes[i][0] < 0)
      r = ks_pipe_nonblocking_read(kit->pipes[i], err);
  }
  if (r == 0 && kit->chan[0] < 0)
    r = ks_channel_pair(kit->chan, err);
  if (r < 0)
    ks_kit_close(kit);
  return r;
}

void ks_kit_take(struct ks_box_kit *kit, int pipes[KS_KIT_PIPES][2], int chan[2]) {
  for (int i = 0; i < KS_KIT_PIPES; i++) {
    pipes[i][0] = kit->pipes[i][0];
    pipes[i][1] = kit->pipes[i][1];
    kit->pipes[i][0] = kit->pipes[i][1] = -1;
  }
  if (chan != NULL) {
    chan[0] = kit->chan[0];
    chan[1] = kit->chan[1];
    kit->chan[0] = kit->chan[1] = -1;
  }
}

void ks_kit_fds(const struct ks_box_kit *kit, int out[KS_KIT_FDS]) {
  for (int i = 0; i < KS_KIT_PIPES; i++) {
    out[2 * i] = kit->pipes[i][0];
    out[2 * i + 1] = kit->pipes[i][1];
  }
  out[2 * KS_KIT_PIPES] = kit->chan[0];
  out[2 * KS_KIT_PIPES + 1] = kit->chan[1];
}

void ks_kit_close(struct ks_box_kit *kit) {
  for (int i = 0; i < KS_KIT_PIPES; i++)
    ks__pair_close(kit->pipes[i]);
  ks__pair_close(kit->chan);
}
