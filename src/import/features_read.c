/* features: the feature files. A .npy (format 1.0-3.0, C order) or .safetensors file is opened, its
 * header checked against the file's size, and its rows read in blocks as the values stored: float32
 * stays float32, float16 stays float16, bfloat16 is widened exactly to float32 (HDF5 has no bfloat16),
 * float64 is rounded to float32. */
#include <cjson/cJSON.h>

#include "rmdiag/common/jsonutil.h"
#include <errno.h>
#include <math.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "features_internal.h"
#include "rmdiag/common/h5out.h"
#include "rmdiag/kernels/halffloat.h"

size_t feat_esize(int e) { return e == E_F64 ? 8 : e == E_F32 ? 4 : 2; }

/* At most 2^24 features per row (as the probe report reads). */
static int check_width(const feat_file *F, rd_status *st) {
  if (F->d > ((int64_t)1 << 24))
    return rd_fail(st, RD_EINPUT, "%s: %lld features per row (at most 16777216 supported)", F->path, (long long)F->d);
  return RD_OK;
}

/* A JSON number that is a non-negative integer of at most 2^53 (exact in a double). */
static int json_count(const cJSON *v) {
  return cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble <= 9007199254740992.0 &&
         v->valuedouble == floor(v->valuedouble);
}

/* ---- .npy ------------------------------------------------------------------------------------- */

/* First capture of `pattern` in the header, or NULL. */
static char *npy_field(const char *hdr, const char *pattern) {
  int err;
  PCRE2_SIZE off;
  pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, 0, &err, &off, NULL);
  if (!re) return NULL;
  pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
  char *out = NULL;
  if (md && pcre2_match(re, (PCRE2_SPTR)hdr, strlen(hdr), 0, 0, md, NULL) >= 2) {
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
    out = strndup(hdr + ov[2], ov[3] - ov[2]);
  }
  pcre2_match_data_free(md);
  pcre2_code_free(re);
  return out;
}

/* The magic, the version and the header dictionary's text (*hdr, malloc'd); *start is where the
 * dictionary begins. */
static int npy_header(feat_file *F, char **hdr, uint32_t *hlen, int64_t *start, rd_status *st) {
  unsigned char head[12];
  const char *p = F->path;
  if (fread(head, 1, 10, F->fp) != 10 || memcmp(head, "\x93NUMPY", 6) != 0)
    return rd_fail(st, RD_EINPUT, "%s: not a .npy file (expected the magic \\x93NUMPY)", p);
  int major = head[6];
  if (major == 1) {
    *hlen = (uint32_t)head[8] | (uint32_t)head[9] << 8;
    *start = 10;
  } else if (major == 2 || major == 3) {
    if (fread(head + 10, 1, 2, F->fp) != 2) return rd_fail(st, RD_EINPUT, "%s: truncated .npy header", p);
    *hlen = (uint32_t)head[8] | (uint32_t)head[9] << 8 | (uint32_t)head[10] << 16 | (uint32_t)head[11] << 24;
    *start = 12;
  } else {
    return rd_fail(st, RD_EINPUT, "%s: .npy format version %d.%d (expected 1.0, 2.0 or 3.0)", p, major, head[7]);
  }
  if (*hlen > (1u << 24)) return rd_fail(st, RD_EINPUT, "%s: .npy header of %u bytes is too long", p, *hlen);
  *hdr = malloc((size_t)*hlen + 1);
  if (!*hdr) return rd_fail(st, RD_EFAIL, "out of memory");
  if (fread(*hdr, 1, *hlen, F->fp) != *hlen) return rd_fail(st, RD_EINPUT, "%s: truncated .npy header", p);
  (*hdr)[*hlen] = '\0';
  return RD_OK;
}

/* The dtype (float32, float16 or float64, either byte order) and the shape "N, d" (an optional
 * trailing comma, nothing else) of the header dictionary's fields. */
static int npy_dtype_shape(feat_file *F, const char *hdr, const char *descr, const char *fortran, const char *shape,
                           rd_status *st) {
  const char *p = F->path;
  if (!descr || !fortran || !shape)
    return rd_fail(st, RD_EINPUT, "%s: .npy header without 'descr', 'fortran_order' and 'shape': %.200s", p, hdr);
  if (strcmp(fortran, "True") == 0)
    return rd_fail(st, RD_EINPUT, "%s: the array is in Fortran order; expected C order (np.ascontiguousarray)", p);
  static const char *const kinds[] = {"<f4", ">f4", "<f2", ">f2", "<f8", ">f8"};
  int found = -1;
  for (int k = 0; k < 6; k++)
    if (strcmp(descr, kinds[k]) == 0) found = k;
  if (found < 0)
    return rd_fail(st, RD_EINPUT, "%s: dtype '%s'; expected float32 ('<f4') or float16 ('<f2') features", p, descr);
  F->etype = found < 2 ? E_F32 : found < 4 ? E_F16 : E_F64;
  F->swap = descr[0] == '>';
  long long a = -1, b = -1;
  int end = -1;
  int ok = sscanf(shape, " %lld , %lld %n", &a, &b, &end) == 2 && end >= 0;
  if (ok) {
    const char *r = shape + end;
    if (*r == ',') r++;
    while (*r == ' ') r++;
    ok = *r == '\0';
  }
  F->N = a;
  F->d = b;
  if (!ok || a < 0 || b < 1)
    return rd_fail(st, RD_EINPUT, "%s: shape (%s); expected 2 dimensions (rows, features)", p, shape);
  return RD_OK;
}

/* The data's size from the shape, without overflow, against the bytes the file has after the header. */
static int npy_check_size(const feat_file *F, rd_status *st) {
  const char *p = F->path;
  struct stat sb;
  if (fstat(fileno(F->fp), &sb) != 0) return rd_fail(st, RD_EINPUT, "%s: cannot stat", p);
  int64_t have = (int64_t)sb.st_size - F->offset, cells, bytes;
  size_t es = feat_esize(F->etype);
  if (__builtin_mul_overflow(F->N, F->d, &cells) || __builtin_mul_overflow(cells, (int64_t)es, &bytes))
    return rd_fail(st, RD_EINPUT, "%s: shape (%lld, %lld) of %zu-byte values is larger than any file; the file has "
                   "%lld bytes of data", p, (long long)F->N, (long long)F->d, es, (long long)have);
  if (have != bytes)
    return rd_fail(st, RD_EINPUT, "%s: %lld bytes, expected %lld for shape (%lld, %lld) of %zu-byte values", p,
                   (long long)sb.st_size, (long long)(F->offset + bytes), (long long)F->N, (long long)F->d, es);
  return RD_OK;
}

static int open_npy(feat_file *F, rd_status *st) {
  char *hdr = NULL;
  uint32_t hlen = 0;
  int64_t start = 0;
  int rc = npy_header(F, &hdr, &hlen, &start, st);
  if (rc != RD_OK) {
    free(hdr);
    return rc;
  }
  char *descr = npy_field(hdr, "['\"]descr['\"]\\s*:\\s*['\"]([^'\"]*)['\"]");
  char *fortran = npy_field(hdr, "['\"]fortran_order['\"]\\s*:\\s*(True|False)");
  char *shape = npy_field(hdr, "['\"]shape['\"]\\s*:\\s*\\(([^)]*)\\)");
  rc = npy_dtype_shape(F, hdr, descr, fortran, shape, st);
  F->offset = start + hlen;
  free(hdr);
  free(descr);
  free(fortran);
  free(shape);
  RD_TRY(rc);
  RD_TRY(check_width(F, st));
  return npy_check_size(F, st);
}

/* ---- .safetensors ------------------------------------------------------------------------------ */

typedef struct st_entry {
  int64_t begin, end;
} st_entry;

static int cmp_entry(const void *a, const void *b) {
  const st_entry *x = a, *y = b;  /* by (begin, end): empty tensors sort before one at the same offset */
  if (x->begin != y->begin) return (x->begin > y->begin) - (x->begin < y->begin);
  return (x->end > y->end) - (x->end < y->end);
}

/* The header: an 8-byte little-endian length, then a JSON object padded with spaces only. */
static int st_header(feat_file *F, int64_t size, cJSON **root, uint64_t *hn, rd_status *st) {
  const char *p = F->path;
  unsigned char b8[8];
  if (fread(b8, 1, 8, F->fp) != 8) return rd_fail(st, RD_EINPUT, "%s: truncated .safetensors file", p);
  *hn = 0;
  for (int i = 7; i >= 0; i--) *hn = *hn << 8 | b8[i];
  if (*hn > 100000000u || (int64_t)(8 + *hn) > size)
    return rd_fail(st, RD_EINPUT, "%s: header length %llu does not fit the file (%lld bytes)", p,
                   (unsigned long long)*hn, (long long)size);
  char *txt = malloc((size_t)*hn + 1);
  if (!txt) return rd_fail(st, RD_EFAIL, "out of memory");
  if (fread(txt, 1, (size_t)*hn, F->fp) != *hn) {
    free(txt);
    return rd_fail(st, RD_EINPUT, "%s: truncated header", p);
  }
  txt[*hn] = '\0';
  const char *end = NULL;
  *root = cJSON_ParseWithLengthOpts(txt, (size_t)*hn, &end, 0);
  int rc = RD_OK;
  if (!*root || !cJSON_IsObject(*root)) {
    rc = rd_fail(st, RD_EINPUT, "%s: the .safetensors header is not a JSON object", p);
  } else {
    for (const char *c = end; c < txt + *hn && rc == RD_OK; c++)
      if (*c != ' ')
        rc = rd_fail(st, RD_EINPUT, "%s: the .safetensors header has bytes after its JSON object (byte %lld); expected "
                     "only spaces as padding", p, 8 + (long long)(c - txt));
  }
  free(txt);
  if (rc != RD_OK) {
    cJSON_Delete(*root);
    *root = NULL;
  }
  return rc;
}

/* The tensors of the header, each checked; their byte ranges; the one to read. */
typedef struct st_scan {
  st_entry *ent;
  int k;
  const cJSON *pick;
  char names[512];
  size_t nl;
} st_scan;

static const char *const st_dtypes[] = {"BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "I16", "U16", "F16", "BF16",
                                        "I32",  "U32", "F32", "F64", "I64", "U64", NULL};
static const int st_dsize[] = {1, 1, 1, 1, 1, 2, 2, 2, 2, 4, 4, 4, 8, 8, 8};

/* One tensor's entry: a known dtype, a shape and data_offsets of non-negative integers that agree. */
static int st_tensor(const char *p, const cJSON *c, st_entry *e, rd_status *st) {
  const cJSON *dt = cJSON_GetObjectItemCaseSensitive(c, "dtype"), *sh = cJSON_GetObjectItemCaseSensitive(c, "shape");
  const cJSON *of = cJSON_GetObjectItemCaseSensitive(c, "data_offsets");
  if (!cJSON_IsString(dt) || !cJSON_IsArray(sh) || !cJSON_IsArray(of) || cJSON_GetArraySize(of) != 2)
    return rd_fail(st, RD_EINPUT, "%s: tensor \"%s\" lacks dtype, shape or data_offsets", p, c->string);
  int di = -1;
  for (int i = 0; st_dtypes[i]; i++)
    if (strcmp(st_dtypes[i], dt->valuestring) == 0) di = i;
  double prod = 1.0;
  int dim = 0;
  for (const cJSON *s = sh->child; s; s = s->next, dim++) {
    if (!json_count(s))
      return rd_fail(st, RD_EINPUT, "%s: tensor \"%s\": shape[%d] is not a non-negative integer (at most 2^53)", p,
                     c->string, dim);
    prod *= s->valuedouble;
  }
  for (int i = 0; i < 2; i++)
    if (!json_count(cJSON_GetArrayItem(of, i)))
      return rd_fail(st, RD_EINPUT, "%s: tensor \"%s\": data_offsets[%d] is not a non-negative integer (at most 2^53)",
                     p, c->string, i);
  double b0 = cJSON_GetArrayItem(of, 0)->valuedouble, b1 = cJSON_GetArrayItem(of, 1)->valuedouble;
  if (di < 0 || !isfinite(prod) || !(b0 >= 0 && b1 >= b0 && b1 < 9e15) || (b1 - b0) != prod * st_dsize[di])
    return rd_fail(st, RD_EINPUT, "%s: tensor \"%s\": dtype, shape and data_offsets do not agree", p, c->string);
  *e = (st_entry){(int64_t)b0, (int64_t)b1};
  return RD_OK;
}

static int st_tensors(const char *p, const cJSON *root, const char *tensor, st_scan *sc, rd_status *st) {
  int n = cJSON_GetArraySize(root);
  sc->ent = calloc((size_t)(n ? n : 1), sizeof *sc->ent);
  const char **names = malloc(sizeof(char *) * (size_t)(n ? n : 1));
  if (!sc->ent || !names) {
    free(names);
    return rd_fail(st, RD_EFAIL, "out of memory");
  }
  /* a tensor named twice: the first repeat in header order (O(n log n)) */
  int64_t i = 0, first = -1;
  for (const cJSON *c = root->child; c; c = c->next) names[i++] = c->string;
  int64_t dup = rd_first_duplicate(names, n, &first);
  free(names);
  if (dup >= 0) return rd_fail(st, RD_EINPUT, "%s: tensor \"%s\" appears twice", p, cJSON_GetArrayItem(root, (int)dup)->string);
  for (const cJSON *c = root->child; c; c = c->next) {
    if (strcmp(c->string, "__metadata__") == 0) continue;
    RD_TRY(st_tensor(p, c, &sc->ent[sc->k], st));
    sc->k++;
    sc->nl += (size_t)snprintf(sc->names + sc->nl, sc->nl < sizeof sc->names ? sizeof sc->names - sc->nl : 0,
                               "%s\"%s\"", sc->k > 1 ? ", " : "", c->string);
    if (sc->nl >= sizeof sc->names) sc->nl = sizeof sc->names - 1;
    if (tensor ? strcmp(tensor, c->string) == 0 : 1) sc->pick = c;
  }
  return RD_OK;
}

/* The tensors' data fill the rest of the file exactly, without gaps or overlaps. */
static int st_contiguous(const char *p, st_scan *sc, uint64_t hn, int64_t size, rd_status *st) {
  qsort(sc->ent, (size_t)sc->k, sizeof *sc->ent, cmp_entry);
  int64_t pos = 0;
  for (int i = 0; i < sc->k; i++) {
    if (sc->ent[i].begin != pos)
      return rd_fail(st, RD_EINPUT, "%s: tensor data is not contiguous (a gap or overlap at byte %lld)", p,
                     (long long)pos);
    pos = sc->ent[i].end;
  }
  if ((int64_t)(8 + hn) + pos != size)
    return rd_fail(st, RD_EINPUT, "%s: the tensors end at byte %lld but the file has %lld bytes", p,
                   (long long)(8 + hn + pos), (long long)size);
  return RD_OK;
}

/* The chosen tensor: F32, F16, BF16 or F64, two dimensions. */
static int st_pick(feat_file *F, const st_scan *sc, const char *tensor, uint64_t hn, rd_status *st) {
  const char *p = F->path;
  if (!tensor && sc->k != 1)
    return rd_fail(st, RD_EINPUT, "%s: %d tensors (%s); name one with --tensor NAME", p, sc->k, sc->names);
  if (!sc->pick)
    return rd_fail(st, RD_EINPUT, "%s: no tensor \"%s\" (tensors: %s)", p, tensor ? tensor : "", sc->names);
  const cJSON *pick = sc->pick;
  const char *dt = cJSON_GetObjectItemCaseSensitive(pick, "dtype")->valuestring;
  const cJSON *sh = cJSON_GetObjectItemCaseSensitive(pick, "shape");
  if (strcmp(dt, "F32") == 0) F->etype = E_F32;
  else if (strcmp(dt, "F16") == 0) F->etype = E_F16;
  else if (strcmp(dt, "BF16") == 0) F->etype = E_BF16;
  else if (strcmp(dt, "F64") == 0) F->etype = E_F64;
  else return rd_fail(st, RD_EINPUT, "%s: tensor \"%s\" has dtype %s; expected F32, F16 or BF16", p, pick->string, dt);
  if (cJSON_GetArraySize(sh) != 2)
    return rd_fail(st, RD_EINPUT, "%s: tensor \"%s\" has %d dimensions; expected 2 (rows, features)", p, pick->string,
                   cJSON_GetArraySize(sh));
  F->N = (int64_t)cJSON_GetArrayItem(sh, 0)->valuedouble;
  F->d = (int64_t)cJSON_GetArrayItem(sh, 1)->valuedouble;
  const cJSON *of = cJSON_GetObjectItemCaseSensitive(pick, "data_offsets");
  F->offset = 8 + (int64_t)hn + (int64_t)cJSON_GetArrayItem(of, 0)->valuedouble;
  if (F->d < 1) return rd_fail(st, RD_EINPUT, "%s: tensor \"%s\" has no features", p, pick->string);
  return check_width(F, st);
}

static int open_safetensors(feat_file *F, const char *tensor, rd_status *st) {
  struct stat sb;
  if (fstat(fileno(F->fp), &sb) != 0) return rd_fail(st, RD_EINPUT, "%s: cannot stat", F->path);
  cJSON *root = NULL;
  uint64_t hn = 0;
  RD_TRY(st_header(F, (int64_t)sb.st_size, &root, &hn, st));
  st_scan sc;
  memset(&sc, 0, sizeof sc);
  int rc = st_tensors(F->path, root, tensor, &sc, st);
  if (rc == RD_OK) rc = st_contiguous(F->path, &sc, hn, (int64_t)sb.st_size, st);
  if (rc == RD_OK) rc = st_pick(F, &sc, tensor, hn, st);
  free(sc.ent);
  cJSON_Delete(root);
  return rc;
}

/* ---- either ----------------------------------------------------------------------------------------- */

int feat_open(feat_file *F, const char *path, const char *tensor, rd_status *st) {
  memset(F, 0, sizeof *F);
  F->path = path;
  F->fp = rd_input_fopen(path);
  if (!F->fp) return rd_fail(st, RD_EINPUT, "%s: cannot open (%s)", path, strerror(errno));
  size_t n = strlen(path);
  if (n >= 4 && strcasecmp(path + n - 4, ".npy") == 0) return open_npy(F, st);
  if (n >= 12 && strcasecmp(path + n - 12, ".safetensors") == 0) return open_safetensors(F, tensor, st);
  return rd_fail(st, RD_EINPUT, "%s: expected a .npy or .safetensors file", path);
}

void feat_close(feat_file *F) {
  if (F->fp) fclose(F->fp);
  F->fp = NULL;
}

int feat_read(feat_file *F, int64_t r0, int64_t n, void *raw, void *out, rd_status *st) {
  size_t es = feat_esize(F->etype), cnt = (size_t)(n * F->d);
  if (fseeko(F->fp, (off_t)(F->offset + r0 * F->d * (int64_t)es), SEEK_SET) != 0 || fread(raw, es, cnt, F->fp) != cnt)
    return rd_fail(st, RD_EINPUT, "%s: cannot read rows %lld..%lld", F->path, (long long)r0, (long long)(r0 + n - 1));
  unsigned char *b = raw;
  if (F->swap)
    for (size_t i = 0; i < cnt; i++)
      for (size_t k = 0; k < es / 2; k++) {
        unsigned char t = b[i * es + k];
        b[i * es + k] = b[i * es + es - 1 - k];
        b[i * es + es - 1 - k] = t;
      }
  if (F->etype == E_F16) {
    memcpy(out, raw, cnt * 2);
  } else if (F->etype == E_F32) {
    memcpy(out, raw, cnt * 4);
  } else if (F->etype == E_BF16) {
    for (size_t i = 0; i < cnt; i++) {
      uint16_t h = (uint16_t)(b[2 * i] | b[2 * i + 1] << 8);
      ((float *)out)[i] = rd_bf16_to_float(h);
    }
  } else {
    for (size_t i = 0; i < cnt; i++) {
      double v;
      memcpy(&v, b + 8 * i, 8);
      ((float *)out)[i] = (float)v;
    }
  }
  return RD_OK;
}
