/* probe: the job options (one table: parsing, effective options, `rmdiag help probe`). Each mode's
 * options take their defaults when absent; those of the other mode are refused when given (the
 * `mode` row) and left out of the effective options. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe_internal.h"
#include "rmdiag/common/jsonutil.h"
#include "rmdiag/common/names.h"

static const char *const probe_modes[] = {"mrmbench", "lbfgs", NULL};
static const char *const probe_inits[] = {"kaiming", "zeros", NULL};
static const char *const probe_distances[] = {"euclidean", "cosine", "mahalanobis", NULL};
/* the options that belong to one mode (refused in the other, absent from its effective options) */
static const char *const mrmbench_only[] = {"lr_grid", "seeds", "init", NULL};
static const char *const lbfgs_only[] = {"l2_grid", "standardize", "tol", "max_iter", NULL};

void probe_free_opts(void *p) {
  probe_opts *o = p;
  if (!o) return;
  for (int t = 0; o->tasks && t < o->n_tasks; t++) {
    for (int c = 0; c < o->tasks[t].n_classes; c++) free(o->tasks[t].class_labels[c]);
    free(o->tasks[t].class_labels);
    free(o->tasks[t].class_len);
  }
  free(o->tasks);
  free(o->models);
  free(o->lr_grid);
  free(o->l2_grid);
  free(o->seeds);
  free(o);
}

/* ---- tasks and models ------------------------------------------------------------------------ */

/* The raw labels of one class: classes[k] of task `to`, each label once across the task's classes. */
static int parse_class(const cJSON *cls, int k, probe_task_opt *to, cJSON *eff_classes, const rd_where *tw,
                       rd_status *st) {
  if (!cJSON_IsArray(cls) || cJSON_GetArraySize(cls) == 0)
    return rd_fail(st, RD_EINPUT, "%s: classes[%d] must be a non-empty list of integer labels", tw->path, k);
  to->class_len[k] = cJSON_GetArraySize(cls);
  to->class_labels[k] = malloc(sizeof(int64_t) * (size_t)to->class_len[k]);
  if (!to->class_labels[k]) return rd_fail(st, RD_EFAIL, "out of memory");
  cJSON *el = cJSON_CreateArray();
  cJSON_AddItemToArray(eff_classes, el);
  int j = 0;
  for (const cJSON *lab = cls->child; lab; lab = lab->next, j++) {
    if (!rd_json_is_int(lab, 0, 9007199254740991LL))
      return rd_fail(st, RD_EINPUT, "%s: classes[%d][%d] must be a non-negative integer label (-1 means missing)",
                     tw->path, k, j);
    int64_t val = (int64_t)lab->valuedouble;  /* (each label once: checked by first_repeated_label) */
    to->class_labels[k][j] = val;
    cJSON_AddItemToArray(el, cJSON_CreateNumber((double)val));
  }
  return RD_OK;
}

/* The first label of a task's class lists (in order) that repeats an earlier one, looking only as
 * far as parse_class would get without another error (a class that is not a non-empty list, a label
 * that is not a non-negative integer): 1 and *val when there is one. Sorting keeps it O(n log n). */
static int first_repeated_label(const cJSON *cl, int64_t *val, rd_status *st) {
  int64_t n = 0, m = 0, first = 0;
  for (const cJSON *cls = cl->child; cls; cls = cls->next) n += cJSON_GetArraySize(cls);
  int64_t *v = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
  if (!v) return rd_fail(st, RD_EFAIL, "out of memory");
  for (const cJSON *cls = cl->child; cls; cls = cls->next) {
    if (!cJSON_IsArray(cls) || !cls->child) break;
    const cJSON *lab = cls->child;
    for (; lab && rd_json_is_int(lab, 0, 9007199254740991LL); lab = lab->next) v[m++] = (int64_t)lab->valuedouble;
    if (lab) break;
  }
  int64_t at = rd_first_duplicate_i64(v, m, &first);
  if (at >= 0) *val = v[at];
  free(v);
  return at >= 0;
}

/* One entry of "tasks": its name (a group name, once, not "infer") and {"classes": [[...], ...]};
 * `repeated`: its name is that of an earlier task. */
static int parse_task(const cJSON *c, int repeated, probe_task_opt *to, cJSON *eff_tasks, const rd_where *w,
                      rd_status *st) {
  to->name = c->string;
  rd_where tw = *w;
  snprintf(tw.path, sizeof tw.path, "%.500s: tasks.%.100s", w->path, c->string);
  if (repeated) return rd_fail(st, RD_EINPUT, "%s: task \"%s\" appears twice", w->path, c->string);
  if (!rd_name_valid(c->string) || strcmp(c->string, "infer") == 0)
    return rd_fail(st, RD_EINPUT, "%s: task name \"%s\" must be letters, digits, '.', '_' or '-' (not \"infer\")",
                   w->path, c->string);
  if (!cJSON_IsObject(c)) return rd_fail(st, RD_EINPUT, "%s must be an object {\"classes\": [[...], ...]}", tw.path);
  static const char *const tkeys[] = {"classes", NULL};
  RD_TRY(rd_opt_keys(c, tkeys, &tw, st));
  const cJSON *cl = cJSON_GetObjectItemCaseSensitive(c, "classes");
  if (!cl || !cJSON_IsArray(cl) || cJSON_GetArraySize(cl) < 2)
    return rd_fail(st, RD_EINPUT, "%s: \"classes\" must list at least 2 classes, each a list of raw labels", tw.path);
  to->n_classes = cJSON_GetArraySize(cl);
  if (to->n_classes > 100) return rd_fail(st, RD_EINPUT, "%s: at most 100 classes", tw.path);
  to->class_len = calloc((size_t)to->n_classes, sizeof(int));
  to->class_labels = calloc((size_t)to->n_classes, sizeof(int64_t *));
  if (!to->class_len || !to->class_labels) return rd_fail(st, RD_EFAIL, "out of memory");
  cJSON *ec = cJSON_CreateArray();
  cJSON *eo = cJSON_CreateObject();
  cJSON_AddItemToObject(eo, "classes", ec);
  cJSON_AddItemToObject(eff_tasks, c->string, eo);
  int64_t val = 0;
  int rep = first_repeated_label(cl, &val, st);
  if (rep < 0 || st->code != RD_OK) return st->code;
  if (rep) return rd_fail(st, RD_EINPUT, "%s: label %lld appears twice in the class lists", tw.path, (long long)val);
  int k = 0;
  for (const cJSON *cls = cl->child; cls; cls = cls->next, k++) RD_TRY(parse_class(cls, k, to, ec, &tw, st));
  return RD_OK;
}

static int parse_tasks(const cJSON *v, void *field, void *opts, cJSON *eff, const rd_where *w, rd_status *st) {
  (void)field;
  probe_opts *o = opts;
  if (!v) return rd_fail(st, RD_EINPUT, "%s: missing required key \"tasks\" ({TASK: {\"classes\": [[...], ...]}}; "
                         "`rmdiag init probe INPUT.h5` writes the tasks and classes the input has)", w->path);
  if (!cJSON_IsObject(v) || cJSON_GetArraySize(v) == 0)
    return rd_fail(st, RD_EINPUT, "%s: \"tasks\" must be a non-empty object {TASK: {\"classes\": [[...], ...]}}",
                   w->path);
  o->n_tasks = cJSON_GetArraySize(v);
  o->tasks = calloc((size_t)o->n_tasks, sizeof *o->tasks);
  if (!o->tasks) return rd_fail(st, RD_EFAIL, "out of memory");
  cJSON *et = cJSON_AddObjectToObject(eff, "tasks");
  const char **names = malloc(sizeof(char *) * (size_t)o->n_tasks);
  if (!names) return rd_fail(st, RD_EFAIL, "out of memory");
  int t = 0;
  for (const cJSON *c = v->child; c; c = c->next) names[t++] = c->string;
  int64_t first = 0, repeated = rd_first_duplicate(names, o->n_tasks, &first);
  free(names);
  t = 0;
  for (const cJSON *c = v->child; c; c = c->next, t++) RD_TRY(parse_task(c, t == repeated, &o->tasks[t], et, w, st));
  return RD_OK;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* "models": distinct group names, none "infer" or a task name (tasks are parsed first). */
static int parse_models(const cJSON *v, void *field, void *opts, cJSON *eff, const rd_where *w, rd_status *st) {
  (void)field;
  probe_opts *o = opts;
  if (!v) return RD_OK;
  if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) == 0)
    return rd_fail(st, RD_EINPUT, "%s: \"models\" must be a non-empty list of reward-model group names", w->path);
  o->n_models = cJSON_GetArraySize(v);
  o->models = calloc((size_t)o->n_models, sizeof(char *));
  if (!o->models) return rd_fail(st, RD_EFAIL, "out of memory");
  cJSON *em = cJSON_AddArrayToObject(eff, "models");
  /* the repeated model and the task names found by sorting (lists of any length stay quick) */
  const char **given = malloc(sizeof(char *) * (size_t)o->n_models);
  const char **tasks = malloc(sizeof(char *) * (size_t)(o->n_tasks ? o->n_tasks : 1));
  if (!given || !tasks) {
    free(given), free(tasks);
    return rd_fail(st, RD_EFAIL, "out of memory");
  }
  int i = 0;
  for (const cJSON *c = v->child; c; c = c->next) given[i++] = cJSON_IsString(c) ? c->valuestring : NULL;
  int64_t first = 0, repeated = rd_first_duplicate(given, o->n_models, &first);
  for (int t = 0; t < o->n_tasks; t++) tasks[t] = o->tasks[t].name;
  qsort(tasks, (size_t)o->n_tasks, sizeof *tasks, cmp_str);
  i = 0;
  for (const cJSON *c = v->child; c && st->code == RD_OK; c = c->next, i++) {
    if (!cJSON_IsString(c) || !rd_name_valid(c->valuestring) || strcmp(c->valuestring, "infer") == 0)
      rd_fail(st, RD_EINPUT, "%s: models[%d] must be a group name (letters, digits, '.', '_', '-')", w->path, i);
    else if (i == repeated)
      rd_fail(st, RD_EINPUT, "%s: models[%d] = \"%s\" appears twice", w->path, i, c->valuestring);
    else if (bsearch(&c->valuestring, tasks, (size_t)o->n_tasks, sizeof *tasks, cmp_str))
      rd_fail(st, RD_EINPUT, "%s: models[%d] = \"%s\" is also a task name", w->path, i, c->valuestring);
    if (st->code != RD_OK) break;
    o->models[i] = c->valuestring;
    cJSON_AddItemToArray(em, cJSON_CreateString(c->valuestring));
  }
  free(given), free(tasks);
  return st->code;
}

/* ---- mode and the per-mode lists ------------------------------------------------------------- */

static int parse_mode(const cJSON *v, void *field, void *opts, cJSON *eff, const rd_where *w, rd_status *st) {
  (void)v;
  (void)field;
  probe_opts *o = opts;
  const char *mode = NULL;
  RD_TRY(rd_opt_string(o->spec, "mode", "mrmbench", probe_modes, &mode, w, st));
  o->mode = strcmp(mode, "lbfgs") == 0 ? PROBE_LBFGS : PROBE_MRMBENCH;
  cJSON_AddStringToObject(eff, "mode", mode);
  /* options of the other mode are errors, not silently ignored */
  for (const char *const *k = o->mode == PROBE_LBFGS ? mrmbench_only : lbfgs_only; *k; k++)
    if (cJSON_GetObjectItemCaseSensitive(o->spec, *k))
      return rd_fail(st, RD_EINPUT, "%s: \"%s\" applies to mode \"%s\", not \"%s\"", w->path, *k,
                     o->mode == PROBE_LBFGS ? "mrmbench" : "lbfgs", mode);
  return RD_OK;
}

/* A grid: 1 to 64 finite numbers, positive or non-negative; `def` (3 entries) when absent. */
static int parse_grid(const cJSON *v, const char *key, int positive, const double def[3], double **out, int *n,
                      cJSON *eff, const rd_where *w, rd_status *st) {
  if (!v) {
    *n = 3;
    *out = malloc(sizeof(double) * 3);
    if (!*out) return rd_fail(st, RD_EFAIL, "out of memory");
    memcpy(*out, def, sizeof(double) * 3);
  } else {
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) == 0)
      return rd_fail(st, RD_EINPUT, "%s: \"%s\" must be a non-empty list of numbers", w->path, key);
    *n = cJSON_GetArraySize(v);
    if (*n > 64) return rd_fail(st, RD_EINPUT, "%s: \"%s\" has %d entries (at most 64)", w->path, key, *n);
    *out = malloc(sizeof(double) * (size_t)*n);
    if (!*out) return rd_fail(st, RD_EFAIL, "out of memory");
    int i = 0;
    for (const cJSON *c = v->child; c; c = c->next, i++) {
      if (!cJSON_IsNumber(c) || !isfinite(c->valuedouble) || (positive ? c->valuedouble <= 0 : c->valuedouble < 0))
        return rd_fail(st, RD_EINPUT, "%s: \"%s\"[%d] must be a %s number", w->path, key, i,
                       positive ? "positive" : "non-negative");
      (*out)[i] = c->valuedouble;
    }
  }
  cJSON_AddItemToObject(eff, key, cJSON_CreateDoubleArray(*out, *n));
  return RD_OK;
}

static int parse_lr_grid(const cJSON *v, void *field, void *opts, cJSON *eff, const rd_where *w, rd_status *st) {
  (void)field;
  probe_opts *o = opts;
  static const double def[3] = {5e-5, 2e-5, 1e-5};
  return parse_grid(v, "lr_grid", 1, def, &o->lr_grid, &o->n_lr, eff, w, st);
}

static int parse_l2_grid(const cJSON *v, void *field, void *opts, cJSON *eff, const rd_where *w, rd_status *st) {
  (void)field;
  probe_opts *o = opts;
  static const double def[3] = {1e-4, 1e-3, 1e-2};
  return parse_grid(v, "l2_grid", 0, def, &o->l2_grid, &o->n_l2, eff, w, st);
}

/* "seeds": 1 to 1000 distinct non-negative integers; [0] when absent (and in lbfgs mode, whose one
 * deterministic fit has no seed). */
static int parse_seeds(const cJSON *v, void *field, void *opts, cJSON *eff, const rd_where *w, rd_status *st) {
  (void)field;
  probe_opts *o = opts;
  if (v) {
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) == 0 || cJSON_GetArraySize(v) > 1000)
      return rd_fail(st, RD_EINPUT, "%s: \"seeds\" must be a list of 1 to 1000 non-negative integers", w->path);
    o->n_seeds = cJSON_GetArraySize(v);
    o->seeds = malloc(sizeof(int64_t) * (size_t)o->n_seeds);
    if (!o->seeds) return rd_fail(st, RD_EFAIL, "out of memory");
    int i = 0;
    for (const cJSON *c = v->child; c; c = c->next, i++) {
      if (!rd_json_is_int(c, 0, 9007199254740991LL))
        return rd_fail(st, RD_EINPUT, "%s: seeds[%d] must be a non-negative integer", w->path, i);
      o->seeds[i] = (int64_t)c->valuedouble;
      for (int k = 0; k < i; k++)
        if (o->seeds[k] == o->seeds[i])
          return rd_fail(st, RD_EINPUT, "%s: seeds[%d] = %lld appears twice", w->path, i, (long long)o->seeds[i]);
    }
  } else {
    o->n_seeds = 1;
    o->seeds = calloc(1, sizeof(int64_t));
    if (!o->seeds) return rd_fail(st, RD_EFAIL, "out of memory");
  }
  cJSON *es = cJSON_AddArrayToObject(eff, "seeds");
  for (int i = 0; i < o->n_seeds; i++) cJSON_AddItemToArray(es, cJSON_CreateNumber((double)o->seeds[i]));
  return RD_OK;
}

/* ---- kmeans ---------------------------------------------------------------------------------- */

/* "tau": a fixed non-negative number, or {"quantile": q} with 0 <= q <= 1. */
static int parse_tau(const cJSON *tau, probe_opts *o, const rd_where *kw, rd_status *st) {
  if (cJSON_IsNumber(tau)) {
    if (!isfinite(tau->valuedouble) || tau->valuedouble < 0)
      return rd_fail(st, RD_EINPUT, "%s: \"tau\" must be a non-negative number or {\"quantile\": q}", kw->path);
    o->tau_quantile = 0;
    o->tau = tau->valuedouble;
    return RD_OK;
  }
  if (!cJSON_IsObject(tau))
    return rd_fail(st, RD_EINPUT, "%s: \"tau\" must be a non-negative number or {\"quantile\": q}", kw->path);
  static const char *const qkeys[] = {"quantile", NULL};
  rd_where qw = *kw;
  snprintf(qw.path, sizeof qw.path, "%.600s.tau", kw->path);
  RD_TRY(rd_opt_keys(tau, qkeys, &qw, st));
  if (!cJSON_GetObjectItemCaseSensitive(tau, "quantile"))
    return rd_fail(st, RD_EINPUT, "%s: missing \"quantile\"", qw.path);
  return rd_opt_double(tau, "quantile", 0.95, 0.0, 1.0, &o->tau, &qw, st);
}

/* The keys of a "kmeans" object (`k` may be an empty object: every default). */
static int parse_kmeans_keys(const cJSON *k, probe_opts *o, const rd_where *kw, rd_status *st) {
  static const char *const kkeys[] = {"k_per_class", "iters", "distance", "tau", NULL};
  const char *dist = "euclidean";
  RD_TRY(rd_opt_keys(k, kkeys, kw, st));
  RD_TRY(rd_opt_int(k, "k_per_class", 1, 1, 100000, &o->k_per_class, kw, st));
  RD_TRY(rd_opt_int(k, "iters", 50, 1, 100000000, &o->km_iters, kw, st));
  RD_TRY(rd_opt_string(k, "distance", "euclidean", probe_distances, &dist, kw, st));
  const cJSON *tau = cJSON_GetObjectItemCaseSensitive(k, "tau");
  if (tau) RD_TRY(parse_tau(tau, o, kw, st));
  o->distance = strcmp(dist, "cosine") == 0 ? DIST_COSINE : strcmp(dist, "mahalanobis") == 0 ? DIST_MAHALANOBIS
                                                                                              : DIST_EUCLIDEAN;
  return RD_OK;
}

/* Effective "kmeans": false, or all four keys (tau as a number or {"quantile": q}). */
static void kmeans_effective(const probe_opts *o, cJSON *eff) {
  if (!o->kmeans) {
    cJSON_AddFalseToObject(eff, "kmeans");
    return;
  }
  cJSON *ek = cJSON_AddObjectToObject(eff, "kmeans");
  cJSON_AddNumberToObject(ek, "k_per_class", (double)o->k_per_class);
  cJSON_AddNumberToObject(ek, "iters", (double)o->km_iters);
  cJSON_AddStringToObject(ek, "distance", probe_distances[o->distance]);
  if (o->tau_quantile) {
    cJSON *q = cJSON_AddObjectToObject(ek, "tau");
    cJSON_AddNumberToObject(q, "quantile", o->tau);
  } else {
    cJSON_AddNumberToObject(ek, "tau", o->tau);
  }
}

static int parse_kmeans(const cJSON *km, void *field, void *opts, cJSON *eff, const rd_where *w, rd_status *st) {
  (void)field;
  probe_opts *o = opts;
  o->kmeans = 1;
  o->k_per_class = 1;
  o->km_iters = 50;
  o->distance = DIST_EUCLIDEAN;
  o->tau_quantile = 1;
  o->tau = 0.95;
  if (km && cJSON_IsFalse(km)) {
    o->kmeans = 0;
  } else {
    if (km && !cJSON_IsObject(km))
      return rd_fail(st, RD_EINPUT, "%s: \"kmeans\" must be an object {\"k_per_class\", \"iters\", \"distance\", "
                     "\"tau\"} or false", w->path);
    rd_where kw = *w;
    snprintf(kw.path, sizeof kw.path, "%.600s: kmeans", w->path);
    cJSON *empty = km ? NULL : cJSON_CreateObject();
    int rc = parse_kmeans_keys(km ? km : empty, o, &kw, st);
    cJSON_Delete(empty);
    RD_TRY(rc);
  }
  kmeans_effective(o, eff);
  return RD_OK;
}

/* ---- the table ------------------------------------------------------------------------------- */

/* Rows in the order of the effective options (the report's "options"). */
const rd_option probe_options[] = {
    RD_OPTION_CUSTOM("tasks", probe_opts, tasks, parse_tasks, "object {TASK: {\"classes\": [[LABEL, ...], ...]}}",
                     "required", "per task 2 to 100 classes, each a list of raw integer labels; rows under GROUP/TASK"),
    RD_OPTION_CUSTOM("models", probe_opts, models, parse_models, "list of group names", "none",
                     "several reward models, compared per task: rows under GROUP/RM/TASK"),
    RD_OPTION_CUSTOM("mode", probe_opts, mode, parse_mode, "\"mrmbench\" or \"lbfgs\"", "\"mrmbench\"",
                     "MRMBench's AdamW probes, or logistic regression fitted to convergence by L-BFGS"),
    RD_OPTION_CUSTOM("lr_grid", probe_opts, lr_grid, parse_lr_grid, "list of 1 to 64 positive numbers",
                     "[5e-5, 2e-5, 1e-5]", "mrmbench: learning rates, selected on mean validation accuracy"),
    RD_OPTION_CUSTOM("seeds", probe_opts, seeds, parse_seeds, "list of 1 to 1000 distinct integers >= 0", "[0]",
                     "mrmbench: seeds of batch order and initialisation"),
    RD_OPTION_STRING("init", probe_opts, init, "kaiming", probe_inits,
                     "mrmbench: initial weights (PyTorch's kaiming-uniform, or zeros)"),
    RD_OPTION_CUSTOM("l2_grid", probe_opts, l2_grid, parse_l2_grid, "list of 1 to 64 numbers >= 0",
                     "[1e-4, 1e-3, 1e-2]", "lbfgs: L2 strengths, selected on validation accuracy"),
    RD_OPTION_BOOL("standardize", probe_opts, standardize, 0, "lbfgs: fit on features standardized by the training "
                   "rows' mean and sd"),
    RD_OPTION_NUMBER("tol", probe_opts, tol, 1e-8, 0.0, 1e300,
                     "lbfgs: stop when the gradient's largest absolute entry is at most tol"),
    RD_OPTION_INT("max_iter", probe_opts, max_iter, 1000, 0, 100000000, "lbfgs: iteration limit"),
    RD_OPTION_INT("max_memory_mb", probe_opts, max_memory_mb, 4096, 1, 1 << 30,
                  "per rank: feature rows held at once when they are read rather than mapped"),
    RD_OPTION_CUSTOM("kmeans", probe_opts, kmeans, parse_kmeans, "object or false",
                     "{\"k_per_class\": 1, \"iters\": 50, \"distance\": \"euclidean\", \"tau\": {\"quantile\": 0.95}}",
                     "inference-time probing by centroids; distance also \"cosine\" or \"mahalanobis\", tau also a "
                     "fixed number; false: off"),
    RD_OPTION_END,
};

int probe_parse(rd_job *job, const rd_jobfile *jf, rd_status *st) {
  (void)jf;
  probe_opts *o = calloc(1, sizeof *o);
  if (!o) return rd_fail(st, RD_EFAIL, "out of memory");
  job->opts = o;
  if (!(job->effective = cJSON_CreateObject())) return rd_fail(st, RD_EFAIL, "out of memory");
  o->spec = job->spec;
  int rc = rd_options_parse(probe_options, job->spec, o, job->effective, &job->where, st);
  o->spec = NULL;
  RD_TRY(rc);
  int lbfgs = o->mode == PROBE_LBFGS;
  o->grid = lbfgs ? o->l2_grid : o->lr_grid;
  o->n_grid = lbfgs ? o->n_l2 : o->n_lr;
  o->init_zeros = strcmp(o->init, "zeros") == 0;
  for (const char *const *k = lbfgs ? mrmbench_only : lbfgs_only; *k; k++)
    cJSON_DeleteItemFromObjectCaseSensitive(job->effective, *k);
  return RD_OK;
}
