/* libFuzzer target: the host's reader of the interpreter protocol
 * (interp.c), fed a sequence of records as a box (hostile code sharing the
 * interpreter's memory) could send them.
 *
 * Input: a 2-byte budget (max), then records, each a 2-byte length (taken
 * modulo KS_IP_RECORD_MAX + 32, so oversized and short records occur) and
 * that many bytes.
 * Properties:
 *   - no crash, no leak, no read past a record (ASan);
 *   - a one-record message (TAKEN, DONE, READY, FORKED, ENDED) comes out
 *     exactly as sent, with the body size its type fixes, and never disturbs
 *     a multi-record RESULT being assembled;
 *   - a RESULT comes out whole (its records' bodies joined in order) when it
 *     fits max, and is DROPPED otherwise; never a body longer than max;
 *   - anything that is not the protocol is BAD, and BAD exactly then
 *     (checked against the rules written out independently). */
#include "fuzz_common.h"

#include <string.h>

#define CHECK(c) KS_FUZZ_CHECK(c, "%s", #c)

#include "box/interp.h"

#define HDR sizeof(struct ks_ip_header)

static long ref_fixed(uint16_t type) {
  switch (type) {
  case KS_IP_TAKEN:
  case KS_IP_FORKED:
    return 0;
  case KS_IP_DONE:
    return (long) sizeof(struct ks_ip_done);
  case KS_IP_READY:
    return (long) sizeof(struct ks_ip_ready);
  case KS_IP_ENDED:
    return (long) sizeof(struct ks_ip_ended);
  case KS_IP_RESULT:
    return -1;
  default:
    return -2;
  }
}

static bool ref_bad(const uint8_t *p, size_t n) {
  struct ks_ip_header h;
  long fixed;
  if (n < HDR || n > KS_IP_RECORD_MAX)
    return true;
  memcpy(&h, p, sizeof h);
  if (h.magic != KS_IP_MAGIC || h.len != n - HDR || (h.flags & ~KS_IP_MORE))
    return true;
  fixed = ref_fixed(h.type);
  return fixed == -2 || (fixed >= 0 && ((h.flags & KS_IP_MORE) || h.len != (uint32_t) fixed));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct ks_ip_reader r;
  /* The RESULT being assembled, as the reference sees it. */
  unsigned char *acc = NULL;
  size_t acc_len = 0;
  bool acc_on = false, acc_over = false;
  uint32_t acc_id = 0;
  size_t max;

  if (size < 2)
    return 0;
  max = (size_t) data[0] | (size_t) data[1] << 8;
  data += 2;
  size -= 2;
  ks_ip_reader_init(&r, max);
  while (size >= 2) {
    size_t n = ((size_t) data[0] | (size_t) data[1] << 8) % (KS_IP_RECORD_MAX + 32);
    struct ks_ip_msg m;
    struct ks_ip_header h;
    enum ks_ip_verdict v;
    unsigned char *rec;

    data += 2;
    size -= 2;
    if (n > size)
      n = size;
    /* A copy of its own, so ASan sees any read past the record. */
    rec = malloc(n ? n : 1);
    memcpy(rec, data, n);
    v = ks_ip_feed(&r, rec, n, &m);
    if (ref_bad(rec, n)) {
      CHECK(v == KS_IP_BAD);
    } else {
      memcpy(&h, rec, sizeof h);
      CHECK(v != KS_IP_BAD);
      if (ref_fixed(h.type) >= 0) {
        CHECK(v == KS_IP_MESSAGE && m.type == h.type && m.id == h.id && m.len == h.len);
        CHECK(m.len == 0 || memcmp(m.body, rec + HDR, m.len) == 0);
      } else {
        /* A RESULT record: a new message unless it goes on the current one. */
        if (!acc_on || acc_id != h.id) {
          acc_on = true;
          acc_over = false;
          acc_id = h.id;
          acc_len = 0;
        }
        if (!acc_over && acc_len + h.len > max)
          acc_over = true;
        if (!acc_over) {
          acc = realloc(acc, acc_len + h.len + 1);
          memcpy(acc + acc_len, rec + HDR, h.len);
          acc_len += h.len;
        }
        if (h.flags & KS_IP_MORE) {
          CHECK(v == KS_IP_NEED_MORE);
        } else {
          acc_on = false;
          if (acc_over) {
            CHECK(v == KS_IP_DROPPED && m.id == h.id);
          } else {
            CHECK(v == KS_IP_MESSAGE && m.type == KS_IP_RESULT && m.id == h.id);
            CHECK(m.len == acc_len && m.len <= max);
            CHECK(m.len == 0 || memcmp(m.body, acc, m.len) == 0);
          }
        }
      }
    }
    free(rec);
    data += n;
    size -= n;
  }
  free(acc);
  ks_ip_reader_free(&r);
  return 0;
}
