/* The change tracker: an index of the workspace kept current by inotify.
 *
 * Directories form a tree of nodes (one per watch, found by watch descriptor
 * and by path); each node lists the indexed regular files directly in it, so
 * a directory that leaves the workspace drops its subtree without a search.
 * Files are also grouped by inode, because a write through one hard link
 * changes the size and mtime of every other name of the file while inotify
 * reports only the name written to.
 *
 * Events are applied in queue order, by path, with a fresh fstatat each
 * time: a stat always says what is at the path now, so an event that comes
 * late (the directory was renamed again since, the file was replaced) only
 * costs an extra stat, and any state we learn "early" from a walk is undone
 * and redone by the events still queued behind it. What must never happen
 * is a change without an event still to come: that is why a directory is
 * watched before it is listed, and why lost events (overflow) or a watch the
 * kernel dropped on its own mean a full rescan. */
#define _GNU_SOURCE
#include "wstrack.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../util.h"
#include "wstrack-internal.h"

/* ---- objects ------------------------------------------------------------------ */

static bool ks__eq_path(const void *p, const void *key) {
  const struct ks__key *a = p;
  const struct ks__path *b = key;
  return a->len == b->len && memcmp(a->path, b->s, b->len) == 0;
}

static void ks__list_push(struct ks__file **head, struct ks__file *f, size_t off) {
  struct ks__link *l = KS__LINK(f, off);
  l->prev = NULL;
  l->next = *head;
  if (*head != NULL)
    KS__LINK(*head, off)->prev = f;
  *head = f;
}

static void ks__list_del(struct ks__file **head, struct ks__file *f, size_t off) {
  struct ks__link *l = KS__LINK(f, off);
  if (l->prev != NULL)
    KS__LINK(l->prev, off)->next = l->next;
  else
    *head = l->next;
  if (l->next != NULL)
    KS__LINK(l->next, off)->prev = l->prev;
  l->next = NULL;
  l->prev = NULL;
}

struct ks__node *ks_wst_node_by_path(const struct ks_ws_tracker *t, const char *s,
                                         size_t len) {
  struct ks__path key = {.s = s, .len = len};
  struct ks_tab_slot *slot =
      ks_tab_find(&t->dirs, ks_hash_bytes(s, len), ks__eq_path, &key);
  return slot != NULL ? slot->p : NULL;
}

static bool ks__eq_wd(const void *p, const void *key) {
  return ((const struct ks__node *) p)->wd == *(const int *) key;
}

struct ks__node *ks_wst_node_by_wd(const struct ks_ws_tracker *t, int wd) {
  struct ks_tab_slot *slot =
      ks_tab_find(&t->wds, ks_tab_hash_u64((uint64_t) (unsigned) wd), ks__eq_wd, &wd);
  return slot != NULL ? slot->p : NULL;
}

struct ks__file *ks_wst_file_by_path(const struct ks_ws_tracker *t, const char *s,
                                         size_t len, uint64_t hash) {
  struct ks__path key = {.s = s, .len = len};
  struct ks_tab_slot *slot = ks_tab_find(&t->files, hash, ks__eq_path, &key);
  return slot != NULL ? slot->p : NULL;
}

struct ks__inode_key {
  uint64_t dev;
  uint64_t ino;
};

static bool ks__eq_inode(const void *p, const void *key) {
  const struct ks__file *f = p;
  const struct ks__inode_key *k = key;
  return f->dev == k->dev && f->ino == k->ino;
}

static uint64_t ks__hash_inode(uint64_t dev, uint64_t ino) {
  return ks_tab_hash_u64(ino ^ ks_tab_hash_u64(dev));
}

struct ks_tab_slot *ks_wst_inode_slot(const struct ks_ws_tracker *t, uint64_t dev,
                                       uint64_t ino) {
  struct ks__inode_key key = {.dev = dev, .ino = ino};
  return ks_tab_find(&t->inodes, ks__hash_inode(dev, ino), ks__eq_inode, &key);
}

/* Joins f to the names of its inode: after the first, so the table's slot
 * keeps pointing at the same first name. */
static int ks__inode_join(struct ks_ws_tracker *t, struct ks__file *f) {
  struct ks_tab_slot *slot = ks_wst_inode_slot(t, f->dev, f->ino);
  struct ks__file *head;

  f->in_inode.next = NULL;
  f->in_inode.prev = NULL;
  if (slot == NULL)
    return ks_tab_add(&t->inodes, ks__hash_inode(f->dev, f->ino), f);
  head = slot->p;
  f->in_inode.prev = head;
  f->in_inode.next = head->in_inode.next;
  if (head->in_inode.next != NULL)
    head->in_inode.next->in_inode.prev = f;
  head->in_inode.next = f;
  return 0;
}

static void ks__inode_leave(struct ks_ws_tracker *t, struct ks__file *f) {
  struct ks_tab_slot *slot;

  if (f->in_inode.prev != NULL) {
    f->in_inode.prev->in_inode.next = f->in_inode.next;
    if (f->in_inode.next != NULL)
      f->in_inode.next->in_inode.prev = f->in_inode.prev;
  } else {
    slot = ks_wst_inode_slot(t, f->dev, f->ino);
    if (slot != NULL && slot->p == f) {
      if (f->in_inode.next != NULL) {
        slot->p = f->in_inode.next;
        f->in_inode.next->in_inode.prev = NULL;
      } else {
        ks_tab_del(&t->inodes, slot);
      }
    }
  }
  f->in_inode.next = NULL;
  f->in_inode.prev = NULL;
}

static struct ks__file *ks__inode_first(const struct ks_ws_tracker *t,
                                        const struct ks__file *f) {
  struct ks_tab_slot *slot = ks_wst_inode_slot(t, f->dev, f->ino);
  return slot != NULL ? slot->p : NULL;
}

/* ---- failure ------------------------------------------------------------------ */

/* The index may be half-updated now: every call in flight loses its list,
 * and the next drain starts over from a rescan. */
void ks_wst_fail(struct ks_ws_tracker *t, const struct ks_err *err) {
  for (struct ks_ws_call *c = t->calls; c != NULL; c = c->next) {
    if (c->errnum == 0) {
      c->errnum = err->errnum != 0 ? err->errnum : EIO;
      c->syscall = err->syscall != NULL ? err->syscall : "inotify";
    }
  }
  t->need_rescan = true;
}

/* ---- touching a path ---------------------------------------------------------- */

/* Every in-flight call that has not seen path yet records f's value (NULL:
 * absent). Called before anything changes f, so a call always holds the
 * value the index had when it began. */
static int ks__record(struct ks_ws_tracker *t, const char *path, size_t len,
                      uint64_t hash, const struct ks__file *f, struct ks_err *err) {
  struct ks__path key = {.s = path, .len = len};

  for (struct ks_ws_call *c = t->calls; c != NULL; c = c->next) {
    struct ks__rec *rec;
    if (c->errnum != 0)
      continue; /* its list is lost anyway */
    if (ks_tab_find(&c->recs, hash, ks__eq_path, &key) != NULL)
      continue;
    rec = malloc(sizeof *rec + len + 1);
    if (rec == NULL)
      return ks_err_set(err, ENOMEM, "malloc", NULL);
    memcpy(rec->buf, path, len);
    rec->buf[len] = '\0';
    rec->key.path = rec->buf;
    rec->key.len = len;
    rec->key.hash = hash;
    rec->present = f != NULL;
    rec->size = f != NULL ? f->size : 0;
    rec->mtime_ns = f != NULL ? f->mtime_ns : 0;
    if (ks_tab_add(&c->recs, hash, rec) < 0) {
      free(rec);
      return ks_err_set(err, ENOMEM, "malloc", NULL);
    }
  }
  return 0;
}


/* A name of f's inode changed (was written to, truncated, replaced,
 * removed): its other indexed names may have changed with it, and inotify
 * only named this one. */
static void ks__mark_aliases(struct ks_ws_tracker *t, struct ks__file *f) {
  struct ks__file *g;

  if (f->in_inode.prev == NULL && f->in_inode.next == NULL)
    return; /* the only indexed name */
  for (g = ks__inode_first(t, f); g != NULL; g = g->in_inode.next) {
    if (g != f)
      ks_wst_mark_dirty(t, g);
  }
}

static void ks__file_free(struct ks_ws_tracker *t, struct ks__file *f) {
  struct ks__path key = {.s = f->key.path, .len = f->key.len};
  struct ks_tab_slot *slot = ks_tab_find(&t->files, f->key.hash, ks__eq_path, &key);

  /* Written through this name just before it went: the write shows only
   * in the other names now. */
  ks__mark_aliases(t, f);

  if (slot != NULL)
    ks_tab_del(&t->files, slot);
  ks__list_del(&f->dir->files, f, KS__IN_DIR);
  ks__inode_leave(t, f);
  if (f->outside)
    ks__list_del(&t->outside, f, KS__IN_OUTSIDE);
  if (f->dirty)
    ks__list_del(&t->dirty, f, KS__IN_DIRTY);
  t->path_bytes -= f->key.len + 1;
  free(f);
}

void ks_wst_mark_dirty(struct ks_ws_tracker *t, struct ks__file *f) {
  /* Already queued, or already stat'ed by the re-stat pass under way. */
  if (f->dirty || (t->restating && f->gen == t->gen))
    return;
  f->dirty = true;
  ks__list_push(&t->dirty, f, KS__IN_DIRTY);
}

/* f was just stat'ed. A write through any of its names changed all of them,
 * but inotify told us of one: queue the others for a stat. A link whose
 * other name we do not index (outside the tree, in .deps) sends us no
 * event at all, so such a file is stat'ed at every drain. */
static void ks__links_changed(struct ks_ws_tracker *t, struct ks__file *f) {
  uint64_t names = 1;
  bool outside;

  if (f->in_inode.prev != NULL || f->in_inode.next != NULL) {
    names = 0;
    for (struct ks__file *g = ks__inode_first(t, f); g != NULL; g = g->in_inode.next) {
      names++;
      if (g != f)
        ks_wst_mark_dirty(t, g);
    }
  }
  outside = f->nlink > names;
  if (outside && !f->outside)
    ks__list_push(&t->outside, f, KS__IN_OUTSIDE);
  else if (!outside && f->outside)
    ks__list_del(&t->outside, f, KS__IN_OUTSIDE);
  f->outside = outside;
}

/* The path (in dir) changed, or may have: calls record its old value, then
 * the index takes st (NULL, or not a regular file: the path is gone). */
static int ks__touch(struct ks_ws_tracker *t, struct ks__node *dir, const char *path,
                     size_t len, const struct stat *st, struct ks_err *err) {
  uint64_t hash = ks_hash_bytes(path, len);
  struct ks__file *f = ks_wst_file_by_path(t, path, len, hash);
  int r = ks__record(t, path, len, hash, f, err);

  if (r < 0)
    return r;
  if (st == NULL || !S_ISREG(st->st_mode)) {
    if (f != NULL)
      ks__file_free(t, f);
    return 0;
  }
  if (f == NULL) {
    /* The caps of a full scan (A25), so both fail alike. */
    if (t->files.n >= KS_WS_MAX_ENTRIES || t->path_bytes + len + 1 > KS_WS_MAX_PATH_BYTES)
      return ks_err_set(err, E2BIG, "walk", NULL);
    f = calloc(1, sizeof *f + len + 1);
    if (f == NULL)
      return ks_err_set(err, ENOMEM, "malloc", NULL);
    memcpy(f->buf, path, len);
    f->key.path = f->buf;
    f->key.len = len;
    f->key.hash = hash;
    f->dev = (uint64_t) st->st_dev;
    f->ino = (uint64_t) st->st_ino;
    if (ks_tab_add(&t->files, hash, f) < 0) {
      free(f);
      return ks_err_set(err, ENOMEM, "malloc", NULL);
    }
    f->dir = dir;
    ks__list_push(&dir->files, f, KS__IN_DIR);
    t->path_bytes += len + 1;
    if (ks__inode_join(t, f) < 0) {
      ks__file_free(t, f);
      return ks_err_set(err, ENOMEM, "malloc", NULL);
    }
  } else {
    /* The names the old inode shares with this one (if the path now holds
     * another inode, they are stat'ed for the write that may have come
     * before the swap). */
    ks__mark_aliases(t, f);
    if (f->dir != dir) {
      ks__list_del(&f->dir->files, f, KS__IN_DIR);
      f->dir = dir;
      ks__list_push(&dir->files, f, KS__IN_DIR);
    }
    if (f->dev != (uint64_t) st->st_dev || f->ino != (uint64_t) st->st_ino) {
      ks__inode_leave(t, f);
      f->dev = (uint64_t) st->st_dev;
      f->ino = (uint64_t) st->st_ino;
      if (ks__inode_join(t, f) < 0) {
        ks__file_free(t, f);
        return ks_err_set(err, ENOMEM, "malloc", NULL);
      }
    }
  }
  f->size = (uint64_t) st->st_size;
  f->mtime_ns = (int64_t) st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
  f->nlink = (uint64_t) st->st_nlink;
  ks__links_changed(t, f);
  return 0;
}

void ks_wst_cache_drop(struct ks_ws_tracker *t) {
  if (t->cache_fd >= 0)
    ks_close_keep_errno(t->cache_fd);
  t->cache_fd = -1;
  t->cache_node = NULL;
}

/* A descriptor of dir, opened beneath the root by its path (never through a
 * symlink). Returns 1 if the path no longer leads to a directory we may
 * enter: then nothing indexed under it is at its path any more. */
int ks_wst_dir_fd(struct ks_ws_tracker *t, const struct ks__node *dir, int *ret_fd,
                      struct ks_err *err) {
  struct ks_err e2;
  int fd = -1;
  int r;

  if (dir == t->root) {
    *ret_fd = t->rootfd;
    return 0;
  }
  if (t->cache_node == dir) {
    *ret_fd = t->cache_fd;
    return 0;
  }
  ks_wst_cache_drop(t);
  /* O_RDONLY rather than O_PATH: ks_open_beneath then needs no fstat to
   * tell a directory from a symlink. */
  r = ks_open_beneath(t->rootfd, dir->key.path, O_RDONLY | O_DIRECTORY, 0, &fd, &e2);
  if (r == -ENOENT || r == -ENOTDIR || r == -ELOOP || r == -EACCES || r == -EPERM ||
      r == -EXDEV)
    return 1;
  if (r == -EAGAIN) {
    /* openat2 kept seeing renames: we cannot tell where the path leads. */
    t->need_rescan = true;
    return 1;
  }
  if (r < 0)
    return ks_err_set(err, -r, e2.syscall, NULL);
  t->cache_node = dir;
  t->cache_fd = fd;
  *ret_fd = fd;
  return 0;
}

/* Stats dir/name (path is the whole path) and touches it. */
int ks_wst_touch_name(struct ks_ws_tracker *t, struct ks__node *dir, const char *name,
                          const char *path, size_t len, struct ks_err *err) {
  struct stat st;
  int fd = -1;
  int r = ks_wst_dir_fd(t, dir, &fd, err);

  if (r < 0)
    return r;
  if (r == 0) {
    t->stats.stats++;
    if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
      return ks__touch(t, dir, path, len, &st, err);
    if (errno != ENOENT && errno != ENOTDIR && errno != EACCES && errno != EPERM &&
        errno != ELOOP)
      return ks_err_set(err, errno, "fstatat", NULL);
  }
  return ks__touch(t, dir, path, len, NULL, err);
}

/* The re-stat pass at the end of a drain: other names of files written to,
 * and files linked from outside. Each file at most once per pass (gen): the
 * pass runs after every queued event was applied, so one stat is enough. */
int ks_wst_restat_dirty(struct ks_ws_tracker *t, struct ks_err *err) {
  char path[KS_WS_PATH_MAX + 1];
  int r = 0;

  t->gen++;
  t->restating = true;
  for (struct ks__file *f = t->outside; f != NULL; f = f->in_outside.next)
    ks_wst_mark_dirty(t, f);
  while (t->dirty != NULL) {
    struct ks__file *f = t->dirty;
    struct ks__node *dir = f->dir;
    size_t len = f->key.len;
    size_t dlen = dir->key.len;

    ks__list_del(&t->dirty, f, KS__IN_DIRTY);
    f->dirty = false;
    f->gen = t->gen;
    /* f may be freed by the touch: work on a copy of its path. */
    memcpy(path, f->key.path, len + 1);
    r = ks_wst_touch_name(t, dir, path + dlen + (dlen > 0), path, len, err);
    if (r < 0)
      break;
  }
  /* Marks made while events are applied are never "already stat'ed". */
  t->restating = false;
  return r;
}

/* ---- the directory tree ------------------------------------------------------- */

/* Drops node and everything under it: its files are touched as gone (each
 * in-flight call records what they were), and the watches are removed,
 * except keep_wd, which the caller is about to map again. */
int ks_wst_drop(struct ks_ws_tracker *t, struct ks__node *node, int keep_wd,
                    struct ks_err *err) {
  struct ks__node *n = node;

  ks_wst_cache_drop(t);
  for (;;) {
    struct ks__node *parent;
    struct ks_tab_slot *slot;
    struct ks__path key;
    bool done;

    while (n->child != NULL)
      n = n->child;
    while (n->files != NULL) {
      struct ks__file *f = n->files;
      int r = ks__record(t, f->key.path, f->key.len, f->key.hash, f, err);
      if (r < 0)
        return r;
      ks__file_free(t, f);
    }
    parent = n->parent;
    done = n == node;
    if (parent != NULL) {
      if (n->prev != NULL)
        n->prev->next = n->next;
      else
        parent->child = n->next;
      if (n->next != NULL)
        n->next->prev = n->prev;
    }
    key.s = n->key.path;
    key.len = n->key.len;
    slot = ks_tab_find(&t->dirs, n->key.hash, ks__eq_path, &key);
    if (slot != NULL && slot->p == n)
      ks_tab_del(&t->dirs, slot);
    slot = ks_tab_find(&t->wds, ks_tab_hash_u64((uint64_t) (unsigned) n->wd), ks__eq_wd,
                        &n->wd);
    if (slot != NULL && slot->p == n)
      ks_tab_del(&t->wds, slot);
    /* EINVAL when the kernel already dropped it (the directory is gone). */
    if (n->wd != keep_wd)
      (void) inotify_rm_watch(t->ifd, n->wd);
    if (n == t->root)
      t->root = NULL;
    free(n);
    if (done)
      return 0;
    n = parent;
  }
}

static int ks__node_new(struct ks_ws_tracker *t, int wd, const struct stat *st,
                        const char *path, size_t len, struct ks__node *parent,
                        struct ks__node **ret, struct ks_err *err) {
  struct ks__node *n = calloc(1, sizeof *n + len + 1);

  if (n == NULL)
    return ks_err_set(err, ENOMEM, "malloc", NULL);
  memcpy(n->buf, path, len);
  n->key.path = n->buf;
  n->key.len = len;
  n->key.hash = ks_hash_bytes(path, len);
  n->wd = wd;
  n->dev = (uint64_t) st->st_dev;
  n->ino = (uint64_t) st->st_ino;
  if (ks_tab_add(&t->dirs, n->key.hash, n) < 0) {
    free(n);
    return ks_err_set(err, ENOMEM, "malloc", NULL);
  }
  if (ks_tab_add(&t->wds, ks_tab_hash_u64((uint64_t) (unsigned) wd), n) < 0) {
    struct ks__path key = {.s = path, .len = len};
    ks_tab_del(&t->dirs, ks_tab_find(&t->dirs, n->key.hash, ks__eq_path, &key));
    free(n);
    return ks_err_set(err, ENOMEM, "malloc", NULL);
  }
  n->parent = parent;
  if (parent != NULL) {
    n->next = parent->child;
    if (parent->child != NULL)
      parent->child->prev = n;
    parent->child = n;
  } else {
    t->root = n;
  }
  *ret = n;
  return 0;
}

static int ks__stack_push(struct ks__stack *s, const char *p, size_t len) {
  uint32_t l = (uint32_t) len;
  size_t need = s->len + len + sizeof l;

  if (ks_buf_reserve(&s->buf, &s->cap, need) < 0)
    return -ENOMEM;
  memcpy(s->buf + s->len, p, len);
  memcpy(s->buf + s->len + len, &l, sizeof l);
  s->len = need;
  return 0;
}

static bool ks__stack_pop(struct ks__stack *s, char *out, size_t *ret_len) {
  uint32_t l;

  if (s->len == 0)
    return false;
  memcpy(&l, s->buf + s->len - sizeof l, sizeof l);
  s->len -= sizeof l + l;
  memcpy(out, s->buf + s->len, l);
  out[l] = '\0';
  *ret_len = l;
  return true;
}

bool ks_wst_is_private(const char *name, size_t len) {
  return len >= sizeof KS_WS_PRIVATE_PREFIX - 1 &&
         memcmp(name, KS_WS_PRIVATE_PREFIX, sizeof KS_WS_PRIVATE_PREFIX - 1) == 0;
}

bool ks_wst_is_env(const char *name, size_t len) {
  return len >= sizeof KS_WS_ENV_PREFIX - 1 &&
         memcmp(name, KS_WS_ENV_PREFIX, sizeof KS_WS_ENV_PREFIX - 1) == 0;
}

bool ks_wst_is_deps(const char *name, size_t len) {
  return len == sizeof KS_WS_DEPS_DIR - 1 && memcmp(name, KS_WS_DEPS_DIR, len) == 0;
}

static bool ks__is_dot(const char *name) {
  return name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'));
}

/* Lists the directory of fd (at path, node) like ks_ws_walk does, touching
 * every regular file and queueing every subdirectory. */
static int ks__list_dir(struct ks_ws_tracker *t, int fd, struct ks__node *node,
                        const char *path, size_t len, struct ks_err *err) {
  char child[KS_WS_PATH_MAX + 1];
  bool top = len == 0;

  memcpy(child, path, len);
  if (len > 0)
    child[len++] = '/';
  for (;;) {
    long n = syscall(SYS_getdents64, fd, t->dents, KS__DENTS_BUF);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      /* Removed since we opened it: nothing left to list. */
      if (errno == ENOENT)
        return 0;
      return ks_err_set(err, errno, "getdents64", NULL);
    }
    if (n == 0)
      return 0;
    for (long off = 0; off < n;) {
      struct ks__dirent64 *e = (struct ks__dirent64 *) (t->dents + off);
      const char *name = e->d_name;
      unsigned char type = e->d_type;
      size_t nlen;
      struct stat st;
      bool have_st = false;
      int r;

      off += e->d_reclen;
      if (ks__is_dot(name))
        continue;
      nlen = strlen(name);
      if (ks_wst_is_private(name, nlen))
        continue;
      if (nlen > KS_WS_NAME_MAX || len + nlen > KS_WS_PATH_MAX)
        return ks_err_set(err, ENAMETOOLONG, "walk", NULL);
      if (type == DT_UNKNOWN) {
        t->stats.stats++;
        if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
          if (errno == ENOENT)
            continue;
          return ks_err_set(err, errno, "fstatat", NULL);
        }
        have_st = true;
        type = (unsigned char) IFTODT(st.st_mode);
      }
      memcpy(child + len, name, nlen + 1);
      if (type == DT_DIR) {
        if (top && ks_wst_is_deps(name, nlen))
          continue;
        if (ks__stack_push(&t->todo, child, len + nlen) < 0)
          return ks_err_set(err, ENOMEM, "malloc", NULL);
      } else if (type == DT_REG) {
        if (top && ks_wst_is_env(name, nlen))
          continue;
        if (!have_st) {
          t->stats.stats++;
          if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
            if (errno == ENOENT)
              continue;
            return ks_err_set(err, errno, "fstatat", NULL);
          }
        }
        /* A regular file swapped for something else since getdents is
         * touched as gone. */
        r = ks__touch(t, node, child, len + nlen, S_ISREG(st.st_mode) ? &st : NULL, err);
        if (r < 0)
          return r;
      }
      /* Symlinks, FIFOs, sockets, devices: not user files, never followed. */
    }
  }
}

static size_t ks__parent_len(const char *path, size_t len) {
  const char *slash = memrchr(path, '/', len);
  return slash != NULL ? (size_t) (slash - path) : 0;
}

/* Watches and lists one directory of a walk. */
static int ks__walk_one(struct ks_ws_tracker *t, const char *path, size_t len,
                        struct ks_err *err) {
  _cleanup_close_ int fd = -1;
  struct ks__node *parent = NULL;
  struct ks__node *node;
  struct ks__node *other;
  struct ks_err e2;
  struct stat st;
  char proc[64];
  int wd;
  int r;

  if (len > 0) {
    /* Dropped since it was queued (renamed or removed): wherever it went,
     * its own events bring it back. */
    parent = ks_wst_node_by_path(t, path, ks__parent_len(path, len));
    if (parent == NULL)
      return 0;
    r = ks_open_beneath(t->rootfd, path, O_RDONLY | O_DIRECTORY, 0, &fd, &e2);
    if (r == -ENOENT || r == -ENOTDIR || r == -ELOOP || r == -EACCES || r == -EPERM ||
        r == -EXDEV)
      return 0; /* gone, a symlink or a file now, or one ks_ws_walk skips too */
    if (r == -EAGAIN) {
      t->need_rescan = true; /* openat2 kept seeing renames */
      return 0;
    }
    if (r < 0)
      return ks_err_set(err, -r, e2.syscall, NULL);
  } else {
    /* A fresh descriptor: getdents moves the file offset. */
    fd = openat(t->rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
      return ks_err_set(err, errno, "openat", NULL);
  }
  if (fstat(fd, &st) < 0)
    return ks_err_set(err, errno, "fstat", NULL);
  t->stats.walks++;
  /* Watch before listing: whatever the box does once the watch exists
   * sends an event, whatever it did before is in the listing. The watch
   * goes on the descriptor's own directory (a magic link), so a symlink
   * planted at path redirects nothing. */
  (void) snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
  wd = inotify_add_watch(t->ifd, proc, KS__MASK);
  if (wd < 0)
    return ks_err_set(err, errno, "inotify_add_watch", NULL);

  node = ks_wst_node_by_wd(t, wd);
  if (node != NULL && (node->key.len != len || memcmp(node->key.path, path, len) != 0)) {
    /* A directory we know under another path: it was moved here and the
     * event saying so is still queued (or never comes, if the new parent
     * was not watched yet). Forget the old place now (its files are gone
     * from there) and map the watch to where the directory is. */
    if (node == t->root) {
      t->need_rescan = true; /* the root beneath itself: a bind mount? */
      return 0;
    }
    r = ks_wst_drop(t, node, wd, err);
    node = NULL;
    if (r < 0) {
      (void) inotify_rm_watch(t->ifd, wd);
      return r;
    }
  }
  if (node == NULL) {
    other = ks_wst_node_by_path(t, path, len);
    if (other == t->root && other != NULL) {
      (void) inotify_rm_watch(t->ifd, wd);
      t->need_rescan = true;
      return 0;
    }
    if (other != NULL) {
      /* The path holds another directory than the one we knew there. */
      r = ks_wst_drop(t, other, -1, err);
      if (r < 0) {
        (void) inotify_rm_watch(t->ifd, wd);
        return r;
      }
    }
    /* A drop may have taken the parent with it (paths we knew were stale):
     * we no longer know where this directory hangs. */
    if (len > 0) {
      parent = ks_wst_node_by_path(t, path, ks__parent_len(path, len));
      if (parent == NULL) {
        (void) inotify_rm_watch(t->ifd, wd);
        t->need_rescan = true;
        return 0;
      }
    }
    r = ks__node_new(t, wd, &st, path, len, parent, &node, err);
    if (r < 0) {
      (void) inotify_rm_watch(t->ifd, wd);
      return r;
    }
  }
  return ks__list_dir(t, fd, node, path, len, err);
}

/* Walks the directory at path and everything under it: each directory is
 * watched, each regular file touched. Iterative, one descriptor at a time. */
int ks_wst_walk(struct ks_ws_tracker *t, const char *path, size_t len,
                    struct ks_err *err) {
  char cur[KS_WS_PATH_MAX + 1];
  size_t cur_len;

  ks_wst_cache_drop(t);
  t->todo.len = 0;
  if (ks__stack_push(&t->todo, path, len) < 0)
    return ks_err_set(err, ENOMEM, "malloc", NULL);
  while (ks__stack_pop(&t->todo, cur, &cur_len)) {
    int r = ks__walk_one(t, cur, cur_len, err);
    if (r < 0) {
      t->todo.len = 0;
      return r;
    }
  }
  return 0;
}

void ks_wst_free_nodes(struct ks_tab *wds) {
  for (size_t i = 0; wds->slots != NULL && i <= wds->mask; i++)
    free(wds->slots[i].p);
  ks_tab_free(wds);
}

void ks_wst_free_files(struct ks_ws_tracker *t) {
  for (size_t i = 0; t->files.slots != NULL && i <= t->files.mask; i++)
    free(t->files.slots[i].p);
  ks_tab_free(&t->files);
  ks_tab_free(&t->inodes);
  t->outside = NULL;
  t->dirty = NULL;
  t->path_bytes = 0;
}

/* The fallback: every in-flight call records the whole index as it stands,
 * then the index is rebuilt from a new walk, so each call reports what
 * changed between its view of the old state and the new one. Watches of
 * directories still there are kept (inotify_add_watch returns the same
 * descriptor for the same directory); the others are removed. Events still
 * queued from before only cost extra stats. */
int ks_wst_rescan(struct ks_ws_tracker *t, struct ks_err *err) {
  struct ks_tab old_wds;
  int r;

  t->stats.rescans++;
  t->need_rescan = false;
  ks_wst_cache_drop(t);
  if (t->calls != NULL) {
    for (size_t i = 0; t->files.slots != NULL && i <= t->files.mask; i++) {
      struct ks__file *f = t->files.slots[i].p;
      if (f == NULL)
        continue;
      r = ks__record(t, f->key.path, f->key.len, f->key.hash, f, err);
      if (r < 0) {
        t->need_rescan = true;
        return r;
      }
    }
  }
  ks_wst_free_files(t);
  old_wds = t->wds;
  memset(&t->wds, 0, sizeof t->wds);
  ks_tab_free(&t->dirs);
  t->root = NULL;
  r = ks_wst_walk(t, "", 0, err);
  for (size_t i = 0; old_wds.slots != NULL && i <= old_wds.mask; i++) {
    struct ks__node *n = old_wds.slots[i].p;
    if (n != NULL && ks_wst_node_by_wd(t, n->wd) == NULL)
      (void) inotify_rm_watch(t->ifd, n->wd);
  }
  ks_wst_free_nodes(&old_wds);
  if (r == 0 && t->root == NULL) {
    /* The walk could not even watch the root. */
    r = ks_err_set(err, EIO, "walk", NULL);
  }
  if (r < 0)
    t->need_rescan = true;
  return r;
}
