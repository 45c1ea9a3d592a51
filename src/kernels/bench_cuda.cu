// The benchmark report's per-item credits on the GPU: one thread per (model, item), the same
// comparisons and float64 arithmetic as the CPU reference (src/kernels/bench_cpu.c), so credits,
// gaps and spreads agree bit for bit. Built into librmdiag_cuda.so.
#include <cuda_runtime.h>

#include "cuda_check.h"
#include <stdio.h>

extern "C" {
#include "rmdiag/kernels/bench.h"
}

// Row r of the block holds columns base .. base + width - 1 (global column numbers).
template <typename T>
__global__ void bench_credits_kernel(const T *scores, long long width, long long base, const long long *offset,
                                     const int *n_correct, long long R, long long J, int rule, double *credit,
                                     double *gap, double *spread) {
  long long q = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (q >= R * J) return;
  long long r = q / J, j = q % J;
  const T *row = scores + r * width - base;
  long long lo = offset[j], hi = offset[j + 1], mid = lo + n_correct[j];
  double pmax = (double)row[lo], pmin = pmax, rmax = (double)row[mid];
  for (long long c = lo + 1; c < mid; c++) {
    double v = (double)row[c];
    pmax = v > pmax ? v : pmax;
    pmin = v < pmin ? v : pmin;
  }
  for (long long c = mid + 1; c < hi; c++) {
    double v = (double)row[c];
    rmax = v > rmax ? v : rmax;
  }
  double cr;
  if (rule == RD_BENCH_STRICT) {
    cr = pmin > rmax ? 1.0 : 0.0;
  } else {
    double top = pmax > rmax ? pmax : rmax;
    long long np = 0, nr = 0;
    for (long long c = lo; c < mid; c++) np += (double)row[c] == top;
    for (long long c = mid; c < hi; c++) nr += (double)row[c] == top;
    cr = (double)np / (double)(np + nr);
  }
  credit[q] = cr;
  if (gap) gap[q] = pmin - rmax;
  if (spread) spread[q] = pmax - pmin;
}

static int cuda_bench_credits(const rd_bench_block *in, rd_bench_out *out, char *err, size_t errlen) {
  int rc = 0;
  long long R = in->n_rows, J = in->n_items;
  if (R <= 0 || J <= 0) return 0;
  size_t es = in->ftype == RD_F32 ? sizeof(float) : sizeof(double);
  long long base = in->offset[0], width = in->offset[J] - base;
  size_t n = (size_t)(R * J);
  void *d_s = NULL;
  long long *d_off = NULL;
  int *d_nc = NULL;
  double *d_cr = NULL, *d_gap = NULL, *d_sp = NULL;
  int threads = 256;
  long long blocks = ((long long)n + threads - 1) / threads;
  RD_CUDA_TRY_GOTO(cudaMalloc(&d_s, (size_t)(R * width) * es), err, errlen, failed);
  RD_CUDA_TRY_GOTO(cudaMalloc(&d_off, sizeof(long long) * (size_t)(J + 1)), err, errlen, failed);
  RD_CUDA_TRY_GOTO(cudaMalloc(&d_nc, sizeof(int) * (size_t)J), err, errlen, failed);
  RD_CUDA_TRY_GOTO(cudaMalloc(&d_cr, sizeof(double) * n), err, errlen, failed);
  if (out->gap) RD_CUDA_TRY_GOTO(cudaMalloc(&d_gap, sizeof(double) * n), err, errlen, failed);
  if (out->spread) RD_CUDA_TRY_GOTO(cudaMalloc(&d_sp, sizeof(double) * n), err, errlen, failed);
  // only the block's columns of each row
  RD_CUDA_TRY_GOTO(cudaMemcpy2D(d_s, (size_t)width * es, (const char *)in->scores + (size_t)(base - in->col0) * es,
                                (size_t)in->row_stride * es, (size_t)width * es, (size_t)R, cudaMemcpyHostToDevice),
                   err, errlen, failed);
  RD_CUDA_TRY_GOTO(cudaMemcpy(d_off, in->offset, sizeof(long long) * (size_t)(J + 1), cudaMemcpyHostToDevice), err, errlen, failed);
  RD_CUDA_TRY_GOTO(cudaMemcpy(d_nc, in->n_correct, sizeof(int) * (size_t)J, cudaMemcpyHostToDevice), err, errlen, failed);
  if (in->ftype == RD_F32)
    bench_credits_kernel<float><<<(unsigned)blocks, threads>>>((const float *)d_s, width, base, d_off, d_nc, R, J,
                                                               (int)in->rule, d_cr, d_gap, d_sp);
  else
    bench_credits_kernel<double><<<(unsigned)blocks, threads>>>((const double *)d_s, width, base, d_off, d_nc, R, J,
                                                                (int)in->rule, d_cr, d_gap, d_sp);
  RD_CUDA_TRY_GOTO(cudaGetLastError(), err, errlen, failed);
  RD_CUDA_TRY_GOTO(cudaMemcpy(out->credit, d_cr, sizeof(double) * n, cudaMemcpyDeviceToHost), err, errlen, failed);
  if (out->gap) RD_CUDA_TRY_GOTO(cudaMemcpy(out->gap, d_gap, sizeof(double) * n, cudaMemcpyDeviceToHost), err, errlen, failed);
  if (out->spread)
    RD_CUDA_TRY_GOTO(cudaMemcpy(out->spread, d_sp, sizeof(double) * n, cudaMemcpyDeviceToHost), err, errlen, failed);
  goto cleanup;
failed:
  rc = 1;
cleanup:
  cudaFree(d_s);
  cudaFree(d_off);
  cudaFree(d_nc);
  cudaFree(d_cr);
  cudaFree(d_gap);
  cudaFree(d_sp);
  return rc;
}

extern "C" const struct rd_bench_kernels rd_bench_kernels_cuda = {.credits = cuda_bench_credits};
