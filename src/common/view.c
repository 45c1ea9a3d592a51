/* The view of a report for readers: tables, warnings and figures that kinds fill from their reports, and
 * the helpers that read report JSON into cells. Rendering is in view_render.c. */
#include "rmdiag/common/view.h"

#include <mpi.h>

#include "rmdiag/common/h5in.h"

#include <math.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Allocation failures here are not recoverable in a useful way (the tables are small): stop cleanly. */
static void *xrealloc(void *p, size_t n) {
  void *q = realloc(p, n ? n : 1);
  if (!q) {
    fputs("rmdiag: error: out of memory building a report view\n", stderr);
    exit(1);
  }
  return q;
}

static char *xstrdup(const char *s) {
  if (!s) return NULL;
  size_t n = strlen(s) + 1;
  char *d = xrealloc(NULL, n);
  memcpy(d, s, n);
  return d;
}

static char *vformat(const char *fmt, va_list ap) {
  va_list aq;
  va_copy(aq, ap);
  int n = vsnprintf(NULL, 0, fmt, aq);
  va_end(aq);
  char *s = xrealloc(NULL, (size_t)(n < 0 ? 0 : n) + 1);
  vsnprintf(s, (size_t)(n < 0 ? 0 : n) + 1, fmt, ap);
  return s;
}

void rd_view_init(rd_view *v) { memset(v, 0, sizeof *v); }

static void table_free(rd_table *t) {
  for (int c = 0; c < t->n_cols; c++) {
    free(t->cols[c].key);
    free(t->cols[c].label);
    free(t->cols[c].blank);
  }
  for (int64_t i = 0; i < t->n_cells; i++) free(t->cells[i].text);
  for (int i = 0; i < t->n_notes; i++) free(t->notes[i]);
  free(t->notes);
  free(t->cols);
  free(t->cells);
  free(t->name);
  free(t->title);
  free(t->legend);
  free(t);
}

void rd_view_free(rd_view *v) {
  for (int i = 0; i < v->n_tables; i++) table_free(v->tables[i]);
  for (int i = 0; i < v->n_figures; i++) {
    free(v->figures[i].name);
    free(v->figures[i].title);
    free(v->figures[i].caption);
    cJSON_Delete(v->figures[i].spec);
  }
  for (int i = 0; i < v->n_warnings; i++) free(v->warnings[i]);
  free(v->tables);
  free(v->figures);
  free(v->warnings);
  free(v->heading);
  memset(v, 0, sizeof *v);
}

void rd_view_heading(rd_view *v, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  free(v->heading);
  v->heading = vformat(fmt, ap);
  va_end(ap);
}

void rd_view_warn(rd_view *v, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  v->warnings = xrealloc(v->warnings, sizeof(char *) * (size_t)(v->n_warnings + 1));
  v->warnings[v->n_warnings++] = vformat(fmt, ap);
  va_end(ap);
}

void rd_view_warnings_from(rd_view *v, const cJSON *result) {
  const cJSON *w = cJSON_GetObjectItemCaseSensitive(result, "warnings");
  for (const cJSON *x = cJSON_IsArray(w) ? w->child : NULL; x; x = x->next)
    if (cJSON_IsString(x)) rd_view_warn(v, "%s", x->valuestring);
}

rd_table *rd_view_table(rd_view *v, const char *name, const char *title, const char *legend) {
  rd_table *t = xrealloc(NULL, sizeof *t);
  memset(t, 0, sizeof *t);
  t->name = xstrdup(name);
  t->title = xstrdup(title);
  t->legend = xstrdup(legend);
  v->tables = xrealloc(v->tables, sizeof(rd_table *) * (size_t)(v->n_tables + 1));
  v->tables[v->n_tables++] = t;
  return t;
}

void rd_view_figure(rd_view *v, const char *name, const char *title, const char *caption, cJSON *spec) {
  if (!spec) return;
  v->figures = xrealloc(v->figures, sizeof(rd_figure) * (size_t)(v->n_figures + 1));
  rd_figure *f = &v->figures[v->n_figures++];
  f->name = xstrdup(name);
  f->title = xstrdup(title);
  f->caption = xstrdup(caption);
  f->spec = spec;
}

cJSON *rd_view_values(cJSON *spec, cJSON *values) {
  cJSON *d = cJSON_CreateObject();
  cJSON_AddItemToObject(d, "values", values);
  cJSON_AddItemToObject(spec, "data", d);
  return spec;
}

const rd_table *rd_view_find(const rd_view *v, const char *name) {
  for (int i = 0; i < v->n_tables; i++)
    if (strcmp(v->tables[i]->name, name) == 0) return v->tables[i];
  return NULL;
}

void rd_table_col(rd_table *t, const char *key, const char *label, rd_col_type type, int digits, const char *blank) {
  if (t->n_cols == t->cap_cols) {
    t->cap_cols = t->cap_cols ? 2 * t->cap_cols : 8;
    t->cols = xrealloc(t->cols, sizeof(rd_col) * (size_t)t->cap_cols);
  }
  rd_col *c = &t->cols[t->n_cols++];
  memset(c, 0, sizeof *c);
  c->key = xstrdup(key);
  c->label = xstrdup(label ? label : key);
  c->type = type;
  c->digits = digits;
  c->blank = xstrdup(blank);
}

void rd_table_hide_last(rd_table *t) {
  if (t->n_cols > 0) t->cols[t->n_cols - 1].hidden = 1;
}

void rd_table_brief_last(rd_table *t) {
  if (t->n_cols > 0) t->cols[t->n_cols - 1].brief = 1;
}

void rd_table_note(rd_table *t, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  t->notes = xrealloc(t->notes, sizeof(char *) * (size_t)(t->n_notes + 1));
  t->notes[t->n_notes++] = vformat(fmt, ap);
  va_end(ap);
}

static rd_cell *cell_next(rd_table *t) {
  if (t->n_cells == t->cap_cells) {
    t->cap_cells = t->cap_cells ? 2 * t->cap_cells : 64;
    t->cells = xrealloc(t->cells, sizeof(rd_cell) * (size_t)t->cap_cells);
  }
  rd_cell *x = &t->cells[t->n_cells++];
  memset(x, 0, sizeof *x);
  x->lo = x->hi = NAN;
  return x;
}

void rd_table_text(rd_table *t, const char *s) {
  rd_cell *x = cell_next(t);
  x->kind = s ? RD_CELL_TEXT : RD_CELL_BLANK;
  x->text = xstrdup(s);
}

void rd_table_num(rd_table *t, double v) {
  rd_cell *x = cell_next(t);
  x->kind = isfinite(v) ? RD_CELL_NUM : RD_CELL_BLANK;
  x->v = v;
}

void rd_table_ci(rd_table *t, double v, double lo, double hi) {
  rd_cell *x = cell_next(t);
  int has_ci = isfinite(lo) && isfinite(hi);
  x->kind = isfinite(v) || has_ci ? RD_CELL_INTERVAL : RD_CELL_BLANK;
  x->v = v;
  x->lo = has_ci ? lo : NAN;
  x->hi = has_ci ? hi : NAN;
}

void rd_table_p(rd_table *t, double p, double resolution) {
  rd_cell *x = cell_next(t);
  x->kind = isfinite(p) ? RD_CELL_P : RD_CELL_BLANK;
  x->v = p;
  x->lo = resolution;
}

double rd_jnum(const cJSON *x) { return cJSON_IsNumber(x) ? x->valuedouble : NAN; }

const char *rd_jstr(const cJSON *x) { return cJSON_IsString(x) ? x->valuestring : ""; }

const cJSON *rd_jget(const cJSON *obj, const char *path) {
  char key[256];
  const cJSON *cur = obj;
  while (cur && *path) {
    const char *dot = strchr(path, '.');
    size_t n = dot ? (size_t)(dot - path) : strlen(path);
    if (n >= sizeof key) return NULL;
    memcpy(key, path, n);
    key[n] = '\0';
    cur = cJSON_GetObjectItemCaseSensitive(cur, key);
    path += n + (dot ? 1 : 0);
  }
  return cur;
}

void rd_table_jnum(rd_table *t, const cJSON *x) { rd_table_num(t, rd_jnum(x)); }

void rd_table_jtext(rd_table *t, const cJSON *x) {
  if (cJSON_IsString(x)) rd_table_text(t, x->valuestring);
  else if (cJSON_IsNumber(x)) {
    char buf[40];
    rd_format_exact(x->valuedouble, buf, sizeof buf);
    rd_table_text(t, buf);
  } else {
    rd_table_text(t, NULL);
  }
}

void rd_table_jci(rd_table *t, const cJSON *est, const cJSON *pair) {
  double lo = NAN, hi = NAN;
  if (cJSON_IsArray(pair) && cJSON_GetArraySize(pair) == 2) {
    lo = rd_jnum(cJSON_GetArrayItem(pair, 0));
    hi = rd_jnum(cJSON_GetArrayItem(pair, 1));
  }
  rd_table_ci(t, rd_jnum(est), lo, hi);
}

int64_t rd_table_rows(const rd_table *t) { return t->n_cols ? t->n_cells / t->n_cols : 0; }

void rd_format_exact(double v, char *buf, size_t n) {
  if (!isfinite(v)) {
    snprintf(buf, n, "%s", "");
    return;
  }
  if (v == floor(v) && fabs(v) < 9007199254740992.0) {
    snprintf(buf, n, "%.0f", v == 0 ? 0.0 : v);
    return;
  }
  snprintf(buf, n, "%.15g", v);
  if (strtod(buf, NULL) == v) return;
  snprintf(buf, n, "%.16g", v);
  if (strtod(buf, NULL) != v) snprintf(buf, n, "%.17g", v);
}

int rd_format_fixed(char *buf, size_t n, double v, int digits) {
  static const double p10[10] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9};
  if (digits < 0) digits = 0;
  double y = digits <= 9 && isfinite(v) ? fabs(v) * p10[digits] : INFINITY;
  /* y is within half an ulp (at most 2^-13 below 2^40) of the exact |v| 10^digits: unless it is near
   * a tie, both round to the same integer */
  double f = floor(y), frac = y - f;
  if (!(y < 1099511627776.0) || fabs(frac - 0.5) < 0.0009765625) return snprintf(buf, n, "%.*f", digits, v);
  uint64_t r = (uint64_t)f + (frac > 0.5), scale = (uint64_t)p10[digits];
  uint64_t ip = r / scale, fp = r % scale;
  char tmp[48];
  int k = (int)sizeof tmp;
  for (int d = 0; d < digits; d++, fp /= 10) tmp[--k] = (char)('0' + fp % 10);
  if (digits > 0) tmp[--k] = '.';
  do {
    tmp[--k] = (char)('0' + ip % 10);
    ip /= 10;
  } while (ip);
  if (signbit(v)) tmp[--k] = '-';  /* (printf writes -0.00 for a small negative, as here) */
  int len = (int)sizeof tmp - k;
  if (n > 0) {
    size_t m = (size_t)len < n ? (size_t)len : n - 1;
    memcpy(buf, tmp + k, m);
    buf[m] = '\0';
  }
  return len;
}

cJSON *rd_json_sq(const char *text) {
  char *s = xstrdup(text);
  for (char *p = s; *p; p++)
    if (*p == '\'') *p = '"';
  cJSON *j = cJSON_Parse(s);
  if (!j) fprintf(stderr, "rmdiag: internal error: a figure template is not JSON near: %.60s\n",
                  cJSON_GetErrorPtr() ? cJSON_GetErrorPtr() : "?");
  free(s);
  return j;
}

double *rd_view_column(const char *h5, const char *path, int64_t *n, rd_status *st) {
  hid_t f;
  *n = 0;
  if (rd_h5_open(h5, MPI_COMM_NULL, &f, st) != RD_OK) return NULL;
  rd_dsinfo info;
  double *x = NULL;
  if (rd_h5_info(f, h5, path, &info, st) == RD_OK) {
    if (info.ndims != 1 || (info.tclass != RD_TC_INT && info.tclass != RD_TC_FLOAT)) {
      rd_fail(st, RD_EINPUT, "%s: %s: expected a 1-D numeric dataset (is this the .h5 of the same report?)", h5, path);
    } else {
      x = malloc(sizeof(double) * (size_t)(info.dims[0] ? info.dims[0] : 1));
      if (!x) rd_fail(st, RD_EFAIL, "out of memory reading %s: %s", h5, path);
      else if (rd_h5_read_numeric(f, h5, &info, x, st) != RD_OK) {
        free(x);
        x = NULL;
      } else {
        *n = info.dims[0];
      }
    }
  }
  rd_h5_close(f);
  return x;
}

void rd_view_put(cJSON *o, const char *key, double v) {
  if (isfinite(v)) cJSON_AddNumberToObject(o, key, v);
  else cJSON_AddNullToObject(o, key);
}

static int64_t bin_index(double v, double lo, double hi, int bins) {
  if (!(hi > lo)) return 0;
  int64_t b = (int64_t)floor((v - lo) / (hi - lo) * bins);
  return b < 0 ? 0 : b >= bins ? bins - 1 : b;
}

int rd_view_range(const double *x, int64_t n, double *lo, double *hi) {
  int any = 0;
  *lo = *hi = 0;
  for (int64_t i = 0; i < n; i++) {
    if (!isfinite(x[i])) continue;
    if (!any || x[i] < *lo) *lo = x[i];
    if (!any || x[i] > *hi) *hi = x[i];
    any = 1;
  }
  return any;
}

cJSON *rd_view_hist(const double *x, int64_t n, int bins, double lo, double hi) {
  int64_t *c = xrealloc(NULL, sizeof(int64_t) * (size_t)bins);
  memset(c, 0, sizeof(int64_t) * (size_t)bins);
  for (int64_t i = 0; i < n; i++)
    if (isfinite(x[i]) && x[i] >= lo && x[i] <= hi) c[bin_index(x[i], lo, hi, bins)]++;
  cJSON *a = cJSON_CreateArray();
  double w = hi > lo ? (hi - lo) / bins : 1.0;
  for (int b = 0; b < bins; b++) {
    cJSON *o = cJSON_CreateObject();
    rd_view_put(o, "x0", lo + w * b);
    rd_view_put(o, "x1", b == bins - 1 && hi > lo ? hi : lo + w * (b + 1));
    cJSON_AddNumberToObject(o, "n", (double)c[b]);
    cJSON_AddItemToArray(a, o);
  }
  free(c);
  return a;
}

cJSON *rd_view_hist2(const double *x, const double *y, int64_t n, int bins, double lo, double hi) {
  int64_t *c = xrealloc(NULL, sizeof(int64_t) * (size_t)bins * (size_t)bins);
  memset(c, 0, sizeof(int64_t) * (size_t)bins * (size_t)bins);
  for (int64_t i = 0; i < n; i++)
    if (isfinite(x[i]) && isfinite(y[i]) && x[i] >= lo && x[i] <= hi && y[i] >= lo && y[i] <= hi)
      c[bin_index(y[i], lo, hi, bins) * bins + bin_index(x[i], lo, hi, bins)]++;
  cJSON *a = cJSON_CreateArray();
  double w = hi > lo ? (hi - lo) / bins : 1.0;
  for (int by = 0; by < bins; by++)
    for (int bx = 0; bx < bins; bx++) {
      int64_t k = c[by * bins + bx];
      if (!k) continue;
      cJSON *o = cJSON_CreateObject();
      rd_view_put(o, "x0", lo + w * bx);
      rd_view_put(o, "x1", lo + w * (bx + 1));
      rd_view_put(o, "y0", lo + w * by);
      rd_view_put(o, "y1", lo + w * (by + 1));
      cJSON_AddNumberToObject(o, "n", (double)k);
      cJSON_AddItemToArray(a, o);
    }
  free(c);
  return a;
}

rd_table *rd_view_json_table(rd_view *v, const char *name, const char *title, const char *legend, const cJSON *list,
                             const rd_jcol *cols) {
  rd_table *t = rd_view_table(v, name, title, legend);
  for (const rd_jcol *c = cols; c->key; c++) {
    char key[128];
    snprintf(key, sizeof key, "%s", c->key);
    for (char *p = key; *p; p++)
      if (*p == '.') *p = '_';
    rd_table_col(t, key, c->label, c->type, c->digits, c->blank);
    if (c->hidden) rd_table_hide_last(t);
    if (c->brief) rd_table_brief_last(t);
  }
  for (const cJSON *e = cJSON_IsArray(list) ? list->child : NULL; e; e = e->next)
    for (const rd_jcol *c = cols; c->key; c++) {
      const cJSON *x = rd_jget(e, c->key);
      if (c->type == RD_COL_TEXT) rd_table_jtext(t, x);
      else if (c->type == RD_COL_INTERVAL) rd_table_jci(t, x, c->ci ? rd_jget(e, c->ci) : NULL);
      else rd_table_jnum(t, x);
    }
  return t;
}
