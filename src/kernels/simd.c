/* The instruction set of the per-width kernels (see simd.h). */
#include "rmdiag/kernels/simd.h"

#include <stdlib.h>
#include <string.h>

static int chosen = -1;

rd_simd_level rd_simd_best(void) {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl"))
    return RD_SIMD_AVX512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return RD_SIMD_AVX2;
#endif
  return RD_SIMD_BASE;
}

rd_simd_level rd_simd_named(const char *name) {
  if (strcmp(name, "avx512") == 0) return RD_SIMD_AVX512;
  if (strcmp(name, "avx2") == 0) return RD_SIMD_AVX2;
  return RD_SIMD_BASE;
}

rd_simd_level rd_simd(void) {
  if (chosen < 0) {
    rd_simd_level b = rd_simd_best();
    const char *want = getenv("RMDIAG_SIMD");
    rd_simd_level w = want ? rd_simd_named(want) : b;
    chosen = (int)(w < b ? w : b);
  }
  return (rd_simd_level)chosen;
}

const char *rd_simd_name(rd_simd_level level) {
  return level == RD_SIMD_AVX512 ? "avx512" : level == RD_SIMD_AVX2 ? "avx2" : "base";
}

int rd_simd_set(const char *name) {
  rd_simd_level b = rd_simd_best(), w = rd_simd_named(name);
  chosen = (int)(w < b ? w : b);
  return w <= b ? 0 : -1;
}
