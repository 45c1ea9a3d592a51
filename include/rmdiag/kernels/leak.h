/* The leakage report (the NumLeak protocol, docs/reference.md 'leakage report'): the kernel table of its resampling work
 * (bootstrap replicates of a cell's scored rows, factor-shuffle null draws) with the CPU
 * reference. */
#ifndef RMDIAG_KERNELS_LEAK_H
#define RMDIAG_KERNELS_LEAK_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "rmdiag/kernels/rng.h"

/* ---- bootstrap of the cells' scored rows ------------------------------------------------------
 * Cell c owns the packed rows row_off[c] .. row_off[c+1]-1. Each row is 8 doubles:
 * (de, dt, de*de, dt*dt, de*dt, |e - t|, 0, 0) with de = e - mean(e), dt = t - mean(t) over the
 * cell's scored rows. Replicate b of cell c is the flat index k = c*B + b; it draws n_c row
 * indices rd_rng_below_u32(stream, (cell_id[c] << 32) | b, j, n_c), j = 0..n_c-1, sums the drawn rows
 * in draw order and turns the sums into r* and mae* (rd_leak_boot_finish). */
typedef struct rd_leak_boot {
  int64_t n_cells;
  int64_t B;                 /* replicates per cell */
  const int64_t *row_off;    /* [n_cells + 1] */
  const double *rows;        /* [row_off[n_cells]][8] */
  const uint64_t *cell_id;   /* [n_cells] stream id of each cell */
  rd_stream stream;          /* purpose leak.bootstrap */
} rd_leak_boot;

/* ---- factor-shuffle null ----------------------------------------------------------------------
 * Target t owns the months month_off[t] .. month_off[t+1]-1 (the months where the target has a
 * scored row, in month order). For each such month, bit j of avail is set when sibling j has an
 * estimate that month, bit j of hit when that estimate is within tolerance of the target's truth.
 * Draw p of target t is the flat index k = t*P + p: month i (position i within the target)
 * draws sibling j = rd_rng_below_u32(stream, (target_id[t] << 32) | p, i, n_sib); the draw's counts
 * are the months whose sibling has an estimate (used) and those that are within (hits). */
typedef struct rd_leak_null {
  int64_t n_targets;
  int64_t P;                  /* draws per target */
  uint32_t n_sib;             /* siblings per target (family size - 1), 1..32 */
  const int64_t *month_off;   /* [n_targets + 1] */
  const uint32_t *avail, *hit;/* [month_off[n_targets]] bit masks */
  const uint64_t *target_id;  /* [n_targets] */
  rd_stream stream;           /* purpose leak.null */
} rd_leak_null;

/* The kernel table (rd_backend.leak). Each entry computes the flat range [k0, k1) and writes
 * element k - k0 of its outputs; returns 0, or non-zero with a message in err. */
struct rd_leak_kernels {
  int (*bootstrap)(const rd_leak_boot *in, int64_t k0, int64_t k1, double *r, double *mae, char *err,
                   size_t errlen);
  int (*null_draws)(const rd_leak_null *in, int64_t k0, int64_t k1, int32_t *used, int32_t *hits, char *err,
                    size_t errlen);
};

/* CPU references (src/kernels/leak_cpu.c); return 0, or -1 when memory runs out. */
int rd_leak_bootstrap_cpu(const rd_leak_boot *in, int64_t k0, int64_t k1, double *r, double *mae);
int rd_leak_null_cpu(const rd_leak_null *in, int64_t k0, int64_t k1, int32_t *used, int32_t *hits);
extern const struct rd_leak_kernels rd_leak_kernels_cpu;

/* r* and mae* of one replicate from its n draws' sums s[0..5] (same order as a row); r* is NaN
 * when the resample has no spread in either variable or n < 3, and clipped to [-1, 1]. Shared by
 * every backend. */
#ifdef __CUDACC__
__host__ __device__
#endif
static inline void rd_leak_boot_finish(const double s[6], int64_t n, double *r, double *mae) {
  double nn = (double)n;
  double vx = nn * s[2] - s[0] * s[0], vy = nn * s[3] - s[1] * s[1];
  double cxy = nn * s[4] - s[0] * s[1];
  /* a resample of one repeated value leaves only rounding in vx or vy: undefined */
  int ok = n >= 3 && vx > 1e-12 * nn * s[2] && vy > 1e-12 * nn * s[3];
  double rr = ok ? cxy / sqrt(vx * vy) : (double)NAN;
  /* rounding can carry |r| past 1 (e.g. an exactly linear resample): clipped, as numpy's corrcoef does */
  *r = rr > 1.0 ? 1.0 : rr < -1.0 ? -1.0 : rr;
  *mae = n > 0 ? s[5] / nn : (double)NAN;
}

#endif
