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


def options(doc, reps=7, extra=None):
    """Common options (--ranks, --reps, --shared, --rmdiag, --python) plus `extra(ap)`."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--ranks", type=int, default=2, help="MPI ranks for rmdiag (0: a plain process)")
    ap.add_argument("--reps", type=int, default=reps)
    ap.add_argument("--shared", default=os.path.join(HERE, "..", "..", "shared"))
    ap.add_argument("--rmdiag", default=os.path.join(HERE, "..", "build", "rmdiag"))
    ap.add_argument("--python", default="/usr/bin/python3")
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
