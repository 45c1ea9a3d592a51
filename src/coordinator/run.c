/* The run and validate commands: read the job file once, check every job and input before
 * computing anything, then run the jobs in order and write each report atomically. */
#include "rmdiag/run.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rmdiag/backend_select.h"
#include "rmdiag/common/h5out.h"
#include "rmdiag/common/jsonutil.h"
#include "rmdiag/kind.h"
#include "rmdiag/common/files.h"
#include "rmdiag/common/signals.h"
#include "rmdiag/resume.h"
#include "rmdiag/common/progress.h"
#include "rmdiag/version.h"

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
  rd_backend_select(want, ctx->node_rank, &b, info, infolen, st);
  if (rd_agree(ctx, st) != RD_OK) return st->code;
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

typedef struct job_plan {
  rd_input_stat in;
  char spec[65];
  rd_out_action action;
  char *json_path, *h5_path;
} job_plan;

static void plans_free(job_plan *p, int n) {
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

/* Checks every job before anything is computed: inputs exist, layouts are right, outputs may
 * be written. */
static int check_all(const rd_ctx *ctx, rd_jobfile *jf, const rd_run_flags *fl, job_plan *plans,
                     rd_status *st) {
  for (int i = 0; i < jf->n_jobs; i++) {
    rd_job *job = &jf->jobs[i];
    job_plan *p = &plans[i];
    if (ctx->rank == 0) {
      char key[300];
      snprintf(key, sizeof key, "jobs[%d] (\"%s\").input", i, job->name);
      if (rd_input_stat_get(job->input, jf->path, key, &p->in, st) == RD_OK)
        rd_spec_sha256(job, jf, &p->in, p->spec, st);
    }
    if (rd_share_status(ctx, st, 0) != RD_OK) return st->code;
    /* every rank opens the file rank 0 resolved (ranks may start in different folders) */
    long long len = ctx->rank == 0 ? (long long)strlen(p->in.path) : 0;
    RD_MPI_CHECK(ctx, MPI_Bcast(&len, 1, MPI_LONG_LONG, 0, ctx->comm));
    char *real = ctx->rank == 0 ? strdup(p->in.path) : malloc((size_t)len + 1);
    if (!real) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
    rd_bcast_bytes(ctx, real, (size_t)len + 1, 0);
    free(job->input);
    job->input = real;
    if (job->kind->validate(ctx, job, jf, st) != RD_OK) return st->code;
  }
  if (!fl->validate_only) {
    for (int i = 0; i < jf->n_jobs && ctx->rank == 0 && st->code == RD_OK; i++) {
      plans[i].json_path = out_path(jf, jf->jobs[i].name, ".json");
      plans[i].h5_path = out_path(jf, jf->jobs[i].name, ".h5");
      /* an output may not be an input of any job, nor the job file */
      const char *outs[2] = {plans[i].json_path, plans[i].h5_path};
      for (int o = 0; o < 2 && st->code == RD_OK; o++) {
        struct stat so, si;
        if (stat(outs[o], &so) != 0) continue;
        if (stat(jf->path, &si) == 0 && si.st_dev == so.st_dev && si.st_ino == so.st_ino)
          rd_fail(st, RD_EINPUT, "%s: jobs[%d] (\"%s\") would write its report over the job file %s", jf->path, i,
                  jf->jobs[i].name, outs[o]);
        for (int k = 0; k < jf->n_jobs && st->code == RD_OK; k++)
          if (stat(jf->jobs[k].input, &si) == 0 && si.st_dev == so.st_dev && si.st_ino == so.st_ino)
            rd_fail(st, RD_EINPUT, "%s: jobs[%d] (\"%s\") would write %s over the input of jobs[%d]; choose another "
                    "output_dir or name", jf->path, i, jf->jobs[i].name, outs[o], k);
      }
    }
    if (rd_share_status(ctx, st, 0) != RD_OK) return st->code;
  }
  /* Checks of the input values (reading the data) before anything is written: by `validate`,
   * and whenever several jobs are to run, so that a bad input in a later job cannot leave the
   * outputs of earlier ones behind. A single job checks its values as it runs. */
  int n_write = 0;
  for (int i = 0; i < jf->n_jobs; i++) {
    job_plan *p = &plans[i];
    if (!fl->validate_only && ctx->rank == 0)
      rd_output_decide(p->json_path, p->h5_path, p->spec, fl->resume, fl->force, &p->action, st);
    if (!fl->validate_only && rd_share_status(ctx, st, 0) != RD_OK) return st->code;
    int a = (int)p->action;
    RD_MPI_CHECK(ctx, MPI_Bcast(&a, 1, MPI_INT, 0, ctx->comm));
    p->action = (rd_out_action)a;
    n_write += p->action == RD_OUT_WRITE;
  }
  for (int i = 0; i < jf->n_jobs; i++) {
    const rd_job *job = &jf->jobs[i];
    if (!job->kind->check || plans[i].action != RD_OUT_WRITE) continue;
    if (!fl->validate_only && n_write < 2) break;
    if (job->kind->check(ctx, job, jf, st) != RD_OK) return st->code;
  }
  return RD_OK;
}

static cJSON *envelope(const rd_ctx *ctx, const rd_job *job, const rd_jobfile *jf, const job_plan *p,
                       const char *backend, double seconds, cJSON *result) {
  cJSON *root = cJSON_CreateObject(), *meta = cJSON_CreateObject();
  cJSON_AddStringToObject(meta, "version", RMDIAG_VERSION);
  cJSON_AddStringToObject(meta, "job", job->name);
  cJSON_AddStringToObject(meta, "kind", job->kind->name);
  cJSON_AddStringToObject(meta, "spec_sha256", p->spec);
  cJSON *inputs = cJSON_CreateArray(), *in = cJSON_CreateObject();
  cJSON_AddStringToObject(in, "path", p->in.path);
  cJSON_AddNumberToObject(in, "bytes", (double)p->in.bytes);
  cJSON_AddStringToObject(in, "group", job->group);
  cJSON_AddItemToArray(inputs, in);
  cJSON_AddItemToObject(meta, "inputs", inputs);
  cJSON_AddNumberToObject(meta, "ranks", ctx->size);
  cJSON_AddStringToObject(meta, "backend", backend);
  cJSON_AddNumberToObject(meta, "seconds", round(seconds * 1e4) / 1e4);
  cJSON_AddNumberToObject(meta, "seed", (double)jf->seed);
  cJSON_AddItemToObject(meta, "options", cJSON_Duplicate(job->effective, 1));
  if (jf->description) cJSON_AddStringToObject(meta, "description", jf->description);
  else cJSON_AddNullToObject(meta, "description");  /* every envelope key is always there */
  cJSON_AddItemToObject(root, "rmdiag", meta);
  cJSON_AddItemToObject(root, "result", result);
  return root;
}

static int fsync_path(const char *path, rd_status *st) {
  int fd = open(path, O_RDONLY);
  if (fd < 0 || fsync(fd) != 0) {
    if (fd >= 0) close(fd);
    return rd_fail(st, RD_EFAIL, "cannot sync %s: %s", path, strerror(errno));
  }
  close(fd);
  return RD_OK;
}

/* Puts a finished job's outputs in place (rank 0). The new .h5 is made durable, then any old
 * report is moved aside, the .h5 renamed into place, and the new report written last: at every
 * moment a <name>.json present means its .h5 is complete and was made from the same spec. A
 * replaced .h5 keeps a second link during the rename (an atomic, cheap rename), and the old
 * files are removed once the new report is out. */
static int commit_outputs(const job_plan *p, const char *h5tmp, const char *json_text, rd_status *st) {
  char *stale_json = NULL, *old_h5 = NULL;
  RD_TRY(fsync_path(h5tmp, st));
  /* the journal lets a signal at any point below restore the old pair (rd_tmp_cleanup) */
  stale_json = access(p->json_path, F_OK) == 0 ? rd_side_path(p->json_path, "stale") : NULL;
  int h5_existed = access(p->h5_path, F_OK) == 0;
  old_h5 = h5_existed ? rd_side_path(p->h5_path, "old") : NULL;
  /* (a leftover of the same name, from an earlier process with this pid, is replaced) */
  if (old_h5 && link(p->h5_path, old_h5) != 0 &&
      !(errno == EEXIST && unlink(old_h5) == 0 && link(p->h5_path, old_h5) == 0)) {
    free(old_h5);
    old_h5 = NULL;
  }
  /* (begun before the report moves: rolling back a move that has not happened fails harmlessly) */
  rd_commit_begin(p->json_path, p->h5_path, h5tmp, stale_json, old_h5, h5_existed);
  if (stale_json && rename(p->json_path, stale_json) != 0) {
    rd_commit_end();
    if (old_h5) unlink(old_h5);
    rd_fail(st, RD_EFAIL, "cannot move the old report %s aside: %s", p->json_path, strerror(errno));
    free(stale_json);
    free(old_h5);
    return st->code;
  }
  if (rename(h5tmp, p->h5_path) != 0) {
    rd_fail(st, RD_EFAIL, "cannot rename %s to %s: %s", h5tmp, p->h5_path, strerror(errno));
    if (stale_json) rename(stale_json, p->json_path);  /* nothing changed: the old report stands */
    if (old_h5) unlink(old_h5);
    rd_commit_end();
  } else {
    if (rd_write_file_atomic(p->json_path, json_text, st) == RD_OK) {
      rd_commit_end();  /* the new pair is complete: the old files can go */
      if (stale_json) unlink(stale_json);
      if (old_h5) unlink(old_h5);
    } else {
      rd_commit_rollback();  /* the report could not be written: the old pair comes back */
    }
  }
  free(stale_json);
  free(old_h5);
  return st->code;
}

/* Runs one job: the kind computes, rank 0 writes the .h5 under a temporary name, renames it,
 * then writes the .json (the marker that the job finished). */
static int run_job(const rd_ctx *ctx, const rd_job *job, const rd_jobfile *jf, const job_plan *p,
                   const char *backend_info, rd_status *st) {
  rd_run_out out = {.h5 = H5I_INVALID_HID, .result = NULL};
  char *h5tmp = NULL;
  MPI_Barrier(ctx->comm);
  double t0 = rd_now();
  rd_timing_mark(ctx->rank, job->name, NULL);
  if (ctx->rank == 0) {
    h5tmp = rd_tmp_path(p->h5_path);
    if (!h5tmp) {
      rd_fail(st, RD_EFAIL, "out of memory");
    } else {
      rd_tmp_register(h5tmp);
      rd_h5_create(h5tmp, &out.h5, st);
      if (st->code != RD_OK && access(jf->output_dir, F_OK) != 0) {
        /* the folder went (a concurrent run that failed removed it while empty): make it again */
        rd_status_init(st);
        if (rd_mkdirs(jf->output_dir, st) == RD_OK) rd_h5_create(h5tmp, &out.h5, st);
      }
    }
  }
  rd_timing_mark(ctx->rank, job->name, "create output");
  if (rd_share_status(ctx, st, 0) == RD_OK) {
    job->kind->run(ctx, job, jf, &out, st);
    rd_agree(ctx, st);
  }
  if (ctx->rank == 0) {
    if (st->code == RD_OK) {
      rd_h5_write_attr_string(out.h5, "/", "spec_sha256", p->spec, st);
      if (st->code == RD_OK) rd_h5_write_attr_string(out.h5, "/", "rmdiag_version", RMDIAG_VERSION, st);
      if (st->code == RD_OK) rd_h5_write_attr_string(out.h5, "/", "job", job->name, st);
      if (st->code == RD_OK) rd_h5_write_attr_string(out.h5, "/", "kind", job->kind->name, st);
    }
    if (out.h5 >= 0 && H5Fclose(out.h5) < 0 && st->code == RD_OK)
      rd_fail(st, RD_EFAIL, "%s: closing the output HDF5 file failed", h5tmp);
    char *text = NULL;
    double seconds = rd_now() - t0;
    if (st->code == RD_OK) {
      cJSON *env = envelope(ctx, job, jf, p, ctx->backend->name, seconds, out.result);
      out.result = NULL;
      rd_json_exact_numbers(env);
      text = env ? cJSON_Print(env) : NULL;
      cJSON_Delete(env);
      char *withnl = text ? realloc(text, strlen(text) + 2) : NULL;
      if (!withnl) {
        free(text);
        text = NULL;
        rd_fail(st, RD_EFAIL, "out of memory printing the report");
      } else {
        text = strcat(withnl, "\n");
      }
    }
    if (st->code == RD_OK) commit_outputs(p, h5tmp, text, st);
    if (h5tmp) {
      unlink(h5tmp);  /* no-op after a successful rename */
      rd_tmp_unregister(h5tmp);
    }
    free(text);
    rd_timing_mark(ctx->rank, job->name, "outputs");
    if (st->code == RD_OK && ctx->err && !ctx->quiet)
      fprintf(ctx->err, "rmdiag: %s (%s) done in %.3f s on %d rank%s [%s] -> %s\n", job->name, job->kind->name,
              seconds, ctx->size, ctx->size == 1 ? "" : "s", backend_info, p->json_path);
    cJSON_Delete(out.result);
  }
  free(h5tmp);
  return rd_share_status(ctx, st, 0);
}

int rd_cmd_run(rd_ctx *ctx, const char *jobpath, const rd_run_flags *fl, rd_status *st) {
  rd_jobfile jf;
  memset(&jf, 0, sizeof jf);
  job_plan *plans = NULL;
  char backend_info[512] = "cpu";
  int made_dir = 0;
  if (load_jobfile(ctx, jobpath, &jf, st) != RD_OK) goto done;
  plans = calloc((size_t)jf.n_jobs, sizeof *plans);
  if (!plans) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  if (!fl->validate_only && select_backend(ctx, fl->backend, backend_info, sizeof backend_info, st) != RD_OK)
    goto done;
  if (fl->validate_only) ctx->backend = &rd_backend_cpu;
  if (check_all(ctx, &jf, fl, plans, st) != RD_OK) goto done;
  if (fl->validate_only) {
    if (ctx->out)
      fprintf(ctx->out, "%s: %d job%s valid; every input has the expected layout\n", jobpath, jf.n_jobs,
              jf.n_jobs == 1 ? "" : "s");
    goto done;
  }
  int any_write = 0;
  for (int i = 0; i < jf.n_jobs; i++) any_write |= plans[i].action == RD_OUT_WRITE;
  if (any_write && ctx->rank == 0) {
    made_dir = 1;  /* rd_mkdirs remembers the folders it creates (none when all exist) */
    rd_mkdirs(jf.output_dir, st);
  }
  if (rd_share_status(ctx, st, 0) != RD_OK) goto done;
  for (int i = 0; i < jf.n_jobs; i++) {
    if (plans[i].action == RD_OUT_SKIP) {
      if (ctx->err && !ctx->quiet)
        fprintf(ctx->err, "rmdiag: %s is up to date (same spec), skipped (--resume)\n", jf.jobs[i].name);
      continue;
    }
    if (run_job(ctx, &jf.jobs[i], &jf, &plans[i], backend_info, st) != RD_OK) goto done;
  }
done:
  /* a failed run leaves none of the folders it created (as far as they are empty); a finished one
   * keeps them */
  if (st->code != RD_OK && made_dir) rd_made_dir_remove();
  if (made_dir) rd_made_dir_forget();
  if (ctx->backend && ctx->backend != &rd_backend_cpu) ctx->backend->fini();
  plans_free(plans, jf.n_jobs);
  rd_jobfile_free(&jf);
  (void)backend_info;
  return st->code;
}
