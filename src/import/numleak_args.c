/* numleak: the command line. One table gives the options, their usage and the parser's checks; each
 * option then has its own small handler that reads its value into the options. */
#include <stdlib.h>
#include <string.h>

#include "numleak_internal.h"
#include "rmdiag/common/vec.h"
#include "rmdiag/import/args.h"
#include "rmdiag/import/formats.h"

const char *const nl_role_names[] = {"cells", "rank", "signal", "defense", NULL};

const char *const nl_field_names[F_COUNT] = {"model", "series", "variant", "seed", "month", "reply", "error",
                                             "key", "ts", "truth", "logprobs", "entropy", "month_b", "pick",
                                             "recall", "defense", "attack"};
static const char *const field_default[F_COUNT] = {
    [F_MODEL] = "model_name", [F_SERIES] = "factor", [F_SEED] = "seed", [F_MONTH] = "month",
    [F_REPLY] = "response", [F_ERROR] = "error", [F_TS] = "ts", [F_DEFENSE] = "defense", [F_ATTACK] = "attack"};

/* ---- the table ------------------------------------------------------------------------------------------ */

enum {
  A_PANEL, A_TRUTH, A_TRUTH_NUMLEAK, A_NO_TRUTH, A_NAN_TRUTH, A_NO_REPLIES, A_GROUP,
  A_AS, A_FIELD, A_SET, A_MAP, A_WHERE, A_FICTIONAL, A_COUNT
};

static const rd_arg numleak_table[A_COUNT + 1] = {
    [A_PANEL] = {"--panel", "FILE", RD_ARG_REPEAT, RD_ARG_OPENS,
                 "a JSONL panel (one JSON object per line); the panel options after it apply to it"},
    [A_TRUTH] = {"--truth", "SERIES=FILE[,COLUMN[,TRANSFORM]]", RD_ARG_REPEAT, RD_ARG_GLOBAL,
                 "ground truth of SERIES from a Kenneth French file (preamble,\n"
                 "monthly block, annual block and footer; -99.99/-999 missing), a FRED file\n"
                 "(observation_date,VALUE) or a month,value file; COLUMN defaults to SERIES (French) or the\n"
                 "second column; TRANSFORM level (default) or yoy (12-month % change, e.g. CPI)"},
    [A_TRUTH_NUMLEAK] = {"--truth-numleak", "DIR", RD_ARG_ONCE, RD_ARG_GLOBAL,
                         "NumLeak's convention: Mkt-RF, SMB, HML from DIR/F-F_Research_Data_Factors.csv,\n"
                         "RMW, CMA from DIR/F-F_Research_Data_5_Factors_2x3.csv, Mom from DIR/F-F_Momentum_Factor.csv"},
    [A_NO_TRUTH] = {"--no-truth", "SERIES", RD_ARG_REPEAT, RD_ARG_GLOBAL,
                    "SERIES has no ground truth here (its rows count as without truth)"},
    [A_NAN_TRUTH] = {"--nan-truth", "error|missing", RD_ARG_ONCE, RD_ARG_GLOBAL,
                     "a NaN truth value is an error (default) or a missing value"},
    [A_NO_REPLIES] = {"--no-replies", NULL, RD_ARG_ONCE, RD_ARG_GLOBAL, "do not keep the raw replies"},
    [A_GROUP] = {"--group", "G", RD_ARG_ONCE, RD_ARG_GLOBAL, "output group (default /leak)"},
    [A_AS] = {"--as", "cells|rank|signal|defense", RD_ARG_ONCE_EACH, RD_ARG_SCOPED,
              "what the rows are (default cells: replies about a series and month)"},
    [A_FIELD] = {"--field", "NAME=PATH", RD_ARG_REPEAT, RD_ARG_SCOPED,
                 "where NAME is in each object (dotted PATH, e.g. query.factor); an empty PATH\n"
                 "unmaps it. NAME (default PATH): model (model_name), series (factor), variant (none: \"default\"),\n"
                 "seed (seed; absent = 0), month (month: YYYY-MM, YYYYMM or Month YYYY), reply (response),\n"
                 "error (error: non-null = an API error, status 2), key (none: no de-duplication), ts (ts),\n"
                 "truth (none: inline truth), logprobs (none: tokens with top_logprobs -> entropy_bits),\n"
                 "entropy (none: a precomputed entropy); rank: month_b (required), pick (none: the reply is\n"
                 "parsed); signal: recall (required); defense: defense (defense), attack (attack)"},
    [A_SET] = {"--set", "NAME=VALUE", RD_ARG_REPEAT, RD_ARG_SCOPED,
               "a constant instead of a field (model, series, variant, seed, defense, attack)"},
    [A_MAP] = {"--map", "NAME:FROM=TO", RD_ARG_REPEAT, RD_ARG_SCOPED,
               "renames a value of model, series, variant, defense or attack"},
    [A_WHERE] = {"--where", "PATH=V[|V...]", RD_ARG_REPEAT, RD_ARG_SCOPED,
                 "keeps the rows whose PATH is one of the values (repeatable, all must hold)"},
    [A_FICTIONAL] = {"--fictional", NULL, RD_ARG_ONCE_EACH, RD_ARG_SCOPED,
                     "the panel's series do not exist (no truth needed; reported as fictional)"},
    [A_COUNT] = RD_ARG_END,
};

const rd_args_spec rd_import_numleak_args = {
    .command = "rmdiag import numleak",
    .synopsis = "[OPTIONS] --panel FILE [PANEL OPTIONS] [--panel FILE [PANEL OPTIONS]]... -o OUT.h5",
    .intro = "Panels are JSONL files (one JSON object per line). Each row's fields are found by dotted paths into the\n"
             "object, so panels with different field names need options, not code. Replies are parsed with NumLeak's\n"
             "rules (numbers with %, percent, bps; a short reply's bare number) and kept in /leak/reply.\n",
    .args = numleak_table,
    .global_title = "Options:",
    .scoped_title = "Panel options (they apply to the --panel before them):",
    .notes = "Rows with the same key keep the newest non-error record (largest ts). Every real series needs a truth\n"
             "source. NaN, Infinity and -Infinity (as Python writes them) are read as non-finite numbers: a truth\n"
             "refuses them (unless --nan-truth missing), recall reads them as missing, and entropy and ts refuse\n"
             "them. Errors name the file, the line and the field.\n",
    .max_operands = 0,
};

/* ---- the handlers ------------------------------------------------------------------------------------- */

#define CMD "rmdiag import numleak"

static int field_of(const char *name) {
  for (int f = 0; f < F_COUNT; f++)
    if (strcmp(nl_field_names[f], name) == 0) return f;
  return -1;
}

/* fields whose value can be a constant (--set) and renamed (--map) */
static int settable(int f) {
  return f == F_MODEL || f == F_SERIES || f == F_VARIANT || f == F_SEED || f == F_DEFENSE || f == F_ATTACK;
}

static int add_panel(nl_opts *o, const char *file, rd_status *st) {
  if (RD_VEC_RESERVE(o->panels, o->panels_cap, (size_t)o->n_panels + 1) != 0)
    return rd_fail(st, RD_EFAIL, "out of memory");
  panel_opts *p = &o->panels[o->n_panels++];
  memset(p, 0, sizeof *p);
  p->file = file;
  for (int f = 0; f < F_COUNT; f++) p->path[f] = field_default[f];
  return RD_OK;
}

static truth_map *new_truth(nl_opts *o) {
  if (RD_VEC_RESERVE(o->truths, o->truths_cap, (size_t)o->n_truths + 1) != 0) return NULL;
  truth_map *t = &o->truths[o->n_truths++];
  memset(t, 0, sizeof *t);
  return t;
}

/* --truth-numleak DIR: the six Fama-French factors from their files in DIR. */
static int truth_numleak(nl_opts *o, const char *dir, rd_status *st) {
  static const char *const conv[6][3] = {{"Mkt-RF", "F-F_Research_Data_Factors.csv", "Mkt-RF"},
                                         {"SMB", "F-F_Research_Data_Factors.csv", "SMB"},
                                         {"HML", "F-F_Research_Data_Factors.csv", "HML"},
                                         {"RMW", "F-F_Research_Data_5_Factors_2x3.csv", "RMW"},
                                         {"CMA", "F-F_Research_Data_5_Factors_2x3.csv", "CMA"},
                                         {"Mom", "F-F_Momentum_Factor.csv", "Mom"}};
  for (int k = 0; k < 6; k++) {
    truth_map *t = new_truth(o);
    size_t n = strlen(dir) + strlen(conv[k][1]) + 2;
    if (!t || !(t->owned = malloc(n))) return rd_fail(st, RD_EFAIL, "out of memory");
    snprintf(t->owned, n, "%s/%s", dir, conv[k][1]);
    t->series = conv[k][0];
    t->file = t->owned;
    t->column = conv[k][2];
  }
  return RD_OK;
}

/* --truth SERIES=FILE[,COLUMN[,TRANSFORM]] */
static int truth_option(nl_opts *o, const char *v, rd_status *st) {
  truth_map *t = new_truth(o);
  if (!t || !(t->owned = strdup(v))) return rd_fail(st, RD_EFAIL, "out of memory");
  char *eq = strchr(t->owned, '=');
  if (!eq || eq == t->owned || !eq[1])
    return rd_fail(st, RD_EINPUT, CMD ": --truth \"%s\": expected SERIES=FILE[,COLUMN[,TRANSFORM]]", v);
  *eq = '\0';
  t->series = t->owned;
  t->file = eq + 1;
  char *c1 = strchr(eq + 1, ',');
  if (!c1) return RD_OK;
  *c1 = '\0';
  t->column = c1 + 1;
  char *c2 = strchr(c1 + 1, ',');
  if (c2) {
    *c2 = '\0';
    if (strcmp(c2 + 1, "yoy") == 0) t->yoy = 1;
    else if (strcmp(c2 + 1, "level") != 0)
      return rd_fail(st, RD_EINPUT, CMD ": --truth \"%s\": transform \"%s\" is not level or yoy (12-month %% change)",
                     v, c2 + 1);
  }
  if (!t->column[0]) t->column = NULL;
  return RD_OK;
}

/* --field NAME=PATH and --set NAME=VALUE */
static int field_or_set(panel_opts *p, int is_set, const char *v, rd_status *st) {
  const char *opt = is_set ? "--set" : "--field";
  const char *eq = strchr(v, '=');
  char name[32];
  size_t n = eq ? (size_t)(eq - v) : 0;
  if (!eq || n == 0 || n >= sizeof name)
    return rd_fail(st, RD_EINPUT, CMD ": %s \"%s\": expected NAME=%s", opt, v, is_set ? "VALUE" : "PATH");
  memcpy(name, v, n);
  name[n] = '\0';
  int f = field_of(name);
  if (f < 0) return rd_fail(st, RD_EINPUT, CMD ": %s \"%s\": unknown field \"%s\" (see --help)", opt, v, name);
  if (is_set) {
    if (!settable(f))
      return rd_fail(st, RD_EINPUT, CMD ": --set %s: only model, series, variant, seed, defense and attack take a "
                     "constant", name);
    p->setv[f] = eq + 1;
    p->path[f] = NULL;
  } else {
    p->path[f] = eq[1] ? eq + 1 : NULL;  /* "--field key=" unmaps */
    p->setv[f] = NULL;
  }
  return RD_OK;
}

/* --map NAME:FROM=TO */
static int map_option(panel_opts *p, const char *v, rd_status *st) {
  const char *colon = strchr(v, ':'), *eq = colon ? strchr(colon, '=') : NULL;
  char name[32];
  size_t n = colon ? (size_t)(colon - v) : 0;
  if (!colon || !eq || n == 0 || n >= sizeof name || eq == colon + 1)
    return rd_fail(st, RD_EINPUT, CMD ": --map \"%s\": expected NAME:FROM=TO", v);
  memcpy(name, v, n);
  name[n] = '\0';
  int f = field_of(name);
  if (f < 0 || !settable(f) || f == F_SEED)
    return rd_fail(st, RD_EINPUT, CMD ": --map \"%s\": NAME must be model, series, variant, defense or attack", v);
  if (RD_VEC_RESERVE(p->maps, p->maps_cap, (size_t)p->n_maps + 1) != 0) return rd_fail(st, RD_EFAIL, "out of memory");
  char *from = strndup(colon + 1, (size_t)(eq - colon - 1));
  if (!from) return rd_fail(st, RD_EFAIL, "out of memory");
  p->maps[p->n_maps++] = (map_rule){f, from, eq + 1};
  return RD_OK;
}

/* --where PATH=V[|V...] */
static int where_option(panel_opts *p, const char *v, rd_status *st) {
  const char *eq = strchr(v, '=');
  if (!eq || eq == v) return rd_fail(st, RD_EINPUT, CMD ": --where \"%s\": expected PATH=VALUE[|VALUE...]", v);
  if (RD_VEC_RESERVE(p->wheres, p->wheres_cap, (size_t)p->n_wheres + 1) != 0)
    return rd_fail(st, RD_EFAIL, "out of memory");
  char *path = strndup(v, (size_t)(eq - v));
  if (!path) return rd_fail(st, RD_EFAIL, "out of memory");
  p->wheres[p->n_wheres++] = (where_rule){path, eq + 1};
  return RD_OK;
}

static int role_option(panel_opts *p, const char *v, rd_status *st) {
  p->role = -1;
  for (int k = 0; nl_role_names[k]; k++)
    if (strcmp(nl_role_names[k], v) == 0) p->role = k;
  if (p->role < 0) return rd_fail(st, RD_EINPUT, CMD ": --as \"%s\": expected cells, rank, signal or defense", v);
  return RD_OK;
}

/* One option of the command line; panel options go to the last panel (the parser has checked there is
 * one). */
static int apply(nl_opts *o, int row, const char *v, rd_status *st) {
  panel_opts *p = o->n_panels ? &o->panels[o->n_panels - 1] : NULL;
  switch (row) {
    case A_PANEL: return add_panel(o, v, st);
    case A_TRUTH: return truth_option(o, v, st);
    case A_TRUTH_NUMLEAK: return truth_numleak(o, v, st);
    case A_NO_TRUTH:
      if (RD_VEC_RESERVE(o->no_truth, o->no_truth_cap, (size_t)o->n_no_truth + 1) != 0)
        return rd_fail(st, RD_EFAIL, "out of memory");
      o->no_truth[o->n_no_truth++] = v;
      return RD_OK;
    case A_NAN_TRUTH:
      if (strcmp(v, "error") && strcmp(v, "missing"))
        return rd_fail(st, RD_EINPUT, CMD ": --nan-truth must be error or missing (got \"%s\")", v);
      o->nan_missing = strcmp(v, "missing") == 0;
      return RD_OK;
    case A_NO_REPLIES: o->keep_replies = 0; return RD_OK;
    case A_GROUP:
      if (v[0] != '/') return rd_fail(st, RD_EINPUT, CMD ": --group must start with '/' (got \"%s\")", v);
      o->group = v;
      return RD_OK;
    case A_AS: return role_option(p, v, st);
    case A_FIELD: return field_or_set(p, 0, v, st);
    case A_SET: return field_or_set(p, 1, v, st);
    case A_MAP: return map_option(p, v, st);
    case A_WHERE: return where_option(p, v, st);
    case A_FICTIONAL: p->fictional = 1; return RD_OK;
  }
  return RD_OK;
}

/* What the options as a whole need: a panel, and the fields of the rank and signal roles. */
static int check_panels(const nl_opts *o, rd_status *st) {
  if (o->n_panels == 0) return rd_fail(st, RD_EINPUT, CMD ": no --panel FILE given (see rmdiag import numleak --help)");
  for (int p = 0; p < o->n_panels; p++) {
    const panel_opts *q = &o->panels[p];
    if (q->role == ROLE_RANK && !q->path[F_MONTH_B])
      return rd_fail(st, RD_EINPUT, CMD ": panel %s (--as rank) needs --field month_b=PATH (the second month of each "
                     "pair)", q->file);
    if (q->role == ROLE_SIGNAL && !q->path[F_RECALL])
      return rd_fail(st, RD_EINPUT, CMD ": panel %s (--as signal) needs --field recall=PATH (the recalled value of "
                     "the month)", q->file);
  }
  return RD_OK;
}

int nl_parse_args(int argc, char **argv, nl_opts *o, rd_status *st) {
  o->group = "/leak";
  o->keep_replies = 1;
  rd_arg_use *uses = NULL;
  int n = 0;
  RD_TRY(rd_args_parse(&rd_import_numleak_args, argc, argv, &uses, &n, st));
  int rc = RD_OK;
  for (int k = 0; k < n && rc == RD_OK; k++)
    rc = apply(o, uses[k].row, numleak_table[uses[k].row].values ? uses[k].values[0] : NULL, st);
  free(uses);
  RD_TRY(rc);
  return check_panels(o, st);
}

void nl_opts_free(nl_opts *o) {
  for (int p = 0; p < o->n_panels; p++) {
    for (int k = 0; k < o->panels[p].n_maps; k++) free(o->panels[p].maps[k].from);
    for (int k = 0; k < o->panels[p].n_wheres; k++) free(o->panels[p].wheres[k].path);
    free(o->panels[p].maps);
    free(o->panels[p].wheres);
  }
  for (int t = 0; t < o->n_truths; t++) free(o->truths[t].owned);
  free(o->panels);
  free(o->truths);
  free(o->no_truth);
}
