/* The JSON-lines reader every importer uses (RewardBench results, NumLeak panels, label files): one
 * policy for what a data file may hold, with errors that name the file, the line and the column.
 *
 * - Blank lines (nothing but spaces, tabs and a CR) are skipped; a UTF-8 byte order mark at the start
 *   of the file is ignored.
 * - Strict JSON: a value that does not parse, or text after it on its line, is an error giving line
 *   and column; so are NUL bytes and \u0000 escapes (cJSON would silently cut a string short at one,
 *   see rd_json_nul_escape_at) and a key repeated within one object (rd_json_no_duplicate_keys).
 * - Python's json module writes NaN, Infinity and -Infinity for non-finite floats. Outside strings
 *   these three tokens are read as the non-finite numbers they stand for (NaN, +inf, -inf); nothing
 *   else beyond JSON is accepted. Every field that needs a finite number must refuse them with a
 *   message naming the file, the line and the key (rd_json_number_text names them).
 * - Text is not checked for UTF-8 here: the importers check the strings they keep (names, ids), so a
 *   field they ignore may hold anything.
 * The values are cJSON trees; the caller owns each value it is handed. */
#ifndef RMDIAG_COMMON_JSONL_H
#define RMDIAG_COMMON_JSONL_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "rmdiag/common/status.h"

enum {
  /* Values follow each other separated by white space, each over any number of lines, several on a
   * line if need be: JSONL, or one pretty-printed document (RewardBench's files are either). Without
   * this flag every non-blank line holds exactly one value. */
  RD_JSONL_MULTILINE = 1,
  /* Every value must be a JSON object. */
  RD_JSONL_OBJECTS = 2
};

/* Receives each value (the caller must cJSON_Delete it or keep it) and the line where it starts
 * (from 1). Returns RD_OK to go on; anything else stops the reading and is returned. */
typedef int (*rd_jsonl_fn)(cJSON *value, int64_t line, void *ctx, rd_status *st);

/* Reads the file at `path` value by value (flags: RD_JSONL_*). */
int rd_jsonl_read(const char *path, int flags, rd_jsonl_fn fn, void *ctx, rd_status *st);

/* The same on text already in memory; `file` names it in messages. */
int rd_jsonl_parse(const char *file, const char *text, size_t len, int flags, rd_jsonl_fn fn, void *ctx,
                   rd_status *st);

/* Every value of a file, in order, with the line where it starts. */
typedef struct rd_jsonl_values {
  cJSON **value;
  int64_t *line;
  size_t n, cap;
} rd_jsonl_values;

int rd_jsonl_read_all(const char *path, int flags, rd_jsonl_values *out, rd_status *st);
void rd_jsonl_values_free(rd_jsonl_values *v);

/* "NaN", "Infinity" or "-Infinity" for a non-finite number (as the file spells it), NULL for a finite
 * one: for messages that refuse a non-finite value. */
const char *rd_json_number_text(double v);

#endif
