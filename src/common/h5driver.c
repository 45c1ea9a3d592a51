/* The HDF5 file driver of output files (see h5driver.h): POSIX pread/pwrite with the feature flags of
 * HDF5's default driver, so HDF5 lays the file out the same way and writes the same bytes; it keeps
 * the errno of the first failed write for messages, and once the file is being closed after an
 * error it drops writes (keeping metadata in memory, should HDF5 read it back) so the close
 * completes and HDF5 forgets the file. */
#include "rmdiag/common/h5driver.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rmdiag/common/files.h"

/* the largest address an off_t reaches */
#define OUT_MAXADDR ((haddr_t)(((uint64_t)1 << 63) - 1))
/* the most one pread/pwrite moves (Linux moves at most about 2 GiB per call) */
#define OUT_IO_MAX ((size_t)1 << 30)

/* Metadata written after an error while closing: dropped from the file, kept for reads. */
typedef struct kept_write {
  haddr_t addr;
  size_t size;
  unsigned char *bytes;
} kept_write;

typedef struct out_file {
  H5FD_t pub;  /* first: HDF5 sees this */
  int fd;
  haddr_t eoa, eof;
  dev_t dev;
  ino_t ino;
  int err;      /* errno of the first failed write, truncation or close */
  int discard;  /* being closed: after an error, writes and truncation succeed without effect */
  kept_write *kept;
  size_t n_kept, cap_kept;
} out_file;

/* what the last close saw (a close runs inside H5Fclose, or later when objects were still open) */
static unsigned long closes_seen;
static int last_close_err;
static int last_open_err;

static H5FD_t *out_open(const char *name, unsigned flags, hid_t fapl, haddr_t maxaddr) {
  (void)fapl;
  if (!name || !*name || maxaddr == 0 || maxaddr == HADDR_UNDEF || maxaddr > OUT_MAXADDR) return NULL;
  int oflags = (flags & H5F_ACC_RDWR) ? O_RDWR : O_RDONLY;
  if (flags & H5F_ACC_TRUNC) oflags |= O_TRUNC;
  if (flags & H5F_ACC_CREAT) oflags |= O_CREAT;
  if (flags & H5F_ACC_EXCL) oflags |= O_EXCL;
  int fd = open(name, oflags | O_CLOEXEC, 0666);
  struct stat sb;
  if (fd < 0 || fstat(fd, &sb) != 0) {
    last_open_err = errno;
    if (fd >= 0) close(fd);
    return NULL;
  }
  out_file *o = calloc(1, sizeof *o);
  if (!o) {
    close(fd);
    last_open_err = ENOMEM;
    return NULL;
  }
  o->fd = fd;
  o->eof = (haddr_t)sb.st_size;
  o->dev = sb.st_dev;
  o->ino = sb.st_ino;
  last_open_err = 0;
  return &o->pub;
}

static herr_t out_close(H5FD_t *file) {
  out_file *o = (out_file *)file;
  /* a network file system may report a full disk only now; the descriptor is released either way
   * and the close never fails (a failed close would leave HDF5 holding a freed file) */
  if (close(o->fd) != 0 && !o->err) o->err = errno;
  closes_seen++;
  last_close_err = o->err;
  for (size_t i = 0; i < o->n_kept; i++) free(o->kept[i].bytes);
  free(o->kept);
  free(o);
  return 0;
}

static int out_cmp(const H5FD_t *a, const H5FD_t *b) {
  const out_file *x = (const out_file *)a, *y = (const out_file *)b;
  if (x->dev != y->dev) return x->dev < y->dev ? -1 : 1;
  if (x->ino != y->ino) return x->ino < y->ino ? -1 : 1;
  return 0;
}

static herr_t out_query(const H5FD_t *file, unsigned long *flags) {
  (void)file;
  /* those of HDF5's default (sec2) driver: the same aggregation, accumulation and sieving, hence the
   * same layout and bytes */
  *flags = H5FD_FEAT_AGGREGATE_METADATA | H5FD_FEAT_ACCUMULATE_METADATA | H5FD_FEAT_DATA_SIEVE |
           H5FD_FEAT_AGGREGATE_SMALLDATA | H5FD_FEAT_POSIX_COMPAT_HANDLE | H5FD_FEAT_SUPPORTS_SWMR_IO |
           H5FD_FEAT_DEFAULT_VFD_COMPATIBLE;
  return 0;
}

static haddr_t out_get_eoa(const H5FD_t *file, H5FD_mem_t type) {
  (void)type;
  return ((const out_file *)file)->eoa;
}

static herr_t out_set_eoa(H5FD_t *file, H5FD_mem_t type, haddr_t addr) {
  (void)type;
  ((out_file *)file)->eoa = addr;
  return 0;
}

static haddr_t out_get_eof(const H5FD_t *file, H5FD_mem_t type) {
  (void)type;
  return ((const out_file *)file)->eof;
}

static herr_t out_get_handle(H5FD_t *file, hid_t fapl, void **handle) {
  (void)fapl;
  *handle = &((out_file *)file)->fd;
  return 0;
}

static herr_t out_read(H5FD_t *file, H5FD_mem_t type, hid_t dxpl, haddr_t addr, size_t size, void *buf) {
  (void)type, (void)dxpl;
  out_file *o = (out_file *)file;
  if (addr == HADDR_UNDEF || addr + size < addr || addr + size > o->eoa) return -1;
  unsigned char *p = buf;
  haddr_t at = addr;
  size_t left = size;
  while (left > 0) {
    ssize_t r = pread(o->fd, p, left < OUT_IO_MAX ? left : OUT_IO_MAX, (off_t)at);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -1;
    if (r == 0) {  /* past the end of the file: zeros, as HDF5 expects */
      memset(p, 0, left);
      break;
    }
    p += r, at += (haddr_t)r, left -= (size_t)r;
  }
  for (size_t i = 0; i < o->n_kept; i++) {  /* in write order: the last write wins */
    const kept_write *k = &o->kept[i];
    haddr_t lo = k->addr > addr ? k->addr : addr;
    haddr_t hi = k->addr + k->size < addr + size ? k->addr + k->size : addr + size;
    if (lo < hi) memcpy((unsigned char *)buf + (lo - addr), k->bytes + (lo - k->addr), (size_t)(hi - lo));
  }
  return 0;
}

/* A write dropped from a file closed after an error: metadata kept for reads, raw data not. */
static herr_t keep(out_file *o, H5FD_mem_t type, haddr_t addr, size_t size, const void *buf) {
  if (addr + size > o->eof) o->eof = addr + size;
  if (type == H5FD_MEM_DRAW || size == 0) return 0;
  if (o->n_kept == o->cap_kept) {
    size_t cap = o->cap_kept ? 2 * o->cap_kept : 16;
    kept_write *k = realloc(o->kept, cap * sizeof *k);
    if (!k) return 0;
    o->kept = k;
    o->cap_kept = cap;
  }
  unsigned char *copy = malloc(size);
  if (!copy) return 0;
  memcpy(copy, buf, size);
  o->kept[o->n_kept++] = (kept_write){addr, size, copy};
  return 0;
}

static herr_t out_write(H5FD_t *file, H5FD_mem_t type, hid_t dxpl, haddr_t addr, size_t size, const void *buf) {
  (void)dxpl;
  out_file *o = (out_file *)file;
  if (addr == HADDR_UNDEF || addr + size < addr || addr + size > o->eoa) return -1;
  if (o->err && o->discard) return keep(o, type, addr, size, buf);
  const unsigned char *p = buf;
  haddr_t at = addr;
  size_t left = size;
  while (left > 0) {
    ssize_t w = pwrite(o->fd, p, left < OUT_IO_MAX ? left : OUT_IO_MAX, (off_t)at);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      if (!o->err) o->err = w < 0 ? errno : EIO;
      return o->discard ? keep(o, type, addr, size, buf) : -1;
    }
    p += w, at += (haddr_t)w, left -= (size_t)w;
  }
  if (addr + size > o->eof) o->eof = addr + size;
  return 0;
}

static herr_t out_truncate(H5FD_t *file, hid_t dxpl, hbool_t closing) {
  (void)dxpl, (void)closing;
  out_file *o = (out_file *)file;
  if (o->eoa == o->eof) return 0;
  if (o->err && o->discard) return 0;
  if (ftruncate(o->fd, (off_t)o->eoa) != 0) {
    if (!o->err) o->err = errno;
    return o->discard ? 0 : -1;
  }
  o->eof = o->eoa;
  return 0;
}

static const H5FD_class_t out_class = {
    .name = "rmdiag_output",
    .maxaddr = OUT_MAXADDR,
    .fc_degree = H5F_CLOSE_WEAK,
    .open = out_open,
    .close = out_close,
    .cmp = out_cmp,
    .query = out_query,
    .get_eoa = out_get_eoa,
    .set_eoa = out_set_eoa,
    .get_eof = out_get_eof,
    .get_handle = out_get_handle,
    .read = out_read,
    .write = out_write,
    .truncate = out_truncate,
    .fl_map = H5FD_FLMAP_DICHOTOMY,
};

static hid_t driver_id = H5I_INVALID_HID;

static hid_t out_driver(void) {
  if (driver_id < 0 || H5Iis_valid(driver_id) <= 0) driver_id = H5FDregister(&out_class);
  return driver_id;
}

hid_t rd_h5_out_fapl(void) {
  hid_t drv = out_driver();
  if (drv < 0) return H5I_INVALID_HID;
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  if (fapl >= 0 && H5Pset_driver(fapl, drv, NULL) < 0) {
    H5Pclose(fapl);
    return H5I_INVALID_HID;
  }
  return fapl;
}

int rd_h5_out_open_errno(void) { return last_open_err; }

/* The driver's state of `f`, or NULL when f was not opened with this driver. */
static out_file *out_of(hid_t f) {
  hid_t fapl = H5Fget_access_plist(f);
  if (fapl < 0) return NULL;
  int ours = driver_id >= 0 && H5Pget_driver(fapl) == driver_id;
  void *handle = NULL;
  if (ours && H5Fget_vfd_handle(f, fapl, &handle) < 0) handle = NULL;
  H5Pclose(fapl);
  return handle ? (out_file *)((char *)handle - offsetof(out_file, fd)) : NULL;
}

int rd_h5_out_errno(hid_t f) {
  out_file *o = out_of(f);
  return o ? o->err : 0;
}

int rd_h5_out_close(hid_t f, const char *path, rd_status *st) {
  if (f < 0) return st->code;
  out_file *o = out_of(f);
  int err = 0;
  if (o) o->discard = 1;
  unsigned long seen = closes_seen;
  int before = o ? o->err : 0;
  herr_t rc = H5Fclose(f);
  /* (the driver closes inside H5Fclose unless objects of the file are still open) */
  err = closes_seen != seen ? last_close_err : before;
  if (err) {
    if (st->code == RD_OK) {
      rd_fail(st, RD_EFAIL, "%s: cannot write the output HDF5 file: %s", path, rd_io_cause(err));
    } else if (!strstr(st->msg, rd_io_cause(err))) {
      size_t n = strlen(st->msg);
      snprintf(st->msg + n, sizeof st->msg - n, ": %s", rd_io_cause(err));
    }
  } else if (rc < 0 && st->code == RD_OK) {
    rd_fail(st, RD_EFAIL, "%s: closing the output HDF5 file failed", path);
  }
  return st->code;
}
