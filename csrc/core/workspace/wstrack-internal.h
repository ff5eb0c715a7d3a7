/* What the change tracker's two files share (wstrack.c: the index and the
 * directory tree; wstrack-events.c: inotify's events and the API): its
 * objects and the index's operations the events use. Not for use outside
 * csrc/core/workspace/. */
#ifndef KS_CORE_WSTRACK_INTERNAL_H
#define KS_CORE_WSTRACK_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/inotify.h>
#include <sys/stat.h>

#include "../err.h"
#include "wsfs.h"
#include "wsfs-internal.h" /* struct ks__dirent64, KS__DENTS_BUF */
#include "wstab.h"
#include "wstrack.h"

#define KS__MASK                                                                         \
  (IN_CREATE | IN_DELETE | IN_MODIFY | IN_CLOSE_WRITE | IN_ATTRIB | IN_MOVED_FROM |      \
   IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_EXCL_UNLINK)

/* Large enough for hundreds of events per read; one event is at most
 * sizeof(struct inotify_event) + NAME_MAX + 1 bytes. */
#define KS__EVENTS_BUF (64 * 1024)

/* The first member of every object kept in a path table. */
struct ks__key {
  char *path; /* points at the object's own copy; NUL-terminated */
  size_t len;
  uint64_t hash;
};

struct ks__path {
  const char *s;
  size_t len;
};

struct ks__file;

/* A watched directory. */
struct ks__node {
  struct ks__key key; /* "" for the root */
  int wd;
  uint64_t dev;
  uint64_t ino;
  struct ks__node *parent;
  struct ks__node *child; /* first child */
  struct ks__node *next;  /* siblings */
  struct ks__node *prev;
  struct ks__file *files; /* indexed regular files directly in it */
  char buf[];
};

struct ks__link {
  struct ks__file *next;
  struct ks__file *prev;
};

/* A regular file of the index. */
struct ks__file {
  struct ks__key key;
  uint64_t size;
  int64_t mtime_ns;
  uint64_t dev;
  uint64_t ino;
  uint64_t nlink;
  struct ks__node *dir;
  struct ks__link in_dir;   /* dir->files */
  struct ks__link in_inode; /* the other indexed names of the inode */
  struct ks__link in_outside;
  struct ks__link in_dirty;
  uint64_t gen; /* the re-stat pass that last stat'ed it */
  bool outside; /* more links than indexed names: stat'ed at every drain */
  bool dirty;   /* to be stat'ed again at the end of this drain */
  char buf[];
};

/* A call's view of one path as it was before the call first saw it change. */
struct ks__rec {
  struct ks__key key;
  bool present;
  uint64_t size;
  int64_t mtime_ns;
  char buf[];
};

struct ks_ws_call {
  struct ks_tab recs;
  struct ks_ws_call *next;
  struct ks_ws_call *prev;
  int errnum;          /* the tracker failed while the call was in flight */
  const char *syscall; /* a string literal */
};

struct ks__stack {
  char *buf;
  size_t len;
  size_t cap;
};

struct ks_ws_tracker {
  int rootfd;
  int ifd;
  struct ks_tab files;  /* path -> struct ks__file */
  struct ks_tab inodes; /* (dev, ino) -> first struct ks__file of the inode */
  struct ks_tab dirs;   /* path -> struct ks__node */
  struct ks_tab wds;    /* wd -> struct ks__node */
  struct ks__node *root;
  struct ks_ws_call *calls;
  struct ks__file *outside;
  struct ks__file *dirty;
  uint64_t gen;    /* counts re-stat passes */
  bool restating; /* a re-stat pass is under way */
  size_t path_bytes;
  bool need_rescan;
  /* The last directory opened to stat a file in it, kept for the rest of an
   * event batch (the events of one directory come in runs). */
  const struct ks__node *cache_node;
  int cache_fd;
  char *dents;
  char *events;
  struct ks__stack todo;
  char path[KS_WS_PATH_MAX + 1];
  struct ks_ws_tracker_stats stats;
};

#define KS__LINK(f, off) ((struct ks__link *) ((char *) (f) + (off)))
#define KS__IN_DIR offsetof(struct ks__file, in_dir)
#define KS__IN_OUTSIDE offsetof(struct ks__file, in_outside)
#define KS__IN_DIRTY offsetof(struct ks__file, in_dirty)

/* The index's operations that wstrack-events.c uses (wstrack.c). */
void ks_wst_cache_drop(struct ks_ws_tracker *t);
int ks_wst_dir_fd(struct ks_ws_tracker *t, const struct ks__node *dir, int *ret_fd,
                  struct ks_err *err);
int ks_wst_drop(struct ks_ws_tracker *t, struct ks__node *node, int keep_wd, struct ks_err *err);
void ks_wst_fail(struct ks_ws_tracker *t, const struct ks_err *err);
struct ks__file *ks_wst_file_by_path(const struct ks_ws_tracker *t, const char *s, size_t len,
                                     uint64_t hash);
void ks_wst_free_files(struct ks_ws_tracker *t);
void ks_wst_free_nodes(struct ks_tab *wds);
struct ks_tab_slot *ks_wst_inode_slot(const struct ks_ws_tracker *t, uint64_t dev, uint64_t ino);
bool ks_wst_is_deps(const char *name, size_t len);
bool ks_wst_is_env(const char *name, size_t len);
bool ks_wst_is_private(const char *name, size_t len);
void ks_wst_mark_dirty(struct ks_ws_tracker *t, struct ks__file *f);
struct ks__node *ks_wst_node_by_path(const struct ks_ws_tracker *t, const char *s, size_t len);
struct ks__node *ks_wst_node_by_wd(const struct ks_ws_tracker *t, int wd);
int ks_wst_rescan(struct ks_ws_tracker *t, struct ks_err *err);
int ks_wst_restat_dirty(struct ks_ws_tracker *t, struct ks_err *err);
int ks_wst_touch_name(struct ks_ws_tracker *t, struct ks__node *dir, const char *name,
                      const char *path, size_t len, struct ks_err *err);
int ks_wst_walk(struct ks_ws_tracker *t, const char *path, size_t len, struct ks_err *err);

#endif
