/* CPU reference kernels of the probe report (see probe.h). The loops over features are written once
 * over an 8-lane vector of doubles (probe_simd.h) and built per instruction set: AVX-512 (one
 * register), AVX2 (a pair of 4-lane registers) and plain C, chosen at run time; every lane sums in a
 * fixed order and the lanes are combined in a fixed pairwise order, so all give the same bits. The
 * flat element-wise loops are target clones. (A 64-byte GCC vector in a function built for AVX2 is
 * kept on the stack and reloaded every iteration: the sums of squares and distances written that way
 * ran 10x slower on AVX2-only CPUs.) */
#include "rmdiag/kernels/probe.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rmdiag/kernels/fastmath.h"
#include "rmdiag/kernels/simd.h"

/* Built with -fno-math-errno (CMakeLists.txt): sqrt() never sees a negative argument here, and
 * without errno the AdamW loop uses vector square roots (correctly rounded, like scalar ones).
 * Target clones go on static functions only, each public one a plain wrapper: clang 14 names an
 * external clone set's entry "name.ifunc" and leaves "name" itself undefined. */
#if defined(__x86_64__) && defined(__GNUC__)
#define PROBE_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define PROBE_CLONES
#endif
#define INLINE static inline __attribute__((always_inline))
/* the AVX2 backward's column blocks (strips of 4 columns), row pieces and read-ahead (lines) */
#define PROBE_BWDH_STRIPS 64
#define PROBE_BWDH_ROWS 16
#define PROBE_BWDH_PF 1

/* ---- the explicit-SIMD kernels (probe_simd.h), one version per instruction set ------------------ */

/* plain C: eight lanes in an array, fma() from libm (exactly rounded, as the hardware's) */
typedef struct v8s {
  double v[8];
} v8s;
INLINE v8s s8_zero(void) { return (v8s){{0, 0, 0, 0, 0, 0, 0, 0}}; }
INLINE v8s s8_ldd(const double *p) {
  v8s r;
  memcpy(r.v, p, sizeof r.v);
  return r;
}
INLINE v8s s8_ldf(const float *p) {
  v8s r;
  for (int l = 0; l < 8; l++) r.v[l] = (double)p[l];
  return r;
}
INLINE v8s s8_set1(double x) { return (v8s){{x, x, x, x, x, x, x, x}}; }
INLINE v8s s8_fma(v8s a, v8s b, v8s c) {
  v8s r;
  for (int l = 0; l < 8; l++) r.v[l] = fma(a.v[l], b.v[l], c.v[l]);
  return r;
}
INLINE v8s s8_add(v8s a, v8s b) {
  v8s r;
  for (int l = 0; l < 8; l++) r.v[l] = a.v[l] + b.v[l];
  return r;
}
INLINE v8s s8_mul(v8s a, v8s b) {
  v8s r;
  for (int l = 0; l < 8; l++) r.v[l] = a.v[l] * b.v[l];
  return r;
}
INLINE v8s s8_sub(v8s a, v8s b) {
  v8s r;
  for (int l = 0; l < 8; l++) r.v[l] = a.v[l] - b.v[l];
  return r;
}
INLINE void s8_st(double *p, v8s v) { memcpy(p, v.v, sizeof v.v); }
#define V8 v8s
#define V8_ISA scalar
#define V8_ZERO s8_zero
#define V8_LDD s8_ldd
#define V8_LDF s8_ldf
#define V8_SET1 s8_set1
#define V8_FMA s8_fma
#define V8_ADD s8_add
#define V8_SUB s8_sub
#define V8_MUL s8_mul
#define V8_ST s8_st
#define V8_ACC 4
#define V8_DOT_OUT 2
#define V8_NODE_OC 3
#define V8_FWD_ROWS(oc) 1
#define V8_BWD_JB(oc) 1
#include "probe_simd.h"
#include "probe_simd_end.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* Each instruction set's functions are compiled for it by a pragma over the region: GCC's target
 * pragma, or clang's attribute pragma (clang ignores GCC's), which gives every function in the
 * region the same target attribute. Same source, same operations, so the same bits. */
/* AVX2 + FMA: a pair of 4-lane registers */
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#endif
typedef struct v8y {
  __m256d lo, hi;
} v8y;
INLINE v8y y8_zero(void) { return (v8y){_mm256_setzero_pd(), _mm256_setzero_pd()}; }
INLINE v8y y8_ldd(const double *p) { return (v8y){_mm256_loadu_pd(p), _mm256_loadu_pd(p + 4)}; }
INLINE v8y y8_ldf(const float *p) {
  __m256 f = _mm256_loadu_ps(p);
  return (v8y){_mm256_cvtps_pd(_mm256_castps256_ps128(f)), _mm256_cvtps_pd(_mm256_extractf128_ps(f, 1))};
}
INLINE v8y y8_set1(double x) { return (v8y){_mm256_set1_pd(x), _mm256_set1_pd(x)}; }
INLINE v8y y8_fma(v8y a, v8y b, v8y c) { return (v8y){_mm256_fmadd_pd(a.lo, b.lo, c.lo), _mm256_fmadd_pd(a.hi, b.hi, c.hi)}; }
INLINE v8y y8_add(v8y a, v8y b) { return (v8y){_mm256_add_pd(a.lo, b.lo), _mm256_add_pd(a.hi, b.hi)}; }
INLINE v8y y8_sub(v8y a, v8y b) { return (v8y){_mm256_sub_pd(a.lo, b.lo), _mm256_sub_pd(a.hi, b.hi)}; }
INLINE v8y y8_mul(v8y a, v8y b) { return (v8y){_mm256_mul_pd(a.lo, b.lo), _mm256_mul_pd(a.hi, b.hi)}; }
INLINE void y8_st(double *p, v8y v) {
  _mm256_storeu_pd(p, v.lo);
  _mm256_storeu_pd(p + 4, v.hi);
}
/* half vectors: the AVX2 tiles (probe_simd.h, V8_HALF) */
#define V8_HALF __m256d
#define V8_HALF_LDF(p) _mm256_cvtps_pd(_mm_loadu_ps(p))
#define V8_HALF_LDD _mm256_loadu_pd
#define V8_HALF_SET1 _mm256_set1_pd
#define V8_HALF_ZERO _mm256_setzero_pd
#define V8_HALF_ADD _mm256_add_pd
#define V8_HALF_ST _mm256_storeu_pd
#define V8_HALF_FMA _mm256_fmadd_pd
#define V8 v8y
#define V8_ISA avx2
#define V8_ZERO y8_zero
#define V8_LDD y8_ldd
#define V8_LDF y8_ldf
#define V8_SET1 y8_set1
#define V8_FMA y8_fma
#define V8_ADD y8_add
#define V8_SUB y8_sub
#define V8_MUL y8_mul
#define V8_ST y8_st
#define V8_ACC 6
#define V8_DOT_OUT 2
#define V8_NODE_OC 6
#define V8_FWD_ROWS(oc) ((oc) == 1 ? 6 : (oc) == 2 ? 4 : (oc) <= 4 ? 3 : 2)
#include "probe_simd.h"
#include "probe_simd_end.h"
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

/* AVX-512: one register */
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512dq,avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512dq,avx2,fma")
#endif
#define V8 __m512d
#define V8_ISA avx512
#define V8_ZERO _mm512_setzero_pd
#define V8_LDD _mm512_loadu_pd
#define V8_LDF(p) _mm512_cvtps_pd(_mm256_loadu_ps(p))
#define V8_SET1 _mm512_set1_pd
#define V8_FMA _mm512_fmadd_pd
#define V8_ADD _mm512_add_pd
#define V8_SUB _mm512_sub_pd
#define V8_MUL _mm512_mul_pd
#define V8_ST _mm512_storeu_pd
#define V8_ACC 24
#define V8_DOT_OUT 6
/* node kernels: up to 9 outputs per pass, about 27 accumulators of the 32 registers */
#define V8_NODE_OC 9
/* a value loaded once into a register (not folded into each multiply-add as a memory operand) */
#define V8_REG(v) __asm__("" : "+v"(v))
#define V8_FWD_ROWS(oc) ((oc) <= 3 ? 8 : 27 / (oc))
#define V8_BWD_JB(oc) ((oc) <= 3 ? 8 : (oc) == 4 ? 6 : (oc) <= 6 ? 4 : 3)
#include "probe_simd.h"
#include "probe_simd_end.h"
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#define PROBE_HAVE_X86 1
#endif

typedef void (*dot_rows_fn)(const float *const *, int64_t, int64_t, const double *, int, double *, int64_t);
typedef void (*bwd_rows_fn)(const float *const *, int64_t, int64_t, const double *, int, double *, int);
typedef void (*sqdist_fn)(const float *const *, int64_t, int64_t, const double *, int64_t, double *);
typedef void (*fwd_node_fn)(const float *const *, int64_t, int64_t, const double *, int, double *, double *);
typedef void (*bwd_node_fn)(const float *const *, const int64_t *, int, int64_t, const double *, int, double *,
                            double *);
typedef double (*sumsq_fn)(const double *, int64_t);
typedef void (*outer_acc_fn)(double *, int64_t, int64_t, const double *, const double *, int64_t);
typedef void (*standardize_fn)(const float *, const double *, const double *, int64_t, double *);
typedef void (*pair_f64_fn)(const double *, int64_t, int64_t, const double *, int64_t, double *);
typedef void (*lsolve_fn)(const double *, int64_t, const float *const *, int64_t, double *);

static struct {
  int chosen;
  const char *name;
  dot_rows_fn dot;
  bwd_rows_fn bwd;
  sqdist_fn sqdist;
  fwd_node_fn fwd_node;
  bwd_node_fn bwd_node;
  sumsq_fn sumsq;
  outer_acc_fn outer_acc;
  standardize_fn standardize;
  pair_f64_fn sqdist_f64, dot_f64;
  lsolve_fn lsolve;
} simd;

#define SIMD_USE(ISA)                   \
  do {                                  \
    simd.name = #ISA;                   \
    simd.dot = dot_rows_##ISA;          \
    simd.bwd = bwd_rows_##ISA;          \
    simd.sqdist = sqdist_rows_##ISA;    \
    simd.fwd_node = fwd_node_##ISA;     \
    simd.bwd_node = bwd_node_##ISA;     \
    simd.sumsq = sumsq_##ISA;           \
    simd.outer_acc = outer_acc_##ISA;   \
    simd.standardize = standardize_##ISA; \
    simd.sqdist_f64 = sqdist_f64_##ISA; \
    simd.dot_f64 = dot_f64_##ISA;       \
    simd.lsolve = lsolve_##ISA;         \
  } while (0)

/* The instruction set of the hot loops: the best the CPU has, or RMDIAG_PROBE_SIMD = avx512 | avx2
 * | scalar (tests compare them; all give the same bits). */
static void simd_choose(void) {
  if (simd.chosen) return;
  const char *want = getenv("RMDIAG_PROBE_SIMD");
  rd_simd_level best = rd_simd_best(), w = want ? rd_simd_named(want) : best;
  SIMD_USE(scalar);
#ifdef PROBE_HAVE_X86
  if ((w < best ? w : best) == RD_SIMD_AVX512) SIMD_USE(avx512);
  else if ((w < best ? w : best) == RD_SIMD_AVX2) SIMD_USE(avx2);
#endif
  simd.chosen = 1;
}

const char *rd_probe_simd(void) {
  simd_choose();
  return simd.name;
}

int rd_probe_simd_set(const char *name) {
  simd.chosen = 0;
  const char *old = getenv("RMDIAG_PROBE_SIMD");
  char *keep = old ? strdup(old) : NULL;
  setenv("RMDIAG_PROBE_SIMD", name, 1);
  simd_choose();
  if (keep) {
    setenv("RMDIAG_PROBE_SIMD", keep, 1);
    free(keep);
  } else {
    unsetenv("RMDIAG_PROBE_SIMD");
  }
  return strcmp(simd.name, name) == 0 ? 0 : -1;
}

static void logits_impl(const rd_probe_heads *h, const float *const *rows, int64_t n, double *z) {
  int O = h->L * h->K;
  simd_choose();
  simd.dot(rows, n, h->d, h->W, O, z, O);
  if (h->b)
    for (int64_t i = 0; i < n; i++)
      for (int o = 0; o < O; o++) z[i * O + o] += h->b[o];
}

void rd_probe_logits_cpu(const rd_probe_heads *h, const float *const *rows, int64_t n, double *z) {
  if (n > 0) logits_impl(h, rows, n, z);
}

/* ---- losses --------------------------------------------------------------------------------------- */

void rd_probe_residuals(int L, int K, const double *z, int32_t y, double *r, double *loss) {
  for (int l = 0; l < L; l++) {
    const double *zl = z + (int64_t)l * K;
    double *rl = r + (int64_t)l * K;
    if (K == 1) {
      /* binary cross-entropy with logits: p = σ(z), loss = max(z, 0) − y z + log(1 + e^−|z|) */
      double t = y ? 1.0 : 0.0, x = zl[0];
      rl[0] = rd_sigmoid_fast(x) - t;
      if (loss) loss[l] += (x > 0 ? x : 0.0) - t * x + log1p(rd_exp_nonpos(-fabs(x)));
    } else {
      double m = zl[0];
      for (int k = 1; k < K; k++)
        if (zl[k] > m) m = zl[k];
      double s = 0.0;
      for (int k = 0; k < K; k++) {
        rl[k] = rd_exp_nonpos(zl[k] - m);
        s += rl[k];
      }
      for (int k = 0; k < K; k++) rl[k] = rl[k] / s - (k == y ? 1.0 : 0.0);
      if (loss) loss[l] += (log(s) + m) - zl[y];
    }
  }
}

void rd_probe_predict(int L, int K, const double *z, int32_t *cls) {
  for (int l = 0; l < L; l++) {
    const double *zl = z + (int64_t)l * K;
    if (K == 1) {
      cls[l] = zl[0] > 0.0;
    } else {
      int best = 0;
      for (int k = 1; k < K; k++)
        if (zl[k] > zl[best]) best = k;
      cls[l] = best;
    }
  }
}

int rd_probe_near_tie(int K, const double *zl) {
  if (K == 1) return fabs(zl[0]) < RD_PROBE_NEAR_TIE;
  double a = -INFINITY, b = -INFINITY;  /* the largest two */
  for (int k = 0; k < K; k++) {
    if (zl[k] > a) {
      b = a;
      a = zl[k];
    } else if (zl[k] > b) {
      b = zl[k];
    }
  }
  return a - b < RD_PROBE_NEAR_TIE;
}

/* ---- block gradient ------------------------------------------------------------------------------- */

/* Rows per pass: logits and residuals of a pass are formed first, then its gradient. Passes are
 * combined in order (out + pass), so the sum over rows is that of the fixed chunking. */
#define GRAD_CHUNK RD_PROBE_CHUNK

static int64_t block_grad_impl(const rd_probe_heads *h, const rd_probe_block *blk, int with_loss, int accumulate,
                               double *out, int64_t *bad) {
  int L = h->L, K = h->K, O = L * K;
  int64_t d = h->d, n = blk->n, nbad = 0;
  /* logits, residuals and per-head losses of one pass: on the stack for up to 32 outputs */
  double stack[GRAD_CHUNK * 32 * 2 + 32];
  double *heap = NULL, *z = stack;
  if (O > 32) {
    heap = malloc(sizeof(double) * (size_t)(GRAD_CHUNK * O * 2 + L));
    if (!heap) return -1;
    z = heap;
  }
  double *r = z + GRAD_CHUNK * O, *lsum = r + GRAD_CHUNK * O;
  double *G = out, *gb = h->b ? out + (int64_t)O * d : NULL;
  double *loss = with_loss ? out + (int64_t)O * d + (h->b ? O : 0) : NULL;
  simd_choose();
  for (int64_t c0 = 0; c0 < n || (c0 == 0 && n == 0); c0 += GRAD_CHUNK) {
    int64_t cn = n - c0 < GRAD_CHUNK ? n - c0 : GRAD_CHUNK;
    int acc = accumulate || c0 > 0;
    const float *const *x = blk->rows + c0;
    if (cn > 0) simd.dot(x, cn, d, h->W, O, z, O);
    for (int l = 0; l < L; l++) lsum[l] = 0.0;
    for (int64_t i = 0; i < cn; i++) {
      double *zi = z + i * O, *ri = r + i * O;
      int finite = 1;
      for (int o = 0; o < O; o++) {
        if (h->b) zi[o] += h->b[o];
        finite &= isfinite(zi[o]);
      }
      if (!finite) {
        if (bad) bad[nbad] = c0 + i;
        nbad++;
      }
      rd_probe_residuals(L, K, zi, blk->y[c0 + i], ri, with_loss ? lsum : NULL);
      for (int o = 0; o < O; o++) ri[o] *= blk->scale;
    }
    simd.bwd(x, cn, d, r, O, G, acc);
    if (gb)
      for (int o = 0; o < O; o++) {
        double s = 0.0;
        for (int64_t i = 0; i < cn; i++) s += r[i * O + o];
        gb[o] = acc ? gb[o] + s : s;
      }
    if (loss)
      for (int l = 0; l < L; l++) loss[l] = acc ? loss[l] + lsum[l] * blk->scale : lsum[l] * blk->scale;
    if (n == 0) break;
  }
  free(heap);
  return nbad;
}

int64_t rd_probe_block_grad_cpu(const rd_probe_heads *h, const rd_probe_block *blk, int with_loss, int accumulate,
                                double *out, int64_t *bad) {
  return block_grad_impl(h, blk, with_loss, accumulate, out, bad);
}

/* rd_probe_residuals (no loss) times `scale` for n rows at once, the logits and residuals stored by
 * output (zt[o * n + i], rt[o * n + i]) so that the loops run over rows and vectorize: the same
 * operations in the same order per row (max over classes, exponentials, their sum in class order,
 * quotient minus the one-hot target, times scale), so the same bits. w: 2n doubles of scratch. */
PROBE_CLONES
static void residuals_by_output(int L, int K, int64_t n, const double *zt, const int32_t *y, double scale,
                                double *rt, double *w) {
  double *m = w, *sum = w + n;
  for (int l = 0; l < L; l++) {
    const double *zl = zt + (int64_t)l * K * n;
    double *rl = rt + (int64_t)l * K * n;
    if (K == 1) {
      for (int64_t i = 0; i < n; i++) rl[i] = (rd_sigmoid_fast(zl[i]) - (y[i] ? 1.0 : 0.0)) * scale;
      continue;
    }
    for (int64_t i = 0; i < n; i++) m[i] = zl[i];
    for (int k = 1; k < K; k++)
      for (int64_t i = 0; i < n; i++) m[i] = zl[k * n + i] > m[i] ? zl[k * n + i] : m[i];
    for (int64_t i = 0; i < n; i++) sum[i] = 0.0;
    for (int k = 0; k < K; k++)
      for (int64_t i = 0; i < n; i++) {
        double e = rd_exp_nonpos(zl[k * n + i] - m[i]);
        rl[k * n + i] = e;
        sum[i] += e;
      }
    for (int k = 0; k < K; k++)
      for (int64_t i = 0; i < n; i++) rl[k * n + i] = (rl[k * n + i] / sum[i] - (k == y[i] ? 1.0 : 0.0)) * scale;
  }
}

/* The value of a node of units: the logits of all its rows (column-blocked), their residuals, then
 * per vector block of columns each unit's partial and the fixed pairwise tree over the units. */
int rd_probe_tree_grad_cpu(const rd_probe_heads *h, const float *const *rows, const int32_t *y, const int64_t *uoff,
                           int nu, double scale, double *out) {
  int L = h->L, K = h->K, O = L * K;
  int64_t d = h->d, n = uoff[nu] - uoff[0];
  if (h->b || nu < 1 || uoff[0] != 0) return -1;
  for (int u = 0; u < nu; u++)
    if (uoff[u + 1] - uoff[u] > RD_PROBE_CHUNK || uoff[u + 1] < uoff[u]) return -1;
  int levels = 1;
  while ((1 << (levels - 1)) < nu) levels++;
  /* lane state (n O 8), logits, residuals, both by output too (n O each), scratch (2n), the tree's
   * stack (levels x 27 vectors; for the AVX2 backward, a block's sums between pieces and levels x a
   * block's sums: (levels + 1) x 64 strips x 9 outputs x 4 doubles) */
  size_t nst = (size_t)(n * O * 8), nz = (size_t)(n * O),
         nstk = (size_t)(levels + 1) * (PROBE_BWDH_STRIPS * 36 > 27 * 8 ? PROBE_BWDH_STRIPS * 36 : 27 * 8);
  /* on cache lines: the lane state is read and written 64 bytes at a time */
  double *buf = aligned_alloc(64, (sizeof(double) * (nst + 4 * nz + 2 * (size_t)n + nstk + 8) + 63) & ~(size_t)63);
  if (!buf) return -1;
  double *st = buf, *z = st + nst, *r = z + nz, *zt = r + nz, *rt = zt + nz, *w = rt + nz, *stk = w + 2 * n;
  simd_choose();
  if (n > 0) simd.fwd_node(rows, n, d, h->W, O, st, z);
  for (int64_t i = 0; i < n; i++)
    for (int o = 0; o < O; o++) zt[o * n + i] = z[i * O + o];
  residuals_by_output(L, K, n, zt, y, scale, rt, w);
  for (int64_t i = 0; i < n; i++)
    for (int o = 0; o < O; o++) r[i * O + o] = rt[o * n + i];
  simd.bwd_node(rows, uoff, nu, d, r, O, stk, out);
  free(buf);
  return 0;
}

/* ---- small vector kernels ----------------------------------------------------------------------------- */

double rd_probe_sumsq(const double *x, int64_t n) {
  simd_choose();
  return simd.sumsq(x, n);
}

PROBE_CLONES
static void add_clones(double *out, const double *x, int64_t n) {
  for (int64_t i = 0; i < n; i++) out[i] = out[i] + x[i];
}
void rd_probe_add(double *out, const double *x, int64_t n) { add_clones(out, x, n); }

void rd_probe_outer_acc(double *G, int64_t K, int64_t d, const double *r, const double *X, int64_t n) {
  simd_choose();
  simd.outer_acc(G, K, d, r, X, n);
}

void rd_probe_standardize(const float *x, const double *mu, const double *inv_sd, int64_t d, double *y) {
  simd_choose();
  simd.standardize(x, mu, inv_sd, d, y);
}

PROBE_CLONES
static void add3_clones(double *out, const double *a, const double *b, int64_t n) {
  for (int64_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}
void rd_probe_add3(double *out, const double *a, const double *b, int64_t n) { add3_clones(out, a, b, n); }

PROBE_CLONES
static void adamw_step_clones(const rd_adamw *a, int64_t t, double lr_t, double gscale, const double *g, double *p,
                              double *m, double *v, int64_t n) {
  double b1 = a->beta1, b2 = a->beta2, eps = a->eps;
  double decay = 1.0 - lr_t * a->wd;
  double bc1 = 1.0 - pow(b1, (double)(t + 1)), bc2 = 1.0 - pow(b2, (double)(t + 1));
  /* sqrt(v̂) = sqrt(v) / sqrt(1 − β2^t), taken as sqrt(v) · (1 / sqrt(1 − β2^t)): one division per
   * parameter instead of two */
  double step = lr_t / bc1, rsbc2 = 1.0 / sqrt(bc2);
  for (int64_t i = 0; i < n; i++) {
    double gi = g[i] * gscale;
    double pi = p[i] * decay;
    double mi = b1 * m[i] + (1.0 - b1) * gi;
    double vi = b2 * v[i] + (1.0 - b2) * (gi * gi);
    m[i] = mi;
    v[i] = vi;
    p[i] = pi - step * (mi / (sqrt(vi) * rsbc2 + eps));
  }
}
void rd_probe_adamw_step(const rd_adamw *a, int64_t t, double lr_t, double gscale, const double *g, double *p,
                         double *m, double *v, int64_t n) {
  adamw_step_clones(a, t, lr_t, gscale, g, p, m, v, n);
}

/* ---- distances ------------------------------------------------------------------------------------------ */

void rd_probe_sqdist_cpu(const float *const *rows, int64_t n, int64_t d, const double *C, int64_t c, double *D) {
  simd_choose();
  if (n > 0 && c > 0) simd.sqdist(rows, n, d, C, c, D);
}

void rd_probe_sqdist_f64(const double *X, int64_t n, int64_t d, const double *C, int64_t c, double *D) {
  simd_choose();
  if (n > 0 && c > 0) simd.sqdist_f64(X, n, d, C, c, D);
}

void rd_probe_dot_f64(const double *X, int64_t n, int64_t d, const double *C, int64_t c, double *D) {
  simd_choose();
  if (n > 0 && c > 0) simd.dot_f64(X, n, d, C, c, D);
}

void rd_probe_lsolve(const double *L, int64_t d, const float *const *rows, int64_t n, double *Y) {
  simd_choose();
  if (n > 0) simd.lsolve(L, d, rows, n, Y);
}
