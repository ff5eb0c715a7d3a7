/* A box's lifecycle as the supervisor thread sees it: one state, and the
 * transitions between states that the supervisor makes. Knows nothing of a
 * box's fields: the box subsystem (box*.c) and the interpreter
 * (interpreter*.c) keep the state in struct ks_box (sup-internal.h) and
 * move it only with ks_box_state_set.
 *
 *   PENDING  -> PARKED | RUNNING | ENDED
 *   PARKED   -> CLAIMED | KILLED | DRAINING
 *   RUNNING  -> SETTLING | KILLED | DRAINING
 *   SETTLING -> ENDED | KILLED | DRAINING
 *   KILLED   -> DRAINING | ENDED
 *   DRAINING -> ENDED
 *   CLAIMED  -> ENDED
 *   ENDED    (final)
 *
 * boxstate.c gives the reason for each; test/c/test_boxstate.c checks the
 * table pair by pair against its own copy. */
#ifndef KS_CORE_BOXSTATE_H
#define KS_CORE_BOXSTATE_H

#include <stdbool.h>

enum ks_box_state {
  /* No kern yet: with its submitter, the scan thread or in the pending list.
   * Zero, so that a box fresh from calloc is in it. */
  KS_BOX_PENDING = 0,
  /* A prewarm box's kern, started with no call and so with no deadline,
   * waiting for a call to claim it. */
  KS_BOX_PARKED,
  /* kern runs the box's call, under the call's deadline. */
  KS_BOX_RUNNING,
  /* The run is over by the init's report or the interpreter's final DONE:
   * the call settles at the next sweep, after the epoll batch, and kern's
   * teardown goes on in a tail. kern still runs. */
  KS_BOX_SETTLING,
  /* We sent kern (and its group and watchdog) SIGKILL: its deadline came,
   * its call or session was cancelled, its parked box was recycled, or its
   * kernel is over. kern is not reaped yet; past the kill grace it is given
   * up on. */
  KS_BOX_KILLED,
  /* kern is reaped (or given up on): what the pipes still hold is read until
   * they are quiet or the drain grace is over, then the box finishes. */
  KS_BOX_DRAINING,
  /* A parked box whose kern, pipes and channel a call's box took over:
   * nothing is left in it, and it is handed back after the claimer. */
  KS_BOX_CLAIMED,
  /* Handed back through on_done: the supervisor is done with it. A box
   * refused before the supervisor thread took it (shutdown) is handed back
   * still PENDING. */
  KS_BOX_ENDED,
};

#define KS_BOX_NSTATES ((int) KS_BOX_ENDED + 1)

/* The state's name ("RUNNING"), or "INVALID" for a value outside the enum. */
const char *ks_box_state_name(enum ks_box_state s);

/* Whether the supervisor may move a box from one state to the other. No
 * state moves to itself. */
bool ks_box_state_can(enum ks_box_state from, enum ks_box_state to);

/* Moves *s to `to`. A legal transition returns true. An illegal one is a bug
 * in the supervisor: built with KS_STATE_CHECKS (the Debug and Tsan builds,
 * binding.gyp) it names both states on stderr and aborts; otherwise (the
 * release build) it returns false and makes the transition all the same,
 * because what the caller did to kern has happened either way, and a box
 * whose state no longer matched it could wait for a deadline or an exit
 * that never comes, with its call never settling. */
bool ks_box_state_set(enum ks_box_state *s, enum ks_box_state to);

#endif
