/* What a kind's run does for readers once its result is complete (rank 0): the warnings go into the result,
 * the kind's summary tables to stdout and the warnings to stderr, all from the same view `rmdiag table` and
 * `rmdiag report` use, so the three never disagree. */
#include <stdlib.h>
#include <string.h>

#include "rmdiag/common/view.h"

int rd_view_summary(rd_view_fn view, const char *job, const char *kind, const cJSON *options, const char *output_dir,
                    cJSON *warnings, cJSON *result, FILE *out, FILE *err, rd_status *st) {
  if (!warnings) warnings = cJSON_CreateArray();
  if (!warnings || !cJSON_AddItemToObject(result, "warnings", warnings)) {
    cJSON_Delete(warnings);
    return rd_fail(st, RD_EFAIL, "out of memory adding the warnings to the report");
  }
  if (!view) return RD_OK;
  /* the view reads a report; during the run the envelope is not written yet: job, kind and options suffice */
  cJSON *report = cJSON_CreateObject(), *meta = cJSON_CreateObject();
  if (!report || !meta) {
    cJSON_Delete(report);
    cJSON_Delete(meta);
    return rd_fail(st, RD_EFAIL, "out of memory");
  }
  cJSON_AddStringToObject(meta, "job", job);
  cJSON_AddStringToObject(meta, "kind", kind);
  if (options) cJSON_AddItemReferenceToObject(meta, "options", (cJSON *)options);
  cJSON_AddItemToObject(report, "rmdiag", meta);
  cJSON_AddItemReferenceToObject(report, "result", result);
  rd_view v;
  rd_view_init(&v);
  v.summary_only = 1;
  int rc = view(report, NULL, &v, st);
  if (rc == RD_OK) {
    size_t n = (output_dir ? strlen(output_dir) : 0) + strlen(job) + 8;
    char *json = malloc(n);
    if (json) snprintf(json, n, "%s%s%s.json", output_dir ? output_dir : "", output_dir ? "/" : "", job);
    rd_view_print_summary(out, &v, json);
    rd_view_print_warnings(err, &v, job);
    free(json);
  }
  rd_view_free(&v);
  cJSON_Delete(report);
  return rc;
}
