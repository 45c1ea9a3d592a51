/* The cm report kind (counterfactual memorization of preference pairs): for each pair, TM is the
 * mean over runs that trained on the pair's user of sigma(r_chosen - r_rejected), TG the same over
 * runs that held the user out, CM = TM - TG; summaries, strata and a user-cluster bootstrap. See
 * docs/reference.md, 'cm report'. The steps live beside this file (cm_internal.h). */
#include <stdlib.h>
#include <string.h>

#include "cm_internal.h"

static int cm_run(const rd_ctx *ctx, const rd_job *job, const rd_jobfile *jf, rd_run_out *out, rd_status *st) {
  const cm_opts *o = job->opts;
  cm_input in;
  cm_values v;
  cm_task_results t;
  memset(&v, 0, sizeof v);
  memset(&t, 0, sizeof t);
  if (cm_load(ctx, job, &in, &v, st) == RD_OK && cm_pair_values(ctx, job, &in, &v, st) == RD_OK &&
      cm_run_tasks(ctx, job, jf, &in, &v, out->h5, &t, st) == RD_OK && ctx->rank == 0) {
    /* rank 0 assembles the report (the per-pair datasets were written by one of its tasks) */
    if (cm_report(job, &in.L, &in.u, v.cm, v.F, t.boot, o->bootstrap, t.res, &out->result, st) == RD_OK)
      cm_extras(ctx, job, jf, &in, &v, out, st);  /* summary on stdout: --quiet silences stderr only */
    rd_timing_mark(ctx->rank, job->name, "report+h5");
  }
  rd_share_status(ctx, st, 0);
  cm_task_results_free(&t);
  cm_values_free(&v);
  cm_input_free(&in, o->n_strata);
  return st->code;
}

static const char *const cm_headlines[] = {
    "tm.mean", "tg.mean", "cm.mean", "cm.median", "cm_negative_fraction", "user_macro.tm", "user_macro.tg",
    "user_macro.cm", "strata[covariate,bin].cm", NULL,
};

int cm_init(hid_t f, const char *file, const char *group, cJSON *job, FILE *note, rd_status *st);  /* cm_init.c */

const rd_kind rd_kind_cm = {
    .name = "cm",
    .default_group = "/cm",
    .summary = "counterfactual memorization of preference pairs (TM, TG, CM per pair, by user split)",
    .options = cm_options,
    .parse = cm_parse,
    .free_opts = cm_free_opts,
    .validate = cm_validate,
    .check = cm_check,
    .estimate = cm_estimate,
    .run = cm_run,
    .headlines = cm_headlines,
    .view = cm_view,
    .init = cm_init,
};
