#!/usr/bin/python3
"""benchmark-report benchmark: rmdiag against the numpy peer (shared/peers/peer_bench.py) on the same
generated inputs (50 models x 2985 RewardBench v1 items, and 50 models x 1865 RewardBench 2 items with
Ties prompts; 1000 bootstrap resamples), measured in the same run, alternating, several repetitions;
prints medians and ratios for each scheme.

  in-process: rmdiag's report "seconds" (from the job's start to its report, HDF5 read included)
              vs the peer's own TIME total (read + compute + write, interpreter start excluded)
  process:    wall time of the whole command (rmdiag under mpiexec, or as a plain process)

usage: bench/bench_benchmark.py [--ranks 2] [--reps 7] [--compare] [--shared ../shared] [--rmdiag build/rmdiag]
  --compare   also compare every pair of models (1225 paired-bootstrap comparisons) in both programs
Goal (issue): in-process >= 3x faster than the peer, whole process faster than the peer's."""
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
ap.add_argument("--reps", type=int, default=7)
ap.add_argument("--compare", action="store_true")
ap.add_argument("--shared", default=os.path.join(here, "..", "..", "shared"))
ap.add_argument("--rmdiag", default=os.path.join(here, "..", "build", "rmdiag"))
ap.add_argument("--python", default="/usr/bin/python3")
a = ap.parse_args()
peers = os.path.join(a.shared, "peers")
if not os.path.isfile(os.path.join(peers, "peer_bench.py")):
    print(f"SKIP: {peers}/peer_bench.py not found (the peers live in the shared folder)")
    sys.exit(0)

env = dict(os.environ, OMPI_MCA_pml=os.environ.get("OMPI_MCA_pml", "ob1"), OMPI_MCA_rmaps_base_oversubscribe="1")
if os.geteuid() == 0:
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
tmp = tempfile.mkdtemp(prefix="rmdiag-bench-")
inp = os.path.join(tmp, "inputs.h5")
subprocess.run([a.python, os.path.join(peers, "gen_inputs.py"), inp, "--kinds", "bench,bench2"], check=True,
               stdout=subprocess.DEVNULL)
cases = [("v1", "/bench", "rewardbench-v1", "2985"), ("v2", "/bench2", "rewardbench-v2", "1865")]
launcher = [] if a.ranks == 0 else ["mpiexec", "-n", str(a.ranks)]
results = {}
for tag, group, scheme, items in cases:
    job = os.path.join(tmp, f"job-{tag}.json")
    spec = {"name": f"bench-{tag}", "kind": "benchmark", "input": "inputs.h5", "group": group, "scheme": scheme,
            "bootstrap": 1000}
    if a.compare:
        spec["compare"] = "all"
    with open(job, "w") as f:
        json.dump({"output_dir": "out", "seed": 0, "jobs": [spec]}, f)
    rd_cmd = launcher + [a.rmdiag, "run", job, "--force", "--quiet"]
    peer_cmd = [a.python, os.path.join(peers, "peer_bench.py"), inp, os.path.join(tmp, f"peer-{tag}"), "--group",
                group, "--scheme", tag, "--bootstrap", "1000"] + (["--compare", "all"] if a.compare else [])
    rd_in, rd_wall, pe_in, pe_wall = [], [], [], []
    for rep in range(a.reps + 1):       # the first repetition warms the page cache and is dropped
        t = time.perf_counter()
        subprocess.run(rd_cmd, check=True, env=env, stdout=subprocess.DEVNULL)
        w = time.perf_counter() - t
        s = json.load(open(os.path.join(tmp, "out", f"bench-{tag}.json")))["rmdiag"]["seconds"]
        t = time.perf_counter()
        out = subprocess.run(peer_cmd, check=True, capture_output=True, text=True).stdout
        pw = time.perf_counter() - t
        ps = float(re.search(r"TIME read \S+ compute \S+ write \S+ total (\S+)", out).group(1))
        if rep:
            rd_in.append(s), rd_wall.append(w), pe_in.append(ps), pe_wall.append(pw)
    results[tag] = (items, rd_in, rd_wall, pe_in, pe_wall)

m = statistics.median
print(f"benchmark report: 50 models, 1000 bootstrap resamples{', all 1225 pairs compared' if a.compare else ''}; "
      f"rmdiag on {a.ranks or 1} rank(s); medians of {a.reps} alternating runs")
print(f"{'':22}{'rmdiag':>10}{'peer':>10}{'ratio':>9}")
for tag, (items, rd_in, rd_wall, pe_in, pe_wall) in results.items():
    print(f"{tag + ' in-process':22}{m(rd_in):10.4f}{m(pe_in):10.4f}{m(pe_in) / m(rd_in):8.2f}x   (goal >= 3x; "
          f"{items} items)")
    print(f"{tag + ' process':22}{m(rd_wall):10.4f}{m(pe_wall):10.4f}{m(pe_wall) / m(rd_wall):8.2f}x   (goal > 1x)")
for tag, (items, rd_in, rd_wall, pe_in, pe_wall) in results.items():
    print(f"({tag} min in-process: rmdiag {min(rd_in):.4f}, peer {min(pe_in):.4f})")
