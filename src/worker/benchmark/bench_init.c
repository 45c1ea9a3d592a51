/* benchmark: what `rmdiag init benchmark INPUT.h5` writes into a job (docs/reference.md, 'Commands', init): the
 * scheme the input's `source` attribute names (else the official scheme whose subsets the input has,
 * else a custom scheme of one section per subset), `allow_missing` when the input lacks subsets the
 * scheme scores, the bootstrap, and comparisons of every pair of models when there are few. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_internal.h"

/* "compare": "all" is suggested up to this many models (M (M - 1) / 2 pairs). */
#define BENCH_INIT_MAX_COMPARE 50

/* What the input holds: names, and which subsets are present (items, or a value for some model). */
typedef struct init_input {
  bench_layout L;
  bench_plan p;
  bench_root r;
  uint8_t *present;  /* [S] */
  int64_t n_present;
} init_input;

static void init_input_free(init_input *in) {
  bench_plan_free(&in->p);
  bench_root_free(&in->r);
  free(in->present);
}

static int init_read(hid_t f, const rd_job *job, init_input *in, rd_status *st) {
  bench_layout *L = &in->L;
  bench_dims *d = &in->p.d;
  RD_TRY(bench_check_layout(f, job, L, st));
  d->M = L->M;
  d->S = L->S;
  d->accuracy_mode = L->accuracy_mode;
  d->I = L->accuracy_mode ? 0 : L->I;
  d->C = L->accuracy_mode ? 0 : L->C;
  RD_TRY(bench_read_names(f, job, L, &in->p, st));
  in->p.subset_n = calloc((size_t)d->S, sizeof *in->p.subset_n);
  in->p.subset_first = calloc((size_t)d->S + 1, sizeof *in->p.subset_first);
  in->present = calloc((size_t)d->S, 1);
  if (!in->p.subset_n || !in->p.subset_first || !in->present) return rd_fail(st, RD_EFAIL, "out of memory");
  if (d->accuracy_mode) RD_TRY(bench_read_accuracies(f, job, L, &in->p, &in->r, st));
  else RD_TRY(bench_read_items(f, job, L, &in->p, st));
  for (int64_t s = 0; s < d->S; s++) {
    int has = in->p.subset_n[s] > 0;
    for (int64_t m = 0; d->accuracy_mode && m < d->M && !has; m++) has = !isnan(in->r.acc[m * d->S + s]);
    in->present[s] = (uint8_t)has;
    in->n_present += has;
  }
  return RD_OK;
}

/* Whether every present subset is one the official scheme knows (the run refuses others). */
static int scheme_fits(const init_input *in, int scheme, const char **unknown) {
  bench_opts o = {.scheme = scheme};
  for (int64_t s = 0; s < in->p.d.S; s++)
    if (in->present[s] && !bench_known_subset(&o, bench_subset_name(&in->p, s))) {
      *unknown = bench_subset_name(&in->p, s);
      return 0;
    }
  return 1;
}

/* The official scheme to use (BENCH_V1, BENCH_V2), or BENCH_CUSTOM; a note says why. */
static int choose_scheme(hid_t f, const char *group, const init_input *in, FILE *note) {
  char source[64] = "";
  const char *unknown = NULL;
  rd_h5_read_attr_string(f, group, "source", source, sizeof source);
  int named = strcmp(source, "rewardbench") == 0 ? BENCH_V1 : strcmp(source, "rewardbench2") == 0 ? BENCH_V2 : -1;
  if (named >= 0) {
    const char *sch = named == BENCH_V1 ? "rewardbench-v1" : "rewardbench-v2";
    if (scheme_fits(in, named, &unknown)) {
      if (note) fprintf(note, "rmdiag init: scheme \"%s\" (the input's source attribute is \"%s\")\n", sch, source);
      return named;
    }
    if (note)
      fprintf(note, "rmdiag init: the input's source attribute is \"%s\" but subset \"%s\" is not one of %s: a "
              "custom scheme of one section per subset instead\n", source, unknown, sch);
    return BENCH_CUSTOM;
  }
  for (int scheme = BENCH_V2; scheme >= BENCH_V1; scheme--)
    if (scheme_fits(in, scheme, &unknown)) {
      if (note)
        fprintf(note, "rmdiag init: scheme \"%s\" (no source attribute; every subset of the input is one of its "
                "subsets)\n", scheme == BENCH_V1 ? "rewardbench-v1" : "rewardbench-v2");
      return scheme;
    }
  if (note)
    fprintf(note, "rmdiag init: a custom scheme of one section per subset, weight 1, item rule \"strict\" (no "
            "source attribute, and subset \"%s\" belongs to no RewardBench scheme); edit its sections\n", unknown);
  return BENCH_CUSTOM;
}

/* {"sections": {SUBSET: {SUBSET: 1}, ...}, "item_rule": "strict"} over the present subsets. */
static cJSON *custom_scheme(const init_input *in) {
  cJSON *sch = cJSON_CreateObject(), *secs = cJSON_AddObjectToObject(sch, "sections");
  for (int64_t s = 0; s < in->p.d.S; s++) {
    if (!in->present[s]) continue;
    cJSON *sec = cJSON_AddObjectToObject(secs, bench_subset_name(&in->p, s));
    cJSON_AddNumberToObject(sec, bench_subset_name(&in->p, s), 1);
  }
  cJSON_AddStringToObject(sch, "item_rule", "strict");
  return sch;
}

static int present_index(const init_input *in, const char *name) {
  for (int64_t s = 0; s < in->p.d.S; s++)
    if (in->present[s] && strcmp(bench_subset_name(&in->p, s), name) == 0) return (int)s;
  return -1;
}

/* Whether an official scheme needs "allow_missing": a subset it scores is absent, or (accuracy form)
 * some model lacks a value for one that is present. The notes name them. */
static int needs_allow_missing(const init_input *in, const char *scheme, FILE *note, rd_status *st) {
  bench_opts o;
  memset(&o, 0, sizeof o);
  cJSON *spec = cJSON_CreateObject();
  cJSON_AddStringToObject(spec, "scheme", scheme);
  rd_where w = {.file = "init"};
  snprintf(w.path, sizeof w.path, "init");
  cJSON *eff = cJSON_CreateObject();
  int rc = rd_options_parse(bench_options, spec, &o, eff, &w, st);
  cJSON_Delete(spec);
  cJSON_Delete(eff);
  RD_TRY(rc);
  int need = 0;
  for (int k = 0; k < o.n_sections; k++)
    for (int j = 0; j < o.sections[k].n; j++) {
      const char *name = o.sections[k].subsets[j];
      int s = present_index(in, name);
      if (s < 0) {
        if (note) fprintf(note, "rmdiag init: subset \"%s\" (section \"%s\") is absent from the input\n", name,
                          o.sections[k].name);
        need = 1;
        continue;
      }
      for (int64_t m = 0; in->p.d.accuracy_mode && m < in->p.d.M; m++)
        if (isnan(in->r.acc[m * in->p.d.S + s])) {
          if (note) fprintf(note, "rmdiag init: model \"%s\" has no value for subset \"%s\"\n",
                            bench_model_name(&in->p, m), name);
          need = 1;
        }
    }
  if (need && note)
    fprintf(note, "rmdiag init: \"allow_missing\": true (sections re-weighted over the subsets present); delete it "
            "to make a missing subset an error\n");
  return need;
}

int bench_init(hid_t f, const char *file, const char *group, cJSON *job, FILE *note, rd_status *st) {
  rd_job stub = rd_job_for_input(file, group);
  init_input in;
  memset(&in, 0, sizeof in);
  if (init_read(f, &stub, &in, st) != RD_OK) {
    init_input_free(&in);
    return st->code;
  }
  if (in.n_present == 0) {
    init_input_free(&in);
    return rd_fail(st, RD_EINPUT, "%s: no subset of %s/subset_names has an item or a value; nothing to score", file,
                   group);
  }
  int scheme = choose_scheme(f, group, &in, note);
  if (scheme == BENCH_CUSTOM) {
    cJSON_AddItemToObject(job, "scheme", custom_scheme(&in));
  } else {
    const char *name = scheme == BENCH_V1 ? "rewardbench-v1" : "rewardbench-v2";
    cJSON_AddStringToObject(job, "scheme", name);
    int need = needs_allow_missing(&in, name, note, st);
    if (st->code == RD_OK && need) cJSON_AddTrueToObject(job, "allow_missing");
  }
  int64_t M = in.p.d.M;
  if (!in.p.d.accuracy_mode) cJSON_AddNumberToObject(job, "bootstrap", 1000);
  if (M >= 2 && M <= BENCH_INIT_MAX_COMPARE) {
    cJSON_AddStringToObject(job, "compare", "all");
    if (note) fprintf(note, "rmdiag init: \"compare\": \"all\" (%lld pairs of %lld models)\n",
                      (long long)(M * (M - 1) / 2), (long long)M);
  } else if (M > BENCH_INIT_MAX_COMPARE && note) {
    fprintf(note, "rmdiag init: %lld models: no \"compare\" (list the pairs you want to compare)\n", (long long)M);
  }
  init_input_free(&in);
  return st->code;
}
