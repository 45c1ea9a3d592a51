/* `rmdiag import numleak`: NumLeak JSONL panels plus truth CSVs into the leakage layout of SPEC §6.
 * Panels differ in their field names, so every field is found through an option (a dotted path into
 * each JSON object) rather than code per file. Replies are parsed here (numleak_parse.c) and kept;
 * duplicates by key keep the newest non-error record; error rows become status 2. Truth comes from
 * Kenneth French files, FRED files or plain month,value files through an explicit series → (file,
 * column, transform) mapping, and from inline truth fields, which must agree with each other. */
#include <csv.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "rmdiag/common/h5out.h"
#include "rmdiag/common/idmap.h"
#include "rmdiag/import/formats.h"
#include "rmdiag/common/jsonutil.h"
#include "rmdiag/import/numleak_parse.h"

/* ---- options ----------------------------------------------------------------------------------------- */

enum { ROLE_CELLS, ROLE_RANK, ROLE_SIGNAL, ROLE_DEFENSE };
static const char *const role_names[] = {"cells", "rank", "signal", "defense", NULL};

enum {
  F_MODEL, F_SERIES, F_VARIANT, F_SEED, F_MONTH, F_REPLY, F_ERROR, F_KEY, F_TS, F_TRUTH, F_LOGPROBS, F_ENTROPY,
  F_MONTH_B, F_PICK, F_RECALL, F_DEFENSE, F_ATTACK, F_COUNT
};
static const char *const field_names[F_COUNT] = {"model", "series", "variant", "seed", "month", "reply", "error",
                                                 "key", "ts", "truth", "logprobs", "entropy", "month_b", "pick",
                                                 "recall", "defense", "attack"};
static const char *const field_default[F_COUNT] = {
    [F_MODEL] = "model_name", [F_SERIES] = "factor", [F_SEED] = "seed", [F_MONTH] = "month",
    [F_REPLY] = "response", [F_ERROR] = "error", [F_TS] = "ts", [F_DEFENSE] = "defense", [F_ATTACK] = "attack"};
/* fields whose value can be a constant (--set) and renamed (--map) */
static int settable(int f) {
  return f == F_MODEL || f == F_SERIES || f == F_VARIANT || f == F_SEED || f == F_DEFENSE || f == F_ATTACK;
}

typedef struct map_rule {
  int field;
  const char *from, *to;
} map_rule;

typedef struct where_rule {
  const char *path, *values;  /* values: "a|b|c" */
} where_rule;

typedef struct panel_opts {
  const char *file;
  int role, fictional;
  const char *path[F_COUNT];   /* NULL: not mapped */
  const char *setv[F_COUNT];   /* constants */
  map_rule *maps;
  int n_maps;
  where_rule *wheres;
  int n_wheres;
} panel_opts;

typedef struct truth_map {
  const char *series, *file, *column;
  int yoy;
  char *owned;  /* the option's copy */
} truth_map;

typedef struct nl_opts {
  const char *group;
  int nan_missing, keep_replies;
  panel_opts *panels;
  int n_panels;
  truth_map *truths;
  int n_truths;
  const char **no_truth;
  int n_no_truth;
} nl_opts;

/* ---- growing arrays ----------------------------------------------------------------------------------- */

typedef struct rows {
  int64_t n, cap;
  int32_t *model, *series, *variant, *seed, *month, *month_b, *defense, *attack, *source;
  int64_t *line;
  double *value, *entropy, *recall;
  uint8_t *status;
  int8_t *pick;
  char **reply;
} rows;

static int rows_grow(rows *r) {
  if (r->n < r->cap) return 0;
  int64_t cap = r->cap ? 2 * r->cap : 1024;
  void *p;
#define G(f)                                             \
  p = realloc(r->f, sizeof *r->f * (size_t)cap);         \
  if (!p) return -1;                                     \
  r->f = p;
  G(model) G(series) G(variant) G(seed) G(month) G(month_b) G(defense) G(attack) G(source) G(line) G(value)
  G(entropy) G(recall) G(status) G(pick) G(reply)
#undef G
  r->cap = cap;
  return 0;
}

static void rows_free(rows *r) {
  for (int64_t i = 0; i < r->n; i++) free(r->reply[i]);
  void *ptrs[] = {r->model, r->series, r->variant, r->seed, r->month, r->month_b, r->defense, r->attack, r->source,
                  r->line, r->value, r->entropy, r->recall, r->status, r->pick, r->reply};
  for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++) free(ptrs[i]);
  memset(r, 0, sizeof *r);
}

/* Names numbered in first-appearance order. */
typedef struct names {
  rd_idmap map;
  int init;
} names;

static int64_t name_id(names *n, const char *s) {
  if (!n->init) {
    if (rd_idmap_init(&n->map, 64) != 0) return -1;
    n->init = 1;
  }
  return rd_idmap_get(&n->map, s, strlen(s) + 1, NULL);
}

static int64_t name_find(const names *n, const char *s) { return n->init ? rd_idmap_find(&n->map, s, strlen(s) + 1) : -1; }
static int64_t name_count(const names *n) { return n->init ? n->map.n : 0; }
static const char *name_str(const names *n, int64_t i) { return n->map.keys[i]; }

/* ---- JSON helpers --------------------------------------------------------------------------------------- */

/* Python's json writes NaN, Infinity and -Infinity; cJSON does not read them. Outside strings they
 * become 1e999 / -1e999 (read as infinities: non-finite either way). Returns a new buffer. */
static char *json_tokens_fix(const char *s, size_t len, size_t *out_len) {
  char *o = malloc(2 * len + 16);
  if (!o) return NULL;
  size_t w = 0;
  int in_str = 0;
  for (size_t i = 0; i < len; i++) {
    char c = s[i];
    if (in_str) {
      o[w++] = c;
      if (c == '\\' && i + 1 < len) o[w++] = s[++i];
      else if (c == '"') in_str = 0;
      continue;
    }
    if (c == '"') in_str = 1;
    if (c == 'N' && len - i >= 3 && memcmp(s + i, "NaN", 3) == 0) {
      memcpy(o + w, "1e999", 5), w += 5, i += 2;
      continue;
    }
    if (c == 'I' && len - i >= 8 && memcmp(s + i, "Infinity", 8) == 0) {
      memcpy(o + w, "1e999", 5), w += 5, i += 7;
      continue;
    }
    o[w++] = c;
  }
  o[w] = '\0';
  *out_len = w;
  return o;
}

/* obj at a dotted path ("query.factor"); NULL when any step is absent. */
static const cJSON *json_at(const cJSON *obj, const char *path) {
  char part[256];
  const char *p = path;
  const cJSON *cur = obj;
  while (cur && *p) {
    const char *dot = strchr(p, '.');
    size_t n = dot ? (size_t)(dot - p) : strlen(p);
    if (n >= sizeof part) return NULL;
    memcpy(part, p, n);
    part[n] = '\0';
    cur = cJSON_IsObject(cur) ? cJSON_GetObjectItemCaseSensitive(cur, part) : NULL;
    p += n + (dot ? 1 : 0);
  }
  return cur;
}

/* A scalar's text: strings as they are, integral numbers without a decimal point, other numbers as
 * %.17g, true/false. Returns 0 for null, objects and arrays. */
static int json_text(const cJSON *v, char *buf, size_t n) {
  if (cJSON_IsString(v)) {
    snprintf(buf, n, "%s", v->valuestring);
    return 1;
  }
  if (cJSON_IsNumber(v)) {
    double x = v->valuedouble;
    if (isfinite(x) && x == floor(x) && fabs(x) < 1e15) snprintf(buf, n, "%lld", (long long)x);
    else snprintf(buf, n, "%.17g", x);
    return 1;
  }
  if (cJSON_IsBool(v)) {
    snprintf(buf, n, "%s", cJSON_IsTrue(v) ? "true" : "false");
    return 1;
  }
  return 0;
}

static const char *type_word(const cJSON *v) {
  if (!v) return "absent";
  if (cJSON_IsNull(v)) return "null";
  if (cJSON_IsString(v)) return "a string";
  if (cJSON_IsNumber(v)) return "a number";
  if (cJSON_IsBool(v)) return "a boolean";
  if (cJSON_IsArray(v)) return "a list";
  return "an object";
}

/* ---- option parsing ----------------------------------------------------------------------------------- */

static int field_of(const char *name) {
  for (int f = 0; f < F_COUNT; f++)
    if (strcmp(field_names[f], name) == 0) return f;
  return -1;
}

static int parse_args(int argc, char **argv, nl_opts *o, rd_status *st) {
  o->group = "/leak";
  o->keep_replies = 1;
  o->panels = calloc((size_t)argc + 1, sizeof *o->panels);
  o->truths = calloc(6 * (size_t)argc + 1, sizeof *o->truths);  /* --truth-numleak maps six */
  o->no_truth = calloc((size_t)argc + 1, sizeof *o->no_truth);
  if (!o->panels || !o->truths || !o->no_truth) return rd_fail(st, RD_EFAIL, "out of memory");
  panel_opts *cur = NULL;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define NEED_VALUE()                                                                                   \
  do {                                                                                                 \
    if (!v) return rd_fail(st, RD_EINPUT, "rmdiag import numleak: %s needs a value (see --help)", a); \
    i++;                                                                                               \
  } while (0)
#define NEED_PANEL()                                                                                                 \
  do {                                                                                                               \
    if (!cur)                                                                                                        \
      return rd_fail(st, RD_EINPUT, "rmdiag import numleak: %s applies to a panel: put it after --panel FILE", a); \
  } while (0)
    if (strcmp(a, "--panel") == 0) {
      NEED_VALUE();
      cur = &o->panels[o->n_panels++];
      cur->file = v;
      cur->maps = calloc((size_t)argc, sizeof *cur->maps);
      cur->wheres = calloc((size_t)argc, sizeof *cur->wheres);
      if (!cur->maps || !cur->wheres) return rd_fail(st, RD_EFAIL, "out of memory");
      for (int f = 0; f < F_COUNT; f++) cur->path[f] = field_default[f];
    } else if (strcmp(a, "--group") == 0) {
      NEED_VALUE();
      if (v[0] != '/') return rd_fail(st, RD_EINPUT, "rmdiag import numleak: --group must start with '/' (got \"%s\")", v);
      o->group = v;
    } else if (strcmp(a, "--nan-truth") == 0) {
      NEED_VALUE();
      if (strcmp(v, "error") && strcmp(v, "missing"))
        return rd_fail(st, RD_EINPUT, "rmdiag import numleak: --nan-truth must be error or missing (got \"%s\")", v);
      o->nan_missing = strcmp(v, "missing") == 0;
    } else if (strcmp(a, "--no-replies") == 0) {
      o->keep_replies = 0;
    } else if (strcmp(a, "--no-truth") == 0) {
      NEED_VALUE();
      o->no_truth[o->n_no_truth++] = v;
    } else if (strcmp(a, "--truth") == 0 || strcmp(a, "--truth-numleak") == 0) {
      NEED_VALUE();
      if (strcmp(a, "--truth-numleak") == 0) {
        static const char *const conv[6][3] = {{"Mkt-RF", "F-F_Research_Data_Factors.csv", "Mkt-RF"},
                                               {"SMB", "F-F_Research_Data_Factors.csv", "SMB"},
                                               {"HML", "F-F_Research_Data_Factors.csv", "HML"},
                                               {"RMW", "F-F_Research_Data_5_Factors_2x3.csv", "RMW"},
                                               {"CMA", "F-F_Research_Data_5_Factors_2x3.csv", "CMA"},
                                               {"Mom", "F-F_Momentum_Factor.csv", "Mom"}};
        for (int k = 0; k < 6; k++) {
          truth_map *t = &o->truths[o->n_truths++];
          size_t n = strlen(v) + strlen(conv[k][1]) + 2;
          t->owned = malloc(n);
          if (!t->owned) return rd_fail(st, RD_EFAIL, "out of memory");
          snprintf(t->owned, n, "%s/%s", v, conv[k][1]);
          t->series = conv[k][0];
          t->file = t->owned;
          t->column = conv[k][2];
        }
        continue;
      }
      truth_map *t = &o->truths[o->n_truths++];
      t->owned = strdup(v);
      if (!t->owned) return rd_fail(st, RD_EFAIL, "out of memory");
      char *eq = strchr(t->owned, '=');
      if (!eq || eq == t->owned || !eq[1])
        return rd_fail(st, RD_EINPUT, "rmdiag import numleak: --truth \"%s\": expected SERIES=FILE[,COLUMN[,TRANSFORM]]", v);
      *eq = '\0';
      t->series = t->owned;
      t->file = eq + 1;
      char *c1 = strchr(eq + 1, ',');
      if (c1) {
        *c1 = '\0';
        t->column = c1 + 1;
        char *c2 = strchr(c1 + 1, ',');
        if (c2) {
          *c2 = '\0';
          if (strcmp(c2 + 1, "yoy") == 0) t->yoy = 1;
          else if (strcmp(c2 + 1, "level") != 0)
            return rd_fail(st, RD_EINPUT, "rmdiag import numleak: --truth \"%s\": transform \"%s\" is not level or yoy "
                           "(12-month %% change)", v, c2 + 1);
        }
        if (!t->column[0]) t->column = NULL;
      }
    } else if (strcmp(a, "--as") == 0) {
      NEED_VALUE();
      NEED_PANEL();
      cur->role = -1;
      for (int k = 0; role_names[k]; k++)
        if (strcmp(role_names[k], v) == 0) cur->role = k;
      if (cur->role < 0)
        return rd_fail(st, RD_EINPUT, "rmdiag import numleak: --as \"%s\": expected cells, rank, signal or defense", v);
    } else if (strcmp(a, "--fictional") == 0) {
      NEED_PANEL();
      cur->fictional = 1;
    } else if (strcmp(a, "--field") == 0 || strcmp(a, "--set") == 0) {
      NEED_VALUE();
      NEED_PANEL();
      const char *eq = strchr(v, '=');
      char name[32];
      size_t n = eq ? (size_t)(eq - v) : 0;
      if (!eq || n == 0 || n >= sizeof name)
        return rd_fail(st, RD_EINPUT, "rmdiag import numleak: %s \"%s\": expected NAME=%s", a, v,
                       a[2] == 'f' ? "PATH" : "VALUE");
      memcpy(name, v, n);
      name[n] = '\0';
      int f = field_of(name);
      if (f < 0)
        return rd_fail(st, RD_EINPUT, "rmdiag import numleak: %s \"%s\": unknown field \"%s\" (see --help)", a, v, name);
      if (a[2] == 's') {
        if (!settable(f))
          return rd_fail(st, RD_EINPUT, "rmdiag import numleak: --set %s: only model, series, variant, seed, defense "
                         "and attack take a constant", name);
        cur->setv[f] = eq + 1;
        cur->path[f] = NULL;
      } else {
        cur->path[f] = eq[1] ? eq + 1 : NULL;  /* "--field key=" unmaps */
        cur->setv[f] = NULL;
      }
    } else if (strcmp(a, "--map") == 0) {
      NEED_VALUE();
      NEED_PANEL();
      const char *colon = strchr(v, ':'), *eq = colon ? strchr(colon, '=') : NULL;
      char name[32];
      size_t n = colon ? (size_t)(colon - v) : 0;
      if (!colon || !eq || n == 0 || n >= sizeof name || eq == colon + 1)
        return rd_fail(st, RD_EINPUT, "rmdiag import numleak: --map \"%s\": expected NAME:FROM=TO", v);
      memcpy(name, v, n);
      name[n] = '\0';
      int f = field_of(name);
      if (f < 0 || !settable(f) || f == F_SEED)
        return rd_fail(st, RD_EINPUT, "rmdiag import numleak: --map \"%s\": NAME must be model, series, variant, "
                       "defense or attack", v);
      char *from = strndup(colon + 1, (size_t)(eq - colon - 1));
      if (!from) return rd_fail(st, RD_EFAIL, "out of memory");
      cur->maps[cur->n_maps++] = (map_rule){f, from, eq + 1};
    } else if (strcmp(a, "--where") == 0) {
      NEED_VALUE();
      NEED_PANEL();
      const char *eq = strchr(v, '=');
      if (!eq || eq == v)
        return rd_fail(st, RD_EINPUT, "rmdiag import numleak: --where \"%s\": expected PATH=VALUE[|VALUE...]", v);
      char *path = strndup(v, (size_t)(eq - v));
      if (!path) return rd_fail(st, RD_EFAIL, "out of memory");
      cur->wheres[cur->n_wheres++] = (where_rule){path, eq + 1};
    } else {
      return rd_fail(st, RD_EINPUT, "rmdiag import numleak: unknown option \"%s\" (see rmdiag import numleak --help)", a);
    }
#undef NEED_VALUE
#undef NEED_PANEL
  }
  if (o->n_panels == 0)
    return rd_fail(st, RD_EINPUT, "rmdiag import numleak: no --panel FILE given (see rmdiag import numleak --help)");
  for (int p = 0; p < o->n_panels; p++) {
    panel_opts *q = &o->panels[p];
    if (q->role == ROLE_RANK && !q->path[F_MONTH_B])
      return rd_fail(st, RD_EINPUT, "rmdiag import numleak: panel %s (--as rank) needs --field month_b=PATH (the second "
                     "month of each pair)", q->file);
    if (q->role == ROLE_SIGNAL && !q->path[F_RECALL])
      return rd_fail(st, RD_EINPUT, "rmdiag import numleak: panel %s (--as signal) needs --field recall=PATH (the "
                     "recalled value of the month)", q->file);
  }
  return RD_OK;
}

static void opts_free(nl_opts *o) {
  for (int p = 0; p < o->n_panels; p++) {
    for (int k = 0; k < o->panels[p].n_maps; k++) free((char *)o->panels[p].maps[k].from);
    for (int k = 0; k < o->panels[p].n_wheres; k++) free((char *)o->panels[p].wheres[k].path);
    free(o->panels[p].maps);
    free(o->panels[p].wheres);
  }
  for (int t = 0; t < o->n_truths; t++) free(o->truths[t].owned);
  free(o->panels);
  free(o->truths);
  free(o->no_truth);
}

/* ---- the importer's state ----------------------------------------------------------------------------- */

typedef struct inline_truth {
  int64_t key;       /* series << 24 | month */
  double value;
  int32_t source;
  int64_t line;
} inline_truth;

typedef struct nl_state {
  nl_opts o;
  names models, series, variants, defenses, attacks;
  uint8_t *fictional, *real_seen;   /* per series, grown with it */
  uint8_t *has_inline;              /* per series: some panel maps an inline truth field */
  int64_t series_cap;
  rows cells, rank, signal, defense;
  inline_truth *inl;
  int64_t n_inl, cap_inl;
  int has_entropy;
  FILE *log;
  rd_status *st;
} nl_state;

static int series_slot(nl_state *S, int64_t s) {
  if (s < S->series_cap) return 0;
  int64_t cap = S->series_cap ? 2 * S->series_cap : 64;
  while (cap <= s) cap *= 2;
  uint8_t *a = realloc(S->fictional, (size_t)cap), *b, *c;
  if (!a) return -1;
  S->fictional = a;
  b = realloc(S->real_seen, (size_t)cap);
  if (!b) return -1;
  S->real_seen = b;
  c = realloc(S->has_inline, (size_t)cap);
  if (!c) return -1;
  S->has_inline = c;
  memset(S->fictional + S->series_cap, 0, (size_t)(cap - S->series_cap));
  memset(S->real_seen + S->series_cap, 0, (size_t)(cap - S->series_cap));
  memset(S->has_inline + S->series_cap, 0, (size_t)(cap - S->series_cap));
  S->series_cap = cap;
  return 0;
}

/* ---- one panel ------------------------------------------------------------------------------------------ */

typedef struct jrow {
  cJSON *obj;
  int64_t line;
} jrow;

static int read_file(const char *path, char **buf, size_t *len, rd_status *st) {
  FILE *fp = rd_input_fopen(path);
  if (!fp) return rd_fail(st, RD_EINPUT, "%s: cannot open (%s)", path, strerror(errno));
  size_t cap = 1 << 16, n = 0;
  char *b = malloc(cap);
  while (b) {
    size_t r = fread(b + n, 1, cap - n - 1, fp);
    n += r;
    if (r == 0) break;
    if (n + 1 >= cap) {
      char *nb = realloc(b, 2 * cap);
      if (!nb) {
        free(b);
        b = NULL;
        break;
      }
      b = nb;
      cap *= 2;
    }
  }
  int err = ferror(fp);
  fclose(fp);
  if (!b) return rd_fail(st, RD_EFAIL, "out of memory reading %s", path);
  if (err) {
    free(b);
    return rd_fail(st, RD_EINPUT, "%s: read error", path);
  }
  b[n] = '\0';
  *buf = b;
  *len = n;
  return RD_OK;
}

/* The value of field f of a row as text (a --set constant, else the mapped path), after --map.
 * Returns 1 when present, 0 when absent or null, -1 for an object or list. */
static int field_text(const panel_opts *p, int f, const cJSON *obj, char *buf, size_t n) {
  int rc;
  if (p->setv[f]) {
    snprintf(buf, n, "%s", p->setv[f]);
    rc = 1;
  } else if (!p->path[f]) {
    return 0;
  } else {
    const cJSON *v = json_at(obj, p->path[f]);
    if (!v || cJSON_IsNull(v)) return 0;
    if (!json_text(v, buf, n)) return -1;
    rc = 1;
  }
  for (int k = 0; k < p->n_maps; k++)
    if (p->maps[k].field == f && strcmp(p->maps[k].from, buf) == 0) {
      snprintf(buf, n, "%s", p->maps[k].to);
      break;
    }
  return rc;
}

static int is_error(const panel_opts *p, const cJSON *obj) {
  if (!p->path[F_ERROR]) return 0;
  const cJSON *e = json_at(obj, p->path[F_ERROR]);
  if (!e || cJSON_IsNull(e) || cJSON_IsFalse(e)) return 0;
  if (cJSON_IsString(e) && e->valuestring[0] == '\0') return 0;
  return 1;
}

static double ts_of(const panel_opts *p, const cJSON *obj) {
  const cJSON *t = p->path[F_TS] ? json_at(obj, p->path[F_TS]) : NULL;
  return cJSON_IsNumber(t) ? t->valuedouble : -INFINITY;
}

/* Keeps, per key, the newest non-error record (non-error beats error; then the larger ts; the first
 * seen on equal ts). Rows without a key are all kept. keep[i] says which survive. */
static int dedup(const panel_opts *p, jrow *r, int64_t n, uint8_t *keep, int64_t *dropped, rd_status *st) {
  *dropped = 0;
  for (int64_t i = 0; i < n; i++) keep[i] = 1;
  if (!p->path[F_KEY]) return RD_OK;
  rd_idmap m;
  if (rd_idmap_init(&m, 1024) != 0) return rd_fail(st, RD_EFAIL, "out of memory");
  int64_t *best = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
  if (!best) {
    rd_idmap_free(&m);
    return rd_fail(st, RD_EFAIL, "out of memory");
  }
  char key[1024];
  for (int64_t i = 0; i < n; i++) {
    const cJSON *k = json_at(r[i].obj, p->path[F_KEY]);
    if (!k || cJSON_IsNull(k)) continue;
    if (!json_text(k, key, sizeof key)) {
      free(best);
      rd_idmap_free(&m);
      return rd_fail(st, RD_EINPUT, "%s: line %lld: key (\"%s\") is %s, expected a string or number", p->file,
                     (long long)r[i].line, p->path[F_KEY], type_word(k));
    }
    int is_new = 0;
    int64_t id = rd_idmap_get(&m, key, strlen(key) + 1, &is_new);
    if (id < 0) {
      free(best);
      rd_idmap_free(&m);
      return rd_fail(st, RD_EFAIL, "out of memory");
    }
    if (is_new) {
      best[id] = i;
      continue;
    }
    int64_t b = best[id];
    int eb = is_error(p, r[b].obj), ei = is_error(p, r[i].obj);
    int newer = (eb && !ei) || (eb == ei && ts_of(p, r[i].obj) > ts_of(p, r[b].obj));
    if (newer) {
      keep[b] = 0;
      best[id] = i;
    } else {
      keep[i] = 0;
    }
    (*dropped)++;
  }
  free(best);
  rd_idmap_free(&m);
  return RD_OK;
}

static int passes_where(const panel_opts *p, const cJSON *obj) {
  char buf[1024];
  for (int k = 0; k < p->n_wheres; k++) {
    const cJSON *v = json_at(obj, p->wheres[k].path);
    if (!v || cJSON_IsNull(v)) snprintf(buf, sizeof buf, "null");  /* absent matches null */
    else if (!json_text(v, buf, sizeof buf)) return 0;
    int ok = 0;
    for (const char *s = p->wheres[k].values; !ok;) {
      const char *bar = strchr(s, '|');
      size_t n = bar ? (size_t)(bar - s) : strlen(s);
      ok = strlen(buf) == n && strncmp(buf, s, n) == 0;
      if (!bar) break;
      s = bar + 1;
    }
    if (!ok) return 0;
  }
  return 1;
}

/* The id of a name field (model, series, ...): required, text. */
static int name_field(nl_state *S, const panel_opts *p, int f, const jrow *r, names *nm, int32_t *out) {
  char buf[1024];
  int rc = field_text(p, f, r->obj, buf, sizeof buf);
  if (rc <= 0) {
    const cJSON *v = p->path[f] ? json_at(r->obj, p->path[f]) : NULL;
    if (!p->path[f] && !p->setv[f])
      return rd_fail(S->st, RD_EINPUT, "%s: line %lld: no %s for the row: give --field %s=PATH or --set %s=VALUE",
                     p->file, (long long)r->line, field_names[f], field_names[f], field_names[f]);
    return rd_fail(S->st, RD_EINPUT, "%s: line %lld: %s (\"%s\") is %s, expected a name (use --set %s=VALUE for "
                   "panels without it)", p->file, (long long)r->line, field_names[f], p->path[f], type_word(v),
                   field_names[f]);
  }
  if (!buf[0])
    return rd_fail(S->st, RD_EINPUT, "%s: line %lld: %s (\"%s\") is empty, expected a name", p->file, (long long)r->line,
                   field_names[f], p->path[f] ? p->path[f] : "--set");
  const cJSON *v = p->setv[f] ? NULL : json_at(r->obj, p->path[f]);
  size_t full = p->setv[f] ? strlen(p->setv[f]) : cJSON_IsString(v) ? strlen(v->valuestring) : strlen(buf);
  if (full >= sizeof buf)
    return rd_fail(S->st, RD_EINPUT, "%s: line %lld: %s (\"%s\") is a name of %zu bytes, expected at most %zu", p->file,
                   (long long)r->line, field_names[f], p->path[f] ? p->path[f] : "--set", full, sizeof buf - 1);
  if (rd_utf8_invalid_at(buf, strlen(buf)) >= 0)
    return rd_fail(S->st, RD_EINPUT, "%s: line %lld: %s (\"%s\") is not valid UTF-8 text", p->file, (long long)r->line,
                   field_names[f], p->path[f] ? p->path[f] : "--set");
  int64_t id = name_id(nm, buf);
  if (id < 0 || id > INT32_MAX) return rd_fail(S->st, RD_EFAIL, "out of memory");
  *out = (int32_t)id;
  return RD_OK;
}

static int month_field(nl_state *S, const panel_opts *p, int f, const jrow *r, int32_t *out) {
  if (!p->path[f])
    return rd_fail(S->st, RD_EINPUT, "%s: no %s field mapped (give --field %s=PATH)", p->file, field_names[f],
                   field_names[f]);
  const cJSON *v = json_at(r->obj, p->path[f]);
  char buf[128], shown[160];
  int is_text = v && json_text(v, buf, sizeof buf);
  if (is_text && rd_numleak_month(buf, 0, out)) return RD_OK;
  if (is_text) snprintf(shown, sizeof shown, "\"%s\"", buf);
  else snprintf(shown, sizeof shown, "%s", type_word(v));
  return rd_fail(S->st, RD_EINPUT, "%s: line %lld: %s (\"%s\") = %s, expected a month as YYYY-MM, YYYYMM or "
                 "\"Month YYYY\"", p->file, (long long)r->line, field_names[f], p->path[f], shown);
}

static int seed_field(nl_state *S, const panel_opts *p, const jrow *r, int32_t *out) {
  char buf[128];
  int rc = field_text(p, F_SEED, r->obj, buf, sizeof buf);
  *out = 0;
  if (rc == 0) return RD_OK;  /* absent: seed 0 */
  char *end = NULL;
  long long v = rc > 0 ? strtoll(buf, &end, 10) : 0;
  if (rc < 0 || !end || *end || end == buf || v < INT32_MIN || v > INT32_MAX)
    return rd_fail(S->st, RD_EINPUT, "%s: line %lld: seed (\"%s\") = %s, expected an integer", p->file,
                   (long long)r->line, p->path[F_SEED] ? p->path[F_SEED] : "--set", rc > 0 ? buf : "not a number");
  *out = (int32_t)v;
  return RD_OK;
}

/* The reply text (NULL when absent or null); numbers are taken as their text. */
static int reply_field(nl_state *S, const panel_opts *p, const jrow *r, char **out) {
  *out = NULL;
  if (!p->path[F_REPLY]) return RD_OK;
  const cJSON *v = json_at(r->obj, p->path[F_REPLY]);
  if (!v || cJSON_IsNull(v)) return RD_OK;
  char buf[64];
  if (cJSON_IsString(v)) *out = strdup(v->valuestring);
  else if (cJSON_IsNumber(v) && json_text(v, buf, sizeof buf)) *out = strdup(buf);
  else
    return rd_fail(S->st, RD_EINPUT, "%s: line %lld: reply (\"%s\") is %s, expected a string", p->file,
                   (long long)r->line, p->path[F_REPLY], type_word(v));
  if (!*out) return rd_fail(S->st, RD_EFAIL, "out of memory");
  return RD_OK;
}

/* A number field: 1 and *out when present, 0 when absent or null; non-finite handled by the caller. */
static int number_field(nl_state *S, const panel_opts *p, int f, const jrow *r, double *out) {
  *out = NAN;
  if (!p->path[f]) return 0;
  const cJSON *v = json_at(r->obj, p->path[f]);
  if (!v || cJSON_IsNull(v)) return 0;
  if (!cJSON_IsNumber(v)) {
    rd_fail(S->st, RD_EINPUT, "%s: line %lld: %s (\"%s\") is %s, expected a number", p->file, (long long)r->line,
            field_names[f], p->path[f], type_word(v));
    return -1;
  }
  *out = v->valuedouble;
  return 1;
}

/* entropy_bits from the tokens' top log-probabilities (natural log), first two tokens. */
static int entropy_field(nl_state *S, const panel_opts *p, const jrow *r, double *out) {
  *out = NAN;
  if (p->path[F_ENTROPY]) {
    int rc = number_field(S, p, F_ENTROPY, r, out);
    if (rc < 0) return S->st->code;
    if (rc > 0 && !(isfinite(*out) && *out >= 0))
      return rd_fail(S->st, RD_EINPUT, "%s: line %lld: entropy (\"%s\") = %g, expected a finite entropy >= 0",
                     p->file, (long long)r->line, p->path[F_ENTROPY], *out);
    return RD_OK;
  }
  if (!p->path[F_LOGPROBS]) return RD_OK;
  const cJSON *toks = json_at(r->obj, p->path[F_LOGPROBS]);
  if (!toks || cJSON_IsNull(toks)) return RD_OK;
  if (!cJSON_IsArray(toks))
    return rd_fail(S->st, RD_EINPUT, "%s: line %lld: logprobs (\"%s\") is %s, expected a list of tokens with "
                   "top_logprobs", p->file, (long long)r->line, p->path[F_LOGPROBS], type_word(toks));
  double lp[64];
  int n_alt[2] = {0, 0}, nt = 0, pos = 0;
  for (const cJSON *t = toks->child; t && nt < 2; t = t->next, nt++) {
    const cJSON *top = cJSON_IsObject(t) ? cJSON_GetObjectItemCaseSensitive(t, "top_logprobs") : NULL;
    if (!cJSON_IsArray(top))
      return rd_fail(S->st, RD_EINPUT, "%s: line %lld: logprobs (\"%s\")[%d] has no top_logprobs list", p->file,
                     (long long)r->line, p->path[F_LOGPROBS], nt);
    for (const cJSON *a = top->child; a; a = a->next) {
      const cJSON *l = cJSON_IsObject(a) ? cJSON_GetObjectItemCaseSensitive(a, "logprob") : a;
      if (!cJSON_IsNumber(l) || !(l->valuedouble <= 0) || pos >= 64)
        return rd_fail(S->st, RD_EINPUT, "%s: line %lld: logprobs (\"%s\")[%d]: expected at most 32 alternatives with "
                       "a logprob <= 0", p->file, (long long)r->line, p->path[F_LOGPROBS], nt);
      lp[pos++] = l->valuedouble;
      n_alt[nt]++;
    }
  }
  *out = rd_numleak_entropy_bits(lp, n_alt, nt);
  return RD_OK;
}

static int add_inline_truth(nl_state *S, const panel_opts *p, int32_t src, const jrow *r, int32_t series, int32_t month,
                            double v) {
  if (!isfinite(v)) {
    if (S->o.nan_missing) return RD_OK;
    return rd_fail(S->st, RD_EINPUT, "%s: line %lld: truth (\"%s\") is not a finite number (NaN or infinite); expected "
                   "a value, or null when the month has none (--nan-truth missing treats it as missing)", p->file,
                   (long long)r->line, p->path[F_TRUTH]);
  }
  if (S->n_inl == S->cap_inl) {
    int64_t cap = S->cap_inl ? 2 * S->cap_inl : 1024;
    inline_truth *q = realloc(S->inl, sizeof *q * (size_t)cap);
    if (!q) return rd_fail(S->st, RD_EFAIL, "out of memory");
    S->inl = q;
    S->cap_inl = cap;
  }
  S->inl[S->n_inl++] = (inline_truth){(int64_t)series << 24 | month, v, src, r->line};
  return RD_OK;
}

/* The reply's number (rd_numleak_parse_numeric), where a value beyond float64 (a % hit of more than
 * 308 digits reads as inf, as Python's float() does, and inf - inf is NaN) counts as no number:
 * the panel stores only finite parsed values. Such replies are counted in *overflow. */
static int parse_reply(const char *reply, double *v, int64_t *overflow) {
  int pr = rd_numleak_parse_numeric(reply, v);
  if (pr == 1 && !isfinite(*v)) {
    *v = NAN;
    (*overflow)++;
    return 0;
  }
  return pr;
}

static int import_panel(nl_state *S, int32_t src) {
  const panel_opts *p = &S->o.panels[src];
  char *text = NULL;
  size_t len = 0;
  RD_TRY(read_file(p->file, &text, &len, S->st));
  jrow *jr = NULL;
  int64_t n = 0, cap = 0, line = 0;
  int rc = RD_OK;
  for (size_t pos = 0; pos < len && rc == RD_OK;) {
    size_t ls = pos, end = pos;
    while (end < len && text[end] != '\n') end++;
    line++;
    size_t a = pos, b = end;
    while (a < b && (text[a] == ' ' || text[a] == '\t' || text[a] == '\r')) a++;
    while (b > a && (text[b - 1] == ' ' || text[b - 1] == '\t' || text[b - 1] == '\r')) b--;
    pos = end + 1;
    if (a == b) continue;
    size_t fl;
    char *fixed = json_tokens_fix(text + a, b - a, &fl);
    if (!fixed) {
      rc = rd_fail(S->st, RD_EFAIL, "out of memory");
      break;
    }
    int64_t nul_at = rd_json_nul_escape_at(text + a, b - a);
    if (nul_at >= 0) {
      rc = rd_fail(S->st, RD_EINPUT, "%s: line %lld, column %lld: a \\u0000 escape (NUL) in a string; expected text "
                   "without NUL characters", p->file, (long long)line, (long long)(nul_at + 1 + (int64_t)(a - ls)));
      free(fixed);
      break;
    }
    const char *perr = NULL;
    cJSON *obj = cJSON_ParseWithLengthOpts(fixed, fl, &perr, 0);
    size_t tail = perr ? (size_t)(perr - fixed) : fl;
    while (obj && tail < fl && (fixed[tail] == ' ' || fixed[tail] == '\t')) tail++;
    if (!obj || tail < fl) {
      size_t col = (perr ? (size_t)(perr - fixed) : 0) + 1 + (a - ls);
      rc = rd_fail(S->st, RD_EINPUT, "%s: line %lld: malformed JSON near column %zu (expected one JSON object per line)",
                   p->file, (long long)line, col);
      cJSON_Delete(obj);
      free(fixed);
      break;
    }
    free(fixed);
    if (!cJSON_IsObject(obj)) {
      rc = rd_fail(S->st, RD_EINPUT, "%s: line %lld: a JSON %s, expected one object per line", p->file, (long long)line,
                   cJSON_IsArray(obj) ? "list" : "scalar");
      cJSON_Delete(obj);
      break;
    }
    char where[1200];
    snprintf(where, sizeof where, "%s: line %lld", p->file, (long long)line);
    if ((rc = rd_json_no_duplicate_keys(obj, where, S->st)) != RD_OK) {
      cJSON_Delete(obj);
      break;
    }
    if (n == cap) {
      cap = cap ? 2 * cap : 1024;
      jrow *q = realloc(jr, sizeof *q * (size_t)cap);
      if (!q) {
        cJSON_Delete(obj);
        rc = rd_fail(S->st, RD_EFAIL, "out of memory");
        break;
      }
      jr = q;
    }
    jr[n++] = (jrow){obj, line};
  }
  free(text);
  uint8_t *keep = NULL;
  int64_t dup = 0, kept = 0, errors = 0, parsed = 0, overflow = 0;
  if (rc == RD_OK && n == 0) rc = rd_fail(S->st, RD_EINPUT, "%s: the panel has no rows (expected one JSON object per line)", p->file);
  if (rc == RD_OK) {
    keep = malloc((size_t)n);
    rc = keep ? dedup(p, jr, n, keep, &dup, S->st) : rd_fail(S->st, RD_EFAIL, "out of memory");
  }
  rows *dst = p->role == ROLE_CELLS ? &S->cells : p->role == ROLE_RANK ? &S->rank : p->role == ROLE_SIGNAL ? &S->signal
                                                                                                      : &S->defense;
  for (int64_t i = 0; i < n && rc == RD_OK; i++) {
    if (!keep[i] || !passes_where(p, jr[i].obj)) continue;
    kept++;
    const jrow *r = &jr[i];
    int err_row = is_error(p, r->obj);
    if (err_row && p->role != ROLE_CELLS) {
      errors++;
      continue;
    }
    if (rows_grow(dst) != 0) {
      rc = rd_fail(S->st, RD_EFAIL, "out of memory");
      break;
    }
    int64_t q = dst->n;
    dst->source[q] = src;
    dst->line[q] = r->line;
    dst->reply[q] = NULL;
    dst->value[q] = dst->entropy[q] = dst->recall[q] = NAN;
    dst->series[q] = dst->variant[q] = dst->seed[q] = dst->month_b[q] = dst->defense[q] = dst->attack[q] = 0;
    dst->status[q] = 1;
    dst->pick[q] = -1;
    if ((rc = name_field(S, p, F_MODEL, r, &S->models, &dst->model[q])) != RD_OK) break;
    if ((rc = month_field(S, p, F_MONTH, r, &dst->month[q])) != RD_OK) break;
    if ((rc = reply_field(S, p, r, &dst->reply[q])) != RD_OK) break;
    dst->n++;  /* the reply is owned by the rows from here on */
    if (p->role == ROLE_CELLS || p->role == ROLE_RANK) {
      if ((rc = name_field(S, p, F_SERIES, r, &S->series, &dst->series[q])) != RD_OK) break;
      if (series_slot(S, dst->series[q]) != 0) {
        rc = rd_fail(S->st, RD_EFAIL, "out of memory");
        break;
      }
      int32_t s = dst->series[q];
      if ((p->fictional && S->real_seen[s]) || (!p->fictional && S->fictional[s]))
        rc = rd_fail(S->st, RD_EINPUT, "%s: line %lld: series \"%s\" is fictional in one panel and real in another",
                     p->file, (long long)r->line, name_str(&S->series, s));
      if (p->fictional) S->fictional[s] = 1;
      else S->real_seen[s] = 1;
      if (p->path[F_TRUTH] && !p->fictional) S->has_inline[s] = 1;
    }
    if (rc != RD_OK) break;
    if (p->role == ROLE_CELLS) {
      int32_t vid = 0;
      if (p->path[F_VARIANT] || p->setv[F_VARIANT]) {
        if ((rc = name_field(S, p, F_VARIANT, r, &S->variants, &vid)) != RD_OK) break;
      } else {
        int64_t id = name_id(&S->variants, "default");
        if (id < 0) {
          rc = rd_fail(S->st, RD_EFAIL, "out of memory");
          break;
        }
        vid = (int32_t)id;
      }
      dst->variant[q] = vid;
      if ((rc = seed_field(S, p, r, &dst->seed[q])) != RD_OK) break;
      if (err_row) {
        dst->status[q] = 2;
        errors++;
      } else {
        double v;
        int pr = parse_reply(dst->reply[q], &v, &overflow);
        if (pr < 0) {
          rc = rd_fail(S->st, RD_EINPUT, "%s: line %lld: reply (\"%s\") is not valid UTF-8", p->file, (long long)r->line,
                       p->path[F_REPLY]);
          break;
        }
        if (pr == 1) {
          dst->status[q] = 0;
          dst->value[q] = v;
          parsed++;
        }
      }
      if (p->path[F_LOGPROBS] || p->path[F_ENTROPY]) {
        S->has_entropy = 1;
        if ((rc = entropy_field(S, p, r, &dst->entropy[q])) != RD_OK) break;
      }
      double t;
      int tr = number_field(S, p, F_TRUTH, r, &t);
      if (tr < 0) {
        rc = S->st->code;
        break;
      }
      if (tr > 0 && !p->fictional) rc = add_inline_truth(S, p, src, r, dst->series[q], dst->month[q], t);
    } else if (p->role == ROLE_RANK) {
      if ((rc = month_field(S, p, F_MONTH_B, r, &dst->month_b[q])) != RD_OK) break;
      char buf[64];
      int ft = field_text(p, F_PICK, r->obj, buf, sizeof buf);
      if (p->path[F_PICK]) {
        if (ft < 0) {
          rc = rd_fail(S->st, RD_EINPUT, "%s: line %lld: pick (\"%s\") is not a scalar", p->file, (long long)r->line,
                       p->path[F_PICK]);
          break;
        }
        if (ft == 0) dst->pick[q] = -1;
        else if (!strcasecmp(buf, "m1") || !strcasecmp(buf, "a") || !strcmp(buf, "0")) dst->pick[q] = 0;
        else if (!strcasecmp(buf, "m2") || !strcasecmp(buf, "b") || !strcmp(buf, "1")) dst->pick[q] = 1;
        else if (!strcmp(buf, "-1")) dst->pick[q] = -1;
        else {
          rc = rd_fail(S->st, RD_EINPUT, "%s: line %lld: pick (\"%s\") = \"%s\", expected m1/m2, a/b, 0/1 or null",
                       p->file, (long long)r->line, p->path[F_PICK], buf);
          break;
        }
      } else {
        int pk = rd_numleak_parse_comparative(dst->reply[q], dst->month[q], dst->month_b[q]);
        if (pk < -1) {
          rc = rd_fail(S->st, RD_EINPUT, "%s: line %lld: reply is not valid UTF-8", p->file, (long long)r->line);
          break;
        }
        dst->pick[q] = (int8_t)pk;
      }
      parsed += dst->pick[q] >= 0;
    } else if (p->role == ROLE_SIGNAL) {
      double v;
      int pr = parse_reply(dst->reply[q], &v, &overflow);
      if (pr < 0) {
        rc = rd_fail(S->st, RD_EINPUT, "%s: line %lld: reply is not valid UTF-8", p->file, (long long)r->line);
        break;
      }
      dst->value[q] = pr == 1 ? v : NAN;
      parsed += pr == 1;
      int nr = number_field(S, p, F_RECALL, r, &dst->recall[q]);
      if (nr < 0) {
        rc = S->st->code;
        break;
      }
      if (nr > 0 && !isfinite(dst->recall[q]))
        dst->recall[q] = NAN;
    } else {
      if ((rc = name_field(S, p, F_DEFENSE, r, &S->defenses, &dst->defense[q])) != RD_OK) break;
      if ((rc = name_field(S, p, F_ATTACK, r, &S->attacks, &dst->attack[q])) != RD_OK) break;
      double v;
      int pr = parse_reply(dst->reply[q], &v, &overflow);
      if (pr < 0) {
        rc = rd_fail(S->st, RD_EINPUT, "%s: line %lld: reply is not valid UTF-8", p->file, (long long)r->line);
        break;
      }
      dst->status[q] = pr == 1 ? 0 : 1;  /* leaked (parsed) or blocked */
      parsed += pr == 1;
    }
  }
  if (rc == RD_OK && kept == 0)
    rc = rd_fail(S->st, RD_EINPUT, "%s: no row passes the --where filters (the panel would be empty)", p->file);
  if (rc == RD_OK && S->log)
    fprintf(S->log, "rmdiag import numleak: %s (%s): %lld rows, %lld kept, %lld duplicates dropped, %lld error rows%s, "
            "%lld parsed, %lld with a number beyond float64 (no number)\n", p->file, role_names[p->role], (long long)n,
            (long long)kept, (long long)dup, (long long)errors, p->role == ROLE_CELLS ? " (status 2)" : " (dropped)",
            (long long)parsed, (long long)overflow);
  for (int64_t i = 0; i < n; i++) cJSON_Delete(jr[i].obj);
  free(jr);
  free(keep);
  return rc;
}

/* ---- truth files -------------------------------------------------------------------------------------- */

typedef struct tseries {
  int32_t *month;
  double *value;
  int64_t n, cap;
} tseries;

static int ts_push(tseries *t, int32_t m, double v) {
  if (t->n == t->cap) {
    int64_t cap = t->cap ? 2 * t->cap : 512;
    int32_t *a = realloc(t->month, sizeof(int32_t) * (size_t)cap);
    if (!a) return -1;
    t->month = a;
    double *b = realloc(t->value, sizeof(double) * (size_t)cap);
    if (!b) return -1;
    t->value = b;
    t->cap = cap;
  }
  t->month[t->n] = m;
  t->value[t->n++] = v;
  return 0;
}

static char *trim(char *s) {
  while (*s == ' ' || *s == '\t' || *s == '\r') s++;
  size_t n = strlen(s);
  while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n')) s[--n] = '\0';
  return s;
}

static int all_digits(const char *s, size_t n) {
  if (strlen(s) != n) return 0;
  for (size_t i = 0; i < n; i++)
    if (s[i] < '0' || s[i] > '9') return 0;
  return 1;
}

/* A truth cell: 1 and *v for a number; 0 for a missing cell (empty, ".", and in French files -99.99 or
 * -999); -1 for anything else (NaN counts as bad unless nan_missing). */
/* 1 when s is a decimal number as Python's float() reads one ([+-] digits [. digits] [e [+-] digits], at
 * least one digit), or nan / inf / infinity (any case, signed); strtod alone would also take hexadecimal. */
static int decimal_text(const char *s) {
  if (*s == '+' || *s == '-') s++;
  if (strcasecmp(s, "nan") == 0 || strcasecmp(s, "inf") == 0 || strcasecmp(s, "infinity") == 0) return 1;
  int digits = 0;
  while (*s >= '0' && *s <= '9') s++, digits++;
  if (*s == '.') {
    s++;
    while (*s >= '0' && *s <= '9') s++, digits++;
  }
  if (!digits) return 0;
  if (*s == 'e' || *s == 'E') {
    s++;
    if (*s == '+' || *s == '-') s++;
    if (!(*s >= '0' && *s <= '9')) return 0;
    while (*s >= '0' && *s <= '9') s++;
  }
  return *s == '\0';
}

static int truth_cell(const char *s, int french, int nan_missing, double *v) {
  if (!*s || strcmp(s, ".") == 0) return 0;
  if (!decimal_text(s)) return -1;
  char *end;
  errno = 0;
  double x = strtod(s, &end);
  if (end == s || *end) return -1;
  if (!isfinite(x)) return nan_missing ? 0 : -1;
  if (french && (x == -99.99 || x == -999.0)) return 0;
  *v = x;
  return 1;
}

/* Splits text into lines in place (CR LF or LF); returns the number of lines, *lines malloc'd. */
static int64_t split_lines(char *text, size_t len, char ***lines) {
  int64_t n = 0, cap = 1024;
  char **l = malloc(sizeof *l * (size_t)cap);
  if (!l) return -1;
  size_t pos = 0;
  while (pos < len) {
    size_t end = pos;
    while (end < len && text[end] != '\n') end++;
    text[end] = '\0';
    if (end > pos && text[end - 1] == '\r') text[end - 1] = '\0';
    if (n == cap) {
      char **q = realloc(l, sizeof *l * (size_t)(cap *= 2));
      if (!q) {
        free(l);
        return -1;
      }
      l = q;
    }
    l[n++] = text + pos;
    pos = end + 1;
  }
  *lines = l;
  return n;
}

/* Kenneth French's layout: a text preamble, a header line ",Name,Name...", the monthly block of
 * "YYYYMM, v, v" rows up to the first blank line, then an annual block ("  YYYY, ...") and a footer,
 * which are ignored. */
static int read_french(const char *file, char **lines, int64_t nl, const char *column, const char *series,
                       int nan_missing, tseries *out, rd_status *st) {
  int64_t h = 0;
  for (; h < nl; h++) {
    const char *s = lines[h];
    while (*s == ' ' || *s == '\t') s++;
    if (*s != ',') continue;
    s++;
    while (*s == ' ' || *s == '\t') s++;
    if ((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z')) break;
  }
  if (h == nl)
    return rd_fail(st, RD_EINPUT, "%s: no header line \",NAME,...\" found (expected a Kenneth French file, a FRED "
                   "file observation_date,VALUE or a month,value file)", file);
  /* the column: named, or the only one */
  char *hdr = lines[h];  /* the lines are the file's own text, split in place: parsed in place too */
  int col = -1, ncols = 0;
  char names_list[1024] = "";
  size_t nlen = 0;
  int idx = 0;
  for (char *f = hdr, *next; f; f = next, idx++) {
    char *comma = strchr(f, ',');
    if (comma) *comma = '\0';
    next = comma ? comma + 1 : NULL;
    char *t = trim(f);
    if (idx == 0 && !*t) continue;
    ncols++;
    nlen += (size_t)snprintf(names_list + nlen, nlen < sizeof names_list ? sizeof names_list - nlen : 0, "%s\"%s\"",
                             ncols > 1 ? ", " : "", t);
    if (nlen >= sizeof names_list) nlen = sizeof names_list - 1;
    if ((column && strcmp(t, column) == 0) || (!column && strcmp(t, series) == 0)) col = ncols;
  }
  if (col < 0 && !column && ncols == 1) col = 1;
  if (col < 0)
    return rd_fail(st, RD_EINPUT, "%s: line %lld: no column \"%s\" for series \"%s\" (columns %s)", file,
                   (long long)h + 1, column ? column : series, series, names_list);
  int started = 0;
  for (int64_t i = h + 1; i < nl; i++) {
    char *s = trim(lines[i]);
    if (!*s) {
      if (started) break;
      continue;
    }
    char *fields[64];
    int nf = 0;
    for (char *f = s; f && nf < 64;) {
      char *comma = strchr(f, ',');
      if (comma) *comma = '\0';
      fields[nf++] = trim(f);
      f = comma ? comma + 1 : NULL;
    }
    if (nf == 0 || !all_digits(fields[0], 6)) break;  /* annual block, footer or other text */
    started = 1;
    int32_t m;
    if (!rd_numleak_month(fields[0], 0, &m))
      return rd_fail(st, RD_EINPUT, "%s: line %lld: \"%s\" is not a month YYYYMM", file, (long long)i + 1, fields[0]);
    if (col >= nf)
      return rd_fail(st, RD_EINPUT, "%s: line %lld: %d fields, expected at least %d (column %d of the header)", file,
                     (long long)i + 1, nf, col + 1, col);
    double v;
    int c = truth_cell(fields[col], 1, nan_missing, &v);
    if (c < 0)
      return rd_fail(st, RD_EINPUT, "%s: line %lld: %s = \"%s\", expected a number (missing values are -99.99 or "
                     "-999)", file, (long long)i + 1, column ? column : series, fields[col]);
    if (c > 0 && ts_push(out, m, v) != 0) return rd_fail(st, RD_EFAIL, "out of memory");
  }
  if (!started) return rd_fail(st, RD_EINPUT, "%s: no monthly rows (YYYYMM,...) after the header line %lld", file, (long long)h + 1);
  return RD_OK;
}

/* A header CSV (FRED observation_date,VALUE or month,value): the first column is the month (YYYY-MM,
 * YYYYMM, Month YYYY or YYYY-MM-DD), the value column is named or the second one; empty cells and
 * "." are missing. Parsed with libcsv. */
typedef struct hcsv {
  const char *file, *column, *series;
  int nan_missing, col, field, ncols;
  int64_t record, line, rec_line;  /* records so far; the line being parsed; the line a record starts on */
  char month[64], value[128];
  tseries *out;
  rd_status *st;
  char names_list[1024];
} hcsv;

static void hcsv_field(void *data, size_t len, void *arg) {
  hcsv *h = arg;
  if (h->st->code != RD_OK) return;
  char buf[256];
  if (h->field == 0) h->rec_line = h->line;
  if (h->record > 0 && (h->field == 0 || h->field == h->col) && len >= sizeof h->month) {
    const char *cell = data ? (const char *)data : "";
    size_t lead = 0;  /* a long cell may still be a short one padded with spaces */
    while (lead < len && (cell[lead] == ' ' || cell[lead] == '\t')) lead++;
    size_t tl = len - lead;
    while (tl > 0 && (cell[lead + tl - 1] == ' ' || cell[lead + tl - 1] == '\t' || cell[lead + tl - 1] == '\r')) tl--;
    if (tl >= (h->field == 0 ? sizeof h->month : sizeof h->value)) {
      rd_fail(h->st, RD_EINPUT, "%s: line %lld: a %s cell of %zu characters, expected %s", h->file,
              (long long)h->rec_line, h->field == 0 ? "month" : "value", tl,
              h->field == 0 ? "a month" : "a number of at most 127 characters");
      return;
    }
    data = (void *)(cell + lead);
    len = tl;
  }
  size_t n = len < sizeof buf - 1 ? len : sizeof buf - 1;
  memcpy(buf, data, n);
  buf[n] = '\0';
  char *t = trim(buf);
  if (h->record == 0) {
    size_t l = strlen(h->names_list);
    snprintf(h->names_list + l, sizeof h->names_list - l, "%s\"%s\"", h->field ? ", " : "", t);
    if (h->field > 0 && h->col < 0 && ((h->column && strcmp(t, h->column) == 0) || (!h->column && strcmp(t, h->series) == 0)))
      h->col = h->field;
  } else if (h->field == 0) {
    snprintf(h->month, sizeof h->month, "%s", t);
  } else if (h->field == h->col) {
    snprintf(h->value, sizeof h->value, "%s", t);
  }
  h->field++;
}

static void hcsv_record(int c, void *arg) {
  (void)c;
  hcsv *h = arg;
  if (h->st->code != RD_OK) return;
  h->record++;
  if (h->record == 1) {
    h->ncols = h->field;
    if (h->col < 0 && !h->column && h->ncols >= 2) h->col = 1;
    if (h->col < 0)
      rd_fail(h->st, RD_EINPUT, "%s: line 1: no column \"%s\" for series \"%s\" (columns %s)", h->file,
              h->column ? h->column : h->series, h->series, h->names_list);
  } else if (h->field == 1 && !h->month[0]) {
    /* a blank line */
  } else {
    int32_t m;
    double v;
    int cl = 0;
    if (!rd_numleak_month(h->month, 1, &m))
      rd_fail(h->st, RD_EINPUT, "%s: line %lld: month \"%s\", expected YYYY-MM, YYYYMM, \"Month YYYY\" or YYYY-MM-DD",
              h->file, (long long)h->rec_line, h->month);
    else if (h->field <= h->col)
      rd_fail(h->st, RD_EINPUT, "%s: line %lld: %d field%s, expected at least %d (the value column is column %d of the "
              "header; an empty cell or \".\" is a missing value)", h->file, (long long)h->rec_line, h->field,
              h->field == 1 ? "" : "s", h->col + 1, h->col + 1);
    else if ((cl = truth_cell(h->value, 0, h->nan_missing, &v)) < 0)
      rd_fail(h->st, RD_EINPUT, "%s: line %lld: value \"%s\", expected a number (an empty cell or \".\" is missing; "
              "NaN needs --nan-truth missing)", h->file, (long long)h->rec_line, h->value);
    if (h->st->code == RD_OK && cl > 0 && ts_push(h->out, m, v) != 0) rd_fail(h->st, RD_EFAIL, "out of memory");
  }
  h->field = 0;
  h->month[0] = h->value[0] = '\0';
}

static int cmp_month_idx(const void *a, const void *b) {
  const int64_t *x = a, *y = b;
  return x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : (x[1] < y[1] ? -1 : x[1] > y[1]);
}

/* One mapped series from its file, sorted by month, checked for repeated months, transformed. */
static int read_truth(const nl_opts *o, const truth_map *tm, tseries *out, rd_status *st) {
  char *text = NULL;
  size_t len = 0;
  RD_TRY(read_file(tm->file, &text, &len, st));
  /* French when some line starts with a comma and a name (the header ",Mkt-RF,SMB,..."); FRED and
   * month,value files start with a named first column */
  int french = 0;
  for (size_t i = 0; i < len && !french;) {
    size_t k = i;
    while (k < len && (text[k] == ' ' || text[k] == '\t')) k++;
    if (k < len && text[k] == ',') {
      k++;
      while (k < len && (text[k] == ' ' || text[k] == '\t')) k++;
      french = k < len && ((text[k] >= 'A' && text[k] <= 'Z') || (text[k] >= 'a' && text[k] <= 'z'));
    }
    while (i < len && text[i] != '\n') i++;
    i++;
  }
  tseries raw = {0};
  int rc;
  if (french) {
    char **lines = NULL;
    int64_t nl = split_lines(text, len, &lines);
    rc = nl < 0 ? rd_fail(st, RD_EFAIL, "out of memory")
                : read_french(tm->file, lines, nl, tm->column, tm->series, o->nan_missing, &raw, st);
    free(lines);
  } else {
    struct csv_parser p;
    hcsv h = {.file = tm->file, .column = tm->column, .series = tm->series, .nan_missing = o->nan_missing, .col = -1,
              .out = &raw, .st = st};
    if (csv_init(&p, CSV_APPEND_NULL) != 0) {
      free(text);
      return rd_fail(st, RD_EFAIL, "out of memory");
    }
    /* fed a line at a time, so that messages can name the line a record starts on */
    for (size_t pos = 0; pos < len && st->code == RD_OK;) {
      size_t end = pos;
      while (end < len && text[end] != '\n') end++;
      if (end < len) end++;
      h.line++;
      if (csv_parse(&p, text + pos, end - pos, hcsv_field, hcsv_record, &h) != end - pos && st->code == RD_OK)
        rd_fail(st, RD_EINPUT, "%s: line %lld: malformed CSV (%s)", tm->file, (long long)h.line,
                csv_strerror(csv_error(&p)));
      pos = end;
    }
    if (st->code == RD_OK) csv_fini(&p, hcsv_field, hcsv_record, &h);
    csv_free(&p);
    rc = st->code;
    if (rc == RD_OK && h.record < 2) rc = rd_fail(st, RD_EINPUT, "%s: no data rows after the header", tm->file);
  }
  free(text);
  if (rc != RD_OK) {
    free(raw.month), free(raw.value);
    return rc;
  }
  /* sort by month (stable), refuse repeated months */
  int64_t *ord = malloc(sizeof(int64_t) * 2 * (size_t)(raw.n ? raw.n : 1));
  if (!ord) {
    free(raw.month), free(raw.value);
    return rd_fail(st, RD_EFAIL, "out of memory");
  }
  for (int64_t i = 0; i < raw.n; i++) ord[2 * i] = raw.month[i], ord[2 * i + 1] = i;
  qsort(ord, (size_t)raw.n, 2 * sizeof(int64_t), cmp_month_idx);
  for (int64_t i = 0; i < raw.n && rc == RD_OK; i++) {
    if (i > 0 && ord[2 * i] == ord[2 * i - 2])
      rc = rd_fail(st, RD_EINPUT, "%s: month %lld appears twice (series \"%s\")", tm->file, (long long)ord[2 * i],
                   tm->series);
  }
  for (int64_t i = 0; i < raw.n && rc == RD_OK; i++) {
    int32_t m = raw.month[ord[2 * i + 1]];
    double v = raw.value[ord[2 * i + 1]];
    if (tm->yoy) {
      /* (x_m / x_{m-12} - 1) * 100, NaN-free: months without the value a year earlier are missing */
      int32_t prev = m - 100;
      int64_t lo = 0, hi = i;
      while (lo < hi) {
        int64_t mid = (lo + hi) / 2;
        if (ord[2 * mid] < prev) lo = mid + 1;
        else hi = mid;
      }
      if (lo >= i || ord[2 * lo] != prev) continue;
      double x0 = raw.value[ord[2 * lo + 1]];
      v = (v / x0 - 1.0) * 100.0;
      if (!isfinite(v)) continue;
    }
    if (ts_push(out, m, v) != 0) rc = rd_fail(st, RD_EFAIL, "out of memory");
  }
  free(ord);
  free(raw.month), free(raw.value);
  return rc;
}

/* ---- output --------------------------------------------------------------------------------------------- */

/* A chunked, deflate-compressed 1-D dataset (contiguous when empty). */
/* One chunked, compressed 1-D dataset (the layout importers write). */
static int write_1d(hid_t f, const char *path, hid_t ftype, hid_t mtype, int64_t n, const void *data, rd_status *st) {
  int64_t dims[1] = {n};
  return rd_h5_write_chunked(f, path, 1, dims, ftype, mtype, data, st);
}

static int write_strings(hid_t f, const char *path, int64_t n, const char *const *s, rd_status *st) {
  hid_t t = H5Tcopy(H5T_C_S1);
  H5Tset_size(t, H5T_VARIABLE);
  H5Tset_cset(t, H5T_CSET_UTF8);
  const char **v = malloc(sizeof *v * (size_t)(n ? n : 1));
  if (!v) {
    H5Tclose(t);
    return rd_fail(st, RD_EFAIL, "out of memory");
  }
  for (int64_t i = 0; i < n; i++) v[i] = s[i] ? s[i] : "";
  int rc = write_1d(f, path, t, t, n, v, st);
  free(v);
  H5Tclose(t);
  return rc;
}

static int write_names(hid_t f, const char *path, const names *nm, rd_status *st) {
  int64_t n = name_count(nm);
  const char **v = malloc(sizeof *v * (size_t)(n ? n : 1));
  if (!v) return rd_fail(st, RD_EFAIL, "out of memory");
  for (int64_t i = 0; i < n; i++) v[i] = name_str(nm, i);
  int rc = write_strings(f, path, n, v, st);
  free(v);
  return rc;
}

#define I32 H5T_STD_I32LE, H5T_NATIVE_INT32
#define F64 H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE
#define U8 H5T_STD_U8LE, H5T_NATIVE_UINT8
#define I8 H5T_STD_I8LE, H5T_NATIVE_INT8
#define I64 H5T_STD_I64LE, H5T_NATIVE_INT64

static int write_all(nl_state *S, hid_t f, const int32_t *t_series, const int32_t *t_month, const double *t_value,
                     int64_t T, rd_status *st) {
  const char *g = S->o.group;
  char p[600];
#define P(name) (snprintf(p, sizeof p, "%s/%s", strcmp(g, "/") ? g : "", name), p)
  int64_t S_ = name_count(&S->series);
  if (series_slot(S, S_) != 0) return rd_fail(st, RD_EFAIL, "out of memory");
  if (name_count(&S->variants) == 0 && name_id(&S->variants, "default") < 0) return rd_fail(st, RD_EFAIL, "out of memory");
  RD_TRY(write_names(f, P("model_names"), &S->models, st));
  RD_TRY(write_names(f, P("series_names"), &S->series, st));
  RD_TRY(write_names(f, P("variant_names"), &S->variants, st));
  RD_TRY(write_1d(f, P("series_fictional"), U8, S_, S->fictional, st));
  const rows *c = &S->cells;
  RD_TRY(write_1d(f, P("model"), I32, c->n, c->model, st));
  RD_TRY(write_1d(f, P("series"), I32, c->n, c->series, st));
  RD_TRY(write_1d(f, P("variant"), I32, c->n, c->variant, st));
  RD_TRY(write_1d(f, P("seed"), I32, c->n, c->seed, st));
  RD_TRY(write_1d(f, P("month"), I32, c->n, c->month, st));
  RD_TRY(write_1d(f, P("value"), F64, c->n, c->value, st));
  RD_TRY(write_1d(f, P("status"), U8, c->n, c->status, st));
  if (S->has_entropy) RD_TRY(write_1d(f, P("entropy_bits"), F64, c->n, c->entropy, st));
  if (S->o.keep_replies) RD_TRY(write_strings(f, P("reply"), c->n, (const char *const *)c->reply, st));
  RD_TRY(write_1d(f, P("row_source"), I32, c->n, c->source, st));
  RD_TRY(write_1d(f, P("row_line"), I64, c->n, c->line, st));
  const char **src = malloc(sizeof *src * (size_t)S->o.n_panels);
  if (!src) return rd_fail(st, RD_EFAIL, "out of memory");
  for (int i = 0; i < S->o.n_panels; i++) src[i] = S->o.panels[i].file;
  int rc = write_strings(f, P("source_names"), S->o.n_panels, src, st);
  free(src);
  RD_TRY(rc);
  RD_TRY(write_1d(f, P("truth_series"), I32, T, t_series, st));
  RD_TRY(write_1d(f, P("truth_month"), I32, T, t_month, st));
  RD_TRY(write_1d(f, P("truth_value"), F64, T, t_value, st));
  if (S->rank.n > 0) {
    const rows *r = &S->rank;
    RD_TRY(write_1d(f, P("rank/model"), I32, r->n, r->model, st));
    RD_TRY(write_1d(f, P("rank/series"), I32, r->n, r->series, st));
    RD_TRY(write_1d(f, P("rank/month_a"), I32, r->n, r->month, st));
    RD_TRY(write_1d(f, P("rank/month_b"), I32, r->n, r->month_b, st));
    RD_TRY(write_1d(f, P("rank/pick"), I8, r->n, r->pick, st));
    if (S->o.keep_replies) RD_TRY(write_strings(f, P("rank/reply"), r->n, (const char *const *)r->reply, st));
  }
  if (S->signal.n > 0) {
    const rows *r = &S->signal;
    RD_TRY(write_1d(f, P("signal/model"), I32, r->n, r->model, st));
    RD_TRY(write_1d(f, P("signal/month"), I32, r->n, r->month, st));
    RD_TRY(write_1d(f, P("signal/signal"), F64, r->n, r->value, st));
    RD_TRY(write_1d(f, P("signal/recall"), F64, r->n, r->recall, st));
    if (S->o.keep_replies) RD_TRY(write_strings(f, P("signal/reply"), r->n, (const char *const *)r->reply, st));
  }
  if (S->defense.n > 0) {
    const rows *r = &S->defense;
    uint8_t *blocked = malloc((size_t)r->n);
    if (!blocked) return rd_fail(st, RD_EFAIL, "out of memory");
    for (int64_t i = 0; i < r->n; i++) blocked[i] = r->status[i] != 0;
    rc = write_1d(f, P("defense/blocked"), U8, r->n, blocked, st);
    free(blocked);
    RD_TRY(rc);
    RD_TRY(write_1d(f, P("defense/defense"), I32, r->n, r->defense, st));
    RD_TRY(write_1d(f, P("defense/attack"), I32, r->n, r->attack, st));
    RD_TRY(write_1d(f, P("defense/model"), I32, r->n, r->model, st));
    RD_TRY(write_1d(f, P("defense/month"), I32, r->n, r->month, st));
    RD_TRY(write_names(f, P("defense/defense_names"), &S->defenses, st));
    RD_TRY(write_names(f, P("defense/attack_names"), &S->attacks, st));
    if (S->o.keep_replies) RD_TRY(write_strings(f, P("defense/reply"), r->n, (const char *const *)r->reply, st));
  }
#undef P
  return RD_OK;
}

/* ---- the command ------------------------------------------------------------------------------------------ */

static int cmp_inline(const void *a, const void *b) {
  const inline_truth *x = a, *y = b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  if (x->source != y->source) return x->source < y->source ? -1 : 1;
  return x->line < y->line ? -1 : x->line > y->line;
}

int rd_import_numleak(int argc, char **argv, const char *out_path, FILE *log, rd_status *st) {
  nl_state S;
  memset(&S, 0, sizeof S);
  S.log = log;
  S.st = st;
  int32_t *t_series = NULL, *t_month = NULL;
  double *t_value = NULL;
  int64_t T = 0;
  tseries *ts = NULL;
  if (parse_args(argc, argv, &S.o, st) != RD_OK) goto done;
  for (int p = 0; p < S.o.n_panels; p++)
    if (import_panel(&S, p) != RD_OK) goto done;
  /* series named only by truth mappings (e.g. the residualisation's signal series) come after the panels' */
  for (int t = 0; t < S.o.n_truths; t++) {
    int64_t s = name_id(&S.series, S.o.truths[t].series);
    if (s < 0 || series_slot(&S, s) != 0) {
      rd_fail(st, RD_EFAIL, "out of memory");
      goto done;
    }
    if (S.fictional[s]) {
      rd_fail(st, RD_EINPUT, "rmdiag import numleak: --truth maps series \"%s\", which a --fictional panel declares "
              "fictional", S.o.truths[t].series);
      goto done;
    }
    for (int u = 0; u < t; u++)
      if (strcmp(S.o.truths[u].series, S.o.truths[t].series) == 0) {
        rd_fail(st, RD_EINPUT, "rmdiag import numleak: series \"%s\" has two truth mappings (%s and %s)",
                S.o.truths[t].series, S.o.truths[u].file, S.o.truths[t].file);
        goto done;
      }
  }
  int64_t NS = name_count(&S.series);
  if (series_slot(&S, NS) != 0) {
    rd_fail(st, RD_EFAIL, "out of memory");
    goto done;
  }
  /* every real series of a panel needs a truth source (a file, inline truth) or an explicit --no-truth */
  for (int64_t s = 0; s < NS; s++) {
    if (S.fictional[s] || S.has_inline[s]) continue;
    int ok = 0;
    for (int t = 0; t < S.o.n_truths && !ok; t++) ok = strcmp(S.o.truths[t].series, name_str(&S.series, s)) == 0;
    for (int t = 0; t < S.o.n_no_truth && !ok; t++) ok = strcmp(S.o.no_truth[t], name_str(&S.series, s)) == 0;
    if (ok) continue;
    /* the first row that names it */
    const rows *rs[2] = {&S.cells, &S.rank};
    for (int k = 0; k < 2; k++)
      for (int64_t i = 0; i < rs[k]->n; i++)
        if (rs[k]->series[i] == s) {
          rd_fail(st, RD_EINPUT, "%s: line %lld: series \"%s\" has no truth mapping; give --truth %s=FILE[,COLUMN[,"
                  "TRANSFORM]] (or --truth-numleak DIR for the Fama-French factors), an inline --field truth=PATH, "
                  "or declare it --no-truth %s or --fictional", S.o.panels[rs[k]->source[i]].file,
                  (long long)rs[k]->line[i], name_str(&S.series, s), name_str(&S.series, s), name_str(&S.series, s));
          goto done;
        }
  }
  /* truth: files, then inline values (which must agree with the files and with each other) */
  ts = calloc((size_t)(NS ? NS : 1), sizeof *ts);
  if (!ts) {
    rd_fail(st, RD_EFAIL, "out of memory");
    goto done;
  }
  for (int t = 0; t < S.o.n_truths; t++) {
    int64_t s = name_find(&S.series, S.o.truths[t].series);
    if (read_truth(&S.o, &S.o.truths[t], &ts[s], st) != RD_OK) goto done;
  }
  if (S.n_inl > 0) qsort(S.inl, (size_t)S.n_inl, sizeof *S.inl, cmp_inline);
  int64_t cap = S.n_inl;
  for (int64_t s = 0; s < NS; s++) cap += ts[s].n;
  t_series = malloc(sizeof(int32_t) * (size_t)(cap ? cap : 1));
  t_month = malloc(sizeof(int32_t) * (size_t)(cap ? cap : 1));
  t_value = malloc(sizeof(double) * (size_t)(cap ? cap : 1));
  if (!t_series || !t_month || !t_value) {
    rd_fail(st, RD_EFAIL, "out of memory");
    goto done;
  }
  for (int64_t s = 0, j = 0; s < NS; s++) {
    /* merge the file's months with the inline values of the series (both sorted by month) */
    int64_t i = 0;
    while (j < S.n_inl && (S.inl[j].key >> 24) < s) j++;
    while (i < ts[s].n || (j < S.n_inl && (S.inl[j].key >> 24) == s)) {
      int inl = j < S.n_inl && (S.inl[j].key >> 24) == s;
      int32_t mi = inl ? (int32_t)(S.inl[j].key & 0xffffff) : INT32_MAX;
      int32_t mf = i < ts[s].n ? ts[s].month[i] : INT32_MAX;
      char from[700];
      if (mf <= mi) {
        t_series[T] = (int32_t)s, t_month[T] = mf, t_value[T] = ts[s].value[i++];
        const char *file = "?";
        for (int t = 0; t < S.o.n_truths; t++)
          if (strcmp(S.o.truths[t].series, name_str(&S.series, s)) == 0) file = S.o.truths[t].file;
        snprintf(from, sizeof from, "%s", file);
      } else {
        t_series[T] = (int32_t)s, t_month[T] = mi, t_value[T] = S.inl[j].value;
        snprintf(from, sizeof from, "%s line %lld", S.o.panels[S.inl[j].source].file, (long long)S.inl[j].line);
      }
      /* every inline value of this month must equal the value taken */
      while (j < S.n_inl && S.inl[j].key == ((int64_t)s << 24 | t_month[T])) {
        if (S.inl[j].value != t_value[T]) {
          rd_fail(st, RD_EINPUT, "%s: line %lld: inline truth %.17g for series \"%s\", month %d disagrees with %.17g "
                  "from %s", S.o.panels[S.inl[j].source].file, (long long)S.inl[j].line, S.inl[j].value,
                  name_str(&S.series, s), t_month[T], t_value[T], from);
          goto done;
        }
        j++;
      }
      T++;
    }
  }
  {
    rd_h5_atomic out;
    if (rd_h5_atomic_create(out_path, &out, st) == RD_OK) write_all(&S, out.h, t_series, t_month, t_value, T, st);
    rd_h5_atomic_finish(&out, st);
  }
  if (st->code == RD_OK && log) {
    int64_t ex = 0, pa = 0;
    for (int64_t i = 0; i < S.cells.n; i++) ex += S.cells.status[i] == 2, pa += S.cells.status[i] == 0;
    fprintf(log, "rmdiag import numleak: %s: %lld panel rows (%lld parsed, %lld excluded), %lld models, %lld series, "
            "%lld truth rows, %lld ranking, %lld signal, %lld defense rows\n", out_path, (long long)S.cells.n,
            (long long)pa, (long long)ex, (long long)name_count(&S.models), (long long)NS, (long long)T,
            (long long)S.rank.n, (long long)S.signal.n, (long long)S.defense.n);
  }
done:
  if (ts)
    for (int64_t s = 0; s < name_count(&S.series); s++) free(ts[s].month), free(ts[s].value);
  free(ts);
  free(t_series), free(t_month), free(t_value);
  rows_free(&S.cells), rows_free(&S.rank), rows_free(&S.signal), rows_free(&S.defense);
  names *all[5] = {&S.models, &S.series, &S.variants, &S.defenses, &S.attacks};
  for (int k = 0; k < 5; k++)
    if (all[k]->init) rd_idmap_free(&all[k]->map);
  free(S.fictional), free(S.real_seen), free(S.has_inline), free(S.inl);
  opts_free(&S.o);
  return st->code;
}
