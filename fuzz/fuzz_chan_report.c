/* libFuzzer target: the host's reader of ks-init's report (channel.c), fed
 * the stream in the chunks the input splits it into.
 *
 * The box controls the init's environment, so the host treats the channel's
 * bytes as untrusted even though only the init can write them.
 * Properties:
 *   - the state never goes back: READING -> DONE or BAD, and once there it
 *     stays whatever follows;
 *   - DONE exactly when the first 40 bytes are a report the reader's rules
 *     accept (checked here against the rules written out independently);
 *   - for DONE, ks_chan_exit_code is the exit code (0-255) or 128+signal
 *     (129-192);
 *   - chunking never changes the outcome (a one-shot feed agrees). */
#include "fuzz_common.h"

#include <string.h>

#define CHECK(c) KS_FUZZ_CHECK(c, "%s", #c)

#include "box/channel.h"

static bool ref_valid(const uint8_t *p) {
  struct ks_init_report r;
  memcpy(&r, p, sizeof r);
  if (r.magic != KS_INIT_REPORT_MAGIC)
    return false;
  if (r.end == KS_INIT_EXITED)
    return r.flags == 0 && r.value >= 0 && r.value <= 255;
  if (r.end == KS_INIT_SIGNALED)
    return (r.flags & ~1u) == 0 && r.value >= 1 && r.value <= 64;
  return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct ks_chan_reader chunked, whole;
  enum ks_chan_state prev = KS_CHAN_READING;
  size_t i = 0;

  if (size < 1)
    return 0;
  /* The first byte chooses the chunk size, the rest is the stream. */
  size_t step = (size_t) (data[0] % 17) + 1;
  data++;
  size--;
  ks_chan_init(&chunked);
  while (i < size) {
    size_t n = size - i < step ? size - i : step;
    enum ks_chan_state st = ks_chan_feed(&chunked, data + i, n);
    CHECK(prev == KS_CHAN_READING || st == prev);
    prev = st;
    i += n;
  }
  ks_chan_init(&whole);
  (void) ks_chan_feed(&whole, data, size);
  CHECK(whole.state == chunked.state);
  if (size < sizeof(struct ks_init_report)) {
    CHECK(chunked.state == KS_CHAN_READING);
    return 0;
  }
  CHECK((chunked.state == KS_CHAN_DONE) == ref_valid(data));
  CHECK(chunked.state != KS_CHAN_READING);
  if (chunked.state == KS_CHAN_DONE) {
    int code = ks_chan_exit_code(&chunked.rep);
    CHECK(chunked.rep.end == KS_INIT_EXITED ? code >= 0 && code <= 255
                                                    : code >= 129 && code <= 192);
  }
  return 0;
}
