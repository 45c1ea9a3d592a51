/* probe: what the report makes of the trained probes (docs/reference.md, 'Selection and metrics'):
 * the grid entry selected on mean validation accuracy over seeds, near ties, test metrics of the
 * selected entry, and the spread of the test accuracy over seeds with its t interval. */
#include <math.h>
#include <stdlib.h>

#include "probe_internal.h"
#include "rmdiag/common/jsonutil.h"
#include "rmdiag/kernels/stats.h"

/* ---- selection ------------------------------------------------------------------------------- */

static int64_t val_correct(const ptask *p, const int32_t *pred) {
  int64_t correct = 0;
  for (int64_t i = 0; i < p->n_va; i++) correct += pred[i] == p->cls[p->va[i]];
  return correct;
}

double probe_val_accuracy(const ptask *p, const int32_t *pred) {
  return (double)val_correct(p, pred) / (double)p->n_va;
}

int probe_select(const ptask *p, const grid_result *gr, int S, int NG, double *val_mean) {
  int sel = 0;
  int64_t best = -1;
  for (int g = 0; g < NG; g++) {
    int64_t total = 0;
    for (int s = 0; s < S; s++) total += val_correct(p, gr[s * NG + g].val_pred);
    val_mean[g] = (double)total / ((double)S * (double)p->n_va);
    if (total > best) {
      best = total;
      sel = g;
    }
  }
  return sel;
}

void probe_near_ties(const grid_result *gr, int S, int NG, int sel, int64_t *val, int64_t *test) {
  *val = *test = 0;
  for (int s = 0; s < S; s++) {
    for (int g = 0; g < NG; g++) *val += gr[s * NG + g].near_val;
    *test += gr[s * NG + sel].near_test;
  }
}

/* ---- test metrics ---------------------------------------------------------------------------- */

void probe_test_metrics(const ptask *p, const int32_t *pred, test_metrics *m) {
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

cJSON *probe_metrics_json(const ptask *p, const test_metrics *m) {
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

/* ---- spread over seeds ----------------------------------------------------------------------- */

void probe_accuracy_spread(const double *accs, int S, int64_t test_total, int64_t n_te, double *mean, double *sd,
                           double ci[2], int *has_ci) {
  rd_mean_sd(accs, (size_t)S, mean, sd);
  /* the mean as one division of counts: equal means are equal numbers (model rankings tie exactly) */
  *mean = (double)test_total / ((double)S * (double)n_te);
  *has_ci = S >= 2;
  if (*has_ci) {
    double half = rd_t_quantile(0.975, (double)(S - 1)) * *sd / sqrt((double)S);
    ci[0] = *mean - half;
    ci[1] = *mean + half;
  }
}
