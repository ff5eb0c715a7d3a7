/* Per-environment state of the addon (one per Node environment: the main
 * thread and each Worker that loads it). */
#ifndef KS_NAPI_ADDON_H
#define KS_NAPI_ADDON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"

struct ks_sup;

/* A descriptor a session holds (its workspace, its kern), and for a
 * workspace the session created, its path: released by wsClose, or at the
 * environment's teardown if no JS is left to do it (a Worker ended with a
 * session open). */
struct ks_held {
  int fd;
  uint64_t serial; /* this hold's own number: a handle names fd by it too (handle.c) */
  char *own_dir;   /* remove this tree at teardown; NULL: just close fd */
};

struct ks_addon {
  napi_env env;
  struct ks_sup *sup;            /* started on the first run */
  napi_threadsafe_function tsfn; /* the supervisor's only way into JS */
  napi_ref make_raw;             /* lib/binding.js's makeRawResult (configure) */
  napi_ref make_cell;            /* lib/binding.js's makeCellResult (configure) */
  size_t loop_holds;             /* JS thread only: run.c, ks_napi_loop_hold */
  bool shut_down;
  struct ks_held *held;          /* JS thread only */
  size_t nheld;
  size_t held_cap;
  uint64_t held_serial;          /* the last hold's serial (0: none yet) */
  /* Inits of boxes settled in this turn of the event loop, released after
   * it (afterturn.c): their channels' descriptors. JS thread only. */
  struct ks_after_turn *after_turn;
  int *releases;
  size_t nreleases;
  size_t releases_cap;
  /* This turn's box submissions (turn.c). JS thread only. */
  bool turn_open;            /* a box was submitted; the turn's end is queued */
  bool wake_owed;            /* and others since, without waking the engine */
  napi_ref queue_microtask;  /* the global queueMicrotask, on first use */
  napi_ref end_turn;         /* the microtask that ends the turn */
  bool turn_off;             /* bench switch turn-wakes: every box wakes it */
  uint64_t submit_wakes;     /* wakeups of the engine for submitted boxes (the tests') */
  struct ks_propkeys *propkeys; /* options' field names (propkeys.h). JS thread only. */
  bool propkeys_off;             /* bench switch propkeys: every field read by its C string */
};

/* Records fd (and own_dir, whose ownership moves in) as held by a session:
 * the hold's serial (> 0), or 0 with an exception pending (out of memory;
 * own_dir freed, fd left to the caller). */
uint64_t ks_addon_hold(napi_env env, struct ks_addon *addon, int fd, char *own_dir);

/* Forgets the hold (fd, serial) if there is one (the caller then closes
 * fd). Returns false if not: teardown has closed fd already, and the number
 * may belong to someone else by now. */
bool ks_addon_release(struct ks_addon *addon, int fd, uint64_t serial);

/* Whether the hold (fd, serial) of a session (or a parked box's channel) stands. */
bool ks_addon_holds(const struct ks_addon *addon, int fd, uint64_t serial);

/* At teardown, after the boxes are gone: removes the created workspaces
 * still held and closes every held descriptor. */
void ks_addon_drop_held(struct ks_addon *addon);

/* JS thread, once a box's call has settled: shuts fd (the box's release,
 * ks_box_take_release) down and closes it after the caller's turn, in the
 * loop's check phase; at once when env is NULL, the addon is shut down, or
 * memory is short. -1: nothing to do. */
void ks_addon_release_after_turn(napi_env env, struct ks_addon *addon, int fd);
/* Releases every init still waiting for the check phase (teardown). */
void ks_addon_release_settled(struct ks_addon *addon);
/* At the addon's finalization or its environment's teardown: releases
 * them, and unties the check handle, which its teardown hook closes. */
void ks_addon_forget_after_turn(struct ks_addon *addon);

/* Whether the box about to be submitted wakes the engine itself: the
 * first of a turn of JS does, the others are woken once at the turn's end
 * (turn.c). Where that end cannot be queued, every box wakes it. */
bool ks_napi_submit_wakes(napi_env env, struct ks_addon *addon);
/* At the addon's finalization: drops turn.c's references. */
void ks_napi_forget_turn(napi_env env, struct ks_addon *addon);

/* Registers the box entry points (startBox...) and their constants on exports. */
bool ks_napi_init_run(napi_env env, napi_value exports);

/* Registers a call's stdin natives (stdinOpen, stdinWrite, stdinEnd; feed.c). */
bool ks_napi_init_feed(napi_env env, napi_value exports);

/* Registers a process's terminal natives (ptyPair, ttyResize; tty.c). */
bool ks_napi_init_tty(napi_env env, napi_value exports);

/* Registers the workspace file operations (wsOpen, wsWriteFile...) on exports. */
bool ks_napi_init_fs(napi_env env, napi_value exports);

#ifdef KS_TEST_NATIVES
/* Registers the engine's counts the tests' census reads (testing.c): only
 * in a build with KS_TEST_NATIVES (Test, Debug, Tsan), never in Release. */
bool ks_napi_init_testing(napi_env env, napi_value exports);
#endif


/* Registers wsWatch/wsWatchClose. */
bool ks_napi_init_watch(napi_env env, napi_value exports);

struct ks_ws_watch;
/* The watch behind a wsWatch handle, or NULL (not one, or closed). */
struct ks_ws_watch *ks_napi_get_watch(napi_env env, napi_value v);

struct ks_ws_watch_call;
/* Moves the call a watchBegin() handle holds into *out, if the handle is
 * one, still open and of watch: false otherwise (nothing moved). */
bool ks_napi_take_begun(napi_env env, napi_value v, const struct ks_ws_watch *watch,
                        struct ks_ws_watch_call *out);

/* Registers wsSnapshot/wsRestore. */
bool ks_napi_init_pack(napi_env env, napi_value exports);

/* Exports PROTOCOL, the constants lib/ shares with the engine (protocol.c). */
bool ks_napi_init_protocol(napi_env env, napi_value exports);

/* Stops the supervisor: kills and reaps every live box. Idempotent; called
 * by the environment cleanup hook and by the TSFN finalizer, whichever
 * comes first. */
void ks_addon_shutdown(struct ks_addon *addon);

#endif
