/* numleak: one panel into the rows of its role. Every field is found through an option (a dotted path
 * into each JSON object, or a constant) rather than code per file; duplicates by key keep the newest
 * non-error record; error rows become status 2 (cells) or are dropped (other roles); replies are
 * parsed with NumLeak's rules (numleak_parse.c). Steps: read, de-duplicate, filter, then one row at a
 * time: the fields every role has, then the role's own. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "numleak_internal.h"
#include "rmdiag/common/jsonl.h"
#include "rmdiag/common/jsonutil.h"
#include "rmdiag/common/vec.h"
#include "rmdiag/import/numleak_parse.h"
#include "rmdiag/import/recognise.h"

/* ---- names and per-series flags ---------------------------------------------------------------------- */

int64_t nl_name_id(names *n, const char *s) {
  if (!n->init) {
    if (rd_idmap_init(&n->map, 64) != 0) return -1;
    n->init = 1;
  }
  return rd_idmap_get(&n->map, s, strlen(s) + 1, NULL);
}

int64_t nl_name_find(const names *n, const char *s) { return n->init ? rd_idmap_find(&n->map, s, strlen(s) + 1) : -1; }
int64_t nl_name_count(const names *n) { return n->init ? n->map.n : 0; }
const char *nl_name_str(const names *n, int64_t i) { return n->map.keys[i]; }

int nl_series_slot(nl_state *S, int64_t s) {
  size_t old = S->series_cap, cap = old;
  void *arrays[] = {&S->fictional, &S->real_seen, &S->has_inline};
  const size_t elems[] = {1, 1, 1};
  if (rd_vec_reserve_n(arrays, elems, 3, &cap, (size_t)s + 1) != 0) return -1;
  memset(S->fictional + old, 0, cap - old);
  memset(S->real_seen + old, 0, cap - old);
  memset(S->has_inline + old, 0, cap - old);
  S->series_cap = cap;
  return 0;
}

/* A new row of `dst` (not yet counted in dst->n): the row's index, or -1 when out of memory. */
static int64_t new_row(rows *r, int32_t src, int64_t line) {
  void *arrays[] = {&r->model, &r->series, &r->variant, &r->seed, &r->month, &r->month_b, &r->defense, &r->attack,
                    &r->source, &r->line, &r->value, &r->entropy, &r->recall, &r->status, &r->pick, &r->reply};
  const size_t elems[] = {sizeof *r->model, sizeof *r->series, sizeof *r->variant, sizeof *r->seed, sizeof *r->month,
                          sizeof *r->month_b, sizeof *r->defense, sizeof *r->attack, sizeof *r->source,
                          sizeof *r->line, sizeof *r->value, sizeof *r->entropy, sizeof *r->recall,
                          sizeof *r->status, sizeof *r->pick, sizeof *r->reply};
  if (rd_vec_reserve_n(arrays, elems, 16, &r->cap, (size_t)r->n + 1) != 0) return -1;
  int64_t q = r->n;
  r->source[q] = src;
  r->line[q] = line;
  r->reply[q] = NULL;
  r->value[q] = r->entropy[q] = r->recall[q] = NAN;
  r->series[q] = r->variant[q] = r->seed[q] = r->month_b[q] = r->defense[q] = r->attack[q] = 0;
  r->status[q] = 1;
  r->pick[q] = -1;
  return q;
}

/* ---- JSON values ------------------------------------------------------------------------------------------ */

typedef struct jrow {
  const cJSON *obj;
  int64_t line;
} jrow;

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

/* A scalar's text: strings as they are, integral numbers without a decimal point, other finite numbers
 * as %.17g, non-finite ones as the file spells them, true/false. Returns 0 for null, objects and
 * arrays. */
static int json_text(const cJSON *v, char *buf, size_t n) {
  if (cJSON_IsString(v)) {
    snprintf(buf, n, "%s", v->valuestring);
    return 1;
  }
  if (cJSON_IsNumber(v)) {
    double x = v->valuedouble;
    if (!isfinite(x)) snprintf(buf, n, "%s", rd_json_number_text(x));
    else if (x == floor(x) && fabs(x) < 1e15) snprintf(buf, n, "%lld", (long long)x);
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

/* The value of field f of a row as text (a --set constant, else the mapped path), after --map.
 * Returns 1 when present, 0 when absent or null, -1 for an object or list. */
static int field_text(const panel_opts *p, int f, const cJSON *obj, char *buf, size_t n) {
  if (p->setv[f]) {
    snprintf(buf, n, "%s", p->setv[f]);
  } else {
    if (!p->path[f]) return 0;
    const cJSON *v = json_at(obj, p->path[f]);
    if (!v || cJSON_IsNull(v)) return 0;
    if (!json_text(v, buf, n)) return -1;
  }
  for (int k = 0; k < p->n_maps; k++)
    if (p->maps[k].field == f && strcmp(p->maps[k].from, buf) == 0) {
      snprintf(buf, n, "%s", p->maps[k].to);
      break;
    }
  return 1;
}

/* ---- selecting rows --------------------------------------------------------------------------------------- */

static int is_error(const panel_opts *p, const cJSON *obj) {
  if (!p->path[F_ERROR]) return 0;
  const cJSON *e = json_at(obj, p->path[F_ERROR]);
  if (!e || cJSON_IsNull(e) || cJSON_IsFalse(e)) return 0;
  if (cJSON_IsString(e) && e->valuestring[0] == '\0') return 0;
  return 1;
}

/* The record's time stamp: a number; anything else is the oldest. */
static double ts_of(const panel_opts *p, const cJSON *obj) {
  const cJSON *t = p->path[F_TS] ? json_at(obj, p->path[F_TS]) : NULL;
  return cJSON_IsNumber(t) ? t->valuedouble : -INFINITY;
}

/* A time stamp that orders records must be finite (NaN would compare as neither newer nor older). */
static int check_ts(const panel_opts *p, const jrow *r, rd_status *st) {
  const cJSON *t = p->path[F_TS] ? json_at(r->obj, p->path[F_TS]) : NULL;
  if (cJSON_IsNumber(t) && !isfinite(t->valuedouble))
    return rd_fail(st, RD_EINPUT, "%s: line %lld: ts (\"%s\") is %s, expected a finite number (a time stamp)", p->file,
                   (long long)r->line, p->path[F_TS], rd_json_number_text(t->valuedouble));
  return RD_OK;
}

/* 1 and the text of a row's key (its time stamp checked), 0 when it has none (absent or null), -1 on an
 * error. */
static int key_text(const panel_opts *p, const jrow *r, char *key, size_t n, rd_status *st) {
  const cJSON *k = json_at(r->obj, p->path[F_KEY]);
  if (!k || cJSON_IsNull(k)) return 0;
  if (!json_text(k, key, n)) {
    rd_fail(st, RD_EINPUT, "%s: line %lld: key (\"%s\") is %s, expected a string or number", p->file,
            (long long)r->line, p->path[F_KEY], type_word(k));
    return -1;
  }
  return check_ts(p, r, st) == RD_OK ? 1 : -1;
}

/* Keeps, per key, the newest non-error record (non-error beats error; then the larger ts; the first
 * seen on equal ts). Rows without a key are all kept. keep[i] says which survive. */
static int dedup(const panel_opts *p, const jrow *r, int64_t n, uint8_t *keep, int64_t *dropped, rd_status *st) {
  *dropped = 0;
  for (int64_t i = 0; i < n; i++) keep[i] = 1;
  if (!p->path[F_KEY]) return RD_OK;
  rd_idmap m;
  if (rd_idmap_init(&m, 1024) != 0) return rd_fail(st, RD_EFAIL, "out of memory");
  int64_t *best = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
  int rc = best ? RD_OK : rd_fail(st, RD_EFAIL, "out of memory");
  char key[1024];
  for (int64_t i = 0; i < n && rc == RD_OK; i++) {
    int has = key_text(p, &r[i], key, sizeof key, st);
    if (has < 0) rc = st->code;
    if (has <= 0) continue;
    int is_new = 0;
    int64_t id = rd_idmap_get(&m, key, strlen(key) + 1, &is_new);
    if (id < 0) {
      rc = rd_fail(st, RD_EFAIL, "out of memory");
    } else if (is_new) {
      best[id] = i;
    } else {
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
  }
  free(best);
  rd_idmap_free(&m);
  return rc;
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

/* ---- fields ------------------------------------------------------------------------------------------------ */

/* The id of a name field (model, series, ...): required, text. */
static int name_field(nl_state *S, const panel_opts *p, int f, const jrow *r, names *nm, int32_t *out) {
  const char *fname = nl_field_names[f];
  char buf[1024];
  int rc = field_text(p, f, r->obj, buf, sizeof buf);
  if (rc <= 0) {
    const cJSON *v = p->path[f] ? json_at(r->obj, p->path[f]) : NULL;
    if (!p->path[f] && !p->setv[f])
      return rd_fail(S->st, RD_EINPUT, "%s: line %lld: no %s for the row: give --field %s=PATH or --set %s=VALUE",
                     p->file, (long long)r->line, fname, fname, fname);
    return rd_fail(S->st, RD_EINPUT, "%s: line %lld: %s (\"%s\") is %s, expected a name (use --set %s=VALUE for "
                   "panels without it)", p->file, (long long)r->line, fname, p->path[f], type_word(v), fname);
  }
  const char *where = p->path[f] ? p->path[f] : "--set";
  if (!buf[0])
    return rd_fail(S->st, RD_EINPUT, "%s: line %lld: %s (\"%s\") is empty, expected a name", p->file,
                   (long long)r->line, fname, where);
  const cJSON *v = p->setv[f] ? NULL : json_at(r->obj, p->path[f]);
  size_t full = p->setv[f] ? strlen(p->setv[f]) : cJSON_IsString(v) ? strlen(v->valuestring) : strlen(buf);
  if (full >= sizeof buf)
    return rd_fail(S->st, RD_EINPUT, "%s: line %lld: %s (\"%s\") is a name of %zu bytes, expected at most %zu", p->file,
                   (long long)r->line, fname, where, full, sizeof buf - 1);
  if (rd_utf8_invalid_at(buf, strlen(buf)) >= 0)
    return rd_fail(S->st, RD_EINPUT, "%s: line %lld: %s (\"%s\") is not valid UTF-8 text", p->file, (long long)r->line,
                   fname, where);
  int64_t id = nl_name_id(nm, buf);
  if (id < 0 || id > INT32_MAX) return rd_fail(S->st, RD_EFAIL, "out of memory");
  *out = (int32_t)id;
  return RD_OK;
}

static int month_field(nl_state *S, const panel_opts *p, int f, const jrow *r, int32_t *out) {
  if (!p->path[f])
    return rd_fail(S->st, RD_EINPUT, "%s: no %s field mapped (give --field %s=PATH)", p->file, nl_field_names[f],
                   nl_field_names[f]);
  const cJSON *v = json_at(r->obj, p->path[f]);
  char buf[128], shown[160];
  int is_text = v && json_text(v, buf, sizeof buf);
  if (is_text && rd_numleak_month(buf, 0, out)) return RD_OK;
  if (is_text) snprintf(shown, sizeof shown, "\"%s\"", buf);
  else snprintf(shown, sizeof shown, "%s", type_word(v));
  return rd_fail(S->st, RD_EINPUT, "%s: line %lld: %s (\"%s\") = %s, expected a month as YYYY-MM, YYYYMM or "
                 "\"Month YYYY\"", p->file, (long long)r->line, nl_field_names[f], p->path[f], shown);
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

/* A number field: 1 and *out when present, 0 when absent or null, -1 (an error) for another type;
 * non-finite values are the caller's to judge. */
static int number_field(nl_state *S, const panel_opts *p, int f, const jrow *r, double *out) {
  *out = NAN;
  if (!p->path[f]) return 0;
  const cJSON *v = json_at(r->obj, p->path[f]);
  if (!v || cJSON_IsNull(v)) return 0;
  if (!cJSON_IsNumber(v)) {
    rd_fail(S->st, RD_EINPUT, "%s: line %lld: %s (\"%s\") is %s, expected a number", p->file, (long long)r->line,
            nl_field_names[f], p->path[f], type_word(v));
    return -1;
  }
  *out = v->valuedouble;
  return 1;
}

/* entropy_bits from the tokens' top log-probabilities (natural log), first two tokens. */
static int logprobs_entropy(nl_state *S, const panel_opts *p, const jrow *r, const cJSON *toks, double *out) {
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
      /* -Infinity (probability 0) is a logprob; NaN and +Infinity are not */
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

/* A precomputed entropy, else the one of the logprobs; NaN when neither is there. */
static int entropy_field(nl_state *S, const panel_opts *p, const jrow *r, double *out) {
  *out = NAN;
  if (p->path[F_ENTROPY]) {
    int rc = number_field(S, p, F_ENTROPY, r, out);
    if (rc < 0) return S->st->code;
    if (rc > 0 && !(isfinite(*out) && *out >= 0)) {
      char shown[40];
      if (!isfinite(*out)) snprintf(shown, sizeof shown, "%s", rd_json_number_text(*out));
      else snprintf(shown, sizeof shown, "%g", *out);
      return rd_fail(S->st, RD_EINPUT, "%s: line %lld: entropy (\"%s\") = %s, expected a finite entropy >= 0",
                     p->file, (long long)r->line, p->path[F_ENTROPY], shown);
    }
    return RD_OK;
  }
  if (!p->path[F_LOGPROBS]) return RD_OK;
  const cJSON *toks = json_at(r->obj, p->path[F_LOGPROBS]);
  if (!toks || cJSON_IsNull(toks)) return RD_OK;
  return logprobs_entropy(S, p, r, toks, out);
}

static int add_inline_truth(nl_state *S, const panel_opts *p, int32_t src, const jrow *r, int32_t series, int32_t month,
                            double v) {
  if (!isfinite(v)) {
    if (S->o.nan_missing) return RD_OK;
    return rd_fail(S->st, RD_EINPUT, "%s: line %lld: truth (\"%s\") is not a finite number (NaN or infinite); expected "
                   "a value, or null when the month has none (--nan-truth missing treats it as missing)", p->file,
                   (long long)r->line, p->path[F_TRUTH]);
  }
  if (RD_VEC_RESERVE(S->inl, S->cap_inl, (size_t)S->n_inl + 1) != 0) return rd_fail(S->st, RD_EFAIL, "out of memory");
  S->inl[S->n_inl++] = (inline_truth){(int64_t)series << 24 | month, v, src, r->line};
  return RD_OK;
}

/* ---- one row ------------------------------------------------------------------------------------------------ */

typedef struct panel_counts {
  int64_t rows, kept, dup, errors, parsed, overflow;
} panel_counts;

/* The reply's number (rd_numleak_parse_numeric), where a value beyond float64 (a % hit of more than
 * 308 digits reads as inf, as Python's float() does, and inf - inf is NaN) counts as no number:
 * the panel stores only finite parsed values. Such replies are counted as overflows. */
static int parse_reply(const char *reply, double *v, panel_counts *c) {
  int pr = rd_numleak_parse_numeric(reply, v);
  if (pr == 1 && !isfinite(*v)) {
    *v = NAN;
    c->overflow++;
    return 0;
  }
  return pr;
}

/* The series of a cells or rank row, which is fictional in every panel naming it or in none. */
static int row_series(nl_state *S, const panel_opts *p, const jrow *r, rows *dst, int64_t q) {
  RD_TRY(name_field(S, p, F_SERIES, r, &S->series, &dst->series[q]));
  if (nl_series_slot(S, dst->series[q]) != 0) return rd_fail(S->st, RD_EFAIL, "out of memory");
  int32_t s = dst->series[q];
  if ((p->fictional && S->real_seen[s]) || (!p->fictional && S->fictional[s]))
    return rd_fail(S->st, RD_EINPUT, "%s: line %lld: series \"%s\" is fictional in one panel and real in another",
                   p->file, (long long)r->line, nl_name_str(&S->series, s));
  if (p->fictional) S->fictional[s] = 1;
  else S->real_seen[s] = 1;
  if (p->path[F_TRUTH] && !p->fictional) S->has_inline[s] = 1;
  return RD_OK;
}

static int cells_row(nl_state *S, const panel_opts *p, int32_t src, const jrow *r, int err_row, rows *dst, int64_t q,
                     panel_counts *c) {
  int32_t vid = 0;
  if (p->path[F_VARIANT] || p->setv[F_VARIANT]) {
    RD_TRY(name_field(S, p, F_VARIANT, r, &S->variants, &vid));
  } else {
    int64_t id = nl_name_id(&S->variants, "default");
    if (id < 0) return rd_fail(S->st, RD_EFAIL, "out of memory");
    vid = (int32_t)id;
  }
  dst->variant[q] = vid;
  RD_TRY(seed_field(S, p, r, &dst->seed[q]));
  if (err_row) {
    dst->status[q] = 2;
    c->errors++;
  } else {
    double v;
    int pr = parse_reply(dst->reply[q], &v, c);
    if (pr < 0)
      return rd_fail(S->st, RD_EINPUT, "%s: line %lld: reply (\"%s\") is not valid UTF-8", p->file, (long long)r->line,
                     p->path[F_REPLY]);
    if (pr == 1) {
      dst->status[q] = 0;
      dst->value[q] = v;
      c->parsed++;
    }
  }
  if (p->path[F_LOGPROBS] || p->path[F_ENTROPY]) {
    S->has_entropy = 1;
    RD_TRY(entropy_field(S, p, r, &dst->entropy[q]));
  }
  double t;
  int tr = number_field(S, p, F_TRUTH, r, &t);
  if (tr < 0) return S->st->code;
  if (tr > 0 && !p->fictional) return add_inline_truth(S, p, src, r, dst->series[q], dst->month[q], t);
  return RD_OK;
}

/* A ranking row's pick: the pick field (m1/a/0, m2/b/1, -1 or null), else the reply parsed. */
static int rank_row(nl_state *S, const panel_opts *p, const jrow *r, rows *dst, int64_t q, panel_counts *c) {
  RD_TRY(month_field(S, p, F_MONTH_B, r, &dst->month_b[q]));
  if (p->path[F_PICK]) {
    char buf[64];
    int ft = field_text(p, F_PICK, r->obj, buf, sizeof buf);
    if (ft < 0)
      return rd_fail(S->st, RD_EINPUT, "%s: line %lld: pick (\"%s\") is not a scalar", p->file, (long long)r->line,
                     p->path[F_PICK]);
    if (ft == 0) dst->pick[q] = -1;
    else if (!strcasecmp(buf, "m1") || !strcasecmp(buf, "a") || !strcmp(buf, "0")) dst->pick[q] = 0;
    else if (!strcasecmp(buf, "m2") || !strcasecmp(buf, "b") || !strcmp(buf, "1")) dst->pick[q] = 1;
    else if (!strcmp(buf, "-1")) dst->pick[q] = -1;
    else
      return rd_fail(S->st, RD_EINPUT, "%s: line %lld: pick (\"%s\") = \"%s\", expected m1/m2, a/b, 0/1 or null",
                     p->file, (long long)r->line, p->path[F_PICK], buf);
  } else {
    int pk = rd_numleak_parse_comparative(dst->reply[q], dst->month[q], dst->month_b[q]);
    if (pk < -1)
      return rd_fail(S->st, RD_EINPUT, "%s: line %lld: reply is not valid UTF-8", p->file, (long long)r->line);
    dst->pick[q] = (int8_t)pk;
  }
  c->parsed += dst->pick[q] >= 0;
  return RD_OK;
}

static int signal_row(nl_state *S, const panel_opts *p, const jrow *r, rows *dst, int64_t q, panel_counts *c) {
  double v;
  int pr = parse_reply(dst->reply[q], &v, c);
  if (pr < 0) return rd_fail(S->st, RD_EINPUT, "%s: line %lld: reply is not valid UTF-8", p->file, (long long)r->line);
  dst->value[q] = pr == 1 ? v : NAN;
  c->parsed += pr == 1;
  int nr = number_field(S, p, F_RECALL, r, &dst->recall[q]);
  if (nr < 0) return S->st->code;
  if (nr > 0 && !isfinite(dst->recall[q])) dst->recall[q] = NAN;  /* a non-finite recall is a missing one */
  return RD_OK;
}

static int defense_row(nl_state *S, const panel_opts *p, const jrow *r, rows *dst, int64_t q, panel_counts *c) {
  RD_TRY(name_field(S, p, F_DEFENSE, r, &S->defenses, &dst->defense[q]));
  RD_TRY(name_field(S, p, F_ATTACK, r, &S->attacks, &dst->attack[q]));
  double v;
  int pr = parse_reply(dst->reply[q], &v, c);
  if (pr < 0) return rd_fail(S->st, RD_EINPUT, "%s: line %lld: reply is not valid UTF-8", p->file, (long long)r->line);
  dst->status[q] = pr == 1 ? 0 : 1;  /* leaked (parsed) or blocked */
  c->parsed += pr == 1;
  return RD_OK;
}

/* One kept row: the model, month and reply every role has, then the role's fields. */
static int panel_row(nl_state *S, const panel_opts *p, int32_t src, const jrow *r, rows *dst, panel_counts *c) {
  int err_row = is_error(p, r->obj);
  if (err_row && p->role != ROLE_CELLS) {
    c->errors++;
    return RD_OK;
  }
  int64_t q = new_row(dst, src, r->line);
  if (q < 0) return rd_fail(S->st, RD_EFAIL, "out of memory");
  RD_TRY(name_field(S, p, F_MODEL, r, &S->models, &dst->model[q]));
  RD_TRY(month_field(S, p, F_MONTH, r, &dst->month[q]));
  RD_TRY(reply_field(S, p, r, &dst->reply[q]));
  dst->n++;  /* the reply is owned by the rows from here on */
  if (p->role == ROLE_CELLS || p->role == ROLE_RANK) RD_TRY(row_series(S, p, r, dst, q));
  switch (p->role) {
    case ROLE_CELLS: return cells_row(S, p, src, r, err_row, dst, q, c);
    case ROLE_RANK: return rank_row(S, p, r, dst, q, c);
    case ROLE_SIGNAL: return signal_row(S, p, r, dst, q, c);
    default: return defense_row(S, p, r, dst, q, c);
  }
}

/* ---- RewardBench files given as panels --------------------------------------------------------------------- */

/* The RewardBench version of a per-subset accuracy object ({"alpacaeval-easy": 0.97, ...}) by its subset
 * names: RD_LOOKS_RB1 or RD_LOOKS_RB2 (the more names), else RD_LOOKS_UNKNOWN. */
static rd_looks rb_accuracy_looks(const cJSON *obj, const char **key) {
  int n[3] = {0, 0, 0};
  const char *first[3] = {NULL, NULL, NULL};
  for (const cJSON *e = cJSON_IsObject(obj) ? obj->child : NULL; e; e = e->next) {
    int v = rd_rb_subset_version(e->string);
    if (!first[v]) first[v] = e->string;
    n[v] += cJSON_IsNumber(e);
  }
  if (n[1] == 0 && n[2] == 0) return RD_LOOKS_UNKNOWN;
  *key = first[n[1] >= n[2] ? 1 : 2];
  return n[1] >= n[2] ? RD_LOOKS_RB1 : RD_LOOKS_RB2;
}

/* A panel whose first rows are RewardBench results (rows, the object of parallel arrays, a metadata row,
 * or per-subset accuracies) and lack the month field every panel row needs is refused naming the importer
 * that reads it; a panel mapping its fields onto such keys on purpose is read as asked. */
static int refuse_rewardbench(nl_state *S, const panel_opts *p, const rd_jsonl_values *V) {
  if (V->n == 0 || !p->path[F_MONTH] || json_at(V->value[0], p->path[F_MONTH])) return RD_OK;
  const char *key = NULL, *key2 = NULL;
  int64_t line = V->line[0];
  rd_looks l = rd_import_looks(V->value[0], &key);
  if (l == RD_LOOKS_RB_META && V->n > 1) {
    rd_looks l2 = rd_import_looks(V->value[1], &key2);
    if (l2 == RD_LOOKS_RB1 || l2 == RD_LOOKS_RB2) l = l2, key = key2, line = V->line[1];
  }
  if (l == RD_LOOKS_UNKNOWN) l = rb_accuracy_looks(V->value[0], &key);
  if (l != RD_LOOKS_RB1 && l != RD_LOOKS_RB2 && l != RD_LOOKS_RB_META) return RD_OK;
  return rd_fail(S->st, RD_EINPUT, "%s: line %lld: key \"%s\" marks %s, not a NumLeak panel (no month field \"%s\"); "
                 "import this file with %s %s", p->file, (long long)line, key, rd_looks_what(l), p->path[F_MONTH],
                 rd_looks_command(l), p->file);
}

/* A panel that is not one JSON object per line: when it reads as RewardBench results over several lines
 * (pretty-printed parallel arrays or accuracies), say so instead of the JSON error. */
static int refuse_rewardbench_document(nl_state *S, const panel_opts *p) {
  rd_status st2;
  rd_status_init(&st2);
  rd_jsonl_values V;
  int rc = rd_jsonl_read_all(p->file, RD_JSONL_MULTILINE, &V, &st2) == RD_OK ? refuse_rewardbench(S, p, &V) : RD_OK;
  rd_jsonl_values_free(&V);
  return rc;
}

/* ---- one panel ------------------------------------------------------------------------------------------------ */

/* What the panel kept and what it dropped, and which option dropped it: nothing is left out silently. */
static void log_panel(const nl_state *S, const panel_opts *p, const panel_counts *c) {
  int cells = p->role == ROLE_CELLS;
  int64_t where = c->rows - c->dup - c->kept, err_dropped = cells ? 0 : c->errors;
  fprintf(S->log, "rmdiag import numleak: %s (%s): %lld rows; kept %lld", p->file, nl_role_names[p->role],
          (long long)c->rows, (long long)(c->kept - err_dropped));
  if (cells) fprintf(S->log, ", %lld error rows among them (status 2)", (long long)c->errors);
  fprintf(S->log, ", %lld parsed, %lld with a number beyond float64 (no number); ", (long long)c->parsed,
          (long long)c->overflow);
  if (c->dup + where + err_dropped == 0) {
    fprintf(S->log, "dropped none\n");
    return;
  }
  fprintf(S->log, "dropped %lld: %lld duplicates by key (--field key), %lld not matching --where",
          (long long)(c->dup + where + err_dropped), (long long)c->dup, (long long)where);
  if (!cells)
    fprintf(S->log, ", %lld error rows (error field \"%s\"; --field error= keeps them)", (long long)err_dropped,
            p->path[F_ERROR] ? p->path[F_ERROR] : "");
  fputc('\n', S->log);
}

int nl_import_panel(nl_state *S, int32_t src) {
  const panel_opts *p = &S->o.panels[src];
  rd_jsonl_values V;
  if (rd_jsonl_read_all(p->file, RD_JSONL_OBJECTS, &V, S->st) != RD_OK) {
    rd_jsonl_values_free(&V);
    rd_status keep = *S->st;
    if (refuse_rewardbench_document(S, p) == RD_OK) *S->st = keep;
    return S->st->code;
  }
  if (refuse_rewardbench(S, p, &V) != RD_OK) {
    rd_jsonl_values_free(&V);
    return S->st->code;
  }
  panel_counts c = {.rows = (int64_t)V.n};
  jrow *jr = malloc(sizeof *jr * (V.n ? V.n : 1));
  uint8_t *keep = malloc(V.n ? V.n : 1);
  int rc = jr && keep ? RD_OK : rd_fail(S->st, RD_EFAIL, "out of memory");
  for (size_t i = 0; rc == RD_OK && i < V.n; i++) jr[i] = (jrow){V.value[i], V.line[i]};
  if (rc == RD_OK && c.rows == 0)
    rc = rd_fail(S->st, RD_EINPUT, "%s: the panel has no rows (expected one JSON object per line)", p->file);
  if (rc == RD_OK) rc = dedup(p, jr, c.rows, keep, &c.dup, S->st);
  rows *dst = p->role == ROLE_CELLS ? &S->cells : p->role == ROLE_RANK ? &S->rank : p->role == ROLE_SIGNAL ? &S->signal
                                                                                                      : &S->defense;
  for (int64_t i = 0; i < c.rows && rc == RD_OK; i++) {
    if (!keep[i] || !passes_where(p, jr[i].obj)) continue;
    c.kept++;
    rc = panel_row(S, p, src, &jr[i], dst, &c);
  }
  if (rc == RD_OK && c.kept == 0)
    rc = rd_fail(S->st, RD_EINPUT, "%s: no row passes the --where filters (the panel would be empty)", p->file);
  if (rc == RD_OK && S->log) log_panel(S, p, &c);
  free(jr);
  free(keep);
  rd_jsonl_values_free(&V);
  return rc;
}
