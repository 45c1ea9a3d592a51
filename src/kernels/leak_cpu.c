/* CPU reference kernels of the leakage report: bootstrap replicates of a cell's scored rows and
 * factor-shuffle null draws (draws from rd_rng_below_u32_fill). Each replicate or draw is
 * computed whole, in draw order, so any split of the flat index range (over ranks, chunks or GPU
 * threads) gives the same bits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmdiag/kernels/leak.h"
#include "rmdiag/kernels/rng.h"
#include "rmdiag/kernels/simd.h"

/* Replicates b0..b1-1 of one cell (n rows of 8 packed doubles), four at a time: each replicate's sums
 * run over its draws in draw order; the four accumulators only interleave independent replicates.
 * Lane-wise vector adds are the same IEEE additions as scalar ones, so every vector width gives the
 * same values. One version per instruction set, with vectors of W doubles (see simd.h). */
#define BOOT_CELL(ISA, TARGET, VT, W)                                                                      \
  TARGET static void boot_cell_##ISA(const double *rows, int64_t n, const rd_stream *s, uint64_t cell_id,    \
                                     int64_t b0, int64_t b1, uint32_t *idx, int64_t stride, double *r,      \
                                     double *mae) {                                                        \
    enum { NV = 8 / W };                                                                                   \
    for (int64_t b = b0; b < b1; b += 4) {                                                                 \
      for (int q = 0; q < 4; q++) {                                                                        \
        int64_t rep = b + q < b1 ? b + q : b1 - 1;                                                         \
        rd_rng_below_u32_fill(s, (cell_id << 32) | (uint64_t)rep, (uint32_t)n, n, idx + q * stride);       \
      }                                                                                                    \
      const uint32_t *i0 = idx, *i1 = idx + stride, *i2 = idx + 2 * stride, *i3 = idx + 3 * stride;        \
      VT a0[NV], a1[NV], a2[NV], a3[NV];                                                                   \
      _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) a0[v] = a1[v] = a2[v] = a3[v] = (VT){0};          \
      for (int64_t j = 0; j < n; j++) {                                                                    \
        const double *x0 = rows + 8 * (size_t)i0[j], *x1 = rows + 8 * (size_t)i1[j];                       \
        const double *x2 = rows + 8 * (size_t)i2[j], *x3 = rows + 8 * (size_t)i3[j];                       \
        _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) {                                              \
          a0[v] += *(const VT *)(x0 + W * v);                                                              \
          a1[v] += *(const VT *)(x1 + W * v);                                                              \
          a2[v] += *(const VT *)(x2 + W * v);                                                              \
          a3[v] += *(const VT *)(x3 + W * v);                                                              \
        }                                                                                                  \
      }                                                                                                    \
      double sums[4][8];                                                                                   \
      _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) {                                                \
        memcpy(sums[0] + W * v, &a0[v], sizeof a0[v]);                                                     \
        memcpy(sums[1] + W * v, &a1[v], sizeof a1[v]);                                                     \
        memcpy(sums[2] + W * v, &a2[v], sizeof a2[v]);                                                     \
        memcpy(sums[3] + W * v, &a3[v], sizeof a3[v]);                                                     \
      }                                                                                                    \
      for (int q = 0; q < 4 && b + q < b1; q++) rd_leak_boot_finish(sums[q], n, &r[b + q - b0], &mae[b + q - b0]); \
    }                                                                                                      \
  }
BOOT_CELL(base, , rd_vd2, 2)
BOOT_CELL(avx2, RD_TARGET_AVX2, rd_vd4, 4)
BOOT_CELL(avx512, RD_TARGET_AVX512, rd_vd8, 8)

typedef void (*boot_cell_fn)(const double *, int64_t, const rd_stream *, uint64_t, int64_t, int64_t, uint32_t *,
                             int64_t, double *, double *);
static const boot_cell_fn boot_cell[3] = {boot_cell_base, boot_cell_avx2, boot_cell_avx512};

int rd_leak_bootstrap_cpu(const rd_leak_boot *in, int64_t k0, int64_t k1, double *r, double *mae) {
  if (k1 <= k0) return 0;
  int64_t max_n = 0;
  for (int64_t c = k0 / in->B; c <= (k1 - 1) / in->B; c++)
    if (in->row_off[c + 1] - in->row_off[c] > max_n) max_n = in->row_off[c + 1] - in->row_off[c];
  int64_t stride = (max_n + 63) & ~(int64_t)63;
  uint32_t *idx = aligned_alloc(64, sizeof(uint32_t) * 4 * (size_t)(stride ? stride : 64));
  if (!idx) return -1;
  for (int64_t k = k0; k < k1;) {
    int64_t c = k / in->B, b = k % in->B;
    int64_t b_end = in->B < b + (k1 - k) ? in->B : b + (k1 - k);
    int64_t n = in->row_off[c + 1] - in->row_off[c];
    if (n == 0) {
      for (int64_t q = b; q < b_end; q++) {
        double sums[6] = {0, 0, 0, 0, 0, 0};
        rd_leak_boot_finish(sums, n, &r[k - k0 + q - b], &mae[k - k0 + q - b]);
      }
    } else {
      boot_cell[rd_simd()](in->rows + 8 * in->row_off[c], n, &in->stream, in->cell_id[c], b, b_end, idx, stride, r + (k - k0),
                mae + (k - k0));
    }
    k += b_end - b;
  }
  free(idx);
  return 0;
}

__attribute__((target_clones("avx512f", "avx2", "default")))
static void null_count(const uint32_t *restrict av, const uint32_t *restrict ht, const uint32_t *restrict idx, int64_t nm,
                       int32_t *used, int32_t *hits) {
  uint32_t u = 0, h = 0;
  for (int64_t i = 0; i < nm; i++) {
    u += (av[i] >> idx[i]) & 1u;
    h += (ht[i] >> idx[i]) & 1u;
  }
  *used = (int32_t)u;
  *hits = (int32_t)h;
}

int rd_leak_null_cpu(const rd_leak_null *in, int64_t k0, int64_t k1, int32_t *used, int32_t *hits) {
  if (k1 <= k0) return 0;
  int64_t max_m = 0;
  for (int64_t t = 0; t < in->n_targets; t++)
    if (in->month_off[t + 1] - in->month_off[t] > max_m) max_m = in->month_off[t + 1] - in->month_off[t];
  uint32_t *idx = aligned_alloc(64, sizeof(uint32_t) * (size_t)(((max_m + 63) & ~(int64_t)63) + 64));
  if (!idx) return -1;
  for (int64_t k = k0; k < k1; k++) {
    int64_t t = k / in->P, p = k % in->P;
    int64_t m0 = in->month_off[t], nm = in->month_off[t + 1] - m0;
    used[k - k0] = hits[k - k0] = 0;
    if (nm == 0) continue;
    rd_rng_below_u32_fill(&in->stream, (in->target_id[t] << 32) | (uint64_t)p, in->n_sib, nm, idx);
    null_count(in->avail + m0, in->hit + m0, idx, nm, &used[k - k0], &hits[k - k0]);
  }
  free(idx);
  return 0;
}

static int cpu_bootstrap(const rd_leak_boot *in, int64_t k0, int64_t k1, double *r, double *mae, char *err,
                         size_t errlen) {
  if (rd_leak_bootstrap_cpu(in, k0, k1, r, mae) == 0) return 0;
  snprintf(err, errlen, "out of memory");
  return -1;
}

static int cpu_null_draws(const rd_leak_null *in, int64_t k0, int64_t k1, int32_t *used, int32_t *hits, char *err,
                          size_t errlen) {
  if (rd_leak_null_cpu(in, k0, k1, used, hits) == 0) return 0;
  snprintf(err, errlen, "out of memory");
  return -1;
}

const struct rd_leak_kernels rd_leak_kernels_cpu = {.bootstrap = cpu_bootstrap, .null_draws = cpu_null_draws};
