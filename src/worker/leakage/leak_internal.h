/* The leakage report kind, split along its steps: options (leak_options.c), input layout
 * (leak_layout.c), reading, checking and broadcasting the panel (leak_read.c), the truth join, cells,
 * their metrics and bootstrap rows (leak_cells.c), the factor-shuffle null tables (leak_null.c), the
 * controls: fictional series, ranking, residualisation, defenses (leak_controls.c), the task list
 * spread over ranks (leak_tasks.c), the report (leak_report.c) and the run (leakage.c). This header is
 * the seam between those files. */
#ifndef RMDIAG_WORKER_LEAK_INTERNAL_H
#define RMDIAG_WORKER_LEAK_INTERNAL_H

#include <cjson/cJSON.h>
#include <hdf5.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "rmdiag/common/comm.h"
#include "rmdiag/common/h5in.h"
#include "rmdiag/common/progress.h"
#include "rmdiag/common/status.h"
#include "rmdiag/job.h"
#include "rmdiag/kernels/backend.h"
#include "rmdiag/kernels/leak.h"
#include "rmdiag/kernels/rng.h"
#include "rmdiag/kernels/stats.h"
#include "rmdiag/kind.h"

/* Series of a factor-shuffle family: a target and its siblings, whose hits fit a 32-bit mask. */
#define LEAK_MAX_FAMILY 33

/* ---- options (leak_options.c) ---- */

typedef struct leak_opts {
  int64_t bootstrap, null_permutations;
  double tolerance;
  const char *tolerance_rule, *tolerance_compare, *sign_zero;
  int rule_lt, compare_float, sign_exclude_zero;  /* the three strings above, decided once */
  int n_family;
  const char **family;
  int has_holdout;
  int64_t holdout_from;
  const char *signal_series, *benign_attack;
} leak_opts;

extern const rd_option leak_options[];
int leak_parse(rd_job *job, const rd_jobfile *jf, rd_status *st);
void leak_free_opts(void *opts);

/* ---- layout (leak_layout.c) ---- */

/* The datasets of the layout, in the order they are checked. */
enum {
  DS_MODEL_NAMES, DS_SERIES_NAMES, DS_VARIANT_NAMES, DS_FICTIONAL,
  DS_MODEL, DS_SERIES, DS_VARIANT, DS_SEED, DS_MONTH, DS_VALUE, DS_STATUS, DS_ENTROPY, DS_REPLY,
  DS_T_SERIES, DS_T_MONTH, DS_T_VALUE,
  DS_R_MODEL, DS_R_SERIES, DS_R_A, DS_R_B, DS_R_PICK,
  DS_G_MODEL, DS_G_MONTH, DS_G_SIGNAL, DS_G_RECALL,
  DS_D_DEFENSE, DS_D_ATTACK, DS_D_MODEL, DS_D_MONTH, DS_D_BLOCKED, DS_D_NAMES, DS_A_NAMES,
  DS_COUNT
};

typedef struct leak_layout {
  rd_dsinfo ds[DS_COUNT];
  int has[DS_COUNT];
  int has_rank, has_signal, has_defense;  /* the optional groups rank/, signal/, defense/ */
} leak_layout;

/* Checks names, classes and shapes of every dataset present (rank 0, file open). */
int leak_check_layout(hid_t f, const rd_job *job, leak_layout *L, rd_status *st);
int leak_validate(const rd_ctx *ctx, const rd_job *job, const rd_jobfile *jf, rd_status *st);
/* The planner's estimate of the job (rank 0, after validate; leak_estimate.c). */
void leak_estimate(hid_t f, const rd_job *job, rd_job_cost *cost);

/* ---- the input, read and checked on rank 0 and broadcast (leak_read.c) ---- */

enum { LEAK_NAMES_MODEL, LEAK_NAMES_SERIES, LEAK_NAMES_VARIANT, LEAK_NAMES_DEFENSE, LEAK_NAMES_ATTACK, LEAK_NAMES_N };

typedef struct leak_names {
  char *buf;
  int64_t *off;
  int64_t n;
} leak_names;

typedef struct leak_data {
  int64_t M, S, V, Q, T, R, G, D, ND, NA;
  int has_fictional, has_entropy, has_rank, has_signal, has_defense;
  uint8_t *fictional;                                   /* [S] */
  int32_t *model, *series, *variant, *seed, *month;    /* [Q] */
  double *value, *entropy;                              /* [Q] */
  uint8_t *status;                                      /* [Q] */
  int32_t *t_series, *t_month;                          /* [T] */
  double *t_value;
  int32_t *r_model, *r_series, *r_a, *r_b;              /* [R] */
  int8_t *r_pick;
  int32_t *g_model, *g_month;                           /* [G] */
  double *g_signal, *g_recall;
  int32_t *d_defense, *d_attack, *d_model, *d_month;    /* [D] */
  uint8_t *d_blocked;
  /* options resolved against the names */
  int32_t family[LEAK_MAX_FAMILY];
  int32_t n_family, signal_series, benign_attack;
  leak_names names[LEAK_NAMES_N];  /* rank 0 only */
} leak_data;

/* Name `i` of list `which` (LEAK_NAMES_*), "?" where names are not held. */
const char *leak_name_of(const leak_data *d, int which, int64_t i);
void leak_data_free(leak_data *d);
/* Rank 0: reads every dataset and checks every value; errors name the lowest offending row. */
int leak_read(hid_t f, const rd_job *job, const leak_layout *L, leak_data *d, rd_status *st);
/* Every rank gets the sizes and the numeric arrays (names stay on rank 0). */
void leak_share(const rd_ctx *ctx, leak_data *d);

/* A sort key and the row it came from, sorted by key, then row (rd_sort_key_idx). */
typedef rd_key_idx leak_kv;

/* ---- derived tables, the same on every rank (leak_cells.c, leak_null.c) ---- */

typedef struct leak_work {
  const leak_opts *o;
  const leak_data *d;
  int64_t tol_micro;
  /* truth */
  int64_t *t_keys;   /* sorted (series << 24 | month) */
  double *t_vals;
  double *row_truth; /* [Q] NaN when none */
  /* cells */
  int64_t C;
  int64_t *cell_key;     /* [C] (model*S + series)*V + variant */
  int32_t *row_cell;     /* [Q] cell of each row, -1 for fictional series */
  int64_t *cell_off;     /* [C+1] rows of each cell, in row order, in cell_rows */
  int64_t *cell_rows;
  /* bootstrap */
  int64_t NB;            /* cells with a scored row */
  int64_t *boot_cell;    /* [NB] */
  int64_t *boot_off;     /* [NB+1] */
  double *boot_rows;     /* [boot_off[NB]][8], 64-byte aligned */
  uint64_t *boot_id;
  rd_leak_boot boot;
  /* null */
  int64_t NT;            /* null targets (cells whose series is in the family) */
  int64_t *null_cell;    /* [NT] */
  int64_t *null_off;
  uint32_t *null_avail, *null_hit;
  uint64_t *null_id;
  rd_leak_null null;
  /* chunks of the replicates (leak_tasks.c); "whole": one chunk per boot cell (null target), whose
   * task returns the cell's interval (the target's mean) rather than its replicates (draws) */
  int64_t n_boot_chunks, n_null_chunks;
  int64_t *boot_bounds, *null_bounds;
  int boot_whole, null_whole;
  const rd_backend *backend;
  rd_progress *prog;
  int64_t prog_done;
} leak_work;

void leak_work_free(leak_work *w);
/* Binary search of `key` among n sorted keys; -1 when absent. */
int64_t leak_find_key(const int64_t *keys, int64_t n, int64_t key);
/* The truth of (series, month); NaN when none. */
double leak_truth_at(const leak_work *w, int64_t series, int64_t month);
/* |est - truth| within the tolerance under the job's rule and comparison. */
int leak_within_tol(const leak_work *w, double e, double t);
/* A row is scored when it was parsed and its (series, month) has truth. */
static inline int leak_scored(const leak_work *w, int64_t row) {
  return w->d->status[row] == 0 && !isnan(w->row_truth[row]);
}
void leak_cell_parts(const leak_work *w, int64_t c, int64_t *m, int64_t *s, int64_t *v);

/* The truth of every panel row (sorted truth keys), then the cells: (model, series, variant) of the
 * real series, rows in row order. */
int leak_build_truth(leak_work *w, rd_status *st);
int leak_build_cells(leak_work *w, rd_status *st);
/* The packed bootstrap rows of every cell with a scored row. */
int leak_build_boot(leak_work *w, const rd_stream *stream, rd_status *st);
/* The factor-shuffle tables of the cells whose series is in the family (leak_null.c). */
int leak_build_null(leak_work *w, const rd_stream *stream, rd_status *st);

/* ---- metrics and the per-cell task (leak_cells.c) ---- */

enum {
  MT_NROWS, MT_NPARSED, MT_NNOTRUTH, MT_NSCORED, MT_PR, MT_PR_LO, MT_PR_HI, MT_R, MT_MAE, MT_NWITHIN, MT_WITHIN,
  MT_W_LO, MT_W_HI, MT_NSIGN, MT_NSIGNOK, MT_SIGN, MT_S_LO, MT_S_HI, MT_SLOPE, MT_INTERCEPT, MT_N
};

/* A growing vector of doubles: what each task hands back. */
typedef struct leak_dvec {
  double *v;
  int64_t n, cap;
} leak_dvec;
int leak_dv_push(leak_dvec *a, double x);
int leak_dv_push_n(leak_dvec *a, const double *x, int64_t n);

/* The metrics of a set of panel rows (indices in row order). */
void leak_metrics_of(const leak_work *w, const int64_t *rows, int64_t n, double *out);
/* Mean and median of the values (x is reordered); NaN when none. */
void leak_mean_median(double *x, int64_t n, double *mean, double *median);
/* One cell: [pooled metrics][n seeds][seed, metrics]...[holdout before, from][n_entropy, mean, median]
 * (the holdout pair only with holdout_from). Returns 0, or -1 when memory runs out. */
int leak_task_cell(const leak_work *w, int64_t c, leak_dvec *out);
/* Where the holdout pair (or, without it, the entropy triple) starts in a cell's vector. */
int64_t leak_cell_tail(const double *v);

/* ---- controls (leak_controls.c); each returns 0, or -1 when memory runs out ---- */

/* Fictional series, per model: [model, n_rows, n_parsed, parse_rate, lo, hi, n_entropy, mean, median]. */
#define LEAK_FICT_W 9
int leak_task_fictional(const leak_work *w, leak_dvec *out);
/* Ranking, per (model, series): [model, series, n_rows, n_picked, parse_rate, n_scored, n_correct,
 * accuracy, lo, hi, n_tie, n_no_truth]. */
#define LEAK_RANK_W 12
int leak_task_ranking(const leak_work *w, leak_dvec *out);
/* Residualisation, per model: [model, n, gamma, r_signal_truth, r_residual_truth, leak_share,
 * r_signal_recall]. */
#define LEAK_RESID_W 7
int leak_task_residual(const leak_work *w, leak_dvec *out);
/* Defenses: per (defense, model) [defense, model, n, blocked, frac, lo, hi, months, leaked, worst_case,
 * n_benign, benign_parsed], then per defense over all models [defense, n, blocked, frac, lo, hi, months,
 * leaked, worst_case], each list preceded by its length. */
#define LEAK_DEF_W 12
#define LEAK_POOL_W 9
int leak_task_defense(const leak_work *w, leak_dvec *out);

/* ---- the task list (leak_tasks.c) ---- */

/* Tasks: the C cells, then one per control, then the bootstrap chunks, then the null chunks. */
enum { CTL_FICTIONAL, CTL_RANKING, CTL_RESIDUAL, CTL_DEFENSE, CTL_N };
/* A whole boot cell's task result: r's interval, mae's interval, the replicates r dropped; a whole null
 * target's: the draws that used a month and their mean within. */
enum { LEAK_BOOT_W = 5, LEAK_NULL_W = 2 };
/* Bootstrap (null) chunks per rank; with at least this many cells (targets) per rank, a chunk is a
 * whole cell (target) */
#define LEAK_CHUNKS_PER_RANK 8
/* A boot cell's B replicates of r and of mae (both reordered) reduced to out[LEAK_BOOT_W]; a null
 * target's P draws (NaN: no month used; v reordered) reduced to out[LEAK_NULL_W]. The tasks of whole
 * cells and rank 0 (for chunks across cells) reduce with these, so both give the same bits. */
void leak_boot_reduce(double *r, double *mae, int64_t B, double *out);
void leak_null_reduce(double *v, int64_t P, double *out);

/* Refuses, before any replicate is drawn, a job whose results could not be gathered. */
int leak_size_check(const leak_work *w, const rd_job *job, rd_status *st);
/* Cuts the replicates into chunks (8 per rank) and gives every task its cost; *cost is malloc'd. */
void leak_plan_tasks(const rd_ctx *ctx, leak_work *w, double **cost, int64_t *n_tasks);
/* The replicates of the tasks this rank will run (for its progress line). */
int64_t leak_own_replicates(const rd_ctx *ctx, const leak_work *w, const double *cost, int64_t n_tasks);
/* rd_run_tasks' task function (arg: the leak_work). */
int leak_task(int64_t task, void *arg, double **out, int64_t *n_out, rd_status *st);

/* ---- the report (leak_report.c) ---- */

/* Rank 0: the result object from the tasks' vectors (the stdout summary is leak_view.c's). */
int leak_report(const leak_work *w, double **res, const int64_t *lens, cJSON **out, rd_status *st);
/* /leak/abs_error (NaN where not scored), /leak/within, /leak/truth (NaN where none), /leak/cell. */
int leak_write_h5(hid_t h5, const leak_work *w, rd_status *st);

/* ---- for readers (leak_view.c, leak_extras.c) ---- */

extern const rd_kind rd_kind_leakage;
/* Results a reader could misread (docs/reference.md, 'Warnings'), from the result. */
cJSON *leak_warnings(const cJSON *result);
/* The output datasets that join rows back to the panel: /leak/estimate, /leak/month. */
int leak_write_joins(hid_t h5, const leak_work *w, rd_status *st);
/* The kind's view of a report: cells and controls; figures. */
int leak_view(const cJSON *report, const char *h5, rd_view *v, rd_status *st);

#endif
