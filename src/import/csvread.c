/* The importers' CSV reader (see csvread.h): libcsv fed one physical line at a time, fields gathered
 * into records. */
#include "rmdiag/import/csvread.h"

#include <csv.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "rmdiag/common/h5out.h"
#include "rmdiag/common/vec.h"

typedef struct reader {
  const char *file;
  struct csv_parser parser;
  rd_csv_fn fn;
  void *ctx;
  rd_status *st;
  int stop;           /* the caller's function refused a record (or memory ran out) */
  int64_t line_now;   /* the physical line being fed */
  rd_csv_record rec;
  size_t *field_cap;  /* bytes allocated per field slot */
  size_t slots;       /* field slots allocated */
} reader;

static const char bom[3] = {'\xEF', '\xBB', '\xBF'};

static void on_field(void *data, size_t len, void *arg) {
  reader *R = arg;
  if (R->stop) return;
  rd_csv_record *rec = &R->rec;
  if (rec->n == 0) rec->line = R->line_now;
  size_t k = (size_t)rec->n, slots = R->slots;
  void *arrays[3] = {&rec->field, &rec->len, &R->field_cap};
  size_t elems[3] = {sizeof *rec->field, sizeof *rec->len, sizeof *R->field_cap};
  if (rd_vec_reserve_n(arrays, elems, 3, &slots, k + 1) != 0) goto oom;
  for (size_t s = R->slots; s < slots; s++) rec->field[s] = NULL, R->field_cap[s] = 0;
  R->slots = slots;
  if (rd_vec_reserve(&rec->field[k], &R->field_cap[k], len + 1, 1) != 0) goto oom;
  if (len) memcpy(rec->field[k], data, len);
  rec->field[k][len] = '\0';
  rec->len[k] = len;
  rec->n++;
  return;
oom:
  R->stop = 1;
  rd_fail(R->st, RD_EFAIL, "out of memory reading %s", R->file);
}

static void on_record(int c, void *arg) {
  (void)c;
  reader *R = arg;
  if (R->stop) return;
  rd_csv_record *rec = &R->rec;
  /* spreadsheet exports may put the byte order mark inside the first quoted name */
  if (rec->index == 0 && rec->n > 0 && rec->len[0] >= 3 && memcmp(rec->field[0], bom, 3) == 0) {
    memmove(rec->field[0], rec->field[0] + 3, rec->len[0] - 3 + 1);
    rec->len[0] -= 3;
  }
  if (R->fn(rec, R->ctx, R->st) != RD_OK) R->stop = 1;
  rec->index++;
  rec->n = 0;
}

static int start(reader *R, const char *file, int flags, rd_csv_fn fn, void *ctx, rd_status *st) {
  memset(R, 0, sizeof *R);
  R->file = file;
  R->fn = fn;
  R->ctx = ctx;
  R->st = st;
  unsigned char opts = CSV_APPEND_NULL | ((flags & RD_CSV_STRICT) ? CSV_STRICT | CSV_STRICT_FINI : 0);
  if (csv_init(&R->parser, opts) != 0) return rd_fail(st, RD_EFAIL, "out of memory");
  return RD_OK;
}

static int feed(reader *R, const char *line, size_t n) {
  R->line_now++;
  if (R->line_now == 1 && n >= 3 && memcmp(line, bom, 3) == 0) line += 3, n -= 3;
  if (csv_parse(&R->parser, line, n, on_field, on_record, R) != n && !R->stop) {
    R->stop = 1;
    return rd_fail(R->st, RD_EINPUT, "%s: line %lld: malformed CSV (%s)", R->file, (long long)R->line_now,
                   csv_strerror(csv_error(&R->parser)));
  }
  return R->stop ? R->st->code : RD_OK;
}

static int finish(reader *R, int rc) {
  if (rc == RD_OK && !R->stop && csv_fini(&R->parser, on_field, on_record, R) != 0)
    rc = rd_fail(R->st, RD_EINPUT, "%s: line %lld: malformed CSV at the end of the file (%s)", R->file,
                 (long long)R->line_now, csv_strerror(csv_error(&R->parser)));
  if (rc == RD_OK && R->stop) rc = R->st->code;
  csv_free(&R->parser);
  for (size_t s = 0; s < R->slots; s++) free(R->rec.field[s]);
  free(R->rec.field);
  free(R->rec.len);
  free(R->field_cap);
  return rc;
}

int rd_csv_read(const char *path, int flags, rd_csv_fn fn, void *ctx, rd_status *st) {
  FILE *fp = rd_input_fopen(path);
  if (!fp) return rd_fail(st, RD_EINPUT, "%s: cannot open (%s)", path, strerror(errno));
  reader R;
  int rc = start(&R, path, flags, fn, ctx, st);
  char *line = NULL;
  size_t cap = 0;
  ssize_t got;
  while (rc == RD_OK && (got = getline(&line, &cap, fp)) > 0) rc = feed(&R, line, (size_t)got);
  if (rc == RD_OK && ferror(fp)) rc = rd_fail(st, RD_EINPUT, "%s: read error", path);
  free(line);
  fclose(fp);
  return finish(&R, rc);
}

int rd_csv_parse(const char *file, const char *text, size_t len, int flags, rd_csv_fn fn, void *ctx, rd_status *st) {
  reader R;
  int rc = start(&R, file, flags, fn, ctx, st);
  for (size_t pos = 0; pos < len && rc == RD_OK;) {
    size_t end = pos;
    while (end < len && text[end] != '\n') end++;
    if (end < len) end++;
    rc = feed(&R, text + pos, end - pos);
    pos = end;
  }
  return finish(&R, rc);
}
