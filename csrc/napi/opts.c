/* Options objects of the native entry points (opts.h). */
#define _GNU_SOURCE
#include <stdio.h>

#include "addon.h"
#include "opts.h"
#include "propkeys.h"

void ks_opts_type_error(const struct ks_opts *o, const char *name, const char *what) {
  char msg[200];
  (void) snprintf(msg, sizeof msg, "kern-sandbox: %s(): %s.%s %s", o->fn, o->path, name, what);
  napi_throw_type_error(o->env, "ERR_INVALID_ARG_TYPE", msg);
}

static napi_valuetype ks__type(napi_env env, napi_value v) {
  napi_valuetype t = napi_undefined;
  if (v == NULL || napi_typeof(env, v, &t) != napi_ok)
    return napi_undefined;
  return t;
}

bool ks_opts_begin(napi_env env, napi_value v, const char *fn, const char *path,
                   struct ks_opts *o) {
  char msg[160];
  struct ks_addon *addon = NULL;
  o->env = env;
  o->keys = napi_get_instance_data(env, (void **) &addon) == napi_ok && addon != NULL &&
                    !addon->propkeys_off
                ? &addon->propkeys
                : NULL;
  o->obj = v;
  o->fn = fn;
  o->path = path;
  if (ks__type(env, v) == napi_object)
    return true;
  (void) snprintf(msg, sizeof msg, "kern-sandbox: %s() takes an options object (%s)", fn, path);
  napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", msg);
  return false;
}

bool ks_opt_value(const struct ks_opts *o, const char *name, bool required, napi_value *out,
                  bool *present) {
  napi_valuetype t;
  napi_status st = o->keys != NULL ? ks_propkeys_get(o->env, o->keys, o->obj, name, out)
                                   : napi_get_named_property(o->env, o->obj, name, out);
  if (st != napi_ok) {
    ks_napi_throw_last(o->env);
    return false;
  }
  t = ks__type(o->env, *out);
  *present = t != napi_undefined && t != napi_null;
  if (!*present && required) {
    ks_opts_type_error(o, name, "is required");
    return false;
  }
  return true;
}

bool ks_opts_sub(const struct ks_opts *o, const char *name, const char *path, bool required,
                 struct ks_opts *sub, bool *present) {
  napi_value v;
  if (!ks_opt_value(o, name, required, &v, present))
    return false;
  if (!*present)
    return true;
  if (ks__type(o->env, v) != napi_object) {
    ks_opts_type_error(o, name, "must be an object");
    return false;
  }
  return ks_opts_begin(o->env, v, o->fn, path, sub);
}

bool ks_opt_string(const struct ks_opts *o, const char *name, char **out) {
  napi_value v;
  bool present;
  if (!ks_opt_value(o, name, true, &v, &present))
    return false;
  if (ks__type(o->env, v) != napi_string) {
    ks_opts_type_error(o, name, "must be a string");
    return false;
  }
  *out = ks_napi_get_string(o->env, v, NULL);
  return *out != NULL;
}

bool ks_opt_strv(const struct ks_opts *o, const char *name, bool required, char ***out) {
  napi_value v;
  bool present;
  bool is_array = false;
  *out = NULL;
  if (!ks_opt_value(o, name, required, &v, &present))
    return false;
  if (!present)
    return true;
  if (napi_is_array(o->env, v, &is_array) != napi_ok || !is_array) {
    ks_opts_type_error(o, name, "must be an array of strings");
    return false;
  }
  *out = ks_napi_get_strv(o->env, v);
  return *out != NULL;
}

bool ks_opt_number(const struct ks_opts *o, const char *name, bool required, double min,
                   double max, double *out) {
  napi_value v;
  bool present;
  double d;
  char msg[200];
  if (!ks_opt_value(o, name, required, &v, &present))
    return false;
  if (!present)
    return true;
  if (ks__type(o->env, v) != napi_number || napi_get_value_double(o->env, v, &d) != napi_ok) {
    ks_opts_type_error(o, name, "must be a number");
    return false;
  }
  if (!(d >= min && d <= max)) {
    (void) snprintf(msg, sizeof msg, "kern-sandbox: %s(): %s.%s out of range [%.17g, %.17g]",
                    o->fn, o->path, name, min, max);
    napi_throw_range_error(o->env, "ERR_OUT_OF_RANGE", msg);
    return false;
  }
  *out = d;
  return true;
}

bool ks_opt_bool(const struct ks_opts *o, const char *name, bool *out) {
  napi_value v;
  bool present;
  *out = false;
  if (!ks_opt_value(o, name, false, &v, &present))
    return false;
  if (!present)
    return true;
  if (ks__type(o->env, v) != napi_boolean || napi_get_value_bool(o->env, v, out) != napi_ok) {
    ks_opts_type_error(o, name, "must be a boolean");
    return false;
  }
  return true;
}

bool ks_opt_key(const struct ks_opts *o, const char *name, bool required, uint64_t *out) {
  double d = 0;
  *out = 0;
  if (!ks_opt_number(o, name, required, required ? 1 : 0, 9007199254740991.0, &d))
    return false;
  if (d != (double) (uint64_t) d) {
    ks_opts_type_error(o, name, "must be a whole number");
    return false;
  }
  *out = (uint64_t) d;
  return true;
}

bool ks_opt_buffer(const struct ks_opts *o, const char *name, void **data, size_t *len,
                   bool *present) {
  napi_value v;
  bool is_buffer = false;
  if (!ks_opt_value(o, name, false, &v, present))
    return false;
  if (!*present)
    return true;
  if (napi_is_buffer(o->env, v, &is_buffer) != napi_ok || !is_buffer ||
      napi_get_buffer_info(o->env, v, data, len) != napi_ok) {
    ks_opts_type_error(o, name, "must be a Buffer");
    return false;
  }
  return true;
}

bool ks_opt_function(const struct ks_opts *o, const char *name, napi_value *out, bool *present) {
  if (!ks_opt_value(o, name, false, out, present))
    return false;
  if (*present && ks__type(o->env, *out) != napi_function) {
    ks_opts_type_error(o, name, "must be a function");
    return false;
  }
  return true;
}
