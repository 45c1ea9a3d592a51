/* benchmark: the job options (one table: parsing, effective options, `rmdiag help benchmark`) and the
 * official RewardBench schemes they name (see docs/reference.md, 'benchmark options'). */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_internal.h"
#include "rmdiag/common/jsonutil.h"

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
const bench_section bench_prior_sets = {"Prior Sets", 4, v1_prior, v1_prior_w};
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

static int is_in(const char *name, const char *const *list, int n) {
  for (int i = 0; n < 0 ? list[i] != NULL : i < n; i++)
    if (strcmp(list[i], name) == 0) return 1;
  return 0;
}

/* A subset the official scheme does not know is a bad input (a typo, or v1 and v2 files mixed). */
int bench_known_subset(const bench_opts *o, const char *name) {
  if (o->scheme == BENCH_V2) return is_in(name, v2_names, 6);
  for (int k = 0; k < 4; k++)
    if (is_in(name, v1_sections[k].subsets, v1_sections[k].n)) return 1;
  return is_in(name, v1_prior, 4) || is_in(name, v1_other, -1);
}

void bench_free_opts(void *ptr) {
  bench_opts *o = ptr;
  if (!o) return;
  if (o->scheme == BENCH_CUSTOM && o->sections) {
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

/* ---- "scheme" -------------------------------------------------------------------------------- */

/* The position of the first key of `obj` (in order) that repeats an earlier one, or -1; sorting keeps
 * a long list quick. -2 when out of memory. */
static int64_t repeated_key(const cJSON *obj) {
  int64_t n = cJSON_GetArraySize(obj), first = 0, i = 0;
  const char **keys = malloc(sizeof(char *) * (size_t)(n ? n : 1));
  if (!keys) return -2;
  for (const cJSON *c = obj->child; c; c = c->next) keys[i++] = c->string;
  int64_t at = rd_first_duplicate(keys, n, &first);
  free(keys);
  return at;
}

/* One section of a custom scheme, {SUBSET: WEIGHT, ...}, appended to the effective sections;
 * `repeated`: the section's name repeats an earlier one. */
static int parse_custom_section(const cJSON *s, int repeated, bench_section *b, cJSON *esecs, const rd_where *w,
                                rd_status *st) {
  if (repeated) return rd_fail(st, RD_EINPUT, "%s: section \"%s\" appears twice", w->path, s->string);
  if (!s->string[0] || !cJSON_IsObject(s) || !s->child)
    return rd_fail(st, RD_EINPUT, "%s: section \"%s\" must be a non-empty object {SUBSET: WEIGHT, ...}", w->path,
                   s->string);
  b->name = s->string;
  b->n = cJSON_GetArraySize(s);
  b->subsets = calloc((size_t)b->n, sizeof *b->subsets);
  b->weights = calloc((size_t)b->n, sizeof *b->weights);
  if (!b->subsets || !b->weights) return rd_fail(st, RD_EFAIL, "out of memory");
  cJSON *es = cJSON_AddObjectToObject(esecs, s->string);
  int64_t repeated_subset = repeated_key(s);
  if (repeated_subset == -2) return rd_fail(st, RD_EFAIL, "out of memory");
  int k = 0;
  for (const cJSON *e = s->child; e; e = e->next, k++) {
    if (k == repeated_subset)
      return rd_fail(st, RD_EINPUT, "%s: section \"%s\" names subset \"%s\" twice", w->path, s->string, e->string);
    if (!e->string[0] || !cJSON_IsNumber(e) || !isfinite(e->valuedouble) || e->valuedouble <= 0)
      return rd_fail(st, RD_EINPUT, "%s: section \"%s\", subset \"%s\": the weight must be a positive number",
                     w->path, s->string, e->string);
    b->subsets[k] = e->string;
    b->weights[k] = e->valuedouble;
    cJSON_AddNumberToObject(es, e->string, e->valuedouble);
  }
  return RD_OK;
}

/* {"sections": {NAME: {SUBSET: WEIGHT, ...}, ...}, "item_rule": "strict" | "tie-credit",
 *  "ties_subset": NAME}, written back to the effective options as {"sections", "item_rule"[,
 *  "ties_subset"]}. */
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
  int n = cJSON_GetArraySize(secs);
  o->sections = calloc((size_t)n, sizeof *o->sections);
  if (!o->sections) return rd_fail(st, RD_EFAIL, "out of memory");
  o->n_sections = n;
  cJSON *esecs = cJSON_CreateObject();
  int64_t repeated = repeated_key(secs);
  if (repeated == -2) {
    cJSON_Delete(esecs);
    return rd_fail(st, RD_EFAIL, "out of memory");
  }
  int i = 0;
  for (const cJSON *s = secs->child; s; s = s->next, i++)
    if (parse_custom_section(s, i == repeated, &o->sections[i], esecs, &w, st) != RD_OK) {
      cJSON_Delete(esecs);
      return st->code;
    }
  cJSON *es = cJSON_CreateObject();
  cJSON_AddItemToObject(es, "sections", esecs);
  cJSON_AddStringToObject(es, "item_rule", rule);
  if (o->ties_subset) cJSON_AddStringToObject(es, "ties_subset", o->ties_subset);
  cJSON_AddItemToObject(eff, "scheme", es);
  return RD_OK;
}

static void set_official(bench_opts *o, int v2) {
  o->scheme = v2 ? BENCH_V2 : BENCH_V1;
  o->rule = v2 ? RD_BENCH_TIE_CREDIT : RD_BENCH_STRICT;
  o->sections = v2 ? v2_sections : v1_sections;
  o->n_sections = v2 ? 6 : 4;
  o->ties_subset = v2 ? "Ties" : NULL;
}

/* Without "scheme" the effective options hold rewardbench-v1 until the input is validated, when the
 * input's source attribute may change it (bench_scheme_from_source); the spec hash is taken after. */
static int parse_scheme(const cJSON *sch, void *field, void *opts, cJSON *eff, const rd_where *w, rd_status *st) {
  (void)field;
  bench_opts *o = opts;
  o->scheme_given = sch != NULL;
  if (!sch || (cJSON_IsString(sch) && strcmp(sch->valuestring, "rewardbench-v1") == 0)) {
    set_official(o, 0);
    cJSON_AddStringToObject(eff, "scheme", "rewardbench-v1");
  } else if (cJSON_IsString(sch) && strcmp(sch->valuestring, "rewardbench-v2") == 0) {
    set_official(o, 1);
    cJSON_AddStringToObject(eff, "scheme", "rewardbench-v2");
  } else if (cJSON_IsObject(sch)) {
    o->scheme = BENCH_CUSTOM;
    RD_TRY(parse_custom(o, sch, w, eff, st));
  } else {
    return rd_fail(st, RD_EINPUT,
                   "%s: \"scheme\" must be \"rewardbench-v1\", \"rewardbench-v2\" or {\"sections\": {...}, "
                   "\"item_rule\": \"strict\" | \"tie-credit\"}",
                   w->path);
  }
  return RD_OK;
}

/* ---- "compare" ------------------------------------------------------------------------------- */

/* "all", or a list of pairs of model names (the names are resolved against the input later);
 * absent: no comparisons, written back as an empty list. */
static int parse_compare(const cJSON *cmp, void *field, void *opts, cJSON *eff, const rd_where *w, rd_status *st) {
  (void)field;
  bench_opts *o = opts;
  if (!cmp) {
    cJSON_AddItemToObject(eff, "compare", cJSON_CreateArray());
    return RD_OK;
  }
  if (cJSON_IsString(cmp) && strcmp(cmp->valuestring, "all") == 0) {
    o->compare_all = 1;
    cJSON_AddStringToObject(eff, "compare", "all");
    return RD_OK;
  }
  if (!cJSON_IsArray(cmp))
    return rd_fail(st, RD_EINPUT, "%s: \"compare\" must be \"all\" or a list of model-name pairs [[\"A\", \"B\"], ...]",
                   w->path);
  int n = cJSON_GetArraySize(cmp);
  o->pair_a = calloc((size_t)(n ? n : 1), sizeof *o->pair_a);
  o->pair_b = calloc((size_t)(n ? n : 1), sizeof *o->pair_b);
  if (!o->pair_a || !o->pair_b) return rd_fail(st, RD_EFAIL, "out of memory");
  cJSON *ec = cJSON_AddArrayToObject(eff, "compare");
  int i = 0;
  for (const cJSON *e = cmp->child; e; e = e->next, i++) {
    if (!cJSON_IsArray(e) || cJSON_GetArraySize(e) != 2 || !cJSON_IsString(e->child) ||
        !cJSON_IsString(e->child->next))
      return rd_fail(st, RD_EINPUT, "%s: \"compare\"[%d] must be a pair of model names [\"A\", \"B\"]", w->path, i);
    o->pair_a[i] = e->child->valuestring;
    o->pair_b[i] = e->child->next->valuestring;
    if (strcmp(o->pair_a[i], o->pair_b[i]) == 0)
      return rd_fail(st, RD_EINPUT, "%s: \"compare\"[%d] compares model \"%s\" with itself", w->path, i, o->pair_a[i]);
    cJSON *pr = cJSON_CreateArray();
    cJSON_AddItemToArray(pr, cJSON_CreateString(o->pair_a[i]));
    cJSON_AddItemToArray(pr, cJSON_CreateString(o->pair_b[i]));
    cJSON_AddItemToArray(ec, pr);
  }
  o->n_pairs = n;
  return RD_OK;
}

/* ---- the table ------------------------------------------------------------------------------- */

static const char *const bench_adjust_choices[] = {"none", "holm", NULL};

/* Row order is the order of the effective options in the report. */
const rd_option bench_options[] = {
    RD_OPTION_CUSTOM("scheme", bench_opts, scheme, parse_scheme,
                     "\"rewardbench-v1\", \"rewardbench-v2\" or {\"sections\": {SECTION: {SUBSET: WEIGHT}}, "
                     "\"item_rule\", \"ties_subset\"}",
                     "\"rewardbench-v1\" (\"rewardbench-v2\" when the input's source attribute is rewardbench2)",
                     "how item credits, subsets and sections make the score"),
    RD_OPTION_BOOL("prior_sets", bench_opts, prior_sets, 0,
                   "add the old leaderboard's Prior Sets section (rewardbench-v1 only)"),
    RD_OPTION_BOOL("allow_missing", bench_opts, allow_missing, 0,
                   "accept scheme subsets the input lacks, re-weighting each section over the subsets present"),
    RD_OPTION_BOOTSTRAP(bench_opts, bootstrap, 1000),
    RD_OPTION_CUSTOM("compare", bench_opts, pair_a, parse_compare, "\"all\" or list of [\"MODEL\", \"MODEL\"]",
                     "none", "paired comparisons of overall scores: every pair of models, or the pairs listed"),
    /* absent, the two below leave the effective options (and so the spec hash and every report made
     * without them) as they were */
    {.key = "compare_sections", .type = RD_OPT_BOOL, .offset = offsetof(bench_opts, compare_sections), .idef = 0,
     .effective = RD_EFF_IF_SET, .help = "compare each pair's sections as well as its score (needs \"compare\")"},
    {.key = "adjust", .type = RD_OPT_STRING, .offset = offsetof(bench_opts, adjust), .sdef = "none",
     .choices = bench_adjust_choices, .effective = RD_EFF_IF_SET,
     .help = "\"holm\": Holm-adjusted p-values (p_holm) across every comparison p-value of the report"},
    RD_OPTION_END,
};

int bench_read_source(hid_t f, const char *group) {
  char src[64];
  if (!rd_h5_exists(f, group) || !rd_h5_read_attr_string(f, group, "source", src, sizeof src)) return 0;
  return strcmp(src, "rewardbench2") == 0 ? 2 : strcmp(src, "rewardbench") == 0 ? 1 : 0;
}

int bench_scheme_from_source(bench_opts *o, cJSON *effective, int source, const rd_job *job, rd_status *st) {
  o->source = source;
  if (o->scheme_given || source != 2) return RD_OK;
  set_official(o, 1);
  cJSON_ReplaceItemInObjectCaseSensitive(effective, "scheme", cJSON_CreateString("rewardbench-v2"));
  if (o->prior_sets)
    return rd_fail(st, RD_EINPUT, "%s: \"prior_sets\" applies to the rewardbench-v1 scheme only, and the scheme is "
                   "rewardbench-v2: the job names no \"scheme\" and the input's source attribute says rewardbench2 "
                   "(see docs/reference.md, 'benchmark options')", job->where.path);
  return RD_OK;
}

int bench_parse(rd_job *job, const rd_jobfile *jf, rd_status *st) {
  (void)jf;
  bench_opts *o = calloc(1, sizeof *o);
  if (!o) return rd_fail(st, RD_EFAIL, "out of memory");
  job->opts = o;
  if (!(job->effective = cJSON_CreateObject())) return rd_fail(st, RD_EFAIL, "out of memory");
  RD_TRY(rd_options_parse(bench_options, job->spec, o, job->effective, &job->where, st));
  if (o->prior_sets && o->scheme != BENCH_V1)
    return rd_fail(st, RD_EINPUT, "%s: \"prior_sets\" applies to the rewardbench-v1 scheme only", job->where.path);
  o->holm = strcmp(o->adjust, "holm") == 0;
  int compares = o->compare_all || o->n_pairs > 0;
  if ((o->compare_sections || o->holm) && !compares)
    return rd_fail(st, RD_EINPUT, "%s: \"%s\" applies to comparisons: add \"compare\": \"all\" or a list of model "
                   "pairs", job->where.path, o->compare_sections ? "compare_sections" : "adjust");
  return RD_OK;
}
