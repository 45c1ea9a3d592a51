/* Which importer a data file belongs to, from the keys of its JSON objects and the names of its
 * subsets: an importer handed another format's file (RewardBench 2 results to `rewardbench`, a NumLeak
 * panel to a RewardBench importer, ...) refuses it with a message naming the importer that reads it,
 * instead of reading it wrongly or failing far from the cause. */
#ifndef RMDIAG_IMPORT_RECOGNISE_H
#define RMDIAG_IMPORT_RECOGNISE_H

#include <cjson/cJSON.h>

typedef enum rd_looks {
  RD_LOOKS_UNKNOWN = 0,
  RD_LOOKS_RB1,      /* RewardBench v1 results: scores_chosen / scores_rejected */
  RD_LOOKS_RB2,      /* RewardBench 2 results: num_correct / scores */
  RD_LOOKS_RB_META,  /* a RewardBench metadata row {"_record": "metadata", ...} (either version) */
  RD_LOOKS_NUMLEAK   /* a NumLeak panel row: model_name, factor, month, response */
} rd_looks;

/* What a JSON object looks like by its keys (a row, or an object of parallel arrays). *key, when not
 * NULL, receives the key that decided (for messages). An object with the keys of both RewardBench
 * versions is RD_LOOKS_UNKNOWN: the importer's own checks speak for it. */
rd_looks rd_import_looks(const cJSON *obj, const char **key);

/* The RewardBench version a subset name belongs to: 1 (alpacaeval-*, mt-bench-*, llmbar-*, refusals-*,
 * xstest-*, donotanswer, math-prm, hep-*, and the prior sets), 2 (Factuality, Precise IF, Math,
 * Safety, Focus, Ties), else 0. */
int rd_rb_subset_version(const char *name);

/* "rmdiag import rewardbench", "rmdiag import rewardbench2" or "rmdiag import numleak --panel"; what the
 * files are ("RewardBench v1 results", ...). */
const char *rd_looks_command(rd_looks l);
const char *rd_looks_what(rd_looks l);

#endif
