/* The registry of report kinds: one row per kind, each defined in src/worker/<kind>.c. */
#include <string.h>

#include "rmdiag/kind.h"

extern const rd_kind rd_kind_cm;
extern const rd_kind rd_kind_benchmark;
extern const rd_kind rd_kind_leakage;
extern const rd_kind rd_kind_probe;

static const rd_kind *const registry[] = {
    &rd_kind_cm,
    &rd_kind_benchmark,
    &rd_kind_leakage,
    &rd_kind_probe,
    NULL,
};

const rd_kind *const *rd_kinds(void) { return registry; }

const rd_kind *rd_kind_find(const char *name) {
  for (const rd_kind *const *k = registry; *k; k++)
    if (strcmp((*k)->name, name) == 0) return *k;
  return NULL;
}
