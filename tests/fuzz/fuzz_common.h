/* Shared parts of the fuzz harnesses: a private scratch folder per process, the container format
 * that carries an argument list and several files in one fuzz input, and the checks every harness
 * makes after a call (a status that is OK, or exit status 2 with a message; nothing half-written;
 * no HDF5 object left open). A broken check calls abort(), which libFuzzer reports as a crash. */
#ifndef RMDIAG_FUZZ_COMMON_H
#define RMDIAG_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "rmdiag/common/status.h"

#define FZ_MAX_ARGS 64
#define FZ_MAX_FILES 8

/* One fuzz input split into its parts (see fz_split). Strings are malloc'd copies. */
typedef struct fz_input {
  int argc;
  char *argv[FZ_MAX_ARGS];
  int n_files;
  char *name[FZ_MAX_FILES];      /* file names, [A-Za-z0-9._-] only */
  const uint8_t *data[FZ_MAX_FILES];
  size_t size[FZ_MAX_FILES];
} fz_input;

/* The scratch folder of this process (created on first use under /dev/shm or /tmp, removed at
 * exit), and "<scratch>/<name>" in buf. */
const char *fz_dir(void);
const char *fz_path(char *buf, size_t len, const char *name);

/* Where the code under test logs: /dev/null, or stderr when RMDIAG_FUZZ_VERBOSE is set. */
FILE *fz_log(void);

/* The container format:
 *   line 1..k   arguments, one per line ('@' in an argument stands for "<scratch>/")
 *   "%%file NAME" line, then the bytes of file NAME up to the next "\n%%file " (or the end)
 *   ... up to FZ_MAX_FILES files
 * Returns 0, or -1 when the input is not worth running (too many parts, an unusable name or an
 * argument that could reach outside the scratch folder: an absolute path other than a --group
 * value, or ".."). */
int fz_split(const uint8_t *data, size_t size, fz_input *in);
void fz_input_free(fz_input *in);

/* Writes the input's files into the scratch folder (aborts when that fails: the harness is
 * broken, not the code under test). */
void fz_write_files(const fz_input *in);
void fz_write_file(const char *name, const uint8_t *data, size_t size);
/* Removes everything in the scratch folder. */
void fz_clean(void);

/* The checks after a call: rc equals st->code; the code is RD_OK, or RD_EINPUT with a message
 * (RD_EFAIL only for an out-of-memory message, since a bad input is exit status 2); when
 * `out_name` is given, the output exists exactly when the call succeeded, and after a failure the
 * folder holds the input files only (nothing half-written, no temporary left); no HDF5 object is
 * left open. `what` names the harness in the abort message. */
/* A broken promise of the code under test, `id` naming it: abort(), unless `id` is a known open
 * finding (the list in fuzz_common.c, each with its reproducer in tests/fuzz/crashes/) and
 * RMDIAG_FUZZ_STRICT is not set: then it is counted and printed once, and fuzzing goes on to find
 * other problems. */
void fz_finding(const char *id, const char *what, const char *msg);

void fz_check_status(const char *what, int rc, const rd_status *st);
void fz_check_outputs(const char *what, const fz_input *in, const char *out_name, const rd_status *st);
void fz_check_hdf5_closed(const char *what);

#endif
