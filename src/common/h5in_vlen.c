/* Variable-length strings from an untrusted file: every string's heap reference is checked against
 * the file's bytes before HDF5 is allowed to follow it.
 *
 * A variable-length string is stored as its length and a reference (collection address, object
 * index) into a global heap collection. HDF5 1.10 parses a collection without checking it: an
 * object size larger than its collection makes H5Dread copy past the collection's buffer and past
 * the string's own buffer (heap corruption), an object index the collection lacks reads through a
 * NULL or stale pointer, and a free-space object of size 0 never ends the parse. So the raw
 * references are read here (contiguous data straight from the file; chunks through the chunk index,
 * filtered ones decoded by HDF5 in an in-memory scratch file as opaque bytes, which follows no
 * reference), each referenced collection is parsed the way HDF5 parses it, with every bound checked,
 * and each reference must name an object whose size is the string's length. Only then does H5Dread
 * run, on a heap it cannot overrun. */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "h5in_internal.h"

#define SEE "see docs/reference.md, 'HDF5 inputs'"

typedef struct vref {
  uint64_t addr;
  uint32_t len, idx;
  int64_t elem;
} vref;

typedef struct vctx {
  const char *file, *path;
  int fd;
  uint64_t fsize;  /* the end of what HDF5 reads from the file (rd_h5_readable_end) */
  uint64_t base;   /* the file offset of address 0 (the user block's size) */
  size_t sa, ss;   /* bytes of a file address and of a length in this file */
} vctx;

static uint64_t get_le(const uint8_t *p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

static int corrupt(const vctx *c, rd_status *st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int corrupt(const vctx *c, rd_status *st, const char *fmt, ...) {
  char what[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return rd_fail(st, RD_EINPUT, "%s: dataset %s: its variable-length strings are corrupt (%s); %s", c->file, c->path,
                 what, SEE);
}

static int pread_all(const vctx *c, void *buf, uint64_t n, uint64_t off) {
  if (off > c->fsize || n > c->fsize - off) return -1;
  uint8_t *p = buf;
  while (n) {
    ssize_t r = pread(c->fd, p, n, (off_t)off);
    if (r <= 0) return -1;
    p += r, off += (uint64_t)r, n -= (uint64_t)r;
  }
  return 0;
}

/* ---- the raw references ------------------------------------------------------------------------ */

/* Decodes filtered chunks: HDF5 applies the filters a chunk went through (those its filter mask
 * does not skip) to its raw bytes, written into a one-chunk dataset of opaque elements of the same
 * size in a file that lives only in memory. (The scratch pipeline holds just those filters: HDF5
 * 1.10 does not honour a mask given to H5Dwrite_chunk when reading back.) */
typedef struct decoder {
  hid_t f, d, t;
  unsigned mask;
} decoder;

static int decoder_open(decoder *z, hid_t dcpl, hsize_t chunk, size_t esz, unsigned mask) {
  static int serial = 0;
  char name[64];
  snprintf(name, sizeof name, "rmdiag-vlen-scratch-%d-%d", (int)getpid(), serial++);
  z->f = z->d = z->t = H5I_INVALID_HID;
  z->mask = mask;
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS), zd = H5Pcreate(H5P_DATASET_CREATE), sp = H5Screate_simple(1, &chunk, NULL);
  H5Pset_fapl_core(fapl, 1 << 20, 0);
  z->f = H5Fcreate(name, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  z->t = H5Tcreate(H5T_OPAQUE, esz);
  H5Pset_chunk(zd, 1, &chunk);
  int n = H5Pget_nfilters(dcpl);
  for (int i = 0; i < n; i++) {
    unsigned flags = 0, vals[64], cfg = 0;
    size_t nv = 64;
    char fname[8];
    H5Z_filter_t id = H5Pget_filter2(dcpl, (unsigned)i, &flags, &nv, vals, sizeof fname, fname, &cfg);
    if (i < 32 && (mask >> i) & 1u) continue;
    if (id < 0 || nv > 64 || H5Pset_filter(zd, id, flags, nv, vals) < 0) n = -1;
  }
  if (n >= 0 && z->f >= 0 && z->t >= 0) z->d = H5Dcreate2(z->f, "c", z->t, sp, H5P_DEFAULT, zd, H5P_DEFAULT);
  H5Sclose(sp);
  H5Pclose(zd);
  H5Pclose(fapl);
  return z->d >= 0 ? 0 : -1;
}

static void decoder_close(decoder *z) {
  if (z->d >= 0) H5Dclose(z->d);
  if (z->t >= 0) H5Tclose(z->t);
  if (z->f >= 0) H5Fclose(z->f);
  z->f = z->d = z->t = H5I_INVALID_HID;
}

/* What to add to a chunk's address for its file offset: HDF5 before 1.14.4 gives chunk addresses from
 * the base address (the user block's end), as heap addresses are; 1.14.4 and later from the file's
 * start. */
static uint64_t chunk_base(const vctx *c) {
  unsigned maj = 0, min = 0, rel = 0;
  H5get_libversion(&maj, &min, &rel);
  int from_start = maj > 1 || (maj == 1 && (min > 14 || (min == 14 && rel >= 4)));
  return from_start ? 0 : c->base;
}

/* The stored elements of a chunked dataset, chunk by chunk. */
static int chunked_raw(const vctx *c, hid_t d, hid_t dcpl, int64_t n, size_t esz, uint8_t *raw, rd_status *st) {
  hsize_t chunk = 0;
  if (H5Pget_chunk(dcpl, 1, &chunk) != 1 || chunk == 0) return corrupt(c, st, "unreadable chunk shape");
  int nf = H5Pget_nfilters(dcpl), filtered = nf > 0;
  unsigned all = nf >= 32 ? ~0u : (1u << nf) - 1;
  decoder z = {H5I_INVALID_HID, H5I_INVALID_HID, H5I_INVALID_HID, 0};
  const uint64_t cbase = chunk_base(c);
  uint8_t *buf = malloc((size_t)chunk * esz), *cbuf = NULL;
  int rc = buf ? RD_OK : rd_fail(st, RD_EFAIL, "out of memory checking %s", c->path);
  for (hsize_t off = 0; rc == RD_OK && off < (hsize_t)n; off += chunk) {
    unsigned mask = 0;
    haddr_t addr = HADDR_UNDEF;
    hsize_t size = 0;
    if (H5Dget_chunk_info_by_coord(d, &off, &mask, &addr, &size) < 0 || addr == HADDR_UNDEF) {
      rc = corrupt(c, st, "the chunk at element %lld is missing", (long long)off);
      break;
    }
    int decode = filtered && (mask & all) != all;  /* a set bit: that filter was skipped for this chunk */
    if (!decode && size != chunk * esz) {
      rc = corrupt(c, st, "the chunk at element %lld has %lld stored bytes", (long long)off, (long long)size);
      break;
    }
    uint8_t *tmp = realloc(cbuf, size ? size : 1);
    if (!tmp) {
      rc = rd_fail(st, RD_EFAIL, "out of memory checking %s", c->path);
      break;
    }
    cbuf = tmp;
    if (addr > c->fsize - cbase || pread_all(c, cbuf, size, cbase + addr) != 0) {
      rc = corrupt(c, st, "the chunk at element %lld lies outside the file (%lld bytes)", (long long)off,
                   (long long)size);
      break;
    }
    if (decode && (z.d < 0 || z.mask != mask)) {
      decoder_close(&z);
      if (decoder_open(&z, dcpl, chunk, esz, mask) != 0) {
        rc = rd_fail(st, RD_EINPUT, "%s: dataset %s: its chunks of variable-length strings cannot be decoded for "
                     "checking with their filters; rewrite the dataset without filters; %s", c->file, c->path, SEE);
        break;
      }
    }
    if (decode) {
      hsize_t zero = 0;
      if (H5Dwrite_chunk(z.d, H5P_DEFAULT, 0, &zero, size, cbuf) < 0 ||
          H5Dread(z.d, z.t, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0) {
        rc = corrupt(c, st, "the chunk at element %lld does not decode", (long long)off);
        break;
      }
    } else {
      memcpy(buf, cbuf, (size_t)chunk * esz);
    }
    hsize_t m = (hsize_t)n - off < chunk ? (hsize_t)n - off : chunk;
    memcpy(raw + off * esz, buf, m * esz);
  }
  free(cbuf);
  free(buf);
  decoder_close(&z);
  return rc;
}

/* The n stored elements (length, address, index) of the dataset, as bytes. */
static int raw_refs(const vctx *c, hid_t d, int64_t n, size_t esz, uint8_t *raw, rd_status *st) {
  hid_t dcpl = H5Dget_create_plist(d);
  int rc = RD_OK;
  switch (dcpl < 0 ? H5D_LAYOUT_ERROR : H5Pget_layout(dcpl)) {
    case H5D_CONTIGUOUS: {
      haddr_t a = H5Dget_offset(d);
      if (H5Pget_external_count(dcpl) > 0 || a == HADDR_UNDEF || pread_all(c, raw, (uint64_t)n * esz, a) != 0)
        rc = corrupt(c, st, "its %lld references do not lie inside the file as HDF5 reads it", (long long)n);
      break;
    }
    case H5D_CHUNKED:
      rc = chunked_raw(c, d, dcpl, n, esz, raw, st);
      break;
    default:
      rc = rd_fail(st, RD_EINPUT, "%s: dataset %s keeps variable-length strings in a compact or other layout, which "
                   "rmdiag cannot check before reading; rewrite it contiguous or chunked (h5py's defaults); %s",
                   c->file, c->path, SEE);
  }
  if (dcpl >= 0) H5Pclose(dcpl);
  return rc;
}

/* ---- the heap collections ---------------------------------------------------------------------- */

typedef struct hobj {
  uint64_t begin, size;
  unsigned gen;  /* the collection (count from 1) that set it */
} hobj;

static int cmp_ref(const void *a, const void *b) {
  const vref *x = a, *y = b;
  if (x->addr != y->addr) return x->addr < y->addr ? -1 : 1;
  return (x->elem > y->elem) - (x->elem < y->elem);
}

/* Parses the collection at `addr` as HDF5 does (signature, version, size; then objects: index,
 * reference count, reserved, size, data padded to 8 bytes; index 0 is free space, and a tail too
 * short for an object header is free space), checking that every object lies inside it. */
static int parse_collection(const vctx *c, uint64_t addr, const vref *first, hobj *objs, unsigned gen, uint8_t **buf,
                            size_t *cap, rd_status *st) {
  size_t hdr = 8 + c->ss, ohdr = 8 + c->ss;
  uint8_t h[24];
  /* heap addresses count from the base address */
  uint64_t at = addr <= c->fsize - c->base ? c->base + addr : c->fsize;
  if (pread_all(c, h, hdr, at) != 0 || memcmp(h, "GCOL", 4) != 0 || h[4] != 1)
    return corrupt(c, st, "string %lld points to a heap collection at byte %lld that is not one",
                   (long long)first->elem, (long long)addr);
  uint64_t size = get_le(h + 8, c->ss);
  if (size < hdr || size > c->fsize || at > c->fsize - size)
    return corrupt(c, st, "the heap collection at byte %lld declares %lld bytes, beyond the file", (long long)addr,
                   (long long)size);
  if (size > *cap) {
    uint8_t *nb = realloc(*buf, size);
    if (!nb) return rd_fail(st, RD_EFAIL, "out of memory checking %s", c->path);
    *buf = nb, *cap = size;
  }
  if (pread_all(c, *buf, size, at) != 0)
    return corrupt(c, st, "the heap collection at byte %lld cannot be read", (long long)addr);
  const uint8_t *b = *buf;
  for (uint64_t p = hdr; p < size;) {
    if (size - p < ohdr) break;  /* free space too small for an object header */
    unsigned idx = (unsigned)get_le(b + p, 2);
    uint64_t osize = get_le(b + p + 8, c->ss);
    uint64_t need = idx ? ohdr + ((osize + 7) / 8) * 8 : osize;
    if ((idx && osize > size) || need < ohdr || need > size - p)
      return corrupt(c, st, "the heap collection at byte %lld has an object of %lld bytes that does not fit in it",
                     (long long)addr, (long long)osize);
    if (idx) objs[idx] = (hobj){p, osize, gen};
    p += need;
  }
  return RD_OK;
}

static int check_collections(const vctx *c, vref *refs, int64_t n, rd_status *st) {
  qsort(refs, (size_t)n, sizeof *refs, cmp_ref);
  hobj *objs = calloc(65536, sizeof *objs);
  uint8_t *buf = NULL;
  size_t cap = 0;
  int rc = objs ? RD_OK : rd_fail(st, RD_EFAIL, "out of memory checking %s", c->path);
  unsigned gen = 0;
  for (int64_t i = 0; rc == RD_OK && i < n;) {
    int64_t j = i;
    while (j < n && refs[j].addr == refs[i].addr) j++;
    rc = parse_collection(c, refs[i].addr, &refs[i], objs, ++gen, &buf, &cap, st);
    for (int64_t k = i; rc == RD_OK && k < j; k++) {
      const vref *r = &refs[k];
      if (r->idx == 0 || r->idx > 65535 || objs[r->idx].gen != gen || objs[r->idx].size != r->len)
        rc = corrupt(c, st, "string %lld refers to heap object %u, which is missing or not of the string's length",
                     (long long)r->elem, (unsigned)r->idx);
    }
    i = j;
  }
  free(buf);
  free(objs);
  return rc;
}

/* The width HDF5 gives a variable-length string's characters: stored in the file as the string
 * type's base type, which the API does not show for strings, so read from the type's serialized
 * form (H5Tencode: the type id 3 and encoding version 0, then the datatype message: class 9 and its
 * size, then the base type's message, whose size is bytes 4-7 of it). 0 when the form is not the
 * one expected. A corrupt width makes HDF5 size each string's buffer by it (a 9 KB file asked
 * for 2.2 GB). */
static uint32_t vlen_char_width(hid_t d) {
  hid_t t = H5Dget_type(d);
  size_t len = 0;
  uint32_t w = 0;
  if (t >= 0 && H5Tencode(t, NULL, &len) >= 0 && len >= 18 && len <= 4096) {
    uint8_t b[4096];
    if (H5Tencode(t, b, &len) >= 0 && b[0] == 3 && b[1] == 0 && (b[2] & 0x0f) == 9)
      w = (uint32_t)get_le(b + 14, 4);
  }
  if (t >= 0) H5Tclose(t);
  return w;
}

int rd_h5i_vlen_check(hid_t d, const char *file, const rd_dsinfo *info, rd_status *st) {
  int64_t n = info->dims[0];
  if (n <= 0) return RD_OK;
  uint32_t width = vlen_char_width(d);
  if (width != 0 && width != 1)
    return rd_fail(st, RD_EINPUT, "%s: dataset %s: its variable-length strings are corrupt (their characters are "
                   "declared %u bytes wide, expected 1); %s", file, info->path, (unsigned)width, SEE);
  vctx c = {file, info->path, -1, 0, 0, 8, 8};
  char name[4096];
  hid_t fid = H5Iget_file_id(d), fcpl = fid >= 0 ? H5Fget_create_plist(fid) : H5I_INVALID_HID;
  hsize_t ub = 0;
  int64_t end = fid >= 0 ? rd_h5_readable_end(fid) : -1;
  ssize_t nl = fid >= 0 ? H5Fget_name(fid, name, sizeof name) : -1;
  if (fcpl >= 0) H5Pget_sizes(fcpl, &c.sa, &c.ss), H5Pget_userblock(fcpl, &ub), H5Pclose(fcpl);
  if (fid >= 0) H5Fclose(fid);
  /* bytes past the end HDF5 reads (a corrupt file's declared end can come before its data) are
   * outside the file as far as these checks go: HDF5 would read other bytes than the check did */
  c.fsize = end > 0 ? (uint64_t)end : 0;
  c.base = ub < c.fsize ? ub : c.fsize;
  if (end < 0)
    return rd_fail(st, RD_EFAIL, "%s: dataset %s: cannot tell where HDF5 stops reading the file (its end of "
                   "allocated space), which checking its variable-length strings needs", file, info->path);
  if (nl <= 0 || (size_t)nl >= sizeof name) return rd_fail(st, RD_EINPUT, "%s: dataset %s: cannot find its file", file,
                                                           info->path);
  if ((c.sa != 4 && c.sa != 8) || (c.ss != 4 && c.ss != 8))
    return rd_fail(st, RD_EINPUT, "%s: dataset %s: variable-length strings in a file with %zu-byte addresses and "
                   "%zu-byte lengths are not supported (expected 4 or 8); %s", file, info->path, c.sa, c.ss, SEE);
  size_t esz = 4 + c.sa + 4;
  uint8_t *raw = malloc((size_t)n * esz);
  vref *refs = malloc(sizeof *refs * (size_t)n);
  int rc = raw && refs ? RD_OK : rd_fail(st, RD_EFAIL, "out of memory checking %s", info->path);
  if (rc == RD_OK && (c.fd = open(name, O_RDONLY)) < 0)
    rc = rd_fail(st, RD_EINPUT, "%s: dataset %s: cannot reopen its file to check its strings", file, info->path);
  if (rc == RD_OK) rc = raw_refs(&c, d, n, esz, raw, st);
  int64_t m = 0;
  for (int64_t i = 0; rc == RD_OK && i < n; i++) {
    const uint8_t *e = raw + (size_t)i * esz;
    vref r = {get_le(e + 4, c.sa), (uint32_t)get_le(e, 4), (uint32_t)get_le(e + 4 + c.sa, 4), i};
    /* HDF5 follows a reference only when its address is set and its length is not 0 */
    if (r.addr != 0 && r.len != 0) refs[m++] = r;
  }
  if (rc == RD_OK) rc = check_collections(&c, refs, m, st);
  if (c.fd >= 0) close(c.fd);
  free(raw);
  free(refs);
  return rc;
}
