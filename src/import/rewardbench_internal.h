/* rewardbench / rewardbench2: the state shared by reading (rewardbench.c) and by merging and writing
 * (rewardbench_write.c). */
#ifndef RMDIAG_IMPORT_REWARDBENCH_INTERNAL_H
#define RMDIAG_IMPORT_REWARDBENCH_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "rmdiag/common/idmap.h"
#include "rmdiag/common/status.h"

typedef struct rb_item {
  int64_t key;      /* (subset, id) in rb_state.keys */
  int32_t subset;   /* in rb_state.subsets */
  int32_t n, n_correct;
  int64_t off;      /* first score in the model's scores */
  double given;     /* credit given directly (v1 rows with only results), else NaN */
  int32_t file;
  int64_t pos;      /* line (>= 1) in row files, -(index + 1) in parallel arrays and lists */
} rb_item;

typedef struct rb_model {
  char *name;
  int32_t first_file;
  rb_item *items;
  int64_t n_items;
  size_t cap;
  double *scores;
  int64_t n_scores;
  size_t scap;
  /* per-subset accuracy files */
  int32_t *acc_subset;
  double *acc;
  int32_t *acc_file;
  int64_t n_acc;
  size_t acap;
  int64_t *by_key;  /* key -> item index (merge) */
} rb_model;

enum { RB_MODE_NONE, RB_MODE_ITEMS, RB_MODE_ACCURACY };

typedef struct rb_state {
  int v2;
  const char *cmd;   /* "rewardbench" or "rewardbench2" */
  char **files;
  int n_files;
  rd_status *st;
  rd_idmap subsets, keys, model_ids;
  rb_model *models;
  int n_models;
  size_t models_cap;
  int mode;          /* RB_MODE_*: what the files hold, set by the first file */
  int mode_file;
  int any_given;
  uint8_t *is_list;  /* per file: rows given as one JSON list (positions are list elements) */
  int drop_incomplete;        /* --drop-incomplete: keep only the items every model has */
  int64_t results_ignored;    /* items whose "results" was not used (scores decide) */
  /* the file being read: whether its keys said which version it is, and the subset names it uses of
   * each version (index 1, 2), with the first of the other version's (for the message) */
  int file_keyed;
  int64_t file_names[3];
  int64_t other_sub, other_pos;
} rb_state;

/* "FILE: line 12", "FILE: element 3 of the list" or "FILE: item 17 of the parallel arrays". */
const char *rb_where(const rb_state *S, int32_t file, int64_t pos, char *buf, size_t n);

/* Aligns the models by (subset, id), lays the items or accuracies out and writes the benchmark
 * layout to out_path (atomically). */
int rb_merge_and_write(rb_state *S, const char *out_path, const char *group, FILE *log);

#endif
