/* Counter-based random numbers (Philox4x32-10): every draw is a pure function of
 * (job seed, job name, purpose, replicate, draw index), so results do not depend on which rank
 * or GPU makes the draw. Usable from C and CUDA. */
#ifndef RMDIAG_RNG_H
#define RMDIAG_RNG_H

#include <stdint.h>

#ifdef __CUDACC__
#define RD_HD __host__ __device__
#else
#define RD_HD
#endif

typedef struct rd_stream {
  uint32_t key[2];  /* derived from (seed, job name, purpose) */
} rd_stream;

/* One Philox4x32-10 block: out = philox(ctr, key). */
static inline RD_HD void rd_philox4x32_10(const uint32_t ctr_in[4], const uint32_t key_in[2], uint32_t out[4]) {
  uint32_t c0 = ctr_in[0], c1 = ctr_in[1], c2 = ctr_in[2], c3 = ctr_in[3];
  uint32_t k0 = key_in[0], k1 = key_in[1];
  for (int round = 0; round < 10; round++) {
    if (round > 0) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    uint64_t p0 = (uint64_t)0xD2511F53u * c0;
    uint64_t p1 = (uint64_t)0xCD9E8D57u * c2;
    uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
    uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
    uint32_t n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
  }
  out[0] = c0; out[1] = c1; out[2] = c2; out[3] = c3;
}

/* The 64-bit word number `draw` of replicate `rep` in the stream (two words per Philox block). */
static inline RD_HD uint64_t rd_rng_u64(const rd_stream *s, uint64_t rep, uint64_t draw) {
  uint32_t ctr[4] = {(uint32_t)(draw >> 1), (uint32_t)(draw >> 33), (uint32_t)rep, (uint32_t)(rep >> 32)};
  uint32_t out[4];
  rd_philox4x32_10(ctr, s->key, out);
  return (draw & 1) ? ((uint64_t)out[3] << 32 | out[2]) : ((uint64_t)out[1] << 32 | out[0]);
}

/* Uniform double in [0, 1) with 53 random bits. */
static inline RD_HD double rd_rng_uniform(const rd_stream *s, uint64_t rep, uint64_t draw) {
  return (double)(rd_rng_u64(s, rep, draw) >> 11) * 0x1.0p-53;
}

/* Uniform integer in [0, n): the high word of the 128-bit product u64 * n (bias below n / 2^64). */
static inline RD_HD uint64_t rd_rng_below(const rd_stream *s, uint64_t rep, uint64_t draw, uint64_t n) {
  uint64_t u = rd_rng_u64(s, rep, draw);
#ifdef __CUDA_ARCH__
  return __umul64hi(u, n);
#else
  return (uint64_t)(((unsigned __int128)u * n) >> 64);
#endif
}

/* Uniform integer in [0, n) for n < 2^32 from a 64-bit word: the same value as
 * rd_rng_below (high word of u * n), computed with 32-bit products so that loops vectorize. */
static inline RD_HD uint64_t rd_below32(uint64_t u, uint64_t n) {
  uint64_t hi = u >> 32, lo = u & 0xffffffffu;
  return (hi * n + ((lo * n) >> 32)) >> 32;
}

/* Integer in [0, n), n < 2^32, from 32 random bits: draw j of replicate `rep` is the 32-bit word
 * j mod 4 of the Philox block with counter (j / 4, j / 2^34, rep, rep >> 32), times n, high word (a bias
 * below n / 2^32). Four draws per block, for kernels that need hundreds of millions of them. */
static inline RD_HD uint32_t rd_rng_below_u32(const rd_stream *s, uint64_t rep, uint64_t draw, uint32_t n) {
  uint32_t ctr[4] = {(uint32_t)(draw >> 2), (uint32_t)(draw >> 34), (uint32_t)rep, (uint32_t)(rep >> 32)}, out[4];
  rd_philox4x32_10(ctr, s->key, out);
  return (uint32_t)(((uint64_t)out[draw & 3] * n) >> 32);
}

#ifndef __CUDACC__
/* Draws 0..count-1 (count < 2^34) of replicate `rep` as rd_rng_below_u32 gives them, 64 at a time
 * (16 Philox blocks per AVX-512 step, 8 per AVX2 step, scalar otherwise; RMDIAG_RNG_ISA=avx2|scalar
 * forces a path). `out` must hold count rounded up to a multiple of 64. */
void rd_rng_below_u32_fill(const rd_stream *s, uint64_t rep, uint32_t n, int64_t count, uint32_t *out);

/* Draws j = 0..count-1 of replicate `rep` as integers in [0, n), n < 2^32, count < 2^33: the
 * same values as rd_rng_below(s, rep, j, n), a whole batch at a time (vectorized). `out` must
 * hold count rounded up to even entries. */
void rd_rng_below_fill(const rd_stream *s, uint64_t rep, uint64_t n, int64_t count, uint32_t *out);

/* Key = first 8 bytes of SHA-256("rmdiag-rng-v1\0" seed "\0" job "\0" purpose). */
void rd_stream_init(rd_stream *s, int64_t seed, const char *job, const char *purpose);
#endif

#endif
