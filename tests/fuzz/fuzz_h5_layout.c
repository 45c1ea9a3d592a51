/* libFuzzer harness of the input checks of every report kind: the input carries a job file
 * ("job.json") and the HDF5 files it names (fuzz_common.h, the container format), mostly small
 * valid inputs whose bytes the fuzzer mutates. They are written into a scratch folder and checked
 * as `rmdiag validate job.json` does on one rank: the job file, each job's input layout (kind's
 * validate) and its values (kind's check), with nothing computed or written. MPI is initialized
 * once; HDF5 keeps global state between inputs, so every input must leave no HDF5 object open. */
#include <hdf5.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "rmdiag/common/comm.h"
#include "rmdiag/run.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static rd_ctx g_ctx;

static void finalize(void) {
  rd_ctx_free(&g_ctx);
  MPI_Finalize();
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  MPI_Init(argc, argv);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  if (rd_ctx_init(&g_ctx, MPI_COMM_WORLD, fz_log(), fz_log()) != RD_OK) abort();
  g_ctx.quiet = 1;
  atexit(finalize);
  fz_dir();
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fz_input in;
  if (fz_split(data, size, &in) != 0) return 0;
  int have_job = 0;
  for (int i = 0; i < in.n_files; i++) have_job |= strcmp(in.name[i], "job.json") == 0;
  if (!have_job) {
    fz_input_free(&in);
    return 0;
  }
  fz_write_files(&in);
  char job[512];
  rd_status st;
  rd_status_init(&st);
  rd_run_flags fl = {.validate_only = 1, .backend = "cpu"};
  int rc = rd_cmd_run(&g_ctx, fz_path(job, sizeof job, "job.json"), &fl, &st);
  fz_check_status("validate", rc, &st);
  fz_check_outputs("validate", &in, NULL, &st);
  fz_check_hdf5_closed("validate");
  fz_clean();
  fz_input_free(&in);
  return 0;
}
