/* One table of kernels per compute backend. The CPU backend fills every entry; the CUDA backend
 * lives in a module (librmdiag_cuda.so) loaded with dlopen, so the rmdiag binary starts on
 * machines without a GPU driver. A NULL entry falls back to the CPU kernel. The table is a plain
 * C ABI with char buffers for errors, shared by the binary and the module. */
#ifndef RMDIAG_BACKEND_H
#define RMDIAG_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#define RD_BACKEND_ABI 1

typedef enum rd_ftype { RD_F32 = 0, RD_F64 = 1 } rd_ftype;

/* cm: a block of pairs × runs, row-major, rewards in their stored precision. */
typedef struct rd_cm_block {
  int64_t n_pairs, n_runs;
  rd_ftype ftype;
  const void *reward_chosen, *reward_rejected;
  const uint8_t *in_train;
} rd_cm_block;

/* cm per-pair results: TM, TG (NaN when a side has no runs) and the train-run count. */
typedef struct rd_cm_pairs {
  double *tm, *tg;
  int32_t *n_train;
} rd_cm_pairs;

/* Kernel tables of the other report kinds, each declared in its kind's own header. A NULL table
 * (or entry) means the kind uses its CPU reference. */
struct rd_bench_kernels;
struct rd_leak_kernels;
struct rd_probe_kernels;

typedef struct rd_backend {
  int abi;
  const char *name;  /* "cpu", "cuda" */
  /* Prepares device `device` (the rank's index within its node modulo the device count);
   * writes a description of it into `info`. */
  int (*init)(int node_rank, char *info, size_t infolen, char *err, size_t errlen);
  void (*fini)(void);
  int (*cm_pairs)(const rd_cm_block *in, rd_cm_pairs *out, char *err, size_t errlen);
  const struct rd_bench_kernels *bench;
  const struct rd_leak_kernels *leak;
  const struct rd_probe_kernels *probe;
} rd_backend;

extern const rd_backend rd_backend_cpu;

/* CPU reference kernel for cm (also used by tests against the CUDA kernel). */
void rd_cm_pairs_cpu(const rd_cm_block *in, rd_cm_pairs *out);

/* The logistic function, stable for any argument (no overflow past |x| > 709). */
double rd_sigmoid(double x);

/* Chooses the backend: "cpu", "cuda" or "auto" (cuda if the module loads and a device exists).
 * `info` describes the choice. Returns RD_OK or an error for an explicit request that cannot be
 * met. Must be called by every rank. */
struct rd_status;
int rd_backend_select(const char *want, int node_rank, const rd_backend **out, char *info, size_t infolen,
                      struct rd_status *st);

/* The symbol the CUDA module exports. */
typedef const rd_backend *(*rd_backend_entry_fn)(void);
#define RD_CUDA_ENTRY "rmdiag_cuda_backend"

#endif
