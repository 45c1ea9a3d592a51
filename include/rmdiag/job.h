/* The job file (docs/reference.md, 'The job file'): parsed strictly with cJSON; each job's kind validates its own options
 * and fills in their defaults, which together with the seed, version and inputs define the
 * job's spec_sha256. */
#ifndef RMDIAG_JOB_H
#define RMDIAG_JOB_H

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>

#include "rmdiag/common/jsonutil.h"
#include "rmdiag/common/status.h"

struct rd_kind;

typedef struct rd_job {
  int index;                  /* position among the file's jobs, sweeps expanded */
  int file_index;             /* position in the file's "jobs" list (of the sweep it came from) */
  int sweep;                  /* the sweep it belongs to (index in rd_jobfile.sweeps), or -1 */
  int64_t seed;               /* its "seed", else the file's */
  const char *name;           /* points into the job's JSON */
  const struct rd_kind *kind;
  char *input;                /* input path resolved against the job file's folder */
  char *group;                /* HDF5 group, default by kind */
  const cJSON *spec;          /* the job's JSON object */
  cJSON *effective;           /* the kind's options with defaults filled in */
  void *opts;                 /* the kind's parsed options */
  rd_where where;             /* "FILE: jobs[i] ("name")" for messages */
} rd_job;

/* A job that only names an input (file and group), for the layout checks `rmdiag init` runs before
 * any job file exists. */
static inline rd_job rd_job_for_input(const char *file, const char *group) {
  rd_job j = {0};
  j.input = (char *)file;
  j.group = (char *)group;
  snprintf(j.where.path, sizeof j.where.path, "%s", file);
  return j;
}

/* A job with "sweep": {KEY: [values...], ...} expands into one job per combination of the values,
 * named NAME.KEY-I for each key in the order given (I the value's 0-based position in its list),
 * the first key varying slowest. Its summary report is NAME.summary. */
typedef struct rd_sweep {
  const char *name;          /* the job's name */
  int file_index;            /* its position in "jobs" */
  const struct rd_kind *kind;
  const cJSON *spec;         /* the "sweep" object */
  int n_keys;
  const char *keys[16];
  int n_values[16];
  int first, n;              /* its members: jobs[first .. first + n) */
} rd_sweep;

typedef struct rd_jobfile {
  char *path;          /* as given */
  char *dir;           /* folder relative paths resolve against */
  char *output_dir;    /* resolved */
  int64_t seed;
  const char *description;  /* optional, copied into every report */
  int n_jobs;
  rd_job *jobs;
  int n_sweeps;
  rd_sweep *sweeps;
  cJSON *root;
  cJSON *expanded;     /* the JSON of the jobs sweeps expanded into (owned) */
} rd_jobfile;

/* The position of member m of sweep s in the list of the sweep's key k. */
int rd_sweep_position(const rd_sweep *s, int m, int k);

/* Parses and validates a job file from its bytes (read by rank 0 and broadcast, so every rank
 * parses the same text). Checks keys, types, ranges, names, kinds and kind options; does not
 * touch the inputs. */
int rd_jobfile_parse(const char *path, const char *text, size_t len, rd_jobfile *jf, rd_status *st);
void rd_jobfile_free(rd_jobfile *jf);

/* Joins `rel` to `dir` unless it is absolute. Returns malloc'd string. */
char *rd_path_join(const char *dir, const char *rel);

#endif
