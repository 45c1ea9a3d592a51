/* leakage: the controls, each one task computed whole by one rank: fictional series (does a model
 * answer for series that do not exist?), two-month ranking, residualisation of a downstream signal on
 * the recalled value, and system-prompt defenses. See docs/reference.md, 'leakage report' ('Controls'). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "leak_internal.h"
#include "rmdiag/kernels/stats.h"

/* ---- fictional series ---------------------------------------------------------------------------- */

/* The finite entropies of model m's fictional rows that are not excluded; returns their number. */
static int64_t fictional_entropies(const leak_data *d, int64_t m, double *ent) {
  int64_t ne = 0;
  if (d->has_entropy)
    for (int64_t i = 0; i < d->Q; i++)
      if (d->model[i] == m && d->fictional[d->series[i]] && d->status[i] != 2 && isfinite(d->entropy[i]))
        ent[ne++] = d->entropy[i];
  return ne;
}

int leak_task_fictional(const leak_work *w, leak_dvec *out) {
  const leak_data *d = w->d;
  size_t m1 = (size_t)(d->M ? d->M : 1);
  int64_t *nr = calloc(m1, sizeof(int64_t)), *npz = calloc(m1, sizeof(int64_t)), *any = calloc(m1, sizeof(int64_t));
  double *ent = malloc(sizeof(double) * (size_t)(d->Q ? d->Q : 1));
  int rc = (nr && npz && any && ent) ? 0 : -1;
  for (int64_t i = 0; i < d->Q && rc == 0; i++) {
    if (!d->fictional[d->series[i]]) continue;
    any[d->model[i]] = 1;
    if (d->status[i] == 2) continue;
    nr[d->model[i]]++;
    npz[d->model[i]] += d->status[i] == 0;
  }
  for (int64_t m = 0; m < d->M && rc == 0; m++) {
    if (!any[m]) continue;
    int64_t ne = fictional_entropies(d, m, ent);
    double e[LEAK_FICT_W] = {(double)m, (double)nr[m], (double)npz[m], nr[m] ? (double)npz[m] / (double)nr[m] : NAN,
                             0, 0, (double)ne, 0, 0};
    rd_wilson((double)npz[m], (double)nr[m], &e[4], &e[5]);
    leak_mean_median(ent, ne, &e[7], &e[8]);
    rc |= leak_dv_push_n(out, e, LEAK_FICT_W);
  }
  free(nr), free(npz), free(any), free(ent);
  return rc;
}

/* ---- ranking ----------------------------------------------------------------------------------------- */

/* The rows k[j0, j1) of one (model, series): picks, and picks scored against the truth (months
 * without truth and ties within 1e-9 apart). */
static void rank_group(const leak_work *w, const leak_kv *k, int64_t j0, int64_t j1, double *e) {
  const leak_data *d = w->d;
  int64_t picked = 0, scored = 0, correct = 0, tie = 0, no_truth = 0;
  for (int64_t j = j0; j < j1; j++) {
    int64_t i = k[j].idx;
    if (d->r_pick[i] < 0) continue;
    picked++;
    double ta = leak_truth_at(w, d->r_series[i], d->r_a[i]), tb = leak_truth_at(w, d->r_series[i], d->r_b[i]);
    if (isnan(ta) || isnan(tb)) {
      no_truth++;
      continue;
    }
    if (fabs(ta - tb) < 1e-9) {
      tie++;
      continue;
    }
    scored++;
    correct += d->r_pick[i] == (ta > tb ? 0 : 1);
  }
  int64_t n = j1 - j0;
  double r[LEAK_RANK_W] = {(double)(k[j0].key / d->S), (double)(k[j0].key % d->S), (double)n, (double)picked,
                           (double)picked / (double)n, (double)scored, (double)correct,
                           scored ? (double)correct / (double)scored : NAN, 0, 0, (double)tie, (double)no_truth};
  rd_wilson((double)correct, (double)scored, &r[8], &r[9]);
  memcpy(e, r, sizeof r);
}

int leak_task_ranking(const leak_work *w, leak_dvec *out) {
  const leak_data *d = w->d;
  leak_kv *k = malloc(sizeof(leak_kv) * (size_t)(d->R ? d->R : 1));
  if (!k) return -1;
  for (int64_t i = 0; i < d->R; i++) k[i] = (leak_kv){(int64_t)d->r_model[i] * d->S + d->r_series[i], i};
  rd_sort_key_idx(k, (size_t)d->R);
  int rc = 0;
  for (int64_t j = 0; j < d->R && rc == 0;) {
    int64_t j1 = j;
    while (j1 < d->R && k[j1].key == k[j].key) j1++;
    double e[LEAK_RANK_W];
    rank_group(w, k, j, j1, e);
    rc |= leak_dv_push_n(out, e, LEAK_RANK_W);
    j = j1;
  }
  free(k);
  return rc;
}

/* ---- residualisation --------------------------------------------------------------------------------- */

/* Pearson r of n pairs (two passes); NaN when n < 3 or either side has no spread. */
static double pearson(const double *x, const double *y, int64_t n) {
  if (n < 3) return NAN;
  double sx = 0, sy = 0;
  for (int64_t i = 0; i < n; i++) sx += x[i], sy += y[i];
  double mx = sx / (double)n, my = sy / (double)n, sxy = 0, sxx = 0, syy = 0;
  for (int64_t i = 0; i < n; i++) {
    double dx = x[i] - mx, dy = y[i] - my;
    sxy += dx * dy;
    sxx += dx * dx;
    syy += dy * dy;
  }
  return (sxx > 0 && syy > 0) ? fmax(-1.0, fmin(1.0, sxy / sqrt(sxx * syy))) : NAN;
}

/* The signal S, recall R and truth T of model m's signal rows where all three are known; U is scratch
 * for the residuals. */
typedef struct leak_resid_cols {
  double *S, *R, *T, *U;
} leak_resid_cols;

/* Gathers model m's rows; returns their number, -1 when the model has no signal row at all. */
static int64_t resid_rows(const leak_work *w, int64_t m, leak_resid_cols *x) {
  const leak_data *d = w->d;
  int64_t n = 0, any = 0;
  for (int64_t i = 0; i < d->G; i++) {
    if (d->g_model[i] != m) continue;
    any = 1;
    double t = leak_truth_at(w, d->signal_series, d->g_month[i]);
    if (isnan(d->g_signal[i]) || isnan(d->g_recall[i]) || isnan(t)) continue;
    x->S[n] = d->g_signal[i], x->R[n] = d->g_recall[i], x->T[n] = t;
    n++;
  }
  return any ? n : -1;
}

/* [gamma, r_signal_truth, r_residual_truth, leak_share, r_signal_recall] of n rows: gamma regresses the
 * signal on the recall; the residual U = S - gamma R is what the signal holds beyond the recall. */
static void resid_stats(const leak_resid_cols *x, int64_t n, double *e) {
  double gamma = NAN, rst = NAN, rut = NAN, share = NAN, rsr = NAN;
  if (n > 0) {
    double ms = 0, mr = 0;
    for (int64_t i = 0; i < n; i++) ms += x->S[i], mr += x->R[i];
    ms /= (double)n, mr /= (double)n;
    double cov = 0, var = 0;
    for (int64_t i = 0; i < n; i++) {
      cov += (x->S[i] - ms) * (x->R[i] - mr);
      var += (x->R[i] - mr) * (x->R[i] - mr);
    }
    cov /= (double)n, var /= (double)n;
    if (var > 0) {
      gamma = cov / var;
      for (int64_t i = 0; i < n; i++) x->U[i] = x->S[i] - gamma * x->R[i];
      rut = pearson(x->U, x->T, n);
    }
    rst = pearson(x->S, x->T, n);
    rsr = pearson(x->S, x->R, n);
    if (isfinite(rst) && rst != 0 && isfinite(rut)) share = 1.0 - (rut * rut) / (rst * rst);
  }
  e[0] = gamma, e[1] = rst, e[2] = rut, e[3] = share, e[4] = rsr;
}

int leak_task_residual(const leak_work *w, leak_dvec *out) {
  const leak_data *d = w->d;
  size_t g1 = (size_t)(d->G ? d->G : 1);
  leak_resid_cols x = {malloc(sizeof(double) * g1), malloc(sizeof(double) * g1), malloc(sizeof(double) * g1),
                       malloc(sizeof(double) * g1)};
  int rc = (x.S && x.R && x.T && x.U) ? 0 : -1;
  for (int64_t m = 0; m < d->M && rc == 0; m++) {
    int64_t n = resid_rows(w, m, &x);
    if (n < 0) continue;
    double e[LEAK_RESID_W] = {(double)m, (double)n};
    resid_stats(&x, n, e + 2);
    rc |= leak_dv_push_n(out, e, LEAK_RESID_W);
  }
  free(x.S), free(x.R), free(x.T), free(x.U);
  return rc;
}

/* ---- defenses ---------------------------------------------------------------------------------------- */

/* The rows k[j0, j1) of one (defense, model), grouped by month: attacks, blocked ones, months attacked
 * and months where some attack got through (the worst case), and the benign requests apart. */
static void defense_group(const leak_work *w, const leak_kv *k, int64_t j0, int64_t j1, double *e) {
  const leak_data *d = w->d;
  int64_t dm = k[j0].key >> 24, def = dm / d->M;
  int64_t n = 0, blocked = 0, months = 0, leaked = 0, nb = 0, nbp = 0;
  for (int64_t j = j0; j < j1;) {
    int64_t j2 = j, month_rows = 0, month_leak = 0;
    for (; j2 < j1 && k[j2].key == k[j].key; j2++) {
      int64_t i = k[j2].idx;
      if (d->d_attack[i] == d->benign_attack) {
        nb++;
        nbp += !d->d_blocked[i];
        continue;
      }
      n++;
      blocked += d->d_blocked[i];
      month_rows++;
      month_leak |= !d->d_blocked[i];
    }
    months += month_rows > 0;
    leaked += month_leak;
    j = j2;
  }
  double r[LEAK_DEF_W] = {(double)def, (double)(dm % d->M), (double)n, (double)blocked,
                          n ? (double)blocked / (double)n : NAN, 0, 0, (double)months, (double)leaked,
                          months ? (double)leaked / (double)months : NAN, (double)nb, (double)nbp};
  rd_wilson((double)blocked, (double)n, &r[5], &r[6]);
  memcpy(e, r, sizeof r);
}

/* Adds one (defense, model) entry to the pooled entry of its defense (started when new). */
static int pool_defense(leak_dvec *pooled, int64_t *npool, const double *e) {
  int64_t def = (int64_t)e[0];
  if (*npool == 0 || (int64_t)pooled->v[(*npool - 1) * LEAK_POOL_W] != def) {
    double z[LEAK_POOL_W] = {(double)def, 0, 0, 0, 0, 0, 0, 0, 0};
    if (leak_dv_push_n(pooled, z, LEAK_POOL_W)) return -1;
    ++*npool;
  }
  double *p = pooled->v + (*npool - 1) * LEAK_POOL_W;
  p[1] += e[2], p[2] += e[3], p[6] += e[7], p[7] += e[8];
  return 0;
}

static void finish_pooled(leak_dvec *pooled, int64_t npool) {
  for (int64_t q = 0; q < npool; q++) {
    double *p = pooled->v + q * LEAK_POOL_W;
    p[3] = p[1] > 0 ? p[2] / p[1] : NAN;
    rd_wilson(p[2], p[1], &p[4], &p[5]);
    p[8] = p[6] > 0 ? p[7] / p[6] : NAN;
  }
}

int leak_task_defense(const leak_work *w, leak_dvec *out) {
  const leak_data *d = w->d;
  leak_kv *k = malloc(sizeof(leak_kv) * (size_t)(d->D ? d->D : 1));
  if (!k) return -1;
  /* key: (defense, model, month) so months group inside (defense, model) */
  for (int64_t i = 0; i < d->D; i++)
    k[i] = (leak_kv){(((int64_t)d->d_defense[i] * d->M + d->d_model[i]) << 24) | d->d_month[i], i};
  rd_sort_key_idx(k, (size_t)d->D);
  leak_dvec per = {0}, pooled = {0};
  int rc = 0;
  int64_t np = 0, npool = 0;
  for (int64_t j = 0; j < d->D && rc == 0;) {
    int64_t j1 = j;
    while (j1 < d->D && (k[j1].key >> 24) == (k[j].key >> 24)) j1++;
    double e[LEAK_DEF_W];
    defense_group(w, k, j, j1, e);
    rc |= leak_dv_push_n(&per, e, LEAK_DEF_W);
    np++;
    if (rc == 0) rc |= pool_defense(&pooled, &npool, e);
    j = j1;
  }
  if (rc == 0) finish_pooled(&pooled, npool);
  rc |= leak_dv_push(out, (double)np);
  if (rc == 0) rc |= leak_dv_push_n(out, per.v, per.n);
  rc |= leak_dv_push(out, (double)npool);
  if (rc == 0) rc |= leak_dv_push_n(out, pooled.v, pooled.n);
  free(per.v), free(pooled.v), free(k);
  return rc;
}
