/* cm: the per-pair values and what is computed where they are. The CPU kernel runs while the rows
 * are checked (cm_read.c), other backends here; then, collectively: the summaries of TM, TG, CM
 * over the ranks' parts (dstats.h: the same bits as over the whole array), the per-user sums
 * passed from rank to rank so that every user's sums run in pair order, and the per-pair values
 * gathered on rank 0 for the output. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_internal.h"
#include "rmdiag/common/dstats.h"
#include "rmdiag/kernels/backend.h"
#include "rmdiag/kernels/cm.h"
#include "rmdiag/kernels/stats.h"

void cm_values_free(cm_values *v) {
  free(v->tm);
  free(v->tg);
  free(v->cm);
  free(v->n_train);
  free(v->F);
  memset(v, 0, sizeof *v);
}

void cm_values_alloc(const rd_ctx *ctx, int64_t P, int64_t lo, int64_t hi, cm_values *v) {
  memset(v, 0, sizeof *v);
  v->P = P;
  v->lo = lo;
  v->hi = hi;
  /* rank 0's pairs come first (lo = 0): its arrays hold every pair once gathered */
  size_t n = (size_t)(ctx->rank == 0 ? P : hi - lo);
  if (n == 0) n = 1;
  /* large arrays in huge pages where the system allows: one fault per 2 MiB instead of 512 */
  rd_status st;
  rd_status_init(&st);
  v->tm = rd_malloc_big(sizeof(double) * n, &st, "per-pair values");
  v->tg = rd_malloc_big(sizeof(double) * n, &st, "per-pair values");
  v->cm = rd_malloc_big(sizeof(double) * n, &st, "per-pair values");
  v->n_train = rd_malloc_big(sizeof(int32_t) * n, &st, "per-pair values");
  if (!v->tm || !v->tg || !v->cm || !v->n_train) rd_abort(ctx, __FILE__, __LINE__, "out of memory for per-pair values");
}

/* Phase 3 for backends other than the CPU: the kernel over the rank's checked rows. */
static int pair_kernel(const rd_ctx *ctx, const cm_layout *L, const cm_rows *w, cm_values *v, rd_status *st) {
  int64_t n = w->hi - w->lo;
  if (n > 0) {
    rd_cm_block blk = {.n_pairs = n, .n_runs = L->R, .ftype = L->ftype, .reward_chosen = w->rc,
                       .reward_rejected = w->rr, .in_train = w->flag};
    rd_cm_pairs res = {.tm = v->tm, .tg = v->tg, .n_train = v->n_train};
    char err[512] = "";
    const rd_backend *b = RD_BACKEND_FOR(ctx->backend, cm, pairs);
    if (b->cm->pairs(&blk, &res, err, sizeof err) != 0)
      rd_fail(st, RD_EFAIL, "%s backend failed in the cm kernel: %s", b->name, err);
  }
  return rd_agree(ctx, st);
}

/* CM = TM - TG over the rank's n pairs, and the summaries of TM, TG, CM over every rank's pairs,
 * where they are (rank 0 gets them). The pass that makes CM notes, a cache-sized block at a time,
 * the counts and histograms the summaries would otherwise read the three arrays again for. */
#define NOTE_BLOCK 4096
static int cm_and_summaries(const rd_ctx *ctx, int64_t n, cm_values *v) {
  rd_dist_notes notes;
  int noted = rd_dist_notes_init(&notes, 3) == 0;
  for (int64_t b = 0; b < n; b += NOTE_BLOCK) {
    int64_t e = n - b < NOTE_BLOCK ? n : b + NOTE_BLOCK;
    for (int64_t i = b; i < e; i++) v->cm[i] = v->tm[i] - v->tg[i];
    if (!noted) continue;
    rd_dist_notes_add(&notes, 0, v->tm + b, (size_t)(e - b));
    rd_dist_notes_add(&notes, 1, v->tg + b, (size_t)(e - b));
    rd_dist_notes_add(&notes, 2, v->cm + b, (size_t)(e - b));
  }
  const double *x[3] = {v->tm, v->tg, v->cm};
  size_t m[3] = {(size_t)n, (size_t)n, (size_t)n};
  int rc = rd_dist_summaries(ctx, 3, x, m, noted ? &notes : NULL, v->sum);
  if (noted) rd_dist_notes_free(&notes);
  return rc;
}

/* Per-user sums of the rank's n pairs added to acc ([U][8]: sum, count of TM, TG, CM, then two
 * unused, one cache line per user), in pair order. The users' lines are fetched ahead: the pairs'
 * users are scattered and the table is larger than L2. */
#define USER_STRIDE 8
#define AHEAD 16
static void add_user_sums(const int32_t *of_pair, int64_t n, const double *tm, const double *tg, const double *cm,
                          double *acc) {
  for (int64_t i = 0; i < n; i++) {
    if (i + AHEAD < n) __builtin_prefetch(acc + USER_STRIDE * (int64_t)of_pair[i + AHEAD], 1);
    double *a = acc + USER_STRIDE * (int64_t)of_pair[i];
    const double x[3] = {tm[i], tg[i], cm[i]};
    for (int j = 0; j < 3; j++)
      if (!isnan(x[j])) {
        a[2 * j] += x[j];
        a[2 * j + 1] += 1.0;
      }
  }
}

int cm_user_sums(const rd_ctx *ctx, const cm_users *u, int64_t n, const double *tm, const double *tg, const double *cm,
                 double **F) {
  int64_t U = u->U;
  rd_status st;
  rd_status_init(&st);
  size_t bytes = sizeof(double) * USER_STRIDE * (size_t)(U ? U : 1);
  double *acc = rd_malloc_big(bytes, &st, "user sums");
  double *f = malloc(sizeof(double) * 6 * (size_t)(U ? U : 1));
  if (!acc || !f) rd_abort(ctx, __FILE__, __LINE__, "out of memory for user sums");
  /* a user's sum adds its pairs in pair order: each rank continues the sums where the rank before
   * it left them (floating-point addition is not associative, so partial sums per rank could not be
   * combined into the same bits) */
  if (ctx->rank > 0) {
    rd_wait_for(ctx, ctx->rank - 1, 70);  /* the ranks before are adding their pairs */
    rd_recv_bytes(ctx, acc, bytes, ctx->rank - 1, 71);
  } else {
    memset(acc, 0, bytes);
  }
  add_user_sums(u->of_pair, n, tm, tg, cm, acc);
  if (ctx->rank + 1 < ctx->size) {
    rd_signal(ctx, ctx->rank + 1, 70);
    rd_send_bytes(ctx, acc, bytes, ctx->rank + 1, 71);
  }
  rd_barrier_paced(ctx);  /* the ranks after are adding theirs */
  rd_bcast_bytes(ctx, acc, bytes, ctx->size - 1);
  for (int64_t k = 0; k < U; k++)
    for (int j = 0; j < 6; j++) f[j * U + k] = acc[USER_STRIDE * k + j];
  free(acc);
  *F = f;
  return RD_OK;
}

int cm_pair_values(const rd_ctx *ctx, const rd_job *job, cm_input *in, cm_values *v, rd_status *st) {
  const cm_layout *L = &in->L;
  int64_t n = v->hi - v->lo, P = v->P;
  if (!v->computed && pair_kernel(ctx, L, &in->w, v, st) != RD_OK) return st->code;
  cm_rows_free(&in->w);
  rd_timing_mark(ctx->rank, job->name, "pair kernel");
  cm_and_summaries(ctx, n, v);
  rd_timing_mark(ctx->rank, job->name, "summaries");
  cm_user_sums(ctx, &in->u, n, v->tm, v->tg, v->cm, &v->F);
  rd_timing_mark(ctx->rank, job->name, "user sums");
  /* the per-pair values on rank 0 (its own already in place), for the output and the strata */
  rd_gather_rows_inplace(ctx, v->tm, P, CM_BLOCK, sizeof(double));
  rd_gather_rows_inplace(ctx, v->tg, P, CM_BLOCK, sizeof(double));
  rd_gather_rows_inplace(ctx, v->n_train, P, CM_BLOCK, sizeof(int32_t));
  if (ctx->rank == 0)
    for (int64_t p = n; p < P; p++) v->cm[p] = v->tm[p] - v->tg[p];
  rd_timing_mark(ctx->rank, job->name, "gather");
  return RD_OK;
}
