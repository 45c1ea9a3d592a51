/* The probe report's inputs: the layout of SPEC §7 (one group per task, optionally per reward
 * model), labels mapped to classes, splits (with the deterministic 10 % validation holdout), the
 * feature matrices (mapped when contiguous float32, else read through HDF5 in bounded pieces), and
 * the check that every feature used is finite. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "probe_internal.h"
#include "rmdiag/kernels/halffloat.h"
#include "rmdiag/kernels/rng.h"
#include "rmdiag/kernels/scan.h"

/* Rows per piece when reading through HDF5 (bounded by max_memory_mb too). */
#define READ_PIECE_BYTES ((int64_t)8 << 20)
/* Rows per block of the value scan. */
#define SCAN_BLOCK 512

const char *probe_model_name(const probe_run *R, int m) { return R->o->n_models ? R->o->models[m] : NULL; }

static void join(char *out, size_t n, const char *a, const char *b) {
  int len = snprintf(out, n, "%s/%s", strcmp(a, "/") == 0 ? "" : a, b);
  if (len < 0 || (size_t)len >= n) out[n - 1] = '\0';
}

/* ---- layout ---------------------------------------------------------------------------------------- */

/* The kind of a 2-byte float dataset from its bit layout: IEEE binary16 (sign 15, exponent 10..14
 * with bias 15, mantissa 0..9) or bfloat16 (sign 15, exponent 7..14 with bias 127, mantissa 0..6),
 * both with an implied leading mantissa bit; any other layout is refused. */
static int half_kind(hid_t f, const char *file, const char *path, int *etype, rd_status *st) {
  hid_t d = H5Dopen2(f, path, H5P_DEFAULT);
  if (d < 0) return rd_fail(st, RD_EINPUT, "%s: cannot open dataset %s", file, path);
  hid_t t = H5Dget_type(d);
  size_t spos = 0, epos = 0, esize = 0, mpos = 0, msize = 0;
  int ok = t >= 0 && H5Tget_class(t) == H5T_FLOAT && H5Tget_fields(t, &spos, &epos, &esize, &mpos, &msize) >= 0;
  size_t ebias = ok ? H5Tget_ebias(t) : 0;
  int norm = ok ? (int)H5Tget_norm(t) : -1, prec = ok ? (int)H5Tget_precision(t) : -1;
  int off = ok ? H5Tget_offset(t) : -1;
  if (t >= 0) H5Tclose(t);
  H5Dclose(d);
  ok = ok && norm == H5T_NORM_IMPLIED && prec == 16 && off == 0 && spos == 15 && mpos == 0;
  if (ok && epos == 10 && esize == 5 && msize == 10 && ebias == 15) {
    *etype = FEAT_F16;
    return RD_OK;
  }
  if (ok && epos == 7 && esize == 8 && msize == 7 && ebias == 127) {
    *etype = FEAT_BF16;
    return RD_OK;
  }
  return rd_fail(st, RD_EINPUT, "%s: %s has a 2-byte float type with sign bit %zu, exponent bits %zu..%zu (bias %zu) "
                 "and mantissa bits %zu..%zu, expected IEEE float16 (sign 15, exponent 10..14 with bias 15, mantissa "
                 "0..9) or bfloat16 (sign 15, exponent 7..14 with bias 127, mantissa 0..6)", file, path, spos, epos,
                 epos + esize - 1, ebias, mpos, mpos + msize - 1);
}

static int feat_info(hid_t f, const char *file, const char *path, feat_src *X, rd_status *st) {
  rd_dsinfo info;
  RD_TRY(rd_h5_info(f, file, path, &info, st));
  RD_TRY(rd_h5_expect(&info, file, 2, RD_TCM(RD_TC_FLOAT), "float32, float16 or bfloat16 features [N, d]", st));
  memset(X, 0, sizeof *X);
  snprintf(X->path, sizeof X->path, "%s", path);
  X->N = info.dims[0];
  X->d = info.dims[1];
  X->map_offset = -1;
  switch (info.tsize) {
    case 2: RD_TRY(half_kind(f, file, path, &X->etype, st)); break;
    case 4: X->etype = FEAT_F32; break;
    case 8: X->etype = FEAT_F64; break;
    default:
      return rd_fail(st, RD_EINPUT, "%s: %s has %zu-byte floats, expected float32, float16 or bfloat16 features", file,
                     path, info.tsize);
  }
  if (X->d < 1) return rd_fail(st, RD_EINPUT, "%s: %s has shape [%lld, 0], expected at least one feature", file, path,
                               (long long)X->N);
  if (X->d > ((int64_t)1 << 24))
    return rd_fail(st, RD_EINPUT, "%s: %s has %lld features per row (at most 16777216 supported)", file, path,
                   (long long)X->d);
  if (X->etype == FEAT_F32) {
    /* mappable only when stored little-endian IEEE binary32, contiguous, unfiltered, and at a file
     * offset that keeps the floats aligned (HDF5 may place data at any byte; such data is read) */
    rd_h5_contig_offset(f, &info, H5T_NATIVE_FLOAT, &X->map_offset);
    if (X->map_offset % (int64_t)sizeof(float) != 0) X->map_offset = -1;
  }
  return RD_OK;
}

int probe_check_layout(hid_t f, const rd_job *job, const probe_opts *o, probe_run *R, rd_status *st) {
  const char *file = job->input;
  if (!rd_h5_exists(f, job->group))
    return rd_fail(st, RD_EINPUT, "%s: group %s is missing (expected the probe layout of SPEC §7)", file, job->group);
  for (int m = 0; m < R->n_models; m++) {
    char mgroup[512];
    if (o->n_models) {
      join(mgroup, sizeof mgroup, job->group, o->models[m]);
      if (!rd_h5_exists(f, mgroup))
        return rd_fail(st, RD_EINPUT, "%s: models[%d] = \"%s\" but group %s is missing", file, m, o->models[m],
                       mgroup);
    } else {
      snprintf(mgroup, sizeof mgroup, "%s", job->group);
    }
    int64_t d0 = -1;
    const char *d0_task = NULL;
    for (int t = 0; t < o->n_tasks; t++) {
      ptask *p = &R->pt[m * o->n_tasks + t];
      p->m = m;
      p->t = t;
      join(p->prefix, sizeof p->prefix, mgroup, o->tasks[t].name);
      if (!rd_h5_exists(f, p->prefix))
        return rd_fail(st, RD_EINPUT, "%s: task \"%s\" has no group %s (expected X, label and split in it)", file,
                       o->tasks[t].name, p->prefix);
      char xp[600];
      join(xp, sizeof xp, p->prefix, "X");
      RD_TRY(feat_info(f, file, xp, &p->X, st));
      join(p->label_path, sizeof p->label_path, p->prefix, "label");
      join(p->split_path, sizeof p->split_path, p->prefix, "split");
      rd_dsinfo li, si;
      RD_TRY(rd_h5_info(f, file, p->label_path, &li, st));
      RD_TRY(rd_h5_expect(&li, file, 1, RD_TCM(RD_TC_INT), "integer labels [N] (-1 = missing)", st));
      RD_TRY(rd_h5_info(f, file, p->split_path, &si, st));
      RD_TRY(rd_h5_expect(&si, file, 1, RD_TCM(RD_TC_INT), "uint8 splits [N] (0 train, 1 validation, 2 test)", st));
      if (li.dims[0] != p->X.N || si.dims[0] != p->X.N)
        return rd_fail(st, RD_EINPUT, "%s: %s has %lld rows but %s has %lld and %s has %lld; expected one label and "
                       "one split per row", file, p->X.path, (long long)p->X.N, p->label_path, (long long)li.dims[0],
                       p->split_path, (long long)si.dims[0]);
      if (d0 >= 0 && p->X.d != d0)
        return rd_fail(st, RD_EINPUT, "%s: %s has %lld features per row but task \"%s\" of the same model has %lld; "
                       "expected one d for all tasks of a reward model", file, p->X.path, (long long)p->X.d, d0_task,
                       (long long)d0);
      d0 = p->X.d;
      d0_task = o->tasks[t].name;
    }
    char ip[600];
    join(ip, sizeof ip, mgroup, "infer/X");
    feat_src *I = &R->infer[m];
    memset(I, 0, sizeof *I);
    I->map_offset = -1;
    if (rd_h5_exists(f, ip)) {
      RD_TRY(feat_info(f, file, ip, I, st));
      if (I->d != d0)
        return rd_fail(st, RD_EINPUT, "%s: %s has %lld features per row but the tasks have %lld; expected the same d",
                       file, ip, (long long)I->d, (long long)d0);
    }
  }
  return RD_OK;
}

/* ---- labels and splits --------------------------------------------------------------------------------- */

/* Rank 0: reads label and split of one (model, task) and maps labels to classes. */
static int read_labels(hid_t f, const rd_job *job, const probe_opts *o, ptask *p, rd_status *st) {
  const probe_task_opt *to = &o->tasks[p->t];
  int64_t N = p->X.N;
  int64_t *lab = malloc(sizeof(int64_t) * (size_t)(N ? N : 1)), *spl = malloc(sizeof(int64_t) * (size_t)(N ? N : 1));
  p->cls = malloc((size_t)(N ? N : 1));
  p->split = malloc((size_t)(N ? N : 1));
  if (!lab || !spl || !p->cls || !p->split) {
    free(lab);
    free(spl);
    return rd_fail(st, RD_EFAIL, "out of memory reading labels");
  }
  rd_dsinfo li, si;
  int rc = rd_h5_info(f, job->input, p->label_path, &li, st);
  if (rc == RD_OK) rc = rd_h5_info(f, job->input, p->split_path, &si, st);
  if (rc == RD_OK) rc = rd_h5_read_int_rows(f, job->input, &li, 0, N, lab, st);
  if (rc == RD_OK) rc = rd_h5_read_int_rows(f, job->input, &si, 0, N, spl, st);
  for (int64_t i = 0; rc == RD_OK && i < N; i++) {
    if (spl[i] < 0 || spl[i] > 2) {
      rc = rd_fail(st, RD_EINPUT, "%s: %s[%lld] = %lld, expected 0 (train), 1 (validation) or 2 (test)", job->input,
                   p->split_path, (long long)i, (long long)spl[i]);
      break;
    }
    p->split[i] = (uint8_t)spl[i];
    int c = -1;
    for (int k = 0; k < to->n_classes && c < 0; k++)
      for (int j = 0; j < to->class_len[k]; j++)
        if (to->class_labels[k][j] == lab[i]) {
          c = k;
          break;
        }
    p->cls[i] = (int8_t)c;
    if (c < 0) {
      if (lab[i] == -1) p->dropped_missing++;
      else p->dropped_other++;
    }
  }
  free(lab);
  free(spl);
  return rc;
}

typedef struct hold_key {
  uint64_t u;
  int64_t i;
} hold_key;

static int cmp_hold(const void *a, const void *b) {
  const hold_key *x = a, *y = b;
  if (x->u != y->u) return x->u < y->u ? -1 : 1;
  return (x->i > y->i) - (x->i < y->i);
}

/* Every rank: the row lists of a (model, task) from its classes and splits; without validation
 * rows, a deterministic 10 % of train (the rows with the smallest draws of stream
 * "probe.holdout.TASK", draw = position in train) becomes validation. */
static int ptask_lists(const probe_run *R, ptask *p, rd_status *st) {
  const probe_task_opt *to = &R->o->tasks[p->t];
  const char *file = R->job->input;
  int64_t N = p->X.N, n[3] = {0, 0, 0};
  p->C = to->n_classes;
  p->K = (R->o->mode == PROBE_MRMBENCH && p->C == 2) ? 1 : p->C;
  for (int64_t i = 0; i < N; i++)
    if (p->cls[i] >= 0) n[p->split[i]]++;
  int64_t *lists[3];
  for (int s = 0; s < 3; s++) lists[s] = malloc(sizeof(int64_t) * (size_t)(n[s] ? n[s] : 1));
  p->train_count = calloc((size_t)p->C, sizeof(int64_t));
  if (!lists[0] || !lists[1] || !lists[2] || !p->train_count) return rd_fail(st, RD_EFAIL, "out of memory");
  int64_t k[3] = {0, 0, 0};
  for (int64_t i = 0; i < N; i++)
    if (p->cls[i] >= 0) lists[p->split[i]][k[p->split[i]]++] = i;
  if (n[1] == 0 && n[0] >= 2) {
    int64_t nh = (n[0] + 5) / 10;
    if (nh < 1) nh = 1;
    hold_key *keys = malloc(sizeof(hold_key) * (size_t)n[0]);
    int64_t *tr = malloc(sizeof(int64_t) * (size_t)n[0]), *va = malloc(sizeof(int64_t) * (size_t)nh);
    uint8_t *is_va = calloc((size_t)n[0], 1);
    if (!keys || !tr || !va || !is_va) return rd_fail(st, RD_EFAIL, "out of memory");
    rd_stream s;
    char purpose[300];
    snprintf(purpose, sizeof purpose, "probe.holdout.%s", to->name);
    rd_stream_init(&s, R->seed, R->job->name, purpose);
    for (int64_t i = 0; i < n[0]; i++) {
      keys[i].u = rd_rng_u64(&s, 0, (uint64_t)i);
      keys[i].i = i;
    }
    qsort(keys, (size_t)n[0], sizeof *keys, cmp_hold);
    for (int64_t i = 0; i < nh; i++) is_va[keys[i].i] = 1;
    int64_t a = 0, b = 0;
    for (int64_t i = 0; i < n[0]; i++) {
      if (is_va[i]) va[b++] = lists[0][i];
      else tr[a++] = lists[0][i];
    }
    free(keys);
    free(is_va);
    free(lists[0]);
    free(lists[1]);
    lists[0] = tr;
    lists[1] = va;
    n[0] = a;
    n[1] = b;
    p->holdout = 1;
  }
  p->tr = lists[0];
  p->va = lists[1];
  p->te = lists[2];
  p->n_tr = n[0];
  p->n_va = n[1];
  p->n_te = n[2];
  for (int64_t i = 0; i < p->n_tr; i++) p->train_count[p->cls[p->tr[i]]]++;
  for (int c = 0; c < p->C; c++)
    if (p->train_count[c] == 0)
      return rd_fail(st, RD_EINPUT, "%s: task \"%s\" (%s): class %d (raw labels %s%lld%s) has no training rows%s; "
                     "expected every class in the training split", file, to->name, p->prefix, c,
                     to->class_len[c] > 1 ? "[" : "", (long long)to->class_labels[c][0],
                     to->class_len[c] > 1 ? ", ...]" : "", p->holdout ? " after the validation holdout" : "");
  if (p->n_va == 0)
    return rd_fail(st, RD_EINPUT, "%s: task \"%s\" (%s): no validation rows and too few training rows (%lld) to hold "
                   "out 10 %%", file, to->name, p->prefix, (long long)p->n_tr);
  if (p->n_te == 0)
    return rd_fail(st, RD_EINPUT, "%s: task \"%s\": %s has no test rows (split = 2) with a label in the class "
                   "lists; expected a test split", file, to->name, p->split_path);
  return RD_OK;
}

static void feat_map_all(probe_run *R);

int probe_prepare(probe_run *R, rd_status *st) {
  const rd_ctx *ctx = R->ctx;
  if (ctx->rank == 0) {
    hid_t f;
    if (rd_h5_open(R->job->input, MPI_COMM_NULL, &f, st) == RD_OK) {
      if (probe_check_layout(f, R->job, R->o, R, st) == RD_OK)
        for (int i = 0; i < R->n_pt && st->code == RD_OK; i++) read_labels(f, R->job, R->o, &R->pt[i], st);
      rd_h5_close(f);
    }
  }
  if (rd_share_status(ctx, st, 0) != RD_OK) return st->code;
  /* scalar fields, then classes and splits */
  for (int i = 0; i < R->n_pt; i++) {
    ptask *p = &R->pt[i];
    int8_t *cls = p->cls;
    uint8_t *spl = p->split;
    rd_bcast_bytes(ctx, p, sizeof *p, 0);
    if (ctx->rank != 0) {
      cls = malloc((size_t)(p->X.N ? p->X.N : 1));
      spl = malloc((size_t)(p->X.N ? p->X.N : 1));
      if (!cls || !spl) rd_abort(ctx, __FILE__, __LINE__, "out of memory for labels");
    }
    p->cls = cls;
    p->split = spl;
    p->tr = p->va = p->te = NULL;
    p->train_count = NULL;
    p->X.base = NULL;
    p->X.map_base = NULL;
    p->X.map_len = 0;
    p->X.touched = 0;
    rd_bcast_bytes(ctx, p->cls, (size_t)p->X.N, 0);
    rd_bcast_bytes(ctx, p->split, (size_t)p->X.N, 0);
  }
  rd_bcast_bytes(ctx, R->infer, sizeof(feat_src) * (size_t)R->n_models, 0);
  for (int m = 0; m < R->n_models; m++) {
    R->infer[m].base = NULL;
    R->infer[m].map_base = NULL;
    R->infer[m].map_len = 0;
    R->infer[m].touched = 0;
  }
  /* error keys: an element's position in the fixed order of all datasets' elements */
  int64_t key = 0;
  for (int k = 0; k < R->n_pt + R->n_models; k++) {
    feat_src *X = k < R->n_pt ? &R->pt[k].X : &R->infer[k - R->n_pt];
    X->key_base = key;
    key += X->N * X->d;
  }
  for (int i = 0; i < R->n_pt && st->code == RD_OK; i++) ptask_lists(R, &R->pt[i], st);
  if (rd_agree(ctx, st) != RD_OK) return st->code;
  feat_map_all(R);
  return RD_OK;
}

/* ---- feature rows -------------------------------------------------------------------------------------------- */

/* Maps X read-only (without touching its pages); 1 on success. */
static int feat_try_map(const probe_run *R, feat_src *X) {
  if (X->map_offset < 0 || X->N == 0) return 0;
  int fd = open(R->job->input, O_RDONLY);
  if (fd < 0) return 0;
  long page = sysconf(_SC_PAGESIZE);
  int64_t start = X->map_offset, len = X->N * X->d * (int64_t)sizeof(float);
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
 * tries to map every mappable dataset; a dataset that some rank could not map is read through HDF5
 * on every rank (map_offset = -1 everywhere), because the schedule (groups of ranks, segments of
 * batches, and so the collective calls) follows from it and must be the same on every rank. */
static void feat_map_all(probe_run *R) {
  const rd_ctx *ctx = R->ctx;
  int nds = R->n_pt + R->n_models;
  int *ok = malloc(sizeof(int) * (size_t)nds), *all = malloc(sizeof(int) * (size_t)nds);
  if (!ok || !all) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  for (int k = 0; k < nds; k++) {
    feat_src *X = k < R->n_pt ? &R->pt[k].X : &R->infer[k - R->n_pt];
    ok[k] = feat_try_map(R, X);
  }
  RD_MPI_CHECK(ctx, MPI_Allreduce(ok, all, nds, MPI_INT, MPI_MIN, ctx->comm));
  for (int k = 0; k < nds; k++) {
    feat_src *X = k < R->n_pt ? &R->pt[k].X : &R->infer[k - R->n_pt];
    if (all[k]) continue;
    if (X->map_base) munmap(X->map_base, X->map_len);
    X->map_base = NULL;
    X->map_len = 0;
    X->base = NULL;
    X->map_offset = -1;
  }
  free(ok);
  free(all);
}

/* 1 when X is mapped (decided collectively by feat_map_all). On a rank's first use of a dataset that
 * fits the memory budget its page tables are filled at once (cheaper than a fault per few pages
 * while training reads rows in random order); a larger one is paged in on demand. */
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
    for (int64_t i = 0; i < n; i++) ptrs[i] = X->base + idx[i] * d;
    return RD_OK;
  }
  /* sorted requests, read in ranges (gaps of up to 32 rows are read through), in pieces */
  row_req *req = malloc(sizeof(row_req) * (size_t)n);
  int64_t budget = R->o->max_memory_mb * ((int64_t)1 << 20) / 8;
  int64_t piece_bytes = READ_PIECE_BYTES < budget ? READ_PIECE_BYTES : budget;
  int64_t piece = piece_bytes / (d * (int64_t)sizeof(float));
  if (piece < 1) piece = 1;
  float *tmp = malloc(sizeof(float) * (size_t)(piece * d));
  void *raw = X->etype == FEAT_F32 ? NULL : malloc((size_t)(piece * d) * (X->etype == FEAT_F64 ? 8 : 2));
  if (!req || !tmp || (X->etype != FEAT_F32 && !raw)) {
    free(req);
    free(tmp);
    free(raw);
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
    rc = read_range(R, X, r0, len, raw, tmp, st);
    for (int64_t k = a; rc == RD_OK && k < b; k++) {
      float *dst = buf + req[k].slot * d;
      memcpy(dst, tmp + (req[k].row - r0) * d, sizeof(float) * (size_t)d);
      ptrs[req[k].slot] = dst;
    }
    a = b;
  }
  free(req);
  free(tmp);
  free(raw);
  return rc;
}

/* ---- value scan ------------------------------------------------------------------------------------------------ */

/* Datasets in a fixed order (each (model, task) in job order, then each model's inference rows);
 * their used rows cut into blocks of SCAN_BLOCK; the blocks split over ranks. A bad value's key is
 * its position in that order (dataset, row, column), so the lowest is reported for any rank count. */
int probe_scan_values(probe_run *R, rd_status *st) {
  const rd_ctx *ctx = R->ctx;
  int nds = R->n_pt + R->n_models;
  int64_t *nrows = calloc((size_t)nds, sizeof(int64_t)), *nblk = calloc((size_t)nds, sizeof(int64_t));
  int64_t **rows = calloc((size_t)nds, sizeof(int64_t *));
  if (!nrows || !nblk || !rows) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  int64_t total_blocks = 0, maxd = 1;
  for (int k = 0; k < nds; k++) {
    if (k < R->n_pt) {
      ptask *p = &R->pt[k];
      rows[k] = malloc(sizeof(int64_t) * (size_t)(p->X.N ? p->X.N : 1));
      if (!rows[k]) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
      for (int64_t i = 0; i < p->X.N; i++)
        if (p->cls[i] >= 0) rows[k][nrows[k]++] = i;
      if (p->X.d > maxd) maxd = p->X.d;
    } else {
      feat_src *I = &R->infer[k - R->n_pt];
      nrows[k] = I->N;
      if (I->d > maxd) maxd = I->d;
    }
    nblk[k] = (nrows[k] + SCAN_BLOCK - 1) / SCAN_BLOCK;
    total_blocks += nblk[k];
  }
  int64_t b0, b1;
  rd_split_range(total_blocks, ctx->size, ctx->rank, &b0, &b1);
  float *buf = NULL;
  const float **ptrs = malloc(sizeof(float *) * SCAN_BLOCK);
  int64_t *idx = malloc(sizeof(int64_t) * SCAN_BLOCK);
  if (!ptrs || !idx) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  int64_t gb = 0;
  for (int k = 0; k < nds && st->code == RD_OK; k++) {
    feat_src *X = k < R->n_pt ? &R->pt[k].X : &R->infer[k - R->n_pt];
    for (int64_t blk = 0; blk < nblk[k] && st->code == RD_OK; blk++, gb++) {
      if (gb < b0 || gb >= b1) continue;
      int64_t r0 = blk * SCAN_BLOCK, n = nrows[k] - r0 < SCAN_BLOCK ? nrows[k] - r0 : SCAN_BLOCK;
      for (int64_t i = 0; i < n; i++) idx[i] = k < R->n_pt ? rows[k][r0 + i] : r0 + i;
      if (!feat_mapped(R, X) && !buf) {
        buf = malloc(sizeof(float) * (size_t)(SCAN_BLOCK * maxd));
        if (!buf) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
      }
      if (feat_rows(R, X, idx, n, buf, ptrs, st) != RD_OK) break;
      for (int64_t i = 0; i < n; i++) {
        int64_t j = rd_first_nonfinite_f32(ptrs[i], X->d);
        if (j >= 0) {
          rd_fail_at(st, RD_EINPUT, X->key_base + idx[i] * X->d + j,
                     "%s: %s[%lld, %lld] = %g (%s); expected finite features", R->job->input, X->path,
                     (long long)idx[i], (long long)j, (double)ptrs[i][j],
                     k < R->n_pt ? "a row with a class label" : "an inference row");
          break;
        }
      }
    }
  }
  free(buf);
  free(ptrs);
  free(idx);
  for (int k = 0; k < nds; k++) free(rows[k]);
  free(rows);
  free(nrows);
  free(nblk);
  return rd_agree(ctx, st);
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
  }
  for (int m = 0; R->infer && m < R->n_models; m++)
    if (R->infer[m].map_base) munmap(R->infer[m].map_base, R->infer[m].map_len);
  if (R->h5 >= 0) rd_h5_close(R->h5);
  R->h5 = H5I_INVALID_HID;
}
