/* Conversions of the engine's values to JS values: numbers, the captured
 * output as strings (external where Node has them), rich results, changed
 * files and paths. JS thread, except ks_napi_decode_outputs (the engine's
 * threads decode non-ASCII output off the JS thread). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <uchar.h>

#include "convert.h"
#include "util.h"

/* node_api_create_external_string_latin1 and _utf16 (Node >= 20.4, still
 * marked experimental): looked up at run time, so the addon also loads where
 * they are missing (then the JS thread decodes, as napi_create_string_utf8). */
typedef napi_status (*ks__ext_latin1_fn)(napi_env env, char *str, size_t length,
                                          napi_finalize finalize_callback, void *finalize_hint,
                                          napi_value *result, bool *copied);
typedef napi_status (*ks__ext_utf16_fn)(napi_env env, char16_t *str, size_t length,
                                         napi_finalize finalize_callback, void *finalize_hint,
                                         napi_value *result, bool *copied);

static struct {
  _Atomic(ks__ext_latin1_fn) latin1;
  _Atomic(ks__ext_utf16_fn) utf16;
  _Atomic int looked;
} ks__ext;

static void ks__ext_lookup(void) {
  if (!atomic_load(&ks__ext.looked)) {
    atomic_store(&ks__ext.latin1, (ks__ext_latin1_fn) dlsym(
                                      RTLD_DEFAULT, "node_api_create_external_string_latin1"));
    atomic_store(&ks__ext.utf16, (ks__ext_utf16_fn) dlsym(
                                     RTLD_DEFAULT, "node_api_create_external_string_utf16"));
    atomic_store(&ks__ext.looked, 1);
  }
}

/* Non-ASCII output is decoded here, off the JS thread (ASCII needs no
 * decoding: it becomes an external Latin-1 string as it is). Without the
 * external-string functions, or without memory, the JS thread decodes. */
void ks_napi_decode_outputs(struct ks_napi_output *run, struct ks_outbuf out[2]) {
  ks__ext_lookup();
  if (atomic_load(&ks__ext.latin1) == NULL || atomic_load(&ks__ext.utf16) == NULL)
    return;
  for (int s = 0; s < 2; s++) {
    struct ks_outbuf *b = &out[s];
    size_t len;
    char *bytes;
    if (b->len == 0)
      continue;
    if (ks_outbuf_is_ascii(b)) {
      run->ascii[s] = true;
      continue;
    }
    bytes = ks_outbuf_take(b, &len);
    if (ks_text_from_utf8(bytes, len, &run->text[s]) == 0) {
      run->decoded[s] = true;
    } else {
      /* Put the bytes back for the JS thread's own decoding. */
      b->data = bytes;
      b->len = b->alloc = len;
    }
  }
}

static void ks__free_external(napi_env env, void *data, void *hint) {
  (void) env;
  (void) hint;
  free(data);
}

/* The captured bytes of one stream as the result string, decoded as UTF-8
 * (invalid sequences become U+FFFD, as Buffer#toString does). ASCII output,
 * the common case and every flood of it, becomes an external string over
 * the buffer itself (a 64 MiB result costs 64 MiB, not twice that); other
 * output was decoded off this thread and is wrapped the same way. */
napi_value ks_napi_take_output(napi_env env, struct ks_napi_output *run, struct ks_outbuf *b,
                               int stream) {
  napi_value s = NULL;
  size_t len;
  bool ascii = run->ascii[stream]; /* known from ks_napi_decode_outputs: no pass here */
  char *data;
  bool copied = false;

  ks__ext_lookup();
  if (run->decoded[stream]) {
    struct ks_text *t = &run->text[stream];
    napi_status st = t->kind == KS_TEXT_LATIN1
                         ? atomic_load(&ks__ext.latin1)(env, t->data, t->length,
                                                        ks__free_external, NULL, &s, &copied)
                         : atomic_load(&ks__ext.utf16)(env, (char16_t *) t->data, t->length,
                                                       ks__free_external, NULL, &s, &copied);
    if (st != napi_ok)
      return NULL; /* t->data is still ours: ks_napi_call_free frees it */
    run->decoded[stream] = false; /* copied or not, the string owns it now */
    return s;
  }
  data = ks_outbuf_take(b, &len);
  if (len > 0 && ascii && atomic_load(&ks__ext.latin1) != NULL) {
    if (atomic_load(&ks__ext.latin1)(env, data, len, ks__free_external, NULL, &s, &copied) ==
        napi_ok)
      return s; /* copied or not, data now belongs to the string */
  }
  if (napi_create_string_utf8(env, len > 0 ? data : "", len, &s) != napi_ok)
    s = NULL;
  free(data);
  return s;
}

napi_value ks_napi_number(napi_env env, double v) {
  napi_value out = NULL;
  (void) napi_create_double(env, v, &out);
  return out;
}

napi_value ks_napi_bool(napi_env env, bool v) {
  napi_value out = NULL;
  (void) napi_get_boolean(env, v, &out);
  return out;
}

napi_value ks_napi_null(napi_env env) {
  napi_value out = NULL;
  (void) napi_get_null(env, &out);
  return out;
}

napi_value ks_napi_results_value(napi_env env, const struct ks_results *r) {
  napi_value arr;
  if (napi_create_array_with_length(env, r->n, &arr) != napi_ok)
    return NULL;
  for (size_t i = 0; i < r->n; i++) {
    napi_value s;
    if (napi_create_string_utf8(env, r->items[i], r->lens[i], &s) != napi_ok ||
        napi_set_element(env, arr, (uint32_t) i, s) != napi_ok)
      return NULL;
  }
  return arr;
}

/* Strict UTF-8 (no overlongs, no surrogates): exactly the byte strings a JS
 * string converts back to unchanged. */
bool ks_napi_utf8_valid(const unsigned char *s, size_t len) {
  size_t i = 0;

  while (i < len) {
    unsigned c = s[i];
    unsigned cp;
    unsigned min;
    size_t more;

    if (c < 0x80) {
      i++;
      continue;
    }
    if ((c & 0xE0) == 0xC0) {
      more = 1;
      cp = c & 0x1F;
      min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
      more = 2;
      cp = c & 0x0F;
      min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
      more = 3;
      cp = c & 0x07;
      min = 0x10000;
    } else {
      return false;
    }
    if (len - i - 1 < more)
      return false;
    for (size_t k = 1; k <= more; k++) {
      unsigned b = s[i + k];
      if ((b & 0xC0) != 0x80)
        return false;
      cp = (cp << 6) | (b & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    i += more + 1;
  }
  return true;
}

/* A path as a string, or, when its bytes are not UTF-8, as a Buffer of the
 * raw name: a string would turn them into U+FFFD and alias other names
 * (A23). */
napi_value ks_napi_path_value(napi_env env, const char *path) {
  size_t len = strlen(path);
  napi_value v = NULL;
  void *copy;

  if (ks_napi_utf8_valid((const unsigned char *) path, len)) {
    if (napi_create_string_utf8(env, path, len, &v) != napi_ok)
      return NULL;
  } else if (napi_create_buffer_copy(env, len, path, &copy, &v) != napi_ok) {
    return NULL;
  }
  return v;
}

/* A call's changed files, packed for the JS thread: an object per file
 * built through N-API (six calls each) would hold the event loop for a
 * large workspace, so the engine hands over four values and
 * lib/changes.js builds the objects in plain JS:
 *   paths  every path that is valid UTF-8, joined by "\0" ("" for the others)
 *   sizes  Float64Array of sizes
 *   kinds  Uint8Array of KS_WS_CREATED / KS_WS_MODIFIED
 *   raw    null, or a sparse array: at index i, the bytes of path i as a
 *          Buffer when they are not valid UTF-8 (readdir's answer as it is) */
napi_value ks_napi_changes_value(napi_env env, const struct ks_ws_change *changes, size_t n) {
  napi_value out = NULL;
  napi_value paths = NULL;
  napi_value sizes = NULL;
  napi_value kinds = NULL;
  napi_value raw = NULL;
  napi_value ab;
  void *data;
  size_t total = 0;
  char *joined;
  char *p;

  for (size_t i = 0; i < n; i++)
    total += strlen(changes[i].path) + 1;
  joined = malloc(total ? total : 1);
  if (joined == NULL) {
    (void) napi_throw_error(env, "ENOMEM", "out of memory for the changed files");
    return NULL;
  }
  p = joined;
  for (size_t i = 0; i < n; i++) {
    size_t len = strlen(changes[i].path);
    if (ks_napi_utf8_valid((const unsigned char *) changes[i].path, len)) {
      memcpy(p, changes[i].path, len);
      p += len;
    } else {
      napi_value buf;
      void *copy;
      if ((raw == NULL && napi_create_array(env, &raw) != napi_ok) ||
          napi_create_buffer_copy(env, len, changes[i].path, &copy, &buf) != napi_ok ||
          napi_set_element(env, raw, (uint32_t) i, buf) != napi_ok)
        goto done;
    }
    if (i + 1 < n)
      *p++ = '\0';
  }
  if (napi_create_string_utf8(env, joined, (size_t) (p - joined), &paths) != napi_ok)
    goto done;
  if (napi_create_arraybuffer(env, n * sizeof(double), &data, &ab) != napi_ok)
    goto done;
  for (size_t i = 0; i < n; i++)
    ((double *) data)[i] = (double) changes[i].size;
  if (napi_create_typedarray(env, napi_float64_array, n, ab, 0, &sizes) != napi_ok)
    goto done;
  if (napi_create_arraybuffer(env, n, &data, &ab) != napi_ok)
    goto done;
  for (size_t i = 0; i < n; i++)
    ((uint8_t *) data)[i] = (uint8_t) changes[i].kind;
  if (napi_create_typedarray(env, napi_uint8_array, n, ab, 0, &kinds) != napi_ok)
    goto done;
  if (raw == NULL && napi_get_null(env, &raw) != napi_ok)
    goto done;
  if (napi_create_object(env, &out) != napi_ok || !ks_napi_set(env, out, "paths", paths) ||
      !ks_napi_set(env, out, "sizes", sizes) || !ks_napi_set(env, out, "kinds", kinds) ||
      !ks_napi_set(env, out, "raw", raw))
    out = NULL;
done:
  free(joined);
  return out;
}

void ks_napi_output_free(struct ks_napi_output *o) {
  for (int i = 0; i < 2; i++) {
    if (o->decoded[i])
      free(o->text[i].data);
    o->decoded[i] = false;
  }
}
