/* The CPU backend: the reference kernels, always available. */
#include <stdio.h>

#include "rmdiag/backend.h"
#include "rmdiag/bench.h"

static int cpu_init(int node_rank, char *info, size_t infolen, char *err, size_t errlen) {
  (void)node_rank;
  (void)err;
  (void)errlen;
  snprintf(info, infolen, "cpu");
  return 0;
}

static void cpu_fini(void) {}

static int cpu_cm_pairs(const rd_cm_block *in, rd_cm_pairs *out, char *err, size_t errlen) {
  (void)err;
  (void)errlen;
  rd_cm_pairs_cpu(in, out);
  return 0;
}

const rd_backend rd_backend_cpu = {
    .abi = RD_BACKEND_ABI,
    .name = "cpu",
    .init = cpu_init,
    .fini = cpu_fini,
    .cm_pairs = cpu_cm_pairs,
    .bench = &rd_bench_kernels_cpu,
};
