/* The leakage report (SPEC §6, the NumLeak protocol): does a model recall published monthly series
 * by date? Rank 0 reads and checks the panel (a few hundred thousand rows at most, so it is read once
 * and broadcast); every rank builds the same cells, truth joins and null tables; the work is a list of
 * tasks spread over ranks: one per cell (pooled and per-seed metrics, holdout, entropy), one per
 * control (fictional series, ranking, residualisation, defenses) and chunks of bootstrap replicates
 * and factor-shuffle draws, each computed whole by one rank; rank 0 assembles the report. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmdiag/kernels/backend.h"
#include "rmdiag/common/h5in.h"
#include "rmdiag/common/h5out.h"
#include "rmdiag/common/jsonutil.h"
#include "rmdiag/kind.h"
#include "rmdiag/kernels/leak.h"
#include "rmdiag/common/progress.h"
#include "rmdiag/kernels/rng.h"
#include "rmdiag/kernels/stats.h"

#define LEAK_MAX_FAMILY 33

/* ---- options ------------------------------------------------------------------------------------ */

typedef struct leak_opts {
  int64_t bootstrap, null_permutations;
  double tolerance;
  int rule_lt, compare_float, sign_exclude_zero;
  int n_family;
  const char **family;
  int has_holdout;
  int32_t holdout_from;
  const char *signal_series, *benign_attack;
} leak_opts;

/* The keys a job may carry (transitional: parsed by the kind's own parse function). */
static const rd_option leak_options[] = {
    {.key = "bootstrap", .type = RD_OPT_CUSTOM},
    {.key = "tolerance", .type = RD_OPT_CUSTOM},
    {.key = "tolerance_rule", .type = RD_OPT_CUSTOM},
    {.key = "tolerance_compare", .type = RD_OPT_CUSTOM},
    {.key = "sign_zero", .type = RD_OPT_CUSTOM},
    {.key = "family", .type = RD_OPT_CUSTOM},
    {.key = "null_permutations", .type = RD_OPT_CUSTOM},
    {.key = "holdout_from", .type = RD_OPT_CUSTOM},
    {.key = "signal_series", .type = RD_OPT_CUSTOM},
    {.key = "benign_attack", .type = RD_OPT_CUSTOM},
    RD_OPTION_END,
};

static void leak_free_opts(void *p) {
  leak_opts *o = p;
  if (!o) return;
  free(o->family);
  free(o);
}

static int leak_parse(rd_job *job, const rd_jobfile *jf, rd_status *st) {
  (void)jf;
  leak_opts *o = calloc(1, sizeof *o);
  if (!o) return rd_fail(st, RD_EFAIL, "out of memory");
  job->opts = o;
  const rd_where *w = &job->where;
  static const char *const rules[] = {"le", "lt", NULL}, *const cmps[] = {"decimal", "float", NULL},
                           *const signs[] = {"include", "exclude_zero_truth", NULL};
  const char *rule, *cmp, *sign;
  RD_TRY(rd_opt_int(job->spec, "bootstrap", 1000, 0, 100000000, &o->bootstrap, w, st));
  RD_TRY(rd_opt_double(job->spec, "tolerance", 0.25, 0.0, 1e6, &o->tolerance, w, st));
  RD_TRY(rd_opt_string(job->spec, "tolerance_rule", "le", rules, &rule, w, st));
  RD_TRY(rd_opt_string(job->spec, "tolerance_compare", "decimal", cmps, &cmp, w, st));
  RD_TRY(rd_opt_string(job->spec, "sign_zero", "include", signs, &sign, w, st));
  RD_TRY(rd_opt_int(job->spec, "null_permutations", 1000, 0, 100000000, &o->null_permutations, w, st));
  RD_TRY(rd_opt_string(job->spec, "signal_series", "Mkt-RF", NULL, &o->signal_series, w, st));
  RD_TRY(rd_opt_string(job->spec, "benign_attack", "benign", NULL, &o->benign_attack, w, st));
  o->rule_lt = strcmp(rule, "lt") == 0;
  o->compare_float = strcmp(cmp, "float") == 0;
  o->sign_exclude_zero = strcmp(sign, "exclude_zero_truth") == 0;
  const cJSON *hf = cJSON_GetObjectItemCaseSensitive(job->spec, "holdout_from");
  if (hf) {
    int64_t v;
    RD_TRY(rd_opt_int(job->spec, "holdout_from", 0, 100001, 999912, &v, w, st));
    if (v % 100 < 1 || v % 100 > 12)
      return rd_fail(st, RD_EINPUT, "%s: \"holdout_from\" = %lld is not a month (expected YYYYMM with MM 01-12)",
                     w->path, (long long)v);
    o->has_holdout = 1;
    o->holdout_from = (int32_t)v;
  }
  const cJSON *fam = cJSON_GetObjectItemCaseSensitive(job->spec, "family");
  if (fam) {
    if (!cJSON_IsArray(fam))
      return rd_fail(st, RD_EINPUT, "%s: \"family\" must be a list of series names (the sibling series of the "
                                    "factor-shuffle null)", w->path);
    o->n_family = cJSON_GetArraySize(fam);
    if (o->n_family == 1 || o->n_family > LEAK_MAX_FAMILY)
      return rd_fail(st, RD_EINPUT, "%s: \"family\" has %d series; expected 2 to %d (or none)", w->path, o->n_family,
                     LEAK_MAX_FAMILY);
    o->family = calloc((size_t)(o->n_family ? o->n_family : 1), sizeof *o->family);
    if (!o->family) return rd_fail(st, RD_EFAIL, "out of memory");
    int i = 0;
    for (const cJSON *e = fam->child; e; e = e->next, i++) {
      if (!cJSON_IsString(e) || !e->valuestring[0])
        return rd_fail(st, RD_EINPUT, "%s: \"family\"[%d] must be a series name (a non-empty string)", w->path, i);
      for (int k = 0; k < i; k++)
        if (strcmp(o->family[k], e->valuestring) == 0)
          return rd_fail(st, RD_EINPUT, "%s: \"family\" names \"%s\" twice", w->path, e->valuestring);
      o->family[i] = e->valuestring;
    }
  }
  cJSON *eff = job->effective = cJSON_CreateObject();
  cJSON_AddNumberToObject(eff, "bootstrap", (double)o->bootstrap);
  cJSON_AddNumberToObject(eff, "tolerance", o->tolerance);
  cJSON_AddStringToObject(eff, "tolerance_rule", rule);
  cJSON_AddStringToObject(eff, "tolerance_compare", cmp);
  cJSON_AddStringToObject(eff, "sign_zero", sign);
  cJSON *ef = cJSON_AddArrayToObject(eff, "family");
  for (int i = 0; i < o->n_family; i++) cJSON_AddItemToArray(ef, cJSON_CreateString(o->family[i]));
  cJSON_AddNumberToObject(eff, "null_permutations", (double)o->null_permutations);
  if (o->has_holdout) cJSON_AddNumberToObject(eff, "holdout_from", (double)o->holdout_from);
  else cJSON_AddNullToObject(eff, "holdout_from");
  cJSON_AddStringToObject(eff, "signal_series", o->signal_series);
  cJSON_AddStringToObject(eff, "benign_attack", o->benign_attack);
  return RD_OK;
}

/* ---- layout ------------------------------------------------------------------------------------------ */

enum {
  DS_MODEL_NAMES, DS_SERIES_NAMES, DS_VARIANT_NAMES, DS_FICTIONAL,
  DS_MODEL, DS_SERIES, DS_VARIANT, DS_SEED, DS_MONTH, DS_VALUE, DS_STATUS, DS_ENTROPY, DS_REPLY,
  DS_T_SERIES, DS_T_MONTH, DS_T_VALUE,
  DS_R_MODEL, DS_R_SERIES, DS_R_A, DS_R_B, DS_R_PICK,
  DS_G_MODEL, DS_G_MONTH, DS_G_SIGNAL, DS_G_RECALL,
  DS_D_DEFENSE, DS_D_ATTACK, DS_D_MODEL, DS_D_MONTH, DS_D_BLOCKED, DS_D_NAMES, DS_A_NAMES,
  DS_COUNT
};

/* name, class, optional, length group (0 names, 1 panel Q, 2 truth T, 3 rank, 4 signal, 5 defense, 6 S, 7 none) */
static const struct {
  const char *name;
  int tclass, optional, len;
  const char *what;
} ds_spec[DS_COUNT] = {
    [DS_MODEL_NAMES] = {"model_names", RD_TC_STRING, 0, 7, "strings [M]"},
    [DS_SERIES_NAMES] = {"series_names", RD_TC_STRING, 0, 7, "strings [S]"},
    [DS_VARIANT_NAMES] = {"variant_names", RD_TC_STRING, 0, 7, "strings [V]"},
    [DS_FICTIONAL] = {"series_fictional", RD_TC_INT, 1, 6, "uint8 0/1 flags [S]"},
    [DS_MODEL] = {"model", RD_TC_INT, 0, 1, "int32 model indices [Q]"},
    [DS_SERIES] = {"series", RD_TC_INT, 0, 1, "int32 series indices [Q]"},
    [DS_VARIANT] = {"variant", RD_TC_INT, 0, 1, "int32 variant indices [Q]"},
    [DS_SEED] = {"seed", RD_TC_INT, 0, 1, "int32 seeds [Q]"},
    [DS_MONTH] = {"month", RD_TC_INT, 0, 1, "int32 months YYYYMM [Q]"},
    [DS_VALUE] = {"value", RD_TC_FLOAT, 0, 1, "float64 parsed values [Q]"},
    [DS_STATUS] = {"status", RD_TC_INT, 0, 1, "uint8 status 0/1/2 [Q]"},
    [DS_ENTROPY] = {"entropy_bits", RD_TC_FLOAT, 1, 1, "float64 entropies [Q]"},
    [DS_REPLY] = {"reply", RD_TC_STRING, 1, 1, "strings [Q]"},
    [DS_T_SERIES] = {"truth_series", RD_TC_INT, 0, 2, "int32 series indices [T]"},
    [DS_T_MONTH] = {"truth_month", RD_TC_INT, 0, 2, "int32 months YYYYMM [T]"},
    [DS_T_VALUE] = {"truth_value", RD_TC_FLOAT, 0, 2, "float64 truth values [T]"},
    [DS_R_MODEL] = {"rank/model", RD_TC_INT, 0, 3, "int32 model indices [R]"},
    [DS_R_SERIES] = {"rank/series", RD_TC_INT, 0, 3, "int32 series indices [R]"},
    [DS_R_A] = {"rank/month_a", RD_TC_INT, 0, 3, "int32 months YYYYMM [R]"},
    [DS_R_B] = {"rank/month_b", RD_TC_INT, 0, 3, "int32 months YYYYMM [R]"},
    [DS_R_PICK] = {"rank/pick", RD_TC_INT, 0, 3, "int8 picks 0/1/-1 [R]"},
    [DS_G_MODEL] = {"signal/model", RD_TC_INT, 0, 4, "int32 model indices [G]"},
    [DS_G_MONTH] = {"signal/month", RD_TC_INT, 0, 4, "int32 months YYYYMM [G]"},
    [DS_G_SIGNAL] = {"signal/signal", RD_TC_FLOAT, 0, 4, "float64 signals [G]"},
    [DS_G_RECALL] = {"signal/recall", RD_TC_FLOAT, 0, 4, "float64 recalled values [G]"},
    [DS_D_DEFENSE] = {"defense/defense", RD_TC_INT, 0, 5, "int32 defense indices [D]"},
    [DS_D_ATTACK] = {"defense/attack", RD_TC_INT, 0, 5, "int32 attack indices [D]"},
    [DS_D_MODEL] = {"defense/model", RD_TC_INT, 0, 5, "int32 model indices [D]"},
    [DS_D_MONTH] = {"defense/month", RD_TC_INT, 0, 5, "int32 months YYYYMM [D]"},
    [DS_D_BLOCKED] = {"defense/blocked", RD_TC_INT, 0, 5, "uint8 0/1 flags [D]"},
    [DS_D_NAMES] = {"defense/defense_names", RD_TC_STRING, 0, 7, "strings"},
    [DS_A_NAMES] = {"defense/attack_names", RD_TC_STRING, 0, 7, "strings"},
};

typedef struct leak_layout {
  rd_dsinfo ds[DS_COUNT];
  int has[DS_COUNT];
  int has_rank, has_signal, has_defense;
} leak_layout;

static void ds_path(char *out, size_t n, const char *group, const char *name) {
  snprintf(out, n, "%s/%s", strcmp(group, "/") == 0 ? "" : group, name);
}

/* Checks names, classes and shapes of every dataset present (rank 0, file open). */
static int leak_check_layout(hid_t f, const rd_job *job, leak_layout *L, rd_status *st) {
  const char *file = job->input;
  char p[600];
  if (!rd_h5_exists(f, job->group))
    return rd_fail(st, RD_EINPUT, "%s: group %s is missing (expected the leakage layout of SPEC §6)", file, job->group);
  static const char *const sub[3] = {"rank", "signal", "defense"};
  int *has_sub[3] = {&L->has_rank, &L->has_signal, &L->has_defense};
  for (int g = 0; g < 3; g++) {
    ds_path(p, sizeof p, job->group, sub[g]);
    *has_sub[g] = rd_h5_exists(f, p);
  }
  int64_t len[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
  const char *len_name[8] = {NULL};
  for (int d = 0; d < DS_COUNT; d++) {
    int group = ds_spec[d].len;
    int optional = ds_spec[d].optional || (d >= DS_R_MODEL && d <= DS_R_PICK && !L->has_rank) ||
                   (d >= DS_G_MODEL && d <= DS_G_RECALL && !L->has_signal) ||
                   (d >= DS_D_DEFENSE && d <= DS_A_NAMES && !L->has_defense);
    ds_path(p, sizeof p, job->group, ds_spec[d].name);
    if (!rd_h5_exists(f, p)) {
      if (optional) continue;
      return rd_fail(st, RD_EINPUT, "%s: dataset %s is missing (expected %s)", file, p, ds_spec[d].what);
    }
    L->has[d] = 1;
    RD_TRY(rd_h5_info(f, file, p, &L->ds[d], st));
    RD_TRY(rd_h5_expect(&L->ds[d], file, 1, RD_TCM(ds_spec[d].tclass), ds_spec[d].what, st));
    if (group == 6) {
      /* checked against S below */
    } else if (group != 7) {
      if (len[group] < 0) {
        len[group] = L->ds[d].dims[0];
        len_name[group] = L->ds[d].path;
      } else if (L->ds[d].dims[0] != len[group]) {
        return rd_fail(st, RD_EINPUT, "%s: %s has %lld entries but %s has %lld; expected the same length", file,
                       L->ds[d].path, (long long)L->ds[d].dims[0], len_name[group], (long long)len[group]);
      }
    }
  }
  if (L->has[DS_FICTIONAL] && L->ds[DS_FICTIONAL].dims[0] != L->ds[DS_SERIES_NAMES].dims[0])
    return rd_fail(st, RD_EINPUT, "%s: %s has %lld entries, expected one per series (%lld)", file,
                   L->ds[DS_FICTIONAL].path, (long long)L->ds[DS_FICTIONAL].dims[0],
                   (long long)L->ds[DS_SERIES_NAMES].dims[0]);
  if (L->ds[DS_MODEL].dims[0] == 0 && !L->has_rank && !L->has_signal && !L->has_defense)
    return rd_fail(st, RD_EINPUT, "%s: %s is empty and there are no rank/, signal/ or defense/ rows; expected at "
                   "least one panel row", file, L->ds[DS_MODEL].path);
  if (L->ds[DS_MODEL].dims[0] > INT32_MAX)
    return rd_fail(st, RD_EINPUT, "%s: more than 2^31 panel rows", file);
  return RD_OK;
}

static int leak_validate(const rd_ctx *ctx, const rd_job *job, const rd_jobfile *jf, rd_status *st) {
  (void)jf;
  if (ctx->rank == 0) {
    hid_t f;
    if (rd_h5_open(job->input, MPI_COMM_NULL, &f, st) == RD_OK) {
      leak_layout L;
      memset(&L, 0, sizeof L);
      leak_check_layout(f, job, &L, st);
      rd_h5_close(f);
    }
  }
  return rd_share_status(ctx, st, 0);
}

/* ---- the input, read and checked on rank 0 and broadcast ------------------------------------------- */

typedef struct leak_names {
  char *buf;
  int64_t *off;
  int64_t n;
} leak_names;

typedef struct leak_data {
  /* sizes: M S V Q T R G D ND NA, flags */
  int64_t M, S, V, Q, T, R, G, D, ND, NA;
  int has_fictional, has_entropy, has_rank, has_signal, has_defense;
  uint8_t *fictional;                                   /* [S] */
  int32_t *model, *series, *variant, *seed, *month;    /* [Q] */
  double *value, *entropy;                              /* [Q] */
  uint8_t *status;                                      /* [Q] */
  int32_t *t_series, *t_month;                          /* [T] */
  double *t_value;
  int32_t *r_model, *r_series, *r_a, *r_b;              /* [R] */
  int8_t *r_pick;
  int32_t *g_model, *g_month;                           /* [G] */
  double *g_signal, *g_recall;
  int32_t *d_defense, *d_attack, *d_model, *d_month;    /* [D] */
  uint8_t *d_blocked;
  /* resolved options */
  int32_t family[LEAK_MAX_FAMILY];
  int32_t n_family, signal_series, benign_attack;
  /* names (rank 0 only) */
  leak_names names[5];  /* model, series, variant, defense, attack */
} leak_data;

static const char *name_of(const leak_data *d, int which, int64_t i) {
  const leak_names *n = &d->names[which];
  return (n->buf && i >= 0 && i < n->n) ? n->buf + n->off[i] : "?";
}

static void data_free(leak_data *d) {
  void *ptrs[] = {d->fictional, d->model, d->series, d->variant, d->seed, d->month, d->value, d->entropy, d->status,
                  d->t_series, d->t_month, d->t_value, d->r_model, d->r_series, d->r_a, d->r_b, d->r_pick,
                  d->g_model, d->g_month, d->g_signal, d->g_recall, d->d_defense, d->d_attack, d->d_model,
                  d->d_month, d->d_blocked};
  for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++) free(ptrs[i]);
  for (int i = 0; i < 5; i++) {
    free(d->names[i].buf);
    free(d->names[i].off);
  }
  memset(d, 0, sizeof *d);
}

static int valid_month(int64_t m) { return m >= 100001 && m <= 999912 && m % 100 >= 1 && m % 100 <= 12; }

/* Reads a whole 1-D integer dataset into int32 after a range check naming the first bad element. With
 * bad_at, out-of-range elements become INT32_MIN and the lowest one's index and original value go to
 * *bad_at and *bad_val, for the row checks to report in row order. */
static int read_i32(hid_t f, const char *file, const rd_dsinfo *info, int64_t lo, int64_t hi, const char *expect,
                    int32_t **out, int64_t *bad_at, int64_t *bad_val, rd_status *st) {
  int64_t n = info->dims[0];
  int64_t *tmp = rd_malloc(sizeof(int64_t) * (size_t)(n ? n : 1), st, info->path);
  *out = rd_malloc(sizeof(int32_t) * (size_t)(n ? n : 1), st, info->path);
  if (!tmp || !*out) {
    free(tmp);
    return st->code;
  }
  if (rd_h5_read_int_rows(f, file, info, 0, n, tmp, st) != RD_OK) {
    free(tmp);
    return st->code;
  }
  for (int64_t i = 0; i < n; i++) {
    if (tmp[i] < lo || tmp[i] > hi) {
      if (bad_at) {
        /* reported with the row checks, in row order */
        if (*bad_at < 0 || i < *bad_at) {
          *bad_at = i;
          *bad_val = tmp[i];
        }
        (*out)[i] = INT32_MIN;
        continue;
      }
      int64_t v = tmp[i];
      free(tmp);
      return rd_fail(st, RD_EINPUT, "%s: %s[%lld] = %lld, expected %s", file, info->path, (long long)i, (long long)v,
                     expect);
    }
    (*out)[i] = (int32_t)tmp[i];
  }
  free(tmp);
  return RD_OK;
}

static int read_f64(hid_t f, const char *file, const rd_dsinfo *info, double **out, rd_status *st) {
  int64_t n = info->dims[0];
  *out = rd_malloc(sizeof(double) * (size_t)(n ? n : 1), st, info->path);
  if (!*out) return st->code;
  return rd_h5_read_numeric(f, file, info, *out, st);
}

static int read_names(hid_t f, const char *file, const rd_dsinfo *info, leak_names *nm, rd_status *st) {
  size_t len;
  RD_TRY(rd_h5_read_strings(f, file, info, &nm->buf, &len, &nm->off, st));
  nm->n = info->dims[0];
  for (int64_t i = 0; i < nm->n; i++)
    for (int64_t k = 0; k < i; k++)
      if (strcmp(nm->buf + nm->off[i], nm->buf + nm->off[k]) == 0)
        return rd_fail(st, RD_EINPUT, "%s: %s[%lld] = \"%s\" repeats entry %lld; expected distinct names", file,
                       info->path, (long long)i, nm->buf + nm->off[i], (long long)k);
  return RD_OK;
}

static int64_t find_name(const leak_names *nm, const char *name) {
  for (int64_t i = 0; i < nm->n; i++)
    if (strcmp(nm->buf + nm->off[i], name) == 0) return i;
  return -1;
}

typedef struct kv {
  int64_t key;
  int64_t idx;
} kv;

static int kv_cmp(const void *a, const void *b) {
  const kv *x = a, *y = b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* The first problem of panel row i (the dataset's name, with what was expected in `detail`), or NULL.
 * Out-of-range integers were marked INT32_MIN when read, the lowest one per dataset recorded in bad[]
 * with its original value in badv[] (row i is the lowest row with a problem, so a marked column of
 * row i is that column's lowest bad row). */
static const char *row_problem(const leak_data *d, const int64_t *bad, const int64_t *badv, int64_t i, char *detail,
                               size_t n) {
  if (d->model[i] == INT32_MIN) {
    snprintf(detail, n, "an index into model_names (0..%lld), got %lld", (long long)d->M - 1, (long long)badv[0]);
    return "model";
  }
  if (d->series[i] == INT32_MIN) {
    snprintf(detail, n, "an index into series_names (0..%lld), got %lld", (long long)d->S - 1, (long long)badv[1]);
    return "series";
  }
  if (d->variant[i] == INT32_MIN) {
    snprintf(detail, n, "an index into variant_names (0..%lld), got %lld", (long long)d->V - 1, (long long)badv[2]);
    return "variant";
  }
  if (bad[3] == i) {
    snprintf(detail, n, "an int32 seed, got %lld", (long long)badv[3]);
    return "seed";
  }
  if (bad[4] == i || !valid_month(d->month[i])) {
    snprintf(detail, n, "a month YYYYMM (MM 01-12), got %lld", bad[4] == i ? (long long)badv[4] : (long long)d->month[i]);
    return "month";
  }
  if (d->status[i] == 255) {
    snprintf(detail, n, "0 (parsed), 1 (no number) or 2 (excluded)");
    return "status";
  }
  if (d->status[i] == 0 && !isfinite(d->value[i])) {
    snprintf(detail, n, "a finite value with status 0 (parsed), got %g", d->value[i]);
    return "value";
  }
  if (d->status[i] != 0 && !isnan(d->value[i])) {
    snprintf(detail, n, "NaN with status %d (no parsed number), got %.17g", d->status[i], d->value[i]);
    return "value";
  }
  if (d->has_entropy && !isnan(d->entropy[i]) && !(isfinite(d->entropy[i]) && d->entropy[i] >= 0)) {
    snprintf(detail, n, "a finite entropy >= 0 or NaN, got %g", d->entropy[i]);
    return "entropy_bits";
  }
  return NULL;
}

/* Rank 0: reads every dataset and checks every value; errors name the lowest offending row. */
static int leak_read(hid_t f, const rd_job *job, const leak_layout *L, leak_data *d, rd_status *st) {
  const leak_opts *o = job->opts;
  const char *file = job->input;
  const rd_dsinfo *ds = L->ds;
  RD_TRY(read_names(f, file, &ds[DS_MODEL_NAMES], &d->names[0], st));
  RD_TRY(read_names(f, file, &ds[DS_SERIES_NAMES], &d->names[1], st));
  RD_TRY(read_names(f, file, &ds[DS_VARIANT_NAMES], &d->names[2], st));
  d->M = d->names[0].n;
  d->S = d->names[1].n;
  d->V = d->names[2].n;
  d->Q = ds[DS_MODEL].dims[0];
  d->T = ds[DS_T_SERIES].dims[0];
  d->has_fictional = L->has[DS_FICTIONAL];
  d->has_entropy = L->has[DS_ENTROPY];
  d->has_rank = L->has_rank;
  d->has_signal = L->has_signal;
  d->has_defense = L->has_defense;
  if (d->has_fictional) {
    d->fictional = rd_malloc((size_t)(d->S ? d->S : 1), st, "series_fictional");
    if (!d->fictional) return st->code;
    RD_TRY(rd_h5_read_flag_rows(f, file, &ds[DS_FICTIONAL], 0, d->S, d->fictional, st));
    /* the report lists fictional series only when the input has some */
    d->has_fictional = 0;
    for (int64_t s = 0; s < d->S; s++) d->has_fictional |= d->fictional[s];
  } else {
    d->fictional = rd_calloc((size_t)(d->S ? d->S : 1), 1, st, "series_fictional");
    if (!d->fictional) return st->code;
  }
  /* panel rows: integer columns (ranges checked row by row below), values, status */
  int64_t bad[5] = {-1, -1, -1, -1, -1};
  int64_t badv[5] = {0};
  RD_TRY(read_i32(f, file, &ds[DS_MODEL], 0, d->M - 1, NULL, &d->model, &bad[0], &badv[0], st));
  RD_TRY(read_i32(f, file, &ds[DS_SERIES], 0, d->S - 1, NULL, &d->series, &bad[1], &badv[1], st));
  RD_TRY(read_i32(f, file, &ds[DS_VARIANT], 0, d->V - 1, NULL, &d->variant, &bad[2], &badv[2], st));
  RD_TRY(read_i32(f, file, &ds[DS_SEED], INT32_MIN, INT32_MAX, NULL, &d->seed, &bad[3], &badv[3], st));
  RD_TRY(read_i32(f, file, &ds[DS_MONTH], INT32_MIN, INT32_MAX, NULL, &d->month, &bad[4], &badv[4], st));
  RD_TRY(read_f64(f, file, &ds[DS_VALUE], &d->value, st));
  d->status = rd_malloc((size_t)(d->Q ? d->Q : 1), st, "status");
  if (!d->status) return st->code;
  {
    int64_t *tmp = rd_malloc(sizeof(int64_t) * (size_t)(d->Q ? d->Q : 1), st, "status");
    if (!tmp) return st->code;
    if (rd_h5_read_int_rows(f, file, &ds[DS_STATUS], 0, d->Q, tmp, st) != RD_OK) {
      free(tmp);
      return st->code;
    }
    for (int64_t i = 0; i < d->Q; i++) d->status[i] = (tmp[i] >= 0 && tmp[i] <= 2) ? (uint8_t)tmp[i] : 255;
    free(tmp);
  }
  if (d->has_entropy) RD_TRY(read_f64(f, file, &ds[DS_ENTROPY], &d->entropy, st));
  for (int64_t i = 0; i < d->Q; i++) {
    char detail[200];
    const char *what = row_problem(d, bad, badv, i, detail, sizeof detail);
    if (what)
      return rd_fail_at(st, RD_EINPUT, i, "%s: %s/%s: row %lld: expected %s", file, job->group, what, (long long)i, detail);
  }
  /* truth */
  int64_t tbad[2] = {-1, -1};
  int64_t tbadv[2] = {0};
  RD_TRY(read_i32(f, file, &ds[DS_T_SERIES], 0, d->S - 1, NULL, &d->t_series, &tbad[0], &tbadv[0], st));
  RD_TRY(read_i32(f, file, &ds[DS_T_MONTH], INT32_MIN, INT32_MAX, NULL, &d->t_month, &tbad[1], &tbadv[1], st));
  RD_TRY(read_f64(f, file, &ds[DS_T_VALUE], &d->t_value, st));
  /* the lowest truth row with a bad value, then the lowest that repeats an earlier row's (series, month) */
  int64_t tb = d->T;
  for (int64_t j = 0; j < d->T && tb == d->T; j++)
    if (d->t_series[j] == INT32_MIN || tbad[1] == j || !valid_month(d->t_month[j]) || !isfinite(d->t_value[j])) tb = j;
  {
    kv *t = rd_malloc(sizeof(kv) * (size_t)(tb ? tb : 1), st, "truth rows");
    if (!t) return st->code;
    for (int64_t j = 0; j < tb; j++) t[j] = (kv){(int64_t)d->t_series[j] << 24 | d->t_month[j], j};
    qsort(t, (size_t)tb, sizeof *t, kv_cmp);
    int64_t first = -1, again = -1;
    /* sorted by (key, row): a group's first two entries are its earliest row and the earliest repeat */
    for (int64_t j = 1; j < tb; j++)
      if (t[j].key == t[j - 1].key && (j == 1 || t[j - 2].key != t[j].key) && (again < 0 || t[j].idx < again)) {
        first = t[j - 1].idx;
        again = t[j].idx;
      }
    free(t);
    if (again >= 0)
      return rd_fail(st, RD_EINPUT, "%s: %s/truth_month: truth rows %lld and %lld are both for series \"%s\", month "
                     "%d; expected one truth value per (series, month)", file, job->group, (long long)first,
                     (long long)again, name_of(d, 1, d->t_series[again]), d->t_month[again]);
  }
  if (tb < d->T) {
    int64_t j = tb;
    if (d->t_series[j] == INT32_MIN)
      return rd_fail(st, RD_EINPUT, "%s: %s/truth_series: truth row %lld: expected an index into series_names "
                     "(0..%lld), got %lld", file, job->group, (long long)j, (long long)d->S - 1, (long long)tbadv[0]);
    if (tbad[1] == j || !valid_month(d->t_month[j]))
      return rd_fail(st, RD_EINPUT, "%s: %s/truth_month: truth row %lld: expected a month YYYYMM (MM 01-12), got %lld",
                     file, job->group, (long long)j, tbad[1] == j ? (long long)tbadv[1] : (long long)d->t_month[j]);
    return rd_fail(st, RD_EINPUT, "%s: %s/truth_value: truth row %lld (series \"%s\", month %d) is %g; expected a "
                   "finite value (a month without truth has no truth row)", file, job->group, (long long)j,
                   name_of(d, 1, d->t_series[j]), d->t_month[j], d->t_value[j]);
  }
  /* ranking, signal, defense groups */
  if (d->has_rank) {
    d->R = ds[DS_R_MODEL].dims[0];
    int64_t rb[5] = {-1, -1, -1, -1, -1};
    int64_t rbv[5] = {0};
    RD_TRY(read_i32(f, file, &ds[DS_R_MODEL], 0, d->M - 1, NULL, &d->r_model, &rb[0], &rbv[0], st));
    RD_TRY(read_i32(f, file, &ds[DS_R_SERIES], 0, d->S - 1, NULL, &d->r_series, &rb[1], &rbv[1], st));
    RD_TRY(read_i32(f, file, &ds[DS_R_A], INT32_MIN, INT32_MAX, NULL, &d->r_a, &rb[2], &rbv[2], st));
    RD_TRY(read_i32(f, file, &ds[DS_R_B], INT32_MIN, INT32_MAX, NULL, &d->r_b, &rb[3], &rbv[3], st));
    int32_t *pk = NULL;
    RD_TRY(read_i32(f, file, &ds[DS_R_PICK], -1, 1, NULL, &pk, &rb[4], &rbv[4], st));
    d->r_pick = rd_malloc((size_t)(d->R ? d->R : 1), st, "rank/pick");
    if (!d->r_pick) {
      free(pk);
      return st->code;
    }
    for (int64_t i = 0; i < d->R; i++) d->r_pick[i] = (int8_t)(pk[i] == INT32_MIN ? -2 : pk[i]);
    free(pk);
    for (int64_t i = 0; i < d->R; i++) {
      const char *what = d->r_model[i] == INT32_MIN ? "model (an index into model_names)"
                         : d->r_series[i] == INT32_MIN ? "series (an index into series_names)" : NULL;
      if (what)
        return rd_fail(st, RD_EINPUT, "%s: %s/rank: row %lld: expected %s, got %lld", file, job->group, (long long)i,
                       what, (long long)(d->r_model[i] == INT32_MIN ? rbv[0] : rbv[1]));
      for (int k = 2; k < 4; k++) {
        const int32_t *mo = k == 2 ? d->r_a : d->r_b;
        if (rb[k] == i || !valid_month(mo[i]))
          return rd_fail(st, RD_EINPUT, "%s: %s/rank: row %lld: expected %s (a month YYYYMM, MM 01-12), got %lld", file,
                         job->group, (long long)i, k == 2 ? "month_a" : "month_b",
                         rb[k] == i ? (long long)rbv[k] : (long long)mo[i]);
      }
      if (d->r_pick[i] == -2)
        return rd_fail(st, RD_EINPUT, "%s: %s/rank: row %lld: expected pick (0 = month_a, 1 = month_b, -1 = no pick), "
                       "got %lld", file, job->group, (long long)i, (long long)rbv[4]);
    }
  }
  if (d->has_signal) {
    d->G = ds[DS_G_MODEL].dims[0];
    int64_t gb[2] = {-1, -1};
    int64_t gbv[2] = {0};
    RD_TRY(read_i32(f, file, &ds[DS_G_MODEL], 0, d->M - 1, NULL, &d->g_model, &gb[0], &gbv[0], st));
    RD_TRY(read_i32(f, file, &ds[DS_G_MONTH], INT32_MIN, INT32_MAX, NULL, &d->g_month, &gb[1], &gbv[1], st));
    RD_TRY(read_f64(f, file, &ds[DS_G_SIGNAL], &d->g_signal, st));
    RD_TRY(read_f64(f, file, &ds[DS_G_RECALL], &d->g_recall, st));
    for (int64_t i = 0; i < d->G; i++) {
      if (d->g_model[i] == INT32_MIN)
        return rd_fail(st, RD_EINPUT, "%s: %s/signal: row %lld: expected model (an index into model_names), got %lld",
                       file, job->group, (long long)i, (long long)gbv[0]);
      if (gb[1] == i || !valid_month(d->g_month[i]))
        return rd_fail(st, RD_EINPUT, "%s: %s/signal: row %lld: expected month (a month YYYYMM, MM 01-12), got %lld",
                       file, job->group, (long long)i, gb[1] == i ? (long long)gbv[1] : (long long)d->g_month[i]);
      const char *what = isinf(d->g_signal[i]) ? "signal (a finite value, or NaN when the reply gave none)"
                         : isinf(d->g_recall[i]) ? "recall (a finite value, or NaN when none)" : NULL;
      if (what)
        return rd_fail(st, RD_EINPUT, "%s: %s/signal: row %lld: expected %s", file, job->group, (long long)i, what);
    }
  }
  if (d->has_defense) {
    RD_TRY(read_names(f, file, &ds[DS_D_NAMES], &d->names[3], st));
    RD_TRY(read_names(f, file, &ds[DS_A_NAMES], &d->names[4], st));
    d->ND = d->names[3].n;
    d->NA = d->names[4].n;
    d->D = ds[DS_D_DEFENSE].dims[0];
    int64_t db[4] = {-1, -1, -1, -1};
    int64_t dbv[4] = {0};
    RD_TRY(read_i32(f, file, &ds[DS_D_DEFENSE], 0, d->ND - 1, NULL, &d->d_defense, &db[0], &dbv[0], st));
    RD_TRY(read_i32(f, file, &ds[DS_D_ATTACK], 0, d->NA - 1, NULL, &d->d_attack, &db[1], &dbv[1], st));
    RD_TRY(read_i32(f, file, &ds[DS_D_MODEL], 0, d->M - 1, NULL, &d->d_model, &db[2], &dbv[2], st));
    RD_TRY(read_i32(f, file, &ds[DS_D_MONTH], INT32_MIN, INT32_MAX, NULL, &d->d_month, &db[3], &dbv[3], st));
    d->d_blocked = rd_malloc((size_t)(d->D ? d->D : 1), st, "defense/blocked");
    if (!d->d_blocked) return st->code;
    RD_TRY(rd_h5_read_flag_rows(f, file, &ds[DS_D_BLOCKED], 0, d->D, d->d_blocked, st));
    for (int64_t i = 0; i < d->D; i++) {
      int k = d->d_defense[i] == INT32_MIN ? 0 : d->d_attack[i] == INT32_MIN ? 1 : d->d_model[i] == INT32_MIN ? 2
              : (db[3] == i || !valid_month(d->d_month[i])) ? 3 : -1;
      static const char *const what[4] = {"defense (an index into defense_names)", "attack (an index into attack_names)",
                                          "model (an index into model_names)", "month (a month YYYYMM, MM 01-12)"};
      if (k >= 0)
        return rd_fail(st, RD_EINPUT, "%s: %s/defense: row %lld: expected %s, got %lld", file, job->group, (long long)i,
                       what[k], k == 3 && db[3] != i ? (long long)d->d_month[i] : (long long)dbv[k]);
    }
  }
  /* options that name series or attacks */
  d->n_family = o->n_family;
  for (int k = 0; k < o->n_family; k++) {
    int64_t s = find_name(&d->names[1], o->family[k]);
    if (s < 0)
      return rd_fail(st, RD_EINPUT, "%s: \"family\" names series \"%s\", which is not in %s/series_names of %s",
                     job->where.path, o->family[k], job->group, file);
    d->family[k] = (int32_t)s;
  }
  d->signal_series = -1;
  if (d->has_signal) {
    int64_t s = find_name(&d->names[1], o->signal_series);
    if (s < 0)
      return rd_fail(st, RD_EINPUT, "%s: \"signal_series\" = \"%s\" (the truth of the residualisation) is not in "
                     "%s/series_names of %s", job->where.path, o->signal_series, job->group, file);
    d->signal_series = (int32_t)s;
  }
  d->benign_attack = d->has_defense ? (int32_t)find_name(&d->names[4], o->benign_attack) : -1;
  return RD_OK;
}

/* Every rank gets the sizes and the numeric arrays (names stay on rank 0). */
static void leak_share(const rd_ctx *ctx, leak_data *d) {
  int64_t head[18] = {d->M, d->S, d->V, d->Q, d->T, d->R, d->G, d->D, d->ND, d->NA, d->has_fictional,
                      d->has_entropy, d->has_rank, d->has_signal, d->has_defense, d->n_family, d->signal_series,
                      d->benign_attack};
  rd_bcast_bytes(ctx, head, sizeof head, 0);
  rd_bcast_bytes(ctx, d->family, sizeof d->family, 0);
  if (ctx->rank != 0) {
    d->M = head[0], d->S = head[1], d->V = head[2], d->Q = head[3], d->T = head[4], d->R = head[5];
    d->G = head[6], d->D = head[7], d->ND = head[8], d->NA = head[9];
    d->has_fictional = (int)head[10], d->has_entropy = (int)head[11], d->has_rank = (int)head[12];
    d->has_signal = (int)head[13], d->has_defense = (int)head[14], d->n_family = (int32_t)head[15];
    d->signal_series = (int32_t)head[16], d->benign_attack = (int32_t)head[17];
  }
#define SHARE(ptr, count)                                                                  \
  do {                                                                                     \
    size_t nb_ = sizeof *(ptr) * (size_t)(count);                                          \
    if (ctx->rank != 0) (ptr) = malloc(nb_ ? nb_ : 1);                                     \
    if (!(ptr)) rd_abort(ctx, __FILE__, __LINE__, "out of memory for the panel");          \
    rd_bcast_bytes(ctx, (ptr), nb_, 0);                                                    \
  } while (0)
  SHARE(d->fictional, d->S);
  SHARE(d->model, d->Q);
  SHARE(d->series, d->Q);
  SHARE(d->variant, d->Q);
  SHARE(d->seed, d->Q);
  SHARE(d->month, d->Q);
  SHARE(d->value, d->Q);
  SHARE(d->status, d->Q);
  if (d->has_entropy) SHARE(d->entropy, d->Q);
  SHARE(d->t_series, d->T);
  SHARE(d->t_month, d->T);
  SHARE(d->t_value, d->T);
  if (d->has_rank) {
    SHARE(d->r_model, d->R);
    SHARE(d->r_series, d->R);
    SHARE(d->r_a, d->R);
    SHARE(d->r_b, d->R);
    SHARE(d->r_pick, d->R);
  }
  if (d->has_signal) {
    SHARE(d->g_model, d->G);
    SHARE(d->g_month, d->G);
    SHARE(d->g_signal, d->G);
    SHARE(d->g_recall, d->G);
  }
  if (d->has_defense) {
    SHARE(d->d_defense, d->D);
    SHARE(d->d_attack, d->D);
    SHARE(d->d_model, d->D);
    SHARE(d->d_month, d->D);
    SHARE(d->d_blocked, d->D);
  }
#undef SHARE
}

/* ---- derived tables (the same on every rank) --------------------------------------------------------- */

/* Binary search of `key` among n sorted keys; -1 when absent. */
static int64_t find_key(const int64_t *keys, int64_t n, int64_t key) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (keys[mid] < key) lo = mid + 1;
    else hi = mid;
  }
  return lo < n && keys[lo] == key ? lo : -1;
}

typedef struct leak_work {
  const char *file, *group;
  const leak_opts *o;
  const leak_data *d;
  int64_t tol_micro;
  /* truth */
  int64_t *t_keys;   /* sorted (series << 24 | month) */
  double *t_vals;
  double *row_truth; /* [Q] NaN when none */
  /* cells */
  int64_t C;
  int64_t *cell_key;     /* [C] (model*S + series)*V + variant */
  int32_t *row_cell;     /* [Q] cell of each row, -1 for fictional series */
  int64_t *cell_off;     /* [C+1] rows of each cell, in row order, in cell_rows */
  int64_t *cell_rows;
  /* bootstrap */
  int64_t NB;            /* cells with a scored row */
  int64_t *boot_cell;    /* [NB] */
  int64_t *boot_off;     /* [NB+1] */
  double *boot_rows;     /* [boot_off[NB]][8], 64-byte aligned */
  uint64_t *boot_id;
  rd_leak_boot boot;
  /* null */
  int64_t NT;            /* null targets (cells whose series is in the family) */
  int64_t *null_cell;    /* [NT] */
  int64_t *null_off;
  uint32_t *null_avail, *null_hit;
  uint64_t *null_id;
  rd_leak_null null;
  /* chunks */
  int64_t n_boot_chunks, n_null_chunks;
  int64_t *boot_bounds, *null_bounds;
  const rd_backend *backend;
  rd_progress *prog;
  int64_t prog_done;
} leak_work;

static void work_free(leak_work *w) {
  void *ptrs[] = {w->t_keys, w->t_vals, w->row_truth, w->cell_key, w->row_cell, w->cell_off, w->cell_rows,
                  w->boot_cell, w->boot_off, w->boot_rows, w->boot_id, w->null_cell, w->null_off, w->null_avail,
                  w->null_hit, w->null_id, w->boot_bounds, w->null_bounds};
  for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++) free(ptrs[i]);
  memset(w, 0, sizeof *w);
}

static int64_t tkey(int64_t series, int64_t month) { return series << 24 | month; }

static double truth_at(const leak_work *w, int64_t series, int64_t month) {
  int64_t k = find_key(w->t_keys, w->d->T, tkey(series, month));
  return k < 0 ? NAN : w->t_vals[k];
}

/* |est - truth| within the tolerance under the job's rule and comparison. */
static int within_tol(const leak_work *w, double e, double t) {
  if (!w->o->compare_float && fabs(e) < 1e12 && fabs(t) < 1e12) {
    long long a = llround(e * 1e6), b = llround(t * 1e6);
    long long diff = a > b ? a - b : b - a;
    return w->o->rule_lt ? diff < w->tol_micro : diff <= w->tol_micro;
  }
  double dd = fabs(e - t);
  return w->o->rule_lt ? dd < w->o->tolerance : dd <= w->o->tolerance;
}

static int sign_of(double x) { return (x > 0) - (x < 0); }

static int build_truth(leak_work *w, rd_status *st) {
  const leak_data *d = w->d;
  kv *t = malloc(sizeof(kv) * (size_t)(d->T ? d->T : 1));
  w->t_keys = malloc(sizeof(int64_t) * (size_t)(d->T ? d->T : 1));
  w->t_vals = malloc(sizeof(double) * (size_t)(d->T ? d->T : 1));
  w->row_truth = malloc(sizeof(double) * (size_t)(d->Q ? d->Q : 1));
  if (!t || !w->t_keys || !w->t_vals || !w->row_truth) {
    free(t);
    return rd_fail(st, RD_EFAIL, "out of memory for the truth table");
  }
  for (int64_t j = 0; j < d->T; j++) t[j] = (kv){tkey(d->t_series[j], d->t_month[j]), j};
  qsort(t, (size_t)d->T, sizeof *t, kv_cmp);
  /* the keys are distinct: leak_read refused repeated (series, month) truth rows */
  for (int64_t j = 0; j < d->T; j++) {
    w->t_keys[j] = t[j].key;
    w->t_vals[j] = d->t_value[t[j].idx];
  }
  free(t);
  for (int64_t i = 0; i < d->Q; i++) w->row_truth[i] = truth_at(w, d->series[i], d->month[i]);
  return RD_OK;
}

static int build_cells(leak_work *w, rd_status *st) {
  const leak_data *d = w->d;
  int64_t Q = d->Q;
  size_t q1 = (size_t)(Q ? Q : 1);
  kv *k = malloc(sizeof(kv) * q1);
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
    k[n++] = (kv){((int64_t)d->model[i] * d->S + d->series[i]) * d->V + d->variant[i], i};
  }
  qsort(k, (size_t)n, sizeof *k, kv_cmp);
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

static void cell_parts(const leak_work *w, int64_t c, int64_t *m, int64_t *s, int64_t *v) {
  const leak_data *d = w->d;
  int64_t key = w->cell_key[c];
  *v = key % d->V;
  key /= d->V;
  *s = key % d->S;
  *m = key / d->S;
}

/* The packed bootstrap rows of every cell with a scored row. */
static int build_boot(leak_work *w, const rd_stream *stream, rd_status *st) {
  const leak_data *d = w->d;
  w->boot_cell = malloc(sizeof(int64_t) * (size_t)(w->C ? w->C : 1));
  w->boot_off = malloc(sizeof(int64_t) * (size_t)(w->C + 1));
  w->boot_id = malloc(sizeof(uint64_t) * (size_t)(w->C ? w->C : 1));
  int64_t total = 0;
  for (int64_t i = 0; i < d->Q; i++) total += w->row_cell[i] >= 0 && d->status[i] == 0 && !isnan(w->row_truth[i]);
  size_t bytes = ((sizeof(double) * 8 * (size_t)(total ? total : 1)) + 63) & ~(size_t)63;
  w->boot_rows = aligned_alloc(64, bytes);
  if (!w->boot_cell || !w->boot_off || !w->boot_id || !w->boot_rows)
    return rd_fail(st, RD_EFAIL, "out of memory for the bootstrap rows");
  int64_t nb = 0, pos = 0;
  w->boot_off[0] = 0;
  for (int64_t c = 0; c < w->C; c++) {
    double se = 0, stt = 0;
    int64_t n = 0;
    for (int64_t j = w->cell_off[c]; j < w->cell_off[c + 1]; j++) {
      int64_t i = w->cell_rows[j];
      if (d->status[i] != 0 || isnan(w->row_truth[i])) continue;
      se += d->value[i];
      stt += w->row_truth[i];
      n++;
    }
    if (n == 0) continue;
    double me = se / (double)n, mt = stt / (double)n;
    for (int64_t j = w->cell_off[c]; j < w->cell_off[c + 1]; j++) {
      int64_t i = w->cell_rows[j];
      if (d->status[i] != 0 || isnan(w->row_truth[i])) continue;
      double de = d->value[i] - me, dt = w->row_truth[i] - mt;
      double *r = w->boot_rows + 8 * pos++;
      r[0] = de;
      r[1] = dt;
      r[2] = de * de;
      r[3] = dt * dt;
      r[4] = de * dt;
      r[5] = fabs(d->value[i] - w->row_truth[i]);
      r[6] = r[7] = 0.0;
    }
    w->boot_cell[nb] = c;
    w->boot_id[nb] = (uint64_t)c;
    w->boot_off[++nb] = pos;
  }
  w->NB = nb;
  w->boot = (rd_leak_boot){.n_cells = nb, .B = w->o->bootstrap, .row_off = w->boot_off, .rows = w->boot_rows,
                           .cell_id = w->boot_id, .stream = *stream};
  return RD_OK;
}

static int cmp_i32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

/* The factor-shuffle tables: per (model, variant), the mean parsed estimate of every series and month;
 * per target cell, the months with a scored row and, per sibling, whether it has an estimate that
 * month and whether that estimate is within tolerance of the target's truth. */
static int build_null(leak_work *w, const rd_stream *stream, rd_status *st) {
  const leak_data *d = w->d;
  int F = d->n_family;
  w->null_cell = malloc(sizeof(int64_t) * (size_t)(w->C ? w->C : 1));
  w->null_off = malloc(sizeof(int64_t) * (size_t)(w->C + 1));
  w->null_id = malloc(sizeof(uint64_t) * (size_t)(w->C ? w->C : 1));
  if (!w->null_cell || !w->null_off || !w->null_id) return rd_fail(st, RD_EFAIL, "out of memory for the null");
  w->null_off[0] = 0;
  w->NT = 0;
  if (F < 2 || w->o->null_permutations == 0) return RD_OK;
  /* mean estimates: parsed rows sorted by ((model, variant, series), month), sums in row order */
  int64_t np = 0;
  for (int64_t i = 0; i < d->Q; i++) np += d->status[i] == 0;
  kv *k = malloc(sizeof(kv) * (size_t)(np ? np : 1));
  int64_t *ekeys = malloc(sizeof(int64_t) * (size_t)(np ? np : 1));
  double *emean = malloc(sizeof(double) * (size_t)(np ? np : 1));
  if (!k || !ekeys || !emean) {
    free(k), free(ekeys), free(emean);
    return rd_fail(st, RD_EFAIL, "out of memory for the null");
  }
  np = 0;
  for (int64_t i = 0; i < d->Q; i++)
    if (d->status[i] == 0)
      k[np++] = (kv){((((int64_t)d->model[i] * d->V + d->variant[i]) * d->S + d->series[i]) << 24) | d->month[i], i};
  qsort(k, (size_t)np, sizeof *k, kv_cmp);
  int64_t ne = 0;
  for (int64_t j = 0; j < np;) {
    int64_t j1 = j;
    double s = 0.0;
    while (j1 < np && k[j1].key == k[j].key) s += d->value[k[j1++].idx];
    ekeys[ne] = k[j].key;
    emean[ne++] = s / (double)(j1 - j);
    j = j1;
  }
  free(k);
  /* targets */
  int64_t total_months = 0;
  int32_t *months = malloc(sizeof(int32_t) * (size_t)(d->Q ? d->Q : 1));
  uint32_t *av = NULL, *ht = NULL;
  int rc = months ? RD_OK : rd_fail(st, RD_EFAIL, "out of memory for the null");
  for (int64_t c = 0; c < w->C && rc == RD_OK; c++) {
    int64_t m, s, v;
    cell_parts(w, c, &m, &s, &v);
    int fi = -1;
    for (int q = 0; q < F; q++)
      if (d->family[q] == s) fi = q;
    if (fi < 0) continue;
    int64_t nm = 0;
    for (int64_t j = w->cell_off[c]; j < w->cell_off[c + 1]; j++) {
      int64_t i = w->cell_rows[j];
      if (d->status[i] == 0 && !isnan(w->row_truth[i])) months[nm++] = d->month[i];
    }
    /* distinct months, ascending */
    qsort(months, (size_t)nm, sizeof *months, cmp_i32);
    int64_t nd = 0;
    for (int64_t a = 0; a < nm; a++)
      if (a == 0 || months[a] != months[a - 1]) months[nd++] = months[a];
    uint32_t *nav = realloc(av, sizeof(uint32_t) * (size_t)(total_months + nd + 1));
    if (nav) av = nav;
    uint32_t *nht = realloc(ht, sizeof(uint32_t) * (size_t)(total_months + nd + 1));
    if (nht) ht = nht;
    if (!nav || !nht) {
      rc = rd_fail(st, RD_EFAIL, "out of memory for the null");
      break;
    }
    for (int64_t a = 0; a < nd; a++) {
      double t = truth_at(w, s, months[a]);
      uint32_t am = 0, hm = 0;
      for (int q = 0, j = 0; q < F; q++) {
        if (q == fi) continue;
        int64_t e = find_key(ekeys, ne, (((m * d->V + v) * d->S + d->family[q]) << 24) | months[a]);
        if (e >= 0) {
          am |= 1u << j;
          if (within_tol(w, emean[e], t)) hm |= 1u << j;
        }
        j++;
      }
      av[total_months + a] = am;
      ht[total_months + a] = hm;
    }
    total_months += nd;
    w->null_cell[w->NT] = c;
    w->null_id[w->NT] = (uint64_t)c;
    w->null_off[++w->NT] = total_months;
  }
  free(months);
  free(ekeys);
  free(emean);
  w->null_avail = av;
  w->null_hit = ht;
  w->null = (rd_leak_null){.n_targets = w->NT, .P = w->o->null_permutations, .n_sib = (uint32_t)(F - 1),
                           .month_off = w->null_off, .avail = av, .hit = ht, .target_id = w->null_id,
                           .stream = *stream};
  return rc;
}

/* Cuts `nseg` segments of `per` units each (unit cost w[i] in segment i) into at most `nch` chunks of
 * about equal cost; bounds[0..n] are flat unit indices. Returns the number of chunks. */
static int64_t cut_chunks(int64_t nseg, const int64_t *off, int64_t per, int64_t nch, int64_t **bounds_out) {
  int64_t units = nseg * per;
  if (units == 0 || nch <= 0) {
    *bounds_out = NULL;
    return 0;
  }
  if (nch > units) nch = units;
  double total = 0;
  for (int64_t i = 0; i < nseg; i++) total += (double)(off[i + 1] - off[i] + 1) * (double)per;
  int64_t *b = malloc(sizeof(int64_t) * (size_t)(nch + 1));
  if (!b) return -1;
  int64_t n = 0;
  b[n++] = 0;
  double cum = 0;
  int64_t seg = 0;
  for (int64_t c = 1; c < nch; c++) {
    double target = total * (double)c / (double)nch;
    while (seg < nseg && cum + (double)(off[seg + 1] - off[seg] + 1) * (double)per <= target) {
      cum += (double)(off[seg + 1] - off[seg] + 1) * (double)per;
      seg++;
    }
    if (seg >= nseg) break;
    double wu = (double)(off[seg + 1] - off[seg] + 1);
    int64_t inside = (int64_t)ceil((target - cum) / wu);
    if (inside > per) inside = per;
    int64_t k = seg * per + inside;
    if (k > b[n - 1] && k < units) b[n++] = k;
  }
  b[n] = units;
  *bounds_out = b;
  return n;
}

/* ---- metrics ------------------------------------------------------------------------------------------- */

enum {
  MT_NROWS, MT_NPARSED, MT_NNOTRUTH, MT_NSCORED, MT_PR, MT_PR_LO, MT_PR_HI, MT_R, MT_MAE, MT_NWITHIN, MT_WITHIN,
  MT_W_LO, MT_W_HI, MT_NSIGN, MT_NSIGNOK, MT_SIGN, MT_S_LO, MT_S_HI, MT_SLOPE, MT_INTERCEPT, MT_N
};

/* The metrics of a set of panel rows (indices in row order). */
static void metrics_of(const leak_work *w, const int64_t *rows, int64_t n, double *out) {
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
    n_within += within_tol(w, e, t);
    if (!(w->o->sign_exclude_zero && t == 0.0)) {
      n_sign++;
      n_sign_ok += sign_of(e) == sign_of(t);
    }
  }
  double r = NAN, slope = NAN, intercept = NAN;
  if (ns >= 2) {
    double me = se / (double)ns, mt = stt / (double)ns, sxy = 0, sxx = 0, syy = 0;
    for (int64_t j = 0; j < n; j++) {
      int64_t i = rows[j];
      if (d->status[i] != 0 || isnan(w->row_truth[i])) continue;
      double de = d->value[i] - me, dt = w->row_truth[i] - mt;
      sxy += de * dt;
      sxx += de * de;
      syy += dt * dt;
    }
    if (ns >= 3 && sxx > 0 && syy > 0) r = fmax(-1.0, fmin(1.0, sxy / sqrt(sxx * syy)));
    if (syy > 0) {
      slope = sxy / syy;
      intercept = me - slope * mt;
    }
  }
  for (int k = 0; k < MT_N; k++) out[k] = NAN;
  out[MT_NROWS] = (double)n_rows;
  out[MT_NPARSED] = (double)n_parsed;
  out[MT_NNOTRUTH] = (double)n_no_truth;
  out[MT_NSCORED] = (double)ns;
  if (n_rows > 0) out[MT_PR] = (double)n_parsed / (double)n_rows;
  rd_wilson((double)n_parsed, (double)n_rows, &out[MT_PR_LO], &out[MT_PR_HI]);
  out[MT_R] = r;
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
  out[MT_SLOPE] = slope;
  out[MT_INTERCEPT] = intercept;
}

/* Mean and median of the finite values (x is reordered); NaN when none. */
static void mean_median(double *x, int64_t n, double *mean, double *median) {
  *mean = *median = NAN;
  if (n == 0) return;
  double s = 0;
  for (int64_t i = 0; i < n; i++) s += x[i];
  *mean = s / (double)n;
  rd_sort_doubles(x, (size_t)n);
  double q = 0.5;
  rd_quantiles_sorted(x, (size_t)n, &q, 1, median);
}

/* ---- tasks ------------------------------------------------------------------------------------------------- */

enum { CTL_FICTIONAL, CTL_RANKING, CTL_RESIDUAL, CTL_DEFENSE, CTL_N };

/* Output of a growing vector of doubles. */
typedef struct dvec {
  double *v;
  int64_t n, cap;
} dvec;

static int dv_push(dvec *a, double x) {
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

static int dv_push_n(dvec *a, const double *x, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    if (dv_push(a, x[i]) != 0) return -1;
  return 0;
}

/* One cell: [pooled metrics][n seeds][seed, metrics]...[holdout before, from][n_entropy, mean, median]. */
static int task_cell(const leak_work *w, int64_t c, dvec *out) {
  const leak_data *d = w->d;
  int64_t a = w->cell_off[c], n = w->cell_off[c + 1] - a;
  const int64_t *rows = w->cell_rows + a;
  double m[MT_N];
  metrics_of(w, rows, n, m);
  if (dv_push_n(out, m, MT_N)) return -1;
  int64_t *sub = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
  int32_t *seeds = malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
  double *ent = malloc(sizeof(double) * (size_t)(n ? n : 1));
  if (!sub || !seeds || !ent) {
    free(sub), free(seeds), free(ent);
    return -1;
  }
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
  int rc = dv_push(out, (double)ns);
  for (int64_t k = 0; k < ns && rc == 0; k++) {
    int64_t m2 = 0;
    for (int64_t j = 0; j < n; j++)
      if (d->seed[rows[j]] == seeds[k]) sub[m2++] = rows[j];
    metrics_of(w, sub, m2, m);
    rc |= dv_push(out, (double)seeds[k]);
    rc |= dv_push_n(out, m, MT_N);
  }
  if (w->o->has_holdout && rc == 0) {
    for (int side = 0; side < 2; side++) {
      int64_t m2 = 0;
      for (int64_t j = 0; j < n; j++)
        if ((d->month[rows[j]] >= w->o->holdout_from) == side) sub[m2++] = rows[j];
      metrics_of(w, sub, m2, m);
      rc |= dv_push_n(out, m, MT_N);
    }
  }
  int64_t ne = 0;
  if (d->has_entropy)
    for (int64_t j = 0; j < n; j++)
      if (d->status[rows[j]] != 2 && isfinite(d->entropy[rows[j]])) ent[ne++] = d->entropy[rows[j]];
  double mean, median;
  mean_median(ent, ne, &mean, &median);
  rc |= dv_push(out, (double)ne);
  rc |= dv_push(out, mean);
  rc |= dv_push(out, median);
  free(sub), free(seeds), free(ent);
  return rc;
}

/* Fictional series, per model: [model, n_rows, n_parsed, parse_rate, lo, hi, n_entropy, mean, median]. */
static int task_fictional(const leak_work *w, dvec *out) {
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
    int64_t ne = 0;
    if (d->has_entropy)
      for (int64_t i = 0; i < d->Q; i++)
        if (d->model[i] == m && d->fictional[d->series[i]] && d->status[i] != 2 && isfinite(d->entropy[i]))
          ent[ne++] = d->entropy[i];
    double e[9] = {(double)m, (double)nr[m], (double)npz[m], nr[m] ? (double)npz[m] / (double)nr[m] : NAN, 0, 0,
                   (double)ne, 0, 0};
    rd_wilson((double)npz[m], (double)nr[m], &e[4], &e[5]);
    mean_median(ent, ne, &e[7], &e[8]);
    rc |= dv_push_n(out, e, 9);
  }
  free(nr), free(npz), free(any), free(ent);
  return rc;
}

/* Ranking, per (model, series): [model, series, n_rows, n_picked, parse_rate, n_scored, n_correct,
 * accuracy, lo, hi, n_tie, n_no_truth]. */
static int task_ranking(const leak_work *w, dvec *out) {
  const leak_data *d = w->d;
  kv *k = malloc(sizeof(kv) * (size_t)(d->R ? d->R : 1));
  if (!k) return -1;
  for (int64_t i = 0; i < d->R; i++) k[i] = (kv){(int64_t)d->r_model[i] * d->S + d->r_series[i], i};
  qsort(k, (size_t)d->R, sizeof *k, kv_cmp);
  int rc = 0;
  for (int64_t j = 0; j < d->R && rc == 0;) {
    int64_t j1 = j, picked = 0, scored = 0, correct = 0, tie = 0, no_truth = 0;
    for (; j1 < d->R && k[j1].key == k[j].key; j1++) {
      int64_t i = k[j1].idx;
      if (d->r_pick[i] < 0) continue;
      picked++;
      double ta = truth_at(w, d->r_series[i], d->r_a[i]), tb = truth_at(w, d->r_series[i], d->r_b[i]);
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
    int64_t n = j1 - j;
    double e[12] = {(double)(k[j].key / d->S), (double)(k[j].key % d->S), (double)n, (double)picked,
                    (double)picked / (double)n, (double)scored, (double)correct,
                    scored ? (double)correct / (double)scored : NAN, 0, 0, (double)tie, (double)no_truth};
    rd_wilson((double)correct, (double)scored, &e[8], &e[9]);
    rc |= dv_push_n(out, e, 12);
    j = j1;
  }
  free(k);
  return rc;
}

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

/* Residualisation, per model: [model, n, gamma, r_signal_truth, r_residual_truth, leak_share, r_signal_recall]. */
static int task_residual(const leak_work *w, dvec *out) {
  const leak_data *d = w->d;
  double *S = malloc(sizeof(double) * (size_t)(d->G ? d->G : 1)), *R = malloc(sizeof(double) * (size_t)(d->G ? d->G : 1));
  double *T = malloc(sizeof(double) * (size_t)(d->G ? d->G : 1)), *U = malloc(sizeof(double) * (size_t)(d->G ? d->G : 1));
  int rc = (S && R && T && U) ? 0 : -1;
  for (int64_t m = 0; m < d->M && rc == 0; m++) {
    int64_t n = 0, any = 0;
    for (int64_t i = 0; i < d->G; i++) {
      if (d->g_model[i] != m) continue;
      any = 1;
      double t = truth_at(w, d->signal_series, d->g_month[i]);
      if (isnan(d->g_signal[i]) || isnan(d->g_recall[i]) || isnan(t)) continue;
      S[n] = d->g_signal[i], R[n] = d->g_recall[i], T[n] = t;
      n++;
    }
    if (!any) continue;
    double gamma = NAN, rst = NAN, rut = NAN, share = NAN, rsr = NAN;
    if (n > 0) {
      double ms = 0, mr = 0;
      for (int64_t i = 0; i < n; i++) ms += S[i], mr += R[i];
      ms /= (double)n, mr /= (double)n;
      double cov = 0, var = 0;
      for (int64_t i = 0; i < n; i++) {
        cov += (S[i] - ms) * (R[i] - mr);
        var += (R[i] - mr) * (R[i] - mr);
      }
      cov /= (double)n, var /= (double)n;
      if (var > 0) {
        gamma = cov / var;
        for (int64_t i = 0; i < n; i++) U[i] = S[i] - gamma * R[i];
        rut = pearson(U, T, n);
      }
      rst = pearson(S, T, n);
      rsr = pearson(S, R, n);
      if (isfinite(rst) && rst != 0 && isfinite(rut)) share = 1.0 - (rut * rut) / (rst * rst);
    }
    double e[7] = {(double)m, (double)n, gamma, rst, rut, share, rsr};
    rc |= dv_push_n(out, e, 7);
  }
  free(S), free(R), free(T), free(U);
  return rc;
}

/* Defenses: per (defense, model) [defense, model, n, blocked, frac, lo, hi, months, leaked, worst_case,
 * n_benign, benign_parsed], then per defense over all models [defense, n, blocked, frac, lo, hi, months,
 * leaked, worst_case], each list preceded by its length. */
static int task_defense(const leak_work *w, dvec *out) {
  const leak_data *d = w->d;
  kv *k = malloc(sizeof(kv) * (size_t)(d->D ? d->D : 1));
  if (!k) return -1;
  /* key: (defense, model, month) so months group inside (defense, model) */
  for (int64_t i = 0; i < d->D; i++)
    k[i] = (kv){(((int64_t)d->d_defense[i] * d->M + d->d_model[i]) << 24) | d->d_month[i], i};
  qsort(k, (size_t)d->D, sizeof *k, kv_cmp);
  dvec per = {0}, pooled = {0};
  int rc = 0;
  int64_t np = 0, npool = 0;
  for (int64_t j = 0; j < d->D && rc == 0;) {
    int64_t dm = k[j].key >> 24, def = dm / d->M;
    int64_t j1 = j, n = 0, blocked = 0, months = 0, leaked = 0, nb = 0, nbp = 0;
    while (j1 < d->D && (k[j1].key >> 24) == dm) {
      int64_t j2 = j1, month_rows = 0, month_leak = 0;
      for (; j2 < d->D && k[j2].key == k[j1].key; j2++) {
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
      j1 = j2;
    }
    double e[12] = {(double)def, (double)(dm % d->M), (double)n, (double)blocked, n ? (double)blocked / (double)n : NAN,
                    0, 0, (double)months, (double)leaked, months ? (double)leaked / (double)months : NAN, (double)nb,
                    (double)nbp};
    rd_wilson((double)blocked, (double)n, &e[5], &e[6]);
    rc |= dv_push_n(&per, e, 12);
    np++;
    /* pooled over models: accumulate into the last pooled entry of this defense */
    if (npool == 0 || (int64_t)pooled.v[(npool - 1) * 9] != def) {
      double z[9] = {(double)def, 0, 0, 0, 0, 0, 0, 0, 0};
      rc |= dv_push_n(&pooled, z, 9);
      npool++;
    }
    double *p = pooled.v + (npool - 1) * 9;
    p[1] += (double)n, p[2] += (double)blocked, p[6] += (double)months, p[7] += (double)leaked;
    j = j1;
  }
  for (int64_t q = 0; q < npool && rc == 0; q++) {
    double *p = pooled.v + q * 9;
    p[3] = p[1] > 0 ? p[2] / p[1] : NAN;
    rd_wilson(p[2], p[1], &p[4], &p[5]);
    p[8] = p[6] > 0 ? p[7] / p[6] : NAN;
  }
  rc |= dv_push(out, (double)np);
  if (rc == 0) rc |= dv_push_n(out, per.v, per.n);
  rc |= dv_push(out, (double)npool);
  if (rc == 0) rc |= dv_push_n(out, pooled.v, pooled.n);
  free(per.v), free(pooled.v), free(k);
  return rc;
}

static int leak_task(int64_t task, void *arg, double **out, int64_t *n_out, rd_status *st) {
  leak_work *w = arg;
  dvec v = {0};
  int rc = 0;
  int64_t t = task;
  if (t < w->C) {
    rc = task_cell(w, t, &v);
  } else if ((t -= w->C) < CTL_N) {
    if (t == CTL_FICTIONAL && w->d->has_fictional) rc = task_fictional(w, &v);
    else if (t == CTL_RANKING && w->d->has_rank) rc = task_ranking(w, &v);
    else if (t == CTL_RESIDUAL && w->d->has_signal) rc = task_residual(w, &v);
    else if (t == CTL_DEFENSE && w->d->has_defense) rc = task_defense(w, &v);
  } else if ((t -= CTL_N) < w->n_boot_chunks) {
    int64_t k0 = w->boot_bounds[t], k1 = w->boot_bounds[t + 1];
    double *r = malloc(sizeof(double) * (size_t)(2 * (k1 - k0)));
    if (!r) return rd_fail(st, RD_EFAIL, "out of memory for bootstrap replicates");
    const rd_backend *kb = RD_BACKEND_FOR(w->backend, leak, bootstrap);
    char err[512] = "";
    if (kb->leak->bootstrap(&w->boot, k0, k1, r, r + (k1 - k0), err, sizeof err) != 0) {
      free(r);
      return rd_fail(st, RD_EFAIL, "%s backend failed in the leakage bootstrap kernel: %s", kb->name, err);
    }
    if (w->prog) rd_progress_update(w->prog, w->prog_done += k1 - k0);
    *out = r;
    *n_out = 2 * (k1 - k0);
    return RD_OK;
  } else {
    t -= w->n_boot_chunks;
    int64_t k0 = w->null_bounds[t], k1 = w->null_bounds[t + 1];
    int32_t *u = malloc(sizeof(int32_t) * (size_t)(2 * (k1 - k0)));
    double *r = malloc(sizeof(double) * (size_t)(k1 - k0));
    if (!u || !r) {
      free(u), free(r);
      return rd_fail(st, RD_EFAIL, "out of memory for null draws");
    }
    const rd_backend *kb = RD_BACKEND_FOR(w->backend, leak, null_draws);
    char err[512] = "";
    if (kb->leak->null_draws(&w->null, k0, k1, u, u + (k1 - k0), err, sizeof err) != 0) {
      free(u), free(r);
      return rd_fail(st, RD_EFAIL, "%s backend failed in the leakage null kernel: %s", kb->name, err);
    }
    /* the draw's value: the fraction of its used months that are within; NaN (dropped) when none */
    for (int64_t k = 0; k < k1 - k0; k++) r[k] = u[k] > 0 ? (double)u[k1 - k0 + k] / (double)u[k] : NAN;
    free(u);
    if (w->prog) rd_progress_update(w->prog, w->prog_done += k1 - k0);
    *out = r;
    *n_out = k1 - k0;
    return RD_OK;
  }
  if (rc != 0) {
    free(v.v);
    return rd_fail(st, RD_EFAIL, "out of memory computing the leakage report");
  }
  *out = v.v;
  *n_out = v.n;
  return RD_OK;
}

/* ---- report -------------------------------------------------------------------------------------------- */

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

static void fmt_num(char *buf, size_t n, double x, const char *fmt) {
  if (isnan(x)) snprintf(buf, n, "-");
  else snprintf(buf, n, fmt, x);
}

typedef struct cell_summary {
  double n, parse, r, mae, within, sign, selectivity;
} cell_summary;

/* A name in `width` columns: cut or padded by code points, so UTF-8 names line up. */
static void put_cell(FILE *fp, const char *s, int width) {
  int cols = 0;
  const char *p = s;
  while (*p && cols < width) {
    const char *q = p + 1;
    while ((*q & 0xC0) == 0x80) q++;
    fwrite(p, 1, (size_t)(q - p), fp);
    p = q;
    cols++;
  }
  for (; cols <= width; cols++) fputc(' ', fp);
}

static void print_table(FILE *fp, const rd_job *job, const leak_work *w, const cell_summary *cs) {
  const leak_data *d = w->d;
  fprintf(fp, "%s: leakage, %lld cells (within: |est - truth| %s %g, %s)\n", job->name, (long long)w->C,
          w->o->rule_lt ? "<" : "<=", w->o->tolerance, w->o->compare_float ? "float" : "decimal");
  fprintf(fp, "%-24s %-10s %-8s %6s %6s %7s %8s %7s %6s %7s\n", "model", "series", "variant", "n", "parse", "r", "MAE",
          "within", "sign", "select");
  for (int64_t c = 0; c < w->C; c++) {
    int64_t m, s, v;
    cell_parts(w, c, &m, &s, &v);
    char a[6][32];
    fmt_num(a[0], 32, cs[c].parse, "%.3f");
    fmt_num(a[1], 32, cs[c].r, "%.3f");
    fmt_num(a[2], 32, cs[c].mae, "%.3f");
    fmt_num(a[3], 32, cs[c].within, "%.3f");
    fmt_num(a[4], 32, cs[c].sign, "%.3f");
    fmt_num(a[5], 32, cs[c].selectivity, "%.2f");
    put_cell(fp, name_of(d, 0, m), 24);
    put_cell(fp, name_of(d, 1, s), 10);
    put_cell(fp, name_of(d, 2, v), 8);
    fprintf(fp, "%6.0f %6s %7s %8s %7s %6s %7s\n", cs[c].n, a[0], a[1], a[2], a[3], a[4], a[5]);
  }
}

/* Rank 0: the result object from the tasks' vectors. */
static int leak_report(const rd_ctx *ctx, const rd_job *job, const leak_work *w, double **res, const int64_t *lens,
                       cJSON **out, rd_status *st) {
  const leak_opts *o = w->o;
  const leak_data *d = w->d;
  int64_t C = w->C, B = o->bootstrap, P = o->null_permutations;
  cell_summary *cs = calloc((size_t)(C ? C : 1), sizeof *cs);
  double *boot_ci = malloc(sizeof(double) * 4 * (size_t)(C ? C : 1));
  int64_t *boot_dropped = calloc((size_t)(C ? C : 1), sizeof(int64_t));
  double *null_w = malloc(sizeof(double) * (size_t)(C ? C : 1)), *null_used = calloc((size_t)(C ? C : 1), sizeof(double));
  double *col = malloc(sizeof(double) * (size_t)((B > P ? B : P) + 1));
  if (!cs || !boot_ci || !boot_dropped || !null_w || !null_used || !col) {
    free(cs), free(boot_ci), free(boot_dropped), free(null_w), free(null_used), free(col);
    return rd_fail(st, RD_EFAIL, "out of memory assembling the report");
  }
  for (int64_t c = 0; c < 4 * C; c++) boot_ci[c] = NAN;
  for (int64_t c = 0; c < C; c++) null_w[c] = NAN;
  /* bootstrap replicates in flat order k = boot cell * B + b: r then mae of each chunk */
  if (B > 0 && w->NB > 0) {
    double *r_all = malloc(sizeof(double) * (size_t)(w->NB * B)), *m_all = malloc(sizeof(double) * (size_t)(w->NB * B));
    if (!r_all || !m_all) {
      free(r_all), free(m_all);
      free(cs), free(boot_ci), free(boot_dropped), free(null_w), free(null_used), free(col);
      return rd_fail(st, RD_EFAIL, "out of memory assembling the report");
    }
    for (int64_t ch = 0; ch < w->n_boot_chunks; ch++) {
      int64_t k0 = w->boot_bounds[ch], k1 = w->boot_bounds[ch + 1];
      const double *v = res[C + CTL_N + ch];
      memcpy(r_all + k0, v, sizeof(double) * (size_t)(k1 - k0));
      memcpy(m_all + k0, v + (k1 - k0), sizeof(double) * (size_t)(k1 - k0));
    }
    for (int64_t b = 0; b < w->NB; b++) {
      int64_t c = w->boot_cell[b];
      memcpy(col, r_all + b * B, sizeof(double) * (size_t)B);
      boot_dropped[c] = (int64_t)rd_percentile_ci95(col, (size_t)B, &boot_ci[4 * c], &boot_ci[4 * c + 1]);
      memcpy(col, m_all + b * B, sizeof(double) * (size_t)B);
      rd_percentile_ci95(col, (size_t)B, &boot_ci[4 * c + 2], &boot_ci[4 * c + 3]);
    }
    free(r_all), free(m_all);
  }
  /* null draws in flat order k = target * P + p */
  if (w->NT > 0) {
    double *all = malloc(sizeof(double) * (size_t)(w->NT * P));
    if (!all) {
      free(cs), free(boot_ci), free(boot_dropped), free(null_w), free(null_used), free(col);
      return rd_fail(st, RD_EFAIL, "out of memory assembling the report");
    }
    for (int64_t ch = 0; ch < w->n_null_chunks; ch++) {
      int64_t k0 = w->null_bounds[ch], k1 = w->null_bounds[ch + 1];
      memcpy(all + k0, res[C + CTL_N + w->n_boot_chunks + ch], sizeof(double) * (size_t)(k1 - k0));
    }
    for (int64_t t = 0; t < w->NT; t++) {
      int64_t used = 0;
      for (int64_t p = 0; p < P; p++)
        if (!isnan(all[t * P + p])) col[used++] = all[t * P + p];
      int64_t c = w->null_cell[t];
      null_used[c] = (double)used;
      null_w[c] = used ? rd_sum(col, (size_t)used) / (double)used : NAN;
    }
    free(all);
  }
  cJSON *r = cJSON_CreateObject();
  int64_t n_excl = 0, n_fict = 0;
  for (int64_t i = 0; i < d->Q; i++) {
    n_excl += d->status[i] == 2;
    n_fict += w->row_cell[i] < 0;
  }
  cJSON_AddNumberToObject(r, "n_rows_total", (double)d->Q);
  cJSON_AddNumberToObject(r, "n_excluded", (double)n_excl);
  cJSON_AddNumberToObject(r, "n_fictional_rows", (double)n_fict);
  cJSON_AddNumberToObject(r, "n_cells", (double)C);
  cJSON *cells = cJSON_AddArrayToObject(r, "cells");
  cJSON *hold = o->has_holdout ? cJSON_CreateArray() : NULL;
  for (int64_t c = 0; c < C; c++) {
    const double *v = res[c];
    int64_t m, s, var;
    cell_parts(w, c, &m, &s, &var);
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "model", name_of(d, 0, m));
    cJSON_AddStringToObject(e, "series", name_of(d, 1, s));
    cJSON_AddStringToObject(e, "variant", name_of(d, 2, var));
    add_metrics(e, v);
    add_scores(e, v, B > 0 ? &boot_ci[4 * c] : NULL, B > 0 ? &boot_ci[4 * c + 2] : NULL);
    if (B == 0) {
      cJSON_AddNullToObject(e, "r_ci95");
      cJSON_AddNullToObject(e, "mae_ci95");
    }
    cJSON_AddNumberToObject(e, "r_bootstrap_dropped", B > 0 && v[MT_NSCORED] > 0 ? (double)boot_dropped[c] : 0.0);
    int64_t pos = MT_N;
    int64_t nseeds = (int64_t)v[pos++];
    cJSON *ps = cJSON_AddArrayToObject(e, "per_seed");
    for (int64_t k = 0; k < nseeds; k++) {
      cJSON *x = cJSON_CreateObject();
      cJSON_AddNumberToObject(x, "seed", v[pos++]);
      add_metrics(x, v + pos);
      add_scores(x, v + pos, NULL, NULL);
      pos += MT_N;
      cJSON_AddItemToArray(ps, x);
    }
    rd_json_add(e, "null_within", rd_json_num(null_w[c]));
    double sel = (null_w[c] > 0 && !isnan(v[MT_WITHIN])) ? v[MT_WITHIN] / null_w[c] : NAN;
    rd_json_add(e, "selectivity", rd_json_num(sel));
    cJSON_AddNumberToObject(e, "null_draws_used", null_used[c]);
    if (hold) {
      cJSON *h = cJSON_CreateObject();
      cJSON_AddStringToObject(h, "model", name_of(d, 0, m));
      cJSON_AddStringToObject(h, "series", name_of(d, 1, s));
      cJSON_AddStringToObject(h, "variant", name_of(d, 2, var));
      cJSON_AddItemToObject(h, "before", holdout_side(v + pos));
      cJSON_AddItemToObject(h, "from", holdout_side(v + pos + MT_N));
      cJSON_AddItemToArray(hold, h);
      pos += 2 * MT_N;
    }
    cJSON_AddNumberToObject(e, "n_entropy", v[pos]);
    rd_json_add(e, "entropy_mean", rd_json_num(v[pos + 1]));
    rd_json_add(e, "entropy_median", rd_json_num(v[pos + 2]));
    cJSON_AddItemToArray(cells, e);
    cs[c] = (cell_summary){v[MT_NSCORED], v[MT_PR], v[MT_R], v[MT_MAE], v[MT_WITHIN], v[MT_SIGN], sel};
  }
  if (hold) {
    cJSON_AddNumberToObject(r, "holdout_from", o->holdout_from);
    cJSON_AddItemToObject(r, "holdout", hold);
  }
  if (d->has_fictional) {
    const double *v = res[C + CTL_FICTIONAL];
    cJSON *a = cJSON_AddArrayToObject(r, "fictional");
    for (int64_t q = 0; q < lens[C + CTL_FICTIONAL]; q += 9) {
      cJSON *x = cJSON_CreateObject();
      cJSON_AddStringToObject(x, "model", name_of(d, 0, (int64_t)v[q]));
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
  if (d->has_rank) {
    const double *v = res[C + CTL_RANKING];
    cJSON *a = cJSON_AddArrayToObject(r, "ranking");
    for (int64_t q = 0; q < lens[C + CTL_RANKING]; q += 12) {
      cJSON *x = cJSON_CreateObject();
      cJSON_AddStringToObject(x, "model", name_of(d, 0, (int64_t)v[q]));
      cJSON_AddStringToObject(x, "series", name_of(d, 1, (int64_t)v[q + 1]));
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
  if (d->has_signal) {
    const double *v = res[C + CTL_RESIDUAL];
    cJSON *a = cJSON_AddArrayToObject(r, "residualisation");
    for (int64_t q = 0; q < lens[C + CTL_RESIDUAL]; q += 7) {
      cJSON *x = cJSON_CreateObject();
      cJSON_AddStringToObject(x, "model", name_of(d, 0, (int64_t)v[q]));
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
  if (d->has_defense) {
    const double *v = res[C + CTL_DEFENSE];
    int64_t q = 0, np = (int64_t)v[q++];
    cJSON *a = cJSON_AddArrayToObject(r, "defense");
    for (int64_t k = 0; k < np; k++, q += 12) {
      cJSON *x = cJSON_CreateObject();
      cJSON_AddStringToObject(x, "defense", name_of(d, 3, (int64_t)v[q]));
      cJSON_AddStringToObject(x, "model", name_of(d, 0, (int64_t)v[q + 1]));
      cJSON_AddNumberToObject(x, "n", v[q + 2]);
      cJSON_AddNumberToObject(x, "blocked", v[q + 3]);
      rd_json_add(x, "blocked_fraction", rd_json_num(v[q + 4]));
      rd_json_add(x, "blocked_wilson95", rd_json_pair(v[q + 5], v[q + 6]));
      cJSON_AddNumberToObject(x, "n_months", v[q + 7]);
      cJSON_AddNumberToObject(x, "n_months_leaked", v[q + 8]);
      rd_json_add(x, "worst_case_leaked_fraction", rd_json_num(v[q + 9]));
      cJSON_AddNumberToObject(x, "n_benign", v[q + 10]);
      cJSON_AddNumberToObject(x, "n_benign_parsed", v[q + 11]);
      rd_json_add(x, "benign_parse_rate", rd_json_num(v[q + 10] > 0 ? v[q + 11] / v[q + 10] : NAN));
      cJSON_AddItemToArray(a, x);
    }
    int64_t npool = (int64_t)v[q++];
    cJSON *b = cJSON_AddArrayToObject(r, "defense_pooled");
    for (int64_t k = 0; k < npool; k++, q += 9) {
      cJSON *x = cJSON_CreateObject();
      cJSON_AddStringToObject(x, "defense", name_of(d, 3, (int64_t)v[q]));
      cJSON_AddNumberToObject(x, "n", v[q + 1]);
      cJSON_AddNumberToObject(x, "blocked", v[q + 2]);
      rd_json_add(x, "blocked_fraction", rd_json_num(v[q + 3]));
      rd_json_add(x, "blocked_wilson95", rd_json_pair(v[q + 4], v[q + 5]));
      cJSON_AddNumberToObject(x, "n_months", v[q + 6]);
      cJSON_AddNumberToObject(x, "n_months_leaked", v[q + 7]);
      rd_json_add(x, "worst_case_leaked_fraction", rd_json_num(v[q + 8]));
      cJSON_AddItemToArray(b, x);
    }
    cJSON_AddStringToObject(r, "benign_attack", d->benign_attack >= 0 ? o->benign_attack : "");
  }
  cJSON *bo = cJSON_AddObjectToObject(r, "bootstrap");
  cJSON_AddNumberToObject(bo, "resamples", (double)B);
  cJSON_AddStringToObject(bo, "unit", "scored row");
  cJSON *nu = cJSON_AddObjectToObject(r, "null");
  cJSON_AddNumberToObject(nu, "permutations", (double)P);
  cJSON *fam = cJSON_AddArrayToObject(nu, "family");
  for (int k = 0; k < o->n_family; k++) cJSON_AddItemToArray(fam, cJSON_CreateString(o->family[k]));
  cJSON_AddNumberToObject(nu, "targets", (double)w->NT);
  if (ctx->out) print_table(ctx->out, job, w, cs);  /* stdout: --quiet silences stderr only */
  free(cs), free(boot_ci), free(boot_dropped), free(null_w), free(null_used), free(col);
  *out = r;
  return RD_OK;
}

/* /leak/abs_error (NaN where not scored), /leak/within, /leak/truth (NaN where none), /leak/cell. */
static int leak_write_h5(hid_t h5, const leak_work *w, rd_status *st) {
  const leak_data *d = w->d;
  int64_t Q = d->Q;
  double *ae = malloc(sizeof(double) * (size_t)(Q ? Q : 1));
  uint8_t *wi = malloc((size_t)(Q ? Q : 1));
  if (!ae || !wi) {
    free(ae), free(wi);
    return rd_fail(st, RD_EFAIL, "out of memory");
  }
  for (int64_t i = 0; i < Q; i++) {
    int scored = d->status[i] == 0 && !isnan(w->row_truth[i]);
    ae[i] = scored ? fabs(d->value[i] - w->row_truth[i]) : NAN;
    wi[i] = scored ? (uint8_t)within_tol(w, d->value[i], w->row_truth[i]) : 0;
  }
  int64_t dims[1] = {Q};
  int rc = rd_h5_write_f64(h5, "/leak/abs_error", 1, dims, ae, st);
  if (rc == RD_OK) rc = rd_h5_write_u8(h5, "/leak/within", 1, dims, wi, st);
  if (rc == RD_OK) rc = rd_h5_write_f64(h5, "/leak/truth", 1, dims, w->row_truth, st);
  if (rc == RD_OK) rc = rd_h5_write_i32(h5, "/leak/cell", 1, dims, w->row_cell, st);
  free(ae), free(wi);
  return rc;
}

/* ---- load, check, run ------------------------------------------------------------------------------------ */

/* Every task's results are gathered on rank 0 in one message counted in int (rd_run_tasks): at most
 * INT32_MAX doubles, task lengths included. The results other than the replicates are bounded by their
 * sizes (per cell: pooled, holdout and entropy values, plus one metrics row per seed, at most one per
 * row; per control: a row per model, (model, series), (defense, model) or defense), and the chunk
 * headers (at most 16 per rank) by the margin under INT32_MAX, so the check does not depend on the
 * rank count. */
#define LEAK_MAX_RESULTS 2000000000.0

/* Refuses, before any replicate is drawn, a job whose bootstrap replicates (2 values per resample and
 * cell with a scored row) and null draws (1 per permutation and target cell) could not be gathered. */
static int leak_size_check(const leak_work *w, const rd_job *job, rd_status *st) {
  const leak_data *d = w->d;
  const leak_opts *o = w->o;
  int64_t nb = 0, nt = 0;
  for (int64_t c = 0; c < w->C; c++) {
    int scored = 0;
    for (int64_t j = w->cell_off[c]; j < w->cell_off[c + 1] && !scored; j++) {
      int64_t i = w->cell_rows[j];
      scored = d->status[i] == 0 && !isnan(w->row_truth[i]);
    }
    nb += scored;
    int64_t m, s, v;
    cell_parts(w, c, &m, &s, &v);
    for (int q = 0; q < d->n_family; q++) nt += d->family[q] == s;
  }
  if (d->n_family < 2 || o->null_permutations == 0) nt = 0;
  double boot = 2.0 * (double)nb * (double)o->bootstrap, null = (double)nt * (double)o->null_permutations;
  double other = (MT_N + 1.0) * (double)d->Q + (4.0 * MT_N + 8.0) * (double)w->C + 16.0 * (double)d->M +
                 12.0 * (double)d->R + 21.0 * (double)d->D + CTL_N + 2.0;
  if (boot + null + other <= LEAK_MAX_RESULTS) return RD_OK;
  return rd_fail(st, RD_EINPUT, "%s: \"%s\" = %lld is too large for this input: %lld resamples x %lld cells with scored "
                 "rows x 2 values + %lld permutations x %lld null target cells = %.0f replicate values, more than the "
                 "%.0f that can be gathered; use fewer resamples or permutations", job->where.path,
                 boot >= null ? "bootstrap" : "null_permutations",
                 (long long)(boot >= null ? o->bootstrap : o->null_permutations), (long long)o->bootstrap,
                 (long long)nb, (long long)o->null_permutations, (long long)nt, boot + null, LEAK_MAX_RESULTS);
}

/* Phases 1-2 (collective). Phase 1 (rank 0): layout, every value checked, option names resolved; then
 * broadcast. Phase 2 (every rank, identical): truth join, cells, the size of the replicates, bootstrap
 * rows, null tables. */
static int leak_load(const rd_ctx *ctx, const rd_job *job, const rd_jobfile *jf, leak_data *d, leak_work *w,
                     rd_status *st) {
  if (ctx->rank == 0) {
    hid_t f;
    if (rd_h5_open(job->input, MPI_COMM_NULL, &f, st) == RD_OK) {
      leak_layout L;
      memset(&L, 0, sizeof L);
      if (leak_check_layout(f, job, &L, st) == RD_OK) leak_read(f, job, &L, d, st);
      rd_h5_close(f);
    }
  }
  if (rd_share_status(ctx, st, 0) != RD_OK) return st->code;
  leak_share(ctx, d);
  rd_timing_mark(ctx->rank, job->name, "read+check+broadcast");

  const leak_opts *o = job->opts;
  w->file = job->input;
  w->group = job->group;
  w->o = o;
  w->d = d;
  w->tol_micro = llround(o->tolerance * 1e6);
  w->backend = ctx->backend;
  rd_stream sb, sn;
  rd_stream_init(&sb, jf->seed, job->name, "leak.bootstrap");
  rd_stream_init(&sn, jf->seed, job->name, "leak.null");
  if (build_truth(w, st) == RD_OK && build_cells(w, st) == RD_OK && leak_size_check(w, job, st) == RD_OK &&
      build_boot(w, &sb, st) == RD_OK)
    build_null(w, &sn, st);
  return rd_agree(ctx, st);
}

/* Every check the report would make on the input's values, without computing it. */
static int leak_check(const rd_ctx *ctx, const rd_job *job, const rd_jobfile *jf, rd_status *st) {
  leak_data d;
  leak_work w;
  memset(&d, 0, sizeof d);
  memset(&w, 0, sizeof w);
  leak_load(ctx, job, jf, &d, &w, st);
  work_free(&w);
  data_free(&d);
  return st->code;
}

static int leak_run(const rd_ctx *ctx, const rd_job *job, const rd_jobfile *jf, rd_run_out *out, rd_status *st) {
  const leak_opts *o = job->opts;
  leak_data d;
  memset(&d, 0, sizeof d);
  leak_work w;
  memset(&w, 0, sizeof w);
  double *cost = NULL, **res = NULL;
  int64_t *lens = NULL, n_tasks = 0;
  rd_progress prog;
  memset(&prog, 0, sizeof prog);

  /* Phases 1-2: the panel read and checked, shared; the derived tables everywhere. */
  if (leak_load(ctx, job, jf, &d, &w, st) != RD_OK) goto done;
  int64_t nch = 8 * (int64_t)ctx->size;
  w.n_boot_chunks = o->bootstrap > 0 ? cut_chunks(w.NB, w.boot_off, o->bootstrap, nch, &w.boot_bounds) : 0;
  w.n_null_chunks = cut_chunks(w.NT, w.null_off, o->null_permutations, nch, &w.null_bounds);
  if (w.n_boot_chunks < 0 || w.n_null_chunks < 0) rd_abort(ctx, __FILE__, __LINE__, "out of memory for chunks");
  rd_timing_mark(ctx->rank, job->name, "cells+tables");

  /* Phase 3: tasks over ranks (cells, controls, bootstrap chunks, null chunks). */
  n_tasks = w.C + CTL_N + w.n_boot_chunks + w.n_null_chunks;
  cost = malloc(sizeof(double) * (size_t)(n_tasks ? n_tasks : 1));
  if (!cost) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  for (int64_t c = 0; c < w.C; c++) cost[c] = 2e-8 * (double)(w.cell_off[c + 1] - w.cell_off[c]);
  cost[w.C + CTL_FICTIONAL] = 1e-8 * (double)d.Q;
  cost[w.C + CTL_RANKING] = 5e-8 * (double)d.R;
  cost[w.C + CTL_RESIDUAL] = 1e-8 * (double)d.G * (double)(d.M ? d.M : 1);
  cost[w.C + CTL_DEFENSE] = 5e-8 * (double)d.D;
  int64_t resampling = 0;
  int *owner = malloc(sizeof(int) * (size_t)(n_tasks ? n_tasks : 1));
  if (!owner) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  for (int64_t ch = 0; ch < w.n_boot_chunks; ch++) {
    double units = 0;
    for (int64_t k = w.boot_bounds[ch]; k < w.boot_bounds[ch + 1];) {
      int64_t b = k / o->bootstrap, end = (b + 1) * o->bootstrap;
      if (end > w.boot_bounds[ch + 1]) end = w.boot_bounds[ch + 1];
      units += (double)(end - k) * (double)(w.boot_off[b + 1] - w.boot_off[b] + 1);
      k = end;
    }
    cost[w.C + CTL_N + ch] = 1.2e-9 * units;
  }
  for (int64_t ch = 0; ch < w.n_null_chunks; ch++) {
    double units = 0;
    for (int64_t k = w.null_bounds[ch]; k < w.null_bounds[ch + 1];) {
      int64_t t = k / o->null_permutations, end = (t + 1) * o->null_permutations;
      if (end > w.null_bounds[ch + 1]) end = w.null_bounds[ch + 1];
      units += (double)(end - k) * (double)(w.null_off[t + 1] - w.null_off[t] + 1);
      k = end;
    }
    cost[w.C + CTL_N + w.n_boot_chunks + ch] = 0.6e-9 * units;
  }
  rd_assign_tasks(n_tasks, cost, ctx->size, owner);
  for (int64_t k = w.C + CTL_N; k < n_tasks; k++)
    if (owner[k] == ctx->rank) {
      int64_t ch = k - w.C - CTL_N;
      resampling += ch < w.n_boot_chunks ? w.boot_bounds[ch + 1] - w.boot_bounds[ch]
                                         : w.null_bounds[ch - w.n_boot_chunks + 1] - w.null_bounds[ch - w.n_boot_chunks];
    }
  free(owner);
  rd_progress_begin(&prog, ctx->quiet || resampling == 0 ? NULL : ctx->err, job->name, "bootstrap+null", resampling);
  w.prog = &prog;
  if (rd_run_tasks(ctx, n_tasks, cost, leak_task, &w, &res, &lens, st) == RD_OK && ctx->rank == 0) {
    rd_progress_end(&prog);
    rd_timing_mark(ctx->rank, job->name, "tasks");
    if (leak_report(ctx, job, &w, res, lens, &out->result, st) == RD_OK) leak_write_h5(out->h5, &w, st);
    rd_timing_mark(ctx->rank, job->name, "report+h5");
  }
  rd_share_status(ctx, st, 0);

done:
  if (res) rd_free_task_results(res, lens, n_tasks);
  free(cost);
  work_free(&w);
  data_free(&d);
  return st->code;
}

const rd_kind rd_kind_leakage = {
    .name = "leakage",
    .default_group = "/leak",
    .options = leak_options,
    .parse = leak_parse,
    .free_opts = leak_free_opts,
    .validate = leak_validate,
    .check = leak_check,
    .run = leak_run,
};
