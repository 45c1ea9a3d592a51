/* Renders the tables of a report view: aligned text (the stdout summary), Markdown, CSV and TSV (every digit,
 * one row per entity, every numeric field) and LaTeX (booktabs rules). Display formats show each column's
 * decimals; the machine formats print the report's numbers exactly. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rmdiag/common/view.h"

/* Appends s to buf (size n), LaTeX-escaped when `latex`. */
static void put_text(char *buf, size_t n, const char *s, int latex) {
  size_t k = strlen(buf);
  for (; *s && k + 16 < n; s++) {
    const char *rep = NULL;
    char one[2] = {*s, 0};
    if (latex) switch (*s) {
        case '&': rep = "\\&"; break;
        case '%': rep = "\\%"; break;
        case '$': rep = "\\$"; break;
        case '#': rep = "\\#"; break;
        case '_': rep = "\\_"; break;
        case '{': rep = "\\{"; break;
        case '}': rep = "\\}"; break;
        case '~': rep = "\\textasciitilde{}"; break;
        case '^': rep = "\\textasciicircum{}"; break;
        case '\\': rep = "\\textbackslash{}"; break;
        default: break;
      }
    const char *w = rep ? rep : one;
    size_t m = strlen(w);
    memcpy(buf + k, w, m);
    k += m;
  }
  buf[k] = '\0';
}

/* A number with `digits` decimals; LaTeX writes the minus sign in math mode. */
static void put_num(char *buf, size_t n, double v, int digits, int latex) {
  char tmp[64];
  if (v == 0) v = 0;  /* no "-0" */
  rd_format_fixed(tmp, sizeof tmp, v, digits < 0 ? 0 : digits);
  if (strcmp(tmp, "-0") == 0 || (tmp[0] == '-' && strspn(tmp + 1, "0.") == strlen(tmp + 1))) memmove(tmp, tmp + 1, strlen(tmp));
  size_t k = strlen(buf);
  snprintf(buf + k, n - k, "%s%s", latex && tmp[0] == '-' ? "$-$" : "", latex && tmp[0] == '-' ? tmp + 1 : tmp);
}

void rd_cell_format(const rd_col *c, const rd_cell *x, int latex, char *buf, size_t n) {
  buf[0] = '\0';
  int d = c->type == RD_COL_INT ? 0 : c->digits;
  switch (x->kind) {
    case RD_CELL_BLANK: snprintf(buf, n, "%s", latex ? "--" : "-"); break;
    case RD_CELL_TEXT: put_text(buf, n, x->text, latex); break;
    case RD_CELL_NUM: put_num(buf, n, x->v, d, latex); break;
    case RD_CELL_INTERVAL:
      if (isfinite(x->v)) put_num(buf, n, x->v, d, latex);
      else snprintf(buf, n, "%s", latex ? "--" : "-");
      if (isfinite(x->lo)) {
        size_t k = strlen(buf);
        snprintf(buf + k, n - k, " [");
        put_num(buf, n, x->lo, d, latex);
        k = strlen(buf);
        snprintf(buf + k, n - k, ", ");
        put_num(buf, n, x->hi, d, latex);
        k = strlen(buf);
        snprintf(buf + k, n - k, "]");
      }
      break;
    case RD_CELL_P:
      /* p = 0: no replicate crossed zero; the value is below the resolution, printed as a bound */
      if (x->v == 0 && x->lo > 0) snprintf(buf, n, "%s %.3g", latex ? "$<$" : "<", x->lo);
      else snprintf(buf, n, "%.3g", x->v);
      break;
  }
}

/* Digits other than the columns' own (`rmdiag table --digits`); -1: the columns' own. */
static int g_digits = -1;

/* A cell as the display formats show it: the digit override, and in the text form a brief interval as its
 * estimate alone. */
static void display_cell(const rd_col *c, const rd_cell *x, int latex, int text_form, char *buf, size_t n) {
  rd_col col = *c;
  rd_cell cell = *x;
  if (g_digits >= 0 && col.type != RD_COL_INT && col.type != RD_COL_TEXT) col.digits = g_digits;
  if (text_form && col.brief && cell.kind == RD_CELL_INTERVAL) {
    cell.lo = cell.hi = NAN;
    if (!isfinite(cell.v)) cell.kind = RD_CELL_BLANK;
  }
  rd_cell_format(&col, &cell, latex, buf, n);
}

/* Display width in code points (UTF-8 continuation bytes do not count). */
static int text_width(const char *s) {
  int w = 0;
  for (; *s; s++) w += (*s & 0xC0) != 0x80;
  return w;
}

static int numeric_col(const rd_col *c) { return c->type != RD_COL_TEXT; }

static int64_t shown_rows(const rd_table *t, int summary) {
  int64_t rows = rd_table_rows(t);
  return summary && t->summary_rows > 0 && rows > t->summary_rows ? t->summary_rows : rows;
}

/* Under a table: the legend, why cells are blank (columns that have a blank), the notes. */
static void print_footer(FILE *fp, const rd_table *t, const char *prefix, const char *indent) {
  if (t->legend && *t->legend) fprintf(fp, "%s%s%s\n", prefix, indent, t->legend);
  int64_t rows = rd_table_rows(t);
  for (int c = 0; c < t->n_cols; c++) {
    if (t->cols[c].hidden || !t->cols[c].blank) continue;
    int any = 0;
    for (int64_t r = 0; r < rows && !any; r++) any = t->cells[r * t->n_cols + c].kind == RD_CELL_BLANK;
    if (any) fprintf(fp, "%s%s%s -: %s\n", prefix, indent, t->cols[c].label, t->cols[c].blank);
  }
  for (int i = 0; i < t->n_notes; i++) fprintf(fp, "%s%s%s\n", prefix, indent, t->notes[i]);
}

static void print_text(FILE *fp, const rd_table *t, int summary, const char *report) {
  int nc = t->n_cols;
  int64_t rows = shown_rows(t, summary);
  int *w = calloc((size_t)nc, sizeof(int));
  char buf[512];
  if (!w) return;
  for (int c = 0; c < nc; c++) w[c] = text_width(t->cols[c].label);
  for (int64_t r = 0; r < rows; r++)
    for (int c = 0; c < nc; c++) {
      display_cell(&t->cols[c], &t->cells[r * nc + c], 0, 1, buf, sizeof buf);
      int k = text_width(buf);
      if (k > w[c]) w[c] = k;
    }
  fprintf(fp, "%s\n", t->title);
  for (int r = -1; r < rows; r++) {
    fputs(" ", fp);
    for (int c = 0; c < nc; c++) {
      if (t->cols[c].hidden) continue;
      const char *s = t->cols[c].label;
      if (r >= 0) {
        display_cell(&t->cols[c], &t->cells[(int64_t)r * nc + c], 0, 1, buf, sizeof buf);
        s = buf;
      }
      int pad = w[c] - text_width(s);
      int last = 1;
      for (int k = c + 1; k < nc; k++) last &= t->cols[k].hidden;
      if (numeric_col(&t->cols[c])) fprintf(fp, " %*s%s", pad, "", s);
      else fprintf(fp, " %s%*s", s, last ? 0 : pad, "");
      if (!last) fputs(" ", fp);
    }
    fputs("\n", fp);
  }
  if (rows < rd_table_rows(t))
    fprintf(fp, "  ... %lld more rows: rmdiag table %s --table %s\n", (long long)(rd_table_rows(t) - rows),
            report ? report : "REPORT.json", t->name);
  print_footer(fp, t, "", "  ");
  free(w);
}

static void print_md(FILE *fp, const rd_table *t) {
  char buf[512];
  int nc = t->n_cols;
  fprintf(fp, "**%s** (`%s`)\n\n|", t->title, t->name);
  for (int c = 0; c < nc; c++)
    if (!t->cols[c].hidden) fprintf(fp, " %s |", t->cols[c].label);
  fputs("\n|", fp);
  for (int c = 0; c < nc; c++)
    if (!t->cols[c].hidden) fputs(numeric_col(&t->cols[c]) ? "---:|" : "---|", fp);
  fputs("\n", fp);
  for (int64_t r = 0; r < rd_table_rows(t); r++) {
    fputs("|", fp);
    for (int c = 0; c < nc; c++) {
      if (t->cols[c].hidden) continue;
      display_cell(&t->cols[c], &t->cells[r * nc + c], 0, 0, buf, sizeof buf);
      fputs(" ", fp);
      for (const char *p = buf; *p; p++) {
        if (*p == '|') fputc('\\', fp);
        fputc(*p == '\n' ? ' ' : *p, fp);
      }
      fputs(" |", fp);
    }
    fputs("\n", fp);
  }
  fputs("\n", fp);
  print_footer(fp, t, "", "");
}

/* One machine-format field: exact numbers; CSV quoting (RFC 4180) or TSV with tabs and newlines as spaces. */
static void put_field(FILE *fp, const char *s, int tsv) {
  if (tsv) {
    for (; *s; s++) fputc(*s == '\t' || *s == '\n' || *s == '\r' ? ' ' : *s, fp);
    return;
  }
  if (!strpbrk(s, ",\"\n\r")) {
    fputs(s, fp);
    return;
  }
  fputc('"', fp);
  for (; *s; s++) {
    if (*s == '"') fputc('"', fp);
    fputc(*s, fp);
  }
  fputc('"', fp);
}

static void print_sv(FILE *fp, const rd_table *t, int tsv) {
  const char *sep = tsv ? "\t" : ",";
  char buf[64], key[300];
  int nc = t->n_cols, first = 1;
  for (int c = 0; c < nc; c++) {
    const rd_col *col = &t->cols[c];
    int parts = col->type == RD_COL_INTERVAL || col->type == RD_COL_P ? (col->type == RD_COL_P ? 2 : 3) : 1;
    static const char *const sfx_ci[3] = {"", "_lo", "_hi"}, *const sfx_p[2] = {"", "_resolution"};
    for (int k = 0; k < parts; k++) {
      snprintf(key, sizeof key, "%s%s", col->key, col->type == RD_COL_P ? sfx_p[k] : sfx_ci[k]);
      if (!first) fputs(sep, fp);
      put_field(fp, key, tsv);
      first = 0;
    }
  }
  fputs("\n", fp);
  for (int64_t r = 0; r < rd_table_rows(t); r++) {
    first = 1;
    for (int c = 0; c < nc; c++) {
      const rd_col *col = &t->cols[c];
      const rd_cell *x = &t->cells[r * nc + c];
      double vals[3] = {x->v, x->lo, x->hi};
      int parts = col->type == RD_COL_INTERVAL ? 3 : col->type == RD_COL_P ? 2 : 1;
      for (int k = 0; k < parts; k++) {
        if (!first) fputs(sep, fp);
        first = 0;
        if (x->kind == RD_CELL_TEXT) {
          put_field(fp, x->text, tsv);
        } else if (x->kind != RD_CELL_BLANK || (k > 0 && col->type == RD_COL_P)) {
          rd_format_exact(vals[k], buf, sizeof buf);
          fputs(buf, fp);
        }
      }
    }
    fputs("\n", fp);
  }
}

static void print_latex(FILE *fp, const rd_table *t) {
  char buf[512];
  int nc = t->n_cols;
  buf[0] = '\0';
  put_text(buf, sizeof buf, t->title, 0);
  fprintf(fp, "%% %s (rmdiag table --table %s)\n", buf, t->name);
  print_footer(fp, t, "% ", "");
  fputs("\\begin{tabular}{", fp);
  for (int c = 0; c < nc; c++)
    if (!t->cols[c].hidden) fputc(numeric_col(&t->cols[c]) ? 'r' : 'l', fp);
  fputs("}\n\\toprule\n", fp);
  int first = 1;
  for (int c = 0; c < nc; c++) {
    if (t->cols[c].hidden) continue;
    buf[0] = '\0';
    put_text(buf, sizeof buf, t->cols[c].label, 1);
    fprintf(fp, "%s%s", first ? "" : " & ", buf);
    first = 0;
  }
  fputs(" \\\\\n\\midrule\n", fp);
  for (int64_t r = 0; r < rd_table_rows(t); r++) {
    first = 1;
    for (int c = 0; c < nc; c++) {
      if (t->cols[c].hidden) continue;
      display_cell(&t->cols[c], &t->cells[r * nc + c], 1, 0, buf, sizeof buf);
      fprintf(fp, "%s%s", first ? "" : " & ", buf);
      first = 0;
    }
    fputs(" \\\\\n", fp);
  }
  fputs("\\bottomrule\n\\end{tabular}\n", fp);
}

void rd_table_print(FILE *fp, const rd_table *t, rd_format fmt, int summary, const char *report, int digits) {
  g_digits = digits;
  switch (fmt) {
    case RD_FMT_TEXT: print_text(fp, t, summary, report); break;
    case RD_FMT_MD: print_md(fp, t); break;
    case RD_FMT_CSV: print_sv(fp, t, 0); break;
    case RD_FMT_TSV: print_sv(fp, t, 1); break;
    case RD_FMT_LATEX: print_latex(fp, t); break;
  }
  g_digits = -1;
}

void rd_view_print_summary(FILE *fp, const rd_view *v, const char *report) {
  if (!fp) return;
  if (v->heading) fprintf(fp, "%s\n", v->heading);
  for (int i = 0; i < v->n_tables; i++) {
    if (!v->tables[i]->in_summary) continue;
    rd_table_print(fp, v->tables[i], RD_FMT_TEXT, 1, report, -1);
  }
  if (v->n_warnings)
    fprintf(fp, "%d warning%s (on stderr and in the report's \"warnings\")\n", v->n_warnings,
            v->n_warnings == 1 ? "" : "s");
}

void rd_view_print_warnings(FILE *fp, const rd_view *v, const char *job) {
  if (!fp) return;
  for (int i = 0; i < v->n_warnings; i++) fprintf(fp, "rmdiag: warning: %s: %s\n", job, v->warnings[i]);
}

void rd_table_display(const rd_table *t, int64_t row, int col, int latex, int text_form, char *buf, size_t n) {
  display_cell(&t->cols[col], &t->cells[row * t->n_cols + col], latex, text_form, buf, n);
}
