#!/usr/bin/python3
"""leakage benchmark: rmdiag against the numpy peer (shared/peers/peer_leak.py) on the same generated input
(9 models x 6 series x 480 months x 3 seeds = 77,760 replies), 10,000 bootstrap resamples per cell and
10,000 factor-shuffle draws per target series, measured in the same run, alternating, several repetitions;
prints medians and ratios.

  in-process: rmdiag's report "seconds" (from the job's start to its report, HDF5 read included)
              vs the peer's own TIME total (read + compute + write, interpreter start excluded)
  process:    wall time of the whole command (rmdiag under mpiexec, or as a plain process)

The two programs compute the same cell metrics; their nulls differ in definition (the peer draws a sibling
per month and seed, rmdiag per month over seed-pooled month means, as the leakage report defines it) but not in amount of work.

usage: bench/bench_leakage.py [--ranks 2] [--reps 5] [--shared ../shared] [--rmdiag build/rmdiag]
Goal (issue): in-process >= 5x faster than the peer on 2 ranks."""
import json
import os

from benchlib import alternate, generate, header, options, peers_or_skip, rmdiag_cmd, row, write_job

a = options(__doc__, reps=5, extra=lambda ap: ap.add_argument("--resamples", type=int, default=10000))
peers = peers_or_skip(a, "peer_leak.py")
tmp, inp = generate(a, peers, "leak")
B = P = a.resamples
fam = ["Mkt-RF", "SMB", "HML", "RMW", "CMA", "Mom"]
job = write_job(tmp, "bench-leak", {"kind": "leakage", "input": "inputs.h5", "bootstrap": B, "null_permutations": P,
                                    "family": fam})
peer_cmd = [a.python, os.path.join(peers, "peer_leak.py"), inp, os.path.join(tmp, "peer"), "--bootstrap", str(B),
            "--perms", str(P), "--family", ",".join(fam)]
report = os.path.join(tmp, "out", "bench-leak.json")
rd_in, rd_wall, pe_in, pe_wall = alternate(a, rmdiag_cmd(a, job), report, peer_cmd)

# the deterministic cell metrics agree (the peer compares |d| <= tol in float, rmdiag by default in decimal)
mine = json.load(open(report))["result"]["cells"]
peer = json.load(open(os.path.join(tmp, "peer.json")))["cells"]
diff = max(abs(x[k] - y[k]) for x, y in zip(mine, peer) for k in ("parse_rate", "r", "mae", "sign_acc", "slope")
           if x[k] is not None and y[k] is not None)
print(f"leakage benchmark: 9 models x 6 series x 480 months x 3 seeds, {B} bootstrap resamples, {P} null draws; "
      f"rmdiag on {a.ranks or 1} rank(s); medians of {a.reps} alternating runs")
print(header(12))
print(row("in-process", rd_in, pe_in, "(goal >= 5x)", 12))
print(row("process", rd_wall, pe_wall, "", 12))
print(f"(min in-process: rmdiag {min(rd_in):.4f}, peer {min(pe_in):.4f}; largest difference of the cell metrics {diff:.2g})")
