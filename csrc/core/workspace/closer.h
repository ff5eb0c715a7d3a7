/* The closer: one long-lived thread that closes descriptors whose close may
 * wait on the disk. The last descriptor on a workspace the session removed
 * evicts the directory's inode when it is closed, and a file system mounted
 * with -o discard then waits for the device, behind whatever else writes
 * there (kern's teardowns). Neither the JS thread nor libuv's pool may wait
 * for that: four such closes would hold all of the pool's threads, and the
 * program's own fs, dns and zlib work behind them. */
#ifndef KS_CORE_WORKSPACE_CLOSER_H
#define KS_CORE_WORKSPACE_CLOSER_H

/* Hands fd to the closer, which closes it soon; the number stays taken until
 * then. Never blocks on the disk, unless no closer thread can be started:
 * then fd is closed here (the next call tries to start one again). */
void ks_closer_close(int fd);

/* The descriptors handed to the closer and not yet closed, in the whole
 * process. */
int ks_closer_pending(void);

#endif
