/* Elementary functions written as branch-free arithmetic, so that a scalar loop, a vectorized
 * loop (any width) and a CUDA thread compute the same bits: per-item results then do not depend
 * on how a loop was vectorized, on data alignment, or on the backend. Accuracy is tested against
 * libm in tests/test_kernels.c (within 2 ulp). */
#ifndef RMDIAG_FASTMATH_H
#define RMDIAG_FASTMATH_H

#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define RD_FM_HD __host__ __device__ __forceinline__
#else
#define RD_FM_HD static inline
#endif

RD_FM_HD double rd_bits_to_double(uint64_t u) {
#ifdef __CUDA_ARCH__
  return __longlong_as_double((long long)u);
#else
  double d;
  memcpy(&d, &u, sizeof d);
  return d;
#endif
}

RD_FM_HD uint64_t rd_double_to_bits(double d) {
#ifdef __CUDA_ARCH__
  return (uint64_t)__double_as_longlong(d);
#else
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  return u;
#endif
}

/* e^x for x <= 0 (the sigmoid needs no more), subnormal results included, 0 below -745.2.
 * Cody–Waite reduction x = k ln2 + r with |r| <= ln2/2, a degree-13 Taylor polynomial for e^r
 * (truncation below 1e-17), and 2^k applied in two factors so subnormal results round once. */
RD_FM_HD double rd_exp_nonpos(double x) {
  const double log2e = 1.4426950408889634;
  const double ln2_hi = 6.93147180369123816490e-01; /* 32 significant bits: k * ln2_hi is exact */
  const double ln2_lo = 1.90821492927058770002e-10;
  const double shifter = 6755399441055744.0;       /* 1.5 * 2^52: adding it rounds to an integer */
  x = x < -1400.0 ? -1400.0 : x;
  double t = x * log2e + shifter;
  double k = t - shifter;
  double r = (x - k * ln2_hi) - k * ln2_lo;
  double p = 1.0 / 6227020800.0;  /* 1/13! */
  p = p * r + 1.0 / 479001600.0;
  p = p * r + 1.0 / 39916800.0;
  p = p * r + 1.0 / 3628800.0;
  p = p * r + 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  /* 2^k as two factors 2^k1 * 2^k2 (k1 = k/2 rounded, k2 = k - k1, both >= -1010), their
   * exponent bits taken from the integers held in the low bits of (k + shifter): 64-bit integer
   * adds and shifts only, which vectorize on any SIMD width */
  double k1 = (k * 0.5 + shifter) - shifter;
  double k2 = k - k1;
  uint64_t sb = rd_double_to_bits(shifter);
  uint64_t e1 = rd_double_to_bits(k1 + shifter) - sb + 1023u;
  uint64_t e2 = rd_double_to_bits(k2 + shifter) - sb + 1023u;
  double s1 = rd_bits_to_double(e1 << 52);
  double s2 = rd_bits_to_double(e2 << 52);
  return (p * s1) * s2;
}

/* σ(x) = 1 / (1 + e^-x), evaluated as 1/(1+e) for x >= 0 and e/(1+e) for x < 0 with
 * e = e^-|x|: no overflow for any finite x, and correct tails (σ(-750) is about 1e-326 → 0). */
RD_FM_HD double rd_sigmoid_fast(double x) {
  double ax = x < 0.0 ? -x : x;
  double e = rd_exp_nonpos(-ax);
  double num = x >= 0.0 ? 1.0 : e;
  return num / (1.0 + e);
}

#endif
