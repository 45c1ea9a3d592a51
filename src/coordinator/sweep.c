/* A sweep's summary report (NAME.summary.json): for each headline number of the sweep's reports
 * (the kind's list), its mean, sd and 95 % t-interval across the sweep's seeds, one group per
 * combination of the other swept keys. Written by rank 0 after the sweep's jobs, from their reports
 * on disk, so it is the same whatever the ranks and whether the jobs ran now or earlier. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rmdiag/common/jsonutil.h"
#include "rmdiag/common/progress.h"
#include "rmdiag/kernels/backend.h"
#include "rmdiag/kernels/sha256.h"
#include "rmdiag/kernels/stats.h"
#include "rmdiag/kind.h"
#include "rmdiag/version.h"
#include "run_internal.h"

void sweep_plans_free(sweep_plan *sp, int n) {
  for (int i = 0; sp && i < n; i++) free(sp[i].json_path);
  free(sp);
}

/* The summary's spec: the sweep's name and kind and the specs of its jobs, in order. */
static void summary_spec(const rd_jobfile *jf, const rd_sweep *s, const job_plan *plans, char hex[65]) {
  cJSON *o = cJSON_CreateObject(), *m = cJSON_CreateArray();
  cJSON_AddStringToObject(o, "sweep", s->name);
  cJSON_AddStringToObject(o, "kind", s->kind->name);
  cJSON_AddStringToObject(o, "version", RMDIAG_VERSION);
  for (int j = s->first; j < s->first + s->n; j++) cJSON_AddItemToArray(m, cJSON_CreateString(plans[j].spec));
  cJSON_AddItemToObject(o, "jobs", m);
  (void)jf;
  char *canon = rd_json_canonical(o);
  cJSON_Delete(o);
  if (canon) rd_sha256_hex(canon, strlen(canon), hex);
  else hex[0] = '\0';
  free(canon);
}

int run_sweeps_decide(const rd_ctx *ctx, const rd_jobfile *jf, const rd_run_flags *fl, const job_plan *plans,
                      sweep_plan *sp, rd_status *st) {
  for (int i = 0; i < jf->n_sweeps && ctx->rank == 0 && st->code == RD_OK; i++) {
    const rd_sweep *s = &jf->sweeps[i];
    size_t n = strlen(jf->output_dir) + strlen(s->name) + 16;
    sp[i].json_path = malloc(n);
    if (!sp[i].json_path) return rd_fail(st, RD_EFAIL, "out of memory");
    snprintf(sp[i].json_path, n, "%s/%s.summary.json", jf->output_dir, s->name);
    summary_spec(jf, s, plans, sp[i].spec);
    /* a summary has no .h5: the decision looks at its report only */
    rd_output_decide(sp[i].json_path, "/nonexistent/rmdiag-summary-has-no-h5", sp[i].spec, 0, fl->force,
                     &sp[i].action, st);
  }
  return rd_share_status(ctx, st, 0);
}

/* ---- headline numbers ---------------------------------------------------------------------------- */

typedef struct headline_list {
  int n, cap;
  char **name;
  double *value;
} headline_list;

static void hl_add(headline_list *h, const char *name, double v) {
  if (h->n == h->cap) {
    int cap = h->cap ? 2 * h->cap : 64;
    char **nn = realloc(h->name, sizeof(char *) * (size_t)cap);
    if (nn) h->name = nn;
    double *nv = realloc(h->value, sizeof(double) * (size_t)cap);
    if (nv) h->value = nv;
    if (!nn || !nv) return;
    h->cap = cap;
  }
  h->name[h->n] = strdup(name);
  h->value[h->n] = v;
  if (h->name[h->n]) h->n++;
}

static void hl_free(headline_list *h) {
  for (int i = 0; i < h->n; i++) free(h->name[i]);
  free(h->name);
  free(h->value);
  memset(h, 0, sizeof *h);
}

/* A number (or null: undefined in this report) at the end of a path. */
static void emit(headline_list *h, const char *name, const cJSON *v) {
  if (cJSON_IsNumber(v)) hl_add(h, name, v->valuedouble);
  else if (cJSON_IsNull(v)) hl_add(h, name, NAN);
}

/* Every number below `v` (headlines NULL: the whole result). */
static void collect_all(headline_list *h, const cJSON *v, char *name, size_t len, size_t cap) {
  if (cJSON_IsArray(v) || cJSON_IsObject(v)) {
    int i = 0;
    for (const cJSON *c = v->child; c; c = c->next, i++) {
      size_t k = cJSON_IsArray(v) ? (size_t)snprintf(name + len, cap - len, "[%d]", i)
                                  : (size_t)snprintf(name + len, cap - len, "%s%s", len ? "." : "", c->string);
      if (len + k < cap) collect_all(h, c, name, len + k, cap);
      name[len] = '\0';
    }
    return;
  }
  emit(h, name, v);
}

/* The label of an array element: the values of its fields F1,F2,... joined by ','. */
static void element_label(const cJSON *e, const char *fields, size_t flen, char *out, size_t cap) {
  size_t k = 0;
  out[0] = '\0';
  const char *f = fields;
  while (f < fields + flen && k < cap) {
    const char *comma = memchr(f, ',', (size_t)(fields + flen - f));
    size_t n = comma ? (size_t)(comma - f) : (size_t)(fields + flen - f);
    char key[128];
    snprintf(key, sizeof key, "%.*s", (int)(n < 127 ? n : 127), f);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(e, key);
    char val[256] = "";
    if (cJSON_IsString(v)) snprintf(val, sizeof val, "%s", v->valuestring);
    else if (cJSON_IsNumber(v)) snprintf(val, sizeof val, "%.17g", v->valuedouble);
    k += (size_t)snprintf(out + k, cap - k, "%s%s", f == fields ? "" : ",", val);
    f += n + (comma ? 1 : 0);
  }
}

/* The numbers a pattern (see rd_kind.headlines) selects below `v`. */
static void collect_path(headline_list *h, const cJSON *v, const char *pat, char *name, size_t len, size_t cap) {
  if (!*pat) {
    emit(h, name, v);
    return;
  }
  const char *seg_end = pat;
  int depth = 0;
  while (*seg_end && (depth || *seg_end != '.')) depth += (*seg_end == '[') - (*seg_end == ']'), seg_end++;
  const char *next = *seg_end ? seg_end + 1 : seg_end;
  size_t slen = (size_t)(seg_end - pat);
  const char *br = memchr(pat, '[', slen);
  if (slen == 1 && pat[0] == '*') {
    for (const cJSON *c = cJSON_IsObject(v) ? v->child : NULL; c; c = c->next) {
      size_t k = (size_t)snprintf(name + len, cap - len, "%s%s", len ? "." : "", c->string);
      if (len + k < cap) collect_path(h, c, next, name, len + k, cap);
      name[len] = '\0';
    }
    return;
  }
  char key[128];
  size_t klen = br ? (size_t)(br - pat) : slen;
  snprintf(key, sizeof key, "%.*s", (int)(klen < 127 ? klen : 127), pat);
  const cJSON *c = cJSON_IsObject(v) ? cJSON_GetObjectItemCaseSensitive(v, key) : NULL;
  if (!c) return;
  if (!br) {
    size_t k = (size_t)snprintf(name + len, cap - len, "%s%s", len ? "." : "", key);
    if (len + k < cap) collect_path(h, c, next, name, len + k, cap);
    name[len] = '\0';
    return;
  }
  const char *fields = br + 1;
  size_t flen = (size_t)(seg_end - fields) - 1;  /* without the closing ']' */
  for (const cJSON *e = cJSON_IsArray(c) ? c->child : NULL; e; e = e->next) {
    char label[512];
    element_label(e, fields, flen, label, sizeof label);
    size_t k = (size_t)snprintf(name + len, cap - len, "%s%s[%s]", len ? "." : "", key, label);
    if (len + k < cap) collect_path(h, e, next, name, len + k, cap);
    name[len] = '\0';
  }
}

static void headlines_of(const rd_kind *kind, const cJSON *result, headline_list *h) {
  char name[2048] = "";
  if (!kind->headlines) {
    collect_all(h, result, name, 0, sizeof name);
    return;
  }
  for (const char *const *p = kind->headlines; *p; p++) collect_path(h, result, *p, name, 0, sizeof name);
}

/* ---- the summary ------------------------------------------------------------------------------------ */

static cJSON *read_result(const char *path, const char *spec, cJSON **root) {
  *root = NULL;
  FILE *fp = fopen(path, "rb");
  if (!fp) return NULL;
  char *buf = NULL;
  size_t len = 0, cap = 0;
  for (;;) {
    if (len + 65536 + 1 > cap) {
      cap = cap ? 2 * cap : 131072;
      char *nb = realloc(buf, cap);
      if (!nb) break;
      buf = nb;
    }
    size_t r = fread(buf + len, 1, 65536, fp);
    len += r;
    if (r < 65536) break;
  }
  fclose(fp);
  if (!buf) return NULL;
  *root = cJSON_ParseWithLength(buf, len);
  free(buf);
  const cJSON *meta = cJSON_GetObjectItemCaseSensitive(*root, "rmdiag");
  const cJSON *sp = cJSON_GetObjectItemCaseSensitive(meta, "spec_sha256");
  if (!cJSON_IsString(sp) || strcmp(sp->valuestring, spec) != 0) return NULL;
  return cJSON_GetObjectItemCaseSensitive(*root, "result");
}

static int seed_key(const rd_sweep *s) {
  for (int k = 0; k < s->n_keys; k++)
    if (strcmp(s->keys[k], "seed") == 0) return k;
  return -1;
}

/* Group of member m: its positions in every key but the seed, as one number. */
static int group_of(const rd_sweep *s, int m) {
  int g = 0, sk = seed_key(s);
  for (int k = 0; k < s->n_keys; k++)
    if (k != sk) g = g * s->n_values[k] + rd_sweep_position(s, m, k);
  return g;
}

/* One headline over the members of a group: n finite values, mean, sd, t-interval. */
static cJSON *headline_json(const char *name, const double *vals, int n_members) {
  double *fin = malloc(sizeof(double) * (size_t)(n_members ? n_members : 1));
  cJSON *o = cJSON_CreateObject(), *all = cJSON_CreateArray();
  int n = 0;
  for (int i = 0; i < n_members; i++) {
    cJSON_AddItemToArray(all, rd_json_num(vals[i]));
    if (fin && isfinite(vals[i])) fin[n++] = vals[i];
  }
  double mean = NAN, sd = NAN, lo = NAN, hi = NAN;
  if (n > 0) rd_mean_sd(fin, (size_t)n, &mean, &sd);
  if (n < 2) sd = NAN;
  if (n >= 2) {
    double half = rd_t_quantile(0.975, (double)(n - 1)) * sd / sqrt((double)n);
    lo = mean - half;
    hi = mean + half;
  }
  free(fin);
  cJSON_AddStringToObject(o, "name", name);
  cJSON_AddNumberToObject(o, "n", n);
  rd_json_add(o, "mean", rd_json_num(mean));
  rd_json_add(o, "sd", rd_json_num(sd));
  rd_json_add(o, "ci95", rd_json_pair(lo, hi));
  cJSON_AddItemToObject(o, "values", all);
  return o;
}

static cJSON *group_json(const rd_sweep *s, int g, const int *member_group, headline_list *hl) {
  cJSON *o = cJSON_CreateObject(), *values = cJSON_CreateObject(), *jobs = cJSON_CreateArray();
  int first = -1, n = 0, sk = seed_key(s);
  for (int m = 0; m < s->n; m++)
    if (member_group[m] == g) {
      if (first < 0) first = m;
      n++;
    }
  for (int k = 0; k < s->n_keys; k++) {
    if (k == sk) continue;
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(s->spec, s->keys[k]);
    cJSON_AddItemToObject(values, s->keys[k], cJSON_Duplicate(cJSON_GetArrayItem(list, rd_sweep_position(s, first, k)), 1));
  }
  cJSON_AddItemToObject(o, "values", values);
  cJSON_AddNumberToObject(o, "n_jobs", n);
  cJSON_AddItemToObject(o, "jobs", jobs);
  /* headline names in the order of the group's first report, then any others in order met */
  headline_list names = {0};
  for (int m = 0; m < s->n; m++)
    if (member_group[m] == g)
      for (int i = 0; i < hl[m].n; i++) {
        int seen = 0;
        for (int q = 0; q < names.n && !seen; q++) seen = strcmp(names.name[q], hl[m].name[i]) == 0;
        if (!seen) hl_add(&names, hl[m].name[i], 0.0);
      }
  cJSON *heads = cJSON_CreateArray();
  double *vals = malloc(sizeof(double) * (size_t)(n ? n : 1));
  for (int q = 0; vals && q < names.n; q++) {
    int k = 0;
    for (int m = 0; m < s->n; m++) {
      if (member_group[m] != g) continue;
      double v = NAN;
      for (int i = 0; i < hl[m].n; i++)
        if (strcmp(hl[m].name[i], names.name[q]) == 0) {
          v = hl[m].value[i];
          break;
        }
      vals[k++] = v;
    }
    cJSON_AddItemToArray(heads, headline_json(names.name[q], vals, k));
  }
  free(vals);
  hl_free(&names);
  cJSON_AddItemToObject(o, "headlines", heads);
  return o;
}

/* The summary of sweep s from its jobs' results (NULL when a job has no report of its spec). */
static cJSON *summary_result(const rd_jobfile *jf, const rd_sweep *s, const job_plan *plans, const char **missing) {
  headline_list *hl = calloc((size_t)s->n, sizeof *hl);
  int *member_group = malloc(sizeof(int) * (size_t)s->n);
  cJSON *r = NULL;
  *missing = NULL;
  for (int m = 0; hl && member_group && m < s->n; m++) {
    const rd_job *job = &jf->jobs[s->first + m];
    cJSON *root = NULL;
    const cJSON *res = read_result(plans[s->first + m].json_path, plans[s->first + m].spec, &root);
    if (!res) {
      *missing = job->name;
      cJSON_Delete(root);
      goto out;
    }
    headlines_of(s->kind, res, &hl[m]);
    member_group[m] = group_of(s, m);
    cJSON_Delete(root);
  }
  if (!hl || !member_group) goto out;
  r = cJSON_CreateObject();
  cJSON *sw = cJSON_CreateObject();
  cJSON_AddStringToObject(sw, "job", s->name);
  cJSON_AddItemToObject(sw, "keys", cJSON_Duplicate(s->spec, 1));
  int sk = seed_key(s);
  if (sk >= 0) cJSON_AddStringToObject(sw, "summarized_over", "seed");
  else cJSON_AddNullToObject(sw, "summarized_over");
  cJSON_AddItemToObject(r, "sweep", sw);
  cJSON *groups = cJSON_AddArrayToObject(r, "groups");
  int n_groups = 1;
  for (int k = 0; k < s->n_keys; k++)
    if (k != sk) n_groups *= s->n_values[k];
  for (int g = 0; g < n_groups; g++) {
    cJSON *gj = group_json(s, g, member_group, hl);
    cJSON *jobs = cJSON_GetObjectItemCaseSensitive(gj, "jobs");
    for (int m = 0; m < s->n; m++)
      if (member_group[m] == g) cJSON_AddItemToArray(jobs, cJSON_CreateString(jf->jobs[s->first + m].name));
    cJSON_AddItemToArray(groups, gj);
  }
out:
  for (int m = 0; hl && m < s->n; m++) hl_free(&hl[m]);
  free(hl);
  free(member_group);
  return r;
}

static char *summary_text(const rd_ctx *ctx, const rd_jobfile *jf, const rd_sweep *s, const job_plan *plans,
                          const sweep_plan *sp, double seconds, cJSON *result) {
  cJSON *root = cJSON_CreateObject(), *meta = cJSON_CreateObject(), *inputs = cJSON_CreateArray();
  cJSON_AddStringToObject(meta, "version", RMDIAG_VERSION);
  char name[300];
  snprintf(name, sizeof name, "%s.summary", s->name);
  cJSON_AddStringToObject(meta, "job", name);
  cJSON_AddStringToObject(meta, "kind", s->kind->name);
  cJSON_AddStringToObject(meta, "spec_sha256", sp->spec);
  for (int j = s->first; j < s->first + s->n; j++) {
    int seen = 0;
    for (int q = s->first; q < j && !seen; q++) seen = strcmp(plans[q].in.path, plans[j].in.path) == 0;
    if (seen) continue;
    cJSON *in = cJSON_CreateObject();
    cJSON_AddStringToObject(in, "path", plans[j].in.path);
    cJSON_AddNumberToObject(in, "bytes", (double)plans[j].in.bytes);
    cJSON_AddStringToObject(in, "group", jf->jobs[j].group);
    cJSON_AddItemToArray(inputs, in);
  }
  cJSON_AddItemToObject(meta, "inputs", inputs);
  cJSON_AddNumberToObject(meta, "ranks", ctx->size);
  cJSON_AddStringToObject(meta, "backend", ctx->backend ? ctx->backend->name : "cpu");
  cJSON_AddNumberToObject(meta, "seconds", round(seconds * 1e4) / 1e4);
  cJSON_AddNumberToObject(meta, "seed", (double)jf->seed);
  cJSON *opts = cJSON_CreateObject();
  cJSON_AddItemToObject(opts, "sweep", cJSON_Duplicate(s->spec, 1));
  cJSON_AddItemToObject(meta, "options", opts);
  if (jf->description) cJSON_AddStringToObject(meta, "description", jf->description);
  else cJSON_AddNullToObject(meta, "description");
  cJSON_AddItemToObject(root, "rmdiag", meta);
  cJSON_AddItemToObject(root, "result", result);
  rd_json_exact_numbers(root);
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  char *nl = text ? realloc(text, strlen(text) + 2) : NULL;
  if (!nl) {
    free(text);
    return NULL;
  }
  return strcat(nl, "\n");
}

int run_sweeps_summarize(const rd_ctx *ctx, const rd_jobfile *jf, const job_plan *plans, const sweep_plan *sp,
                         rd_status *st) {
  if (ctx->rank != 0) return RD_OK;
  for (int i = 0; i < jf->n_sweeps; i++) {
    const rd_sweep *s = &jf->sweeps[i];
    double t0 = rd_now();
    const char *missing = NULL;
    cJSON *r = summary_result(jf, s, plans, &missing);
    if (!r) {
      if (ctx->err && missing)
        fprintf(ctx->err, "rmdiag: %s.summary not written: job %s has no report of its spec\n", s->name, missing);
      continue;
    }
    char *text = summary_text(ctx, jf, s, plans, &sp[i], rd_now() - t0, r);
    rd_status one;
    rd_status_init(&one);
    if (!text) rd_fail(&one, RD_EFAIL, "out of memory printing %s", sp[i].json_path);
    else rd_write_file_atomic(sp[i].json_path, text, &one);
    free(text);
    if (one.code != RD_OK && st->code == RD_OK) *st = one;
    else if (one.code == RD_OK && ctx->err && !ctx->quiet)
      fprintf(ctx->err, "rmdiag: %s.summary (%s, %d jobs) -> %s\n", s->name, s->kind->name, s->n, sp[i].json_path);
  }
  return st->code;
}
