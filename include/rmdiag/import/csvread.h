/* The CSV reader the importers share (cm-csv's long CSV, label files, truth files), on libcsv: whole
 * records handed over one at a time with the physical line they start on, so that every message can
 * name that line. A UTF-8 byte order mark at the start of the file is ignored. */
#ifndef RMDIAG_IMPORT_CSVREAD_H
#define RMDIAG_IMPORT_CSVREAD_H

#include <stddef.h>
#include <stdint.h>

#include "rmdiag/common/status.h"

typedef struct rd_csv_record {
  char **field;   /* each NUL-terminated after len[k] bytes (a NUL inside the field stays: compare len) */
  size_t *len;
  int n;          /* fields */
  int64_t index;  /* records before this one: 0 for the first (the header) */
  int64_t line;   /* the physical line (from 1) where the record's first field ends: where it starts,
                     unless that field holds a quoted line break */
} rd_csv_record;

/* Receives each record; returns RD_OK to go on, anything else stops the reading and is returned. */
typedef int (*rd_csv_fn)(const rd_csv_record *rec, void *ctx, rd_status *st);

enum {
  /* RFC 4180 strictly: a quote inside an unquoted field, or an unterminated quoted field at the end
   * of the file, is malformed (libcsv's CSV_STRICT and CSV_STRICT_FINI). Without it libcsv's lenient
   * reading applies. */
  RD_CSV_STRICT = 1
};

/* Reads the file at `path`, streaming it line by line. Malformed CSV is RD_EINPUT naming the line. */
int rd_csv_read(const char *path, int flags, rd_csv_fn fn, void *ctx, rd_status *st);

/* The same on text already in memory; `file` names it in messages. */
int rd_csv_parse(const char *file, const char *text, size_t len, int flags, rd_csv_fn fn, void *ctx, rd_status *st);

#endif
