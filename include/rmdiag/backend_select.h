/* Which compute backend a run uses (the CUDA module is loaded only when asked for). */
#ifndef RMDIAG_BACKEND_SELECT_H
#define RMDIAG_BACKEND_SELECT_H

#include <stddef.h>

#include "rmdiag/common/status.h"
#include "rmdiag/kernels/backend.h"

/* Chooses the backend: "cpu", "cuda" or "auto" (cuda if the module loads and a device exists).
 * `info` describes the choice; `note` says why "auto" runs on the CPU of a node that has an NVIDIA
 * driver (empty otherwise). Returns RD_OK or an error for an explicit request that cannot be met.
 * Must be called by every rank. */
int rd_backend_select(const char *want, int node_rank, const rd_backend **out, char *info, size_t infolen,
                      char *note, size_t notelen, rd_status *st);
/* For --version: the CUDA version the module was built with and the driver's and runtime's here. */
void rd_backend_versions(char *out, size_t n);

#endif
