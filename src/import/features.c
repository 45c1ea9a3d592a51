/* `rmdiag import features`: feature dumps (.npy or .safetensors, features_read.c) and per-row labels
 * and splits (CSV or JSONL, features_labels.c) into the probe input layout (see docs/reference.md,
 * 'features'), written chunked and compressed to a temporary file that is renamed into place. Here:
 * the options, the output datasets and the command. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "features_internal.h"
#include "rmdiag/common/jsonutil.h"
#include "rmdiag/common/names.h"
#include "rmdiag/common/h5out.h"
#include "rmdiag/import/args.h"
#include "rmdiag/import/formats.h"

/* ---- options --------------------------------------------------------------------------------------- */

enum { A_FEATURES, A_LABELS, A_GROUP, A_MODEL, A_TENSOR, A_TASK, A_INFER, A_COUNT };

static const rd_arg features_table[A_COUNT + 1] = {
    [A_FEATURES] = {"FEATURES", NULL, RD_ARG_REPEAT, RD_ARG_GLOBAL,
                    ".npy (format 1.0-3.0, C order, float32 or float16; float64 is rounded to\n"
                    "float32) or .safetensors (F32, F16 or BF16; BF16 is widened exactly to float32)\n"
                    "with shape [rows, features]"},
    [A_LABELS] = {"LABELS", NULL, RD_ARG_REPEAT, RD_ARG_GLOBAL,
                  "CSV with a header holding columns label and split, or JSONL with fields label\n"
                  "and split; one row per feature row, in the same order. label: an integer\n"
                  "(empty, NA or null = missing, stored as -1); split: 0/train, 1/validation/val/dev,\n"
                  "2/test"},
    [A_GROUP] = {"--group", "G", RD_ARG_ONCE, RD_ARG_GLOBAL, "output group (default /probe)"},
    [A_MODEL] = {"--model", "RM", RD_ARG_REPEAT, RD_ARG_GLOBAL,
                 "puts the following --task and --infer under GROUP/RM (several reward models)"},
    [A_TENSOR] = {"--tensor", "NAME", RD_ARG_REPEAT, RD_ARG_GLOBAL,
                  "the tensor to read from the following .safetensors files (needed when a file\n"
                  "holds several)"},
    [A_TASK] = {"--task", "TASK FEATURES LABELS", RD_ARG_REPEAT, RD_ARG_GLOBAL,
                "writes GROUP[/RM]/TASK/X, label, split (repeatable)"},
    [A_INFER] = {"--infer", "FEATURES", RD_ARG_REPEAT, RD_ARG_GLOBAL,
                 "writes GROUP[/RM]/infer/X (rows for inference-time probing)"},
    [A_COUNT] = RD_ARG_END,
};

const rd_args_spec rd_import_features_args = {
    .command = "rmdiag import features",
    .synopsis = "[--group /probe] [--model RM] [--tensor NAME]\n"
                "                       --task TASK FEATURES LABELS [--task ...] [--infer FEATURES] -o OUT.h5",
    .args = features_table,
    .notes = "Task and model names: letters, digits, '.', '_' or '-', 1 to 200 bytes, not starting with '.', not\n"
             "\"infer\". Datasets are chunked (whole rows, about 1 MiB) and compressed (shuffle + deflate).\n",
    .max_operands = 0,
};

#define CMD "rmdiag import features"

typedef struct item {
  const char *model, *task;  /* task NULL: inference rows */
  const char *features, *labels, *tensor;
} item;



/* A valid task name (checked as each item is given). */
static int check_item(const item *it, rd_status *st) {
  if (it->task && (!rd_name_valid(it->task) || strcmp(it->task, "infer") == 0))
    return rd_fail(st, RD_EINPUT, CMD ": task name \"%s\" must be letters, digits, '.', '_' or '-' (1 to 200 "
                   "bytes, not starting with '.', not \"infer\")", it->task);
  return RD_OK;
}

/* Each task given once per model, one --infer per model: the first repeat in command-line order.
 * Keys "MODEL\x01TASK" ("\x02" for --infer): names cannot hold either byte. O(n log n). */
static int check_repeats(const item *items, int n, rd_status *st) {
  char **keys = calloc((size_t)(n ? n : 1), sizeof *keys);
  int rc = keys ? RD_OK : rd_fail(st, RD_EFAIL, "out of memory");
  for (int k = 0; k < n && rc == RD_OK; k++) {
    const char *m = items[k].model ? items[k].model : "", *t = items[k].task ? items[k].task : "\x02";
    size_t len = strlen(m) + strlen(t) + 2;
    if (!(keys[k] = malloc(len))) rc = rd_fail(st, RD_EFAIL, "out of memory");
    else snprintf(keys[k], len, "%s\x01%s", m, t);
  }
  int64_t first = -1, dup = rc == RD_OK ? rd_first_duplicate((const char *const *)keys, n, &first) : -1;
  for (int k = 0; keys && k < n; k++) free(keys[k]);
  free(keys);
  if (dup < 0) return rc;
  const item *it = &items[dup];
  if (it->task)
    return rd_fail(st, RD_EINPUT, CMD ": task \"%s\" given twice%s%s", it->task, it->model ? " for model " : "",
                   it->model ? it->model : "");
  return rd_fail(st, RD_EINPUT, CMD ": --infer given twice%s%s", it->model ? " for model " : "", it->model ? it->model : "");
}

typedef struct ns_entry {
  const char *name;
  int is_model, at;
} ns_entry;

static int cmp_ns(const void *a, const void *b) {
  const ns_entry *x = a, *y = b;
  int c = strcmp(x->name, y->name);
  return c ? c : (x->at > y->at) - (x->at < y->at);
}

/* GROUP/TASK (no model) and GROUP/RM/... share one namespace: a model named like such a task would put
 * its tasks inside that task's group. The first such model in command-line order; O(n log n). */
static int check_namespace(const item *items, int n, rd_status *st) {
  ns_entry *e = malloc(sizeof *e * (size_t)(n ? n : 1));
  if (!e) return rd_fail(st, RD_EFAIL, "out of memory");
  int m = 0, worst = -1;
  for (int k = 0; k < n; k++) {
    if (items[k].model) e[m++] = (ns_entry){items[k].model, 1, k};
    else if (items[k].task) e[m++] = (ns_entry){items[k].task, 0, k};
  }
  qsort(e, (size_t)m, sizeof *e, cmp_ns);
  for (int i = 0, j; i < m; i = j) {
    int task = 0, model = -1;
    for (j = i; j < m && strcmp(e[j].name, e[i].name) == 0; j++) {
      task |= !e[j].is_model;
      if (e[j].is_model && model < 0) model = e[j].at;  /* sorted by position within a name */
    }
    if (task && model >= 0 && (worst < 0 || model < worst)) worst = model;
  }
  free(e);
  if (worst >= 0)
    return rd_fail(st, RD_EINPUT, CMD ": --model \"%s\" has the name of a task given without a model; rename one "
                   "of them", items[worst].model);
  return RD_OK;
}

/* The items to write, in command-line order, each with the --model and --tensor given before it. */
static int parse_options(int argc, char **argv, item **items, int *n_items, const char **group, rd_status *st) {
  rd_arg_use *uses = NULL;
  int n = 0, rc = RD_OK;
  RD_TRY(rd_args_parse(&rd_import_features_args, argc, argv, &uses, &n, st));
  const char *model = NULL, *tensor = NULL;
  *group = "/probe";
  *n_items = 0;
  *items = calloc((size_t)(n ? n : 1), sizeof **items);
  if (!*items) rc = rd_fail(st, RD_EFAIL, "out of memory");
  for (int k = 0; k < n && rc == RD_OK; k++) {
    char **v = uses[k].values;
    item it = {model, NULL, v[0], NULL, tensor};
    switch (uses[k].row) {
      case A_GROUP: *group = v[0]; break;
      case A_MODEL:
        model = v[0];
        if (!rd_name_valid(model) || strcmp(model, "infer") == 0)
          rc = rd_fail(st, RD_EINPUT, CMD ": --model \"%s\" must be letters, digits, '.', '_' or '-' (1 to 200 bytes, "
                       "not starting with '.', not \"infer\")", model);
        break;
      case A_TENSOR: tensor = v[0]; break;
      case A_TASK:
        it = (item){model, v[0], v[1], v[2], tensor};
        /* fall through */
      case A_INFER:
        rc = check_item(&it, st);
        if (rc == RD_OK) (*items)[(*n_items)++] = it;
        break;
    }
  }
  free(uses);
  RD_TRY(rc);
  if (*n_items == 0) return rd_fail(st, RD_EINPUT, CMD ": nothing to import (give --task TASK FEATURES LABELS)");
  RD_TRY(check_repeats(*items, *n_items, st));
  RD_TRY(check_namespace(*items, *n_items, st));
  if ((*group)[0] != '/') return rd_fail(st, RD_EINPUT, CMD ": --group must start with '/'");
  return RD_OK;
}

/* ---- output --------------------------------------------------------------------------------------- */

static hid_t half_type(void) {
  hid_t t = H5Tcopy(H5T_IEEE_F32LE);
  H5Tset_fields(t, 15, 10, 5, 0, 10);
  H5Tset_size(t, 2);
  H5Tset_ebias(t, 15);
  H5Tset_precision(t, 16);
  return t;
}

/* A chunked, shuffled and deflated dataset of `dims`; chunks of whole rows (about 1 MiB). */
static hid_t create_chunked(hid_t h, const char *path, int ndims, const int64_t *dims, hid_t type, rd_status *st) {
  if (rd_h5_make_groups(h, path, 1, st) != RD_OK) return H5I_INVALID_HID;
  hsize_t d[2] = {(hsize_t)dims[0], ndims > 1 ? (hsize_t)dims[1] : 1}, c[2];
  size_t row_bytes = H5Tget_size(type) * (ndims > 1 ? (size_t)dims[1] : 1);
  hsize_t rows = (hsize_t)((1u << 20) / (row_bytes ? row_bytes : 1));
  if (rows < 1) rows = 1;
  if (rows > d[0]) rows = d[0] ? d[0] : 1;
  c[0] = rows;
  c[1] = d[1];
  hid_t space = H5Screate_simple(ndims, d, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_obj_track_times(dcpl, 0);
  H5Pset_chunk(dcpl, ndims, c);
  H5Pset_shuffle(dcpl);
  H5Pset_deflate(dcpl, 1);
  hid_t ds = H5Dcreate2(h, path, type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  H5Pclose(dcpl);
  H5Sclose(space);
  if (ds < 0) rd_fail(st, RD_EFAIL, "cannot create output dataset %s", path);
  return ds;
}

static int write_rows(hid_t ds, int64_t r0, int64_t n, int64_t d, hid_t memtype, const void *buf) {
  hid_t fs = H5Dget_space(ds);
  hsize_t start[2] = {(hsize_t)r0, 0}, count[2] = {(hsize_t)n, (hsize_t)d};
  H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
  hid_t ms = H5Screate_simple(2, count, NULL);
  herr_t e = H5Dwrite(ds, memtype, ms, fs, H5P_DEFAULT, buf);
  H5Sclose(ms);
  H5Sclose(fs);
  return e < 0 ? -1 : 0;
}

/* Copies the features of F into dataset `path` (float16 kept, others as float32), in blocks. */
static int copy_features(hid_t h, feat_file *F, const char *path, rd_status *st) {
  int half = F->etype == E_F16;
  hid_t ftype = half ? half_type() : H5Tcopy(H5T_IEEE_F32LE);
  int64_t dims[2] = {F->N, F->d};
  hid_t ds = create_chunked(h, path, 2, dims, ftype, st);
  if (ds < 0) {
    H5Tclose(ftype);
    return st->code;
  }
  int64_t block = ((int64_t)8 << 20) / (F->d * 8);
  if (block < 1) block = 1;
  void *raw = malloc((size_t)(block * F->d) * feat_esize(F->etype)), *out = malloc((size_t)(block * F->d) * 4);
  int rc = (raw && out) ? RD_OK : rd_fail(st, RD_EFAIL, "out of memory");
  for (int64_t r0 = 0; rc == RD_OK && r0 < F->N; r0 += block) {
    int64_t n = F->N - r0 < block ? F->N - r0 : block;
    rc = feat_read(F, r0, n, raw, out, st);
    if (rc == RD_OK && write_rows(ds, r0, n, F->d, half ? ftype : H5T_NATIVE_FLOAT, out) != 0)
      rc = rd_fail(st, RD_EFAIL, "cannot write %s", path);
  }
  free(raw);
  free(out);
  H5Dclose(ds);
  H5Tclose(ftype);
  return rc;
}

static int write_1d(hid_t h, const char *path, int64_t n, hid_t ftype, hid_t mtype, const void *data, rd_status *st) {
  int64_t dims[1] = {n};
  hid_t ds = create_chunked(h, path, 1, dims, ftype, st);
  if (ds < 0) return st->code;
  herr_t e = n > 0 ? H5Dwrite(ds, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) : 0;
  H5Dclose(ds);
  return e < 0 ? rd_fail(st, RD_EFAIL, "cannot write %s", path) : RD_OK;
}

static int write_labels(hid_t h, const char *base, const labels *L, rd_status *st) {
  char path[1400];
  int32_t *lab = malloc(sizeof(int32_t) * (size_t)(L->n ? L->n : 1));
  if (!lab) return rd_fail(st, RD_EFAIL, "out of memory");
  for (int64_t i = 0; i < L->n; i++) lab[i] = (int32_t)L->label[i];  /* range checked when read */
  snprintf(path, sizeof path, "%s/label", base);
  int rc = write_1d(h, path, L->n, H5T_STD_I32LE, H5T_NATIVE_INT32, lab, st);
  snprintf(path, sizeof path, "%s/split", base);
  if (rc == RD_OK) rc = write_1d(h, path, L->n, H5T_STD_U8LE, H5T_NATIVE_UINT8, L->split, st);
  free(lab);
  return rc;
}

/* ---- the command ------------------------------------------------------------------------------------- */

/* The rest of an item's line: what its labels hold. Every row is kept (a missing label is stored as -1,
 * not dropped). */
static void log_labels(const item *it, const labels *L, FILE *log) {
  if (!it->labels) {
    fprintf(log, "; kept every row; dropped none\n");
    return;
  }
  int64_t missing = 0, split[3] = {0, 0, 0};
  for (int64_t i = 0; i < L->n; i++) {
    missing += L->label[i] < 0;
    if (L->split[i] < 3) split[L->split[i]]++;
  }
  fprintf(log, "; labels from %s: train %lld, validation %lld, test %lld rows, %lld labels missing (stored as -1); "
          "kept every row; dropped none\n", it->labels, (long long)split[0], (long long)split[1], (long long)split[2],
          (long long)missing);
}

/* One item: GROUP[/RM]/TASK/X with its label and split, or GROUP[/RM]/infer/X; *rows counts its rows. */
static int import_item(hid_t h, const char *group, const item *it, int64_t *rows, FILE *log, rd_status *st) {
  feat_file F;
  labels L;
  memset(&L, 0, sizeof L);
  int rc = feat_open(&F, it->features, it->tensor, st);
  if (rc == RD_OK && it->labels) {
    rc = labels_read(&L, it->labels, st);
    if (rc == RD_OK && L.n != F.N)
      rc = rd_fail(st, RD_EINPUT, "%s: %lld label rows but %s has %lld feature rows; expected one label row per "
                   "feature row, in the same order", it->labels, (long long)L.n, it->features, (long long)F.N);
  }
  char base[1200], path[1400];
  snprintf(base, sizeof base, "%s%s%s/%s", strcmp(group, "/") ? group : "", it->model ? "/" : "",
           it->model ? it->model : "", it->task ? it->task : "infer");
  snprintf(path, sizeof path, "%s/X", base);
  if (rc == RD_OK) rc = copy_features(h, &F, path, st);
  if (rc == RD_OK && it->labels) rc = write_labels(h, base, &L, st);
  if (rc == RD_OK && log) {
    fprintf(log, "rmdiag import features: %s: %lld x %lld %s -> %s", it->features, (long long)F.N, (long long)F.d,
            F.etype == E_F16 ? "float16" : F.etype == E_BF16 ? "bfloat16 (widened to float32)"
                                         : F.etype == E_F64 ? "float64 (rounded to float32)" : "float32",
            base);
    log_labels(it, &L, log);
  }
  *rows += F.N;
  feat_close(&F);
  labels_free(&L);
  return rc;
}

int rd_import_features(int argc, char **argv, const char *out_path, FILE *log, rd_status *st) {
  item *items = NULL;
  int n = 0;
  const char *group = "/probe";
  int rc = parse_options(argc, argv, &items, &n, &group, st);
  if (rc != RD_OK) {
    free(items);
    return rc;
  }
  rd_h5_atomic out;
  rc = rd_h5_atomic_create(out_path, &out, st);
  int64_t rows = 0;
  for (int k = 0; k < n && rc == RD_OK; k++) rc = import_item(out.h, group, &items[k], &rows, log, st);
  rc = rd_h5_atomic_finish(&out, st);
  free(items);
  if (rc == RD_OK && log)
    fprintf(log, "rmdiag import features: %lld rows in %d datasets -> %s\n", (long long)rows, n, out_path);
  return rc;
}
