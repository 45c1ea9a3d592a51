/* A job's spec hash and what to do with its existing outputs (--resume skips a job whose report
 * was made from the same spec; a report of another spec is replaced only with --force). */
#ifndef RMDIAG_RESUME_H
#define RMDIAG_RESUME_H

#include <stdio.h>

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

/* The same rule again just before a finished job's outputs are replaced (they may have changed
 * since the start-up check): an output of another spec without force → RD_EINPUT, nothing replaced. */
int rd_output_recheck(const char *json_path, const char *h5_path, const char *spec, int force, rd_status *st);

/* Rank 0, holding the output folder's lock (or on a file system without locks): the side files
 * (.NAME.tmp.*, .NAME.json.stale.*, .NAME.h5.old.*) that processes which ended without cleaning
 * up (kill -9, a lost node) left in `dir` are removed, after an output replacement they left half
 * done is undone from them (the previous report and .h5 come back). A side file is stale when its
 * owner ran on this host and is gone (no process with its pid and start time), or ran on another
 * host, the lock is held (`lock_held`) and the file belongs to one of the outputs `names` (the
 * jobs of this job file). What was done is said on `log` (may be NULL). */
void rd_outputs_recover(const char *dir, const char *const *names, int n_names, int lock_held, FILE *log);

#endif
