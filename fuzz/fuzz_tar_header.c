/* libFuzzer target: the USTAR header decoder (ks_tar_decode) and encoder
 * (ks_tar_encode), block by block (SECURITY-CASES A1-A8, A16, H7).
 *
 * The input is cut into 512-byte blocks (the last one zero-padded), each
 * copied into a buffer of exactly 512 bytes so ASan sees any read past it.
 * For every block the decoder's verdict is checked against a reference
 * reading of the same header written here, independently of tar.c:
 *
 *   - accepted: the type is '0', '\0' (file) or '5' (directory); the
 *     checksum is the unsigned byte sum; the magic is POSIX or GNU ustar;
 *     the size is the field's plain octal value (0 for a directory); the
 *     path is exactly the lexical normalisation of prefix + "/" + name (the
 *     prefix only for POSIX magic, each field cut at its first NUL: A7 (3)
 *     and (4); a GNU header has a zero byte where the prefix would start);
 *     and that path is safe: relative, no "", "." or ".."
 *     component, no backslash, no drive prefix, components <= 255 bytes,
 *     <= 256 bytes in all, no top-level ".ks-" name.
 *   - round trip: re-encoding the member (when the path can be split into a
 *     155-byte prefix and a 100-byte name, which is checked independently
 *     too) and decoding it again gives the same path, type and size.
 *
 * Each block is also read a second way, as a member path (its bytes up to
 * the first NUL, at most 256), a type and a size: a path ks_tar_vet_path
 * accepts must survive encode + decode unchanged. That drives the encoder
 * with paths no valid header would carry. */
#include "fuzz_common.h"

#include "archive/tar.h"

#define REF_NAME 0
#define REF_SIZE 124
#define REF_CHKSUM 148
#define REF_TYPE 156
#define REF_MAGIC 257
#define REF_PREFIX 345

/* A tolerant reading of an octal field: leading spaces, then octal digits,
 * then only NULs and spaces. Returns false for anything else. */
static bool ref_octal(const unsigned char *f, size_t len, uint64_t *ret) {
  size_t i = 0;
  size_t end = len;
  unsigned __int128 v = 0;

  while (i < len && f[i] == ' ')
    i++;
  while (end > i && (f[end - 1] == 0 || f[end - 1] == ' '))
    end--;
  if (end == i)
    return false;
  for (size_t k = i; k < end; k++) {
    if (f[k] < '0' || f[k] > '7')
      return false;
    v = v * 8 + (unsigned) (f[k] - '0');
  }
  if (v > UINT64_MAX)
    return false;
  *ret = (uint64_t) v;
  return true;
}

static size_t ref_strnlen(const unsigned char *f, size_t cap) {
  size_t n = 0;
  while (n < cap && f[n] != 0)
    n++;
  return n;
}

/* Lexical normalisation: drops "" and "." components; returns false if a
 * ".." component is present (a safe decoder must have refused it). */
static bool ref_normalise(const char *in, size_t len, char *out, size_t out_size,
                          size_t *ret_len) {
  size_t o = 0;
  size_t i = 0;

  while (i < len) {
    size_t s = i;
    while (i < len && in[i] != '/')
      i++;
    size_t cl = i - s;
    if (cl == 2 && in[s] == '.' && in[s + 1] == '.')
      return false;
    if (cl > 0 && !(cl == 1 && in[s] == '.')) {
      if (o + cl + 2 > out_size)
        return false;
      if (o > 0)
        out[o++] = '/';
      memcpy(out + o, in + s, cl);
      o += cl;
    }
    i++; /* the '/' (or one past the end) */
  }
  out[o] = '\0';
  *ret_len = o;
  return true;
}

/* Can path be stored as prefix (<= 155) '/' name (1..100)? The contract
 * of ks_tar_encode, derived here without its code. */
static bool ref_encodable(const char *path) {
  size_t len = strlen(path);
  if (len <= 100)
    return true;
  for (size_t i = 0; i < len; i++) {
    if (path[i] == '/' && i <= 155 && len - i - 1 >= 1 && len - i - 1 <= 100)
      return true;
  }
  return false;
}

static void check_round_trip(const char *path, enum ks_tar_type type, uint64_t size,
                             const char *what) {
  unsigned char *blk = malloc(KS_TAR_BLOCK);
  struct ks_tar_member m2;
  enum ks_tar_refusal why;
  int r;

  if (blk == NULL)
    abort();
  r = ks_tar_encode(blk, path, type, size);
  if (!ref_encodable(path)) {
    KS_FUZZ_CHECK(r == -ENAMETOOLONG, "%s: encode(\"%s\") = %d, expected -ENAMETOOLONG",
                  what, path, r);
    free(blk);
    return;
  }
  KS_FUZZ_CHECK(r == 0, "%s: encode(\"%s\", size %llu) = %d for an encodable path", what,
                path, (unsigned long long) size, r);
  memset(&m2, 0, sizeof m2);
  why = ks_tar_decode(blk, &m2);
  if (why != KS_TAR_OK) {
    ks_fuzz_dump("path", path, strlen(path));
    ks_fuzz_fail("%s: re-encoded header refused: %s", what, ks_tar_refusal_message(why));
  }
  KS_FUZZ_CHECK(strcmp(m2.path, path) == 0, "%s: round trip \"%s\" -> \"%s\"", what, path,
                m2.path);
  KS_FUZZ_CHECK(m2.type == type, "%s: round trip changed the type of \"%s\"", what, path);
  KS_FUZZ_CHECK(m2.size == (type == KS_TAR_DIR ? 0 : size),
                "%s: round trip size %llu -> %llu", what, (unsigned long long) size,
                (unsigned long long) m2.size);
  free(blk);
}

static void check_block(const unsigned char *blk) {
  static const unsigned char posix_magic[8] = {'u', 's', 't', 'a', 'r', 0, '0', '0'};
  static const unsigned char gnu_magic[8] = {'u', 's', 't', 'a', 'r', ' ', ' ', 0};
  struct ks_tar_member m;
  struct ks_tar_member again;
  enum ks_tar_refusal why;
  bool zero = true;

  for (size_t i = 0; i < KS_TAR_BLOCK; i++)
    zero = zero && blk[i] == 0;
  KS_FUZZ_CHECK(ks_tar_block_is_zero(blk) == zero, "ks_tar_block_is_zero disagrees");

  memset(&m, 0xA5, sizeof m);
  why = ks_tar_decode(blk, &m);
  KS_FUZZ_CHECK(why >= KS_TAR_OK && why <= KS_TAR_PRIVATE_NAME, "refusal %d out of range",
                (int) why);
  KS_FUZZ_CHECK(ks_tar_refusal_message(why) != NULL, "no message for refusal %d",
                (int) why);
  memset(&again, 0x5A, sizeof again);
  KS_FUZZ_CHECK(ks_tar_decode(blk, &again) == why, "ks_tar_decode is not deterministic");
  if (why != KS_TAR_OK)
    return;

  /* The reference reading of the same block. */
  bool posix = memcmp(blk + REF_MAGIC, posix_magic, 8) == 0;
  bool gnu = memcmp(blk + REF_MAGIC, gnu_magic, 8) == 0;
  KS_FUZZ_CHECK(posix || gnu, "accepted a header without ustar magic");
  KS_FUZZ_CHECK(posix || blk[REF_PREFIX] == 0,
                "accepted a GNU header with a byte at the ustar prefix offset");

  uint64_t stored;
  unsigned sum = 0;
  for (size_t i = 0; i < KS_TAR_BLOCK; i++)
    sum += (i >= REF_CHKSUM && i < REF_CHKSUM + 8) ? ' ' : blk[i];
  KS_FUZZ_CHECK(ref_octal(blk + REF_CHKSUM, 8, &stored) && stored == sum,
                "accepted a header whose checksum is not the unsigned sum %u", sum);

  unsigned char t = blk[REF_TYPE];
  KS_FUZZ_CHECK(t == '0' || t == 0 || t == '5', "accepted typeflag 0x%02x", t);
  KS_FUZZ_CHECK(m.type == (t == '5' ? KS_TAR_DIR : KS_TAR_FILE),
                "typeflag 0x%02x decoded as type %d", t, (int) m.type);

  uint64_t size;
  KS_FUZZ_CHECK(ref_octal(blk + REF_SIZE, 12, &size), "accepted a non-octal size field");
  KS_FUZZ_CHECK(m.size == size, "size %llu decoded as %llu", (unsigned long long) size,
                (unsigned long long) m.size);
  KS_FUZZ_CHECK(size <= KS_TAR_SIZE_MAX, "accepted size %llu", (unsigned long long) size);
  KS_FUZZ_CHECK(m.type == KS_TAR_FILE || size == 0, "accepted a directory with a size");

  char full[KS_TAR_PATH_MAX + 2];
  size_t nlen = ref_strnlen(blk + REF_NAME, 100);
  size_t plen = posix ? ref_strnlen(blk + REF_PREFIX, 155) : 0;
  size_t flen = 0;
  if (plen > 0) {
    memcpy(full, blk + REF_PREFIX, plen);
    full[plen] = '/';
    flen = plen + 1;
  }
  memcpy(full + flen, blk + REF_NAME, nlen);
  flen += nlen;
  full[flen] = '\0';

  char norm[KS_TAR_PATH_MAX + 2];
  size_t norm_len;
  if (!ref_normalise(full, flen, norm, sizeof norm, &norm_len)) {
    ks_fuzz_dump("header path", full, flen);
    ks_fuzz_fail("accepted a member path with a \"..\" component (as \"%s\")", m.path);
  }
  if (strcmp(norm, m.path) != 0) {
    ks_fuzz_dump("header path", full, flen);
    ks_fuzz_dump("reference", norm, norm_len);
    ks_fuzz_dump("decoded", m.path, strlen(m.path));
    ks_fuzz_fail("decoded member path differs from the header's prefix/name");
  }
  ks_fuzz_check_member_path(m.path, "decode");

  /* Vetting is idempotent on what it produced. */
  char copy[KS_TAR_PATH_MAX + 1];
  memcpy(copy, m.path, strlen(m.path) + 1);
  KS_FUZZ_CHECK(ks_tar_vet_path(copy) == KS_TAR_OK && strcmp(copy, m.path) == 0,
                "ks_tar_vet_path refuses or changes its own output \"%s\"", m.path);

  check_round_trip(m.path, m.type, m.size, "decode");
}

/* The block read as a raw member path for the encoder. */
static void check_encode_path(const unsigned char *blk) {
  char path[KS_TAR_PATH_MAX + 1];
  size_t len = ref_strnlen(blk + 16, KS_TAR_PATH_MAX);
  enum ks_tar_type type = (blk[0] & 1) ? KS_TAR_DIR : KS_TAR_FILE;
  uint64_t size = 0;

  /* Bytes 1..8: a size; masked to the USTAR range, sometimes beyond it. */
  for (int i = 1; i <= 8; i++)
    size = (size << 8) | blk[i];
  if ((blk[9] & 0x80) == 0)
    size &= KS_TAR_SIZE_MAX;

  memcpy(path, blk + 16, len);
  path[len] = '\0';
  if (ks_tar_vet_path(path) != KS_TAR_OK)
    return;
  ks_fuzz_check_member_path(path, "vet");
  if (type == KS_TAR_FILE && size > KS_TAR_SIZE_MAX) {
    unsigned char *out = malloc(KS_TAR_BLOCK);
    int r;
    if (out == NULL)
      abort();
    r = ks_tar_encode(out, path, type, size);
    KS_FUZZ_CHECK(r == -EFBIG, "encode of size %llu returned %d",
                  (unsigned long long) size, r);
    free(out);
    return;
  }
  check_round_trip(path, type, size, "encode");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  unsigned char *blk;

  if (size == 0)
    return 0;
  blk = malloc(KS_TAR_BLOCK);
  if (blk == NULL)
    abort();
  for (size_t off = 0; off < size; off += KS_TAR_BLOCK) {
    size_t n = size - off < KS_TAR_BLOCK ? size - off : KS_TAR_BLOCK;
    memset(blk, 0, KS_TAR_BLOCK);
    memcpy(blk, data + off, n);
    check_block(blk);
    check_encode_path(blk);
  }
  free(blk);
  return 0;
}
