/* MPI context, error agreement and the fixed block partition. */
#include "rmdiag/comm.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

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

int rd_bcast_bytes(const rd_ctx *ctx, void *buf, size_t nbytes, int root) {
  char *p = buf;
  for (size_t off = 0; off < nbytes; off += RD_CHUNK) {
    size_t n = nbytes - off < RD_CHUNK ? nbytes - off : RD_CHUNK;
    RD_MPI_CHECK(ctx, MPI_Bcast(p + off, (int)n, MPI_BYTE, root, ctx->comm));
  }
  return RD_OK;
}

/* Gathers contiguous row ranges in rank order. The unit is one row (a contiguous datatype of
 * `elem` bytes), so counts and displacements stay within int for up to 2^31 - 1 rows. */
static int gather_rows(const rd_ctx *ctx, const void *mine, void *all, int64_t n_rows, int64_t block_rows,
                       size_t elem, int everyone) {
  int size = ctx->size;
  if (n_rows >= INT_MAX || elem >= (size_t)INT_MAX) rd_abort(ctx, __FILE__, __LINE__, "gather of more than 2^31 rows");
  int *counts = malloc(sizeof(int) * (size_t)size), *displs = malloc(sizeof(int) * (size_t)size);
  if (!counts || !displs) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  for (int r = 0; r < size; r++) {
    int64_t lo, hi;
    rd_rank_rows(n_rows, block_rows, size, r, &lo, &hi);
    counts[r] = (int)(hi - lo);
    displs[r] = (int)lo;
  }
  MPI_Datatype row;
  RD_MPI_CHECK(ctx, MPI_Type_contiguous((int)elem, MPI_BYTE, &row));
  RD_MPI_CHECK(ctx, MPI_Type_commit(&row));
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

int rd_allgather_rows(const rd_ctx *ctx, const void *mine, void *all, int64_t n_rows, int64_t block_rows,
                      size_t elem) {
  return gather_rows(ctx, mine, all, n_rows, block_rows, elem, 1);
}
