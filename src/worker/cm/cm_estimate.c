/* cm: the planner's estimate of a job (rank 0, after the layout was checked), from the input's
 * layout and the options, without reading the rows. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cm_internal.h"

/* Calibration (one core of the 2-vCPU Debian VM of bench/README.md, page cache warm; CPU seconds of
 * plain-process runs, which on a quiet machine are the wall time; bench/bench_cm_full.py):
 * 4M x 50 float32 took 3.05 s, 4M x 10 1.29 s, 1M x 50 0.72 s, 137K x 25 0.25 s with process start,
 * so about 11 ns per reward element (mapping, first touch, checks, sigmoid, sums) and 230 ns per
 * pair, of which rank 0 alone spends about 130 (the output's 36 bytes per pair written to the page
 * cache, its per-pair arrays' fresh pages, the user sums passed from rank to rank); float64 rows
 * read 17 bytes per element instead of 9. 1000 replicates of 40,000 users took 0.29 s (7 ns per
 * drawn user); a stratum about 50 ns per pair on rank 0. */
#define NS_PER_ELEM_F32 11e-9
#define NS_PER_ELEM_F64 17e-9
#define NS_PER_PAIR_PARALLEL 100e-9
#define NS_PER_PAIR_RANK0 130e-9
#define NS_PER_DRAW 7e-9
#define NS_PER_STRATUM_PAIR 50e-9
#define FIXED_S 0.003
/* a rank should have at least about 10 ms of rows, or the collectives cost more than it saves */
#define MIN_ELEMS_PER_RANK (1 << 20)
#define ID_SAMPLE 65536

/* Users among P pairs from the distinct ids d among the first n: the U for which n uniform draws
 * from U users show d distinct on average, U (1 - exp(-n / U)) = d (all distinct: every pair its
 * own user, as far as the sample tells). String ids are not sampled: P / 20. */
static double users_estimate(hid_t f, const rd_job *job, const cm_layout *L) {
  double P = (double)L->P;
  if (L->user.tclass == RD_TC_STRING) return fmax(1.0, P / 20.0);
  int64_t n = L->P < ID_SAMPLE ? L->P : ID_SAMPLE;
  uint64_t *ids = malloc(sizeof(uint64_t) * (size_t)n);
  rd_status st;
  rd_status_init(&st);
  if (!ids || rd_h5_read_int_words(f, job->input, &L->user, 0, n, ids, &st) != RD_OK) {
    free(ids);
    return fmax(1.0, P / 20.0);
  }
  rd_sort_u64(ids, (size_t)n);
  int64_t d = n > 0;
  for (int64_t i = 1; i < n; i++) d += ids[i] != ids[i - 1];
  free(ids);
  if (n == L->P) return (double)d;
  if (d >= n) return P;
  double lo = (double)d, hi = P;  /* the expected distinct count grows with U */
  for (int it = 0; it < 60; it++) {
    double mid = 0.5 * (lo + hi);
    if (mid * (1.0 - exp(-(double)n / mid)) < (double)d) lo = mid;
    else hi = mid;
  }
  return 0.5 * (lo + hi);
}

void cm_estimate(hid_t f, const rd_job *job, rd_job_cost *cost) {
  const cm_opts *o = job->opts;
  rd_status st;
  rd_status_init(&st);
  cm_layout L;
  memset(&L, 0, sizeof L);
  if (cm_check_layout(f, job, &L, &st) == RD_OK) {
    double P = (double)L.P, E = P * (double)L.R, U = users_estimate(f, job, &L), B = (double)o->bootstrap;
    double rank0 = FIXED_S + P * (NS_PER_PAIR_RANK0 + NS_PER_STRATUM_PAIR * o->n_strata);
    double parallel = E * (L.ftype == RD_F32 ? NS_PER_ELEM_F32 : NS_PER_ELEM_F64) + P * NS_PER_PAIR_PARALLEL +
                      B * U * NS_PER_DRAW;
    cost->seconds = rank0 + parallel;
    cost->serial = rank0 / cost->seconds;
    /* rows go to ranks in blocks of CM_BLOCK pairs; replicates in chunks */
    double by_rows = fmin(ceil(P / CM_BLOCK), floor(E / MIN_ELEMS_PER_RANK));
    double by_boot = fmin(B, floor(B * U / MIN_ELEMS_PER_RANK));
    double m = fmax(1.0, fmax(by_rows, by_boot));
    cost->max_ranks = m > 1 << 20 ? 1 << 20 : (int)m;
  }
  free(L.cov);
}
