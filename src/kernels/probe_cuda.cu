// The probe's GPU kernels (struct rd_probe_kernels): a rank's training rows live on the device as
// float64 (widened once on upload); a block's gradient is two cuBLAS DGEMMs around a residual kernel
// that uses the CPU's branch-free sigmoid and exp (fastmath.h). The summation order inside cuBLAS
// differs from the CPU reference, so results agree within rounding (tested: trained weights within
// 1e-4 relative L2, block gradients within 1e-10), and the fixed reduction tree over blocks stays on the
// host, so a run is still the same for any number of ranks on this backend.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

extern "C" {
#include "rmdiag/kernels/backend.h"
#include "rmdiag/kernels/probe.h"
}
#include "rmdiag/kernels/fastmath.h"
#include "cuda_check.h"

struct rows_dev {
  double *X;              // [n, pitch] row-major, the d features then zeros
  int64_t n, d, pitch;    // pitch: d rounded up to 32 doubles (256 bytes)
  double *W, *b, *Z, *R, *G, *gb;
  int32_t *y;
  int64_t cap_w, cap_rows;
};

static cublasHandle_t blas;
static int blas_ready;

static int ensure_blas(char *err, size_t errlen) {
  if (blas_ready) return 0;
  RD_CUBLAS_TRY(cublasCreate(&blas), err, errlen);
  // no TF32 or reduced-precision paths: plain float64
  RD_CUBLAS_TRY(cublasSetMathMode(blas, CUBLAS_DEFAULT_MATH), err, errlen);
  blas_ready = 1;
  return 0;
}

// Called by the backend's fini: the cuBLAS handle (and its workspace) is released with the backend.
void rd_probe_cuda_release(void) {
  if (blas_ready) cublasDestroy(blas);
  blas_ready = 0;
}

// Rows of d floats to rows of `pitch` doubles (features widened exactly; the padding was zeroed).
__global__ void widen_kernel(const float *x, double *y, long long n, long long d, long long pitch) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[(i / d) * pitch + i % d] = (double)x[i];
}

// One thread per row: logits (+ bias) to scaled residuals, as rd_probe_residuals does on the CPU.
__global__ void residual_kernel(const double *Z, const double *b, const int32_t *y, long long n, int L, int K,
                                double scale, double *R) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int O = L * K;
  const double *z = Z + i * O;
  double *r = R + i * O;
  int32_t yi = y[i];
  for (int l = 0; l < L; l++) {
    if (K == 1) {
      double x = z[l] + (b ? b[l] : 0.0);
      r[l] = (rd_sigmoid_fast(x) - (yi ? 1.0 : 0.0)) * scale;
    } else {
      double m = z[l * K] + (b ? b[l * K] : 0.0);
      for (int k = 1; k < K; k++) {
        double v = z[l * K + k] + (b ? b[l * K + k] : 0.0);
        if (v > m) m = v;
      }
      double s = 0.0;
      for (int k = 0; k < K; k++) {
        double e = rd_exp_nonpos(z[l * K + k] + (b ? b[l * K + k] : 0.0) - m);
        r[l * K + k] = e;
        s += e;
      }
      for (int k = 0; k < K; k++) r[l * K + k] = (r[l * K + k] / s - (k == yi ? 1.0 : 0.0)) * scale;
    }
  }
}

// gb[o] = Σ_i R[i, o] in row order (one thread per output).
__global__ void bias_kernel(const double *R, long long n, int O, double *gb) {
  int o = blockIdx.x * blockDim.x + threadIdx.x;
  if (o >= O) return;
  double s = 0.0;
  for (long long i = 0; i < n; i++) s += R[i * O + o];
  gb[o] = s;
}

static void *cuda_rows_upload(const float *X, int64_t n, int64_t d, char *err, size_t errlen) {
  if (ensure_blas(err, errlen) != 0) return NULL;
  rows_dev *h = (rows_dev *)calloc(1, sizeof *h);
  if (!h) {
    snprintf(err, errlen, "out of host memory");
    return NULL;
  }
  h->n = n;
  h->d = d;
  // Every row starts 256-byte aligned (cudaMalloc's base is), so a block of rows starting at any row
  // is aligned alike and cuBLAS picks the same kernels whatever the rank count that set row0.
  h->pitch = (d + 31) / 32 * 32;
  // The float rows go up in chunks of at most 2^24 floats (64 MB), so the device holds the float64
  // rows and one chunk, not a second full copy.
  const int64_t chunk_rows = d > 0 ? ((int64_t)1 << 24) / d + 1 : 1;
  float *tmp = NULL;
  size_t cnt = (size_t)(n * h->pitch);
  size_t tmp_cnt = (size_t)((n < chunk_rows ? n : chunk_rows) * d);
  if (cudaMalloc(&h->X, sizeof(double) * (cnt ? cnt : 1)) != cudaSuccess ||
      cudaMemset(h->X, 0, sizeof(double) * (cnt ? cnt : 1)) != cudaSuccess ||
      cudaMalloc(&tmp, sizeof(float) * (tmp_cnt ? tmp_cnt : 1)) != cudaSuccess) {
    snprintf(err, errlen, "cannot place %lld x %lld feature rows on the GPU: %s", (long long)n, (long long)d,
             cudaGetErrorString(cudaGetLastError()));
    cudaFree(tmp);
    cudaFree(h->X);
    free(h);
    return NULL;
  }
  int ok = 1;
  for (int64_t r0 = 0; r0 < n && ok; r0 += chunk_rows) {
    int64_t m = n - r0 < chunk_rows ? n - r0 : chunk_rows;
    long long el = (long long)(m * d);
    if (el == 0) continue;
    ok = cudaMemcpy(tmp, X + r0 * d, sizeof(float) * (size_t)el, cudaMemcpyHostToDevice) == cudaSuccess;
    if (ok) {
      widen_kernel<<<(unsigned)((el + 255) / 256), 256>>>(tmp, h->X + r0 * h->pitch, el, (long long)d,
                                                          (long long)h->pitch);
      ok = cudaDeviceSynchronize() == cudaSuccess && cudaGetLastError() == cudaSuccess;
    }
  }
  cudaFree(tmp);
  if (!ok) {
    snprintf(err, errlen, "copying and widening the feature rows on the GPU failed: %s",
             cudaGetErrorString(cudaGetLastError()));
    cudaFree(h->X);
    free(h);
    return NULL;
  }
  return h;
}

static void cuda_rows_free(void *p) {
  rows_dev *h = (rows_dev *)p;
  if (!h) return;
  cudaFree(h->X);
  cudaFree(h->W);
  cudaFree(h->b);
  cudaFree(h->Z);
  cudaFree(h->R);
  cudaFree(h->G);
  cudaFree(h->gb);
  cudaFree(h->y);
  free(h);
}

static int cuda_block_grads(void *p, const rd_probe_heads *hd, int nblk, const int64_t *row0, const int64_t *nrows,
                            const int32_t *y, double scale, double *out, char *err, size_t errlen) {
  rows_dev *h = (rows_dev *)p;
  int O = hd->L * hd->K;
  int64_t d = hd->d, len = rd_probe_grad_len(hd, 0);
  if (d != h->d) {
    snprintf(err, errlen, "feature count %lld differs from the uploaded rows' %lld", (long long)d, (long long)h->d);
    return 1;
  }
  int64_t maxn = 1;
  for (int k = 0; k < nblk; k++)
    if (nrows[k] > maxn) maxn = nrows[k];
  if ((int64_t)O * d > h->cap_w) {
    // freed pointers are cleared and the capacity zeroed first: a failed allocation below leaves
    // nothing that a later call or rows_free would free twice
    cudaFree(h->W);
    cudaFree(h->G);
    cudaFree(h->b);
    cudaFree(h->gb);
    h->W = h->G = h->b = h->gb = NULL;
    h->cap_w = 0;
    RD_CUDA_TRY(cudaMalloc(&h->W, sizeof(double) * (size_t)(O * d)), err, errlen);
    RD_CUDA_TRY(cudaMalloc(&h->G, sizeof(double) * (size_t)(O * d)), err, errlen);
    RD_CUDA_TRY(cudaMalloc(&h->b, sizeof(double) * (size_t)O), err, errlen);
    RD_CUDA_TRY(cudaMalloc(&h->gb, sizeof(double) * (size_t)O), err, errlen);
    h->cap_w = (int64_t)O * d;
  }
  if (maxn * O > h->cap_rows || maxn > h->cap_rows) {
    cudaFree(h->Z);
    cudaFree(h->R);
    cudaFree(h->y);
    h->Z = h->R = NULL;
    h->y = NULL;
    h->cap_rows = 0;
    int64_t cap = maxn * (O > 1 ? O : 1);
    RD_CUDA_TRY(cudaMalloc(&h->Z, sizeof(double) * (size_t)cap), err, errlen);
    RD_CUDA_TRY(cudaMalloc(&h->R, sizeof(double) * (size_t)cap), err, errlen);
    RD_CUDA_TRY(cudaMalloc(&h->y, sizeof(int32_t) * (size_t)cap), err, errlen);
    h->cap_rows = cap;
  }
  RD_CUDA_TRY(cudaMemcpy(h->W, hd->W, sizeof(double) * (size_t)(O * d), cudaMemcpyHostToDevice), err, errlen);
  if (hd->b) RD_CUDA_TRY(cudaMemcpy(h->b, hd->b, sizeof(double) * (size_t)O, cudaMemcpyHostToDevice), err, errlen);
  const double one = 1.0, zero = 0.0;
  for (int k = 0; k < nblk; k++) {
    double *o = out + (int64_t)k * len;
    int64_t n = nrows[k];
    if (n <= 0) {
      memset(o, 0, sizeof(double) * (size_t)len);
      continue;
    }
    if (row0[k] < 0 || row0[k] + n > h->n) {
      snprintf(err, errlen, "block %d (rows %lld..%lld) outside the uploaded rows", k, (long long)row0[k],
               (long long)(row0[k] + n - 1));
      return 1;
    }
    const double *Xk = h->X + row0[k] * h->pitch;
    // Z (row-major n x O) = X W^T: column-major Z^T (O x n) = W^T (O x d) X^T (d x n)
    RD_CUBLAS_TRY(cublasDgemm(blas, CUBLAS_OP_T, CUBLAS_OP_N, O, (int)n, (int)d, &one, h->W, (int)d, Xk, (int)h->pitch,
                            &zero, h->Z, O),
                err, errlen);
    RD_CUDA_TRY(cudaMemcpy(h->y, y + row0[k], sizeof(int32_t) * (size_t)n, cudaMemcpyHostToDevice), err, errlen);
    residual_kernel<<<(unsigned)((n + 127) / 128), 128>>>(h->Z, hd->b ? h->b : NULL, h->y, (long long)n, hd->L,
                                                          hd->K, scale, h->R);
    RD_CUDA_TRY(cudaGetLastError(), err, errlen);
    // G (row-major O x d) = R^T X: column-major G^T (d x O) = X^T (d x n) R (n x O)
    RD_CUBLAS_TRY(cublasDgemm(blas, CUBLAS_OP_N, CUBLAS_OP_T, (int)d, O, (int)n, &one, Xk, (int)h->pitch, h->R, O, &zero,
                            h->G, (int)d),
                err, errlen);
    RD_CUDA_TRY(cudaMemcpy(o, h->G, sizeof(double) * (size_t)(O * d), cudaMemcpyDeviceToHost), err, errlen);
    if (hd->b) {
      bias_kernel<<<(unsigned)((O + 63) / 64), 64>>>(h->R, (long long)n, O, h->gb);
      RD_CUDA_TRY(cudaGetLastError(), err, errlen);
      RD_CUDA_TRY(cudaMemcpy(o + (int64_t)O * d, h->gb, sizeof(double) * (size_t)O, cudaMemcpyDeviceToHost), err, errlen);
    }
  }
  return 0;
}

extern "C" const struct rd_probe_kernels rd_probe_kernels_cuda = {
    .rows_upload = cuda_rows_upload,
    .rows_free = cuda_rows_free,
    .block_grads = cuda_block_grads,
};
