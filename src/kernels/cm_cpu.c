/* cm on the CPU: p = σ(rc − rr) in float64 per pair and run, summed over runs in run order,
 * separately for runs that trained on the pair's user and runs that held it out. The CUDA
 * kernel (cuda/cm_cuda.cu) follows the same order and is tested against this reference. */
#include <math.h>

#include "rmdiag/backend.h"

double rd_sigmoid(double x) {
  if (x >= 0.0) return 1.0 / (1.0 + exp(-x));
  double e = exp(x);
  return e / (1.0 + e);
}

#define CM_PAIRS_LOOP(T)                                                   \
  do {                                                                     \
    const T *rc = (const T *)in->reward_chosen;                            \
    const T *rr = (const T *)in->reward_rejected;                          \
    for (int64_t p = 0; p < P; p++) {                                      \
      const T *c = rc + p * R, *r = rr + p * R;                            \
      const uint8_t *m = in->in_train + p * R;                             \
      double s_in = 0.0, s_out = 0.0;                                      \
      int32_t n_in = 0;                                                    \
      for (int64_t j = 0; j < R; j++) {                                    \
        double v = rd_sigmoid((double)c[j] - (double)r[j]);                \
        if (m[j]) {                                                        \
          s_in += v;                                                       \
          n_in++;                                                          \
        } else {                                                           \
          s_out += v;                                                      \
        }                                                                  \
      }                                                                    \
      int32_t n_out = (int32_t)R - n_in;                                   \
      out->tm[p] = n_in > 0 ? s_in / n_in : NAN;                           \
      out->tg[p] = n_out > 0 ? s_out / n_out : NAN;                        \
      out->n_train[p] = n_in;                                              \
    }                                                                      \
  } while (0)

void rd_cm_pairs_cpu(const rd_cm_block *in, rd_cm_pairs *out) {
  const int64_t P = in->n_pairs, R = in->n_runs;
  if (in->ftype == RD_F32)
    CM_PAIRS_LOOP(float);
  else
    CM_PAIRS_LOOP(double);
}
