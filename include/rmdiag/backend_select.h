/* Which compute backend a run uses (the CUDA module is loaded only when asked for). */
#ifndef RMDIAG_BACKEND_SELECT_H
#define RMDIAG_BACKEND_SELECT_H

#include <stddef.h>

#include "rmdiag/common/status.h"
#include "rmdiag/kernels/backend.h"

/* Chooses the backend: "cpu", "cuda" or "auto" (cuda if the module loads and a device exists).
 * `info` describes the choice. Returns RD_OK or an error for an explicit request that cannot be
 * met. Must be called by every rank. */
int rd_backend_select(const char *want, int node_rank, const rd_backend **out, char *info, size_t infolen,
                      rd_status *st);

#endif
