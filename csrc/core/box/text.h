/* Captured output as JavaScript string storage, made off the JS thread.
 *
 * V8 keeps a string either as one byte per character (Latin-1) or as UTF-16.
 * Decoding 64 MiB of UTF-8 into either costs the JS thread 300-500 ms, so
 * the decoding happens here, on the thread that finishes the run, and the JS
 * thread only wraps the result as an external string.
 *
 * The decoding is the WHATWG UTF-8 decoder with replacement, which is what
 * V8's String::NewFromUtf8 and Buffer#toString("utf8") implement: each
 * maximal subpart of an ill-formed sequence becomes one U+FFFD. */
#ifndef KS_CORE_TEXT_H
#define KS_CORE_TEXT_H

#include <stddef.h>

enum ks_text_kind {
  KS_TEXT_LATIN1, /* data: one byte per character */
  KS_TEXT_UTF16,  /* data: native-endian UTF-16 code units */
};

struct ks_text {
  enum ks_text_kind kind;
  void *data;    /* malloc()ed; free() it */
  size_t length; /* in characters (Latin-1) or code units (UTF-16) */
};

/* Decodes len bytes of UTF-8 at bytes, a malloc()ed block that this call
 * takes over on success. If every character is below U+0100 the result is
 * Latin-1, decoded in place (bytes becomes out->data); otherwise it is
 * UTF-16 in a new block and bytes is freed. Returns 0, or -ENOMEM (then
 * bytes is untouched and still the caller's). len 0 gives an empty Latin-1
 * text over bytes. */
int ks_text_from_utf8(char *bytes, size_t len, struct ks_text *out);

#endif
