/* The HDF5 file driver output files are written with: POSIX reads and writes like HDF5's default
 * driver (the same bytes in the file), but it keeps the first write error's errno for messages,
 * and a file closed after an error drops its remaining writes instead of failing, so closing it
 * always succeeds. (HDF5 1.10 frees a file whose close failed but keeps its id; library shutdown in
 * MPI_Finalize then crashes on it.) */
#ifndef RMDIAG_COMMON_H5DRIVER_H
#define RMDIAG_COMMON_H5DRIVER_H

#include <hdf5.h>

#include "rmdiag/common/status.h"

/* A new file-access property list using the driver (close it with H5Pclose), or -1. */
hid_t rd_h5_out_fapl(void);

/* The errno of the driver's last failed open (0 after one that worked), for messages. */
int rd_h5_out_open_errno(void);

/* The errno of the first failed write, truncation or close of `f` (a file created with
 * rd_h5_out_fapl), or 0. */
int rd_h5_out_errno(hid_t f);

/* Closes an output file created with rd_h5_out_fapl. A write error (now or earlier) becomes the
 * error "PATH: cannot write the output HDF5 file: CAUSE" when st holds none yet, and otherwise is
 * added to st's message ("...: no space left on device"). A write error cannot make the close fail. */
int rd_h5_out_close(hid_t f, const char *path, rd_status *st);

#endif
