/* The probe's hot loops, written once over an 8-lane vector of doubles and compiled once per
 * instruction set (probe_cpu.c includes this file with the V8_* operations of AVX-512, AVX2 + FMA,
 * or plain C with fma()). Every lane accumulates with a fused multiply-add in a fixed order, so all
 * versions compute the same bits:
 *   logits:   lane l of z_io sums j = l, l + 8, ... (fma), lanes combined pairwise, then the d mod 8
 *             tail in order (fma);
 *   gradient: G[o, j] sums the rows of a pass in order (fma from 0), then out + pass.
 * Blocking (rows and outputs per pass over the columns) only groups independent sums. */

#define KCAT2(a, b) a##_##b
#define KCAT(a, b) KCAT2(a, b)
#define KFN(name) KCAT(name, V8_ISA)

static inline __attribute__((always_inline)) double KFN(lanes)(V8 v) {
  double t[8];
  V8_ST(t, v);
  return ((t[0] + t[1]) + (t[2] + t[3])) + ((t[4] + t[5]) + (t[6] + t[7]));
}

/* NR rows x OC outputs: z[r * ldz + o] = x_r . w_o */
#define KDOT(NR, OC)                                                                                     \
  static inline __attribute__((always_inline)) void KFN(dot_##NR##_##OC)(                               \
      const float *const *x, const double *const *w, int64_t d, double *z, int64_t ldz) {               \
    V8 acc[NR][OC];                                                                                     \
    for (int r = 0; r < NR; r++)                                                                        \
      for (int o = 0; o < OC; o++) acc[r][o] = V8_ZERO();                                               \
    int64_t d8 = d & ~(int64_t)7;                                                                       \
    for (int64_t j = 0; j < d8; j += 8) {                                                               \
      V8 xv[NR];                                                                                        \
      for (int r = 0; r < NR; r++) xv[r] = V8_LDF(x[r] + j);                                            \
      for (int o = 0; o < OC; o++) {                                                                    \
        V8 wv = V8_LDD(w[o] + j);                                                                       \
        for (int r = 0; r < NR; r++) acc[r][o] = V8_FMA(wv, xv[r], acc[r][o]);                          \
      }                                                                                                 \
    }                                                                                                   \
    for (int r = 0; r < NR; r++)                                                                        \
      for (int o = 0; o < OC; o++) {                                                                    \
        double s = KFN(lanes)(acc[r][o]);                                                               \
        for (int64_t j = d8; j < d; j++) s = fma(w[o][j], (double)x[r][j], s);                          \
        z[r * ldz + o] = s;                                                                             \
      }                                                                                                 \
  }
KDOT(4, 1)
KDOT(4, 2)
KDOT(4, 3)
KDOT(4, 4)
KDOT(4, 5)
KDOT(4, 6)
KDOT(1, 1)
KDOT(1, 2)
KDOT(1, 3)
KDOT(1, 4)
KDOT(1, 5)
KDOT(1, 6)
#undef KDOT

/* Outputs per pass over a row: 6 with 32 vector registers, fewer with 16. */
#ifndef V8_DOT_OUT
#define V8_DOT_OUT 6
#endif

static void KFN(dot_rows)(const float *const *rows, int64_t n, int64_t d, const double *W, int O, double *z,
                          int64_t ldz) {
  for (int o0 = 0; o0 < O;) {
    int left = O - o0, oc = left <= V8_DOT_OUT ? left : (left < 2 * V8_DOT_OUT ? (left + 1) / 2 : V8_DOT_OUT);
    const double *w[6];
    for (int o = 0; o < oc; o++) w[o] = W + (int64_t)(o0 + o) * d;
    int64_t i = 0;
#define KCASE(NR, OC) case OC: KFN(dot_##NR##_##OC)(rows + i, w, d, zz, ldz); break;
    for (; i + 4 <= n; i += 4) {
      double *zz = z + i * ldz + o0;
      switch (oc) { KCASE(4, 1) KCASE(4, 2) KCASE(4, 3) KCASE(4, 4) KCASE(4, 5) default: KFN(dot_4_6)(rows + i, w, d, zz, ldz); }
    }
    for (; i < n; i++) {
      double *zz = z + i * ldz + o0;
      switch (oc) { KCASE(1, 1) KCASE(1, 2) KCASE(1, 3) KCASE(1, 4) KCASE(1, 5) default: KFN(dot_1_6)(rows + i, w, d, zz, ldz); }
    }
#undef KCASE
    o0 += oc;
  }
}

/* One step of 8 columns of the forward tile (full vectors): each row's 8 values widened, each
 * output's 8 weights loaded once and used for every row. (With V8_HALF, AVX2, the tile below runs
 * the low and the high halves as separate passes instead.) */
#define FT_BODY(R, OC)                                                                                   \
  V8 xv[R];                                                                                             \
  for (int r = 0; r < R; r++) xv[r] = V8_LDF(x[r] + j);                                                 \
  for (int o = 0; o < OC; o++) {                                                                        \
    V8 wv = V8_LDD(w[o] + j);                                                                           \
    V8_REG(wv);                                                                                         \
    for (int r = 0; r < R; r++) acc[r][o] = V8_FMA(wv, xv[r], acc[r][o]);                               \
  }

/* One row of the backward tile (full vectors): the row's JB vectors of columns widened, times each
 * output's residual. (With V8_HALF, AVX2, the half-vector tile further down is used instead.) */
#define BT_BODY(OC, JB)                                                                                  \
  V8 xv[JB];                                                                                            \
  for (int b = 0; b < JB; b++) xv[b] = V8_LDF(x[i] + j0 + 8 * b);                                       \
  const double *ri = r + i * O + o0;                                                                    \
  for (int o = 0; o < OC; o++) {                                                                        \
    V8 rv = V8_SET1(ri[o]);                                                                             \
    for (int b = 0; b < JB; b++) acc[o][b] = V8_FMA(rv, xv[b], acc[o][b]);                              \
  }

/* G[o, j] (+)= Σ_i r[i*O + o] x_ij over rows in order, for outputs [o0, o0 + OC), JB vectors of
 * columns at a time (OC * JB accumulators in registers). */
#define KBWD(OC, JB)                                                                                     \
  static inline __attribute__((always_inline)) void KFN(bwd_##OC##_##JB)(                               \
      const float *const *x, int64_t n, int64_t j0, const double *r, int O, int o0, double *G, int64_t d, \
      int accumulate) {                                                                                 \
    V8 acc[OC][JB];                                                                                     \
    for (int o = 0; o < OC; o++)                                                                        \
      for (int b = 0; b < JB; b++) acc[o][b] = V8_ZERO();                                               \
    for (int64_t i = 0; i < n; i++) {                                                                   \
      BT_BODY(OC, JB)                                                                                   \
    }                                                                                                   \
    for (int o = 0; o < OC; o++)                                                                        \
      for (int b = 0; b < JB; b++) {                                                                    \
        double *g = G + (int64_t)(o0 + o) * d + j0 + 8 * b;                                             \
        V8_ST(g, accumulate ? V8_ADD(V8_LDD(g), acc[o][b]) : acc[o][b]);                                \
      }                                                                                                 \
  }
#if V8_ACC >= 24
KBWD(1, 8)
KBWD(2, 8)
KBWD(3, 8)
KBWD(4, 4)
KBWD(5, 4)
KBWD(6, 4)
#define KBWD_JB(oc) ((oc) <= 3 ? 8 : 4)
#else
KBWD(1, 2)
KBWD(2, 2)
KBWD(3, 2)
KBWD(4, 1)
KBWD(5, 1)
KBWD(6, 1)
#define KBWD_JB(oc) ((oc) <= 3 ? 2 : 1)
#endif
#undef KBWD

static void KFN(bwd_rows)(const float *const *x, int64_t n, int64_t d, const double *r, int O, double *G,
                          int accumulate) {
  int64_t d8 = d & ~(int64_t)7;
  for (int o0 = 0; o0 < O;) {
    int left = O - o0, oc = left <= 6 ? left : (left < 12 ? (left + 1) / 2 : 6);
    int64_t jb = KBWD_JB(oc), j = 0;
    for (; j + 8 * jb <= d8; j += 8 * jb) {
#if V8_ACC >= 24
      switch (oc) {
        case 1: KFN(bwd_1_8)(x, n, j, r, O, o0, G, d, accumulate); break;
        case 2: KFN(bwd_2_8)(x, n, j, r, O, o0, G, d, accumulate); break;
        case 3: KFN(bwd_3_8)(x, n, j, r, O, o0, G, d, accumulate); break;
        case 4: KFN(bwd_4_4)(x, n, j, r, O, o0, G, d, accumulate); break;
        case 5: KFN(bwd_5_4)(x, n, j, r, O, o0, G, d, accumulate); break;
        default: KFN(bwd_6_4)(x, n, j, r, O, o0, G, d, accumulate); break;
      }
#else
      switch (oc) {
        case 1: KFN(bwd_1_2)(x, n, j, r, O, o0, G, d, accumulate); break;
        case 2: KFN(bwd_2_2)(x, n, j, r, O, o0, G, d, accumulate); break;
        case 3: KFN(bwd_3_2)(x, n, j, r, O, o0, G, d, accumulate); break;
        case 4: KFN(bwd_4_1)(x, n, j, r, O, o0, G, d, accumulate); break;
        case 5: KFN(bwd_5_1)(x, n, j, r, O, o0, G, d, accumulate); break;
        default: KFN(bwd_6_1)(x, n, j, r, O, o0, G, d, accumulate); break;
      }
#endif
    }
    /* the remaining full vectors one at a time, then the scalar tail (same order per element) */
    for (; j < d8; j += 8)
      for (int o = 0; o < oc; o++) {
        V8 acc = V8_ZERO();
        for (int64_t i = 0; i < n; i++) acc = V8_FMA(V8_SET1(r[i * O + o0 + o]), V8_LDF(x[i] + j), acc);
        double *g = G + (int64_t)(o0 + o) * d + j;
        V8_ST(g, accumulate ? V8_ADD(V8_LDD(g), acc) : acc);
      }
    for (int64_t jj = d8; jj < d; jj++)
      for (int o = 0; o < oc; o++) {
        double s = 0.0;
        for (int64_t i = 0; i < n; i++) s = fma(r[i * O + o0 + o], (double)x[i][jj], s);
        double *g = G + (int64_t)(o0 + o) * d + jj;
        *g = accumulate ? *g + s : s;
      }
    o0 += oc;
  }
}

/* Squared distances of float rows to double centres: lane l of D[i, k] sums (x_ij − c_kj)² over
 * j = l, l + 8, ... (fma), lanes combined pairwise, then the tail in order; 4 centres per pass. */
static void KFN(sqdist_rows)(const float *const *rows, int64_t n, int64_t d, const double *C, int64_t c, double *D) {
  int64_t d8 = d & ~(int64_t)7;
  for (int64_t i = 0; i < n; i++) {
    const float *x = rows[i];
    for (int64_t k0 = 0; k0 < c; k0 += 4) {
      int kc = c - k0 < 4 ? (int)(c - k0) : 4;
      V8 acc[4] = {V8_ZERO(), V8_ZERO(), V8_ZERO(), V8_ZERO()};
      for (int64_t j = 0; j < d8; j += 8) {
        V8 xv = V8_LDF(x + j);
        for (int k = 0; k < kc; k++) {
          V8 t = V8_SUB(xv, V8_LDD(C + (k0 + k) * d + j));
          acc[k] = V8_FMA(t, t, acc[k]);
        }
      }
      for (int k = 0; k < kc; k++) {
        const double *ck = C + (k0 + k) * d;
        double s = KFN(lanes)(acc[k]);
        for (int64_t j = d8; j < d; j++) {
          double t = (double)x[j] - ck[j];
          s = fma(t, t, s);
        }
        D[i * c + k0 + k] = s;
      }
    }
  }
}


/* ---- the gradient of a node of units (rd_probe_tree_grad_cpu) ------------------------------------------------------
 * Forward: the logits of all the node's rows, the columns in blocks of PROBE_FWD_JC so that a block
 * of W stays in L1 while the rows stream past; st[(i * O + o) * 8 + l] carries lane l of logit
 * (i, o) from block to block (j = l, l + 8, ... in order, fma from zero), so the blocks change
 * nothing: the lanes are then combined pairwise and the d mod 8 tail added in order, as in
 * dot_rows. Backward: for each vector block of columns, every unit's partial (rows in order, fma
 * from zero) in registers, the units combined by the fixed pairwise tree (left + right) on a
 * small stack, and the node's value stored once. Per element this is block_grad's arithmetic. */
#ifndef V8_REG
#define V8_REG(v) ((void)0)
#endif
#ifndef PROBE_FWD_PF
#define PROBE_FWD_PF 512
#endif

#ifndef PROBE_BWD_PF
#define PROBE_BWD_PF 4
#endif
#ifndef PROBE_FWD_JC
#define PROBE_FWD_JC 512
#endif

/* RX rows x OC outputs over columns [j0, j1), the lane state st (row stride ldst) read unless
 * `first` and written back. While it runs, the rows are read ahead: PROBE_FWD_PF floats ahead in
 * the same row and, past the block's end, in the rows xn[r] that the next tile reads (from their
 * first column of the block), so that memory streams without a gap from tile to tile. */
#ifdef V8_HALF
/* With halves (AVX2): the low lanes over the whole block, then the high lanes, so that a pass holds
 * R OC accumulators, not 2 R OC, and takes more rows at a time (each weight vector loaded once per
 * step serves R rows). The block's rows are in L1 for the second pass. Each lane's chain is the same
 * (its columns in order, from its state): the same bits. */
#define KFT(NAME, OC, RX)                                                                                \
  static inline __attribute__((always_inline)) void KFN(NAME)(const float *const *x, const float *const *xn, \
                                                              const double *const *w, int64_t j0, int64_t j1, \
                                                              double *st, int64_t ldst, int first) {     \
    enum { R = RX };                                                                                    \
    for (int h = 0; h < 2; h++) {                                                                       \
      V8_HALF acc[R][OC];                                                                               \
      for (int r = 0; r < R; r++)                                                                       \
        for (int o = 0; o < OC; o++) acc[r][o] = first ? V8_HALF_ZERO() : V8_HALF_LDD(st + r * ldst + 8 * o + 4 * h); \
      for (int64_t j = j0 + 4 * h; j < j1; j += 8) {                                                    \
        if (h == 0) {                                                                                   \
          int64_t ja = j + PROBE_FWD_PF;                                                                \
          if ((ja & 15) == 0)                                                                           \
            for (int r = 0; r < R; r++) __builtin_prefetch(ja < j1 ? x[r] + ja : xn[r] + (ja - j1), 0, 3); \
        }                                                                                               \
        V8_HALF xh[R];                                                                                  \
        for (int r = 0; r < R; r++) xh[r] = V8_HALF_LDF(x[r] + j);                                      \
        for (int o = 0; o < OC; o++) {                                                                  \
          V8_HALF wh = V8_HALF_LDD(w[o] + j);                                                           \
          __asm__("" : "+x"(wh)); /* in a register: loaded once, not folded into each row's multiply-add */ \
          for (int r = 0; r < R; r++) acc[r][o] = V8_HALF_FMA(wh, xh[r], acc[r][o]);                   \
        }                                                                                               \
      }                                                                                                 \
      for (int r = 0; r < R; r++)                                                                       \
        for (int o = 0; o < OC; o++) V8_HALF_ST(st + r * ldst + 8 * o + 4 * h, acc[r][o]);              \
    }                                                                                                   \
  }
#else
#define KFT(NAME, OC, RX)                                                                                \
  static inline __attribute__((always_inline)) void KFN(NAME)(const float *const *x, const float *const *xn, \
                                                              const double *const *w, int64_t j0, int64_t j1, \
                                                              double *st, int64_t ldst, int first) {     \
    enum { R = RX };                                                                                    \
    V8 acc[R][OC];                                                                                      \
    for (int r = 0; r < R; r++)                                                                         \
      for (int o = 0; o < OC; o++) acc[r][o] = first ? V8_ZERO() : V8_LDD(st + r * ldst + 8 * o);      \
    for (int64_t j = j0; j < j1; j += 8) {                                                              \
      int64_t ja = j + PROBE_FWD_PF;                                                                    \
      for (int r = 0; r < R; r++) __builtin_prefetch(ja < j1 ? x[r] + ja : xn[r] + (ja - j1), 0, 3);    \
      FT_BODY(R, OC)                                                                                    \
    }                                                                                                   \
    for (int r = 0; r < R; r++)                                                                         \
      for (int o = 0; o < OC; o++) V8_ST(st + r * ldst + 8 * o, acc[r][o]);                             \
  }

#endif

/* OC outputs x JB vectors of columns from j0, over the units of a node (see above); stk holds
 * (levels) x OC x JB x 8 doubles. */
#define KBT(NAME, OC, JBX)                                                                               \
  static inline __attribute__((always_inline)) void KFN(NAME)(                                          \
      const float *const *x, const int64_t *uoff, int nu, const double *r, int O, int o0, int64_t j0,   \
      double *stk, double *G, int64_t d) {                                                              \
    enum { JB = JBX };                                                                                  \
    const int64_t lev = (int64_t)OC * JB * 8;                                                           \
    int top = 0;                                                                                        \
    V8 acc[OC][JB];                                                                                     \
    for (int u = 0; u == 0 || u < nu; u++) { /* nu >= 1 */                                             \
      for (int o = 0; o < OC; o++)                                                                      \
        for (int b = 0; b < JB; b++) acc[o][b] = V8_ZERO();                                             \
      for (int64_t i = uoff[u]; i < uoff[u + 1]; i++) {                                                 \
        /* the row's columns PROBE_BWD_PF blocks before (its lines come from L2 or L3) */                   \
        for (int q = 0; q < (JB * 32 + 63) / 64; q++)                                                   \
          __builtin_prefetch(x[i] + j0 - PROBE_BWD_PF * 8 * JB + 16 * q, 0, 3);                         \
        BT_BODY(OC, JB)                                                                                 \
      }                                                                                                 \
      for (int k = u; k & 1; k >>= 1) { /* a right child: left + right */                              \
        const double *s = stk + --top * lev;                                                            \
        for (int o = 0; o < OC; o++)                                                                    \
          for (int b = 0; b < JB; b++) acc[o][b] = V8_ADD(V8_LDD(s + (o * JB + b) * 8), acc[o][b]);     \
      }                                                                                                 \
      if (u + 1 < nu) {                                                                                 \
        double *s = stk + top++ * lev;                                                                  \
        for (int o = 0; o < OC; o++)                                                                    \
          for (int b = 0; b < JB; b++) V8_ST(s + (o * JB + b) * 8, acc[o][b]);                          \
      }                                                                                                 \
    }                                                                                                   \
    /* subtrees left open by absent leaves (nu not a power of two): fold from the right */              \
    while (top > 0) {                                                                                   \
      const double *s = stk + --top * lev;                                                              \
      for (int o = 0; o < OC; o++)                                                                      \
        for (int b = 0; b < JB; b++) acc[o][b] = V8_ADD(V8_LDD(s + (o * JB + b) * 8), acc[o][b]);       \
    }                                                                                                   \
    for (int o = 0; o < OC; o++)                                                                        \
      for (int b = 0; b < JB; b++) V8_ST(G + (int64_t)(o0 + o) * d + j0 + 8 * b, acc[o][b]);            \
  }

#ifdef V8_HALF /* the backward's half-vector tile follows */
#define KNODE(OC)                                                                                        \
  KFT(ft_##OC, OC, V8_FWD_ROWS(OC))                                                                     \
  KFT(ft1_##OC, OC, 1)
#else
#define KNODE(OC)                                                                                        \
  KFT(ft_##OC, OC, V8_FWD_ROWS(OC))                                                                     \
  KFT(ft1_##OC, OC, 1)                                                                                  \
  KBT(bt_##OC, OC, V8_BWD_JB(OC))                                                                       \
  KBT(bt1_##OC, OC, 1)
#endif
KNODE(1)
KNODE(2)
KNODE(3)
#if V8_NODE_OC >= 4
KNODE(4)
KNODE(5)
KNODE(6)
#endif
#if V8_NODE_OC >= 7
KNODE(7)
KNODE(8)
KNODE(9)
#endif
#undef KNODE
#undef KFT
#undef KBT

#ifdef V8_HALF
/* With halves (AVX2): all of a node's outputs (up to 9) in one pass over its rows, 4 columns (half
 * a vector) at a time: OC accumulators, the row's 4 values widened once, each residual broadcast
 * from memory into its multiply-add. (The full-vector tiles above take 3 outputs a pass and so read
 * every row three times; with rows from L2 or L3 that reading, not the arithmetic, was the cost.)
 * The columns go in blocks of ns strips of 4; within a block, each unit's rows in pieces of
 * PROBE_BWDH_ROWS, and for each piece every strip of the block, so that the rows being read at a
 * time are few (their pages stay in the TLB, their lines in L1) and each is read along 4 ns
 * columns. Between pieces a strip's sums wait in lst (ns x OC x 4 doubles, in L1); after a unit's
 * last piece they go through the tree as above, on a stack of ns-strip levels. Each element is the
 * same fma chain over the rows in order and the same tree over the units: the same bits. */
#define KBH(OC)                                                                                          \
  static inline __attribute__((always_inline)) void KFN(bth_##OC)(                                     \
      const float *const *x, const int64_t *uoff, int nu, const double *r, int O, int o0, int64_t jb0,  \
      int64_t ns, double *lst, double *stk, double *G, int64_t d) {                                     \
    const int64_t vs = (int64_t)OC * 4, lev = ns * vs;                                                  \
    int top = 0;                                                                                        \
    for (int u = 0; u < nu; u++) {                                                                      \
      int pops = 0;                                                                                     \
      for (int k = u; k & 1; k >>= 1) pops++; /* a right child: left + right, per level */             \
      const int push = u + 1 < nu;                                                                      \
      int64_t i0 = uoff[u];                                                                             \
      const int64_t i1 = uoff[u + 1];                                                                   \
      do { /* at least one piece: an empty unit's sums are zeros */                                     \
        const int64_t ie = i1 - i0 > PROBE_BWDH_ROWS ? i0 + PROBE_BWDH_ROWS : i1;                       \
        const int first = i0 == uoff[u], last = ie == i1;                                               \
        for (int64_t s = ns - 1; s >= 0; s--) {                                                         \
          const int64_t j0 = jb0 + 4 * s;                                                               \
          double *ls = lst + s * vs;                                                                    \
          V8_HALF acc[OC];                                                                              \
          for (int o = 0; o < OC; o++) acc[o] = first ? V8_HALF_ZERO() : V8_HALF_LDD(ls + 4 * o);       \
          if ((j0 & 15) == 0 && j0 >= 16 * PROBE_BWDH_PF) /* a line starts here: the rows' lines before */ \
            for (int64_t i = i0; i < ie; i++) __builtin_prefetch(x[i] + j0 - 16 * PROBE_BWDH_PF, 0, 3); \
          for (int64_t i = i0; i < ie; i++) {                                                           \
            V8_HALF xh = V8_HALF_LDF(x[i] + j0);                                                        \
            const double *ri = r + i * O + o0;                                                          \
            for (int o = 0; o < OC; o++) acc[o] = V8_HALF_FMA(V8_HALF_SET1(ri[o]), xh, acc[o]);        \
          }                                                                                             \
          if (!last) {                                                                                  \
            for (int o = 0; o < OC; o++) V8_HALF_ST(ls + 4 * o, acc[o]);                                \
            continue;                                                                                   \
          }                                                                                             \
          int t = top;                                                                                  \
          for (int q = 0; q < pops; q++) {                                                              \
            const double *sp = stk + --t * lev + s * vs;                                                \
            for (int o = 0; o < OC; o++) acc[o] = V8_HALF_ADD(V8_HALF_LDD(sp + 4 * o), acc[o]);         \
          }                                                                                             \
          if (push) {                                                                                   \
            double *sp = stk + t * lev + s * vs;                                                        \
            for (int o = 0; o < OC; o++) V8_HALF_ST(sp + 4 * o, acc[o]);                                \
            continue;                                                                                   \
          }                                                                                             \
          while (t > 0) { /* subtrees left open by absent leaves: fold from the right */                \
            const double *sp = stk + --t * lev + s * vs;                                                \
            for (int o = 0; o < OC; o++) acc[o] = V8_HALF_ADD(V8_HALF_LDD(sp + 4 * o), acc[o]);         \
          }                                                                                             \
          for (int o = 0; o < OC; o++) V8_HALF_ST(G + (int64_t)(o0 + o) * d + j0, acc[o]);              \
        }                                                                                               \
        i0 = ie;                                                                                        \
      } while (i0 < i1);                                                                                \
      top += push - pops;                                                                               \
    }                                                                                                   \
  }
KBH(1)
KBH(2)
KBH(3)
KBH(4)
KBH(5)
KBH(6)
KBH(7)
KBH(8)
KBH(9)
#undef KBH
#endif

#define KSW(M)                 \
  switch (oc) {                \
    case 1: M(1); break;       \
    case 2: M(2); break;       \
    default: M(3); break;      \
    KSW_MORE(M)                \
  }
#if V8_NODE_OC >= 7
#define KSW_MORE(M) case 4: M(4); break; case 5: M(5); break; case 6: M(6); break; \
                    case 7: M(7); break; case 8: M(8); break; case 9: M(9); break;
#elif V8_NODE_OC >= 4
#define KSW_MORE(M) case 4: M(4); break; case 5: M(5); break; case 6: M(6); break;
#else
#define KSW_MORE(M)
#endif

/* Logits z[i * O + o] of n rows (st: n * O * 8 doubles of lane state): for each block of
 * PROBE_FWD_JC columns (its part of W stays in L1), the rows in tiles of V8_FWD_ROWS(oc) (then one
 * at a time), each tile reading ahead into the next one's rows (the first tile's of the next block
 * at the end of a block). */
static void KFN(fwd_node)(const float *const *x, int64_t n, int64_t d, const double *W, int O, double *st,
                          double *z) {
  int64_t d8 = d & ~(int64_t)7, ldst = (int64_t)O * 8;
  int ng = (O + V8_NODE_OC - 1) / V8_NODE_OC;
  /* blocks of columns outermost: the groups of outputs read the block's rows from L2 after the first */
  for (int64_t j0 = 0; j0 < d8 && n > 0; j0 += PROBE_FWD_JC) {
    int64_t j1 = d8 - j0 < PROBE_FWD_JC ? d8 : j0 + PROBE_FWD_JC;
    for (int g = 0; g < ng; g++) {
      int o0 = (int)((int64_t)O * g / ng), oc = (int)((int64_t)O * (g + 1) / ng) - o0;
      int64_t jn = g + 1 < ng ? j0 : j1; /* where the next pass starts: this block again, or the next */
      const double *w[V8_NODE_OC];
      for (int o = 0; o < oc; o++) w[o] = W + (int64_t)(o0 + o) * d;
#define KF(OC)                                                                                     \
  do {                                                                                             \
    enum { R = V8_FWD_ROWS(OC) };                                                                  \
    int64_t nt = n - n % R; /* rows in full tiles; the rest one at a time */                       \
    for (int64_t i = 0; i < n;) {                                                                  \
      int rows = i < nt ? R : 1;                                                                   \
      const float *xn[R];                                                                          \
      for (int q = 0; q < R; q++) {                                                                \
        int64_t k = i + rows + q; /* the next tile's rows, or the next pass's first */            \
        xn[q] = k < n ? x[k] + j0 : x[q < n ? q : 0] + jn;                                         \
      }                                                                                            \
      double *sp = st + (i * O + o0) * 8;                                                          \
      if (rows == R) KFN(ft_##OC)(x + i, xn, w, j0, j1, sp, ldst, j0 == 0);                        \
      else KFN(ft1_##OC)(x + i, xn, w, j0, j1, sp, ldst, j0 == 0);                                 \
      i += rows;                                                                                   \
    }                                                                                              \
  } while (0)
      KSW(KF)
#undef KF
    }
  }
  for (int64_t i = 0; i < n; i++)
    for (int o = 0; o < O; o++) {
      const double *t = st + (i * O + o) * 8;
      double s = d8 > 0 ? ((t[0] + t[1]) + (t[2] + t[3])) + ((t[4] + t[5]) + (t[6] + t[7])) : 0.0;
      for (int64_t j = d8; j < d; j++) s = fma(W[(int64_t)o * d + j], (double)x[i][j], s);
      z[i * O + o] = s;
    }
}

/* G [O, d] = the node's value from the residuals r [rows, O] of the units' rows. */
static void KFN(bwd_node)(const float *const *x, const int64_t *uoff, int nu, int64_t d, const double *r, int O,
                          double *stk, double *G) {
  int64_t d8 = d & ~(int64_t)7;
#ifdef V8_HALF
  const int per = 9; /* the half-vector tile: every output in one pass */
#else
  const int per = V8_NODE_OC;
#endif
  int ng = (O + per - 1) / per;
  for (int g = 0; g < ng; g++) {
    int o0 = (int)((int64_t)O * g / ng), oc = (int)((int64_t)O * (g + 1) / ng) - o0;
    /* the columns from the last to the first: the forward read the last ones most recently, so
     * they are the likeliest still to be in L2 */
    for (int64_t jj = d8; jj < d; jj++) /* the d mod 8 tail, element by element in the same order */
      for (int o = o0; o < o0 + oc; o++) {
        double sv[64], v = 0.0;
        int top = 0;
        for (int u = 0; u < nu; u++) {
          v = 0.0;
          for (int64_t i = uoff[u]; i < uoff[u + 1]; i++) v = fma(r[i * O + o], (double)x[i][jj], v);
          for (int k = u; k & 1; k >>= 1) v = sv[--top] + v;
          if (u + 1 < nu) sv[top++] = v;
        }
        while (top > 0) v = sv[--top] + v;
        G[(int64_t)o * d + jj] = v;
      }
#ifdef V8_HALF
    for (int64_t jb = d8; jb > 0; jb -= 4 * PROBE_BWDH_STRIPS) { /* blocks, the last first */
      const int64_t jb0 = jb > 4 * PROBE_BWDH_STRIPS ? jb - 4 * PROBE_BWDH_STRIPS : 0, ns = (jb - jb0) / 4;
      double *lst = stk, *tree = stk + PROBE_BWDH_STRIPS * 36;
#define KB(OC)                                                       \
  case OC:                                                           \
    KFN(bth_##OC)(x, uoff, nu, r, O, o0, jb0, ns, lst, tree, G, d); \
    break;
      switch (oc) { KB(1) KB(2) KB(3) KB(4) KB(5) KB(6) KB(7) KB(8) default: KB(9) }
    }
#else
#define KB(OC)                                                                                    \
  do {                                                                                            \
    const int64_t w8 = 8 * V8_BWD_JB(OC), jb = d8 - d8 % w8;                                      \
    for (int64_t j = d8 - 8; j >= jb; j -= 8) KFN(bt1_##OC)(x, uoff, nu, r, O, o0, j, stk, G, d); \
    for (int64_t j = jb - w8; j >= 0; j -= w8) KFN(bt_##OC)(x, uoff, nu, r, O, o0, j, stk, G, d); \
  } while (0)
    KSW(KB)
#endif
#undef KB
  }
}

/* ---- small kernels over doubles (their public wrappers in probe_cpu.c) -------------------------------
 * Lane l of each sum takes the elements j = l, l + 8, ... in order (a multiply, then an add), the lanes
 * are combined pairwise, then the d mod 8 tail is added in order. */
static double KFN(sumsq)(const double *x, int64_t n) {
  V8 acc = V8_ZERO();
  int64_t n8 = n & ~(int64_t)7;
  for (int64_t i = 0; i < n8; i += 8) {
    V8 v = V8_LDD(x + i);
    acc = V8_ADD(acc, V8_MUL(v, v));
  }
  double s = KFN(lanes)(acc);
  for (int64_t i = n8; i < n; i++) s += x[i] * x[i];
  return s;
}

/* G[k, j] += Σ_i r[i K + k] X[i d + j], rows in order from G's value. */
static void KFN(outer_acc)(double *G, int64_t K, int64_t d, const double *r, const double *X, int64_t n) {
  int64_t d8 = d & ~(int64_t)7;
  for (int64_t k = 0; k < K; k++) {
    double *g = G + k * d;
    for (int64_t j = 0; j < d8; j += 8) {
      V8 acc = V8_LDD(g + j);
      for (int64_t i = 0; i < n; i++) acc = V8_ADD(acc, V8_MUL(V8_SET1(r[i * K + k]), V8_LDD(X + i * d + j)));
      V8_ST(g + j, acc);
    }
    for (int64_t j = d8; j < d; j++) {
      double acc = g[j];
      for (int64_t i = 0; i < n; i++) acc = acc + r[i * K + k] * X[i * d + j];
      g[j] = acc;
    }
  }
}

static void KFN(standardize)(const float *x, const double *mu, const double *inv_sd, int64_t d, double *y) {
  int64_t d8 = d & ~(int64_t)7;
  for (int64_t j = 0; j < d8; j += 8) V8_ST(y + j, V8_MUL(V8_SUB(V8_LDF(x + j), V8_LDD(mu + j)), V8_LDD(inv_sd + j)));
  for (int64_t j = d8; j < d; j++) y[j] = ((double)x[j] - mu[j]) * inv_sd[j];
}

/* D[i, k] = the lane sum of term(x_ij, c_kj): a product (dot_f64) or a squared difference (sqdist_f64). */
#define KPAIR(NAME, TERM)                                                                                  \
  static void KFN(NAME)(const double *X, int64_t n, int64_t d, const double *C, int64_t c, double *D) {     \
    int64_t d8 = d & ~(int64_t)7;                                                                          \
    for (int64_t i = 0; i < n; i++) {                                                                      \
      const double *x = X + i * d;                                                                         \
      for (int64_t k = 0; k < c; k++) {                                                                    \
        const double *ck = C + k * d;                                                                      \
        V8 acc = V8_ZERO();                                                                                \
        for (int64_t j = 0; j < d8; j += 8) {                                                              \
          V8 a = V8_LDD(x + j), b = V8_LDD(ck + j);                                                        \
          acc = V8_ADD(acc, TERM(a, b, V8_MUL, V8_SUB));                                                   \
        }                                                                                                  \
        double s = KFN(lanes)(acc);                                                                        \
        for (int64_t j = d8; j < d; j++) s += TERM(x[j], ck[j], KSMUL, KSSUB);                             \
        D[i * c + k] = s;                                                                                  \
      }                                                                                                    \
    }                                                                                                      \
  }
#define KSMUL(a, b) ((a) * (b))
#define KSSUB(a, b) ((a) - (b))
#define KPRODUCT(a, b, MUL, SUB) MUL(a, b)
#define KSQDIFF(a, b, MUL, SUB) MUL(SUB(a, b), SUB(a, b))
KPAIR(dot_f64, KPRODUCT)
KPAIR(sqdist_f64, KSQDIFF)
#undef KPAIR
#undef KSMUL
#undef KSSUB
#undef KPRODUCT
#undef KSQDIFF

/* Y[i] = L^-1 x_i by forward substitution (L lower triangular, d x d, row-major). */
static void KFN(lsolve)(const double *L, int64_t d, const float *const *rows, int64_t n, double *Y) {
  for (int64_t i = 0; i < n; i++) {
    const float *x = rows[i];
    double *y = Y + i * d;
    for (int64_t j = 0; j < d; j++) {
      const double *lj = L + j * d;
      int64_t j8 = j & ~(int64_t)7;
      V8 acc = V8_ZERO();
      for (int64_t k = 0; k < j8; k += 8) acc = V8_ADD(acc, V8_MUL(V8_LDD(lj + k), V8_LDD(y + k)));
      double s = KFN(lanes)(acc);
      for (int64_t k = j8; k < j; k++) s += lj[k] * y[k];
      y[j] = ((double)x[j] - s) / lj[j];
    }
  }
}

#undef KSW
#undef KSW_MORE
#undef KBWD_JB
#undef KFN
#undef KCAT
#undef KCAT2
