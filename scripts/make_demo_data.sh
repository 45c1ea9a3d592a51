#!/bin/bash
# Writes SYNTHETIC example inputs for jobs/demo.json into jobs/data/ (deterministic; no real model
# outputs): a long cm CSV of 600 preference pairs x 8 runs from 60 users, with a length covariate
# and a source label, made with awk so the demo needs nothing but rmdiag.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p jobs/data
awk 'function rnd() { s = (s * 1103515245 + 12345) % 2147483648; return s / 2147483648 }
     function gauss() { return sqrt(-2 * log(rnd() + 1e-12)) * cos(6.283185307179586 * rnd()) }
BEGIN {
  s = 20261130; P = 600; R = 8; U = 60
  for (u = 0; u < U; u++) for (r = 0; r < R; r++) split_[u, r] = (rnd() < 0.75) ? 1 : 0
  for (r = 0; r < R; r++) { split_[0, r] = 1; split_[1, r] = 0 }   # one user always trained on, one never
  print "run,pair,user,reward_chosen,reward_rejected,in_train,length_diff,source"
  for (p = 0; p < P; p++) {
    u = int(U * rnd() * rnd()); len = int(gauss() * 120); src = int(4 * rnd())
    base = 0.4 + 0.002 * len + gauss(); memo = 0.6 * rnd() * rnd()
    for (r = 0; r < R; r++) {
      rej = 2 * gauss(); f = split_[u, r]
      printf "%d,pair-%04d,user-%02d,%.6f,%.6f,%d,%d,%d\n", r, p, u, rej + base + memo * f + 0.5 * gauss(), rej, f, len, src
    }
  }
}' > jobs/data/demo_pairs.csv
echo "wrote jobs/data/demo_pairs.csv (synthetic)"
