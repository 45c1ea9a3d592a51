/* The import formats: name, one-line summary, entry point and option table of each. */
#include <stdlib.h>

#include "rmdiag/import/formats.h"

static const rd_import_format formats[] = {
    {"cm-csv", "long CSV run,pair,user,reward_chosen,reward_rejected,in_train[,covariates...] -> /cm",
     rd_import_cm_csv, &rd_import_cm_csv_args},
    {"rewardbench",
     "RewardBench v1 results (per-item JSON/JSONL or per-subset accuracies), one file per model -> /bench",
     rd_import_rewardbench, &rd_import_rewardbench_args},
    {"rewardbench2", "RewardBench 2 per-item results (JSONL with a metadata line, or parallel arrays) -> /bench",
     rd_import_rewardbench2, &rd_import_rewardbench2_args},
    {"numleak", "NumLeak JSONL panels + truth CSVs (French, FRED, month,value) -> /leak", rd_import_numleak,
     &rd_import_numleak_args},
    {"features", "probe features (.npy or .safetensors) + labels and splits (CSV or JSONL) -> /probe",
     rd_import_features, &rd_import_features_args},
};

static const rd_import_format *const list[] = {&formats[0], &formats[1], &formats[2], &formats[3], &formats[4], NULL};

const rd_import_format *const *rd_import_formats(void) { return list; }

void rd_import_usage(const rd_import_format *f, FILE *fp) { rd_args_usage(f->args, fp); }

char *rd_import_usage_text(const rd_import_format *f) {
  char *text = NULL;
  size_t len = 0;
  FILE *fp = open_memstream(&text, &len);
  if (!fp) return NULL;
  rd_import_usage(f, fp);
  fclose(fp);
  return text;
}
