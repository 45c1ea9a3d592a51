/* MPI context, error agreement and the fixed block partition. */
#include "rmdiag/common/comm.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rmdiag/common/signals.h"

int rd_ctx_init(rd_ctx *ctx, MPI_Comm comm, FILE *out, FILE *err) {
  memset(ctx, 0, sizeof *ctx);
  ctx->comm = comm;
  MPI_Comm_rank(comm, &ctx->rank);
  MPI_Comm_size(comm, &ctx->size);
  if (MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, ctx->rank, MPI_INFO_NULL, &ctx->node_comm) != MPI_SUCCESS)
    return RD_EFAIL;
  MPI_Comm_rank(ctx->node_comm, &ctx->node_rank);
  MPI_Comm_size(ctx->node_comm, &ctx->node_size);
  ctx->out = ctx->rank == 0 ? out : NULL;
  ctx->err = ctx->rank == 0 ? err : NULL;
  return RD_OK;
}

void rd_ctx_free(rd_ctx *ctx) {
  if (ctx->node_comm != MPI_COMM_NULL && ctx->node_comm != 0) MPI_Comm_free(&ctx->node_comm);
}

void rd_abort(const rd_ctx *ctx, const char *file, int line, const char *what) {
  rd_tmp_cleanup();
  fprintf(stderr, "rmdiag: fatal error inside a collective phase at %s:%d: %s; aborting all ranks\n", file,
          line, what);
  fflush(stderr);
  MPI_Abort(ctx ? ctx->comm : MPI_COMM_WORLD, 1);
  abort();
}

int rd_share_status(const rd_ctx *ctx, rd_status *st, int root) {
  struct {
    int code;
    int64_t key;
  } head = {st->code, st->key};
  RD_MPI_CHECK(ctx, MPI_Bcast(&head, (int)sizeof head, MPI_BYTE, root, ctx->comm));
  st->code = head.code;
  st->key = head.key;
  if (st->code != RD_OK) RD_MPI_CHECK(ctx, MPI_Bcast(st->msg, RD_MSG_MAX, MPI_CHAR, root, ctx->comm));
  return st->code;
}

int rd_agree(const rd_ctx *ctx, rd_status *st) {
  int failed = st->code != RD_OK, any = 0;
  RD_MPI_CHECK(ctx, MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, ctx->comm));
  if (!any) return RD_OK;
  long long mykey = failed ? (long long)st->key : LLONG_MAX, minkey = 0;
  RD_MPI_CHECK(ctx, MPI_Allreduce(&mykey, &minkey, 1, MPI_LONG_LONG, MPI_MIN, ctx->comm));
  int cand = (failed && mykey == minkey) ? ctx->rank : ctx->size, owner = 0;
  RD_MPI_CHECK(ctx, MPI_Allreduce(&cand, &owner, 1, MPI_INT, MPI_MIN, ctx->comm));
  return rd_share_status(ctx, st, owner);
}

void rd_split_range(int64_t n, int size, int part, int64_t *lo, int64_t *hi) {
  int64_t base = n / size, rem = n % size;
  *lo = (int64_t)part * base + (part < rem ? part : rem);
  *hi = *lo + base + (part < rem ? 1 : 0);
}

void rd_rank_rows(int64_t n_rows, int64_t block_rows, int size, int rank, int64_t *lo, int64_t *hi) {
  int64_t nblocks = (n_rows + block_rows - 1) / block_rows, b0, b1;
  rd_split_range(nblocks, size, rank, &b0, &b1);
  *lo = b0 * block_rows;
  *hi = b1 * block_rows;
  if (*lo > n_rows) *lo = n_rows;
  if (*hi > n_rows) *hi = n_rows;
}

#define RD_CHUNK ((size_t)1 << 30)

int rd_send_bytes(const rd_ctx *ctx, const void *buf, size_t nbytes, int dest, int tag) {
  const char *p = buf;
  for (size_t off = 0; off < nbytes; off += RD_CHUNK) {
    size_t n = nbytes - off < RD_CHUNK ? nbytes - off : RD_CHUNK;
    RD_MPI_CHECK(ctx, MPI_Send(p + off, (int)n, MPI_BYTE, dest, tag, ctx->comm));
  }
  return RD_OK;
}

int rd_recv_bytes(const rd_ctx *ctx, void *buf, size_t nbytes, int src, int tag) {
  char *p = buf;
  for (size_t off = 0; off < nbytes; off += RD_CHUNK) {
    size_t n = nbytes - off < RD_CHUNK ? nbytes - off : RD_CHUNK;
    RD_MPI_CHECK(ctx, MPI_Recv(p + off, (int)n, MPI_BYTE, src, tag, ctx->comm, MPI_STATUS_IGNORE));
  }
  return RD_OK;
}

int rd_bcast_bytes(const rd_ctx *ctx, void *buf, size_t nbytes, int root) {
  char *p = buf;
  for (size_t off = 0; off < nbytes; off += RD_CHUNK) {
    size_t n = nbytes - off < RD_CHUNK ? nbytes - off : RD_CHUNK;
    RD_MPI_CHECK(ctx, MPI_Bcast(p + off, (int)n, MPI_BYTE, root, ctx->comm));
  }
  return RD_OK;
}

/* The counts and displacements of rd_rank_rows, in rows. */
static void rows_layout(const rd_ctx *ctx, int64_t n_rows, int64_t block_rows, size_t elem, int **counts,
                        int **displs) {
  if (n_rows >= INT_MAX || elem >= (size_t)INT_MAX)
    rd_abort(ctx, __FILE__, __LINE__, "a gather or scatter of more than 2^31 rows");
  *counts = malloc(sizeof(int) * (size_t)ctx->size);
  *displs = malloc(sizeof(int) * (size_t)ctx->size);
  if (!*counts || !*displs) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  for (int r = 0; r < ctx->size; r++) {
    int64_t lo, hi;
    rd_rank_rows(n_rows, block_rows, ctx->size, r, &lo, &hi);
    (*counts)[r] = (int)(hi - lo);
    (*displs)[r] = (int)lo;
  }
}

/* One row of `elem` bytes as an MPI datatype (committed; the caller frees it). */
static MPI_Datatype row_type(const rd_ctx *ctx, size_t elem) {
  MPI_Datatype row;
  RD_MPI_CHECK(ctx, MPI_Type_contiguous((int)elem, MPI_BYTE, &row));
  RD_MPI_CHECK(ctx, MPI_Type_commit(&row));
  return row;
}

/* Gathers contiguous row ranges in rank order. The unit is one row (a contiguous datatype of
 * `elem` bytes), so counts and displacements stay within int for up to 2^31 - 1 rows. */
static int gather_rows(const rd_ctx *ctx, const void *mine, void *all, int64_t n_rows, int64_t block_rows,
                       size_t elem, int everyone) {
  int *counts, *displs;
  rows_layout(ctx, n_rows, block_rows, elem, &counts, &displs);
  MPI_Datatype row = row_type(ctx, elem);
  if (everyone)
    RD_MPI_CHECK(ctx, MPI_Allgatherv(mine, counts[ctx->rank], row, all, counts, displs, row, ctx->comm));
  else
    RD_MPI_CHECK(ctx, MPI_Gatherv(mine, counts[ctx->rank], row, all, counts, displs, row, 0, ctx->comm));
  MPI_Type_free(&row);
  free(counts);
  free(displs);
  return RD_OK;
}

int rd_gather_rows(const rd_ctx *ctx, const void *mine, void *all, int64_t n_rows, int64_t block_rows, size_t elem) {
  return gather_rows(ctx, mine, ctx->rank == 0 ? all : NULL, n_rows, block_rows, elem, 0);
}

int rd_gather_rows_inplace(const rd_ctx *ctx, void *buf, int64_t n_rows, int64_t block_rows, size_t elem) {
  int *counts, *displs;
  rows_layout(ctx, n_rows, block_rows, elem, &counts, &displs);
  MPI_Datatype row = row_type(ctx, elem);
  if (ctx->rank == 0)
    RD_MPI_CHECK(ctx, MPI_Gatherv(MPI_IN_PLACE, counts[0], row, buf, counts, displs, row, 0, ctx->comm));
  else
    RD_MPI_CHECK(ctx, MPI_Gatherv(buf, counts[ctx->rank], row, NULL, NULL, NULL, row, 0, ctx->comm));
  MPI_Type_free(&row);
  free(counts);
  free(displs);
  return RD_OK;
}

int rd_scatter_rows(const rd_ctx *ctx, const void *all, void *mine, int64_t n_rows, int64_t block_rows, size_t elem) {
  int *counts, *displs;
  rows_layout(ctx, n_rows, block_rows, elem, &counts, &displs);
  MPI_Datatype row = row_type(ctx, elem);
  RD_MPI_CHECK(ctx, MPI_Scatterv(ctx->rank == 0 ? all : NULL, counts, displs, row, mine, counts[ctx->rank], row, 0,
                                 ctx->comm));
  MPI_Type_free(&row);
  free(counts);
  free(displs);
  return RD_OK;
}

int rd_allgather_rows(const rd_ctx *ctx, const void *mine, void *all, int64_t n_rows, int64_t block_rows,
                      size_t elem) {
  return gather_rows(ctx, mine, all, n_rows, block_rows, elem, 1);
}

int rd_allgather_rows_inplace(const rd_ctx *ctx, void *buf, int64_t n_rows, int64_t block_rows, size_t elem) {
  if (ctx->size == 1) return RD_OK;
  int *counts, *displs;
  rows_layout(ctx, n_rows, block_rows, elem, &counts, &displs);
  MPI_Datatype row = row_type(ctx, elem);
  RD_MPI_CHECK(ctx, MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, counts, displs, row, ctx->comm));
  MPI_Type_free(&row);
  free(counts);
  free(displs);
  return RD_OK;
}

/* Waits for req by testing it, first in a tight loop, then with pauses of 0.1 ms: MPI's own waits
 * poll without pause, which on a machine shared with other work (or with more ranks than cores)
 * takes the core from the rank being waited for. */
static void wait_paced(const rd_ctx *ctx, MPI_Request *req) {
  int done = 0;
  double t0 = MPI_Wtime();
  struct timespec pause = {0, 100000};
  while (1) {
    RD_MPI_CHECK(ctx, MPI_Test(req, &done, MPI_STATUS_IGNORE));
    if (done) return;
    if (MPI_Wtime() - t0 > 2e-3) nanosleep(&pause, NULL);
  }
}

int rd_barrier_paced(const rd_ctx *ctx) {
  if (ctx->size == 1) return RD_OK;
  MPI_Request req;
  RD_MPI_CHECK(ctx, MPI_Ibarrier(ctx->comm, &req));
  wait_paced(ctx, &req);
  return RD_OK;
}

int rd_wait_for(const rd_ctx *ctx, int src, int tag) {
  char token;
  MPI_Request req;
  RD_MPI_CHECK(ctx, MPI_Irecv(&token, 1, MPI_CHAR, src, tag, ctx->comm, &req));
  wait_paced(ctx, &req);
  return RD_OK;
}

int rd_signal(const rd_ctx *ctx, int dest, int tag) {
  char token = 1;
  RD_MPI_CHECK(ctx, MPI_Send(&token, 1, MPI_CHAR, dest, tag, ctx->comm));
  return RD_OK;
}

static const double *sort_costs;
static int by_cost_desc(const void *a, const void *b) {
  int64_t i = *(const int64_t *)a, j = *(const int64_t *)b;
  double ci = sort_costs ? sort_costs[i] : 1.0, cj = sort_costs ? sort_costs[j] : 1.0;
  if (ci != cj) return ci > cj ? -1 : 1;
  return (i > j) - (i < j);
}

/* The unpinned tasks in the order they are handed out: largest cost first, ties in task order. */
static int64_t handout_order(int64_t n_tasks, const double *cost, const int *pin, int64_t *order) {
  int64_t n = 0;
  for (int64_t k = 0; k < n_tasks; k++)
    if (!pin || pin[k] < 0) order[n++] = k;
  sort_costs = cost;
  if (cost) qsort(order, (size_t)n, sizeof *order, by_cost_desc);
  sort_costs = NULL;
  return n;
}

void rd_assign_tasks(int64_t n_tasks, const double *cost, int size, int *owner) {
  rd_assign_tasks_pinned(n_tasks, cost, NULL, size, owner);
}

void rd_assign_tasks_pinned(int64_t n_tasks, const double *cost, const int *pin, int size, int *owner) {
  int64_t *order = malloc(sizeof(int64_t) * (size_t)(n_tasks ? n_tasks : 1));
  double *load = calloc((size_t)size, sizeof *load);
  if (!order || !load) abort();
  /* pinned tasks first: their ranks start with that load */
  for (int64_t k = 0; pin && k < n_tasks; k++)
    if (pin[k] >= 0) {
      owner[k] = pin[k] < size ? pin[k] : 0;
      load[owner[k]] += cost ? cost[k] : 1.0;
    }
  int64_t n_free = handout_order(n_tasks, cost, pin, order);
  for (int64_t i = 0; i < n_free; i++) {
    int best = 0;
    for (int r = 1; r < size; r++)
      if (load[r] < load[best]) best = r;
    owner[order[i]] = best;
    load[best] += cost ? cost[order[i]] : 1.0;
  }
  free(order);
  free(load);
}

int rd_handout_open(const rd_ctx *ctx, int64_t n, rd_handout *h) {
  memset(h, 0, sizeof *h);
  h->n = n;
  h->shared = ctx->size > 1;
  if (!h->shared) return RD_OK;
  MPI_Aint bytes = ctx->rank == 0 ? (MPI_Aint)sizeof(long long) : 0;
  RD_MPI_CHECK(ctx, MPI_Win_allocate(bytes, sizeof(long long), MPI_INFO_NULL, ctx->comm, &h->next, &h->win));
  if (ctx->rank == 0) *h->next = 0;
  RD_MPI_CHECK(ctx, MPI_Barrier(ctx->comm));
  RD_MPI_CHECK(ctx, MPI_Win_lock_all(0, h->win));
  return RD_OK;
}

int64_t rd_handout_next(const rd_ctx *ctx, rd_handout *h) {
  if (!h->shared) return h->local < h->n ? h->local++ : -1;
  if (h->local < 0) return -1;  /* this rank saw the end */
  long long one = 1, i = 0;
  RD_MPI_CHECK(ctx, MPI_Fetch_and_op(&one, &i, MPI_LONG_LONG, 0, 0, MPI_SUM, h->win));
  RD_MPI_CHECK(ctx, MPI_Win_flush(0, h->win));
  if (i >= h->n) {
    h->local = -1;
    return -1;
  }
  return (int64_t)i;
}

int rd_handout_close(const rd_ctx *ctx, rd_handout *h) {
  if (!h->shared) return RD_OK;
  RD_MPI_CHECK(ctx, MPI_Win_unlock_all(h->win));
  /* the ranks finish at different times: wait without taking a core from those still working */
  rd_barrier_paced(ctx);
  RD_MPI_CHECK(ctx, MPI_Win_free(&h->win));
  h->shared = 0;
  return RD_OK;
}

int rd_run_tasks(const rd_ctx *ctx, int64_t n_tasks, const double *cost, rd_task_fn fn, void *arg,
                 double ***results, int64_t **lens, rd_status *st) {
  return rd_run_tasks_pinned(ctx, n_tasks, cost, NULL, fn, arg, results, lens, st);
}

/* One task computed here: rank 0 keeps its result where it belongs (on one rank: every result, no
 * copy); the other ranks pack [task, length, values...] for the gather. */
typedef struct task_pack {
  double *v;
  int64_t n, cap;
} task_pack;

static int run_task(const rd_ctx *ctx, int64_t k, rd_task_fn fn, void *arg, double **res, int64_t *len, task_pack *pk,
                    rd_status *st) {
  double *out = NULL;
  int64_t n = 0;
  if (fn(k, arg, &out, &n, st) != RD_OK) {
    free(out);
    return st->code;
  }
  if (ctx->rank == 0) {
    if (!out && !(out = malloc(sizeof(double)))) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
    res[k] = out;
    len[k] = n;
    return RD_OK;
  }
  if (pk->n + n + 2 > pk->cap) {
    pk->cap = 2 * (pk->n + n + 2) + 64;
    double *np = realloc(pk->v, sizeof(double) * (size_t)pk->cap);
    if (!np) rd_abort(ctx, __FILE__, __LINE__, "out of memory packing task results");
    pk->v = np;
  }
  pk->v[pk->n++] = (double)k;
  pk->v[pk->n++] = (double)n;
  if (n > 0) memcpy(pk->v + pk->n, out, sizeof(double) * (size_t)n);
  pk->n += n;
  free(out);
  return RD_OK;
}

int rd_run_tasks_pinned(const rd_ctx *ctx, int64_t n_tasks, const double *cost, const int *pin, rd_task_fn fn,
                        void *arg, double ***results, int64_t **lens, rd_status *st) {
  *results = NULL;
  *lens = NULL;
  int64_t *order = malloc(sizeof(int64_t) * (size_t)(n_tasks ? n_tasks : 1));
  if (!order) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  int64_t n_free = handout_order(n_tasks, cost, pin, order);
  double **res = NULL;
  int64_t *len = NULL;
  if (ctx->rank == 0) {
    res = calloc((size_t)(n_tasks ? n_tasks : 1), sizeof *res);
    len = calloc((size_t)(n_tasks ? n_tasks : 1), sizeof *len);
    if (!res || !len) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  }
  task_pack pk = {NULL, 0, 0};
  /* a rank's pinned tasks first (only it has their data), then the others from a counter on rank 0,
   * largest first: a rank whose tasks take longer than their estimates takes fewer of them */
  for (int64_t k = 0; pin && k < n_tasks && st->code == RD_OK; k++)
    if (pin[k] >= 0 && (pin[k] < ctx->size ? pin[k] : 0) == ctx->rank) run_task(ctx, k, fn, arg, res, len, &pk, st);
  rd_handout h;
  rd_handout_open(ctx, n_free, &h);
  for (int64_t i; st->code == RD_OK && (i = rd_handout_next(ctx, &h)) >= 0;)
    run_task(ctx, order[i], fn, arg, res, len, &pk, st);
  rd_handout_close(ctx, &h);
  free(order);
  if (rd_agree(ctx, st) != RD_OK) {
    rd_free_task_results(res, len, n_tasks);
    free(pk.v);
    return st->code;
  }
  if (pk.n > INT32_MAX) rd_abort(ctx, __FILE__, __LINE__, "task results too large");
  int mine = (int)pk.n, *counts = NULL, *displs = NULL;
  double *all = NULL;
  if (ctx->rank == 0) {
    counts = malloc(sizeof(int) * (size_t)ctx->size);
    displs = malloc(sizeof(int) * (size_t)ctx->size);
    if (!counts || !displs) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  }
  RD_MPI_CHECK(ctx, MPI_Gather(&mine, 1, MPI_INT, counts, 1, MPI_INT, 0, ctx->comm));
  int64_t total = 0;
  if (ctx->rank == 0) {
    for (int r = 0; r < ctx->size; r++) {
      displs[r] = (int)total;
      total += counts[r];
    }
    if (total > INT32_MAX) rd_abort(ctx, __FILE__, __LINE__, "task results too large");
    all = malloc(sizeof(double) * (size_t)(total ? total : 1));
    if (!all) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  }
  RD_MPI_CHECK(ctx, MPI_Gatherv(pk.v, mine, MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, 0, ctx->comm));
  free(pk.v);
  if (ctx->rank == 0) {
    for (int64_t p = 0; p < total;) {  /* [task, length, values...] as each rank computed them */
      int64_t k = (int64_t)all[p], n = (int64_t)all[p + 1];
      p += 2;
      res[k] = malloc(sizeof(double) * (size_t)(n ? n : 1));
      if (!res[k]) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
      memcpy(res[k], all + p, sizeof(double) * (size_t)n);
      p += n;
      len[k] = n;
    }
    *results = res;
    *lens = len;
  }
  free(all);
  free(counts);
  free(displs);
  return RD_OK;
}

void rd_free_task_results(double **results, int64_t *lens, int64_t n_tasks) {
  for (int64_t k = 0; results && k < n_tasks; k++) free(results[k]);
  free(results);
  free(lens);
}
