/* The run driver's parts (coordinator only): checking every job before anything is computed
 * (run_checks.c), running one job on a group of ranks and committing its outputs (run_job.c),
 * and handing the jobs out to rank groups (run_schedule.c); run.c strings them together. */
#ifndef RMDIAG_COORDINATOR_RUN_INTERNAL_H
#define RMDIAG_COORDINATOR_RUN_INTERNAL_H

#include <stdio.h>

#include "rmdiag/common/comm.h"
#include "rmdiag/common/files.h"
#include "rmdiag/job.h"
#include "rmdiag/plan.h"
#include "rmdiag/resume.h"
#include "rmdiag/run.h"

/* What the checks decide for each job. */
typedef struct job_plan {
  rd_input_stat in;
  char spec[65];
  rd_out_action action;
  int force;  /* --force: outputs of another spec may be replaced (checked again at commit) */
  char *json_path, *h5_path;
  rd_job_cost cost;  /* estimated (rank 0) */
} job_plan;

void job_plans_free(job_plan *p, int n);

/* Collective over ctx, first of all for `run`: rank 0 creates output_dir (*made_dir set: the
 * folders it made are remembered), takes its lock (another run holding it: exit 2, or with --wait a
 * wait) and cleans up what runs that ended without cleaning up left there. */
int run_claim_output_dir(const rd_ctx *ctx, const rd_jobfile *jf, const rd_run_flags *fl, rd_dir_lock *lock,
                         int *made_dir, rd_status *st);

/* Collective over ctx: inputs exist, layouts are right, outputs may be written (paths, overlaps,
 * resume/force); with `check_values`, the values of every job to be written are checked too
 * (on the rank groups of `plan` when it has several, else on all ranks). Fills plans. */
int run_check_jobs(const rd_ctx *ctx, rd_jobfile *jf, const rd_run_flags *fl, job_plan *plans, rd_status *st);
int run_check_values(const rd_ctx *ctx, const rd_jobfile *jf, const job_plan *plans, const rd_plan *plan,
                     rd_ctx *group, rd_status *st);

/* One job on the ranks of `g` (collective): the kind computes; the group's rank 0 writes the .h5
 * under a temporary name, renames it into place and writes the report last. The kind's stdout
 * table goes to `out` (group rank 0). `done_line` (group rank 0, may be NULL) receives the line
 * saying where the report went. */
int run_one_job(const rd_ctx *g, const rd_job *job, const rd_jobfile *jf, const job_plan *p, const char *backend_info,
                FILE *out, char *done_line, size_t done_len, rd_status *st);

/* Runs every job whose action is RD_OUT_WRITE (collective over ctx): one after another on all
 * ranks when the plan has one group, else handed out to the plan's groups, the next job to
 * whichever group frees up. A job that fails does not stop the others; on return st holds the
 * run's outcome (the failed jobs named) and stdout has every job's table in job-file order. */
int run_schedule(rd_ctx *ctx, const rd_jobfile *jf, const job_plan *plans, const rd_plan *plan,
                 const char *backend_info, rd_status *st);

/* The summary report of each sweep (sweep.c). */
typedef struct sweep_plan {
  char *json_path;  /* <output_dir>/<name>.summary.json */
  char spec[65];    /* from the specs of the sweep's jobs */
  rd_out_action action;
} sweep_plan;
void sweep_plans_free(sweep_plan *sp, int n);
/* Rank 0 decides each summary's fate like a job's (another spec without --force: exit 2). */
int run_sweeps_decide(const rd_ctx *ctx, const rd_jobfile *jf, const rd_run_flags *fl, const job_plan *plans,
                      sweep_plan *sp, rd_status *st);
/* Rank 0, after the jobs: writes each summary whose jobs all have reports of their specs. */
int run_sweeps_summarize(const rd_ctx *ctx, const rd_jobfile *jf, const job_plan *plans, const sweep_plan *sp,
                         rd_status *st);

/* Creates the plan's rank groups (collective over ctx); `group` is this rank's group context. */
int run_groups_make(const rd_ctx *ctx, const rd_plan *plan, rd_ctx *group, rd_status *st);
void run_groups_free(rd_ctx *group);

#endif
