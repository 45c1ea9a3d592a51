/* One job on a group of ranks: the kind computes; the group's rank 0 writes the .h5 under a
 * temporary name, makes it durable, renames it into place and writes the report last, so a report
 * present always means its .h5 is complete and of the same spec. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rmdiag/common/h5driver.h"
#include "rmdiag/common/h5out.h"
#include "rmdiag/common/jsonutil.h"
#include "rmdiag/common/progress.h"
#include "rmdiag/common/signals.h"
#include "rmdiag/kernels/backend.h"
#include "rmdiag/kind.h"
#include "rmdiag/version.h"
#include "run_internal.h"

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
  cJSON_AddNumberToObject(meta, "seed", (double)job->seed);
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
    return rd_fail(st, RD_EFAIL, "cannot sync %s: %s", path, rd_io_cause(errno));
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
  /* the outputs may have changed since the start-up check (a run elsewhere, on a file system where
   * the folder lock does not hold): the spec rule again, just before anything is replaced */
  RD_TRY(rd_output_recheck(p->json_path, p->h5_path, p->spec, p->force, st));
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

/* Rank 0 of the group: the report's text (the envelope around the kind's result), or NULL. */
static char *report_text(const rd_ctx *g, const rd_job *job, const rd_jobfile *jf, const job_plan *p, double seconds,
                         cJSON *result, rd_status *st) {
  cJSON *env = envelope(g, job, jf, p, g->backend->name, seconds, result);
  rd_json_exact_numbers(env);
  char *text = env ? cJSON_Print(env) : NULL;
  cJSON_Delete(env);
  char *withnl = text ? realloc(text, strlen(text) + 2) : NULL;
  if (!withnl) {
    free(text);
    rd_fail(st, RD_EFAIL, "out of memory printing the report");
    return NULL;
  }
  return strcat(withnl, "\n");
}

/* Rank 0 of the group: the output .h5 under its temporary name (the folder made again when a
 * concurrent run that failed removed it while empty). */
static char *create_h5(const rd_jobfile *jf, const job_plan *p, hid_t *h5, rd_status *st) {
  char *h5tmp = rd_tmp_path(p->h5_path);
  if (!h5tmp) {
    rd_fail(st, RD_EFAIL, "out of memory");
    return NULL;
  }
  rd_tmp_register(h5tmp);
  rd_h5_create(h5tmp, h5, st);
  if (st->code != RD_OK && access(jf->output_dir, F_OK) != 0) {
    rd_status_init(st);
    if (rd_mkdirs(jf->output_dir, st) == RD_OK) rd_h5_create(h5tmp, h5, st);
  }
  return h5tmp;
}

/* Rank 0 of the group: the attributes that tie the .h5 to its report, then the file closed. */
static void finish_h5(const rd_job *job, const job_plan *p, const char *h5tmp, hid_t h5, rd_status *st) {
  if (st->code == RD_OK) {
    rd_h5_write_attr_string(h5, "/", "spec_sha256", p->spec, st);
    if (st->code == RD_OK) rd_h5_write_attr_string(h5, "/", "rmdiag_version", RMDIAG_VERSION, st);
    if (st->code == RD_OK) rd_h5_write_attr_string(h5, "/", "job", job->name, st);
    if (st->code == RD_OK) rd_h5_write_attr_string(h5, "/", "kind", job->kind->name, st);
  }
  /* a write error (a full disk, the file size limit) is named with its cause, and the close cannot
   * fail on it (HDF5 1.10 would keep the id of a file it freed, and crash in MPI_Finalize) */
  rd_h5_out_close(h5, h5tmp, st);
}

int run_one_job(const rd_ctx *g, const rd_job *job, const rd_jobfile *jf, const job_plan *p, const char *backend_info,
                FILE *out, char *done_line, size_t done_len, rd_status *st) {
  rd_run_out res = {.h5 = H5I_INVALID_HID, .result = NULL};
  char *h5tmp = NULL;
  rd_ctx kc = *g;  /* the kind's view: its table goes to `out` */
  kc.out = g->rank == 0 ? out : NULL;
  if (done_line && done_len) done_line[0] = '\0';
  MPI_Barrier(g->comm);
  double t0 = rd_now();
  rd_timing_mark(g->rank, job->name, NULL);
  if (g->rank == 0) h5tmp = create_h5(jf, p, &res.h5, st);
  rd_timing_mark(g->rank, job->name, "create output");
  if (rd_share_status(g, st, 0) == RD_OK) {
    rd_jobfile jfs = *jf;  /* the kind draws from the job's own seed */
    jfs.seed = job->seed;
    job->kind->run(&kc, job, &jfs, &res, st);
    rd_agree(g, st);
  }
  if (g->rank == 0) {
    finish_h5(job, p, h5tmp, res.h5, st);
    double seconds = rd_now() - t0;
    char *text = NULL;
    if (st->code == RD_OK) {
      text = report_text(g, job, jf, p, seconds, res.result, st);
      res.result = NULL;  /* the envelope took it */
    }
    /* fault injection for the tests of failure handling: RMDIAG_FAULT=commit:NAME fails job NAME
     * where its outputs would be committed (after computing), as a full disk would */
    const char *fault = getenv("RMDIAG_FAULT");
    if (st->code == RD_OK && fault && strncmp(fault, "commit:", 7) == 0 && strcmp(fault + 7, job->name) == 0)
      rd_fail(st, RD_EFAIL, "%s: cannot write the report: injected fault (RMDIAG_FAULT)", p->json_path);
    if (st->code == RD_OK) commit_outputs(p, h5tmp, text, st);
    if (h5tmp) {
      unlink(h5tmp);  /* no-op after a successful rename */
      rd_tmp_unregister(h5tmp);
    }
    free(text);
    rd_timing_mark(g->rank, job->name, "outputs");
    if (st->code == RD_OK && done_line)
      snprintf(done_line, done_len, "%s (%s) done in %.3f s on %d rank%s [%s] -> %s", job->name, job->kind->name,
               seconds, g->size, g->size == 1 ? "" : "s", backend_info, p->json_path);
    cJSON_Delete(res.result);
  }
  free(h5tmp);
  return rd_share_status(g, st, 0);
}
