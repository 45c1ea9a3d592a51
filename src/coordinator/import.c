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

static const rd_import_format *const formats[] = {&cm_csv, NULL};

const rd_import_format *const *rd_import_formats(void) { return formats; }
