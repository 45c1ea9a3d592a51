/* Exact widening of IEEE binary16 and bfloat16 to binary32 (features stored in half precision). */
#ifndef RMDIAG_KERNELS_HALFFLOAT_H
#define RMDIAG_KERNELS_HALFFLOAT_H

#include <stdint.h>

float rd_half_to_float(uint16_t h);
float rd_bf16_to_float(uint16_t h);

#endif
