// The cm per-pair kernel on a GPU, beside its CPU reference (cm_cpu.c).
#include <cuda_runtime.h>
#include <stdio.h>

extern "C" {
#include "rmdiag/kernels/cm.h"
}
#include "rmdiag/kernels/fastmath.h"
#include "cuda_check.h"

// One thread per pair; σ is the same branch-free code as the CPU's (fastmath.h, built here with
// --fmad=false), and the runs are summed in run order as rd_cm_pairs_cpu does, so the values agree
// bit for bit.
template <typename T>
__global__ void cm_pairs_kernel(const T *rc, const T *rr, const unsigned char *m, long long P, long long R,
                                double *tm, double *tg, int *n_train) {
  long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= P) return;
  double s_in = 0.0, s_out = 0.0;
  int n_in = 0;
  for (long long j = 0; j < R; j++) {
    double v = rd_sigmoid_fast((double)rc[p * R + j] - (double)rr[p * R + j]);
    double t = m[p * R + j] ? v : 0.0;
    s_in += t;
    s_out += v - t;
    n_in += m[p * R + j];
  }
  int n_out = (int)R - n_in;
  const double qnan = __longlong_as_double(0x7ff8000000000000LL);  // the CPU's NAN, bit for bit
  tm[p] = n_in > 0 ? s_in / n_in : qnan;
  tg[p] = n_out > 0 ? s_out / n_out : qnan;
  n_train[p] = n_in;
}

// Pairs go through the device in slices of at most 2^20 pairs and 2^25 rewards per side (at most
// about 570 MB of float64 rewards and flags; 420 MB for 2^20 pairs x 25 runs), so a rank's shard of
// any size, and any number of runs, fits a device.
static int cuda_cm_pairs(const rd_cm_block *in, rd_cm_pairs *out, char *err, size_t errlen) {
  const long long P = in->n_pairs, R = in->n_runs;
  const long long by_el = R > 0 ? (1LL << 25) / R : (1LL << 20);
  const long long slice = by_el < 1 ? 1 : by_el < (1LL << 20) ? by_el : (1LL << 20);
  const size_t es = in->ftype == RD_F32 ? sizeof(float) : sizeof(double);
  const long long np_max = P < slice ? P : slice;
  void *d_rc = NULL, *d_rr = NULL;
  unsigned char *d_m = NULL;
  double *d_tm = NULL, *d_tg = NULL;
  int *d_n = NULL, rc = 1;
#define STEP(call) RD_CUDA_TRY_GOTO(call, err, errlen, cleanup)
  STEP(cudaMalloc(&d_rc, (size_t)(np_max * R) * es));
  STEP(cudaMalloc(&d_rr, (size_t)(np_max * R) * es));
  STEP(cudaMalloc(&d_m, (size_t)(np_max * R)));
  STEP(cudaMalloc(&d_tm, (size_t)np_max * sizeof(double)));
  STEP(cudaMalloc(&d_tg, (size_t)np_max * sizeof(double)));
  STEP(cudaMalloc(&d_n, (size_t)np_max * sizeof(int)));
  for (long long p0 = 0; p0 < P; p0 += slice) {
    long long np = P - p0 < slice ? P - p0 : slice;
    size_t nel = (size_t)(np * R);
    STEP(cudaMemcpy(d_rc, (const char *)in->reward_chosen + (size_t)(p0 * R) * es, nel * es, cudaMemcpyHostToDevice));
    STEP(cudaMemcpy(d_rr, (const char *)in->reward_rejected + (size_t)(p0 * R) * es, nel * es, cudaMemcpyHostToDevice));
    STEP(cudaMemcpy(d_m, in->in_train + p0 * R, nel, cudaMemcpyHostToDevice));
    unsigned blocks = (unsigned)((np + 255) / 256);
    if (in->ftype == RD_F32)
      cm_pairs_kernel<float><<<blocks, 256>>>((const float *)d_rc, (const float *)d_rr, d_m, np, R, d_tm, d_tg, d_n);
    else
      cm_pairs_kernel<double><<<blocks, 256>>>((const double *)d_rc, (const double *)d_rr, d_m, np, R, d_tm, d_tg, d_n);
    STEP(cudaGetLastError());
    STEP(cudaMemcpy(out->tm + p0, d_tm, (size_t)np * sizeof(double), cudaMemcpyDeviceToHost));
    STEP(cudaMemcpy(out->tg + p0, d_tg, (size_t)np * sizeof(double), cudaMemcpyDeviceToHost));
    STEP(cudaMemcpy(out->n_train + p0, d_n, (size_t)np * sizeof(int), cudaMemcpyDeviceToHost));
  }
  rc = 0;
#undef STEP
cleanup:
  cudaFree(d_rc);
  cudaFree(d_rr);
  cudaFree(d_m);
  cudaFree(d_tm);
  cudaFree(d_tg);
  cudaFree(d_n);
  return rc;
}

extern "C" const struct rd_cm_kernels rd_cm_kernels_cuda = {.pairs = cuda_cm_pairs};
