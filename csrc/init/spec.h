/* ks-init's readers of the host's frames (protocol.h). Kept apart from the
 * program so that the fuzzer drives exactly the code the init runs. */
#ifndef KS_INIT_SPEC_H
#define KS_INIT_SPEC_H

#include <stddef.h>
#include <stdint.h>

/* Splits an ARGV body (NUL-terminated strings, at least one) into a
 * NULL-terminated vector of pointers into body, in *argv_out (malloc'd; the
 * strings stay in body). Returns the count, or -1 for a malformed body (empty,
 * or not ending in NUL) or no memory. */
int ks_init_split_argv(const char *body, size_t len, char ***argv_out);

/* Reads one frame of type want from the channel ch (blocking): its header
 * with recvmsg, so that a descriptor riding on its first byte (SCM_RIGHTS,
 * close-on-exec) comes with it, then its body of at most max bytes. On
 * success: 0, the body in *body (malloc'd, NUL-terminated past *len; never
 * NULL) and the descriptor in *fd (-1: none; one at most is kept, any other
 * closed). -1 at EOF, on an error, or for a frame of another magic or type
 * or a longer body: nothing is then left open or allocated. With flags
 * non-NULL, the type may also carry the flags given in *flags, and *flags
 * becomes those it carried (for a SPEC: KS_INIT_SAY_STARTED). */
int ks_init_recv_frame(int ch, uint32_t want, uint32_t max, char **body, size_t *len, int *fd,
                       uint32_t *flags);

/* A whole SIGNAL frame (header and body, n bytes): its signal (1-64), or
 * -1 for anything else (another magic, type or length, a signal out of
 * range, a reserved field not 0). */
int ks_init_parse_signal(const void *frame, size_t n);

#endif
