/* Importer command lines: each importer describes its options in one table (name, the values it
 * takes, how often it may be given, whether it belongs to the group opened by another option, help
 * text). The same table parses argv (one parser for every importer: unknown options with the nearest
 * known one, missing values, repeats) and prints the importer's usage. */
#ifndef RMDIAG_IMPORT_ARGS_H
#define RMDIAG_IMPORT_ARGS_H

#include <stdio.h>

#include "rmdiag/common/status.h"

typedef enum rd_arg_times {
  RD_ARG_ONCE = 0,  /* at most once */
  RD_ARG_REPEAT,    /* any number of times */
  RD_ARG_ONCE_EACH  /* at most once after each opener (see RD_ARG_OPENS), e.g. once per --panel */
} rd_arg_times;

typedef enum rd_arg_scope {
  RD_ARG_GLOBAL = 0,  /* anywhere */
  RD_ARG_OPENS,       /* starts a group that the following RD_ARG_SCOPED options belong to (--panel FILE) */
  RD_ARG_SCOPED       /* belongs to the group opened before it: only after an opener */
} rd_arg_scope;

/* One row. A row whose name does not start with '-' documents an operand (INPUT.csv, FILE) for the
 * usage and is not matched against argv. */
typedef struct rd_arg {
  const char *name;    /* "--group" */
  const char *values;  /* the values that follow, named for the usage, space-separated ("G",
                          "TASK FEATURES LABELS"); NULL: a flag */
  rd_arg_times times;
  rd_arg_scope scope;
  const char *help;    /* lines separated by '\n' */
} rd_arg;

#define RD_ARG_END { .name = NULL }

typedef struct rd_args_spec {
  const char *command;       /* "rmdiag import cm-csv": message prefix and first word of the usage */
  const char *synopsis;      /* the rest of the usage line: "INPUT.csv [--group /cm] -o OUT.h5" */
  const char *intro;         /* text between the usage line and the table (NULL: none) */
  const rd_arg *args;        /* the table, ended by RD_ARG_END */
  const char *global_title;  /* heading of the rows outside groups (NULL: none) */
  const char *scoped_title;  /* heading of the RD_ARG_SCOPED rows */
  const char *notes;         /* text after the table (NULL: none) */
  const char *operand;       /* the operands' name in messages ("INPUT.csv"; NULL: none accepted) */
  int max_operands;          /* -1: any number */
} rd_args_spec;

/* One argument as given: a row of the table, or an operand (row -1). */
typedef struct rd_arg_use {
  int row;
  char **values;  /* the option's values (pointers into argv), or the operand itself */
} rd_arg_use;

/* Parses argv against the table into *uses (malloc'd, *n_uses entries, in command-line order).
 * Values are taken as they are, even when they start with '-'. Errors (RD_EINPUT, prefixed by the
 * command): an unknown option (naming the nearest known one when it is a likely slip), an option
 * without all its values, an option given more often than it may be, a grouped option before any
 * opener, more operands than max_operands. */
int rd_args_parse(const rd_args_spec *spec, int argc, char **argv, rd_arg_use **uses, int *n_uses, rd_status *st);

/* The usage printed from the table. */
void rd_args_usage(const rd_args_spec *spec, FILE *fp);

/* The row of the table named `name` (for importers dispatching on rows), or -1. */
int rd_args_row(const rd_args_spec *spec, const char *name);

#endif
