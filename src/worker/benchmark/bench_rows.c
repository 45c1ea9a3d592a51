/* benchmark: each rank's tiles of models × item blocks: which part of the credit matrix a rank
 * owns, mapping or reading its rows of scores (and given credits), and checking their values so
 * that the lowest offending index is reported whatever the rank count. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_internal.h"
#include "rmdiag/kernels/scan.h"

/* Tiles are (model, item block) in row-major order; a rank owns a contiguous run of them, which
 * is a contiguous range [lo, hi) of the flat [M × I] credit matrix. */
static int64_t tile_start(const bench_dims *d, int64_t t) {
  int64_t nb = (d->I + BENCH_ITEM_BLOCK - 1) / BENCH_ITEM_BLOCK;
  if (t >= d->M * nb) return d->M * d->I;
  return (t / nb) * d->I + (t % nb) * BENCH_ITEM_BLOCK;
}

void bench_rank_range(const bench_dims *d, int size, int rank, int64_t *lo, int64_t *hi) {
  int64_t nb = (d->I + BENCH_ITEM_BLOCK - 1) / BENCH_ITEM_BLOCK, t0, t1;
  rd_split_range(d->M * nb, size, rank, &t0, &t1);
  *lo = tile_start(d, t0);
  *hi = tile_start(d, t1);
}

void bench_rows_free(bench_rows *w) {
  for (int i = 0; i < 2; i++) {
    free(w->own[i]);
    rd_h5_unmap(&w->map[i]);
    w->own[i] = NULL;
  }
}

/* Maps (contiguous datasets) or reads rows [m0, m1) of a [M, cols] dataset. When the read fails, the
 * rows are read one by one to find the first model whose row cannot be read: the error is keyed by
 * that row's first element (key_base + m * cols), so it is the same for any rank count, and *good
 * is the number of rows before it (still checked: an earlier bad value outranks it). */
static const void *rows_get(hid_t *f, const rd_job *job, const rd_dsinfo *ds, int64_t off, rd_ftype ft, int64_t m0,
                            int64_t n, void **own, rd_h5_map *map, int64_t key_base, int64_t *good, rd_status *st) {
  size_t es = ft == RD_F32 ? 4 : 8;
  int64_t cols = ds->dims[1];
  *good = n;
  if (off >= 0) {
    const void *p = rd_map_rows(job->input, off, cols * (int64_t)es, m0, n, map);
    if (p) return p;
  }
  if (*f < 0 && rd_h5_open(job->input, MPI_COMM_NULL, f, st) != RD_OK) return NULL;
  *own = rd_malloc_big(es * (size_t)(n * cols) + 1, st, "score rows");
  if (!*own) return NULL;
  rd_status one;
  rd_status_init(&one);
  if (rd_h5_read_float_rows(*f, job->input, ds, m0, n, ft, *own, &one) == RD_OK) return *own;
  for (int64_t m = m0; m < m0 + n; m++) {
    rd_status_init(&one);
    if (rd_h5_read_float_rows(*f, job->input, ds, m, 1, ft, (char *)*own + (size_t)((m - m0) * cols) * es, &one) !=
        RD_OK) {
      *good = m - m0;
      rd_fail_at(st, one.code, key_base + m * cols, "%s", one.msg);
      return *own;
    }
  }
  return *own;
}

/* Item holding completion column c. */
static int64_t item_of_column(const bench_plan *p, int64_t c) {
  int64_t lo = 0, hi = p->d.I;  /* offset[lo] <= c < offset[hi] */
  while (hi - lo > 1) {
    int64_t mid = (lo + hi) / 2;
    if (p->item_offset[mid] <= c) lo = mid;
    else hi = mid;
  }
  return lo;
}

/* The items [*i0, *i1) of model m inside the rank's flat range. */
static void row_items(const bench_dims *d, const bench_rows *w, int64_t m, int64_t *i0, int64_t *i1) {
  *i0 = w->lo - m * d->I;
  *i1 = w->hi - m * d->I;
  *i0 = *i0 < 0 ? 0 : *i0;
  *i1 = *i1 > d->I ? d->I : *i1;
}

/* Every score of the rank's part finite (key m * C + c); rows [m0, m0 + good) only. */
static int check_scores(const bench_plan *p, const rd_job *job, const bench_rows *w, int64_t good, rd_status *st) {
  const bench_dims *d = &p->d;
  for (int64_t m = w->m0; m < w->m0 + good; m++) {
    int64_t i0, i1;
    row_items(d, w, m, &i0, &i1);
    int64_t c0 = p->item_offset[i0], c1 = p->item_offset[i1];
    int64_t k = d->ftype == RD_F32
                    ? rd_first_nonfinite_f32((const float *)w->scores + (m - w->m0) * d->C + c0, c1 - c0)
                    : rd_first_nonfinite_f64((const double *)w->scores + (m - w->m0) * d->C + c0, c1 - c0);
    if (k < 0) continue;
    int64_t c = c0 + k, i = item_of_column(p, c);
    double v = d->ftype == RD_F32 ? (double)((const float *)w->scores)[(m - w->m0) * d->C + c]
                                  : ((const double *)w->scores)[(m - w->m0) * d->C + c];
    return rd_fail_at(st, RD_EINPUT, m * d->C + c, "%s: %s[%lld, %lld] = %g (model %lld \"%s\", item %lld, its "
                      "completion %lld): expected a finite score", job->input, d->scores_ds.path, (long long)m,
                      (long long)c, v, (long long)m, bench_model_name(p, m), (long long)i,
                      (long long)(c - p->item_offset[i]));
  }
  return RD_OK;
}

/* Given credits NaN or within [0, 1], and NaN on Ties rows (key M * C + m * I + i). */
static int check_given(const bench_plan *p, const rd_job *job, const bench_rows *w, int64_t good, rd_status *st) {
  const bench_dims *d = &p->d;
  for (int64_t m = w->m0; m < w->m0 + good; m++) {
    int64_t i0, i1;
    row_items(d, w, m, &i0, &i1);
    for (int64_t i = i0; i < i1; i++) {
      double v = w->given[(m - w->m0) * d->I + i];
      if (isnan(v)) continue;
      const char *why = NULL;
      if (!(v >= 0.0 && v <= 1.0)) why = "expected a credit in [0, 1], or NaN where the credit comes from the scores";
      else if (p->item_subset[i] == d->ties_subset)
        why = "the item is in the Ties subset, whose composite needs the scores; expected NaN";
      if (why)
        return rd_fail_at(st, RD_EINPUT, d->M * d->C + m * d->I + i, "%s: %s[%lld, %lld] = %g (model \"%s\", item "
                          "%lld): %s", job->input, d->given_ds.path, (long long)m, (long long)i, v,
                          bench_model_name(p, m), (long long)i, why);
    }
  }
  return RD_OK;
}

/* Reads the rank's rows and checks its part of them. */
static int rows_read(const bench_plan *p, const rd_job *job, bench_rows *w, rd_status *st) {
  const bench_dims *d = &p->d;
  hid_t f = H5I_INVALID_HID;
  int64_t n = w->m1 - w->m0;
  if (n <= 0) return RD_OK;
  int64_t good[2] = {0, 0};
  w->scores = rows_get(&f, job, &d->scores_ds, d->scores_off, (rd_ftype)d->ftype, w->m0, n, &w->own[0], &w->map[0], 0,
                       &good[0], st);
  if (w->scores && d->has_given)
    w->given = rows_get(&f, job, &d->given_ds, d->given_off, RD_F64, w->m0, n, &w->own[1], &w->map[1], d->M * d->C,
                        &good[1], st);
  if (f >= 0) rd_h5_close(f);
  if (!w->scores || (d->has_given && !w->given)) return st->code;  /* memory, opening or mapping failed */
  /* a bad value outranks a row that could not be read after it (the lower key wins) */
  if (check_scores(p, job, w, good[0], st) == RD_OK && w->given) check_given(p, job, w, good[1], st);
  return st->code;
}

/* Phases 1-2 (collective): rank 0 checks the layout, reads and checks the item tables and resolves
 * the scheme, and every rank gets the plan; then every rank maps (or reads) its tiles of models x
 * item blocks and checks their values. Each phase ends agreed, the value errors by their keys, so
 * the lowest offending index is reported whatever the rank count. */
int bench_load(const rd_ctx *ctx, const rd_job *job, bench_plan *p, bench_root *r, bench_rows *w, rd_status *st) {
  if (ctx->rank == 0) {
    hid_t f;
    if (rd_h5_open(job->input, MPI_COMM_NULL, &f, st) == RD_OK) {
      bench_prepare(f, job, p, r, st);
      rd_h5_close(f);
    }
  }
  if (rd_share_status(ctx, st, 0) != RD_OK) return st->code;
  bench_plan_share(ctx, p);
  rd_timing_mark(ctx->rank, job->name, "layout+tables");
  const bench_dims *d = &p->d;
  if (!d->accuracy_mode) {
    bench_rank_range(d, ctx->size, ctx->rank, &w->lo, &w->hi);
    w->m0 = w->lo / d->I;
    w->m1 = w->hi > w->lo ? (w->hi - 1) / d->I + 1 : w->m0;
    rows_read(p, job, w, st);
    if (rd_agree(ctx, st) != RD_OK) return st->code;
    rd_timing_mark(ctx->rank, job->name, "read+check scores");
  }
  return RD_OK;
}

int bench_check(const rd_ctx *ctx, const rd_job *job, const rd_jobfile *jf, rd_status *st) {
  (void)jf;
  bench_plan p;
  bench_root r;
  bench_rows w;
  memset(&p, 0, sizeof p);
  memset(&r, 0, sizeof r);
  memset(&w, 0, sizeof w);
  bench_load(ctx, job, &p, &r, &w, st);
  bench_rows_free(&w);
  bench_plan_free(&p);
  bench_root_free(&r);
  return st->code;
}
