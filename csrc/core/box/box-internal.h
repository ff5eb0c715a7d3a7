/* What the box subsystem's files share: box.c (a box's life on the
 * supervisor thread: spawn, pipes, exit, kill, sweep), box-claim.c (the
 * init's channel, the settle at its report, claims of parked boxes),
 * box-tail.c (tails, helpers, `kern stop`), box-scan.c (the scan thread)
 * and box-api.c (the thread, the loop's hooks, the entry points of
 * supervisor.h). Private to them. */
#ifndef KS_CORE_BOX_INTERNAL_H
#define KS_CORE_BOX_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "sup-internal.h"

/* A vector of the request: one block (supervisor.h). */
static inline void ks__free_strv(char **v) { free(v); }

/* box.c */

/* Frees a kern part: closes what it still holds (NULL: nothing). */
void ks__kern_free(struct ks__kern *k);
/* The call's result takes what its kern said (struct ks__said): at its end,
 * before it is handed back. */
void ks__call_take_said(struct ks_box *box);

void ks__live_link(struct ks_sup *sup, struct ks_box *box);
void ks__live_unlink(struct ks_sup *sup, struct ks_box *box);
/* Points the box's pipe and pidfd watches at it. */
void ks__box_watches(struct ks__kern *k);
/* The box could not start (err): it goes back to its caller. */
void ks__report_spawn_failure(struct ks_sup *sup, struct ks_box *box, const struct ks_err *err);
/* Starts a box taken from the loop: cold, parked, or in the parked box it
 * claims; or hands it back at once (cancelled, failed, missed). */
void ks__spawn_box(struct ks_sup *sup, struct ks_box *box);
/* Reads what one output pipe of the box holds, up to budget bytes. */
void ks__drain_output(struct ks_sup *sup, struct ks_box *box, enum ks_stream s, size_t budget);
/* Whether the box's session group or its own call key was cancelled. */
bool ks__box_cancelled(struct ks_sup *sup, const struct ks_box *box);
/* Our deadline fired (timeout), or the box's session was closed or its call
 * aborted: kern goes now. */
void ks__kill_box(struct ks_sup *sup, struct ks_box *box, uint64_t now, bool timeout);
/* Sets the box's deadline_ns and arms its timer for it (UINT64_MAX: none). */
void ks__box_deadline(struct ks_sup *sup, struct ks_box *box, uint64_t at);
/* Settles, cancels, drained boxes and finished tails: what no timer says.
 * Runs after each turn's events and timers. */
void ks__sweep(struct ks_sup *sup, uint64_t now);

/* box-proc.c */

/* The caller's signals for running calls (ks_sup_signal_call): each sent
 * on its box's channel, its kill armed after the grace. */
void ks__take_signals(struct ks_sup *sup, uint64_t now);
/* A flow box's stream s is readable (ks__on_box_pipe): false when its
 * caller has no room, the stream then paused (not read until
 * ks__flow_resume). Only while the box runs: at its end every pipe is read
 * at once. */
bool ks__flow_read(struct ks_sup *sup, struct ks_box *box, int s);
/* The box's paused streams read again if its caller has room (ks__sweep). */
void ks__flow_resume(struct ks_sup *sup, struct ks_box *box);

/* box-claim.c */

/* Watches the box's channel (ctl) for it. */
void ks__ctl_watch(struct ks__kern *k);
/* Writes what is left of the spec frame; EPOLLOUT carries on from there. */
void ks__send_spec(struct ks_sup *sup, struct ks_box *box);
/* Reads the channel: spec room (EPOLLOUT), frames, the init's report. */
void ks__on_ctl(struct ks_sup *sup, struct ks_box *box, uint32_t events);
/* The workload's own rusage, from the init's report. */
void ks__usage_from_report(struct ks_box *box, const struct ks_init_report *rep);
/* A SETTLING box's call settles now; kern's teardown goes on in a tail. */
void ks__settle_early(struct ks_sup *sup, struct ks_box *box, uint64_t now);
/* The live prewarm box of this park key, or NULL. */
struct ks_box *ks__find_parked(struct ks_sup *sup, uint64_t key);
/* A claiming call cancelled before the loop took it in: kills the parked
 * box its argv may have reached already. */
void ks__claim_cancelled(struct ks_sup *sup, const struct ks_box *box);
/* Runs the claiming call in the kern of the parked box of its claim key,
 * if that is still parked (the kern is attached to the call whole): true;
 * false if it is not (the call then starts cold). */
bool ks__adopt_parked(struct ks_sup *sup, struct ks_box *box);

/* box-feed.c */

/* With a feed (req.feed): the box's stdin pipe, feed_fd and feed_rd. 0, or
 * -1 with err set. */
int ks__feed_pipe(struct ks_box *box, struct ks_err *err);
/* A cold box's STDIN frame with feed_rd, queued on ch (our end of the
 * channel, not yet read by anyone), and feed_rd closed. 0, or -1 with err set. */
int ks__feed_send_stdin_frame(struct ks_box *box, int ch, struct ks_err *err);
/* Watches feed_fd for the box and attaches the feed to it; live: the
 * workload holds the pipe, write now. 0 or a negative errno. */
int ks__feed_attach(struct ks_sup *sup, struct ks_box *box, bool live);
/* Writes what the feed has, as far as the pipe takes it. */
void ks__feed_pump(struct ks_sup *sup, struct ks_box *box);
/* The box is over: its pipe ends closed, the feed attached to nothing. */
void ks__feed_detach(struct ks_sup *sup, struct ks_box *box);
/* A feed's wake command (KS__CMD_FEED), taken off the loop. */
void ks__feed_wake(struct ks_sup *sup, struct ks_feed *f);

/* box-tail.c */

/* A `kern stop NAME` still to start (ks__queue_stop). */
struct ks__stop;
/* A killed box is finished: its `kern stop` goes on *stops. */
void ks__queue_stop(struct ks_sup *sup, struct ks_box *box, struct ks__stop **stops);
/* Starts the queued `kern stop`s, each a helper from then on. */
void ks__run_stops(struct ks_sup *sup, struct ks__stop *stops);
/* Unlinks a helper, kills it and reaps it, waiting up to wait_ms for that. */
void ks__aux_release(struct ks_sup *sup, struct ks__aux *a, int wait_ms);
/* Moves kern's process and descriptors out of a box whose call settles at
 * the report into a tail (NULL: no memory, kern killed instead); arm it
 * with ks__tail_arm once the call is handed back. */
struct ks__tail *ks__tail_adopt(struct ks_sup *sup, struct ks_box *box, uint64_t now);
void ks__tail_arm(struct ks_sup *sup, struct ks__tail *t);
void ks__tail_free(struct ks_sup *sup, struct ks__tail *t);
/* kern's teardown outlived the grace: killed, reaped as a helper, stopped. */
void ks__tail_expire(struct ks_sup *sup, struct ks__tail *t, uint64_t now);

/* box-scan.c */

/* Hands a box to the scan thread; once that has stopped, does what it
 * would have done short of scanning. */
void ks__scanner_push(struct ks_sup *sup, struct ks_box *box, enum ks__scan_phase phase);
void *ks__scanner_main(void *arg);
/* A finished box goes back to its caller (on_done), through the scan
 * thread unless its end costs next to nothing; the parked box it claimed
 * goes after it. */
void ks__after_box(struct ks_sup *sup, struct ks_box *box);

/* box-api.c */

/* Queues a box for the supervisor thread to spawn, waking it or not
 * (ks_sup_submit). After shutdown began it is reported as cancelled. */
void ks__queue_spawn(struct ks_sup *sup, struct ks_box *box, bool wake);

#endif
