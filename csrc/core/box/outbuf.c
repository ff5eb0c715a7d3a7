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
}

bool ks_outbuf_is_ascii(const struct ks_outbuf *b) {
  const unsigned char *p = (const unsigned char *) b->data;
  const uint64_t high = 0x8080808080808080ULL;
  size_t n = b->len;
  size_t i = 0;

  /* OR whole 4 KiB blocks (the compiler vectorises it), test once a block:
   * this runs at memory bandwidth over a 64 MiB capture. */
  for (; i + 4096 <= n; i += 4096) {
    uint64_t acc = 0;
    for (size_t j = 0; j < 4096; j += 8) {
      uint64_t w;
      memcpy(&w, p + i + j, sizeof w);
      acc |= w;
    }
    if (acc & high)
      return false;
  }
  for (; i < n; i++) {
    if (p[i] & 0x80)
      return false;
  }
  return true;
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
  return p;
}

void ks_outbuf_free(struct ks_outbuf *b) {
  free(b->data);
  b->data = NULL;
  b->len = 0;
  b->alloc = 0;
}
