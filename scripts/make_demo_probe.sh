#!/bin/bash
# Writes SYNTHETIC probe inputs for jobs/demo_probe.json (deterministic; no real reward-model
# features): two tasks of 420 rows x 16 features (labels 0..4, a few missing; splits 70/15/15) and
# 90 inference rows, as .npy files and label CSVs made with awk (in a temporary folder), then imported
# with `rmdiag import features` into jobs/data/demo_probe.h5. Needs nothing but rmdiag (build/rmdiag).
set -euo pipefail
cd "$(dirname "$0")/.."
RMDIAG=${RMDIAG:-./build/rmdiag}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mkdir -p jobs/data
D=16
# gen TASK_SEED ROWS NAME: the features as octal escapes of a float32 .npy (one line per row), the
# labels CSV beside them
gen() {
  awk -v seed="$1" -v N="$2" -v D="$D" -v csv="$T/$3_labels.csv" -v infer="$4" '
  function rnd() { s = (s * 1103515245 + 12345) % 2147483648; return s / 2147483648 }
  function gauss() { return sqrt(-2 * log(rnd() + 1e-12)) * cos(6.283185307179586 * rnd()) }
  function f32(v,   sg, e, m) {          # IEEE binary32 bits of v (round to nearest)
    if (v == 0) return 0
    sg = 0; if (v < 0) { sg = 1; v = -v }
    e = 0
    while (v >= 2) { v /= 2; e++ }
    while (v < 1) { v *= 2; e-- }
    m = int((v - 1) * 8388608 + 0.5)
    if (m == 8388608) { m = 0; e++ }
    return sg * 2147483648 + (e + 127) * 8388608 + m
  }
  function bytes(b,   k, out) { out = ""; for (k = 0; k < 4; k++) { out = out sprintf("\\%03o", b % 256); b = int(b / 256) } return out }
  BEGIN {
    s = seed
    for (c = 0; c < 5; c++) for (j = 0; j < D; j++) mu[c, j] = 0.9 * gauss()
    for (j = 0; j < D; j++) off[j] = 0.5 * gauss()
    hdr = sprintf("{\047descr\047: \047<f4\047, \047fortran_order\047: False, \047shape\047: (%d, %d), }", N, D)
    while ((10 + length(hdr) + 1) % 64) hdr = hdr " "
    line = "\\223NUMPY\\001\\000" sprintf("\\%03o\\%03o", (length(hdr) + 1) % 256, int((length(hdr) + 1) / 256)) hdr "\\n"
    print line
    if (!infer) print "label,split" > csv
    for (i = 0; i < N; i++) {
      lab = int(5 * rnd()); if (rnd() < 0.01) lab = -1
      sp = rnd(); sp = sp < 0.7 ? 0 : (sp < 0.85 ? 1 : 2)
      line = ""
      for (j = 0; j < D; j++) {
        v = gauss() + off[j]
        if (infer) v = 1.5 * v; else if (lab >= 0) v += mu[lab, j]
        line = line bytes(f32(v))
      }
      print line
      if (!infer) printf "%s,%d\n", (lab < 0 ? "" : lab), sp > csv
    }
  }' | while IFS= read -r line; do printf "$line"; done > "$T/$3.npy"
}
gen 7 420 harmlessness ""
gen 11 420 helpfulness ""
gen 13 90 infer 1
"$RMDIAG" import features \
  --task harmlessness "$T/harmlessness.npy" "$T/harmlessness_labels.csv" \
  --task helpfulness "$T/helpfulness.npy" "$T/helpfulness_labels.csv" \
  --infer "$T/infer.npy" -o jobs/data/demo_probe.h5
echo "wrote jobs/data/demo_probe.h5 (synthetic); run: mpiexec -n 2 $RMDIAG run jobs/demo_probe.json"
