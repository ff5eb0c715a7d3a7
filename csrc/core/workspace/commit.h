/* The last step of a restore: moving vetted, staged members into the
 * workspace as one transaction.
 *
 * Every member has already been written to a private staging directory of
 * the workspace (same file system). Committing creates the directories the
 * members need and renames each staged file into place. Any step can still
 * fail (ENOSPC or EDQUOT on a directory, an inode limit, a box racing the
 * restore): then every step already taken is undone, in reverse order, so a
 * failed restore leaves the workspace as it was, replaced files included.
 *
 * A file that replaces an existing one is swapped in with
 * renameat2(RENAME_EXCHANGE): the old file lands in the staging directory,
 * where undoing swaps it back and success lets the caller delete it. A new
 * file goes in with RENAME_NOREPLACE, so an undo can never remove a file
 * someone else put there meanwhile. Directories this commit created are
 * removed again on undo (if still empty). Nothing is ever followed through a
 * symlink: directories are opened beneath the root with RESOLVE_NO_SYMLINKS
 * (or the O_NOFOLLOW walk), and a rename replaces a symlink, never its
 * target. */
#ifndef KS_CORE_COMMIT_H
#define KS_CORE_COMMIT_H

#include <stdbool.h>
#include <stddef.h>

#include "../err.h"

struct ks_commit_item {
  const char *path; /* relative to the root, vetted */
  bool is_dir;      /* a directory member; otherwise a staged regular file */
};

/* Names the staged file of item index (into out, of size bytes). */
typedef void (*ks_commit_stage_name_fn)(char *out, size_t size, size_t index);

struct ks_commit_outcome {
  const char *failed;  /* the member being committed when it failed, or NULL */
  const char *message; /* what failed, for people */
  bool undo_complete;  /* on failure: every step was undone */
};

/* Commits items[0 .. n) from stagefd into rootfd. Returns 0, or a negative
 * errno with err set and *out saying which member failed and whether the
 * undo restored the workspace completely (it may not, only if the box
 * changed the same paths during the restore). */
int ks_commit(int rootfd, int stagefd, const struct ks_commit_item *items, size_t n,
              ks_commit_stage_name_fn stage_name, struct ks_commit_outcome *out,
              struct ks_err *err);

#endif
