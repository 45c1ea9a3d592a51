/* Planning a job file over the ranks: each job's estimated cost, the width of the rank groups the
 * jobs run on, and the order in which they are handed out (largest first). The plan is made on
 * rank 0 from estimates only; which group runs which job is decided at run time (the next job goes
 * to whichever group frees up), and reports do not depend on it. */
#ifndef RMDIAG_PLAN_H
#define RMDIAG_PLAN_H

#include <stdint.h>
#include <stdio.h>

/* A job's estimated cost. */
typedef struct rd_job_cost {
  double seconds;  /* on one rank */
  double serial;   /* the fraction of it that more ranks do not shorten (0..1) */
  int max_ranks;   /* ranks beyond which it gets no faster (>= 1) */
} rd_job_cost;

/* A cost from the input's size alone, for kinds without an estimate of their own. */
rd_job_cost rd_cost_default(int64_t input_bytes);

/* Estimated seconds of a job on a group of `ranks` ranks: the serial part, the parallel part
 * spread over min(ranks, max_ranks) ranks, and the collectives' overhead of a wider group. */
double rd_cost_on(const rd_job_cost *c, int ranks);

typedef struct rd_plan {
  int n_run;         /* jobs to run */
  int *order;        /* [n_run] job indices, the order jobs are handed out (largest estimate first) */
  int world;         /* ranks */
  int width;         /* ranks per group (the last groups take one more when world % width != 0) */
  int n_groups;
  double *est;       /* [n_jobs] estimated seconds on a group of `width` ranks (0 for jobs not run) */
  double makespan;   /* estimated seconds for the whole file under this plan */
  double sequential; /* estimated seconds running every job on all ranks, one after another */
} rd_plan;

/* Plans the n jobs with run[j] != 0 over `world` ranks: simulates handing the jobs out largest
 * first to groups of each candidate width and keeps the width with the smallest estimated
 * makespan (one group of all ranks on a tie). Returns 0, or -1 when out of memory. */
int rd_plan_make(const rd_job_cost *costs, const int *run, int n, int world, rd_plan *plan);
/* The same with the group width fixed (1..world; larger is taken as world). */
int rd_plan_make_width(const rd_job_cost *costs, const int *run, int n, int world, int width, rd_plan *plan);
void rd_plan_free(rd_plan *plan);

/* The group a rank belongs to, and the group's first rank and size, under the plan. */
int rd_plan_group_of(const rd_plan *plan, int rank);
void rd_plan_group_span(const rd_plan *plan, int group, int *first, int *size);

#endif
