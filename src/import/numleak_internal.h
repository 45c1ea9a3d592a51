/* numleak: the seam between the importer's steps: options (numleak_args.c), panels (numleak_panel.c),
 * truth (numleak_truth.c), output (numleak_write.c) and the command (numleak.c). */
#ifndef RMDIAG_IMPORT_NUMLEAK_INTERNAL_H
#define RMDIAG_IMPORT_NUMLEAK_INTERNAL_H

#include <stdint.h>
#include <stdio.h>

#include <hdf5.h>

#include "rmdiag/common/idmap.h"
#include "rmdiag/common/status.h"

/* ---- options ------------------------------------------------------------------------------------------ */

enum { ROLE_CELLS, ROLE_RANK, ROLE_SIGNAL, ROLE_DEFENSE };
extern const char *const nl_role_names[];

enum {
  F_MODEL, F_SERIES, F_VARIANT, F_SEED, F_MONTH, F_REPLY, F_ERROR, F_KEY, F_TS, F_TRUTH, F_LOGPROBS, F_ENTROPY,
  F_MONTH_B, F_PICK, F_RECALL, F_DEFENSE, F_ATTACK, F_COUNT
};
extern const char *const nl_field_names[F_COUNT];

typedef struct map_rule {
  int field;
  char *from;
  const char *to;
} map_rule;

typedef struct where_rule {
  char *path;
  const char *values;  /* "a|b|c" */
} where_rule;

typedef struct panel_opts {
  const char *file;
  int role, fictional;
  const char *path[F_COUNT];  /* NULL: not mapped */
  const char *setv[F_COUNT];  /* constants */
  map_rule *maps;
  int n_maps;
  size_t maps_cap;
  where_rule *wheres;
  int n_wheres;
  size_t wheres_cap;
} panel_opts;

typedef struct truth_map {
  const char *series, *file, *column;
  int yoy;
  char *owned;  /* the option's copy */
} truth_map;

typedef struct nl_opts {
  const char *group;
  int nan_missing, keep_replies;
  panel_opts *panels;
  int n_panels;
  size_t panels_cap;
  truth_map *truths;
  int n_truths;
  size_t truths_cap;
  const char **no_truth;
  int n_no_truth;
  size_t no_truth_cap;
} nl_opts;

/* Parses argv into o (see numleak_args.c for the table). */
int nl_parse_args(int argc, char **argv, nl_opts *o, rd_status *st);
void nl_opts_free(nl_opts *o);

/* ---- the importer's state ----------------------------------------------------------------------------- */

/* Names numbered in first-appearance order. */
typedef struct names {
  rd_idmap map;
  int init;
} names;

int64_t nl_name_id(names *n, const char *s);  /* -1 when out of memory */
int64_t nl_name_find(const names *n, const char *s);
int64_t nl_name_count(const names *n);
const char *nl_name_str(const names *n, int64_t i);

/* The rows of one role, column by column. */
typedef struct rows {
  int64_t n;
  size_t cap;
  int32_t *model, *series, *variant, *seed, *month, *month_b, *defense, *attack, *source;
  int64_t *line;
  double *value, *entropy, *recall;
  uint8_t *status;
  int8_t *pick;
  char **reply;
} rows;

typedef struct inline_truth {
  int64_t key;  /* series << 24 | month */
  double value;
  int32_t source;
  int64_t line;
} inline_truth;

typedef struct nl_state {
  nl_opts o;
  names models, series, variants, defenses, attacks;
  uint8_t *fictional, *real_seen;  /* per series, grown with it */
  uint8_t *has_inline;             /* per series: some panel maps an inline truth field */
  size_t series_cap;
  rows cells, rank, signal, defense;
  inline_truth *inl;
  int64_t n_inl;
  size_t cap_inl;
  int has_entropy;
  FILE *log;
  rd_status *st;
} nl_state;

/* Room for series s in the per-series flags (zeroed); -1 when out of memory. */
int nl_series_slot(nl_state *S, int64_t s);

/* Reads panel `src` into S's rows (numleak_panel.c). */
int nl_import_panel(nl_state *S, int32_t src);

/* ---- truth ------------------------------------------------------------------------------------------------ */

/* The truth table written: one row per (series, month) with a value, series by series, months rising. */
typedef struct truth_table {
  int32_t *series, *month;
  double *value;
  int64_t n;
} truth_table;

/* Reads every mapped truth file and merges it with the panels' inline truth, which must agree with the
 * files and with each other (numleak_truth.c). */
int nl_build_truth(nl_state *S, truth_table *T);
void nl_truth_free(truth_table *T);

/* ---- output ------------------------------------------------------------------------------------------------ */

/* Every dataset of the leakage input layout under S->o.group (numleak_write.c). */
int nl_write_all(nl_state *S, hid_t f, const truth_table *T, rd_status *st);

#endif
