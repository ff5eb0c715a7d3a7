/* What interpreter.c (the socket and its messages) and interpreter-cells.c
 * (a kernel's cells) share. Private to the two. */
#ifndef KS_CORE_INTERPRETER_INTERNAL_H
#define KS_CORE_INTERPRETER_INTERNAL_H

#include <stdint.h>
#include <sys/socket.h>

#include "fdpass.h"
#include "interpreter.h"

#define KS__IP_MAX_FDS 4

/* interpreter.c */

/* pidfd_send_signal: 0 or a negative errno (-EBADF for no pidfd). */
int ks__pidfd_signal(int pidfd, int sig);
/* Starts sending data (owned) with fds on its first record. */
void ks__ip_send_new(struct ks_sup *sup, struct ks_box *box, char *data, size_t len,
                     const int *fds, int nfds);
/* Drops the message being sent, and the descriptors still riding on it. */
void ks__ip_out_clear(struct ks__ip_out *o);

/* interpreter-cells.c */

/* Sends the kernel's next cell if it is free for it. */
void ks__kernel_pump(struct ks_sup *sup, struct ks_box *box, uint64_t now);
/* The current cell is finished, as how says (its pipes drained). */
void ks__cell_finish(struct ks_sup *sup, struct ks_box *box, struct ks_cell *cell,
                     enum ks_cell_end how, uint64_t now);
/* The kernel is over: the host ends it by killing its box, for why. */
void ks__kernel_kill(struct ks_sup *sup, struct ks_box *box, const char *why, uint64_t now);
/* The kernel's timer (struct ks__kernel, owned by its kern): its cells'
 * deadline or grace is due. */
void ks__kernel_due(void *ctx, struct ks_timer *t, uint64_t now);
/* The kernel is READY: the submitting thread may send its cells. */
void ks__sendable_add(struct ks_sup *sup, struct ks_box *box);

#endif
