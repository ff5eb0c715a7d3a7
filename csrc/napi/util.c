#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errnames.h"

void ks_napi_throw_last(napi_env env) {
  const napi_extended_error_info *info = NULL;
  const char *message = "kern-sandbox: N-API call failed";
  bool pending = false;

  /* Read the error first: any other N-API call would clear it. */
  if (napi_get_last_error_info(env, &info) == napi_ok && info != NULL &&
      info->error_message != NULL)
    message = info->error_message;
  if (napi_is_exception_pending(env, &pending) == napi_ok && pending)
    return;
  (void) napi_throw_error(env, NULL, message);
}

bool ks_napi_set(napi_env env, napi_value obj, const char *name, napi_value value) {
  return napi_set_named_property(env, obj, name, value) == napi_ok;
}

bool ks_napi_export(napi_env env, napi_value exports, const struct ks_napi_fn *fns, size_t n) {
  napi_value fn;
  for (size_t i = 0; i < n; i++) {
    if (napi_create_function(env, fns[i].name, NAPI_AUTO_LENGTH, fns[i].cb, NULL, &fn) !=
            napi_ok ||
        !ks_napi_set(env, exports, fns[i].name, fn))
      return false;
  }
  return true;
}

bool ks_napi_export_names(napi_env env, napi_value exports, const char *key,
                          const char *const *names, uint32_t n) {
  napi_value arr;
  napi_value s;
  if (napi_create_array_with_length(env, n, &arr) != napi_ok)
    return false;
  for (uint32_t i = 0; i < n; i++) {
    if (napi_create_string_utf8(env, names[i], NAPI_AUTO_LENGTH, &s) != napi_ok ||
        napi_set_element(env, arr, i, s) != napi_ok)
      return false;
  }
  return ks_napi_set(env, exports, key, arr);
}

napi_value ks_napi_make(napi_env env, napi_ref maker, size_t n, const napi_value *v) {
  napi_value fn;
  napi_value undefined;
  napi_value obj;
  if (maker == NULL || napi_get_reference_value(env, maker, &fn) != napi_ok || fn == NULL ||
      napi_get_undefined(env, &undefined) != napi_ok ||
      napi_call_function(env, undefined, fn, n, v, &obj) != napi_ok)
    return NULL;
  return obj;
}

napi_value ks_napi_system_error(napi_env env, const struct ks_err *err) {
  const char *code = ks_errno_code(err->errnum);
  const char *syscall = err->syscall != NULL ? err->syscall : "unknown";
  char msg[1024];
  napi_value js_code;
  napi_value js_msg;
  napi_value error;
  napi_value v;

  if (err->path != NULL)
    snprintf(msg, sizeof msg, "%s: %s, %s '%s'", code, ks_errno_message(err->errnum),
             syscall, err->path);
  else
    snprintf(msg, sizeof msg, "%s: %s, %s", code, ks_errno_message(err->errnum), syscall);

  if (napi_create_string_utf8(env, code, NAPI_AUTO_LENGTH, &js_code) != napi_ok ||
      napi_create_string_utf8(env, msg, NAPI_AUTO_LENGTH, &js_msg) != napi_ok ||
      napi_create_error(env, js_code, js_msg, &error) != napi_ok)
    return NULL;
  if (napi_create_int32(env, -err->errnum, &v) != napi_ok || !ks_napi_set(env, error, "errno", v))
    return NULL;
  if (napi_create_string_utf8(env, syscall, NAPI_AUTO_LENGTH, &v) != napi_ok ||
      !ks_napi_set(env, error, "syscall", v))
    return NULL;
  if (err->path != NULL) {
    if (napi_create_string_utf8(env, err->path, NAPI_AUTO_LENGTH, &v) != napi_ok ||
        !ks_napi_set(env, error, "path", v))
      return NULL;
  }
  return error;
}

void ks_napi_throw_system(napi_env env, const struct ks_err *err) {
  napi_value e = ks_napi_system_error(env, err);
  if (e != NULL)
    (void) napi_throw(env, e);
  else
    ks_napi_throw_last(env);
}

void ks_napi_reject_pending(napi_env env, napi_deferred deferred, const char *what) {
  napi_value value = NULL;
  napi_value msg = NULL;
  bool pending = false;

  if (napi_is_exception_pending(env, &pending) == napi_ok && pending &&
      napi_get_and_clear_last_exception(env, &value) == napi_ok) {
    (void) napi_reject_deferred(env, deferred, value);
    return;
  }
  (void) napi_create_string_utf8(env, what, NAPI_AUTO_LENGTH, &msg);
  (void) napi_create_error(env, NULL, msg, &value);
  (void) napi_reject_deferred(env, deferred, value);
}

void ks_napi_reject_system(napi_env env, napi_deferred deferred, const struct ks_err *err) {
  napi_value e = ks_napi_system_error(env, err);
  if (e != NULL)
    (void) napi_reject_deferred(env, deferred, e);
  else
    ks_napi_reject_pending(env, deferred, "kern-sandbox: could not build the error");
}

char *ks_napi_get_string(napi_env env, napi_value value, size_t *ret_len) {
  size_t len = 0;
  char *buf;

  if (napi_get_value_string_utf8(env, value, NULL, 0, &len) != napi_ok) {
    ks_napi_throw_last(env);
    return NULL;
  }
  buf = malloc(len + 1);
  if (buf == NULL) {
    napi_throw_error(env, "ENOMEM", "kern-sandbox: out of memory");
    return NULL;
  }
  if (napi_get_value_string_utf8(env, value, buf, len + 1, &len) != napi_ok) {
    free(buf);
    ks_napi_throw_last(env);
    return NULL;
  }
  if (ret_len != NULL)
    *ret_len = len;
  return buf;
}

void ks_napi_free_strv(char **v) { free(v); }

/* An element of an array being copied: its value and UTF-8 length. */
struct ks__strv_item {
  napi_value v;
  size_t len;
};

/* One allocation holds the pointers and then the strings: a box's argv and
 * kern's environment cost one malloc here and one free at the box's end (on
 * this thread, before its call resolves), not one of each per string. */
char **ks_napi_get_strv(napi_env env, napi_value value) {
  struct ks__strv_item small[128];
  struct ks__strv_item *items = small;
  uint32_t n = 0;
  size_t bytes;
  char **v = NULL;
  char *p;

  if (napi_get_array_length(env, value, &n) != napi_ok) {
    ks_napi_throw_last(env);
    return NULL;
  }
  if (n > sizeof small / sizeof small[0]) {
    items = calloc(n, sizeof *items);
    if (items == NULL) {
      napi_throw_error(env, "ENOMEM", "kern-sandbox: out of memory");
      return NULL;
    }
  }
  bytes = ((size_t) n + 1) * sizeof *v;
  for (uint32_t i = 0; i < n; i++) {
    if (napi_get_element(env, value, i, &items[i].v) != napi_ok ||
        napi_get_value_string_utf8(env, items[i].v, NULL, 0, &items[i].len) != napi_ok) {
      ks_napi_throw_last(env); /* a TypeError for an element that is no string */
      goto done;
    }
    if (items[i].len >= SIZE_MAX - bytes) {
      napi_throw_error(env, "ENOMEM", "kern-sandbox: out of memory");
      goto done;
    }
    bytes += items[i].len + 1;
  }
  v = malloc(bytes);
  if (v == NULL) {
    napi_throw_error(env, "ENOMEM", "kern-sandbox: out of memory");
    goto done;
  }
  p = (char *) (v + (size_t) n + 1);
  for (uint32_t i = 0; i < n; i++) {
    size_t got = 0;
    if (napi_get_value_string_utf8(env, items[i].v, p, items[i].len + 1, &got) != napi_ok) {
      ks_napi_throw_last(env);
      free(v);
      v = NULL;
      goto done;
    }
    v[i] = p;
    p += got + 1; /* got <= len: the string cannot have changed meanwhile */
  }
  v[n] = NULL;
done:
  if (items != small)
    free(items);
  return v;
}

napi_value ks_napi_prop(napi_env env, napi_value obj, const char *name) {
  napi_value v = NULL;
  if (napi_get_named_property(env, obj, name, &v) != napi_ok)
    (void) napi_get_undefined(env, &v);
  return v;
}

bool ks_napi_is_function(napi_env env, napi_value v) {
  napi_valuetype t;
  return napi_typeof(env, v, &t) == napi_ok && t == napi_function;
}

/* A group or call key: an integer from 0 (none) up to 2^53 - 1. */
bool ks_napi_get_key(napi_env env, napi_value v, const char *what, uint64_t *out) {
  double key = 0;
  if (napi_get_value_double(env, v, &key) != napi_ok) {
    ks_napi_throw_last(env);
    return false;
  }
  if (!(key >= 0 && key <= 9007199254740991.0) || key != (double) (uint64_t) key) {
    char msg[64];
    (void) snprintf(msg, sizeof msg, "kern-sandbox: %s out of range", what);
    napi_throw_range_error(env, "ERR_OUT_OF_RANGE", msg);
    return false;
  }
  *out = (uint64_t) key;
  return true;
}

/* A whole number from 0 up to max, or a RangeError naming what. */
bool ks_napi_get_count(napi_env env, napi_value v, const char *what, double max,
                          double *out) {
  if (napi_get_value_double(env, v, out) != napi_ok) {
    ks_napi_throw_last(env);
    return false;
  }
  if (!(*out >= 0 && *out <= max) || *out != (double) (uint64_t) *out) {
    char msg[80];
    (void) snprintf(msg, sizeof msg, "kern-sandbox: %s out of range", what);
    napi_throw_range_error(env, "ERR_OUT_OF_RANGE", msg);
    return false;
  }
  return true;
}

/* The body of a Buffer argument; false with an exception if not one. */
bool ks_napi_get_buffer(napi_env env, napi_value v, void **data, size_t *len) {
  bool is_buffer = false;
  if (napi_is_buffer(env, v, &is_buffer) != napi_ok || !is_buffer ||
      napi_get_buffer_info(env, v, data, len) != napi_ok) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", "kern-sandbox: a Buffer was expected");
    return false;
  }
  return true;
}

