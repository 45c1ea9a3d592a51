/* cJSON helpers: numbers that become null when undefined, canonical (sorted, compact) printing
 * for hashing, and strict option readers whose errors name the file, the key path and what was
 * expected. */
#ifndef RMDIAG_JSONUTIL_H
#define RMDIAG_JSONUTIL_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "rmdiag/common/status.h"

/* A finite number, or null. */
cJSON *rd_json_num(double v);
cJSON *rd_json_int(int64_t v);
/* [lo, hi], or null when either is undefined. */
cJSON *rd_json_pair(double lo, double hi);
/* Fills a null already in a tree (its key and place kept) with what rd_json_pair(lo, hi) gives:
 * it becomes [lo, hi] when both are finite and stays null otherwise. -1 when node is not a null. */
int rd_json_fill_pair(cJSON *node, double lo, double hi);
/* Adds `item` under `key`; on allocation failure returns -1. */
int rd_json_add(cJSON *obj, const char *key, cJSON *item);

/* A deep copy with object keys sorted (byte order), printed compactly: the canonical form. */
char *rd_json_canonical(const cJSON *item);

/* Where an option lives, for messages: "FILE: jobs[2] (\"name\")". */
typedef struct rd_where {
  const char *file;
  char path[640];
} rd_where;

/* Every key of `obj` must be in the NULL-terminated `allowed` list; duplicate keys are errors. */
int rd_opt_keys(const cJSON *obj, const char *const *allowed, const rd_where *w, rd_status *st);
/* Reads obj[key] into *out, or `def` when absent. Wrong types / out of range → RD_EINPUT. */
int rd_opt_int(const cJSON *obj, const char *key, int64_t def, int64_t min, int64_t max, int64_t *out,
               const rd_where *w, rd_status *st);
int rd_opt_double(const cJSON *obj, const char *key, double def, double min, double max, double *out,
                  const rd_where *w, rd_status *st);
int rd_opt_bool(const cJSON *obj, const char *key, int def, int *out, const rd_where *w, rd_status *st);
/* A string among the NULL-terminated `choices` (NULL: any string); *out points into obj or def. */
int rd_opt_string(const cJSON *obj, const char *key, const char *def, const char *const *choices,
                  const char **out, const rd_where *w, rd_status *st);
/* True if obj[key] is an integer-valued number within [min, max]. */
int rd_json_is_int(const cJSON *v, int64_t min, int64_t max);

/* Rewrites, in place, every number whose default 15-digit text would not read back exactly as a
 * raw item with the shortest exact text (call just before printing a report). */
void rd_json_exact_numbers(cJSON *item);

/* Offset of the first byte of s[0..n) that does not start a valid UTF-8 character (surrogates and
 * overlong forms included), or -1 when all of it is valid UTF-8 text. Report strings must be. */
int64_t rd_utf8_invalid_at(const char *s, size_t n);

/* Offset of the first \u0000 escape inside a JSON string of text[0..len), or -1. cJSON keeps strings
 * NUL-terminated, so such an escape would silently cut a key or value short: callers refuse it. */
int64_t rd_json_nul_escape_at(const char *text, size_t len);

/* RD_EINPUT naming `where` (e.g. "FILE: line N") when a key appears twice in one object anywhere
 * inside v (the first such key in document order; O(n log n) in the keys of an object): JSON
 * readers disagree on which of two equal keys counts (cJSON the first, Python the last), so data
 * files refuse them. */
int rd_json_no_duplicate_keys(const cJSON *v, const char *where, rd_status *st);

/* The first position i (in order) whose string repeats an earlier one, with *first the position of
 * that earlier one, or -1; NULL strings never count. O(n log n): for checks over lists that a
 * 64 MiB job file or a 100 MB data file can make long. */
int64_t rd_first_duplicate(const char *const *strs, int64_t n, int64_t *first);
/* The same for integers. */
int64_t rd_first_duplicate_i64(const int64_t *vals, int64_t n, int64_t *first);

/* Strings sorted once (by value, then position; NULL ones left out) so that each is found in
 * O(log n): rd_str_index_find gives the position of the first string equal to s, or -1. make
 * returns -1 when out of memory (the index is then empty). */
typedef struct rd_str_at {
  const char *s;
  int64_t at;
} rd_str_at;
typedef struct rd_str_index {
  rd_str_at *v;
  int64_t n;
} rd_str_index;
int rd_str_index_make(rd_str_index *ix, const char *const *strs, int64_t n);
int64_t rd_str_index_find(const rd_str_index *ix, const char *s);
void rd_str_index_free(rd_str_index *ix);

/* Parses a whole buffer strictly (no trailing garbage); errors give line and column. */
cJSON *rd_json_parse(const char *text, size_t len, const char *file, rd_status *st);

#endif
