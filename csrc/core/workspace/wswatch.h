/* A session's workspace as the run engine sees it: the directory it scans
 * for each call's changes, shared (with a reference count) by every run of
 * the session.
 *
 * The changes come from the inotify tracker (wstrack.h) when it can be had:
 * a call then costs the events it caused, not two walks of the workspace.
 * Where the tracker cannot be opened (no inotify, out of watches or inotify
 * instances, a walk too big) or fails to begin a call, that call falls back
 * to a full scan before and after (wsscan.h): slower, equally correct. */
#ifndef KS_CORE_WSWATCH_H
#define KS_CORE_WSWATCH_H

#include <stdbool.h>
#include <stddef.h>

#include "../err.h"
#include "wsscan.h"

struct ks_ws_watch;
struct ks_ws_call;

/* One call's view: exactly one of the two is used. */
struct ks_ws_watch_call {
  struct ks_ws_call *tracked;  /* the tracker's in-flight call */
  struct ks_ws_scan *before;   /* the full scan taken before the box */
  int begin_errnum;            /* neither could be had */
};

/* Turns the inotify tracker on for watches that have not opened one yet
 * (off by default; see wswatch.c). */
void ks_ws_watch_enable_tracking(bool on);

/* Takes ownership of rootfd. Returns 0 or -ENOMEM. */
int ks_ws_watch_new(int rootfd, struct ks_ws_watch **ret);
void ks_ws_watch_ref(struct ks_ws_watch *w);
/* The last reference closes the tracker and the descriptor. */
void ks_ws_watch_unref(struct ks_ws_watch *w);

/* The functions below are called from one thread at a time (the engine's
 * scan thread): the tracker is not locked. */

/* Starts a call: the tracker's, or a full scan. Never fails the run: a call
 * that could get neither has begin_errnum set and reports no files. */
void ks_ws_watch_begin(struct ks_ws_watch *w, struct ks_ws_watch_call *c);

/* The same, from any thread, when it costs nothing (the tracker is up,
 * quiet, and not busy on another thread): true if the call began. Spares a
 * call a hop through the scan thread. */
bool ks_ws_watch_try_begin(struct ks_ws_watch *w, struct ks_ws_watch_call *c);

/* Ends a call: *ret is one malloc()ed block holding the changes and their
 * paths (free() it; NULL when *ret_n is 0). Returns 0 or a negative errno
 * (then no list: the run's result still stands). */
int ks_ws_watch_end(struct ks_ws_watch *w, struct ks_ws_watch_call *c,
                    struct ks_ws_change **ret, size_t *ret_n);

/* The same, from any thread, when it costs next to nothing (the tracker is
 * up and quiet, and the call recorded at most max_files files): true if the
 * call ended (then as ks_ws_watch_end, with *ret_r its result). Spares a
 * call's end a hop through the scan thread. */
bool ks_ws_watch_try_end(struct ks_ws_watch *w, struct ks_ws_watch_call *c, size_t max_files,
                         struct ks_ws_change **ret, size_t *ret_n, int *ret_r);

/* Releases a call that will never end (its box never ran). */
void ks_ws_watch_abandon(struct ks_ws_watch *w, struct ks_ws_watch_call *c);

#endif
