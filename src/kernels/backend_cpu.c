/* The CPU backend: the reference kernels, always available. */
#include <stdio.h>

#include "rmdiag/kernels/backend.h"
#include "rmdiag/kernels/bench.h"
#include "rmdiag/kernels/cm.h"
#include "rmdiag/kernels/leak.h"

static int cpu_init(int node_rank, char *info, size_t infolen, char *err, size_t errlen) {
  (void)node_rank;
  (void)err;
  (void)errlen;
  snprintf(info, infolen, "cpu");
  return 0;
}

static void cpu_fini(void) {}

const rd_backend rd_backend_cpu = {
    .abi = RD_BACKEND_ABI,
    .name = "cpu",
    .init = cpu_init,
    .fini = cpu_fini,
    .cm = &rd_cm_kernels_cpu,
    .bench = &rd_bench_kernels_cpu,
    .leak = &rd_leak_kernels_cpu,
    .probe = NULL, /* the CPU trains on the rows in place */
};
