/* leakage for readers: the cells and every control that ran as tables, the warnings, and the figures of
 * `rmdiag report` (estimate against truth per cell from the output .h5, the four-metric signature, selectivity
 * against the null, holdout, defenses, entropy). See docs/reference.md, 'Reading reports'. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "leak_internal.h"

/* Below this parse rate r, MAE and within describe the minority of replies that gave a number. */
#define LEAK_LOW_PARSE 0.5
/* Scatter points per report drawn as they are; beyond, every cell is binned. */
#define LEAK_MAX_POINTS 20000
#define LEAK_SCATTER_BINS 40

static void cell_label(const cJSON *c, char *buf, size_t n) {
  const char *var = rd_jstr(cJSON_GetObjectItem(c, "variant"));
  snprintf(buf, n, "%s / %s%s%s", rd_jstr(cJSON_GetObjectItem(c, "model")), rd_jstr(cJSON_GetObjectItem(c, "series")),
           strcmp(var, "default") ? " / " : "", strcmp(var, "default") ? var : "");
}

/* Lists the cells matching `pick` into one warning. */
static void warn_cells(cJSON *w, const cJSON *cells, int (*pick)(const cJSON *), const char *what) {
  char list[900], msg[1200];
  size_t k = 0;
  int n = 0;
  list[0] = '\0';
  for (const cJSON *c = cells ? cells->child : NULL; c; c = c->next) {
    if (!pick(c)) continue;
    char lab[300];
    cell_label(c, lab, sizeof lab);
    if (k < sizeof list - 320) k += (size_t)snprintf(list + k, sizeof list - k, "%s%s", n ? "; " : "", lab);
    else if (k < sizeof list - 8) k += (size_t)snprintf(list + k, sizeof list - k, "; ...");
    n++;
  }
  if (!n) return;
  snprintf(msg, sizeof msg, "%d cell%s %s: %s", n, n == 1 ? "" : "s", what, list);
  cJSON_AddItemToArray(w, cJSON_CreateString(msg));
}

static int null_zero(const cJSON *c) { return rd_jnum(cJSON_GetObjectItem(c, "null_within")) == 0; }
static int low_parse(const cJSON *c) { return rd_jnum(cJSON_GetObjectItem(c, "parse_rate")) < LEAK_LOW_PARSE; }

cJSON *leak_warnings(const cJSON *r) {
  cJSON *w = cJSON_CreateArray();
  const cJSON *cells = cJSON_GetObjectItem(r, "cells");
  warn_cells(w, cells, null_zero,
             "with a null rate of 0 (no shuffled sibling was ever within tolerance): selectivity is undefined, not "
             "infinite");
  warn_cells(w, cells, low_parse,
             "with a parse rate below 0.5: r, MAE and within describe the minority of replies that gave a number");
  return w;
}

/* ---- tables ----------------------------------------------------------------------------------------------- */

static const rd_jcol cell_cols[] = {
    {"model", "model", RD_COL_TEXT, 0, NULL, NULL, 0, 0},
    {"series", "series", RD_COL_TEXT, 0, NULL, NULL, 0, 0},
    {"variant", "variant", RD_COL_TEXT, 0, NULL, NULL, 0, 0},
    {"n_rows", "n", RD_COL_INT, 0, NULL, NULL, 0, 0},
    {"n_parsed", "parsed", RD_COL_INT, 0, NULL, NULL, 1, 0},
    {"parse_rate", "parse", RD_COL_INTERVAL, 3, "parse_rate_wilson95", "no counted row", 0, 1},
    {"n_no_truth", "no truth", RD_COL_INT, 0, NULL, NULL, 1, 0},
    {"n_scored", "scored", RD_COL_INT, 0, NULL, NULL, 0, 0},
    {"r", "r", RD_COL_INTERVAL, 3, "r_ci95", "fewer than 3 scored rows, or no spread", 0, 1},
    {"mae", "MAE", RD_COL_INTERVAL, 3, "mae_ci95", "no scored row", 0, 1},
    {"within", "within", RD_COL_INTERVAL, 3, "within_wilson95", "no scored row", 0, 1},
    {"n_within", "n within", RD_COL_INT, 0, NULL, NULL, 1, 0},
    {"sign_acc", "sign", RD_COL_INTERVAL, 3, "sign_wilson95", "no row to compare signs", 0, 1},
    {"n_sign", "n sign", RD_COL_INT, 0, NULL, NULL, 1, 0},
    {"slope", "slope", RD_COL_NUM, 4, NULL, NULL, 1, 0},
    {"intercept", "intercept", RD_COL_NUM, 4, NULL, NULL, 1, 0},
    {"r_bootstrap_dropped", "r dropped", RD_COL_INT, 0, NULL, NULL, 1, 0},
    {"null_within", "null", RD_COL_NUM, 3, NULL, "no null (family needs 2+ series, null_permutations > 0)", 0, 0},
    {"selectivity", "select", RD_COL_NUM, 2, NULL,
     "null rate 0 (undefined, see warnings) or no null: selectivity = within / null", 0, 0},
    {"null_draws_used", "null draws", RD_COL_INT, 0, NULL, NULL, 1, 0},
    {"n_entropy", "n entropy", RD_COL_INT, 0, NULL, NULL, 1, 0},
    {"entropy_mean", "entropy", RD_COL_NUM, 3, NULL, NULL, 1, 0},
    {"entropy_median", "entropy median", RD_COL_NUM, 3, NULL, NULL, 1, 0},
    {NULL, NULL, 0, 0, NULL, NULL, 0, 0},
};

static const rd_jcol holdout_cols[] = {
    {"model", "model", RD_COL_TEXT, 0, NULL, NULL, 0, 0},
    {"series", "series", RD_COL_TEXT, 0, NULL, NULL, 0, 0},
    {"variant", "variant", RD_COL_TEXT, 0, NULL, NULL, 0, 0},
    {"before.n_rows", "n before", RD_COL_INT, 0, NULL, NULL, 0, 0},
    {"before.n_parsed", "parsed before", RD_COL_INT, 0, NULL, NULL, 1, 0},
    {"before.parse_rate", "parse before", RD_COL_NUM, 3, NULL, NULL, 1, 0},
    {"before.n_scored", "scored before", RD_COL_INT, 0, NULL, NULL, 1, 0},
    {"before.r", "r before", RD_COL_NUM, 3, NULL, "fewer than 3 scored rows, or no spread", 0, 0},
    {"before.mae", "MAE before", RD_COL_NUM, 3, NULL, "no scored row", 0, 0},
    {"before.within", "within before", RD_COL_NUM, 3, NULL, "no scored row", 0, 0},
    {"from.n_rows", "n from", RD_COL_INT, 0, NULL, NULL, 0, 0},
    {"from.n_parsed", "parsed from", RD_COL_INT, 0, NULL, NULL, 1, 0},
    {"from.parse_rate", "parse from", RD_COL_NUM, 3, NULL, NULL, 1, 0},
    {"from.n_scored", "scored from", RD_COL_INT, 0, NULL, NULL, 1, 0},
    {"from.r", "r from", RD_COL_NUM, 3, NULL, "fewer than 3 scored rows, or no spread", 0, 0},
    {"from.mae", "MAE from", RD_COL_NUM, 3, NULL, "no scored row", 0, 0},
    {"from.within", "within from", RD_COL_NUM, 3, NULL, "no scored row", 0, 0},
    {NULL, NULL, 0, 0, NULL, NULL, 0, 0},
};

static const rd_jcol fictional_cols[] = {
    {"model", "model", RD_COL_TEXT, 0, NULL, NULL, 0, 0},
    {"n_rows", "n", RD_COL_INT, 0, NULL, NULL, 0, 0},
    {"n_parsed", "numbers", RD_COL_INT, 0, NULL, NULL, 0, 0},
    {"parse_rate", "rate [Wilson 95%]", RD_COL_INTERVAL, 3, "parse_rate_wilson95", "no counted row", 0, 0},
    {"n_entropy", "n entropy", RD_COL_INT, 0, NULL, NULL, 1, 0},
    {"entropy_mean", "entropy", RD_COL_NUM, 3, NULL, "no entropy_bits in the input", 0, 0},
    {"entropy_median", "entropy median", RD_COL_NUM, 3, NULL, NULL, 1, 0},
    {NULL, NULL, 0, 0, NULL, NULL, 0, 0},
};

static const rd_jcol ranking_cols[] = {
    {"model", "model", RD_COL_TEXT, 0, NULL, NULL, 0, 0},
    {"series", "series", RD_COL_TEXT, 0, NULL, NULL, 0, 0},
    {"n_rows", "n", RD_COL_INT, 0, NULL, NULL, 0, 0},
    {"n_picked", "picked", RD_COL_INT, 0, NULL, NULL, 0, 0},
    {"parse_rate", "pick rate", RD_COL_NUM, 3, NULL, NULL, 1, 0},
    {"n_scored", "scored", RD_COL_INT, 0, NULL, NULL, 0, 0},
    {"n_correct", "correct", RD_COL_INT, 0, NULL, NULL, 0, 0},
    {"accuracy", "accuracy [Wilson 95%]", RD_COL_INTERVAL, 3, "accuracy_wilson95", "no scored pick", 0, 0},
    {"n_tie", "ties", RD_COL_INT, 0, NULL, NULL, 0, 0},
    {"n_no_truth", "no truth", RD_COL_INT, 0, NULL, NULL, 0, 0},
    {NULL, NULL, 0, 0, NULL, NULL, 0, 0},
};

static const rd_jcol residual_cols[] = {
    {"model", "model", RD_COL_TEXT, 0, NULL, NULL, 0, 0},
    {"n", "n", RD_COL_INT, 0, NULL, NULL, 0, 0},
    {"gamma", "gamma", RD_COL_NUM, 4, NULL, "the recalled values have no variance", 0, 0},
    {"r_signal_truth", "r(signal, truth)", RD_COL_NUM, 3, NULL, "fewer than 3 rows, or no spread", 0, 0},
    {"r_residual_truth", "r(residual, truth)", RD_COL_NUM, 3, NULL, "fewer than 3 rows, or no spread", 0, 0},
    {"leak_share", "leak share", RD_COL_NUM, 3, NULL, "r(signal, truth) is 0 or undefined", 0, 0},
    {"r_signal_recall", "r(signal, recall)", RD_COL_NUM, 3, NULL, "fewer than 3 rows, or no spread", 0, 0},
    {NULL, NULL, 0, 0, NULL, NULL, 0, 0},
};

static const rd_jcol defense_cols[] = {
    {"defense", "defense", RD_COL_TEXT, 0, NULL, NULL, 0, 0},
    {"model", "model", RD_COL_TEXT, 0, NULL, NULL, 0, 0},
    {"n", "n", RD_COL_INT, 0, NULL, NULL, 0, 0},
    {"blocked", "blocked", RD_COL_INT, 0, NULL, NULL, 1, 0},
    {"blocked_fraction", "blocked [Wilson 95%]", RD_COL_INTERVAL, 3, "blocked_wilson95", "no attack row", 0, 0},
    {"n_months", "months", RD_COL_INT, 0, NULL, NULL, 0, 0},
    {"n_months_leaked", "leaked months", RD_COL_INT, 0, NULL, NULL, 0, 0},
    {"worst_case_leaked_fraction", "worst case", RD_COL_NUM, 3, NULL, "no attack row", 0, 0},
    {"n_benign", "benign", RD_COL_INT, 0, NULL, NULL, 1, 0},
    {"n_benign_parsed", "benign answered", RD_COL_INT, 0, NULL, NULL, 1, 0},
    {"benign_parse_rate", "benign answered", RD_COL_NUM, 3, NULL, "no benign row", 0, 0},
    {NULL, NULL, 0, 0, NULL, NULL, 0, 0},
};

static void leak_tables(rd_view *v, const cJSON *report, const cJSON *r) {
  const cJSON *o = rd_jget(report, "rmdiag.options");
  char legend[600];
  snprintf(legend, sizeof legend, "n: rows counted (status not 2); parse: share that gave a number; scored: parsed "
           "rows with a truth; r, MAE, within (|est - truth| %s %g, %s), sign: over scored rows; null: within rate of "
           "shuffled sibling series; select = within / null; intervals (rmdiag table): bootstrap for r and MAE, Wilson "
           "for rates", strcmp(rd_jstr(cJSON_GetObjectItem(o, "tolerance_rule")), "lt") ? "<=" : "<",
           rd_jnum(cJSON_GetObjectItem(o, "tolerance")), rd_jstr(cJSON_GetObjectItem(o, "tolerance_compare")));
  rd_table *t = rd_view_json_table(v, "cells", "Cells", legend, cJSON_GetObjectItem(r, "cells"), cell_cols);
  t->in_summary = 1;
  /* per seed: the cell's keys plus the seed, one row per (cell, seed) */
  cJSON *rows = cJSON_CreateArray();
  const cJSON *cells = cJSON_GetObjectItem(r, "cells");
  for (const cJSON *c = cells ? cells->child : NULL; c; c = c->next)
    for (const cJSON *s = cJSON_GetObjectItem(c, "per_seed") ? cJSON_GetObjectItem(c, "per_seed")->child : NULL; s;
         s = s->next) {
      cJSON *x = cJSON_Duplicate(s, 1);
      cJSON_AddStringToObject(x, "model", rd_jstr(cJSON_GetObjectItem(c, "model")));
      cJSON_AddStringToObject(x, "series", rd_jstr(cJSON_GetObjectItem(c, "series")));
      cJSON_AddStringToObject(x, "variant", rd_jstr(cJSON_GetObjectItem(c, "variant")));
      cJSON_AddItemToArray(rows, x);
    }
  rd_jcol seed_cols[sizeof cell_cols / sizeof cell_cols[0] + 1];
  int k = 0;
  for (const rd_jcol *c = cell_cols; c->key; c++) {
    if (strncmp(c->key, "null", 4) == 0 || strcmp(c->key, "selectivity") == 0 || strstr(c->key, "entropy") ||
        strcmp(c->key, "r_bootstrap_dropped") == 0)
      continue;
    seed_cols[k] = *c;
    if (k == 3) {  /* the seed after the cell's names */
      seed_cols[k + 1] = seed_cols[k];
      seed_cols[k] = (rd_jcol){"seed", "seed", RD_COL_INT, 0, NULL, NULL, 0, 0};
      k++;
    }
    if (strcmp(c->key, "r") == 0 || strcmp(c->key, "mae") == 0) seed_cols[k].type = RD_COL_NUM;
    k++;
  }
  seed_cols[k] = (rd_jcol){NULL, NULL, 0, 0, NULL, NULL, 0, 0};
  rd_view_json_table(v, "per_seed", "Cells per seed", "the cell metrics over one seed's rows (no bootstrap intervals)",
                     rows, seed_cols);
  cJSON_Delete(rows);
  if (cJSON_GetObjectItem(r, "holdout")) {
    char lg[200];
    snprintf(lg, sizeof lg, "before: rows with month < %.0f; from: the others (a model that leaks recalls the months "
             "before its cutoff better)", rd_jnum(cJSON_GetObjectItem(r, "holdout_from")));
    rd_view_json_table(v, "holdout", "Holdout", lg, cJSON_GetObjectItem(r, "holdout"), holdout_cols)->in_summary = 1;
  }
  if (cJSON_GetObjectItem(r, "fictional"))
    rd_view_json_table(v, "fictional", "Fictional series (control)",
                       "replies about series that do not exist: a model that gives numbers is fabricating; entropy: "
                       "mean bits of the first two tokens", cJSON_GetObjectItem(r, "fictional"), fictional_cols)
        ->in_summary = 1;
  if (cJSON_GetObjectItem(r, "ranking"))
    rd_view_json_table(v, "ranking", "Ranking of two months",
                       "picks of the month with the larger value; ties: truths within 1e-9; no truth: a month without a "
                       "truth", cJSON_GetObjectItem(r, "ranking"), ranking_cols)->in_summary = 1;
  if (cJSON_GetObjectItem(r, "residualisation")) {
    char lg[200];
    snprintf(lg, sizeof lg, "signal regressed on the recalled value; leak share = 1 - r(residual, truth)^2 / r(signal, "
             "truth)^2; truth of %s", rd_jstr(cJSON_GetObjectItem(r, "signal_series")));
    rd_view_json_table(v, "residualisation", "Residualisation", lg, cJSON_GetObjectItem(r, "residualisation"),
                       residual_cols)->in_summary = 1;
  }
  if (cJSON_GetObjectItem(r, "defense")) {
    char lg[240];
    snprintf(lg, sizeof lg, "attack rows (not \"%s\") blocked by each system-prompt defense; worst case: share of months "
             "where some attack got a number", rd_jstr(cJSON_GetObjectItem(r, "benign_attack")));
    rd_view_json_table(v, "defense", "Defenses", lg, cJSON_GetObjectItem(r, "defense"), defense_cols)->in_summary = 1;
    rd_jcol pooled[sizeof defense_cols / sizeof defense_cols[0]];
    int k2 = 0;
    for (const rd_jcol *c = defense_cols; c->key; c++)
      if (strcmp(c->key, "model") && strncmp(c->key, "n_benign", 8) && strcmp(c->key, "benign_parse_rate")) pooled[k2++] = *c;
    pooled[k2] = (rd_jcol){NULL, NULL, 0, 0, NULL, NULL, 0, 0};
    rd_view_json_table(v, "defense_pooled", "Defenses, all models", "the same sums over every model (months counted "
                       "per model and month)", cJSON_GetObjectItem(r, "defense_pooled"), pooled);
  }
}

/* ---- figures ---------------------------------------------------------------------------------------------- */

/* Estimate against truth for every scored row of every cell (binned when there are many). */
static int figure_scatter(rd_view *v, const cJSON *r, double tol, const char *h5, rd_status *st) {
  int64_t Q, n2, n3;
  double *est = rd_view_column(h5, "/leak/estimate", &Q, st);
  double *truth = est ? rd_view_column(h5, "/leak/truth", &n2, st) : NULL;
  double *cell = truth ? rd_view_column(h5, "/leak/cell", &n3, st) : NULL;
  if (cell && (n2 != Q || n3 != Q)) rd_fail(st, RD_EINPUT, "%s: /leak/estimate, /leak/truth and /leak/cell differ in length", h5);
  const cJSON *cells = cJSON_GetObjectItem(r, "cells");
  int64_t C = cJSON_GetArraySize(cells), scored = 0;
  char **labels = st->code == RD_OK ? calloc((size_t)(C ? C : 1), sizeof(char *)) : NULL;
  if (labels) {
    int64_t c = 0;
    for (const cJSON *e = cells->child; e; e = e->next, c++) {
      char lab[300];
      cell_label(e, lab, sizeof lab);
      labels[c] = strdup(lab);
    }
    for (int64_t i = 0; i < Q; i++) scored += isfinite(est[i]) && isfinite(truth[i]) && cell[i] >= 0 && cell[i] < C;
    cJSON *vals = cJSON_CreateArray();
    int binned = scored > LEAK_MAX_POINTS;
    for (int64_t c2 = 0; c2 < C; c2++) {
      double lo = INFINITY, hi = -INFINITY;
      for (int64_t i = 0; binned && i < Q; i++)
        if ((int64_t)cell[i] == c2 && isfinite(est[i]) && isfinite(truth[i])) {
          lo = fmin(lo, fmin(est[i], truth[i]));
          hi = fmax(hi, fmax(est[i], truth[i]));
        }
      int64_t *cnt = binned ? calloc(LEAK_SCATTER_BINS * LEAK_SCATTER_BINS, sizeof(int64_t)) : NULL;
      double w = hi > lo ? (hi - lo) / LEAK_SCATTER_BINS : 1.0;
      for (int64_t i = 0; i < Q; i++) {
        if ((int64_t)cell[i] != c2 || !isfinite(est[i]) || !isfinite(truth[i])) continue;
        if (binned && cnt) {
          int bx = (int)fmin(LEAK_SCATTER_BINS - 1, floor((truth[i] - lo) / w));
          int by = (int)fmin(LEAK_SCATTER_BINS - 1, floor((est[i] - lo) / w));
          cnt[by * LEAK_SCATTER_BINS + bx]++;
          continue;
        }
        cJSON *o = cJSON_CreateObject();
        rd_view_put(o, "k", (double)c2);
        rd_view_put(o, "truth", truth[i]);
        rd_view_put(o, "est", est[i]);
        cJSON_AddItemToArray(vals, o);
      }
      for (int k = 0; cnt && k < LEAK_SCATTER_BINS * LEAK_SCATTER_BINS; k++) {
        if (!cnt[k]) continue;
        double t = lo + w * (k % LEAK_SCATTER_BINS + 0.5), e = lo + w * (k / LEAK_SCATTER_BINS + 0.5);
        cJSON *o = cJSON_CreateObject();
        rd_view_put(o, "k", (double)c2);
        rd_view_put(o, "truth", t);
        rd_view_put(o, "est", e);
        rd_view_put(o, "n", (double)cnt[k]);
        cJSON_AddItemToArray(vals, o);
      }
      free(cnt);
    }
    cJSON *spec = rd_json_sq(
        "{'transform': [{'lookup': 'k', 'from': {'data': {'values': []}, 'key': 'k', 'fields': ['cell']}}, "
        "{'calculate': 'datum.truth - TOL', 'as': 'lo'}, {'calculate': 'datum.truth + TOL', 'as': 'hi'}], "
        "'facet': {'field': 'cell', 'type': 'nominal', 'sort': {'field': 'k', 'op': 'min'}, 'title': null}, "
        "'columns': 3,"
        "'resolve': {'scale': {'x': 'independent', 'y': 'independent'}},"
        "'spec': {'width': 200, 'height': 200, 'layer': ["
        "{'mark': {'type': 'area', 'opacity': 0.18, 'color': '#2ca02c'}, 'encoding': {'x': {'field': 'truth', "
        "'type': 'quantitative', 'title': 'truth'}, 'y': {'field': 'lo', 'type': 'quantitative', 'title': "
        "'estimate'}, 'y2': {'field': 'hi'}}},"
        "{'mark': {'type': 'line', 'color': '#d62728', 'strokeDash': [4, 3]}, 'encoding': {'x': {'field': 'truth', "
        "'type': 'quantitative'}, 'y': {'field': 'truth', 'type': 'quantitative'}}},"
        "{'mark': {'type': 'circle', 'opacity': 0.6, 'size': 18, 'tooltip': true}, 'encoding': {'x': {'field': 'truth', "
        "'type': 'quantitative'}, 'y': {'field': 'est', 'type': 'quantitative'}, 'size': {'field': 'n', 'type': "
        "'quantitative', 'legend': null, 'scale': {'range': [12, 200]}}}}]}}");
    /* per datum only the cell's index, truth, estimate (and count): the labels and the band are joined and
     * computed in the page, which keeps it small */
    cJSON *tr = cJSON_GetObjectItem(spec, "transform");
    cJSON *names = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetArrayItem(tr, 0), "from"),
                                                           "data"), "values");
    for (int64_t c3 = 0; c3 < C; c3++) {
      cJSON *o = cJSON_CreateObject();
      rd_view_put(o, "k", (double)c3);
      cJSON_AddStringToObject(o, "cell", labels[c3]);
      cJSON_AddItemToArray(names, o);
    }
    char expr[2][96];
    snprintf(expr[0], sizeof expr[0], "datum.truth - %.17g", tol);
    snprintf(expr[1], sizeof expr[1], "datum.truth + %.17g", tol);
    for (int k2 = 0; k2 < 2; k2++) cJSON_SetValuestring(cJSON_GetObjectItem(cJSON_GetArrayItem(tr, 1 + k2), "calculate"),
                                                        expr[k2]);
    if (!binned) {  /* one reply per circle: a fixed size */
      cJSON *layers = cJSON_GetObjectItem(cJSON_GetObjectItem(spec, "spec"), "layer");
      cJSON_DeleteItemFromObject(cJSON_GetObjectItem(cJSON_GetArrayItem(layers, 2), "encoding"), "size");
    }
    char cap[700];
    snprintf(cap, sizeof cap, "Each scored reply's estimate against the truth of its month, one panel per cell (model / "
             "series); the dashed line is estimate = truth and the green band the tolerance (+-%g) that counts as "
             "within. %s", tol, binned ? "Many rows: each panel is binned into 40 x 40 cells, circle size = replies." :
             "One circle per reply.");
    rd_view_figure(v, "estimate_vs_truth", "Estimate against truth", cap, rd_view_values(spec, vals));
    for (int64_t c2 = 0; c2 < C; c2++) free(labels[c2]);
    free(labels);
  }
  free(est), free(truth), free(cell);
  return st->code;
}

static void add_metric(cJSON *vals, const char *cell, const char *metric, const cJSON *x, const cJSON *ci) {
  if (!cJSON_IsNumber(x)) return;
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "cell", cell);
  cJSON_AddStringToObject(o, "metric", metric);
  rd_view_put(o, "value", rd_jnum(x));
  rd_view_put(o, "lo", cJSON_IsArray(ci) ? rd_jnum(cJSON_GetArrayItem(ci, 0)) : rd_jnum(x));
  rd_view_put(o, "hi", cJSON_IsArray(ci) ? rd_jnum(cJSON_GetArrayItem(ci, 1)) : rd_jnum(x));
  cJSON_AddItemToArray(vals, o);
}

static void figure_signature(rd_view *v, const cJSON *r) {
  cJSON *vals = cJSON_CreateArray();
  const cJSON *cells = cJSON_GetObjectItem(r, "cells");
  for (const cJSON *c = cells ? cells->child : NULL; c; c = c->next) {
    char lab[300];
    cell_label(c, lab, sizeof lab);
    add_metric(vals, lab, "1 parse rate", cJSON_GetObjectItem(c, "parse_rate"), cJSON_GetObjectItem(c, "parse_rate_wilson95"));
    add_metric(vals, lab, "2 r", cJSON_GetObjectItem(c, "r"), cJSON_GetObjectItem(c, "r_ci95"));
    add_metric(vals, lab, "3 within", cJSON_GetObjectItem(c, "within"), cJSON_GetObjectItem(c, "within_wilson95"));
    add_metric(vals, lab, "4 sign", cJSON_GetObjectItem(c, "sign_acc"), cJSON_GetObjectItem(c, "sign_wilson95"));
  }
  cJSON *spec = rd_json_sq(
      "{'facet': {'column': {'field': 'metric', 'type': 'nominal', 'title': null}}, "
      "'spec': {'width': 160, 'encoding': {'y': {'field': 'cell', 'type': 'nominal', 'sort': null, 'title': null}}, "
      "'layer': [{'mark': 'rule', 'encoding': {'x': {'field': 'lo', 'type': 'quantitative', 'title': null, "
      "'scale': {'domain': [-1, 1]}}, 'x2': {'field': 'hi'}}}, {'mark': {'type': 'point', 'filled': true, "
      "'tooltip': true}, 'encoding': {'x': {'field': 'value', 'type': 'quantitative'}}}]}}");
  rd_view_figure(v, "signature", "Signature of each cell",
                 "The four numbers that tell recall from guessing, per cell (model / series): parse rate, Pearson r, "
                 "share within tolerance and sign agreement, with 95% intervals (Wilson; bootstrap for r). A model that "
                 "recalls is high on all four; a guesser has a high parse rate only.",
                 rd_view_values(spec, vals));
}

static void figure_null(rd_view *v, const cJSON *r) {
  cJSON *vals = cJSON_CreateArray();
  const cJSON *cells = cJSON_GetObjectItem(r, "cells");
  int any = 0;
  for (const cJSON *c = cells ? cells->child : NULL; c; c = c->next) {
    const cJSON *nw = cJSON_GetObjectItem(c, "null_within");
    if (!cJSON_IsNumber(nw)) continue;
    char lab[300];
    cell_label(c, lab, sizeof lab);
    for (int k = 0; k < 2; k++) {
      cJSON *o = cJSON_CreateObject();
      cJSON_AddStringToObject(o, "cell", lab);
      cJSON_AddStringToObject(o, "rate", k ? "null (shuffled siblings)" : "observed");
      rd_view_put(o, "within", rd_jnum(k ? nw : cJSON_GetObjectItem(c, "within")));
      rd_view_put(o, "selectivity", rd_jnum(cJSON_GetObjectItem(c, "selectivity")));
      cJSON_AddItemToArray(vals, o);
    }
    any = 1;
  }
  if (!any) {
    cJSON_Delete(vals);
    return;
  }
  cJSON *spec = rd_json_sq(
      "{'width': 420, 'encoding': {'y': {'field': 'cell', 'type': 'nominal', 'sort': null, 'title': null}}, 'layer': ["
      "{'mark': {'type': 'line', 'color': '#999'}, 'encoding': {'x': {'field': 'within', 'type': 'quantitative', "
      "'title': 'share within tolerance'}, 'detail': {'field': 'cell'}}},"
      "{'mark': {'type': 'point', 'filled': true, 'size': 70, 'tooltip': true}, 'encoding': {'x': {'field': 'within', "
      "'type': 'quantitative'}, 'color': {'field': 'rate', 'type': 'nominal', 'title': null}}}]}");
  rd_view_figure(v, "selectivity", "Selectivity against the null",
                 "Share of replies within tolerance (observed) against the same share when each month's estimate is "
                 "compared with a randomly drawn sibling series (null); selectivity is their ratio. Recall shows as a "
                 "wide gap; a cell whose null is 0 has no selectivity (see warnings).",
                 rd_view_values(spec, vals));
}

static void figure_holdout(rd_view *v, const cJSON *r) {
  const cJSON *ho = cJSON_GetObjectItem(r, "holdout");
  if (!cJSON_GetArraySize(ho)) return;
  cJSON *vals = cJSON_CreateArray();
  char side_from[64];
  snprintf(side_from, sizeof side_from, "from %.0f", rd_jnum(cJSON_GetObjectItem(r, "holdout_from")));
  for (const cJSON *c = ho->child; c; c = c->next) {
    char lab[300];
    cell_label(c, lab, sizeof lab);
    for (int k = 0; k < 2; k++) {
      const cJSON *side = cJSON_GetObjectItem(c, k ? "from" : "before");
      cJSON *o = cJSON_CreateObject();
      cJSON_AddStringToObject(o, "cell", lab);
      cJSON_AddStringToObject(o, "side", k ? side_from : "before");
      rd_view_put(o, "within", rd_jnum(cJSON_GetObjectItem(side, "within")));
      rd_view_put(o, "r", rd_jnum(cJSON_GetObjectItem(side, "r")));
      rd_view_put(o, "n", rd_jnum(cJSON_GetObjectItem(side, "n_scored")));
      cJSON_AddItemToArray(vals, o);
    }
  }
  cJSON *spec = rd_json_sq(
      "{'width': 420, 'encoding': {'y': {'field': 'cell', 'type': 'nominal', 'sort': null, 'title': null}}, 'layer': ["
      "{'mark': {'type': 'line', 'color': '#999'}, 'encoding': {'x': {'field': 'within', 'type': 'quantitative', "
      "'title': 'share within tolerance'}, 'detail': {'field': 'cell'}}},"
      "{'mark': {'type': 'point', 'filled': true, 'size': 70, 'tooltip': true}, 'encoding': {'x': {'field': 'within', "
      "'type': 'quantitative'}, 'color': {'field': 'side', 'type': 'nominal', 'title': null}}}]}");
  rd_view_figure(v, "holdout", "Before and after the holdout month",
                 "Share within tolerance of each cell's months before the holdout month and from it on; recall of "
                 "training data shows as a drop after the model's cutoff.",
                 rd_view_values(spec, vals));
}

static void figure_defense(rd_view *v, const cJSON *r) {
  const cJSON *d = cJSON_GetObjectItem(r, "defense");
  if (!cJSON_GetArraySize(d)) return;
  cJSON *vals = cJSON_CreateArray();
  for (const cJSON *c = d->child; c; c = c->next) {
    const cJSON *ci = cJSON_GetObjectItem(c, "blocked_wilson95");
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "defense", rd_jstr(cJSON_GetObjectItem(c, "defense")));
    cJSON_AddStringToObject(o, "model", rd_jstr(cJSON_GetObjectItem(c, "model")));
    rd_view_put(o, "blocked", rd_jnum(cJSON_GetObjectItem(c, "blocked_fraction")));
    rd_view_put(o, "lo", cJSON_IsArray(ci) ? rd_jnum(cJSON_GetArrayItem(ci, 0)) : NAN);
    rd_view_put(o, "hi", cJSON_IsArray(ci) ? rd_jnum(cJSON_GetArrayItem(ci, 1)) : NAN);
    rd_view_put(o, "worst", rd_jnum(cJSON_GetObjectItem(c, "worst_case_leaked_fraction")));
    cJSON_AddItemToArray(vals, o);
  }
  cJSON *spec = rd_json_sq(
      "{'facet': {'row': {'field': 'defense', 'type': 'nominal', 'title': null}}, 'spec': {'width': 360, "
      "'encoding': {'y': {'field': 'model', 'type': 'nominal', 'title': null}}, 'layer': ["
      "{'mark': {'type': 'bar', 'opacity': 0.7, 'tooltip': true}, 'encoding': {'x': {'field': 'blocked', 'type': "
      "'quantitative', 'scale': {'domain': [0, 1]}, 'title': 'share of attacks blocked'}}},"
      "{'mark': 'rule', 'encoding': {'x': {'field': 'lo', 'type': 'quantitative'}, 'x2': {'field': 'hi'}}},"
      "{'mark': {'type': 'tick', 'color': '#d62728', 'thickness': 2}, 'encoding': {'x': {'field': 'worst', 'type': "
      "'quantitative'}}}]}}");
  rd_view_figure(v, "defenses", "Defenses",
                 "Share of attack prompts each system-prompt defense blocked, per model, with its Wilson 95% interval; "
                 "the red tick is the worst case: the share of months where at least one attack still got a number.",
                 rd_view_values(spec, vals));
}

static void figure_entropy(rd_view *v, const cJSON *r) {
  cJSON *vals = cJSON_CreateArray();
  int any = 0;
  const cJSON *cells = cJSON_GetObjectItem(r, "cells"), *fict = cJSON_GetObjectItem(r, "fictional");
  for (const cJSON *c = cells ? cells->child : NULL; c; c = c->next) {
    if (!cJSON_IsNumber(cJSON_GetObjectItem(c, "entropy_mean"))) continue;
    char lab[300];
    cell_label(c, lab, sizeof lab);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "rows", lab);
    cJSON_AddStringToObject(o, "kind", "real series");
    rd_view_put(o, "entropy", rd_jnum(cJSON_GetObjectItem(c, "entropy_mean")));
    cJSON_AddItemToArray(vals, o);
    any = 1;
  }
  for (const cJSON *c = fict ? fict->child : NULL; c; c = c->next) {
    if (!cJSON_IsNumber(cJSON_GetObjectItem(c, "entropy_mean"))) continue;
    char lab[300];
    snprintf(lab, sizeof lab, "%s / fictional", rd_jstr(cJSON_GetObjectItem(c, "model")));
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "rows", lab);
    cJSON_AddStringToObject(o, "kind", "fictional series");
    rd_view_put(o, "entropy", rd_jnum(cJSON_GetObjectItem(c, "entropy_mean")));
    cJSON_AddItemToArray(vals, o);
    any = 1;
  }
  if (!any) {
    cJSON_Delete(vals);
    return;
  }
  cJSON *spec = rd_json_sq(
      "{'width': 400, 'mark': {'type': 'bar', 'tooltip': true}, 'encoding': {'y': {'field': 'rows', 'type': "
      "'nominal', 'sort': null, 'title': null}, 'x': {'field': 'entropy', 'type': 'quantitative', 'title': "
      "'mean entropy of the first two tokens (bits)'}, 'color': {'field': 'kind', 'type': 'nominal', 'title': null}}}");
  rd_view_figure(v, "entropy", "Answer entropy",
                 "Mean entropy of the first two output tokens per cell and, for the fictional-series control, per "
                 "model: a model that recalls answers with low entropy; fabrication on fictional series with low "
                 "entropy is a warning sign.",
                 rd_view_values(spec, vals));
}

int leak_view(const cJSON *report, const char *h5, rd_view *v, rd_status *st) {
  const cJSON *r = cJSON_GetObjectItem(report, "result");
  if (!cJSON_IsArray(cJSON_GetObjectItem(r, "cells")))
    return rd_fail(st, RD_EINPUT, "the leakage report has no result.cells (not a leakage report of this version?)");
  rd_view_heading(v, "leakage %s: %.0f cells, %.0f rows (%.0f excluded, %.0f on fictional series)",
                  rd_jstr(rd_jget(report, "rmdiag.job")), rd_jnum(cJSON_GetObjectItem(r, "n_cells")),
                  rd_jnum(cJSON_GetObjectItem(r, "n_rows_total")), rd_jnum(cJSON_GetObjectItem(r, "n_excluded")),
                  rd_jnum(cJSON_GetObjectItem(r, "n_fictional_rows")));
  leak_tables(v, report, r);
  rd_view_warnings_from(v, r);
  if (!h5) return RD_OK;
  double tol = rd_jnum(rd_jget(report, "rmdiag.options.tolerance"));
  if (figure_scatter(v, r, isfinite(tol) ? tol : 0.0, h5, st) != RD_OK) return st->code;
  figure_signature(v, r);
  figure_null(v, r);
  figure_holdout(v, r);
  figure_defense(v, r);
  figure_entropy(v, r);
  return RD_OK;
}
