/* A box's descriptors made ahead: the pipes and the init's channel that the
 * supervisor's next spawn needs, made while the thread is idle (kern's own
 * start takes ~6 ms) rather than between a call's submission and its
 * clone, where they cost ~30-40 us of every cold call. Supervisor thread
 * only. */
#ifndef KS_CORE_BOX_KIT_H
#define KS_CORE_BOX_KIT_H

#include <stdbool.h>

#include "../err.h"

/* stdout, stderr, started: the read ends nonblocking, the write ends as a
 * box writes them (blocking); all close-on-exec. */
#define KS_KIT_PIPES 3

/* Every descriptor a ready kit holds. */
#define KS_KIT_FDS (2 * KS_KIT_PIPES + 2)

struct ks_box_kit {
  int pipes[KS_KIT_PIPES][2];
  int chan[2]; /* a socketpair: [0] ours (nonblocking), [1] kern's stdin */
};

/* A kit holding nothing. */
void ks_kit_init(struct ks_box_kit *kit);

/* Whether the kit holds its descriptors. */
bool ks_kit_ready(const struct ks_box_kit *kit);

/* Makes the descriptors of an empty kit. On failure it stays empty. */
int ks_kit_make(struct ks_box_kit *kit, struct ks_err *err);

/* Moves the pipes (and, if chan is not NULL, the channel) out of a ready
 * kit into the caller's arrays. The kit holds what is left (an unused
 * channel stays for the next box). */
void ks_kit_take(struct ks_box_kit *kit, int pipes[KS_KIT_PIPES][2], int chan[2]);

/* The kit's descriptors, -1 where it holds none. */
void ks_kit_fds(const struct ks_box_kit *kit, int out[KS_KIT_FDS]);

/* Closes whatever the kit holds. */
void ks_kit_close(struct ks_box_kit *kit);

/* A pipe whose read end (ours) is nonblocking; both ends close-on-exec. */
int ks_pipe_nonblocking_read(int fds[2], struct ks_err *err);

/* A socketpair for an init's channel: fds[0] ours, nonblocking. */
int ks_channel_pair(int fds[2], struct ks_err *err);

#endif
