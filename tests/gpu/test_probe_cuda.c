/* The CUDA probe kernel (block gradients with cuBLAS) against the CPU reference on the same blocks:
 * binary and softmax heads, with and without biases, blocks of 1 to 64 rows, a feature count with a
 * tail. Skips (77) when this build has no CUDA module or the machine has no NVIDIA driver. */
#include <math.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cuda_test.h"
#include "rmdiag/kernels/backend.h"
#include "rmdiag/kernels/probe.h"
#include "rmdiag/kernels/rng.h"
#include "rmdiag/common/status.h"

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  char info[512];
  int skip_code = 77;
  const rd_backend *b = t_cuda_backend("probe", info, sizeof info, &skip_code);
  if (!b) {
    MPI_Finalize();
    return skip_code;
  }
  const rd_probe_kernels *k = b->probe;
  CHECK(k && k->rows_upload && k->block_grads && k->rows_free, "the CUDA backend provides the probe kernels");
  if (!k) return t_finish("test_probe_cuda");
  const int64_t n = 300, d = 1031;
  rd_stream s;
  rd_stream_init(&s, 0, "test", "probe.cuda");
  float *X = malloc(sizeof(float) * (size_t)(n * d));
  int32_t *y = malloc(sizeof(int32_t) * (size_t)n);
  for (int64_t i = 0; i < n * d; i++) X[i] = (float)(4.0 * rd_rng_uniform(&s, 0, (uint64_t)i) - 2.0);
  for (int64_t i = 0; i < n; i++) y[i] = (int32_t)rd_rng_below(&s, 1, (uint64_t)i, 3);
  char err[512] = "";
  void *dev = k->rows_upload(X, n, d, err, sizeof err);
  CHECK(dev != NULL, "upload: %s", err);
  const float **rows = malloc(sizeof(float *) * (size_t)n);
  for (int64_t i = 0; i < n; i++) rows[i] = X + i * d;
  for (int L = 1; L <= 3 && dev; L++)
    for (int K = 1; K <= 3; K += 2)
      for (int bias = 0; bias <= 1; bias++) {
        int O = L * K;
        double *W = malloc(sizeof(double) * (size_t)(O * d)), *bb = malloc(sizeof(double) * (size_t)O);
        for (int64_t i = 0; i < O * d; i++) W[i] = 0.05 * (2.0 * rd_rng_uniform(&s, 2, (uint64_t)i) - 1.0);
        for (int o = 0; o < O; o++) bb[o] = 0.3 * o - 0.2;
        int32_t *yy = malloc(sizeof(int32_t) * (size_t)n);
        for (int64_t i = 0; i < n; i++) yy[i] = K == 1 ? (y[i] > 0) : y[i];
        rd_probe_heads h = {.d = d, .L = L, .K = K, .W = W, .b = bias ? bb : NULL};
        int64_t len = rd_probe_grad_len(&h, 0);
        const int nb = 5;
        int64_t r0[5] = {0, 1, 17, 100, 236}, nr[5] = {1, 16, 64, 0, 64};
        double *gpu = malloc(sizeof(double) * (size_t)(nb * len)), *cpu = malloc(sizeof(double) * (size_t)len);
        CHECK(k->block_grads(dev, &h, nb, r0, nr, yy, 1.0 / 128.0, gpu, err, sizeof err) == 0, "block_grads: %s", err);
        for (int q = 0; q < nb; q++) {
          rd_probe_block blk = {.rows = rows + r0[q], .n = nr[q], .y = yy + r0[q], .scale = 1.0 / 128.0};
          rd_probe_block_grad_cpu(&h, &blk, 0, 0, cpu, NULL);
          double num = 0.0, den = 0.0;
          for (int64_t i = 0; i < len; i++) {
            double e = gpu[q * len + i] - cpu[i];
            num += e * e;
            den += cpu[i] * cpu[i];
          }
          CHECK(sqrt(num) <= 1e-10 * sqrt(den) + 1e-300, "L %d K %d bias %d block %d: relative L2 %g", L, K, bias, q,
                den > 0 ? sqrt(num / den) : sqrt(num));
        }
        free(W);
        free(bb);
        free(yy);
        free(gpu);
        free(cpu);
      }
  if (dev) k->rows_free(dev);
  b->fini();
  free(X);
  free(y);
  free(rows);
  int rc = t_finish("test_probe_cuda");
  MPI_Finalize();
  return rc;
}
