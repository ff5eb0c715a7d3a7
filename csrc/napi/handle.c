/* Type-tagged handles on what the addon holds (handle.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "handle.h"

#include "../core/box/feed.h"

struct ks_handle {
  enum ks_handle_kind kind;
  int fd;          /* -1: none, or closed */
  uint64_t serial; /* the environment's hold on fd (ks_addon_hold); 0: none */
  uint64_t park_key;
  struct ks_feed *feed; /* KS_HANDLE_FEED: its reference */
};

/* One tag for every handle of this addon; the kind is the handle's own
 * field, checked after the unwrap, so taking a handle costs one tag check
 * whatever kinds a native accepts. */
static const napi_type_tag ks__tag = {0x6b735f68616e646cULL, 0x655f6b696e645f5fULL};

static const char *const ks__names[KS_HANDLE_KINDS] = {
    "a workspace handle (wsOpen)",
    "a kern handle (kernOpen)",
    "a parked box's handle (parkBox)",
    "a stdin handle (stdinOpen)",
    "a terminal handle (ptyPair)",
};

static void ks__finalize(napi_env env, void *data, void *hint) {
  (void) env;
  (void) hint;
  /* What it held stays held: the session closes it, or the environment's
   * teardown does (addon.c). A feed is reference-counted: the boxes that
   * still write it hold their own. */
  ks_feed_unref(((struct ks_handle *) data)->feed);
  free(data);
}

napi_value ks_handle_new(napi_env env, struct ks_addon *addon, enum ks_handle_kind kind, int fd,
                         char *own_dir, uint64_t park_key) {
  struct ks_handle *h = calloc(1, sizeof *h);
  napi_value obj;

  if (h == NULL) {
    free(own_dir);
    if (fd >= 0)
      (void) close(fd);
    napi_throw_error(env, "ENOMEM", "kern-sandbox: out of memory");
    return NULL;
  }
  h->kind = kind;
  h->fd = -1;
  h->park_key = park_key;
  if (napi_create_object(env, &obj) != napi_ok ||
      napi_type_tag_object(env, obj, &ks__tag) != napi_ok ||
      napi_wrap(env, obj, h, ks__finalize, NULL, NULL) != napi_ok) {
    free(h);
    free(own_dir);
    if (fd >= 0)
      (void) close(fd);
    ks_napi_throw_last(env);
    return NULL;
  }
  /* Wrapped: h is the object's from here, freed with it. */
  if (fd >= 0) {
    h->serial = ks_addon_hold(env, addon, fd, own_dir);
    if (h->serial == 0) {
      (void) close(fd);
      return NULL;
    }
    h->fd = fd;
  }
  return obj;
}

/* The handle v is, if one of kind (KS_HANDLE_ANY: of any); NULL with a
 * TypeError naming what fn expected otherwise. */
static struct ks_handle *ks__unwrap(napi_env env, napi_value v, enum ks_handle_kind kind,
                                    const char *fn) {
  napi_valuetype t = napi_undefined;
  void *data = NULL;
  char msg[160];

  if (napi_typeof(env, v, &t) == napi_ok && t == napi_object) {
    bool is = false;
    if (napi_check_object_type_tag(env, v, &ks__tag, &is) == napi_ok && is &&
        napi_unwrap(env, v, &data) == napi_ok && data != NULL &&
        (kind == KS_HANDLE_ANY || ((struct ks_handle *) data)->kind == kind))
      return data;
  }
  (void) snprintf(msg, sizeof msg, "kern-sandbox: %s() expected %s", fn,
                  kind == KS_HANDLE_ANY
                      ? "a handle of this addon (wsOpen, kernOpen, parkBox, stdinOpen, ptyPair)"
                      : ks__names[kind]);
  napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", msg);
  return NULL;
}

/* Whether h still holds its descriptor: JS has not closed it and the
 * environment's teardown has not either. */
static bool ks__open(const struct ks_addon *addon, const struct ks_handle *h) {
  return h->fd >= 0 && ks_addon_holds(addon, h->fd, h->serial);
}

bool ks_handle_fd(napi_env env, struct ks_addon *addon, napi_value v, enum ks_handle_kind kind,
                  const char *fn, int *fd) {
  struct ks_handle *h = ks__unwrap(env, v, kind, fn);
  struct ks_err err;

  if (h == NULL)
    return false;
  if (!ks__open(addon, h)) {
    ks_err_set(&err, EBADF, fn, NULL);
    ks_napi_throw_system(env, &err);
    return false;
  }
  *fd = h->fd;
  return true;
}

int ks_handle_release(napi_env env, struct ks_addon *addon, napi_value v, enum ks_handle_kind kind,
                      const char *fn, int *fd) {
  struct ks_handle *h = ks__unwrap(env, v, kind, fn);
  bool was_open;

  if (h == NULL)
    return -1;
  was_open = ks__open(addon, h) && ks_addon_release(addon, h->fd, h->serial);
  *fd = h->fd;
  h->fd = -1;
  h->serial = 0;
  return was_open ? 1 : 0;
}

bool ks_handle_park_key(napi_env env, napi_value v, const char *fn, uint64_t *key) {
  struct ks_handle *h = ks__unwrap(env, v, KS_HANDLE_PARKED, fn);
  if (h == NULL)
    return false;
  *key = h->park_key;
  return true;
}

napi_value ks_handle_new_feed(napi_env env, struct ks_feed *feed) {
  struct ks_handle *h = calloc(1, sizeof *h);
  napi_value obj;

  if (h == NULL) {
    ks_feed_unref(feed);
    napi_throw_error(env, "ENOMEM", "kern-sandbox: out of memory");
    return NULL;
  }
  h->kind = KS_HANDLE_FEED;
  h->fd = -1;
  h->feed = feed;
  if (napi_create_object(env, &obj) != napi_ok ||
      napi_type_tag_object(env, obj, &ks__tag) != napi_ok ||
      napi_wrap(env, obj, h, ks__finalize, NULL, NULL) != napi_ok) {
    ks_feed_unref(feed);
    free(h);
    ks_napi_throw_last(env);
    return NULL;
  }
  return obj;
}

struct ks_feed *ks_handle_feed(napi_env env, napi_value v, const char *fn) {
  struct ks_handle *h = ks__unwrap(env, v, KS_HANDLE_FEED, fn);
  return h != NULL ? h->feed : NULL;
}
