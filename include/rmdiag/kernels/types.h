/* Types the kernels share with the rest of the program. */
#ifndef RMDIAG_KERNELS_TYPES_H
#define RMDIAG_KERNELS_TYPES_H

/* A float array in its stored precision. */
typedef enum rd_ftype { RD_F32 = 0, RD_F64 = 1 } rd_ftype;

#endif
