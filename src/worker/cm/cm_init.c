/* cm: what `rmdiag init cm INPUT.h5` writes into a job (docs/reference.md, 'Commands', init): the bootstrap and
 * one strata entry per numeric or string covariate of the input, each an entry the user may keep or delete. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rmdiag/common/h5in.h"
#include "rmdiag/kind.h"

/* Integer covariates with at most this many distinct values become categorical strata; others get
 * quantile bins (a stratum per value of a continuous covariate would be one pair each). */
#define CM_INIT_MAX_CATEGORIES 50
#define CM_INIT_BINS 4

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The distinct finite values of a 1-D numeric covariate, and whether all are integers that a
 * categorical stratum can hold exactly (|v| <= 2^53). */
static int covariate_values(hid_t f, const char *file, const rd_dsinfo *info, int64_t *distinct, int *integral,
                            rd_status *st) {
  int64_t n = info->dims[0];
  double *v = rd_malloc(sizeof(double) * (size_t)(n > 0 ? n : 1), st, "a covariate");
  if (!v) return st->code;
  if (rd_h5_read_numeric(f, file, info, v, st) != RD_OK) {
    free(v);
    return st->code;
  }
  int64_t k = 0;
  for (int64_t i = 0; i < n; i++)
    if (isfinite(v[i])) v[k++] = v[i];
  qsort(v, (size_t)k, sizeof *v, cmp_double);
  *distinct = 0;
  *integral = 1;
  for (int64_t i = 0; i < k; i++) {
    *distinct += i == 0 || v[i] != v[i - 1];
    *integral &= v[i] == floor(v[i]) && fabs(v[i]) <= 9007199254740992.0;
  }
  free(v);
  return RD_OK;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* The number of distinct non-empty names of a 1-D string covariate (category names). */
static int covariate_names(hid_t f, const char *file, const rd_dsinfo *info, int64_t *distinct, rd_status *st) {
  char *buf = NULL;
  size_t len = 0;
  int64_t *off = NULL, n = info->dims[0], k = 0;
  if (rd_h5_read_strings(f, file, info, &buf, &len, &off, st) != RD_OK) return st->code;
  const char **v = rd_malloc(sizeof(char *) * (size_t)(n > 0 ? n : 1), st, "a covariate");
  for (int64_t i = 0; v && i < n; i++)
    if (buf[off[i]]) v[k++] = buf + off[i];
  if (v) qsort(v, (size_t)k, sizeof *v, cmp_str);
  *distinct = 0;
  for (int64_t i = 0; v && i < k; i++) *distinct += i == 0 || strcmp(v[i], v[i - 1]) != 0;
  free(v);
  free(buf);
  free(off);
  return st->code;
}

/* One strata entry for covariate `name`, or NULL (with a note) when it cannot be one. */
static cJSON *covariate_entry(hid_t f, const char *file, const char *dir, const char *name, FILE *note,
                              rd_status *st) {
  char path[1024];
  rd_dsinfo info;
  if (strlen(name) > 200 || rd_h5_path(path, sizeof path, dir, name) < 0) {
    if (note) fprintf(note, "rmdiag init: covariate \"%.60s...\": the name is longer than 200 bytes; not used\n", name);
    return NULL;
  }
  if (rd_h5_info(f, file, path, &info, st) != RD_OK) return NULL;
  int names = info.tclass == RD_TC_STRING;
  if (info.ndims != 1 || (info.tclass != RD_TC_INT && info.tclass != RD_TC_FLOAT && !names)) {
    if (note)
      fprintf(note, "rmdiag init: covariate \"%s\" is not a 1-D numeric or string dataset; no stratum suggested\n",
              name);
    return NULL;
  }
  int64_t distinct = 0;
  int integral = 0;
  if (names ? covariate_names(f, file, &info, &distinct, st) != RD_OK
            : covariate_values(f, file, &info, &distinct, &integral, st) != RD_OK)
    return NULL;
  if (names && distinct == 0) {
    if (note) fprintf(note, "rmdiag init: covariate \"%s\" has no non-empty name; no stratum suggested\n", name);
    return NULL;
  }
  if (distinct == 0) {
    if (note) fprintf(note, "rmdiag init: covariate \"%s\" has no finite value; no stratum suggested\n", name);
    return NULL;
  }
  cJSON *e = cJSON_CreateObject();
  cJSON_AddStringToObject(e, "covariate", name);
  if (names) {  /* category names: a stratum per name, however many */
    cJSON_AddTrueToObject(e, "categorical");
    if (note) fprintf(note, "rmdiag init: strata: \"%s\" categorical (%lld distinct names)\n", name, (long long)distinct);
  } else if (integral && distinct <= CM_INIT_MAX_CATEGORIES) {
    cJSON_AddTrueToObject(e, "categorical");
    if (note) fprintf(note, "rmdiag init: strata: \"%s\" categorical (%lld distinct values)\n", name,
                      (long long)distinct);
  } else {
    int64_t bins = distinct < CM_INIT_BINS ? distinct : CM_INIT_BINS;
    cJSON_AddNumberToObject(e, "bins", (double)bins);
    if (note) fprintf(note, "rmdiag init: strata: \"%s\" in %lld quantile bins (%lld distinct values)\n", name,
                      (long long)bins, (long long)distinct);
  }
  return e;
}

int cm_init(hid_t f, const char *file, const char *group, cJSON *job, FILE *note, rd_status *st) {
  cJSON_AddNumberToObject(job, "bootstrap", 1000);
  char dir[1024];
  if (rd_h5_path(dir, sizeof dir, group, "covariates") < 0)
    return rd_fail(st, RD_EINPUT, "%s: group name %s is too long", file, group);
  char **names = NULL;
  int n = 0;
  RD_TRY(rd_h5_list(f, file, dir, &names, &n, st));
  cJSON *strata = cJSON_CreateArray();
  for (int i = 0; i < n && st->code == RD_OK; i++) {
    cJSON *e = covariate_entry(f, file, dir, names[i], note, st);
    if (e) cJSON_AddItemToArray(strata, e);
  }
  rd_h5_free_list(names, n);
  if (st->code != RD_OK || cJSON_GetArraySize(strata) == 0) {
    if (st->code == RD_OK && note) fprintf(note, "rmdiag init: no numeric covariates under %s: no strata\n", dir);
    cJSON_Delete(strata);
    return st->code;
  }
  cJSON_AddItemToObject(job, "strata", strata);
  return RD_OK;
}
