/* The cm report kind, split along its steps: options (cm_options.c), input layout (cm_layout.c),
 * numbering the users (cm_users.c), reading and checking the input (cm_read.c), the per-pair
 * values, summaries and user sums (cm_compute.c), strata and bootstrap (cm_tasks.c), the report
 * (cm_report.c) and the run that strings them together (cm.c). This header is the seam between
 * those files. */
#ifndef RMDIAG_WORKER_CM_INTERNAL_H
#define RMDIAG_WORKER_CM_INTERNAL_H

#include <cjson/cJSON.h>
#include <hdf5.h>
#include <stdint.h>
#include <stdio.h>

#include "rmdiag/common/comm.h"
#include "rmdiag/common/h5in.h"
#include "rmdiag/common/progress.h"
#include "rmdiag/common/status.h"
#include "rmdiag/job.h"
#include "rmdiag/kernels/rng.h"
#include "rmdiag/kernels/stats.h"
#include "rmdiag/kind.h"

/* Pairs per block: the unit of the row partition (independent of the rank count). */
#define CM_BLOCK 2048

/* ---- options (cm_options.c) ---- */

typedef struct cm_stratum {
  const char *covariate;
  int64_t bins;  /* 0: categorical */
} cm_stratum;

typedef struct cm_opts {
  int64_t bootstrap;
  int n_strata;
  cm_stratum *strata;
} cm_opts;

extern const rd_option cm_options[];
int cm_parse(rd_job *job, const rd_jobfile *jf, rd_status *st);
void cm_free_opts(void *opts);

/* ---- layout (cm_layout.c) ---- */

/* The names of a categorical covariate stored as strings, sorted by bytes (rank 0). */
typedef struct cm_categories {
  int64_t n;
  char *buf;     /* n NUL-terminated names packed */
  int64_t *off;  /* [n + 1] */
} cm_categories;

typedef struct cm_layout {
  rd_dsinfo rc, rr, flag, user;
  int64_t P, R;
  rd_ftype ftype;
  int64_t offset[3];  /* file offsets of rc, rr, in_train when they can be mapped, else -1 */
  int64_t user_offset;  /* file offset of integer ids stored as 64-bit little-endian words, else -1 */
  rd_dsinfo *cov;     /* one per stratum (rank 0) */
  cm_categories *cats;  /* one per stratum (rank 0): names of a string covariate (n = 0 for numbers) */
  int has_ids[2];     /* the input has pair_id [P] and run_id [R] (integers or strings), for messages */
} cm_layout;

/* Checks names, types and shapes; runs on any one rank with the file open. */
int cm_check_layout(hid_t f, const rd_job *job, cm_layout *L, rd_status *st);
int cm_validate(const rd_ctx *ctx, const rd_job *job, const rd_jobfile *jf, rd_status *st);
/* Finds which of the [P, R] datasets can be mapped straight from the file (rank 0). */
void cm_layout_offsets(hid_t f, cm_layout *L);
/* The planner's estimate of the job (rank 0, after validate; cm_estimate.c). */
void cm_estimate(hid_t f, const rd_job *job, rd_job_cost *cost);

/* ---- string categories (cm_categories.c) and ids for messages (cm_ids.c) ---- */

/* A string covariate (the category names, "" missing): codes[p] = the index of pair p's name in byte
 * order (NaN when missing), the sorted names in *c. */
int cm_categories_read(hid_t f, const char *file, const rd_dsinfo *info, double *codes, cm_categories *c,
                       rd_status *st);
void cm_categories_free(cm_categories *c);
/* Whether the input has usable pair_id / run_id datasets (rank 0, sets L->has_ids). */
void cm_ids_find(hid_t f, const rd_job *job, cm_layout *L);
/* The user-split error for pair p, run r (key p * R + r): names the run and the pairs by the input's
 * own ids when it has them, with their indices. */
int cm_split_fail(const rd_job *job, const cm_layout *L, const char *user, int64_t p, int64_t r, int64_t first,
                  unsigned flag, unsigned first_flag, rd_status *st);

/* ---- reading and checking the input (cm_read.c) ---- */

typedef struct cm_users {
  int64_t U;
  int32_t *of_pair;     /* user index of each pair, numbered by first appearance: rank 0 [P], the
                         * other ranks their own pairs [hi - lo] */
  int64_t *first_pair;  /* [U] */
  char *labels;         /* packed NUL-terminated labels for messages */
  int64_t *label_off;   /* [U + 1] */
  size_t labels_len;
} cm_users;

typedef struct cm_rows {
  int64_t lo, hi;             /* pair range */
  const void *rc, *rr;        /* [hi - lo, R] in the stored precision (mapped or owned) */
  const uint8_t *flag;
  void *own[3];               /* buffers to free */
  rd_h5_map map[3];           /* mappings to undo */
} cm_rows;

/* What phases 1-2 leave for the computation: the layout, users, covariates (rank 0) and the
 * rank's checked rows. */
typedef struct cm_input {
  cm_layout L;
  cm_users u;
  cm_rows w;
  double **covs;  /* one per stratum; rank 0 */
  hid_t f;        /* open (MPI-IO) only when some dataset is read rather than mapped */
} cm_input;

/* Per-pair values: rank 0 holds all P pairs once gathered (its own pairs come first), the other
 * ranks their own pairs [lo, hi) only. */
typedef struct cm_values {
  int64_t P, lo, hi;
  double *tm, *tg, *cm;
  int32_t *n_train;
  int computed;          /* the kernel ran while the rows were checked */
  double *F;             /* per-user sums, every rank, see cm_user_sums */
  rd_summary sum[3];     /* TM, TG, CM summaries (rank 0) */
} cm_values;
void cm_values_free(cm_values *v);

/* ---- users (cm_users.c) ---- */

void cm_users_free(cm_users *u);
/* Rank 0, string ids: reads the whole column and numbers every pair's user (of_pair: [P]). */
int cm_users_read_all(hid_t f, const rd_job *job, const cm_layout *L, cm_users *u, rd_status *st);
/* Collective: every rank's users of pairs [lo, hi), numbered by first appearance. Integer ids are
 * numbered where they are (each rank its own ids, rank 0 merging the ranks' lists in rank order);
 * string ids come numbered from rank 0 (cm_users_read_all there). f: the input open on every rank
 * (MPI-IO) when integer ids cannot be mapped, else invalid. */
int cm_users_load(const rd_ctx *ctx, const rd_job *job, const cm_layout *L, hid_t f, int64_t lo, int64_t hi,
                  cm_users *u, rd_status *st);

/* ---- reading and checking (cm_read.c) ---- */

void cm_rows_free(cm_rows *w);
void cm_input_free(cm_input *in, int n_strata);
/* Phases 1-2 (collective): rank 0 checks the layout and reads the covariates; every rank numbers
 * its users and maps or reads its rows; the values, then the user split, are checked, each ending
 * agreed. With v (a run on the CPU backend), the per-pair kernel runs in the same pass over the rows
 * (v->computed), a chunk at a time while the chunk is in cache. */
int cm_load(const rd_ctx *ctx, const rd_job *job, cm_input *in, cm_values *v, rd_status *st);
/* Every check the report would make on the input's values, without computing it. */
int cm_check(const rd_ctx *ctx, const rd_job *job, const rd_jobfile *jf, rd_status *st);

/* ---- computing (cm_compute.c) ---- */

/* Allocates the per-pair arrays (rank 0: [P], others [hi - lo]). */
void cm_values_alloc(const rd_ctx *ctx, int64_t P, int64_t lo, int64_t hi, cm_values *v);
/* Phases 3-4 (collective): the backend kernel over the rank's rows unless it already ran, then the
 * summaries of TM, TG, CM (where the values are), the per-user sums (every rank) and the per-pair
 * values gathered on rank 0. Frees the rows once used. */
int cm_pair_values(const rd_ctx *ctx, const rd_job *job, cm_input *in, cm_values *v, rd_status *st);
/* Per-user sums and counts of TM, TG, CM over the pairs where each is defined, stored by column:
 * F[k * U + u] for k = sum TM, count TM, sum TG, count TG, sum CM, count CM. Each user's sums run
 * over its pairs in pair order (the ranks add their pairs in turn, the running sums passed on). */
int cm_user_sums(const rd_ctx *ctx, const cm_users *u, int64_t n, const double *tm, const double *tg,
                 const double *cm, double **F);

/* ---- the report's tasks (cm_tasks.c) ---- */

/* The report's tasks, spread over ranks (collective): the strata of each covariate and the writing
 * of the per-pair datasets to h5 (on rank 0, which holds the per-pair values) and chunks of
 * bootstrap replicates; rank 0 receives res[k]: the summaries of TM, TG, CM (k < 3), the strata
 * (3 + s), and the replicates in order (boot, 3 per replicate). */
typedef struct cm_task_results {
  int64_t n_tasks;
  double **res;
  int64_t *lens;
  double *boot;  /* [3 * bootstrap] (rank 0) */
} cm_task_results;
int cm_run_tasks(const rd_ctx *ctx, const rd_job *job, const rd_jobfile *jf, const cm_input *in, const cm_values *v,
                 hid_t h5, cm_task_results *t, rd_status *st);
void cm_task_results_free(cm_task_results *t);

/* ---- the report (cm_report.c) ---- */

/* Rank 0: the report from the tasks' results, the bootstrap replicates and the user sums. */
int cm_report(const rd_job *job, const cm_layout *L, const cm_users *u, const double *cm, const double *F,
              double *boot, int64_t B, double **res, cJSON **out, rd_status *st);
/* The per-pair datasets of the output. */
int cm_write_h5(hid_t h5, int64_t P, int64_t R, const double *tm, const double *tg, const double *cm,
                const int32_t *n_train, rd_status *st);

/* ---- for readers (cm_extras.c, cm_view.c) ---- */

extern const rd_kind rd_kind_cm;
/* Rank 0, after cm_report and cm_write_h5: strata intervals, the most memorized pairs, the join datasets
 * (/cm/pair_id, /cm/user_index), the warnings; then the summary on stdout and the warnings on stderr. */
int cm_extras(const rd_ctx *ctx, const rd_job *job, const rd_jobfile *jf, const cm_input *in, const cm_values *v,
              rd_run_out *out, rd_status *st);
/* The kind's view of a report (tables, warnings, figures from the output .h5). */
int cm_view(const cJSON *report, const char *h5, rd_view *v, rd_status *st);

#endif
