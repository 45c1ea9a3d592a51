/* The probe report's arithmetic (docs/reference.md, 'probe report'): linear heads on frozen float32 features with float64
 * accumulation. Every per-row value (logits, residuals, distances) depends only on the row, and
 * every sum over rows runs in a fixed order over a fixed block of rows, so the values are the same
 * whichever rank, vector width or backend computes them. The CPU reference kernels are here; a
 * backend may replace them through `struct rd_probe_kernels` (the CUDA module does). */
#ifndef RMDIAG_PROBE_H
#define RMDIAG_PROBE_H

#include <stddef.h>
#include <stdint.h>

/* MRMBench's batch, and the fixed sub-blocks ("units") a batch is cut into: unit u of a batch of
 * b rows holds batch positions rd_split_range(b, RD_PROBE_UNITS, u). A batch's gradient is the
 * fixed pairwise tree over its units' partial gradients, so it is a function of the batch only;
 * ranks own contiguous ranges of units, so at most RD_PROBE_UNITS ranks train one configuration. */
#define RD_PROBE_BATCH 128
#define RD_PROBE_UNITS 8

/* Heads: L independent linear heads (one per learning rate, or 1) of K outputs each (K = 1: one
 * logit with binary cross-entropy; K >= 2: softmax cross-entropy), O = L*K rows of W [O, d]. */
typedef struct rd_probe_heads {
  int64_t d;
  int L, K;
  const double *W;  /* [L*K, d] row-major */
  const double *b;  /* [L*K] biases, or NULL (no bias) */
} rd_probe_heads;

/* A block of rows for a gradient: n rows (pointers to d floats), targets y[i] (class index; for
 * K = 1 the class is 0 or 1), and the factor applied to every row's residual (1/batch rows, or
 * 1/N for a full-batch objective). */
typedef struct rd_probe_block {
  const float *const *rows;
  int64_t n;
  const int32_t *y;
  double scale;
} rd_probe_block;

/* Rows per pass of the block gradient: a block of at most this many rows is summed in one pass,
 * so `accumulate` adds its whole partial to `out` (out + partial); a longer block is summed pass by
 * pass ((out + pass 1) + pass 2 ...). */
#define RD_PROBE_CHUNK 64

/* Length of a gradient vector: [G (O*d)] [gb (O) if biased] [loss (L) if with_loss]. */
static inline int64_t rd_probe_grad_len(const rd_probe_heads *h, int with_loss) {
  int64_t O = (int64_t)h->L * h->K;
  return O * h->d + (h->b ? O : 0) + (with_loss ? h->L : 0);
}

/* z[i*O + o] = Σ_j W[o, j] x_ij (+ b[o]) for n rows; the sum over j runs in 8 lanes (j mod 8)
 * combined pairwise, then the d mod 8 tail in order. */
void rd_probe_logits_cpu(const rd_probe_heads *h, const float *const *rows, int64_t n, double *z);

/* The block's partial gradient of the loss Σ_i scale · loss_i: G[o, j] = Σ_i r_io x_ij with
 * r_io = scale · (p_io − [o = y_i]) summed over rows in order; gb[o] = Σ_i r_io; loss[l] = Σ_i
 * scale · loss_il (only when with_loss). With `accumulate` the result is added to `out`
 * (out = out + partial, elementwise), otherwise stored. Returns the number of rows whose logits
 * were not finite (non-finite features), their indices (block positions) in bad[] when given,
 * or −1 when out of memory (more than 32 outputs need a heap buffer). */
int64_t rd_probe_block_grad_cpu(const rd_probe_heads *h, const rd_probe_block *blk, int with_loss, int accumulate,
                                double *out, int64_t *bad);

/* The value of a node of the fixed tree over units, computed in one pass: units 0..nu−1, unit u
 * holding rows [uoff[u], uoff[u+1]) of rows/y (uoff[0] = 0, at most RD_PROBE_CHUNK rows each); the
 * value is G of rd_probe_block_grad_cpu for each unit (stored, scale applied to the residuals),
 * combined left + right by the pairwise tree over units (a right subtree whose leaves are all at
 * or beyond nu is absent), stored into out [O*d]. The same bits as evaluating the tree with
 * rd_probe_block_grad_cpu leaf by leaf. Heads without bias only. Returns 0, or −1 when out of memory
 * or not applicable (a bias, a unit longer than RD_PROBE_CHUNK rows). */
int rd_probe_tree_grad_cpu(const rd_probe_heads *h, const float *const *rows, const int32_t *y, const int64_t *uoff,
                           int nu, double scale, double *out);

/* The instruction set the hot loops use ("avx512", "avx2" or "scalar"; RMDIAG_PROBE_SIMD forces
 * one). All compute the same bits: each lane accumulates with fused multiply-adds in a fixed order. */
const char *rd_probe_simd(void);
/* Uses instruction set `name` from now on (tests); returns -1 when the CPU lacks it. */
int rd_probe_simd_set(const char *name);

/* Residuals and losses of one row's logits for head layout (L, K): r[o] = p_o − [o = y] for each
 * head (unscaled); loss[l] += the head's cross-entropy when loss is not NULL. */
void rd_probe_residuals(int L, int K, const double *z, int32_t y, double *r, double *loss);

/* Predicted class of each head from one row's logits: K = 1: logit > 0; else the first maximum. */
void rd_probe_predict(int L, int K, const double *z, int32_t *cls);
/* A prediction within RD_PROBE_NEAR_TIE of a tie (K = 1: |logit|; else the top two logits' gap): one
 * that weights differing in the last bits (another backend) may decide the other way (docs/reference.md, 'Statistics'). */
#define RD_PROBE_NEAR_TIE 1e-9
int rd_probe_near_tie(int K, const double *zl);

/* Σ x_i² over n values in 8 lanes (fixed order). */
double rd_probe_sumsq(const double *x, int64_t n);
/* out = out + x, and out = a + b (elementwise; out may be a) */
void rd_probe_add(double *out, const double *x, int64_t n);
void rd_probe_add3(double *out, const double *a, const double *b, int64_t n);
/* G[k, j] = G[k, j] + r[i·K + k]·X[i·d + j] for rows i = 0..n−1 in order (each a product, then a
 * sum: no fused multiply-add), for G [K, d] and X [n, d] row-major: the same bits as adding row by
 * row. */
void rd_probe_outer_acc(double *G, int64_t K, int64_t d, const double *r, const double *X, int64_t n);
/* y_j = ((double)x_j − mu_j) · inv_sd_j, elementwise (a standardized row in float64). */
void rd_probe_standardize(const float *x, const double *mu, const double *inv_sd, int64_t d, double *y);

/* One AdamW step (PyTorch semantics) on n parameters at step t (0-based), learning rate lr_t:
 * p *= 1 − lr_t·wd; m = β1 m + (1−β1) g; v = β2 v + (1−β2) g²;
 * p −= (lr_t / (1−β1^(t+1))) · m / (sqrt(v) · (1/sqrt(1−β2^(t+1))) + eps). g is scaled by `gscale`
 * (the clipping factor) first. */
typedef struct rd_adamw {
  double beta1, beta2, eps, wd;
} rd_adamw;
void rd_probe_adamw_step(const rd_adamw *a, int64_t t, double lr_t, double gscale, const double *g, double *p,
                         double *m, double *v, int64_t n);

/* Squared Euclidean distances from n rows to c centres (double [c, d]): D[i*c + k] = Σ_j (x_ij −
 * C_kj)² in 8 lanes (fused multiply-adds, fixed order; same bits for every instruction set). */
void rd_probe_sqdist_cpu(const float *const *rows, int64_t n, int64_t d, const double *C, int64_t c, double *D);

/* The same for rows of doubles (X [n, d] row-major). */
void rd_probe_sqdist_f64(const double *X, int64_t n, int64_t d, const double *C, int64_t c, double *D);
/* Dot products D[i*c + k] = Σ_j x_ij C_kj of double rows, 8 lanes (fixed order). */
void rd_probe_dot_f64(const double *X, int64_t n, int64_t d, const double *C, int64_t c, double *D);
/* Forward substitution y = L⁻¹ x for n rows (L lower triangular [d, d] row-major, x float rows):
 * y_j = (x_j − Σ_{k<j} L_jk y_k) / L_jj, the sum in 8 lanes. */
void rd_probe_lsolve(const double *L, int64_t d, const float *const *rows, int64_t n, double *Y);

/* The kernel table a backend may fill (NULL entries fall back to the CPU reference). A GPU backend
 * keeps the rows of one training run on the device between calls. */
typedef struct rd_probe_kernels {
  /* Uploads n rows of d floats (row-major) and returns a handle, or NULL with err filled. */
  void *(*rows_upload)(const float *X, int64_t n, int64_t d, char *err, size_t errlen);
  void (*rows_free)(void *handle);
  /* Partial gradients of `nblk` blocks of uploaded rows: block k holds rows [row0[k],
   * row0[k] + nrows[k]) of the handle with targets y + row0[k]; out + k * len receives block k's
   * gradient vector (rd_probe_grad_len with with_loss = 0), stored (not accumulated). */
  int (*block_grads)(void *handle, const rd_probe_heads *h, int nblk, const int64_t *row0, const int64_t *nrows,
                     const int32_t *y, double scale, double *out, char *err, size_t errlen);
} rd_probe_kernels;

#endif
