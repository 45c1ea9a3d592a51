/* For the GPU-vs-CPU tests: the CUDA backend, or NULL after printing why the test skips (no CUDA
 * module in this build, or no GPU answering). Call after MPI_Init; on NULL, MPI_Finalize and
 * return 77 (CTest's skip code for these tests). */
#ifndef RMDIAG_TEST_CUDA_TEST_H
#define RMDIAG_TEST_CUDA_TEST_H

#include <stdio.h>

#include "rmdiag/backend.h"
#include "rmdiag/status.h"

static const rd_backend *t_cuda_backend(const char *what, char *info, size_t infolen) {
  const rd_backend *b = NULL;
  rd_status st;
  rd_status_init(&st);
  if (rd_backend_select("cuda", 0, &b, info, infolen, &st) != RD_OK) {
    printf("SKIP: no GPU for the CUDA-vs-CPU %s comparison: %s\n", what, st.msg);
    return NULL;
  }
  printf("comparing %s on %s against the CPU\n", what, info);
  return b;
}

#endif
