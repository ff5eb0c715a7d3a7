/* The box lifecycle's table of legal transitions (boxstate.h). */
#include "boxstate.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define KS__TO(s) (1u << (s))

/* For each state, the states the supervisor moves a box to from it. */
static const uint16_t ks__next[KS_BOX_NSTATES] = {
    /* spawned parked or running; or handed back without a kern: the spawn
     * failed or was cancelled, a claim_only claim found no parked box, or
     * the engine shut down with the box still pending */
    [KS_BOX_PENDING] = KS__TO(KS_BOX_PARKED) | KS__TO(KS_BOX_RUNNING) | KS__TO(KS_BOX_ENDED),
    /* a call took its kern over; recycled (ks_sup_drop_parked) or its
     * session cancelled; kern died while parked, or the engine shut down */
    [KS_BOX_PARKED] = KS__TO(KS_BOX_CLAIMED) | KS__TO(KS_BOX_KILLED) | KS__TO(KS_BOX_DRAINING),
    /* the report or final DONE came; deadline, cancel or a kernel's end;
     * kern exited, or the engine shut down */
    [KS_BOX_RUNNING] = KS__TO(KS_BOX_SETTLING) | KS__TO(KS_BOX_KILLED) | KS__TO(KS_BOX_DRAINING),
    /* settled at the sweep; before it, in the same batch, a kernel's end
     * killed it, kern exited, or the engine shut down */
    [KS_BOX_SETTLING] = KS__TO(KS_BOX_ENDED) | KS__TO(KS_BOX_KILLED) | KS__TO(KS_BOX_DRAINING),
    /* reaped, given up on past the kill grace, or the engine shut down;
     * ENDED: a settling kernel box killed at the settle itself, when its
     * interpreter's socket is found broken as it is drained there */
    [KS_BOX_KILLED] = KS__TO(KS_BOX_DRAINING) | KS__TO(KS_BOX_ENDED),
    /* the pipes are quiet, or the drain grace is over */
    [KS_BOX_DRAINING] = KS__TO(KS_BOX_ENDED),
    /* handed back after the call that claimed it */
    [KS_BOX_CLAIMED] = KS__TO(KS_BOX_ENDED),
    [KS_BOX_ENDED] = 0,
};

static const char *const ks__names[KS_BOX_NSTATES] = {
    [KS_BOX_PENDING] = "PENDING",   [KS_BOX_PARKED] = "PARKED",
    [KS_BOX_RUNNING] = "RUNNING",   [KS_BOX_SETTLING] = "SETTLING",
    [KS_BOX_KILLED] = "KILLED",     [KS_BOX_DRAINING] = "DRAINING",
    [KS_BOX_CLAIMED] = "CLAIMED",   [KS_BOX_ENDED] = "ENDED",
};

static bool ks__valid(enum ks_box_state s) { return (unsigned) s < (unsigned) KS_BOX_NSTATES; }

const char *ks_box_state_name(enum ks_box_state s) {
  return ks__valid(s) ? ks__names[s] : "INVALID";
}

bool ks_box_state_can(enum ks_box_state from, enum ks_box_state to) {
  return ks__valid(from) && ks__valid(to) && (ks__next[from] & KS__TO(to)) != 0;
}

bool ks_box_state_set(enum ks_box_state *s, enum ks_box_state to) {
  bool legal = ks_box_state_can(*s, to);
#ifdef KS_STATE_CHECKS
  if (!legal) {
    fprintf(stderr, "kern-sandbox: illegal box state transition %s -> %s\n",
            ks_box_state_name(*s), ks_box_state_name(to));
    abort();
  }
#endif
  *s = to;
  return legal;
}
