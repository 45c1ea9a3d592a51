/* cJSON helpers shared by the job file parser and the report writers. */
#include "rmdiag/common/jsonutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

int64_t rd_utf8_invalid_at(const char *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    utf8proc_int32_t c;
    utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)s + i, (utf8proc_ssize_t)(n - i), &c);
    if (k <= 0) return (int64_t)i;
    i += (size_t)k;
  }
  return -1;
}

cJSON *rd_json_num(double v) { return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull(); }

cJSON *rd_json_int(int64_t v) { return cJSON_CreateNumber((double)v); }

cJSON *rd_json_pair(double lo, double hi) {
  if (!isfinite(lo) || !isfinite(hi)) return cJSON_CreateNull();
  cJSON *a = cJSON_CreateArray();
  if (!a) return NULL;
  cJSON_AddItemToArray(a, cJSON_CreateNumber(lo));
  cJSON_AddItemToArray(a, cJSON_CreateNumber(hi));
  return a;
}

int rd_json_fill_pair(cJSON *node, double lo, double hi) {
  if (!node || !cJSON_IsNull(node)) return -1;
  if (!isfinite(lo) || !isfinite(hi)) return 0;
  node->type = (node->type & cJSON_StringIsConst) | cJSON_Array;
  cJSON_AddItemToArray(node, cJSON_CreateNumber(lo));
  cJSON_AddItemToArray(node, cJSON_CreateNumber(hi));
  return 0;
}

int rd_json_add(cJSON *obj, const char *key, cJSON *item) {
  if (!item) return -1;
  cJSON_AddItemToObject(obj, key, item);
  return 0;
}

static int cmp_items(const void *a, const void *b) {
  const cJSON *x = *(const cJSON *const *)a, *y = *(const cJSON *const *)b;
  return strcmp(x->string, y->string);
}

static cJSON *sorted_copy(const cJSON *item) {
  if (cJSON_IsObject(item)) {
    int n = cJSON_GetArraySize(item);
    const cJSON **kids = malloc(sizeof(*kids) * (size_t)(n ? n : 1));
    if (!kids) return NULL;
    int i = 0;
    for (const cJSON *c = item->child; c; c = c->next) kids[i++] = c;
    qsort(kids, (size_t)n, sizeof *kids, cmp_items);
    cJSON *o = cJSON_CreateObject();
    for (i = 0; o && i < n; i++) {
      cJSON *c = sorted_copy(kids[i]);
      if (!c) {
        cJSON_Delete(o);
        o = NULL;
        break;
      }
      cJSON_AddItemToObject(o, kids[i]->string, c);
    }
    free(kids);
    return o;
  }
  if (cJSON_IsArray(item)) {
    cJSON *a = cJSON_CreateArray();
    for (const cJSON *c = item->child; a && c; c = c->next) {
      cJSON *k = sorted_copy(c);
      if (!k) {
        cJSON_Delete(a);
        return NULL;
      }
      cJSON_AddItemToArray(a, k);
    }
    return a;
  }
  return cJSON_Duplicate(item, 1);
}

char *rd_json_canonical(const cJSON *item) {
  cJSON *c = sorted_copy(item);
  if (!c) return NULL;
  char *s = cJSON_PrintUnformatted(c);
  cJSON_Delete(c);
  return s;
}

int rd_json_is_int(const cJSON *v, int64_t min, int64_t max) {
  if (!cJSON_IsNumber(v)) return 0;
  double d = v->valuedouble;
  if (!isfinite(d) || d != floor(d)) return 0;
  if (d < -9007199254740992.0 || d > 9007199254740992.0) return 0;
  return (int64_t)d >= min && (int64_t)d <= max;
}

static const char *type_name(const cJSON *v) {
  if (cJSON_IsNull(v)) return "null";
  if (cJSON_IsBool(v)) return "a boolean";
  if (cJSON_IsNumber(v)) return "a number";
  if (cJSON_IsString(v)) return "a string";
  if (cJSON_IsArray(v)) return "a list";
  if (cJSON_IsObject(v)) return "an object";
  return "an invalid value";
}

/* ---- duplicates in O(n log n): sort (value, position), then the runs of equal values ---------- */

static int cmp_str_at(const void *a, const void *b) {
  const rd_str_at *x = a, *y = b;
  int c = strcmp(x->s, y->s);
  return c ? c : (x->at > y->at) - (x->at < y->at);
}

int rd_str_index_make(rd_str_index *ix, const char *const *strs, int64_t n) {
  ix->n = 0;
  ix->v = malloc(sizeof *ix->v * (size_t)(n ? n : 1));
  if (!ix->v) return -1;
  for (int64_t i = 0; i < n; i++)
    if (strs[i]) ix->v[ix->n++] = (rd_str_at){strs[i], i};
  qsort(ix->v, (size_t)ix->n, sizeof *ix->v, cmp_str_at);
  return 0;
}

int64_t rd_str_index_find(const rd_str_index *ix, const char *s) {
  int64_t lo = 0, hi = ix->n;  /* the first entry not below s */
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (strcmp(ix->v[mid].s, s) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo < ix->n && strcmp(ix->v[lo].s, s) == 0 ? ix->v[lo].at : -1;
}

void rd_str_index_free(rd_str_index *ix) {
  free(ix->v);
  ix->v = NULL;
  ix->n = 0;
}

/* dup[i] = the position of the first string equal to strs[i] when an earlier one is, else -1 (NULL
 * strings are never duplicates). Returns -1 when out of memory. */
static int mark_duplicates(const char *const *strs, int64_t n, int64_t *dup) {
  rd_str_index ix;
  if (rd_str_index_make(&ix, strs, n) != 0) return -1;
  for (int64_t i = 0; i < n; i++) dup[i] = -1;
  for (int64_t i = 1, first = 0; i < ix.n; i++) {
    if (strcmp(ix.v[i].s, ix.v[first].s) != 0) first = i;
    else dup[ix.v[i].at] = ix.v[first].at;
  }
  rd_str_index_free(&ix);
  return 0;
}

int64_t rd_first_duplicate(const char *const *strs, int64_t n, int64_t *first) {
  int64_t *dup = malloc(sizeof(int64_t) * (size_t)(n ? n : 1)), found = -1;
  if (!dup) {  /* no memory for the fast way: the slow one */
    for (int64_t i = 0; i < n && found < 0; i++)
      for (int64_t k = 0; k < i && found < 0 && strs[i]; k++)
        if (strs[k] && strcmp(strs[k], strs[i]) == 0) found = i, *first = k;
    return found;
  }
  mark_duplicates(strs, n, dup);
  for (int64_t i = 0; i < n && found < 0; i++)
    if (dup[i] >= 0) found = i, *first = dup[i];
  free(dup);
  return found;
}

static int cmp_i64_at(const void *a, const void *b) {
  const int64_t *x = a, *y = b;
  if (x[0] != y[0]) return x[0] < y[0] ? -1 : 1;
  return (x[1] > y[1]) - (x[1] < y[1]);
}

int64_t rd_first_duplicate_i64(const int64_t *vals, int64_t n, int64_t *first) {
  int64_t *v = malloc(sizeof(int64_t) * 2 * (size_t)(n ? n : 1)), found = -1;
  if (!v) {
    for (int64_t i = 0; i < n && found < 0; i++)
      for (int64_t k = 0; k < i && found < 0; k++)
        if (vals[k] == vals[i]) found = i, *first = k;
    return found;
  }
  for (int64_t i = 0; i < n; i++) v[2 * i] = vals[i], v[2 * i + 1] = i;
  qsort(v, (size_t)n, 2 * sizeof(int64_t), cmp_i64_at);
  /* each run of equal values, by position: its second member is a duplicate of its first */
  for (int64_t i = 1, start = 0; i < n; i++) {
    if (v[2 * i] != v[2 * start]) {
      start = i;
    } else if (i == start + 1 && (found < 0 || v[2 * i + 1] < found)) {
      found = v[2 * i + 1];
      *first = v[2 * start + 1];
    }
  }
  free(v);
  return found;
}

/* The first key, in document order (depth first), that repeats an earlier key of its own object. */
static const char *duplicate_key(const cJSON *v) {
  if (!v) return NULL;
  int64_t n = 0;
  for (const cJSON *c = v->child; c; c = c->next) n++;
  int64_t *dup = NULL;
  if (cJSON_IsObject(v) && n > 1) {
    const char **keys = malloc(sizeof(char *) * (size_t)n);
    dup = malloc(sizeof(int64_t) * (size_t)n);
    int64_t i = 0;
    if (keys && dup)
      for (const cJSON *c = v->child; c; c = c->next) keys[i++] = c->string;
    if (!keys || !dup || mark_duplicates(keys, n, dup) != 0) {
      free(keys);
      free(dup);
      for (const cJSON *c = v->child; c; c = c->next)  /* no memory for the fast way: the slow one */
        for (const cJSON *d = v->child; d != c; d = d->next)
          if (d->string && c->string && strcmp(d->string, c->string) == 0) return c->string;
      dup = NULL;
    } else {
      free(keys);
    }
  }
  int64_t i = 0;
  const char *found = NULL;
  for (const cJSON *c = v->child; c && !found; c = c->next, i++) {
    if (dup && dup[i] >= 0) found = c->string;
    else if (c->child) found = duplicate_key(c);
  }
  free(dup);
  return found;
}

int rd_json_no_duplicate_keys(const cJSON *v, const char *where, rd_status *st) {
  const char *k = duplicate_key(v);
  if (!k) return RD_OK;
  return rd_fail(st, RD_EINPUT, "%s: key \"%s\" appears twice in one object (JSON readers disagree on which value "
                 "counts)", where, k);
}

int rd_opt_keys(const cJSON *obj, const char *const *allowed, const rd_where *w, rd_status *st) {
  for (const cJSON *c = obj->child; c; c = c->next) {
    int ok = 0;
    for (const char *const *a = allowed; *a; a++)
      if (strcmp(*a, c->string) == 0) ok = 1;
    if (!ok) {
      char list[512] = "";
      size_t len = 0;
      for (const char *const *a = allowed; *a && len < sizeof list - 64; a++)
        len += (size_t)snprintf(list + len, sizeof list - len, "%s\"%s\"", a == allowed ? "" : ", ", *a);
      return rd_fail(st, RD_EINPUT, "%s: unknown key \"%s\" (expected one of %s)", w->path, c->string, list);
    }
    for (const cJSON *d = obj->child; d != c; d = d->next)
      if (strcmp(d->string, c->string) == 0)
        return rd_fail(st, RD_EINPUT, "%s: key \"%s\" appears twice", w->path, c->string);
  }
  return RD_OK;
}

int rd_opt_int(const cJSON *obj, const char *key, int64_t def, int64_t min, int64_t max, int64_t *out,
               const rd_where *w, rd_status *st) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (!v) {
    *out = def;
    return RD_OK;
  }
  if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble != floor(v->valuedouble))
    return rd_fail(st, RD_EINPUT, "%s: \"%s\" must be an integer, got %s", w->path, key,
                   !cJSON_IsNumber(v) ? type_name(v)
                   : isfinite(v->valuedouble) ? "a fractional number" : "a number too large for a double");
  if (!rd_json_is_int(v, min, max))
    return rd_fail(st, RD_EINPUT, "%s: \"%s\" = %.17g is out of range (expected %lld..%lld)", w->path, key,
                   v->valuedouble, (long long)min, (long long)max);
  *out = (int64_t)v->valuedouble;
  return RD_OK;
}

int rd_opt_double(const cJSON *obj, const char *key, double def, double min, double max, double *out,
                  const rd_where *w, rd_status *st) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (!v) {
    *out = def;
    return RD_OK;
  }
  if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
    return rd_fail(st, RD_EINPUT, "%s: \"%s\" must be a number, got %s", w->path, key, type_name(v));
  if (v->valuedouble < min || v->valuedouble > max)
    return rd_fail(st, RD_EINPUT, "%s: \"%s\" = %.17g is out of range (expected %g..%g)", w->path, key,
                   v->valuedouble, min, max);
  *out = v->valuedouble;
  return RD_OK;
}

int rd_opt_bool(const cJSON *obj, const char *key, int def, int *out, const rd_where *w, rd_status *st) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (!v) {
    *out = def;
    return RD_OK;
  }
  if (!cJSON_IsBool(v))
    return rd_fail(st, RD_EINPUT, "%s: \"%s\" must be true or false, got %s", w->path, key, type_name(v));
  *out = cJSON_IsTrue(v);
  return RD_OK;
}

int rd_opt_string(const cJSON *obj, const char *key, const char *def, const char *const *choices,
                  const char **out, const rd_where *w, rd_status *st) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (!v) {
    *out = def;
    return RD_OK;
  }
  if (!cJSON_IsString(v))
    return rd_fail(st, RD_EINPUT, "%s: \"%s\" must be a string, got %s", w->path, key, type_name(v));
  if (choices) {
    for (const char *const *c = choices; *c; c++)
      if (strcmp(*c, v->valuestring) == 0) {
        *out = v->valuestring;
        return RD_OK;
      }
    char list[512] = "";
    size_t len = 0;
    for (const char *const *c = choices; *c && len < sizeof list - 64; c++)
      len += (size_t)snprintf(list + len, sizeof list - len, "%s\"%s\"", c == choices ? "" : ", ", *c);
    return rd_fail(st, RD_EINPUT, "%s: \"%s\" = \"%s\" is not allowed (expected one of %s)", w->path, key,
                   v->valuestring, list);
  }
  *out = v->valuestring;
  return RD_OK;
}

int64_t rd_json_nul_escape_at(const char *text, size_t len) {
  for (size_t i = 0, in_str = 0; i < len; i++) {
    if (text[i] == '"') {
      in_str = !in_str;
    } else if (in_str && text[i] == '\\' && i + 1 < len) {
      if (text[i + 1] == 'u' && i + 6 <= len && memcmp(text + i + 2, "0000", 4) == 0) return (int64_t)i;
      i++;  /* the escaped character, whatever it is, does not end the string */
    }
  }
  return -1;
}

/* Line and column (from 1) of byte offset off. */
static void line_col(const char *text, size_t off, int *line, int *col) {
  *line = 1;
  *col = 1;
  for (size_t i = 0; i < off; i++) {
    if (text[i] == '\n') {
      ++*line;
      *col = 1;
    } else {
      ++*col;
    }
  }
}

cJSON *rd_json_parse(const char *text, size_t len, const char *file, rd_status *st) {
  const char *nul = memchr(text, '\0', len);
  if (nul) {
    rd_fail(st, RD_EINPUT, "%s: a NUL byte at offset %zu (expected a text JSON document)", file, (size_t)(nul - text));
    return NULL;
  }
  int64_t nul_at = rd_json_nul_escape_at(text, len);
  if (nul_at >= 0) {
    int line, col;
    line_col(text, (size_t)nul_at, &line, &col);
    rd_fail(st, RD_EINPUT, "%s: line %d, column %d: a \\u0000 escape (NUL) in a string; expected text without "
            "NUL characters", file, line, col);
    return NULL;
  }
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
  size_t off = 0;
  int trailing = 0;
  if (root) {
    off = (size_t)(end - text);
    while (off < len && (text[off] == ' ' || text[off] == '\t' || text[off] == '\n' || text[off] == '\r')) off++;
    if (off >= len || text[off] == '\0') return root;
    cJSON_Delete(root);
    trailing = 1;
  } else {
    off = end ? (size_t)(end - text) : 0;
    if (off > len) off = len;
  }
  int line, col;
  line_col(text, off, &line, &col);
  rd_fail(st, RD_EINPUT, "%s: malformed JSON at line %d, column %d (%s)", file, line, col,
          trailing ? "unexpected text after the end of the document" : "expected a valid JSON value here");
  return NULL;
}

/* cJSON prints a double with 15 significant digits whenever that reads back within an ulp, so a
 * report could lose the last bit of a value. Numbers whose 15-digit text is not exact become raw
 * items holding the shortest text (16 or 17 digits) that reads back to the same double. */
void rd_json_exact_numbers(cJSON *item) {
  for (cJSON *c = item ? item->child : NULL; c; c = c->next) {
    if (cJSON_IsNumber(c) && isfinite(c->valuedouble)) {
      double v = c->valuedouble;
      char buf[40];
      snprintf(buf, sizeof buf, "%1.15g", v);
      if (strtod(buf, NULL) == v) continue;
      snprintf(buf, sizeof buf, "%1.16g", v);
      if (strtod(buf, NULL) != v) snprintf(buf, sizeof buf, "%1.17g", v);
      char *raw = strdup(buf);
      if (!raw) continue;
      if (c->valuestring) cJSON_free(c->valuestring);
      c->valuestring = raw;
      c->type = cJSON_Raw;
    } else if (cJSON_IsObject(c) || cJSON_IsArray(c)) {
      rd_json_exact_numbers(c);
    }
  }
}
