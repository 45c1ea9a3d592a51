#!/usr/bin/python3
"""Many small jobs: one job file of 100 jobs of all four kinds (each 10-100 ms on one rank), run
whole as a plain process (1 rank), under `mpiexec -n 1` (the launcher's own cost) and under
`mpiexec -n 2` (the scheduler runs the small jobs on single ranks side by side), alternating,
several repetitions; and the numpy peers running the same 100 jobs one after another, both in one
Python process (each peer's main() called in turn: no interpreter start per job) and as a user's
shell loop would (one `python3 peer_*.py` process per job). Medians, ratios, the load average at
the start of each run, and a check that the 1-rank and 2-rank outputs are identical (every .h5 byte
for byte, every report .json without the envelope's "seconds" and "ranks").

  inputs:  --files F input files of the peers' generator (gen_inputs.py --kinds cm,bench,bench2,leak
           --seed S: cm 137,000 pairs x 25 runs, benchmark v1 and v2 with 50 models, leakage 77,760
           replies) and F small probe files (two tasks of 4,000 x 1,024 float32 rows, 500 inference
           rows), generated here
  jobs:    25 cm (bootstrap 200-1000), 25 benchmark (v1 / v2, bootstrap 1000, some comparing all
           1225 model pairs), 25 leakage (bootstrap and null draws 100-300, tolerance rules), 25 probe
           (2 / 3 classes, one or two tasks, 1-3 learning rates, zero init as the peer), seeds varied; the peers get
           the same options

usage: bench/bench_jobs.py [--reps 5] [--peer-reps 3] [--each-reps 1] [--files 4] [--keep DIR] [--no-peer]
Goal (issue): the 100 small jobs on 2 ranks at least 1.7x faster than on 1 rank."""
import json
import os
import subprocess
import sys
import tempfile
import shutil
import atexit

import numpy as np
import h5py

from benchlib import compare_outputs, launch, load, measure, med, mpi_env, options, peers_or_skip, rank_stats


def extra(ap):
    ap.add_argument("--peer-reps", type=int, default=3, help="repetitions of the peers (slow: about 30 s each)")
    ap.add_argument("--each-reps", type=int, default=1,
                    help="repetitions of the peers as one process per job (slower still: about 100 s each)")
    ap.add_argument("--files", type=int, default=4, help="input files of each sort (distinct seeds)")


a = options(__doc__, reps=5, extra=extra, keep="folder for the generated inputs (reused when present) and the outputs",
            no_peer=True)
peers = peers_or_skip(a, "gen_inputs.py")
have_peers = not a.no_peer
tmp = a.keep or tempfile.mkdtemp(prefix="rmdiag-bench-jobs-")
if not a.keep:
    atexit.register(shutil.rmtree, tmp, True)
os.makedirs(tmp, exist_ok=True)


# ---- inputs --------------------------------------------------------------------------------------------

def gen_probe(path, seed, n=4000, d=1024, n_inf=500):
    """Two tasks (labels 0..4, -1 missing) of n rows of d float32 features, split 80/10/10, and inference rows."""
    rng = np.random.default_rng([seed, 99])
    with h5py.File(path, "w") as f:
        for t, task in enumerate(("harm", "help")):
            lab = rng.integers(-1, 5, n).astype(np.int32)
            mu = (rng.normal(0, 1, (5, d)) * 0.08).astype(np.float32)
            X = rng.standard_normal((n, d), dtype=np.float32)
            X += mu[np.maximum(lab, 0)]
            f[f"probe/{task}/X"] = X
            f[f"probe/{task}/label"] = lab
            f[f"probe/{task}/split"] = np.repeat(np.array([0, 1, 2], np.uint8),
                                                 [n - n // 5, n // 10, n // 5 - n // 10])[rng.permutation(n)]
        f["probe/infer/X"] = rng.standard_normal((n_inf, d), dtype=np.float32)


for s in range(a.files):
    p = os.path.join(tmp, f"inp-{s}.h5")
    if not os.path.exists(p):
        subprocess.run([a.python, os.path.join(peers, "gen_inputs.py"), p, "--kinds", "cm,bench,bench2,leak",
                        "--seed", str(s)], check=True, stdout=subprocess.DEVNULL)
    p = os.path.join(tmp, f"probe-{s}.h5")
    if not os.path.exists(p):
        gen_probe(p, s)


# ---- the 100 jobs and the peers' command lines ------------------------------------------------------------

jobs, peer_args = [], []   # peer_args: (script, [argv after the script])


def add(name, spec, script, args):
    jobs.append(dict(name=name, **spec))
    peer_args.append((script, [os.path.join(tmp, spec["input"]), os.path.join(tmp, "peer", name)] + args))


FAM = ["Mkt-RF", "SMB", "HML", "RMW", "CMA", "Mom"]
for i in range(25):
    f = i % a.files
    B = (200, 500, 1000)[i % 3]
    add(f"cm-{i:02d}", {"kind": "cm", "input": f"inp-{f}.h5", "bootstrap": B, "seed": i},
        "peer_cm.py", ["--bootstrap", str(B), "--seed", str(i)])
for i in range(25):
    f, v2, cmp = i % a.files, i % 2 == 1, i % 5 == 4
    spec = {"kind": "benchmark", "input": f"inp-{f}.h5", "group": "/bench2" if v2 else "/bench",
            "scheme": "rewardbench-v2" if v2 else "rewardbench-v1", "bootstrap": 1000, "seed": i}
    args = ["--group", spec["group"], "--scheme", "v2" if v2 else "v1", "--bootstrap", "1000", "--seed", str(i)]
    if cmp:
        spec["compare"] = "all"
        args += ["--compare", "all"]
    add(f"bench-{i:02d}", spec, "peer_bench.py", args)
for i in range(25):
    f, B, tol, rule = i % a.files, (100, 200, 300)[i % 3], (0.25, 0.5)[i % 2], ("le", "lt")[i // 2 % 2]
    add(f"leak-{i:02d}", {"kind": "leakage", "input": f"inp-{f}.h5", "bootstrap": B, "null_permutations": B,
                          "family": FAM, "tolerance": tol, "tolerance_rule": rule, "tolerance_compare": "float",
                          "seed": i},
        "peer_leak.py", ["--bootstrap", str(B), "--perms", str(B), "--family", ",".join(FAM), "--tolerance", str(tol),
                         "--rule", rule])
CLASSES = [{"harm": [[0, 1], [3, 4]]}, {"help": [[0, 1], [2], [3, 4]]},
           {"harm": [[0, 1], [3, 4]], "help": [[0, 1], [2], [3, 4]]}]
LRS = [[1e-2, 3e-3, 1e-3], [3e-3], [1e-2, 1e-3]]
for i in range(25):
    f, tasks, lrs = i % a.files, CLASSES[i % 3], LRS[i // 3 % 3]
    add(f"probe-{i:02d}", {"kind": "probe", "input": f"probe-{f}.h5", "tasks": {t: {"classes": c} for t, c in tasks.items()},
                           "lr_grid": lrs, "seeds": [i], "init": "zeros", "kmeans": {"tau": 45}},
        "peer_probe.py", ["--tasks", json.dumps(tasks), "--lr-grid", ",".join(map(str, lrs)), "--seeds", str(i),
                          "--tau", "45"])
os.makedirs(os.path.join(tmp, "peer"), exist_ok=True)
names = [j["name"] for j in jobs]

# one job file per way of running (the same jobs; only output_dir differs), so the outputs can be compared
files = {}
for tag in ("plain", "n1", "n2"):
    files[tag] = os.path.join(tmp, f"jobs-{tag}.json")
    with open(files[tag], "w") as fh:
        json.dump({"output_dir": f"out-{tag}", "seed": 0, "jobs": jobs}, fh, indent=1)

# the peers in one Python process: each peer's main(argv) in turn, as its own script would run it
driver = os.path.join(tmp, "peers_in_one.py")
with open(driver, "w") as fh:
    fh.write(f"""import contextlib, importlib.util, io, json, sys
mods = {{}}
for script, argv in json.load(open(sys.argv[1])):
    if script not in mods:
        spec = importlib.util.spec_from_file_location(script[:-3], {peers!r} + "/" + script)
        mods[script] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mods[script])
    with contextlib.redirect_stdout(io.StringIO()):
        mods[script].main(argv)
""")
with open(os.path.join(tmp, "peer-jobs.json"), "w") as fh:
    json.dump(peer_args, fh)

env = mpi_env()


def run_rmdiag(tag, ranks):
    p, wall, cpu, l0 = measure(launch(a, ranks) + ["run", files[tag], "--force", "--quiet"], env=env)
    return wall, cpu, l0, rank_stats(p.stderr)


def run_peer_one():
    p, wall, cpu, l0 = measure([a.python, driver, os.path.join(tmp, "peer-jobs.json")])
    return wall, cpu, l0, []


def run_peer_each():
    l0, cpu, wall = load(), 0.0, 0.0
    for script, argv in peer_args:
        p, w, c, _ = measure([a.python, os.path.join(peers, script)] + argv)
        wall, cpu = wall + w, cpu + c
    return wall, cpu, l0, []


plan = subprocess.run(launch(a, 2) + ["run", files["n2"], "--plan"], env=env, capture_output=True, text=True).stdout
rows = [("rmdiag, 1 rank (plain process)", lambda: run_rmdiag("plain", 0)),
        ("rmdiag, mpiexec -n 1", lambda: run_rmdiag("n1", 1)),
        ("rmdiag, mpiexec -n 2", lambda: run_rmdiag("n2", 2))]
peer_rows = [("peers, one Python process", run_peer_one), ("peers, one process per job", run_peer_each)]
res = {}
for rep in range(a.reps + 1):   # the first round warms the page cache and is not counted
    todo = rows + ([peer_rows[0]] if have_peers and rep <= a.peer_reps else []) \
        + ([peer_rows[1]] if have_peers and 1 <= rep <= a.each_reps else [])   # the other warmed the cache
    for label, fn in todo:
        r = fn()
        if rep:
            res.setdefault(label, []).append(r)
        print(f"  round {rep}: {label:34} {r[0]:7.2f} s  (load {r[2]:.1f})", file=sys.stderr, flush=True)

# per-job times on one rank (the plain run's reports), by kind
per_kind = {}
for j in jobs:
    with open(os.path.join(tmp, "out-plain", j["name"] + ".json")) as fh:
        per_kind.setdefault(j["kind"], []).append(json.load(fh)["rmdiag"]["seconds"])
diffs = compare_outputs(os.path.join(tmp, "out-plain"), os.path.join(tmp, "out-n2"), names)
diffs += compare_outputs(os.path.join(tmp, "out-n1"), os.path.join(tmp, "out-n2"), names)

kinds = ", ".join(f"{len(v)} {k}" for k, v in per_kind.items())
print(f"100 small jobs ({kinds}) in one job file; {a.files} input files of each sort; medians of {a.reps} "
      f"alternating runs (the peers {min(a.peer_reps, a.reps) if have_peers else 0} in one process, "
      f"{min(a.each_reps, a.reps) if have_peers else 0} one process per job)")
print("per-job report seconds on 1 rank (min / median / max): " + "; ".join(
    f"{k} {min(v):.3f} / {med(v):.3f} / {max(v):.3f}" for k, v in per_kind.items()) +
    f"; sum {sum(sum(v) for v in per_kind.values()):.2f} s")
for line in plan.splitlines():
    if "estimate" in line.lower() or "group" in line.lower():
        print("plan (2 ranks): " + line.strip())
one = med(r[0] for r in res[rows[0][0]])
print(f"{'':34}{'wall s':>8}{'CPU s':>8}{'load':>10}{'1 rank/this':>12}{'CPU s per rank':>16}{'peak RSS MB':>13}")
for label, rs in res.items():
    w, c = med(r[0] for r in rs), med(r[1] for r in rs)
    loads = [r[2] for r in rs]
    nr = min(len(r[3]) for r in rs)
    per = " / ".join(f"{med(r[3][k][1] for r in rs):.2f}" for k in range(nr))
    rss = " / ".join(f"{med(r[3][k][0] for r in rs):.0f}" for k in range(nr))
    print(f"{label:34}{w:8.2f}{c:8.2f}{f'{min(loads):.1f}-{max(loads):.1f}':>10}{one / w:11.2f}x{per:>16}{rss:>13}")
two = med(r[0] for r in res[rows[2][0]])
n1 = med(r[0] for r in res[rows[1][0]])
c1 = med(r[3][0][1] for r in res[rows[0][0]])
c2 = med(max(x[1] for x in r[3]) for r in res[rows[2][0]] if len(r[3]) == 2)
print(f"2 ranks faster than 1: {one / two:.2f}x against the plain process, {n1 / two:.2f}x against mpiexec -n 1 "
      f"(goal: at least 1.7x); CPU bound (1 rank's CPU / the busier rank's CPU on 2 ranks): {c1 / c2:.2f}x")
for label, _ in peer_rows:
    if label in res:
        print(f"{label} / rmdiag: {med(r[0] for r in res[label]) / one:.1f}x (1 rank), "
              f"{med(r[0] for r in res[label]) / two:.1f}x (2 ranks)")
print(f"outputs of 1 rank (plain and mpiexec -n 1) and 2 ranks: {len(names)} jobs, "
      + ("all identical (.h5 bytes, reports without seconds/ranks)" if not diffs else f"{len(diffs)} DIFFER:"))
for d in diffs[:20]:
    print("  " + d)
sys.exit(1 if diffs else 0)
