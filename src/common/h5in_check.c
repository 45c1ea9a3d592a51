/* Checks of an input dataset before anything is read from it: its filters can be loaded, its
 * declared shape is backed by storage in the file and fits in memory (docs/reference.md, 'HDF5 inputs'). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "h5in_internal.h"

#define SEE "see docs/reference.md, 'HDF5 inputs'"

void rd_h5i_printable(const char *s, char *out, size_t n) {
  size_t k = 0;
  for (; s && s[k] && k + 1 < n; k++) out[k] = (s[k] >= 0x20 && s[k] < 0x7f) ? s[k] : '?';
  if (n) out[k] = '\0';
}

/* ---- plugin folders ---------------------------------------------------------------------------- */

/* Debian installs filter plugins beside the HDF5 library, in hdf5/<flavour>/plugins: the library's
 * compiled-in default is its own flavour's folder (openmpi), but the LZ4, BZip2 and Blosc plugins
 * exist only as serial builds (they work here: their few HDF5 calls go to the serial library they
 * bring along). So, unless the user set HDF5_PLUGIN_PATH (which then wins, as HDF5 documents), both
 * folders are searched, the parallel one first. Runs before the first input is opened, before any
 * plugin is looked for. */
void rd_h5_plugin_defaults(void) {
  static int done = 0;
  if (done) return;
  done = 1;
  if (getenv("HDF5_PLUGIN_PATH")) return;
  Dl_info di;
  if (!dladdr((void *)H5open, &di) || !di.dli_fname) return;
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", di.dli_fname);
  char *slash = strrchr(dir, '/');
  if (!slash) return;
  *slash = '\0';
  static const char *const flavours[] = {"openmpi", "mpich", "serial"};
  unsigned n = 0;
  H5PLsize(&n);
  for (size_t i = 0; i < sizeof flavours / sizeof flavours[0]; i++) {
    char p[4200];
    struct stat sb;
    snprintf(p, sizeof p, "%s/hdf5/%s/plugins", dir, flavours[i]);
    if (stat(p, &sb) != 0 || !S_ISDIR(sb.st_mode)) continue;
    /* the same folder may be named twice (/lib is /usr/lib on Debian): compare resolved paths */
    char rp[PATH_MAX], rq[PATH_MAX];
    int have = realpath(p, rp) == NULL;
    for (unsigned k = 0; k < n && !have; k++) {
      char q[4200];
      ssize_t l = H5PLget(k, q, sizeof q);
      have = l > 0 && (size_t)l < sizeof q && realpath(q, rq) && strcmp(rq, rp) == 0;
    }
    if (!have) {
      H5PLappend(rp);
      n++;
    }
  }
}

/* The plugin folders searched, "a:b", for messages. */
static void plugin_dirs(char *out, size_t n) {
  unsigned cnt = 0;
  size_t k = 0;
  out[0] = '\0';
  H5PLsize(&cnt);
  for (unsigned i = 0; i < cnt && k + 1 < n; i++) {
    char q[1024];
    ssize_t l = H5PLget(i, q, sizeof q);
    if (l <= 0 || (size_t)l >= sizeof q) continue;
    k += (size_t)snprintf(out + k, n - k, "%s%s", k ? ":" : "", q);
  }
}

/* ---- filters ----------------------------------------------------------------------------------- */

/* Filters h5py users meet, with the Debian package that provides each (NULL: none does). */
static const struct {
  int id;
  const char *name, *package;
} known_filters[] = {
    {H5Z_FILTER_DEFLATE, "gzip", NULL}, {H5Z_FILTER_SHUFFLE, "shuffle", NULL},
    {H5Z_FILTER_FLETCHER32, "fletcher32", NULL}, {H5Z_FILTER_SZIP, "szip", NULL},
    {H5Z_FILTER_NBIT, "nbit", NULL}, {H5Z_FILTER_SCALEOFFSET, "scaleoffset", NULL},
    {307, "bzip2", "hdf5-filter-plugin"}, {32000, "lzf", "hdf5-plugin-lzf"},
    {32001, "blosc", "hdf5-filter-plugin-blosc-serial"}, {32004, "lz4", "hdf5-filter-plugin"},
    {32008, "bitshuffle", "bitshuffle"}, {32013, "zfp", "hdf5-filter-plugin-zfp-serial"},
    {32015, "zstd", NULL}, {32017, "sz", NULL}, {32026, "blosc2", NULL},
};

static int filter_missing(const char *file, const char *path, int id, const char *stored_name, int decode_only,
                          rd_status *st) {
  const char *name = NULL, *pkg = NULL;
  for (size_t i = 0; i < sizeof known_filters / sizeof known_filters[0]; i++)
    if (known_filters[i].id == id) name = known_filters[i].name, pkg = known_filters[i].package;
  char shown[64], install[200], dirs[1024];
  rd_h5i_printable(stored_name, shown, sizeof shown);
  if (!name) name = shown[0] ? shown : "unnamed";
  if (pkg) snprintf(install, sizeof install, "install its plugin (on Debian: apt-get install %s)", pkg);
  else snprintf(install, sizeof install, "install an HDF5 plugin for filter %d", id);
  const char *user = getenv("HDF5_PLUGIN_PATH");
  plugin_dirs(dirs, sizeof dirs);
  return rd_fail(st, RD_EINPUT, "%s: dataset %s is stored with HDF5 filter %d (%s), which %s: %s and make sure it "
                 "is in the plugin folders searched (%s%s), or rewrite the dataset with gzip where the filter is "
                 "installed (h5py: compression=\"gzip\"; or h5repack -f %s:GZIP=4 IN OUT); %s", file, path, id, name,
                 decode_only ? "this HDF5 can only encode, not decode" : "cannot be loaded here", install,
                 user ? "HDF5_PLUGIN_PATH=" : "", user ? user : (dirs[0] ? dirs : "none"), path, SEE);
}

/* Every filter of the dataset's pipeline must be available for decoding: HDF5 would otherwise fail
 * at the first chunk with a message about corrupt data. */
static int check_filters(hid_t dcpl, const char *file, const char *path, rd_status *st) {
  int n = H5Pget_nfilters(dcpl);
  for (int i = 0; i < n; i++) {
    unsigned flags = 0, cfg = 0, vals[16];
    size_t nv = 16;
    char name[256] = "";
    H5Z_filter_t id = H5Pget_filter2(dcpl, (unsigned)i, &flags, &nv, vals, sizeof name, name, &cfg);
    if (id < 0) return rd_fail(st, RD_EINPUT, "%s: dataset %s: filter %d of its pipeline cannot be read (corrupt "
                               "file?); %s", file, path, i, SEE);
    name[sizeof name - 1] = '\0';
    if (H5Zfilter_avail(id) <= 0) return filter_missing(file, path, (int)id, name, 0, st);
    unsigned info = 0;
    if (H5Zget_filter_info(id, &info) < 0 || !(info & H5Z_FILTER_CONFIG_DECODE_ENABLED))
      return filter_missing(file, path, (int)id, name, 1, st);
  }
  return RD_OK;
}

/* ---- memory ------------------------------------------------------------------------------------ */

static int parse_bytes(const char *s, double *out) {
  char *end = NULL;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || !(v >= 1)) return -1;
  double mult = 1;
  if (*end) {
    switch (*end) {
      case 'k': case 'K': mult = 1024.0; break;
      case 'm': case 'M': mult = 1024.0 * 1024; break;
      case 'g': case 'G': mult = 1024.0 * 1024 * 1024; break;
      case 't': case 'T': mult = 1024.0 * 1024 * 1024 * 1024; break;
      default: return -1;
    }
    end++;
    if (*end == 'i' || *end == 'I') end++;
    if (*end == 'b' || *end == 'B') end++;
    if (*end) return -1;
  }
  *out = v * mult;
  return 0;
}

/* A cgroup limit (v2 memory.max of this process's cgroup, or v1 memory.limit_in_bytes), 0 when none. */
static double cgroup_limit(void) {
  char rel[1200] = "", p[1300], buf[64];
  FILE *fp = fopen("/proc/self/cgroup", "r");
  if (fp) {
    char line[1200];
    while (fgets(line, sizeof line, fp))
      if (strncmp(line, "0::", 3) == 0) {
        memcpy(rel, line + 3, strlen(line + 3) + 1);
        rel[strcspn(rel, "\n")] = '\0';
      }
    fclose(fp);
  }
  const char *tries[2] = {p, "/sys/fs/cgroup/memory/memory.limit_in_bytes"};
  snprintf(p, sizeof p, "/sys/fs/cgroup%s/memory.max", strcmp(rel, "/") == 0 ? "" : rel);
  for (int i = 0; i < 2; i++) {
    fp = fopen(tries[i], "r");
    if (!fp) continue;
    double v = 0;
    if (fgets(buf, sizeof buf, fp) && buf[0] >= '0' && buf[0] <= '9') v = strtod(buf, NULL);
    fclose(fp);
    if (v > 0 && v < 1e18) return v;
  }
  return 0;
}

/* The memory this process may use, and what sets it. */
static double memory_limit(const char **source, rd_status *st) {
  const char *env = getenv("RMDIAG_MEMORY_LIMIT");
  double lim = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE), v;
  *source = "the machine's physical memory";
  struct rlimit rl;
  if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && (double)rl.rlim_cur < lim)
    lim = (double)rl.rlim_cur, *source = "the address-space limit (ulimit -v)";
  if (getrlimit(RLIMIT_DATA, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && (double)rl.rlim_cur < lim)
    lim = (double)rl.rlim_cur, *source = "the data-size limit (ulimit -d)";
  if ((v = cgroup_limit()) > 0 && v < lim) lim = v, *source = "the cgroup's memory limit";
  if (env && *env) {
    if (parse_bytes(env, &v) != 0) {
      rd_fail(st, RD_EINPUT, "RMDIAG_MEMORY_LIMIT=%s: expected a number of bytes, optionally with K, M, G or T", env);
      return -1;
    }
    if (v < lim) lim = v, *source = "RMDIAG_MEMORY_LIMIT";
  }
  return lim;
}

static void human_bytes(double b, char *out, size_t n) {
  const char *u[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int k = 0;
  while (b >= 1024 && k < 6) b /= 1024, k++;
  if (k == 0) snprintf(out, n, "%.0f bytes", b);
  else snprintf(out, n, "%.1f %s", b, u[k]);
}

int rd_h5_check_memory(const char *file, const rd_dsinfo *info, double bytes, const char *what, rd_status *st) {
  const char *source = NULL;
  double lim = memory_limit(&source, st);
  if (lim < 0) return st->code;
  if (bytes <= lim) return RD_OK;
  char shape[128], need[32], have[32];
  rd_h5i_shape_text(info, shape, sizeof shape);
  human_bytes(bytes, need, sizeof need);
  human_bytes(lim, have, sizeof have);
  return rd_fail(st, RD_EINPUT, "%s: dataset %s declares shape %s: %s needs %s of memory, more than the %s this "
                 "process may use (%s); %s", file, info->path, shape, what, need, have, source, SEE);
}

/* ---- storage ----------------------------------------------------------------------------------- */

static double elements(const rd_dsinfo *info) {
  double n = 1;
  for (int i = 0; i < info->ndims; i++) n *= (double)info->dims[i];
  return n;
}

/* The first chunk the index lacks, as "rows a..b" (scanned only when the chunk count is modest). Each
 * chunk is looked up by its coordinates through the index (H5Dget_chunk_storage_size fails for a chunk
 * never written, and gives no size when none was): HDF5 1.10's H5Dget_chunk_info_by_coord instead walks the index from its first chunk
 * on every call, so a scan up to the m-th chunk cost about m^2/2 steps (minutes at 100,000 chunks). */
static void first_missing(hid_t d, const rd_dsinfo *info, const hsize_t *cd, char *out, size_t n) {
  hsize_t per[4] = {0}, total = 1, off[4];
  out[0] = '\0';
  for (int i = 0; i < info->ndims; i++) {
    per[i] = ((hsize_t)info->dims[i] + cd[i] - 1) / cd[i];
    total *= per[i];
  }
  if (total > 1000000) return;
  for (hsize_t c = 0; c < total; c++) {
    hsize_t r = c;
    for (int i = info->ndims - 1; i >= 0; i--) off[i] = (r % per[i]) * cd[i], r /= per[i];
    hsize_t size = 0;
    if (H5Dget_chunk_storage_size(d, off, &size) < 0 || size == 0) { /* no index at all: success, no size */
      hsize_t last = off[0] + cd[0] > (hsize_t)info->dims[0] ? (hsize_t)info->dims[0] : off[0] + cd[0];
      snprintf(out, n, " (the first missing one holds rows %llu..%llu)", (unsigned long long)off[0],
               (unsigned long long)(last - 1));
      return;
    }
  }
}

/* Chunked storage may be sparse in HDF5 (chunks never written read as the fill value); rmdiag
 * refuses that: a writer that stopped half-way would otherwise pass for zeros. */
static int check_chunks(hid_t d, hid_t dcpl, const char *file, const rd_dsinfo *info, const char *shape, double fsize,
                        rd_status *st) {
  hsize_t cd[4] = {0};
  if (H5Pget_chunk(dcpl, 4, cd) != info->ndims)
    return rd_fail(st, RD_EINPUT, "%s: dataset %s: its chunk shape cannot be read (corrupt file?); %s", file,
                   info->path, SEE);
  double expected = 1;
  for (int i = 0; i < info->ndims; i++) {
    if (cd[i] == 0) return rd_fail(st, RD_EINPUT, "%s: dataset %s has a chunk dimension of 0 (corrupt file?); %s",
                                   file, info->path, SEE);
    expected *= (double)(((hsize_t)info->dims[i] + cd[i] - 1) / cd[i]);
  }
  hsize_t have = 0;
  hid_t space = H5Dget_space(d);  /* HDF5 1.10 does not take H5S_ALL here */
  herr_t e = space >= 0 ? H5Dget_num_chunks(d, space, &have) : -1;
  if (space >= 0) H5Sclose(space);
  if (e < 0)
    return rd_fail(st, RD_EINPUT, "%s: dataset %s: its chunk index cannot be read (corrupt file?); %s", file,
                   info->path, SEE);
  if ((double)have < expected) {
    char where[96];
    first_missing(d, info, cd, where, sizeof where);
    return rd_fail(st, RD_EINPUT, "%s: dataset %s declares shape %s but only %llu of its %.0f chunks were ever "
                   "written%s; unwritten chunks would read as the fill value, which rmdiag refuses (the writer "
                   "stopped early, or the shape is wrong); %s", file, info->path, shape, (unsigned long long)have,
                   expected, where, SEE);
  }
  double stored = (double)H5Dget_storage_size(d);
  if (stored > fsize)
    return rd_fail(st, RD_EINPUT, "%s: dataset %s: its chunks claim %.0f bytes but the file has %.0f (truncated or "
                   "corrupt file); %s", file, info->path, stored, fsize, SEE);
  return RD_OK;
}

/* The declared shape must be backed by the file: contiguous data inside it, every chunk written. */
static int check_storage(hid_t d, hid_t dcpl, const char *file, const rd_dsinfo *info, size_t esize, rd_status *st) {
  double n = elements(info), bytes = n * (double)esize;
  if (n == 0) return RD_OK;
  char shape[128];
  rd_h5i_shape_text(info, shape, sizeof shape);
  hid_t fid = H5Iget_file_id(d);
  hsize_t fs = 0;
  if (fid < 0 || H5Fget_filesize(fid, &fs) < 0) fs = 0;
  if (fid >= 0) H5Fclose(fid);
  switch (H5Pget_layout(dcpl)) {
    case H5D_COMPACT:
      return RD_OK;  /* the data is in the object header, whose size HDF5 checks against the shape */
    case H5D_CONTIGUOUS: {
      if (H5Pget_external_count(dcpl) > 0)
        return rd_fail(st, RD_EINPUT, "%s: dataset %s keeps its data in external files (HDF5 external storage), "
                       "which rmdiag does not read; rewrite it into the file (h5py: without external=); %s", file,
                       info->path, SEE);
      haddr_t a = H5Dget_offset(d);
      if (a == HADDR_UNDEF)
        return rd_fail(st, RD_EINPUT, "%s: dataset %s declares shape %s but stores no data (it was created and never "
                       "written); %s", file, info->path, shape, SEE);
      if ((double)a + bytes > (double)fs)
        return rd_fail(st, RD_EINPUT, "%s: dataset %s declares shape %s (%.0f bytes at offset %llu) but the file has "
                       "only %llu bytes: the shape is wrong or the file is truncated; %s", file, info->path, shape,
                       bytes, (unsigned long long)a, (unsigned long long)fs, SEE);
      return RD_OK;
    }
    case H5D_CHUNKED:
      return check_chunks(d, dcpl, file, info, shape, (double)fs, st);
    case H5D_VIRTUAL:
      return rd_fail(st, RD_EINPUT, "%s: dataset %s is a virtual dataset (its data lives in other datasets), which "
                     "rmdiag does not read; copy the data into a regular dataset; %s", file, info->path, SEE);
    default:
      return rd_fail(st, RD_EINPUT, "%s: dataset %s has a storage layout this HDF5 cannot read (corrupt file?); %s",
                     file, info->path, SEE);
  }
}

/* What reading needs at the least, before any kind allocates: a 1-D dataset is read whole by one
 * rank (the file's element and a 64-bit word per element, strings twice over); a row of a 2-D one
 * must fit; and HDF5 holds a whole chunk while it reads one. */
static int check_sizes(hid_t dcpl, const char *file, const rd_dsinfo *info, size_t esize, rd_status *st) {
  double per = (double)esize + 8 + (info->tclass == RD_TC_STRING ? (double)esize : 0);
  if (info->ndims == 1) RD_TRY(rd_h5_check_memory(file, info, (double)info->dims[0] * per, "reading it", st));
  if (info->ndims >= 2) {
    double row = per;
    for (int i = 1; i < info->ndims; i++) row *= (double)info->dims[i];
    RD_TRY(rd_h5_check_memory(file, info, row, "one row of it", st));
  }
  if (H5Pget_layout(dcpl) == H5D_CHUNKED) {
    hsize_t cd[4] = {0};
    int r = H5Pget_chunk(dcpl, 4, cd);
    double c = (double)esize;
    for (int i = 0; i < r; i++) c *= (double)cd[i];
    RD_TRY(rd_h5_check_memory(file, info, c, "one of its chunks", st));
  }
  return RD_OK;
}

/* The size of one element as stored: a variable-length string is a length and a heap reference. */
static size_t stored_size(hid_t d, const rd_dsinfo *info) {
  if (info->tclass != RD_TC_STRING) return info->tsize;
  hid_t t = H5Dget_type(d);
  int var = t >= 0 && H5Tis_variable_str(t) > 0;
  if (t >= 0) H5Tclose(t);
  if (!var) return info->tsize;
  size_t sa = 8, ss = 8;
  hid_t fid = H5Iget_file_id(d), fcpl = fid >= 0 ? H5Fget_create_plist(fid) : H5I_INVALID_HID;
  if (fcpl >= 0) H5Pget_sizes(fcpl, &sa, &ss), H5Pclose(fcpl);
  if (fid >= 0) H5Fclose(fid);
  return 4 + sa + 4;
}

int rd_h5i_check_dataset(hid_t d, const char *file, const rd_dsinfo *info, rd_status *st) {
  hid_t dcpl = H5Dget_create_plist(d);
  if (dcpl < 0)
    return rd_fail(st, RD_EINPUT, "%s: dataset %s: its creation properties cannot be read (corrupt file?); %s", file,
                   info->path, SEE);
  size_t esize = stored_size(d, info);
  int rc = check_filters(dcpl, file, info->path, st);
  if (rc == RD_OK) rc = check_storage(d, dcpl, file, info, esize, st);
  if (rc == RD_OK) rc = check_sizes(dcpl, file, info, esize, st);
  H5Pclose(dcpl);
  return rc;
}
