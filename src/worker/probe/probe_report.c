/* probe: the report (docs/reference.md, 'probe report': result keys and output datasets), built on
 * rank 0 from the training results of every (model, task), seed and grid entry and from the
 * inference results of every model; with several models, the comparison of their test accuracies.
 * The stdout summary is probe_view.c's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe_internal.h"
#include "rmdiag/common/h5out.h"
#include "rmdiag/common/jsonutil.h"

/* ---- output datasets ------------------------------------------------------------------------- */

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

/* The inference rows' nearest task and class, d_min and whether each is kept. */
static int write_infer_h5(const probe_run *R, int m, const infer_result *ir, hid_t h5, rd_status *st) {
  char pre[600], path[800];
  out_prefix(R, m, pre, sizeof pre);
  int64_t dn[1] = {ir->n};
  snprintf(path, sizeof path, "%s/infer/nearest_task", pre);
  RD_TRY(rd_h5_write_i32(h5, path, 1, dn, ir->nearest_task, st));
  snprintf(path, sizeof path, "%s/infer/nearest_class", pre);
  RD_TRY(rd_h5_write_i32(h5, path, 1, dn, ir->nearest_class, st));
  snprintf(path, sizeof path, "%s/infer/d_min", pre);
  RD_TRY(rd_h5_write_f64(h5, path, 1, dn, ir->d_min, st));
  snprintf(path, sizeof path, "%s/infer/kept", pre);
  return rd_h5_write_u8(h5, path, 1, dn, ir->kept, st);
}

/* ---- one model ------------------------------------------------------------------------------- */

/* The inference summary of one model: null without kmeans. */
static cJSON *inference_json(const probe_run *R, const infer_result *ir) {
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
  return j;
}

/* A task's rows, classes and dropped rows. */
static void task_rows_json(const probe_opts *o, const ptask *p, cJSON *tj) {
  const probe_task_opt *to = &o->tasks[p->t];
  cJSON_AddNumberToObject(tj, "n_train", (double)p->n_tr);
  cJSON_AddNumberToObject(tj, "n_val", (double)p->n_va);
  cJSON_AddNumberToObject(tj, "n_test", (double)p->n_te);
  cJSON *cl = cJSON_AddArrayToObject(tj, "classes");
  for (int c = 0; c < p->C; c++) {
    cJSON *a = cJSON_CreateArray();
    for (int k = 0; k < to->class_len[c]; k++)
      cJSON_AddItemToArray(a, cJSON_CreateNumber((double)to->class_labels[c][k]));
    cJSON_AddItemToArray(cl, a);
  }
  cJSON *ctr = cJSON_AddArrayToObject(tj, "train_class_counts");
  for (int c = 0; c < p->C; c++) cJSON_AddItemToArray(ctr, cJSON_CreateNumber((double)p->train_count[c]));
  cJSON_AddStringToObject(tj, "validation", p->holdout ? "holdout: 10% of train (no validation split)" : "split");
  cJSON *dr = cJSON_AddObjectToObject(tj, "dropped");
  cJSON_AddNumberToObject(dr, "missing_label", (double)p->dropped_missing);
  cJSON_AddNumberToObject(dr, "label_in_no_class", (double)p->dropped_other);
}

/* The grid (validation accuracy per entry, and the lbfgs fit's outcome), the selected entry and the
 * near ties; returns the selected entry. gr[s * NG + g]. */
static int task_grid_json(const probe_opts *o, const ptask *p, const grid_result *gr, int S, cJSON *tj) {
  int lb = o->mode == PROBE_LBFGS, NG = o->n_grid;
  double *val_mean = malloc(sizeof(double) * (size_t)NG);
  if (!val_mean) abort();
  int sel = probe_select(p, gr, S, NG, val_mean);
  cJSON *grid = cJSON_AddArrayToObject(tj, "grid");
  for (int g = 0; g < NG; g++) {
    cJSON *e = cJSON_CreateObject();
    cJSON_AddNumberToObject(e, lb ? "l2" : "lr", o->grid[g]);
    rd_json_add(e, "val_accuracy", rd_json_num(val_mean[g]));
    if (lb) {
      cJSON_AddNumberToObject(e, "iterations", (double)gr[g].iterations);
      rd_json_add(e, "grad_norm", rd_json_num(gr[g].grad_norm));
      static const char *const stn[3] = {"converged", "max_iter", "line_search_stalled"};
      cJSON_AddStringToObject(e, "status", stn[gr[g].status]);
    }
    cJSON_AddItemToArray(grid, e);
  }
  free(val_mean);
  cJSON *sj = cJSON_AddObjectToObject(tj, "selected");
  cJSON_AddNumberToObject(sj, lb ? "l2" : "lr", o->grid[sel]);
  cJSON_AddStringToObject(sj, "by", "mean validation accuracy over seeds (ties to the first grid entry)");
  int64_t near_va, near_te;
  probe_near_ties(gr, S, NG, sel, &near_va, &near_te);
  cJSON *nj = cJSON_AddObjectToObject(tj, "near_ties");
  cJSON_AddNumberToObject(nj, "validation", (double)near_va);
  cJSON_AddNumberToObject(nj, "test", (double)near_te);
  cJSON_AddNumberToObject(nj, "margin", RD_PROBE_NEAR_TIE);
  return sel;
}

/* Test metrics of the selected entry per seed (the first seed's also as "test"), and the test
 * accuracy's mean, sd and interval over seeds; returns the mean. per_seed[s] = the selected
 * entry's results of seed s. */
static double task_seeds_json(const probe_opts *o, const ptask *p, const grid_result *const *per_seed, int S,
                              cJSON *tj) {
  int lb = o->mode == PROBE_LBFGS;
  cJSON *ps = cJSON_CreateArray();
  double *accs = malloc(sizeof(double) * (size_t)S);
  if (!accs) abort();
  int64_t test_total = 0;
  for (int s = 0; s < S; s++) {
    const grid_result *x = per_seed[s];
    test_metrics tm;
    probe_test_metrics(p, x->test_pred, &tm);
    accs[s] = tm.accuracy;
    test_total += tm.correct;
    if (s == 0) cJSON_AddItemToObject(tj, "test", probe_metrics_json(p, &tm));
    cJSON *e = cJSON_CreateObject();
    if (!lb) cJSON_AddNumberToObject(e, "seed", (double)o->seeds[s]);
    else cJSON_AddNullToObject(e, "seed");  /* one deterministic fit: no seed */
    rd_json_add(e, "val_accuracy", rd_json_num(probe_val_accuracy(p, x->val_pred)));
    cJSON_AddItemToObject(e, "test", probe_metrics_json(p, &tm));
    cJSON_AddItemToArray(ps, e);
    free(tm.confusion);
  }
  cJSON_AddItemToObject(tj, "per_seed", ps);
  double mean, sd, ci[2];
  int has_ci;
  probe_accuracy_spread(accs, S, test_total, p->n_te, &mean, &sd, ci, &has_ci);
  free(accs);
  rd_json_add(tj, "accuracy_mean", rd_json_num(mean));
  rd_json_add(tj, "accuracy_sd", rd_json_num(sd));
  if (has_ci) rd_json_add(tj, "accuracy_ci95", rd_json_pair(ci[0], ci[1]));
  else cJSON_AddNullToObject(tj, "accuracy_ci95");
  return mean;
}

/* Rank 0: the report of one model, and its datasets. accuracy_mean per task is returned in acc[t]. */
static cJSON *model_report(const probe_run *R, int m, grid_result *res, const infer_result *ir, hid_t h5,
                           double *acc, rd_status *st) {
  const probe_opts *o = R->o;
  int S = o->mode == PROBE_LBFGS ? 1 : o->n_seeds, NG = o->n_grid, T = o->n_tasks;
  cJSON *r = cJSON_CreateObject(), *tasks = cJSON_AddObjectToObject(r, "tasks");
  const grid_result **per_seed = malloc(sizeof(grid_result *) * (size_t)S);
  if (!per_seed) abort();
  double acc_sum = 0.0;
  for (int t = 0; t < T && st->code == RD_OK; t++) {
    int i = m * T + t;
    const ptask *p = &R->pt[i];
    grid_result *gr = res + (int64_t)i * S * NG;  /* [s * NG + g] */
    cJSON *tj = cJSON_CreateObject();
    cJSON_AddItemToObject(tasks, o->tasks[t].name, tj);
    task_rows_json(o, p, tj);
    int sel = task_grid_json(o, p, gr, S, tj);
    for (int s = 0; s < S; s++) per_seed[s] = &gr[s * NG + sel];
    double mean = task_seeds_json(o, p, per_seed, S, tj);
    acc[t] = mean;
    acc_sum += mean;
    if (h5 >= 0) write_task_h5(R, h5, p, &gr[sel], S, per_seed, o->kmeans ? ir : NULL, st);
  }
  free(per_seed);
  rd_json_add(r, "average", rd_json_num(acc_sum / T));
  cJSON_AddItemToObject(r, "inference", inference_json(R, ir));
  if (o->kmeans && ir->n > 0 && st->code == RD_OK) write_infer_h5(R, m, ir, h5, st);
  return r;
}

/* ---- several models -------------------------------------------------------------------------- */

/* Per task (and for the average over tasks): each model's mean test accuracy, and the models
 * ordered best first (ties by job order). acc[m * T + t]. */
static void comparison_json(const probe_opts *o, int M, const double *acc, cJSON *result) {
  int T = o->n_tasks;
  cJSON *cmp = cJSON_AddObjectToObject(result, "comparison");
  double *v = malloc(sizeof(double) * (size_t)M);
  int *ord = malloc(sizeof(int) * (size_t)M);
  if (!v || !ord) abort();
  for (int t = 0; t <= T; t++) {
    cJSON *e = cJSON_CreateObject();
    cJSON *a = cJSON_AddObjectToObject(e, "accuracy_mean");
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
  }
  free(v);
  free(ord);
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

int probe_report(const probe_run *R, grid_result *res, const infer_result *ir, hid_t h5, cJSON **out,
                 rd_status *st) {
  const probe_opts *o = R->o;
  int T = o->n_tasks, M = R->n_models;
  double *acc = calloc((size_t)(M * T), sizeof(double));
  if (!acc) abort();
  cJSON *result;
  if (o->n_models == 0) {
    result = model_report(R, 0, res, &ir[0], h5, acc, st);
  } else {
    result = cJSON_CreateObject();
    cJSON *models = cJSON_AddObjectToObject(result, "models");
    for (int m = 0; m < M && st->code == RD_OK; m++)
      cJSON_AddItemToObject(models, o->models[m], model_report(R, m, res, &ir[m], h5, acc + m * T, st));
    comparison_json(o, M, acc, result);
  }
  cJSON_AddStringToObject(result, "mode", o->mode == PROBE_LBFGS ? "lbfgs" : "mrmbench");
  add_deviations(o, result);
  free(acc);
  if (st->code != RD_OK) {
    cJSON_Delete(result);
    return st->code;
  }
  *out = result;
  return RD_OK;
}
