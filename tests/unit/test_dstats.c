/* Statistics over values spread over the ranks (dstats.h) and their single-array building blocks
 * (stats.h): every result must carry the same bits as the single-array function on the whole
 * sequence (rd_summarize, rd_sum, a sort), for any cut of the sequence into parts, parts smaller than
 * a sum block or empty included, with NaN (left out), -0 and +0, ties and probabilities that fall
 * in few radix buckets. Run as a plain process and under mpiexec with 2-4 ranks. */
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "rmdiag/common/comm.h"
#include "rmdiag/common/dstats.h"
#include "rmdiag/kernels/stats.h"

static uint64_t rng_state;
static uint64_t rnd(void) {  /* splitmix64: the same sequence on every rank */
  uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static double unif(void) { return (double)(rnd() >> 11) / 9007199254740992.0; }

static int same_bits(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

enum { K_NORMALISH, K_PROB, K_TIES, K_ZEROS, K_NAN_SOME, K_NAN_RUN, K_NAN_ALL, K_WIDE, N_KINDS };

/* A sequence of kind `kind`. */
static void make(int kind, double *x, size_t n) {
  for (size_t i = 0; i < n; i++) {
    double u = unif();
    switch (kind) {
      case K_NORMALISH: x[i] = (u - 0.5) * 7.0 + (unif() - 0.5); break;
      case K_PROB: x[i] = 0.6 + 0.05 * u; break;  /* one binade: the top 16 key bits are nearly all alike */
      case K_TIES: x[i] = (double)(rnd() % 5) - 2.0; break;
      case K_ZEROS: x[i] = u < 0.4 ? -0.0 : u < 0.8 ? 0.0 : u - 0.9; break;
      case K_NAN_SOME: x[i] = u < 0.1 ? NAN : u; break;
      case K_NAN_RUN: x[i] = i < n / 2 + 3 ? NAN : u - 0.3; break;
      case K_NAN_ALL: x[i] = NAN; break;
      default: x[i] = ldexp(u - 0.5, (int)(rnd() % 200) - 100); break;
    }
  }
}

/* Part boundaries: even, everything on the last rank, or random cuts (empty parts possible). */
static void cuts(int how, size_t n, int size, size_t *b) {
  b[0] = 0;
  b[size] = n;
  for (int r = 1; r < size; r++) {
    if (how == 0) b[r] = n * (size_t)r / (size_t)size;
    else if (how == 1) b[r] = 0;
    else b[r] = n ? (size_t)(rnd() % (n + 1)) : 0;
  }
  for (int r = 1; r < size; r++)  /* sorted */
    for (int q = r; q > 1 && b[q - 1] > b[q]; q--) {
      size_t t = b[q];
      b[q] = b[q - 1];
      b[q - 1] = t;
    }
}

/* The parts of rd_sum and of rd_mean_sd's second pass, added in order, give rd_sum's bits. */
static void test_sum_parts(int kind, size_t n) {
  double *x = malloc(sizeof(double) * (n ? n : 1)), *def = malloc(sizeof(double) * (n ? n : 1));
  make(kind, x, n);
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (!isnan(x[i])) def[m++] = x[i];
  double center = m ? def[m / 2] : 0.0, *sq = malloc(sizeof(double) * (m ? m : 1));
  for (size_t i = 0; i < m; i++) sq[i] = (def[i] - center) * (def[i] - center);
  for (int how = 0; how < 3; how++) {
    size_t b[8];
    cuts(how, n, 7, b);
    double *buf = malloc(sizeof(double) * (RD_SUM_PART_MAX(n) + 16));
    for (int pass = 0; pass < 2; pass++) {
      rd_sum_state z;
      rd_sum_begin(&z);
      int64_t off = 0;
      for (int r = 0; r < 7; r++) {
        size_t len = rd_sum_part(x + b[r], b[r + 1] - b[r], off, pass ? &center : NULL, buf);
        CHECK(len <= RD_SUM_PART_MAX(b[r + 1] - b[r]), "part length %zu within its bound", len);
        CHECK(rd_sum_add_part(&z, buf) == len, "add_part reads what sum_part wrote");
        off += (int64_t)rd_count_defined(x + b[r], b[r + 1] - b[r]);
      }
      double want = rd_sum(pass ? sq : def, m), got = rd_sum_end(&z);
      CHECK(same_bits(got, want), "kind %d n %zu cut %d pass %d: parts %.17g vs rd_sum %.17g", kind, n, how, pass, got,
            want);
    }
    free(buf);
  }
  free(x);
  free(def);
  free(sq);
}

/* rd_order_stats and rd_distinct_sorted against a sort. */
static void test_local_select(int kind, size_t n) {
  double *x = malloc(sizeof(double) * (n ? n : 1)), *s = malloc(sizeof(double) * (n ? n : 1));
  make(kind, x, n);
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (!isnan(x[i])) x[m++] = x[i];
  if (m == 0) {
    free(x);
    free(s);
    return;
  }
  memcpy(s, x, sizeof(double) * m);
  rd_sort_doubles(s, m);
  size_t k[70];
  double got[70];
  for (int nk = 1; nk <= 70; nk += 23) {  /* 1, 24, 47: selection; 70: the sort */
    for (int t = 0; t < nk; t++) k[t] = t == 0 ? 0 : t == 1 ? m - 1 : (size_t)(rnd() % m);
    CHECK(rd_order_stats(x, m, k, (size_t)nk, got) == 0, "rd_order_stats runs");
    for (int t = 0; t < nk; t++)
      CHECK(same_bits(got[t], s[k[t]]), "kind %d n %zu: order statistic %zu is %.17g, sorted %.17g", kind, m, k[t],
            got[t], s[k[t]]);
  }
  /* distinct values as the old sort-and-compare gave them */
  size_t nu = 0;
  for (size_t i = 0; i < m; i++)
    if (isfinite(s[i]) && (nu == 0 || s[i] != s[nu - 1])) s[nu++] = s[i] == 0.0 ? 0.0 : s[i];
  double *d = malloc(sizeof(double) * m);
  size_t nd = rd_distinct_sorted(x, m, d);
  CHECK(nd == nu, "kind %d: %zu distinct values, expected %zu", kind, nd, nu);
  for (size_t i = 0; i < nd && i < nu; i++) CHECK(same_bits(d[i], s[i]), "distinct value %zu", i);
  free(d);
  free(x);
  free(s);
}

/* Summaries and order statistics over the ranks against rd_summarize and a sort of the whole: one
 * call for every kind of sequence at once (sets), each cut its own way. */
static void test_dist(const rd_ctx *ctx, size_t n) {
  enum { S = 2 * N_KINDS };
  double *x[S];
  const double *part[S];
  size_t len[S], *b = malloc(sizeof(size_t) * (size_t)(ctx->size + 1));
  for (int s = 0; s < S; s++) {  /* set s: kind s / 2, cut even, random, or all on one rank */
    x[s] = malloc(sizeof(double) * (n ? n : 1));
    make(s / 2, x[s], n);
    cuts(s % 2 ? 2 : (s / 2) % 2, n, ctx->size, b);
    part[s] = x[s] + b[ctx->rank];
    len[s] = b[ctx->rank + 1] - b[ctx->rank];
  }
  rd_summary got[S], noted[S];
  rd_dist_summaries(ctx, S, part, len, NULL, got);
  /* the same with counts and histograms noted beforehand, each rank's part added in uneven pieces
   * (sets in reverse order), as a pass that makes the values would add them */
  rd_dist_notes notes;
  CHECK(rd_dist_notes_init(&notes, S) == 0, "notes allocated");
  for (int s = S - 1; s >= 0; s--)
    for (size_t i = 0, step = 1; i < len[s]; i += step, step = step * 3 + 1)
      rd_dist_notes_add(&notes, s, part[s] + i, step < len[s] - i ? step : len[s] - i);
  rd_dist_summaries(ctx, S, part, len, &notes, noted);
  rd_dist_notes_free(&notes);
  int set[3 * S];
  int64_t k[3 * S];
  double v[3 * S], *sorted[S];
  int nt = 0;
  for (int s = 0; s < S; s++) {
    rd_summary want;
    rd_summarize(x[s], n, &want);
    if (ctx->rank == 0) {
      const double g[7] = {got[s].mean, got[s].sd, got[s].q05, got[s].q25, got[s].median, got[s].q75, got[s].q95};
      const double w[7] = {want.mean, want.sd, want.q05, want.q25, want.median, want.q75, want.q95};
      const double h[7] = {noted[s].mean, noted[s].sd, noted[s].q05, noted[s].q25, noted[s].median, noted[s].q75,
                           noted[s].q95};
      CHECK(got[s].n == want.n, "n %zu set %d: n %lld vs %lld", n, s, (long long)got[s].n, (long long)want.n);
      CHECK(noted[s].n == want.n, "n %zu set %d, noted: n %lld vs %lld", n, s, (long long)noted[s].n, (long long)want.n);
      for (int i = 0; i < 7; i++) {
        CHECK(same_bits(g[i], w[i]) || (isnan(g[i]) && isnan(w[i])), "n %zu set %d: field %d %.17g vs %.17g", n, s, i,
              g[i], w[i]);
        CHECK(same_bits(h[i], w[i]) || (isnan(h[i]) && isnan(w[i])), "n %zu set %d, noted: field %d %.17g vs %.17g", n,
              s, i, h[i], w[i]);
      }
    }
    sorted[s] = malloc(sizeof(double) * (n ? n : 1));
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
      if (!isnan(x[s][i])) sorted[s][m++] = x[s][i];
    rd_sort_doubles(sorted[s], m);
    for (int t = 0; t < 3 && m > 0; t++) {  /* the first, the last and one drawn */
      set[nt] = s;
      k[nt++] = t == 0 ? 0 : t == 1 ? (int64_t)m - 1 : (int64_t)(rnd() % m);
    }
  }
  rd_dist_order_stats(ctx, S, part, len, nt, set, k, v);
  for (int t = 0; t < nt; t++)
    CHECK(same_bits(v[t], sorted[set[t]][k[t]]), "n %zu set %d: rank %d order statistic %lld %.17g vs %.17g", n, set[t],
          ctx->rank, (long long)k[t], v[t], sorted[set[t]][k[t]]);
  for (int s = 0; s < S; s++) {
    free(x[s]);
    free(sorted[s]);
  }
  free(b);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  rd_ctx ctx;
  rd_ctx_init(&ctx, MPI_COMM_WORLD, stdout, stderr);
  static const size_t sizes[] = {0, 1, 5, 511, 512, 4096, 4097, 12289, 70001};
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
    for (int kind = 0; kind < N_KINDS; kind++) {
      rng_state = 1000u * (uint64_t)kind + i;
      if (ctx.rank == 0) {
        test_sum_parts(kind, sizes[i]);
        test_local_select(kind, sizes[i]);
      }
    }
    rng_state = 7u + i;  /* the same draws on every rank */
    test_dist(&ctx, sizes[i]);
  }
  int bad = t_failures, any = 0;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  int rc = ctx.rank == 0 ? t_finish("test_dstats") : (t_failures ? 1 : 0);
  rd_ctx_free(&ctx);
  MPI_Finalize();
  return any ? 1 : rc;
}
