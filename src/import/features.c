/* `rmdiag import features`: feature dumps (.npy format 1.0-3.0, or .safetensors) and per-row labels
 * and splits (CSV or JSONL) into the probe layout of SPEC §7, written chunked and compressed to a
 * temporary file that is renamed into place. float32 stays float32, float16 stays float16, bfloat16
 * is widened exactly to float32 (HDF5 has no bfloat16), float64 is rounded to float32. */
#include <cjson/cJSON.h>
#include <csv.h>
#include <errno.h>
#include <math.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rmdiag/common/h5out.h"
#include "rmdiag/import/formats.h"
#include "rmdiag/common/jsonutil.h"
#include "rmdiag/kernels/halffloat.h"

enum { E_F32, E_F16, E_BF16, E_F64 };

typedef struct feat_file {
  const char *path;
  FILE *fp;
  int etype, swap;      /* element type; big-endian source */
  int64_t N, d, offset; /* rows, features, byte offset of the data */
} feat_file;

static size_t esize(int e) { return e == E_F64 ? 8 : e == E_F32 ? 4 : 2; }

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

static int open_npy(feat_file *F, rd_status *st) {
  unsigned char head[12];
  const char *p = F->path;
  if (fread(head, 1, 10, F->fp) != 10 || memcmp(head, "\x93NUMPY", 6) != 0)
    return rd_fail(st, RD_EINPUT, "%s: not a .npy file (expected the magic \\x93NUMPY)", p);
  int major = head[6];
  uint32_t hlen;
  int64_t start;
  if (major == 1) {
    hlen = (uint32_t)head[8] | (uint32_t)head[9] << 8;
    start = 10;
  } else if (major == 2 || major == 3) {
    if (fread(head + 10, 1, 2, F->fp) != 2) return rd_fail(st, RD_EINPUT, "%s: truncated .npy header", p);
    hlen = (uint32_t)head[8] | (uint32_t)head[9] << 8 | (uint32_t)head[10] << 16 | (uint32_t)head[11] << 24;
    start = 12;
  } else {
    return rd_fail(st, RD_EINPUT, "%s: .npy format version %d.%d (expected 1.0, 2.0 or 3.0)", p, major, head[7]);
  }
  if (hlen > (1u << 24)) return rd_fail(st, RD_EINPUT, "%s: .npy header of %u bytes is too long", p, hlen);
  char *hdr = malloc((size_t)hlen + 1);
  if (!hdr) return rd_fail(st, RD_EFAIL, "out of memory");
  if (fread(hdr, 1, hlen, F->fp) != hlen) {
    free(hdr);
    return rd_fail(st, RD_EINPUT, "%s: truncated .npy header", p);
  }
  hdr[hlen] = '\0';
  char *descr = npy_field(hdr, "['\"]descr['\"]\\s*:\\s*['\"]([^'\"]*)['\"]");
  char *fortran = npy_field(hdr, "['\"]fortran_order['\"]\\s*:\\s*(True|False)");
  char *shape = npy_field(hdr, "['\"]shape['\"]\\s*:\\s*\\(([^)]*)\\)");
  int rc = RD_OK;
  if (!descr || !fortran || !shape) {
    rc = rd_fail(st, RD_EINPUT, "%s: .npy header without 'descr', 'fortran_order' and 'shape': %.200s", p, hdr);
  } else if (strcmp(fortran, "True") == 0) {
    rc = rd_fail(st, RD_EINPUT, "%s: the array is in Fortran order; expected C order (np.ascontiguousarray)", p);
  } else {
    const char *kinds[][2] = {{"<f4", "f4"}, {">f4", "f4"}, {"<f2", "f2"}, {">f2", "f2"}, {"<f8", "f8"}, {">f8", "f8"}};
    int found = -1;
    for (int k = 0; k < 6; k++)
      if (strcmp(descr, kinds[k][0]) == 0) found = k;
    if (found < 0) {
      rc = rd_fail(st, RD_EINPUT, "%s: dtype '%s'; expected float32 ('<f4') or float16 ('<f2') features", p, descr);
    } else {
      F->etype = found < 2 ? E_F32 : found < 4 ? E_F16 : E_F64;
      F->swap = descr[0] == '>';
      /* the whole shape string: "N, d" with an optional trailing comma, nothing else */
      long long a = -1, b = -1;
      int end = -1;
      int ok = sscanf(shape, " %lld , %lld %n", &a, &b, &end) == 2 && end >= 0;
      if (ok) {
        const char *r = shape + end;
        if (*r == ',') r++;
        while (*r == ' ') r++;
        ok = *r == '\0';
      }
      if (!ok || a < 0 || b < 1)
        rc = rd_fail(st, RD_EINPUT, "%s: shape (%s); expected 2 dimensions (rows, features)", p, shape);
      F->N = a;
      F->d = b;
      F->offset = start + hlen;
    }
  }
  free(hdr);
  free(descr);
  free(fortran);
  free(shape);
  RD_TRY(rc);
  RD_TRY(check_width(F, st));
  struct stat sb;
  if (fstat(fileno(F->fp), &sb) != 0) return rd_fail(st, RD_EINPUT, "%s: cannot stat", p);
  /* the data's size from the shape, without overflow, against the bytes the file has after the header */
  int64_t have = (int64_t)sb.st_size - F->offset, cells, bytes;
  if (__builtin_mul_overflow(F->N, F->d, &cells) || __builtin_mul_overflow(cells, (int64_t)esize(F->etype), &bytes))
    return rd_fail(st, RD_EINPUT, "%s: shape (%lld, %lld) of %zu-byte values is larger than any file; the file has "
                   "%lld bytes of data", p, (long long)F->N, (long long)F->d, esize(F->etype), (long long)have);
  if (have != bytes)
    return rd_fail(st, RD_EINPUT, "%s: %lld bytes, expected %lld for shape (%lld, %lld) of %zu-byte values", p,
                   (long long)sb.st_size, (long long)(F->offset + bytes), (long long)F->N, (long long)F->d,
                   esize(F->etype));
  return RD_OK;
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

static int open_safetensors(feat_file *F, const char *tensor, rd_status *st) {
  const char *p = F->path;
  unsigned char b8[8];
  struct stat sb;
  if (fstat(fileno(F->fp), &sb) != 0) return rd_fail(st, RD_EINPUT, "%s: cannot stat", p);
  if (fread(b8, 1, 8, F->fp) != 8) return rd_fail(st, RD_EINPUT, "%s: truncated .safetensors file", p);
  uint64_t hn = 0;
  for (int i = 7; i >= 0; i--) hn = hn << 8 | b8[i];
  if (hn > 100000000u || (int64_t)(8 + hn) > (int64_t)sb.st_size)
    return rd_fail(st, RD_EINPUT, "%s: header length %llu does not fit the file (%lld bytes)", p,
                   (unsigned long long)hn, (long long)sb.st_size);
  char *txt = malloc((size_t)hn + 1);
  if (!txt) return rd_fail(st, RD_EFAIL, "out of memory");
  if (fread(txt, 1, (size_t)hn, F->fp) != hn) {
    free(txt);
    return rd_fail(st, RD_EINPUT, "%s: truncated header", p);
  }
  txt[hn] = '\0';
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(txt, (size_t)hn, &end, 0);
  if (!root || !cJSON_IsObject(root)) {
    cJSON_Delete(root);
    free(txt);
    return rd_fail(st, RD_EINPUT, "%s: the .safetensors header is not a JSON object", p);
  }
  /* the header is the JSON object, padded with spaces only */
  for (const char *c = end; c < txt + hn; c++)
    if (*c != ' ') {
      long long at = 8 + (long long)(c - txt);
      cJSON_Delete(root);
      free(txt);
      return rd_fail(st, RD_EINPUT, "%s: the .safetensors header has bytes after its JSON object (byte %lld); expected "
                     "only spaces as padding", p, at);
    }
  free(txt);
  int n = cJSON_GetArraySize(root), k = 0, rc = RD_OK;
  st_entry *ent = calloc((size_t)(n ? n : 1), sizeof *ent);
  const cJSON *pick = NULL;
  int ntensors = 0;
  char names[512] = "";
  size_t nl = 0;
  if (!ent) rc = rd_fail(st, RD_EFAIL, "out of memory");
  static const char *const dts[] = {"BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "I16", "U16", "F16", "BF16",
                                    "I32",  "U32", "F32", "F64", "I64", "U64", NULL};
  static const int dsz[] = {1, 1, 1, 1, 1, 2, 2, 2, 2, 4, 4, 4, 8, 8, 8};
  for (const cJSON *c = root->child; c && rc == RD_OK; c = c->next) {
    if (strcmp(c->string, "__metadata__") == 0) continue;
    for (const cJSON *q = root->child; q != c; q = q->next)
      if (strcmp(q->string, c->string) == 0) rc = rd_fail(st, RD_EINPUT, "%s: tensor \"%s\" appears twice", p, c->string);
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(c, "dtype"), *sh = cJSON_GetObjectItemCaseSensitive(c, "shape");
    const cJSON *of = cJSON_GetObjectItemCaseSensitive(c, "data_offsets");
    if (rc != RD_OK) break;
    if (!cJSON_IsString(dt) || !cJSON_IsArray(sh) || !cJSON_IsArray(of) || cJSON_GetArraySize(of) != 2) {
      rc = rd_fail(st, RD_EINPUT, "%s: tensor \"%s\" lacks dtype, shape or data_offsets", p, c->string);
      break;
    }
    int di = -1;
    for (int i = 0; dts[i]; i++)
      if (strcmp(dts[i], dt->valuestring) == 0) di = i;
    double prod = 1.0;
    int dim = 0;
    for (const cJSON *s = sh->child; s && rc == RD_OK; s = s->next, dim++) {
      if (!json_count(s))
        rc = rd_fail(st, RD_EINPUT, "%s: tensor \"%s\": shape[%d] is not a non-negative integer (at most 2^53)", p,
                     c->string, dim);
      prod *= s->valuedouble;
    }
    for (int i = 0; i < 2 && rc == RD_OK; i++)
      if (!json_count(cJSON_GetArrayItem(of, i)))
        rc = rd_fail(st, RD_EINPUT, "%s: tensor \"%s\": data_offsets[%d] is not a non-negative integer (at most "
                     "2^53)", p, c->string, i);
    if (rc != RD_OK) break;
    double b0 = cJSON_GetArrayItem(of, 0)->valuedouble, b1 = cJSON_GetArrayItem(of, 1)->valuedouble;
    if (di < 0 || !isfinite(prod) || !(b0 >= 0 && b1 >= b0 && b1 < 9e15) || (b1 - b0) != prod * dsz[di]) {
      rc = rd_fail(st, RD_EINPUT, "%s: tensor \"%s\": dtype, shape and data_offsets do not agree", p, c->string);
      break;
    }
    ent[k].begin = (int64_t)b0;
    ent[k].end = (int64_t)b1;
    k++;
    ntensors++;
    nl += (size_t)snprintf(names + nl, nl < sizeof names ? sizeof names - nl : 0, "%s\"%s\"", ntensors > 1 ? ", " : "",
                           c->string);
    if (nl >= sizeof names) nl = sizeof names - 1;
    if (tensor ? strcmp(tensor, c->string) == 0 : 1) pick = c;
  }
  if (rc == RD_OK) {
    qsort(ent, (size_t)k, sizeof *ent, cmp_entry);
    int64_t pos = 0;
    for (int i = 0; i < k && rc == RD_OK; i++) {
      if (ent[i].begin != pos) rc = rd_fail(st, RD_EINPUT, "%s: tensor data is not contiguous (a gap or overlap at byte %lld)", p, (long long)pos);
      pos = ent[i].end;
    }
    if (rc == RD_OK && (int64_t)(8 + hn) + pos != (int64_t)sb.st_size)
      rc = rd_fail(st, RD_EINPUT, "%s: the tensors end at byte %lld but the file has %lld bytes", p,
                   (long long)(8 + hn + pos), (long long)sb.st_size);
  }
  if (rc == RD_OK) {
    if (!tensor && ntensors != 1)
      rc = rd_fail(st, RD_EINPUT, "%s: %d tensors (%s); name one with --tensor NAME", p, ntensors, names);
    else if (!pick)
      rc = rd_fail(st, RD_EINPUT, "%s: no tensor \"%s\" (tensors: %s)", p, tensor ? tensor : "", names);
  }
  if (rc == RD_OK) {
    const char *dt = cJSON_GetObjectItemCaseSensitive(pick, "dtype")->valuestring;
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(pick, "shape");
    if (strcmp(dt, "F32") == 0) F->etype = E_F32;
    else if (strcmp(dt, "F16") == 0) F->etype = E_F16;
    else if (strcmp(dt, "BF16") == 0) F->etype = E_BF16;
    else if (strcmp(dt, "F64") == 0) F->etype = E_F64;
    else rc = rd_fail(st, RD_EINPUT, "%s: tensor \"%s\" has dtype %s; expected F32, F16 or BF16", p, pick->string, dt);
    if (rc == RD_OK && cJSON_GetArraySize(sh) != 2)
      rc = rd_fail(st, RD_EINPUT, "%s: tensor \"%s\" has %d dimensions; expected 2 (rows, features)", p, pick->string,
                   cJSON_GetArraySize(sh));
    if (rc == RD_OK) {
      F->N = (int64_t)cJSON_GetArrayItem(sh, 0)->valuedouble;
      F->d = (int64_t)cJSON_GetArrayItem(sh, 1)->valuedouble;
      F->offset = 8 + (int64_t)hn + (int64_t)cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(pick, "data_offsets"), 0)->valuedouble;
      if (F->d < 1) rc = rd_fail(st, RD_EINPUT, "%s: tensor \"%s\" has no features", p, pick->string);
      else rc = check_width(F, st);
    }
  }
  free(ent);
  cJSON_Delete(root);
  return rc;
}

static int feat_open(feat_file *F, const char *path, const char *tensor, rd_status *st) {
  memset(F, 0, sizeof *F);
  F->path = path;
  F->fp = rd_input_fopen(path);
  if (!F->fp) return rd_fail(st, RD_EINPUT, "%s: cannot open (%s)", path, strerror(errno));
  size_t n = strlen(path);
  if (n >= 4 && strcasecmp(path + n - 4, ".npy") == 0) return open_npy(F, st);
  if (n >= 12 && strcasecmp(path + n - 12, ".safetensors") == 0) return open_safetensors(F, tensor, st);
  return rd_fail(st, RD_EINPUT, "%s: expected a .npy or .safetensors file", path);
}

static void feat_close(feat_file *F) {
  if (F->fp) fclose(F->fp);
  F->fp = NULL;
}

/* Rows [r0, r0 + n) as stored output values: float32, or float16 bits. */
static int feat_read(feat_file *F, int64_t r0, int64_t n, void *raw, void *out, rd_status *st) {
  size_t es = esize(F->etype), cnt = (size_t)(n * F->d);
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

/* ---- labels ------------------------------------------------------------------------------------- */

typedef struct labels {
  const char *file;
  rd_status *st;
  int64_t n, cap, row;   /* data rows, record number (header = 1) */
  int64_t *label;
  uint8_t *split;
  int col_label, col_split, ncols, field;
  char **header;
  char *lab_text, *split_text;
} labels;

static int parse_split(const char *s, uint8_t *out) {
  static const char *const names[][4] = {{"0", "train", "training", NULL},
                                         {"1", "validation", "val", "valid"},
                                         {"2", "test", "testing", NULL}};
  for (int k = 0; k < 3; k++)
    for (int j = 0; j < 4; j++)
      if (names[k][j] && strcasecmp(s, names[k][j]) == 0) {
        *out = (uint8_t)k;
        return 1;
      }
  if (strcasecmp(s, "dev") == 0) {
    *out = 1;
    return 1;
  }
  return 0;
}

static int parse_label(const char *s, int64_t *out) {
  if (!s[0] || strcasecmp(s, "na") == 0 || strcasecmp(s, "nan") == 0 || strcasecmp(s, "null") == 0 ||
      strcasecmp(s, "none") == 0) {
    *out = -1;
    return 1;
  }
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (end == s || *end || errno == ERANGE || v < -1) return 0;
  *out = v;
  return 1;
}

static int labels_push(labels *L, int64_t lab, uint8_t sp) {
  if (L->n == L->cap) {
    int64_t cap = L->cap ? 2 * L->cap : 4096;
    int64_t *a = realloc(L->label, sizeof(int64_t) * (size_t)cap);
    if (!a) return -1;
    L->label = a;
    uint8_t *b = realloc(L->split, (size_t)cap);
    if (!b) return -1;
    L->split = b;
    L->cap = cap;
  }
  L->label[L->n] = lab;
  L->split[L->n] = sp;
  L->n++;
  return 0;
}

static void lab_record(labels *L, const char *lab, const char *spl, const char *what) {
  int64_t v;
  uint8_t s;
  if (!parse_label(lab, &v)) {
    rd_fail(L->st, RD_EINPUT, "%s: %s %lld: label = \"%s\", expected an integer (empty, NA or null = missing)", L->file,
            what, (long long)L->row, lab);
  } else if (v > INT32_MAX) {
    rd_fail(L->st, RD_EINPUT, "%s: %s %lld: label %lld does not fit 32 bits", L->file, what, (long long)L->row,
            (long long)v);
  } else if (!parse_split(spl, &s)) {
    rd_fail(L->st, RD_EINPUT, "%s: %s %lld: split = \"%s\", expected 0/train, 1/validation or 2/test", L->file, what,
            (long long)L->row, spl);
  } else if (labels_push(L, v, s) != 0) {
    rd_fail(L->st, RD_EFAIL, "out of memory reading %s", L->file);
  }
}

static void csv_field_cb(void *data, size_t len, void *ctx) {
  labels *L = ctx;
  if (L->st->code != RD_OK) return;
  const char *s = data ? (const char *)data : "";
  if (memchr(s, '\0', len)) {
    rd_fail(L->st, RD_EINPUT, "%s: row %lld, field %d: a NUL byte (expected text)", L->file, (long long)L->row,
            L->field + 1);
    return;
  }
  if (L->row == 1) {
    char **h = realloc(L->header, sizeof(char *) * (size_t)(L->ncols + 1));
    if (!h) return;
    L->header = h;
    L->header[L->ncols++] = strndup(s, len);
    return;
  }
  if (L->field == L->col_label) {
    free(L->lab_text);
    L->lab_text = strndup(s, len);
  }
  if (L->field == L->col_split) {
    free(L->split_text);
    L->split_text = strndup(s, len);
  }
  L->field++;
}

static void csv_row_cb(int c, void *ctx) {
  (void)c;
  labels *L = ctx;
  if (L->st->code != RD_OK) return;
  if (L->row == 1) {
    L->col_label = L->col_split = -1;
    for (int k = 0; k < L->ncols; k++) {
      if (strcmp(L->header[k], "label") == 0) L->col_label = k;
      if (strcmp(L->header[k], "split") == 0) L->col_split = k;
    }
    if (L->col_label < 0 || L->col_split < 0)
      rd_fail(L->st, RD_EINPUT, "%s: row 1 (header): expected columns \"label\" and \"split\"", L->file);
  } else if (L->field != L->ncols) {
    rd_fail(L->st, RD_EINPUT, "%s: row %lld has %d fields, expected %d (as in the header)", L->file,
            (long long)L->row, L->field, L->ncols);
  } else {
    lab_record(L, L->lab_text ? L->lab_text : "", L->split_text ? L->split_text : "", "row");
  }
  L->row++;
  L->field = 0;
}

static int read_labels_csv(labels *L, FILE *fp) {
  struct csv_parser parser;
  csv_init(&parser, CSV_STRICT | CSV_STRICT_FINI | CSV_APPEND_NULL);
  char buf[1 << 16];
  size_t got, skip = 0;
  L->row = 1;
  for (int first = 1; L->st->code == RD_OK && (got = fread(buf, 1, sizeof buf, fp)) > 0; first = 0, skip = 0) {
    /* a UTF-8 byte order mark before the header is not part of its first name */
    if (first && got >= 3 && memcmp(buf, "\xEF\xBB\xBF", 3) == 0) skip = 3;
    if (csv_parse(&parser, buf + skip, got - skip, csv_field_cb, csv_row_cb, L) != got - skip && L->st->code == RD_OK)
      rd_fail(L->st, RD_EINPUT, "%s: row %lld: malformed CSV (%s)", L->file, (long long)L->row,
              csv_strerror(csv_error(&parser)));
  }
  if (L->st->code == RD_OK && csv_fini(&parser, csv_field_cb, csv_row_cb, L) != 0)
    rd_fail(L->st, RD_EINPUT, "%s: malformed CSV at the end of the file (%s)", L->file, csv_strerror(csv_error(&parser)));
  csv_free(&parser);
  if (L->st->code == RD_OK && L->row == 1) rd_fail(L->st, RD_EINPUT, "%s: empty file (expected a header row)", L->file);
  return L->st->code;
}

static int read_labels_jsonl(labels *L, FILE *fp) {
  char *line = NULL;
  size_t cap = 0;
  ssize_t len;
  L->row = 0;
  while (L->st->code == RD_OK && (len = getline(&line, &cap, fp)) >= 0) {
    L->row++;
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r' || line[len - 1] == ' ')) line[--len] = '\0';
    if (len == 0) continue;
    char where[1200];
    snprintf(where, sizeof where, "%s: line %lld", L->file, (long long)L->row);
    cJSON *o = rd_json_parse(line, (size_t)len, where, L->st);  /* one whole document per line */
    if (!o) break;
    if (!cJSON_IsObject(o)) {
      cJSON_Delete(o);
      rd_fail(L->st, RD_EINPUT, "%s: line %lld is not a JSON object", L->file, (long long)L->row);
      break;
    }
    if (rd_json_no_duplicate_keys(o, where, L->st) != RD_OK) {
      cJSON_Delete(o);
      break;
    }
    const cJSON *lab = cJSON_GetObjectItemCaseSensitive(o, "label"), *spl = cJSON_GetObjectItemCaseSensitive(o, "split");
    char lt[64], stx[64];
    if (!lab || cJSON_IsNull(lab)) snprintf(lt, sizeof lt, "null");
    else if (cJSON_IsNumber(lab) && lab->valuedouble == floor(lab->valuedouble) && fabs(lab->valuedouble) < 9e15)
      snprintf(lt, sizeof lt, "%lld", (long long)lab->valuedouble);
    else if (cJSON_IsString(lab)) snprintf(lt, sizeof lt, "%.60s", lab->valuestring);
    else snprintf(lt, sizeof lt, "?");
    if (cJSON_IsNumber(spl) && spl->valuedouble == floor(spl->valuedouble) && fabs(spl->valuedouble) < 1e9)
      snprintf(stx, sizeof stx, "%lld", (long long)spl->valuedouble);
    else if (cJSON_IsString(spl)) snprintf(stx, sizeof stx, "%.60s", spl->valuestring);
    else snprintf(stx, sizeof stx, "%s", spl ? "?" : "(missing)");
    lab_record(L, lt, stx, "line");
    cJSON_Delete(o);
  }
  free(line);
  return L->st->code;
}

static int read_labels(labels *L, const char *path, rd_status *st) {
  memset(L, 0, sizeof *L);
  L->file = path;
  L->st = st;
  FILE *fp = rd_input_fopen(path);
  if (!fp) return rd_fail(st, RD_EINPUT, "%s: cannot open (%s)", path, strerror(errno));
  size_t n = strlen(path);
  int jsonl = (n >= 6 && strcasecmp(path + n - 6, ".jsonl") == 0) || (n >= 5 && strcasecmp(path + n - 5, ".json") == 0);
  int rc = jsonl ? read_labels_jsonl(L, fp) : read_labels_csv(L, fp);
  fclose(fp);
  return rc;
}

static void labels_free(labels *L) {
  for (int k = 0; k < L->ncols; k++) free(L->header[k]);
  free(L->header);
  free(L->label);
  free(L->split);
  free(L->lab_text);
  free(L->split_text);
}

/* ---- output --------------------------------------------------------------------------------------- */

static hid_t half_type(void) {
  hid_t t = H5Tcopy(H5T_IEEE_F32LE);
  H5Tset_fields(t, 15, 10, 5, 0, 10);
  H5Tset_size(t, 2);
  H5Tset_ebias(t, 15);
  H5Tset_precision(t, 16);
  return t;
}

/* A chunked, shuffled and deflated dataset of `dims`; chunks of whole rows (about 1 MiB). */
static hid_t create_chunked(hid_t h, const char *path, int ndims, const int64_t *dims, hid_t type, rd_status *st) {
  if (rd_h5_make_groups(h, path, 1, st) != RD_OK) return H5I_INVALID_HID;
  hsize_t d[2] = {(hsize_t)dims[0], ndims > 1 ? (hsize_t)dims[1] : 1}, c[2];
  size_t row_bytes = H5Tget_size(type) * (ndims > 1 ? (size_t)dims[1] : 1);
  hsize_t rows = (hsize_t)((1u << 20) / (row_bytes ? row_bytes : 1));
  if (rows < 1) rows = 1;
  if (rows > d[0]) rows = d[0] ? d[0] : 1;
  c[0] = rows;
  c[1] = d[1];
  hid_t space = H5Screate_simple(ndims, d, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_obj_track_times(dcpl, 0);
  H5Pset_chunk(dcpl, ndims, c);
  H5Pset_shuffle(dcpl);
  H5Pset_deflate(dcpl, 1);
  hid_t ds = H5Dcreate2(h, path, type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  H5Pclose(dcpl);
  H5Sclose(space);
  if (ds < 0) rd_fail(st, RD_EFAIL, "cannot create output dataset %s", path);
  return ds;
}

static int write_rows(hid_t ds, int64_t r0, int64_t n, int64_t d, hid_t memtype, const void *buf) {
  hid_t fs = H5Dget_space(ds);
  hsize_t start[2] = {(hsize_t)r0, 0}, count[2] = {(hsize_t)n, (hsize_t)d};
  H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
  hid_t ms = H5Screate_simple(2, count, NULL);
  herr_t e = H5Dwrite(ds, memtype, ms, fs, H5P_DEFAULT, buf);
  H5Sclose(ms);
  H5Sclose(fs);
  return e < 0 ? -1 : 0;
}

/* Copies the features of F into dataset `path` (float16 kept, others as float32), in blocks. */
static int copy_features(hid_t h, feat_file *F, const char *path, rd_status *st) {
  int half = F->etype == E_F16;
  hid_t ftype = half ? half_type() : H5Tcopy(H5T_IEEE_F32LE);
  int64_t dims[2] = {F->N, F->d};
  hid_t ds = create_chunked(h, path, 2, dims, ftype, st);
  if (ds < 0) {
    H5Tclose(ftype);
    return st->code;
  }
  int64_t block = ((int64_t)8 << 20) / (F->d * 8);
  if (block < 1) block = 1;
  void *raw = malloc((size_t)(block * F->d) * esize(F->etype)), *out = malloc((size_t)(block * F->d) * 4);
  int rc = (raw && out) ? RD_OK : rd_fail(st, RD_EFAIL, "out of memory");
  for (int64_t r0 = 0; rc == RD_OK && r0 < F->N; r0 += block) {
    int64_t n = F->N - r0 < block ? F->N - r0 : block;
    rc = feat_read(F, r0, n, raw, out, st);
    if (rc == RD_OK && write_rows(ds, r0, n, F->d, half ? ftype : H5T_NATIVE_FLOAT, out) != 0)
      rc = rd_fail(st, RD_EFAIL, "cannot write %s", path);
  }
  free(raw);
  free(out);
  H5Dclose(ds);
  H5Tclose(ftype);
  return rc;
}

static int write_1d(hid_t h, const char *path, int64_t n, hid_t ftype, hid_t mtype, const void *data, rd_status *st) {
  int64_t dims[1] = {n};
  hid_t ds = create_chunked(h, path, 1, dims, ftype, st);
  if (ds < 0) return st->code;
  herr_t e = n > 0 ? H5Dwrite(ds, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) : 0;
  H5Dclose(ds);
  return e < 0 ? rd_fail(st, RD_EFAIL, "cannot write %s", path) : RD_OK;
}

/* ---- the command ------------------------------------------------------------------------------------- */

typedef struct item {
  const char *model, *task;  /* task NULL: inference rows */
  const char *features, *labels, *tensor;
} item;

static int valid_name(const char *s) {
  if (!s[0] || s[0] == '.') return 0;
  for (const char *c = s; *c; c++)
    if (!((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_' || *c == '-' ||
          *c == '.'))
      return 0;
  return 1;
}

int rd_import_features(int argc, char **argv, const char *out_path, FILE *log, rd_status *st) {
  const char *group = "/probe", *model = NULL, *tensor = NULL;
  item *items = calloc((size_t)(argc ? argc : 1), sizeof *items);
  int n = 0;
  if (!items) return rd_fail(st, RD_EFAIL, "out of memory");
  for (int i = 0; i < argc && st->code == RD_OK; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--group") == 0 && i + 1 < argc) {
      group = argv[++i];
    } else if (strcmp(a, "--model") == 0 && i + 1 < argc) {
      model = argv[++i];
      if (!valid_name(model) || strcmp(model, "infer") == 0)
        rd_fail(st, RD_EINPUT, "rmdiag import features: --model \"%s\" must be letters, digits, '.', '_' or '-'", model);
    } else if (strcmp(a, "--tensor") == 0 && i + 1 < argc) {
      tensor = argv[++i];
    } else if (strcmp(a, "--task") == 0 && i + 3 < argc) {
      items[n] = (item){model, argv[i + 1], argv[i + 2], argv[i + 3], tensor};
      if (!valid_name(items[n].task) || strcmp(items[n].task, "infer") == 0)
        rd_fail(st, RD_EINPUT, "rmdiag import features: task name \"%s\" must be letters, digits, '.', '_' or '-' "
                "(not \"infer\")", items[n].task);
      for (int k = 0; k < n; k++)
        if (items[k].task && strcmp(items[k].task, items[n].task) == 0 &&
            ((!items[k].model && !model) || (items[k].model && model && strcmp(items[k].model, model) == 0)))
          rd_fail(st, RD_EINPUT, "rmdiag import features: task \"%s\" given twice%s%s", items[n].task,
                  model ? " for model " : "", model ? model : "");
      n++;
      i += 3;
    } else if (strcmp(a, "--infer") == 0 && i + 1 < argc) {
      items[n] = (item){model, NULL, argv[i + 1], NULL, tensor};
      for (int k = 0; k < n; k++)
        if (!items[k].task && ((!items[k].model && !model) || (items[k].model && model && strcmp(items[k].model, model) == 0)))
          rd_fail(st, RD_EINPUT, "rmdiag import features: --infer given twice%s%s", model ? " for model " : "",
                  model ? model : "");
      n++;
      i += 1;
    } else {
      rd_fail(st, RD_EINPUT, "rmdiag import features: unexpected argument \"%s\" (see rmdiag import features --help)", a);
    }
  }
  if (st->code == RD_OK && n == 0)
    rd_fail(st, RD_EINPUT, "rmdiag import features: nothing to import (give --task TASK FEATURES LABELS)");
  /* GROUP/TASK (no model) and GROUP/RM/... share one namespace: a model named like such a task would put
   * its tasks inside that task's group */
  for (int k = 0; k < n && st->code == RD_OK; k++)
    for (int j = 0; j < n && items[k].model && st->code == RD_OK; j++)
      if (!items[j].model && items[j].task && strcmp(items[j].task, items[k].model) == 0)
        rd_fail(st, RD_EINPUT, "rmdiag import features: --model \"%s\" has the name of a task given without a model; "
                "rename one of them", items[k].model);
  if (st->code == RD_OK && group[0] != '/')
    rd_fail(st, RD_EINPUT, "rmdiag import features: --group must start with '/'");
  if (st->code != RD_OK) {
    free(items);
    return st->code;
  }
  rd_h5_atomic out;
  int rc = rd_h5_atomic_create(out_path, &out, st);
  hid_t h = out.h;
  int64_t rows = 0;
  for (int k = 0; k < n && rc == RD_OK; k++) {
    item *it = &items[k];
    feat_file F;
    labels L;
    memset(&L, 0, sizeof L);
    rc = feat_open(&F, it->features, it->tensor, st);
    if (rc == RD_OK && it->labels) {
      rc = read_labels(&L, it->labels, st);
      if (rc == RD_OK && L.n != F.N)
        rc = rd_fail(st, RD_EINPUT, "%s: %lld label rows but %s has %lld feature rows; expected one label row per "
                     "feature row, in the same order", it->labels, (long long)L.n, it->features, (long long)F.N);
    }
    char base[1200], path[1400];
    snprintf(base, sizeof base, "%s%s%s/%s", strcmp(group, "/") ? group : "", it->model ? "/" : "",
             it->model ? it->model : "", it->task ? it->task : "infer");
    snprintf(path, sizeof path, "%s/X", base);
    if (rc == RD_OK) rc = copy_features(h, &F, path, st);
    if (rc == RD_OK && it->labels) {
      int32_t *lab = malloc(sizeof(int32_t) * (size_t)(L.n ? L.n : 1));
      if (!lab) rc = rd_fail(st, RD_EFAIL, "out of memory");
      for (int64_t i = 0; lab && i < L.n; i++) lab[i] = (int32_t)L.label[i];  /* range checked when read */
      snprintf(path, sizeof path, "%s/label", base);
      if (rc == RD_OK) rc = write_1d(h, path, L.n, H5T_STD_I32LE, H5T_NATIVE_INT32, lab, st);
      snprintf(path, sizeof path, "%s/split", base);
      if (rc == RD_OK) rc = write_1d(h, path, L.n, H5T_STD_U8LE, H5T_NATIVE_UINT8, L.split, st);
      free(lab);
    }
    if (rc == RD_OK && log)
      fprintf(log, "rmdiag import features: %s: %lld x %lld %s -> %s\n", it->features, (long long)F.N, (long long)F.d,
              F.etype == E_F16 ? "float16" : F.etype == E_BF16 ? "bfloat16 (widened to float32)"
                                           : F.etype == E_F64 ? "float64 (rounded to float32)" : "float32",
              base);
    rows += F.N;
    feat_close(&F);
    labels_free(&L);
  }
  rc = rd_h5_atomic_finish(&out, st);
  free(items);
  if (rc == RD_OK && log) fprintf(log, "rmdiag import features: %lld rows in %d datasets -> %s\n", (long long)rows, n, out_path);
  return rc;
}
