// The CUDA backend module (librmdiag_cuda.so), loaded by rmdiag with dlopen: device set-up and
// the backend table. Each kind's kernels sit beside their CPU reference in src/kernels/ (cm_cuda.cu
// beside cm_cpu.c, ...) and follow the same summation order; tests compare them on a GPU and skip
// cleanly without one.
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>

extern "C" {
#include "rmdiag/kernels/backend.h"
}
#include "cuda_check.h"


extern "C" __attribute__((visibility("default"))) void rmdiag_cuda_versions(int *driver, int *runtime) {
  if (cudaDriverGetVersion(driver) != cudaSuccess) *driver = 0;
  if (cudaRuntimeGetVersion(runtime) != cudaSuccess) *runtime = 0;
}

static int cuda_init(int node_rank, char *info, size_t infolen, char *err, size_t errlen) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    int driver = 0, runtime = 0;
    rmdiag_cuda_versions(&driver, &runtime);
    if (e == cudaErrorInsufficientDriver && driver > 0)
      snprintf(err, errlen, "cudaGetDeviceCount: %s (the driver supports CUDA %d.%d, this module needs %d.%d)",
               cudaGetErrorString(e), driver / 1000, driver % 1000 / 10, runtime / 1000, runtime % 1000 / 10);
    else
      snprintf(err, errlen, "cudaGetDeviceCount: %s", cudaGetErrorString(e));
    return 1;
  }
  if (count <= 0) {
    snprintf(err, errlen, "no CUDA device");
    return 1;
  }
  int dev = node_rank % count;
  RD_CUDA_TRY(cudaSetDevice(dev), err, errlen);
  cudaDeviceProp prop;
  RD_CUDA_TRY(cudaGetDeviceProperties(&prop, dev), err, errlen);
  snprintf(info, infolen, "cuda:%d (%s)", dev, prop.name);
  return 0;
}

void rd_probe_cuda_release(void);  // probe_cuda.cu

static void cuda_fini(void) { rd_probe_cuda_release(); }

// The kinds' kernel tables, each in its own file beside its CPU reference.
extern "C" const struct rd_cm_kernels rd_cm_kernels_cuda;        // cm_cuda.cu
extern "C" const struct rd_bench_kernels rd_bench_kernels_cuda;  // bench_cuda.cu
extern "C" const struct rd_leak_kernels rd_leak_kernels_cuda;    // leak_cuda.cu
extern "C" const struct rd_probe_kernels rd_probe_kernels_cuda;  // probe_cuda.cu

static const rd_backend cuda_backend = {
    .abi = RD_BACKEND_ABI,
    .name = "cuda",
    .init = cuda_init,
    .fini = cuda_fini,
    .cm = &rd_cm_kernels_cuda,
    .bench = &rd_bench_kernels_cuda,
    .leak = &rd_leak_kernels_cuda,
    .probe = &rd_probe_kernels_cuda,
};

extern "C" __attribute__((visibility("default"))) const rd_backend *rmdiag_cuda_backend(void) {
  return &cuda_backend;
}
