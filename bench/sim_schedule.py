#!/usr/bin/python3
"""The scheduler on paper: job mixes on 1 to 512 ranks (or any count), planned by the coordinator's own
planner (build/rmdiag_sim_plan, bench/sim_plan.c, linking plan.c) from job costs alone, and the
makespan it reaches against the lower bound max(total work / ranks, the longest job at its best
width). Nothing is run; the figures are the cost model's. Deterministic (fixed seeds).

Job costs (seconds on one rank, serial fraction, ranks beyond which a job gets no faster):
  cm         cm's own estimate (src/worker/cm/cm_estimate.c: its calibrated constants are read from
             the source, so the simulation follows a recalibration) from pairs, runs, float type,
             bootstrap replicates, users and strata
  benchmark  serial fraction 0.78: measured, 0.011 s on one rank and 0.0098 s on two (bench/README.md,
             50 models x 2985 items, 1000 resamples); at most 50 ranks (one per model)
  leakage    serial fraction 0.04: measured, 0.71 s on one rank and 0.37 s on two (bench/README.md,
             77,760 replies, 10,000 resamples); at most 54 ranks (one task per cell)
  probe      serial fraction 0.3 (assumed: the planner's default for kinds without an estimate); at
             most 8 ranks (one configuration's group)
Only cm has an estimate of its own in the planner today; the others get rd_cost_default (from the
input's size). The shapes above are what those jobs measure, i.e. what an estimate should say.

Mixes (seed 1):
  sweep    2,000 jobs, half benchmark and half leakage, one-rank times log-uniform in 0.05-2 s
  mixed    8 full-size cm jobs (4M and 6M pairs x 50 runs, float32 or float64, 0 or 1000 bootstrap
           replicates of 40,000 users, 0-2 strata: 3.3-6.8 s on one rank) among 400 small jobs: cm
           (137K pairs x 25 runs), benchmark, leakage and probe at their measured sizes (0.25, 0.011,
           0.71, 0.12 s) each scaled by a factor log-uniform in 0.5-2
  heavy    1,000 jobs, 40 % cm, 30 % leakage, 20 % benchmark, 10 % probe, one-rank times log-normal
           (median 0.3 s, sigma 1.5: the largest near 40 s); cm jobs of those times are 50-run float32
           inputs with as many pairs as the time needs
Each mix is also replayed with every job's true time off its estimate by a log-normal factor (sigma
0.3; 8 draws, seeds 2-9; the dump has seed 2's): the plan is made from the estimates and handed out as the dispatcher does with the
true times ("eff. err"). "eff. whole" adds what the simulation leaves out: the checks of every job
before the run (per job and kind, measured with --measure: PRE_RUN_S; spread over the ranks, with what
stays on rank 0: SERIAL_PER_JOB_S) and the planning itself (timed here).

usage: bench/sim_schedule.py [--ranks 1,2,16,64,128,256,512] [--mix sweep,mixed,heavy] [--sim build/rmdiag_sim_plan]
                             [--dump DIR]
       bench/sim_schedule.py --measure [--measure-ranks 2,4] [--rmdiag build/rmdiag] [--shared ../shared]
--dump writes each mix's cost file (the input of rmdiag_sim_plan). --measure counts each kind's MPI
calls per job (build/librmdiag_mpi_calls.so preloaded: bench/mpi_calls.c), the time of the rank
groups' MPI_Comm_split and MPI start-up, on a few oversubscribed ranks of this machine; about a minute.
Goal (issue): efficiency (bound / makespan) >= 0.85 on 64 and 512 ranks."""
import argparse
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
FAMILY = ["Mkt-RF", "SMB", "HML", "RMW", "CMA", "Mom"]

# ---- cm's estimate, from its source ---------------------------------------------------------------


def c_defines(path):
    """The numeric #defines of a C file."""
    out = {}
    for name, expr in re.findall(r"^#define\s+(\w+)\s+([-+*/<>() .0-9e]+?)\s*(?:/\*.*)?$", open(path).read(), re.M):
        out[name] = eval(expr, {"__builtins__": {}})  # digits, operators and parentheses only
    return out


CM = c_defines(os.path.join(ROOT, "src/worker/cm/cm_estimate.c"))
CM_BLOCK = c_defines(os.path.join(ROOT, "src/worker/cm/cm_internal.h"))["CM_BLOCK"]


def cm_cost(P, R, f64=False, B=0, U=40000, strata=0):
    """cm_estimate() for P pairs x R runs (U users, B bootstrap replicates, `strata` strata)."""
    E = P * R
    rank0 = CM["FIXED_S"] + P * (CM["NS_PER_PAIR_RANK0"] + CM["NS_PER_STRATUM_PAIR"] * strata)
    par = E * (CM["NS_PER_ELEM_F64"] if f64 else CM["NS_PER_ELEM_F32"]) + P * CM["NS_PER_PAIR_PARALLEL"] + \
        B * U * CM["NS_PER_DRAW"]
    s = rank0 + par
    by_rows = min(math.ceil(P / CM_BLOCK), math.floor(E / CM["MIN_ELEMS_PER_RANK"]))
    by_boot = min(B, math.floor(B * U / CM["MIN_ELEMS_PER_RANK"]))
    m = max(1, by_rows, by_boot)
    return ("cm", s, rank0 / s, min(int(m), 1 << 20))


def cm_of_seconds(sec):
    """A cm job of about `sec` seconds on one rank: 50 float32 runs, as many pairs as that takes."""
    per_pair = CM["NS_PER_PAIR_RANK0"] + CM["NS_PER_PAIR_PARALLEL"] + 50 * CM["NS_PER_ELEM_F32"]
    P = max(CM_BLOCK, int((sec - CM["FIXED_S"]) / per_pair))
    return cm_cost(P, 50, U=max(1, P // 100))


# ---- the other kinds: measured shapes --------------------------------------------------------------

SHAPE = {"benchmark": (0.78, 50), "leakage": (0.04, 54), "probe": (0.3, 8)}
MEASURED_S = {"benchmark": 0.011, "leakage": 0.71, "probe": 0.12}  # one rank, bench/README.md (probe: 2 x 0.06)


# The checks before any job runs (layout, spec, estimate), per job: CPU time measured with --measure
# (run --plan, 400 copies of a job minus 100) on the AVX2-only 2-vCPU VM of the latest round in
# bench/README.md, after cm's estimate sorted its sample of user ids with the radix sort (it was 8.4 ms
# on an earlier, faster VM, where the other kinds took 0.8, 1.2 and 0.5 ms). Each rank checks a share of
# the jobs (job i on rank i mod ranks), so they take their sum over min(ranks, jobs); what stays on rank
# 0 (reading the job file, which every rank parses, resolving the inputs, the resume decisions) took
# SERIAL_PER_JOB_S per job there (RMDIAG_TIMING=1 on 2,000 jobs: 0.027 + 0.006 + 0.008 s).
PRE_RUN_S = {"cm": 2.47e-3, "benchmark": 1.77e-3, "leakage": 2.03e-3, "probe": 0.73e-3}
SERIAL_PER_JOB_S = 21e-6


def other(kind, sec):
    serial, top = SHAPE[kind]
    return (kind, sec, serial, top)


# ---- the mixes --------------------------------------------------------------------------------------


def mix_sweep(rng):
    return [other("benchmark" if i % 2 == 0 else "leakage", math.exp(rng.uniform(math.log(0.05), math.log(2.0))))
            for i in range(2000)]


def mix_mixed(rng):
    jobs = []
    for i in range(8):
        jobs.append(cm_cost(4_000_000 if i < 6 else 6_000_000, 50, f64=i % 2 == 1, B=1000 if i % 3 == 0 else 0,
                            strata=i % 3))
    for i in range(400):
        k = rng.choice(["cm", "cm", "benchmark", "leakage", "probe"])
        f = math.exp(rng.uniform(math.log(0.5), math.log(2.0)))
        jobs.append(cm_cost(int(137_000 * f), 25, U=2000) if k == "cm" else other(k, MEASURED_S[k] * f))
    rng.shuffle(jobs)  # job-file order: the large ones anywhere
    return jobs


def mix_heavy(rng):
    jobs = []
    for i in range(1000):
        sec = max(0.005, rng.lognormvariate(math.log(0.3), 1.5))
        k = rng.choices(["cm", "leakage", "benchmark", "probe"], [4, 3, 2, 1])[0]
        jobs.append(cm_of_seconds(sec) if k == "cm" else other(k, sec))
    return jobs


MIXES = {"sweep": mix_sweep, "mixed": mix_mixed, "heavy": mix_heavy}


def describe(jobs):
    n = {}
    for j in jobs:
        n[j[0]] = n.get(j[0], 0) + 1
    secs = sorted(j[1] for j in jobs)
    return (f"{len(jobs)} jobs ({', '.join(f'{v} {k}' for k, v in sorted(n.items()))}), one-rank time "
            f"{sum(secs):.0f} s in all, {secs[0]:.3f}-{secs[-1]:.2f} s each, median {secs[len(secs) // 2]:.3f} s")


ERR_DRAWS = 8


def simulate(sim, jobs, ranks, noise_seed, sigma, dump=None, name=""):
    rng = random.Random(noise_seed)
    lines = [f"{s:.6f} {f:.6f} {m} {s * math.exp(rng.gauss(0.0, sigma)):.6f}\n" for _, s, f, m in jobs]
    with tempfile.NamedTemporaryFile("w", suffix=".costs", delete=False) as fh:
        fh.write(f"# {name}: seconds serial max_ranks actual\n")
        fh.writelines(lines)
        path = fh.name
    if dump:
        shutil.copy(path, os.path.join(dump, f"{name}.costs"))
    out = subprocess.run([sim, ",".join(map(str, ranks)), path], capture_output=True, text=True)
    os.unlink(path)
    if out.returncode != 0:
        sys.exit(f"{sim} failed ({out.returncode}): {out.stderr}{out.stdout}")
    return [dict(kv.split("=", 1) for kv in line.split() if "=" in kv) for line in out.stdout.splitlines()]


def run_sim(a):
    if not os.access(a.sim, os.X_OK):
        sys.exit(f"{a.sim} not found: build first (cmake --build build; target rmdiag_sim_plan)")
    ranks = [int(r) for r in a.ranks.split(",")]
    if a.dump:
        os.makedirs(a.dump, exist_ok=True)
    print("Simulated schedules (the planner's cost model). bound: max(work / ranks, longest job at its best width); "
          "efficiency = bound / makespan; deadline bound: the smallest T at which every job, on the narrowest width "
          "that finishes it by T, fits in ranks x T (no schedule is shorter); eff. err: the plan replayed with true "
          f"times off the estimates by a log-normal factor (sigma {a.err_sigma}), against the bound of the true times, the mean "
          f"(and the lowest) over {ERR_DRAWS} draws of the true times; "
          "checks + plan: the checks before the run (measured per job and kind, spread over the ranks; rank 0's "
          "share of them serial) and the planning measured "
          "here, serial; eff. whole: bound / (checks + plan + makespan))")
    rows = []
    for name in a.mix.split(","):
        jobs = MIXES[name](random.Random(1))
        pre = sum(PRE_RUN_S[j[0]] for j in jobs)
        print(f"  {name}: {describe(jobs)}; checks before the run {pre:.2f} s")
        # the plan comes from the estimates alone; the true times are drawn ERR_DRAWS times
        draws = [simulate(a.sim, jobs, ranks, seed, a.err_sigma, a.dump if seed == 2 else None, name)
                 for seed in range(2, 2 + ERR_DRAWS)]
        for i, r in enumerate(draws[0]):
            errs = [float(d[i]["actual_efficiency"]) for d in draws]
            r["err_mean"], r["err_min"] = sum(errs) / len(errs), min(errs)
            ranks_here = int(r["ranks"])
            r["serial_s"] = pre / min(ranks_here, len(jobs)) + SERIAL_PER_JOB_S * len(jobs) + float(r["plan_s"])
            rows.append((name, r))
    print()
    print("| mix | ranks | groups | makespan s | bound s | efficiency | deadline bound s | vs deadline | eff. err | "
          "checks + plan s | eff. whole |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    worst = {}
    for name, r in rows:
        eff = float(r["efficiency"])
        bound = f"{float(r['bound']):.2f} ({'work' if float(r['work_bound']) >= float(r['job_bound']) else 'job'})"
        print(f"| {name} | {r['ranks']} | {r['groups']} | {float(r['makespan']):.2f} | {bound} | {eff:.3f} | "
              f"{float(r['deadline_bound']):.2f} | {float(r['deadline_efficiency']):.3f} | "
              f"{r['err_mean']:.3f} ({r['err_min']:.3f}) | {r['serial_s']:.2f} | "
              f"{float(r['bound']) / (float(r['makespan']) + r['serial_s']):.3f} |")
        if int(r["ranks"]) in (64, 512):
            worst[name] = min(worst.get(name, 1.0), eff)
    print()
    for name, e in worst.items():
        met = "met" if e >= 0.85 else "NOT met"
        print(f"{name}: lowest efficiency on 64 and 512 ranks {e:.3f} (goal >= 0.85: {met})")


# ---- measuring a job's MPI calls ---------------------------------------------------------------------


def mpi_env():
    env = dict(os.environ, OMPI_MCA_pml=os.environ.get("OMPI_MCA_pml", "ob1"), OMPI_MCA_rmaps_base_oversubscribe="1")
    if os.geteuid() == 0:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    return env


def counted_run(a, tmp, jobs, ranks, extra=()):
    """Runs `jobs` on `ranks` ranks with the MPI calls counted; {(rank, fn): (calls, bytes, seconds)}."""
    tag = f"{len(jobs)}-{ranks}-{jobs[0]['name']}"
    path = os.path.join(tmp, f"job-{tag}.json")
    with open(path, "w") as f:
        json.dump({"output_dir": f"out-{tag}", "seed": 0, "jobs": jobs}, f)
    calls = os.path.join(tmp, f"calls-{tag}.txt")
    if os.path.exists(calls):
        os.unlink(calls)
    cmd = ["mpiexec", "-n", str(ranks), "-x", f"LD_PRELOAD={a.lib}", "-x", f"RMDIAG_MPI_CALLS={calls}",
           a.rmdiag, "run", path, "--force", "--quiet", *extra]
    subprocess.run(cmd, check=True, env=mpi_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    got = {}
    for line in open(calls):
        d = dict(kv.split("=", 1) for kv in line.split())
        got[(int(d["rank"]), d["fn"])] = (int(d["calls"]), int(d["bytes"]), float(d["seconds"]))
    return got


def per_job(one, two, rank):
    """A job's calls on `rank`: the run of two copies minus the run of one."""
    out = {}
    for (r, fn), (c2, b2, s2) in two.items():
        if r != rank:
            continue
        c1, b1, s1 = one.get((r, fn), (0, 0, 0.0))
        if c2 - c1:
            out[fn] = (c2 - c1, b2 - b1, s2 - s1)
    return out


def write_probe_input(path):
    import numpy as np
    import h5py
    rng = np.random.default_rng(0)
    n_tr, n_va, n_te, D = 15000, 1000, 1000, 512
    N = n_tr + n_va + n_te
    lab = rng.integers(0, 3, N).astype(np.int32)
    with h5py.File(path, "w") as f:
        f["probe/task/X"] = (rng.standard_normal((N, D), dtype=np.float32) + 0.05 * lab[:, None]).astype(np.float32)
        f["probe/task/label"] = lab
        f["probe/task/split"] = np.repeat(np.array([0, 1, 2], np.uint8), [n_tr, n_va, n_te])[rng.permutation(N)]


def pre_run(a, tmp, kinds):
    """The checks before any job runs (every job's layout, spec and estimate, serial in the number of jobs):
    the time of `run --plan` (a plain process) on 400 copies of a job minus on 100, per job."""
    print("\nChecks before the run, per job (run --plan, one rank, 400 copies of a job minus 100, CPU and wall):")
    for label, spec in kinds.items():
        t = {}
        for n in (100, 400):
            path = os.path.join(tmp, f"pre-{n}.json")
            with open(path, "w") as f:
                jobs = [dict(name=f"p{i}", **spec) for i in range(n)]
                json.dump({"output_dir": "preout", "seed": 0, "jobs": jobs}, f)
            best = None
            for _ in range(3):
                r0 = os.times()
                w = time.perf_counter()
                subprocess.run([a.rmdiag, "run", path, "--plan"], check=True, stdout=subprocess.DEVNULL)
                w = time.perf_counter() - w
                r1 = os.times()
                cpu = (r1.children_user - r0.children_user) + (r1.children_system - r0.children_system)
                best = (cpu, w) if best is None or cpu < best[0] else best
            t[n] = best
        cpu = (t[400][0] - t[100][0]) / 300
        wall = (t[400][1] - t[100][1]) / 300
        print(f"  {label}: {1e3 * cpu:.2f} ms CPU, {1e3 * wall:.2f} ms wall per job (least CPU of 3)")


def fs_ops(a, tmp, kinds):
    """File-system calls per job (strace, a plain process): the run of two copies minus the run of one."""
    print("\nFile-system calls per job (strace -f, one rank; two copies minus one): path lookups (openat, stat) "
          "of the input and of the output folder, fsync, rename")
    for label, spec in kinds.items():
        got = []
        for n in (1, 2):
            jobs = [dict(name=f"fs{i}", **spec) for i in range(n)]
            path = os.path.join(tmp, f"fs-{n}.json")
            out = f"fsout-{n}"
            with open(path, "w") as f:
                json.dump({"output_dir": out, "seed": 0, "jobs": jobs}, f)
            trace = os.path.join(tmp, f"fs-{n}.trace")
            subprocess.run(["strace", "-f", "-o", trace, "-e", "trace=openat,newfstatat,statx,stat,lstat,fsync,"
                            "fdatasync,rename,renameat,renameat2,link,unlink", a.rmdiag, "run", path, "--force",
                            "--quiet"], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            c = {"input": 0, "output": 0, "fsync": 0, "rename": 0}
            for line in open(trace):
                if re.search(r"\b(fsync|fdatasync)\(", line):
                    c["fsync"] += 1
                elif re.search(r"\brename(at2?)?\(", line):
                    c["rename"] += 1
                elif f'{out}/' in line:
                    c["output"] += 1
                elif re.search(r'"[^"]*' + re.escape(spec["input"]) + '"', line):
                    c["input"] += 1
            got.append(c)
        d = {k: got[1][k] - got[0][k] for k in got[0]}
        print(f"  {label}: input {d['input']}, output folder {d['output']}, fsync {d['fsync']}, rename {d['rename']}")


def run_measure(a):
    a.lib = os.path.abspath(a.lib)
    for p, what in ((a.rmdiag, "rmdiag"), (a.lib, "librmdiag_mpi_calls.so")):
        if not os.path.exists(p):
            sys.exit(f"{p} not found: build {what} first")
    gen = os.path.join(a.shared, "peers", "gen_inputs.py")
    if not os.path.isfile(gen):
        print(f"SKIP: {gen} not found (the input generator lives in the shared folder)")
        return
    tmp = tempfile.mkdtemp(prefix="rmdiag-sim-")
    try:
        subprocess.run([a.python, gen, os.path.join(tmp, "inputs.h5"), "--kinds", "cm,bench,leak"], check=True,
                       stdout=subprocess.DEVNULL)
        write_probe_input(os.path.join(tmp, "probe.h5"))
        kinds = {
            "cm (137K pairs x 25 runs, 1000 replicates)": {"kind": "cm", "input": "inputs.h5", "bootstrap": 1000},
            "benchmark (50 models x 2985 items, 1000 resamples)": {
                "kind": "benchmark", "input": "inputs.h5", "group": "/bench", "scheme": "rewardbench-v1",
                "bootstrap": 1000},
            "leakage (77,760 replies, 1000 resamples, 1000 null draws)": {
                "kind": "leakage", "input": "inputs.h5", "bootstrap": 1000, "null_permutations": 1000,
                "family": FAMILY},
            "probe (15,000 x 512 rows, 3 classes, 3 learning rates)": {
                "kind": "probe", "input": "probe.h5", "lr_grid": [5e-5, 2e-5, 1e-5],
                "tasks": {"task": {"classes": [[0], [1], [2]]}}, "kmeans": False},
        }
        ranks_list = [int(r) for r in a.measure_ranks.split(",")]
        print("MPI calls per job: the run of two copies of a job minus the run of one (--ranks-per-job all), on "
              "rank 0, with the largest count over the ranks; bytes as rank 0's buffers hold them. Seconds: rank 0's "
              "time in each function during the one-job run (the run's own calls included; oversubscribed ranks on "
              "this machine, so waiting for the other ranks is in it)")
        for label, spec in kinds.items():
            for ranks in ranks_list:
                j1 = [dict(name="a", **spec)]
                j2 = j1 + [dict(name="b", **spec)]
                one = counted_run(a, tmp, j1, ranks, ["--ranks-per-job", "all"])
                two = counted_run(a, tmp, j2, ranks, ["--ranks-per-job", "all"])
                r0 = per_job(one, two, 0)
                top = {}
                for r in range(ranks):
                    for fn, (c, _, _) in per_job(one, two, r).items():
                        top[fn] = max(top.get(fn, 0), c)
                coll = sum(c for fn, (c, _, _) in r0.items() if fn not in ("run", "MPI_Send", "MPI_Recv", "MPI_Irecv"))
                in_mpi = sum(v[2] for (r, fn), v in one.items() if r == 0 and fn != "run")
                print(f"\n{label}, {ranks} ranks: {coll} collective calls per job on rank 0; the one-job run: "
                      f"{one[(0, 'run')][2]:.3f} s on rank 0, {in_mpi:.3f} s of it in MPI calls")
                print(f"  {'function':24s} {'calls/job':>9s} {'max/rank':>8s} {'bytes/job':>12s} "
                      f"{'s (1-job run)':>13s}")
                for fn in sorted((set(r0) | set(top)) - {"run"}):
                    c, b, _ = r0.get(fn, (0, 0, 0.0))
                    s1 = one.get((0, fn), (0, 0, 0.0))[2]
                    print(f"  {fn:24s} {c:9d} {top.get(fn, 0):8d} {b:12d} {s1:13.4f}")
        # the rank groups: a file of small jobs the planner cuts into groups (one MPI_Comm_split)
        small = [dict(name=f"s{i}", kind="benchmark", input="inputs.h5", group="/bench", scheme="rewardbench-v1",
                      bootstrap=100) for i in range(8)]
        for ranks in ranks_list:
            got = counted_run(a, tmp, small, ranks, ["--ranks-per-job", "1"])
            split = [got.get((r, "MPI_Comm_split"), (0, 0, 0.0)) for r in range(ranks)]
            print(f"\nrank groups on {ranks} ranks: MPI_Comm_split {split[0][0]} calls, "
                  f"{max(s[2] for s in split):.4f} s (slowest rank)")
        pre_run(a, tmp, kinds)
        if shutil.which("strace"):
            fs_ops(a, tmp, kinds)
        env = mpi_env()
        for ranks in [1] + ranks_list:
            walls = []
            for _ in range(3):
                t = time.perf_counter()
                subprocess.run(["mpiexec", "-n", str(ranks), a.rmdiag, "--version"], check=True, env=env,
                               stdout=subprocess.DEVNULL)
                walls.append(time.perf_counter() - t)
            print(f"MPI start-up: mpiexec -n {ranks} rmdiag --version {sorted(walls)[1]:.3f} s (median of 3)")
    finally:
        shutil.rmtree(tmp, True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ranks", default="1,2,16,64,128,256,512")
    ap.add_argument("--mix", default="sweep,mixed,heavy")
    ap.add_argument("--sim", default=os.path.join(ROOT, "build", "rmdiag_sim_plan"))
    ap.add_argument("--dump", help="folder for the mixes' cost files")
    ap.add_argument("--err-sigma", type=float, default=0.3, help="spread of the true times around the estimates")
    ap.add_argument("--measure", action="store_true", help="count the kinds' MPI calls per job instead")
    ap.add_argument("--measure-ranks", default="2,4")
    ap.add_argument("--rmdiag", default=os.path.join(ROOT, "build", "rmdiag"))
    ap.add_argument("--lib", default=os.path.join(ROOT, "build", "librmdiag_mpi_calls.so"))
    ap.add_argument("--shared", default=os.path.join(ROOT, "..", "shared"))
    ap.add_argument("--python", default="/usr/bin/python3")
    a = ap.parse_args()
    for m in a.mix.split(","):
        if m not in MIXES:
            sys.exit(f"unknown mix {m} (one of {', '.join(MIXES)})")
    run_measure(a) if a.measure else run_sim(a)


if __name__ == "__main__":
    main()
