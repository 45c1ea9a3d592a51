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
  free(jf->sweeps);
  cJSON_Delete(jf->expanded);
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

static int parse_job(rd_jobfile *jf, int i, int file_index, int sweep, const cJSON *obj, rd_status *st) {
  rd_job *job = &jf->jobs[i];
  job->index = i;
  job->file_index = file_index;
  job->sweep = sweep;
  job->seed = jf->seed;
  job->spec = obj;
  snprintf(job->where.path, sizeof job->where.path, "%s: jobs[%d]", jf->path, file_index);
  job->where.file = jf->path;
  if (!cJSON_IsObject(obj)) return rd_fail(st, RD_EINPUT, "%s must be an object", job->where.path);

  const cJSON *name = cJSON_GetObjectItemCaseSensitive(obj, "name");
  if (!name) return rd_fail(st, RD_EINPUT, "%s: missing required key \"name\"", job->where.path);
  if (!cJSON_IsString(name) || !valid_name(name->valuestring))
    return rd_fail(st, RD_EINPUT,
                   "%s: \"name\" must be a string of letters, digits, '.', '_' and '-' not starting with '.'",
                   job->where.path);
  job->name = name->valuestring;
  snprintf(job->where.path, sizeof job->where.path, "%.400s: jobs[%d] (\"%.200s\")", jf->path, file_index, job->name);

  const cJSON *kind = cJSON_GetObjectItemCaseSensitive(obj, "kind");
  char kinds[256];
  if (!kind) return rd_fail(st, RD_EINPUT, "%s: missing required key \"kind\"", job->where.path);
  if (!cJSON_IsString(kind) || !(job->kind = rd_kind_find(kind->valuestring))) {
    const char *names[16];
    int n = 0;
    for (const rd_kind *const *k = rd_kinds(); *k && n < 15; k++) names[n++] = (*k)->name;
    names[n] = NULL;
    const char *near = cJSON_IsString(kind) ? rd_options_suggest(NULL, names, kind->valuestring) : NULL;
    if (near)
      return rd_fail(st, RD_EINPUT, "%s: \"kind\" = \"%s\" is not a report kind; did you mean \"%s\"? (kinds: %s)",
                     job->where.path, kind->valuestring, near, kind_list(kinds, sizeof kinds));
    return rd_fail(st, RD_EINPUT, "%s: \"kind\" must be one of %s", job->where.path, kind_list(kinds, sizeof kinds));
  }

  const char *allowed[64];
  int na = 0;
  allowed[na++] = "name";
  allowed[na++] = "kind";
  allowed[na++] = "input";
  allowed[na++] = "group";
  allowed[na++] = "seed";
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

  RD_TRY(rd_opt_int(obj, "seed", jf->seed, -9007199254740991LL, 9007199254740991LL, &job->seed, &job->where, st));

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

/* ---- sweeps ------------------------------------------------------------------------------------- */

int rd_sweep_position(const rd_sweep *s, int m, int k) {
  int stride = 1;
  for (int q = s->n_keys - 1; q > k; q--) stride *= s->n_values[q];
  return (m / stride) % s->n_values[k];
}

/* Checks a job's "sweep" object: {KEY: [value, ...], ...}, each list non-empty; counts the jobs it
 * expands into. Which keys a kind accepts is checked when each expanded job is parsed. */
static int sweep_size(const rd_jobfile *jf, int fi, const cJSON *job, const cJSON *sw, int64_t *members,
                      rd_status *st) {
  const cJSON *name = cJSON_GetObjectItemCaseSensitive(job, "name");
  char where[700];
  snprintf(where, sizeof where, "%.400s: jobs[%d]%s%.200s%s", jf->path, fi, cJSON_IsString(name) ? " (\"" : "",
           cJSON_IsString(name) ? name->valuestring : "", cJSON_IsString(name) ? "\")" : "");
  if (!cJSON_IsObject(sw) || !sw->child)
    return rd_fail(st, RD_EINPUT, "%s: \"sweep\" must be an object of KEY: [values...] (e.g. {\"seed\": [1, 2, 3]})",
                   where);
  *members = 1;
  int nk = 0;
  for (const cJSON *k = sw->child; k; k = k->next, nk++) {
    if (nk >= 16) return rd_fail(st, RD_EINPUT, "%s: \"sweep\" has more than 16 keys", where);
    if (!strcmp(k->string, "name") || !strcmp(k->string, "kind") || !strcmp(k->string, "sweep"))
      return rd_fail(st, RD_EINPUT, "%s: \"sweep\": \"%s\" cannot be swept", where, k->string);
    if (!cJSON_IsArray(k) || cJSON_GetArraySize(k) == 0)
      return rd_fail(st, RD_EINPUT, "%s: \"sweep\".\"%s\" must be a non-empty list of values", where, k->string);
    if (cJSON_GetObjectItemCaseSensitive(job, k->string))
      return rd_fail(st, RD_EINPUT, "%s: \"%s\" is both given and swept; give it in one place", where, k->string);
    for (const cJSON *v = k->child; v; v = v->next)
      for (const cJSON *u = k->child; u != v; u = u->next)
        if (cJSON_Compare(u, v, 1))
          return rd_fail(st, RD_EINPUT, "%s: \"sweep\".\"%s\" lists a value twice", where, k->string);
    *members *= cJSON_GetArraySize(k);
    if (*members > 100000)
      return rd_fail(st, RD_EINPUT, "%s: \"sweep\" expands into more than 100000 jobs", where);
  }
  return RD_OK;
}

/* The jobs of one sweep: the job's JSON without "sweep", each swept key set to one of its values,
 * named NAME.KEY-I...; each is then parsed like any job. */
static int expand_sweep(rd_jobfile *jf, int fi, const cJSON *job, const cJSON *sw, rd_status *st) {
  rd_sweep *s = &jf->sweeps[jf->n_sweeps++];
  const cJSON *name = cJSON_GetObjectItemCaseSensitive(job, "name");
  if (!cJSON_IsString(name)) return parse_job(jf, jf->n_jobs, fi, -1, job, st);  /* its own message */
  s->name = name->valuestring;
  s->file_index = fi;
  s->spec = sw;
  s->first = jf->n_jobs;
  s->n = 1;
  for (const cJSON *k = sw->child; k; k = k->next) {
    s->keys[s->n_keys] = k->string;
    s->n_values[s->n_keys++] = cJSON_GetArraySize(k);
    s->n *= cJSON_GetArraySize(k);
  }
  for (int m = 0; m < s->n; m++) {
    cJSON *o = cJSON_Duplicate(job, 1);
    if (!o) return rd_fail(st, RD_EFAIL, "out of memory");
    cJSON_AddItemToArray(jf->expanded, o);
    cJSON_DeleteItemFromObjectCaseSensitive(o, "sweep");
    char nm[1024];
    size_t len = (size_t)snprintf(nm, sizeof nm, "%s", s->name);
    for (int k = 0; k < s->n_keys; k++) {
      int pos = rd_sweep_position(s, m, k);
      len += (size_t)snprintf(nm + len, len < sizeof nm ? sizeof nm - len : 0, ".%s-%d", s->keys[k], pos);
      cJSON *v = cJSON_Duplicate(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(sw, s->keys[k]), pos), 1);
      if (!v || !cJSON_AddItemToObject(o, s->keys[k], v)) return rd_fail(st, RD_EFAIL, "out of memory");
    }
    if (len >= 256)
      return rd_fail(st, RD_EINPUT, "%s: jobs[%d] (\"%.200s\"): the names of its sweep's jobs would be longer than 255 "
                     "bytes (%s...)", jf->path, fi, s->name, nm);
    cJSON_ReplaceItemInObjectCaseSensitive(o, "name", cJSON_CreateString(nm));
    jf->n_jobs++;
    RD_TRY(parse_job(jf, jf->n_jobs - 1, fi, jf->n_sweeps - 1, o, st));
  }
  s->kind = jf->jobs[s->first].kind;
  return RD_OK;
}

/* Every job's name is its own: the first name (in job order) that repeats an earlier one is an
 * error, found by sorting (a 64 MiB file, or a sweep, holds a million jobs). */
static int check_repeated_names(const rd_jobfile *jf, rd_status *st) {
  const char **names = malloc(sizeof(char *) * (size_t)(jf->n_jobs ? jf->n_jobs : 1));
  if (!names) return rd_fail(st, RD_EFAIL, "out of memory");
  for (int j = 0; j < jf->n_jobs; j++) names[j] = jf->jobs[j].name;
  int64_t first = -1, at = rd_first_duplicate(names, jf->n_jobs, &first);
  free(names);
  if (at < 0) return RD_OK;
  const rd_job *job = &jf->jobs[at], *k = &jf->jobs[first];
  return rd_fail(st, RD_EINPUT, "%s: name \"%s\" is already used by jobs[%d]%s", job->where.path, job->name,
                 k->file_index, k->sweep >= 0 ? " (a job of its sweep)" : "");
}

/* A sweep's summary report NAME.summary may not share its name with a job. */
static int check_summary_names(const rd_jobfile *jf, rd_status *st) {
  for (int s = 0; s < jf->n_sweeps; s++) {
    char nm[300];
    snprintf(nm, sizeof nm, "%s.summary", jf->sweeps[s].name);
    for (int j = 0; j < jf->n_jobs; j++)
      if (strcmp(jf->jobs[j].name, nm) == 0)
        return rd_fail(st, RD_EINPUT, "%s: jobs[%d] (\"%s\") has the name of the summary of the sweep of jobs[%d]",
                       jf->path, jf->jobs[j].file_index, nm, jf->sweeps[s].file_index);
  }
  return RD_OK;
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
  /* sweeps first: the number of jobs they expand into */
  int n = 0, n_sweeps = 0, fi = 0;
  for (const cJSON *j = jobs->child; j; j = j->next, fi++) {
    const cJSON *sw = cJSON_IsObject(j) ? cJSON_GetObjectItemCaseSensitive(j, "sweep") : NULL;
    if (!sw) {
      n++;
      continue;
    }
    int64_t members = 0;
    RD_TRY(sweep_size(jf, fi, j, sw, &members, st));
    n += (int)members;
    n_sweeps++;
  }
  if (n > 1000000) return rd_fail(st, RD_EINPUT, "%s: the sweeps expand into %d jobs (at most 1000000)", path, n);
  jf->jobs = calloc((size_t)n, sizeof *jf->jobs);
  jf->sweeps = calloc((size_t)(n_sweeps ? n_sweeps : 1), sizeof *jf->sweeps);
  jf->expanded = cJSON_CreateArray();
  if (!jf->jobs || !jf->sweeps || !jf->expanded) return rd_fail(st, RD_EFAIL, "out of memory");
  fi = 0;
  for (const cJSON *j = jobs->child; j; j = j->next, fi++) {
    const cJSON *sw = cJSON_IsObject(j) ? cJSON_GetObjectItemCaseSensitive(j, "sweep") : NULL;
    if (sw) {
      RD_TRY(expand_sweep(jf, fi, j, sw, st));
      continue;
    }
    jf->n_jobs++;
    RD_TRY(parse_job(jf, jf->n_jobs - 1, fi, -1, j, st));
  }
  RD_TRY(check_repeated_names(jf, st));
  return check_summary_names(jf, st);
}
