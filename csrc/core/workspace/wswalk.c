/* Walking, listing and removing a workspace tree beneath its descriptor,
 * never following a symlink the box planted (wsfs.h): each level is opened
 * from its parent's descriptor with O_NOFOLLOW. */
#define _GNU_SOURCE
#include "wsfs.h"
#include "wsfs-internal.h"

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../compat.h"
#include "../envfd.h"
#include "../util.h"

#define KS__RM_MAX_PASSES 10000
#define KS__RM_WINDOW 64

/* ---- walking ----------------------------------------------------------------- */

/* Directories still to visit, depth first: a byte stack of entries, each a
 * name followed by its header, so a pop reads the header at the end. */
struct ks__todo {
  char *buf;
  size_t len;
  size_t cap;
};

struct ks__todo_hdr {
  uint32_t depth;
  uint16_t name_len;
  uint8_t kind;
};

enum { KS__TODO_VISIT = 0, KS__TODO_RMDIR = 1 };

static int ks__todo_push(struct ks__todo *t, uint32_t depth, uint8_t kind,
                         const char *name, size_t name_len) {
  struct ks__todo_hdr h = {.depth = depth, .name_len = (uint16_t) name_len, .kind = kind};
  size_t need = t->len + name_len + sizeof h;

  if (ks_buf_reserve(&t->buf, &t->cap, need) < 0)
    return -ENOMEM;
  memcpy(t->buf + t->len, name, name_len);
  memcpy(t->buf + t->len + name_len, &h, sizeof h);
  t->len = need;
  return 0;
}

static bool ks__todo_pop(struct ks__todo *t, uint32_t *ret_depth, uint8_t *ret_kind,
                         char name[KS_WS_NAME_MAX + 1]) {
  struct ks__todo_hdr h;

  if (t->len == 0)
    return false;
  memcpy(&h, t->buf + t->len - sizeof h, sizeof h);
  t->len -= sizeof h + h.name_len;
  memcpy(name, t->buf + t->len, h.name_len);
  name[h.name_len] = '\0';
  *ret_depth = h.depth;
  *ret_kind = h.kind;
  return true;
}

static bool ks__is_dot(const char *name) {
  return name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'));
}

static bool ks__is_private(const char *name, size_t len) {
  return len >= sizeof KS_WS_PRIVATE_PREFIX - 1 &&
         memcmp(name, KS_WS_PRIVATE_PREFIX, sizeof KS_WS_PRIVATE_PREFIX - 1) == 0;
}

struct ks__frame {
  int fd;
  size_t path_len; /* of this directory's path in the walk's path buffer */
};

struct ks__walker {
  struct ks_ws_walk *w;
  struct ks__todo todo;
  struct ks__frame *frames;
  size_t nframes;
  char *dents;
  char path[KS_WS_PATH_MAX + 1];
  const char *subdir; /* for errors */
  unsigned flags;     /* KS_WS_WALK_* */
};

static int ks__walk_record(struct ks__walker *k, size_t plen, const char *name,
                           size_t nlen, const struct stat *st, struct ks_err *err) {
  struct ks_ws_walk *w = k->w;
  size_t sep = plen > 0 ? 1 : 0;
  size_t len = plen + sep + nlen;
  struct ks_ws_rec *rec;

  if (len > KS_WS_PATH_MAX)
    return ks_err_set(err, ENAMETOOLONG, "walk", k->subdir);
  if (w->n >= KS_WS_MAX_ENTRIES || w->arena_len + len + 1 > KS_WS_MAX_PATH_BYTES)
    return ks_err_set(err, E2BIG, "walk", k->subdir);
  if (w->n == w->cap) {
    size_t ncap = w->cap != 0 ? w->cap * 2 : 256;
    struct ks_ws_rec *nrecs = realloc(w->recs, ncap * sizeof *nrecs);
    if (nrecs == NULL)
      return ks_err_set(err, ENOMEM, "malloc", k->subdir);
    w->recs = nrecs;
    w->cap = ncap;
  }
  if (w->arena_len + len + 1 > w->arena_cap) {
    size_t ncap = w->arena_cap != 0 ? w->arena_cap * 2 : 16384;
    char *narena;
    while (ncap < w->arena_len + len + 1)
      ncap *= 2;
    narena = realloc(w->arena, ncap);
    if (narena == NULL)
      return ks_err_set(err, ENOMEM, "malloc", k->subdir);
    w->arena = narena;
    w->arena_cap = ncap;
  }
  rec = &w->recs[w->n++];
  rec->off = w->arena_len;
  rec->len = (uint32_t) len;
  rec->hash = 0;
  rec->size = (uint64_t) st->st_size;
  rec->mtime_ns = (int64_t) st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
  memcpy(w->arena + w->arena_len, k->path, plen);
  if (sep)
    w->arena[w->arena_len + plen] = '/';
  memcpy(w->arena + w->arena_len + plen + sep, name, nlen + 1);
  w->arena_len += len + 1;
  return 0;
}

/* Reads one directory to the end: records its regular files, queues its
 * subdirectories. top says it is the workspace root. */
static int ks__walk_dir(struct ks__walker *k, int fd, uint32_t depth, size_t plen,
                        bool top, struct ks_err *err) {
  for (;;) {
    long n = syscall(SYS_getdents64, fd, k->dents, KS__DENTS_BUF);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      /* ENOENT: the directory was removed (or renamed over) after we
       * opened it; it has nothing left to list. */
      if (errno == ENOENT)
        return 0;
      return ks_err_set(err, errno, "getdents64", k->subdir);
    }
    if (n == 0)
      return 0;
    for (long off = 0; off < n;) {
      struct ks__dirent64 *e = (struct ks__dirent64 *) (k->dents + off);
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
      if (ks__is_private(name, nlen))
        continue;
      /* Only odd file systems (FUSE, CIFS) exceed NAME_MAX; such a name
       * could not be handed back to any operation here anyway. */
      if (nlen > KS_WS_NAME_MAX)
        return ks_err_set(err, ENAMETOOLONG, "walk", k->subdir);
      if (type == DT_UNKNOWN) {
        /* Some file systems leave d_type out; ask, still without following. */
        if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
          if (errno == ENOENT)
            continue;
          return ks_err_set(err, errno, "fstatat", k->subdir);
        }
        have_st = true;
        type = (unsigned char) IFTODT(st.st_mode);
      }
      if (type == DT_DIR) {
        if (top && !(k->flags & KS_WS_WALK_WITH_DEPS) && strcmp(name, KS_WS_DEPS_DIR) == 0)
          continue;
        if (plen + (plen > 0) + nlen > KS_WS_PATH_MAX)
          return ks_err_set(err, ENAMETOOLONG, "walk", k->subdir);
        if (ks__todo_push(&k->todo, depth + 1, KS__TODO_VISIT, name, nlen) < 0)
          return ks_err_set(err, ENOMEM, "malloc", k->subdir);
      } else if (type == DT_REG) {
        if (top && strncmp(name, KS_WS_ENV_PREFIX, sizeof KS_WS_ENV_PREFIX - 1) == 0)
          continue;
        if (k->flags & KS_WS_WALK_NAMES_ONLY) {
          /* The caller opens and checks each file itself. */
          if (!have_st)
            memset(&st, 0, sizeof st);
        } else {
          if (!have_st && fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
            if (errno == ENOENT)
              continue;
            return ks_err_set(err, errno, "fstatat", k->subdir);
          }
          if (!S_ISREG(st.st_mode))
            continue; /* swapped for something else since getdents */
        }
        r = ks__walk_record(k, plen, name, nlen, &st, err);
        if (r < 0)
          return r;
      }
      /* Symlinks, FIFOs, sockets, devices: not user files, never followed. */
    }
  }
}

static void ks__walker_close_from(struct ks__walker *k, size_t depth) {
  while (k->nframes > depth) {
    k->nframes--;
    ks_close_keep_errno(k->frames[k->nframes].fd);
  }
}

int ks_ws_walk(int rootfd, const char *subdir, struct ks_ws_walk *w, struct ks_err *err) {
  return ks_ws_walk_flags(rootfd, subdir, 0, w, err);
}

int ks_ws_walk_flags(int rootfd, const char *subdir, unsigned flags, struct ks_ws_walk *w,
                     struct ks_err *err) {
  struct ks__walker *k = NULL;
  size_t sub_len;
  const char *p;
  const char *comp;
  size_t comp_len;
  size_t plen = 0;
  int fd = -1;
  uint32_t depth;
  uint8_t kind;
  char name[KS_WS_NAME_MAX + 1];
  int r;

  if (subdir == NULL)
    subdir = "";
  sub_len = strlen(subdir);
  r = ks_ws_check_dir_rel(subdir, sub_len, err);
  if (r < 0)
    return r;
  k = calloc(1, sizeof *k);
  if (k == NULL)
    return ks_err_set(err, ENOMEM, "malloc", subdir);
  k->w = w;
  k->subdir = subdir;
  k->flags = flags;
  k->frames = calloc(KS__MAX_DEPTH + 1, sizeof *k->frames);
  k->dents = malloc(KS__DENTS_BUF);
  if (k->frames == NULL || k->dents == NULL) {
    r = ks_err_set(err, ENOMEM, "malloc", subdir);
    goto fail;
  }

  /* Paths are reported from the root, in canonical form ("a//./b/" is
   * "a/b"), whatever spelling the caller used. */
  p = subdir;
  while (ks_wsfs_next_comp(&p, subdir + sub_len, &comp, &comp_len)) {
    if (plen > 0)
      k->path[plen++] = '/';
    memcpy(k->path + plen, comp, comp_len);
    plen += comp_len;
  }
  /* A fresh descriptor even for the root: getdents moves the file offset,
   * and rootfd is shared with every other operation in flight. */
  if (plen == 0) {
    fd = openat(rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
      r = ks_err_set(err, errno, "openat", subdir);
      goto fail;
    }
  } else {
    r = ks_wsfs_open_beneath_n(rootfd, subdir, sub_len, subdir, O_RDONLY | O_DIRECTORY, 0,
                           &fd, err);
    if (r < 0)
      goto fail;
  }
  k->frames[0].fd = fd;
  k->frames[0].path_len = plen;
  k->nframes = 1;

  r = ks__walk_dir(k, fd, 0, plen, plen == 0, err);
  while (r == 0 && ks__todo_pop(&k->todo, &depth, &kind, name)) {
    struct ks__frame *parent;
    size_t nlen = strlen(name);
    size_t child_len;

    ks__walker_close_from(k, depth);
    parent = &k->frames[depth - 1];
    fd = openat(parent->fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
      /* Gone, replaced by a symlink or a file, or unreadable: nothing of
       * it can be listed, and nothing in it is followed. */
      if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP || errno == EACCES ||
          errno == EPERM)
        continue;
      r = ks_err_set(err, errno, "openat", subdir);
      break;
    }
    child_len = parent->path_len;
    if (child_len > 0)
      k->path[child_len++] = '/';
    memcpy(k->path + child_len, name, nlen); /* length checked when queued */
    child_len += nlen;
    k->frames[depth].fd = fd;
    k->frames[depth].path_len = child_len;
    k->nframes = depth + 1;
    r = ks__walk_dir(k, fd, depth, child_len, false, err);
  }

fail:
  if (k != NULL) {
    ks__walker_close_from(k, 0);
    free(k->frames);
    free(k->dents);
    free(k->todo.buf);
    free(k);
  }
  return r;
}

void ks_ws_walk_free(struct ks_ws_walk *w) {
  if (w == NULL)
    return;
  free(w->recs);
  free(w->arena);
  memset(w, 0, sizeof *w);
}

static int ks__entry_cmp(const void *a, const void *b) {
  return strcmp(((const struct ks_ws_entry *) a)->path,
                ((const struct ks_ws_entry *) b)->path);
}

int ks_ws_list(int rootfd, const char *subdir, struct ks_ws_entry **ret, size_t *ret_n,
               struct ks_err *err) {
  struct ks_ws_walk w;
  struct ks_ws_entry *entries;
  char *strings;
  size_t n = 0;
  int r;

  memset(&w, 0, sizeof w);
  r = ks_ws_walk(rootfd, subdir, &w, err);
  if (r < 0) {
    ks_ws_walk_free(&w);
    return r;
  }
  /* One block: the entries, then their paths, so free() releases both. */
  entries = malloc(w.n * sizeof *entries + w.arena_len + 1);
  if (entries == NULL) {
    ks_ws_walk_free(&w);
    return ks_err_set(err, ENOMEM, "malloc", subdir);
  }
  strings = (char *) (entries + w.n);
  if (w.arena_len > 0)
    memcpy(strings, w.arena, w.arena_len);
  for (size_t i = 0; i < w.n; i++) {
    entries[i].path = strings + w.recs[i].off;
    entries[i].size = w.recs[i].size;
    entries[i].mtime_ns = w.recs[i].mtime_ns;
  }
  if (w.n > 1)
    qsort(entries, w.n, sizeof *entries, ks__entry_cmp);
  /* A name renamed during the walk can be returned twice by getdents. */
  for (size_t i = 0; i < w.n; i++) {
    if (n > 0 && strcmp(entries[n - 1].path, entries[i].path) == 0)
      continue;
    entries[n++] = entries[i];
  }
  ks_ws_walk_free(&w);
  *ret = entries;
  *ret_n = n;
  return 0;
}

/* ---- removing ---------------------------------------------------------------- */

struct ks__rm {
  int top; /* our own descriptor of the workspace root */
  int fds[KS__RM_WINDOW + 1]; /* fds[0] == top, not owned */
  size_t nfds;
  struct ks__todo todo;
  char *dents;
  bool progress; /* this pass removed or moved something */
  size_t seen_top; /* entries found at the top level this pass */
};

static void ks__rm_close_from(struct ks__rm *rm, size_t depth) {
  if (depth < 1)
    depth = 1;
  while (rm->nfds > depth) {
    rm->nfds--;
    ks_close_keep_errno(rm->fds[rm->nfds]);
  }
}

/* A directory the box made read-only (Go's module cache does this too)
 * refuses unlinkat in it: give the owner write and search permission back,
 * through a descriptor, never by name. */
static bool ks__rm_unlock_fd(int dirfd) {
  return fchmod(dirfd, 0700) == 0;
}

/* The same for a directory we cannot even open: change it through an
 * O_PATH descriptor (opened O_NOFOLLOW, so it is the directory itself) and
 * its /proc/self/fd link, which names exactly that inode. */
static bool ks__rm_unlock_name(int dirfd, const char *name) {
  _cleanup_close_ int fd =
      openat(dirfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  char proc[64];

  if (fd < 0)
    return false;
  (void) snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
  return chmod(proc, 0700) == 0;
}

static int ks__rm_unlinkat(struct ks__rm *rm, int dirfd, const char *name, int flags) {
  if (unlinkat(dirfd, name, flags) == 0) {
    rm->progress = true;
    return 0;
  }
  if ((errno == EACCES || errno == EPERM) && ks__rm_unlock_fd(dirfd) &&
      unlinkat(dirfd, name, flags) == 0) {
    rm->progress = true;
    return 0;
  }
  return -errno;
}

/* Moves a directory too deep for the descriptor window to the top level,
 * where a later pass starts over with it. renameat never follows. */
static int ks__rm_hoist(struct ks__rm *rm, int dirfd, const char *name,
                        struct ks_err *err) {
  char tmp[64];

  for (int i = 0; i < KS__NAME_RETRIES; i++) {
    ks_wsfs_random_name(tmp, sizeof tmp, KS_WS_PRIVATE_PREFIX "rm-");
    if (renameat(dirfd, name, rm->top, tmp) == 0 ||
        ((errno == EACCES || errno == EPERM) && ks__rm_unlock_fd(dirfd) &&
         renameat(dirfd, name, rm->top, tmp) == 0)) {
      rm->progress = true; /* the next pass finds it at the top */
      return 0;
    }
    if (errno == ENOENT)
      return 0;
    if (errno != EEXIST && errno != ENOTEMPTY && errno != EISDIR && errno != ENOTDIR)
      return ks_err_set(err, errno, "renameat", NULL);
  }
  return ks_err_set(err, EEXIST, "renameat", NULL);
}

static int ks__rm_queue_dir(struct ks__rm *rm, int dirfd, uint32_t depth,
                            const char *name, size_t nlen, struct ks_err *err) {
  if (depth >= KS__RM_WINDOW)
    return ks__rm_hoist(rm, dirfd, name, err);
  /* The RMDIR entry pops after everything the VISIT queues. */
  if (ks__todo_push(&rm->todo, depth + 1, KS__TODO_RMDIR, name, nlen) < 0 ||
      ks__todo_push(&rm->todo, depth + 1, KS__TODO_VISIT, name, nlen) < 0)
    return ks_err_set(err, ENOMEM, "malloc", NULL);
  return 0;
}

/* Unlinks every non-directory of the open directory fd and queues its
 * subdirectories. */
static int ks__rm_dir(struct ks__rm *rm, int fd, uint32_t depth, struct ks_err *err) {
  for (;;) {
    long n = syscall(SYS_getdents64, fd, rm->dents, KS__DENTS_BUF);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      if (errno == ENOENT)
        return 0; /* removed under us: nothing left in it */
      return ks_err_set(err, errno, "getdents64", NULL);
    }
    if (n == 0)
      return 0;
    for (long off = 0; off < n;) {
      struct ks__dirent64 *e = (struct ks__dirent64 *) (rm->dents + off);
      const char *name = e->d_name;
      unsigned char type = e->d_type;
      size_t nlen;
      int r;

      off += e->d_reclen;
      if (ks__is_dot(name))
        continue;
      nlen = strlen(name);
      if (nlen > KS_WS_NAME_MAX)
        return ks_err_set(err, ENAMETOOLONG, "unlinkat", NULL);
      if (depth == 0)
        rm->seen_top++;
      if (type == DT_UNKNOWN) {
        struct stat st;
        if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
          if (errno == ENOENT)
            continue;
          return ks_err_set(err, errno, "fstatat", NULL);
        }
        type = (unsigned char) IFTODT(st.st_mode);
      }
      if (type != DT_DIR) {
        r = ks__rm_unlinkat(rm, fd, name, 0);
        if (r == -ENOENT)
          continue;
        if (r != -EISDIR) {
          if (r < 0)
            return ks_err_set(err, -r, "unlinkat", NULL);
          continue;
        }
        /* It became a directory since getdents: treat it as one. */
      }
      r = ks__rm_queue_dir(rm, fd, depth, name, nlen, err);
      if (r < 0)
        return r;
    }
  }
}

static int ks__rm_pop(struct ks__rm *rm, uint32_t depth, uint8_t kind, const char *name,
                      struct ks_err *err) {
  int pfd;
  int fd;
  int r;

  ks__rm_close_from(rm, depth);
  pfd = rm->fds[depth - 1];
  if (kind == KS__TODO_RMDIR) {
    r = ks__rm_unlinkat(rm, pfd, name, AT_REMOVEDIR);
    if (r == 0 || r == -ENOENT)
      return 0;
    if (r == -ENOTEMPTY || r == -EEXIST)
      return 0; /* something appeared or was missed: the next pass */
    if (r == -ENOTDIR) {
      /* Swapped for a symlink or file after we emptied it. */
      r = ks__rm_unlinkat(rm, pfd, name, 0);
      if (r == 0 || r == -ENOENT)
        return 0;
      if (r == -EISDIR)
        return 0; /* a directory again: the next pass */
    }
    return ks_err_set(err, -r, "unlinkat", NULL);
  }

  fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 && errno == EACCES && ks__rm_unlock_name(pfd, name))
    fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT)
      return 0;
    if (errno == ENOTDIR || errno == ELOOP) {
      /* A symlink (or file) took the directory's place: unlink the name,
       * never enter it (A24). */
      r = ks__rm_unlinkat(rm, pfd, name, 0);
      if (r == 0 || r == -ENOENT || r == -EISDIR)
        return 0; /* EISDIR: a directory again, for the next pass */
      return ks_err_set(err, -r, "unlinkat", NULL);
    }
    return ks_err_set(err, errno, "openat", NULL);
  }
  rm->fds[depth] = fd;
  rm->nfds = depth + 1;
  return ks__rm_dir(rm, fd, depth, err);
}

int ks_ws_remove_tree(int rootfd, struct ks_err *err) {
  struct ks__rm rm;
  _cleanup_close_ int top = -1;
  char name[KS_WS_NAME_MAX + 1];
  int r = 0;

  memset(&rm, 0, sizeof rm);
  /* Our own descriptor: getdents moves the offset of the one it reads. */
  top = openat(rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (top < 0 && errno == EACCES && ks__rm_unlock_fd(rootfd))
    top = openat(rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (top < 0)
    return ks_err_set(err, errno, "openat", NULL);
  rm.top = top;
  rm.fds[0] = top;
  rm.dents = malloc(KS__DENTS_BUF);
  if (rm.dents == NULL)
    return ks_err_set(err, ENOMEM, "malloc", NULL);

  for (int pass = 0;; pass++) {
    uint32_t depth;
    uint8_t kind;

    if (pass == KS__RM_MAX_PASSES) {
      r = ks_err_set(err, ENOTEMPTY, "unlinkat", NULL);
      break;
    }
    rm.progress = false;
    rm.seen_top = 0;
    rm.nfds = 1;
    rm.todo.len = 0;
    if (lseek(top, 0, SEEK_SET) < 0) {
      r = ks_err_set(err, errno, "lseek", NULL);
      break;
    }
    r = ks__rm_dir(&rm, top, 0, err);
    while (r == 0 && ks__todo_pop(&rm.todo, &depth, &kind, name))
      r = ks__rm_pop(&rm, depth, kind, name, err);
    ks__rm_close_from(&rm, 1);
    if (r < 0)
      break;
    /* Done once a pass finds the top level already empty: entries removed
     * while getdents was reading can hide others until the next read. */
    if (rm.seen_top == 0)
      break;
    if (!rm.progress) {
      r = ks_err_set(err, ENOTEMPTY, "unlinkat", NULL);
      break;
    }
  }
  free(rm.dents);
  free(rm.todo.buf);
  return r;
}
