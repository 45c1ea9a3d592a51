/* benchmark: rank 0 reads and checks the small tables (names, per-item tables or per-subset
 * accuracies, the Ties subset's item ids), item by item so the first message names the lowest
 * offending item. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_internal.h"
#include "rmdiag/common/idmap.h"

/* ---- names ----------------------------------------------------------------------------------- */

/* Reads a 1-D string dataset of n entries into the packed names (appending), checking uniqueness. */
static int read_names(hid_t f, const char *file, const rd_dsinfo *ds, const char *what, char **buf, size_t *len,
                      int64_t *off, rd_status *st) {
  char *sbuf = NULL;
  size_t slen = 0;
  int64_t *soff = NULL;
  RD_TRY(rd_h5_read_strings(f, file, ds, &sbuf, &slen, &soff, st));
  int64_t n = ds->dims[0];
  rd_idmap m;
  int rc = rd_idmap_init(&m, (size_t)n + 16) == 0 ? RD_OK : rd_fail(st, RD_EFAIL, "out of memory");
  char *nb = rc == RD_OK ? realloc(*buf, *len + slen + 1) : NULL;
  if (rc == RD_OK && !nb) rc = rd_fail(st, RD_EFAIL, "out of memory");
  if (nb) *buf = nb;
  for (int64_t i = 0; rc == RD_OK && i < n; i++) {
    const char *s = sbuf + soff[i];
    int is_new = 0;
    int64_t id = rd_idmap_get(&m, s, strlen(s), &is_new);
    if (id < 0) {
      rc = rd_fail(st, RD_EFAIL, "out of memory");
    } else if (!is_new) {
      int64_t first = 0;
      for (; first < i; first++)
        if (strcmp(sbuf + soff[first], s) == 0) break;
      rc = rd_fail(st, RD_EINPUT, "%s: %s[%lld] = \"%s\" repeats %s[%lld]; %s must be unique", file, ds->path,
                   (long long)i, s, ds->path, (long long)first, what);
    } else if (!s[0]) {
      rc = rd_fail(st, RD_EINPUT, "%s: %s[%lld] is empty; expected a name", file, ds->path, (long long)i);
    } else {
      off[i] = (int64_t)*len;
      size_t l = strlen(s) + 1;
      memcpy(*buf + *len, s, l);
      *len += l;
    }
  }
  rd_idmap_free(&m);
  free(sbuf);
  free(soff);
  return rc;
}

int bench_read_names(hid_t f, const rd_job *job, const bench_layout *L, bench_plan *p, rd_status *st) {
  bench_dims *d = &p->d;
  p->name_off = malloc(sizeof(int64_t) * (size_t)(d->S + d->M));
  if (!p->name_off) return rd_fail(st, RD_EFAIL, "out of memory");
  size_t nlen = 0;
  RD_TRY(read_names(f, job->input, &L->subset_names, "subset names", &p->names, &nlen, p->name_off, st));
  RD_TRY(read_names(f, job->input, &L->model_names, "model names", &p->names, &nlen, p->name_off + d->S, st));
  d->names_len = (int64_t)nlen;
  return RD_OK;
}

/* ---- per-item tables ---------------------------------------------------------------------------- */

/* Offsets start at 0, increase (every item has a completion) and end at C; every item names a
 * subset. `sub` holds item_subset as read. */
static int check_offsets(const char *file, const bench_layout *L, const int64_t *sub, bench_plan *p, rd_status *st) {
  const bench_dims *d = &p->d;
  const char *opath = L->item_offset.path;
  if (p->item_offset[0] != 0)
    return rd_fail(st, RD_EINPUT, "%s: %s[0] = %lld, expected 0 (item 0 starts at completion 0)", file, opath,
                   (long long)p->item_offset[0]);
  for (int64_t i = 0; i < d->I; i++) {
    if (sub[i] < 0 || sub[i] >= d->S)
      return rd_fail(st, RD_EINPUT, "%s: %s[%lld] = %lld (item %lld) is not a subset: expected an index into %s "
                     "(0..%lld)", file, L->item_subset.path, (long long)i, (long long)sub[i], (long long)i,
                     L->subset_names.path, (long long)(d->S - 1));
    if (p->item_offset[i + 1] <= p->item_offset[i])
      return rd_fail(st, RD_EINPUT, "%s: %s[%lld] = %lld is not greater than %s[%lld] = %lld: item %lld has no "
                     "completions (offsets must increase)", file, opath, (long long)(i + 1),
                     (long long)p->item_offset[i + 1], opath, (long long)i, (long long)p->item_offset[i], (long long)i);
    p->item_subset[i] = (int32_t)sub[i];
  }
  if (p->item_offset[d->I] != d->C)
    return rd_fail(st, RD_EINPUT, "%s: %s[%lld] = %lld, expected C = %lld (the columns of %s)", file, opath,
                   (long long)d->I, (long long)p->item_offset[d->I], (long long)d->C, L->scores.path);
  return RD_OK;
}

/* Every item has at least one preferred and one rejected completion. `nc` holds item_n_correct. */
static int check_n_correct(const char *file, const bench_layout *L, const int64_t *nc, bench_plan *p, rd_status *st) {
  for (int64_t i = 0; i < p->d.I; i++) {
    int64_t n = p->item_offset[i + 1] - p->item_offset[i];
    if (nc[i] < 1)
      return rd_fail(st, RD_EINPUT, "%s: %s[%lld] = %lld (item %lld): expected at least one preferred completion",
                     file, L->n_correct.path, (long long)i, (long long)nc[i], (long long)i);
    if (nc[i] >= n)
      return rd_fail(st, RD_EINPUT, "%s: %s[%lld] = %lld but item %lld has %lld completion%s: it has no rejected "
                     "completion (expected fewer preferred than completions)", file, L->n_correct.path, (long long)i,
                     (long long)nc[i], (long long)i, (long long)n, n == 1 ? "" : "s");
    p->n_correct[i] = (int32_t)nc[i];
  }
  return RD_OK;
}

/* The items of each subset, in item order: subset_n, subset_first and subset_items. */
static int group_by_subset(bench_plan *p, rd_status *st) {
  const bench_dims *d = &p->d;
  for (int64_t i = 0; i < d->I; i++) p->subset_n[p->item_subset[i]]++;
  for (int64_t s = 0; s < d->S; s++) p->subset_first[s + 1] = p->subset_first[s] + p->subset_n[s];
  int64_t *fill = malloc(sizeof(int64_t) * (size_t)d->S);
  if (!fill) return rd_fail(st, RD_EFAIL, "out of memory");
  memcpy(fill, p->subset_first, sizeof(int64_t) * (size_t)d->S);
  for (int64_t i = 0; i < d->I; i++) p->subset_items[fill[p->item_subset[i]]++] = i;
  free(fill);
  return RD_OK;
}

int bench_read_items(hid_t f, const rd_job *job, const bench_layout *L, bench_plan *p, rd_status *st) {
  const char *file = job->input;
  int64_t I = p->d.I;
  int64_t *tmp = malloc(sizeof(int64_t) * (size_t)(I + 1));
  p->item_subset = malloc(sizeof(int32_t) * (size_t)I);
  p->item_offset = malloc(sizeof(int64_t) * (size_t)(I + 1));
  p->n_correct = malloc(sizeof(int32_t) * (size_t)I);
  p->subset_items = malloc(sizeof(int64_t) * (size_t)I);
  if (!tmp || !p->item_subset || !p->item_offset || !p->n_correct || !p->subset_items) {
    free(tmp);
    return rd_fail(st, RD_EFAIL, "out of memory");
  }
  int rc = rd_h5_read_int_rows(f, file, &L->item_offset, 0, I + 1, p->item_offset, st);
  if (rc == RD_OK) rc = rd_h5_read_int_rows(f, file, &L->item_subset, 0, I, tmp, st);
  if (rc == RD_OK) rc = check_offsets(file, L, tmp, p, st);
  if (rc == RD_OK) rc = rd_h5_read_int_rows(f, file, &L->n_correct, 0, I, tmp, st);
  if (rc == RD_OK) rc = check_n_correct(file, L, tmp, p, st);
  free(tmp);
  RD_TRY(rc);
  return group_by_subset(p, st);
}

/* ---- per-subset accuracies ------------------------------------------------------------------------ */

int bench_read_accuracies(hid_t f, const rd_job *job, const bench_layout *L, bench_plan *p, bench_root *r,
                          rd_status *st) {
  const bench_dims *d = &p->d;
  r->acc = malloc(sizeof(double) * (size_t)(d->M * d->S));
  if (!r->acc) return rd_fail(st, RD_EFAIL, "out of memory");
  RD_TRY(rd_h5_read_float_rows(f, job->input, &L->accuracy, 0, d->M, RD_F64, r->acc, st));
  /* NaN = the model has no value for that subset; a subset is present when some model has one */
  for (int64_t m = 0; m < d->M; m++)
    for (int64_t s = 0; s < d->S; s++) {
      double v = r->acc[m * d->S + s];
      if (isnan(v)) continue;
      if (!(v >= -0.01 && v <= 1.01))
        return rd_fail(st, RD_EINPUT, "%s: %s[%lld, %lld] = %g (model \"%s\", subset \"%s\"): expected a fraction in "
                       "[0, 1] ([-0.01, 1.01] for a Ties composite) or NaN for a missing subset", job->input,
                       L->accuracy.path, (long long)m, (long long)s, v, bench_model_name(p, m),
                       bench_subset_name(p, s));
      p->subset_n[s] = 1;
    }
  return RD_OK;
}

/* ---- the Ties subset's prompts ----------------------------------------------------------------- */

/* "ref:<n>" / "tied:<n>" (n a decimal integer, optionally signed): kind 0 = ref, 1 = tied. */
static int parse_ties_id(const char *id, int *kind, int64_t *number) {
  const char *rest;
  if (strncmp(id, "ref:", 4) == 0) {
    *kind = 0;
    rest = id + 4;
  } else if (strncmp(id, "tied:", 5) == 0) {
    *kind = 1;
    rest = id + 5;
  } else {
    return 0;
  }
  const char *q = rest;
  if (*q == '-' || *q == '+') q++;
  if (!*q) return 0;
  for (const char *c = q; *c; c++)
    if (*c < '0' || *c > '9') return 0;
  if (strlen(q) > 18) return 0;
  *number = strtoll(rest, NULL, 10);
  return 1;
}

typedef struct ties_row {
  int64_t number, item;
  int kind;
} ties_row;

static int cmp_ties_row(const void *a, const void *b) {
  const ties_row *x = a, *y = b;
  if (x->number != y->number) return x->number < y->number ? -1 : 1;
  if (x->kind != y->kind) return x->kind - y->kind;
  return (x->item > y->item) - (x->item < y->item);
}

/* The Ties subset's rows parsed from their ids and sorted by (number, kind, item); no (kind,
 * number) twice (the lowest item index that repeats one is named). */
static int ties_rows(const char *file, const rd_dsinfo *ids, const char *sbuf, const int64_t *soff,
                     const bench_plan *p, int64_t ts, ties_row *rows, rd_status *st) {
  int64_t n = p->subset_n[ts];
  for (int64_t t = 0; t < n; t++) {
    int64_t i = p->subset_items[p->subset_first[ts] + t];
    const char *id = sbuf + soff[i];
    if (!parse_ties_id(id, &rows[t].kind, &rows[t].number))
      return rd_fail(st, RD_EINPUT, "%s: %s[%lld] = \"%s\" (item %lld, subset \"%s\"): expected \"ref:<n>\" or "
                     "\"tied:<n>\" with an integer prompt number n", file, ids->path, (long long)i, id, (long long)i,
                     bench_subset_name(p, ts));
    rows[t].item = i;
  }
  qsort(rows, (size_t)n, sizeof *rows, cmp_ties_row);
  int64_t dup = -1, dup_of = -1;
  for (int64_t t = 1; t < n; t++)
    if (rows[t].number == rows[t - 1].number && rows[t].kind == rows[t - 1].kind && (dup < 0 || rows[t].item < dup)) {
      dup = rows[t].item;
      dup_of = rows[t - 1].item;
    }
  if (dup >= 0)
    return rd_fail(st, RD_EINPUT, "%s: %s[%lld] = \"%s\" repeats item %lld of subset \"%s\"; each Ties id must appear "
                   "once", file, ids->path, (long long)dup, sbuf + soff[dup], (long long)dup_of,
                   bench_subset_name(p, ts));
  return RD_OK;
}

/* Prompts in ascending number, each with its ref and tied item (-1 when absent), from sorted rows. */
static int ties_group(const ties_row *rows, int64_t n, bench_plan *p, rd_status *st) {
  int64_t P = 0;
  for (int64_t t = 0; t < n; t++)
    if (t == 0 || rows[t].number != rows[t - 1].number) P++;
  p->prompt_ref = malloc(sizeof(int64_t) * (size_t)(P ? P : 1));
  p->prompt_tied = malloc(sizeof(int64_t) * (size_t)(P ? P : 1));
  p->prompt_number = malloc(sizeof(int64_t) * (size_t)(P ? P : 1));
  if (!p->prompt_ref || !p->prompt_tied || !p->prompt_number) return rd_fail(st, RD_EFAIL, "out of memory");
  int64_t q = -1;
  for (int64_t t = 0; t < n; t++) {
    if (t == 0 || rows[t].number != rows[t - 1].number) {
      q++;
      p->prompt_ref[q] = p->prompt_tied[q] = -1;
      p->prompt_number[q] = rows[t].number;
    }
    if (rows[t].kind == 0) p->prompt_ref[q] = rows[t].item;
    else p->prompt_tied[q] = rows[t].item;
  }
  p->d.n_prompts = P;
  return RD_OK;
}

int bench_read_ties(hid_t f, const rd_job *job, const rd_dsinfo *ids, bench_plan *p, rd_status *st) {
  const char *file = job->input;
  int64_t ts = p->d.ties_subset, n = p->subset_n[ts];
  if (!ids) {
    char path[600];
    rd_h5_path(path, sizeof path, job->group, "item_id");
    return rd_fail(st, RD_EINPUT, "%s: subset \"%s\" is scored with the Ties composite, which needs item ids "
                   "\"ref:<n>\" / \"tied:<n>\", but dataset %s is missing", file, bench_subset_name(p, ts), path);
  }
  char *sbuf = NULL;
  size_t slen = 0;
  int64_t *soff = NULL;
  RD_TRY(rd_h5_read_strings(f, file, ids, &sbuf, &slen, &soff, st));
  ties_row *rows = malloc(sizeof *rows * (size_t)(n ? n : 1));
  int rc = rows ? RD_OK : rd_fail(st, RD_EFAIL, "out of memory");
  if (rc == RD_OK) rc = ties_rows(file, ids, sbuf, soff, p, ts, rows, st);
  if (rc == RD_OK) rc = ties_group(rows, n, p, st);
  free(rows);
  free(sbuf);
  free(soff);
  return rc;
}
