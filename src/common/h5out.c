/* Report datasets in HDF5 (see h5out.h): no timestamps; contiguous and uncompressed, since per-item
 * float64 outputs barely compress and deflate would dominate a report's run time. */
#include "rmdiag/common/h5out.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rmdiag/common/files.h"
#include "rmdiag/common/h5driver.h"
#include "rmdiag/common/signals.h"

/* The file an HDF5 object belongs to, for messages ("?" when unknown; one buffer, used at once). */
static const char *file_of(hid_t obj) {
  static char buf[4096];
  if (H5Fget_name(obj, buf, sizeof buf) <= 0) snprintf(buf, sizeof buf, "?");
  return buf;
}

int rd_h5_create(const char *path, hid_t *out, rd_status *st) {
  hid_t fcpl = H5Pcreate(H5P_FILE_CREATE);
  H5Pset_obj_track_times(fcpl, 0);
  /* the output driver (h5driver.h): write errors with their cause, and a close that cannot fail */
  hid_t fapl = rd_h5_out_fapl();
  if (fapl < 0) {
    H5Pclose(fcpl);
    return rd_fail(st, RD_EFAIL, "%s: cannot set up the HDF5 output driver", path);
  }
  hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, fcpl, fapl);
  H5Pclose(fapl);
  H5Pclose(fcpl);
  int err = rd_h5_out_open_errno();
  if (f < 0 && err) return rd_fail(st, RD_EFAIL, "%s: cannot create the output HDF5 file: %s", path, rd_io_cause(err));
  if (f < 0) return rd_fail(st, RD_EFAIL, "%s: cannot create the output HDF5 file", path);
  *out = f;
  return RD_OK;
}

int rd_h5_make_groups(hid_t f, const char *path, int parent_only, rd_status *st) {
  char buf[1024];
  size_t n = strlen(path);
  if (n >= sizeof buf) return rd_fail(st, RD_EFAIL, "HDF5 path too long: %s", path);
  memcpy(buf, path, n + 1);
  if (parent_only) {
    char *slash = strrchr(buf, '/');
    if (!slash || slash == buf) return RD_OK;
    *slash = '\0';
    n = strlen(buf);
  }
  hid_t gcpl = H5Pcreate(H5P_GROUP_CREATE);
  H5Pset_obj_track_times(gcpl, 0);
  int rc = RD_OK;
  for (size_t i = 1; i <= n && rc == RD_OK; i++) {
    if (buf[i] == '/' || buf[i] == '\0') {
      char save = buf[i];
      buf[i] = '\0';
      if (H5Lexists(f, buf, H5P_DEFAULT) <= 0) {
        hid_t g = H5Gcreate2(f, buf, H5P_DEFAULT, gcpl, H5P_DEFAULT);
        if (g < 0) rc = rd_fail(st, RD_EFAIL, "%s: cannot create output group %s", file_of(f), buf);
        else H5Gclose(g);
      }
      buf[i] = save;
    }
  }
  H5Pclose(gcpl);
  return rc;
}

static int write_ds(hid_t f, const char *path, int ndims, const int64_t *dims, hid_t filetype, hid_t memtype,
                    const void *data, rd_status *st) {
  RD_TRY(rd_h5_make_groups(f, path, 1, st));
  hsize_t d[4] = {0};
  hsize_t total = 1;
  for (int i = 0; i < ndims; i++) {
    d[i] = (hsize_t)dims[i];
    total *= d[i];
  }
  hid_t space = H5Screate_simple(ndims, d, NULL);
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_obj_track_times(dcpl, 0);
  hid_t ds = H5Dcreate2(f, path, filetype, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  int rc = RD_OK;
  if (ds < 0) {
    rc = rd_fail(st, RD_EFAIL, "%s: cannot create output dataset %s", file_of(f), path);
  } else {
    if (total > 0 && H5Dwrite(ds, memtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0)
      rc = rd_fail(st, RD_EFAIL, "%s: cannot write output dataset %s", file_of(f), path);
    H5Dclose(ds);
  }
  H5Pclose(dcpl);
  H5Sclose(space);
  return rc;
}

int rd_h5_write_chunked(hid_t f, const char *path, int ndims, const int64_t *dims, hid_t filetype, hid_t memtype,
                        const void *data, rd_status *st) {
  hsize_t total = 1;
  for (int i = 0; i < ndims; i++) total *= (hsize_t)dims[i];
  if (total == 0 || ndims < 1 || ndims > 2) return write_ds(f, path, ndims, dims, filetype, memtype, data, st);
  RD_TRY(rd_h5_make_groups(f, path, 1, st));
  /* chunks of about 64 Ki elements: whole rows when they fit */
  hsize_t d[2] = {(hsize_t)dims[0], ndims == 2 ? (hsize_t)dims[1] : 1}, c[2];
  const hsize_t target = 65536;
  if (ndims == 1) {
    c[0] = d[0] < target ? d[0] : target;
  } else {
    c[1] = d[1] < target ? d[1] : target;
    c[0] = target / c[1] > 0 ? target / c[1] : 1;
    if (c[0] > d[0]) c[0] = d[0];
  }
  hid_t space = H5Screate_simple(ndims, d, NULL);
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_obj_track_times(dcpl, 0);
  H5Pset_chunk(dcpl, ndims, c);
  H5Pset_shuffle(dcpl);
  H5Pset_deflate(dcpl, 4);
  hid_t ds = H5Dcreate2(f, path, filetype, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  int rc = RD_OK;
  if (ds < 0) {
    rc = rd_fail(st, RD_EFAIL, "%s: cannot create output dataset %s (chunked, deflate)", file_of(f), path);
  } else {
    if (H5Dwrite(ds, memtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0)
      rc = rd_fail(st, RD_EFAIL, "%s: cannot write output dataset %s", file_of(f), path);
    H5Dclose(ds);
  }
  H5Pclose(dcpl);
  H5Sclose(space);
  return rc;
}

int rd_h5_write_f64(hid_t f, const char *path, int ndims, const int64_t *dims, const double *data, rd_status *st) {
  return write_ds(f, path, ndims, dims, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, data, st);
}
int rd_h5_write_f32(hid_t f, const char *path, int ndims, const int64_t *dims, const float *data, rd_status *st) {
  return write_ds(f, path, ndims, dims, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, data, st);
}
int rd_h5_write_i32(hid_t f, const char *path, int ndims, const int64_t *dims, const int32_t *data, rd_status *st) {
  return write_ds(f, path, ndims, dims, H5T_STD_I32LE, H5T_NATIVE_INT32, data, st);
}
int rd_h5_write_i64(hid_t f, const char *path, int ndims, const int64_t *dims, const int64_t *data, rd_status *st) {
  return write_ds(f, path, ndims, dims, H5T_STD_I64LE, H5T_NATIVE_INT64, data, st);
}
int rd_h5_write_u8(hid_t f, const char *path, int ndims, const int64_t *dims, const uint8_t *data, rd_status *st) {
  return write_ds(f, path, ndims, dims, H5T_STD_U8LE, H5T_NATIVE_UINT8, data, st);
}
int rd_h5_write_i8(hid_t f, const char *path, int ndims, const int64_t *dims, const int8_t *data, rd_status *st) {
  return write_ds(f, path, ndims, dims, H5T_STD_I8LE, H5T_NATIVE_INT8, data, st);
}

int rd_h5_write_strings(hid_t f, const char *path, int64_t n, const char *const *strs, rd_status *st) {
  hid_t t = H5Tcopy(H5T_C_S1);
  H5Tset_size(t, H5T_VARIABLE);
  H5Tset_cset(t, H5T_CSET_UTF8);
  int64_t dims[1] = {n};
  RD_TRY(rd_h5_make_groups(f, path, 1, st));
  hsize_t d[1] = {(hsize_t)n};
  hid_t space = H5Screate_simple(1, d, NULL);
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_obj_track_times(dcpl, 0);
  hid_t ds = H5Dcreate2(f, path, t, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  int rc = RD_OK;
  (void)dims;
  if (ds < 0 || (n > 0 && H5Dwrite(ds, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, strs) < 0))
    rc = rd_fail(st, RD_EFAIL, "%s: cannot write output dataset %s", file_of(f), path);
  if (ds >= 0) H5Dclose(ds);
  H5Pclose(dcpl);
  H5Sclose(space);
  H5Tclose(t);
  return rc;
}

int rd_h5_write_attr_string(hid_t f, const char *obj_path, const char *name, const char *value, rd_status *st) {
  /* variable-length UTF-8, which h5py reads back as str */
  hid_t t = H5Tcopy(H5T_C_S1);
  H5Tset_size(t, H5T_VARIABLE);
  H5Tset_cset(t, H5T_CSET_UTF8);
  hid_t space = H5Screate(H5S_SCALAR);
  hid_t a = H5Acreate_by_name(f, obj_path, name, t, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  int rc = RD_OK;
  if (a < 0 || H5Awrite(a, t, &value) < 0)
    rc = rd_fail(st, RD_EFAIL, "%s: cannot write attribute %s on %s", file_of(f), name, obj_path);
  if (a >= 0) H5Aclose(a);
  H5Sclose(space);
  H5Tclose(t);
  return rc;
}

int rd_h5_atomic_create(const char *final, rd_h5_atomic *a, rd_status *st) {
  a->h = H5I_INVALID_HID;
  a->final = final;
  a->tmp = rd_tmp_path(final);
  if (!a->tmp) return rd_fail(st, RD_EFAIL, "out of memory");
  rd_tmp_register(a->tmp);
  return rd_h5_create(a->tmp, &a->h, st);
}

/* The files importers have read (device, inode). */
static struct {
  dev_t dev;
  ino_t ino;
} *inputs_seen;
static size_t n_inputs_seen, cap_inputs_seen;

FILE *rd_input_fopen(const char *path) {
  FILE *fp = fopen(path, "rb");
  struct stat sb;
  if (fp && fstat(fileno(fp), &sb) == 0) {
    if (n_inputs_seen == cap_inputs_seen) {
      size_t cap = cap_inputs_seen ? 2 * cap_inputs_seen : 16;
      void *q = realloc(inputs_seen, cap * sizeof *inputs_seen);
      if (!q) return fp;  /* only the -o check is weakened; cli.c has refused the plain cases */
      inputs_seen = q;
      cap_inputs_seen = cap;
    }
    inputs_seen[n_inputs_seen].dev = sb.st_dev;
    inputs_seen[n_inputs_seen].ino = sb.st_ino;
    n_inputs_seen++;
  }
  return fp;
}

int rd_h5_atomic_finish(rd_h5_atomic *a, rd_status *st) {
  if (!a->tmp) return st->code;
  struct stat sb;
  if (st->code == RD_OK && stat(a->final, &sb) == 0)
    for (size_t i = 0; i < n_inputs_seen; i++)
      if (inputs_seen[i].dev == sb.st_dev && inputs_seen[i].ino == sb.st_ino) {
        rd_fail(st, RD_EINPUT, "-o %s is also one of the files this import read; write the output elsewhere (the input "
                "is left as it was)", a->final);
        break;
      }
  rd_h5_out_close(a->h, a->tmp, st);
  a->h = H5I_INVALID_HID;
  if (st->code == RD_OK && rename(a->tmp, a->final) != 0)
    rd_fail(st, RD_EFAIL, "cannot rename %s to %s: %s", a->tmp, a->final, strerror(errno));
  if (st->code != RD_OK) unlink(a->tmp);
  rd_tmp_unregister(a->tmp);
  free(a->tmp);
  a->tmp = NULL;
  return st->code;
}
