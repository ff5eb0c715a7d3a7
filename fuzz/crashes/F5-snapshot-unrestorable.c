/* Findings F5 (fuzz/README.md): ks_snapshot_write archived workspace file
 * names that ks_restore_from refuses, so one such file (a box can create it)
 * made the whole snapshot impossible to restore. Fixed in 1ce338e: the
 * snapshot now fails instead.
 *
 *   C=csrc/core
 *   clang -g -I$C fuzz/crashes/F5-snapshot-unrestorable.c $C/archive/snapshot.c \
 *     $C/archive/tar.c $C/workspace/commit.c $C/workspace/wsfs.c $C/workspace/wswalk.c $C/compat.c $C/envfd.c \
 *     -lz -o /tmp/f5
 *   /tmp/f5 'a\b'; /tmp/f5 'C:x'
 *
 * At b52bc88 it printed
 *   snapshot of "a\b": 0
 *   restore of that snapshot: -22 (Invalid argument) message "a member path
 *   contains '\' or a drive prefix" member "a\b"
 * and since 1ce338e
 *   snapshot of "a\b": -22
 * (the restore that follows then reads an empty file). Exits 1 when a
 * snapshot succeeded but its restore failed (the bug), else 0. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "archive/snapshot.h"

int main(int argc, char **argv) {
  char ws[] = "/tmp/ks-f5-XXXXXX";
  char ws2[] = "/tmp/ks-f5b-XXXXXX";
  const char *name = argc > 1 ? argv[1] : "a\\b";
  struct ks_err err = {0};
  struct ks_restore_report rep;
  char cmd[256];
  int wsfd;
  int ws2fd;
  int fd;
  int snap;
  bool snap_ok;
  int r;

  if (mkdtemp(ws) == NULL || mkdtemp(ws2) == NULL)
    return 2;
  wsfd = open(ws, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ws2fd = open(ws2, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  fd = openat(wsfd, name, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  snap = memfd_create("snap", MFD_CLOEXEC);
  if (wsfd < 0 || ws2fd < 0 || fd < 0 || snap < 0 || write(fd, "x", 1) != 1)
    return 2;
  (void) close(fd);
  r = ks_snapshot_write(wsfd, snap, NULL, 0, &err);
  snap_ok = r == 0;
  printf("snapshot of \"%s\": %d\n", name, r);
  (void) lseek(snap, 0, SEEK_SET);
  r = ks_restore_from(ws2fd, snap, &rep, &err);
  printf("restore of that snapshot: %d (%s) message \"%s\" member \"%s\"\n", r,
         strerror(-r), rep.message, rep.member);
  snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", ws, ws2);
  return system(cmd) == 0 && snap_ok && r < 0 ? 1 : 0;
}
