/* The interpreter subsystem on the supervisor's loop: a box's interpreter
 * socket (RUN and its rich results) and a kernel box's cells. What the box
 * subsystem (box.c) calls of it; it calls nothing of the box subsystem back
 * but through sup->box_hooks (sup-internal.h). Its own watches (the
 * socket, cells' pipes, strays) carry its own callbacks. */
#ifndef KS_CORE_INTERPRETER_H
#define KS_CORE_INTERPRETER_H

#include <stdint.h>

#include "sup-internal.h"

/* A box's interpreter state, made with the box and freed with it. */
void ks__ip_box_init(struct ks_box *box);
void ks__ip_box_free(struct ks_box *box);
/* ATTACH came with fd: the box's interpreter socket. Sends what waits. */
void ks__ip_attach(struct ks_sup *sup, struct ks_box *box, int fd);
/* Moves a parked box's interpreter socket into the box that claims it. */
void ks__ip_adopt(struct ks_sup *sup, struct ks_box *box, struct ks_box *parked);
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
uint64_t ks__cells_next_deadline(struct ks_sup *sup);
/* Teardown: cells never taken end as if their kernel were gone. */
void ks__cells_cancel(struct ks_sup *sup, struct ks_cell *cells);
/* Hands the cells finished during the batch to on_cell_done: never in the
 * middle of one, where a later event may still name a cell's pipes. */
void ks__cells_flush(struct ks_sup *sup);

#endif
