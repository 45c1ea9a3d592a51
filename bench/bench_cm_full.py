#!/usr/bin/python3
"""Full-size cm benchmark: 4,000,000 pairs x 50 runs, 40,000 users, float32 (1.88 GB, contiguous, so
rmdiag maps it), against the floor of streaming the same datasets once from the page cache
(bench/stream_cm.c: map, read, unmap, as rmdiag does), on 1 and 2 ranks, alternating, several
repetitions; prints medians and ratios, rmdiag's phase times (RMDIAG_TIMING) and each rank's peak
resident memory (its share of the mapped input plus its arrays).

  floor:     stream_cm with 1 thread (and 2 threads, the 2-rank floor)
  floor+σ:   stream_cm -s: the same read with every element's σ(chosen − rejected) computed by rmdiag's
             own bit-exact float64 sigmoid and summed: reading plus the pair kernel's arithmetic
  floor+libm σ: stream_cm -l: the same with σ through glibc's vectorized exp (libmvec, 4 ulp):
             reading plus 200 M sigmoids at the standard library's speed, a floor independent of rmdiag
  rmdiag:    the report's "seconds" (from the job's start to its closed .h5) and the process's CPU time
             (user + system; on a machine shared with other work the CPU time is the steadier measure)
  baseline:  the same runs of another build (--baseline PATH), for before/after tables
  peer:      the numpy peer (shared/peers/peer_cm.py), when --peer is given (about 25 s a run)

usage: bench/bench_cm_full.py [--reps 5] [--bootstrap 0] [--keep DIR] [--baseline OLD/rmdiag] [--peer]
Goals (issue): 1 rank within 3x of the floor; 2 ranks at least 1.6x faster than 1."""
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

from benchlib import HERE, KEEP_INPUT, mpi_env, options


def extra(ap):
    ap.add_argument("--bootstrap", type=int, default=0)
    ap.add_argument("--baseline", help="another rmdiag build to measure in the same run")
    ap.add_argument("--peer", action="store_true", help="also time the numpy peer")
    ap.add_argument("--pairs", type=int, default=4_000_000)
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--users", type=int, default=40_000)


a = options(__doc__, reps=5, extra=extra, keep=KEEP_INPUT)
tmp = a.keep or tempfile.mkdtemp(prefix="rmdiag-bench-cm-full-")
if not a.keep:
    import atexit
    atexit.register(shutil.rmtree, tmp, True)
os.makedirs(tmp, exist_ok=True)
inp = os.path.join(tmp, "full.h5")
if not os.path.exists(inp):
    print(f"generating {inp} ({a.pairs} x {a.runs}, {a.users} users) ...", flush=True)
    subprocess.run([a.python, os.path.join(HERE, "gen_cm_full.py"), inp, "--pairs", str(a.pairs), "--runs",
                    str(a.runs), "--users", str(a.users)], check=True)
stream = os.path.join(tmp, "stream_cm")
libm_obj = os.path.join(tmp, "stream_cm_libm.o")
subprocess.run(["gcc", "-O3", "-mavx2", "-mfma", "-ffast-math", "-c", os.path.join(HERE, "stream_cm_libm.c"),
                "-o", libm_obj], check=True)
subprocess.run(["gcc", "-O3", "-mavx2", "-ffp-contract=off", "-fno-trapping-math", "-pthread",
                "-I", os.path.join(HERE, "..", "include"), os.path.join(HERE, "stream_cm.c"), libm_obj,
                "-lmvec", "-lm", "-o", stream], check=True)
offsets = subprocess.run([a.python, "-c", """
import sys, h5py
with h5py.File(sys.argv[1]) as f:
    print(' '.join(f'{f[n].id.get_offset()} {f[n].id.get_storage_size()}'
                   for n in ('cm/reward_chosen', 'cm/reward_rejected', 'cm/in_train')))
""", inp], check=True, capture_output=True, text=True).stdout.split()
job = os.path.join(tmp, "job.json")
with open(job, "w") as f:
    json.dump({"output_dir": "out", "seed": 1, "jobs": [{"name": "full", "kind": "cm", "input": "full.h5",
                                                        "bootstrap": a.bootstrap}]}, f)
env = dict(mpi_env(), RMDIAG_TIMING="1")


def cpu_of(cmd, **kw):
    """Runs cmd; returns (CompletedProcess, CPU seconds of it and its children)."""
    t0 = os.times()
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    t1 = os.times()
    if p.returncode:
        sys.exit(f"{cmd[0]} failed:\n{p.stderr}")
    return p, (t1.children_user - t0.children_user) + (t1.children_system - t0.children_system)


def floor(threads, sigmoid=""):
    p, cpu = cpu_of([stream] + ([sigmoid] if sigmoid else []) + [inp, str(threads), "1", *offsets])
    return float(p.stdout.split()[0]), cpu


def rmdiag(binary, ranks):
    """One run: report seconds, CPU, phases (rank 0), peak RSS per rank in MB."""
    timer = ["/usr/bin/time", "-f", "RSS %M"]
    cmd = (["mpiexec", "-n", str(ranks)] if ranks else []) + timer + [binary, "run", job, "--force", "--quiet"]
    p, cpu = cpu_of(cmd, env=env, cwd=tmp)
    with open(os.path.join(tmp, "out", "full.json")) as f:
        secs = json.load(f)["rmdiag"]["seconds"]
    phases = {}
    for m in re.finditer(r"\[timing\] \S+ (.*?)\s+([0-9.]+) s", p.stderr):
        phases.setdefault(m.group(1).strip(), float(m.group(2)))
    rss = [int(x) / 1024 for x in re.findall(r"RSS (\d+)", p.stderr)]
    return secs, cpu, phases, rss


def peer():
    p, cpu = cpu_of([a.python, os.path.join(a.shared, "peers", "peer_cm.py"), inp, os.path.join(tmp, "peer"),
                     "--bootstrap", str(a.bootstrap)])
    return float(re.search(r"total (\S+)", p.stdout).group(1)), cpu


builds = [("rmdiag", a.rmdiag)] + ([("baseline", a.baseline)] if a.baseline else [])
res = {}
for rep in range(a.reps + 1):  # the first round warms the page cache and is not counted
    rows = [("floor 1 thread", lambda: floor(1)), ("floor 2 threads", lambda: floor(2)),
            ("floor+σ 1 thread", lambda: floor(1, "-s")), ("floor+σ 2 threads", lambda: floor(2, "-s")),
            ("floor+libm σ 1 thread", lambda: floor(1, "-l"))]
    for name, b in builds:
        rows += [(f"{name} 1 rank", lambda b=b: rmdiag(b, 0)), (f"{name} 2 ranks", lambda b=b: rmdiag(b, 2))]
    if a.peer and os.path.exists(os.path.join(a.shared, "peers", "peer_cm.py")):
        rows.append(("numpy peer", peer))
    for label, fn in rows:
        r = fn()
        if rep:
            res.setdefault(label, []).append(r)

med = statistics.median
print(f"cm full size: {a.pairs} pairs x {a.runs} runs, {a.users} users, float32, bootstrap {a.bootstrap}; "
      f"medians of {a.reps} alternating runs")
print(f"{'':22}{'seconds':>10}{'CPU s':>10}{'/ floor':>10}{'peak RSS per rank (MB)':>26}")
fl1, fl2 = med(x[0] for x in res["floor 1 thread"]), med(x[0] for x in res["floor 2 threads"])
flc1, flc2 = med(x[1] for x in res["floor 1 thread"]), med(x[1] for x in res["floor 2 threads"])
fs1 = med(x[0] for x in res["floor+σ 1 thread"])
fl_libm = med(x[0] for x in res["floor+libm σ 1 thread"])
for label, rs in res.items():
    s, c = med(r[0] for r in rs), med(r[1] for r in rs)
    ref = fl2 if "2" in label else fl1  # (the floor+σ rows against the plain read)
    rss = ""
    if len(rs[0]) > 3 and rs[0][3]:
        rss = " / ".join(f"{med(r[3][k] for r in rs if len(r[3]) > k):.0f}" for k in range(len(rs[0][3])))
    print(f"{label:22}{s:10.3f}{c:10.2f}{s / ref:10.2f}{rss:>26}")
for name, _ in builds:
    one, two = res[f"{name} 1 rank"], res[f"{name} 2 ranks"]
    print(f"{name}: 1 rank / floor {med(r[0] for r in one) / fl1:.2f} (CPU {med(r[1] for r in one) / flc1:.2f}); "
          f"2 ranks faster than 1: {med(r[0] for r in one) / med(r[0] for r in two):.2f}x "
          f"(goals: within 3x, at least 1.6x); 1 rank / floor with the sigmoids {med(r[0] for r in one) / fs1:.2f} "
          f"(with glibc's vector exp {med(r[0] for r in one) / fl_libm:.2f})")
    keys = []
    for r in one + two:
        keys += [k for k in r[2] if k not in keys]
    print(f"  {name} phases (rank 0, s)   {'1 rank':>10}{'2 ranks':>10}")
    for k in keys:
        v1 = [r[2][k] for r in one if k in r[2]]
        v2 = [r[2][k] for r in two if k in r[2]]
        print(f"    {k:28}{med(v1) if v1 else float('nan'):10.3f}{med(v2) if v2 else float('nan'):10.3f}")
