/* benchmark for readers: the leaderboard, the subsets and the paired comparisons as tables, the warnings, and
 * the figures of `rmdiag report` (leaderboard forest plot, section x model heatmap, comparison matrix), all
 * from the report JSON. See docs/reference.md, 'Reading reports'. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench_internal.h"

/* A subset score moves by 1/n per item: below this many items one item moves it by more than 0.05. */
#define BENCH_FEW_ITEMS 20

/* The report's models by name: the leaderboard lists them by rank, result.models in input order. An
 * index of their names (rd_str_index) makes a view of n models n log n comparisons, not n^2/2 (5,000
 * models: 12.5 million); the first of equal names, as a scan would find. */
typedef struct model_index {
  const cJSON *models;
  const cJSON **m;  /* the models in order; NULL when out of memory: then a scan */
  rd_str_index names;
} model_index;

static model_index models_by_name(const cJSON *r) {
  model_index ix = {cJSON_GetObjectItem(r, "models"), NULL, {NULL, 0}};
  int64_t n = cJSON_GetArraySize(ix.models), k = 0;
  const char **names = malloc(sizeof(char *) * (size_t)(n ? n : 1));
  ix.m = malloc(sizeof(cJSON *) * (size_t)(n ? n : 1));
  if (names && ix.m) {
    for (const cJSON *m = ix.models ? ix.models->child : NULL; m; m = m->next, k++) {
      ix.m[k] = m;
      names[k] = rd_jstr(cJSON_GetObjectItem(m, "model"));
    }
  }
  if (!names || !ix.m || rd_str_index_make(&ix.names, names, k) != 0) {
    free(ix.m);
    ix.m = NULL;
  }
  free(names);
  return ix;
}

static const cJSON *model_named(const model_index *ix, const char *name) {
  if (!ix->m) {
    for (const cJSON *m = ix->models ? ix->models->child : NULL; m; m = m->next)
      if (strcmp(rd_jstr(cJSON_GetObjectItem(m, "model")), name) == 0) return m;
    return NULL;
  }
  int64_t at = rd_str_index_find(&ix->names, name);
  return at >= 0 ? ix->m[at] : NULL;
}

cJSON *bench_warnings(const cJSON *r) {
  cJSON *w = cJSON_CreateArray();
  char msg[1024];
  const cJSON *first = cJSON_GetArrayItem(cJSON_GetObjectItem(r, "models"), 0);
  const cJSON *subs = cJSON_GetObjectItem(first, "subsets");
  size_t k = 0;
  int few = 0;
  msg[0] = '\0';
  for (const cJSON *s = subs ? subs->child : NULL; s; s = s->next) {
    double n = rd_jnum(cJSON_GetObjectItem(s, "n"));
    if (!(n < BENCH_FEW_ITEMS)) continue;
    if (k < sizeof msg - 200) k += (size_t)snprintf(msg + k, sizeof msg - k, "%s%s (%.0f)", few ? ", " : "", s->string, n);
    few++;
  }
  if (few) {
    char full[1300];
    snprintf(full, sizeof full, "%d subset%s with fewer than %d items (one item moves the score by more than 0.05; see "
             "the Wilson intervals): %s", few, few == 1 ? "" : "s", BENCH_FEW_ITEMS, msg);
    cJSON_AddItemToArray(w, cJSON_CreateString(full));
  }
  const cJSON *miss = cJSON_GetObjectItem(r, "missing_subsets");
  if (cJSON_GetArraySize(miss) > 0) {
    k = 0;
    for (const cJSON *s = miss->child; s && k < sizeof msg - 200; s = s->next)
      k += (size_t)snprintf(msg + k, sizeof msg - k, "%s%s", s == miss->child ? "" : ", ", rd_jstr(s));
    char full[1300];
    snprintf(full, sizeof full, "scheme subsets missing from the input (allow_missing): %s; their sections are "
             "re-weighted over the subsets present, so scores are not comparable with the official leaderboard", msg);
    cJSON_AddItemToArray(w, cJSON_CreateString(full));
  }
  return w;
}

static void leaderboard_table(rd_view *v, const cJSON *r, const model_index *ix) {
  const cJSON *models = cJSON_GetObjectItem(r, "models"), *lb = cJSON_GetObjectItem(r, "leaderboard");
  const cJSON *secs = cJSON_GetObjectItem(cJSON_GetArrayItem(models, 0), "sections");
  double B = rd_jnum(rd_jget(r, "bootstrap.resamples"));
  char legend[300];
  snprintf(legend, sizeof legend, "score: mean of the sections (fractions, not %%); 95%% CI: bootstrap of items within "
           "subsets, %.0f resamples; section columns: section scores (intervals in rmdiag table)", B);
  rd_table *t = rd_view_table(v, "leaderboard", "Leaderboard", legend);
  t->in_summary = 1;
  rd_table_col(t, "rank", "rank", RD_COL_INT, 0, NULL);
  rd_table_col(t, "model", "model", RD_COL_TEXT, 0, NULL);
  rd_table_col(t, "score", "score [95% CI]", RD_COL_INTERVAL, 4, "no section of the model has a subset");
  for (const cJSON *s = secs ? secs->child : NULL; s; s = s->next) {
    rd_table_col(t, s->string, s->string, RD_COL_INTERVAL, 4, "none of the section's subsets is present");
    rd_table_brief_last(t);
  }
  for (const cJSON *e = lb ? lb->child : NULL; e; e = e->next) {
    const cJSON *m = model_named(ix, rd_jstr(cJSON_GetObjectItem(e, "model")));
    rd_table_jnum(t, cJSON_GetObjectItem(e, "rank"));
    rd_table_jtext(t, cJSON_GetObjectItem(e, "model"));
    rd_table_jci(t, cJSON_GetObjectItem(m, "score"), cJSON_GetObjectItem(m, "score_ci95"));
    const cJSON *ms = cJSON_GetObjectItem(m, "sections");
    for (const cJSON *s = secs ? secs->child : NULL; s; s = s->next) {
      const cJSON *x = cJSON_GetObjectItem(ms, s->string);
      rd_table_jci(t, cJSON_GetObjectItem(x, "score"), cJSON_GetObjectItem(x, "ci95"));
    }
  }
  if (B == 0) rd_table_note(t, "no intervals: bootstrap 0 or per-subset accuracies as input");
}

static void subsets_table(rd_view *v, const cJSON *r) {
  rd_table *t = rd_view_table(v, "subsets", "Subsets",
                              "one row per model and subset present; score: mean credit (Ties: the composite); n: "
                              "items (Ties: rows); 95% CI: Wilson, for subsets with 0/1 credits only");
  rd_table_col(t, "model", "model", RD_COL_TEXT, 0, NULL);
  rd_table_col(t, "subset", "subset", RD_COL_TEXT, 0, NULL);
  rd_table_col(t, "n", "n", RD_COL_INT, 0, "per-subset accuracies as input: no item count");
  rd_table_col(t, "score", "score [Wilson 95%]", RD_COL_INTERVAL, 4, "no value");
  rd_table_col(t, "credit", "credit", RD_COL_NUM, 4, NULL);
  rd_table_hide_last(t);
  const cJSON *models = cJSON_GetObjectItem(r, "models");
  for (const cJSON *m = models ? models->child : NULL; m; m = m->next) {
    const cJSON *subs = cJSON_GetObjectItem(m, "subsets");
    for (const cJSON *s = subs ? subs->child : NULL; s; s = s->next) {
      rd_table_jtext(t, cJSON_GetObjectItem(m, "model"));
      rd_table_text(t, s->string);
      rd_table_jnum(t, cJSON_GetObjectItem(s, "n"));
      rd_table_jci(t, cJSON_GetObjectItem(s, "score"), cJSON_GetObjectItem(s, "wilson95"));
      rd_table_jnum(t, cJSON_GetObjectItem(s, "credit"));
    }
  }
}

static void comparisons_table(rd_view *v, const cJSON *r) {
  const cJSON *cmps = cJSON_GetObjectItem(r, "comparisons");
  if (!cJSON_GetArraySize(cmps)) return;
  rd_table *t = rd_view_table(v, "comparisons", "Paired comparisons",
                              "diff = score(a) - score(b); 95% CI and two-sided p from the paired bootstrap (the same "
                              "item draws for both models); p < x: no replicate difference crossed 0, x = 2/resamples");
  t->in_summary = 1;
  t->summary_rows = 15;
  rd_table_col(t, "a", "a", RD_COL_TEXT, 0, NULL);
  rd_table_col(t, "b", "b", RD_COL_TEXT, 0, NULL);
  rd_table_col(t, "diff", "diff [95% CI]", RD_COL_INTERVAL, 4, "a score is undefined");
  rd_table_col(t, "p", "p", RD_COL_P, 3, "no bootstrap (bootstrap 0 or per-subset accuracies)");
  rd_table_col(t, "resamples", "resamples", RD_COL_INT, 0, NULL);
  for (const cJSON *c = cmps->child; c; c = c->next) {
    rd_table_jtext(t, cJSON_GetObjectItem(c, "a"));
    rd_table_jtext(t, cJSON_GetObjectItem(c, "b"));
    rd_table_jci(t, cJSON_GetObjectItem(c, "diff"), cJSON_GetObjectItem(c, "ci95"));
    rd_table_p(t, rd_jnum(cJSON_GetObjectItem(c, "p")), rd_jnum(cJSON_GetObjectItem(c, "p_resolution")));
    rd_table_jnum(t, cJSON_GetObjectItem(c, "resamples"));
  }
}

/* ---- figures ---------------------------------------------------------------------------------------------- */

static void figure_forest(rd_view *v, const cJSON *r, const model_index *ix) {
  const cJSON *lb = cJSON_GetObjectItem(r, "leaderboard");
  cJSON *vals = cJSON_CreateArray();
  for (const cJSON *e = lb ? lb->child : NULL; e; e = e->next) {
    const cJSON *m = model_named(ix, rd_jstr(cJSON_GetObjectItem(e, "model")));
    const cJSON *ci = cJSON_GetObjectItem(m, "score_ci95");
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "model", rd_jstr(cJSON_GetObjectItem(e, "model")));
    rd_view_put(o, "rank", rd_jnum(cJSON_GetObjectItem(e, "rank")));
    rd_view_put(o, "score", rd_jnum(cJSON_GetObjectItem(m, "score")));
    rd_view_put(o, "lo", cJSON_IsArray(ci) ? rd_jnum(cJSON_GetArrayItem(ci, 0)) : NAN);
    rd_view_put(o, "hi", cJSON_IsArray(ci) ? rd_jnum(cJSON_GetArrayItem(ci, 1)) : NAN);
    cJSON_AddItemToArray(vals, o);
  }
  cJSON *spec = rd_json_sq(
      "{'width': 420, 'encoding': {'y': {'field': 'model', 'type': 'nominal', 'sort': {'field': 'rank'}, "
      "'title': null}}, 'layer': ["
      "{'mark': {'type': 'rule'}, 'encoding': {'x': {'field': 'lo', 'type': 'quantitative', 'title': 'score', "
      "'scale': {'zero': false}}, 'x2': {'field': 'hi'}}},"
      "{'mark': {'type': 'point', 'filled': true, 'size': 60, 'tooltip': true}, 'encoding': {'x': {'field': "
      "'score', 'type': 'quantitative'}}}]}");
  rd_view_figure(v, "leaderboard_forest", "Leaderboard",
                 "Each model's score (point) with its 95% bootstrap interval (items resampled within subsets), best "
                 "first; overlapping intervals do not settle an order: see the paired comparisons.",
                 rd_view_values(spec, vals));
}

static void figure_heatmap(rd_view *v, const cJSON *r, const model_index *ix) {
  const cJSON *lb = cJSON_GetObjectItem(r, "leaderboard");
  cJSON *vals = cJSON_CreateArray();
  int order = 0;
  for (const cJSON *e = lb ? lb->child : NULL; e; e = e->next) {
    const cJSON *m = model_named(ix, rd_jstr(cJSON_GetObjectItem(e, "model")));
    const cJSON *ms = cJSON_GetObjectItem(m, "sections");
    int k = 0;
    for (const cJSON *s = ms ? ms->child : NULL; s; s = s->next, k++) {
      cJSON *o = cJSON_CreateObject();
      cJSON_AddStringToObject(o, "model", rd_jstr(cJSON_GetObjectItem(e, "model")));
      cJSON_AddStringToObject(o, "section", s->string);
      rd_view_put(o, "rank", order);
      rd_view_put(o, "k", k);
      rd_view_put(o, "score", rd_jnum(cJSON_GetObjectItem(s, "score")));
      cJSON_AddItemToArray(vals, o);
    }
    order++;
  }
  cJSON *spec = rd_json_sq(
      "{'width': {'step': 84}, 'height': {'step': 26}, 'encoding': {'x': {'field': 'section', 'type': 'nominal', "
      "'sort': {'field': 'k'}, 'title': null, "
      "'axis': {'labelAngle': -30}}, 'y': {'field': 'model', 'type': 'nominal', 'sort': {'field': 'rank'}, "
      "'title': null}}, 'layer': ["
      "{'mark': {'type': 'rect', 'tooltip': true}, 'encoding': {'color': {'field': 'score', 'type': 'quantitative', "
      "'scale': {'scheme': 'blues', 'domain': [0, 1]}}}},"
      "{'mark': {'type': 'text', 'fontSize': 10}, 'encoding': {'text': {'field': 'score', 'type': 'quantitative', "
      "'format': '.3f'}, 'color': {'condition': {'test': 'datum.score > 0.6', 'value': 'white'}, 'value': 'black'}}}]}");
  rd_view_figure(v, "section_heatmap", "Sections by model",
                 "Section scores of every model (rows in leaderboard order; colour 0 to 1), to see where a model's "
                 "score comes from.",
                 rd_view_values(spec, vals));
}

static void figure_matrix(rd_view *v, const cJSON *r) {
  const cJSON *cmps = cJSON_GetObjectItem(r, "comparisons");
  if (!cJSON_GetArraySize(cmps)) return;
  cJSON *vals = cJSON_CreateArray();
  for (const cJSON *c = cmps->child; c; c = c->next) {
    const cJSON *ci = cJSON_GetObjectItem(c, "ci95");
    double d = rd_jnum(cJSON_GetObjectItem(c, "diff")), p = rd_jnum(cJSON_GetObjectItem(c, "p"));
    double res = rd_jnum(cJSON_GetObjectItem(c, "p_resolution"));
    double lo = cJSON_IsArray(ci) ? rd_jnum(cJSON_GetArrayItem(ci, 0)) : NAN;
    double hi = cJSON_IsArray(ci) ? rd_jnum(cJSON_GetArrayItem(ci, 1)) : NAN;
    for (int side = 0; side < 2; side++) {  /* both triangles: (b, a) holds -diff */
      cJSON *o = cJSON_CreateObject();
      cJSON_AddStringToObject(o, "a", rd_jstr(cJSON_GetObjectItem(c, side ? "b" : "a")));
      cJSON_AddStringToObject(o, "b", rd_jstr(cJSON_GetObjectItem(c, side ? "a" : "b")));
      rd_view_put(o, "diff", side ? -d : d);
      rd_view_put(o, "lo", side ? -hi : lo);
      rd_view_put(o, "hi", side ? -lo : hi);
      rd_view_put(o, "p", p);
      char label[64];
      if (!isfinite(p)) snprintf(label, sizeof label, "%+.3f", side ? -d : d);
      else if (p == 0 && res > 0) snprintf(label, sizeof label, "%+.3f (p<%.3g)", side ? -d : d, res);
      else snprintf(label, sizeof label, "%+.3f (p=%.3g)", side ? -d : d, p);
      cJSON_AddStringToObject(o, "label", label);
      cJSON_AddItemToArray(vals, o);
    }
  }
  cJSON *spec = rd_json_sq(
      "{'width': {'step': 130}, 'height': {'step': 30}, 'encoding': {'x': {'field': 'b', 'type': 'nominal', "
      "'title': 'model b', 'axis': {'labelAngle': -30}}, "
      "'y': {'field': 'a', 'type': 'nominal', 'title': 'model a'}}, 'layer': ["
      "{'mark': {'type': 'rect'}, 'encoding': {'color': {'field': 'diff', 'type': 'quantitative', "
      "'scale': {'scheme': 'redblue', 'domainMid': 0}, 'title': 'a - b'}, 'tooltip': [{'field': 'a'}, {'field': "
      "'b'}, {'field': 'diff', 'format': '.4f'}, {'field': 'lo', 'title': 'CI lo', 'format': '.4f'}, {'field': "
      "'hi', 'title': 'CI hi', 'format': '.4f'}, {'field': 'p'}]}},"
      "{'mark': {'type': 'text', 'fontSize': 9}, 'encoding': {'text': {'field': 'label'}}}]}");
  rd_view_figure(v, "comparison_matrix", "Paired comparisons",
                 "Score difference of model a (row) minus model b (column) for every comparison of the job, with the "
                 "paired-bootstrap p (p<x: no replicate crossed zero, x = 2/resamples); both triangles shown, the lower "
                 "one negated. The tooltip gives the 95% interval.",
                 rd_view_values(spec, vals));
}

int bench_view(const cJSON *report, const char *h5, rd_view *v, rd_status *st) {
  const cJSON *r = cJSON_GetObjectItem(report, "result");
  if (!cJSON_IsArray(cJSON_GetObjectItem(r, "models")) || !cJSON_IsArray(cJSON_GetObjectItem(r, "leaderboard")))
    return rd_fail(st, RD_EINPUT, "the benchmark report has no result.models or result.leaderboard");
  rd_view_heading(v, "benchmark %s: %s, %.0f models, %.0f items", rd_jstr(rd_jget(report, "rmdiag.job")),
                  rd_jstr(cJSON_GetObjectItem(r, "scheme")), rd_jnum(cJSON_GetObjectItem(r, "n_models")),
                  rd_jnum(cJSON_GetObjectItem(r, "n_items")));
  model_index ix = models_by_name(r);
  leaderboard_table(v, r, &ix);
  comparisons_table(v, r);
  if (!v->summary_only) subsets_table(v, r);  /* (not in the stdout summary) */
  rd_view_warnings_from(v, r);
  if (h5) {
    figure_forest(v, r, &ix);
    figure_heatmap(v, r, &ix);
    figure_matrix(v, r);
  }
  rd_str_index_free(&ix.names);
  free(ix.m);
  return RD_OK;
}
