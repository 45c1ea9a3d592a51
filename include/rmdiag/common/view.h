/* What a report shows its readers (docs/reference.md, 'Reading reports'): tables (the stdout summary of `run`,
 * `rmdiag table`, the HTML page), warnings, and figures (Vega-Lite specifications for `rmdiag report`). Each
 * kind fills an rd_view from its report; the renderers here print a table as aligned text, Markdown, CSV, TSV
 * or LaTeX, and the coordinator draws the HTML page from the same view. */
#ifndef RMDIAG_VIEW_H
#define RMDIAG_VIEW_H

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>

#include "rmdiag/common/status.h"

/* What a cell holds. A blank is an undefined number (null in the report): shown as "-" with its column's
 * reason under the table, empty in CSV. */
typedef enum rd_cell_kind { RD_CELL_BLANK, RD_CELL_TEXT, RD_CELL_NUM, RD_CELL_INTERVAL, RD_CELL_P } rd_cell_kind;

typedef struct rd_cell {
  rd_cell_kind kind;
  double v, lo, hi;  /* INTERVAL: estimate and interval (lo/hi NaN: none); P: the p-value and its resolution (lo) */
  char *text;        /* TEXT */
} rd_cell;

/* Column types. A number column shows `digits` decimals on screen and every digit in CSV; an interval column
 * shows "est [lo, hi]" and becomes three CSV columns KEY, KEY_lo, KEY_hi; a p column prints "< RES" for a p of 0
 * (no replicate crossed zero: the value is a bound, see docs/reference.md, 'Statistics'). */
typedef enum rd_col_type { RD_COL_TEXT, RD_COL_INT, RD_COL_NUM, RD_COL_INTERVAL, RD_COL_P } rd_col_type;

typedef struct rd_col {
  char *key;    /* CSV header, stable across versions */
  char *label;  /* shown on screen, in Markdown and LaTeX */
  rd_col_type type;
  int digits;
  int hidden;   /* only in CSV and TSV (every numeric field of an entity, for pandas) */
  int brief;    /* an interval shown as its estimate alone in the text form (the stdout summary stays narrow) */
  char *blank;  /* why a cell of this column can be blank */
} rd_col;

typedef struct rd_table {
  char *name;    /* for `rmdiag table --table NAME` */
  char *title;
  char *legend;  /* one line under the table: what the columns mean */
  int n_cols, cap_cols;
  rd_col *cols;
  int64_t n_cells, cap_cells;
  rd_cell *cells;  /* row-major, n_cols per row */
  int n_notes;
  char **notes;
  int in_summary;        /* printed by `run` */
  int64_t summary_rows;  /* at most this many rows on stdout (0: all) */
} rd_table;

typedef struct rd_figure {
  char *name, *title, *caption;
  cJSON *spec;  /* a Vega-Lite specification with its data inlined */
} rd_figure;

typedef struct rd_view {
  char *heading;  /* "KIND JOB: one line of sizes" */
  int n_tables;
  rd_table **tables;
  int n_figures;
  rd_figure *figures;
  int n_warnings;
  char **warnings;
  int summary_only;  /* set for the stdout summary: a view may skip the tables it does not show there */
} rd_view;

typedef enum rd_format { RD_FMT_TEXT, RD_FMT_MD, RD_FMT_CSV, RD_FMT_TSV, RD_FMT_LATEX } rd_format;

void rd_view_init(rd_view *v);
void rd_view_free(rd_view *v);
void rd_view_heading(rd_view *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void rd_view_warn(rd_view *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Copies the report's result.warnings into the view. */
void rd_view_warnings_from(rd_view *v, const cJSON *result);
/* A new table (owned by the view). */
rd_table *rd_view_table(rd_view *v, const char *name, const char *title, const char *legend);
/* A figure: takes `spec`. */
void rd_view_figure(rd_view *v, const char *name, const char *title, const char *caption, cJSON *spec);
/* Puts `values` (taken) into `spec` as its inline data ({"data": {"values": ...}}); returns `spec`. */
cJSON *rd_view_values(cJSON *spec, cJSON *values);
const rd_table *rd_view_find(const rd_view *v, const char *name);

/* Columns, in order; `blank` may be NULL when the column is never blank. */
void rd_table_col(rd_table *t, const char *key, const char *label, rd_col_type type, int digits, const char *blank);
/* The last column added is shown only in CSV / TSV. */
void rd_table_hide_last(rd_table *t);
/* The last column added (an interval) shows its estimate alone in the text form. */
void rd_table_brief_last(rd_table *t);
void rd_table_note(rd_table *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Cells, appended row by row. */
void rd_table_text(rd_table *t, const char *s);
void rd_table_num(rd_table *t, double v);  /* NaN: blank */
void rd_table_ci(rd_table *t, double v, double lo, double hi);
void rd_table_p(rd_table *t, double p, double resolution);
/* From report JSON: a number (null or absent: blank), a string, an interval from an estimate and a [lo, hi]. */
void rd_table_jnum(rd_table *t, const cJSON *x);
void rd_table_jtext(rd_table *t, const cJSON *x);
void rd_table_jci(rd_table *t, const cJSON *est, const cJSON *pair);
int64_t rd_table_rows(const rd_table *t);

/* A JSON number (NaN when null or absent), a string ("" when absent), an object member by path "a.b.c". */
double rd_jnum(const cJSON *x);
const char *rd_jstr(const cJSON *x);
const cJSON *rd_jget(const cJSON *obj, const char *path);

/* A cell as display text (digits of its column; LaTeX escapes and minus signs when `latex`). */
void rd_cell_format(const rd_col *c, const rd_cell *x, int latex, char *buf, size_t n);
/* A number with the fewest significant digits (15 to 17) that read back to the same double. */
void rd_format_exact(double v, char *buf, size_t n);
/* snprintf(buf, n, "%.*f", digits, v), the same bytes, without printf for the usual table numbers
 * (|v| * 10^digits below 2^40, digits <= 9): the scaled value is rounded directly, and printf is
 * asked only when it lies within 2^-10 of a rounding tie (where the product's own rounding could
 * decide). Returns the length written, as snprintf. */
int rd_format_fixed(char *buf, size_t n, double v, int digits);

/* One table in a format. `summary`: the stdout form (at most summary_rows rows, then a line on where the rest
 * is). `report` names the report file for that line. `digits` >= 0 replaces the columns' decimals in the display
 * formats (text, Markdown, LaTeX). */
void rd_table_print(FILE *fp, const rd_table *t, rd_format fmt, int summary, const char *report, int digits);
/* A table from a JSON list of objects, one row per object, one column per entry of `cols` (ended by a NULL
 * key): `key` is a dotted path inside each object ("before.within"; its CSV name has "_" for "."), `ci` the path
 * of the [lo, hi] pair of an interval column. */
typedef struct rd_jcol {
  const char *key, *label;
  rd_col_type type;
  int digits;
  const char *ci;
  const char *blank;
  int hidden, brief;
} rd_jcol;
rd_table *rd_view_json_table(rd_view *v, const char *name, const char *title, const char *legend, const cJSON *list,
                             const rd_jcol *cols);

/* A cell as the display formats show it (`text_form`: brief intervals as their estimate). */
void rd_table_display(const rd_table *t, int64_t row, int col, int latex, int text_form, char *buf, size_t n);
/* What `run` prints after a job: the heading and the summary tables as text. */
void rd_view_print_summary(FILE *fp, const rd_view *v, const char *report);
/* Each warning as "rmdiag: warning: JOB: TEXT" (stderr). */
void rd_view_print_warnings(FILE *fp, const rd_view *v, const char *job);

/* Figure data. A whole 1-D numeric dataset of an output file as doubles (malloc'd; *n its length), or NULL with
 * an RD_EINPUT error naming the file and the dataset. */
double *rd_view_column(const char *h5, const char *path, int64_t *n, rd_status *st);
/* Histogram of the finite x over [lo, hi] in `bins` equal bins (the last one closed): [{"x0", "x1", "n"}]. */
cJSON *rd_view_hist(const double *x, int64_t n, int bins, double lo, double hi);
/* The finite values' range; 0 when there is none. */
int rd_view_range(const double *x, int64_t n, double *lo, double *hi);
/* 2-D histogram of the pairs (x, y) with both finite over [lo, hi]^2 in bins x bins cells, only cells with
 * points: [{"x0", "x1", "y0", "y1", "n"}]. */
cJSON *rd_view_hist2(const double *x, const double *y, int64_t n, int bins, double lo, double hi);
/* Adds a number or null to an object (figure data). */
void rd_view_put(cJSON *o, const char *key, double v);

/* A kind's view of a report (the signature of rd_kind.view). */
typedef int (*rd_view_fn)(const cJSON *report, const char *h5, rd_view *v, rd_status *st);
/* Rank 0 of a kind's run, once the result is complete: adds `warnings` (a list of strings, possibly empty; taken)
 * to the result as "warnings", prints the view's summary on `out` (stdout; "... more rows" lines name
 * OUTPUT_DIR/JOB.json) and the warnings on `err` (stderr). The envelope is not written yet: the view sees
 * {"rmdiag": {"job", "kind", "options"}, "result"}. Kinds call it through rd_kind_summary (kind.h). */
int rd_view_summary(rd_view_fn view, const char *job, const char *kind, const cJSON *options, const char *output_dir,
                    cJSON *warnings, cJSON *result, FILE *out, FILE *err, rd_status *st);

/* A JSON object parsed from text written with single quotes for double quotes (figure templates read
 * better that way in C); NULL when the text is not JSON (a bug: templates are constants). */
cJSON *rd_json_sq(const char *text);

#endif
