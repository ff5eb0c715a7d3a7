#define _GNU_SOURCE
#include "commit.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../util.h"
#include "wsfs.h"

enum ks__undo_kind {
  KS__UNDO_MKDIR,  /* remove the directory `path` */
  KS__UNDO_PLACED, /* move item `index` back to its stage name */
  KS__UNDO_SWAPPED /* swap item `index` with the old file again */
};

struct ks__undo {
  enum ks__undo_kind kind;
  size_t index;
  char *path; /* KS__UNDO_MKDIR only */
};

struct ks__commit {
  int rootfd;
  int stagefd;
  const struct ks_commit_item *items;
  ks_commit_stage_name_fn stage_name;
  struct ks__undo *log;
  size_t nlog;
  size_t caplog;
  char ensured[KS_WS_PATH_MAX + 1]; /* the last directory known to exist */
};

static int ks__log(struct ks__commit *C, enum ks__undo_kind kind, size_t index,
                   const char *path, size_t len) {
  struct ks__undo *u;
  if (C->nlog == C->caplog) {
    size_t cap = C->caplog ? C->caplog * 2 : 64;
    struct ks__undo *v = realloc(C->log, cap * sizeof *v);
    if (v == NULL)
      return -ENOMEM;
    C->log = v;
    C->caplog = cap;
  }
  u = &C->log[C->nlog];
  u->kind = kind;
  u->index = index;
  u->path = NULL;
  if (path != NULL && (u->path = strndup(path, len)) == NULL)
    return -ENOMEM;
  C->nlog++;
  return 0;
}

/* Splits "a/b/c" into the directory fd of "a/b" (opened beneath the root,
 * never through a symlink, without creating anything) and the leaf "c". */
static int ks__open_parent(struct ks__commit *C, const char *path, size_t len, int *ret_fd,
                           const char **ret_leaf, struct ks_err *err) {
  const char *slash = memrchr(path, '/', len);
  char buf[KS_WS_PATH_MAX + 1];
  *ret_leaf = slash != NULL ? slash + 1 : path;
  *ret_fd = -1;
  if (slash == NULL)
    return 0; /* the root itself: callers use C->rootfd */
  memcpy(buf, path, (size_t) (slash - path));
  buf[slash - path] = '\0';
  return ks_open_beneath(C->rootfd, buf, O_PATH | O_DIRECTORY, 0, ret_fd, err);
}

/* Makes sure path[0 .. len) is a directory, creating missing levels one at a
 * time and logging each one created. */
static int ks__ensure_dir(struct ks__commit *C, const char *path, size_t len,
                          struct ks_err *err) {
  char buf[KS_WS_PATH_MAX + 1];
  if (len == 0 || (strlen(C->ensured) == len && memcmp(C->ensured, path, len) == 0))
    return 0;
  for (size_t end = 0; end <= len; end++) {
    int fd = -1;
    int pfd;
    const char *leaf;
    int r;
    if (end < len && path[end] != '/')
      continue;
    memcpy(buf, path, end);
    buf[end] = '\0';
    r = ks_open_beneath(C->rootfd, buf, O_PATH | O_DIRECTORY, 0, &fd, err);
    if (r == 0) {
      close(fd);
      continue;
    }
    if (r != -ENOENT)
      return r;
    r = ks__open_parent(C, buf, end, &pfd, &leaf, err);
    if (r < 0)
      return r;
    if (mkdirat(pfd >= 0 ? pfd : C->rootfd, leaf, 0755) == 0) {
      r = ks__log(C, KS__UNDO_MKDIR, 0, buf, end);
      if (r < 0)
        r = ks_err_set(err, ENOMEM, "malloc", NULL);
    } else if (errno != EEXIST) {
      r = ks_err_set(err, errno, "mkdirat", NULL);
    }
    if (pfd >= 0)
      close(pfd);
    if (r < 0)
      return r;
    /* What is there now (made, or made meanwhile by someone else) must be a
     * directory reached without a symlink. */
    r = ks_open_beneath(C->rootfd, buf, O_PATH | O_DIRECTORY, 0, &fd, err);
    if (r < 0)
      return r;
    close(fd);
  }
  memcpy(C->ensured, path, len);
  C->ensured[len] = '\0';
  return 0;
}

static int ks__place_file(struct ks__commit *C, size_t i, struct ks_err *err) {
  const char *path = C->items[i].path;
  size_t len = strlen(path);
  const char *slash = memrchr(path, '/', len);
  const char *leaf;
  char stage[32];
  struct stat st;
  int pfd = -1;
  int dfd;
  int r;

  r = ks__ensure_dir(C, path, slash != NULL ? (size_t) (slash - path) : 0, err);
  if (r < 0)
    return r;
  r = ks__open_parent(C, path, len, &pfd, &leaf, err);
  if (r < 0)
    return r;
  dfd = pfd >= 0 ? pfd : C->rootfd;
  C->stage_name(stage, sizeof stage, i);
  for (int attempt = 0; attempt < 2; attempt++) {
    if (fstatat(dfd, leaf, &st, AT_SYMLINK_NOFOLLOW) < 0) {
      if (errno != ENOENT) {
        r = ks_err_set(err, errno, "fstatat", NULL);
        break;
      }
      if (renameat2(C->stagefd, stage, dfd, leaf, RENAME_NOREPLACE) == 0) {
        r = ks__log(C, KS__UNDO_PLACED, i, NULL, 0);
        break;
      }
    } else if (S_ISDIR(st.st_mode)) {
      r = ks_err_set(err, EISDIR, "renameat2", NULL);
      break;
    } else if (renameat2(C->stagefd, stage, dfd, leaf, RENAME_EXCHANGE) == 0) {
      r = ks__log(C, KS__UNDO_SWAPPED, i, NULL, 0);
      break;
    }
    /* EEXIST or ENOENT: the destination changed between the stat and the
     * rename (a racing box); look again once. */
    int saved = errno;
    r = ks_err_set(err, saved, "renameat2", NULL);
    if (saved != EEXIST && saved != ENOENT)
      break;
  }
  if (pfd >= 0)
    close(pfd);
  if (r == -ENOMEM)
    r = ks_err_set(err, ENOMEM, "malloc", NULL);
  return r;
}

/* Undoes the log in reverse; returns whether every step was undone. */
static bool ks__undo_all(struct ks__commit *C) {
  bool complete = true;
  struct ks_err e2;

  while (C->nlog > 0) {
    struct ks__undo *u = &C->log[--C->nlog];
    const char *path = u->kind == KS__UNDO_MKDIR ? u->path : C->items[u->index].path;
    const char *leaf;
    char stage[32];
    int pfd = -1;
    int ok;

    ks_err_clear(&e2);
    if (ks__open_parent(C, path, strlen(path), &pfd, &leaf, &e2) < 0) {
      complete = false;
      free(u->path);
      continue;
    }
    int dfd = pfd >= 0 ? pfd : C->rootfd;
    C->stage_name(stage, sizeof stage, u->index);
    switch (u->kind) {
    case KS__UNDO_MKDIR:
      ok = unlinkat(dfd, leaf, AT_REMOVEDIR) == 0;
      break;
    case KS__UNDO_PLACED:
      ok = renameat2(dfd, leaf, C->stagefd, stage, RENAME_NOREPLACE) == 0;
      break;
    default:
      ok = renameat2(dfd, leaf, C->stagefd, stage, RENAME_EXCHANGE) == 0;
      break;
    }
    complete = complete && ok;
    if (pfd >= 0)
      close(pfd);
    free(u->path);
  }
  return complete;
}

int ks_commit(int rootfd, int stagefd, const struct ks_commit_item *items, size_t n,
              ks_commit_stage_name_fn stage_name, struct ks_commit_outcome *out,
              struct ks_err *err) {
  struct ks__commit C = {.rootfd = rootfd, .stagefd = stagefd, .items = items,
                         .stage_name = stage_name};
  int r = 0;

  memset(out, 0, sizeof *out);
  for (size_t i = 0; i < n && r == 0; i++) {
    if (items[i].is_dir) {
      r = ks__ensure_dir(&C, items[i].path, strlen(items[i].path), err);
      if (r < 0)
        out->message = "could not create a directory member";
    } else {
      r = ks__place_file(&C, i, err);
      if (r < 0)
        out->message = "could not move a member into place";
    }
    if (r < 0)
      out->failed = items[i].path;
  }
  if (r < 0) {
    out->undo_complete = ks__undo_all(&C);
  } else {
    for (size_t k = 0; k < C.nlog; k++)
      free(C.log[k].path);
  }
  free(C.log);
  return r;
}
