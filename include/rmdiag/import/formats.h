/* Importers: each reads a format users already have and writes one of the input layouts of docs/reference.md ('cm input layout', ...).
 * One row per format in src/coordinator/import.c. Importers run on rank 0 and write their output
 * atomically. */
#ifndef RMDIAG_IMPORT_H
#define RMDIAG_IMPORT_H

#include <stdio.h>

#include "rmdiag/common/status.h"

typedef struct rd_import_format {
  const char *name;     /* "cm-csv", ... */
  const char *summary;  /* one line for `rmdiag import --help` */
  const char *usage;    /* the format's options, for `rmdiag import FORMAT --help` */
  /* argv holds the format's own arguments (inputs and options, -o already removed). */
  int (*run)(int argc, char **argv, const char *out_path, FILE *log, rd_status *st);
} rd_import_format;

const rd_import_format *const *rd_import_formats(void);

/* The importers. */
int rd_import_cm_csv(int argc, char **argv, const char *out_path, FILE *log, rd_status *st);
int rd_import_rewardbench(int argc, char **argv, const char *out_path, FILE *log, rd_status *st);
int rd_import_rewardbench2(int argc, char **argv, const char *out_path, FILE *log, rd_status *st);
int rd_import_numleak(int argc, char **argv, const char *out_path, FILE *log, rd_status *st);
int rd_import_features(int argc, char **argv, const char *out_path, FILE *log, rd_status *st);

#endif
