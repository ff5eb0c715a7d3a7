#include "outbuf.h"

#include <errno.h>
#include <stdlib.h>

#define KS__OUTBUF_MIN (16 * 1024)

void ks_outbuf_init(struct ks_outbuf *b, size_t cap) {
  b->data = NULL;
  b->len = 0;
  b->alloc = 0;
  b->cap = cap;
  b->discarded = 0;
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
