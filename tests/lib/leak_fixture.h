/* A bootstrap and a null input for the leakage kernel tests: cells of 0, 1, 2, 3, 57 and 1201 rows (the
 * generator's batches are 64 draws), null targets of 0..300 months with 1 to 5 siblings' bits. */
#ifndef RMDIAG_TEST_LEAK_FIXTURE_H
#define RMDIAG_TEST_LEAK_FIXTURE_H

#include <stdlib.h>

#include "rmdiag/kernels/leak.h"
#include "rmdiag/kernels/rng.h"

typedef struct leak_fixture {
  rd_leak_boot boot;
  rd_leak_null null;
  int64_t row_off[7], month_off[6];
  uint64_t cell_id[6], target_id[5];
  double *rows;
  uint32_t *avail, *hit;
} leak_fixture;

static void leak_fixture_make(leak_fixture *f, int64_t B, int64_t P) {
  static const int64_t sizes[6] = {0, 1, 2, 3, 57, 1201}, months[5] = {0, 1, 63, 64, 300};
  rd_stream s;
  rd_stream_init(&s, 1, "fixture", "leak");
  f->row_off[0] = 0;
  for (int c = 0; c < 6; c++) {
    f->row_off[c + 1] = f->row_off[c] + sizes[c];
    f->cell_id[c] = 1000 + 7 * (uint64_t)c;
  }
  f->rows = aligned_alloc(64, sizeof(double) * 8 * (size_t)f->row_off[6]);
  for (int c = 0; c < 6; c++) {
    int64_t n = sizes[c];
    double me = 0, mt = 0, *e = malloc(sizeof(double) * (size_t)(n ? n : 1)), *t = malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) {
      t[i] = 6.0 * rd_rng_uniform(&s, (uint64_t)c, (uint64_t)(2 * i)) - 3.0;
      e[i] = (c == 3) ? 0.7 : t[i] + rd_rng_uniform(&s, (uint64_t)c, (uint64_t)(2 * i + 1)) - 0.5;  /* cell 3: no spread */
      me += e[i];
      mt += t[i];
    }
    if (n) me /= (double)n, mt /= (double)n;
    for (int64_t i = 0; i < n; i++) {
      double *r = f->rows + 8 * (f->row_off[c] + i), de = e[i] - me, dt = t[i] - mt;
      r[0] = de, r[1] = dt, r[2] = de * de, r[3] = dt * dt, r[4] = de * dt, r[5] = fabs(e[i] - t[i]), r[6] = r[7] = 0;
    }
    free(e), free(t);
  }
  f->boot = (rd_leak_boot){.n_cells = 6, .B = B, .row_off = f->row_off, .rows = f->rows, .cell_id = f->cell_id,
                           .stream = s};
  f->month_off[0] = 0;
  for (int t = 0; t < 5; t++) {
    f->month_off[t + 1] = f->month_off[t] + months[t];
    f->target_id[t] = 77 + (uint64_t)t;
  }
  int64_t nm = f->month_off[5];
  f->avail = malloc(sizeof(uint32_t) * (size_t)nm);
  f->hit = malloc(sizeof(uint32_t) * (size_t)nm);
  for (int64_t i = 0; i < nm; i++) {
    f->avail[i] = (uint32_t)(rd_rng_u64(&s, 99, (uint64_t)i) & 0x1f);
    f->hit[i] = f->avail[i] & (uint32_t)(rd_rng_u64(&s, 98, (uint64_t)i) & 0x1f);
  }
  f->null = (rd_leak_null){.n_targets = 5, .P = P, .n_sib = 5, .month_off = f->month_off, .avail = f->avail,
                           .hit = f->hit, .target_id = f->target_id, .stream = {{s.key[1], s.key[0]}}};
}

static void leak_fixture_free(leak_fixture *f) {
  free(f->rows);
  free(f->avail);
  free(f->hit);
}

#endif
