/* USTAR headers: encoding for snapshots, strict decoding and vetting for
 * restore. Pure functions over 512-byte blocks, so they are fuzzed alone.
 *
 * Restore accepts regular files ('0', '\0') and directories ('5') with
 * relative, '..'-free names and nothing else: no links, devices, FIFOs,
 * PAX or GNU extension headers. Where two tar readers could disagree about a
 * header (a size on a directory, a non-octal digit, a signed checksum), the
 * archive is refused rather than guessed at. */
#ifndef KS_CORE_TAR_H
#define KS_CORE_TAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KS_TAR_BLOCK 512
/* Longest member path: 155-byte prefix, '/', 100-byte name. */
#define KS_TAR_PATH_MAX 256
/* Regular files up to 8 GiB - 1 fit the 11 octal digits of a USTAR size. */
#define KS_TAR_SIZE_MAX 077777777777ULL

enum ks_tar_type { KS_TAR_FILE, KS_TAR_DIR };

/* Why a header was refused; one value per rule, so tests and messages can
 * say exactly which rule fired. */
enum ks_tar_refusal {
  KS_TAR_OK = 0,
  KS_TAR_BAD_CHECKSUM,
  KS_TAR_BAD_MAGIC,
  KS_TAR_BAD_NUMBER,      /* a size or checksum field that is not plain octal */
  KS_TAR_HARDLINK,        /* '1' */
  KS_TAR_SYMLINK,         /* '2' */
  KS_TAR_DEVICE,          /* '3', '4' */
  KS_TAR_FIFO,            /* '6' */
  KS_TAR_CONTIGUOUS,      /* '7' */
  KS_TAR_EXTENSION,       /* 'x', 'g' (PAX), 'L', 'K' (GNU long names) */
  KS_TAR_GNU_SPECIAL,     /* 'S', 'M', 'V', 'D', 'N' */
  KS_TAR_UNKNOWN_TYPE,
  KS_TAR_DIR_WITH_SIZE,   /* a directory claiming content */
  KS_TAR_GNU_PREFIX,      /* a GNU header with bytes where ustar keeps its prefix */
  KS_TAR_EMPTY_NAME,
  KS_TAR_ABSOLUTE,
  KS_TAR_DOTDOT,
  KS_TAR_BACKSLASH,       /* '\' or a drive prefix: unsafe once on Windows */
  KS_TAR_NAME_TOO_LONG,   /* a component over 255 bytes, or over 256 in all */
  KS_TAR_PRIVATE_NAME,    /* a name reserved for the binding (".ks-...") */
};

/* A decoded, vetted member header. */
struct ks_tar_member {
  enum ks_tar_type type;
  uint64_t size;                  /* content bytes that follow (0 for dirs) */
  char path[KS_TAR_PATH_MAX + 1]; /* normalised: no "." parts, no "//", no trailing '/' */
};

/* True if the block is all zeros (an end-of-archive marker). */
bool ks_tar_block_is_zero(const unsigned char *block);

/* Decodes and vets one header block. Returns KS_TAR_OK and fills *m, or the
 * rule that refused it. */
enum ks_tar_refusal ks_tar_decode(const unsigned char *block, struct ks_tar_member *m);

/* Vets and normalises a member path in place (also used on its own by the
 * fuzzer and by the snapshot writer): relative, no "..", no '\\', no drive
 * prefix on the first component, components <= 255 bytes, at most
 * KS_TAR_PATH_MAX bytes once normalised, not private to the binding. */
enum ks_tar_refusal ks_tar_vet_path(char *path);

/* A human sentence for a refusal ("symlink members are not allowed"). */
const char *ks_tar_refusal_message(enum ks_tar_refusal r);

/* Encodes a header for a snapshot member: fixed modes (0644 files, 0755
 * directories), uid/gid 0, mtime 0, POSIX ustar magic. Paths over 100 bytes
 * go through the prefix field. Returns 0, -ENAMETOOLONG if the path cannot
 * be split into prefix (<= 155) and name (<= 100), or -EFBIG past 8 GiB. */
int ks_tar_encode(unsigned char *block, const char *path, enum ks_tar_type type,
                  uint64_t size);

#endif
