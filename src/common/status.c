/* Error status helpers. */
#include "rmdiag/common/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

void rd_status_init(rd_status *st) {
  st->code = RD_OK;
  st->key = INT64_MAX;
  st->msg[0] = '\0';
}

int rd_fail(rd_status *st, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(st->msg, sizeof st->msg, fmt, ap);
  va_end(ap);
  st->code = code;
  st->key = INT64_MAX;
  return code;
}

int rd_fail_at(rd_status *st, int code, int64_t key, const char *fmt, ...) {
  if (st->code != RD_OK && st->key <= key) return st->code;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(st->msg, sizeof st->msg, fmt, ap);
  va_end(ap);
  st->code = code;
  st->key = key;
  return code;
}

void *rd_malloc(size_t n, rd_status *st, const char *what) {
  void *p = malloc(n ? n : 1);
  if (!p) rd_fail(st, RD_EFAIL, "out of memory allocating %zu bytes for %s", n, what);
  return p;
}

void *rd_calloc(size_t n, size_t size, rd_status *st, const char *what) {
  void *p = calloc(n ? n : 1, size ? size : 1);
  if (!p) rd_fail(st, RD_EFAIL, "out of memory allocating %zu x %zu bytes for %s", n, size, what);
  return p;
}

void *rd_malloc_big(size_t n, rd_status *st, const char *what) {
  const size_t huge = (size_t)2 << 20;
  if (n < 2 * huge) return rd_malloc(n, st, what);
  void *p = NULL;
  size_t rounded = (n + huge - 1) / huge * huge;
  if (posix_memalign(&p, huge, rounded) != 0) {
    rd_fail(st, RD_EFAIL, "out of memory allocating %zu bytes for %s", n, what);
    return NULL;
  }
#ifdef MADV_HUGEPAGE
  madvise(p, rounded, MADV_HUGEPAGE);
#endif
  return p;
}
