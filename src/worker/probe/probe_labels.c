/* probe: labels mapped to classes and splits (read on rank 0, shared with every rank), the row
 * lists of each (model, task) with the deterministic 10 % validation holdout, and the preparation
 * that strings them together with the layout check and the feature mappings. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe_internal.h"
#include "rmdiag/kernels/rng.h"

/* ---- labels and splits (rank 0) -------------------------------------------------------------- */

/* The class of raw label `lab` in task `to` (-1: in no class list). */
static int class_of(const probe_task_opt *to, int64_t lab) {
  for (int k = 0; k < to->n_classes; k++)
    for (int j = 0; j < to->class_len[k]; j++)
      if (to->class_labels[k][j] == lab) return k;
  return -1;
}

/* Rank 0: reads label and split of one (model, task) and maps labels to classes. */
static int read_labels(hid_t f, const rd_job *job, const probe_opts *o, ptask *p, rd_status *st) {
  const probe_task_opt *to = &o->tasks[p->t];
  int64_t N = p->X.N;
  int64_t *lab = malloc(sizeof(int64_t) * (size_t)(N ? N : 1)), *spl = malloc(sizeof(int64_t) * (size_t)(N ? N : 1));
  p->cls = malloc((size_t)(N ? N : 1));
  p->split = malloc((size_t)(N ? N : 1));
  if (!lab || !spl || !p->cls || !p->split) {
    free(lab);
    free(spl);
    return rd_fail(st, RD_EFAIL, "out of memory reading labels");
  }
  rd_dsinfo li, si;
  int rc = rd_h5_info(f, job->input, p->label_path, &li, st);
  if (rc == RD_OK) rc = rd_h5_info(f, job->input, p->split_path, &si, st);
  if (rc == RD_OK) rc = rd_h5_read_int_rows(f, job->input, &li, 0, N, lab, st);
  if (rc == RD_OK) rc = rd_h5_read_int_rows(f, job->input, &si, 0, N, spl, st);
  for (int64_t i = 0; rc == RD_OK && i < N; i++) {
    if (spl[i] < 0 || spl[i] > 2) {
      rc = rd_fail(st, RD_EINPUT, "%s: %s[%lld] = %lld, expected 0 (train), 1 (validation) or 2 (test)", job->input,
                   p->split_path, (long long)i, (long long)spl[i]);
      break;
    }
    p->split[i] = (uint8_t)spl[i];
    int c = class_of(to, lab[i]);
    p->cls[i] = (int8_t)c;
    if (c < 0) {
      if (lab[i] == -1) p->dropped_missing++;
      else p->dropped_other++;
    }
  }
  free(lab);
  free(spl);
  return rc;
}

/* ---- sharing with every rank ----------------------------------------------------------------- */

/* Collective: each (model, task)'s scalar fields, classes and splits from rank 0; the inference
 * sources; then the error keys of every feature dataset. Pointers that are per rank start empty. */
static void share_tasks(probe_run *R) {
  const rd_ctx *ctx = R->ctx;
  for (int i = 0; i < R->n_pt; i++) {
    ptask *p = &R->pt[i];
    int8_t *cls = p->cls;
    uint8_t *spl = p->split;
    rd_bcast_bytes(ctx, p, sizeof *p, 0);
    if (ctx->rank != 0) {
      cls = malloc((size_t)(p->X.N ? p->X.N : 1));
      spl = malloc((size_t)(p->X.N ? p->X.N : 1));
      if (!cls || !spl) rd_abort(ctx, __FILE__, __LINE__, "out of memory for labels");
    }
    p->cls = cls;
    p->split = spl;
    p->tr = p->va = p->te = NULL;
    p->train_count = NULL;
    p->X.base = NULL;
    p->X.chunk_at = NULL;
    p->X.map_base = NULL;
    p->X.map_len = 0;
    p->X.touched = 0;
    rd_bcast_bytes(ctx, p->cls, (size_t)p->X.N, 0);
    rd_bcast_bytes(ctx, p->split, (size_t)p->X.N, 0);
  }
  rd_bcast_bytes(ctx, R->infer, sizeof(feat_src) * (size_t)R->n_models, 0);
  for (int m = 0; m < R->n_models; m++) {
    R->infer[m].base = NULL;
    R->infer[m].chunk_at = NULL;
    R->infer[m].map_base = NULL;
    R->infer[m].map_len = 0;
    R->infer[m].touched = 0;
  }
  /* error keys: an element's position in the fixed order of all datasets' elements */
  int64_t key = 0;
  for (int k = 0; k < R->n_pt + R->n_models; k++) {
    feat_src *X = k < R->n_pt ? &R->pt[k].X : &R->infer[k - R->n_pt];
    X->key_base = key;
    key += X->N * X->d;
  }
}

/* ---- row lists ------------------------------------------------------------------------------- */

typedef struct hold_key {
  uint64_t u;
  int64_t i;
} hold_key;

static int cmp_hold(const void *a, const void *b) {
  const hold_key *x = a, *y = b;
  if (x->u != y->u) return x->u < y->u ? -1 : 1;
  return (x->i > y->i) - (x->i < y->i);
}

/* Without validation rows, a deterministic 10 % of the n[0] training rows lists[0] becomes
 * validation: the rows with the smallest draws of stream "probe.holdout.TASK" (draw = position in
 * train, ties to the earlier position). Replaces lists[0] and lists[1] and their counts. */
static int holdout(const probe_run *R, const probe_task_opt *to, int64_t *lists[3], int64_t n[3], rd_status *st) {
  int64_t nh = (n[0] + 5) / 10;
  if (nh < 1) nh = 1;
  hold_key *keys = malloc(sizeof(hold_key) * (size_t)n[0]);
  int64_t *tr = malloc(sizeof(int64_t) * (size_t)n[0]), *va = malloc(sizeof(int64_t) * (size_t)nh);
  uint8_t *is_va = calloc((size_t)n[0], 1);
  if (!keys || !tr || !va || !is_va) return rd_fail(st, RD_EFAIL, "out of memory");
  rd_stream s;
  char purpose[300];
  snprintf(purpose, sizeof purpose, "probe.holdout.%s", to->name);
  rd_stream_init(&s, R->seed, R->job->name, purpose);
  for (int64_t i = 0; i < n[0]; i++) {
    keys[i].u = rd_rng_u64(&s, 0, (uint64_t)i);
    keys[i].i = i;
  }
  qsort(keys, (size_t)n[0], sizeof *keys, cmp_hold);
  for (int64_t i = 0; i < nh; i++) is_va[keys[i].i] = 1;
  int64_t a = 0, b = 0;
  for (int64_t i = 0; i < n[0]; i++) {
    if (is_va[i]) va[b++] = lists[0][i];
    else tr[a++] = lists[0][i];
  }
  free(keys);
  free(is_va);
  free(lists[0]);
  free(lists[1]);
  lists[0] = tr;
  lists[1] = va;
  n[0] = a;
  n[1] = b;
  return RD_OK;
}

/* What every task needs: a training row in each class, validation rows and test rows. */
static int check_lists(const probe_run *R, const ptask *p, rd_status *st) {
  const probe_task_opt *to = &R->o->tasks[p->t];
  const char *file = R->job->input;
  for (int c = 0; c < p->C; c++)
    if (p->train_count[c] == 0)
      return rd_fail(st, RD_EINPUT, "%s: task \"%s\" (%s): class %d (raw labels %s%lld%s) has no training rows%s; "
                     "expected every class in the training split", file, to->name, p->prefix, c,
                     to->class_len[c] > 1 ? "[" : "", (long long)to->class_labels[c][0],
                     to->class_len[c] > 1 ? ", ...]" : "", p->holdout ? " after the validation holdout" : "");
  if (p->n_va == 0)
    return rd_fail(st, RD_EINPUT, "%s: task \"%s\" (%s): no validation rows and too few training rows (%lld) to hold "
                   "out 10 %%", file, to->name, p->prefix, (long long)p->n_tr);
  if (p->n_te == 0)
    return rd_fail(st, RD_EINPUT, "%s: task \"%s\": %s has no test rows (split = 2) with a label in the class "
                   "lists; expected a test split", file, to->name, p->split_path);
  return RD_OK;
}

/* Every rank: the row lists of a (model, task) from its classes and splits (with the holdout when
 * there are no validation rows), and the training rows per class. */
static int ptask_lists(const probe_run *R, ptask *p, rd_status *st) {
  const probe_task_opt *to = &R->o->tasks[p->t];
  int64_t N = p->X.N, n[3] = {0, 0, 0};
  p->C = to->n_classes;
  p->K = (R->o->mode == PROBE_MRMBENCH && p->C == 2) ? 1 : p->C;
  for (int64_t i = 0; i < N; i++)
    if (p->cls[i] >= 0) n[p->split[i]]++;
  int64_t *lists[3];
  for (int s = 0; s < 3; s++) lists[s] = malloc(sizeof(int64_t) * (size_t)(n[s] ? n[s] : 1));
  p->train_count = calloc((size_t)p->C, sizeof(int64_t));
  if (!lists[0] || !lists[1] || !lists[2] || !p->train_count) return rd_fail(st, RD_EFAIL, "out of memory");
  int64_t k[3] = {0, 0, 0};
  for (int64_t i = 0; i < N; i++)
    if (p->cls[i] >= 0) lists[p->split[i]][k[p->split[i]]++] = i;
  if (n[1] == 0 && n[0] >= 2) {
    RD_TRY(holdout(R, to, lists, n, st));
    p->holdout = 1;
  }
  p->tr = lists[0];
  p->va = lists[1];
  p->te = lists[2];
  p->n_tr = n[0];
  p->n_va = n[1];
  p->n_te = n[2];
  for (int64_t i = 0; i < p->n_tr; i++) p->train_count[p->cls[p->tr[i]]]++;
  return check_lists(R, p, st);
}

/* ---- preparation ----------------------------------------------------------------------------- */

int probe_prepare(probe_run *R, rd_status *st) {
  const rd_ctx *ctx = R->ctx;
  if (ctx->rank == 0) {
    hid_t f;
    if (rd_h5_open(R->job->input, MPI_COMM_NULL, &f, st) == RD_OK) {
      if (probe_check_layout(f, R->job, R->o, R, st) == RD_OK)
        for (int i = 0; i < R->n_pt && st->code == RD_OK; i++) read_labels(f, R->job, R->o, &R->pt[i], st);
      rd_h5_close(f);
    }
  }
  if (rd_share_status(ctx, st, 0) != RD_OK) return st->code;
  share_tasks(R);
  for (int i = 0; i < R->n_pt && st->code == RD_OK; i++) ptask_lists(R, &R->pt[i], st);
  if (rd_agree(ctx, st) != RD_OK) return st->code;
  probe_map_features(R);
  return RD_OK;
}
