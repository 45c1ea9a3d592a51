/* probe: the feature matrices (mapped read-only when contiguous float32, else read through HDF5 in
 * pieces bounded by max_memory_mb), the training rows a rank holds (row sets, loaded in segments
 * and uploaded to a backend that has kernels), and the check that every feature used is finite. */
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "probe_internal.h"
#include "rmdiag/kernels/backend.h"
#include "rmdiag/kernels/halffloat.h"
#include "rmdiag/kernels/scan.h"

/* Rows per piece when reading through HDF5 (bounded by max_memory_mb too). */
#define READ_PIECE_BYTES ((int64_t)8 << 20)
/* Rows per block of the value scan. */
#define SCAN_BLOCK 512

/* ---- mappings -------------------------------------------------------------------------------- */

/* A chunked X's chunk addresses. HDF5 1.10 finds one by walking the chunk index from its first chunk,
 * so chunk c costs about c steps and a dataset of n chunks n^2/2 (15 ns a step on the 2-vCPU VMs of
 * bench/README.md: 0.07 s for 3,125 chunks, 2.9 s for 20,000). The group shares the walk: rank r looks
 * up chunks [walk_bound(r), walk_bound(r + 1)), about n^2/(2 size) steps each, and one all-gather gives
 * every rank all of them. A dataset whose share would pass MAP_MAX_STEPS (about a second; some 11,600
 * chunks on one rank, 23,000 on four) is read through HDF5 instead, as one that cannot be mapped. */
#define MAP_MAX_STEPS 6.7e7

static int64_t walk_bound(int64_t n, int r, int size) {
  return r >= size ? n : (int64_t)((double)n * sqrt((double)r / (double)size));
}

/* Collective over the group, on every rank for the same datasets: X->chunk_at[c] the file offset of
 * chunk c, -1 where a rank's lookup failed; left NULL when the walk would be too long. */
static void chunk_offsets(probe_run *R, feat_src *X) {
  const rd_ctx *ctx = R->ctx;
  int size = ctx->size, me = ctx->rank;
  int64_t n = (X->N + X->chunk_rows - 1) / X->chunk_rows;
  for (int r = 0; r < size; r++)
    if (RD_H5_CHUNK_STEPS(walk_bound(n, r, size), walk_bound(n, r + 1, size)) > MAP_MAX_STEPS) return;
  int *counts = malloc(sizeof(int) * (size_t)size), *displs = malloc(sizeof(int) * (size_t)size);
  X->chunk_at = malloc(sizeof(int64_t) * (size_t)n);
  if (!counts || !displs || !X->chunk_at) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  for (int r = 0; r < size; r++) {
    displs[r] = (int)walk_bound(n, r, size);
    counts[r] = (int)(walk_bound(n, r + 1, size) - displs[r]);
  }
  int64_t a = displs[me], k = counts[me];
  rd_status st;
  rd_status_init(&st);
  if (k > 0 && ((R->h5 < 0 && rd_h5_open(R->job->input, MPI_COMM_NULL, &R->h5, &st) != RD_OK) ||
                rd_h5_chunk_offsets(R->h5, X->path, X->chunk_rows, a, k, X->chunk_at + a) != 0))
    for (int64_t c = a; c < a + k; c++) X->chunk_at[c] = -1;
  RD_MPI_CHECK(ctx, MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, X->chunk_at, counts, displs, MPI_INT64_T,
                                   ctx->comm));
  free(counts);
  free(displs);
}

/* A chunked X whose chunk offsets were looked up: each chunk's offset relative to the first (in floats,
 * chunk_at), and the span of the file that holds them all in start and len; 1 when every chunk is
 * there and float-aligned. */
static int chunk_span(probe_run *R, feat_src *X, int64_t *start, int64_t *len) {
  int64_t n = (X->N + X->chunk_rows - 1) / X->chunk_rows, bytes = X->chunk_rows * X->d * (int64_t)sizeof(float);
  if (!X->chunk_at) return 0;
  int64_t lo = INT64_MAX, hi = 0;
  for (int64_t c = 0; c < n; c++) {
    if (X->chunk_at[c] < 0 || X->chunk_at[c] % (int64_t)sizeof(float) != 0) return 0;
    if (X->chunk_at[c] < lo) lo = X->chunk_at[c];
    if (X->chunk_at[c] + bytes > hi) hi = X->chunk_at[c] + bytes;
  }
  /* before the end HDF5 reads, which is inside the file (a rank that looked up no chunk opens it here) */
  rd_status st;
  rd_status_init(&st);
  if (R->h5 < 0 && rd_h5_open(R->job->input, MPI_COMM_NULL, &R->h5, &st) != RD_OK) return 0;
  if (hi > rd_h5_readable_end(R->h5)) return 0;
  for (int64_t c = 0; c < n; c++) X->chunk_at[c] = (X->chunk_at[c] - lo) / (int64_t)sizeof(float);
  *start = lo;
  *len = hi - lo;
  return 1;
}

/* Maps X read-only (without touching its pages); 1 on success. */
static int feat_try_map(probe_run *R, feat_src *X) {
  if (X->map_offset < 0 || X->N == 0) return 0;
  int64_t start = X->map_offset, len = X->N * X->d * (int64_t)sizeof(float);
  if (X->chunk_rows > 0 && !chunk_span(R, X, &start, &len)) return 0;
  int fd = open(R->job->input, O_RDONLY);
  if (fd < 0) return 0;
  long page = sysconf(_SC_PAGESIZE);
  int64_t aligned = start / page * page;
  void *p = mmap(NULL, (size_t)(len + (start - aligned)), PROT_READ, MAP_SHARED, fd, (off_t)aligned);
  close(fd);
  if (p == MAP_FAILED) return 0;
  X->map_base = p;
  X->map_len = (size_t)(len + (start - aligned));
  X->base = (const float *)((const char *)p + (start - aligned));
  return 1;
}

/* Collective: whether each feature dataset is mapped is decided by all ranks together. Every rank
 * tries to map every mappable dataset (the chunk addresses of a chunked one looked up together); a
 * dataset that some rank could not map is read through HDF5 on every rank (map_offset = -1
 * everywhere), because the schedule (groups of ranks, segments of batches, and so the collective
 * calls) follows from it and must be the same on every rank. */
void probe_map_features(probe_run *R) {
  const rd_ctx *ctx = R->ctx;
  int nds = R->n_pt + R->n_models;
  int *ok = calloc((size_t)nds, sizeof(int)), *all = malloc(sizeof(int) * (size_t)nds);
  if (!ok || !all) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  for (int k = 0; k < nds; k++) {
    feat_src *X = k < R->n_pt ? &R->pt[k].X : &R->infer[k - R->n_pt];
    if (X->map_offset >= 0 && X->N > 0 && X->chunk_rows > 0) chunk_offsets(R, X);
    ok[k] = feat_try_map(R, X);
  }
  RD_MPI_CHECK(ctx, MPI_Allreduce(ok, all, nds, MPI_INT, MPI_MIN, ctx->comm));
  for (int k = 0; k < nds; k++) {
    feat_src *X = k < R->n_pt ? &R->pt[k].X : &R->infer[k - R->n_pt];
    if (all[k]) continue;
    if (X->map_base) munmap(X->map_base, X->map_len);
    free(X->chunk_at);
    X->chunk_at = NULL;
    X->chunk_rows = 0;
    X->map_base = NULL;
    X->map_len = 0;
    X->base = NULL;
    X->map_offset = -1;
  }
  free(ok);
  free(all);
}

/* 1 when X is mapped (decided collectively by probe_map_features). On a rank's first use of a
 * dataset that fits the memory budget its page tables are filled at once (cheaper than a fault per
 * few pages while training reads rows in random order); a larger one is paged in on demand. */
int feat_mapped(probe_run *R, feat_src *X) {
  if (!X->base) return 0;
  if (!X->touched) {
    X->touched = 1;
    if (X->N * X->d * (int64_t)sizeof(float) <= R->o->max_memory_mb * ((int64_t)1 << 20)) {
#ifdef MADV_POPULATE_READ
      if (madvise(X->map_base, X->map_len, MADV_POPULATE_READ) != 0)
#endif
        madvise(X->map_base, X->map_len, MADV_WILLNEED);
    }
  }
  return 1;
}

/* ---- reading rows ---------------------------------------------------------------------------- */

typedef struct row_req {
  int64_t row, slot;
} row_req;

static int cmp_req(const void *a, const void *b) {
  const row_req *x = a, *y = b;
  if (x->row != y->row) return x->row < y->row ? -1 : 1;
  return (x->slot > y->slot) - (x->slot < y->slot);
}

/* Reads rows [r0, r0 + n) of X as floats into out (n * d). */
static int read_range(probe_run *R, const feat_src *X, int64_t r0, int64_t n, void *raw, float *out, rd_status *st) {
  const char *file = R->job->input;
  if (R->h5 < 0) RD_TRY(rd_h5_open(file, MPI_COMM_NULL, &R->h5, st));
  hid_t d = H5Dopen2(R->h5, X->path, H5P_DEFAULT);
  if (d < 0) return rd_fail_at(st, RD_EINPUT, X->key_base, "%s: cannot open dataset %s", file, X->path);
  hid_t fs = H5Dget_space(d), ft = H5Dget_type(d);
  hsize_t start[2] = {(hsize_t)r0, 0}, count[2] = {(hsize_t)n, (hsize_t)X->d};
  H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
  hid_t ms = H5Screate_simple(2, count, NULL);
  int64_t cnt = n * X->d;
  herr_t e;
  if (X->etype == FEAT_F32) {
    e = H5Dread(d, H5T_NATIVE_FLOAT, ms, fs, H5P_DEFAULT, out);
  } else if (X->etype == FEAT_F64) {
    e = H5Dread(d, H5T_NATIVE_DOUBLE, ms, fs, H5P_DEFAULT, raw);
    for (int64_t i = 0; e >= 0 && i < cnt; i++) out[i] = (float)((const double *)raw)[i];
  } else {
    /* binary16 or bfloat16 read as stored (no library conversion) and widened exactly here */
    hid_t mt = H5Tcopy(ft);
    H5Tset_order(mt, H5T_ORDER_LE);
    e = H5Dread(d, mt, ms, fs, H5P_DEFAULT, raw);
    H5Tclose(mt);
    const uint16_t *h = raw;
    if (X->etype == FEAT_BF16)
      for (int64_t i = 0; e >= 0 && i < cnt; i++) out[i] = rd_bf16_to_float(h[i]);
    else
      for (int64_t i = 0; e >= 0 && i < cnt; i++) out[i] = rd_half_to_float(h[i]);
  }
  H5Sclose(ms);
  H5Sclose(fs);
  H5Tclose(ft);
  H5Dclose(d);
  /* keyed by the range's first element, so that the error reported is the lowest for any rank count */
  if (e < 0)
    return rd_fail_at(st, RD_EINPUT, X->key_base + r0 * X->d,
                      "%s: reading rows %lld..%lld of %s failed (corrupt or unreadable data)", file, (long long)r0,
                      (long long)(r0 + n - 1), X->path);
  return RD_OK;
}

int feat_rows(probe_run *R, feat_src *X, const int64_t *idx, int64_t n, float *buf, const float **ptrs,
              rd_status *st) {
  int64_t d = X->d;
  if (n == 0) return RD_OK;
  if (feat_mapped(R, X)) {
    for (int64_t i = 0; i < n; i++) ptrs[i] = feat_row(X, idx[i]);
    return RD_OK;
  }
  /* sorted requests, read in ranges (gaps of up to 32 rows are read through), in pieces; the piece
   * buffers are the run's, kept from call to call (fresh pages would be zeroed by the kernel on every
   * call: most of the cost of a value scan's small calls) */
  row_req *req = malloc(sizeof(row_req) * (size_t)n);
  int64_t budget = R->o->max_memory_mb * ((int64_t)1 << 20) / 8;
  int64_t piece_bytes = READ_PIECE_BYTES < budget ? READ_PIECE_BYTES : budget;
  int64_t piece = piece_bytes / (d * (int64_t)sizeof(float));
  if (piece < 1) piece = 1;
  int64_t raw_bytes = X->etype == FEAT_F32 ? 0 : piece * d * (X->etype == FEAT_F64 ? 8 : 2);
  if (req && R->rtmp_n < piece * d) {
    free(R->rtmp);
    R->rtmp = malloc(sizeof(float) * (size_t)(piece * d));
    R->rtmp_n = R->rtmp ? piece * d : 0;
  }
  if (req && R->rraw_bytes < raw_bytes) {
    free(R->rraw);
    R->rraw = malloc((size_t)raw_bytes);
    R->rraw_bytes = R->rraw ? raw_bytes : 0;
  }
  float *tmp = R->rtmp;
  void *raw = R->rraw;
  if (!req || !tmp || (raw_bytes && !raw)) {
    free(req);
    return rd_fail(st, RD_EFAIL, "out of memory reading rows of %s", X->path);
  }
  for (int64_t i = 0; i < n; i++) {
    req[i].row = idx[i];
    req[i].slot = i;
  }
  qsort(req, (size_t)n, sizeof *req, cmp_req);
  int rc = RD_OK;
  for (int64_t a = 0; a < n && rc == RD_OK;) {
    int64_t r0 = req[a].row, b = a + 1;
    while (b < n && req[b].row - req[b - 1].row <= 32 && req[b].row - r0 < piece) b++;
    int64_t len = req[b - 1].row - r0 + 1;
    /* every row of the range wanted once, into consecutive slots (a scan's block, a contiguous
     * share): read straight into place */
    int direct = len == b - a && req[b - 1].slot - req[a].slot == b - a - 1;
    for (int64_t k = a + 1; direct && k < b; k++) direct = req[k].slot == req[k - 1].slot + 1;
    float *into = direct ? buf + req[a].slot * d : tmp;
    rc = read_range(R, X, r0, len, raw, into, st);
    for (int64_t k = a; rc == RD_OK && k < b; k++) {
      float *dst = buf + req[k].slot * d;
      if (!direct) memcpy(dst, tmp + (req[k].row - r0) * d, sizeof(float) * (size_t)d);
      ptrs[req[k].slot] = dst;
    }
    a = b;
  }
  free(req);
  return rc;
}

/* ---- value scan ------------------------------------------------------------------------------ */

/* Datasets in a fixed order (each (model, task) in job order, then each model's inference rows);
 * their used rows cut into blocks of SCAN_BLOCK; the blocks split over ranks. A bad value's key is
 * its position in that order (dataset, row, column), so the lowest is reported for any rank count. */
typedef struct scan_plan {
  int nds;                /* datasets */
  int64_t *nrows, *nblk;  /* rows used and blocks, per dataset */
  int64_t **rows;         /* the rows used of each task dataset (inference datasets: all, NULL) */
  int64_t total_blocks, maxd;
} scan_plan;

static feat_src *scan_source(probe_run *R, int k) { return k < R->n_pt ? &R->pt[k].X : &R->infer[k - R->n_pt]; }

static void scan_plan_make(probe_run *R, scan_plan *sp) {
  const rd_ctx *ctx = R->ctx;
  int nds = R->n_pt + R->n_models;
  sp->nds = nds;
  sp->nrows = calloc((size_t)nds, sizeof(int64_t));
  sp->nblk = calloc((size_t)nds, sizeof(int64_t));
  sp->rows = calloc((size_t)nds, sizeof(int64_t *));
  if (!sp->nrows || !sp->nblk || !sp->rows) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  sp->total_blocks = 0;
  sp->maxd = 1;
  for (int k = 0; k < nds; k++) {
    if (k < R->n_pt) {
      ptask *p = &R->pt[k];
      sp->rows[k] = malloc(sizeof(int64_t) * (size_t)(p->X.N ? p->X.N : 1));
      if (!sp->rows[k]) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
      for (int64_t i = 0; i < p->X.N; i++)
        if (p->cls[i] >= 0) sp->rows[k][sp->nrows[k]++] = i;
      if (p->X.d > sp->maxd) sp->maxd = p->X.d;
    } else {
      feat_src *I = &R->infer[k - R->n_pt];
      sp->nrows[k] = I->N;
      if (I->d > sp->maxd) sp->maxd = I->d;
    }
    sp->nblk[k] = (sp->nrows[k] + SCAN_BLOCK - 1) / SCAN_BLOCK;
    sp->total_blocks += sp->nblk[k];
  }
}

static void scan_plan_free(scan_plan *sp) {
  for (int k = 0; k < sp->nds; k++) free(sp->rows[k]);
  free(sp->rows);
  free(sp->nrows);
  free(sp->nblk);
}

/* Block `blk` of dataset k: its rows read (into buf unless mapped), the first non-finite value of
 * each row looked for. */
static int scan_block(probe_run *R, const scan_plan *sp, int k, int64_t blk, float *buf, const float **ptrs,
                      int64_t *idx, rd_status *st) {
  feat_src *X = scan_source(R, k);
  int64_t r0 = blk * SCAN_BLOCK, n = sp->nrows[k] - r0 < SCAN_BLOCK ? sp->nrows[k] - r0 : SCAN_BLOCK;
  for (int64_t i = 0; i < n; i++) idx[i] = k < R->n_pt ? sp->rows[k][r0 + i] : r0 + i;
  RD_TRY(feat_rows(R, X, idx, n, buf, ptrs, st));
  for (int64_t i = 0; i < n; i++) {
    int64_t j = rd_first_nonfinite_f32(ptrs[i], X->d);
    if (j >= 0)
      return rd_fail_at(st, RD_EINPUT, X->key_base + idx[i] * X->d + j,
                        "%s: %s[%lld, %lld] = %g (%s); expected finite features", R->job->input, X->path,
                        (long long)idx[i], (long long)j, (double)ptrs[i][j],
                        k < R->n_pt ? "a row with a class label" : "an inference row");
  }
  return RD_OK;
}

int probe_scan_values(probe_run *R, rd_status *st) {
  const rd_ctx *ctx = R->ctx;
  scan_plan sp;
  scan_plan_make(R, &sp);
  int64_t b0, b1;
  rd_split_range(sp.total_blocks, ctx->size, ctx->rank, &b0, &b1);
  float *buf = NULL;
  const float **ptrs = malloc(sizeof(float *) * SCAN_BLOCK);
  int64_t *idx = malloc(sizeof(int64_t) * SCAN_BLOCK);
  if (!ptrs || !idx) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  int64_t gb = 0;
  for (int k = 0; k < sp.nds && st->code == RD_OK; k++) {
    for (int64_t blk = 0; blk < sp.nblk[k] && st->code == RD_OK; blk++, gb++) {
      if (gb < b0 || gb >= b1) continue;
      if (!feat_mapped(R, scan_source(R, k)) && !buf) {
        buf = malloc(sizeof(float) * (size_t)(SCAN_BLOCK * sp.maxd));
        if (!buf) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
      }
      if (scan_block(R, &sp, k, blk, buf, ptrs, idx, st) != RD_OK) break;
    }
  }
  free(buf);
  free(ptrs);
  free(idx);
  scan_plan_free(&sp);
  return rd_agree(ctx, st);
}

/* ---- training row sets ----------------------------------------------------------------------- */

const rd_probe_kernels *probe_gpu_kernels(const probe_run *R) {
  const rd_probe_kernels *k = R->ctx->backend ? R->ctx->backend->probe : NULL;
  return (k && k->rows_upload && k->block_grads && k->rows_free) ? k : NULL;
}

int rowset_alloc(rowset *s, int64_t n, rd_status *st) {
  memset(s, 0, sizeof *s);
  s->n = n;
  s->ptr = calloc((size_t)(n ? n : 1), sizeof *s->ptr);
  s->y = malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
  s->row = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
  if (!s->ptr || !s->y || !s->row) return rd_fail(st, RD_EFAIL, "out of memory for a row set");
  return RD_OK;
}

int rowset_load(probe_run *R, feat_src *X, rowset *s, int64_t lo, int64_t hi, int upload, rd_status *st) {
  int64_t n = hi - lo, d = X->d;
  const rd_probe_kernels *gk = upload ? probe_gpu_kernels(R) : NULL;
  if (s->dev) {
    probe_gpu_kernels(R)->rows_free(s->dev);
    s->dev = NULL;
  }
  if (n <= 0) return RD_OK;
  if (gk || !feat_mapped(R, X)) {
    rd_dsinfo di = {.ndims = 2, .dims = {X->N, d}};
    snprintf(di.path, sizeof di.path, "%s", X->path);
    RD_TRY(rd_h5_check_memory(R->job->input, &di, 4.0 * (double)n * (double)d, "holding this rank's feature rows", st));
    if (s->cap < n * d) {  /* the next segment reuses the pages of the last one (no fresh pages to zero) */
      free(s->buf);
      s->cap = 0;
      s->buf = rd_malloc_big(sizeof(float) * (size_t)(n * d), st, "feature rows");
      if (!s->buf) return st->code;
      s->cap = n * d;
    }
  }
  if (gk && feat_mapped(R, X)) {
    for (int64_t i = 0; i < n; i++) {
      memcpy(s->buf + i * d, feat_row(X, s->row[lo + i]), sizeof(float) * (size_t)d);
      s->ptr[lo + i] = s->buf + i * d;
    }
  } else {
    RD_TRY(feat_rows(R, X, s->row + lo, n, s->buf, s->ptr + lo, st));
  }
  if (gk) {
    char err[512] = "";
    s->dev = gk->rows_upload(s->buf, n, d, err, sizeof err);
    if (!s->dev)
      return rd_fail(st, RD_EFAIL, "%s backend: uploading feature rows failed: %s", R->ctx->backend->name, err);
  }
  return RD_OK;
}

void rowset_free(probe_run *R, rowset *s) {
  if (s->dev && R->ctx->backend->probe && R->ctx->backend->probe->rows_free) R->ctx->backend->probe->rows_free(s->dev);
  free(s->ptr);
  free(s->y);
  free(s->row);
  free(s->buf);
  memset(s, 0, sizeof *s);
}

int64_t probe_budget_rows(const probe_run *R, int64_t d, int64_t minimum) {
  int64_t rows = R->o->max_memory_mb * ((int64_t)1 << 20) / (d * (int64_t)sizeof(float));
  return rows < minimum ? minimum : rows;
}

void probe_data_free(probe_run *R) {
  if (!R->pt) return;
  for (int i = 0; i < R->n_pt; i++) {
    ptask *p = &R->pt[i];
    free(p->cls);
    free(p->split);
    free(p->tr);
    free(p->va);
    free(p->te);
    free(p->train_count);
    if (p->X.map_base) munmap(p->X.map_base, p->X.map_len);
    free(p->X.chunk_at);
  }
  for (int m = 0; R->infer && m < R->n_models; m++) {
    if (R->infer[m].map_base) munmap(R->infer[m].map_base, R->infer[m].map_len);
    free(R->infer[m].chunk_at);
  }
  if (R->h5 >= 0) rd_h5_close(R->h5);
  R->h5 = H5I_INVALID_HID;
  free(R->rtmp);
  free(R->rraw);
  R->rtmp = NULL;
  R->rraw = NULL;
  R->rtmp_n = R->rraw_bytes = 0;
}
