/* `rmdiag init KIND INPUT.h5 [-o JOB.json]`: a job file filled from the input's layout by the kind's
 * init hook, checked exactly as `rmdiag validate` checks it before it is written, so the file it
 * writes always validates (docs/reference.md, 'Commands', init). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rmdiag/common/files.h"
#include "rmdiag/common/h5in.h"
#include "rmdiag/common/signals.h"
#include "rmdiag/init.h"
#include "rmdiag/kind.h"
#include "rmdiag/run.h"

typedef struct init_args {
  const rd_kind *kind;
  const char *input, *out, *group, *name;
  int force, help;
} init_args;

void rd_init_usage(FILE *fp) {
  fprintf(fp, "usage: rmdiag init KIND INPUT.h5 [-o JOB.json] [--force] [--group GROUP] [--name NAME]\n"
              "Writes a job file for one job of KIND on INPUT.h5, its options filled from the input's layout (the\n"
              "scheme from the input's source attribute, probe tasks and models from its groups, strata from its\n"
              "covariates, the leakage family from its series). The file is checked as `rmdiag validate` checks it\n"
              "before it is written; notes on stderr say what was chosen. Without -o the job goes to stdout.\n\n"
              "options:\n"
              "    -o, --output JOB.json    write the job file there (its folder must exist); the input path in it\n"
              "                             is relative to that folder (absolute on stdout)\n"
              "    --force                  replace an existing JOB.json\n"
              "    --group GROUP            the input's HDF5 group (default by kind: /cm, /bench, /leak, /probe)\n"
              "    --name NAME              the job's name (default: the input's base name and the kind)\n\n"
              "kinds:");
  for (const rd_kind *const *k = rd_kinds(); *k; k++) fprintf(fp, " %s", (*k)->name);
  fprintf(fp, "\n");
}

/* ---- arguments -------------------------------------------------------------------------------- */

static int option_value(int argc, char **argv, int *i, const char **out, rd_status *st) {
  const char *a = argv[*i], *eq = strchr(a, '=');
  if (eq && strncmp(a, "--", 2) == 0) {
    *out = eq + 1;
    return RD_OK;
  }
  if (*i + 1 >= argc) return rd_fail(st, RD_EINPUT, "rmdiag init: %s needs a value (see rmdiag init --help)", a);
  *out = argv[++*i];
  return RD_OK;
}

static int init_parse(int argc, char **argv, init_args *a, rd_status *st) {
  memset(a, 0, sizeof *a);
  const char *pos[2] = {NULL, NULL};
  int npos = 0;
  for (int i = 2; i < argc; i++) {
    const char *s = argv[i];
    size_t nl = strcspn(s, "=");
    if (strcmp(s, "--help") == 0 || strcmp(s, "-h") == 0)
      a->help = 1;
    else if (strcmp(s, "--force") == 0)
      a->force = 1;
    else if (strcmp(s, "-o") == 0 || (nl == 8 && strncmp(s, "--output", 8) == 0))
      RD_TRY(option_value(argc, argv, &i, &a->out, st));
    else if (nl == 7 && strncmp(s, "--group", 7) == 0)
      RD_TRY(option_value(argc, argv, &i, &a->group, st));
    else if (nl == 6 && strncmp(s, "--name", 6) == 0)
      RD_TRY(option_value(argc, argv, &i, &a->name, st));
    else if (s[0] == '-' && s[1])
      return rd_fail(st, RD_EINPUT, "rmdiag init: unknown option %s (see rmdiag init --help)", s);
    else if (npos < 2)
      pos[npos++] = s;
    else return rd_fail(st, RD_EINPUT, "rmdiag init: unexpected argument \"%s\" (expected KIND INPUT.h5)", s);
  }
  if (a->help) return RD_OK;
  if (npos < 2) return rd_fail(st, RD_EINPUT, "rmdiag init: expected KIND INPUT.h5 (see rmdiag init --help)");
  if (!(a->kind = rd_kind_find(pos[0]))) {
    char list[256];
    size_t n = 0;
    for (const rd_kind *const *k = rd_kinds(); *k && n < sizeof list - 32; k++)
      n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", n ? ", " : "", (*k)->name);
    return rd_fail(st, RD_EINPUT, "rmdiag init: unknown kind \"%s\" (kinds: %s)", pos[0], list);
  }
  a->input = pos[1];
  if (!a->group) a->group = a->kind->default_group;
  if (a->group[0] != '/' || strstr(a->group, "//") || strlen(a->group) > 255)
    return rd_fail(st, RD_EINPUT, "rmdiag init: --group \"%.300s\" must be an absolute HDF5 path such as \"%s\"",
                   a->group, a->kind->default_group);
  if (a->out && !a->out[0]) return rd_fail(st, RD_EINPUT, "rmdiag init: -o needs a path");
  return RD_OK;
}

/* ---- paths ------------------------------------------------------------------------------------ */

/* `target` relative to the folder `base` (both absolute and canonical). */
static char *relative_to(const char *target, const char *base) {
  size_t common = 0;
  for (size_t i = 0;; i++) {  /* the longest common prefix that ends at a path separator */
    char t = target[i], b = base[i];
    if ((t == '/' || t == '\0') && (b == '/' || b == '\0')) common = i;
    if (t != b || !t) break;
  }
  if (strcmp(base, "/") == 0) common = 0;
  int ups = 0;
  for (const char *p = base + common; *p; p++) ups += *p == '/';
  if (base[common] == '/' && base[common + 1] == '\0') ups--;
  const char *rest = target + common + (target[common] == '/');
  char *out = malloc(3 * (size_t)(ups > 0 ? ups : 0) + strlen(rest) + 2);
  if (!out) return NULL;
  out[0] = '\0';
  for (int k = 0; k < ups; k++) strcat(out, "../");
  strcat(out, rest);
  return out;
}

/* The folder of `path` ("." when it names none). */
static char *folder_of(const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash) return strdup(".");
  return slash == path ? strdup("/") : strndup(path, (size_t)(slash - path));
}

/* The output must be creatable and may replace an existing file only with --force; it may never
 * be the input. */
static int check_output(const init_args *a, const char *input_real, rd_status *st) {
  char *dir = folder_of(a->out);
  struct stat sd, so;
  int ok = dir && stat(dir, &sd) == 0 && S_ISDIR(sd.st_mode);
  if (!ok) rd_fail(st, RD_EINPUT, "rmdiag init: -o %s: the folder %s does not exist", a->out, dir ? dir : "?");
  free(dir);
  if (!ok) return st->code;
  if (stat(a->out, &so) != 0) return RD_OK;
  if (S_ISDIR(so.st_mode))
    return rd_fail(st, RD_EINPUT, "rmdiag init: -o %s is a folder, expected a file path", a->out);
  char real[PATH_MAX];
  if (realpath(a->out, real) && strcmp(real, input_real) == 0)
    return rd_fail(st, RD_EINPUT, "rmdiag init: -o %s is the input file itself", a->out);
  if (!a->force)
    return rd_fail(st, RD_EINPUT, "rmdiag init: %s exists; add --force to replace it (nothing was written)", a->out);
  return RD_OK;
}

/* How the job names its input: relative to the job file's folder, or absolute on stdout. */
static int job_input_path(const init_args *a, const char *input_real, char **out, rd_status *st) {
  if (!a->out) {
    *out = strdup(input_real);
  } else {
    char *dir = folder_of(a->out), dreal[PATH_MAX];
    if (!dir || !realpath(dir, dreal)) {
      free(dir);
      return rd_fail(st, RD_EINPUT, "rmdiag init: cannot resolve the folder of %s", a->out);
    }
    free(dir);
    /* relative when the two share a folder below the root (a project moved as a whole keeps
     * working), else absolute */
    const char *t2 = strchr(input_real + 1, '/');
    size_t top = t2 ? (size_t)(t2 - input_real) : strlen(input_real);
    int shared = strncmp(input_real, dreal, top) == 0 && (dreal[top] == '/' || dreal[top] == '\0') && top > 1;
    *out = shared ? relative_to(input_real, dreal) : strdup(input_real);
  }
  return *out ? RD_OK : rd_fail(st, RD_EFAIL, "out of memory");
}

/* The input's base name without .h5 / .hdf5, in the job-name alphabet, then "-KIND". */
static void default_name(const char *input, const char *kind, char *out, size_t n) {
  const char *base = strrchr(input, '/');
  base = base ? base + 1 : input;
  while (*base == '.') base++;
  size_t len = strlen(base);
  if (len > 3 && strcmp(base + len - 3, ".h5") == 0) len -= 3;
  else if (len > 5 && strcmp(base + len - 5, ".hdf5") == 0) len -= 5;
  if (len > 150) len = 150;
  size_t k = 0;
  for (size_t i = 0; i < len && k + 1 < n; i++) {
    char c = base[i];
    int ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
             c == '-';
    out[k++] = ok ? c : '_';
  }
  out[k] = '\0';
  snprintf(out + k, n - k, "%s%s", k ? "-" : "job-", kind);
}

/* ---- the job ---------------------------------------------------------------------------------- */

/* The job's group must exist; when it does not, name the kinds whose default groups the file has. */
static int check_group(hid_t f, const init_args *a, rd_status *st) {
  if (rd_h5_exists(f, a->group)) return RD_OK;
  char hint[512] = "";
  size_t n = 0;
  for (const rd_kind *const *k = rd_kinds(); *k; k++)
    if (*k != a->kind && rd_h5_exists(f, (*k)->default_group) && n < sizeof hint - 100)
      n += (size_t)snprintf(hint + n, sizeof hint - n, "%s%s holds a %s input (rmdiag init %s)", n ? "; " : "; ",
                            (*k)->default_group, (*k)->name, (*k)->name);
  return rd_fail(st, RD_EINPUT, "rmdiag init: %s has no group %s (the %s input layout; --group names another)%s",
                 a->input, a->group, a->kind->name, hint);
}

/* The job object: name, kind, input, group (when not the default), then what the kind's hook adds. */
static int make_job(const init_args *a, const char *input_real, FILE *note, cJSON **out, rd_status *st) {
  char name[256];
  if (a->name) snprintf(name, sizeof name, "%s", a->name);
  else default_name(a->input, a->kind->name, name, sizeof name);
  char *in_path = NULL;
  RD_TRY(job_input_path(a, input_real, &in_path, st));
  cJSON *job = cJSON_CreateObject();
  cJSON_AddStringToObject(job, "name", name);
  cJSON_AddStringToObject(job, "kind", a->kind->name);
  cJSON_AddStringToObject(job, "input", in_path);
  free(in_path);
  if (strcmp(a->group, a->kind->default_group) != 0) cJSON_AddStringToObject(job, "group", a->group);
  hid_t f;
  int rc = rd_h5_open(input_real, MPI_COMM_NULL, &f, st);
  if (rc == RD_OK) {
    rc = check_group(f, a, st);
    if (rc == RD_OK) rc = a->kind->init(f, a->input, a->group, job, note, st);
    rd_h5_close(f);
  }
  if (rc != RD_OK) {
    cJSON_Delete(job);
    return rc;
  }
  *out = job;
  return RD_OK;
}

/* JSON as people write it: two-space indents, a value on one line when it fits in 100 columns. */
static void put_inline(FILE *fp, const cJSON *it) {
  if (cJSON_IsObject(it) || cJSON_IsArray(it)) {
    int obj = cJSON_IsObject(it);
    fputc(obj ? '{' : '[', fp);
    for (const cJSON *c = it->child; c; c = c->next) {
      if (obj) {
        cJSON *k = cJSON_CreateString(c->string);
        char *ks = cJSON_PrintUnformatted(k);
        fprintf(fp, "%s: ", ks ? ks : "\"\"");
        free(ks);
        cJSON_Delete(k);
      }
      put_inline(fp, c);
      if (c->next) fputs(", ", fp);
    }
    fputc(obj ? '}' : ']', fp);
    return;
  }
  char *s = cJSON_PrintUnformatted(it);
  fputs(s ? s : "null", fp);
  free(s);
}

static void put_pretty(FILE *fp, const cJSON *it, int indent, int first_col) {
  char *flat = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&flat, &len);
  if (m) {
    put_inline(m, it);
    fclose(m);
  }
  int container = (cJSON_IsObject(it) || cJSON_IsArray(it)) && it->child;
  if (!container || (flat && indent > 0 && (size_t)first_col + len <= 100)) {
    fputs(flat ? flat : "null", fp);
    free(flat);
    return;
  }
  free(flat);
  int obj = cJSON_IsObject(it);
  fprintf(fp, "%c\n", obj ? '{' : '[');
  for (const cJSON *c = it->child; c; c = c->next) {
    int col = indent + 2;
    fprintf(fp, "%*s", col, "");
    if (obj) {
      cJSON *k = cJSON_CreateString(c->string);
      char *ks = cJSON_PrintUnformatted(k);
      fprintf(fp, "%s: ", ks ? ks : "\"\"");
      col += (int)(ks ? strlen(ks) : 2) + 2;
      free(ks);
      cJSON_Delete(k);
    }
    put_pretty(fp, c, indent + 2, col);
    fputs(c->next ? ",\n" : "\n", fp);
  }
  fprintf(fp, "%*s%c", indent, "", obj ? '}' : ']');
}

/* The whole job file's text (malloc'd). */
static char *job_file_text(cJSON *job) {
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "output_dir", "out");
  cJSON_AddNumberToObject(root, "seed", 0);
  cJSON_AddItemToArray(cJSON_AddArrayToObject(root, "jobs"), job);
  char *text = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&text, &len);
  if (m) {
    put_pretty(m, root, 0, 0);
    fputc('\n', m);
    fclose(m);
  }
  cJSON_Delete(root);
  return text;
}

/* ---- writing ---------------------------------------------------------------------------------- */

/* Writes the candidate job file where it is validated: beside -o (so its relative input path
 * resolves the same), or in the temporary folder for stdout. */
static int write_candidate(const init_args *a, const char *text, char **tmp, rd_status *st) {
  int fd;
  if (a->out) {
    *tmp = rd_side_path(a->out, "init");
    if (!*tmp) return rd_fail(st, RD_EFAIL, "out of memory");
    fd = open(*tmp, O_WRONLY | O_CREAT | O_TRUNC, 0666);
  } else {
    const char *td = getenv("TMPDIR");
    size_t n = strlen(td && td[0] ? td : "/tmp") + 40;
    *tmp = malloc(n);
    if (!*tmp) return rd_fail(st, RD_EFAIL, "out of memory");
    snprintf(*tmp, n, "%s/rmdiag-init-XXXXXX.json", td && td[0] ? td : "/tmp");
    fd = mkstemps(*tmp, 5);
  }
  if (fd < 0) return rd_fail(st, RD_EFAIL, "rmdiag init: cannot create %s: %s", *tmp, strerror(errno));
  rd_tmp_register(*tmp);
  size_t len = strlen(text), off = 0;
  while (off < len) {
    ssize_t w = write(fd, text + off, len - off);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) {
      close(fd);
      return rd_fail(st, RD_EFAIL, "rmdiag init: cannot write %s: %s", *tmp, strerror(errno));
    }
    off += (size_t)w;
  }
  close(fd);
  return RD_OK;
}

/* `rmdiag validate` on the candidate (every rank), silently; its message names the job file the
 * user will have rather than the temporary one. */
static int validate_candidate(rd_ctx *ctx, const init_args *a, const char *tmp, rd_status *st) {
  FILE *out = ctx->out;
  int quiet = ctx->quiet;
  ctx->out = NULL;
  ctx->quiet = 1;
  rd_run_flags fl = {.validate_only = 1, .backend = "cpu"};
  rd_cmd_run(ctx, tmp, &fl, st);
  ctx->out = out;
  ctx->quiet = quiet;
  if (st->code == RD_OK) return RD_OK;
  char msg[RD_MSG_MAX];
  const char *at = strstr(st->msg, tmp);
  if (at)
    snprintf(msg, sizeof msg, "%.*s%s%s", (int)(at - st->msg), st->msg, a->out ? a->out : "the job",
             at + strlen(tmp));
  else
    snprintf(msg, sizeof msg, "%s", st->msg);
  return rd_fail(st, st->code, "rmdiag init: the job made from %s does not validate, so nothing was written: %s",
                 a->input, msg);
}

/* Rank 0: the candidate job file from the input (written to *tmp) and its text. */
static int prepare(rd_ctx *ctx, const init_args *a, char **text, char **tmp, rd_status *st) {
  char real[PATH_MAX];
  struct stat si;
  if (!realpath(a->input, real) || stat(real, &si) != 0)
    return rd_fail(st, RD_EINPUT, "rmdiag init: %s: %s", a->input, strerror(errno));
  if (!S_ISREG(si.st_mode)) return rd_fail(st, RD_EINPUT, "rmdiag init: %s is not a regular file", a->input);
  if (a->out) RD_TRY(check_output(a, real, st));
  if (!a->kind->init) return rd_fail(st, RD_EINPUT, "rmdiag init: kind %s has no init", a->kind->name);
  cJSON *job = NULL;
  RD_TRY(make_job(a, real, ctx->err, &job, st));
  if (!(*text = job_file_text(job))) return rd_fail(st, RD_EFAIL, "out of memory");
  return write_candidate(a, *text, tmp, st);
}

int rd_cmd_init(rd_ctx *ctx, int argc, char **argv, rd_status *st) {
  init_args a;
  RD_TRY(init_parse(argc, argv, &a, st));
  if (a.help) {
    if (ctx->out) rd_init_usage(ctx->out);
    return RD_OK;
  }
  char *text = NULL, *tmp = NULL;
  if (ctx->rank == 0) prepare(ctx, &a, &text, &tmp, st);
  if (rd_share_status(ctx, st, 0) == RD_OK) {
    /* every rank validates the same file: its path from rank 0 */
    int64_t n = ctx->rank == 0 ? (int64_t)strlen(tmp) + 1 : 0;
    RD_MPI_CHECK(ctx, MPI_Bcast(&n, 1, MPI_INT64_T, 0, ctx->comm));
    if (ctx->rank != 0 && !(tmp = calloc((size_t)n, 1))) rd_abort(ctx, __FILE__, __LINE__, "out of memory");
    rd_bcast_bytes(ctx, tmp, (size_t)n, 0);
    validate_candidate(ctx, &a, tmp, st);
  }
  if (ctx->rank == 0 && st->code == RD_OK) {
    if (a.out && rd_write_file_atomic(a.out, text, st) == RD_OK && ctx->err)
      fprintf(ctx->err, "rmdiag init: wrote %s (it validates; run it with `rmdiag run %s`)\n", a.out, a.out);
    if (!a.out && ctx->out) fputs(text, ctx->out);
  }
  if (ctx->rank == 0 && tmp) {
    unlink(tmp);
    rd_tmp_unregister(tmp);
  }
  free(tmp);
  free(text);
  return rd_share_status(ctx, st, 0);
}
