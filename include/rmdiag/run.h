/* The run and validate commands (docs/reference.md, 'Commands'). */
#ifndef RMDIAG_RUN_H
#define RMDIAG_RUN_H

#include "rmdiag/common/comm.h"
#include "rmdiag/common/status.h"

typedef struct rd_run_flags {
  int resume, force, validate_only;
  int plan_only;        /* --plan: print how the jobs would be spread over the ranks; compute nothing */
  int ranks_per_job;    /* --ranks-per-job: 0 auto, -1 all ranks, else the group width */
  int wait;             /* --wait: another run holding the output folder is waited for, not an error */
  const char *backend;  /* "auto", "cpu", "cuda" */
} rd_run_flags;

/* Collective over ctx->comm. Returns the exit status. */
int rd_cmd_run(rd_ctx *ctx, const char *jobpath, const rd_run_flags *fl, rd_status *st);

#endif
