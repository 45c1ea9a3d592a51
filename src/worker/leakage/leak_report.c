/* leakage: the report (rank 0) from the tasks' results: the bootstrap intervals and null rates of each
 * cell, the result object, the table on stdout and the per-row datasets of the output. See
 * docs/reference.md, 'leakage report' ('Result keys', 'Output datasets'). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "leak_internal.h"
#include "rmdiag/common/h5out.h"
#include "rmdiag/common/jsonutil.h"
#include "rmdiag/kernels/stats.h"

/* ---- the replicates, per cell ---------------------------------------------------------------------- */

typedef struct leak_resampled {
  double *boot_ci;        /* [4 C]: r lo, hi, mae lo, hi (NaN without replicates) */
  int64_t *boot_dropped;  /* [C] replicates whose r was undefined */
  double *null_w;         /* [C] mean within of the null draws (NaN: none) */
  double *null_used;      /* [C] draws that used a month */
} leak_resampled;

/* What the stdout table shows of a cell (NaN prints as "-"). */
typedef struct leak_row {
  double n, parse, r, mae, within, sign, selectivity;
} leak_row;

static void resampled_free(leak_resampled *rs) {
  free(rs->boot_ci), free(rs->boot_dropped), free(rs->null_w), free(rs->null_used);
}

static int resampled_alloc(const leak_work *w, leak_resampled *rs) {
  int64_t C = w->C;
  size_t c1 = (size_t)(C ? C : 1);
  rs->boot_ci = malloc(sizeof(double) * 4 * c1);
  rs->boot_dropped = calloc(c1, sizeof(int64_t));
  rs->null_w = malloc(sizeof(double) * c1);
  rs->null_used = calloc(c1, sizeof(double));
  if (!rs->boot_ci || !rs->boot_dropped || !rs->null_w || !rs->null_used) return -1;
  for (int64_t c = 0; c < 4 * C; c++) rs->boot_ci[c] = NAN;
  for (int64_t c = 0; c < C; c++) rs->null_w[c] = NAN;
  return 0;
}

void leak_boot_reduce(double *r, double *mae, int64_t B, double *out) {
  out[4] = (double)rd_percentile_ci95(r, (size_t)B, &out[0], &out[1]);
  rd_percentile_ci95(mae, (size_t)B, &out[2], &out[3]);
}

void leak_null_reduce(double *v, int64_t P, double *out) {
  int64_t used = 0;
  for (int64_t p = 0; p < P; p++)
    if (!isnan(v[p])) v[used++] = v[p];
  out[0] = (double)used;
  out[1] = used ? rd_sum(v, (size_t)used) / (double)used : NAN;
}

/* A boot cell's reduction (leak_boot_reduce) into the report's tables; a null target's likewise. */
static void boot_store(leak_resampled *rs, int64_t c, const double *red) {
  memcpy(rs->boot_ci + 4 * c, red, sizeof(double) * 4);
  rs->boot_dropped[c] = (int64_t)red[4];
}

static void null_store(leak_resampled *rs, int64_t c, const double *red) {
  rs->null_used[c] = red[0];
  rs->null_w[c] = red[1];
}

/* Percentile intervals of r and mae per cell with a scored row: reduced by the tasks of whole cells,
 * else here from chunks that hold the replicates in flat order k = boot cell * B + b, r then mae of
 * each chunk. */
static int gather_boot(const leak_work *w, double **res, leak_resampled *rs) {
  int64_t B = w->o->bootstrap, base = w->C + CTL_N;
  if (B == 0 || w->NB == 0) return 0;
  if (w->boot_whole) {  /* chunk b is boot cell b */
    for (int64_t b = 0; b < w->NB; b++) boot_store(rs, w->boot_cell[b], res[base + b]);
    return 0;
  }
  double *r_all = malloc(sizeof(double) * (size_t)(w->NB * B)), *m_all = malloc(sizeof(double) * (size_t)(w->NB * B));
  if (!r_all || !m_all) {
    free(r_all), free(m_all);
    return -1;
  }
  for (int64_t ch = 0; ch < w->n_boot_chunks; ch++) {
    int64_t k0 = w->boot_bounds[ch], k1 = w->boot_bounds[ch + 1];
    const double *v = res[base + ch];
    memcpy(r_all + k0, v, sizeof(double) * (size_t)(k1 - k0));
    memcpy(m_all + k0, v + (k1 - k0), sizeof(double) * (size_t)(k1 - k0));
  }
  for (int64_t b = 0; b < w->NB; b++) {
    double red[LEAK_BOOT_W];
    leak_boot_reduce(r_all + b * B, m_all + b * B, B, red);
    boot_store(rs, w->boot_cell[b], red);
  }
  free(r_all), free(m_all);
  return 0;
}

/* The mean within of each target's null draws that used a month: reduced by the tasks of whole
 * targets, else here from chunks in flat order k = target * P + p. */
static int gather_null(const leak_work *w, double **res, leak_resampled *rs) {
  int64_t P = w->o->null_permutations, base = w->C + CTL_N + w->n_boot_chunks;
  if (w->NT == 0) return 0;
  if (w->null_whole) {  /* chunk t is target t */
    for (int64_t t = 0; t < w->NT; t++) null_store(rs, w->null_cell[t], res[base + t]);
    return 0;
  }
  double *all = malloc(sizeof(double) * (size_t)(w->NT * P));
  if (!all) return -1;
  for (int64_t ch = 0; ch < w->n_null_chunks; ch++) {
    int64_t k0 = w->null_bounds[ch], k1 = w->null_bounds[ch + 1];
    memcpy(all + k0, res[base + ch], sizeof(double) * (size_t)(k1 - k0));
  }
  for (int64_t t = 0; t < w->NT; t++) {
    double red[LEAK_NULL_W];
    leak_null_reduce(all + t * P, P, red);
    null_store(rs, w->null_cell[t], red);
  }
  free(all);
  return 0;
}

/* ---- cells -------------------------------------------------------------------------------------------- */

static cJSON *count_json(double x) { return cJSON_CreateNumber(x); }

static void add_metrics(cJSON *o, const double *m) {
  cJSON_AddItemToObject(o, "n_rows", count_json(m[MT_NROWS]));
  cJSON_AddItemToObject(o, "n_parsed", count_json(m[MT_NPARSED]));
  rd_json_add(o, "parse_rate", rd_json_num(m[MT_PR]));
  rd_json_add(o, "parse_rate_wilson95", rd_json_pair(m[MT_PR_LO], m[MT_PR_HI]));
  cJSON_AddItemToObject(o, "n_no_truth", count_json(m[MT_NNOTRUTH]));
  cJSON_AddItemToObject(o, "n_scored", count_json(m[MT_NSCORED]));
}

static void add_scores(cJSON *o, const double *m, const double *r_ci, const double *mae_ci) {
  rd_json_add(o, "r", rd_json_num(m[MT_R]));
  if (r_ci) rd_json_add(o, "r_ci95", rd_json_pair(r_ci[0], r_ci[1]));
  rd_json_add(o, "mae", rd_json_num(m[MT_MAE]));
  if (mae_ci) rd_json_add(o, "mae_ci95", rd_json_pair(mae_ci[0], mae_ci[1]));
  rd_json_add(o, "within", rd_json_num(m[MT_WITHIN]));
  rd_json_add(o, "within_wilson95", rd_json_pair(m[MT_W_LO], m[MT_W_HI]));
  cJSON_AddItemToObject(o, "n_within", count_json(m[MT_NWITHIN]));
  rd_json_add(o, "sign_acc", rd_json_num(m[MT_SIGN]));
  rd_json_add(o, "sign_wilson95", rd_json_pair(m[MT_S_LO], m[MT_S_HI]));
  cJSON_AddItemToObject(o, "n_sign", count_json(m[MT_NSIGN]));
  rd_json_add(o, "slope", rd_json_num(m[MT_SLOPE]));
  rd_json_add(o, "intercept", rd_json_num(m[MT_INTERCEPT]));
}

/* "model", "series", "variant" of cell c. */
static void add_cell_names(cJSON *o, const leak_work *w, int64_t c) {
  int64_t m, s, v;
  leak_cell_parts(w, c, &m, &s, &v);
  cJSON_AddStringToObject(o, "model", leak_name_of(w->d, LEAK_NAMES_MODEL, m));
  cJSON_AddStringToObject(o, "series", leak_name_of(w->d, LEAK_NAMES_SERIES, s));
  cJSON_AddStringToObject(o, "variant", leak_name_of(w->d, LEAK_NAMES_VARIANT, v));
}

static double selectivity(const double *v, double null_w) {
  return (null_w > 0 && !isnan(v[MT_WITHIN])) ? v[MT_WITHIN] / null_w : NAN;
}

static cJSON *report_cell(const leak_work *w, int64_t c, const double *v, const leak_resampled *rs, leak_row *row) {
  int64_t B = w->o->bootstrap;
  cJSON *e = cJSON_CreateObject();
  add_cell_names(e, w, c);
  add_metrics(e, v);
  add_scores(e, v, B > 0 ? &rs->boot_ci[4 * c] : NULL, B > 0 ? &rs->boot_ci[4 * c + 2] : NULL);
  if (B == 0) {
    cJSON_AddNullToObject(e, "r_ci95");
    cJSON_AddNullToObject(e, "mae_ci95");
  }
  cJSON_AddNumberToObject(e, "r_bootstrap_dropped", B > 0 && v[MT_NSCORED] > 0 ? (double)rs->boot_dropped[c] : 0.0);
  int64_t pos = MT_N;
  int64_t nseeds = (int64_t)v[pos++];
  cJSON *ps = cJSON_AddArrayToObject(e, "per_seed");
  for (int64_t k = 0; k < nseeds; k++, pos += MT_N) {
    cJSON *x = cJSON_CreateObject();
    cJSON_AddNumberToObject(x, "seed", v[pos++]);
    add_metrics(x, v + pos);
    add_scores(x, v + pos, NULL, NULL);
    cJSON_AddItemToArray(ps, x);
  }
  rd_json_add(e, "null_within", rd_json_num(rs->null_w[c]));
  double sel = selectivity(v, rs->null_w[c]);
  rd_json_add(e, "selectivity", rd_json_num(sel));
  cJSON_AddNumberToObject(e, "null_draws_used", rs->null_used[c]);
  pos = leak_cell_tail(v) + (w->o->has_holdout ? 2 * MT_N : 0);
  cJSON_AddNumberToObject(e, "n_entropy", v[pos]);
  rd_json_add(e, "entropy_mean", rd_json_num(v[pos + 1]));
  rd_json_add(e, "entropy_median", rd_json_num(v[pos + 2]));
  *row = (leak_row){v[MT_NSCORED], v[MT_PR], v[MT_R], v[MT_MAE], v[MT_WITHIN], v[MT_SIGN], sel};
  return e;
}

static cJSON *holdout_side(const double *m) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddItemToObject(o, "n_rows", count_json(m[MT_NROWS]));
  cJSON_AddItemToObject(o, "n_parsed", count_json(m[MT_NPARSED]));
  rd_json_add(o, "parse_rate", rd_json_num(m[MT_PR]));
  rd_json_add(o, "r", rd_json_num(m[MT_R]));
  cJSON_AddItemToObject(o, "n_scored", count_json(m[MT_NSCORED]));
  rd_json_add(o, "mae", rd_json_num(m[MT_MAE]));
  rd_json_add(o, "within", rd_json_num(m[MT_WITHIN]));
  return o;
}

/* "holdout_from" and "holdout": each cell's rows before and from the month. */
static void report_holdout(cJSON *r, const leak_work *w, double **res) {
  cJSON_AddNumberToObject(r, "holdout_from", (double)w->o->holdout_from);
  cJSON *hold = cJSON_AddArrayToObject(r, "holdout");
  for (int64_t c = 0; c < w->C; c++) {
    const double *v = res[c] + leak_cell_tail(res[c]);
    cJSON *h = cJSON_CreateObject();
    add_cell_names(h, w, c);
    cJSON_AddItemToObject(h, "before", holdout_side(v));
    cJSON_AddItemToObject(h, "from", holdout_side(v + MT_N));
    cJSON_AddItemToArray(hold, h);
  }
}

static void report_cells(cJSON *r, const leak_work *w, double **res, const leak_resampled *rs, leak_row *rows) {
  const leak_data *d = w->d;
  int64_t n_excl = 0, n_fict = 0;
  for (int64_t i = 0; i < d->Q; i++) {
    n_excl += d->status[i] == 2;
    n_fict += w->row_cell[i] < 0;
  }
  cJSON_AddNumberToObject(r, "n_rows_total", (double)d->Q);
  cJSON_AddNumberToObject(r, "n_excluded", (double)n_excl);
  cJSON_AddNumberToObject(r, "n_fictional_rows", (double)n_fict);
  cJSON_AddNumberToObject(r, "n_cells", (double)w->C);
  cJSON *cells = cJSON_AddArrayToObject(r, "cells");
  for (int64_t c = 0; c < w->C; c++) cJSON_AddItemToArray(cells, report_cell(w, c, res[c], rs, &rows[c]));
  if (w->o->has_holdout) report_holdout(r, w, res);
}

/* ---- controls ------------------------------------------------------------------------------------------ */

static void report_fictional(cJSON *r, const leak_data *d, const double *v, int64_t len) {
  cJSON *a = cJSON_AddArrayToObject(r, "fictional");
  for (int64_t q = 0; q < len; q += LEAK_FICT_W) {
    cJSON *x = cJSON_CreateObject();
    cJSON_AddStringToObject(x, "model", leak_name_of(d, LEAK_NAMES_MODEL, (int64_t)v[q]));
    cJSON_AddNumberToObject(x, "n_rows", v[q + 1]);
    cJSON_AddNumberToObject(x, "n_parsed", v[q + 2]);
    rd_json_add(x, "parse_rate", rd_json_num(v[q + 3]));
    rd_json_add(x, "parse_rate_wilson95", rd_json_pair(v[q + 4], v[q + 5]));
    cJSON_AddNumberToObject(x, "n_entropy", v[q + 6]);
    rd_json_add(x, "entropy_mean", rd_json_num(v[q + 7]));
    rd_json_add(x, "entropy_median", rd_json_num(v[q + 8]));
    cJSON_AddItemToArray(a, x);
  }
}

static void report_ranking(cJSON *r, const leak_data *d, const double *v, int64_t len) {
  cJSON *a = cJSON_AddArrayToObject(r, "ranking");
  for (int64_t q = 0; q < len; q += LEAK_RANK_W) {
    cJSON *x = cJSON_CreateObject();
    cJSON_AddStringToObject(x, "model", leak_name_of(d, LEAK_NAMES_MODEL, (int64_t)v[q]));
    cJSON_AddStringToObject(x, "series", leak_name_of(d, LEAK_NAMES_SERIES, (int64_t)v[q + 1]));
    cJSON_AddNumberToObject(x, "n_rows", v[q + 2]);
    cJSON_AddNumberToObject(x, "n_picked", v[q + 3]);
    rd_json_add(x, "parse_rate", rd_json_num(v[q + 4]));
    cJSON_AddNumberToObject(x, "n_scored", v[q + 5]);
    cJSON_AddNumberToObject(x, "n_correct", v[q + 6]);
    rd_json_add(x, "accuracy", rd_json_num(v[q + 7]));
    rd_json_add(x, "accuracy_wilson95", rd_json_pair(v[q + 8], v[q + 9]));
    cJSON_AddNumberToObject(x, "n_tie", v[q + 10]);
    cJSON_AddNumberToObject(x, "n_no_truth", v[q + 11]);
    cJSON_AddItemToArray(a, x);
  }
}

static void report_residual(cJSON *r, const leak_data *d, const leak_opts *o, const double *v, int64_t len) {
  cJSON *a = cJSON_AddArrayToObject(r, "residualisation");
  for (int64_t q = 0; q < len; q += LEAK_RESID_W) {
    cJSON *x = cJSON_CreateObject();
    cJSON_AddStringToObject(x, "model", leak_name_of(d, LEAK_NAMES_MODEL, (int64_t)v[q]));
    cJSON_AddNumberToObject(x, "n", v[q + 1]);
    rd_json_add(x, "gamma", rd_json_num(v[q + 2]));
    rd_json_add(x, "r_signal_truth", rd_json_num(v[q + 3]));
    rd_json_add(x, "r_residual_truth", rd_json_num(v[q + 4]));
    rd_json_add(x, "leak_share", rd_json_num(v[q + 5]));
    rd_json_add(x, "r_signal_recall", rd_json_num(v[q + 6]));
    cJSON_AddItemToArray(a, x);
  }
  cJSON_AddStringToObject(r, "signal_series", o->signal_series);
}

/* The defense counts shared by the per-model and pooled entries, from `v` = [n, blocked, frac, lo, hi,
 * months, leaked, worst_case]. */
static void add_defense_counts(cJSON *x, const double *v) {
  cJSON_AddNumberToObject(x, "n", v[0]);
  cJSON_AddNumberToObject(x, "blocked", v[1]);
  rd_json_add(x, "blocked_fraction", rd_json_num(v[2]));
  rd_json_add(x, "blocked_wilson95", rd_json_pair(v[3], v[4]));
  cJSON_AddNumberToObject(x, "n_months", v[5]);
  cJSON_AddNumberToObject(x, "n_months_leaked", v[6]);
  rd_json_add(x, "worst_case_leaked_fraction", rd_json_num(v[7]));
}

static void report_defense(cJSON *r, const leak_data *d, const leak_opts *o, const double *v) {
  int64_t q = 0, np = (int64_t)v[q++];
  cJSON *a = cJSON_AddArrayToObject(r, "defense");
  for (int64_t k = 0; k < np; k++, q += LEAK_DEF_W) {
    cJSON *x = cJSON_CreateObject();
    cJSON_AddStringToObject(x, "defense", leak_name_of(d, LEAK_NAMES_DEFENSE, (int64_t)v[q]));
    cJSON_AddStringToObject(x, "model", leak_name_of(d, LEAK_NAMES_MODEL, (int64_t)v[q + 1]));
    add_defense_counts(x, v + q + 2);
    cJSON_AddNumberToObject(x, "n_benign", v[q + 10]);
    cJSON_AddNumberToObject(x, "n_benign_parsed", v[q + 11]);
    rd_json_add(x, "benign_parse_rate", rd_json_num(v[q + 10] > 0 ? v[q + 11] / v[q + 10] : NAN));
    cJSON_AddItemToArray(a, x);
  }
  int64_t npool = (int64_t)v[q++];
  cJSON *b = cJSON_AddArrayToObject(r, "defense_pooled");
  for (int64_t k = 0; k < npool; k++, q += LEAK_POOL_W) {
    cJSON *x = cJSON_CreateObject();
    cJSON_AddStringToObject(x, "defense", leak_name_of(d, LEAK_NAMES_DEFENSE, (int64_t)v[q]));
    add_defense_counts(x, v + q + 1);
    cJSON_AddItemToArray(b, x);
  }
  cJSON_AddStringToObject(r, "benign_attack", d->benign_attack >= 0 ? o->benign_attack : "");
}

static void report_controls(cJSON *r, const leak_work *w, double **res, const int64_t *lens) {
  const leak_data *d = w->d;
  int64_t base = w->C;
  if (d->has_fictional) report_fictional(r, d, res[base + CTL_FICTIONAL], lens[base + CTL_FICTIONAL]);
  if (d->has_rank) report_ranking(r, d, res[base + CTL_RANKING], lens[base + CTL_RANKING]);
  if (d->has_signal) report_residual(r, d, w->o, res[base + CTL_RESIDUAL], lens[base + CTL_RESIDUAL]);
  if (d->has_defense) report_defense(r, d, w->o, res[base + CTL_DEFENSE]);
}

/* "bootstrap" and "null": how the intervals and null rates were drawn. */
static void report_resampling(cJSON *r, const leak_work *w) {
  const leak_opts *o = w->o;
  cJSON *bo = cJSON_AddObjectToObject(r, "bootstrap");
  cJSON_AddNumberToObject(bo, "resamples", (double)o->bootstrap);
  cJSON_AddStringToObject(bo, "unit", "scored row");
  cJSON *nu = cJSON_AddObjectToObject(r, "null");
  cJSON_AddNumberToObject(nu, "permutations", (double)o->null_permutations);
  cJSON *fam = cJSON_AddArrayToObject(nu, "family");
  for (int k = 0; k < o->n_family; k++) cJSON_AddItemToArray(fam, cJSON_CreateString(o->family[k]));
  cJSON_AddNumberToObject(nu, "targets", (double)w->NT);
}

int leak_report(const leak_work *w, double **res, const int64_t *lens, cJSON **out, rd_status *st) {
  leak_resampled rs;
  memset(&rs, 0, sizeof rs);
  leak_row *rows = malloc(sizeof *rows * (size_t)(w->C ? w->C : 1));
  if (!rows || resampled_alloc(w, &rs) != 0 || gather_boot(w, res, &rs) != 0 || gather_null(w, res, &rs) != 0) {
    free(rows);
    resampled_free(&rs);
    return rd_fail(st, RD_EFAIL, "out of memory assembling the report");
  }
  cJSON *r = cJSON_CreateObject();
  report_cells(r, w, res, &rs, rows);
  report_controls(r, w, res, lens);
  report_resampling(r, w);
  resampled_free(&rs);
  free(rows);
  *out = r;
  return RD_OK;
}

/* ---- output datasets ----------------------------------------------------------------------------------------- */

int leak_write_h5(hid_t h5, const leak_work *w, rd_status *st) {
  const leak_data *d = w->d;
  int64_t Q = d->Q;
  double *ae = malloc(sizeof(double) * (size_t)(Q ? Q : 1));
  uint8_t *wi = malloc((size_t)(Q ? Q : 1));
  if (!ae || !wi) {
    free(ae), free(wi);
    return rd_fail(st, RD_EFAIL, "out of memory");
  }
  for (int64_t i = 0; i < Q; i++) {
    int scored = leak_scored(w, i);
    ae[i] = scored ? fabs(d->value[i] - w->row_truth[i]) : NAN;
    wi[i] = scored ? (uint8_t)leak_within_tol(w, d->value[i], w->row_truth[i]) : 0;
  }
  int64_t dims[1] = {Q};
  int rc = rd_h5_write_f64(h5, "/leak/abs_error", 1, dims, ae, st);
  if (rc == RD_OK) rc = rd_h5_write_u8(h5, "/leak/within", 1, dims, wi, st);
  if (rc == RD_OK) rc = rd_h5_write_f64(h5, "/leak/truth", 1, dims, w->row_truth, st);
  if (rc == RD_OK) rc = rd_h5_write_i32(h5, "/leak/cell", 1, dims, w->row_cell, st);
  free(ae), free(wi);
  return rc;
}
