/* A main() for the harnesses where libFuzzer is not linked (gcc builds, plain clang builds): runs
 * LLVMFuzzerTestOneInput once on every file named on the command line, or in a folder named there,
 * so the seed corpora and reproducers run as ordinary tests in every build. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static int run_file(const char *path) {
  FILE *fp = fopen(path, "rb");
  if (!fp) {
    perror(path);
    return 1;
  }
  size_t cap = 1 << 16, n = 0;
  uint8_t *buf = malloc(cap);
  for (size_t r; buf && (r = fread(buf + n, 1, cap - n, fp)) > 0;) {
    n += r;
    if (n == cap) buf = realloc(buf, cap *= 2);
  }
  fclose(fp);
  if (!buf) return 1;
  /* an exact-size copy, so that a read past the end is seen by the sanitizers as under libFuzzer */
  uint8_t *exact = malloc(n ? n : 1);
  if (!exact) return 1;
  memcpy(exact, buf, n);
  free(buf);
  fprintf(stderr, "replay: %s (%zu bytes)\n", path, n);
  LLVMFuzzerTestOneInput(exact, n);
  free(exact);
  return 0;
}

static int cmp_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Every file of a folder, in name order (the same order on every machine). */
static int run_dir(const char *dir, int *count) {
  DIR *d = opendir(dir);
  if (!d) return 1;
  char **names = NULL;
  size_t n = 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    names = realloc(names, sizeof *names * (n + 1));
    names[n++] = strdup(e->d_name);
  }
  closedir(d);
  qsort(names, n, sizeof *names, cmp_names);
  int rc = 0;
  for (size_t i = 0; i < n; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    rc |= run_file(path);
    (*count)++;
    free(names[i]);
  }
  free(names);
  return rc;
}

int main(int argc, char **argv) {
  if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
  int rc = 0, count = 0;
  for (int i = 1; i < argc; i++) {
    struct stat sb;
    if (argv[i][0] == '-') continue;  /* libFuzzer flags, ignored here */
    if (stat(argv[i], &sb) != 0) {
      perror(argv[i]);
      rc = 1;
    } else if (S_ISDIR(sb.st_mode)) {
      rc |= run_dir(argv[i], &count);
    } else {
      rc |= run_file(argv[i]);
      count++;
    }
  }
  fprintf(stderr, "replay: %d inputs, %s\n", count, rc ? "some could not be read" : "all ran");
  return rc || count == 0;
}
