/* cm: the report object and the per-pair datasets of the output (the stdout summary is cm_view.c's). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_internal.h"
#include "rmdiag/common/h5out.h"
#include "rmdiag/common/jsonutil.h"
#include "rmdiag/kernels/stats.h"

static cJSON *summary_json(const double *t, double ci_lo, double ci_hi) {
  static const char *const keys[7] = {"mean", "sd", "q05", "q25", "median", "q75", "q95"};
  cJSON *o = cJSON_CreateObject();
  for (int i = 0; i < 7; i++) rd_json_add(o, keys[i], rd_json_num(t[1 + i]));
  rd_json_add(o, "ci95", rd_json_pair(ci_lo, ci_hi));
  return o;
}

int cm_report(const rd_job *job, const cm_layout *L, const cm_users *u, const double *cm, const double *F,
                     double *boot, int64_t B, double **res, cJSON **out, rd_status *st) {
  const cm_opts *o = job->opts;
  int64_t P = L->P;
  static const char *const names[3] = {"tm", "tg", "cm"};
  double lo[3] = {NAN, NAN, NAN}, hi[3] = {NAN, NAN, NAN};
  int64_t dropped[3] = {0, 0, 0};
  double *col = malloc(sizeof(double) * (size_t)(B ? B : 1));
  double *means = malloc(sizeof(double) * (size_t)(u->U ? u->U : 1));
  if (!col || !means) {
    free(col);
    free(means);
    return rd_fail(st, RD_EFAIL, "out of memory");
  }
  for (int j = 0; j < 3 && B > 0; j++) {
    for (int64_t b = 0; b < B; b++) col[b] = boot[b * 3 + j];
    dropped[j] = (int64_t)rd_percentile_ci95(col, (size_t)B, &lo[j], &hi[j]);
  }
  free(col);
  int64_t neg = 0;
  for (int64_t p = 0; p < P; p++) neg += cm[p] < 0.0;
  cJSON *r = cJSON_CreateObject();
  cJSON_AddNumberToObject(r, "n_pairs", (double)P);
  cJSON_AddNumberToObject(r, "n_users", (double)u->U);
  cJSON_AddNumberToObject(r, "n_runs", (double)L->R);
  for (int j = 0; j < 3; j++) {
    char key[32];
    snprintf(key, sizeof key, "n_%s_defined", names[j]);
    cJSON_AddNumberToObject(r, key, res[j][0]);
  }
  for (int j = 0; j < 3; j++) cJSON_AddItemToObject(r, names[j], summary_json(res[j], lo[j], hi[j]));
  rd_json_add(r, "cm_negative_fraction", rd_json_num(res[2][0] > 0 ? (double)neg / res[2][0] : NAN));
  /* user_macro: mean over users (with the value defined) of each user's mean */
  cJSON *um = cJSON_CreateObject();
  for (int j = 0; j < 3; j++) {
    int64_t n = 0;
    const double *sum = F + (2 * j) * u->U, *cnt = F + (2 * j + 1) * u->U;
    for (int64_t k = 0; k < u->U; k++)
      if (cnt[k] > 0) means[n++] = sum[k] / cnt[k];
    rd_json_add(um, names[j], rd_json_num(n > 0 ? rd_sum(means, (size_t)n) / (double)n : NAN));
  }
  free(means);
  cJSON_AddItemToObject(r, "user_macro", um);
  cJSON *strata = cJSON_AddArrayToObject(r, "strata");
  cJSON *excl = cJSON_AddObjectToObject(r, "strata_excluded");
  for (int i = 0; i < o->n_strata; i++) {
    const double *t = res[3 + i];
    const cm_stratum *sp = &o->strata[i];
    for (int64_t b = 0; b < (int64_t)t[1]; b++) {
      const double *e = t + 2 + 7 * b;
      cJSON *x = cJSON_CreateObject();
      cJSON_AddStringToObject(x, "covariate", sp->covariate);
      rd_json_add(x, "bin", rd_json_num(e[0]));
      if (L->cats && L->cats[i].n > 0) {
        /* a string covariate: the category is named; its code (the bin) has no edges */
        cJSON_AddStringToObject(x, "category", L->cats[i].buf + L->cats[i].off[(int64_t)e[0]]);
        cJSON_AddNullToObject(x, "lo");
        cJSON_AddNullToObject(x, "hi");
      } else {
        rd_json_add(x, "lo", rd_json_num(e[1]));
        rd_json_add(x, "hi", rd_json_num(e[2]));
      }
      cJSON_AddNumberToObject(x, "n", e[3]);
      rd_json_add(x, "tm", rd_json_num(e[4]));
      rd_json_add(x, "tg", rd_json_num(e[5]));
      rd_json_add(x, "cm", rd_json_num(e[6]));
      cJSON_AddItemToArray(strata, x);
    }
    cJSON_AddNumberToObject(excl, sp->covariate, t[0]);
  }
  cJSON *bo = cJSON_AddObjectToObject(r, "bootstrap");
  cJSON_AddNumberToObject(bo, "resamples", (double)B);
  cJSON_AddStringToObject(bo, "unit", "user");
  cJSON *dr = cJSON_AddObjectToObject(bo, "dropped");
  for (int j = 0; j < 3; j++) cJSON_AddNumberToObject(dr, names[j], (double)dropped[j]);
  *out = r;
  return RD_OK;
}

int cm_write_h5(hid_t h5, int64_t P, int64_t R, const double *tm, const double *tg, const double *cm,
                       const int32_t *n_train, rd_status *st) {
  int32_t *n_held = malloc(sizeof(int32_t) * (size_t)P);
  if (!n_held) return rd_fail(st, RD_EFAIL, "out of memory");
  for (int64_t p = 0; p < P; p++) n_held[p] = (int32_t)R - n_train[p];
  int64_t dims[1] = {P};
  int rc = rd_h5_write_f64(h5, "/cm/tm", 1, dims, tm, st);
  if (rc == RD_OK) rc = rd_h5_write_f64(h5, "/cm/tg", 1, dims, tg, st);
  if (rc == RD_OK) rc = rd_h5_write_f64(h5, "/cm/cm", 1, dims, cm, st);
  if (rc == RD_OK) rc = rd_h5_write_i32(h5, "/cm/n_train", 1, dims, n_train, st);
  if (rc == RD_OK) rc = rd_h5_write_i32(h5, "/cm/n_held", 1, dims, n_held, st);
  free(n_held);
  return rc;
}
