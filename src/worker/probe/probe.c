/* The probe report kind: MRMBench-style linear probes on frozen reward-model features, a converged
 * multinomial logistic regression (L-BFGS), and inference-time probing with centroids. See
 * docs/reference.md, 'probe report'. This file strings the steps together (layout and labels,
 * value checks, training over groups of ranks, centroids and inference, the report on rank 0); the
 * steps live beside it (probe_internal.h). */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe_internal.h"

extern int blas_thread_shutdown_(void) __attribute__((weak));

static int run_init(probe_run *R, const rd_ctx *ctx, const rd_job *job, const rd_jobfile *jf, rd_status *st) {
  memset(R, 0, sizeof *R);
  R->ctx = ctx;
  R->job = job;
  R->o = job->opts;
  R->seed = jf->seed;
  R->n_models = R->o->n_models ? R->o->n_models : 1;
  R->n_pt = R->n_models * R->o->n_tasks;
  R->h5 = H5I_INVALID_HID;
  R->pt = calloc((size_t)R->n_pt, sizeof *R->pt);
  R->infer = calloc((size_t)R->n_models, sizeof *R->infer);
  if (!R->pt || !R->infer) return rd_fail(st, RD_EFAIL, "out of memory");
  return RD_OK;
}

static void run_free(probe_run *R) {
  probe_data_free(R);
  free(R->pt);
  free(R->infer);
}

static int probe_validate(const rd_ctx *ctx, const rd_job *job, const rd_jobfile *jf, rd_status *st) {
  probe_run R;
  if (ctx->rank == 0 && run_init(&R, ctx, job, jf, st) == RD_OK) {
    hid_t f;
    if (rd_h5_open(job->input, MPI_COMM_NULL, &f, st) == RD_OK) {
      probe_check_layout(f, job, job->opts, &R, st);
      rd_h5_close(f);
    }
    run_free(&R);
  }
  return rd_share_status(ctx, st, 0);
}

/* Every check of the input that `run` makes (layout, labels and classes, splits, non-finite
 * features, a Mahalanobis covariance that can be factored): a multi-job file checks all its jobs
 * before any job writes. */
static int probe_check(const rd_ctx *ctx, const rd_job *job, const rd_jobfile *jf, rd_status *st) {
  const probe_opts *o = job->opts;
  probe_run R;
  if (run_init(&R, ctx, job, jf, st) != RD_OK) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  if (probe_prepare(&R, st) == RD_OK && probe_scan_values(&R, st) == RD_OK && o->kmeans &&
      o->distance == DIST_MAHALANOBIS)
    probe_maha_check(&R, st);
  run_free(&R);
  return st->code;
}

/* Collective: the phases up to the report, timed for RMDIAG_TIMING; *ir gets one result per model. */
static int run_phases(probe_run *R, grid_result **res, infer_result **ir, rd_status *st) {
  const rd_ctx *ctx = R->ctx;
  const char *name = R->job->name;
  if (probe_prepare(R, st) != RD_OK) return st->code;
  rd_timing_mark(ctx->rank, name, "layout+labels");
  /* how the features are reached (a mark of its own, right after: it takes no time) */
  int mapped = 0, nds = R->n_pt + R->n_models, used = 0;
  for (int k = 0; k < nds; k++) {
    const feat_src *X = k < R->n_pt ? &R->pt[k].X : &R->infer[k - R->n_pt];
    used += X->N > 0;
    mapped += X->N > 0 && X->base != NULL;
  }
  char what[96];
  snprintf(what, sizeof what, "features: %d of %d mapped", mapped, used);
  rd_timing_mark(ctx->rank, name, what);
  if (probe_scan_values(R, st) != RD_OK) return st->code;
  rd_timing_mark(ctx->rank, name, "value scan");
  if (probe_train_all(R, res, st) != RD_OK) return st->code;
  rd_timing_mark(ctx->rank, name, "train+evaluate");
  *ir = calloc((size_t)R->n_models, sizeof **ir);
  if (!*ir) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  if (R->o->kmeans && probe_kmeans_all(R, *ir, st) != RD_OK) return st->code;
  rd_timing_mark(ctx->rank, name, "kmeans+inference");
  return RD_OK;
}

static int probe_run_job(const rd_ctx *ctx, const rd_job *job, const rd_jobfile *jf, rd_run_out *out, rd_status *st) {
  const probe_opts *o = job->opts;
  probe_run R;
  grid_result *res = NULL;
  infer_result *ir = NULL;
  /* BLAS results depend on the thread count: one BLAS thread per rank (rmdiag's main sets this up;
   * a library caller may not have) */
  if (openblas_get_num_threads() != 1) {
    openblas_set_num_threads(1);
    if (blas_thread_shutdown_) blas_thread_shutdown_();
  }
  if (run_init(&R, ctx, job, jf, st) != RD_OK) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  if (run_phases(&R, &res, &ir, st) == RD_OK) {
    if (ctx->rank == 0 && probe_report(&R, res, ir, out->h5, &out->result, st) == RD_OK)
      rd_kind_summary(&rd_kind_probe, job, jf, probe_warnings(out->result), out->result, ctx->out,
                      ctx->err ? ctx->err : stderr, st);  /* summary on stdout: --quiet silences stderr only */
    rd_share_status(ctx, st, 0);
    rd_timing_mark(ctx->rank, job->name, "report+h5");
  }
  if (ir) probe_infer_free(ir, R.n_models);
  free(ir);
  probe_results_free(res, (int64_t)R.n_pt * (o->mode == PROBE_LBFGS ? 1 : o->n_seeds) * o->n_grid);
  run_free(&R);
  return st->code;
}

static const char *const probe_headlines[] = {
    "tasks.*.accuracy_mean", "average", "models.*.tasks.*.accuracy_mean", "models.*.average", NULL,
};

int probe_init(hid_t f, const char *file, const char *group, cJSON *job, FILE *note, rd_status *st);  /* probe_init.c */

const rd_kind rd_kind_probe = {
    .name = "probe",
    .default_group = "/probe",
    .summary = "linear probes on frozen reward-model features (MRMBench or L-BFGS), inference-time probing",
    .options = probe_options,
    .parse = probe_parse,
    .free_opts = probe_free_opts,
    .validate = probe_validate,
    .check = probe_check,
    .estimate = probe_estimate,
    .run = probe_run_job,
    .headlines = probe_headlines,
    .view = probe_view,
    .compare = probe_compare,
    .init = probe_init,
};
