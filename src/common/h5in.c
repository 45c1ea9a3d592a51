/* Reading inputs in the layouts h5py writes (see h5in.h). */
#include "rmdiag/common/h5in.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "h5in_internal.h"
#include "rmdiag/common/jsonutil.h"

#define SEE "see docs/reference.md, 'HDF5 inputs'"

int rd_h5_open(const char *file, MPI_Comm comm, hid_t *out, rd_status *st) {
  *out = H5I_INVALID_HID;
  rd_h5_plugin_defaults();
  int readable = access(file, R_OK) == 0, err = errno;
  if (comm != MPI_COMM_NULL) {
    /* H5Fopen is collective: every rank must enter it or none (a file missing on one node's
     * local disk must not leave the others waiting) */
    int all = 0;
    MPI_Allreduce(&readable, &all, 1, MPI_INT, MPI_MIN, comm);
    if (!all)
      return rd_fail(st, RD_EINPUT, "%s: cannot open the input file on every rank (%s)", file,
                     readable ? "unreadable on another rank" : strerror(err));
  } else if (!readable) {
    return rd_fail(st, RD_EINPUT, "%s: cannot open the input file (%s)", file, strerror(err));
  }
  if (comm == MPI_COMM_NULL) {
    htri_t is = H5Fis_hdf5(file);
    if (is <= 0) return rd_fail(st, RD_EINPUT, "%s: not an HDF5 file", file);
  }
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  if (comm != MPI_COMM_NULL) H5Pset_fapl_mpio(fapl, comm, MPI_INFO_NULL);
  hid_t f = H5Fopen(file, H5F_ACC_RDONLY, fapl);
  H5Pclose(fapl);
  if (f < 0) return rd_fail(st, RD_EINPUT, "%s: cannot open as HDF5 (not an HDF5 file, or unreadable)", file);
  *out = f;
  return RD_OK;
}

void rd_h5_close(hid_t f) {
  if (f >= 0) H5Fclose(f);
}

/* Follows the soft links from `path` (up to HDF5's 16) to say where a broken one leads. */
static void describe_broken(hid_t f, const char *path, char *why, size_t n) {
  char cur[1024], seen[17][1024], shown[2][300];
  H5L_info_t li;
  snprintf(cur, sizeof cur, "%s", path);
  rd_h5i_printable(path, shown[0], sizeof shown[0]);
  for (int hop = 0; hop < 17; hop++) {
    snprintf(seen[hop], sizeof seen[hop], "%s", cur);
    if (H5Lget_info(f, cur, &li, H5P_DEFAULT) < 0) {
      rd_h5i_printable(cur, shown[1], sizeof shown[1]);
      snprintf(why, n, "%s is a soft link leading to \"%s\", which does not exist", shown[0], shown[1]);
      return;
    }
    if (li.type == H5L_TYPE_EXTERNAL) {
      char val[2048];
      const char *ef = NULL, *eo = NULL;
      unsigned fl = 0;
      if (li.u.val_size <= sizeof val && H5Lget_val(f, cur, val, sizeof val, H5P_DEFAULT) >= 0 &&
          H5Lunpack_elink_val(val, li.u.val_size, &fl, &ef, &eo) >= 0) {
        rd_h5i_printable(ef, shown[1], sizeof shown[1]);
        char obj[300];
        rd_h5i_printable(eo, obj, sizeof obj);
        snprintf(why, n, "%s is an external link to \"%s\" in file \"%s\", which cannot be opened or lacks that object",
                 shown[0], obj, shown[1]);
      } else {
        snprintf(why, n, "%s is an external link that cannot be read", shown[0]);
      }
      return;
    }
    if (li.type != H5L_TYPE_SOFT) {
      snprintf(why, n, "%s names an object that cannot be opened (corrupt file?)", shown[0]);
      return;
    }
    char val[1024];
    if (li.u.val_size > sizeof val || H5Lget_val(f, cur, val, sizeof val, H5P_DEFAULT) < 0) {
      snprintf(why, n, "%s is a soft link that cannot be read", shown[0]);
      return;
    }
    val[sizeof val - 1] = '\0';
    if (val[0] == '/') {
      snprintf(cur, sizeof cur, "%s", val);
    } else {
      char *slash = strrchr(cur, '/');
      size_t keep = slash ? (size_t)(slash - cur) : 0;
      char next[2048];
      int l = snprintf(next, sizeof next, "%.*s/%s", (int)keep, cur, val);
      if (l < 0 || (size_t)l >= sizeof cur) {
        snprintf(why, n, "%s is a soft link whose target path is too long", shown[0]);
        return;
      }
      memcpy(cur, next, (size_t)l + 1);
    }
    for (int k = 0; k <= hop; k++)
      if (strcmp(seen[k], cur) == 0) {
        rd_h5i_printable(cur, shown[1], sizeof shown[1]);
        snprintf(why, n, "%s is a soft link in a loop (it leads back to \"%s\")", shown[0], shown[1]);
        return;
      }
  }
  snprintf(why, n, "%s is a soft link followed by more than 16 others", shown[0]);
}

int rd_h5i_link_state(hid_t f, const char *path, char *why, size_t n) {
  char buf[1024];
  size_t len = strlen(path);
  if (n) why[0] = '\0';
  if (len >= sizeof buf) return 0;
  if (strcmp(path, "/") == 0) return 1;
  memcpy(buf, path, len + 1);
  for (size_t i = 1; i <= len; i++) {
    if (buf[i] != '/' && buf[i] != '\0') continue;
    char save = buf[i];
    buf[i] = '\0';
    if (H5Lexists(f, buf, H5P_DEFAULT) <= 0) return 0;
    if (H5Oexists_by_name(f, buf, H5P_DEFAULT) <= 0) {
      describe_broken(f, buf, why, n);
      return -1;
    }
    buf[i] = save;
  }
  return 1;
}

/* A broken link counts as present: whoever then opens it reports where it leads (rd_h5_info). */
int rd_h5_exists(hid_t f, const char *path) {
  char why[8];
  return rd_h5i_link_state(f, path, why, sizeof why) != 0;
}

int rd_h5_shape(hid_t f, const char *group, const char *name, int64_t dims[4], size_t *esize, int *plain) {
  char p[1024];
  for (int i = 0; i < 4; i++) dims[i] = 0;
  if (rd_h5_path(p, sizeof p, group, name) < 0) return -1;
  hid_t d = H5Dopen2(f, p, H5P_DEFAULT);
  if (d < 0) return -1;
  hid_t s = H5Dget_space(d), t = H5Dget_type(d), dcpl = H5Dget_create_plist(d);
  int nd = s >= 0 ? H5Sget_simple_extent_ndims(s) : -1;
  hsize_t hd[H5S_MAX_RANK];
  if (nd < 0 || nd > 4 || H5Sget_simple_extent_dims(s, hd, NULL) < 0) nd = -1;
  for (int i = 0; i < nd; i++) dims[i] = (int64_t)hd[i];
  if (esize) *esize = t >= 0 ? H5Tget_size(t) : 0;
  if (plain) {  /* unfiltered, and contiguous or (2-D) in chunks of whole rows */
    hsize_t ch[2] = {0, 0};
    H5D_layout_t lay = dcpl >= 0 ? H5Pget_layout(dcpl) : H5D_LAYOUT_ERROR;
    *plain = dcpl >= 0 && H5Pget_nfilters(dcpl) == 0 &&
             (lay == H5D_CONTIGUOUS || (lay == H5D_CHUNKED && nd == 2 && H5Pget_chunk(dcpl, 2, ch) == 2 && ch[1] == hd[1]));
  }
  if (dcpl >= 0) H5Pclose(dcpl);
  if (t >= 0) H5Tclose(t);
  if (s >= 0) H5Sclose(s);
  H5Dclose(d);
  return nd;
}

static int broken_link(const char *file, const char *what, const char *path, const char *why, rd_status *st) {
  return rd_fail(st, RD_EINPUT, "%s: %s %s cannot be reached: %s; %s", file, what, path, why, SEE);
}

/* h5py's booleans: an enum over a 1-byte integer with exactly FALSE = 0 and TRUE = 1. */
static int is_h5py_bool(hid_t t, hid_t base) {
  if (H5Tget_size(base) != 1 || H5Tget_nmembers(t) != 2) return 0;
  int ok = 1;
  for (unsigned i = 0; i < 2 && ok; i++) {
    char *name = H5Tget_member_name(t, i);
    signed char v = -1;
    ok = name && H5Tget_member_value(t, i, &v) >= 0 && ((i == 0 && strcmp(name, "FALSE") == 0 && v == 0) ||
                                                          (i == 1 && strcmp(name, "TRUE") == 0 && v == 1));
    if (name) H5free_memory(name);
  }
  return ok;
}

/* What an unsupported type is, for messages ("expected ..." follows). */
static void other_text(hid_t t, H5T_class_t c, char *out, size_t n) {
  if (c == H5T_ARRAY) {
    hsize_t ad[4] = {0};
    int r = H5Tget_array_ndims(t);
    hid_t base = H5Tget_super(t);
    size_t bs = base >= 0 ? H5Tget_size(base) : 0;
    H5T_class_t bc = base >= 0 ? H5Tget_class(base) : H5T_NO_CLASS;
    if (base >= 0) H5Tclose(base);
    char dims[64] = "";
    size_t k = 0;
    if (r > 0 && r <= 4 && H5Tget_array_dims2(t, ad) >= 0)
      for (int i = 0; i < r && k < sizeof dims; i++)
        k += (size_t)snprintf(dims + k, sizeof dims - k, "%s%llu", i ? ", " : "", (unsigned long long)ad[i]);
    snprintf(out, n, "an array type (each element an array [%s] of %zu-byte %s; store a dataset with one more "
             "dimension instead)", dims, bs, bc == H5T_FLOAT ? "floats" : bc == H5T_INTEGER ? "integers" : "values");
    return;
  }
  const char *what = c == H5T_ENUM ? "an enum type (of enums only h5py's booleans, FALSE = 0 and TRUE = 1, are read)"
                     : c == H5T_COMPOUND ? "a compound type"
                     : c == H5T_OPAQUE ? "an opaque type"
                     : c == H5T_BITFIELD ? "a bitfield type"
                     : c == H5T_REFERENCE ? "a reference type"
                     : c == H5T_VLEN ? "a variable-length sequence type"
                     : c == H5T_TIME ? "a time type" : "an unsupported type";
  snprintf(out, n, "%s", what);
}

static rd_tclass classify(hid_t t, rd_dsinfo *info) {
  H5T_class_t c = H5Tget_class(t);
  info->tsize = H5Tget_size(t);
  info->is_signed = 0;
  if (c == H5T_INTEGER) {
    info->is_signed = H5Tget_sign(t) == H5T_SGN_2;
    return RD_TC_INT;
  }
  if (c == H5T_ENUM) {
    hid_t base = H5Tget_super(t);
    int ok = base >= 0 && H5Tget_class(base) == H5T_INTEGER && is_h5py_bool(t, base);
    if (ok) info->is_signed = H5Tget_sign(base) == H5T_SGN_2;
    if (base >= 0) H5Tclose(base);
    if (ok) return RD_TC_INT;
  }
  if (c == H5T_FLOAT) return RD_TC_FLOAT;
  if (c == H5T_STRING) return RD_TC_STRING;
  other_text(t, c, info->tdesc, sizeof info->tdesc);
  return RD_TC_OTHER;
}

int rd_h5_info(hid_t f, const char *file, const char *path, rd_dsinfo *info, rd_status *st) {
  memset(info, 0, sizeof *info);
  snprintf(info->path, sizeof info->path, "%s", path);
  char why[900];
  int ls = rd_h5i_link_state(f, path, why, sizeof why);
  if (ls < 0) return broken_link(file, "dataset", path, why, st);
  if (ls == 0) return rd_fail(st, RD_EINPUT, "%s: dataset %s is missing", file, path);
  H5O_info_t oi;
  if (H5Oget_info_by_name(f, path, &oi, H5P_DEFAULT) < 0 || oi.type != H5O_TYPE_DATASET)
    return rd_fail(st, RD_EINPUT, "%s: %s is not a dataset", file, path);
  hid_t d = H5Dopen2(f, path, H5P_DEFAULT);
  if (d < 0) return rd_fail(st, RD_EINPUT, "%s: cannot open dataset %s", file, path);
  hid_t s = H5Dget_space(d), t = H5Dget_type(d);
  int nd = H5Sget_simple_extent_ndims(s);
  int rc = RD_OK;
  if (nd < 0 || nd > 4) {
    rc = rd_fail(st, RD_EINPUT, "%s: dataset %s has %d dimensions (expected at most 2)", file, path, nd);
  } else {
    hsize_t dims[4] = {0};
    H5Sget_simple_extent_dims(s, dims, NULL);
    info->ndims = nd;
    for (int i = 0; i < nd; i++) info->dims[i] = (int64_t)dims[i];
    info->tclass = classify(t, info);
    for (int i = 0; i < nd && rc == RD_OK; i++)
      if (dims[i] > (hsize_t)INT64_MAX / 16)
        rc = rd_fail(st, RD_EINPUT, "%s: dataset %s declares a dimension of %llu, beyond what can be read; %s", file,
                     path, (unsigned long long)dims[i], SEE);
    /* filters, storage and memory: before any kind allocates for it or reads it */
    if (rc == RD_OK && info->tclass != RD_TC_OTHER) rc = rd_h5i_check_dataset(d, file, info, st);
  }
  H5Tclose(t);
  H5Sclose(s);
  H5Dclose(d);
  return rc;
}

static const char *class_name(rd_tclass c) {
  switch (c) {
    case RD_TC_INT: return "integer";
    case RD_TC_FLOAT: return "float";
    case RD_TC_STRING: return "string";
    default: return "unsupported";
  }
}

int rd_h5_expect(const rd_dsinfo *info, const char *file, int ndims, int classes_mask, const char *what,
                 rd_status *st) {
  if (info->tclass == RD_TC_OTHER)
    return rd_fail(st, RD_EINPUT, "%s: dataset %s has %s, expected %s", file, info->path, info->tdesc, what);
  if (!(classes_mask & RD_TCM(info->tclass)))
    return rd_fail(st, RD_EINPUT, "%s: dataset %s has %s type, expected %s", file, info->path,
                   class_name(info->tclass), what);
  if (info->ndims != ndims) {
    char shape[96] = "";
    size_t n = 0;
    for (int i = 0; i < info->ndims; i++)
      n += (size_t)snprintf(shape + n, sizeof shape - n, "%s%lld", i ? ", " : "", (long long)info->dims[i]);
    return rd_fail(st, RD_EINPUT, "%s: dataset %s has shape [%s], expected %d dimension%s (%s)", file, info->path,
                   shape, ndims, ndims == 1 ? "" : "s", what);
  }
  return RD_OK;
}

/* Opens the dataset and selects rows [row0, row0+nrows) with all columns. */
static int select_rows(hid_t f, const char *file, const rd_dsinfo *info, int64_t row0, int64_t nrows, hid_t *d,
                       hid_t *fs, hid_t *ms, rd_status *st) {
  *d = H5Dopen2(f, info->path, H5P_DEFAULT);
  if (*d < 0) return rd_fail(st, RD_EINPUT, "%s: cannot open dataset %s", file, info->path);
  *fs = H5Dget_space(*d);
  hsize_t start[4] = {0}, count[4] = {0};
  for (int i = 0; i < info->ndims; i++) count[i] = (hsize_t)info->dims[i];
  start[0] = (hsize_t)row0;
  count[0] = (hsize_t)nrows;
  if (info->ndims == 0) {
    H5Sselect_all(*fs);
    *ms = H5Screate(H5S_SCALAR);
    return RD_OK;
  }
  if (nrows == 0) {
    H5Sselect_none(*fs);
  } else {
    H5Sselect_hyperslab(*fs, H5S_SELECT_SET, start, NULL, count, NULL);
  }
  *ms = H5Screate_simple(info->ndims, count, NULL);
  if (nrows == 0) H5Sselect_none(*ms);
  return RD_OK;
}

static int read_sel(hid_t f, const char *file, const rd_dsinfo *info, int64_t row0, int64_t nrows, hid_t memtype,
                    void *out, rd_status *st) {
  hid_t d = H5I_INVALID_HID, fs = H5I_INVALID_HID, ms = H5I_INVALID_HID;
  RD_TRY(select_rows(f, file, info, row0, nrows, &d, &fs, &ms, st));
  herr_t e = H5Dread(d, memtype, ms, fs, H5P_DEFAULT, out);
  H5Sclose(ms);
  H5Sclose(fs);
  H5Dclose(d);
  if (e < 0)
    return rd_fail(st, RD_EINPUT, "%s: reading rows %lld..%lld of dataset %s failed (corrupt data or a type that "
                   "cannot be converted)", file, (long long)row0, (long long)(row0 + nrows - 1), info->path);
  return RD_OK;
}

static int64_t row_elems(const rd_dsinfo *info) {
  int64_t n = 1;
  for (int i = 1; i < info->ndims; i++) n *= info->dims[i];
  return n;
}

int rd_h5_read_float_rows(hid_t f, const char *file, const rd_dsinfo *info, int64_t row0, int64_t nrows,
                          rd_ftype ft, void *out, rd_status *st) {
  return read_sel(f, file, info, row0, nrows, ft == RD_F32 ? H5T_NATIVE_FLOAT : H5T_NATIVE_DOUBLE, out, st);
}

/* Native integer type of the file's size and sign (enums read as their base integers). */
static hid_t native_int(const rd_dsinfo *info) {
  switch (info->tsize) {
    case 1: return info->is_signed ? H5T_NATIVE_INT8 : H5T_NATIVE_UINT8;
    case 2: return info->is_signed ? H5T_NATIVE_INT16 : H5T_NATIVE_UINT16;
    case 4: return info->is_signed ? H5T_NATIVE_INT32 : H5T_NATIVE_UINT32;
    default: return info->is_signed ? H5T_NATIVE_INT64 : H5T_NATIVE_UINT64;
  }
}

/* Reads integers of the file's width without HDF5's clipping conversions and widens them to
 * 64-bit words: signed values sign-extended, unsigned ones as they are (so a uint64 above 2^63
 * keeps its value; `info->is_signed` says how to read the word). Enum datasets (h5py booleans)
 * are read through a copy of their own type, which has the bytes of the base integer. */
static int read_int_words(hid_t f, const char *file, const rd_dsinfo *info, int64_t row0, int64_t nrows,
                          uint64_t *out, rd_status *st) {
  int64_t n = nrows * row_elems(info);
  size_t w = info->tsize;
  if (w != 1 && w != 2 && w != 4 && w != 8)
    return rd_fail(st, RD_EINPUT, "%s: dataset %s has %zu-byte integers (expected 1, 2, 4 or 8)", file, info->path,
                   info->tsize);
  void *raw = malloc((size_t)(n ? n : 1) * w);
  if (!raw) return rd_fail(st, RD_EFAIL, "out of memory reading %s", info->path);
  hid_t d = H5Dopen2(f, info->path, H5P_DEFAULT);
  hid_t ft = d >= 0 ? H5Dget_type(d) : H5I_INVALID_HID;
  hid_t mt = H5I_INVALID_HID;
  if (ft >= 0 && H5Tget_class(ft) == H5T_ENUM) mt = H5Tget_native_type(ft, H5T_DIR_ASCEND);
  if (ft >= 0) H5Tclose(ft);
  if (d >= 0) H5Dclose(d);
  int rc = read_sel(f, file, info, row0, nrows, mt >= 0 ? mt : native_int(info), raw, st);
  if (mt >= 0) H5Tclose(mt);
  if (rc == RD_OK) {
    for (int64_t i = 0; i < n; i++) {
      switch (w) {
        case 1: out[i] = info->is_signed ? (uint64_t)(int64_t)((int8_t *)raw)[i] : ((uint8_t *)raw)[i]; break;
        case 2: out[i] = info->is_signed ? (uint64_t)(int64_t)((int16_t *)raw)[i] : ((uint16_t *)raw)[i]; break;
        case 4: out[i] = info->is_signed ? (uint64_t)(int64_t)((int32_t *)raw)[i] : ((uint32_t *)raw)[i]; break;
        default: out[i] = ((uint64_t *)raw)[i];
      }
    }
  }
  free(raw);
  return rc;
}

/* A word from read_int_words as a double (exact below 2^53). */
static double word_to_double(uint64_t w, int is_signed) { return is_signed ? (double)(int64_t)w : (double)w; }

int rd_h5_read_int_words(hid_t f, const char *file, const rd_dsinfo *info, int64_t row0, int64_t nrows,
                         uint64_t *out, rd_status *st) {
  if (info->tclass != RD_TC_INT)
    return rd_fail(st, RD_EINPUT, "%s: dataset %s has %s type, expected integers", file, info->path,
                   class_name(info->tclass));
  return read_int_words(f, file, info, row0, nrows, out, st);
}

int rd_h5_read_int_rows(hid_t f, const char *file, const rd_dsinfo *info, int64_t row0, int64_t nrows,
                        int64_t *out, rd_status *st) {
  RD_TRY(rd_h5_read_int_words(f, file, info, row0, nrows, (uint64_t *)out, st));
  if (!info->is_signed) {
    int64_t n = nrows * row_elems(info);
    for (int64_t i = 0; i < n; i++)
      if ((uint64_t)out[i] > (uint64_t)INT64_MAX)
        return rd_fail_at(st, RD_EINPUT, row0 * row_elems(info) + i, "%s: %s: value %llu at element %lld is above 2^63 - 1",
                          file, info->path, (unsigned long long)out[i], (long long)(row0 * row_elems(info) + i));
  }
  return RD_OK;
}

int rd_h5_read_flag_rows(hid_t f, const char *file, const rd_dsinfo *info, int64_t row0, int64_t nrows,
                         uint8_t *out, rd_status *st) {
  int64_t cols = row_elems(info), n = nrows * cols;
  if (info->tclass != RD_TC_INT)
    return rd_fail(st, RD_EINPUT, "%s: dataset %s has %s type, expected 0/1 integers or booleans", file,
                   info->path, class_name(info->tclass));
  if (info->tsize == 1 && !info->is_signed) {
    hid_t d = H5Dopen2(f, info->path, H5P_DEFAULT);
    hid_t ft = d >= 0 ? H5Dget_type(d) : H5I_INVALID_HID;
    int is_enum = ft >= 0 && H5Tget_class(ft) == H5T_ENUM;
    if (ft >= 0) H5Tclose(ft);
    if (d >= 0) H5Dclose(d);
    if (!is_enum) {
      RD_TRY(read_sel(f, file, info, row0, nrows, H5T_NATIVE_UINT8, out, st));
      for (int64_t i = 0; i < n; i++)
        if (out[i] > 1) {
          int64_t r = row0 + i / cols, c = i % cols;
          if (info->ndims == 2)
            return rd_fail_at(st, RD_EINPUT, (row0 * cols + i), "%s: %s[%lld, %lld] = %u, expected 0 or 1", file,
                              info->path, (long long)r, (long long)c, out[i]);
          return rd_fail_at(st, RD_EINPUT, (row0 * cols + i), "%s: %s[%lld] = %u, expected 0 or 1", file,
                            info->path, (long long)r, out[i]);
        }
      return RD_OK;
    }
  }
  uint64_t *wide = malloc(sizeof(uint64_t) * (size_t)(n ? n : 1));
  if (!wide) return rd_fail(st, RD_EFAIL, "out of memory reading %s", info->path);
  int rc = read_int_words(f, file, info, row0, nrows, wide, st);
  for (int64_t i = 0; rc == RD_OK && i < n; i++) {
    if (wide[i] > 1) {
      int64_t r = row0 + i / cols, c = i % cols;
      char val[32];
      if (info->is_signed) snprintf(val, sizeof val, "%lld", (long long)(int64_t)wide[i]);
      else snprintf(val, sizeof val, "%llu", (unsigned long long)wide[i]);
      if (info->ndims == 2)
        rc = rd_fail_at(st, RD_EINPUT, row0 * cols + i, "%s: %s[%lld, %lld] = %s, expected 0 or 1", file, info->path,
                        (long long)r, (long long)c, val);
      else
        rc = rd_fail_at(st, RD_EINPUT, row0 * cols + i, "%s: %s[%lld] = %s, expected 0 or 1", file, info->path,
                        (long long)r, val);
      break;
    }
    out[i] = (uint8_t)wide[i];
  }
  free(wide);
  return rc;
}

int rd_h5_read_numeric(hid_t f, const char *file, const rd_dsinfo *info, double *out, rd_status *st) {
  int64_t n = info->ndims ? info->dims[0] * row_elems(info) : 1;
  if (info->tclass == RD_TC_FLOAT) return read_sel(f, file, info, 0, info->ndims ? info->dims[0] : 1,
                                                   H5T_NATIVE_DOUBLE, out, st);
  if (info->tclass != RD_TC_INT)
    return rd_fail(st, RD_EINPUT, "%s: dataset %s has %s type, expected numbers", file, info->path,
                   class_name(info->tclass));
  uint64_t *tmp = malloc(sizeof(uint64_t) * (size_t)(n ? n : 1));
  if (!tmp) return rd_fail(st, RD_EFAIL, "out of memory reading %s", info->path);
  int rc = read_int_words(f, file, info, 0, info->ndims ? info->dims[0] : 1, tmp, st);
  for (int64_t i = 0; rc == RD_OK && i < n; i++) out[i] = word_to_double(tmp[i], info->is_signed);
  free(tmp);
  return rc;
}

int rd_h5_read_strings(hid_t f, const char *file, const rd_dsinfo *info, char **buf, size_t *buflen,
                       int64_t **offsets, rd_status *st) {
  *buf = NULL;
  *offsets = NULL;
  *buflen = 0;
  if (info->tclass != RD_TC_STRING || info->ndims != 1)
    return rd_fail(st, RD_EINPUT, "%s: dataset %s must be a 1-D string dataset", file, info->path);
  int64_t n = info->dims[0];
  hid_t d = H5Dopen2(f, info->path, H5P_DEFAULT);
  if (d < 0) return rd_fail(st, RD_EINPUT, "%s: cannot open dataset %s", file, info->path);
  hid_t ft = H5Dget_type(d), space = H5Dget_space(d);
  int is_var = H5Tis_variable_str(ft) > 0;
  hid_t mt = H5Tcopy(H5T_C_S1);
  H5Tset_cset(mt, H5Tget_cset(ft));
  int rc = RD_OK;
  int64_t *off = malloc(sizeof(int64_t) * (size_t)(n + 1));
  char *out = NULL;
  if (!off) {
    rc = rd_fail(st, RD_EFAIL, "out of memory reading %s", info->path);
  } else if (is_var) {
    H5Tset_size(mt, H5T_VARIABLE);
    char **ptrs = calloc((size_t)(n ? n : 1), sizeof *ptrs);
    /* every heap reference is checked first: HDF5 would follow a corrupt one out of its buffers */
    int checked = ptrs ? rd_h5i_vlen_check(d, file, info, st) : rd_fail(st, RD_EFAIL, "out of memory reading %s",
                                                                            info->path);
    if (checked != RD_OK) {
      rc = checked;
    } else if (H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, ptrs) < 0) {
      rc = rd_fail(st, RD_EINPUT, "%s: cannot read strings of dataset %s", file, info->path);
    } else {
      size_t total = 0;
      for (int64_t i = 0; i < n; i++) total += (ptrs[i] ? strlen(ptrs[i]) : 0) + 1;
      out = malloc(total ? total : 1);
      if (!out) {
        rc = rd_fail(st, RD_EFAIL, "out of memory reading %s", info->path);
      } else {
        size_t pos = 0;
        for (int64_t i = 0; i < n; i++) {
          size_t l = ptrs[i] ? strlen(ptrs[i]) : 0;
          off[i] = (int64_t)pos;
          if (l) memcpy(out + pos, ptrs[i], l);
          out[pos + l] = '\0';
          pos += l + 1;
        }
        off[n] = (int64_t)pos;
        *buflen = pos;
      }
      H5Dvlen_reclaim(mt, space, H5P_DEFAULT, ptrs);
    }
    free(ptrs);
  } else {
    size_t w = H5Tget_size(ft);
    H5Tset_size(mt, w);
    H5Tset_strpad(mt, H5Tget_strpad(ft));
    char *raw = malloc((size_t)(n ? n : 1) * w);
    out = malloc((size_t)(n ? n : 1) * (w + 1));
    if (!raw || !out) {
      rc = rd_fail(st, RD_EFAIL, "out of memory reading %s", info->path);
    } else if (H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, raw) < 0) {
      rc = rd_fail(st, RD_EINPUT, "%s: cannot read strings of dataset %s", file, info->path);
    } else {
      int spacepad = H5Tget_strpad(ft) == H5T_STR_SPACEPAD;
      size_t pos = 0;
      for (int64_t i = 0; i < n; i++) {
        const char *s = raw + (size_t)i * w;
        size_t l = 0;
        while (l < w && s[l] != '\0') l++;
        if (spacepad)
          while (l > 0 && s[l - 1] == ' ') l--;
        off[i] = (int64_t)pos;
        memcpy(out + pos, s, l);
        out[pos + l] = '\0';
        pos += l + 1;
      }
      off[n] = (int64_t)pos;
      *buflen = pos;
    }
    free(raw);
  }
  H5Tclose(mt);
  H5Tclose(ft);
  H5Sclose(space);
  H5Dclose(d);
  /* names end up in JSON reports and messages: they must be UTF-8 text (ASCII included) */
  for (int64_t i = 0; rc == RD_OK && i < n; i++) {
    int64_t at = rd_utf8_invalid_at(out + off[i], (size_t)(off[i + 1] - off[i] - 1));
    if (at >= 0)
      rc = rd_fail(st, RD_EINPUT, "%s: %s[%lld] is not valid UTF-8 text (byte %lld = 0x%02x); expected UTF-8 strings",
                   file, info->path, (long long)i, (long long)at, (unsigned)(unsigned char)out[off[i] + at]);
  }
  if (rc != RD_OK) {
    free(off);
    free(out);
    return rc;
  }
  *buf = out;
  *offsets = off;
  return RD_OK;
}

int rd_h5_read_attr_string(hid_t f, const char *obj_path, const char *name, char *out, size_t outlen) {
  out[0] = '\0';
  if (H5Aexists_by_name(f, obj_path, name, H5P_DEFAULT) <= 0) return 0;
  hid_t a = H5Aopen_by_name(f, obj_path, name, H5P_DEFAULT, H5P_DEFAULT);
  if (a < 0) return 0;
  hid_t t = H5Aget_type(a);
  int ok = 0;
  if (H5Tget_class(t) == H5T_STRING) {
    hid_t mt = H5Tcopy(H5T_C_S1);
    H5Tset_cset(mt, H5Tget_cset(t));
    if (H5Tis_variable_str(t) > 0) {
      H5Tset_size(mt, H5T_VARIABLE);
      char *s = NULL;
      if (H5Aread(a, mt, &s) >= 0 && s) {
        snprintf(out, outlen, "%s", s);
        ok = 1;
        H5free_memory(s);
      }
    } else {
      size_t w = H5Tget_size(t);
      H5Tset_size(mt, w);
      char *s = calloc(w + 1, 1);
      if (s && H5Aread(a, mt, s) >= 0) {
        snprintf(out, outlen, "%s", s);
        ok = 1;
      }
      free(s);
    }
    H5Tclose(mt);
  }
  H5Tclose(t);
  H5Aclose(a);
  return ok;
}

typedef struct {
  char **names;
  int n, cap;
  hid_t group;
} list_acc;

static herr_t list_cb(hid_t g, const char *name, const H5L_info_t *li, void *data) {
  (void)li;
  list_acc *a = data;
  H5O_info_t oi;
  if (H5Oget_info_by_name(g, name, &oi, H5P_DEFAULT) < 0 || oi.type != H5O_TYPE_DATASET) return 0;
  if (a->n + 1 >= a->cap) {
    int cap = a->cap ? 2 * a->cap : 16;
    char **nn = realloc(a->names, sizeof(char *) * (size_t)cap);
    if (!nn) return -1;
    a->names = nn;
    a->cap = cap;
  }
  a->names[a->n++] = strdup(name);
  a->names[a->n] = NULL;
  return 0;
}

int rd_h5_list(hid_t f, const char *file, const char *path, char ***names, int *n, rd_status *st) {
  *names = NULL;
  *n = 0;
  if (!rd_h5_exists(f, path)) return RD_OK;
  hid_t g = H5Gopen2(f, path, H5P_DEFAULT);
  if (g < 0) return rd_fail(st, RD_EINPUT, "%s: %s is not a group", file, path);
  list_acc a = {NULL, 0, 0, g};
  hsize_t idx = 0;
  herr_t e = H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, &idx, list_cb, &a);
  H5Gclose(g);
  if (e < 0) {
    rd_h5_free_list(a.names, a.n);
    return rd_fail(st, RD_EINPUT, "%s: cannot list group %s", file, path);
  }
  *names = a.names;
  *n = a.n;
  return RD_OK;
}

void rd_h5_free_list(char **names, int n) {
  for (int i = 0; i < n; i++) free(names[i]);
  free(names);
}

/* The name of the file an object lives in (an external link can lead to another file). */
static int same_file(hid_t f, hid_t obj) {
  char a[4096], b[4096];
  ssize_t na = H5Fget_name(f, a, sizeof a), nb = H5Fget_name(obj, b, sizeof b);
  return na > 0 && nb > 0 && (size_t)na < sizeof a && (size_t)nb < sizeof b && strcmp(a, b) == 0;
}

/* The file's end of allocated space (relative to its base address): from f, or, where f's driver
 * does not report it (HDF5 1.10's MPI-IO driver), from the same file opened once more with the
 * default driver. */
static int file_eoa(hid_t f, haddr_t *eoa) {
  herr_t rc;
  H5E_BEGIN_TRY { rc = H5Fget_eoa(f, eoa); } H5E_END_TRY;
  if (rc >= 0 && *eoa != HADDR_UNDEF) return 0;
  char name[4096];
  ssize_t nn = H5Fget_name(f, name, sizeof name);
  if (nn <= 0 || (size_t)nn >= sizeof name) return -1;
  /* without file locking: a parallel file system may refuse the lock the default driver takes */
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS), g = H5I_INVALID_HID;
#if H5_VERSION_GE(1, 10, 7)
  if (fapl >= 0) H5Pset_file_locking(fapl, 0, 1);
#endif
  if (fapl >= 0) {
    H5E_BEGIN_TRY { g = H5Fopen(name, H5F_ACC_RDONLY, fapl); } H5E_END_TRY;
    H5Pclose(fapl);
  }
  if (g < 0) return -1;
  H5E_BEGIN_TRY { rc = H5Fget_eoa(g, eoa); } H5E_END_TRY;
  H5Fclose(g);
  return rc >= 0 && *eoa != HADDR_UNDEF ? 0 : -1;
}

int64_t rd_h5_readable_end(hid_t f) {
  hid_t fcpl = H5Fget_create_plist(f);
  hsize_t ub = 0;
  haddr_t eoa = HADDR_UNDEF;
  char name[4096];
  struct stat sb;
  ssize_t nn = H5Fget_name(f, name, sizeof name);  /* the size on disk (H5Fget_filesize gives HDF5's view) */
  int ok = fcpl >= 0 && H5Pget_userblock(fcpl, &ub) >= 0 && nn > 0 && (size_t)nn < sizeof name &&
           stat(name, &sb) == 0 && file_eoa(f, &eoa) == 0 && ub <= (hsize_t)INT64_MAX &&
           eoa <= (haddr_t)INT64_MAX - ub;
  if (fcpl >= 0) H5Pclose(fcpl);
  if (!ok) return -1;
  int64_t end = (int64_t)ub + (int64_t)eoa;
  return end < (int64_t)sb.st_size ? end : (int64_t)sb.st_size;
}

int rd_h5_contig_offset(hid_t f, const rd_dsinfo *info, hid_t memtype, int64_t *offset) {
  *offset = -1;
  const char *off = getenv("RMDIAG_NO_MMAP");
  if (off && strcmp(off, "0") != 0) return 0;
  hid_t d = H5Dopen2(f, info->path, H5P_DEFAULT);
  if (d < 0) return 0;
  hid_t dcpl = H5Dget_create_plist(d), ft = H5Dget_type(d);
  size_t esize = H5Tget_size(ft);
  /* mappable: stored whole in this very file, contiguous, in the memory's type, element-aligned,
   * and before the end HDF5 reads (which is inside the file as it is on disk) */
  int ok = same_file(f, d) && H5Pget_layout(dcpl) == H5D_CONTIGUOUS && H5Pget_external_count(dcpl) == 0 &&
           H5Tequal(ft, memtype) > 0;
  haddr_t addr = ok ? H5Dget_offset(d) : HADDR_UNDEF;
  int64_t total = (int64_t)esize;
  for (int i = 0; i < info->ndims; i++) total *= info->dims[i];
  ok = ok && addr != HADDR_UNDEF && (int64_t)H5Dget_storage_size(d) == total && esize > 0 && addr % esize == 0;
  ok = ok && (int64_t)addr + total <= rd_h5_readable_end(f);
  H5Tclose(ft);
  H5Pclose(dcpl);
  H5Dclose(d);
  if (ok) *offset = (int64_t)addr;
  return ok;
}

int64_t rd_h5_chunk_rows(hid_t f, const rd_dsinfo *info, hid_t memtype) {
  const char *off = getenv("RMDIAG_NO_MMAP");
  if ((off && strcmp(off, "0") != 0) || info->ndims != 2 || info->dims[0] < 1 || info->dims[1] < 1) return 0;
  hid_t d = H5Dopen2(f, info->path, H5P_DEFAULT);
  if (d < 0) return 0;
  hid_t dcpl = H5Dget_create_plist(d), ft = H5Dget_type(d), fcpl = H5Fget_create_plist(f), fs = H5Dget_space(d);
  hsize_t chunk[2] = {0, 0}, ub = 1, n = 0;
  /* chunks of whole rows, nothing between the file and the values, every chunk written (an unwritten
   * chunk reads as the fill value, which only HDF5 supplies), addresses that are file offsets */
  int ok = dcpl >= 0 && ft >= 0 && fcpl >= 0 && same_file(f, d) && H5Pget_layout(dcpl) == H5D_CHUNKED &&
           H5Pget_nfilters(dcpl) == 0 && H5Pget_external_count(dcpl) == 0 && H5Tequal(ft, memtype) > 0 &&
           H5Pget_chunk(dcpl, 2, chunk) == 2 && chunk[0] >= 1 && (int64_t)chunk[1] == info->dims[1] &&
           H5Pget_userblock(fcpl, &ub) >= 0 && ub == 0 && fs >= 0 && H5Dget_num_chunks(d, fs, &n) >= 0 &&
           (int64_t)n == (info->dims[0] + (int64_t)chunk[0] - 1) / (int64_t)chunk[0];
  if (fs >= 0) H5Sclose(fs);
  if (fcpl >= 0) H5Pclose(fcpl);
  if (ft >= 0) H5Tclose(ft);
  if (dcpl >= 0) H5Pclose(dcpl);
  H5Dclose(d);
  return ok ? (int64_t)chunk[0] : 0;
}

int rd_h5_chunk_offsets(hid_t f, const char *path, int64_t rows_per_chunk, int64_t c0, int64_t n, int64_t *offset) {
  hid_t d = H5Dopen2(f, path, H5P_DEFAULT);
  if (d < 0) return -1;
  int rc = 0;
  for (int64_t k = 0; k < n && rc == 0; k++) {
    hsize_t at[2] = {(hsize_t)((c0 + k) * rows_per_chunk), 0}, size = 0;
    haddr_t addr = HADDR_UNDEF;
    unsigned mask = 0;
    if (H5Dget_chunk_info_by_coord(d, at, &mask, &addr, &size) < 0 || addr == HADDR_UNDEF || mask != 0) rc = -1;
    else offset[k] = (int64_t)addr;
  }
  H5Dclose(d);
  return rc;
}

const void *rd_map_rows(const char *file, int64_t offset, int64_t row_bytes, int64_t row0, int64_t nrows, rd_h5_map *m) {
  m->base = NULL;
  m->len = 0;
  if (nrows <= 0 || offset < 0) return NULL;
  int fd = open(file, O_RDONLY);
  if (fd < 0) return NULL;
  long page = sysconf(_SC_PAGESIZE);
  int64_t start = offset + row0 * row_bytes, len = nrows * row_bytes;
  int64_t aligned = start / page * page;
  void *p = mmap(NULL, (size_t)(len + (start - aligned)), PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, (off_t)aligned);
  close(fd);
  if (p == MAP_FAILED) return NULL;
  m->base = p;
  m->len = (size_t)(len + (start - aligned));
  return (const char *)p + (start - aligned);
}

void rd_h5_unmap(rd_h5_map *m) {
  if (m->base) munmap(m->base, m->len);
  m->base = NULL;
  m->len = 0;
}

int rd_h5_path(char *out, size_t n, const char *group, const char *name) {
  int len = snprintf(out, n, "%s/%s", strcmp(group, "/") == 0 ? "" : group, name);
  return len < 0 || (size_t)len >= n ? -1 : len;
}

void rd_h5i_shape_text(const rd_dsinfo *d, char *buf, size_t n) {
  size_t k = (size_t)snprintf(buf, n, "[");
  for (int i = 0; i < d->ndims && k < n; i++)
    k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? ", " : "", (long long)d->dims[i]);
  if (k < n) snprintf(buf + k, n - k, "]");
}

int rd_h5_check_layout(hid_t f, const char *file, const char *group, const rd_h5_layout *layout, const int *skip,
                       rd_h5_found *found, rd_status *st) {
  memset(found, 0, sizeof *found);
  for (int k = 0; k < RD_H5_LENS; k++) found->len[k] = -1, found->len_from[k] = -1;
  char why[900];
  int gs = rd_h5i_link_state(f, group, why, sizeof why);
  if (gs < 0) return broken_link(file, "group", group, why, st);
  if (gs == 0)
    return rd_fail(st, RD_EINPUT, "%s: group %s is missing (expected the %s input layout: see docs/reference.md, "
                   "'%s input layout')", file, group, layout->kind, layout->kind);
  char p[600];
  for (int i = 0; layout->datasets[i].name; i++) {
    const rd_h5_dataset *ds = &layout->datasets[i];
    if (i >= (int)(sizeof found->present / sizeof found->present[0]))
      return rd_fail(st, RD_EFAIL, "internal: layout table of %s too long", layout->kind);
    found->n = i + 1;
    if (rd_h5_path(p, sizeof p, group, ds->name) < 0)
      return rd_fail(st, RD_EINPUT, "%s: group name %s is too long", file, group);
    int ls = rd_h5i_link_state(f, p, why, sizeof why);
    if (ls < 0) return broken_link(file, "dataset", p, why, st);
    if (ls == 0) {
      if (ds->optional || (skip && skip[i])) continue;
      return rd_fail(st, RD_EINPUT, "%s: dataset %s is missing (expected %s)", file, p, ds->expect);
    }
    found->present[i] = 1;
    rd_dsinfo *d = &found->info[i];
    RD_TRY(rd_h5_info(f, file, p, d, st));
    RD_TRY(rd_h5_expect(d, file, ds->ndims, ds->classes, ds->expect, st));
    for (int k = 0; k < ds->ndims && k < 2; k++) {
      int l = ds->len[k];
      if (l < 0 || l >= RD_H5_LENS) continue;
      if (found->len[l] < 0) {
        found->len[l] = d->dims[k];
        found->len_from[l] = i;
        continue;
      }
      if (d->dims[k] == found->len[l]) continue;
      const rd_dsinfo *ref = &found->info[found->len_from[l]];
      char s1[96], s2[96];
      rd_h5i_shape_text(d, s1, sizeof s1);
      rd_h5i_shape_text(ref, s2, sizeof s2);
      return rd_fail(st, RD_EINPUT, "%s: %s has shape %s but %s has %s; expected the same number of %s", file, d->path,
                     s1, ref->path, s2, layout->len_names && layout->len_names[l] ? layout->len_names[l] : "entries");
    }
  }
  return RD_OK;
}
