/* cm: the job options (one table: parsing, effective options, `rmdiag help cm`). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm_internal.h"
#include "rmdiag/common/jsonutil.h"

void cm_free_opts(void *p) {
  cm_opts *o = p;
  if (!o) return;
  free(o->strata);
  free(o);
}

/* One entry of "strata": {"covariate": NAME, "bins": K} or {"covariate": NAME, "categorical": true};
 * `repeat_of`: the earlier entry with the same covariate, or -1. */
static int parse_stratum(const cJSON *s, int i, int64_t repeat_of, cm_opts *o, cJSON *eff_strata, const rd_where *where,
                         rd_status *st) {
  rd_where w = *where;
  snprintf(w.path, sizeof w.path, "%.500s: strata[%d]", where->path, i);
  if (!cJSON_IsObject(s)) return rd_fail(st, RD_EINPUT, "%s must be an object", w.path);
  static const char *const keys[] = {"covariate", "bins", "categorical", NULL};
  RD_TRY(rd_opt_keys(s, keys, &w, st));
  const char *cov = NULL;
  RD_TRY(rd_opt_string(s, "covariate", NULL, NULL, &cov, &w, st));
  if (!cov || !cov[0] || strchr(cov, '/'))
    return rd_fail(st, RD_EINPUT, "%s: \"covariate\" must name a dataset under covariates/", w.path);
  int has_bins = cJSON_GetObjectItemCaseSensitive(s, "bins") != NULL;
  int categorical = 0;
  RD_TRY(rd_opt_bool(s, "categorical", 0, &categorical, &w, st));
  if (has_bins == categorical)
    return rd_fail(st, RD_EINPUT, "%s: give exactly one of \"bins\": K or \"categorical\": true", w.path);
  if (repeat_of >= 0)
    return rd_fail(st, RD_EINPUT, "%s: covariate \"%s\" is already stratified by strata[%lld] (one entry per "
                   "covariate)", w.path, cov, (long long)repeat_of);
  if (strlen(cov) > 200) return rd_fail(st, RD_EINPUT, "%s: covariate name longer than 200 bytes", w.path);
  o->strata[i].covariate = cov;
  if (has_bins) RD_TRY(rd_opt_int(s, "bins", 0, 1, 100000, &o->strata[i].bins, &w, st));
  cJSON *e = cJSON_CreateObject();
  cJSON_AddStringToObject(e, "covariate", cov);
  if (has_bins) cJSON_AddNumberToObject(e, "bins", (double)o->strata[i].bins);
  else cJSON_AddBoolToObject(e, "categorical", 1);
  cJSON_AddItemToArray(eff_strata, e);
  return RD_OK;
}

static int parse_strata(const cJSON *strata, void *field, void *opts, cJSON *eff, const rd_where *w, rd_status *st) {
  (void)field;
  cm_opts *o = opts;
  cJSON *eff_strata = cJSON_AddArrayToObject(eff, "strata");
  if (!strata) return RD_OK;
  if (!cJSON_IsArray(strata))
    return rd_fail(st, RD_EINPUT, "%s: \"strata\" must be a list of {\"covariate\", \"bins\" | \"categorical\"}",
                   w->path);
  o->n_strata = cJSON_GetArraySize(strata);
  o->strata = calloc((size_t)(o->n_strata ? o->n_strata : 1), sizeof *o->strata);
  if (!o->strata) return rd_fail(st, RD_EFAIL, "out of memory");
  /* the first covariate that repeats an earlier one, found by sorting (the list may be long) */
  const char **covs = malloc(sizeof(char *) * (size_t)(o->n_strata ? o->n_strata : 1));
  if (!covs) return rd_fail(st, RD_EFAIL, "out of memory");
  int i = 0;
  for (const cJSON *s = strata->child; s; s = s->next, i++) {
    const cJSON *c = cJSON_IsObject(s) ? cJSON_GetObjectItemCaseSensitive(s, "covariate") : NULL;
    covs[i] = cJSON_IsString(c) ? c->valuestring : NULL;
  }
  int64_t first = -1, repeated = rd_first_duplicate(covs, o->n_strata, &first);
  free(covs);
  i = 0;
  for (const cJSON *s = strata->child; s; s = s->next, i++)
    RD_TRY(parse_stratum(s, i, i == repeated ? first : -1, o, eff_strata, w, st));
  return RD_OK;
}

const rd_option cm_options[] = {
    RD_OPTION_BOOTSTRAP(cm_opts, bootstrap, 1000),
    RD_OPTION_CUSTOM("strata", cm_opts, strata, parse_strata, "list of {\"covariate\": NAME, \"bins\": K | "
                     "\"categorical\": true}", "none",
                     "report TM, TG and CM per stratum of each covariate: K quantile bins, or one per category"),
    RD_OPTION_END,
};

int cm_parse(rd_job *job, const rd_jobfile *jf, rd_status *st) {
  (void)jf;
  cm_opts *o = calloc(1, sizeof *o);
  if (!o) return rd_fail(st, RD_EFAIL, "out of memory");
  job->opts = o;
  if (!(job->effective = cJSON_CreateObject())) return rd_fail(st, RD_EFAIL, "out of memory");
  return rd_options_parse(cm_options, job->spec, o, job->effective, &job->where, st);
}
