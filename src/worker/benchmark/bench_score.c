/* benchmark: scoring. Subset values from per-item credits (or given accuracies), RewardBench 2's Ties
 * composite, sections and the overall score, bootstrap replicates and paired comparisons (see
 * docs/reference.md, 'Subset values' and 'Sections and score'). The point estimate is the same
 * computation as a bootstrap replicate with every unit drawn once. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench_internal.h"
#include "rmdiag/kernels/stats.h"

/* ---- evaluation tables ------------------------------------------------------------------------ */

static int64_t round8(int64_t n) { return (n + 7) / 8 * 8; }

/* c = num / den exactly as rounded (den <= 64): credits are fractions of tied completions, or
 * given (0, 0.5, 1, ...). */
static int credit_fraction(double c, int *num, int *den) {
  if (c == 0.0 || c == 1.0) {
    *num = (int)c;
    *den = 1;
    return 1;
  }
  for (int k = 2; k <= 64; k++) {
    double q = rint(c * (double)k);
    if (q / (double)k == c) {
      *num = (int)q;
      *den = k;
      return 1;
    }
  }
  return 0;
}

static int64_t gcd64(int64_t a, int64_t b) {
  while (b) {
    int64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/* Ls[s]: the least common denominator of subset s's credits in models [ma, mb) when it is small
 * enough for exact int16 sums (scale × items <= INT16_MAX), 1 for 0/1 credits, 0 for doubles; one
 * pass along the rows. The value over all models combines those of model ranges (scales_combine). */
static void eval_scales(const bench_plan *p, const double *credit, int64_t ma, int64_t mb, int64_t *Ls) {
  const bench_dims *d = &p->d;
  int64_t S = d->S, I = d->I;
  for (int64_t s = 0; s < S; s++) Ls[s] = 1;
  for (int64_t m = ma; m < mb; m++) {
    const double *cr = credit + m * I;
    for (int64_t i = 0, k; i < I && (k = rd_bench_first_nonbinary(cr + i, I - i)) >= 0; i++) {
      i += k;
      double c = cr[i];
      int32_t s = p->item_subset[i];
      if (Ls[s] == 0) continue;
      int num, den;
      if (!credit_fraction(c, &num, &den)) {
        Ls[s] = 0;
        continue;
      }
      if (Ls[s] % den) Ls[s] = Ls[s] / gcd64(Ls[s], den) * den;
      if (Ls[s] * p->subset_n[s] > INT16_MAX) Ls[s] = 0;
    }
  }
}

/* Which table holds each subset and from which row (ct_first, scale); row_of[i]: item i's row in
 * its table. rows[0..2]: rows of CT, CT16, CT8. */
static void eval_rows(bench_eval *E, const bench_plan *p, int64_t *Ls, int64_t *row_of, int64_t rows[3]) {
  const bench_dims *d = &p->d;
  rows[0] = rows[1] = rows[2] = 0;
  for (int64_t s = 0; s < d->S; s++) {
    if (p->subset_n[s] == 0 || s == d->ties_subset) continue;
    if (Ls[s] * p->subset_n[s] > INT16_MAX) Ls[s] = 0;
    E->scale[s] = (int32_t)Ls[s];
    E->ct_first[s] = Ls[s] == 1 ? rows[2] : Ls[s] > 1 ? rows[1] : rows[0];
    if (Ls[s] == 1) rows[2] += p->subset_n[s];
    else if (Ls[s] > 1) rows[1] += p->subset_n[s];
    else rows[0] += p->subset_n[s];
  }
  for (int64_t s = 0; s < d->S; s++)
    for (int64_t t = 0; E->ct_first[s] >= 0 && t < p->subset_n[s]; t++)
      row_of[p->subset_items[p->subset_first[s] + t]] = E->ct_first[s] + t;
}

/* Ls of all models from those of `n` model ranges (parts[r * S + s]): the least common multiple of
 * the parts' denominators, 0 (doubles) when a part is 0 or the multiple makes scale × items pass
 * INT16_MAX. The same as one pass over all models, in any order: a denominator only grows. */
static void scales_combine(const bench_plan *p, const int64_t *parts, int n, int64_t *Ls) {
  for (int64_t s = 0; s < p->d.S; s++) {
    int64_t L = 1;
    for (int r = 0; r < n && L > 0; r++) {
      int64_t x = parts[(int64_t)r * p->d.S + s];
      L = x == 0 ? 0 : L / gcd64(L, x) * x;
      if (L * p->subset_n[s] > INT16_MAX) L = 0;
    }
    Ls[s] = L;
  }
}

/* Each subset's items as rows of the models' credits (padded with zeros), so a sum over drawn
 * items runs over contiguous lanes: rows [r0, r1) of table t (0 CT, 1 CT16, 2 CT8; item_of[row]),
 * filled eight models at a time along the credit rows. */
static void eval_fill(bench_eval *E, const bench_plan *p, const double *credit, const int64_t *item_of, int t,
                      int64_t r0, int64_t r1) {
  int64_t M = p->d.M, I = p->d.I;
  for (int64_t m0 = 0; m0 < M; m0 += 8) {
    int64_t mm = M - m0 < 8 ? M - m0 : 8;
    for (int64_t row = r0; row < r1; row++) {
      int64_t i = item_of[row];
      if (t == 2) {
        uint8_t *dst = E->CT8 + row * E->Mp8 + m0;
        for (int64_t k = 0; k < mm; k++) dst[k] = credit[(m0 + k) * I + i] == 1.0;
      } else if (t == 1) {
        int16_t *dst = E->CT16 + row * E->Mp16 + m0;
        double L = (double)E->scale[p->item_subset[i]];
        /* c is num/den rounded with den dividing L: c * L is within an ulp of the integer num * L / den */
        for (int64_t k = 0; k < mm; k++) dst[k] = (int16_t)rint(credit[(m0 + k) * I + i] * L);
      } else {
        double *dst = E->CT + row * E->Mp + m0;
        for (int64_t k = 0; k < mm; k++) dst[k] = credit[(m0 + k) * I + i];
      }
    }
  }
}

int bench_eval_init(bench_eval *E, const bench_plan *p, const bench_opts *o, const double *credit, const rd_ctx *ctx,
                    rd_status *st) {
  const bench_dims *d = &p->d;
  int64_t S = d->S, M = d->M, I = d->I;
  int size = ctx ? ctx->size : 1, rank = ctx ? ctx->rank : 0;
  E->p = p;
  E->o = o;
  E->Mp = round8(M);
  E->Mp16 = (M + 31) / 32 * 32;
  E->Mp8 = (M + 63) / 64 * 64;
  E->ct_first = malloc(sizeof(int64_t) * (size_t)S);
  E->scale = calloc((size_t)S, sizeof *E->scale);
  if (!E->ct_first || !E->scale) rd_fail(st, RD_EFAIL, "out of memory");
  if (ctx && size > 1 && rd_agree(ctx, st) != RD_OK) return st->code;
  if (st->code != RD_OK) return st->code;
  for (int64_t s = 0; s < S; s++) E->ct_first[s] = -1;
  if (d->accuracy_mode) return RD_OK;
  int64_t *Ls = malloc(sizeof(int64_t) * (size_t)S * (size_t)(size + 1)), *row_of = malloc(sizeof(int64_t) * (size_t)I);
  int64_t *item_of = malloc(sizeof(int64_t) * (size_t)(I + 1));
  if (!Ls || !row_of || !item_of) rd_fail(st, RD_EFAIL, "out of memory for the evaluation tables");
  if (ctx && size > 1) rd_agree(ctx, st);
  if (st->code != RD_OK) {
    free(Ls);
    free(row_of);
    free(item_of);
    return st->code;
  }
  /* the denominators: each rank scans its share of the models, the shares are combined */
  int64_t ma, mb, *part = Ls + S;
  rd_split_range(M, size, rank, &ma, &mb);
  eval_scales(p, credit, ma, mb, part + (int64_t)rank * S);
  if (size > 1) RD_MPI_CHECK(ctx, MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, part, (int)S, MPI_INT64_T, ctx->comm));
  scales_combine(p, part, size, Ls);
  int64_t rows[3];
  eval_rows(E, p, Ls, row_of, rows);
  /* each table's rows' items, the tables one after another (CT, CT16, CT8) */
  int64_t base[3] = {0, rows[0], rows[0] + rows[1]};
  for (int64_t i = 0; i < I; i++) {
    int64_t sc = E->scale[p->item_subset[i]];
    if (E->ct_first[p->item_subset[i]] >= 0) item_of[base[sc == 1 ? 2 : sc > 1 ? 1 : 0] + row_of[i]] = i;
  }
  free(Ls);
  free(row_of);
  E->CT = rd_malloc_big(sizeof(double) * (size_t)(rows[0] * E->Mp + 8), st, "credits by subset");
  E->CT16 = E->CT ? rd_malloc_big(sizeof(int16_t) * (size_t)(rows[1] * E->Mp16 + 32), st, "credits by subset") : NULL;
  E->CT8 = E->CT16 ? rd_malloc_big((size_t)(rows[2] * E->Mp8 + 64), st, "credits by subset") : NULL;
  if (ctx && size > 1) rd_agree(ctx, st);
  if (st->code != RD_OK) {
    free(item_of);
    return st->code;
  }
  memset(E->CT16, 0, sizeof(int16_t) * (size_t)(rows[1] * E->Mp16));
  memset(E->CT8, 0, (size_t)(rows[2] * E->Mp8));
  memset(E->CT, 0, sizeof(double) * (size_t)(rows[0] * E->Mp));
  /* each rank fills its share of every table's rows; the shares are gathered everywhere */
  void *tab[3] = {E->CT, E->CT16, E->CT8};
  size_t row_bytes[3] = {sizeof(double) * (size_t)E->Mp, sizeof(int16_t) * (size_t)E->Mp16, (size_t)E->Mp8};
  for (int t = 0; t < 3; t++) {
    int64_t r0, r1;
    rd_rank_rows(rows[t], 1, size, rank, &r0, &r1);
    eval_fill(E, p, credit, item_of + base[t], t, r0, r1);
    if (size > 1) rd_allgather_rows_inplace(ctx, tab[t], rows[t], 1, row_bytes[t]);
  }
  free(item_of);
  return RD_OK;
}

void bench_eval_free(bench_eval *E) {
  free(E->CT);
  free(E->CT16);
  free(E->CT8);
  free(E->scale);
  free(E->ct_first);
  bench_ties_free(&E->ties);
  memset(E, 0, sizeof *E);
}

void bench_ties_free(bench_ties *t) {
  free(t->X);
  memset(t, 0, sizeof *t);
}

/* doubles: the lane sums (models or Ties lanes), twice the models for the sections */
int64_t bench_scratch_len(const bench_eval *E) {
  int64_t n = 2 * round8(E->p->d.M);
  if (E->ties.ld > n) n = E->ties.ld;
  return n + 64;
}

/* The tanh term of one prompt, as RewardBench 2 computes it with numpy: tanh(x / spread - 1) in IEEE
 * arithmetic with a NaN replaced by 0, so x / 0 gives +-1 and 0 / 0 gives 0, and so does +-inf / inf
 * (gaps and spreads of scores near the float64 limits overflow). */
static double ties_margin(double x, double spread) {
  double r = x / spread;
  return isnan(r) ? 0.0 : tanh(r - 1.0);
}

int bench_ties_build(const bench_plan *p, const double *g, bench_ties *t, rd_status *st) {
  int64_t P = p->d.n_prompts, M = p->d.M;
  t->P = P;
  t->M = M;
  t->L = 5 * M + 3;
  t->ld = round8(t->L);
  t->X = calloc((size_t)(P * t->ld + 8), sizeof(double));
  if (!t->X) return rd_fail(st, RD_EFAIL, "out of memory");
  for (int64_t q = 0; q < P; q++) {
    double *x = t->X + q * t->ld;
    int has_ref = p->prompt_ref[q] >= 0, has_tied = p->prompt_tied[q] >= 0;
    x[5 * M] = has_tied;
    x[5 * M + 1] = has_ref;
    x[5 * M + 2] = has_ref && has_tied;
    for (int64_t m = 0; m < M; m++) {
      const double *e = g + (m * P + q) * 4;
      double gap_ref = e[0], gap_tied = e[2], spread = e[3];
      if (has_tied) x[m] = gap_tied > 0.0;
      if (has_ref) x[M + m] = gap_ref > 0.0;
      if (!(has_ref && has_tied)) continue;
      double hard = gap_ref < gap_tied ? gap_ref : gap_tied;
      x[2 * M + m] = gap_tied > spread;
      x[3 * M + m] = hard > spread;
      x[4 * M + m] = ties_margin(hard, spread);
    }
  }
  return RD_OK;
}

/* The composite of every model from the sums of the drawn prompts' lanes:
 * 0.30 accuracy(tied) + 0.30 accuracy(ref) + 0.20 mean[gap_tied > spread] + 0.20 mean[min gap >
 * spread] + 0.01 mean tanh(min gap / spread - 1), the last three over prompts present as both
 * (NaN when there is none); an accuracy over no prompt is 0, as upstream. */
static void ties_composite(int64_t M, const double *sum, double *val) {
  double nt = sum[5 * M], nr = sum[5 * M + 1], nb = sum[5 * M + 2];
  for (int64_t m = 0; m < M; m++) {
    if (nb == 0.0) {
      val[m] = NAN;
      continue;
    }
    double ta = nt > 0.0 ? sum[m] / nt : 0.0, ra = nr > 0.0 ? sum[M + m] / nr : 0.0;
    val[m] = 0.30 * ta + 0.30 * ra + 0.20 * (sum[2 * M + m] / nb) + 0.20 * (sum[3 * M + m] / nb) +
             0.01 * (sum[4 * M + m] / nb);
  }
}

/* ---- one evaluation ---------------------------------------------------------------------------- */

/* Subset values val[s * M + m]: given accuracies, the Ties composite over the drawn prompts, or the
 * mean credit over the drawn items (NaN for subsets not evaluated). */
static void evaluate_subsets(const bench_eval *E, const uint32_t *const *draws, double *val, double *acc) {
  const bench_plan *p = E->p;
  const bench_dims *d = &p->d;
  int64_t S = d->S, M = d->M;
  for (int64_t s = 0; s < S; s++) {
    double *v = val + s * M;
    if (d->accuracy_mode) {
      for (int64_t m = 0; m < M; m++) v[m] = E->acc_input[m * S + s];
      continue;
    }
    if (draws && !p->resampled[s]) {
      for (int64_t m = 0; m < M; m++) v[m] = NAN;
      continue;
    }
    if (s == d->ties_subset && E->ties.P > 0) {
      rd_bench_gather_sum(draws ? draws[s] : NULL, E->ties.P, E->ties.X, E->ties.ld, E->ties.L, acc);
      ties_composite(M, acc, v);
      continue;
    }
    if (E->ct_first[s] < 0) {
      for (int64_t m = 0; m < M; m++) v[m] = NAN;
      continue;
    }
    /* mean credit over the drawn items: exact integer sums of the scaled credits, else every
     * model's sum runs over the draws in draw order (the point estimate: items in item order) */
    int64_t n = p->subset_n[s], L = E->scale[s];
    const uint32_t *dr = draws ? draws[s] : NULL;
    if (L == 1) {
      rd_bench_gather_mean8(dr, n, E->CT8 + E->ct_first[s] * E->Mp8, E->Mp8, M, (double)n, v);
    } else if (L > 1) {
      rd_bench_gather_mean16(dr, n, E->CT16 + E->ct_first[s] * E->Mp16, E->Mp16, M, (double)L * (double)n, v);
    } else {
      rd_bench_gather_sum(dr, n, E->CT + E->ct_first[s] * E->Mp, E->Mp, M, acc);
      for (int64_t m = 0; m < M; m++) v[m] = acc[m] / (double)n;
    }
  }
}

/* Sections and score from per-item credits: the subsets present are the same for every model, so
 * the sums run over contiguous model lanes (scratch: 2 M doubles). */
static void sections_items(const bench_eval *E, const double *val, double *scratch, double *out) {
  const bench_plan *p = E->p;
  const bench_dims *d = &p->d;
  int64_t M = d->M, K = d->n_sec + 1;
  double *num = scratch, *ss = scratch + M;
  for (int64_t m = 0; m < M; m++) ss[m] = 0.0;
  double sw = 0.0;
  for (int64_t k = 0; k < d->n_sec; k++) {
    double den = 0.0;
    int any = 0;
    for (int64_t m = 0; m < M; m++) num[m] = 0.0;
    for (int64_t e = p->sec_first[k]; e < p->sec_first[k + 1]; e++) {
      int32_t s = p->ent_subset[e];
      if (s < 0) continue;
      const double *v = val + s * M, w = p->ent_weight[e];
      for (int64_t m = 0; m < M; m++) num[m] += v[m] * w;
      den += w;
      any = 1;
    }
    if (!any) {
      for (int64_t m = 0; m < M; m++) out[m * K + k] = NAN;
      continue;
    }
    double cw = p->sec_score_w[k];
    for (int64_t m = 0; m < M; m++) {
      double sec = num[m] / den;
      out[m * K + k] = sec;
      ss[m] += cw * sec;
    }
    sw += cw;
  }
  for (int64_t m = 0; m < M; m++) out[m * K + d->n_sec] = sw > 0.0 ? ss[m] / sw : NAN;
}

/* Sections and score from given accuracies: each model over the subsets it has a value for. */
static void sections_accuracies(const bench_eval *E, const double *val, double *out) {
  const bench_plan *p = E->p;
  const bench_dims *d = &p->d;
  int64_t S = d->S, M = d->M, K = d->n_sec + 1;
  for (int64_t m = 0; m < M; m++) {
    double *o = out + m * K, ss = 0.0, sw = 0.0;
    for (int64_t k = 0; k < d->n_sec; k++) {
      double num = 0.0, den = 0.0;
      int any = 0;
      for (int64_t e = p->sec_first[k]; e < p->sec_first[k + 1]; e++) {
        int32_t s = p->ent_subset[e];
        if (s < 0 || isnan(E->acc_input[m * S + s])) continue;
        any = 1;
        num += val[s * M + m] * p->ent_weight[e];
        den += p->ent_weight[e];
      }
      o[k] = any ? num / den : NAN;
      if (!any) continue;
      ss += p->sec_score_w[k] * o[k];
      sw += p->sec_score_w[k];
    }
    o[d->n_sec] = sw > 0.0 ? ss / sw : NAN;
  }
}

/* Sections: sum of value × weight over the subsets present, in the scheme's order, divided by the
 * sum of their weights; a section with none present is left out of the score. */
void bench_evaluate(const bench_eval *E, const uint32_t *const *draws, double *val, double *acc, double *out) {
  evaluate_subsets(E, draws, val, acc);
  if (E->p->d.accuracy_mode) sections_accuracies(E, val, out);
  else sections_items(E, val, acc, out);
}

/* ---- bootstrap ---------------------------------------------------------------------------------- */

int bench_bootstrap_block(const bench_eval *E, int64_t seed, const char *job, int64_t b0, int64_t b1, double *out,
                          rd_status *st) {
  const bench_plan *p = E->p;
  const bench_dims *d = &p->d;
  int64_t S = d->S, M = d->M, K = d->n_sec + 1;
  rd_stream *streams = calloc((size_t)S, sizeof *streams);
  int64_t *units = calloc((size_t)S, sizeof *units);
  uint32_t **draws = calloc((size_t)S, sizeof *draws);
  double *val = malloc(sizeof(double) * (size_t)(S * M)), *acc = malloc(sizeof(double) * (size_t)bench_scratch_len(E));
  int64_t total = 0;
  int rc = streams && units && draws && val && acc ? RD_OK : rd_fail(st, RD_EFAIL, "out of memory");
  for (int64_t s = 0; rc == RD_OK && s < S; s++) {
    if (!p->resampled[s]) continue;
    units[s] = s == d->ties_subset && E->ties.P > 0 ? E->ties.P : p->subset_n[s];
    total += (units[s] + 31) / 32 * 32;
    /* draws of a subset depend on its name, not on its position or on the scheme */
    size_t len = strlen(bench_subset_name(p, s)) + 32;
    char *purpose = malloc(len);
    if (!purpose) {
      rc = rd_fail(st, RD_EFAIL, "out of memory");
      break;
    }
    snprintf(purpose, len, "bench.bootstrap/%s", bench_subset_name(p, s));
    rd_stream_init(&streams[s], seed, job, purpose);
    free(purpose);
  }
  uint32_t *dbuf = rc == RD_OK ? malloc(sizeof(uint32_t) * (size_t)(total + 1)) : NULL;
  if (rc == RD_OK && !dbuf) rc = rd_fail(st, RD_EFAIL, "out of memory");
  for (int64_t s = 0, pos = 0; rc == RD_OK && s < S; s++) {
    if (!p->resampled[s]) continue;
    draws[s] = dbuf + pos;
    pos += (units[s] + 31) / 32 * 32;
  }
  for (int64_t b = b0; rc == RD_OK && b < b1; b++) {
    /* replicate b: draw t of subset s picks unit rd_rng_below(stream_s, b, t, n_s), t = 0..n_s-1,
     * the same for every model (so comparisons are paired); draws are made in whole batches of 32
     * (the vectorized generator's width) and the extra ones are not used */
    for (int64_t s = 0; s < S; s++)
      if (p->resampled[s])
        rd_rng_below_fill(&streams[s], (uint64_t)b, (uint64_t)units[s], (units[s] + 31) / 32 * 32, draws[s]);
    bench_evaluate(E, (const uint32_t *const *)draws, val, acc, out + (b - b0) * M * K);
  }
  free(streams);
  free(units);
  free(draws);
  free(val);
  free(acc);
  free(dbuf);
  return rc;
}

/* ---- paired comparisons -------------------------------------------------------------------------- */

void bench_compare_pair(const double *sa, const double *sb, int64_t B, double *scratch, double out[4]) {
  int64_t used = 0, le = 0, ge = 0;
  for (int64_t rep = 0; rep < B; rep++) {
    double dv = sa[rep] - sb[rep];
    if (!isfinite(dv)) continue;
    scratch[used++] = dv;
    le += dv <= 0.0;
    ge += dv >= 0.0;
  }
  double lo = NAN, hi = NAN, p = NAN;
  rd_percentile_ci95(scratch, (size_t)used, &lo, &hi);
  if (used > 0) {
    p = 2.0 * (double)(le < ge ? le : ge) / (double)used;
    p = p < 1.0 ? p : 1.0;
  }
  out[0] = lo;
  out[1] = hi;
  out[2] = p;
  out[3] = (double)used;
}
