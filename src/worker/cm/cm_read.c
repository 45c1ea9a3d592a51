/* cm: reading and checking the input. Rank 0 numbers the users and reads the covariates; every
 * rank maps or reads its own blocks of rows; then the values and the user split are checked. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_internal.h"
#include "rmdiag/common/idmap.h"
#include "rmdiag/kernels/scan.h"

void cm_users_free(cm_users *u) {
  free(u->of_pair);
  free(u->first_pair);
  free(u->labels);
  free(u->label_off);
  memset(u, 0, sizeof *u);
}

/* Integer user ids: an open-addressing table keyed by the id (the common case, and the hot one),
 * doubled when half full, in front of the general map that numbers users in order of first
 * appearance and keeps their labels. */
typedef struct id_table {
  size_t cap, used;
  uint64_t *key;
  int32_t *val;  /* -1: empty slot */
} id_table;

static size_t id_slot(uint64_t id, size_t cap) { return (size_t)((id * 0x9E3779B97F4A7C15ull) >> 20) & (cap - 1); }

static int id_table_init(id_table *t, size_t cap) {
  t->cap = cap;
  t->used = 0;
  t->key = malloc(sizeof(uint64_t) * cap);
  t->val = malloc(sizeof(int32_t) * cap);
  if (!t->key || !t->val) return -1;
  for (size_t i = 0; i < cap; i++) t->val[i] = -1;
  return 0;
}

static void id_table_free(id_table *t) {
  free(t->key);
  free(t->val);
  memset(t, 0, sizeof *t);
}

/* Doubles the table; returns -1 when out of memory (the old table stays valid). */
static int id_table_grow(id_table *t) {
  id_table n;
  if (id_table_init(&n, 2 * t->cap) != 0) {
    id_table_free(&n);
    return -1;
  }
  for (size_t i = 0; i < t->cap; i++) {
    if (t->val[i] < 0) continue;
    size_t s = id_slot(t->key[i], n.cap);
    while (n.val[s] >= 0) s = (s + 1) & (n.cap - 1);
    n.key[s] = t->key[i];
    n.val[s] = t->val[i];
  }
  n.used = t->used;
  id_table_free(t);
  *t = n;
  return 0;
}

/* The user number of integer id `id` (adding it to `m` when new); -1 when out of memory, a value
 * above INT32_MAX when there are too many users. */
static int64_t id_number(id_table *t, rd_idmap *m, uint64_t id) {
  size_t s = id_slot(id, t->cap);
  while (t->val[s] >= 0 && t->key[s] != id) s = (s + 1) & (t->cap - 1);
  if (t->val[s] >= 0) return t->val[s];
  int64_t k = rd_idmap_get(m, &id, sizeof id, NULL);
  if (k < 0 || k > INT32_MAX) return k;
  t->key[s] = id;
  t->val[s] = (int32_t)k;
  if (2 * ++t->used > t->cap && id_table_grow(t) != 0) return -1;
  return k;
}

/* The users' labels for messages: "quoted" strings, or the integer ids as written. */
static int users_labels(const rd_idmap *m, int is_string, int is_signed, cm_users *u, rd_status *st) {
  u->U = m->n;
  u->label_off = rd_malloc(sizeof(int64_t) * (size_t)(u->U + 1), st, "user labels");
  size_t total = 0;
  for (int64_t k = 0; k < u->U; k++) total += is_string ? m->lens[k] + 3 : 24;
  u->labels = u->label_off ? rd_malloc(total + 1, st, "user labels") : NULL;
  if (!u->labels) return st->code;
  size_t pos = 0;
  for (int64_t k = 0; k < u->U; k++) {
    u->label_off[k] = (int64_t)pos;
    if (is_string) {
      pos += (size_t)sprintf(u->labels + pos, "\"%s\"", m->keys[k]) + 1;
    } else {
      uint64_t v;
      memcpy(&v, m->keys[k], sizeof v);
      if (is_signed) pos += (size_t)sprintf(u->labels + pos, "%lld", (long long)(int64_t)v) + 1;
      else pos += (size_t)sprintf(u->labels + pos, "%llu", (unsigned long long)v) + 1;
    }
  }
  u->label_off[u->U] = (int64_t)pos;
  u->labels_len = pos;
  return RD_OK;
}

/* Rank 0: reads the user column and numbers users by first appearance. */
static int cm_users_read(hid_t f, const rd_job *job, const cm_layout *L, cm_users *u, rd_status *st) {
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
  id_table t = {0};
  if (rc == RD_OK) {
    if (is_string) {
      rc = rd_h5_read_strings(f, job->input, &L->user, &sbuf, &slen, &soff, st);
    } else {
      ids = rd_malloc(sizeof(uint64_t) * (size_t)P, st, "user ids");
      rc = ids ? rd_h5_read_int_words(f, job->input, &L->user, 0, P, ids, st) : st->code;
      if (rc == RD_OK && id_table_init(&t, 4096) != 0) rc = rd_fail(st, RD_EFAIL, "out of memory numbering users");
    }
  }
  for (int64_t p = 0; rc == RD_OK && p < P; p++) {
    int64_t id = is_string ? rd_idmap_get(&m, sbuf + soff[p], strlen(sbuf + soff[p]), NULL) : id_number(&t, &m, ids[p]);
    if (id < 0) rc = rd_fail(st, RD_EFAIL, "out of memory numbering users");
    else if (id > INT32_MAX) rc = rd_fail(st, RD_EINPUT, "%s: more than 2^31 users", job->input);
    else u->of_pair[p] = (int32_t)id;
  }
  id_table_free(&t);
  if (rc == RD_OK) rc = users_labels(&m, is_string, L->user.is_signed, u, st);
  free(sbuf);
  free(soff);
  free(ids);
  rd_idmap_free(&m);
  return rc;
}

/* Every rank: broadcast of the user table, then the first pair of each user. */
static int cm_users_share(const rd_ctx *ctx, int64_t P, cm_users *u, rd_status *st) {
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

static int rows_read(const rd_ctx *ctx, hid_t f, const rd_job *job, const cm_layout *L, cm_rows *w, rd_status *st) {
  (void)ctx;
  int64_t n = w->hi - w->lo, R = L->R, good[3];
  int f32 = L->ftype == RD_F32;
  if (n == 0) return RD_OK;
  /* this rank's rows of the datasets read rather than mapped must fit in memory (a small compressed
   * file can declare more than any machine holds) */
  double need = 0;
  for (int which = 0; which < 3; which++)
    if (L->offset[which] < 0) need += (double)n * (double)R * (which == 2 ? 1.0 : f32 ? 4.0 : 8.0);
  RD_TRY(rd_h5_check_memory(job->input, &L->rc, need, "holding this rank's rows of the [P, R] datasets", st));
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
        cm_split_fail(job, L, u->labels + u->label_off[k], p, r, u->first_pair[k], m[r], ref[r], st);
        p = w->hi;
        break;
      }
  }
  free(mine);
  free(all);
  return st->code;
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

int cm_load(const rd_ctx *ctx, const rd_job *job, cm_input *in, rd_status *st) {
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
      if (cm_check_layout(f, job, L, st) == RD_OK && cm_users_read(f, job, L, &in->u, st) == RD_OK) {
        cm_layout_offsets(f, L);
        L->cats = calloc((size_t)(o->n_strata ? o->n_strata : 1), sizeof *L->cats);
        if (!L->cats) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
        for (int i = 0; i < o->n_strata && st->code == RD_OK; i++) {
          in->covs[i] = rd_malloc(sizeof(double) * (size_t)L->P, st, "covariate");
          if (in->covs[i] && L->cov[i].tclass == RD_TC_STRING)  /* category names: codes in name order */
            cm_categories_read(f, job->input, &L->cov[i], in->covs[i], &L->cats[i], st);
          else if (in->covs[i]) rd_h5_read_numeric(f, job->input, &L->cov[i], in->covs[i], st);
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
  cm_categories *cats_keep = L->cats;
  L->cov = NULL;
  L->cats = NULL;
  rd_bcast_bytes(ctx, L, sizeof *L, 0);
  L->cov = ctx->rank == 0 ? cov_keep : NULL;
  L->cats = ctx->rank == 0 ? cats_keep : NULL;
  cm_users_share(ctx, L->P, &in->u, st);
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

int cm_check(const rd_ctx *ctx, const rd_job *job, const rd_jobfile *jf, rd_status *st) {
  (void)jf;
  cm_input in;
  cm_load(ctx, job, &in, st);
  cm_input_free(&in, ((const cm_opts *)job->opts)->n_strata);
  return st->code;
}
