/* The host's end of a box's control channel (csrc/init/protocol.h): the
 * reader of ks-init's frames. Plain C, no I/O: the supervisor feeds it what
 * it reads, and the fuzzer feeds it anything. */
#ifndef KS_CORE_CHANNEL_H
#define KS_CORE_CHANNEL_H

#include <stdbool.h>
#include <stddef.h>

#include "../../init/protocol.h"

enum ks_chan_state {
  KS_CHAN_READING = 0, /* between or inside frames */
  KS_CHAN_DONE = 1,    /* rep holds a valid report; later bytes are ignored */
  KS_CHAN_BAD = 2,     /* not the protocol: the host settles by kern's exit instead */
};

/* What the bytes taken by one ks_chan_feed completed. */
enum ks_chan_event {
  KS_CHAN_NONE = 0,
  KS_CHAN_TAKEN = 1,  /* a waiting init took its spec */
  KS_CHAN_ATTACH = 2, /* the descriptor that came with this frame is the
                       * interpreter socket's host end */
  KS_CHAN_REPORT = 3, /* rep is valid; the state is DONE */
  KS_CHAN_STARTED = 4, /* the workload's exec succeeded */
};

struct ks_chan_reader {
  enum ks_chan_state state;
  size_t len; /* bytes of the current frame in buf */
  unsigned char buf[sizeof(struct ks_init_frame_header) + sizeof(struct ks_init_report)];
  struct ks_init_report rep;
};

void ks_chan_init(struct ks_chan_reader *r);

/* Takes bytes of the stream, at most up to the end of the current frame,
 * and says what they completed in *ev. Returns how many it took: feed the
 * rest again. Once DONE or BAD, takes everything and completes nothing. */
size_t ks_chan_feed(struct ks_chan_reader *r, const void *data, size_t n,
                    enum ks_chan_event *ev);

/* The exit code kern reports for a workload that ended as rep says: its
 * code, or 128+N for signal N. */
int ks_chan_exit_code(const struct ks_init_report *rep);

#endif
