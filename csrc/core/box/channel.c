#include "channel.h"

#include <string.h>

void ks_chan_init(struct ks_chan_reader *r) { memset(r, 0, sizeof *r); }

static bool ks__report_valid(const struct ks_init_report *rep) {
  if (rep->magic != KS_INIT_REPORT_MAGIC || (rep->flags & ~KS_INIT_CORE_DUMPED) != 0)
    return false;
  if (rep->end == KS_INIT_EXITED)
    return rep->value >= 0 && rep->value <= 255 && rep->flags == 0;
  if (rep->end == KS_INIT_SIGNALED)
    return rep->value >= 1 && rep->value <= 64;
  return false;
}

enum ks_chan_state ks_chan_feed(struct ks_chan_reader *r, const void *data, size_t n) {
  size_t take;

  if (r->state != KS_CHAN_READING)
    return r->state;
  take = sizeof r->buf - r->len;
  if (take > n)
    take = n;
  memcpy(r->buf + r->len, data, take);
  r->len += take;
  if (r->len < sizeof r->buf)
    return r->state;
  memcpy(&r->rep, r->buf, sizeof r->rep);
  r->state = ks__report_valid(&r->rep) ? KS_CHAN_DONE : KS_CHAN_BAD;
  return r->state;
}

int ks_chan_exit_code(const struct ks_init_report *rep) {
  return rep->end == KS_INIT_SIGNALED ? 128 + rep->value : rep->value;
}
