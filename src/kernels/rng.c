/* Keys for the counter-based streams: a pure function of (seed, job name, purpose). */
#include "rmdiag/rng.h"

#include <stdio.h>
#include <string.h>

#include "rmdiag/sha256.h"

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
