/* numleak: the leakage input layout written (see docs/reference.md, 'leakage input layout'): chunked,
 * compressed 1-D datasets in a fixed order (the file's bytes depend on it). */
#include <stdlib.h>
#include <string.h>

#include "numleak_internal.h"
#include "rmdiag/common/h5out.h"

static int write_1d(hid_t f, const char *path, hid_t ftype, hid_t mtype, int64_t n, const void *data, rd_status *st) {
  int64_t dims[1] = {n};
  return rd_h5_write_chunked(f, path, 1, dims, ftype, mtype, data, st);
}

/* Variable-length UTF-8 strings, chunked like the numbers (NULL is written as ""). */
static int write_strings(hid_t f, const char *path, int64_t n, const char *const *s, rd_status *st) {
  hid_t t = H5Tcopy(H5T_C_S1);
  H5Tset_size(t, H5T_VARIABLE);
  H5Tset_cset(t, H5T_CSET_UTF8);
  const char **v = malloc(sizeof *v * (size_t)(n ? n : 1));
  if (!v) {
    H5Tclose(t);
    return rd_fail(st, RD_EFAIL, "out of memory");
  }
  for (int64_t i = 0; i < n; i++) v[i] = s[i] ? s[i] : "";
  int rc = write_1d(f, path, t, t, n, v, st);
  free(v);
  H5Tclose(t);
  return rc;
}

static int write_names(hid_t f, const char *path, const names *nm, rd_status *st) {
  int64_t n = nl_name_count(nm);
  const char **v = malloc(sizeof *v * (size_t)(n ? n : 1));
  if (!v) return rd_fail(st, RD_EFAIL, "out of memory");
  for (int64_t i = 0; i < n; i++) v[i] = nl_name_str(nm, i);
  int rc = write_strings(f, path, n, v, st);
  free(v);
  return rc;
}

#define I32 H5T_STD_I32LE, H5T_NATIVE_INT32
#define F64 H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE
#define U8 H5T_STD_U8LE, H5T_NATIVE_UINT8
#define I8 H5T_STD_I8LE, H5T_NATIVE_INT8
#define I64 H5T_STD_I64LE, H5T_NATIVE_INT64

/* GROUP/name */
typedef struct out_path {
  const char *group;
  char buf[600];
} out_path;

static const char *at(out_path *p, const char *name) {
  snprintf(p->buf, sizeof p->buf, "%s/%s", strcmp(p->group, "/") ? p->group : "", name);
  return p->buf;
}

/* The names, the cells' columns and where each row came from. */
static int write_cells(nl_state *S, hid_t f, out_path *P, rd_status *st) {
  int64_t NS = nl_name_count(&S->series);
  RD_TRY(write_names(f, at(P, "model_names"), &S->models, st));
  RD_TRY(write_names(f, at(P, "series_names"), &S->series, st));
  RD_TRY(write_names(f, at(P, "variant_names"), &S->variants, st));
  RD_TRY(write_1d(f, at(P, "series_fictional"), U8, NS, S->fictional, st));
  const rows *c = &S->cells;
  RD_TRY(write_1d(f, at(P, "model"), I32, c->n, c->model, st));
  RD_TRY(write_1d(f, at(P, "series"), I32, c->n, c->series, st));
  RD_TRY(write_1d(f, at(P, "variant"), I32, c->n, c->variant, st));
  RD_TRY(write_1d(f, at(P, "seed"), I32, c->n, c->seed, st));
  RD_TRY(write_1d(f, at(P, "month"), I32, c->n, c->month, st));
  RD_TRY(write_1d(f, at(P, "value"), F64, c->n, c->value, st));
  RD_TRY(write_1d(f, at(P, "status"), U8, c->n, c->status, st));
  if (S->has_entropy) RD_TRY(write_1d(f, at(P, "entropy_bits"), F64, c->n, c->entropy, st));
  if (S->o.keep_replies) RD_TRY(write_strings(f, at(P, "reply"), c->n, (const char *const *)c->reply, st));
  RD_TRY(write_1d(f, at(P, "row_source"), I32, c->n, c->source, st));
  RD_TRY(write_1d(f, at(P, "row_line"), I64, c->n, c->line, st));
  const char **src = malloc(sizeof *src * (size_t)S->o.n_panels);
  if (!src) return rd_fail(st, RD_EFAIL, "out of memory");
  for (int i = 0; i < S->o.n_panels; i++) src[i] = S->o.panels[i].file;
  int rc = write_strings(f, at(P, "source_names"), S->o.n_panels, src, st);
  free(src);
  return rc;
}

static int write_truth(hid_t f, out_path *P, const truth_table *T, rd_status *st) {
  RD_TRY(write_1d(f, at(P, "truth_series"), I32, T->n, T->series, st));
  RD_TRY(write_1d(f, at(P, "truth_month"), I32, T->n, T->month, st));
  return write_1d(f, at(P, "truth_value"), F64, T->n, T->value, st);
}

static int write_rank(nl_state *S, hid_t f, out_path *P, rd_status *st) {
  const rows *r = &S->rank;
  RD_TRY(write_1d(f, at(P, "rank/model"), I32, r->n, r->model, st));
  RD_TRY(write_1d(f, at(P, "rank/series"), I32, r->n, r->series, st));
  RD_TRY(write_1d(f, at(P, "rank/month_a"), I32, r->n, r->month, st));
  RD_TRY(write_1d(f, at(P, "rank/month_b"), I32, r->n, r->month_b, st));
  RD_TRY(write_1d(f, at(P, "rank/pick"), I8, r->n, r->pick, st));
  if (S->o.keep_replies) RD_TRY(write_strings(f, at(P, "rank/reply"), r->n, (const char *const *)r->reply, st));
  return RD_OK;
}

static int write_signal(nl_state *S, hid_t f, out_path *P, rd_status *st) {
  const rows *r = &S->signal;
  RD_TRY(write_1d(f, at(P, "signal/model"), I32, r->n, r->model, st));
  RD_TRY(write_1d(f, at(P, "signal/month"), I32, r->n, r->month, st));
  RD_TRY(write_1d(f, at(P, "signal/signal"), F64, r->n, r->value, st));
  RD_TRY(write_1d(f, at(P, "signal/recall"), F64, r->n, r->recall, st));
  if (S->o.keep_replies) RD_TRY(write_strings(f, at(P, "signal/reply"), r->n, (const char *const *)r->reply, st));
  return RD_OK;
}

static int write_defense(nl_state *S, hid_t f, out_path *P, rd_status *st) {
  const rows *r = &S->defense;
  uint8_t *blocked = malloc((size_t)r->n);
  if (!blocked) return rd_fail(st, RD_EFAIL, "out of memory");
  for (int64_t i = 0; i < r->n; i++) blocked[i] = r->status[i] != 0;
  int rc = write_1d(f, at(P, "defense/blocked"), U8, r->n, blocked, st);
  free(blocked);
  RD_TRY(rc);
  RD_TRY(write_1d(f, at(P, "defense/defense"), I32, r->n, r->defense, st));
  RD_TRY(write_1d(f, at(P, "defense/attack"), I32, r->n, r->attack, st));
  RD_TRY(write_1d(f, at(P, "defense/model"), I32, r->n, r->model, st));
  RD_TRY(write_1d(f, at(P, "defense/month"), I32, r->n, r->month, st));
  RD_TRY(write_names(f, at(P, "defense/defense_names"), &S->defenses, st));
  RD_TRY(write_names(f, at(P, "defense/attack_names"), &S->attacks, st));
  if (S->o.keep_replies) RD_TRY(write_strings(f, at(P, "defense/reply"), r->n, (const char *const *)r->reply, st));
  return RD_OK;
}

int nl_write_all(nl_state *S, hid_t f, const truth_table *T, rd_status *st) {
  out_path P = {.group = S->o.group};
  if (nl_series_slot(S, nl_name_count(&S->series)) != 0) return rd_fail(st, RD_EFAIL, "out of memory");
  if (nl_name_count(&S->variants) == 0 && nl_name_id(&S->variants, "default") < 0)
    return rd_fail(st, RD_EFAIL, "out of memory");
  RD_TRY(write_cells(S, f, &P, st));
  RD_TRY(write_truth(f, &P, T, st));
  if (S->rank.n > 0) RD_TRY(write_rank(S, f, &P, st));
  if (S->signal.n > 0) RD_TRY(write_signal(S, f, &P, st));
  if (S->defense.n > 0) RD_TRY(write_defense(S, f, &P, st));
  return RD_OK;
}
