/* CPU reference kernels of the probe report (see probe.h). The hot loops use 8-lane vectors of
 * doubles (GCC vector extensions) with separate multiply and add, so the AVX-512, AVX2 and SSE2
 * builds (target clones) and a scalar loop all give the same bits; lanes are combined in a fixed
 * pairwise order. */
#include "rmdiag/probe.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rmdiag/fastmath.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define PROBE_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define PROBE_CLONES
#endif
#define INLINE static inline __attribute__((always_inline))

/* The 8-lane helpers below are always inlined into their callers (each compiled for its target),
 * so no vector value ever crosses a call boundary: the ABI note GCC gives for them does not apply. */
#pragma GCC diagnostic ignored "-Wpsabi"
typedef double v8d __attribute__((vector_size(64)));
typedef float v8f __attribute__((vector_size(32)));

INLINE v8d ld8d(const double *p) {
  v8d v;
  memcpy(&v, p, sizeof v);
  return v;
}
INLINE v8d ld8f(const float *p) {
  v8f f;
  memcpy(&f, p, sizeof f);
  return __builtin_convertvector(f, v8d);
}
INLINE void st8d(double *p, v8d v) { memcpy(p, &v, sizeof v); }
INLINE double lanes_sum(v8d v) { return ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7])); }

/* ---- logits ----------------------------------------------------------------------------------- */

/* NR rows × OC outputs at once (W rows loaded once per 8 columns for NR rows). */
#define DEF_DOT(NR, OC)                                                                                 \
  INLINE void dot_##NR##_##OC(const float *const *x, const double *const *w, int64_t d, double *z,    \
                              int64_t ldz) {                                                           \
    v8d acc[NR][OC];                                                                                   \
    for (int r = 0; r < NR; r++)                                                                       \
      for (int o = 0; o < OC; o++) acc[r][o] = (v8d){0, 0, 0, 0, 0, 0, 0, 0};                          \
    int64_t d8 = d & ~(int64_t)7;                                                                      \
    for (int64_t j = 0; j < d8; j += 8) {                                                              \
      v8d xv[NR];                                                                                      \
      for (int r = 0; r < NR; r++) xv[r] = ld8f(x[r] + j);                                             \
      for (int o = 0; o < OC; o++) {                                                                   \
        v8d wv = ld8d(w[o] + j);                                                                       \
        for (int r = 0; r < NR; r++) acc[r][o] += wv * xv[r];                                          \
      }                                                                                                \
    }                                                                                                  \
    for (int r = 0; r < NR; r++)                                                                       \
      for (int o = 0; o < OC; o++) {                                                                   \
        double s = lanes_sum(acc[r][o]);                                                               \
        for (int64_t j = d8; j < d; j++) s += w[o][j] * (double)x[r][j];                               \
        z[r * ldz + o] = s;                                                                            \
      }                                                                                                \
  }
DEF_DOT(4, 1)
DEF_DOT(4, 2)
DEF_DOT(4, 3)
DEF_DOT(4, 4)
DEF_DOT(1, 1)
DEF_DOT(1, 2)
DEF_DOT(1, 3)
DEF_DOT(1, 4)

/* z[i*ldz + o] for rows [0, n) and outputs [0, O) (no bias). */
INLINE void dot_rows(const float *const *rows, int64_t n, int64_t d, const double *W, int O, double *z, int64_t ldz) {
  for (int o0 = 0; o0 < O; o0 += 4) {
    int oc = O - o0 < 4 ? O - o0 : 4;
    const double *w[4];
    for (int o = 0; o < oc; o++) w[o] = W + (int64_t)(o0 + o) * d;
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
      double *zz = z + i * ldz + o0;
      switch (oc) {
        case 1: dot_4_1(rows + i, w, d, zz, ldz); break;
        case 2: dot_4_2(rows + i, w, d, zz, ldz); break;
        case 3: dot_4_3(rows + i, w, d, zz, ldz); break;
        default: dot_4_4(rows + i, w, d, zz, ldz); break;
      }
    }
    for (; i < n; i++) {
      double *zz = z + i * ldz + o0;
      switch (oc) {
        case 1: dot_1_1(rows + i, w, d, zz, ldz); break;
        case 2: dot_1_2(rows + i, w, d, zz, ldz); break;
        case 3: dot_1_3(rows + i, w, d, zz, ldz); break;
        default: dot_1_4(rows + i, w, d, zz, ldz); break;
      }
    }
  }
}

PROBE_CLONES
static void logits_impl(const rd_probe_heads *h, const float *const *rows, int64_t n, double *z) {
  int O = h->L * h->K;
  dot_rows(rows, n, h->d, h->W, O, z, O);
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

/* ---- block gradient ------------------------------------------------------------------------------- */

/* G[o, j] (+)= Σ_i r[i*O + o] x_ij for outputs [o0, o0 + OC), rows in order. */
#define DEF_BWD(OC)                                                                                      \
  INLINE void bwd_##OC(const float *const *x, int64_t n, int64_t d, const double *r, int O, int o0,       \
                       double *G, int accumulate) {                                                     \
    int64_t d8 = d & ~(int64_t)7;                                                                       \
    for (int64_t j = 0; j < d8; j += 8) {                                                               \
      v8d acc[OC];                                                                                      \
      for (int o = 0; o < OC; o++) acc[o] = (v8d){0, 0, 0, 0, 0, 0, 0, 0};                              \
      for (int64_t i = 0; i < n; i++) {                                                                 \
        v8d xv = ld8f(x[i] + j);                                                                        \
        const double *ri = r + i * O + o0;                                                              \
        for (int o = 0; o < OC; o++) acc[o] += ri[o] * xv;                                              \
      }                                                                                                 \
      for (int o = 0; o < OC; o++) {                                                                    \
        double *g = G + (int64_t)(o0 + o) * d + j;                                                      \
        st8d(g, accumulate ? ld8d(g) + acc[o] : acc[o]);                                                \
      }                                                                                                 \
    }                                                                                                   \
    for (int64_t j = d8; j < d; j++)                                                                    \
      for (int o = 0; o < OC; o++) {                                                                    \
        double s = 0.0;                                                                                 \
        for (int64_t i = 0; i < n; i++) s += r[i * O + o0 + o] * (double)x[i][j];                       \
        double *g = G + (int64_t)(o0 + o) * d + j;                                                      \
        *g = accumulate ? *g + s : s;                                                                   \
      }                                                                                                 \
  }
DEF_BWD(1)
DEF_BWD(2)
DEF_BWD(3)
DEF_BWD(4)
DEF_BWD(5)
DEF_BWD(6)

/* Rows per pass: logits and residuals of a pass are formed first, then its gradient. Passes are
 * combined in order (out + pass), so the sum over rows is that of the fixed chunking. */
#define GRAD_CHUNK RD_PROBE_CHUNK

PROBE_CLONES
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
  for (int64_t c0 = 0; c0 < n || (c0 == 0 && n == 0); c0 += GRAD_CHUNK) {
    int64_t cn = n - c0 < GRAD_CHUNK ? n - c0 : GRAD_CHUNK;
    int acc = accumulate || c0 > 0;
    const float *const *x = blk->rows + c0;
    if (cn > 0) dot_rows(x, cn, d, h->W, O, z, O);
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
    for (int o0 = 0; o0 < O; o0 += 6) {
      int oc = O - o0 < 6 ? O - o0 : 6;
      switch (oc) {
        case 1: bwd_1(x, cn, d, r, O, o0, G, acc); break;
        case 2: bwd_2(x, cn, d, r, O, o0, G, acc); break;
        case 3: bwd_3(x, cn, d, r, O, o0, G, acc); break;
        case 4: bwd_4(x, cn, d, r, O, o0, G, acc); break;
        case 5: bwd_5(x, cn, d, r, O, o0, G, acc); break;
        default: bwd_6(x, cn, d, r, O, o0, G, acc); break;
      }
    }
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

/* ---- small vector kernels ----------------------------------------------------------------------------- */

PROBE_CLONES
double rd_probe_sumsq(const double *x, int64_t n) {
  v8d acc = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t n8 = n & ~(int64_t)7;
  for (int64_t i = 0; i < n8; i += 8) {
    v8d v = ld8d(x + i);
    acc += v * v;
  }
  double s = lanes_sum(acc);
  for (int64_t i = n8; i < n; i++) s += x[i] * x[i];
  return s;
}

PROBE_CLONES
void rd_probe_add(double *out, const double *x, int64_t n) {
  for (int64_t i = 0; i < n; i++) out[i] = out[i] + x[i];
}

PROBE_CLONES
void rd_probe_adamw_step(const rd_adamw *a, int64_t t, double lr_t, double gscale, const double *g, double *p,
                         double *m, double *v, int64_t n) {
  double b1 = a->beta1, b2 = a->beta2, eps = a->eps;
  double decay = 1.0 - lr_t * a->wd;
  double bc1 = 1.0 - pow(b1, (double)(t + 1)), bc2 = 1.0 - pow(b2, (double)(t + 1));
  double step = lr_t / bc1, sbc2 = sqrt(bc2);
  for (int64_t i = 0; i < n; i++) {
    double gi = g[i] * gscale;
    double pi = p[i] * decay;
    double mi = b1 * m[i] + (1.0 - b1) * gi;
    double vi = b2 * v[i] + (1.0 - b2) * (gi * gi);
    m[i] = mi;
    v[i] = vi;
    p[i] = pi - step * (mi / (sqrt(vi) / sbc2 + eps));
  }
}

/* ---- distances ------------------------------------------------------------------------------------------ */

PROBE_CLONES
static void sqdist_impl(const float *const *rows, int64_t n, int64_t d, const double *C, int64_t c, double *D) {
  int64_t d8 = d & ~(int64_t)7;
  for (int64_t i = 0; i < n; i++) {
    const float *x = rows[i];
    for (int64_t k = 0; k < c; k++) {
      const double *ck = C + k * d;
      v8d acc = {0, 0, 0, 0, 0, 0, 0, 0};
      for (int64_t j = 0; j < d8; j += 8) {
        v8d t = ld8f(x + j) - ld8d(ck + j);
        acc += t * t;
      }
      double s = lanes_sum(acc);
      for (int64_t j = d8; j < d; j++) {
        double t = (double)x[j] - ck[j];
        s += t * t;
      }
      D[i * c + k] = s;
    }
  }
}

void rd_probe_sqdist_cpu(const float *const *rows, int64_t n, int64_t d, const double *C, int64_t c, double *D) {
  if (n > 0 && c > 0) sqdist_impl(rows, n, d, C, c, D);
}

PROBE_CLONES
static void sqdist_f64_impl(const double *X, int64_t n, int64_t d, const double *C, int64_t c, double *D) {
  int64_t d8 = d & ~(int64_t)7;
  for (int64_t i = 0; i < n; i++) {
    const double *x = X + i * d;
    for (int64_t k = 0; k < c; k++) {
      const double *ck = C + k * d;
      v8d acc = {0, 0, 0, 0, 0, 0, 0, 0};
      for (int64_t j = 0; j < d8; j += 8) {
        v8d t = ld8d(x + j) - ld8d(ck + j);
        acc += t * t;
      }
      double s = lanes_sum(acc);
      for (int64_t j = d8; j < d; j++) {
        double t = x[j] - ck[j];
        s += t * t;
      }
      D[i * c + k] = s;
    }
  }
}

void rd_probe_sqdist_f64(const double *X, int64_t n, int64_t d, const double *C, int64_t c, double *D) {
  if (n > 0 && c > 0) sqdist_f64_impl(X, n, d, C, c, D);
}

PROBE_CLONES
static void dot_f64_impl(const double *X, int64_t n, int64_t d, const double *C, int64_t c, double *D) {
  int64_t d8 = d & ~(int64_t)7;
  for (int64_t i = 0; i < n; i++) {
    const double *x = X + i * d;
    for (int64_t k = 0; k < c; k++) {
      const double *ck = C + k * d;
      v8d acc = {0, 0, 0, 0, 0, 0, 0, 0};
      for (int64_t j = 0; j < d8; j += 8) acc += ld8d(x + j) * ld8d(ck + j);
      double s = lanes_sum(acc);
      for (int64_t j = d8; j < d; j++) s += x[j] * ck[j];
      D[i * c + k] = s;
    }
  }
}

void rd_probe_dot_f64(const double *X, int64_t n, int64_t d, const double *C, int64_t c, double *D) {
  if (n > 0 && c > 0) dot_f64_impl(X, n, d, C, c, D);
}

PROBE_CLONES
static void lsolve_impl(const double *L, int64_t d, const float *const *rows, int64_t n, double *Y) {
  for (int64_t i = 0; i < n; i++) {
    const float *x = rows[i];
    double *y = Y + i * d;
    for (int64_t j = 0; j < d; j++) {
      const double *lj = L + j * d;
      int64_t j8 = j & ~(int64_t)7;
      v8d acc = {0, 0, 0, 0, 0, 0, 0, 0};
      for (int64_t k = 0; k < j8; k += 8) acc += ld8d(lj + k) * ld8d(y + k);
      double s = lanes_sum(acc);
      for (int64_t k = j8; k < j; k++) s += lj[k] * y[k];
      y[j] = ((double)x[j] - s) / lj[j];
    }
  }
}

void rd_probe_lsolve(const double *L, int64_t d, const float *const *rows, int64_t n, double *Y) {
  if (n > 0) lsolve_impl(L, d, rows, n, Y);
}

/* ---- half precision ---------------------------------------------------------------------------------------- */

float rd_half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 0x1Fu, f = h & 0x3FFu, bits;
  if (e == 0) {
    if (f == 0) {
      bits = sign;
    } else { /* subnormal: f · 2^-24, exact in binary32 */
      float v = (float)f * 0x1p-24f;
      memcpy(&bits, &v, sizeof bits);
      bits |= sign;
    }
  } else if (e == 31) {
    bits = sign | 0x7F800000u | (f << 13);
  } else {
    bits = sign | ((e - 15 + 127) << 23) | (f << 13);
  }
  float out;
  memcpy(&out, &bits, sizeof out);
  return out;
}

float rd_bf16_to_float(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16;
  float out;
  memcpy(&out, &bits, sizeof out);
  return out;
}
