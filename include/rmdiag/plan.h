/* Planning a job file over the ranks: each job's estimated cost, the rank groups the jobs run on,
 * and the order in which they are handed out (largest first). The plan is made on rank 0 from
 * estimates only; which group runs which job is decided at run time (the next job goes to whichever
 * group frees up), and reports do not depend on it.
 *
 * A plan has one or two tiers of groups. Wide groups take the "large" jobs (the first n_large of
 * the order) and, once those are gone, the others; narrow groups take only the others. So a file
 * with a few large jobs and many small ones runs the large ones on wide groups while single ranks
 * work through the small ones. Wide groups may differ in width (fitted tiers: one per large job,
 * each sized for its job); the k-th wide group takes large job k first. */
#ifndef RMDIAG_PLAN_H
#define RMDIAG_PLAN_H

#include <stddef.h>
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
  int *order;        /* [n_run] job indices, largest estimate first: the hand-out order */
  int n_large;       /* the first n_large jobs of `order` go to wide groups (0 with one tier) */
  int world;         /* ranks */
  int n_groups;
  int *group_first;  /* [n_groups] each group's first rank (groups are consecutive ranks) */
  int *group_size;   /* [n_groups] */
  int *group_wide;   /* [n_groups] 1: takes the large jobs first; 0: only the others */
  double *est;       /* [n_jobs] estimated seconds on the group width the job is planned for */
  double makespan;   /* estimated seconds for the whole file under this plan */
  double sequential; /* estimated seconds running every job on all ranks, one after another */
} rd_plan;

/* Plans the n jobs with run[j] != 0 over `world` ranks: simulates handing the jobs out for each
 * candidate set of groups (equal widths; or wide groups for the largest jobs and single ranks for
 * the rest); of those within 10 % of the smallest estimated makespan it keeps the one whose makespan
 * is smallest on average when the jobs' times are off their estimates (fixed draws: the plan is a
 * function of the estimates), one group of all ranks unless another is clearly faster. Returns 0,
 * or -1 when out of memory. */
int rd_plan_make(const rd_job_cost *costs, const int *run, int n, int world, rd_plan *plan);
/* The same with every group `width` ranks wide (1..world; larger is taken as world). */
int rd_plan_make_width(const rd_job_cost *costs, const int *run, int n, int world, int width, rd_plan *plan);
/* Allocates the arrays of a plan with n jobs and g groups (the fields filled by the caller: the
 * ranks that receive a plan). Returns 0, or -1 when out of memory. */
int rd_plan_alloc(rd_plan *plan, int n, int g);
void rd_plan_free(rd_plan *plan);

/* The group a rank belongs to. */
int rd_plan_group_of(const rd_plan *plan, int rank);
/* The widest group's width. */
int rd_plan_max_width(const rd_plan *plan);
/* The groups in words, as `rmdiag run --plan` prints them ("2 groups of 4 and 2 ranks for the 2 largest
 * jobs ..."; the k-th wide group takes the k-th largest job first). */
void rd_plan_groups_text(const rd_plan *plan, char *buf, size_t cap);

#endif
