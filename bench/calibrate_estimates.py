#!/usr/bin/python3
"""Calibration of the planner's estimates (benchmark, leakage, probe): generates inputs of several
sizes, runs each job as a plain process (one rank) with RMDIAG_TIMING=1, and prints per case the
report's `seconds`, the job's time (CPU seconds of the run less those of `run --plan` on the same
file: steady on a loaded machine, where wall times are not), the estimate `run --plan` gives and each
phase's best time; then per kind a least-squares fit (non-negative coefficients, relative errors) of
rank 0's part and of the parallel part of the job's time (split in the proportions of the phases'
times) on the size terms of the kind's model, and how far the fit and the built estimate are from
the measured times.

usage: bench/calibrate_estimates.py [--kinds benchmark,leakage,probe] [--reps 3] [--keep DIR]
                                    [--rmdiag build/rmdiag] [--quick] [--json OUT] [--fit OUT]
  --quick  only the smaller cases (a few minutes on 2 cores)
  --keep   generate the inputs into DIR and reuse them (about 1.6 GB for all cases)
  --json   write every case's numbers; --fit refits such a file without running anything
The constants go into src/worker/<kind>/*_estimate.c (docs/design.md, 'Planner estimates')."""
import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import h5py

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "lib"))

V1 = [("alpacaeval-easy", 100), ("alpacaeval-length", 95), ("alpacaeval-hard", 95), ("mt-bench-easy", 28),
      ("mt-bench-med", 40), ("mt-bench-hard", 37), ("llmbar-natural", 100), ("llmbar-adver-neighbor", 134),
      ("llmbar-adver-GPTInst", 92), ("llmbar-adver-GPTOut", 47), ("llmbar-adver-manual", 46),
      ("refusals-dangerous", 100), ("refusals-offensive", 100), ("xstest-should-refuse", 154),
      ("xstest-should-respond", 250), ("donotanswer", 136), ("math-prm", 447), ("hep-cpp", 164), ("hep-go", 164),
      ("hep-java", 164), ("hep-js", 164), ("hep-python", 164), ("hep-rust", 164)]


# ---- inputs ----------------------------------------------------------------------------------------

def gen_bench(path, M, f, comp=2, seed=0, dtype="float32"):
    """RewardBench v1 subsets, each f times its real size, `comp` completions per item (one preferred)."""
    rng = np.random.default_rng(seed)
    sizes = [max(1, int(round(n * f))) for _, n in V1]
    sub = np.repeat(np.arange(len(sizes), dtype=np.int32), sizes)
    sub = sub[rng.permutation(sub.size)]
    I = sub.size
    skill = rng.uniform(0, 1.5, M)[:, None].astype(np.float32)
    s = rng.standard_normal((M, comp * I), dtype=np.float32)
    s[:, ::comp] += skill
    with h5py.File(path, "w") as h:
        g = h.create_group("bench")
        st = h5py.string_dtype("utf-8")
        g.create_dataset("model_names", data=[f"rm-{i}" for i in range(M)], dtype=st)
        g.create_dataset("subset_names", data=[n for n, _ in V1], dtype=st)
        g["item_subset"] = sub
        g["item_offset"] = np.arange(0, comp * I + 1, comp, dtype=np.int64)
        g["item_n_correct"] = np.ones(I, np.int32)
        g["scores"] = s.astype(dtype)


def gen_leak(path, M, S, V, K, T, seed=0):
    from leakdata import gen_panel
    gen_panel(path, M=M, S=S, V=V, K=K, T=T, seed=seed, fictional=True, controls=True, chunked=False)


def gen_probe(path, tasks, d, models=0, n_inf=0, dtype="float32", seed=0):
    """tasks: list of (name, N, classes C); labels 0..C-1, splits 80/10/10."""
    rng = np.random.default_rng(seed)
    with h5py.File(path, "w") as h:
        groups = [h.create_group("probe")] if not models else [h.create_group(f"probe/rm{m}") for m in range(models)]
        for g in groups:
            for name, N, C in tasks:
                lab = rng.integers(0, C, N).astype(np.int32)
                mu = rng.standard_normal((C, d), dtype=np.float32) * 0.3
                X = rng.standard_normal((N, d), dtype=np.float32)
                X += mu[lab]
                g[f"{name}/X"] = X.astype(dtype)
                g[f"{name}/label"] = lab
                g[f"{name}/split"] = rng.choice(3, N, p=[0.8, 0.1, 0.1]).astype(np.uint8)
            if n_inf:
                g["infer/X"] = rng.standard_normal((n_inf, d), dtype=np.float32).astype(dtype)


# ---- the cases: (name, input generator args, job options) -------------------------------------------

def bench_cases(quick):
    c = [
        ("b-m10-f1", (10, 1), {"bootstrap": 1000}),
        ("b-m50-f1", (50, 1), {"bootstrap": 1000}),
        ("b-m50-f1-all", (50, 1), {"bootstrap": 1000, "compare": "all"}),
        ("b-m200-f2-c6", (200, 2, 6), {"bootstrap": 500}),
        ("b-m50-f1-b20k", (50, 1), {"bootstrap": 20000}),
        ("b-m400-f2-b0", (400, 2), {"bootstrap": 0}),
    ]
    if not quick:
        c += [
            ("b-m10-f30-b0", (10, 30), {"bootstrap": 0}),
            ("b-m50-f30-b0", (50, 30), {"bootstrap": 0}),
            ("b-m50-f8-c6-b0", (50, 8, 6), {"bootstrap": 0}),
            ("b-m10-f10-b5k", (10, 10), {"bootstrap": 5000}),
            ("b-m200-f2-b5k", (200, 2), {"bootstrap": 5000}),
            ("b-m400-f1-b5k", (400, 1), {"bootstrap": 5000}),
            ("b-m100-f1-all-sec", (100, 1), {"bootstrap": 1000, "compare": "all", "compare_sections": True}),
            ("b-m50-f1-all-b10k", (50, 1), {"bootstrap": 10000, "compare": "all"}),
            ("b-m200-f1-all-sec-b100", (200, 1), {"bootstrap": 100, "compare": "all", "compare_sections": True}),
        ]
    return c


def leak_cases(quick):
    fam = ["S0", "S1", "S2", "S3", "S4"]
    c = [
        ("l-small", (3, 6, 1, 2, 60), {"bootstrap": 200, "family": fam, "null_permutations": 200}),
        ("l-m5", (5, 6, 2, 3, 240), {"bootstrap": 1000, "family": fam, "null_permutations": 1000}),
        ("l-m5-b0", (5, 6, 2, 3, 240), {"bootstrap": 0, "null_permutations": 0}),
        ("l-m5-b5k", (5, 6, 2, 3, 240), {"bootstrap": 5000, "null_permutations": 0}),
        ("l-m5-p5k", (5, 6, 2, 3, 240), {"bootstrap": 0, "family": fam, "null_permutations": 5000}),
        ("l-m9", (9, 6, 1, 3, 480), {"bootstrap": 1000, "family": fam, "null_permutations": 1000}),
    ]
    if not quick:
        c += [
            ("l-m9-b10k", (9, 6, 1, 3, 480), {"bootstrap": 10000, "family": fam, "null_permutations": 10000}),
            ("l-m20-b0", (20, 10, 3, 5, 480), {"bootstrap": 0, "null_permutations": 0}),
            ("l-m20", (20, 10, 3, 5, 480), {"bootstrap": 500, "family": fam, "null_permutations": 500}),
            ("l-m4-fam9", (4, 10, 1, 3, 600), {"bootstrap": 200, "family": [f"S{i}" for i in range(9)],
                                                "null_permutations": 20000}),
            ("l-m12-v4", (12, 8, 4, 2, 360), {"bootstrap": 2000, "family": fam, "null_permutations": 2000}),
        ]
    return c


def probe_cases(quick):
    two = {"classes": [[0], [1]]}
    three = {"classes": [[0], [1], [2]]}
    five = {"classes": [[0], [1], [2], [3], [4]]}
    km_off = {"kmeans": False}
    c = [
        ("p-n2k-d256", ([("a", 2000, 2)], 256, 0, 500), {"tasks": {"a": two}}),
        ("p-n4k-d512-nokm", ([("a", 4000, 2)], 512, 0, 0), {"tasks": {"a": two}, **km_off}),
        ("p-n8k-d1024", ([("a", 8000, 2)], 1024, 0, 1000), {"tasks": {"a": two}}),
        ("p-n8k-d1024-c3", ([("a", 8000, 3)], 1024, 0, 1000), {"tasks": {"a": three}}),
        ("p-2t-s3", ([("a", 4000, 2), ("b", 4000, 3)], 512, 0, 500),
         {"tasks": {"a": two, "b": three}, "seeds": [0, 1, 2], **km_off}),
        ("p-lbfgs", ([("a", 3000, 2)], 256, 0, 0), {"tasks": {"a": two}, "mode": "lbfgs", **km_off}),
    ]
    if not quick:
        c += [
            ("p-n15k-d4096", ([("a", 15000, 2)], 4096, 0, 2000), {"tasks": {"a": two}}),
            ("p-n15k-d4096-c3-s2", ([("a", 15000, 3)], 4096, 0, 0), {"tasks": {"a": three}, "seeds": [0, 1], **km_off}),
            ("p-n30k-d2048-c5-l4", ([("a", 30000, 5)], 2048, 0, 0),
             {"tasks": {"a": five}, "lr_grid": [1e-4, 5e-5, 2e-5, 1e-5], **km_off}),
            ("p-2m-l6", ([("a", 6000, 3)], 768, 2, 0), {"tasks": {"a": three}, "models": ["rm0", "rm1"],
                                                       "lr_grid": [1e-4, 5e-5, 2e-5, 1e-5, 5e-6, 2e-6], **km_off}),
            ("p-km4-maha", ([("a", 8000, 3)], 512, 0, 2000),
             {"tasks": {"a": three}, "kmeans": {"k_per_class": 4, "distance": "mahalanobis"}}),
            ("p-maha-d1024", ([("a", 6000, 2)], 1024, 0, 3000), {"tasks": {"a": two}, "kmeans": {"distance": "mahalanobis"}}),
            ("p-lbfgs-c3-std", ([("a", 6000, 3)], 512, 0, 0),
             {"tasks": {"a": three}, "mode": "lbfgs", "standardize": True, "l2_grid": [1e-3, 1e-2], **km_off}),
            ("p-lbfgs-n10k-d1024", ([("a", 10000, 2)], 1024, 0, 0), {"tasks": {"a": two}, "mode": "lbfgs", **km_off}),
            ("p-f16", ([("a", 8000, 3)], 1024, 0, 0, "float16"), {"tasks": {"a": three}, **km_off}),
        ]
    return c


# ---- the models' size terms (what the kinds' estimates compute from the layout and the options) ------
# Each kind's time is split into rank 0's serial phases (more ranks do not shorten them) and the rest;
# each part is fitted on its own terms.

SERIAL = {
    # (the benchmark's point-estimate report and datasets, "report (point estimate)+h5", run on rank 0
    # while the other ranks start the bootstrap: they count with it)
    "benchmark": ("create output", "layout+tables", "gather credits", "report+summary", "outputs"),
    "leakage": ("create output", "read+check+broadcast", "cells+tables", "report+h5", "outputs"),
    "probe": ("create output", "layout+labels", "report+h5", "outputs"),
}


def bench_terms(args, o):
    M, f = args[0], args[1]
    comp = args[2] if len(args) > 2 else 2
    I = sum(max(1, int(round(n * f))) for _, n in V1)
    C, B = comp * I, o.get("bootstrap", 1000)
    n_cmp = M * (M - 1) // 2 if o.get("compare") == "all" else 0
    per_pair, K = (5 if o.get("compare_sections") else 1), 5
    serial = {"fixed": 1.0, "items": I, "credits": M * I, "compare_out": n_cmp * per_pair}
    parallel = {"scores": M * C, "credits": M * I, "draws": B * I * (1 + M / 64.0), "intervals": B * M * K,
                "compare": B * n_cmp * per_pair}
    return serial, parallel


def leak_terms(args, o):
    M, S, V, K, T = args
    Q = M * S * V * K * T
    T_rows = (S - 1) * (T - 3)
    B, P = o.get("bootstrap", 1000), o.get("null_permutations", 1000)
    F = len(o.get("family", []))
    cells = min(M * S * V, Q)
    months = min(T_rows / S, Q / cells)
    targets = M * V * F if F >= 2 else 0
    rows = Q + 3 * 400  # with the rank, signal and defense rows of the generated panels
    serial = {"fixed": 1.0, "rows": rows, "replicates": 2 * B * cells + P * targets}
    parallel = {"rows": rows, "boot": B * Q, "null": P * targets * months}
    return serial, parallel


def probe_terms(args, o):
    tasks, d, models, n_inf = args[:4]
    half = len(args) > 4 and args[4] != "float32"
    nm = max(1, models)
    lb = o.get("mode") == "lbfgs"
    S = len(o.get("seeds", [0]))
    L = len(o.get("lr_grid", [5e-5, 2e-5, 1e-5]))
    NG = len(o.get("l2_grid", [1e-4, 1e-3, 1e-2]))
    km = o.get("kmeans", {})
    serial = {"fixed": 1.0, "labels": 0.0}
    t = {"scan": 0.0, "rows": 0.0, "fma": 0.0, "lbfgs": 0.0, "kmeans": 0.0, "maha": 0.0, "read": 0.0}
    for _ in range(nm):
        n_va_all = 0
        n_cent = 0
        for _, N, C in tasks:
            n_tr, n_va, n_te = 0.8 * N, 0.1 * N, 0.1 * N
            serial["labels"] += N
            t["scan"] += N * d
            if half:
                t["read"] += N * d
            if lb:
                evals = min(o.get("max_iter", 1000) + 1, 40)
                t["lbfgs"] += NG * evals * n_tr * d * C * (2 if o.get("standardize") else 1)
                t["fma"] += NG * (n_va + n_te) * d * C
            else:
                Kh = 1 if C == 2 else C
                t["rows"] += S * n_tr * d
                t["fma"] += S * d * L * Kh * (2 * n_tr + n_va + n_te)
            n_va_all += n_va
            n_cent += C * (km.get("k_per_class", 1) if km is not False else 0)
        t["scan"] += n_inf * d
        if km is not False:
            k = km.get("k_per_class", 1)
            t["kmeans"] += (n_va_all + n_inf) * d * n_cent + (km.get("iters", 50) * n_va_all * k * d if k > 1 else 0)
            if km.get("distance") == "mahalanobis":
                t["maha"] += (n_va_all + n_inf + n_cent) * d * d + d ** 3 / 3.0
    return serial, t


def nnls(A, y):
    """Least squares with coefficients >= 0 (columns with negative coefficients dropped until none is)."""
    keep = list(range(A.shape[1]))
    while True:
        x, *_ = np.linalg.lstsq(A[:, keep], y, rcond=None)
        if (x >= 0).all() or not keep:
            out = np.zeros(A.shape[1])
            out[keep] = x
            return out
        keep.pop(int(np.argmin(x)))


def fit_part(rows, terms, part, phases):
    """The part's seconds (sum of its phases) ~ sum of coefficient x term, each case weighted by
    1 / max(its seconds, 20 ms): relative errors, without letting the noise of tiny jobs decide."""
    names = list(terms(rows[0]["args"], rows[0]["opts"])[part].keys())
    X = np.array([[terms(r["args"], r["opts"])[part][n] for n in names] for r in rows], float)
    y = np.array([r["job"] * sum(v for k, v in r["phases"].items() if (k in phases) == (part == 0)) /
                  sum(r["phases"].values()) for r in rows])
    w = 1.0 / np.maximum(y, 0.02)
    coef = nnls(X * w[:, None], y * w)
    return names, coef, X @ coef, y


KINDS = {
    "benchmark": (bench_cases, lambda p, a: gen_bench(p, *a), bench_terms),
    "leakage": (lambda q: [(n, g, dict(o, signal_series="S0")) for n, g, o in leak_cases(q)],
                lambda p, a: gen_leak(p, *a), leak_terms),
    "probe": (probe_cases, lambda p, a: gen_probe(p, *a), probe_terms),
}


def run_case(a, tmp, kind, name, gen, gen_args, opts):
    inp = os.path.join(tmp, f"{name}.h5")
    if not os.path.exists(inp):
        gen(inp, gen_args)
    job = os.path.join(tmp, f"{name}.json")
    spec = dict(name=name, kind=kind, input=inp, **opts)
    with open(job, "w") as f:
        json.dump({"output_dir": os.path.join(tmp, "out"), "seed": 1, "jobs": [spec]}, f)
    env = dict(os.environ, RMDIAG_TIMING="1")
    plan, plan_cpu = None, []
    for _ in range(a.reps):
        p, c = timed([a.rmdiag, "run", job, "--plan"], env)
        plan = p.stdout
        plan_cpu.append(c)
    m = re.search(rf"^\s*1\s+{re.escape(name)}\s+\S+\s+(\S+)\s+(\S+)\s+(\d+)", plan, re.M)
    est, max_ranks = float(m.group(2)), int(m.group(3))
    timed([a.rmdiag, "run", job, "--force", "--quiet"], env)  # warm-up: the input in the page cache
    seconds, phases, run_cpu = [], {}, []
    for _ in range(a.reps):
        p, c = timed([a.rmdiag, "run", job, "--force", "--quiet"], env)
        run_cpu.append(c)
        with open(os.path.join(tmp, "out", f"{name}.json")) as f:
            seconds.append(json.load(f)["rmdiag"]["seconds"])
        run = {}
        for k, v in re.findall(r"\[timing\] [^:]+: (.+?)\s+([0-9.]+) s", p.stderr):
            run[k] = run.get(k, 0.0) + float(v)
        for k, v in run.items():
            phases[k] = min(phases.get(k, v), v)
    # the job's time: CPU seconds of the run less those of --plan (process start, checks of the layout),
    # steady on a loaded machine where wall times are not; split by the phases' wall times (each phase's
    # best over the runs)
    return dict(name=name, kind=kind, seconds=min(seconds), job=max(min(run_cpu) - min(plan_cpu), 1e-3), est=est,
                max_ranks=max_ranks, phases=phases, bytes=os.path.getsize(inp), args=gen_args, opts=opts)


def timed(cmd, env):
    """Runs cmd; returns the completed process and its CPU seconds (user + system)."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return p, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kinds", default="benchmark,leakage,probe")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--keep", help="folder for the generated inputs (reused when present)")
    ap.add_argument("--rmdiag", default=os.path.join(HERE, "..", "build", "rmdiag"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", help="write every case's numbers here")
    ap.add_argument("--fit", help="fit the numbers a previous --json wrote (runs nothing)")
    a = ap.parse_args()
    if a.fit:
        with open(a.fit) as f:
            rows = json.load(f)
        report(a, rows)
        return
    tmp = a.keep or tempfile.mkdtemp(prefix="rmdiag-calib-")
    os.makedirs(tmp, exist_ok=True)
    rows = []
    try:
        for kind in a.kinds.split(","):
            cases, gen, _ = KINDS[kind]
            print(f"{kind}: {'case':24} {'seconds':>9} {'job':>9} {'est. s':>9} {'ratio':>6} {'ranks':>6}  phases")
            for name, gen_args, opts in cases(a.quick):
                r = run_case(a, tmp, kind, name, gen, gen_args, opts)
                rows.append(r)
                ph = " ".join(f"{k}={v:.4f}" for k, v in r["phases"].items())
                print(f"  {name:30} {r['seconds']:9.4f} {r['job']:9.4f} {r['est']:9.4f} {r['est'] / r['job']:6.2f} "
                      f"{r['max_ranks']:6d}  {ph}", flush=True)
    finally:
        if a.json:
            with open(a.json, "w") as f:
                json.dump(rows, f, indent=1)
        if not a.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    report(a, rows)


def report(a, rows):
    for kind in a.kinds.split(","):
        k = [r for r in rows if r["kind"] == kind]
        if not k:
            continue
        terms = KINDS[kind][2]
        pred, meas = np.zeros(len(k)), np.zeros(len(k))
        for part, label in ((0, "serial (rank 0)"), (1, "parallel")):
            names, coef, p, y = fit_part(k, terms, part, SERIAL[kind])
            pred += p
            meas += y
            rel = p / np.maximum(y, 1e-4)
            print(f"{kind}, {label} part: " + ", ".join(f"{n} {c:.3g}" for n, c in zip(names, coef)) +
                  f"; fit / measured {rel.min():.2f} .. {rel.max():.2f}")
        for r, p, y in zip(k, pred, meas):
            print(f"  {r['name']:30} measured {y:8.4f}  fit {p:8.4f}  built estimate {r['est']:8.4f}"
                  f"  ({r['est'] / y:5.2f})  report seconds {r['seconds']:8.4f}")
        rel, est = pred / meas, np.array([r["est"] for r in k]) / meas
        big = meas >= 0.05  # the larger cases: CPU seconds of tiny jobs are mostly noise
        r2 = 1 - ((pred - meas) ** 2).sum() / ((meas - meas.mean()) ** 2).sum()
        print(f"  {kind}: fit / measured {rel.min():.2f} .. {rel.max():.2f} (cases of 50 ms and more: "
              f"{rel[big].min():.2f} .. {rel[big].max():.2f}, RMS of log ratio {np.sqrt((np.log(rel[big]) ** 2).mean()):.2f}, "
              f"R^2 {r2:.3f}); built estimate / measured {est.min():.2f} .. {est.max():.2f} "
              f"(50 ms and more: {est[big].min():.2f} .. {est[big].max():.2f}) over {len(k)} cases")


if __name__ == "__main__":
    main()
