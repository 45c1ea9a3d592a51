/* leakage: the job options (one table: parsing, effective options, `rmdiag help leakage`); see
 * docs/reference.md, 'leakage options'. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "leak_internal.h"

void leak_free_opts(void *p) {
  leak_opts *o = p;
  if (!o) return;
  free(o->family);
  free(o);
}

/* "family": a list of 2 to LEAK_MAX_FAMILY distinct series names (or none); the effective options
 * always carry the list, empty when absent. */
static int parse_family(const cJSON *fam, void *field, void *opts, cJSON *eff, const rd_where *w, rd_status *st) {
  (void)field;
  leak_opts *o = opts;
  if (fam) {
    if (!cJSON_IsArray(fam))
      return rd_fail(st, RD_EINPUT, "%s: \"family\" must be a list of series names (the sibling series of the "
                                    "factor-shuffle null)", w->path);
    o->n_family = cJSON_GetArraySize(fam);
    if (o->n_family == 1 || o->n_family > LEAK_MAX_FAMILY)
      return rd_fail(st, RD_EINPUT, "%s: \"family\" has %d series; expected 2 to %d (or none)", w->path, o->n_family,
                     LEAK_MAX_FAMILY);
    o->family = calloc((size_t)(o->n_family ? o->n_family : 1), sizeof *o->family);
    if (!o->family) return rd_fail(st, RD_EFAIL, "out of memory");
    int i = 0;
    for (const cJSON *e = fam->child; e; e = e->next, i++) {
      if (!cJSON_IsString(e) || !e->valuestring[0])
        return rd_fail(st, RD_EINPUT, "%s: \"family\"[%d] must be a series name (a non-empty string)", w->path, i);
      for (int k = 0; k < i; k++)
        if (strcmp(o->family[k], e->valuestring) == 0)
          return rd_fail(st, RD_EINPUT, "%s: \"family\" names \"%s\" twice", w->path, e->valuestring);
      o->family[i] = e->valuestring;
    }
  }
  if (!eff) return RD_OK;
  cJSON *ef = cJSON_AddArrayToObject(eff, "family");
  if (!ef) return rd_fail(st, RD_EFAIL, "out of memory");
  for (int i = 0; i < o->n_family; i++) cJSON_AddItemToArray(ef, cJSON_CreateString(o->family[i]));
  return RD_OK;
}

static const char *const leak_rules[] = {"le", "lt", NULL};
static const char *const leak_compares[] = {"decimal", "float", NULL};
static const char *const leak_sign_zero[] = {"include", "exclude_zero_truth", NULL};

/* The order of the rows is the order of the effective options in the report. */
const rd_option leak_options[] = {
    RD_OPTION_BOOTSTRAP(leak_opts, bootstrap, 1000),
    RD_OPTION_NUMBER("tolerance", leak_opts, tolerance, 0.25, 0.0, 1e6,
                     "half-width of the \"within\" band, in the series' units"),
    RD_OPTION_STRING("tolerance_rule", leak_opts, tolerance_rule, "le", leak_rules,
                     "within means |est - truth| <= tolerance (\"le\") or < tolerance (\"lt\")"),
    RD_OPTION_STRING("tolerance_compare", leak_opts, tolerance_compare, "decimal", leak_compares,
                     "compare |est - truth| in integers of 1e-6 (\"decimal\") or in float64 (\"float\", as "
                     "NumLeak's scripts)"),
    RD_OPTION_STRING("sign_zero", leak_opts, sign_zero, "include", leak_sign_zero,
                     "rows whose truth is exactly 0 count in sign_acc (sign 0), or are left out of it"),
    RD_OPTION_CUSTOM("family", leak_opts, family, parse_family, "list of strings", "[] (no null)",
                     "sibling series of the factor-shuffle null: 2 to 33 distinct names from series_names"),
    RD_OPTION_INT("null_permutations", leak_opts, null_permutations, 1000, 0, 100000000,
                  "factor-shuffle draws per target cell (0: no null)"),
    {.key = "holdout_from", .type = RD_OPT_INT, .offset = offsetof(leak_opts, holdout_from), .idef = 0,
     .imin = 100001, .imax = 999912, .effective = RD_EFF_OR_NULL, .set_offset = offsetof(leak_opts, has_holdout),
     .default_help = "none (null)",
     .help = "a month YYYYMM: report each cell's rows before and from this month apart"},
    RD_OPTION_STRING("signal_series", leak_opts, signal_series, "Mkt-RF", NULL,
                     "the truth series of the residualisation (a name in series_names when signal/ exists)"),
    RD_OPTION_STRING("benign_attack", leak_opts, benign_attack, "benign", NULL,
                     "attack name of a defense panel's plain request, reported apart (unknown: none is)"),
    RD_OPTION_END,
};

int leak_parse(rd_job *job, const rd_jobfile *jf, rd_status *st) {
  (void)jf;
  leak_opts *o = calloc(1, sizeof *o);
  if (!o) return rd_fail(st, RD_EFAIL, "out of memory");
  job->opts = o;
  if (!(job->effective = cJSON_CreateObject())) return rd_fail(st, RD_EFAIL, "out of memory");
  const rd_where *w = &job->where;
  RD_TRY(rd_options_parse(leak_options, job->spec, o, job->effective, w, st));
  if (o->has_holdout && (o->holdout_from % 100 < 1 || o->holdout_from % 100 > 12))
    return rd_fail(st, RD_EINPUT, "%s: \"holdout_from\" = %lld is not a month (expected YYYYMM with MM 01-12)",
                   w->path, (long long)o->holdout_from);
  o->rule_lt = strcmp(o->tolerance_rule, "lt") == 0;
  o->compare_float = strcmp(o->tolerance_compare, "float") == 0;
  o->sign_exclude_zero = strcmp(o->sign_zero, "exclude_zero_truth") == 0;
  return RD_OK;
}
