/* libFuzzer harness of the job-file parser: the input is a job file's bytes, parsed and validated
 * by rd_jobfile_parse as `rmdiag run` does after reading the file (every kind's options included;
 * inputs are not touched), then freed. */
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "rmdiag/job.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* the caller (load_jobfile) hands over the bytes with a NUL after them */
  char *text = malloc(size + 1);
  if (!text) return 0;
  memcpy(text, data, size);
  text[size] = '\0';
  rd_jobfile jf;
  memset(&jf, 0, sizeof jf);
  rd_status st;
  rd_status_init(&st);
  int rc = rd_jobfile_parse("/fuzz/jobs/job.json", text, size, &jf, &st);
  fz_check_status("rd_jobfile_parse", rc, &st);
  if (rc == RD_OK && jf.n_jobs < 1) {
    fprintf(stderr, "fuzz rd_jobfile_parse: a job file without jobs was accepted\n");
    abort();
  }
  rd_jobfile_free(&jf);
  free(text);
  return 0;
}
