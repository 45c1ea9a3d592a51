/* The leakage report kind (the NumLeak protocol): does a model recall published monthly series by
 * date? Rank 0 reads and checks the panel and broadcasts it; every rank builds the same cells, truth
 * joins and null tables; the work is a list of tasks spread over ranks (cells, controls, chunks of
 * bootstrap replicates and factor-shuffle draws); rank 0 assembles the report. See docs/reference.md,
 * 'leakage report'. The steps live beside this file (leak_internal.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "leak_internal.h"

/* Phase 1 (rank 0): layout, every value checked, option names resolved; then broadcast. */
static int leak_load_input(const rd_ctx *ctx, const rd_job *job, leak_data *d, rd_status *st) {
  if (ctx->rank == 0) {
    hid_t f;
    if (rd_h5_open(job->input, MPI_COMM_NULL, &f, st) == RD_OK) {
      leak_layout L;
      memset(&L, 0, sizeof L);
      if (leak_check_layout(f, job, &L, st) == RD_OK) leak_read(f, job, &L, d, st);
      rd_h5_close(f);
    }
  }
  if (rd_share_status(ctx, st, 0) != RD_OK) return st->code;
  leak_share(ctx, d);
  rd_timing_mark(ctx->rank, job->name, "read+check+broadcast");
  return RD_OK;
}

/* Phases 1-2 (collective). Phase 2 (every rank, identical): truth join, cells, the size of the
 * replicates, bootstrap rows, null tables. */
static int leak_load(const rd_ctx *ctx, const rd_job *job, const rd_jobfile *jf, leak_data *d, leak_work *w,
                     rd_status *st) {
  RD_TRY(leak_load_input(ctx, job, d, st));
  const leak_opts *o = job->opts;
  w->o = o;
  w->d = d;
  w->tol_micro = llround(o->tolerance * 1e6);
  w->backend = ctx->backend;
  rd_stream sb, sn;
  rd_stream_init(&sb, jf->seed, job->name, "leak.bootstrap");
  rd_stream_init(&sn, jf->seed, job->name, "leak.null");
  if (leak_build_truth(w, st) == RD_OK && leak_build_cells(w, st) == RD_OK && leak_size_check(w, job, st) == RD_OK &&
      leak_build_boot(w, &sb, st) == RD_OK)
    leak_build_null(w, &sn, st);
  return rd_agree(ctx, st);
}

/* Every check the report would make on the input's values, without computing it. */
static int leak_check(const rd_ctx *ctx, const rd_job *job, const rd_jobfile *jf, rd_status *st) {
  leak_data d;
  leak_work w;
  memset(&d, 0, sizeof d);
  memset(&w, 0, sizeof w);
  leak_load(ctx, job, jf, &d, &w, st);
  leak_work_free(&w);
  leak_data_free(&d);
  return st->code;
}

static int leak_run(const rd_ctx *ctx, const rd_job *job, const rd_jobfile *jf, rd_run_out *out, rd_status *st) {
  leak_data d;
  leak_work w;
  memset(&d, 0, sizeof d);
  memset(&w, 0, sizeof w);
  double *cost = NULL, **res = NULL;
  int64_t *lens = NULL, n_tasks = 0;
  rd_progress prog;
  memset(&prog, 0, sizeof prog);

  /* Phases 1-2: the panel read and checked, shared; the derived tables everywhere. */
  if (leak_load(ctx, job, jf, &d, &w, st) == RD_OK) {
    /* Phase 3: tasks over ranks (cells, controls, bootstrap chunks, null chunks). */
    leak_plan_tasks(ctx, &w, &cost, &n_tasks);
    rd_timing_mark(ctx->rank, job->name, "cells+tables");
    int64_t own = leak_own_replicates(ctx, &w, cost, n_tasks);
    rd_progress_begin(&prog, ctx->quiet || own == 0 ? NULL : ctx->err, job->name, "bootstrap+null", own);
    w.prog = &prog;
    if (rd_run_tasks(ctx, n_tasks, cost, leak_task, &w, &res, &lens, st) == RD_OK && ctx->rank == 0) {
      rd_progress_end(&prog);
      rd_timing_mark(ctx->rank, job->name, "tasks");
      if (leak_report(&w, res, lens, &out->result, st) == RD_OK && leak_write_h5(out->h5, &w, st) == RD_OK &&
          leak_write_joins(out->h5, &w, st) == RD_OK)  /* summary on stdout: --quiet silences stderr only */
        rd_kind_summary(&rd_kind_leakage, job, jf, leak_warnings(out->result), out->result, ctx->out,
                        ctx->err ? ctx->err : stderr, st);
      rd_timing_mark(ctx->rank, job->name, "report+h5");
    }
    rd_share_status(ctx, st, 0);
  }
  if (res) rd_free_task_results(res, lens, n_tasks);
  free(cost);
  leak_work_free(&w);
  leak_data_free(&d);
  return st->code;
}

static const char *const leak_headlines[] = {
    "cells[model,series,variant].parse_rate", "cells[model,series,variant].r", "cells[model,series,variant].mae",
    "cells[model,series,variant].within", "cells[model,series,variant].sign", NULL,
};

int leak_init(hid_t f, const char *file, const char *group, cJSON *job, FILE *note, rd_status *st);  /* leak_init.c */

const rd_kind rd_kind_leakage = {
    .name = "leakage",
    .default_group = "/leak",
    .summary = "recall of published monthly series by date (the NumLeak protocol): per model, series and prompt "
               "variant",
    .options = leak_options,
    .parse = leak_parse,
    .free_opts = leak_free_opts,
    .validate = leak_validate,
    .check = leak_check,
    .estimate = leak_estimate,
    .run = leak_run,
    .headlines = leak_headlines,
    .view = leak_view,
    .init = leak_init,
};
