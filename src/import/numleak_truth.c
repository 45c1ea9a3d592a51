/* numleak: ground truth. Each mapped series is read from a Kenneth French file, a FRED file or a plain
 * month,value file (the series -> file, column, transform mapping comes from the options), sorted by
 * month and transformed; then merged with the panels' inline truth values, which must agree with the
 * files and with each other (see docs/reference.md, 'numleak'). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "numleak_internal.h"
#include "rmdiag/common/textin.h"
#include "rmdiag/common/vec.h"
#include "rmdiag/import/csvread.h"
#include "rmdiag/import/numleak_parse.h"

/* One series' (month, value) pairs. */
typedef struct tseries {
  int32_t *month;
  double *value;
  int64_t n;
  size_t cap;
} tseries;

static int ts_push(tseries *t, int32_t m, double v) {
  void *arrays[] = {&t->month, &t->value};
  const size_t elems[] = {sizeof *t->month, sizeof *t->value};
  if (rd_vec_reserve_n(arrays, elems, 2, &t->cap, (size_t)t->n + 1) != 0) return -1;
  t->month[t->n] = m;
  t->value[t->n++] = v;
  return 0;
}

static void ts_free(tseries *t) {
  free(t->month);
  free(t->value);
  memset(t, 0, sizeof *t);
}

/* ---- cells ------------------------------------------------------------------------------------------------- */

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

/* A truth cell: 1 and *v for a number; 0 for a missing cell (empty, ".", and in French files -99.99 or
 * -999); -1 for anything else (NaN counts as bad unless nan_missing). */
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

/* ---- Kenneth French files ------------------------------------------------------------------------------- */

/* Splits text into lines in place (CR LF or LF); returns the number of lines, *lines malloc'd. */
static int64_t split_lines(char *text, size_t len, char ***lines) {
  int64_t n = 0;
  size_t cap = 0;
  char **l = NULL;
  size_t pos = 0;
  while (pos < len) {
    size_t end = pos;
    while (end < len && text[end] != '\n') end++;
    text[end] = '\0';
    if (end > pos && text[end - 1] == '\r') text[end - 1] = '\0';
    if (RD_VEC_RESERVE(l, cap, (size_t)n + 1) != 0) {
      free(l);
      return -1;
    }
    l[n++] = text + pos;
    pos = end + 1;
  }
  *lines = l;
  return n;
}

/* The header line ",Name,Name..." of a French file, or nl when there is none. */
static int64_t french_header(char **lines, int64_t nl) {
  int64_t h = 0;
  for (; h < nl; h++) {
    const char *s = lines[h];
    while (*s == ' ' || *s == '\t') s++;
    if (*s != ',') continue;
    s++;
    while (*s == ' ' || *s == '\t') s++;
    if ((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z')) break;
  }
  return h;
}

/* The series' column in the header line (parsed in place): named, or the only one; -1 when neither.
 * names_list gets the quoted names for messages. */
static int french_column(char *hdr, const char *column, const char *series, char *names_list, size_t cap) {
  int col = -1, ncols = 0, idx = 0;
  size_t nlen = 0;
  names_list[0] = '\0';
  for (char *f = hdr, *next; f; f = next, idx++) {
    char *comma = strchr(f, ',');
    if (comma) *comma = '\0';
    next = comma ? comma + 1 : NULL;
    char *t = trim(f);
    if (idx == 0 && !*t) continue;
    ncols++;
    nlen += (size_t)snprintf(names_list + nlen, nlen < cap ? cap - nlen : 0, "%s\"%s\"", ncols > 1 ? ", " : "", t);
    if (nlen >= cap) nlen = cap - 1;
    if ((column && strcmp(t, column) == 0) || (!column && strcmp(t, series) == 0)) col = ncols;
  }
  if (col < 0 && !column && ncols == 1) col = 1;
  return col;
}

/* Kenneth French's layout: a text preamble, a header line ",Name,Name...", the monthly block of
 * "YYYYMM, v, v" rows up to the first blank line, then an annual block ("  YYYY, ...") and a footer,
 * which are ignored. The lines are the file's own text, split in place: parsed in place too. */
static int read_french(const char *file, char **lines, int64_t nl, const char *column, const char *series,
                       int nan_missing, tseries *out, rd_status *st) {
  int64_t h = french_header(lines, nl);
  if (h == nl)
    return rd_fail(st, RD_EINPUT, "%s: no header line \",NAME,...\" found (expected a Kenneth French file, a FRED "
                   "file observation_date,VALUE or a month,value file)", file);
  char names_list[1024];
  int col = french_column(lines[h], column, series, names_list, sizeof names_list);
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
  if (!started)
    return rd_fail(st, RD_EINPUT, "%s: no monthly rows (YYYYMM,...) after the header line %lld", file,
                   (long long)h + 1);
  return RD_OK;
}

/* ---- header CSV files (FRED, month,value) ---------------------------------------------------------------- */

/* A header CSV (FRED observation_date,VALUE or month,value): the first column is the month (YYYY-MM,
 * YYYYMM, Month YYYY or YYYY-MM-DD), the value column is named or the second one; empty cells and
 * "." are missing. */
typedef struct hcsv {
  const char *file, *column, *series;
  int nan_missing, col;
  int64_t records;
  char month[64], value[128];
  tseries *out;
  char names_list[1024];
} hcsv;

/* Cell k of a record. The month and value cells are read whole: a long one may still be a short one
 * padded with spaces, else it is refused rather than cut. */
static int hcsv_cell(hcsv *h, const rd_csv_record *rec, int k, rd_status *st) {
  const char *cell = rec->field[k];
  size_t len = rec->len[k];
  if (h->records > 0 && (k == 0 || k == h->col) && len >= sizeof h->month) {
    size_t lead = 0;
    while (lead < len && (cell[lead] == ' ' || cell[lead] == '\t')) lead++;
    size_t tl = len - lead;
    while (tl > 0 && (cell[lead + tl - 1] == ' ' || cell[lead + tl - 1] == '\t' || cell[lead + tl - 1] == '\r')) tl--;
    if (tl >= (k == 0 ? sizeof h->month : sizeof h->value))
      return rd_fail(st, RD_EINPUT, "%s: line %lld: a %s cell of %zu characters, expected %s", h->file,
                     (long long)rec->line, k == 0 ? "month" : "value", tl,
                     k == 0 ? "a month" : "a number of at most 127 characters");
    cell += lead;
    len = tl;
  }
  char buf[256];
  size_t n = len < sizeof buf - 1 ? len : sizeof buf - 1;
  memcpy(buf, cell, n);
  buf[n] = '\0';
  char *t = trim(buf);
  if (h->records == 0) {
    size_t l = strlen(h->names_list);
    snprintf(h->names_list + l, sizeof h->names_list - l, "%s\"%s\"", k ? ", " : "", t);
    if (k > 0 && h->col < 0 && ((h->column && strcmp(t, h->column) == 0) || (!h->column && strcmp(t, h->series) == 0)))
      h->col = k;
  } else if (k == 0) {
    snprintf(h->month, sizeof h->month, "%s", t);
  } else if (k == h->col) {
    snprintf(h->value, sizeof h->value, "%s", t);
  }
  return RD_OK;
}

/* A data record: month and value, or a blank line. */
static int hcsv_row(hcsv *h, const rd_csv_record *rec, rd_status *st) {
  if (rec->n == 1 && !h->month[0]) return RD_OK;  /* a blank line */
  int32_t m;
  double v;
  int cl = 0;
  if (!rd_numleak_month(h->month, 1, &m))
    return rd_fail(st, RD_EINPUT, "%s: line %lld: month \"%s\", expected YYYY-MM, YYYYMM, \"Month YYYY\" or "
                   "YYYY-MM-DD", h->file, (long long)rec->line, h->month);
  if (rec->n <= h->col)
    return rd_fail(st, RD_EINPUT, "%s: line %lld: %d field%s, expected at least %d (the value column is column %d of "
                   "the header; an empty cell or \".\" is a missing value)", h->file, (long long)rec->line, rec->n,
                   rec->n == 1 ? "" : "s", h->col + 1, h->col + 1);
  if ((cl = truth_cell(h->value, 0, h->nan_missing, &v)) < 0)
    return rd_fail(st, RD_EINPUT, "%s: line %lld: value \"%s\", expected a number (an empty cell or \".\" is missing; "
                   "NaN needs --nan-truth missing)", h->file, (long long)rec->line, h->value);
  if (cl > 0 && ts_push(h->out, m, v) != 0) return rd_fail(st, RD_EFAIL, "out of memory");
  return RD_OK;
}

static int hcsv_record(const rd_csv_record *rec, void *ctx, rd_status *st) {
  hcsv *h = ctx;
  h->month[0] = h->value[0] = '\0';
  for (int k = 0; k < rec->n; k++) RD_TRY(hcsv_cell(h, rec, k, st));
  int first = h->records++ == 0;
  if (!first) return hcsv_row(h, rec, st);
  if (h->col < 0 && !h->column && rec->n >= 2) h->col = 1;
  if (h->col < 0)
    return rd_fail(st, RD_EINPUT, "%s: line 1: no column \"%s\" for series \"%s\" (columns %s)", h->file,
                   h->column ? h->column : h->series, h->series, h->names_list);
  return RD_OK;
}

/* ---- one mapped series ----------------------------------------------------------------------------------- */

/* French when some line starts with a comma and a name (the header ",Mkt-RF,SMB,..."); FRED and
 * month,value files start with a named first column. */
static int is_french(const char *text, size_t len) {
  for (size_t i = 0; i < len;) {
    size_t k = i;
    while (k < len && (text[k] == ' ' || text[k] == '\t')) k++;
    if (k < len && text[k] == ',') {
      k++;
      while (k < len && (text[k] == ' ' || text[k] == '\t')) k++;
      if (k < len && ((text[k] >= 'A' && text[k] <= 'Z') || (text[k] >= 'a' && text[k] <= 'z'))) return 1;
    }
    while (i < len && text[i] != '\n') i++;
    i++;
  }
  return 0;
}

/* The file's (month, value) pairs in file order. */
static int read_truth_file(const nl_opts *o, const truth_map *tm, tseries *raw, rd_status *st) {
  char *text = NULL;
  size_t len = 0;
  RD_TRY(rd_text_read(tm->file, &text, &len, st));
  int rc;
  if (is_french(text, len)) {
    char **lines = NULL;
    int64_t nl = split_lines(text, len, &lines);
    rc = nl < 0 ? rd_fail(st, RD_EFAIL, "out of memory")
                : read_french(tm->file, lines, nl, tm->column, tm->series, o->nan_missing, raw, st);
    free(lines);
  } else {
    hcsv h = {.file = tm->file, .column = tm->column, .series = tm->series, .nan_missing = o->nan_missing, .col = -1,
              .out = raw};
    rc = rd_csv_parse(tm->file, text, len, 0, hcsv_record, &h, st);
    if (rc == RD_OK && h.records < 2) rc = rd_fail(st, RD_EINPUT, "%s: no data rows after the header", tm->file);
  }
  free(text);
  return rc;
}

static int cmp_month_idx(const void *a, const void *b) {
  const int64_t *x = a, *y = b;
  return x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : (x[1] < y[1] ? -1 : x[1] > y[1]);
}

/* One mapped series from its file, sorted by month, checked for repeated months, transformed. */
static int read_truth(const nl_opts *o, const truth_map *tm, tseries *out, rd_status *st) {
  tseries raw = {0};
  int rc = read_truth_file(o, tm, &raw, st);
  /* sort by month (stable), refuse repeated months */
  int64_t *ord = rc == RD_OK ? malloc(sizeof(int64_t) * 2 * (size_t)(raw.n ? raw.n : 1)) : NULL;
  if (rc == RD_OK && !ord) rc = rd_fail(st, RD_EFAIL, "out of memory");
  if (rc == RD_OK) {
    for (int64_t i = 0; i < raw.n; i++) ord[2 * i] = raw.month[i], ord[2 * i + 1] = i;
    qsort(ord, (size_t)raw.n, 2 * sizeof(int64_t), cmp_month_idx);
  }
  for (int64_t i = 1; i < raw.n && rc == RD_OK; i++)
    if (ord[2 * i] == ord[2 * i - 2])
      rc = rd_fail(st, RD_EINPUT, "%s: month %lld appears twice (series \"%s\")", tm->file, (long long)ord[2 * i],
                   tm->series);
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
  ts_free(&raw);
  return rc;
}

/* ---- files and inline values merged ---------------------------------------------------------------------- */

static int cmp_inline(const void *a, const void *b) {
  const inline_truth *x = a, *y = b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  if (x->source != y->source) return x->source < y->source ? -1 : 1;
  return x->line < y->line ? -1 : x->line > y->line;
}

/* Where series s's file values come from, for messages. */
static const char *truth_file(const nl_state *S, int64_t s) {
  const char *file = "?";
  for (int t = 0; t < S->o.n_truths; t++)
    if (strcmp(S->o.truths[t].series, nl_name_str(&S->series, s)) == 0) file = S->o.truths[t].file;
  return file;
}

/* Series s: its file's months merged with its inline values (both sorted by month); *j walks the
 * sorted inline values. Every inline value of a month must equal the value taken. */
static int merge_series(nl_state *S, int64_t s, const tseries *ts, int64_t *j, truth_table *T) {
  const inline_truth *inl = S->inl;
  int64_t i = 0, n_inl = S->n_inl;
  while (*j < n_inl && (inl[*j].key >> 24) < s) ++*j;
  while (i < ts->n || (*j < n_inl && (inl[*j].key >> 24) == s)) {
    int from_inline = *j < n_inl && (inl[*j].key >> 24) == s;
    int32_t mi = from_inline ? (int32_t)(inl[*j].key & 0xffffff) : INT32_MAX;
    int32_t mf = i < ts->n ? ts->month[i] : INT32_MAX;
    char from[700];
    int64_t k = T->n;
    if (mf <= mi) {
      T->series[k] = (int32_t)s, T->month[k] = mf, T->value[k] = ts->value[i++];
      snprintf(from, sizeof from, "%s", truth_file(S, s));
    } else {
      T->series[k] = (int32_t)s, T->month[k] = mi, T->value[k] = inl[*j].value;
      snprintf(from, sizeof from, "%s line %lld", S->o.panels[inl[*j].source].file, (long long)inl[*j].line);
    }
    for (; *j < n_inl && inl[*j].key == ((int64_t)s << 24 | T->month[k]); ++*j)
      if (inl[*j].value != T->value[k])
        return rd_fail(S->st, RD_EINPUT, "%s: line %lld: inline truth %.17g for series \"%s\", month %d disagrees with "
                       "%.17g from %s", S->o.panels[inl[*j].source].file, (long long)inl[*j].line, inl[*j].value,
                       nl_name_str(&S->series, s), T->month[k], T->value[k], from);
    T->n++;
  }
  return RD_OK;
}

int nl_build_truth(nl_state *S, truth_table *T) {
  rd_status *st = S->st;
  int64_t NS = nl_name_count(&S->series);
  memset(T, 0, sizeof *T);
  tseries *ts = calloc((size_t)(NS ? NS : 1), sizeof *ts);
  if (!ts) return rd_fail(st, RD_EFAIL, "out of memory");
  int rc = RD_OK;
  for (int t = 0; t < S->o.n_truths && rc == RD_OK; t++) {
    int64_t s = nl_name_find(&S->series, S->o.truths[t].series);
    rc = read_truth(&S->o, &S->o.truths[t], &ts[s], st);
  }
  if (rc == RD_OK && S->n_inl > 0) qsort(S->inl, (size_t)S->n_inl, sizeof *S->inl, cmp_inline);
  int64_t cap = S->n_inl;
  for (int64_t s = 0; s < NS; s++) cap += ts[s].n;
  if (rc == RD_OK) {
    T->series = malloc(sizeof(int32_t) * (size_t)(cap ? cap : 1));
    T->month = malloc(sizeof(int32_t) * (size_t)(cap ? cap : 1));
    T->value = malloc(sizeof(double) * (size_t)(cap ? cap : 1));
    if (!T->series || !T->month || !T->value) rc = rd_fail(st, RD_EFAIL, "out of memory");
  }
  int64_t j = 0;
  for (int64_t s = 0; s < NS && rc == RD_OK; s++) rc = merge_series(S, s, &ts[s], &j, T);
  for (int64_t s = 0; s < NS; s++) ts_free(&ts[s]);
  free(ts);
  return rc;
}

void nl_truth_free(truth_table *T) {
  free(T->series);
  free(T->month);
  free(T->value);
  memset(T, 0, sizeof *T);
}
