/* libFuzzer harness of one importer (RD_FUZZ_IMPORTER, set by CMakeLists.txt: rd_import_cm_csv, ...):
 * the input carries the importer's arguments and its files (fuzz_common.h, the container format),
 * the files are written into a scratch folder and the importer's entry point runs on them with
 * "<scratch>/out.h5" as its output, as `rmdiag import FORMAT ARGS -o out.h5` would. */
#include <hdf5.h>
#include <stdlib.h>

#include "fuzz_common.h"
#include "rmdiag/import/formats.h"

#define FZ_STR2(x) #x
#define FZ_STR(x) FZ_STR2(x)

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);  /* as rmdiag_main: errors reach the user through the status */
  fz_dir();
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fz_input in;
  if (fz_split(data, size, &in) != 0) return 0;
  fz_write_files(&in);
  char out[512];
  rd_status st;
  rd_status_init(&st);
  int rc = RD_FUZZ_IMPORTER(in.argc, in.argv, fz_path(out, sizeof out, "out.h5"), fz_log(), &st);
  fz_check_status(FZ_STR(RD_FUZZ_IMPORTER), rc, &st);
  fz_check_outputs(FZ_STR(RD_FUZZ_IMPORTER), &in, "out.h5", &st);
  fz_check_hdf5_closed(FZ_STR(RD_FUZZ_IMPORTER));
  fz_clean();
  fz_input_free(&in);
  return 0;
}
