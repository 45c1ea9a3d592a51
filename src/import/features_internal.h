/* features: the seam between the feature readers (features_read.c), the label readers
 * (features_labels.c) and the command that writes the probe input layout (features.c). */
#ifndef RMDIAG_IMPORT_FEATURES_INTERNAL_H
#define RMDIAG_IMPORT_FEATURES_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "rmdiag/common/status.h"

/* ---- features ---------------------------------------------------------------------------------------- */

enum { E_F32, E_F16, E_BF16, E_F64 };

typedef struct feat_file {
  const char *path;
  FILE *fp;
  int etype, swap;      /* element type; big-endian source */
  int64_t N, d, offset; /* rows, features, byte offset of the data */
} feat_file;

/* Bytes per stored element of type e. */
size_t feat_esize(int e);

/* Opens a .npy or .safetensors file (by its extension) and checks its header against its size; `tensor`
 * names the .safetensors tensor to read (NULL: the only one). */
int feat_open(feat_file *F, const char *path, const char *tensor, rd_status *st);
void feat_close(feat_file *F);

/* Rows [r0, r0 + n) as stored output values (float32, or float16 bits); `raw` holds n * d source
 * elements. */
int feat_read(feat_file *F, int64_t r0, int64_t n, void *raw, void *out, rd_status *st);

/* ---- labels ------------------------------------------------------------------------------------------ */

typedef struct labels {
  int64_t n;
  size_t cap;
  int64_t *label;  /* -1: missing */
  uint8_t *split;  /* 0 train, 1 validation, 2 test */
} labels;

/* Reads a labels file: JSONL when its name ends in .jsonl or .json, else CSV. */
int labels_read(labels *L, const char *path, rd_status *st);
void labels_free(labels *L);

#endif
