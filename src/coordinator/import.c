/* The import formats table. */
#include "rmdiag/import.h"

#include <stddef.h>

static const rd_import_format cm_csv = {
    .name = "cm-csv",
    .summary = "long CSV run,pair,user,reward_chosen,reward_rejected,in_train[,covariates...] -> /cm",
    .usage = "rmdiag import cm-csv INPUT.csv [--group /cm] -o OUT.h5\n"
             "  INPUT.csv   header run,pair,user,reward_chosen,reward_rejected,in_train, then any\n"
             "              numeric covariate columns (one value per pair; empty or NaN = missing)\n"
             "  --group G   output group (default /cm)\n"
             "Every (pair, run) must appear exactly once. Pairs and runs are numbered in ascending\n"
             "numeric order of their ids when all ids are integers, else in order of first appearance;\n"
             "the ids are kept in /cm/pair_id and /cm/run_id. Users may be integers or strings.\n",
    .run = rd_import_cm_csv,
};

static const rd_import_format features = {
    .name = "features",
    .summary = "probe features (.npy or .safetensors) + labels and splits (CSV or JSONL) -> /probe",
    .usage = "rmdiag import features [--group /probe] [--model RM] [--tensor NAME]\n"
             "                       --task TASK FEATURES LABELS [--task ...] [--infer FEATURES] -o OUT.h5\n"
             "  FEATURES    .npy (format 1.0-3.0, C order, float32 or float16; float64 is rounded to\n"
             "              float32) or .safetensors (F32, F16 or BF16; BF16 is widened exactly to float32)\n"
             "              with shape [rows, features]\n"
             "  LABELS      CSV with a header holding columns label and split, or JSONL with fields label\n"
             "              and split; one row per feature row, in the same order. label: an integer\n"
             "              (empty, NA or null = missing, stored as -1); split: 0/train, 1/validation/val/dev,\n"
             "              2/test\n"
             "  --task      writes GROUP[/RM]/TASK/X, label, split (repeatable)\n"
             "  --infer     writes GROUP[/RM]/infer/X (rows for inference-time probing)\n"
             "  --model RM  puts the following --task and --infer under GROUP/RM (several reward models)\n"
             "  --tensor    the tensor to read from the following .safetensors files (needed when a file\n"
             "              holds several)\n"
             "Datasets are chunked (whole rows, about 1 MiB) and compressed (shuffle + deflate).\n",
    .run = rd_import_features,
};

static const rd_import_format *const formats[] = {&cm_csv, &features, NULL};

const rd_import_format *const *rd_import_formats(void) { return formats; }
