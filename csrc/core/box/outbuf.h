/* A byte buffer that keeps at most `cap` bytes and counts what it dropped.
 *
 * The supervisor reads a box's pipe straight into the free tail of this
 * buffer while under the cap, and discards past it: the pipe is always
 * drained, so a flooding box never blocks and the host never holds more than
 * `cap` bytes of it. */
#ifndef KS_CORE_OUTBUF_H
#define KS_CORE_OUTBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ks_outbuf {
  char *data;
  size_t len;
  size_t alloc;
  size_t cap;
  uint64_t discarded; /* bytes read past the cap */
};

void ks_outbuf_init(struct ks_outbuf *b, size_t cap);

/* Makes room for the next read: on success *ret_room > 0 bytes are writable
 * at data + len. Returns 0, -ENOSPC when the cap is reached, or -ENOMEM. */
int ks_outbuf_reserve(struct ks_outbuf *b, size_t want, size_t *ret_room);

static inline void ks_outbuf_commit(struct ks_outbuf *b, size_t n) { b->len += n; }

/* Whether every kept byte is ASCII. One pass over the bytes: call it off the
 * supervisor and JS threads (the scan thread does, when a run ends). */
bool ks_outbuf_is_ascii(const struct ks_outbuf *b);

/* Gives the bytes to the caller (free() them); the buffer becomes empty. */
char *ks_outbuf_take(struct ks_outbuf *b, size_t *ret_len);

void ks_outbuf_free(struct ks_outbuf *b);

#endif
