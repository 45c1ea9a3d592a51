#!/usr/bin/python3
"""Full-size leakage report: the peers' generated panel (9 models x 6 series x 480 months x 3 seeds =
77,760 replies, 54 cells) with 10,000 bootstrap resamples per cell and 10,000 factor-shuffle null
draws per target series; rmdiag on 1 rank (a plain process) and 2 ranks against the numpy peer
(shared/peers/peer_leak.py), alternating, several repetitions; medians, each rank's peak resident
memory and CPU, rmdiag's phase times (RMDIAG_TIMING), the load average at the start of each run.
(bench/bench_leakage.py measures the same job on one rank count, with more repetitions.)

  seconds: rmdiag's report "seconds" and the peer's TIME total; wall and CPU: the whole command
There is no streaming floor: the panel is 2 MB; the time is the 2 x 10,000 resamples x 54 cells and the
10,000 null draws x 54 targets.

usage: bench/bench_leakage_full.py [--reps 3] [--resamples 10000] [--keep DIR] [--no-peer]
Goal (as bench_leakage.py): in-process >= 5x faster than the peer on 2 ranks; also 2 ranks against 1."""
import os
import subprocess

from benchlib import (KEEP_INPUT, full_job, full_table, options, peers_or_skip, phase_table, rank_rows, rounds, scratch,
                      speedup_line)


def extra(ap):
    ap.add_argument("--resamples", type=int, default=10000, help="bootstrap resamples and null draws")


a = options(__doc__, reps=3, extra=extra, keep=KEEP_INPUT, no_peer=True)
peers = peers_or_skip(a, "peer_leak.py")
tmp = scratch(a, "rmdiag-bench-leakage-full-")
inp = os.path.join(tmp, "leak.h5")
if not os.path.exists(inp):
    subprocess.run([a.python, os.path.join(peers, "gen_inputs.py"), inp, "--kinds", "leak"], check=True,
                   stdout=subprocess.DEVNULL)
B = a.resamples
fam = ["Mkt-RF", "SMB", "HML", "RMW", "CMA", "Mom"]
job, report = full_job(tmp, "leak-full", {"kind": "leakage", "input": "leak.h5", "bootstrap": B,
                                          "null_permutations": B, "family": fam})
peer_argv = [os.path.join(peers, "peer_leak.py"), inp, os.path.join(tmp, "peer"), "--bootstrap", str(B),
             "--perms", str(B), "--family", ",".join(fam)]

res = rounds(a.reps, rank_rows(a, job, report, None if a.no_peer else peer_argv))

print(f"leakage full size: 77,760 replies, 54 cells, {B} bootstrap resamples, {B} null draws; medians of {a.reps} "
      f"alternating runs")
full_table(res)
print(speedup_line(res, "; goal >= 5x"))
phase_table(res, ["rmdiag 1 rank", "rmdiag 2 ranks"])
