/* Vectorized input scans (see scan.h): blocks are tested with a branch-free OR over the
 * exponent bits; the first offending block is then searched element by element. */
#include "rmdiag/kernels/scan.h"

#include <string.h>

#define SCAN_BLOCK 4096

/* The cloned scans are static, called through plain external functions: clang resolves a clone set
 * only for functions with internal linkage. */
#define FIRST_NONFINITE(NAME, T, U, EXP)                                         \
  __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))            \
  static int64_t NAME##_scan(const T *x, int64_t n) {                            \
    for (int64_t b = 0; b < n; b += SCAN_BLOCK) {                                \
      int64_t e = b + SCAN_BLOCK < n ? b + SCAN_BLOCK : n;                       \
      U any = 0;                                                                 \
      for (int64_t i = b; i < e; i++) {                                          \
        U u;                                                                     \
        memcpy(&u, &x[i], sizeof u);                                             \
        any |= (U)((u & EXP) == EXP);                                            \
      }                                                                          \
      if (!any) continue;                                                        \
      for (int64_t i = b; i < e; i++) {                                          \
        U u;                                                                     \
        memcpy(&u, &x[i], sizeof u);                                             \
        if ((u & EXP) == EXP) return i;                                          \
      }                                                                          \
    }                                                                            \
    return -1;                                                                   \
  }                                                                              \
  int64_t NAME(const T *x, int64_t n) { return NAME##_scan(x, n); }

FIRST_NONFINITE(rd_first_nonfinite_f32, float, uint32_t, 0x7f800000u)
FIRST_NONFINITE(rd_first_nonfinite_f64, double, uint64_t, 0x7ff0000000000000ull)

__attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
static int64_t first_above_u8(const uint8_t *x, int64_t n, uint8_t max) {
  for (int64_t b = 0; b < n; b += SCAN_BLOCK) {
    int64_t e = b + SCAN_BLOCK < n ? b + SCAN_BLOCK : n;
    uint8_t any = 0;
    for (int64_t i = b; i < e; i++) any |= (uint8_t)(x[i] > max);
    if (!any) continue;
    for (int64_t i = b; i < e; i++)
      if (x[i] > max) return i;
  }
  return -1;
}

int64_t rd_first_above_u8(const uint8_t *x, int64_t n, uint8_t max) { return first_above_u8(x, n, max); }
