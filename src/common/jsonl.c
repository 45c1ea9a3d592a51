/* The JSON-lines reader (see jsonl.h): checks, Python's non-finite tokens, then cJSON per value. */
#include "rmdiag/common/jsonl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmdiag/common/jsonutil.h"
#include "rmdiag/common/textin.h"
#include "rmdiag/common/vec.h"

/* One stretch of the file parsed at once: a line, or (RD_JSONL_MULTILINE) the whole text. */
typedef struct chunk {
  const char *file;
  const char *text;   /* the file's text (for line and column) */
  size_t begin, end;  /* the stretch */
  int flags;
  /* a cursor for line numbers: text[pos] is on line `line`, which starts at text[line_start] */
  size_t pos, line_start;
  int64_t line;
} chunk;

/* The NaN / Infinity fix-up of a stretch: a copy where each token is replaced by a JSON number of the
 * same length (so that columns stay right), and the ordinals (among the stretch's numbers, in text
 * order) of the NaN tokens, whose values are set after parsing. */
typedef struct fixup {
  char *text;
  size_t cap;
  int64_t *nan_ord;
  size_t n_nan, nan_cap;
  int64_t seen;       /* numbers met so far while marking */
  size_t next_nan;
} fixup;

/* Line and column of text[off], off at or after the cursor (values are met in text order). */
static void where_at(chunk *c, size_t off, int64_t *line, int64_t *col) {
  for (; c->pos < off; c->pos++)
    if (c->text[c->pos] == '\n') c->line++, c->line_start = c->pos + 1;
  *line = c->line;
  *col = (int64_t)(off - c->line_start) + 1;
}

static const char *expectation(int flags) {
  return (flags & RD_JSONL_MULTILINE) ? "expected one JSON object per line, or one JSON document"
                                      : "expected one JSON object per line";
}

static int fail_at(chunk *c, size_t off, const char *what, rd_status *st) {
  int64_t line, col;
  where_at(c, off, &line, &col);
  return rd_fail(st, RD_EINPUT, "%s: line %lld, column %lld: %s", c->file, (long long)line, (long long)col, what);
}

/* NUL bytes and \u0000 escapes: cJSON keeps strings NUL-terminated and would cut them short. */
static int check_nul(chunk *c, rd_status *st) {
  const char *nul = memchr(c->text + c->begin, '\0', c->end - c->begin);
  if (nul) return fail_at(c, (size_t)(nul - c->text), "a NUL byte (expected JSON text)", st);
  int64_t esc = rd_json_nul_escape_at(c->text + c->begin, c->end - c->begin);
  if (esc >= 0)
    return fail_at(c, c->begin + (size_t)esc, "a \\u0000 escape (NUL) in a string; expected text without NUL "
                   "characters", st);
  return RD_OK;
}

static int word_char(char ch) {
  return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '.';
}

/* Python's token `word` at s[i] standing alone (not part of a longer word; -Infinity's sign is allowed
 * before Infinity only, as Python's json reads it). */
static int token_at(const char *s, size_t i, size_t n, const char *word, int sign_ok) {
  size_t w = strlen(word);
  if (n - i < w || memcmp(s + i, word, w) != 0) return 0;
  if (i + w < n && word_char(s[i + w])) return 0;
  if (i == 0) return 1;
  char prev = s[i - 1];
  return !(word_char(prev) || prev == '+' || (prev == '-' && !sign_ok));
}

static int is_number_start(char ch) { return ch == '-' || (ch >= '0' && ch <= '9'); }
static int is_number_char(char ch) { return is_number_start(ch) || ch == '.' || ch == 'e' || ch == 'E' || ch == '+'; }

/* Fills f from s[0..n): the copy to parse and the ordinals of its NaN tokens. Returns -1 when out of
 * memory. */
static int fix_tokens(const char *s, size_t n, fixup *f) {
  if (rd_vec_reserve(&f->text, &f->cap, n + 1, 1) != 0) return -1;
  memcpy(f->text, s, n);
  f->text[n] = '\0';
  f->n_nan = 0;
  f->seen = 0;
  f->next_nan = 0;
  int in_str = 0, in_num = 0;
  int64_t numbers = 0;
  for (size_t i = 0; i < n; i++) {
    char ch = s[i];
    if (in_str) {
      if (ch == '\\') i++;
      else if (ch == '"') in_str = 0;
      continue;
    }
    if (ch == '"') {
      in_str = 1;
      in_num = 0;
    } else if (ch == 'N' && token_at(s, i, n, "NaN", 0)) {
      if (!in_num) numbers++, in_num = 1;
      if (rd_vec_reserve(&f->nan_ord, &f->nan_cap, f->n_nan + 1, sizeof *f->nan_ord) != 0) return -1;
      f->nan_ord[f->n_nan++] = numbers - 1;
      memcpy(f->text + i, "0.0", 3);
      i += 2;
    } else if (ch == 'I' && token_at(s, i, n, "Infinity", 1)) {
      if (!in_num) numbers++, in_num = 1;
      memcpy(f->text + i, "1e999999", 8);  /* strtod reads it as +inf; a '-' before it makes -inf */
      i += 7;
    } else if (is_number_start(ch)) {
      if (!in_num) numbers++, in_num = 1;
    } else if (!(in_num && is_number_char(ch))) {
      in_num = 0;
    }
  }
  return 0;
}

/* Sets the NaN tokens' numbers to NaN: cJSON's numbers come in text order in a depth-first walk. */
static void mark_nans(cJSON *v, fixup *f) {
  if (f->next_nan >= f->n_nan) return;
  if (cJSON_IsNumber(v)) {
    if (f->nan_ord[f->next_nan] == f->seen) {
      v->valuedouble = NAN;
      v->valueint = 0;
      f->next_nan++;
    }
    f->seen++;
  }
  for (cJSON *k = v->child; k; k = k->next) mark_nans(k, f);
}

/* The checks on a parsed value, then the caller's function. */
static int deliver(chunk *c, cJSON *v, size_t start, rd_jsonl_fn fn, void *ctx, rd_status *st) {
  int64_t line, col;
  where_at(c, start, &line, &col);
  if ((c->flags & RD_JSONL_OBJECTS) && !cJSON_IsObject(v)) {
    const char *what = cJSON_IsArray(v) ? "list" : "scalar";
    cJSON_Delete(v);
    return rd_fail(st, RD_EINPUT, "%s: line %lld: a JSON %s, expected one object per line", c->file, (long long)line,
                   what);
  }
  char where[1200];
  snprintf(where, sizeof where, "%s: line %lld", c->file, (long long)line);
  if (rd_json_no_duplicate_keys(v, where, st) != RD_OK) {
    cJSON_Delete(v);
    return st->code;
  }
  return fn(v, line, ctx, st);
}

static int is_space(char ch) { return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n'; }

/* Parses the values of one stretch: exactly one (a line), or any number (RD_JSONL_MULTILINE). */
static int parse_chunk(chunk *c, fixup *f, rd_jsonl_fn fn, void *ctx, rd_status *st) {
  RD_TRY(check_nul(c, st));
  if (fix_tokens(c->text + c->begin, c->end - c->begin, f) != 0) return rd_fail(st, RD_EFAIL, "out of memory");
  const char *base = f->text - c->begin;  /* base[i] is the fixed byte of text[i] */
  size_t off = c->begin;
  int rc = RD_OK;
  while (rc == RD_OK) {
    while (off < c->end && is_space(base[off])) off++;
    if (off >= c->end) break;
    const char *end = NULL;
    cJSON *v = cJSON_ParseWithLengthOpts(base + off, c->end - off, &end, 0);
    if (!v) {
      size_t at = end ? (size_t)(end - base) : off;
      char what[160];
      snprintf(what, sizeof what, "malformed JSON (%s)", expectation(c->flags));
      return fail_at(c, at < c->end ? at : c->end, what, st);
    }
    mark_nans(v, f);
    size_t next = (size_t)(end - base);
    if (!(c->flags & RD_JSONL_MULTILINE)) {
      while (next < c->end && is_space(base[next])) next++;
      if (next < c->end) {
        cJSON_Delete(v);
        char what[200];
        snprintf(what, sizeof what, "unexpected text after the end of the JSON value (%s)", expectation(c->flags));
        return fail_at(c, next, what, st);
      }
    }
    rc = deliver(c, v, off, fn, ctx, st);
    off = next;
  }
  return rc;
}

int rd_jsonl_parse(const char *file, const char *text, size_t len, int flags, rd_jsonl_fn fn, void *ctx,
                   rd_status *st) {
  size_t start = len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
  fixup f = {0};
  int rc = RD_OK;
  if (flags & RD_JSONL_MULTILINE) {
    chunk c = {file, text, start, len, flags, 0, 0, 1};
    rc = parse_chunk(&c, &f, fn, ctx, st);
  } else {
    int64_t line = 0;
    for (size_t pos = start; pos < len && rc == RD_OK;) {
      size_t ls = pos == start ? 0 : pos, end = pos;
      while (end < len && text[end] != '\n') end++;
      line++;
      size_t a = pos, b = end;
      while (a < b && (text[a] == ' ' || text[a] == '\t' || text[a] == '\r')) a++;
      while (b > a && (text[b - 1] == ' ' || text[b - 1] == '\t' || text[b - 1] == '\r')) b--;
      pos = end + 1;
      if (a == b) continue;
      chunk c = {file, text, a, b, flags, ls, ls, line};
      rc = parse_chunk(&c, &f, fn, ctx, st);
    }
  }
  free(f.text);
  free(f.nan_ord);
  return rc;
}

int rd_jsonl_read(const char *path, int flags, rd_jsonl_fn fn, void *ctx, rd_status *st) {
  char *text = NULL;
  size_t len = 0;
  RD_TRY(rd_text_read(path, &text, &len, st));
  int rc = rd_jsonl_parse(path, text, len, flags, fn, ctx, st);
  free(text);
  return rc;
}

static int keep_value(cJSON *value, int64_t line, void *ctx, rd_status *st) {
  rd_jsonl_values *out = ctx;
  size_t cap = out->cap;
  void *arrays[2] = {&out->value, &out->line};
  size_t elems[2] = {sizeof *out->value, sizeof *out->line};
  if (rd_vec_reserve_n(arrays, elems, 2, &cap, out->n + 1) != 0) {
    cJSON_Delete(value);
    return rd_fail(st, RD_EFAIL, "out of memory");
  }
  out->cap = cap;
  out->value[out->n] = value;
  out->line[out->n++] = line;
  return RD_OK;
}

int rd_jsonl_read_all(const char *path, int flags, rd_jsonl_values *out, rd_status *st) {
  memset(out, 0, sizeof *out);
  return rd_jsonl_read(path, flags, keep_value, out, st);
}

void rd_jsonl_values_free(rd_jsonl_values *v) {
  for (size_t i = 0; i < v->n; i++) cJSON_Delete(v->value[i]);
  free(v->value);
  free(v->line);
  memset(v, 0, sizeof *v);
}

const char *rd_json_number_text(double v) {
  if (isnan(v)) return "NaN";
  if (isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  return NULL;
}
