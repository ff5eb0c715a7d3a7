/* A turn's box submissions, woken once (addon.h, ks_napi_submit_wakes).
 *
 * The first box a turn of JS submits wakes the engine at once, so a lone
 * call starts as it is made. The others of the same turn are queued
 * without a wakeup: the engine takes them at its next turn of its own, at
 * the latest at the one wakeup that ends the JS turn (a microtask, queued
 * by the first). Woken for each, the engine
 * would spawn them while the turn is still submitting, and on a machine
 * with few cores the boxes starting up would take the CPU from the very
 * thread submitting them: the burst's synchronous part, the event loop's
 * delay, would stretch by the time their start-up takes. A box's deadline
 * runs from its spawn, so the wait costs no call any of its time. */
#define _GNU_SOURCE
#include "../core/box/supervisor.h"
#include "addon.h"

/* The microtask that ends the turn: the owed wakeup. */
static napi_value ks__end_turn(napi_env env, napi_callback_info info) {
  struct ks_addon *addon;
  (void) info;
  if (napi_get_instance_data(env, (void **) &addon) != napi_ok || addon == NULL)
    return NULL;
  addon->turn_open = false;
  if (addon->wake_owed && addon->sup != NULL) {
    ks_sup_wake(addon->sup);
    addon->submit_wakes++;
  }
  addon->wake_owed = false;
  return NULL;
}

/* Queues ks__end_turn as a microtask; false if it cannot (queueMicrotask
 * gone from the global object, or it threw). */
static bool ks__try_queue_end_turn(napi_env env, struct ks_addon *addon) {
  napi_value global;
  napi_value queue;
  napi_value end;
  napi_valuetype type = napi_undefined;

  if (addon->queue_microtask == NULL) {
    if (napi_get_global(env, &global) != napi_ok ||
        napi_get_named_property(env, global, "queueMicrotask", &queue) != napi_ok ||
        napi_typeof(env, queue, &type) != napi_ok || type != napi_function ||
        napi_create_function(env, "endTurn", NAPI_AUTO_LENGTH, ks__end_turn, NULL, &end) !=
            napi_ok ||
        napi_create_reference(env, queue, 1, &addon->queue_microtask) != napi_ok)
      return false;
    if (napi_create_reference(env, end, 1, &addon->end_turn) != napi_ok) {
      (void) napi_delete_reference(env, addon->queue_microtask);
      addon->queue_microtask = NULL;
      return false;
    }
  }
  return napi_get_reference_value(env, addon->queue_microtask, &queue) == napi_ok &&
         napi_get_reference_value(env, addon->end_turn, &end) == napi_ok &&
         napi_get_undefined(env, &global) == napi_ok &&
         napi_call_function(env, global, queue, 1, &end, NULL) == napi_ok;
}

/* ks__try_queue_end_turn, or false with nothing pending: every box of the
 * turn then wakes the engine itself, and the call that submits it goes on
 * (no exception was pending before: the entry point's own calls had all
 * succeeded). */
static bool ks__queue_end_turn(napi_env env, struct ks_addon *addon) {
  bool pending = false;
  napi_value e;

  if (ks__try_queue_end_turn(env, addon))
    return true;
  if (napi_is_exception_pending(env, &pending) == napi_ok && pending)
    (void) napi_get_and_clear_last_exception(env, &e);
  return false;
}

bool ks_napi_submit_wakes(napi_env env, struct ks_addon *addon) {
  if (addon->turn_open) {
    addon->wake_owed = true;
    return false;
  }
  addon->turn_open = !addon->turn_off && ks__queue_end_turn(env, addon);
  addon->submit_wakes++;
  return true;
}

void ks_napi_forget_turn(napi_env env, struct ks_addon *addon) {
  if (addon->queue_microtask != NULL)
    (void) napi_delete_reference(env, addon->queue_microtask);
  if (addon->end_turn != NULL)
    (void) napi_delete_reference(env, addon->end_turn);
  addon->queue_microtask = addon->end_turn = NULL;
}
