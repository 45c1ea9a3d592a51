/* Progress lines on stderr. */
#include "rmdiag/common/progress.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

double rd_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Nothing is shown for work that ends within the first second; then a bar redrawn at most
 * ten times a second on a terminal, or a plain line every ten seconds in a log. */
#define PROGRESS_DELAY 1.0
#define PROGRESS_TTY_EVERY 0.1
#define PROGRESS_LOG_EVERY 10.0

/* RMDIAG_PROGRESS_SECONDS overrides the first delay and the log interval (tests, slow jobs). */
static double every_override(void) {
  const char *e = getenv("RMDIAG_PROGRESS_SECONDS");
  double v = e ? atof(e) : 0.0;
  return v > 0.0 ? v : 0.0;
}

void rd_progress_begin(rd_progress *p, FILE *fp, const char *job, const char *phase, int64_t total) {
  p->fp = fp;
  p->job = job;
  p->phase = phase;
  p->total = total;
  p->t_start = p->t_last = rd_now();
  p->tty = fp ? isatty(fileno(fp)) : 0;
  p->shown = 0;
}

void rd_progress_update(rd_progress *p, int64_t done) {
  if (!p->fp) return;
  double t = rd_now(), o = every_override();
  if (t - p->t_start < (o > 0.0 ? o : PROGRESS_DELAY)) return;
  if (t - p->t_last < (p->tty ? PROGRESS_TTY_EVERY : (o > 0.0 ? o : PROGRESS_LOG_EVERY)) && p->shown) return;
  p->t_last = t;
  p->shown = 1;
  if (p->total > 0 && done > p->total) done = p->total;  /* (a rank's share was estimated; tasks are handed out) */
  double frac = p->total > 0 ? (double)done / (double)p->total : 0.0;
  if (p->tty) {
    char bar[31];
    int filled = (int)(frac * 30.0);
    for (int i = 0; i < 30; i++) bar[i] = i < filled ? '#' : '.';
    bar[30] = '\0';
    fprintf(p->fp, "\r[rmdiag] %s: %s [%s] %5.1f%% %6.1fs", p->job, p->phase, bar, 100.0 * frac, t - p->t_start);
  } else {
    fprintf(p->fp, "[rmdiag] %s: %s %lld/%lld (%.1f%%), %.1fs\n", p->job, p->phase, (long long)done,
            (long long)p->total, 100.0 * frac, t - p->t_start);
  }
  fflush(p->fp);
}

void rd_progress_end(rd_progress *p) {
  if (p->fp && p->tty && p->shown) {
    fprintf(p->fp, "\r%*s\r", 100, "");
    fflush(p->fp);
  }
}

void rd_timing_mark(int rank, const char *job, const char *phase) {
  static double last = 0.0;
  static int enabled = -1;
  if (enabled < 0) {
    const char *e = getenv("RMDIAG_TIMING");
    enabled = !e || strcmp(e, "0") == 0 ? 0 : strcmp(e, "all") == 0 ? 2 : 1;
  }
  if (!enabled || (enabled == 1 && rank != 0)) return;
  double t = rd_now();
  if (last > 0.0 && phase && enabled == 2)
    fprintf(stderr, "[timing] rank %d %s: %-24s %8.4f s\n", rank, job, phase, t - last);
  else if (last > 0.0 && phase)
    fprintf(stderr, "[timing] %s: %-24s %8.4f s\n", job, phase, t - last);
  last = t;
}
