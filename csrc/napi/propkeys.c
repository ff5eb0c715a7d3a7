/* Property names made once per environment (propkeys.h). */
#include <stdint.h>
#include <stdlib.h>

#include "propkeys.h"

/* More than the native contract's distinct field names; open addressing
 * by the name's address, which never moves. */
#define KS__KEYS 256

/* The strings live in a JS array (slot i: name[i]'s key): Node-API 8 can
 * hold a reference to an object, not to a string. */
struct ks_propkeys {
  const char *name[KS__KEYS];
  napi_ref array;
};

static size_t ks__slot(const char *name) {
  uintptr_t h = (uintptr_t) name;
  h ^= h >> 17;
  h *= (uintptr_t) 0x9E3779B97F4A7C15ull;
  return (size_t) (h >> 8) % KS__KEYS;
}

/* The key of name: found, or made and kept; false if it cannot be kept. */
static bool ks__key(napi_env env, struct ks_propkeys **keys, const char *name, napi_value *key) {
  struct ks_propkeys *k = *keys;
  size_t i = ks__slot(name);
  napi_value array;

  if (k == NULL) {
    if ((k = calloc(1, sizeof *k)) == NULL)
      return false;
    if (napi_create_array_with_length(env, KS__KEYS, &array) != napi_ok ||
        napi_create_reference(env, array, 1, &k->array) != napi_ok) {
      free(k);
      return false;
    }
    *keys = k;
  } else if (napi_get_reference_value(env, k->array, &array) != napi_ok || array == NULL) {
    return false;
  }
  for (size_t n = 0; n < KS__KEYS; n++, i = (i + 1) % KS__KEYS) {
    if (k->name[i] == name)
      return napi_get_element(env, array, (uint32_t) i, key) == napi_ok;
    if (k->name[i] != NULL)
      continue;
    if (napi_create_string_utf8(env, name, NAPI_AUTO_LENGTH, key) != napi_ok ||
        napi_set_element(env, array, (uint32_t) i, *key) != napi_ok)
      return false;
    k->name[i] = name;
    return true;
  }
  return false;
}

napi_status ks_propkeys_get(napi_env env, struct ks_propkeys **keys, napi_value obj,
                            const char *name, napi_value *out) {
  napi_value key;
  if (ks__key(env, keys, name, &key))
    return napi_get_property(env, obj, key, out);
  return napi_get_named_property(env, obj, name, out);
}

size_t ks_propkeys_count(const struct ks_propkeys *keys) {
  size_t n = 0;
  for (size_t i = 0; keys != NULL && i < KS__KEYS; i++)
    n += keys->name[i] != NULL;
  return n;
}

void ks_propkeys_free(napi_env env, struct ks_propkeys **keys) {
  struct ks_propkeys *k = *keys;
  if (k == NULL)
    return;
  (void) napi_delete_reference(env, k->array);
  free(k);
  *keys = NULL;
}
