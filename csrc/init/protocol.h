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
 *   host -> init  one spec frame, only for an init started with --wait (a
 *                 prewarmed box): the argv to exec, or the code for the
 *                 interpreter started ahead (--pre).
 *   init -> host  one report frame once the workload and everything it left
 *                 in the box are dead: how the workload ended, and its
 *                 rusage (RUSAGE_CHILDREN, so the workload's own CPU and
 *                 peak RSS, not kern's).
 *
 * Both ends run on the same machine: fields are in host byte order. */
#ifndef KS_INIT_PROTOCOL_H
#define KS_INIT_PROTOCOL_H

#include <stdint.h>

#define KS_INIT_SPEC_MAGIC 0x3153534bu   /* "KSS1" */
#define KS_INIT_REPORT_MAGIC 0x3152534bu /* "KSR1" */

/* What a spec frame's body holds. */
enum ks_init_spec_kind {
  KS_INIT_SPEC_ARGV = 1, /* NUL-terminated strings, at least one: execvp them */
  KS_INIT_SPEC_CODE = 2, /* raw bytes, for the interpreter started with --pre */
};

/* Bodies larger than this are refused (argv and code are far smaller). */
#define KS_INIT_SPEC_MAX (64u << 20)

struct ks_init_spec_header {
  uint32_t magic;
  uint32_t kind;
  uint32_t len; /* bytes of body that follow */
};

enum ks_init_end {
  KS_INIT_EXITED = 1,   /* value: the exit code, 0-255 */
  KS_INIT_SIGNALED = 2, /* value: the signal number */
};

struct ks_init_report {
  uint32_t magic;
  uint32_t end;   /* enum ks_init_end */
  int32_t value;
  uint32_t flags; /* KS_INIT_CORE_DUMPED */
  uint64_t utime_us;
  uint64_t stime_us;
  uint64_t maxrss_kb;
};

#define KS_INIT_CORE_DUMPED 1u

/* The box path the init's directory is mounted at, and the init in it. */
#define KS_INIT_BOX_DIR "/.ks"
#define KS_INIT_BOX_PATH "/.ks/ks-init"

#endif
