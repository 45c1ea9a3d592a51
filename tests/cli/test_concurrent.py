"""Two runs on one output folder. A run holds the folder's lock (.rmdiag.lock) while it runs: a
second run exits 2 at once naming the folder and the holder, or with --wait waits and then applies
the usual spec rule to what the first one wrote. The spec rule is applied again when each output is
committed: outputs that another writer put in place while a job computed (a file system where the
lock does not hold) are not replaced without --force. Nothing is left behind: no temporary, no lock
file."""
import glob
import signal
import subprocess
import threading
import time

from rdtest import *

d = scratch("concurrent")
g = np.random.default_rng(3)
users = g.integers(0, 50, 2000)
write_cm(os.path.join(d, "in.h5"), g.normal(size=(2000, 5)), g.normal(size=(2000, 5)),
         (g.random((50, 5)) < 0.5)[users].astype(np.uint8), users)
MPI_ENV = {"RMDIAG_RANKS_PER_JOB": "all"}
folder = os.path.join(d, "out")
NAMES = ("a", "b", "c")


def job(seed, boot=10000000, name="job"):
    # "a" is long (about 4 s on a fast machine): the second run starts while the first computes it
    jobs = [{"name": "a", "kind": "cm", "input": "in.h5", "bootstrap": boot},
            {"name": "b", "kind": "cm", "input": "in.h5", "bootstrap": 10},
            {"name": "c", "kind": "cm", "input": "in.h5", "bootstrap": 0}]
    return write_job(os.path.join(d, f"{name}{seed}.json"), jobs, output_dir="out", seed=seed)


def start(args, ranks=0):
    cmd = ([MPIEXEC, "-n", str(ranks)] if ranks else []) + [RMDIAG] + args
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, **MPI_ENV))


def wait_computing(p):
    """Until the run writes its first temporary .h5 (it holds the lock from its start)."""
    t0 = time.time()
    while time.time() - t0 < 60 and p.poll() is None and not glob.glob(os.path.join(folder, ".a.h5.tmp.*")):
        time.sleep(0.01)
    return p.poll() is None


def seeds_in_folder():
    return {n: load_report(os.path.join(folder, n + ".json"))["rmdiag"]["seed"] for n in NAMES
            if os.path.exists(os.path.join(folder, n + ".json"))}


def clean_folder(what):
    left = [n for n in outputs_in(folder) if n.startswith(".")]
    check(left == [], f"{what}: no temporary and no lock file left: {left}")


def finish(p, what):
    try:
        out, err = p.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        check(False, f"{what}: did not end")
    return p.returncode, err


# 1. the audit's case: A (--force) computing, B (another seed, no --force) 0.3 s later: B stops at once
shutil.rmtree(folder, ignore_errors=True)
a = start(["run", job(1), "--force"])
check(wait_computing(a), "1: the first run is computing")
time.sleep(0.3)
check(a.poll() is None, "1: ... and still computing when the second run starts")
t0 = time.time()
code, _, err = run(["run", job(2)])
took = time.time() - t0
check(code == 2 and f"{folder}: another rmdiag run is writing to this output folder (host " in err and
      f"pid {a.pid})" in err and "--wait" in err,
      f"1: the second run exits 2 naming the folder and the holder: {code} {err}")
check(took < 20, f"1: ... at once ({took:.1f} s)")
code, err = finish(a, "1: the first run")
check(code == 0, f"1: the first run ends well: {code} {err[-300:]}")
check(seeds_in_folder() == {"a": 1, "b": 1, "c": 1}, f"1: every report is the first run's: {seeds_in_folder()}")
clean_folder("1")

# 2. --wait --force on 2 ranks while a 2-rank run computes: waits, then replaces the outputs
a = start(["run", job(3), "--force"], ranks=2)
check(wait_computing(a), "2: the first run is computing")
b = start(["run", job(4), "--force", "--wait"], ranks=2)
code_a, err_a = finish(a, "2: the first run")
t_a = time.time()
code_b, err_b = finish(b, "2: the waiting run")
check(code_a == 0, f"2: the first run ends well: {err_a[-300:]}")
check(code_b == 0 and "waiting for it to end (--wait)" in err_b, f"2: the waiting run says so and ends well: "
      f"{code_b} {err_b[-400:]}")
check(seeds_in_folder() == {"a": 4, "b": 4, "c": 4}, f"2: the waiting run replaced the outputs: {seeds_in_folder()}")
check(os.stat(os.path.join(folder, "c.json")).st_mtime > t_a - 5, "2: ... after the first run ended")
clean_folder("2")

# 3. --wait without --force: after the first run the outputs are of another spec: exit 2, nothing replaced
a = start(["run", job(5), "--force"])
check(wait_computing(a), "3: the first run is computing")
b = start(["run", job(6), "--wait"])
code_a, _ = finish(a, "3: the first run")
code_b, err_b = finish(b, "3: the waiting run")
check(code_a == 0 and code_b == 2 and "made from a different job spec" in err_b,
      f"3: the waiting run applies the spec rule to the new outputs: {code_a} {code_b} {err_b[-300:]}")
check(seeds_in_folder() == {"a": 5, "b": 5, "c": 5}, f"3: the first run's outputs stand: {seeds_in_folder()}")
clean_folder("3")

# 4. a waiting run stopped by SIGTERM leaves nothing and does not disturb the running one. The signal
# goes when the second run says it waits, not after a fixed time (on a fast machine the first run could
# be done by then), and the first run's long job makes sure it is still computing at that moment.
a = start(["run", job(7), "--force"])
check(wait_computing(a), "4: the first run is computing")
b = start(["run", job(8), "--force", "--wait"])
said, waiting = [], threading.Event()


def read_err():
    for line in b.stderr:
        said.append(line)
        if "waiting for it to end (--wait)" in line:
            waiting.set()


reader = threading.Thread(target=read_err)
reader.start()
check(waiting.wait(60), f"4: the second run says it waits: {''.join(said)[-300:]}")
check(a.poll() is None, "4: ... while the first run still computes")
b.send_signal(signal.SIGTERM)
b.wait(300)
reader.join()
code_b, err_b = b.returncode, "".join(said)
code_a, _ = finish(a, "4: the first run")
check(code_b == -signal.SIGTERM and code_a == 0, f"4: the waiting run ends on SIGTERM, the first ends well: "
      f"{code_b} {code_a} {err_b[-200:]}")
check(seeds_in_folder() == {"a": 7, "b": 7, "c": 7}, f"4: the first run's outputs: {seeds_in_folder()}")
clean_folder("4")

# 5. the spec rule again at commit: outputs of another spec put in place while "a" computes (as a run on a
# file system without locks would) are not replaced without --force; the job fails, the others finish
other = os.path.join(d, "other")
code, _, err = run(["run", write_job(os.path.join(d, "other.json"), [{"name": "a", "kind": "cm", "input": "in.h5",
                                                                       "bootstrap": 5}], output_dir="other", seed=99)])
check(code == 0, f"5: outputs of another spec ({err[-200:]})")
for force in (False, True):
    shutil.rmtree(folder, ignore_errors=True)
    a = start(["run", job(9)] + (["--force"] if force else []))
    check(wait_computing(a), f"5: the run is computing (--force {force})")
    for ext in (".json", ".h5"):
        shutil.copyfile(os.path.join(other, "a" + ext), os.path.join(folder, "a" + ext))
    planted = {n: open(os.path.join(folder, n), "rb").read() for n in ("a.json", "a.h5")}
    code, err = finish(a, "5: the run")
    if force:
        check(code == 0 and seeds_in_folder() == {"a": 9, "b": 9, "c": 9}, f"5: --force replaces them: {code} {err}")
    else:
        check(code == 1 and "a.json changed while this job ran: another run wrote it from a different job spec" in err
              and "nothing was replaced" in err, f"5: the job fails naming the file: {code} {err[-500:]}")
        check({n: open(os.path.join(folder, n), "rb").read() for n in ("a.json", "a.h5")} == planted,
              "5: the outputs another run wrote are untouched")
        check(seeds_in_folder() == {"a": 99, "b": 9, "c": 9}, f"5: the other jobs finished: {seeds_in_folder()}")
        code, _, err = run(["run", job(9), "--resume"])
        check(code == 2 and "a.json exists and was made from a different job spec" in err,
              f"5: --resume applies the rule at start-up: {code} {err[-300:]}")
    clean_folder(f"5 (--force {force})")
done()
