#!/bin/bash
# Writes SYNTHETIC inputs for jobs/demo_benchmark.json (deterministic; no real model outputs):
# RewardBench-shaped result files of three made-up reward models, generated with awk, then imported
# with rmdiag's own importers into out/demo_benchmark/inputs/:
#   - RewardBench v1 per-item JSON rows (all 23 subsets, 12 items each, 20 for math-prm) -> demo_rb1.h5
#   - RewardBench 2 per-item JSONL with a metadata line (five subsets + 10 Ties prompts) -> demo_rb2.h5
# Scores are rounded to 0.25, so exact ties occur (wrong under v1, 1/k credit under v2).
# Then: ./build/rmdiag run jobs/demo_benchmark.json   (or under mpiexec -n 2)
set -euo pipefail
cd "$(dirname "$0")/.."
RMDIAG=${RMDIAG:-./build/rmdiag}
[ -x "$RMDIAG" ] || { echo "build rmdiag first (bash scripts/build.sh)" >&2; exit 1; }
dir=${DEMO_BENCHMARK_DIR:-out/demo_benchmark/inputs}
mkdir -p "$dir"
for m in 0 1 2; do
  # Park-Miller generator: exact in awk's double arithmetic, so every awk gives the same numbers
  awk -v m="$m" -v dir="$dir" '
    function rnd() { s = (s * 16807) % 2147483647; return s / 2147483647 }
    function gauss() { return sqrt(-2 * log(rnd() + 1e-12)) * cos(6.283185307179586 * rnd()) }
    function q(x) { return sprintf("%.2f", int(x * 4 + (x < 0 ? -0.5 : 0.5)) / 4) }
    BEGIN {
      s = 20261130 + 7919 * m; skill = 1.2 - 0.4 * m
      name = "synthetic/demo-rm-" m
      n1 = split("alpacaeval-easy alpacaeval-length alpacaeval-hard mt-bench-easy mt-bench-med mt-bench-hard " \
                 "llmbar-natural llmbar-adver-neighbor llmbar-adver-GPTInst llmbar-adver-GPTOut llmbar-adver-manual " \
                 "refusals-dangerous refusals-offensive xstest-should-refuse xstest-should-respond donotanswer " \
                 "math-prm hep-cpp hep-go hep-java hep-js hep-python hep-rust", v1, " ")
      f1 = dir "/demo_rb1_" m ".jsonl"
      printf "{\"_record\": \"metadata\", \"model\": \"%s\", \"note\": \"synthetic\"}\n", name > f1
      id = 0
      for (k = 1; k <= n1; k++) {
        n = v1[k] == "math-prm" ? 20 : 12
        for (i = 0; i < n; i++) {
          printf "{\"id\": %d, \"subset\": \"%s\", \"scores_chosen\": %s, \"scores_rejected\": %s}\n", id++, v1[k],
                 q(gauss() + skill * rnd()), q(gauss()) > f1
        }
      }
      split("Factuality:40,Precise IF:20,Math:20,Safety:40,Focus:40", v2, ",")
      f2 = dir "/demo_rb2_" m ".jsonl"
      printf "{\"_record\": \"metadata\", \"model\": \"%s\", \"note\": \"synthetic\"}\n", name > f2
      id = 0
      for (k = 1; k <= 5; k++) {
        split(v2[k], p, ":")
        for (i = 0; i < p[2] + 0; i++) {
          line = sprintf("{\"id\": \"%d\", \"subset\": \"%s\", \"num_correct\": 1, \"scores\": [[%s]", id++, p[1], q(gauss() + skill))
          for (j = 0; j < 3; j++) line = line sprintf(", [%s]", q(gauss()))
          print line "]}" > f2
        }
      }
      for (t = 0; t < 10; t++) {
        nc = 2 + t % 3
        line = sprintf("{\"id\": \"tied:%d\", \"subset\": \"Ties\", \"num_correct\": %d, \"scores\": [", t, nc)
        for (j = 0; j < nc + 6; j++) line = line (j ? ", " : "") q(j < nc ? 2 + 0.3 * gauss() + skill : gauss())
        print line "]}" > f2
        line = sprintf("{\"id\": \"ref:%d\", \"subset\": \"Ties\", \"num_correct\": 1, \"scores\": [", t)
        for (j = 0; j < 6; j++) line = line (j ? ", " : "") q(j < 1 ? 2 + 0.3 * gauss() + skill : gauss())
        print line "]}" > f2
      }
    }'
done
"$RMDIAG" import rewardbench "$dir"/demo_rb1_{0,1,2}.jsonl -o "$dir/demo_rb1.h5"
"$RMDIAG" import rewardbench2 "$dir"/demo_rb2_{0,1,2}.jsonl -o "$dir/demo_rb2.h5"
echo "wrote $dir/demo_rb1.h5 and $dir/demo_rb2.h5 (synthetic)"
