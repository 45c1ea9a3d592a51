/* leakage: what `rmdiag init leakage INPUT.h5` writes into a job (docs/reference.md, 'Commands', init): the
 * bootstrap, the factor-shuffle family from the series (every real series with truth rows and parsed
 * replies), and the residualisation's truth series when the input has a signal panel. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "leak_internal.h"

/* Per series: real (not fictional), with a truth row, with a parsed reply. */
typedef struct init_series {
  int64_t S;
  char *names;
  int64_t *off;
  uint8_t *real, *truth, *parsed;
} init_series;

static void init_series_free(init_series *s) {
  free(s->names);
  free(s->off);
  free(s->real);
  free(s->truth);
  free(s->parsed);
}

/* Marks flags[idx[i]] for the rows i of an index dataset (where `status`, when given, is 0). */
static int mark_rows(hid_t f, const char *file, const rd_dsinfo *idx, const rd_dsinfo *status, int64_t S,
                     uint8_t *flags, rd_status *st) {
  int64_t n = idx->dims[0];
  int64_t *v = rd_malloc(sizeof(int64_t) * (size_t)(2 * n + 1), st, "series indices");
  if (!v) return st->code;
  int rc = rd_h5_read_int_rows(f, file, idx, 0, n, v, st);
  if (rc == RD_OK && status) rc = rd_h5_read_int_rows(f, file, status, 0, n, v + n, st);
  for (int64_t i = 0; rc == RD_OK && i < n; i++)
    if (v[i] >= 0 && v[i] < S && (!status || v[n + i] == 0)) flags[v[i]] = 1;
  free(v);
  return rc;
}

static int init_series_read(hid_t f, const char *file, const leak_layout *L, init_series *s, rd_status *st) {
  size_t len = 0;
  RD_TRY(rd_h5_read_strings(f, file, &L->ds[DS_SERIES_NAMES], &s->names, &len, &s->off, st));
  s->S = L->ds[DS_SERIES_NAMES].dims[0];
  s->real = malloc((size_t)s->S + 1);
  s->truth = calloc((size_t)s->S + 1, 1);
  s->parsed = calloc((size_t)s->S + 1, 1);
  double *fict = malloc(sizeof(double) * (size_t)(s->S + 1));
  if (!s->real || !s->truth || !s->parsed || !fict) {
    free(fict);
    return rd_fail(st, RD_EFAIL, "out of memory");
  }
  memset(s->real, 1, (size_t)s->S);
  int rc = RD_OK;
  if (L->has[DS_FICTIONAL] && L->ds[DS_FICTIONAL].dims[0] == s->S) {
    rc = rd_h5_read_numeric(f, file, &L->ds[DS_FICTIONAL], fict, st);
    for (int64_t i = 0; rc == RD_OK && i < s->S; i++) s->real[i] = fict[i] == 0;
  }
  free(fict);
  RD_TRY(rc);
  RD_TRY(mark_rows(f, file, &L->ds[DS_T_SERIES], NULL, s->S, s->truth, st));
  return mark_rows(f, file, &L->ds[DS_SERIES], &L->ds[DS_STATUS], s->S, s->parsed, st);
}

/* "family": the real series with truth and parsed replies, when there are 2 to LEAK_MAX_FAMILY. */
static void add_family(const init_series *s, cJSON *job, FILE *note) {
  cJSON *fam = cJSON_CreateArray();
  char list[512] = "";
  size_t n = 0;
  for (int64_t i = 0; i < s->S; i++) {
    if (!s->real[i] || !s->truth[i] || !s->parsed[i]) continue;
    cJSON_AddItemToArray(fam, cJSON_CreateString(s->names + s->off[i]));
    if (n < sizeof list - 80)
      n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", n ? ", " : "", s->names + s->off[i]);
  }
  int k = cJSON_GetArraySize(fam);
  if (k >= 2 && k <= LEAK_MAX_FAMILY) {
    cJSON_AddItemToObject(job, "family", fam);
    if (note)
      fprintf(note, "rmdiag init: \"family\": the %d real series with truth rows and parsed replies (%s): the "
              "siblings of the factor-shuffle null; keep only series of one kind and unit\n", k, list);
    return;
  }
  cJSON_Delete(fam);
  if (note)
    fprintf(note, "rmdiag init: %d real series with truth rows and parsed replies: no \"family\" (the factor-shuffle "
            "null needs 2 to %d sibling series)\n", k, LEAK_MAX_FAMILY);
}

/* "signal_series" when the input has a signal panel and no series of the default name. */
static void add_signal_series(const init_series *s, const leak_layout *L, cJSON *job, FILE *note) {
  if (!L->has_signal) return;
  for (int64_t i = 0; i < s->S; i++)
    if (strcmp(s->names + s->off[i], "Mkt-RF") == 0) return;  /* the option's default */
  for (int64_t i = 0; i < s->S; i++)
    if (s->real[i] && s->truth[i]) {
      cJSON_AddStringToObject(job, "signal_series", s->names + s->off[i]);
      if (note)
        fprintf(note, "rmdiag init: \"signal_series\": \"%s\" (the first real series with truth rows; the truth of "
                "the residualisation of signal/)\n", s->names + s->off[i]);
      return;
    }
}

int leak_init(hid_t f, const char *file, const char *group, cJSON *job, FILE *note, rd_status *st) {
  rd_job stub = rd_job_for_input(file, group);
  leak_layout L;
  memset(&L, 0, sizeof L);
  RD_TRY(leak_check_layout(f, &stub, &L, st));
  init_series s;
  memset(&s, 0, sizeof s);
  if (init_series_read(f, file, &L, &s, st) == RD_OK) {
    cJSON_AddNumberToObject(job, "bootstrap", 1000);
    add_family(&s, job, note);
    add_signal_series(&s, &L, job, note);
  }
  init_series_free(&s);
  return st->code;
}
