/* N-API glue helpers: call-checking macros and argument unpacking. */
#ifndef KS_NAPI_UTIL_H
#define KS_NAPI_UTIL_H

#ifndef NAPI_VERSION
#define NAPI_VERSION 8
#endif
#include <node_api.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../core/err.h"

/* Throws the last N-API error unless an exception is already pending. */
void ks_napi_throw_last(napi_env env);

#define KS_NAPI_CALL(env, call)                                                          \
  do {                                                                                   \
    if ((call) != napi_ok) {                                                             \
      ks_napi_throw_last(env);                                                           \
      return NULL;                                                                       \
    }                                                                                    \
  } while (0)

#define KS_NAPI_CALL_GOTO(env, call, label)                                              \
  do {                                                                                   \
    if ((call) != napi_ok) {                                                             \
      ks_napi_throw_last(env);                                                           \
      goto label;                                                                        \
    }                                                                                    \
  } while (0)

/* A Node-shaped system error: code ("ENOENT"), negative errno, syscall, path,
 * and the message "ENOENT: no such file or directory, openat 'x'". */
napi_value ks_napi_system_error(napi_env env, const struct ks_err *err);

/* Throws ks_napi_system_error(err); if that cannot be built, whatever went
 * wrong instead (never nothing: a failed build must not pass for success). */
void ks_napi_throw_system(napi_env env, const struct ks_err *err);

/* Rejects deferred with the pending exception if there is one, else with a
 * plain Error saying `what`. */
void ks_napi_reject_pending(napi_env env, napi_deferred deferred, const char *what);

/* Rejects deferred with ks_napi_system_error(err), or as
 * ks_napi_reject_pending if that cannot be built (a promise always settles). */
void ks_napi_reject_system(napi_env env, napi_deferred deferred, const struct ks_err *err);

/* Copies a JS string into a new NUL-terminated UTF-8 buffer (free() it).
 * Throws a TypeError and returns NULL if value is not a string. */
char *ks_napi_get_string(napi_env env, napi_value value, size_t *ret_len);

/* Copies a JS array of strings into a new NULL-terminated vector: one
 * allocation, the strings after the pointers, so free(v) frees it all. */
char **ks_napi_get_strv(napi_env env, napi_value value);

void ks_napi_free_strv(char **v);

/* Sets obj[name] = value, returning false (with an exception pending) on failure. */
bool ks_napi_set(napi_env env, napi_value obj, const char *name, napi_value value);

/* A native function exported under its name. */
struct ks_napi_fn {
  const char *name;
  napi_callback cb;
};

/* Sets exports[fns[i].name] to a function calling fns[i].cb, for each of n;
 * false on failure. */
bool ks_napi_export(napi_env env, napi_value exports, const struct ks_napi_fn *fns, size_t n);

/* exports[key]: the array of names (a result table's, raw-result.h and
 * cell-result.h), in order. */
bool ks_napi_export_names(napi_env env, napi_value exports, const char *key,
                          const char *const *names, uint32_t n);

/* The object maker (a function configure() was given) makes of the n
 * values, in the order of its table: one call into JS and an object literal
 * of a fixed shape, far cheaper than named properties set from C. NULL,
 * with an exception pending or not, if it cannot be made. */
napi_value ks_napi_make(napi_env env, napi_ref maker, size_t n, const napi_value *v);

/* obj[name], or undefined. */
napi_value ks_napi_prop(napi_env env, napi_value obj, const char *name);
bool ks_napi_is_function(napi_env env, napi_value v);
/* A group, call or kernel key: an integer from 0 (none) up to 2^53 - 1;
 * false with a RangeError naming what otherwise. */
bool ks_napi_get_key(napi_env env, napi_value v, const char *what, uint64_t *out);
/* A whole number from 0 up to max; false with a RangeError otherwise. */
bool ks_napi_get_count(napi_env env, napi_value v, const char *what, double max, double *out);
/* A Buffer's bytes; false with a TypeError if v is not one. */
bool ks_napi_get_buffer(napi_env env, napi_value v, void **data, size_t *len);

#endif
