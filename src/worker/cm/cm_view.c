/* cm for readers: the summary, strata and top-pairs tables, and the figures of `rmdiag report` (the
 * memorization map, the CM histogram, the strata forest plot, the per-user CM distribution), the per-pair
 * values read from the output .h5 and binned here. See docs/reference.md, 'Reading reports'. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cm_internal.h"

#define CM_MAP_BINS 50
#define CM_HIST_BINS 60

static void summary_table(rd_view *v, const cJSON *r) {
  double B = rd_jnum(rd_jget(r, "bootstrap.resamples"));
  char legend[400];
  snprintf(legend, sizeof legend, "TM: mean p(chosen > rejected) over runs that trained on the pair's user; TG: over "
           "runs that held it out; CM = TM - TG. Mean over pairs where defined; 95%% CI: user bootstrap, %.0f resamples", B);
  rd_table *t = rd_view_table(v, "summary", "Memorization summary", legend);
  t->in_summary = 1;
  rd_table_col(t, "quantity", "", RD_COL_TEXT, 0, NULL);
  rd_table_col(t, "mean", "mean [95% CI]", RD_COL_INTERVAL, 4, "no pair has the value");
  rd_table_col(t, "median", "median", RD_COL_NUM, 4, "no pair has the value");
  rd_table_col(t, "sd", "sd", RD_COL_NUM, 4, "fewer than 2 pairs have the value");
  rd_table_col(t, "q05", "q05", RD_COL_NUM, 4, NULL);
  rd_table_hide_last(t);
  rd_table_col(t, "q25", "q25", RD_COL_NUM, 4, NULL);
  rd_table_hide_last(t);
  rd_table_col(t, "q75", "q75", RD_COL_NUM, 4, NULL);
  rd_table_hide_last(t);
  rd_table_col(t, "q95", "q95", RD_COL_NUM, 4, NULL);
  rd_table_hide_last(t);
  rd_table_col(t, "user_macro", "user macro", RD_COL_NUM, 4, NULL);
  rd_table_hide_last(t);
  rd_table_col(t, "defined", "pairs defined", RD_COL_INT, 0, NULL);
  static const char *const keys[3] = {"tm", "tg", "cm"}, *const up[3] = {"TM", "TG", "CM"};
  for (int j = 0; j < 3; j++) {
    const cJSON *s = cJSON_GetObjectItem(r, keys[j]);
    char nk[32];
    snprintf(nk, sizeof nk, "n_%s_defined", keys[j]);
    rd_table_text(t, up[j]);
    rd_table_jci(t, cJSON_GetObjectItem(s, "mean"), cJSON_GetObjectItem(s, "ci95"));
    rd_table_jnum(t, cJSON_GetObjectItem(s, "median"));
    rd_table_jnum(t, cJSON_GetObjectItem(s, "sd"));
    rd_table_jnum(t, cJSON_GetObjectItem(s, "q05"));
    rd_table_jnum(t, cJSON_GetObjectItem(s, "q25"));
    rd_table_jnum(t, cJSON_GetObjectItem(s, "q75"));
    rd_table_jnum(t, cJSON_GetObjectItem(s, "q95"));
    rd_table_jnum(t, cJSON_GetObjectItem(cJSON_GetObjectItem(r, "user_macro"), keys[j]));
    rd_table_jnum(t, cJSON_GetObjectItem(r, nk));
  }
  if (B == 0) rd_table_note(t, "no intervals: bootstrap 0");
  double neg = rd_jnum(cJSON_GetObjectItem(r, "cm_negative_fraction"));
  if (isfinite(neg)) rd_table_note(t, "pairs with CM < 0: %.1f %%", 100.0 * neg);
}

/* Whether the strata of covariate `name` are a string covariate's categories (named). */
static int names_categories(const cJSON *strata, const char *name) {
  for (const cJSON *e = strata->child; e; e = e->next)
    if (strcmp(rd_jstr(cJSON_GetObjectItem(e, "covariate")), name) == 0) return cJSON_GetObjectItem(e, "category") != NULL;
  return 0;
}

static void strata_table(rd_view *v, const cJSON *r) {
  const cJSON *strata = cJSON_GetObjectItem(r, "strata");
  if (!cJSON_GetArraySize(strata)) return;
  rd_table *t = rd_view_table(v, "strata", "Strata",
                              "quantile bins (lo..hi) or categories (the value, or a string covariate's name) of each "
                              "covariate; n: pairs, users: "
                              "users with a pair in it; means over its pairs where defined, 95% CI from user-cluster-"
                              "robust standard errors");
  t->in_summary = 1;
  rd_table_col(t, "covariate", "covariate", RD_COL_TEXT, 0, NULL);
  rd_table_col(t, "bin", "bin", RD_COL_TEXT, 0, NULL);
  rd_table_col(t, "lo", "lo", RD_COL_NUM, 4, NULL);
  rd_table_col(t, "hi", "hi", RD_COL_NUM, 4, NULL);
  rd_table_col(t, "n", "n", RD_COL_INT, 0, NULL);
  rd_table_col(t, "users", "users", RD_COL_INT, 0, NULL);
  const char *why = "no pair of the bin has the value";
  rd_table_col(t, "tm", "TM [95% CI]", RD_COL_INTERVAL, 4, why);
  rd_table_col(t, "tg", "TG [95% CI]", RD_COL_INTERVAL, 4, why);
  rd_table_col(t, "cm", "CM [95% CI]", RD_COL_INTERVAL, 4, why);
  int no_ci = 0;
  for (const cJSON *e = strata->child; e; e = e->next) {
    rd_table_jtext(t, cJSON_GetObjectItem(e, "covariate"));
    const cJSON *cat = cJSON_GetObjectItem(e, "category");  /* a string covariate's category: its name */
    rd_table_jtext(t, cat ? cat : cJSON_GetObjectItem(e, "bin"));
    rd_table_jnum(t, cJSON_GetObjectItem(e, "lo"));
    rd_table_jnum(t, cJSON_GetObjectItem(e, "hi"));
    rd_table_jnum(t, cJSON_GetObjectItem(e, "n"));
    rd_table_jnum(t, cJSON_GetObjectItem(e, "n_users"));
    rd_table_jci(t, cJSON_GetObjectItem(e, "tm"), cJSON_GetObjectItem(e, "tm_ci95"));
    rd_table_jci(t, cJSON_GetObjectItem(e, "tg"), cJSON_GetObjectItem(e, "tg_ci95"));
    rd_table_jci(t, cJSON_GetObjectItem(e, "cm"), cJSON_GetObjectItem(e, "cm_ci95"));
    no_ci |= !cJSON_IsArray(cJSON_GetObjectItem(e, "cm_ci95")) && cJSON_IsNumber(cJSON_GetObjectItem(e, "cm"));
  }
  if (no_ci) rd_table_note(t, "a mean without an interval: fewer than 2 users have the value in that bin");
  const cJSON *ex = cJSON_GetObjectItem(r, "strata_excluded");
  for (const cJSON *e = ex ? ex->child : NULL; e; e = e->next)
    if (rd_jnum(e) > 0)
      rd_table_note(t, "%s: %.0f pairs left out (%s)", e->string, rd_jnum(e),
                    names_categories(strata, e->string) ? "an empty category name" : "covariate not finite");
}

static void top_table(rd_view *v, const cJSON *r) {
  const cJSON *top = cJSON_GetObjectItem(r, "top_memorized");
  if (!cJSON_GetArraySize(top)) return;
  rd_table *t = rd_view_table(v, "top_memorized", "Most memorized pairs",
                              "largest CM first; pair_id joins the input (the output's /cm/pair_id); train/held: runs "
                              "that trained on / held out the pair's user");
  t->in_summary = 1;
  rd_table_col(t, "rank", "rank", RD_COL_INT, 0, NULL);
  rd_table_col(t, "pair", "pair", RD_COL_INT, 0, NULL);
  rd_table_hide_last(t);
  rd_table_col(t, "pair_id", "pair id", RD_COL_TEXT, 0, NULL);
  rd_table_col(t, "user", "user", RD_COL_TEXT, 0, NULL);
  rd_table_col(t, "tm", "TM", RD_COL_NUM, 4, NULL);
  rd_table_col(t, "tg", "TG", RD_COL_NUM, 4, NULL);
  rd_table_col(t, "cm", "CM", RD_COL_NUM, 4, NULL);
  rd_table_col(t, "n_train", "train", RD_COL_INT, 0, NULL);
  rd_table_col(t, "n_held", "held", RD_COL_INT, 0, NULL);
  int rank = 1;
  for (const cJSON *e = top->child; e; e = e->next) {
    rd_table_num(t, rank++);
    rd_table_jnum(t, cJSON_GetObjectItem(e, "pair"));
    rd_table_jtext(t, cJSON_GetObjectItem(e, "pair_id"));
    rd_table_jtext(t, cJSON_GetObjectItem(e, "user"));
    rd_table_jnum(t, cJSON_GetObjectItem(e, "tm"));
    rd_table_jnum(t, cJSON_GetObjectItem(e, "tg"));
    rd_table_jnum(t, cJSON_GetObjectItem(e, "cm"));
    rd_table_jnum(t, cJSON_GetObjectItem(e, "n_train"));
    rd_table_jnum(t, cJSON_GetObjectItem(e, "n_held"));
  }
}

/* ---- figures ---------------------------------------------------------------------------------------------- */

static void figure_map(rd_view *v, const double *tm, const double *tg, int64_t P) {
  cJSON *spec = rd_json_sq(
      "{'width': 360, 'height': 360, 'layer': ["
      "{'mark': {'type': 'rect'}, 'encoding': {"
      "'x': {'field': 'x0', 'type': 'quantitative', 'scale': {'domain': [0, 1]}, 'title': 'TG (held-out runs)'},"
      "'x2': {'field': 'x1'},"
      "'y': {'field': 'y0', 'type': 'quantitative', 'scale': {'domain': [0, 1]}, 'title': 'TM (training runs)'},"
      "'y2': {'field': 'y1'},"
      "'color': {'field': 'n', 'type': 'quantitative', 'scale': {'type': 'log', 'scheme': 'viridis'}, 'title': 'pairs'},"
      "'tooltip': [{'field': 'n', 'title': 'pairs'}, {'field': 'x0', 'title': 'TG from'}, {'field': 'y0', 'title': 'TM from'}]}},"
      "{'data': {'values': [{'d': 0}, {'d': 1}]}, 'mark': {'type': 'line', 'color': '#d62728', 'strokeDash': [4, 3]},"
      "'encoding': {'x': {'field': 'd', 'type': 'quantitative'}, 'y': {'field': 'd', 'type': 'quantitative'}}}]}");
  cJSON *layer0 = cJSON_GetArrayItem(cJSON_GetObjectItem(spec, "layer"), 0);
  rd_view_values(layer0, rd_view_hist2(tg, tm, P, CM_MAP_BINS, 0.0, 1.0));
  rd_view_figure(v, "memorization_map", "Memorization map",
                 "Pairs binned by TG (mean p over runs that held the user out, x) and TM (over runs that trained on it, "
                 "y), 50 x 50 cells, colour = pairs (log scale); pairs above the dashed diagonal are fitted better when "
                 "their user is trained on (CM > 0). Pairs without both sides are left out.",
                 spec);
}

static void figure_hist(rd_view *v, const char *name, const char *title, const char *caption, const char *xtitle,
                        const double *x, int64_t n) {
  double lo, hi;
  if (!rd_view_range(x, n, &lo, &hi)) return;
  cJSON *spec = rd_json_sq(
      "{'width': 420, 'height': 220, 'layer': ["
      "{'mark': {'type': 'rect', 'tooltip': true}, 'encoding': {"
      "'x': {'field': 'x0', 'type': 'quantitative', 'title': 'X'}, 'x2': {'field': 'x1'},"
      "'y': {'field': 'n', 'type': 'quantitative', 'title': 'count'}}},"
      "{'data': {'values': [{'z': 0}]}, 'mark': {'type': 'rule', 'color': '#d62728', 'strokeDash': [4, 3]},"
      "'encoding': {'x': {'field': 'z', 'type': 'quantitative'}}}]}");
  cJSON *layer0 = cJSON_GetArrayItem(cJSON_GetObjectItem(spec, "layer"), 0);
  cJSON_SetValuestring(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(layer0, "encoding"), "x"), "title"),
                       xtitle);
  rd_view_values(layer0, rd_view_hist(x, n, CM_HIST_BINS, lo, hi));
  rd_view_figure(v, name, title, caption, spec);
}

/* Per-user mean CM over the user's pairs where CM is defined. */
static double *user_means(const double *cm, const double *user, int64_t P, int64_t *U) {
  int64_t n = 0;
  for (int64_t p = 0; p < P; p++)
    if (user[p] + 1 > n) n = (int64_t)user[p] + 1;
  double *s = calloc((size_t)(n ? n : 1), sizeof(double)), *c = calloc((size_t)(n ? n : 1), sizeof(double));
  if (!s || !c) {
    free(s), free(c);
    return NULL;
  }
  for (int64_t p = 0; p < P; p++)
    if (!isnan(cm[p]) && user[p] >= 0) s[(int64_t)user[p]] += cm[p], c[(int64_t)user[p]] += 1;
  for (int64_t u = 0; u < n; u++) s[u] = c[u] > 0 ? s[u] / c[u] : NAN;
  free(c);
  *U = n;
  return s;
}

static void figure_strata(rd_view *v, const cJSON *r) {
  const cJSON *strata = cJSON_GetObjectItem(r, "strata");
  if (!cJSON_GetArraySize(strata)) return;
  cJSON *vals = cJSON_CreateArray();
  for (const cJSON *e = strata->child; e; e = e->next) {
    cJSON *o = cJSON_CreateObject();
    char label[300], num[40];
    const cJSON *bin = cJSON_GetObjectItem(e, "bin"), *ci = cJSON_GetObjectItem(e, "cm_ci95");
    rd_format_exact(rd_jnum(bin), num, sizeof num);
    const cJSON *cat = cJSON_GetObjectItem(e, "category");
    if (cJSON_IsString(cat))
      snprintf(label, sizeof label, "%s = %s", rd_jstr(cJSON_GetObjectItem(e, "covariate")), cat->valuestring);
    else if (rd_jnum(cJSON_GetObjectItem(e, "lo")) == rd_jnum(cJSON_GetObjectItem(e, "hi")) &&
        rd_jnum(bin) == rd_jnum(cJSON_GetObjectItem(e, "lo")))
      snprintf(label, sizeof label, "%s = %s", rd_jstr(cJSON_GetObjectItem(e, "covariate")), num);
    else
      snprintf(label, sizeof label, "%s bin %s [%.3g, %.3g]", rd_jstr(cJSON_GetObjectItem(e, "covariate")), num,
               rd_jnum(cJSON_GetObjectItem(e, "lo")), rd_jnum(cJSON_GetObjectItem(e, "hi")));
    cJSON_AddStringToObject(o, "stratum", label);
    cJSON_AddStringToObject(o, "covariate", rd_jstr(cJSON_GetObjectItem(e, "covariate")));
    rd_view_put(o, "cm", rd_jnum(cJSON_GetObjectItem(e, "cm")));
    rd_view_put(o, "lo", cJSON_IsArray(ci) ? rd_jnum(cJSON_GetArrayItem(ci, 0)) : NAN);
    rd_view_put(o, "hi", cJSON_IsArray(ci) ? rd_jnum(cJSON_GetArrayItem(ci, 1)) : NAN);
    rd_view_put(o, "n", rd_jnum(cJSON_GetObjectItem(e, "n")));
    cJSON_AddItemToArray(vals, o);
  }
  cJSON *spec = rd_json_sq(
      "{'width': 420, 'encoding': {'y': {'field': 'stratum', 'type': 'nominal', 'sort': null, 'title': null}},"
      "'layer': ["
      "{'mark': {'type': 'rule'}, 'encoding': {'x': {'field': 'lo', 'type': 'quantitative', 'title': 'mean CM'},"
      "'x2': {'field': 'hi'}, 'color': {'field': 'covariate', 'type': 'nominal', 'legend': null}}},"
      "{'mark': {'type': 'point', 'filled': true, 'tooltip': true}, 'encoding': {'x': {'field': 'cm', 'type': "
      "'quantitative'}, 'color': {'field': 'covariate', 'type': 'nominal', 'legend': null}, 'size': {'field': 'n', "
      "'type': 'quantitative', 'title': 'pairs'}}},"
      "{'mark': {'type': 'rule', 'color': '#888', 'strokeDash': [4, 3]}, 'encoding': {'x': {'datum': 0}}}]}");
  rd_view_figure(v, "strata_forest", "CM by stratum",
                 "Mean CM of each stratum (point, size = pairs) with its 95% interval (user-cluster-robust standard "
                 "errors); the dashed line is CM = 0. Strata in report order: covariates as listed in the job, bins "
                 "ascending.",
                 rd_view_values(spec, vals));
}

static int cm_figures(const char *h5, const cJSON *r, rd_view *v, rd_status *st) {
  int64_t P, n2, n3, n4;
  double *tm = rd_view_column(h5, "/cm/tm", &P, st);
  double *tg = tm ? rd_view_column(h5, "/cm/tg", &n2, st) : NULL;
  double *cm = tg ? rd_view_column(h5, "/cm/cm", &n3, st) : NULL;
  double *user = cm ? rd_view_column(h5, "/cm/user_index", &n4, st) : NULL;
  if (user && (n2 != P || n3 != P || n4 != P))
    rd_fail(st, RD_EINPUT, "%s: /cm/tm, /cm/tg, /cm/cm and /cm/user_index differ in length", h5);
  if (st->code == RD_OK) {
    figure_map(v, tm, tg, P);
    figure_hist(v, "cm_histogram", "CM of the pairs",
                "Histogram of CM = TM - TG over the pairs where both sides are defined (60 equal bins from the smallest "
                "to the largest value); the dashed line is 0.",
                "CM of a pair", cm, P);
    figure_strata(v, r);
    int64_t U = 0;
    double *um = user_means(cm, user, P, &U);
    if (um)
      figure_hist(v, "user_cm", "CM per user",
                  "Histogram of each user's mean CM over the user's pairs where CM is defined (users without one left "
                  "out); the spread across users shows whether memorization concentrates on a few users.",
                  "mean CM of a user", um, U);
    free(um);
  }
  free(tm), free(tg), free(cm), free(user);
  return st->code;
}

int cm_view(const cJSON *report, const char *h5, rd_view *v, rd_status *st) {
  const cJSON *r = cJSON_GetObjectItem(report, "result");
  if (!cJSON_IsNumber(cJSON_GetObjectItem(r, "n_pairs")))
    return rd_fail(st, RD_EINPUT, "the cm report has no result.n_pairs (not a cm report of this version?)");
  rd_view_heading(v, "cm %s: %.0f pairs, %.0f users, %.0f runs", rd_jstr(rd_jget(report, "rmdiag.job")),
                  rd_jnum(cJSON_GetObjectItem(r, "n_pairs")), rd_jnum(cJSON_GetObjectItem(r, "n_users")),
                  rd_jnum(cJSON_GetObjectItem(r, "n_runs")));
  summary_table(v, r);
  strata_table(v, r);
  top_table(v, r);
  rd_view_warnings_from(v, r);
  return h5 ? cm_figures(h5, r, v, st) : RD_OK;
}
