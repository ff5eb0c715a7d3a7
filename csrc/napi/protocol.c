/* PROTOCOL: the constants JS shares with the engine, the in-box init and the
 * interpreter, taken from their one definition (csrc/init/protocol.h and
 * csrc/core/box/interp.h) so that lib/ never copies a number. The in-box
 * Python cannot include a header: test/17.protocol-constants.test.js checks
 * its copies against the same headers. */
#include "../core/box/interp.h"
#include "../init/protocol.h"
#include "util.h"

struct ks__const {
  const char *name;
  double value;
};

static bool ks__group(napi_env env, napi_value parent, const char *name,
                      const struct ks__const *c, size_t n) {
  napi_value obj;
  napi_value v;
  if (napi_create_object(env, &obj) != napi_ok)
    return false;
  for (size_t i = 0; i < n; i++) {
    if (napi_create_double(env, c[i].value, &v) != napi_ok || !ks_napi_set(env, obj, c[i].name, v))
      return false;
  }
  return napi_object_freeze(env, obj) == napi_ok && ks_napi_set(env, parent, name, obj);
}

bool ks_napi_init_protocol(napi_env env, napi_value exports) {
  /* enum ks_ip_end: how a Python cell or RUN ended (interp.h). */
  static const struct ks__const ip_end[] = {{"OK", KS_IP_OK},
                                            {"EXCEPTION", KS_IP_EXCEPTION},
                                            {"EXIT", KS_IP_EXIT},
                                            {"INTERRUPTED", KS_IP_INTERRUPTED}};
  /* enum ks_ip_mode: a kernel's isolation (interp.h). */
  static const struct ks__const ip_mode[] = {{"SHARED", KS_IP_SHARED}, {"FORK", KS_IP_FORK}};
  /* enum ks_init_end: the in-box init's REPORT (protocol.h). */
  static const struct ks__const init_end[] = {{"EXITED", KS_INIT_EXITED},
                                              {"SIGNALED", KS_INIT_SIGNALED}};
  napi_value proto;
  napi_value dir;
  napi_value path;

  if (napi_create_object(env, &proto) != napi_ok ||
      !ks__group(env, proto, "IP_END", ip_end, sizeof ip_end / sizeof ip_end[0]) ||
      !ks__group(env, proto, "IP_MODE", ip_mode, sizeof ip_mode / sizeof ip_mode[0]) ||
      !ks__group(env, proto, "INIT_END", init_end, sizeof init_end / sizeof init_end[0]) ||
      napi_create_string_utf8(env, KS_INIT_BOX_DIR, NAPI_AUTO_LENGTH, &dir) != napi_ok ||
      !ks_napi_set(env, proto, "INIT_BOX_DIR", dir) ||
      napi_create_string_utf8(env, KS_INIT_BOX_PATH, NAPI_AUTO_LENGTH, &path) != napi_ok ||
      !ks_napi_set(env, proto, "INIT_BOX_PATH", path))
    return false;
  return napi_object_freeze(env, proto) == napi_ok && ks_napi_set(env, exports, "PROTOCOL", proto);
}
