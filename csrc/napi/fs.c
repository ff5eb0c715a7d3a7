/* Workspace file operations for the JS facade: wsOpen, wsClose, wsCloseLater,
 * wsWriteFile, wsReadFile, wsList, wsRemoveTree; and kernOpen.
 *
 * Glue only: unpack arguments on the JS thread, run exactly one core call
 * from wsfs.c or wsscan.c on a libuv worker (napi async work), and settle a
 * promise with the result or a Node-shaped system error. Every task holds
 * its own duplicate of the workspace descriptor, so a wsClose() racing with
 * work in flight can never make the worker resolve paths beneath some other
 * directory that reused the descriptor number. */
#define _GNU_SOURCE /* O_PATH */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../core/util.h"
#include "../core/workspace/wsfs.h"
#include "../core/workspace/wsscan.h"
#include "addon.h"
#include "convert.h"

enum ks__fs_op {
  KS__FS_WRITE,
  KS__FS_READ,
  KS__FS_LIST,
  KS__FS_REMOVE_TREE,
};

struct ks__fs_task {
  enum ks__fs_op op;
  napi_async_work work;
  napi_deferred deferred;
  napi_ref ref; /* the Buffer being written */
  int rootfd; /* our own duplicate, closed when the task is freed */
  char *rel;
  const void *data; /* wsWriteFile: the Buffer's bytes, kept alive by ref */
  size_t len;
  size_t max;
  int result;
  struct ks_err err;
  /* results, owned by the task until handed to JS */
  void *out_data;
  size_t out_len;
  struct ks_ws_entry *entries;
  size_t n;
};

/* ---- worker thread -------------------------------------------------------- */

static void ks__fs_execute(napi_env env, void *data) {
  struct ks__fs_task *t = data;
  (void) env;

  switch (t->op) {
  case KS__FS_WRITE:
    t->result = ks_ws_write_file(t->rootfd, t->rel, t->data, t->len, &t->err);
    break;
  case KS__FS_READ:
    t->result =
        ks_ws_read_file(t->rootfd, t->rel, t->max, &t->out_data, &t->out_len, &t->err);
    break;
  case KS__FS_LIST:
    t->result = ks_ws_list(t->rootfd, t->rel, &t->entries, &t->n, &t->err);
    break;
  case KS__FS_REMOVE_TREE:
    t->result = ks_ws_remove_tree(t->rootfd, &t->err);
    break;
  }
}

/* ---- JS thread: results ---------------------------------------------------- */

static void ks__fs_task_free(napi_env env, struct ks__fs_task *t) {
  if (t->ref != NULL)
    (void) napi_delete_reference(env, t->ref);
  if (t->work != NULL)
    (void) napi_delete_async_work(env, t->work);
  if (t->rootfd >= 0)
    ks_close_keep_errno(t->rootfd);
  free(t->rel);
  free(t->out_data);
  free(t->entries);
  free(t);
}

static void ks__free_external(napi_env env, void *data, void *hint) {
  (void) env;
  (void) hint;
  free(data);
}

/* Hands the bytes read to a Buffer without copying them. */
static napi_value ks__read_value(napi_env env, struct ks__fs_task *t) {
  napi_value buf = NULL;
  void *copy;

  if (t->out_len == 0) {
    if (napi_create_buffer(env, 0, &copy, &buf) != napi_ok)
      return NULL;
    return buf;
  }
  if (napi_create_external_buffer(env, t->out_len, t->out_data, ks__free_external, NULL,
                                  &buf) == napi_ok) {
    t->out_data = NULL; /* the Buffer owns it now */
    return buf;
  }
  /* Runtimes that forbid external buffers get a copy. */
  if (napi_create_buffer_copy(env, t->out_len, t->out_data, &copy, &buf) != napi_ok)
    return NULL;
  return buf;
}

static napi_value ks__list_value(napi_env env, struct ks__fs_task *t) {
  napi_value arr;

  if (napi_create_array_with_length(env, t->n, &arr) != napi_ok)
    return NULL;
  for (size_t i = 0; i < t->n; i++) {
    napi_value pair;
    napi_value path = ks_napi_path_value(env, t->entries[i].path);
    napi_value size;
    if (path == NULL || napi_create_array_with_length(env, 2, &pair) != napi_ok ||
        napi_create_double(env, (double) t->entries[i].size, &size) != napi_ok ||
        napi_set_element(env, pair, 0, path) != napi_ok ||
        napi_set_element(env, pair, 1, size) != napi_ok ||
        napi_set_element(env, arr, (uint32_t) i, pair) != napi_ok)
      return NULL;
  }
  return arr;
}

static napi_value ks__fs_value(napi_env env, struct ks__fs_task *t) {
  napi_value v = NULL;

  switch (t->op) {
  case KS__FS_WRITE:
  case KS__FS_REMOVE_TREE:
    if (napi_get_undefined(env, &v) != napi_ok)
      return NULL;
    return v;
  case KS__FS_READ:
    return ks__read_value(env, t);
  case KS__FS_LIST:
    return ks__list_value(env, t);
  }
  return NULL;
}

static void ks__fs_settle(napi_env env, struct ks__fs_task *t, napi_status status) {
  napi_value value;

  if (status == napi_cancelled) {
    /* The environment is shutting down before the work ran. */
    ks_err_set(&t->err, ECANCELED, "uv_queue_work", NULL);
    t->result = -ECANCELED;
  }
  if (t->result < 0) {
    value = ks_napi_system_error(env, &t->err);
    if (value != NULL) {
      (void) napi_reject_deferred(env, t->deferred, value);
      return;
    }
  } else {
    value = ks__fs_value(env, t);
    if (value != NULL) {
      (void) napi_resolve_deferred(env, t->deferred, value);
      return;
    }
  }
  ks_napi_reject_pending(env, t->deferred,
                     "kern-sandbox: could not build the file operation result");
}

static void ks__fs_complete(napi_env env, napi_status status, void *data) {
  struct ks__fs_task *t = data;

  ks__fs_settle(env, t, status);
  ks__fs_task_free(env, t); /* always: refs, work, descriptor, memory */
}

/* ---- JS thread: requests ---------------------------------------------------- */

/* Returns a promise for t: queued, or already rejected with t->err (a
 * failure found while unpacking, such as a bad path). Consumes t. */
static napi_value ks__fs_start(napi_env env, struct ks__fs_task *t, const char *name) {
  napi_value promise = NULL;
  napi_value resource;

  if (napi_create_promise(env, &t->deferred, &promise) != napi_ok) {
    ks_napi_throw_last(env);
    ks__fs_task_free(env, t);
    return NULL;
  }
  if (t->result < 0) {
    ks_napi_reject_system(env, t->deferred, &t->err);
    ks__fs_task_free(env, t);
    return promise;
  }
  if (napi_create_string_utf8(env, name, NAPI_AUTO_LENGTH, &resource) != napi_ok ||
      napi_create_async_work(env, NULL, resource, ks__fs_execute, ks__fs_complete, t,
                             &t->work) != napi_ok ||
      napi_queue_async_work(env, t->work) != napi_ok) {
    ks_napi_throw_last(env);
    ks_napi_reject_pending(env, t->deferred,
                       "kern-sandbox: could not queue the file operation");
    ks__fs_task_free(env, t);
  }
  return promise;
}

static bool ks__get_args(napi_env env, napi_callback_info info, size_t want,
                         napi_value *argv, const char *fn) {
  size_t argc = want;

  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok) {
    ks_napi_throw_last(env);
    return false;
  }
  if (argc != want) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", fn);
    return false;
  }
  return true;
}

/* A descriptor number: an integer in [0, INT32_MAX]. */
static bool ks__get_fd(napi_env env, napi_value v, int *ret_fd) {
  double d;

  if (napi_get_value_double(env, v, &d) != napi_ok) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE",
                          "kern-sandbox: fd must be a number");
    return false;
  }
  if (!(d >= 0 && d <= INT32_MAX) || d != (double) (int32_t) d) {
    napi_throw_range_error(env, "ERR_OUT_OF_RANGE", "kern-sandbox: fd out of range");
    return false;
  }
  *ret_fd = (int32_t) d;
  return true;
}

/* Allocates a task holding a duplicate of the workspace descriptor. A bad
 * descriptor is not thrown: it is recorded for ks__fs_start to reject. */
static struct ks__fs_task *ks__fs_task_new(napi_env env, enum ks__fs_op op,
                                           napi_value jsfd) {
  struct ks__fs_task *t;
  int fd;

  if (!ks__get_fd(env, jsfd, &fd))
    return NULL;
  t = calloc(1, sizeof *t);
  if (t == NULL) {
    napi_throw_error(env, "ENOMEM", "kern-sandbox: out of memory");
    return NULL;
  }
  t->op = op;
  t->rootfd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  if (t->rootfd < 0)
    t->result = ks_err_set(&t->err, errno, "fcntl", NULL);
  return t;
}

/* Copies a string argument, throwing a TypeError that names it otherwise. */
static char *ks__get_string_arg(napi_env env, napi_value v, const char *what,
                                size_t *ret_len) {
  napi_valuetype type;

  if (napi_typeof(env, v, &type) != napi_ok || type != napi_string) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", what);
    return NULL;
  }
  return ks_napi_get_string(env, v, ret_len);
}

/* Copies the path argument and checks its shape; a bad shape is recorded
 * in t for ks__fs_start to reject, as the core would. */
static bool ks__fs_get_rel(napi_env env, struct ks__fs_task *t, napi_value v, bool dir) {
  size_t len = 0;

  t->rel = ks__get_string_arg(env, v, "kern-sandbox: the path must be a string", &len);
  if (t->rel == NULL)
    return false;
  if (t->result == 0) {
    if (dir)
      t->result = ks_ws_check_dir_rel(t->rel, len, &t->err);
    else
      t->result = ks_ws_check_rel(t->rel, len, &t->err);
  }
  return true;
}

/* wsWriteFile(rootfd, rel, data: Buffer) -> Promise<void> */
static napi_value ks__ws_write_file(napi_env env, napi_callback_info info) {
  napi_value argv[3];
  struct ks__fs_task *t;
  bool is_buffer = false;
  void *data = NULL;
  size_t len = 0;

  if (!ks__get_args(env, info, 3, argv,
                    "wsWriteFile(rootfd, rel, data) takes 3 arguments"))
    return NULL;
  if (napi_is_buffer(env, argv[2], &is_buffer) != napi_ok || !is_buffer) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE",
                          "kern-sandbox: data must be a Buffer");
    return NULL;
  }
  KS_NAPI_CALL(env, napi_get_buffer_info(env, argv[2], &data, &len));
  t = ks__fs_task_new(env, KS__FS_WRITE, argv[0]);
  if (t == NULL)
    return NULL;
  if (!ks__fs_get_rel(env, t, argv[1], false)) {
    ks__fs_task_free(env, t);
    return NULL;
  }
  /* Not copied: the reference keeps the Buffer alive until complete. */
  if (napi_create_reference(env, argv[2], 1, &t->ref) != napi_ok) {
    ks_napi_throw_last(env);
    ks__fs_task_free(env, t);
    return NULL;
  }
  t->data = data;
  t->len = len;
  return ks__fs_start(env, t, "kern-sandbox:wsWriteFile");
}

/* wsReadFile(rootfd, rel, maxBytes) -> Promise<Buffer> */
static napi_value ks__ws_read_file(napi_env env, napi_callback_info info) {
  napi_value argv[3];
  struct ks__fs_task *t;
  double max;

  if (!ks__get_args(env, info, 3, argv,
                    "wsReadFile(rootfd, rel, maxBytes) takes 3 arguments"))
    return NULL;
  if (napi_get_value_double(env, argv[2], &max) != napi_ok) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE",
                          "kern-sandbox: maxBytes must be a number");
    return NULL;
  }
  /* The facade validated it; re-check only what protects the cast. */
  if (!(max >= 0 && max <= 9007199254740991.0)) {
    napi_throw_range_error(env, "ERR_OUT_OF_RANGE",
                           "kern-sandbox: maxBytes out of range");
    return NULL;
  }
  t = ks__fs_task_new(env, KS__FS_READ, argv[0]);
  if (t == NULL)
    return NULL;
  if (!ks__fs_get_rel(env, t, argv[1], false)) {
    ks__fs_task_free(env, t);
    return NULL;
  }
  t->max = (size_t) max;
  return ks__fs_start(env, t, "kern-sandbox:wsReadFile");
}

/* wsList(rootfd, subdir) -> Promise<Array<[path, size]>> */
static napi_value ks__ws_list(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  struct ks__fs_task *t;

  if (!ks__get_args(env, info, 2, argv, "wsList(rootfd, subdir) takes 2 arguments"))
    return NULL;
  t = ks__fs_task_new(env, KS__FS_LIST, argv[0]);
  if (t == NULL)
    return NULL;
  if (!ks__fs_get_rel(env, t, argv[1], true)) {
    ks__fs_task_free(env, t);
    return NULL;
  }
  return ks__fs_start(env, t, "kern-sandbox:wsList");
}

/* wsRemoveTree(rootfd) -> Promise<void> */
static napi_value ks__ws_remove_tree(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  struct ks__fs_task *t;

  if (!ks__get_args(env, info, 1, argv, "wsRemoveTree(rootfd) takes 1 argument"))
    return NULL;
  t = ks__fs_task_new(env, KS__FS_REMOVE_TREE, argv[0]);
  if (t == NULL)
    return NULL;
  return ks__fs_start(env, t, "kern-sandbox:wsRemoveTree");
}

/* Hands a session's new descriptor to JS, held by the environment until
 * wsClose (see ks_addon_hold). Takes own_dir. */
static napi_value ks__held_fd(napi_env env, int fd, char *own_dir) {
  struct ks_addon *addon;
  napi_value out;

  if (napi_get_instance_data(env, (void **) &addon) != napi_ok ||
      napi_create_int32(env, fd, &out) != napi_ok) {
    free(own_dir);
    (void) close(fd);
    ks_napi_throw_last(env);
    return NULL;
  }
  if (!ks_addon_hold(env, addon, fd, own_dir)) {
    (void) close(fd);
    return NULL;
  }
  return out;
}

/* open(2) of an absolute path a JS caller gave: the fd, or -1 with a Node
 * system error thrown. Frees nothing. */
static int ks__open_or_throw(napi_env env, const char *path, int flags) {
  struct ks_err err;
  int fd = open(path, flags);
  if (fd < 0) {
    ks_err_set(&err, errno, "open", path);
    ks_napi_throw_system(env, &err);
  }
  return fd;
}

/* wsOpen(absPath, created) -> fd. Synchronous: one open(2), at
 * Sandbox.open(). created: the session made this directory, so it is
 * removed if the environment ends with the session still open. */
static napi_value ks__ws_open(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  bool created = false;
  char *path;
  int fd;

  if (!ks__get_args(env, info, 2, argv, "wsOpen(absPath, created) takes 2 arguments"))
    return NULL;
  if (napi_get_value_bool(env, argv[1], &created) != napi_ok) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", "kern-sandbox: created must be a boolean");
    return NULL;
  }
  path = ks__get_string_arg(env, argv[0], "kern-sandbox: absPath must be a string", NULL);
  if (path == NULL)
    return NULL;
  fd = ks__open_or_throw(env, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    free(path);
    return NULL;
  }
  if (!created) {
    free(path);
    path = NULL;
  }
  return ks__held_fd(env, fd, path);
}

/* kernOpen(absPath) -> fd. Synchronous, at Sandbox.open(): the kern binary
 * held open (O_PATH, close-on-exec) and executed through the descriptor, so
 * a file renamed over the path later never runs (A36). O_NOFOLLOW: the path
 * is already resolved; a symlink swapped in since opens as a link, which the
 * caller's fstat check refuses. Closed with wsClose. */
static napi_value ks__kern_open(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  char *path;
  int fd;

  if (!ks__get_args(env, info, 1, argv, "kernOpen(absPath) takes 1 argument"))
    return NULL;
  path = ks__get_string_arg(env, argv[0], "kern-sandbox: absPath must be a string", NULL);
  if (path == NULL)
    return NULL;
  fd = ks__open_or_throw(env, path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
  free(path);
  if (fd < 0)
    return NULL;
  return ks__held_fd(env, fd, NULL);
}

/* wsClose(fd) -> undefined. Synchronous. */
static napi_value ks__boolean(napi_env env, bool v) {
  napi_value out = NULL;
  (void) napi_get_boolean(env, v, &out);
  return out;
}

/* The one argument of wsClose and wsCloseLater, released from the addon's
 * holds: 1 and *fd, ours to close now; 0 for a descriptor this addon does not
 * hold (after the exit hook or a Worker's teardown closed them all, a late
 * Sandbox.close() would otherwise close whatever reused the number: a file of
 * the program, a libuv handle); -1 with an exception pending. */
static int ks__release_held_arg(napi_env env, napi_callback_info info, const char *usage,
                                int *fd) {
  struct ks_addon *addon = NULL;
  napi_value argv[1];

  if (!ks__get_args(env, info, 1, argv, usage) || !ks__get_fd(env, argv[0], fd))
    return -1;
  return napi_get_instance_data(env, (void **) &addon) == napi_ok && addon != NULL &&
         ks_addon_release(addon, *fd);
}

static napi_value ks__ws_close(napi_env env, napi_callback_info info) {
  struct ks_err err;
  int fd;
  int held = ks__release_held_arg(env, info, "wsClose(fd) takes 1 argument", &fd);

  if (held <= 0)
    return held < 0 ? NULL : ks__boolean(env, false);
  /* EINTR still closes the descriptor on Linux: never retry. */
  if (close(fd) < 0 && errno != EINTR) {
    ks_err_set(&err, errno, "close", NULL);
    ks_napi_throw_system(env, &err);
    return NULL;
  }
  return ks__boolean(env, true);
}

/* ---- wsCloseLater: a close that may wait on the disk, off every pool ------ */

/* Closes started by wsCloseLater and not yet done, in the whole process. */
static atomic_int ks__closes_pending;

static void *ks__closer_main(void *arg) {
  (void) close((int) (intptr_t) arg); /* EINTR still closes it on Linux */
  atomic_fetch_sub(&ks__closes_pending, 1);
  return NULL;
}

/* wsCloseLater(fd) -> boolean: false, closing nothing, for a descriptor this
 * addon does not hold (as wsClose). The descriptor is closed by a detached
 * thread of its own: when it is the last reference to a workspace the
 * session removed, closing it evicts the directory's inode, and a file
 * system mounted with -o discard then waits for the device, behind
 * whatever else writes there (kern's teardowns). Not on libuv's pool
 * either: four such closes would hold all of its threads, and
 * the program's own fs, dns and zlib work behind them. The number stays
 * taken until that thread has closed it. */
static napi_value ks__ws_close_later(napi_env env, napi_callback_info info) {
  pthread_attr_t attr;
  pthread_t thread;
  sigset_t all, old;
  int fd;
  int r;
  int held = ks__release_held_arg(env, info, "wsCloseLater(fd) takes 1 argument", &fd);

  if (held <= 0)
    return held < 0 ? NULL : ks__boolean(env, false);
  atomic_fetch_add(&ks__closes_pending, 1);
  r = pthread_attr_init(&attr);
  if (r == 0) {
    (void) pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    (void) pthread_attr_setstacksize(&attr, 64 * 1024);
    /* Every signal blocked: the host's handlers run on its own threads. */
    sigfillset(&all);
    (void) pthread_sigmask(SIG_SETMASK, &all, &old);
    r = pthread_create(&thread, &attr, ks__closer_main, (void *) (intptr_t) fd);
    (void) pthread_sigmask(SIG_SETMASK, &old, NULL);
    (void) pthread_attr_destroy(&attr);
  }
  if (r != 0) /* no thread to be had: close it here, as wsClose does */
    (void) ks__closer_main((void *) (intptr_t) fd);
  return ks__boolean(env, true);
}

/* The wsCloseLater closes not yet done (testing.c's pendingCloses). */
int ks_napi_pending_closes(void) {
  return atomic_load(&ks__closes_pending);
}

bool ks_napi_init_fs(napi_env env, napi_value exports) {
  static const struct ks_napi_fn table[] = {
      {"wsOpen", ks__ws_open},
      {"wsClose", ks__ws_close},
      {"wsCloseLater", ks__ws_close_later},
      {"kernOpen", ks__kern_open},
      {"wsWriteFile", ks__ws_write_file},
      {"wsReadFile", ks__ws_read_file},
      {"wsList", ks__ws_list},
      {"wsRemoveTree", ks__ws_remove_tree},
  };
  return ks_napi_export(env, exports, table, KS_ARRAY_SIZE(table));
}
