/* A call's stdin from JS (core/box/feed.h): stdinOpen() -> a handle;
 * stdinWrite(handle, buf) puts one chunk of at most STDIN_CHUNK_MAX bytes
 * in the feed's slot (true), or refuses it while the slot is full (false:
 * the caller waits for its call's onStdin, lib/stdin.js); stdinEnd(handle)
 * ends the feed after what was put. Each wakes the supervisor, which
 * writes on to the box the feed is attached to; none waits for a box.
 * And pipePair(), a process's stdin pipe, which this thread writes itself. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "../core/box/feed.h"
#include "addon.h"
#include "call.h"
#include "handle.h"

static napi_value ks__stdin_open(napi_env env, napi_callback_info info) {
  struct ks_feed *f;
  (void) info;

  f = ks_feed_new();
  if (f == NULL) {
    napi_throw_error(env, "ENOMEM", "kern-sandbox: out of memory");
    return NULL;
  }
  return ks_handle_new_feed(env, f);
}

/* The feed of args[0], and the supervisor (started on first use). */
static struct ks_feed *ks__feed_arg(napi_env env, napi_callback_info info, size_t want,
                                    napi_value *argv, const char *fn, struct ks_addon **addon) {
  size_t argc = 2;
  struct ks_feed *f;
  struct ks_err err;

  KS_NAPI_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  KS_NAPI_CALL(env, napi_get_instance_data(env, (void **) addon));
  if (argc != want) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE",
                          want == 2 ? "kern-sandbox: stdinWrite(handle, buf) takes 2 arguments"
                                    : "kern-sandbox: stdinEnd(handle) takes 1 argument");
    return NULL;
  }
  f = ks_handle_feed(env, argv[0], fn);
  if (f == NULL)
    return NULL;
  ks_err_clear(&err);
  if (ks_napi_ensure_supervisor(env, *addon, &err) < 0) {
    ks_napi_throw_system(env, &err);
    return NULL;
  }
  return f;
}

static napi_value ks__stdin_write(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  struct ks_addon *addon;
  struct ks_feed *f = ks__feed_arg(env, info, 2, argv, "stdinWrite", &addon);
  void *data;
  size_t len;
  int r;
  napi_value out;

  if (f == NULL || !ks_napi_get_buffer(env, argv[1], &data, &len))
    return NULL;
  r = ks_feed_put(f, data, len);
  if (r < 0) {
    struct ks_err err;
    ks_err_set(&err, -r, "stdinWrite", NULL);
    ks_napi_throw_system(env, &err);
    return NULL;
  }
  if (r == 1)
    (void) ks_sup_feed_wake(addon->sup, f); /* after shutdown: no box reads it */
  KS_NAPI_CALL(env, napi_get_boolean(env, r == 1, &out));
  return out;
}

static napi_value ks__stdin_end(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  struct ks_addon *addon;
  struct ks_feed *f = ks__feed_arg(env, info, 1, argv, "stdinEnd", &addon);

  if (f == NULL)
    return NULL;
  ks_feed_end(f);
  (void) ks_sup_feed_wake(addon->sup, f);
  return NULL;
}

/* pipePair() -> [readFd, writeFd]: a process's stdin (lib/process.js),
 * both ends close-on-exec. The read end goes to its box (BoxOptions.stdinFd,
 * owned by the engine from then on); the write end is this thread's, as a
 * Node pipe socket. */
static napi_value ks__pipe_pair(napi_env env, napi_callback_info info) {
  int fds[2];
  napi_value out;
  napi_value v;
  struct ks_err err;

  (void) info;
  if (pipe2(fds, O_CLOEXEC) < 0) {
    ks_err_set(&err, errno, "pipe2", NULL);
    ks_napi_throw_system(env, &err);
    return NULL;
  }
  if (napi_create_array_with_length(env, 2, &out) != napi_ok)
    goto fail;
  for (uint32_t i = 0; i < 2; i++) {
    if (napi_create_int32(env, fds[i], &v) != napi_ok || napi_set_element(env, out, i, v) != napi_ok)
      goto fail;
  }
  return out;
fail:
  (void) close(fds[0]);
  (void) close(fds[1]);
  ks_napi_throw_last(env);
  return NULL;
}

bool ks_napi_init_feed(napi_env env, napi_value exports) {
  static const struct ks_napi_fn fns[] = {
      {"stdinOpen", ks__stdin_open},
      {"pipePair", ks__pipe_pair},
      {"stdinWrite", ks__stdin_write},
      {"stdinEnd", ks__stdin_end},
  };
  napi_value v;

  if (!ks_napi_export(env, exports, fns, sizeof fns / sizeof fns[0]))
    return false;
  return napi_create_uint32(env, KS_FEED_CHUNK_MAX, &v) == napi_ok &&
         ks_napi_set(env, exports, "STDIN_CHUNK_MAX", v);
}
