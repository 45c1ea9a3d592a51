/* Atomic outputs: a temporary file in the destination folder, renamed into place (.h5 first,
 * .json last), with SIGTERM/SIGINT removing any temporary file, so an interrupted job leaves no
 * half-written output. Also the spec hash and the resume/force decision. */
#ifndef RMDIAG_OUTPUT_H
#define RMDIAG_OUTPUT_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "rmdiag/job.h"
#include "rmdiag/status.h"

/* Installs the SIGTERM/SIGINT/SIGHUP handlers that unlink registered temporary files. */
void rd_signals_install(void);
/* Registers / unregisters a temporary path for removal on a signal (at most a few at a time). */
void rd_tmp_register(const char *path);
void rd_tmp_unregister(const char *path);
/* The folders rd_mkdirs created (and only those) are remembered: rd_made_dir_remove removes them,
 * deepest first, as far as they are empty (a failure or a signal; async-signal-safe);
 * rd_made_dir_forget keeps them (a run that finished). */
void rd_made_dir_remove(void);
void rd_made_dir_forget(void);
/* Removes every registered temporary file, and the registered folder if empty (signal handlers,
 * aborts), after rolling back an output replacement in progress. Async-signal-safe. */
void rd_tmp_cleanup(void);

/* The replacement of a finished job's outputs, journalled so that a signal in the middle restores
 * the old report and .h5 (the old pair stands until the new pair is complete). rd_commit_begin(json,
 * h5, h5tmp, stale_json or NULL, old_h5 or NULL, h5_existed) is called before the old report moves
 * to stale_json; old_h5 is a second link to the old .h5 (NULL with h5_existed when no link could be
 * made: then the old report is not restored over a replaced .h5). How far the replacement got is
 * read from the files themselves (h5tmp gone: the .h5 was renamed in; the report present after
 * that: the new one is in place), so no step can be missed by a signal. rd_commit_end() once done. */
void rd_commit_begin(const char *json, const char *h5, const char *h5tmp, const char *stale_json, const char *old_h5,
                     int h5_existed);
void rd_commit_end(void);
/* Undoes the replacement in progress, if any (async-signal-safe; rd_tmp_cleanup calls it). */
void rd_commit_rollback(void);
/* Set by the handler; long loops may poll it. */
extern volatile int rd_interrupted;

/* "<dir>/.<name>.tmp.<pid>": where an output is written before it is renamed into place. */
char *rd_tmp_path(const char *final_path);
/* "<dir>/.<name>.<tag>.<pid>" */
char *rd_side_path(const char *final_path, const char *tag);
/* mkdir -p */
int rd_mkdirs(const char *dir, rd_status *st);
/* Writes `text` to `final_path` atomically (temporary file + fsync + rename). */
int rd_write_file_atomic(const char *final_path, const char *text, rd_status *st);

/* Inputs of a job, as the spec hash and the report see them. */
typedef struct rd_input_stat {
  char *path;       /* realpath */
  int64_t bytes;
  int64_t mtime_s, mtime_ns;
} rd_input_stat;

int rd_input_stat_get(const char *path, const char *jobfile, const char *key, rd_input_stat *in, rd_status *st);

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
