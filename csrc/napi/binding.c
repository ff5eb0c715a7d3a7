/* Module init: per-environment state, exports, teardown. Nothing else. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "../core/box/supervisor.h"
#include "../core/compat.h"
#include "../core/workspace/wsfs.h"
#include "../core/workspace/wswatch.h"
#include "addon.h"
#include "call.h"
#include "propkeys.h"

/* hostFeatures() -> { pidfdOpen, openat2, closeRange }: for doctor(). */
static napi_value ks__host_features(napi_env env, napi_callback_info info) {
  struct ks_host_features f;
  napi_value obj;
  napi_value v;
  (void) info;

  ks_compat_probe_host(&f);
  KS_NAPI_CALL(env, napi_create_object(env, &obj));
  const struct {
    const char *name;
    bool value;
  } fields[] = {{"pidfdOpen", f.pidfd_open}, {"openat2", f.openat2}, {"closeRange", f.close_range}};
  for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
    KS_NAPI_CALL(env, napi_get_boolean(env, fields[i].value, &v));
    if (!ks_napi_set(env, obj, fields[i].name, v))
      return NULL;
  }
  return obj;
}

/* *ref = a reference to fn, replacing the one a configure() before kept. */
static bool ks__keep_maker(napi_env env, napi_ref *ref, napi_value fn) {
  if (*ref != NULL && napi_delete_reference(env, *ref) != napi_ok)
    return false;
  *ref = NULL;
  return napi_create_reference(env, fn, 1, ref) == napi_ok;
}

/* configure(forceFallback, tracker, makeRawResult, benchOff, makeCellResult),
 * called by lib/binding.js with process.env's values: read there, under
 * Node's own environment lock, not with getenv() here, which would race with
 * a main thread writing process.env while a Worker loads the addon.
 *
 * forceFallback (KERN_SANDBOX_FORCE_FALLBACK): a list such as
 * "openat2,clone_pidfd,close_range,memfd,pidfd_pgrp", or "all": the addon
 * behaves as if the kernel lacked those interfaces, so the tests can run
 * every fallback path on a modern kernel. tracker (KERN_SANDBOX_TRACKER):
 * "0" turns off the per-call change tracking from inotify events, for a full
 * scan before and after every call (for comparison, and for file systems
 * that raise no inotify events). makeRawResult: the function that makes a
 * run's raw outcome from its fields (csrc/napi/run.c). benchOff
 * (KERN_SANDBOX_BENCH_OFF, checked by lib/benchoff.js): the engine's speed
 * mechanisms to run without, for bench/ab.js's A/B. makeCellResult: the same as
 * makeRawResult for a kernel message's outcome (csrc/napi/cell.c). */
static napi_value ks__configure(napi_env env, napi_callback_info info) {
  static const struct {
    const char *name;
    unsigned feature;
  } table[] = {
      {"openat2", KS_FEATURE_OPENAT2},
      {"clone_pidfd", KS_FEATURE_CLONE_PIDFD},
      {"close_range", KS_FEATURE_CLOSE_RANGE},
      {"memfd", KS_FEATURE_MEMFD},
      {"pidfd_pgrp", KS_FEATURE_PIDFD_PGRP},
  };
  size_t argc = 5;
  napi_value argv[5];
  char *fallback;
  char *tracker;
  char *off;
  unsigned features = 0;
  napi_valuetype type = napi_undefined;
  napi_valuetype type_cell = napi_undefined;
  struct ks_addon *addon;

  KS_NAPI_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc == 5) {
    KS_NAPI_CALL(env, napi_typeof(env, argv[2], &type));
    KS_NAPI_CALL(env, napi_typeof(env, argv[4], &type_cell));
  }
  if (argc != 5 || type != napi_function || type_cell != napi_function) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE",
                          "configure(forceFallback, tracker, makeRawResult, benchOff, makeCellResult)");
    return NULL;
  }
  KS_NAPI_CALL(env, napi_get_instance_data(env, (void **) &addon));
  if (!ks__keep_maker(env, &addon->make_raw, argv[2]) ||
      !ks__keep_maker(env, &addon->make_cell, argv[4])) {
    ks_napi_throw_last(env);
    return NULL;
  }
  fallback = ks_napi_get_string(env, argv[0], NULL);
  tracker = fallback != NULL ? ks_napi_get_string(env, argv[1], NULL) : NULL;
  off = tracker != NULL ? ks_napi_get_string(env, argv[3], NULL) : NULL;
  if (tracker != NULL) {
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
      if (strstr(fallback, table[i].name) != NULL || strcmp(fallback, "all") == 0)
        features |= table[i].feature;
    }
    ks_compat_disable(features);
    ks_ws_watch_enable_tracking(strcmp(tracker, "0") != 0);
  }
  if (off != NULL) {
    ks_sup_bench_off(strstr(off, "inline-ends") != NULL ? KS_SUP_OFF_INLINE_ENDS : 0);
    addon->turn_off = strstr(off, "turn-wakes") != NULL;
    addon->propkeys_off = strstr(off, "propkeys") != NULL;
  }
  free(fallback);
  free(tracker);
  free(off);
  return NULL;
}

/* Keeps this library mapped for the life of the process. When a Worker that
 * alone loaded the addon exits, Node dlclose()s it before the Worker's
 * isolate is torn down, and the isolate then runs the finalizers of our
 * external result strings (ks__free_external), in code no longer mapped:
 * SIGSEGV of the whole process (C10). */
static void ks__pin_library(void) {
  Dl_info info;
  if (dladdr((void *) ks__pin_library, &info) != 0 && info.dli_fname != NULL)
    (void) dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
}

static void ks__env_cleanup(void *arg) {
  /* No box outlives its environment, Worker termination included; and no
   * session's descriptor or created workspace either (a Worker that ends
   * with a session open leaves no JS to close it). */
  ks_addon_release_settled(arg); /* their inits may exit now */
  ks_addon_shutdown(arg);
  ks_addon_drop_held(arg);
}

static void ks__addon_finalize(napi_env env, void *data, void *hint) {
  struct ks_addon *addon = data;
  (void) hint;
  ks_addon_forget_after_turn(addon);
  ks_addon_shutdown(addon);
  ks_addon_drop_held(addon);
  /* Node frees no reference an addon made (only unlinks it at teardown),
   * and instance data is finalized before those are unlinked. */
  if (addon->make_raw != NULL)
    (void) napi_delete_reference(env, addon->make_raw);
  if (addon->make_cell != NULL)
    (void) napi_delete_reference(env, addon->make_cell);
  ks_napi_forget_turn(env, addon);
  ks_propkeys_free(env, &addon->propkeys);
  free(addon);
}

static napi_value ks__init(napi_env env, napi_value exports) {
  struct ks_addon *addon = calloc(1, sizeof *addon);

  if (addon == NULL) {
    napi_throw_error(env, "ENOMEM", "kern-sandbox: out of memory");
    return NULL;
  }
  addon->env = env;
  if (napi_set_instance_data(env, addon, ks__addon_finalize, NULL) != napi_ok) {
    free(addon);
    ks_napi_throw_last(env);
    return NULL;
  }
  KS_NAPI_CALL(env, napi_add_env_cleanup_hook(env, ks__env_cleanup, addon));
  ks__pin_library();
  {
    napi_value fn;
    if (napi_create_function(env, "configure", NAPI_AUTO_LENGTH, ks__configure, NULL, &fn) !=
            napi_ok ||
        !ks_napi_set(env, exports, "configure", fn)) {
      ks_napi_throw_last(env);
      return NULL;
    }
  }
  {
    napi_value fn;
    if (napi_create_function(env, "hostFeatures", NAPI_AUTO_LENGTH, ks__host_features, NULL,
                             &fn) != napi_ok ||
        !ks_napi_set(env, exports, "hostFeatures", fn)) {
      ks_napi_throw_last(env);
      return NULL;
    }
  }
  if (!ks_napi_init_run(env, exports) || !ks_napi_init_cell(env, exports) ||
      !ks_napi_init_feed(env, exports) || !ks_napi_init_tty(env, exports)) {
    ks_napi_throw_last(env);
    return NULL;
  }
  if (!ks_napi_init_fs(env, exports)) {
    ks_napi_throw_last(env);
    return NULL;
  }
  if (!ks_napi_init_watch(env, exports)) {
    ks_napi_throw_last(env);
    return NULL;
  }
  if (!ks_napi_init_pack(env, exports) || !ks_napi_init_protocol(env, exports)) {
    ks_napi_throw_last(env);
    return NULL;
  }
#ifdef KS_TEST_NATIVES
  if (!ks_napi_init_testing(env, exports)) {
    ks_napi_throw_last(env);
    return NULL;
  }
#endif
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, ks__init)
