#!/usr/bin/python3
"""probe benchmark: rmdiag against the numpy peer (shared/peers/peer_probe.py) on the same generated
task (15,000 x 4096 float32 training rows, 1,000 validation, 1,000 test, 2,000 inference rows; three
learning rates trained together, as the peer does), measured in the same run, alternating, several
repetitions; medians and ratios.

  epoch:    rmdiag's training loop (RMDIAG_TIMING mark "epoch": T = 118 AdamW steps of all three
            heads, data-parallel over the ranks) vs the peer's train() on the rows already gathered in
            batch order (X[rows], y[rows]; the gather is not timed);
  stream:   the time to read the same training rows once, in the same order, from memory with as
            many threads as ranks (bench/stream_rows.c, page cache and page tables warm): the floor;
  k-means:  rmdiag's "kmeans+inference" phase (class centroids from the validation rows, nearest
            centroid of the 2,000 inference rows, fixed tau) vs the peer's kmeans() per class plus its
            inference arithmetic (peer_probe.py main);
  job:      rmdiag's report "seconds" vs the peer's TIME total (informational: rmdiag also checks every
            feature, evaluates and writes outputs).

The task is run with 2 classes (MRMBench Easy: one logit, BCE) and 3 classes (Hard: softmax).

usage: bench/bench_probe.py [--ranks 2] [--reps 5] [--shared ../shared] [--rmdiag build/rmdiag]
Goals (issue, 2 ranks): epoch >= 3x faster than the peer and within 2x of the stream time; a k-means
pass >= 3x faster than the peer's."""
import argparse
import atexit
import importlib.util
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import h5py

here = os.path.dirname(os.path.abspath(__file__))
ap = argparse.ArgumentParser()
ap.add_argument("--ranks", type=int, default=2)
ap.add_argument("--reps", type=int, default=5)
ap.add_argument("--shared", default=os.path.join(here, "..", "..", "shared"))
ap.add_argument("--rmdiag", default=os.path.join(here, "..", "build", "rmdiag"))
ap.add_argument("--keep", help="folder for the generated input (reused when present)")
a = ap.parse_args()
peer_path = os.path.join(a.shared, "peers", "peer_probe.py")
if not os.path.isfile(peer_path):
    print(f"SKIP: {peer_path} not found (the peers live in the shared folder)")
    sys.exit(0)
spec = importlib.util.spec_from_file_location("peer_probe", peer_path)
peer = importlib.util.module_from_spec(spec)
spec.loader.exec_module(peer)

env = dict(os.environ, OMPI_MCA_pml=os.environ.get("OMPI_MCA_pml", "ob1"), OMPI_MCA_rmaps_base_oversubscribe="1",
           RMDIAG_TIMING="1")
if os.geteuid() == 0:
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
tmp = a.keep or tempfile.mkdtemp(prefix="rmdiag-bench-probe-")
if not a.keep:
    atexit.register(shutil.rmtree, tmp, True)  # 0.35 GB: removed when the run ends unless --keep
os.makedirs(tmp, exist_ok=True)
inp = os.path.join(tmp, "probe.h5")
N_TR, N_VA, N_TE, D, N_INF = 15000, 1000, 1000, 4096, 2000
if not os.path.exists(inp):
    rng = np.random.default_rng(0)
    N = N_TR + N_VA + N_TE
    with h5py.File(inp, "w") as f:
        lab = rng.integers(0, 3, N).astype(np.int32)
        mu = (rng.normal(0, 1, (3, D)) * 0.05).astype(np.float32)
        X = rng.standard_normal((N, D), dtype=np.float32)
        X += mu[lab]
        split = np.repeat(np.array([0, 1, 2], np.uint8), [N_TR, N_VA, N_TE])[rng.permutation(N)]
        f["probe/task/X"] = X
        f["probe/task/label"] = lab
        f["probe/task/split"] = split
        f["probe/infer/X"] = rng.standard_normal((N_INF, D), dtype=np.float32)
    # The pages of a file just written stay cached as the writes left them, and an epoch over them ran
    # 1.4x slower (the peer's too) than over the same file read back in, as when it is reused. Measure
    # the steady state: write the file out, drop its pages and read it back once.
    fd = os.open(inp, os.O_RDONLY)
    os.fsync(fd)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    while os.read(fd, 1 << 24):
        pass
    os.close(fd)
with h5py.File(inp, "r") as f:
    X = f["probe/task/X"][...]
    lab = f["probe/task/label"][...]
    split = f["probe/task/split"][...]
    XI = f["probe/infer/X"][...]
    x_offset = f["probe/task/X"].id.get_offset()
tr = np.flatnonzero(split == 0)
va = np.flatnonzero(split == 1)
rows = tr[np.random.default_rng([0, 0]).permutation(tr.size)]
rows.astype(np.int64).tofile(os.path.join(tmp, "rows.bin"))
stream_bin = os.path.join(tmp, "stream_rows")
subprocess.run(["gcc", "-O2", "-mavx2", "-pthread", os.path.join(here, "stream_rows.c"), "-o", stream_bin], check=True)
LRS = [5e-5, 2e-5, 1e-5]
variants = {"2 classes (Easy)": [[0], [1, 2]], "3 classes (Hard)": [[0], [1], [2]]}
jobs = []
for name, classes in variants.items():
    jobs.append({"name": f"bench{len(classes)}", "kind": "probe", "input": "probe.h5", "lr_grid": LRS,
                 "tasks": {"task": {"classes": classes}}, "kmeans": {"tau": 140}})
with open(os.path.join(tmp, "job.json"), "w") as f:
    json.dump({"output_dir": "out", "seed": 0, "jobs": jobs}, f)
rd_cmd = ([a.rmdiag] if a.ranks == 0 else ["mpiexec", "-n", str(a.ranks), a.rmdiag]) + [
    "run", os.path.join(tmp, "job.json"), "--force", "--quiet"]


def peer_epoch(classes):
    y = np.full(lab.shape, -1)
    for c, raws in enumerate(classes):
        y[np.isin(lab, raws)] = c
    Xr, yr = X[rows], y[rows]
    t = time.perf_counter()
    peer.train(Xr, yr, len(classes), LRS)
    return time.perf_counter() - t


def peer_kmeans(classes):
    y = np.full(lab.shape, -1)
    for c, raws in enumerate(classes):
        y[np.isin(lab, raws)] = c
    t = time.perf_counter()
    C = np.concatenate([peer.kmeans(X[va[y[va] == c]], 1, 50) for c in range(len(classes))])
    Xi = XI.astype(np.float64)                     # the peer's inference arithmetic (peer_probe.py main)
    d2 = (Xi * Xi).sum(1)[:, None] - 2 * Xi @ C.T + (C * C).sum(1)
    j = d2.argmin(1)
    dmin = np.sqrt(np.maximum(d2[np.arange(len(j)), j], 0))
    kept = dmin <= 140.0
    return time.perf_counter() - t + 0 * kept.sum()


res = {k: {"rd_epoch": [], "rd_km": [], "rd_job": [], "pe_epoch": [], "pe_km": [], "stream": []} for k in variants}
for rep in range(a.reps + 1):           # the first repetition warms the page cache and is dropped
    out = subprocess.run(rd_cmd, check=True, env=env, capture_output=True, text=True).stderr
    marks = {}
    for m in re.finditer(r"\[timing\] (\S+): (.+?)\s+([0-9.]+) s", out):
        marks.setdefault(m.group(1), {})[m.group(2).strip()] = float(m.group(3))
    s = subprocess.run([stream_bin, inp, str(x_offset), str(X.shape[0]), str(D), os.path.join(tmp, "rows.bin"),
                        str(max(a.ranks, 1)), "5"], check=True, capture_output=True, text=True).stdout
    stream = float(s.split()[0])
    for name, classes in variants.items():
        job = f"bench{len(classes)}"
        pe = peer_epoch(classes)
        pk = peer_kmeans(classes)
        if rep == 0:
            continue
        r = res[name]
        r["rd_epoch"].append(marks[job]["epoch"])
        r["rd_km"].append(marks[job]["kmeans+inference"])
        r["rd_job"].append(json.load(open(os.path.join(tmp, "out", job + ".json")))["rmdiag"]["seconds"])
        r["pe_epoch"].append(pe)
        r["pe_km"].append(pk)
        r["stream"].append(stream)

m = statistics.median
print(f"probe benchmark: one task, {N_TR} x {D} float32 training rows ({N_VA} validation, {N_TE} test, {N_INF} "
      f"inference), {len(LRS)} learning rates; rmdiag on {a.ranks or 1} rank(s); medians of {a.reps} alternating runs")
for name, r in res.items():
    print(f"\n{name}")
    print(f"{'':28}{'rmdiag':>10}{'peer':>10}{'ratio':>9}")
    print(f"{'epoch (s)':28}{m(r['rd_epoch']):10.4f}{m(r['pe_epoch']):10.4f}{m(r['pe_epoch']) / m(r['rd_epoch']):8.2f}x"
          "   (goal >= 3x)")
    print(f"{'epoch / stream once':28}{m(r['rd_epoch']) / m(r['stream']):10.2f}{'':10}{'':9}   (goal <= 2; stream "
          f"{m(r['stream']):.4f} s with {max(a.ranks, 1)} thread(s))")
    print(f"{'k-means pass (s)':28}{m(r['rd_km']):10.4f}{m(r['pe_km']):10.4f}{m(r['pe_km']) / m(r['rd_km']):8.2f}x"
          "   (goal >= 3x)")
    print(f"{'whole job (s, rmdiag)':28}{m(r['rd_job']):10.4f}")
