/* Recognising which importer a data file belongs to (see recognise.h): by the keys each format's
 * files always carry, and by RewardBench's subset names. */
#include "rmdiag/import/recognise.h"

#include <string.h>

static int has(const cJSON *obj, const char *key) { return cJSON_GetObjectItemCaseSensitive(obj, key) != NULL; }

rd_looks rd_import_looks(const cJSON *obj, const char **key) {
  const char *k = NULL;
  rd_looks l = RD_LOOKS_UNKNOWN;
  if (!cJSON_IsObject(obj)) {
    if (key) *key = NULL;
    return l;
  }
  const cJSON *rec = cJSON_GetObjectItemCaseSensitive(obj, "_record");
  int v1 = has(obj, "scores_chosen") || has(obj, "scores_rejected");
  int v2 = has(obj, "num_correct") || (has(obj, "scores") && has(obj, "subset"));
  if (cJSON_IsString(rec) && strcmp(rec->valuestring, "metadata") == 0) {
    l = RD_LOOKS_RB_META, k = "_record";
  } else if (v1 && !v2) {
    l = RD_LOOKS_RB1, k = has(obj, "scores_chosen") ? "scores_chosen" : "scores_rejected";
  } else if (v2 && !v1) {
    l = RD_LOOKS_RB2, k = has(obj, "num_correct") ? "num_correct" : "scores";
  } else if (!v1 && !has(obj, "subset")) {
    /* NumLeak's own field names (the numleak importer's default paths) */
    static const char *const nl[] = {"model_name", "factor", "month", "response", NULL};
    int n = 0;
    for (int i = 0; nl[i]; i++)
      if (has(obj, nl[i])) {
        if (!k) k = nl[i];
        n++;
      }
    if (n >= 2) l = RD_LOOKS_NUMLEAK;
    else k = NULL;
  }
  if (key) *key = k;
  return l;
}

int rd_rb_subset_version(const char *name) {
  static const char *const v1_prefix[] = {"alpacaeval-", "mt-bench-", "llmbar-", "refusals-", "xstest-", "hep-", NULL};
  static const char *const v1_exact[] = {"donotanswer", "math-prm", "anthropic_helpful", "anthropic_hhh",
                                         "anthropic_harmless", "shp", "summarize", "mtbench_gpt4", "mtbench_human",
                                         "pku_better", "pku_safer", NULL};
  static const char *const v2_exact[] = {"Factuality", "Precise IF", "Math", "Safety", "Focus", "Ties", NULL};
  for (int i = 0; v1_prefix[i]; i++)
    if (strncmp(name, v1_prefix[i], strlen(v1_prefix[i])) == 0) return 1;
  for (int i = 0; v1_exact[i]; i++)
    if (strcmp(name, v1_exact[i]) == 0) return 1;
  for (int i = 0; v2_exact[i]; i++)
    if (strcmp(name, v2_exact[i]) == 0) return 2;
  return 0;
}

const char *rd_looks_command(rd_looks l) {
  switch (l) {
    case RD_LOOKS_RB1: return "rmdiag import rewardbench";
    case RD_LOOKS_RB2: return "rmdiag import rewardbench2";
    case RD_LOOKS_NUMLEAK: return "rmdiag import numleak --panel";
    default: return "rmdiag import rewardbench or rewardbench2";
  }
}

const char *rd_looks_what(rd_looks l) {
  switch (l) {
    case RD_LOOKS_RB1: return "RewardBench v1 results";
    case RD_LOOKS_RB2: return "RewardBench 2 results";
    case RD_LOOKS_NUMLEAK: return "a NumLeak panel";
    case RD_LOOKS_RB_META: return "RewardBench results";
    default: return "something else";
  }
}
