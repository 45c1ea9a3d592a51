/* The probe report (SPEC §7): MRMBench-style linear probes on frozen reward-model features, a
 * converged multinomial logistic regression (L-BFGS), and inference-time probing with centroids.
 * This file parses the options, runs the phases (layout and labels, value checks, training over
 * groups of ranks, centroids and inference) and assembles the report and the output datasets on
 * rank 0. */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe_internal.h"
#include "rmdiag/common/h5out.h"
#include "rmdiag/common/jsonutil.h"
#include "rmdiag/kind.h"
#include "rmdiag/common/progress.h"
#include "rmdiag/kernels/stats.h"

extern int blas_thread_shutdown_(void) __attribute__((weak));

/* The keys a job may carry (transitional: parsed by the kind's own parse function). */
static const rd_option probe_options[] = {
    {.key = "tasks", .type = RD_OPT_CUSTOM},
    {.key = "models", .type = RD_OPT_CUSTOM},
    {.key = "mode", .type = RD_OPT_CUSTOM},
    {.key = "lr_grid", .type = RD_OPT_CUSTOM},
    {.key = "seeds", .type = RD_OPT_CUSTOM},
    {.key = "init", .type = RD_OPT_CUSTOM},
    {.key = "l2_grid", .type = RD_OPT_CUSTOM},
    {.key = "standardize", .type = RD_OPT_CUSTOM},
    {.key = "tol", .type = RD_OPT_CUSTOM},
    {.key = "max_iter", .type = RD_OPT_CUSTOM},
    {.key = "max_memory_mb", .type = RD_OPT_CUSTOM},
    {.key = "kmeans", .type = RD_OPT_CUSTOM},
    RD_OPTION_END,
};

static void probe_free_opts(void *p) {
  probe_opts *o = p;
  if (!o) return;
  for (int t = 0; o->tasks && t < o->n_tasks; t++) {
    for (int c = 0; c < o->tasks[t].n_classes; c++) free(o->tasks[t].class_labels[c]);
    free(o->tasks[t].class_labels);
    free(o->tasks[t].class_len);
  }
  free(o->tasks);
  free(o->models);
  free(o->grid);
  free(o->seeds);
  free(o);
}

/* Names of tasks and models become HDF5 group names. */
static int valid_group_name(const char *s) {
  if (!s[0] || s[0] == '.' || strlen(s) > 200) return 0;
  for (const char *c = s; *c; c++)
    if (!((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_' ||
          *c == '-' || *c == '.'))
      return 0;
  return 1;
}

static int parse_numbers(const cJSON *v, const char *key, int positive, const rd_where *w, double **out, int *n,
                         rd_status *st) {
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
  return RD_OK;
}

static int parse_tasks(const cJSON *v, const rd_where *w, probe_opts *o, cJSON *eff, rd_status *st) {
  if (!v) return rd_fail(st, RD_EINPUT, "%s: missing required key \"tasks\" ({TASK: {\"classes\": [[...], ...]}})",
                         w->path);
  if (!cJSON_IsObject(v) || cJSON_GetArraySize(v) == 0)
    return rd_fail(st, RD_EINPUT, "%s: \"tasks\" must be a non-empty object {TASK: {\"classes\": [[...], ...]}}",
                   w->path);
  o->n_tasks = cJSON_GetArraySize(v);
  o->tasks = calloc((size_t)o->n_tasks, sizeof *o->tasks);
  if (!o->tasks) return rd_fail(st, RD_EFAIL, "out of memory");
  cJSON *et = cJSON_AddObjectToObject(eff, "tasks");
  int t = 0;
  for (const cJSON *c = v->child; c; c = c->next, t++) {
    probe_task_opt *to = &o->tasks[t];
    to->name = c->string;
    rd_where tw = *w;
    snprintf(tw.path, sizeof tw.path, "%.500s: tasks.%.100s", w->path, c->string);
    for (const cJSON *prev = v->child; prev != c; prev = prev->next)
      if (strcmp(prev->string, c->string) == 0)
        return rd_fail(st, RD_EINPUT, "%s: task \"%s\" appears twice", w->path, c->string);
    if (!valid_group_name(c->string) || strcmp(c->string, "infer") == 0)
      return rd_fail(st, RD_EINPUT, "%s: task name \"%s\" must be letters, digits, '.', '_' or '-' (not \"infer\")",
                     w->path, c->string);
    if (!cJSON_IsObject(c)) return rd_fail(st, RD_EINPUT, "%s must be an object {\"classes\": [[...], ...]}", tw.path);
    static const char *const tkeys[] = {"classes", NULL};
    RD_TRY(rd_opt_keys(c, tkeys, &tw, st));
    const cJSON *cl = cJSON_GetObjectItemCaseSensitive(c, "classes");
    if (!cl || !cJSON_IsArray(cl) || cJSON_GetArraySize(cl) < 2)
      return rd_fail(st, RD_EINPUT, "%s: \"classes\" must list at least 2 classes, each a list of raw labels",
                     tw.path);
    to->n_classes = cJSON_GetArraySize(cl);
    if (to->n_classes > 100) return rd_fail(st, RD_EINPUT, "%s: at most 100 classes", tw.path);
    to->class_len = calloc((size_t)to->n_classes, sizeof(int));
    to->class_labels = calloc((size_t)to->n_classes, sizeof(int64_t *));
    if (!to->class_len || !to->class_labels) return rd_fail(st, RD_EFAIL, "out of memory");
    cJSON *ec = cJSON_CreateArray();
    cJSON *eo = cJSON_CreateObject();
    cJSON_AddItemToObject(eo, "classes", ec);
    cJSON_AddItemToObject(et, c->string, eo);
    int k = 0;
    for (const cJSON *cls = cl->child; cls; cls = cls->next, k++) {
      if (!cJSON_IsArray(cls) || cJSON_GetArraySize(cls) == 0)
        return rd_fail(st, RD_EINPUT, "%s: classes[%d] must be a non-empty list of integer labels", tw.path, k);
      to->class_len[k] = cJSON_GetArraySize(cls);
      to->class_labels[k] = malloc(sizeof(int64_t) * (size_t)to->class_len[k]);
      if (!to->class_labels[k]) return rd_fail(st, RD_EFAIL, "out of memory");
      cJSON *el = cJSON_CreateArray();
      cJSON_AddItemToArray(ec, el);
      int j = 0;
      for (const cJSON *lab = cls->child; lab; lab = lab->next, j++) {
        if (!rd_json_is_int(lab, 0, 9007199254740991LL))
          return rd_fail(st, RD_EINPUT, "%s: classes[%d][%d] must be a non-negative integer label (-1 means missing)",
                         tw.path, k, j);
        int64_t val = (int64_t)lab->valuedouble;
        for (int k2 = 0; k2 <= k; k2++)
          for (int j2 = 0; j2 < (k2 == k ? j : to->class_len[k2]); j2++)
            if (to->class_labels[k2][j2] == val)
              return rd_fail(st, RD_EINPUT, "%s: label %lld appears twice in the class lists", tw.path, (long long)val);
        to->class_labels[k][j] = val;
        cJSON_AddItemToArray(el, cJSON_CreateNumber((double)val));
      }
    }
  }
  return RD_OK;
}

static int probe_parse(rd_job *job, const rd_jobfile *jf, rd_status *st) {
  (void)jf;
  probe_opts *o = calloc(1, sizeof *o);
  if (!o) return rd_fail(st, RD_EFAIL, "out of memory");
  job->opts = o;
  const cJSON *spec = job->spec;
  const rd_where *w = &job->where;
  cJSON *eff = cJSON_CreateObject();
  job->effective = eff;
  RD_TRY(parse_tasks(cJSON_GetObjectItemCaseSensitive(spec, "tasks"), w, o, eff, st));

  const cJSON *models = cJSON_GetObjectItemCaseSensitive(spec, "models");
  if (models) {
    if (!cJSON_IsArray(models) || cJSON_GetArraySize(models) == 0)
      return rd_fail(st, RD_EINPUT, "%s: \"models\" must be a non-empty list of reward-model group names", w->path);
    o->n_models = cJSON_GetArraySize(models);
    o->models = calloc((size_t)o->n_models, sizeof(char *));
    if (!o->models) return rd_fail(st, RD_EFAIL, "out of memory");
    cJSON *em = cJSON_AddArrayToObject(eff, "models");
    int i = 0;
    for (const cJSON *c = models->child; c; c = c->next, i++) {
      if (!cJSON_IsString(c) || !valid_group_name(c->valuestring) || strcmp(c->valuestring, "infer") == 0)
        return rd_fail(st, RD_EINPUT, "%s: models[%d] must be a group name (letters, digits, '.', '_', '-')", w->path, i);
      for (int k = 0; k < i; k++)
        if (strcmp(o->models[k], c->valuestring) == 0)
          return rd_fail(st, RD_EINPUT, "%s: models[%d] = \"%s\" appears twice", w->path, i, c->valuestring);
      for (int t = 0; t < o->n_tasks; t++)
        if (strcmp(o->tasks[t].name, c->valuestring) == 0)
          return rd_fail(st, RD_EINPUT, "%s: models[%d] = \"%s\" is also a task name", w->path, i, c->valuestring);
      o->models[i] = c->valuestring;
      cJSON_AddItemToArray(em, cJSON_CreateString(c->valuestring));
    }
  }

  static const char *const modes[] = {"mrmbench", "lbfgs", NULL};
  const char *mode = NULL;
  RD_TRY(rd_opt_string(spec, "mode", "mrmbench", modes, &mode, w, st));
  o->mode = strcmp(mode, "lbfgs") == 0 ? PROBE_LBFGS : PROBE_MRMBENCH;
  cJSON_AddStringToObject(eff, "mode", mode);
  /* options of the other mode are errors, not silently ignored */
  static const char *const mrm_only[] = {"lr_grid", "seeds", "init", NULL};
  static const char *const lb_only[] = {"l2_grid", "standardize", "tol", "max_iter", NULL};
  for (const char *const *k = o->mode == PROBE_LBFGS ? mrm_only : lb_only; *k; k++)
    if (cJSON_GetObjectItemCaseSensitive(spec, *k))
      return rd_fail(st, RD_EINPUT, "%s: \"%s\" applies to mode \"%s\", not \"%s\"", w->path, *k,
                     o->mode == PROBE_LBFGS ? "mrmbench" : "lbfgs", mode);
  if (o->mode == PROBE_MRMBENCH) {
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(spec, "lr_grid");
    if (g) {
      RD_TRY(parse_numbers(g, "lr_grid", 1, w, &o->grid, &o->n_grid, st));
    } else {
      static const double def[3] = {5e-5, 2e-5, 1e-5};
      o->n_grid = 3;
      o->grid = malloc(sizeof def);
      if (!o->grid) return rd_fail(st, RD_EFAIL, "out of memory");
      memcpy(o->grid, def, sizeof def);
    }
    cJSON_AddItemToObject(eff, "lr_grid", cJSON_CreateDoubleArray(o->grid, o->n_grid));
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(spec, "seeds");
    if (s) {
      if (!cJSON_IsArray(s) || cJSON_GetArraySize(s) == 0 || cJSON_GetArraySize(s) > 1000)
        return rd_fail(st, RD_EINPUT, "%s: \"seeds\" must be a list of 1 to 1000 non-negative integers", w->path);
      o->n_seeds = cJSON_GetArraySize(s);
      o->seeds = malloc(sizeof(int64_t) * (size_t)o->n_seeds);
      if (!o->seeds) return rd_fail(st, RD_EFAIL, "out of memory");
      int i = 0;
      for (const cJSON *c = s->child; c; c = c->next, i++) {
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
    static const char *const inits[] = {"kaiming", "zeros", NULL};
    const char *init = NULL;
    RD_TRY(rd_opt_string(spec, "init", "kaiming", inits, &init, w, st));
    o->init_zeros = strcmp(init, "zeros") == 0;
    cJSON_AddStringToObject(eff, "init", init);
  } else {
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(spec, "l2_grid");
    if (g) {
      RD_TRY(parse_numbers(g, "l2_grid", 0, w, &o->grid, &o->n_grid, st));
    } else {
      static const double def[3] = {1e-4, 1e-3, 1e-2};
      o->n_grid = 3;
      o->grid = malloc(sizeof def);
      if (!o->grid) return rd_fail(st, RD_EFAIL, "out of memory");
      memcpy(o->grid, def, sizeof def);
    }
    cJSON_AddItemToObject(eff, "l2_grid", cJSON_CreateDoubleArray(o->grid, o->n_grid));
    RD_TRY(rd_opt_bool(spec, "standardize", 0, &o->standardize, w, st));
    RD_TRY(rd_opt_double(spec, "tol", 1e-8, 0.0, 1e300, &o->tol, w, st));
    RD_TRY(rd_opt_int(spec, "max_iter", 1000, 0, 100000000, &o->max_iter, w, st));
    cJSON_AddBoolToObject(eff, "standardize", o->standardize);
    cJSON_AddNumberToObject(eff, "tol", o->tol);
    cJSON_AddNumberToObject(eff, "max_iter", (double)o->max_iter);
    o->n_seeds = 1;
    o->seeds = calloc(1, sizeof(int64_t));
    if (!o->seeds) return rd_fail(st, RD_EFAIL, "out of memory");
  }
  RD_TRY(rd_opt_int(spec, "max_memory_mb", 4096, 1, 1 << 30, &o->max_memory_mb, w, st));
  cJSON_AddNumberToObject(eff, "max_memory_mb", (double)o->max_memory_mb);

  const cJSON *km = cJSON_GetObjectItemCaseSensitive(spec, "kmeans");
  o->kmeans = 1;
  o->k_per_class = 1;
  o->km_iters = 50;
  o->distance = DIST_EUCLIDEAN;
  o->tau_quantile = 1;
  o->tau = 0.95;
  if (km && cJSON_IsFalse(km)) {
    o->kmeans = 0;
    cJSON_AddFalseToObject(eff, "kmeans");
  } else {
    if (km && !cJSON_IsObject(km))
      return rd_fail(st, RD_EINPUT, "%s: \"kmeans\" must be an object {\"k_per_class\", \"iters\", \"distance\", "
                     "\"tau\"} or false", w->path);
    rd_where kw = *w;
    snprintf(kw.path, sizeof kw.path, "%.600s: kmeans", w->path);
    static const char *const kkeys[] = {"k_per_class", "iters", "distance", "tau", NULL};
    static const char *const dists[] = {"euclidean", "cosine", "mahalanobis", NULL};
    cJSON *empty = km ? NULL : cJSON_CreateObject();
    const cJSON *k = km ? km : empty;
    int rc = rd_opt_keys(k, kkeys, &kw, st);
    const char *dist = "euclidean";
    if (rc == RD_OK) rc = rd_opt_int(k, "k_per_class", 1, 1, 100000, &o->k_per_class, &kw, st);
    if (rc == RD_OK) rc = rd_opt_int(k, "iters", 50, 1, 100000000, &o->km_iters, &kw, st);
    if (rc == RD_OK) rc = rd_opt_string(k, "distance", "euclidean", dists, &dist, &kw, st);
    const cJSON *tau = cJSON_GetObjectItemCaseSensitive(k, "tau");
    if (rc == RD_OK && tau) {
      if (cJSON_IsNumber(tau)) {
        if (!isfinite(tau->valuedouble) || tau->valuedouble < 0)
          rc = rd_fail(st, RD_EINPUT, "%s: \"tau\" must be a non-negative number or {\"quantile\": q}", kw.path);
        o->tau_quantile = 0;
        o->tau = tau->valuedouble;
      } else if (cJSON_IsObject(tau)) {
        static const char *const qkeys[] = {"quantile", NULL};
        rd_where qw = kw;
        snprintf(qw.path, sizeof qw.path, "%.600s.tau", kw.path);
        rc = rd_opt_keys(tau, qkeys, &qw, st);
        if (rc == RD_OK && !cJSON_GetObjectItemCaseSensitive(tau, "quantile"))
          rc = rd_fail(st, RD_EINPUT, "%s: missing \"quantile\"", qw.path);
        if (rc == RD_OK) rc = rd_opt_double(tau, "quantile", 0.95, 0.0, 1.0, &o->tau, &qw, st);
      } else {
        rc = rd_fail(st, RD_EINPUT, "%s: \"tau\" must be a non-negative number or {\"quantile\": q}", kw.path);
      }
    }
    cJSON_Delete(empty);
    RD_TRY(rc);
    o->distance = strcmp(dist, "cosine") == 0 ? DIST_COSINE : strcmp(dist, "mahalanobis") == 0 ? DIST_MAHALANOBIS
                                                                                                : DIST_EUCLIDEAN;
    cJSON *ek = cJSON_AddObjectToObject(eff, "kmeans");
    cJSON_AddNumberToObject(ek, "k_per_class", (double)o->k_per_class);
    cJSON_AddNumberToObject(ek, "iters", (double)o->km_iters);
    cJSON_AddStringToObject(ek, "distance", dist);
    if (o->tau_quantile) {
      cJSON *q = cJSON_AddObjectToObject(ek, "tau");
      cJSON_AddNumberToObject(q, "quantile", o->tau);
    } else {
      cJSON_AddNumberToObject(ek, "tau", o->tau);
    }
  }
  return RD_OK;
}

/* ---- validate ---------------------------------------------------------------------------------------- */

static int run_init(probe_run *R, const rd_ctx *ctx, const rd_job *job, const rd_jobfile *jf, rd_status *st) {
  memset(R, 0, sizeof *R);
  R->ctx = ctx;
  R->job = job;
  R->o = job->opts;
  R->seed = jf->seed;
  R->n_models = R->o->n_models ? R->o->n_models : 1;
  R->n_pt = R->n_models * R->o->n_tasks;
  R->h5 = H5I_INVALID_HID;
  R->pt = calloc((size_t)R->n_pt, sizeof *R->pt);
  R->infer = calloc((size_t)R->n_models, sizeof *R->infer);
  if (!R->pt || !R->infer) return rd_fail(st, RD_EFAIL, "out of memory");
  return RD_OK;
}

static void run_free(probe_run *R) {
  probe_data_free(R);
  free(R->pt);
  free(R->infer);
}

static int probe_validate(const rd_ctx *ctx, const rd_job *job, const rd_jobfile *jf, rd_status *st) {
  probe_run R;
  if (ctx->rank == 0 && run_init(&R, ctx, job, jf, st) == RD_OK) {
    hid_t f;
    if (rd_h5_open(job->input, MPI_COMM_NULL, &f, st) == RD_OK) {
      probe_check_layout(f, job, job->opts, &R, st);
      rd_h5_close(f);
    }
    run_free(&R);
  }
  return rd_share_status(ctx, st, 0);
}

/* ---- metrics and report ---------------------------------------------------------------------------- */

typedef struct test_metrics {
  int64_t correct;
  double accuracy, macro_f1, majority;
  int64_t *confusion;  /* [C, C], rows = true class */
} test_metrics;

static void metrics(const ptask *p, const int32_t *pred, test_metrics *m) {
  int C = p->C;
  m->confusion = calloc((size_t)(C * C), sizeof(int64_t));
  if (!m->confusion) abort();
  int64_t correct = 0;
  for (int64_t i = 0; i < p->n_te; i++) {
    int y = p->cls[p->te[i]], q = pred[i];
    m->confusion[y * C + q]++;
    correct += y == q;
  }
  m->correct = correct;
  m->accuracy = (double)correct / (double)p->n_te;
  double f1sum = 0.0;
  for (int c = 0; c < C; c++) {
    int64_t tp = m->confusion[c * C + c], fp = 0, fn = 0;
    for (int k = 0; k < C; k++)
      if (k != c) {
        fp += m->confusion[k * C + c];
        fn += m->confusion[c * C + k];
      }
    int64_t den = 2 * tp + fp + fn;
    f1sum += den > 0 ? 2.0 * (double)tp / (double)den : 0.0;
  }
  m->macro_f1 = f1sum / C;
  int maj = 0;
  for (int c = 1; c < C; c++)
    if (p->train_count[c] > p->train_count[maj]) maj = c;
  int64_t nm = 0;
  for (int64_t i = 0; i < p->n_te; i++) nm += p->cls[p->te[i]] == maj;
  m->majority = (double)nm / (double)p->n_te;
}

static cJSON *metrics_json(const ptask *p, const test_metrics *m) {
  cJSON *o = cJSON_CreateObject();
  rd_json_add(o, "accuracy", rd_json_num(m->accuracy));
  rd_json_add(o, "macro_f1", rd_json_num(m->macro_f1));
  cJSON *cf = cJSON_AddArrayToObject(o, "confusion");
  for (int c = 0; c < p->C; c++) {
    cJSON *row = cJSON_CreateArray();
    for (int k = 0; k < p->C; k++) cJSON_AddItemToArray(row, cJSON_CreateNumber((double)m->confusion[c * p->C + k]));
    cJSON_AddItemToArray(cf, row);
  }
  rd_json_add(o, "majority_baseline", rd_json_num(m->majority));
  return o;
}

static int64_t val_correct(const ptask *p, const int32_t *pred) {
  int64_t correct = 0;
  for (int64_t i = 0; i < p->n_va; i++) correct += pred[i] == p->cls[p->va[i]];
  return correct;
}

static double val_accuracy(const ptask *p, const int32_t *pred) {
  return (double)val_correct(p, pred) / (double)p->n_va;
}

/* Output group of a model: "/probe" or "/probe/RM". */
static void out_prefix(const probe_run *R, int m, char *out, size_t n) {
  if (R->o->n_models) snprintf(out, n, "/probe/%s", R->o->models[m]);
  else snprintf(out, n, "/probe");
}

static int write_task_h5(const probe_run *R, hid_t h5, const ptask *p, const grid_result *sel, int S,
                         const grid_result *const *per_seed, const infer_result *ir, rd_status *st) {
  char pre[600], path[800];
  out_prefix(R, p->m, pre, sizeof pre);
  const char *task = R->o->tasks[p->t].name;
  int lb = R->o->mode == PROBE_LBFGS;
  int64_t K = lb ? p->C : p->K, d = p->X.d;
  int64_t dims[3] = {K, d, 0};
  snprintf(path, sizeof path, "%s/%s/W", pre, task);
  RD_TRY(rd_h5_write_f64(h5, path, 2, dims, sel->W, st));
  if (lb) {
    snprintf(path, sizeof path, "%s/%s/b", pre, task);
    RD_TRY(rd_h5_write_f64(h5, path, 1, dims, sel->b, st));
  }
  if (S > 1) {
    double *all = malloc(sizeof(double) * (size_t)(S * K * d));
    if (!all) return rd_fail(st, RD_EFAIL, "out of memory");
    for (int s = 0; s < S; s++) memcpy(all + s * K * d, per_seed[s]->W, sizeof(double) * (size_t)(K * d));
    int64_t d3[3] = {S, K, d};
    snprintf(path, sizeof path, "%s/%s/W_seeds", pre, task);
    int rc = rd_h5_write_f64(h5, path, 3, d3, all, st);
    free(all);
    RD_TRY(rc);
  }
  int64_t dt[1] = {p->n_te};
  snprintf(path, sizeof path, "%s/%s/test_row", pre, task);
  RD_TRY(rd_h5_write_i64(h5, path, 1, dt, p->te, st));
  snprintf(path, sizeof path, "%s/%s/test_pred", pre, task);
  RD_TRY(rd_h5_write_i32(h5, path, 1, dt, sel->test_pred, st));
  if (ir) {
    int64_t nc = 0, first = -1;
    for (int64_t k = 0; k < ir->n_cent; k++)
      if (ir->cent_task[k] == p->t) {
        if (first < 0) first = k;
        nc++;
      }
    int64_t dc[2] = {nc, d};
    snprintf(path, sizeof path, "%s/%s/centroids", pre, task);
    RD_TRY(rd_h5_write_f64(h5, path, 2, dc, nc ? ir->cent + first * d : NULL, st));
    snprintf(path, sizeof path, "%s/%s/centroid_class", pre, task);
    RD_TRY(rd_h5_write_i32(h5, path, 1, dc, nc ? ir->cent_class + first : NULL, st));
  }
  return RD_OK;
}

static cJSON *inference_json(const probe_run *R, int m, const infer_result *ir) {
  const probe_opts *o = R->o;
  if (!o->kmeans) return cJSON_CreateNull();
  cJSON *j = cJSON_CreateObject();
  static const char *const dn[3] = {"euclidean", "cosine", "mahalanobis"};
  cJSON_AddStringToObject(j, "distance", dn[o->distance]);
  cJSON_AddNumberToObject(j, "k_per_class", (double)o->k_per_class);
  cJSON_AddNumberToObject(j, "n_centroids", (double)ir->n_cent);
  rd_json_add(j, "tau", rd_json_num(ir->tau));
  if (o->tau_quantile) {
    char rule[128];
    snprintf(rule, sizeof rule, "quantile %g of the validation rows' d_min", o->tau);
    cJSON_AddStringToObject(j, "tau_rule", rule);
    cJSON_AddNumberToObject(j, "n_validation_rows", (double)ir->n_val_rows);
  } else {
    cJSON_AddStringToObject(j, "tau_rule", "fixed");
  }
  if (o->distance == DIST_MAHALANOBIS) rd_json_add(j, "shrinkage", rd_json_num(ir->shrinkage));
  cJSON_AddNumberToObject(j, "n", (double)ir->n);
  if (ir->n == 0) {
    cJSON_AddNumberToObject(j, "n_kept", 0);
    cJSON_AddNullToObject(j, "kept_fraction");
    cJSON_AddNullToObject(j, "reliance");
    return j;
  }
  int64_t kept = 0;
  int64_t *per = calloc((size_t)o->n_tasks, sizeof(int64_t));
  if (!per) abort();
  for (int64_t i = 0; i < ir->n; i++)
    if (ir->kept[i]) {
      kept++;
      per[ir->nearest_task[i]]++;
    }
  rd_json_add(j, "kept_fraction", rd_json_num((double)kept / (double)ir->n));
  cJSON_AddNumberToObject(j, "n_kept", (double)kept);
  cJSON *rel = cJSON_AddObjectToObject(j, "reliance");
  for (int t = 0; t < o->n_tasks; t++)
    rd_json_add(rel, o->tasks[t].name, kept ? rd_json_num((double)per[t] / (double)kept) : cJSON_CreateNull());
  free(per);
  (void)m;
  return j;
}

/* Rank 0: the report of one model, and its datasets. accuracy_mean per task is returned in acc[t]. */
static cJSON *model_report(const probe_run *R, int m, grid_result *res, const infer_result *ir, hid_t h5,
                           double *acc, rd_status *st) {
  const probe_opts *o = R->o;
  int lb = o->mode == PROBE_LBFGS, S = lb ? 1 : o->n_seeds, NG = o->n_grid, T = o->n_tasks;
  cJSON *r = cJSON_CreateObject(), *tasks = cJSON_AddObjectToObject(r, "tasks");
  double acc_sum = 0.0;
  for (int t = 0; t < T && st->code == RD_OK; t++) {
    int i = m * T + t;
    const ptask *p = &R->pt[i];
    grid_result *gr = res + (int64_t)i * S * NG;  /* [s * NG + g] */
    cJSON *tj = cJSON_CreateObject();
    cJSON_AddItemToObject(tasks, o->tasks[t].name, tj);
    cJSON_AddNumberToObject(tj, "n_train", (double)p->n_tr);
    cJSON_AddNumberToObject(tj, "n_val", (double)p->n_va);
    cJSON_AddNumberToObject(tj, "n_test", (double)p->n_te);
    cJSON *cl = cJSON_AddArrayToObject(tj, "classes");
    for (int c = 0; c < p->C; c++) {
      cJSON *a = cJSON_CreateArray();
      for (int k = 0; k < o->tasks[t].class_len[c]; k++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber((double)o->tasks[t].class_labels[c][k]));
      cJSON_AddItemToArray(cl, a);
    }
    cJSON *ctr = cJSON_AddArrayToObject(tj, "train_class_counts");
    for (int c = 0; c < p->C; c++) cJSON_AddItemToArray(ctr, cJSON_CreateNumber((double)p->train_count[c]));
    cJSON_AddStringToObject(tj, "validation", p->holdout ? "holdout: 10% of train (no validation split)" : "split");
    cJSON *dr = cJSON_AddObjectToObject(tj, "dropped");
    cJSON_AddNumberToObject(dr, "missing_label", (double)p->dropped_missing);
    cJSON_AddNumberToObject(dr, "label_in_no_class", (double)p->dropped_other);
    /* validation accuracy per grid entry: mean over seeds, ties to the first entry. The mean is the
     * correct rows of all seeds over S * n_val, so entries with equal means compare (and print) equal
     * whatever the order of the seeds' accuracies. */
    cJSON *grid = cJSON_AddArrayToObject(tj, "grid");
    int sel = 0;
    int64_t best = -1;
    for (int g = 0; g < NG; g++) {
      int64_t total = 0;
      for (int s = 0; s < S; s++) total += val_correct(p, gr[s * NG + g].val_pred);
      double mean = (double)total / ((double)S * (double)p->n_va);
      cJSON *e = cJSON_CreateObject();
      cJSON_AddNumberToObject(e, lb ? "l2" : "lr", o->grid[g]);
      rd_json_add(e, "val_accuracy", rd_json_num(mean));
      if (lb) {
        cJSON_AddNumberToObject(e, "iterations", (double)gr[g].iterations);
        rd_json_add(e, "grad_norm", rd_json_num(gr[g].grad_norm));
        static const char *const stn[3] = {"converged", "max_iter", "line_search_stalled"};
        cJSON_AddStringToObject(e, "status", stn[gr[g].status]);
      }
      cJSON_AddItemToArray(grid, e);
      if (total > best) {
        best = total;
        sel = g;
      }
    }
    cJSON *sj = cJSON_AddObjectToObject(tj, "selected");
    cJSON_AddNumberToObject(sj, lb ? "l2" : "lr", o->grid[sel]);
    cJSON_AddStringToObject(sj, "by", "mean validation accuracy over seeds (ties to the first grid entry)");
    /* predictions another backend may decide the other way (SPEC §3): validation ones of every grid
     * entry and seed (they can move the selection), test ones of the selected entry over seeds */
    int64_t near_va = 0, near_te = 0;
    for (int s = 0; s < S; s++) {
      for (int g = 0; g < NG; g++) near_va += gr[s * NG + g].near_val;
      near_te += gr[s * NG + sel].near_test;
    }
    cJSON *nj = cJSON_AddObjectToObject(tj, "near_ties");
    cJSON_AddNumberToObject(nj, "validation", (double)near_va);
    cJSON_AddNumberToObject(nj, "test", (double)near_te);
    cJSON_AddNumberToObject(nj, "margin", RD_PROBE_NEAR_TIE);
    /* test metrics of the selected entry, per seed */
    cJSON *ps = cJSON_CreateArray();
    double *accs = malloc(sizeof(double) * (size_t)S);
    const grid_result **per_seed = malloc(sizeof(grid_result *) * (size_t)S);
    if (!accs || !per_seed) abort();
    int64_t test_total = 0;
    for (int s = 0; s < S; s++) {
      const grid_result *x = &gr[s * NG + sel];
      per_seed[s] = x;
      test_metrics tm;
      metrics(p, x->test_pred, &tm);
      accs[s] = tm.accuracy;
      test_total += tm.correct;
      if (s == 0) cJSON_AddItemToObject(tj, "test", metrics_json(p, &tm));
      cJSON *e = cJSON_CreateObject();
      if (!lb) cJSON_AddNumberToObject(e, "seed", (double)o->seeds[s]);
      else cJSON_AddNullToObject(e, "seed");  /* one deterministic fit: no seed */
      rd_json_add(e, "val_accuracy", rd_json_num(val_accuracy(p, x->val_pred)));
      cJSON_AddItemToObject(e, "test", metrics_json(p, &tm));
      cJSON_AddItemToArray(ps, e);
      free(tm.confusion);
    }
    cJSON_AddItemToObject(tj, "per_seed", ps);
    double mean, sd;
    rd_mean_sd(accs, (size_t)S, &mean, &sd);
    /* the mean as one division of counts: equal means are equal numbers (model rankings tie exactly) */
    mean = (double)test_total / ((double)S * (double)p->n_te);
    rd_json_add(tj, "accuracy_mean", rd_json_num(mean));
    rd_json_add(tj, "accuracy_sd", rd_json_num(sd));
    if (S >= 2) {
      double half = probe_t_quantile(0.975, (double)(S - 1)) * sd / sqrt((double)S);
      rd_json_add(tj, "accuracy_ci95", rd_json_pair(mean - half, mean + half));
    } else {
      cJSON_AddNullToObject(tj, "accuracy_ci95");
    }
    acc[t] = mean;
    acc_sum += mean;
    if (h5 >= 0) write_task_h5(R, h5, p, &gr[sel], S, per_seed, o->kmeans ? ir : NULL, st);
    free(accs);
    free(per_seed);
  }
  rd_json_add(r, "average", rd_json_num(acc_sum / T));
  cJSON_AddItemToObject(r, "inference", inference_json(R, m, ir));
  if (o->kmeans && ir->n > 0 && st->code == RD_OK) {
    char pre[600], path[800];
    out_prefix(R, m, pre, sizeof pre);
    int64_t dn[1] = {ir->n};
    snprintf(path, sizeof path, "%s/infer/nearest_task", pre);
    if (rd_h5_write_i32(h5, path, 1, dn, ir->nearest_task, st) == RD_OK) {
      snprintf(path, sizeof path, "%s/infer/nearest_class", pre);
      rd_h5_write_i32(h5, path, 1, dn, ir->nearest_class, st);
    }
    if (st->code == RD_OK) {
      snprintf(path, sizeof path, "%s/infer/d_min", pre);
      rd_h5_write_f64(h5, path, 1, dn, ir->d_min, st);
    }
    if (st->code == RD_OK) {
      snprintf(path, sizeof path, "%s/infer/kept", pre);
      rd_h5_write_u8(h5, path, 1, dn, ir->kept, st);
    }
  }
  return r;
}

static void add_deviations(const probe_opts *o, cJSON *r) {
  cJSON *dv = cJSON_AddArrayToObject(r, "differences_from_released_code");
  if (o->mode == PROBE_MRMBENCH) {
    cJSON_AddItemToArray(dv, cJSON_CreateString(
        "the learning rate is selected on validation accuracy (the released code reads test accuracy at fixed steps)"));
    cJSON_AddItemToArray(dv, cJSON_CreateString(
        "float32 features with float64 arithmetic and optimizer state (the released code runs in bf16 with fp32 "
        "master weights)"));
    cJSON_AddItemToArray(dv, cJSON_CreateString(
        "T = ceil(N_train/128) optimizer steps of 128 distinct rows (the released code takes ceil(ceil(N/8)/8) "
        "scheduler steps of 8 micro-batches of 8 rows, each GPU iterating the whole training set)"));
  } else {
    cJSON_AddItemToArray(dv, cJSON_CreateString(
        "mode lbfgs is not MRMBench's procedure: multinomial logistic regression with a bias fitted to convergence"));
  }
}

/* ---- run --------------------------------------------------------------------------------------------------- */

static int probe_run_job(const rd_ctx *ctx, const rd_job *job, const rd_jobfile *jf, rd_run_out *out, rd_status *st) {
  const probe_opts *o = job->opts;
  probe_run R;
  grid_result *res = NULL;
  infer_result *ir = NULL;
  /* BLAS results depend on the thread count: one BLAS thread per rank (rmdiag's main sets this up;
   * a library caller may not have) */
  if (openblas_get_num_threads() != 1) {
    openblas_set_num_threads(1);
    if (blas_thread_shutdown_) blas_thread_shutdown_();
  }
  if (run_init(&R, ctx, job, jf, st) != RD_OK) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  if (probe_prepare(&R, st) != RD_OK) goto done;
  rd_timing_mark(ctx->rank, job->name, "layout+labels");
  if (probe_scan_values(&R, st) != RD_OK) goto done;
  rd_timing_mark(ctx->rank, job->name, "value scan");
  if (probe_train_all(&R, &res, st) != RD_OK) goto done;
  rd_timing_mark(ctx->rank, job->name, "train+evaluate");
  ir = calloc((size_t)R.n_models, sizeof *ir);
  if (!ir) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  if (o->kmeans && probe_kmeans_all(&R, ir, st) != RD_OK) goto done;
  rd_timing_mark(ctx->rank, job->name, "kmeans+inference");
  if (ctx->rank == 0) {
    int T = o->n_tasks, M = R.n_models;
    double *acc = calloc((size_t)(M * T), sizeof(double));
    if (!acc) abort();
    cJSON *result;
    if (o->n_models == 0) {
      result = model_report(&R, 0, res, &ir[0], out->h5, acc, st);
    } else {
      result = cJSON_CreateObject();
      cJSON *models = cJSON_AddObjectToObject(result, "models");
      for (int m = 0; m < M && st->code == RD_OK; m++)
        cJSON_AddItemToObject(models, o->models[m], model_report(&R, m, res, &ir[m], out->h5, acc + m * T, st));
      /* per task: each model's mean test accuracy, and the models ordered best first (ties by job order) */
      cJSON *cmp = cJSON_AddObjectToObject(result, "comparison");
      for (int t = 0; t <= T; t++) {
        cJSON *e = cJSON_CreateObject();
        cJSON *a = cJSON_AddObjectToObject(e, "accuracy_mean");
        double *v = malloc(sizeof(double) * (size_t)M);
        int *ord = malloc(sizeof(int) * (size_t)M);
        if (!v || !ord) abort();
        for (int m = 0; m < M; m++) {
          if (t < T) {
            v[m] = acc[m * T + t];
          } else {
            double s = 0.0;
            for (int k = 0; k < T; k++) s += acc[m * T + k];
            v[m] = s / T;
          }
          rd_json_add(a, o->models[m], rd_json_num(v[m]));
          ord[m] = m;
        }
        for (int x = 1; x < M; x++) /* stable insertion sort, descending */
          for (int y = x; y > 0 && v[ord[y]] > v[ord[y - 1]]; y--) {
            int tmp = ord[y];
            ord[y] = ord[y - 1];
            ord[y - 1] = tmp;
          }
        cJSON *rk = cJSON_AddArrayToObject(e, "ranking");
        for (int m = 0; m < M; m++) cJSON_AddItemToArray(rk, cJSON_CreateString(o->models[ord[m]]));
        cJSON_AddItemToObject(cmp, t < T ? o->tasks[t].name : "average", e);
        free(v);
        free(ord);
      }
    }
    cJSON_AddStringToObject(result, "mode", o->mode == PROBE_LBFGS ? "lbfgs" : "mrmbench");
    add_deviations(o, result);
    free(acc);
    if (st->code == RD_OK) out->result = result;
    else cJSON_Delete(result);
  }
  rd_share_status(ctx, st, 0);
  rd_timing_mark(ctx->rank, job->name, "report+h5");
done:
  if (ir) probe_infer_free(ir, R.n_models);
  free(ir);
  probe_results_free(res, (int64_t)R.n_pt * (o->mode == PROBE_LBFGS ? 1 : o->n_seeds) * o->n_grid);
  run_free(&R);
  return st->code;
}

static int job_kmeans_maha(const rd_job *job) {
  const probe_opts *o = job->opts;
  return o->kmeans && o->distance == DIST_MAHALANOBIS;
}

/* Every check of the input that `run` makes (layout, labels and classes, splits, non-finite
 * features, a Mahalanobis covariance that can be factored): a multi-job file checks all its jobs
 * before any job writes. */
static int probe_check(const rd_ctx *ctx, const rd_job *job, const rd_jobfile *jf, rd_status *st) {
  probe_run R;
  if (run_init(&R, ctx, job, jf, st) != RD_OK) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  if (probe_prepare(&R, st) == RD_OK && probe_scan_values(&R, st) == RD_OK && job_kmeans_maha(job))
    probe_maha_check(&R, st);
  run_free(&R);
  return st->code;
}

const rd_kind rd_kind_probe = {
    .name = "probe",
    .default_group = "/probe",
    .options = probe_options,
    .parse = probe_parse,
    .free_opts = probe_free_opts,
    .validate = probe_validate,
    .check = probe_check,
    .run = probe_run_job,
};
