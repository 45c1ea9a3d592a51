/* The run and validate commands: read the job file once, claim the output folder (one run at a
 * time), check every job and input before computing anything, plan the jobs over the ranks, then
 * run them (on rank groups when that is faster) and write each report atomically. */
#include "rmdiag/run.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "rmdiag/backend_select.h"
#include "rmdiag/common/progress.h"
#include "rmdiag/common/signals.h"
#include "rmdiag/kind.h"
#include "run_internal.h"

/* Rank 0 reads the job file; every rank parses the same bytes. */
static int load_jobfile(const rd_ctx *ctx, const char *path, rd_jobfile *jf, rd_status *st) {
  char *text = NULL;
  long long len = 0;
  if (ctx->rank == 0) {
    struct stat sb;
    FILE *fp = NULL;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
      rd_fail(st, RD_EINPUT, "%s: is a folder, expected a job file (JSON)", path);
    else if (!(fp = fopen(path, "rb")))
      rd_fail(st, RD_EINPUT, "%s: cannot read the job file (%s)", path, strerror(errno));
    if (fp) {
      size_t cap = 4096, n = 0;
      text = malloc(cap);
      for (;;) {
        if (!text) break;
        size_t r = fread(text + n, 1, cap - n - 1, fp);
        n += r;
        if (n + 1 < cap) break;
        cap *= 2;
        if (cap > ((size_t)64 << 20)) {
          rd_fail(st, RD_EINPUT, "%s: the job file is larger than 64 MiB", path);
          break;
        }
        char *nt = realloc(text, cap);
        if (!nt) {
          free(text);
          text = NULL;
        } else {
          text = nt;
        }
      }
      fclose(fp);
      if (!text && st->code == RD_OK) rd_fail(st, RD_EFAIL, "out of memory reading %s", path);
      len = (long long)n;
    }
  }
  if (rd_share_status(ctx, st, 0) != RD_OK) {
    free(text);
    return st->code;
  }
  RD_MPI_CHECK(ctx, MPI_Bcast(&len, 1, MPI_LONG_LONG, 0, ctx->comm));
  if (ctx->rank != 0) text = malloc((size_t)len + 1);
  if (!text) rd_abort(ctx, __FILE__, __LINE__, "out of memory for the job file");
  rd_bcast_bytes(ctx, text, (size_t)len, 0);
  text[len] = '\0';
  int rc = rd_jobfile_parse(path, text, (size_t)len, jf, st);
  free(text);
  return rc;
}

/* Every rank takes the same backend: CUDA only if every rank has a device. */
static int select_backend(rd_ctx *ctx, const char *want, char *info, size_t infolen, rd_status *st) {
  const rd_backend *b = NULL;
  char note[1024];
  rd_backend_select(want, ctx->node_rank, &b, info, infolen, note, sizeof note, st);
  if (rd_agree(ctx, st) != RD_OK) return st->code;
  if (ctx->rank == 0 && note[0] && ctx->err) fprintf(ctx->err, "rmdiag: note: %s\n", note);
  int is_cuda = strcmp(b->name, "cpu") != 0, all = 0;
  RD_MPI_CHECK(ctx, MPI_Allreduce(&is_cuda, &all, 1, MPI_INT, MPI_MIN, ctx->comm));
  if (is_cuda && !all) {
    b->fini();
    b = &rd_backend_cpu;
    snprintf(info, infolen, "cpu (not every rank has a GPU)");
  }
  ctx->backend = b;
  return RD_OK;
}

/* Rank 0 plans; every rank gets the plan (widths, order and estimates). */
static int make_plan(const rd_ctx *ctx, const rd_jobfile *jf, const job_plan *plans, const rd_run_flags *fl,
                     rd_plan *plan, rd_status *st) {
  int validate_only = fl->validate_only;
  int n = jf->n_jobs;
  rd_job_cost *costs = malloc(sizeof(rd_job_cost) * (size_t)n);
  int *run = malloc(sizeof(int) * (size_t)n);
  if (!costs || !run) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  for (int j = 0; j < n; j++) {
    costs[j] = plans[j].cost;
    /* validate plans every job (its checks run on the groups); run only those it writes */
    run[j] = validate_only || plans[j].action == RD_OUT_WRITE;
  }
  int head[4] = {0, 0, 0, 0};
  if (ctx->rank == 0) {
    int rc = fl->ranks_per_job == 0 ? rd_plan_make(costs, run, n, ctx->size, plan)
             : rd_plan_make_width(costs, run, n, ctx->size, fl->ranks_per_job < 0 ? ctx->size : fl->ranks_per_job, plan);
    if (rc != 0) rd_fail(st, RD_EFAIL, "out of memory planning the jobs");
    else head[0] = plan->n_run, head[1] = plan->n_large, head[2] = plan->n_groups;
  }
  free(costs);
  free(run);
  if (rd_share_status(ctx, st, 0) != RD_OK) return st->code;
  RD_MPI_CHECK(ctx, MPI_Bcast(head, 4, MPI_INT, 0, ctx->comm));
  if (ctx->rank != 0) {
    plan->n_run = head[0];
    plan->n_large = head[1];
    plan->n_groups = head[2];
    plan->world = ctx->size;
    if (rd_plan_alloc(plan, n, plan->n_groups) != 0) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  }
  RD_MPI_CHECK(ctx, MPI_Bcast(plan->order, plan->n_run, MPI_INT, 0, ctx->comm));
  RD_MPI_CHECK(ctx, MPI_Bcast(plan->group_first, plan->n_groups, MPI_INT, 0, ctx->comm));
  RD_MPI_CHECK(ctx, MPI_Bcast(plan->group_size, plan->n_groups, MPI_INT, 0, ctx->comm));
  RD_MPI_CHECK(ctx, MPI_Bcast(plan->group_wide, plan->n_groups, MPI_INT, 0, ctx->comm));
  RD_MPI_CHECK(ctx, MPI_Bcast(plan->est, n, MPI_DOUBLE, 0, ctx->comm));
  RD_MPI_CHECK(ctx, MPI_Bcast(&plan->makespan, 1, MPI_DOUBLE, 0, ctx->comm));
  return RD_OK;
}

/* `rmdiag run --plan`: the plan on stdout (rank 0). */
static void print_plan(FILE *fp, const rd_jobfile *jf, const job_plan *plans, const rd_plan *plan) {
  int skipped = 0;
  for (int j = 0; j < jf->n_jobs; j++) skipped += plans[j].action == RD_OUT_SKIP;
  fprintf(fp, "plan for %s: %d job%s to run (%d up to date) on %d rank%s\n", jf->path, plan->n_run,
          plan->n_run == 1 ? "" : "s", skipped, plan->world, plan->world == 1 ? "" : "s");
  int narrow = 0;
  for (int g = 0; g < plan->n_groups; g++) narrow += !plan->group_wide[g];
  char groups[512];
  rd_plan_groups_text(plan, groups, sizeof groups);
  fprintf(fp, "groups: %s\n", groups);
  fprintf(fp, "estimated time: %.2f s (one group of all ranks, one job after another: %.2f s)\n", plan->makespan,
          plan->sequential);
  fprintf(fp, "%5s  %-32s %-10s %12s %10s %12s %s\n", "order", "job", "kind", "input MB", "est. s", "ranks useful",
          "groups");
  for (int i = 0, k = 0; i < plan->n_run; i++) {
    int j = plan->order[i];
    if (plan->n_groups <= 1) {  /* one group runs them in job-file order */
      while (plans[k].action != RD_OUT_WRITE) k++;
      j = k++;
    }
    fprintf(fp, "%5d  %-32.32s %-10s %12.1f %10.3f %12d %s\n", i + 1, jf->jobs[j].name, jf->jobs[j].kind->name,
            (double)plans[j].in.bytes / 1e6, plan->est[j], plans[j].cost.max_ranks,
            plan->n_groups <= 1 ? "all ranks" : narrow == 0 || i < plan->n_large ? "wide first" : "any");
  }
  for (int s = 0; s < jf->n_sweeps; s++)
    fprintf(fp, "sweep %s: %d jobs (%s.%s-0 ...), summarized in %s.summary.json\n", jf->sweeps[s].name,
            jf->sweeps[s].n, jf->sweeps[s].name, jf->sweeps[s].keys[0], jf->sweeps[s].name);
  fprintf(fp, "(estimates from input sizes and options; nothing was computed)\n");
}

int rd_cmd_run(rd_ctx *ctx, const char *jobpath, const rd_run_flags *fl, rd_status *st) {
  rd_jobfile jf;
  memset(&jf, 0, sizeof jf);
  job_plan *plans = NULL;
  sweep_plan *sweeps = NULL;
  rd_plan plan;
  memset(&plan, 0, sizeof plan);
  rd_ctx group;
  memset(&group, 0, sizeof group);
  char backend_info[512] = "cpu";
  int made_dir = 0, checks_only = fl->validate_only || fl->plan_only;
  rd_dir_lock lock = {.fd = -1};
  rd_timing_mark(ctx->rank, "(checks)", NULL);
  if (load_jobfile(ctx, jobpath, &jf, st) != RD_OK) goto done;
  rd_timing_mark(ctx->rank, "(checks)", "job file");
  /* the output folder is this run's alone before its outputs are looked at */
  if (!checks_only && run_claim_output_dir(ctx, &jf, fl, &lock, &made_dir, st) != RD_OK) goto done;
  plans = calloc((size_t)jf.n_jobs, sizeof *plans);
  if (!plans) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  if (!checks_only && select_backend(ctx, fl->backend, backend_info, sizeof backend_info, st) != RD_OK) goto done;
  if (checks_only) ctx->backend = &rd_backend_cpu;
  if (run_check_jobs(ctx, &jf, fl, plans, st) != RD_OK) goto done;
  rd_timing_mark(ctx->rank, "(checks)", "output paths, resume");
  sweeps = calloc((size_t)(jf.n_sweeps ? jf.n_sweeps : 1), sizeof *sweeps);
  if (!sweeps) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  if (!fl->validate_only && run_sweeps_decide(ctx, &jf, fl, plans, sweeps, st) != RD_OK) goto done;
  if (make_plan(ctx, &jf, plans, fl, &plan, st) != RD_OK) goto done;
  rd_timing_mark(ctx->rank, "(checks)", "plan");
  if (fl->plan_only) {
    if (ctx->out) print_plan(ctx->out, &jf, plans, &plan);
    goto done;
  }
  /* the values of every job to be written, before anything is: by validate, and whenever several
   * jobs are to run (a single job checks its values as it runs) */
  if (fl->validate_only || plan.n_run >= 2) {
    if (plan.n_groups > 1 && run_groups_make(ctx, &plan, &group, st) != RD_OK) goto done;
    if (run_check_values(ctx, &jf, plans, &plan, plan.n_groups > 1 ? &group : NULL, st) != RD_OK) goto done;
    rd_timing_mark(ctx->rank, "(checks)", "input values");
  }
  if (fl->validate_only) {
    if (ctx->out)
      fprintf(ctx->out, "%s: %d job%s valid; every input has the expected layout\n", jobpath, jf.n_jobs,
              jf.n_jobs == 1 ? "" : "s");
    goto done;
  }
  run_schedule(ctx, &jf, plans, &plan, backend_info, st);
  if (jf.n_sweeps > 0) {
    rd_status sst;
    rd_status_init(&sst);
    run_sweeps_summarize(ctx, &jf, plans, sweeps, &sst);
    if (rd_share_status(ctx, &sst, 0) != RD_OK && st->code == RD_OK) *st = sst;
  }
done:
  rd_dir_lock_drop(&lock);
  /* a failed run leaves none of the folders it created (as far as they are empty); a finished one
   * keeps them */
  if (st->code != RD_OK && made_dir) rd_made_dir_remove();
  if (made_dir) rd_made_dir_forget();
  run_groups_free(&group);
  if (ctx->backend && ctx->backend != &rd_backend_cpu) ctx->backend->fini();
  rd_plan_free(&plan);
  sweep_plans_free(sweeps, jf.n_sweeps);
  job_plans_free(plans, jf.n_jobs);
  rd_jobfile_free(&jf);
  return st->code;
}
