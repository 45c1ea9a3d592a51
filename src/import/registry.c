/* The import formats table. */
#include "rmdiag/import/formats.h"

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

static const rd_import_format numleak = {
    .name = "numleak",
    .summary = "NumLeak JSONL panels + truth CSVs (French, FRED, month,value) -> /leak",
    .usage =
        "rmdiag import numleak [OPTIONS] --panel FILE [PANEL OPTIONS] [--panel FILE [PANEL OPTIONS]]... -o OUT.h5\n"
        "Panels are JSONL files (one JSON object per line). Each row's fields are found by dotted paths into the\n"
        "object, so panels with different field names need options, not code. Replies are parsed with NumLeak's\n"
        "rules (numbers with %, percent, bps; a short reply's bare number) and kept in /leak/reply.\n"
        "Options:\n"
        "  --truth SERIES=FILE[,COLUMN[,TRANSFORM]]  ground truth of SERIES from a Kenneth French file (preamble,\n"
        "              monthly block, annual block and footer; -99.99/-999 missing), a FRED file\n"
        "              (observation_date,VALUE) or a month,value file; COLUMN defaults to SERIES (French) or the\n"
        "              second column; TRANSFORM level (default) or yoy (12-month % change, e.g. CPI)\n"
        "  --truth-numleak DIR   NumLeak's convention: Mkt-RF, SMB, HML from DIR/F-F_Research_Data_Factors.csv,\n"
        "              RMW, CMA from DIR/F-F_Research_Data_5_Factors_2x3.csv, Mom from DIR/F-F_Momentum_Factor.csv\n"
        "  --no-truth SERIES     SERIES has no ground truth here (its rows count as without truth)\n"
        "  --nan-truth error|missing   a NaN truth value is an error (default) or a missing value\n"
        "  --no-replies          do not keep the raw replies\n"
        "  --group G             output group (default /leak)\n"
        "Panel options (they apply to the --panel before them):\n"
        "  --as cells|rank|signal|defense   what the rows are (default cells: replies about a series and month)\n"
        "  --field NAME=PATH     where NAME is in each object (dotted PATH, e.g. query.factor); an empty PATH\n"
        "              unmaps it. NAME (default PATH): model (model_name), series (factor), variant (none: \"default\"),\n"
        "              seed (seed; absent = 0), month (month: YYYY-MM, YYYYMM or Month YYYY), reply (response),\n"
        "              error (error: non-null = an API error, status 2), key (none: no de-duplication), ts (ts),\n"
        "              truth (none: inline truth), logprobs (none: tokens with top_logprobs -> entropy_bits),\n"
        "              entropy (none: a precomputed entropy); rank: month_b (required), pick (none: the reply is\n"
        "              parsed); signal: recall (required); defense: defense (defense), attack (attack)\n"
        "  --set NAME=VALUE      a constant instead of a field (model, series, variant, seed, defense, attack)\n"
        "  --map NAME:FROM=TO    renames a value of model, series, variant, defense or attack\n"
        "  --where PATH=V[|V...] keeps the rows whose PATH is one of the values (repeatable, all must hold)\n"
        "  --fictional           the panel's series do not exist (no truth needed; reported as fictional)\n"
        "Rows with the same key keep the newest non-error record (largest ts). Every real series needs a truth\n"
        "source. Errors name the file, the line and the field.\n",
    .run = rd_import_numleak,
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

static const rd_import_format *const formats[] = {&cm_csv, &rewardbench, &rewardbench2, &numleak, &features, NULL};

const rd_import_format *const *rd_import_formats(void) { return formats; }
