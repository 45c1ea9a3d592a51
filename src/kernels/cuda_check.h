// Checks for CUDA runtime and cuBLAS calls in the backend module: a failing call writes
// "CALL failed at FILE:LINE: reason" into the caller's error buffer and either returns 1
// (RD_CUDA_TRY, RD_CUBLAS_TRY) or jumps to the caller's cleanup label (RD_CUDA_TRY_GOTO).
#ifndef RMDIAG_CUDA_CHECK_H
#define RMDIAG_CUDA_CHECK_H

#include <cuda_runtime.h>
#include <stdio.h>

// (cudaGetLastError also clears the runtime's sticky last error, so that the next launch check of a
// later call does not report this failure again)
#define RD_CUDA_FAILED(call, e, err, errlen)                                                          \
  ((void)cudaGetLastError(),                                                                        \
   snprintf((err), (errlen), "%s failed at %s:%d: %s", #call, __FILE__, __LINE__, cudaGetErrorString(e)))

#define RD_CUDA_TRY(call, err, errlen)                              \
  do {                                                              \
    cudaError_t rd_e_ = (call);                                     \
    if (rd_e_ != cudaSuccess) {                                     \
      RD_CUDA_FAILED(call, rd_e_, err, errlen);                     \
      return 1;                                                     \
    }                                                               \
  } while (0)

#define RD_CUDA_TRY_GOTO(call, err, errlen, label)                  \
  do {                                                              \
    cudaError_t rd_e_ = (call);                                     \
    if (rd_e_ != cudaSuccess) {                                     \
      RD_CUDA_FAILED(call, rd_e_, err, errlen);                     \
      goto label;                                                   \
    }                                                               \
  } while (0)

#define RD_CUBLAS_TRY(call, err, errlen)                                                                \
  do {                                                                                                  \
    int rd_s_ = (int)(call);                                                                            \
    if (rd_s_ != 0) {                                                                                   \
      snprintf((err), (errlen), "%s failed at %s:%d (cuBLAS status %d)", #call, __FILE__, __LINE__, rd_s_); \
      return 1;                                                                                         \
    }                                                                                                   \
  } while (0)

#endif
