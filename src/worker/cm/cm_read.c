/* cm: reading and checking the input. Rank 0 checks the layout and reads the covariates; every rank
 * numbers the users of its pairs (cm_users.c) and maps or reads its own blocks of rows; one pass
 * over them checks the values and the user split and, on the CPU, computes the per-pair values. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_internal.h"
#include "rmdiag/kernels/backend.h"
#include "rmdiag/kernels/cm.h"
#include "rmdiag/kernels/scan.h"

void cm_rows_free(cm_rows *w) {
  for (int i = 0; i < 3; i++) {
    free(w->own[i]);
    rd_h5_unmap(&w->map[i]);
    w->own[i] = NULL;
  }
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

/* Maps or reads the rank's rows of the three datasets. good[which] counts the rows read before a
 * read that failed (whose error is then in st, keyed by its block); values past it are not checked.
 * Other failures (memory, mapping) leave a dataset NULL. */
static void rows_load(hid_t f, const rd_job *job, const cm_layout *L, cm_rows *w, int64_t good[3], rd_status *st) {
  int64_t n = w->hi - w->lo, R = L->R;
  for (int i = 0; i < 3; i++) good[i] = n;
  if (n == 0) return;
  /* this rank's rows of the datasets read rather than mapped must fit in memory (a small compressed
   * file can declare more than any machine holds) */
  double need = 0;
  for (int which = 0; which < 3; which++)
    if (L->offset[which] < 0) need += (double)n * (double)R * (which == 2 ? 1.0 : L->ftype == RD_F32 ? 4.0 : 8.0);
  if (rd_h5_check_memory(job->input, &L->rc, need, "holding this rank's rows of the [P, R] datasets", st) != RD_OK)
    return;
  /* a read that fails leaves an error keyed by its failing block; the values before it are checked
   * all the same (rd_fail_at keeps the lowest key) */
  if (!(w->rc = rows_get(f, job, L, 0, w->lo, n, w, &good[0], st))) return;
  if (!(w->rr = rows_get(f, job, L, 1, w->lo, n, w, &good[1], st))) return;
  /* in_train: mapped when stored as uint8 (then scanned for values other than 0/1 with the rewards),
   * else read and checked while widening; bad values get keys (element * 3 + 2) */
  w->flag = rows_get(f, job, L, 2, w->lo, n, w, &good[2], st);
}

/* The split is by user: in every run all pairs of a user share in_train. The table of each user's
 * first pair's flags ([U, R], 0xFF where unknown) is assembled from the ranks that own those pairs.
 * Collective; a rank whose rows failed to load adds nothing. */
static uint8_t *split_table(const rd_ctx *ctx, const cm_layout *L, const cm_users *u, const cm_rows *w) {
  int64_t R = L->R, U = u->U;
  size_t n = (size_t)(U * R);
  uint8_t *mine = malloc(n ? n : 1), *all = malloc(n ? n : 1);
  if (!mine || !all) rd_abort(ctx, __FILE__, __LINE__, "out of memory for the user split table");
  memset(mine, 0xFF, n);
  if (w->flag)
    for (int64_t k = 0; k < U; k++)
      if (u->first_pair[k] >= w->lo && u->first_pair[k] < w->hi)
        memcpy(mine + (size_t)k * (size_t)R, w->flag + (u->first_pair[k] - w->lo) * R, (size_t)R);
  for (size_t off = 0; off < n; off += (size_t)1 << 30) {
    int cnt = (int)(n - off < ((size_t)1 << 30) ? n - off : ((size_t)1 << 30));
    RD_MPI_CHECK(ctx, MPI_Allreduce(mine + off, all + off, cnt, MPI_UNSIGNED_CHAR, MPI_MIN, ctx->comm));
  }
  free(mine);
  return all;
}

/* The value checks of local pairs [a, b): the first bad value of each dataset in it (rd_fail_at
 * keeps the lowest key). Returns 1 when one was found: later chunks only hold larger keys. */
static int check_chunk(const rd_job *job, const cm_layout *L, const cm_rows *w, const int64_t good[3], int64_t a,
                       int64_t b, rd_status *st) {
  int64_t R = L->R;
  int f32 = L->ftype == RD_F32, found = 0;
  if (L->offset[2] >= 0) {
    const uint8_t *fl = w->flag + a * R;
    int64_t i = rd_first_above_u8(fl, (b - a) * R, 1);
    if (i >= 0) {
      int64_t p = w->lo + a + i / R, r = i % R;
      rd_fail_at(st, RD_EINPUT, (p * R + r) * 3 + 2, "%s: %s[%lld, %lld] = %u, expected 0 or 1", job->input,
                 L->flag.path, (long long)p, (long long)r, fl[i]);
      found = 1;
    }
  }
  for (int which = 0; which < 2; which++) {
    const rd_dsinfo *ds = which ? &L->rr : &L->rc;
    int64_t lim = b < good[which] ? b : good[which];
    if (lim <= a) continue;
    const void *buf = which ? w->rr : w->rc;
    int64_t i = f32 ? rd_first_nonfinite_f32((const float *)buf + a * R, (lim - a) * R)
                    : rd_first_nonfinite_f64((const double *)buf + a * R, (lim - a) * R);
    if (i >= 0) {
      i += a * R;
      double v = f32 ? (double)((const float *)buf)[i] : ((const double *)buf)[i];
      int64_t p = w->lo + i / R, r = i % R;
      rd_fail_at(st, RD_EINPUT, (p * R + r) * 3 + which,
                 "%s: %s[%lld, %lld] = %g (pair %lld, run %lld), expected a finite reward", job->input, ds->path,
                 (long long)p, (long long)r, v, (long long)p, (long long)r);
      found = 1;
    }
  }
  return found;
}

/* The user split of local pairs [a, b) against the table; returns 1 at the first pair that differs. */
static int split_chunk(const rd_job *job, const cm_layout *L, const cm_users *u, const cm_rows *w, const uint8_t *ref,
                       int64_t a, int64_t b, rd_status *st) {
  int64_t R = L->R;
  for (int64_t i = a; i < b; i++) {
    if (i + 8 < b) __builtin_prefetch(ref + (size_t)u->of_pair[i + 8] * (size_t)R);  /* scattered users */
    int32_t k = u->of_pair[i];
    const uint8_t *t = ref + (size_t)k * (size_t)R, *m = w->flag + i * R;
    if (memcmp(m, t, (size_t)R) == 0) continue;
    int64_t r = 0, p = w->lo + i;
    while (m[r] == t[r]) r++;
    cm_split_fail(job, L, u->labels + u->label_off[k], p, r, u->first_pair[k], m[r], t[r], st);
    return 1;
  }
  return 0;
}

/* One pass over the rank's rows, a chunk of about 4096 values at a time: the value checks (vst),
 * the user split (sst) and, with v, the CPU kernel, while the chunk is in cache. After a bad value
 * nothing else matters (the run stops), so the pass ends there. */
static void scan_rows(const rd_job *job, const cm_layout *L, const cm_users *u, const cm_rows *w, const int64_t good[3],
                      const uint8_t *ref, cm_values *v, rd_status *vst, rd_status *sst) {
  int64_t n = w->hi - w->lo, R = L->R, per = rd_cm_chunk_pairs(R);
  if (n == 0 || !w->rc || !w->rr || !w->flag) return;
  size_t es = L->ftype == RD_F32 ? sizeof(float) : sizeof(double);
  double *work = v ? malloc(sizeof(double) * 2 * (size_t)(per * R)) : NULL;
  if (v && !work) {
    rd_fail(vst, RD_EFAIL, "out of memory");
    return;
  }
  int checking = 1, splitting = 1;
  for (int64_t a = 0; a < n; a += per) {
    int64_t b = n - a < per ? n : a + per;
    int bad = vst->code != RD_OK;  /* a read failed: values before it are still checked */
    if (checking && check_chunk(job, L, w, good, a, b, vst)) checking = 0, bad = 1;
    if (bad) {
      if (!checking || a >= good[0] || a >= good[1]) break;
      continue;
    }
    if (splitting && split_chunk(job, L, u, w, ref, a, b, sst)) splitting = 0;
    if (v) {
      rd_cm_block blk = {.n_pairs = b - a, .n_runs = R, .ftype = L->ftype,
                         .reward_chosen = (const char *)w->rc + (size_t)(a * R) * es,
                         .reward_rejected = (const char *)w->rr + (size_t)(a * R) * es, .in_train = w->flag + a * R};
      rd_cm_pairs res = {.tm = v->tm + a, .tg = v->tg + a, .n_train = v->n_train + a};
      rd_cm_pairs_cpu_chunk(&blk, &res, work);
    }
  }
  free(work);
}

void cm_input_free(cm_input *in, int n_strata) {
  if (in->f >= 0) rd_h5_close(in->f);
  cm_rows_free(&in->w);
  cm_users_free(&in->u);
  for (int i = 0; in->covs && i < n_strata; i++) free(in->covs[i]);
  free(in->covs);
  for (int i = 0; in->L.cats && i < n_strata; i++) cm_categories_free(&in->L.cats[i]);
  free(in->L.cats);
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

/* Rank 0: the covariates (and, for categorical ones, that integers are exact in float64). f: the
 * input open on every rank, or invalid (then rank 0 opens it alone). */
static int covariates_read(const rd_ctx *ctx, const rd_job *job, cm_input *in, rd_status *st) {
  const cm_opts *o = job->opts;
  if (ctx->rank != 0 || o->n_strata == 0) return RD_OK;
  hid_t f = in->f;
  if (f < 0 && rd_h5_open(job->input, MPI_COMM_NULL, &f, st) != RD_OK) return st->code;
  in->L.cats = calloc((size_t)o->n_strata, sizeof *in->L.cats);
  if (!in->L.cats) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  for (int i = 0; i < o->n_strata && st->code == RD_OK; i++) {
    in->covs[i] = rd_malloc(sizeof(double) * (size_t)in->L.P, st, "covariate");
    if (in->covs[i] && in->L.cov[i].tclass == RD_TC_STRING)  /* category names: codes in name order */
      cm_categories_read(f, job->input, &in->L.cov[i], in->covs[i], &in->L.cats[i], st);
    else if (in->covs[i]) rd_h5_read_numeric(f, job->input, &in->L.cov[i], in->covs[i], st);
    if (st->code == RD_OK && o->strata[i].bins == 0 && in->L.cov[i].tclass == RD_TC_INT)
      categories_exact(f, job->input, &in->L.cov[i], in->L.P, st);
  }
  if (f != in->f) rd_h5_close(f);
  return st->code;
}

int cm_load(const rd_ctx *ctx, const rd_job *job, cm_input *in, cm_values *v, rd_status *st) {
  const cm_opts *o = job->opts;
  hid_t f = H5I_INVALID_HID;
  memset(in, 0, sizeof *in);
  in->f = H5I_INVALID_HID;
  in->covs = calloc((size_t)(o->n_strata ? o->n_strata : 1), sizeof *in->covs);
  if (!in->covs) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  cm_layout *L = &in->L;

  /* Phase 1: rank 0 checks the layout, finds what can be mapped and numbers string ids. */
  if (ctx->rank == 0 && rd_h5_open(job->input, MPI_COMM_NULL, &f, st) == RD_OK) {
    if (cm_check_layout(f, job, L, st) == RD_OK) {
      cm_layout_offsets(f, L);
      if (L->user.tclass == RD_TC_STRING) cm_users_read_all(f, job, L, &in->u, st);
    }
    rd_h5_close(f);
  }
  if (rd_share_status(ctx, st, 0) != RD_OK) return st->code;
  /* every rank gets the layout (sizes, types, dataset paths, mappable offsets) */
  rd_dsinfo *cov_keep = L->cov;
  cm_categories *cats_keep = L->cats;
  L->cov = NULL;
  L->cats = NULL;
  rd_bcast_bytes(ctx, L, sizeof *L, 0);
  L->cov = ctx->rank == 0 ? cov_keep : NULL;
  L->cats = ctx->rank == 0 ? cats_keep : NULL;
  /* HDF5 (MPI-IO driver) is opened only when a dataset cannot be mapped (chunked, compressed, or
   * another type) */
  rd_rank_rows(L->P, CM_BLOCK, ctx->size, ctx->rank, &in->w.lo, &in->w.hi);
  if (L->offset[0] < 0 || L->offset[1] < 0 || L->offset[2] < 0 || (L->user.tclass != RD_TC_STRING && L->user_offset < 0))
    rd_h5_open(job->input, ctx->comm, &in->f, st);
  if (rd_agree(ctx, st) != RD_OK) return st->code;
  if (cm_users_load(ctx, job, L, in->f, in->w.lo, in->w.hi, &in->u, st) != RD_OK) return st->code;
  covariates_read(ctx, job, in, st);
  if (rd_share_status(ctx, st, 0) != RD_OK) return st->code;
  rd_timing_mark(ctx->rank, job->name, "users+covariates");

  /* Phase 2 (every rank): map or read the rank's rows; one pass checks values and the user split
   * (and computes, with v); each check ends agreed, values first. */
  int64_t good[3];
  rows_load(in->f, job, L, &in->w, good, st);
  uint8_t *ref = split_table(ctx, L, &in->u, &in->w);
  rd_timing_mark(ctx->rank, job->name, "map rows+split table");
  int fused = v && RD_BACKEND_FOR(ctx->backend, cm, pairs) == &rd_backend_cpu;
  if (v) cm_values_alloc(ctx, L->P, in->w.lo, in->w.hi, v);
  rd_status split;
  rd_status_init(&split);
  scan_rows(job, L, &in->u, &in->w, good, ref, fused ? v : NULL, st, &split);
  free(ref);
  rd_barrier_paced(ctx);  /* ranks that finish first leave their cores to the others */
  if (rd_agree(ctx, st) != RD_OK) return st->code;
  if (rd_agree(ctx, &split) != RD_OK) {
    *st = split;
    return st->code;
  }
  if (v) v->computed = fused;
  rd_timing_mark(ctx->rank, job->name, fused ? "check values+pair kernel" : "check values");
  return RD_OK;
}

int cm_check(const rd_ctx *ctx, const rd_job *job, const rd_jobfile *jf, rd_status *st) {
  (void)jf;
  cm_input in;
  cm_load(ctx, job, &in, NULL, st);
  cm_input_free(&in, ((const cm_opts *)job->opts)->n_strata);
  return st->code;
}
