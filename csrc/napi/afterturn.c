/* Settled boxes' inits, released once the caller has had its turn.
 *
 * Releasing the init of a box that settled at its report (shutting its
 * channel down) lets the init exit, and its exit starts kern's teardown of
 * the box: namespaces and mounts, with an expedited RCU grace period that
 * interrupts every CPU, the JS thread's too. Done where the promise
 * settles, that teardown (and the engine's wakeup at the shutdown) would
 * run while the caller's continuation does. So the JS thread does it in the
 * event loop's check phase, which comes after the callback that settled the
 * promise and the microtasks it queued (the caller's continuation), and
 * before the loop waits again. Only the release waits: the rest of the box
 * is freed at once, for its last reference to a session's watch must not
 * be dropped here (closing an inotify instance waits out an SRCU grace
 * period, once close() has handed the session's own reference to a
 * worker).
 *
 * The check handle is made on first use. It never keeps the loop alive (a
 * check phase follows every poll phase whatever its refs; no promise waits
 * on it: the rule is ks_napi_loop_hold's, in call.c), and it is closed
 * at the environment's teardown through an async cleanup hook, which Node
 * waits for; it lives in memory of its own, for the close completes after
 * the addon's instance data may be gone. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include "addon.h"

struct ks_after_turn {
  uv_check_t check;
  napi_async_cleanup_hook_handle cleanup;
  struct ks_addon *addon; /* NULL once the addon is finalized */
};

static void ks__release_now(int fd) {
  (void) shutdown(fd, SHUT_WR);
  (void) close(fd);
}

void ks_addon_release_settled(struct ks_addon *addon) {
  for (size_t i = 0; i < addon->nreleases; i++)
    ks__release_now(addon->releases[i]);
  addon->nreleases = 0;
}

static void ks__on_check(uv_check_t *check) {
  struct ks_after_turn *t = check->data;
  if (t->addon != NULL)
    ks_addon_release_settled(t->addon);
  uv_check_stop(check);
}

static void ks__on_closed(uv_handle_t *h) {
  struct ks_after_turn *t = h->data;
  if (t->cleanup != NULL)
    (void) napi_remove_async_cleanup_hook(t->cleanup);
  free(t);
}

static void ks__on_teardown(napi_async_cleanup_hook_handle cleanup, void *arg) {
  struct ks_after_turn *t = arg;
  (void) cleanup;
  if (t->addon != NULL)
    ks_addon_forget_after_turn(t->addon);
  uv_close((uv_handle_t *) &t->check, ks__on_closed);
}

/* The check handle, made on first use; NULL if it cannot be. */
static struct ks_after_turn *ks__after_turn(napi_env env, struct ks_addon *addon) {
  struct ks_after_turn *t = addon->after_turn;
  uv_loop_t *loop = NULL;

  if (t != NULL)
    return t;
  if (napi_get_uv_event_loop(env, &loop) != napi_ok || loop == NULL)
    return NULL;
  t = calloc(1, sizeof *t);
  if (t == NULL)
    return NULL;
  if (uv_check_init(loop, &t->check) != 0) {
    free(t);
    return NULL;
  }
  t->check.data = t;
  uv_unref((uv_handle_t *) &t->check);
  if (napi_add_async_cleanup_hook(env, ks__on_teardown, t, &t->cleanup) != napi_ok) {
    /* One left open at teardown would fail a Worker's loop close. */
    t->cleanup = NULL;
    uv_close((uv_handle_t *) &t->check, ks__on_closed);
    return NULL;
  }
  t->addon = addon;
  addon->after_turn = t;
  return t;
}

void ks_addon_release_after_turn(napi_env env, struct ks_addon *addon, int fd) {
  struct ks_after_turn *t = NULL;

  if (fd < 0)
    return;
  if (env != NULL && !addon->shut_down)
    t = ks__after_turn(env, addon);
  if (t != NULL && addon->nreleases == addon->releases_cap) {
    size_t cap = addon->releases_cap == 0 ? 8 : addon->releases_cap * 2;
    int *grown = realloc(addon->releases, cap * sizeof *grown);
    if (grown == NULL) {
      t = NULL;
    } else {
      addon->releases = grown;
      addon->releases_cap = cap;
    }
  }
  if (t == NULL) {
    ks__release_now(fd);
    return;
  }
  addon->releases[addon->nreleases++] = fd;
  if (uv_check_start(&t->check, ks__on_check) != 0)
    ks_addon_release_settled(addon);
}

void ks_addon_forget_after_turn(struct ks_addon *addon) {
  ks_addon_release_settled(addon);
  free(addon->releases);
  addon->releases = NULL;
  addon->nreleases = addon->releases_cap = 0;
  if (addon->after_turn != NULL)
    addon->after_turn->addon = NULL;
  addon->after_turn = NULL;
}
