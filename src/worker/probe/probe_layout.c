/* probe: the input layout (docs/reference.md, 'probe input layout') as tables of datasets, one per
 * task group and one per model group, checked group by group; then the feature types and the
 * feature count d shared by a model's tasks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe_internal.h"

/* ---- the tables ------------------------------------------------------------------------------ */

/* GROUP[/RM]/TASK: one row of features, a label and a split per row. */
enum { PT_DS_X, PT_DS_LABEL, PT_DS_SPLIT };
enum { PT_LEN_N };
static const char *const task_lengths[] = {"rows (N)", NULL};
static const rd_h5_dataset task_datasets[] = {
    [PT_DS_X] = {"X", 2, RD_TCM(RD_TC_FLOAT), {PT_LEN_N, RD_H5_FREE}, 0,
                 "float32, float16 or bfloat16 features [N, d]"},
    [PT_DS_LABEL] = {"label", 1, RD_TCM(RD_TC_INT), {PT_LEN_N, RD_H5_FREE}, 0, "integer labels [N] (-1 = missing)"},
    [PT_DS_SPLIT] = {"split", 1, RD_TCM(RD_TC_INT), {PT_LEN_N, RD_H5_FREE}, 0,
                     "uint8 splits [N] (0 train, 1 validation, 2 test)"},
    {NULL, 0, 0, {0, 0}, 0, NULL},
};
static const rd_h5_layout task_layout = {.kind = "probe", .len_names = task_lengths, .datasets = task_datasets};

/* GROUP[/RM]: the optional inference rows (their d is checked against the tasks'). */
enum { PM_DS_INFER };
static const rd_h5_dataset model_datasets[] = {
    [PM_DS_INFER] = {"infer/X", 2, RD_TCM(RD_TC_FLOAT), {RD_H5_FREE, RD_H5_FREE}, 1,
                     "float32, float16 or bfloat16 features [N, d]"},
    {NULL, 0, 0, {0, 0}, 0, NULL},
};
static const rd_h5_layout model_layout = {.kind = "probe", .datasets = model_datasets};

/* GROUP itself: what it holds depends on the tasks and models, checked per group below. */
static const rd_h5_dataset group_datasets[] = {{NULL, 0, 0, {0, 0}, 0, NULL}};
static const rd_h5_layout group_layout = {.kind = "probe", .datasets = group_datasets};

/* ---- feature datasets ------------------------------------------------------------------------ */

/* The kind of a 2-byte float dataset from its bit layout: IEEE binary16 (sign 15, exponent 10..14
 * with bias 15, mantissa 0..9) or bfloat16 (sign 15, exponent 7..14 with bias 127, mantissa 0..6),
 * both with an implied leading mantissa bit; any other layout is refused. */
static int half_kind(hid_t f, const char *file, const char *path, int *etype, rd_status *st) {
  hid_t d = H5Dopen2(f, path, H5P_DEFAULT);
  if (d < 0) return rd_fail(st, RD_EINPUT, "%s: cannot open dataset %s", file, path);
  hid_t t = H5Dget_type(d);
  size_t spos = 0, epos = 0, esize = 0, mpos = 0, msize = 0;
  int ok = t >= 0 && H5Tget_class(t) == H5T_FLOAT && H5Tget_fields(t, &spos, &epos, &esize, &mpos, &msize) >= 0;
  size_t ebias = ok ? H5Tget_ebias(t) : 0;
  int norm = ok ? (int)H5Tget_norm(t) : -1, prec = ok ? (int)H5Tget_precision(t) : -1;
  int off = ok ? H5Tget_offset(t) : -1;
  if (t >= 0) H5Tclose(t);
  H5Dclose(d);
  ok = ok && norm == H5T_NORM_IMPLIED && prec == 16 && off == 0 && spos == 15 && mpos == 0;
  if (ok && epos == 10 && esize == 5 && msize == 10 && ebias == 15) {
    *etype = FEAT_F16;
    return RD_OK;
  }
  if (ok && epos == 7 && esize == 8 && msize == 7 && ebias == 127) {
    *etype = FEAT_BF16;
    return RD_OK;
  }
  return rd_fail(st, RD_EINPUT, "%s: %s has a 2-byte float type with sign bit %zu, exponent bits %zu..%zu (bias %zu) "
                 "and mantissa bits %zu..%zu, expected IEEE float16 (sign 15, exponent 10..14 with bias 15, mantissa "
                 "0..9) or bfloat16 (sign 15, exponent 7..14 with bias 127, mantissa 0..6)", file, path, spos, epos,
                 epos + esize - 1, ebias, mpos, mpos + msize - 1);
}

/* A feature source from a float [N, d] dataset the layout table accepted: its element type (a
 * 2-byte float must be binary16 or bfloat16), 1 <= d <= 2^24, and where it can be mapped from. */
static int feat_from_info(hid_t f, const char *file, const rd_dsinfo *info, feat_src *X, rd_status *st) {
  const char *path = info->path;
  memset(X, 0, sizeof *X);
  snprintf(X->path, sizeof X->path, "%s", path);
  X->N = info->dims[0];
  X->d = info->dims[1];
  X->map_offset = -1;
  switch (info->tsize) {
    case 2: RD_TRY(half_kind(f, file, path, &X->etype, st)); break;
    case 4: X->etype = FEAT_F32; break;
    case 8: X->etype = FEAT_F64; break;
    default:
      return rd_fail(st, RD_EINPUT, "%s: %s has %zu-byte floats, expected float32, float16 or bfloat16 features", file,
                     path, info->tsize);
  }
  if (X->d < 1) return rd_fail(st, RD_EINPUT, "%s: %s has shape [%lld, 0], expected at least one feature", file, path,
                               (long long)X->N);
  if (X->d > ((int64_t)1 << 24))
    return rd_fail(st, RD_EINPUT, "%s: %s has %lld features per row (at most 16777216 supported)", file, path,
                   (long long)X->d);
  if (X->etype == FEAT_F32) {
    /* mappable only when stored little-endian IEEE binary32, contiguous, unfiltered, and at a file
     * offset that keeps the floats aligned (HDF5 may place data at any byte; such data is read) */
    rd_h5_contig_offset(f, info, H5T_NATIVE_FLOAT, &X->map_offset);
    if (X->map_offset % (int64_t)sizeof(float) != 0) X->map_offset = -1;
    /* or chunked in whole rows, unfiltered (as a program appending rows batch by batch writes them):
     * each rank then maps the file and finds each chunk's offset itself */
    if (X->map_offset < 0 && (X->chunk_rows = rd_h5_chunk_rows(f, info, H5T_NATIVE_FLOAT)) > 0) X->map_offset = 0;
  }
  return RD_OK;
}

/* ---- per group ------------------------------------------------------------------------------- */

static int check_table(hid_t f, const char *file, const char *group, const rd_h5_layout *layout, rd_h5_found **found,
                       rd_status *st) {
  *found = malloc(sizeof **found);
  if (!*found) return rd_fail(st, RD_EFAIL, "out of memory");
  return rd_h5_check_layout(f, file, group, layout, NULL, *found, st);
}

/* A task group that is missing, with what the job probably meant: "models" when the input has
 * per-model groups holding the task, or the task group of a near name. */
static int missing_task(hid_t f, const rd_job *job, const probe_opts *o, const char *task, const char *mgroup,
                        const char *path, rd_status *st) {
  char list[600], near[256];
  const char *file = job->input;
  if (!o->n_models && probe_groups_with_task(f, job->group, task, list, sizeof list) > 0)
    return rd_fail(st, RD_EINPUT, "%s: task \"%s\" has no group %s, but the input has per-model groups holding it "
                   "(%s): add \"models\": [%s] to the job to probe each reward model (see docs/reference.md, 'probe "
                   "options')", file, task, path, list, list);
  int n = probe_task_groups(f, mgroup, task, list, sizeof list, near, sizeof near);
  if (near[0])
    return rd_fail(st, RD_EINPUT, "%s: task \"%s\" has no group %s; did you mean \"%s\"? (task groups in %s: %s)",
                   file, task, path, near, mgroup, list);
  if (n > 0)
    return rd_fail(st, RD_EINPUT, "%s: task \"%s\" has no group %s (expected X, label and split in it); the task "
                   "groups in %s are %s", file, task, path, mgroup, list);
  return rd_fail(st, RD_EINPUT, "%s: task \"%s\" has no group %s (expected X, label and split in it)", file, task,
                 path);
}

/* The task group of (model m, task t) under `mgroup`; `d0` is the d of the model's tasks so far
 * (-1 before the first), named by task `d0_task`. */
static int check_task(hid_t f, const rd_job *job, const probe_opts *o, ptask *p, const char *mgroup, int64_t *d0,
                      const char **d0_task, rd_status *st) {
  const char *file = job->input;
  const char *task = o->tasks[p->t].name;
  if (rd_h5_path(p->prefix, sizeof p->prefix, mgroup, task) < 0)
    return rd_fail(st, RD_EINPUT, "%s: group name %s is too long", file, mgroup);
  if (!rd_h5_exists(f, p->prefix)) return missing_task(f, job, o, task, mgroup, p->prefix, st);
  rd_h5_found *found = NULL;
  int rc = check_table(f, file, p->prefix, &task_layout, &found, st);
  if (rc == RD_OK) {
    snprintf(p->label_path, sizeof p->label_path, "%s", found->info[PT_DS_LABEL].path);
    snprintf(p->split_path, sizeof p->split_path, "%s", found->info[PT_DS_SPLIT].path);
    rc = feat_from_info(f, file, &found->info[PT_DS_X], &p->X, st);
  }
  free(found);
  RD_TRY(rc);
  if (*d0 >= 0 && p->X.d != *d0)
    return rd_fail(st, RD_EINPUT, "%s: %s has %lld features per row but task \"%s\" of the same model has %lld; "
                   "expected one d for all tasks of a reward model", file, p->X.path, (long long)p->X.d, *d0_task,
                   (long long)*d0);
  *d0 = p->X.d;
  *d0_task = task;
  return RD_OK;
}

/* The model group's optional inference rows, with the tasks' d. */
static int check_infer(hid_t f, const char *file, const char *mgroup, int64_t d0, feat_src *I, rd_status *st) {
  memset(I, 0, sizeof *I);
  I->map_offset = -1;
  rd_h5_found *found = NULL;
  int rc = check_table(f, file, mgroup, &model_layout, &found, st);
  if (rc == RD_OK && found->present[PM_DS_INFER]) rc = feat_from_info(f, file, &found->info[PM_DS_INFER], I, st);
  free(found);
  RD_TRY(rc);
  if (I->path[0] && I->d != d0)
    return rd_fail(st, RD_EINPUT, "%s: %s has %lld features per row but the tasks have %lld; expected the same d", file,
                   I->path, (long long)I->d, (long long)d0);
  return RD_OK;
}

/* Model m's group: GROUP/RM with "models", else GROUP itself. */
static int model_group(hid_t f, const rd_job *job, const probe_opts *o, int m, char *mgroup, size_t n,
                       rd_status *st) {
  if (!o->n_models) {
    snprintf(mgroup, n, "%s", job->group);
    return RD_OK;
  }
  if (rd_h5_path(mgroup, n, job->group, o->models[m]) < 0)
    return rd_fail(st, RD_EINPUT, "%s: group name %s is too long", job->input, job->group);
  if (!rd_h5_exists(f, mgroup)) {
    /* the first task directly under the group: a single-model input, for which "models" is wrong */
    char direct[512];
    if (rd_h5_path(direct, sizeof direct, job->group, o->tasks[0].name) >= 0 && rd_h5_exists(f, direct))
      return rd_fail(st, RD_EINPUT, "%s: models[%d] = \"%s\" but group %s is missing; the tasks are directly under "
                     "%s (%s exists: one reward model): remove \"models\" from the job", job->input, m, o->models[m],
                     mgroup, job->group, direct);
    char list[600];
    if (probe_groups_with_task(f, job->group, o->tasks[0].name, list, sizeof list) > 0)
      return rd_fail(st, RD_EINPUT, "%s: models[%d] = \"%s\" but group %s is missing; the reward-model groups under "
                     "%s holding task \"%s\" are %s", job->input, m, o->models[m], mgroup, job->group,
                     o->tasks[0].name, list);
    return rd_fail(st, RD_EINPUT, "%s: models[%d] = \"%s\" but group %s is missing", job->input, m, o->models[m],
                   mgroup);
  }
  return RD_OK;
}

int probe_check_layout(hid_t f, const rd_job *job, const probe_opts *o, probe_run *R, rd_status *st) {
  rd_h5_found *found = NULL;
  int rc = check_table(f, job->input, job->group, &group_layout, &found, st);
  free(found);
  RD_TRY(rc);
  for (int m = 0; m < R->n_models; m++) {
    char mgroup[512];
    RD_TRY(model_group(f, job, o, m, mgroup, sizeof mgroup, st));
    int64_t d0 = -1;
    const char *d0_task = NULL;
    for (int t = 0; t < o->n_tasks; t++) {
      ptask *p = &R->pt[m * o->n_tasks + t];
      p->m = m;
      p->t = t;
      RD_TRY(check_task(f, job, o, p, mgroup, &d0, &d0_task, st));
    }
    RD_TRY(check_infer(f, job->input, mgroup, d0, &R->infer[m], st));
  }
  return RD_OK;
}
