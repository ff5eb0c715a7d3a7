#include "interp.h"

#include <stdlib.h>
#include <string.h>

#define KS__HDR sizeof(struct ks_ip_header)

void ks_ip_reader_init(struct ks_ip_reader *r, size_t max) {
  memset(r, 0, sizeof *r);
  r->max = max;
}

void ks_ip_reader_free(struct ks_ip_reader *r) {
  free(r->buf);
  r->buf = NULL;
  r->len = r->cap = 0;
  r->partial = r->skipping = false;
}

long ks_ip_fixed_len(uint16_t type) {
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
    return -2; /* not a type the box sends */
  }
}

void ks_ip_header_set(struct ks_ip_header *h, uint16_t type, uint16_t flags, uint32_t id,
                      uint32_t len) {
  h->magic = KS_IP_MAGIC;
  h->type = type;
  h->flags = flags;
  h->id = id;
  h->len = len;
}

static bool ks__append(struct ks_ip_reader *r, const unsigned char *p, size_t n) {
  if (n == 0)
    return true; /* (and no arithmetic on a buffer not yet allocated) */
  if (r->len + n > r->cap) {
    size_t cap = r->cap ? r->cap : 4096;
    unsigned char *b;
    while (cap < r->len + n)
      cap *= 2;
    b = realloc(r->buf, cap);
    if (b == NULL)
      return false;
    r->buf = b;
    r->cap = cap;
  }
  memcpy(r->buf + r->len, p, n);
  r->len += n;
  return true;
}

enum ks_ip_verdict ks_ip_feed(struct ks_ip_reader *r, const void *rec, size_t n,
                              struct ks_ip_msg *msg) {
  const unsigned char *p = rec;
  struct ks_ip_header h;
  long fixed;
  bool more;

  memset(msg, 0, sizeof *msg);
  if (n < KS__HDR || n > KS_IP_RECORD_MAX)
    return KS_IP_BAD;
  memcpy(&h, p, sizeof h);
  if (h.magic != KS_IP_MAGIC || h.len != n - KS__HDR || (h.flags & ~KS_IP_MORE) != 0)
    return KS_IP_BAD;
  fixed = ks_ip_fixed_len(h.type);
  more = (h.flags & KS_IP_MORE) != 0;
  if (fixed == -2 || (fixed >= 0 && (more || h.len != (uint32_t) fixed)))
    return KS_IP_BAD;
  if (fixed >= 0) {
    /* One record: it may come between another process's records. */
    msg->type = h.type;
    msg->id = h.id;
    msg->body = p + KS__HDR;
    msg->len = h.len;
    return KS_IP_MESSAGE;
  }
  /* A RESULT, whole or in parts. A record that does not go on the message
   * being assembled starts a new one: the old one's sender died mid-way. */
  if (r->partial && (r->type != h.type || r->id != h.id)) {
    r->partial = r->skipping = false;
    r->len = 0;
  }
  if (!r->partial) {
    r->partial = true;
    r->skipping = false;
    r->type = h.type;
    r->id = h.id;
    r->len = 0;
  }
  if (!r->skipping) {
    if (r->len + h.len > r->max) {
      r->skipping = true; /* over the budget: dropped whole */
      r->len = 0;
    } else if (!ks__append(r, p + KS__HDR, h.len)) {
      r->skipping = true; /* no memory for it: the same */
      r->len = 0;
    }
  }
  if (more)
    return KS_IP_NEED_MORE;
  r->partial = false;
  msg->type = h.type;
  msg->id = h.id;
  if (r->skipping) {
    r->skipping = false;
    return KS_IP_DROPPED;
  }
  msg->body = r->buf != NULL ? r->buf : p + KS__HDR;
  msg->len = r->len;
  r->len = 0;
  return KS_IP_MESSAGE;
}

char *ks_ip_frame(uint16_t type, uint32_t id, const void *head, size_t head_len,
                  const void *body, size_t body_len, size_t *ret_len) {
  size_t total = head_len + body_len;
  size_t records = total == 0 ? 1 : (total + KS_IP_BODY_MAX - 1) / KS_IP_BODY_MAX;
  size_t out_len = records * KS__HDR + total;
  char *out = malloc(out_len);
  char *w = out;
  size_t done = 0;

  if (out == NULL)
    return NULL;
  for (size_t i = 0; i < records; i++) {
    size_t n = total - done < KS_IP_BODY_MAX ? total - done : KS_IP_BODY_MAX;
    struct ks_ip_header h;
    ks_ip_header_set(&h, type, i + 1 < records ? KS_IP_MORE : 0, id, (uint32_t) n);
    memcpy(w, &h, sizeof h);
    w += sizeof h;
    for (size_t left = n; left > 0;) {
      /* From the head while in it, then from the body. */
      const char *src = done < head_len ? (const char *) head + done
                                        : (const char *) body + (done - head_len);
      size_t avail = done < head_len ? head_len - done : total - done;
      size_t k = avail < left ? avail : left;
      memcpy(w, src, k);
      w += k;
      done += k;
      left -= k;
    }
  }
  *ret_len = out_len;
  return out;
}

size_t ks_ip_record_size(const void *p) {
  struct ks_ip_header h;
  memcpy(&h, p, sizeof h);
  return KS__HDR + h.len;
}
