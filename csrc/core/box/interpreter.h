/* The interpreter subsystem on the supervisor's loop: a box's interpreter
 * socket (RUN and its rich results) and a kernel box's cells. What the box
 * subsystem (box.c) calls of it; it calls nothing of the box subsystem back
 * but through sup->box_hooks (sup-internal.h). Its own watches (the
 * socket, cells' pipes, strays) carry its own callbacks. */
#ifndef KS_CORE_INTERPRETER_H
#define KS_CORE_INTERPRETER_H

#include <stdint.h>

#include "sup-internal.h"

/* A kern part's interpreter state (its socket, reader, a kernel's cells),
 * made with it for req and freed with it. 0, or -1 (no memory). */
int ks__ip_kern_init(struct ks__kern *k, const struct ks_box_request *req);
void ks__ip_kern_free(struct ks__kern *k);
/* ATTACH came with fd: the box's interpreter socket. Sends what waits. */
void ks__ip_attach(struct ks_sup *sup, struct ks_box *box, int fd);
/* A call just took a parked box's kern (socket and all): its RUN goes, or
 * its kernel's first cells. */
void ks__ip_claimed(struct ks_sup *sup, struct ks_box *box);
/* Every record the socket holds now. */
void ks__ip_drain(struct ks_sup *sup, struct ks_box *box, uint64_t now);
/* The box is finished (or gone): its socket closes, its cells end with it. */
void ks__ip_box_end(struct ks_sup *sup, struct ks_box *box, const char *why);

/* The cells taken from the loop this turn, before its events: the ones the
 * submitting thread sent itself become their kernels' current cells now
 * (an answer to one may be in the batch); returns the rest, in order. */
struct ks_cell *ks__cells_take_present(struct ks_sup *sup, struct ks_cell *cells);
/* The rest, after the turn's boxes: to their kernels' queues. */
void ks__cells_take(struct ks_sup *sup, struct ks_cell *cells, uint64_t now);
/* Deadlines, aborts and graces of every kernel's cells. */
void ks__cells_sweep(struct ks_sup *sup, uint64_t now);
/* Teardown: cells never taken end as if their kernel were gone. */
void ks__cells_cancel(struct ks_sup *sup, struct ks_cell *cells);
/* Hands the cells finished during the batch to on_cell_done: never in the
 * middle of one, where a later event may still name a cell's pipes. */
void ks__cells_flush(struct ks_sup *sup);

#endif
