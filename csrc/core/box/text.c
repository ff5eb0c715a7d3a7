#include "text.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define KS__REPLACEMENT 0xFFFDu

/* One step of the WHATWG decoder: the code point starting at p[*i], or
 * U+FFFD for a maximal ill-formed subpart. A byte that cannot continue the
 * sequence is not consumed: it starts the next character. */
static inline uint32_t ks__next(const uint8_t *p, size_t n, size_t *i) {
  uint8_t b = p[(*i)++];
  uint8_t lo = 0x80;
  uint8_t hi = 0xBF;
  uint32_t cp;
  int need;

  if (b < 0x80)
    return b;
  if (b >= 0xC2 && b <= 0xDF) {
    need = 1;
    cp = b & 0x1Fu;
  } else if (b >= 0xE0 && b <= 0xEF) {
    if (b == 0xE0)
      lo = 0xA0; /* no overlong forms */
    if (b == 0xED)
      hi = 0x9F; /* no surrogates */
    need = 2;
    cp = b & 0x0Fu;
  } else if (b >= 0xF0 && b <= 0xF4) {
    if (b == 0xF0)
      lo = 0x90;
    if (b == 0xF4)
      hi = 0x8F; /* nothing past U+10FFFF */
    need = 3;
    cp = b & 0x07u;
  } else {
    return KS__REPLACEMENT;
  }
  for (; need > 0; need--) {
    uint8_t c;
    if (*i >= n)
      return KS__REPLACEMENT; /* truncated at the end: one U+FFFD */
    c = p[*i];
    if (c < lo || c > hi)
      return KS__REPLACEMENT;
    lo = 0x80;
    hi = 0xBF;
    cp = (cp << 6) | (c & 0x3Fu);
    (*i)++;
  }
  return cp;
}

/* The length of the ASCII run at p (whole words first). */
static inline size_t ks__ascii_run(const uint8_t *p, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, p + i, sizeof w);
    if (w & 0x8080808080808080ULL)
      break;
  }
  while (i < n && p[i] < 0x80)
    i++;
  return i;
}

int ks_text_from_utf8(char *bytes, size_t len, struct ks_text *out) {
  const uint8_t *p = (const uint8_t *) bytes;
  size_t units = 0;
  bool wide = false;
  size_t i = 0;

  /* Pass 1: the storage V8 would pick, and its size. */
  while (i < len) {
    size_t run = ks__ascii_run(p + i, len - i);
    uint32_t cp;
    i += run;
    units += run;
    if (i >= len)
      break;
    cp = ks__next(p, len, &i);
    units += cp >= 0x10000u ? 2 : 1;
    if (cp > 0xFFu)
      wide = true;
  }

  if (!wide) {
    /* In place: a character below U+0100 never takes fewer bytes than it
     * did in UTF-8, so the write position never passes the read position. */
    uint8_t *w = (uint8_t *) bytes;
    size_t j = 0;
    i = 0;
    while (i < len) {
      size_t run = ks__ascii_run(p + i, len - i);
      memmove(w + j, p + i, run);
      i += run;
      j += run;
      if (i < len)
        w[j++] = (uint8_t) ks__next(p, len, &i);
    }
    out->kind = KS_TEXT_LATIN1;
    out->data = bytes;
    out->length = j;
    return 0;
  }

  uint16_t *u = malloc(units * sizeof *u);
  size_t j = 0;
  if (u == NULL)
    return -ENOMEM;
  i = 0;
  while (i < len) {
    size_t run = ks__ascii_run(p + i, len - i);
    for (size_t k = 0; k < run; k++)
      u[j++] = p[i + k];
    i += run;
    if (i >= len)
      break;
    uint32_t cp = ks__next(p, len, &i);
    if (cp >= 0x10000u) {
      cp -= 0x10000u;
      u[j++] = (uint16_t) (0xD800u | (cp >> 10));
      u[j++] = (uint16_t) (0xDC00u | (cp & 0x3FFu));
    } else {
      u[j++] = (uint16_t) cp;
    }
  }
  free(bytes);
  out->kind = KS_TEXT_UTF16;
  out->data = u;
  out->length = j;
  return 0;
}
