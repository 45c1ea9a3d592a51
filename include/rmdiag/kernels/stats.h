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

/* Sorts doubles ascending (NaN-free input): a radix sort, O(n). */
void rd_sort_doubles(double *x, size_t n);
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

/* The p-quantile of Student's t with df degrees of freedom (NaN for df <= 0 or p outside (0, 1)),
 * to about 1e-15 relative: t-intervals over seeds (mean +- t(0.975, n - 1) sd / sqrt(n)). */
double rd_t_quantile(double p, double df);

#endif
