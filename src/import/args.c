/* Importer command lines (see args.h): the one parser and the usage printer over an option table. */
#include "rmdiag/import/args.h"

#include <stdlib.h>
#include <string.h>

#include "rmdiag/common/options.h"
#include "rmdiag/common/vec.h"

static int is_option_row(const rd_arg *a) { return a->name[0] == '-'; }

/* The number of values a row takes: the words of its `values`. */
static int n_values(const rd_arg *a) {
  int n = 0;
  for (const char *s = a->values; s && *s;) {
    while (*s == ' ') s++;
    if (!*s) break;
    n++;
    while (*s && *s != ' ') s++;
  }
  return n;
}

int rd_args_row(const rd_args_spec *spec, const char *name) {
  for (int r = 0; spec->args[r].name; r++)
    if (is_option_row(&spec->args[r]) && strcmp(spec->args[r].name, name) == 0) return r;
  return -1;
}

static const rd_arg *opener(const rd_args_spec *spec) {
  for (const rd_arg *a = spec->args; a->name; a++)
    if (a->scope == RD_ARG_OPENS) return a;
  return NULL;
}

static int unknown_option(const rd_args_spec *spec, const char *arg, rd_status *st) {
  const char *names[64];
  int n = 0;
  for (const rd_arg *a = spec->args; a->name && n < 63; a++)
    if (is_option_row(a)) names[n++] = a->name;
  names[n] = NULL;
  const char *near = rd_options_suggest(NULL, names, arg);
  if (near)
    return rd_fail(st, RD_EINPUT, "%s: unknown option \"%s\" (did you mean %s? see %s --help)", spec->command, arg,
                   near, spec->command);
  return rd_fail(st, RD_EINPUT, "%s: unknown option \"%s\" (see %s --help)", spec->command, arg, spec->command);
}

/* How often a row may appear: the counts since the start (ONCE) or since the last opener (ONCE_EACH). */
static int check_times(const rd_args_spec *spec, const rd_arg *a, int seen, int seen_in_group, rd_status *st) {
  const rd_arg *op = opener(spec);
  if (a->times == RD_ARG_ONCE && seen > 0)
    return rd_fail(st, RD_EINPUT, "%s: %s given twice (it may be given once)", spec->command, a->name);
  if (a->times == RD_ARG_ONCE_EACH && seen_in_group > 0)
    return rd_fail(st, RD_EINPUT, "%s: %s given twice for one %s (it may be given once per %s)", spec->command, a->name,
                   op ? op->name : "group", op ? op->name : "group");
  return RD_OK;
}

/* A grouped option has its group; an option has all its values (`left` arguments follow it). */
static int check_option(const rd_args_spec *spec, int row, int left, int have_group, rd_status *st) {
  const rd_arg *a = &spec->args[row];
  const rd_arg *op = opener(spec);
  if (a->scope == RD_ARG_SCOPED && !have_group)
    return rd_fail(st, RD_EINPUT, "%s: %s applies to the %s before it: put it after %s %s", spec->command, a->name,
                   op->name, op->name, op->values ? op->values : "");
  int k = n_values(a);
  if (left < k) {
    if (k == 1)
      return rd_fail(st, RD_EINPUT, "%s: %s needs a value (%s; see %s --help)", spec->command, a->name, a->values,
                     spec->command);
    return rd_fail(st, RD_EINPUT, "%s: %s needs %d values (%s; see %s --help)", spec->command, a->name, k, a->values,
                   spec->command);
  }
  return RD_OK;
}

static int too_many_operands(const rd_args_spec *spec, const char *arg, rd_status *st) {
  if (spec->max_operands == 0 || !spec->operand)
    return rd_fail(st, RD_EINPUT, "%s: unexpected argument \"%s\" (see %s --help)", spec->command, arg, spec->command);
  if (spec->max_operands == 1)
    return rd_fail(st, RD_EINPUT, "%s: unexpected argument \"%s\" (one %s expected)", spec->command, arg,
                   spec->operand);
  return rd_fail(st, RD_EINPUT, "%s: unexpected argument \"%s\" (at most %d %s expected)", spec->command, arg,
                 spec->max_operands, spec->operand);
}

int rd_args_parse(const rd_args_spec *spec, int argc, char **argv, rd_arg_use **uses, int *n_uses, rd_status *st) {
  int rows = 0;
  while (spec->args[rows].name) rows++;
  int *seen = calloc((size_t)rows + 1, sizeof *seen), *seen_in_group = calloc((size_t)rows + 1, sizeof *seen);
  rd_arg_use *u = NULL;
  size_t cap = 0;
  int n = 0, operands = 0, have_group = 0, rc = RD_OK;
  if (!seen || !seen_in_group) rc = rd_fail(st, RD_EFAIL, "out of memory");
  for (int i = 0; i < argc && rc == RD_OK; i++) {
    if (RD_VEC_RESERVE(u, cap, (size_t)n + 1) != 0) {
      rc = rd_fail(st, RD_EFAIL, "out of memory");
      break;
    }
    const char *a = argv[i];
    if (a[0] != '-' || !a[1]) {
      if (spec->max_operands >= 0 && operands >= spec->max_operands) rc = too_many_operands(spec, a, st);
      u[n++] = (rd_arg_use){-1, &argv[i]};
      operands++;
      continue;
    }
    int row = rd_args_row(spec, a);
    if (row < 0) {
      rc = unknown_option(spec, a, st);
      break;
    }
    const rd_arg *r = &spec->args[row];
    rc = check_option(spec, row, argc - i - 1, have_group, st);
    if (rc == RD_OK) rc = check_times(spec, r, seen[row], seen_in_group[row], st);
    if (rc != RD_OK) break;
    if (r->scope == RD_ARG_OPENS) {
      have_group = 1;
      memset(seen_in_group, 0, sizeof *seen_in_group * (size_t)rows);
    }
    seen[row]++;
    seen_in_group[row]++;
    u[n++] = (rd_arg_use){row, &argv[i + 1]};
    i += n_values(r);
  }
  free(seen);
  free(seen_in_group);
  if (rc != RD_OK) {
    free(u);
    return rc;
  }
  *uses = u;
  *n_uses = n;
  return RD_OK;
}

/* ---- usage ------------------------------------------------------------------------------------------ */

static int head_width(const rd_arg *a) { return (int)(strlen(a->name) + (a->values ? 1 + strlen(a->values) : 0)); }

/* "  NAME VALUES" then the help from column `col` (on the same line after two spaces when the name is
 * wider), further help lines at column `col`. */
static void print_row(const rd_arg *a, int col, FILE *fp) {
  int w = fprintf(fp, "  %s%s%s", a->name, a->values ? " " : "", a->values ? a->values : "");
  const char *h = a->help ? a->help : "";
  fprintf(fp, "%*s", w + 2 <= col ? col - w : 2, "");
  for (;;) {
    const char *nl = strchr(h, '\n');
    fprintf(fp, "%.*s\n", nl ? (int)(nl - h) : (int)strlen(h), h);
    if (!nl || !nl[1]) break;
    h = nl + 1;
    fprintf(fp, "%*s", col, "");
  }
}

static void print_text(const char *t, FILE *fp) {
  if (!t) return;
  fputs(t, fp);
  if (t[0] && t[strlen(t) - 1] != '\n') fputc('\n', fp);
}

void rd_args_usage(const rd_args_spec *spec, FILE *fp) {
  /* the help column: two spaces after the widest name that fits in 24 columns */
  int col = 0;
  for (const rd_arg *a = spec->args; a->name; a++) {
    int w = 2 + head_width(a) + 2;
    if (w <= 26 && w > col) col = w;
  }
  fprintf(fp, "%s %s\n", spec->command, spec->synopsis);
  print_text(spec->intro, fp);
  int scoped = 0;
  if (spec->global_title) print_text(spec->global_title, fp);
  for (const rd_arg *a = spec->args; a->name; a++) {
    if (a->scope == RD_ARG_SCOPED) scoped = 1;
    else print_row(a, col, fp);
  }
  if (scoped) {
    print_text(spec->scoped_title, fp);
    for (const rd_arg *a = spec->args; a->name; a++)
      if (a->scope == RD_ARG_SCOPED) print_row(a, col, fp);
  }
  print_text(spec->notes, fp);
}
