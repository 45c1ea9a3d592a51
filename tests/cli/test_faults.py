"""Faults while a run writes its outputs: kill -9 of a worker rank, of rank 0 and of mpiexec in the
middle of a job; a full disk during a dataset write, while the output .h5 is closed and while the
report is written (a small tmpfs; skipped with a message where mounting is not permitted); the file
size limit (ulimit -f). After each: the exit status and the message documented in docs/design.md
('Faults'), no file under a final name changed except by a complete run, nothing left behind after
the next run, and --resume gives reports identical to an uninterrupted run."""
import glob
import resource
import signal
import subprocess
import tempfile
import time

from rdtest import *

# a tmpfs left mounted by an interrupted earlier run of this test would block the scratch folder
_fs = os.path.join(os.environ.get("RMDIAG_TEST_TMP") or tempfile.gettempdir(), "faults", "fs")
if os.path.ismount(_fs):
    subprocess.run(["umount", _fs])
d = scratch("faults")
rng = np.random.default_rng(11)


def cm_input(path, P, R, seed):
    g = np.random.default_rng(seed)
    users = g.integers(0, 50, P)
    flags = (g.random((50, R)) < 0.5)[users].astype(np.uint8)
    write_cm(path, g.normal(size=(P, R)), g.normal(size=(P, R)), flags, users)


cm_input(os.path.join(d, "small.h5"), 2000, 5, 1)
cm_input(os.path.join(d, "big.h5"), 20000, 5, 2)
MPI_ENV = {"RMDIAG_RANKS_PER_JOB": "all"}


def snapshot(folder):
    """Every file of the folder with its bytes (side files included)."""
    out = {}
    for n in outputs_in(folder):
        with open(os.path.join(folder, n), "rb") as f:
            out[n] = f.read()
    return out


def report_core(path):
    """A report without what may vary between runs of the same spec (seconds, ranks)."""
    r = load_report(path)
    r["rmdiag"].pop("seconds", None)
    r["rmdiag"].pop("ranks", None)
    return r


def same_outputs(folder, ref, names):
    for n in names:
        if report_core(os.path.join(folder, n + ".json")) != report_core(os.path.join(ref, n + ".json")):
            return f"{n}.json differs"
        with open(os.path.join(folder, n + ".h5"), "rb") as a, open(os.path.join(ref, n + ".h5"), "rb") as b:
            if a.read() != b.read():
                return f"{n}.h5 differs"
    return None


def proc_children(ppid):
    """{world rank: pid} of the rmdiag processes mpiexec started."""
    out = {}
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/stat") as f:
                if int(f.read().rsplit(")", 1)[1].split()[1]) != ppid:
                    continue
            with open(f"/proc/{p}/environ", "rb") as f:
                env = f.read().split(b"\0")
        except (OSError, ValueError, IndexError):
            continue
        for e in env:
            if e.startswith(b"OMPI_COMM_WORLD_RANK="):
                out[int(e.split(b"=")[1])] = int(p)
    return out


def wait_gone(pids, timeout=60):
    t0 = time.time()
    while time.time() - t0 < timeout:
        if not any(os.path.exists(f"/proc/{p}") and open(f"/proc/{p}/stat").read().split()[2] != "Z" for p in pids):
            return True
        time.sleep(0.05)
    return False


# ---- kill -9 in the middle of a job ---------------------------------------------------------------------
# Three jobs in file order (RMDIAG_RANKS_PER_JOB=all): "first" finishes, "long" is killed while it
# computes, "last" has not started. The folder holds the outputs of an earlier run of another spec.
names = ["first", "long", "last"]


def kill_jobs(seed, long_boot):
    return [{"name": "first", "kind": "cm", "input": "small.h5", "bootstrap": 0},
            {"name": "long", "kind": "cm", "input": "small.h5", "bootstrap": long_boot},
            {"name": "last", "kind": "cm", "input": "small.h5", "bootstrap": 10}]


ref_job = write_job(os.path.join(d, "ref.json"), kill_jobs(2, 400000), output_dir="out_ref", seed=2)
code, _, err = run(["run", ref_job], ranks=2, env=MPI_ENV)
check(code == 0, f"the uninterrupted reference run: {code} {err[-300:]}")
ref = os.path.join(d, "out_ref")

for who in ("worker rank", "rank 0", "mpiexec"):
    tag = who.replace(" ", "")
    folder = os.path.join(d, "out_" + tag)
    old_job = write_job(os.path.join(d, f"old_{tag}.json"), kill_jobs(1, 10), output_dir="out_" + tag, seed=1)
    code, _, err = run(["run", old_job])
    check(code == 0, f"{who}: the earlier outputs ({err[-200:]})")
    before = snapshot(folder)
    jp = write_job(os.path.join(d, f"kill_{tag}.json"), kill_jobs(2, 400000), output_dir="out_" + tag, seed=2)
    e = dict(os.environ, **MPI_ENV)
    p = subprocess.Popen([MPIEXEC, "-n", "2", RMDIAG, "run", jp, "--force"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=e)
    t0 = time.time()
    while time.time() - t0 < 60 and not glob.glob(os.path.join(folder, ".long.h5.tmp.*")) and p.poll() is None:
        time.sleep(0.01)
    ranks = proc_children(p.pid)
    started = bool(glob.glob(os.path.join(folder, ".long.h5.tmp.*"))) and len(ranks) == 2
    check(started, f"{who}: the long job started ({sorted(ranks)}, {outputs_in(folder)})")
    target = {"worker rank": ranks.get(1), "rank 0": ranks.get(0), "mpiexec": p.pid}[who]
    if target:
        os.kill(target, signal.SIGKILL)
    try:
        _, err = p.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        p.kill()
        _, err = p.communicate()
        check(False, f"{who}: mpiexec did not end after kill -9")
    check(wait_gone(list(ranks.values())), f"{who}: every rank ended")
    want_code = -9 if who == "mpiexec" else 137
    check(p.returncode == want_code, f"{who}: mpiexec's exit status {p.returncode} (expected {want_code})")
    if who != "mpiexec":
        check("exited on signal 9 (Killed)" in err, f"{who}: mpiexec names the killed rank: {err[-300:]}")
    after = snapshot(folder)
    # "first" was replaced by a complete run of it; "long" and "last" are as they were
    for n in ("long.json", "long.h5", "last.json", "last.h5"):
        check(after.get(n) == before[n], f"{who}: {n} unchanged by the killed run")
    check(report_core(os.path.join(folder, "first.json")) == report_core(os.path.join(ref, "first.json")),
          f"{who}: the job that finished before the kill is complete")
    left = sorted(n for n in after if n.startswith("."))
    if who != "rank 0":  # SIGTERM from mpiexec, or from the kernel as mpiexec died: the handler cleaned up
        check(left == [], f"{who}: nothing left behind: {left}")
    # the next run removes what the killed one left (its pid is gone) and reruns the rest
    code, _, err = run(["run", jp, "--resume", "--force"], ranks=2, env=MPI_ENV)
    check(code == 0 and "first is up to date" in err, f"{who}: --resume: {code} {err[-400:]}")
    if left:
        check("left by runs that ended without cleaning up" in err, f"{who}: the next run says what it removed: {err}")
    check(sorted(outputs_in(folder)) == sorted(n + e for n in names for e in (".json", ".h5")),
          f"{who}: no temporary (nor the lock file) left after --resume: {outputs_in(folder)}")
    diff = same_outputs(folder, ref, names)
    check(diff is None, f"{who}: --resume gives the reports of an uninterrupted run ({diff})")


# ---- a full disk: a small tmpfs, filled up to a given free space ----------------------------------------
def try_mount(path, size):
    os.makedirs(path, exist_ok=True)
    if os.geteuid() != 0:
        return "not root"
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", path], capture_output=True, text=True)
    return None if p.returncode == 0 else (p.stderr.strip() or f"mount exit {p.returncode}")


def free_bytes(path):
    s = os.statvfs(path)
    return s.f_bavail * s.f_frsize


def fill_to(path, free):
    """A filler file that leaves `free` bytes (rounded to pages) of the file system."""
    filler = os.path.join(path, "filler")
    if os.path.exists(filler):
        os.remove(filler)
    n = free_bytes(path) - free
    if n > 0:
        with open(filler, "wb") as f:
            f.write(b"\0" * n)
    return free_bytes(path)


# the reports the failed runs below should have made: an uninterrupted run of the same spec elsewhere
big_ref = write_job(os.path.join(d, "big_ref.json"), [{"name": "a", "kind": "cm", "input": "big.h5", "bootstrap": 0}],
                    output_dir="out_big_ref", seed=2)
code, _, err = run(["run", big_ref])
check(code == 0, f"the reference of the full-disk and size-limit runs ({err[-200:]})")
fs = os.path.join(d, "fs")
why = try_mount(fs, "4m")
if why:
    print(f"SKIP (part): the full-disk cases need a tmpfs (run as root where mounting is permitted): {why}")
else:
    try:
        jd = write_job(os.path.join(d, "disk.json"), [{"name": "a", "kind": "cm", "input": "big.h5",
                                                        "bootstrap": 0}], output_dir=fs, seed=1)
        code, _, err = run(["run", jd])
        check(code == 0, f"full disk: the earlier outputs ({err[-200:]})")
        old = snapshot(fs)
        ref_size = len(old["a.h5"])
        jd2 = write_job(os.path.join(d, "disk2.json"), [{"name": "a", "kind": "cm", "input": "big.h5",
                                                         "bootstrap": 0}], output_dir=fs, seed=2)
        seen = {"dataset": 0, "close": 0, "report": 0, "ok": 0}
        close_free = None
        # free space from short of the new .h5 to enough for everything, a page at a time: every stage of
        # the write fails somewhere in the range (a dataset, the metadata written when the file is closed,
        # the report), and a run with enough space succeeds
        page = os.sysconf("SC_PAGE_SIZE")
        for free in [ref_size // 2] + list(range(ref_size - 6 * page, ref_size + 6 * page, page)):
            got = fill_to(fs, free)
            code, _, err = run(["run", jd2, "--force"])
            now = snapshot(fs)
            now.pop("filler", None)
            if code == 0:
                seen["ok"] += 1
                seed = load_report(os.path.join(fs, "a.json"))["rmdiag"]["seed"]
                check(sorted(now) == ["a.h5", "a.json"] and seed == 2, f"free {got}: a run that ends well has replaced "
                      "both files")
                # back to the old outputs for the next try
                for n, b in old.items():
                    with open(os.path.join(fs, n), "wb") as f:
                        f.write(b)
                continue
            stage = ("dataset" if "cannot write output dataset" in err else
                     "close" if "cannot write the output HDF5 file" in err else
                     "report" if ".a.json.tmp." in err else "?")
            seen[stage] = seen.get(stage, 0) + 1
            if stage == "close":
                close_free = free
            check(code == 1 and "no space left on device" in err and stage != "?",
                  f"free {got}: exit 1 naming the file and the cause, got {code}: {err[-300:]}")
            check(now == {k: v for k, v in old.items()}, f"free {got}: the old outputs intact, nothing else left: "
                  f"{sorted(now)}")
        print("full disk, failures by stage:", seen)
        # (with 4 KiB pages every stage has a free space where it is the first to fail; larger pages may
        # hide the metadata written at close and the report behind the datasets)
        check(seen["dataset"] > 0 and seen["ok"] > 0 and (page != 4096 or (seen["close"] > 0 and seen["report"] > 0)),
              f"every stage failed somewhere in the range, and enough space succeeded: {seen}")
        # the close case under mpiexec (the crash was in MPI_Finalize)
        if close_free is not None:
            fill_to(fs, close_free)
            code, _, err = run(["run", jd2, "--force"], ranks=2, env=MPI_ENV)
            check(code == 1 and "cannot write the output HDF5 file: no space left on device" in err,
                  f"2 ranks: a full disk when the .h5 is closed ends with exit 1: {code} {err[-300:]}")
            now = snapshot(fs)
            now.pop("filler", None)
            check(now == old, f"2 ranks: the old outputs intact, nothing else left: {sorted(now)}")
        # with room again, --resume (--force: the old outputs are another spec's) makes the reports of an
        # uninterrupted run
        os.remove(os.path.join(fs, "filler"))
        code, _, err = run(["run", jd2, "--resume", "--force"])
        check(code == 0 and sorted(outputs_in(fs)) == ["a.h5", "a.json"], f"full disk, then room: {code} {err[-200:]}")
        diff = same_outputs(fs, os.path.join(d, "out_big_ref"), ["a"])
        check(diff is None, f"full disk, then room: the reports of an uninterrupted run ({diff})")
        # a read-only folder takes no lock: a run whose jobs are up to date still works there
        if subprocess.run(["mount", "-o", "remount,ro", fs]).returncode == 0:
            code, _, err = run(["run", jd2, "--resume"])
            check(code == 0 and "a is up to date" in err, f"read-only folder, everything up to date: {code} {err}")
            code, _, err = run(["run", jd2, "--force"])
            check(code == 1 and "Read-only file system" in err, f"read-only folder, a job to write: {code} {err}")
    finally:
        subprocess.run(["umount", fs])

# ---- the file size limit (ulimit -f) ----------------------------------------------------------------------
lim_dir = os.path.join(d, "out_limit")
jl = write_job(os.path.join(d, "limit.json"), [{"name": "a", "kind": "cm", "input": "big.h5", "bootstrap": 0}],
               output_dir="out_limit", seed=1)
code, _, err = run(["run", jl])
check(code == 0, f"file size limit: the earlier outputs ({err[-200:]})")
old = snapshot(lim_dir)
h5_size = len(old["a.h5"])
jl2 = write_job(os.path.join(d, "limit2.json"), [{"name": "a", "kind": "cm", "input": "big.h5", "bootstrap": 0}],
                output_dir="out_limit", seed=2)


def run_limited(args, limit):
    """A plain process (under mpiexec, Open MPI's shared-memory transport itself needs files larger than
    such a limit)."""
    p = subprocess.run([RMDIAG] + args, capture_output=True, text=True, timeout=300,
                       preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit)))
    return p.returncode, p.stderr


stages = set()
for limit in (h5_size // 2, h5_size - 1500, h5_size - 1):
    code, err = run_limited(["run", jl2, "--force"], limit)
    stages.add("dataset" if "cannot write output dataset" in err else "close" if "output HDF5 file" in err else "?")
    check(code == 1 and "file size limit exceeded" in err and ".a.h5.tmp." in err,
          f"limit {limit}: exit 1 naming the file and the cause (not SIGXFSZ): {code} {err[-300:]}")
    check(snapshot(lim_dir) == old, f"limit {limit}: the old outputs intact, nothing left: {outputs_in(lim_dir)}")
check(stages == {"dataset", "close"}, f"the limit was hit in a dataset write and when closing: {stages}")
code, err = run_limited(["run", jl2, "--force"], h5_size)
check(code == 0 and sorted(outputs_in(lim_dir)) == ["a.h5", "a.json"],
      f"a limit the outputs fit in: the run ends well ({code} {err[-200:]})")
diff = same_outputs(lim_dir, os.path.join(d, "out_big_ref"), ["a"])
check(diff is None, f"a limit the outputs fit in: the reports of an uninterrupted run ({diff})")
done()
