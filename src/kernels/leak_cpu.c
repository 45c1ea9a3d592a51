/* CPU reference kernels of the leakage report: bootstrap replicates of a cell's scored rows and
 * factor-shuffle null draws, and the batch generator of their draws. Each replicate or draw is
 * computed whole, in draw order, so any split of the flat index range (over ranks, chunks or GPU
 * threads) gives the same bits. */
#include <immintrin.h>
#include <stdlib.h>
#include <string.h>

#include "rmdiag/leak.h"
#include "rmdiag/rng.h"

/* Eight doubles of one packed row (loads need only 8-byte alignment). */
typedef double v8d __attribute__((vector_size(64), aligned(8)));

/* ---- the draws: Philox4x32-10 blocks, 16 (AVX-512) or 8 (AVX2) at a time ----------------------------
 * Products 32 x 32 -> 64 bits go through vpmuludq on the even lanes and on the odd lanes shifted down;
 * the high and low words are blended back into 32-bit lanes. Block i's four words are draws 4i..4i+3,
 * so the lanes are interleaved back into draw order before the words become integers below n. */

__attribute__((target("avx512f"))) static void fill_avx512(uint32_t k0, uint32_t k1, uint64_t rep, uint32_t n,
                                                            int64_t groups, uint32_t *restrict out) {
  const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i m0 = _mm512_set1_epi64(0xD2511F53), m1 = _mm512_set1_epi64(0xCD9E8D57), nn = _mm512_set1_epi64(n);
  const __m512i il_lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i il_hi = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
  const __m512i q_lo = _mm512_setr_epi32(0, 1, 16, 17, 2, 3, 18, 19, 4, 5, 20, 21, 6, 7, 22, 23);
  const __m512i q_hi = _mm512_setr_epi32(8, 9, 24, 25, 10, 11, 26, 27, 12, 13, 28, 29, 14, 15, 30, 31);
  const __mmask16 odd = 0xAAAA;
  for (int64_t g = 0; g < groups; g++) {
    uint64_t blk = 16 * (uint64_t)g;
    __m512i base = _mm512_set1_epi32((int)(uint32_t)blk);
    __m512i c0 = _mm512_add_epi32(lane, base);
    __mmask16 carry = _mm512_cmplt_epu32_mask(c0, base);
    __m512i hi_blk = _mm512_set1_epi32((int)(uint32_t)(blk >> 32));
    __m512i c1 = _mm512_mask_add_epi32(hi_blk, carry, hi_blk, _mm512_set1_epi32(1));
    __m512i c2 = _mm512_set1_epi32((int)(uint32_t)rep), c3 = _mm512_set1_epi32((int)(uint32_t)(rep >> 32));
    uint32_t key0 = k0, key1 = k1;
    for (int r = 0; r < 10; r++) {
      if (r > 0) {
        key0 += 0x9E3779B9u;
        key1 += 0xBB67AE85u;
      }
      __m512i pe0 = _mm512_mul_epu32(c0, m0), po0 = _mm512_mul_epu32(_mm512_srli_epi64(c0, 32), m0);
      __m512i pe1 = _mm512_mul_epu32(c2, m1), po1 = _mm512_mul_epu32(_mm512_srli_epi64(c2, 32), m1);
      __m512i lo0 = _mm512_mask_blend_epi32(odd, pe0, _mm512_slli_epi64(po0, 32));
      __m512i hi0 = _mm512_mask_blend_epi32(odd, _mm512_srli_epi64(pe0, 32), po0);
      __m512i lo1 = _mm512_mask_blend_epi32(odd, pe1, _mm512_slli_epi64(po1, 32));
      __m512i hi1 = _mm512_mask_blend_epi32(odd, _mm512_srli_epi64(pe1, 32), po1);
      c0 = _mm512_ternarylogic_epi32(hi1, c1, _mm512_set1_epi32((int)key0), 0x96);
      c2 = _mm512_ternarylogic_epi32(hi0, c3, _mm512_set1_epi32((int)key1), 0x96);
      c1 = lo1;
      c3 = lo0;
    }
    __m512i a_lo = _mm512_permutex2var_epi32(c0, il_lo, c1), a_hi = _mm512_permutex2var_epi32(c0, il_hi, c1);
    __m512i b_lo = _mm512_permutex2var_epi32(c2, il_lo, c3), b_hi = _mm512_permutex2var_epi32(c2, il_hi, c3);
    __m512i w[4] = {_mm512_permutex2var_epi32(a_lo, q_lo, b_lo), _mm512_permutex2var_epi32(a_lo, q_hi, b_lo),
                    _mm512_permutex2var_epi32(a_hi, q_lo, b_hi), _mm512_permutex2var_epi32(a_hi, q_hi, b_hi)};
    for (int q = 0; q < 4; q++) {
      __m512i pe = _mm512_mul_epu32(w[q], nn), po = _mm512_mul_epu32(_mm512_srli_epi64(w[q], 32), nn);
      _mm512_storeu_si512((void *)(out + 64 * g + 16 * q), _mm512_mask_blend_epi32(odd, _mm512_srli_epi64(pe, 32), po));
    }
  }
}

__attribute__((target("avx2"))) static void fill_avx2(uint32_t k0, uint32_t k1, uint64_t rep, uint32_t n,
                                                      int64_t groups, uint32_t *restrict out) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i m0 = _mm256_set1_epi64x(0xD2511F53), m1 = _mm256_set1_epi64x(0xCD9E8D57), nn = _mm256_set1_epi64x(n);
  const __m256i sign = _mm256_set1_epi32((int)0x80000000u);
  for (int64_t g = 0; g < 2 * groups; g++) {
    uint64_t blk = 8 * (uint64_t)g;
    __m256i base = _mm256_set1_epi32((int)(uint32_t)blk);
    __m256i c0 = _mm256_add_epi32(lane, base);
    /* unsigned c0 < base: compare with the sign bits flipped */
    __m256i carry = _mm256_cmpgt_epi32(_mm256_xor_si256(base, sign), _mm256_xor_si256(c0, sign));
    __m256i c1 = _mm256_sub_epi32(_mm256_set1_epi32((int)(uint32_t)(blk >> 32)), carry);
    __m256i c2 = _mm256_set1_epi32((int)(uint32_t)rep), c3 = _mm256_set1_epi32((int)(uint32_t)(rep >> 32));
    uint32_t key0 = k0, key1 = k1;
    for (int r = 0; r < 10; r++) {
      if (r > 0) {
        key0 += 0x9E3779B9u;
        key1 += 0xBB67AE85u;
      }
      __m256i pe0 = _mm256_mul_epu32(c0, m0), po0 = _mm256_mul_epu32(_mm256_srli_epi64(c0, 32), m0);
      __m256i pe1 = _mm256_mul_epu32(c2, m1), po1 = _mm256_mul_epu32(_mm256_srli_epi64(c2, 32), m1);
      __m256i lo0 = _mm256_blend_epi32(pe0, _mm256_slli_epi64(po0, 32), 0xAA);
      __m256i hi0 = _mm256_blend_epi32(_mm256_srli_epi64(pe0, 32), po0, 0xAA);
      __m256i lo1 = _mm256_blend_epi32(pe1, _mm256_slli_epi64(po1, 32), 0xAA);
      __m256i hi1 = _mm256_blend_epi32(_mm256_srli_epi64(pe1, 32), po1, 0xAA);
      c0 = _mm256_xor_si256(_mm256_xor_si256(hi1, c1), _mm256_set1_epi32((int)key0));
      c2 = _mm256_xor_si256(_mm256_xor_si256(hi0, c3), _mm256_set1_epi32((int)key1));
      c1 = lo1;
      c3 = lo0;
    }
    /* 4x4 transposes of 32-bit words within each 128-bit half, then the halves in block order */
    __m256i t0 = _mm256_unpacklo_epi32(c0, c1), t1 = _mm256_unpackhi_epi32(c0, c1);
    __m256i t2 = _mm256_unpacklo_epi32(c2, c3), t3 = _mm256_unpackhi_epi32(c2, c3);
    __m256i u0 = _mm256_unpacklo_epi64(t0, t2), u1 = _mm256_unpackhi_epi64(t0, t2);
    __m256i u2 = _mm256_unpacklo_epi64(t1, t3), u3 = _mm256_unpackhi_epi64(t1, t3);
    /* u0 = blocks 0,4; u1 = 1,5; u2 = 2,6; u3 = 3,7 (low half, high half) */
    __m256i w[4] = {_mm256_permute2x128_si256(u0, u1, 0x20), _mm256_permute2x128_si256(u2, u3, 0x20),
                    _mm256_permute2x128_si256(u0, u1, 0x31), _mm256_permute2x128_si256(u2, u3, 0x31)};
    for (int q = 0; q < 4; q++) {
      __m256i pe = _mm256_mul_epu32(w[q], nn), po = _mm256_mul_epu32(_mm256_srli_epi64(w[q], 32), nn);
      _mm256_storeu_si256((__m256i *)(out + 32 * g + 8 * q), _mm256_blend_epi32(_mm256_srli_epi64(pe, 32), po, 0xAA));
    }
  }
}

static void fill_scalar(const uint32_t key[2], uint64_t rep, uint32_t n, int64_t groups, uint32_t *out) {
  for (int64_t blk = 0; blk < 16 * groups; blk++) {
    uint32_t ctr[4] = {(uint32_t)blk, (uint32_t)((uint64_t)blk >> 32), (uint32_t)rep, (uint32_t)(rep >> 32)}, w[4];
    rd_philox4x32_10(ctr, key, w);
    for (int q = 0; q < 4; q++) out[4 * blk + q] = (uint32_t)(((uint64_t)w[q] * n) >> 32);
  }
}

static int fill_isa(void) {
  static int isa = -1;
  if (isa < 0) {
    const char *force = getenv("RMDIAG_LEAK_ISA");  /* tests: "scalar", "avx2" */
    __builtin_cpu_init();
    isa = __builtin_cpu_supports("avx512f") ? 2 : __builtin_cpu_supports("avx2") ? 1 : 0;
    if (force && strcmp(force, "scalar") == 0) isa = 0;
    else if (force && strcmp(force, "avx2") == 0 && isa > 1) isa = 1;
  }
  return isa;
}

void rd_leak_below_fill(const uint32_t key[2], uint64_t rep, uint32_t n, int64_t count, uint32_t *out) {
  if (count <= 0) return;
  int64_t groups = (count + 63) / 64;
  switch (fill_isa()) {
    case 2: fill_avx512(key[0], key[1], rep, n, groups, out); break;
    case 1: fill_avx2(key[0], key[1], rep, n, groups, out); break;
    default: fill_scalar(key, rep, n, groups, out); break;
  }
}

/* Replicates b0..b1-1 of one cell (n rows), four at a time: each replicate's sums run over its draws in
 * draw order; the four accumulators only interleave independent replicates. Lane-wise vector adds are
 * the same IEEE additions as scalar ones, so every vector width gives the same values. */
__attribute__((target_clones("avx512f", "avx2", "default")))
static void boot_cell(const double *rows, int64_t n, const uint32_t key[2], uint64_t cell_id, int64_t b0, int64_t b1,
                      uint32_t *idx, int64_t stride, double *r, double *mae) {
  for (int64_t b = b0; b < b1; b += 4) {
    for (int q = 0; q < 4; q++) {
      int64_t rep = b + q < b1 ? b + q : b1 - 1;
      rd_leak_below_fill(key, (cell_id << 32) | (uint64_t)rep, (uint32_t)n, n, idx + q * stride);
    }
    const uint32_t *i0 = idx, *i1 = idx + stride, *i2 = idx + 2 * stride, *i3 = idx + 3 * stride;
    v8d a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0};
    for (int64_t j = 0; j < n; j++) {
      a0 += *(const v8d *)(rows + 8 * (size_t)i0[j]);
      a1 += *(const v8d *)(rows + 8 * (size_t)i1[j]);
      a2 += *(const v8d *)(rows + 8 * (size_t)i2[j]);
      a3 += *(const v8d *)(rows + 8 * (size_t)i3[j]);
    }
    const v8d acc[4] = {a0, a1, a2, a3};
    for (int q = 0; q < 4 && b + q < b1; q++) {
      double sums[6];
      for (int k = 0; k < 6; k++) sums[k] = acc[q][k];
      rd_leak_boot_finish(sums, n, &r[b + q - b0], &mae[b + q - b0]);
    }
  }
}

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
      boot_cell(in->rows + 8 * in->row_off[c], n, in->key, in->cell_id[c], b, b_end, idx, stride, r + (k - k0),
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
    rd_leak_below_fill(in->key, (in->target_id[t] << 32) | (uint64_t)p, in->n_sib, nm, idx);
    null_count(in->avail + m0, in->hit + m0, idx, nm, &used[k - k0], &hits[k - k0]);
  }
  free(idx);
  return 0;
}
