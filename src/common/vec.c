/* Growable arrays (see vec.h). The pointer is read and written through memcpy so that one function
 * serves arrays of every element type without breaking C's aliasing rules. */
#include "rmdiag/common/vec.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The capacity that holds `need`: doubled from max(cap, 64), or 0 when that would overflow. */
static size_t grown_cap(size_t cap, size_t need, size_t elem) {
  size_t c = cap < 64 ? 64 : cap;
  while (c < need) {
    if (c > SIZE_MAX / 2) return 0;
    c *= 2;
  }
  return c > SIZE_MAX / (elem ? elem : 1) ? 0 : c;
}

static int realloc_at(void *array_ptr, size_t n, size_t elem) {
  void *p;
  memcpy(&p, array_ptr, sizeof p);
  size_t bytes = n * elem;
  void *q = realloc(p, bytes ? bytes : 1);
  if (!q) return -1;
  memcpy(array_ptr, &q, sizeof q);
  return 0;
}

int rd_vec_reserve(void *array_ptr, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return 0;
  size_t c = grown_cap(*cap, need, elem);
  if (c == 0 || realloc_at(array_ptr, c, elem) != 0) return -1;
  *cap = c;
  return 0;
}

int rd_vec_reserve_n(void *const *array_ptrs, const size_t *elems, int n, size_t *cap, size_t need) {
  if (need <= *cap) return 0;
  size_t c = *cap;
  for (int k = 0; k < n; k++) {
    size_t ck = grown_cap(*cap, need, elems[k]);
    if (ck == 0 || realloc_at(array_ptrs[k], ck, elems[k]) != 0) return -1;
    c = ck;
  }
  *cap = c;
  return 0;
}
