/* benchmark: per-item credits of the rank's tiles with the backend kernel (given credits laid over
 * them, the Ties rows' gaps and spreads set aside for the composite), then gathered in global order
 * (see docs/reference.md, 'Item credit'). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_internal.h"

/* The backend kernel over the rank's range, grouping whole rows into one call; gap and spread may
 * be NULL (no Ties rows to keep). */
static int credits_kernel(const rd_ctx *ctx, const bench_plan *p, const bench_rows *w, double *credit, double *gap,
                          double *spread, rd_status *st) {
  const bench_dims *d = &p->d;
  int64_t I = d->I;
  const rd_backend *be = RD_BACKEND_FOR(ctx->backend, bench, credits);
  const struct rd_bench_kernels *kt = be->bench;
  size_t es = d->ftype == RD_F32 ? 4 : 8;
  for (int64_t m = w->m0; m < w->m1 && st->code == RD_OK;) {
    int64_t i0 = w->lo - m * I, i1 = w->hi - m * I;
    i0 = i0 < 0 ? 0 : i0;
    i1 = i1 > I ? I : i1;
    int64_t rows = 1;
    if (i0 == 0 && i1 == I)
      while (m + rows < w->m1 && w->hi - (m + rows) * I >= I) rows++;
    int64_t at = m * I + i0 - w->lo;
    rd_bench_block blk = {.n_rows = rows, .n_items = i1 - i0, .offset = p->item_offset + i0,
                          .n_correct = p->n_correct + i0, .ftype = (rd_ftype)d->ftype,
                          .scores = (const char *)w->scores + (size_t)((m - w->m0) * d->C) * es,
                          .row_stride = d->C, .col0 = 0, .rule = (rd_bench_rule)d->rule};
    /* consecutive rows write consecutive runs of I credits only when whole rows are done */
    rd_bench_out out = {.credit = credit + at, .gap = gap ? gap + at : NULL, .spread = spread ? spread + at : NULL};
    char err[512] = "";
    if (kt->credits(&blk, &out, err, sizeof err) != 0)
      rd_fail(st, RD_EFAIL, "%s backend failed in the benchmark credit kernel: %s", be->name, err);
    m += rows;
  }
  return st->code;
}

/* A Ties row's own credit is its accuracy, min(correct) > max(incorrect) (the composite itself is
 * per prompt); each prompt's rows' gap and spread go into g, -inf where the rank has none. */
static void ties_parts(const bench_plan *p, const bench_rows *w, const double *gap, const double *spread,
                       double *credit, double *g) {
  const bench_dims *d = &p->d;
  int64_t I = d->I, P = d->n_prompts, n = w->hi - w->lo;
  for (int64_t k = 0; k < n; k++)
    if (p->item_subset[(w->lo + k) % I] == d->ties_subset) credit[k] = gap[k] > 0.0 ? 1.0 : 0.0;
  for (int64_t q = 0; q < d->M * P * 4; q++) g[q] = -INFINITY;
  for (int64_t m = w->m0; m < w->m1; m++)
    for (int64_t pr = 0; pr < P; pr++)
      for (int kind = 0; kind < 2; kind++) {
        int64_t i = kind ? p->prompt_tied[pr] : p->prompt_ref[pr], flat = m * I + i;
        if (i < 0 || flat < w->lo || flat >= w->hi) continue;
        g[(m * P + pr) * 4 + 2 * kind] = gap[flat - w->lo];
        g[(m * P + pr) * 4 + 2 * kind + 1] = spread[flat - w->lo];
      }
}

/* Credits of the rank's range: the kernel's, then given credits where not NaN, then the Ties
 * rows' (see bench_ties_build for g). */
static int rows_credits(const rd_ctx *ctx, const bench_plan *p, const bench_rows *w, double *credit, double *g,
                        rd_status *st) {
  const bench_dims *d = &p->d;
  int want_ties = d->n_prompts > 0;
  double *gap = NULL, *spread = NULL;
  int64_t n = w->hi - w->lo;
  if (want_ties) {
    gap = malloc(sizeof(double) * (size_t)(n ? n : 1));
    spread = malloc(sizeof(double) * (size_t)(n ? n : 1));
    if (!gap || !spread) {
      free(gap);
      free(spread);
      return rd_fail(st, RD_EFAIL, "out of memory");
    }
  }
  credits_kernel(ctx, p, w, credit, gap, spread, st);
  if (st->code == RD_OK && w->given)
    for (int64_t k = 0; k < n; k++) {
      int64_t flat = w->lo + k, m = flat / d->I, i = flat % d->I;
      double v = w->given[(m - w->m0) * d->I + i];
      if (!isnan(v)) credit[k] = v;
    }
  if (st->code == RD_OK && want_ties) ties_parts(p, w, gap, spread, credit, g);
  free(gap);
  free(spread);
  return st->code;
}

/* Every rank (or rank 0 only) receives the flat credit ranges of all ranks in order. */
static void gather_credits(const rd_ctx *ctx, const bench_dims *d, const double *mine, double *all, int everyone) {
  int *counts = malloc(sizeof(int) * (size_t)ctx->size), *displs = malloc(sizeof(int) * (size_t)ctx->size);
  if (!counts || !displs) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  for (int r = 0; r < ctx->size; r++) {
    int64_t lo, hi;
    bench_rank_range(d, ctx->size, r, &lo, &hi);
    counts[r] = (int)(hi - lo);
    displs[r] = (int)lo;
  }
  if (everyone)
    RD_MPI_CHECK(ctx, MPI_Allgatherv(mine, counts[ctx->rank], MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, ctx->comm));
  else
    RD_MPI_CHECK(ctx, MPI_Gatherv(mine, counts[ctx->rank], MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, 0, ctx->comm));
  free(counts);
  free(displs);
}

int bench_credits(const rd_ctx *ctx, const rd_job *job, const bench_plan *p, bench_rows *w, int everyone,
                  double **credit, double **g, rd_status *st) {
  const bench_dims *d = &p->d;
  int64_t n = w->hi - w->lo, G = d->M * d->n_prompts * 4;
  /* on huge pages where the kernel allows: fresh 4 KiB pages cost a fault each, and on some
   * virtual machines a fault costs more than computing the credit */
  double *mine = rd_malloc_big(sizeof(double) * (size_t)(n ? n : 1), st, "credits");
  *g = malloc(sizeof(double) * (size_t)(G ? G : 1));
  if (!mine || !*g) rd_abort(ctx, __FILE__, __LINE__, "out of memory for credits");
  rows_credits(ctx, p, w, mine, *g, st);
  if (rd_agree(ctx, st) != RD_OK) {
    free(mine);
    return st->code;
  }
  bench_rows_free(w);
  rd_timing_mark(ctx->rank, job->name, "credits");

  /* in global order, everywhere when the bootstrap needs them; one rank's range is every credit
   * in global order, handed over as it is */
  if (ctx->size == 1) {
    *credit = mine;
    mine = NULL;
  } else if ((everyone || ctx->rank == 0) &&
      !(*credit = rd_malloc_big(sizeof(double) * (size_t)(d->M * d->I), st, "credits")))
    rd_abort(ctx, __FILE__, __LINE__, "out of memory for credits");
  if (mine) gather_credits(ctx, d, mine, *credit, everyone);
  if (G > 0) RD_MPI_CHECK(ctx, MPI_Allreduce(MPI_IN_PLACE, *g, (int)G, MPI_DOUBLE, MPI_MAX, ctx->comm));
  free(mine);
  rd_timing_mark(ctx->rank, job->name, "gather credits");
  return RD_OK;
}
