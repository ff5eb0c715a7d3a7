/* N-API glue helpers: call-checking macros and argument unpacking. */
#ifndef KS_NAPI_UTIL_H
#define KS_NAPI_UTIL_H

#ifndef NAPI_VERSION
#define NAPI_VERSION 8
#endif
#include <node_api.h>
#include <stdbool.h>
#include <stddef.h>

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

/* Copies a JS string into a new NUL-terminated UTF-8 buffer (free() it).
 * Throws a TypeError and returns NULL if value is not a string. */
char *ks_napi_get_string(napi_env env, napi_value value, size_t *ret_len);

/* Copies a JS array of strings into a new NULL-terminated vector. */
char **ks_napi_get_strv(napi_env env, napi_value value);

void ks_napi_free_strv(char **v);

/* Sets obj[name] = value, returning false (with an exception pending) on failure. */
bool ks_napi_set(napi_env env, napi_value obj, const char *name, napi_value value);

#endif
