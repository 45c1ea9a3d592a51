/* `rmdiag import rewardbench` and `rmdiag import rewardbench2`: RewardBench result files into the
 * benchmark input layout (see docs/reference.md, 'rewardbench'). Each file holds one model's results:
 * per-item files (one JSON object of parallel arrays, or JSON rows one per line or in one list, with an
 * optional metadata row first) or per-subset accuracy files. This file holds the options and the
 * reading; merging the models and writing are in rewardbench_write.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rewardbench_internal.h"
#include "rmdiag/common/jsonl.h"
#include "rmdiag/common/jsonutil.h"
#include "rmdiag/common/vec.h"
#include "rmdiag/import/args.h"
#include "rmdiag/import/formats.h"
#include "rmdiag/import/recognise.h"

/* ---- options ------------------------------------------------------------------------------------- */

/* The options both versions' importers take. */
#define RB_SHARED_ARGS                                                                        \
  {"--group", "G", RD_ARG_ONCE, RD_ARG_GLOBAL, "output group (default /bench)"},              \
      {"--drop-incomplete", NULL, RD_ARG_ONCE, RD_ARG_GLOBAL,                                 \
       "keep only the items (subset, id) every model has and drop the others,\n"              \
       "counting them per model (without it a missing item is an error)"},                    \
      RD_ARG_END

static const rd_arg rb1_table[] = {
    {"FILE", NULL, RD_ARG_REPEAT, RD_ARG_GLOBAL,
     "one model's results, any of:\n"
     "- the per-item object of parallel arrays RewardBench saves (id, subset,\n"
     "  scores_chosen, scores_rejected, results, model, ...)\n"
     "- JSON rows, one per line (optionally a first row {\"_record\": \"metadata\",\n"
     "  \"model\": ...}), with id, subset, scores_chosen, scores_rejected; rows with\n"
     "  only \"results\" (custom classifiers, generative judges) give the credit directly\n"
     "- per-subset accuracies {\"alpacaeval-easy\": 0.97, ..., \"model\": ...}"},
    RB_SHARED_ARGS,
};

const rd_args_spec rd_import_rewardbench_args = {
    .command = "rmdiag import rewardbench",
    .synopsis = "FILE... [--group /bench] [--drop-incomplete] -o OUT.h5",
    .args = rb1_table,
    .notes = "Scores are numbers or one-element lists, stored as float64. The model name is the file's\n"
             "\"model\" (else its base name); files of the same model are merged (e.g. core set + prior\n"
             "sets). Models are aligned by (subset, id): every model must have the same items\n"
             "(--drop-incomplete keeps those all have). RewardBench 2 files (num_correct, scores, or\n"
             "only RewardBench 2 subset names) and NumLeak panels are refused, naming their importer.\n"
             "NaN, Infinity and -Infinity (as Python writes them) are read, and refused where a finite\n"
             "number is needed.\n",
    .operand = "FILE",
    .max_operands = -1,
};

static const rd_arg rb2_table[] = {
    {"FILE", NULL, RD_ARG_REPEAT, RD_ARG_GLOBAL,
     "one model's results: JSON rows {\"id\", \"subset\", \"num_correct\", \"scores\"}\n"
     "one per line after an optional {\"_record\": \"metadata\", \"model\": ...} line,\n"
     "or the object of parallel arrays RewardBench 2 saves; scores are numbers or\n"
     "one-element lists, the first num_correct preferred; \"results\" is ignored\n"
     "(credits are recomputed from the scores). Per-subset accuracy files\n"
     "({\"Factuality\": 0.8, ...}) are accepted too."},
    RB_SHARED_ARGS,
};

const rd_args_spec rd_import_rewardbench2_args = {
    .command = "rmdiag import rewardbench2",
    .synopsis = "FILE... [--group /bench] [--drop-incomplete] -o OUT.h5",
    .args = rb2_table,
    .notes = "Scores are stored as float64. Files of the same model are merged; models are aligned by\n"
             "(subset, id) and must have the same items with the same numbers of completions\n"
             "(--drop-incomplete keeps those all have). RewardBench v1 files (scores_chosen,\n"
             "scores_rejected, or only v1 subset names) and NumLeak panels are refused, naming their\n"
             "importer.\n"
             "NaN, Infinity and -Infinity (as Python writes them) are read, and refused where a finite\n"
             "number is needed.\n",
    .operand = "FILE",
    .max_operands = -1,
};

static int parse_options(rb_state *S, int argc, char **argv, const char **group) {
  const rd_args_spec *spec = S->v2 ? &rd_import_rewardbench2_args : &rd_import_rewardbench_args;
  rd_arg_use *uses = NULL;
  int n = 0;
  RD_TRY(rd_args_parse(spec, argc, argv, &uses, &n, S->st));
  *group = "/bench";
  S->files = calloc((size_t)(n ? n : 1), sizeof *S->files);
  S->is_list = calloc((size_t)(n ? n : 1), 1);
  if (!S->files || !S->is_list) {
    free(uses);
    return rd_fail(S->st, RD_EFAIL, "out of memory");
  }
  for (int k = 0; k < n; k++) {
    if (uses[k].row < 0) S->files[S->n_files++] = uses[k].values[0];
    else if (uses[k].row == rd_args_row(spec, "--drop-incomplete")) S->drop_incomplete = 1;
    else *group = uses[k].values[0];
  }
  free(uses);
  if (S->n_files == 0)
    return rd_fail(S->st, RD_EINPUT, "rmdiag import %s: no input files (one file per model)", S->cmd);
  if ((*group)[0] != '/') return rd_fail(S->st, RD_EINPUT, "rmdiag import %s: --group must start with '/'", S->cmd);
  return RD_OK;
}

/* ---- values --------------------------------------------------------------------------------------- */

static const char *fname(const rb_state *S, int32_t f) { return S->files[f]; }

const char *rb_where(const rb_state *S, int32_t file, int64_t pos, char *buf, size_t n) {
  if (pos >= 1) snprintf(buf, n, "%s: line %lld", fname(S, file), (long long)pos);
  else if (S->is_list[file]) snprintf(buf, n, "%s: element %lld of the list", fname(S, file), (long long)(-pos - 1));
  else snprintf(buf, n, "%s: item %lld of the parallel arrays", fname(S, file), (long long)(-pos - 1));
  return buf;
}

/* ---- other formats' files ------------------------------------------------------------------------- */

/* Refuses an object (a row, or a whole file's object) whose keys mark another importer's files:
 * RewardBench v1 results read as v2 (or the reverse) would lose completions or credits, a NumLeak
 * panel would fail far from the cause. `pos` 0 names the file only. */
static int refuse_other(rb_state *S, const cJSON *obj, int32_t file, int64_t pos) {
  const char *key = NULL;
  rd_looks l = rd_import_looks(obj, &key), mine = S->v2 ? RD_LOOKS_RB2 : RD_LOOKS_RB1;
  if (l == mine) S->file_keyed = 1;
  if (l != RD_LOOKS_NUMLEAK && (l == mine || (l != RD_LOOKS_RB1 && l != RD_LOOKS_RB2))) return RD_OK;
  char loc[1200];
  if (pos == 0) snprintf(loc, sizeof loc, "%s", fname(S, file));
  else rb_where(S, file, pos, loc, sizeof loc);
  return rd_fail(S->st, RD_EINPUT, "%s: key \"%s\" marks %s, which rmdiag import %s does not read (it reads %s); "
                 "import this file with %s %s", loc, key, rd_looks_what(l), S->cmd, rd_looks_what(mine),
                 rd_looks_command(l), fname(S, file));
}

/* Counts the subset names of the file being read by RewardBench version; pos 0: a key of an accuracy
 * file. */
static void note_subset(rb_state *S, int64_t sub, int64_t pos) {
  int v = rd_rb_subset_version(S->subsets.keys[sub]), other = S->v2 ? 1 : 2;
  if (v == other && S->file_names[v] == 0) {
    S->other_sub = sub;
    S->other_pos = pos;
  }
  S->file_names[v]++;
}

/* A file whose keys do not say which version it is (per-subset accuracies, v1 rows with only
 * "results") is the other version's when it names only the other version's subsets. */
static int refuse_other_names(rb_state *S, int32_t file) {
  int mine = S->v2 ? 2 : 1, other = 3 - mine;
  if (S->file_keyed || S->file_names[other] == 0 || S->file_names[mine] > 0) return RD_OK;
  const char *name = S->subsets.keys[S->other_sub];
  char loc[1200];
  if (S->other_pos == 0) snprintf(loc, sizeof loc, "%s: key \"%s\"", fname(S, file), name);
  else rb_where(S, file, S->other_pos, loc, sizeof loc);
  rd_looks l = other == 1 ? RD_LOOKS_RB1 : RD_LOOKS_RB2;
  return rd_fail(S->st, RD_EINPUT, "%s: subset \"%s\" is a %s subset and the file names no %s subset: it holds %s, "
                 "which rmdiag import %s does not read; import this file with %s %s", loc, name,
                 other == 1 ? "RewardBench v1" : "RewardBench 2", mine == 1 ? "RewardBench v1" : "RewardBench 2",
                 rd_looks_what(l), S->cmd, rd_looks_command(l), fname(S, file));
}

/* What a value is, for "expected ..., got X"; non-finite numbers as the file spells them. */
static const char *type_name(const cJSON *v) {
  if (!v) return "nothing";
  if (cJSON_IsNull(v)) return "null";
  if (cJSON_IsBool(v)) return "a boolean";
  if (cJSON_IsNumber(v))
    return !isfinite(v->valuedouble) ? rd_json_number_text(v->valuedouble)
           : v->valuedouble != floor(v->valuedouble) ? "a fractional number" : "a number";
  if (cJSON_IsString(v)) return v->valuestring[0] ? "a string" : "an empty string";
  if (cJSON_IsArray(v)) {
    if (cJSON_GetArraySize(v) == 1 && cJSON_IsNumber(v->child) && !isfinite(v->child->valuedouble))
      return isnan(v->child->valuedouble) ? "a one-element list holding NaN" : "a one-element list holding an infinity";
    return cJSON_GetArraySize(v) == 0 ? "an empty list" : "a list";
  }
  if (cJSON_IsObject(v)) return "an object";
  return "an invalid value";
}

/* A score: a finite number, or a one-element list holding one. */
static int score_value(const cJSON *v, double *out) {
  if (cJSON_IsArray(v) && cJSON_GetArraySize(v) == 1) v = v->child;
  if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) return 0;
  *out = v->valuedouble;
  return 1;
}

/* An item id as text: a string, or an integer-valued number. */
static int id_text(const cJSON *v, char *buf, size_t n) {
  if (cJSON_IsString(v) && v->valuestring[0]) {
    snprintf(buf, n, "%s", v->valuestring);
    return strlen(v->valuestring) < n;
  }
  if (rd_json_is_int(v, -9007199254740991LL, 9007199254740991LL)) {
    snprintf(buf, n, "%lld", (long long)v->valuedouble);
    return 1;
  }
  return 0;
}

/* ---- models and items ----------------------------------------------------------------------------- */

static rb_model *model_get(rb_state *S, const char *name, int32_t file) {
  int is_new = 0;
  int64_t id = rd_idmap_get(&S->model_ids, name, strlen(name), &is_new);
  if (id < 0) return NULL;
  if (is_new) {
    if (RD_VEC_RESERVE(S->models, S->models_cap, (size_t)S->n_models + 1) != 0) return NULL;
    rb_model *m = &S->models[S->n_models++];
    memset(m, 0, sizeof *m);
    m->name = strdup(name);
    m->first_file = file;
    if (!m->name) return NULL;
  }
  return &S->models[id];
}

static int add_item(rb_state *S, rb_model *m, const char *subset, const char *id, const double *scores, int n,
                    int n_correct, double given, int32_t file, int64_t pos) {
  if (RD_VEC_RESERVE(m->items, m->cap, (size_t)m->n_items + 1) != 0 ||
      RD_VEC_RESERVE(m->scores, m->scap, (size_t)(m->n_scores + n)) != 0)
    return rd_fail(S->st, RD_EFAIL, "out of memory");
  size_t ls = strlen(subset), li = strlen(id);
  char *key = malloc(ls + li + 2);
  if (!key) return rd_fail(S->st, RD_EFAIL, "out of memory");
  memcpy(key, subset, ls);
  key[ls] = '\x1f';
  memcpy(key + ls + 1, id, li + 1);
  int64_t k = rd_idmap_get(&S->keys, key, ls + li + 1, NULL);
  free(key);
  int64_t sub = rd_idmap_get(&S->subsets, subset, ls, NULL);
  if (k < 0 || sub < 0) return rd_fail(S->st, RD_EFAIL, "out of memory");
  note_subset(S, sub, pos);
  m->items[m->n_items++] = (rb_item){k, (int32_t)sub, n, n_correct, m->n_scores, given, file, pos};
  memcpy(m->scores + m->n_scores, scores, sizeof(double) * (size_t)n);
  m->n_scores += n;
  if (!isnan(given)) S->any_given = 1;
  return RD_OK;
}

/* The subset and id every item carries; the id as text in idb. */
static int item_key(rb_state *S, const char *loc, const cJSON *subset, const cJSON *id, char *idb, size_t cap) {
  if (!cJSON_IsString(subset) || !subset->valuestring[0])
    return rd_fail(S->st, RD_EINPUT, "%s: key \"subset\": expected a subset name (string), got %s", loc,
                   type_name(subset));
  if (!id_text(id, idb, cap))
    return rd_fail(S->st, RD_EINPUT, "%s: key \"id\": expected an item id (a string of at most 4095 bytes, or an "
                   "integer), got %s", loc, type_name(id));
  if (rd_utf8_invalid_at(subset->valuestring, strlen(subset->valuestring)) >= 0 ||
      rd_utf8_invalid_at(idb, strlen(idb)) >= 0)
    return rd_fail(S->st, RD_EINPUT, "%s: key \"%s\": not valid UTF-8 text", loc,
                   rd_utf8_invalid_at(idb, strlen(idb)) >= 0 ? "id" : "subset");
  return RD_OK;
}

/* One v1 item: scores_chosen / scores_rejected (numbers or one-element lists), or `results` only
 * (a credit given directly, as custom classifiers and generative judges write). */
static int v1_item(rb_state *S, rb_model *m, const cJSON *subset, const cJSON *id, const cJSON *sc, const cJSON *sr,
                   const cJSON *res, int32_t file, int64_t pos) {
  char loc[1200], idb[4096];
  rb_where(S, file, pos, loc, sizeof loc);
  RD_TRY(item_key(S, loc, subset, id, idb, sizeof idb));
  double v[2] = {0.0, 0.0}, given = NAN;
  int have_c = sc && !cJSON_IsNull(sc), have_r = sr && !cJSON_IsNull(sr);
  if (have_c || have_r) {
    if (!score_value(sc, &v[0]))
      return rd_fail(S->st, RD_EINPUT, "%s: key \"scores_chosen\": expected a finite number or a one-element list, "
                     "got %s", loc, type_name(sc));
    if (!score_value(sr, &v[1]))
      return rd_fail(S->st, RD_EINPUT, "%s: key \"scores_rejected\": expected a finite number or a one-element list, "
                     "got %s", loc, type_name(sr));
    if (res && !cJSON_IsNull(res)) S->results_ignored++;  /* the scores decide */
  } else if (res && !cJSON_IsNull(res)) {
    double r = 0.0;
    if (cJSON_IsBool(res)) r = cJSON_IsTrue(res);
    else if (!score_value(res, &r) || r < 0.0 || r > 1.0)
      return rd_fail(S->st, RD_EINPUT, "%s: key \"results\": expected a credit between 0 and 1, got %s", loc,
                     cJSON_IsNumber(res) && isfinite(res->valuedouble) ? "a number outside [0, 1]" : type_name(res));
    given = r;
  } else {
    return rd_fail(S->st, RD_EINPUT, "%s: item (subset \"%s\", id \"%s\") has neither \"scores_chosen\" and "
                   "\"scores_rejected\" nor \"results\"", loc, subset->valuestring, idb);
  }
  return add_item(S, m, subset->valuestring, idb, v, 2, 1, given, file, pos);
}

/* A buffer for one item's scores, reused across items. */
typedef struct score_buf {
  double *v;
  size_t cap;
} score_buf;

/* One v2 item: num_correct and the list of scores, the preferred first. */
static int v2_item(rb_state *S, rb_model *m, const cJSON *subset, const cJSON *id, const cJSON *nc,
                   const cJSON *scores, int32_t file, int64_t pos, score_buf *buf) {
  char loc[1200], idb[4096];
  rb_where(S, file, pos, loc, sizeof loc);
  RD_TRY(item_key(S, loc, subset, id, idb, sizeof idb));
  if (!rd_json_is_int(nc, 1, 1000000))
    return rd_fail(S->st, RD_EINPUT, "%s: key \"num_correct\": expected a positive integer, got %s", loc,
                   cJSON_IsNumber(nc) && nc->valuedouble == floor(nc->valuedouble) ? "a number out of range"
                                                                                    : type_name(nc));
  if (!cJSON_IsArray(scores))
    return rd_fail(S->st, RD_EINPUT, "%s: key \"scores\": expected a list of scores, got %s", loc, type_name(scores));
  int n = cJSON_GetArraySize(scores), k = (int)nc->valuedouble;
  if (n <= k)
    return rd_fail(S->st, RD_EINPUT, "%s: item (subset \"%s\", id \"%s\") has %d score%s and num_correct = %d: no "
                   "rejected completion (expected more scores than num_correct)", loc, subset->valuestring, idb, n,
                   n == 1 ? "" : "s", k);
  if (RD_VEC_RESERVE(buf->v, buf->cap, (size_t)n) != 0) return rd_fail(S->st, RD_EFAIL, "out of memory");
  int j = 0;
  for (const cJSON *e = scores->child; e; e = e->next, j++)
    if (!score_value(e, &buf->v[j]))
      return rd_fail(S->st, RD_EINPUT, "%s: key \"scores\"[%d]: expected a finite number or a one-element list, got %s",
                     loc, j, type_name(e));
  return add_item(S, m, subset->valuestring, idb, buf->v, n, k, NAN, file, pos);
}

/* ---- the three kinds of file ------------------------------------------------------------------------ */

static int set_mode(rb_state *S, int mode, int32_t file) {
  if (S->mode == RB_MODE_NONE) {
    S->mode = mode;
    S->mode_file = file;
    return RD_OK;
  }
  if (S->mode == mode) return RD_OK;
  const char *kind = mode == RB_MODE_ITEMS ? "per-item" : "per-subset accuracy";
  const char *first_kind = S->mode == RB_MODE_ITEMS ? "per-item" : "per-subset accuracy";
  return rd_fail(S->st, RD_EINPUT, "%s is a %s file but %s is a %s file; import per-item files and per-subset "
                 "accuracy files separately", fname(S, file), kind, fname(S, S->mode_file), first_kind);
}

/* The model name when a file does not carry one: its base name without .json / .jsonl. */
static void default_name(const char *path, char *out, size_t n) {
  const char *b = strrchr(path, '/');
  b = b ? b + 1 : path;
  snprintf(out, n, "%s", b);
  size_t l = strlen(out);
  if (l > 6 && strcmp(out + l - 6, ".jsonl") == 0) out[l - 6] = '\0';
  else if (l > 5 && strcmp(out + l - 5, ".json") == 0) out[l - 5] = '\0';
}

/* The model's name: the "model" value when it is a non-empty string (UTF-8 text of at most cap - 1
 * bytes), else the file's base name. */
static int model_name(rb_state *S, const cJSON *mv, int32_t file, char *name, size_t cap) {
  if (!cJSON_IsString(mv) || !mv->valuestring[0]) {
    default_name(fname(S, file), name, cap);
    return RD_OK;
  }
  size_t l = strlen(mv->valuestring);
  if (l >= cap)
    return rd_fail(S->st, RD_EINPUT, "%s: key \"model\": a name of %zu bytes, expected at most %zu", fname(S, file), l,
                   cap - 1);
  if (rd_utf8_invalid_at(mv->valuestring, l) >= 0)
    return rd_fail(S->st, RD_EINPUT, "%s: key \"model\": the name is not valid UTF-8 text", fname(S, file));
  memcpy(name, mv->valuestring, l + 1);
  return RD_OK;
}

static rb_model *named_model(rb_state *S, const cJSON *mv, int32_t file) {
  char name[1024];
  if (model_name(S, mv, file, name, sizeof name) != RD_OK) return NULL;
  rb_model *m = model_get(S, name, file);
  if (!m) rd_fail(S->st, RD_EFAIL, "out of memory");
  return m;
}

/* A per-subset accuracy file: {"alpacaeval-easy": 0.97, ..., "model": ...}, or the rewardbench
 * CLI's summary with the accuracies under "extra_results". */
static int accuracy_file(rb_state *S, const cJSON *obj, int32_t file) {
  RD_TRY(set_mode(S, RB_MODE_ACCURACY, file));
  rb_model *m = named_model(S, cJSON_GetObjectItemCaseSensitive(obj, "model"), file);
  if (!m) return S->st->code;
  const cJSON *extra = cJSON_GetObjectItemCaseSensitive(obj, "extra_results");
  const cJSON *src = cJSON_IsObject(extra) ? extra : obj;
  int n = 0;
  for (const cJSON *e = src->child; e; e = e->next) {
    if (cJSON_IsString(e) || cJSON_IsNull(e) || cJSON_IsObject(e)) continue;  /* model, model_type, ... */
    double v;
    if (!cJSON_IsNumber(e) || !isfinite(e->valuedouble) || (v = e->valuedouble) < -0.01 || v > 1.01)
      return rd_fail(S->st, RD_EINPUT, "%s: key \"%s\": expected an accuracy between 0 and 1 (a Ties composite: "
                     "-0.01..1.01), got %s", fname(S, file), e->string,
                     cJSON_IsNumber(e) && isfinite(e->valuedouble) ? "a number out of range" : type_name(e));
    int64_t sub = rd_idmap_get(&S->subsets, e->string, strlen(e->string), NULL);
    if (sub < 0) return rd_fail(S->st, RD_EFAIL, "out of memory");
    note_subset(S, sub, 0);
    for (int64_t q = 0; q < m->n_acc; q++)
      if (m->acc_subset[q] == sub)
        return rd_fail(S->st, RD_EINPUT, "%s: key \"%s\": model \"%s\" already has an accuracy for this subset (from "
                       "%s)", fname(S, file), e->string, m->name, fname(S, m->acc_file[q]));
    void *arrays[] = {&m->acc_subset, &m->acc, &m->acc_file};
    const size_t elems[] = {sizeof *m->acc_subset, sizeof *m->acc, sizeof *m->acc_file};
    if (rd_vec_reserve_n(arrays, elems, 3, &m->acap, (size_t)m->n_acc + 1) != 0)
      return rd_fail(S->st, RD_EFAIL, "out of memory");
    m->acc_subset[m->n_acc] = (int32_t)sub;
    m->acc[m->n_acc] = v;
    m->acc_file[m->n_acc++] = file;
    n++;
  }
  if (n == 0)
    return rd_fail(S->st, RD_EINPUT, "%s: no subset accuracies found (expected {\"SUBSET\": accuracy, ...}, per-item "
                   "arrays, or JSON rows)", fname(S, file));
  return RD_OK;
}

/* An object of parallel arrays (`id`, `subset`, scores..., `model` a scalar), as RewardBench's
 * runners save their per-item results. */
static int parallel_arrays(rb_state *S, const cJSON *obj, int32_t file) {
  RD_TRY(set_mode(S, RB_MODE_ITEMS, file));
  const char *names_v1[] = {"id", "subset", "scores_chosen", "scores_rejected", "results", NULL};
  const char *names_v2[] = {"id", "subset", "num_correct", "scores", NULL};
  const char **names = S->v2 ? names_v2 : names_v1;
  const cJSON *col[5] = {NULL, NULL, NULL, NULL, NULL};
  const cJSON *sub = cJSON_GetObjectItemCaseSensitive(obj, "subset");
  int n = cJSON_GetArraySize(sub);
  if (n == 0) return rd_fail(S->st, RD_EINPUT, "%s: no items (the parallel arrays are empty)", fname(S, file));
  for (int k = 0; names[k]; k++) {
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(obj, names[k]);
    if (!c) continue;
    if (!cJSON_IsArray(c) || cJSON_GetArraySize(c) != n)
      return rd_fail(S->st, RD_EINPUT, "%s: key \"%s\": expected a list of %d entries (one per item, like \"subset\"), "
                     "got %s", fname(S, file), names[k], n,
                     cJSON_IsArray(c) ? "a list of another length" : type_name(c));
    col[k] = c->child;
  }
  if (!col[0])
    return rd_fail(S->st, RD_EINPUT, "%s: key \"id\" is missing (expected a list of item ids)", fname(S, file));
  if (S->v2 && (!col[2] || !col[3]))
    return rd_fail(S->st, RD_EINPUT, "%s: key \"%s\" is missing (expected a list with one entry per item)",
                   fname(S, file), col[2] ? "scores" : "num_correct");
  rb_model *m = named_model(S, cJSON_GetObjectItemCaseSensitive(obj, "model"), file);
  if (!m) return S->st->code;
  const cJSON *res = S->v2 ? cJSON_GetObjectItemCaseSensitive(obj, "results") : NULL;
  for (const cJSON *e = cJSON_IsArray(res) ? res->child : NULL; e; e = e->next) S->results_ignored += !cJSON_IsNull(e);
  score_buf buf = {NULL, 0};
  int rc = RD_OK;
  for (int i = 0; i < n && rc == RD_OK; i++) {
    if (S->v2) rc = v2_item(S, m, col[1], col[0], col[2], col[3], file, -(int64_t)i - 1, &buf);
    else rc = v1_item(S, m, col[1], col[0], col[2], col[3], col[4], file, -(int64_t)i - 1);
    for (int k = 0; k < 5; k++)
      if (col[k]) col[k] = col[k]->next;
  }
  free(buf.v);
  return rc;
}

/* One row of a rows file: an item object of the file's model (the metadata row is only first). */
static int row_item(rb_state *S, rb_model *m, const cJSON *row, int64_t k, int32_t file, int64_t pos, score_buf *buf) {
  char loc[1200];
  if (!cJSON_IsObject(row))
    return rd_fail(S->st, RD_EINPUT, "%s: expected an object per row, got %s", rb_where(S, file, pos, loc, sizeof loc),
                   type_name(row));
  if (cJSON_GetObjectItemCaseSensitive(row, "_record"))
    return k == 0 ? rd_fail(S->st, RD_EINPUT, "%s: key \"_record\": expected \"metadata\" (the only record row, which "
                            "comes first)", rb_where(S, file, pos, loc, sizeof loc))
                  : rd_fail(S->st, RD_EINPUT, "%s: a \"_record\" row after the items (a metadata row must come first)",
                            rb_where(S, file, pos, loc, sizeof loc));
  const cJSON *mv = cJSON_GetObjectItemCaseSensitive(row, "model");
  if (cJSON_IsString(mv) && strcmp(mv->valuestring, m->name) != 0)
    return rd_fail(S->st, RD_EINPUT, "%s: key \"model\" = \"%s\" but the file's model is \"%s\" (one model per file)",
                   rb_where(S, file, pos, loc, sizeof loc), mv->valuestring, m->name);
  RD_TRY(refuse_other(S, row, file, pos));
#define KEY(k) cJSON_GetObjectItemCaseSensitive(row, k)
  /* a v1 judge's row (only "results") of a v1 subset: no key says so, the subset does */
  const cJSON *sub = KEY("subset");
  if (S->v2 && !KEY("num_correct") && !KEY("scores") && cJSON_IsString(sub) &&
      rd_rb_subset_version(sub->valuestring) == 1)
    return rd_fail(S->st, RD_EINPUT, "%s: subset \"%s\" is a RewardBench v1 subset and the row has no \"num_correct\" "
                   "or \"scores\": it holds RewardBench v1 results, which rmdiag import rewardbench2 does not read; "
                   "import this file with rmdiag import rewardbench %s", rb_where(S, file, pos, loc, sizeof loc),
                   sub->valuestring, fname(S, file));
  if (S->v2 && KEY("results") && !cJSON_IsNull(KEY("results"))) S->results_ignored++;
  if (S->v2) return v2_item(S, m, KEY("subset"), KEY("id"), KEY("num_correct"), KEY("scores"), file, pos, buf);
  return v1_item(S, m, KEY("subset"), KEY("id"), KEY("scores_chosen"), KEY("scores_rejected"), KEY("results"), file,
                 pos);
#undef KEY
}

/* Rows: JSONL (one object per line) or one JSON list of objects, an optional metadata row first. The
 * model is the first row's "model", else the file's name. */
static int rows_file(rb_state *S, const rd_jsonl_values *V, int32_t file) {
  const cJSON *list = V->n == 1 && cJSON_IsArray(V->value[0]) ? V->value[0] : NULL;
  int64_t nr = list ? cJSON_GetArraySize(list) : (int64_t)V->n;
  const cJSON **rows = malloc(sizeof *rows * (size_t)(nr ? nr : 1));
  if (!rows) return rd_fail(S->st, RD_EFAIL, "out of memory");
  if (list) {
    S->is_list[file] = 1;
    int64_t k = 0;
    for (const cJSON *e = list->child; e; e = e->next) rows[k++] = e;
  } else {
    for (size_t k = 0; k < V->n; k++) rows[k] = V->value[k];
  }
  int rc = RD_OK;
  int64_t r0 = 0;
  char name[1024];
  default_name(fname(S, file), name, sizeof name);
  if (nr > 0 && cJSON_IsObject(rows[0])) {
    const cJSON *rec = cJSON_GetObjectItemCaseSensitive(rows[0], "_record");
    if (cJSON_IsString(rec) && strcmp(rec->valuestring, "metadata") == 0) r0 = 1;
    rc = model_name(S, cJSON_GetObjectItemCaseSensitive(rows[0], "model"), file, name, sizeof name);
  }
  if (rc == RD_OK && r0 >= nr)
    rc = rd_fail(S->st, RD_EINPUT, "%s: no item rows after the metadata row", fname(S, file));
  if (rc == RD_OK) rc = set_mode(S, RB_MODE_ITEMS, file);
  rb_model *m = rc == RD_OK ? model_get(S, name, file) : NULL;
  if (rc == RD_OK && !m) rc = rd_fail(S->st, RD_EFAIL, "out of memory");
  score_buf buf = {NULL, 0};
  for (int64_t k = r0; rc == RD_OK && k < nr; k++)
    rc = row_item(S, m, rows[k], k, file, list ? -(k + 1) : V->line[k], &buf);
  free(buf.v);
  free(rows);
  return rc;
}

/* One file: a sequence of JSON values (one per line in JSONL, or one document), then by its shape
 * parallel arrays, accuracies or rows. */
static int read_file(rb_state *S, int32_t file) {
  rd_jsonl_values V;
  int rc = rd_jsonl_read_all(fname(S, file), RD_JSONL_MULTILINE, &V, S->st);
  if (rc == RD_OK && V.n == 0)
    rc = rd_fail(S->st, RD_EINPUT, "%s: empty file (expected RewardBench results)", fname(S, file));
  S->file_keyed = 0;
  S->file_names[0] = S->file_names[1] = S->file_names[2] = 0;
  if (rc == RD_OK && V.n == 1) rc = refuse_other(S, V.value[0], file, 0);
  if (rc == RD_OK) {
    const cJSON *first = V.value[0];
    const cJSON *sub = cJSON_GetObjectItemCaseSensitive(first, "subset");
    if (V.n == 1 && cJSON_IsObject(first) && cJSON_IsArray(sub))
      rc = parallel_arrays(S, first, file);
    else if (V.n == 1 && cJSON_IsObject(first) && !sub && !cJSON_GetObjectItemCaseSensitive(first, "id") &&
             !cJSON_GetObjectItemCaseSensitive(first, "_record"))
      rc = accuracy_file(S, first, file);
    else
      rc = rows_file(S, &V, file);
  }
  if (rc == RD_OK) rc = refuse_other_names(S, file);
  rd_jsonl_values_free(&V);
  return rc;
}

/* ---- the command ------------------------------------------------------------------------------------ */

static void state_free(rb_state *S) {
  for (int m = 0; m < S->n_models; m++) {
    rb_model *md = &S->models[m];
    void *arrays[] = {md->name, md->items, md->scores, md->acc_subset, md->acc, md->acc_file, md->by_key};
    for (size_t k = 0; k < sizeof arrays / sizeof arrays[0]; k++) free(arrays[k]);
  }
  free(S->models);
  free(S->files);
  free(S->is_list);
  rd_idmap_free(&S->subsets);
  rd_idmap_free(&S->keys);
  rd_idmap_free(&S->model_ids);
}

static int import_rb(int v2, int argc, char **argv, const char *out_path, FILE *log, rd_status *st) {
  rb_state S;
  memset(&S, 0, sizeof S);
  S.v2 = v2;
  S.cmd = v2 ? "rewardbench2" : "rewardbench";
  S.st = st;
  rd_idmap_init(&S.subsets, 64);
  rd_idmap_init(&S.keys, 4096);
  rd_idmap_init(&S.model_ids, 64);
  const char *group = "/bench";
  int rc = parse_options(&S, argc, argv, &group);
  for (int32_t f = 0; f < S.n_files && rc == RD_OK; f++) rc = read_file(&S, f);
  if (rc == RD_OK) rc = rb_merge_and_write(&S, out_path, group, log);
  state_free(&S);
  return rc;
}

int rd_import_rewardbench(int argc, char **argv, const char *out_path, FILE *log, rd_status *st) {
  return import_rb(0, argc, argv, out_path, log, st);
}

int rd_import_rewardbench2(int argc, char **argv, const char *out_path, FILE *log, rd_status *st) {
  return import_rb(1, argc, argv, out_path, log, st);
}
