/* What a kind's run does for readers once its result is complete (rank 0): the warnings go into the result,
 * the kind's summary tables to stdout and the warnings to stderr, all from the same view `rmdiag table` and
 * `rmdiag report` use, so the three never disagree. */
#include <stdlib.h>
#include <string.h>

#include "rmdiag/job.h"
#include "rmdiag/kind.h"

int rd_kind_summary(const rd_kind *k, const rd_job *job, const rd_jobfile *jf, cJSON *warnings, cJSON *result,
                    FILE *out, FILE *err, rd_status *st) {
  if (!warnings) warnings = cJSON_CreateArray();
  if (!warnings || !cJSON_AddItemToObject(result, "warnings", warnings)) {
    cJSON_Delete(warnings);
    return rd_fail(st, RD_EFAIL, "out of memory adding the warnings to the report");
  }
  if (!k->view) return RD_OK;
  /* the view reads a report; during the run the envelope is not written yet: job, kind and options suffice */
  cJSON *report = cJSON_CreateObject(), *meta = cJSON_CreateObject();
  if (!report || !meta) {
    cJSON_Delete(report);
    cJSON_Delete(meta);
    return rd_fail(st, RD_EFAIL, "out of memory");
  }
  cJSON_AddStringToObject(meta, "job", job->name);
  cJSON_AddStringToObject(meta, "kind", k->name);
  cJSON_AddItemReferenceToObject(meta, "options", job->effective);
  cJSON_AddItemToObject(report, "rmdiag", meta);
  cJSON_AddItemReferenceToObject(report, "result", result);
  rd_view v;
  rd_view_init(&v);
  int rc = k->view(report, NULL, &v, st);
  if (rc == RD_OK) {
    size_t n = (jf && jf->output_dir ? strlen(jf->output_dir) : 0) + strlen(job->name) + 8;
    char *json = malloc(n);
    if (json) snprintf(json, n, "%s%s%s.json", jf && jf->output_dir ? jf->output_dir : "",
                       jf && jf->output_dir ? "/" : "", job->name);
    rd_view_print_summary(out, &v, json);
    rd_view_print_warnings(err, &v, job->name);
    free(json);
  }
  rd_view_free(&v);
  cJSON_Delete(report);
  return rc;
}
