/* Error status passed up the stack: an exit code and a message naming file, dataset or key,
 * index and what was expected. Library code fills it; only the top level decides to exit. */
#ifndef RMDIAG_STATUS_H
#define RMDIAG_STATUS_H

#include <stddef.h>
#include <stdint.h>

enum {
  RD_OK = 0,
  RD_EFAIL = 1,  /* any other failure (I/O, memory, device) */
  RD_EINPUT = 2  /* bad usage, bad job file or bad input: nothing is written */
};

#define RD_MSG_MAX 2048

typedef struct rd_status {
  int code;              /* RD_OK, RD_EFAIL or RD_EINPUT */
  int64_t key;           /* global ordering key of the offending item (INT64_MAX when none) */
  char msg[RD_MSG_MAX];
} rd_status;

void rd_status_init(rd_status *st);
/* Sets code and a printf-style message; returns code so callers can `return rd_fail(...)`. */
int rd_fail(rd_status *st, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Like rd_fail, but keeps the error with the lowest key when several are found. */
int rd_fail_at(rd_status *st, int code, int64_t key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Returns (from the calling function) when `expr` (an int status) is not RD_OK. */
#define RD_TRY(expr)                 \
  do {                               \
    int rd_try_rc_ = (expr);         \
    if (rd_try_rc_ != RD_OK) return rd_try_rc_; \
  } while (0)

/* Allocation that reports failure through the status instead of crashing. */
void *rd_malloc(size_t n, rd_status *st, const char *what);
void *rd_calloc(size_t n, size_t size, rd_status *st, const char *what);
/* Large buffers (row blocks): 2 MiB aligned and backed by transparent huge pages where the
 * kernel allows, which saves most page faults when a block is first filled. Free with free(). */
void *rd_malloc_big(size_t n, rd_status *st, const char *what);

#endif
