/* The cm report (SPEC §4): counterfactual memorization of preference pairs.
 * Rank 0 reads the small per-pair tables (users, covariates) and broadcasts what workers need;
 * every rank reads its fixed blocks of the [P, R] arrays, checks them, and computes per-pair TM
 * and TG with the backend kernel; rank 0 gathers the per-pair values in pair order and forms
 * the summaries; bootstrap replicates are spread over ranks by index. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmdiag/kernels/backend.h"
#include "rmdiag/kernels/cm.h"
#include "rmdiag/common/h5in.h"
#include "rmdiag/common/h5out.h"
#include "rmdiag/common/idmap.h"
#include "rmdiag/common/jsonutil.h"
#include "rmdiag/kernels/scan.h"
#include "rmdiag/kind.h"
#include "rmdiag/common/progress.h"
#include "rmdiag/kernels/resample.h"
#include "rmdiag/kernels/rng.h"
#include "rmdiag/kernels/stats.h"

/* Pairs per block: the unit of the row partition (independent of the rank count). */
#define CM_BLOCK 2048

typedef struct cm_stratum {
  const char *covariate;
  int64_t bins;  /* 0: categorical */
} cm_stratum;

typedef struct cm_opts {
  int64_t bootstrap;
  int n_strata;
  cm_stratum *strata;
} cm_opts;

static const char *const cm_keys[] = {"bootstrap", "strata", NULL};

static void cm_free_opts(void *p) {
  cm_opts *o = p;
  if (!o) return;
  free(o->strata);
  free(o);
}

static int cm_parse(rd_job *job, const rd_jobfile *jf, rd_status *st) {
  (void)jf;
  cm_opts *o = calloc(1, sizeof *o);
  if (!o) return rd_fail(st, RD_EFAIL, "out of memory");
  job->opts = o;
  RD_TRY(rd_opt_int(job->spec, "bootstrap", 1000, 0, 100000000, &o->bootstrap, &job->where, st));
  job->effective = cJSON_CreateObject();
  cJSON_AddNumberToObject(job->effective, "bootstrap", (double)o->bootstrap);
  cJSON *eff_strata = cJSON_AddArrayToObject(job->effective, "strata");
  const cJSON *strata = cJSON_GetObjectItemCaseSensitive(job->spec, "strata");
  if (!strata) return RD_OK;
  if (!cJSON_IsArray(strata))
    return rd_fail(st, RD_EINPUT, "%s: \"strata\" must be a list of {\"covariate\", \"bins\" | \"categorical\"}",
                   job->where.path);
  o->n_strata = cJSON_GetArraySize(strata);
  o->strata = calloc((size_t)(o->n_strata ? o->n_strata : 1), sizeof *o->strata);
  if (!o->strata) return rd_fail(st, RD_EFAIL, "out of memory");
  int i = 0;
  for (const cJSON *s = strata->child; s; s = s->next, i++) {
    rd_where w = job->where;
    snprintf(w.path, sizeof w.path, "%.500s: strata[%d]", job->where.path, i);
    if (!cJSON_IsObject(s)) return rd_fail(st, RD_EINPUT, "%s must be an object", w.path);
    static const char *const keys[] = {"covariate", "bins", "categorical", NULL};
    RD_TRY(rd_opt_keys(s, keys, &w, st));
    const char *cov = NULL;
    RD_TRY(rd_opt_string(s, "covariate", NULL, NULL, &cov, &w, st));
    if (!cov || !cov[0] || strchr(cov, '/'))
      return rd_fail(st, RD_EINPUT, "%s: \"covariate\" must name a dataset under covariates/", w.path);
    int has_bins = cJSON_GetObjectItemCaseSensitive(s, "bins") != NULL;
    int categorical = 0;
    RD_TRY(rd_opt_bool(s, "categorical", 0, &categorical, &w, st));
    if (has_bins == categorical)
      return rd_fail(st, RD_EINPUT, "%s: give exactly one of \"bins\": K or \"categorical\": true", w.path);
    for (int k = 0; k < i; k++)
      if (strcmp(o->strata[k].covariate, cov) == 0)
        return rd_fail(st, RD_EINPUT, "%s: covariate \"%s\" is already stratified by strata[%d] (one entry per covariate)",
                       w.path, cov, k);
    if (strlen(cov) > 200) return rd_fail(st, RD_EINPUT, "%s: covariate name longer than 200 bytes", w.path);
    o->strata[i].covariate = cov;
    if (has_bins) RD_TRY(rd_opt_int(s, "bins", 0, 1, 100000, &o->strata[i].bins, &w, st));
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "covariate", cov);
    if (has_bins) {
      cJSON_AddNumberToObject(e, "bins", (double)o->strata[i].bins);
    } else {
      cJSON_AddBoolToObject(e, "categorical", 1);
    }
    cJSON_AddItemToArray(eff_strata, e);
  }
  return RD_OK;
}

/* ---- layout ------------------------------------------------------------------ */

typedef struct cm_layout {
  rd_dsinfo rc, rr, flag, user;
  int64_t P, R;
  rd_ftype ftype;
  int64_t offset[3];  /* file offsets of rc, rr, in_train when they can be mapped, else -1 */
  rd_dsinfo *cov;     /* one per stratum (rank 0) */
} cm_layout;

static void ds_path(char *out, size_t n, const char *group, const char *name) {
  snprintf(out, n, "%s/%s", strcmp(group, "/") == 0 ? "" : group, name);
}

/* Checks names, types and shapes; runs on any one rank with the file open. */
static int cm_check_layout(hid_t f, const rd_job *job, cm_layout *L, rd_status *st) {
  const cm_opts *o = job->opts;
  const char *file = job->input;
  char p[512];
  if (!rd_h5_exists(f, job->group))
    return rd_fail(st, RD_EINPUT, "%s: group %s is missing (expected the cm layout of SPEC §4)", file, job->group);
  ds_path(p, sizeof p, job->group, "reward_chosen");
  RD_TRY(rd_h5_info(f, file, p, &L->rc, st));
  RD_TRY(rd_h5_expect(&L->rc, file, 2, RD_TCM(RD_TC_FLOAT), "float32 or float64 [P, R]", st));
  ds_path(p, sizeof p, job->group, "reward_rejected");
  RD_TRY(rd_h5_info(f, file, p, &L->rr, st));
  RD_TRY(rd_h5_expect(&L->rr, file, 2, RD_TCM(RD_TC_FLOAT), "float32 or float64 [P, R]", st));
  ds_path(p, sizeof p, job->group, "in_train");
  RD_TRY(rd_h5_info(f, file, p, &L->flag, st));
  RD_TRY(rd_h5_expect(&L->flag, file, 2, RD_TCM(RD_TC_INT), "uint8 (or boolean) 0/1 flags [P, R]", st));
  ds_path(p, sizeof p, job->group, "user");
  RD_TRY(rd_h5_info(f, file, p, &L->user, st));
  RD_TRY(rd_h5_expect(&L->user, file, 1, RD_TCM(RD_TC_INT) | RD_TCM(RD_TC_STRING), "integer or string ids [P]", st));
  L->P = L->rc.dims[0];
  L->R = L->rc.dims[1];
  const rd_dsinfo *same[3] = {&L->rr, &L->flag, NULL};
  for (int i = 0; same[i]; i++)
    if (same[i]->dims[0] != L->P || same[i]->dims[1] != L->R)
      return rd_fail(st, RD_EINPUT, "%s: %s has shape [%lld, %lld] but %s has [%lld, %lld]; expected the same [P, R]",
                     file, same[i]->path, (long long)same[i]->dims[0], (long long)same[i]->dims[1], L->rc.path,
                     (long long)L->P, (long long)L->R);
  if (L->user.dims[0] != L->P)
    return rd_fail(st, RD_EINPUT, "%s: %s has %lld entries but there are %lld pairs (rows of %s)", file, L->user.path,
                   (long long)L->user.dims[0], (long long)L->P, L->rc.path);
  if (L->P == 0 || L->R == 0)
    return rd_fail(st, RD_EINPUT, "%s: %s is empty ([%lld, %lld]); expected at least one pair and one run", file,
                   L->rc.path, (long long)L->P, (long long)L->R);
  if (L->R > 1000000) return rd_fail(st, RD_EINPUT, "%s: %s has %lld runs (at most 1000000 supported)", file, L->rc.path, (long long)L->R);
  L->ftype = (L->rc.tsize == 4 && L->rr.tsize == 4) ? RD_F32 : RD_F64;
  L->cov = calloc((size_t)(o->n_strata ? o->n_strata : 1), sizeof *L->cov);
  if (!L->cov) return rd_fail(st, RD_EFAIL, "out of memory");
  for (int s = 0; s < o->n_strata; s++) {
    char name[300];
    snprintf(name, sizeof name, "covariates/%s", o->strata[s].covariate);
    ds_path(p, sizeof p, job->group, name);
    if (!rd_h5_exists(f, p))
      return rd_fail(st, RD_EINPUT, "%s: strata[%d] names covariate \"%s\" but dataset %s is missing", file, s,
                     o->strata[s].covariate, p);
    RD_TRY(rd_h5_info(f, file, p, &L->cov[s], st));
    RD_TRY(rd_h5_expect(&L->cov[s], file, 1, RD_TCM(RD_TC_INT) | RD_TCM(RD_TC_FLOAT), "numeric [P]", st));
    if (L->cov[s].dims[0] != L->P)
      return rd_fail(st, RD_EINPUT, "%s: %s has %lld entries, expected one per pair (%lld)", file, p,
                     (long long)L->cov[s].dims[0], (long long)L->P);
  }
  return RD_OK;
}

static int cm_validate(const rd_ctx *ctx, const rd_job *job, const rd_jobfile *jf, rd_status *st) {
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

/* ---- users ------------------------------------------------------------------------ */

typedef struct cm_users {
  int64_t U;
  int32_t *of_pair;     /* [P] user index, in order of first appearance */
  int64_t *first_pair;  /* [U] */
  char *labels;         /* packed NUL-terminated labels for messages */
  int64_t *label_off;   /* [U + 1] */
  size_t labels_len;
} cm_users;

static void users_free(cm_users *u) {
  free(u->of_pair);
  free(u->first_pair);
  free(u->labels);
  free(u->label_off);
  memset(u, 0, sizeof *u);
}

/* Rank 0: reads the user column and numbers users by first appearance. */
static int users_read(hid_t f, const rd_job *job, const cm_layout *L, cm_users *u, rd_status *st) {
  int64_t P = L->P;
  rd_idmap m;
  if (rd_idmap_init(&m, 1024) != 0) return rd_fail(st, RD_EFAIL, "out of memory");
  u->of_pair = rd_malloc(sizeof(int32_t) * (size_t)P, st, "user index");
  int rc = u->of_pair ? RD_OK : st->code;
  int is_string = L->user.tclass == RD_TC_STRING;
  char *sbuf = NULL;
  int64_t *soff = NULL;
  uint64_t *ids = NULL;
  size_t slen = 0;
  if (rc == RD_OK) {
    if (is_string) {
      rc = rd_h5_read_strings(f, job->input, &L->user, &sbuf, &slen, &soff, st);
    } else {
      ids = rd_malloc(sizeof(uint64_t) * (size_t)P, st, "user ids");
      rc = ids ? rd_h5_read_int_words(f, job->input, &L->user, 0, P, ids, st) : st->code;
    }
  }
  /* integer ids: an open-addressing table keyed by the id (the common case, and the hot one),
   * doubled when half full; a new id also goes into the general map, which numbers users in
   * order of first appearance and keeps their labels */
  size_t cap = 4096, used = 0;
  uint64_t *tkey = is_string ? NULL : malloc(sizeof(uint64_t) * cap);
  int32_t *tval = is_string ? NULL : malloc(sizeof(int32_t) * cap);
  if (!is_string && (!tkey || !tval)) rc = rd_fail(st, RD_EFAIL, "out of memory numbering users");
  for (size_t i = 0; tval && i < cap; i++) tval[i] = -1;
  for (int64_t p = 0; rc == RD_OK && p < P; p++) {
    int64_t id;
    if (is_string) {
      id = rd_idmap_get(&m, sbuf + soff[p], strlen(sbuf + soff[p]), NULL);
    } else {
      size_t s = (size_t)((ids[p] * 0x9E3779B97F4A7C15ull) >> 20) & (cap - 1);
      while (tval[s] >= 0 && tkey[s] != ids[p]) s = (s + 1) & (cap - 1);
      if (tval[s] >= 0) {
        id = tval[s];
      } else {
        id = rd_idmap_get(&m, &ids[p], sizeof ids[p], NULL);
        if (id < 0 || id > INT32_MAX) goto numbered;
        tkey[s] = ids[p];
        tval[s] = (int32_t)id;
        if (2 * ++used > cap) {
          size_t ncap = 2 * cap;
          uint64_t *nk = malloc(sizeof(uint64_t) * ncap);
          int32_t *nv = malloc(sizeof(int32_t) * ncap);
          if (!nk || !nv) {
            free(nk);
            free(nv);
            id = -1;
            goto numbered;
          }
          for (size_t i = 0; i < ncap; i++) nv[i] = -1;
          for (size_t i = 0; i < cap; i++) {
            if (tval[i] < 0) continue;
            size_t t = (size_t)((tkey[i] * 0x9E3779B97F4A7C15ull) >> 20) & (ncap - 1);
            while (nv[t] >= 0) t = (t + 1) & (ncap - 1);
            nk[t] = tkey[i];
            nv[t] = tval[i];
          }
          free(tkey);
          free(tval);
          tkey = nk;
          tval = nv;
          cap = ncap;
        }
      }
    }
  numbered:
    if (id < 0) rc = rd_fail(st, RD_EFAIL, "out of memory numbering users");
    else if (id > INT32_MAX) rc = rd_fail(st, RD_EINPUT, "%s: more than 2^31 users", job->input);
    else u->of_pair[p] = (int32_t)id;
  }
  free(tkey);
  free(tval);
  if (rc == RD_OK) {
    u->U = m.n;
    u->label_off = rd_malloc(sizeof(int64_t) * (size_t)(u->U + 1), st, "user labels");
    size_t total = 0;
    for (int64_t k = 0; k < u->U; k++) total += is_string ? m.lens[k] + 3 : 24;
    u->labels = u->label_off ? rd_malloc(total + 1, st, "user labels") : NULL;
    if (!u->labels) rc = st->code;
    size_t pos = 0;
    for (int64_t k = 0; rc == RD_OK && k < u->U; k++) {
      u->label_off[k] = (int64_t)pos;
      if (is_string) pos += (size_t)sprintf(u->labels + pos, "\"%s\"", m.keys[k]) + 1;
      else {
        uint64_t v;
        memcpy(&v, m.keys[k], sizeof v);
        if (L->user.is_signed) pos += (size_t)sprintf(u->labels + pos, "%lld", (long long)(int64_t)v) + 1;
        else pos += (size_t)sprintf(u->labels + pos, "%llu", (unsigned long long)v) + 1;
      }
    }
    if (rc == RD_OK) {
      u->label_off[u->U] = (int64_t)pos;
      u->labels_len = pos;
    }
  }
  free(sbuf);
  free(soff);
  free(ids);
  rd_idmap_free(&m);
  return rc;
}

/* Every rank: broadcast of the user table, then the first pair of each user. */
static int users_share(const rd_ctx *ctx, int64_t P, cm_users *u, rd_status *st) {
  long long head[2] = {(long long)u->U, (long long)u->labels_len};
  RD_MPI_CHECK(ctx, MPI_Bcast(head, 2, MPI_LONG_LONG, 0, ctx->comm));
  if (ctx->rank != 0) {
    u->U = head[0];
    u->labels_len = (size_t)head[1];
    u->of_pair = malloc(sizeof(int32_t) * (size_t)P);
    u->label_off = malloc(sizeof(int64_t) * (size_t)(u->U + 1));
    u->labels = malloc(u->labels_len + 1);
    if (!u->of_pair || !u->label_off || !u->labels) rd_abort(ctx, __FILE__, __LINE__, "out of memory for users");
  }
  rd_bcast_bytes(ctx, u->of_pair, sizeof(int32_t) * (size_t)P, 0);
  rd_bcast_bytes(ctx, u->label_off, sizeof(int64_t) * (size_t)(u->U + 1), 0);
  rd_bcast_bytes(ctx, u->labels, u->labels_len, 0);
  u->first_pair = rd_malloc(sizeof(int64_t) * (size_t)u->U, st, "first pairs");
  if (!u->first_pair) rd_abort(ctx, __FILE__, __LINE__, "out of memory for users");
  for (int64_t k = 0; k < u->U; k++) u->first_pair[k] = -1;
  for (int64_t p = 0; p < P; p++)
    if (u->first_pair[u->of_pair[p]] < 0) u->first_pair[u->of_pair[p]] = p;
  return RD_OK;
}

/* ---- the rank's rows: read and check ------------------------------------------------- */

typedef struct cm_rows {
  int64_t lo, hi;             /* pair range */
  const void *rc, *rr;        /* [hi - lo, R] in the stored precision (mapped or owned) */
  const uint8_t *flag;
  void *own[3];               /* buffers to free */
  rd_h5_map map[3];           /* mappings to undo */
} cm_rows;

static void rows_free(cm_rows *w) {
  for (int i = 0; i < 3; i++) {
    free(w->own[i]);
    rd_h5_unmap(&w->map[i]);
    w->own[i] = NULL;
  }
}

/* Finds which of the [P, R] datasets can be mapped straight from the file (rank 0). */
static void layout_offsets(hid_t f, cm_layout *L) {
  hid_t mt = L->ftype == RD_F32 ? H5T_NATIVE_FLOAT : H5T_NATIVE_DOUBLE;
  rd_h5_contig_offset(f, &L->rc, mt, &L->offset[0]);
  rd_h5_contig_offset(f, &L->rr, mt, &L->offset[1]);
  rd_h5_contig_offset(f, &L->flag, H5T_STD_U8LE, &L->offset[2]);
}

/* Rows [lo, lo + n) of dataset `which`: mapped from the file when the coordinator found it
 * mappable, else read with HDF5 (f open on every rank) into a new buffer. */
/* Rows [lo, lo + n) of dataset `which` (0 rewards chosen, 1 rejected, 2 in_train) into out, in one
 * read. When that fails, the rows are read again in the global CM_BLOCK blocks (a rank's rows are
 * whole blocks) to find the first block that fails: its error is keyed by the block's first element,
 * so the error reported is the same for any rank count, and *good counts the rows before it, whose
 * values are still checked (an earlier bad value outranks the failed block). */
static int read_rows(hid_t f, const rd_job *job, const cm_layout *L, int which, int64_t lo, int64_t n, void *out,
                     int64_t *good, rd_status *st) {
  const rd_dsinfo *ds = which == 2 ? &L->flag : which ? &L->rr : &L->rc;
  size_t es = which == 2 ? 1 : (L->ftype == RD_F32 ? sizeof(float) : sizeof(double));
  rd_status one;
  rd_status_init(&one);
  *good = n;
  for (int pass = 0; pass < 2; pass++) {
    for (int64_t b = lo; b < lo + n; b += pass ? CM_BLOCK : n) {
      int64_t m = pass ? (lo + n - b < CM_BLOCK ? lo + n - b : CM_BLOCK) : n;
      void *dst = (char *)out + (size_t)((b - lo) * L->R) * es;
      rd_status_init(&one);
      int rc = which == 2 ? rd_h5_read_flag_rows(f, job->input, ds, b, m, dst, &one)
                          : rd_h5_read_float_rows(f, job->input, ds, b, m, L->ftype, dst, &one);
      if (rc == RD_OK) continue;
      if (one.key != INT64_MAX) {  /* a flag other than 0/1 (element key): the rows before it were read */
        *good = b - lo;
        return rd_fail_at(st, one.code, one.key * 3 + 2, "%s", one.msg);
      }
      if (!pass) break;  /* the whole range failed to read: find the block */
      *good = b - lo;
      return rd_fail_at(st, one.code, (b * L->R) * 3 + which, "%s", one.msg);
    }
    if (*good == n && one.code == RD_OK) return RD_OK;
  }
  return st->code;
}

static const void *rows_get(hid_t f, const rd_job *job, const cm_layout *L, int which, int64_t lo, int64_t n,
                            cm_rows *w, int64_t *good, rd_status *st) {
  size_t es = which == 2 ? 1 : (L->ftype == RD_F32 ? sizeof(float) : sizeof(double));
  *good = n;
  if (L->offset[which] >= 0) {
    const void *p = rd_map_rows(job->input, L->offset[which], (int64_t)es * L->R, lo, n, &w->map[which]);
    if (!p) rd_fail(st, RD_EFAIL, "%s: cannot map rows %lld..%lld of %s", job->input, (long long)lo,
                    (long long)(lo + n - 1), which == 2 ? L->flag.path : which ? L->rr.path : L->rc.path);
    return p;
  }
  w->own[which] = rd_malloc_big((size_t)(n * L->R) * es, st, "rows");
  if (!w->own[which]) return NULL;
  read_rows(f, job, L, which, lo, n, w->own[which], good, st);
  return w->own[which];
}

static int rows_read(const rd_ctx *ctx, hid_t f, const rd_job *job, const cm_layout *L, cm_rows *w, rd_status *st) {
  (void)ctx;
  int64_t n = w->hi - w->lo, R = L->R, good[3];
  int f32 = L->ftype == RD_F32;
  if (n == 0) return RD_OK;
  /* a read that fails leaves an error keyed by its failing block; the values before it are checked
   * all the same (rd_fail_at keeps the lowest key). Other failures (memory, mapping) end here. */
  if (!(w->rc = rows_get(f, job, L, 0, w->lo, n, w, &good[0], st))) return st->code;
  if (!(w->rr = rows_get(f, job, L, 1, w->lo, n, w, &good[1], st))) return st->code;
  /* in_train: mapped when stored as uint8 (then scanned for values other than 0/1), else read
   * and checked while widening. Bad values get keys (element * 3 + 2), after which the reward
   * checks keep whichever bad element comes first (rewards before flags within an element). */
  const uint8_t *fl = rows_get(f, job, L, 2, w->lo, n, w, &good[2], st);
  if (!fl) return st->code;
  if (L->offset[2] >= 0) {
    int64_t i = rd_first_above_u8(fl, n * R, 1);
    if (i >= 0) {
      int64_t p = w->lo + i / R, r = i % R;
      rd_fail_at(st, RD_EINPUT, (p * R + r) * 3 + 2, "%s: %s[%lld, %lld] = %u, expected 0 or 1", job->input,
                 L->flag.path, (long long)p, (long long)r, fl[i]);
    }
  }
  w->flag = fl;
  for (int which = 0; which < 2; which++) {
    const rd_dsinfo *ds = which ? &L->rr : &L->rc;
    const void *buf = which ? w->rr : w->rc;
    int64_t i = f32 ? rd_first_nonfinite_f32(buf, good[which] * R) : rd_first_nonfinite_f64(buf, good[which] * R);
    if (i >= 0) {
      double v = f32 ? (double)((const float *)buf)[i] : ((const double *)buf)[i];
      int64_t p = w->lo + i / R, r = i % R;
      rd_fail_at(st, RD_EINPUT, (p * R + r) * 3 + which,
                 "%s: %s[%lld, %lld] = %g (pair %lld, run %lld), expected a finite reward", job->input, ds->path,
                 (long long)p, (long long)r, v, (long long)p, (long long)r);
    }
  }
  return st->code;
}

/* The split is by user: in every run all pairs of a user share in_train. The table of each
 * user's first pair's flags is assembled from the ranks that own those pairs. */
static int check_split(const rd_ctx *ctx, const rd_job *job, const cm_layout *L, const cm_users *u,
                       const cm_rows *w, rd_status *st) {
  int64_t R = L->R, U = u->U;
  size_t n = (size_t)(U * R);
  uint8_t *mine = malloc(n ? n : 1), *all = malloc(n ? n : 1);
  if (!mine || !all) rd_abort(ctx, __FILE__, __LINE__, "out of memory for the user split table");
  memset(mine, 0xFF, n);
  for (int64_t p = w->lo; p < w->hi; p++) {
    int32_t k = u->of_pair[p];
    if (u->first_pair[k] == p) memcpy(mine + (size_t)k * (size_t)R, w->flag + (p - w->lo) * R, (size_t)R);
  }
  for (size_t off = 0; off < n; off += (size_t)1 << 30) {
    int cnt = (int)(n - off < ((size_t)1 << 30) ? n - off : ((size_t)1 << 30));
    RD_MPI_CHECK(ctx, MPI_Allreduce(mine + off, all + off, cnt, MPI_UNSIGNED_CHAR, MPI_MIN, ctx->comm));
  }
  for (int64_t p = w->lo; p < w->hi; p++) {
    int32_t k = u->of_pair[p];
    const uint8_t *ref = all + (size_t)k * (size_t)R, *m = w->flag + (p - w->lo) * R;
    for (int64_t r = 0; r < R; r++)
      if (m[r] != ref[r]) {
        rd_fail_at(st, RD_EINPUT, p * R + r,
                   "%s: %s: user %s is split inconsistently in run %lld: pair %lld has in_train = %u but pair %lld "
                   "(the user's first pair) has %u; within a run all pairs of a user must share in_train",
                   job->input, L->flag.path, u->labels + u->label_off[k], (long long)r, (long long)p, m[r],
                   (long long)u->first_pair[k], ref[r]);
        p = w->hi;
        break;
      }
  }
  free(mine);
  free(all);
  return st->code;
}

/* ---- bootstrap over users ------------------------------------------------------------------ */

/* Per-user sums and counts of TM, TG, CM over the pairs where each is defined, stored by column:
 * F[k * U + u] for k = sum TM, count TM, sum TG, count TG, sum CM, count CM. */
static double *user_sums(const cm_users *u, int64_t P, const double *tm, const double *tg, const double *cm) {
  int64_t U = u->U;
  double *F = calloc((size_t)U * 6, sizeof *F);
  if (!F) return NULL;
  const double *v[3] = {tm, tg, cm};
  for (int64_t p = 0; p < P; p++) {
    int64_t k = u->of_pair[p];
    for (int j = 0; j < 3; j++)
      if (!isnan(v[j][p])) {
        F[(2 * j) * U + k] += v[j][p];
        F[(2 * j + 1) * U + k] += 1.0;
      }
  }
  return F;
}

/* Replicates [b0, b1): each draws U users with replacement and takes, for TM, TG and CM, the mean
 * over all pairs of the drawn users (duplicates counted) = Σ sums / Σ counts, both weighted by
 * the users' multiplicities in the draw. */
static void bootstrap_block(const rd_stream *s, const double *F, int64_t U, int64_t b0, int64_t b1, double *out,
                            rd_progress *prog) {
  uint32_t *idx = malloc(sizeof(uint32_t) * (size_t)(U + 1)), *cnt = malloc(sizeof(uint32_t) * (size_t)U);
  if (!idx || !cnt) abort();
  for (int64_t b = b0; b < b1; b++) {
    /* draw j of replicate b picks user rd_rng_below(s, b, j, U) */
    rd_rng_below_fill(s, (uint64_t)b, (uint64_t)U, U, idx);
    rd_count_draws(idx, U, U, cnt);
    double acc[6];
    rd_weighted_col_sums(cnt, F, U, 6, acc);
    double *o = out + (b - b0) * 3;
    for (int q = 0; q < 3; q++) o[q] = acc[2 * q + 1] > 0 ? acc[2 * q] / acc[2 * q + 1] : NAN;
    if (prog) rd_progress_update(prog, b - b0 + 1);
  }
  free(idx);
  free(cnt);
}

/* ---- strata ------------------------------------------------------------------------------- */


/* The strata of one covariate, packed as [excluded, n_bins, then per bin: bin, lo, hi, n, tm, tg,
 * cm] (NaN for an undefined mean). */
static int strata_pack(const cm_stratum *sp, const double *cov, int64_t P, const double *tm, const double *tg,
                       const double *cm, double **out, int64_t *n_out, rd_status *st) {
  double *fin = malloc(sizeof(double) * (size_t)(P ? P : 1));
  if (!fin) return rd_fail(st, RD_EFAIL, "out of memory");
  int64_t nf = 0;
  for (int64_t p = 0; p < P; p++)
    if (isfinite(cov[p])) fin[nf++] = cov[p];
  int64_t excluded = P - nf;
  if (nf == 0) {
    free(fin);
    *out = malloc(2 * sizeof(double));
    if (!*out) return rd_fail(st, RD_EFAIL, "out of memory");
    (*out)[0] = (double)excluded;
    (*out)[1] = 0.0;
    *n_out = 2;
    return RD_OK;
  }
  double *edges = NULL;
  int64_t nb;
  if (sp->bins > 0) {
    int64_t K = sp->bins;
    edges = malloc(sizeof(double) * (size_t)(K + 1));
    rd_sort_doubles(fin, (size_t)nf);
    for (int64_t i = 0; i <= K; i++) {
      double q = (double)i / (double)K;
      rd_quantiles_sorted(fin, (size_t)nf, &q, 1, &edges[i]);
    }
    int64_t ne = 1;
    for (int64_t i = 1; i <= K; i++)
      if (edges[i] != edges[ne - 1]) edges[ne++] = edges[i];  /* duplicate edges merge */
    nb = ne > 1 ? ne - 1 : 1;
    if (ne == 1) edges[1] = edges[0];
  } else {
    rd_sort_doubles(fin, (size_t)nf);
    int64_t nu = 0;
    for (int64_t i = 0; i < nf; i++)
      if (nu == 0 || fin[i] != fin[nu - 1]) fin[nu++] = fin[i] == 0.0 ? 0.0 : fin[i];
    nb = nu;
    edges = fin;  /* the categories */
    fin = NULL;
  }
  /* per bin: n, and sum/count of TM, TG, CM, accumulated in pair order */
  double *acc = calloc((size_t)nb * 7, sizeof *acc);
  for (int64_t p = 0; p < P; p++) {
    double x = cov[p];
    if (!isfinite(x)) continue;
    int64_t b;
    if (sp->bins > 0) {
      /* largest i with edges[i] <= x, the last bin closed */
      int64_t lo = 0, hi = nb;  /* search edges[0..nb-1] */
      while (hi - lo > 1) {
        int64_t mid = (lo + hi) / 2;
        if (edges[mid] <= x) lo = mid;
        else hi = mid;
      }
      b = lo;
    } else {
      int64_t lo = 0, hi = nb - 1;
      while (lo < hi) {
        int64_t mid = (lo + hi) / 2;
        if (edges[mid] < x) lo = mid + 1;
        else hi = mid;
      }
      b = lo;
    }
    double *a = acc + b * 7;
    a[0] += 1.0;
    const double v[3] = {tm[p], tg[p], cm[p]};
    for (int j = 0; j < 3; j++)
      if (!isnan(v[j])) {
        a[1 + 2 * j] += v[j];
        a[2 + 2 * j] += 1.0;
      }
  }
  double *o = malloc(sizeof(double) * (size_t)(2 + 7 * nb));
  if (!o) {
    free(acc);
    free(edges);
    free(fin);
    return rd_fail(st, RD_EFAIL, "out of memory");
  }
  o[0] = (double)excluded;
  o[1] = (double)nb;
  for (int64_t b = 0; b < nb; b++) {
    const double *a = acc + b * 7;
    double *e = o + 2 + 7 * b;
    e[0] = sp->bins > 0 ? (double)b : edges[b];
    e[1] = edges[b];
    e[2] = sp->bins > 0 ? edges[b + 1] : edges[b];
    e[3] = a[0];
    e[4] = a[2] > 0 ? a[1] / a[2] : NAN;
    e[5] = a[4] > 0 ? a[3] / a[4] : NAN;
    e[6] = a[6] > 0 ? a[5] / a[6] : NAN;
  }
  free(acc);
  free(edges);
  free(fin);
  *out = o;
  *n_out = 2 + 7 * nb;
  return RD_OK;
}

/* ---- report ------------------------------------------------------------------------------- */

/* The report's tasks, spread over ranks: 0-2 summarize TM, TG, CM ([n, mean, sd, q05, q25,
 * median, q75, q95]); 3 + s packs the strata of covariate s; the rest are chunks of bootstrap
 * replicates ([TM, TG, CM] per replicate). */
typedef struct cm_tasks {
  const cm_opts *o;
  int64_t P, U, n_chunks;
  const double *v[3];
  double *const *covs;
  const double *F;
  rd_stream stream;
  rd_progress *prog;  /* rank 0's bootstrap progress */
  int64_t prog_done;
} cm_tasks;

static void chunk_range(const cm_tasks *t, int64_t c, int64_t *b0, int64_t *b1) {
  rd_split_range(t->o->bootstrap, (int)t->n_chunks, (int)c, b0, b1);
}

static int cm_task(int64_t k, void *arg, double **out, int64_t *n_out, rd_status *st) {
  cm_tasks *t = arg;
  int64_t S = t->o->n_strata;
  if (k >= 3 + S) {
    int64_t b0, b1;
    chunk_range(t, k - 3 - S, &b0, &b1);
    *out = malloc(sizeof(double) * 3 * (size_t)((b1 - b0) ? (b1 - b0) : 1));
    if (!*out) return rd_fail(st, RD_EFAIL, "out of memory");
    bootstrap_block(&t->stream, t->F, t->U, b0, b1, *out, NULL);
    *n_out = 3 * (b1 - b0);
    if (t->prog) rd_progress_update(t->prog, t->prog_done += b1 - b0);
    return RD_OK;
  }
  if (k >= 3) return strata_pack(&t->o->strata[k - 3], t->covs[k - 3], t->P, t->v[0], t->v[1], t->v[2], out, n_out, st);
  rd_summary s;
  double *o = malloc(8 * sizeof(double));
  if (!o || rd_summarize(t->v[k], (size_t)t->P, &s) != 0) {
    free(o);
    return rd_fail(st, RD_EFAIL, "out of memory");
  }
  double vals[8] = {(double)s.n, s.mean, s.sd, s.q05, s.q25, s.median, s.q75, s.q95};
  memcpy(o, vals, sizeof vals);
  *out = o;
  *n_out = 8;
  return RD_OK;
}

static cJSON *summary_json(const double *t, double ci_lo, double ci_hi) {
  static const char *const keys[7] = {"mean", "sd", "q05", "q25", "median", "q75", "q95"};
  cJSON *o = cJSON_CreateObject();
  for (int i = 0; i < 7; i++) rd_json_add(o, keys[i], rd_json_num(t[1 + i]));
  rd_json_add(o, "ci95", rd_json_pair(ci_lo, ci_hi));
  return o;
}

/* Rank 0: the report from the tasks' results, the bootstrap replicates and the user sums. */
static int cm_report(const rd_job *job, const cm_layout *L, const cm_users *u, const double *cm, const double *F,
                     double *boot, int64_t B, double **res, cJSON **out, rd_status *st) {
  const cm_opts *o = job->opts;
  int64_t P = L->P;
  static const char *const names[3] = {"tm", "tg", "cm"};
  double lo[3] = {NAN, NAN, NAN}, hi[3] = {NAN, NAN, NAN};
  int64_t dropped[3] = {0, 0, 0};
  double *col = malloc(sizeof(double) * (size_t)(B ? B : 1));
  double *means = malloc(sizeof(double) * (size_t)(u->U ? u->U : 1));
  if (!col || !means) {
    free(col);
    free(means);
    return rd_fail(st, RD_EFAIL, "out of memory");
  }
  for (int j = 0; j < 3 && B > 0; j++) {
    for (int64_t b = 0; b < B; b++) col[b] = boot[b * 3 + j];
    dropped[j] = (int64_t)rd_percentile_ci95(col, (size_t)B, &lo[j], &hi[j]);
  }
  free(col);
  int64_t neg = 0;
  for (int64_t p = 0; p < P; p++) neg += cm[p] < 0.0;
  cJSON *r = cJSON_CreateObject();
  cJSON_AddNumberToObject(r, "n_pairs", (double)P);
  cJSON_AddNumberToObject(r, "n_users", (double)u->U);
  cJSON_AddNumberToObject(r, "n_runs", (double)L->R);
  for (int j = 0; j < 3; j++) {
    char key[32];
    snprintf(key, sizeof key, "n_%s_defined", names[j]);
    cJSON_AddNumberToObject(r, key, res[j][0]);
  }
  for (int j = 0; j < 3; j++) cJSON_AddItemToObject(r, names[j], summary_json(res[j], lo[j], hi[j]));
  rd_json_add(r, "cm_negative_fraction", rd_json_num(res[2][0] > 0 ? (double)neg / res[2][0] : NAN));
  /* user_macro: mean over users (with the value defined) of each user's mean */
  cJSON *um = cJSON_CreateObject();
  for (int j = 0; j < 3; j++) {
    int64_t n = 0;
    const double *sum = F + (2 * j) * u->U, *cnt = F + (2 * j + 1) * u->U;
    for (int64_t k = 0; k < u->U; k++)
      if (cnt[k] > 0) means[n++] = sum[k] / cnt[k];
    rd_json_add(um, names[j], rd_json_num(n > 0 ? rd_sum(means, (size_t)n) / (double)n : NAN));
  }
  free(means);
  cJSON_AddItemToObject(r, "user_macro", um);
  cJSON *strata = cJSON_AddArrayToObject(r, "strata");
  cJSON *excl = cJSON_AddObjectToObject(r, "strata_excluded");
  for (int i = 0; i < o->n_strata; i++) {
    const double *t = res[3 + i];
    const cm_stratum *sp = &o->strata[i];
    for (int64_t b = 0; b < (int64_t)t[1]; b++) {
      const double *e = t + 2 + 7 * b;
      cJSON *x = cJSON_CreateObject();
      cJSON_AddStringToObject(x, "covariate", sp->covariate);
      rd_json_add(x, "bin", rd_json_num(e[0]));
      rd_json_add(x, "lo", rd_json_num(e[1]));
      rd_json_add(x, "hi", rd_json_num(e[2]));
      cJSON_AddNumberToObject(x, "n", e[3]);
      rd_json_add(x, "tm", rd_json_num(e[4]));
      rd_json_add(x, "tg", rd_json_num(e[5]));
      rd_json_add(x, "cm", rd_json_num(e[6]));
      cJSON_AddItemToArray(strata, x);
    }
    cJSON_AddNumberToObject(excl, sp->covariate, t[0]);
  }
  cJSON *bo = cJSON_AddObjectToObject(r, "bootstrap");
  cJSON_AddNumberToObject(bo, "resamples", (double)B);
  cJSON_AddStringToObject(bo, "unit", "user");
  cJSON *dr = cJSON_AddObjectToObject(bo, "dropped");
  for (int j = 0; j < 3; j++) cJSON_AddNumberToObject(dr, names[j], (double)dropped[j]);
  *out = r;
  return RD_OK;
}

/* A short table on stdout (rank 0) for people reading the run. */
static void cm_print(FILE *fp, const rd_job *job, const cJSON *r) {
  if (!fp) return;
  fprintf(fp, "cm %s: %.0f pairs, %.0f users, %.0f runs\n", job->name,
          cJSON_GetObjectItem(r, "n_pairs")->valuedouble, cJSON_GetObjectItem(r, "n_users")->valuedouble,
          cJSON_GetObjectItem(r, "n_runs")->valuedouble);
  fprintf(fp, "      %9s  %-22s %9s %9s\n", "mean", "95% CI (users)", "median", "defined");
  static const char *const names[3] = {"tm", "tg", "cm"};
  for (int j = 0; j < 3; j++) {
    const cJSON *s = cJSON_GetObjectItem(r, names[j]);
    const cJSON *m = cJSON_GetObjectItem(s, "mean"), *md = cJSON_GetObjectItem(s, "median");
    const cJSON *ci = cJSON_GetObjectItem(s, "ci95");
    char cis[48] = "-";
    if (cJSON_IsArray(ci))
      snprintf(cis, sizeof cis, "[%.4f, %.4f]", cJSON_GetArrayItem(ci, 0)->valuedouble,
               cJSON_GetArrayItem(ci, 1)->valuedouble);
    char key[32];
    snprintf(key, sizeof key, "n_%s_defined", names[j]);
    fprintf(fp, "  %s  %9.4f  %-22s %9.4f %9.0f\n", j == 0 ? "TM" : j == 1 ? "TG" : "CM",
            cJSON_IsNumber(m) ? m->valuedouble : NAN, cis, cJSON_IsNumber(md) ? md->valuedouble : NAN,
            cJSON_GetObjectItem(r, key)->valuedouble);
  }
  const cJSON *neg = cJSON_GetObjectItem(r, "cm_negative_fraction");
  if (cJSON_IsNumber(neg)) fprintf(fp, "  pairs with CM < 0: %.1f %%\n", 100.0 * neg->valuedouble);
}

static int cm_write_h5(hid_t h5, int64_t P, int64_t R, const double *tm, const double *tg, const double *cm,
                       const int32_t *n_train, rd_status *st) {
  int32_t *n_held = malloc(sizeof(int32_t) * (size_t)P);
  if (!n_held) return rd_fail(st, RD_EFAIL, "out of memory");
  for (int64_t p = 0; p < P; p++) n_held[p] = (int32_t)R - n_train[p];
  int64_t dims[1] = {P};
  int rc = rd_h5_write_f64(h5, "/cm/tm", 1, dims, tm, st);
  if (rc == RD_OK) rc = rd_h5_write_f64(h5, "/cm/tg", 1, dims, tg, st);
  if (rc == RD_OK) rc = rd_h5_write_f64(h5, "/cm/cm", 1, dims, cm, st);
  if (rc == RD_OK) rc = rd_h5_write_i32(h5, "/cm/n_train", 1, dims, n_train, st);
  if (rc == RD_OK) rc = rd_h5_write_i32(h5, "/cm/n_held", 1, dims, n_held, st);
  free(n_held);
  return rc;
}

/* ---- run ------------------------------------------------------------------------------------ */

/* What phases 1-2 leave for the computation: the layout, users, covariates (rank 0) and the
 * rank's checked rows. */
typedef struct cm_input {
  cm_layout L;
  cm_users u;
  cm_rows w;
  double **covs;  /* one per stratum; rank 0 */
  hid_t f;        /* open (MPI-IO) only when some dataset is read rather than mapped */
} cm_input;

static void input_free(cm_input *in, int n_strata) {
  if (in->f >= 0) rd_h5_close(in->f);
  rows_free(&in->w);
  users_free(&in->u);
  for (int i = 0; in->covs && i < n_strata; i++) free(in->covs[i]);
  free(in->covs);
  free(in->L.cov);
  memset(in, 0, sizeof *in);
  in->f = H5I_INVALID_HID;
}

/* Categories are grouped by their float64 value: integer categories beyond 2^53 (which float64 cannot
 * tell apart) are an error naming the first one, rather than merged. */
static int categories_exact(hid_t f, const char *file, const rd_dsinfo *info, int64_t P, rd_status *st) {
  uint64_t *w = rd_malloc(sizeof(uint64_t) * (size_t)(P ? P : 1), st, "covariate");
  if (!w || rd_h5_read_int_words(f, file, info, 0, P, w, st) != RD_OK) {
    free(w);
    return st->code;
  }
  const uint64_t lim = (uint64_t)1 << 53;
  for (int64_t i = 0; i < P; i++) {
    int over = info->is_signed ? ((int64_t)w[i] > (int64_t)lim || (int64_t)w[i] < -(int64_t)lim) : w[i] > lim;
    if (over) {
      if (info->is_signed)
        rd_fail(st, RD_EINPUT, "%s: %s[%lld] = %lld: a categorical covariate's integer values must be within "
                "+-2^53 (they are compared as float64)", file, info->path, (long long)i, (long long)(int64_t)w[i]);
      else
        rd_fail(st, RD_EINPUT, "%s: %s[%lld] = %llu: a categorical covariate's integer values must be within "
                "+-2^53 (they are compared as float64)", file, info->path, (long long)i, (unsigned long long)w[i]);
      break;
    }
  }
  free(w);
  return st->code;
}

/* Phases 1-2 (collective): rank 0 checks the layout and reads users and covariates; every rank
 * maps or reads its rows; values, then the user split, are checked, each phase ending agreed. */
static int cm_load(const rd_ctx *ctx, const rd_job *job, cm_input *in, rd_status *st) {
  const cm_opts *o = job->opts;
  hid_t f = H5I_INVALID_HID;
  memset(in, 0, sizeof *in);
  in->f = H5I_INVALID_HID;
  in->covs = calloc((size_t)(o->n_strata ? o->n_strata : 1), sizeof *in->covs);
  if (!in->covs) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  cm_layout *L = &in->L;

  /* Phase 1 (rank 0): layout, users and covariates. */
  if (ctx->rank == 0) {
    if (rd_h5_open(job->input, MPI_COMM_NULL, &f, st) == RD_OK) {
      if (cm_check_layout(f, job, L, st) == RD_OK && users_read(f, job, L, &in->u, st) == RD_OK) {
        layout_offsets(f, L);
        for (int i = 0; i < o->n_strata && st->code == RD_OK; i++) {
          in->covs[i] = rd_malloc(sizeof(double) * (size_t)L->P, st, "covariate");
          if (in->covs[i]) rd_h5_read_numeric(f, job->input, &L->cov[i], in->covs[i], st);
          if (st->code == RD_OK && o->strata[i].bins == 0 && L->cov[i].tclass == RD_TC_INT)
            categories_exact(f, job->input, &L->cov[i], L->P, st);
        }
      }
      rd_h5_close(f);
    }
  }
  if (rd_share_status(ctx, st, 0) != RD_OK) return st->code;
  /* every rank gets the layout (sizes, types, dataset paths, mappable offsets) */
  rd_dsinfo *cov_keep = L->cov;
  L->cov = NULL;
  rd_bcast_bytes(ctx, L, sizeof *L, 0);
  L->cov = ctx->rank == 0 ? cov_keep : NULL;
  users_share(ctx, L->P, &in->u, st);
  rd_timing_mark(ctx->rank, job->name, "users+covariates");

  /* Phase 2 (every rank): map or read, and check, the rank's blocks. HDF5 (MPI-IO driver) is
   * opened only when a dataset cannot be mapped (chunked, compressed, or another type). */
  rd_rank_rows(L->P, CM_BLOCK, ctx->size, ctx->rank, &in->w.lo, &in->w.hi);
  if (L->offset[0] < 0 || L->offset[1] < 0 || L->offset[2] < 0) rd_h5_open(job->input, ctx->comm, &in->f, st);
  if (st->code == RD_OK) rows_read(ctx, in->f, job, L, &in->w, st);
  if (rd_agree(ctx, st) != RD_OK) return st->code;
  rd_timing_mark(ctx->rank, job->name, "read+check values");
  check_split(ctx, job, L, &in->u, &in->w, st);
  if (rd_agree(ctx, st) != RD_OK) return st->code;
  rd_timing_mark(ctx->rank, job->name, "user split check");
  return RD_OK;
}

/* Every check the report would make on the input's values, without computing it. */
static int cm_check(const rd_ctx *ctx, const rd_job *job, const rd_jobfile *jf, rd_status *st) {
  (void)jf;
  cm_input in;
  cm_load(ctx, job, &in, st);
  input_free(&in, ((const cm_opts *)job->opts)->n_strata);
  return st->code;
}

static int cm_run(const rd_ctx *ctx, const rd_job *job, const rd_jobfile *jf, rd_run_out *out, rd_status *st) {
  const cm_opts *o = job->opts;
  cm_input in;
  double *tm_all = NULL, *tg_all = NULL, *cm_all = NULL, *F = NULL, *boot_all = NULL;
  double *tm = NULL, *tg = NULL;
  int32_t *ntr = NULL, *ntr_all = NULL;
  rd_progress prog;
  /* the loaded input moves into these locals, which the cleanup below frees */
  cm_layout L;
  cm_users u;
  cm_rows w;
  memset(&L, 0, sizeof L);
  memset(&u, 0, sizeof u);
  memset(&w, 0, sizeof w);
  double **covs = NULL;
  if (cm_load(ctx, job, &in, st) != RD_OK) {
    input_free(&in, o->n_strata);
    return st->code;
  }
  L = in.L;
  u = in.u;
  w = in.w;
  covs = in.covs;
  memset(&in.L, 0, sizeof in.L);
  memset(&in.u, 0, sizeof in.u);
  memset(&in.w, 0, sizeof in.w);
  in.covs = NULL;

  /* Phase 3: per-pair TM and TG with the backend kernel. */
  int64_t n = w.hi - w.lo;
  tm = malloc(sizeof(double) * (size_t)(n ? n : 1));
  tg = malloc(sizeof(double) * (size_t)(n ? n : 1));
  ntr = malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
  if (!tm || !tg || !ntr) rd_abort(ctx, __FILE__, __LINE__, "out of memory for per-pair values");
  if (n > 0) {
    rd_cm_block blk = {.n_pairs = n, .n_runs = L.R, .ftype = L.ftype, .reward_chosen = w.rc,
                       .reward_rejected = w.rr, .in_train = w.flag};
    rd_cm_pairs res = {.tm = tm, .tg = tg, .n_train = ntr};
    char err[512] = "";
    const rd_backend *b = RD_BACKEND_FOR(ctx->backend, cm, pairs);
    if (b->cm->pairs(&blk, &res, err, sizeof err) != 0)
      rd_fail(st, RD_EFAIL, "%s backend failed in the cm kernel: %s", b->name, err);
  }
  if (rd_agree(ctx, st) != RD_OK) goto done;
  rows_free(&w);
  memset(&w, 0, sizeof w);

  rd_timing_mark(ctx->rank, job->name, "pair kernel");
  /* Phase 4: every rank gets the per-pair values in pair order and forms the per-user sums
   * (identical everywhere, so nothing needs broadcasting); rank 0 sends the covariates. */
  int64_t P = L.P;
  tm_all = malloc(sizeof(double) * (size_t)P);
  tg_all = malloc(sizeof(double) * (size_t)P);
  cm_all = malloc(sizeof(double) * (size_t)P);
  ntr_all = malloc(sizeof(int32_t) * (size_t)P);
  if (!tm_all || !tg_all || !cm_all || !ntr_all) rd_abort(ctx, __FILE__, __LINE__, "out of memory for per-pair values");
  rd_allgather_rows(ctx, tm, tm_all, P, CM_BLOCK, sizeof(double));
  rd_allgather_rows(ctx, tg, tg_all, P, CM_BLOCK, sizeof(double));
  rd_gather_rows(ctx, ntr, ntr_all, P, CM_BLOCK, sizeof(int32_t));
  for (int64_t p = 0; p < P; p++) cm_all[p] = tm_all[p] - tg_all[p];
  F = user_sums(&u, P, tm_all, tg_all, cm_all);
  if (!F) rd_abort(ctx, __FILE__, __LINE__, "out of memory for user sums");
  for (int i = 0; i < o->n_strata; i++) {
    if (ctx->rank != 0 && !(covs[i] = malloc(sizeof(double) * (size_t)P)))
      rd_abort(ctx, __FILE__, __LINE__, "out of memory for covariates");
    rd_bcast_bytes(ctx, covs[i], sizeof(double) * (size_t)P, 0);
  }
  if (ctx->rank == 0 && !(boot_all = malloc(sizeof(double) * 3 * (size_t)(o->bootstrap ? o->bootstrap : 1))))
    rd_abort(ctx, __FILE__, __LINE__, "out of memory for the bootstrap");
  rd_timing_mark(ctx->rank, job->name, "gather+user sums");

  /* Phase 5: summaries, strata and chunks of bootstrap replicates, as tasks over ranks
   * (balanced on estimated costs: about 10 ns per pair for a summary, 22 for strata, 3.6 per
   * drawn user); rank 0 assembles the report and writes the outputs. */
  int64_t B = o->bootstrap, S = o->n_strata;
  cm_tasks tasks = {.o = o, .P = P, .U = u.U, .v = {tm_all, tg_all, cm_all}, .covs = covs, .F = F};
  tasks.n_chunks = B == 0 ? 0 : (B < 8 * (int64_t)ctx->size ? B : 8 * (int64_t)ctx->size);
  rd_stream_init(&tasks.stream, jf->seed, job->name, "cm.bootstrap.users");
  int64_t n_tasks = 3 + S + tasks.n_chunks;
  double *cost = malloc(sizeof(double) * (size_t)n_tasks);
  int *owner = malloc(sizeof(int) * (size_t)n_tasks);
  if (!cost || !owner) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  for (int64_t k = 0; k < n_tasks; k++) {
    int64_t b0 = 0, b1 = 0;
    if (k >= 3 + S) chunk_range(&tasks, k - 3 - S, &b0, &b1);
    cost[k] = k < 3 ? 10e-9 * (double)P : k < 3 + S ? 22e-9 * (double)P : 3.6e-9 * (double)(b1 - b0) * (double)u.U;
  }
  rd_assign_tasks(n_tasks, cost, ctx->size, owner);
  int64_t mine = 0;
  for (int64_t k = 3 + S; k < n_tasks; k++)
    if (owner[k] == ctx->rank) {
      int64_t b0, b1;
      chunk_range(&tasks, k - 3 - S, &b0, &b1);
      mine += b1 - b0;
    }
  rd_progress_begin(&prog, ctx->quiet || B == 0 ? NULL : ctx->err, job->name, "bootstrap", mine);
  tasks.prog = &prog;
  double **res = NULL;
  int64_t *lens = NULL;
  if (rd_run_tasks(ctx, n_tasks, cost, cm_task, &tasks, &res, &lens, st) == RD_OK && ctx->rank == 0) {
    rd_progress_end(&prog);
    rd_timing_mark(ctx->rank, job->name, "summaries+bootstrap");
    for (int64_t k = 3 + S, pos = 0; k < n_tasks; k++) {
      memcpy(boot_all + pos, res[k], sizeof(double) * (size_t)lens[k]);
      pos += lens[k];
    }
    if (cm_report(job, &L, &u, cm_all, F, boot_all, B, res, &out->result, st) == RD_OK &&
        cm_write_h5(out->h5, P, L.R, tm_all, tg_all, cm_all, ntr_all, st) == RD_OK && ctx->out)
      cm_print(ctx->out, job, out->result);  /* stdout: --quiet silences stderr only */
    rd_timing_mark(ctx->rank, job->name, "report+h5");
  }
  rd_free_task_results(res, lens, n_tasks);
  free(cost);
  free(owner);
  rd_share_status(ctx, st, 0);

done:
  input_free(&in, o->n_strata);
  rows_free(&w);
  users_free(&u);
  for (int i = 0; covs && i < o->n_strata; i++) free(covs[i]);
  free(covs);
  free(L.cov);
  free(tm);
  free(tg);
  free(ntr);
  free(tm_all);
  free(tg_all);
  free(cm_all);
  free(ntr_all);
  free(F);
  free(boot_all);
  return st->code;
}

const rd_kind rd_kind_cm = {
    .name = "cm",
    .default_group = "/cm",
    .option_keys = cm_keys,
    .parse = cm_parse,
    .free_opts = cm_free_opts,
    .validate = cm_validate,
    .check = cm_check,
    .run = cm_run,
};
