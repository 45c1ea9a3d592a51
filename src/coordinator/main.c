/* rmdiag's entry point: everything else lives in the library (see include/rmdiag/rmdiag.h). */
#include <mpi.h>
#include <stdio.h>

#include "rmdiag/rmdiag.h"

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int code = rmdiag_main(argc, argv, MPI_COMM_WORLD, stdout, stderr);
  MPI_Finalize();
  return code;
}
