#include "tar.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../workspace/wsfs.h"

/* Field offsets of the POSIX ustar header. */
#define KS__NAME 0
#define KS__NAME_LEN 100
#define KS__MODE 100
#define KS__UID 108
#define KS__GID 116
#define KS__SIZE 124
#define KS__MTIME 136
#define KS__CHKSUM 148
#define KS__TYPE 156
#define KS__MAGIC 257
#define KS__VERSION 263
#define KS__PREFIX 345
#define KS__PREFIX_LEN 155

bool ks_tar_block_is_zero(const unsigned char *block) {
  for (size_t i = 0; i < KS_TAR_BLOCK; i++) {
    if (block[i] != 0)
      return false;
  }
  return true;
}

/* Plain octal: optional leading spaces, digits, then only NULs or spaces.
 * A base-256 field (high bit set), a sign, or a stray character refuses. */
static bool ks__parse_octal(const unsigned char *f, size_t len, uint64_t *ret) {
  size_t i = 0;
  uint64_t v = 0;
  bool digits = false;

  while (i < len && f[i] == ' ')
    i++;
  for (; i < len && f[i] >= '0' && f[i] <= '7'; i++) {
    if (v > (UINT64_MAX >> 3))
      return false;
    v = (v << 3) | (uint64_t) (f[i] - '0');
    digits = true;
  }
  for (; i < len; i++) {
    if (f[i] != 0 && f[i] != ' ')
      return false;
  }
  if (!digits)
    return false;
  *ret = v;
  return true;
}

static unsigned ks__checksum(const unsigned char *block) {
  unsigned sum = 0;
  for (size_t i = 0; i < KS_TAR_BLOCK; i++)
    sum += (i >= KS__CHKSUM && i < KS__CHKSUM + 8) ? ' ' : block[i];
  return sum;
}

/* Copies a field that ends at its first NUL, or fills it entirely. */
static size_t ks__field_len(const unsigned char *f, size_t cap) {
  const void *nul = memchr(f, 0, cap);
  return nul != NULL ? (size_t) ((const unsigned char *) nul - f) : cap;
}

static bool ks__is_drive_prefix(const char *p, size_t len) {
  return len >= 2 && ((p[0] >= 'A' && p[0] <= 'Z') || (p[0] >= 'a' && p[0] <= 'z')) &&
         p[1] == ':';
}

enum ks_tar_refusal ks_tar_vet_path(char *path) {
  char out[KS_TAR_PATH_MAX + 1];
  size_t olen = 0;
  const char *p = path;

  if (path[0] == '/')
    return KS_TAR_ABSOLUTE;
  if (strchr(path, '\\') != NULL)
    return KS_TAR_BACKSLASH;

  while (*p != '\0') {
    const char *end = strchr(p, '/');
    size_t clen = end != NULL ? (size_t) (end - p) : strlen(p);

    if (clen == 2 && p[0] == '.' && p[1] == '.')
      return KS_TAR_DOTDOT;
    if (clen > KS_WS_NAME_MAX)
      return KS_TAR_NAME_TOO_LONG;
    if (clen > 0 && !(clen == 1 && p[0] == '.')) {
      if (olen == 0) {
        /* On the first kept component, so "./C:x" and ".//C:x" are caught
         * too: "C:x" or "C:../x" is drive-relative once on Windows/WSL. */
        if (ks__is_drive_prefix(p, clen))
          return KS_TAR_BACKSLASH;
        if (strncmp(p, KS_WS_PRIVATE_PREFIX, strlen(KS_WS_PRIVATE_PREFIX)) == 0)
          return KS_TAR_PRIVATE_NAME;
      }
      /* The caller's buffer may hold more than a USTAR path can: bound the
       * normalised result, never write past it. */
      if (olen + (olen > 0) + clen > KS_TAR_PATH_MAX)
        return KS_TAR_NAME_TOO_LONG;
      if (olen > 0)
        out[olen++] = '/';
      memcpy(out + olen, p, clen);
      olen += clen;
    }
    p += clen;
    if (*p == '/')
      p++;
  }
  if (olen == 0)
    return KS_TAR_EMPTY_NAME;
  out[olen] = '\0';
  memcpy(path, out, olen + 1);
  return KS_TAR_OK;
}

static enum ks_tar_refusal ks__type_refusal(unsigned char t) {
  switch (t) {
  case '1': return KS_TAR_HARDLINK;
  case '2': return KS_TAR_SYMLINK;
  case '3':
  case '4': return KS_TAR_DEVICE;
  case '6': return KS_TAR_FIFO;
  /* Tar readers take '7' as a plain file, but the restore policy admits
   * only '0', '\0' and '5' (SECURITY-CASES A6). */
  case '7': return KS_TAR_CONTIGUOUS;
  case 'x':
  case 'g':
  case 'L':
  case 'K': return KS_TAR_EXTENSION;
  case 'S':
  case 'M':
  case 'V':
  case 'D':
  case 'N': return KS_TAR_GNU_SPECIAL;
  default: return KS_TAR_UNKNOWN_TYPE;
  }
}

enum ks_tar_refusal ks_tar_decode(const unsigned char *block, struct ks_tar_member *m) {
  static const char posix_magic[8] = {'u', 's', 't', 'a', 'r', '\0', '0', '0'};
  static const char gnu_magic[8] = {'u', 's', 't', 'a', 'r', ' ', ' ', '\0'};
  uint64_t stored;
  uint64_t size;
  bool posix;
  size_t nlen;
  size_t plen;
  unsigned char t;

  /* The checksum comes first: nothing else of a corrupt header is trusted. */
  if (!ks__parse_octal(block + KS__CHKSUM, 8, &stored))
    return KS_TAR_BAD_NUMBER;
  if (stored != ks__checksum(block))
    return KS_TAR_BAD_CHECKSUM;
  posix = memcmp(block + KS__MAGIC, posix_magic, 8) == 0;
  if (!posix && memcmp(block + KS__MAGIC, gnu_magic, 8) != 0)
    return KS_TAR_BAD_MAGIC;

  t = block[KS__TYPE];
  if (t == '0' || t == '\0')
    m->type = KS_TAR_FILE;
  else if (t == '5')
    m->type = KS_TAR_DIR;
  else
    return ks__type_refusal(t);

  if (!ks__parse_octal(block + KS__SIZE, 12, &size) || size > KS_TAR_SIZE_MAX)
    return KS_TAR_BAD_NUMBER;
  if (m->type == KS_TAR_DIR && size != 0)
    return KS_TAR_DIR_WITH_SIZE; /* would hide the next header in "content" */
  m->size = size;

  /* GNU's own format keeps times where ustar keeps the prefix: only a
   * POSIX ustar header has a prefix to prepend. GNU tar ignores those bytes
   * in a GNU header, but Python's tarfile prepends them, so the two would
   * extract different paths: refuse rather than pick one. */
  if (!posix && block[KS__PREFIX] != 0)
    return KS_TAR_GNU_PREFIX;
  nlen = ks__field_len(block + KS__NAME, KS__NAME_LEN);
  plen = posix ? ks__field_len(block + KS__PREFIX, KS__PREFIX_LEN) : 0;
  if (plen > 0) {
    memcpy(m->path, block + KS__PREFIX, plen);
    m->path[plen] = '/';
    memcpy(m->path + plen + 1, block + KS__NAME, nlen);
    m->path[plen + 1 + nlen] = '\0';
  } else {
    memcpy(m->path, block + KS__NAME, nlen);
    m->path[nlen] = '\0';
  }
  if (m->path[0] == '\0')
    return KS_TAR_EMPTY_NAME;
  return ks_tar_vet_path(m->path);
}

const char *ks_tar_refusal_message(enum ks_tar_refusal r) {
  switch (r) {
  case KS_TAR_OK: return "ok";
  case KS_TAR_BAD_CHECKSUM: return "a header checksum does not match";
  case KS_TAR_BAD_MAGIC: return "a header is not a ustar header";
  case KS_TAR_BAD_NUMBER: return "a header number field is not plain octal";
  case KS_TAR_HARDLINK: return "hardlink members are not allowed";
  case KS_TAR_SYMLINK: return "symlink members are not allowed";
  case KS_TAR_DEVICE: return "device members are not allowed";
  case KS_TAR_FIFO: return "FIFO members are not allowed";
  case KS_TAR_CONTIGUOUS: return "contiguous-file members ('7') are not allowed";
  case KS_TAR_EXTENSION: return "PAX and GNU extension headers are not supported";
  case KS_TAR_GNU_SPECIAL: return "GNU sparse, multivolume and label members are not allowed";
  case KS_TAR_UNKNOWN_TYPE: return "a member has an unknown type";
  case KS_TAR_DIR_WITH_SIZE: return "a directory member claims content";
  case KS_TAR_GNU_PREFIX: return "a GNU-format header has data in the ustar prefix field (tar readers disagree on its path)";
  case KS_TAR_EMPTY_NAME: return "a member has an empty name";
  case KS_TAR_ABSOLUTE: return "a member has an absolute path";
  case KS_TAR_DOTDOT: return "a member path contains '..'";
  case KS_TAR_BACKSLASH: return "a member path contains '\\' or a drive prefix";
  case KS_TAR_NAME_TOO_LONG: return "a member path is too long (a component over 255 bytes, or over 256 in all)";
  case KS_TAR_PRIVATE_NAME: return "a member uses a name reserved for kern-sandbox (.ks-)";
  }
  return "the archive is malformed";
}

static void ks__put_octal(unsigned char *f, size_t len, uint64_t v) {
  /* len - 1 digits, zero-padded, then NUL. */
  for (size_t i = len - 1; i-- > 0;) {
    f[i] = (unsigned char) ('0' + (v & 7));
    v >>= 3;
  }
  f[len - 1] = '\0';
}

int ks_tar_encode(unsigned char *block, const char *path, enum ks_tar_type type,
                  uint64_t size) {
  size_t len = strlen(path);
  size_t split = 0;
  unsigned sum;

  if (type == KS_TAR_FILE && size > KS_TAR_SIZE_MAX)
    return -EFBIG;
  memset(block, 0, KS_TAR_BLOCK);
  if (len > KS__NAME_LEN) {
    /* The last '/' that leaves a name of at most 100 bytes and a prefix of
     * at most 155. */
    for (size_t i = len - 1; i > 0; i--) {
      if (path[i] == '/' && len - i - 1 <= KS__NAME_LEN && len - i - 1 > 0) {
        split = i;
        if (split <= KS__PREFIX_LEN)
          break;
      }
    }
    if (split == 0 || split > KS__PREFIX_LEN || len - split - 1 > KS__NAME_LEN)
      return -ENAMETOOLONG;
    memcpy(block + KS__PREFIX, path, split);
    memcpy(block + KS__NAME, path + split + 1, len - split - 1);
  } else {
    memcpy(block + KS__NAME, path, len);
  }
  ks__put_octal(block + KS__MODE, 8, type == KS_TAR_DIR ? 0755 : 0644);
  ks__put_octal(block + KS__UID, 8, 0);
  ks__put_octal(block + KS__GID, 8, 0);
  ks__put_octal(block + KS__SIZE, 12, type == KS_TAR_DIR ? 0 : size);
  ks__put_octal(block + KS__MTIME, 12, 0);
  block[KS__TYPE] = type == KS_TAR_DIR ? '5' : '0';
  memcpy(block + KS__MAGIC, "ustar", 6); /* "ustar\0" */
  memcpy(block + KS__VERSION, "00", 2);
  sum = ks__checksum(block);
  /* Six digits, NUL, space: the form every tar writes and reads. */
  snprintf((char *) block + KS__CHKSUM, 8, "%06o", sum & 0777777);
  block[KS__CHKSUM + 7] = ' ';
  return 0;
}
