/* The benchmark report kind, split along its steps: options and the official schemes
 * (bench_options.c), the input layout (bench_layout.c), rank 0's item tables (bench_read.c), the
 * plan that resolves the scheme against the input (bench_plan.c), each rank's tiles of scores
 * (bench_rows.c), per-item credits (bench_compute.c), scoring (bench_score.c), the distributed
 * bootstrap (bench_bootstrap.c), the report (bench_report.c) and the run (bench.c). This header is
 * the seam between those files. */
#ifndef RMDIAG_WORKER_BENCH_INTERNAL_H
#define RMDIAG_WORKER_BENCH_INTERNAL_H

#include <cjson/cJSON.h>
#include <hdf5.h>
#include <stdint.h>
#include <stdio.h>

#include "rmdiag/common/comm.h"
#include "rmdiag/common/h5in.h"
#include "rmdiag/common/options.h"
#include "rmdiag/common/progress.h"
#include "rmdiag/common/status.h"
#include "rmdiag/job.h"
#include "rmdiag/kernels/backend.h"
#include "rmdiag/kernels/bench.h"
#include "rmdiag/kernels/rng.h"
#include "rmdiag/kind.h"

/* Items per block: with the models, the unit of the work split (independent of the rank count). */
#define BENCH_ITEM_BLOCK 4096

/* ---- options and schemes (bench_options.c) ---- */

enum { BENCH_V1 = 0, BENCH_V2 = 1, BENCH_CUSTOM = 2 };

typedef struct bench_section {
  const char *name;
  int n;                 /* subsets */
  const char **subsets;
  double *weights;
} bench_section;

/* Parsed job options. Strings point into the job file's JSON or into static tables. */
typedef struct bench_opts {
  int scheme;            /* BENCH_V1, BENCH_V2, BENCH_CUSTOM */
  rd_bench_rule rule;
  int n_sections;
  bench_section *sections;
  const char *ties_subset;  /* subset scored with the Ties composite, or NULL */
  int prior_sets, allow_missing;
  int64_t bootstrap;
  int compare_all;
  int n_pairs;
  const char **pair_a, **pair_b;
  int compare_sections;  /* compare every section of each pair as well as the score */
  const char *adjust;    /* "none" or "holm": p-values adjusted across the family of comparisons */
  int holm;              /* adjust is "holm" */
  int scheme_given;      /* the job names its scheme (else the input's source attribute chooses it) */
  int source;            /* the RewardBench version the input's source attribute names: 1, 2, or 0 (rank 0) */
} bench_opts;

extern const rd_option bench_options[];
int bench_parse(rd_job *job, const rd_jobfile *jf, rd_status *st);
void bench_free_opts(void *opts);
/* The old leaderboard's Prior Sets section (rewardbench-v1 with "prior_sets"). */
extern const bench_section bench_prior_sets;
/* Whether an official scheme knows a subset (scored, or carried by its result files unscored). */
int bench_known_subset(const bench_opts *o, const char *name);
/* A job without "scheme": the official scheme of the RewardBench version the input's source attribute
 * names (2: rewardbench-v2, else rewardbench-v1), set in the options and in the effective options. */
int bench_scheme_from_source(bench_opts *o, cJSON *effective, int source, const rd_job *job, rd_status *st);
/* The version the group's source attribute names: 2 for "rewardbench2", 1 for "rewardbench", else 0. */
int bench_read_source(hid_t f, const char *group);

/* ---- input layout (bench_layout.c) ---- */

/* The datasets found under the job's group and the lengths they agree on. */
typedef struct bench_layout {
  int accuracy_mode;      /* per-subset accuracies instead of per-item scores */
  int has_given;          /* given_credit present (per-item form) */
  int64_t M, S, I, C;     /* models, subsets, items, completion columns (I, C: per-item form) */
  rd_dsinfo model_names, subset_names;
  rd_dsinfo item_subset, item_offset, n_correct, scores, given;  /* per-item form */
  rd_dsinfo accuracy;     /* accuracy form */
} bench_layout;

/* Checks names, types and shapes of either form (rank 0, the file open serially). */
int bench_check_layout(hid_t f, const rd_job *job, bench_layout *L, rd_status *st);
/* The item ids the Ties composite needs: *present = 0 when item_id is absent, else its
 * description once checked (strings, one per item). */
int bench_check_item_ids(hid_t f, const rd_job *job, rd_dsinfo *ids, int *present, rd_status *st);

/* ---- the plan (bench_plan.c; tables read by bench_read.c) ---- */

/* Scalars every rank needs (broadcast as one block). */
typedef struct bench_dims {
  int64_t M, S, I, C;
  int64_t n_sec, n_entries;   /* sections (Prior Sets last when on) and their (subset, weight) entries */
  int64_t n_prompts;          /* Ties prompts (0 when no Ties subset is scored) */
  int64_t scores_off, given_off;  /* file offsets for mapping, or -1 */
  int64_t names_len;          /* packed subset + model names */
  int32_t accuracy_mode, has_given, ftype, ties_subset, prior_sec, rule;
  rd_dsinfo scores_ds, given_ds;
} bench_dims;

/* Everything the ranks share about an input and a scheme. */
typedef struct bench_plan {
  bench_dims d;
  /* items (empty in accuracy mode) */
  int32_t *item_subset;   /* [I] */
  int64_t *item_offset;   /* [I + 1] */
  int32_t *n_correct;     /* [I] */
  int64_t *subset_n;      /* [S] items per subset */
  int64_t *subset_first;  /* [S + 1] start of each subset in subset_items */
  int64_t *subset_items;  /* [I] items grouped by subset, in item order */
  /* names: subsets 0..S-1 then models 0..M-1, NUL-terminated, packed */
  char *names;
  int64_t *name_off;      /* [S + M] */
  /* the scheme, resolved against the input */
  int64_t *sec_first;     /* [n_sec + 1] into the entries */
  int32_t *ent_subset;    /* subset index, or -1 when the input lacks it */
  double *ent_weight;
  double *sec_score_w;    /* weight of each section in the score */
  uint8_t *resampled;     /* [S] subsets the bootstrap resamples (those a section uses) */
  /* Ties prompts in ascending prompt number: their ref and tied items (-1 when absent) */
  int64_t *prompt_ref, *prompt_tied, *prompt_number;
} bench_plan;

static inline const char *bench_subset_name(const bench_plan *p, int64_t s) { return p->names + p->name_off[s]; }
static inline const char *bench_model_name(const bench_plan *p, int64_t m) {
  return p->names + p->name_off[p->d.S + m];
}
void bench_plan_free(bench_plan *p);

/* What only rank 0 keeps: the given accuracies and the resolved comparisons and missing subsets. */
typedef struct bench_root {
  double *acc;             /* accuracy mode: [M × S] */
  int *cmp_a, *cmp_b;
  int n_cmp;
  const char **missing;
  int n_missing;
} bench_root;
void bench_root_free(bench_root *r);

/* Rank 0's item tables (bench_read.c): the packed names (unique, non-empty), the per-item tables
 * checked item by item, the per-subset accuracies, and the Ties subset's prompts from its ids. */
int bench_read_names(hid_t f, const rd_job *job, const bench_layout *L, bench_plan *p, rd_status *st);
int bench_read_items(hid_t f, const rd_job *job, const bench_layout *L, bench_plan *p, rd_status *st);
int bench_read_accuracies(hid_t f, const rd_job *job, const bench_layout *L, bench_plan *p, bench_root *r,
                          rd_status *st);
int bench_read_ties(hid_t f, const rd_job *job, const rd_dsinfo *ids, bench_plan *p, rd_status *st);

/* Checks the layout and the item tables and resolves the scheme (rank 0, the file open serially). */
int bench_prepare(hid_t f, const rd_job *job, bench_plan *p, bench_root *r, rd_status *st);
int bench_validate(const rd_ctx *ctx, const rd_job *job, const rd_jobfile *jf, rd_status *st);
int64_t bench_validated(const rd_job *job);                /* the input's source, after validate */
void bench_adopt(const rd_job *job, int64_t source);      /* the same on a rank that did not validate */
/* The planner's estimate of the job (rank 0, after validate; bench_estimate.c). */
void bench_estimate(hid_t f, const rd_job *job, rd_job_cost *cost);
/* Every rank gets the plan from rank 0. */
void bench_plan_share(const rd_ctx *ctx, bench_plan *p);

/* ---- each rank's tiles of scores (bench_rows.c) ---- */

typedef struct bench_rows {
  int64_t lo, hi;       /* flat credit range */
  int64_t m0, m1;       /* rows [m0, m1) held */
  const void *scores;   /* rows m0.. of [M, C] */
  const double *given;  /* rows m0.. of [M, I], or NULL */
  void *own[2];
  rd_h5_map map[2];
} bench_rows;

void bench_rows_free(bench_rows *w);
/* The contiguous range [lo, hi) of the flat [M × I] credit matrix that rank `rank` owns. */
void bench_rank_range(const bench_dims *d, int size, int rank, int64_t *lo, int64_t *hi);
/* Phases 1-2 (collective): the plan everywhere; the rank's tiles read (or mapped) and checked. */
int bench_load(const rd_ctx *ctx, const rd_job *job, bench_plan *p, bench_root *r, bench_rows *w, rd_status *st);
/* Every check the report would make on the input's values, without computing it. */
int bench_check(const rd_ctx *ctx, const rd_job *job, const rd_jobfile *jf, rd_status *st);

/* ---- per-item credits (bench_compute.c) ---- */

/* Phases 3-4 (collective): the rank's credits with the backend kernel, then the credits in global
 * order [M × I] (*credit: on every rank when `everyone`, else on rank 0 only) and the Ties rows'
 * gaps and spreads g [M × prompts × 4] on every rank (see bench_ties_build). Frees the rows. */
int bench_credits(const rd_ctx *ctx, const rd_job *job, const bench_plan *p, bench_rows *w, int everyone,
                  double **credit, double **g, rd_status *st);

/* ---- scoring (bench_score.c) ---- */

/* Per-prompt parts of the Ties composite, one row of lanes per prompt (prompt-major, so a sum over
 * drawn prompts runs over contiguous lanes): [acc_tied (M) | acc_ref (M) | pref (M) | pref_hard (M)
 * | margin (M) | has_tied | has_ref | both], where acc_* is the accuracy of the prompt's tied / ref
 * row, pref = [gap_tied > spread_tied], pref_hard = [min(gap_ref, gap_tied) > spread_tied] and
 * margin the tanh term (0 where the prompt lacks a row; the last three flags say which rows it
 * has). */
typedef struct bench_ties {
  int64_t P, M, L, ld;  /* prompts, models, lanes (5 M + 3), row stride (L rounded up to 8) */
  double *X;            /* [P × ld] */
} bench_ties;

/* Builds the per-prompt parts from each Ties row's gap and spread: g[((m * P) + p) * 4 + k] with
 * k = 0 gap_ref, 1 spread_ref, 2 gap_tied, 3 spread_tied. */
int bench_ties_build(const bench_plan *p, const double *g, bench_ties *t, rd_status *st);
void bench_ties_free(bench_ties *t);

/* What evaluating the scheme needs: credits by subset, Ties parts, or given accuracies. */
typedef struct bench_eval {
  const bench_plan *p;
  const bench_opts *o;
  /* credits by subset, one row of model lanes per item: subsets whose credits are all multiples
   * of 1/scale[s] (scale[s] × items <= INT16_MAX) as exact integers in CT16 ([items × Mp16], Mp16 =
   * M rounded up to 32), the others as doubles in CT ([items × Mp], Mp = M rounded up to 8) */
  double *CT;
  int16_t *CT16;
  uint8_t *CT8;           /* subsets with 0/1 credits only (scale 1): [items × Mp8], Mp8 = M rounded up to 64 */
  int64_t Mp, Mp16, Mp8;
  int32_t *scale;         /* [S] */
  int64_t *ct_first;      /* [S] first row of subset s in CT (-1 when not resampled) */
  bench_ties ties;
  const double *acc_input;  /* accuracy mode: [M × S] (NaN = missing for that model) */
} bench_eval;

/* Fills the tables from the full credit matrix [M × I]. With ctx (collective over it) each rank
 * scans its share of the models for the denominators and fills its share of the tables' rows, and
 * the shares are gathered everywhere; NULL: all here. */
int bench_eval_init(bench_eval *E, const bench_plan *p, const bench_opts *o, const double *credit, const rd_ctx *ctx,
                    rd_status *st);
void bench_eval_free(bench_eval *E);

/* Values of one evaluation: subset values val[s * M + m], then per model the sections and the
 * score, out[m * (n_sec + 1) + k] (k = n_sec: the score). `draws[s]` are the units (items of
 * subset s in subset order, or Ties prompts) drawn for a replicate; NULL: the point estimate
 * (every unit once, in order). In a replicate only the resampled subsets are evaluated (the
 * others are NaN). scratch: bench_scratch_len(E) doubles. */
void bench_evaluate(const bench_eval *E, const uint32_t *const *draws, double *val, double *scratch, double *out);
int64_t bench_scratch_len(const bench_eval *E);

/* Replicates [b0, b1) of the bootstrap: out[(b - b0) * M * K + m * K + k], K = n_sec + 1. */
int bench_bootstrap_block(const bench_eval *E, int64_t seed, const char *job, int64_t b0, int64_t b1, double *out,
                          rd_status *st);

/* A paired comparison from two models' score replicates: the 95 % interval of the finite differences
 * and p = min(1, 2 min(#d <= 0, #d >= 0) / used); out = {lo, hi, p, used}. scratch: B doubles. */
void bench_compare_pair(const double *sa, const double *sb, int64_t B, double *scratch, double out[4]);

/* ---- the distributed bootstrap (bench_bootstrap.c) ---- */

/* The quantities compared for each pair: the score only (1), or every section and the score (K =
 * n_sec + 1, the score last) with "compare_sections". */
static inline int64_t bench_cmp_per_pair(const bench_opts *o, const bench_dims *d) {
  return o->compare_sections ? d->n_sec + 1 : 1;
}

/* Phase 6 (collective): replicates by index, their intervals by quantity, comparisons by pair.
 * Rank 0 receives ci [M × K × 3: lo, hi, dropped] and cmp [n_cmp × Kc × 4: lo, hi, p, used]
 * (malloc'd; Kc = bench_cmp_per_pair, a pair's quantities in section order, the score last).
 * The comparisons (rank 0's r->cmp_a, r->cmp_b) are broadcast to every rank first. Replicates are
 * handed out in blocks as ranks ask; rank 0 runs first(first_arg) (may be NULL) before it takes
 * any, while the other ranks start. */
int bench_bootstrap(const rd_ctx *ctx, const rd_job *job, const rd_jobfile *jf, const bench_eval *E, bench_root *r,
                    double **ci, double **cmp, void (*first)(void *), void *first_arg, rd_status *st);

/* ---- the report (bench_report.c) ---- */

/* Rank 0: the report's result object and the leaderboard. credit is [M × I] (NULL in accuracy
 * mode); ci holds the bootstrap intervals [M × K × 3: lo, hi, dropped] and cmp the comparisons
 * [n_cmp × Kc × 4: lo, hi, p, replicates used] (NULL when the bootstrap is off). */
typedef struct bench_report_in {
  const bench_plan *p;
  const bench_opts *o;
  const bench_eval *E;
  const double *credit;
  const double *ci, *cmp;
  int64_t B;
  const int *cmp_a, *cmp_b;
  int n_cmp;
  const char *const *missing;  /* scheme subsets absent from the input */
  int n_missing;
  const char *file;
} bench_report_in;

/* The report in two steps, so that rank 0 builds what the point estimate gives while the other ranks
 * start the bootstrap: begin evaluates the point estimate, the subset scores [M × S] (malloc'd) and
 * the result object up to the leaderboard, each interval a null kept in part; finish (with ci and
 * cmp in `in`) fills the intervals in place and adds the comparisons and the bootstrap's summary. */
typedef struct bench_report_part {
  double *pt;    /* point estimate [M × K] */
  cJSON **slot;  /* [M × K] the intervals' nulls in the result */
} bench_report_part;
int bench_report_begin(const bench_report_in *in, bench_report_part *part, cJSON **result, double **subset_score,
                       rd_status *st);
int bench_report_finish(const bench_report_in *in, bench_report_part *part, cJSON *result, rd_status *st);
void bench_report_part_free(bench_report_part *part);
/* The output datasets: item credits [M, I] ([M, 0] with accuracies) and subset scores [M, S]. */
int bench_write_h5(hid_t h5, const bench_plan *p, const double *credit, const double *subset_score, rd_status *st);

/* ---- for readers (bench_view.c) ---- */

extern const rd_kind rd_kind_benchmark;
/* Results a reader could misread (docs/reference.md, 'Warnings'), from the result. */
cJSON *bench_warnings(const cJSON *result);
/* The kind's view of a report: leaderboard, subsets, comparisons; figures. */
int bench_view(const cJSON *report, const char *h5, rd_view *v, rd_status *st);

#endif
