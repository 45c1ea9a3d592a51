/* probe: the planner's estimate of a job (rank 0, after the layout was checked), from the input's
 * shapes (rows and features of every (model, task), inference rows, element types) and the options
 * (mode, classes, grid, seeds, kmeans), without reading labels, splits or features: a few hundred
 * microseconds, most of it opening the file. */
#include <math.h>
#include <stdio.h>

#include "probe_internal.h"

/* Calibration: bench/calibrate_estimates.py (docs/design.md, 'Planner estimates'): tasks of 2,000 to
 * 30,000 rows of 256 to 4096 float32 features (one float16), 2-5 classes, 1-3 seeds, 3-6 learning
 * rates, one or two models, kmeans off, on (1 or 4 centroids per class) and Mahalanobis, L-BFGS with
 * and without standardizing; one rank, page cache warm, on the 2-vCPU VM of bench/README.md.
 * Measured: CPU seconds of the run less those of `--plan`, split into rank 0's part and the rest by
 * the phases' times (RMDIAG_TIMING=1); each part fitted by least squares (non-negative, relative
 * errors) on its size terms:
 *   rank 0:   FIXED + rows x LABEL (labels and splits read, classes and lists; the report)
 *   parallel: scanned x SCAN + read x READ + trained x ROW + fma x FMA + lbfgs x LBFGS + kmeans x
 *             KMEANS + maha x MAHA
 *             (every used feature checked, mapped pages first touched; features HDF5 must convert,
 *             read; each epoch's rows; the multiply-adds of training (forward and gradient, every
 *             head) and evaluation; L-BFGS evaluations; distances to the centroids and Lloyd's
 *             iterations; the Mahalanobis covariance, factor and transformed rows)
 * Over 15 cases the fit is within 0.58-1.22x of the measured time for the 11 cases of 50 ms and
 * more (R^2 0.97); below that the measurement is mostly noise. */
#define FIXED_S 0.007
#define LABEL_S 7.6e-7
#define SCAN_S 1.9e-9
#define READ_S 2.9e-8
#define ROW_S 1.2e-9
#define FMA_S 1.8e-11
#define LBFGS_S 1.6e-10
#define KMEANS_S 8e-10
#define MAHA_S 9.2e-11
/* a rank should have at least about 10 ms of work, or the collectives cost more than it saves */
#define MIN_RANK_S 0.01
/* Without reading the splits: the usual 80 / 10 / 10 of the rows; L-BFGS evaluations per fit. */
#define TRAIN_SHARE 0.8
#define EVAL_SHARE 0.1
#define LBFGS_EVALS 40

/* The features of one dataset: rows, columns, and whether HDF5 must convert or decompress them (not
 * float32 stored contiguous or in chunks of whole rows, unfiltered; so not mapped). 0, or -1 when the
 * dataset cannot be opened. */
typedef struct feat_shape {
  double N, d;
  int read;
} feat_shape;

static int feat_shape_of(hid_t f, const char *group, const char *name, feat_shape *x) {
  int64_t dims[4];
  size_t esize = 0;
  int plain = 0;
  if (rd_h5_shape(f, group, name, dims, &esize, &plain) != 2) return -1;
  *x = (feat_shape){(double)dims[0], (double)dims[1], !(plain && esize == 4)};
  return 0;
}

void probe_estimate(hid_t f, const rd_job *job, rd_job_cost *cost) {
  const probe_opts *o = job->opts;
  int lb = o->mode == PROBE_LBFGS, n_models = o->n_models ? o->n_models : 1, ok = 1;
  double S = lb ? 1.0 : (double)o->n_seeds, NG = (double)o->n_grid, kpc = o->kmeans ? (double)o->k_per_class : 0.0;
  double evals = fmin((double)o->max_iter + 1.0, LBFGS_EVALS);
  double labels = 0, scan = 0, read = 0, rows = 0, fma = 0, lbfgs = 0, km = 0, maha = 0;
  for (int m = 0; m < n_models && ok; m++) {
    /* the shapes alone (validate checked the layout): GROUP[/RM]/TASK/X and GROUP[/RM]/infer/X */
    char mgroup[600], tgroup[1200];
    ok = (o->n_models ? rd_h5_path(mgroup, sizeof mgroup, job->group, o->models[m])
                      : snprintf(mgroup, sizeof mgroup, "%s", job->group)) >= 0;
    double val = 0, cent = 0, d = 0;
    for (int t = 0; t < o->n_tasks && ok; t++) {
      feat_shape x;
      ok = rd_h5_path(tgroup, sizeof tgroup, mgroup, o->tasks[t].name) >= 0 && feat_shape_of(f, tgroup, "X", &x) == 0;
      if (!ok) break;
      double N = x.N, C = (double)o->tasks[t].n_classes, n_tr = TRAIN_SHARE * N, n_ev = EVAL_SHARE * N;
      d = x.d;
      labels += N;
      scan += N * d;
      if (x.read) read += N * d;
      if (lb) {
        lbfgs += NG * evals * n_tr * d * C * (o->standardize ? 2.0 : 1.0);
        fma += NG * 2.0 * n_ev * d * C;
      } else {
        double K = C == 2 ? 1.0 : C;  /* one logit for two classes */
        rows += S * n_tr * d;
        fma += S * d * NG * K * (2.0 * n_tr + 2.0 * n_ev);
      }
      val += n_ev;
      cent += C * kpc;
    }
    feat_shape inf = {0, 0, 0};
    if (ok && feat_shape_of(f, mgroup, "infer/X", &inf) == 0) {
      scan += inf.N * d;
      if (inf.read) read += inf.N * d;
    }
    if (ok && o->kmeans) {
      km += (val + inf.N) * d * cent + (kpc > 1 ? (double)o->km_iters * val * kpc * d : 0.0);
      if (o->distance == DIST_MAHALANOBIS) maha += (val + inf.N + cent) * d * d + d * d * d / 3.0;
    }
  }
  if (ok && o->n_tasks > 0) {
    double rank0 = FIXED_S + labels * LABEL_S;
    double parallel = scan * SCAN_S + read * READ_S + rows * ROW_S + fma * FMA_S + lbfgs * LBFGS_S + km * KMEANS_S +
                      maha * MAHA_S;
    cost->seconds = rank0 + parallel;
    cost->serial = rank0 / cost->seconds;
    /* configurations ((model, task, seed) with the learning rates, or (model, task, l2)) go to groups
     * of up to RD_PROBE_UNITS ranks; an idle rank takes a share of a configuration's grid */
    double configs = (double)n_models * o->n_tasks * (lb ? NG : S * NG);
    double mr = fmax(1.0, fmin(configs * RD_PROBE_UNITS, floor(parallel / MIN_RANK_S)));
    cost->max_ranks = mr > 1 << 20 ? 1 << 20 : (int)mr;
  }
}
