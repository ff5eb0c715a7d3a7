#include "compat.h"

#include <stdatomic.h>

static _Atomic unsigned ks__disabled_features;

void ks_compat_disable(unsigned features) {
  atomic_fetch_or(&ks__disabled_features, features);
}

bool ks_compat_disabled(enum ks_feature feature) {
  return (atomic_load(&ks__disabled_features) & (unsigned) feature) != 0;
}
