/* Job file parsing: strict keys, types and ranges; every message names the file and the key. */
#include "rmdiag/job.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmdiag/kind.h"

char *rd_path_join(const char *dir, const char *rel) {
  if (rel[0] == '/' || !dir || !dir[0] || strcmp(dir, ".") == 0) return strdup(rel);
  size_t n = strlen(dir) + strlen(rel) + 2;
  char *p = malloc(n);
  if (p) snprintf(p, n, "%s/%s", dir, rel);
  return p;
}

static char *dir_of(const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash) return strdup(".");
  if (slash == path) return strdup("/");
  return strndup(path, (size_t)(slash - path));
}

static int valid_name(const char *s) {
  if (!*s) return 0;
  int all_dots = 1;
  for (const char *p = s; *p; p++) {
    char c = *p;
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
          c == '-'))
      return 0;
    if (c != '.') all_dots = 0;
  }
  return !all_dots && s[0] != '.';
}

void rd_jobfile_free(rd_jobfile *jf) {
  for (int i = 0; i < jf->n_jobs; i++) {
    rd_job *j = &jf->jobs[i];
    if (j->kind && j->kind->free_opts && j->opts) j->kind->free_opts(j->opts);
    cJSON_Delete(j->effective);
    free(j->input);
    free(j->group);
  }
  free(jf->jobs);
  free(jf->path);
  free(jf->dir);
  free(jf->output_dir);
  cJSON_Delete(jf->root);
  memset(jf, 0, sizeof *jf);
}

static const char *kind_list(char *buf, size_t len) {
  size_t n = 0;
  buf[0] = '\0';
  for (const rd_kind *const *k = rd_kinds(); *k && n < len - 32; k++)
    n += (size_t)snprintf(buf + n, len - n, "%s\"%s\"", k == rd_kinds() ? "" : ", ", (*k)->name);
  return buf;
}

/* `repeat_of`: the earlier job whose name this job repeats, or -1. */
static int parse_job(rd_jobfile *jf, int i, const cJSON *obj, int64_t repeat_of, rd_status *st) {
  rd_job *job = &jf->jobs[i];
  job->index = i;
  job->spec = obj;
  snprintf(job->where.path, sizeof job->where.path, "%s: jobs[%d]", jf->path, i);
  job->where.file = jf->path;
  if (!cJSON_IsObject(obj)) return rd_fail(st, RD_EINPUT, "%s must be an object", job->where.path);

  const cJSON *name = cJSON_GetObjectItemCaseSensitive(obj, "name");
  if (!name) return rd_fail(st, RD_EINPUT, "%s: missing required key \"name\"", job->where.path);
  if (!cJSON_IsString(name) || !valid_name(name->valuestring))
    return rd_fail(st, RD_EINPUT,
                   "%s: \"name\" must be a string of letters, digits, '.', '_' and '-' not starting with '.'",
                   job->where.path);
  job->name = name->valuestring;
  snprintf(job->where.path, sizeof job->where.path, "%.400s: jobs[%d] (\"%.200s\")", jf->path, i, job->name);
  if (repeat_of >= 0)
    return rd_fail(st, RD_EINPUT, "%s: name \"%s\" is already used by jobs[%lld]", job->where.path, job->name,
                   (long long)repeat_of);

  const cJSON *kind = cJSON_GetObjectItemCaseSensitive(obj, "kind");
  char kinds[256];
  if (!kind) return rd_fail(st, RD_EINPUT, "%s: missing required key \"kind\"", job->where.path);
  if (!cJSON_IsString(kind) || !(job->kind = rd_kind_find(kind->valuestring)))
    return rd_fail(st, RD_EINPUT, "%s: \"kind\" must be one of %s", job->where.path, kind_list(kinds, sizeof kinds));

  const char *allowed[64];
  int na = 0;
  allowed[na++] = "name";
  allowed[na++] = "kind";
  allowed[na++] = "input";
  allowed[na++] = "group";
  allowed[na] = NULL;
  na = rd_options_keys(job->kind->options, allowed, na, 64);
  for (const cJSON *k = obj->child; k; k = k->next) {
    int known = 0;
    for (int a = 0; a < na && !known; a++) known = strcmp(k->string, allowed[a]) == 0;
    const char *near = known ? NULL : rd_options_suggest(job->kind->options, allowed, k->string);
    if (near)
      return rd_fail(st, RD_EINPUT, "%s: unknown key \"%s\" for a %s job; did you mean \"%s\"? (`rmdiag help %s` "
                     "lists its options)", job->where.path, k->string, job->kind->name, near, job->kind->name);
  }
  RD_TRY(rd_opt_keys(obj, allowed, &job->where, st));

  const cJSON *input = cJSON_GetObjectItemCaseSensitive(obj, "input");
  if (!input) return rd_fail(st, RD_EINPUT, "%s: missing required key \"input\"", job->where.path);
  if (!cJSON_IsString(input) || !input->valuestring[0])
    return rd_fail(st, RD_EINPUT, "%s: \"input\" must be a non-empty string (an HDF5 path)", job->where.path);
  job->input = rd_path_join(jf->dir, input->valuestring);

  const char *group = NULL;
  RD_TRY(rd_opt_string(obj, "group", job->kind->default_group, NULL, &group, &job->where, st));
  if (group[0] != '/' || strstr(group, "//") || strlen(group) > 255)
    return rd_fail(st, RD_EINPUT, "%s: \"group\" = \"%.300s\" must be an absolute HDF5 path such as \"%s\" (at most 255 bytes)",
                   job->where.path, group, job->kind->default_group);
  job->group = strdup(group);
  size_t gl = strlen(job->group);
  if (gl > 1 && job->group[gl - 1] == '/') job->group[gl - 1] = '\0';
  if (!job->input || !job->group) return rd_fail(st, RD_EFAIL, "out of memory");
  return job->kind->parse(job, jf, st);
}

int rd_jobfile_parse(const char *path, const char *text, size_t len, rd_jobfile *jf, rd_status *st) {
  memset(jf, 0, sizeof *jf);
  jf->path = strdup(path);
  jf->dir = dir_of(path);
  rd_where w = {.file = path};
  snprintf(w.path, sizeof w.path, "%s", path);
  cJSON *root = rd_json_parse(text, len, path, st);
  if (!root) return st->code;
  jf->root = root;
  if (!cJSON_IsObject(root)) return rd_fail(st, RD_EINPUT, "%s: the job file must be a JSON object", path);
  static const char *const top_keys[] = {"output_dir", "seed", "jobs", "description", NULL};
  RD_TRY(rd_opt_keys(root, top_keys, &w, st));

  const cJSON *od = cJSON_GetObjectItemCaseSensitive(root, "output_dir");
  if (!od) return rd_fail(st, RD_EINPUT, "%s: missing required key \"output_dir\"", path);
  if (!cJSON_IsString(od) || !od->valuestring[0])
    return rd_fail(st, RD_EINPUT, "%s: \"output_dir\" must be a non-empty string", path);
  jf->output_dir = rd_path_join(jf->dir, od->valuestring);

  RD_TRY(rd_opt_int(root, "seed", 0, -9007199254740991LL, 9007199254740991LL, &jf->seed, &w, st));
  RD_TRY(rd_opt_string(root, "description", NULL, NULL, &jf->description, &w, st));

  const cJSON *jobs = cJSON_GetObjectItemCaseSensitive(root, "jobs");
  if (!jobs) return rd_fail(st, RD_EINPUT, "%s: missing required key \"jobs\"", path);
  if (!cJSON_IsArray(jobs) || cJSON_GetArraySize(jobs) == 0)
    return rd_fail(st, RD_EINPUT, "%s: \"jobs\" must be a non-empty list of job objects", path);
  int n = cJSON_GetArraySize(jobs);
  jf->jobs = calloc((size_t)n, sizeof *jf->jobs);
  if (!jf->jobs) return rd_fail(st, RD_EFAIL, "out of memory");
  /* the first name that repeats an earlier one, found by sorting (a 64 MiB file holds a million jobs) */
  const char **names = malloc(sizeof(char *) * (size_t)n);
  if (!names) return rd_fail(st, RD_EFAIL, "out of memory");
  int i = 0;
  for (const cJSON *j = jobs->child; j; j = j->next, i++) {
    const cJSON *name = cJSON_IsObject(j) ? cJSON_GetObjectItemCaseSensitive(j, "name") : NULL;
    names[i] = cJSON_IsString(name) ? name->valuestring : NULL;
  }
  int64_t first = -1, repeated = rd_first_duplicate(names, n, &first);
  free(names);
  i = 0;
  for (const cJSON *j = jobs->child; j; j = j->next, i++) {
    jf->n_jobs = i + 1;
    RD_TRY(parse_job(jf, i, j, i == repeated ? first : -1, st));
  }
  return RD_OK;
}
