/* Training the probes: configurations spread over groups of ranks, data parallelism inside a group
 * through a fixed reduction tree, MRMBench's AdamW loop and multinomial L-BFGS.
 *
 * Determinism. A sum over rows is a fixed pairwise tree over fixed leaves (the 8 units of a batch in
 * mrmbench mode; blocks of 64 training rows for L-BFGS). A rank owns a contiguous range of leaves,
 * evaluates the largest tree nodes inside its range, and the group exchanges those nodes (through
 * shared memory when the group is on one node, else allgather) and completes the same tree, so every
 * rank holds the same bits and the result does not depend on the number of ranks. Within a leaf,
 * rows are summed in order. In mrmbench mode a node is evaluated in one pass
 * (rd_probe_tree_grad_cpu), and with shared memory each rank applies AdamW to its share of the
 * weights (elementwise, so the shares change no bits). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe_internal.h"
#include "rmdiag/kernels/backend.h"
#include "rmdiag/common/progress.h"
#include "rmdiag/kernels/rng.h"

/* Training rows per L-BFGS leaf. */
#define LB_LEAF 64
/* Rows per block when evaluating validation and test rows. */
#define EVAL_BLOCK 256
#define LB_MEMORY 10

/* ---- fixed reduction tree ------------------------------------------------------------------------- */

typedef int (*leaf_fn)(void *arg, int64_t leaf, double *dst, int accumulate, rd_status *st);
/* Optional: the value of a whole node (leaves [lo, lo + n) present) in one call, the same bits as
 * the tree of its leaves. */
typedef int (*node_fn)(void *arg, int64_t lo, int64_t n, double *dst, rd_status *st);

typedef struct tnode {
  int64_t lo, size;  /* aligned: lo % size == 0, size a power of two */
} tnode;

typedef struct tree_ws {
  int64_t len;       /* doubles per node value */
  int64_t depth;
  double *scratch;   /* (depth + 2) * len */
  /* the nodes each rank evaluates (rank-major) */
  tnode *nodes;
  int64_t total, mine, first;  /* all ranks' nodes, this rank's, the index of its first */
  int *counts, *displs;        /* doubles per rank and their offsets (MPI_Allgatherv) */
  const double **vals;         /* value of each node, for the root */
  int64_t out_lo, out_hi;      /* the elements of the root the caller reads (all by default) */
  /* exchange through MPI_Allgatherv ... */
  double *send, *recv;
  /* ... or, when the group shares memory, through a shared window: rank r writes its nodes into
   * seg[r] (two halves used in turn, so a rank never overwrites values another may still read) */
  MPI_Win win;
  int shared, half;
  double **seg;
} tree_ws;

static int64_t pow2_ceil(int64_t J) {
  int64_t p = 1;
  while (p < J) p *= 2;
  return p;
}

/* The largest nodes whose leaves (those below J) lie in [a, b), left to right. */
static int64_t tree_cover(int64_t J, tnode node, int64_t a, int64_t b, tnode *out, int64_t n) {
  int64_t lo = node.lo, hi = node.lo + node.size < J ? node.lo + node.size : J;
  if (lo >= J || hi <= a || lo >= b || a >= b) return n;
  if (lo >= a && hi <= b) {
    out[n++] = node;
    return n;
  }
  tnode l = {node.lo, node.size / 2}, r = {node.lo + node.size / 2, node.size / 2};
  n = tree_cover(J, l, a, b, out, n);
  return tree_cover(J, r, a, b, out, n);
}

/* dst = value of `node`: left child, then + right child (a leaf added in place by f). */
static int tree_eval(int64_t J, tnode node, leaf_fn f, node_fn nf, void *arg, double *dst, double *scratch,
                     int64_t len, rd_status *st) {
  if (nf) return nf(arg, node.lo, node.lo + node.size < J ? node.size : J - node.lo, dst, st);
  if (node.size == 1) return f(arg, node.lo, dst, 0, st);
  tnode l = {node.lo, node.size / 2}, r = {node.lo + node.size / 2, node.size / 2};
  RD_TRY(tree_eval(J, l, f, nf, arg, dst, scratch, len, st));
  if (r.lo >= J) return RD_OK;
  if (r.size == 1) return f(arg, r.lo, dst, 1, st);
  RD_TRY(tree_eval(J, r, f, nf, arg, scratch, scratch + len, len, st));
  rd_probe_add(dst, scratch, len);
  return RD_OK;
}

static const double *tree_find(tnode node, const tnode *nodes, const double *const *vals, int64_t n_nodes) {
  for (int64_t k = 0; k < n_nodes; k++)
    if (nodes[k].lo == node.lo && nodes[k].size == node.size) return vals[k];
  return NULL;
}

/* Root value from the nodes every rank contributed (identical on every rank): a node received is
 * taken as it is, else left + right (read straight from the received values when they are there). */
static void tree_root(int64_t J, tnode node, const tnode *nodes, const double *const *vals, int64_t n_nodes,
                      double *dst, double *scratch, int64_t len) {
  const double *have = tree_find(node, nodes, vals, n_nodes);
  if (have) {
    memcpy(dst, have, sizeof(double) * (size_t)len);
    return;
  }
  tnode l = {node.lo, node.size / 2}, r = {node.lo + node.size / 2, node.size / 2};
  const double *lv = tree_find(l, nodes, vals, n_nodes);
  const double *rv = r.lo < J ? tree_find(r, nodes, vals, n_nodes) : NULL;
  if (!lv) {
    tree_root(J, l, nodes, vals, n_nodes, dst, scratch, len);
    lv = dst;
  }
  if (r.lo >= J) {
    if (lv != dst) memcpy(dst, lv, sizeof(double) * (size_t)len);
    return;
  }
  if (!rv) {
    tree_root(J, r, nodes, vals, n_nodes, scratch, scratch + len, len);
    rv = scratch;
  }
  rd_probe_add3(dst, lv, rv, len);
}

/* Vectors of doubles start on a cache line: the kernels read and write them 64 bytes at a time, and
 * a vector split over two lines costs both. */
static double *alloc64(int64_t n, int zero) {
  size_t bytes = (sizeof(double) * (size_t)(n > 0 ? n : 1) + 63) & ~(size_t)63;
  double *p = aligned_alloc(64, bytes);
  if (p && zero) memset(p, 0, bytes);
  return p;
}

/* The first cache-line boundary at or after p (a shared window's segment is placed by MPI: each rank
 * asks 64 bytes more and starts there; the offset within a page is the same in every process). */
static double *align64(double *p) {
  return (double *)(((uintptr_t)p + 63) & ~(uintptr_t)63);
}

/* Whether the exchange may go through shared memory (RMDIAG_PROBE_SHM=0 turns it off). */
static int shm_allowed(void) {
  const char *e = getenv("RMDIAG_PROBE_SHM");
  return !(e && strcmp(e, "0") == 0);
}

/* Collective over the group (J leaves, node values of len doubles). */
static int ws_init(tree_ws *w, int64_t J, int64_t len, const rd_ctx *g) {
  memset(w, 0, sizeof *w);
  w->win = MPI_WIN_NULL;
  w->len = len;
  w->out_hi = len;
  int gsize = g->size;
  int64_t P2 = pow2_ceil(J), depth = 0;
  while (((int64_t)1 << depth) < P2) depth++;
  w->depth = depth;
  w->scratch = alloc64((depth + 2) * len, 0);
  int64_t cap = (2 * depth + 2) * gsize;
  w->nodes = malloc(sizeof(tnode) * (size_t)cap);
  w->vals = malloc(sizeof(double *) * (size_t)cap);
  w->counts = malloc(sizeof(int) * (size_t)gsize);
  w->displs = malloc(sizeof(int) * (size_t)gsize);
  w->seg = malloc(sizeof(double *) * (size_t)gsize);
  if (!w->scratch || !w->nodes || !w->vals || !w->counts || !w->displs || !w->seg) return -1;
  if (gsize == 1) return 0;
  tnode root = {0, P2};
  for (int r = 0; r < gsize; r++) {
    int64_t a, b;
    rd_split_range(J, gsize, r, &a, &b);
    int64_t n = tree_cover(J, root, a, b, w->nodes + w->total, 0);
    if (n * len > INT32_MAX || w->total * len > INT32_MAX) return -1;
    w->counts[r] = (int)(n * len);
    w->displs[r] = (int)(w->total * len);
    if (r == g->rank) {
      w->first = w->total;
      w->mine = n;
    }
    w->total += n;
  }
  /* every rank of the group on this node: values are read where they were written */
  int local = g->node_size == gsize && shm_allowed(), all_local = 0, ok = 0;
  MPI_Allreduce(&local, &all_local, 1, MPI_INT, MPI_MIN, g->comm);
  if (all_local) {
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "alloc_shared_noncontig", "true");
    double *base = NULL;
    MPI_Aint bytes = (MPI_Aint)(sizeof(double) * (size_t)(2 * w->mine * len + 8));
    int rc = MPI_Win_allocate_shared(bytes, (int)sizeof(double), info, g->comm, &base, &w->win);
    MPI_Info_free(&info);
    ok = rc == MPI_SUCCESS;
    int all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, g->comm);
    if (all_ok) {
      for (int r = 0; r < gsize; r++) {
        MPI_Aint sz;
        int du;
        MPI_Win_shared_query(w->win, r, &sz, &du, &w->seg[r]);
        w->seg[r] = align64(w->seg[r]);
      }
      MPI_Win_lock_all(MPI_MODE_NOCHECK, w->win);
      w->shared = 1;
      return 0;
    }
    if (ok) MPI_Win_free(&w->win);
    w->win = MPI_WIN_NULL;
  }
  w->send = alloc64(w->mine * len, 0);
  w->recv = alloc64(w->total * len, 0);
  return (w->send && w->recv) ? 0 : -1;
}

/* Collective when the group shares a window. */
static void ws_free(tree_ws *w) {
  if (w->shared) {
    MPI_Win_unlock_all(w->win);
    MPI_Win_free(&w->win);
  }
  free(w->scratch);
  free(w->send);
  free(w->recv);
  free(w->counts);
  free(w->displs);
  free(w->nodes);
  free(w->vals);
  free(w->seg);
  memset(w, 0, sizeof *w);
}

/* Collective. n doubles in a window shared by the group (held by its rank 0), or NULL (*win stays
 * MPI_WIN_NULL) when it cannot be had. */
static double *shared_doubles(const rd_ctx *g, int64_t n, MPI_Win *win) {
  double *base = NULL;
  *win = MPI_WIN_NULL;
  MPI_Aint bytes = g->rank == 0 ? (MPI_Aint)(sizeof(double) * (size_t)(n + 8)) : 0;
  int ok = MPI_Win_allocate_shared(bytes, (int)sizeof(double), MPI_INFO_NULL, g->comm, &base, win) == MPI_SUCCESS;
  int all_ok = 0;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, g->comm);
  if (!all_ok) {
    if (ok) MPI_Win_free(win);
    *win = MPI_WIN_NULL;
    return NULL;
  }
  MPI_Aint sz;
  int du;
  MPI_Win_shared_query(*win, 0, &sz, &du, &base);
  MPI_Win_lock_all(MPI_MODE_NOCHECK, *win);
  return align64(base);
}

/* Collective: what each rank wrote into the window before is visible to all after. */
static void shared_sync(const rd_ctx *g, MPI_Win win) {
  MPI_Win_sync(win);
  MPI_Barrier(g->comm);
  MPI_Win_sync(win);
}

/* Frees p: the shared window (collective) or the heap block. */
static void shared_free(double *p, MPI_Win *win) {
  if (*win != MPI_WIN_NULL) {
    MPI_Win_unlock_all(*win);
    MPI_Win_free(win);
  } else {
    free(p);
  }
}

/* Collective over the group: out = Σ over leaves [0, J) by the fixed tree. Each rank evaluates the
 * leaves rd_split_range(J, size, rank). Errors of f are agreed when f may fail (it reads rows). */
static int tree_allreduce(const rd_ctx *g, int64_t J, leaf_fn f, node_fn nf, void *arg, int may_fail, tree_ws *w,
                          double *out, rd_status *st) {
  tnode root = {0, pow2_ceil(J)};
  if (g->size == 1) {
    tree_eval(J, root, f, nf, arg, out, w->scratch, w->len, st);
    return st->code;
  }
  const tnode *my = w->nodes + w->first;
  int64_t len = w->len;
  double *dst = w->shared ? w->seg[g->rank] + w->half * w->mine * len : w->send;
  for (int64_t k = 0; k < w->mine && st->code == RD_OK; k++)
    tree_eval(J, my[k], f, nf, arg, dst + k * len, w->scratch, len, st);
  if (may_fail && rd_agree(g, st) != RD_OK) return st->code;
  if (w->shared) {
    /* the values written before the barrier are visible after it */
    MPI_Win_sync(w->win);
    RD_MPI_CHECK(g, MPI_Barrier(g->comm));
    MPI_Win_sync(w->win);
    for (int r = 0, k = 0; r < g->size; r++) {
      int64_t n = w->counts[r] / len;
      for (int64_t q = 0; q < n; q++, k++) w->vals[k] = w->seg[r] + (w->half * n + q) * len;
    }
    w->half ^= 1;
  } else {
    RD_MPI_CHECK(g, MPI_Allgatherv(w->send, w->counts[g->rank], MPI_DOUBLE, w->recv, w->counts, w->displs,
                                   MPI_DOUBLE, g->comm));
    for (int64_t k = 0; k < w->total; k++) w->vals[k] = w->recv + k * len;
  }
  /* the root is elementwise: only the elements asked for */
  int64_t lo = w->out_lo, n = w->out_hi - w->out_lo;
  if (lo > 0)
    for (int64_t k = 0; k < w->total; k++) w->vals[k] += lo;
  tree_root(J, root, w->nodes, w->vals, w->total, out + lo, w->scratch, n);
  return RD_OK;
}

/* ---- rows of a training run -------------------------------------------------------------------------------- */

/* Loaded rows: pointers (into the mapping or `buf`) and targets, by local position. */
typedef struct rowset {
  int64_t n;
  const float **ptr;
  int32_t *y;
  int64_t *row;   /* input row of each local position */
  float *buf;     /* owned rows (not mapped) */
  void *dev;      /* rows uploaded to the backend */
} rowset;

static void rowset_free(probe_run *R, rowset *s) {
  if (s->dev && R->ctx->backend->probe && R->ctx->backend->probe->rows_free) R->ctx->backend->probe->rows_free(s->dev);
  free(s->ptr);
  free(s->y);
  free(s->row);
  free(s->buf);
  memset(s, 0, sizeof *s);
}

static const rd_probe_kernels *gpu_kernels(const probe_run *R) {
  const rd_probe_kernels *k = R->ctx->backend ? R->ctx->backend->probe : NULL;
  return (k && k->rows_upload && k->block_grads && k->rows_free) ? k : NULL;
}

/* Loads rows[lo, hi) of the rowset's row list: pointers into the mapping, or read into buf; with
 * `upload` (a backend with kernels) a copy goes to the device. */
static int rowset_load(probe_run *R, feat_src *X, rowset *s, int64_t lo, int64_t hi, int upload, rd_status *st) {
  int64_t n = hi - lo, d = X->d;
  const rd_probe_kernels *gk = upload ? gpu_kernels(R) : NULL;
  if (s->dev) {
    gpu_kernels(R)->rows_free(s->dev);
    s->dev = NULL;
  }
  if (n <= 0) return RD_OK;
  if (gk || !feat_mapped(R, X)) {
    free(s->buf);
    s->buf = rd_malloc_big(sizeof(float) * (size_t)(n * d), st, "feature rows");
    if (!s->buf) return st->code;
  }
  if (gk && feat_mapped(R, X)) {
    for (int64_t i = 0; i < n; i++) {
      memcpy(s->buf + i * d, X->base + s->row[lo + i] * d, sizeof(float) * (size_t)d);
      s->ptr[lo + i] = s->buf + i * d;
    }
  } else {
    RD_TRY(feat_rows(R, X, s->row + lo, n, s->buf, s->ptr + lo, st));
  }
  if (gk) {
    char err[512] = "";
    s->dev = gk->rows_upload(s->buf, n, d, err, sizeof err);
    if (!s->dev) return rd_fail(st, RD_EFAIL, "%s backend: uploading feature rows failed: %s", R->ctx->backend->name, err);
  }
  return RD_OK;
}

static int rowset_alloc(rowset *s, int64_t n, rd_status *st) {
  memset(s, 0, sizeof *s);
  s->n = n;
  s->ptr = calloc((size_t)(n ? n : 1), sizeof *s->ptr);
  s->y = malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
  s->row = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
  if (!s->ptr || !s->y || !s->row) return rd_fail(st, RD_EFAIL, "out of memory for a row set");
  return RD_OK;
}

/* Rows of the rank's memory budget (at least `minimum`). */
static int64_t budget_rows(const probe_run *R, int64_t d, int64_t minimum) {
  int64_t rows = R->o->max_memory_mb * ((int64_t)1 << 20) / (d * (int64_t)sizeof(float));
  return rows < minimum ? minimum : rows;
}

/* ---- evaluation ------------------------------------------------------------------------------------------- */

/* Predicted classes of every head for `n` rows idx (split over the group in fixed blocks);
 * group rank 0 receives pred[n * L]. */
/* Predictions of every head for rows idx (gathered on group rank 0), and per head the number of them
 * that are near ties (near[l], summed over the group; every rank gets them). */
static int eval_rows(probe_run *R, const rd_ctx *g, feat_src *X, const int64_t *idx, int64_t n,
                     const rd_probe_heads *h, int32_t *pred, int64_t *near, rd_status *st) {
  int L = h->L, K = h->K, O = L * K;
  for (int l = 0; l < L; l++) near[l] = 0;
  int64_t lo, hi, d = X->d;
  rd_rank_rows(n, EVAL_BLOCK, g->size, g->rank, &lo, &hi);
  int32_t *mine = malloc(sizeof(int32_t) * (size_t)((hi - lo) * L + 1));
  float *buf = malloc(sizeof(float) * (size_t)(EVAL_BLOCK * d));
  const float **ptr = malloc(sizeof(float *) * EVAL_BLOCK);
  double *z = malloc(sizeof(double) * (size_t)(EVAL_BLOCK * O));
  if (!mine || !buf || !ptr || !z) rd_abort(g, __FILE__, __LINE__, "out of memory evaluating");
  for (int64_t a = lo; a < hi && st->code == RD_OK; a += EVAL_BLOCK) {
    int64_t m = hi - a < EVAL_BLOCK ? hi - a : EVAL_BLOCK;
    if (feat_rows(R, X, idx + a, m, buf, ptr, st) != RD_OK) break;
    rd_probe_logits_cpu(h, ptr, m, z);
    for (int64_t i = 0; i < m; i++) {
      rd_probe_predict(L, K, z + i * O, mine + (a - lo + i) * L);
      for (int l = 0; l < L; l++) near[l] += rd_probe_near_tie(K, z + i * O + (int64_t)l * K);
    }
  }
  free(buf);
  free(ptr);
  free(z);
  if (rd_agree(g, st) != RD_OK) {
    free(mine);
    return st->code;
  }
  rd_gather_rows(g, mine, pred, n, EVAL_BLOCK, sizeof(int32_t) * (size_t)L);
  free(mine);
  RD_MPI_CHECK(g, MPI_Allreduce(MPI_IN_PLACE, near, L, MPI_INT64_T, MPI_SUM, g->comm));
  return RD_OK;
}

/* ---- MRMBench mode ----------------------------------------------------------------------------------------- */

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

/* One (model, task, seed) with heads lrs[0..L): trains on the group and evaluates; group rank 0
 * fills res[l] (W, val_pred, test_pred). */
static int train_mrmbench(probe_run *R, const rd_ctx *g, ptask *p, int64_t seed, const double *lrs, int L,
                          grid_result *res, rd_progress *prog, int64_t *prog_done, rd_status *st) {
  const int U = RD_PROBE_UNITS;
  int64_t n = p->n_tr, d = p->X.d, K = p->K, O = (int64_t)L * K, Td = (n + RD_PROBE_BATCH - 1) / RD_PROBE_BATCH;
  int64_t u0, u1;
  rd_split_range(U, g->size, g->rank, &u0, &u1);
  int64_t *perm = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
  int64_t *boff = malloc(sizeof(int64_t) * (size_t)(Td + 1));  /* local position of each batch's rows */
  double *M = alloc64(O * d, 1), *V = alloc64(O * d, 1), *G = alloc64(O * d, 0);
  if (!perm || !boff || !M || !V || !G) rd_abort(g, __FILE__, __LINE__, "out of memory for training");
  batch_order(R, p, seed, perm);
  /* the rank's positions: in each batch, the units [u0, u1) */
  int64_t nloc = 0;
  for (int64_t t = 0; t < Td; t++) {
    int64_t b = n - t * RD_PROBE_BATCH < RD_PROBE_BATCH ? n - t * RD_PROBE_BATCH : RD_PROBE_BATCH, a0, a1, c0, c1;
    rd_split_range(b, U, (int)u0, &a0, &a1);
    rd_split_range(b, U, (int)(u1 - 1), &c0, &c1);
    boff[t] = nloc;
    nloc += u1 > u0 ? c1 - a0 : 0;
  }
  boff[Td] = nloc;
  rowset rows;
  if (rowset_alloc(&rows, nloc, st) != RD_OK) rd_abort(g, __FILE__, __LINE__, "out of memory for training rows");
  for (int64_t t = 0; t < Td; t++) {
    int64_t b = n - t * RD_PROBE_BATCH < RD_PROBE_BATCH ? n - t * RD_PROBE_BATCH : RD_PROBE_BATCH, a0, a1;
    rd_split_range(b, U, (int)u0, &a0, &a1);
    for (int64_t i = boff[t]; i < boff[t + 1]; i++) {
      rows.row[i] = perm[t * RD_PROBE_BATCH + a0 + (i - boff[t])];
      rows.y[i] = p->cls[rows.row[i]];
    }
  }
  free(perm);
  tree_ws ws;
  if (ws_init(&ws, U, O * d, g) != 0) rd_abort(g, __FILE__, __LINE__, "out of memory for the reduction tree");
  /* which exchange the group uses, for RMDIAG_TIMING (a group of one exchanges nothing) */
  if (g->size > 1)
    rd_timing_mark(g->rank, R->job->name, ws.shared ? "exchange: shared memory" : "exchange: MPI_Allgatherv");
  const rd_probe_kernels *gk = gpu_kernels(R);
  /* when the group shares memory, the weights live in a shared window and each rank applies AdamW
   * to its share of them (the update is elementwise, so the bits do not depend on the shares) */
  MPI_Win wwin = MPI_WIN_NULL;
  double *W = ws.shared && !gk ? shared_doubles(g, O * d, &wwin) : alloc64(O * d, 0);
  if (!W) rd_abort(g, __FILE__, __LINE__, "out of memory for training");
  if (wwin == MPI_WIN_NULL || g->rank == 0) init_heads(R, p, seed, L, W);
  if (wwin != MPI_WIN_NULL) shared_sync(g, wwin);
  int64_t e0 = 0, e1 = O * d;  /* the parameters this rank updates */
  if (wwin != MPI_WIN_NULL) {
    rd_split_range(O * d, g->size, g->rank, &e0, &e1);
    /* it needs the gradient of the heads it updates only (their norms included) */
    ws.out_lo = e1 > e0 ? e0 / (K * d) * (K * d) : 0;
    ws.out_hi = e1 > e0 ? ((e1 - 1) / (K * d) + 1) * (K * d) : 0;
  }
  rd_probe_heads h = {.d = d, .L = L, .K = (int)K, .W = W, .b = NULL};
  rd_adamw aw = {.beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8, .wd = 0.1};
  double *leafbuf = gk ? alloc64((u1 - u0 + 1) * O * d, 0) : NULL;
  if (gk && !leafbuf) rd_abort(g, __FILE__, __LINE__, "out of memory");
  mrm_state ms = {.R = R, .h = &h, .rows = &rows, .u0 = u0, .u1 = u1};
  /* the epoch in segments of batches whose rows fit the memory budget (one segment when mapped);
   * the segments are the same on every rank of the group (the batches per segment follow from the
   * largest share a rank can hold of a batch), so the agreement after each load is collective */
  int64_t cap = (feat_mapped(R, &p->X) && !gk) ? INT64_MAX : budget_rows(R, d, RD_PROBE_BATCH);
  int64_t share = ((U + g->size - 1) / g->size) * ((RD_PROBE_BATCH + U - 1) / U);
  int64_t per_seg = cap == INT64_MAX ? Td : cap / share;
  if (per_seg < 1) per_seg = 1;
  int64_t seg_t0 = 0, seg_t1 = 0;
  rd_timing_mark(R->ctx->rank, R->job->name, "order+init");
  for (int64_t t = 0; t < Td && st->code == RD_OK; t++) {
    if (t == seg_t1) {
      seg_t0 = t;
      seg_t1 = t + per_seg < Td ? t + per_seg : Td;
      rowset_load(R, &p->X, &rows, boff[seg_t0], boff[seg_t1], 1, st);
      if (rd_agree(g, st) != RD_OK) break;
      ms.seg_lo = boff[seg_t0];
    }
    int64_t b = n - t * RD_PROBE_BATCH < RD_PROBE_BATCH ? n - t * RD_PROBE_BATCH : RD_PROBE_BATCH;
    ms.b = b;
    ms.first = boff[t];
    if (gk && u1 > u0) {
      int64_t r0[RD_PROBE_UNITS], nr[RD_PROBE_UNITS], a0, a1;
      rd_split_range(b, U, (int)u0, &a0, &a1);
      for (int64_t u = u0; u < u1; u++) {
        int64_t lo, hi;
        rd_split_range(b, U, (int)u, &lo, &hi);
        r0[u - u0] = boff[t] + (lo - a0) - ms.seg_lo;
        nr[u - u0] = hi - lo;
      }
      char err[512] = "";
      if (gk->block_grads(rows.dev, &h, (int)(u1 - u0), r0, nr, rows.y + ms.seg_lo, 1.0 / (double)b, leafbuf, err,
                          sizeof err) != 0)
        rd_fail(st, RD_EFAIL, "%s backend: probe gradient kernel failed: %s", R->ctx->backend->name, err);
      ms.leafbuf = leafbuf;
    }
    if (tree_allreduce(g, U, mrm_leaf, gk ? NULL : mrm_node, &ms, gk != NULL, &ws, G, st) != RD_OK) break;
    double cosf = 0.5 * (1.0 + cos(M_PI * (double)t / (double)Td));
    for (int l = 0; l < L; l++) {
      int64_t a = l * K * d > e0 ? l * K * d : e0, z = (l + 1) * K * d < e1 ? (l + 1) * K * d : e1;
      if (a >= z) continue;
      double norm = sqrt(rd_probe_sumsq(G + l * K * d, K * d));
      double clip = 1.0 / (norm + 1e-6);
      rd_probe_adamw_step(&aw, t, lrs[l] * cosf, clip < 1.0 ? clip : 1.0, G + a, W + a, M + a, V + a, z - a);
    }
    if (wwin != MPI_WIN_NULL) shared_sync(g, wwin);
    if (prog) rd_progress_update(prog, ++*prog_done);
  }
  rd_timing_mark(R->ctx->rank, R->job->name, "epoch");
  ws_free(&ws);
  free(leafbuf);
  rowset_free(R, &rows);
  free(boff);
  free(M);
  free(V);
  free(G);
  if (rd_agree(g, st) != RD_OK) {
    shared_free(W, &wwin);
    return st->code;
  }
  /* validation and test predictions of every head */
  int32_t *vp = g->rank == 0 ? malloc(sizeof(int32_t) * (size_t)(p->n_va * L + 1)) : NULL;
  int32_t *tp = g->rank == 0 ? malloc(sizeof(int32_t) * (size_t)(p->n_te * L + 1)) : NULL;
  if (g->rank == 0 && (!vp || !tp)) rd_abort(g, __FILE__, __LINE__, "out of memory");
  int64_t *nv = calloc((size_t)L, sizeof(int64_t)), *nt = calloc((size_t)L, sizeof(int64_t));
  if (!nv || !nt) rd_abort(g, __FILE__, __LINE__, "out of memory");
  if (eval_rows(R, g, &p->X, p->va, p->n_va, &h, vp, nv, st) == RD_OK)
    eval_rows(R, g, &p->X, p->te, p->n_te, &h, tp, nt, st);
  rd_timing_mark(R->ctx->rank, R->job->name, "evaluate");
  if (g->rank == 0 && st->code == RD_OK) {
    for (int l = 0; l < L; l++) {
      grid_result *r = &res[l];
      r->W = malloc(sizeof(double) * (size_t)(K * d));
      r->val_pred = malloc(sizeof(int32_t) * (size_t)(p->n_va + 1));
      r->test_pred = malloc(sizeof(int32_t) * (size_t)(p->n_te + 1));
      if (!r->W || !r->val_pred || !r->test_pred) rd_abort(g, __FILE__, __LINE__, "out of memory");
      memcpy(r->W, W + l * K * d, sizeof(double) * (size_t)(K * d));
      for (int64_t i = 0; i < p->n_va; i++) r->val_pred[i] = vp[i * L + l];
      for (int64_t i = 0; i < p->n_te; i++) r->test_pred[i] = tp[i * L + l];
      r->near_val = nv[l];
      r->near_test = nt[l];
    }
  }
  free(nv);
  free(nt);
  free(vp);
  free(tp);
  shared_free(W, &wwin);
  return st->code;
}

/* ---- L-BFGS mode ------------------------------------------------------------------------------------------------- */

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
  RD_TRY(tree_allreduce(P->g, P->J, lb_leaf, NULL, P->s, 1, P->ws, P->vec, st));
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

/* Multinomial logistic regression with bias for one l2: L-BFGS (memory 10, two-loop recursion)
 * from zero until max|∇f| <= tol or max_iter. Group rank 0 fills *res. */
static int train_lbfgs(probe_run *R, const rd_ctx *g, ptask *p, double l2, grid_result *res, rd_status *st) {
  int64_t d = p->X.d, K = p->C, n_tr = p->n_tr, J = (n_tr + LB_LEAF - 1) / LB_LEAF;
  int64_t a, b;
  rd_split_range(J, g->size, g->rank, &a, &b);
  int64_t first = a * LB_LEAF, last = b * LB_LEAF < n_tr ? b * LB_LEAF : n_tr;
  rowset rows;
  if (rowset_alloc(&rows, last > first ? last - first : 0, st) != RD_OK) rd_abort(g, __FILE__, __LINE__, "out of memory");
  for (int64_t i = first; i < last; i++) {
    rows.row[i - first] = p->tr[i];
    rows.y[i - first] = p->cls[p->tr[i]];
  }
  int64_t nth = K * d + K;
  double *mem = calloc((size_t)(nth * (2 * LB_MEMORY + 6) + (K * d + K + 1) + 2 * d + K * d + K + 2 * d), sizeof(double));
  if (!mem) rd_abort(g, __FILE__, __LINE__, "out of memory for L-BFGS");
  double *x = mem, *gr = x + nth, *xn = gr + nth, *gn = xn + nth, *dir = gn + nth, *q = dir + nth;
  double *S = q + nth, *Y = S + LB_MEMORY * nth, *vec = Y + LB_MEMORY * nth;
  double *mu = vec + (K * d + K + 1), *sdv = mu + d, *Wraw = sdv + d, *braw = Wraw + K * d, *tmp = braw + K;
  double rho[LB_MEMORY], alpha[LB_MEMORY];
  rd_probe_heads h = {.d = d, .L = 1, .K = (int)K, .W = Wraw, .b = braw};
  lb_state s = {.R = R, .p = p, .rows = &rows, .first = first, .seg_lo = 0, .seg_hi = 0, .h = &h, .tmp = tmp};
  s.cap = feat_mapped(R, &p->X) ? INT64_MAX : budget_rows(R, d, LB_LEAF);
  if (s.cap >= rows.n) {
    s.cap = rows.n;
    lb_ensure(&s, 0, rows.n, st);
  }
  s.seg_hi = s.cap >= rows.n ? rows.n : 0;
  if (rd_agree(g, st) != RD_OK) {
    rowset_free(R, &rows);
    free(mem);
    return st->code;
  }
  tree_ws ws;
  if (ws_init(&ws, J, K * d + K + 1, g) != 0) rd_abort(g, __FILE__, __LINE__, "out of memory for the tree");
  lb_problem P = {.s = &s, .g = g, .ws = &ws, .J = J, .K = K, .d = d, .l2 = l2, .Wk = Wraw, .bk = braw, .vec = vec};
  double *stdbuf = NULL;
  if (R->o->standardize) {
    /* train mean and sd (ddof 0; a zero sd counts as 1), by the same fixed tree */
    tree_ws ws1;
    if (ws_init(&ws1, J, d, g) != 0) rd_abort(g, __FILE__, __LINE__, "out of memory for the tree");
    s.what = 1;
    if (tree_allreduce(g, J, lb_leaf, NULL, &s, 1, &ws1, mu, st) == RD_OK) {
      for (int64_t j = 0; j < d; j++) mu[j] /= (double)n_tr;
      s.what = 2;
      s.mean = mu;
      if (tree_allreduce(g, J, lb_leaf, NULL, &s, 1, &ws1, sdv, st) == RD_OK)
        for (int64_t j = 0; j < d; j++) {
          double v = sqrt(sdv[j] / (double)n_tr);
          sdv[j] = v > 0.0 ? v : 1.0;
        }
    }
    ws_free(&ws1);
    stdbuf = malloc(sizeof(double) * (size_t)(d + LB_STD_ROWS * (d + 2 * K) + K * d + K + 1));
    if (!stdbuf) rd_abort(g, __FILE__, __LINE__, "out of memory for L-BFGS");
    double *inv = stdbuf;
    for (int64_t j = 0; j < d; j++) inv[j] = 1.0 / sdv[j];
    s.mu = mu;
    s.sd = sdv;
    s.inv_sd = inv;
    s.xs = stdbuf + d;
    s.zr = s.xs + LB_STD_ROWS * d;
    s.part = s.zr + 2 * LB_STD_ROWS * K;
  }
  double f = 0.0;
  int64_t iter = 0, m = 0, head = 0;
  int status = 1;
  if (st->code == RD_OK && lb_eval(&P, x, &f, gr, st) == RD_OK) {
    for (;;) {
      double gmax = max_abs(gr, nth);
      if (gmax <= R->o->tol) {
        status = 0;
        break;
      }
      if (iter >= R->o->max_iter) {
        status = 1;
        break;
      }
      /* two-loop recursion: dir = −H g */
      for (int64_t i = 0; i < nth; i++) q[i] = gr[i];
      for (int64_t k = 0; k < m; k++) {
        int64_t j = (head - 1 - k + LB_MEMORY) % LB_MEMORY;
        alpha[j] = rho[j] * dotp(S + j * nth, q, nth);
        for (int64_t i = 0; i < nth; i++) q[i] -= alpha[j] * Y[j * nth + i];
      }
      double gamma = 1.0;
      if (m > 0) {
        int64_t j = (head - 1 + LB_MEMORY) % LB_MEMORY;
        gamma = dotp(S + j * nth, Y + j * nth, nth) / dotp(Y + j * nth, Y + j * nth, nth);
      }
      for (int64_t i = 0; i < nth; i++) q[i] *= gamma;
      for (int64_t k = m - 1; k >= 0; k--) {
        int64_t j = (head - 1 - k + LB_MEMORY) % LB_MEMORY;
        double beta = rho[j] * dotp(Y + j * nth, q, nth);
        for (int64_t i = 0; i < nth; i++) q[i] += S[j * nth + i] * (alpha[j] - beta);
      }
      for (int64_t i = 0; i < nth; i++) dir[i] = -q[i];
      double alpha1 = 1.0;
      if (dotp(dir, gr, nth) >= 0.0) { /* not a descent direction: restart from steepest descent */
        m = 0;
        for (int64_t i = 0; i < nth; i++) dir[i] = -gr[i];
      }
      if (m == 0) {
        double gn2 = sqrt(dotp(gr, gr, nth));
        alpha1 = gn2 > 0 ? 1.0 / gn2 : 1.0;
        if (alpha1 > 1.0) alpha1 = 1.0;
      }
      double fn;
      int ok = line_search(&P, nth, x, f, gr, dir, alpha1, xn, &fn, gn, st);
      if (st->code != RD_OK) break;
      if (!ok) {
        if (m > 0) { /* drop the memory once and retry along −g */
          m = 0;
          continue;
        }
        status = 2;
        break;
      }
      iter++;
      /* new pair */
      double *sv = S + head * nth, *yv = Y + head * nth;
      for (int64_t i = 0; i < nth; i++) {
        sv[i] = xn[i] - x[i];
        yv[i] = gn[i] - gr[i];
      }
      double sy = dotp(sv, yv, nth);
      if (sy > 1e-10 * sqrt(dotp(sv, sv, nth) * dotp(yv, yv, nth))) {
        rho[head] = 1.0 / sy;
        head = (head + 1) % LB_MEMORY;
        if (m < LB_MEMORY) m++;
      }
      memcpy(x, xn, sizeof(double) * (size_t)nth);
      memcpy(gr, gn, sizeof(double) * (size_t)nth);
      f = fn;
    }
  }
  double gmax = max_abs(gr, nth);
  ws_free(&ws);
  free(stdbuf);
  rowset_free(R, &rows);
  if (rd_agree(g, st) != RD_OK) {
    free(mem);
    return st->code;
  }
  /* final raw-space parameters, then validation and test predictions */
  for (int64_t k = 0; k < K; k++) {
    double shift = 0.0;
    for (int64_t j = 0; j < d; j++) {
      double w = x[k * d + j];
      if (s.sd) {
        w /= s.sd[j];
        shift += w * s.mu[j];
      }
      Wraw[k * d + j] = w;
    }
    braw[k] = x[K * d + k] - shift;
  }
  int32_t *vp = g->rank == 0 ? malloc(sizeof(int32_t) * (size_t)(p->n_va + 1)) : NULL;
  int32_t *tp = g->rank == 0 ? malloc(sizeof(int32_t) * (size_t)(p->n_te + 1)) : NULL;
  if (g->rank == 0 && (!vp || !tp)) rd_abort(g, __FILE__, __LINE__, "out of memory");
  int64_t nv = 0, nt = 0;
  if (eval_rows(R, g, &p->X, p->va, p->n_va, &h, vp, &nv, st) == RD_OK)
    eval_rows(R, g, &p->X, p->te, p->n_te, &h, tp, &nt, st);
  if (g->rank == 0 && st->code == RD_OK) {
    res->W = malloc(sizeof(double) * (size_t)(K * d));
    res->b = malloc(sizeof(double) * (size_t)K);
    if (!res->W || !res->b) rd_abort(g, __FILE__, __LINE__, "out of memory");
    memcpy(res->W, Wraw, sizeof(double) * (size_t)(K * d));
    memcpy(res->b, braw, sizeof(double) * (size_t)K);
    res->val_pred = vp;
    res->test_pred = tp;
    res->near_val = nv;
    res->near_test = nt;
    res->iterations = iter;
    res->grad_norm = gmax;
    res->status = status;
    vp = tp = NULL;
  }
  free(vp);
  free(tp);
  free(mem);
  return st->code;
}

/* ---- configurations over groups of ranks ----------------------------------------------------------------------------- */

typedef struct unit {
  int pt, seed;       /* (model, task) and seed index (0 for lbfgs) */
  int g0, ng;         /* grid entries [g0, g0 + ng) */
  double cost;
} unit;

/* Packs the results of a unit (group rank 0) as doubles: per grid entry W, b, iterations,
 * grad_norm, status, near_val, near_test, val_pred, test_pred. */
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

void probe_results_free(grid_result *res, int64_t n) {
  for (int64_t i = 0; res && i < n; i++) {
    free(res[i].W);
    free(res[i].b);
    free(res[i].val_pred);
    free(res[i].test_pred);
  }
  free(res);
}

int probe_train_all(probe_run *R, grid_result **res_out, rd_status *st) {
  const rd_ctx *ctx = R->ctx;
  const probe_opts *o = R->o;
  int lb = o->mode == PROBE_LBFGS, U = RD_PROBE_UNITS;
  int S = lb ? 1 : o->n_seeds, NG = o->n_grid;
  int64_t P = ctx->size;
  /* ranks the data needs: a rank keeps its share of the training rows in memory unless mapped */
  int64_t need = 1;
  for (int i = 0; i < R->n_pt; i++) {
    const ptask *p = &R->pt[i];
    if (p->X.map_offset >= 0 && !gpu_kernels(R)) continue;
    int64_t bytes = p->n_tr * p->X.d * (int64_t)sizeof(float), budget = o->max_memory_mb * ((int64_t)1 << 20);
    int64_t k = (bytes + budget - 1) / budget;
    if (k > need) need = k;
  }
  if (need > U) need = U;
  /* units: lbfgs (model, task, l2); mrmbench (model, task, seed) with all learning rates, whose
   * grid is cut into chunks only when ranks would otherwise stay idle */
  int64_t C = (int64_t)R->n_pt * S * (lb ? NG : 1);
  int64_t chunks = 1;
  if (!lb) {
    int64_t want = (P + C * U - 1) / (C * U);
    chunks = want < NG ? want : NG;
    if (chunks < 1) chunks = 1;
  }
  int64_t n_units = C * chunks;
  unit *units = calloc((size_t)n_units, sizeof *units);
  double *cost = malloc(sizeof(double) * (size_t)n_units);
  if (!units || !cost) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
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
  int64_t G = P / need;
  if (G > n_units) G = n_units;
  if (G < 1) G = 1;
  /* group g: ranks rd_split_range(P, G, g), at most U of them */
  int color = MPI_UNDEFINED;
  for (int64_t gi = 0; gi < G; gi++) {
    int64_t lo, hi;
    rd_split_range(P, (int)G, (int)gi, &lo, &hi);
    if (hi - lo > U) hi = lo + U;
    if (ctx->rank >= lo && ctx->rank < hi) color = (int)gi;
  }
  int *owner = malloc(sizeof(int) * (size_t)n_units);
  if (!owner) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  rd_assign_tasks(n_units, cost, (int)G, owner);
  MPI_Comm gcomm;
  RD_MPI_CHECK(ctx, MPI_Comm_split(ctx->comm, color, ctx->rank, &gcomm));
  rd_ctx gctx;
  memset(&gctx, 0, sizeof gctx);
  double *pack = NULL;
  int64_t npack = 0;
  rd_progress prog;
  int64_t prog_done = 0;
  if (gcomm != MPI_COMM_NULL) {
    if (rd_ctx_init(&gctx, gcomm, NULL, NULL) != RD_OK) rd_abort(ctx, __FILE__, __LINE__, "cannot split the communicator");
    gctx.backend = ctx->backend;
    gctx.quiet = 1;
    int64_t total = 0, total_len = 0;
    for (int64_t u = 0; u < n_units; u++)
      if (owner[u] == color) {
        const ptask *p = &R->pt[units[u].pt];
        total += lb ? 0 : (p->n_tr + RD_PROBE_BATCH - 1) / RD_PROBE_BATCH;
        total_len += 2 + unit_len(R, &units[u]);
      }
    rd_progress_begin(&prog, (ctx->rank == 0 && !ctx->quiet) ? ctx->err : NULL, R->job->name, "training", total);
    if (gctx.rank == 0) {
      pack = malloc(sizeof(double) * (size_t)(total_len + 1));
      if (!pack) rd_abort(ctx, __FILE__, __LINE__, "out of memory packing results");
    }
    grid_result *tmp = calloc((size_t)NG, sizeof *tmp);
    double *lrs = malloc(sizeof(double) * (size_t)NG);
    if (!tmp || !lrs) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
    for (int64_t u = 0; u < n_units && st->code == RD_OK; u++) {
      if (owner[u] != color) continue;
      unit *un = &units[u];
      ptask *p = &R->pt[un->pt];
      memset(tmp, 0, sizeof *tmp * (size_t)NG);
      if (lb) {
        train_lbfgs(R, &gctx, p, o->grid[un->g0], tmp, st);
      } else {
        for (int j = 0; j < un->ng; j++) lrs[j] = o->grid[un->g0 + j];
        train_mrmbench(R, &gctx, p, o->seeds[un->seed], lrs, un->ng, tmp, &prog, &prog_done, st);
      }
      if (gctx.rank == 0 && st->code == RD_OK) {
        pack[npack++] = (double)u;
        pack[npack++] = (double)unit_len(R, un);
        unit_pack(R, un, tmp, pack + npack);
        npack += unit_len(R, un);
      }
      for (int j = 0; j < NG; j++) {
        free(tmp[j].W);
        free(tmp[j].b);
        free(tmp[j].val_pred);
        free(tmp[j].test_pred);
      }
    }
    free(tmp);
    free(lrs);
    if (ctx->rank == 0) rd_progress_end(&prog);
  }
  if (rd_agree(ctx, st) != RD_OK) goto done;
  /* results to world rank 0 */
  {
    if (npack > INT32_MAX) rd_abort(ctx, __FILE__, __LINE__, "probe results too large to gather");
    int mine = (int)npack, *counts = NULL, *displs = NULL;
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
    RD_MPI_CHECK(ctx, MPI_Gatherv(pack, mine, MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, 0, ctx->comm));
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
done:
  free(pack);
  if (gcomm != MPI_COMM_NULL) {
    rd_ctx_free(&gctx);
    MPI_Comm_free(&gcomm);
  }
  free(units);
  free(cost);
  free(owner);
  return st->code;
}
