/* leakage, rank 0: the output datasets that make the per-row outputs joinable without the input: the parsed
 * estimate and the month of every panel row (docs/reference.md, 'leakage report'). */
#include <math.h>
#include <stdlib.h>

#include "leak_internal.h"
#include "rmdiag/common/h5out.h"

int leak_write_joins(hid_t h5, const leak_work *w, rd_status *st) {
  const leak_data *d = w->d;
  int64_t Q = d->Q, dims[1] = {Q};
  double *est = malloc(sizeof(double) * (size_t)(Q ? Q : 1));
  if (!est) return rd_fail(st, RD_EFAIL, "out of memory");
  for (int64_t i = 0; i < Q; i++) est[i] = d->status[i] == 0 ? d->value[i] : NAN;
  int rc = rd_h5_write_f64(h5, "/leak/estimate", 1, dims, est, st);
  free(est);
  if (rc == RD_OK) rc = rd_h5_write_i32(h5, "/leak/month", 1, dims, d->month, st);
  return rc;
}
