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
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/util.h"
#include "../core/workspace/closer.h"
#include "../core/workspace/wsfs.h"
#include "../core/workspace/wsscan.h"
#include "addon.h"
#include "convert.h"
#include "handle.h"

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
  int root; /* our own duplicate, closed when the task is freed */
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
    t->result = ks_ws_write_file(t->root, t->rel, t->data, t->len, &t->err);
    break;
  case KS__FS_READ:
    t->result =
        ks_ws_read_file(t->root, t->rel, t->max, &t->out_data, &t->out_len, &t->err);
    break;
  case KS__FS_LIST:
    t->result = ks_ws_list(t->root, t->rel, &t->entries, &t->n, &t->err);
    break;
  case KS__FS_REMOVE_TREE:
    t->result = ks_ws_remove_tree(t->root, &t->err);
    break;
  }
}

/* ---- JS thread: results ---------------------------------------------------- */

static void ks__fs_task_free(napi_env env, struct ks__fs_task *t) {
  if (t->ref != NULL)
    (void) napi_delete_reference(env, t->ref);
  if (t->work != NULL)
    (void) napi_delete_async_work(env, t->work);
  if (t->root >= 0)
    ks_close_keep_errno(t->root);
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

/* Allocates a task holding a duplicate of the descriptor of root, an open
 * workspace handle (else it throws: a TypeError, or EBADF once closed). A
 * failed duplicate is not thrown: it is recorded for ks__fs_start to reject. */
static struct ks__fs_task *ks__fs_task_new(napi_env env, enum ks__fs_op op, napi_value root,
                                           const char *fn) {
  struct ks_addon *addon;
  struct ks__fs_task *t;
  int fd;

  if (napi_get_instance_data(env, (void **) &addon) != napi_ok) {
    ks_napi_throw_last(env);
    return NULL;
  }
  if (!ks_handle_fd(env, addon, root, KS_HANDLE_WORKSPACE, fn, &fd))
    return NULL;
  t = calloc(1, sizeof *t);
  if (t == NULL) {
    napi_throw_error(env, "ENOMEM", "kern-sandbox: out of memory");
    return NULL;
  }
  t->op = op;
  t->root = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  if (t->root < 0)
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

/* wsWriteFile(root, rel, data: Buffer) -> Promise<void> */
static napi_value ks__ws_write_file(napi_env env, napi_callback_info info) {
  napi_value argv[3];
  struct ks__fs_task *t;
  bool is_buffer = false;
  void *data = NULL;
  size_t len = 0;

  if (!ks__get_args(env, info, 3, argv,
                    "wsWriteFile(root, rel, data) takes 3 arguments"))
    return NULL;
  if (napi_is_buffer(env, argv[2], &is_buffer) != napi_ok || !is_buffer) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE",
                          "kern-sandbox: data must be a Buffer");
    return NULL;
  }
  KS_NAPI_CALL(env, napi_get_buffer_info(env, argv[2], &data, &len));
  t = ks__fs_task_new(env, KS__FS_WRITE, argv[0], "wsWriteFile");
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

/* wsReadFile(root, rel, maxBytes) -> Promise<Buffer> */
static napi_value ks__ws_read_file(napi_env env, napi_callback_info info) {
  napi_value argv[3];
  struct ks__fs_task *t;
  double max;

  if (!ks__get_args(env, info, 3, argv,
                    "wsReadFile(root, rel, maxBytes) takes 3 arguments"))
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
  t = ks__fs_task_new(env, KS__FS_READ, argv[0], "wsReadFile");
  if (t == NULL)
    return NULL;
  if (!ks__fs_get_rel(env, t, argv[1], false)) {
    ks__fs_task_free(env, t);
    return NULL;
  }
  t->max = (size_t) max;
  return ks__fs_start(env, t, "kern-sandbox:wsReadFile");
}

/* wsList(root, subdir) -> Promise<Array<[path, size]>> */
static napi_value ks__ws_list(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  struct ks__fs_task *t;

  if (!ks__get_args(env, info, 2, argv, "wsList(root, subdir) takes 2 arguments"))
    return NULL;
  t = ks__fs_task_new(env, KS__FS_LIST, argv[0], "wsList");
  if (t == NULL)
    return NULL;
  if (!ks__fs_get_rel(env, t, argv[1], true)) {
    ks__fs_task_free(env, t);
    return NULL;
  }
  return ks__fs_start(env, t, "kern-sandbox:wsList");
}

/* wsRemoveTree(root) -> Promise<void> */
static napi_value ks__ws_remove_tree(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  struct ks__fs_task *t;

  if (!ks__get_args(env, info, 1, argv, "wsRemoveTree(root) takes 1 argument"))
    return NULL;
  t = ks__fs_task_new(env, KS__FS_REMOVE_TREE, argv[0], "wsRemoveTree");
  if (t == NULL)
    return NULL;
  return ks__fs_start(env, t, "kern-sandbox:wsRemoveTree");
}

/* Hands a session's new descriptor to JS as a handle of kind, held by the
 * environment until wsClose (see ks_addon_hold). Takes fd and own_dir. */
static napi_value ks__held_handle(napi_env env, enum ks_handle_kind kind, int fd, char *own_dir) {
  struct ks_addon *addon;

  if (napi_get_instance_data(env, (void **) &addon) != napi_ok) {
    free(own_dir);
    (void) close(fd);
    ks_napi_throw_last(env);
    return NULL;
  }
  return ks_handle_new(env, addon, kind, fd, own_dir, 0);
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

/* wsOpen(absPath, created) -> a workspace handle. Synchronous: one open(2), at
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
  return ks__held_handle(env, KS_HANDLE_WORKSPACE, fd, path);
}

/* Whether the file open at fd (O_PATH) starts with "#!", read through a
 * descriptor of its own on the same file (not the path); false when it
 * cannot be read (execute-only: execveat will tell). */
static bool ks__is_script(int fd) {
  char proc[40];
  char head[2];
  int rfd;
  ssize_t n;

  (void) snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
  rfd = open(proc, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (rfd < 0)
    return false;
  n = pread(rfd, head, sizeof head, 0);
  (void) close(rfd);
  return n == 2 && head[0] == '#' && head[1] == '!';
}

/* kernOpen(absPath) -> { handle, mode, uid, script }. Synchronous, at
 * Sandbox.open(): the kern binary held open (O_PATH, close-on-exec) and
 * executed through the descriptor, so a file renamed over the path later
 * never runs (A36); mode and uid are the opened file's (fstat), script
 * whether it starts with "#!", for the caller to check the file it got, not
 * the path. O_NOFOLLOW: the path is already resolved; a symlink swapped in
 * since opens as a link, whose mode the caller refuses. Closed with wsClose. */
static napi_value ks__kern_open(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  napi_value out;
  napi_value handle;
  struct stat st;
  struct ks_err err;
  bool script;
  char *path;
  int fd;

  if (!ks__get_args(env, info, 1, argv, "kernOpen(absPath) takes 1 argument"))
    return NULL;
  path = ks__get_string_arg(env, argv[0], "kern-sandbox: absPath must be a string", NULL);
  if (path == NULL)
    return NULL;
  fd = ks__open_or_throw(env, path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0 && fstat(fd, &st) < 0) {
    ks_err_set(&err, errno, "fstat", path);
    ks_napi_throw_system(env, &err);
    (void) close(fd);
    fd = -1;
  }
  free(path);
  if (fd < 0)
    return NULL;
  script = S_ISREG(st.st_mode) && ks__is_script(fd);
  if (napi_create_object(env, &out) != napi_ok) {
    (void) close(fd);
    ks_napi_throw_last(env);
    return NULL;
  }
  handle = ks__held_handle(env, KS_HANDLE_KERN, fd, NULL);
  if (handle == NULL || !ks_napi_set(env, out, "handle", handle) ||
      !ks_napi_set(env, out, "mode", ks_napi_number(env, (double) st.st_mode)) ||
      !ks_napi_set(env, out, "uid", ks_napi_number(env, (double) st.st_uid)) ||
      !ks_napi_set(env, out, "script", ks_napi_bool(env, script)))
    return NULL;
  return out;
}

static napi_value ks__boolean(napi_env env, bool v) {
  napi_value out = NULL;
  (void) napi_get_boolean(env, v, &out);
  return out;
}

/* The one argument of wsClose (a handle of any kind) and wsCloseLater (a
 * workspace's), released from the addon's holds: 1 and *fd, ours to close
 * now; 0 for a handle closed already (by JS, or by the exit hook or a
 * Worker's teardown: a late Sandbox.close() then closes nothing); -1 with an
 * exception pending. */
static int ks__release_held_arg(napi_env env, napi_callback_info info, enum ks_handle_kind kind,
                                const char *fn, int *fd) {
  struct ks_addon *addon = NULL;
  napi_value argv[1];
  char usage[64];

  (void) snprintf(usage, sizeof usage, "kern-sandbox: %s(handle) takes 1 argument", fn);
  if (!ks__get_args(env, info, 1, argv, usage))
    return -1;
  if (napi_get_instance_data(env, (void **) &addon) != napi_ok) {
    ks_napi_throw_last(env);
    return -1;
  }
  return ks_handle_release(env, addon, argv[0], kind, fn, fd);
}

/* wsClose(handle) -> boolean: closes a workspace's, kern's or parked box's
 * descriptor; false if the handle was closed already. Synchronous. */
static napi_value ks__ws_close(napi_env env, napi_callback_info info) {
  struct ks_err err;
  int fd;
  int held = ks__release_held_arg(env, info, KS_HANDLE_ANY, "wsClose", &fd);

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

/* wsCloseLater(handle) -> boolean: false, closing nothing, for a workspace
 * handle closed already (as wsClose). The descriptor goes to the closer
 * thread (core/workspace/closer.h): when it is the last reference to a
 * workspace the session removed, its close may wait on the disk. */
static napi_value ks__ws_close_later(napi_env env, napi_callback_info info) {
  int fd;
  int held = ks__release_held_arg(env, info, KS_HANDLE_WORKSPACE, "wsCloseLater", &fd);

  if (held <= 0)
    return held < 0 ? NULL : ks__boolean(env, false);
  ks_closer_close(fd);
  return ks__boolean(env, true);
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
