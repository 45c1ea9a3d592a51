/* Counting a run's MPI calls: a library loaded into rmdiag ahead of the MPI library (LD_PRELOAD)
 * that defines the MPI functions rmdiag and its HDF5 calls use, counts each call, the bytes it moves
 * and the wall time spent in it, and passes it on to the PMPI_ entry point. At MPI_Finalize every
 * rank appends one line per function it called to the file $RMDIAG_MPI_CALLS (stderr when unset):
 *   rank=R size=S fn=MPI_Bcast calls=N bytes=B seconds=T
 * and a line fn=run with the seconds from MPI_Init to MPI_Finalize.
 * Bytes are the call's payload as this rank's buffers hold it: a broadcast's or all-reduce's count,
 * all a gather's root receives and what each other rank sends, a message's length, a file read's or
 * write's count. MPI_Comm_split and the windows' creation are counted like the others. Used by
 * bench/sim_schedule.py (--measure) to count the collectives of a job; not part of rmdiag. */
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum {
  F_BCAST, F_ALLREDUCE, F_REDUCE, F_GATHER, F_GATHERV, F_ALLGATHER, F_ALLGATHERV, F_SCATTERV, F_ALLTOALLW,
  F_BARRIER, F_IBARRIER, F_COMM_SPLIT, F_COMM_SPLIT_TYPE, F_SEND, F_RECV, F_IRECV, F_FETCH_AND_OP,
  F_WIN_ALLOCATE, F_WIN_ALLOCATE_SHARED, F_FILE_OPEN, F_FILE_READ_AT, F_FILE_READ_AT_ALL, F_FILE_WRITE_AT,
  F_FILE_WRITE_AT_ALL, F_N
};
static const char *names[F_N] = {
    "MPI_Bcast", "MPI_Allreduce", "MPI_Reduce", "MPI_Gather", "MPI_Gatherv", "MPI_Allgather", "MPI_Allgatherv",
    "MPI_Scatterv", "MPI_Alltoallw", "MPI_Barrier", "MPI_Ibarrier", "MPI_Comm_split", "MPI_Comm_split_type",
    "MPI_Send", "MPI_Recv", "MPI_Irecv", "MPI_Fetch_and_op", "MPI_Win_allocate", "MPI_Win_allocate_shared",
    "MPI_File_open", "MPI_File_read_at", "MPI_File_read_at_all", "MPI_File_write_at", "MPI_File_write_at_all"};

static struct {
  long long calls;
  long long bytes;
  double seconds;
} tally[F_N];

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static long long tsize(MPI_Datatype t, long long count) {
  int s = 0;
  if (t != MPI_DATATYPE_NULL) PMPI_Type_size(t, &s);
  return (long long)s * count;
}

static int rank_of(MPI_Comm c) {
  int r = 0;
  PMPI_Comm_rank(c, &r);
  return r;
}

static int size_of(MPI_Comm c) {
  int s = 1;
  PMPI_Comm_size(c, &s);
  return s;
}

/* Times the call `expr` and counts it under `fn` with `nbytes`. */
#define COUNT(fn, nbytes, expr)           \
  do {                                    \
    double t0_ = now();                   \
    int rc_ = (expr);                     \
    tally[fn].seconds += now() - t0_;     \
    tally[fn].calls++;                    \
    tally[fn].bytes += (nbytes);          \
    return rc_;                           \
  } while (0)

int MPI_Bcast(void *buf, int count, MPI_Datatype t, int root, MPI_Comm comm) {
  COUNT(F_BCAST, tsize(t, count), PMPI_Bcast(buf, count, t, root, comm));
}

int MPI_Allreduce(const void *sb, void *rb, int count, MPI_Datatype t, MPI_Op op, MPI_Comm comm) {
  COUNT(F_ALLREDUCE, tsize(t, count), PMPI_Allreduce(sb, rb, count, t, op, comm));
}

int MPI_Reduce(const void *sb, void *rb, int count, MPI_Datatype t, MPI_Op op, int root, MPI_Comm comm) {
  COUNT(F_REDUCE, tsize(t, count), PMPI_Reduce(sb, rb, count, t, op, root, comm));
}

/* The elements of a per-rank count array (the v-collectives' root side). */
static long long count_sum(const int c[], MPI_Comm comm) {
  long long n = 0;
  for (int r = 0, s = size_of(comm); r < s; r++) n += c[r];
  return n;
}

int MPI_Gather(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, int root, MPI_Comm comm) {
  long long b = rank_of(comm) == root ? tsize(rt, (long long)rc * size_of(comm)) : tsize(st, sc);
  COUNT(F_GATHER, b, PMPI_Gather(sb, sc, st, rb, rc, rt, root, comm));
}

int MPI_Gatherv(const void *sb, int sc, MPI_Datatype st, void *rb, const int rc[], const int displs[],
                MPI_Datatype rt, int root, MPI_Comm comm) {
  long long b = rank_of(comm) == root ? tsize(rt, count_sum(rc, comm)) : tsize(st, sc);
  COUNT(F_GATHERV, b, PMPI_Gatherv(sb, sc, st, rb, rc, displs, rt, root, comm));
}

int MPI_Allgather(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, MPI_Comm comm) {
  COUNT(F_ALLGATHER, tsize(rt, (long long)rc * size_of(comm)), PMPI_Allgather(sb, sc, st, rb, rc, rt, comm));
}

int MPI_Allgatherv(const void *sb, int sc, MPI_Datatype st, void *rb, const int rc[], const int displs[],
                   MPI_Datatype rt, MPI_Comm comm) {
  COUNT(F_ALLGATHERV, tsize(rt, count_sum(rc, comm)), PMPI_Allgatherv(sb, sc, st, rb, rc, displs, rt, comm));
}

int MPI_Scatterv(const void *sb, const int sc[], const int displs[], MPI_Datatype st, void *rb, int rc,
                 MPI_Datatype rt, int root, MPI_Comm comm) {
  long long b = rank_of(comm) == root ? tsize(st, count_sum(sc, comm)) : tsize(rt, rc);
  COUNT(F_SCATTERV, b, PMPI_Scatterv(sb, sc, displs, st, rb, rc, rt, root, comm));
}

int MPI_Alltoallw(const void *sb, const int sc[], const int sd[], const MPI_Datatype st[], void *rb, const int rc[],
                  const int rd[], const MPI_Datatype rt[], MPI_Comm comm) {
  long long b = 0;
  for (int r = 0, s = size_of(comm); r < s; r++) b += tsize(rt[r], rc[r]);
  COUNT(F_ALLTOALLW, b, PMPI_Alltoallw(sb, sc, sd, st, rb, rc, rd, rt, comm));
}

int MPI_Barrier(MPI_Comm comm) { COUNT(F_BARRIER, 0, PMPI_Barrier(comm)); }

int MPI_Ibarrier(MPI_Comm comm, MPI_Request *req) { COUNT(F_IBARRIER, 0, PMPI_Ibarrier(comm, req)); }

int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *out) {
  COUNT(F_COMM_SPLIT, 0, PMPI_Comm_split(comm, color, key, out));
}

int MPI_Comm_split_type(MPI_Comm comm, int type, int key, MPI_Info info, MPI_Comm *out) {
  COUNT(F_COMM_SPLIT_TYPE, 0, PMPI_Comm_split_type(comm, type, key, info, out));
}

int MPI_Send(const void *buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm comm) {
  COUNT(F_SEND, tsize(t, count), PMPI_Send(buf, count, t, dest, tag, comm));
}

int MPI_Recv(void *buf, int count, MPI_Datatype t, int src, int tag, MPI_Comm comm, MPI_Status *status) {
  COUNT(F_RECV, tsize(t, count), PMPI_Recv(buf, count, t, src, tag, comm, status));
}

int MPI_Irecv(void *buf, int count, MPI_Datatype t, int src, int tag, MPI_Comm comm, MPI_Request *req) {
  COUNT(F_IRECV, tsize(t, count), PMPI_Irecv(buf, count, t, src, tag, comm, req));
}

int MPI_Fetch_and_op(const void *origin, void *result, MPI_Datatype t, int target, MPI_Aint disp, MPI_Op op,
                     MPI_Win win) {
  COUNT(F_FETCH_AND_OP, tsize(t, 1), PMPI_Fetch_and_op(origin, result, t, target, disp, op, win));
}

int MPI_Win_allocate(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void *base, MPI_Win *win) {
  COUNT(F_WIN_ALLOCATE, (long long)size, PMPI_Win_allocate(size, disp_unit, info, comm, base, win));
}

int MPI_Win_allocate_shared(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void *base, MPI_Win *win) {
  COUNT(F_WIN_ALLOCATE_SHARED, (long long)size, PMPI_Win_allocate_shared(size, disp_unit, info, comm, base, win));
}

int MPI_File_open(MPI_Comm comm, const char *name, int amode, MPI_Info info, MPI_File *fh) {
  COUNT(F_FILE_OPEN, 0, PMPI_File_open(comm, name, amode, info, fh));
}

int MPI_File_read_at(MPI_File fh, MPI_Offset off, void *buf, int count, MPI_Datatype t, MPI_Status *status) {
  COUNT(F_FILE_READ_AT, tsize(t, count), PMPI_File_read_at(fh, off, buf, count, t, status));
}

int MPI_File_read_at_all(MPI_File fh, MPI_Offset off, void *buf, int count, MPI_Datatype t, MPI_Status *status) {
  COUNT(F_FILE_READ_AT_ALL, tsize(t, count), PMPI_File_read_at_all(fh, off, buf, count, t, status));
}

int MPI_File_write_at(MPI_File fh, MPI_Offset off, const void *buf, int count, MPI_Datatype t, MPI_Status *status) {
  COUNT(F_FILE_WRITE_AT, tsize(t, count), PMPI_File_write_at(fh, off, buf, count, t, status));
}

int MPI_File_write_at_all(MPI_File fh, MPI_Offset off, const void *buf, int count, MPI_Datatype t,
                          MPI_Status *status) {
  COUNT(F_FILE_WRITE_AT_ALL, tsize(t, count), PMPI_File_write_at_all(fh, off, buf, count, t, status));
}

static double t_init;

int MPI_Init(int *argc, char ***argv) {
  t_init = now();
  return PMPI_Init(argc, argv);
}

int MPI_Finalize(void) {
  int rank = 0, size = 1;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  PMPI_Comm_size(MPI_COMM_WORLD, &size);
  char buf[(F_N + 1) * 128];
  size_t k = 0;
  for (int f = 0; f < F_N; f++)
    if (tally[f].calls)
      k += (size_t)snprintf(buf + k, sizeof buf - k, "rank=%d size=%d fn=%s calls=%lld bytes=%lld seconds=%.6f\n",
                            rank, size, names[f], tally[f].calls, tally[f].bytes, tally[f].seconds);
  k += (size_t)snprintf(buf + k, sizeof buf - k, "rank=%d size=%d fn=run calls=1 bytes=0 seconds=%.6f\n", rank, size,
                        now() - t_init);
  const char *path = getenv("RMDIAG_MPI_CALLS");
  int fd = path && *path ? open(path, O_WRONLY | O_CREAT | O_APPEND, 0644) : 2;
  if (fd >= 0 && k) {
    ssize_t w = write(fd, buf, k);  /* one write per rank: the ranks' lines do not interleave */
    (void)w;
  }
  if (fd > 2) close(fd);
  return PMPI_Finalize();
}
