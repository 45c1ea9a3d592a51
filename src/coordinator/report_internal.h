/* `rmdiag table` and `rmdiag report` (docs/reference.md, 'Reading reports'): reading finished reports on one
 * process (rank 0) and rendering the views their kinds build: tables in text formats, or one self-contained
 * HTML page with the figures drawn by the vendored Vega-Lite. */
#ifndef RMDIAG_COORDINATOR_REPORT_INTERNAL_H
#define RMDIAG_COORDINATOR_REPORT_INTERNAL_H

#include <cjson/cJSON.h>
#include <stdio.h>

#include "rmdiag/common/comm.h"
#include "rmdiag/common/status.h"
#include "rmdiag/common/view.h"
#include "rmdiag/kind.h"

/* One report read back: its file, JSON, kind, the .h5 beside it and the kind's view of it. */
typedef struct rd_loaded {
  char *path;
  char *h5;  /* NAME.h5 beside NAME.json */
  cJSON *report;
  const rd_kind *kind;
  rd_view view;
} rd_loaded;

/* Reads `path` (a report .json); with `figures`, checks that its .h5 exists and belongs to it (same
 * spec_sha256) and builds the figures too. Errors are RD_EINPUT naming the file. */
int rd_report_load(const char *path, int figures, rd_loaded *r, rd_status *st);
void rd_report_free(rd_loaded *r);

/* The page for reports r[0..n): `cross` holds the warnings across reports. Same reports, same bytes. */
void rd_html_write(FILE *fp, const rd_loaded *r, int n, const rd_view *cross);

int rd_cmd_table(rd_ctx *ctx, int argc, char **argv, rd_status *st);
int rd_cmd_report(rd_ctx *ctx, int argc, char **argv, rd_status *st);
void rd_table_usage(FILE *fp);
void rd_report_usage(FILE *fp);

#endif
