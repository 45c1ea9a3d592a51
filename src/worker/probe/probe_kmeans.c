/* probe: inference-time probing (docs/reference.md, 'Inference-time probing (kmeans)'): centroids
 * per class of each task from its validation rows, and for each inference row the nearest
 * centroid's task, its distance d_min and whether it is kept (d_min <= tau).
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

/* ---- T-space --------------------------------------------------------------------------------- */

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

/* ---- k-means on one class -------------------------------------------------------------------- */

static void mean_rows(const double *Y, const int64_t *idx, int64_t n, int64_t d, double *out) {
  for (int64_t j = 0; j < d; j++) out[j] = 0.0;
  for (int64_t i = 0; i < n; i++) {
    const double *y = Y + idx[i] * d;
    for (int64_t j = 0; j < d; j++) out[j] += y[j];
  }
  for (int64_t j = 0; j < d; j++) out[j] /= (double)n;
}

/* Scratch of k-means on one class of n rows and k centres. */
typedef struct km_work {
  double *D, *best;          /* [n, k] squared distances, [n] to the nearest centre */
  int64_t *lab, *cnt, *members;
  uint8_t *used;             /* rows already taken as a centre */
} km_work;

static void km_work_free(km_work *w) {
  free(w->D);
  free(w->best);
  free(w->lab);
  free(w->cnt);
  free(w->members);
  free(w->used);
}

static int km_work_alloc(km_work *w, int64_t n, int64_t k) {
  w->D = malloc(sizeof(double) * (size_t)(n * k));
  w->best = malloc(sizeof(double) * (size_t)n);
  w->lab = malloc(sizeof(int64_t) * (size_t)n);
  w->cnt = malloc(sizeof(int64_t) * (size_t)k);
  w->members = malloc(sizeof(int64_t) * (size_t)n);
  w->used = calloc((size_t)n, 1);
  return w->D && w->best && w->lab && w->cnt && w->members && w->used ? 0 : -1;
}

/* k-means++: the first centre uniform (draw 0 of replicate rep), then ∝ D² (draw c). */
static void kmeans_seed(const space *sp, const double *Y, int64_t n, int64_t k, const rd_stream *s, uint64_t rep,
                        double *C, km_work *w) {
  int64_t d = sp->d;
  int64_t first = (int64_t)rd_rng_below(s, rep, 0, (uint64_t)n);
  memcpy(C, Y + first * d, sizeof(double) * (size_t)d);
  w->used[first] = 1;
  dist_sq(sp, Y, n, C, 1, w->best);
  for (int64_t c = 1; c < k; c++) {
    double total = 0.0;
    for (int64_t i = 0; i < n; i++) total += w->best[i];
    int64_t pick = -1;
    if (total > 0.0 && isfinite(total)) {
      double u = rd_rng_uniform(s, rep, (uint64_t)c) * total, acc = 0.0;
      for (int64_t i = 0; i < n; i++) {
        acc += w->best[i];
        if (acc > u && w->best[i] > 0.0) {
          pick = i;
          break;
        }
      }
    }
    if (pick < 0) /* every row coincides with a centre: the lowest unused row */
      for (int64_t i = 0; i < n && pick < 0; i++)
        if (!w->used[i]) pick = i;
    if (pick < 0) pick = 0;
    w->used[pick] = 1;
    memcpy(C + c * d, Y + pick * d, sizeof(double) * (size_t)d);
    double *dc = w->D;
    dist_sq(sp, Y, n, C + c * d, 1, dc);
    for (int64_t i = 0; i < n; i++)
      if (dc[i] < w->best[i]) w->best[i] = dc[i];
  }
}

/* Moves each centre to the mean of its rows; an empty cluster takes the unused row farthest from
 * its centre (ties to the lowest row). */
static void kmeans_update(const space *sp, const double *Y, int64_t n, int64_t k, double *C, km_work *w) {
  int64_t d = sp->d;
  memset(w->used, 0, (size_t)n);
  for (int64_t c = 0; c < k; c++) {
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++)
      if (w->lab[i] == c) w->members[m++] = i;
    w->cnt[c] = m;
    if (m > 0) mean_rows(Y, w->members, m, d, C + c * d);
  }
  for (int64_t c = 0; c < k; c++) {
    if (w->cnt[c] > 0) continue;
    int64_t far = -1;
    for (int64_t i = 0; i < n; i++)
      if (!w->used[i] && (far < 0 || w->best[i] > w->best[far])) far = i;
    if (far < 0) far = 0;
    w->used[far] = 1;
    memcpy(C + c * d, Y + far * d, sizeof(double) * (size_t)d);
    w->best[far] = 0.0;
  }
}

/* Lloyd iterations until the assignment stops changing or `iters`. */
static void kmeans_lloyd(const space *sp, const double *Y, int64_t n, int64_t k, int64_t iters, double *C,
                         km_work *w) {
  for (int64_t i = 0; i < n; i++) w->lab[i] = -1;
  for (int64_t it = 0; it < iters; it++) {
    dist_sq(sp, Y, n, C, k, w->D);
    int changed = 0;
    for (int64_t i = 0; i < n; i++) {
      int64_t b = 0;
      for (int64_t c = 1; c < k; c++)
        if (w->D[i * k + c] < w->D[i * k + b]) b = c;
      w->best[i] = w->D[i * k + b];
      if (w->lab[i] != b) changed = 1;
      w->lab[i] = b;
    }
    if (!changed) break;
    kmeans_update(sp, Y, n, k, C, w);
  }
}

/* k centroids of the n T-space rows Y (n >= k >= 1): the mean when k = 1, else k-means++ from the
 * stream (replicate rep), then Lloyd iterations. */
static int kmeans_class(const space *sp, const double *Y, int64_t n, int64_t k, int64_t iters, const rd_stream *s,
                        uint64_t rep, double *C, rd_status *st) {
  int64_t d = sp->d;
  if (k == 1) {
    int64_t *all = malloc(sizeof(int64_t) * (size_t)n);
    if (!all) return rd_fail(st, RD_EFAIL, "out of memory in k-means");
    for (int64_t i = 0; i < n; i++) all[i] = i;
    mean_rows(Y, all, n, d, C);
    free(all);
    return RD_OK;
  }
  km_work w;
  int ok = km_work_alloc(&w, n, k) == 0;
  if (ok) {
    kmeans_seed(sp, Y, n, k, s, rep, C, &w);
    kmeans_lloyd(sp, Y, n, k, iters, C, &w);
  }
  km_work_free(&w);
  return ok ? RD_OK : rd_fail(st, RD_EFAIL, "out of memory in k-means");
}

/* ---- Mahalanobis: the shrunk pooled within-class covariance ---------------------------------- */

/* Accumulates into the lower triangle of L [d, d] the scatter Σ_i (x_i − m_c(i))(x_i − m_c(i))ᵀ of
 * task p's validation rows around their class means (first pass: the means; second: the scatter,
 * in blocks, and Σ_i ‖x_i − m_c(i)‖⁴ into *fourth). A is KM_BLOCK rows of scratch. */
static int maha_scatter(probe_run *R, ptask *p, double *L, double *fourth, float *buf, const float **ptr, double *A,
                        rd_status *st) {
  int64_t d = p->X.d;
  double *means = calloc((size_t)(p->C * d), sizeof(double));
  int64_t *cnt = calloc((size_t)p->C, sizeof(int64_t));
  if (!means || !cnt) {
    free(means);
    free(cnt);
    return rd_fail(st, RD_EFAIL, "out of memory for the covariance");
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
          *fourth += q * q;
        }
      }
      if (pass == 1)
        cblas_dsyrk(CblasRowMajor, CblasLower, CblasTrans, (int)d, (int)nb, 1.0, A, (int)d, 1.0, L, (int)d);
    }
    if (pass == 0)
      for (int c = 0; c < p->C; c++)
        for (int64_t j = 0; j < d; j++) means[c * d + j] = cnt[c] ? means[c * d + j] / (double)cnt[c] : 0.0;
  }
  free(means);
  free(cnt);
  return st->code;
}

/* From the scatter of n rows in L: Σ̂ = (1 − s) S + s μ I with S = scatter / n, μ = tr(S)/d and
 * Ledoit–Wolf's s = min(β, δ)/δ, δ = ‖S − μI‖²_F / d, β = (fourth / n − ‖S‖²_F) / (d n); then its
 * Cholesky factor in L (lower, the upper part zeroed). */
static int maha_shrink_factor(probe_run *R, int m, int64_t d, double n, double fourth, double *L, double *shrink,
                              rd_status *st) {
  double tr = 0.0, fro = 0.0;
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

/* Rank `owner`: L with Σ̂ = L Lᵀ, the shrunk pooled within-class covariance of the validation rows
 * of every task of model m (m_c = the row's class mean; see maha_shrink_factor). */
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
    if (maha_scatter(R, p, L, &fourth, buf, ptr, A, st) != RD_OK) break;
    n_all += p->n_va;
  }
  free(buf);
  free(ptr);
  free(A);
  if (st->code != RD_OK) return st->code;
  return maha_shrink_factor(R, m, d, (double)n_all, fourth, L, shrink, st);
}

/* ---- tasks: centroids of one class of one (model, task) -------------------------------------- */

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

/* ---- nearest centroids of rows --------------------------------------------------------------- */

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
  double *Y = malloc(sizeof(double) * (size_t)(KM_BLOCK * d));
  double *D = malloc(sizeof(double) * (size_t)(KM_BLOCK * (nc + 1)));
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

/* ---- the whole pass -------------------------------------------------------------------------- */

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

/* Collective: each model's Mahalanobis factor, computed by rank m mod size and broadcast. */
static int kmeans_factors(probe_run *R, space *spaces, double **Ls, infer_result *out, rd_status *st) {
  const rd_ctx *ctx = R->ctx;
  for (int m = 0; m < R->n_models; m++) {
    int64_t d = spaces[m].d;
    int owner = m % ctx->size;
    Ls[m] = rd_malloc_big(sizeof(double) * (size_t)(d * d), st, "covariance factor");
    if (!Ls[m]) rd_abort(ctx, __FILE__, __LINE__, "out of memory for the covariance factor");
    double shrink = NAN;
    if (ctx->rank == owner) maha_factor(R, m, Ls[m], &shrink, st);
    if (rd_agree(ctx, st) != RD_OK) return st->code;
    rd_bcast_bytes(ctx, Ls[m], sizeof(double) * (size_t)(d * d), owner);
    RD_MPI_CHECK(ctx, MPI_Bcast(&shrink, 1, MPI_DOUBLE, owner, ctx->comm));
    out[m].shrinkage = shrink;
    spaces[m].L = Ls[m];
  }
  return RD_OK;
}

/* Collective: model m's centroids in (task, class) order, assembled on rank 0 from the classes'
 * results res[k] (unit k = class ucl[k] of (model, task) upt[k]) and broadcast. */
static void kmeans_assemble(probe_run *R, int m, int64_t d, int64_t nu, const int64_t *upt, const int64_t *ucl,
                            double **res, infer_result *ir) {
  const rd_ctx *ctx = R->ctx;
  long long nc = 0;
  if (ctx->rank == 0)
    for (int64_t k = 0; k < nu; k++)
      if (R->pt[upt[k]].m == m) nc += (long long)res[k][0];
  RD_MPI_CHECK(ctx, MPI_Bcast(&nc, 1, MPI_LONG_LONG, 0, ctx->comm));
  ir->n_cent = nc;
  ir->cent = malloc(sizeof(double) * (size_t)(nc * d + 1));
  ir->cent_task = malloc(sizeof(int32_t) * (size_t)(nc + 1));
  ir->cent_class = malloc(sizeof(int32_t) * (size_t)(nc + 1));
  if (!ir->cent || !ir->cent_task || !ir->cent_class) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  if (ctx->rank == 0) {
    int64_t j = 0;
    for (int64_t k = 0; k < nu; k++) {
      if (R->pt[upt[k]].m != m) continue;
      for (int64_t q = 0; q < (int64_t)res[k][0]; q++, j++) {
        ir->cent_task[j] = R->pt[upt[k]].t;
        ir->cent_class[j] = (int32_t)ucl[k];
        memcpy(ir->cent + j * d, res[k] + 1 + q * d, sizeof(double) * (size_t)d);
      }
    }
  }
  rd_bcast_bytes(ctx, ir->cent, sizeof(double) * (size_t)(nc * d), 0);
  rd_bcast_bytes(ctx, ir->cent_task, sizeof(int32_t) * (size_t)nc, 0);
  rd_bcast_bytes(ctx, ir->cent_class, sizeof(int32_t) * (size_t)nc, 0);
}

/* Collective: the centroids per class of each (model, task), one rank per class, then every
 * model's centroids on every rank. */
static int kmeans_centroids(probe_run *R, space *spaces, infer_result *out, rd_status *st) {
  const rd_ctx *ctx = R->ctx;
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
      cost[u] = (double)n * (double)R->pt[i].X.d * (double)(R->o->k_per_class > 1 ? R->o->k_per_class * 10 : 1);
    }
  double **res = NULL;
  int64_t *lens = NULL;
  km_arg arg = {.R = R, .spaces = spaces, .unit_pt = upt, .unit_class = ucl};
  int rc = rd_run_tasks(ctx, nu, cost, km_task, &arg, &res, &lens, st);
  free(cost);
  if (rc == RD_OK) {
    for (int m = 0; m < R->n_models; m++) kmeans_assemble(R, m, spaces[m].d, nu, upt, ucl, res, &out[m]);
    rd_free_task_results(res, lens, nu);
  }
  free(upt);
  free(ucl);
  return rc;
}

/* Collective: tau as the quantile of the validation rows' d_min over every task of model m. */
static int kmeans_tau(probe_run *R, int m, const space *sp, const double *cnorm, infer_result *ir, rd_status *st) {
  const rd_ctx *ctx = R->ctx;
  int T = R->o->n_tasks;
  int64_t nv = 0, nc = ir->n_cent;
  for (int t = 0; t < T; t++) nv += R->pt[m * T + t].n_va;
  ir->n_val_rows = nv;
  int32_t *vn = ctx->rank == 0 ? malloc(sizeof(int32_t) * (size_t)(nv + 1)) : NULL;
  double *vd = ctx->rank == 0 ? malloc(sizeof(double) * (size_t)(nv + 1)) : NULL;
  if (ctx->rank == 0 && (!vn || !vd)) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  int64_t at = 0;
  for (int t = 0; t < T && st->code == RD_OK; t++) {
    ptask *p = &R->pt[m * T + t];
    nearest_rows(R, sp, &p->X, p->va, p->n_va, ir->cent, cnorm, nc, vn ? vn + at : NULL, vd ? vd + at : NULL, st);
    at += p->n_va;
  }
  if (ctx->rank == 0 && st->code == RD_OK) {
    rd_sort_doubles(vd, (size_t)nv);
    rd_quantiles_sorted(vd, (size_t)nv, &R->o->tau, 1, &ir->tau);
  }
  free(vn);
  free(vd);
  return st->code;
}

/* Collective: the nearest centroid of each inference row of model m (rank 0 keeps them), its task
 * and class, d_min and whether it is kept. */
static int kmeans_infer(probe_run *R, int m, const space *sp, const double *cnorm, infer_result *ir, rd_status *st) {
  const rd_ctx *ctx = R->ctx;
  feat_src *XI = &R->infer[m];
  ir->n = XI->N;
  if (XI->N == 0) return RD_OK;
  int32_t *near = ctx->rank == 0 ? malloc(sizeof(int32_t) * (size_t)XI->N) : NULL;
  double *dm = ctx->rank == 0 ? malloc(sizeof(double) * (size_t)XI->N) : NULL;
  if (ctx->rank == 0 && (!near || !dm)) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
  if (nearest_rows(R, sp, XI, NULL, XI->N, ir->cent, cnorm, ir->n_cent, near, dm, st) == RD_OK && ctx->rank == 0) {
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
  return st->code;
}

/* Collective: tau (fixed, or from the validation rows) and the inference rows of model m. */
static int kmeans_model(probe_run *R, int m, const space *sp, infer_result *ir, rd_status *st) {
  int64_t d = sp->d, nc = ir->n_cent;
  double *cnorm = malloc(sizeof(double) * (size_t)(nc + 1));
  if (!cnorm) rd_abort(R->ctx, __FILE__, __LINE__, "out of memory");
  for (int64_t k = 0; k < nc; k++) cnorm[k] = sqrt(rd_probe_sumsq(ir->cent + k * d, d));
  ir->tau = R->o->tau;
  if (!R->o->tau_quantile || kmeans_tau(R, m, sp, cnorm, ir, st) == RD_OK) kmeans_infer(R, m, sp, cnorm, ir, st);
  free(cnorm);
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
  int rc = RD_OK;
  if (o->distance == DIST_MAHALANOBIS) rc = kmeans_factors(R, spaces, Ls, out, st);
  if (rc == RD_OK) rc = kmeans_centroids(R, spaces, out, st);
  for (int m = 0; m < M && rc == RD_OK; m++) rc = kmeans_model(R, m, &spaces[m], &out[m], st);
  for (int m = 0; m < M; m++) free(Ls[m]);
  free(Ls);
  free(spaces);
  return st->code;
}
