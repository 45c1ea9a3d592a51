/* `rmdiag table REPORT.json [--format md|csv|tsv|latex|text] [--table NAME] [--digits N]`: every table of a
 * finished report, or one, in a format for papers (Markdown, LaTeX with booktabs rules) or for programs (CSV and
 * TSV with every digit, one row per entity). Rank 0 only; the other ranks wait for its status. */
#include <stdlib.h>
#include <string.h>

#include "report_internal.h"

void rd_table_usage(FILE *fp) {
  fprintf(fp, "usage: rmdiag table REPORT.json [--format md|csv|tsv|latex|text] [--table NAME] [--digits N]\n"
              "Prints the tables of a finished report (docs/reference.md, 'Reading reports').\n\n"
              "options:\n"
              "    --format F       md (default), csv, tsv, latex or text; csv and tsv print every digit and every\n"
              "                     numeric field (intervals as NAME, NAME_lo, NAME_hi), one row per entity\n"
              "    --table NAME     only this table (rmdiag table REPORT.json --list names them)\n"
              "    --digits N       decimals of the numbers in md, latex and text (default: each column's own)\n"
              "    --list           the report's tables: name, rows, title\n");
}

static int parse_format(const char *s, rd_format *f) {
  static const char *const names[] = {"text", "md", "csv", "tsv", "latex"};
  for (int i = 0; i < 5; i++)
    if (strcmp(s, names[i]) == 0) {
      *f = (rd_format)i;
      return 1;
    }
  return 0;
}

typedef struct table_args {
  const char *report, *table;
  rd_format fmt;
  int digits, list;
} table_args;

static int table_parse(int argc, char **argv, table_args *a, rd_status *st) {
  a->fmt = RD_FMT_MD;
  a->digits = -1;
  for (int i = 2; i < argc; i++) {
    const char *s = argv[i], *eq = strchr(s, '=');
    size_t n = eq ? (size_t)(eq - s) : strlen(s);
    const char *val = NULL;
    int takes = strncmp(s, "--format", n) == 0 || strncmp(s, "--table", n) == 0 || strncmp(s, "--digits", n) == 0;
    if (strncmp(s, "--", 2) == 0 && takes && n > 2) {
      if (eq) val = eq + 1;
      else if (i + 1 < argc) val = argv[++i];
      else return rd_fail(st, RD_EINPUT, "rmdiag table: option %.*s needs a value", (int)n, s);
    }
    if (strncmp(s, "--format", n) == 0 && n == 8) {
      if (!parse_format(val, &a->fmt))
        return rd_fail(st, RD_EINPUT, "rmdiag table: --format must be md, csv, tsv, latex or text (got \"%s\")", val);
    } else if (strncmp(s, "--table", n) == 0 && n == 7) {
      a->table = val;
    } else if (strncmp(s, "--digits", n) == 0 && n == 8) {
      char *end = NULL;
      long d = strtol(val, &end, 10);
      if (!*val || *end || d < 0 || d > 17)
        return rd_fail(st, RD_EINPUT, "rmdiag table: --digits must be an integer from 0 to 17 (got \"%s\")", val);
      a->digits = (int)d;
    } else if (strcmp(s, "--list") == 0) {
      a->list = 1;
    } else if (strncmp(s, "-", 1) == 0 && strlen(s) > 1) {
      return rd_fail(st, RD_EINPUT, "rmdiag table: unknown option %s (see rmdiag table --help)", s);
    } else if (!a->report) {
      a->report = s;
    } else {
      return rd_fail(st, RD_EINPUT, "rmdiag table: unexpected argument \"%s\" (one report expected)", s);
    }
  }
  if (!a->report) return rd_fail(st, RD_EINPUT, "rmdiag table: missing REPORT.json (see rmdiag table --help)");
  return RD_OK;
}

static int table_print(FILE *out, const table_args *a, const rd_loaded *r, rd_status *st) {
  const rd_view *v = &r->view;
  if (a->list) {
    for (int i = 0; i < v->n_tables; i++)
      fprintf(out, "%-18s %6lld rows  %s\n", v->tables[i]->name, (long long)rd_table_rows(v->tables[i]),
              v->tables[i]->title);
    return RD_OK;
  }
  if (a->table) {
    const rd_table *t = rd_view_find(v, a->table);
    if (!t) {
      char names[512];
      size_t k = 0;
      names[0] = '\0';
      for (int i = 0; i < v->n_tables && k < sizeof names - 64; i++)
        k += (size_t)snprintf(names + k, sizeof names - k, "%s%s", i ? ", " : "", v->tables[i]->name);
      return rd_fail(st, RD_EINPUT, "rmdiag table: %s has no table \"%s\" (its tables: %s)", r->path, a->table, names);
    }
    rd_table_print(out, t, a->fmt, 0, r->path, a->digits);
    return RD_OK;
  }
  int machine = a->fmt == RD_FMT_CSV || a->fmt == RD_FMT_TSV;
  if (a->fmt == RD_FMT_MD && v->heading) fprintf(out, "## %s\n\n", v->heading);
  if (a->fmt == RD_FMT_TEXT && v->heading) fprintf(out, "%s\n", v->heading);
  if (a->fmt == RD_FMT_LATEX && v->heading) fprintf(out, "%% %s\n", v->heading);
  for (int i = 0; i < v->n_tables; i++) {
    if (i || a->fmt == RD_FMT_LATEX) fputs("\n", out);
    /* several tables in one CSV stream: each under a comment line naming it (--table gives one plain table) */
    if (machine) fprintf(out, "# table: %s\n", v->tables[i]->name);
    rd_table_print(out, v->tables[i], a->fmt, 0, r->path, a->digits);
  }
  if (v->n_warnings && !machine) {
    fprintf(out, "\n%s\n", a->fmt == RD_FMT_MD ? "**Warnings**\n" : a->fmt == RD_FMT_LATEX ? "% Warnings:" : "Warnings:");
    for (int i = 0; i < v->n_warnings; i++)
      fprintf(out, "%s%s\n", a->fmt == RD_FMT_MD ? "- " : a->fmt == RD_FMT_LATEX ? "% - " : "  - ", v->warnings[i]);
  }
  return RD_OK;
}

int rd_cmd_table(rd_ctx *ctx, int argc, char **argv, rd_status *st) {
  for (int i = 2; i < argc; i++)
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      if (ctx->out) rd_table_usage(ctx->out);
      return RD_OK;
    }
  table_args a;
  memset(&a, 0, sizeof a);
  if (ctx->rank == 0 && table_parse(argc, argv, &a, st) == RD_OK) {
    rd_loaded r;
    if (rd_report_load(a.report, 0, &r, st) == RD_OK) {
      if (ctx->out) table_print(ctx->out, &a, &r, st);
      rd_report_free(&r);
    }
  }
  return rd_share_status(ctx, st, 0);
}
