/* The probe's CPU kernels: the AVX-512, AVX2 and plain-C versions of the logits and gradient loops
 * give the same bits (every lane accumulates with fused multiply-adds in a fixed order) for feature
 * counts with and without a tail and for any number of outputs (different blockings), and agree with
 * a long-double reference; the one-pass node gradient (rd_probe_tree_grad_cpu) bit for bit against
 * the fixed tree of per-unit block gradients, for every instruction set; the AdamW step against the formula; float16 and bfloat16 widening against
 * an independent ldexp computation for all 65536 bit patterns; the small kernels over doubles
 * (standardized rows, gradient norm, distances, triangular solve) against their scalar definitions
 * in every instruction set. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "rmdiag/kernels/probe.h"
#include "rmdiag/kernels/halffloat.h"
#include "rmdiag/kernels/rng.h"

static void fill(rd_stream *s, uint64_t rep, double *x, int64_t n, double scale) {
  for (int64_t i = 0; i < n; i++) x[i] = scale * (2.0 * rd_rng_uniform(s, rep, (uint64_t)i) - 1.0);
}

static void test_isas(void) {
  static const char *const isas[3] = {"scalar", "avx2", "avx512"};
  const int64_t ds[3] = {4099, 64, 5}, n = 37;
  rd_stream s;
  rd_stream_init(&s, 1, "test", "probe.kernels");
  for (int di = 0; di < 3; di++) {
    int64_t d = ds[di];
    float *X = malloc(sizeof(float) * (size_t)(n * d));
    double *tmp = malloc(sizeof(double) * (size_t)(n * d));
    fill(&s, (uint64_t)di, tmp, n * d, 3.0);
    for (int64_t i = 0; i < n * d; i++) X[i] = (float)tmp[i];
    const float *rows[37];
    int32_t y[37];
    for (int64_t i = 0; i < n; i++) {
      rows[i] = X + ((i * 11) % n) * d;
      y[i] = (int32_t)(i % 3);
    }
    for (int L = 1; L <= 4; L++)
      for (int K = 1; K <= 3; K++) {
        if (K == 2) continue;
        int O = L * K;
        double *W = malloc(sizeof(double) * (size_t)(O * d)), *b = malloc(sizeof(double) * (size_t)O);
        fill(&s, 100 + (uint64_t)O, W, O * d, 0.05);
        fill(&s, 200 + (uint64_t)O, b, O, 0.5);
        rd_probe_heads h = {.d = d, .L = L, .K = K, .W = W, .b = b};
        int64_t len = rd_probe_grad_len(&h, 1);
        double *z[3], *g[3];
        int have[3];
        for (int k = 0; k < 3; k++) {
          have[k] = rd_probe_simd_set(isas[k]) == 0;
          z[k] = malloc(sizeof(double) * (size_t)(n * O));
          g[k] = malloc(sizeof(double) * (size_t)len);
          if (!have[k]) continue;
          rd_probe_logits_cpu(&h, rows, n, z[k]);
          rd_probe_block blk = {.rows = rows, .n = n, .y = y, .scale = 1.0 / 37.0};
          for (int64_t i = 0; i < len; i++) g[k][i] = 0.25;
          rd_probe_block_grad_cpu(&h, &blk, 1, 1, g[k], NULL);
        }
        for (int k = 1; k < 3; k++)
          if (have[k]) {
            CHECK(memcmp(z[0], z[k], sizeof(double) * (size_t)(n * O)) == 0, "logits %s == scalar (d %lld, L %d, K %d)",
                  isas[k], (long long)d, L, K);
            CHECK(memcmp(g[0], g[k], sizeof(double) * (size_t)len) == 0, "gradient %s == scalar (d %lld, L %d, K %d)",
                  isas[k], (long long)d, L, K);
          }
        /* squared distances of the rows to the O rows of W as centres */
        double *D[3];
        for (int k = 0; k < 3; k++) {
          D[k] = malloc(sizeof(double) * (size_t)(n * O));
          if (!have[k]) continue;
          rd_probe_simd_set(isas[k]);
          rd_probe_sqdist_cpu(rows, n, d, W, O, D[k]);
        }
        for (int k = 1; k < 3; k++)
          if (have[k])
            CHECK(memcmp(D[0], D[k], sizeof(double) * (size_t)(n * O)) == 0, "distances %s == scalar (d %lld, O %d)",
                  isas[k], (long long)d, O);
        double dworst = 0.0;
        for (int64_t i = 0; i < n; i++)
          for (int o = 0; o < O; o++) {
            long double acc = 0.0L;
            for (int64_t j = 0; j < d; j++) {
              long double t = (long double)rows[i][j] - W[o * d + j];
              acc += t * t;
            }
            double e = fabs((double)(acc - (long double)D[0][i * O + o])) / (double)acc;
            if (e > dworst) dworst = e;
          }
        CHECK(dworst < 1e-14, "distances within 1e-14 relative of the long-double sum (worst %g)", dworst);
        for (int k = 0; k < 3; k++) free(D[k]);
        /* long-double reference of the logits */
        double worst = 0.0;
        for (int64_t i = 0; i < n; i++)
          for (int o = 0; o < O; o++) {
            long double acc = b[o];
            for (int64_t j = 0; j < d; j++) acc += (long double)W[o * d + j] * rows[i][j];
            double e = fabs((double)(acc - (long double)z[0][i * O + o]));
            if (e > worst) worst = e;
          }
        CHECK(worst < 1e-12, "logits within 1e-12 of the long-double sum (worst %g)", worst);
        /* gradient reference: G[o, j] = 0.25 + Σ_i r_io x_ij / 37 with r from the reference residuals */
        double gworst = 0.0;
        double *r = malloc(sizeof(double) * (size_t)(n * O)), loss[4] = {0, 0, 0, 0};
        for (int64_t i = 0; i < n; i++) rd_probe_residuals(L, K, z[0] + i * O, y[i], r + i * O, loss);
        for (int o = 0; o < O; o++)
          for (int64_t j = 0; j < d; j++) {
            long double acc = 0.0L;
            for (int64_t i = 0; i < n; i++) acc += (long double)(r[i * O + o] * (1.0 / 37.0)) * rows[i][j];
            double e = fabs((double)(0.25L + acc - (long double)g[0][o * d + j]));
            if (e > gworst) gworst = e;
          }
        CHECK(gworst < 1e-12, "gradient within 1e-12 of the long-double sum (worst %g)", gworst);
        for (int l = 0; l < L; l++)
          CHECK_CLOSE(g[0][O * d + O + l], 0.25 + loss[l] / 37.0, 1e-13, "mean loss");
        free(r);
        for (int k = 0; k < 3; k++) {
          free(z[k]);
          free(g[k]);
        }
        free(W);
        free(b);
      }
    free(X);
    free(tmp);
  }
  rd_probe_simd_set("avx512");
}

/* The tree of probe_train.c over units [lo, lo + size) (J present), each unit by the block gradient. */
static void unit_tree(int64_t J, int64_t lo, int64_t size, const rd_probe_heads *h, const float *const *rows,
                      const int32_t *y, const int64_t *uoff, double scale, double *dst, double *scratch, int64_t len) {
  if (size == 1 || lo + size / 2 >= J) {
    if (size > 1) {
      unit_tree(J, lo, size / 2, h, rows, y, uoff, scale, dst, scratch, len);
      return;
    }
    rd_probe_block blk = {.rows = rows + uoff[lo], .n = uoff[lo + 1] - uoff[lo], .y = y + uoff[lo], .scale = scale};
    rd_probe_block_grad_cpu(h, &blk, 0, 0, dst, NULL);
    return;
  }
  int64_t half = size / 2;
  unit_tree(J, lo, half, h, rows, y, uoff, scale, dst, scratch, len);
  if (half == 1) {
    rd_probe_block blk = {.rows = rows + uoff[lo + 1], .n = uoff[lo + 2] - uoff[lo + 1], .y = y + uoff[lo + 1],
                          .scale = scale};
    rd_probe_block_grad_cpu(h, &blk, 0, 1, dst, NULL);
    return;
  }
  unit_tree(J, lo + half, half, h, rows, y, uoff, scale, scratch, scratch + len, len);
  rd_probe_add(dst, scratch, len);
}

static void test_tree_grad(void) {
  static const char *const isas[3] = {"scalar", "avx2", "avx512"};
  static const int LK[][2] = {{1, 1}, {3, 1}, {3, 3}, {1, 6}, {4, 3}, {3, 7}};
  /* 300: the backward's column blocks end in a partial one (74 strips of 4: 64 + 10) */
  const int64_t ds[5] = {4099, 1027, 64, 5, 300};
  rd_stream s;
  rd_stream_init(&s, 2, "test", "probe.tree");
  int64_t nmax = 12 * 64; /* up to 12 units of up to 64 rows */
  for (int di = 0; di < 5; di++) {
    int64_t d = ds[di];
    float *X = malloc(sizeof(float) * (size_t)(nmax * d));
    double *tmp = malloc(sizeof(double) * (size_t)(nmax * d));
    fill(&s, (uint64_t)di, tmp, nmax * d, 3.0);
    for (int64_t i = 0; i < nmax * d; i++) X[i] = (float)tmp[i];
    const float *rows[12 * 64];
    for (int64_t i = 0; i < nmax; i++) rows[i] = X + ((i * 37) % nmax) * d;
    for (size_t c = 0; c < 2 * sizeof LK / sizeof LK[0]; c++) {
      /* the second round: logits of some hundreds (exponentials underflow, to subnormals or zero, and sigmoids saturate) and
       * the first two outputs of every head equal (ties in the softmax maximum) */
      int big = c >= sizeof LK / sizeof LK[0];
      int L = LK[c % (sizeof LK / sizeof LK[0])][0], K = LK[c % (sizeof LK / sizeof LK[0])][1], O = L * K;
      int32_t y[12 * 64];
      for (int64_t i = 0; i < nmax; i++) y[i] = (int32_t)((i * 5 + c) % (K == 1 ? 2 : K));
      double *W = malloc(sizeof(double) * (size_t)(O * d));
      fill(&s, 300 + c, W, O * d, big ? 300.0 / sqrt((double)d) : 0.05);
      if (big && K > 1)
        for (int l = 0; l < L; l++) memcpy(W + (int64_t)(l * K + 1) * d, W + (int64_t)l * K * d, sizeof(double) * (size_t)d);
      rd_probe_heads h = {.d = d, .L = L, .K = K, .W = W, .b = NULL};
      int64_t len = (int64_t)O * d;
      double *ref = malloc(sizeof(double) * (size_t)(len * 5)), *out = malloc(sizeof(double) * (size_t)len);
      for (int nu = 1; nu <= (d == 300 ? 12 : 8); nu++) { /* 12 units: a tree of 5 levels */
        /* unit sizes 0..16 (some empty), as the units of batches of up to 128 rows; every other case
         * 0..64, the longest units (kernels that take a unit's rows in pieces) */
        int64_t uoff[13] = {0};
        for (int u = 0; u < nu; u++) uoff[u + 1] = uoff[u] + (int64_t)((c % 2 ? 65 : 17) * rd_rng_uniform(&s, 400 + c, (uint64_t)(di * 64 + nu * 8 + u)));
        int64_t P2 = 1;
        while (P2 < nu) P2 *= 2;
        for (int k = 0; k < 3; k++) {
          if (rd_probe_simd_set(isas[k]) != 0) continue;
          unit_tree(nu, 0, P2, &h, rows, y, uoff, 1.0 / 128.0, ref, ref + len, len);
          memset(out, 0x5a, sizeof(double) * (size_t)len);
          int rc = rd_probe_tree_grad_cpu(&h, rows, y, uoff, nu, 1.0 / 128.0, out);
          CHECK(rc == 0 && memcmp(ref, out, sizeof(double) * (size_t)len) == 0,
                "node gradient == tree of unit gradients (%s, d %lld, L %d, K %d, %d units)", isas[k], (long long)d, L,
                K, nu);
        }
      }
      free(W);
      free(ref);
      free(out);
    }
    free(X);
    free(tmp);
  }
  /* not applicable: a bias, or a unit longer than one pass */
  double W1[5] = {0}, b1[1] = {0}, g1[5];
  float x1[5] = {0};
  const float *r1[65];
  int32_t y1[65] = {0};
  for (int i = 0; i < 65; i++) r1[i] = x1;
  rd_probe_heads hb = {.d = 5, .L = 1, .K = 1, .W = W1, .b = b1}, hn = {.d = 5, .L = 1, .K = 1, .W = W1, .b = NULL};
  int64_t u1[2] = {0, 1}, u65[2] = {0, 65};
  CHECK(rd_probe_tree_grad_cpu(&hb, r1, y1, u1, 1, 1.0, g1) == -1, "a bias is refused");
  CHECK(rd_probe_tree_grad_cpu(&hn, r1, y1, u65, 1, 1.0, g1) == -1, "a unit of 65 rows is refused");
  rd_probe_simd_set("avx512");
}

static void test_adamw(void) {
  /* one parameter, two steps, worked by hand: g = 0.5 then -0.25 (no clipping), lr 0.1, wd 0.1 */
  rd_adamw a = {.beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8, .wd = 0.1};
  double p = 0.3, m = 0.0, v = 0.0, g = 0.5;
  rd_probe_adamw_step(&a, 0, 0.1, 1.0, &g, &p, &m, &v, 1);
  /* p = 0.3 * (1 - 0.01) - (0.1 / 0.1) * 0.05 / (sqrt(0.0125) / sqrt(0.05) + 1e-8) = 0.297 - 0.05/(0.5 + 1e-8) */
  CHECK_CLOSE(p, 0.297 - 0.05 / (0.5 + 1e-8), 1e-15, "AdamW step 1");
  CHECK_CLOSE(m, 0.05, 1e-15, "first moment");
  CHECK_CLOSE(v, 0.0125, 1e-15, "second moment");
  g = -0.5;
  rd_probe_adamw_step(&a, 1, 0.05, 0.5, &g, &p, &m, &v, 1);  /* clipping factor 0.5: g' = -0.25 */
  double m2 = 0.9 * 0.05 - 0.1 * 0.25, v2 = 0.95 * 0.0125 + 0.05 * 0.0625;
  double p2 = (0.297 - 0.05 / (0.5 + 1e-8)) * (1 - 0.005) - (0.05 / (1 - 0.81)) * m2 / (sqrt(v2) / sqrt(1 - 0.9025) + 1e-8);
  CHECK_CLOSE(p, p2, 1e-14, "AdamW step 2 (cosine lr 0.05, clipped gradient)");
}

static void test_widening(void) {
  int64_t bad16 = 0, badbf = 0;
  for (uint32_t h = 0; h < 65536; h++) {
    uint32_t s = h >> 15, e = (h >> 10) & 31, f = h & 1023;
    float got = rd_half_to_float((uint16_t)h);
    double ref;
    if (e == 31) ref = f ? NAN : INFINITY;
    else if (e == 0) ref = ldexp((double)f, -24);
    else ref = ldexp(1024.0 + f, (int)e - 25);
    if (s) ref = -ref;
    if (isnan(ref) ? !isnan(got) : ((double)got != ref || !signbit(got) != !signbit(ref))) bad16++;
    /* bfloat16: sign, 8 exponent bits (bias 127), 7 fraction bits */
    uint32_t be = (h >> 7) & 255, bfr = h & 127;
    double bref;
    if (be == 255) bref = bfr ? NAN : INFINITY;
    else if (be == 0) bref = ldexp((double)bfr, -133);
    else bref = ldexp(128.0 + bfr, (int)be - 134);
    if (s) bref = -bref;
    float bg = rd_bf16_to_float((uint16_t)h);
    if (isnan(bref) ? !isnan(bg) : ((double)bg != bref || !signbit(bg) != !signbit(bref))) badbf++;
  }
  CHECK(bad16 == 0, "float16 widening exact for all 65536 values (%lld wrong)", (long long)bad16);
  CHECK(badbf == 0, "bfloat16 widening exact for all 65536 values (%lld wrong)", (long long)badbf);
}

/* The sum of a[j] * b[j] (or (a[j] - b[j])^2 with diff) as the kernels define it: lane l takes j = l,
 * l + 8, ... below n rounded down to 8 (a multiply, then an add, from 0), the lanes are combined
 * pairwise, then the tail is added in order. */
static double lane_sum(const double *a, const double *b, int64_t n, int diff) {
  double lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t n8 = n & ~(int64_t)7;
  for (int64_t j = 0; j < n8; j++) {
    volatile double t = diff ? a[j] - b[j] : a[j];
    volatile double p = diff ? t * t : t * b[j];
    lane[j % 8] = lane[j % 8] + p;
  }
  double s = ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
  for (int64_t j = n8; j < n; j++) {
    volatile double t = diff ? a[j] - b[j] : a[j];
    volatile double p = diff ? t * t : t * b[j];
    s = s + p;
  }
  return s;
}

/* The small kernels over doubles (L-BFGS's standardized rows, the gradient's norm, the distances and
 * the triangular solve of k-means) against their scalar definitions, bit for bit, in every
 * instruction set this CPU runs, for lengths with and without a tail of 8. */
static void test_small_kernels(void) {
  static const char *const isas[3] = {"scalar", "avx2", "avx512"};
  int tested = 0;
  for (int q = 0; q < 3; q++) {
    if (rd_probe_simd_set(isas[q]) != 0) continue;
    tested++;
    rd_stream s;
    rd_stream_init(&s, 3, "kernels", "standardize");
    for (int64_t d = 1; d <= 37; d += 9) {
      const int64_t K = 3, n = 5;
      float x[37];
      double mu[37], inv[37], y[37], X[5 * 37], r[5 * 3], G[3 * 37], Gref[3 * 37];
      fill(&s, (uint64_t)d, mu, d, 3e4);
      fill(&s, (uint64_t)d + 100, inv, d, 2.0);
      for (int64_t j = 0; j < d; j++) x[j] = (float)(mu[j] + 0.5 * inv[j]);
      rd_probe_standardize(x, mu, inv, d, y);
      int same = 1;
      for (int64_t j = 0; j < d; j++) {
        volatile double t = (double)x[j] - mu[j];
        volatile double want = t * inv[j];
        same &= y[j] == want;
      }
      CHECK(same, "%s: rd_probe_standardize == ((double)x - mu) * inv_sd (d %lld)", isas[q], (long long)d);
      fill(&s, (uint64_t)d + 200, X, n * d, 1.0);
      fill(&s, (uint64_t)d + 300, r, n * K, 1.0);
      fill(&s, (uint64_t)d + 400, G, K * d, 1.0);
      memcpy(Gref, G, sizeof(double) * (size_t)(K * d));
      for (int64_t i = 0; i < n; i++)
        for (int64_t k = 0; k < K; k++)
          for (int64_t j = 0; j < d; j++) {
            volatile double p = r[i * K + k] * X[i * d + j];
            Gref[k * d + j] = Gref[k * d + j] + p;
          }
      rd_probe_outer_acc(G, K, d, r, X, n);
      CHECK(memcmp(G, Gref, sizeof(double) * (size_t)(K * d)) == 0,
            "%s: rd_probe_outer_acc == the rows added one after another (d %lld)", isas[q], (long long)d);
    }
    for (int64_t d = 1; d <= 70; d += 23) {  /* 1, 24, 47, 70 */
      enum { N = 4, C = 3 };
      double X[N * 70], Cn[C * 70], D[N * C], want;
      fill(&s, 500 + (uint64_t)d, X, N * d, 2.0);
      fill(&s, 600 + (uint64_t)d, Cn, C * d, 2.0);
      want = lane_sum(X, X, d, 0);
      double got = rd_probe_sumsq(X, d);
      CHECK(memcmp(&got, &want, sizeof got) == 0, "%s: rd_probe_sumsq (d %lld)", isas[q], (long long)d);
      int64_t bad = 0;
      rd_probe_dot_f64(X, N, d, Cn, C, D);
      for (int i = 0; i < N; i++)
        for (int k = 0; k < C; k++) {
          want = lane_sum(X + i * d, Cn + k * d, d, 0);
          bad += memcmp(&D[i * C + k], &want, sizeof want) != 0;
        }
      rd_probe_sqdist_f64(X, N, d, Cn, C, D);
      for (int i = 0; i < N; i++)
        for (int k = 0; k < C; k++) {
          want = lane_sum(X + i * d, Cn + k * d, d, 1);
          bad += memcmp(&D[i * C + k], &want, sizeof want) != 0;
        }
      CHECK(bad == 0, "%s: %lld dot products and squared distances differ (d %lld)", isas[q], (long long)bad,
            (long long)d);
      /* forward substitution with a lower triangle whose diagonal is kept away from 0 */
      double *Lt = calloc((size_t)(d * d), sizeof(double)), *Y = malloc(sizeof(double) * (size_t)(2 * d));
      float xr[2][70];
      for (int64_t j = 0; j < d; j++) {
        fill(&s, 700 + (uint64_t)(d * 100 + j), Lt + j * d, j, 0.3);
        Lt[j * d + j] = 1.5 + 0.01 * (double)j;
        xr[0][j] = (float)X[j];
        xr[1][j] = (float)X[d + j];
      }
      const float *rows[2] = {xr[0], xr[1]};
      rd_probe_lsolve(Lt, d, rows, 2, Y);
      bad = 0;
      for (int i = 0; i < 2; i++) {
        double yr[70];
        for (int64_t j = 0; j < d; j++) yr[j] = ((double)xr[i][j] - lane_sum(Lt + j * d, yr, j, 0)) / Lt[j * d + j];
        bad += memcmp(yr, Y + i * d, sizeof(double) * (size_t)d) != 0;
      }
      CHECK(bad == 0, "%s: rd_probe_lsolve is forward substitution in the lanes' order (d %lld)", isas[q],
            (long long)d);
      free(Lt), free(Y);
    }
  }
  printf("small kernels checked in %d instruction sets\n", tested);
  rd_probe_simd_set("avx512");
}

int main(void) {
  test_isas();
  test_tree_grad();
  test_adamw();
  test_widening();
  test_small_kernels();
  return t_finish("test_probe_kernels");
}
