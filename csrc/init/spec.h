/* ks-init's reader of the host's spec frame (protocol.h). Kept apart from
 * the program so that the fuzzer drives exactly the code the init runs. */
#ifndef KS_INIT_SPEC_H
#define KS_INIT_SPEC_H

#include <stddef.h>

/* Splits an ARGV body (NUL-terminated strings, at least one) into a
 * NULL-terminated vector of pointers into body, in *argv_out (malloc'd; the
 * strings stay in body). Returns the count, or -1 for a malformed body (empty,
 * or not ending in NUL) or no memory. */
int ks_init_split_argv(const char *body, size_t len, char ***argv_out);

#endif
