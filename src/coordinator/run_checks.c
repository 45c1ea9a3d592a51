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
#include "rmdiag/common/progress.h"
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

/* ---- the inputs and their layouts, spread over the ranks ----------------------------------------
 * Rank 0 resolves every input (real path, size, mtime; ranks may start in different folders, so the
 * others open what rank 0 resolved) and broadcasts them at once. Then each rank checks its share of
 * the jobs on its own (job i on rank i mod size): the kind's layout checks, the spec hash (after
 * them: a kind may fill an option from the input) and the planner's estimate. One all-gather brings
 * every rank the others' specs, estimates and what a kind's checks derived that the job's options
 * need everywhere (rd_kind.validated / adopt); the error reported is the first failing job's in
 * job-file order, as when one rank checks them all one after another. */

/* What rank 0 resolved: the first n_ok inputs, and why the next one could not be (fail). */
static int resolve_inputs(const rd_ctx *ctx, rd_jobfile *jf, job_plan *plans, int *n_ok, rd_status *fail) {
  int n = jf->n_jobs;
  char *buf = NULL;
  long long len = 0;
  *n_ok = n;
  if (ctx->rank == 0) {
    size_t cap = 0;
    for (int i = 0; i < n; i++) {
      char key[300];
      snprintf(key, sizeof key, "jobs[%d] (\"%s\").input", jf->jobs[i].file_index, jf->jobs[i].name);
      if (rd_input_stat_get(jf->jobs[i].input, jf->path, key, &plans[i].in, fail) != RD_OK) {
        *n_ok = i;
        break;
      }
      cap += 3 * sizeof(int64_t) + strlen(plans[i].in.path) + 1;
    }
    buf = malloc(cap ? cap : 1);
    if (!buf) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
    for (int i = 0; i < *n_ok; i++) {
      const rd_input_stat *in = &plans[i].in;
      int64_t v[3] = {in->bytes, in->mtime_s, in->mtime_ns};
      memcpy(buf + len, v, sizeof v);
      len += (long long)sizeof v;
      size_t pl = strlen(in->path) + 1;
      memcpy(buf + len, in->path, pl);
      len += (long long)pl;
    }
  }
  long long head[2] = {*n_ok, len};
  RD_MPI_CHECK(ctx, MPI_Bcast(head, 2, MPI_LONG_LONG, 0, ctx->comm));
  *n_ok = (int)head[0];
  len = head[1];
  if (ctx->rank != 0 && !(buf = malloc((size_t)(len ? len : 1)))) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  rd_bcast_bytes(ctx, buf, (size_t)len, 0);
  if (*n_ok < n) rd_share_status(ctx, fail, 0);
  for (int i = 0, at = 0; i < *n_ok; i++) {
    rd_input_stat *in = &plans[i].in;
    int64_t v[3];
    memcpy(v, buf + at, sizeof v);
    at += (int)sizeof v;
    char *real = strdup(buf + at);
    at += (int)strlen(buf + at) + 1;
    if (!real || (ctx->rank != 0 && !(in->path = strdup(real)))) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
    in->bytes = v[0];
    in->mtime_s = v[1];
    in->mtime_ns = v[2];
    free(jf->jobs[i].input);
    jf->jobs[i].input = real;
  }
  free(buf);
  return RD_OK;
}

/* One job's checks on this rank alone (`self`): layout, spec, estimate. */
static int check_job_here(const rd_ctx *self, rd_job *job, const rd_jobfile *jf, job_plan *p, rd_status *st) {
  if (job->kind->validate(self, job, jf, st) != RD_OK || rd_spec_sha256(job, jf, &p->in, p->spec, st) != RD_OK)
    return st->code;
  p->cost = rd_cost_default(p->in.bytes);
  hid_t f;
  rd_status est;  /* an input that cannot be opened for this keeps the default */
  rd_status_init(&est);
  if (job->kind->estimate && rd_h5_open(job->input, MPI_COMM_NULL, &f, &est) == RD_OK) {
    job->kind->estimate(f, job, &p->cost);
    rd_h5_close(f);
  }
  return RD_OK;
}

/* A checked job as the all-gather carries it, or (index -1 - i) job i's failure. */
typedef struct check_rec {
  int32_t index;
  int32_t code;
  int32_t max_ranks;
  char spec[65];
  double seconds, serial;
  int64_t validated;
} check_rec;

static int check_layouts(const rd_ctx *ctx, rd_jobfile *jf, job_plan *plans, int n_ok, rd_status *fail) {
  rd_ctx self = *ctx;
  self.comm = MPI_COMM_SELF;
  self.rank = 0;
  self.size = 1;
  int mine_n = 0;
  for (int i = ctx->rank; i < n_ok; i += ctx->size) mine_n++;
  check_rec *mine = calloc((size_t)(mine_n + 1), sizeof *mine);
  rd_status my_fail;
  rd_status_init(&my_fail);
  if (!mine) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  int k = 0;
  for (int i = ctx->rank; i < n_ok; i += ctx->size) {
    rd_job *job = &jf->jobs[i];
    check_rec *r = &mine[k++];  /* (calloc'd: the padding is zeros too) */
    if (check_job_here(&self, job, jf, &plans[i], &my_fail) != RD_OK) {
      r->index = -1 - i;
      r->code = my_fail.code;
      break;  /* this rank's later jobs cannot be the first to fail */
    }
    r->index = i;
    r->max_ranks = plans[i].cost.max_ranks;
    r->seconds = plans[i].cost.seconds;
    r->serial = plans[i].cost.serial;
    r->validated = job->kind->validated ? job->kind->validated(job) : 0;
    memcpy(r->spec, plans[i].spec, sizeof r->spec);
  }
  int *counts = malloc(sizeof(int) * (size_t)ctx->size), *displs = malloc(sizeof(int) * (size_t)ctx->size);
  if (!counts || !displs) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  int bytes = k * (int)sizeof(check_rec), total = 0;
  RD_MPI_CHECK(ctx, MPI_Allgather(&bytes, 1, MPI_INT, counts, 1, MPI_INT, ctx->comm));
  for (int r = 0; r < ctx->size; r++) {
    displs[r] = total;
    total += counts[r];
  }
  check_rec *all = malloc((size_t)(total ? total : 1));
  if (!all) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  RD_MPI_CHECK(ctx, MPI_Allgatherv(mine, bytes, MPI_BYTE, all, counts, displs, MPI_BYTE, ctx->comm));
  int first = n_ok, first_rank = 0;  /* the first failing job (n_ok: the input rank 0 could not resolve) */
  for (int r = 0; r < ctx->size; r++)
    for (int c = 0; c < counts[r] / (int)sizeof(check_rec); c++) {
      const check_rec *x = &all[displs[r] / (int)sizeof(check_rec) + c];
      if (x->index < 0) {
        if (-1 - x->index < first) first = -1 - x->index, first_rank = r;
        continue;
      }
      if (r == ctx->rank) continue;  /* this rank's own */
      job_plan *p = &plans[x->index];
      memcpy(p->spec, x->spec, sizeof p->spec);
      p->cost = (rd_job_cost){.seconds = x->seconds, .serial = x->serial, .max_ranks = x->max_ranks};
      const rd_job *job = &jf->jobs[x->index];
      if (job->kind->adopt) job->kind->adopt(job, x->validated);
    }
  free(counts);
  free(displs);
  free(all);
  free(mine);
  if (first < n_ok) {  /* its message comes from the rank that checked it */
    rd_share_status(ctx, &my_fail, first_rank);
    *fail = my_fail;
  }
  return first < jf->n_jobs ? fail->code : RD_OK;
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
  int n_ok = 0;
  RD_TRY(resolve_inputs(ctx, jf, plans, &n_ok, st));
  rd_timing_mark(ctx->rank, "(checks)", "inputs resolved");
  RD_TRY(check_layouts(ctx, jf, plans, n_ok, st));
  rd_timing_mark(ctx->rank, "(checks)", "layouts, specs, estimates");
  if (fl->validate_only) return RD_OK;
  /* the output paths, on every rank (any rank may lead the group that writes them) */
  for (int i = 0; i < jf->n_jobs; i++) {
    plans[i].json_path = out_path(jf, jf->jobs[i].name, ".json");
    plans[i].h5_path = out_path(jf, jf->jobs[i].name, ".h5");
    if (!plans[i].json_path || !plans[i].h5_path) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  }
  if (ctx->rank == 0) check_output_paths(jf, plans, st);
  if (rd_share_status(ctx, st, 0) != RD_OK) return st->code;
  /* what to do with each job's outputs (write, skip or stop; reading an existing report's spec can
   * take tens of ms): job i decided on rank i mod size, the actions combined in one all-reduce, and
   * the first job in file order that must stop reported with its own rank's message */
  int n = jf->n_jobs;
  int *act = malloc(sizeof(int) * (size_t)(n ? n : 1)), *all = malloc(sizeof(int) * (size_t)(n ? n : 1));
  if (!act || !all) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  for (int i = 0; i < n; i++) act[i] = -1;
  rd_status my_fail;
  rd_status_init(&my_fail);
  struct {
    int index, rank;
  } first = {n, ctx->rank}, first_all;
  for (int i = ctx->rank; i < n; i += ctx->size) {
    job_plan *p = &plans[i];
    if (rd_output_decide(p->json_path, p->h5_path, p->spec, fl->resume, fl->force, &p->action, &my_fail) != RD_OK) {
      first.index = i;  /* this rank's later jobs cannot be the first to stop */
      break;
    }
    act[i] = (int)p->action;
  }
  RD_MPI_CHECK(ctx, MPI_Allreduce(&first, &first_all, 1, MPI_2INT, MPI_MINLOC, ctx->comm));
  if (first_all.index < n) {
    rd_share_status(ctx, &my_fail, first_all.rank);
    *st = my_fail;
  } else {
    RD_MPI_CHECK(ctx, MPI_Allreduce(act, all, n, MPI_INT, MPI_MAX, ctx->comm));
    for (int i = 0; i < n; i++) {
      plans[i].force = fl->force;
      plans[i].action = (rd_out_action)all[i];
    }
  }
  free(act);
  free(all);
  return st->code;
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
