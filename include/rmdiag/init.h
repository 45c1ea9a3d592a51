/* The init command (docs/reference.md, 'init'): a job file written from an input's layout. */
#ifndef RMDIAG_INIT_H
#define RMDIAG_INIT_H

#include <stdio.h>

#include "rmdiag/common/comm.h"
#include "rmdiag/common/status.h"

/* Collective over ctx->comm: `rmdiag init KIND INPUT.h5 [-o JOB.json] ...` (argv[1] is "init").
 * Returns the exit status. */
int rd_cmd_init(rd_ctx *ctx, int argc, char **argv, rd_status *st);
/* The command's usage (`rmdiag init --help`). */
void rd_init_usage(FILE *fp);

#endif
