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

static const rd_import_format rewardbench = {
    .name = "rewardbench",
    .summary = "RewardBench v1 results (per-item JSON/JSONL or per-subset accuracies), one file per model -> /bench",
    .usage = "rmdiag import rewardbench FILE... [--group /bench] -o OUT.h5\n"
             "  FILE        one model's results, any of:\n"
             "              - the per-item object of parallel arrays RewardBench saves (id, subset,\n"
             "                scores_chosen, scores_rejected, results, model, ...)\n"
             "              - JSON rows, one per line (optionally a first row {\"_record\": \"metadata\",\n"
             "                \"model\": ...}), with id, subset, scores_chosen, scores_rejected; rows with\n"
             "                only \"results\" (custom classifiers, generative judges) give the credit directly\n"
             "              - per-subset accuracies {\"alpacaeval-easy\": 0.97, ..., \"model\": ...}\n"
             "  --group G   output group (default /bench)\n"
             "Scores are numbers or one-element lists, stored as float64. The model name is the file's\n"
             "\"model\" (else its base name); files of the same model are merged (e.g. core set + prior\n"
             "sets). Models are aligned by (subset, id): every model must have the same items.\n",
    .run = rd_import_rewardbench,
};

static const rd_import_format rewardbench2 = {
    .name = "rewardbench2",
    .summary = "RewardBench 2 per-item results (JSONL with a metadata line, or parallel arrays) -> /bench",
    .usage = "rmdiag import rewardbench2 FILE... [--group /bench] -o OUT.h5\n"
             "  FILE        one model's results: JSON rows {\"id\", \"subset\", \"num_correct\", \"scores\"}\n"
             "              one per line after an optional {\"_record\": \"metadata\", \"model\": ...} line,\n"
             "              or the object of parallel arrays RewardBench 2 saves; scores are numbers or\n"
             "              one-element lists, the first num_correct preferred; \"results\" is ignored\n"
             "              (credits are recomputed from the scores). Per-subset accuracy files\n"
             "              ({\"Factuality\": 0.8, ...}) are accepted too.\n"
             "  --group G   output group (default /bench)\n"
             "Scores are stored as float64. Files of the same model are merged; models are aligned by\n"
             "(subset, id) and must have the same items with the same numbers of completions.\n",
    .run = rd_import_rewardbench2,
};

static const rd_import_format *const formats[] = {&cm_csv, &rewardbench, &rewardbench2, NULL};

const rd_import_format *const *rd_import_formats(void) { return formats; }
