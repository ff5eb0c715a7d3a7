/* Host-side file I/O contained in a workspace directory.
 *
 * A box has read-write access to its workspace and may plant symlinks or
 * swap a directory for one at any moment, including while the host is
 * halfway through a path. Every operation here therefore starts from the
 * workspace's directory descriptor and never follows a symlink: not in an
 * intermediate component, not in the last one, not with a trailing slash. No
 * absolute path of the workspace is ever used after it was opened. */
#ifndef KS_CORE_WSFS_H
#define KS_CORE_WSFS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../err.h"

/* Longest component (NAME_MAX) and path (PATH_MAX - 1) accepted anywhere.
 * Since every component takes at least two bytes ("a/"), a valid path has at
 * most 2048 components: that is the depth bound of every walk, for openat2
 * and for the fallback alike, so both accept exactly the same paths. */
#define KS_WS_NAME_MAX 255
#define KS_WS_PATH_MAX 4095

/* Names starting with this prefix belong to the binding (temp files of
 * ks_ws_write_file, directories hoisted by ks_ws_remove_tree): they are never
 * listed nor scanned, at any depth. */
#define KS_WS_PRIVATE_PREFIX ".ks-"
/* Top-level entries that are not user files: the dependency directory
 * (a directory named exactly this) and the env files of the JS facade
 * (every regular file whose name starts with this). */
#define KS_WS_DEPS_DIR ".deps"
#define KS_WS_ENV_PREFIX ".kern-env"

/* Caps of ks_ws_list and ks_ws_scan (A25): past them the walk fails with
 * -E2BIG instead of growing without bound. */
#define KS_WS_MAX_ENTRIES 1000000u
#define KS_WS_MAX_PATH_BYTES (256u << 20)

/* Checks the shape of a file path coming from JS: relative, no ".."
 * component, no NUL, no trailing slash. Empty and "." components ("a//b",
 * "./a") are harmless and accepted. len is the length the caller believes
 * rel has, so an embedded NUL shows up as len != strlen(rel).
 * Returns 0, or a negative errno (syscall "path", path rel):
 *   -EINVAL        empty (or only "." and "/"), absolute, a ".." component,
 *                  an embedded NUL
 *   -ENAMETOOLONG  a component over 255 bytes or a path over 4095 bytes
 *   -EISDIR        a trailing "/" or "/.": names a directory, not a file */
int ks_ws_check_rel(const char *rel, size_t len, struct ks_err *err);

/* The same for a directory path (ks_ws_list): "" and "." mean the root and a
 * trailing slash is allowed. */
int ks_ws_check_dir_rel(const char *rel, size_t len, struct ks_err *err);

/* Opens rel beneath rootfd without following any symlink or leaving
 * rootfd's tree: openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
 * RESOLVE_NO_MAGICLINKS), or, where the kernel or a seccomp filter refuses
 * openat2, one openat(O_PATH | O_DIRECTORY | O_NOFOLLOW) per intermediate
 * component and openat(flags | O_NOFOLLOW) for the last one. O_CLOEXEC is
 * always added. "" or "." opens rootfd's directory itself; a trailing slash
 * adds O_DIRECTORY. mode is used only with O_CREAT.
 * Returns 0, or a negative errno (syscall "openat2" or "openat", path rel):
 *   -ELOOP         a component is a symlink (whatever flags say; an O_PATH
 *                  open of a symlink is refused too)
 *   -EXDEV         the kernel saw the path leave rootfd (not reachable with a
 *                  path ks_ws_check_rel accepts; kept as the kernel's answer)
 *   -EINVAL        rel is absolute or has a ".." component (syscall "path")
 *   -ENAMETOOLONG  see ks_ws_check_rel
 *   -ENOENT, -ENOTDIR, -EACCES, -EMFILE...  as from openat(2)
 *   -EAGAIN        openat2 kept seeing a concurrent rename (after retries) */
int ks_open_beneath(int rootfd, const char *rel, int flags, mode_t mode, int *ret_fd,
                    struct ks_err *err);

/* Replaces (or creates) the regular file rel with data, atomically: the
 * bytes go to a new ".ks-tmp-<hex>" file in the same directory, which is then
 * renamed over rel, so a reader sees the old content or the new, and nothing
 * outside the workspace is ever opened for writing or truncated (A17, A18).
 * Missing parent directories are created one level at a time (mode 0755);
 * an existing one is entered only if it is a real directory. A new file
 * gets mode 0644 (less the umask); a replaced one keeps its permission bits
 * (rwx only, never set-id or sticky). Owner, ACLs and xattrs are not kept.
 * Hardlinks (A21): if rel is one of several links to a file, only the name
 * rel gets the new content; the other links keep the old inode and content.
 * Returns 0, or a negative errno (path rel):
 *   -EINVAL, -ENAMETOOLONG, -EISDIR  see ks_ws_check_rel (syscall "path")
 *   -ELOOP    a parent component is a symlink (syscall "openat2" or
 *             "openat"), or rel itself is one (syscall "fstatat")
 *   -ENOTDIR  a parent component is a regular file; also, in the fallback
 *             walk, a parent swapped between symlink and directory while
 *             it was being checked
 *   -EISDIR   rel is a directory (syscall "fstatat" or "renameat")
 *   -EINVAL   rel exists and is not a regular file: FIFO, socket, device
 *             (syscall "fstatat")
 *   -ENOSPC, -EDQUOT, -EFBIG, -EIO  from write(2) (syscall "write"); the
 *             temp file is removed */
int ks_ws_write_file(int rootfd, const char *rel, const void *data, size_t len,
                     struct ks_err *err);

/* Reads the regular file rel, at most max bytes, into a new malloc()ed
 * buffer (free() it; never NULL on success, even for 0 bytes). The file is
 * opened O_NONBLOCK so a FIFO planted at rel cannot block the thread (A20).
 * Returns 0, or a negative errno (path rel):
 *   -EINVAL, -ENAMETOOLONG, -EISDIR  see ks_ws_check_rel (syscall "path")
 *   -ELOOP    a component, or rel itself, is a symlink
 *   -EISDIR   rel is a directory (syscall "fstat")
 *   -EINVAL   rel is not a regular file: FIFO, device (syscall "fstat")
 *   -ENXIO    rel is a Unix socket (syscall "openat2"/"openat")
 *   -EFBIG    the file is larger than max (syscall "fstat"), or grew past
 *             max while being read (syscall "read") (A22)
 *   -ENOMEM   no memory for the content (syscall "malloc") */
int ks_ws_read_file(int rootfd, const char *rel, size_t max, void **ret_data,
                    size_t *ret_len, struct ks_err *err);

/* A regular file found by a walk. */
struct ks_ws_entry {
  const char *path; /* relative to the workspace root, '/'-separated */
  uint64_t size;
  int64_t mtime_ns; /* st_mtim in nanoseconds since the epoch */
};

/* Lists the regular files under subdir ("" for the whole workspace),
 * recursively, sorted by path (strcmp). Symlinks, FIFOs, sockets and devices
 * are skipped and never followed; so are names starting with ".ks-" at any
 * depth and, at the top level, the ".deps" directory and ".kern-env*" files.
 * A directory the host may not read (mode 000) is skipped, and so is one the
 * box removes or replaces by a symlink during the walk. The walk is
 * iterative and holds one descriptor per level (at most 2048 levels).
 * *ret is a single allocation holding the entries and their paths: free()
 * it. Paths are raw bytes: they need not be valid UTF-8.
 * Returns 0, or a negative errno (path subdir):
 *   -EINVAL, -ENAMETOOLONG  see ks_ws_check_dir_rel (syscall "path")
 *   -ELOOP    subdir, or one of its components, is a symlink
 *   -ENOENT   subdir does not exist
 *   -ENOTDIR  subdir is not a directory
 *   -ENAMETOOLONG  a file's or a directory's path would exceed 4095 bytes
 *             (syscall "walk"): an empty directory chain that deep too
 *   -E2BIG    more than 1,000,000 files, or 256 MiB of path bytes
 *             (syscall "walk")
 *   -ENOMEM   (syscall "malloc") */
int ks_ws_list(int rootfd, const char *subdir, struct ks_ws_entry **ret, size_t *ret_n,
               struct ks_err *err);

/* Deletes everything beneath rootfd, but not rootfd's directory itself
 * (the caller removes that by path once this returns 0). No symlink is ever
 * followed: a symlink is unlinked as a name, and a directory swapped for a
 * symlink mid-walk is unlinked too, never entered (A24). At most 65
 * descriptors are held whatever the depth: a directory deeper than 64 levels
 * is renamed to the top level (".ks-rm-<hex>") and removed by a later pass.
 * Returns 0, or a negative errno (path NULL):
 *   -ENOTEMPTY  entries kept reappearing (a box still running?) after
 *               many passes (syscall "unlinkat")
 *   -EACCES, -EPERM, -EBUSY, -EROFS...  as from unlinkat(2), openat(2),
 *               renameat(2) */
int ks_ws_remove_tree(int rootfd, struct ks_err *err);

/* ---- the walk shared with wsscan.c ---------------------------------------- */

/* One regular file; its path is arena[off .. off + len], NUL-terminated. */
struct ks_ws_rec {
  size_t off;
  uint32_t len;
  uint32_t hash; /* filled in by wsscan.c; the walk leaves it 0 */
  uint64_t size;
  int64_t mtime_ns;
};

struct ks_ws_walk {
  struct ks_ws_rec *recs;
  size_t n;
  size_t cap;
  char *arena;
  size_t arena_len;
  size_t arena_cap;
};

/* Collects the files ks_ws_list would list, in directory order, into w
 * (zero-initialised by the caller; release it with ks_ws_walk_free, also
 * after a failure). Errors as for ks_ws_list. */
int ks_ws_walk(int rootfd, const char *subdir, struct ks_ws_walk *w, struct ks_err *err);

/* Walk options. */
#define KS_WS_WALK_WITH_DEPS 1u  /* also enter the top-level .deps directory */
#define KS_WS_WALK_NAMES_ONLY 2u /* no fstatat per file: size and mtime are 0, and
                                  * an entry may no longer be a regular file */

int ks_ws_walk_flags(int rootfd, const char *subdir, unsigned flags, struct ks_ws_walk *w,
                     struct ks_err *err);

void ks_ws_walk_free(struct ks_ws_walk *w);

/* Opens (O_PATH) the directory rel[0 .. len) beneath rootfd, creating missing
 * levels (0755) one at a time and entering each with O_NOFOLLOW: a level
 * that is or becomes a symlink is refused (-ELOOP), never followed. An empty
 * rel opens the root. Errors as for ks_open_beneath, plus mkdirat's. */
int ks_ws_open_dirs(int rootfd, const char *rel, size_t len, int *ret_fd,
                    struct ks_err *err);

#endif
