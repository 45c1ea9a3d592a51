/* leakage: the input layout (one table of datasets) and its check; see docs/reference.md, 'leakage
 * input layout'. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "leak_internal.h"

enum { LEN_S, LEN_Q, LEN_T, LEN_R, LEN_G, LEN_D };

static const char *const leak_lengths[] = {"series (S)", "panel rows (Q)", "truth rows (T)", "rank/ rows (R)",
                                           "signal/ rows (G)", "defense/ rows (D)", NULL};

#define FREE RD_H5_FREE
#define INT RD_TCM(RD_TC_INT)
#define FLOAT RD_TCM(RD_TC_FLOAT)
#define STRING RD_TCM(RD_TC_STRING)

static const rd_h5_dataset leak_datasets[DS_COUNT + 1] = {
    [DS_MODEL_NAMES] = {"model_names", 1, STRING, {FREE, FREE}, 0, "strings [M]"},
    [DS_SERIES_NAMES] = {"series_names", 1, STRING, {LEN_S, FREE}, 0, "strings [S]"},
    [DS_VARIANT_NAMES] = {"variant_names", 1, STRING, {FREE, FREE}, 0, "strings [V]"},
    [DS_FICTIONAL] = {"series_fictional", 1, INT, {LEN_S, FREE}, 1, "uint8 0/1 flags [S]"},
    [DS_MODEL] = {"model", 1, INT, {LEN_Q, FREE}, 0, "int32 model indices [Q]"},
    [DS_SERIES] = {"series", 1, INT, {LEN_Q, FREE}, 0, "int32 series indices [Q]"},
    [DS_VARIANT] = {"variant", 1, INT, {LEN_Q, FREE}, 0, "int32 variant indices [Q]"},
    [DS_SEED] = {"seed", 1, INT, {LEN_Q, FREE}, 0, "int32 seeds [Q]"},
    [DS_MONTH] = {"month", 1, INT, {LEN_Q, FREE}, 0, "int32 months YYYYMM [Q]"},
    [DS_VALUE] = {"value", 1, FLOAT, {LEN_Q, FREE}, 0, "float64 parsed values [Q]"},
    [DS_STATUS] = {"status", 1, INT, {LEN_Q, FREE}, 0, "uint8 status 0/1/2 [Q]"},
    [DS_ENTROPY] = {"entropy_bits", 1, FLOAT, {LEN_Q, FREE}, 1, "float64 entropies [Q]"},
    [DS_REPLY] = {"reply", 1, STRING, {LEN_Q, FREE}, 1, "strings [Q]"},
    [DS_T_SERIES] = {"truth_series", 1, INT, {LEN_T, FREE}, 0, "int32 series indices [T]"},
    [DS_T_MONTH] = {"truth_month", 1, INT, {LEN_T, FREE}, 0, "int32 months YYYYMM [T]"},
    [DS_T_VALUE] = {"truth_value", 1, FLOAT, {LEN_T, FREE}, 0, "float64 truth values [T]"},
    /* the optional groups: required when their group exists (the `skip` rows of leak_check_layout) */
    [DS_R_MODEL] = {"rank/model", 1, INT, {LEN_R, FREE}, 0, "int32 model indices [R]"},
    [DS_R_SERIES] = {"rank/series", 1, INT, {LEN_R, FREE}, 0, "int32 series indices [R]"},
    [DS_R_A] = {"rank/month_a", 1, INT, {LEN_R, FREE}, 0, "int32 months YYYYMM [R]"},
    [DS_R_B] = {"rank/month_b", 1, INT, {LEN_R, FREE}, 0, "int32 months YYYYMM [R]"},
    [DS_R_PICK] = {"rank/pick", 1, INT, {LEN_R, FREE}, 0, "int8 picks 0/1/-1 [R]"},
    [DS_G_MODEL] = {"signal/model", 1, INT, {LEN_G, FREE}, 0, "int32 model indices [G]"},
    [DS_G_MONTH] = {"signal/month", 1, INT, {LEN_G, FREE}, 0, "int32 months YYYYMM [G]"},
    [DS_G_SIGNAL] = {"signal/signal", 1, FLOAT, {LEN_G, FREE}, 0, "float64 signals [G]"},
    [DS_G_RECALL] = {"signal/recall", 1, FLOAT, {LEN_G, FREE}, 0, "float64 recalled values [G]"},
    [DS_D_DEFENSE] = {"defense/defense", 1, INT, {LEN_D, FREE}, 0, "int32 defense indices [D]"},
    [DS_D_ATTACK] = {"defense/attack", 1, INT, {LEN_D, FREE}, 0, "int32 attack indices [D]"},
    [DS_D_MODEL] = {"defense/model", 1, INT, {LEN_D, FREE}, 0, "int32 model indices [D]"},
    [DS_D_MONTH] = {"defense/month", 1, INT, {LEN_D, FREE}, 0, "int32 months YYYYMM [D]"},
    [DS_D_BLOCKED] = {"defense/blocked", 1, INT, {LEN_D, FREE}, 0, "uint8 0/1 flags [D]"},
    [DS_D_NAMES] = {"defense/defense_names", 1, STRING, {FREE, FREE}, 0, "strings"},
    [DS_A_NAMES] = {"defense/attack_names", 1, STRING, {FREE, FREE}, 0, "strings"},
    [DS_COUNT] = {NULL, 0, 0, {0, 0}, 0, NULL},
};

#undef FREE
#undef INT
#undef FLOAT
#undef STRING

static const rd_h5_layout leak_layout_table = {.kind = "leakage", .len_names = leak_lengths,
                                               .datasets = leak_datasets};

/* Which optional groups exist; the rows of an absent one are skipped. */
static int find_groups(hid_t f, const rd_job *job, leak_layout *L, int *skip, rd_status *st) {
  static const struct {
    const char *name;
    int first, last;
  } groups[3] = {{"rank", DS_R_MODEL, DS_R_PICK}, {"signal", DS_G_MODEL, DS_G_RECALL},
                 {"defense", DS_D_DEFENSE, DS_A_NAMES}};
  int *has[3] = {&L->has_rank, &L->has_signal, &L->has_defense};
  for (int g = 0; g < 3; g++) {
    char p[600];
    if (rd_h5_path(p, sizeof p, job->group, groups[g].name) < 0)
      return rd_fail(st, RD_EINPUT, "%s: group name %s is too long", job->input, job->group);
    *has[g] = rd_h5_exists(f, p);
    for (int d = groups[g].first; d <= groups[g].last; d++) skip[d] = !*has[g];
  }
  return RD_OK;
}

/* The checks beyond names, classes and shared lengths. */
static int check_sizes(const rd_job *job, const leak_layout *L, rd_status *st) {
  const char *file = job->input;
  if (L->ds[DS_MODEL].dims[0] == 0 && !L->has_rank && !L->has_signal && !L->has_defense)
    return rd_fail(st, RD_EINPUT, "%s: %s is empty and there are no rank/, signal/ or defense/ rows; expected at "
                   "least one panel row", file, L->ds[DS_MODEL].path);
  if (L->ds[DS_MODEL].dims[0] > INT32_MAX) return rd_fail(st, RD_EINPUT, "%s: more than 2^31 panel rows", file);
  return RD_OK;
}

int leak_check_layout(hid_t f, const rd_job *job, leak_layout *L, rd_status *st) {
  int skip[DS_COUNT] = {0};
  RD_TRY(find_groups(f, job, L, skip, st));
  rd_h5_found *found = malloc(sizeof *found);
  if (!found) return rd_fail(st, RD_EFAIL, "out of memory");
  int rc = rd_h5_check_layout(f, job->input, job->group, &leak_layout_table, skip, found, st);
  if (rc == RD_OK)
    for (int d = 0; d < DS_COUNT; d++) {
      L->has[d] = found->present[d];
      L->ds[d] = found->info[d];
    }
  free(found);
  RD_TRY(rc);
  return check_sizes(job, L, st);
}

int leak_validate(const rd_ctx *ctx, const rd_job *job, const rd_jobfile *jf, rd_status *st) {
  (void)jf;
  if (ctx->rank == 0) {
    hid_t f;
    if (rd_h5_open(job->input, MPI_COMM_NULL, &f, st) == RD_OK) {
      leak_layout L;
      memset(&L, 0, sizeof L);
      leak_check_layout(f, job, &L, st);
      rd_h5_close(f);
    }
  }
  return rd_share_status(ctx, st, 0);
}
