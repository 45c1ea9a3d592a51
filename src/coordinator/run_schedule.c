/* Handing the jobs of a file out to rank groups. The plan fixes the groups (sub-communicators of
 * consecutive ranks) and the order (largest estimated cost first); at run time each group's rank 0 takes
 * the next job from a counter held by world rank 0 (an MPI atomic fetch-and-add, so no rank has to
 * wait in a loop to serve it), runs it on its group, and takes the next when done. A report does not
 * depend on which group made it. A job that fails is recorded and the others go on; at the end the
 * failed jobs are named, and every job's stdout table is printed in job-file order. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmdiag/common/progress.h"
#include "rmdiag/kind.h"
#include "run_internal.h"

int run_groups_make(const rd_ctx *ctx, const rd_plan *plan, rd_ctx *group, rd_status *st) {
  memset(group, 0, sizeof *group);
  int color = rd_plan_group_of(plan, ctx->rank);
  MPI_Comm gcomm;
  RD_MPI_CHECK(ctx, MPI_Comm_split(ctx->comm, color, ctx->rank, &gcomm));
  if (rd_ctx_init(group, gcomm, NULL, NULL) != RD_OK) return rd_fail(st, RD_EFAIL, "cannot set up the rank groups");
  group->backend = ctx->backend;
  group->quiet = ctx->quiet;
  return RD_OK;
}

void run_groups_free(rd_ctx *group) {
  if (!group->comm || group->comm == MPI_COMM_NULL) return;
  MPI_Comm c = group->comm;
  rd_ctx_free(group);
  MPI_Comm_free(&c);
  memset(group, 0, sizeof *group);
}

/* What happened to each job (known on the rank 0 of the group that ran it). */
typedef struct outcome {
  int code;        /* RD_OK, or the job's error */
  char *msg;       /* the error's message */
  char *table;     /* what the kind printed on stdout */
  size_t table_len;
} outcome;

/* The counters world rank 0 holds: the next of the large jobs (the first plan->n_large of the
 * order, for wide groups), the next of the others, the jobs done, and their estimated cost done
 * (microseconds), for the progress lines. */
enum { CTR_NEXT_LARGE, CTR_NEXT, CTR_DONE, CTR_COST_DONE, CTR_N };

typedef struct dispatch {
  const rd_ctx *world;
  MPI_Win win;
  long long *ctr;
  double t0, total_est;
} dispatch;

static long long counter_add(dispatch *d, int which, long long add) {
  long long old = 0;
  RD_MPI_CHECK(d->world, MPI_Fetch_and_op(&add, &old, MPI_LONG_LONG, 0, which, MPI_SUM, d->win));
  RD_MPI_CHECK(d->world, MPI_Win_flush(0, d->win));
  return old;
}

/* Runs job j on group g; the group's rank 0 keeps its outcome and prints a progress line. */
static void run_on_group(const rd_ctx *g, const rd_jobfile *jf, const job_plan *plans, const rd_plan *plan, int j,
                         const char *backend_info, dispatch *d, outcome *oc, int n_total) {
  rd_status st;
  rd_status_init(&st);
  char *buf = NULL;
  size_t len = 0;
  FILE *mem = g->rank == 0 ? open_memstream(&buf, &len) : NULL;
  char line[1024];
  run_one_job(g, &jf->jobs[j], jf, &plans[j], backend_info, mem, line, sizeof line, &st);
  if (g->rank != 0) return;
  if (mem) fclose(mem);
  oc[j].code = st.code;
  oc[j].msg = st.code != RD_OK ? strdup(st.msg) : NULL;
  oc[j].table = buf;
  oc[j].table_len = len;
  long long done = counter_add(d, CTR_DONE, 1) + 1;
  long long cost_us = (long long)(plan->est[j] * 1e6);
  double cost_done = (double)(counter_add(d, CTR_COST_DONE, cost_us) + cost_us) / 1e6;
  if (g->quiet) return;
  double el = rd_now() - d->t0;
  /* (the sums of the estimates may differ in the last bit: never "-0 s left") */
  double left = cost_done > 0 && d->total_est > cost_done ? el * (d->total_est - cost_done) / cost_done : 0.0;
  if (st.code == RD_OK)
    fprintf(stderr, "rmdiag: %s [%lld/%d jobs, %.1f s, about %.0f s left]\n", line, done, n_total, el, left);
  else
    fprintf(stderr, "rmdiag: error: %s (%s) failed: %s [%lld/%d jobs, %.1f s]\n", jf->jobs[j].name,
            jf->jobs[j].kind->name, st.msg, done, n_total, el);
  fflush(stderr);
}

/* Every group takes jobs until none is left. */
static int dispatch_jobs(const rd_ctx *ctx, const rd_ctx *g, const rd_jobfile *jf, const job_plan *plans,
                         const rd_plan *plan, const char *backend_info, outcome *oc) {
  dispatch d = {.world = ctx, .t0 = rd_now()};
  for (int i = 0; i < plan->n_run; i++) d.total_est += plan->est[plan->order[i]];
  MPI_Aint bytes = ctx->rank == 0 ? (MPI_Aint)(CTR_N * sizeof(long long)) : 0;
  RD_MPI_CHECK(ctx, MPI_Win_allocate(bytes, sizeof(long long), MPI_INFO_NULL, ctx->comm, &d.ctr, &d.win));
  /* the k-th wide group takes large job k first (the plan sized it for that job), then the next
   * large job while any is left (the counter starts after the ones taken so), then the others; a
   * narrow group only the others */
  int my = rd_plan_group_of(plan, ctx->rank), wide = plan->group_wide[my], n_wide = 0, k_wide = 0;
  for (int h = 0; h < plan->n_groups; h++) {
    n_wide += plan->group_wide[h];
    if (h < my) k_wide += plan->group_wide[h];
  }
  if (ctx->rank == 0) {
    memset(d.ctr, 0, (size_t)bytes);
    d.ctr[CTR_NEXT_LARGE] = n_wide;
  }
  RD_MPI_CHECK(ctx, MPI_Barrier(ctx->comm));
  RD_MPI_CHECK(ctx, MPI_Win_lock_all(0, d.win));
  for (int first = 1;; first = 0) {
    long long pos = plan->n_run;
    if (g->rank == 0) {
      if (wide && plan->n_large > 0) pos = first ? k_wide : counter_add(&d, CTR_NEXT_LARGE, 1);
      if (pos >= plan->n_large) pos = plan->n_large + counter_add(&d, CTR_NEXT, 1);
    }
    RD_MPI_CHECK(g, MPI_Bcast(&pos, 1, MPI_LONG_LONG, 0, g->comm));
    if (pos >= plan->n_run) break;
    run_on_group(g, jf, plans, plan, plan->order[pos], backend_info, &d, oc, plan->n_run);
  }
  RD_MPI_CHECK(ctx, MPI_Win_unlock_all(d.win));
  RD_MPI_CHECK(ctx, MPI_Win_free(&d.win));
  return RD_OK;
}

/* World rank 0 receives from each job's owner its code, message and table, in job-file order. */
static void collect(const rd_ctx *ctx, const rd_jobfile *jf, outcome *oc) {
  int n = jf->n_jobs;
  int *owner = malloc(sizeof(int) * (size_t)n), *all = malloc(sizeof(int) * (size_t)n);
  if (!owner || !all) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  for (int j = 0; j < n; j++) owner[j] = oc[j].table || oc[j].code ? ctx->rank : -1;
  RD_MPI_CHECK(ctx, MPI_Allreduce(owner, all, n, MPI_INT, MPI_MAX, ctx->comm));
  for (int j = 0; j < n; j++) {
    if (all[j] <= 0) continue;  /* not run, or run by world rank 0 itself */
    if (ctx->rank == all[j]) {
      long long head[2] = {oc[j].code, (long long)oc[j].table_len};
      RD_MPI_CHECK(ctx, MPI_Send(head, 2, MPI_LONG_LONG, 0, 1, ctx->comm));
      if (oc[j].code) RD_MPI_CHECK(ctx, MPI_Send(oc[j].msg ? oc[j].msg : "", RD_MSG_MAX, MPI_CHAR, 0, 2, ctx->comm));
      if (oc[j].table_len) rd_send_bytes(ctx, oc[j].table, oc[j].table_len, 0, 3);
    } else if (ctx->rank == 0) {
      long long head[2];
      RD_MPI_CHECK(ctx, MPI_Recv(head, 2, MPI_LONG_LONG, all[j], 1, ctx->comm, MPI_STATUS_IGNORE));
      oc[j].code = (int)head[0];
      oc[j].table_len = (size_t)head[1];
      if (oc[j].code) {
        oc[j].msg = malloc(RD_MSG_MAX);
        if (!oc[j].msg) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
        RD_MPI_CHECK(ctx, MPI_Recv(oc[j].msg, RD_MSG_MAX, MPI_CHAR, all[j], 2, ctx->comm, MPI_STATUS_IGNORE));
      }
      if (oc[j].table_len) {
        oc[j].table = malloc(oc[j].table_len);
        if (!oc[j].table) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
        rd_recv_bytes(ctx, oc[j].table, oc[j].table_len, all[j], 3);
      }
    }
  }
  free(owner);
  free(all);
}

/* World rank 0: the run's status from the jobs' outcomes. One failed job keeps its own message
 * (a single-job file reads as before); several are listed. Exit 2 only when every failure was the
 * input's fault and no job wrote anything; else 1. */
static void summarize(const rd_jobfile *jf, const job_plan *plans, const outcome *oc, rd_status *st) {
  int n_failed = 0, n_ok = 0, worst_input = 1, first = -1;
  for (int j = 0; j < jf->n_jobs; j++) {
    if (plans[j].action != RD_OUT_WRITE) continue;
    if (oc[j].code == RD_OK) {
      n_ok++;
      continue;
    }
    if (first < 0) first = j;
    n_failed++;
    worst_input &= oc[j].code == RD_EINPUT;
  }
  if (!n_failed) return;
  int code = worst_input && n_ok == 0 ? RD_EINPUT : RD_EFAIL;
  if (n_failed == 1 && n_ok == 0) {
    rd_fail(st, code, "%s", oc[first].msg ? oc[first].msg : "failed");
    return;
  }
  char names[RD_MSG_MAX / 2];
  size_t k = 0;
  names[0] = '\0';
  for (int j = 0; j < jf->n_jobs && k < sizeof names - 64; j++)
    if (plans[j].action == RD_OUT_WRITE && oc[j].code != RD_OK)
      k += (size_t)snprintf(names + k, sizeof names - k, "%s%s", k ? ", " : "", jf->jobs[j].name);
  if (n_failed == 1)
    rd_fail(st, code, "job %s failed: %.1200s (%d other job%s finished; --resume reruns only the failed one)", names,
            oc[first].msg ? oc[first].msg : "", n_ok, n_ok == 1 ? "" : "s");
  else
    rd_fail(st, code, "%d of %d jobs failed: %s (each job's error is above; %d finished; --resume reruns only the "
            "failed ones)", n_failed, n_failed + n_ok, names, n_ok);
}

/* One group of all ranks: the jobs one after another in job-file order, tables streamed. */
static void run_in_order(rd_ctx *ctx, const rd_jobfile *jf, const job_plan *plans, const rd_plan *plan,
                         const char *backend_info, outcome *oc) {
  int done = 0, n_run = plan->n_run;
  double t0 = rd_now(), total_est = 0.0, est_done = 0.0;
  for (int i = 0; i < n_run; i++) total_est += plan->est[plan->order[i]];
  for (int j = 0; j < jf->n_jobs; j++) {
    if (plans[j].action == RD_OUT_SKIP) {
      if (ctx->err && !ctx->quiet)
        fprintf(ctx->err, "rmdiag: %s is up to date (same spec), skipped (--resume)\n", jf->jobs[j].name);
      continue;
    }
    rd_status st;
    rd_status_init(&st);
    char line[1024];
    run_one_job(ctx, &jf->jobs[j], jf, &plans[j], backend_info, ctx->out, line, sizeof line, &st);
    oc[j].code = st.code;
    done++;
    est_done += plan->est[j];
    if (ctx->rank != 0) continue;
    if (st.code != RD_OK) oc[j].msg = strdup(st.msg);
    if (!ctx->err || (ctx->quiet && st.code == RD_OK)) continue;
    double el = rd_now() - t0;
    double left = est_done > 0 && total_est > est_done ? el * (total_est - est_done) / est_done : 0.0;
    if (st.code == RD_OK && n_run > 1)
      fprintf(ctx->err, "rmdiag: %s [%d/%d jobs, %.1f s, about %.0f s left]\n", line, done, n_run, el, left);
    else if (st.code == RD_OK)
      fprintf(ctx->err, "rmdiag: %s\n", line);
    else if (n_run > 1)
      fprintf(ctx->err, "rmdiag: error: %s (%s) failed: %s\n", jf->jobs[j].name, jf->jobs[j].kind->name, st.msg);
  }
}

int run_schedule(rd_ctx *ctx, const rd_jobfile *jf, const job_plan *plans, const rd_plan *plan,
                 const char *backend_info, rd_status *st) {
  int n = jf->n_jobs;
  outcome *oc = calloc((size_t)(n ? n : 1), sizeof *oc);
  if (!oc) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  if (plan->n_groups <= 1) {
    run_in_order(ctx, jf, plans, plan, backend_info, oc);
  } else {
    if (ctx->rank == 0 && ctx->err && !ctx->quiet)
      for (int j = 0; j < n; j++)
        if (plans[j].action == RD_OUT_SKIP)
          fprintf(ctx->err, "rmdiag: %s is up to date (same spec), skipped (--resume)\n", jf->jobs[j].name);
    rd_ctx g;
    if (run_groups_make(ctx, plan, &g, st) != RD_OK) rd_abort(ctx, __FILE__, __LINE__, st->msg);
    dispatch_jobs(ctx, &g, jf, plans, plan, backend_info, oc);
    run_groups_free(&g);
    collect(ctx, jf, oc);
    for (int j = 0; ctx->rank == 0 && j < n; j++)
      if (oc[j].table_len && ctx->out) fwrite(oc[j].table, 1, oc[j].table_len, ctx->out);
  }
  if (ctx->rank == 0) summarize(jf, plans, oc, st);
  for (int j = 0; j < n; j++) {
    free(oc[j].msg);
    free(oc[j].table);
  }
  free(oc);
  return rd_share_status(ctx, st, 0);
}
