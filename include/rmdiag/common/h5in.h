/* Reading inputs as h5py writes them: any integer width, h5py booleans, float32/float64, fixed or
 * variable-length UTF-8 strings, chunked and compressed datasets (any filter whose plugin loads).
 * Inputs are untrusted: links, types, filters, declared shapes and string heaps are checked before
 * anything is allocated or read. Every error names the file and dataset and says what was expected. */
#ifndef RMDIAG_H5IN_H
#define RMDIAG_H5IN_H

#include <hdf5.h>
#include <mpi.h>
#include <stdint.h>

#include "rmdiag/kernels/types.h"
#include "rmdiag/common/status.h"

typedef enum rd_tclass {
  RD_TC_INT,     /* integer, or an enum over an integer (h5py booleans) */
  RD_TC_FLOAT,
  RD_TC_STRING,
  RD_TC_OTHER
} rd_tclass;

typedef struct rd_dsinfo {
  char path[512];     /* full dataset path inside the file */
  int ndims;
  int64_t dims[4];
  rd_tclass tclass;
  size_t tsize;       /* bytes per element in the file */
  int is_signed;      /* integers */
  char tdesc[160];    /* RD_TC_OTHER: what the type is ("an enum type (...)"), for messages */
} rd_dsinfo;

/* Makes the filter plugins Debian installs beside HDF5 findable (both the parallel and the serial
 * plugin folders) unless HDF5_PLUGIN_PATH is set; rd_h5_open calls it. */
void rd_h5_plugin_defaults(void);

/* Opens an input read-only: serial driver (comm = MPI_COMM_NULL) or MPI-IO on `comm`. */
int rd_h5_open(const char *file, MPI_Comm comm, hid_t *out, rd_status *st);
void rd_h5_close(hid_t f);

/* 1 if the object exists at `path` (every intermediate group checked), else 0. */
int rd_h5_exists(hid_t f, const char *path);

/* The shape of dataset `name` under `group` without the checks of rd_h5_info, for what only needs
 * sizes once the layout was checked (the planner's estimates): the number of dimensions (dims gets
 * up to 4), or -1 when it cannot be opened. *esize: bytes per element in the file; *plain: stored
 * unfiltered, contiguous or (2-D) in chunks of whole rows, so that it can be mapped (either may be
 * NULL). */
int rd_h5_shape(hid_t f, const char *group, const char *name, int64_t dims[4], size_t *esize, int *plain);

/* Describes dataset `path`; a missing one is an RD_EINPUT error naming `file` and `path`, and so is
 * one that cannot be read safely: a link that leads nowhere, a filter whose plugin does not load, a
 * declared shape the file's storage does not hold (contiguous data past the end of the file, chunks
 * never written, external or virtual storage) or one too large for memory to read. */
int rd_h5_info(hid_t f, const char *file, const char *path, rd_dsinfo *info, rd_status *st);

/* Checks that `bytes` of memory (what reading `info` needs here: `what`, "this rank's rows") fit in
 * what this process may use: the smallest of physical memory, ulimit -v / -d, the cgroup's limit and
 * RMDIAG_MEMORY_LIMIT. Else an RD_EINPUT error naming the file, dataset and shape. */
int rd_h5_check_memory(const char *file, const rd_dsinfo *info, double bytes, const char *what, rd_status *st);

/* Checks rank and class; `what` completes "expected ..." in the message. */
int rd_h5_expect(const rd_dsinfo *info, const char *file, int ndims, int classes_mask, const char *what,
                 rd_status *st);
#define RD_TCM(c) (1 << (c))

/* Rows [row0, row0+nrows) of a 1-D or 2-D float dataset, stored precision kept when it is
 * float32 or float64 (`ft` says which; others are converted to float64). */
int rd_h5_read_float_rows(hid_t f, const char *file, const rd_dsinfo *info, int64_t row0, int64_t nrows,
                          rd_ftype ft, void *out, rd_status *st);
/* Rows of a 1-D or 2-D integer (or enum) dataset as 64-bit words: signed values sign-extended,
 * unsigned values as they are (info->is_signed tells which), so no id is clipped. */
int rd_h5_read_int_words(hid_t f, const char *file, const rd_dsinfo *info, int64_t row0, int64_t nrows,
                         uint64_t *out, rd_status *st);
/* Rows of a 1-D or 2-D integer (or enum) dataset widened to int64 (an unsigned value above
 * 2^63 - 1 is an RD_EINPUT error). */
int rd_h5_read_int_rows(hid_t f, const char *file, const rd_dsinfo *info, int64_t row0, int64_t nrows,
                        int64_t *out, rd_status *st);
/* Rows of an integer dataset as 0/1 flags: values other than 0 and 1 are an RD_EINPUT error
 * naming the element (key = flat element index). */
int rd_h5_read_flag_rows(hid_t f, const char *file, const rd_dsinfo *info, int64_t row0, int64_t nrows,
                         uint8_t *out, rd_status *st);
/* Zero-copy rows: a contiguous, unfiltered dataset stored in the memory's own type (float32,
 * float64, uint8 little-endian) can be mapped read-only from the file instead of copied, which
 * spares the copy and the zeroing of fresh pages. The coordinator finds the data's file offset
 * (rd_h5_contig_offset: 1 when the dataset qualifies and RMDIAG_NO_MMAP is unset) and workers map
 * their rows without opening the HDF5 file (rd_map_rows); datasets that do not qualify are read
 * with the functions above. */
typedef struct rd_h5_map {
  void *base;
  size_t len;
} rd_h5_map;
int rd_h5_contig_offset(hid_t f, const rd_dsinfo *info, hid_t memtype, int64_t *offset);
/* The end, as a file offset, of the bytes HDF5 reads from file f: the smaller of the file's size and
 * its end of allocated space (relative to the base address, the user block's size). A corrupt file
 * can declare an end before that of its data; HDF5 then reads no further, so bytes taken from the
 * file directly (mapped, or checked before HDF5 follows them) must lie before it too. -1 if unknown. */
int64_t rd_h5_readable_end(hid_t f);
const void *rd_map_rows(const char *file, int64_t offset, int64_t row_bytes, int64_t row0, int64_t nrows, rd_h5_map *m);
void rd_h5_unmap(rd_h5_map *m);
/* The same for a 2-D dataset stored in chunks of whole rows: unfiltered, every chunk written, in the
 * memory's type, in a file without a user block. rd_h5_chunk_rows gives the rows per chunk (0 when
 * the dataset does not qualify or RMDIAG_NO_MMAP is set); rd_h5_chunk_offsets the file offset of
 * each of chunks c0 .. c0+n-1 (chunk c holds rows c*rows_per_chunk ...) in offset[0 .. n-1]: 0, or -1
 * when one is missing. HDF5 1.10 finds a chunk's address by walking the chunk index from its first
 * chunk, so chunk c costs about c steps (RD_H5_CHUNK_STEPS counts a range's). */
int64_t rd_h5_chunk_rows(hid_t f, const rd_dsinfo *info, hid_t memtype);
int rd_h5_chunk_offsets(hid_t f, const char *path, int64_t rows_per_chunk, int64_t c0, int64_t n, int64_t *offset);
#define RD_H5_CHUNK_STEPS(c0, c1) (((double)(c1) * (double)(c1) - (double)(c0) * (double)(c0)) / 2.0)

/* A whole 1-D numeric dataset widened to double (integers converted exactly up to 2^53). */
int rd_h5_read_numeric(hid_t f, const char *file, const rd_dsinfo *info, double *out, rd_status *st);
/* A whole 1-D string dataset (fixed or variable length) as `n` NUL-terminated strings packed
 * one after another in *buf (malloc'd); offsets[i] locates string i. */
int rd_h5_read_strings(hid_t f, const char *file, const rd_dsinfo *info, char **buf, size_t *buflen,
                       int64_t **offsets, rd_status *st);
/* String attribute `name` of the object at `obj_path`; returns 0 when absent. */
int rd_h5_read_attr_string(hid_t f, const char *obj_path, const char *name, char *out, size_t outlen);

/* Lists the datasets directly under group `path` (names malloc'd, NULL-terminated array). */
int rd_h5_list(hid_t f, const char *file, const char *path, char ***names, int *n, rd_status *st);
void rd_h5_free_list(char **names, int n);

/* "<group>/<name>" for a dataset under a job's group ("/" joins without a double slash).
 * Returns the length written, or -1 when it does not fit. */
int rd_h5_path(char *out, size_t n, const char *group, const char *name);

/* ---- table-driven layout checks ---------------------------------------------------------------
 * A kind describes its input layout as a table of datasets: each with its rank, allowed type
 * classes and, per dimension, the named length it must share with the other datasets (P pairs,
 * R runs, ...). rd_h5_check_layout checks, in table order, that every required dataset exists
 * (a missing group is reported as such), has the right rank and class, and that all datasets
 * naming a length agree on it (the first one present fixes it). Messages name the file, the
 * dataset, its shape and what was expected. */
#define RD_H5_LENS 8      /* named lengths per layout */
#define RD_H5_FREE (-1)   /* a dimension that is not checked */

typedef struct rd_h5_dataset {
  const char *name;    /* relative to the job's group ("rank/model"); NULL ends the table */
  int ndims;           /* 1 or 2 */
  int classes;         /* RD_TCM(...) mask */
  int len[2];          /* per dimension: the index of its named length, or RD_H5_FREE */
  int optional;        /* may be absent */
  const char *expect;  /* completes "expected ...": "float32 or float64 [P, R]" */
} rd_h5_dataset;

typedef struct rd_h5_layout {
  const char *kind;                     /* "cm": the messages cite "the cm input layout" */
  const char *const *len_names;         /* what each named length counts ("pairs (P)"), RD_H5_LENS at most */
  const rd_h5_dataset *datasets;        /* NULL-name-terminated */
} rd_h5_layout;

/* What a check found: per table row, whether the dataset is present and its description; per
 * named length, its value (-1 when no dataset fixed it). */
typedef struct rd_h5_found {
  int n;
  int present[64];
  rd_dsinfo info[64];
  int64_t len[RD_H5_LENS];
  int len_from[RD_H5_LENS];  /* the table row that fixed each length */
} rd_h5_found;

/* Checks the layout of `group` in `f` (see above). `skip`, when not NULL, marks rows to treat as
 * optional this time (a dataset of an optional subgroup that is absent). */
int rd_h5_check_layout(hid_t f, const char *file, const char *group, const rd_h5_layout *layout, const int *skip,
                       rd_h5_found *found, rd_status *st);

#endif
