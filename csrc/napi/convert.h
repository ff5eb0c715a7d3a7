/* Conversions of the engine's values to JS values (convert.c). */
#ifndef KS_NAPI_CONVERT_H
#define KS_NAPI_CONVERT_H

#include <stdbool.h>
#include <stddef.h>

#include "../core/box/outbuf.h"
#include "../core/box/supervisor.h"
#include "../core/box/text.h"
#include "util.h"

struct ks_ws_change;

/* A call's captured output on its way to JS strings: non-ASCII output is
 * decoded off the JS thread (ks_napi_decode_outputs), ASCII output is
 * wrapped as it is. */
struct ks_napi_output {
  struct ks_text text[2];
  bool decoded[2];
  bool ascii[2]; /* found by ks_napi_decode_outputs: wrap the bytes as they are */
};

napi_value ks_napi_number(napi_env env, double v);
napi_value ks_napi_bool(napi_env env, bool v);
napi_value ks_napi_null(napi_env env);
/* [json, ...]: the rich results, each a string (UTF-8 JSON). */
napi_value ks_napi_results_value(napi_env env, const struct ks_results *r);
/* JS thread: the captured bytes of one stream as a string (takes them). */
napi_value ks_napi_take_output(napi_env env, struct ks_napi_output *o, struct ks_outbuf *b,
                               int stream);
/* Scan or supervisor thread: decodes non-ASCII output off the JS thread. */
void ks_napi_decode_outputs(struct ks_napi_output *o, struct ks_outbuf out[2]);
/* Frees what decoding left unclaimed. */
void ks_napi_output_free(struct ks_napi_output *o);
/* A call's changed files, packed (paths, sizes, kinds, raw) for lib/changes.js. */
napi_value ks_napi_changes_value(napi_env env, const struct ks_ws_change *changes, size_t n);
/* Strict UTF-8: exactly the byte strings a JS string converts back to unchanged. */
bool ks_napi_utf8_valid(const unsigned char *s, size_t len);
/* A path as a string, or as a Buffer of its bytes when they are not UTF-8. */
napi_value ks_napi_path_value(napi_env env, const char *path);

#endif
