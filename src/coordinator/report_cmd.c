/* Reading finished reports back (their kind's view, their .h5 for figures) and `rmdiag report PATH... -o
 * FILE.html`: report files and output folders into one self-contained page. Rank 0 only. */
#include <dirent.h>
#include <errno.h>
#include <hdf5.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "report_internal.h"
#include "rmdiag/common/files.h"
#include "rmdiag/common/h5in.h"
#include "rmdiag/common/jsonutil.h"

#define RD_REPORT_MAX_BYTES (1LL << 30)

void rd_report_usage(FILE *fp) {
  fprintf(fp, "usage: rmdiag report PATH... -o FILE.html\n"
              "Writes one self-contained HTML page (it opens offline) with the tables, figures, warnings and\n"
              "provenance of finished reports: each PATH is a report NAME.json (its NAME.h5 beside it) or an output\n"
              "folder (every report in it, by name). See docs/reference.md, 'Reading reports'.\n\n"
              "options:\n"
              "    -o, --output FILE.html   the page to write (replaced atomically)\n");
}

static char *read_text(const char *path, size_t *len, rd_status *st) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    rd_fail(st, RD_EINPUT, "%s: cannot open the report: %s", path, strerror(errno));
    return NULL;
  }
  struct stat sb;
  if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size > RD_REPORT_MAX_BYTES) {
    fclose(f);
    rd_fail(st, RD_EINPUT, "%s: not a regular file of at most 1 GiB (expected a report NAME.json)", path);
    return NULL;
  }
  char *buf = malloc((size_t)sb.st_size + 1);
  size_t n = buf ? fread(buf, 1, (size_t)sb.st_size, f) : 0;
  fclose(f);
  if (!buf || n != (size_t)sb.st_size) {
    free(buf);
    rd_fail(st, RD_EINPUT, "%s: cannot read the report", path);
    return NULL;
  }
  buf[n] = '\0';
  *len = n;
  return buf;
}

/* The .h5 must be the one written with this report: the same spec_sha256 attribute. */
static int check_h5(rd_loaded *r, rd_status *st) {
  struct stat sb;
  if (stat(r->h5, &sb) != 0)
    return rd_fail(st, RD_EINPUT, "%s: no such file: rmdiag report draws the figures of %s from the .h5 written with "
                   "it", r->h5, r->path);
  hid_t f;
  RD_TRY(rd_h5_open(r->h5, MPI_COMM_NULL, &f, st));
  char spec[128] = "";
  int has = rd_h5_read_attr_string(f, "/", "spec_sha256", spec, sizeof spec);
  rd_h5_close(f);
  const char *want = rd_jstr(rd_jget(r->report, "rmdiag.spec_sha256"));
  if (!has || strcmp(spec, want) != 0)
    return rd_fail(st, RD_EINPUT, "%s: its spec_sha256 (%s) is not the report's (%s): the .h5 and %s were not written "
                   "together", r->h5, has ? spec : "none", want, r->path);
  return RD_OK;
}

int rd_report_load(const char *path, int figures, rd_loaded *r, rd_status *st) {
  memset(r, 0, sizeof *r);
  rd_view_init(&r->view);
  size_t len = 0;
  char *text = read_text(path, &len, st);
  if (!text) return st->code;
  r->path = strdup(path);
  r->report = rd_json_parse(text, len, path, st);
  free(text);
  if (!r->report) return st->code;
  const char *kind = rd_jstr(rd_jget(r->report, "rmdiag.kind"));
  if (!cJSON_IsObject(cJSON_GetObjectItem(r->report, "result")) || !*kind)
    return rd_fail(st, RD_EINPUT, "%s: not an rmdiag report (expected {\"rmdiag\": {..., \"kind\"}, \"result\": {...}}; "
                   "see docs/reference.md, 'Report envelope')", path);
  if (cJSON_GetObjectItem(rd_jget(r->report, "result"), "groups") && cJSON_GetObjectItem(rd_jget(r->report, "result"),
                                                                                       "sweep"))
    return rd_fail(st, RD_EINPUT, "%s: a sweep summary (docs/reference.md, 'The job file'): rmdiag table and report read "
                   "the reports of the sweep's jobs", path);
  r->kind = rd_kind_find(kind);
  if (!r->kind || !r->kind->view)
    return rd_fail(st, RD_EINPUT, "%s: unknown report kind \"%s\"", path, kind);
  size_t n = strlen(path);
  r->h5 = malloc(n + 4);
  if (!r->h5) return rd_fail(st, RD_EFAIL, "out of memory");
  memcpy(r->h5, path, n + 1);
  if (n > 5 && strcmp(path + n - 5, ".json") == 0) r->h5[n - 5] = '\0';
  strcat(r->h5, ".h5");
  if (figures) RD_TRY(check_h5(r, st));
  if (r->kind->view(r->report, figures ? r->h5 : NULL, &r->view, st) != RD_OK) {
    /* the kind's message names what it missed; say which file */
    char msg[RD_MSG_MAX];
    snprintf(msg, sizeof msg, "%s", st->msg);
    if (!strstr(msg, path)) rd_fail(st, st->code, "%s: %s", path, msg);
    return st->code;
  }
  return RD_OK;
}

void rd_report_free(rd_loaded *r) {
  free(r->path);
  free(r->h5);
  cJSON_Delete(r->report);
  rd_view_free(&r->view);
  memset(r, 0, sizeof *r);
}

static int name_cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* A folder's reports: NAME.json files (not hidden), by name; sweep summaries (NAME.summary.json: no .h5, no
 * figures) are left out. */
static int folder_reports(const char *dir, char ***out, int *n, rd_status *st) {
  DIR *d = opendir(dir);
  if (!d) return rd_fail(st, RD_EINPUT, "%s: cannot read the folder: %s", dir, strerror(errno));
  char **names = NULL;
  int k = 0;
  for (struct dirent *e; (e = readdir(d));) {
    size_t len = strlen(e->d_name);
    if (e->d_name[0] == '.' || len < 6 || strcmp(e->d_name + len - 5, ".json") != 0) continue;
    if (len > 13 && strcmp(e->d_name + len - 13, ".summary.json") == 0) continue;
    char **nn = realloc(names, sizeof(char *) * (size_t)(k + 1));
    char *p = malloc(strlen(dir) + len + 2);
    if (!nn || !p) {
      free(p);
      names = nn ? nn : names;
      break;
    }
    names = nn;
    sprintf(p, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", e->d_name);
    names[k++] = p;
  }
  closedir(d);
  qsort(names, (size_t)k, sizeof(char *), name_cmp);
  *out = names;
  *n = k;
  return RD_OK;
}

typedef struct report_args {
  const char *out;
  const char **paths;
  int n_paths;
} report_args;

static int report_parse(int argc, char **argv, report_args *a, rd_status *st) {
  a->paths = calloc((size_t)argc, sizeof(char *));
  if (!a->paths) return rd_fail(st, RD_EFAIL, "out of memory");
  for (int i = 2; i < argc; i++) {
    const char *s = argv[i];
    if (strcmp(s, "-o") == 0 || strcmp(s, "--output") == 0) {
      if (i + 1 >= argc) return rd_fail(st, RD_EINPUT, "rmdiag report: %s needs a file name (FILE.html)", s);
      a->out = argv[++i];
    } else if (strncmp(s, "--output=", 9) == 0) {
      a->out = s + 9;
    } else if (s[0] == '-' && s[1]) {
      return rd_fail(st, RD_EINPUT, "rmdiag report: unknown option %s (see rmdiag report --help)", s);
    } else {
      a->paths[a->n_paths++] = s;
    }
  }
  if (!a->n_paths) return rd_fail(st, RD_EINPUT, "rmdiag report: missing PATH (a report NAME.json or an output folder)");
  if (!a->out || !*a->out) return rd_fail(st, RD_EINPUT, "rmdiag report: missing -o FILE.html");
  struct stat sb;
  if (stat(a->out, &sb) == 0 && S_ISDIR(sb.st_mode))
    return rd_fail(st, RD_EINPUT, "rmdiag report: -o %s is a folder, expected a file path", a->out);
  char *dir = strdup(a->out);
  if (!dir) return rd_fail(st, RD_EFAIL, "out of memory");
  char *slash = strrchr(dir, '/');
  const char *folder = slash ? (slash == dir ? "/" : (*slash = '\0', dir)) : ".";
  if (stat(folder, &sb) != 0 || !S_ISDIR(sb.st_mode)) rd_fail(st, RD_EINPUT, "rmdiag report: -o %s: the folder %s does "
                                                              "not exist", a->out, folder);
  free(dir);
  return st->code;
}

/* Every report named by the paths, in order (folders expanded by name). */
static int load_all(const report_args *a, rd_loaded **out, int *n_out, rd_status *st) {
  rd_loaded *r = NULL;
  int n = 0;
  for (int i = 0; i < a->n_paths && st->code == RD_OK; i++) {
    struct stat sb;
    char **files = NULL;
    int nf = 0, from_folder = stat(a->paths[i], &sb) == 0 && S_ISDIR(sb.st_mode);
    if (from_folder) {
      if (folder_reports(a->paths[i], &files, &nf, st) != RD_OK) break;
    } else {
      files = malloc(sizeof(char *));
      if (files) files[nf++] = strdup(a->paths[i]);
    }
    for (int k = 0; k < nf; k++) {
      if (st->code == RD_OK) {
        rd_loaded *rr = realloc(r, sizeof *r * (size_t)(n + 1));
        if (!rr) rd_fail(st, RD_EFAIL, "out of memory");
        else if (r = rr, rd_report_load(files[k], 1, &r[n], st) == RD_OK) n++;
        else rd_report_free(&r[n]);
      }
      free(files[k]);
    }
    free(files);
    if (from_folder && nf == 0 && st->code == RD_OK)
      rd_fail(st, RD_EINPUT, "%s: no report (NAME.json) in this folder", a->paths[i]);
  }
  *out = r;
  *n_out = n;
  return st->code;
}

/* Warnings across reports of one kind (probe: the two training modes on the same features). */
static void cross_warnings(const rd_loaded *r, int n, rd_view *cross) {
  for (const rd_kind *const *k = rd_kinds(); *k; k++) {
    if (!(*k)->compare) continue;
    const cJSON **reps = malloc(sizeof(cJSON *) * (size_t)(n ? n : 1));
    int m = 0;
    for (int i = 0; reps && i < n; i++)
      if (r[i].kind == *k) reps[m++] = r[i].report;
    if (m > 1) (*k)->compare(reps, m, cross);
    free(reps);
  }
}

int rd_cmd_report(rd_ctx *ctx, int argc, char **argv, rd_status *st) {
  for (int i = 2; i < argc; i++)
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      if (ctx->out) rd_report_usage(ctx->out);
      return RD_OK;
    }
  report_args a;
  memset(&a, 0, sizeof a);
  rd_loaded *r = NULL;
  int n = 0;
  if (ctx->rank == 0 && report_parse(argc, argv, &a, st) == RD_OK && load_all(&a, &r, &n, st) == RD_OK) {
    rd_view cross;
    rd_view_init(&cross);
    cross_warnings(r, n, &cross);
    char *html = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&html, &len);
    if (!mem) {
      rd_fail(st, RD_EFAIL, "out of memory");
    } else {
      rd_html_write(mem, r, n, &cross);
      fclose(mem);
      if (rd_write_file_atomic(a.out, html, st) == RD_OK) {
        for (int i = 0; i < cross.n_warnings && ctx->err; i++) fprintf(ctx->err, "rmdiag: warning: %s\n", cross.warnings[i]);
        if (ctx->out) fprintf(ctx->out, "%s: %d report%s, %zu bytes\n", a.out, n, n == 1 ? "" : "s", len);
      }
    }
    free(html);
    rd_view_free(&cross);
  }
  for (int i = 0; i < n; i++) rd_report_free(&r[i]);
  free(r);
  free(a.paths);
  return rd_share_status(ctx, st, 0);
}
