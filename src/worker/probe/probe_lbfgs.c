/* probe, mode lbfgs (docs/reference.md, 'lbfgs training'): multinomial logistic regression with a
 * bias and an L2 penalty on the weights, fitted from zero by L-BFGS (memory 10, two-loop recursion,
 * strong-Wolfe line search) until the gradient's largest entry is at most tol or max_iter, optionally
 * on standardized features. The full-batch objective is the fixed tree over leaves of 64 training
 * rows (probe_tree.c), so every rank of the group takes the same steps. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe_internal.h"

/* Training rows per L-BFGS leaf. */
#define LB_LEAF 64
#define LB_MEMORY 10

typedef struct lb_state {
  probe_run *R;
  ptask *p;
  rowset *rows;         /* the rank's training rows (local position = train index − first) */
  int64_t first;        /* train index of the rank's first row */
  int64_t seg_lo, seg_hi;
  int64_t cap;          /* rows that fit the budget */
  const rd_probe_heads *h;
  int what;             /* 0: gradient, 1: Σx, 2: Σ(x − mean)² */
  const double *mean;
  double *tmp;          /* leaf scratch */
  /* standardization (NULL: none): the gradient is taken on (x − mu)/sd formed in float64 */
  const double *mu, *sd, *inv_sd;
  double *xs, *zr, *part;  /* scratch: LB_STD_ROWS standardized rows, their logits and residuals, a partial */
} lb_state;

/* Rows per group of the standardized gradient. */
#define LB_STD_ROWS 8

/* The partial gradient of rows [lo, lo + n) of the leaf on standardized rows xs = (x − mu)·(1/sd)
 * (each element formed in float64), in groups of LB_STD_ROWS rows: z = W xs + b (rd_probe_dot_f64, fixed
 * order), residuals and loss (rd_probe_residuals), then G[k, j] += r_k xs_j and gb[k] += r_k row after
 * row (rd_probe_outer_acc), so every sum runs over the rows in order; residuals and loss scaled by
 * 1/N. Working on standardized values directly keeps the precision that raw-space weights (W/sd,
 * b − Σ W·mu/sd) lose to cancellation when |mu|/sd is large. */
static void lb_leaf_std(lb_state *s, int64_t lo, int64_t n, double *dst, int accumulate) {
  const rd_probe_heads *h = s->h;
  int64_t d = h->d, K = h->K, len = K * d + K + 1;
  double scale = 1.0 / (double)s->p->n_tr, *xs = s->xs, *z = s->zr, *r = s->zr + LB_STD_ROWS * K;
  double *out = accumulate ? s->part : dst, *G = out, *gb = out + K * d;
  double lsum = 0.0;
  memset(out, 0, sizeof(double) * (size_t)len);
  for (int64_t i0 = 0; i0 < n; i0 += LB_STD_ROWS) {
    int64_t m = n - i0 < LB_STD_ROWS ? n - i0 : LB_STD_ROWS;
    for (int64_t i = 0; i < m; i++) rd_probe_standardize(s->rows->ptr[lo + i0 + i], s->mu, s->inv_sd, d, xs + i * d);
    rd_probe_dot_f64(xs, m, d, h->W, K, z);
    for (int64_t i = 0; i < m; i++) {
      for (int64_t k = 0; k < K; k++) z[i * K + k] += h->b[k];
      rd_probe_residuals(1, (int)K, z + i * K, s->rows->y[lo + i0 + i], r + i * K, &lsum);
      for (int64_t k = 0; k < K; k++) {
        r[i * K + k] *= scale;
        gb[k] += r[i * K + k];
      }
    }
    rd_probe_outer_acc(G, K, d, r, xs, m);
  }
  out[K * d + K] = lsum * scale;
  if (accumulate) rd_probe_add(dst, out, len);
}

static int lb_ensure(lb_state *s, int64_t lo, int64_t hi, rd_status *st) {
  if (lo >= s->seg_lo && hi <= s->seg_hi) return RD_OK;
  int64_t end = lo + s->cap;
  if (end < hi) end = hi;
  if (end > s->rows->n) end = s->rows->n;
  s->seg_lo = lo;
  s->seg_hi = end;
  return rowset_load(s->R, &s->p->X, s->rows, lo, end, 0, st);
}

static int lb_leaf(void *arg, int64_t leaf, double *dst, int accumulate, rd_status *st) {
  lb_state *s = arg;
  int64_t lo = leaf * LB_LEAF - s->first, hi = lo + LB_LEAF;
  if (leaf * LB_LEAF + LB_LEAF > s->p->n_tr) hi = s->p->n_tr - s->first;
  RD_TRY(lb_ensure(s, lo, hi, st));
  int64_t d = s->p->X.d, n = hi - lo;
  if (s->what == 0 && s->mu) {
    lb_leaf_std(s, lo, n, dst, accumulate);
    return RD_OK;
  }
  if (s->what == 0) {
    rd_probe_block blk = {.rows = s->rows->ptr + lo, .n = n, .y = s->rows->y + lo, .scale = 1.0 / (double)s->p->n_tr};
    if (rd_probe_block_grad_cpu(s->h, &blk, 1, accumulate, dst, NULL) < 0)
      return rd_fail(st, RD_EFAIL, "out of memory in the gradient kernel");
    return RD_OK;
  }
  /* column sums over the leaf's rows in order */
  double *v = accumulate ? s->tmp : dst;
  for (int64_t j = 0; j < d; j++) v[j] = 0.0;
  for (int64_t i = 0; i < n; i++) {
    const float *x = s->rows->ptr[lo + i];
    if (s->what == 1)
      for (int64_t j = 0; j < d; j++) v[j] += (double)x[j];
    else
      for (int64_t j = 0; j < d; j++) {
        double t = (double)x[j] - s->mean[j];
        v[j] += t * t;
      }
  }
  if (accumulate) rd_probe_add(dst, v, d);
  return RD_OK;
}

static double max_abs(const double *x, int64_t n) {
  double m = 0.0;
  for (int64_t i = 0; i < n; i++)
    if (fabs(x[i]) > m || isnan(x[i])) m = isnan(x[i]) ? NAN : (fabs(x[i]) > m ? fabs(x[i]) : m);
  return m;
}

static double dotp(const double *a, const double *b, int64_t n) {
  double s = 0.0;
  for (int64_t i = 0; i < n; i++) s += a[i] * b[i];
  return s;
}

typedef struct lb_problem {
  lb_state *s;
  const rd_ctx *g;
  tree_ws *ws;
  int64_t J, K, d;
  double l2;
  double *Wk, *bk;         /* the kernel's parameters (= θ) */
  double *vec;             /* tree result [G (K d), gb (K), loss] */
  int64_t evals;
} lb_problem;

/* f and its gradient at θ = [W (K×d), b (K)], in standardized units when standardizing (the rows
 * are standardized as they are used). Collective. */
static int lb_eval(lb_problem *P, const double *theta, double *f, double *grad, rd_status *st) {
  int64_t K = P->K, d = P->d, nW = K * d;
  memcpy(P->Wk, theta, sizeof(double) * (size_t)nW);
  memcpy(P->bk, theta + nW, sizeof(double) * (size_t)K);
  P->s->what = 0;
  RD_TRY(probe_tree_allreduce(P->g, P->J, lb_leaf, NULL, P->s, 1, P->ws, P->vec, st));
  P->evals++;
  const double *G = P->vec, *gb = P->vec + nW;
  double loss = P->vec[nW + K];
  double pen = 0.0;
  for (int64_t i = 0; i < nW; i++) pen += theta[i] * theta[i];
  *f = loss + 0.5 * P->l2 * pen;
  for (int64_t i = 0; i < nW; i++) grad[i] = G[i] + P->l2 * theta[i];
  for (int64_t k = 0; k < K; k++) grad[nW + k] = gb[k];
  return RD_OK;
}

/* Cubic interpolation minimizer between (a, fa, ga) and (b, fb, gb), safeguarded into [lo, hi]. */
static double cubic_min(double a, double fa, double ga, double b, double fb, double gb) {
  double d1 = ga + gb - 3.0 * (fa - fb) / (a - b);
  double disc = d1 * d1 - ga * gb;
  double lo = a < b ? a : b, hi = a < b ? b : a;
  if (disc >= 0.0 && isfinite(disc)) {
    double d2 = sqrt(disc) * (b > a ? 1.0 : -1.0);
    double t = b - (b - a) * ((gb + d2 - d1) / (gb - ga + 2.0 * d2));
    if (isfinite(t) && t > lo + 0.1 * (hi - lo) && t < hi - 0.1 * (hi - lo)) return t;
  }
  return 0.5 * (a + b);
}

/* Strong-Wolfe line search (Nocedal & Wright, Alg. 3.5/3.6; c1 = 1e-4, c2 = 0.9) along p from x.
 * On success x_new, f_new, g_new hold the accepted point; returns 1, or 0 when no acceptable step
 * was found within 40 evaluations. Collective (every rank takes the same decisions). */
static int line_search(lb_problem *P, int64_t n, const double *x, double f0, const double *g0, const double *p,
                       double alpha1, double *x_new, double *f_new, double *g_new, rd_status *st) {
  const double c1 = 1e-4, c2 = 0.9;
  double dg0 = dotp(g0, p, n);
  if (!(dg0 < 0.0)) return 0;
  double a_prev = 0.0, f_prev = f0, dg_prev = dg0, a = alpha1;
  double a_lo = 0, f_lo = 0, dg_lo = 0, a_hi = 0, f_hi = 0, dg_hi = 0;
  int zoom = 0;
  for (int it = 0; it < 40; it++) {
    for (int64_t i = 0; i < n; i++) x_new[i] = x[i] + a * p[i];
    if (lb_eval(P, x_new, f_new, g_new, st) != RD_OK) return 0;
    double dg = dotp(g_new, p, n);
    if (!zoom) {
      if (!(*f_new <= f0 + c1 * a * dg0) || (it > 0 && *f_new >= f_prev)) {
        zoom = 1;
        a_lo = a_prev; f_lo = f_prev; dg_lo = dg_prev;
        a_hi = a; f_hi = *f_new; dg_hi = dg;
      } else if (fabs(dg) <= -c2 * dg0) {
        return 1;
      } else if (dg >= 0.0) {
        zoom = 1;
        a_lo = a; f_lo = *f_new; dg_lo = dg;
        a_hi = a_prev; f_hi = f_prev; dg_hi = dg_prev;
      } else {
        a_prev = a; f_prev = *f_new; dg_prev = dg;
        a = 2.0 * a;
        continue;
      }
    } else {
      if (!(*f_new <= f0 + c1 * a * dg0) || *f_new >= f_lo) {
        a_hi = a; f_hi = *f_new; dg_hi = dg;
      } else {
        if (fabs(dg) <= -c2 * dg0) return 1;
        if (dg * (a_hi - a_lo) >= 0.0) {
          a_hi = a_lo; f_hi = f_lo; dg_hi = dg_lo;
        }
        a_lo = a; f_lo = *f_new; dg_lo = dg;
      }
    }
    if (fabs(a_hi - a_lo) <= 1e-16 * fabs(a_lo)) break;
    a = cubic_min(a_lo, f_lo, dg_lo, a_hi, f_hi, dg_hi);
  }
  /* accept the best point with sufficient decrease if the curvature test never passed */
  if (zoom && a_lo > 0.0 && f_lo < f0) {
    for (int64_t i = 0; i < n; i++) x_new[i] = x[i] + a_lo * p[i];
    if (lb_eval(P, x_new, f_new, g_new, st) != RD_OK) return 0;
    return 2;
  }
  return 0;
}

/* ---- one fit --------------------------------------------------------------------------------- */

/* One (model, task) and l2 on a group: the rank's rows, the tree, the iterate and L-BFGS memory. */
typedef struct lb_run {
  probe_run *R;
  const rd_ctx *g;
  ptask *p;
  int64_t d, K, J, nth;    /* features, classes, leaves, parameters (K d weights, K biases) */
  rowset rows;
  lb_state s;
  tree_ws ws;
  lb_problem P;
  rd_probe_heads h;
  double *mem, *stdbuf;    /* the blocks below point into */
  double *x, *gr, *xn, *gn, *dir, *q, *S, *Y, *vec, *mu, *sdv, *Wraw, *braw, *tmp;
  double rho[LB_MEMORY], alpha[LB_MEMORY];
  int64_t m, head;         /* pairs remembered, the slot of the next one */
  int64_t iter;
  int status;              /* 0 converged, 1 max_iter, 2 line search stalled */
  double f, gmax;
} lb_run;

/* The rank's training rows (its leaves' rows, loaded at once when they fit the budget) and the
 * fit's vectors (zero: the fit starts from θ = 0). Collective: agreed. */
static int lb_setup(lb_run *r, rd_status *st) {
  const rd_ctx *g = r->g;
  ptask *p = r->p;
  int64_t d = r->d, K = r->K, n_tr = p->n_tr, a, b;
  rd_split_range(r->J, g->size, g->rank, &a, &b);
  int64_t first = a * LB_LEAF, last = b * LB_LEAF < n_tr ? b * LB_LEAF : n_tr;
  if (rowset_alloc(&r->rows, last > first ? last - first : 0, st) != RD_OK)
    rd_abort(g, __FILE__, __LINE__, "out of memory");
  for (int64_t i = first; i < last; i++) {
    r->rows.row[i - first] = p->tr[i];
    r->rows.y[i - first] = p->cls[p->tr[i]];
  }
  int64_t nth = r->nth;
  r->mem = calloc((size_t)(nth * (2 * LB_MEMORY + 6) + (K * d + K + 1) + 2 * d + K * d + K + 2 * d), sizeof(double));
  if (!r->mem) rd_abort(g, __FILE__, __LINE__, "out of memory for L-BFGS");
  r->x = r->mem;
  r->gr = r->x + nth;
  r->xn = r->gr + nth;
  r->gn = r->xn + nth;
  r->dir = r->gn + nth;
  r->q = r->dir + nth;
  r->S = r->q + nth;
  r->Y = r->S + LB_MEMORY * nth;
  r->vec = r->Y + LB_MEMORY * nth;
  r->mu = r->vec + (K * d + K + 1);
  r->sdv = r->mu + d;
  r->Wraw = r->sdv + d;
  r->braw = r->Wraw + K * d;
  r->tmp = r->braw + K;
  r->h = (rd_probe_heads){.d = d, .L = 1, .K = (int)K, .W = r->Wraw, .b = r->braw};
  r->s = (lb_state){.R = r->R, .p = p, .rows = &r->rows, .first = first, .seg_lo = 0, .seg_hi = 0, .h = &r->h,
                    .tmp = r->tmp};
  r->s.cap = feat_mapped(r->R, &p->X) ? INT64_MAX : probe_budget_rows(r->R, d, LB_LEAF);
  if (r->s.cap >= r->rows.n) {
    r->s.cap = r->rows.n;
    lb_ensure(&r->s, 0, r->rows.n, st);
  }
  r->s.seg_hi = r->s.cap >= r->rows.n ? r->rows.n : 0;
  return rd_agree(g, st);
}

/* Train mean and sd (ddof 0; a zero sd counts as 1) by the same fixed tree, and the scratch the
 * standardized gradient uses. */
static void lb_standardize(lb_run *r, rd_status *st) {
  const rd_ctx *g = r->g;
  int64_t d = r->d, K = r->K, n_tr = r->p->n_tr;
  lb_state *s = &r->s;
  tree_ws ws1;
  if (probe_tree_init(&ws1, r->J, d, g) != 0) rd_abort(g, __FILE__, __LINE__, "out of memory for the tree");
  s->what = 1;
  if (probe_tree_allreduce(g, r->J, lb_leaf, NULL, s, 1, &ws1, r->mu, st) == RD_OK) {
    for (int64_t j = 0; j < d; j++) r->mu[j] /= (double)n_tr;
    s->what = 2;
    s->mean = r->mu;
    if (probe_tree_allreduce(g, r->J, lb_leaf, NULL, s, 1, &ws1, r->sdv, st) == RD_OK)
      for (int64_t j = 0; j < d; j++) {
        double v = sqrt(r->sdv[j] / (double)n_tr);
        r->sdv[j] = v > 0.0 ? v : 1.0;
      }
  }
  probe_tree_free(&ws1);
  r->stdbuf = malloc(sizeof(double) * (size_t)(d + LB_STD_ROWS * (d + 2 * K) + K * d + K + 1));
  if (!r->stdbuf) rd_abort(g, __FILE__, __LINE__, "out of memory for L-BFGS");
  double *inv = r->stdbuf;
  for (int64_t j = 0; j < d; j++) inv[j] = 1.0 / r->sdv[j];
  s->mu = r->mu;
  s->sd = r->sdv;
  s->inv_sd = inv;
  s->xs = r->stdbuf + d;
  s->zr = s->xs + LB_STD_ROWS * d;
  s->part = s->zr + 2 * LB_STD_ROWS * K;
}

/* The search direction dir = −H g by the two-loop recursion over the remembered pairs (steepest
 * descent, memory dropped, when that is not a descent direction), and the first trial step. */
static double lb_direction(lb_run *r) {
  int64_t nth = r->nth, m = r->m, head = r->head;
  double *q = r->q, *S = r->S, *Y = r->Y, *gr = r->gr, *dir = r->dir;
  for (int64_t i = 0; i < nth; i++) q[i] = gr[i];
  for (int64_t k = 0; k < m; k++) {
    int64_t j = (head - 1 - k + LB_MEMORY) % LB_MEMORY;
    r->alpha[j] = r->rho[j] * dotp(S + j * nth, q, nth);
    for (int64_t i = 0; i < nth; i++) q[i] -= r->alpha[j] * Y[j * nth + i];
  }
  double gamma = 1.0;
  if (m > 0) {
    int64_t j = (head - 1 + LB_MEMORY) % LB_MEMORY;
    gamma = dotp(S + j * nth, Y + j * nth, nth) / dotp(Y + j * nth, Y + j * nth, nth);
  }
  for (int64_t i = 0; i < nth; i++) q[i] *= gamma;
  for (int64_t k = m - 1; k >= 0; k--) {
    int64_t j = (head - 1 - k + LB_MEMORY) % LB_MEMORY;
    double beta = r->rho[j] * dotp(Y + j * nth, q, nth);
    for (int64_t i = 0; i < nth; i++) q[i] += S[j * nth + i] * (r->alpha[j] - beta);
  }
  for (int64_t i = 0; i < nth; i++) dir[i] = -q[i];
  double alpha1 = 1.0;
  if (dotp(dir, gr, nth) >= 0.0) { /* not a descent direction: restart from steepest descent */
    r->m = 0;
    for (int64_t i = 0; i < nth; i++) dir[i] = -gr[i];
  }
  if (r->m == 0) {
    double gn2 = sqrt(dotp(gr, gr, nth));
    alpha1 = gn2 > 0 ? 1.0 / gn2 : 1.0;
    if (alpha1 > 1.0) alpha1 = 1.0;
  }
  return alpha1;
}

/* Accepts the step: remembers the pair (s, y) when its curvature is safely positive, and moves. */
static void lb_accept(lb_run *r, double fn) {
  int64_t nth = r->nth;
  double *sv = r->S + r->head * nth, *yv = r->Y + r->head * nth;
  for (int64_t i = 0; i < nth; i++) {
    sv[i] = r->xn[i] - r->x[i];
    yv[i] = r->gn[i] - r->gr[i];
  }
  double sy = dotp(sv, yv, nth);
  if (sy > 1e-10 * sqrt(dotp(sv, sv, nth) * dotp(yv, yv, nth))) {
    r->rho[r->head] = 1.0 / sy;
    r->head = (r->head + 1) % LB_MEMORY;
    if (r->m < LB_MEMORY) r->m++;
  }
  memcpy(r->x, r->xn, sizeof(double) * (size_t)nth);
  memcpy(r->gr, r->gn, sizeof(double) * (size_t)nth);
  r->f = fn;
}

/* L-BFGS from θ = 0 until max|∇f| <= tol or max_iter, or until the line search stalls (after one
 * retry along −g without memory). Collective: every rank takes the same decisions. */
static void lb_minimize(lb_run *r, rd_status *st) {
  const probe_opts *o = r->R->o;
  r->f = 0.0;
  r->iter = r->m = r->head = 0;
  r->status = 1;
  if (st->code != RD_OK || lb_eval(&r->P, r->x, &r->f, r->gr, st) != RD_OK) return;
  for (;;) {
    double gmax = max_abs(r->gr, r->nth);
    if (gmax <= o->tol) {
      r->status = 0;
      break;
    }
    if (r->iter >= o->max_iter) {
      r->status = 1;
      break;
    }
    double alpha1 = lb_direction(r), fn;
    int ok = line_search(&r->P, r->nth, r->x, r->f, r->gr, r->dir, alpha1, r->xn, &fn, r->gn, st);
    if (st->code != RD_OK) break;
    if (!ok) {
      if (r->m > 0) { /* drop the memory once and retry along −g */
        r->m = 0;
        continue;
      }
      r->status = 2;
      break;
    }
    r->iter++;
    lb_accept(r, fn);
  }
}

/* Raw-space parameters (undoing the standardization), validation and test predictions; group
 * rank 0 fills *res. */
static void lb_results(lb_run *r, grid_result *res, rd_status *st) {
  const rd_ctx *g = r->g;
  ptask *p = r->p;
  int64_t K = r->K, d = r->d;
  for (int64_t k = 0; k < K; k++) {
    double shift = 0.0;
    for (int64_t j = 0; j < d; j++) {
      double w = r->x[k * d + j];
      if (r->s.sd) {
        w /= r->s.sd[j];
        shift += w * r->s.mu[j];
      }
      r->Wraw[k * d + j] = w;
    }
    r->braw[k] = r->x[K * d + k] - shift;
  }
  int32_t *vp = g->rank == 0 ? malloc(sizeof(int32_t) * (size_t)(p->n_va + 1)) : NULL;
  int32_t *tp = g->rank == 0 ? malloc(sizeof(int32_t) * (size_t)(p->n_te + 1)) : NULL;
  if (g->rank == 0 && (!vp || !tp)) rd_abort(g, __FILE__, __LINE__, "out of memory");
  int64_t nv = 0, nt = 0;
  if (probe_predict(r->R, g, &p->X, p->va, p->n_va, &r->h, vp, &nv, st) == RD_OK)
    probe_predict(r->R, g, &p->X, p->te, p->n_te, &r->h, tp, &nt, st);
  if (g->rank == 0 && st->code == RD_OK) {
    res->W = malloc(sizeof(double) * (size_t)(K * d));
    res->b = malloc(sizeof(double) * (size_t)K);
    if (!res->W || !res->b) rd_abort(g, __FILE__, __LINE__, "out of memory");
    memcpy(res->W, r->Wraw, sizeof(double) * (size_t)(K * d));
    memcpy(res->b, r->braw, sizeof(double) * (size_t)K);
    res->val_pred = vp;
    res->test_pred = tp;
    res->near_val = nv;
    res->near_test = nt;
    res->iterations = r->iter;
    res->grad_norm = r->gmax;
    res->status = r->status;
    vp = tp = NULL;
  }
  free(vp);
  free(tp);
}

int probe_train_lbfgs(probe_run *R, const rd_ctx *g, ptask *p, double l2, grid_result *res, rd_status *st) {
  lb_run r;
  memset(&r, 0, sizeof r);
  r.R = R;
  r.g = g;
  r.p = p;
  r.d = p->X.d;
  r.K = p->C;
  r.J = (p->n_tr + LB_LEAF - 1) / LB_LEAF;
  r.nth = r.K * r.d + r.K;
  if (lb_setup(&r, st) != RD_OK) {
    rowset_free(R, &r.rows);
    free(r.mem);
    return st->code;
  }
  if (probe_tree_init(&r.ws, r.J, r.K * r.d + r.K + 1, g) != 0)
    rd_abort(g, __FILE__, __LINE__, "out of memory for the tree");
  r.P = (lb_problem){.s = &r.s, .g = g, .ws = &r.ws, .J = r.J, .K = r.K, .d = r.d, .l2 = l2, .Wk = r.Wraw,
                     .bk = r.braw, .vec = r.vec};
  if (R->o->standardize) lb_standardize(&r, st);
  lb_minimize(&r, st);
  r.gmax = max_abs(r.gr, r.nth);
  probe_tree_free(&r.ws);
  free(r.stdbuf);
  rowset_free(R, &r.rows);
  if (rd_agree(g, st) == RD_OK) lb_results(&r, res, st);
  free(r.mem);
  return st->code;
}
