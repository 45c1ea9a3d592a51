/* The statistics rules (docs/reference.md, 'Statistics'), written once for every report. */
#include "rmdiag/kernels/stats.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

double rd_sum(const double *x, size_t n) {
  double total = 0.0;
  for (size_t b = 0; b < n; b += RD_SUM_BLOCK) {
    size_t e = b + RD_SUM_BLOCK < n ? b + RD_SUM_BLOCK : n;
    double s = 0.0;
    for (size_t i = b; i < e; i++) s += x[i];
    total += s;
  }
  return total;
}

void rd_mean_sd(const double *x, size_t n, double *mean, double *sd) {
  if (n == 0) {
    *mean = NAN;
    *sd = NAN;
    return;
  }
  double m = rd_sum(x, n) / (double)n;
  *mean = m;
  if (n < 2) {
    *sd = NAN;
    return;
  }
  double total = 0.0;
  for (size_t b = 0; b < n; b += RD_SUM_BLOCK) {
    size_t e = b + RD_SUM_BLOCK < n ? b + RD_SUM_BLOCK : n;
    double s = 0.0;
    for (size_t i = b; i < e; i++) s += (x[i] - m) * (x[i] - m);
    total += s;
  }
  *sd = sqrt(total / (double)(n - 1));
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Doubles as unsigned keys in the same order: flip all bits of negatives, the sign of others. */
static inline uint64_t dkey(double d) {
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  return (u >> 63) ? ~u : (u | 0x8000000000000000ull);
}

static inline double dval(uint64_t k) {
  uint64_t u = (k >> 63) ? (k & 0x7fffffffffffffffull) : ~k;
  double d;
  memcpy(&d, &u, sizeof d);
  return d;
}

/* LSD radix sort of n unsigned keys on 11-bit digits (6 passes, a pass skipped when one bucket holds
 * every key), stable; val (may be NULL) moves with its key. -1 without memory, nothing moved. */
static int radix_u64(uint64_t *key, int64_t *val, size_t n) {
  uint64_t *kb = malloc(sizeof(uint64_t) * (n ? n : 1));
  int64_t *vb = val ? malloc(sizeof(int64_t) * (n ? n : 1)) : NULL;
  uint32_t(*hist)[2048] = calloc(6, sizeof *hist);
  if (!kb || (val && !vb) || !hist) {
    free(kb);
    free(vb);
    free(hist);
    return -1;
  }
  for (size_t i = 0; i < n; i++)
    for (int p = 0; p < 6; p++) hist[p][(key[i] >> (11 * p)) & 2047]++;
  uint64_t *a = key, *b = kb;
  int64_t *va = val, *vbb = vb;
  for (int p = 0; p < 6; p++) {
    uint32_t *h = hist[p];
    if (n == 0 || h[(a[0] >> (11 * p)) & 2047] == n) continue;  /* every key has this digit */
    uint32_t sum = 0;
    for (int d = 0; d < 2048; d++) {
      uint32_t c = h[d];
      h[d] = sum;
      sum += c;
    }
    for (size_t i = 0; i < n; i++) {
      uint32_t at = h[(a[i] >> (11 * p)) & 2047]++;
      b[at] = a[i];
      if (val) vbb[at] = va[i];
    }
    uint64_t *t = a;
    a = b;
    b = t;
    int64_t *tv = va;
    va = vbb;
    vbb = tv;
  }
  if (a != key) {
    memcpy(key, a, sizeof(uint64_t) * n);
    if (val) memcpy(val, va, sizeof(int64_t) * n);
  }
  free(kb);
  free(vb);
  free(hist);
  return 0;
}

/* Small inputs go to qsort. -0.0 sorts before +0.0, which compare equal anyway. */
void rd_sort_doubles(double *x, size_t n) {
  uint64_t *a = n < RD_SORT_SMALL ? NULL : malloc(sizeof(uint64_t) * n);
  if (a) {
    for (size_t i = 0; i < n; i++) a[i] = dkey(x[i]);
    if (radix_u64(a, NULL, n) == 0) {
      for (size_t i = 0; i < n; i++) x[i] = dval(a[i]);
      free(a);
      return;
    }
    free(a);
  }
  qsort(x, n, sizeof *x, cmp_double);
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

void rd_sort_u64(uint64_t *x, size_t n) {
  if (n >= RD_SORT_SMALL && radix_u64(x, NULL, n) == 0) return;
  qsort(x, n, sizeof *x, cmp_u64);
}

static int cmp_key_idx(const void *a, const void *b) {
  const rd_key_idx *x = a, *y = b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  return (x->idx > y->idx) - (x->idx < y->idx);
}

void rd_sort_key_idx(rd_key_idx *k, size_t n) {
  /* a stable sort by key keeps the pairs of one key in index order when they come in it */
  int in_order = n >= RD_SORT_SMALL;
  for (size_t i = 1; i < n && in_order; i++) in_order = k[i].idx > k[i - 1].idx;
  uint64_t *a = in_order ? malloc(sizeof(uint64_t) * n) : NULL;
  int64_t *v = a ? malloc(sizeof(int64_t) * n) : NULL;
  if (v) {
    for (size_t i = 0; i < n; i++) {
      a[i] = (uint64_t)k[i].key ^ 0x8000000000000000ull;  /* signed order as unsigned */
      v[i] = k[i].idx;
    }
    if (radix_u64(a, v, n) == 0) {
      for (size_t i = 0; i < n; i++) k[i] = (rd_key_idx){(int64_t)(a[i] ^ 0x8000000000000000ull), v[i]};
      free(a);
      free(v);
      return;
    }
  }
  free(a);
  free(v);
  qsort(k, n, sizeof *k, cmp_key_idx);
}

static inline void swap_d(double *a, double *b) {
  double t = *a;
  *a = *b;
  *b = t;
}

/* Places the k-th smallest of x[lo..hi) at x[k], smaller ones before, larger ones after.
 * Three-way partitioning (many equal values are common: ties, saturated probabilities),
 * median-of-three pivots, and a sort when the recursion runs too deep (introselect). */
static void select_kth(double *x, size_t lo, size_t hi, size_t k) {
  int depth = 0;
  while (hi - lo > 16) {
    if (++depth > 64) {
      qsort(x + lo, hi - lo, sizeof *x, cmp_double);
      return;
    }
    size_t mid = lo + (hi - lo) / 2;
    double a = x[lo], b = x[mid], c = x[hi - 1];
    double pivot = (a < b) ? ((b < c) ? b : (a < c ? c : a)) : ((a < c) ? a : (b < c ? c : b));
    size_t lt = lo, i = lo, gt = hi;
    while (i < gt) {
      if (x[i] < pivot) swap_d(&x[lt++], &x[i++]);
      else if (x[i] > pivot) swap_d(&x[i], &x[--gt]);
      else i++;
    }
    if (k < lt) hi = lt;
    else if (k >= gt) lo = gt;
    else return;
  }
  qsort(x + lo, hi - lo, sizeof *x, cmp_double);
}

/* numpy's linear interpolation between neighbours a <= b at fraction g. */
static double lerp_numpy(double a, double b, double g) {
  double d = b - a;
  return g >= 0.5 ? b - d * (1.0 - g) : a + d * g;
}

double rd_quantile_lerp(double a, double b, double g) { return lerp_numpy(a, b, g); }

/* Position h = (n - 1) q split into the order statistic k and the fraction g. */
static void quantile_pos(size_t n, double q, size_t *k, double *g) {
  double h = (double)(n - 1) * q;
  *k = (size_t)floor(h);
  if (*k > n - 1) *k = n - 1;
  *g = h - (double)*k;
}

void rd_quantile_pos(size_t n, double q, size_t *k, double *g) { quantile_pos(n, q, k, g); }

void rd_quantiles_inplace(double *work, size_t n, const double *q, size_t nq, double *out) {
  size_t from = 0;
  for (size_t j = 0; j < nq; j++) {
    if (n == 0) {
      out[j] = NAN;
      continue;
    }
    size_t k;
    double g;
    quantile_pos(n, q[j], &k, &g);
    if (k < from) from = 0;  /* q not ascending: restart the selection over everything */
    select_kth(work, from, n, k);
    double a = work[k], b = a;
    if (k + 1 < n) {
      b = work[k + 1];
      for (size_t i = k + 2; i < n; i++)
        if (work[i] < b) b = work[i];
    }
    out[j] = (g == 0.0) ? a : lerp_numpy(a, b, g);
    from = k;
  }
}

void rd_quantiles_sorted(const double *x, size_t n, const double *q, size_t nq, double *out) {
  for (size_t j = 0; j < nq; j++) {
    if (n == 0) {
      out[j] = NAN;
      continue;
    }
    size_t k;
    double g;
    quantile_pos(n, q[j], &k, &g);
    double a = x[k], b = k + 1 < n ? x[k + 1] : a;
    out[j] = (g == 0.0) ? a : lerp_numpy(a, b, g);
  }
}

double rd_quantile_inplace(double *work, size_t n, double q) {
  double v;
  rd_quantiles_inplace(work, n, &q, 1, &v);
  return v;
}

int rd_wilson(double k, double n, double *lo, double *hi) {
  if (!(n > 0)) {
    *lo = *hi = NAN;
    return 0;
  }
  const double z = RD_WILSON_Z, z2 = z * z;
  double p = k / n;
  double denom = 1.0 + z2 / n;
  double center = (p + z2 / (2.0 * n)) / denom;
  double half = z * sqrt(p * (1.0 - p) / n + z2 / (4.0 * n * n)) / denom;
  double l = center - half, h = center + half;
  /* the bounds are exactly 0 at k = 0 and 1 at k = n; the formula can miss them by an ulp */
  *lo = (k <= 0.0 || l < 0.0) ? 0.0 : (l > 1.0 ? 1.0 : l);
  *hi = (k >= n || h > 1.0) ? 1.0 : (h < 0.0 ? 0.0 : h);
  return 1;
}

/* The t0 smallest of n values ascending in lo[0..t0) and the t1 largest descending in hi[0..t1)
 * (t0, t1 <= n), in one pass, by insertion into two short sorted buffers: for the tails of a
 * bootstrap distribution almost every value is rejected by one comparison with each buffer's end. */
static void tails(const double *x, size_t n, size_t t0, double *lo, size_t t1, double *hi) {
  size_t a = 0, b = 0;
  for (size_t i = 0; i < n; i++) {
    double v = x[i];
    if (a < t0 || v < lo[t0 - 1]) {
      size_t j = a < t0 ? a++ : t0 - 1;
      while (j > 0 && lo[j - 1] > v) {
        lo[j] = lo[j - 1];
        j--;
      }
      lo[j] = v;
    }
    if (b < t1 || v > hi[t1 - 1]) {
      size_t j = b < t1 ? b++ : t1 - 1;
      while (j > 0 && hi[j - 1] < v) {
        hi[j] = hi[j - 1];
        j--;
      }
      hi[j] = v;
    }
  }
}

size_t rd_percentile_ci95(double *vals, size_t n, double *lo, double *hi) {
  size_t m = 0;
  while (m < n && isfinite(vals[m])) m++;
  for (size_t i = m; i < n; i++)
    if (isfinite(vals[i])) vals[m++] = vals[i];
  size_t dropped = n - m;
  if (m == 0) {
    *lo = *hi = NAN;
    return dropped;
  }
  static const double qs[2] = {0.025, 0.975};
  double out[2];
  /* the two tails hold few values: select them directly (the same order statistics and the same
   * interpolation as rd_quantiles_inplace) */
  double h0 = (double)(m - 1) * qs[0], h1 = (double)(m - 1) * qs[1];
  size_t k0 = (size_t)floor(h0), k1 = (size_t)floor(h1);
  size_t t0 = k0 + 2, t1 = m - k1;  /* order statistics k0, k0 + 1 from below; k1, k1 + 1 from above */
  if (m >= 64 && t0 <= 64 && t1 <= 64 && t0 <= m && t1 <= m) {
    double small[64], large[64];
    tails(vals, m, t0, small, t1, large);
    double a0 = small[k0], b0 = small[k0 + 1];
    double a1 = large[m - 1 - k1], b1 = k1 + 1 < m ? large[m - 2 - k1] : a1;
    double g0 = h0 - (double)k0, g1 = h1 - (double)k1;
    out[0] = g0 == 0.0 ? a0 : lerp_numpy(a0, b0, g0);
    out[1] = g1 == 0.0 ? a1 : lerp_numpy(a1, b1, g1);
  } else {
    rd_quantiles_inplace(vals, m, qs, 2, out);
  }
  *lo = out[0];
  *hi = out[1];
  return dropped;
}

int rd_summarize(const double *x, size_t n, rd_summary *s) {
  double *w = malloc((n ? n : 1) * sizeof *w);
  if (!w) return -1;
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (!isnan(x[i])) w[m++] = x[i];
  s->n = (int64_t)m;
  rd_mean_sd(w, m, &s->mean, &s->sd);
  static const double qs[5] = {0.05, 0.25, 0.5, 0.75, 0.95};
  double out[5];
  rd_sort_doubles(w, m);
  rd_quantiles_sorted(w, m, qs, 5, out);
  s->q05 = out[0];
  s->q25 = out[1];
  s->median = out[2];
  s->q75 = out[3];
  s->q95 = out[4];
  s->ci_lo = s->ci_hi = NAN;
  free(w);
  return 0;
}

/* ---- rd_sum over parts ---------------------------------------------------------------------- */

static inline double sum_term(double x, const double *center) {
  return center ? (x - *center) * (x - *center) : x;
}

/* Sums of whole blocks, four blocks side by side (four independent chains, each adding its block
 * left to right from 0.0 as rd_sum does). */
static void block_sums(const double *x, size_t nb, const double *center, double *out) {
  const size_t B = RD_SUM_BLOCK;
  size_t b = 0;
  for (; b + 4 <= nb; b += 4) {
    const double *a0 = x + b * B, *a1 = a0 + B, *a2 = a1 + B, *a3 = a2 + B;
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    if (center) {
      const double c = *center;
      for (size_t i = 0; i < B; i++) {
        s0 += (a0[i] - c) * (a0[i] - c);
        s1 += (a1[i] - c) * (a1[i] - c);
        s2 += (a2[i] - c) * (a2[i] - c);
        s3 += (a3[i] - c) * (a3[i] - c);
      }
    } else {
      for (size_t i = 0; i < B; i++) {
        s0 += a0[i];
        s1 += a1[i];
        s2 += a2[i];
        s3 += a3[i];
      }
    }
    out[b] = s0;
    out[b + 1] = s1;
    out[b + 2] = s2;
    out[b + 3] = s3;
  }
  for (; b < nb; b++) {
    double s = 0.0;
    for (size_t i = 0; i < B; i++) s += sum_term(x[b * B + i], center);
    out[b] = s;
  }
}

/* The part's pieces when some values are NaN: one pass in order, positions counting the others. */
static size_t sum_part_skip(const double *x, size_t n, size_t n_def, int64_t off, const double *center, double *out) {
  const size_t B = RD_SUM_BLOCK;
  size_t head = (B - (size_t)((uint64_t)off % B)) % B;
  if (head > n_def) head = n_def;
  size_t nb = (n_def - head) / B, tail = n_def - head - nb * B, end_blocks = head + nb * B;
  out[0] = (double)head;
  out[1] = (double)nb;
  out[2] = (double)tail;
  double *o = out + 3, s = 0.0;
  size_t j = 0;
  for (size_t i = 0; i < n; i++) {
    if (isnan(x[i])) continue;
    double v = sum_term(x[i], center);
    if (j < head || j >= end_blocks) {
      *o++ = v;
    } else {
      s += v;
      if ((j - head + 1) % B == 0) {
        *o++ = s;
        s = 0.0;
      }
    }
    j++;
  }
  return (size_t)(o - out);
}

size_t rd_count_defined(const double *x, size_t n) {
  size_t m = 0;
  for (size_t i = 0; i < n; i++) m += !isnan(x[i]);
  return m;
}

size_t rd_sum_part(const double *x, size_t n, int64_t off, const double *center, double *out) {
  const size_t B = RD_SUM_BLOCK;
  size_t n_def = rd_count_defined(x, n);
  if (n_def != n) return sum_part_skip(x, n, n_def, off, center, out);
  size_t head = (B - (size_t)((uint64_t)off % B)) % B;
  if (head > n) head = n;
  size_t nb = (n - head) / B, tail = n - head - nb * B;
  out[0] = (double)head;
  out[1] = (double)nb;
  out[2] = (double)tail;
  double *o = out + 3;
  for (size_t i = 0; i < head; i++) *o++ = sum_term(x[i], center);
  block_sums(x + head, nb, center, o);
  o += nb;
  for (size_t i = n - tail; i < n; i++) *o++ = sum_term(x[i], center);
  return (size_t)(o - out);
}

void rd_sum_begin(rd_sum_state *z) {
  z->total = 0.0;
  z->s = 0.0;
  z->pos = 0;
}

size_t rd_sum_add_part(rd_sum_state *z, const double *part) {
  const uint64_t B = RD_SUM_BLOCK;
  size_t h = (size_t)part[0], nb = (size_t)part[1], t = (size_t)part[2];
  const double *p = part + 3;
  for (size_t i = 0; i < h + nb + t; i++) {
    if (i >= h && i < h + nb) {  /* a whole block: it starts and ends on boundaries */
      z->total += *p++;
      z->pos += B;
      continue;
    }
    z->s += *p++;
    if (++z->pos % B == 0) {
      z->total += z->s;
      z->s = 0.0;
    }
  }
  return (size_t)(p - part);
}

double rd_sum_end(const rd_sum_state *z) { return z->pos % RD_SUM_BLOCK != 0 ? z->total + z->s : z->total; }


/* ---- order statistics and distinct values of one array -------------------------------------- */

/* Targets k[0..nk) (ascending ranks within keys[0..m)) of keys whose bits above `shift + 16` are
 * all equal: small sets are sorted, larger ones split on the next 16 bits and only the buckets
 * holding targets are looked into. Returns -1 when out of memory. */
static int select_keys(uint64_t *keys, size_t m, int shift, const size_t *k, size_t nk, uint64_t *out) {
  if (m <= 4096 || shift < 0) {
    qsort(keys, m, sizeof *keys, cmp_u64);
    for (size_t t = 0; t < nk; t++) out[t] = keys[k[t]];
    return 0;
  }
  uint32_t *h = calloc(65536, sizeof *h);
  if (!h) return -1;
  for (size_t i = 0; i < m; i++) h[(keys[i] >> shift) & 0xFFFF]++;
  size_t t = 0, cum = 0;
  int rc = 0;
  for (unsigned d = 0; d < 65536 && t < nk && rc == 0; d++) {
    size_t c = h[d];
    if (k[t] >= cum + c) {
      cum += c;
      continue;
    }
    /* targets t..u-1 fall in bucket d */
    size_t u = t, *kk;
    while (u < nk && k[u] < cum + c) u++;
    uint64_t *sub = malloc(sizeof(uint64_t) * c);
    kk = malloc(sizeof(size_t) * (u - t));
    if (!sub || !kk) rc = -1;
    for (size_t i = 0, j = 0; rc == 0 && i < m; i++)
      if (((keys[i] >> shift) & 0xFFFF) == d) sub[j++] = keys[i];
    for (size_t i = t; rc == 0 && i < u; i++) kk[i - t] = k[i] - cum;
    if (rc == 0) rc = select_keys(sub, c, shift - 16, kk, u - t, out + t);
    free(sub);
    free(kk);
    t = u;
    cum += c;
  }
  free(h);
  return rc;
}

int rd_order_stats(const double *x, size_t n, const size_t *k, size_t nk, double *out) {
  /* many targets: a full sort is as cheap; few values: rd_sort_doubles' own order (its small sort
   * may leave -0 and +0 in input order, which the keys' order would not) */
  if (nk > 64 || n < RD_SORT_SMALL) {
    double *w = malloc(sizeof(double) * (n ? n : 1));
    if (!w) return -1;
    memcpy(w, x, sizeof(double) * n);
    rd_sort_doubles(w, n);
    for (size_t t = 0; t < nk; t++) out[t] = w[k[t]];
    free(w);
    return 0;
  }
  /* the targets ascending (insertion sort of a few), each remembering where its value goes */
  size_t ks[64], at[64];
  for (size_t t = 0; t < nk; t++) {
    size_t j = t;
    while (j > 0 && ks[j - 1] > k[t]) {
      ks[j] = ks[j - 1];
      at[j] = at[j - 1];
      j--;
    }
    ks[j] = k[t];
    at[j] = t;
  }
  uint64_t *keys = malloc(sizeof(uint64_t) * (n ? n : 1)), res[64];
  if (!keys) return -1;
  for (size_t i = 0; i < n; i++) keys[i] = rd_order_key(x[i]);
  int rc = select_keys(keys, n, 48, ks, nk, res);
  for (size_t t = 0; rc == 0 && t < nk; t++) out[at[t]] = rd_order_value(res[t]);
  free(keys);
  return rc;
}

/* An open-addressing set of the values' bit patterns (zeros as +0). */
size_t rd_distinct_sorted(const double *x, size_t n, double *out) {
  size_t cap = 64;
  while (cap < 2 * n + 2) cap <<= 1;
  uint64_t *slot = NULL;
  uint8_t *used = NULL;
  size_t m = 0;
  if (n > 0 && (slot = malloc(sizeof(uint64_t) * cap)) && (used = calloc(cap, 1))) {
    for (size_t i = 0; i < n; i++) {
      double v = x[i] == 0.0 ? 0.0 : x[i];
      uint64_t b;
      memcpy(&b, &v, sizeof b);
      size_t s = (size_t)((b * 0x9E3779B97F4A7C15ull) >> 24) & (cap - 1);
      while (used[s] && slot[s] != b) s = (s + 1) & (cap - 1);
      if (used[s]) continue;
      used[s] = 1;
      slot[s] = b;
      out[m++] = v;
    }
  } else if (n > 0) {
    /* no memory for the set: sort everything and keep the distinct values */
    memcpy(out, x, sizeof(double) * n);
    rd_sort_doubles(out, n);
    for (size_t i = 0; i < n; i++)
      if (m == 0 || out[i] != out[m - 1]) out[m++] = out[i] == 0.0 ? 0.0 : out[i];
    return m;
  }
  free(slot);
  free(used);
  rd_sort_doubles(out, m);
  return m;
}

/* ---- Student t quantile -------------------------------------------------------------------- */

/* Regularized incomplete beta I_x(a, b) by Lentz's continued fraction. */
static double betacf(double a, double b, double x) {
  const double tiny = 1e-300;
  double qab = a + b, qap = a + 1.0, qam = a - 1.0, c = 1.0, d = 1.0 - qab * x / qap;
  if (fabs(d) < tiny) d = tiny;
  d = 1.0 / d;
  double h = d;
  for (int m = 1; m <= 1000; m++) {
    double m2 = 2.0 * m, aa = m * (b - m) * x / ((qam + m2) * (a + m2));
    d = 1.0 + aa * d;
    if (fabs(d) < tiny) d = tiny;
    c = 1.0 + aa / c;
    if (fabs(c) < tiny) c = tiny;
    d = 1.0 / d;
    h *= d * c;
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
    d = 1.0 + aa * d;
    if (fabs(d) < tiny) d = tiny;
    c = 1.0 + aa / c;
    if (fabs(c) < tiny) c = tiny;
    d = 1.0 / d;
    double del = d * c;
    h *= del;
    if (fabs(del - 1.0) < 1e-16) break;
  }
  return h;
}

static double ibeta(double a, double b, double x) {
  if (x <= 0.0) return 0.0;
  if (x >= 1.0) return 1.0;
  double bt = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x));
  if (x < (a + 1.0) / (a + b + 2.0)) return bt * betacf(a, b, x) / a;
  return 1.0 - bt * betacf(b, a, 1.0 - x) / b;
}

/* P(T <= t) for Student's t with df degrees of freedom. */
static double t_cdf(double t, double df) {
  double x = df / (df + t * t), tail = 0.5 * ibeta(0.5 * df, 0.5, x);
  return t >= 0 ? 1.0 - tail : tail;
}

double rd_t_quantile(double p, double df) {
  if (!(df > 0) || !(p > 0.0 && p < 1.0)) return NAN;
  if (p < 0.5) return -rd_t_quantile(1.0 - p, df);
  double lo = 0.0, hi = 1.0;
  while (t_cdf(hi, df) < p) hi *= 2.0;
  for (int i = 0; i < 200; i++) {
    double mid = 0.5 * (lo + hi);
    if (t_cdf(mid, df) < p) lo = mid;
    else hi = mid;
    if (hi - lo <= 1e-15 * hi) break;
  }
  return 0.5 * (lo + hi);
}
