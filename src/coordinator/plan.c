/* Planning a job file over the ranks (see plan.h): cost model, group width, hand-out order. */
#include "rmdiag/plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Fixed costs of a job whatever its size (creating its outputs, agreeing its phases), and of
 * each doubling of a group (one more level of every collective). */
#define JOB_OVERHEAD_S 0.004
#define COLLECTIVE_S 0.002

rd_job_cost rd_cost_default(int64_t input_bytes) {
  /* reading and checking the input at a few hundred MB/s dominates most jobs; below a few MB a
   * job gains nothing from more ranks */
  rd_job_cost c = {.seconds = JOB_OVERHEAD_S + (double)input_bytes / 300e6, .serial = 0.3, .max_ranks = 1};
  int64_t chunks = input_bytes / (4 << 20);
  c.max_ranks = chunks < 1 ? 1 : chunks > 1 << 20 ? 1 << 20 : (int)chunks;
  return c;
}

double rd_cost_on(const rd_job_cost *c, int ranks) {
  int w = ranks < 1 ? 1 : ranks;
  int useful = w < c->max_ranks ? w : (c->max_ranks < 1 ? 1 : c->max_ranks);
  double s = c->serial < 0 ? 0 : c->serial > 1 ? 1 : c->serial;
  return c->seconds * (s + (1.0 - s) / useful) + (w > 1 ? COLLECTIVE_S * log2((double)w) : 0.0);
}

void rd_plan_group_span(const rd_plan *plan, int group, int *first, int *size) {
  /* n_groups groups of `width` ranks; the world % width extra ranks go one each to the last groups */
  int extra = plan->world - plan->n_groups * plan->width;
  int plain = plan->n_groups - extra;  /* groups of exactly `width` ranks come first */
  if (group < plain) {
    *first = group * plan->width;
    *size = plan->width;
  } else {
    *first = plain * plan->width + (group - plain) * (plan->width + 1);
    *size = plan->width + 1;
  }
}

int rd_plan_group_of(const rd_plan *plan, int rank) {
  for (int g = 0; g < plan->n_groups; g++) {
    int first, size;
    rd_plan_group_span(plan, g, &first, &size);
    if (rank < first + size) return g;
  }
  return plan->n_groups - 1;
}

static const rd_job_cost *sort_costs;
static int by_cost_desc(const void *a, const void *b) {
  int i = *(const int *)a, j = *(const int *)b;
  double ci = sort_costs[i].seconds, cj = sort_costs[j].seconds;
  if (ci != cj) return ci > cj ? -1 : 1;
  return i - j;  /* ties in job-file order */
}

/* The estimated makespan of handing `order` out to the groups of `plan` (width and n_groups set):
 * each job goes to the group that frees up first (the lowest group on a tie). */
static double simulate(const rd_plan *plan, const rd_job_cost *costs, const int *order, int n_run, double *free_at) {
  for (int g = 0; g < plan->n_groups; g++) free_at[g] = 0.0;
  double end = 0.0;
  for (int i = 0; i < n_run; i++) {
    int best = 0;
    for (int g = 1; g < plan->n_groups; g++)
      if (free_at[g] < free_at[best]) best = g;
    int first, size;
    rd_plan_group_span(plan, best, &first, &size);
    free_at[best] += rd_cost_on(&costs[order[i]], size) + JOB_OVERHEAD_S;
    if (free_at[best] > end) end = free_at[best];
  }
  return end;
}

static int plan_make(const rd_job_cost *costs, const int *run, int n, int world, int fixed, rd_plan *plan) {
  memset(plan, 0, sizeof *plan);
  plan->world = world < 1 ? 1 : world;
  plan->order = malloc(sizeof(int) * (size_t)(n ? n : 1));
  plan->est = calloc((size_t)(n ? n : 1), sizeof(double));
  double *free_at = malloc(sizeof(double) * (size_t)plan->world);
  if (!plan->order || !plan->est || !free_at) {
    free(free_at);
    rd_plan_free(plan);
    return -1;
  }
  for (int j = 0; j < n; j++)
    if (run[j]) plan->order[plan->n_run++] = j;
  sort_costs = costs;
  qsort(plan->order, (size_t)plan->n_run, sizeof(int), by_cost_desc);
  sort_costs = NULL;
  /* candidates: one group of all ranks (the reference), every power of two, and world / k */
  int cand[64], nc = 0;
  cand[nc++] = fixed > 0 ? (fixed < plan->world ? fixed : plan->world) : plan->world;
  for (int w = 1; !fixed && w < plan->world && nc < 40; w *= 2) cand[nc++] = w;
  for (int k = 2; !fixed && k <= 16 && nc < 64; k++)
    if (plan->world / k >= 1) cand[nc++] = plan->world / k;
  double best = INFINITY;
  int best_w = plan->world;
  for (int c = 0; c < nc; c++) {
    rd_plan trial = *plan;
    trial.width = cand[c];
    trial.n_groups = plan->world / cand[c];
    if (c > 0 && trial.n_groups > plan->n_run && plan->n_run > 0) continue;  /* groups that would never get a job */
    double m = simulate(&trial, costs, plan->order, plan->n_run, free_at);
    /* a clear gain (2 %) is needed to leave one group of all ranks: it is the simplest plan */
    if (c == 0 || m < best * 0.98) {
      best = m;
      best_w = cand[c];
    }
  }
  plan->width = best_w;
  plan->n_groups = plan->world / best_w;
  plan->makespan = best;
  rd_plan sequential = *plan;
  sequential.width = plan->world;
  sequential.n_groups = 1;
  plan->sequential = simulate(&sequential, costs, plan->order, plan->n_run, free_at);
  for (int i = 0; i < plan->n_run; i++) {
    int first, size;
    rd_plan_group_span(plan, 0, &first, &size);
    plan->est[plan->order[i]] = rd_cost_on(&costs[plan->order[i]], plan->width);
  }
  free(free_at);
  return 0;
}

int rd_plan_make(const rd_job_cost *costs, const int *run, int n, int world, rd_plan *plan) {
  return plan_make(costs, run, n, world, 0, plan);
}

int rd_plan_make_width(const rd_job_cost *costs, const int *run, int n, int world, int width, rd_plan *plan) {
  return plan_make(costs, run, n, world, width < 1 ? 1 : width, plan);
}

void rd_plan_free(rd_plan *plan) {
  free(plan->order);
  free(plan->est);
  memset(plan, 0, sizeof *plan);
}
