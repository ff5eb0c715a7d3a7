/* The change tracker's events and its API (wstrack.h): inotify's events
 * applied to the index in queue order, the drain, and a call's begin and
 * end. The index itself is wstrack.c's. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../util.h"
#include "wstrack-internal.h"

/* ---- events ------------------------------------------------------------------- */

/* Whether the directory at n's path is n's own. A directory that left a
 * path is not always the one we map there: a walk may have found the new
 * occupant first, and RENAME_EXCHANGE queues the arrival of one directory
 * before the departure of the other. Then the departure is old news and
 * must not drop the newcomer (nothing else would bring it back). */
static bool ks__node_in_place(struct ks_ws_tracker *t, const struct ks__node *n) {
  struct ks_err e2;
  struct stat st;
  int fd = -1;
  bool same = false;

  if (ks_open_beneath(t->rootfd, n->key.path, O_RDONLY | O_DIRECTORY, 0, &fd, &e2) == 0) {
    same = fstat(fd, &st) == 0 && (uint64_t) st.st_dev == n->dev &&
           (uint64_t) st.st_ino == n->ino;
    ks_close_keep_errno(fd);
  }
  return same;
}

/* An event about the watched directory itself. */
static int ks__event_self(struct ks_ws_tracker *t, struct ks__node *node, uint32_t mask,
                          struct ks_err *err) {
  if (node == t->root) {
    /* Renaming the root moves nothing we hold: every path is relative to
     * rootfd. Losing its watch is another matter. */
    if (mask & (IN_DELETE_SELF | IN_IGNORED | IN_UNMOUNT))
      t->need_rescan = true;
    return 0;
  }
  if (mask & IN_DELETE_SELF)
    return ks_wst_drop(t, node, -1, err);
  if (mask & IN_MOVE_SELF) {
    /* The parent's IN_MOVED_FROM came first and dropped the node, unless a
     * walk already found the directory at its new place and re-mapped it.
     * Still at its path, it is consistent; anywhere else, we missed the
     * move. */
    if (!ks__node_in_place(t, node))
      t->need_rescan = true;
    return 0;
  }
  /* IN_IGNORED or IN_UNMOUNT for a directory we did not see go: the kernel
   * stopped watching part of the tree. */
  if (mask & (IN_IGNORED | IN_UNMOUNT))
    t->need_rescan = true;
  return 0;
}

/* A directory entry changed mode: it may have become listable, or stopped
 * being so (ks_ws_walk skips what it may not open). */
static int ks__recheck_dir(struct ks_ws_tracker *t, const char *path, size_t len,
                           struct ks_err *err) {
  struct ks__node *n = ks_wst_node_by_path(t, path, len);
  struct ks_err e2;
  int fd = -1;
  int r = ks_open_beneath(t->rootfd, path, O_RDONLY | O_DIRECTORY, 0, &fd, &e2);

  if (r == 0) {
    ks_close_keep_errno(fd);
    return n == NULL ? ks_wst_walk(t, path, len, err) : 0;
  }
  if ((r == -EACCES || r == -EPERM) && n != NULL)
    return ks_wst_drop(t, n, -1, err);
  return 0;
}

/* A file we do not index changed in a watched directory. It may be another
 * name of an indexed file (a hard link made by the box): then the indexed
 * names are stat'ed, which also tells them their link count, so from then
 * on they are stat'ed at every drain wherever that name goes. */
static int ks__probe_excluded(struct ks_ws_tracker *t, struct ks__node *dir,
                              const char *name, struct ks_err *err) {
  struct ks_tab_slot *slot;
  struct stat st;
  int fd = -1;
  int r = ks_wst_dir_fd(t, dir, &fd, err);

  if (r != 0)
    return r < 0 ? r : 0;
  t->stats.stats++;
  if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode) ||
      st.st_nlink < 2)
    return 0;
  slot = ks_wst_inode_slot(t, (uint64_t) st.st_dev, (uint64_t) st.st_ino);
  for (struct ks__file *g = slot != NULL ? slot->p : NULL; g != NULL;
       g = g->in_inode.next)
    ks_wst_mark_dirty(t, g);
  return 0;
}

static int ks__event(struct ks_ws_tracker *t, const struct inotify_event *ev,
                     const struct inotify_event *prev, struct ks_err *err) {
  struct ks__node *node;
  const char *name;
  size_t nlen;
  size_t len;
  bool isdir = (ev->mask & IN_ISDIR) != 0;

  t->stats.events++;
  if (ev->mask & IN_Q_OVERFLOW) {
    t->need_rescan = true;
    return 0;
  }
  if (t->need_rescan)
    return 0; /* the rescan at the end of the drain covers it */
  node = ks_wst_node_by_wd(t, ev->wd);
  if (node == NULL)
    return 0; /* a watch we dropped: its directory left, or was re-mapped */
  nlen = ev->len > 0 ? strnlen(ev->name, ev->len) : 0;
  if (nlen == 0) {
    ks_wst_cache_drop(t);
    return ks__event_self(t, node, ev->mask, err);
  }
  name = ev->name;
  /* The stat for the previous event of this batch, if it was about the same
   * name, was taken after this event was queued: it already says all this
   * one could. */
  if (!isdir && prev != NULL && prev->wd == ev->wd && !(prev->mask & IN_ISDIR) &&
      strnlen(prev->name, prev->len) == nlen && memcmp(prev->name, name, nlen) == 0)
    return 0;
  if (isdir &&
      (ks_wst_is_private(name, nlen) || (node == t->root && ks_wst_is_deps(name, nlen))))
    return 0;
  if (!isdir &&
      (ks_wst_is_private(name, nlen) || (node == t->root && ks_wst_is_env(name, nlen))))
    return ks__probe_excluded(t, node, name, err);
  if (nlen > KS_WS_NAME_MAX || node->key.len + 1 + nlen > KS_WS_PATH_MAX)
    return ks_err_set(err, ENAMETOOLONG, "walk", NULL);
  len = node->key.len;
  memcpy(t->path, node->key.path, len);
  if (len > 0)
    t->path[len++] = '/';
  memcpy(t->path + len, name, nlen + 1);
  len += nlen;

  if (!isdir)
    return ks_wst_touch_name(t, node, t->path + len - nlen, t->path, len, err);
  ks_wst_cache_drop(t);
  if (ev->mask & (IN_DELETE | IN_MOVED_FROM)) {
    struct ks__node *n = ks_wst_node_by_path(t, t->path, len);
    if (n == NULL || n == t->root || ks__node_in_place(t, n))
      return 0;
    return ks_wst_drop(t, n, -1, err);
  }
  if (ev->mask & (IN_CREATE | IN_MOVED_TO))
    return ks_wst_walk(t, t->path, len, err);
  if (ev->mask & IN_ATTRIB)
    return ks__recheck_dir(t, t->path, len, err);
  return 0;
}

/* Work (directories listed plus files stat'ed) one drain may spend on
 * events before it gives up on them and rescans. Each event is cheap for the
 * box and may be dear for us: a directory moved away and back costs the box
 * two renames and us a walk of its subtree, so a box swapping a big
 * directory in a loop would make the events cost far more than a scan. Past
 * about one full scan's worth of work, a rescan is the cheaper answer, and
 * it bounds every drain to about three full scans (the budget, one walk in
 * progress, the rescan), as on a box that overflows the queue. */
#define KS__DRAIN_BUDGET_MIN 4096u

static uint64_t ks__drain_budget(const struct ks_ws_tracker *t) {
  uint64_t size = (uint64_t) t->files.n + t->wds.n;
  return size > KS__DRAIN_BUDGET_MIN ? size : KS__DRAIN_BUDGET_MIN;
}

/* Applies the events queued now (not those that arrive meanwhile: a busy
 * concurrent run must not keep a drain going forever), then the rescan if
 * one is due, then the re-stat pass. */
static int ks__drain(struct ks_ws_tracker *t, struct ks_err *err) {
  int avail = 0;
  size_t consumed = 0;
  uint64_t work0 = t->stats.walks + t->stats.stats;
  uint64_t budget = ks__drain_budget(t);
  bool over = false;
  int r = 0;

  if (ioctl(t->ifd, FIONREAD, &avail) < 0)
    return ks_err_set(err, errno, "ioctl", NULL);
  while (consumed < (size_t) avail) {
    const struct inotify_event *prev = NULL;
    ssize_t n = read(t->ifd, t->events, KS__EVENTS_BUF);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      if (errno == EAGAIN)
        break;
      return ks_err_set(err, errno, "read", NULL);
    }
    if (n == 0)
      break;
    consumed += (size_t) n;
    for (ssize_t off = 0; off < n && !over;) {
      const struct inotify_event *ev = (const struct inotify_event *) (t->events + off);
      off += (ssize_t) (sizeof *ev + ev->len);
      r = ks__event(t, ev, prev, err);
      if (r < 0)
        break;
      prev = ev;
      if (t->stats.walks + t->stats.stats - work0 > budget) {
        /* The rest of the batch is read and dropped: the rescan covers it. */
        over = true;
        t->need_rescan = true;
        t->stats.budget_rescans++;
      }
    }
    ks_wst_cache_drop(t);
    if (r < 0)
      return r;
  }
  if (t->need_rescan) {
    r = ks_wst_rescan(t, err);
    if (r < 0)
      return r;
  }
  r = ks_wst_restat_dirty(t, err);
  ks_wst_cache_drop(t);
  return r;
}

static int ks__sync(struct ks_ws_tracker *t, struct ks_err *err) {
  int r = ks__drain(t, err);
  if (r < 0)
    ks_wst_fail(t, err);
  return r;
}

/* ---- the API ------------------------------------------------------------------ */

int ks_ws_tracker_open(int rootfd, struct ks_ws_tracker **ret, struct ks_err *err) {
  struct ks_ws_tracker *t = calloc(1, sizeof *t);
  int r;

  if (t == NULL)
    return ks_err_set(err, ENOMEM, "malloc", NULL);
  t->rootfd = -1;
  t->ifd = -1;
  t->cache_fd = -1;
  t->dents = malloc(KS__DENTS_BUF);
  t->events = malloc(KS__EVENTS_BUF);
  if (t->dents == NULL || t->events == NULL) {
    r = ks_err_set(err, ENOMEM, "malloc", NULL);
    goto fail;
  }
  /* Our own descriptor: the caller's may be closed with its request. */
  t->rootfd = fcntl(rootfd, F_DUPFD_CLOEXEC, 3);
  if (t->rootfd < 0) {
    r = ks_err_set(err, errno, "fcntl", NULL);
    goto fail;
  }
  t->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (t->ifd < 0) {
    r = ks_err_set(err, errno, "inotify_init1", NULL);
    goto fail;
  }
  r = ks_wst_walk(t, "", 0, err);
  if (r == 0 && t->root == NULL)
    r = ks_err_set(err, EIO, "walk", NULL);
  if (r == 0)
    r = ks_wst_restat_dirty(t, err);
  if (r < 0)
    goto fail;
  *ret = t;
  return 0;

fail:
  ks_ws_tracker_close(t);
  return r;
}

int ks_ws_tracker_begin(struct ks_ws_tracker *t, struct ks_ws_call **ret_call,
                        struct ks_err *err) {
  struct ks_ws_call *c;
  int r = ks__sync(t, err);

  if (r < 0)
    return r;
  c = calloc(1, sizeof *c);
  if (c == NULL)
    return ks_err_set(err, ENOMEM, "malloc", NULL);
  c->next = t->calls;
  if (t->calls != NULL)
    t->calls->prev = c;
  t->calls = c;
  *ret_call = c;
  return 0;
}

bool ks_ws_tracker_quiet(struct ks_ws_tracker *t) {
  int avail = 0;
  return !t->need_rescan && ioctl(t->ifd, FIONREAD, &avail) == 0 && avail == 0;
}

size_t ks_ws_tracker_call_size(const struct ks_ws_call *call) { return call->recs.n; }

static void ks__call_free(struct ks_ws_tracker *t, struct ks_ws_call *c) {
  if (c->prev != NULL)
    c->prev->next = c->next;
  else
    t->calls = c->next;
  if (c->next != NULL)
    c->next->prev = c->prev;
  for (size_t i = 0; c->recs.slots != NULL && i <= c->recs.mask; i++)
    free(c->recs.slots[i].p);
  ks_tab_free(&c->recs);
  free(c);
}

void ks_ws_tracker_abandon(struct ks_ws_tracker *t, struct ks_ws_call *call) {
  if (call != NULL)
    ks__call_free(t, call);
}

static int ks__change_cmp(const void *a, const void *b) {
  return strcmp(((const struct ks_ws_change *) a)->path,
                ((const struct ks_ws_change *) b)->path);
}

static int ks__collect(struct ks_ws_tracker *t, const struct ks_ws_call *c,
                       struct ks_ws_change **ret, size_t *ret_n, struct ks_err *err) {
  struct ks_ws_change *out = NULL;
  char *strings = NULL;
  size_t n = 0;
  size_t bytes = 0;
  size_t k = 0;

  for (int pass = 0; pass < 2; pass++) {
    for (size_t i = 0; c->recs.slots != NULL && i <= c->recs.mask; i++) {
      const struct ks__rec *rec = c->recs.slots[i].p;
      const struct ks__file *f;
      enum ks_ws_change_kind kind;

      if (rec == NULL)
        continue;
      f = ks_wst_file_by_path(t, rec->key.path, rec->key.len, rec->key.hash);
      if (f == NULL)
        continue; /* deleted, or never a regular file */
      if (!rec->present)
        kind = KS_WS_CREATED;
      else if (rec->size != f->size || rec->mtime_ns != f->mtime_ns)
        kind = KS_WS_MODIFIED;
      else
        continue;
      if (pass == 0) {
        n++;
        bytes += rec->key.len + 1;
        continue;
      }
      memcpy(strings, rec->key.path, rec->key.len + 1);
      out[k].path = strings;
      out[k].size = f->size;
      out[k].kind = kind;
      strings += rec->key.len + 1;
      k++;
    }
    if (pass == 0) {
      if (n == 0) {
        *ret = NULL;
        *ret_n = 0;
        return 0;
      }
      /* One block: the array, then its paths, so one free() releases both. */
      out = malloc(n * sizeof *out + bytes);
      if (out == NULL)
        return ks_err_set(err, ENOMEM, "malloc", NULL);
      strings = (char *) (out + n);
    }
  }
  if (n > 1)
    qsort(out, n, sizeof *out, ks__change_cmp);
  *ret = out;
  *ret_n = n;
  return 0;
}

int ks_ws_tracker_end(struct ks_ws_tracker *t, struct ks_ws_call *call,
                      struct ks_ws_change **ret, size_t *ret_n, struct ks_err *err) {
  int r = ks__sync(t, err);

  if (r == 0 && call->errnum != 0)
    r = ks_err_set(err, call->errnum, call->syscall, NULL);
  if (r == 0)
    r = ks__collect(t, call, ret, ret_n, err);
  ks__call_free(t, call);
  return r;
}

int ks_ws_tracker_drain(struct ks_ws_tracker *t, struct ks_err *err) {
  return ks__sync(t, err);
}

int ks_ws_tracker_fd(const struct ks_ws_tracker *t) {
  return t->ifd;
}

void ks_ws_tracker_request_rescan(struct ks_ws_tracker *t) {
  t->need_rescan = true;
}

void ks_ws_tracker_get_stats(const struct ks_ws_tracker *t,
                             struct ks_ws_tracker_stats *ret) {
  *ret = t->stats;
  ret->files = t->files.n;
  ret->dirs = t->wds.n;
}

int ks_ws_tracker_verify(struct ks_ws_tracker *t, struct ks_err *err) {
  struct ks_ws_entry *ent = NULL;
  size_t n = 0;
  int r = ks__sync(t, err);

  if (r < 0)
    return r;
  r = ks_ws_list(t->rootfd, "", &ent, &n, err);
  if (r < 0)
    return r;
  for (size_t i = 0; i < n && r == 0; i++) {
    size_t len = strlen(ent[i].path);
    const struct ks__file *f =
        ks_wst_file_by_path(t, ent[i].path, len, ks_hash_bytes(ent[i].path, len));
    if (f == NULL || f->size != ent[i].size || f->mtime_ns != ent[i].mtime_ns) {
      memcpy(t->path, ent[i].path, len + 1);
      r = ks_err_set(err, EBADMSG, "verify", t->path);
    }
  }
  if (r == 0 && n != t->files.n) {
    /* An indexed file the scan does not have: name the first one. */
    for (size_t i = 0; t->files.slots != NULL && i <= t->files.mask; i++) {
      const struct ks__file *f = t->files.slots[i].p;
      bool found = false;
      if (f == NULL)
        continue;
      for (size_t j = 0; j < n && !found; j++)
        found = strcmp(ent[j].path, f->key.path) == 0;
      if (!found) {
        memcpy(t->path, f->key.path, f->key.len + 1);
        break;
      }
    }
    r = ks_err_set(err, EBADMSG, "verify", t->path);
  }
  free(ent);
  return r;
}

void ks_ws_tracker_close(struct ks_ws_tracker *t) {
  if (t == NULL)
    return;
  while (t->calls != NULL)
    ks__call_free(t, t->calls);
  ks_wst_cache_drop(t);
  ks_wst_free_files(t);
  ks_wst_free_nodes(&t->wds);
  ks_tab_free(&t->dirs);
  /* Closing the instance removes every watch at once. */
  if (t->ifd >= 0)
    ks_close_keep_errno(t->ifd);
  if (t->rootfd >= 0)
    ks_close_keep_errno(t->rootfd);
  free(t->todo.buf);
  free(t->dents);
  free(t->events);
  free(t);
}
