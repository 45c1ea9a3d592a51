/* The arithmetic kernels against independent references: the branch-free exp and sigmoid
 * against libm (in ulps), the cm pair kernel against a plain loop over libm's exp, and the
 * benchmark's resampled sums (every instruction-set version this CPU runs) against plain loops. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "rmdiag/kernels/backend.h"
#include "rmdiag/kernels/bench.h"
#include "rmdiag/kernels/fastmath.h"
#include "rmdiag/kernels/rng.h"
#include "rmdiag/kernels/simd.h"

static int64_t ulps(double a, double b) {
  int64_t ia, ib;
  memcpy(&ia, &a, 8);
  memcpy(&ib, &b, 8);
  int64_t d = ia - ib;
  return d < 0 ? -d : d;
}

static void test_exp(void) {
  int64_t worst = 0;
  double worst_x = 0.0;
  rd_stream s;
  rd_stream_init(&s, 0, "test", "exp");
  for (uint64_t i = 0; i < 2000000; i++) {
    double x = -708.0 * rd_rng_uniform(&s, 0, i);
    if (i < 1000) x = -(double)i * 0.001;  /* near 0 */
    int64_t u = ulps(rd_exp_nonpos(x), exp(x));
    if (u > worst) {
      worst = u;
      worst_x = x;
    }
  }
  CHECK(worst <= 2, "rd_exp_nonpos within 2 ulp of libm on [-708, 0] (worst %lld at %.17g)", (long long)worst, worst_x);
  CHECK(rd_exp_nonpos(0.0) == 1.0, "exp(0) = 1");
  /* subnormal results round once: within one subnormal step of libm */
  double worst_sub = 0.0;
  for (int i = 0; i < 100000; i++) {
    double x = -708.5 - 36.6 * i / 100000.0;
    double d = fabs(rd_exp_nonpos(x) - exp(x));
    if (d > worst_sub) worst_sub = d;
  }
  CHECK(worst_sub <= 4.9406564584124654e-324, "subnormal exp within one step (worst %g)", worst_sub);
  CHECK(rd_exp_nonpos(-746.0) == 0.0 && rd_exp_nonpos(-1e300) == 0.0, "exp underflows to 0");
}

static void test_sigmoid(void) {
  double worst = 0.0, worst_x = 0.0;
  for (int i = -708000; i <= 800000; i++) { /* normal results; subnormals are checked below */
    double x = i * 0.001;
    long double ref = 1.0L / (1.0L + expl(-(long double)x));
    double got = rd_sigmoid(x);
    double rel = ref > 0 ? (double)fabsl((long double)got - ref) / (double)ref : fabs(got);
    if (rel > worst) {
      worst = rel;
      worst_x = x;
    }
  }
  CHECK(worst < 1e-15, "sigmoid relative error %.3g at %.3f (expected < 1e-15)", worst, worst_x);
  CHECK(rd_sigmoid(1e6) == 1.0 && rd_sigmoid(-1e6) == 0.0 && rd_sigmoid(0.0) == 0.5, "sigmoid tails and centre");
  double worst_sub = 0.0;
  for (int i = 0; i < 40000; i++) {
    double x = -708.5 - i * 0.001;
    double ref = (double)(1.0L / (1.0L + expl(-(long double)x)));
    double d = fabs(rd_sigmoid(x) - ref);
    if (d > worst_sub) worst_sub = d;
  }
  CHECK(worst_sub <= 2 * 4.9406564584124654e-324, "subnormal sigmoid within two steps (worst %g)", worst_sub);
  CHECK(rd_sigmoid(-740.0) > 0.0 && rd_sigmoid(-740.0) < 1e-320, "sigmoid(-740) is a tiny positive subnormal");
}

static void test_cm_kernel(void) {
  enum { P = 37, R = 5 };
  double rc[P * R], rr[P * R], tm[P], tg[P];
  float rcf[P * R], rrf[P * R];
  uint8_t m[P * R];
  int32_t nt[P];
  rd_stream s;
  rd_stream_init(&s, 0, "test", "cm");
  for (int i = 0; i < P * R; i++) {
    rc[i] = 20.0 * rd_rng_uniform(&s, 0, (uint64_t)i) - 10.0;
    rr[i] = 20.0 * rd_rng_uniform(&s, 1, (uint64_t)i) - 10.0;
    if (i == 7) rc[i] = 900.0;  /* saturated */
    if (i == 8) rr[i] = 900.0;
    m[i] = (uint8_t)((i / R) % 3 == 0 ? 1 : (i / R) % 3 == 1 ? 0 : (i % 2));
    rcf[i] = (float)rc[i];
    rrf[i] = (float)rr[i];
  }
  for (int pass = 0; pass < 2; pass++) {
    rd_cm_block blk = {.n_pairs = P, .n_runs = R, .ftype = pass ? RD_F32 : RD_F64,
                       .reward_chosen = pass ? (void *)rcf : (void *)rc,
                       .reward_rejected = pass ? (void *)rrf : (void *)rr, .in_train = m};
    rd_cm_pairs res = {tm, tg, nt};
    rd_cm_pairs_cpu(&blk, &res);
    for (int p = 0; p < P; p++) {
      double si = 0, so = 0;
      int ni = 0;
      for (int j = 0; j < R; j++) {
        double d = pass ? (double)rcf[p * R + j] - (double)rrf[p * R + j] : rc[p * R + j] - rr[p * R + j];
        double v = 1.0 / (1.0 + exp(-d));
        if (m[p * R + j]) {
          si += v;
          ni++;
        } else {
          so += v;
        }
      }
      CHECK(nt[p] == ni, "pair %d n_train %d vs %d", p, nt[p], ni);
      if (ni) CHECK_CLOSE(tm[p], si / ni, 1e-14, "tm");
      else CHECK(isnan(tm[p]), "tm NaN without train runs (pair %d)", p);
      if (R - ni) CHECK_CLOSE(tg[p], so / (R - ni), 1e-14, "tg");
      else CHECK(isnan(tg[p]), "tg NaN without held-out runs (pair %d)", p);
    }
  }
}

/* The cm kernel to the last bit against the plain reading of its definition (each side's sigmoids
 * added in run order with rd_sigmoid, divided by the count), at each vector width this CPU has: run
 * counts below, at and past a vector and a 4 x 4 block, past the 248 flags counted per word group;
 * pair counts that leave 1-3 pairs outside the blocks of four; pairs with every run or no run in train. */
static void test_cm_exact_levels(void) {
  static const int64_t Rs[] = {1, 2, 3, 4, 5, 7, 8, 9, 31, 50, 64, 250, 300};
  static const int64_t Ps[] = {1, 3, 4, 5, 9, 37};
  static const char *const isas[] = {"base", "avx2", "avx512"};
  rd_stream s;
  rd_stream_init(&s, 0, "test", "cm-levels");
  int tested = 0;
  for (int k = 0; k < 3; k++) {
    if (rd_simd_set(isas[k]) != 0) continue;
    tested++;
    int64_t bad = 0;
    for (size_t a = 0; a < sizeof Rs / sizeof Rs[0]; a++)
      for (size_t b = 0; b < sizeof Ps / sizeof Ps[0]; b++)
        for (int f32 = 0; f32 < 2; f32++) {
          int64_t R = Rs[a], P = Ps[b], n = P * R;
          double *rc = malloc(sizeof(double) * (size_t)n), *rr = malloc(sizeof(double) * (size_t)n);
          float *rcf = malloc(sizeof(float) * (size_t)n), *rrf = malloc(sizeof(float) * (size_t)n);
          uint8_t *m = malloc((size_t)n);
          double *tm = malloc(sizeof(double) * (size_t)P), *tg = malloc(sizeof(double) * (size_t)P);
          int32_t *nt = malloc(sizeof(int32_t) * (size_t)P);
          for (int64_t i = 0; i < n; i++) {
            uint64_t c = (uint64_t)(a * 1000 + b * 10 + (size_t)f32) << 32 | (uint64_t)i;
            rc[i] = 16.0 * rd_rng_uniform(&s, 0, c) - 8.0;
            rr[i] = 16.0 * rd_rng_uniform(&s, 1, c) - 8.0;
            rcf[i] = (float)rc[i];
            rrf[i] = (float)rr[i];
            int64_t p = i / R;
            m[i] = (uint8_t)(p % 5 == 1 ? 1 : p % 5 == 2 ? 0 : rd_rng_below_u32(&s, 2, c, 2));
          }
          rd_cm_block blk = {.n_pairs = P, .n_runs = R, .ftype = f32 ? RD_F32 : RD_F64,
                             .reward_chosen = f32 ? (void *)rcf : (void *)rc,
                             .reward_rejected = f32 ? (void *)rrf : (void *)rr, .in_train = m};
          rd_cm_pairs res = {tm, tg, nt};
          CHECK(rd_cm_pairs_cpu(&blk, &res) == 0, "cm kernel ran");
          for (int64_t p = 0; p < P; p++) {
            double si = 0.0, so = 0.0;
            int32_t ni = 0;
            for (int64_t j = 0; j < R; j++) {
              int64_t i = p * R + j;
              double v = rd_sigmoid(f32 ? (double)rcf[i] - (double)rrf[i] : rc[i] - rr[i]);
              if (m[i]) {
                si += v;
                ni++;
              } else {
                so += v;
              }
            }
            double wm = ni ? si / ni : NAN, wg = ni < R ? so / (double)(R - ni) : NAN;
            if (nt[p] != ni || !(memcmp(&tm[p], &wm, 8) == 0 || (isnan(tm[p]) && isnan(wm))) ||
                !(memcmp(&tg[p], &wg, 8) == 0 || (isnan(tg[p]) && isnan(wg))))
              bad++;
          }
          free(rc), free(rr), free(rcf), free(rrf), free(m), free(tm), free(tg), free(nt);
        }
    CHECK(bad == 0, "cm kernel at %s: %lld pairs differ from the plain loop's bits", isas[k], (long long)bad);
  }
  rd_simd_set("avx512");  /* back to the best level */
  CHECK(tested >= 1, "cm kernel tested at %d widths", tested);
}

/* The benchmark's sums of drawn rows (double, int16 and 0/1 uint8 lanes) against plain loops in draw
 * order, bit for bit, at each vector width this CPU has: lane counts that are and are not multiples of
 * a vector, every chunk count, draws with and without an index, and uint8 sums past 255 draws (where
 * the byte sums are widened). */
static void test_gathers(void) {
  enum { ROWS = 700, LD8 = 256, LD16 = 256, LDB = 192 };
  double *X = malloc(sizeof(double) * ROWS * LD8), *out = malloc(sizeof(double) * LD8), *ref = malloc(sizeof(double) * LD8);
  int16_t *H = malloc(sizeof(int16_t) * ROWS * LD16), *hout = malloc(sizeof(int16_t) * LD16);
  uint8_t *B = malloc((size_t)ROWS * LDB);
  uint32_t *idx = malloc(sizeof(uint32_t) * 600);
  rd_stream s;
  rd_stream_init(&s, 7, "test", "gathers");
  for (int64_t i = 0; i < ROWS * LD8; i++) X[i] = rd_rng_uniform(&s, 1, (uint64_t)i) * 3.0 - 1.0;
  for (int64_t i = 0; i < ROWS * LD16; i++) H[i] = (int16_t)rd_rng_below_u32(&s, 2, (uint64_t)i, 51);
  for (int64_t i = 0; i < (int64_t)ROWS * LDB; i++) B[i] = (uint8_t)rd_rng_below_u32(&s, 3, (uint64_t)i, 2);
  for (int j = 0; j < 600; j++) idx[j] = rd_rng_below_u32(&s, 4, (uint64_t)j, ROWS);
  static const char *const isas[] = {"base", "avx2", "avx512"};
  static const int64_t Ls[] = {1, 7, 8, 9, 17, 31, 41, 50, 64, 65, 100, 120, 130, 192, 256};  /* every chunk count */
  static const int64_t ns[] = {0, 1, 5, 255, 256, 600};
  int tested = 0;
  for (int k = 0; k < 3; k++) {
    if (rd_simd_set(isas[k]) != 0) continue;
    tested++;
    int64_t bad = 0;
    for (size_t a = 0; a < sizeof Ls / sizeof Ls[0]; a++)
      for (size_t b = 0; b < sizeof ns / sizeof ns[0]; b++)
        for (int with_idx = 0; with_idx < 2; with_idx++) {
          int64_t L = Ls[a], n = ns[b];
          const uint32_t *ix = with_idx ? idx : NULL;
          rd_bench_gather_sum(ix, n, X, LD8, L, out);
          for (int64_t l = 0; l < L; l++) {
            double acc = 0.0;
            for (int64_t j = 0; j < n; j++) acc += X[(ix ? (int64_t)ix[j] : j) * LD8 + l];
            bad += memcmp(&acc, &out[l], sizeof acc) != 0;
          }
          if (L <= LD16) {
            rd_bench_gather_sum16(ix, n, H, LD16, L, hout);
            rd_bench_gather_mean16(ix, n, H, LD16, L, 7.0, out);
            for (int64_t l = 0; l < L; l++) {
              int32_t acc = 0;
              for (int64_t j = 0; j < n; j++) acc += H[(ix ? (int64_t)ix[j] : j) * LD16 + l];
              double mean = (double)acc / 7.0;
              bad += acc != hout[l] || memcmp(&mean, &out[l], sizeof mean) != 0;
            }
          }
          if (L <= 128) {
            rd_bench_gather_mean8(ix, n, B, LDB, L, 3.0, out);
            for (int64_t l = 0; l < L; l++) {
              int32_t acc = 0;
              for (int64_t j = 0; j < n; j++) acc += B[(ix ? (int64_t)ix[j] : j) * LDB + l];
              double mean = (double)acc / 3.0;
              bad += memcmp(&mean, &out[l], sizeof mean) != 0;
            }
          }
        }
    CHECK(bad == 0, "%s: %lld resampled sums differ from a plain loop in draw order", isas[k], (long long)bad);
  }
  printf("resampled sums checked at %d vector widths (this CPU: %s)\n", tested, rd_simd_name(rd_simd()));
  free(X), free(out), free(ref), free(H), free(hout), free(B), free(idx);
}

int main(void) {
  test_exp();
  test_sigmoid();
  test_cm_kernel();
  test_cm_exact_levels();
  test_gathers();
  return t_finish("test_kernels");
}
