/* The probe report kind (docs/reference.md, 'probe report'), split along its steps:
 *   probe_options.c  the option table: parsing, effective options, `rmdiag help probe`
 *   probe_layout.c   the input layout (a table of datasets per task group and per model group)
 *   probe_labels.c   labels to classes, splits and the validation holdout, shared with every rank
 *   probe_data.c     feature sources (mapped, or read in bounded pieces), training row sets, value scan
 *   probe_tree.c     the fixed reduction tree over a group of ranks and its exchange
 *   probe_predict.c  predictions of a trained probe on validation and test rows
 *   probe_train.c    mode mrmbench: MRMBench's AdamW loop
 *   probe_lbfgs.c    mode lbfgs: multinomial logistic regression by L-BFGS
 *   probe_units.c    configurations spread over groups of ranks, results gathered on rank 0
 *   probe_select.c   the grid entry selected on validation accuracy, test metrics, spread over seeds
 *   probe_kmeans.c   centroids, distances and inference-time probing
 *   probe_report.c   the report and the output datasets (rank 0)
 *   probe.c          the run, the checks and the kind's table
 * This header is the seam between those files. */
#ifndef RMDIAG_PROBE_INTERNAL_H
#define RMDIAG_PROBE_INTERNAL_H

#include <cjson/cJSON.h>
#include <hdf5.h>
#include <stdint.h>

#include "rmdiag/common/comm.h"
#include "rmdiag/common/h5in.h"
#include "rmdiag/common/options.h"
#include "rmdiag/common/progress.h"
#include "rmdiag/common/status.h"
#include "rmdiag/job.h"
#include "rmdiag/kernels/probe.h"
#include "rmdiag/kind.h"

enum { PROBE_MRMBENCH = 0, PROBE_LBFGS = 1 };
enum { DIST_EUCLIDEAN = 0, DIST_COSINE = 1, DIST_MAHALANOBIS = 2 };

/* ---- options (probe_options.c) --------------------------------------------------------------- */

typedef struct probe_task_opt {
  const char *name;
  int n_classes;
  int *class_len;        /* raw labels per class */
  int64_t **class_labels;
} probe_task_opt;

typedef struct probe_opts {
  const cJSON *spec;     /* the job's options while they are parsed (the mode row refuses the other mode's) */
  int n_tasks;
  probe_task_opt *tasks;
  int n_models;          /* 0: no "models" (tasks directly under the group) */
  const char **models;
  int mode;
  int n_lr, n_l2;
  double *lr_grid, *l2_grid;
  int n_grid;
  const double *grid;    /* the mode's grid: learning rates (mrmbench) or l2 strengths (lbfgs) */
  int n_seeds;
  int64_t *seeds;
  const char *init;
  int init_zeros;
  int standardize;
  double tol;
  int64_t max_iter;
  int64_t max_memory_mb;
  int kmeans;            /* inference-time probing on */
  int64_t k_per_class, km_iters;
  int distance;
  int tau_quantile;      /* 1: tau is the quantile `tau` of validation d_min */
  double tau;
} probe_opts;

extern const rd_option probe_options[];
int probe_parse(rd_job *job, const rd_jobfile *jf, rd_status *st);
void probe_free_opts(void *opts);

/* ---- the run's shared state ------------------------------------------------------------------ */

/* Element type of a feature dataset. */
enum { FEAT_F32 = 0, FEAT_F16 = 1, FEAT_F64 = 2, FEAT_BF16 = 3 };

/* A feature matrix X [N, d] in the input: read-only mapped when it is contiguous float32 (and
 * mapping is allowed), else read with HDF5 (serial driver, opened by each rank that needs it). */
typedef struct feat_src {
  char path[512];
  int64_t N, d;
  int etype;
  int64_t map_offset;   /* file offset of a mapped dataset (agreed by all ranks), else -1; 0 when mapped
                         * chunk by chunk */
  int64_t chunk_rows;   /* > 0: stored in chunks of this many whole rows, mapped chunk by chunk */
  int64_t key_base;     /* ordering key of element [0, 0]: datasets in a fixed order (each (model,
                         * task) in job order, then each model's inference rows), elements row-major */
  /* per rank: the mapping (probe_prepare), and whether the rank has used it yet */
  const float *base;
  int64_t *chunk_at;    /* chunked: each chunk's first element, counted in floats from base */
  void *map_base;
  size_t map_len;
  int touched;
} feat_src;

/* Row r of a mapped dataset. */
static inline const float *feat_row(const feat_src *X, int64_t r) {
  return X->chunk_rows > 0 ? X->base + X->chunk_at[r / X->chunk_rows] + (r % X->chunk_rows) * X->d : X->base + r * X->d;
}

/* One (model, task): the rows it uses and how they are split. */
typedef struct ptask {
  int m, t;              /* model and task indices */
  char prefix[512];      /* input group of the task */
  char label_path[512], split_path[512];
  feat_src X;
  int C;                 /* classes */
  int K;                 /* outputs per head: 1 for C = 2 (mrmbench), else C */
  int8_t *cls;           /* [N] class of each row, −1 = not used */
  uint8_t *split;        /* [N] */
  int64_t n_tr, n_va, n_te;
  int64_t *tr, *va, *te; /* row indices, ascending */
  int holdout;           /* validation rows were taken from train */
  int64_t dropped_missing, dropped_other;
  int64_t *train_count;  /* [C] */
} ptask;

/* Everything the run shares across files. */
typedef struct probe_run {
  const rd_ctx *ctx;
  const rd_job *job;
  const probe_opts *o;
  int64_t seed;          /* job seed */
  int n_models;          /* >= 1 */
  int n_pt;              /* n_models * n_tasks, model-major */
  ptask *pt;
  feat_src *infer;       /* [n_models] (N = 0 when absent) */
  hid_t h5;              /* the rank's serial handle on the input, opened on first use */
  float *rtmp;           /* feat_rows' buffers for rows read through HDF5, kept from call to call */
  void *rraw;            /* (and for the stored elements HDF5 does not convert) */
  int64_t rtmp_n, rraw_bytes;
} probe_run;

/* ---- layout (probe_layout.c) ----------------------------------------------------------------- */

/* Checks names, types and shapes of every (model, task) and inference dataset, filling R->pt's
 * paths and feature sources and R->infer; runs on any one rank with the file open. */
int probe_check_layout(hid_t f, const rd_job *job, const probe_opts *o, probe_run *R, rd_status *st);
/* The planner's estimate of the job (rank 0, after validate; probe_estimate.c). */
void probe_estimate(hid_t f, const rd_job *job, rd_job_cost *cost);
/* The reward-model groups under `group` holding a task group `task`, as "\"A\", \"B\"" in out (returns
 * how many): the hint for a job that forgot "models" (probe_init.c). */
int probe_groups_with_task(hid_t f, const char *group, const char *task, char *out, size_t n);
/* The task groups directly under `group` as "\"A\", \"B\"" in out (returns how many), and in
 * `near` the one nearest to `task` when it is a likely misspelling (else ""). */
int probe_task_groups(hid_t f, const char *group, const char *task, char *out, size_t n, char *near, size_t nn);

/* ---- labels and splits (probe_labels.c) ------------------------------------------------------ */

/* Collective: layout, labels and splits on rank 0, shared with every rank; then the row lists of
 * every (model, task) and the feature datasets mapped on every rank, or on none (agreed). */
int probe_prepare(probe_run *R, rd_status *st);

/* ---- feature rows (probe_data.c) ------------------------------------------------------------- */

/* Collective: maps each feature dataset on every rank, or on none (see probe_data.c). */
void probe_map_features(probe_run *R);
/* 1 when X is mapped (the same answer on every rank). */
int feat_mapped(probe_run *R, feat_src *X);
/* Row pointers for rows idx[0..n) of X: into the mapping, or read (any order) into `buf` (n*d
 * floats, malloc'd by the caller). */
int feat_rows(probe_run *R, feat_src *X, const int64_t *idx, int64_t n, float *buf, const float **ptrs,
              rd_status *st);
/* Collective: non-finite features among the rows used (lowest global index reported). */
int probe_scan_values(probe_run *R, rd_status *st);
void probe_data_free(probe_run *R);

/* The backend's probe kernels when it has the ones training uses, else NULL (CPU). */
const rd_probe_kernels *probe_gpu_kernels(const probe_run *R);

/* Loaded training rows: pointers (into the mapping or `buf`) and targets, by local position. */
typedef struct rowset {
  int64_t n;
  const float **ptr;
  int32_t *y;
  int64_t *row;   /* input row of each local position */
  float *buf;     /* owned rows (not mapped) */
  int64_t cap;    /* floats buf holds (kept from segment to segment) */
  void *dev;      /* rows uploaded to the backend */
} rowset;

int rowset_alloc(rowset *s, int64_t n, rd_status *st);
/* Loads rows [lo, hi) of the rowset's row list: pointers into the mapping, or read into buf; with
 * `upload` (a backend with kernels) a copy goes to the device. */
int rowset_load(probe_run *R, feat_src *X, rowset *s, int64_t lo, int64_t hi, int upload, rd_status *st);
void rowset_free(probe_run *R, rowset *s);
/* Rows of d features that fit the rank's memory budget (at least `minimum`). */
int64_t probe_budget_rows(const probe_run *R, int64_t d, int64_t minimum);

/* ---- the fixed reduction tree (probe_tree.c) ------------------------------------------------- */

/* A leaf's value into dst (added to it with `accumulate`). */
typedef int (*probe_leaf_fn)(void *arg, int64_t leaf, double *dst, int accumulate, rd_status *st);
/* Optional: the value of a whole node (leaves [lo, lo + n) present) in one call, the same bits as
 * the tree of its leaves. */
typedef int (*probe_node_fn)(void *arg, int64_t lo, int64_t n, double *dst, rd_status *st);

typedef struct tnode {
  int64_t lo, size;  /* aligned: lo % size == 0, size a power of two */
} tnode;

/* The workspace of one tree over a group: which nodes each rank evaluates and how their values
 * are exchanged. */
typedef struct tree_ws {
  int64_t len;       /* doubles per node value */
  int64_t depth;
  double *scratch;   /* (depth + 2) * len */
  /* the nodes each rank evaluates (rank-major) */
  tnode *nodes;
  int64_t total, mine, first;  /* all ranks' nodes, this rank's, the index of its first */
  int *counts, *displs;        /* doubles per rank and their offsets (MPI_Allgatherv) */
  const double **vals;         /* value of each node, for the root */
  int64_t out_lo, out_hi;      /* the elements of the root the caller reads (all by default) */
  /* exchange through MPI_Allgatherv ... */
  double *send, *recv;
  /* ... or, when the group shares memory, through a shared window: rank r writes its nodes into
   * seg[r] (two halves used in turn, so a rank never overwrites values another may still read) */
  MPI_Win win;
  int shared, half;
  double **seg;
} tree_ws;

/* Collective over the group (J leaves, node values of len doubles); 0, or -1 when out of memory. */
int probe_tree_init(tree_ws *w, int64_t J, int64_t len, const rd_ctx *g);
/* Collective when the group shares a window. */
void probe_tree_free(tree_ws *w);
/* Collective over the group: out = Σ over leaves [0, J) by the fixed tree. Each rank evaluates the
 * leaves rd_split_range(J, size, rank). Errors of f are agreed when f may fail (it reads rows). */
int probe_tree_allreduce(const rd_ctx *g, int64_t J, probe_leaf_fn f, probe_node_fn nf, void *arg, int may_fail,
                         tree_ws *w, double *out, rd_status *st);

/* n doubles starting on a cache line (zeroed with `zero`); free() them. */
double *probe_alloc64(int64_t n, int zero);
/* Collective. n doubles in a window shared by the group (held by its rank 0), or NULL (*win stays
 * MPI_WIN_NULL) when it cannot be had. */
double *probe_shared_doubles(const rd_ctx *g, int64_t n, MPI_Win *win);
/* Collective: what each rank wrote into the window before is visible to all after. */
void probe_shared_sync(const rd_ctx *g, MPI_Win win);
/* Frees p: the shared window (collective) or the heap block. */
void probe_shared_free(double *p, MPI_Win *win);

/* ---- training (probe_predict.c, probe_train.c, probe_lbfgs.c, probe_units.c) ----------------- */

/* Results of one grid entry of one (model, task) and seed. */
typedef struct grid_result {
  double *W;             /* [K, d] */
  double *b;             /* [K] (lbfgs) */
  int32_t *val_pred, *test_pred;
  int64_t iterations;    /* lbfgs */
  double grad_norm;
  int status;            /* lbfgs: 0 converged, 1 max_iter, 2 line search stalled */
  int64_t near_val, near_test;  /* predictions within RD_PROBE_NEAR_TIE of a tie */
} grid_result;

/* Collective over the group: predictions of every head for rows idx (gathered on group rank 0
 * into pred[n * L]), and per head the number of them that are near ties (near[l], summed over the
 * group; every rank gets them). */
int probe_predict(probe_run *R, const rd_ctx *g, feat_src *X, const int64_t *idx, int64_t n,
                  const rd_probe_heads *h, int32_t *pred, int64_t *near, rd_status *st);

/* One (model, task, seed) with heads lrs[0..L) on the group; group rank 0 fills res[l]. */
int probe_train_mrmbench(probe_run *R, const rd_ctx *g, ptask *p, int64_t seed, const double *lrs, int L,
                         grid_result *res, rd_progress *prog, int64_t *prog_done, rd_status *st);
/* One (model, task) and l2 strength on the group; group rank 0 fills *res. */
int probe_train_lbfgs(probe_run *R, const rd_ctx *g, ptask *p, double l2, grid_result *res, rd_status *st);

/* res[(pt * n_seeds + s) * n_grid + g] on rank 0. Collective over the world. */
int probe_train_all(probe_run *R, grid_result **res, rd_status *st);
void probe_results_free(grid_result *res, int64_t n);

/* ---- selection and metrics (probe_select.c) -------------------------------------------------- */

typedef struct test_metrics {
  int64_t correct;
  double accuracy, macro_f1, majority;
  int64_t *confusion;  /* [C, C], rows = true class */
} test_metrics;

/* The grid entry with the most correct validation rows over all S seeds (ties to the first);
 * val_mean[g] = its mean validation accuracy (correct rows of all seeds over S * n_val, so equal
 * means are equal numbers). gr[s * NG + g]. */
int probe_select(const ptask *p, const grid_result *gr, int S, int NG, double *val_mean);
double probe_val_accuracy(const ptask *p, const int32_t *pred);
/* Near ties that could change the report: validation ones of every grid entry and seed (they can
 * move the selection), test ones of the selected entry over seeds. */
void probe_near_ties(const grid_result *gr, int S, int NG, int sel, int64_t *val, int64_t *test);
/* Test accuracy, macro F1, confusion matrix and the majority-class baseline of predictions. */
void probe_test_metrics(const ptask *p, const int32_t *pred, test_metrics *m);
cJSON *probe_metrics_json(const ptask *p, const test_metrics *m);
/* Spread of the test accuracy over seeds: the mean as one division of the correct rows of all
 * seeds, the sd over accs[S], and the 95 % t interval (has_ci = 0 with one seed). */
void probe_accuracy_spread(const double *accs, int S, int64_t test_total, int64_t n_te, double *mean, double *sd,
                           double ci[2], int *has_ci);

/* ---- inference-time probing (probe_kmeans.c) ------------------------------------------------- */

typedef struct infer_result {
  /* per model */
  int64_t n_cent;        /* centroids of all tasks */
  double *cent;          /* [n_cent, d] in the metric's space */
  int32_t *cent_task, *cent_class;
  double tau;
  int64_t n_val_rows;
  int64_t n;             /* inference rows (0: no /infer/X) */
  int32_t *nearest_task, *nearest_class;
  double *d_min;
  uint8_t *kept;
  double shrinkage;      /* mahalanobis */
} infer_result;

int probe_kmeans_all(probe_run *R, infer_result *out, rd_status *st);
/* Collective: factors each model's Mahalanobis covariance (as probe_kmeans_all does) only to check
 * that it can be factored. */
int probe_maha_check(probe_run *R, rd_status *st);
void probe_infer_free(infer_result *ir, int n);

/* ---- the report (probe_report.c) ------------------------------------------------------------- */

/* Rank 0: the report from the training results and the inference results, and the output
 * datasets in `h5`. */
int probe_report(const probe_run *R, grid_result *res, const infer_result *ir, hid_t h5, cJSON **out,
                 rd_status *st);

/* ---- for readers (probe_view.c) ---- */

extern const rd_kind rd_kind_probe;
/* Results a reader could misread (docs/reference.md, 'Warnings'), from the result. */
cJSON *probe_warnings(const cJSON *result);
/* The kind's view of a report: accuracy, comparison, inference, grid; figures. */
int probe_view(const cJSON *report, const char *h5, rd_view *v, rd_status *st);
/* Warnings across reports: the two training modes on the same features. */
void probe_compare(const cJSON *const *reports, int n, rd_view *v);

#endif
