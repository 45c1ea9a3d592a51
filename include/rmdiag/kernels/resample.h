/* Cluster-bootstrap kernels: a replicate draws units with replacement and sums per-unit
 * statistics with the drawn multiplicities. Sums run over units in a fixed order (eight lanes
 * by unit index modulo 8, combined in lane order), so every rank and every vector width gets the
 * same bits. */
#ifndef RMDIAG_RESAMPLE_H
#define RMDIAG_RESAMPLE_H

#include <stdint.h>

/* counts[u] = multiplicity of unit u among the draws idx[0..n_draws). counts has U entries. */
void rd_count_draws(const uint32_t *idx, int64_t n_draws, int64_t U, uint32_t *counts);

/* out[k] = Σ_u counts[u] · cols[k][u] for k < n_cols, where cols[k] = cols_base + k * U. */
void rd_weighted_col_sums(const uint32_t *counts, const double *cols_base, int64_t U, int n_cols, double *out);

#endif
