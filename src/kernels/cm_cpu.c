/* cm on the CPU: p = σ(rc − rr) in float64 per pair and run, summed over runs in run order,
 * separately for runs that trained on the pair's user and runs that held it out. The CUDA
 * kernel (cm_cuda.cu) computes σ with the same branch-free code (fastmath.h) and sums
 * in the same order, so the two agree to the last bit; tests compare them on a GPU. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmdiag/kernels/cm.h"
#include "rmdiag/kernels/fastmath.h"
#include "rmdiag/kernels/simd.h"

double rd_sigmoid(double x) { return rd_sigmoid_fast(x); }

/* Pass 1, a flat loop the compiler vectorizes for the widest vectors the CPU has (chosen at
 * load time); every lane computes the same bits as scalar code. It splits σ(rc − rr) into the
 * train part (σ where in_train, else +0.0) and the held-out part (the rest). The flags are 0 or 1
 * (the reader checks them), so the train part is σ times the flag: exactly σ or +0.0 (σ is never
 * negative), with no select. The AVX-512 clone asks for x86-64-v4 (AVX-512 F, DQ, BW, VL): with F
 * alone the float-to-double conversions and 64-bit integer steps are split into 256-bit halves and
 * the loop runs 1.5x slower. FMA comes with it but is never used: kernels are built with
 * -ffp-contract=off. */
#define SPLIT_SIGMOID(T)                                                                        \
  __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))                           \
  static void split_sigmoid_##T(const T *restrict rc, const T *restrict rr, const uint8_t *restrict m, \
                                double *restrict tin, double *restrict tout, int64_t n) {       \
    for (int64_t i = 0; i < n; i++) {                                                           \
      double p = rd_sigmoid_fast((double)rc[i] - (double)rr[i]);                                \
      double t = p * (double)m[i];                                                              \
      tin[i] = t;                                                                               \
      tout[i] = p - t;                                                                          \
    }                                                                                           \
  }
SPLIT_SIGMOID(float)
SPLIT_SIGMOID(double)

/* Pass 2: per pair, sums in run order. Adding +0.0 leaves a sum of non-negative terms
 * unchanged, so these are exactly the sums of each side's values. Four pairs at a time: eight
 * independent addition chains, or under AVX2 one vector per side whose lane l is pair q + l, fed
 * by 4 x 4 blocks (four runs of four pairs) transposed in registers. Either way every pair adds its
 * own runs in run order: the same bits. */
static int64_t pair_sums4_plain(const double *tin, const double *tout, int64_t np, int64_t R, double *tm, double *tg) {
  int64_t q = 0;
  for (; q + 4 <= np; q += 4) {
    const double *a0 = tin + q * R, *a1 = a0 + R, *a2 = a1 + R, *a3 = a2 + R;
    const double *b0 = tout + q * R, *b1 = b0 + R, *b2 = b1 + R, *b3 = b2 + R;
    double i0 = 0, i1 = 0, i2 = 0, i3 = 0, o0 = 0, o1 = 0, o2 = 0, o3 = 0;
    for (int64_t j = 0; j < R; j++) {
      i0 += a0[j]; i1 += a1[j]; i2 += a2[j]; i3 += a3[j];
      o0 += b0[j]; o1 += b1[j]; o2 += b2[j]; o3 += b3[j];
    }
    tm[q] = i0; tm[q + 1] = i1; tm[q + 2] = i2; tm[q + 3] = i3;
    tg[q] = o0; tg[q + 1] = o1; tg[q + 2] = o2; tg[q + 3] = o3;
  }
  return q;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* acc (lane l: pair l's sum so far) plus runs j..j+3 of the four pairs at p, p + R, ... in order */
RD_TARGET_AVX2 static inline __m256d add_runs4(__m256d acc, const double *p, int64_t R) {
  __m256d r0 = _mm256_loadu_pd(p), r1 = _mm256_loadu_pd(p + R);
  __m256d r2 = _mm256_loadu_pd(p + 2 * R), r3 = _mm256_loadu_pd(p + 3 * R);
  __m256d t0 = _mm256_unpacklo_pd(r0, r1), t1 = _mm256_unpackhi_pd(r0, r1);
  __m256d t2 = _mm256_unpacklo_pd(r2, r3), t3 = _mm256_unpackhi_pd(r2, r3);
  acc = _mm256_add_pd(acc, _mm256_permute2f128_pd(t0, t2, 0x20)); /* run j */
  acc = _mm256_add_pd(acc, _mm256_permute2f128_pd(t1, t3, 0x20)); /* run j + 1 */
  acc = _mm256_add_pd(acc, _mm256_permute2f128_pd(t0, t2, 0x31)); /* run j + 2 */
  return _mm256_add_pd(acc, _mm256_permute2f128_pd(t1, t3, 0x31)); /* run j + 3 */
}

RD_TARGET_AVX2 static int64_t pair_sums4_avx2(const double *tin, const double *tout, int64_t np, int64_t R, double *tm,
                                              double *tg) {
  int64_t q = 0;
  for (; q + 4 <= np; q += 4) {
    const double *a = tin + q * R, *b = tout + q * R;
    __m256d si = _mm256_setzero_pd(), so = _mm256_setzero_pd();
    int64_t j = 0;
    for (; j + 4 <= R; j += 4) {
      si = add_runs4(si, a + j, R);
      so = add_runs4(so, b + j, R);
    }
    double i4[4], o4[4];
    _mm256_storeu_pd(i4, si);
    _mm256_storeu_pd(o4, so);
    for (; j < R; j++)
      for (int l = 0; l < 4; l++) {
        i4[l] += a[l * R + j];
        o4[l] += b[l * R + j];
      }
    for (int l = 0; l < 4; l++) {
      tm[q + l] = i4[l];
      tg[q + l] = o4[l];
    }
  }
  return q;
}
#endif

/* The 0/1 flags of one pair counted eight at a time as the bytes of a 64-bit word: at most 31 words
 * are added before their bytes are summed by one multiply (each byte then holds at most 31, their
 * total at most 248, so no byte carries into the next). */
static int32_t count_flags(const uint8_t *m, int64_t R) {
  int32_t n = 0;
  int64_t j = 0;
  while (j + 8 <= R) {
    uint64_t acc = 0;
    for (int w = 0; w < 31 && j + 8 <= R; w++, j += 8) {
      uint64_t x;
      memcpy(&x, m + j, 8);
      acc += x;
    }
    n += (int32_t)((acc * 0x0101010101010101ull) >> 56);
  }
  for (; j < R; j++) n += m[j];
  return n;
}

static void pair_sums(const double *tin, const double *tout, const uint8_t *m, int64_t np, int64_t R, double *tm,
                      double *tg, int32_t *nt) {
  int64_t q;
#if defined(__x86_64__) && defined(__GNUC__)
  if (rd_simd() >= RD_SIMD_AVX2 && R >= 4)
    q = pair_sums4_avx2(tin, tout, np, R, tm, tg);
  else
#endif
    q = pair_sums4_plain(tin, tout, np, R, tm, tg);
  for (; q < np; q++) {
    double i0 = 0, o0 = 0;
    for (int64_t j = 0; j < R; j++) {
      i0 += tin[q * R + j];
      o0 += tout[q * R + j];
    }
    tm[q] = i0;
    tg[q] = o0;
  }
  for (q = 0; q < np; q++) {
    int32_t n_in = count_flags(m + q * R, R);
    int32_t n_out = (int32_t)R - n_in;
    tm[q] = n_in > 0 ? tm[q] / n_in : NAN;
    tg[q] = n_out > 0 ? tg[q] / n_out : NAN;
    nt[q] = n_in;
  }
}

/* whole pairs per chunk of about 4096 elements (two 32 KiB buffers, cache-resident) */
int64_t rd_cm_chunk_pairs(int64_t n_runs) { return n_runs >= 4096 ? 1 : 4096 / n_runs; }

/* The n values after a chunk are the ones its caller reads next (a rank's rows are consecutive):
 * before the arithmetic of each piece of RD_CM_PIECE values, the same piece one chunk ahead is
 * requested into L2, so that reading the next chunk (its value checks come first) finds it there
 * instead of waiting on memory while the arithmetic units idle. Prefetches never fault, past the
 * rows' end included; the addresses are formed as integers for that reason. */
enum { RD_CM_PIECE = 128 };
static void read_ahead(const void *rc, const void *rr, const uint8_t *m, int64_t n, size_t es, int64_t len) {
  uintptr_t a = (uintptr_t)rc + (uintptr_t)n * es, b = (uintptr_t)rr + (uintptr_t)n * es;
  for (uintptr_t k = 0; k < (uintptr_t)len * es; k += 64) {
    __builtin_prefetch((const void *)(a + k), 0, 2);
    __builtin_prefetch((const void *)(b + k), 0, 2);
  }
  for (int64_t k = 0; k < len; k += 64) __builtin_prefetch((const void *)((uintptr_t)m + (uintptr_t)(n + k)), 0, 2);
}

void rd_cm_pairs_cpu_chunk(const rd_cm_block *in, rd_cm_pairs *out, double *work) {
  const int64_t np = in->n_pairs, R = in->n_runs, n = np * R;
  double *tin = work, *tout = work + rd_cm_chunk_pairs(R) * R;
  size_t es = in->ftype == RD_F32 ? sizeof(float) : sizeof(double);
  for (int64_t i0 = 0; i0 < n; i0 += RD_CM_PIECE) {
    int64_t i1 = n - i0 < RD_CM_PIECE ? n : i0 + RD_CM_PIECE;
    const char *rc = (const char *)in->reward_chosen + (size_t)i0 * es;
    const char *rr = (const char *)in->reward_rejected + (size_t)i0 * es;
    read_ahead(rc, rr, in->in_train + i0, n, es, i1 - i0);
    if (in->ftype == RD_F32)
      split_sigmoid_float((const float *)rc, (const float *)rr, in->in_train + i0, tin + i0, tout + i0, i1 - i0);
    else
      split_sigmoid_double((const double *)rc, (const double *)rr, in->in_train + i0, tin + i0, tout + i0, i1 - i0);
  }
  pair_sums(tin, tout, in->in_train, np, R, out->tm, out->tg, out->n_train);
}

int rd_cm_pairs_cpu(const rd_cm_block *in, rd_cm_pairs *out) {
  const int64_t P = in->n_pairs, R = in->n_runs, per = rd_cm_chunk_pairs(R);
  double *work = malloc(sizeof(double) * 2 * (size_t)(per * R));
  if (!work) return -1;
  size_t es = in->ftype == RD_F32 ? sizeof(float) : sizeof(double);
  for (int64_t p0 = 0; p0 < P; p0 += per) {
    rd_cm_block b = *in;
    b.n_pairs = P - p0 < per ? P - p0 : per;
    b.reward_chosen = (const char *)in->reward_chosen + (size_t)(p0 * R) * es;
    b.reward_rejected = (const char *)in->reward_rejected + (size_t)(p0 * R) * es;
    b.in_train = in->in_train + p0 * R;
    rd_cm_pairs o = {.tm = out->tm + p0, .tg = out->tg + p0, .n_train = out->n_train + p0};
    rd_cm_pairs_cpu_chunk(&b, &o, work);
  }
  free(work);
  return 0;
}

static int cpu_pairs(const rd_cm_block *in, rd_cm_pairs *out, char *err, size_t errlen) {
  if (rd_cm_pairs_cpu(in, out) == 0) return 0;
  snprintf(err, errlen, "out of memory");
  return -1;
}

const struct rd_cm_kernels rd_cm_kernels_cpu = {.pairs = cpu_pairs};
