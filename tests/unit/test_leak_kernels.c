/* The leakage CPU kernels against plain scalar restatements of their definitions (leak.h): the batch
 * generator against rd_rng_below_u32 draw by draw (CTest runs it once per instruction set through
 * RMDIAG_RNG_ISA), a bootstrap
 * replicate against a scalar loop over rd_leak_below draws (at every vector width this CPU runs), a
 * null draw likewise; and any split of the flat range into calls gives the same bits. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "leak_fixture.h"
#include "rmdiag/kernels/simd.h"

static int same(double a, double b) { return (isnan(a) && isnan(b)) || a == b; }

int main(void) {
  rd_stream s;
  rd_stream_init(&s, 3, "kernels", "fill");
  uint32_t *out = aligned_alloc(64, sizeof(uint32_t) * 4096);
  int64_t bad = 0;
  static const int64_t counts[] = {1, 3, 63, 64, 65, 1201, 4000};
  static const uint32_t ns[] = {1, 2, 5, 1201, 4000000000u};
  for (size_t a = 0; a < sizeof counts / sizeof counts[0]; a++)
    for (size_t b = 0; b < sizeof ns / sizeof ns[0]; b++) {
      uint64_t rep = ((uint64_t)a << 32) | (b * 977u);
      rd_rng_below_u32_fill(&s, rep, ns[b], counts[a], out);
      for (int64_t j = 0; j < counts[a]; j++) bad += out[j] != rd_rng_below_u32(&s, rep, (uint64_t)j, ns[b]);
    }
  CHECK(bad == 0, "%lld batch draws differ from rd_rng_below_u32", (long long)bad);
  /* a counter past 2^32 blocks (draws past 2^34) carries into the second counter word */
  uint32_t far[4];
  for (int q = 0; q < 4; q++) far[q] = rd_rng_below_u32(&s, 5, (1ull << 34) + (uint64_t)q, 1000);
  CHECK(far[0] != rd_rng_below_u32(&s, 5, 0, 1000) || far[1] != rd_rng_below_u32(&s, 5, 1, 1000),
        "draw 2^34 is not draw 0");

  const int64_t B = 97, P = 61;
  leak_fixture f;
  leak_fixture_make(&f, B, P);
  int64_t K = 6 * B;
  double *r = malloc(sizeof(double) * (size_t)K), *m = malloc(sizeof(double) * (size_t)K);
  double *r2 = malloc(sizeof(double) * (size_t)K), *m2 = malloc(sizeof(double) * (size_t)K);
  CHECK(rd_leak_bootstrap_cpu(&f.boot, 0, K, r, m) == 0, "bootstrap kernel");
  int64_t mism = 0;
  for (int64_t k = 0; k < K; k++) {
    int64_t c = k / B, b = k % B, n = f.row_off[c + 1] - f.row_off[c];
    double sums[6] = {0, 0, 0, 0, 0, 0}, rr, mm;
    uint64_t rep = (f.cell_id[c] << 32) | (uint64_t)b;
    for (int64_t j = 0; j < n; j++) {
      const double *row = f.rows + 8 * (f.row_off[c] + rd_rng_below_u32(&f.boot.stream, rep, (uint64_t)j, (uint32_t)n));
      for (int x = 0; x < 6; x++) sums[x] += row[x];
    }
    rd_leak_boot_finish(sums, n, &rr, &mm);
    mism += !same(rr, r[k]) || !same(mm, m[k]);
  }
  CHECK(mism == 0, "%lld replicates differ from the scalar definition", (long long)mism);
  int64_t undefined = 0;
  for (int64_t k = 0; k < K; k++) undefined += isnan(r[k]);
  /* cells 0-3 (0, 1, 2 rows; no spread) are undefined, and cell 4's rare resamples of one row */
  CHECK(undefined >= 4 * B && undefined < 4 * B + 5, "undefined replicates %lld", (long long)undefined);
  CHECK(isnan(m[0]) && !isnan(m[B]) && m[B] == m[B + 1], "mae: NaN without rows; a one-row cell always gives its row");
  /* uneven splits give the same bits */
  for (int64_t k0 = 0; k0 < K;) {
    int64_t k1 = k0 + 1 + (k0 * 37) % 150;
    if (k1 > K) k1 = K;
    rd_leak_bootstrap_cpu(&f.boot, k0, k1, r2 + k0, m2 + k0);
    k0 = k1;
  }
  CHECK(memcmp(r, r2, sizeof(double) * (size_t)K) == 0 && memcmp(m, m2, sizeof(double) * (size_t)K) == 0,
        "split calls give the same replicates");
  /* every vector width this CPU runs gives those replicates (checked above against the definition) */
  static const char *const isas[] = {"base", "avx2", "avx512"};
  int widths = 0;
  for (int q = 0; q < 3; q++) {
    if (rd_simd_set(isas[q]) != 0) continue;
    widths++;
    memset(r2, 0, sizeof(double) * (size_t)K);
    rd_leak_bootstrap_cpu(&f.boot, 0, K, r2, m2);
    CHECK(memcmp(r, r2, sizeof(double) * (size_t)K) == 0 && memcmp(m, m2, sizeof(double) * (size_t)K) == 0,
          "%s: the same replicates", isas[q]);
  }
  printf("bootstrap replicates checked at %d vector widths\n", widths);

  int64_t NK = 5 * P;
  int32_t *u = malloc(sizeof(int32_t) * (size_t)NK), *h = malloc(sizeof(int32_t) * (size_t)NK);
  CHECK(rd_leak_null_cpu(&f.null, 0, NK, u, h) == 0, "null kernel");
  mism = 0;
  for (int64_t k = 0; k < NK; k++) {
    int64_t t = k / P, p = k % P;
    int32_t uu = 0, hh = 0;
    for (int64_t i = f.month_off[t]; i < f.month_off[t + 1]; i++) {
      uint32_t j = rd_rng_below_u32(&f.null.stream, (f.target_id[t] << 32) | (uint64_t)p, (uint64_t)(i - f.month_off[t]), 5);
      uu += (f.avail[i] >> j) & 1;
      hh += (f.hit[i] >> j) & 1;
    }
    mism += uu != u[k] || hh != h[k];
  }
  CHECK(mism == 0, "%lld null draws differ from the scalar definition", (long long)mism);
  CHECK(u[0] == 0 && h[0] == 0, "a target without months uses none");
  free(r), free(m), free(r2), free(m2), free(u), free(h), free(out);
  leak_fixture_free(&f);
  return t_finish("leak kernels");
}
