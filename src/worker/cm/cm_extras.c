/* cm, rank 0, after the report: what makes it readable and joinable (docs/reference.md, 'cm report'): user-
 * cluster intervals for every stratum, the most memorized pairs by id, the warnings, and the output datasets
 * that join the per-pair values back to the input (/cm/pair_id, /cm/user_index). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cm_internal.h"
#include "rmdiag/common/h5out.h"
#include "rmdiag/common/jsonutil.h"

#define CM_TOP 10
#define CM_Z95 1.959963984540054

/* The input's pair ids as text (string or integer `pair_id` of length P), or NULL when it has none. */
static char **read_pair_ids(const rd_job *job, int64_t P, rd_status *st) {
  hid_t f;
  char path[600];
  rd_h5_path(path, sizeof path, job->group, "pair_id");
  if (rd_h5_open(job->input, MPI_COMM_NULL, &f, st) != RD_OK) return NULL;
  rd_dsinfo info;
  char **ids = NULL;
  rd_status ignore;
  rd_status_init(&ignore);
  if (rd_h5_exists(f, path) && rd_h5_info(f, job->input, path, &info, &ignore) == RD_OK && info.ndims == 1 &&
      info.dims[0] == P && (info.tclass == RD_TC_STRING || info.tclass == RD_TC_INT)) {
    ids = calloc((size_t)P, sizeof(char *));
    char *buf = NULL;
    size_t len = 0;
    int64_t *off = NULL;
    uint64_t *w = info.tclass == RD_TC_INT ? malloc(sizeof(uint64_t) * (size_t)P) : NULL;
    if (ids && info.tclass == RD_TC_STRING && rd_h5_read_strings(f, job->input, &info, &buf, &len, &off, st) == RD_OK) {
      for (int64_t p = 0; p < P; p++) ids[p] = strdup(buf + off[p]);
    } else if (ids && w && rd_h5_read_int_words(f, job->input, &info, 0, P, w, st) == RD_OK) {
      char tmp[32];
      for (int64_t p = 0; p < P; p++) {
        if (info.is_signed) snprintf(tmp, sizeof tmp, "%lld", (long long)(int64_t)w[p]);
        else snprintf(tmp, sizeof tmp, "%llu", (unsigned long long)w[p]);
        ids[p] = strdup(tmp);
      }
    }
    free(buf);
    free(off);
    free(w);
  }
  rd_h5_close(f);
  return ids;
}

static void free_ids(char **ids, int64_t P) {
  for (int64_t p = 0; ids && p < P; p++) free(ids[p]);
  free(ids);
}

/* A user's label without the quotes messages put around string ids. */
static cJSON *user_label(const cm_users *u, int32_t k) {
  const char *s = u->labels + u->label_off[k];
  size_t n = strlen(s);
  if (n >= 2 && s[0] == '"' && s[n - 1] == '"') {
    char *t = strndup(s + 1, n - 2);
    cJSON *j = cJSON_CreateString(t ? t : "");
    free(t);
    return j;
  }
  /* an integer id: a JSON number when float64 holds it exactly, else its digits as text */
  char *end = NULL;
  double x = strtod(s, &end);
  if (end && !*end && fabs(x) <= 9007199254740992.0) return cJSON_CreateNumber(x);
  return cJSON_CreateString(s);
}

/* The bin of x among bins with lower edges lo[0..K) ascending: the largest lo <= x (docs: 'cm report'). */
static int64_t bin_of(const double *lo, int64_t K, double x) {
  int64_t a = 0, b = K - 1;
  if (x < lo[0]) return -1;
  while (a < b) {
    int64_t m = (a + b + 1) / 2;
    if (lo[m] <= x) a = m;
    else b = m - 1;
  }
  return a;
}

/* Per-user sums of one bin, for TM, TG and CM: S[j][u], N[j][u] over the bin's pairs (in pair order), the
 * users touched listed once; zeroed again after use, so one scratch serves every bin in O(its pairs). */
typedef struct user_sums {
  double *S[3], *N[3];
  uint8_t *seen;
  int32_t *touched;
  int64_t n_touched;
} user_sums;

/* Interval of a bin's mean from the users' sums: the user-cluster-robust standard error
 * se^2 = G/(G-1) * sum_u (S_u - m N_u)^2 / (sum_u N_u)^2 (G users with a defined value), m +- z se. */
static void cluster_ci(const user_sums *w, int j, double *lo, double *hi) {
  double S = 0, N = 0, ss = 0;
  int64_t G = 0;
  for (int64_t i = 0; i < w->n_touched; i++) S += w->S[j][w->touched[i]], N += w->N[j][w->touched[i]];
  *lo = *hi = NAN;
  if (N == 0) return;
  double m = S / N;
  for (int64_t i = 0; i < w->n_touched; i++) {
    int32_t u = w->touched[i];
    if (w->N[j][u] == 0) continue;
    double e = w->S[j][u] - m * w->N[j][u];
    ss += e * e;
    G++;
  }
  if (G < 2) return;
  double se = sqrt((double)G / (double)(G - 1) * ss) / N;
  *lo = m - CM_Z95 * se;
  *hi = m + CM_Z95 * se;
}

/* One covariate's strata (entry[0..K) of the report's list): users and intervals per bin. Pairs are grouped by
 * bin with a counting sort, then each bin's per-user sums are formed in `w`. */
static int strata_intervals(cJSON **entry, int64_t K, int categorical, const double *cov, const cm_users *u,
                            const cm_values *v, user_sums *w, rd_status *st) {
  double *lo = malloc(sizeof(double) * (size_t)K);
  int64_t *start = calloc((size_t)K + 1, sizeof(int64_t)), *at = malloc(sizeof(int64_t) * (size_t)K);
  int32_t *bin = malloc(sizeof(int32_t) * (size_t)(v->P ? v->P : 1));
  int64_t *order = malloc(sizeof(int64_t) * (size_t)(v->P ? v->P : 1));
  int rc = lo && start && at && bin && order ? RD_OK : rd_fail(st, RD_EFAIL, "out of memory");
  /* a category's value is its "bin" (a number's value, or a string covariate's index in name order,
   * whose "lo" is null); a quantile bin starts at "lo" */
  for (int64_t b = 0; rc == RD_OK && b < K; b++)
    lo[b] = rd_jnum(cJSON_GetObjectItem(entry[b], categorical ? "bin" : "lo"));
  for (int64_t p = 0; rc == RD_OK && p < v->P; p++) {
    int64_t b = isfinite(cov[p]) ? bin_of(lo, K, cov[p]) : -1;
    if (b >= 0 && categorical && lo[b] != cov[p]) b = -1;
    bin[p] = (int32_t)b;
    if (b >= 0) start[b + 1]++;
  }
  for (int64_t b = 0; rc == RD_OK && b < K; b++) start[b + 1] += start[b], at[b] = start[b];
  for (int64_t p = 0; rc == RD_OK && p < v->P; p++)
    if (bin[p] >= 0) order[at[bin[p]]++] = p;
  const double *vals[3] = {v->tm, v->tg, v->cm};
  static const char *const keys[3] = {"tm_ci95", "tg_ci95", "cm_ci95"};
  for (int64_t b = 0; rc == RD_OK && b < K; b++) {
    cJSON *e = entry[b];
    int64_t n = start[b + 1] - start[b];
    if (rd_jnum(cJSON_GetObjectItem(e, "n")) != (double)n) {
      rc = rd_fail(st, RD_EFAIL, "internal error: stratum %lld of %s has %lld pairs, the report says %.0f", (long long)b,
                   rd_jstr(cJSON_GetObjectItem(e, "covariate")), (long long)n, rd_jnum(cJSON_GetObjectItem(e, "n")));
      break;
    }
    w->n_touched = 0;
    for (int64_t i = start[b]; i < start[b + 1]; i++) {
      int64_t p = order[i];
      int32_t us = u->of_pair[p];
      if (!w->seen[us]) w->seen[us] = 1, w->touched[w->n_touched++] = us;
      for (int j = 0; j < 3; j++)
        if (!isnan(vals[j][p])) w->S[j][us] += vals[j][p], w->N[j][us] += 1;
    }
    cJSON_AddNumberToObject(e, "n_users", (double)w->n_touched);
    for (int j = 0; j < 3; j++) {
      double l, h;
      cluster_ci(w, j, &l, &h);
      rd_json_add(e, keys[j], rd_json_pair(l, h));
    }
    for (int64_t i = 0; i < w->n_touched; i++) {
      int32_t us = w->touched[i];
      w->seen[us] = 0;
      for (int j = 0; j < 3; j++) w->S[j][us] = w->N[j][us] = 0;
    }
  }
  free(lo), free(start), free(at), free(bin), free(order);
  return rc;
}

static int add_strata_intervals(const rd_job *job, const cm_input *in, const cm_values *v, cJSON *r, rd_status *st) {
  const cm_opts *o = job->opts;
  cJSON *strata = cJSON_GetObjectItem(r, "strata");
  int64_t n = cJSON_GetArraySize(strata);
  cJSON **entry = malloc(sizeof(cJSON *) * (size_t)(n ? n : 1)), *e = strata ? strata->child : NULL;
  if (!entry) return rd_fail(st, RD_EFAIL, "out of memory");
  for (int64_t i = 0; i < n; i++, e = e->next) entry[i] = e;
  int64_t at = 0;
  int64_t U = in->u.U ? in->u.U : 1;
  user_sums w = {.seen = calloc((size_t)U, 1), .touched = malloc(sizeof(int32_t) * (size_t)U)};
  int ok = w.seen && w.touched;
  for (int j = 0; j < 3; j++) {
    ok &= (w.S[j] = calloc((size_t)U, sizeof(double))) != NULL;
    ok &= (w.N[j] = calloc((size_t)U, sizeof(double))) != NULL;
  }
  if (!ok) rd_fail(st, RD_EFAIL, "out of memory");
  for (int i = 0; i < o->n_strata && st->code == RD_OK; i++) {
    int64_t K = 0;
    while (at + K < n && strcmp(rd_jstr(cJSON_GetObjectItem(entry[at + K], "covariate")), o->strata[i].covariate) == 0) K++;
    if (K > 0) strata_intervals(entry + at, K, o->strata[i].bins == 0, in->covs[i], &in->u, v, &w, st);
    at += K;
  }
  for (int j = 0; j < 3; j++) free(w.S[j]), free(w.N[j]);
  free(w.seen), free(w.touched), free(entry);
  return st->code;
}

/* The CM_TOP pairs with the largest CM (ties to the lower pair index). */
static void add_top_pairs(const cm_input *in, const cm_values *v, char **ids, cJSON *r) {
  int64_t top[CM_TOP], n = 0;
  for (int64_t p = 0; p < v->P; p++) {
    if (isnan(v->cm[p])) continue;
    int64_t at = n < CM_TOP ? n++ : CM_TOP;
    while (at > 0 && v->cm[top[at - 1]] < v->cm[p]) {
      if (at < CM_TOP) top[at] = top[at - 1];
      at--;
    }
    if (at < CM_TOP) top[at] = p;
  }
  cJSON *a = cJSON_AddArrayToObject(r, "top_memorized");
  for (int64_t i = 0; i < n; i++) {
    int64_t p = top[i];
    cJSON *x = cJSON_CreateObject();
    cJSON_AddNumberToObject(x, "pair", (double)p);
    if (ids) cJSON_AddStringToObject(x, "pair_id", ids[p]);
    else cJSON_AddNumberToObject(x, "pair_id", (double)p);
    cJSON_AddItemToObject(x, "user", user_label(&in->u, in->u.of_pair[p]));
    rd_json_add(x, "tm", rd_json_num(v->tm[p]));
    rd_json_add(x, "tg", rd_json_num(v->tg[p]));
    rd_json_add(x, "cm", rd_json_num(v->cm[p]));
    cJSON_AddNumberToObject(x, "n_train", (double)v->n_train[p]);
    cJSON_AddNumberToObject(x, "n_held", (double)(in->L.R - v->n_train[p]));
    cJSON_AddItemToArray(a, x);
  }
}

/* Results a reader could misread (docs/reference.md, 'Warnings'). */
static cJSON *cm_warnings(const cJSON *r) {
  cJSON *w = cJSON_CreateArray();
  char msg[512];
  double P = rd_jnum(cJSON_GetObjectItem(r, "n_pairs")), ncm = rd_jnum(cJSON_GetObjectItem(r, "n_cm_defined"));
  if (ncm < 0.5 * P) {
    snprintf(msg, sizeof msg, "CM is defined for %.0f of %.0f pairs only (a pair needs runs that trained on its user "
             "and runs that held it out): the CM summaries describe that minority", ncm, P);
    cJSON_AddItemToArray(w, cJSON_CreateString(msg));
  }
  const cJSON *bo = cJSON_GetObjectItem(r, "bootstrap");
  double B = rd_jnum(cJSON_GetObjectItem(bo, "resamples"));
  static const char *const names[3] = {"tm", "tg", "cm"}, *const up[3] = {"TM", "TG", "CM"};
  for (int j = 0; j < 3; j++) {
    double d = rd_jnum(rd_jget(bo, "dropped") ? cJSON_GetObjectItem(rd_jget(bo, "dropped"), names[j]) : NULL);
    if (d > 0) {
      snprintf(msg, sizeof msg, "%.0f of %.0f bootstrap replicates drew no user with a defined %s and were left out of "
               "its interval", d, B, up[j]);
      cJSON_AddItemToArray(w, cJSON_CreateString(msg));
    }
  }
  return w;
}

static int write_joins(hid_t h5, const cm_input *in, int64_t P, char **ids, rd_status *st) {
  int64_t dims[1] = {P};
  if (ids) RD_TRY(rd_h5_write_strings(h5, "/cm/pair_id", P, (const char *const *)ids, st));
  else {
    int64_t *idx = malloc(sizeof(int64_t) * (size_t)(P ? P : 1));
    if (!idx) return rd_fail(st, RD_EFAIL, "out of memory");
    for (int64_t p = 0; p < P; p++) idx[p] = p;
    int rc = rd_h5_write_i64(h5, "/cm/pair_id", 1, dims, idx, st);
    free(idx);
    RD_TRY(rc);
  }
  return rd_h5_write_i32(h5, "/cm/user_index", 1, dims, in->u.of_pair, st);
}

int cm_extras(const rd_ctx *ctx, const rd_job *job, const rd_jobfile *jf, const cm_input *in, const cm_values *v,
              rd_run_out *out, rd_status *st) {
  char **ids = read_pair_ids(job, v->P, st);
  if (st->code == RD_OK) add_strata_intervals(job, in, v, out->result, st);
  if (st->code == RD_OK) add_top_pairs(in, v, ids, out->result);
  if (st->code == RD_OK) write_joins(out->h5, in, v->P, ids, st);
  free_ids(ids, v->P);
  RD_TRY(st->code);
  return rd_kind_summary(&rd_kind_cm, job, jf, cm_warnings(out->result), out->result, ctx->out,
                         ctx->err ? ctx->err : (ctx->rank == 0 ? stderr : NULL), st);
}
