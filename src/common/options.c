/* Option tables: parsing, effective options, key lists, suggestions and help (see options.h). */
#include "rmdiag/common/options.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int parse_one(const rd_option *o, const cJSON *spec, void *opts, cJSON *eff, const rd_where *w,
                     rd_status *st) {
  char *field = (char *)opts + o->offset;
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(spec, o->key);
  if (v && o->set_offset) *(int *)((char *)opts + o->set_offset) = 1;
  cJSON *item = NULL;
  switch (o->type) {
    case RD_OPT_INT: {
      int64_t x = 0;
      RD_TRY(rd_opt_int(spec, o->key, o->idef, o->imin, o->imax, &x, w, st));
      *(int64_t *)field = x;
      item = cJSON_CreateNumber((double)x);
      break;
    }
    case RD_OPT_NUMBER: {
      double x = 0;
      RD_TRY(rd_opt_double(spec, o->key, o->def, o->min, o->max, &x, w, st));
      *(double *)field = x;
      item = cJSON_CreateNumber(x);
      break;
    }
    case RD_OPT_BOOL: {
      int x = 0;
      RD_TRY(rd_opt_bool(spec, o->key, (int)o->idef, &x, w, st));
      *(int *)field = x;
      item = cJSON_CreateBool(x);
      break;
    }
    case RD_OPT_STRING: {
      const char *x = NULL;
      RD_TRY(rd_opt_string(spec, o->key, o->sdef, o->choices, &x, w, st));
      *(const char **)field = x;
      item = x ? cJSON_CreateString(x) : cJSON_CreateNull();
      break;
    }
    case RD_OPT_CUSTOM:
      return o->custom ? o->custom(v, field, opts, eff, w, st) : RD_OK;
  }
  if (!eff || o->effective == RD_EFF_NONE || (!v && o->effective == RD_EFF_IF_SET)) {
    cJSON_Delete(item);
    return RD_OK;
  }
  if (!v && o->effective == RD_EFF_OR_NULL) {
    cJSON_Delete(item);
    item = cJSON_CreateNull();
  }
  if (!item || !cJSON_AddItemToObject(eff, o->key, item)) {
    cJSON_Delete(item);
    return rd_fail(st, RD_EFAIL, "out of memory");
  }
  return RD_OK;
}

int rd_options_parse(const rd_option *table, const cJSON *spec, void *opts, cJSON *effective, const rd_where *w,
                     rd_status *st) {
  for (const rd_option *o = table; o->key; o++) RD_TRY(parse_one(o, spec, opts, effective, w, st));
  return RD_OK;
}

int rd_options_keys(const rd_option *table, const char **keys, int n, int cap) {
  for (const rd_option *o = table; o && o->key && n < cap - 1; o++) keys[n++] = o->key;
  keys[n] = NULL;
  return n;
}

/* Levenshtein distance, capped: strings longer than 64 bytes count as far apart. */
static int edit_distance(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  if (la > 64 || lb > 64) return 1000;
  int row[65];
  for (size_t j = 0; j <= lb; j++) row[j] = (int)j;
  for (size_t i = 1; i <= la; i++) {
    int diag = row[0];
    row[0] = (int)i;
    for (size_t j = 1; j <= lb; j++) {
      int up = row[j];
      int sub = diag + (a[i - 1] != b[j - 1]);
      int best = up + 1 < row[j - 1] + 1 ? up + 1 : row[j - 1] + 1;
      row[j] = sub < best ? sub : best;
      diag = up;
    }
  }
  return row[lb];
}

static void consider(const char *cand, const char *key, const char **best, int *best_d) {
  int d = edit_distance(cand, key);
  /* close enough to be a slip: a third of the longer name, at least one edit, at most three */
  size_t lc = strlen(cand), lk = strlen(key);
  int limit = (int)((lc > lk ? lc : lk) / 3);
  if (limit < 1) limit = 1;
  if (limit > 3) limit = 3;
  if (d <= limit && d < *best_d) {
    *best = cand;
    *best_d = d;
  }
}

const char *rd_options_suggest(const rd_option *table, const char *const *extra, const char *key) {
  const char *best = NULL;
  int best_d = 1000;
  for (const rd_option *o = table; o && o->key; o++) consider(o->key, key, &best, &best_d);
  for (const char *const *e = extra; e && *e; e++) consider(*e, key, &best, &best_d);
  return best;
}

static const char *type_text(const rd_option *o) {
  if (o->type_help) return o->type_help;
  switch (o->type) {
    case RD_OPT_INT: return "integer";
    case RD_OPT_NUMBER: return "number";
    case RD_OPT_BOOL: return "true or false";
    case RD_OPT_STRING: return "string";
    case RD_OPT_CUSTOM: return "value";
  }
  return "value";
}

void rd_options_print(const rd_option *table, FILE *fp) {
  for (const rd_option *o = table; o->key; o++) {
    char def[128] = "", range[512] = "";
    if (o->default_help) {
      snprintf(def, sizeof def, "%s", o->default_help);
    } else {
      switch (o->type) {
        case RD_OPT_INT: snprintf(def, sizeof def, "%" PRId64, o->idef); break;
        case RD_OPT_NUMBER: snprintf(def, sizeof def, "%g", o->def); break;
        case RD_OPT_BOOL: snprintf(def, sizeof def, "%s", o->idef ? "true" : "false"); break;
        case RD_OPT_STRING: snprintf(def, sizeof def, o->sdef ? "\"%s\"" : "none", o->sdef); break;
        case RD_OPT_CUSTOM: snprintf(def, sizeof def, "none"); break;
      }
    }
    if (o->type == RD_OPT_INT) {
      snprintf(range, sizeof range, "%" PRId64 "..%" PRId64, o->imin, o->imax);
    } else if (o->type == RD_OPT_NUMBER) {
      snprintf(range, sizeof range, "%g..%g", o->min, o->max);
    } else if (o->type == RD_OPT_STRING && o->choices) {
      size_t n = (size_t)snprintf(range, sizeof range, "one of ");
      for (const char *const *c = o->choices; *c && n < sizeof range - 64; c++)
        n += (size_t)snprintf(range + n, sizeof range - n, "%s\"%s\"", c == o->choices ? "" : ", ", *c);
    }
    fprintf(fp, "  %s\n      %s; default %s%s%s\n      %s\n", o->key, type_text(o), def, range[0] ? "; " : "",
            range, o->help ? o->help : "");
  }
}
