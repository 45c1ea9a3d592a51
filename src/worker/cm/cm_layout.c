/* cm: the input layout (one table of datasets) and its check. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_internal.h"

enum { CM_DS_RC, CM_DS_RR, CM_DS_FLAG, CM_DS_USER };
enum { CM_LEN_P, CM_LEN_R };

static const char *const cm_lengths[] = {"pairs (P)", "runs (R)", NULL};

static const rd_h5_dataset cm_datasets[] = {
    [CM_DS_RC] = {"reward_chosen", 2, RD_TCM(RD_TC_FLOAT), {CM_LEN_P, CM_LEN_R}, 0, "float32 or float64 [P, R]"},
    [CM_DS_RR] = {"reward_rejected", 2, RD_TCM(RD_TC_FLOAT), {CM_LEN_P, CM_LEN_R}, 0, "float32 or float64 [P, R]"},
    [CM_DS_FLAG] = {"in_train", 2, RD_TCM(RD_TC_INT), {CM_LEN_P, CM_LEN_R}, 0, "uint8 (or boolean) 0/1 flags [P, R]"},
    [CM_DS_USER] = {"user", 1, RD_TCM(RD_TC_INT) | RD_TCM(RD_TC_STRING), {CM_LEN_P, RD_H5_FREE}, 0,
                    "integer or string ids [P]"},
    {NULL, 0, 0, {0, 0}, 0, NULL},
};

static const rd_h5_layout cm_layout_table = {.kind = "cm", .len_names = cm_lengths, .datasets = cm_datasets};

/* The covariate of each stratum: covariates/<name>, one value per pair: numbers, or for a categorical
 * stratum the category names as strings. */
static int check_covariates(hid_t f, const rd_job *job, cm_layout *L, rd_status *st) {
  const cm_opts *o = job->opts;
  const char *file = job->input;
  L->cov = calloc((size_t)(o->n_strata ? o->n_strata : 1), sizeof *L->cov);
  if (!L->cov) return rd_fail(st, RD_EFAIL, "out of memory");
  for (int s = 0; s < o->n_strata; s++) {
    char name[300], p[600];
    snprintf(name, sizeof name, "covariates/%s", o->strata[s].covariate);
    rd_h5_path(p, sizeof p, job->group, name);
    if (!rd_h5_exists(f, p))
      return rd_fail(st, RD_EINPUT, "%s: strata[%d] names covariate \"%s\" but dataset %s is missing", file, s,
                     o->strata[s].covariate, p);
    RD_TRY(rd_h5_info(f, file, p, &L->cov[s], st));
    int cat = o->strata[s].bins == 0;
    if (!cat && L->cov[s].tclass == RD_TC_STRING)
      return rd_fail(st, RD_EINPUT, "%s: %s holds strings (category names): quantile bins need numbers; give "
                     "strata[%d] \"categorical\": true (see docs/reference.md, 'cm input layout')", file, p, s);
    RD_TRY(rd_h5_expect(&L->cov[s], file, 1, RD_TCM(RD_TC_INT) | RD_TCM(RD_TC_FLOAT) | (cat ? RD_TCM(RD_TC_STRING) : 0),
                        cat ? "numeric or string (category names) [P]" : "numeric [P]", st));
    if (L->cov[s].dims[0] != L->P)
      return rd_fail(st, RD_EINPUT, "%s: %s has %lld entries, expected one per pair (%lld)", file, p,
                     (long long)L->cov[s].dims[0], (long long)L->P);
  }
  return RD_OK;
}

int cm_check_layout(hid_t f, const rd_job *job, cm_layout *L, rd_status *st) {
  const char *file = job->input;
  rd_h5_found *found = malloc(sizeof *found);
  if (!found) return rd_fail(st, RD_EFAIL, "out of memory");
  int rc = rd_h5_check_layout(f, file, job->group, &cm_layout_table, NULL, found, st);
  if (rc == RD_OK) {
    L->rc = found->info[CM_DS_RC];
    L->rr = found->info[CM_DS_RR];
    L->flag = found->info[CM_DS_FLAG];
    L->user = found->info[CM_DS_USER];
  }
  free(found);
  RD_TRY(rc);
  L->P = L->rc.dims[0];
  L->R = L->rc.dims[1];
  if (L->P == 0 || L->R == 0)
    return rd_fail(st, RD_EINPUT, "%s: %s is empty ([%lld, %lld]); expected at least one pair and one run", file,
                   L->rc.path, (long long)L->P, (long long)L->R);
  if (L->R > 1000000)
    return rd_fail(st, RD_EINPUT, "%s: %s has %lld runs (at most 1000000 supported)", file, L->rc.path, (long long)L->R);
  L->ftype = (L->rc.tsize == 4 && L->rr.tsize == 4) ? RD_F32 : RD_F64;
  cm_ids_find(f, job, L);
  return check_covariates(f, job, L, st);
}

int cm_validate(const rd_ctx *ctx, const rd_job *job, const rd_jobfile *jf, rd_status *st) {
  (void)jf;
  if (ctx->rank == 0) {
    hid_t f;
    if (rd_h5_open(job->input, MPI_COMM_NULL, &f, st) == RD_OK) {
      cm_layout L;
      memset(&L, 0, sizeof L);
      cm_check_layout(f, job, &L, st);
      free(L.cov);
      rd_h5_close(f);
    }
  }
  return rd_share_status(ctx, st, 0);
}

void cm_layout_offsets(hid_t f, cm_layout *L) {
  hid_t mt = L->ftype == RD_F32 ? H5T_NATIVE_FLOAT : H5T_NATIVE_DOUBLE;
  rd_h5_contig_offset(f, &L->rc, mt, &L->offset[0]);
  rd_h5_contig_offset(f, &L->rr, mt, &L->offset[1]);
  rd_h5_contig_offset(f, &L->flag, H5T_STD_U8LE, &L->offset[2]);
  /* integer ids as 64-bit little-endian words (the values read_int_words would give) */
  L->user_offset = -1;
  if (L->user.tclass == RD_TC_INT && L->user.tsize == 8)
    rd_h5_contig_offset(f, &L->user, L->user.is_signed ? H5T_STD_I64LE : H5T_STD_U64LE, &L->user_offset);
}
