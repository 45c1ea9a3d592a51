/* cm: the computation. The backend kernel gives each pair's TM and TG over the rank's rows; every
 * rank then holds all per-pair values in pair order and the per-user sums; the summaries, the
 * strata and chunks of bootstrap replicates are independent tasks spread over the ranks. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_internal.h"
#include "rmdiag/kernels/backend.h"
#include "rmdiag/kernels/cm.h"
#include "rmdiag/kernels/resample.h"
#include "rmdiag/kernels/stats.h"

double *cm_user_sums(const cm_users *u, int64_t P, const double *tm, const double *tg, const double *cm) {
  int64_t U = u->U;
  double *F = calloc((size_t)U * 6, sizeof *F);
  if (!F) return NULL;
  const double *v[3] = {tm, tg, cm};
  for (int64_t p = 0; p < P; p++) {
    int64_t k = u->of_pair[p];
    for (int j = 0; j < 3; j++)
      if (!isnan(v[j][p])) {
        F[(2 * j) * U + k] += v[j][p];
        F[(2 * j + 1) * U + k] += 1.0;
      }
  }
  return F;
}

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
    rd_sort_doubles(fin, (size_t)nf);
    for (int64_t i = 0; i <= K; i++) {
      double q = (double)i / (double)K;
      rd_quantiles_sorted(fin, (size_t)nf, &q, 1, &edges[i]);
    }
    int64_t ne = 1;
    for (int64_t i = 1; i <= K; i++)
      if (edges[i] != edges[ne - 1]) edges[ne++] = edges[i];  /* duplicate edges merge */
    nb = ne > 1 ? ne - 1 : 1;
    if (ne == 1) edges[1] = edges[0];
  } else {
    rd_sort_doubles(fin, (size_t)nf);
    int64_t nu = 0;
    for (int64_t i = 0; i < nf; i++)
      if (nu == 0 || fin[i] != fin[nu - 1]) fin[nu++] = fin[i] == 0.0 ? 0.0 : fin[i];
    nb = nu;
    edges = fin;  /* the categories */
    fin = NULL;
  }
  /* per bin: n, and sum/count of TM, TG, CM, accumulated in pair order */
  double *acc = calloc((size_t)nb * 7, sizeof *acc);
  for (int64_t p = 0; p < P; p++) {
    double x = cov[p];
    if (!isfinite(x)) continue;
    int64_t b;
    if (sp->bins > 0) {
      /* largest i with edges[i] <= x, the last bin closed */
      int64_t lo = 0, hi = nb;  /* search edges[0..nb-1] */
      while (hi - lo > 1) {
        int64_t mid = (lo + hi) / 2;
        if (edges[mid] <= x) lo = mid;
        else hi = mid;
      }
      b = lo;
    } else {
      int64_t lo = 0, hi = nb - 1;
      while (lo < hi) {
        int64_t mid = (lo + hi) / 2;
        if (edges[mid] < x) lo = mid + 1;
        else hi = mid;
      }
      b = lo;
    }
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
  if (k >= 3 + S) {
    int64_t b0, b1;
    cm_chunk_range(t, k - 3 - S, &b0, &b1);
    *out = malloc(sizeof(double) * 3 * (size_t)((b1 - b0) ? (b1 - b0) : 1));
    if (!*out) return rd_fail(st, RD_EFAIL, "out of memory");
    cm_bootstrap_block(&t->stream, t->F, t->U, b0, b1, *out, NULL);
    *n_out = 3 * (b1 - b0);
    if (t->prog) rd_progress_update(t->prog, t->prog_done += b1 - b0);
    return RD_OK;
  }
  if (k >= 3) return cm_strata_pack(&t->o->strata[k - 3], t->covs[k - 3], t->P, t->v[0], t->v[1], t->v[2], out, n_out, st);
  rd_summary s;
  double *o = malloc(8 * sizeof(double));
  if (!o || rd_summarize(t->v[k], (size_t)t->P, &s) != 0) {
    free(o);
    return rd_fail(st, RD_EFAIL, "out of memory");
  }
  double vals[8] = {(double)s.n, s.mean, s.sd, s.q05, s.q25, s.median, s.q75, s.q95};
  memcpy(o, vals, sizeof vals);
  *out = o;
  *n_out = 8;
  return RD_OK;
}

void cm_values_free(cm_values *v) {
  free(v->tm);
  free(v->tg);
  free(v->cm);
  free(v->n_train);
  free(v->F);
  memset(v, 0, sizeof *v);
}

/* Phase 3: per-pair TM and TG of the rank's rows with the backend kernel (tm, tg, ntr: [hi - lo]). */
static int pair_kernel(const rd_ctx *ctx, const cm_layout *L, const cm_rows *w, double *tm, double *tg, int32_t *ntr,
                       rd_status *st) {
  int64_t n = w->hi - w->lo;
  if (n > 0) {
    rd_cm_block blk = {.n_pairs = n, .n_runs = L->R, .ftype = L->ftype, .reward_chosen = w->rc,
                       .reward_rejected = w->rr, .in_train = w->flag};
    rd_cm_pairs res = {.tm = tm, .tg = tg, .n_train = ntr};
    char err[512] = "";
    const rd_backend *b = RD_BACKEND_FOR(ctx->backend, cm, pairs);
    if (b->cm->pairs(&blk, &res, err, sizeof err) != 0)
      rd_fail(st, RD_EFAIL, "%s backend failed in the cm kernel: %s", b->name, err);
  }
  return rd_agree(ctx, st);
}

int cm_pair_values(const rd_ctx *ctx, const rd_job *job, cm_input *in, cm_values *v, rd_status *st) {
  const cm_opts *o = job->opts;
  const cm_layout *L = &in->L;
  memset(v, 0, sizeof *v);
  int64_t n = in->w.hi - in->w.lo;
  double *tm = malloc(sizeof(double) * (size_t)(n ? n : 1));
  double *tg = malloc(sizeof(double) * (size_t)(n ? n : 1));
  int32_t *ntr = malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
  if (!tm || !tg || !ntr) rd_abort(ctx, __FILE__, __LINE__, "out of memory for per-pair values");
  if (pair_kernel(ctx, L, &in->w, tm, tg, ntr, st) != RD_OK) {
    free(tm);
    free(tg);
    free(ntr);
    return st->code;
  }
  cm_rows_free(&in->w);
  rd_timing_mark(ctx->rank, job->name, "pair kernel");
  /* Phase 4: every rank gets the per-pair values in pair order and forms the per-user sums
   * (identical everywhere, so nothing needs broadcasting); rank 0 sends the covariates. */
  int64_t P = v->P = L->P;
  v->tm = malloc(sizeof(double) * (size_t)P);
  v->tg = malloc(sizeof(double) * (size_t)P);
  v->cm = malloc(sizeof(double) * (size_t)P);
  v->n_train = malloc(sizeof(int32_t) * (size_t)P);
  if (!v->tm || !v->tg || !v->cm || !v->n_train)
    rd_abort(ctx, __FILE__, __LINE__, "out of memory for per-pair values");
  rd_allgather_rows(ctx, tm, v->tm, P, CM_BLOCK, sizeof(double));
  rd_allgather_rows(ctx, tg, v->tg, P, CM_BLOCK, sizeof(double));
  rd_gather_rows(ctx, ntr, v->n_train, P, CM_BLOCK, sizeof(int32_t));
  free(tm);
  free(tg);
  free(ntr);
  for (int64_t p = 0; p < P; p++) v->cm[p] = v->tm[p] - v->tg[p];
  v->F = cm_user_sums(&in->u, P, v->tm, v->tg, v->cm);
  if (!v->F) rd_abort(ctx, __FILE__, __LINE__, "out of memory for user sums");
  for (int i = 0; i < o->n_strata; i++) {
    if (ctx->rank != 0 && !(in->covs[i] = malloc(sizeof(double) * (size_t)P)))
      rd_abort(ctx, __FILE__, __LINE__, "out of memory for covariates");
    rd_bcast_bytes(ctx, in->covs[i], sizeof(double) * (size_t)P, 0);
  }
  return RD_OK;
}

void cm_task_results_free(cm_task_results *t) {
  rd_free_task_results(t->res, t->lens, t->n_tasks);
  free(t->boot);
  memset(t, 0, sizeof *t);
}

/* Phase 5: summaries, strata and chunks of bootstrap replicates, as tasks over ranks (balanced on
 * estimated costs: about 10 ns per pair for a summary, 22 for strata, 3.6 per drawn user). */
int cm_run_tasks(const rd_ctx *ctx, const rd_job *job, const rd_jobfile *jf, const cm_input *in, const cm_values *v,
                 cm_task_results *t, rd_status *st) {
  const cm_opts *o = job->opts;
  memset(t, 0, sizeof *t);
  int64_t P = v->P, B = o->bootstrap, S = o->n_strata;
  if (ctx->rank == 0 && !(t->boot = malloc(sizeof(double) * 3 * (size_t)(B ? B : 1))))
    rd_abort(ctx, __FILE__, __LINE__, "out of memory for the bootstrap");
  rd_timing_mark(ctx->rank, job->name, "gather+user sums");
  cm_tasks tasks = {.o = o, .P = P, .U = in->u.U, .v = {v->tm, v->tg, v->cm}, .covs = in->covs, .F = v->F};
  tasks.n_chunks = B == 0 ? 0 : (B < 8 * (int64_t)ctx->size ? B : 8 * (int64_t)ctx->size);
  rd_stream_init(&tasks.stream, jf->seed, job->name, "cm.bootstrap.users");
  int64_t n_tasks = t->n_tasks = 3 + S + tasks.n_chunks;
  double *cost = malloc(sizeof(double) * (size_t)n_tasks);
  int *owner = malloc(sizeof(int) * (size_t)n_tasks);
  if (!cost || !owner) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  for (int64_t k = 0; k < n_tasks; k++) {
    int64_t b0 = 0, b1 = 0;
    if (k >= 3 + S) cm_chunk_range(&tasks, k - 3 - S, &b0, &b1);
    cost[k] = k < 3 ? 10e-9 * (double)P : k < 3 + S ? 22e-9 * (double)P : 3.6e-9 * (double)(b1 - b0) * (double)in->u.U;
  }
  rd_assign_tasks(n_tasks, cost, ctx->size, owner);
  int64_t mine = 0;
  for (int64_t k = 3 + S; k < n_tasks; k++)
    if (owner[k] == ctx->rank) {
      int64_t b0, b1;
      cm_chunk_range(&tasks, k - 3 - S, &b0, &b1);
      mine += b1 - b0;
    }
  rd_progress prog;
  rd_progress_begin(&prog, ctx->quiet || B == 0 ? NULL : ctx->err, job->name, "bootstrap", mine);
  tasks.prog = &prog;
  if (rd_run_tasks(ctx, n_tasks, cost, cm_task, &tasks, &t->res, &t->lens, st) == RD_OK && ctx->rank == 0) {
    rd_progress_end(&prog);
    rd_timing_mark(ctx->rank, job->name, "summaries+bootstrap");
    for (int64_t k = 3 + S, pos = 0; k < n_tasks; k++) {
      memcpy(t->boot + pos, t->res[k], sizeof(double) * (size_t)t->lens[k]);
      pos += t->lens[k];
    }
  }
  free(cost);
  free(owner);
  return st->code;
}
