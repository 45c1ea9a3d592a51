/* Option tables: one table per report kind (and per importer) lists every option with its type,
 * default, range and a line of help. The same table parses and range-checks a job's options into
 * the kind's options struct, builds the effective options (defaults filled in: the report's
 * "options" and part of the spec hash), lists the keys a job may carry, and prints `rmdiag help`. */
#ifndef RMDIAG_COMMON_OPTIONS_H
#define RMDIAG_COMMON_OPTIONS_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "rmdiag/common/jsonutil.h"
#include "rmdiag/common/status.h"

typedef enum rd_opt_type {
  RD_OPT_INT,     /* int64_t field; an integer in [imin, imax] */
  RD_OPT_NUMBER,  /* double field; a finite number in [min, max] */
  RD_OPT_BOOL,    /* int field; true or false */
  RD_OPT_STRING,  /* const char * field (points into the job's JSON or at sdef); one of choices when given */
  RD_OPT_CUSTOM   /* parsed by `custom` (lists, objects, options with several shapes) */
} rd_opt_type;

/* How an option appears in the effective options. */
typedef enum rd_opt_effective {
  RD_EFF_VALUE = 0,   /* its value, or its default when absent */
  RD_EFF_OR_NULL,     /* its value, or null when absent (options without a default) */
  RD_EFF_IF_SET,      /* its value when present, else nothing */
  RD_EFF_NONE         /* never (custom options that add their own) */
} rd_opt_effective;

/* A custom option's parser: `value` is the option's JSON (NULL when absent: set the default);
 * `field` points at the option's field in the options struct (offset), `opts` at the struct;
 * appends the effective value to `effective` under the option's key when it has one. `w` names
 * where the option lives for messages ("FILE: jobs[2] (\"name\")"). */
typedef int (*rd_opt_custom_fn)(const cJSON *value, void *field, void *opts, cJSON *effective, const rd_where *w,
                                rd_status *st);

typedef struct rd_option {
  const char *key;
  rd_opt_type type;
  size_t offset;              /* the value's field in the options struct */
  int64_t idef, imin, imax;   /* RD_OPT_INT (and RD_OPT_BOOL's default in idef) */
  double def, min, max;       /* RD_OPT_NUMBER */
  const char *sdef;           /* RD_OPT_STRING default (NULL: none) */
  const char *const *choices; /* RD_OPT_STRING: the allowed values, NULL-terminated (NULL: any string) */
  rd_opt_effective effective;
  size_t set_offset;          /* when nonzero: an int field set to 1 when the option is present */
  rd_opt_custom_fn custom;    /* RD_OPT_CUSTOM */
  const char *type_help;      /* how `help` names the type ("list of strings"); NULL: from the type */
  const char *default_help;   /* how `help` shows the default; NULL: from the default */
  const char *help;           /* one line */
} rd_option;

/* The shared options, each defined once with one range. */
#define RD_BOOTSTRAP_MAX 10000000 /* bootstrap replicates */

/* Table rows. `S` is the options struct type. */
#define RD_OPTION_INT(KEY, S, FIELD, DEF, MIN, MAX, HELP)                                                    \
  { .key = (KEY), .type = RD_OPT_INT, .offset = offsetof(S, FIELD), .idef = (DEF), .imin = (MIN), .imax = (MAX), \
    .help = (HELP) }
#define RD_OPTION_NUMBER(KEY, S, FIELD, DEF, MIN, MAX, HELP)                                                       \
  { .key = (KEY), .type = RD_OPT_NUMBER, .offset = offsetof(S, FIELD), .def = (DEF), .min = (MIN), .max = (MAX), \
    .help = (HELP) }
#define RD_OPTION_BOOL(KEY, S, FIELD, DEF, HELP) \
  { .key = (KEY), .type = RD_OPT_BOOL, .offset = offsetof(S, FIELD), .idef = (DEF), .help = (HELP) }
#define RD_OPTION_STRING(KEY, S, FIELD, DEF, CHOICES, HELP)                                                      \
  { .key = (KEY), .type = RD_OPT_STRING, .offset = offsetof(S, FIELD), .sdef = (DEF), .choices = (CHOICES),   \
    .help = (HELP) }
#define RD_OPTION_CUSTOM(KEY, S, FIELD, FN, TYPE_HELP, DEFAULT_HELP, HELP)                                        \
  { .key = (KEY), .type = RD_OPT_CUSTOM, .offset = offsetof(S, FIELD), .custom = (FN), .effective = RD_EFF_NONE, \
    .type_help = (TYPE_HELP), .default_help = (DEFAULT_HELP), .help = (HELP) }
/* Bootstrap replicates for intervals and p-values (0: none), the same range in every kind. */
#define RD_OPTION_BOOTSTRAP(S, FIELD, DEF)                                                     \
  RD_OPTION_INT("bootstrap", S, FIELD, DEF, 0, RD_BOOTSTRAP_MAX,                               \
                "bootstrap replicates for the intervals and p-values (0: none)")
/* The end of a table. */
#define RD_OPTION_END { .key = NULL }

/* Parses every option of `table` from `spec` into the struct at `opts` (absent ones take their
 * default) and, when `effective` is not NULL, appends the effective options in table order.
 * Keys of `spec` outside the table are not checked here (see rd_options_keys). */
int rd_options_parse(const rd_option *table, const cJSON *spec, void *opts, cJSON *effective, const rd_where *w,
                     rd_status *st);

/* The keys of `table` appended to `keys` (NULL-terminated, at most `cap` entries with the NULL). */
int rd_options_keys(const rd_option *table, const char **keys, int n, int cap);

/* The key of `table` (or of `extra`, NULL-terminated; either may be NULL) nearest to `key` by
 * edit distance, when it is close enough to be a likely misspelling; else NULL. */
const char *rd_options_suggest(const rd_option *table, const char *const *extra, const char *key);

/* Prints the table: one block per option (key, type, default, range, help). */
void rd_options_print(const rd_option *table, FILE *fp);

#endif
