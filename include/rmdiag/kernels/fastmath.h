/* Elementary functions written as branch-free arithmetic, so that a scalar loop, a vectorized
 * loop (any width) and a CUDA thread compute the same bits: per-item results then do not depend
 * on how a loop was vectorized, on data alignment, or on the backend. Accuracy is tested against
 * libm in tests/test_kernels.c (within 2 ulp). */
#ifndef RMDIAG_FASTMATH_H
#define RMDIAG_FASTMATH_H

#include <math.h>
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
 * Cody–Waite reduction x = k ln2 + r with |r| <= ln2/2, a degree-11 polynomial for e^r, and 2^k
 * applied in two factors so subnormal results round once. */
RD_FM_HD double rd_exp_nonpos(double x) {
  const double log2e = 1.4426950408889634;
  const double ln2_hi = 6.93147180369123816490e-01; /* 32 significant bits: k * ln2_hi is exact */
  const double ln2_lo = 1.90821492927058770002e-10;
  const double shifter = 6755399441055744.0;       /* 1.5 * 2^52: adding it rounds to an integer */
  x = x < -1400.0 ? -1400.0 : x;
  double t = x * log2e + shifter;
  double k = t - shifter;
  double r = (x - k * ln2_hi) - k * ln2_lo;
  /* e^r = 1 + r + r^2 q(r), q of degree 9 fitted to e^r on |r| <= ln2/2 in 60-digit arithmetic
   * (scripts/fit_exp_poly.py): with its coefficients rounded to doubles its relative error is below
   * 1e-17 there, as small as a degree-13 Taylor polynomial's. q is evaluated as its even and odd
   * halves, two Horner chains in r^2 that run side by side; their rounding errors reach e^r
   * multiplied by r^2 <= 0.12. The last two steps add exact ones, so e^0 = 1 exactly. */
  double r2 = r * r;
  double qe = 2.7626359798074195e-07;
  qe = qe * r2 + 2.4801504340856006e-05;
  qe = qe * r2 + 0.0013888888932493439;
  qe = qe * r2 + 0.041666666666573128;
  qe = qe * r2 + 0.50000000000000056;
  double qo = 2.5105208339987698e-08;
  qo = qo * r2 + 2.7557255421023506e-06;
  qo = qo * r2 + 0.00019841269874804214;
  qo = qo * r2 + 0.0083333333333261393;
  qo = qo * r2 + 0.16666666666666671;
  double p = qo * r + qe;
  p = p * r + 1.0;
  p = p * r + 1.0;
  /* 2^k as two factors 2^k1 * 2^k2 with k1 = max(k, -1020) and k2 = k - k1 (0 unless the result
   * is subnormal, and >= -1000): p * 2^k1 is exact and the second product rounds at most once.
   * Their exponent bits come from the integers held in the low bits of k1 + shifter (the larger of
   * t and shifter - 1020) and k2 + shifter: 64-bit integer adds and shifts only, which vectorize
   * on any SIMD width. */
  double t1 = t < shifter - 1020.0 ? shifter - 1020.0 : t;
  double t2 = (t - t1) + shifter;
  uint64_t sb = rd_double_to_bits(shifter);
  uint64_t e1 = rd_double_to_bits(t1) - sb + 1023u;
  uint64_t e2 = rd_double_to_bits(t2) - sb + 1023u;
  double s1 = rd_bits_to_double(e1 << 52);
  double s2 = rd_bits_to_double(e2 << 52);
  return (p * s1) * s2;
}

/* σ(x) = 1 / (1 + e^-x), evaluated as 1/(1+e) for x >= 0 and e/(1+e) for x < 0 with
 * e = e^-|x|: no overflow for any finite x, and correct tails (σ(-750) is about 1e-326 → 0). */
RD_FM_HD double rd_sigmoid_fast(double x) {
  double e = rd_exp_nonpos(-fabs(x));
  double num = x >= 0.0 ? 1.0 : e;
  return num / (1.0 + e);
}

#endif
