/* benchmark: the input layout (tables of datasets for the per-item and the accuracy form) and its
 * checks (see docs/reference.md, 'benchmark input layout'). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_internal.h"

enum { BENCH_LEN_M, BENCH_LEN_S, BENCH_LEN_I, BENCH_LEN_C };
static const char *const bench_lengths[] = {"models (M)", "subsets (S)", "items (I)", "completions (C)", NULL};

/* The per-item form: scores of every completion under every model. */
enum { BI_MODELS, BI_SUBSETS, BI_ITEM_SUBSET, BI_ITEM_OFFSET, BI_N_CORRECT, BI_SCORES, BI_GIVEN };
static const rd_h5_dataset bench_item_datasets[] = {
    [BI_MODELS] = {"model_names", 1, RD_TCM(RD_TC_STRING), {BENCH_LEN_M, RD_H5_FREE}, 0, "strings [M]"},
    [BI_SUBSETS] = {"subset_names", 1, RD_TCM(RD_TC_STRING), {BENCH_LEN_S, RD_H5_FREE}, 0, "strings [S]"},
    [BI_ITEM_SUBSET] = {"item_subset", 1, RD_TCM(RD_TC_INT), {BENCH_LEN_I, RD_H5_FREE}, 0,
                        "integer subset indices [I]"},
    /* [I + 1]: checked below, the table names lengths only */
    [BI_ITEM_OFFSET] = {"item_offset", 1, RD_TCM(RD_TC_INT), {RD_H5_FREE, RD_H5_FREE}, 0,
                        "int64 completion offsets [I + 1]"},
    [BI_N_CORRECT] = {"item_n_correct", 1, RD_TCM(RD_TC_INT), {BENCH_LEN_I, RD_H5_FREE}, 0,
                      "integer counts of preferred completions [I]"},
    [BI_SCORES] = {"scores", 2, RD_TCM(RD_TC_FLOAT), {BENCH_LEN_M, BENCH_LEN_C}, 0, "float32 or float64 [M, C]"},
    [BI_GIVEN] = {"given_credit", 2, RD_TCM(RD_TC_FLOAT), {BENCH_LEN_M, BENCH_LEN_I}, 1,
                  "float64 credits [M, I] (NaN: from scores)"},
    {NULL, 0, 0, {0, 0}, 0, NULL},
};

/* The accuracy form: one value per model and subset. */
enum { BA_MODELS, BA_SUBSETS, BA_ACCURACY };
static const rd_h5_dataset bench_accuracy_datasets[] = {
    [BA_MODELS] = {"model_names", 1, RD_TCM(RD_TC_STRING), {BENCH_LEN_M, RD_H5_FREE}, 0, "strings [M]"},
    [BA_SUBSETS] = {"subset_names", 1, RD_TCM(RD_TC_STRING), {BENCH_LEN_S, RD_H5_FREE}, 0, "strings [S]"},
    [BA_ACCURACY] = {"subset_accuracy", 2, RD_TCM(RD_TC_FLOAT), {BENCH_LEN_M, BENCH_LEN_S}, 0, "float64 [M, S]"},
    {NULL, 0, 0, {0, 0}, 0, NULL},
};

/* The Ties subset's item ids, one per item (read only when that subset has items). */
enum { BT_ITEM_SUBSET, BT_ITEM_ID };
static const rd_h5_dataset bench_ids_datasets[] = {
    [BT_ITEM_SUBSET] = {"item_subset", 1, RD_TCM(RD_TC_INT), {BENCH_LEN_I, RD_H5_FREE}, 0,
                        "integer subset indices [I]"},
    [BT_ITEM_ID] = {"item_id", 1, RD_TCM(RD_TC_STRING), {BENCH_LEN_I, RD_H5_FREE}, 1, "strings [I]"},
    {NULL, 0, 0, {0, 0}, 0, NULL},
};

static const rd_h5_layout bench_item_layout = {
    .kind = "benchmark", .len_names = bench_lengths, .datasets = bench_item_datasets};
static const rd_h5_layout bench_accuracy_layout = {
    .kind = "benchmark", .len_names = bench_lengths, .datasets = bench_accuracy_datasets};
static const rd_h5_layout bench_ids_layout = {
    .kind = "benchmark", .len_names = bench_lengths, .datasets = bench_ids_datasets};

/* Which form the input has: per-item when item_subset exists, else accuracies when subset_accuracy
 * does; -1 when neither (the common datasets are still checked first). */
static int input_form(hid_t f, const char *group) {
  char p[600];
  if (rd_h5_path(p, sizeof p, group, "item_subset") >= 0 && rd_h5_exists(f, p)) return 0;
  if (rd_h5_path(p, sizeof p, group, "subset_accuracy") >= 0 && rd_h5_exists(f, p)) return 1;
  return -1;
}

/* What the tables cannot say: non-empty names, the size limits, [I + 1] offsets, the credit count. */
static int check_sizes(const char *file, const bench_layout *L, rd_status *st) {
  if (L->M < 1)
    return rd_fail(st, RD_EINPUT, "%s: %s is empty; expected at least one model", file, L->model_names.path);
  if (L->S < 1)
    return rd_fail(st, RD_EINPUT, "%s: %s is empty; expected at least one subset", file, L->subset_names.path);
  if (L->M > 1000000 || L->S > 1000000)
    return rd_fail(st, RD_EINPUT, "%s: %lld models and %lld subsets (at most 1000000 of each supported)", file,
                   (long long)L->M, (long long)L->S);
  if (L->accuracy_mode) return RD_OK;
  if (L->I < 1) return rd_fail(st, RD_EINPUT, "%s: %s is empty; expected at least one item", file, L->item_subset.path);
  if (L->item_offset.dims[0] != L->I + 1)
    return rd_fail(st, RD_EINPUT, "%s: %s has %lld entries, expected I + 1 = %lld (I = %lld items in %s)", file,
                   L->item_offset.path, (long long)L->item_offset.dims[0], (long long)(L->I + 1), (long long)L->I,
                   L->item_subset.path);
  if (L->M * L->I >= INT_MAX)
    return rd_fail(st, RD_EINPUT, "%s: %lld models x %lld items is more than 2^31 credits (not supported)", file,
                   (long long)L->M, (long long)L->I);
  return RD_OK;
}

int bench_check_layout(hid_t f, const rd_job *job, bench_layout *L, rd_status *st) {
  const char *file = job->input;
  memset(L, 0, sizeof *L);
  int form = input_form(f, job->group);
  L->accuracy_mode = form != 0;
  rd_h5_found *found = malloc(sizeof *found);
  if (!found) return rd_fail(st, RD_EFAIL, "out of memory");
  int skip[BA_ACCURACY + 1] = {[BA_ACCURACY] = form < 0};
  int rc = rd_h5_check_layout(f, file, job->group, form == 0 ? &bench_item_layout : &bench_accuracy_layout,
                              form < 0 ? skip : NULL, found, st);
  if (rc == RD_OK && form < 0) {
    char p[600];
    rd_h5_path(p, sizeof p, job->group, "item_subset");
    rc = rd_fail(st, RD_EINPUT, "%s: dataset %s is missing (expected per-item datasets item_subset, item_offset, "
                 "item_n_correct, scores, or per-subset accuracies in subset_accuracy)", file, p);
  }
  if (rc == RD_OK) {
    L->M = found->len[BENCH_LEN_M];
    L->S = found->len[BENCH_LEN_S];
    L->model_names = found->info[BI_MODELS];
    L->subset_names = found->info[BI_SUBSETS];
    if (form == 1) {
      L->accuracy = found->info[BA_ACCURACY];
    } else {
      L->item_subset = found->info[BI_ITEM_SUBSET];
      L->item_offset = found->info[BI_ITEM_OFFSET];
      L->n_correct = found->info[BI_N_CORRECT];
      L->scores = found->info[BI_SCORES];
      L->has_given = found->present[BI_GIVEN];
      if (L->has_given) L->given = found->info[BI_GIVEN];
      L->I = found->len[BENCH_LEN_I];
      L->C = found->len[BENCH_LEN_C];
    }
  }
  free(found);
  RD_TRY(rc);
  return check_sizes(file, L, st);
}

int bench_check_item_ids(hid_t f, const rd_job *job, rd_dsinfo *ids, int *present, rd_status *st) {
  rd_h5_found *found = malloc(sizeof *found);
  if (!found) return rd_fail(st, RD_EFAIL, "out of memory");
  int rc = rd_h5_check_layout(f, job->input, job->group, &bench_ids_layout, NULL, found, st);
  *present = rc == RD_OK && found->present[BT_ITEM_ID];
  if (*present) *ids = found->info[BT_ITEM_ID];
  free(found);
  return rc;
}
