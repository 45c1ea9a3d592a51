/* benchmark: the distributed bootstrap (see docs/reference.md, 'Bootstrap and comparisons').
 * Blocks of 16 replicates (every model's sections and score, Q = M × K values each) are handed out
 * to the ranks as they ask (rank 0 first does its serial report work); an all-to-all exchange then
 * gives each rank every replicate of its share of the quantities, rd_split_range(Q, size, r), whose
 * percentile intervals it computes. With comparisons,
 * every rank receives all models' score replicates (and section replicates with "compare_sections")
 * and computes its share of the compared (pair, quantity) units. Rank 0
 * gathers the intervals ci [Q × 3: lo, hi, dropped] and comparisons cmp [n_cmp × 4: lo, hi, p, used].
 * Each value is computed whole by one rank from the same replicates, whatever the rank count. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_internal.h"
#include "rmdiag/kernels/stats.h"

/* Counts and displacements (in elements) of a gather where rank r contributes per * its share of n. */
static void share_counts(int64_t n, int size, int64_t per, int *counts, int *displs) {
  for (int r = 0, pos = 0; r < size; r++) {
    int64_t r0, r1;
    rd_split_range(n, size, r, &r0, &r1);
    counts[r] = (int)(per * (r1 - r0));
    displs[r] = pos;
    pos += counts[r];
  }
}

/* Replicates computed per block (blocks of every quantity's replicates b0..b0+15, b0 a multiple of
 * 16: fixed by the replicate index, whatever the rank count), then moved into the rank's columns:
 * 16 replicates of every quantity (16 Q doubles, cache-sized for a few hundred models) at a time. */
#define BOOT_BLOCK 16

/* The replicate blocks this rank computed (handed out from a counter, in the order it took them)
 * and its share of the quantities [q0, q1). */
typedef struct boot_share {
  int64_t B, M, K, Q;
  int64_t n_blk, q0, q1, nq;
  int64_t *blk, n_mine;  /* the rank's blocks in the order it took them */
} boot_share;

static void boot_share_init(const rd_ctx *ctx, const bench_dims *d, int64_t B, boot_share *s) {
  memset(s, 0, sizeof *s);
  s->B = B;
  s->M = d->M;
  s->K = d->n_sec + 1;
  s->Q = s->M * s->K;
  s->n_blk = (B + BOOT_BLOCK - 1) / BOOT_BLOCK;
  rd_split_range(s->Q, ctx->size, ctx->rank, &s->q0, &s->q1);
  s->nq = s->q1 - s->q0;
  s->blk = malloc(sizeof(int64_t) * (size_t)(s->n_blk + 1));
  if (!s->blk) rd_abort(ctx, __FILE__, __LINE__, "out of memory for the bootstrap");
}

static int64_t blk_width(const boot_share *s, int64_t k) {
  return s->B - k * BOOT_BLOCK < BOOT_BLOCK ? s->B - k * BOOT_BLOCK : BOOT_BLOCK;
}

/* The rank's replicates. On one rank the blocks come in order and go straight into the columns,
 * T[q * B + b]. On several, T holds the rank's blocks in the order it took them, each quantity-major
 * with rows of 16: its j-th block at T + j * Q * 16, replicate b0 + i of quantity q at [q * 16 + i];
 * a rank touches only the pages of its own blocks. Blocks are handed out as ranks ask; rank 0 first
 * runs `first` (its serial work that does not need the replicates), so the others take more blocks
 * meanwhile. Each block is computed replicate-major into a small buffer and moved into place eight
 * quantities (one cache line of a replicate) at a time. */
static double *boot_replicates(const rd_ctx *ctx, const bench_eval *E, boot_share *s, int64_t seed, const char *job,
                               void (*first)(void *), void *first_arg, rd_progress *prog, rd_status *st) {
  int64_t Q = s->Q, B = s->B, stride = ctx->size == 1 ? B : BOOT_BLOCK;
  /* large buffers on huge pages where the kernel allows (fewer fresh-page faults) */
  double *T = rd_malloc_big(sizeof(double) * (size_t)(s->n_blk * BOOT_BLOCK * Q + 1), st, "bootstrap replicates");
  double *buf = malloc(sizeof(double) * (size_t)(BOOT_BLOCK * Q + 1));
  if (!T || !buf) rd_abort(ctx, __FILE__, __LINE__, "out of memory for the bootstrap");
  rd_handout h;
  rd_handout_open(ctx, s->n_blk, &h);
  if (ctx->rank == 0 && first) first(first_arg);
  for (int64_t k; st->code == RD_OK && (k = rd_handout_next(ctx, &h)) >= 0;) {
    int64_t b = k * BOOT_BLOCK, w = blk_width(s, k);
    double *dst = ctx->size == 1 ? T + b : T + s->n_mine * Q * BOOT_BLOCK;
    if (bench_bootstrap_block(E, seed, job, b, b + w, buf, st) != RD_OK) break;
    for (int64_t qa = 0; qa < Q; qa += 8) {
      int64_t qn = Q - qa < 8 ? Q - qa : 8;
      for (int64_t i = 0; i < w; i++)
        for (int64_t j = 0; j < qn; j++) dst[(qa + j) * stride + i] = buf[i * Q + qa + j];
    }
    s->blk[s->n_mine++] = k;
    if (prog) rd_progress_update(prog, b + w);  /* (handed out so far, over all ranks) */
  }
  rd_handout_close(ctx, &h);
  free(buf);
  if (rd_agree(ctx, st) != RD_OK) {
    free(T);
    return NULL;
  }
  return T;
}

/* A datatype of `n` blocks of `vec` doubles each, block i at byte displacement at[i] laid out as
 * vector(count, w_i, stride): w_i = 16, or fewer for the last replicate block. */
static MPI_Datatype blocks_type(const rd_ctx *ctx, const boot_share *s, int n, const int64_t *blk, const MPI_Aint *at,
                                int count, int stride) {
  MPI_Datatype full, part, t;
  int64_t last = s->n_blk - 1, wl = blk_width(s, last);
  RD_MPI_CHECK(ctx, MPI_Type_vector(count, BOOT_BLOCK, stride, MPI_DOUBLE, &full));
  RD_MPI_CHECK(ctx, MPI_Type_vector(count, (int)wl, stride, MPI_DOUBLE, &part));
  int *ones = malloc(sizeof(int) * (size_t)(n + 1));
  MPI_Datatype *ty = malloc(sizeof(MPI_Datatype) * (size_t)(n + 1));
  if (!ones || !ty) rd_abort(ctx, __FILE__, __LINE__, "out of memory for the bootstrap");
  for (int i = 0; i < n; i++) {
    ones[i] = 1;
    ty[i] = blk[i] == last ? part : full;
  }
  RD_MPI_CHECK(ctx, MPI_Type_create_struct(n, ones, at, ty, &t));
  RD_MPI_CHECK(ctx, MPI_Type_commit(&t));
  MPI_Type_free(&full);
  MPI_Type_free(&part);
  free(ones);
  free(ty);
  return t;
}

/* Every replicate of the rank's quantities, quantity-major: cols[(q - q0) * B + b], from the rank's
 * replicates T (freed). To each rank r a rank sends, from each of its blocks, the rows of r's
 * quantities; r places them at the block's replicates in its columns (datatypes built from the list
 * of who took which block). */
static double *boot_columns(const rd_ctx *ctx, const boot_share *s, double *T, rd_status *st) {
  int size = ctx->size;
  int64_t B = s->B, Q = s->Q;
  if (size == 1) return T;  /* one rank: its blocks were taken in order, T is the columns */
  if (B > INT32_MAX || s->nq * BOOT_BLOCK > INT32_MAX || Q * BOOT_BLOCK > INT32_MAX)
    rd_abort(ctx, __FILE__, __LINE__, "too many bootstrap quantities or resamples to exchange");
  double *cols = rd_malloc_big(sizeof(double) * (size_t)(s->nq * B + 1), st, "bootstrap replicates");
  int *cnt = malloc(sizeof(int) * (size_t)size), *dsp = malloc(sizeof(int) * (size_t)size);
  int *zero = calloc((size_t)size, sizeof(int)), *sc = malloc(sizeof(int) * (size_t)size);
  int *rcn = malloc(sizeof(int) * (size_t)size);
  int64_t *all = malloc(sizeof(int64_t) * (size_t)(s->n_blk + 1));
  MPI_Aint *at = malloc(sizeof(MPI_Aint) * (size_t)(s->n_blk + 1));
  MPI_Datatype *rt = malloc(sizeof(MPI_Datatype) * (size_t)size), *stp = malloc(sizeof(MPI_Datatype) * (size_t)size);
  if (!cols || !cnt || !dsp || !zero || !sc || !rcn || !all || !at || !rt || !stp)
    rd_abort(ctx, __FILE__, __LINE__, "out of memory for the bootstrap");
  /* who took which blocks, in the order they took them */
  int mine = (int)s->n_mine;
  RD_MPI_CHECK(ctx, MPI_Allgather(&mine, 1, MPI_INT, cnt, 1, MPI_INT, ctx->comm));
  for (int r = 0, pos = 0; r < size; r++) {
    dsp[r] = pos;
    pos += cnt[r];
  }
  RD_MPI_CHECK(ctx, MPI_Allgatherv(s->blk, mine, MPI_INT64_T, all, cnt, dsp, MPI_INT64_T, ctx->comm));
  for (int r = 0; r < size; r++) {
    /* to rank r: from each of this rank's blocks, the rows of r's quantities */
    int64_t rq0, rq1;
    rd_split_range(Q, size, r, &rq0, &rq1);
    for (int j = 0; j < mine; j++) at[j] = (MPI_Aint)((j * Q + rq0) * BOOT_BLOCK) * (MPI_Aint)sizeof(double);
    stp[r] = blocks_type(ctx, s, mine, s->blk, at, (int)(rq1 - rq0), BOOT_BLOCK);
    sc[r] = rq1 > rq0 && mine > 0;
    /* from rank r: each of r's blocks at its replicates, in every row of this rank's quantities */
    for (int j = 0; j < cnt[r]; j++) at[j] = (MPI_Aint)(all[dsp[r] + j] * BOOT_BLOCK) * (MPI_Aint)sizeof(double);
    rt[r] = blocks_type(ctx, s, cnt[r], all + dsp[r], at, (int)s->nq, (int)B);
    rcn[r] = s->nq > 0 && cnt[r] > 0;
  }
  RD_MPI_CHECK(ctx, MPI_Alltoallw(T, sc, zero, stp, cols, rcn, zero, rt, ctx->comm));
  for (int r = 0; r < size; r++) {
    MPI_Type_free(&rt[r]);
    MPI_Type_free(&stp[r]);
  }
  free(T);
  free(cnt);
  free(dsp);
  free(zero);
  free(sc);
  free(rcn);
  free(all);
  free(at);
  free(rt);
  free(stp);
  return cols;
}

/* Whether quantity q (model q / K, section q % K, the score at K - 1) is compared. */
static int compared(const boot_share *s, int per_pair, int64_t q) { return per_pair > 1 || q % s->K == s->K - 1; }

/* The replicates of every compared quantity, on every rank: [M × B] scores, or [M × K × B] sections
 * and scores with per_pair = K; each rank sends the compared columns it owns. */
static double *boot_compared(const rd_ctx *ctx, const boot_share *s, int per_pair, const double *cols) {
  int64_t B = s->B;
  double *all = malloc(sizeof(double) * (size_t)(s->M * per_pair * B));
  double *mine = malloc(sizeof(double) * (size_t)(s->nq * B + 1));
  int *rc = malloc(sizeof(int) * (size_t)ctx->size), *rdp = malloc(sizeof(int) * (size_t)ctx->size);
  if (!all || !mine || !rc || !rdp) rd_abort(ctx, __FILE__, __LINE__, "out of memory for the comparisons");
  int64_t n_mine = 0;
  for (int64_t q = s->q0; q < s->q1; q++)
    if (compared(s, per_pair, q)) memcpy(mine + (n_mine++) * B, cols + (q - s->q0) * B, sizeof(double) * (size_t)B);
  for (int r = 0, pos = 0; r < ctx->size; r++) {
    int64_t sq0, sq1, cnt = 0;
    rd_split_range(s->Q, ctx->size, r, &sq0, &sq1);
    for (int64_t q = sq0; q < sq1; q++) cnt += compared(s, per_pair, q);
    rc[r] = (int)(cnt * B);
    rdp[r] = pos;
    pos += rc[r];
  }
  RD_MPI_CHECK(ctx, MPI_Allgatherv(mine, (int)(n_mine * B), MPI_DOUBLE, all, rc, rdp, MPI_DOUBLE, ctx->comm));
  free(mine);
  free(rc);
  free(rdp);
  return all;
}

/* Percentile intervals of the rank's quantities, gathered on rank 0 into ci (sorts the columns, so
 * the score replicates for the comparisons are taken first). */
static void boot_intervals(const rd_ctx *ctx, const boot_share *s, double *cols, double *ci) {
  double *myci = malloc(sizeof(double) * (size_t)(3 * s->nq + 1));
  int *rc = malloc(sizeof(int) * (size_t)ctx->size), *rdp = malloc(sizeof(int) * (size_t)ctx->size);
  if (!myci || !rc || !rdp) rd_abort(ctx, __FILE__, __LINE__, "out of memory for the bootstrap");
  for (int64_t q = 0; q < s->nq; q++) {
    double lo, hi;
    size_t dropped = rd_percentile_ci95(cols + q * s->B, (size_t)s->B, &lo, &hi);
    myci[3 * q] = lo;
    myci[3 * q + 1] = hi;
    myci[3 * q + 2] = (double)dropped;
  }
  share_counts(s->Q, ctx->size, 3, rc, rdp);
  RD_MPI_CHECK(ctx, MPI_Gatherv(myci, (int)(3 * s->nq), MPI_DOUBLE, ci, rc, rdp, MPI_DOUBLE, 0, ctx->comm));
  free(myci);
  free(rc);
  free(rdp);
}

/* The rank's share of the paired comparisons, gathered on rank 0 into cmp: unit u = pair × per_pair
 * + j compares quantity j of the pair's two models (rows of `rep`, per_pair rows per model). */
static void boot_comparisons(const rd_ctx *ctx, const boot_share *s, const double *rep, int per_pair, int n_cmp,
                             const int *cmp_a, const int *cmp_b, double *cmp) {
  int64_t B = s->B, c0, c1, n_units = (int64_t)n_cmp * per_pair;
  rd_split_range(n_units, ctx->size, ctx->rank, &c0, &c1);
  double *mycmp = malloc(sizeof(double) * (size_t)(4 * (c1 - c0) + 1));
  double *scratch = malloc(sizeof(double) * (size_t)(B + 1));
  int *rc = malloc(sizeof(int) * (size_t)ctx->size), *rdp = malloc(sizeof(int) * (size_t)ctx->size);
  if (!mycmp || !scratch || !rc || !rdp) rd_abort(ctx, __FILE__, __LINE__, "out of memory for the comparisons");
  for (int64_t u = c0; u < c1; u++) {
    int64_t c = u / per_pair, j = u % per_pair;
    const double *a = rep + ((int64_t)cmp_a[c] * per_pair + j) * B, *b = rep + ((int64_t)cmp_b[c] * per_pair + j) * B;
    bench_compare_pair(a, b, B, scratch, mycmp + 4 * (u - c0));
  }
  share_counts(n_units, ctx->size, 4, rc, rdp);
  RD_MPI_CHECK(ctx, MPI_Gatherv(mycmp, (int)(4 * (c1 - c0)), MPI_DOUBLE, cmp, rc, rdp, MPI_DOUBLE, 0, ctx->comm));
  free(mycmp);
  free(scratch);
  free(rc);
  free(rdp);
}

/* Rank 0's comparisons on every rank (n_cmp pairs). */
static int share_comparisons(const rd_ctx *ctx, bench_root *r) {
  int n_cmp = r->n_cmp;
  RD_MPI_CHECK(ctx, MPI_Bcast(&n_cmp, 1, MPI_INT, 0, ctx->comm));
  if (ctx->rank != 0) {
    r->cmp_a = malloc(sizeof(int) * (size_t)(n_cmp + 1));
    r->cmp_b = malloc(sizeof(int) * (size_t)(n_cmp + 1));
    if (!r->cmp_a || !r->cmp_b) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  }
  rd_bcast_bytes(ctx, r->cmp_a, sizeof(int) * (size_t)n_cmp, 0);
  rd_bcast_bytes(ctx, r->cmp_b, sizeof(int) * (size_t)n_cmp, 0);
  return n_cmp;
}

int bench_bootstrap(const rd_ctx *ctx, const rd_job *job, const rd_jobfile *jf, const bench_eval *E, bench_root *r,
                    double **ci, double **cmp, void (*first)(void *), void *first_arg, rd_status *st) {
  const bench_dims *d = &E->p->d;
  const bench_opts *o = job->opts;
  int n_cmp = share_comparisons(ctx, r);
  int per_pair = (int)bench_cmp_per_pair(o, d);
  if (ctx->rank == 0) {
    *ci = malloc(sizeof(double) * (size_t)(3 * d->M * (d->n_sec + 1)));
    *cmp = malloc(sizeof(double) * (size_t)(4 * (int64_t)n_cmp * per_pair + 1));
    if (!*ci || !*cmp) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  }
  boot_share s;
  boot_share_init(ctx, d, o->bootstrap, &s);
  rd_progress prog;
  rd_progress_begin(&prog, ctx->quiet ? NULL : ctx->err, job->name, "bootstrap", s.B);
  double *T = boot_replicates(ctx, E, &s, jf->seed, job->name, first, first_arg, &prog, st);
  if (!T) {
    free(s.blk);
    return st->code;
  }
  double *cols = boot_columns(ctx, &s, T, st);
  double *rep = n_cmp > 0 ? boot_compared(ctx, &s, per_pair, cols) : NULL;
  boot_intervals(ctx, &s, cols, *ci);
  if (n_cmp > 0) boot_comparisons(ctx, &s, rep, per_pair, n_cmp, r->cmp_a, r->cmp_b, *cmp);
  free(rep);
  free(cols);
  free(s.blk);
  rd_progress_end(&prog);
  rd_timing_mark(ctx->rank, job->name, "bootstrap");
  return st->code;
}
