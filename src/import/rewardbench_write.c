/* rewardbench / rewardbench2: the models aligned by (subset, item id) and the benchmark input layout
 * written (see docs/reference.md, 'rewardbench'). Steps: align (checks), lay out (allocation and
 * copies), write. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rewardbench_internal.h"
#include "rmdiag/common/h5out.h"

/* "subset \"S\", id \"I\"" of a (subset, id) key. */
static const char *key_parts(const rb_state *S, int64_t key, char *buf, size_t n) {
  const char *k = S->keys.keys[key];
  const char *sep = memchr(k, '\x1f', S->keys.lens[key]);
  int ls = sep ? (int)(sep - k) : 0;
  snprintf(buf, n, "subset \"%.*s\", id \"%s\"", ls, k, sep ? sep + 1 : k);
  return buf;
}

/* Each model's key -> item index, refusing a (subset, id) given twice for one model. */
static int index_items(rb_state *S) {
  int64_t K = S->keys.n;
  char loc[1200], loc2[1200], kb[1200];
  for (int m = 0; m < S->n_models; m++) {
    rb_model *md = &S->models[m];
    md->by_key = malloc(sizeof(int64_t) * (size_t)(K ? K : 1));
    if (!md->by_key) return rd_fail(S->st, RD_EFAIL, "out of memory");
    for (int64_t k = 0; k < K; k++) md->by_key[k] = -1;
    for (int64_t i = 0; i < md->n_items; i++) {
      rb_item *it = &md->items[i];
      if (md->by_key[it->key] >= 0) {
        rb_item *pv = &md->items[md->by_key[it->key]];
        return rd_fail(S->st, RD_EINPUT,
                       "%s: item (%s) appears twice for model \"%s\" (first at %s); each (subset, id) "
                       "must appear once per model",
                       rb_where(S, it->file, it->pos, loc, sizeof loc), key_parts(S, it->key, kb, sizeof kb), md->name,
                       rb_where(S, pv->file, pv->pos, loc2, sizeof loc2));
      }
      md->by_key[it->key] = i;
    }
  }
  return RD_OK;
}

/* Model md has exactly the first model's items (with --drop-incomplete: those items it has are
 * checked, the others dropped), with the same numbers of completions. */
static int check_aligned(rb_state *S, const rb_model *ref, const rb_model *md) {
  char loc[1200], loc2[1200], kb[1200];
  for (int64_t i = 0; i < md->n_items; i++) {
    const rb_item *it = &md->items[i];
    int64_t r = ref->by_key[it->key];
    if (r < 0 && S->drop_incomplete) continue;
    if (r < 0)
      return rd_fail(S->st, RD_EINPUT, "%s: model \"%s\" has item (%s), which model \"%s\" (%s) lacks; models are "
                     "aligned by (subset, id) and must have the same items (--drop-incomplete keeps only the items "
                     "every model has)",
                     rb_where(S, it->file, it->pos, loc, sizeof loc), md->name, key_parts(S, it->key, kb, sizeof kb),
                     ref->name, S->files[ref->first_file]);
    const rb_item *ri = &ref->items[r];
    if (ri->n != it->n || ri->n_correct != it->n_correct)
      return rd_fail(S->st, RD_EINPUT, "%s: item (%s) of model \"%s\" has %d completions (%d preferred) but model "
                     "\"%s\" has %d (%d preferred) at %s; aligned items must have the same completions",
                     rb_where(S, it->file, it->pos, loc, sizeof loc), key_parts(S, it->key, kb, sizeof kb), md->name,
                     it->n, it->n_correct, ref->name, ri->n, ri->n_correct,
                     rb_where(S, ri->file, ri->pos, loc2, sizeof loc2));
  }
  for (int64_t r = 0; r < ref->n_items && !S->drop_incomplete; r++)
    if (md->by_key[ref->items[r].key] < 0) {
      const rb_item *ri = &ref->items[r];
      return rd_fail(S->st, RD_EINPUT, "model \"%s\" (%s) lacks item (%s) of model \"%s\" (%s); models are aligned by "
                     "(subset, id) and must have the same items (--drop-incomplete keeps only the items every model "
                     "has)", md->name, S->files[md->first_file], key_parts(S, ri->key, kb, sizeof kb), ref->name,
                     rb_where(S, ri->file, ri->pos, loc, sizeof loc));
    }
  return RD_OK;
}

/* --drop-incomplete: the first model's items that every model has, in its order (kept[i] = its item
 * index); an error when none is left. */
static int common_items(rb_state *S, int64_t **kept, int64_t *n_kept) {
  const rb_model *ref = &S->models[0];
  *kept = malloc(sizeof(int64_t) * (size_t)(ref->n_items ? ref->n_items : 1));
  if (!*kept) return rd_fail(S->st, RD_EFAIL, "out of memory");
  *n_kept = 0;
  for (int64_t i = 0; i < ref->n_items; i++) {
    int all = 1;
    for (int m = 1; m < S->n_models && all; m++) all = S->models[m].by_key[ref->items[i].key] >= 0;
    if (all) (*kept)[(*n_kept)++] = i;
  }
  if (*n_kept == 0)
    return rd_fail(S->st, RD_EINPUT, "rmdiag import %s --drop-incomplete: no item (subset, id) is present for every "
                   "model: nothing would be left", S->cmd);
  return RD_OK;
}

/* What is written: per-item arrays (items mode) or the accuracy table, and the names. */
typedef struct rb_layout {
  int64_t I, C, Sn;
  int64_t *kept;     /* the first model's items written (all, or with --drop-incomplete those every model has) */
  int64_t *sub_new;  /* subset id -> output subset, -1 when the first model has none */
  int32_t *isub, *inc;
  int64_t *ioff;
  double *scores, *given, *acc;
  const char **names;
} rb_layout;

/* Items in the first model's order; subsets numbered by first appearance among them; every model's
 * scores (and given credits) copied into that order. */
static int layout_items(rb_state *S, rb_layout *L) {
  rb_model *ref = &S->models[0];
  int64_t M = S->n_models, I = L->I;
  L->sub_new = malloc(sizeof(int64_t) * (size_t)(S->subsets.n + 1));
  L->isub = malloc(sizeof(int32_t) * (size_t)I);
  L->inc = malloc(sizeof(int32_t) * (size_t)I);
  L->ioff = malloc(sizeof(int64_t) * (size_t)(I + 1));
  L->names = malloc(sizeof(char *) * (size_t)(I > M ? I + 1 : M + 1));
  if (!L->sub_new || !L->isub || !L->inc || !L->ioff || !L->names) return rd_fail(S->st, RD_EFAIL, "out of memory");
  for (int64_t s = 0; s < S->subsets.n; s++) L->sub_new[s] = -1;
  L->ioff[0] = 0;
  for (int64_t i = 0; i < I; i++) {
    rb_item *it = &ref->items[L->kept[i]];
    if (L->sub_new[it->subset] < 0) L->sub_new[it->subset] = L->Sn++;
    L->isub[i] = (int32_t)L->sub_new[it->subset];
    L->inc[i] = it->n_correct;
    L->ioff[i + 1] = L->ioff[i] + it->n;
  }
  int64_t C = L->C = L->ioff[I];
  L->scores = malloc(sizeof(double) * (size_t)(M * C));
  L->given = S->any_given ? malloc(sizeof(double) * (size_t)(M * I)) : NULL;
  if (!L->scores || (S->any_given && !L->given)) return rd_fail(S->st, RD_EFAIL, "out of memory");
  for (int m = 0; m < M; m++) {
    rb_model *md = &S->models[m];
    for (int64_t i = 0; i < I; i++) {
      const rb_item *it = &md->items[md->by_key[ref->items[L->kept[i]].key]];
      memcpy(L->scores + m * C + L->ioff[i], md->scores + it->off, sizeof(double) * (size_t)it->n);
      if (L->given) L->given[m * I + i] = it->given;
    }
  }
  return RD_OK;
}

/* Per-subset accuracies: subsets in order of first appearance, NaN where a model has none. */
static int layout_accuracies(rb_state *S, rb_layout *L) {
  int64_t M = S->n_models, Sn = L->Sn = S->subsets.n;
  L->acc = malloc(sizeof(double) * (size_t)(M * Sn));
  L->names = malloc(sizeof(char *) * (size_t)((Sn > M ? Sn : M) + 1));
  if (!L->acc || !L->names) return rd_fail(S->st, RD_EFAIL, "out of memory");
  for (int64_t q = 0; q < M * Sn; q++) L->acc[q] = NAN;
  for (int m = 0; m < M; m++)
    for (int64_t q = 0; q < S->models[m].n_acc; q++) L->acc[m * Sn + S->models[m].acc_subset[q]] = S->models[m].acc[q];
  return RD_OK;
}

static void layout_free(rb_layout *L) {
  void *arrays[] = {L->kept, L->sub_new, L->isub, L->inc, L->ioff, L->scores, L->given, L->acc, (void *)L->names};
  for (size_t k = 0; k < sizeof arrays / sizeof arrays[0]; k++) free(arrays[k]);
}

static const char *ds_path(char *buf, size_t n, const char *group, const char *name) {
  snprintf(buf, n, "%.500s/%.600s", strcmp(group, "/") ? group : "", name);
  return buf;
}

/* The per-item datasets (after the names): subsets, offsets, preferred counts, scores, given credits,
 * item ids (the id part of each (subset, id) key). */
static int write_items(hid_t h, const char *group, rb_state *S, rb_layout *L) {
  rd_status *st = S->st;
  char path[1400];
  int64_t M = S->n_models, I = L->I, d1[1] = {I}, d1p[1] = {I + 1}, d2[2] = {M, L->C}, dg[2] = {M, I};
  RD_TRY(rd_h5_write_chunked(h, ds_path(path, sizeof path, group, "item_subset"), 1, d1, H5T_STD_I32LE,
                             H5T_NATIVE_INT32, L->isub, st));
  RD_TRY(rd_h5_write_chunked(h, ds_path(path, sizeof path, group, "item_offset"), 1, d1p, H5T_STD_I64LE,
                             H5T_NATIVE_INT64, L->ioff, st));
  RD_TRY(rd_h5_write_chunked(h, ds_path(path, sizeof path, group, "item_n_correct"), 1, d1, H5T_STD_I32LE,
                             H5T_NATIVE_INT32, L->inc, st));
  RD_TRY(rd_h5_write_chunked(h, ds_path(path, sizeof path, group, "scores"), 2, d2, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE,
                             L->scores, st));
  if (L->given)
    RD_TRY(rd_h5_write_chunked(h, ds_path(path, sizeof path, group, "given_credit"), 2, dg, H5T_IEEE_F64LE,
                               H5T_NATIVE_DOUBLE, L->given, st));
  const rb_model *ref = &S->models[0];
  for (int64_t i = 0; i < I; i++) {
    int64_t key = ref->items[L->kept[i]].key;
    const char *k = S->keys.keys[key];
    const char *sep = memchr(k, '\x1f', S->keys.lens[key]);
    L->names[i] = sep ? sep + 1 : k;
  }
  return rd_h5_write_strings(h, ds_path(path, sizeof path, group, "item_id"), I, L->names, st);
}

/* The datasets in a fixed order (the file's bytes depend on it): model and subset names, the items or
 * the accuracies, the source attribute. */
static int write_bench(rb_state *S, rb_layout *L, hid_t h, const char *group) {
  rd_status *st = S->st;
  char path[1400];
  int M = S->n_models;
  for (int m = 0; m < M; m++) L->names[m] = S->models[m].name;
  RD_TRY(rd_h5_write_strings(h, ds_path(path, sizeof path, group, "model_names"), M, L->names, st));
  if (S->mode == RB_MODE_ITEMS) {
    for (int64_t s = 0; s < S->subsets.n; s++)
      if (L->sub_new[s] >= 0) L->names[L->sub_new[s]] = S->subsets.keys[s];
  } else {
    for (int64_t s = 0; s < L->Sn; s++) L->names[s] = S->subsets.keys[s];
  }
  RD_TRY(rd_h5_write_strings(h, ds_path(path, sizeof path, group, "subset_names"), L->Sn, L->names, st));
  if (S->mode == RB_MODE_ITEMS) {
    RD_TRY(write_items(h, group, S, L));
  } else {
    int64_t d2[2] = {M, L->Sn};
    RD_TRY(rd_h5_write_chunked(h, ds_path(path, sizeof path, group, "subset_accuracy"), 2, d2, H5T_IEEE_F64LE,
                               H5T_NATIVE_DOUBLE, L->acc, st));
  }
  return rd_h5_write_attr_string(h, group, "source", S->v2 ? "rewardbench2" : "rewardbench", st);
}

/* What was kept, and what was dropped and by which option: nothing is left out silently. */
static void log_dropped(const rb_state *S, const rb_layout *L, FILE *log) {
  int M = S->n_models;
  if (S->mode != RB_MODE_ITEMS) {
    fprintf(log, "rmdiag import %s: kept every accuracy of every file; dropped none\n", S->cmd);
    return;
  }
  int64_t K = S->keys.n, dropped = K - L->I;
  if (dropped == 0) {
    fprintf(log, "rmdiag import %s: kept all %lld items of every model; dropped none", S->cmd, (long long)L->I);
  } else {
    fprintf(log, "rmdiag import %s: kept %lld items every model has; dropped %lld of %lld items (subset, id) that "
            "some model lacks (--drop-incomplete):", S->cmd, (long long)L->I, (long long)dropped, (long long)K);
    for (int m = 0, first = 1; m < M; m++)
      if (K > S->models[m].n_items) {
        fprintf(log, "%s model \"%s\" lacks %lld", first ? "" : ",", S->models[m].name,
                (long long)(K - S->models[m].n_items));
        first = 0;
      }
  }
  if (S->results_ignored)
    fprintf(log, "; \"results\" of %lld item%s not used (%s)", (long long)S->results_ignored,
            S->results_ignored == 1 ? "" : "s", S->v2 ? "credits are recomputed from the scores" : "the scores decide");
  fputc('\n', log);
}

static void log_summary(const rb_state *S, const rb_layout *L, const char *out_path, FILE *log) {
  int M = S->n_models;
  if (S->mode == RB_MODE_ITEMS)
    fprintf(log, "rmdiag import %s: %d file%s -> %d model%s, %lld subsets, %lld items, %lld completions -> %s\n",
            S->cmd, S->n_files, S->n_files == 1 ? "" : "s", M, M == 1 ? "" : "s", (long long)L->Sn, (long long)L->I,
            (long long)L->C, out_path);
  else
    fprintf(log, "rmdiag import %s: %d file%s -> %d model%s, accuracies of %lld subsets -> %s\n", S->cmd, S->n_files,
            S->n_files == 1 ? "" : "s", M, M == 1 ? "" : "s", (long long)L->Sn, out_path);
  log_dropped(S, L, log);
}

int rb_merge_and_write(rb_state *S, const char *out_path, const char *group, FILE *log) {
  rb_layout L;
  memset(&L, 0, sizeof L);
  int rc = RD_OK;
  if (S->mode == RB_MODE_ITEMS) {
    /* align every model to the first one's items by (subset, id) */
    rc = index_items(S);
    for (int m = 1; m < S->n_models && rc == RD_OK; m++) rc = check_aligned(S, &S->models[0], &S->models[m]);
    if (rc == RD_OK) rc = common_items(S, &L.kept, &L.I);
    if (rc == RD_OK) rc = layout_items(S, &L);
  } else {
    rc = layout_accuracies(S, &L);
  }
  if (rc == RD_OK) {
    rd_h5_atomic out;
    rc = rd_h5_atomic_create(out_path, &out, S->st);
    if (rc == RD_OK) rc = write_bench(S, &L, out.h, group);
    rc = rd_h5_atomic_finish(&out, S->st);
  }
  if (rc == RD_OK && log) log_summary(S, &L, out_path, log);
  layout_free(&L);
  return rc;
}
