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
import os

from benchlib import alternate, generate, header, options, peers_or_skip, rmdiag_cmd, row, write_job

a = options(__doc__, extra=lambda ap: ap.add_argument("--compare", action="store_true"))
peers = peers_or_skip(a, "peer_bench.py")
tmp, inp = generate(a, peers, "bench,bench2")
cases = [("v1", "/bench", "rewardbench-v1", "2985"), ("v2", "/bench2", "rewardbench-v2", "1865")]
results = {}
for tag, group, scheme, items in cases:
    spec = {"kind": "benchmark", "input": "inputs.h5", "group": group, "scheme": scheme, "bootstrap": 1000}
    if a.compare:
        spec["compare"] = "all"
    job = write_job(tmp, f"bench-{tag}", spec)
    peer_cmd = [a.python, os.path.join(peers, "peer_bench.py"), inp, os.path.join(tmp, f"peer-{tag}"), "--group",
                group, "--scheme", tag, "--bootstrap", "1000"] + (["--compare", "all"] if a.compare else [])
    results[tag] = (items,) + alternate(a, rmdiag_cmd(a, job), os.path.join(tmp, "out", f"bench-{tag}.json"), peer_cmd)

print(f"benchmark report: 50 models, 1000 bootstrap resamples{', all 1225 pairs compared' if a.compare else ''}; "
      f"rmdiag on {a.ranks or 1} rank(s); medians of {a.reps} alternating runs")
print(header())
for tag, (items, rd_in, rd_wall, pe_in, pe_wall) in results.items():
    print(row(tag + " in-process", rd_in, pe_in, f"(goal >= 3x; {items} items)"))
    print(row(tag + " process", rd_wall, pe_wall, "(goal > 1x)"))
for tag, (items, rd_in, rd_wall, pe_in, pe_wall) in results.items():
    print(f"({tag} min in-process: rmdiag {min(rd_in):.4f}, peer {min(pe_in):.4f})")
