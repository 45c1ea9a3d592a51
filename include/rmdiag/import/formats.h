/* Importers: each reads a format users already have and writes one of rmdiag's input layouts (see
 * docs/reference.md, 'Import formats'). The list of formats is in src/import/registry.c; each importer
 * owns its option table and usage (args.h). Importers run on rank 0 and write their output atomically. */
#ifndef RMDIAG_IMPORT_H
#define RMDIAG_IMPORT_H

#include <stdio.h>

#include "rmdiag/common/status.h"
#include "rmdiag/import/args.h"

typedef struct rd_import_format {
  const char *name;           /* "cm-csv", ... */
  const char *summary;        /* one line for `rmdiag import --help` */
  /* argv holds the format's own arguments (inputs and options, -o already removed). */
  int (*run)(int argc, char **argv, const char *out_path, FILE *log, rd_status *st);
  const rd_args_spec *args;   /* its options: parsing and `rmdiag import FORMAT --help` */
} rd_import_format;

const rd_import_format *const *rd_import_formats(void);

/* The format's usage, printed from its option table. */
void rd_import_usage(const rd_import_format *f, FILE *fp);
/* The same as a malloc'd string (NULL when out of memory), for messages. */
char *rd_import_usage_text(const rd_import_format *f);

/* The importers and their option tables. */
int rd_import_cm_csv(int argc, char **argv, const char *out_path, FILE *log, rd_status *st);
int rd_import_rewardbench(int argc, char **argv, const char *out_path, FILE *log, rd_status *st);
int rd_import_rewardbench2(int argc, char **argv, const char *out_path, FILE *log, rd_status *st);
int rd_import_numleak(int argc, char **argv, const char *out_path, FILE *log, rd_status *st);
int rd_import_features(int argc, char **argv, const char *out_path, FILE *log, rd_status *st);
extern const rd_args_spec rd_import_cm_csv_args, rd_import_rewardbench_args, rd_import_rewardbench2_args,
    rd_import_numleak_args, rd_import_features_args;

#endif
