#!/bin/bash
# Writes SYNTHETIC NumLeak-style panels and truth files into jobs/data/ (deterministic; no real model
# replies) with awk, then imports them with rmdiag's own numleak importer into jobs/data/demo_leak.h5 for
# jobs/demo_leakage.json. Three made-up series (Alpha, Beta, Gamma) x 60 months, three models (one that
# "recalls" the series, one that half does, one that guesses) x 2 seeds, replies in NumLeak's usual forms
# (percent signs, bps, ranges, bare numbers, refusals, API errors), a fictional series and a ranking panel.
set -euo pipefail
cd "$(dirname "$0")/.."
RMDIAG=${RMDIAG:-./build/rmdiag}
mkdir -p jobs/data
awk 'function rnd() { s = (s * 1103515245 + 12345) % 2147483648; return s / 2147483648 }
     function gauss() { return sqrt(-2 * log(rnd() + 1e-12)) * cos(6.283185307179586 * rnd()) }
     function mon(t) { return sprintf("%04d-%02d", 2001 + int(t / 12), t % 12 + 1) }
     function reply(x, k) {
       if (k < 0.45) return sprintf("%.2f%%", x)
       if (k < 0.60) return sprintf("%.2f", x)
       if (k < 0.70) return sprintf("Approximately %d bps.", int(x * 100))
       if (k < 0.78) return sprintf("Between %.1f%% and %.1f%%.", x - 0.5, x + 0.5)
       if (k < 0.90) return sprintf("The monthly return was about %.2f percent.", x)
       return "I do not have reliable data for that specific month."
     }
BEGIN {
  s = 20261201; T = 60; split("Alpha Beta Gamma", name, " "); split("recaller halfway guesser", model, " ")
  for (j = 1; j <= 3; j++) {
    f = "jobs/data/demo_leak_" tolower(name[j]) ".csv"
    print "month,value" > f
    for (t = 0; t < T; t++) { truth[j, t] = sprintf("%.2f", 1.5 * gauss() + 0.3); print mon(t) "," truth[j, t] > f }
  }
  p = "jobs/data/demo_leak_panel.jsonl"; printf "" > p
  for (m = 1; m <= 3; m++) for (j = 1; j <= 3; j++) for (sd = 1; sd <= 2; sd++) for (t = 0; t < T; t++) {
    y = truth[j, t]
    x = (m == 1) ? y + 0.15 * gauss() : (m == 2) ? 0.5 * y + 1.2 * gauss() : 1.5 * gauss()
    err = (rnd() < 0.02) ? "\"timeout\"" : "null"
    printf "{\"model_name\": \"%s\", \"factor\": \"%s\", \"month\": \"%s\", \"seed\": %d, \"response\": \"%s\", \"error\": %s}\n",
      model[m], name[j], mon(t), sd, reply(x, rnd()), err >> p
  }
  for (m = 1; m <= 3; m++) for (t = 0; t < 12; t++)
    printf "{\"model_name\": \"%s\", \"factor\": \"Omega Fund IV\", \"month\": \"%s\", \"response\": \"%s\"}\n",
      model[m], mon(5 * t), (m == 1) ? "I am not aware of a series by that name." : sprintf("%.2f%%", gauss()) >> p
  split("January February March April May June July August September October November December", mn, " ")
  r = "jobs/data/demo_leak_rank.jsonl"; printf "" > r
  for (m = 1; m <= 3; m++) for (i = 0; i < 30; i++) {
    a = int(T * rnd()); b = int(T * rnd()); if (a == b) b = (b + 1) % T
    hi = (truth[1, a] + 0 > truth[1, b] + 0) ? a : b; lo = (hi == a) ? b : a
    pick = (m == 1 || rnd() < 0.5) ? hi : lo
    printf "{\"model_name\": \"%s\", \"factor\": \"Alpha\", \"month\": \"%s\", \"month2\": \"%s\", \"response\": \"My answer is %s %d.\"}\n",
      model[m], mon(a), mon(b), mn[pick % 12 + 1], 2001 + int(pick / 12) >> r
  }
}'
echo "wrote jobs/data/demo_leak_*.csv, demo_leak_panel.jsonl, demo_leak_rank.jsonl (synthetic)"
"$RMDIAG" import numleak \
  --truth Alpha=jobs/data/demo_leak_alpha.csv --truth Beta=jobs/data/demo_leak_beta.csv \
  --truth Gamma=jobs/data/demo_leak_gamma.csv \
  --panel jobs/data/demo_leak_panel.jsonl --where "factor=Alpha|Beta|Gamma" \
  --panel jobs/data/demo_leak_panel.jsonl --where "factor=Omega Fund IV" --fictional \
  --panel jobs/data/demo_leak_rank.jsonl --as rank --field month_b=month2 \
  -o jobs/data/demo_leak.h5
