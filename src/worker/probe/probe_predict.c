/* probe: predictions of a trained probe (every head) on validation or test rows, the rows split
 * over the group in fixed blocks, with the count of near ties (predictions another backend may
 * decide the other way: see docs/reference.md, 'Near-tie rule'). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe_internal.h"

/* Rows per block when evaluating validation and test rows. */
#define EVAL_BLOCK 256

int probe_predict(probe_run *R, const rd_ctx *g, feat_src *X, const int64_t *idx, int64_t n,
                  const rd_probe_heads *h, int32_t *pred, int64_t *near, rd_status *st) {
  int L = h->L, K = h->K, O = L * K;
  for (int l = 0; l < L; l++) near[l] = 0;
  int64_t lo, hi, d = X->d;
  rd_rank_rows(n, EVAL_BLOCK, g->size, g->rank, &lo, &hi);
  int32_t *mine = malloc(sizeof(int32_t) * (size_t)((hi - lo) * L + 1));
  float *buf = malloc(sizeof(float) * (size_t)(EVAL_BLOCK * d));
  const float **ptr = malloc(sizeof(float *) * EVAL_BLOCK);
  double *z = malloc(sizeof(double) * (size_t)(EVAL_BLOCK * O));
  if (!mine || !buf || !ptr || !z) rd_abort(g, __FILE__, __LINE__, "out of memory evaluating");
  for (int64_t a = lo; a < hi && st->code == RD_OK; a += EVAL_BLOCK) {
    int64_t m = hi - a < EVAL_BLOCK ? hi - a : EVAL_BLOCK;
    if (feat_rows(R, X, idx + a, m, buf, ptr, st) != RD_OK) break;
    rd_probe_logits_cpu(h, ptr, m, z);
    for (int64_t i = 0; i < m; i++) {
      rd_probe_predict(L, K, z + i * O, mine + (a - lo + i) * L);
      for (int l = 0; l < L; l++) near[l] += rd_probe_near_tie(K, z + i * O + (int64_t)l * K);
    }
  }
  free(buf);
  free(ptr);
  free(z);
  if (rd_agree(g, st) != RD_OK) {
    free(mine);
    return st->code;
  }
  rd_gather_rows(g, mine, pred, n, EVAL_BLOCK, sizeof(int32_t) * (size_t)L);
  free(mine);
  RD_MPI_CHECK(g, MPI_Allreduce(MPI_IN_PLACE, near, L, MPI_INT64_T, MPI_SUM, g->comm));
  return RD_OK;
}
