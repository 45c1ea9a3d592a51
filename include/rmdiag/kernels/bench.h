/* The benchmark report's per-item kernels (RewardBench credits): a CPU reference here and a CUDA
 * version in the CUDA module, both filling the same table. A NULL table or entry in a backend
 * means the CPU reference is used. */
#ifndef RMDIAG_BENCH_H
#define RMDIAG_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "rmdiag/kernels/types.h"

/* How a scored item earns credit (docs/reference.md, 'benchmark report'). */
typedef enum rd_bench_rule {
  RD_BENCH_STRICT = 0,     /* 1 iff min(preferred) > max(rejected), else 0 (a tie is wrong) */
  RD_BENCH_TIE_CREDIT = 1  /* (preferred completions tied at the maximum) / (completions at the maximum) */
} rd_bench_rule;

/* A block of models (rows) × consecutive items. Item j of the block has completions
 * offset[j] .. offset[j+1]-1 (global column numbers), the first n_correct[j] preferred. Row r's
 * column c is scores[r * row_stride + (c - col0)], in the stored precision. Scores are finite
 * (checked before the kernel runs). */
typedef struct rd_bench_block {
  int64_t n_rows, n_items;
  const int64_t *offset;     /* [n_items + 1] */
  const int32_t *n_correct;  /* [n_items], each >= 1 and < the item's completion count */
  rd_ftype ftype;
  const void *scores;
  int64_t row_stride, col0;
  rd_bench_rule rule;
} rd_bench_block;

/* Per (row, item) results, row-major [n_rows, n_items]. gap and spread may be NULL. */
typedef struct rd_bench_out {
  double *credit;
  double *gap;     /* min(preferred) - max(rejected), in float64 */
  double *spread;  /* max(preferred) - min(preferred), in float64 */
} rd_bench_out;

struct rd_bench_kernels {
  /* Returns 0, or nonzero with a message in err. */
  int (*credits)(const rd_bench_block *in, rd_bench_out *out, char *err, size_t errlen);
};

/* The CPU reference (also what the CUDA kernel is tested against). */
void rd_bench_credits_cpu(const rd_bench_block *in, rd_bench_out *out);

extern const struct rd_bench_kernels rd_bench_kernels_cpu;

/* Bootstrap sums (CPU): out[l] = sum over j = 0..n-1, in that order, of X[idx[j] * ld + l] for
 * l < L (idx NULL: row j). ld must be a multiple of 8 and X rows readable up to L rounded up to 8. */
void rd_bench_gather_sum(const uint32_t *idx, int64_t n, const double *X, int64_t ld, int64_t L, double *out);
/* The same over int16 lanes (exact; the caller keeps every sum within INT16_MAX); ld a multiple
 * of 32 and rows readable up to L rounded up to 32. */
void rd_bench_gather_sum16(const uint32_t *idx, int64_t n, const int16_t *X, int64_t ld, int64_t L, int16_t *out);
/* The same over uint8 lanes holding 0/1 (ld a multiple of 64, rows readable up to L rounded up to
 * 64, n <= INT16_MAX). */
void rd_bench_gather_mean8(const uint32_t *idx, int64_t n, const uint8_t *X, int64_t ld, int64_t L, double den,
                           double *out);
/* Index of the first of n values that is neither 0 nor 1, or -1. */
int64_t rd_bench_first_nonbinary(const double *x, int64_t n);
/* out[l] = (double)(that int16 sum) / den for l < L. */
void rd_bench_gather_mean16(const uint32_t *idx, int64_t n, const int16_t *X, int64_t ld, int64_t L, double den,
                            double *out);

#endif
