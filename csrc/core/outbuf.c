#include "outbuf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define KS__OUTBUF_MIN (16 * 1024)

void ks_outbuf_init(struct ks_outbuf *b, size_t cap) {
  b->data = NULL;
  b->len = 0;
  b->alloc = 0;
  b->cap = cap;
  b->discarded = 0;
  b->non_ascii = false;
}

static bool ks__has_high_bit(const unsigned char *p, size_t n) {
  const uint64_t high = 0x8080808080808080ULL;
  uint64_t acc = 0;
  size_t i = 0;
  /* No early exit inside a block: the compiler vectorises the OR. */
  for (; i + 64 <= n; i += 64) {
    for (size_t j = 0; j < 64; j += 8) {
      uint64_t w;
      memcpy(&w, p + i + j, sizeof w);
      acc |= w;
    }
    if (acc & high)
      return true;
  }
  for (; i < n; i++)
    acc |= p[i];
  return (acc & high) != 0; /* the tail's bytes landed in the low byte */
}

void ks_outbuf_commit(struct ks_outbuf *b, size_t n) {
  if (!b->non_ascii && ks__has_high_bit((const unsigned char *) b->data + b->len, n))
    b->non_ascii = true;
  b->len += n;
}

int ks_outbuf_reserve(struct ks_outbuf *b, size_t want, size_t *ret_room) {
  size_t need;
  size_t grow;
  char *p;

  if (b->len >= b->cap)
    return -ENOSPC;
  need = b->len + want;
  if (need > b->cap)
    need = b->cap;
  if (need > b->alloc) {
    /* Doubling keeps the number of reallocations logarithmic; glibc moves
     * large blocks with mremap, so growth never holds two copies. */
    grow = b->alloc ? b->alloc * 2 : KS__OUTBUF_MIN;
    if (grow < need)
      grow = need;
    if (grow > b->cap)
      grow = b->cap;
    p = realloc(b->data, grow);
    if (p == NULL)
      return -ENOMEM;
    b->data = p;
    b->alloc = grow;
  }
  *ret_room = b->alloc - b->len;
  return 0;
}

char *ks_outbuf_take(struct ks_outbuf *b, size_t *ret_len) {
  char *p = b->data;
  *ret_len = b->len;
  b->data = NULL;
  b->len = 0;
  b->alloc = 0;
  b->non_ascii = false;
  return p;
}

void ks_outbuf_free(struct ks_outbuf *b) {
  free(b->data);
  b->data = NULL;
  b->len = 0;
  b->alloc = 0;
}
