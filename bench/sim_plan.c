/* The planner on paper: how a job file would be spread over many ranks, computed from job costs
 * alone. Reads one job a line, makes the plan rank 0 would make (rd_plan_make, the coordinator's own
 * planner, linked in), and for each rank count prints the groups, the plan's estimated makespan, a
 * lower bound on any schedule's makespan under the same cost model, and their ratio (efficiency).
 *
 *   rmdiag_sim_plan RANKS[,RANKS...] [FILE]        (FILE: default stdin)
 *
 * A line of FILE:  seconds serial max_ranks [actual]
 *   seconds    the job's estimated time on one rank (what a kind's estimate gives the planner)
 *   serial     the fraction of it more ranks do not shorten (0..1)
 *   max_ranks  ranks beyond which it gets no faster (>= 1)
 *   actual     optional: the time the job really takes on one rank (same serial and max_ranks);
 *              the plan is made from the estimates and replayed with these times
 * Blank lines and lines starting with '#' are skipped.
 *
 * Output, one line per rank count, fields name=value:
 *   ranks, jobs, groups (e.g. 8x32w+256x1: eight groups of 32 that take the large jobs first, then
 *   256 single ranks), n_large, plan_s (time rd_plan_make took here), makespan (the plan's own
 *   simulated makespan, plan.makespan), replay (the same hand-out replayed as the dispatcher does it,
 *   run_schedule.c: whichever group frees first takes the next job of the order, wide groups the next
 *   large one while any is left; a check that plan.makespan is what the dispatcher would do),
 *   work_bound, job_bound, bound, efficiency (bound / makespan), deadline_bound, deadline_efficiency
 *   (a tighter bound, below), sequential (every job on all ranks, one after another); with actual
 *   times also actual_makespan (the plan replayed with them), actual_bound, actual_efficiency,
 *   actual_deadline_bound, actual_deadline_efficiency. A replay that differs from plan.makespan is
 *   flagged MISMATCH and the exit status is 1.
 *
 * The bound: max(sum over jobs of the job's time on one rank / ranks, the largest over jobs of the
 * job's time on its best width 1..ranks), both with the planner's fixed cost per job (creating its
 * outputs), which the planner adds to every job it hands out. A group of w ranks spends w times a
 * job's time on it, never less than the job's time on one rank, so no schedule beats the first term;
 * no job finishes faster than at its best width, the second. Exit 0, 1 on a mismatch, 2 on a bad
 * line. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmdiag/common/progress.h"
#include "rmdiag/plan.h"

typedef struct jobs {
  int n, cap;
  rd_job_cost *est, *act;
  int has_actual;
} jobs;


static int push(jobs *J, rd_job_cost e, rd_job_cost a) {
  if (J->n == J->cap) {
    int cap = J->cap ? 2 * J->cap : 1024;
    rd_job_cost *ne = realloc(J->est, sizeof *ne * (size_t)cap);
    if (!ne) return -1;
    J->est = ne;
    rd_job_cost *na = realloc(J->act, sizeof *na * (size_t)cap);
    if (!na) return -1;
    J->act = na;
    J->cap = cap;
  }
  J->est[J->n] = e;
  J->act[J->n] = a;
  J->n++;
  return 0;
}

/* Reads the jobs; 0, or -1 after printing what is wrong. */
static int read_jobs(FILE *in, const char *name, jobs *J) {
  char line[512];
  int ln = 0, n_actual = 0;
  while (fgets(line, sizeof line, in)) {
    ln++;
    char *p = line;
    while (*p == ' ' || *p == '\t') p++;
    if (*p == '#' || *p == '\n' || *p == '\r' || *p == '\0') continue;
    char *end;
    errno = 0;
    double s = strtod(p, &end);
    double f = end != p ? strtod(p = end, &end) : NAN;
    long m = end != p ? strtol(p = end, &end, 10) : 0;
    if (end == p || errno || !(s >= 0) || !isfinite(s) || !(f >= 0 && f <= 1) || m < 1 || m > 1 << 20) {
      fprintf(stderr, "%s:%d: want \"seconds serial max_ranks [actual]\" (seconds >= 0, serial 0..1, "
              "max_ranks 1..%d)\n", name, ln, 1 << 20);
      return -1;
    }
    rd_job_cost e = {.seconds = s, .serial = f, .max_ranks = (int)m}, a = e;
    p = end;
    double act = strtod(p, &end);
    if (end != p) {
      if (!(act >= 0) || !isfinite(act)) {
        fprintf(stderr, "%s:%d: the actual seconds must be >= 0\n", name, ln);
        return -1;
      }
      a.seconds = act;
      n_actual++;
    }
    while (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n') end++;
    if (*end) {
      fprintf(stderr, "%s:%d: unexpected \"%.20s\"\n", name, ln, end);
      return -1;
    }
    if (push(J, e, a) != 0) {
      fprintf(stderr, "out of memory\n");
      return -1;
    }
  }
  if (n_actual && n_actual != J->n) {
    fprintf(stderr, "%s: %d of %d lines give the actual seconds: all or none\n", name, n_actual, J->n);
    return -1;
  }
  J->has_actual = n_actual > 0;
  return 0;
}

/* The hand-out of run_schedule.c's dispatch_jobs, replayed with the costs `c`: whenever a group
 * frees up (the earliest; ties to the lower group) its first rank takes the next large job if the
 * group is wide and any is left, else the next of the others; a group that finds none stops. (At the
 * start every group is free, so the ties give the k-th wide group large job k: dispatch_jobs's rule.) Each job
 * takes its time on the group's width plus the fixed cost per job. Returns the makespan. */
static double replay(const rd_plan *plan, const rd_job_cost *c, double per_job, double *free_at, char *active) {
  int next_large = 0, next = plan->n_large;
  double end = 0.0;
  for (int g = 0; g < plan->n_groups; g++) free_at[g] = 0.0, active[g] = 1;
  for (;;) {
    int g = -1;
    for (int k = 0; k < plan->n_groups; k++)
      if (active[k] && (g < 0 || free_at[k] < free_at[g])) g = k;
    if (g < 0) break;
    int pos = plan->n_run;
    if (plan->group_wide[g] && plan->n_large > 0) pos = next_large++;
    if (pos >= plan->n_large) pos = next++;
    if (pos >= plan->n_run) {
      active[g] = 0;
      continue;
    }
    free_at[g] += rd_cost_on(&c[plan->order[pos]], plan->group_size[g]) + per_job;
    if (free_at[g] > end) end = free_at[g];
  }
  return end;
}

/* The lower bound of any schedule's makespan on `ranks` ranks (see the top of the file). */
static double bound(const rd_job_cost *c, int n, int ranks, double per_job, double *work_b, double *job_b,
                    int *best_w) {
  double work = 0.0, job = 0.0;
  for (int j = 0; j < n; j++) {
    work += rd_cost_on(&c[j], 1) + per_job;
    double best = rd_cost_on(&c[j], 1);
    best_w[j] = 1;
    int top = c[j].max_ranks < ranks ? c[j].max_ranks : ranks;  /* beyond max_ranks only the collectives grow */
    for (int w = 2; w <= top; w++) {
      double t = rd_cost_on(&c[j], w);
      if (t < best) best = t, best_w[j] = w;
    }
    if (best + per_job > job) job = best + per_job;
  }
  *work_b = work / ranks;
  *job_b = job;
  return *work_b > *job_b ? *work_b : *job_b;
}

/* A job's time on w ranks, with the fixed cost per job. */
static double time_on(const rd_job_cost *c, int w, double per_job) { return rd_cost_on(c, w) + per_job; }

/* The deadline bound, tighter than bound(): a schedule that ends by T runs each job on some width w at
 * which it finishes by T, occupying w ranks for its time there; as that area grows with w (every rank
 * of a group is busy for the job's whole time, and the serial part is repeated on each), the job takes
 * at least the area of the narrowest such width, and the jobs' areas together cannot exceed ranks x T.
 * The smallest T for which they fit, found by bisection between bound() and a makespan reached, is a
 * lower bound on any schedule's makespan. best_w[j]: the job's fastest width (its time falls until
 * there). */
static double deadline_bound(const rd_job_cost *c, int n, int ranks, double per_job, double lo, double hi,
                             const int *best_w) {
  for (int it = 0; it < 60 && hi - lo > 1e-7 * hi; it++) {
    double T = 0.5 * (lo + hi), area = 0.0;
    int fits = 1;
    for (int j = 0; j < n && fits; j++) {
      int a = 1, b = best_w[j];
      if (time_on(&c[j], b, per_job) > T) {
        fits = 0;
        break;
      }
      while (a < b) {  /* the narrowest width that finishes by T */
        int m = a + (b - a) / 2;
        if (time_on(&c[j], m, per_job) <= T) b = m;
        else a = m + 1;
      }
      area += a * time_on(&c[j], a, per_job);
      if (area > (double)ranks * T) fits = 0;
    }
    if (fits) hi = T;
    else lo = T;
  }
  return hi;
}

/* The groups as runs of equal width: "8x32w+256x1" (w: takes the large jobs first). */
static void describe(const rd_plan *plan, char *buf, size_t cap) {
  size_t k = 0;
  buf[0] = '\0';
  for (int g = 0; g < plan->n_groups && k + 32 < cap;) {
    int h = g;
    while (h < plan->n_groups && plan->group_size[h] == plan->group_size[g] &&
           plan->group_wide[h] == plan->group_wide[g])
      h++;
    /* a uniform layout's groups all take every job: the mark says only that two tiers exist */
    int two_tiers = plan->n_large > 0;
    k += (size_t)snprintf(buf + k, cap - k, "%s%dx%d%s", k ? "+" : "", h - g, plan->group_size[g],
                          two_tiers && plan->group_wide[g] ? "w" : "");
    g = h;
  }
}

int main(int argc, char **argv) {
  if (argc < 2 || argc > 3 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
    fprintf(stderr, "usage: rmdiag_sim_plan RANKS[,RANKS...] [FILE]\n"
            "  FILE (default stdin): one job a line, \"seconds serial max_ranks [actual]\"\n");
    return argc == 2 ? 0 : 2;
  }
  FILE *in = argc == 3 ? fopen(argv[2], "r") : stdin;
  if (!in) {
    fprintf(stderr, "cannot open %s: %s\n", argv[2], strerror(errno));
    return 2;
  }
  jobs J = {0};
  if (read_jobs(in, argc == 3 ? argv[2] : "stdin", &J) != 0) return 2;
  if (in != stdin) fclose(in);
  if (J.n == 0) {
    fprintf(stderr, "no jobs\n");
    return 2;
  }
  /* the planner's fixed cost per job, from the planner itself: the plan of one job of no work on
   * one rank lasts exactly that long */
  rd_plan p0;
  rd_job_cost none = {.seconds = 0.0, .serial = 0.0, .max_ranks = 1};
  int one = 1;
  if (rd_plan_make(&none, &one, 1, 1, &p0) != 0) return 1;
  double per_job = p0.makespan;
  rd_plan_free(&p0);

  int *run = malloc(sizeof(int) * (size_t)J.n), *best_w = malloc(sizeof(int) * (size_t)J.n);
  if (!run || !best_w) return 1;
  for (int j = 0; j < J.n; j++) run[j] = 1;
  int status = 0;
  for (char *tok = strtok(argv[1], ","); tok; tok = strtok(NULL, ",")) {
    char *end;
    long ranks = strtol(tok, &end, 10);
    if (*end || ranks < 1 || ranks > 1 << 20) {
      fprintf(stderr, "bad rank count \"%s\"\n", tok);
      return 2;
    }
    rd_plan plan;
    double t0 = rd_now();
    if (rd_plan_make(J.est, run, J.n, (int)ranks, &plan) != 0) {
      fprintf(stderr, "out of memory planning\n");
      return 1;
    }
    double plan_s = rd_now() - t0;
    double *free_at = malloc(sizeof(double) * (size_t)plan.n_groups);
    char *active = malloc((size_t)plan.n_groups);
    char groups[256];
    if (!free_at || !active) return 1;
    describe(&plan, groups, sizeof groups);
    double rep = replay(&plan, J.est, per_job, free_at, active);
    double wb, jb, b = bound(J.est, J.n, (int)ranks, per_job, &wb, &jb, best_w);
    double db = deadline_bound(J.est, J.n, (int)ranks, per_job, b, plan.makespan, best_w);
    printf("ranks=%ld jobs=%d groups=%s n_large=%d plan_s=%.4f makespan=%.4f replay=%.4f work_bound=%.4f "
           "job_bound=%.4f bound=%.4f efficiency=%.4f deadline_bound=%.4f deadline_efficiency=%.4f "
           "sequential=%.4f",
           ranks, J.n, groups, plan.n_large, plan_s, plan.makespan, rep, wb, jb, b, b / plan.makespan, db,
           db / plan.makespan, plan.sequential);
    /* one group of all ranks runs the jobs in job-file order rather than by the order: the same
     * sum, added up in another order */
    if (fabs(rep - plan.makespan) > 1e-9 * plan.makespan) {
      printf(" MISMATCH");
      status = 1;
    }
    if (J.has_actual) {
      double ra = replay(&plan, J.act, per_job, free_at, active);
      double bwa, bja, ba = bound(J.act, J.n, (int)ranks, per_job, &bwa, &bja, best_w);
      double dba = deadline_bound(J.act, J.n, (int)ranks, per_job, ba, ra, best_w);
      printf(" actual_makespan=%.4f actual_bound=%.4f actual_efficiency=%.4f actual_deadline_bound=%.4f "
             "actual_deadline_efficiency=%.4f", ra, ba, ba / ra, dba, dba / ra);
    }
    char text[512];
    rd_plan_groups_text(&plan, text, sizeof text);
    printf(" text=\"%s\"\n", text);
    fflush(stdout);
    free(free_at);
    free(active);
    rd_plan_free(&plan);
  }
  free(run);
  free(best_w);
  free(J.est);
  free(J.act);
  return status;
}
