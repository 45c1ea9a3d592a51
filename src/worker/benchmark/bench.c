/* The benchmark report kind: RewardBench v1 / v2 scores of many reward models at once (see
 * docs/reference.md, 'benchmark report'). Rank 0 checks the layout and reads the small item tables,
 * resolves the scheme against the input's subsets and broadcasts the plan; the per-item credits are
 * computed on tiles of models × item blocks spread over the ranks (backend kernel) and gathered in
 * global order; the bootstrap replicates are tasks spread over ranks; rank 0 assembles the report,
 * the output datasets and the leaderboard on stdout. The steps live beside this file
 * (bench_internal.h). */
#include <stdlib.h>
#include <string.h>

#include "bench_internal.h"

/* What a run holds between its phases. */
typedef struct bench_state {
  bench_plan p;
  bench_root r;
  bench_rows w;
  bench_eval E;
  double *credit, *g, *subset_score, *ci, *cmp;
} bench_state;

static void bench_state_free(bench_state *s) {
  bench_rows_free(&s->w);
  bench_eval_free(&s->E);
  bench_plan_free(&s->p);
  bench_root_free(&s->r);
  free(s->credit);
  free(s->g);
  free(s->ci);
  free(s->cmp);
  free(s->subset_score);
}

/* Phase 5: the evaluation tables (credits by subset, Ties parts) on the ranks that need them. */
static int bench_tables(const rd_ctx *ctx, const rd_job *job, bench_state *s, int64_t B, rd_status *st) {
  if (B > 0 || ctx->rank == 0) {
    s->E.acc_input = s->r.acc;
    if (bench_eval_init(&s->E, &s->p, job->opts, s->credit, B > 0 ? ctx : NULL, st) == RD_OK && s->p.d.n_prompts > 0)
      bench_ties_build(&s->p, s->g, &s->E.ties, st);
  }
  if (rd_agree(ctx, st) != RD_OK) return st->code;
  rd_timing_mark(ctx->rank, job->name, "evaluation tables");
  return RD_OK;
}

/* Phase 7 (rank 0): the report, the output datasets and the leaderboard. The point estimate's part
 * (the result up to the leaderboard, the output datasets) does not need the bootstrap: rank 0 builds
 * it while the other ranks take the first replicates (bench_bootstrap's `first`). */
typedef struct bench_out {
  const rd_ctx *ctx;
  const rd_job *job;
  bench_state *s;
  rd_run_out *out;
  bench_report_in in;
  bench_report_part part;
  rd_status st;  /* the first part's status */
  int begun;
} bench_out;

static void outputs_begin(void *arg) {
  bench_out *a = arg;
  a->begun = 1;
  if (bench_report_begin(&a->in, &a->part, &a->out->result, &a->s->subset_score, &a->st) == RD_OK)
    bench_write_h5(a->out->h5, &a->s->p, a->s->credit, a->s->subset_score, &a->st);
  rd_timing_mark(a->ctx->rank, a->job->name, "report (point estimate)+h5");
}

static int outputs_finish(const rd_jobfile *jf, bench_out *a, rd_status *st) {
  const rd_ctx *ctx = a->ctx;
  if (!a->begun) outputs_begin(a);
  if (a->st.code != RD_OK) *st = a->st;
  a->in.ci = a->s->ci;
  a->in.cmp = a->s->cmp;
  if (st->code == RD_OK && bench_report_finish(&a->in, &a->part, a->out->result, st) == RD_OK)
    rd_kind_summary(&rd_kind_benchmark, a->job, jf, bench_warnings(a->out->result), a->out->result, ctx->out,
                    ctx->err ? ctx->err : stderr, st);  /* summary on stdout: --quiet silences stderr only */
  rd_timing_mark(ctx->rank, a->job->name, "report+summary");
  return st->code;
}

static int bench_run(const rd_ctx *ctx, const rd_job *job, const rd_jobfile *jf, rd_run_out *out, rd_status *st) {
  const bench_opts *o = job->opts;
  bench_state s;
  memset(&s, 0, sizeof s);
  /* Phases 1-2: the plan everywhere; the rank's tiles read (or mapped) and checked. Phases 3-4:
   * credits with the backend kernel, in global order (everywhere when the bootstrap needs them).
   * Phase 6: bootstrap replicates by index, their intervals by quantity, comparisons by pair. */
  bench_out a = {.ctx = ctx, .job = job, .s = &s, .out = out};
  rd_status_init(&a.st);
  if (bench_load(ctx, job, &s.p, &s.r, &s.w, st) != RD_OK) goto done;
  int64_t B = s.p.d.accuracy_mode ? 0 : o->bootstrap;
  if (!s.p.d.accuracy_mode && bench_credits(ctx, job, &s.p, &s.w, B > 0, &s.credit, &s.g, st) != RD_OK) goto done;
  if (bench_tables(ctx, job, &s, B, st) != RD_OK) goto done;
  a.in = (bench_report_in){.p = &s.p, .o = job->opts, .E = &s.E, .credit = s.credit, .B = B, .cmp_a = s.r.cmp_a,
                           .cmp_b = s.r.cmp_b, .n_cmp = s.r.n_cmp, .missing = s.r.missing,
                           .n_missing = s.r.n_missing, .file = job->input};
  if (B > 0 && bench_bootstrap(ctx, job, jf, &s.E, &s.r, &s.ci, &s.cmp, outputs_begin, &a, st) != RD_OK) goto done;
  if (ctx->rank == 0) outputs_finish(jf, &a, st);
  rd_barrier_paced(ctx);  /* the others wait for rank 0's report without taking a core from it */
  rd_share_status(ctx, st, 0);
done:
  bench_report_part_free(&a.part);
  bench_state_free(&s);
  return st->code;
}

static const char *const bench_headlines[] = {
    "models[model].score", "comparisons[a,b].diff", NULL,
};

int bench_init(hid_t f, const char *file, const char *group, cJSON *job, FILE *note, rd_status *st);  /* bench_init.c */

const rd_kind rd_kind_benchmark = {
    .name = "benchmark",
    .default_group = "/bench",
    .summary = "RewardBench v1 / v2 (or custom scheme) scores of many reward models, with intervals and comparisons",
    .options = bench_options,
    .parse = bench_parse,
    .free_opts = bench_free_opts,
    .validate = bench_validate,
    .validated = bench_validated,
    .adopt = bench_adopt,
    .check = bench_check,
    .estimate = bench_estimate,
    .run = bench_run,
    .headlines = bench_headlines,
    .view = bench_view,
    .init = bench_init,
};
