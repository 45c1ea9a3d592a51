/* σ(chosen − rejected) of n elements through the C library's exp, for stream_cm -l: the same stable
 * form as rmdiag's sigmoid (1/(1+e) for x >= 0, e/(1+e) below, e = exp(-|x|)), but the exponential
 * is glibc's. Built on its own with -O3 -mavx2 -mfma -ffast-math, so that GCC vectorizes the loop
 * and calls glibc's vector math library (libmvec, _ZGVdN4v_exp: four doubles per call, within
 * 4 ulp). This is the fastest standard float64 sigmoid on an AVX2 CPU: the floor of the sigmoids
 * as a user would compute them with a library, measured beside rmdiag's own. */
#include <math.h>
#include <stdint.h>

void stream_sigmoids_libm(const float *restrict rc, const float *restrict rr, double *restrict p, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    double x = (double)rc[i] - (double)rr[i];
    double e = exp(-fabs(x));
    p[i] = (x >= 0.0 ? 1.0 : e) / (1.0 + e);
  }
}
