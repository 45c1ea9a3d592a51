/* Cluster-bootstrap kernels (see resample.h). */
#include "rmdiag/kernels/resample.h"

#include <string.h>

void rd_count_draws(const uint32_t *idx, int64_t n_draws, int64_t U, uint32_t *counts) {
  memset(counts, 0, sizeof(uint32_t) * (size_t)U);
  for (int64_t j = 0; j < n_draws; j++) counts[idx[j]]++;
}

/* Eight partial sums by unit index modulo 8, then combined in lane order: a fixed order that any
 * SIMD width reproduces. */
__attribute__((target_clones("avx512f", "avx2", "default")))
static double dot_counts(const uint32_t *restrict c, const double *restrict x, int64_t U) {
  double lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t u = 0;
  for (; u + 8 <= U; u += 8)
    for (int k = 0; k < 8; k++) lane[k] += (double)c[u + k] * x[u + k];
  for (int k = 0; u + k < U; k++) lane[k] += (double)c[u + k] * x[u + k];
  return ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
}

void rd_weighted_col_sums(const uint32_t *counts, const double *cols_base, int64_t U, int n_cols, double *out) {
  for (int k = 0; k < n_cols; k++) out[k] = dot_counts(counts, cols_base + (int64_t)k * U, U);
}
