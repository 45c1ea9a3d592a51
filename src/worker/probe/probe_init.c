/* probe: what `rmdiag init probe INPUT.h5` writes into a job (docs/reference.md, 'Commands', init): the tasks
 * from the task groups present (GROUP/TASK, or GROUP/RM/TASK for every reward-model group, which
 * become "models"), each with one class per raw label that has training rows. Tasks that could not
 * run as found (no test row, fewer than two labels) are left out with a note. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe_internal.h"
#include "rmdiag/common/names.h"

#define PROBE_INIT_MAX_NAMES 4096

/* ---- groups ----------------------------------------------------------------------------------- */

typedef struct name_list {
  char **v;
  int n, cap;
} name_list;

static void name_list_free(name_list *l) {
  for (int i = 0; i < l->n; i++) free(l->v[i]);
  free(l->v);
  memset(l, 0, sizeof *l);
}

static int name_list_add(name_list *l, const char *name) {
  if (l->n + 1 >= l->cap) {
    int cap = l->cap ? 2 * l->cap : 16;
    char **v = realloc(l->v, sizeof(char *) * (size_t)cap);
    if (!v) return -1;
    l->v = v;
    l->cap = cap;
  }
  if (!(l->v[l->n] = strdup(name))) return -1;
  l->n++;
  return 0;
}

static herr_t group_cb(hid_t g, const char *name, const H5L_info_t *li, void *data) {
  (void)li;
  name_list *l = data;
  H5O_info_t oi;
  if (H5Oget_info_by_name(g, name, &oi, H5P_DEFAULT) < 0 || oi.type != H5O_TYPE_GROUP) return 0;
  if (l->n >= PROBE_INIT_MAX_NAMES) return 1;  /* enough to choose from */
  return name_list_add(l, name);
}

/* The groups directly under `path`, in name order. */
static int child_groups(hid_t f, const char *path, name_list *out) {
  memset(out, 0, sizeof *out);
  hid_t g = H5Gopen2(f, path, H5P_DEFAULT);
  if (g < 0) return -1;
  hsize_t idx = 0;
  herr_t e = H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, &idx, group_cb, out);
  H5Gclose(g);
  return e < 0 ? -1 : 0;
}

/* A task group holds X, label and split. */
static int is_task_group(hid_t f, const char *parent, const char *name) {
  char p[1200];
  if (strcmp(name, "infer") == 0 || rd_h5_path(p, sizeof p, parent, name) < 0) return 0;
  size_t n = strlen(p);
  const char *need[] = {"/X", "/label", "/split"};
  for (int k = 0; k < 3; k++) {
    if (n + strlen(need[k]) >= sizeof p) return 0;
    strcpy(p + n, need[k]);
    if (!rd_h5_exists(f, p)) return 0;
  }
  return 1;
}

/* ---- labels ----------------------------------------------------------------------------------- */

/* What a task group's labels allow: the distinct raw labels >= 0 with a training row (sorted), and
 * whether it has test rows and validation rows (or 2 training rows to hold some out). */
typedef struct task_labels {
  int64_t *v;
  int64_t n;
  int has_test, has_val;
} task_labels;

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

static int read_labels(hid_t f, const char *file, const char *tgroup, task_labels *tl, rd_status *st) {
  char lp[1200], sp[1200];
  rd_dsinfo li, si;
  if (rd_h5_path(lp, sizeof lp, tgroup, "label") < 0 || rd_h5_path(sp, sizeof sp, tgroup, "split") < 0)
    return rd_fail(st, RD_EINPUT, "%s: group name %s is too long", file, tgroup);
  RD_TRY(rd_h5_info(f, file, lp, &li, st));
  RD_TRY(rd_h5_info(f, file, sp, &si, st));
  RD_TRY(rd_h5_expect(&li, file, 1, RD_TCM(RD_TC_INT), "integer labels [N]", st));
  RD_TRY(rd_h5_expect(&si, file, 1, RD_TCM(RD_TC_INT), "integer splits [N]", st));
  int64_t n = li.dims[0] < si.dims[0] ? li.dims[0] : si.dims[0];
  int64_t *lab = rd_malloc(sizeof(int64_t) * (size_t)(2 * n + 1), st, "labels");
  if (!lab) return st->code;
  int64_t *spl = lab + n, n_train = 0;
  int rc = rd_h5_read_int_rows(f, file, &li, 0, n, lab, st);
  if (rc == RD_OK) rc = rd_h5_read_int_rows(f, file, &si, 0, n, spl, st);
  memset(tl, 0, sizeof *tl);
  for (int64_t i = 0; rc == RD_OK && i < n; i++) {
    tl->has_test |= spl[i] == 2 && lab[i] >= 0;
    tl->has_val |= spl[i] == 1 && lab[i] >= 0;
    if (spl[i] == 0 && lab[i] >= 0) lab[n_train++] = lab[i];  /* train labels, compacted in place */
  }
  if (rc == RD_OK) {
    qsort(lab, (size_t)n_train, sizeof *lab, cmp_i64);
    for (int64_t i = 0; i < n_train; i++)
      if (i == 0 || lab[i] != lab[i - 1]) lab[tl->n++] = lab[i];
    tl->has_val |= n_train >= 2;
    tl->v = lab;
  } else {
    free(lab);
  }
  return rc;
}

/* Keeps the labels of `a` that `b` has too (both sorted). */
static void intersect(task_labels *a, const task_labels *b) {
  int64_t k = 0;
  for (int64_t i = 0, j = 0; i < a->n; i++) {
    while (j < b->n && b->v[j] < a->v[i]) j++;
    if (j < b->n && b->v[j] == a->v[i]) a->v[k++] = a->v[i];
  }
  a->n = k;
  a->has_test &= b->has_test;
  a->has_val &= b->has_val;
}

/* ---- the job ---------------------------------------------------------------------------------- */

/* The task's classes over every model group (NULL: the task is left out, with a note). */
static cJSON *task_entry(hid_t f, const char *file, const char *const *mgroups, int n_models, const char *task,
                         FILE *note, rd_status *st) {
  task_labels all;
  memset(&all, 0, sizeof all);
  for (int m = 0; m < n_models; m++) {
    char tg[1200];
    task_labels tl;
    if (rd_h5_path(tg, sizeof tg, mgroups[m], task) < 0) return NULL;
    if (read_labels(f, file, tg, &tl, st) != RD_OK) {
      free(all.v);
      return NULL;
    }
    if (m == 0) all = tl;
    else intersect(&all, &tl), free(tl.v);
  }
  const char *why = !all.has_test ? "no test rows (split 2)"
                    : !all.has_val  ? "no validation rows and one training row"
                    : all.n < 2     ? "fewer than 2 labels with training rows"
                    : all.n > 100   ? "more than 100 labels"
                                    : NULL;
  if (why) {
    if (note) fprintf(note, "rmdiag init: task \"%s\" left out: %s%s\n", task, why,
                      all.n > 100 ? " (write its classes by hand, grouping labels)" : "");
    free(all.v);
    return NULL;
  }
  cJSON *e = cJSON_CreateObject(), *classes = cJSON_AddArrayToObject(e, "classes");
  for (int64_t i = 0; i < all.n; i++) {
    cJSON *c = cJSON_CreateArray();
    cJSON_AddItemToArray(c, cJSON_CreateNumber((double)all.v[i]));
    cJSON_AddItemToArray(classes, c);
  }
  if (note) fprintf(note, "rmdiag init: task \"%s\": %lld classes, one per label with training rows (group labels "
                    "into one class by listing them together)\n", task, (long long)all.n);
  free(all.v);
  return e;
}


/* A task or model name a job can carry (names that cannot are left out with a note). */
static int usable_name(const char *name, const char *what, FILE *note) {
  if (rd_name_valid(name) && strlen(name) <= 200 && strcmp(name, "infer") != 0) return 1;
  if (note) fprintf(note, "rmdiag init: %s group \"%.200s\" left out: not a usable name (letters, digits, '.', '_', "
                    "'-', at most 200 bytes)\n", what, name);
  return 0;
}

/* Which layout the group has: task groups directly under it (`tasks`), or reward-model groups that
 * hold task groups (`models`). */
static int find_layout(hid_t f, const char *file, const char *group, name_list *models, name_list *tasks,
                       rd_status *st) {
  name_list kids;
  memset(models, 0, sizeof *models);
  memset(tasks, 0, sizeof *tasks);
  if (child_groups(f, group, &kids) != 0) return rd_fail(st, RD_EINPUT, "%s: cannot list group %s", file, group);
  int rc = 0;
  for (int i = 0; i < kids.n && rc == 0; i++) {
    char mg[1200];
    if (is_task_group(f, group, kids.v[i])) {
      rc = name_list_add(tasks, kids.v[i]);
      continue;
    }
    if (strcmp(kids.v[i], "infer") == 0 || rd_h5_path(mg, sizeof mg, group, kids.v[i]) < 0) continue;
    name_list sub;
    int has = 0;
    if (child_groups(f, mg, &sub) == 0)
      for (int j = 0; j < sub.n && !has; j++) has = is_task_group(f, mg, sub.v[j]);
    name_list_free(&sub);
    if (has) rc = name_list_add(models, kids.v[i]);
  }
  name_list_free(&kids);
  return rc == 0 ? RD_OK : rd_fail(st, RD_EFAIL, "out of memory");
}

/* The tasks of the first model that every model has (the others noted). */
static int common_tasks(hid_t f, const char *group, const name_list *models, name_list *tasks, FILE *note) {
  char mg[1200];
  name_list first;
  memset(tasks, 0, sizeof *tasks);
  if (rd_h5_path(mg, sizeof mg, group, models->v[0]) < 0 || child_groups(f, mg, &first) != 0) return -1;
  int rc = 0;
  for (int t = 0; t < first.n && rc == 0; t++) {
    if (!is_task_group(f, mg, first.v[t])) continue;
    int everywhere = 1;
    for (int m = 1; m < models->n && everywhere; m++) {
      char og[1200];
      everywhere = rd_h5_path(og, sizeof og, group, models->v[m]) >= 0 && is_task_group(f, og, first.v[t]);
      if (!everywhere && note)
        fprintf(note, "rmdiag init: task \"%s\" left out: model group \"%s\" does not have it\n", first.v[t],
                models->v[m]);
    }
    if (everywhere) rc = name_list_add(tasks, first.v[t]);
  }
  name_list_free(&first);
  return rc;
}

/* The model groups (the job's group itself when there are no models) and the tasks to write. */
static int choose_layout(hid_t f, const char *file, const char *group, name_list *models, name_list *tasks,
                         FILE *note, rd_status *st) {
  RD_TRY(find_layout(f, file, group, models, tasks, st));
  if (tasks->n > 0) {
    if (models->n > 0 && note)
      fprintf(note, "rmdiag init: %s has task groups and also %d reward-model group(s) (%s%s): this job probes the "
              "task groups directly under %s; `rmdiag init probe --group %s/%s` makes one for a model group\n", group,
              models->n, models->v[0], models->n > 1 ? ", ..." : "", group, group, models->v[0]);
    name_list_free(models);
    return RD_OK;
  }
  if (models->n == 0)
    return rd_fail(st, RD_EINPUT, "%s: %s holds no task group (a group with X, label and split) and no reward-model "
                   "group of task groups; expected the layout of docs/reference.md, 'probe input layout'", file, group);
  if (common_tasks(f, group, models, tasks, note) != 0) return rd_fail(st, RD_EFAIL, "out of memory");
  if (tasks->n == 0)
    return rd_fail(st, RD_EINPUT, "%s: the reward-model groups under %s (%s, ...) have no task group in common",
                   file, group, models->v[0]);
  if (note) fprintf(note, "rmdiag init: \"models\": %d reward-model groups under %s, compared per task\n", models->n,
                    group);
  return RD_OK;
}

/* "tasks" (and "models") from the layout; the tasks each with one class per trained label. */
static int fill_job(hid_t f, const char *file, const char *group, name_list *models, name_list *tasks, cJSON *job,
                    FILE *note, rd_status *st) {
  int nm = models->n > 0 ? models->n : 1;
  char **mg = calloc((size_t)nm, sizeof *mg);
  if (!mg) return rd_fail(st, RD_EFAIL, "out of memory");
  cJSON *jm = models->n > 0 ? cJSON_CreateArray() : NULL, *jt = cJSON_CreateObject();
  for (int m = 0; m < nm && st->code == RD_OK; m++) {
    mg[m] = malloc(1200);
    if (!mg[m] || (models->n > 0 && rd_h5_path(mg[m], 1200, group, models->v[m]) < 0))
      rd_fail(st, RD_EINPUT, "%s: group name %s is too long", file, group);
    else if (models->n == 0)
      snprintf(mg[m], 1200, "%s", group);
    else
      cJSON_AddItemToArray(jm, cJSON_CreateString(models->v[m]));
  }
  for (int t = 0; t < tasks->n && st->code == RD_OK; t++) {
    if (!usable_name(tasks->v[t], "task", note)) continue;
    cJSON *e = task_entry(f, file, (const char *const *)mg, nm, tasks->v[t], note, st);
    if (e) cJSON_AddItemToObject(jt, tasks->v[t], e);
  }
  for (int m = 0; m < nm; m++) free(mg[m]);
  free(mg);
  if (st->code == RD_OK && !jt->child)
    rd_fail(st, RD_EINPUT, "%s: no task under %s can be probed as found (the notes above say why)", file, group);
  if (st->code != RD_OK) {
    cJSON_Delete(jm);
    cJSON_Delete(jt);
    return st->code;
  }
  cJSON_AddItemToObject(job, "tasks", jt);
  if (jm) cJSON_AddItemToObject(job, "models", jm);
  return RD_OK;
}

int probe_init(hid_t f, const char *file, const char *group, cJSON *job, FILE *note, rd_status *st) {
  name_list models, tasks;
  int rc = choose_layout(f, file, group, &models, &tasks, note, st);
  for (int m = 0; rc == RD_OK && m < models.n; m++)
    if (!usable_name(models.v[m], "reward-model", note))
      rc = rd_fail(st, RD_EINPUT, "%s: reward-model group %s/%.200s cannot be named in \"models\"", file, group,
                   models.v[m]);
  if (rc == RD_OK) rc = fill_job(f, file, group, &models, &tasks, job, note, st);
  name_list_free(&models);
  name_list_free(&tasks);
  return rc;
}

/* The reward-model groups under `group` that hold a task group named `task`, listed as
 * "\"A\", \"B\"" in `out` (empty when none): what a job without "models" probably meant. */
int probe_groups_with_task(hid_t f, const char *group, const char *task, char *out, size_t n) {
  name_list kids;
  int found = 0;
  size_t len = 0;
  out[0] = '\0';
  if (child_groups(f, group, &kids) != 0) return 0;
  for (int i = 0; i < kids.n; i++) {
    char mg[1200];
    if (strcmp(kids.v[i], "infer") == 0 || rd_h5_path(mg, sizeof mg, group, kids.v[i]) < 0) continue;
    if (!is_task_group(f, mg, task)) continue;
    if (len + strlen(kids.v[i]) + 8 < n) len += (size_t)snprintf(out + len, n - len, "%s\"%s\"", found ? ", " : "",
                                                               kids.v[i]);
    found++;
  }
  name_list_free(&kids);
  return found;
}

int probe_task_groups(hid_t f, const char *group, const char *task, char *out, size_t n, char *near, size_t nn) {
  name_list kids;
  int found = 0;
  size_t len = 0;
  out[0] = near[0] = '\0';
  if (child_groups(f, group, &kids) != 0) return 0;
  const char **cand = calloc((size_t)kids.n + 1, sizeof *cand);
  for (int i = 0; i < kids.n; i++) {
    if (!is_task_group(f, group, kids.v[i])) continue;
    if (cand) cand[found] = kids.v[i];
    if (len + strlen(kids.v[i]) + 8 < n) len += (size_t)snprintf(out + len, n - len, "%s\"%s\"", found ? ", " : "",
                                                               kids.v[i]);
    found++;
  }
  const char *best = cand ? rd_options_suggest(NULL, cand, task) : NULL;
  if (best) snprintf(near, nn, "%s", best);
  free(cand);
  name_list_free(&kids);
  return found;
}
