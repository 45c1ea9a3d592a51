/* probe for readers: accuracy per task (and reward model) against the majority baseline, the grid, inference
 * reliance and the model comparison as tables; the warnings (at or below the baseline, a flat learning-rate
 * grid, and across reports the two training modes disagreeing); the figures of `rmdiag report`. See
 * docs/reference.md, 'Reading reports'. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "probe_internal.h"

/* Accuracy gap between the two training modes on the same tasks that is worth a warning (5 points). */
#define PROBE_MODE_GAP 0.05
#define PROBE_DMIN_BINS 50

/* The per-model blocks of a result: (NULL, result) for one model, else (RM, result.models.RM). */
typedef struct probe_block {
  const char *rm;
  const cJSON *b;
} probe_block;

static int blocks_of(const cJSON *r, probe_block *out, int max) {
  const cJSON *models = cJSON_GetObjectItem(r, "models");
  int n = 0;
  if (!cJSON_IsObject(models)) {
    out[0] = (probe_block){NULL, r};
    return 1;
  }
  for (const cJSON *m = models->child; m && n < max; m = m->next) out[n++] = (probe_block){m->string, m};
  return n;
}

#define PROBE_MAX_BLOCKS 256

static void task_name(const probe_block *b, const char *task, char *buf, size_t n) {
  if (b->rm) snprintf(buf, n, "%s / %s", b->rm, task);
  else snprintf(buf, n, "%s", task);
}

static void warn_task(cJSON *w, const char *mode, const probe_block *b, const cJSON *t) {
  char name[400], msg[1000];
  task_name(b, t->string, name, sizeof name);
  double acc = rd_jnum(cJSON_GetObjectItem(t, "accuracy_mean"));
  double base = rd_jnum(rd_jget(t, "test.majority_baseline"));
  if (acc <= base) {
    snprintf(msg, sizeof msg, "task %s: test accuracy %.3f is at or below the majority baseline %.3f (always predicting "
             "the largest training class): the probe learned nothing usable%s", name, acc, base,
             strcmp(mode, "mrmbench") == 0 ? "; with small features or few rows mode mrmbench can underfit, compare "
             "mode lbfgs" : "");
    cJSON_AddItemToArray(w, cJSON_CreateString(msg));
  }
  const cJSON *grid = cJSON_GetObjectItem(t, "grid");
  if (strcmp(mode, "mrmbench") == 0 && cJSON_GetArraySize(grid) >= 2) {
    double first = rd_jnum(cJSON_GetObjectItem(grid->child, "val_accuracy"));
    int flat = 1;
    for (const cJSON *g = grid->child; g; g = g->next) flat &= rd_jnum(cJSON_GetObjectItem(g, "val_accuracy")) == first;
    if (flat) {
      snprintf(msg, sizeof msg, "task %s: every learning rate of the grid gave the same validation accuracy (%.3f): "
               "the selection fell to the first entry by the tie rule and says nothing about the rate; one epoch at "
               "these rates may not move the head (try larger rates, or mode lbfgs)", name, first);
      cJSON_AddItemToArray(w, cJSON_CreateString(msg));
    }
  }
}

cJSON *probe_warnings(const cJSON *r) {
  cJSON *w = cJSON_CreateArray();
  probe_block bl[PROBE_MAX_BLOCKS];
  int nb = blocks_of(r, bl, PROBE_MAX_BLOCKS);
  const char *mode = rd_jstr(cJSON_GetObjectItem(r, "mode"));
  for (int i = 0; i < nb; i++) {
    const cJSON *tasks = cJSON_GetObjectItem(bl[i].b, "tasks");
    for (const cJSON *t = tasks ? tasks->child : NULL; t; t = t->next) warn_task(w, mode, &bl[i], t);
  }
  return w;
}

/* ---- tables ----------------------------------------------------------------------------------------------- */

static void accuracy_table(rd_view *v, const cJSON *r, const probe_block *bl, int nb) {
  int lb = strcmp(rd_jstr(cJSON_GetObjectItem(r, "mode")), "lbfgs") == 0;
  rd_table *t = rd_view_table(v, "accuracy", "Probe accuracy",
                              "accuracy: test accuracy, mean over seeds [95% t-interval over seeds]; baseline: share of "
                              "test rows in the largest training class; macro-F1: first seed; selected: the grid entry "
                              "with the best mean validation accuracy, and that accuracy");
  t->in_summary = 1;
  if (bl[0].rm) rd_table_col(t, "model", "model", RD_COL_TEXT, 0, NULL);
  rd_table_col(t, "task", "task", RD_COL_TEXT, 0, NULL);
  rd_table_col(t, "accuracy", "accuracy [95% CI]", RD_COL_INTERVAL, 3, NULL);
  rd_table_col(t, "accuracy_sd", "sd", RD_COL_NUM, 4, NULL);
  rd_table_hide_last(t);
  rd_table_col(t, "test_accuracy", "first seed", RD_COL_NUM, 3, NULL);
  rd_table_hide_last(t);
  rd_table_col(t, "majority_baseline", "baseline", RD_COL_NUM, 3, NULL);
  rd_table_col(t, "macro_f1", "macro-F1", RD_COL_NUM, 3, NULL);
  rd_table_col(t, lb ? "l2" : "lr", lb ? "selected l2" : "selected lr", RD_COL_TEXT, 0, NULL);
  rd_table_col(t, "val_accuracy", "val acc", RD_COL_NUM, 3, NULL);
  rd_table_col(t, "n_train", "train", RD_COL_INT, 0, NULL);
  rd_table_col(t, "n_val", "val", RD_COL_INT, 0, NULL);
  rd_table_col(t, "n_test", "test", RD_COL_INT, 0, NULL);
  rd_table_col(t, "near_ties_validation", "near ties (val)", RD_COL_INT, 0, NULL);
  rd_table_hide_last(t);
  rd_table_col(t, "near_ties_test", "near ties (test)", RD_COL_INT, 0, NULL);
  rd_table_hide_last(t);
  int one_seed = 0;
  for (int i = 0; i < nb; i++) {
    const cJSON *tasks = cJSON_GetObjectItem(bl[i].b, "tasks");
    for (const cJSON *k = tasks ? tasks->child : NULL; k; k = k->next) {
      if (bl[i].rm) rd_table_text(t, bl[i].rm);
      rd_table_text(t, k->string);
      rd_table_jci(t, cJSON_GetObjectItem(k, "accuracy_mean"), cJSON_GetObjectItem(k, "accuracy_ci95"));
      one_seed |= !cJSON_IsArray(cJSON_GetObjectItem(k, "accuracy_ci95"));
      rd_table_jnum(t, cJSON_GetObjectItem(k, "accuracy_sd"));
      rd_table_jnum(t, rd_jget(k, "test.accuracy"));
      rd_table_jnum(t, rd_jget(k, "test.majority_baseline"));
      rd_table_jnum(t, rd_jget(k, "test.macro_f1"));
      const cJSON *sel = cJSON_GetObjectItem(cJSON_GetObjectItem(k, "selected"), lb ? "l2" : "lr");
      rd_table_jtext(t, sel);
      double va = NAN;
      for (const cJSON *g = cJSON_GetObjectItem(k, "grid") ? cJSON_GetObjectItem(k, "grid")->child : NULL; g; g = g->next)
        if (rd_jnum(cJSON_GetObjectItem(g, lb ? "l2" : "lr")) == rd_jnum(sel)) {
          va = rd_jnum(cJSON_GetObjectItem(g, "val_accuracy"));
          break;
        }
      rd_table_num(t, va);
      rd_table_jnum(t, cJSON_GetObjectItem(k, "n_train"));
      rd_table_jnum(t, cJSON_GetObjectItem(k, "n_val"));
      rd_table_jnum(t, cJSON_GetObjectItem(k, "n_test"));
      rd_table_jnum(t, rd_jget(k, "near_ties.validation"));
      rd_table_jnum(t, rd_jget(k, "near_ties.test"));
    }
  }
  if (one_seed) rd_table_note(t, "no interval: one seed (mode lbfgs has none)");
  for (int i = 0; i < nb; i++) {
    char lab[300];
    snprintf(lab, sizeof lab, "%s%s", bl[i].rm ? bl[i].rm : "", bl[i].rm ? ": " : "");
    rd_table_note(t, "%saverage accuracy over tasks %.3f", lab, rd_jnum(cJSON_GetObjectItem(bl[i].b, "average")));
  }
}

static void grid_table(rd_view *v, const cJSON *r, const probe_block *bl, int nb) {
  int lb = strcmp(rd_jstr(cJSON_GetObjectItem(r, "mode")), "lbfgs") == 0;
  rd_table *t = rd_view_table(v, "grid", "Validation grid",
                              lb ? "every l2 strength: validation accuracy, L-BFGS iterations, final gradient max-norm "
                                   "and status" : "every learning rate: validation accuracy (mean over seeds)");
  if (bl[0].rm) rd_table_col(t, "model", "model", RD_COL_TEXT, 0, NULL);
  rd_table_col(t, "task", "task", RD_COL_TEXT, 0, NULL);
  rd_table_col(t, lb ? "l2" : "lr", lb ? "l2" : "lr", RD_COL_TEXT, 0, NULL);
  rd_table_col(t, "val_accuracy", "val acc", RD_COL_NUM, 4, NULL);
  if (lb) {
    rd_table_col(t, "iterations", "iterations", RD_COL_INT, 0, NULL);
    rd_table_col(t, "grad_norm", "grad norm", RD_COL_NUM, 12, NULL);
    rd_table_col(t, "status", "status", RD_COL_TEXT, 0, NULL);
  }
  for (int i = 0; i < nb; i++) {
    const cJSON *tasks = cJSON_GetObjectItem(bl[i].b, "tasks");
    for (const cJSON *k = tasks ? tasks->child : NULL; k; k = k->next) {
      const cJSON *grid = cJSON_GetObjectItem(k, "grid");
      for (const cJSON *g = grid ? grid->child : NULL; g; g = g->next) {
        if (bl[i].rm) rd_table_text(t, bl[i].rm);
        rd_table_text(t, k->string);
        rd_table_jtext(t, cJSON_GetObjectItem(g, lb ? "l2" : "lr"));
        rd_table_jnum(t, cJSON_GetObjectItem(g, "val_accuracy"));
        if (lb) {
          rd_table_jnum(t, cJSON_GetObjectItem(g, "iterations"));
          rd_table_jnum(t, cJSON_GetObjectItem(g, "grad_norm"));
          rd_table_jtext(t, cJSON_GetObjectItem(g, "status"));
        }
      }
    }
  }
}

static void inference_table(rd_view *v, const probe_block *bl, int nb) {
  const cJSON *first = NULL;
  for (int i = 0; i < nb && !first; i++)
    if (cJSON_IsObject(cJSON_GetObjectItem(bl[i].b, "inference"))) first = cJSON_GetObjectItem(bl[i].b, "inference");
  if (!first) return;
  rd_table *t = rd_view_table(v, "inference", "Inference reliance",
                              "inference rows whose nearest centroid is within tau (kept), and the share of the kept "
                              "rows nearest to each task's centroids");
  t->in_summary = 1;
  if (bl[0].rm) rd_table_col(t, "model", "model", RD_COL_TEXT, 0, NULL);
  rd_table_col(t, "distance", "distance", RD_COL_TEXT, 0, NULL);
  rd_table_col(t, "tau", "tau", RD_COL_NUM, 4, NULL);
  rd_table_col(t, "n", "rows", RD_COL_INT, 0, NULL);
  rd_table_col(t, "n_kept", "kept", RD_COL_INT, 0, NULL);
  rd_table_col(t, "kept_fraction", "kept share", RD_COL_NUM, 3, "no inference rows (no infer/X)");
  const cJSON *rel = cJSON_GetObjectItem(first, "reliance");
  const cJSON *tasks = cJSON_GetObjectItem(bl[0].b, "tasks");
  for (const cJSON *k = tasks ? tasks->child : NULL; k; k = k->next) {
    char key[300];
    snprintf(key, sizeof key, "reliance_%s", k->string);
    rd_table_col(t, key, k->string, RD_COL_NUM, 3, "nothing kept");
  }
  (void)rel;
  for (int i = 0; i < nb; i++) {
    const cJSON *inf = cJSON_GetObjectItem(bl[i].b, "inference");
    if (!cJSON_IsObject(inf)) continue;
    if (bl[i].rm) rd_table_text(t, bl[i].rm);
    rd_table_jtext(t, cJSON_GetObjectItem(inf, "distance"));
    rd_table_jnum(t, cJSON_GetObjectItem(inf, "tau"));
    rd_table_jnum(t, cJSON_GetObjectItem(inf, "n"));
    rd_table_jnum(t, cJSON_GetObjectItem(inf, "n_kept"));
    rd_table_jnum(t, cJSON_GetObjectItem(inf, "kept_fraction"));
    for (const cJSON *k = tasks ? tasks->child : NULL; k; k = k->next)
      rd_table_jnum(t, cJSON_GetObjectItem(cJSON_GetObjectItem(inf, "reliance"), k->string));
  }
  rd_table_note(t, "tau: %s", rd_jstr(cJSON_GetObjectItem(first, "tau_rule")));
}

static void comparison_table(rd_view *v, const cJSON *r, const probe_block *bl, int nb) {
  const cJSON *cmp = cJSON_GetObjectItem(r, "comparison");
  if (!cJSON_IsObject(cmp)) return;
  rd_table *t = rd_view_table(v, "comparison", "Reward models compared",
                              "mean test accuracy of each reward model per task and on average; ranking: best first");
  t->in_summary = 1;
  rd_table_col(t, "task", "task", RD_COL_TEXT, 0, NULL);
  for (int i = 0; i < nb; i++) rd_table_col(t, bl[i].rm, bl[i].rm, RD_COL_NUM, 3, NULL);
  rd_table_col(t, "ranking", "ranking", RD_COL_TEXT, 0, NULL);
  for (const cJSON *e = cmp->child; e; e = e->next) {
    rd_table_text(t, e->string);
    for (int i = 0; i < nb; i++) rd_table_jnum(t, cJSON_GetObjectItem(cJSON_GetObjectItem(e, "accuracy_mean"), bl[i].rm));
    char rank[1000];
    size_t k = 0;
    rank[0] = '\0';
    const cJSON *rk = cJSON_GetObjectItem(e, "ranking");
    for (const cJSON *x = rk ? rk->child : NULL; x && k < sizeof rank - 260; x = x->next)
      k += (size_t)snprintf(rank + k, sizeof rank - k, "%s%s", x == rk->child ? "" : " > ", rd_jstr(x));
    rd_table_text(t, rank);
  }
}

/* ---- figures ---------------------------------------------------------------------------------------------- */

static void figure_accuracy(rd_view *v, const probe_block *bl, int nb) {
  cJSON *vals = cJSON_CreateArray();
  for (int i = 0; i < nb; i++) {
    const cJSON *tasks = cJSON_GetObjectItem(bl[i].b, "tasks");
    for (const cJSON *k = tasks ? tasks->child : NULL; k; k = k->next) {
      char name[400];
      task_name(&bl[i], k->string, name, sizeof name);
      const cJSON *ci = cJSON_GetObjectItem(k, "accuracy_ci95");
      double acc = rd_jnum(cJSON_GetObjectItem(k, "accuracy_mean"));
      cJSON *o = cJSON_CreateObject();
      cJSON_AddStringToObject(o, "task", name);
      rd_view_put(o, "accuracy", acc);
      rd_view_put(o, "lo", cJSON_IsArray(ci) ? rd_jnum(cJSON_GetArrayItem(ci, 0)) : acc);
      rd_view_put(o, "hi", cJSON_IsArray(ci) ? rd_jnum(cJSON_GetArrayItem(ci, 1)) : acc);
      rd_view_put(o, "baseline", rd_jnum(rd_jget(k, "test.majority_baseline")));
      cJSON_AddItemToArray(vals, o);
    }
  }
  cJSON *spec = rd_json_sq(
      "{'width': 420, 'encoding': {'y': {'field': 'task', 'type': 'nominal', 'sort': null, 'title': null}}, 'layer': ["
      "{'mark': {'type': 'tick', 'color': '#d62728', 'thickness': 2, 'size': 18}, 'encoding': {'x': {'field': "
      "'baseline', 'type': 'quantitative', 'title': 'test accuracy', 'scale': {'domain': [0, 1]}}}},"
      "{'mark': 'rule', 'encoding': {'x': {'field': 'lo', 'type': 'quantitative'}, 'x2': {'field': 'hi'}}},"
      "{'mark': {'type': 'point', 'filled': true, 'size': 70, 'tooltip': true}, 'encoding': {'x': {'field': "
      "'accuracy', 'type': 'quantitative'}}}]}");
  rd_view_figure(v, "accuracy", "Accuracy against the majority baseline",
                 "Mean test accuracy of each task's probe (point) with its 95% t-interval over seeds (no interval with "
                 "one seed); the red tick is the majority baseline, the accuracy of always predicting the largest "
                 "training class. A point at or left of its tick learned nothing usable.",
                 rd_view_values(spec, vals));
}

static void figure_grid(rd_view *v, const cJSON *r, const probe_block *bl, int nb) {
  int lb = strcmp(rd_jstr(cJSON_GetObjectItem(r, "mode")), "lbfgs") == 0;
  cJSON *vals = cJSON_CreateArray();
  for (int i = 0; i < nb; i++) {
    const cJSON *tasks = cJSON_GetObjectItem(bl[i].b, "tasks");
    for (const cJSON *k = tasks ? tasks->child : NULL; k; k = k->next) {
      char name[400];
      task_name(&bl[i], k->string, name, sizeof name);
      double sel = rd_jnum(cJSON_GetObjectItem(cJSON_GetObjectItem(k, "selected"), lb ? "l2" : "lr"));
      const cJSON *grid = cJSON_GetObjectItem(k, "grid");
      for (const cJSON *g = grid ? grid->child : NULL; g; g = g->next) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "task", name);
        double x = rd_jnum(cJSON_GetObjectItem(g, lb ? "l2" : "lr"));
        rd_view_put(o, "x", x);
        rd_view_put(o, "val_accuracy", rd_jnum(cJSON_GetObjectItem(g, "val_accuracy")));
        cJSON_AddBoolToObject(o, "selected", x == sel);
        cJSON_AddItemToArray(vals, o);
      }
    }
  }
  cJSON *spec = rd_json_sq(
      "{'width': 420, 'height': 220, 'layer': ["
      "{'mark': {'type': 'line', 'point': true, 'tooltip': true}, 'encoding': {'x': {'field': 'x', 'type': "
      "'quantitative', 'scale': {'type': 'symlog', 'constant': 1e-6}, 'title': 'X'}, 'y': {'field': 'val_accuracy', "
      "'type': 'quantitative', 'title': 'validation accuracy'}, 'color': {'field': 'task', 'type': 'nominal'}}},"
      "{'transform': [{'filter': 'datum.selected'}], 'mark': {'type': 'point', 'size': 160, 'shape': 'diamond', "
      "'filled': false, 'strokeWidth': 2}, 'encoding': {'x': {'field': 'x', 'type': 'quantitative'}, 'y': {'field': "
      "'val_accuracy', 'type': 'quantitative'}, 'color': {'field': 'task', 'type': 'nominal'}}}]}");
  cJSON *x = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(spec, "layer"), 0),
                                                     "encoding"), "x");
  /* a log axis unless some l2 is 0 (then symlog, which shows 0) */
  int positive = 1;
  for (const cJSON *e = vals->child; e; e = e->next) positive &= rd_jnum(cJSON_GetObjectItem(e, "x")) > 0;
  cJSON_SetValuestring(cJSON_GetObjectItem(cJSON_GetObjectItem(x, "scale"), "type"), positive ? "log" : "symlog");
  if (positive) cJSON_DeleteItemFromObject(cJSON_GetObjectItem(x, "scale"), "constant");
  cJSON_SetValuestring(cJSON_GetObjectItem(x, "title"), lb ? "l2 strength" : "learning rate");
  rd_view_figure(v, "validation_curves", "Validation curves",
                 lb ? "Validation accuracy for every l2 strength of the grid, per task; the diamond marks the selected "
                      "entry (best validation accuracy, ties to the first)."
                    : "Validation accuracy (mean over seeds) for every learning rate of the grid, per task; the diamond "
                      "marks the selected rate. A flat curve means the grid did not discriminate (see warnings).",
                 rd_view_values(spec, vals));
}

static void figure_confusion(rd_view *v, const probe_block *bl, int nb) {
  cJSON *vals = cJSON_CreateArray();
  for (int i = 0; i < nb; i++) {
    const cJSON *tasks = cJSON_GetObjectItem(bl[i].b, "tasks");
    for (const cJSON *k = tasks ? tasks->child : NULL; k; k = k->next) {
      char name[400];
      task_name(&bl[i], k->string, name, sizeof name);
      const cJSON *conf = rd_jget(k, "test.confusion");
      int a = 0;
      for (const cJSON *row = conf ? conf->child : NULL; row; row = row->next, a++) {
        int b = 0;
        for (const cJSON *c = row->child; c; c = c->next, b++) {
          cJSON *o = cJSON_CreateObject();
          cJSON_AddStringToObject(o, "task", name);
          rd_view_put(o, "true", a);
          rd_view_put(o, "predicted", b);
          rd_view_put(o, "n", rd_jnum(c));
          cJSON_AddItemToArray(vals, o);
        }
      }
    }
  }
  cJSON *spec = rd_json_sq(
      "{'facet': {'field': 'task', 'type': 'nominal', 'sort': null, 'title': null}, 'columns': 3, "
      "'resolve': {'scale': {'color': 'independent', 'x': 'independent', 'y': 'independent'}}, "
      "'spec': {'width': 150, 'height': 150, "
      "'encoding': {'x': {'field': 'predicted', 'type': 'ordinal', 'title': 'predicted class'}, 'y': {'field': 'true', "
      "'type': 'ordinal', 'title': 'true class'}}, 'layer': ["
      "{'mark': 'rect', 'encoding': {'color': {'field': 'n', 'type': 'quantitative', 'scale': {'scheme': 'blues'}, "
      "'legend': null}}}, {'mark': {'type': 'text'}, 'encoding': {'text': {'field': 'n', 'type': 'quantitative'}}}]}}");
  rd_view_figure(v, "confusion", "Confusion matrices",
                 "Test rows of each task by true class (rows) and predicted class (columns), selected grid entry, first "
                 "seed; classes numbered in the order of the job's class lists.",
                 rd_view_values(spec, vals));
}

static void figure_reliance(rd_view *v, const probe_block *bl, int nb) {
  cJSON *vals = cJSON_CreateArray();
  int any = 0;
  for (int i = 0; i < nb; i++) {
    const cJSON *rel = rd_jget(bl[i].b, "inference.reliance");
    for (const cJSON *x = cJSON_IsObject(rel) ? rel->child : NULL; x; x = x->next) {
      cJSON *o = cJSON_CreateObject();
      cJSON_AddStringToObject(o, "model", bl[i].rm ? bl[i].rm : "reward model");
      cJSON_AddStringToObject(o, "task", x->string);
      rd_view_put(o, "reliance", rd_jnum(x));
      cJSON_AddItemToArray(vals, o);
      any = 1;
    }
  }
  if (!any) {
    cJSON_Delete(vals);
    return;
  }
  cJSON *spec = rd_json_sq(
      "{'width': 360, 'mark': {'type': 'bar', 'tooltip': true}, 'encoding': {'y': {'field': 'model', 'type': "
      "'nominal', 'title': null}, 'x': {'field': 'reliance', 'type': 'quantitative', 'stack': 'normalize', 'title': "
      "'share of the kept inference rows'}, 'color': {'field': 'task', 'type': 'nominal'}}}");
  rd_view_figure(v, "reliance", "Inference reliance",
                 "Of the inference rows kept (nearest centroid within tau), the share nearest to each task's "
                 "centroids: which preference dimensions the reward model's inputs resemble.",
                 rd_view_values(spec, vals));
}

static int figure_dmin(rd_view *v, const probe_block *bl, int nb, const char *h5, rd_status *st) {
  for (int i = 0; i < nb; i++) {
    const cJSON *inf = cJSON_GetObjectItem(bl[i].b, "inference");
    if (!cJSON_IsObject(inf) || !(rd_jnum(cJSON_GetObjectItem(inf, "n")) > 0)) continue;
    char path[400];
    snprintf(path, sizeof path, "/probe%s%s/infer/d_min", bl[i].rm ? "/" : "", bl[i].rm ? bl[i].rm : "");
    int64_t n;
    double *d = rd_view_column(h5, path, &n, st);
    if (!d) return st->code;
    double lo, hi, tau = rd_jnum(cJSON_GetObjectItem(inf, "tau"));
    rd_view_range(d, n, &lo, &hi);
    if (tau > hi) hi = tau;
    if (tau < lo) lo = tau;
    cJSON *spec = rd_json_sq(
        "{'width': 420, 'height': 200, 'layer': ["
        "{'mark': {'type': 'rect', 'tooltip': true}, 'encoding': {'x': {'field': 'x0', 'type': 'quantitative', "
        "'title': 'distance to the nearest centroid'}, 'x2': {'field': 'x1'}, 'y': {'field': 'n', 'type': "
        "'quantitative', 'title': 'inference rows'}}},"
        "{'data': {'values': [{'tau': 0}]}, 'mark': {'type': 'rule', 'color': '#d62728', 'strokeWidth': 2}, "
        "'encoding': {'x': {'field': 'tau', 'type': 'quantitative'}}}]}");
    cJSON *layers = cJSON_GetObjectItem(spec, "layer");
    rd_view_values(cJSON_GetArrayItem(layers, 0), rd_view_hist(d, n, PROBE_DMIN_BINS, lo, hi));
    cJSON *tv = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetArrayItem(layers, 1), "data"),
                                                       "values"), 0);
    cJSON_ReplaceItemInObject(tv, "tau", cJSON_CreateNumber(tau));
    char name[300], title[300];
    snprintf(name, sizeof name, "d_min%s%s", bl[i].rm ? "_" : "", bl[i].rm ? bl[i].rm : "");
    snprintf(title, sizeof title, "Distance to the nearest centroid%s%s", bl[i].rm ? ", " : "", bl[i].rm ? bl[i].rm : "");
    rd_view_figure(v, name, title,
                   "Histogram of d_min, each inference row's distance to its nearest task centroid (50 bins); rows left "
                   "of the red line (tau) are kept and count toward the reliance.",
                   spec);
    free(d);
  }
  return RD_OK;
}

int probe_view(const cJSON *report, const char *h5, rd_view *v, rd_status *st) {
  const cJSON *r = cJSON_GetObjectItem(report, "result");
  if (!cJSON_IsString(cJSON_GetObjectItem(r, "mode")))
    return rd_fail(st, RD_EINPUT, "the probe report has no result.mode (not a probe report of this version?)");
  probe_block bl[PROBE_MAX_BLOCKS];
  int nb = blocks_of(r, bl, PROBE_MAX_BLOCKS);
  const cJSON *tasks = cJSON_GetObjectItem(bl[0].b, "tasks");
  rd_view_heading(v, "probe %s: mode %s, %d task%s%s%d reward model%s", rd_jstr(rd_jget(report, "rmdiag.job")),
                  rd_jstr(cJSON_GetObjectItem(r, "mode")), cJSON_GetArraySize(tasks),
                  cJSON_GetArraySize(tasks) == 1 ? "" : "s", ", ", nb, nb == 1 ? "" : "s");
  accuracy_table(v, r, bl, nb);
  comparison_table(v, r, bl, nb);
  inference_table(v, bl, nb);
  grid_table(v, r, bl, nb);
  rd_view_warnings_from(v, r);
  if (!h5) return RD_OK;
  figure_accuracy(v, bl, nb);
  figure_grid(v, r, bl, nb);
  figure_confusion(v, bl, nb);
  figure_reliance(v, bl, nb);
  return figure_dmin(v, bl, nb, h5, st);
}

/* ---- across reports: the two training modes on the same features ---------------------------------------- */

/* Same input file, group and task classes: the reports probe the same features. */
static int same_features(const cJSON *a, const cJSON *b, const char *task) {
  const cJSON *ia = cJSON_GetArrayItem(rd_jget(a, "rmdiag.inputs"), 0), *ib = cJSON_GetArrayItem(rd_jget(b, "rmdiag.inputs"), 0);
  if (strcmp(rd_jstr(cJSON_GetObjectItem(ia, "path")), rd_jstr(cJSON_GetObjectItem(ib, "path"))) ||
      strcmp(rd_jstr(cJSON_GetObjectItem(ia, "group")), rd_jstr(cJSON_GetObjectItem(ib, "group"))))
    return 0;
  const cJSON *ta = cJSON_GetObjectItem(rd_jget(a, "rmdiag.options.tasks"), task);
  const cJSON *tb = cJSON_GetObjectItem(rd_jget(b, "rmdiag.options.tasks"), task);
  return ta && tb && cJSON_Compare(ta, tb, 1);
}

void probe_compare(const cJSON *const *reports, int n, rd_view *v) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      const cJSON *a = reports[i], *b = reports[j];
      if (strcmp(rd_jstr(rd_jget(a, "result.mode")), "mrmbench") || strcmp(rd_jstr(rd_jget(b, "result.mode")), "lbfgs"))
        continue;
      probe_block ba[PROBE_MAX_BLOCKS], bb[PROBE_MAX_BLOCKS];
      int na = blocks_of(cJSON_GetObjectItem(a, "result"), ba, PROBE_MAX_BLOCKS);
      int nbb = blocks_of(cJSON_GetObjectItem(b, "result"), bb, PROBE_MAX_BLOCKS);
      for (int x = 0; x < na; x++)
        for (int y = 0; y < nbb; y++) {
          if ((ba[x].rm || bb[y].rm) && (!ba[x].rm || !bb[y].rm || strcmp(ba[x].rm, bb[y].rm))) continue;
          const cJSON *ta = cJSON_GetObjectItem(ba[x].b, "tasks");
          for (const cJSON *t = ta ? ta->child : NULL; t; t = t->next) {
            const cJSON *u = cJSON_GetObjectItem(cJSON_GetObjectItem(bb[y].b, "tasks"), t->string);
            if (!u || !same_features(a, b, t->string)) continue;
            double p = rd_jnum(cJSON_GetObjectItem(t, "accuracy_mean")), q = rd_jnum(cJSON_GetObjectItem(u, "accuracy_mean"));
            if (fabs(p - q) > PROBE_MODE_GAP) {
              char name[400];
              task_name(&ba[x], t->string, name, sizeof name);
              rd_view_warn(v, "task %s: mode mrmbench (%s) reaches %.3f and mode lbfgs (%s) %.3f on the same features: "
                           "a gap above %.2f means one of them under- or overfits; do not compare either with "
                           "published numbers without checking", name, rd_jstr(rd_jget(a, "rmdiag.job")), p,
                           rd_jstr(rd_jget(b, "rmdiag.job")), q, PROBE_MODE_GAP);
            }
          }
        }
      /* several reward models: do the two modes rank them alike? */
      const cJSON *ra = rd_jget(a, "result.comparison.average.ranking"), *rb = rd_jget(b, "result.comparison.average.ranking");
      if (cJSON_IsArray(ra) && cJSON_IsArray(rb) && !cJSON_Compare(ra, rb, 1))
        rd_view_warn(v, "the reward models rank differently on average under mode mrmbench (%s) and mode lbfgs (%s): "
                     "the ranking depends on the training procedure", rd_jstr(rd_jget(a, "rmdiag.job")),
                     rd_jstr(rd_jget(b, "rmdiag.job")));
    }
}
