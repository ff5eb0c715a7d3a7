/* The host's end of a box's control channel (csrc/init/protocol.h): the
 * reader of ks-init's report. Plain C, no I/O: the supervisor feeds it what
 * it reads, and the fuzzer feeds it anything. */
#ifndef KS_CORE_CHANNEL_H
#define KS_CORE_CHANNEL_H

#include <stdbool.h>
#include <stddef.h>

#include "../../init/protocol.h"

enum ks_chan_state {
  KS_CHAN_READING = 0, /* no whole report yet */
  KS_CHAN_DONE = 1,    /* rep holds a valid report; later bytes are ignored */
  KS_CHAN_BAD = 2,     /* not a report: the host settles by kern's exit instead */
};

struct ks_chan_reader {
  enum ks_chan_state state;
  size_t len;
  unsigned char buf[sizeof(struct ks_init_report)];
  struct ks_init_report rep;
};

void ks_chan_init(struct ks_chan_reader *r);

/* Takes n more bytes of the stream; returns the state after them. */
enum ks_chan_state ks_chan_feed(struct ks_chan_reader *r, const void *data, size_t n);

/* The exit code kern reports for a workload that ended as rep says: its
 * code, or 128+N for signal N. */
int ks_chan_exit_code(const struct ks_init_report *rep);

#endif
