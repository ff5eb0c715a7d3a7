/* Descriptors on a message (SCM_RIGHTS): shared by the box's channel (a
 * call's stdin pipe on STDIN or SPEC) and the interpreter's socket (a
 * cell's output pipes). */
#ifndef KS_FDPASS_H
#define KS_FDPASS_H

#include <sys/socket.h>

/* Room for the most any message of ours carries: two descriptors. */
union ks__fd_control {
  struct cmsghdr align;
  char buf[CMSG_SPACE(2 * sizeof(int))];
};

/* Points msg's control at control, holding nfds (1 or 2) descriptors. */
void ks__attach_fds(struct msghdr *msg, union ks__fd_control *control, const int *fds,
                    int nfds);

#endif
