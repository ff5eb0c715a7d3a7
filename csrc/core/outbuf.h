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
  bool non_ascii;      /* a kept byte is >= 0x80 */
};

void ks_outbuf_init(struct ks_outbuf *b, size_t cap);

/* Makes room for the next read: on success *ret_room > 0 bytes are writable
 * at data + len. Returns 0, -ENOSPC when the cap is reached, or -ENOMEM. */
int ks_outbuf_reserve(struct ks_outbuf *b, size_t want, size_t *ret_room);

/* Keeps the n bytes just read at data + len. Also notes whether they are
 * all ASCII, while they are still in the cache: the JS thread can then make
 * the result string without reading 64 MiB again. */
void ks_outbuf_commit(struct ks_outbuf *b, size_t n);

static inline bool ks_outbuf_is_ascii(const struct ks_outbuf *b) { return !b->non_ascii; }

static inline bool ks_outbuf_full(const struct ks_outbuf *b) { return b->len >= b->cap; }

/* Gives the bytes to the caller (free() them); the buffer becomes empty
 * (and ASCII again). */
char *ks_outbuf_take(struct ks_outbuf *b, size_t *ret_len);

void ks_outbuf_free(struct ks_outbuf *b);

#endif
