/* Fast scans for input checks: whole arrays are checked in vectorized passes, and only a hit is
 * located precisely. */
#ifndef RMDIAG_SCAN_H
#define RMDIAG_SCAN_H

#include <stdint.h>

/* Index of the first NaN or infinity, or -1. */
int64_t rd_first_nonfinite_f32(const float *x, int64_t n);
int64_t rd_first_nonfinite_f64(const double *x, int64_t n);
/* Index of the first byte above `max`, or -1. */
int64_t rd_first_above_u8(const uint8_t *x, int64_t n, uint8_t max);

#endif
