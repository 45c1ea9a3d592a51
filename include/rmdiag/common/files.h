/* File utilities: where an output is written before it is renamed into place, mkdir -p, atomic
 * text files, and the identity of an input file (for the spec hash and the report). */
#ifndef RMDIAG_COMMON_FILES_H
#define RMDIAG_COMMON_FILES_H

#include <stdint.h>

#include "rmdiag/common/status.h"

/* "<dir>/.<name>.tmp.<pid>": where an output is written before it is renamed into place. */
char *rd_tmp_path(const char *final_path);
/* "<dir>/.<name>.<tag>.<pid>" */
char *rd_side_path(const char *final_path, const char *tag);
/* mkdir -p; the folders it creates are remembered (rd_made_dir_remove). */
int rd_mkdirs(const char *dir, rd_status *st);
/* Writes `text` to `final_path` atomically (temporary file + fsync + rename). */
int rd_write_file_atomic(const char *final_path, const char *text, rd_status *st);

/* Inputs of a job, as the spec hash and the report see them. */
typedef struct rd_input_stat {
  char *path;       /* realpath */
  int64_t bytes;
  int64_t mtime_s, mtime_ns;
} rd_input_stat;

int rd_input_stat_get(const char *path, const char *jobfile, const char *key, rd_input_stat *in, rd_status *st);

#endif
