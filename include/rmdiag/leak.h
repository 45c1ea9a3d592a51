/* The leakage report (SPEC §6, the NumLeak protocol): the kernel table of its resampling work
 * (bootstrap replicates of a cell's scored rows, factor-shuffle null draws) with the CPU
 * reference, and the reply parsers the numleak importer uses. */
#ifndef RMDIAG_LEAK_H
#define RMDIAG_LEAK_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "rmdiag/rng.h"

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
 * element k - k0 of its outputs; returns 0, or non-zero with a message in err. A NULL table or
 * entry means the CPU reference. */
struct rd_leak_kernels {
  int (*bootstrap)(const rd_leak_boot *in, int64_t k0, int64_t k1, double *r, double *mae, char *err,
                   size_t errlen);
  int (*null_draws)(const rd_leak_null *in, int64_t k0, int64_t k1, int32_t *used, int32_t *hits, char *err,
                    size_t errlen);
};

/* CPU references (src/kernels/leak_cpu.c); return 0, or -1 when memory runs out. */
int rd_leak_bootstrap_cpu(const rd_leak_boot *in, int64_t k0, int64_t k1, double *r, double *mae);
int rd_leak_null_cpu(const rd_leak_null *in, int64_t k0, int64_t k1, int32_t *used, int32_t *hits);

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

/* ---- reply parsers (src/worker/numleak_parse.c) --------------------------------------------- */

/* NumLeak's numeric reply parser (SPEC §6): NFKC, the four dashes to '-', every number followed
 * by % or "percent" and every number followed by bps / basis point(s) (÷ 100) averaged; with no
 * such hit, a reply of at most 30 code points gives its first bare number not touching an ASCII
 * letter, rejected above 100 in absolute value. Returns 1 with *value set, 0 for "no number",
 * -1 when `text` is not valid UTF-8. `text` may be NULL (no number). */
int rd_numleak_parse_numeric(const char *text, double *value);

/* NumLeak's two-month ranking parser (parse_comparative): month_a and month_b are YYYYMM.
 * Returns 0 when the reply picks month_a, 1 for month_b, -1 for no pick (refusal, no candidate
 * month, no text), -2 when `text` is not valid UTF-8. */
int rd_numleak_parse_comparative(const char *text, int32_t month_a, int32_t month_b);

/* The normalisation both parsers apply: NFKC, then U+2212, U+2013, U+2014, U+2010 to '-', then
 * Python's str.strip() white space removed at both ends. Returns a malloc'd string (NULL when
 * `text` is not valid UTF-8 or memory runs out). */
char *rd_numleak_normalize(const char *text);

/* Mean entropy (bits) of the first two tokens from their top alternatives' natural-log
 * probabilities: per token p_i = exp(lp_i), a "rest" bucket 1 - Σ p_i when positive, H =
 * -Σ p log2 p over p > 1e-12. lp holds n_alt[t] values per token, packed. NaN for no tokens. */
double rd_numleak_entropy_bits(const double *lp, const int *n_alt, int n_tokens);

/* Month text → YYYYMM: "YYYY-MM", "YYYYMM", "Month YYYY" (full or three-letter English month
 * names, any case), and, when allow_day, "YYYY-MM-DD". Returns 1 on success. */
int rd_numleak_month(const char *text, int allow_day, int32_t *yyyymm);

#endif
