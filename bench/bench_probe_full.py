#!/usr/bin/python3
"""Full-size probe: one task of 200,000 x 4,096 float32 features (3.3 GB; 190,000 training, 5,000
validation, 5,000 test rows, 3 classes) and 2,000 inference rows, three learning rates trained together,
the rows streamed through HDF5 in pieces of at most `max_memory_mb` per rank (the features are stored
chunked, 64 rows a chunk, as a program appending features batch by batch writes them; --layout
contiguous stores them contiguous, so rmdiag maps them instead); rmdiag on 1 rank (a plain process)
and 2 ranks against the numpy peer (shared/peers/peer_probe.py) and a floor, alternating, several
repetitions; medians, each rank's peak resident memory and CPU, rmdiag's phase times
(RMDIAG_TIMING), the load average at the start of each run.

  seconds: rmdiag's report "seconds" and the peer's TIME total; wall and CPU: the whole command
  floor:   reading the input file once from the page cache into a buffer (dd bs=16M; with 2 threads two
           dd processes on its halves): what a reader of the features through read() does at least
           (rmdiag reads them more than once: the value check of every feature, the epoch in
           segments, evaluation, centroids);
           with --layout contiguous also bench/stream_rows.c: the training rows once from the mapped
           file in a random order (the epoch's floor, as in bench/bench_probe.py)
  floor with arithmetic: the larger of the read once and the epoch's float64 multiply-adds (forward
           and backward: 4 flops per training row, feature and output; 3 learning rates x 3 classes = 9
           outputs) at the CPU's float64 matrix-multiply peak, measured in the same round (numpy's BLAS
           on one thread, a 2048 x 2048 product). The sums are float64 by contract: no program that
           reads the rows and does that arithmetic on this CPU can take less, even with the two
           overlapped

The input is generated in DIR (--keep, reused when present) or $TMPDIR, and removed at the end unless
--keep. It needs 3.3 GB of disk and, for the peer (which holds the rows twice), about 7 GB of memory.

usage: bench/bench_probe_full.py [--reps 3] [--rows 200000] [--features 4096] [--max-memory-mb 1024]
                                 [--layout chunked|contiguous] [--keep DIR] [--no-peer]
Looked at: rmdiag against the peer and the floor, memory per rank against max_memory_mb, 2 ranks
against 1."""
import json
import os
import statistics
import subprocess
import sys

import h5py
import numpy as np

from benchlib import (HERE, KEEP_INPUT, full_job, full_table, measure, options, phase_table, rank_rows, rounds, scratch,
                      speedup_line)


def extra(ap):
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--features", type=int, default=4096)
    ap.add_argument("--max-memory-mb", type=int, default=1024)
    ap.add_argument("--layout", choices=["chunked", "contiguous"], default="chunked")


a = options(__doc__, reps=3, extra=extra, keep=KEEP_INPUT, no_peer=True)
peers = os.path.join(a.shared, "peers")
have_peer = not a.no_peer and os.path.isfile(os.path.join(peers, "peer_probe.py"))
tmp = scratch(a, "rmdiag-bench-probe-full-")
N, D, N_INF = a.rows, a.features, 2000
N_VA = N_TE = max(1, N // 40)
inp = os.path.join(tmp, f"probe-{N}x{D}-{a.layout}.h5")
if not os.path.exists(inp):
    print(f"generating {inp} ({N} x {D} float32, {a.layout}) ...", file=sys.stderr, flush=True)
    rng = np.random.default_rng([11, N, D])
    lab = rng.integers(0, 3, N).astype(np.int32)
    mu = (rng.normal(0, 1, (3, D)) * 0.05).astype(np.float32)
    split = np.repeat(np.array([0, 1, 2], np.uint8), [N - N_VA - N_TE, N_VA, N_TE])[rng.permutation(N)]
    chunks = (64, D) if a.layout == "chunked" else None
    with h5py.File(inp + ".part", "w") as f:
        X = f.create_dataset("probe/task/X", (N, D), np.float32, chunks=chunks)
        for r0 in range(0, N, 8192):
            r1 = min(N, r0 + 8192)
            block = rng.standard_normal((r1 - r0, D), dtype=np.float32)
            block += mu[lab[r0:r1]]
            X[r0:r1] = block
        f["probe/task/label"] = lab
        f["probe/task/split"] = split
        f["probe/infer/X"] = rng.standard_normal((N_INF, D), dtype=np.float32)
    os.rename(inp + ".part", inp)
with h5py.File(inp, "r") as f:
    x_offset = f["probe/task/X"].id.get_offset()
    split = f["probe/task/split"][...]
size = os.path.getsize(inp)

LRS = [5e-5, 2e-5, 1e-5]
CLASSES = [[0], [1], [2]]
job, report = full_job(tmp, "probe-full", {
    "kind": "probe", "input": os.path.basename(inp), "tasks": {"task": {"classes": CLASSES}}, "lr_grid": LRS,
    "init": "zeros", "max_memory_mb": a.max_memory_mb, "kmeans": {"tau": 140}}, seed=0)
peer_argv = [os.path.join(peers, "peer_probe.py"), inp, os.path.join(tmp, "peer"), "--tasks",
             json.dumps({"task": CLASSES}), "--lr-grid", ",".join(map(str, LRS)), "--tau", "140"]


def dd_floor(threads):
    """Reads the file once (page cache to a 16 MB buffer) with `threads` dd processes on equal parts."""
    part = -(-size // threads)
    cmd = " & ".join(f"dd if={inp} of=/dev/null bs=16M iflag=skip_bytes,count_bytes skip={k * part} count={part} "
                     f"status=none" for k in range(threads)) + " & wait"
    p, wall, cpu, l0 = measure(["bash", "-c", cmd])
    return dict(seconds=wall, wall=wall, cpu=cpu, load=l0, ranks=[], phases={})


N_OUT = 9  # 3 learning rates x 3 classes, trained together
EPOCH_FLOPS = 4.0 * (N - N_VA - N_TE) * D * N_OUT
GEMM = ("import time, numpy as np\n"
        "a = np.random.default_rng(0).random((2048, 2048)); b = a.T.copy(); a @ b\n"
        "t = min((lambda t0: (a @ b, time.perf_counter() - t0)[1])(time.perf_counter()) for _ in range(3))\n"
        "print(2 * 2048 ** 3 / t)")


def arith_floor():
    """The larger of the read once (1 dd) and the epoch's flops at the float64 matrix-multiply rate measured now."""
    rd = dd_floor(1)
    p, _, _, _ = measure([a.python, "-c", GEMM], env=dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
                                                          MKL_NUM_THREADS="1"))
    rate = float(p.stdout.split()[0])
    t = max(rd["seconds"], EPOCH_FLOPS / rate)
    print(f"    (float64 matrix multiply: {rate / 1e9:.1f} GFlop/s; the epoch's {EPOCH_FLOPS / 1e9:.1f} GFlop "
          f"take {EPOCH_FLOPS / rate:.3f} s at that rate)", file=sys.stderr)
    return dict(seconds=t, wall=t, cpu=t, load=rd["load"], ranks=[], phases={})


rows = [("floor: read once, 1 thr", lambda: dd_floor(1)), ("floor: read once, 2 thr", lambda: dd_floor(2)),
        ("floor with arithmetic", arith_floor)]
if a.layout == "contiguous":
    stream_bin = os.path.join(tmp, "stream_rows")
    subprocess.run(["gcc", "-O2", "-mavx2", "-pthread", os.path.join(HERE, "stream_rows.c"), "-o", stream_bin], check=True)
    tr = np.flatnonzero(split == 0)
    tr[np.random.default_rng(0).permutation(tr.size)].astype(np.int64).tofile(os.path.join(tmp, "rows.bin"))

    def stream(threads):
        p, wall, cpu, l0 = measure([stream_bin, inp, str(x_offset), str(N), str(D), os.path.join(tmp, "rows.bin"),
                                    str(threads), "1"])
        return dict(seconds=float(p.stdout.split()[0]), wall=wall, cpu=cpu, load=l0, ranks=[], phases={})

    rows += [("floor: rows mapped, 1 thr", lambda: stream(1)), ("floor: rows mapped, 2 thr", lambda: stream(2))]
rows += rank_rows(a, job, report, peer_argv if have_peer else None)
res = rounds(a.reps, rows)

print(f"probe full size: {N} x {D} float32 ({size / 1e9:.2f} GB, {a.layout}), {N - N_VA - N_TE} training rows, "
      f"3 classes, {len(LRS)} learning rates, max_memory_mb {a.max_memory_mb}; medians of {a.reps} alternating runs")
full_table(res, {"rmdiag 1 rank": "floor: read once, 1 thr", "rmdiag 2 ranks": "floor: read once, 2 thr",
                 "numpy peer": "floor: read once, 1 thr"})
print(speedup_line(res))
if "floor with arithmetic" in res and "rmdiag 1 rank" in res:
    one = statistics.median(r["seconds"] for r in res["rmdiag 1 rank"])
    fa = statistics.median(r["seconds"] for r in res["floor with arithmetic"])
    print(f"1 rank / max(read once, the epoch's float64 arithmetic at the CPU's matrix-multiply peak): {one / fa:.2f}")
phase_table(res, ["rmdiag 1 rank", "rmdiag 2 ranks"])
