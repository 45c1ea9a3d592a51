/* A job's spec hash and what to do with its existing outputs (--resume skips a job whose report
 * was made from the same spec; a report of another spec is replaced only with --force). */
#ifndef RMDIAG_RESUME_H
#define RMDIAG_RESUME_H

#include "rmdiag/common/files.h"
#include "rmdiag/common/status.h"
#include "rmdiag/job.h"

/* SHA-256 hex of the canonical JSON of {name, kind, group, options (defaults filled), seed,
 * version, inputs[{path, bytes, mtime}]}. */
int rd_spec_sha256(const rd_job *job, const rd_jobfile *jf, const rd_input_stat *in, char hex[65], rd_status *st);

/* What to do with a job given its existing outputs. */
typedef enum { RD_OUT_WRITE = 0, RD_OUT_SKIP = 1 } rd_out_action;

/* Looks at <dir>/<name>.json and .h5: same spec + resume → skip; other spec without force →
 * RD_EINPUT error; otherwise write. */
int rd_output_decide(const char *json_path, const char *h5_path, const char *spec, int resume, int force,
                     rd_out_action *action, rd_status *st);

#endif
