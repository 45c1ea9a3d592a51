"""Outputs: spec_sha256 in both files and stable; --resume skips a job made from the same spec;
a changed input or option changes the spec; SIGTERM (preemption) leaves no half-written output,
as a plain process and under mpiexec; progress lines appear on stderr for long work."""
import signal
import subprocess
import time

from rdtest import *

d = scratch("outputs")
rng = np.random.default_rng(2)
P, R = 2000, 5
users = rng.integers(0, 50, P)
flags = (rng.random((50, R)) < 0.5)[users].astype(np.uint8)
write_cm(os.path.join(d, "in.h5"), rng.normal(size=(P, R)), rng.normal(size=(P, R)), flags, users)
jp = write_job(os.path.join(d, "job.json"), [{"name": "a", "kind": "cm", "input": "in.h5", "bootstrap": 50},
                                             {"name": "b", "kind": "cm", "input": "in.h5", "bootstrap": 0}], seed=3)
code, _, err = run(["run", jp])
check(code == 0, f"first run ({err})")
ra = load_report(os.path.join(d, "out", "a.json"))
spec = ra["rmdiag"]["spec_sha256"]
with h5py.File(os.path.join(d, "out", "a.h5")) as f:
    check(f.attrs["spec_sha256"] == spec, "the .h5 carries the same spec_sha256")
check(len(spec) == 64 and spec != load_report(os.path.join(d, "out", "b.json"))["rmdiag"]["spec_sha256"],
      "jobs with different options have different specs")
mtimes = {n: os.stat(os.path.join(d, "out", n)).st_mtime_ns for n in outputs_in(os.path.join(d, "out"))}
code, _, err = run(["run", jp, "--resume"], ranks=2)
check(code == 0 and err.count("is up to date (same spec), skipped") == 2, f"--resume skips both jobs: {err}")
check({n: os.stat(os.path.join(d, "out", n)).st_mtime_ns for n in outputs_in(os.path.join(d, "out"))} == mtimes,
      "skipped outputs untouched")
code, _, err = run(["run", jp])
check(code == 0 and load_report(os.path.join(d, "out", "a.json"))["rmdiag"]["spec_sha256"] == spec,
      "same spec without --resume recomputes, same spec_sha256")
os.remove(os.path.join(d, "out", "b.json"))
code, _, err = run(["run", jp, "--resume"])
check(code == 0 and "a is up to date" in err and "b (cm) done" in err, f"--resume redoes only the job without a report: {err}")
os.utime(os.path.join(d, "in.h5"), None)                       # a newer input: a new spec
code, _, err = run(["run", jp, "--resume"])
check(code == 2 and "made from a different job spec" in err, f"touched input -> different spec, refused: {err}")
code, _, err = run(["run", jp, "--resume", "--force"])
check(code == 0 and load_report(os.path.join(d, "out", "a.json"))["rmdiag"]["spec_sha256"] != spec, "--force rewrites")
jp2 = write_job(os.path.join(d, "job2.json"), [{"name": "a", "kind": "cm", "input": "in.h5", "bootstrap": 50}], seed=4)
code, _, err = run(["run", jp2])
check(code == 2 and "a.json exists and was made from a different job spec" in err, "another seed is another spec")

# SIGTERM in the middle of a long job: no .json, no .h5, no temporary file.
jp3 = write_job(os.path.join(d, "long.json"), [{"name": "long", "kind": "cm", "input": "in.h5",
                                                "bootstrap": 10000000}], output_dir="out_long")
for ranks in (0, 2):
    cmd = [RMDIAG, "run", jp3, "--force"]
    if ranks:
        cmd = [MPIEXEC, "-n", str(ranks)] + cmd
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    folder = os.path.join(d, "out_long")
    t0 = time.time()
    while time.time() - t0 < 30 and not any(".tmp." in n for n in outputs_in(folder)):
        time.sleep(0.05)
    check(any(".tmp." in n for n in outputs_in(folder)), f"{ranks} ranks: the job started writing its temporary .h5")
    time.sleep(0.3)
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        check(False, f"{ranks} ranks: SIGTERM did not stop the job")
    time.sleep(0.5)
    check(p.returncode != 0, f"{ranks} ranks: interrupted job reports failure ({p.returncode})")
    check(not os.path.exists(folder), f"{ranks} ranks: nothing left after SIGTERM, not even the folder the run "
          f"made: {outputs_in(folder)}")

# progress lines on stderr (not a terminal) for work longer than the interval
jp4 = write_job(os.path.join(d, "prog.json"), [{"name": "prog", "kind": "cm", "input": "in.h5",
                                                "bootstrap": 400000}], output_dir="out_prog")
code, _, err = run(["run", jp4], env={"RMDIAG_PROGRESS_SECONDS": "0.05"})
check(code == 0 and "[rmdiag] prog: bootstrap" in err and "%" in err, f"progress lines: {err[:300]}")
code, _, err = run(["run", jp4, "--quiet", "--force"], env={"RMDIAG_PROGRESS_SECONDS": "0.05"})
check(code == 0 and err == "", f"--quiet prints nothing: {err[:200]}")
# the same on a chunked input written by the importer (MPI-IO opens it: a plain process must not print
# Open MPI's complaints about its session directory), for run and validate
csvp = os.path.join(d, "q.csv")
with open(csvp, "w") as f:
    f.write("run,pair,user,reward_chosen,reward_rejected,in_train\n")
    for r in range(2):
        for p in range(3):
            f.write(f"{r},{p},{p % 2},{p + r * 0.5},{p * 0.25},{(p + r) % 2}\n")
code, _, err = run(["import", "cm-csv", csvp, "-o", os.path.join(d, "q.h5")])
check(code == 0, f"import ({err})")
with h5py.File(os.path.join(d, "q.h5"), "r") as f:
    check(f["cm/reward_chosen"].chunks is not None, "the imported input is chunked")
jq = write_job(os.path.join(d, "q.json"), [{"name": "q", "kind": "cm", "input": "q.h5", "bootstrap": 10}],
               output_dir="out_q")
code, out, err = run(["run", jq, "--quiet"])
check(code == 0 and err == "", f"--quiet on a chunked input prints nothing on stderr: {err[:300]}")
check(out.startswith("cm q: 3 pairs, 2 users, 2 runs"), f"--quiet keeps the summary table on stdout: {out[:200]}")
code, _, err = run(["validate", jq, "--quiet"])
check(code == 0 and err == "", f"validate --quiet on a chunked input prints nothing: {err[:300]}")
# a folder where a report goes is never replaced, --force or not
jf_ = write_job(os.path.join(d, "folder.json"), [{"name": "q", "kind": "cm", "input": "q.h5", "bootstrap": 0}],
                output_dir="out_folder")
os.makedirs(os.path.join(d, "out_folder", "q.json", "inner"), exist_ok=True)
code, _, err = run(["run", jf_, "--force"])
check(code == 2 and "q.json exists and is not a file" in err, f"a folder in the way: {code} {err}")
check(sorted(os.listdir(os.path.join(d, "out_folder"))) == ["q.json"] and
      os.listdir(os.path.join(d, "out_folder", "q.json")) == ["inner"], "the folder is left as it was, nothing else written")
done()
