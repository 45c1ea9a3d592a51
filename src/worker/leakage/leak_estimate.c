/* leakage: the planner's estimate of a job (rank 0, after the layout was checked), from the input's
 * shapes (panel rows, names, truth rows, control rows) and the options (resamples, null draws,
 * family), without reading the rows: a few hundred microseconds, most of it opening the file. */
#include <math.h>

#include "leak_internal.h"

/* Calibration: bench/calibrate_estimates.py (docs/design.md, 'Planner estimates'): synthetic panels
 * of 3-20 models, 6-10 series, 1-4 variants, 2-5 seeds and 60-600 months (720 to 1.44 million rows),
 * 0-10,000 resamples, 0-20,000 null draws over families of 5 and 9 series; one rank, page cache warm,
 * on the 2-vCPU VM of bench/README.md. Measured: CPU seconds of the run less those of `--plan`, split
 * into rank 0's part and the rest by the phases' times (RMDIAG_TIMING=1); each part fitted by least
 * squares (non-negative, relative errors) on its size terms:
 *   rank 0:   FIXED + rows x ROW_RANK0 + (2 x B x cells + P x targets) x GATHERED
 *             (every row read and checked on rank 0 and broadcast; the truth join, cells and null
 *             tables every rank builds alike; the per-row datasets and the report; the replicates
 *             gathered, put in order, their percentiles and means; since whole-cell tasks, this last
 *             term is the tasks' when there are at least 8 cells, see below)
 *   parallel: rows x ROW + B x Q x BOOT + P x targets x months x NULL
 *             (the cell and control tasks; each resample draws a cell's rows; each null draw a
 *             sibling per month of its target)
 * with Q panel rows (rows: with the ranking, signal and defense rows), B resamples, P null draws per
 * target. Without reading the rows: cells = min(M x S x V, Q), targets = min(M x V x family, cells),
 * months = min(truth rows / S, Q / cells); the share of rows that are scored is in the constants.
 * Over 11 cases (0.03-3 s) the fit is within 0.69-1.31x of the measured time (R^2 0.94). */
#define FIXED_S 0.024
#define ROW_RANK0_S 1.08e-6
#define GATHERED_S 4.8e-8
#define ROW_S 1.7e-7
#define BOOT_S 6.9e-10
#define NULL_S 1.0e-9
/* a rank should have at least about 10 ms of work, or the collectives cost more than it saves */
#define MIN_RANK_S 0.01

/* Rows of dataset `name` under the job's group, or -1 when it cannot be opened (absent). */
static double rows_of(hid_t f, const rd_job *job, const char *name) {
  int64_t dims[4];
  return rd_h5_shape(f, job->group, name, dims, NULL, NULL) >= 1 ? (double)dims[0] : -1.0;
}

void leak_estimate(hid_t f, const rd_job *job, rd_job_cost *cost) {
  const leak_opts *o = job->opts;
  /* the shapes alone (validate checked the layout) */
  double Q = rows_of(f, job, "model"), T = rows_of(f, job, "truth_series");
  if (Q >= 0 && T >= 0) {
    double M = fmax(1.0, rows_of(f, job, "model_names")), S = fmax(1.0, rows_of(f, job, "series_names"));
    double V = fmax(1.0, rows_of(f, job, "variant_names"));
    double B = (double)o->bootstrap, P = o->n_family >= 2 ? (double)o->null_permutations : 0.0;
    /* a cell per (model, series, variant) with rows; the null's targets are the family's cells, each
     * with the months of its rows that have truth */
    double cells = fmin(M * S * V, Q), targets = fmin(M * V * o->n_family, cells);
    double months = cells > 0 ? fmin(T / S, Q / cells) : 0.0;
    double rows = Q + fmax(0.0, rows_of(f, job, "rank/model")) + fmax(0.0, rows_of(f, job, "signal/model")) +
                  fmax(0.0, rows_of(f, job, "defense/model"));
    /* the replicates' reduction: rank 0's when the tasks are chunks across cells; with whole-cell
     * tasks (at least 8 cells per rank, leak_tasks.c), the tasks' own, counted for a group of up to
     * cells / 8 ranks */
    double reduce = (2.0 * B * cells + P * targets) * GATHERED_S, whole = cells >= LEAK_CHUNKS_PER_RANK ? reduce : 0.0;
    double rank0 = FIXED_S + rows * ROW_RANK0_S + (reduce - whole);
    double parallel = rows * ROW_S + B * Q * BOOT_S + P * targets * months * NULL_S + whole;
    cost->seconds = rank0 + parallel;
    cost->serial = rank0 / cost->seconds;
    /* cells, controls and chunks of replicates and draws are tasks: only the work bounds the ranks */
    double m = fmax(1.0, floor(parallel / MIN_RANK_S));
    cost->max_ranks = m > 1 << 20 ? 1 << 20 : (int)m;
  }
}
