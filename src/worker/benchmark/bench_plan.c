/* benchmark: the plan. Rank 0 checks the layout, reads the item tables and resolves the scheme
 * against the input's subsets (sections, missing subsets, the Ties prompts, comparisons by model
 * name); every rank then receives the plan in one broadcast. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_internal.h"

void bench_plan_free(bench_plan *p) {
  free(p->item_subset);
  free(p->item_offset);
  free(p->n_correct);
  free(p->subset_n);
  free(p->subset_first);
  free(p->subset_items);
  free(p->names);
  free(p->name_off);
  free(p->sec_first);
  free(p->ent_subset);
  free(p->ent_weight);
  free(p->sec_score_w);
  free(p->resampled);
  free(p->prompt_ref);
  free(p->prompt_tied);
  free(p->prompt_number);
  memset(p, 0, sizeof *p);
}

void bench_root_free(bench_root *r) {
  free(r->acc);
  free(r->cmp_a);
  free(r->cmp_b);
  free(r->missing);
  memset(r, 0, sizeof *r);
}

/* The scalars of the plan from the layout (nothing resolved yet). */
static void plan_dims(const bench_opts *o, const bench_layout *L, bench_dims *d) {
  d->scores_off = d->given_off = -1;
  d->ties_subset = -1;
  d->prior_sec = -1;
  d->rule = (int32_t)o->rule;
  d->M = L->M;
  d->S = L->S;
  d->accuracy_mode = L->accuracy_mode;
  if (L->accuracy_mode) return;
  d->I = L->I;
  d->C = L->C;
  d->scores_ds = L->scores;
  d->ftype = L->scores.tsize == 4 ? RD_F32 : RD_F64;
  d->has_given = L->has_given;
  if (L->has_given) d->given_ds = L->given;
}

/* With an official scheme, every subset present must be one it knows. */
static int check_known_subsets(const rd_job *job, const bench_layout *L, const bench_plan *p, rd_status *st) {
  const bench_opts *o = job->opts;
  const bench_dims *d = &p->d;
  if (o->scheme == BENCH_CUSTOM) return RD_OK;
  for (int64_t s = 0; s < d->S; s++) {
    if (p->subset_n[s] == 0 || bench_known_subset(o, bench_subset_name(p, s))) continue;
    const char *sch = o->scheme == BENCH_V1 ? "rewardbench-v1" : "rewardbench-v2";
    /* the input says which version it is: name the scheme that fits it */
    char why[300] = "a misspelt name, or files of another RewardBench version?";
    int other = o->scheme == BENCH_V1 ? 2 : 1;
    if (o->source == other)
      snprintf(why, sizeof why, "the input's source attribute says %s: use \"scheme\": \"%s\", or leave \"scheme\" "
               "out to take it from the input", other == 2 ? "rewardbench2" : "rewardbench",
               other == 2 ? "rewardbench-v2" : "rewardbench-v1");
    if (d->accuracy_mode)
      return rd_fail(st, RD_EINPUT, "%s: %s[%lld] = \"%s\" is not a subset of scheme %s (%s)", job->input,
                     L->subset_names.path, (long long)s, bench_subset_name(p, s), sch, why);
    int64_t first = p->subset_items[p->subset_first[s]];
    return rd_fail(st, RD_EINPUT, "%s: %s[%lld] = %lld names subset \"%s\", which is not a subset of scheme %s (%s)",
                   job->input, L->item_subset.path, (long long)first, (long long)s, bench_subset_name(p, s), sch, why);
  }
  return RD_OK;
}

/* Index of the subset named `name` that has items (or values), else -1. */
static int32_t present_subset(const bench_plan *p, const char *name) {
  int32_t idx = -1;
  for (int64_t s = 0; s < p->d.S; s++)
    if (strcmp(bench_subset_name(p, s), name) == 0) idx = (int32_t)s;
  return idx >= 0 && p->subset_n[idx] == 0 ? -1 : idx;  /* named but without items */
}

static int alloc_sections(bench_plan *p, bench_root *r, rd_status *st) {
  const bench_dims *d = &p->d;
  p->sec_first = malloc(sizeof(int64_t) * (size_t)(d->n_sec + 1));
  p->ent_subset = malloc(sizeof(int32_t) * (size_t)d->n_entries);
  p->ent_weight = malloc(sizeof(double) * (size_t)d->n_entries);
  p->sec_score_w = malloc(sizeof(double) * (size_t)d->n_sec);
  p->resampled = calloc((size_t)d->S, 1);
  r->missing = calloc((size_t)d->n_entries, sizeof *r->missing);
  if (!p->sec_first || !p->ent_subset || !p->ent_weight || !p->sec_score_w || !p->resampled || !r->missing)
    return rd_fail(st, RD_EFAIL, "out of memory");
  return RD_OK;
}

/* The scheme's sections as (subset, weight) entries against the input's subsets (Prior Sets last
 * when on); subsets a section names but the input lacks are errors unless "allow_missing". */
static int resolve_sections(const rd_job *job, const bench_layout *L, bench_plan *p, bench_root *r, rd_status *st) {
  const bench_opts *o = job->opts;
  bench_dims *d = &p->d;
  d->n_sec = o->n_sections + (o->prior_sets ? 1 : 0);
  d->n_entries = 0;
  for (int k = 0; k < d->n_sec; k++) d->n_entries += k < o->n_sections ? o->sections[k].n : bench_prior_sets.n;
  RD_TRY(alloc_sections(p, r, st));
  int64_t e = 0;
  for (int k = 0; k < d->n_sec; k++) {
    const bench_section *b = k < o->n_sections ? &o->sections[k] : &bench_prior_sets;
    int is_prior = k >= o->n_sections;
    p->sec_first[k] = e;
    /* the old leaderboard: the four sections weigh 2 and Prior Sets 1 in the score */
    p->sec_score_w[k] = o->prior_sets ? (is_prior ? 1.0 : 2.0) : 1.0;
    for (int j = 0; j < b->n; j++, e++) {
      int32_t idx = present_subset(p, b->subsets[j]);
      p->ent_subset[e] = idx;
      p->ent_weight[e] = b->weights[j];
      if (idx >= 0) {
        p->resampled[idx] = 1;
        continue;
      }
      if (is_prior) continue;  /* prior sets are optional */
      if (!o->allow_missing)
        return rd_fail(st, RD_EINPUT, "%s: subset \"%s\" (section \"%s\" of the scheme) is absent from the input "
                       "(%s%s); expected every subset the scheme names, or set \"allow_missing\": true to re-weight "
                       "the section over the subsets present", job->input, b->subsets[j], b->name,
                       L->subset_names.path, d->accuracy_mode ? "" : " and item_subset");
      int dup = 0;
      for (int q = 0; q < r->n_missing; q++) dup |= strcmp(r->missing[q], b->subsets[j]) == 0;
      if (!dup) r->missing[r->n_missing++] = b->subsets[j];
    }
    if (is_prior) d->prior_sec = k;
  }
  p->sec_first[d->n_sec] = e;
  return RD_OK;
}

/* Accuracy form without "allow_missing": no model may lack a value for a scored subset that is
 * present (Prior Sets excepted). */
static int check_accuracy_gaps(const rd_job *job, const bench_layout *L, const bench_plan *p, const bench_root *r,
                               rd_status *st) {
  const bench_opts *o = job->opts;
  const bench_dims *d = &p->d;
  if (!d->accuracy_mode || o->allow_missing) return RD_OK;
  for (int64_t m = 0; m < d->M; m++)
    for (int64_t q = 0; q < d->n_entries; q++) {
      int32_t s = p->ent_subset[q];
      if (s < 0 || (d->prior_sec >= 0 && q >= p->sec_first[d->prior_sec])) continue;
      if (isnan(r->acc[m * d->S + s]))
        return rd_fail(st, RD_EINPUT, "%s: %s[%lld, %lld] is NaN: model \"%s\" has no value for subset \"%s\", which "
                       "the scheme scores; expected a value, or set \"allow_missing\": true", job->input,
                       L->accuracy.path, (long long)m, (long long)s, bench_model_name(p, m), bench_subset_name(p, s));
    }
  return RD_OK;
}

/* The Ties subset, when the scheme has one and the input has its items: prompts from the item ids. */
static int resolve_ties(hid_t f, const rd_job *job, bench_plan *p, rd_status *st) {
  const bench_opts *o = job->opts;
  bench_dims *d = &p->d;
  if (!o->ties_subset) return RD_OK;
  for (int64_t s = 0; s < d->S; s++)
    if (p->subset_n[s] > 0 && strcmp(bench_subset_name(p, s), o->ties_subset) == 0) d->ties_subset = (int32_t)s;
  if (d->ties_subset < 0 || d->accuracy_mode) return RD_OK;
  rd_dsinfo ids;
  int has_ids = 0;
  RD_TRY(bench_check_item_ids(f, job, &ids, &has_ids, st));
  return bench_read_ties(f, job, has_ids ? &ids : NULL, p, st);
}

/* The replicates must fit the exchanges' int counts. */
static int check_bootstrap_size(const rd_job *job, const bench_dims *d, rd_status *st) {
  const bench_opts *o = job->opts;
  if (!d->accuracy_mode && (double)d->M * (double)(d->n_sec + 1) * (double)(o->bootstrap + 1) * 8.0 >= (double)INT_MAX)
    return rd_fail(st, RD_EINPUT, "%s: \"bootstrap\": %lld resamples of %lld models x %d sections is more than 2^28 "
                   "replicate values (not supported); use fewer resamples", job->where.path, (long long)o->bootstrap,
                   (long long)d->M, (int)d->n_sec + 1);
  return RD_OK;
}

/* Comparisons by model index: every pair in input order, or the listed pairs by name. */
static int resolve_comparisons(const rd_job *job, const bench_layout *L, const bench_plan *p, bench_root *r,
                               rd_status *st) {
  const bench_opts *o = job->opts;
  int M = (int)p->d.M;
  int n_cmp = o->compare_all ? M * (M - 1) / 2 : o->n_pairs;
  if (o->compare_all && p->d.M > 20000)
    return rd_fail(st, RD_EINPUT, "%s: \"compare\": \"all\" with %d models is too many pairs; list the pairs",
                   job->where.path, M);
  r->cmp_a = malloc(sizeof(int) * (size_t)(n_cmp ? n_cmp : 1));
  r->cmp_b = malloc(sizeof(int) * (size_t)(n_cmp ? n_cmp : 1));
  if (!r->cmp_a || !r->cmp_b) return rd_fail(st, RD_EFAIL, "out of memory");
  if (o->compare_all) {
    int k = 0;
    for (int a = 0; a < M; a++)
      for (int b = a + 1; b < M; b++, k++) {
        r->cmp_a[k] = a;
        r->cmp_b[k] = b;
      }
  } else {
    for (int k = 0; k < n_cmp; k++) {
      const char *nm[2] = {o->pair_a[k], o->pair_b[k]};
      int *dst[2] = {&r->cmp_a[k], &r->cmp_b[k]};
      for (int h = 0; h < 2; h++) {
        *dst[h] = -1;
        for (int m = 0; m < M; m++)
          if (strcmp(bench_model_name(p, m), nm[h]) == 0) *dst[h] = m;
        if (*dst[h] < 0)
          return rd_fail(st, RD_EINPUT, "%s: \"compare\"[%d]: model \"%s\" is not in %s: %s", job->where.path, k,
                         nm[h], job->input, L->model_names.path);
      }
    }
  }
  r->n_cmp = n_cmp;
  return RD_OK;
}

int bench_prepare(hid_t f, const rd_job *job, bench_plan *p, bench_root *r, rd_status *st) {
  bench_layout L;
  bench_dims *d = &p->d;
  RD_TRY(bench_check_layout(f, job, &L, st));
  plan_dims(job->opts, &L, d);
  RD_TRY(bench_read_names(f, job, &L, p, st));
  p->subset_n = calloc((size_t)d->S, sizeof *p->subset_n);
  p->subset_first = calloc((size_t)d->S + 1, sizeof *p->subset_first);
  if (!p->subset_n || !p->subset_first) return rd_fail(st, RD_EFAIL, "out of memory");
  if (d->accuracy_mode) {
    RD_TRY(bench_read_accuracies(f, job, &L, p, r, st));
  } else {
    RD_TRY(bench_read_items(f, job, &L, p, st));
    /* a contiguous dataset in its memory type can be mapped instead of read */
    rd_h5_contig_offset(f, &d->scores_ds, d->ftype == RD_F32 ? H5T_NATIVE_FLOAT : H5T_NATIVE_DOUBLE, &d->scores_off);
    if (d->has_given) rd_h5_contig_offset(f, &d->given_ds, H5T_NATIVE_DOUBLE, &d->given_off);
  }
  RD_TRY(check_known_subsets(job, &L, p, st));
  RD_TRY(resolve_sections(job, &L, p, r, st));
  RD_TRY(check_accuracy_gaps(job, &L, p, r, st));
  RD_TRY(resolve_ties(f, job, p, st));
  RD_TRY(check_bootstrap_size(job, d, st));
  return resolve_comparisons(job, &L, p, r, st);
}

/* Rank 0 reads the input's source attribute (a job without "scheme" takes the scheme it names: the
 * options change on every rank before the spec is hashed) and checks the layout and tables. */
int bench_validate(const rd_ctx *ctx, const rd_job *job, const rd_jobfile *jf, rd_status *st) {
  (void)jf;
  if (ctx->rank == 0) {
    hid_t f;
    if (rd_h5_open(job->input, MPI_COMM_NULL, &f, st) == RD_OK) {
      bench_plan p;
      bench_root r;
      memset(&p, 0, sizeof p);
      memset(&r, 0, sizeof r);
      if (bench_scheme_from_source(job->opts, job->effective, bench_read_source(f, job->group), job, st) == RD_OK)
        bench_prepare(f, job, &p, &r, st);
      bench_plan_free(&p);
      bench_root_free(&r);
      rd_h5_close(f);
    }
  }
  return rd_share_status(ctx, st, 0);
}

int64_t bench_validated(const rd_job *job) { return ((const bench_opts *)job->opts)->source; }

void bench_adopt(const rd_job *job, int64_t source) {
  rd_status ignored;  /* the rank that validated the job made the same check */
  rd_status_init(&ignored);
  bench_scheme_from_source(job->opts, job->effective, (int)source, job, &ignored);
}

void bench_plan_share(const rd_ctx *ctx, bench_plan *p) {
  rd_bcast_bytes(ctx, &p->d, sizeof p->d, 0);
  const bench_dims *d = &p->d;
  int64_t I = d->accuracy_mode ? 0 : d->I, P = d->n_prompts;
  /* every table in one broadcast (each one a synchronisation point less) */
  struct {
    void **field;
    size_t bytes;
  } t[] = {
      {(void **)&p->names, (size_t)d->names_len},
      {(void **)&p->name_off, sizeof(int64_t) * (size_t)(d->S + d->M)},
      {(void **)&p->subset_n, sizeof(int64_t) * (size_t)d->S},
      {(void **)&p->subset_first, sizeof(int64_t) * (size_t)(d->S + 1)},
      {(void **)&p->sec_first, sizeof(int64_t) * (size_t)(d->n_sec + 1)},
      {(void **)&p->ent_subset, sizeof(int32_t) * (size_t)d->n_entries},
      {(void **)&p->ent_weight, sizeof(double) * (size_t)d->n_entries},
      {(void **)&p->sec_score_w, sizeof(double) * (size_t)d->n_sec},
      {(void **)&p->resampled, (size_t)d->S},
      {(void **)&p->item_subset, sizeof(int32_t) * (size_t)I},
      {(void **)&p->item_offset, I > 0 ? sizeof(int64_t) * (size_t)(I + 1) : 0},
      {(void **)&p->n_correct, sizeof(int32_t) * (size_t)I},
      {(void **)&p->subset_items, sizeof(int64_t) * (size_t)I},
      {(void **)&p->prompt_ref, sizeof(int64_t) * (size_t)P},
      {(void **)&p->prompt_tied, sizeof(int64_t) * (size_t)P},
      {(void **)&p->prompt_number, sizeof(int64_t) * (size_t)P},
  };
  size_t n = sizeof t / sizeof t[0], total = 0;
  for (size_t k = 0; k < n; k++) total += (t[k].bytes + 7) / 8 * 8;
  char *buf = malloc(total + 8);
  if (!buf) rd_abort(ctx, __FILE__, __LINE__, "out of memory for the benchmark plan");
  for (size_t k = 0, pos = 0; ctx->rank == 0 && k < n; k++) {
    if (t[k].bytes) memcpy(buf + pos, *t[k].field, t[k].bytes);
    pos += (t[k].bytes + 7) / 8 * 8;
  }
  rd_bcast_bytes(ctx, buf, total, 0);
  for (size_t k = 0, pos = 0; ctx->rank != 0 && k < n; k++) {
    if (!(*t[k].field = malloc(t[k].bytes ? t[k].bytes : 1)))
      rd_abort(ctx, __FILE__, __LINE__, "out of memory for the benchmark plan");
    if (t[k].bytes) memcpy(*t[k].field, buf + pos, t[k].bytes);
    pos += (t[k].bytes + 7) / 8 * 8;
  }
  free(buf);
}
