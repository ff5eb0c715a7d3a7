/* Descriptors on a message (fdpass.h). */
#define _GNU_SOURCE
#include <string.h>

#include "fdpass.h"

void ks__attach_fds(struct msghdr *msg, union ks__fd_control *control, const int *fds,
                    int nfds) {
  struct cmsghdr *c;
  memset(control, 0, sizeof *control);
  msg->msg_control = control->buf;
  msg->msg_controllen = CMSG_SPACE((size_t) nfds * sizeof(int));
  c = CMSG_FIRSTHDR(msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN((size_t) nfds * sizeof(int));
  memcpy(CMSG_DATA(c), fds, (size_t) nfds * sizeof(int));
}
