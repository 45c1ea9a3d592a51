/* benchmark: the report (rank 0): the result object from the point estimate and the bootstrap's
 * intervals and comparisons, and the output datasets (see docs/reference.md, 'benchmark report'); the
 * stdout summary is bench_view.c's. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_internal.h"
#include "rmdiag/common/h5out.h"
#include "rmdiag/common/jsonutil.h"
#include "rmdiag/kernels/stats.h"

static const char *scheme_name(int scheme) {
  return scheme == BENCH_V1 ? "rewardbench-v1" : scheme == BENCH_V2 ? "rewardbench-v2" : "custom";
}

static const char *section_name(const bench_opts *o, int64_t k) {
  return k < o->n_sections ? o->sections[k].name : "Prior Sets";
}

/* Ties details for the report (point estimate). */
static cJSON *ties_json(const bench_ties *t, int64_t m) {
  int64_t P = t->P, M = t->M;
  double sum[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (int64_t q = 0; q < P; q++) {
    const double *x = t->X + q * t->ld;
    for (int k = 0; k < 5; k++) sum[k] += x[k * M + m];
    for (int k = 0; k < 3; k++) sum[5 + k] += x[5 * M + k];
  }
  double nt = sum[5], nr = sum[6], nb = sum[7];
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "n_prompts_tied", nt);
  cJSON_AddNumberToObject(o, "n_prompts_ref", nr);
  cJSON_AddNumberToObject(o, "n_prompts_both", nb);
  rd_json_add(o, "tied_accuracy", rd_json_num(nt > 0 ? sum[0] / nt : 0.0));
  rd_json_add(o, "ref_accuracy", rd_json_num(nr > 0 ? sum[1] / nr : 0.0));
  rd_json_add(o, "correctness_preferred", rd_json_num(nb > 0 ? sum[2] / nb : NAN));
  rd_json_add(o, "correctness_preferred_hard", rd_json_num(nb > 0 ? sum[3] / nb : NAN));
  rd_json_add(o, "margin", rd_json_num(nb > 0 ? sum[4] / nb : NAN));
  return o;
}

/* One subset of one model: its value v, with the credit sum and a Wilson interval when every
 * credit is 0 or 1, or the Ties composite's parts. */
static cJSON *subset_json(const bench_report_in *in, int64_t m, int64_t s, double v) {
  const bench_plan *p = in->p;
  const bench_dims *d = &p->d;
  cJSON *x = cJSON_CreateObject();
  if (d->accuracy_mode) {
    cJSON_AddNullToObject(x, "n");
    rd_json_add(x, "score", rd_json_num(v));
    cJSON_AddNullToObject(x, "wilson95");
  } else if (s == d->ties_subset && in->E->ties.P > 0) {
    cJSON_AddNumberToObject(x, "n", (double)p->subset_n[s]);
    rd_json_add(x, "score", rd_json_num(v));
    cJSON_AddNullToObject(x, "wilson95");
    cJSON_AddItemToObject(x, "composite", ties_json(&in->E->ties, m));
  } else {
    int64_t n = p->subset_n[s];
    const int64_t *items = p->subset_items + p->subset_first[s];
    double k = 0.0;
    int binary = 1;
    for (int64_t t = 0; t < n; t++) {
      double c = in->credit[m * d->I + items[t]];
      k += c;
      binary &= c == 0.0 || c == 1.0;
    }
    double wl = NAN, wh = NAN;
    if (binary) rd_wilson(k, (double)n, &wl, &wh);
    cJSON_AddNumberToObject(x, "n", (double)n);
    rd_json_add(x, "score", rd_json_num(v));
    rd_json_add(x, "credit", rd_json_num(k));
    rd_json_add(x, "wilson95", rd_json_pair(wl, wh));
  }
  return x;
}

/* One model: its subsets (those present), sections and score with their intervals. pt holds the
 * point estimate [M × K]; each interval is a null here, kept in slot[m * K + k] to be filled by
 * bench_report_finish (it stays null without the bootstrap). */
static cJSON *model_json(const bench_report_in *in, int64_t m, const double *val, const double *pt, cJSON **slot) {
  const bench_plan *p = in->p;
  const bench_dims *d = &p->d;
  int64_t M = d->M, K = d->n_sec + 1;
  cJSON *e = cJSON_CreateObject();
  cJSON_AddStringToObject(e, "model", bench_model_name(p, m));
  cJSON *subs = cJSON_AddObjectToObject(e, "subsets");
  for (int64_t s = 0; s < d->S; s++) {
    double v = val[s * M + m];
    if (p->subset_n[s] == 0 || (d->accuracy_mode && isnan(v))) continue;
    cJSON_AddItemToObject(subs, bench_subset_name(p, s), subset_json(in, m, s, v));
  }
  cJSON *secs = cJSON_AddObjectToObject(e, "sections");
  for (int64_t k = 0; k < d->n_sec; k++) {
    cJSON *x = cJSON_CreateObject();
    rd_json_add(x, "score", rd_json_num(pt[m * K + k]));
    rd_json_add(x, "ci95", slot[m * K + k] = cJSON_CreateNull());
    cJSON_AddItemToObject(secs, section_name(in->o, k), x);
  }
  rd_json_add(e, "score", rd_json_num(pt[m * K + K - 1]));
  rd_json_add(e, "score_ci95", slot[m * K + K - 1] = cJSON_CreateNull());
  return e;
}

/* Ranks in input order, sorted by score descending (undefined scores last). */
static const double *sort_scores;
static int by_score(const void *a, const void *b) {
  int64_t i = *(const int64_t *)a, j = *(const int64_t *)b;
  double x = sort_scores[i], y = sort_scores[j];
  int nx = isnan(x), ny = isnan(y);
  if (nx != ny) return nx - ny;
  if (!nx && x != y) return x > y ? -1 : 1;
  return (i > j) - (i < j);
}

static int leaderboard_json(cJSON *r, const bench_plan *p, const double *scores, rd_status *st) {
  int64_t M = p->d.M;
  int64_t *order = malloc(sizeof(int64_t) * (size_t)M);
  if (!order) return rd_fail(st, RD_EFAIL, "out of memory");
  for (int64_t m = 0; m < M; m++) order[m] = m;
  sort_scores = scores;
  qsort(order, (size_t)M, sizeof *order, by_score);
  sort_scores = NULL;
  cJSON *lb = cJSON_AddArrayToObject(r, "leaderboard");
  for (int64_t q = 0; q < M; q++) {
    cJSON *x = cJSON_CreateObject();
    cJSON_AddNumberToObject(x, "rank", (double)(q + 1));
    cJSON_AddStringToObject(x, "model", bench_model_name(p, order[q]));
    rd_json_add(x, "score", rd_json_num(scores[order[q]]));
    cJSON_AddItemToArray(lb, x);
  }
  free(order);
  return RD_OK;
}

/* One compared quantity: the point difference and, from the bootstrap (c: lo, hi, p, used; NULL
 * without it), the interval, the p-value and the replicates used; p_holm when adjusting. */
static cJSON *comparison_values(cJSON *x, double diff, const double *c, int holm, double p_holm) {
  rd_json_add(x, "diff", rd_json_num(diff));
  rd_json_add(x, "ci95", rd_json_pair(c ? c[0] : NAN, c ? c[1] : NAN));
  rd_json_add(x, "p", rd_json_num(c ? c[2] : NAN));
  if (holm) rd_json_add(x, "p_holm", rd_json_num(p_holm));
  int64_t used = c ? (int64_t)c[3] : 0;
  cJSON_AddNumberToObject(x, "resamples", (double)used);
  /* p moves in steps of 2/resamples: p = 0 means p < 2/resamples (docs/reference.md, 'Statistics') */
  rd_json_add(x, "p_resolution", rd_json_num(used > 0 ? 2.0 / (double)used : NAN));
  return x;
}

/* Holm's step-down adjustment of the n p-values p[i] that are not NaN (the family), into adj (NaN
 * elsewhere): with the family sorted ascending, adj_(i) = min(1, max over j <= i of (m - j + 1) p_(j)).
 * Equal p-values get equal adjusted values, so the order among ties does not matter. */
static const double *holm_p;
static int by_p(const void *a, const void *b) {
  int64_t i = *(const int64_t *)a, j = *(const int64_t *)b;
  if (holm_p[i] != holm_p[j]) return holm_p[i] < holm_p[j] ? -1 : 1;
  return (i > j) - (i < j);
}

static int64_t holm_adjust(const double *p, int64_t n, double *adj) {
  int64_t *order = malloc(sizeof(int64_t) * (size_t)(n + 1)), m = 0;
  for (int64_t i = 0; i < n; i++) {
    adj[i] = NAN;
    if (order && !isnan(p[i])) order[m++] = i;
  }
  if (!order) return -1;
  holm_p = p;
  qsort(order, (size_t)m, sizeof *order, by_p);
  holm_p = NULL;
  double run = 0.0;
  for (int64_t k = 0; k < m; k++) {
    double v = (double)(m - k) * p[order[k]];
    if (v > run) run = v;
    adj[order[k]] = run < 1.0 ? run : 1.0;
  }
  free(order);
  return m;
}

/* Paired comparisons: replicate b's difference uses the same draws for both models. pt holds the
 * point estimates [M × K]; with "compare_sections" each pair also lists its sections; with "adjust":
 * "holm" every p-value of the list (scores and sections) is adjusted as one family. */
static int comparisons_json(cJSON *r, const bench_report_in *in, const double *pt) {
  const bench_dims *d = &in->p->d;
  int64_t K = d->n_sec + 1, per = bench_cmp_per_pair(in->o, d), n = (int64_t)in->n_cmp * per;
  int holm = in->o->holm;
  double *pv = malloc(sizeof(double) * (size_t)(n + 1)), *adj = malloc(sizeof(double) * (size_t)(n + 1));
  if (!pv || !adj) {
    free(pv);
    free(adj);
    return -1;
  }
  for (int64_t u = 0; u < n; u++) pv[u] = in->B > 0 ? in->cmp[4 * u + 2] : NAN;
  int64_t family = holm ? holm_adjust(pv, n, adj) : 0;
  cJSON *cmps = cJSON_AddArrayToObject(r, "comparisons");
  for (int q = 0; q < in->n_cmp && family >= 0; q++) {
    int64_t a = in->cmp_a[q], b = in->cmp_b[q], u = (int64_t)q * per;
    const double *c = in->B > 0 ? in->cmp + 4 * u : NULL;
    cJSON *x = cJSON_CreateObject();
    cJSON_AddStringToObject(x, "a", bench_model_name(in->p, a));
    cJSON_AddStringToObject(x, "b", bench_model_name(in->p, b));
    comparison_values(x, pt[a * K + K - 1] - pt[b * K + K - 1], c ? c + 4 * (per - 1) : NULL, holm, adj[u + per - 1]);
    if (in->o->compare_sections) {
      cJSON *secs = cJSON_AddObjectToObject(x, "sections");
      for (int64_t k = 0; k < d->n_sec; k++)
        cJSON_AddItemToObject(secs, section_name(in->o, k),
                              comparison_values(cJSON_CreateObject(), pt[a * K + k] - pt[b * K + k],
                                                c ? c + 4 * k : NULL, holm, adj[u + k]));
    }
    cJSON_AddItemToArray(cmps, x);
  }
  if (holm && family >= 0) {
    cJSON *h = cJSON_AddObjectToObject(r, "adjustment");
    cJSON_AddStringToObject(h, "method", "holm");
    cJSON_AddNumberToObject(h, "family", (double)family);
  }
  free(pv);
  free(adj);
  return family >= 0 ? 0 : -1;
}

/* The point-estimate part of the result object (val: subset values [S × M], pt: sections and score
 * [M × K]): everything up to the leaderboard, the intervals as nulls in slot. */
static int report_begin_json(const bench_report_in *in, const double *val, const double *pt, cJSON **slot,
                             cJSON **result, rd_status *st) {
  const bench_plan *p = in->p;
  const bench_opts *o = in->o;
  const bench_dims *d = &p->d;
  int64_t M = d->M, K = d->n_sec + 1;
  double *scores = malloc(sizeof(double) * (size_t)M);
  if (!scores) return rd_fail(st, RD_EFAIL, "out of memory");
  cJSON *r = cJSON_CreateObject();
  cJSON_AddStringToObject(r, "scheme", scheme_name(o->scheme));
  cJSON_AddStringToObject(r, "item_rule", o->rule == RD_BENCH_STRICT ? "strict" : "tie-credit");
  cJSON_AddStringToObject(r, "input", d->accuracy_mode ? "subset_accuracy" : "items");
  cJSON_AddNumberToObject(r, "n_models", (double)M);
  cJSON_AddNumberToObject(r, "n_items", (double)(d->accuracy_mode ? 0 : d->I));
  cJSON_AddNumberToObject(r, "n_subsets", (double)d->S);
  cJSON *miss = cJSON_AddArrayToObject(r, "missing_subsets");
  for (int q = 0; q < in->n_missing; q++) cJSON_AddItemToArray(miss, cJSON_CreateString(in->missing[q]));
  cJSON *models = cJSON_AddArrayToObject(r, "models");
  for (int64_t m = 0; m < M; m++) {
    cJSON_AddItemToArray(models, model_json(in, m, val, pt, slot));
    scores[m] = pt[m * K + K - 1];
  }
  int rc = leaderboard_json(r, p, scores, st);
  free(scores);
  if (rc != RD_OK) {
    cJSON_Delete(r);
    return st->code;
  }
  *result = r;
  return RD_OK;
}

int bench_report_begin(const bench_report_in *in, bench_report_part *part, cJSON **result, double **subset_score,
                       rd_status *st) {
  const bench_dims *d = &in->p->d;
  int64_t S = d->S, M = d->M, K = d->n_sec + 1;
  memset(part, 0, sizeof *part);
  double *val = malloc(sizeof(double) * (size_t)(S * M));
  double *acc = malloc(sizeof(double) * (size_t)bench_scratch_len(in->E));
  double *ss = malloc(sizeof(double) * (size_t)(M * S));
  part->pt = malloc(sizeof(double) * (size_t)(M * K));
  part->slot = malloc(sizeof(cJSON *) * (size_t)(M * K));
  int rc = val && acc && ss && part->pt && part->slot ? RD_OK : rd_fail(st, RD_EFAIL, "out of memory");
  if (rc == RD_OK) {
    bench_evaluate(in->E, NULL, val, acc, part->pt);
    for (int64_t m = 0; m < M; m++)
      for (int64_t s = 0; s < S; s++) ss[m * S + s] = val[s * M + m];
    rc = report_begin_json(in, val, part->pt, part->slot, result, st);
  }
  free(val), free(acc);
  if (rc != RD_OK) {
    free(ss);
    bench_report_part_free(part);
    return rc;
  }
  *subset_score = ss;
  return RD_OK;
}

int bench_report_finish(const bench_report_in *in, bench_report_part *part, cJSON *result, rd_status *st) {
  const bench_dims *d = &in->p->d;
  int64_t n = d->M * (d->n_sec + 1), dropped = 0;
  /* percentile intervals of sections and score (computed by the ranks that own them); the most
   * replicates dropped for an undefined value */
  for (int64_t q = 0; in->B > 0 && q < n; q++) {
    rd_json_fill_pair(part->slot[q], in->ci[3 * q], in->ci[3 * q + 1]);
    if (in->ci[3 * q + 2] > (double)dropped) dropped = (int64_t)in->ci[3 * q + 2];
  }
  if (comparisons_json(result, in, part->pt) != 0) return rd_fail(st, RD_EFAIL, "out of memory");
  cJSON *bo = cJSON_AddObjectToObject(result, "bootstrap");
  cJSON_AddNumberToObject(bo, "resamples", (double)in->B);
  cJSON_AddStringToObject(bo, "unit", "item within its subset (Ties: prompt with its ref and tied rows)");
  cJSON_AddNumberToObject(bo, "dropped", (double)dropped);
  return RD_OK;
}

void bench_report_part_free(bench_report_part *part) {
  free(part->pt);
  free(part->slot);
  part->pt = NULL;
  part->slot = NULL;
}

int bench_write_h5(hid_t h5, const bench_plan *p, const double *credit, const double *subset_score, rd_status *st) {
  const bench_dims *d = &p->d;
  int64_t ds[2] = {d->M, d->S};
  /* per-subset accuracies: no items, an empty [M, 0] item_credit */
  int64_t dc[2] = {d->M, d->accuracy_mode ? 0 : d->I};
  RD_TRY(rd_h5_write_f64(h5, "/bench/item_credit", 2, dc, credit, st));
  return rd_h5_write_f64(h5, "/bench/subset_score", 2, ds, subset_score, st);
}
