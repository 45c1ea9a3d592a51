/* Exact widening of half-precision floats (IEEE binary16, bfloat16) to binary32. */
#include "rmdiag/kernels/halffloat.h"

#include <string.h>

float rd_half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 0x1Fu, f = h & 0x3FFu, bits;
  if (e == 0) {
    if (f == 0) {
      bits = sign;
    } else { /* subnormal: f · 2^-24, exact in binary32 */
      float v = (float)f * 0x1p-24f;
      memcpy(&bits, &v, sizeof bits);
      bits |= sign;
    }
  } else if (e == 31) {
    bits = sign | 0x7F800000u | (f << 13);
  } else {
    bits = sign | ((e - 15 + 127) << 23) | (f << 13);
  }
  float out;
  memcpy(&out, &bits, sizeof out);
  return out;
}

float rd_bf16_to_float(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16;
  float out;
  memcpy(&out, &bits, sizeof out);
  return out;
}
