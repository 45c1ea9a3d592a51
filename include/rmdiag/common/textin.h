/* Text input files read whole into memory (the importers' JSON and CSV files), opened through
 * rd_input_fopen so that an import can refuse to write its output over one of them. */
#ifndef RMDIAG_COMMON_TEXTIN_H
#define RMDIAG_COMMON_TEXTIN_H

#include <stddef.h>

#include "rmdiag/common/status.h"

/* Reads the file at `path` into *text (malloc'd, NUL-terminated after *len bytes; the file's own NUL
 * bytes are kept). Errors name the file: cannot open (RD_EINPUT), read error (RD_EINPUT), out of
 * memory (RD_EFAIL). */
int rd_text_read(const char *path, char **text, size_t *len, rd_status *st);

#endif
