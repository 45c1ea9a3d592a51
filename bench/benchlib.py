"""What every benchmark shares: options, the peers' folder, generated inputs, launching rmdiag
(plain or under mpiexec) and its numpy peer alternately, and the medians table."""
import argparse
import atexit
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


KEEP_INPUT = "folder for the generated input (reused when present)"


def options(doc, reps=7, extra=None, keep=None, no_peer=False):
    """Common options (--ranks, --reps, --shared, --rmdiag, --python) plus `extra(ap)`; with `keep` (its
    help text) --keep DIR, with `no_peer` --no-peer."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--ranks", type=int, default=2, help="MPI ranks for rmdiag (0: a plain process)")
    ap.add_argument("--reps", type=int, default=reps)
    ap.add_argument("--shared", default=os.path.join(HERE, "..", "..", "shared"))
    ap.add_argument("--rmdiag", default=os.path.join(HERE, "..", "build", "rmdiag"))
    ap.add_argument("--python", default="/usr/bin/python3")
    if keep:
        ap.add_argument("--keep", help=keep)
    if no_peer:
        ap.add_argument("--no-peer", action="store_true")
    if extra:
        extra(ap)
    return ap.parse_args()


def peers_or_skip(a, peer):
    """The peers' folder; exits with a SKIP line when `peer` is not there."""
    peers = os.path.join(a.shared, "peers")
    if not os.path.isfile(os.path.join(peers, peer)):
        print(f"SKIP: {peers}/{peer} not found (the peers live in the shared folder)")
        sys.exit(0)
    return peers


def mpi_env():
    """Open MPI on one host: no network probing at start-up, oversubscription allowed, root allowed."""
    env = dict(os.environ, OMPI_MCA_pml=os.environ.get("OMPI_MCA_pml", "ob1"), OMPI_MCA_rmaps_base_oversubscribe="1")
    if os.geteuid() == 0:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    return env


def generate(a, peers, kinds, *extra):
    """A fresh scratch folder with the peers' generated inputs.h5 of `kinds`."""
    tmp = tempfile.mkdtemp(prefix="rmdiag-bench-")
    atexit.register(shutil.rmtree, tmp, True)  # the generated inputs and outputs go when the run ends
    inp = os.path.join(tmp, "inputs.h5")
    subprocess.run([a.python, os.path.join(peers, "gen_inputs.py"), inp, "--kinds", kinds, *extra], check=True,
                   stdout=subprocess.DEVNULL)
    return tmp, inp


def write_job(tmp, name, spec, seed=0):
    path = os.path.join(tmp, f"job-{name}.json")
    with open(path, "w") as f:
        json.dump({"output_dir": "out", "seed": seed, "jobs": [dict(name=name, **spec)]}, f)
    return path


def rmdiag_cmd(a, job):
    launcher = [] if a.ranks == 0 else ["mpiexec", "-n", str(a.ranks)]
    return launcher + [a.rmdiag, "run", job, "--force", "--quiet"]


def alternate(a, rd_cmd, report, peer_cmd):
    """Runs rmdiag and the peer alternately, a.reps times after one warm-up pair (page cache).
    Returns lists: rmdiag in-process (report "seconds"), rmdiag wall, peer in-process (its TIME
    total), peer wall."""
    env = mpi_env()
    rd_in, rd_wall, pe_in, pe_wall = [], [], [], []
    for rep in range(a.reps + 1):
        t = time.perf_counter()
        subprocess.run(rd_cmd, check=True, env=env, stdout=subprocess.DEVNULL)
        w = time.perf_counter() - t
        with open(report) as f:
            s = json.load(f)["rmdiag"]["seconds"]
        t = time.perf_counter()
        out = subprocess.run(peer_cmd, check=True, capture_output=True, text=True).stdout
        pw = time.perf_counter() - t
        ps = float(re.search(r"TIME read \S+ compute \S+ write \S+ total (\S+)", out).group(1))
        if rep:
            rd_in.append(s), rd_wall.append(w), pe_in.append(ps), pe_wall.append(pw)
    return rd_in, rd_wall, pe_in, pe_wall


def row(label, mine, peer, goal="", width=22):
    m = statistics.median
    return f"{label:{width}}{m(mine):10.4f}{m(peer):10.4f}{m(peer) / m(mine):8.2f}x   {goal}"


def header(width=22):
    return f"{'':{width}}{'rmdiag':>10}{'peer':>10}{'ratio':>9}"


# ---- whole-command measurements (the jobs and full-size benchmarks) ----------------------------------------

def load():
    """The 1-minute load average now: the machine may be shared, so every measurement records it."""
    return os.getloadavg()[0]


def measure(cmd, **kw):
    """Runs cmd (stdout and stderr captured); returns (CompletedProcess, wall s, CPU s of it and its
    children, load average at the start). Exits with cmd's stderr when it fails. The data earlier runs wrote
    is written back first (sync, not timed): on these VMs writing a new file ran at a tenth of its speed
    while the kernel was still writing back the run before's outputs, which made whichever run came next
    pay for it."""
    os.sync()
    l0, t0, c0 = load(), time.perf_counter(), os.times()
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    wall, c1 = time.perf_counter() - t0, os.times()
    if p.returncode:
        sys.exit(f"{' '.join(cmd)} failed (exit {p.returncode}):\n{p.stderr[-3000:]}")
    return p, wall, (c1.children_user - c0.children_user) + (c1.children_system - c0.children_system), l0


TIME_RANK = ["/usr/bin/time", "-f", "RANK %M %U %S"]   # before each rank's program: its peak RSS and CPU on stderr


def rank_stats(stderr):
    """(peak resident MB, CPU s) of each process that TIME_RANK reported, in the order printed."""
    return [(int(m) / 1024, float(u) + float(s)) for m, u, s in re.findall(r"RANK (\d+) ([0-9.]+) ([0-9.]+)", stderr)]


def launch(a, ranks, rmdiag=None):
    """The command prefix for rmdiag on `ranks` ranks (a plain process for 0, else mpiexec -n ranks),
    each rank under /usr/bin/time (TIME_RANK)."""
    return ([] if ranks == 0 else ["mpiexec", "-n", str(ranks)]) + TIME_RANK + [rmdiag or a.rmdiag]


def compare_outputs(dir_a, dir_b, names):
    """Differences between the outputs of jobs `names` in two output folders: each .h5 byte for byte,
    each report .json as text without the envelope's "seconds" and "ranks" (what scripts/compare_builds.py
    does). Returns a list of 'FILE: difference' (empty: identical)."""
    sys.path.insert(0, os.path.join(HERE, "..", "scripts"))
    from compare_builds import compare_files, compare_reports
    diffs = []
    for n in names:
        for fn, d in ((n + ".json", compare_reports(os.path.join(dir_a, n + ".json"), os.path.join(dir_b, n + ".json"),
                                                    ("seconds", "ranks"))),
                      (n + ".h5", compare_files(os.path.join(dir_a, n + ".h5"), os.path.join(dir_b, n + ".h5")))):
            if d:
                diffs.append(f"{fn}: {d}")
    return diffs


def med(xs):
    return statistics.median(xs)


# ---- full-size benchmarks: one job, rmdiag on 1 and 2 ranks, the peer, a floor ---------------------------

def scratch(a, prefix):
    """The folder for generated inputs: --keep DIR (kept, reused) or a temporary one removed at exit."""
    tmp = a.keep or tempfile.mkdtemp(prefix=prefix)
    if not a.keep:
        atexit.register(shutil.rmtree, tmp, True)
    os.makedirs(tmp, exist_ok=True)
    return tmp


def full_job(tmp, name, spec, seed=1):
    """Writes TMP/job.json with the one job; returns (job file, its report's path)."""
    path = os.path.join(tmp, "job.json")
    with open(path, "w") as f:
        json.dump({"output_dir": "out", "seed": seed, "jobs": [dict(name=name, **spec)]}, f)
    return path, os.path.join(tmp, "out", name + ".json")


def run_rmdiag(a, ranks, job, report, env=None, cwd=None):
    """One timed run of the job: report seconds, wall, CPU (ranks, launcher and all), load average at the
    start, [(peak RSS MB, CPU s)] per rank, and the phase times rank 0 printed (RMDIAG_TIMING; a phase
    that occurs twice, in the value check and in the run, is summed)."""
    env = dict(env or mpi_env(), RMDIAG_TIMING="1")
    p, wall, cpu, l0 = measure(launch(a, ranks) + ["run", job, "--force", "--quiet"], env=env, cwd=cwd)
    with open(report) as f:
        secs = json.load(f)["rmdiag"]["seconds"]
    phases = {}
    for m in re.finditer(r"^\[timing\] \S+ (.*?)\s+([0-9.]+) s$", p.stderr, re.M):
        phases[m.group(1).strip()] = phases.get(m.group(1).strip(), 0.0) + float(m.group(2))
    return dict(seconds=secs, wall=wall, cpu=cpu, load=l0, ranks=rank_stats(p.stderr), phases=phases)


def run_peer(a, argv):
    """One timed run of a peer script (argv after the interpreter): its TIME total, wall, CPU, load, RSS."""
    p, wall, cpu, l0 = measure(TIME_RANK + [a.python] + argv)
    total = float(re.search(r"TIME read \S+ compute \S+ write \S+ total (\S+)", p.stdout).group(1))
    return dict(seconds=total, wall=wall, cpu=cpu, load=l0, ranks=rank_stats(p.stderr), phases={})


def rank_rows(a, job, report, peer_argv=None):
    """The rows every full-size benchmark times: rmdiag on 1 and 2 ranks, and the peer when given."""
    rows = [("rmdiag 1 rank", lambda: run_rmdiag(a, 0, job, report)),
            ("rmdiag 2 ranks", lambda: run_rmdiag(a, 2, job, report))]
    if peer_argv:
        rows.append(("numpy peer", lambda: run_peer(a, peer_argv)))
    return rows


def speedup_line(res, goal=""):
    """2 ranks against 1 (report seconds), and the peer against rmdiag in-process and whole process."""
    one, two = med(r["seconds"] for r in res["rmdiag 1 rank"]), med(r["seconds"] for r in res["rmdiag 2 ranks"])
    line = f"2 ranks faster than 1: {one / two:.2f}x (report seconds)"
    if "numpy peer" in res:
        pe, pw = med(r["seconds"] for r in res["numpy peer"]), med(r["wall"] for r in res["numpy peer"])
        w1, w2 = med(r["wall"] for r in res["rmdiag 1 rank"]), med(r["wall"] for r in res["rmdiag 2 ranks"])
        line += (f"; the peer / rmdiag: {pe / one:.1f}x (1 rank), {pe / two:.1f}x (2 ranks{goal}) in-process, "
                 f"{pw / w1:.1f}x / {pw / w2:.1f}x whole process")
    return line


def rounds(reps, rows, cold=("numpy peer",)):
    """Runs every (label, fn) of rows in turn, reps + 1 times; the first round (page cache, warm-up) is not
    kept, and the rows named in `cold` (slow, and reading inputs the others have warmed) skip it.
    Returns {label: [fn() result, ...]}."""
    res = {}
    for rep in range(reps + 1):
        for label, fn in rows:
            if rep == 0 and label in cold:
                continue
            r = fn()
            print(f"  round {rep}: {label:24} {r['seconds']:8.3f} s (wall {r['wall']:.2f}, load {r['load']:.1f})",
                  file=sys.stderr, flush=True)
            if rep:
                res.setdefault(label, []).append(r)
    return res


def full_table(res, floors=None):
    """The medians table: seconds (report, peer's TIME total or the floor's own time), wall, CPU, the load
    average range, seconds over the floor (floors: {label: floor label}) and peak RSS per rank."""
    floors = floors or {}
    print(f"{'':22}{'seconds':>9}{'wall s':>9}{'CPU s':>9}{'load':>11}{'/ floor':>9}  per rank: peak RSS, CPU")
    for label, rs in res.items():
        s = med(r["seconds"] for r in rs)
        fl = f"{s / med(r['seconds'] for r in res[floors[label]]):.2f}" if label in floors and floors[label] in res else ""
        loads = [r["load"] for r in rs]
        n = min(len(r["ranks"]) for r in rs)
        rss = " / ".join(f"{med(r['ranks'][k][0] for r in rs):.0f} MB, {med(r['ranks'][k][1] for r in rs):.2f} s"
                         for k in range(n))
        print(f"{label:22}{s:9.3f}{med(r['wall'] for r in rs):9.2f}{med(r['cpu'] for r in rs):9.2f}"
              f"{f'{min(loads):.1f}-{max(loads):.1f}':>11}{fl:>9}  {rss}")


def phase_table(res, labels):
    """Median phase times (rank 0, RMDIAG_TIMING) of the rmdiag rows `labels`, side by side."""
    keys = []
    for lb in labels:
        for r in res.get(lb, []):
            keys += [k for k in r["phases"] if k not in keys]
    print("  phases (rank 0, s)          " + "".join(f"{lb:>18}" for lb in labels))
    for k in keys:
        vals = []
        for lb in labels:
            v = [r["phases"][k] for r in res.get(lb, []) if k in r["phases"]]
            vals.append(f"{med(v):18.3f}" if v else f"{'':18}")
        print(f"    {k:28}" + "".join(vals))
