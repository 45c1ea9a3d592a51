/* features: the labels and splits of the feature rows, one per row in the same order, from a CSV with
 * `label` and `split` columns (csvread.h) or JSONL with `label` and `split` fields (jsonl.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "features_internal.h"
#include "rmdiag/common/jsonl.h"
#include "rmdiag/common/vec.h"
#include "rmdiag/import/csvread.h"

static int parse_split(const char *s, uint8_t *out) {
  static const char *const names[][4] = {{"0", "train", "training", NULL},
                                         {"1", "validation", "val", "valid"},
                                         {"2", "test", "testing", NULL}};
  for (int k = 0; k < 3; k++)
    for (int j = 0; j < 4; j++)
      if (names[k][j] && strcasecmp(s, names[k][j]) == 0) {
        *out = (uint8_t)k;
        return 1;
      }
  if (strcasecmp(s, "dev") == 0) {
    *out = 1;
    return 1;
  }
  return 0;
}

static int parse_label(const char *s, int64_t *out) {
  if (!s[0] || strcasecmp(s, "na") == 0 || strcasecmp(s, "nan") == 0 || strcasecmp(s, "null") == 0 ||
      strcasecmp(s, "none") == 0) {
    *out = -1;
    return 1;
  }
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (end == s || *end || errno == ERANGE || v < -1) return 0;
  *out = v;
  return 1;
}

/* One row's label and split from their texts; `what` and `row` say where ("row 3", "line 7"). */
static int add_row(labels *L, const char *file, const char *what, int64_t row, const char *lab, const char *spl,
                   rd_status *st) {
  int64_t v;
  uint8_t s;
  if (!parse_label(lab, &v))
    return rd_fail(st, RD_EINPUT, "%s: %s %lld: label = \"%s\", expected an integer (empty, NA or null = missing)",
                   file, what, (long long)row, lab);
  if (v > INT32_MAX)
    return rd_fail(st, RD_EINPUT, "%s: %s %lld: label %lld does not fit 32 bits", file, what, (long long)row,
                   (long long)v);
  if (!parse_split(spl, &s))
    return rd_fail(st, RD_EINPUT, "%s: %s %lld: split = \"%s\", expected 0/train, 1/validation or 2/test", file, what,
                   (long long)row, spl);
  void *arrays[] = {&L->label, &L->split};
  const size_t elems[] = {sizeof *L->label, sizeof *L->split};
  if (rd_vec_reserve_n(arrays, elems, 2, &L->cap, (size_t)L->n + 1) != 0)
    return rd_fail(st, RD_EFAIL, "out of memory reading %s", file);
  L->label[L->n] = v;
  L->split[L->n++] = s;
  return RD_OK;
}

/* ---- CSV ---------------------------------------------------------------------------------------- */

typedef struct csv_labels {
  labels *L;
  const char *file;
  int ncols, col_label, col_split;
  int64_t records;
} csv_labels;

static int csv_record(const rd_csv_record *rec, void *ctx, rd_status *st) {
  csv_labels *C = ctx;
  int64_t row = rec->index + 1;  /* record number, the header being row 1 */
  C->records++;
  for (int k = 0; k < rec->n; k++)
    if (memchr(rec->field[k], '\0', rec->len[k]))
      return rd_fail(st, RD_EINPUT, "%s: row %lld, field %d: a NUL byte (expected text)", C->file, (long long)row,
                     k + 1);
  if (rec->index == 0) {
    C->ncols = rec->n;
    C->col_label = C->col_split = -1;
    for (int k = 0; k < rec->n; k++) {
      if (strcmp(rec->field[k], "label") == 0) C->col_label = k;
      if (strcmp(rec->field[k], "split") == 0) C->col_split = k;
    }
    if (C->col_label < 0 || C->col_split < 0)
      return rd_fail(st, RD_EINPUT, "%s: row 1 (header): expected columns \"label\" and \"split\"", C->file);
    return RD_OK;
  }
  if (rec->n != C->ncols)
    return rd_fail(st, RD_EINPUT, "%s: row %lld has %d fields, expected %d (as in the header)", C->file,
                   (long long)row, rec->n, C->ncols);
  return add_row(C->L, C->file, "row", row, rec->field[C->col_label], rec->field[C->col_split], st);
}

static int read_csv(labels *L, const char *path, rd_status *st) {
  csv_labels C = {.L = L, .file = path};
  RD_TRY(rd_csv_read(path, RD_CSV_STRICT, csv_record, &C, st));
  if (C.records == 0) return rd_fail(st, RD_EINPUT, "%s: empty file (expected a header row)", path);
  return RD_OK;
}

/* ---- JSONL --------------------------------------------------------------------------------------- */

typedef struct jsonl_labels {
  labels *L;
  const char *file;
} jsonl_labels;

/* A JSON label or split as the text the CSV reader would see; non-finite numbers are refused. */
static int json_cell(const char *file, int64_t line, const char *key, const cJSON *v, char *buf, size_t n,
                     rd_status *st) {
  int is_label = key[0] == 'l';
  if (cJSON_IsNumber(v) && !isfinite(v->valuedouble))
    return rd_fail(st, RD_EINPUT, "%s: line %lld: %s = %s, expected %s", file, (long long)line, key,
                   rd_json_number_text(v->valuedouble),
                   is_label ? "an integer (null = missing)" : "0/train, 1/validation or 2/test");
  if (is_label && (!v || cJSON_IsNull(v))) snprintf(buf, n, "null");
  else if (cJSON_IsNumber(v) && v->valuedouble == floor(v->valuedouble) &&
           fabs(v->valuedouble) < (is_label ? 9e15 : 1e9))
    snprintf(buf, n, "%lld", (long long)v->valuedouble);
  else if (cJSON_IsString(v)) snprintf(buf, n, "%.60s", v->valuestring);
  else snprintf(buf, n, "%s", (v || is_label) ? "?" : "(missing)");
  return RD_OK;
}

static int jsonl_row(cJSON *o, int64_t line, void *ctx, rd_status *st) {
  jsonl_labels *J = ctx;
  char lt[64], stx[64];
  int rc = json_cell(J->file, line, "label", cJSON_GetObjectItemCaseSensitive(o, "label"), lt, sizeof lt, st);
  if (rc == RD_OK)
    rc = json_cell(J->file, line, "split", cJSON_GetObjectItemCaseSensitive(o, "split"), stx, sizeof stx, st);
  if (rc == RD_OK) rc = add_row(J->L, J->file, "line", line, lt, stx, st);
  cJSON_Delete(o);
  return rc;
}

/* ---- either ----------------------------------------------------------------------------------------- */

int labels_read(labels *L, const char *path, rd_status *st) {
  memset(L, 0, sizeof *L);
  size_t n = strlen(path);
  int jsonl = (n >= 6 && strcasecmp(path + n - 6, ".jsonl") == 0) || (n >= 5 && strcasecmp(path + n - 5, ".json") == 0);
  if (!jsonl) return read_csv(L, path, st);
  jsonl_labels J = {L, path};
  return rd_jsonl_read(path, RD_JSONL_OBJECTS, jsonl_row, &J, st);
}

void labels_free(labels *L) {
  free(L->label);
  free(L->split);
  memset(L, 0, sizeof *L);
}
