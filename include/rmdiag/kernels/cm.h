/* The cm report's per-pair kernel: p = sigma(r_chosen - r_rejected) per pair and run, summed over
 * runs in run order, separately for runs that trained on the pair's user (TM) and runs that held
 * it out (TG). The CPU reference is in src/kernels/cm_cpu.c, the CUDA version in cm_cuda.cu. */
#ifndef RMDIAG_KERNELS_CM_H
#define RMDIAG_KERNELS_CM_H

#include <stddef.h>
#include <stdint.h>

#include "rmdiag/kernels/types.h"

/* A block of pairs x runs, row-major, rewards in their stored precision; in_train holds 0 or 1 (the
 * reader checks the flags before any kernel sees them, and the kernels count and multiply by them). */
typedef struct rd_cm_block {
  int64_t n_pairs, n_runs;
  rd_ftype ftype;
  const void *reward_chosen, *reward_rejected;
  const uint8_t *in_train;
} rd_cm_block;

/* Per-pair results: TM, TG (NaN when a side has no runs) and the train-run count. */
typedef struct rd_cm_pairs {
  double *tm, *tg;
  int32_t *n_train;
} rd_cm_pairs;

/* The kernel table (rd_backend.cm). Returns 0, or nonzero with a message in err. */
struct rd_cm_kernels {
  int (*pairs)(const rd_cm_block *in, rd_cm_pairs *out, char *err, size_t errlen);
};

/* The CPU reference (also what the CUDA kernel is tested against); returns 0, or -1 when memory
 * runs out. */
int rd_cm_pairs_cpu(const rd_cm_block *in, rd_cm_pairs *out);
/* The CPU kernel a chunk at a time (for callers that stream the rows once): at most
 * rd_cm_chunk_pairs(n_runs) pairs, with a workspace of 2 * rd_cm_chunk_pairs(n_runs) * n_runs doubles. */
int64_t rd_cm_chunk_pairs(int64_t n_runs);
void rd_cm_pairs_cpu_chunk(const rd_cm_block *in, rd_cm_pairs *out, double *work);
extern const struct rd_cm_kernels rd_cm_kernels_cpu;

/* The logistic function, stable for any argument (no overflow past |x| > 709). */
double rd_sigmoid(double x);

#endif
