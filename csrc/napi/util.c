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

void ks_napi_free_strv(char **v) {
  if (v == NULL)
    return;
  for (char **p = v; *p != NULL; p++)
    free(*p);
  free(v);
}

char **ks_napi_get_strv(napi_env env, napi_value value) {
  uint32_t n = 0;
  char **v;

  if (napi_get_array_length(env, value, &n) != napi_ok) {
    ks_napi_throw_last(env);
    return NULL;
  }
  v = calloc((size_t) n + 1, sizeof *v);
  if (v == NULL) {
    napi_throw_error(env, "ENOMEM", "kern-sandbox: out of memory");
    return NULL;
  }
  for (uint32_t i = 0; i < n; i++) {
    napi_value item;
    if (napi_get_element(env, value, i, &item) != napi_ok) {
      ks_napi_throw_last(env);
      ks_napi_free_strv(v);
      return NULL;
    }
    v[i] = ks_napi_get_string(env, item, NULL);
    if (v[i] == NULL) {
      ks_napi_free_strv(v);
      return NULL;
    }
  }
  return v;
}
