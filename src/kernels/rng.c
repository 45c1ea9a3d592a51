/* Keys for the counter-based streams: a pure function of (seed, job name, purpose). */
#include "rmdiag/kernels/rng.h"

#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmdiag/kernels/sha256.h"

void rd_stream_init(rd_stream *s, int64_t seed, const char *job, const char *purpose) {
  rd_sha256 c;
  uint8_t d[32];
  char num[32];
  static const char tag[] = "rmdiag-rng-v1";
  rd_sha256_init(&c);
  rd_sha256_update(&c, tag, sizeof tag);  /* includes the NUL separator */
  int len = snprintf(num, sizeof num, "%lld", (long long)seed);
  rd_sha256_update(&c, num, (size_t)len + 1);
  rd_sha256_update(&c, job, strlen(job) + 1);
  rd_sha256_update(&c, purpose, strlen(purpose) + 1);
  rd_sha256_final(&c, d);
  s->key[0] = (uint32_t)d[0] | (uint32_t)d[1] << 8 | (uint32_t)d[2] << 16 | (uint32_t)d[3] << 24;
  s->key[1] = (uint32_t)d[4] | (uint32_t)d[5] << 8 | (uint32_t)d[6] << 16 | (uint32_t)d[7] << 24;
}

/* Philox rounds written out for a batch of consecutive blocks, so the compiler vectorizes across
 * blocks; the values are those of rd_philox4x32_10. */
__attribute__((target_clones("avx512f", "avx2", "default")))
static void below_fill_blocks(uint32_t k0, uint32_t k1, uint32_t rep_lo, uint32_t rep_hi, uint32_t first,
                              uint32_t nblocks, uint32_t n, uint32_t *restrict out) {
  for (size_t i = 0; i < (size_t)nblocks; i++) {
    uint32_t c0 = first + (uint32_t)i, c1 = 0, c2 = rep_lo, c3 = rep_hi;
#define PHILOX_ROUND(r)                                                                                \
  do {                                                                                                 \
    uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;                         \
    uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ (k0 + (uint32_t)(r) * 0x9E3779B9u);                     \
    uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ (k1 + (uint32_t)(r) * 0xBB67AE85u);                     \
    c1 = (uint32_t)p1;                                                                                 \
    c3 = (uint32_t)p0;                                                                                 \
    c0 = n0;                                                                                           \
    c2 = n2;                                                                                           \
  } while (0)
    PHILOX_ROUND(0); PHILOX_ROUND(1); PHILOX_ROUND(2); PHILOX_ROUND(3); PHILOX_ROUND(4);
    PHILOX_ROUND(5); PHILOX_ROUND(6); PHILOX_ROUND(7); PHILOX_ROUND(8); PHILOX_ROUND(9);
#undef PHILOX_ROUND
    /* words (c1:c0) and (c3:c2) → [0, n) as rd_below32 does */
    out[2 * i] = (uint32_t)(((uint64_t)c1 * n + (((uint64_t)c0 * n) >> 32)) >> 32);
    out[2 * i + 1] = (uint32_t)(((uint64_t)c3 * n + (((uint64_t)c2 * n) >> 32)) >> 32);
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
/* The same blocks with AVX-512 intrinsics: eight blocks in the 64-bit lanes of a vector, each 32-bit
 * state word in the low half of its lane, so every product is one vpmuludq (which ignores the high
 * halves, where garbage may sit) and its high word one shift; the XORs of three words are one
 * vpternlogq. Same values as the loop above; the last nblocks % 8 blocks are left to it. */
__attribute__((target("avx512f")))
static uint32_t below_fill_avx512(uint32_t k0, uint32_t k1, uint32_t rep_lo, uint32_t rep_hi, uint32_t nblocks,
                                  uint32_t n, uint32_t *restrict out) {
  const __m512i lane = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0);
  const __m512i m0 = _mm512_set1_epi64(0xD2511F53u), m1 = _mm512_set1_epi64(0xCD9E8D57u), nv = _mm512_set1_epi64(n);
  __m512i ka[10], kb[10];
  for (uint32_t r = 0; r < 10; r++) {
    ka[r] = _mm512_set1_epi64(k0 + r * 0x9E3779B9u);
    kb[r] = _mm512_set1_epi64(k1 + r * 0xBB67AE85u);
  }
  uint32_t i = 0;
  for (; i + 8 <= nblocks; i += 8) {
    __m512i c0 = _mm512_add_epi64(_mm512_set1_epi64(i), lane), c1 = _mm512_setzero_si512();
    __m512i c2 = _mm512_set1_epi64(rep_lo), c3 = _mm512_set1_epi64(rep_hi);
    for (int r = 0; r < 10; r++) {
      __m512i p0 = _mm512_mul_epu32(c0, m0), p1 = _mm512_mul_epu32(c2, m1);
      c0 = _mm512_ternarylogic_epi64(_mm512_srli_epi64(p1, 32), c1, ka[r], 0x96);
      c2 = _mm512_ternarylogic_epi64(_mm512_srli_epi64(p0, 32), c3, kb[r], 0x96);
      c1 = p1;
      c3 = p0;
    }
    /* words (c1:c0) and (c3:c2) -> [0, n) as rd_below32 does, stored interleaved */
    __m512i w0 = _mm512_srli_epi64(_mm512_add_epi64(_mm512_mul_epu32(c1, nv),
                                                    _mm512_srli_epi64(_mm512_mul_epu32(c0, nv), 32)), 32);
    __m512i w1 = _mm512_srli_epi64(_mm512_add_epi64(_mm512_mul_epu32(c3, nv),
                                                    _mm512_srli_epi64(_mm512_mul_epu32(c2, nv), 32)), 32);
    _mm512_storeu_si512((void *)(out + 2 * i), _mm512_or_si512(w0, _mm512_slli_epi64(w1, 32)));
  }
  return i;
}
#endif

void rd_rng_below_fill(const rd_stream *s, uint64_t rep, uint64_t n, int64_t count, uint32_t *out) {
  /* blocks with a counter word 0 below 2^32 in one batch (count < 2^33 draws); `out` holds an
   * even number of entries (count rounded up) */
  uint32_t nblocks = (uint32_t)((count + 1) / 2), done = 0;
#if defined(__x86_64__) && defined(__GNUC__)
  if (__builtin_cpu_supports("avx512f"))
    done = below_fill_avx512(s->key[0], s->key[1], (uint32_t)rep, (uint32_t)(rep >> 32), nblocks, (uint32_t)n, out);
#endif
  below_fill_blocks(s->key[0], s->key[1], (uint32_t)rep, (uint32_t)(rep >> 32), done, nblocks - done, (uint32_t)n,
                    out + 2 * (size_t)done);
}

/* ---- 32-bit draws: Philox4x32-10 blocks, 16 (AVX-512) or 8 (AVX2) at a time -----------------------
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
    const char *force = getenv("RMDIAG_RNG_ISA");  /* tests: "scalar", "avx2" */
    __builtin_cpu_init();
    isa = __builtin_cpu_supports("avx512f") ? 2 : __builtin_cpu_supports("avx2") ? 1 : 0;
    if (force && strcmp(force, "scalar") == 0) isa = 0;
    else if (force && strcmp(force, "avx2") == 0 && isa > 1) isa = 1;
  }
  return isa;
}

void rd_rng_below_u32_fill(const rd_stream *s, uint64_t rep, uint32_t n, int64_t count, uint32_t *out) {
  if (count <= 0) return;
  int64_t groups = (count + 63) / 64;
  switch (fill_isa()) {
    case 2: fill_avx512(s->key[0], s->key[1], rep, n, groups, out); break;
    case 1: fill_avx2(s->key[0], s->key[1], rep, n, groups, out); break;
    default: fill_scalar(s->key, rep, n, groups, out); break;
  }
}
