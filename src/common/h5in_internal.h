/* Seams between the files of HDF5 input (h5in.c, h5in_check.c, h5in_vlen.c); not used elsewhere. */
#ifndef RMDIAG_H5IN_INTERNAL_H
#define RMDIAG_H5IN_INTERNAL_H

#include "rmdiag/common/h5in.h"

/* Whether `path` resolves: 1 it does, 0 a name on the way is absent, -1 a link on the way leads
 * nowhere (a dangling or looping soft link, an external link to a missing file or object); then
 * `why` says which link and where it points. */
int rd_h5i_link_state(hid_t f, const char *path, char *why, size_t n);

/* The checks of an open dataset before anything is read from it (h5in_check.c): its filters can
 * be loaded, its declared shape is backed by the file's storage and fits in memory. */
int rd_h5i_check_dataset(hid_t d, const char *file, const rd_dsinfo *info, rd_status *st);

/* Checks every heap reference of a variable-length string dataset against the file before HDF5
 * follows them (h5in_vlen.c). */
int rd_h5i_vlen_check(hid_t d, const char *file, const rd_dsinfo *info, rd_status *st);

/* "[3, 4]" */
void rd_h5i_shape_text(const rd_dsinfo *d, char *buf, size_t n);
/* `s` with anything but printable ASCII replaced by '?', cut to n - 1 bytes (names from the file
 * go into messages). */
void rd_h5i_printable(const char *s, char *out, size_t n);

#endif
