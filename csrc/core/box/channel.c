#include "channel.h"

#include <string.h>

#define KS__HDR sizeof(struct ks_init_frame_header)

void ks_chan_init(struct ks_chan_reader *r) { memset(r, 0, sizeof *r); }

static bool ks__report_valid(const struct ks_init_report *rep) {
  if ((rep->flags & ~KS_INIT_CORE_DUMPED) != 0 || rep->reserved != 0)
    return false;
  if (rep->end == KS_INIT_EXITED)
    return rep->value >= 0 && rep->value <= 255 && rep->flags == 0;
  if (rep->end == KS_INIT_SIGNALED)
    return rep->value >= 1 && rep->value <= 64;
  return false;
}

/* The body length a frame of this type must have, or -1: not one the init
 * sends. */
static long ks__body_len(uint32_t type) {
  switch (type) {
  case KS_INIT_TAKEN:
  case KS_INIT_ATTACH:
  case KS_INIT_STARTED:
    return 0;
  case KS_INIT_REPORT:
    return (long) sizeof(struct ks_init_report);
  default:
    return -1;
  }
}

size_t ks_chan_feed(struct ks_chan_reader *r, const void *data, size_t n,
                    enum ks_chan_event *ev) {
  struct ks_init_frame_header h;
  size_t want;
  size_t take;
  long body;

  *ev = KS_CHAN_NONE;
  if (r->state != KS_CHAN_READING)
    return n;
  if (r->len < KS__HDR) {
    want = KS__HDR;
  } else {
    memcpy(&h, r->buf, sizeof h);
    want = KS__HDR + h.len;
  }
  take = want - r->len < n ? want - r->len : n;
  memcpy(r->buf + r->len, data, take);
  r->len += take;
  if (r->len < KS__HDR)
    return take;
  memcpy(&h, r->buf, sizeof h);
  body = ks__body_len(h.type);
  if (h.magic != KS_INIT_FRAME_MAGIC || body < 0 || h.len != (uint32_t) body) {
    r->state = KS_CHAN_BAD;
    return n;
  }
  if (r->len < KS__HDR + h.len) {
    /* The header just completed: the body may follow in these bytes. */
    if (take < n)
      return take + ks_chan_feed(r, (const char *) data + take, n - take, ev);
    return take;
  }
  r->len = 0;
  switch (h.type) {
  case KS_INIT_TAKEN:
    *ev = KS_CHAN_TAKEN;
    break;
  case KS_INIT_ATTACH:
    *ev = KS_CHAN_ATTACH;
    break;
  case KS_INIT_STARTED:
    *ev = KS_CHAN_STARTED;
    break;
  default:
    memcpy(&r->rep, r->buf + KS__HDR, sizeof r->rep);
    if (!ks__report_valid(&r->rep)) {
      r->state = KS_CHAN_BAD;
      return n;
    }
    r->state = KS_CHAN_DONE;
    *ev = KS_CHAN_REPORT;
    break;
  }
  return take;
}

int ks_chan_exit_code(const struct ks_init_report *rep) {
  return rep->end == KS_INIT_SIGNALED ? 128 + rep->value : rep->value;
}
