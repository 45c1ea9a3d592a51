/* leakage: the tables of the factor-shuffle null, built alike on every rank: per (model, variant), the
 * mean parsed estimate of every series and month; per target cell (a cell whose series is in the
 * family), the months with a scored row and, per sibling series, whether it has an estimate that month
 * and whether that estimate is within tolerance of the target's truth. The draws themselves are the
 * backend's (rd_leak_kernels.null_draws). See docs/reference.md, 'Factor-shuffle null'. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "leak_internal.h"

/* The key of an estimate: ((model, variant, series), month). */
static int64_t est_key(const leak_data *d, int64_t m, int64_t v, int64_t s, int64_t month) {
  return (((m * d->V + v) * d->S + s) << 24) | month;
}

/* The mean parsed estimate of every ((model, variant, series), month): keys sorted (for the siblings'
 * look-ups), n of them. */
typedef struct leak_estimates {
  int64_t *keys;
  double *mean;
  int64_t n;
} leak_estimates;

/* Sums in row order. */
static int mean_estimates(const leak_work *w, leak_estimates *e, rd_status *st) {
  const leak_data *d = w->d;
  int64_t np = 0;
  for (int64_t i = 0; i < d->Q; i++) np += d->status[i] == 0;
  leak_kv *k = malloc(sizeof(leak_kv) * (size_t)(np ? np : 1));
  int64_t *ekeys = malloc(sizeof(int64_t) * (size_t)(np ? np : 1));
  double *emean = malloc(sizeof(double) * (size_t)(np ? np : 1));
  if (!k || !ekeys || !emean) {
    free(k), free(ekeys), free(emean);
    return rd_fail(st, RD_EFAIL, "out of memory for the null");
  }
  np = 0;
  for (int64_t i = 0; i < d->Q; i++)
    if (d->status[i] == 0) k[np++] = (leak_kv){est_key(d, d->model[i], d->variant[i], d->series[i], d->month[i]), i};
  rd_sort_key_idx(k, (size_t)np);
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
  *e = (leak_estimates){ekeys, emean, ne};
  return RD_OK;
}

static int cmp_i32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

/* The distinct months of cell c's scored rows, ascending. Returns their number. */
static int64_t target_months(const leak_work *w, int64_t c, int32_t *months) {
  const leak_data *d = w->d;
  int64_t nm = 0;
  for (int64_t j = w->cell_off[c]; j < w->cell_off[c + 1]; j++) {
    int64_t i = w->cell_rows[j];
    if (leak_scored(w, i)) months[nm++] = d->month[i];
  }
  qsort(months, (size_t)nm, sizeof *months, cmp_i32);
  int64_t nd = 0;
  for (int64_t a = 0; a < nm; a++)
    if (a == 0 || months[a] != months[a - 1]) months[nd++] = months[a];
  return nd;
}

/* The estimates of a target cell's siblings (bit j: the j-th family series other than the target's),
 * per month: which exist (avail) and which are within tolerance of the target's truth (hit). */
static void sibling_masks(const leak_work *w, const leak_estimates *e, int64_t c, int fi, const int32_t *months,
                          int64_t nd, uint32_t *avail, uint32_t *hit) {
  const leak_data *d = w->d;
  int64_t m, s, v;
  leak_cell_parts(w, c, &m, &s, &v);
  for (int64_t a = 0; a < nd; a++) {
    double t = leak_truth_at(w, s, months[a]);
    uint32_t am = 0, hm = 0;
    for (int q = 0, j = 0; q < d->n_family; q++) {
      if (q == fi) continue;
      int64_t k = leak_find_key(e->keys, e->n, est_key(d, m, v, d->family[q], months[a]));
      if (k >= 0) {
        am |= 1u << j;
        if (leak_within_tol(w, e->mean[k], t)) hm |= 1u << j;
      }
      j++;
    }
    avail[a] = am;
    hit[a] = hm;
  }
}

/* The family index of cell c's series, or -1 when the cell is not a target. */
static int family_index(const leak_work *w, int64_t c) {
  int64_t m, s, v;
  leak_cell_parts(w, c, &m, &s, &v);
  int fi = -1;
  for (int q = 0; q < w->d->n_family; q++)
    if (w->d->family[q] == s) fi = q;
  return fi;
}

/* Every target's months and masks, appended to w->null_avail / null_hit. */
static int build_targets(leak_work *w, const leak_estimates *e, rd_status *st) {
  int64_t total_months = 0;
  int32_t *months = malloc(sizeof(int32_t) * (size_t)(w->d->Q ? w->d->Q : 1));
  if (!months) return rd_fail(st, RD_EFAIL, "out of memory for the null");
  int rc = RD_OK;
  for (int64_t c = 0; c < w->C; c++) {
    int fi = family_index(w, c);
    if (fi < 0) continue;
    int64_t nd = target_months(w, c, months);
    uint32_t *nav = realloc(w->null_avail, sizeof(uint32_t) * (size_t)(total_months + nd + 1));
    if (nav) w->null_avail = nav;
    uint32_t *nht = realloc(w->null_hit, sizeof(uint32_t) * (size_t)(total_months + nd + 1));
    if (nht) w->null_hit = nht;
    if (!nav || !nht) {
      rc = rd_fail(st, RD_EFAIL, "out of memory for the null");
      break;
    }
    sibling_masks(w, e, c, fi, months, nd, w->null_avail + total_months, w->null_hit + total_months);
    total_months += nd;
    w->null_cell[w->NT] = c;
    w->null_id[w->NT] = (uint64_t)c;
    w->null_off[++w->NT] = total_months;
  }
  free(months);
  return rc;
}

int leak_build_null(leak_work *w, const rd_stream *stream, rd_status *st) {
  int F = w->d->n_family;
  w->null_cell = malloc(sizeof(int64_t) * (size_t)(w->C ? w->C : 1));
  w->null_off = malloc(sizeof(int64_t) * (size_t)(w->C + 1));
  w->null_id = malloc(sizeof(uint64_t) * (size_t)(w->C ? w->C : 1));
  if (!w->null_cell || !w->null_off || !w->null_id) return rd_fail(st, RD_EFAIL, "out of memory for the null");
  w->null_off[0] = 0;
  w->NT = 0;
  if (F < 2 || w->o->null_permutations == 0) return RD_OK;
  leak_estimates e = {NULL, NULL, 0};
  RD_TRY(mean_estimates(w, &e, st));
  int rc = build_targets(w, &e, st);
  free(e.keys);
  free(e.mean);
  w->null = (rd_leak_null){.n_targets = w->NT, .P = w->o->null_permutations, .n_sib = (uint32_t)(F - 1),
                           .month_off = w->null_off, .avail = w->null_avail, .hit = w->null_hit,
                           .target_id = w->null_id, .stream = *stream};
  return rc;
}
