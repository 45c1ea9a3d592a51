// CUDA kernels of the leakage report: bootstrap replicates of the cells' scored rows and factor-shuffle
// null draws, one thread per replicate or draw. Each thread makes the same draws (rd_rng_below_u32:
// Philox blocks of four 32-bit words) and the same additions in the same order as the CPU reference
// (src/kernels/leak_cpu.c); built with --fmad=false, so the results agree bit for bit.
#include <cuda_runtime.h>

#include "cuda_check.h"
#include <stdint.h>
#include <stdio.h>

extern "C" {
#include "rmdiag/kernels/backend.h"
#include "rmdiag/kernels/leak.h"
}

__global__ void leak_boot_kernel(const int64_t *row_off, const double *rows, const uint64_t *cell_id, int64_t B,
                                 uint32_t k0key, uint32_t k1key, int64_t k0, int64_t count, double *r, double *mae) {
  int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= count) return;
  int64_t k = k0 + t, c = k / B, b = k % B;
  int64_t off = row_off[c], n = row_off[c + 1] - off;
  const uint32_t key[2] = {k0key, k1key};
  uint64_t rep = (cell_id[c] << 32) | (uint64_t)b;
  double s[6] = {0, 0, 0, 0, 0, 0};
  for (int64_t j0 = 0; j0 < n; j0 += 4) {
    uint32_t ctr[4] = {(uint32_t)(j0 >> 2), (uint32_t)(j0 >> 34), (uint32_t)rep, (uint32_t)(rep >> 32)}, w[4];
    rd_philox4x32_10(ctr, key, w);
    for (int q = 0; q < 4 && j0 + q < n; q++) {
      uint32_t i = (uint32_t)(((uint64_t)w[q] * (uint64_t)n) >> 32);
      const double *row = rows + 8 * (off + (int64_t)i);
      for (int x = 0; x < 6; x++) s[x] += row[x];
    }
  }
  rd_leak_boot_finish(s, n, &r[t], &mae[t]);
}

__global__ void leak_null_kernel(const int64_t *month_off, const uint32_t *avail, const uint32_t *hit,
                                 const uint64_t *target_id, int64_t P, uint32_t n_sib, uint32_t k0key, uint32_t k1key,
                                 int64_t k0, int64_t count, int32_t *used, int32_t *hits) {
  int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= count) return;
  int64_t k = k0 + t, g = k / P, p = k % P;
  int64_t m0 = month_off[g], nm = month_off[g + 1] - m0;
  const uint32_t key[2] = {k0key, k1key};
  uint64_t rep = (target_id[g] << 32) | (uint64_t)p;
  uint32_t u = 0, h = 0;
  for (int64_t i0 = 0; i0 < nm; i0 += 4) {
    uint32_t ctr[4] = {(uint32_t)(i0 >> 2), (uint32_t)(i0 >> 34), (uint32_t)rep, (uint32_t)(rep >> 32)}, w[4];
    rd_philox4x32_10(ctr, key, w);
    for (int q = 0; q < 4 && i0 + q < nm; q++) {
      uint32_t j = (uint32_t)(((uint64_t)w[q] * n_sib) >> 32);
      u += (avail[m0 + i0 + q] >> j) & 1u;
      h += (hit[m0 + i0 + q] >> j) & 1u;
    }
  }
  used[t] = (int32_t)u;
  hits[t] = (int32_t)h;
}

static int leak_cuda_bootstrap(const rd_leak_boot *in, int64_t k0, int64_t k1, double *r, double *mae, char *err,
                               size_t errlen) {
  int64_t count = k1 - k0, nrows = in->row_off[in->n_cells];
  if (count <= 0) return 0;
  int64_t *d_off = NULL;
  double *d_rows = NULL, *d_r = NULL, *d_m = NULL;
  uint64_t *d_id = NULL;
  int rc = 1;
  RD_CUDA_TRY_GOTO(cudaMalloc(&d_off, sizeof(int64_t) * (size_t)(in->n_cells + 1)), err, errlen, fail);
  RD_CUDA_TRY_GOTO(cudaMalloc(&d_rows, sizeof(double) * 8 * (size_t)(nrows ? nrows : 1)), err, errlen, fail);
  RD_CUDA_TRY_GOTO(cudaMalloc(&d_id, sizeof(uint64_t) * (size_t)(in->n_cells ? in->n_cells : 1)), err, errlen, fail);
  RD_CUDA_TRY_GOTO(cudaMalloc(&d_r, sizeof(double) * (size_t)count), err, errlen, fail);
  RD_CUDA_TRY_GOTO(cudaMalloc(&d_m, sizeof(double) * (size_t)count), err, errlen, fail);
  RD_CUDA_TRY_GOTO(cudaMemcpy(d_off, in->row_off, sizeof(int64_t) * (size_t)(in->n_cells + 1), cudaMemcpyHostToDevice), err, errlen, fail);
  if (nrows > 0)
    RD_CUDA_TRY_GOTO(cudaMemcpy(d_rows, in->rows, sizeof(double) * 8 * (size_t)nrows, cudaMemcpyHostToDevice), err, errlen, fail);
  if (in->n_cells > 0)
    RD_CUDA_TRY_GOTO(cudaMemcpy(d_id, in->cell_id, sizeof(uint64_t) * (size_t)in->n_cells, cudaMemcpyHostToDevice), err, errlen, fail);
  {
    int threads = 128;
    int64_t blocks = (count + threads - 1) / threads;
    leak_boot_kernel<<<(unsigned)blocks, threads>>>(d_off, d_rows, d_id, in->B, in->stream.key[0], in->stream.key[1], k0, count, d_r,
                                                    d_m);
  }
  RD_CUDA_TRY_GOTO(cudaGetLastError(), err, errlen, fail);
  RD_CUDA_TRY_GOTO(cudaMemcpy(r, d_r, sizeof(double) * (size_t)count, cudaMemcpyDeviceToHost), err, errlen, fail);
  RD_CUDA_TRY_GOTO(cudaMemcpy(mae, d_m, sizeof(double) * (size_t)count, cudaMemcpyDeviceToHost), err, errlen, fail);
  rc = 0;
fail:
  cudaFree(d_off);
  cudaFree(d_rows);
  cudaFree(d_id);
  cudaFree(d_r);
  cudaFree(d_m);
  return rc;
}

static int leak_cuda_null(const rd_leak_null *in, int64_t k0, int64_t k1, int32_t *used, int32_t *hits, char *err,
                          size_t errlen) {
  int64_t count = k1 - k0, nm = in->month_off[in->n_targets];
  if (count <= 0) return 0;
  int64_t *d_off = NULL;
  uint32_t *d_av = NULL, *d_ht = NULL;
  uint64_t *d_id = NULL;
  int32_t *d_u = NULL, *d_h = NULL;
  int rc = 1;
  RD_CUDA_TRY_GOTO(cudaMalloc(&d_off, sizeof(int64_t) * (size_t)(in->n_targets + 1)), err, errlen, fail);
  RD_CUDA_TRY_GOTO(cudaMalloc(&d_av, sizeof(uint32_t) * (size_t)(nm ? nm : 1)), err, errlen, fail);
  RD_CUDA_TRY_GOTO(cudaMalloc(&d_ht, sizeof(uint32_t) * (size_t)(nm ? nm : 1)), err, errlen, fail);
  RD_CUDA_TRY_GOTO(cudaMalloc(&d_id, sizeof(uint64_t) * (size_t)(in->n_targets ? in->n_targets : 1)), err, errlen, fail);
  RD_CUDA_TRY_GOTO(cudaMalloc(&d_u, sizeof(int32_t) * (size_t)count), err, errlen, fail);
  RD_CUDA_TRY_GOTO(cudaMalloc(&d_h, sizeof(int32_t) * (size_t)count), err, errlen, fail);
  RD_CUDA_TRY_GOTO(cudaMemcpy(d_off, in->month_off, sizeof(int64_t) * (size_t)(in->n_targets + 1), cudaMemcpyHostToDevice), err, errlen, fail);
  if (nm > 0) {
    RD_CUDA_TRY_GOTO(cudaMemcpy(d_av, in->avail, sizeof(uint32_t) * (size_t)nm, cudaMemcpyHostToDevice), err, errlen, fail);
    RD_CUDA_TRY_GOTO(cudaMemcpy(d_ht, in->hit, sizeof(uint32_t) * (size_t)nm, cudaMemcpyHostToDevice), err, errlen, fail);
  }
  if (in->n_targets > 0)
    RD_CUDA_TRY_GOTO(cudaMemcpy(d_id, in->target_id, sizeof(uint64_t) * (size_t)in->n_targets, cudaMemcpyHostToDevice), err, errlen, fail);
  {
    int threads = 128;
    int64_t blocks = (count + threads - 1) / threads;
    leak_null_kernel<<<(unsigned)blocks, threads>>>(d_off, d_av, d_ht, d_id, in->P, in->n_sib, in->stream.key[0], in->stream.key[1],
                                                    k0, count, d_u, d_h);
  }
  RD_CUDA_TRY_GOTO(cudaGetLastError(), err, errlen, fail);
  RD_CUDA_TRY_GOTO(cudaMemcpy(used, d_u, sizeof(int32_t) * (size_t)count, cudaMemcpyDeviceToHost), err, errlen, fail);
  RD_CUDA_TRY_GOTO(cudaMemcpy(hits, d_h, sizeof(int32_t) * (size_t)count, cudaMemcpyDeviceToHost), err, errlen, fail);
  rc = 0;
fail:
  cudaFree(d_off);
  cudaFree(d_av);
  cudaFree(d_ht);
  cudaFree(d_id);
  cudaFree(d_u);
  cudaFree(d_h);
  return rc;
}

extern "C" const struct rd_leak_kernels rd_leak_kernels_cuda = {.bootstrap = leak_cuda_bootstrap, .null_draws = leak_cuda_null};
