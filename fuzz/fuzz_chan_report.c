/* libFuzzer target: the host's reader of ks-init's frames (channel.c), fed
 * the stream in the chunks the input splits it into.
 *
 * The box controls the init's environment, so the host treats the channel's
 * bytes as untrusted even though only the init can write them.
 * Properties:
 *   - every feed takes at least one byte of what it is given (the caller's
 *     loop always ends), and at most what it is given;
 *   - the state never goes back: READING -> DONE or BAD, and once there it
 *     stays whatever follows, taking everything and completing nothing;
 *   - TAKEN, ATTACH and STARTED complete as their frames end, in order,
 *     any number of times before the report;
 *   - REPORT is completed exactly once, exactly when the state becomes DONE,
 *     and only for a report the rules accept (checked here against the rules
 *     written out independently, on the frame's own bytes);
 *   - for DONE, ks_chan_exit_code is the exit code (0-255) or 128+signal
 *     (129-192);
 *   - chunking never changes the outcome: the events and the final state of
 *     a one-shot feed agree. */
#include "fuzz_common.h"

#include <string.h>

#define CHECK(c) KS_FUZZ_CHECK(c, "%s", #c)

#include "box/channel.h"

#define HDR sizeof(struct ks_init_frame_header)

static bool ref_report_valid(const uint8_t *p) {
  struct ks_init_report r;
  memcpy(&r, p, sizeof r);
  if (r.reserved != 0)
    return false;
  if (r.end == KS_INIT_EXITED)
    return r.flags == 0 && r.value >= 0 && r.value <= 255;
  if (r.end == KS_INIT_SIGNALED)
    return (r.flags & ~1u) == 0 && r.value >= 1 && r.value <= 64;
  return false;
}

struct outcome {
  enum ks_chan_state state;
  unsigned events[5];
  char seq[64]; /* the first events in order */
  size_t nseq;
};

static void run(const uint8_t *data, size_t size, size_t step, struct outcome *o) {
  struct ks_chan_reader r;
  enum ks_chan_state prev = KS_CHAN_READING;
  size_t i = 0;

  memset(o, 0, sizeof *o);
  ks_chan_init(&r);
  while (i < size) {
    size_t n = size - i < step ? size - i : step;
    size_t off = 0;
    while (off < n) {
      enum ks_chan_event ev;
      size_t took = ks_chan_feed(&r, data + i + off, n - off, &ev);
      CHECK(took >= 1 && took <= n - off);
      CHECK(prev == KS_CHAN_READING || (r.state == prev && ev == KS_CHAN_NONE));
      CHECK((ev == KS_CHAN_REPORT) == (prev == KS_CHAN_READING && r.state == KS_CHAN_DONE));
      if (ev != KS_CHAN_NONE) {
        o->events[ev]++;
        if (o->nseq < sizeof o->seq)
          o->seq[o->nseq++] = (char) ev;
      }
      if (r.state == KS_CHAN_DONE) {
        int code = ks_chan_exit_code(&r.rep);
        CHECK(r.rep.end == KS_INIT_EXITED ? code >= 0 && code <= 255 : code >= 129 && code <= 192);
      }
      prev = r.state;
      off += took;
    }
    i += n;
  }
  o->state = r.state;
}

/* The outcome the protocol gives, frame by frame, written out on its own. */
static void reference(const uint8_t *p, size_t size, struct outcome *o) {
  size_t at = 0;
  memset(o, 0, sizeof *o);
  o->state = KS_CHAN_READING;
  while (size - at >= HDR) {
    struct ks_init_frame_header h;
    size_t want;
    memcpy(&h, p + at, sizeof h);
    int ev;
    want = h.type == KS_INIT_REPORT ? sizeof(struct ks_init_report) : 0;
    ev = h.type == KS_INIT_TAKEN     ? KS_CHAN_TAKEN
         : h.type == KS_INIT_ATTACH  ? KS_CHAN_ATTACH
         : h.type == KS_INIT_STARTED ? KS_CHAN_STARTED
         : h.type == KS_INIT_REPORT  ? KS_CHAN_REPORT
                                     : -1;
    if (h.magic != KS_INIT_FRAME_MAGIC || ev < 0 || h.len != want) {
      o->state = KS_CHAN_BAD;
      return;
    }
    if (size - at - HDR < want)
      return; /* an unfinished frame */
    if (h.type == KS_INIT_REPORT && !ref_report_valid(p + at + HDR)) {
      o->state = KS_CHAN_BAD;
      return;
    }
    o->events[ev]++;
    if (o->nseq < sizeof o->seq)
      o->seq[o->nseq++] = (char) ev;
    at += HDR + want;
    if (h.type == KS_INIT_REPORT) {
      o->state = KS_CHAN_DONE;
      return;
    }
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct outcome chunked, whole, ref;

  if (size < 1)
    return 0;
  /* The first byte chooses the chunk size, the rest is the stream. */
  size_t step = (size_t) (data[0] % 17) + 1;
  data++;
  size--;
  run(data, size, step, &chunked);
  run(data, size, size ? size : 1, &whole);
  reference(data, size, &ref);
  CHECK(chunked.state == whole.state && chunked.state == ref.state);
  CHECK(memcmp(chunked.events, ref.events, sizeof ref.events) == 0);
  CHECK(memcmp(whole.events, ref.events, sizeof ref.events) == 0);
  CHECK(chunked.nseq == ref.nseq && memcmp(chunked.seq, ref.seq, ref.nseq) == 0);
  CHECK(ref.events[KS_CHAN_REPORT] <= 1);
  return 0;
}
