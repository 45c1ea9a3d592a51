/* The benchmark report (SPEC §5): RewardBench v1 / v2 scores of many reward models at once.
 * Rank 0 checks the layout and reads the small item tables, resolves the scheme against the
 * input's subsets and broadcasts the plan; the per-item credits are computed on tiles of
 * models × item blocks spread over the ranks (backend kernel) and gathered in global order; the
 * bootstrap replicates are tasks spread over ranks; rank 0 assembles the report, the output
 * datasets and the leaderboard on stdout. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_internal.h"
#include "rmdiag/common/h5out.h"
#include "rmdiag/common/idmap.h"
#include "rmdiag/common/jsonutil.h"
#include "rmdiag/kind.h"
#include "rmdiag/kernels/scan.h"
#include "rmdiag/kernels/stats.h"

/* Items per block: with the models, the unit of the work split (independent of the rank count). */
#define BENCH_ITEM_BLOCK 4096

/* ---- the official schemes ----------------------------------------------------------------- */

/* RewardBench v1 (allenai/reward-bench constants.py EXAMPLE_COUNTS and SUBSET_MAPPING, in that
 * order). The weights are the subsets' sizes, except math-prm, weighted 984 = 6 × 164 so that math
 * counts as much as the six hep-* code subsets together. The xstest weights are the true subset
 * sizes (should-refuse 154, should-respond 250): they reproduce the published leaderboard, while
 * some versions of constants.py have the two swapped. */
static const char *v1_chat[] = {"alpacaeval-easy", "alpacaeval-length", "alpacaeval-hard", "mt-bench-easy",
                                "mt-bench-med"};
static double v1_chat_w[] = {100, 95, 95, 28, 40};
static const char *v1_chat_hard[] = {"mt-bench-hard", "llmbar-natural", "llmbar-adver-neighbor",
                                     "llmbar-adver-GPTInst", "llmbar-adver-GPTOut", "llmbar-adver-manual"};
static double v1_chat_hard_w[] = {37, 100, 134, 92, 47, 46};
static const char *v1_safety[] = {"refusals-dangerous", "refusals-offensive", "xstest-should-refuse",
                                  "xstest-should-respond", "donotanswer"};
static double v1_safety_w[] = {100, 100, 154, 250, 136};
static const char *v1_reasoning[] = {"math-prm", "hep-cpp", "hep-go", "hep-java", "hep-js", "hep-python", "hep-rust"};
static double v1_reasoning_w[] = {984, 164, 164, 164, 164, 164, 164};
static bench_section v1_sections[4] = {
    {"Chat", 5, v1_chat, v1_chat_w},
    {"Chat Hard", 6, v1_chat_hard, v1_chat_hard_w},
    {"Safety", 5, v1_safety, v1_safety_w},
    {"Reasoning", 7, v1_reasoning, v1_reasoning_w},
};
/* The old leaderboard's Prior Sets: the unweighted mean of these four that are present. */
static const char *v1_prior[] = {"anthropic_helpful", "anthropic_hhh", "shp", "summarize"};
static double v1_prior_w[] = {1, 1, 1, 1};
static bench_section v1_prior_section = {"Prior Sets", 4, v1_prior, v1_prior_w};
/* Other subsets RewardBench v1 result files carry (prior-set files), not scored. */
static const char *const v1_other[] = {"anthropic_harmless", "mtbench_gpt4", "mtbench_human", "pku_better",
                                       "pku_safer", NULL};

/* RewardBench 2: six subsets, each its own section, score = their unweighted mean. */
static const char *v2_names[6] = {"Factuality", "Precise IF", "Math", "Safety", "Focus", "Ties"};
static double v2_w[1] = {1};
static bench_section v2_sections[6] = {
    {"Factuality", 1, &v2_names[0], v2_w}, {"Precise IF", 1, &v2_names[1], v2_w}, {"Math", 1, &v2_names[2], v2_w},
    {"Safety", 1, &v2_names[3], v2_w},     {"Focus", 1, &v2_names[4], v2_w},      {"Ties", 1, &v2_names[5], v2_w},
};

/* The keys a job may carry (transitional: parsed by the kind's own parse function). */
static const rd_option bench_options[] = {
    {.key = "scheme", .type = RD_OPT_CUSTOM},
    {.key = "prior_sets", .type = RD_OPT_CUSTOM},
    {.key = "allow_missing", .type = RD_OPT_CUSTOM},
    {.key = "bootstrap", .type = RD_OPT_CUSTOM},
    {.key = "compare", .type = RD_OPT_CUSTOM},
    RD_OPTION_END,
};

static void bench_free_opts(void *ptr) {
  bench_opts *o = ptr;
  if (!o) return;
  if (o->scheme == BENCH_CUSTOM) {
    for (int i = 0; i < o->n_sections; i++) {
      free(o->sections[i].subsets);
      free(o->sections[i].weights);
    }
  }
  if (o->sections != v1_sections && o->sections != v2_sections) free(o->sections);
  free(o->pair_a);
  free(o->pair_b);
  free(o);
}

/* The position of the first key of `obj` (in order) that repeats an earlier one, or -1. Sorting
 * keeps a long section list quick. */
static int64_t repeated_key(const cJSON *obj) {
  int64_t n = cJSON_GetArraySize(obj), first = 0, i = 0;
  const char **keys = malloc(sizeof(char *) * (size_t)(n ? n : 1));
  if (!keys) {  /* no memory for the fast way: the slow one */
    for (const cJSON *c = obj->child; c; c = c->next, i++)
      for (const cJSON *d = obj->child; d != c; d = d->next)
        if (strcmp(c->string, d->string) == 0) return i;
    return -1;
  }
  for (const cJSON *c = obj->child; c; c = c->next) keys[i++] = c->string;
  int64_t at = rd_first_duplicate(keys, n, &first);
  free(keys);
  return at;
}

/* {"sections": {NAME: {SUBSET: WEIGHT, ...}, ...}, "item_rule": "strict" | "tie-credit",
 *  "ties_subset": NAME} */
static int parse_custom(bench_opts *o, const cJSON *sch, const rd_where *jw, cJSON *eff, rd_status *st) {
  rd_where w = *jw;
  snprintf(w.path, sizeof w.path, "%.560s: \"scheme\"", jw->path);
  static const char *const keys[] = {"sections", "item_rule", "ties_subset", NULL};
  RD_TRY(rd_opt_keys(sch, keys, &w, st));
  static const char *const rules[] = {"strict", "tie-credit", NULL};
  const char *rule = NULL;
  RD_TRY(rd_opt_string(sch, "item_rule", "strict", rules, &rule, &w, st));
  o->rule = strcmp(rule, "strict") == 0 ? RD_BENCH_STRICT : RD_BENCH_TIE_CREDIT;
  RD_TRY(rd_opt_string(sch, "ties_subset", NULL, NULL, &o->ties_subset, &w, st));
  if (o->ties_subset && !o->ties_subset[0])
    return rd_fail(st, RD_EINPUT, "%s: \"ties_subset\" must name a subset", w.path);
  const cJSON *secs = cJSON_GetObjectItemCaseSensitive(sch, "sections");
  if (!cJSON_IsObject(secs) || !secs->child)
    return rd_fail(st, RD_EINPUT, "%s: \"sections\" must be a non-empty object {SECTION: {SUBSET: WEIGHT, ...}}",
                   w.path);
  o->n_sections = cJSON_GetArraySize(secs);
  o->sections = calloc((size_t)o->n_sections, sizeof *o->sections);
  if (!o->sections) return rd_fail(st, RD_EFAIL, "out of memory");
  cJSON *esecs = cJSON_CreateObject();
  int i = 0;
  int64_t repeated_section = repeated_key(secs);
  for (const cJSON *s = secs->child; s; s = s->next, i++) {
    if (i == repeated_section) {
      cJSON_Delete(esecs);
      return rd_fail(st, RD_EINPUT, "%s: section \"%s\" appears twice", w.path, s->string);
    }
    if (!s->string[0] || !cJSON_IsObject(s) || !s->child) {
      cJSON_Delete(esecs);
      return rd_fail(st, RD_EINPUT, "%s: section \"%s\" must be a non-empty object {SUBSET: WEIGHT, ...}", w.path,
                     s->string);
    }
    bench_section *b = &o->sections[i];
    b->name = s->string;
    b->n = cJSON_GetArraySize(s);
    b->subsets = calloc((size_t)b->n, sizeof *b->subsets);
    b->weights = calloc((size_t)b->n, sizeof *b->weights);
    if (!b->subsets || !b->weights) {
      cJSON_Delete(esecs);
      return rd_fail(st, RD_EFAIL, "out of memory");
    }
    cJSON *es = cJSON_AddObjectToObject(esecs, s->string);
    int k = 0;
    int64_t repeated_subset = repeated_key(s);
    for (const cJSON *e = s->child; e; e = e->next, k++) {
      if (k == repeated_subset) {
        cJSON_Delete(esecs);
        return rd_fail(st, RD_EINPUT, "%s: section \"%s\" names subset \"%s\" twice", w.path, s->string, e->string);
      }
      if (!e->string[0] || !cJSON_IsNumber(e) || !isfinite(e->valuedouble) || e->valuedouble <= 0) {
        cJSON_Delete(esecs);
        return rd_fail(st, RD_EINPUT, "%s: section \"%s\", subset \"%s\": the weight must be a positive number",
                       w.path, s->string, e->string);
      }
      b->subsets[k] = e->string;
      b->weights[k] = e->valuedouble;
      cJSON_AddNumberToObject(es, e->string, e->valuedouble);
    }
  }
  cJSON *es = cJSON_CreateObject();
  cJSON_AddItemToObject(es, "sections", esecs);
  cJSON_AddStringToObject(es, "item_rule", rule);
  if (o->ties_subset) cJSON_AddStringToObject(es, "ties_subset", o->ties_subset);
  cJSON_AddItemToObject(eff, "scheme", es);
  return RD_OK;
}

static int bench_parse(rd_job *job, const rd_jobfile *jf, rd_status *st) {
  (void)jf;
  bench_opts *o = calloc(1, sizeof *o);
  if (!o) return rd_fail(st, RD_EFAIL, "out of memory");
  job->opts = o;
  job->effective = cJSON_CreateObject();
  const rd_where *w = &job->where;
  const cJSON *sch = cJSON_GetObjectItemCaseSensitive(job->spec, "scheme");
  if (!sch || (cJSON_IsString(sch) && strcmp(sch->valuestring, "rewardbench-v1") == 0)) {
    o->scheme = BENCH_V1;
    o->rule = RD_BENCH_STRICT;
    o->sections = v1_sections;
    o->n_sections = 4;
    cJSON_AddStringToObject(job->effective, "scheme", "rewardbench-v1");
  } else if (cJSON_IsString(sch) && strcmp(sch->valuestring, "rewardbench-v2") == 0) {
    o->scheme = BENCH_V2;
    o->rule = RD_BENCH_TIE_CREDIT;
    o->sections = v2_sections;
    o->n_sections = 6;
    o->ties_subset = "Ties";
    cJSON_AddStringToObject(job->effective, "scheme", "rewardbench-v2");
  } else if (cJSON_IsObject(sch)) {
    o->scheme = BENCH_CUSTOM;
    RD_TRY(parse_custom(o, sch, w, job->effective, st));
  } else {
    return rd_fail(st, RD_EINPUT,
                   "%s: \"scheme\" must be \"rewardbench-v1\", \"rewardbench-v2\" or {\"sections\": {...}, "
                   "\"item_rule\": \"strict\" | \"tie-credit\"}",
                   w->path);
  }
  RD_TRY(rd_opt_bool(job->spec, "prior_sets", 0, &o->prior_sets, w, st));
  if (o->prior_sets && o->scheme != BENCH_V1)
    return rd_fail(st, RD_EINPUT, "%s: \"prior_sets\" applies to the rewardbench-v1 scheme only", w->path);
  RD_TRY(rd_opt_bool(job->spec, "allow_missing", 0, &o->allow_missing, w, st));
  RD_TRY(rd_opt_int(job->spec, "bootstrap", 1000, 0, 10000000, &o->bootstrap, w, st));
  cJSON_AddBoolToObject(job->effective, "prior_sets", o->prior_sets);
  cJSON_AddBoolToObject(job->effective, "allow_missing", o->allow_missing);
  cJSON_AddNumberToObject(job->effective, "bootstrap", (double)o->bootstrap);
  const cJSON *cmp = cJSON_GetObjectItemCaseSensitive(job->spec, "compare");
  if (!cmp) {
    cJSON_AddItemToObject(job->effective, "compare", cJSON_CreateArray());
  } else if (cJSON_IsString(cmp) && strcmp(cmp->valuestring, "all") == 0) {
    o->compare_all = 1;
    cJSON_AddStringToObject(job->effective, "compare", "all");
  } else if (cJSON_IsArray(cmp)) {
    int n = cJSON_GetArraySize(cmp);
    o->pair_a = calloc((size_t)(n ? n : 1), sizeof *o->pair_a);
    o->pair_b = calloc((size_t)(n ? n : 1), sizeof *o->pair_b);
    if (!o->pair_a || !o->pair_b) return rd_fail(st, RD_EFAIL, "out of memory");
    cJSON *ec = cJSON_AddArrayToObject(job->effective, "compare");
    int i = 0;
    for (const cJSON *e = cmp->child; e; e = e->next, i++) {
      if (!cJSON_IsArray(e) || cJSON_GetArraySize(e) != 2 || !cJSON_IsString(e->child) ||
          !cJSON_IsString(e->child->next))
        return rd_fail(st, RD_EINPUT, "%s: \"compare\"[%d] must be a pair of model names [\"A\", \"B\"]", w->path, i);
      o->pair_a[i] = e->child->valuestring;
      o->pair_b[i] = e->child->next->valuestring;
      if (strcmp(o->pair_a[i], o->pair_b[i]) == 0)
        return rd_fail(st, RD_EINPUT, "%s: \"compare\"[%d] compares model \"%s\" with itself", w->path, i,
                       o->pair_a[i]);
      cJSON *pr = cJSON_CreateArray();
      cJSON_AddItemToArray(pr, cJSON_CreateString(o->pair_a[i]));
      cJSON_AddItemToArray(pr, cJSON_CreateString(o->pair_b[i]));
      cJSON_AddItemToArray(ec, pr);
    }
    o->n_pairs = n;
  } else {
    return rd_fail(st, RD_EINPUT, "%s: \"compare\" must be \"all\" or a list of model-name pairs [[\"A\", \"B\"], ...]",
                   w->path);
  }
  return RD_OK;
}

/* ---- layout and item tables (rank 0) ---------------------------------------------------------- */

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

/* What only rank 0 keeps: the given accuracies and the resolved comparisons and missing subsets. */
typedef struct bench_root {
  double *acc;             /* accuracy mode: [M × S] */
  int *cmp_a, *cmp_b;
  int n_cmp;
  const char **missing;
  int n_missing;
} bench_root;

static void root_free(bench_root *r) {
  free(r->acc);
  free(r->cmp_a);
  free(r->cmp_b);
  free(r->missing);
  memset(r, 0, sizeof *r);
}

static void ds_path(char *out, size_t n, const char *group, const char *name) {
  snprintf(out, n, "%s/%s", strcmp(group, "/") == 0 ? "" : group, name);
}

/* Reads a 1-D string dataset of n entries into the packed names (appending), checking uniqueness. */
static int read_names(hid_t f, const char *file, const rd_dsinfo *ds, const char *what, char **buf, size_t *len,
                      int64_t *off, rd_status *st) {
  char *sbuf = NULL;
  size_t slen = 0;
  int64_t *soff = NULL;
  RD_TRY(rd_h5_read_strings(f, file, ds, &sbuf, &slen, &soff, st));
  int64_t n = ds->dims[0];
  rd_idmap m;
  int rc = rd_idmap_init(&m, (size_t)n + 16) == 0 ? RD_OK : rd_fail(st, RD_EFAIL, "out of memory");
  char *nb = rc == RD_OK ? realloc(*buf, *len + slen + 1) : NULL;
  if (rc == RD_OK && !nb) rc = rd_fail(st, RD_EFAIL, "out of memory");
  if (nb) *buf = nb;
  for (int64_t i = 0; rc == RD_OK && i < n; i++) {
    const char *s = sbuf + soff[i];
    int is_new = 0;
    int64_t id = rd_idmap_get(&m, s, strlen(s), &is_new);
    if (id < 0) {
      rc = rd_fail(st, RD_EFAIL, "out of memory");
    } else if (!is_new) {
      int64_t first = 0;
      for (; first < i; first++)
        if (strcmp(sbuf + soff[first], s) == 0) break;
      rc = rd_fail(st, RD_EINPUT, "%s: %s[%lld] = \"%s\" repeats %s[%lld]; %s must be unique", file, ds->path,
                   (long long)i, s, ds->path, (long long)first, what);
    } else if (!s[0]) {
      rc = rd_fail(st, RD_EINPUT, "%s: %s[%lld] is empty; expected a name", file, ds->path, (long long)i);
    } else {
      off[i] = (int64_t)*len;
      size_t l = strlen(s) + 1;
      memcpy(*buf + *len, s, l);
      *len += l;
    }
  }
  rd_idmap_free(&m);
  free(sbuf);
  free(soff);
  return rc;
}

static int is_in(const char *name, const char *const *list, int n) {
  for (int i = 0; n < 0 ? list[i] != NULL : i < n; i++)
    if (strcmp(list[i], name) == 0) return 1;
  return 0;
}

/* A subset the official scheme does not know is a bad input (a typo, or v1 and v2 files mixed). */
static int known_subset(const bench_opts *o, const char *name) {
  if (o->scheme == BENCH_V2) return is_in(name, v2_names, 6);
  for (int k = 0; k < 4; k++)
    if (is_in(name, v1_sections[k].subsets, v1_sections[k].n)) return 1;
  return is_in(name, v1_prior, 4) || is_in(name, v1_other, -1);
}

/* "ref:<n>" / "tied:<n>" (n a decimal integer, optionally signed): kind 0 = ref, 1 = tied. */
static int parse_ties_id(const char *id, int *kind, int64_t *number) {
  const char *rest;
  if (strncmp(id, "ref:", 4) == 0) {
    *kind = 0;
    rest = id + 4;
  } else if (strncmp(id, "tied:", 5) == 0) {
    *kind = 1;
    rest = id + 5;
  } else {
    return 0;
  }
  const char *q = rest;
  if (*q == '-' || *q == '+') q++;
  if (!*q) return 0;
  for (const char *c = q; *c; c++)
    if (*c < '0' || *c > '9') return 0;
  if (strlen(q) > 18) return 0;
  *number = strtoll(rest, NULL, 10);
  return 1;
}

typedef struct ties_row {
  int64_t number, item;
  int kind;
} ties_row;

static int cmp_ties_row(const void *a, const void *b) {
  const ties_row *x = a, *y = b;
  if (x->number != y->number) return x->number < y->number ? -1 : 1;
  if (x->kind != y->kind) return x->kind - y->kind;
  return (x->item > y->item) - (x->item < y->item);
}

/* Groups the Ties subset's rows into prompts (ascending number) with their ref and tied rows. */
static int ties_prompts(hid_t f, const rd_job *job, const rd_dsinfo *ids_ds, bench_plan *p, int64_t ts,
                        rd_status *st) {
  const char *file = job->input;
  int64_t n = p->subset_n[ts];
  if (!ids_ds)
    return rd_fail(st, RD_EINPUT, "%s: subset \"%s\" is scored with the Ties composite, which needs item ids "
                   "\"ref:<n>\" / \"tied:<n>\", but dataset %s/item_id is missing", file,
                   bench_subset_name(p, ts), job->group);
  char *sbuf = NULL;
  size_t slen = 0;
  int64_t *soff = NULL;
  RD_TRY(rd_h5_read_strings(f, file, ids_ds, &sbuf, &slen, &soff, st));
  ties_row *rows = malloc(sizeof *rows * (size_t)(n ? n : 1));
  int rc = rows ? RD_OK : rd_fail(st, RD_EFAIL, "out of memory");
  for (int64_t t = 0; rc == RD_OK && t < n; t++) {
    int64_t i = p->subset_items[p->subset_first[ts] + t];
    const char *id = sbuf + soff[i];
    if (!parse_ties_id(id, &rows[t].kind, &rows[t].number))
      rc = rd_fail(st, RD_EINPUT, "%s: %s[%lld] = \"%s\" (item %lld, subset \"%s\"): expected \"ref:<n>\" or "
                   "\"tied:<n>\" with an integer prompt number n", file, ids_ds->path, (long long)i, id, (long long)i,
                   bench_subset_name(p, ts));
    rows[t].item = i;
  }
  if (rc == RD_OK) qsort(rows, (size_t)n, sizeof *rows, cmp_ties_row);
  /* the lowest item index that repeats an earlier (kind, number) */
  int64_t dup = -1, dup_of = -1;
  for (int64_t t = 1; rc == RD_OK && t < n; t++)
    if (rows[t].number == rows[t - 1].number && rows[t].kind == rows[t - 1].kind && (dup < 0 || rows[t].item < dup)) {
      dup = rows[t].item;
      dup_of = rows[t - 1].item;
    }
  if (rc == RD_OK && dup >= 0)
    rc = rd_fail(st, RD_EINPUT, "%s: %s[%lld] = \"%s\" repeats item %lld of subset \"%s\"; each Ties id must appear "
                 "once", file, ids_ds->path, (long long)dup, sbuf + soff[dup], (long long)dup_of,
                 bench_subset_name(p, ts));
  int64_t P = 0;
  for (int64_t t = 0; rc == RD_OK && t < n; t++)
    if (t == 0 || rows[t].number != rows[t - 1].number) P++;
  if (rc == RD_OK) {
    p->prompt_ref = malloc(sizeof(int64_t) * (size_t)(P ? P : 1));
    p->prompt_tied = malloc(sizeof(int64_t) * (size_t)(P ? P : 1));
    p->prompt_number = malloc(sizeof(int64_t) * (size_t)(P ? P : 1));
    if (!p->prompt_ref || !p->prompt_tied || !p->prompt_number) rc = rd_fail(st, RD_EFAIL, "out of memory");
  }
  int64_t q = -1;
  for (int64_t t = 0; rc == RD_OK && t < n; t++) {
    if (t == 0 || rows[t].number != rows[t - 1].number) {
      q++;
      p->prompt_ref[q] = p->prompt_tied[q] = -1;
      p->prompt_number[q] = rows[t].number;
    }
    if (rows[t].kind == 0) p->prompt_ref[q] = rows[t].item;
    else p->prompt_tied[q] = rows[t].item;
  }
  p->d.n_prompts = P;
  free(rows);
  free(sbuf);
  free(soff);
  return rc;
}

/* Checks the layout and the item tables, resolves the scheme; rank 0, the file open serially. */
static int bench_prepare(hid_t f, const rd_job *job, bench_plan *p, bench_root *r, rd_status *st) {
  const bench_opts *o = job->opts;
  const char *file = job->input, *g = job->group;
  char path[600];
  bench_dims *d = &p->d;
  d->scores_off = d->given_off = -1;
  d->ties_subset = -1;
  d->prior_sec = -1;
  d->rule = (int32_t)o->rule;
  if (!rd_h5_exists(f, g))
    return rd_fail(st, RD_EINPUT, "%s: group %s is missing (expected the benchmark layout of SPEC §5: model_names, "
                   "subset_names, item_subset, item_offset, item_n_correct, scores)", file, g);
  rd_dsinfo mn, sn, isub, ioff, inc, ids, acc;
  ds_path(path, sizeof path, g, "model_names");
  RD_TRY(rd_h5_info(f, file, path, &mn, st));
  RD_TRY(rd_h5_expect(&mn, file, 1, RD_TCM(RD_TC_STRING), "strings [M]", st));
  ds_path(path, sizeof path, g, "subset_names");
  RD_TRY(rd_h5_info(f, file, path, &sn, st));
  RD_TRY(rd_h5_expect(&sn, file, 1, RD_TCM(RD_TC_STRING), "strings [S]", st));
  d->M = mn.dims[0];
  d->S = sn.dims[0];
  if (d->M < 1) return rd_fail(st, RD_EINPUT, "%s: %s is empty; expected at least one model", file, mn.path);
  if (d->S < 1) return rd_fail(st, RD_EINPUT, "%s: %s is empty; expected at least one subset", file, sn.path);
  if (d->M > 1000000 || d->S > 1000000)
    return rd_fail(st, RD_EINPUT, "%s: %lld models and %lld subsets (at most 1000000 of each supported)", file,
                   (long long)d->M, (long long)d->S);
  p->name_off = malloc(sizeof(int64_t) * (size_t)(d->S + d->M));
  if (!p->name_off) return rd_fail(st, RD_EFAIL, "out of memory");
  size_t nlen = 0;
  RD_TRY(read_names(f, file, &sn, "subset names", &p->names, &nlen, p->name_off, st));
  RD_TRY(read_names(f, file, &mn, "model names", &p->names, &nlen, p->name_off + d->S, st));
  d->names_len = (int64_t)nlen;

  ds_path(path, sizeof path, g, "item_subset");
  int has_items = rd_h5_exists(f, path);
  ds_path(path, sizeof path, g, "subset_accuracy");
  int has_acc = rd_h5_exists(f, path);
  if (!has_items && !has_acc)
    return rd_fail(st, RD_EINPUT, "%s: dataset %s/item_subset is missing (expected per-item datasets item_subset, "
                   "item_offset, item_n_correct, scores, or per-subset accuracies in subset_accuracy)", file, g);
  p->subset_n = calloc((size_t)d->S, sizeof *p->subset_n);
  p->subset_first = calloc((size_t)d->S + 1, sizeof *p->subset_first);
  if (!p->subset_n || !p->subset_first) return rd_fail(st, RD_EFAIL, "out of memory");

  if (!has_items) {
    /* per-subset accuracies: NaN = the model has no value for that subset */
    d->accuracy_mode = 1;
    ds_path(path, sizeof path, g, "subset_accuracy");
    RD_TRY(rd_h5_info(f, file, path, &acc, st));
    RD_TRY(rd_h5_expect(&acc, file, 2, RD_TCM(RD_TC_FLOAT), "float64 [M, S]", st));
    if (acc.dims[0] != d->M || acc.dims[1] != d->S)
      return rd_fail(st, RD_EINPUT, "%s: %s has shape [%lld, %lld], expected [M, S] = [%lld, %lld]", file, acc.path,
                     (long long)acc.dims[0], (long long)acc.dims[1], (long long)d->M, (long long)d->S);
    r->acc = malloc(sizeof(double) * (size_t)(d->M * d->S));
    if (!r->acc) return rd_fail(st, RD_EFAIL, "out of memory");
    RD_TRY(rd_h5_read_float_rows(f, file, &acc, 0, d->M, RD_F64, r->acc, st));
    for (int64_t m = 0; m < d->M; m++)
      for (int64_t s = 0; s < d->S; s++) {
        double v = r->acc[m * d->S + s];
        if (isnan(v)) continue;
        if (!(v >= -0.01 && v <= 1.01))
          return rd_fail(st, RD_EINPUT, "%s: %s[%lld, %lld] = %g (model \"%s\", subset \"%s\"): expected a fraction in "
                         "[0, 1] ([-0.01, 1.01] for a Ties composite) or NaN for a missing subset", file, acc.path,
                         (long long)m, (long long)s, v, bench_model_name(p, m), bench_subset_name(p, s));
        p->subset_n[s] = 1;  /* present for some model */
      }
  } else {
    ds_path(path, sizeof path, g, "item_subset");
    RD_TRY(rd_h5_info(f, file, path, &isub, st));
    RD_TRY(rd_h5_expect(&isub, file, 1, RD_TCM(RD_TC_INT), "integer subset indices [I]", st));
    ds_path(path, sizeof path, g, "item_offset");
    RD_TRY(rd_h5_info(f, file, path, &ioff, st));
    RD_TRY(rd_h5_expect(&ioff, file, 1, RD_TCM(RD_TC_INT), "int64 completion offsets [I + 1]", st));
    ds_path(path, sizeof path, g, "item_n_correct");
    RD_TRY(rd_h5_info(f, file, path, &inc, st));
    RD_TRY(rd_h5_expect(&inc, file, 1, RD_TCM(RD_TC_INT), "integer counts of preferred completions [I]", st));
    ds_path(path, sizeof path, g, "scores");
    RD_TRY(rd_h5_info(f, file, path, &d->scores_ds, st));
    RD_TRY(rd_h5_expect(&d->scores_ds, file, 2, RD_TCM(RD_TC_FLOAT), "float32 or float64 [M, C]", st));
    d->I = isub.dims[0];
    d->C = d->scores_ds.dims[1];
    if (d->I < 1) return rd_fail(st, RD_EINPUT, "%s: %s is empty; expected at least one item", file, isub.path);
    if (ioff.dims[0] != d->I + 1)
      return rd_fail(st, RD_EINPUT, "%s: %s has %lld entries, expected I + 1 = %lld (I = %lld items in %s)", file,
                     ioff.path, (long long)ioff.dims[0], (long long)(d->I + 1), (long long)d->I, isub.path);
    if (inc.dims[0] != d->I)
      return rd_fail(st, RD_EINPUT, "%s: %s has %lld entries, expected one per item (%lld)", file, inc.path,
                     (long long)inc.dims[0], (long long)d->I);
    if (d->scores_ds.dims[0] != d->M)
      return rd_fail(st, RD_EINPUT, "%s: %s has %lld rows, expected one per model (%lld in %s)", file,
                     d->scores_ds.path, (long long)d->scores_ds.dims[0], (long long)d->M, mn.path);
    if (d->M * d->I >= INT_MAX)
      return rd_fail(st, RD_EINPUT, "%s: %lld models x %lld items is more than 2^31 credits (not supported)", file,
                     (long long)d->M, (long long)d->I);
    d->ftype = d->scores_ds.tsize == 4 ? RD_F32 : RD_F64;
    ds_path(path, sizeof path, g, "given_credit");
    if (rd_h5_exists(f, path)) {
      RD_TRY(rd_h5_info(f, file, path, &d->given_ds, st));
      RD_TRY(rd_h5_expect(&d->given_ds, file, 2, RD_TCM(RD_TC_FLOAT), "float64 credits [M, I] (NaN: from scores)", st));
      if (d->given_ds.dims[0] != d->M || d->given_ds.dims[1] != d->I)
        return rd_fail(st, RD_EINPUT, "%s: %s has shape [%lld, %lld], expected [M, I] = [%lld, %lld]", file,
                       d->given_ds.path, (long long)d->given_ds.dims[0], (long long)d->given_ds.dims[1],
                       (long long)d->M, (long long)d->I);
      d->has_given = 1;
    }
    int64_t I = d->I;
    int64_t *tmp = malloc(sizeof(int64_t) * (size_t)(I + 1));
    p->item_subset = malloc(sizeof(int32_t) * (size_t)I);
    p->item_offset = malloc(sizeof(int64_t) * (size_t)(I + 1));
    p->n_correct = malloc(sizeof(int32_t) * (size_t)I);
    p->subset_items = malloc(sizeof(int64_t) * (size_t)I);
    if (!tmp || !p->item_subset || !p->item_offset || !p->n_correct || !p->subset_items) {
      free(tmp);
      return rd_fail(st, RD_EFAIL, "out of memory");
    }
    int rc = rd_h5_read_int_rows(f, file, &ioff, 0, I + 1, p->item_offset, st);
    if (rc == RD_OK) rc = rd_h5_read_int_rows(f, file, &isub, 0, I, tmp, st);
    /* item by item, so the first message names the lowest offending item */
    if (rc == RD_OK && p->item_offset[0] != 0)
      rc = rd_fail(st, RD_EINPUT, "%s: %s[0] = %lld, expected 0 (item 0 starts at completion 0)", file, ioff.path,
                   (long long)p->item_offset[0]);
    for (int64_t i = 0; rc == RD_OK && i < I; i++) {
      if (tmp[i] < 0 || tmp[i] >= d->S)
        rc = rd_fail(st, RD_EINPUT, "%s: %s[%lld] = %lld (item %lld) is not a subset: expected an index into %s "
                     "(0..%lld)", file, isub.path, (long long)i, (long long)tmp[i], (long long)i, sn.path,
                     (long long)(d->S - 1));
      else if (p->item_offset[i + 1] <= p->item_offset[i])
        rc = rd_fail(st, RD_EINPUT, "%s: %s[%lld] = %lld is not greater than %s[%lld] = %lld: item %lld has no "
                     "completions (offsets must increase)", file, ioff.path, (long long)(i + 1),
                     (long long)p->item_offset[i + 1], ioff.path, (long long)i, (long long)p->item_offset[i],
                     (long long)i);
      else p->item_subset[i] = (int32_t)tmp[i];
    }
    if (rc == RD_OK && p->item_offset[I] != d->C)
      rc = rd_fail(st, RD_EINPUT, "%s: %s[%lld] = %lld, expected C = %lld (the columns of %s)", file, ioff.path,
                   (long long)I, (long long)p->item_offset[I], (long long)d->C, d->scores_ds.path);
    if (rc == RD_OK) rc = rd_h5_read_int_rows(f, file, &inc, 0, I, tmp, st);
    for (int64_t i = 0; rc == RD_OK && i < I; i++) {
      int64_t nc = p->item_offset[i + 1] - p->item_offset[i];
      if (tmp[i] < 1)
        rc = rd_fail(st, RD_EINPUT, "%s: %s[%lld] = %lld (item %lld): expected at least one preferred completion",
                     file, inc.path, (long long)i, (long long)tmp[i], (long long)i);
      else if (tmp[i] >= nc)
        rc = rd_fail(st, RD_EINPUT, "%s: %s[%lld] = %lld but item %lld has %lld completion%s: it has no rejected "
                     "completion (expected fewer preferred than completions)", file, inc.path, (long long)i,
                     (long long)tmp[i], (long long)i, (long long)nc, nc == 1 ? "" : "s");
      else p->n_correct[i] = (int32_t)tmp[i];
    }
    free(tmp);
    RD_TRY(rc);
    for (int64_t i = 0; i < I; i++) p->subset_n[p->item_subset[i]]++;
    for (int64_t s = 0; s < d->S; s++) p->subset_first[s + 1] = p->subset_first[s] + p->subset_n[s];
    int64_t *fill = malloc(sizeof(int64_t) * (size_t)d->S);
    if (!fill) return rd_fail(st, RD_EFAIL, "out of memory");
    memcpy(fill, p->subset_first, sizeof(int64_t) * (size_t)d->S);
    for (int64_t i = 0; i < I; i++) p->subset_items[fill[p->item_subset[i]]++] = i;
    free(fill);
    /* a contiguous dataset in its memory type can be mapped instead of read */
    rd_h5_contig_offset(f, &d->scores_ds, d->ftype == RD_F32 ? H5T_NATIVE_FLOAT : H5T_NATIVE_DOUBLE, &d->scores_off);
    if (d->has_given) rd_h5_contig_offset(f, &d->given_ds, H5T_NATIVE_DOUBLE, &d->given_off);
  }

  /* subsets the official schemes do not know */
  if (o->scheme != BENCH_CUSTOM)
    for (int64_t s = 0; s < d->S; s++) {
      if (p->subset_n[s] == 0 || known_subset(o, bench_subset_name(p, s))) continue;
      const char *sch = o->scheme == BENCH_V1 ? "rewardbench-v1" : "rewardbench-v2";
      if (d->accuracy_mode)
        return rd_fail(st, RD_EINPUT, "%s: %s/subset_names[%lld] = \"%s\" is not a subset of scheme %s (a misspelt "
                       "name, or files of another RewardBench version?)", file, g, (long long)s,
                       bench_subset_name(p, s), sch);
      int64_t first = p->subset_items[p->subset_first[s]];
      return rd_fail(st, RD_EINPUT, "%s: %s/item_subset[%lld] = %lld names subset \"%s\", which is not a subset of "
                     "scheme %s (a misspelt name, or files of another RewardBench version?)", file, g,
                     (long long)first, (long long)s, bench_subset_name(p, s), sch);
    }

  /* the scheme against the input's subsets */
  int n_sec = o->n_sections + (o->prior_sets ? 1 : 0);
  d->n_sec = n_sec;
  int64_t n_ent = 0;
  for (int k = 0; k < n_sec; k++) n_ent += k < o->n_sections ? o->sections[k].n : v1_prior_section.n;
  d->n_entries = n_ent;
  p->sec_first = malloc(sizeof(int64_t) * (size_t)(n_sec + 1));
  p->ent_subset = malloc(sizeof(int32_t) * (size_t)n_ent);
  p->ent_weight = malloc(sizeof(double) * (size_t)n_ent);
  p->sec_score_w = malloc(sizeof(double) * (size_t)n_sec);
  p->resampled = calloc((size_t)d->S, 1);
  r->missing = calloc((size_t)n_ent, sizeof *r->missing);
  if (!p->sec_first || !p->ent_subset || !p->ent_weight || !p->sec_score_w || !p->resampled || !r->missing)
    return rd_fail(st, RD_EFAIL, "out of memory");
  int64_t e = 0;
  for (int k = 0; k < n_sec; k++) {
    const bench_section *b = k < o->n_sections ? &o->sections[k] : &v1_prior_section;
    int is_prior = k >= o->n_sections;
    p->sec_first[k] = e;
    /* the old leaderboard: the four sections weigh 2 and Prior Sets 1 in the score */
    p->sec_score_w[k] = o->prior_sets ? (is_prior ? 1.0 : 2.0) : 1.0;
    for (int j = 0; j < b->n; j++, e++) {
      int32_t idx = -1;
      for (int64_t s = 0; s < d->S; s++)
        if (strcmp(bench_subset_name(p, s), b->subsets[j]) == 0) idx = (int32_t)s;
      if (idx >= 0 && p->subset_n[idx] == 0) idx = -1;  /* named but without items */
      p->ent_subset[e] = idx;
      p->ent_weight[e] = b->weights[j];
      if (idx >= 0) {
        p->resampled[idx] = 1;
        continue;
      }
      if (is_prior) continue;  /* prior sets are optional */
      if (!o->allow_missing)
        return rd_fail(st, RD_EINPUT, "%s: subset \"%s\" (section \"%s\" of the scheme) is absent from the input "
                       "(%s/subset_names%s); expected every subset the scheme names, or set \"allow_missing\": true "
                       "to re-weight the section over the subsets present", file, b->subsets[j], b->name, g,
                       d->accuracy_mode ? "" : " and item_subset");
      int dup = 0;
      for (int q = 0; q < r->n_missing; q++) dup |= strcmp(r->missing[q], b->subsets[j]) == 0;
      if (!dup) r->missing[r->n_missing++] = b->subsets[j];
    }
    if (is_prior) d->prior_sec = k;
  }
  p->sec_first[n_sec] = e;
  /* accuracy mode: a model without a value for a scheme subset present for others */
  if (d->accuracy_mode && !o->allow_missing)
    for (int64_t m = 0; m < d->M; m++)
      for (int64_t q = 0; q < n_ent; q++) {
        int32_t s = p->ent_subset[q];
        if (s < 0 || (d->prior_sec >= 0 && q >= p->sec_first[d->prior_sec])) continue;
        if (isnan(r->acc[m * d->S + s]))
          return rd_fail(st, RD_EINPUT, "%s: %s/subset_accuracy[%lld, %lld] is NaN: model \"%s\" has no value for "
                         "subset \"%s\", which the scheme scores; expected a value, or set \"allow_missing\": true",
                         file, g, (long long)m, (long long)s, bench_model_name(p, m), bench_subset_name(p, s));
      }

  /* the Ties subset: prompts from the item ids */
  if (o->ties_subset) {
    for (int64_t s = 0; s < d->S; s++)
      if (p->subset_n[s] > 0 && strcmp(bench_subset_name(p, s), o->ties_subset) == 0) d->ties_subset = (int32_t)s;
    if (d->ties_subset >= 0 && !d->accuracy_mode) {
      ds_path(path, sizeof path, g, "item_id");
      int has_ids = rd_h5_exists(f, path);
      if (has_ids) {
        RD_TRY(rd_h5_info(f, file, path, &ids, st));
        RD_TRY(rd_h5_expect(&ids, file, 1, RD_TCM(RD_TC_STRING), "strings [I]", st));
        if (ids.dims[0] != d->I)
          return rd_fail(st, RD_EINPUT, "%s: %s has %lld entries, expected one per item (%lld)", file, ids.path,
                         (long long)ids.dims[0], (long long)d->I);
      }
      RD_TRY(ties_prompts(f, job, has_ids ? &ids : NULL, p, d->ties_subset, st));
    }
  }

  if (!d->accuracy_mode && (double)d->M * (double)(n_sec + 1) * (double)(o->bootstrap + 1) * 8.0 >= (double)INT_MAX)
    return rd_fail(st, RD_EINPUT, "%s: \"bootstrap\": %lld resamples of %lld models x %d sections is more than 2^28 "
                   "replicate values (not supported); use fewer resamples", job->where.path, (long long)o->bootstrap,
                   (long long)d->M, n_sec + 1);

  /* comparisons by model name */
  int M = (int)d->M;
  int n_cmp = o->compare_all ? M * (M - 1) / 2 : o->n_pairs;
  if (o->compare_all && d->M > 20000)
    return rd_fail(st, RD_EINPUT, "%s: \"compare\": \"all\" with %d models is too many pairs; list the pairs", job->where.path, M);
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
          return rd_fail(st, RD_EINPUT, "%s: \"compare\"[%d]: model \"%s\" is not in %s: %s/model_names",
                         job->where.path, k, nm[h], file, g);
      }
    }
  }
  r->n_cmp = n_cmp;
  return RD_OK;
}

static int bench_validate(const rd_ctx *ctx, const rd_job *job, const rd_jobfile *jf, rd_status *st) {
  (void)jf;
  if (ctx->rank == 0) {
    hid_t f;
    if (rd_h5_open(job->input, MPI_COMM_NULL, &f, st) == RD_OK) {
      bench_plan p;
      bench_root r;
      memset(&p, 0, sizeof p);
      memset(&r, 0, sizeof r);
      bench_prepare(f, job, &p, &r, st);
      bench_plan_free(&p);
      root_free(&r);
      rd_h5_close(f);
    }
  }
  return rd_share_status(ctx, st, 0);
}

/* Every rank gets the plan from rank 0. */
static void plan_share(const rd_ctx *ctx, bench_plan *p) {
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

/* ---- the rank's tiles: read, check, credits ------------------------------------------------- */

/* Tiles are (model, item block) in row-major order; a rank owns a contiguous run of them, which
 * is a contiguous range [lo, hi) of the flat [M × I] credit matrix. */
static int64_t tile_start(const bench_dims *d, int64_t t) {
  int64_t nb = (d->I + BENCH_ITEM_BLOCK - 1) / BENCH_ITEM_BLOCK;
  if (t >= d->M * nb) return d->M * d->I;
  return (t / nb) * d->I + (t % nb) * BENCH_ITEM_BLOCK;
}

static void rank_flat_range(const bench_dims *d, int size, int rank, int64_t *lo, int64_t *hi) {
  int64_t nb = (d->I + BENCH_ITEM_BLOCK - 1) / BENCH_ITEM_BLOCK, t0, t1;
  rd_split_range(d->M * nb, size, rank, &t0, &t1);
  *lo = tile_start(d, t0);
  *hi = tile_start(d, t1);
}

typedef struct bench_rows {
  int64_t lo, hi;       /* flat credit range */
  int64_t m0, m1;       /* rows [m0, m1) held */
  const void *scores;   /* rows m0.. of [M, C] */
  const double *given;  /* rows m0.. of [M, I], or NULL */
  void *own[2];
  rd_h5_map map[2];
} bench_rows;

static void rows_free(bench_rows *w) {
  for (int i = 0; i < 2; i++) {
    free(w->own[i]);
    rd_h5_unmap(&w->map[i]);
    w->own[i] = NULL;
  }
}

/* Maps (contiguous datasets) or reads rows [m0, m1) of a [M, cols] dataset. When the read fails, the
 * rows are read one by one to find the first model whose row cannot be read: the error is keyed by
 * that row's first element (key_base + m * cols), so it is the same for any rank count, and *good
 * is the number of rows before it (still checked: an earlier bad value outranks it). */
static const void *rows_get(hid_t *f, const rd_job *job, const rd_dsinfo *ds, int64_t off, rd_ftype ft, int64_t m0,
                            int64_t n, void **own, rd_h5_map *map, int64_t key_base, int64_t *good, rd_status *st) {
  size_t es = ft == RD_F32 ? 4 : 8;
  int64_t cols = ds->dims[1];
  *good = n;
  if (off >= 0) {
    const void *p = rd_map_rows(job->input, off, cols * (int64_t)es, m0, n, map);
    if (p) return p;
  }
  if (*f < 0 && rd_h5_open(job->input, MPI_COMM_NULL, f, st) != RD_OK) return NULL;
  *own = rd_malloc_big(es * (size_t)(n * cols) + 1, st, "score rows");
  if (!*own) return NULL;
  rd_status one;
  rd_status_init(&one);
  if (rd_h5_read_float_rows(*f, job->input, ds, m0, n, ft, *own, &one) == RD_OK) return *own;
  for (int64_t m = m0; m < m0 + n; m++) {
    rd_status_init(&one);
    if (rd_h5_read_float_rows(*f, job->input, ds, m, 1, ft, (char *)*own + (size_t)((m - m0) * cols) * es, &one) !=
        RD_OK) {
      *good = m - m0;
      rd_fail_at(st, one.code, key_base + m * cols, "%s", one.msg);
      return *own;
    }
  }
  return *own;
}

/* Item holding completion column c. */
static int64_t item_of_column(const bench_plan *p, int64_t c) {
  int64_t lo = 0, hi = p->d.I;  /* offset[lo] <= c < offset[hi] */
  while (hi - lo > 1) {
    int64_t mid = (lo + hi) / 2;
    if (p->item_offset[mid] <= c) lo = mid;
    else hi = mid;
  }
  return lo;
}

/* Reads the rank's rows and checks its part of them: every score finite (key m * C + c), given
 * credits NaN or within [0, 1] and never on a Ties row (key M * C + m * I + i). */
static int rows_read(const bench_plan *p, const rd_job *job, bench_rows *w, rd_status *st) {
  const bench_dims *d = &p->d;
  hid_t f = H5I_INVALID_HID;
  int64_t n = w->m1 - w->m0;
  if (n <= 0) return RD_OK;
  int64_t good[2] = {0, 0};
  w->scores = rows_get(&f, job, &d->scores_ds, d->scores_off, (rd_ftype)d->ftype, w->m0, n, &w->own[0], &w->map[0], 0,
                       &good[0], st);
  if (w->scores && d->has_given)
    w->given = rows_get(&f, job, &d->given_ds, d->given_off, RD_F64, w->m0, n, &w->own[1], &w->map[1], d->M * d->C,
                        &good[1], st);
  if (f >= 0) rd_h5_close(f);
  if (!w->scores || (d->has_given && !w->given)) return st->code;  /* memory, opening or mapping failed */
  for (int64_t m = w->m0; m < w->m0 + good[0]; m++) {
    int64_t i0 = w->lo - m * d->I, i1 = w->hi - m * d->I;
    i0 = i0 < 0 ? 0 : i0;
    i1 = i1 > d->I ? d->I : i1;
    int64_t c0 = p->item_offset[i0], c1 = p->item_offset[i1];
    int64_t k = d->ftype == RD_F32
                    ? rd_first_nonfinite_f32((const float *)w->scores + (m - w->m0) * d->C + c0, c1 - c0)
                    : rd_first_nonfinite_f64((const double *)w->scores + (m - w->m0) * d->C + c0, c1 - c0);
    if (k >= 0) {
      int64_t c = c0 + k, i = item_of_column(p, c);
      double v = d->ftype == RD_F32 ? (double)((const float *)w->scores)[(m - w->m0) * d->C + c]
                                    : ((const double *)w->scores)[(m - w->m0) * d->C + c];
      return rd_fail_at(st, RD_EINPUT, m * d->C + c, "%s: %s[%lld, %lld] = %g (model %lld \"%s\", item %lld, its "
                        "completion %lld): expected a finite score", job->input, d->scores_ds.path, (long long)m,
                        (long long)c, v, (long long)m, bench_model_name(p, m), (long long)i,
                        (long long)(c - p->item_offset[i]));
    }
  }
  if (!w->given) return st->code;
  for (int64_t m = w->m0; m < w->m0 + good[1]; m++) {
    int64_t i0 = w->lo - m * d->I, i1 = w->hi - m * d->I;
    i0 = i0 < 0 ? 0 : i0;
    i1 = i1 > d->I ? d->I : i1;
    for (int64_t i = i0; i < i1; i++) {
      double v = w->given[(m - w->m0) * d->I + i];
      if (isnan(v)) continue;
      const char *why = NULL;
      if (!(v >= 0.0 && v <= 1.0)) why = "expected a credit in [0, 1], or NaN where the credit comes from the scores";
      else if (p->item_subset[i] == d->ties_subset)
        why = "the item is in the Ties subset, whose composite needs the scores; expected NaN";
      if (why)
        return rd_fail_at(st, RD_EINPUT, d->M * d->C + m * d->I + i, "%s: %s[%lld, %lld] = %g (model \"%s\", item "
                          "%lld): %s", job->input, d->given_ds.path, (long long)m, (long long)i, v,
                          bench_model_name(p, m), (long long)i, why);
    }
  }
  return st->code;  /* a row that could not be read, if any */
}

/* Credits of the rank's range with the backend kernel (grouping whole rows into one call); the
 * Ties rows' gap and spread go into g (see bench_ties_build), -inf elsewhere. */
static int rows_credits(const rd_ctx *ctx, const bench_plan *p, const bench_rows *w, double *credit, double *g,
                        rd_status *st) {
  const bench_dims *d = &p->d;
  int64_t I = d->I;
  const rd_backend *be = RD_BACKEND_FOR(ctx->backend, bench, credits);
  const struct rd_bench_kernels *kt = be->bench;
  const char *bname = be->name;
  int want_ties = d->n_prompts > 0;
  double *gap = NULL, *spread = NULL;
  int64_t n = w->hi - w->lo;
  if (want_ties) {
    gap = malloc(sizeof(double) * (size_t)(n ? n : 1));
    spread = malloc(sizeof(double) * (size_t)(n ? n : 1));
    if (!gap || !spread) {
      free(gap);
      free(spread);
      return rd_fail(st, RD_EFAIL, "out of memory");
    }
  }
  size_t es = d->ftype == RD_F32 ? 4 : 8;
  for (int64_t m = w->m0; m < w->m1 && st->code == RD_OK;) {
    int64_t i0 = w->lo - m * I, i1 = w->hi - m * I;
    i0 = i0 < 0 ? 0 : i0;
    i1 = i1 > I ? I : i1;
    int64_t rows = 1;
    if (i0 == 0 && i1 == I)
      while (m + rows < w->m1 && w->hi - (m + rows) * I >= I) rows++;
    int64_t at = m * I + i0 - w->lo;
    rd_bench_block blk = {.n_rows = rows, .n_items = i1 - i0, .offset = p->item_offset + i0,
                          .n_correct = p->n_correct + i0, .ftype = (rd_ftype)d->ftype,
                          .scores = (const char *)w->scores + (size_t)((m - w->m0) * d->C) * es,
                          .row_stride = d->C, .col0 = 0, .rule = (rd_bench_rule)d->rule};
    /* consecutive rows write consecutive runs of I credits only when whole rows are done */
    rd_bench_out out = {.credit = credit + at, .gap = gap ? gap + at : NULL, .spread = spread ? spread + at : NULL};
    char err[512] = "";
    if (kt->credits(&blk, &out, err, sizeof err) != 0)
      rd_fail(st, RD_EFAIL, "%s backend failed in the benchmark credit kernel: %s", bname, err);
    m += rows;
  }
  if (st->code == RD_OK && w->given)
    for (int64_t k = 0; k < n; k++) {
      int64_t flat = w->lo + k, m = flat / I, i = flat % I;
      double v = w->given[(m - w->m0) * I + i];
      if (!isnan(v)) credit[k] = v;
    }
  if (st->code == RD_OK && want_ties) {
    /* a Ties row's own credit is its accuracy, min(correct) > max(incorrect) (the composite
     * itself is per prompt) */
    for (int64_t k = 0; k < n; k++)
      if (p->item_subset[(w->lo + k) % I] == d->ties_subset) credit[k] = gap[k] > 0.0 ? 1.0 : 0.0;
    int64_t P = d->n_prompts;
    for (int64_t q = 0; q < d->M * P * 4; q++) g[q] = -INFINITY;
    for (int64_t m = w->m0; m < w->m1; m++)
      for (int64_t pr = 0; pr < P; pr++)
        for (int kind = 0; kind < 2; kind++) {
          int64_t i = kind ? p->prompt_tied[pr] : p->prompt_ref[pr], flat = m * I + i;
          if (i < 0 || flat < w->lo || flat >= w->hi) continue;
          g[(m * P + pr) * 4 + 2 * kind] = gap[flat - w->lo];
          g[(m * P + pr) * 4 + 2 * kind + 1] = spread[flat - w->lo];
        }
  }
  free(gap);
  free(spread);
  return st->code;
}

/* Every rank (or rank 0 only) receives the flat credit ranges of all ranks in order. */
static void gather_credits(const rd_ctx *ctx, const bench_dims *d, const double *mine, double *all, int everyone) {
  int *counts = malloc(sizeof(int) * (size_t)ctx->size), *displs = malloc(sizeof(int) * (size_t)ctx->size);
  if (!counts || !displs) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  for (int r = 0; r < ctx->size; r++) {
    int64_t lo, hi;
    rank_flat_range(d, ctx->size, r, &lo, &hi);
    counts[r] = (int)(hi - lo);
    displs[r] = (int)lo;
  }
  if (everyone)
    RD_MPI_CHECK(ctx, MPI_Allgatherv(mine, counts[ctx->rank], MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, ctx->comm));
  else
    RD_MPI_CHECK(ctx, MPI_Gatherv(mine, counts[ctx->rank], MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, 0, ctx->comm));
  free(counts);
  free(displs);
}

/* ---- bootstrap: replicates by index, intervals by quantity ------------------------------------- */

/* Rank r computes replicates rd_split_range(B, size, r) (every model's sections and score, Q = M × K
 * values each); an all-to-all exchange then gives each rank every replicate of its share of the
 * quantities, rd_split_range(Q, size, r), whose percentile intervals it computes. With comparisons,
 * every rank receives all models' score replicates and computes its share of the pairs. Rank 0
 * gathers the intervals ci [Q × 3: lo, hi, dropped] and comparisons cmp [n_cmp × 4: lo, hi, p, used].
 * Each value is computed whole by one rank from the same replicates, whatever the rank count. */
static int bootstrap_intervals(const rd_ctx *ctx, const bench_eval *E, int64_t B, int64_t seed, const char *job,
                               int n_cmp, const int *cmp_a, const int *cmp_b, rd_progress *prog, double *ci,
                               double *cmp, rd_status *st) {
  const bench_dims *d = &E->p->d;
  int size = ctx->size, me = ctx->rank;
  int64_t M = d->M, K = d->n_sec + 1, Q = M * K, b0, b1, q0, q1;
  rd_split_range(B, size, me, &b0, &b1);
  rd_split_range(Q, size, me, &q0, &q1);
  int64_t nb = b1 - b0, nq = q1 - q0;
  /* large buffers on huge pages where the kernel allows (fewer fresh-page faults) */
  double *local = rd_malloc_big(sizeof(double) * (size_t)(nb * Q + 1), st, "bootstrap replicates");
  double *T = rd_malloc_big(sizeof(double) * (size_t)(nb * Q + 1), st, "bootstrap replicates");
  double *cols = size > 1 ? rd_malloc_big(sizeof(double) * (size_t)(nq * B + 1), st, "bootstrap replicates") : NULL;
  double *myci = malloc(sizeof(double) * (size_t)(3 * nq + 1));
  int *sc = malloc(sizeof(int) * (size_t)size), *sd = malloc(sizeof(int) * (size_t)size);
  int *rc = malloc(sizeof(int) * (size_t)size), *rdp = malloc(sizeof(int) * (size_t)size);
  int *ones = malloc(sizeof(int) * (size_t)size);
  MPI_Datatype *rt = malloc(sizeof(MPI_Datatype) * (size_t)size), *stp = malloc(sizeof(MPI_Datatype) * (size_t)size);
  if (!local || !T || (size > 1 && !cols) || !myci || !sc || !sd || !rc || !rdp || !ones || !rt || !stp)
    rd_abort(ctx, __FILE__, __LINE__, "out of memory for the bootstrap");
  for (int64_t b = b0; b < b1 && st->code == RD_OK; b += 64) {
    int64_t e = b + 64 < b1 ? b + 64 : b1;
    if (bench_bootstrap_block(E, seed, job, b, e, local + (b - b0) * Q, st) == RD_OK && prog)
      rd_progress_update(prog, e - b0);
  }
  if (rd_agree(ctx, st) != RD_OK) goto out;
  /* replicate-major to quantity-major, eight quantities (one cache line of a replicate) at a time;
   * the block for rank s is then quantities [q0_s, q1_s) x my replicates, contiguous */
  for (int64_t qa = 0; qa < Q; qa += 8) {
    int64_t w = Q - qa < 8 ? Q - qa : 8;
    for (int64_t b = 0; b < nb; b++)
      for (int64_t j = 0; j < w; j++) T[(qa + j) * nb + b] = local[b * Q + qa + j];
  }
  if (size == 1) {
    cols = T;  /* one rank: the transposed replicates are the columns */
    T = NULL;
  } else {
    /* each rank sends its block as it lies in T; the receiver places rank s's replicates of each of
     * its quantities straight into the columns (a strided datatype), in replicate order */
    for (int r = 0; r < size; r++) {
      int64_t sq0, sq1, sb0, sb1;
      rd_split_range(Q, size, r, &sq0, &sq1);
      rd_split_range(B, size, r, &sb0, &sb1);
      sc[r] = (int)((sq1 - sq0) * nb);
      sd[r] = (int)(sq0 * nb * (int64_t)sizeof(double));
      stp[r] = MPI_DOUBLE;
      ones[r] = 1;
      rdp[r] = (int)(sb0 * (int64_t)sizeof(double));
      RD_MPI_CHECK(ctx, MPI_Type_vector((int)nq, (int)(sb1 - sb0), (int)B, MPI_DOUBLE, &rt[r]));
      RD_MPI_CHECK(ctx, MPI_Type_commit(&rt[r]));
      if (nq == 0 || sb1 == sb0) ones[r] = 0;
    }
    RD_MPI_CHECK(ctx, MPI_Alltoallw(T, sc, sd, stp, cols, ones, rdp, rt, ctx->comm));
    for (int r = 0; r < size; r++) MPI_Type_free(&rt[r]);
  }
  double *scores = NULL, *mycmp = NULL;
  if (n_cmp > 0) {
    /* every model's score replicates, everywhere: each rank sends the score columns it owns */
    scores = malloc(sizeof(double) * (size_t)(M * B));
    double *mine = malloc(sizeof(double) * (size_t)(nq * B + 1));
    if (!scores || !mine) rd_abort(ctx, __FILE__, __LINE__, "out of memory for the comparisons");
    int64_t n_mine = 0;
    for (int64_t q = q0; q < q1; q++)
      if (q % K == K - 1) memcpy(mine + (n_mine++) * B, cols + (q - q0) * B, sizeof(double) * (size_t)B);
    for (int r = 0, pos = 0; r < size; r++) {
      int64_t sq0, sq1, cnt = 0;
      rd_split_range(Q, size, r, &sq0, &sq1);
      for (int64_t q = sq0; q < sq1; q++) cnt += q % K == K - 1;
      rc[r] = (int)(cnt * B);
      rdp[r] = pos;
      pos += rc[r];
    }
    RD_MPI_CHECK(ctx, MPI_Allgatherv(mine, (int)(n_mine * B), MPI_DOUBLE, scores, rc, rdp, MPI_DOUBLE, ctx->comm));
    free(mine);
  }
  for (int64_t q = 0; q < nq; q++) {
    double lo, hi;
    size_t dropped = rd_percentile_ci95(cols + q * B, (size_t)B, &lo, &hi);
    myci[3 * q] = lo;
    myci[3 * q + 1] = hi;
    myci[3 * q + 2] = (double)dropped;
  }
  for (int r = 0, pos = 0; r < size; r++) {
    int64_t sq0, sq1;
    rd_split_range(Q, size, r, &sq0, &sq1);
    rc[r] = (int)(3 * (sq1 - sq0));
    rdp[r] = pos;
    pos += rc[r];
  }
  RD_MPI_CHECK(ctx, MPI_Gatherv(myci, (int)(3 * nq), MPI_DOUBLE, ci, rc, rdp, MPI_DOUBLE, 0, ctx->comm));
  if (n_cmp > 0) {
    int64_t c0, c1;
    rd_split_range(n_cmp, size, me, &c0, &c1);
    mycmp = malloc(sizeof(double) * (size_t)(4 * (c1 - c0) + 1));
    double *scratch = malloc(sizeof(double) * (size_t)(B + 1));
    if (!mycmp || !scratch) rd_abort(ctx, __FILE__, __LINE__, "out of memory for the comparisons");
    for (int64_t k = c0; k < c1; k++)
      bench_compare_pair(scores + cmp_a[k] * B, scores + cmp_b[k] * B, B, scratch, mycmp + 4 * (k - c0));
    free(scratch);
    for (int r = 0, pos = 0; r < size; r++) {
      int64_t r0, r1;
      rd_split_range(n_cmp, size, r, &r0, &r1);
      rc[r] = (int)(4 * (r1 - r0));
      rdp[r] = pos;
      pos += rc[r];
    }
    RD_MPI_CHECK(ctx, MPI_Gatherv(mycmp, (int)(4 * (c1 - c0)), MPI_DOUBLE, cmp, rc, rdp, MPI_DOUBLE, 0, ctx->comm));
  }
  free(scores);
  free(mycmp);
out:
  free(local);
  free(T);
  free(cols);
  free(ones);
  free(rt);
  free(stp);
  free(myci);
  free(sc);
  free(sd);
  free(rc);
  free(rdp);
  return st->code;
}

/* ---- output ---------------------------------------------------------------------------------- */

static int write_outputs(hid_t h5, const bench_plan *p, const double *credit, const double *subset_score,
                         rd_status *st) {
  const bench_dims *d = &p->d;
  int64_t ds[2] = {d->M, d->S};
  /* per-subset accuracies: no items, an empty [M, 0] item_credit */
  int64_t dc[2] = {d->M, d->accuracy_mode ? 0 : d->I};
  RD_TRY(rd_h5_write_f64(h5, "/bench/item_credit", 2, dc, credit, st));
  return rd_h5_write_f64(h5, "/bench/subset_score", 2, ds, subset_score, st);
}

/* ---- run ------------------------------------------------------------------------------------- */

/* Phases 1-2 (collective): rank 0 checks the layout, reads and checks the item tables and resolves
 * the scheme, and every rank gets the plan; then every rank maps (or reads) its tiles of models x
 * item blocks and checks their values. Each phase ends agreed, the value errors by their keys, so
 * the lowest offending index is reported whatever the rank count. */
static int bench_load(const rd_ctx *ctx, const rd_job *job, bench_plan *p, bench_root *r, bench_rows *w,
                      rd_status *st) {
  if (ctx->rank == 0) {
    hid_t f;
    if (rd_h5_open(job->input, MPI_COMM_NULL, &f, st) == RD_OK) {
      bench_prepare(f, job, p, r, st);
      rd_h5_close(f);
    }
  }
  if (rd_share_status(ctx, st, 0) != RD_OK) return st->code;
  plan_share(ctx, p);
  rd_timing_mark(ctx->rank, job->name, "layout+tables");
  const bench_dims *d = &p->d;
  if (!d->accuracy_mode) {
    rank_flat_range(d, ctx->size, ctx->rank, &w->lo, &w->hi);
    w->m0 = w->lo / d->I;
    w->m1 = w->hi > w->lo ? (w->hi - 1) / d->I + 1 : w->m0;
    rows_read(p, job, w, st);
    if (rd_agree(ctx, st) != RD_OK) return st->code;
    rd_timing_mark(ctx->rank, job->name, "read+check scores");
  }
  return RD_OK;
}

/* Every check the report would make on the input's values, without computing it. */
static int bench_check(const rd_ctx *ctx, const rd_job *job, const rd_jobfile *jf, rd_status *st) {
  (void)jf;
  bench_plan p;
  bench_root r;
  bench_rows w;
  memset(&p, 0, sizeof p);
  memset(&r, 0, sizeof r);
  memset(&w, 0, sizeof w);
  bench_load(ctx, job, &p, &r, &w, st);
  rows_free(&w);
  bench_plan_free(&p);
  root_free(&r);
  return st->code;
}

static int bench_run(const rd_ctx *ctx, const rd_job *job, const rd_jobfile *jf, rd_run_out *out, rd_status *st) {
  const bench_opts *o = job->opts;
  bench_plan p;
  bench_root r;
  bench_rows w;
  bench_eval E;
  memset(&p, 0, sizeof p);
  memset(&r, 0, sizeof r);
  memset(&w, 0, sizeof w);
  memset(&E, 0, sizeof E);
  double *mine = NULL, *credit = NULL, *g = NULL, *subset_score = NULL, *ci = NULL, *cmp = NULL;
  rd_progress prog;

  /* Phases 1-2: the plan everywhere; the rank's tiles read (or mapped) and checked. */
  if (bench_load(ctx, job, &p, &r, &w, st) != RD_OK) goto done;
  const bench_dims *d = &p.d;
  int64_t B = d->accuracy_mode ? 0 : o->bootstrap;

  if (!d->accuracy_mode) {
    /* Phase 3: per-item credits with the backend kernel; the Ties rows' gaps and spreads. */
    int64_t n = w.hi - w.lo, G = d->M * d->n_prompts * 4;
    mine = malloc(sizeof(double) * (size_t)(n ? n : 1));
    g = malloc(sizeof(double) * (size_t)(G ? G : 1));
    if (!mine || !g) rd_abort(ctx, __FILE__, __LINE__, "out of memory for credits");
    rows_credits(ctx, &p, &w, mine, g, st);
    if (rd_agree(ctx, st) != RD_OK) goto done;
    rows_free(&w);
    rd_timing_mark(ctx->rank, job->name, "credits");

    /* Phase 4: credits in global order (everywhere when the bootstrap needs them). */
    if ((B > 0 || ctx->rank == 0) && !(credit = rd_malloc_big(sizeof(double) * (size_t)(d->M * d->I), st, "credits")))
      rd_abort(ctx, __FILE__, __LINE__, "out of memory for credits");
    gather_credits(ctx, d, mine, credit, B > 0);
    if (G > 0) RD_MPI_CHECK(ctx, MPI_Allreduce(MPI_IN_PLACE, g, (int)G, MPI_DOUBLE, MPI_MAX, ctx->comm));
    free(mine);
    mine = NULL;
    rd_timing_mark(ctx->rank, job->name, "gather credits");
  }

  /* Phase 5: the evaluation tables (credits by subset, Ties parts) on ranks that need them. */
  if (B > 0 || ctx->rank == 0) {
    E.acc_input = r.acc;
    if (bench_eval_init(&E, &p, o, credit, st) == RD_OK && d->n_prompts > 0) bench_ties_build(&p, g, &E.ties, st);
  }
  if (rd_agree(ctx, st) != RD_OK) goto done;
  rd_timing_mark(ctx->rank, job->name, "evaluation tables");

  /* Phase 6: bootstrap replicates by index, their intervals by quantity, comparisons by pair. */
  if (B > 0) {
    int n_cmp = r.n_cmp;
    RD_MPI_CHECK(ctx, MPI_Bcast(&n_cmp, 1, MPI_INT, 0, ctx->comm));
    if (ctx->rank != 0) {
      r.cmp_a = malloc(sizeof(int) * (size_t)(n_cmp + 1));
      r.cmp_b = malloc(sizeof(int) * (size_t)(n_cmp + 1));
      if (!r.cmp_a || !r.cmp_b) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
    }
    rd_bcast_bytes(ctx, r.cmp_a, sizeof(int) * (size_t)n_cmp, 0);
    rd_bcast_bytes(ctx, r.cmp_b, sizeof(int) * (size_t)n_cmp, 0);
    if (ctx->rank == 0) {
      ci = malloc(sizeof(double) * (size_t)(3 * d->M * (d->n_sec + 1)));
      cmp = malloc(sizeof(double) * (size_t)(4 * n_cmp + 1));
      if (!ci || !cmp) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
    }
    int64_t b0, b1;
    rd_split_range(B, ctx->size, ctx->rank, &b0, &b1);
    rd_progress_begin(&prog, ctx->quiet ? NULL : ctx->err, job->name, "bootstrap", b1 - b0);
    if (bootstrap_intervals(ctx, &E, B, jf->seed, job->name, n_cmp, r.cmp_a, r.cmp_b, &prog, ci, cmp, st) != RD_OK)
      goto done;
    rd_progress_end(&prog);
    rd_timing_mark(ctx->rank, job->name, "bootstrap");
  }

  /* Phase 7 (rank 0): report, outputs, leaderboard. */
  if (ctx->rank == 0) {
    bench_report_in in = {.p = &p, .o = o, .E = &E, .credit = credit, .ci = ci, .cmp = cmp, .B = B, .cmp_a = r.cmp_a,
                          .cmp_b = r.cmp_b, .n_cmp = r.n_cmp, .missing = r.missing, .n_missing = r.n_missing,
                          .file = job->input};
    if (bench_report(&in, &out->result, &subset_score, st) == RD_OK) {
      write_outputs(out->h5, &p, credit, subset_score, st);
      if (st->code == RD_OK && ctx->out) bench_leaderboard(ctx->out, job->name, out->result);
    }
    rd_timing_mark(ctx->rank, job->name, "report+h5");
  }
  rd_share_status(ctx, st, 0);

done:
  rows_free(&w);
  bench_eval_free(&E);
  bench_plan_free(&p);
  root_free(&r);
  free(mine);
  free(credit);
  free(g);
  free(ci);
  free(cmp);
  free(subset_score);
  return st->code;
}

const rd_kind rd_kind_benchmark = {
    .name = "benchmark",
    .default_group = "/bench",
    .options = bench_options,
    .parse = bench_parse,
    .free_opts = bench_free_opts,
    .validate = bench_validate,
    .check = bench_check,
    .run = bench_run,
};
