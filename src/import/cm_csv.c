/* `rmdiag import cm-csv`: a long CSV (one row per pair and run) into the cm layout of SPEC §4.
 * RFC 4180 parsing by libcsv; every (pair, run) must appear exactly once; a pair's user and
 * covariates must agree across its rows. */
#include <csv.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "rmdiag/common/h5out.h"
#include "rmdiag/common/idmap.h"
#include "rmdiag/import/formats.h"

enum { COL_RUN, COL_PAIR, COL_USER, COL_RC, COL_RR, COL_FLAG, N_REQ };
static const char *const req_names[N_REQ] = {"run", "pair", "user", "reward_chosen", "reward_rejected", "in_train"};

typedef struct csv_state {
  const char *file;
  rd_status *st;
  int64_t row;        /* record number, header = 1 */
  int64_t line_now;   /* physical line being parsed (the file is fed line by line) */
  int64_t rec_line;   /* physical line where the current record starts (0: not started) */
  int ncols, field;
  int col_of[N_REQ];  /* header position of each required column */
  int *cov_col;       /* header position -> covariate index or -1 */
  int ncov;
  char **header;
  /* current record */
  char **fields;
  /* accumulated rows */
  rd_idmap runs, pairs, users;
  int64_t n, cap;
  int32_t *r_run, *r_pair;
  double *r_rc, *r_rr;
  uint8_t *r_flag;
  int64_t *r_line;
  /* per pair (indexed by pair id in first-appearance order) */
  int64_t pcap;
  int64_t *pair_user, *pair_line;
  double *pair_cov;  /* [pcap][ncov] */
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
  if (S->n < S->cap) return 0;
  int64_t cap = S->cap ? 2 * S->cap : 65536;
  void *p;
#define GROW(field, T)                                   \
  p = realloc(S->field, sizeof(T) * (size_t)cap);        \
  if (!p) return -1;                                     \
  S->field = p;
  GROW(r_run, int32_t) GROW(r_pair, int32_t) GROW(r_rc, double) GROW(r_rr, double) GROW(r_flag, uint8_t)
  GROW(r_line, int64_t)
#undef GROW
  S->cap = cap;
  return 0;
}

static int grow_pairs(csv_state *S, int64_t need) {
  if (need <= S->pcap) return 0;
  int64_t cap = S->pcap ? 2 * S->pcap : 4096;
  while (cap < need) cap *= 2;
  void *p = realloc(S->pair_user, sizeof(int64_t) * (size_t)cap);
  if (!p) return -1;
  S->pair_user = p;
  p = realloc(S->pair_line, sizeof(int64_t) * (size_t)cap);
  if (!p) return -1;
  S->pair_line = p;
  p = realloc(S->pair_cov, sizeof(double) * (size_t)(cap * (S->ncov ? S->ncov : 1)));
  if (!p) return -1;
  S->pair_cov = p;
  S->pcap = cap;
  return 0;
}

/* A covariate name becomes an HDF5 dataset name. */
static int bad_name(const char *n) {
  return !n[0] || strchr(n, '/') || strcmp(n, ".") == 0 || strcmp(n, "..") == 0 || strlen(n) > 200;
}

static void on_header(csv_state *S) {
  for (int k = 0; k < N_REQ; k++) S->col_of[k] = -1;
  S->cov_col = malloc(sizeof(int) * (size_t)(S->ncols ? S->ncols : 1));
  for (int c = 0; c < S->ncols; c++) {
    S->cov_col[c] = -1;
    for (int d = 0; d < c; d++)
      if (strcmp(S->header[c], S->header[d]) == 0) {
        rd_fail(S->st, RD_EINPUT, "%s: line %lld (header): column \"%s\" appears twice", S->file, (long long)S->rec_line, S->header[c]);
        return;
      }
    int req = -1;
    for (int k = 0; k < N_REQ; k++)
      if (strcmp(S->header[c], req_names[k]) == 0) req = k;
    if (req >= 0) {
      S->col_of[req] = c;
    } else {
      if (bad_name(S->header[c])) {
        rd_fail(S->st, RD_EINPUT, "%s: line %lld (header): column %d: \"%.60s\" cannot name a covariate (expected a "
                "non-empty name of at most 200 bytes without '/', not \".\" or \"..\")", S->file, (long long)S->rec_line,
                c + 1, S->header[c]);
        return;
      }
      S->cov_col[c] = S->ncov++;
    }
  }
  for (int k = 0; k < N_REQ; k++)
    if (S->col_of[k] < 0) {
      rd_fail(S->st, RD_EINPUT, "%s: line %lld (header): missing column \"%s\" (expected run,pair,user,reward_chosen,"
              "reward_rejected,in_train plus optional covariates)", S->file, (long long)S->rec_line, req_names[k]);
      return;
    }
}

static void on_record(csv_state *S) {
  const char *f = S->file;
  int64_t line = S->rec_line;
  char **v = S->fields;
  if (grow_rows(S) != 0) {
    rd_fail(S->st, RD_EFAIL, "out of memory reading %s", f);
    return;
  }
  int64_t i = S->n;
  double rc, rr;
  if (!parse_double(v[S->col_of[COL_RC]], &rc) || !isfinite(rc)) {
    rd_fail(S->st, RD_EINPUT, "%s: line %lld: reward_chosen = \"%s\", expected a finite number", f, (long long)line,
            v[S->col_of[COL_RC]]);
    return;
  }
  if (!parse_double(v[S->col_of[COL_RR]], &rr) || !isfinite(rr)) {
    rd_fail(S->st, RD_EINPUT, "%s: line %lld: reward_rejected = \"%s\", expected a finite number", f, (long long)line,
            v[S->col_of[COL_RR]]);
    return;
  }
  const char *fl = v[S->col_of[COL_FLAG]];
  uint8_t flag;
  if (strcmp(fl, "1") == 0 || strcasecmp(fl, "true") == 0) flag = 1;
  else if (strcmp(fl, "0") == 0 || strcasecmp(fl, "false") == 0) flag = 0;
  else {
    rd_fail(S->st, RD_EINPUT, "%s: line %lld: in_train = \"%s\", expected 0 or 1", f, (long long)line, fl);
    return;
  }
  const char *run = v[S->col_of[COL_RUN]], *pair = v[S->col_of[COL_PAIR]], *user = v[S->col_of[COL_USER]];
  if (!run[0] || !pair[0] || !user[0]) {
    rd_fail(S->st, RD_EINPUT, "%s: line %lld: run, pair and user must not be empty", f, (long long)line);
    return;
  }
  int is_new = 0;
  int64_t r = rd_idmap_get(&S->runs, run, strlen(run), NULL);
  int64_t p = rd_idmap_get(&S->pairs, pair, strlen(pair), &is_new);
  int64_t u = rd_idmap_get(&S->users, user, strlen(user), NULL);
  if (r < 0 || p < 0 || u < 0 || grow_pairs(S, p + 1) != 0) {
    rd_fail(S->st, RD_EFAIL, "out of memory reading %s", f);
    return;
  }
  if (r > INT32_MAX || p > INT32_MAX) {
    rd_fail(S->st, RD_EINPUT, "%s: more than 2^31 runs or pairs", f);
    return;
  }
  double *cov = S->pair_cov + p * S->ncov;
  if (is_new) {
    S->pair_user[p] = u;
    S->pair_line[p] = line;
  } else if (S->pair_user[p] != u) {
    rd_fail(S->st, RD_EINPUT, "%s: line %lld: pair \"%s\" has user \"%s\" but line %lld gave it user \"%s\"; a pair "
            "belongs to one user", f, (long long)line, pair, user, (long long)S->pair_line[p],
            S->users.keys[S->pair_user[p]]);
    return;
  }
  for (int c = 0; c < S->ncols; c++) {
    int k = S->cov_col[c];
    if (k < 0) continue;
    const char *t = v[c];
    double x = NAN;
    if (t[0] && strcasecmp(t, "nan") != 0 && strcasecmp(t, "na") != 0 && strcasecmp(t, "null") != 0 &&
        !parse_double(t, &x)) {
      rd_fail(S->st, RD_EINPUT, "%s: line %lld: covariate %s = \"%s\", expected a number (or empty for missing)", f,
              (long long)line, S->header[c], t);
      return;
    }
    if (is_new) {
      cov[k] = x;
    } else if (!(cov[k] == x || (isnan(cov[k]) && isnan(x)))) {
      rd_fail(S->st, RD_EINPUT, "%s: line %lld: covariate %s of pair \"%s\" is %s here but %.17g on line %lld; a "
              "covariate has one value per pair", f, (long long)line, S->header[c], pair, t, cov[k],
              (long long)S->pair_line[p]);
      return;
    }
  }
  S->r_run[i] = (int32_t)r;
  S->r_pair[i] = (int32_t)p;
  S->r_rc[i] = rc;
  S->r_rr[i] = rr;
  S->r_flag[i] = flag;
  S->r_line[i] = line;
  S->n++;
}

static void cb_field(void *data, size_t len, void *ctx) {
  csv_state *S = ctx;
  if (S->st->code != RD_OK) return;
  const char *s = data ? (const char *)data : "";
  if (S->rec_line == 0) S->rec_line = S->line_now;
  if (S->row == 1 && S->ncols == 0 && len >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0) {
    s += 3;  /* a UTF-8 byte order mark (spreadsheet exports) */
    len -= 3;
  }
  if (S->row == 1) {
    char **h = realloc(S->header, sizeof(char *) * (size_t)(S->ncols + 1));
    if (!h) return;
    S->header = h;
    S->header[S->ncols++] = strndup(s, len);
    return;
  }
  if (S->field < S->ncols) {
    free(S->fields[S->field]);
    S->fields[S->field] = strndup(s, len);
  }
  S->field++;
}

static void cb_row(int c, void *ctx) {
  (void)c;
  csv_state *S = ctx;
  if (S->st->code != RD_OK) return;
  if (S->row == 1) {
    on_header(S);
    S->fields = calloc((size_t)S->ncols, sizeof(char *));
  } else if (S->field != S->ncols) {
    rd_fail(S->st, RD_EINPUT, "%s: line %lld has %d fields, expected %d (as in the header)", S->file,
            (long long)S->rec_line, S->field, S->ncols);
  } else {
    on_record(S);
  }
  S->row++;
  S->field = 0;
  S->rec_line = 0;
}

/* Order of ids: ascending numeric when all are integers, else first appearance. perm[new] = old. */
static int64_t *order_ids(const rd_idmap *m, int *numeric) {
  int64_t n = m->n;
  int64_t *perm = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
  int64_t *val = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
  if (!perm || !val) {
    free(perm);
    free(val);
    return NULL;
  }
  *numeric = 1;
  for (int64_t i = 0; i < n; i++) {
    perm[i] = i;
    if (!is_int_text(m->keys[i], &val[i])) *numeric = 0;
  }
  if (*numeric) {
    /* insertion into sorted order by value; merge sort for large n */
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

static int write_output(csv_state *S, const char *out_path, const char *group, rd_status *st) {
  const char *f = S->file;
  int num_pairs = 0, num_runs = 0;
  int64_t *pperm = order_ids(&S->pairs, &num_pairs), *rperm = order_ids(&S->runs, &num_runs);
  int64_t P = S->pairs.n, R = S->runs.n;
  int64_t *pnew = malloc(sizeof(int64_t) * (size_t)(P ? P : 1)), *rnew = malloc(sizeof(int64_t) * (size_t)(R ? R : 1));
  cell_row *cr = malloc(sizeof(cell_row) * (size_t)(S->n ? S->n : 1));
  double *rc = NULL, *rr = NULL;
  uint8_t *flag = NULL;
  int rc_ok = RD_OK;
  if (!pperm || !rperm || !pnew || !rnew || !cr) {
    rc_ok = rd_fail(st, RD_EFAIL, "out of memory importing %s", f);
    goto done;
  }
  for (int64_t i = 0; i < P; i++) pnew[pperm[i]] = i;
  for (int64_t i = 0; i < R; i++) rnew[rperm[i]] = i;
  /* every (pair, run) exactly once, checked on the rows sorted by cell (O(n log n) in the rows, so a
   * sparse file is refused before a dense P x R table is allocated): the first repeat in file order,
   * else the first missing cell in (pair, run) order */
  for (int64_t i = 0; i < S->n; i++)
    cr[i] = (cell_row){pnew[S->r_pair[i]] * R + rnew[S->r_run[i]], S->r_line[i], i};
  qsort(cr, (size_t)S->n, sizeof *cr, cmp_cell_row);
  int64_t dup = -1;
  for (int64_t i = 1; i < S->n; i++)
    if (cr[i].cell == cr[i - 1].cell && (i < 2 || cr[i - 1].cell != cr[i - 2].cell) &&
        (dup < 0 || cr[i].line < cr[dup].line))
      dup = i;
  if (dup >= 0) {
    int64_t i = cr[dup].row;
    rc_ok = rd_fail(st, RD_EINPUT, "%s: line %lld repeats pair \"%s\" run \"%s\" of line %lld; each (pair, run) must "
                    "appear once", f, (long long)cr[dup].line, S->pairs.keys[S->r_pair[i]], S->runs.keys[S->r_run[i]],
                    (long long)cr[dup - 1].line);
    goto done;
  }
  if (S->n != P * R) {
    int64_t e = 0;
    while (e < S->n && cr[e].cell == e) e++;
    rc_ok = rd_fail(st, RD_EINPUT, "%s: pair \"%s\" has no row for run \"%s\"; every pair needs one row per run "
                    "(%lld runs)", f, S->pairs.keys[pperm[e / R]], S->runs.keys[rperm[e % R]], (long long)R);
    goto done;
  }
  rc = malloc(sizeof(double) * (size_t)(P * R));
  rr = malloc(sizeof(double) * (size_t)(P * R));
  flag = malloc((size_t)(P * R));
  if (!rc || !rr || !flag) {
    rc_ok = rd_fail(st, RD_EFAIL, "out of memory importing %s", f);
    goto done;
  }
  for (int64_t k = 0; k < S->n; k++) {
    int64_t e = cr[k].cell, i = cr[k].row;
    rc[e] = S->r_rc[i];
    rr[e] = S->r_rr[i];
    flag[e] = S->r_flag[i];
  }

  {
    rd_h5_atomic out;
    rc_ok = rd_h5_atomic_create(out_path, &out, st);
    hid_t h = out.h;
    char path[1400];
    int64_t d2[2] = {P, R}, d1[1] = {P}, dr[1] = {R};
#define DS(name) (snprintf(path, sizeof path, "%.500s/%.600s", strcmp(group, "/") ? group : "", name), path)
    /* importers write chunked, compressed datasets, rewards as float64 */
    if (rc_ok == RD_OK) rc_ok = rd_h5_write_chunked(h, DS("reward_chosen"), 2, d2, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, rc, st);
    if (rc_ok == RD_OK)
      rc_ok = rd_h5_write_chunked(h, DS("reward_rejected"), 2, d2, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, rr, st);
    if (rc_ok == RD_OK) rc_ok = rd_h5_write_chunked(h, DS("in_train"), 2, d2, H5T_STD_U8LE, H5T_NATIVE_UINT8, flag, st);
    /* users: integers when every id is an integer, else strings */
    /* integers only when every id is an integer written the canonical way ("7", not "007" or
     * "+7"), so that distinct ids stay distinct */
    int users_int = 1;
    int64_t v;
    char canon[32];
    for (int64_t k = 0; k < S->users.n && users_int; k++) {
      if (!is_int_text(S->users.keys[k], &v)) users_int = 0;
      else if (snprintf(canon, sizeof canon, "%lld", (long long)v), strcmp(canon, S->users.keys[k]) != 0) users_int = 0;
    }
    if (rc_ok == RD_OK && users_int) {
      int64_t *uid = malloc(sizeof(int64_t) * (size_t)P);
      if (!uid) rc_ok = rd_fail(st, RD_EFAIL, "out of memory");
      for (int64_t i = 0; uid && i < P; i++) is_int_text(S->users.keys[S->pair_user[pperm[i]]], &uid[i]);
      if (rc_ok == RD_OK) rc_ok = rd_h5_write_chunked(h, DS("user"), 1, d1, H5T_STD_I64LE, H5T_NATIVE_INT64, uid, st);
      free(uid);
    } else if (rc_ok == RD_OK) {
      const char **us = malloc(sizeof(char *) * (size_t)P);
      if (!us) rc_ok = rd_fail(st, RD_EFAIL, "out of memory");
      for (int64_t i = 0; us && i < P; i++) us[i] = S->users.keys[S->pair_user[pperm[i]]];
      if (rc_ok == RD_OK) rc_ok = rd_h5_write_strings(h, DS("user"), P, us, st);
      free(us);
    }
    const char **ids = malloc(sizeof(char *) * (size_t)(P > R ? P : R));
    if (!ids && rc_ok == RD_OK) rc_ok = rd_fail(st, RD_EFAIL, "out of memory");
    for (int64_t i = 0; ids && i < P; i++) ids[i] = S->pairs.keys[pperm[i]];
    if (rc_ok == RD_OK) rc_ok = rd_h5_write_strings(h, DS("pair_id"), P, ids, st);
    for (int64_t i = 0; ids && i < R; i++) ids[i] = S->runs.keys[rperm[i]];
    if (rc_ok == RD_OK) rc_ok = rd_h5_write_strings(h, DS("run_id"), R, ids, st);
    free(ids);
    double *col = malloc(sizeof(double) * (size_t)(P ? P : 1));
    for (int c = 0; col && rc_ok == RD_OK && c < S->ncols; c++) {
      int k = S->cov_col[c];
      if (k < 0) continue;
      for (int64_t i = 0; i < P; i++) col[i] = S->pair_cov[pperm[i] * S->ncov + k];
      char name[600];
      snprintf(name, sizeof name, "covariates/%.500s", S->header[c]);
      rc_ok = rd_h5_write_chunked(h, DS(name), 1, d1, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, col, st);
    }
    free(col);
    (void)dr;
#undef DS
    rc_ok = rd_h5_atomic_finish(&out, st);
  }
done:
  free(pperm);
  free(rperm);
  free(pnew);
  free(rnew);
  free(rc);
  free(rr);
  free(flag);
  free(cr);
  return rc_ok;
}

int rd_import_cm_csv(int argc, char **argv, const char *out_path, FILE *log, rd_status *st) {
  const char *input = NULL, *group = "/cm";
  for (int i = 0; i < argc; i++) {
    if (strcmp(argv[i], "--group") == 0) {
      if (i + 1 >= argc) return rd_fail(st, RD_EINPUT, "rmdiag import cm-csv: --group needs a value (an HDF5 group)");
      group = argv[++i];
    }
    else if (argv[i][0] == '-' && argv[i][1]) return rd_fail(st, RD_EINPUT, "rmdiag import cm-csv: unknown option %s", argv[i]);
    else if (!input) input = argv[i];
    else return rd_fail(st, RD_EINPUT, "rmdiag import cm-csv: one input CSV expected, got also \"%s\"", argv[i]);
  }
  if (!input) return rd_fail(st, RD_EINPUT, "rmdiag import cm-csv: missing INPUT.csv");
  if (group[0] != '/' || strlen(group) > 255)
    return rd_fail(st, RD_EINPUT, "rmdiag import cm-csv: --group must be an HDF5 path starting with '/' (at most 255 bytes)");
  FILE *fp = rd_input_fopen(input);
  if (!fp) return rd_fail(st, RD_EINPUT, "%s: cannot open (%s)", input, strerror(errno));
  csv_state S;
  memset(&S, 0, sizeof S);
  S.file = input;
  S.st = st;
  S.row = 1;
  rd_idmap_init(&S.runs, 64);
  rd_idmap_init(&S.pairs, 1 << 16);
  rd_idmap_init(&S.users, 1 << 12);
  struct csv_parser parser;
  csv_init(&parser, CSV_STRICT | CSV_STRICT_FINI | CSV_APPEND_NULL);
  /* fed one physical line at a time, so messages can name the line where a record starts */
  char *line = NULL;
  size_t cap = 0;
  ssize_t got;
  while (st->code == RD_OK && (got = getline(&line, &cap, fp)) > 0) {
    S.line_now++;
    if (csv_parse(&parser, line, (size_t)got, cb_field, cb_row, &S) != (size_t)got && st->code == RD_OK)
      rd_fail(st, RD_EINPUT, "%s: line %lld: malformed CSV (%s)", input, (long long)S.line_now,
              csv_strerror(csv_error(&parser)));
  }
  free(line);
  if (st->code == RD_OK && csv_fini(&parser, cb_field, cb_row, &S) != 0)
    rd_fail(st, RD_EINPUT, "%s: line %lld: malformed CSV at the end of the file (%s)", input, (long long)S.line_now,
            csv_strerror(csv_error(&parser)));
  csv_free(&parser);
  fclose(fp);
  if (st->code == RD_OK && S.row == 1) rd_fail(st, RD_EINPUT, "%s: empty file (expected a header row)", input);
  if (st->code == RD_OK && S.n == 0) rd_fail(st, RD_EINPUT, "%s: no data rows after the header", input);
  if (st->code == RD_OK) write_output(&S, out_path, group, st);
  if (st->code == RD_OK && log)
    fprintf(log, "rmdiag import cm-csv: %lld rows -> %lld pairs x %lld runs, %lld users, %d covariates -> %s\n",
            (long long)S.n, (long long)S.pairs.n, (long long)S.runs.n, (long long)S.users.n, S.ncov, out_path);
  for (int c = 0; c < S.ncols; c++) {
    free(S.header ? S.header[c] : NULL);
    if (S.fields) free(S.fields[c]);
  }
  free(S.header);
  free(S.fields);
  free(S.cov_col);
  free(S.r_run);
  free(S.r_pair);
  free(S.r_rc);
  free(S.r_rr);
  free(S.r_flag);
  free(S.r_line);
  free(S.pair_user);
  free(S.pair_line);
  free(S.pair_cov);
  rd_idmap_free(&S.runs);
  rd_idmap_free(&S.pairs);
  rd_idmap_free(&S.users);
  return st->code;
}
