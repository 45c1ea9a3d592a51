/* The arithmetic kernels against independent references: the branch-free exp and sigmoid
 * against libm (in ulps), and the cm pair kernel against a plain loop over libm's exp. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "rmdiag/kernels/backend.h"
#include "rmdiag/kernels/fastmath.h"
#include "rmdiag/kernels/rng.h"

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

int main(void) {
  test_exp();
  test_sigmoid();
  test_cm_kernel();
  return t_finish("test_kernels");
}
