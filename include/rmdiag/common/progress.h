/* Progress of long work on stderr (rank 0): a bar on a terminal, a line every few seconds
 * otherwise, nothing for work that ends quickly. */
#ifndef RMDIAG_PROGRESS_H
#define RMDIAG_PROGRESS_H

#include <stdint.h>
#include <stdio.h>

typedef struct rd_progress {
  FILE *fp;          /* NULL: silent */
  const char *job, *phase;
  int64_t total;
  double t_start, t_last;
  int tty, shown;
} rd_progress;

void rd_progress_begin(rd_progress *p, FILE *fp, const char *job, const char *phase, int64_t total);
void rd_progress_update(rd_progress *p, int64_t done);
void rd_progress_end(rd_progress *p);

double rd_now(void);  /* monotonic seconds */

/* Phase timings on stderr (rank 0) when RMDIAG_TIMING=1: a debugging and benchmarking aid. */
void rd_timing_mark(int rank, const char *job, const char *phase);

#endif
