/* `rmdiag import cm-csv`: a long CSV (one row per pair and run) into the cm input layout (see
 * docs/reference.md, 'cm-csv'). Every (pair, run) must appear exactly once; a pair's user and
 * covariates must agree across its rows; within a run all pairs of a user share in_train. Covariate
 * columns are numbers, or category names (a column with any cell that is not a number). Steps:
 * options, the header, each row, the (pair, run) check, the user split, the dense tables, the output. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "rmdiag/common/h5out.h"
#include "rmdiag/common/idmap.h"
#include "rmdiag/common/jsonutil.h"
#include "rmdiag/common/vec.h"
#include "rmdiag/import/args.h"
#include "rmdiag/import/csvread.h"
#include "rmdiag/import/formats.h"

/* ---- options ------------------------------------------------------------------------------------- */

static const rd_arg cm_csv_table[] = {
    {"INPUT.csv", NULL, RD_ARG_ONCE, RD_ARG_GLOBAL,
     "header run,pair,user,reward_chosen,reward_rejected,in_train, then any\n"
     "covariate columns (one value per pair): numbers, or category names (a column\n"
     "with any cell that is not a number is categorical); empty, nan, NA, null = missing"},
    {"--group", "G", RD_ARG_ONCE, RD_ARG_GLOBAL, "output group (default /cm)"},
    RD_ARG_END,
};

const rd_args_spec rd_import_cm_csv_args = {
    .command = "rmdiag import cm-csv",
    .synopsis = "INPUT.csv [--group /cm] -o OUT.h5",
    .args = cm_csv_table,
    .notes = "Every (pair, run) must appear exactly once. Pairs and runs are numbered in ascending\n"
             "numeric order of their ids when all ids are integers, else in order of first appearance;\n"
             "the ids are kept in /cm/pair_id and /cm/run_id. Users may be integers or strings. Within a\n"
             "run all pairs of a user must share in_train (a user is trained on or held out).\n"
             "Numeric covariates are written as float64, categorical ones as strings (\"\" = missing);\n"
             "strata take either with \"categorical\": true.\n",
    .operand = "INPUT.csv",
    .max_operands = 1,
};

static int parse_options(int argc, char **argv, const char **input, const char **group, rd_status *st) {
  rd_arg_use *uses = NULL;
  int n = 0;
  RD_TRY(rd_args_parse(&rd_import_cm_csv_args, argc, argv, &uses, &n, st));
  *input = NULL;
  *group = "/cm";
  for (int k = 0; k < n; k++) {
    if (uses[k].row < 0) *input = uses[k].values[0];
    else *group = uses[k].values[0];
  }
  free(uses);
  if (!*input) return rd_fail(st, RD_EINPUT, "rmdiag import cm-csv: missing INPUT.csv");
  if ((*group)[0] != '/' || strlen(*group) > 255)
    return rd_fail(st, RD_EINPUT, "rmdiag import cm-csv: --group must be an HDF5 path starting with '/' (at most 255 "
                   "bytes)");
  return RD_OK;
}

/* ---- reading ----------------------------------------------------------------------------------------- */

enum { COL_RUN, COL_PAIR, COL_USER, COL_RC, COL_RR, COL_FLAG, N_REQ };
static const char *const req_names[N_REQ] = {"run", "pair", "user", "reward_chosen", "reward_rejected", "in_train"};

typedef struct csv_state {
  const char *file;
  int ncols;
  int col_of[N_REQ];  /* header position of each required column */
  int *cov_col;       /* header position -> covariate index or -1 */
  int ncov;
  char **header;
  /* per covariate: the distinct texts of its cells (categories), and the line of the first cell that is
   * not a number (0: every cell is a number or missing, the column is numeric) */
  rd_idmap *cov_text;
  int64_t *cov_text_line;
  /* per covariate: the first row whose cell equals its pair's first cell as a number but not as text
   * (line, pair, the two texts): an error once the column turns out categorical */
  int64_t (*cov_numeq)[4];
  /* accumulated rows */
  rd_idmap runs, pairs, users;
  int64_t n;
  size_t cap;
  int32_t *r_run, *r_pair;
  double *r_rc, *r_rr;
  uint8_t *r_flag;
  int64_t *r_line;
  /* per pair (indexed by pair id in first-appearance order) */
  size_t pcap;
  int64_t *pair_user, *pair_line;
  double *pair_cov;  /* [pcap][ncov] as numbers (NaN: missing or not a number) */
  int32_t *pair_cat; /* [pcap][ncov] as texts: ids in cov_text, -1 missing */
} csv_state;

static int parse_double(const char *s, double *out) {
  if (!*s) return 0;
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || *end != '\0') return 0;
  *out = v;
  return 1;
}

static int is_int_text(const char *s, int64_t *out) {
  if (!*s) return 0;
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (end == s || *end != '\0' || errno == ERANGE) return 0;
  *out = v;
  return 1;
}

static int grow_rows(csv_state *S) {
  void *arrays[] = {&S->r_run, &S->r_pair, &S->r_rc, &S->r_rr, &S->r_flag, &S->r_line};
  const size_t elems[] = {sizeof *S->r_run, sizeof *S->r_pair, sizeof *S->r_rc, sizeof *S->r_rr, sizeof *S->r_flag,
                          sizeof *S->r_line};
  return rd_vec_reserve_n(arrays, elems, 6, &S->cap, (size_t)S->n + 1);
}

/* Room for pair `p`: its user, the line that first gave it, and its covariates. */
static int grow_pairs(csv_state *S, int64_t p) {
  size_t cap = S->pcap;
  void *arrays[] = {&S->pair_user, &S->pair_line, &S->pair_cov, &S->pair_cat};
  const size_t elems[] = {sizeof *S->pair_user, sizeof *S->pair_line,
                          sizeof *S->pair_cov * (size_t)(S->ncov ? S->ncov : 1),
                          sizeof *S->pair_cat * (size_t)(S->ncov ? S->ncov : 1)};
  if (rd_vec_reserve_n(arrays, elems, 4, &cap, (size_t)p + 1) != 0) return -1;
  S->pcap = cap;
  return 0;
}

/* A covariate name becomes an HDF5 dataset name: any characters but '/'. */
static int bad_name(const char *n) {
  return !n[0] || strchr(n, '/') || strcmp(n, ".") == 0 || strcmp(n, "..") == 0 || strlen(n) > 200;
}

static int on_header(csv_state *S, const rd_csv_record *rec, rd_status *st) {
  S->ncols = rec->n;
  S->header = calloc((size_t)(rec->n ? rec->n : 1), sizeof *S->header);
  S->cov_col = malloc(sizeof(int) * (size_t)(rec->n ? rec->n : 1));
  if (!S->header || !S->cov_col) return rd_fail(st, RD_EFAIL, "out of memory reading %s", S->file);
  for (int c = 0; c < rec->n; c++)
    if (!(S->header[c] = strdup(rec->field[c]))) return rd_fail(st, RD_EFAIL, "out of memory reading %s", S->file);
  for (int k = 0; k < N_REQ; k++) S->col_of[k] = -1;
  int64_t first = -1, dup = rd_first_duplicate((const char *const *)S->header, S->ncols, &first);
  if (dup >= 0)
    return rd_fail(st, RD_EINPUT, "%s: line %lld (header): column \"%s\" appears twice", S->file, (long long)rec->line,
                   S->header[dup]);
  for (int c = 0; c < S->ncols; c++) {
    S->cov_col[c] = -1;
    int req = -1;
    for (int k = 0; k < N_REQ; k++)
      if (strcmp(S->header[c], req_names[k]) == 0) req = k;
    if (req >= 0) {
      S->col_of[req] = c;
      continue;
    }
    if (bad_name(S->header[c]))
      return rd_fail(st, RD_EINPUT, "%s: line %lld (header): column %d: \"%.60s\" cannot name a covariate (expected a "
                     "non-empty name of at most 200 bytes without '/', not \".\" or \"..\")", S->file,
                     (long long)rec->line, c + 1, S->header[c]);
    S->cov_col[c] = S->ncov++;
  }
  S->cov_text = calloc((size_t)(S->ncov ? S->ncov : 1), sizeof *S->cov_text);
  S->cov_text_line = calloc((size_t)(S->ncov ? S->ncov : 1), sizeof *S->cov_text_line);
  S->cov_numeq = calloc((size_t)(S->ncov ? S->ncov : 1), sizeof *S->cov_numeq);
  if (!S->cov_text || !S->cov_text_line || !S->cov_numeq)
    return rd_fail(st, RD_EFAIL, "out of memory reading %s", S->file);
  for (int k = 0; k < S->ncov; k++)
    if (rd_idmap_init(&S->cov_text[k], 64) != 0) return rd_fail(st, RD_EFAIL, "out of memory reading %s", S->file);
  for (int k = 0; k < N_REQ; k++)
    if (S->col_of[k] < 0)
      return rd_fail(st, RD_EINPUT, "%s: line %lld (header): missing column \"%s\" (expected run,pair,user,"
                     "reward_chosen,reward_rejected,in_train plus optional covariates)", S->file, (long long)rec->line,
                     req_names[k]);
  return RD_OK;
}

/* The row's rewards and flag. */
static int row_values(const csv_state *S, char **v, int64_t line, double *rc, double *rr, uint8_t *flag,
                      rd_status *st) {
  const char *f = S->file;
  if (!parse_double(v[S->col_of[COL_RC]], rc) || !isfinite(*rc))
    return rd_fail(st, RD_EINPUT, "%s: line %lld: reward_chosen = \"%s\", expected a finite number", f,
                   (long long)line, v[S->col_of[COL_RC]]);
  if (!parse_double(v[S->col_of[COL_RR]], rr) || !isfinite(*rr))
    return rd_fail(st, RD_EINPUT, "%s: line %lld: reward_rejected = \"%s\", expected a finite number", f,
                   (long long)line, v[S->col_of[COL_RR]]);
  const char *fl = v[S->col_of[COL_FLAG]];
  if (strcmp(fl, "1") == 0 || strcasecmp(fl, "true") == 0) *flag = 1;
  else if (strcmp(fl, "0") == 0 || strcasecmp(fl, "false") == 0) *flag = 0;
  else return rd_fail(st, RD_EINPUT, "%s: line %lld: in_train = \"%s\", expected 0 or 1", f, (long long)line, fl);
  return RD_OK;
}

static int is_missing(const char *t) {
  return !t[0] || strcasecmp(t, "nan") == 0 || strcasecmp(t, "na") == 0 || strcasecmp(t, "null") == 0;
}

/* One covariate cell: its number (NaN when missing or not a number) and its text's category id (-1 when
 * missing). The first cell that is not a number makes the column categorical. */
static int cov_cell(csv_state *S, int k, int c, const char *t, int64_t line, double *x, int32_t *cat, rd_status *st) {
  *x = NAN;
  *cat = -1;
  if (is_missing(t)) return RD_OK;
  if (!parse_double(t, x)) {
    *x = NAN;
    if (!S->cov_text_line[k]) S->cov_text_line[k] = line;
  }
  if (rd_utf8_invalid_at(t, strlen(t)) >= 0)
    return rd_fail(st, RD_EINPUT, "%s: line %lld: covariate %s: the value is not valid UTF-8 text", S->file,
                   (long long)line, S->header[c]);
  int64_t id = rd_idmap_get(&S->cov_text[k], t, strlen(t), NULL);
  if (id < 0 || id > INT32_MAX) return rd_fail(st, RD_EFAIL, "out of memory reading %s", S->file);
  *cat = (int32_t)id;
  return RD_OK;
}

/* A pair's user and covariates: set by its first row, the same on every later one (covariates compared
 * as numbers when both cells are numbers, else as text; the first row's text names the category). */
static int pair_values(csv_state *S, char **v, int64_t line, int64_t p, int64_t u, int is_new, rd_status *st) {
  const char *f = S->file, *pair = v[S->col_of[COL_PAIR]], *user = v[S->col_of[COL_USER]];
  double *cov = S->pair_cov + p * S->ncov;
  int32_t *cat = S->pair_cat + p * S->ncov;
  if (is_new) {
    S->pair_user[p] = u;
    S->pair_line[p] = line;
  } else if (S->pair_user[p] != u) {
    return rd_fail(st, RD_EINPUT, "%s: line %lld: pair \"%s\" has user \"%s\" but line %lld gave it user \"%s\"; a "
                   "pair belongs to one user", f, (long long)line, pair, user, (long long)S->pair_line[p],
                   S->users.keys[S->pair_user[p]]);
  }
  for (int c = 0; c < S->ncols; c++) {
    int k = S->cov_col[c];
    if (k < 0) continue;
    double x;
    int32_t id;
    RD_TRY(cov_cell(S, k, c, v[c], line, &x, &id, st));
    if (is_new) {
      cov[k] = x;
      cat[k] = id;
    } else if (cat[k] != id && !isnan(cov[k]) && cov[k] == x) {
      if (!S->cov_numeq[k][0]) memcpy(S->cov_numeq[k], (int64_t[4]){line, p, id, cat[k]}, sizeof S->cov_numeq[k]);
    } else if (cat[k] != id) {
      return rd_fail(st, RD_EINPUT, "%s: line %lld: covariate %s of pair \"%s\" is \"%s\" here but \"%s\" on line "
                     "%lld; a covariate has one value per pair", f, (long long)line, S->header[c], pair, v[c],
                     cat[k] < 0 ? "" : S->cov_text[k].keys[cat[k]], (long long)S->pair_line[p]);
    }
  }
  return RD_OK;
}

static int on_row(csv_state *S, char **v, int64_t line, rd_status *st) {
  const char *f = S->file;
  if (grow_rows(S) != 0) return rd_fail(st, RD_EFAIL, "out of memory reading %s", f);
  double rc = 0.0, rr = 0.0;
  uint8_t flag = 0;
  RD_TRY(row_values(S, v, line, &rc, &rr, &flag, st));
  const char *run = v[S->col_of[COL_RUN]], *pair = v[S->col_of[COL_PAIR]], *user = v[S->col_of[COL_USER]];
  if (!run[0] || !pair[0] || !user[0])
    return rd_fail(st, RD_EINPUT, "%s: line %lld: run, pair and user must not be empty", f, (long long)line);
  int is_new = 0;
  int64_t r = rd_idmap_get(&S->runs, run, strlen(run), NULL);
  int64_t p = rd_idmap_get(&S->pairs, pair, strlen(pair), &is_new);
  int64_t u = rd_idmap_get(&S->users, user, strlen(user), NULL);
  if (r < 0 || p < 0 || u < 0 || grow_pairs(S, p) != 0) return rd_fail(st, RD_EFAIL, "out of memory reading %s", f);
  if (r > INT32_MAX || p > INT32_MAX) return rd_fail(st, RD_EINPUT, "%s: more than 2^31 runs or pairs", f);
  RD_TRY(pair_values(S, v, line, p, u, is_new, st));
  int64_t i = S->n++;
  S->r_run[i] = (int32_t)r;
  S->r_pair[i] = (int32_t)p;
  S->r_rc[i] = rc;
  S->r_rr[i] = rr;
  S->r_flag[i] = flag;
  S->r_line[i] = line;
  return RD_OK;
}

static int on_record(const rd_csv_record *rec, void *ctx, rd_status *st) {
  csv_state *S = ctx;
  if (rec->index == 0) return on_header(S, rec, st);
  if (rec->n != S->ncols)
    return rd_fail(st, RD_EINPUT, "%s: line %lld has %d fields, expected %d (as in the header)", S->file,
                   (long long)rec->line, rec->n, S->ncols);
  return on_row(S, rec->field, rec->line, st);
}

static void state_free(csv_state *S) {
  for (int c = 0; S->header && c < S->ncols; c++) free(S->header[c]);
  free(S->header);
  free(S->cov_col);
  for (int k = 0; S->cov_text && k < S->ncov; k++) rd_idmap_free(&S->cov_text[k]);
  free(S->cov_text);
  free(S->cov_numeq);
  void *arrays[] = {S->r_run, S->r_pair, S->r_rc, S->r_rr, S->r_flag, S->r_line, S->pair_user, S->pair_line,
                    S->pair_cov, S->pair_cat, S->cov_text_line};
  for (size_t k = 0; k < sizeof arrays / sizeof arrays[0]; k++) free(arrays[k]);
  rd_idmap_free(&S->runs);
  rd_idmap_free(&S->pairs);
  rd_idmap_free(&S->users);
}

/* ---- the (pair, run) table ------------------------------------------------------------------------- */

/* Order of ids: ascending numeric when all are integers, else first appearance. perm[new] = old. */
static int64_t *order_ids(const rd_idmap *m) {
  int64_t n = m->n;
  int64_t *perm = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
  int64_t *val = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
  if (!perm || !val) {
    free(perm);
    free(val);
    return NULL;
  }
  int numeric = 1;
  for (int64_t i = 0; i < n; i++) {
    perm[i] = i;
    if (!is_int_text(m->keys[i], &val[i])) numeric = 0;
  }
  if (numeric) {
    /* a stable bottom-up merge sort by value */
    int64_t *tmp = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    for (int64_t width = 1; tmp && width < n; width *= 2) {
      for (int64_t lo = 0; lo < n; lo += 2 * width) {
        int64_t mid = lo + width < n ? lo + width : n, hi = lo + 2 * width < n ? lo + 2 * width : n;
        int64_t a = lo, b = mid, k = lo;
        while (a < mid && b < hi) tmp[k++] = val[perm[a]] <= val[perm[b]] ? perm[a++] : perm[b++];
        while (a < mid) tmp[k++] = perm[a++];
        while (b < hi) tmp[k++] = perm[b++];
      }
      memcpy(perm, tmp, sizeof(int64_t) * (size_t)n);
    }
    free(tmp);
  }
  free(val);
  return perm;
}

typedef struct cell_row {
  int64_t cell, line, row;  /* pair * R + run in the output order; the row's line; its index */
} cell_row;

static int cmp_cell_row(const void *a, const void *b) {
  const cell_row *x = a, *y = b;
  if (x->cell != y->cell) return x->cell < y->cell ? -1 : 1;
  return (x->line > y->line) - (x->line < y->line);
}

/* The table in output order: pairs and runs numbered (pperm[new] = old), the rows sorted by cell. */
typedef struct cm_table {
  int64_t P, R;
  int64_t *pperm, *rperm;
  cell_row *cr;
  double *rc, *rr;  /* [P][R] */
  uint8_t *flag;
} cm_table;

static int table_order(const csv_state *S, cm_table *T, rd_status *st) {
  T->P = S->pairs.n;
  T->R = S->runs.n;
  T->pperm = order_ids(&S->pairs);
  T->rperm = order_ids(&S->runs);
  int64_t *pnew = malloc(sizeof(int64_t) * (size_t)(T->P ? T->P : 1));
  int64_t *rnew = malloc(sizeof(int64_t) * (size_t)(T->R ? T->R : 1));
  T->cr = malloc(sizeof(cell_row) * (size_t)(S->n ? S->n : 1));
  int rc = RD_OK;
  if (!T->pperm || !T->rperm || !pnew || !rnew || !T->cr) {
    rc = rd_fail(st, RD_EFAIL, "out of memory importing %s", S->file);
  } else {
    for (int64_t i = 0; i < T->P; i++) pnew[T->pperm[i]] = i;
    for (int64_t i = 0; i < T->R; i++) rnew[T->rperm[i]] = i;
    for (int64_t i = 0; i < S->n; i++)
      T->cr[i] = (cell_row){pnew[S->r_pair[i]] * T->R + rnew[S->r_run[i]], S->r_line[i], i};
    qsort(T->cr, (size_t)S->n, sizeof *T->cr, cmp_cell_row);
  }
  free(pnew);
  free(rnew);
  return rc;
}

/* Every (pair, run) exactly once, checked on the rows sorted by cell (O(n log n) in the rows, so a
 * sparse file is refused before a dense P x R table is allocated): the first repeat in file order,
 * else the first missing cell in (pair, run) order. */
static int table_check(const csv_state *S, const cm_table *T, rd_status *st) {
  const cell_row *cr = T->cr;
  int64_t dup = -1;
  for (int64_t i = 1; i < S->n; i++)
    if (cr[i].cell == cr[i - 1].cell && (i < 2 || cr[i - 1].cell != cr[i - 2].cell) &&
        (dup < 0 || cr[i].line < cr[dup].line))
      dup = i;
  if (dup >= 0) {
    int64_t i = cr[dup].row;
    return rd_fail(st, RD_EINPUT, "%s: line %lld repeats pair \"%s\" run \"%s\" of line %lld; each (pair, run) must "
                   "appear once", S->file, (long long)cr[dup].line, S->pairs.keys[S->r_pair[i]],
                   S->runs.keys[S->r_run[i]], (long long)cr[dup - 1].line);
  }
  if (S->n != T->P * T->R) {
    int64_t e = 0;
    while (e < S->n && cr[e].cell == e) e++;
    return rd_fail(st, RD_EINPUT, "%s: pair \"%s\" has no row for run \"%s\"; every pair needs one row per run "
                   "(%lld runs)", S->file, S->pairs.keys[T->pperm[e / T->R]], S->runs.keys[T->rperm[e % T->R]],
                   (long long)T->R);
  }
  return RD_OK;
}

/* In a categorical column a pair's cells are one text: "1" and "1.0" are one number but two names. */
static int check_category_texts(const csv_state *S, rd_status *st) {
  for (int c = 0; c < S->ncols; c++) {
    int k = S->cov_col[c];
    if (k < 0 || !S->cov_text_line[k] || !S->cov_numeq[k][0]) continue;
    const int64_t *e = S->cov_numeq[k];
    return rd_fail(st, RD_EINPUT, "%s: line %lld: covariate %s of pair \"%s\" is \"%s\" here but \"%s\" on line %lld; "
                   "%s holds category names (line %lld has a cell that is not a number), so a pair's cells must be the "
                   "same text", S->file, (long long)e[0], S->header[c], S->pairs.keys[e[1]], S->cov_text[k].keys[e[2]],
                   S->cov_text[k].keys[e[3]], (long long)S->pair_line[e[1]], S->header[c],
                   (long long)S->cov_text_line[k]);
  }
  return RD_OK;
}

/* Within every run all pairs of a user share in_train (the run trained on the user or held it out).
 * Rows in file order: the first row of a (user, run) sets the flag, and the first row that disagrees
 * is the error, so the message names the lowest such line. Runs after table_check: every pair has
 * every run, so U x R <= P x R = the rows. */
static int user_split_check(const csv_state *S, rd_status *st) {
  int64_t U = S->users.n, R = S->runs.n;
  int64_t cells = U * R;
  int64_t *first = malloc(sizeof(int64_t) * (size_t)(cells > 0 ? cells : 1));
  if (!first) return rd_fail(st, RD_EFAIL, "out of memory importing %s", S->file);
  for (int64_t k = 0; k < cells; k++) first[k] = -1;
  int rc = RD_OK;
  for (int64_t i = 0; i < S->n && rc == RD_OK; i++) {
    int64_t u = S->pair_user[S->r_pair[i]], k = u * R + S->r_run[i], j = first[k];
    if (j < 0) {
      first[k] = i;
    } else if (S->r_flag[j] != S->r_flag[i]) {
      rc = rd_fail(st, RD_EINPUT, "%s: line %lld: user \"%s\" is split inconsistently in run \"%s\": pair \"%s\" has "
                   "in_train = %d here but pair \"%s\" has in_train = %d on line %lld; within a run all pairs of a "
                   "user must share in_train (the run trained on the user or held it out)", S->file,
                   (long long)S->r_line[i], S->users.keys[u], S->runs.keys[S->r_run[i]], S->pairs.keys[S->r_pair[i]],
                   S->r_flag[i], S->pairs.keys[S->r_pair[j]], S->r_flag[j], (long long)S->r_line[j]);
    }
  }
  free(first);
  return rc;
}

static int table_fill(const csv_state *S, cm_table *T, rd_status *st) {
  size_t cells = (size_t)(T->P * T->R);
  T->rc = malloc(sizeof(double) * cells);
  T->rr = malloc(sizeof(double) * cells);
  T->flag = malloc(cells);
  if (!T->rc || !T->rr || !T->flag) return rd_fail(st, RD_EFAIL, "out of memory importing %s", S->file);
  for (int64_t k = 0; k < S->n; k++) {
    int64_t e = T->cr[k].cell, i = T->cr[k].row;
    T->rc[e] = S->r_rc[i];
    T->rr[e] = S->r_rr[i];
    T->flag[e] = S->r_flag[i];
  }
  return RD_OK;
}

static void table_free(cm_table *T) {
  free(T->pperm);
  free(T->rperm);
  free(T->cr);
  free(T->rc);
  free(T->rr);
  free(T->flag);
}

/* ---- output ---------------------------------------------------------------------------------------------- */

static const char *ds_path(char *buf, size_t n, const char *group, const char *name) {
  snprintf(buf, n, "%.500s/%.600s", strcmp(group, "/") ? group : "", name);
  return buf;
}

/* Users: integers only when every id is an integer written the canonical way ("7", not "007" or "+7"),
 * so that distinct ids stay distinct; else strings. One per pair, in pair order. */
static int write_users(hid_t h, const char *group, const csv_state *S, const cm_table *T, rd_status *st) {
  char path[1400];
  int users_int = 1;
  int64_t v, d1[1] = {T->P};
  char canon[32];
  for (int64_t k = 0; k < S->users.n && users_int; k++) {
    if (!is_int_text(S->users.keys[k], &v)) users_int = 0;
    else if (snprintf(canon, sizeof canon, "%lld", (long long)v), strcmp(canon, S->users.keys[k]) != 0) users_int = 0;
  }
  int rc = RD_OK;
  if (users_int) {
    int64_t *uid = malloc(sizeof(int64_t) * (size_t)T->P);
    if (!uid) return rd_fail(st, RD_EFAIL, "out of memory");
    for (int64_t i = 0; i < T->P; i++) is_int_text(S->users.keys[S->pair_user[T->pperm[i]]], &uid[i]);
    rc = rd_h5_write_chunked(h, ds_path(path, sizeof path, group, "user"), 1, d1, H5T_STD_I64LE, H5T_NATIVE_INT64, uid,
                             st);
    free(uid);
  } else {
    const char **us = malloc(sizeof(char *) * (size_t)T->P);
    if (!us) return rd_fail(st, RD_EFAIL, "out of memory");
    for (int64_t i = 0; i < T->P; i++) us[i] = S->users.keys[S->pair_user[T->pperm[i]]];
    rc = rd_h5_write_strings(h, ds_path(path, sizeof path, group, "user"), T->P, us, st);
    free(us);
  }
  return rc;
}

/* pair_id, run_id, then covariates/NAME in header order. */
static int write_ids_and_covariates(hid_t h, const char *group, const csv_state *S, const cm_table *T,
                                    rd_status *st) {
  char path[1400];
  int64_t P = T->P, R = T->R, d1[1] = {P};
  const char **ids = malloc(sizeof(char *) * (size_t)(P > R ? P : R));
  if (!ids) return rd_fail(st, RD_EFAIL, "out of memory");
  for (int64_t i = 0; i < P; i++) ids[i] = S->pairs.keys[T->pperm[i]];
  int rc = rd_h5_write_strings(h, ds_path(path, sizeof path, group, "pair_id"), P, ids, st);
  for (int64_t i = 0; i < R; i++) ids[i] = S->runs.keys[T->rperm[i]];
  if (rc == RD_OK) rc = rd_h5_write_strings(h, ds_path(path, sizeof path, group, "run_id"), R, ids, st);
  free(ids);
  double *col = malloc(sizeof(double) * (size_t)(P ? P : 1));
  const char **text = malloc(sizeof(char *) * (size_t)(P ? P : 1));
  if (!col || !text) rc = rd_fail(st, RD_EFAIL, "out of memory");
  for (int c = 0; rc == RD_OK && c < S->ncols; c++) {
    int k = S->cov_col[c];
    if (k < 0) continue;
    char name[600];
    snprintf(name, sizeof name, "covariates/%.500s", S->header[c]);
    if (S->cov_text_line[k]) {  /* categorical: the names, "" where missing */
      for (int64_t i = 0; i < P; i++) {
        int32_t id = S->pair_cat[T->pperm[i] * S->ncov + k];
        text[i] = id < 0 ? "" : S->cov_text[k].keys[id];
      }
      rc = rd_h5_write_strings(h, ds_path(path, sizeof path, group, name), P, text, st);
    } else {
      for (int64_t i = 0; i < P; i++) col[i] = S->pair_cov[T->pperm[i] * S->ncov + k];
      rc = rd_h5_write_chunked(h, ds_path(path, sizeof path, group, name), 1, d1, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE,
                               col, st);
    }
  }
  free(col);
  free(text);
  return rc;
}

/* The datasets, in a fixed order (the file's bytes depend on it): rewards as float64, chunked and
 * compressed like everything importers write. */
static int write_output(const csv_state *S, const cm_table *T, const char *out_path, const char *group,
                        rd_status *st) {
  rd_h5_atomic out;
  int rc = rd_h5_atomic_create(out_path, &out, st);
  hid_t h = out.h;
  char path[1400];
  int64_t d2[2] = {T->P, T->R};
  if (rc == RD_OK)
    rc = rd_h5_write_chunked(h, ds_path(path, sizeof path, group, "reward_chosen"), 2, d2, H5T_IEEE_F64LE,
                             H5T_NATIVE_DOUBLE, T->rc, st);
  if (rc == RD_OK)
    rc = rd_h5_write_chunked(h, ds_path(path, sizeof path, group, "reward_rejected"), 2, d2, H5T_IEEE_F64LE,
                             H5T_NATIVE_DOUBLE, T->rr, st);
  if (rc == RD_OK)
    rc = rd_h5_write_chunked(h, ds_path(path, sizeof path, group, "in_train"), 2, d2, H5T_STD_U8LE, H5T_NATIVE_UINT8,
                             T->flag, st);
  if (rc == RD_OK) rc = write_users(h, group, S, T, st);
  if (rc == RD_OK) rc = write_ids_and_covariates(h, group, S, T, st);
  return rd_h5_atomic_finish(&out, st);
}

/* ---- the command ------------------------------------------------------------------------------------------ */

/* What was written, every covariate's type and missing count: a cm-csv import keeps every row. */
static void log_summary(const csv_state *S, const char *out_path, FILE *log) {
  fprintf(log, "rmdiag import cm-csv: %lld rows -> %lld pairs x %lld runs, %lld users, %d covariates -> %s\n",
          (long long)S->n, (long long)S->pairs.n, (long long)S->runs.n, (long long)S->users.n, S->ncov, out_path);
  fprintf(log, "rmdiag import cm-csv: kept every row; dropped none");
  for (int c = 0; c < S->ncols; c++) {
    int k = S->cov_col[c];
    if (k < 0) continue;
    int64_t missing = 0, cats = 0;
    uint8_t *seen = calloc((size_t)S->cov_text[k].n + 1, 1);
    for (int64_t p = 0; p < S->pairs.n; p++) {
      int32_t id = S->pair_cat[p * S->ncov + k];
      missing += id < 0;
      if (id >= 0 && seen && !seen[id]) seen[id] = 1, cats++;
    }
    free(seen);
    if (S->cov_text_line[k])
      fprintf(log, "; covariate %s: categorical (%lld categories; line %lld has the first cell that is not a number), "
              "%lld pairs missing", S->header[c], (long long)cats, (long long)S->cov_text_line[k], (long long)missing);
    else
      fprintf(log, "; covariate %s: numeric, %lld pairs missing", S->header[c], (long long)missing);
  }
  fputc('\n', log);
}

int rd_import_cm_csv(int argc, char **argv, const char *out_path, FILE *log, rd_status *st) {
  const char *input, *group;
  RD_TRY(parse_options(argc, argv, &input, &group, st));
  csv_state S;
  memset(&S, 0, sizeof S);
  S.file = input;
  rd_idmap_init(&S.runs, 64);
  rd_idmap_init(&S.pairs, 1 << 16);
  rd_idmap_init(&S.users, 1 << 12);
  int rc = rd_csv_read(input, RD_CSV_STRICT, on_record, &S, st);
  if (rc == RD_OK && !S.header) rc = rd_fail(st, RD_EINPUT, "%s: empty file (expected a header row)", input);
  if (rc == RD_OK && S.n == 0) rc = rd_fail(st, RD_EINPUT, "%s: no data rows after the header", input);
  if (rc == RD_OK) rc = check_category_texts(&S, st);
  cm_table T;
  memset(&T, 0, sizeof T);
  if (rc == RD_OK) rc = table_order(&S, &T, st);
  if (rc == RD_OK) rc = table_check(&S, &T, st);
  if (rc == RD_OK) rc = user_split_check(&S, st);
  if (rc == RD_OK) rc = table_fill(&S, &T, st);
  if (rc == RD_OK) rc = write_output(&S, &T, out_path, group, st);
  if (rc == RD_OK && log) log_summary(&S, out_path, log);
  table_free(&T);
  state_free(&S);
  return rc;
}
