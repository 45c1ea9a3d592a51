/* leakage: the tables every rank builds alike (the truth of each panel row, the cells and their
 * bootstrap rows), a cell's metrics and the per-cell task: pooled and per-seed metrics, the holdout
 * split and the entropy summary. See docs/reference.md, 'leakage report' ('Cell metrics'). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "leak_internal.h"
#include "rmdiag/kernels/stats.h"

void leak_work_free(leak_work *w) {
  void *ptrs[] = {w->t_keys, w->t_vals, w->row_truth, w->cell_key, w->row_cell, w->cell_off, w->cell_rows,
                  w->boot_cell, w->boot_off, w->boot_rows, w->boot_id, w->null_cell, w->null_off, w->null_avail,
                  w->null_hit, w->null_id, w->boot_bounds, w->null_bounds};
  for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++) free(ptrs[i]);
  memset(w, 0, sizeof *w);
}

int64_t leak_find_key(const int64_t *keys, int64_t n, int64_t key) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (keys[mid] < key) lo = mid + 1;
    else hi = mid;
  }
  return lo < n && keys[lo] == key ? lo : -1;
}

static int64_t tkey(int64_t series, int64_t month) { return series << 24 | month; }

double leak_truth_at(const leak_work *w, int64_t series, int64_t month) {
  int64_t k = leak_find_key(w->t_keys, w->d->T, tkey(series, month));
  return k < 0 ? NAN : w->t_vals[k];
}

/* "decimal" compares integers of 1e-6 so that 3.83 against 3.58 is exactly 0.25; past 1e12 the
 * integers would overflow, and the float rule is used (docs/reference.md, 'leakage options'). */
int leak_within_tol(const leak_work *w, double e, double t) {
  if (!w->o->compare_float && fabs(e) < 1e12 && fabs(t) < 1e12) {
    long long a = llround(e * 1e6), b = llround(t * 1e6);
    long long diff = a > b ? a - b : b - a;
    return w->o->rule_lt ? diff < w->tol_micro : diff <= w->tol_micro;
  }
  double dd = fabs(e - t);
  return w->o->rule_lt ? dd < w->o->tolerance : dd <= w->o->tolerance;
}

static int sign_of(double x) { return (x > 0) - (x < 0); }

int leak_build_truth(leak_work *w, rd_status *st) {
  const leak_data *d = w->d;
  leak_kv *t = malloc(sizeof(leak_kv) * (size_t)(d->T ? d->T : 1));
  w->t_keys = malloc(sizeof(int64_t) * (size_t)(d->T ? d->T : 1));
  w->t_vals = malloc(sizeof(double) * (size_t)(d->T ? d->T : 1));
  w->row_truth = malloc(sizeof(double) * (size_t)(d->Q ? d->Q : 1));
  if (!t || !w->t_keys || !w->t_vals || !w->row_truth) {
    free(t);
    return rd_fail(st, RD_EFAIL, "out of memory for the truth table");
  }
  for (int64_t j = 0; j < d->T; j++) t[j] = (leak_kv){tkey(d->t_series[j], d->t_month[j]), j};
  rd_sort_key_idx(t, (size_t)d->T);
  /* the keys are distinct: leak_read refused repeated (series, month) truth rows */
  for (int64_t j = 0; j < d->T; j++) {
    w->t_keys[j] = t[j].key;
    w->t_vals[j] = d->t_value[t[j].idx];
  }
  free(t);
  for (int64_t i = 0; i < d->Q; i++) w->row_truth[i] = leak_truth_at(w, d->series[i], d->month[i]);
  return RD_OK;
}

int leak_build_cells(leak_work *w, rd_status *st) {
  const leak_data *d = w->d;
  int64_t Q = d->Q;
  size_t q1 = (size_t)(Q ? Q : 1);
  leak_kv *k = malloc(sizeof(leak_kv) * q1);
  w->row_cell = malloc(sizeof(int32_t) * q1);
  w->cell_key = malloc(sizeof(int64_t) * q1);
  w->cell_rows = malloc(sizeof(int64_t) * q1);
  w->cell_off = malloc(sizeof(int64_t) * (size_t)(Q + 1));
  if (!k || !w->row_cell || !w->cell_key || !w->cell_rows || !w->cell_off) {
    free(k);
    return rd_fail(st, RD_EFAIL, "out of memory for the cells");
  }
  int64_t n = 0;
  for (int64_t i = 0; i < Q; i++) {
    w->row_cell[i] = -1;
    if (d->fictional[d->series[i]]) continue;
    k[n++] = (leak_kv){((int64_t)d->model[i] * d->S + d->series[i]) * d->V + d->variant[i], i};
  }
  rd_sort_key_idx(k, (size_t)n);
  int64_t C = 0;
  for (int64_t j = 0; j < n; j++) {
    if (j == 0 || k[j].key != k[j - 1].key) {
      w->cell_key[C] = k[j].key;
      w->cell_off[C] = j;
      C++;
    }
    w->cell_rows[j] = k[j].idx;
    w->row_cell[k[j].idx] = (int32_t)(C - 1);
  }
  w->cell_off[C] = n;
  w->C = C;
  free(k);
  return RD_OK;
}

void leak_cell_parts(const leak_work *w, int64_t c, int64_t *m, int64_t *s, int64_t *v) {
  const leak_data *d = w->d;
  int64_t key = w->cell_key[c];
  *v = key % d->V;
  key /= d->V;
  *s = key % d->S;
  *m = key / d->S;
}

/* One cell's scored rows as the bootstrap kernel reads them: deviations from the cell's means, their
 * squares and product, and |est - truth|, 8 doubles a row. Returns the rows written. */
static int64_t pack_boot_rows(const leak_work *w, int64_t c, double *out) {
  const leak_data *d = w->d;
  double se = 0, stt = 0;
  int64_t n = 0;
  for (int64_t j = w->cell_off[c]; j < w->cell_off[c + 1]; j++) {
    int64_t i = w->cell_rows[j];
    if (!leak_scored(w, i)) continue;
    se += d->value[i];
    stt += w->row_truth[i];
    n++;
  }
  if (n == 0) return 0;
  double me = se / (double)n, mt = stt / (double)n;
  int64_t pos = 0;
  for (int64_t j = w->cell_off[c]; j < w->cell_off[c + 1]; j++) {
    int64_t i = w->cell_rows[j];
    if (!leak_scored(w, i)) continue;
    double de = d->value[i] - me, dt = w->row_truth[i] - mt;
    double *r = out + 8 * pos++;
    r[0] = de;
    r[1] = dt;
    r[2] = de * de;
    r[3] = dt * dt;
    r[4] = de * dt;
    r[5] = fabs(d->value[i] - w->row_truth[i]);
    r[6] = r[7] = 0.0;
  }
  return pos;
}

int leak_build_boot(leak_work *w, const rd_stream *stream, rd_status *st) {
  const leak_data *d = w->d;
  w->boot_cell = malloc(sizeof(int64_t) * (size_t)(w->C ? w->C : 1));
  w->boot_off = malloc(sizeof(int64_t) * (size_t)(w->C + 1));
  w->boot_id = malloc(sizeof(uint64_t) * (size_t)(w->C ? w->C : 1));
  int64_t total = 0;
  for (int64_t i = 0; i < d->Q; i++) total += w->row_cell[i] >= 0 && leak_scored(w, i);
  size_t bytes = ((sizeof(double) * 8 * (size_t)(total ? total : 1)) + 63) & ~(size_t)63;
  w->boot_rows = aligned_alloc(64, bytes);
  if (!w->boot_cell || !w->boot_off || !w->boot_id || !w->boot_rows)
    return rd_fail(st, RD_EFAIL, "out of memory for the bootstrap rows");
  int64_t nb = 0, pos = 0;
  w->boot_off[0] = 0;
  for (int64_t c = 0; c < w->C; c++) {
    int64_t n = pack_boot_rows(w, c, w->boot_rows + 8 * pos);
    if (n == 0) continue;
    pos += n;
    w->boot_cell[nb] = c;
    w->boot_id[nb] = (uint64_t)c;
    w->boot_off[++nb] = pos;
  }
  w->NB = nb;
  w->boot = (rd_leak_boot){.n_cells = nb, .B = w->o->bootstrap, .row_off = w->boot_off, .rows = w->boot_rows,
                           .cell_id = w->boot_id, .stream = *stream};
  return RD_OK;
}

/* ---- metrics ---------------------------------------------------------------------------------------- */

/* Pearson r (n >= 3), slope and intercept of est on truth over the scored rows, two passes. */
static void fit_of(const leak_work *w, const int64_t *rows, int64_t n, int64_t ns, double se, double stt,
                   double *r, double *slope, double *intercept) {
  const leak_data *d = w->d;
  *r = *slope = *intercept = NAN;
  if (ns < 2) return;
  double me = se / (double)ns, mt = stt / (double)ns, sxy = 0, sxx = 0, syy = 0;
  for (int64_t j = 0; j < n; j++) {
    int64_t i = rows[j];
    if (!leak_scored(w, i)) continue;
    double de = d->value[i] - me, dt = w->row_truth[i] - mt;
    sxy += de * dt;
    sxx += de * de;
    syy += dt * dt;
  }
  if (ns >= 3 && sxx > 0 && syy > 0) *r = fmax(-1.0, fmin(1.0, sxy / sqrt(sxx * syy)));
  if (syy > 0) {
    *slope = sxy / syy;
    *intercept = me - *slope * mt;
  }
}

void leak_metrics_of(const leak_work *w, const int64_t *rows, int64_t n, double *out) {
  const leak_data *d = w->d;
  int64_t n_rows = 0, n_parsed = 0, n_no_truth = 0, ns = 0, n_within = 0, n_sign = 0, n_sign_ok = 0;
  double se = 0, stt = 0, sae = 0;
  for (int64_t j = 0; j < n; j++) {
    int64_t i = rows[j];
    if (d->status[i] == 2) continue;
    n_rows++;
    double t = w->row_truth[i];
    if (isnan(t)) n_no_truth++;
    if (d->status[i] != 0) continue;
    n_parsed++;
    if (isnan(t)) continue;
    double e = d->value[i];
    ns++;
    se += e;
    stt += t;
    sae += fabs(e - t);
    n_within += leak_within_tol(w, e, t);
    if (!(w->o->sign_exclude_zero && t == 0.0)) {
      n_sign++;
      n_sign_ok += sign_of(e) == sign_of(t);
    }
  }
  for (int k = 0; k < MT_N; k++) out[k] = NAN;
  fit_of(w, rows, n, ns, se, stt, &out[MT_R], &out[MT_SLOPE], &out[MT_INTERCEPT]);
  out[MT_NROWS] = (double)n_rows;
  out[MT_NPARSED] = (double)n_parsed;
  out[MT_NNOTRUTH] = (double)n_no_truth;
  out[MT_NSCORED] = (double)ns;
  if (n_rows > 0) out[MT_PR] = (double)n_parsed / (double)n_rows;
  rd_wilson((double)n_parsed, (double)n_rows, &out[MT_PR_LO], &out[MT_PR_HI]);
  if (ns > 0) {
    out[MT_MAE] = sae / (double)ns;
    out[MT_WITHIN] = (double)n_within / (double)ns;
  }
  out[MT_NWITHIN] = (double)n_within;
  rd_wilson((double)n_within, (double)ns, &out[MT_W_LO], &out[MT_W_HI]);
  out[MT_NSIGN] = (double)n_sign;
  out[MT_NSIGNOK] = (double)n_sign_ok;
  if (n_sign > 0) out[MT_SIGN] = (double)n_sign_ok / (double)n_sign;
  rd_wilson((double)n_sign_ok, (double)n_sign, &out[MT_S_LO], &out[MT_S_HI]);
}

void leak_mean_median(double *x, int64_t n, double *mean, double *median) {
  *mean = *median = NAN;
  if (n == 0) return;
  double s = 0;
  for (int64_t i = 0; i < n; i++) s += x[i];
  *mean = s / (double)n;
  rd_sort_doubles(x, (size_t)n);
  double q = 0.5;
  rd_quantiles_sorted(x, (size_t)n, &q, 1, median);
}

/* ---- the per-cell task ---------------------------------------------------------------------------------- */

int leak_dv_push(leak_dvec *a, double x) {
  if (a->n == a->cap) {
    int64_t cap = a->cap ? 2 * a->cap : 64;
    double *p = realloc(a->v, sizeof(double) * (size_t)cap);
    if (!p) return -1;
    a->v = p;
    a->cap = cap;
  }
  a->v[a->n++] = x;
  return 0;
}

int leak_dv_push_n(leak_dvec *a, const double *x, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    if (leak_dv_push(a, x[i]) != 0) return -1;
  return 0;
}

/* The distinct seeds of a cell's rows, ascending (a cell has few). Returns their number. */
static int64_t cell_seeds(const leak_data *d, const int64_t *rows, int64_t n, int32_t *seeds) {
  int64_t ns = 0;
  for (int64_t j = 0; j < n; j++) {
    int32_t s = d->seed[rows[j]];
    int64_t b = ns;
    while (b > 0 && seeds[b - 1] > s) b--;
    if (b > 0 && seeds[b - 1] == s) continue;
    memmove(seeds + b + 1, seeds + b, sizeof(int32_t) * (size_t)(ns - b));
    seeds[b] = s;
    ns++;
  }
  return ns;
}

/* [n seeds][seed, metrics]...; `sub` is scratch for a seed's rows. */
static int push_per_seed(const leak_work *w, const int64_t *rows, int64_t n, int32_t *seeds, int64_t *sub,
                         leak_dvec *out) {
  const leak_data *d = w->d;
  int64_t ns = cell_seeds(d, rows, n, seeds);
  double m[MT_N];
  int rc = leak_dv_push(out, (double)ns);
  for (int64_t k = 0; k < ns && rc == 0; k++) {
    int64_t m2 = 0;
    for (int64_t j = 0; j < n; j++)
      if (d->seed[rows[j]] == seeds[k]) sub[m2++] = rows[j];
    leak_metrics_of(w, sub, m2, m);
    rc |= leak_dv_push(out, (double)seeds[k]);
    rc |= leak_dv_push_n(out, m, MT_N);
  }
  return rc;
}

/* [metrics before holdout_from][metrics from it]. */
static int push_holdout(const leak_work *w, const int64_t *rows, int64_t n, int64_t *sub, leak_dvec *out) {
  const leak_data *d = w->d;
  double m[MT_N];
  int rc = 0;
  for (int side = 0; side < 2; side++) {
    int64_t m2 = 0;
    for (int64_t j = 0; j < n; j++)
      if ((d->month[rows[j]] >= w->o->holdout_from) == side) sub[m2++] = rows[j];
    leak_metrics_of(w, sub, m2, m);
    rc |= leak_dv_push_n(out, m, MT_N);
  }
  return rc;
}

/* [n, mean, median] of the finite entropies of the rows not excluded; `ent` is scratch. */
static int push_entropy(const leak_data *d, const int64_t *rows, int64_t n, double *ent, leak_dvec *out) {
  int64_t ne = 0;
  if (d->has_entropy)
    for (int64_t j = 0; j < n; j++)
      if (d->status[rows[j]] != 2 && isfinite(d->entropy[rows[j]])) ent[ne++] = d->entropy[rows[j]];
  double mean, median;
  leak_mean_median(ent, ne, &mean, &median);
  int rc = leak_dv_push(out, (double)ne);
  rc |= leak_dv_push(out, mean);
  rc |= leak_dv_push(out, median);
  return rc;
}

int leak_task_cell(const leak_work *w, int64_t c, leak_dvec *out) {
  int64_t a = w->cell_off[c], n = w->cell_off[c + 1] - a;
  const int64_t *rows = w->cell_rows + a;
  double m[MT_N];
  leak_metrics_of(w, rows, n, m);
  if (leak_dv_push_n(out, m, MT_N)) return -1;
  int64_t *sub = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
  int32_t *seeds = malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
  double *ent = malloc(sizeof(double) * (size_t)(n ? n : 1));
  int rc = sub && seeds && ent ? 0 : -1;
  if (rc == 0) rc = push_per_seed(w, rows, n, seeds, sub, out);
  if (rc == 0 && w->o->has_holdout) rc = push_holdout(w, rows, n, sub, out);
  if (rc == 0) rc = push_entropy(w->d, rows, n, ent, out);
  free(sub), free(seeds), free(ent);
  return rc;
}

int64_t leak_cell_tail(const double *v) {
  int64_t nseeds = (int64_t)v[MT_N];
  return MT_N + 1 + nseeds * (1 + MT_N);
}
