/* The CUDA backend against the CPU reference on the same blocks: 20,011 pairs x 25 runs, and
 * 2^20 + 4,099 pairs x 2 runs, more than the kernel's slice of 2^20 pairs (so a slice starting past
 * pair 0 is checked). Skips (77) when this build has no CUDA module or the machine has no NVIDIA
 * driver. */
#include <math.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cuda_test.h"
#include "rmdiag/kernels/backend.h"
#include "rmdiag/kernels/rng.h"
#include "rmdiag/common/status.h"

static void compare(const rd_backend *b, int64_t P, int64_t R) {
  double *rc = malloc(sizeof(double) * P * R), *rr = malloc(sizeof(double) * P * R);
  float *rcf = malloc(sizeof(float) * P * R), *rrf = malloc(sizeof(float) * P * R);
  uint8_t *m = malloc(P * R);
  double *tm[2], *tg[2];
  int32_t *nt[2];
  for (int k = 0; k < 2; k++) {
    tm[k] = malloc(sizeof(double) * P);
    tg[k] = malloc(sizeof(double) * P);
    nt[k] = malloc(sizeof(int32_t) * P);
  }
  rd_stream s;
  rd_stream_init(&s, 0, "test", "cuda");
  for (int64_t i = 0; i < P * R; i++) {
    rc[i] = 30.0 * rd_rng_uniform(&s, 0, (uint64_t)i) - 15.0;
    rr[i] = 30.0 * rd_rng_uniform(&s, 1, (uint64_t)i) - 15.0;
    if (i % 1001 == 0) rc[i] += (i % 2 ? 760.0 : -760.0);
    m[i] = (uint8_t)(rd_rng_uniform(&s, 2, (uint64_t)i) < 0.8);
    if ((i / R) % 97 == 0) m[i] = 1;
    if ((i / R) % 89 == 0) m[i] = 0;
    rcf[i] = (float)rc[i];
    rrf[i] = (float)rr[i];
  }
  for (int pass = 0; pass < 2; pass++) {
    rd_cm_block blk = {.n_pairs = P, .n_runs = R, .ftype = pass ? RD_F32 : RD_F64,
                       .reward_chosen = pass ? (void *)rcf : (void *)rc,
                       .reward_rejected = pass ? (void *)rrf : (void *)rr, .in_train = m};
    rd_cm_pairs cpu = {tm[0], tg[0], nt[0]}, gpu = {tm[1], tg[1], nt[1]};
    rd_cm_pairs_cpu(&blk, &cpu);
    char err[512] = "";
    CHECK(b->cm->pairs(&blk, &gpu, err, sizeof err) == 0, "cuda cm kernel: %s", err);
    int64_t worse = 0, nan_mismatch = 0, count_mismatch = 0;
    for (int64_t p = 0; p < P; p++) {
      for (int q = 0; q < 2; q++) {
        double a = q ? tg[0][p] : tm[0][p], g = q ? tg[1][p] : tm[1][p];
        if (isnan(a) || isnan(g)) nan_mismatch += isnan(a) != isnan(g);
        else if (fabs(a - g) > 1e-12 * fabs(a)) worse++;
      }
      count_mismatch += nt[0][p] != nt[1][p];
    }
    CHECK(worse == 0 && nan_mismatch == 0 && count_mismatch == 0,
          "%lld x %lld, %s: %lld values beyond 1e-12, %lld NaN mismatches, %lld count mismatches", (long long)P,
          (long long)R, pass ? "float32" : "float64", (long long)worse, (long long)nan_mismatch, (long long)count_mismatch);
  }
  free(rc), free(rr), free(rcf), free(rrf), free(m);
  for (int k = 0; k < 2; k++) free(tm[k]), free(tg[k]), free(nt[k]);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  char info[512];
  int skip_code = 77;
  const rd_backend *b = t_cuda_backend("cm", info, sizeof info, &skip_code);
  if (!b) {
    MPI_Finalize();
    return skip_code;
  }
  compare(b, 20011, 25);
  compare(b, ((int64_t)1 << 20) + 4099, 2);
  b->fini();
  int rc_ = t_finish("test_cuda");
  MPI_Finalize();
  return rc_;
}
