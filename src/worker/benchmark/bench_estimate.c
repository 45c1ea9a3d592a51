/* benchmark: the planner's estimate of a job (rank 0, after the layout was checked), from the
 * input's shapes (models, items, completions) and the options (bootstrap, comparisons), without
 * reading the items: a few hundred microseconds, most of it opening the file. */
#include <math.h>

#include "bench_internal.h"

/* Calibration: bench/calibrate_estimates.py (docs/design.md, 'Planner estimates'): RewardBench v1
 * subsets at 1-30x their size, 10-400 models, 2 or 6 completions per item, 0-20,000 resamples, up to
 * 19,900 pairs compared (with sections: 99,500 comparisons); one rank, page cache warm, on the 2-vCPU
 * VM of bench/README.md. Measured: CPU seconds of the run less those of `--plan` (steady on a loaded
 * machine), split into rank 0's part and the rest by the phases' times (RMDIAG_TIMING=1); each part
 * fitted by least squares (non-negative, relative errors) on its size terms:
 *   rank 0:   FIXED + M x I x CREDIT_RANK0 + compared x CMP_OUT
 *             (creating and committing the outputs; the [M, I] credits gathered and written; one
 *             entry per comparison built and printed in the report; the item tables' term fitted 0)
 *   parallel: M x C x SCORE + M x I x CREDIT + B x I x (1 + M / 64) x DRAW + B x M x K x REPLICATE
 *             + B x compared x CMP_DRAW
 *             (scores read and checked; credits computed and laid out by subset; each replicate's
 *             draws and model-lane sums; each quantity's replicates exchanged and sorted; each
 *             comparison's differences)
 * with M models, I items, C completions, B resamples, K = sections + 1 and compared = pairs x
 * quantities per pair. Over 15 cases (0.02-1.5 s) the fit is within 0.59-1.78x of the measured time
 * (0.59-1.16x for the cases of 50 ms and more, R^2 0.91). */
#define FIXED_S 0.018
#define CREDIT_RANK0_S 2.5e-8
#define CMP_OUT_S 1.1e-5
#define SCORE_S 2.7e-9
#define CREDIT_S 3.4e-8
#define DRAW_S 1.8e-9
#define REPLICATE_S 1.75e-8
#define CMP_DRAW_S 9.8e-9
/* a rank should have at least about 10 ms of work, or the collectives cost more than it saves */
#define MIN_RANK_S 0.01

void bench_estimate(hid_t f, const rd_job *job, rd_job_cost *cost) {
  const bench_opts *o = job->opts;
  /* the shapes alone (validate checked the layout): models; items and completions unless the input
   * holds per-subset accuracies */
  int64_t dm[4], di[4], dc[4];
  if (rd_h5_shape(f, job->group, "model_names", dm, NULL, NULL) == 1) {
    int per_item = rd_h5_shape(f, job->group, "item_subset", di, NULL, NULL) == 1 &&
                   rd_h5_shape(f, job->group, "scores", dc, NULL, NULL) == 2;
    double M = (double)dm[0], I = per_item ? (double)di[0] : 0.0, C = per_item ? (double)dc[1] : 0.0;
    double B = per_item ? (double)o->bootstrap : 0.0;
    int n_sec = o->scheme == BENCH_V2 ? 6 : o->scheme == BENCH_CUSTOM ? o->n_sections : 4 + (o->prior_sets ? 1 : 0);
    double K = n_sec + 1.0;
    double pairs = o->compare_all ? M * (M - 1.0) / 2.0 : (double)o->n_pairs;
    double compared = pairs * (o->compare_sections ? K : 1.0);
    double rank0 = FIXED_S + M * I * CREDIT_RANK0_S + compared * CMP_OUT_S;
    double parallel = M * C * SCORE_S + M * I * CREDIT_S + B * I * (1.0 + M / 64.0) * DRAW_S +
                      B * M * K * REPLICATE_S + B * compared * CMP_DRAW_S;
    cost->seconds = rank0 + parallel;
    cost->serial = rank0 / cost->seconds;
    /* the credits go to ranks in tiles of (model, 4096 items), the replicates by index */
    double tiles = M * ceil(I / BENCH_ITEM_BLOCK), units = fmax(tiles, B);
    double m = fmax(1.0, fmin(units, floor(parallel / MIN_RANK_S)));
    cost->max_ranks = m > 1 << 20 ? 1 << 20 : (int)m;
  }
}
