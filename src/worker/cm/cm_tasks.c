/* cm: the report's tasks. The strata of each covariate and the writing of the per-pair datasets run
 * on rank 0, which holds the per-pair values once gathered (the strata's per-bin sums run in pair
 * order); chunks of bootstrap replicates, which need only the per-user sums every rank holds, are
 * spread over the ranks around them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_internal.h"
#include "rmdiag/kernels/resample.h"
#include "rmdiag/kernels/stats.h"

/* Replicates [b0, b1): each draws U users with replacement and takes, for TM, TG and CM, the mean
 * over all pairs of the drawn users (duplicates counted) = Σ sums / Σ counts, both weighted by
 * the users' multiplicities in the draw. */
static void cm_bootstrap_block(const rd_stream *s, const double *F, int64_t U, int64_t b0, int64_t b1, double *out,
                            rd_progress *prog) {
  uint32_t *idx = malloc(sizeof(uint32_t) * (size_t)(U + 1)), *cnt = malloc(sizeof(uint32_t) * (size_t)U);
  if (!idx || !cnt) abort();
  for (int64_t b = b0; b < b1; b++) {
    /* draw j of replicate b picks user rd_rng_below(s, b, j, U) */
    rd_rng_below_fill(s, (uint64_t)b, (uint64_t)U, U, idx);
    rd_count_draws(idx, U, U, cnt);
    double acc[6];
    rd_weighted_col_sums(cnt, F, U, 6, acc);
    double *o = out + (b - b0) * 3;
    for (int q = 0; q < 3; q++) o[q] = acc[2 * q + 1] > 0 ? acc[2 * q] / acc[2 * q + 1] : NAN;
    if (prog) rd_progress_update(prog, b - b0 + 1);
  }
  free(idx);
  free(cnt);
}

/* ---- strata ------------------------------------------------------------------------------- */

/* Edge i of K quantile bins, i = 0..K: the i/K quantile of the finite values (order statistics k and
 * k + 1 where it interpolates, found by selection rather than a sort). */
static int quantile_edges(const double *fin, size_t nf, int64_t K, double *edges) {
  size_t *k = malloc(sizeof(size_t) * 2 * (size_t)(K + 1)), nk = 0;
  double *val = malloc(sizeof(double) * 2 * (size_t)(K + 1));
  int rc = k && val ? 0 : -1;
  for (int64_t i = 0; rc == 0 && i <= K; i++) {
    size_t kk;
    double g;
    rd_quantile_pos(nf, (double)i / (double)K, &kk, &g);
    k[nk++] = kk;
    k[nk++] = kk + 1 < nf ? kk + 1 : kk;
  }
  if (rc == 0) rc = rd_order_stats(fin, nf, k, nk, val);
  for (int64_t i = 0; rc == 0 && i <= K; i++) {
    size_t kk;
    double g;
    rd_quantile_pos(nf, (double)i / (double)K, &kk, &g);
    double a = val[2 * i], b = val[2 * i + 1];
    edges[i] = g == 0.0 ? a : rd_quantile_lerp(a, b, g);
  }
  free(k);
  free(val);
  return rc;
}

/* The strata of one covariate, packed as [excluded, n_bins, then per bin: bin, lo, hi, n, tm, tg,
 * cm] (NaN for an undefined mean). */
static int cm_strata_pack(const cm_stratum *sp, const double *cov, int64_t P, const double *tm, const double *tg,
                       const double *cm, double **out, int64_t *n_out, rd_status *st) {
  double *fin = malloc(sizeof(double) * (size_t)(P ? P : 1));
  if (!fin) return rd_fail(st, RD_EFAIL, "out of memory");
  int64_t nf = 0;
  for (int64_t p = 0; p < P; p++)
    if (isfinite(cov[p])) fin[nf++] = cov[p];
  int64_t excluded = P - nf;
  if (nf == 0) {
    free(fin);
    *out = malloc(2 * sizeof(double));
    if (!*out) return rd_fail(st, RD_EFAIL, "out of memory");
    (*out)[0] = (double)excluded;
    (*out)[1] = 0.0;
    *n_out = 2;
    return RD_OK;
  }
  double *edges = NULL;
  int64_t nb;
  if (sp->bins > 0) {
    int64_t K = sp->bins;
    edges = malloc(sizeof(double) * (size_t)(K + 1));
    if (!edges || quantile_edges(fin, (size_t)nf, K, edges) != 0) {
      free(edges);
      free(fin);
      return rd_fail(st, RD_EFAIL, "out of memory");
    }
    int64_t ne = 1;
    for (int64_t i = 1; i <= K; i++)
      if (edges[i] != edges[ne - 1]) edges[ne++] = edges[i];  /* duplicate edges merge */
    nb = ne > 1 ? ne - 1 : 1;
    if (ne == 1) edges[1] = edges[0];
  } else {
    edges = malloc(sizeof(double) * (size_t)nf);
    if (!edges) {
      free(fin);
      return rd_fail(st, RD_EFAIL, "out of memory");
    }
    nb = (int64_t)rd_distinct_sorted(fin, (size_t)nf, edges);  /* the categories */
  }
  /* per bin: n, and sum/count of TM, TG, CM, accumulated in pair order */
  double *acc = calloc((size_t)nb * 7, sizeof *acc);
  for (int64_t p = 0; p < P; p++) {
    double x = cov[p];
    if (!isfinite(x)) continue;
    /* the largest i < nb with edges[i] <= x: for quantile bins the last bin is closed, for
     * categories it is x's own (edges are strictly increasing and x >= edges[0]); without branches,
     * which would mispredict on scattered covariates */
    int64_t b = 0;
    for (int64_t n = nb; n > 1; n -= n / 2) b = edges[b + n / 2] <= x ? b + n / 2 : b;
    double *a = acc + b * 7;
    a[0] += 1.0;
    const double v[3] = {tm[p], tg[p], cm[p]};
    for (int j = 0; j < 3; j++)
      if (!isnan(v[j])) {
        a[1 + 2 * j] += v[j];
        a[2 + 2 * j] += 1.0;
      }
  }
  double *o = malloc(sizeof(double) * (size_t)(2 + 7 * nb));
  if (!o) {
    free(acc);
    free(edges);
    free(fin);
    return rd_fail(st, RD_EFAIL, "out of memory");
  }
  o[0] = (double)excluded;
  o[1] = (double)nb;
  for (int64_t b = 0; b < nb; b++) {
    const double *a = acc + b * 7;
    double *e = o + 2 + 7 * b;
    e[0] = sp->bins > 0 ? (double)b : edges[b];
    e[1] = edges[b];
    e[2] = sp->bins > 0 ? edges[b + 1] : edges[b];
    e[3] = a[0];
    e[4] = a[2] > 0 ? a[1] / a[2] : NAN;
    e[5] = a[4] > 0 ? a[3] / a[4] : NAN;
    e[6] = a[6] > 0 ? a[5] / a[6] : NAN;
  }
  free(acc);
  free(edges);
  free(fin);
  *out = o;
  *n_out = 2 + 7 * nb;
  return RD_OK;
}

/* ---- the report's tasks -------------------------------------------------------------------- */

/* The report's tasks, spread over ranks: 0-2 summarize TM, TG, CM ([n, mean, sd, q05, q25,
 * median, q75, q95]); 3 + s packs the strata of covariate s; the rest are chunks of bootstrap
 * replicates ([TM, TG, CM] per replicate). */
typedef struct cm_tasks {
  const cm_opts *o;
  int64_t P, U, n_chunks;
  const double *v[3];
  double *const *covs;
  const double *F;
  const rd_summary *sum;
  const cm_values *values;
  int64_t R;
  hid_t h5;           /* the output (rank 0) */
  rd_stream stream;
  rd_progress *prog;  /* rank 0's bootstrap progress */
  int64_t prog_done;
} cm_tasks;

static void cm_chunk_range(const cm_tasks *t, int64_t c, int64_t *b0, int64_t *b1) {
  rd_split_range(t->o->bootstrap, (int)t->n_chunks, (int)c, b0, b1);
}

static int cm_task(int64_t k, void *arg, double **out, int64_t *n_out, rd_status *st) {
  cm_tasks *t = arg;
  int64_t S = t->o->n_strata;
  if (k == 3 + S) {  /* the per-pair datasets of the output */
    const cm_values *v = t->values;
    *n_out = 0;
    if (!(*out = malloc(sizeof(double)))) return rd_fail(st, RD_EFAIL, "out of memory");
    return cm_write_h5(t->h5, v->P, t->R, v->tm, v->tg, v->cm, v->n_train, st);
  }
  if (k > 3 + S) {
    int64_t b0, b1;
    cm_chunk_range(t, k - 4 - S, &b0, &b1);
    *out = malloc(sizeof(double) * 3 * (size_t)((b1 - b0) ? (b1 - b0) : 1));
    if (!*out) return rd_fail(st, RD_EFAIL, "out of memory");
    cm_bootstrap_block(&t->stream, t->F, t->U, b0, b1, *out, NULL);
    *n_out = 3 * (b1 - b0);
    if (t->prog) rd_progress_update(t->prog, t->prog_done += b1 - b0);
    return RD_OK;
  }
  if (k >= 3) return cm_strata_pack(&t->o->strata[k - 3], t->covs[k - 3], t->P, t->v[0], t->v[1], t->v[2], out, n_out, st);
  /* the summaries, computed before over the ranks' parts (rank 0 holds them) */
  const rd_summary *s = &t->sum[k];
  double *o = malloc(8 * sizeof(double));
  if (!o) return rd_fail(st, RD_EFAIL, "out of memory");
  double vals[8] = {(double)s->n, s->mean, s->sd, s->q05, s->q25, s->median, s->q75, s->q95};
  memcpy(o, vals, sizeof vals);
  *out = o;
  *n_out = 8;
  return RD_OK;
}

void cm_task_results_free(cm_task_results *t) {
  rd_free_task_results(t->res, t->lens, t->n_tasks);
  free(t->boot);
  memset(t, 0, sizeof *t);
}

/* Phase 5: strata and the per-pair datasets (rank 0), and chunks of bootstrap replicates as tasks
 * over ranks (balanced on estimated costs: about 22 ns per pair for strata, 36 for writing, 3.6 per
 * drawn user); the summaries' tasks only hand rank 0's results over. */
int cm_run_tasks(const rd_ctx *ctx, const rd_job *job, const rd_jobfile *jf, const cm_input *in, const cm_values *v,
                 hid_t h5, cm_task_results *t, rd_status *st) {
  const cm_opts *o = job->opts;
  memset(t, 0, sizeof *t);
  int64_t P = v->P, B = o->bootstrap, S = o->n_strata;
  if (ctx->rank == 0 && !(t->boot = malloc(sizeof(double) * 3 * (size_t)(B ? B : 1))))
    rd_abort(ctx, __FILE__, __LINE__, "out of memory for the bootstrap");
  cm_tasks tasks = {.o = o, .P = P, .U = in->u.U, .v = {v->tm, v->tg, v->cm}, .covs = in->covs, .F = v->F,
                    .sum = v->sum, .values = v, .R = in->L.R, .h5 = h5};
  tasks.n_chunks = B == 0 ? 0 : (B < 8 * (int64_t)ctx->size ? B : 8 * (int64_t)ctx->size);
  rd_stream_init(&tasks.stream, jf->seed, job->name, "cm.bootstrap.users");
  int64_t n_tasks = t->n_tasks = 4 + S + tasks.n_chunks;
  double *cost = malloc(sizeof(double) * (size_t)n_tasks);
  int *owner = malloc(sizeof(int) * (size_t)n_tasks), *pin = malloc(sizeof(int) * (size_t)n_tasks);
  if (!cost || !owner || !pin) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  for (int64_t k = 0; k < n_tasks; k++) {
    int64_t b0 = 0, b1 = 0;
    if (k > 3 + S) cm_chunk_range(&tasks, k - 4 - S, &b0, &b1);
    cost[k] = k < 3 ? 0.0 : k < 3 + S ? 22e-9 * (double)P : k == 3 + S ? 36e-9 * (double)P
            : 3.6e-9 * (double)(b1 - b0) * (double)in->u.U;
    pin[k] = k <= 3 + S ? 0 : -1;
  }
  rd_assign_tasks_pinned(n_tasks, cost, pin, ctx->size, owner);
  int64_t mine = 0;
  for (int64_t k = 4 + S; k < n_tasks; k++)
    if (owner[k] == ctx->rank) {
      int64_t b0, b1;
      cm_chunk_range(&tasks, k - 4 - S, &b0, &b1);
      mine += b1 - b0;
    }
  rd_progress prog;
  rd_progress_begin(&prog, ctx->quiet || B == 0 ? NULL : ctx->err, job->name, "bootstrap", mine);
  tasks.prog = &prog;
  if (rd_run_tasks_pinned(ctx, n_tasks, cost, pin, cm_task, &tasks, &t->res, &t->lens, st) == RD_OK &&
      ctx->rank == 0) {
    rd_progress_end(&prog);
    rd_timing_mark(ctx->rank, job->name, "strata+h5+bootstrap");
    for (int64_t k = 4 + S, pos = 0; k < n_tasks; k++) {
      memcpy(t->boot + pos, t->res[k], sizeof(double) * (size_t)t->lens[k]);
      pos += t->lens[k];
    }
  }
  free(cost);
  free(owner);
  free(pin);
  return st->code;
}
