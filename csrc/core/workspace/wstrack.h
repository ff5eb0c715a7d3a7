/* The per-call change tracker: which workspace files a run created or
 * modified, from inotify events instead of two full scans.
 *
 * A full scan before and after every run costs one fstatat per file, far
 * over the per-call budget for a big workspace. The tracker walks
 * the workspace once, watches every directory, and keeps an index
 * path -> (size, mtime) of its regular files. A call then costs the events
 * the runs caused plus one fstatat per touched path.
 *
 * What is tracked is exactly what ks_ws_scan sees (the walk and exclusions of
 * ks_ws_list): regular files, not names starting with ".ks-" at any depth,
 * nor the top-level ".deps" directory, nor top-level ".kern-env*" files. A
 * call reports what a full scan at its begin and one at its end would have
 * reported, as a set: files created (absent at begin) or modified (size or
 * nanosecond mtime differ). Deleted files are not reported.
 *
 * Several calls may be in flight (concurrent runs on one workspace). When an
 * event touches a path P, every in-flight call that has not yet seen P
 * records P's indexed value from before the event (or "absent"); then the
 * index is refreshed from an fstatat of P. At its end a call reports each
 * recorded path that now differs from what it recorded. A change made by one
 * run while another call begins or ends may be reported by both; that is the
 * same ambiguity two overlapping full scans have.
 *
 * Nothing is ever followed through a symlink: each watch is added on a
 * directory opened beneath the root with O_NOFOLLOW (through
 * /proc/self/fd/<fd>, so inotify never resolves a path the box controls),
 * and every stat is an fstatat(AT_SYMLINK_NOFOLLOW) on a directory opened
 * beneath the root. A symlink to a directory is never watched or entered.
 *
 * Directories: a new one (created or moved in) is watched, then listed, and
 * every file found in its subtree counts as touched, which also covers the
 * files the box wrote before the watch existed. One that leaves a path
 * (removed, or moved anywhere, inside the workspace or out) has its watches
 * removed and its files touched as gone; if it moved within the workspace,
 * its arrival is the "new directory" case at the new path. So a file
 * modified and then moved with its directory in one call is reported as
 * created at its new path, exactly as two full scans see it, and a directory
 * moved away and back within a call reports only what changed in it.
 *
 * Falls back to a full rescan, inside the tracker and still correct for
 * every in-flight call, when:
 *  - the kernel dropped events (IN_Q_OVERFLOW: more than
 *    fs.inotify.max_queued_events, 16,384 by default, about 5,000 new files,
 *    between two drains);
 *  - the kernel stopped watching a directory we did not see go (IN_IGNORED
 *    or IN_UNMOUNT on a directory we still track; IN_DELETE_SELF,
 *    IN_IGNORED or IN_UNMOUNT on the root itself);
 *  - a directory reports IN_MOVE_SELF but is not at the path we map it to,
 *    though its parent never reported it leaving;
 *  - a walk finds the tree inconsistent with what we map (the root beneath
 *    itself, a directory whose parent was dropped meanwhile), or openat2
 *    keeps answering EAGAIN for a concurrently renamed path;
 *  - an earlier drain failed (the index may be half-updated);
 *  - ks_ws_tracker_request_rescan.
 * A rescan records, for every in-flight call, every indexed path as it
 * stood, then rebuilds the index from a new walk: each call reports what
 * changed between its own view of the old state and the new walk. It costs
 * about what one full scan costs.
 *
 * Hard links: a write through one name changes every name of the file, but
 * inotify names only the one written to. The index groups names by inode,
 * and an event on any name has the other indexed names stat'ed too; a file
 * with more links than indexed names (the other name is in .deps, in a
 * ".ks-" directory or outside the workspace) is stat'ed at every drain.
 *
 * Known limits (changes two full scans would report and the tracker does
 * not):
 *  - a write through another name of an indexed file that the tracker did
 *    not know of when the write happened: a hard link made (after the file
 *    was last stat'ed) where nothing is watched (.deps, a ".ks-" directory,
 *    outside the workspace), or made, written through and removed (or moved
 *    there) between two drains, or a descriptor still writing through a
 *    name removed since. A link count change raises no event in a
 *    directory watch, and an event for a name already gone does not say
 *    its inode. A box has to link a workspace file on purpose for this.
 *  - a write through a shared writable mmap by a process that keeps the
 *    mapping across the end of a call (it raises no event until the file's
 *    last close); a run's own processes are gone by then.
 *  - file systems where changes raise no inotify event: network and FUSE
 *    file systems changed from elsewhere.
 *
 * Memory: about 250 bytes per indexed file plus its path, and per call one
 * record per touched path (every path, after a rescan).
 *
 * All functions must be called from one thread at a time (the scan thread);
 * the tracker has no locks. */
#ifndef KS_CORE_WSTRACK_H
#define KS_CORE_WSTRACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../err.h"
#include "wsscan.h"

struct ks_ws_tracker;
struct ks_ws_call;

/* Counters, for tests and diagnostics. */
struct ks_ws_tracker_stats {
  uint64_t events;  /* inotify events read */
  uint64_t stats;   /* fstatat calls on files */
  uint64_t walks;   /* directories listed */
  uint64_t rescans; /* full rescans */
  uint64_t budget_rescans; /* of which: a drain's events cost more than a scan */
  size_t files;     /* regular files in the index */
  size_t dirs;      /* directories watched */
};

/* Starts tracking the workspace beneath rootfd (which the tracker dups; the
 * caller keeps its own): an inotify instance, one watch per directory, and
 * the index of every regular file (one fstatat each, so this costs what a
 * full scan costs). Close the result with ks_ws_tracker_close.
 *
 * Any error means "use full scans (ks_ws_scan) for this workspace"; those
 * that say inotify itself is unavailable or exhausted:
 *   -ENOSYS   the kernel lacks inotify, or a seccomp filter refuses it
 *             (syscall "inotify_init1")
 *   -EMFILE   fs.inotify.max_user_instances reached, or the process is out
 *             of descriptors (syscall "inotify_init1", or "openat")
 *   -ENFILE   the system is out of descriptors
 *   -ENOSPC   fs.inotify.max_user_watches reached (syscall
 *             "inotify_add_watch"): the workspace has more directories than
 *             the user may still watch
 *   -ENOENT   /proc is not mounted, so a directory cannot be watched
 *             through its descriptor (syscall "inotify_add_watch")
 *   -EACCES, -EPERM  a security module refuses inotify (syscall
 *             "inotify_add_watch")
 * and those a full scan would fail with as well:
 *   -E2BIG    more than 1,000,000 files or 256 MiB of paths (syscall "walk")
 *   -ENAMETOOLONG  a path over 4095 bytes (syscall "walk")
 *   -ENOMEM   (syscall "malloc") */
int ks_ws_tracker_open(int rootfd, struct ks_ws_tracker **ret, struct ks_err *err);

/* Applies the pending events to the index, then registers a call. The call
 * is released by ks_ws_tracker_end or ks_ws_tracker_abandon.
 * Returns 0, or a negative errno: the errors of ks_ws_tracker_open that a
 * rescan or a new directory can hit (-ENOSPC past max_user_watches, -E2BIG,
 * -ENAMETOOLONG, -ENOMEM, -EMFILE...). After a failed begin the tracker
 * tries to rebuild itself at the next begin, and fails again as long as the
 * cause lasts: the caller may close it and use full scans instead. */
/* Whether a call could begin now at no cost: no event pending, no rescan
 * due. Same locking as the rest. */
bool ks_ws_tracker_quiet(struct ks_ws_tracker *t);

/* How many files a call has recorded so far (what ending it would list). */
size_t ks_ws_tracker_call_size(const struct ks_ws_call *call);

int ks_ws_tracker_begin(struct ks_ws_tracker *t, struct ks_ws_call **ret_call,
                        struct ks_err *err);

/* Applies the pending events, then returns the files the call created or
 * modified, sorted by path (strcmp), and releases the call (also on
 * failure). *ret is a single malloc()ed block holding the array and its
 * paths: free() it; NULL when *ret_n is 0.
 * Returns 0, or a negative errno as for ks_ws_tracker_begin: also when the
 * tracker failed at any point while the call was in flight (its list cannot
 * be trusted then; the failure is reported again here, with its syscall). */
int ks_ws_tracker_end(struct ks_ws_tracker *t, struct ks_ws_call *call,
                      struct ks_ws_change **ret, size_t *ret_n, struct ks_err *err);

/* Releases a call that will not end normally (its run failed to start). */
void ks_ws_tracker_abandon(struct ks_ws_tracker *t, struct ks_ws_call *call);

/* Applies the pending events without beginning or ending a call. Optional:
 * a long run that changes many files can overflow the kernel's queue
 * (fs.inotify.max_queued_events, about 5,000 new files), which costs a full
 * rescan; draining while runs are in flight avoids that. Errors as for
 * ks_ws_tracker_begin. */
int ks_ws_tracker_drain(struct ks_ws_tracker *t, struct ks_err *err);

/* The inotify descriptor: readable when events are pending (for poll or
 * epoll; only ever read it through ks_ws_tracker_drain). */
int ks_ws_tracker_fd(const struct ks_ws_tracker *t);

/* Makes the next drain (begin, end, drain) do a full rescan, as if events
 * had been lost. For tests of the fallback, and for a caller that has reason
 * to distrust the events. */
void ks_ws_tracker_request_rescan(struct ks_ws_tracker *t);

void ks_ws_tracker_get_stats(const struct ks_ws_tracker *t,
                             struct ks_ws_tracker_stats *ret);

/* Drains, then compares the index with a full ks_ws_scan: returns 0 if they
 * agree, -EBADMSG (syscall "verify", path: the first differing file, valid
 * until the next tracker call) if they do not, or an error of the drain or
 * the scan. For tests: it costs a full scan. */
int ks_ws_tracker_verify(struct ks_ws_tracker *t, struct ks_err *err);

/* Releases the tracker, its watches and any call still registered. */
void ks_ws_tracker_close(struct ks_ws_tracker *t);

#endif
