/* probe: the training configurations ("units": a (model, task) with a seed and some grid entries)
 * spread over groups of ranks, each group training its units with data parallelism inside it
 * (probe_train.c, probe_lbfgs.c), and the results packed and gathered on world rank 0. The units and
 * the groups follow from the job and the rank count only, and every result is the same bits for
 * any group size, so the report does not depend on the rank count. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe_internal.h"

typedef struct unit {
  int pt, seed;       /* (model, task) and seed index (0 for lbfgs) */
  int g0, ng;         /* grid entries [g0, g0 + ng) */
  double cost;
} unit;

/* ---- packing results ------------------------------------------------------------------------- */

/* Group rank 0 packs a unit's results as doubles: per grid entry W, b, iterations, grad_norm,
 * status, near_val, near_test, val_pred, test_pred; unit_len doubles in all. */
static int64_t unit_len(const probe_run *R, const unit *u) {
  const ptask *p = &R->pt[u->pt];
  int64_t K = R->o->mode == PROBE_LBFGS ? p->C : p->K;
  return (int64_t)u->ng * (K * p->X.d + (R->o->mode == PROBE_LBFGS ? K : 0) + 5 + p->n_va + p->n_te);
}

static void unit_pack(const probe_run *R, const unit *u, const grid_result *res, double *out) {
  const ptask *p = &R->pt[u->pt];
  int lb = R->o->mode == PROBE_LBFGS;
  int64_t K = lb ? p->C : p->K, d = p->X.d, pos = 0;
  for (int k = 0; k < u->ng; k++) {
    const grid_result *r = &res[k];
    memcpy(out + pos, r->W, sizeof(double) * (size_t)(K * d));
    pos += K * d;
    if (lb) {
      memcpy(out + pos, r->b, sizeof(double) * (size_t)K);
      pos += K;
    }
    out[pos++] = (double)r->iterations;
    out[pos++] = r->grad_norm;
    out[pos++] = (double)r->status;
    out[pos++] = (double)r->near_val;
    out[pos++] = (double)r->near_test;
    for (int64_t i = 0; i < p->n_va; i++) out[pos++] = r->val_pred[i];
    for (int64_t i = 0; i < p->n_te; i++) out[pos++] = r->test_pred[i];
  }
}

static int unit_unpack(const probe_run *R, const unit *u, const double *in, grid_result *res) {
  const ptask *p = &R->pt[u->pt];
  int lb = R->o->mode == PROBE_LBFGS;
  int64_t K = lb ? p->C : p->K, d = p->X.d, pos = 0;
  for (int k = 0; k < u->ng; k++) {
    grid_result *r = &res[k];
    r->W = malloc(sizeof(double) * (size_t)(K * d));
    r->b = lb ? malloc(sizeof(double) * (size_t)K) : NULL;
    r->val_pred = malloc(sizeof(int32_t) * (size_t)(p->n_va + 1));
    r->test_pred = malloc(sizeof(int32_t) * (size_t)(p->n_te + 1));
    if (!r->W || (lb && !r->b) || !r->val_pred || !r->test_pred) return -1;
    memcpy(r->W, in + pos, sizeof(double) * (size_t)(K * d));
    pos += K * d;
    if (lb) {
      memcpy(r->b, in + pos, sizeof(double) * (size_t)K);
      pos += K;
    }
    r->iterations = (int64_t)in[pos++];
    r->grad_norm = in[pos++];
    r->status = (int)in[pos++];
    r->near_val = (int64_t)in[pos++];
    r->near_test = (int64_t)in[pos++];
    for (int64_t i = 0; i < p->n_va; i++) r->val_pred[i] = (int32_t)in[pos++];
    for (int64_t i = 0; i < p->n_te; i++) r->test_pred[i] = (int32_t)in[pos++];
  }
  return 0;
}

static void results_free_entries(grid_result *res, int64_t n) {
  for (int64_t i = 0; res && i < n; i++) {
    free(res[i].W);
    free(res[i].b);
    free(res[i].val_pred);
    free(res[i].test_pred);
  }
}

void probe_results_free(grid_result *res, int64_t n) {
  results_free_entries(res, n);
  free(res);
}

/* ---- units and groups ------------------------------------------------------------------------ */

/* Ranks a unit needs for its data: a rank keeps its share of the training rows in memory unless
 * they are mapped (and trained on the CPU); at most RD_PROBE_UNITS. */
static int64_t ranks_needed(const probe_run *R) {
  int64_t need = 1;
  for (int i = 0; i < R->n_pt; i++) {
    const ptask *p = &R->pt[i];
    if (p->X.map_offset >= 0 && !probe_gpu_kernels(R)) continue;
    int64_t bytes = p->n_tr * p->X.d * (int64_t)sizeof(float), budget = R->o->max_memory_mb * ((int64_t)1 << 20);
    int64_t k = (bytes + budget - 1) / budget;
    if (k > need) need = k;
  }
  return need > RD_PROBE_UNITS ? RD_PROBE_UNITS : need;
}

/* The units: lbfgs (model, task, l2); mrmbench (model, task, seed) with all learning rates, whose
 * grid is cut into chunks only when ranks would otherwise stay idle. cost[k] estimates unit k's
 * work for the assignment to groups. */
static unit *make_units(const probe_run *R, int64_t *n_units, double **cost_out) {
  const probe_opts *o = R->o;
  int lb = o->mode == PROBE_LBFGS, U = RD_PROBE_UNITS;
  int S = lb ? 1 : o->n_seeds, NG = o->n_grid;
  int64_t P = R->ctx->size;
  int64_t C = (int64_t)R->n_pt * S * (lb ? NG : 1);
  int64_t chunks = 1;
  if (!lb) {
    int64_t want = (P + C * U - 1) / (C * U);
    chunks = want < NG ? want : NG;
    if (chunks < 1) chunks = 1;
  }
  *n_units = C * chunks;
  unit *units = calloc((size_t)*n_units, sizeof *units);
  double *cost = malloc(sizeof(double) * (size_t)*n_units);
  if (!units || !cost) rd_abort(R->ctx, __FILE__, __LINE__, "out of memory");
  int64_t k = 0;
  for (int i = 0; i < R->n_pt; i++)
    for (int s = 0; s < S; s++)
      for (int64_t c = 0; c < (lb ? NG : chunks); c++) {
        unit *u = &units[k];
        u->pt = i;
        u->seed = s;
        if (lb) {
          u->g0 = (int)c;
          u->ng = 1;
        } else {
          int64_t lo, hi;
          rd_split_range(NG, (int)chunks, (int)c, &lo, &hi);
          u->g0 = (int)lo;
          u->ng = (int)(hi - lo);
        }
        const ptask *p = &R->pt[i];
        u->cost = (double)p->n_tr * (double)p->X.d * (lb ? 50.0 * p->C : (double)u->ng * p->K + 1.0);
        cost[k] = u->cost;
        k++;
      }
  *cost_out = cost;
  return units;
}

/* The rank's group among G: group g holds ranks rd_split_range(P, G, g), at most RD_PROBE_UNITS of
 * them (MPI_UNDEFINED for a rank left out). */
static int group_color(const rd_ctx *ctx, int64_t G) {
  int color = MPI_UNDEFINED;
  for (int64_t gi = 0; gi < G; gi++) {
    int64_t lo, hi;
    rd_split_range(ctx->size, (int)G, (int)gi, &lo, &hi);
    if (hi - lo > RD_PROBE_UNITS) hi = lo + RD_PROBE_UNITS;
    if (ctx->rank >= lo && ctx->rank < hi) color = (int)gi;
  }
  return color;
}

/* ---- training a group's units ---------------------------------------------------------------- */

/* What a group trains and where its rank 0 packs the results: per unit its index, its length and
 * its packed results. */
typedef struct group_work {
  const unit *units;
  int64_t n_units;
  const int *owner;
  int color;
  double *pack;
  int64_t npack;
} group_work;

/* Collective over the group: trains the group's units in order; group rank 0 packs each unit's
 * results. Progress counts mrmbench batches on world rank 0's group. */
static void group_train(probe_run *R, const rd_ctx *gctx, group_work *gw, rd_status *st) {
  const rd_ctx *ctx = R->ctx;
  const probe_opts *o = R->o;
  int lb = o->mode == PROBE_LBFGS, NG = o->n_grid;
  int64_t total = 0, total_len = 0, prog_done = 0;
  for (int64_t u = 0; u < gw->n_units; u++)
    if (gw->owner[u] == gw->color) {
      const ptask *p = &R->pt[gw->units[u].pt];
      total += lb ? 0 : (p->n_tr + RD_PROBE_BATCH - 1) / RD_PROBE_BATCH;
      total_len += 2 + unit_len(R, &gw->units[u]);
    }
  rd_progress prog;
  rd_progress_begin(&prog, (ctx->rank == 0 && !ctx->quiet) ? ctx->err : NULL, R->job->name, "training", total);
  if (gctx->rank == 0) {
    gw->pack = malloc(sizeof(double) * (size_t)(total_len + 1));
    if (!gw->pack) rd_abort(ctx, __FILE__, __LINE__, "out of memory packing results");
  }
  grid_result *tmp = calloc((size_t)NG, sizeof *tmp);
  double *lrs = malloc(sizeof(double) * (size_t)NG);
  if (!tmp || !lrs) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  for (int64_t u = 0; u < gw->n_units && st->code == RD_OK; u++) {
    if (gw->owner[u] != gw->color) continue;
    const unit *un = &gw->units[u];
    ptask *p = &R->pt[un->pt];
    memset(tmp, 0, sizeof *tmp * (size_t)NG);
    if (lb) {
      probe_train_lbfgs(R, gctx, p, o->grid[un->g0], tmp, st);
    } else {
      for (int j = 0; j < un->ng; j++) lrs[j] = o->grid[un->g0 + j];
      probe_train_mrmbench(R, gctx, p, o->seeds[un->seed], lrs, un->ng, tmp, &prog, &prog_done, st);
    }
    if (gctx->rank == 0 && st->code == RD_OK) {
      gw->pack[gw->npack++] = (double)u;
      gw->pack[gw->npack++] = (double)unit_len(R, un);
      unit_pack(R, un, tmp, gw->pack + gw->npack);
      gw->npack += unit_len(R, un);
    }
    results_free_entries(tmp, NG);
  }
  free(tmp);
  free(lrs);
  if (ctx->rank == 0) rd_progress_end(&prog);
}

/* ---- gathering ------------------------------------------------------------------------------- */

/* Collective over the world: every group rank 0's packed results to world rank 0, unpacked there
 * into res[(pt * S + seed) * NG + g]. */
static void gather_results(probe_run *R, const unit *units, const group_work *gw, grid_result **res_out) {
  const rd_ctx *ctx = R->ctx;
  const probe_opts *o = R->o;
  int S = o->mode == PROBE_LBFGS ? 1 : o->n_seeds, NG = o->n_grid;
  int64_t P = ctx->size;
  if (gw->npack > INT32_MAX) rd_abort(ctx, __FILE__, __LINE__, "probe results too large to gather");
  int mine = (int)gw->npack, *counts = NULL, *displs = NULL;
  double *all = NULL;
  if (ctx->rank == 0) {
    counts = malloc(sizeof(int) * (size_t)P);
    displs = malloc(sizeof(int) * (size_t)P);
    if (!counts || !displs) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  }
  RD_MPI_CHECK(ctx, MPI_Gather(&mine, 1, MPI_INT, counts, 1, MPI_INT, 0, ctx->comm));
  int64_t total = 0;
  if (ctx->rank == 0) {
    for (int r = 0; r < P; r++) {
      displs[r] = (int)total;
      total += counts[r];
    }
    if (total > INT32_MAX) rd_abort(ctx, __FILE__, __LINE__, "probe results too large to gather");
    all = malloc(sizeof(double) * (size_t)(total ? total : 1));
    if (!all) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  }
  RD_MPI_CHECK(ctx, MPI_Gatherv(gw->pack, mine, MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, 0, ctx->comm));
  if (ctx->rank == 0) {
    int64_t n_res = (int64_t)R->n_pt * S * NG;
    grid_result *res = calloc((size_t)n_res, sizeof *res);
    if (!res) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
    for (int64_t pos = 0; pos < total;) {
      int64_t u = (int64_t)all[pos], len = (int64_t)all[pos + 1];
      const unit *un = &units[u];
      int64_t at = ((int64_t)un->pt * S + un->seed) * NG + un->g0;
      if (unit_unpack(R, un, all + pos + 2, res + at) != 0) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
      pos += 2 + len;
    }
    *res_out = res;
  }
  free(all);
  free(counts);
  free(displs);
}

int probe_train_all(probe_run *R, grid_result **res_out, rd_status *st) {
  const rd_ctx *ctx = R->ctx;
  int64_t need = ranks_needed(R), n_units;
  double *cost;
  unit *units = make_units(R, &n_units, &cost);
  int64_t G = ctx->size / need;
  if (G > n_units) G = n_units;
  if (G < 1) G = 1;
  group_work gw = {.units = units, .n_units = n_units, .color = group_color(ctx, G)};
  int *owner = malloc(sizeof(int) * (size_t)n_units);
  if (!owner) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  rd_assign_tasks(n_units, cost, (int)G, owner);
  gw.owner = owner;
  MPI_Comm gcomm;
  RD_MPI_CHECK(ctx, MPI_Comm_split(ctx->comm, gw.color, ctx->rank, &gcomm));
  rd_ctx gctx;
  memset(&gctx, 0, sizeof gctx);
  if (gcomm != MPI_COMM_NULL) {
    if (rd_ctx_init(&gctx, gcomm, NULL, NULL) != RD_OK)
      rd_abort(ctx, __FILE__, __LINE__, "cannot split the communicator");
    gctx.backend = ctx->backend;
    gctx.quiet = 1;
    group_train(R, &gctx, &gw, st);
  }
  if (rd_agree(ctx, st) == RD_OK) gather_results(R, units, &gw, res_out);
  free(gw.pack);
  if (gcomm != MPI_COMM_NULL) {
    rd_ctx_free(&gctx);
    MPI_Comm_free(&gcomm);
  }
  free(units);
  free(cost);
  free(owner);
  return st->code;
}
