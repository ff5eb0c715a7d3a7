/* wsWatch(): the session's workspace as the run engine sees it, handed to
 * every box so the engine can report each call's changed files. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../core/util.h"
#include "../core/workspace/wswatch.h"
#include "addon.h"
#include "handle.h"

struct ks__watch_handle {
  struct ks_ws_watch *watch; /* NULL once closed */
};

static const napi_type_tag ks__watch_tag = {0x6b735f77617463ULL, 0x68616e646c6531ULL};

static void ks__watch_finalize(napi_env env, void *data, void *hint) {
  struct ks__watch_handle *h = data;
  (void) env;
  (void) hint;
  ks_ws_watch_unref(h->watch); /* runs still in flight keep their own references */
  free(h);
}

/* wsWatch(root) -> handle: duplicates the descriptor of root (an open
 * workspace handle), so the session may close its own. */
static napi_value ks__ws_watch(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  struct ks__watch_handle *h;
  struct ks_addon *addon;
  struct ks_err err;
  napi_value out;
  int fd;
  int dup;

  KS_NAPI_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  KS_NAPI_CALL(env, napi_get_instance_data(env, (void **) &addon));
  if (argc != 1) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", "kern-sandbox: wsWatch(root) takes 1 argument");
    return NULL;
  }
  if (!ks_handle_fd(env, addon, argv[0], KS_HANDLE_WORKSPACE, "wsWatch", &fd))
    return NULL;
  dup = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  if (dup < 0) {
    ks_err_set(&err, errno, "fcntl", NULL);
    ks_napi_throw_system(env, &err);
    return NULL;
  }
  h = calloc(1, sizeof *h);
  if (h == NULL || ks_ws_watch_new(dup, &h->watch) < 0) {
    free(h);
    (void) close(dup);
    napi_throw_error(env, "ENOMEM", "kern-sandbox: out of memory");
    return NULL;
  }
  if (napi_create_external(env, h, ks__watch_finalize, NULL, &out) != napi_ok ||
      napi_type_tag_object(env, out, &ks__watch_tag) != napi_ok) {
    ks_napi_throw_last(env);
    return NULL; /* the finalizer frees h if the external was made */
  }
  return out;
}

struct ks_ws_watch *ks_napi_get_watch(napi_env env, napi_value v) {
  struct ks__watch_handle *h = NULL;
  bool tagged = false;

  if (napi_check_object_type_tag(env, v, &ks__watch_tag, &tagged) != napi_ok || !tagged ||
      napi_get_value_external(env, v, (void **) &h) != napi_ok || h == NULL ||
      h->watch == NULL)
    return NULL;
  return h->watch;
}

/* watchBegin(watch) -> a begun call, or null when the tracker is not quiet
 * (ks_ws_watch_try_begin): a call's change tracking begun on the calling
 * thread. The caller of a claim takes one before it writes the argv to the
 * parked box itself, so that nothing the workload writes can come before
 * the call's start; claimBox() takes it over (opts.begun). One not taken is
 * abandoned when it is collected. */
struct ks__begun {
  struct ks_ws_watch *watch; /* one reference */
  struct ks_ws_watch_call call;
  bool open; /* not taken over by a run */
};

static const napi_type_tag ks__begun_tag = {0x6b735f626567756eULL, 0x63616c6c21212121ULL};

static void ks__begun_finalize(napi_env env, void *data, void *hint) {
  struct ks__begun *b = data;
  (void) env;
  (void) hint;
  if (b->open)
    ks_ws_watch_abandon(b->watch, &b->call);
  ks_ws_watch_unref(b->watch); /* NULL once a run took the call */
  free(b);
}

static napi_value ks__watch_begin(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  struct ks_ws_watch *w;
  struct ks__begun *b;
  napi_value out;

  KS_NAPI_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  w = argc == 1 ? ks_napi_get_watch(env, argv[0]) : NULL;
  if (w == NULL) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", "watchBegin(watch) takes an open watch");
    return NULL;
  }
  b = calloc(1, sizeof *b);
  if (b == NULL) {
    napi_throw_error(env, "ENOMEM", "kern-sandbox: out of memory");
    return NULL;
  }
  if (!ks_ws_watch_try_begin(w, &b->call)) {
    free(b);
    KS_NAPI_CALL(env, napi_get_null(env, &out));
    return out;
  }
  ks_ws_watch_ref(w);
  b->watch = w;
  b->open = true;
  if (napi_create_external(env, b, ks__begun_finalize, NULL, &out) != napi_ok) {
    ks__begun_finalize(env, b, NULL);
    ks_napi_throw_last(env);
    return NULL;
  }
  if (napi_type_tag_object(env, out, &ks__begun_tag) != napi_ok) {
    ks_napi_throw_last(env);
    return NULL; /* the finalizer abandons it */
  }
  return out;
}

bool ks_napi_take_begun(napi_env env, napi_value v, const struct ks_ws_watch *watch,
                        struct ks_ws_watch_call *out) {
  struct ks__begun *b = NULL;
  bool tagged = false;

  if (napi_check_object_type_tag(env, v, &ks__begun_tag, &tagged) != napi_ok || !tagged ||
      napi_get_value_external(env, v, (void **) &b) != napi_ok || b == NULL || !b->open ||
      b->watch != watch)
    return false;
  *out = b->call;
  memset(&b->call, 0, sizeof b->call);
  b->open = false;
  /* The run holds the watch now: the handle, collected whenever the GC
   * gets to it, must not keep the session's watch (its descriptors) open
   * past close(). Never the last reference: the run's request has one. */
  ks_ws_watch_unref(b->watch);
  b->watch = NULL;
  return true;
}

/* The release runs on a libuv worker: the last reference frees the
 * tracker's index and inotify watches, work that grows with the workspace
 * and must not hold the JS thread. */
struct ks__watch_release {
  napi_async_work work;
  napi_deferred deferred;
  struct ks_ws_watch *watch;
};

static void ks__watch_release_execute(napi_env env, void *data) {
  struct ks__watch_release *r = data;
  (void) env;
  ks_ws_watch_unref(r->watch);
  r->watch = NULL;
}

static void ks__watch_release_complete(napi_env env, napi_status status, void *data) {
  struct ks__watch_release *r = data;
  napi_value undefined = NULL;
  if (status != napi_ok && r->watch != NULL)
    ks_ws_watch_unref(r->watch); /* cancelled: release it here after all */
  (void) napi_get_undefined(env, &undefined);
  (void) napi_resolve_deferred(env, r->deferred, undefined);
  (void) napi_delete_async_work(env, r->work);
  free(r);
}

/* wsWatchClose(handle) -> Promise: releases the session's reference now
 * (the inotify instance and its watches are a per-user resource), off the
 * JS thread; idempotent. */
static napi_value ks__ws_watch_close(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  struct ks__watch_handle *h = NULL;
  struct ks__watch_release *r;
  napi_value promise;
  napi_value name;
  bool tagged = false;

  KS_NAPI_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc != 1 || napi_check_object_type_tag(env, argv[0], &ks__watch_tag, &tagged) != napi_ok ||
      !tagged || napi_get_value_external(env, argv[0], (void **) &h) != napi_ok) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", "wsWatchClose(handle) takes a wsWatch handle");
    return NULL;
  }
  r = calloc(1, sizeof *r);
  if (r == NULL) {
    napi_throw_error(env, "ENOMEM", "kern-sandbox: out of memory");
    return NULL;
  }
  if (napi_create_promise(env, &r->deferred, &promise) != napi_ok ||
      napi_create_string_utf8(env, "kern-sandbox:wsWatchClose", NAPI_AUTO_LENGTH, &name) !=
          napi_ok ||
      napi_create_async_work(env, NULL, name, ks__watch_release_execute,
                             ks__watch_release_complete, r, &r->work) != napi_ok) {
    free(r);
    ks_napi_throw_last(env);
    return NULL;
  }
  r->watch = h->watch; /* NULL if closed before: the work then does nothing */
  h->watch = NULL;
  if (napi_queue_async_work(env, r->work) != napi_ok) {
    ks_ws_watch_unref(r->watch);
    r->watch = NULL;
    (void) napi_delete_async_work(env, r->work);
    ks_napi_throw_last(env);
    return NULL; /* the deferred stays unsettled, but the caller got a throw */
  }
  return promise;
}

bool ks_napi_init_watch(napi_env env, napi_value exports) {
  static const struct ks_napi_fn fns[] = {
      {"wsWatch", ks__ws_watch},
      {"wsWatchClose", ks__ws_watch_close},
      {"watchBegin", ks__watch_begin},
  };
  return ks_napi_export(env, exports, fns, KS_ARRAY_SIZE(fns));
}
