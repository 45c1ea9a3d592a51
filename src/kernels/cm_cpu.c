/* cm on the CPU: p = σ(rc − rr) in float64 per pair and run, summed over runs in run order,
 * separately for runs that trained on the pair's user and runs that held it out. The CUDA
 * kernel (cuda/backend_cuda.cu) computes σ with the same branch-free code (fastmath.h) and sums
 * in the same order, so the two agree to the last bit; tests compare them on a GPU. */
#include <math.h>
#include <stdlib.h>

#include "rmdiag/backend.h"
#include "rmdiag/fastmath.h"

double rd_sigmoid(double x) { return rd_sigmoid_fast(x); }

/* σ of rc − rr for n elements: a flat loop the compiler vectorizes (for the widest vectors the
 * CPU has, chosen at load time); every lane computes the same bits as the scalar code. */
#define SIGMOID_DIFF(T)                                                                       \
  __attribute__((target_clones("avx512f", "avx2", "default")))                                \
  static void sigmoid_diff_##T(const T *restrict rc, const T *restrict rr, double *restrict out, \
                               int64_t n) {                                                   \
    for (int64_t i = 0; i < n; i++) out[i] = rd_sigmoid_fast((double)rc[i] - (double)rr[i]);  \
  }
SIGMOID_DIFF(float)
SIGMOID_DIFF(double)

void rd_cm_pairs_cpu(const rd_cm_block *in, rd_cm_pairs *out) {
  const int64_t P = in->n_pairs, R = in->n_runs;
  /* whole pairs per chunk of about 4096 elements */
  int64_t per = R >= 4096 ? 1 : 4096 / R;
  double *buf = malloc(sizeof(double) * (size_t)(per * R));
  if (!buf) abort();
  for (int64_t p0 = 0; p0 < P; p0 += per) {
    int64_t np = P - p0 < per ? P - p0 : per;
    if (in->ftype == RD_F32)
      sigmoid_diff_float((const float *)in->reward_chosen + p0 * R, (const float *)in->reward_rejected + p0 * R, buf,
                         np * R);
    else
      sigmoid_diff_double((const double *)in->reward_chosen + p0 * R, (const double *)in->reward_rejected + p0 * R,
                          buf, np * R);
    for (int64_t q = 0; q < np; q++) {
      const double *v = buf + q * R;
      const uint8_t *m = in->in_train + (p0 + q) * R;
      double s_in = 0.0, s_out = 0.0;
      int32_t n_in = 0;
      for (int64_t j = 0; j < R; j++) {
        if (m[j]) {
          s_in += v[j];
          n_in++;
        } else {
          s_out += v[j];
        }
      }
      int32_t n_out = (int32_t)R - n_in;
      out->tm[p0 + q] = n_in > 0 ? s_in / n_in : NAN;
      out->tg[p0 + q] = n_out > 0 ? s_out / n_out : NAN;
      out->n_train[p0 + q] = n_in;
    }
  }
  free(buf);
}
