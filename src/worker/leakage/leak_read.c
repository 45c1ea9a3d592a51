/* leakage: the input, read and checked on rank 0 (a few hundred thousand rows at most, so it is read
 * once) and broadcast. Checks follow docs/reference.md, 'leakage input layout': panel rows in row order
 * (and, within a row, model, series, variant, seed, month, status, value, entropy), then truth rows,
 * then the optional groups, so a message names the lowest bad row and its first problem. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "leak_internal.h"
#include "rmdiag/common/jsonutil.h"

const char *leak_name_of(const leak_data *d, int which, int64_t i) {
  const leak_names *n = &d->names[which];
  return (n->buf && i >= 0 && i < n->n) ? n->buf + n->off[i] : "?";
}

void leak_data_free(leak_data *d) {
  void *ptrs[] = {d->fictional, d->model, d->series, d->variant, d->seed, d->month, d->value, d->entropy, d->status,
                  d->t_series, d->t_month, d->t_value, d->r_model, d->r_series, d->r_a, d->r_b, d->r_pick,
                  d->g_model, d->g_month, d->g_signal, d->g_recall, d->d_defense, d->d_attack, d->d_model,
                  d->d_month, d->d_blocked};
  for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++) free(ptrs[i]);
  for (int i = 0; i < LEAK_NAMES_N; i++) {
    free(d->names[i].buf);
    free(d->names[i].off);
  }
  memset(d, 0, sizeof *d);
}

static int valid_month(int64_t m) { return m >= 100001 && m <= 999912 && m % 100 >= 1 && m % 100 <= 12; }

/* ---- reading datasets --------------------------------------------------------------------------- */

/* The lowest out-of-range element of an integer column and its value as the file holds it (at < 0:
 * none), for the row checks to report in row order. */
typedef struct leak_bad {
  int64_t at, val;
} leak_bad;

#define LEAK_NO_BAD {-1, 0}

/* Reads a whole 1-D integer dataset into int32; elements outside [lo, hi] become INT32_MIN and the
 * lowest one goes to *bad. */
static int read_i32(hid_t f, const char *file, const rd_dsinfo *info, int64_t lo, int64_t hi, int32_t **out,
                    leak_bad *bad, rd_status *st) {
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
    if (tmp[i] >= lo && tmp[i] <= hi) {
      (*out)[i] = (int32_t)tmp[i];
      continue;
    }
    if (bad->at < 0 || i < bad->at) *bad = (leak_bad){i, tmp[i]};
    (*out)[i] = INT32_MIN;
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

/* A list of names, which must be distinct. */
static int read_names(hid_t f, const char *file, const rd_dsinfo *info, leak_names *nm, rd_status *st) {
  size_t len;
  RD_TRY(rd_h5_read_strings(f, file, info, &nm->buf, &len, &nm->off, st));
  nm->n = info->dims[0];
  /* the first repeat, found by sorting (a pairwise check is quadratic in the names) */
  const char **names = malloc(sizeof(char *) * (size_t)(nm->n ? nm->n : 1));
  if (!names) return rd_fail(st, RD_EFAIL, "out of memory");
  for (int64_t i = 0; i < nm->n; i++) names[i] = nm->buf + nm->off[i];
  int64_t k = 0, i = rd_first_duplicate(names, nm->n, &k);
  free(names);
  if (i >= 0)
    return rd_fail(st, RD_EINPUT, "%s: %s[%lld] = \"%s\" repeats entry %lld; expected distinct names", file,
                   info->path, (long long)i, nm->buf + nm->off[i], (long long)k);
  return RD_OK;
}

static int64_t find_name(const leak_names *nm, const char *name) {
  for (int64_t i = 0; i < nm->n; i++)
    if (strcmp(nm->buf + nm->off[i], name) == 0) return i;
  return -1;
}

/* ---- the name lists and the fictional flags ------------------------------------------------------- */

static int read_name_lists(hid_t f, const rd_job *job, const leak_layout *L, leak_data *d, rd_status *st) {
  const char *file = job->input;
  const rd_dsinfo *ds = L->ds;
  RD_TRY(read_names(f, file, &ds[DS_MODEL_NAMES], &d->names[LEAK_NAMES_MODEL], st));
  RD_TRY(read_names(f, file, &ds[DS_SERIES_NAMES], &d->names[LEAK_NAMES_SERIES], st));
  RD_TRY(read_names(f, file, &ds[DS_VARIANT_NAMES], &d->names[LEAK_NAMES_VARIANT], st));
  d->M = d->names[LEAK_NAMES_MODEL].n;
  d->S = d->names[LEAK_NAMES_SERIES].n;
  d->V = d->names[LEAK_NAMES_VARIANT].n;
  d->has_fictional = L->has[DS_FICTIONAL];
  if (!d->has_fictional) {
    d->fictional = rd_calloc((size_t)(d->S ? d->S : 1), 1, st, "series_fictional");
    return d->fictional ? RD_OK : st->code;
  }
  d->fictional = rd_malloc((size_t)(d->S ? d->S : 1), st, "series_fictional");
  if (!d->fictional) return st->code;
  RD_TRY(rd_h5_read_flag_rows(f, file, &ds[DS_FICTIONAL], 0, d->S, d->fictional, st));
  /* the report lists fictional series only when the input has some */
  d->has_fictional = 0;
  for (int64_t s = 0; s < d->S; s++) d->has_fictional |= d->fictional[s];
  return RD_OK;
}

/* ---- panel rows ------------------------------------------------------------------------------------- */

enum { PB_MODEL, PB_SERIES, PB_VARIANT, PB_SEED, PB_MONTH, PB_N };

/* The integer columns (out-of-range values marked, see read_i32), values, status (255 outside 0..2)
 * and entropies. */
static int read_panel(hid_t f, const rd_job *job, const leak_layout *L, leak_data *d, leak_bad *bad, rd_status *st) {
  const char *file = job->input;
  const rd_dsinfo *ds = L->ds;
  d->Q = ds[DS_MODEL].dims[0];
  RD_TRY(read_i32(f, file, &ds[DS_MODEL], 0, d->M - 1, &d->model, &bad[PB_MODEL], st));
  RD_TRY(read_i32(f, file, &ds[DS_SERIES], 0, d->S - 1, &d->series, &bad[PB_SERIES], st));
  RD_TRY(read_i32(f, file, &ds[DS_VARIANT], 0, d->V - 1, &d->variant, &bad[PB_VARIANT], st));
  RD_TRY(read_i32(f, file, &ds[DS_SEED], INT32_MIN, INT32_MAX, &d->seed, &bad[PB_SEED], st));
  RD_TRY(read_i32(f, file, &ds[DS_MONTH], INT32_MIN, INT32_MAX, &d->month, &bad[PB_MONTH], st));
  RD_TRY(read_f64(f, file, &ds[DS_VALUE], &d->value, st));
  d->status = rd_malloc((size_t)(d->Q ? d->Q : 1), st, "status");
  int64_t *tmp = rd_malloc(sizeof(int64_t) * (size_t)(d->Q ? d->Q : 1), st, "status");
  if (!d->status || !tmp) {
    free(tmp);
    return st->code;
  }
  if (rd_h5_read_int_rows(f, file, &ds[DS_STATUS], 0, d->Q, tmp, st) != RD_OK) {
    free(tmp);
    return st->code;
  }
  for (int64_t i = 0; i < d->Q; i++) d->status[i] = (tmp[i] >= 0 && tmp[i] <= 2) ? (uint8_t)tmp[i] : 255;
  free(tmp);
  d->has_entropy = L->has[DS_ENTROPY];
  if (d->has_entropy) RD_TRY(read_f64(f, file, &ds[DS_ENTROPY], &d->entropy, st));
  return RD_OK;
}

/* The first problem of panel row i (the dataset's name, with what was expected in `detail`), or NULL.
 * Row i is the lowest row with a problem, so a marked column of row i is that column's lowest bad row
 * and bad[] holds its value. */
static const char *row_problem(const leak_data *d, const leak_bad *bad, int64_t i, char *detail, size_t n) {
  if (d->model[i] == INT32_MIN) {
    snprintf(detail, n, "an index into model_names (0..%lld), got %lld", (long long)d->M - 1,
             (long long)bad[PB_MODEL].val);
    return "model";
  }
  if (d->series[i] == INT32_MIN) {
    snprintf(detail, n, "an index into series_names (0..%lld), got %lld", (long long)d->S - 1,
             (long long)bad[PB_SERIES].val);
    return "series";
  }
  if (d->variant[i] == INT32_MIN) {
    snprintf(detail, n, "an index into variant_names (0..%lld), got %lld", (long long)d->V - 1,
             (long long)bad[PB_VARIANT].val);
    return "variant";
  }
  if (bad[PB_SEED].at == i) {
    snprintf(detail, n, "an int32 seed, got %lld", (long long)bad[PB_SEED].val);
    return "seed";
  }
  if (bad[PB_MONTH].at == i || !valid_month(d->month[i])) {
    snprintf(detail, n, "a month YYYYMM (MM 01-12), got %lld",
             bad[PB_MONTH].at == i ? (long long)bad[PB_MONTH].val : (long long)d->month[i]);
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

static int check_panel(const rd_job *job, const leak_data *d, const leak_bad *bad, rd_status *st) {
  for (int64_t i = 0; i < d->Q; i++) {
    char detail[200];
    const char *what = row_problem(d, bad, i, detail, sizeof detail);
    if (what)
      return rd_fail_at(st, RD_EINPUT, i, "%s: %s/%s: row %lld: expected %s", job->input, job->group, what,
                        (long long)i, detail);
  }
  return RD_OK;
}

/* ---- truth rows ------------------------------------------------------------------------------------- */

enum { TB_SERIES, TB_MONTH, TB_N };

static int truth_row_bad(const leak_data *d, const leak_bad *bad, int64_t j) {
  return d->t_series[j] == INT32_MIN || bad[TB_MONTH].at == j || !valid_month(d->t_month[j]) ||
         !isfinite(d->t_value[j]);
}

/* Among the truth rows before `tb`, the lowest that repeats an earlier row's (series, month). */
static int check_truth_repeats(const rd_job *job, const leak_data *d, int64_t tb, rd_status *st) {
  leak_kv *t = rd_malloc(sizeof(leak_kv) * (size_t)(tb ? tb : 1), st, "truth rows");
  if (!t) return st->code;
  for (int64_t j = 0; j < tb; j++) t[j] = (leak_kv){(int64_t)d->t_series[j] << 24 | d->t_month[j], j};
  rd_sort_key_idx(t, (size_t)tb);
  int64_t first = -1, again = -1;
  /* sorted by (key, row): a group's first two entries are its earliest row and the earliest repeat */
  for (int64_t j = 1; j < tb; j++)
    if (t[j].key == t[j - 1].key && (j == 1 || t[j - 2].key != t[j].key) && (again < 0 || t[j].idx < again)) {
      first = t[j - 1].idx;
      again = t[j].idx;
    }
  free(t);
  if (again < 0) return RD_OK;
  return rd_fail(st, RD_EINPUT, "%s: %s/truth_month: truth rows %lld and %lld are both for series \"%s\", month "
                 "%d; expected one truth value per (series, month)", job->input, job->group, (long long)first,
                 (long long)again, leak_name_of(d, LEAK_NAMES_SERIES, d->t_series[again]), d->t_month[again]);
}

/* The problem of truth row j, the lowest with a bad value. */
static int fail_truth_row(const rd_job *job, const leak_data *d, const leak_bad *bad, int64_t j, rd_status *st) {
  const char *file = job->input;
  if (d->t_series[j] == INT32_MIN)
    return rd_fail(st, RD_EINPUT, "%s: %s/truth_series: truth row %lld: expected an index into series_names "
                   "(0..%lld), got %lld", file, job->group, (long long)j, (long long)d->S - 1,
                   (long long)bad[TB_SERIES].val);
  if (bad[TB_MONTH].at == j || !valid_month(d->t_month[j]))
    return rd_fail(st, RD_EINPUT, "%s: %s/truth_month: truth row %lld: expected a month YYYYMM (MM 01-12), got %lld",
                   file, job->group, (long long)j,
                   bad[TB_MONTH].at == j ? (long long)bad[TB_MONTH].val : (long long)d->t_month[j]);
  return rd_fail(st, RD_EINPUT, "%s: %s/truth_value: truth row %lld (series \"%s\", month %d) is %g; expected a "
                 "finite value (a month without truth has no truth row)", file, job->group, (long long)j,
                 leak_name_of(d, LEAK_NAMES_SERIES, d->t_series[j]), d->t_month[j], d->t_value[j]);
}

/* The truth rows: a repeat before the first bad row is reported first, then that bad row. */
static int read_truth(hid_t f, const rd_job *job, const leak_layout *L, leak_data *d, rd_status *st) {
  const char *file = job->input;
  const rd_dsinfo *ds = L->ds;
  leak_bad bad[TB_N] = {LEAK_NO_BAD, LEAK_NO_BAD};
  d->T = ds[DS_T_SERIES].dims[0];
  RD_TRY(read_i32(f, file, &ds[DS_T_SERIES], 0, d->S - 1, &d->t_series, &bad[TB_SERIES], st));
  RD_TRY(read_i32(f, file, &ds[DS_T_MONTH], INT32_MIN, INT32_MAX, &d->t_month, &bad[TB_MONTH], st));
  RD_TRY(read_f64(f, file, &ds[DS_T_VALUE], &d->t_value, st));
  int64_t tb = d->T;
  for (int64_t j = 0; j < d->T && tb == d->T; j++)
    if (truth_row_bad(d, bad, j)) tb = j;
  RD_TRY(check_truth_repeats(job, d, tb, st));
  return tb < d->T ? fail_truth_row(job, d, bad, tb, st) : RD_OK;
}

/* ---- the optional groups ------------------------------------------------------------------------------ */

enum { RB_MODEL, RB_SERIES, RB_A, RB_B, RB_PICK, RB_N };

static int check_rank(const rd_job *job, const leak_data *d, const leak_bad *rb, rd_status *st) {
  const char *file = job->input;
  for (int64_t i = 0; i < d->R; i++) {
    const char *what = d->r_model[i] == INT32_MIN    ? "model (an index into model_names)"
                       : d->r_series[i] == INT32_MIN ? "series (an index into series_names)"
                                                     : NULL;
    if (what)
      return rd_fail(st, RD_EINPUT, "%s: %s/rank: row %lld: expected %s, got %lld", file, job->group, (long long)i,
                     what, (long long)(d->r_model[i] == INT32_MIN ? rb[RB_MODEL].val : rb[RB_SERIES].val));
    for (int k = RB_A; k <= RB_B; k++) {
      const int32_t *mo = k == RB_A ? d->r_a : d->r_b;
      if (rb[k].at == i || !valid_month(mo[i]))
        return rd_fail(st, RD_EINPUT, "%s: %s/rank: row %lld: expected %s (a month YYYYMM, MM 01-12), got %lld", file,
                       job->group, (long long)i, k == RB_A ? "month_a" : "month_b",
                       rb[k].at == i ? (long long)rb[k].val : (long long)mo[i]);
    }
    if (d->r_pick[i] == -2)
      return rd_fail(st, RD_EINPUT, "%s: %s/rank: row %lld: expected pick (0 = month_a, 1 = month_b, -1 = no pick), "
                     "got %lld", file, job->group, (long long)i, (long long)rb[RB_PICK].val);
  }
  return RD_OK;
}

static int read_rank(hid_t f, const rd_job *job, const leak_layout *L, leak_data *d, rd_status *st) {
  const char *file = job->input;
  const rd_dsinfo *ds = L->ds;
  leak_bad rb[RB_N] = {LEAK_NO_BAD, LEAK_NO_BAD, LEAK_NO_BAD, LEAK_NO_BAD, LEAK_NO_BAD};
  d->R = ds[DS_R_MODEL].dims[0];
  RD_TRY(read_i32(f, file, &ds[DS_R_MODEL], 0, d->M - 1, &d->r_model, &rb[RB_MODEL], st));
  RD_TRY(read_i32(f, file, &ds[DS_R_SERIES], 0, d->S - 1, &d->r_series, &rb[RB_SERIES], st));
  RD_TRY(read_i32(f, file, &ds[DS_R_A], INT32_MIN, INT32_MAX, &d->r_a, &rb[RB_A], st));
  RD_TRY(read_i32(f, file, &ds[DS_R_B], INT32_MIN, INT32_MAX, &d->r_b, &rb[RB_B], st));
  int32_t *pk = NULL;
  RD_TRY(read_i32(f, file, &ds[DS_R_PICK], -1, 1, &pk, &rb[RB_PICK], st));
  d->r_pick = rd_malloc((size_t)(d->R ? d->R : 1), st, "rank/pick");
  if (!d->r_pick) {
    free(pk);
    return st->code;
  }
  for (int64_t i = 0; i < d->R; i++) d->r_pick[i] = (int8_t)(pk[i] == INT32_MIN ? -2 : pk[i]);
  free(pk);
  return check_rank(job, d, rb, st);
}

static int read_signal(hid_t f, const rd_job *job, const leak_layout *L, leak_data *d, rd_status *st) {
  const char *file = job->input;
  const rd_dsinfo *ds = L->ds;
  leak_bad gb[2] = {LEAK_NO_BAD, LEAK_NO_BAD};
  d->G = ds[DS_G_MODEL].dims[0];
  RD_TRY(read_i32(f, file, &ds[DS_G_MODEL], 0, d->M - 1, &d->g_model, &gb[0], st));
  RD_TRY(read_i32(f, file, &ds[DS_G_MONTH], INT32_MIN, INT32_MAX, &d->g_month, &gb[1], st));
  RD_TRY(read_f64(f, file, &ds[DS_G_SIGNAL], &d->g_signal, st));
  RD_TRY(read_f64(f, file, &ds[DS_G_RECALL], &d->g_recall, st));
  for (int64_t i = 0; i < d->G; i++) {
    if (d->g_model[i] == INT32_MIN)
      return rd_fail(st, RD_EINPUT, "%s: %s/signal: row %lld: expected model (an index into model_names), got %lld",
                     file, job->group, (long long)i, (long long)gb[0].val);
    if (gb[1].at == i || !valid_month(d->g_month[i]))
      return rd_fail(st, RD_EINPUT, "%s: %s/signal: row %lld: expected month (a month YYYYMM, MM 01-12), got %lld",
                     file, job->group, (long long)i, gb[1].at == i ? (long long)gb[1].val : (long long)d->g_month[i]);
    const char *what = isinf(d->g_signal[i])   ? "signal (a finite value, or NaN when the reply gave none)"
                       : isinf(d->g_recall[i]) ? "recall (a finite value, or NaN when none)"
                                               : NULL;
    if (what)
      return rd_fail(st, RD_EINPUT, "%s: %s/signal: row %lld: expected %s", file, job->group, (long long)i, what);
  }
  return RD_OK;
}

static int read_defense(hid_t f, const rd_job *job, const leak_layout *L, leak_data *d, rd_status *st) {
  const char *file = job->input;
  const rd_dsinfo *ds = L->ds;
  RD_TRY(read_names(f, file, &ds[DS_D_NAMES], &d->names[LEAK_NAMES_DEFENSE], st));
  RD_TRY(read_names(f, file, &ds[DS_A_NAMES], &d->names[LEAK_NAMES_ATTACK], st));
  d->ND = d->names[LEAK_NAMES_DEFENSE].n;
  d->NA = d->names[LEAK_NAMES_ATTACK].n;
  d->D = ds[DS_D_DEFENSE].dims[0];
  leak_bad db[4] = {LEAK_NO_BAD, LEAK_NO_BAD, LEAK_NO_BAD, LEAK_NO_BAD};
  RD_TRY(read_i32(f, file, &ds[DS_D_DEFENSE], 0, d->ND - 1, &d->d_defense, &db[0], st));
  RD_TRY(read_i32(f, file, &ds[DS_D_ATTACK], 0, d->NA - 1, &d->d_attack, &db[1], st));
  RD_TRY(read_i32(f, file, &ds[DS_D_MODEL], 0, d->M - 1, &d->d_model, &db[2], st));
  RD_TRY(read_i32(f, file, &ds[DS_D_MONTH], INT32_MIN, INT32_MAX, &d->d_month, &db[3], st));
  d->d_blocked = rd_malloc((size_t)(d->D ? d->D : 1), st, "defense/blocked");
  if (!d->d_blocked) return st->code;
  RD_TRY(rd_h5_read_flag_rows(f, file, &ds[DS_D_BLOCKED], 0, d->D, d->d_blocked, st));
  static const char *const what[4] = {"defense (an index into defense_names)", "attack (an index into attack_names)",
                                      "model (an index into model_names)", "month (a month YYYYMM, MM 01-12)"};
  for (int64_t i = 0; i < d->D; i++) {
    int k = d->d_defense[i] == INT32_MIN ? 0
            : d->d_attack[i] == INT32_MIN ? 1
            : d->d_model[i] == INT32_MIN  ? 2
            : (db[3].at == i || !valid_month(d->d_month[i])) ? 3
                                                             : -1;
    if (k >= 0)
      return rd_fail(st, RD_EINPUT, "%s: %s/defense: row %lld: expected %s, got %lld", file, job->group, (long long)i,
                     what[k], k == 3 && db[3].at != i ? (long long)d->d_month[i] : (long long)db[k].val);
  }
  return RD_OK;
}

/* ---- options that name series or attacks ---------------------------------------------------------------- */

static int resolve_options(const rd_job *job, leak_data *d, rd_status *st) {
  const leak_opts *o = job->opts;
  const leak_names *series = &d->names[LEAK_NAMES_SERIES];
  d->n_family = o->n_family;
  for (int k = 0; k < o->n_family; k++) {
    int64_t s = find_name(series, o->family[k]);
    if (s < 0)
      return rd_fail(st, RD_EINPUT, "%s: \"family\" names series \"%s\", which is not in %s/series_names of %s",
                     job->where.path, o->family[k], job->group, job->input);
    d->family[k] = (int32_t)s;
  }
  d->signal_series = -1;
  if (d->has_signal) {
    int64_t s = find_name(series, o->signal_series);
    if (s < 0)
      return rd_fail(st, RD_EINPUT, "%s: \"signal_series\" = \"%s\" (the truth of the residualisation) is not in "
                     "%s/series_names of %s", job->where.path, o->signal_series, job->group, job->input);
    d->signal_series = (int32_t)s;
  }
  d->benign_attack = d->has_defense ? (int32_t)find_name(&d->names[LEAK_NAMES_ATTACK], o->benign_attack) : -1;
  return RD_OK;
}

int leak_read(hid_t f, const rd_job *job, const leak_layout *L, leak_data *d, rd_status *st) {
  leak_bad bad[PB_N] = {LEAK_NO_BAD, LEAK_NO_BAD, LEAK_NO_BAD, LEAK_NO_BAD, LEAK_NO_BAD};
  RD_TRY(read_name_lists(f, job, L, d, st));
  RD_TRY(read_panel(f, job, L, d, bad, st));
  RD_TRY(check_panel(job, d, bad, st));
  RD_TRY(read_truth(f, job, L, d, st));
  d->has_rank = L->has_rank;
  d->has_signal = L->has_signal;
  d->has_defense = L->has_defense;
  if (d->has_rank) RD_TRY(read_rank(f, job, L, d, st));
  if (d->has_signal) RD_TRY(read_signal(f, job, L, d, st));
  if (d->has_defense) RD_TRY(read_defense(f, job, L, d, st));
  return resolve_options(job, d, st);
}

/* ---- broadcast ------------------------------------------------------------------------------------------ */

/* Rank 0's array of `nb` bytes to every rank (allocated on the others); returns this rank's copy. */
static void *share_array(const rd_ctx *ctx, void *ptr, size_t nb) {
  if (ctx->rank != 0) ptr = malloc(nb ? nb : 1);
  if (!ptr) rd_abort(ctx, __FILE__, __LINE__, "out of memory for the panel");
  rd_bcast_bytes(ctx, ptr, nb, 0);
  return ptr;
}

static void share_sizes(const rd_ctx *ctx, leak_data *d) {
  int64_t head[18] = {d->M, d->S, d->V, d->Q, d->T, d->R, d->G, d->D, d->ND, d->NA, d->has_fictional,
                      d->has_entropy, d->has_rank, d->has_signal, d->has_defense, d->n_family, d->signal_series,
                      d->benign_attack};
  rd_bcast_bytes(ctx, head, sizeof head, 0);
  rd_bcast_bytes(ctx, d->family, sizeof d->family, 0);
  if (ctx->rank == 0) return;
  d->M = head[0], d->S = head[1], d->V = head[2], d->Q = head[3], d->T = head[4], d->R = head[5];
  d->G = head[6], d->D = head[7], d->ND = head[8], d->NA = head[9];
  d->has_fictional = (int)head[10], d->has_entropy = (int)head[11], d->has_rank = (int)head[12];
  d->has_signal = (int)head[13], d->has_defense = (int)head[14], d->n_family = (int32_t)head[15];
  d->signal_series = (int32_t)head[16], d->benign_attack = (int32_t)head[17];
}

#define SHARE(ptr, count) ((ptr) = share_array(ctx, (ptr), sizeof *(ptr) * (size_t)(count)))

void leak_share(const rd_ctx *ctx, leak_data *d) {
  share_sizes(ctx, d);
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
}

#undef SHARE
