/* Workspace checkpoints: a .tar.gz of the workspace's files, and its safe
 * extraction back.
 *
 * Both sides work beneath the workspace descriptor and never follow a
 * symlink. Restore inflates the stream once, with a hard cap on inflated
 * bytes and members, into a private staging directory, vets every member
 * (and the workspace paths it would land on) before anything is moved into
 * place, and only then renames the staged files in: a refused or corrupt
 * archive leaves the workspace as it was. */
#ifndef KS_CORE_SNAPSHOT_H
#define KS_CORE_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include <stdbool.h>

#include "../err.h"
#include "tar.h"

#define KS_RESTORE_MAX_INFLATED (1ULL << 30)
#define KS_RESTORE_MAX_MEMBERS 200000u

/* Why an archive was refused: filled when a restore fails for a reason in
 * the archive itself (as opposed to an I/O error). */
struct ks_restore_report {
  char message[160];                 /* a sentence, or "" */
  char member[KS_TAR_PATH_MAX + 1];  /* the member concerned, or "" */
  bool committing; /* the archive was sound; moving it into place failed */
};

/* Writes a gzip'd USTAR archive of the workspace's regular files (sorted
 * names, fixed modes, mtime 0, deflate level 1) to outfd.
 * Returns 0, or a negative errno (err names the syscall and the member):
 *   -ENAMETOOLONG  a path does not fit USTAR's 255 bytes
 *   -EFBIG         the archive would exceed what restore accepts: more than
 *                  KS_RESTORE_MAX_MEMBERS files, or more than
 *                  KS_RESTORE_MAX_INFLATED bytes of tar (err names the first
 *                  file past the cap; nothing of it is read)
 *   -EIO           a file shrank while it was being archived
 *   -ENOSPC ...    writing outfd failed */
int ks_snapshot_write(int rootfd, int outfd, char *errpath, size_t errpath_size,
                      struct ks_err *err);

/* Writes the snapshot to dirfd/name through a temp file renamed into place,
 * so no partial archive is ever left at name. A failing member's path is
 * copied into errpath (the walk that held it is gone by the time the caller
 * reads err->path, which then points at errpath). */
int ks_snapshot_to(int rootfd, int dirfd, const char *name, char *errpath,
                   size_t errpath_size, struct ks_err *err);

/* Restores the archive read from infd into the workspace.
 * Returns 0, or a negative errno:
 *   -EINVAL  the archive was refused (rep says why): a bad header, a member
 *            type or path that is not allowed, a corrupt or truncated gzip
 *            stream, data after the end marker
 *   -EFBIG   more than 1 GiB inflated, or more than 200,000 members
 *   -ELOOP   a member would land on or under a symlink in the workspace
 *   -ENOTDIR, -EISDIR  a member collides with a file or a directory
 *   others   from the filesystem */
int ks_restore_from(int rootfd, int infd, struct ks_restore_report *rep,
                    struct ks_err *err);

#endif
