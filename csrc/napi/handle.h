/* The handles the addon gives JS in the place of descriptor numbers: a
 * session's workspace (wsOpen), its kern (kernOpen), a parked box
 * (parkBox), a stdin feed (stdinOpen) and a terminal (ptyPair). Each is a
 * plain object, type-tagged as this addon's (napi_type_tag_object) and
 * wrapping what it names, its kind included; every native that
 * takes one checks its kind (a TypeError that names the kind expected) and
 * that it is still open (a Node-shaped EBADF). A descriptor a handle names
 * is held by the environment (addon.h) under a serial of its own, so a
 * closed handle never reaches a descriptor that reused its number. */
#ifndef KS_NAPI_HANDLE_H
#define KS_NAPI_HANDLE_H

#include <stdbool.h>
#include <stdint.h>

#include "addon.h"

enum ks_handle_kind {
  KS_HANDLE_WORKSPACE, /* wsOpen: the workspace directory, held open */
  KS_HANDLE_KERN,      /* kernOpen: the kern binary, O_PATH */
  KS_HANDLE_PARKED,    /* parkBox: its park key, and the caller's copy of its channel (or none) */
  KS_HANDLE_FEED,      /* stdinOpen: a call's stdin feed (no descriptor; feed.h),
                        * one reference held until the handle is collected */
  KS_HANDLE_TTY,       /* ptyPair: a process's terminal's master, for ttyResize */
  KS_HANDLE_KINDS
};
/* For ks_handle_release: a handle of any kind. */
#define KS_HANDLE_ANY KS_HANDLE_KINDS

/* A new handle of kind on fd, which the environment now holds (with
 * own_dir, whose ownership moves in; ks_addon_hold). fd -1: a parked box
 * with no channel of the caller's. NULL with an exception pending, fd
 * closed and own_dir freed. */
napi_value ks_handle_new(napi_env env, struct ks_addon *addon, enum ks_handle_kind kind, int fd,
                         char *own_dir, uint64_t park_key);

/* The open descriptor behind v, a handle of kind, for the native fn: false
 * with a TypeError (not such a handle) or an EBADF error (closed) pending. */
bool ks_handle_fd(napi_env env, struct ks_addon *addon, napi_value v, enum ks_handle_kind kind,
                  const char *fn, int *fd);

/* Closes v (of kind, or KS_HANDLE_ANY) for the caller: 1 and *fd, released
 * from the environment's holds and the caller's to close now; 0 if it was
 * closed already (by JS or by the environment's teardown); -1 with a
 * TypeError pending. */
int ks_handle_release(napi_env env, struct ks_addon *addon, napi_value v, enum ks_handle_kind kind,
                      const char *fn, int *fd);

/* The park key of v, a parked box's handle (open or not); false with a
 * TypeError pending. */
bool ks_handle_park_key(napi_env env, napi_value v, const char *fn, uint64_t *key);

struct ks_feed;
/* A new feed handle holding feed's reference (moved in: dropped when the
 * handle is collected, or at once on failure). NULL with an exception pending. */
napi_value ks_handle_new_feed(napi_env env, struct ks_feed *feed);
/* The feed of v, a feed handle (no reference taken); NULL with a TypeError
 * pending. */
struct ks_feed *ks_handle_feed(napi_env env, napi_value v, const char *fn);

#endif
