/* Inference-time probing (SPEC §7 `kmeans`): centroids per class of each task from its
 * validation rows, and for each inference row the nearest centroid's task, its distance d_min and
 * whether it is kept (d_min <= tau).
 *
 * Every metric is Euclidean distance in a space T(x): euclidean T(x) = x; cosine T(x) = x / ‖x‖
 * (distance 1 − cos(x, c)); mahalanobis T(x) = L⁻¹x with Σ̂ = L Lᵀ a Ledoit–Wolf shrunk pooled
 * within-class covariance of the model's validation rows (distance ‖L⁻¹(x − c)‖). k-means runs in
 * T-space; centroids are stored in T-space. Per-row values depend only on the row; sums over rows
 * are taken in row order by the one rank that owns a (model, task). */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe_internal.h"
#include "rmdiag/kernels/rng.h"
#include "rmdiag/kernels/stats.h"

void dpotrf_(const char *uplo, const int *n, double *a, const int *lda, int *info);

#define KM_BLOCK 256

/* ---- T-space ---------------------------------------------------------------------------------- */

typedef struct space {
  int distance;
  int64_t d;
  const double *L;   /* mahalanobis factor [d, d] */
} space;

/* Y [n, d] = T(rows). */
static void to_space(const space *sp, const float *const *rows, int64_t n, double *Y) {
  int64_t d = sp->d;
  if (sp->distance == DIST_MAHALANOBIS) {
    rd_probe_lsolve(sp->L, d, rows, n, Y);
    return;
  }
  for (int64_t i = 0; i < n; i++) {
    double *y = Y + i * d;
    for (int64_t j = 0; j < d; j++) y[j] = (double)rows[i][j];
    if (sp->distance == DIST_COSINE) {
      double nn = sqrt(rd_probe_sumsq(y, d));
      if (nn > 0.0)
        for (int64_t j = 0; j < d; j++) y[j] /= nn;
    }
  }
}

/* Distances of T-space rows Y [n, d] to centres C [c, d] as used for nearest-centroid decisions:
 * squared Euclidean (k-means), or the reported distance (plain Euclidean / 1 − cos). */
static void dist_sq(const space *sp, const double *Y, int64_t n, const double *C, int64_t c, double *D) {
  rd_probe_sqdist_f64(Y, n, sp->d, C, c, D);
}

/* The reported distance of row i to every centre (cosine: 1 − y·c/‖c‖ with ‖y‖ = 1). */
static void dist_report(const space *sp, const double *Y, int64_t n, const double *C, const double *cnorm, int64_t c,
                        double *D) {
  if (sp->distance == DIST_COSINE) {
    rd_probe_dot_f64(Y, n, sp->d, C, c, D);
    for (int64_t i = 0; i < n; i++)
      for (int64_t k = 0; k < c; k++) D[i * c + k] = cnorm[k] > 0.0 ? 1.0 - D[i * c + k] / cnorm[k] : 1.0;
    return;
  }
  rd_probe_sqdist_f64(Y, n, sp->d, C, c, D);
  for (int64_t i = 0; i < n * c; i++) D[i] = sqrt(D[i]);
}

/* ---- k-means on one class --------------------------------------------------------------------- */

static void mean_rows(const double *Y, const int64_t *idx, int64_t n, int64_t d, double *out) {
  for (int64_t j = 0; j < d; j++) out[j] = 0.0;
  for (int64_t i = 0; i < n; i++) {
    const double *y = Y + idx[i] * d;
    for (int64_t j = 0; j < d; j++) out[j] += y[j];
  }
  for (int64_t j = 0; j < d; j++) out[j] /= (double)n;
}

/* k centroids of the n T-space rows Y (n >= k >= 1): k-means++ from the stream (replicate rep),
 * then Lloyd iterations until the assignment stops changing or `iters`; an empty cluster takes the
 * row farthest from its centroid (ties to the lowest row). */
static int kmeans_class(const space *sp, const double *Y, int64_t n, int64_t k, int64_t iters, const rd_stream *s,
                        uint64_t rep, double *C, rd_status *st) {
  int64_t d = sp->d;
  int64_t *all = malloc(sizeof(int64_t) * (size_t)n);
  if (!all) return rd_fail(st, RD_EFAIL, "out of memory in k-means");
  for (int64_t i = 0; i < n; i++) all[i] = i;
  if (k == 1) {
    mean_rows(Y, all, n, d, C);
    free(all);
    return RD_OK;
  }
  double *D = malloc(sizeof(double) * (size_t)(n * k)), *best = malloc(sizeof(double) * (size_t)n);
  int64_t *lab = malloc(sizeof(int64_t) * (size_t)n), *cnt = malloc(sizeof(int64_t) * (size_t)k);
  int64_t *members = malloc(sizeof(int64_t) * (size_t)n);
  uint8_t *used = calloc((size_t)n, 1);
  if (!D || !best || !lab || !cnt || !members || !used) {
    free(all);
    free(D);
    free(best);
    free(lab);
    free(cnt);
    free(members);
    free(used);
    return rd_fail(st, RD_EFAIL, "out of memory in k-means");
  }
  /* k-means++: first centre uniform (draw 0), then ∝ D² (draw c) */
  int64_t first = (int64_t)rd_rng_below(s, rep, 0, (uint64_t)n);
  memcpy(C, Y + first * d, sizeof(double) * (size_t)d);
  used[first] = 1;
  dist_sq(sp, Y, n, C, 1, best);
  for (int64_t c = 1; c < k; c++) {
    double total = 0.0;
    for (int64_t i = 0; i < n; i++) total += best[i];
    int64_t pick = -1;
    if (total > 0.0 && isfinite(total)) {
      double u = rd_rng_uniform(s, rep, (uint64_t)c) * total, acc = 0.0;
      for (int64_t i = 0; i < n; i++) {
        acc += best[i];
        if (acc > u && best[i] > 0.0) {
          pick = i;
          break;
        }
      }
    }
    if (pick < 0) /* every row coincides with a centre: the lowest unused row */
      for (int64_t i = 0; i < n && pick < 0; i++)
        if (!used[i]) pick = i;
    if (pick < 0) pick = 0;
    used[pick] = 1;
    memcpy(C + c * d, Y + pick * d, sizeof(double) * (size_t)d);
    double *dc = D;
    dist_sq(sp, Y, n, C + c * d, 1, dc);
    for (int64_t i = 0; i < n; i++)
      if (dc[i] < best[i]) best[i] = dc[i];
  }
  for (int64_t i = 0; i < n; i++) lab[i] = -1;
  for (int64_t it = 0; it < iters; it++) {
    dist_sq(sp, Y, n, C, k, D);
    int changed = 0;
    for (int64_t i = 0; i < n; i++) {
      int64_t b = 0;
      for (int64_t c = 1; c < k; c++)
        if (D[i * k + c] < D[i * k + b]) b = c;
      best[i] = D[i * k + b];
      if (lab[i] != b) changed = 1;
      lab[i] = b;
    }
    if (!changed) break;
    memset(used, 0, (size_t)n);
    for (int64_t c = 0; c < k; c++) {
      int64_t m = 0;
      for (int64_t i = 0; i < n; i++)
        if (lab[i] == c) members[m++] = i;
      cnt[c] = m;
      if (m > 0) mean_rows(Y, members, m, d, C + c * d);
    }
    for (int64_t c = 0; c < k; c++) {
      if (cnt[c] > 0) continue;
      int64_t far = -1;
      for (int64_t i = 0; i < n; i++)
        if (!used[i] && (far < 0 || best[i] > best[far])) far = i;
      if (far < 0) far = 0;
      used[far] = 1;
      memcpy(C + c * d, Y + far * d, sizeof(double) * (size_t)d);
      best[far] = 0.0;
    }
  }
  free(all);
  free(D);
  free(best);
  free(lab);
  free(cnt);
  free(members);
  free(used);
  return RD_OK;
}

/* ---- Mahalanobis: the shrunk pooled within-class covariance ------------------------------------ */

/* Rank `owner`: L with Σ̂ = L Lᵀ, Σ̂ = (1 − s) S + s μ I, S = Σ_i (x_i − m_c(i))(x_i − m_c(i))ᵀ / n
 * over the validation rows of every task of model m (m_c = the row's class mean), μ = tr(S)/d, and
 * Ledoit–Wolf's s = min(β, δ)/δ with δ = ‖S − μI‖²_F / d and β = (Σ_i ‖x_i − m‖⁴ / n − ‖S‖²_F) / (d n). */
static int maha_factor(probe_run *R, int m, double *L, double *shrink, rd_status *st) {
  int64_t d = R->pt[m * R->o->n_tasks].X.d, n_all = 0;
  double fourth = 0.0;
  memset(L, 0, sizeof(double) * (size_t)(d * d));
  float *buf = malloc(sizeof(float) * (size_t)(KM_BLOCK * d));
  const float **ptr = malloc(sizeof(float *) * KM_BLOCK);
  double *A = malloc(sizeof(double) * (size_t)(KM_BLOCK * d));
  if (!buf || !ptr || !A) {
    free(buf);
    free(ptr);
    free(A);
    return rd_fail(st, RD_EFAIL, "out of memory for the covariance");
  }
  for (int t = 0; t < R->o->n_tasks && st->code == RD_OK; t++) {
    ptask *p = &R->pt[m * R->o->n_tasks + t];
    double *means = calloc((size_t)(p->C * d), sizeof(double));
    int64_t *cnt = calloc((size_t)p->C, sizeof(int64_t));
    if (!means || !cnt) {
      free(means);
      free(cnt);
      rd_fail(st, RD_EFAIL, "out of memory for the covariance");
      break;
    }
    for (int pass = 0; pass < 2 && st->code == RD_OK; pass++) {
      for (int64_t a = 0; a < p->n_va && st->code == RD_OK; a += KM_BLOCK) {
        int64_t nb = p->n_va - a < KM_BLOCK ? p->n_va - a : KM_BLOCK;
        if (feat_rows(R, &p->X, p->va + a, nb, buf, ptr, st) != RD_OK) break;
        for (int64_t i = 0; i < nb; i++) {
          int c = p->cls[p->va[a + i]];
          double *mc = means + c * d;
          if (pass == 0) {
            for (int64_t j = 0; j < d; j++) mc[j] += (double)ptr[i][j];
            cnt[c]++;
          } else {
            double *ai = A + i * d;
            for (int64_t j = 0; j < d; j++) ai[j] = (double)ptr[i][j] - mc[j];
            double q = rd_probe_sumsq(ai, d);
            fourth += q * q;
          }
        }
        if (pass == 1) cblas_dsyrk(CblasRowMajor, CblasLower, CblasTrans, (int)d, (int)nb, 1.0, A, (int)d, 1.0, L, (int)d);
      }
      if (pass == 0)
        for (int c = 0; c < p->C; c++)
          for (int64_t j = 0; j < d; j++) means[c * d + j] = cnt[c] ? means[c * d + j] / (double)cnt[c] : 0.0;
    }
    n_all += p->n_va;
    free(means);
    free(cnt);
  }
  free(buf);
  free(ptr);
  free(A);
  if (st->code != RD_OK) return st->code;
  double n = (double)n_all, tr = 0.0, fro = 0.0;
  for (int64_t j = 0; j < d; j++)
    for (int64_t k = 0; k <= j; k++) {
      double v = L[j * d + k] / n;
      L[j * d + k] = v;
      fro += (k == j ? 1.0 : 2.0) * v * v;
      if (k == j) tr += v;
    }
  double mu = tr / (double)d;
  double delta = (fro - 2.0 * mu * tr + (double)d * mu * mu) / (double)d;
  double beta = (fourth / n - fro) / ((double)d * n);
  if (beta > delta) beta = delta;
  double s = delta > 0.0 ? beta / delta : 0.0;
  if (s < 0.0) s = 0.0;
  *shrink = s;
  for (int64_t j = 0; j < d; j++)
    for (int64_t k = 0; k <= j; k++) L[j * d + k] = (1.0 - s) * L[j * d + k] + (k == j ? s * mu : 0.0);
  /* row-major lower = column-major upper: Σ̂ = UᵀU with U column-major upper, i.e. L = Uᵀ */
  int nn = (int)d, info = 0;
  char uplo = 'U';
  dpotrf_(&uplo, &nn, L, &nn, &info);
  if (info != 0)
    return rd_fail(st, RD_EINPUT, "%s: mahalanobis distance: the shrunk covariance of the validation rows%s%s is not "
                   "positive definite (%s); use distance euclidean or cosine", R->job->input,
                   R->o->n_models ? " of model " : "", R->o->n_models ? R->o->models[m] : "",
                   !(mu > 0.0) ? "the rows have no spread around their class means"
                   : s == 0.0 ? "the Ledoit-Wolf shrinkage is 0, as when every centred row has the same length along "
                                "one direction, and leaves the singular covariance of these rows as it is"
                              : "it is singular in floating point");
  for (int64_t j = 0; j < d; j++)
    for (int64_t k = j + 1; k < d; k++) L[j * d + k] = 0.0;
  return RD_OK;
}

/* ---- tasks: centroids of one class of one (model, task) ------------------------------------------------ */

typedef struct km_arg {
  probe_run *R;
  space *spaces;     /* per model */
  int64_t *unit_pt, *unit_class;
} km_arg;

/* Sums of T(x) over the rows idx (in order), read in blocks: out[d]. */
static int class_sum(probe_run *R, const space *sp, feat_src *X, const int64_t *idx, int64_t n, double *out,
                     rd_status *st) {
  int64_t d = X->d;
  float *buf = malloc(sizeof(float) * (size_t)(KM_BLOCK * d));
  const float **ptr = malloc(sizeof(float *) * KM_BLOCK);
  double *Y = sp->distance == DIST_COSINE ? malloc(sizeof(double) * (size_t)d) : NULL;
  if (!buf || !ptr || (sp->distance == DIST_COSINE && !Y)) {
    free(buf);
    free(ptr);
    free(Y);
    return rd_fail(st, RD_EFAIL, "out of memory for centroids");
  }
  for (int64_t j = 0; j < d; j++) out[j] = 0.0;
  for (int64_t a = 0; a < n && st->code == RD_OK; a += KM_BLOCK) {
    int64_t m = n - a < KM_BLOCK ? n - a : KM_BLOCK;
    if (feat_rows(R, X, idx + a, m, buf, ptr, st) != RD_OK) break;
    for (int64_t i = 0; i < m; i++) {
      if (Y) {
        to_space(sp, ptr + i, 1, Y);
        for (int64_t j = 0; j < d; j++) out[j] += Y[j];
      } else {
        for (int64_t j = 0; j < d; j++) out[j] += (double)ptr[i][j];
      }
    }
  }
  free(buf);
  free(ptr);
  free(Y);
  return st->code;
}

/* Result: [n_cent, then per centroid: d values] of class unit_class[k] of (model, task) unit_pt[k]:
 * with k_per_class = 1 the class mean of T(x) (for mahalanobis L⁻¹ applied to the mean of x, the
 * same by linearity), else k-means in T-space on the class's rows. */
static int km_task(int64_t k, void *argp, double **out, int64_t *n_out, rd_status *st) {
  km_arg *a = argp;
  probe_run *R = a->R;
  ptask *p = &R->pt[a->unit_pt[k]];
  int c = (int)a->unit_class[k];
  const space *sp = &a->spaces[p->m];
  int64_t d = p->X.d, nv = 0;
  int64_t *rows = malloc(sizeof(int64_t) * (size_t)(p->n_va + 1));
  if (!rows) return rd_fail(st, RD_EFAIL, "out of memory for centroids");
  for (int64_t i = 0; i < p->n_va; i++)
    if (p->cls[p->va[i]] == c) rows[nv++] = p->va[i];
  int64_t kk = nv < R->o->k_per_class ? nv : R->o->k_per_class;
  double *o = malloc(sizeof(double) * (size_t)(1 + kk * d));
  if (!o) {
    free(rows);
    return rd_fail(st, RD_EFAIL, "out of memory for centroids");
  }
  o[0] = (double)kk;
  int rc = RD_OK;
  if (kk == 1) {
    double *mean = o + 1;
    rc = class_sum(R, sp, &p->X, rows, nv, mean, st);
    for (int64_t j = 0; j < d; j++) mean[j] /= (double)nv;
    if (rc == RD_OK && sp->distance == DIST_MAHALANOBIS) {
      /* L⁻¹ m: the mean as a one-row "feature" (float would round it): solve in double */
      double *y = malloc(sizeof(double) * (size_t)d);
      if (!y) rc = rd_fail(st, RD_EFAIL, "out of memory for centroids");
      for (int64_t j = 0; y && j < d; j++) {
        const double *lj = sp->L + j * d;
        double t = 0.0;
        for (int64_t q = 0; q < j; q++) t += lj[q] * y[q];
        y[j] = (mean[j] - t) / lj[j];
      }
      if (y) memcpy(mean, y, sizeof(double) * (size_t)d);
      free(y);
    }
  } else if (kk > 1) {
    float *buf = malloc(sizeof(float) * (size_t)(nv * d));
    const float **ptr = malloc(sizeof(float *) * (size_t)nv);
    double *Y = malloc(sizeof(double) * (size_t)(nv * d));
    if (!buf || !ptr || !Y) rc = rd_fail(st, RD_EFAIL, "out of memory for k-means");
    if (rc == RD_OK) rc = feat_rows(R, &p->X, rows, nv, buf, ptr, st);
    if (rc == RD_OK) {
      to_space(sp, ptr, nv, Y);
      rd_stream s;
      char purpose[700];
      snprintf(purpose, sizeof purpose, "probe.kmeans.%s.%s", R->o->n_models ? R->o->models[p->m] : "",
               R->o->tasks[p->t].name);
      rd_stream_init(&s, R->seed, R->job->name, purpose);
      rc = kmeans_class(sp, Y, nv, kk, R->o->km_iters, &s, (uint64_t)c, o + 1, st);
    }
    free(buf);
    free(ptr);
    free(Y);
  }
  free(rows);
  if (rc != RD_OK) {
    free(o);
    return rc;
  }
  *out = o;
  *n_out = 1 + kk * d;
  return RD_OK;
}

/* ---- nearest centroids of rows --------------------------------------------------------------------------- */

/* For rows idx of X (global order), the nearest centroid (first minimum) and its reported distance;
 * rows split over ranks in fixed blocks, gathered on rank 0. */
static int nearest_rows(probe_run *R, const space *sp, feat_src *X, const int64_t *idx, int64_t n, const double *C,
                        const double *cnorm, int64_t nc, int32_t *near, double *dmin, rd_status *st) {
  const rd_ctx *ctx = R->ctx;
  int64_t lo, hi, d = X->d;
  rd_rank_rows(n, KM_BLOCK, ctx->size, ctx->rank, &lo, &hi);
  int64_t mn = hi - lo;
  int32_t *my_near = malloc(sizeof(int32_t) * (size_t)(mn + 1));
  double *my_d = malloc(sizeof(double) * (size_t)(mn + 1));
  float *buf = malloc(sizeof(float) * (size_t)(KM_BLOCK * d));
  const float **ptr = malloc(sizeof(float *) * KM_BLOCK);
  int64_t *ix = malloc(sizeof(int64_t) * KM_BLOCK);
  double *Y = malloc(sizeof(double) * (size_t)(KM_BLOCK * d)), *D = malloc(sizeof(double) * (size_t)(KM_BLOCK * (nc + 1)));
  if (!my_near || !my_d || !buf || !ptr || !ix || !Y || !D) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  for (int64_t a = lo; a < hi && st->code == RD_OK; a += KM_BLOCK) {
    int64_t m = hi - a < KM_BLOCK ? hi - a : KM_BLOCK;
    for (int64_t i = 0; i < m; i++) ix[i] = idx ? idx[a + i] : a + i;
    if (feat_rows(R, X, ix, m, buf, ptr, st) != RD_OK) break;
    if (sp->distance == DIST_EUCLIDEAN) {
      rd_probe_sqdist_cpu(ptr, m, d, C, nc, D);
      for (int64_t i = 0; i < m * nc; i++) D[i] = sqrt(D[i]);
    } else {
      to_space(sp, ptr, m, Y);
      dist_report(sp, Y, m, C, cnorm, nc, D);
    }
    for (int64_t i = 0; i < m; i++) {
      int64_t b = 0;
      for (int64_t k = 1; k < nc; k++)
        if (D[i * nc + k] < D[i * nc + b]) b = k;
      my_near[a - lo + i] = (int32_t)b;
      my_d[a - lo + i] = D[i * nc + b];
    }
  }
  free(buf);
  free(ptr);
  free(ix);
  free(Y);
  free(D);
  if (rd_agree(ctx, st) == RD_OK) {
    rd_gather_rows(ctx, my_near, near, n, KM_BLOCK, sizeof(int32_t));
    rd_gather_rows(ctx, my_d, dmin, n, KM_BLOCK, sizeof(double));
  }
  free(my_near);
  free(my_d);
  return st->code;
}

/* ---- the whole pass --------------------------------------------------------------------------------------------- */

void probe_infer_free(infer_result *ir, int n) {
  for (int m = 0; ir && m < n; m++) {
    free(ir[m].cent);
    free(ir[m].cent_task);
    free(ir[m].cent_class);
    free(ir[m].nearest_task);
    free(ir[m].nearest_class);
    free(ir[m].d_min);
    free(ir[m].kept);
  }
}

int probe_maha_check(probe_run *R, rd_status *st) {
  const rd_ctx *ctx = R->ctx;
  int T = R->o->n_tasks;
  for (int m = 0; m < R->n_models && st->code == RD_OK; m++) {
    int64_t d = R->pt[m * T].X.d;
    if (ctx->rank == m % ctx->size) {
      double shrink, *L = rd_malloc_big(sizeof(double) * (size_t)(d * d), st, "covariance factor");
      if (L) maha_factor(R, m, L, &shrink, st);
      free(L);
    }
    rd_agree(ctx, st);
  }
  return st->code;
}

int probe_kmeans_all(probe_run *R, infer_result *out, rd_status *st) {
  const rd_ctx *ctx = R->ctx;
  const probe_opts *o = R->o;
  int M = R->n_models, T = o->n_tasks;
  space *spaces = calloc((size_t)M, sizeof *spaces);
  double **Ls = calloc((size_t)M, sizeof *Ls);
  if (!spaces || !Ls) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  for (int m = 0; m < M; m++) {
    spaces[m].distance = o->distance;
    spaces[m].d = R->pt[m * T].X.d;
    out[m].shrinkage = NAN;
  }
  /* Mahalanobis factors: model m on rank m mod size, then broadcast */
  if (o->distance == DIST_MAHALANOBIS) {
    for (int m = 0; m < M; m++) {
      int64_t d = spaces[m].d;
      int owner = m % ctx->size;
      Ls[m] = rd_malloc_big(sizeof(double) * (size_t)(d * d), st, "covariance factor");
      if (!Ls[m]) rd_abort(ctx, __FILE__, __LINE__, "out of memory for the covariance factor");
      double shrink = NAN;
      if (ctx->rank == owner) maha_factor(R, m, Ls[m], &shrink, st);
      if (rd_agree(ctx, st) != RD_OK) goto done;
      rd_bcast_bytes(ctx, Ls[m], sizeof(double) * (size_t)(d * d), owner);
      RD_MPI_CHECK(ctx, MPI_Bcast(&shrink, 1, MPI_DOUBLE, owner, ctx->comm));
      out[m].shrinkage = shrink;
      spaces[m].L = Ls[m];
    }
  }
  /* centroids per class of each (model, task), one rank per class */
  {
    int64_t nu = 0;
    for (int i = 0; i < R->n_pt; i++) nu += R->pt[i].C;
    double *cost = malloc(sizeof(double) * (size_t)nu);
    int64_t *upt = malloc(sizeof(int64_t) * (size_t)nu), *ucl = malloc(sizeof(int64_t) * (size_t)nu);
    if (!cost || !upt || !ucl) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
    int64_t u = 0;
    for (int i = 0; i < R->n_pt; i++)
      for (int c = 0; c < R->pt[i].C; c++, u++) {
        int64_t n = 0;
        for (int64_t r = 0; r < R->pt[i].n_va; r++) n += R->pt[i].cls[R->pt[i].va[r]] == c;
        upt[u] = i;
        ucl[u] = c;
        cost[u] = (double)n * (double)R->pt[i].X.d * (double)(o->k_per_class > 1 ? o->k_per_class * 10 : 1);
      }
    double **res = NULL;
    int64_t *lens = NULL;
    km_arg arg = {.R = R, .spaces = spaces, .unit_pt = upt, .unit_class = ucl};
    int rc = rd_run_tasks(ctx, nu, cost, km_task, &arg, &res, &lens, st);
    free(cost);
    if (rc != RD_OK) {
      free(upt);
      free(ucl);
      goto done;
    }
    /* rank 0 assembles each model's centroids (task, class order) and broadcasts them */
    for (int m = 0; m < M; m++) {
      int64_t d = spaces[m].d;
      long long nc = 0;
      if (ctx->rank == 0)
        for (int64_t k = 0; k < nu; k++)
          if (R->pt[upt[k]].m == m) nc += (long long)res[k][0];
      RD_MPI_CHECK(ctx, MPI_Bcast(&nc, 1, MPI_LONG_LONG, 0, ctx->comm));
      out[m].n_cent = nc;
      out[m].cent = malloc(sizeof(double) * (size_t)(nc * d + 1));
      out[m].cent_task = malloc(sizeof(int32_t) * (size_t)(nc + 1));
      out[m].cent_class = malloc(sizeof(int32_t) * (size_t)(nc + 1));
      if (!out[m].cent || !out[m].cent_task || !out[m].cent_class) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
      if (ctx->rank == 0) {
        int64_t j = 0;
        for (int64_t k = 0; k < nu; k++) {
          if (R->pt[upt[k]].m != m) continue;
          for (int64_t q = 0; q < (int64_t)res[k][0]; q++, j++) {
            out[m].cent_task[j] = R->pt[upt[k]].t;
            out[m].cent_class[j] = (int32_t)ucl[k];
            memcpy(out[m].cent + j * d, res[k] + 1 + q * d, sizeof(double) * (size_t)d);
          }
        }
      }
      rd_bcast_bytes(ctx, out[m].cent, sizeof(double) * (size_t)(nc * d), 0);
      rd_bcast_bytes(ctx, out[m].cent_task, sizeof(int32_t) * (size_t)nc, 0);
      rd_bcast_bytes(ctx, out[m].cent_class, sizeof(int32_t) * (size_t)nc, 0);
    }
    rd_free_task_results(res, lens, nu);
    free(upt);
    free(ucl);
  }
  /* tau from the validation rows' d_min, and the inference rows */
  for (int m = 0; m < M; m++) {
    infer_result *ir = &out[m];
    int64_t d = spaces[m].d, nc = ir->n_cent;
    double *cnorm = malloc(sizeof(double) * (size_t)(nc + 1));
    if (!cnorm) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
    for (int64_t k = 0; k < nc; k++) cnorm[k] = sqrt(rd_probe_sumsq(ir->cent + k * d, d));
    ir->tau = o->tau;
    if (o->tau_quantile) {
      int64_t nv = 0;
      for (int t = 0; t < T; t++) nv += R->pt[m * T + t].n_va;
      ir->n_val_rows = nv;
      int32_t *vn = ctx->rank == 0 ? malloc(sizeof(int32_t) * (size_t)(nv + 1)) : NULL;
      double *vd = ctx->rank == 0 ? malloc(sizeof(double) * (size_t)(nv + 1)) : NULL;
      if (ctx->rank == 0 && (!vn || !vd)) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
      int64_t at = 0;
      for (int t = 0; t < T && st->code == RD_OK; t++) {
        ptask *p = &R->pt[m * T + t];
        nearest_rows(R, &spaces[m], &p->X, p->va, p->n_va, ir->cent, cnorm, nc, vn ? vn + at : NULL,
                     vd ? vd + at : NULL, st);
        at += p->n_va;
      }
      if (ctx->rank == 0 && st->code == RD_OK) {
        rd_sort_doubles(vd, (size_t)nv);
        rd_quantiles_sorted(vd, (size_t)nv, &o->tau, 1, &ir->tau);
      }
      free(vn);
      free(vd);
      if (st->code != RD_OK) {
        free(cnorm);
        goto done;
      }
    }
    feat_src *XI = &R->infer[m];
    ir->n = XI->N;
    if (XI->N > 0) {
      int32_t *near = ctx->rank == 0 ? malloc(sizeof(int32_t) * (size_t)XI->N) : NULL;
      double *dm = ctx->rank == 0 ? malloc(sizeof(double) * (size_t)XI->N) : NULL;
      if (ctx->rank == 0 && (!near || !dm)) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
      if (nearest_rows(R, &spaces[m], XI, NULL, XI->N, ir->cent, cnorm, nc, near, dm, st) == RD_OK && ctx->rank == 0) {
        ir->nearest_task = malloc(sizeof(int32_t) * (size_t)XI->N);
        ir->nearest_class = malloc(sizeof(int32_t) * (size_t)XI->N);
        ir->kept = malloc((size_t)XI->N);
        if (!ir->nearest_task || !ir->nearest_class || !ir->kept) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
        for (int64_t i = 0; i < XI->N; i++) {
          ir->nearest_task[i] = ir->cent_task[near[i]];
          ir->nearest_class[i] = ir->cent_class[near[i]];
          ir->kept[i] = dm[i] <= ir->tau;
        }
        ir->d_min = dm;
        dm = NULL;
      }
      free(near);
      free(dm);
    }
    free(cnorm);
    if (st->code != RD_OK) goto done;
  }
done:
  for (int m = 0; m < M; m++) free(Ls[m]);
  free(Ls);
  free(spaces);
  return st->code;
}

/* ---- Student t quantile ------------------------------------------------------------------------------------------- */

/* Regularized incomplete beta I_x(a, b) by Lentz's continued fraction. */
static double betacf(double a, double b, double x) {
  const double tiny = 1e-300;
  double qab = a + b, qap = a + 1.0, qam = a - 1.0, c = 1.0, d = 1.0 - qab * x / qap;
  if (fabs(d) < tiny) d = tiny;
  d = 1.0 / d;
  double h = d;
  for (int m = 1; m <= 1000; m++) {
    double m2 = 2.0 * m, aa = m * (b - m) * x / ((qam + m2) * (a + m2));
    d = 1.0 + aa * d;
    if (fabs(d) < tiny) d = tiny;
    c = 1.0 + aa / c;
    if (fabs(c) < tiny) c = tiny;
    d = 1.0 / d;
    h *= d * c;
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
    d = 1.0 + aa * d;
    if (fabs(d) < tiny) d = tiny;
    c = 1.0 + aa / c;
    if (fabs(c) < tiny) c = tiny;
    d = 1.0 / d;
    double del = d * c;
    h *= del;
    if (fabs(del - 1.0) < 1e-16) break;
  }
  return h;
}

static double ibeta(double a, double b, double x) {
  if (x <= 0.0) return 0.0;
  if (x >= 1.0) return 1.0;
  double bt = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x));
  if (x < (a + 1.0) / (a + b + 2.0)) return bt * betacf(a, b, x) / a;
  return 1.0 - bt * betacf(b, a, 1.0 - x) / b;
}

/* P(T <= t) for Student's t with df degrees of freedom. */
static double t_cdf(double t, double df) {
  double x = df / (df + t * t), tail = 0.5 * ibeta(0.5 * df, 0.5, x);
  return t >= 0 ? 1.0 - tail : tail;
}

double probe_t_quantile(double p, double df) {
  if (!(df > 0) || !(p > 0.0 && p < 1.0)) return NAN;
  if (p < 0.5) return -probe_t_quantile(1.0 - p, df);
  double lo = 0.0, hi = 1.0;
  while (t_cdf(hi, df) < p) hi *= 2.0;
  for (int i = 0; i < 200; i++) {
    double mid = 0.5 * (lo + hi);
    if (t_cdf(mid, df) < p) lo = mid;
    else hi = mid;
    if (hi - lo <= 1e-15 * hi) break;
  }
  return 0.5 * (lo + hi);
}
