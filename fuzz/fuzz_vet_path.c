/* libFuzzer target: member-path vetting (ks_tar_vet_path) against an
 * independent lexical resolver, and against the workspace path check
 * (ks_ws_check_rel, ks_ws_check_dir_rel) where both define the answer
 * (SECURITY-CASES A1, A2, A5, A10, A16, A23).
 *
 * The input is a path: its bytes up to the first NUL, at most 4096.
 *
 * The resolver below joins a path under a root the way a POSIX system
 * would ("/" restarts at the top, ".." pops a level) and, separately, the
 * way Windows would ('\\' is a separator too, "C:" leaves the root), and
 * says whether the result left the root. Properties:
 *
 *   P1 (A16)  a path ks_tar_vet_path accepts, and its vetted form, stay
 *             inside the root under both readings, and the vetted form
 *             names exactly the place the POSIX reading reached;
 *   P2        the vetted form has the member-path shape (see fuzz_common.h)
 *             and vetting it again changes nothing;
 *   P3        ks_ws_check_rel accepts the vetted form, and
 *             ks_ws_check_dir_rel the original if it fits its 4095-byte
 *             limit (refusing it with ENAMETOOLONG otherwise: finding F6);
 *   P4        the two checks agree where both define the answer: for a path
 *             of at most 4095 bytes whose kept components ("" and "."
 *             dropped) join to at most 256 bytes, with no '\\', no drive prefix or ".ks-" name as the first
 *             kept component, and no trailing "/" or "/." (tar vetting refuses
 *             the first ones on purpose, ks_ws_check_rel the last one), one
 *             accepts if and only if the other does;
 *   P5        a path ks_ws_check_rel accepts stays inside the root (POSIX
 *             reading); one over 4095 bytes is refused as too long (or as
 *             absolute), one with an embedded NUL (the raw input, length
 *             included) is refused.
 *
 * Every length up to 4096 bytes goes to ks_tar_vet_path: it bounds its
 * result at KS_TAR_PATH_MAX since Findings F1 was fixed (1ce338e). */
#include "fuzz_common.h"

#include "err.h"
#include "archive/tar.h"
#include "workspace/wsfs.h"

#define FUZZ_MAX_INPUT 4096
#define MAX_DEPTH (FUZZ_MAX_INPUT + 1)

struct resolved {
  bool escaped; /* went above the root, or restarted outside it */
  size_t n;     /* components left on the stack */
  const char *c[MAX_DEPTH];
  size_t l[MAX_DEPTH];
};

static bool is_sep(char ch, bool windows) { return ch == '/' || (windows && ch == '\\'); }

static bool has_drive_prefix(const char *p, size_t len) {
  return len >= 2 && p[1] == ':' &&
         ((p[0] >= 'a' && p[0] <= 'z') || (p[0] >= 'A' && p[0] <= 'Z'));
}

/* Joins path under a root and resolves it lexically. */
static void resolve(const char *path, size_t len, bool windows, struct resolved *r) {
  size_t i = 0;

  r->escaped = false;
  r->n = 0;
  if (len > 0 && is_sep(path[0], windows))
    r->escaped = true; /* absolute: joining discards the root */
  if (windows && has_drive_prefix(path, len))
    r->escaped = true; /* "C:x", "C:../x": relative to a drive, not to us */
  while (i < len) {
    size_t s = i;
    while (i < len && !is_sep(path[i], windows))
      i++;
    size_t cl = i - s;
    if (cl == 2 && path[s] == '.' && path[s + 1] == '.') {
      if (r->n == 0)
        r->escaped = true;
      else
        r->n--;
    } else if (cl > 0 && !(cl == 1 && path[s] == '.')) {
      r->c[r->n] = path + s;
      r->l[r->n] = cl;
      r->n++;
    }
    i++;
  }
}

/* Does the POSIX resolution equal the '/'-joined components of vetted? */
static bool same_place(const struct resolved *r, const char *vetted) {
  size_t off = 0;
  size_t vlen = strlen(vetted);
  for (size_t k = 0; k < r->n; k++) {
    if (k > 0) {
      if (off >= vlen || vetted[off] != '/')
        return false;
      off++;
    }
    if (off + r->l[k] > vlen || memcmp(vetted + off, r->c[k], r->l[k]) != 0)
      return false;
    off += r->l[k];
  }
  return off == vlen;
}

/* Ends in "/" or "/." (or is only "."): names a directory. */
static bool has_trailing_dir(const char *p, size_t len) {
  if (len == 0)
    return false;
  if (p[len - 1] == '/')
    return true;
  return p[len - 1] == '.' && (len == 1 || p[len - 2] == '/');
}

/* The first component other than "" and "." (its start and length), or
 * false if there is none. */
static bool first_kept(const char *p, size_t len, size_t *ret_s, size_t *ret_len) {
  size_t i = 0;
  while (i < len) {
    size_t s = i;
    while (i < len && p[i] != '/')
      i++;
    if (i - s > 0 && !(i - s == 1 && p[s] == '.')) {
      *ret_s = s;
      *ret_len = i - s;
      return true;
    }
    i++;
  }
  return false;
}

/* The length of the kept components joined by '/': what vetting yields
 * when it accepts. */
static size_t kept_len(const char *p, size_t len) {
  size_t i = 0;
  size_t n = 0;
  while (i < len) {
    size_t s = i;
    while (i < len && p[i] != '/')
      i++;
    if (i - s > 0 && !(i - s == 1 && p[s] == '.'))
      n += (n > 0) + (i - s);
    i++;
  }
  return n;
}

static struct resolved posix_r;
static struct resolved win_r;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct ks_err err;
  size_t len;
  char *path;
  char *vetted;
  int rel_ok;
  int rel_errnum;
  int vet = -1;

  if (size > FUZZ_MAX_INPUT)
    size = FUZZ_MAX_INPUT;

  /* P5, second half: the raw bytes, with the caller's length. */
  if (memchr(data, 0, size) != NULL) {
    char *raw = malloc(size + 1);
    if (raw == NULL)
      abort();
    memcpy(raw, data, size);
    raw[size] = '\0';
    ks_err_clear(&err);
    KS_FUZZ_CHECK(ks_ws_check_rel(raw, size, &err) == -EINVAL,
                  "ks_ws_check_rel accepted a path with an embedded NUL");
    KS_FUZZ_CHECK(ks_ws_check_dir_rel(raw, size, &err) == -EINVAL,
                  "ks_ws_check_dir_rel accepted a path with an embedded NUL");
    free(raw);
  }

  len = strnlen((const char *) data, size);
  /* Exactly sized copies, so ASan sees any read past the terminator. */
  path = malloc(len + 1);
  vetted = malloc(len + 1);
  if (path == NULL || vetted == NULL)
    abort();
  memcpy(path, data, len);
  path[len] = '\0';
  memcpy(vetted, path, len + 1);

  resolve(path, len, false, &posix_r);
  ks_err_clear(&err);
  rel_ok = ks_ws_check_rel(path, len, &err) == 0;
  rel_errnum = err.errnum;
  KS_FUZZ_CHECK(len <= KS_WS_PATH_MAX || (!rel_ok && (rel_errnum == ENAMETOOLONG ||
                                                      (path[0] == '/' && rel_errnum == EINVAL))),
                "ks_ws_check_rel did not refuse a %zu-byte path as too long", len);
  if (rel_ok) {
    KS_FUZZ_CHECK(!posix_r.escaped,
                  "ks_ws_check_rel accepted \"%s\", which leaves the root", path);
    KS_FUZZ_CHECK(posix_r.n > 0, "ks_ws_check_rel accepted \"%s\", which names the root",
                  path);
  } else {
    KS_FUZZ_CHECK(err.errnum != 0 && err.syscall != NULL,
                  "ks_ws_check_rel refused without filling the error");
  }

  vet = ks_tar_vet_path(vetted);
  KS_FUZZ_CHECK(vet >= KS_TAR_OK && vet <= KS_TAR_PRIVATE_NAME, "refusal %d out of range",
                vet);

  if (vet == KS_TAR_OK) {
    /* P1 */
    if (posix_r.escaped) {
      ks_fuzz_dump("input", path, len);
      ks_fuzz_fail("A16: vetted path \"%s\" leaves the root (POSIX reading)", vetted);
    }
    /* Both the input and what a snapshot of the restored file would
     * carry (the vetted form) must stay inside when read by Windows. */
    resolve(path, len, true, &win_r);
    if (win_r.escaped) {
      ks_fuzz_dump("input", path, len);
      ks_fuzz_fail(
          "A5/A16: input of vetted path \"%s\" leaves the root (Windows reading)",
          vetted);
    }
    resolve(vetted, strlen(vetted), true, &win_r);
    if (win_r.escaped) {
      ks_fuzz_dump("input", path, len);
      ks_fuzz_fail("A5/A16: vetted path \"%s\" leaves the root (Windows reading)",
                   vetted);
    }
    if (!same_place(&posix_r, vetted)) {
      ks_fuzz_dump("input", path, len);
      ks_fuzz_fail("vetted form \"%s\" is not where the input resolves", vetted);
    }
    /* P2 */
    ks_fuzz_check_member_path(vetted, "vet");
    {
      size_t vlen = strlen(vetted);
      char *again = malloc(vlen + 1);
      if (again == NULL)
        abort();
      memcpy(again, vetted, vlen + 1);
      KS_FUZZ_CHECK(ks_tar_vet_path(again) == KS_TAR_OK && strcmp(again, vetted) == 0,
                    "vetting \"%s\" again refused or changed it", vetted);
      free(again);
      /* P3 */
      ks_err_clear(&err);
      KS_FUZZ_CHECK(ks_ws_check_rel(vetted, vlen, &err) == 0,
                    "ks_ws_check_rel refuses the vetted member path \"%s\" (errno %d)",
                    vetted, err.errnum);
    }
    /* A member path is at most 256 bytes before vetting, but this input can
     * reach 4096: the workspace check's own length limit comes first. */
    ks_err_clear(&err);
    if (len <= KS_WS_PATH_MAX)
      KS_FUZZ_CHECK(
          ks_ws_check_dir_rel(path, len, &err) == 0,
          "ks_ws_check_dir_rel refuses \"%s\", which tar vetting accepts (errno %d)", path,
          err.errnum);
    else
      KS_FUZZ_CHECK(ks_ws_check_dir_rel(path, len, &err) == -ENAMETOOLONG,
                    "ks_ws_check_dir_rel did not refuse a %zu-byte path as too long", len);
  } else {
    KS_FUZZ_CHECK(strcmp(vetted, path) == 0, "a refused path was modified in place");
  }

  /* P4 */
  size_t fs = 0;
  size_t fl = 0;
  bool has_first = first_kept(path, len, &fs, &fl);
  bool first_drive = has_first && has_drive_prefix(path + fs, fl);
  bool first_private = has_first && fl >= 4 && memcmp(path + fs, ".ks-", 4) == 0;
  if (len <= KS_WS_PATH_MAX && memchr(path, '\\', len) == NULL && !first_drive &&
      !first_private && !has_trailing_dir(path, len) && kept_len(path, len) <= KS_TAR_PATH_MAX) {
    if ((vet == KS_TAR_OK) != rel_ok) {
      ks_fuzz_dump("input", path, len);
      ks_fuzz_fail("ks_tar_vet_path says %s, ks_ws_check_rel says %s",
                   ks_tar_refusal_message((enum ks_tar_refusal) vet),
                   rel_ok ? "ok" : strerror(rel_errnum));
    }
  }

  free(path);
  free(vetted);
  return 0;
}
