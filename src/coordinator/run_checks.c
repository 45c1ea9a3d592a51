/* Checking every job before anything is computed: the output folder is this run's alone (its
 * lock, and what interrupted runs left there cleaned up), the input files, their layouts, where the
 * outputs go, what --resume / --force decide, and (for validate and multi-job files) every value
 * the jobs would check. Any error ends the run with exit 2 and nothing written. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "rmdiag/common/h5in.h"
#include "rmdiag/kind.h"
#include "run_internal.h"

/* A barrier that sleeps instead of spinning: the other ranks wait here while rank 0 waits for the
 * output folder (run --wait), which may take hours. */
static void barrier_sleeping(const rd_ctx *ctx) {
  MPI_Request req;
  RD_MPI_CHECK(ctx, MPI_Ibarrier(ctx->comm, &req));
  for (int done = 0;;) {
    RD_MPI_CHECK(ctx, MPI_Test(&req, &done, MPI_STATUS_IGNORE));
    if (done) break;
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
}

int run_claim_output_dir(const rd_ctx *ctx, const rd_jobfile *jf, const rd_run_flags *fl, rd_dir_lock *lock,
                         int *made_dir, rd_status *st) {
  lock->fd = -1;
  lock->path = NULL;
  if (ctx->rank == 0) {
    FILE *log = ctx->quiet ? NULL : ctx->err;
    *made_dir = 1;  /* rd_mkdirs remembers the folders it creates (none when all exist) */
    if (rd_mkdirs(jf->output_dir, st) == RD_OK && rd_dir_lock_take(jf->output_dir, fl->wait, log, lock, st) == RD_OK) {
      const char **names = malloc(sizeof(char *) * (size_t)jf->n_jobs);
      if (!names) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
      for (int i = 0; i < jf->n_jobs; i++) names[i] = jf->jobs[i].name;
      rd_outputs_recover(jf->output_dir, names, jf->n_jobs, lock->fd >= 0, log);
      free(names);
    }
  }
  if (fl->wait) barrier_sleeping(ctx);
  return rd_share_status(ctx, st, 0);
}

void job_plans_free(job_plan *p, int n) {
  for (int i = 0; p && i < n; i++) {
    free(p[i].in.path);
    free(p[i].json_path);
    free(p[i].h5_path);
  }
  free(p);
}

static char *out_path(const rd_jobfile *jf, const char *name, const char *ext) {
  size_t n = strlen(jf->output_dir) + strlen(name) + strlen(ext) + 3;
  char *p = malloc(n);
  if (p) snprintf(p, n, "%s/%s%s", jf->output_dir, name, ext);
  return p;
}

/* Rank 0 resolves the input (real path, size, mtime); every rank then opens the file rank 0 resolved
 * (ranks may start in different folders). */
static int resolve_input(const rd_ctx *ctx, rd_job *job, const rd_jobfile *jf, job_plan *p, rd_status *st) {
  if (ctx->rank == 0) {
    char key[300];
    snprintf(key, sizeof key, "jobs[%d] (\"%s\").input", job->file_index, job->name);
    rd_input_stat_get(job->input, jf->path, key, &p->in, st);
  }
  if (rd_share_status(ctx, st, 0) != RD_OK) return st->code;
  long long len = ctx->rank == 0 ? (long long)strlen(p->in.path) : 0;
  RD_MPI_CHECK(ctx, MPI_Bcast(&len, 1, MPI_LONG_LONG, 0, ctx->comm));
  char *real = ctx->rank == 0 ? strdup(p->in.path) : malloc((size_t)len + 1);
  if (!real) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  rd_bcast_bytes(ctx, real, (size_t)len + 1, 0);
  free(job->input);
  job->input = real;
  /* every rank may lead the group that runs the job: each needs its input's identity */
  long long bytes = (long long)p->in.bytes;
  RD_MPI_CHECK(ctx, MPI_Bcast(&bytes, 1, MPI_LONG_LONG, 0, ctx->comm));
  p->in.bytes = bytes;
  if (ctx->rank != 0 && !(p->in.path = strdup(real))) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  return RD_OK;
}

/* Rank 0 hashes the job's spec once its kind has validated the input, which may fill option defaults
 * from the input (benchmark's scheme from the input's source attribute): the spec covers the options
 * the report states. Every rank receives it. */
static int job_spec(const rd_ctx *ctx, const rd_job *job, const rd_jobfile *jf, job_plan *p, rd_status *st) {
  if (ctx->rank == 0) rd_spec_sha256(job, jf, &p->in, p->spec, st);
  if (rd_share_status(ctx, st, 0) != RD_OK) return st->code;
  rd_bcast_bytes(ctx, p->spec, sizeof p->spec, 0);
  return RD_OK;
}

typedef struct file_id {
  int ok;
  dev_t dev;
  ino_t ino;
} file_id;

static file_id id_of(const char *path) {
  struct stat sb;
  file_id id = {0, 0, 0};
  if (path && stat(path, &sb) == 0) id = (file_id){1, sb.st_dev, sb.st_ino};
  return id;
}

static int same_file(file_id a, file_id b) { return a.ok && b.ok && a.dev == b.dev && a.ino == b.ino; }

/* Rank 0: the output paths of every job, none of which may be the job file or any job's input. */
static int check_output_paths(rd_jobfile *jf, job_plan *plans, rd_status *st) {
  file_id jobfile = id_of(jf->path);
  file_id *inputs = malloc(sizeof(file_id) * (size_t)jf->n_jobs);
  if (!inputs) return rd_fail(st, RD_EFAIL, "out of memory");
  for (int k = 0; k < jf->n_jobs; k++) inputs[k] = id_of(jf->jobs[k].input);
  for (int i = 0; i < jf->n_jobs && st->code == RD_OK; i++) {
    const char *outs[2] = {plans[i].json_path, plans[i].h5_path};
    for (int o = 0; o < 2 && st->code == RD_OK; o++) {
      file_id out = id_of(outs[o]);
      if (!out.ok) continue;
      if (same_file(out, jobfile))
        rd_fail(st, RD_EINPUT, "%s: jobs[%d] (\"%s\") would write its report over the job file %s", jf->path,
                jf->jobs[i].file_index, jf->jobs[i].name, outs[o]);
      for (int k = 0; k < jf->n_jobs && st->code == RD_OK; k++)
        if (same_file(out, inputs[k]))
          rd_fail(st, RD_EINPUT, "%s: jobs[%d] (\"%s\") would write %s over the input of jobs[%d]; choose another "
                  "output_dir or name", jf->path, jf->jobs[i].file_index, jf->jobs[i].name, outs[o],
                  jf->jobs[k].file_index);
    }
  }
  free(inputs);
  return st->code;
}

int run_check_jobs(const rd_ctx *ctx, rd_jobfile *jf, const rd_run_flags *fl, job_plan *plans, rd_status *st) {
  for (int i = 0; i < jf->n_jobs; i++) {
    rd_job *job = &jf->jobs[i];
    RD_TRY(resolve_input(ctx, job, jf, &plans[i], st));
    if (job->kind->validate(ctx, job, jf, st) != RD_OK) return st->code;
    RD_TRY(job_spec(ctx, job, jf, &plans[i], st));
    /* the plan's estimate of the job's cost (rank 0, the layout known to be right) */
    if (ctx->rank == 0) {
      plans[i].cost = rd_cost_default(plans[i].in.bytes);
      hid_t f;
      rd_status est;  /* an input that cannot be opened for this keeps the default */
      rd_status_init(&est);
      if (job->kind->estimate && rd_h5_open(job->input, MPI_COMM_NULL, &f, &est) == RD_OK) {
        job->kind->estimate(f, job, &plans[i].cost);
        rd_h5_close(f);
      }
    }
  }
  if (fl->validate_only) return RD_OK;
  /* the output paths, on every rank (any rank may lead the group that writes them) */
  for (int i = 0; i < jf->n_jobs; i++) {
    plans[i].json_path = out_path(jf, jf->jobs[i].name, ".json");
    plans[i].h5_path = out_path(jf, jf->jobs[i].name, ".h5");
    if (!plans[i].json_path || !plans[i].h5_path) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  }
  if (ctx->rank == 0) check_output_paths(jf, plans, st);
  if (rd_share_status(ctx, st, 0) != RD_OK) return st->code;
  for (int i = 0; i < jf->n_jobs; i++) {
    job_plan *p = &plans[i];
    p->force = fl->force;
    if (ctx->rank == 0) rd_output_decide(p->json_path, p->h5_path, p->spec, fl->resume, fl->force, &p->action, st);
    if (rd_share_status(ctx, st, 0) != RD_OK) return st->code;
    int a = (int)p->action;
    RD_MPI_CHECK(ctx, MPI_Bcast(&a, 1, MPI_INT, 0, ctx->comm));
    p->action = (rd_out_action)a;
  }
  return RD_OK;
}

/* A kind's value checks, with the job's own seed. */
static int job_check(const rd_ctx *ctx, const rd_job *job, const rd_jobfile *jf, rd_status *st) {
  rd_jobfile jfs = *jf;
  jfs.seed = job->seed;
  return job->kind->check(ctx, job, &jfs, st);
}

/* Checks of the input values (reading the data) before anything is written: by `validate`, and
 * whenever several jobs are to run, so that a bad input in a later job cannot leave the outputs of
 * earlier ones behind (a single job checks its values as it runs). With several rank groups each
 * group checks its share of the jobs; the error reported is the first failing job's in job-file
 * order, whichever group found it. */
int run_check_values(const rd_ctx *ctx, const rd_jobfile *jf, const job_plan *plans, const rd_plan *plan,
                     rd_ctx *group, rd_status *st) {
  int n = jf->n_jobs, n_check = 0;
  for (int i = 0; i < n; i++) n_check += plans[i].action == RD_OUT_WRITE && jf->jobs[i].kind->check != NULL;
  if (n_check == 0) return RD_OK;
  if (!group || plan->n_groups <= 1) {
    for (int i = 0; i < n; i++) {
      const rd_job *job = &jf->jobs[i];
      if (!job->kind->check || plans[i].action != RD_OUT_WRITE) continue;
      if (job_check(ctx, job, jf, st) != RD_OK) return st->code;
    }
    return RD_OK;
  }
  /* the jobs go to the groups by longest-processing-time-first on their estimated costs, the same
   * on every rank (rank 0's estimates broadcast in plan->est) */
  double *cost = malloc(sizeof(double) * (size_t)n);
  int *owner = malloc(sizeof(int) * (size_t)n);
  if (!cost || !owner) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  for (int i = 0; i < n; i++)
    cost[i] = plans[i].action == RD_OUT_WRITE && jf->jobs[i].kind->check ? plan->est[i] + 1e-9 : 0.0;
  rd_assign_tasks(n, cost, plan->n_groups, owner);
  int mine = rd_plan_group_of(plan, ctx->rank);
  for (int i = 0; i < n && st->code == RD_OK; i++) {
    const rd_job *job = &jf->jobs[i];
    if (!job->kind->check || plans[i].action != RD_OUT_WRITE || owner[i] != mine) continue;
    if (job_check(group, job, jf, st) != RD_OK) st->key = i;
  }
  free(cost);
  free(owner);
  return rd_agree(ctx, st);
}
