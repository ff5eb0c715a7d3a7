/* A private, unnamed file holding a box's environment.
 *
 * kern reads it as `--env-file /dev/fd/N`. The content never appears in argv
 * (visible in `ps`) nor in the workspace (readable and replaceable by any box
 * of the session), and there is no name on disk to clean up after a crash. */
#ifndef KS_CORE_ENVFD_H
#define KS_CORE_ENVFD_H

#include <stddef.h>

#include "err.h"

/* Creates a sealed memfd (or, where memfd_create is missing, an O_TMPFILE
 * file in tmpdir, mode 0600) holding data, positioned at offset 0.
 * Returns 0, or a negative errno:
 *   -EMFILE  no descriptor left
 *   -ENOSPC  no room for the content (a short write is never accepted) */
int ks_envfd_create(const char *data, size_t len, const char *tmpdir, int *ret_fd,
                    struct ks_err *err);

/* Writes all of buf at the current offset, retrying short writes and EINTR.
 * Returns 0 or a negative errno (-ENOSPC when the device gives up). */
int ks_write_all(int fd, const char *buf, size_t len);

#endif
