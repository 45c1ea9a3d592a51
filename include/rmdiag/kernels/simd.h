/* The instruction set of the CPU kernels that are written once over a vector of W lanes and built
 * once per width (the benchmark's and leakage's resampled sums): AVX-512 (64-byte vectors), AVX2
 * (32-byte) or the x86-64 baseline (16-byte). Every lane is its own sequential sum, so all widths
 * give the same bits; tests compare them.
 *
 * Why not one 64-byte vector type compiled for every target: GCC keeps a vector wider than the
 * target's registers (64 bytes in a function built for AVX2) in memory, storing the accumulators
 * to the stack and reloading them on every iteration (a store-forwarding stall per vector), which
 * made those loops 3x slower on AVX2-only CPUs such as the AMD EPYC hosts of A100 nodes. */
#ifndef RMDIAG_KERNELS_SIMD_H
#define RMDIAG_KERNELS_SIMD_H

#include <stdint.h>

typedef enum rd_simd_level { RD_SIMD_BASE = 0, RD_SIMD_AVX2 = 1, RD_SIMD_AVX512 = 2 } rd_simd_level;

/* The best level this CPU has (AVX-512 needs F, DQ, BW and VL; AVX2 needs FMA too), the level a
 * name says ("avx512", "avx2", anything else base), and the best level or a lower one that
 * RMDIAG_SIMD asks for. The probe's kernels choose theirs the same way from RMDIAG_PROBE_SIMD. */
rd_simd_level rd_simd_best(void);
rd_simd_level rd_simd_named(const char *name);
rd_simd_level rd_simd(void);
const char *rd_simd_name(rd_simd_level level);
/* Tests: use `name` from now on; -1 (and the best level below it) when the CPU lacks it. */
int rd_simd_set(const char *name);

/* Function attributes for the versions of each level (empty off x86-64, where rd_simd() is base). */
#if defined(__x86_64__) && defined(__GNUC__)
#define RD_TARGET_AVX2 __attribute__((target("avx2")))
#define RD_TARGET_AVX512 __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl")))
#else
#define RD_TARGET_AVX2
#define RD_TARGET_AVX512
#endif

/* Vectors of each width (loads and stores need only the element's alignment). */
typedef double rd_vd8 __attribute__((vector_size(64), aligned(8)));
typedef double rd_vd4 __attribute__((vector_size(32), aligned(8)));
typedef double rd_vd2 __attribute__((vector_size(16), aligned(8)));
typedef int16_t rd_vh32 __attribute__((vector_size(64), aligned(2)));
typedef int16_t rd_vh16 __attribute__((vector_size(32), aligned(2)));
typedef int16_t rd_vh8 __attribute__((vector_size(16), aligned(2)));
typedef uint8_t rd_vb64 __attribute__((vector_size(64), aligned(1)));
typedef uint8_t rd_vb32 __attribute__((vector_size(32), aligned(1)));
typedef uint8_t rd_vb16 __attribute__((vector_size(16), aligned(1)));
typedef uint8_t rd_vb8 __attribute__((vector_size(8), aligned(1)));

#endif
