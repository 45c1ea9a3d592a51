/* cm on the CPU: p = σ(rc − rr) in float64 per pair and run, summed over runs in run order,
 * separately for runs that trained on the pair's user and runs that held it out. The CUDA
 * kernel (cm_cuda.cu) computes σ with the same branch-free code (fastmath.h) and sums
 * in the same order, so the two agree to the last bit; tests compare them on a GPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "rmdiag/kernels/cm.h"
#include "rmdiag/kernels/fastmath.h"

double rd_sigmoid(double x) { return rd_sigmoid_fast(x); }

/* Pass 1, a flat loop the compiler vectorizes for the widest vectors the CPU has (chosen at
 * load time); every lane computes the same bits as scalar code. It splits σ(rc − rr) into the
 * train part (σ where in_train, else +0.0) and the held-out part (the rest). The AVX-512 clone
 * asks for x86-64-v4 (AVX-512 F, DQ, BW, VL): with F alone the float-to-double conversions and
 * 64-bit integer steps are split into 256-bit halves and the loop runs 1.5x slower. FMA comes with
 * it but is never used: kernels are built with -ffp-contract=off. */
#define SPLIT_SIGMOID(T)                                                                        \
  __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))                           \
  static void split_sigmoid_##T(const T *restrict rc, const T *restrict rr, const uint8_t *restrict m, \
                                double *restrict tin, double *restrict tout, int64_t n) {       \
    for (int64_t i = 0; i < n; i++) {                                                           \
      double p = rd_sigmoid_fast((double)rc[i] - (double)rr[i]);                                \
      double t = m[i] ? p : 0.0;                                                                \
      tin[i] = t;                                                                               \
      tout[i] = p - t;                                                                          \
    }                                                                                           \
  }
SPLIT_SIGMOID(float)
SPLIT_SIGMOID(double)

/* Pass 2: per pair, sums in run order. Adding +0.0 leaves a sum of non-negative terms
 * unchanged, so these are exactly the sums of each side's values; four pairs at a time give
 * eight independent addition chains. */
static void pair_sums(const double *tin, const double *tout, const uint8_t *m, int64_t np, int64_t R,
                      double *tm, double *tg, int32_t *nt) {
  int64_t q = 0;
  for (; q + 4 <= np; q += 4) {
    const double *a0 = tin + q * R, *a1 = a0 + R, *a2 = a1 + R, *a3 = a2 + R;
    const double *b0 = tout + q * R, *b1 = b0 + R, *b2 = b1 + R, *b3 = b2 + R;
    double i0 = 0, i1 = 0, i2 = 0, i3 = 0, o0 = 0, o1 = 0, o2 = 0, o3 = 0;
    for (int64_t j = 0; j < R; j++) {
      i0 += a0[j]; i1 += a1[j]; i2 += a2[j]; i3 += a3[j];
      o0 += b0[j]; o1 += b1[j]; o2 += b2[j]; o3 += b3[j];
    }
    tm[q] = i0; tm[q + 1] = i1; tm[q + 2] = i2; tm[q + 3] = i3;
    tg[q] = o0; tg[q + 1] = o1; tg[q + 2] = o2; tg[q + 3] = o3;
  }
  for (; q < np; q++) {
    double i0 = 0, o0 = 0;
    for (int64_t j = 0; j < R; j++) {
      i0 += tin[q * R + j];
      o0 += tout[q * R + j];
    }
    tm[q] = i0;
    tg[q] = o0;
  }
  for (q = 0; q < np; q++) {
    int32_t n_in = 0;
    for (int64_t j = 0; j < R; j++) n_in += m[q * R + j];
    int32_t n_out = (int32_t)R - n_in;
    tm[q] = n_in > 0 ? tm[q] / n_in : NAN;
    tg[q] = n_out > 0 ? tg[q] / n_out : NAN;
    nt[q] = n_in;
  }
}

/* whole pairs per chunk of about 4096 elements (two 32 KiB buffers, cache-resident) */
int64_t rd_cm_chunk_pairs(int64_t n_runs) { return n_runs >= 4096 ? 1 : 4096 / n_runs; }

void rd_cm_pairs_cpu_chunk(const rd_cm_block *in, rd_cm_pairs *out, double *work) {
  const int64_t np = in->n_pairs, R = in->n_runs;
  double *tin = work, *tout = work + rd_cm_chunk_pairs(R) * R;
  if (in->ftype == RD_F32)
    split_sigmoid_float(in->reward_chosen, in->reward_rejected, in->in_train, tin, tout, np * R);
  else
    split_sigmoid_double(in->reward_chosen, in->reward_rejected, in->in_train, tin, tout, np * R);
  pair_sums(tin, tout, in->in_train, np, R, out->tm, out->tg, out->n_train);
}

int rd_cm_pairs_cpu(const rd_cm_block *in, rd_cm_pairs *out) {
  const int64_t P = in->n_pairs, R = in->n_runs, per = rd_cm_chunk_pairs(R);
  double *work = malloc(sizeof(double) * 2 * (size_t)(per * R));
  if (!work) return -1;
  size_t es = in->ftype == RD_F32 ? sizeof(float) : sizeof(double);
  for (int64_t p0 = 0; p0 < P; p0 += per) {
    rd_cm_block b = *in;
    b.n_pairs = P - p0 < per ? P - p0 : per;
    b.reward_chosen = (const char *)in->reward_chosen + (size_t)(p0 * R) * es;
    b.reward_rejected = (const char *)in->reward_rejected + (size_t)(p0 * R) * es;
    b.in_train = in->in_train + p0 * R;
    rd_cm_pairs o = {.tm = out->tm + p0, .tg = out->tg + p0, .n_train = out->n_train + p0};
    rd_cm_pairs_cpu_chunk(&b, &o, work);
  }
  free(work);
  return 0;
}

static int cpu_pairs(const rd_cm_block *in, rd_cm_pairs *out, char *err, size_t errlen) {
  if (rd_cm_pairs_cpu(in, out) == 0) return 0;
  snprintf(err, errlen, "out of memory");
  return -1;
}

const struct rd_cm_kernels rd_cm_kernels_cpu = {.pairs = cpu_pairs};
