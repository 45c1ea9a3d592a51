/* `rmdiag import numleak`: NumLeak JSONL panels plus truth files into the leakage input layout (see
 * docs/reference.md, 'numleak'). The steps, each in its own file: the options (numleak_args.c), every
 * panel (numleak_panel.c), the truth (numleak_truth.c), the output (numleak_write.c); here the series
 * bookkeeping between them and the command. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "numleak_internal.h"
#include "rmdiag/common/h5out.h"
#include "rmdiag/import/formats.h"

/* Series named only by truth mappings (e.g. the residualisation's signal series) come after the panels';
 * a series has one mapping and is not fictional. */
static int add_truth_series(nl_state *S) {
  for (int t = 0; t < S->o.n_truths; t++) {
    const truth_map *tm = &S->o.truths[t];
    int64_t s = nl_name_id(&S->series, tm->series);
    if (s < 0 || nl_series_slot(S, s) != 0) return rd_fail(S->st, RD_EFAIL, "out of memory");
    if (S->fictional[s])
      return rd_fail(S->st, RD_EINPUT, "rmdiag import numleak: --truth maps series \"%s\", which a --fictional panel "
                     "declares fictional", tm->series);
    for (int u = 0; u < t; u++)
      if (strcmp(S->o.truths[u].series, tm->series) == 0)
        return rd_fail(S->st, RD_EINPUT, "rmdiag import numleak: series \"%s\" has two truth mappings (%s and %s)",
                       tm->series, S->o.truths[u].file, tm->file);
  }
  return nl_series_slot(S, nl_name_count(&S->series)) == 0 ? RD_OK : rd_fail(S->st, RD_EFAIL, "out of memory");
}

/* Every real series of a panel needs a truth source (a file, inline truth) or an explicit --no-truth;
 * the message names the first row that uses one without. */
static int check_truth_sources(nl_state *S) {
  for (int64_t s = 0; s < nl_name_count(&S->series); s++) {
    if (S->fictional[s] || S->has_inline[s]) continue;
    const char *name = nl_name_str(&S->series, s);
    int ok = 0;
    for (int t = 0; t < S->o.n_truths && !ok; t++) ok = strcmp(S->o.truths[t].series, name) == 0;
    for (int t = 0; t < S->o.n_no_truth && !ok; t++) ok = strcmp(S->o.no_truth[t], name) == 0;
    if (ok) continue;
    const rows *rs[2] = {&S->cells, &S->rank};
    for (int k = 0; k < 2; k++)
      for (int64_t i = 0; i < rs[k]->n; i++)
        if (rs[k]->series[i] == s)
          return rd_fail(S->st, RD_EINPUT, "%s: line %lld: series \"%s\" has no truth mapping; give --truth "
                         "%s=FILE[,COLUMN[,TRANSFORM]] (or --truth-numleak DIR for the Fama-French factors), an inline "
                         "--field truth=PATH, or declare it --no-truth %s or --fictional",
                         S->o.panels[rs[k]->source[i]].file, (long long)rs[k]->line[i], name, name, name);
  }
  return RD_OK;
}

static int write_output(nl_state *S, const truth_table *T, const char *out_path) {
  rd_h5_atomic out;
  if (rd_h5_atomic_create(out_path, &out, S->st) == RD_OK) nl_write_all(S, out.h, T, S->st);
  return rd_h5_atomic_finish(&out, S->st);
}

static void log_summary(const nl_state *S, const truth_table *T, const char *out_path) {
  int64_t ex = 0, pa = 0;
  for (int64_t i = 0; i < S->cells.n; i++) ex += S->cells.status[i] == 2, pa += S->cells.status[i] == 0;
  fprintf(S->log, "rmdiag import numleak: %s: %lld panel rows (%lld parsed, %lld excluded), %lld models, %lld series, "
          "%lld truth rows, %lld ranking, %lld signal, %lld defense rows\n", out_path, (long long)S->cells.n,
          (long long)pa, (long long)ex, (long long)nl_name_count(&S->models), (long long)nl_name_count(&S->series),
          (long long)T->n, (long long)S->rank.n, (long long)S->signal.n, (long long)S->defense.n);
}

static void rows_free(rows *r) {
  for (int64_t i = 0; i < r->n; i++) free(r->reply[i]);
  void *ptrs[] = {r->model, r->series, r->variant, r->seed, r->month, r->month_b, r->defense, r->attack, r->source,
                  r->line, r->value, r->entropy, r->recall, r->status, r->pick, r->reply};
  for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++) free(ptrs[i]);
  memset(r, 0, sizeof *r);
}

static void state_free(nl_state *S) {
  rows_free(&S->cells), rows_free(&S->rank), rows_free(&S->signal), rows_free(&S->defense);
  names *all[5] = {&S->models, &S->series, &S->variants, &S->defenses, &S->attacks};
  for (int k = 0; k < 5; k++)
    if (all[k]->init) rd_idmap_free(&all[k]->map);
  free(S->fictional), free(S->real_seen), free(S->has_inline), free(S->inl);
  nl_opts_free(&S->o);
}

int rd_import_numleak(int argc, char **argv, const char *out_path, FILE *log, rd_status *st) {
  nl_state S;
  memset(&S, 0, sizeof S);
  S.log = log;
  S.st = st;
  truth_table T;
  memset(&T, 0, sizeof T);
  int rc = nl_parse_args(argc, argv, &S.o, st);
  for (int p = 0; p < S.o.n_panels && rc == RD_OK; p++) rc = nl_import_panel(&S, p);
  if (rc == RD_OK) rc = add_truth_series(&S);
  if (rc == RD_OK) rc = check_truth_sources(&S);
  if (rc == RD_OK) rc = nl_build_truth(&S, &T);
  if (rc == RD_OK) rc = write_output(&S, &T, out_path);
  if (rc == RD_OK && log) log_summary(&S, &T, out_path);
  nl_truth_free(&T);
  state_free(&S);
  return rc;
}
