/* Planning a job file over the ranks (see plan.h): cost model, candidate groups, hand-out order. */
#include "rmdiag/plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rmdiag/kernels/rng.h"

/* Fixed costs of a job whatever its size (creating its outputs, agreeing its phases), and of
 * each doubling of a group (one more level of every collective). */
#define JOB_OVERHEAD_S 0.004
#define COLLECTIVE_S 0.002
/* Estimates are off by a factor that differs from job to job (the fitted models are within about
 * 1.5x of measured times on their host, and the kinds weigh differently on other hosts): of the
 * SHORTLIST candidates of smallest estimated makespan, those within SLACK of the smallest are
 * compared again on SPREAD_DRAWS sets of times, each job's estimate times a log-normal factor of
 * spread SPREAD_SIGMA (fixed draws, so the plan is a function of the estimates), and the one with
 * the smallest mean makespan is taken (docs/design.md, 'Planning'). */
#define SHORTLIST 16
#define SLACK 0.1
#define SPREAD_DRAWS 8
#define SPREAD_SIGMA 0.3

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

int rd_plan_alloc(rd_plan *plan, int n, int g) {
  plan->order = malloc(sizeof(int) * (size_t)(n ? n : 1));
  plan->est = calloc((size_t)(n ? n : 1), sizeof(double));
  plan->group_first = malloc(sizeof(int) * (size_t)(g ? g : 1));
  plan->group_size = malloc(sizeof(int) * (size_t)(g ? g : 1));
  plan->group_wide = malloc(sizeof(int) * (size_t)(g ? g : 1));
  return plan->order && plan->est && plan->group_first && plan->group_size && plan->group_wide ? 0 : -1;
}

void rd_plan_free(rd_plan *plan) {
  free(plan->order);
  free(plan->est);
  free(plan->group_first);
  free(plan->group_size);
  free(plan->group_wide);
  memset(plan, 0, sizeof *plan);
}

int rd_plan_group_of(const rd_plan *plan, int rank) {
  for (int g = 0; g < plan->n_groups; g++)
    if (rank < plan->group_first[g] + plan->group_size[g]) return g;
  return plan->n_groups - 1;
}

int rd_plan_max_width(const rd_plan *plan) {
  int w = 1;
  for (int g = 0; g < plan->n_groups; g++)
    if (plan->group_size[g] > w) w = plan->group_size[g];
  return w;
}

void rd_plan_groups_text(const rd_plan *plan, char *buf, size_t cap) {
  int n_wide = 0, narrow = 0, widest = rd_plan_max_width(plan), same = 1;
  for (int g = 0; g < plan->n_groups; g++) {
    n_wide += plan->group_wide[g];
    narrow += !plan->group_wide[g];
    same &= !plan->group_wide[g] || plan->group_size[g] == widest;
  }
  if (plan->n_groups <= 1) {
    snprintf(buf, cap, "one group of all %d ranks; the jobs run one after another in job-file order", plan->world);
    return;
  }
  if (narrow == 0) {
    int w = plan->world / plan->n_groups;
    snprintf(buf, cap, "%d groups of %d rank%s%s; the next job (largest estimate first) goes to whichever group "
             "frees up", plan->n_groups, w, w == 1 ? "" : "s", plan->world % plan->n_groups ? " (the last groups one more)" : "");
    return;
  }
  /* the wide groups' widths: one number when they are alike, else each in group order ("4, 3 and 2") */
  char widths[160];
  size_t at = 0;
  widths[0] = '\0';
  for (int g = 0, k = 0; g < plan->n_groups && k < (same ? 1 : n_wide); g++) {
    if (!plan->group_wide[g]) continue;
    if (at + 16 >= sizeof widths) {
      snprintf(widths + at, sizeof widths - at, ", ...");
      break;
    }
    const char *sep = k == 0 ? "" : k + 1 == n_wide ? " and " : ", ";
    at += (size_t)snprintf(widths + at, sizeof widths - at, "%s%d", sep, plan->group_size[g]);
    k++;
  }
  if (same)
    snprintf(buf, cap, "%d group%s of %s ranks for the %d largest job%s (then the others), and %d single rank%s for "
             "the others; the next job goes to whichever group frees up", n_wide, n_wide == 1 ? "" : "s", widths,
             plan->n_large, plan->n_large == 1 ? "" : "s", narrow, narrow == 1 ? "" : "s");
  else
    snprintf(buf, cap, "%d groups of %s ranks, one for each of the %d largest jobs (the largest on the first; then "
             "the others), and %d single rank%s for the others; the next job goes to whichever group frees up",
             n_wide, widths, plan->n_large, narrow, narrow == 1 ? "" : "s");
}

/* ---- candidate groups ------------------------------------------------------------------------ */

/* A set of groups: world / width groups of as equal sizes as can be (the last ones one rank more),
 * or n_wide groups of `wide` ranks followed by single ranks. */
typedef struct layout {
  int n_groups, n_wide;
  int *first, *size, *wide;
} layout;

static void layout_uniform(layout *l, int world, int width) {
  int n = world / width, base = world / n, extra = world % n, r = 0;
  l->n_groups = l->n_wide = n;
  for (int g = 0; g < n; g++) {
    l->first[g] = r;
    l->size[g] = base + (g >= n - extra ? 1 : 0);
    l->wide[g] = 1;
    r += l->size[g];
  }
}

static void layout_tiers(layout *l, int world, int wide, int n_wide) {
  int r = 0;
  l->n_groups = l->n_wide = n_wide;
  for (int g = 0; g < n_wide; g++, r += wide) {
    l->first[g] = r;
    l->size[g] = wide;
    l->wide[g] = 1;
  }
  for (; r < world; r++, l->n_groups++) {
    l->first[l->n_groups] = r;
    l->size[l->n_groups] = 1;
    l->wide[l->n_groups] = 0;
  }
}

/* Fitted tiers: each of the n_large largest jobs on a wide group of its own, as narrow as lets it end
 * by `target` (the width where it is fastest when none does), in the order of the jobs (group k takes
 * large job k first), then single ranks, at least one where there are other jobs. 0 when the groups
 * do not fit in the world. */
static int layout_fitted(layout *l, int world, const rd_job_cost *costs, const int *order, int n_large, int n_run,
                         double target) {
  int r = 0;
  l->n_groups = l->n_wide = 0;
  for (int i = 0; i < n_large; i++) {
    const rd_job_cost *c = &costs[order[i]];
    int top = c->max_ranks < world ? (c->max_ranks < 1 ? 1 : c->max_ranks) : world, w = 1, best = 1;
    double best_t = INFINITY;
    for (; w <= top; w++) {
      double t = rd_cost_on(c, w) + JOB_OVERHEAD_S;
      if (t < best_t) best_t = t, best = w;
      if (t <= target) break;
    }
    if (w > top) w = best;
    if (r + w > world - (n_run > n_large ? 1 : 0)) return 0;
    l->first[l->n_groups] = r;
    l->size[l->n_groups] = w;
    l->wide[l->n_groups] = 1;
    l->n_groups++;
    l->n_wide++;
    r += w;
  }
  for (; r < world; r++, l->n_groups++) {
    l->first[l->n_groups] = r;
    l->size[l->n_groups] = 1;
    l->wide[l->n_groups] = 0;
  }
  return 1;
}

/* ---- simulating the hand-out ------------------------------------------------------------------- */

/* A min-heap of groups by the time they free up (ties: the lower group). */
typedef struct heap {
  int n;
  int *g;
  const double *t;
} heap;

static int before(const heap *h, int a, int b) { return h->t[a] < h->t[b] || (h->t[a] == h->t[b] && a < b); }

static void heap_down(heap *h, int i) {
  for (;;) {
    int l = 2 * i + 1, r = l + 1, m = i;
    if (l < h->n && before(h, h->g[l], h->g[m])) m = l;
    if (r < h->n && before(h, h->g[r], h->g[m])) m = r;
    if (m == i) return;
    int x = h->g[i];
    h->g[i] = h->g[m];
    h->g[m] = x;
    i = m;
  }
}

static void heap_build(heap *h) {
  for (int i = h->n / 2 - 1; i >= 0; i--) heap_down(h, i);
}

/* The estimated makespan of handing `order` out to the groups of `l`: whenever a group frees up
 * it takes the next large job (wide groups, while any is left) or the next other job. Stops early,
 * returning the time reached, once that is `cutoff` or more (the makespan can only be larger). */
static double simulate(const layout *l, const rd_job_cost *costs, const int *order, int n_run, int n_large,
                       double cutoff, double *free_at, int *hw, int *hn) {
  heap w = {0, hw, free_at}, nw = {0, hn, free_at};
  for (int g = 0; g < l->n_groups; g++) {
    free_at[g] = 0.0;
    if (l->wide[g]) w.g[w.n++] = g;
    else nw.g[nw.n++] = g;
  }
  heap_build(&w);
  heap_build(&nw);
  int big = 0, small = n_large;
  double end = 0.0;
  while (big < n_large || small < n_run) {
    int use_wide = w.n > 0 && (nw.n == 0 || small >= n_run || before(&w, w.g[0], nw.g[0]));
    if (!use_wide && (nw.n == 0 || small >= n_run)) return INFINITY;  /* large jobs and no wide group */
    heap *h = use_wide ? &w : &nw;
    int g = h->g[0];
    int job = use_wide && big < n_large ? order[big++] : order[small++];
    free_at[g] += rd_cost_on(&costs[job], l->size[g]) + JOB_OVERHEAD_S;
    if (free_at[g] > end) end = free_at[g];
    if (end >= cutoff) return end;
    heap_down(h, 0);
  }
  return end;
}

/* ---- the plan ---------------------------------------------------------------------------------- */

static const rd_job_cost *sort_costs;
static int by_cost_desc(const void *a, const void *b) {
  int i = *(const int *)a, j = *(const int *)b;
  double ci = sort_costs[i].seconds, cj = sort_costs[j].seconds;
  if (ci != cj) return ci > cj ? -1 : 1;
  return i - j;  /* ties in job-file order */
}

/* A candidate set of groups and its estimated makespan. */
typedef struct candidate {
  layout l;
  double m;
  int n_large;
} candidate;

typedef struct search {
  const rd_job_cost *costs;
  rd_plan *plan;
  layout trial;
  candidate first;            /* the required first candidate: one group of all ranks (or of the width asked) */
  candidate list[SHORTLIST];  /* the others clearly (2 %) faster than it, smallest estimated makespan first */
  int n_list;
  double *free_at;
  int *hw, *hn;
} search;

static void layout_copy(layout *to, const layout *from) {
  to->n_groups = from->n_groups;
  to->n_wide = from->n_wide;
  memcpy(to->first, from->first, sizeof(int) * (size_t)from->n_groups);
  memcpy(to->size, from->size, sizeof(int) * (size_t)from->n_groups);
  memcpy(to->wide, from->wide, sizeof(int) * (size_t)from->n_groups);
}

/* The trial groups as the first candidate, or onto the shortlist when their estimated makespan is
 * clearly below the first's and among the SHORTLIST smallest; a candidate that cannot get on is
 * dropped as soon as its simulation shows it. */
static void consider(search *s, int n_large, int required) {
  double cutoff = required ? INFINITY : s->n_list < SHORTLIST ? s->first.m * 0.98 : s->list[SHORTLIST - 1].m;
  if (s->n_list > 0 && (1.0 + SLACK) * s->list[0].m < cutoff) cutoff = (1.0 + SLACK) * s->list[0].m;
  double m = simulate(&s->trial, s->costs, s->plan->order, s->plan->n_run, n_large, cutoff, s->free_at, s->hw,
                      s->hn);
  if (required) {
    s->first.m = m;
    s->first.n_large = n_large;
    layout_copy(&s->first.l, &s->trial);
    return;
  }
  if (!(m < cutoff)) return;
  int at = s->n_list < SHORTLIST ? s->n_list++ : SHORTLIST - 1;
  candidate spare = s->list[at];  /* the dropped entry's arrays are reused */
  for (; at > 0 && s->list[at - 1].m > m; at--) s->list[at] = s->list[at - 1];
  spare.m = m;
  spare.n_large = n_large;
  layout_copy(&spare.l, &s->trial);
  s->list[at] = spare;
}

/* Mean makespan over the spread draws of the first candidate (score[0]) and of each list entry k
 * within the slack (score[k + 1]); the hand-out order stays the estimates'. Returns -1 when out of
 * memory. */
static int spread_scores(search *s, double *score) {
  int n_run = s->plan->n_run;
  rd_job_cost *c = malloc(sizeof(rd_job_cost) * (size_t)(n_run ? n_run : 1));
  int *at = malloc(sizeof(int) * (size_t)(n_run ? n_run : 1));
  if (!c || !at) {
    free(c);
    free(at);
    return -1;
  }
  for (int i = 0; i < n_run; i++) at[i] = i;  /* the draws' costs are in hand-out order */
  rd_stream st;
  rd_stream_init(&st, 0, "plan", "plan.spread");
  for (int k = 0; k <= s->n_list; k++) score[k] = 0.0;
  for (int d = 0; d < SPREAD_DRAWS; d++) {
    for (int i = 0; i < n_run; i++) {
      double u1 = rd_rng_uniform(&st, (uint64_t)d, 2 * (uint64_t)i);
      double u2 = rd_rng_uniform(&st, (uint64_t)d, 2 * (uint64_t)i + 1);
      double z = sqrt(-2.0 * log(u1 > 0.0 ? u1 : 1e-300)) * cos(2.0 * M_PI * u2);
      c[i] = s->costs[s->plan->order[i]];
      c[i].seconds *= exp(SPREAD_SIGMA * z);
    }
    for (int k = 0; k <= s->n_list; k++) {
      const candidate *x = k ? &s->list[k - 1] : &s->first;
      if (k > 0 && x->m > (1.0 + SLACK) * s->list[0].m) break;  /* beyond the slack (the list is by estimate) */
      score[k] += simulate(&x->l, c, at, n_run, x->n_large, INFINITY, s->free_at, s->hw, s->hn) / SPREAD_DRAWS;
    }
  }
  free(c);
  free(at);
  return 0;
}

/* The candidate taken: the shortlisted one of smallest mean makespan over the spread draws when
 * that is clearly (2 %) below the first candidate's, else the first. */
static const candidate *choose(search *s) {
  double score[SHORTLIST + 1];
  if (s->n_list == 0) return &s->first;
  if (spread_scores(s, score) != 0) return &s->list[0];  /* out of memory: the smallest estimate */
  int best = 1;
  for (int k = 2; k <= s->n_list && s->list[k - 1].m <= (1.0 + SLACK) * s->list[0].m; k++)
    if (score[k] < score[best]) best = k;
  return score[best] < 0.98 * score[0] ? &s->list[best - 1] : &s->first;
}

static void search_candidates(search *s, int world, int fixed) {
  int n_run = s->plan->n_run;
  layout_uniform(&s->trial, world, fixed > 0 ? (fixed < world ? fixed : world) : world);
  consider(s, 0, 1);
  if (fixed > 0) return;
  for (int w = 1; w < world; w *= 2) {  /* equal widths: every power of two */
    layout_uniform(&s->trial, world, w);
    if (s->trial.n_groups <= n_run) consider(s, 0, 0);
  }
  for (int k = 2; k <= 16 && world / k >= 1; k++) {  /* and world / k */
    layout_uniform(&s->trial, world, world / k);
    if (s->trial.n_groups <= n_run) consider(s, 0, 0);
  }
  /* two tiers: n_wide groups of `wide` ranks for the n_large largest jobs, single ranks for the rest
   * (n_large: every count up to 8, where a few large jobs decide the makespan, then powers of two) */
  for (int p = 2; p < world; p *= 2)
    for (int q = 4; q < 8; q++) {  /* widths p, 5p/4, 3p/2 and 7p/4 */
      int wide = (p * q + 2) / 4;
      if (wide >= world || wide >= 2 * p || (q > 4 && wide == (p * (q - 1) + 2) / 4)) continue;  /* or repeated */
      for (int n_wide = 1; n_wide * wide < world; n_wide *= 2) {
        layout_tiers(&s->trial, world, wide, n_wide);
        for (int n_large = 1; n_large < n_run; n_large = n_large < 8 ? n_large + 1 : n_large * 2)
          consider(s, n_large, 0);
      }
    }
  /* fitted tiers (a group per large job, each as wide as its job needs to end by a target): targets
   * from the lower bound max(work / ranks, the longest job at its best width) up to 2.5x it */
  const int *order = s->plan->order;
  double work = 0.0, longest = 0.0;
  for (int i = 0; i < n_run; i++) {
    const rd_job_cost *c = &s->costs[order[i]];
    double fastest = INFINITY;
    for (int w = 1; w <= world && w <= (c->max_ranks < 1 ? 1 : c->max_ranks); w++) {
      double t = rd_cost_on(c, w);
      if (t < fastest) fastest = t;
    }
    work += rd_cost_on(c, 1) + JOB_OVERHEAD_S;
    if (fastest + JOB_OVERHEAD_S > longest) longest = fastest + JOB_OVERHEAD_S;
  }
  double lower = work / world > longest ? work / world : longest;
  for (int n_large = 1; n_large < n_run && n_large <= 16 && n_large < world; n_large++)
    for (double target = lower; target <= 2.5 * lower; target *= 1.04)
      if (layout_fitted(&s->trial, world, s->costs, order, n_large, n_run, target)) consider(s, n_large, 0);
}

static int plan_make(const rd_job_cost *costs, const int *run, int n, int world, int fixed, rd_plan *plan) {
  memset(plan, 0, sizeof *plan);
  plan->world = world < 1 ? 1 : world;
  int w = plan->world;
  search s = {.costs = costs, .plan = plan};
  int n_layouts = 2 + SHORTLIST;  /* trial, first, shortlist */
  int *buf = malloc(sizeof(int) * (size_t)w * (size_t)(3 * n_layouts + 2));
  s.free_at = malloc(sizeof(double) * (size_t)w);
  if (rd_plan_alloc(plan, n, w) != 0 || !buf || !s.free_at) {
    free(buf);
    free(s.free_at);
    rd_plan_free(plan);
    return -1;
  }
  layout *ls[2 + SHORTLIST] = {&s.trial, &s.first.l};
  for (int k = 0; k < SHORTLIST; k++) ls[2 + k] = &s.list[k].l;
  for (int k = 0; k < n_layouts; k++) *ls[k] = (layout){0, 0, buf + 3 * k * w, buf + (3 * k + 1) * w, buf + (3 * k + 2) * w};
  s.hw = buf + 3 * n_layouts * w;
  s.hn = s.hw + w;
  for (int j = 0; j < n; j++)
    if (run[j]) plan->order[plan->n_run++] = j;
  sort_costs = costs;
  qsort(plan->order, (size_t)plan->n_run, sizeof(int), by_cost_desc);
  sort_costs = NULL;
  search_candidates(&s, w, fixed);
  const candidate *best = choose(&s);
  plan->makespan = best->m;
  plan->n_large = best->n_large;
  plan->n_groups = best->l.n_groups;
  memcpy(plan->group_first, best->l.first, sizeof(int) * (size_t)plan->n_groups);
  memcpy(plan->group_size, best->l.size, sizeof(int) * (size_t)plan->n_groups);
  memcpy(plan->group_wide, best->l.wide, sizeof(int) * (size_t)plan->n_groups);
  layout_uniform(&s.trial, w, w);
  plan->sequential = simulate(&s.trial, costs, plan->order, plan->n_run, 0, INFINITY, s.free_at, s.hw, s.hn);
  /* each job's estimate on the width it is planned for: large jobs on the widest groups, the
   * others on the narrowest */
  int widest = rd_plan_max_width(plan), narrowest = widest, n_wide = 0;
  for (int g = 0; g < plan->n_groups; g++) {
    if (plan->group_size[g] < narrowest) narrowest = plan->group_size[g];
    n_wide += plan->group_wide[g];
  }
  /* (the k-th wide group, k < the number of large jobs, takes large job k first: its width) */
  for (int i = 0; i < plan->n_run; i++)
    plan->est[plan->order[i]] = rd_cost_on(&costs[plan->order[i]], i >= plan->n_large ? narrowest
                                                                   : i < n_wide ? plan->group_size[i] : widest);
  free(buf);
  free(s.free_at);
  return 0;
}

int rd_plan_make(const rd_job_cost *costs, const int *run, int n, int world, rd_plan *plan) {
  return plan_make(costs, run, n, world, 0, plan);
}

int rd_plan_make_width(const rd_job_cost *costs, const int *run, int n, int world, int width, rd_plan *plan) {
  return plan_make(costs, run, n, world, width < 1 ? 1 : width, plan);
}
