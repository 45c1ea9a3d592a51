/* The MPI context of a run, agreement on errors at the end of each phase, and the fixed
 * partition of global blocks over ranks that makes results independent of the rank count. */
#ifndef RMDIAG_COMM_H
#define RMDIAG_COMM_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "rmdiag/common/status.h"

struct rd_backend;

typedef struct rd_ctx {
  MPI_Comm comm;       /* the job's communicator (world, a split, or self) */
  int rank, size;
  MPI_Comm node_comm;  /* ranks sharing this node (MPI_Comm_split_type shared) */
  int node_rank, node_size;
  const struct rd_backend *backend;
  int quiet;           /* no progress or summary lines */
  FILE *out;           /* stdout of rank 0 (tables); NULL elsewhere */
  FILE *err;           /* stderr of rank 0 (errors, progress); NULL elsewhere */
} rd_ctx;

int rd_ctx_init(rd_ctx *ctx, MPI_Comm comm, FILE *out, FILE *err);
void rd_ctx_free(rd_ctx *ctx);

/* Collective. Ends a phase: when any rank failed, every rank returns the same status, the one
 * with the lowest key (then lowest rank), so the reported error is the same for any rank count. */
int rd_agree(const rd_ctx *ctx, rd_status *st);

/* Collective. Rank `root`'s status becomes every rank's status. */
int rd_share_status(const rd_ctx *ctx, rd_status *st, int root);

/* Balanced split of n units over `size` parts: part `part` owns [*lo, *hi). Contiguous, in order. */
void rd_split_range(int64_t n, int size, int part, int64_t *lo, int64_t *hi);

/* Rows of `n_rows` cut into fixed blocks of `block_rows` (independent of the rank count); the blocks
 * are split over ranks with rd_split_range. Returns the rank's row range [*lo, *hi). */
void rd_rank_rows(int64_t n_rows, int64_t block_rows, int size, int rank, int64_t *lo, int64_t *hi);

/* Broadcasts / gathers of arbitrary size (chunked below INT_MAX bytes). */
int rd_bcast_bytes(const rd_ctx *ctx, void *buf, size_t nbytes, int root);
/* Each rank holds rows [lo, hi) of an array of `elem` bytes per row, ranges being those of
 * rd_rank_rows(n_rows, block_rows, ...); rank 0 receives all n_rows rows in order in `all`. */
int rd_gather_rows(const rd_ctx *ctx, const void *mine, void *all, int64_t n_rows, int64_t block_rows,
                   size_t elem);
/* rd_gather_rows with rank 0's own rows already in place at the start of buf (its rows come
 * first); buf holds n_rows rows on rank 0 and the rank's own rows elsewhere. */
int rd_gather_rows_inplace(const rd_ctx *ctx, void *buf, int64_t n_rows, int64_t block_rows, size_t elem);
/* The reverse of rd_gather_rows: rank 0's `all` cut into every rank's rows. */
int rd_scatter_rows(const rd_ctx *ctx, const void *all, void *mine, int64_t n_rows, int64_t block_rows, size_t elem);
/* Point-to-point bytes of any size (chunked below INT_MAX), tag `tag`. */
int rd_send_bytes(const rd_ctx *ctx, const void *buf, size_t nbytes, int dest, int tag);
int rd_recv_bytes(const rd_ctx *ctx, void *buf, size_t nbytes, int src, int tag);
/* Same, but every rank receives the whole array. */
int rd_allgather_rows(const rd_ctx *ctx, const void *mine, void *all, int64_t n_rows, int64_t block_rows,
                      size_t elem);
/* The same with each rank's rows already at their place in buf (every rank's buf holds all n_rows). */
int rd_allgather_rows_inplace(const rd_ctx *ctx, void *buf, int64_t n_rows, int64_t block_rows, size_t elem);

/* A counter of handed-out work on rank 0 (MPI atomics): every rank calls rd_handout_next until it
 * returns -1, and gets each of the indices 0..n-1 exactly once across the ranks, in order, as it asks.
 * Open and close are collective; close waits (paced) for the ranks still working. A rank may do other
 * work between open and its first call (the others take more meanwhile). On one rank a plain count. */
typedef struct rd_handout {
  int64_t n, local;
  long long *next;
  MPI_Win win;
  int shared;
} rd_handout;
int rd_handout_open(const rd_ctx *ctx, int64_t n, rd_handout *h);
int64_t rd_handout_next(const rd_ctx *ctx, rd_handout *h);
int rd_handout_close(const rd_ctx *ctx, rd_handout *h);

/* Independent tasks spread over ranks. Each task returns a vector of doubles (malloc'd into
 * *out); rank 0 receives every task's vector (results[k], lens[k]). Tasks are handed out largest
 * estimated `cost` first (NULL: equal costs, task order) to whichever rank asks next (a counter on
 * rank 0, MPI atomics), so a rank whose tasks run longer than estimated takes fewer. Each task is
 * computed entirely by one rank, so results do not depend on the rank count nor on who computed
 * what. Collective; a failing task's status is agreed like any phase. */
typedef int (*rd_task_fn)(int64_t task, void *arg, double **out, int64_t *n_out, rd_status *st);
int rd_run_tasks(const rd_ctx *ctx, int64_t n_tasks, const double *cost, rd_task_fn fn, void *arg,
                 double ***results, int64_t **lens, rd_status *st);
void rd_free_task_results(double **results, int64_t *lens, int64_t n_tasks);
/* The same with some tasks pinned to a rank (pin[k] >= 0: only that rank has the task's data); a rank
 * computes its pinned tasks first, then takes the others as above. */
int rd_run_tasks_pinned(const rd_ctx *ctx, int64_t n_tasks, const double *cost, const int *pin, rd_task_fn fn,
                        void *arg, double ***results, int64_t **lens, rd_status *st);
/* A static assignment of tasks to `size` ranks or groups by longest-processing-time-first on `cost`
 * (owner[k]; pinned tasks keep their rank, pin may be NULL): for work planned ahead (the value
 * checks over rank groups, probe's units) and for progress lines' estimates of a rank's share. */
void rd_assign_tasks(int64_t n_tasks, const double *cost, int size, int *owner);
void rd_assign_tasks_pinned(int64_t n_tasks, const double *cost, const int *pin, int size, int *owner);

/* Waits that leave the core to others: a barrier, and a one-byte token from src (sent with
 * rd_signal), tested first in a tight loop and then with 0.1 ms pauses. For waits on another rank's
 * long serial work: MPI's own waits poll without pause, which on a shared machine (or with more
 * ranks than cores) slows the rank being waited for. */
int rd_barrier_paced(const rd_ctx *ctx);
int rd_wait_for(const rd_ctx *ctx, int src, int tag);
int rd_signal(const rd_ctx *ctx, int dest, int tag);

/* Aborts the communicator after printing a message: for failures inside collective I/O, where a
 * local recovery would leave other ranks waiting. */
void rd_abort(const rd_ctx *ctx, const char *file, int line, const char *what) __attribute__((noreturn));

#define RD_MPI_CHECK(ctx, call)                                         \
  do {                                                                  \
    int rd_mpi_rc_ = (call);                                            \
    if (rd_mpi_rc_ != MPI_SUCCESS) rd_abort((ctx), __FILE__, __LINE__, #call); \
  } while (0)

#endif
