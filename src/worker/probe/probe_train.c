/* probe, mode mrmbench: MRMBench's training of linear probes (docs/reference.md, 'mrmbench
 * training'): one epoch of 128-row batches in a seeded order, AdamW with a cosine schedule and
 * gradient clipping per head, one head per learning rate trained side by side. A batch's gradient
 * is the fixed tree over its 8 units (probe_tree.c): a rank evaluates its units in one pass
 * (rd_probe_tree_grad_cpu), or a backend computes each unit's partial; with shared memory each rank
 * applies AdamW to its share of the weights (elementwise, so the shares change no bits). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe_internal.h"
#include "rmdiag/kernels/backend.h"
#include "rmdiag/kernels/rng.h"

/* Kaiming-uniform init of PyTorch's nn.Linear: U(−1/√d, 1/√d) rounded to float32, element (o, j)
 * from draw o·d + j of replicate `seed` of stream "probe.init.TASK"; every head starts alike. */
static void init_heads(const probe_run *R, const ptask *p, int64_t seed, int L, double *W) {
  int64_t d = p->X.d, K = p->K;
  if (R->o->init_zeros) {
    memset(W, 0, sizeof(double) * (size_t)(L * K * d));
    return;
  }
  rd_stream s;
  char purpose[300];
  snprintf(purpose, sizeof purpose, "probe.init.%s", R->o->tasks[p->t].name);
  rd_stream_init(&s, R->seed, R->job->name, purpose);
  double bound = 1.0 / sqrt((double)d);
  for (int64_t o = 0; o < K; o++)
    for (int64_t j = 0; j < d; j++) {
      double u = rd_rng_uniform(&s, (uint64_t)seed, (uint64_t)(o * d + j));
      W[o * d + j] = (double)(float)(-bound + 2.0 * bound * u);
    }
  for (int l = 1; l < L; l++) memcpy(W + l * K * d, W, sizeof(double) * (size_t)(K * d));
}

/* The batch order: a Fisher–Yates shuffle of the n training positions, draw k (k = 0..n−2) of
 * replicate `seed` of stream "probe.order.TASK" choosing among the first n − k positions. */
static void batch_order(const probe_run *R, const ptask *p, int64_t seed, int64_t *perm) {
  int64_t n = p->n_tr;
  rd_stream s;
  char purpose[300];
  snprintf(purpose, sizeof purpose, "probe.order.%s", R->o->tasks[p->t].name);
  rd_stream_init(&s, R->seed, R->job->name, purpose);
  for (int64_t i = 0; i < n; i++) perm[i] = p->tr[i];
  for (int64_t i = n - 1, k = 0; i > 0; i--, k++) {
    int64_t j = (int64_t)rd_rng_below(&s, (uint64_t)seed, (uint64_t)k, (uint64_t)(i + 1));
    int64_t t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
}

typedef struct mrm_state {
  probe_run *R;
  const rd_probe_heads *h;
  rowset *rows;
  int64_t u0, u1;     /* the rank's units */
  int64_t first;      /* local position of the batch's first row of unit u0 */
  int64_t b;          /* batch rows */
  int64_t seg_lo;     /* local position of the loaded segment's first row */
  double *leafbuf;    /* backend partials of the rank's units (stored) */
} mrm_state;

static int mrm_leaf(void *arg, int64_t u, double *dst, int accumulate, rd_status *st) {
  mrm_state *s = arg;
  int64_t a0, a1, lo, hi;
  rd_split_range(s->b, RD_PROBE_UNITS, (int)s->u0, &a0, &a1);
  rd_split_range(s->b, RD_PROBE_UNITS, (int)u, &lo, &hi);
  int64_t len = rd_probe_grad_len(s->h, 0);
  if (s->leafbuf) {
    const double *v = s->leafbuf + (u - s->u0) * len;
    if (accumulate) rd_probe_add(dst, v, len);
    else memcpy(dst, v, sizeof(double) * (size_t)len);
    return RD_OK;
  }
  int64_t at = s->first + (lo - a0);
  rd_probe_block blk = {.rows = s->rows->ptr + at, .n = hi - lo, .y = s->rows->y + at, .scale = 1.0 / (double)s->b};
  (void)st;
  if (rd_probe_block_grad_cpu(s->h, &blk, 0, accumulate, dst, NULL) < 0)
    rd_abort(s->R->ctx, __FILE__, __LINE__, "out of memory in the gradient kernel");
  return RD_OK;
}

/* The rank's units [lo, lo + n) of the batch in one pass (rd_probe_tree_grad_cpu). */
static int mrm_node(void *arg, int64_t lo, int64_t n, double *dst, rd_status *st) {
  mrm_state *s = arg;
  int64_t a0, a1, uoff[RD_PROBE_UNITS + 1], l0 = 0;
  rd_split_range(s->b, RD_PROBE_UNITS, (int)s->u0, &a0, &a1);
  for (int64_t k = 0; k < n; k++) {
    int64_t ulo, uhi;
    rd_split_range(s->b, RD_PROBE_UNITS, (int)(lo + k), &ulo, &uhi);
    if (k == 0) l0 = ulo;
    uoff[k] = ulo - l0;
    uoff[k + 1] = uhi - l0;
  }
  int64_t at = s->first + (l0 - a0);
  (void)st;
  if (rd_probe_tree_grad_cpu(s->h, s->rows->ptr + at, s->rows->y + at, uoff, (int)n, 1.0 / (double)s->b, dst) != 0)
    rd_abort(s->R->ctx, __FILE__, __LINE__, "out of memory in the gradient kernel");
  return RD_OK;
}

/* One (model, task, seed) on a group: its rows, tree, weights and optimizer state. */
typedef struct mrm_run {
  probe_run *R;
  const rd_ctx *g;
  ptask *p;
  int L;
  int64_t n, d, K, O, Td;  /* training rows, features, outputs per head, outputs, batches */
  int64_t u0, u1;          /* the rank's units of each batch */
  int64_t *boff;           /* [Td + 1] local position of each batch's first row */
  rowset rows;
  tree_ws ws;
  const rd_probe_kernels *gk;
  MPI_Win wwin;            /* the weights' shared window, or MPI_WIN_NULL */
  double *W, *M, *V, *G, *leafbuf;
  int64_t e0, e1;          /* the parameters this rank updates */
  rd_probe_heads h;
  mrm_state ms;
} mrm_run;

/* Rows of batch t (the last one may be short). */
static int64_t batch_rows(const mrm_run *r, int64_t t) {
  return r->n - t * RD_PROBE_BATCH < RD_PROBE_BATCH ? r->n - t * RD_PROBE_BATCH : RD_PROBE_BATCH;
}

/* The rank's rows: in each batch of the seed's order, the positions of its units [u0, u1). */
static void mrm_rows(mrm_run *r, int64_t seed, rd_status *st) {
  const rd_ctx *g = r->g;
  const int U = RD_PROBE_UNITS;
  int64_t *perm = malloc(sizeof(int64_t) * (size_t)(r->n ? r->n : 1));
  r->boff = malloc(sizeof(int64_t) * (size_t)(r->Td + 1));
  r->M = probe_alloc64(r->O * r->d, 1);
  r->V = probe_alloc64(r->O * r->d, 1);
  r->G = probe_alloc64(r->O * r->d, 0);
  if (!perm || !r->boff || !r->M || !r->V || !r->G) rd_abort(g, __FILE__, __LINE__, "out of memory for training");
  batch_order(r->R, r->p, seed, perm);
  int64_t nloc = 0;
  for (int64_t t = 0; t < r->Td; t++) {
    int64_t b = batch_rows(r, t), a0, a1, c0, c1;
    rd_split_range(b, U, (int)r->u0, &a0, &a1);
    rd_split_range(b, U, (int)(r->u1 - 1), &c0, &c1);
    r->boff[t] = nloc;
    nloc += r->u1 > r->u0 ? c1 - a0 : 0;
  }
  r->boff[r->Td] = nloc;
  if (rowset_alloc(&r->rows, nloc, st) != RD_OK) rd_abort(g, __FILE__, __LINE__, "out of memory for training rows");
  for (int64_t t = 0; t < r->Td; t++) {
    int64_t b = batch_rows(r, t), a0, a1;
    rd_split_range(b, U, (int)r->u0, &a0, &a1);
    for (int64_t i = r->boff[t]; i < r->boff[t + 1]; i++) {
      r->rows.row[i] = perm[t * RD_PROBE_BATCH + a0 + (i - r->boff[t])];
      r->rows.y[i] = r->p->cls[r->rows.row[i]];
    }
  }
  free(perm);
}

/* The tree over the units, and the weights: in a window shared by the group when the tree's
 * exchange is (each rank then updates its share e0..e1 and needs the gradient of those heads
 * only), else per rank. */
static void mrm_weights(mrm_run *r, int64_t seed) {
  const rd_ctx *g = r->g;
  int64_t Kd = r->K * r->d, n_par = r->O * r->d;
  if (probe_tree_init(&r->ws, RD_PROBE_UNITS, n_par, g) != 0)
    rd_abort(g, __FILE__, __LINE__, "out of memory for the reduction tree");
  /* which exchange the group uses, for RMDIAG_TIMING (a group of one exchanges nothing) */
  if (g->size > 1)
    rd_timing_mark(g->rank, r->R->job->name, r->ws.shared ? "exchange: shared memory" : "exchange: MPI_Allgatherv");
  r->gk = probe_gpu_kernels(r->R);
  r->wwin = MPI_WIN_NULL;
  r->W = r->ws.shared && !r->gk ? probe_shared_doubles(g, n_par, &r->wwin) : probe_alloc64(n_par, 0);
  if (!r->W) rd_abort(g, __FILE__, __LINE__, "out of memory for training");
  if (r->wwin == MPI_WIN_NULL || g->rank == 0) init_heads(r->R, r->p, seed, r->L, r->W);
  if (r->wwin != MPI_WIN_NULL) probe_shared_sync(g, r->wwin);
  r->e0 = 0;
  r->e1 = n_par;
  if (r->wwin != MPI_WIN_NULL) {
    rd_split_range(n_par, g->size, g->rank, &r->e0, &r->e1);
    r->ws.out_lo = r->e1 > r->e0 ? r->e0 / Kd * Kd : 0;
    r->ws.out_hi = r->e1 > r->e0 ? ((r->e1 - 1) / Kd + 1) * Kd : 0;
  }
  r->h = (rd_probe_heads){.d = r->d, .L = r->L, .K = (int)r->K, .W = r->W, .b = NULL};
  r->leafbuf = r->gk ? probe_alloc64((r->u1 - r->u0 + 1) * n_par, 0) : NULL;
  if (r->gk && !r->leafbuf) rd_abort(g, __FILE__, __LINE__, "out of memory");
  r->ms = (mrm_state){.R = r->R, .h = &r->h, .rows = &r->rows, .u0 = r->u0, .u1 = r->u1};
}

/* The backend's partial gradient of each of the rank's units of batch t (rows of batch t, b rows). */
static void mrm_device_units(mrm_run *r, int64_t t, int64_t b, rd_status *st) {
  const int U = RD_PROBE_UNITS;
  int64_t r0[RD_PROBE_UNITS], nr[RD_PROBE_UNITS], a0, a1;
  rd_split_range(b, U, (int)r->u0, &a0, &a1);
  for (int64_t u = r->u0; u < r->u1; u++) {
    int64_t lo, hi;
    rd_split_range(b, U, (int)u, &lo, &hi);
    r0[u - r->u0] = r->boff[t] + (lo - a0) - r->ms.seg_lo;
    nr[u - r->u0] = hi - lo;
  }
  char err[512] = "";
  if (r->gk->block_grads(r->rows.dev, &r->h, (int)(r->u1 - r->u0), r0, nr, r->rows.y + r->ms.seg_lo,
                         1.0 / (double)b, r->leafbuf, err, sizeof err) != 0)
    rd_fail(st, RD_EFAIL, "%s backend: probe gradient kernel failed: %s", r->R->ctx->backend->name, err);
  r->ms.leafbuf = r->leafbuf;
}

/* AdamW at step t on the rank's share of each head, the gradient clipped by the head's norm. */
static void mrm_step(mrm_run *r, int64_t t, const double *lrs) {
  static const rd_adamw aw = {.beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8, .wd = 0.1};
  int64_t Kd = r->K * r->d;
  double cosf = 0.5 * (1.0 + cos(M_PI * (double)t / (double)r->Td));
  for (int l = 0; l < r->L; l++) {
    int64_t a = l * Kd > r->e0 ? l * Kd : r->e0, z = (l + 1) * Kd < r->e1 ? (l + 1) * Kd : r->e1;
    if (a >= z) continue;
    double norm = sqrt(rd_probe_sumsq(r->G + l * Kd, Kd));
    double clip = 1.0 / (norm + 1e-6);
    rd_probe_adamw_step(&aw, t, lrs[l] * cosf, clip < 1.0 ? clip : 1.0, r->G + a, r->W + a, r->M + a, r->V + a, z - a);
  }
}

/* The epoch in segments of batches whose rows fit the memory budget (one segment when mapped);
 * the segments are the same on every rank of the group (the batches per segment follow from the
 * largest share a rank can hold of a batch), so the agreement after each load is collective. */
static void mrm_epoch(mrm_run *r, const double *lrs, rd_progress *prog, int64_t *prog_done, rd_status *st) {
  const rd_ctx *g = r->g;
  const int U = RD_PROBE_UNITS;
  int64_t cap = (feat_mapped(r->R, &r->p->X) && !r->gk) ? INT64_MAX : probe_budget_rows(r->R, r->d, RD_PROBE_BATCH);
  int64_t share = ((U + g->size - 1) / g->size) * ((RD_PROBE_BATCH + U - 1) / U);
  int64_t per_seg = cap == INT64_MAX ? r->Td : cap / share;
  if (per_seg < 1) per_seg = 1;
  int64_t seg_t0 = 0, seg_t1 = 0;
  rd_timing_mark(r->R->ctx->rank, r->R->job->name, "order+init");
  for (int64_t t = 0; t < r->Td && st->code == RD_OK; t++) {
    if (t == seg_t1) {
      seg_t0 = t;
      seg_t1 = t + per_seg < r->Td ? t + per_seg : r->Td;
      rowset_load(r->R, &r->p->X, &r->rows, r->boff[seg_t0], r->boff[seg_t1], 1, st);
      if (rd_agree(g, st) != RD_OK) break;
      r->ms.seg_lo = r->boff[seg_t0];
    }
    int64_t b = batch_rows(r, t);
    r->ms.b = b;
    r->ms.first = r->boff[t];
    if (r->gk && r->u1 > r->u0) mrm_device_units(r, t, b, st);
    if (probe_tree_allreduce(g, U, mrm_leaf, r->gk ? NULL : mrm_node, &r->ms, r->gk != NULL, &r->ws, r->G, st) !=
        RD_OK)
      break;
    mrm_step(r, t, lrs);
    if (r->wwin != MPI_WIN_NULL) probe_shared_sync(g, r->wwin);
    if (prog) rd_progress_update(prog, ++*prog_done);
  }
  rd_timing_mark(r->R->ctx->rank, r->R->job->name, "epoch");
}

/* Frees what the epoch used (the weights stay). */
static void mrm_release(mrm_run *r) {
  probe_tree_free(&r->ws);
  free(r->leafbuf);
  rowset_free(r->R, &r->rows);
  free(r->boff);
  free(r->M);
  free(r->V);
  free(r->G);
}

/* Validation and test predictions of every head; group rank 0 fills res[l]. */
static void mrm_results(mrm_run *r, grid_result *res, rd_status *st) {
  const rd_ctx *g = r->g;
  ptask *p = r->p;
  int L = r->L;
  int64_t Kd = r->K * r->d;
  int32_t *vp = g->rank == 0 ? malloc(sizeof(int32_t) * (size_t)(p->n_va * L + 1)) : NULL;
  int32_t *tp = g->rank == 0 ? malloc(sizeof(int32_t) * (size_t)(p->n_te * L + 1)) : NULL;
  if (g->rank == 0 && (!vp || !tp)) rd_abort(g, __FILE__, __LINE__, "out of memory");
  int64_t *nv = calloc((size_t)L, sizeof(int64_t)), *nt = calloc((size_t)L, sizeof(int64_t));
  if (!nv || !nt) rd_abort(g, __FILE__, __LINE__, "out of memory");
  if (probe_predict(r->R, g, &p->X, p->va, p->n_va, &r->h, vp, nv, st) == RD_OK)
    probe_predict(r->R, g, &p->X, p->te, p->n_te, &r->h, tp, nt, st);
  rd_timing_mark(r->R->ctx->rank, r->R->job->name, "evaluate");
  if (g->rank == 0 && st->code == RD_OK) {
    for (int l = 0; l < L; l++) {
      grid_result *x = &res[l];
      x->W = malloc(sizeof(double) * (size_t)Kd);
      x->val_pred = malloc(sizeof(int32_t) * (size_t)(p->n_va + 1));
      x->test_pred = malloc(sizeof(int32_t) * (size_t)(p->n_te + 1));
      if (!x->W || !x->val_pred || !x->test_pred) rd_abort(g, __FILE__, __LINE__, "out of memory");
      memcpy(x->W, r->W + l * Kd, sizeof(double) * (size_t)Kd);
      for (int64_t i = 0; i < p->n_va; i++) x->val_pred[i] = vp[i * L + l];
      for (int64_t i = 0; i < p->n_te; i++) x->test_pred[i] = tp[i * L + l];
      x->near_val = nv[l];
      x->near_test = nt[l];
    }
  }
  free(nv);
  free(nt);
  free(vp);
  free(tp);
}

int probe_train_mrmbench(probe_run *R, const rd_ctx *g, ptask *p, int64_t seed, const double *lrs, int L,
                         grid_result *res, rd_progress *prog, int64_t *prog_done, rd_status *st) {
  mrm_run r;
  memset(&r, 0, sizeof r);
  r.R = R;
  r.g = g;
  r.p = p;
  r.L = L;
  r.n = p->n_tr;
  r.d = p->X.d;
  r.K = p->K;
  r.O = (int64_t)L * r.K;
  r.Td = (r.n + RD_PROBE_BATCH - 1) / RD_PROBE_BATCH;
  rd_split_range(RD_PROBE_UNITS, g->size, g->rank, &r.u0, &r.u1);
  mrm_rows(&r, seed, st);
  mrm_weights(&r, seed);
  mrm_epoch(&r, lrs, prog, prog_done, st);
  mrm_release(&r);
  if (rd_agree(g, st) == RD_OK) mrm_results(&r, res, st);
  probe_shared_free(r.W, &r.wwin);
  return st->code;
}
