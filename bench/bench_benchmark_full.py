#!/usr/bin/python3
"""Full-size benchmark report: 500 models x 5,000 RewardBench v1 items (two completions each, the 23
subsets in RewardBench's proportions, exact ties from rounded scores), 1000 bootstrap resamples;
rmdiag on 1 rank (a plain process) and 2 ranks against the numpy peer (shared/peers/peer_bench.py),
alternating, several repetitions; medians, each rank's peak resident memory and CPU, rmdiag's phase
times (RMDIAG_TIMING), and the load average at the start of each run.

  seconds: rmdiag's report "seconds" (from the job's start to its closed .h5) and the peer's TIME total
           (read + compute + write, interpreter start excluded); wall and CPU: the whole command
There is no streaming floor: the input is 20 MB of scores (a few ms to read); the time is the
bootstrap (M x B x items draws' sums).

usage: bench/bench_benchmark_full.py [--reps 3] [--models 500] [--items 5000] [--bootstrap 1000] [--compare]
                                     [--keep DIR] [--no-peer]
Looked at: rmdiag against the peer, 2 ranks against 1, memory per rank."""
import importlib.util
import os

import h5py
import numpy as np

from benchlib import (KEEP_INPUT, full_job, full_table, options, peers_or_skip, phase_table, rank_rows, rounds, scratch,
                      speedup_line)


def extra(ap):
    ap.add_argument("--models", type=int, default=500)
    ap.add_argument("--items", type=int, default=5000)
    ap.add_argument("--bootstrap", type=int, default=1000)
    ap.add_argument("--compare", action="store_true", help="also compare every pair of models")


a = options(__doc__, reps=3, extra=extra, keep=KEEP_INPUT, no_peer=True)
peers = peers_or_skip(a, "gen_inputs.py")
tmp = scratch(a, "rmdiag-bench-benchmark-full-")
inp = os.path.join(tmp, f"bench-{a.models}x{a.items}.h5")
if not os.path.exists(inp):
    # the peers' generator's subsets and score model, at this size
    spec = importlib.util.spec_from_file_location("gen_inputs", os.path.join(peers, "gen_inputs.py"))
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    rng = np.random.default_rng([7, a.models, a.items])
    real = np.array([s[2] for s in gen.V1_SUBSETS], float)
    sizes = np.maximum(1, np.floor(real / real.sum() * a.items)).astype(int)
    sizes[np.argmax(sizes)] += a.items - sizes.sum()
    sub = np.repeat(np.arange(len(sizes), dtype=np.int32), sizes)[rng.permutation(a.items)]
    I = a.items
    with h5py.File(inp, "w") as f:
        g = f.create_group("bench")
        w = gen.W(False, False)
        w.str(g, "model_names", [f"rm-{i:04d}" for i in range(a.models)])
        w.str(g, "subset_names", [s[0] for s in gen.V1_SUBSETS])
        w.arr(g, "item_subset", sub)
        w.arr(g, "item_offset", np.arange(0, 2 * I + 1, 2, dtype=np.int64))
        w.arr(g, "item_n_correct", np.ones(I, np.int32))
        w.arr(g, "scores", gen.scores_for(rng, a.models, [2] * I, [1] * I, 1.2, 2 * I).astype(np.float32))
spec = {"kind": "benchmark", "input": os.path.basename(inp), "scheme": "rewardbench-v1", "bootstrap": a.bootstrap}
if a.compare:
    spec["compare"] = "all"
job, report = full_job(tmp, "bench-full", spec)
peer_argv = [os.path.join(peers, "peer_bench.py"), inp, os.path.join(tmp, "peer"), "--scheme", "v1",
             "--bootstrap", str(a.bootstrap)] + (["--compare", "all"] if a.compare else [])

res = rounds(a.reps, rank_rows(a, job, report, None if a.no_peer else peer_argv))

print(f"benchmark full size: {a.models} models x {a.items} v1 items (2 completions each), {a.bootstrap} bootstrap "
      f"resamples{', every pair compared' if a.compare else ''}; medians of {a.reps} alternating runs")
full_table(res)
print(speedup_line(res))
phase_table(res, ["rmdiag 1 rank", "rmdiag 2 ranks"])
