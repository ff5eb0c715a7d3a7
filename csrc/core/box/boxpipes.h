/* A box's descriptors: the pipes kern and the box write into, and the
 * init's channel. Made at each cold spawn (box.c ks__spawn_fds). */
#ifndef KS_CORE_BOX_BOXPIPES_H
#define KS_CORE_BOX_BOXPIPES_H

#include "../err.h"

/* stdout, stderr, started: the read ends nonblocking, the write ends as a
 * box writes them (blocking); all close-on-exec. */
#define KS_BOX_PIPES 3

/* A pipe whose read end (ours) is nonblocking; both ends close-on-exec. */
int ks_pipe_nonblocking_read(int fds[2], struct ks_err *err);

/* A socketpair for an init's channel: fds[0] ours, nonblocking. */
int ks_channel_pair(int fds[2], struct ks_err *err);

#endif
