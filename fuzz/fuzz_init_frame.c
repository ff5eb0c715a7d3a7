/* libFuzzer target: ks-init's reader of the host's frames (SPEC, STDIN),
 * ks_init_recv_frame in csrc/init/spec.c, over a real socketpair: recvmsg
 * of the header with the descriptor that may ride on it, then the body.
 *
 * Input: byte 0 picks the frame type wanted (bit 0: SPEC or STDIN), whether
 * a descriptor rides on the first byte (bit 1) and whether the bytes are
 * sent in two parts (bit 2, at byte 1's offset); byte 1 the split; the rest
 * is what the host's end sends, then it shuts down.
 *
 * Properties:
 *   F1. Accepted exactly when the bytes begin with a header of the magic
 *       and the wanted type (a SPEC's with or without KS_INIT_SAY_STARTED),
 *       its len within the cap, and len more bytes.
 *   F2. Accepted: the body is exactly those len bytes, NUL-terminated past
 *       len; the descriptor is there exactly when one was sent, and it is
 *       close-on-exec.
 *   F3. Refused: no body and no descriptor; either way no descriptor leaks
 *       (the count of open descriptors is what it was).
 *   F4. No access outside the buffers (ASan).
 *   F5. The same bytes as a whole SIGNAL frame (ks_init_parse_signal): a
 *       signal exactly when they are one header of the magic, type SIGNAL
 *       and len 8, then a signo of 1-64 and a reserved 0; -1 otherwise.
 *   F6. Accepted: the flags returned are exactly those the type carried. */
#include "fuzz_common.h"

#include <sys/socket.h>

#define CHECK(c) KS_FUZZ_CHECK(c, "%s", #c)

#include "../init/protocol.h"
#include "../init/spec.h"

#define CAP 4096u
#define FRAME_INPUT_MAX (48u << 10) /* under a socketpair's default buffer: one writer, no thread */

static int ks__open_fds(void) {
  int n = 0;
  DIR *d = opendir("/proc/self/fd");
  struct dirent *e;
  if (d == NULL)
    return -1;
  while ((e = readdir(d)) != NULL)
    n += e->d_name[0] != '.';
  closedir(d);
  return n - 1; /* the directory's own */
}

static void ks__send(int s, const uint8_t *p, size_t n, int fd) {
  union {
    struct cmsghdr align;
    char buf[CMSG_SPACE(sizeof(int))];
  } control;
  struct iovec iov = {.iov_base = (void *) p, .iov_len = n};
  struct msghdr msg;

  memset(&msg, 0, sizeof msg);
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (fd >= 0) {
    struct cmsghdr *c;
    memset(&control, 0, sizeof control);
    msg.msg_control = control.buf;
    msg.msg_controllen = sizeof control.buf;
    c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof fd);
  }
  if (sendmsg(s, &msg, MSG_NOSIGNAL) != (ssize_t) n)
    ks_fuzz_fail("sendmsg of %zu bytes failed: %s", n, strerror(errno));
}

/* F5's rule, written out on its own. */
static int ref_signal(const uint8_t *p, size_t n) {
  uint32_t w[5];
  if (n != sizeof w)
    return -1;
  memcpy(w, p, sizeof w);
  if (w[0] != KS_INIT_FRAME_MAGIC || w[1] != KS_INIT_SIGNAL || w[2] != 8 || w[4] != 0 ||
      (int32_t) w[3] < 1 || (int32_t) w[3] > 64)
    return -1;
  return (int) w[3];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uint32_t want, allowed, flags;
  bool with_fd, split;
  size_t cut;
  const uint8_t *bytes;
  size_t n;
  int sp[2];
  int passed;
  int before;
  char *body = NULL;
  size_t len = 0;
  int fd = -1;
  int r;
  bool valid = false;
  struct ks_init_frame_header h;

  if (size < 2 || size - 2 > FRAME_INPUT_MAX)
    return 0;
  want = (data[0] & 1) ? KS_INIT_STDIN : KS_INIT_SPEC;
  /* ks-init takes SPEC with its flag (KS_INIT_SAY_STARTED), STDIN with none. */
  allowed = want == KS_INIT_SPEC ? KS_INIT_SAY_STARTED : 0;
  flags = allowed;
  with_fd = (data[0] & 2) != 0;
  split = (data[0] & 4) != 0;
  bytes = data + 2;
  n = size - 2;
  cut = n > 0 ? data[1] % n : 0;
  if (n == 0)
    with_fd = false; /* a descriptor needs a byte to ride on */

  before = ks__open_fds();
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0)
    ks_fuzz_fail("socketpair: %s", strerror(errno));
  /* A plain file rides along (a socket in flight in its own peer would be
   * a cycle for the kernel's garbage collector). */
  passed = with_fd ? open("/dev/null", O_RDONLY | O_CLOEXEC) : -1;
  if (with_fd && passed < 0)
    ks_fuzz_fail("open /dev/null: %s", strerror(errno));
  if (split && cut > 0) {
    ks__send(sp[0], bytes, cut, passed);
    ks__send(sp[0], bytes + cut, n - cut, -1);
  } else if (n > 0) {
    ks__send(sp[0], bytes, n, passed);
  }
  if (passed >= 0)
    close(passed);
  shutdown(sp[0], SHUT_WR);

  if (n >= sizeof h) {
    memcpy(&h, bytes, sizeof h);
    valid = h.magic == KS_INIT_FRAME_MAGIC && (h.type & ~allowed) == want && h.len <= CAP &&
            n - sizeof h >= h.len;
  }
  r = ks_init_recv_frame(sp[1], want, CAP, &body, &len, &fd, &flags);
  CHECK((r == 0) == valid); /* F1 */
  if (r == 0) {
    CHECK(flags == (h.type & allowed)); /* F6 */
    CHECK(body != NULL && len == h.len && memcmp(body, bytes + sizeof h, len) == 0 &&
          body[len] == '\0'); /* F2 */
    CHECK((fd >= 0) == with_fd);
    if (fd >= 0)
      CHECK((fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);
  } else {
    CHECK(body == NULL && fd == -1 && len == 0); /* F3 */
  }
  if (fd >= 0)
    close(fd);
  free(body);
  close(sp[0]);
  close(sp[1]);
  CHECK(ks__open_fds() == before); /* F3 */
  CHECK(ks_init_parse_signal(bytes, n) == ref_signal(bytes, n)); /* F5 */
  return 0;
}
