#define _GNU_SOURCE
/* snapshot()/restore() glue. Synchronous, because the 0.1.1 API is: these
 * run on the JS thread, as the reference's did, but in C and streaming. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../core/archive/snapshot.h"
#include "../core/util.h"
#include "addon.h"
#include "handle.h"

static bool ks__args(napi_env env, napi_callback_info info, size_t want, napi_value *argv) {
  size_t argc = want;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok) {
    ks_napi_throw_last(env);
    return false;
  }
  if (argc != want) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", "kern-sandbox: wrong argument count");
    return false;
  }
  return true;
}

/* The descriptor of root, an open workspace handle, for the native fn. */
static bool ks__root(napi_env env, napi_value root, const char *fn, int *ret) {
  struct ks_addon *addon;
  if (napi_get_instance_data(env, (void **) &addon) != napi_ok) {
    ks_napi_throw_last(env);
    return false;
  }
  return ks_handle_fd(env, addon, root, KS_HANDLE_WORKSPACE, fn, ret);
}

/* wsSnapshot(root, destDir, destName): writes destDir/destName through a
 * temp file renamed into place. */
static napi_value ks__ws_snapshot(napi_env env, napi_callback_info info) {
  napi_value argv[3];
  struct ks_err err;
  char errpath[4096];
  char *dir = NULL;
  char *name = NULL;
  int rootfd;
  int dirfd = -1;
  int r;

  if (!ks__args(env, info, 3, argv) || !ks__root(env, argv[0], "wsSnapshot", &rootfd))
    return NULL;
  dir = ks_napi_get_string(env, argv[1], NULL);
  name = dir != NULL ? ks_napi_get_string(env, argv[2], NULL) : NULL;
  if (name == NULL)
    goto out;
  ks_err_clear(&err);
  dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (dirfd < 0) {
    ks_err_set(&err, errno, "open", dir);
    ks_napi_throw_system(env, &err);
    goto out;
  }
  r = ks_snapshot_to(rootfd, dirfd, name, errpath, sizeof errpath, &err);
  if (r < 0)
    ks_napi_throw_system(env, &err);
out:
  if (dirfd >= 0)
    (void) close(dirfd);
  free(dir);
  free(name);
  return NULL;
}

/* Whether a restore failure is the archive's own: reading or inflating
 * it, or refusing what it holds (syscall "restore", with the reason). */
static bool ks__about_archive(const char *syscall) {
  static const char *const mine[] = {"fstat", "read", "inflate", "inflateInit2", "restore"};
  if (syscall == NULL)
    return false;
  for (size_t i = 0; i < sizeof mine / sizeof mine[0]; i++) {
    if (strcmp(syscall, mine[i]) == 0)
      return true;
  }
  return false;
}

/* wsRestore(root, srcPath): an archive refusal throws an error that also
 * carries `reason` and `member`. */
static napi_value ks__ws_restore(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  struct ks_restore_report rep;
  struct ks_err err;
  char *src = NULL;
  int rootfd;
  int fd;
  int r;

  if (!ks__args(env, info, 2, argv) || !ks__root(env, argv[0], "wsRestore", &rootfd))
    return NULL;
  src = ks_napi_get_string(env, argv[1], NULL);
  if (src == NULL)
    return NULL;
  ks_err_clear(&err);
  /* O_NONBLOCK: a FIFO at src must not hang the thread (it is refused). */
  fd = open(src, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    ks_err_set(&err, errno, "open", src);
    ks_napi_throw_system(env, &err);
    free(src);
    return NULL;
  }
  r = ks_restore_from(rootfd, fd, &rep, &err);
  (void) close(fd);
  if (r < 0) {
    napi_value e;
    napi_value v;
    /* The archive's path only where the archive is what failed: a failure
     * in the workspace (ENOSPC while writing a member) is not the
     * snapshot file's, and says so by having no path. */
    if (err.path == NULL && ks__about_archive(err.syscall))
      err.path = src;
    e = ks_napi_system_error(env, &err);
    if (e != NULL && rep.message[0] != '\0') {
      if (napi_create_string_utf8(env, rep.message, NAPI_AUTO_LENGTH, &v) == napi_ok)
        (void) ks_napi_set(env, e, "reason", v);
      if (rep.member[0] != '\0' &&
          napi_create_string_utf8(env, rep.member, NAPI_AUTO_LENGTH, &v) == napi_ok)
        (void) ks_napi_set(env, e, "member", v);
      if (rep.committing && napi_get_boolean(env, true, &v) == napi_ok)
        (void) ks_napi_set(env, e, "committing", v);
    }
    if (e != NULL)
      (void) napi_throw(env, e);
    else
      ks_napi_throw_last(env);
  }
  free(src);
  return NULL;
}

bool ks_napi_init_pack(napi_env env, napi_value exports) {
  static const struct ks_napi_fn fns[] = {
      {"wsSnapshot", ks__ws_snapshot},
      {"wsRestore", ks__ws_restore},
  };
  return ks_napi_export(env, exports, fns, KS_ARRAY_SIZE(fns));
}
