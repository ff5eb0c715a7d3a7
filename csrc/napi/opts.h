/* Reading a native entry point's one options object (startBox, parkBox,
 * claimBox, startKernel, kernelCell): each field required or optional, of
 * one type, and a TypeError (RangeError for a number out of its range)
 * that names the entry point and the field otherwise. An absent optional
 * field is undefined or null. */
#ifndef KS_NAPI_OPTS_H
#define KS_NAPI_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"

struct ks_propkeys;

struct ks_opts {
  napi_env env;
  struct ks_propkeys **keys; /* the environment's field names (propkeys.h), or NULL */
  napi_value obj;
  const char *fn;   /* the entry point, for messages: "startBox" */
  const char *path; /* the object's own name, for messages: "opts", "opts.init" */
};

/* Begins reading v, which must be an object; false with a TypeError pending. */
bool ks_opts_begin(napi_env env, napi_value v, const char *fn, const char *path,
                   struct ks_opts *o);
/* A nested options object (opts.init): *present false (and *sub untouched)
 * if it is absent and not required. */
bool ks_opts_sub(const struct ks_opts *o, const char *name, const char *path, bool required,
                 struct ks_opts *sub, bool *present);

/* The field's value, or *present false when it is absent (an error if
 * required). Every name of a field is a string literal (propkeys.h). */
bool ks_opt_value(const struct ks_opts *o, const char *name, bool required, napi_value *out,
                  bool *present);
/* A string, copied (free() it); required. */
bool ks_opt_string(const struct ks_opts *o, const char *name, char **out);
/* An array of strings, as ks_napi_get_strv makes it; *out NULL when absent. */
bool ks_opt_strv(const struct ks_opts *o, const char *name, bool required, char ***out);
/* A number in [min, max]; *out left as it is when absent. */
bool ks_opt_number(const struct ks_opts *o, const char *name, bool required, double min,
                   double max, double *out);
/* A boolean; false when absent. */
bool ks_opt_bool(const struct ks_opts *o, const char *name, bool *out);
/* A key (ks_napi_get_key: 0 up to 2^53 - 1); 0 when absent, and a required
 * one must be nonzero. */
bool ks_opt_key(const struct ks_opts *o, const char *name, bool required, uint64_t *out);
/* A Buffer's bytes, borrowed; *present false when absent. */
bool ks_opt_buffer(const struct ks_opts *o, const char *name, void **data, size_t *len,
                   bool *present);
/* A function, or absent: *out the value either way (undefined when absent). */
bool ks_opt_function(const struct ks_opts *o, const char *name, napi_value *out, bool *present);

/* Throws a TypeError "kern-sandbox: fn(): path.name must be what". */
void ks_opts_type_error(const struct ks_opts *o, const char *name, const char *what);

#endif
