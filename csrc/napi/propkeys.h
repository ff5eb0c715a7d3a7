/* Property names as JS strings made once per environment. Reading a field
 * by a C string (napi_get_named_property) makes V8 decode that string and
 * look it up in its string table on every read; an options object of
 * twenty fields read on every call pays that twenty times. */
#ifndef KS_NAPI_PROPKEYS_H
#define KS_NAPI_PROPKEYS_H

#include <stdbool.h>
#include <stddef.h>

#include "util.h"

struct ks_propkeys;

/* obj[name] into *out, name a string literal or other string that lives as
 * long as the process: its address names its key. Falls back to
 * napi_get_named_property where no key can be kept (memory, a full table). */
napi_status ks_propkeys_get(napi_env env, struct ks_propkeys **keys, napi_value obj,
                            const char *name, napi_value *out);

/* How many keys are kept (the tests'). */
size_t ks_propkeys_count(const struct ks_propkeys *keys);

/* Drops every key (the addon's finalization). */
void ks_propkeys_free(napi_env env, struct ks_propkeys **keys);

#endif
