/* Shared parts of the fuzz harnesses (see fuzz_common.h): scratch folder, container format,
 * the checks after each call. */
#include "fuzz_common.h"

#include <dirent.h>
#include <hdf5.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char g_dir[256];
static FILE *g_log;

static void remove_dir(void) {
  if (!g_dir[0]) return;
  fz_clean();
  rmdir(g_dir);
}

const char *fz_dir(void) {
  if (g_dir[0]) return g_dir;
  /* tmpfs when there is one: importers fsync their outputs, which costs milliseconds on a disk */
  const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  snprintf(g_dir, sizeof g_dir, "%s/rmdiag-fuzz-XXXXXX", base);
  if (!mkdtemp(g_dir)) {
    perror("fuzz: mkdtemp");
    abort();
  }
  atexit(remove_dir);
  return g_dir;
}

const char *fz_path(char *buf, size_t len, const char *name) {
  snprintf(buf, len, "%s/%s", fz_dir(), name);
  return buf;
}

FILE *fz_log(void) {
  if (!g_log) g_log = getenv("RMDIAG_FUZZ_VERBOSE") ? stderr : fopen("/dev/null", "w");
  if (!g_log) abort();
  return g_log;
}

/* ---- the container format ------------------------------------------------------------------------------ */

static const char MARK[] = "%%file ";

/* The offset of the next file marker at or after `from` (a marker starts the input or follows
 * '\n'), or `size`. */
static size_t next_mark(const uint8_t *d, size_t size, size_t from) {
  size_t m = sizeof MARK - 1;
  for (size_t i = from; i + m <= size; i++)
    if ((i == 0 || d[i - 1] == '\n') && memcmp(d + i, MARK, m) == 0) return i;
  return size;
}

static int name_ok(const char *s) {
  if (!*s || strcmp(s, ".") == 0 || strcmp(s, "..") == 0 || strlen(s) > 64) return 0;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '.' ||
          *s == '_' || *s == '-'))
      return 0;
  return 1;
}

/* One argument line, with '@' expanded to the scratch folder. */
static char *expand_arg(const uint8_t *p, size_t n) {
  const char *dir = fz_dir();
  size_t at = 0, dl = strlen(dir);
  for (size_t i = 0; i < n; i++) at += p[i] == '@';
  char *s = malloc(n + at * (dl + 1) + 1), *q = s;
  if (!s) abort();
  for (size_t i = 0; i < n; i++) {
    if (p[i] == '@') {
      memcpy(q, dir, dl);
      q += dl;
      *q++ = '/';
    } else {
      *q++ = (char)p[i];
    }
  }
  *q = '\0';
  return s;
}

int fz_split(const uint8_t *data, size_t size, fz_input *in) {
  memset(in, 0, sizeof *in);
  size_t end = next_mark(data, size, 0);
  size_t args_end = end > 0 && end < size ? end - 1 : end;  /* the '\n' before a marker separates */
  for (size_t i = 0; i < args_end;) {
    size_t j = i;
    while (j < args_end && data[j] != '\n') j++;
    if (memchr(data + i, '\0', j - i)) return fz_input_free(in), -1;  /* argv strings end at NUL */
    if (in->argc == FZ_MAX_ARGS) return fz_input_free(in), -1;
    char *a = expand_arg(data + i, j - i);
    in->argv[in->argc++] = a;
    /* nothing outside the scratch folder: an absolute path only as an HDF5 group, no ".." */
    int group_value = in->argc >= 2 && strcmp(in->argv[in->argc - 2], "--group") == 0;
    if ((a[0] == '/' && strncmp(a, fz_dir(), strlen(fz_dir())) != 0 && !group_value) || strstr(a, ".."))
      return fz_input_free(in), -1;
    i = j + 1;
  }
  while (end < size) {
    size_t name0 = end + sizeof MARK - 1, name1 = name0;
    while (name1 < size && data[name1] != '\n') name1++;
    size_t body0 = name1 < size ? name1 + 1 : size;
    size_t next = next_mark(data, size, body0);
    size_t body1 = next < size ? next - 1 : size;
    if (body1 < body0) body1 = body0;
    if (in->n_files == FZ_MAX_FILES || name1 - name0 > 64) return fz_input_free(in), -1;
    char *name = malloc(name1 - name0 + 1);
    if (!name) abort();
    memcpy(name, data + name0, name1 - name0);
    name[name1 - name0] = '\0';
    in->name[in->n_files] = name;
    in->data[in->n_files] = data + body0;
    in->size[in->n_files] = body1 - body0;
    in->n_files++;
    if (!name_ok(name)) return fz_input_free(in), -1;
    for (int k = 0; k + 1 < in->n_files; k++)
      if (strcmp(in->name[k], name) == 0) return fz_input_free(in), -1;
    end = next;
  }
  return 0;
}

void fz_input_free(fz_input *in) {
  for (int i = 0; i < in->argc; i++) free(in->argv[i]);
  for (int i = 0; i < in->n_files; i++) free(in->name[i]);
  memset(in, 0, sizeof *in);
}

void fz_write_file(const char *name, const uint8_t *data, size_t size) {
  char path[512];
  FILE *fp = fopen(fz_path(path, sizeof path, name), "wb");
  if (!fp || (size && fwrite(data, 1, size, fp) != size) || fclose(fp) != 0) {
    perror("fuzz: writing an input file");
    abort();
  }
}

void fz_write_files(const fz_input *in) {
  for (int i = 0; i < in->n_files; i++) fz_write_file(in->name[i], in->data[i], in->size[i]);
}

void fz_clean(void) {
  DIR *d = opendir(fz_dir());
  if (!d) return;
  struct dirent *e;
  char path[512];
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) unlink(fz_path(path, sizeof path, e->d_name));
  closedir(d);
}

/* ---- the checks ------------------------------------------------------------------------------------------ */

/* Open findings in code that other changes fix (docs/fuzzing.md, "Findings"); remove an entry when
 * its fix lands: its reproducer then passes with RMDIAG_FUZZ_STRICT=1. */
static const char *const KNOWN[] = {
    /* "an-id",  crashes/TARGET-what: the function, what it does wrong */
    NULL,
};

void fz_finding(const char *id, const char *what, const char *msg) {
  static int reported[sizeof KNOWN / sizeof KNOWN[0]];
  if (!getenv("RMDIAG_FUZZ_STRICT"))
    for (size_t i = 0; KNOWN[i]; i++)
      if (strcmp(KNOWN[i], id) == 0) {
        if (!reported[i]++) fprintf(stderr, "fuzz %s: known finding %s: %s (not fatal)\n", what, id, msg);
        return;
      }
  fprintf(stderr, "fuzz %s: %s: %s\n", what, id, msg);
  abort();
}

static void fail(const char *what, const char *msg, const rd_status *st) {
  fprintf(stderr, "fuzz %s: %s (status %d: %s)\n", what, msg, st ? st->code : -1, st ? st->msg : "");
  abort();
}

void fz_check_status(const char *what, int rc, const rd_status *st) {
  if (getenv("RMDIAG_FUZZ_VERBOSE")) fprintf(stderr, "fuzz %s: status %d %s\n", what, st->code, st->msg);
  if (rc != st->code) fail(what, "the return value differs from the status code", st);
  if (st->code == RD_OK) return;
  if (st->code != RD_EINPUT && st->code != RD_EFAIL) fail(what, "unknown status code", st);
  if (!st->msg[0]) fail(what, "an error without a message", st);
  if (st->code == RD_EFAIL && !strstr(st->msg, "out of memory"))
    fail(what, "a bad input must give exit status 2, not 1", st);
}

void fz_check_outputs(const char *what, const fz_input *in, const char *out_name, const rd_status *st) {
  DIR *d = opendir(fz_dir());
  if (!d) fail(what, "the scratch folder is gone", st);
  struct dirent *e;
  int have_out = 0;
  while ((e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    if (out_name && !strcmp(e->d_name, out_name)) {
      have_out = 1;
      continue;
    }
    int is_input = 0;
    for (int i = 0; i < in->n_files; i++) is_input |= !strcmp(e->d_name, in->name[i]);
    if (!is_input) {
      char msg[400];
      snprintf(msg, sizeof msg, "a file that is neither an input nor the output was left behind: %s", e->d_name);
      closedir(d);
      fail(what, msg, st);
    }
  }
  closedir(d);
  /* an input named like the output is refused by the importer, and then stays */
  int out_is_input = 0;
  for (int i = 0; out_name && i < in->n_files; i++) out_is_input |= !strcmp(in->name[i], out_name);
  if (out_name && !out_is_input && have_out != (st->code == RD_OK))
    fail(what, st->code == RD_OK ? "success without an output" : "a failure left an output behind", st);
}

void fz_check_hdf5_closed(const char *what) {
  ssize_t n = H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL);
  if (n != 0) {
    char msg[200];
    snprintf(msg, sizeof msg, "%zd HDF5 objects left open", n);
    fail(what, msg, NULL);
  }
}
