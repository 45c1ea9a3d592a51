/* cm: categorical covariates stored as strings (the category names, "" where missing). The names are
 * sorted by their bytes (UTF-8 code point order) and each pair's category becomes a code, its name's
 * index in that order (NaN when missing): the strata code groups codes like numeric categories, and
 * the report names each stratum by its category. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cm_internal.h"
#include "rmdiag/common/idmap.h"

void cm_categories_free(cm_categories *c) {
  free(c->buf);
  free(c->off);
  memset(c, 0, sizeof *c);
}

static int cmp_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The distinct names of `ids` (ids[p] = -1 when missing) sorted, packed into c; rank[id] = the sorted
 * position of name id. */
static int sort_names(const rd_idmap *m, cm_categories *c, int64_t *rank, rd_status *st) {
  int64_t K = m->n;
  char **sorted = malloc(sizeof(char *) * (size_t)(K ? K : 1));
  size_t total = 0;
  for (int64_t k = 0; k < K; k++) total += m->lens[k] + 1;
  c->buf = malloc(total ? total : 1);
  c->off = malloc(sizeof(int64_t) * (size_t)(K + 1));
  if (!sorted || !c->buf || !c->off) {
    free(sorted);
    return rd_fail(st, RD_EFAIL, "out of memory reading a categorical covariate");
  }
  for (int64_t k = 0; k < K; k++) sorted[k] = m->keys[k];
  qsort(sorted, (size_t)K, sizeof *sorted, cmp_names);
  size_t pos = 0;
  for (int64_t k = 0; k < K; k++) {
    /* the id of a sorted name: the keys are the map's own copies, found again by lookup */
    size_t l = strlen(sorted[k]);
    rank[rd_idmap_find(m, sorted[k], l)] = k;
    c->off[k] = (int64_t)pos;
    memcpy(c->buf + pos, sorted[k], l + 1);
    pos += l + 1;
  }
  c->off[K] = (int64_t)pos;
  c->n = K;
  free(sorted);
  return RD_OK;
}

int cm_categories_read(hid_t f, const char *file, const rd_dsinfo *info, double *codes, cm_categories *c,
                       rd_status *st) {
  char *buf = NULL;
  size_t len = 0;
  int64_t *off = NULL, P = info->dims[0];
  memset(c, 0, sizeof *c);
  RD_TRY(rd_h5_read_strings(f, file, info, &buf, &len, &off, st));
  rd_idmap m;
  int64_t *id = malloc(sizeof(int64_t) * (size_t)(P ? P : 1)), *rank = NULL;
  int rc = id && rd_idmap_init(&m, 64) == 0 ? RD_OK : rd_fail(st, RD_EFAIL, "out of memory reading %s", info->path);
  for (int64_t p = 0; rc == RD_OK && p < P; p++) {
    const char *s = buf + off[p];
    id[p] = s[0] ? rd_idmap_get(&m, s, strlen(s), NULL) : -1;
    if (s[0] && id[p] < 0) rc = rd_fail(st, RD_EFAIL, "out of memory reading %s", info->path);
  }
  if (rc == RD_OK) {
    rank = malloc(sizeof(int64_t) * (size_t)(m.n ? m.n : 1));
    rc = rank ? sort_names(&m, c, rank, st) : rd_fail(st, RD_EFAIL, "out of memory reading %s", info->path);
  }
  for (int64_t p = 0; rc == RD_OK && p < P; p++) codes[p] = id[p] < 0 ? NAN : (double)rank[id[p]];
  if (id) rd_idmap_free(&m);
  free(id);
  free(rank);
  free(buf);
  free(off);
  return rc;
}
