/* A tiny assertion counter for the C tests: every CHECK is counted, failures are printed with
 * file and line, and the test's exit status is the number of failures (capped). */
#ifndef RMDIAG_TEST_CHECK_H
#define RMDIAG_TEST_CHECK_H

#include <math.h>
#include <stdio.h>

static int t_checks, t_failures;

#define CHECK(cond, ...)                                          \
  do {                                                            \
    t_checks++;                                                   \
    if (!(cond)) {                                                \
      t_failures++;                                               \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);        \
      fprintf(stderr, __VA_ARGS__);                               \
      fprintf(stderr, "\n");                                      \
    }                                                             \
  } while (0)

#define CHECK_CLOSE(a, b, rel, what)                                                          \
  do {                                                                                        \
    double ca_ = (a), cb_ = (b);                                                              \
    CHECK(fabs(ca_ - cb_) <= (rel) * fmax(fabs(ca_), fabs(cb_)) + 1e-300, "%s: %.17g vs %.17g", \
          (what), ca_, cb_);                                                                  \
  } while (0)

static int t_finish(const char *name) {
  printf("%s: %d checks, %d failed\n", name, t_checks, t_failures);
  return t_failures ? 1 : 0;
}

#endif
