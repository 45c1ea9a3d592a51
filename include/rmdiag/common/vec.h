/* Growable arrays: the one idiom every importer uses to make room before appending, for a single
 * array or for parallel arrays that share one capacity. */
#ifndef RMDIAG_COMMON_VEC_H
#define RMDIAG_COMMON_VEC_H

#include <stddef.h>

/* Makes room for at least `need` elements of `elem` bytes in the array whose pointer is at `array_ptr`
 * (the address of a T * variable) with capacity *cap (in elements). The capacity doubles from 64, so
 * appending one element at a time costs amortised O(1). Returns 0, or -1 when memory runs out (the
 * array and *cap are then unchanged). */
int rd_vec_reserve(void *array_ptr, size_t *cap, size_t need, size_t elem);

/* The same for `n` parallel arrays (array_ptrs[k] the address of the k-th pointer, elems[k] its
 * element size) sharing the capacity *cap: either every array grows or *cap is unchanged (arrays that
 * did grow keep their larger allocation, which is harmless). */
int rd_vec_reserve_n(void *const *array_ptrs, const size_t *elems, int n, size_t *cap, size_t need);

/* rd_vec_reserve for a typed pointer variable: RD_VEC_RESERVE(rows, cap, n + 1). */
#define RD_VEC_RESERVE(ptr, cap, need) rd_vec_reserve(&(ptr), &(cap), (need), sizeof *(ptr))

#endif
