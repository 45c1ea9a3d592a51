/* The statistics rules (stats.h) over values spread over the ranks: each rank holds one contiguous
 * part of every sequence, parts in rank order. Results carry the same bits as the single-array
 * functions on the whole sequence (rd_sum's fixed blocks, exact order statistics), for any rank
 * count, and no rank ever holds more than its own part. */
#ifndef RMDIAG_DSTATS_H
#define RMDIAG_DSTATS_H

#include <stddef.h>
#include <stdint.h>

#include "rmdiag/common/comm.h"
#include "rmdiag/kernels/stats.h"

/* Collective. Each rank's counts n[s] of n_sets sequences: off[s] (the rank's first position) and
 * total[s], on every rank. */
int rd_dist_counts(const rd_ctx *ctx, int n_sets, const size_t *n, int64_t *off, int64_t *total);

/* Collective. rd_sum of each whole sequence s without its NaN values (x[s]: the rank's n[s] values,
 * its first defined one at position off[s] among the defined values); with centers, of
 * (x - centers[s])^2 as rd_mean_sd's second pass. The sums reach rank 0 only. */
int rd_dist_sums(const rd_ctx *ctx, int n_sets, const double *const *x, const size_t *n, const int64_t *off,
                 const double *centers, double *sums);

/* Collective. Order statistics of sequences without their NaN values: value[t] is the value
 * rd_sort_doubles puts at k[t] (0-based, below the number of defined values) in sequence set[t], on
 * every rank. A radix selection: a histogram of the keys' top 16 bits, then 8 bits at a time among
 * the values that share the targets' prefixes (seven small all-reduces, whatever the ranks and the
 * values); a sequence of fewer than RD_SORT_SMALL values is gathered and sorted as a whole (that
 * sort's order of -0 and +0 depends on their positions). Meant for a few targets. */
int rd_dist_order_stats(const rd_ctx *ctx, int n_sets, const double *const *x, const size_t *n, int n_targets,
                        const int *set, const int64_t *k, double *value);

/* What a pass that makes or reads the values can note on the way, so that rd_dist_summaries reads
 * them twice fewer: each sequence's count of defined values on this rank and the histogram of their
 * order keys' top 16 bits. rd_dist_notes_add takes the rank's values of one sequence, in pieces in
 * any order; init returns -1 when out of memory. */
typedef struct rd_dist_notes {
  int n_sets;
  size_t *defined;
  uint32_t *hist;
} rd_dist_notes;
int rd_dist_notes_init(rd_dist_notes *nt, int n_sets);
void rd_dist_notes_add(rd_dist_notes *nt, int set, const double *x, size_t n);
void rd_dist_notes_free(rd_dist_notes *nt);

/* Collective. rd_summarize of each sequence (x[s]: the rank's part of n[s] values, NaN left out as
 * rd_summarize does), on rank 0: n, mean, sd and the five quantiles (the interval fields NaN).
 * notes: what a pass before noted of exactly these values, or NULL (one pass here notes them). */
int rd_dist_summaries(const rd_ctx *ctx, int n_sets, const double *const *x, const size_t *n,
                      const rd_dist_notes *notes, rd_summary *out);

#endif
