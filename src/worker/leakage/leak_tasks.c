/* leakage: the work as a list of tasks spread over ranks (rd_run_tasks): one per cell, one per control,
 * then chunks of bootstrap replicates and of factor-shuffle draws, each computed whole by one rank; the
 * size limit on what rank 0 can gather; each task's cost, for the assignment. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "leak_internal.h"

/* ---- the size limit ---------------------------------------------------------------------------------- */

/* Every task's results are gathered on rank 0 in one message counted in int (rd_run_tasks): at most
 * INT32_MAX doubles, task lengths included. The results other than the replicates are bounded by their
 * sizes (per cell: pooled, holdout and entropy values, plus one metrics row per seed, at most one per
 * row; per control: a row per model, (model, series), (defense, model) or defense), and the chunk
 * headers (at most 16 per rank) by the margin under INT32_MAX, so the check does not depend on the
 * rank count. */
#define LEAK_MAX_RESULTS 2000000000.0

/* Cells with a scored row (*nb) and null target cells (*nt). */
static void count_replicated(const leak_work *w, int64_t *nb, int64_t *nt) {
  const leak_data *d = w->d;
  *nb = *nt = 0;
  for (int64_t c = 0; c < w->C; c++) {
    int scored = 0;
    for (int64_t j = w->cell_off[c]; j < w->cell_off[c + 1] && !scored; j++)
      scored = leak_scored(w, w->cell_rows[j]);
    *nb += scored;
    int64_t m, s, v;
    leak_cell_parts(w, c, &m, &s, &v);
    for (int q = 0; q < d->n_family; q++) *nt += d->family[q] == s;
  }
  if (d->n_family < 2 || w->o->null_permutations == 0) *nt = 0;
}

/* Refuses, before any replicate is drawn, a job whose bootstrap replicates (2 values per resample and
 * cell with a scored row) and null draws (1 per permutation and target cell) could not be gathered. */
int leak_size_check(const leak_work *w, const rd_job *job, rd_status *st) {
  const leak_data *d = w->d;
  const leak_opts *o = w->o;
  int64_t nb, nt;
  count_replicated(w, &nb, &nt);
  double boot = 2.0 * (double)nb * (double)o->bootstrap, null = (double)nt * (double)o->null_permutations;
  double other = (MT_N + 1.0) * (double)d->Q + (4.0 * MT_N + 8.0) * (double)w->C + 16.0 * (double)d->M +
                 12.0 * (double)d->R + 21.0 * (double)d->D + CTL_N + 2.0;
  if (boot + null + other <= LEAK_MAX_RESULTS) return RD_OK;
  return rd_fail(st, RD_EINPUT, "%s: \"%s\" = %lld is too large for this input: %lld resamples x %lld cells with scored "
                 "rows x 2 values + %lld permutations x %lld null target cells = %.0f replicate values, more than the "
                 "%.0f that can be gathered; use fewer resamples or permutations", job->where.path,
                 boot >= null ? "bootstrap" : "null_permutations",
                 (long long)(boot >= null ? o->bootstrap : o->null_permutations), (long long)o->bootstrap,
                 (long long)nb, (long long)o->null_permutations, (long long)nt, boot + null, LEAK_MAX_RESULTS);
}

/* ---- chunks and costs ---------------------------------------------------------------------------------- */

/* Cuts `nseg` segments of `per` units each (unit cost off[i+1] - off[i] + 1 in segment i) into at most
 * `nch` chunks of about equal cost; bounds[0..n] are flat unit indices. Returns the number of chunks
 * (-1 when memory runs out). */
static int64_t cut_chunks(int64_t nseg, const int64_t *off, int64_t per, int64_t nch, int64_t **bounds_out) {
  int64_t units = nseg * per;
  if (units == 0 || nch <= 0) {
    *bounds_out = NULL;
    return 0;
  }
  if (nch > units) nch = units;
  double total = 0;
  for (int64_t i = 0; i < nseg; i++) total += (double)(off[i + 1] - off[i] + 1) * (double)per;
  int64_t *b = malloc(sizeof(int64_t) * (size_t)(nch + 1));
  if (!b) return -1;
  int64_t n = 0;
  b[n++] = 0;
  double cum = 0;
  int64_t seg = 0;
  for (int64_t c = 1; c < nch; c++) {
    double target = total * (double)c / (double)nch;
    while (seg < nseg && cum + (double)(off[seg + 1] - off[seg] + 1) * (double)per <= target) {
      cum += (double)(off[seg + 1] - off[seg] + 1) * (double)per;
      seg++;
    }
    if (seg >= nseg) break;
    double wu = (double)(off[seg + 1] - off[seg] + 1);
    int64_t inside = (int64_t)ceil((target - cum) / wu);
    if (inside > per) inside = per;
    int64_t k = seg * per + inside;
    if (k > b[n - 1] && k < units) b[n++] = k;
  }
  b[n] = units;
  *bounds_out = b;
  return n;
}

/* One chunk per segment of `per` units: bounds i * per. */
static int64_t whole_chunks(int64_t nseg, int64_t per, int64_t **bounds_out) {
  if (nseg * per == 0) {
    *bounds_out = NULL;
    return 0;
  }
  int64_t *b = malloc(sizeof(int64_t) * (size_t)(nseg + 1));
  if (!b) return -1;
  for (int64_t i = 0; i <= nseg; i++) b[i] = i * per;
  *bounds_out = b;
  return nseg;
}

/* The work of the flat units [k0, k1) of segments of `per` units: units times their segment's weight. */
static double chunk_units(const int64_t *off, int64_t per, int64_t k0, int64_t k1) {
  double units = 0;
  for (int64_t k = k0; k < k1;) {
    int64_t seg = k / per, end = (seg + 1) * per;
    if (end > k1) end = k1;
    units += (double)(end - k) * (double)(off[seg + 1] - off[seg] + 1);
    k = end;
  }
  return units;
}

void leak_plan_tasks(const rd_ctx *ctx, leak_work *w, double **cost_out, int64_t *n_tasks) {
  const leak_data *d = w->d;
  const leak_opts *o = w->o;
  int64_t nch = LEAK_CHUNKS_PER_RANK * (int64_t)ctx->size;
  /* with at least nch cells (targets) the ranks balance whole ones: each task then reduces its cell's
   * replicates (draws) to what the report needs, and rank 0 gathers a few numbers per cell */
  w->boot_whole = w->NB >= nch;
  w->null_whole = w->NT >= nch;
  w->n_boot_chunks = o->bootstrap == 0 ? 0
                     : w->boot_whole ? whole_chunks(w->NB, o->bootstrap, &w->boot_bounds)
                                     : cut_chunks(w->NB, w->boot_off, o->bootstrap, nch, &w->boot_bounds);
  w->n_null_chunks = w->null_whole ? whole_chunks(w->NT, o->null_permutations, &w->null_bounds)
                                   : cut_chunks(w->NT, w->null_off, o->null_permutations, nch, &w->null_bounds);
  if (w->n_boot_chunks < 0 || w->n_null_chunks < 0) rd_abort(ctx, __FILE__, __LINE__, "out of memory for chunks");
  int64_t n = *n_tasks = w->C + CTL_N + w->n_boot_chunks + w->n_null_chunks;
  double *cost = *cost_out = malloc(sizeof(double) * (size_t)(n ? n : 1));
  if (!cost) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  for (int64_t c = 0; c < w->C; c++) cost[c] = 2e-8 * (double)(w->cell_off[c + 1] - w->cell_off[c]);
  cost[w->C + CTL_FICTIONAL] = 1e-8 * (double)d->Q;
  cost[w->C + CTL_RANKING] = 5e-8 * (double)d->R;
  cost[w->C + CTL_RESIDUAL] = 1e-8 * (double)d->G * (double)(d->M ? d->M : 1);
  cost[w->C + CTL_DEFENSE] = 5e-8 * (double)d->D;
  double *boot_cost = cost + w->C + CTL_N, *null_cost = boot_cost + w->n_boot_chunks;
  for (int64_t ch = 0; ch < w->n_boot_chunks; ch++)
    boot_cost[ch] = 1.2e-9 * chunk_units(w->boot_off, o->bootstrap, w->boot_bounds[ch], w->boot_bounds[ch + 1]);
  for (int64_t ch = 0; ch < w->n_null_chunks; ch++)
    null_cost[ch] = 0.6e-9 * chunk_units(w->null_off, o->null_permutations, w->null_bounds[ch], w->null_bounds[ch + 1]);
}

int64_t leak_own_replicates(const rd_ctx *ctx, const leak_work *w, const double *cost, int64_t n_tasks) {
  int *owner = malloc(sizeof(int) * (size_t)(n_tasks ? n_tasks : 1));
  if (!owner) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  rd_assign_tasks(n_tasks, cost, ctx->size, owner);
  int64_t own = 0;
  for (int64_t k = w->C + CTL_N; k < n_tasks; k++) {
    if (owner[k] != ctx->rank) continue;
    int64_t ch = k - w->C - CTL_N;
    own += ch < w->n_boot_chunks ? w->boot_bounds[ch + 1] - w->boot_bounds[ch]
                                 : w->null_bounds[ch - w->n_boot_chunks + 1] - w->null_bounds[ch - w->n_boot_chunks];
  }
  free(owner);
  return own;
}

/* ---- the tasks ------------------------------------------------------------------------------------------- */

/* Bootstrap chunk ch: the r of each replicate, then its mae. */
static int boot_chunk(leak_work *w, int64_t ch, double **out, int64_t *n_out, rd_status *st) {
  int64_t k0 = w->boot_bounds[ch], k1 = w->boot_bounds[ch + 1];
  double *r = malloc(sizeof(double) * (size_t)(2 * (k1 - k0)));
  if (!r) return rd_fail(st, RD_EFAIL, "out of memory for bootstrap replicates");
  const rd_backend *kb = RD_BACKEND_FOR(w->backend, leak, bootstrap);
  char err[512] = "";
  if (kb->leak->bootstrap(&w->boot, k0, k1, r, r + (k1 - k0), err, sizeof err) != 0) {
    free(r);
    return rd_fail(st, RD_EFAIL, "%s backend failed in the leakage bootstrap kernel: %s", kb->name, err);
  }
  if (w->prog) rd_progress_update(w->prog, w->prog_done += k1 - k0);
  *out = r;
  *n_out = 2 * (k1 - k0);
  if (w->boot_whole) {  /* one boot cell */
    double red[LEAK_BOOT_W];
    leak_boot_reduce(r, r + (k1 - k0), k1 - k0, red);
    memcpy(r, red, sizeof red);
    *n_out = LEAK_BOOT_W;
  }
  return RD_OK;
}

/* Null chunk ch: each draw's value, the fraction of its used months that are within; NaN (dropped)
 * when it used none. */
static int null_chunk(leak_work *w, int64_t ch, double **out, int64_t *n_out, rd_status *st) {
  int64_t k0 = w->null_bounds[ch], k1 = w->null_bounds[ch + 1];
  int32_t *u = malloc(sizeof(int32_t) * (size_t)(2 * (k1 - k0)));
  double *r = malloc(sizeof(double) * (size_t)(k1 - k0));
  if (!u || !r) {
    free(u), free(r);
    return rd_fail(st, RD_EFAIL, "out of memory for null draws");
  }
  const rd_backend *kb = RD_BACKEND_FOR(w->backend, leak, null_draws);
  char err[512] = "";
  if (kb->leak->null_draws(&w->null, k0, k1, u, u + (k1 - k0), err, sizeof err) != 0) {
    free(u), free(r);
    return rd_fail(st, RD_EFAIL, "%s backend failed in the leakage null kernel: %s", kb->name, err);
  }
  for (int64_t k = 0; k < k1 - k0; k++) r[k] = u[k] > 0 ? (double)u[k1 - k0 + k] / (double)u[k] : NAN;
  free(u);
  if (w->prog) rd_progress_update(w->prog, w->prog_done += k1 - k0);
  *out = r;
  *n_out = k1 - k0;
  if (w->null_whole) {  /* one target */
    double red[LEAK_NULL_W];
    leak_null_reduce(r, k1 - k0, red);
    memcpy(r, red, sizeof red);
    *n_out = LEAK_NULL_W;
  }
  return RD_OK;
}

/* A cell or a control (an absent control's result is empty). */
static int vector_task(const leak_work *w, int64_t t, double **out, int64_t *n_out, rd_status *st) {
  leak_dvec v = {0};
  int rc = 0;
  if (t < w->C) rc = leak_task_cell(w, t, &v);
  else if (t - w->C == CTL_FICTIONAL && w->d->has_fictional) rc = leak_task_fictional(w, &v);
  else if (t - w->C == CTL_RANKING && w->d->has_rank) rc = leak_task_ranking(w, &v);
  else if (t - w->C == CTL_RESIDUAL && w->d->has_signal) rc = leak_task_residual(w, &v);
  else if (t - w->C == CTL_DEFENSE && w->d->has_defense) rc = leak_task_defense(w, &v);
  if (rc != 0) {
    free(v.v);
    return rd_fail(st, RD_EFAIL, "out of memory computing the leakage report");
  }
  *out = v.v;
  *n_out = v.n;
  return RD_OK;
}

int leak_task(int64_t task, void *arg, double **out, int64_t *n_out, rd_status *st) {
  leak_work *w = arg;
  int64_t t = task;
  if (t < w->C + CTL_N) return vector_task(w, t, out, n_out, st);
  t -= w->C + CTL_N;
  if (t < w->n_boot_chunks) return boot_chunk(w, t, out, n_out, st);
  return null_chunk(w, t - w->n_boot_chunks, out, n_out, st);
}
