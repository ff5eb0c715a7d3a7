/* The addon's per-environment state (addon.h): the descriptors sessions
 * hold, and the supervisor's shutdown. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <unistd.h>

#include "../core/box/supervisor.h"
#include "../core/workspace/wsfs.h"
#include "addon.h"

uint64_t ks_addon_hold(napi_env env, struct ks_addon *addon, int fd, char *own_dir) {
  if (addon->nheld == addon->held_cap) {
    size_t cap = addon->held_cap ? addon->held_cap * 2 : 16;
    struct ks_held *h = realloc(addon->held, cap * sizeof *h);
    if (h == NULL) {
      free(own_dir);
      napi_throw_error(env, "ENOMEM", "kern-sandbox: out of memory");
      return 0;
    }
    addon->held = h;
    addon->held_cap = cap;
  }
  addon->held[addon->nheld].fd = fd;
  addon->held[addon->nheld].serial = ++addon->held_serial;
  addon->held[addon->nheld].own_dir = own_dir;
  addon->nheld++;
  return addon->held_serial;
}

bool ks_addon_release(struct ks_addon *addon, int fd, uint64_t serial) {
  for (size_t i = 0; i < addon->nheld; i++) {
    if (addon->held[i].fd == fd && addon->held[i].serial == serial) {
      free(addon->held[i].own_dir);
      addon->held[i] = addon->held[--addon->nheld];
      return true;
    }
  }
  return false;
}

bool ks_addon_holds(const struct ks_addon *addon, int fd, uint64_t serial) {
  for (size_t i = 0; i < addon->nheld; i++) {
    if (addon->held[i].fd == fd && addon->held[i].serial == serial)
      return true;
  }
  return false;
}

void ks_addon_drop_held(struct ks_addon *addon) {
  for (size_t i = 0; i < addon->nheld; i++) {
    struct ks_held *h = &addon->held[i];
    if (h->own_dir != NULL) {
      struct ks_err err;
      /* Beneath the held descriptor, never following a link a box planted,
       * as Sandbox.close() does. */
      if (ks_ws_remove_tree(h->fd, &err) == 0)
        (void) rmdir(h->own_dir);
      free(h->own_dir);
    }
    (void) close(h->fd);
  }
  free(addon->held);
  addon->held = NULL;
  addon->nheld = addon->held_cap = 0;
}

void ks_addon_shutdown(struct ks_addon *addon) {
  if (addon->shut_down)
    return;
  addon->shut_down = true;
  if (addon->sup != NULL) {
    ks_sup_shutdown(addon->sup);
    addon->sup = NULL;
  }
}
