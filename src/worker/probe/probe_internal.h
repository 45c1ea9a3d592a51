/* Internal seams of the probe report (SPEC §7), shared by its files:
 *   probe.c        options, validation, the run, the report and the output datasets
 *   probe_data.c   input layout, labels and splits, feature sources (mapped or read), value checks
 *   probe_train.c  configurations over groups of ranks, the fixed reduction tree, mrmbench and L-BFGS
 *   probe_kmeans.c centroids, distances and inference-time probing */
#ifndef RMDIAG_PROBE_INTERNAL_H
#define RMDIAG_PROBE_INTERNAL_H

#include <cjson/cJSON.h>
#include <hdf5.h>
#include <stdint.h>

#include "rmdiag/common/comm.h"
#include "rmdiag/common/h5in.h"
#include "rmdiag/job.h"
#include "rmdiag/kernels/probe.h"
#include "rmdiag/common/status.h"

enum { PROBE_MRMBENCH = 0, PROBE_LBFGS = 1 };
enum { DIST_EUCLIDEAN = 0, DIST_COSINE = 1, DIST_MAHALANOBIS = 2 };

typedef struct probe_task_opt {
  const char *name;
  int n_classes;
  int *class_len;        /* raw labels per class */
  int64_t **class_labels;
} probe_task_opt;

typedef struct probe_opts {
  int n_tasks;
  probe_task_opt *tasks;
  int n_models;          /* 0: no "models" (tasks directly under the group) */
  const char **models;
  int mode;
  int n_grid;
  double *grid;          /* learning rates (mrmbench) or l2 strengths (lbfgs) */
  int n_seeds;
  int64_t *seeds;
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

/* Element type of a feature dataset. */
enum { FEAT_F32 = 0, FEAT_F16 = 1, FEAT_F64 = 2, FEAT_BF16 = 3 };

/* A feature matrix X [N, d] in the input: read-only mapped when it is contiguous float32 (and
 * mapping is allowed), else read with HDF5 (serial driver, opened by each rank that needs it). */
typedef struct feat_src {
  char path[512];
  int64_t N, d;
  int etype;
  int64_t map_offset;   /* file offset of a mapped dataset (agreed by all ranks), else -1 */
  int64_t key_base;     /* ordering key of element [0, 0]: datasets in a fixed order (each (model,
                         * task) in job order, then each model's inference rows), elements row-major */
  /* per rank: the mapping (probe_prepare), and whether the rank has used it yet */
  const float *base;
  void *map_base;
  size_t map_len;
  int touched;
} feat_src;

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
} probe_run;

/* ---- probe_data.c ----------------------------------------------------------------------------- */
int probe_check_layout(hid_t f, const rd_job *job, const probe_opts *o, probe_run *R, rd_status *st);
/* Collective: layout, labels and splits on rank 0, shared with every rank; then the feature
 * datasets mapped on every rank, or on none (agreed). */
int probe_prepare(probe_run *R, rd_status *st);
/* Collective: non-finite features among the rows used (lowest global index reported). */
int probe_scan_values(probe_run *R, rd_status *st);
/* Row pointers for rows idx[0..n) of X: into the mapping, or read (any order) into `buf` (n*d
 * floats, malloc'd by the caller). */
int feat_rows(probe_run *R, feat_src *X, const int64_t *idx, int64_t n, float *buf, const float **ptrs,
              rd_status *st);
/* 1 when X is mapped (the same answer on every rank). */
int feat_mapped(probe_run *R, feat_src *X);
void probe_data_free(probe_run *R);
const char *probe_model_name(const probe_run *R, int m);

/* ---- probe_train.c ---------------------------------------------------------------------------- */
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

/* res[(pt * n_seeds + s) * n_grid + g] on rank 0. Collective over the world. */
int probe_train_all(probe_run *R, grid_result **res, rd_status *st);
void probe_results_free(grid_result *res, int64_t n);

/* ---- probe_kmeans.c --------------------------------------------------------------------------- */
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

/* Student-t quantile (two-sided 95 % uses p = 0.975). */
double probe_t_quantile(double p, double df);

#endif
