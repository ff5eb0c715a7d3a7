#include "spec.h"

#include <stdlib.h>
#include <string.h>

int ks_init_split_argv(const char *body, size_t len, char ***argv_out) {
  size_t count = 0;
  char **argv;
  size_t i = 0;

  *argv_out = NULL;
  if (len == 0 || body[len - 1] != '\0')
    return -1;
  for (size_t j = 0; j < len; j++)
    count += body[j] == '\0';
  if (count > (size_t) 1 << 24)
    return -1;
  argv = calloc(count + 1, sizeof *argv);
  if (argv == NULL)
    return -1;
  for (size_t k = 0; k < count; k++) {
    argv[k] = (char *) body + i;
    i += strlen(body + i) + 1;
  }
  *argv_out = argv;
  return (int) count;
}
