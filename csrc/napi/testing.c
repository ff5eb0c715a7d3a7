/* The engine's counts the tests' leak census reads (test/00.setup.js,
 * lib/census.js): liveBoxes, tailBoxes, cancelledGroups and pendingCloses;
 * submitWakes, which the tests of turn.c read; propKeys, propkeys.c's.
 * Compiled only with KS_TEST_NATIVES (binding.gyp's Test, Debug and Tsan
 * configurations): the Release addon users load has none of them, so no
 * user code comes to depend on them (test/16 checks). */
#ifdef KS_TEST_NATIVES
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>

#include "../core/box/supervisor.h"
#include "../core/workspace/closer.h"
#include "addon.h"
#include "propkeys.h"

/* One of the supervisor's counts, 0 before it starts. */
static napi_value ks__sup_count(napi_env env, size_t (*count)(struct ks_sup *)) {
  struct ks_addon *addon;
  napi_value out;
  KS_NAPI_CALL(env, napi_get_instance_data(env, (void **) &addon));
  KS_NAPI_CALL(env, napi_create_double(
                        env, addon->sup != NULL ? (double) count(addon->sup) : 0, &out));
  return out;
}

/* liveBoxes(): boxes the supervisor holds (running, parked or ending). */
static napi_value ks__live_boxes(napi_env env, napi_callback_info info) {
  (void) info;
  return ks__sup_count(env, ks_sup_live_boxes);
}

/* tailBoxes(): kerns still tearing down boxes whose calls settled, and
 * `kern stop` helpers still running. */
static napi_value ks__tail_boxes(napi_env env, napi_callback_info info) {
  (void) info;
  return ks__sup_count(env, ks_sup_tails);
}

/* cancelledGroups(): cancel keys still held, so that a test sees closed
 * sessions forgotten. */
static napi_value ks__cancelled_groups(napi_env env, napi_callback_info info) {
  (void) info;
  return ks__sup_count(env, ks_sup_cancelled_groups);
}

/* pendingCloses(): the wsCloseLater closes not yet done (tests count
 * descriptors once none are). */
static napi_value ks__pending_closes(napi_env env, napi_callback_info info) {
  napi_value out;
  (void) info;
  KS_NAPI_CALL(env, napi_create_int32(env, ks_closer_pending(), &out));
  return out;
}

/* submitWakes(): how many times this environment's box submissions woke
 * the engine (turn.c): the first box of each turn, and each turn's end
 * that owed one. */
static napi_value ks__submit_wakes(napi_env env, napi_callback_info info) {
  struct ks_addon *addon;
  napi_value out;
  (void) info;
  KS_NAPI_CALL(env, napi_get_instance_data(env, (void **) &addon));
  KS_NAPI_CALL(env, napi_create_double(env, (double) addon->submit_wakes, &out));
  return out;
}

/* propKeys(): the field names this environment keeps as strings
 * (propkeys.c); 0 with the bench switch propkeys off. */
static napi_value ks__prop_keys(napi_env env, napi_callback_info info) {
  struct ks_addon *addon;
  napi_value out;
  (void) info;
  KS_NAPI_CALL(env, napi_get_instance_data(env, (void **) &addon));
  KS_NAPI_CALL(env, napi_create_double(env, (double) ks_propkeys_count(addon->propkeys), &out));
  return out;
}

bool ks_napi_init_testing(napi_env env, napi_value exports) {
  static const struct ks_napi_fn fns[] = {
      {"liveBoxes", ks__live_boxes},         {"tailBoxes", ks__tail_boxes},
      {"cancelledGroups", ks__cancelled_groups}, {"pendingCloses", ks__pending_closes},
      {"submitWakes", ks__submit_wakes},     {"propKeys", ks__prop_keys},
  };
  return ks_napi_export(env, exports, fns, sizeof fns / sizeof fns[0]);
}
#else
/* Without KS_TEST_NATIVES this unit is empty; ISO C wants a declaration. */
typedef int ks__no_test_natives;
#endif
