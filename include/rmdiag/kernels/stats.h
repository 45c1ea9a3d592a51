/* The statistics rules every report follows (docs/reference.md, 'Statistics'): float64 sums over fixed blocks, sd with
 * ddof = 1, numpy-linear quantiles, percentile bootstrap intervals, Wilson intervals. */
#ifndef RMDIAG_STATS_H
#define RMDIAG_STATS_H

#include <stddef.h>
#include <stdint.h>

#define RD_WILSON_Z 1.959963984540054
#define RD_SUM_BLOCK 4096

/* Sum in a fixed order: blocks of RD_SUM_BLOCK summed left to right, block sums left to right. */
double rd_sum(const double *x, size_t n);

/* Mean and sd (ddof = 1) of n values; *sd is NaN when n < 2, *mean NaN when n = 0. */
void rd_mean_sd(const double *x, size_t n, double *mean, double *sd);

/* Quantile q of n values, linear interpolation at h = (n - 1) q between order statistics
 * (numpy's default). `work` is reordered in place (selection, not a full sort). */
double rd_quantile_inplace(double *work, size_t n, double q);
/* Several quantiles (q ascending) of n values; `work` is reordered. */
void rd_quantiles_inplace(double *work, size_t n, const double *q, size_t nq, double *out);

/* Sorts doubles ascending (NaN-free input): a radix sort, O(n), in which -0 comes before +0; below
 * RD_SORT_SMALL values, qsort (equal values, -0 and +0 among them, as qsort leaves them). */
#define RD_SORT_SMALL 512
void rd_sort_doubles(double *x, size_t n);
/* Sorts unsigned 64-bit integers ascending: the same radix sort from RD_SORT_SMALL values on, qsort
 * below (and without memory for the radix buffers). */
void rd_sort_u64(uint64_t *x, size_t n);
/* A sort key and the index of what it came from. */
typedef struct rd_key_idx {
  int64_t key;
  int64_t idx;
} rd_key_idx;
/* Sorts pairs by key, then index (indices distinct): the radix sort of rd_sort_doubles when the
 * indices come in increasing order (pairs built in row order) and n >= RD_SORT_SMALL, else qsort. */
void rd_sort_key_idx(rd_key_idx *k, size_t n);
/* Quantiles of n sorted values, same rule as rd_quantiles_inplace. */
void rd_quantiles_sorted(const double *x, size_t n, const double *q, size_t nq, double *out);

/* Wilson score interval for k successes of n with z = RD_WILSON_Z, clamped to [0, 1].
 * Returns 0 (and NaNs) when n = 0. */
int rd_wilson(double k, double n, double *lo, double *hi);

/* 95 % percentile interval of replicate values: the 0.025 and 0.975 quantiles of the finite
 * ones. Returns the number of non-finite replicates dropped; NaNs when none is left.
 * `vals` is reordered. */
size_t rd_percentile_ci95(double *vals, size_t n, double *lo, double *hi);

/* A summary of the defined (non-NaN) values among n. */
typedef struct rd_summary {
  int64_t n;          /* defined values */
  double mean, sd, q05, q25, median, q75, q95;
  double ci_lo, ci_hi;  /* filled by the caller's bootstrap (NaN when off) */
} rd_summary;

/* Fills everything but the interval from the non-NaN values of x. */
int rd_summarize(const double *x, size_t n, rd_summary *s);

/* ---- the same statistics over a sequence cut into contiguous parts (one per rank) ---- */

/* The order rd_sort_doubles sorts in, as unsigned keys (-0 before +0; NaN-free input), and back. */
static inline uint64_t rd_order_key(double d) {
  uint64_t u;
  __builtin_memcpy(&u, &d, sizeof u);
  return (u >> 63) ? ~u : (u | 0x8000000000000000ull);
}
static inline double rd_order_value(uint64_t k) {
  uint64_t u = (k >> 63) ? (k & 0x7fffffffffffffffull) : ~k;
  double d;
  __builtin_memcpy(&d, &u, sizeof d);
  return d;
}

/* The quantile rule in two steps: position h = (n - 1) q split into the order statistic *k and the
 * fraction *g, and numpy's interpolation between the order statistics k (a) and k + 1 (b). */
void rd_quantile_pos(size_t n, double q, size_t *k, double *g);
double rd_quantile_lerp(double a, double b, double g);

/* rd_sum (and rd_mean_sd's second pass) over a sequence held in contiguous parts, with the same
 * bits. NaN values are left out, as rd_summarize leaves them out: positions count the others. A
 * part holding the values at positions [off, off + n) reduces to the values before its first block
 * boundary, the sums of its whole blocks and the values after its last boundary, written to out as
 * [heads, blocks, tails, values...] (at most RD_SUM_PART_MAX(n) doubles); rd_sum_add_part adds the
 * parts in order exactly as rd_sum adds the whole. With `center`, each term is (x - *center)^2.
 * Returns the doubles written. */
#define RD_SUM_PART_MAX(n) ((size_t)3 + 2 * (size_t)RD_SUM_BLOCK + (size_t)(n) / RD_SUM_BLOCK)
size_t rd_sum_part(const double *x, size_t n, int64_t off, const double *center, double *out);
/* Adding parts in order: begin, one add per part (returns the doubles the part takes), end. */
typedef struct rd_sum_state {
  double total, s;
  uint64_t pos;
} rd_sum_state;
void rd_sum_begin(rd_sum_state *z);
size_t rd_sum_add_part(rd_sum_state *z, const double *part);
double rd_sum_end(const rd_sum_state *z);

/* Order statistics of n NaN-free values: out[t] is the value rd_sort_doubles puts at k[t] (any
 * order of k). A radix selection that looks only into
 * the buckets holding targets (a full sort for many targets). Returns -1 when out of memory. */
int rd_order_stats(const double *x, size_t n, const size_t *k, size_t nk, double *out);
/* The distinct values among n finite ones, ascending, with -0 and +0 as one value (+0): what
 * sorting and keeping the values unequal to their predecessor gives. out has room for n. */
size_t rd_distinct_sorted(const double *x, size_t n, double *out);

/* The number of values of x that are not NaN. */
size_t rd_count_defined(const double *x, size_t n);
/* The p-quantile of Student's t with df degrees of freedom (NaN for df <= 0 or p outside (0, 1)),
 * to about 1e-15 relative: t-intervals over seeds (mean +- t(0.975, n - 1) sd / sqrt(n)). */
double rd_t_quantile(double p, double df);

#endif
