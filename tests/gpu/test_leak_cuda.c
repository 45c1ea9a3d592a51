/* The CUDA leakage kernels against the CPU reference on the same inputs: bootstrap replicates (r and mae)
 * and factor-shuffle null draws, whole ranges and ranges that start inside a cell. They make the same
 * draws and additions (built with --fmad=false), so they must agree bit for bit; the documented bound is
 * 1e-12 relative. Skips (77) when this build has no CUDA module or the machine has no NVIDIA driver. */
#include <math.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cuda_test.h"
#include "leak_fixture.h"
#include "rmdiag/kernels/backend.h"
#include "rmdiag/common/status.h"

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  char info[512];
  int skip_code = 77;
  const rd_backend *b = t_cuda_backend("leakage", info, sizeof info, &skip_code);
  if (!b) {
    MPI_Finalize();
    return skip_code;
  }
  CHECK(b->leak && b->leak->bootstrap && b->leak->null_draws, "the CUDA backend provides the leakage kernels");
  if (!b->leak || !b->leak->bootstrap || !b->leak->null_draws) {
    MPI_Finalize();
    return t_finish("test_leak_cuda");
  }
  const int64_t B = 1000, P = 777;
  leak_fixture f;
  leak_fixture_make(&f, B, P);
  int64_t K = 6 * B, NK = 5 * P;
  double *rc = malloc(sizeof(double) * K), *mc = malloc(sizeof(double) * K);
  double *rg = malloc(sizeof(double) * K), *mg = malloc(sizeof(double) * K);
  char err[512] = "";
  CHECK(rd_leak_bootstrap_cpu(&f.boot, 0, K, rc, mc) == 0, "cpu bootstrap");
  CHECK(b->leak->bootstrap(&f.boot, 0, K, rg, mg, err, sizeof err) == 0, "cuda bootstrap: %s", err);
  /* a range starting inside cell 4, written over a poisoned copy so that only what it writes is compared */
  for (int64_t k = 4 * B + 13; k < 5 * B + 29; k++) rg[k] = mg[k] = -12345.0;
  CHECK(b->leak->bootstrap(&f.boot, 4 * B + 13, 5 * B + 29, rg + 4 * B + 13, mg + 4 * B + 13, err, sizeof err) == 0,
        "cuda bootstrap sub-range: %s", err);
  int64_t worse = 0, nanmis = 0, exact = 0;
  for (int64_t k = 0; k < K; k++) {
    for (int q = 0; q < 2; q++) {
      double a = q ? mc[k] : rc[k], g = q ? mg[k] : rg[k];
      if (isnan(a) || isnan(g)) nanmis += isnan(a) != isnan(g);
      else {
        worse += fabs(a - g) > 1e-12 * fabs(a);
        exact += a == g;
      }
    }
  }
  CHECK(nanmis == 0 && worse == 0, "bootstrap: %lld NaN mismatches, %lld beyond 1e-12", (long long)nanmis,
        (long long)worse);
  printf("bootstrap: %lld values bit-identical\n", (long long)exact);
  int32_t *uc = malloc(sizeof(int32_t) * NK), *hc = malloc(sizeof(int32_t) * NK);
  int32_t *ug = malloc(sizeof(int32_t) * NK), *hg = malloc(sizeof(int32_t) * NK);
  CHECK(rd_leak_null_cpu(&f.null, 0, NK, uc, hc) == 0, "cpu null");
  CHECK(b->leak->null_draws(&f.null, 0, NK, ug, hg, err, sizeof err) == 0, "cuda null: %s", err);
  CHECK(memcmp(uc, ug, sizeof(int32_t) * NK) == 0 && memcmp(hc, hg, sizeof(int32_t) * NK) == 0,
        "null draws identical");
  for (int64_t k = 0; k < NK; k++) ug[k] = hg[k] = -1;  /* poisoned: only what the sub-range writes is compared */
  CHECK(b->leak->null_draws(&f.null, 2 * P + 5, 4 * P, ug, hg, err, sizeof err) == 0, "cuda null sub-range: %s", err);
  CHECK(memcmp(uc + 2 * P + 5, ug, sizeof(int32_t) * (2 * P - 5)) == 0 &&
            memcmp(hc + 2 * P + 5, hg, sizeof(int32_t) * (2 * P - 5)) == 0,
        "null sub-range identical (used and hits)");
  leak_fixture_free(&f);
  free(rc), free(mc), free(rg), free(mg), free(uc), free(hc), free(ug), free(hg);
  b->fini();
  MPI_Finalize();
  return t_finish("leak cuda");
}
