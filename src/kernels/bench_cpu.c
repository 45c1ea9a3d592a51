/* CPU reference for the benchmark report's per-item credits (see bench.h). Per item: the maximum
 * and minimum of the preferred scores and the maximum of the rejected ones, in float64; exact
 * comparisons on the stored values (ties are real in bf16/fp16 model outputs). */
#include <stdio.h>
#include <string.h>

#include "rmdiag/kernels/bench.h"
#include "rmdiag/kernels/simd.h"

#define BENCH_ITEMS(T, NAME)                                                                         \
  static void NAME(const rd_bench_block *in, rd_bench_out *out) {                                    \
    const T *base = (const T *)in->scores;                                                           \
    for (int64_t r = 0; r < in->n_rows; r++) {                                                       \
      const T *row = base + r * in->row_stride - in->col0;                                           \
      double *cr = out->credit + r * in->n_items;                                                    \
      for (int64_t j = 0; j < in->n_items; j++) {                                                    \
        int64_t lo = in->offset[j], hi = in->offset[j + 1], mid = lo + in->n_correct[j];             \
        double pmax = (double)row[lo], pmin = pmax, rmax = (double)row[mid];                         \
        for (int64_t c = lo + 1; c < mid; c++) {                                                     \
          double v = (double)row[c];                                                                 \
          pmax = v > pmax ? v : pmax;                                                                \
          pmin = v < pmin ? v : pmin;                                                                \
        }                                                                                            \
        for (int64_t c = mid + 1; c < hi; c++) {                                                     \
          double v = (double)row[c];                                                                 \
          rmax = v > rmax ? v : rmax;                                                                \
        }                                                                                            \
        double credit;                                                                               \
        if (in->rule == RD_BENCH_STRICT) {                                                           \
          credit = pmin > rmax ? 1.0 : 0.0;                                                          \
        } else {                                                                                     \
          double top = pmax > rmax ? pmax : rmax;                                                    \
          int64_t np = 0, nr = 0;                                                                    \
          for (int64_t c = lo; c < mid; c++) np += (double)row[c] == top;                            \
          for (int64_t c = mid; c < hi; c++) nr += (double)row[c] == top;                            \
          credit = (double)np / (double)(np + nr);                                                   \
        }                                                                                            \
        cr[j] = credit;                                                                              \
        if (out->gap) out->gap[r * in->n_items + j] = pmin - rmax;                                   \
        if (out->spread) out->spread[r * in->n_items + j] = pmax - pmin;                             \
      }                                                                                              \
    }                                                                                                \
  }

BENCH_ITEMS(float, credits_f32)
BENCH_ITEMS(double, credits_f64)

void rd_bench_credits_cpu(const rd_bench_block *in, rd_bench_out *out) {
  if (in->ftype == RD_F32) credits_f32(in, out);
  else credits_f64(in, out);
}

static int cpu_credits(const rd_bench_block *in, rd_bench_out *out, char *err, size_t errlen) {
  (void)err;
  (void)errlen;
  rd_bench_credits_cpu(in, out);
  return 0;
}

const struct rd_bench_kernels rd_bench_kernels_cpu = {.credits = cpu_credits};

/* Sums of drawn rows, vectorized over the lanes: out[l] = Σ_j X[idx[j] * ld + l] for j = 0..n-1
 * in draw order (idx NULL: rows 0..n-1). Every lane is its own sequential sum, so any vector width
 * gives the same bits. Lanes come in chunks of 8 (ld a multiple of 8, pad lanes ignored). Each
 * instruction set has its own version, with vectors of W lanes in its registers (see simd.h);
 * K chunks of 8 lanes at a time. */
#define GATHER_SUM(ISA, TARGET, VT, W, K)                                                                  \
  TARGET static void gather_sum_##ISA##_##K(const uint32_t *idx, int64_t n, const double *X, int64_t ld,   \
                                            double *out) {                                                 \
    enum { NV = 8 * K / W };                                                                               \
    VT a[NV];                                                                                              \
    _Pragma("GCC unroll 32") for (int k = 0; k < NV; k++) a[k] = (VT){0};                                   \
    for (int64_t j = 0; j < n; j++) {                                                                      \
      const double *x = X + (idx ? (int64_t)idx[j] : j) * ld;                                              \
      _Pragma("GCC unroll 32") for (int k = 0; k < NV; k++) a[k] += *(const VT *)(x + W * k);               \
    }                                                                                                      \
    _Pragma("GCC unroll 32") for (int k = 0; k < NV; k++) memcpy(out + W * k, &a[k], sizeof a[k]);         \
  }
#define GATHER_SUMS(ISA, TARGET, VT, W)                                                                    \
  GATHER_SUM(ISA, TARGET, VT, W, 1) GATHER_SUM(ISA, TARGET, VT, W, 2) GATHER_SUM(ISA, TARGET, VT, W, 3)       \
  GATHER_SUM(ISA, TARGET, VT, W, 4) GATHER_SUM(ISA, TARGET, VT, W, 5) GATHER_SUM(ISA, TARGET, VT, W, 6)       \
  GATHER_SUM(ISA, TARGET, VT, W, 7) GATHER_SUM(ISA, TARGET, VT, W, 8)
GATHER_SUMS(base, , rd_vd2, 2)
GATHER_SUMS(avx2, RD_TARGET_AVX2, rd_vd4, 4)
GATHER_SUMS(avx512, RD_TARGET_AVX512, rd_vd8, 8)

typedef void (*gather_fn)(const uint32_t *, int64_t, const double *, int64_t, double *);
#define GATHER_ROW(ISA)                                                                                    \
  { gather_sum_##ISA##_1, gather_sum_##ISA##_2, gather_sum_##ISA##_3, gather_sum_##ISA##_4,                \
    gather_sum_##ISA##_5, gather_sum_##ISA##_6, gather_sum_##ISA##_7, gather_sum_##ISA##_8 }
static const gather_fn gather_sum[3][8] = {GATHER_ROW(base), GATHER_ROW(avx2), GATHER_ROW(avx512)};

void rd_bench_gather_sum(const uint32_t *idx, int64_t n, const double *X, int64_t ld, int64_t L, double *out) {
  const gather_fn *f = gather_sum[rd_simd()];
  for (int64_t l0 = 0; l0 < L; l0 += 64) {
    int64_t k = (L - l0 + 7) / 8;
    k = k > 8 ? 8 : k;
    double tmp[64];
    f[k - 1](idx, n, X + l0, ld, tmp);
    int64_t m = L - l0 < 64 ? L - l0 : 64;
    memcpy(out + l0, tmp, sizeof(double) * (size_t)m);
  }
}

/* The same for int16 lanes (credits scaled to integers): exact, so the order does not matter;
 * the caller guarantees no sum exceeds INT16_MAX. Lanes come in chunks of 32 (ld a multiple of 32). */
#define GATHER_SUM16(ISA, TARGET, VT, W, K)                                                                \
  TARGET static void gather_sum16_##ISA##_##K(const uint32_t *idx, int64_t n, const int16_t *X, int64_t ld, \
                                              int16_t *out) {                                              \
    enum { NV = 32 * K / W };                                                                              \
    VT a[NV];                                                                                              \
    _Pragma("GCC unroll 16") for (int k = 0; k < NV; k++) a[k] = (VT){0};                                   \
    for (int64_t j = 0; j < n; j++) {                                                                      \
      const int16_t *x = X + (idx ? (int64_t)idx[j] : j) * ld;                                             \
      _Pragma("GCC unroll 16") for (int k = 0; k < NV; k++) a[k] += *(const VT *)(x + W * k);               \
    }                                                                                                      \
    _Pragma("GCC unroll 16") for (int k = 0; k < NV; k++) memcpy(out + W * k, &a[k], sizeof a[k]);         \
  }
#define GATHER_SUMS16(ISA, TARGET, VT, W)                                                                  \
  GATHER_SUM16(ISA, TARGET, VT, W, 1) GATHER_SUM16(ISA, TARGET, VT, W, 2) GATHER_SUM16(ISA, TARGET, VT, W, 3) \
  GATHER_SUM16(ISA, TARGET, VT, W, 4)
GATHER_SUMS16(base, , rd_vh8, 8)
GATHER_SUMS16(avx2, RD_TARGET_AVX2, rd_vh16, 16)
GATHER_SUMS16(avx512, RD_TARGET_AVX512, rd_vh32, 32)

typedef void (*gather16_fn)(const uint32_t *, int64_t, const int16_t *, int64_t, int16_t *);
#define GATHER16_ROW(ISA) {gather_sum16_##ISA##_1, gather_sum16_##ISA##_2, gather_sum16_##ISA##_3, gather_sum16_##ISA##_4}
static const gather16_fn gather_sum16[3][4] = {GATHER16_ROW(base), GATHER16_ROW(avx2), GATHER16_ROW(avx512)};

__attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
static void widen_div(const int16_t *sum, int64_t L, double den, double *out) {
  for (int64_t l = 0; l < L; l++) out[l] = (double)sum[l] / den;
}

void rd_bench_gather_mean16(const uint32_t *idx, int64_t n, const int16_t *X, int64_t ld, int64_t L, double den,
                            double *out) {
  int16_t sum[128];
  for (int64_t l0 = 0; l0 < L; l0 += 128) {
    int64_t m = L - l0 < 128 ? L - l0 : 128;
    rd_bench_gather_sum16(idx, n, X + l0, ld, m, sum);
    widen_div(sum, m, den, out + l0);
  }
}

void rd_bench_gather_sum16(const uint32_t *idx, int64_t n, const int16_t *X, int64_t ld, int64_t L, int16_t *out) {
  const gather16_fn *f = gather_sum16[rd_simd()];
  for (int64_t l0 = 0; l0 < L; l0 += 128) {
    int64_t k = (L - l0 + 31) / 32;
    k = k > 4 ? 4 : k;
    int16_t tmp[128];
    f[k - 1](idx, n, X + l0, ld, tmp);
    int64_t m = L - l0 < 128 ? L - l0 : 128;
    memcpy(out + l0, tmp, sizeof(int16_t) * (size_t)m);
  }
}

/* Index of the first value other than 0 and 1, or -1: whole blocks are tested branch-free. Clones
 * on a static function, the public name a wrapper: clang 14 leaves an external clone set's own
 * name undefined (it emits only "name.ifunc"). */
__attribute__((target_clones("avx512f", "avx2", "default")))
static int64_t first_nonbinary_clones(const double *x, int64_t n) {
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    int any = 0;
    for (int k = 0; k < 64; k++) any |= (x[i + k] != 0.0) & (x[i + k] != 1.0);
    if (any) break;
  }
  for (; i < n; i++)
    if (x[i] != 0.0 && x[i] != 1.0) return i;
  return -1;
}
int64_t rd_bench_first_nonbinary(const double *x, int64_t n) { return first_nonbinary_clones(x, n); }

/* The same for 0/1 credits in uint8 lanes (64 per chunk, ld a multiple of 64): sums run in bytes
 * for up to 255 draws at a time and are then widened into int16 totals; exact, like the int16 sums.
 * The caller guarantees n <= INT16_MAX. Per instruction set: byte vectors of WB lanes, whose halves
 * (HT, WB / 2 bytes) widen into int16 vectors (TT). */
#define GATHER_SUM8(ISA, TARGET, VT, HT, TT, WB, K)                                                        \
  TARGET static void gather_sum8_##ISA##_##K(const uint32_t *idx, int64_t n, const uint8_t *X, int64_t ld,  \
                                             int16_t *out) {                                               \
    enum { NV = 64 * K / WB };                                                                             \
    TT tot[2 * NV];                                                                                        \
    _Pragma("GCC unroll 16") for (int k = 0; k < 2 * NV; k++) tot[k] = (TT){0};                             \
    for (int64_t j0 = 0; j0 < n; j0 += 255) {                                                              \
      int64_t j1 = n - j0 < 255 ? n : j0 + 255;                                                            \
      VT a[NV];                                                                                            \
      _Pragma("GCC unroll 16") for (int k = 0; k < NV; k++) a[k] = (VT){0};                                 \
      for (int64_t j = j0; j < j1; j++) {                                                                  \
        const uint8_t *x = X + (idx ? (int64_t)idx[j] : j) * ld;                                           \
        _Pragma("GCC unroll 16") for (int k = 0; k < NV; k++) a[k] += *(const VT *)(x + WB * k);            \
      }                                                                                                    \
      _Pragma("GCC unroll 16") for (int k = 0; k < NV; k++) {                                               \
        HT lo, hi;                                                                                         \
        memcpy(&lo, (const char *)&a[k], sizeof lo);                                                       \
        memcpy(&hi, (const char *)&a[k] + WB / 2, sizeof hi);                                              \
        tot[2 * k] += __builtin_convertvector(lo, TT);                                                     \
        tot[2 * k + 1] += __builtin_convertvector(hi, TT);                                                 \
      }                                                                                                    \
    }                                                                                                      \
    _Pragma("GCC unroll 16") for (int k = 0; k < 2 * NV; k++) memcpy(out + WB / 2 * k, &tot[k], sizeof tot[k]); \
  }
#define GATHER_SUMS8(ISA, TARGET, VT, HT, TT, WB)                                                          \
  GATHER_SUM8(ISA, TARGET, VT, HT, TT, WB, 1) GATHER_SUM8(ISA, TARGET, VT, HT, TT, WB, 2)
GATHER_SUMS8(base, , rd_vb16, rd_vb8, rd_vh8, 16)
GATHER_SUMS8(avx2, RD_TARGET_AVX2, rd_vb32, rd_vb16, rd_vh16, 32)
GATHER_SUMS8(avx512, RD_TARGET_AVX512, rd_vb64, rd_vb32, rd_vh32, 64)

typedef void (*gather8_fn)(const uint32_t *, int64_t, const uint8_t *, int64_t, int16_t *);
static const gather8_fn gather_sum8[3][2] = {{gather_sum8_base_1, gather_sum8_base_2},
                                             {gather_sum8_avx2_1, gather_sum8_avx2_2},
                                             {gather_sum8_avx512_1, gather_sum8_avx512_2}};

void rd_bench_gather_mean8(const uint32_t *idx, int64_t n, const uint8_t *X, int64_t ld, int64_t L, double den,
                           double *out) {
  int16_t sum[128];
  for (int64_t l0 = 0; l0 < L; l0 += 128) {
    int64_t m = L - l0 < 128 ? L - l0 : 128;
    gather_sum8[rd_simd()][m > 64](idx, n, X + l0, ld, sum);
    widen_div(sum, m, den, out + l0);
  }
}
