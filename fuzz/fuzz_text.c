/* libFuzzer target: the UTF-8 decoder that turns captured output into
 * JavaScript string storage off the JS thread (ks_text_from_utf8, text.c).
 * The box controls every byte it prints.
 *
 * Properties, against a reference decoder written here as the literal state
 * machine of the WHATWG Encoding standard (section "UTF-8 decoder", with
 * the "prepend byte to stream" step), independently of text.c:
 *   - the storage is Latin-1 exactly when every decoded code point is below
 *     U+0100, and then holds those code points byte for byte;
 *   - otherwise it is UTF-16 holding the code points, astral ones as
 *     surrogate pairs;
 *   - ASan/UBSan: no read or write outside the input and output blocks
 *     (the Latin-1 case decodes in place). */
#include "fuzz_common.h"

#include "box/text.h"

/* The reference: code points of in[0..n) into cps; returns their count. */
static size_t ref_decode(const uint8_t *in, size_t n, uint32_t *cps) {
  uint32_t cp = 0;
  unsigned seen = 0, needed = 0;
  uint8_t lower = 0x80, upper = 0xBF;
  size_t out = 0;
  size_t i = 0;

  for (;;) {
    if (i == n) {
      if (needed != 0)
        cps[out++] = 0xFFFD;
      return out;
    }
    uint8_t b = in[i++];
    if (needed == 0) {
      if (b <= 0x7F) {
        cps[out++] = b;
      } else if (b >= 0xC2 && b <= 0xDF) {
        needed = 1;
        cp = b & 0x1F;
      } else if (b >= 0xE0 && b <= 0xEF) {
        if (b == 0xE0)
          lower = 0xA0;
        if (b == 0xED)
          upper = 0x9F;
        needed = 2;
        cp = b & 0xF;
      } else if (b >= 0xF0 && b <= 0xF4) {
        if (b == 0xF0)
          lower = 0x90;
        if (b == 0xF4)
          upper = 0x8F;
        needed = 3;
        cp = b & 0x7;
      } else {
        cps[out++] = 0xFFFD;
      }
      continue;
    }
    if (b < lower || b > upper) {
      cp = 0;
      needed = seen = 0;
      lower = 0x80;
      upper = 0xBF;
      i--; /* prepend the byte to the stream */
      cps[out++] = 0xFFFD;
      continue;
    }
    lower = 0x80;
    upper = 0xBF;
    cp = (cp << 6) | (b & 0x3F);
    if (++seen == needed) {
      cps[out++] = cp;
      cp = 0;
      needed = seen = 0;
    }
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uint32_t *cps = malloc((size + 1) * sizeof *cps);
  char *bytes = malloc(size ? size : 1);
  struct ks_text t;
  size_t n;
  bool wide = false;
  size_t units = 0;

  if (cps == NULL || bytes == NULL)
    ks_fuzz_fail("harness: malloc");
  memcpy(bytes, data, size);
  n = ref_decode(data, size, cps);
  for (size_t k = 0; k < n; k++) {
    wide |= cps[k] > 0xFF;
    units += cps[k] >= 0x10000 ? 2 : 1;
  }
  KS_FUZZ_CHECK(ks_text_from_utf8(bytes, size, &t) == 0, "decode failed");
  if (!wide) {
    const uint8_t *l = t.data;
    KS_FUZZ_CHECK(t.kind == KS_TEXT_LATIN1, "Latin-1 text came out as UTF-16");
    KS_FUZZ_CHECK(t.length == n, "Latin-1 length %zu, want %zu", t.length, n);
    for (size_t k = 0; k < n; k++)
      KS_FUZZ_CHECK(l[k] == cps[k], "Latin-1 char %zu is %u, want U+%04X", k, l[k], cps[k]);
  } else {
    const uint16_t *u = t.data;
    size_t j = 0;
    KS_FUZZ_CHECK(t.kind == KS_TEXT_UTF16, "wide text came out as Latin-1");
    KS_FUZZ_CHECK(t.length == units, "UTF-16 length %zu, want %zu", t.length, units);
    for (size_t k = 0; k < n; k++) {
      if (cps[k] >= 0x10000) {
        uint32_t v = cps[k] - 0x10000;
        KS_FUZZ_CHECK(u[j] == (0xD800 | (v >> 10)) && u[j + 1] == (0xDC00 | (v & 0x3FF)),
                      "surrogate pair at unit %zu for U+%X", j, cps[k]);
        j += 2;
      } else {
        KS_FUZZ_CHECK(u[j] == cps[k], "unit %zu is %04X, want %04X", j, u[j], cps[k]);
        j++;
      }
    }
  }
  free(t.data);
  free(cps);
  return 0;
}
