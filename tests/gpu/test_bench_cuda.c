/* The CUDA benchmark credit kernel against the CPU reference on the same blocks (both rules, float32
 * and float64, exact ties, a block that starts mid-row): credits, gaps and spreads must agree bit
 * for bit. Skips (77) when this build has no CUDA module or the machine has no NVIDIA driver. */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cuda_test.h"
#include "rmdiag/kernels/bench.h"
#include "rmdiag/kernels/rng.h"
#include "rmdiag/common/status.h"

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  char info[512];
  int skip_code = 77;
  const rd_backend *b = t_cuda_backend("benchmark", info, sizeof info, &skip_code);
  if (!b) {
    MPI_Finalize();
    return skip_code;
  }
  if (!b->bench || !b->bench->credits) {
    printf("FAIL: the CUDA backend has no benchmark credit kernel\n");
    MPI_Finalize();
    return 1;
  }
  /* 37 models x 5003 items of 2..40 completions, 1..n-1 preferred; scores rounded to 0.5 so that
   * ties at the maximum are common */
  const int64_t M = 37, I = 5003;
  int64_t *off = malloc(sizeof(int64_t) * (I + 1));
  int32_t *nc = malloc(sizeof(int32_t) * I);
  rd_stream s;
  rd_stream_init(&s, 0, "test", "bench-cuda");
  off[0] = 0;
  for (int64_t i = 0; i < I; i++) {
    int64_t n = 2 + (int64_t)rd_rng_below(&s, 0, (uint64_t)i, 39);
    off[i + 1] = off[i] + n;
    nc[i] = 1 + (int32_t)rd_rng_below(&s, 1, (uint64_t)i, (uint64_t)(n - 1));
  }
  int64_t C = off[I];
  double *sd = malloc(sizeof(double) * M * C);
  float *sf = malloc(sizeof(float) * M * C);
  for (int64_t k = 0; k < M * C; k++) {
    sd[k] = 0.5 * (double)(int64_t)rd_rng_below(&s, 2, (uint64_t)k, 9) - 2.0;
    if (k % 7 == 0) sd[k] += rd_rng_uniform(&s, 3, (uint64_t)k);
    sf[k] = (float)sd[k];
  }
  size_t n = (size_t)(M * I);
  double *res[2][3];
  for (int q = 0; q < 2; q++)
    for (int k = 0; k < 3; k++) res[q][k] = malloc(sizeof(double) * n);
  for (int pass = 0; pass < 4; pass++) {
    int f32 = pass & 1;
    rd_bench_rule rule = (pass & 2) ? RD_BENCH_TIE_CREDIT : RD_BENCH_STRICT;
    /* the whole matrix, then a block of 5 rows starting at item 1234 */
    for (int part = 0; part < 2; part++) {
      int64_t i0 = part ? 1234 : 0, nI = part ? 2000 : I, r0 = part ? 3 : 0, nR = part ? 5 : M;
      const void *base = f32 ? (const void *)(sf + r0 * C) : (const void *)(sd + r0 * C);
      rd_bench_block blk = {.n_rows = nR, .n_items = nI, .offset = off + i0, .n_correct = nc + i0,
                            .ftype = f32 ? RD_F32 : RD_F64, .scores = base, .row_stride = C, .col0 = 0, .rule = rule};
      rd_bench_out cpu = {res[0][0], res[0][1], res[0][2]}, gpu = {res[1][0], res[1][1], res[1][2]};
      rd_bench_credits_cpu(&blk, &cpu);
      char err[512] = "";
      CHECK(b->bench->credits(&blk, &gpu, err, sizeof err) == 0, "cuda bench kernel: %s", err);
      int64_t bad[3] = {0, 0, 0}, partial = 0;
      for (size_t q = 0; q < (size_t)(nR * nI); q++) {
        for (int k = 0; k < 3; k++) bad[k] += memcmp(&res[0][k][q], &res[1][k][q], sizeof(double)) != 0;
        partial += res[0][0][q] > 0.0 && res[0][0][q] < 1.0;
      }
      CHECK(bad[0] == 0 && bad[1] == 0 && bad[2] == 0,
            "%s %s part %d: %lld credits, %lld gaps, %lld spreads differ from the CPU", f32 ? "float32" : "float64",
            rule == RD_BENCH_STRICT ? "strict" : "tie-credit", part, (long long)bad[0], (long long)bad[1],
            (long long)bad[2]);
      if (rule == RD_BENCH_TIE_CREDIT) CHECK(partial > 100, "the test data has partial credits (%lld)", (long long)partial);
    }
  }
  b->fini();
  int rc = t_finish("test_bench_cuda");
  MPI_Finalize();
  return rc;
}
