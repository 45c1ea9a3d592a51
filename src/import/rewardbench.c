/* `rmdiag import rewardbench` and `rmdiag import rewardbench2`: RewardBench result files into the
 * benchmark layout of SPEC §5. Each file holds one model's results: per-item files (one JSON object
 * of parallel arrays, or JSON rows one per line, with an optional metadata row first) or per-subset
 * accuracy files. Files naming the same model are merged (e.g. core set + prior sets); models are
 * aligned by (subset, item id), and a mismatch is bad input. Parsed with cJSON; written atomically
 * with float64 scores in chunked, compressed datasets. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rmdiag/common/h5out.h"
#include "rmdiag/common/idmap.h"
#include "rmdiag/import/formats.h"
#include "rmdiag/common/jsonutil.h"

typedef struct rb_item {
  int64_t key;      /* (subset, id) in rb_state.keys */
  int32_t subset;   /* in rb_state.subsets */
  int32_t n, n_correct;
  int64_t off;      /* first score in the model's scores */
  double given;     /* credit given directly (v1 rows with only results), else NaN */
  int32_t file;
  int64_t pos;      /* line (>= 1) in row files, -(index + 1) in parallel arrays */
} rb_item;

typedef struct rb_model {
  char *name;
  int32_t first_file;
  rb_item *items;
  int64_t n_items, cap;
  double *scores;
  int64_t n_scores, scap;
  /* per-subset accuracy files */
  int32_t *acc_subset;
  double *acc;
  int32_t *acc_file;
  int64_t n_acc, acap;
  int64_t *by_key;  /* key -> item index (merge) */
} rb_model;

typedef struct rb_state {
  int v2;
  const char *cmd;
  char **files;
  int n_files;
  rd_status *st;
  rd_idmap subsets, keys, model_ids;
  rb_model *models;
  int n_models;
  int mode;         /* 0 none yet, 1 per-item, 2 per-subset accuracies */
  int mode_file;
  int any_given;
  uint8_t *is_list;  /* per file: rows given as one JSON list (positions are list elements) */
} rb_state;

static const char *fname(const rb_state *S, int32_t f) { return S->files[f]; }

/* "FILE: line 12" or "FILE: item 17 of the parallel arrays". */
static const char *where(const rb_state *S, int32_t file, int64_t pos, char *buf, size_t n) {
  if (pos >= 1) snprintf(buf, n, "%s: line %lld", fname(S, file), (long long)pos);
  else if (S->is_list[file]) snprintf(buf, n, "%s: element %lld of the list", fname(S, file), (long long)(-pos - 1));
  else snprintf(buf, n, "%s: item %lld of the parallel arrays", fname(S, file), (long long)(-pos - 1));
  return buf;
}

static const char *type_name(const cJSON *v) {
  if (!v) return "nothing";
  if (cJSON_IsNull(v)) return "null";
  if (cJSON_IsBool(v)) return "a boolean";
  if (cJSON_IsNumber(v))
    return !isfinite(v->valuedouble) ? "a number out of range"
           : v->valuedouble != floor(v->valuedouble) ? "a fractional number" : "a number";
  if (cJSON_IsString(v)) return v->valuestring[0] ? "a string" : "an empty string";
  if (cJSON_IsArray(v)) return cJSON_GetArraySize(v) == 0 ? "an empty list" : "a list";
  if (cJSON_IsObject(v)) return "an object";
  return "an invalid value";
}

static rb_model *model_get(rb_state *S, const char *name, int32_t file) {
  int is_new = 0;
  int64_t id = rd_idmap_get(&S->model_ids, name, strlen(name), &is_new);
  if (id < 0) return NULL;
  if (is_new) {
    rb_model *nm = realloc(S->models, sizeof *nm * (size_t)(S->n_models + 1));
    if (!nm) return NULL;
    S->models = nm;
    rb_model *m = &S->models[S->n_models++];
    memset(m, 0, sizeof *m);
    m->name = strdup(name);
    m->first_file = file;
    if (!m->name) return NULL;
  }
  return &S->models[id];
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

static int add_item(rb_state *S, rb_model *m, const char *subset, const char *id, const double *scores, int n,
                    int n_correct, double given, int32_t file, int64_t pos) {
  if (m->n_items == m->cap) {
    int64_t cap = m->cap ? 2 * m->cap : 1024;
    rb_item *ni = realloc(m->items, sizeof *ni * (size_t)cap);
    if (!ni) return rd_fail(S->st, RD_EFAIL, "out of memory");
    m->items = ni;
    m->cap = cap;
  }
  if (m->n_scores + n > m->scap) {
    int64_t cap = m->scap ? 2 * m->scap : 4096;
    while (cap < m->n_scores + n) cap *= 2;
    double *ns = realloc(m->scores, sizeof *ns * (size_t)cap);
    if (!ns) return rd_fail(S->st, RD_EFAIL, "out of memory");
    m->scores = ns;
    m->scap = cap;
  }
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
  rb_item *it = &m->items[m->n_items++];
  it->key = k;
  it->subset = (int32_t)sub;
  it->n = n;
  it->n_correct = n_correct;
  it->off = m->n_scores;
  it->given = given;
  it->file = file;
  it->pos = pos;
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
  where(S, file, pos, loc, sizeof loc);
  int krc = item_key(S, loc, subset, id, idb, sizeof idb);
  if (krc != RD_OK) return krc;
  double v[2] = {0.0, 0.0}, given = NAN;
  int have_c = sc && !cJSON_IsNull(sc), have_r = sr && !cJSON_IsNull(sr);
  if (have_c || have_r) {
    if (!score_value(sc, &v[0]))
      return rd_fail(S->st, RD_EINPUT, "%s: key \"scores_chosen\": expected a finite number or a one-element list, "
                     "got %s", loc, type_name(sc));
    if (!score_value(sr, &v[1]))
      return rd_fail(S->st, RD_EINPUT, "%s: key \"scores_rejected\": expected a finite number or a one-element list, "
                     "got %s", loc, type_name(sr));
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

/* One v2 item: num_correct and the list of scores, the preferred first. */
static int v2_item(rb_state *S, rb_model *m, const cJSON *subset, const cJSON *id, const cJSON *nc,
                   const cJSON *scores, int32_t file, int64_t pos, double **buf, int64_t *bcap) {
  char loc[1200], idb[4096];
  where(S, file, pos, loc, sizeof loc);
  int krc = item_key(S, loc, subset, id, idb, sizeof idb);
  if (krc != RD_OK) return krc;
  if (!rd_json_is_int(nc, 1, 1000000))
    return rd_fail(S->st, RD_EINPUT, "%s: key \"num_correct\": expected a positive integer, got %s", loc,
                   cJSON_IsNumber(nc) && nc->valuedouble == floor(nc->valuedouble) ? "a number out of range" : type_name(nc));
  if (!cJSON_IsArray(scores))
    return rd_fail(S->st, RD_EINPUT, "%s: key \"scores\": expected a list of scores, got %s", loc, type_name(scores));
  int n = cJSON_GetArraySize(scores), k = (int)nc->valuedouble;
  if (n <= k)
    return rd_fail(S->st, RD_EINPUT, "%s: item (subset \"%s\", id \"%s\") has %d score%s and num_correct = %d: no "
                   "rejected completion (expected more scores than num_correct)", loc, subset->valuestring, idb, n,
                   n == 1 ? "" : "s", k);
  if (n > *bcap) {
    double *nb = realloc(*buf, sizeof(double) * (size_t)n);
    if (!nb) return rd_fail(S->st, RD_EFAIL, "out of memory");
    *buf = nb;
    *bcap = n;
  }
  int j = 0;
  for (const cJSON *e = scores->child; e; e = e->next, j++)
    if (!score_value(e, &(*buf)[j]))
      return rd_fail(S->st, RD_EINPUT, "%s: key \"scores\"[%d]: expected a finite number or a one-element list, got %s",
                     loc, j, type_name(e));
  return add_item(S, m, subset->valuestring, idb, *buf, n, k, NAN, file, pos);
}

/* A per-subset accuracy file: {"alpacaeval-easy": 0.97, ..., "model": ...}, or the rewardbench
 * CLI's summary with the accuracies under "extra_results". */
static int accuracy_file(rb_state *S, const cJSON *obj, rb_model *m, int32_t file) {
  const cJSON *extra = cJSON_GetObjectItemCaseSensitive(obj, "extra_results");
  const cJSON *src = cJSON_IsObject(extra) ? extra : obj;
  int n = 0;
  for (const cJSON *e = src->child; e; e = e->next) {
    if (cJSON_IsString(e) || cJSON_IsNull(e) || cJSON_IsObject(e)) continue;  /* model, model_type, ... */
    double v;
    if (!cJSON_IsNumber(e) || !isfinite(e->valuedouble) || (v = e->valuedouble) < -0.01 || v > 1.01)
      return rd_fail(S->st, RD_EINPUT, "%s: key \"%s\": expected an accuracy between 0 and 1 (a Ties composite: "
                     "-0.01..1.01), got %s", fname(S, file), e->string,
                     cJSON_IsNumber(e) ? "a number out of range" : type_name(e));
    int64_t sub = rd_idmap_get(&S->subsets, e->string, strlen(e->string), NULL);
    if (sub < 0) return rd_fail(S->st, RD_EFAIL, "out of memory");
    for (int64_t q = 0; q < m->n_acc; q++)
      if (m->acc_subset[q] == sub)
        return rd_fail(S->st, RD_EINPUT, "%s: key \"%s\": model \"%s\" already has an accuracy for this subset (from "
                       "%s)", fname(S, file), e->string, m->name, fname(S, m->acc_file[q]));
    if (m->n_acc == m->acap) {
      int64_t cap = m->acap ? 2 * m->acap : 64;
      int32_t *ns = realloc(m->acc_subset, sizeof *ns * (size_t)cap);
      if (ns) m->acc_subset = ns;
      double *na = realloc(m->acc, sizeof *na * (size_t)cap);
      if (na) m->acc = na;
      int32_t *nf = realloc(m->acc_file, sizeof *nf * (size_t)cap);
      if (nf) m->acc_file = nf;
      if (!ns || !na || !nf) return rd_fail(S->st, RD_EFAIL, "out of memory");
      m->acap = cap;
    }
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

static int set_mode(rb_state *S, int mode, int32_t file) {
  if (S->mode == 0) {
    S->mode = mode;
    S->mode_file = file;
    return RD_OK;
  }
  if (S->mode == mode) return RD_OK;
  return rd_fail(S->st, RD_EINPUT, "%s is a %s file but %s is a %s file; import per-item files and per-subset "
                 "accuracy files separately", fname(S, file), mode == 1 ? "per-item" : "per-subset accuracy",
                 fname(S, S->mode_file), S->mode == 1 ? "per-item" : "per-subset accuracy");
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

/* An object of parallel arrays (`id`, `subset`, scores..., `model` a scalar), as RewardBench's
 * runners save their per-item results. */
static int parallel_arrays(rb_state *S, const cJSON *obj, int32_t file) {
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
  if (!col[0]) return rd_fail(S->st, RD_EINPUT, "%s: key \"id\" is missing (expected a list of item ids)", fname(S, file));
  if (S->v2 && (!col[2] || !col[3]))
    return rd_fail(S->st, RD_EINPUT, "%s: key \"%s\" is missing (expected a list with one entry per item)",
                   fname(S, file), col[2] ? "scores" : "num_correct");
  const cJSON *mv = cJSON_GetObjectItemCaseSensitive(obj, "model");
  char name[1024];
  RD_TRY(model_name(S, mv, file, name, sizeof name));
  rb_model *m = model_get(S, name, file);
  if (!m) return rd_fail(S->st, RD_EFAIL, "out of memory");
  double *buf = NULL;
  int64_t bcap = 0;
  int rc = RD_OK;
  for (int i = 0; i < n && rc == RD_OK; i++) {
    if (S->v2) rc = v2_item(S, m, col[1], col[0], col[2], col[3], file, -(int64_t)i - 1, &buf, &bcap);
    else rc = v1_item(S, m, col[1], col[0], col[2], col[3], col[4], file, -(int64_t)i - 1);
    for (int k = 0; k < 5; k++)
      if (col[k]) col[k] = col[k]->next;
  }
  free(buf);
  return rc;
}

static int read_file(const char *path, char **text, size_t *len, rd_status *st) {
  FILE *fp = rd_input_fopen(path);
  if (!fp) return rd_fail(st, RD_EINPUT, "%s: cannot open (%s)", path, strerror(errno));
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  while (buf) {
    size_t r = fread(buf + n, 1, cap - n - 1, fp);
    n += r;
    if (r == 0) break;
    if (n + 1 == cap) {
      char *nb = realloc(buf, cap * 2);
      if (!nb) {
        free(buf);
        buf = NULL;
        break;
      }
      buf = nb;
      cap *= 2;
    }
  }
  int err = ferror(fp);
  fclose(fp);
  if (!buf) return rd_fail(st, RD_EFAIL, "out of memory reading %s", path);
  if (err) {
    free(buf);
    return rd_fail(st, RD_EINPUT, "%s: read error", path);
  }
  buf[n] = '\0';
  *text = buf;
  *len = n;
  return RD_OK;
}

/* Parses one file: a sequence of JSON values (one per line in JSONL, or one document). */
static int parse_file(rb_state *S, int32_t file) {
  char *text = NULL;
  size_t len = 0;
  RD_TRY(read_file(fname(S, file), &text, &len, S->st));
  int64_t nul_at = rd_json_nul_escape_at(text, len);
  if (nul_at >= 0) {
    int64_t nl = 1;
    for (int64_t i = 0; i < nul_at; i++) nl += text[i] == '\n';
    free(text);
    return rd_fail(S->st, RD_EINPUT, "%s: line %lld: a \\u0000 escape (NUL) in a string; expected text without NUL "
                   "characters", fname(S, file), (long long)nl);
  }
  int64_t nv = 0, cap = 0, line = 1;
  cJSON **vals = NULL;
  int64_t *lines = NULL;
  size_t off = 0;
  int rc = RD_OK;
  for (;;) {
    while (off < len && (text[off] == ' ' || text[off] == '\t' || text[off] == '\r' || text[off] == '\n'))
      if (text[off++] == '\n') line++;
    if (off >= len) break;
    if (text[off] == '\0') {
      rc = rd_fail(S->st, RD_EINPUT, "%s: line %lld: a NUL byte (expected JSON text)", fname(S, file), (long long)line);
      break;
    }
    const char *end = NULL;
    cJSON *v = cJSON_ParseWithLengthOpts(text + off, len - off, &end, 0);
    if (!v) {
      size_t at = end ? (size_t)(end - text) : off;
      int64_t l = line, col = 1;
      for (size_t i = off; i < at && i < len; i++) {
        if (text[i] == '\n') {
          l++;
          col = 1;
        } else {
          col++;
        }
      }
      rc = rd_fail(S->st, RD_EINPUT, "%s: line %lld, column %lld: malformed JSON (NaN and Infinity are not JSON; "
                   "expected one JSON object per line, or one JSON document)", fname(S, file), (long long)l,
                   (long long)col);
      break;
    }
    if (nv == cap) {
      cap = cap ? 2 * cap : 1024;
      cJSON **nvals = realloc(vals, sizeof *nvals * (size_t)cap);
      int64_t *nlines = realloc(lines, sizeof *nlines * (size_t)cap);
      if (nvals) vals = nvals;
      if (nlines) lines = nlines;
      if (!nvals || !nlines) {
        cJSON_Delete(v);
        rc = rd_fail(S->st, RD_EFAIL, "out of memory");
        break;
      }
    }
    char where[1200];
    snprintf(where, sizeof where, "%s: line %lld", fname(S, file), (long long)line);
    if ((rc = rd_json_no_duplicate_keys(v, where, S->st)) != RD_OK) {
      cJSON_Delete(v);
      break;
    }
    vals[nv] = v;
    lines[nv++] = line;
    size_t e = (size_t)(end - text);
    for (size_t i = off; i < e; i++) line += text[i] == '\n';
    off = e;
  }
  free(text);
  if (rc == RD_OK && nv == 0) rc = rd_fail(S->st, RD_EINPUT, "%s: empty file (expected RewardBench results)", fname(S, file));
  const cJSON *first = nv > 0 ? vals[0] : NULL;
  const cJSON *sub = first ? cJSON_GetObjectItemCaseSensitive(first, "subset") : NULL;
  if (rc != RD_OK) {
    /* nothing */
  } else if (nv == 1 && cJSON_IsObject(first) && cJSON_IsArray(sub)) {
    rc = set_mode(S, 1, file);
    if (rc == RD_OK) rc = parallel_arrays(S, first, file);
  } else if (nv == 1 && cJSON_IsObject(first) && !sub && !cJSON_GetObjectItemCaseSensitive(first, "id") &&
             !cJSON_GetObjectItemCaseSensitive(first, "_record")) {
    rc = set_mode(S, 2, file);
    const cJSON *mv = cJSON_GetObjectItemCaseSensitive(first, "model");
    char name[1024];
    if (rc == RD_OK) rc = model_name(S, mv, file, name, sizeof name);
    rb_model *m = rc == RD_OK ? model_get(S, name, file) : NULL;
    if (rc == RD_OK && !m) rc = rd_fail(S->st, RD_EFAIL, "out of memory");
    if (rc == RD_OK) rc = accuracy_file(S, first, m, file);
  } else {
    /* rows: JSONL (one object per line) or one list of objects; an optional metadata row first */
    const cJSON **rows = NULL;
    int64_t nr = 0, *rl = NULL;
    const cJSON *list = nv == 1 && cJSON_IsArray(first) ? first : NULL;
    int64_t total = list ? cJSON_GetArraySize(list) : nv;
    rows = malloc(sizeof *rows * (size_t)(total ? total : 1));
    rl = malloc(sizeof *rl * (size_t)(total ? total : 1));
    if (!rows || !rl) rc = rd_fail(S->st, RD_EFAIL, "out of memory");
    if (rc == RD_OK && list) {
      S->is_list[file] = 1;
      for (const cJSON *e = list->child; e; e = e->next) {
        rl[nr] = lines[0];
        rows[nr++] = e;
      }
    } else if (rc == RD_OK) {
      for (int64_t k = 0; k < nv; k++) {
        rl[nr] = lines[k];
        rows[nr++] = vals[k];
      }
    }
    char name[1024];
    default_name(fname(S, file), name, sizeof name);
    int64_t r0 = 0;
    if (rc == RD_OK && nr > 0 && cJSON_IsObject(rows[0])) {
      const cJSON *rec = cJSON_GetObjectItemCaseSensitive(rows[0], "_record");
      const cJSON *mv = cJSON_GetObjectItemCaseSensitive(rows[0], "model");
      if (cJSON_IsString(rec) && strcmp(rec->valuestring, "metadata") == 0) r0 = 1;
      rc = model_name(S, mv, file, name, sizeof name);
    }
    if (rc == RD_OK && r0 >= nr) rc = rd_fail(S->st, RD_EINPUT, "%s: no item rows after the metadata row", fname(S, file));
    if (rc == RD_OK) rc = set_mode(S, 1, file);
    rb_model *m = rc == RD_OK ? model_get(S, name, file) : NULL;
    if (rc == RD_OK && !m) rc = rd_fail(S->st, RD_EFAIL, "out of memory");
    double *buf = NULL;
    int64_t bcap = 0;
    for (int64_t k = r0; rc == RD_OK && k < nr; k++) {
      const cJSON *row = rows[k];
      int64_t pos = list ? -(k + 1) : rl[k];
      char loc[1200];
      if (!cJSON_IsObject(row)) {
        rc = rd_fail(S->st, RD_EINPUT, "%s: expected an object per row, got %s", where(S, file, pos, loc, sizeof loc),
                     type_name(row));
        break;
      }
      if (cJSON_GetObjectItemCaseSensitive(row, "_record")) {
        rc = k == 0 ? rd_fail(S->st, RD_EINPUT, "%s: key \"_record\": expected \"metadata\" (the only record row, "
                              "which comes first)", where(S, file, pos, loc, sizeof loc))
                    : rd_fail(S->st, RD_EINPUT, "%s: a \"_record\" row after the items (a metadata row must come "
                              "first)", where(S, file, pos, loc, sizeof loc));
        break;
      }
      const cJSON *mv = cJSON_GetObjectItemCaseSensitive(row, "model");
      if (cJSON_IsString(mv) && strcmp(mv->valuestring, m->name) != 0) {
        rc = rd_fail(S->st, RD_EINPUT, "%s: key \"model\" = \"%s\" but the file's model is \"%s\" (one model per "
                     "file)", where(S, file, pos, loc, sizeof loc), mv->valuestring, m->name);
        break;
      }
#define KEY(k) cJSON_GetObjectItemCaseSensitive(row, k)
      if (S->v2)
        rc = v2_item(S, m, KEY("subset"), KEY("id"), KEY("num_correct"), KEY("scores"), file, pos, &buf, &bcap);
      else
        rc = v1_item(S, m, KEY("subset"), KEY("id"), KEY("scores_chosen"), KEY("scores_rejected"), KEY("results"), file,
                     pos);
#undef KEY
    }
    free(buf);
    free(rows);
    free(rl);
  }
  for (int64_t k = 0; k < nv; k++) cJSON_Delete(vals[k]);
  free(vals);
  free(lines);
  return rc;
}

/* ---- merging and writing ------------------------------------------------------------------------ */

static const char *key_parts(const rb_state *S, int64_t key, char *buf, size_t n) {
  const char *k = S->keys.keys[key];
  const char *sep = memchr(k, '\x1f', S->keys.lens[key]);
  int ls = sep ? (int)(sep - k) : 0;
  snprintf(buf, n, "subset \"%.*s\", id \"%s\"", ls, k, sep ? sep + 1 : k);
  return buf;
}

static int merge_and_write(rb_state *S, const char *out_path, const char *group, FILE *log) {
  rd_status *st = S->st;
  int M = S->n_models;
  char path[1400], loc[1200], loc2[1200], kb[1200];
#define DS(name) (snprintf(path, sizeof path, "%.500s/%.600s", strcmp(group, "/") ? group : "", name), path)
  int64_t *sub_new = NULL;
  double *scores = NULL, *given = NULL, *acc = NULL;
  int32_t *isub = NULL, *inc = NULL;
  int64_t *ioff = NULL;
  const char **names = NULL;
  int rc = RD_OK;
  int64_t I = 0, C = 0, Sn = 0;
  if (S->mode == 1) {
    /* align every model to the first one's items by (subset, id) */
    int64_t K = S->keys.n;
    for (int m = 0; m < M && rc == RD_OK; m++) {
      rb_model *md = &S->models[m];
      md->by_key = malloc(sizeof(int64_t) * (size_t)(K ? K : 1));
      if (!md->by_key) {
        rc = rd_fail(st, RD_EFAIL, "out of memory");
        break;
      }
      for (int64_t k = 0; k < K; k++) md->by_key[k] = -1;
      for (int64_t i = 0; i < md->n_items; i++) {
        rb_item *it = &md->items[i];
        if (md->by_key[it->key] >= 0) {
          rb_item *pv = &md->items[md->by_key[it->key]];
          rc = rd_fail(st, RD_EINPUT, "%s: item (%s) appears twice for model \"%s\" (first at %s); each (subset, id) "
                       "must appear once per model", where(S, it->file, it->pos, loc, sizeof loc),
                       key_parts(S, it->key, kb, sizeof kb), md->name, where(S, pv->file, pv->pos, loc2, sizeof loc2));
          break;
        }
        md->by_key[it->key] = i;
      }
    }
    rb_model *ref = &S->models[0];
    for (int m = 1; m < M && rc == RD_OK; m++) {
      rb_model *md = &S->models[m];
      for (int64_t i = 0; i < md->n_items && rc == RD_OK; i++) {
        rb_item *it = &md->items[i];
        int64_t r = ref->by_key[it->key];
        if (r < 0) {
          rc = rd_fail(st, RD_EINPUT, "%s: model \"%s\" has item (%s), which model \"%s\" (%s) lacks; models are aligned "
                       "by (subset, id) and must have the same items", where(S, it->file, it->pos, loc, sizeof loc),
                       md->name, key_parts(S, it->key, kb, sizeof kb), ref->name, fname(S, ref->first_file));
        } else if (ref->items[r].n != it->n || ref->items[r].n_correct != it->n_correct) {
          rb_item *ri = &ref->items[r];
          rc = rd_fail(st, RD_EINPUT, "%s: item (%s) of model \"%s\" has %d completions (%d preferred) but model \"%s\" "
                       "has %d (%d preferred) at %s; aligned items must have the same completions",
                       where(S, it->file, it->pos, loc, sizeof loc), key_parts(S, it->key, kb, sizeof kb), md->name,
                       it->n, it->n_correct, ref->name, ri->n, ri->n_correct, where(S, ri->file, ri->pos, loc2, sizeof loc2));
        }
      }
      for (int64_t r = 0; r < ref->n_items && rc == RD_OK; r++)
        if (md->by_key[ref->items[r].key] < 0) {
          rb_item *ri = &ref->items[r];
          rc = rd_fail(st, RD_EINPUT, "model \"%s\" (%s) lacks item (%s) of model \"%s\" (%s); models are aligned by "
                       "(subset, id) and must have the same items", md->name, fname(S, md->first_file),
                       key_parts(S, ri->key, kb, sizeof kb), ref->name, where(S, ri->file, ri->pos, loc, sizeof loc));
        }
    }
    if (rc != RD_OK) goto done;
    /* subsets in order of first appearance among the first model's items */
    I = ref->n_items;
    sub_new = malloc(sizeof(int64_t) * (size_t)(S->subsets.n + 1));
    isub = malloc(sizeof(int32_t) * (size_t)I);
    inc = malloc(sizeof(int32_t) * (size_t)I);
    ioff = malloc(sizeof(int64_t) * (size_t)(I + 1));
    names = malloc(sizeof(char *) * (size_t)(I > M ? I + 1 : M + 1));
    if (!sub_new || !isub || !inc || !ioff || !names) {
      rc = rd_fail(st, RD_EFAIL, "out of memory");
      goto done;
    }
    for (int64_t s = 0; s < S->subsets.n; s++) sub_new[s] = -1;
    ioff[0] = 0;
    for (int64_t i = 0; i < I; i++) {
      rb_item *it = &ref->items[i];
      if (sub_new[it->subset] < 0) sub_new[it->subset] = Sn++;
      isub[i] = (int32_t)sub_new[it->subset];
      inc[i] = it->n_correct;
      ioff[i + 1] = ioff[i] + it->n;
    }
    C = ioff[I];
    scores = malloc(sizeof(double) * (size_t)(M * C));
    given = S->any_given ? malloc(sizeof(double) * (size_t)(M * I)) : NULL;
    if (!scores || (S->any_given && !given)) {
      rc = rd_fail(st, RD_EFAIL, "out of memory");
      goto done;
    }
    for (int m = 0; m < M; m++) {
      rb_model *md = &S->models[m];
      for (int64_t i = 0; i < I; i++) {
        const rb_item *it = &md->items[md->by_key[ref->items[i].key]];
        memcpy(scores + m * C + ioff[i], md->scores + it->off, sizeof(double) * (size_t)it->n);
        if (given) given[m * I + i] = it->given;
      }
    }
  } else {
    /* per-subset accuracies: subsets in order of first appearance, NaN where a model has none */
    Sn = S->subsets.n;
    acc = malloc(sizeof(double) * (size_t)(M * Sn));
    names = malloc(sizeof(char *) * (size_t)((Sn > M ? Sn : M) + 1));
    if (!acc || !names) {
      rc = rd_fail(st, RD_EFAIL, "out of memory");
      goto done;
    }
    for (int64_t q = 0; q < M * Sn; q++) acc[q] = NAN;
    for (int m = 0; m < M; m++)
      for (int64_t q = 0; q < S->models[m].n_acc; q++) acc[m * Sn + S->models[m].acc_subset[q]] = S->models[m].acc[q];
  }

  {
    rd_h5_atomic out;
    rc = rd_h5_atomic_create(out_path, &out, st);
    hid_t h = out.h;
    for (int m = 0; m < M; m++) names[m] = S->models[m].name;
    if (rc == RD_OK) rc = rd_h5_write_strings(h, DS("model_names"), M, names, st);
    if (S->mode == 1) {
      for (int64_t s = 0; s < S->subsets.n; s++)
        if (sub_new[s] >= 0) names[sub_new[s]] = S->subsets.keys[s];
    } else {
      for (int64_t s = 0; s < Sn; s++) names[s] = S->subsets.keys[s];
    }
    if (rc == RD_OK) rc = rd_h5_write_strings(h, DS("subset_names"), Sn, names, st);
    if (S->mode == 1) {
      int64_t d1[1] = {I}, d1p[1] = {I + 1}, d2[2] = {M, C}, dg[2] = {M, I};
      if (rc == RD_OK) rc = rd_h5_write_chunked(h, DS("item_subset"), 1, d1, H5T_STD_I32LE, H5T_NATIVE_INT32, isub, st);
      if (rc == RD_OK) rc = rd_h5_write_chunked(h, DS("item_offset"), 1, d1p, H5T_STD_I64LE, H5T_NATIVE_INT64, ioff, st);
      if (rc == RD_OK) rc = rd_h5_write_chunked(h, DS("item_n_correct"), 1, d1, H5T_STD_I32LE, H5T_NATIVE_INT32, inc, st);
      if (rc == RD_OK) rc = rd_h5_write_chunked(h, DS("scores"), 2, d2, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, scores, st);
      if (rc == RD_OK && given)
        rc = rd_h5_write_chunked(h, DS("given_credit"), 2, dg, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, given, st);
      /* item ids: the id part of each (subset, id) key */
      rb_model *ref = &S->models[0];
      for (int64_t i = 0; i < I; i++) {
        const char *k = S->keys.keys[ref->items[i].key];
        const char *sep = memchr(k, '\x1f', S->keys.lens[ref->items[i].key]);
        names[i] = sep ? sep + 1 : k;
      }
      if (rc == RD_OK) rc = rd_h5_write_strings(h, DS("item_id"), I, names, st);
    } else {
      int64_t d2[2] = {M, Sn};
      if (rc == RD_OK)
        rc = rd_h5_write_chunked(h, DS("subset_accuracy"), 2, d2, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, acc, st);
    }
    if (rc == RD_OK) rc = rd_h5_write_attr_string(h, group, "source", S->v2 ? "rewardbench2" : "rewardbench", st);
    rc = rd_h5_atomic_finish(&out, st);
  }
  if (rc == RD_OK && log) {
    if (S->mode == 1)
      fprintf(log, "rmdiag import %s: %d file%s -> %d model%s, %lld subsets, %lld items, %lld completions -> %s\n",
              S->cmd, S->n_files, S->n_files == 1 ? "" : "s", M, M == 1 ? "" : "s", (long long)Sn, (long long)I,
              (long long)C, out_path);
    else
      fprintf(log, "rmdiag import %s: %d file%s -> %d model%s, accuracies of %lld subsets -> %s\n", S->cmd,
              S->n_files, S->n_files == 1 ? "" : "s", M, M == 1 ? "" : "s", (long long)Sn, out_path);
  }
#undef DS
done:
  free(sub_new);
  free(scores);
  free(given);
  free(acc);
  free(isub);
  free(inc);
  free(ioff);
  free(names);
  return rc;
}

static int import_rb(int v2, int argc, char **argv, const char *out_path, FILE *log, rd_status *st) {
  const char *cmd = v2 ? "rewardbench2" : "rewardbench";
  const char *group = "/bench";
  rb_state S;
  memset(&S, 0, sizeof S);
  S.v2 = v2;
  S.cmd = cmd;
  S.st = st;
  S.files = calloc((size_t)(argc ? argc : 1), sizeof *S.files);
  S.is_list = calloc((size_t)(argc ? argc : 1), 1);
  if (!S.files || !S.is_list) {
    free(S.files);
    free(S.is_list);
    return rd_fail(st, RD_EFAIL, "out of memory");
  }
  for (int i = 0; i < argc; i++) {
    if (strcmp(argv[i], "--group") == 0 && i + 1 < argc) group = argv[++i];
    else if (argv[i][0] == '-' && argv[i][1]) {
      free(S.files);
      free(S.is_list);
      return rd_fail(st, RD_EINPUT, "rmdiag import %s: unknown option %s", cmd, argv[i]);
    } else S.files[S.n_files++] = argv[i];
  }
  if (S.n_files == 0) {
    free(S.files);
    free(S.is_list);
    return rd_fail(st, RD_EINPUT, "rmdiag import %s: no input files (one file per model)", cmd);
  }
  if (group[0] != '/') {
    free(S.files);
    free(S.is_list);
    return rd_fail(st, RD_EINPUT, "rmdiag import %s: --group must start with '/'", cmd);
  }
  rd_idmap_init(&S.subsets, 64);
  rd_idmap_init(&S.keys, 4096);
  rd_idmap_init(&S.model_ids, 64);
  int rc = RD_OK;
  for (int32_t f = 0; f < S.n_files && rc == RD_OK; f++) rc = parse_file(&S, f);
  if (rc == RD_OK) rc = merge_and_write(&S, out_path, group, log);
  for (int m = 0; m < S.n_models; m++) {
    rb_model *md = &S.models[m];
    free(md->name);
    free(md->items);
    free(md->scores);
    free(md->acc_subset);
    free(md->acc);
    free(md->acc_file);
    free(md->by_key);
  }
  free(S.models);
  free(S.files);
  free(S.is_list);
  rd_idmap_free(&S.subsets);
  rd_idmap_free(&S.keys);
  rd_idmap_free(&S.model_ids);
  return rc;
}

int rd_import_rewardbench(int argc, char **argv, const char *out_path, FILE *log, rd_status *st) {
  return import_rb(0, argc, argv, out_path, log, st);
}

int rd_import_rewardbench2(int argc, char **argv, const char *out_path, FILE *log, rd_status *st) {
  return import_rb(1, argc, argv, out_path, log, st);
}
