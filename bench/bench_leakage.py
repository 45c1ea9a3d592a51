#!/usr/bin/python3
"""leakage benchmark: rmdiag against the numpy peer (shared/peers/peer_leak.py) on the same generated input
(9 models x 6 series x 480 months x 3 seeds = 77,760 replies), 10,000 bootstrap resamples per cell and
10,000 factor-shuffle draws per target series, measured in the same run, alternating, several repetitions;
prints medians and ratios.

  in-process: rmdiag's report "seconds" (from the job's start to its report, HDF5 read included)
              vs the peer's own TIME total (read + compute + write, interpreter start excluded)
  process:    wall time of the whole command (rmdiag under mpiexec, or as a plain process)

The two programs compute the same cell metrics; their nulls differ in definition (the peer draws a sibling
per month and seed, rmdiag per month over seed-pooled month means, as SPEC §6 says) but not in amount of work.

usage: bench/bench_leakage.py [--ranks 2] [--reps 5] [--shared ../shared] [--rmdiag build/rmdiag]
Goal (issue): in-process >= 5x faster than the peer on 2 ranks."""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
ap = argparse.ArgumentParser()
ap.add_argument("--ranks", type=int, default=2)
ap.add_argument("--reps", type=int, default=5)
ap.add_argument("--shared", default=os.path.join(here, "..", "..", "shared"))
ap.add_argument("--rmdiag", default=os.path.join(here, "..", "build", "rmdiag"))
ap.add_argument("--python", default="/usr/bin/python3")
ap.add_argument("--resamples", type=int, default=10000)
a = ap.parse_args()
peers = os.path.join(a.shared, "peers")
if not os.path.isfile(os.path.join(peers, "peer_leak.py")):
    print(f"SKIP: {peers}/peer_leak.py not found (the peers live in the shared folder)")
    sys.exit(0)

env = dict(os.environ, OMPI_MCA_pml=os.environ.get("OMPI_MCA_pml", "ob1"), OMPI_MCA_rmaps_base_oversubscribe="1")
if os.geteuid() == 0:
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
tmp = tempfile.mkdtemp(prefix="rmdiag-bench-")
inp = os.path.join(tmp, "inputs.h5")
subprocess.run([a.python, os.path.join(peers, "gen_inputs.py"), inp, "--kinds", "leak"], check=True,
               stdout=subprocess.DEVNULL)
B = P = a.resamples
fam = ["Mkt-RF", "SMB", "HML", "RMW", "CMA", "Mom"]
job = os.path.join(tmp, "job.json")
with open(job, "w") as f:
    json.dump({"output_dir": "out", "seed": 0, "jobs": [{"name": "bench-leak", "kind": "leakage", "input": "inputs.h5",
                                                          "bootstrap": B, "null_permutations": P, "family": fam}]}, f)
rd_cmd = ([a.rmdiag] if a.ranks == 0 else ["mpiexec", "-n", str(a.ranks), a.rmdiag]) + ["run", job, "--force", "--quiet"]
peer_cmd = [a.python, os.path.join(peers, "peer_leak.py"), inp, os.path.join(tmp, "peer"), "--bootstrap", str(B),
            "--perms", str(P), "--family", ",".join(fam)]

rd_in, rd_wall, pe_in, pe_wall = [], [], [], []
for rep in range(a.reps + 1):           # the first repetition warms the page cache and is dropped
    t = time.perf_counter()
    subprocess.run(rd_cmd, check=True, env=env, stdout=subprocess.DEVNULL)
    w = time.perf_counter() - t
    s = json.load(open(os.path.join(tmp, "out", "bench-leak.json")))["rmdiag"]["seconds"]
    t = time.perf_counter()
    out = subprocess.run(peer_cmd, check=True, capture_output=True, text=True).stdout
    pw = time.perf_counter() - t
    ps = float(re.search(r"TIME read \S+ compute \S+ write \S+ total (\S+)", out).group(1))
    if rep:
        rd_in.append(s), rd_wall.append(w), pe_in.append(ps), pe_wall.append(pw)

# the deterministic cell metrics agree (the peer compares |d| <= tol in float, rmdiag by default in decimal)
mine = json.load(open(os.path.join(tmp, "out", "bench-leak.json")))["result"]["cells"]
peer = json.load(open(os.path.join(tmp, "peer.json")))["cells"]
diff = max(abs(x[k] - y[k]) for x, y in zip(mine, peer) for k in ("parse_rate", "r", "mae", "sign_acc", "slope")
           if x[k] is not None and y[k] is not None)
m = statistics.median
print(f"leakage benchmark: 9 models x 6 series x 480 months x 3 seeds, {B} bootstrap resamples, {P} null draws; "
      f"rmdiag on {a.ranks or 1} rank(s); medians of {a.reps} alternating runs")
print(f"{'':12}{'rmdiag':>10}{'peer':>10}{'ratio':>9}")
print(f"{'in-process':12}{m(rd_in):10.4f}{m(pe_in):10.4f}{m(pe_in) / m(rd_in):8.2f}x   (goal >= 5x)")
print(f"{'process':12}{m(rd_wall):10.4f}{m(pe_wall):10.4f}{m(pe_wall) / m(rd_wall):8.2f}x")
print(f"(min in-process: rmdiag {min(rd_in):.4f}, peer {min(pe_in):.4f}; largest difference of the cell metrics {diff:.2g})")
