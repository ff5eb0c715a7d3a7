#define _GNU_SOURCE
#include "spec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "protocol.h"

int ks_init_split_argv(const char *body, size_t len, char ***argv_out) {
  size_t count = 0;
  char **argv;
  size_t i = 0;

  *argv_out = NULL;
  if (len == 0 || body[len - 1] != '\0')
    return -1;
  for (size_t j = 0; j < len; j++)
    count += body[j] == '\0';
  if (count > (size_t) 1 << 24)
    return -1;
  argv = calloc(count + 1, sizeof *argv);
  if (argv == NULL)
    return -1;
  for (size_t k = 0; k < count; k++) {
    argv[k] = (char *) body + i;
    i += strlen(body + i) + 1;
  }
  *argv_out = argv;
  return (int) count;
}

/* The descriptors of a control message: the first kept in *fd if it has
 * none yet, every other closed. Only the first header is looked at (the
 * host sends one; CMSG_NXTHDR is a libc call the init's nolibc lacks), and
 * a truncated one (MSG_CTRUNC) is the caller's failure. */
static void ks__take_fds(struct msghdr *msg, int *fd) {
  struct cmsghdr *c = CMSG_FIRSTHDR(msg);
  size_t n;

  if (c == NULL || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
      c->cmsg_len < CMSG_LEN(0))
    return;
  n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
  for (size_t i = 0; i < n; i++) {
    int got;
    memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof got);
    if (*fd < 0)
      *fd = got;
    else
      (void) close(got);
  }
}

/* All of len bytes of fd into buf, across short reads and EINTR. */
static int ks__read_full(int fd, char *buf, size_t len) {
  while (len > 0) {
    ssize_t n = read(fd, buf, len);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return -1;
    buf += n;
    len -= (size_t) n;
  }
  return 0;
}

int ks_init_recv_frame(int ch, uint32_t want, uint32_t max, char **body, size_t *len, int *fd,
                       uint32_t *flags) {
  struct ks_init_frame_header h;
  size_t got = 0;
  uint32_t allowed = flags != NULL ? *flags : 0;

  *body = NULL;
  *len = 0;
  *fd = -1;
  while (got < sizeof h) {
    union {
      struct cmsghdr align;
      char buf[CMSG_SPACE(4 * sizeof(int))];
    } control;
    struct iovec iov = {.iov_base = (char *) &h + got, .iov_len = sizeof h - got};
    struct msghdr msg;
    ssize_t n;

    memset(&msg, 0, sizeof msg);
    memset(&control, 0, sizeof control);
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.buf;
    msg.msg_controllen = sizeof control.buf;
    n = recvmsg(ch, &msg, MSG_CMSG_CLOEXEC);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      goto fail;
    ks__take_fds(&msg, fd);
    if (msg.msg_flags & MSG_CTRUNC)
      goto fail;
    got += (size_t) n;
  }
  if (h.magic != KS_INIT_FRAME_MAGIC || (h.type & ~allowed) != want || h.len > max)
    goto fail;
  if (flags != NULL)
    *flags = h.type & allowed;
  *body = malloc((size_t) h.len + 1);
  if (*body == NULL || ks__read_full(ch, *body, h.len) < 0)
    goto fail;
  (*body)[h.len] = '\0';
  *len = h.len;
  return 0;
fail:
  free(*body);
  *body = NULL;
  if (*fd >= 0)
    (void) close(*fd);
  *fd = -1;
  return -1;
}

int ks_init_parse_signal(const void *frame, size_t n) {
  struct ks_init_frame_header h;
  struct ks_init_signal sg;

  if (n != sizeof h + sizeof sg)
    return -1;
  memcpy(&h, frame, sizeof h);
  memcpy(&sg, (const char *) frame + sizeof h, sizeof sg);
  if (h.magic != KS_INIT_FRAME_MAGIC || h.type != KS_INIT_SIGNAL || h.len != sizeof sg ||
      sg.reserved != 0 || sg.signo < 1 || sg.signo > 64)
    return -1;
  return sg.signo;
}
