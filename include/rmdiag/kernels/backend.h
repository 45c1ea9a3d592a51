/* One table of kernels per compute backend, one sub-table per report kind. The CPU backend is
 * always there; the CUDA backend lives in a module (librmdiag_cuda.so) loaded with dlopen, so the
 * rmdiag binary starts on machines without a GPU driver. The table is a plain C ABI with char
 * buffers for errors, shared by the binary and the module: bump RD_BACKEND_ABI whenever a table
 * changes shape.
 *
 * The one fallback rule: a NULL sub-table or a NULL entry means the CPU's (RD_BACKEND_FOR). The
 * probe's device-resident entries have no CPU counterpart (the CPU trains on the rows in place),
 * so the CPU's probe table is NULL and the probe kind takes its own path when it gets one. */
#ifndef RMDIAG_KERNELS_BACKEND_H
#define RMDIAG_KERNELS_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "rmdiag/kernels/cm.h"

#define RD_BACKEND_ABI 2

/* Each kind's kernel table, declared in the kind's kernel header (kernels/cm.h, bench.h, leak.h,
 * probe.h). */
struct rd_cm_kernels;
struct rd_bench_kernels;
struct rd_leak_kernels;
struct rd_probe_kernels;

typedef struct rd_backend {
  int abi;           /* RD_BACKEND_ABI of the code that filled the table */
  const char *name;  /* "cpu", "cuda" */
  /* Prepares device `node_rank` modulo the device count; writes a description into `info`.
   * Returns 0, or nonzero with a message in err. */
  int (*init)(int node_rank, char *info, size_t infolen, char *err, size_t errlen);
  void (*fini)(void);
  const struct rd_cm_kernels *cm;
  const struct rd_bench_kernels *bench;
  const struct rd_leak_kernels *leak;
  const struct rd_probe_kernels *probe;
} rd_backend;

extern const rd_backend rd_backend_cpu;

/* The backend that runs `kind`'s `entry`: `b` when it provides it, else the CPU backend. */
#define RD_BACKEND_FOR(b, kind, entry) \
  (((b) != NULL && (b)->kind != NULL && (b)->kind->entry != NULL) ? (b) : &rd_backend_cpu)

/* The symbol the CUDA module exports. */
typedef const rd_backend *(*rd_backend_entry_fn)(void);
#define RD_CUDA_ENTRY "rmdiag_cuda_backend"
/* And the CUDA versions it finds at run time (driver and runtime, as 1000 * major + 10 * minor;
 * 0 when unknown): without starting a device, for --version. */
typedef void (*rd_cuda_versions_fn)(int *driver, int *runtime);
#define RD_CUDA_VERSIONS "rmdiag_cuda_versions"

#endif
