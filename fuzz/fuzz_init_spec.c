/* libFuzzer target: ks-init's split of a spec frame's ARGV body into the
 * argv it execs (csrc/init/spec.c).
 *
 * Properties:
 *   - refused (-1) exactly when the body is empty or does not end in NUL;
 *   - otherwise the count is the number of NULs, the vector is NULL-
 *     terminated, its strings tile the body in order (each starts right
 *     after the previous one's NUL) and none reads past the body;
 *   - ASan: no access outside the body. */
#include "fuzz_common.h"

#include <stdlib.h>
#include <string.h>

#define CHECK(c) KS_FUZZ_CHECK(c, "%s", #c)

#include "../init/spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *body = malloc(size ? size : 1);
  char **argv = NULL;
  size_t nuls = 0;
  int n;

  if (body == NULL)
    return 0;
  memcpy(body, data, size);
  for (size_t i = 0; i < size; i++)
    nuls += body[i] == '\0';
  n = ks_init_split_argv(body, size, &argv);
  if (size == 0 || body[size - 1] != '\0') {
    CHECK(n == -1 && argv == NULL);
  } else {
    size_t at = 0;
    CHECK(n >= 0 && (size_t) n == nuls && argv != NULL);
    for (int i = 0; i < n; i++) {
      CHECK(argv[i] == body + at);
      at += strlen(argv[i]) + 1;
      CHECK(at <= size);
    }
    CHECK(at == size && argv[n] == NULL);
  }
  free(argv);
  free(body);
  return 0;
}
