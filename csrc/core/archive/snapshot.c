#define _GNU_SOURCE
#include "snapshot.h"

#include <assert.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "../workspace/commit.h"
#include "../envfd.h"
#include "../util.h"
#include "../workspace/wsfs.h"

#define KS__IO_CHUNK (256u << 10)
#define KS__DEFLATE_LEVEL 1 /* checkpoints favour speed; often already-compressed data */

static void ks__report(struct ks_restore_report *rep, const char *message, const char *member) {
  if (rep == NULL)
    return;
  snprintf(rep->message, sizeof rep->message, "%s", message);
  snprintf(rep->member, sizeof rep->member, "%s", member != NULL ? member : "");
}

static void ks__random_hex(char *out, size_t size, const char *prefix) {
  uint64_t v = 0;
  if (getrandom(&v, sizeof v, GRND_NONBLOCK) != (ssize_t) sizeof v)
    v = (uint64_t) getpid() * UINT64_C(0x9E3779B97F4A7C15) ^ (uint64_t) (uintptr_t) out;
  snprintf(out, size, "%s%016" PRIx64, prefix, v);
}

/* ---- writing ------------------------------------------------------------- */

struct ks__gzout {
  z_stream zs;
  int fd;
  unsigned char out[KS__IO_CHUNK];
};

/* Feeds len bytes to deflate and writes whatever it produces. */
static int ks__gz_push(struct ks__gzout *g, const void *data, size_t len, int flush,
                       struct ks_err *err) {
  int ret;

  g->zs.next_in = (Bytef *) data;
  g->zs.avail_in = (uInt) len;
  do {
    size_t have;
    int r;

    g->zs.next_out = g->out;
    g->zs.avail_out = sizeof g->out;
    ret = deflate(&g->zs, flush);
    assert(ret != Z_STREAM_ERROR); /* zlib: only for a broken stream state */
    have = sizeof g->out - g->zs.avail_out;
    if (have > 0) {
      r = ks_write_all(g->fd, (const char *) g->out, have);
      if (r < 0)
        return ks_err_set(err, -r, "write", NULL);
    }
  } while (g->zs.avail_out == 0 || (flush == Z_FINISH && ret != Z_STREAM_END));
  assert(g->zs.avail_in == 0); /* zlib: deflate consumes all input given room */
  return 0;
}

static int ks__gz_zeros(struct ks__gzout *g, size_t n, struct ks_err *err) {
  static const unsigned char zeros[2 * KS_TAR_BLOCK];
  assert(n <= sizeof zeros);
  return n > 0 ? ks__gz_push(g, zeros, n, Z_NO_FLUSH, err) : 0;
}

static int ks__rec_cmp(const void *a, const void *b, void *arg) {
  const struct ks_ws_walk *w = arg;
  const struct ks_ws_rec *x = &w->recs[*(const size_t *) a];
  const struct ks_ws_rec *y = &w->recs[*(const size_t *) b];
  return strcmp(w->arena + x->off, w->arena + y->off);
}

/* What the archive holds so far, against restore's caps. */
struct ks__budget {
  uint64_t tar_bytes; /* headers and padded content written */
  size_t members;
};

/* Appends one file to the archive through a descriptor opened beneath the
 * workspace: a name the box swapped for a symlink or a FIFO since the walk
 * is skipped, never followed or blocked on. */
static int ks__archive_file(struct ks__gzout *g, int rootfd, const char *path, char *buf,
                            struct ks__budget *budget, struct ks_err *err) {
  _cleanup_close_ int fd = -1;
  unsigned char header[KS_TAR_BLOCK];
  struct stat st;
  uint64_t left;
  int r;

  r = ks_open_beneath(rootfd, path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW, 0, &fd, err);
  if (r == -ENOENT || r == -ELOOP || r == -ENXIO) {
    ks_err_clear(err);
    return 0; /* gone, or no longer a regular file */
  }
  if (r < 0)
    return r;
  if (fstat(fd, &st) < 0)
    return ks_err_set(err, errno, "fstat", path);
  if (!S_ISREG(st.st_mode))
    return 0;
  {
    /* A name restore would refuse ('\\', a drive prefix) must fail the
     * snapshot loudly: archiving it would make the checkpoint unrestorable. */
    char vetted[KS_TAR_PATH_MAX + 1];
    enum ks_tar_refusal why = KS_TAR_NAME_TOO_LONG;
    if (strlen(path) <= KS_TAR_PATH_MAX) {
      memcpy(vetted, path, strlen(path) + 1);
      why = ks_tar_vet_path(vetted);
    }
    if (why == KS_TAR_NAME_TOO_LONG)
      return ks_err_set(err, ENAMETOOLONG, "snapshot", path);
    if (why != KS_TAR_OK)
      return ks_err_set(err, EINVAL, "snapshot", path);
  }
  {
    /* Likewise an archive restore would refuse for its size: more members,
     * or more inflated bytes (end marker included), than it accepts. This
     * also bounds the work: nothing past the cap is read. */
    uint64_t size = (uint64_t) st.st_size;
    uint64_t need = KS_TAR_BLOCK + (size + KS_TAR_BLOCK - 1) / KS_TAR_BLOCK * KS_TAR_BLOCK;
    if (budget->members >= KS_RESTORE_MAX_MEMBERS || size > KS_RESTORE_MAX_INFLATED ||
        budget->tar_bytes + need + 2 * KS_TAR_BLOCK > KS_RESTORE_MAX_INFLATED)
      return ks_err_set(err, EFBIG, "snapshot", path);
    budget->members++;
    budget->tar_bytes += need;
  }
  r = ks_tar_encode(header, path, KS_TAR_FILE, (uint64_t) st.st_size);
  if (r < 0)
    return ks_err_set(err, -r, "snapshot", path);
  r = ks__gz_push(g, header, sizeof header, Z_NO_FLUSH, err);
  if (r < 0)
    return r;
  for (left = (uint64_t) st.st_size; left > 0;) {
    ssize_t n = read(fd, buf, left < KS__IO_CHUNK ? (size_t) left : KS__IO_CHUNK);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return ks_err_set(err, errno, "read", path);
    if (n == 0) /* it shrank under us: the header already promised more */
      return ks_err_set(err, EIO, "read", path);
    r = ks__gz_push(g, buf, (size_t) n, Z_NO_FLUSH, err);
    if (r < 0)
      return r;
    left -= (uint64_t) n;
  }
  return ks__gz_zeros(g, (KS_TAR_BLOCK - (size_t) (st.st_size % KS_TAR_BLOCK)) % KS_TAR_BLOCK,
                      err);
}

int ks_snapshot_write(int rootfd, int outfd, char *errpath, size_t errpath_size,
                      struct ks_err *err) {
  struct ks_ws_walk w;
  struct ks__budget budget = {0, 0};
  struct ks__gzout *g = NULL;
  size_t *order = NULL;
  char *buf = NULL;
  int r;

  memset(&w, 0, sizeof w);
  r = ks_ws_walk_flags(rootfd, "", KS_WS_WALK_WITH_DEPS | KS_WS_WALK_NAMES_ONLY, &w, err);
  if (r < 0)
    goto out;
  order = malloc((w.n ? w.n : 1) * sizeof *order);
  g = calloc(1, sizeof *g);
  buf = malloc(KS__IO_CHUNK);
  if (order == NULL || g == NULL || buf == NULL) {
    r = ks_err_set(err, ENOMEM, "malloc", NULL);
    goto out;
  }
  for (size_t i = 0; i < w.n; i++)
    order[i] = i;
  /* Sorted names: the same tree always gives the same archive. */
  qsort_r(order, w.n, sizeof *order, ks__rec_cmp, &w);

  g->fd = outfd;
  /* windowBits 15 + 16 asks for a gzip wrapper; zlib writes mtime 0. */
  if (deflateInit2(&g->zs, KS__DEFLATE_LEVEL, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
      Z_OK) {
    free(g);
    g = NULL;
    r = ks_err_set(err, ENOMEM, "deflateInit2", NULL);
    goto out;
  }
  for (size_t i = 0; i < w.n && r == 0; i++)
    r = ks__archive_file(g, rootfd, w.arena + w.recs[order[i]].off, buf, &budget, err);
  if (r == 0)
    r = ks__gz_zeros(g, 2 * KS_TAR_BLOCK, err); /* the end-of-archive marker */
  if (r == 0)
    r = ks__gz_push(g, NULL, 0, Z_FINISH, err);
  (void) deflateEnd(&g->zs);

out:
  /* err->path may point into the walk's arena, which is freed below. */
  if (r < 0 && err->path != NULL && w.arena != NULL && err->path >= w.arena &&
      err->path < w.arena + w.arena_cap) {
    if (errpath != NULL && errpath_size > 0) {
      snprintf(errpath, errpath_size, "%s", err->path);
      err->path = errpath;
    } else {
      err->path = NULL;
    }
  }
  free(buf);
  free(g);
  free(order);
  ks_ws_walk_free(&w);
  return r;
}

int ks_snapshot_to(int rootfd, int dirfd, const char *name, char *errpath,
                   size_t errpath_size, struct ks_err *err) {
  char tmp[64];
  int fd;
  int r;

  ks__random_hex(tmp, sizeof tmp, ".ks-snapshot-");
  fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0)
    return ks_err_set(err, errno, "openat", name);
  r = ks_snapshot_write(rootfd, fd, errpath, errpath_size, err);
  if (close(fd) < 0 && r == 0)
    r = ks_err_set(err, errno, "close", name);
  /* rename replaces a symlink planted at name; it never writes through it. */
  if (r == 0 && renameat(dirfd, tmp, dirfd, name) < 0)
    r = ks_err_set(err, errno, "renameat", name);
  if (r < 0)
    (void) unlinkat(dirfd, tmp, 0);
  return r;
}

/* ---- restoring ------------------------------------------------------------ */

struct ks__member {
  size_t path_off; /* into the arena */
  enum ks_tar_type type;
};

enum ks__parse_state { KS__HEADER, KS__DATA, KS__PAD, KS__END };

struct ks__restore {
  int rootfd;
  int stagefd;
  char stagename[40];
  struct ks__member *members;
  size_t n;
  size_t cap;
  char *arena;
  size_t alen;
  size_t acap;
  enum ks__parse_state state;
  unsigned char header[KS_TAR_BLOCK];
  size_t header_have;
  uint64_t remaining; /* content (KS__DATA) or padding (KS__PAD) bytes still due */
  uint64_t pad;       /* padding after the current member's content */
  int curfd;
  struct ks_restore_report *rep;
};

static void ks__stage_name(char *out, size_t size, size_t index) {
  snprintf(out, size, "%zx", index);
}

static int ks__refuse(struct ks__restore *R, int errnum, const char *message,
                      const char *member, struct ks_err *err) {
  ks__report(R->rep, message, member);
  return ks_err_set(err, errnum, "restore", NULL);
}

static int ks__add_member(struct ks__restore *R, const struct ks_tar_member *m,
                          struct ks_err *err) {
  size_t plen = strlen(m->path) + 1;

  if (R->n >= KS_RESTORE_MAX_MEMBERS)
    return ks__refuse(R, EFBIG, "the archive has more than 200,000 members", NULL, err);
  if (R->n == R->cap) {
    size_t cap = R->cap ? R->cap * 2 : 256;
    void *p = realloc(R->members, cap * sizeof *R->members);
    if (p == NULL)
      return ks_err_set(err, ENOMEM, "realloc", NULL);
    R->members = p;
    R->cap = cap;
  }
  if (R->alen + plen > R->acap) {
    size_t cap = R->acap ? R->acap * 2 : 16384;
    while (cap < R->alen + plen)
      cap *= 2;
    void *p = realloc(R->arena, cap);
    if (p == NULL)
      return ks_err_set(err, ENOMEM, "realloc", NULL);
    R->arena = p;
    R->acap = cap;
  }
  memcpy(R->arena + R->alen, m->path, plen);
  R->members[R->n].path_off = R->alen;
  R->members[R->n].type = m->type;
  R->alen += plen;
  R->n++;
  return 0;
}

static int ks__close_current(struct ks__restore *R, struct ks_err *err) {
  int fd = R->curfd;
  R->curfd = -1;
  if (fd >= 0 && close(fd) < 0)
    return ks_err_set(err, errno, "close", NULL);
  return 0;
}

static int ks__on_header(struct ks__restore *R, struct ks_err *err) {
  struct ks_tar_member m;
  enum ks_tar_refusal why;
  char stage[24];
  int r;

  if (ks_tar_block_is_zero(R->header)) {
    R->state = KS__END;
    return 0;
  }
  why = ks_tar_decode(R->header, &m);
  /* A directory member "./" (or "." or ".//"): the workspace root itself,
   * which exists. `tar -C dir -czf x.tgz .` (GNU tar, bsdtar, node-tar)
   * starts with one; skip it as every reader does. A file member, or a
   * truly empty name, is still refused. */
  if (why == KS_TAR_EMPTY_NAME && m.type == KS_TAR_DIR && R->header[0] != '\0')
    return 0;
  if (why != KS_TAR_OK) {
    /* Name the member when the name itself was readable. */
    char name[101];
    memcpy(name, R->header, 100);
    name[100] = '\0';
    return ks__refuse(R, EINVAL, ks_tar_refusal_message(why), name, err);
  }
  r = ks__add_member(R, &m, err);
  if (r < 0)
    return r;
  if (m.type == KS_TAR_DIR)
    return 0;
  ks__stage_name(stage, sizeof stage, R->n - 1);
  R->curfd = openat(R->stagefd, stage, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                    0644);
  if (R->curfd < 0)
    return ks_err_set(err, errno, "openat", NULL);
  R->remaining = m.size;
  R->pad = (KS_TAR_BLOCK - m.size % KS_TAR_BLOCK) % KS_TAR_BLOCK;
  if (m.size > 0) {
    R->state = KS__DATA;
    return 0;
  }
  return ks__close_current(R, err);
}

/* Consumes inflated archive bytes: headers, content into staged files,
 * padding, and after the end marker nothing but zeros. */
static int ks__feed(struct ks__restore *R, const unsigned char *p, size_t len,
                    struct ks_err *err) {
  int r;

  while (len > 0) {
    size_t n = len;
    switch (R->state) {
    case KS__HEADER:
      n = KS_TAR_BLOCK - R->header_have;
      if (n > len)
        n = len;
      memcpy(R->header + R->header_have, p, n);
      R->header_have += n;
      if (R->header_have == KS_TAR_BLOCK) {
        R->header_have = 0;
        r = ks__on_header(R, err);
        if (r < 0)
          return r;
      }
      break;
    case KS__DATA:
      n = R->remaining < len ? (size_t) R->remaining : len;
      r = ks_write_all(R->curfd, (const char *) p, n);
      if (r < 0)
        return ks_err_set(err, -r, "write", NULL);
      R->remaining -= n;
      if (R->remaining == 0) {
        r = ks__close_current(R, err);
        if (r < 0)
          return r;
        R->remaining = R->pad;
        R->state = R->pad > 0 ? KS__PAD : KS__HEADER;
      }
      break;
    case KS__PAD:
      n = R->remaining < len ? (size_t) R->remaining : len;
      R->remaining -= n;
      if (R->remaining == 0)
        R->state = KS__HEADER;
      break;
    case KS__END:
      n = len;
      for (size_t i = 0; i < len; i++) {
        if (p[i] != 0)
          return ks__refuse(R, EINVAL, "the archive has data after its end marker", NULL, err);
      }
      break;
    }
    p += n;
    len -= n;
  }
  return 0;
}

/* Inflates the whole input (every gzip member, RFC 1952 allows several)
 * into the parser, counting inflated bytes against the cap as they come:
 * the sizes an archive declares (ISIZE, tar sizes) are never trusted. zlib
 * checks each member's CRC and length, so a corrupt stream fails here,
 * before anything is moved into the workspace. */
static int ks__inflate_all(struct ks__restore *R, int infd, struct ks_err *err) {
  z_stream zs;
  unsigned char *in = malloc(KS__IO_CHUNK);
  unsigned char *out = malloc(KS__IO_CHUNK);
  uint64_t inflated = 0;
  bool eof = false;
  bool member_done = false;
  bool any_input = false;
  int r = 0;

  memset(&zs, 0, sizeof zs);
  if (in == NULL || out == NULL) {
    r = ks_err_set(err, ENOMEM, "malloc", NULL);
    goto out_free;
  }
  if (inflateInit2(&zs, 15 + 16) != Z_OK) {
    r = ks_err_set(err, ENOMEM, "inflateInit2", NULL);
    goto out_free;
  }
  for (;;) {
    size_t produced;
    int ret;

    if (zs.avail_in == 0 && !eof) {
      ssize_t n = read(infd, in, KS__IO_CHUNK);
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0) {
        r = ks_err_set(err, errno, "read", NULL);
        break;
      }
      if (n == 0) {
        eof = true;
      } else {
        any_input = true;
        zs.next_in = in;
        zs.avail_in = (uInt) n;
      }
    }
    if (member_done) {
      if (zs.avail_in == 0 && eof)
        break; /* a clean end after a complete member */
      if (zs.avail_in == 0)
        continue;
      (void) inflateReset(&zs); /* another member follows, or garbage */
      member_done = false;
    }
    zs.next_out = out;
    zs.avail_out = KS__IO_CHUNK;
    ret = inflate(&zs, Z_NO_FLUSH);
    assert(ret != Z_STREAM_ERROR); /* zlib: only for a broken stream state */
    if (ret == Z_MEM_ERROR) {
      r = ks_err_set(err, ENOMEM, "inflate", NULL);
      break;
    }
    if (ret == Z_NEED_DICT || ret == Z_DATA_ERROR) {
      /* total_out counts what this call inflated too: a small stream can
       * produce all its data and fail its CRC check in one call. */
      r = ks__refuse(R, EINVAL,
                     any_input && (inflated > 0 || zs.total_out > 0)
                         ? "the gzip stream is corrupt or has trailing data"
                         : "the file is not a gzip stream",
                     NULL, err);
      break;
    }
    produced = KS__IO_CHUNK - zs.avail_out;
    inflated += produced;
    if (inflated > KS_RESTORE_MAX_INFLATED) {
      r = ks__refuse(R, EFBIG, "the archive inflates to more than 1 GiB", NULL, err);
      break;
    }
    r = ks__feed(R, out, produced, err);
    if (r < 0)
      break;
    if (ret == Z_STREAM_END) {
      member_done = true;
      continue;
    }
    if (produced == 0 && zs.avail_in == 0 && eof) {
      r = ks__refuse(R, EINVAL,
                     any_input ? "the gzip stream is truncated" : "the file is empty", NULL, err);
      break;
    }
  }
  (void) inflateEnd(&zs);
  /* No end-of-archive marker: the archive was cut (perhaps right at a gzip
   * member boundary). Every writer, ours included, emits one; restoring the
   * part that came through would be a partial success. */
  if (r == 0 && R->state != KS__END)
    r = ks__refuse(R, EINVAL, "the tar archive is truncated (no end-of-archive marker)", NULL,
                   err);
out_free:
  free(in);
  free(out);
  return r;
}

/* ---- vetting against the workspace and the archive itself ------------------ */

/* The archive's file paths, to refuse "a" as a file and "a/b" at once. */
struct ks__pathset {
  size_t *slots; /* member index + 1; 0 = empty */
  size_t mask;
};

static int ks__pathset_build(struct ks__restore *R, struct ks__pathset *set) {
  size_t size = 16;
  while (size < R->n * 2)
    size *= 2;
  set->slots = calloc(size, sizeof *set->slots);
  if (set->slots == NULL)
    return -ENOMEM;
  set->mask = size - 1;
  for (size_t i = 0; i < R->n; i++) {
    const char *p;
    size_t j;
    if (R->members[i].type != KS_TAR_FILE)
      continue;
    p = R->arena + R->members[i].path_off;
    for (j = ks_hash_bytes(p, strlen(p)) & set->mask; set->slots[j] != 0; j = (j + 1) & set->mask) {
      if (strcmp(R->arena + R->members[set->slots[j] - 1].path_off, p) == 0)
        break;
    }
    set->slots[j] = i + 1;
  }
  return 0;
}

static bool ks__pathset_has(const struct ks__restore *R, const struct ks__pathset *set,
                            const char *p, size_t len) {
  for (size_t j = ks_hash_bytes(p, len) & set->mask; set->slots[j] != 0; j = (j + 1) & set->mask) {
    const char *q = R->arena + R->members[set->slots[j] - 1].path_off;
    if (strlen(q) == len && memcmp(q, p, len) == 0)
      return true;
  }
  return false;
}

/* Where member path p would land: every existing parent must be a real
 * directory, and the leaf must be absent or of the member's kind. */
static int ks__vet_landing(struct ks__restore *R, const char *p, enum ks_tar_type type,
                           struct ks_err *err) {
  _cleanup_close_ int cur = -1;
  int dirfd = R->rootfd;
  char name[KS_WS_NAME_MAX + 1];
  struct stat st;

  for (;;) {
    const char *slash = strchr(p, '/');
    size_t len = slash != NULL ? (size_t) (slash - p) : strlen(p);
    memcpy(name, p, len);
    name[len] = '\0';
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
      if (errno == ENOENT)
        return 0; /* the rest will be created */
      return ks_err_set(err, errno, "fstatat", NULL);
    }
    if (S_ISLNK(st.st_mode))
      return ks__refuse(R, ELOOP, "a member would land on or under a symlink in the workspace",
                        NULL, err);
    if (slash == NULL) {
      if (type == KS_TAR_DIR && !S_ISDIR(st.st_mode))
        return ks__refuse(R, ENOTDIR, "a directory member collides with a file", NULL, err);
      if (type == KS_TAR_FILE && S_ISDIR(st.st_mode))
        return ks__refuse(R, EISDIR, "a file member collides with a directory", NULL, err);
      if (type == KS_TAR_FILE && !S_ISREG(st.st_mode))
        return ks__refuse(R, EINVAL, "a file member collides with a special file", NULL, err);
      return 0;
    }
    if (!S_ISDIR(st.st_mode))
      return ks__refuse(R, ENOTDIR, "a member's parent is a file in the workspace", NULL, err);
    int fd = openat(dirfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    /* A directory a moment ago: a box swapped it for a symlink or a file,
     * or removed it, since the fstatat. Say so, rather than report a bare
     * openat error that the caller would pin on the archive's path. */
    if (fd < 0 && errno == ENOENT)
      return 0; /* the rest will be created */
    if (fd < 0 && (errno == ENOTDIR || errno == ELOOP))
      return ks__refuse(R, errno,
                        "a member's parent directory in the workspace was replaced during the "
                        "restore",
                        NULL, err);
    if (fd < 0)
      return ks_err_set(err, errno, "openat", NULL);
    ks_close_keep_errno(cur);
    cur = fd;
    dirfd = fd;
    p = slash + 1;
  }
}

static int ks__vet_all(struct ks__restore *R, struct ks_err *err) {
  struct ks__pathset set;
  int r = 0;

  if (ks__pathset_build(R, &set) < 0)
    return ks_err_set(err, ENOMEM, "calloc", NULL);
  for (size_t i = 0; i < R->n && r == 0; i++) {
    const char *p = R->arena + R->members[i].path_off;
    size_t len = strlen(p);
    for (size_t k = 0; k < len; k++) {
      if (p[k] == '/' && ks__pathset_has(R, &set, p, k)) {
        r = ks__refuse(R, ENOTDIR, "a member lies under another member that is a file", p, err);
        break;
      }
    }
    if (r == 0 && R->members[i].type == KS_TAR_DIR && ks__pathset_has(R, &set, p, len))
      r = ks__refuse(R, ENOTDIR, "a path is both a file and a directory member", p, err);
    if (r == 0) {
      r = ks__vet_landing(R, p, R->members[i].type, err);
      if (r < 0 && R->rep != NULL && R->rep->member[0] == '\0')
        snprintf(R->rep->member, sizeof R->rep->member, "%s", p);
    }
  }
  free(set.slots);
  return r;
}

/* ---- committing ------------------------------------------------------------ */

/* Opens the directory part of p beneath rootfd, creating missing levels
 * without following symlinks; *ret_fd is -1 for a top-level member. */
/* Moves the staged members into place, all or nothing (commit.c). */
static int ks__commit(struct ks__restore *R, struct ks_err *err) {
  struct ks_commit_item *items = malloc((R->n ? R->n : 1) * sizeof *items);
  struct ks_commit_outcome out;
  int r;

  if (items == NULL)
    return ks_err_set(err, ENOMEM, "malloc", NULL);
  for (size_t i = 0; i < R->n; i++) {
    items[i].path = R->arena + R->members[i].path_off;
    items[i].is_dir = R->members[i].type == KS_TAR_DIR;
  }
  r = ks_commit(R->rootfd, R->stagefd, items, R->n, ks__stage_name, &out, err);
  if (r < 0) {
    char message[160];
    snprintf(message, sizeof message, "%s; %s", out.message,
             out.undo_complete ? "nothing was restored"
                               : "the undo was incomplete: the workspace may hold part of "
                                 "the snapshot (it changed during the restore)");
    ks__report(R->rep, message, out.failed);
    if (R->rep != NULL)
      R->rep->committing = true;
  }
  free(items);
  return r;
}

static void ks__discard_stage(struct ks__restore *R) {
  if (R->stagefd < 0)
    return;
  for (size_t i = 0; i < R->n; i++) {
    char stage[24];
    if (R->members[i].type != KS_TAR_FILE)
      continue;
    ks__stage_name(stage, sizeof stage, i);
    (void) unlinkat(R->stagefd, stage, 0);
  }
  ks_close_keep_errno(R->stagefd);
  R->stagefd = -1;
  (void) unlinkat(R->rootfd, R->stagename, AT_REMOVEDIR);
}

int ks_restore_from(int rootfd, int infd, struct ks_restore_report *rep,
                    struct ks_err *err) {
  struct ks__restore R;
  struct stat st;
  int r;

  if (rep != NULL)
    memset(rep, 0, sizeof *rep);
  if (fstat(infd, &st) < 0)
    return ks_err_set(err, errno, "fstat", NULL);
  if (!S_ISREG(st.st_mode)) {
    ks__report(rep, "the snapshot is not a regular file", NULL);
    return ks_err_set(err, EINVAL, "restore", NULL);
  }
  memset(&R, 0, sizeof R);
  R.rootfd = rootfd;
  R.curfd = -1;
  R.rep = rep;
  R.state = KS__HEADER;
  /* Staged in a private directory of the workspace: same filesystem, so
   * committing is a rename, and invisible to listings and change scans. */
  ks__random_hex(R.stagename, sizeof R.stagename, KS_WS_PRIVATE_PREFIX "restore-");
  if (mkdirat(rootfd, R.stagename, 0700) < 0)
    return ks_err_set(err, errno, "mkdirat", NULL);
  R.stagefd = openat(rootfd, R.stagename, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (R.stagefd < 0) {
    r = ks_err_set(err, errno, "openat", NULL);
    (void) unlinkat(rootfd, R.stagename, AT_REMOVEDIR);
    return r;
  }

  r = ks__inflate_all(&R, infd, err);
  if (r == 0)
    r = ks__vet_all(&R, err);
  if (r == 0)
    r = ks__commit(&R, err);
  if (R.curfd >= 0)
    ks_close_keep_errno(R.curfd);
  ks__discard_stage(&R);
  free(R.members);
  free(R.arena);
  return r;
}
