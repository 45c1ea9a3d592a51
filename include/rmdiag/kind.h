/* One table of functions per report kind: adding a kind is adding a folder src/worker/<kind>/ that
 * defines its rd_kind, and a row in src/coordinator/kinds.c. */
#ifndef RMDIAG_KIND_H
#define RMDIAG_KIND_H

#include <cjson/cJSON.h>
#include <hdf5.h>
#include <stdio.h>

#include "rmdiag/common/comm.h"
#include "rmdiag/common/options.h"
#include "rmdiag/job.h"
#include "rmdiag/plan.h"
#include "rmdiag/common/status.h"
#include "rmdiag/common/view.h"

/* What a kind's run hands back to the driver (meaningful on rank 0 only). */
typedef struct rd_run_out {
  hid_t h5;          /* the output HDF5 file (temporary name), open on rank 0; kinds add datasets */
  cJSON *result;     /* the report's "result" object, built by the kind on rank 0 */
} rd_run_out;

typedef struct rd_kind {
  const char *name;           /* "cm", "benchmark", ... */
  const char *default_group;  /* "/cm", ... */
  const char *summary;        /* one line for `rmdiag help` */
  /* The kind's options (besides name, kind, input, group): parsing, effective options, the keys
   * a job may carry and `rmdiag help KIND` all come from this table. */
  const rd_option *options;
  /* Parses and range-checks the options of job->spec (usually rd_options_parse over `options`,
   * then the checks across options); sets job->opts and job->effective. Runs on every rank on the
   * same JSON. */
  int (*parse)(rd_job *job, const rd_jobfile *jf, rd_status *st);
  void (*free_opts)(void *opts);
  /* Checks the input's layout (names, types, shapes) without computing. The run calls it on one
   * rank alone (a context of one rank; each rank checks a share of the jobs), so what it derives
   * from the input for the job's options reaches the other ranks only through the next two. */
  int (*validate)(const rd_ctx *ctx, const rd_job *job, const rd_jobfile *jf, rd_status *st);
  /* Optional: what `validate` derived from the input that the job's options need on every rank
   * (benchmark: the input's source attribute, which may choose the scheme): `validated` reads it on
   * the rank that validated the job, `adopt` applies it on the others. */
  int64_t (*validated)(const rd_job *job);
  void (*adopt)(const rd_job *job, int64_t value);
  /* Collective, optional: every check of the input's values that `run` would make (reading the
   * data), without computing the report. Run before any job when several jobs are to be
   * written, so a bad input found later cannot leave earlier outputs behind, and by `validate`. */
  int (*check)(const rd_ctx *ctx, const rd_job *job, const rd_jobfile *jf, rd_status *st);
  /* Optional, rank 0 after `validate`: the job's estimated cost for planning (fills what it
   * knows; the default comes from the input file's size), from the input `f` (opened serially by
   * the caller, which keeps the default when it cannot be opened). May read the input's layout. */
  void (*estimate)(hid_t f, const rd_job *job, rd_job_cost *cost);
  /* Collective: computes the report. On rank 0 fills out->result and writes datasets to out->h5. */
  int (*run)(const rd_ctx *ctx, const rd_job *job, const rd_jobfile *jf, rd_run_out *out, rd_status *st);
  /* The headline numbers of a report, summarized across the seeds of a sweep: paths into the
   * result object, NULL-terminated. A segment is a key, "*" (every key of an object), or
   * NAME[F1,F2] (every element of the array NAME, named by the values of its fields F1, F2);
   * e.g. "cells[model,series,variant].r". NULL: every number of the result. */
  const char *const *headlines;
  /* Optional, for readers (docs/reference.md, 'Reading reports'): the view of a report, one process, no MPI:
   * its tables (the stdout summary of `run`, `rmdiag table`), its warnings (result.warnings) and, when `h5` is
   * not NULL, its figures for `rmdiag report`, per-item data read from that output file and binned here so the
   * page stays small. `report` is {"rmdiag": envelope, "result": ...}; during `run` the envelope holds only
   * job, kind and options. Errors (a report of another version, a missing dataset) are RD_EINPUT. */
  int (*view)(const cJSON *report, const char *h5, rd_view *v, rd_status *st);
  /* Optional: warnings that compare reports of this kind, given all of them (`rmdiag report` with several
   * reports; probe: the two training modes on the same features). */
  void (*compare)(const cJSON *const *reports, int n, rd_view *v);
  /* Optional, rank 0, for `rmdiag init KIND INPUT.h5`: adds to `job` (which holds name, kind, input
   * and group) the options the input's layout suggests, read from the file `f` open serially
   * (`file` names it in messages), and writes one line per choice on `note` ("rmdiag init: ...").
   * The job must validate as written; init then checks that it does. */
  int (*init)(hid_t f, const char *file, const char *group, cJSON *job, FILE *note, rd_status *st);
} rd_kind;

/* Rank 0 of a kind's run, once the result is complete: adds `warnings` (a list of strings, possibly empty)
 * to the result, prints the kind's summary on `out` (stdout) and the warnings on `err` (stderr). */
static inline int rd_kind_summary(const rd_kind *k, const rd_job *job, const rd_jobfile *jf, cJSON *warnings,
                                  cJSON *result, FILE *out, FILE *err, rd_status *st) {
  return rd_view_summary(k->view, job->name, k->name, job->effective, jf ? jf->output_dir : NULL, warnings, result,
                         out, err, st);
}

const rd_kind *rd_kind_find(const char *name);
/* NULL-terminated list of every kind, in the order --help shows them. */
const rd_kind *const *rd_kinds(void);

#endif
