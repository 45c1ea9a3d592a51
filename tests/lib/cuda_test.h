/* For the GPU-vs-CPU tests: the CUDA backend, or NULL with *code set after printing why: 77 (CTest's
 * skip code) when this build has no CUDA module or the machine has no NVIDIA driver, 1 (a failure)
 * when there is a driver but the backend does not start (a module that cannot be loaded or does not
 * match this rmdiag, a device that does not answer): a broken CUDA build must not pass as skipped.
 * Call after MPI_Init; on NULL, MPI_Finalize and return *code. */
#ifndef RMDIAG_TEST_CUDA_TEST_H
#define RMDIAG_TEST_CUDA_TEST_H

#include <stdio.h>
#include <unistd.h>

#include "rmdiag/backend_select.h"
#include "rmdiag/common/status.h"

static const rd_backend *t_cuda_backend(const char *what, char *info, size_t infolen, int *code) {
  const rd_backend *b = NULL;
  rd_status st;
  rd_status_init(&st);
  char note[8];
  if (rd_backend_select("cuda", 0, &b, info, infolen, note, sizeof note, &st) == RD_OK) {
    printf("comparing %s on %s against the CPU\n", what, info);
    return b;
  }
  int driver = access("/proc/driver/nvidia/version", F_OK) == 0 || access("/dev/nvidiactl", F_OK) == 0;
  if (!RMDIAG_HAVE_CUDA || !driver) {
    printf("SKIP: no GPU for the CUDA-vs-CPU %s comparison (%s): %s\n", what,
           RMDIAG_HAVE_CUDA ? "no NVIDIA driver" : "built without CUDA", st.msg);
    *code = 77;
  } else {
    printf("FAIL: an NVIDIA driver is present but the CUDA backend did not start for the %s comparison: %s\n", what,
           st.msg);
    *code = 1;
  }
  return NULL;
}

#endif
