/* Writing report datasets: contiguous, with no timestamps, so the same values give the
 * same file bytes for any rank count. Written by rank 0 only. */
#ifndef RMDIAG_H5OUT_H
#define RMDIAG_H5OUT_H

#include <hdf5.h>
#include <stdint.h>
#include <stdio.h>

#include "rmdiag/common/status.h"

/* An output written atomically (importers): a temporary file beside the final path, registered
 * for removal on a signal; finishing closes it and renames it into place when st is RD_OK, or
 * removes it otherwise. */
typedef struct rd_h5_atomic {
  hid_t h;            /* the open file, valid after a successful create */
  char *tmp;
  const char *final;
} rd_h5_atomic;
int rd_h5_atomic_create(const char *final, rd_h5_atomic *a, rd_status *st);
/* Closes and renames into place, unless the final path is one of the files the import read (see
 * rd_input_fopen): then the output is dropped and the input left intact (exit 2). */
int rd_h5_atomic_finish(rd_h5_atomic *a, rd_status *st);
/* fopen(path, "rb") for an importer's input, remembering the file (device, inode) so that no output
 * is ever renamed over it. */
FILE *rd_input_fopen(const char *path);

/* Creates (truncating) an HDF5 file for writing with the serial driver. */
int rd_h5_create(const char *path, hid_t *out, rd_status *st);
/* Creates the groups along `path` (all but the last component when `parent_only`). */
int rd_h5_make_groups(hid_t f, const char *path, int parent_only, rd_status *st);
/* 1-D or 2-D datasets; `ndims` dims. */
int rd_h5_write_f64(hid_t f, const char *path, int ndims, const int64_t *dims, const double *data, rd_status *st);
int rd_h5_write_f32(hid_t f, const char *path, int ndims, const int64_t *dims, const float *data, rd_status *st);
int rd_h5_write_i32(hid_t f, const char *path, int ndims, const int64_t *dims, const int32_t *data, rd_status *st);
int rd_h5_write_i64(hid_t f, const char *path, int ndims, const int64_t *dims, const int64_t *data, rd_status *st);
int rd_h5_write_u8(hid_t f, const char *path, int ndims, const int64_t *dims, const uint8_t *data, rd_status *st);
int rd_h5_write_i8(hid_t f, const char *path, int ndims, const int64_t *dims, const int8_t *data, rd_status *st);
/* Chunked and deflate-compressed (what importers write, docs/reference.md 'Import formats'); 1-D or 2-D, any numeric type. */
int rd_h5_write_chunked(hid_t f, const char *path, int ndims, const int64_t *dims, hid_t filetype, hid_t memtype,
                        const void *data, rd_status *st);
/* Variable-length UTF-8 strings. */
int rd_h5_write_strings(hid_t f, const char *path, int64_t n, const char *const *strs, rd_status *st);
/* A string attribute on the object at `obj_path`. */
int rd_h5_write_attr_string(hid_t f, const char *obj_path, const char *name, const char *value, rd_status *st);

#endif
