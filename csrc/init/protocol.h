/* The control channel between the host's supervisor and ks-init, the small
 * init that runs as each box's command. This header is all the two share.
 *
 * The channel is one end of a socketpair that the host gives kern as stdin;
 * kern hands its stdio to the box unchanged, so ks-init finds it on fd 0. It
 * moves it to a close-on-exec descriptor and puts /dev/null on fd 0 before
 * the workload exists, and makes itself non-dumpable: the workload has no
 * path to the socket (an anonymous socket has none, and /proc/1/fd is closed
 * to it), so nothing on the channel can come from the workload.
 *
 * Every message is a frame: a header, then len bytes of body.
 *
 *   host -> init  SPEC, only for an init started with --wait (a prewarmed
 *                 box): the argv to exec. It may carry one descriptor as
 *                 SCM_RIGHTS on its first byte: the read end of the call's
 *                 stdin pipe, which the workload gets on fd 0 (without
 *                 one, fd 0 stays /dev/null), so any parked box serves a
 *                 call with or without stdin.
 *                 STDIN, only for an init started with --stdin (a cold box
 *                 whose call has stdin), queued by the host before kern is
 *                 spawned: empty, with the read end of the stdin pipe as
 *                 SCM_RIGHTS on its first byte. The init reads it before
 *                 the workload exists and gives it the pipe on fd 0; the
 *                 init itself keeps no copy, so the host's writes fail
 *                 (EPIPE) once the workload's processes are gone.
 *                 SIGNAL (a process's box: --exec --started, or a SPEC
 *                 with KS_INIT_SAY_STARTED), any number of times once
 *                 the workload started: a signal for the workload (a
 *                 process's kill()). The init sends it to the workload's
 *                 process group, which is its session in a real box, so
 *                 the workload's children get it too; outside a PID
 *                 namespace (the test double, where the workload shares
 *                 kern's group) to the workload's process alone. A frame
 *                 the init does not accept ends its listening: the host's
 *                 other ways to end the box remain.
 *   init -> host  TAKEN, once a waiting init has its spec and is about to
 *                 start the workload: a claimed box that ends without it
 *                 never ran the call (it died while it waited), so the host
 *                 can run the call cold instead.
 *                 STARTED (a process's box, as for SIGNAL), once the workload's exec
 *                 succeeded: the init learns it from a close-on-exec pipe
 *                 whose write end the workload's process holds, which
 *                 reads EOF with no byte at the exec (a failure before or
 *                 at the exec writes a byte first). A waiting init sends it
 *                 only after its child took a spec. It is the host's
 *                 "started" fact for a process box (kern's started bytes
 *                 come only at the box's end); other calls never get it.
 *                 ATTACH (--interp only, first): carries the host's end of a
 *                 SOCK_SEQPACKET socketpair whose other end the workload has
 *                 on fd 3, as SCM_RIGHTS on the frame's first byte. The
 *                 interpreter protocol runs on it (csrc/core/box/interp.h),
 *                 straight between the host and the interpreter, with no
 *                 relay through the init; the init's own frames stay on
 *                 this channel, where the workload cannot write. A second
 *                 descriptor, when the kernel gives one, is a pidfd of the
 *                 interpreter: the host's way to kill it that the workload
 *                 cannot forge.
 *                 REPORT, once the workload and everything it left in the
 *                 box are dead: how the workload ended, and its rusage
 *                 (RUSAGE_CHILDREN, so the workload's own CPU and peak RSS,
 *                 not kern's). Nothing follows it: the init waits for
 *                 the host to close the channel (KS_INIT_RELEASE_MAX_MS
 *                 at most), then exits, which starts kern's teardown.
 *                 A host that settles the call at the report shuts its
 *                 end down once the caller has the result (the exit's
 *                 teardown work would otherwise slow the result's way
 *                 back); one that waits for kern's exit closes it at once.
 *
 * Both ends run on the same machine: fields are in host byte order. */
#ifndef KS_INIT_PROTOCOL_H
#define KS_INIT_PROTOCOL_H

#include <stdint.h>

#define KS_INIT_FRAME_MAGIC 0x3246534bu /* "KSF2" */

enum ks_init_frame_type {
  KS_INIT_SPEC = 1,   /* host -> init: NUL-terminated strings, at least one: execvp them */
  KS_INIT_TAKEN = 2,  /* init -> host: empty */
  KS_INIT_ATTACH = 3, /* init -> host: empty, with one or two descriptors */
  KS_INIT_REPORT = 4, /* init -> host: struct ks_init_report */
  KS_INIT_STDIN = 5,  /* host -> init: empty, with one descriptor */
  KS_INIT_STARTED = 6, /* init -> host: empty */
  KS_INIT_SIGNAL = 7,  /* host -> init: struct ks_init_signal */
};

/* A flag on a SPEC frame's type (KS_INIT_SPEC | KS_INIT_SAY_STARTED): the
 * call is a process's, which wants STARTED and may send SIGNAL frames. A
 * call without it pays for neither. */
#define KS_INIT_SAY_STARTED 0x100u

struct ks_init_frame_header {
  uint32_t magic;
  uint32_t type; /* enum ks_init_frame_type */
  uint32_t len;  /* bytes of body that follow */
};

/* How long the init waits after its REPORT for the host to close the
 * channel: a bound for a host that never does, not a delay. */
#define KS_INIT_RELEASE_MAX_MS 100

/* Spec bodies larger than this are refused (an argv is far smaller). */
#define KS_INIT_SPEC_MAX (64u << 20)

enum ks_init_end {
  KS_INIT_EXITED = 1,   /* value: the exit code, 0-255 */
  KS_INIT_SIGNALED = 2, /* value: the signal number */
};

struct ks_init_report {
  uint32_t end; /* enum ks_init_end */
  int32_t value;
  uint32_t flags; /* KS_INIT_CORE_DUMPED */
  uint32_t reserved; /* 0 */
  uint64_t utime_us;
  uint64_t stime_us;
  uint64_t maxrss_kb;
};

#define KS_INIT_CORE_DUMPED 1u

struct ks_init_signal {
  int32_t signo;     /* 1-64 */
  uint32_t reserved; /* 0 */
};

/* The descriptor on which an --interp workload finds its end of the
 * interpreter socket. */
#define KS_INIT_INTERP_FD 3

/* The box path the init's directory is mounted at, and the init in it. */
#define KS_INIT_BOX_DIR "/.ks"
#define KS_INIT_BOX_PATH "/.ks/ks-init"

#endif
