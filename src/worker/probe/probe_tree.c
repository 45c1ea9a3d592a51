/* probe: the fixed reduction tree. A sum over rows is a fixed pairwise tree over fixed leaves (the
 * 8 units of a batch in mrmbench mode; blocks of 64 training rows for L-BFGS). A rank owns a
 * contiguous range of leaves, evaluates the largest tree nodes inside its range, and the group
 * exchanges those nodes (through shared memory when the group is on one node, else allgather) and
 * completes the same tree, so every rank holds the same bits and the result does not depend on the
 * number of ranks. Within a leaf, rows are summed in order. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe_internal.h"

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
static int tree_eval(int64_t J, tnode node, probe_leaf_fn f, probe_node_fn nf, void *arg, double *dst, double *scratch,
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
double *probe_alloc64(int64_t n, int zero) {
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

/* The nodes each rank of the group evaluates: the cover of its leaves rd_split_range(J, size, r),
 * rank after rank; 0, or -1 when the exchange would not fit MPI's int counts. */
static int tree_assign(tree_ws *w, int64_t J, const rd_ctx *g) {
  tnode root = {0, pow2_ceil(J)};
  int64_t len = w->len;
  for (int r = 0; r < g->size; r++) {
    int64_t a, b;
    rd_split_range(J, g->size, r, &a, &b);
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
  return 0;
}

/* Collective: a window shared by the group for the node values when every rank of the group is on
 * this node (values are read where they were written); 1 when the group has one. */
static int tree_share(tree_ws *w, const rd_ctx *g) {
  int local = g->node_size == g->size && shm_allowed(), all_local = 0, ok = 0;
  MPI_Allreduce(&local, &all_local, 1, MPI_INT, MPI_MIN, g->comm);
  if (!all_local) return 0;
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "alloc_shared_noncontig", "true");
  double *base = NULL;
  MPI_Aint bytes = (MPI_Aint)(sizeof(double) * (size_t)(2 * w->mine * w->len + 8));
  int rc = MPI_Win_allocate_shared(bytes, (int)sizeof(double), info, g->comm, &base, &w->win);
  MPI_Info_free(&info);
  ok = rc == MPI_SUCCESS;
  int all_ok = 0;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, g->comm);
  if (all_ok) {
    for (int r = 0; r < g->size; r++) {
      MPI_Aint sz;
      int du;
      MPI_Win_shared_query(w->win, r, &sz, &du, &w->seg[r]);
      w->seg[r] = align64(w->seg[r]);
    }
    MPI_Win_lock_all(MPI_MODE_NOCHECK, w->win);
    w->shared = 1;
    return 1;
  }
  if (ok) MPI_Win_free(&w->win);
  w->win = MPI_WIN_NULL;
  return 0;
}

int probe_tree_init(tree_ws *w, int64_t J, int64_t len, const rd_ctx *g) {
  memset(w, 0, sizeof *w);
  w->win = MPI_WIN_NULL;
  w->len = len;
  w->out_hi = len;
  int gsize = g->size;
  int64_t P2 = pow2_ceil(J), depth = 0;
  while (((int64_t)1 << depth) < P2) depth++;
  w->depth = depth;
  w->scratch = probe_alloc64((depth + 2) * len, 0);
  int64_t cap = (2 * depth + 2) * gsize;
  w->nodes = malloc(sizeof(tnode) * (size_t)cap);
  w->vals = malloc(sizeof(double *) * (size_t)cap);
  w->counts = malloc(sizeof(int) * (size_t)gsize);
  w->displs = malloc(sizeof(int) * (size_t)gsize);
  w->seg = malloc(sizeof(double *) * (size_t)gsize);
  if (!w->scratch || !w->nodes || !w->vals || !w->counts || !w->displs || !w->seg) return -1;
  if (gsize == 1) return 0;
  if (tree_assign(w, J, g) != 0) return -1;
  if (tree_share(w, g)) return 0;
  w->send = probe_alloc64(w->mine * len, 0);
  w->recv = probe_alloc64(w->total * len, 0);
  return (w->send && w->recv) ? 0 : -1;
}

/* Collective when the group shares a window. */
void probe_tree_free(tree_ws *w) {
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
double *probe_shared_doubles(const rd_ctx *g, int64_t n, MPI_Win *win) {
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
void probe_shared_sync(const rd_ctx *g, MPI_Win win) {
  MPI_Win_sync(win);
  MPI_Barrier(g->comm);
  MPI_Win_sync(win);
}

/* Frees p: the shared window (collective) or the heap block. */
void probe_shared_free(double *p, MPI_Win *win) {
  if (*win != MPI_WIN_NULL) {
    MPI_Win_unlock_all(*win);
    MPI_Win_free(win);
  } else {
    free(p);
  }
}

/* Collective over the group: out = Σ over leaves [0, J) by the fixed tree. Each rank evaluates the
 * leaves rd_split_range(J, size, rank). Errors of f are agreed when f may fail (it reads rows). */
int probe_tree_allreduce(const rd_ctx *g, int64_t J, probe_leaf_fn f, probe_node_fn nf, void *arg, int may_fail,
                         tree_ws *w, double *out, rd_status *st) {
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

