/* The rmdiag program as a library: the whole command line runs on a given communicator, so
 * tests can run it on MPI_COMM_SELF or a split communicator. main() only brackets it with
 * MPI_Init and MPI_Finalize. */
#ifndef RMDIAG_RMDIAG_H
#define RMDIAG_RMDIAG_H

#include <mpi.h>
#include <stdio.h>

/* Returns the process exit status (0, 1 or 2), the same on every rank of `comm`. */
int rmdiag_main(int argc, char **argv, MPI_Comm comm, FILE *out, FILE *err);

#endif
