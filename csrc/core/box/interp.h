/* The interpreter protocol: between the host's supervisor and the Python
 * that runs in a box started with `ks-init --interp` (lib/inbox/), over the
 * SOCK_SEQPACKET socket the init hands the host (csrc/init/protocol.h,
 * ATTACH). One design serves a one-shot call (the code of a prewarmed or a
 * cold Python box), a kernel's cells, and a fork-mode kernel's states.
 *
 * A record is what one send() carries: a header, then len bytes of body
 * (len <= KS_IP_BODY_MAX). A message is one record, or several of the same
 * type and id in a row, all but the last flagged MORE. Only the code of
 * RUN, KERNEL and CELL and the body of RESULT may span records. In fork
 * mode several processes share the socket: a one-record message of one
 * process may come between the records of another's; a new multi-record
 * message while one is unfinished means its sender died mid-way (it is
 * dropped).
 *
 * Host byte order (both ends run on one machine).
 *
 *   host -> box
 *     RUN      id 0. struct ks_ip_run, then the code (UTF-8): run it as
 *              `python3 -c CODE` would, collecting rich results if asked;
 *              then exit as that would (the init reports how).
 *     KERNEL   id 0. struct ks_ip_kernel: become a kernel (the boot carries
 *              the driver, lib/inbox/python-kernel.py, compiled while a
 *              prewarmed box waits).
 *     CELL     id >= 1. struct ks_ip_cell, then the code. The first record
 *              carries two descriptors (SCM_RIGHTS): the write ends of the
 *              cell's stdout and stderr pipes.
 *     ROLLBACK id >= 1. struct ks_ip_rollback (fork mode only).
 *   box -> host
 *     TAKEN    id 0, empty: the RUN's code arrived whole and runs now.
 *     RESULT   id of the cell (0 for RUN): a JSON object, MIME type -> str
 *              (binary formats base64), as Jupyter's display data.
 *     DONE     id of the cell (0 for RUN): struct ks_ip_done.
 *     READY    id 0: struct ks_ip_ready; in shared mode with one
 *              descriptor, a pidfd of the interpreter (the target of an
 *              interrupt).
 *     FORKED   id of the cell, empty, with one descriptor: a pidfd of the
 *              process that runs it (fork mode; the target of a kill).
 *     ENDED    id of the cell whose process ended (fork mode): struct
 *              ks_ip_ended, sent by that process's parent, which is the
 *              current state from then on.
 *
 * Everything from the box is untrusted: the code it runs shares the
 * interpreter's memory and descriptors and can write anything here. What it
 * can forge is its own output and results, and the host treats a malformed
 * record as the kernel's death, never as a crash or a hang. */
#ifndef KS_CORE_INTERP_H
#define KS_CORE_INTERP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KS_IP_MAGIC 0x3149534bu /* "KSI1" */
#define KS_IP_RECORD_MAX 65536u
#define KS_IP_BODY_MAX (KS_IP_RECORD_MAX - (uint32_t) sizeof(struct ks_ip_header))

enum ks_ip_type {
  KS_IP_RUN = 1,
  KS_IP_KERNEL = 2,
  KS_IP_CELL = 3,
  KS_IP_ROLLBACK = 4,
  KS_IP_TAKEN = 16,
  KS_IP_RESULT = 17,
  KS_IP_DONE = 18,
  KS_IP_READY = 19,
  KS_IP_FORKED = 20,
  KS_IP_ENDED = 21,
};

#define KS_IP_MORE 1u /* header flags: the message goes on in the next record */

struct ks_ip_header {
  uint32_t magic;
  uint16_t type;
  uint16_t flags;
  uint32_t id;
  uint32_t len;
};

/* RUN and CELL: whether to collect rich results, and their budget. */
#define KS_IP_RESULTS 1u
struct ks_ip_run {
  uint32_t result_max; /* bytes of RESULT bodies in all */
  uint32_t flags;      /* KS_IP_RESULTS */
};
#define ks_ip_cell ks_ip_run

enum ks_ip_mode { KS_IP_SHARED = 1, KS_IP_FORK = 2 };
struct ks_ip_kernel {
  uint32_t mode;        /* enum ks_ip_mode */
  uint32_t checkpoints; /* fork mode: states kept besides the current one */
};

struct ks_ip_rollback {
  uint32_t n; /* states to drop, 1 <= n <= the depth of the last DONE/ENDED */
  uint32_t reserved;
};

enum ks_ip_end {
  KS_IP_OK = 0,          /* value 0 */
  KS_IP_EXCEPTION = 1,   /* value 1; the traceback went to the cell's stderr */
  KS_IP_EXIT = 2,        /* SystemExit: value the exit code, 0-255 */
  KS_IP_INTERRUPTED = 3, /* KeyboardInterrupt: value 1 */
};
#define KS_IP_RESULTS_DROPPED 1u /* done flags: a result did not fit the budget */
/* done flags, RUN only: the interpreter does nothing more but _exit(value)
 * (its output is flushed, its atexit handlers have run), and utime_us,
 * stime_us and maxrss_kb are getrusage's, self and children. The host
 * settles the call here and kills the interpreter (through the init's pidfd
 * of it, never one the box sent), so a forged one only ends the code. */
#define KS_IP_DONE_FINAL 2u
struct ks_ip_done {
  int32_t end;    /* enum ks_ip_end */
  int32_t value;
  uint32_t depth; /* fork mode: checkpoints held now; 0 in shared mode */
  uint32_t flags; /* KS_IP_RESULTS_DROPPED */
  uint64_t utime_us; /* the cell's own CPU and its children's */
  uint64_t stime_us;
  uint64_t maxrss_kb; /* peak RSS of the process that ran it */
};

struct ks_ip_ready {
  uint32_t mode; /* enum ks_ip_mode */
  uint32_t pid;  /* the interpreter's pid in the box */
};

struct ks_ip_ended {
  int32_t wait_status; /* as waitpid(2) gave it */
  uint32_t depth;      /* checkpoints held by the new current state */
  uint64_t utime_us;   /* the ended process's rusage (wait4) */
  uint64_t stime_us;
  uint64_t maxrss_kb;
};

/* ---- the host's reader ----------------------------------------------------
 * Plain C, no I/O: the supervisor feeds it each record recv() returned, the
 * fuzzer anything. */

enum ks_ip_verdict {
  KS_IP_NEED_MORE = 0, /* a record of an unfinished message, taken */
  KS_IP_MESSAGE = 1,   /* msg describes a whole message */
  KS_IP_DROPPED = 2,   /* a RESULT over the budget ended: dropped whole */
  KS_IP_BAD = 3,       /* not the protocol: the kernel is to be treated as dead */
};

struct ks_ip_msg {
  uint16_t type;
  uint32_t id;
  const unsigned char *body; /* valid until the next feed */
  size_t len;
};

struct ks_ip_reader {
  size_t max;       /* a multi-record message longer than this is dropped */
  bool partial;     /* a multi-record message is being assembled */
  bool skipping;    /* ... and is being dropped (over max) */
  uint16_t type;
  uint32_t id;
  unsigned char *buf;
  size_t len;
  size_t cap;
};

void ks_ip_reader_init(struct ks_ip_reader *r, size_t max);
void ks_ip_reader_free(struct ks_ip_reader *r);

/* Takes one record (n bytes, as received). */
enum ks_ip_verdict ks_ip_feed(struct ks_ip_reader *r, const void *rec, size_t n,
                              struct ks_ip_msg *msg);

/* The body size a message of this type must have (box -> host), or -1 for
 * any size (RESULT). */
long ks_ip_fixed_len(uint16_t type);

/* Fills a record header. */
void ks_ip_header_set(struct ks_ip_header *h, uint16_t type, uint16_t flags, uint32_t id,
                      uint32_t len);

/* The records of one host -> box message whose body is head then body:
 * malloc'd, *ret_len bytes; NULL without memory. */
char *ks_ip_frame(uint16_t type, uint32_t id, const void *head, size_t head_len,
                  const void *body, size_t body_len, size_t *ret_len);

/* The size of the record that starts at p (header and body), from its
 * header. For walking what ks_ip_frame made. */
size_t ks_ip_record_size(const void *p);

#endif
