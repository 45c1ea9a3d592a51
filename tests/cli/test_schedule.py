"""Jobs scheduled onto rank groups. A file of many small jobs of every kind, run on 2, 3 and 4 ranks with
the planner free to cut the ranks into groups (RMDIAG_RANKS_PER_JOB=auto), gives every report (result
and .h5 bytes) and the whole stdout identical to a plain process running the jobs one after another.
--plan prints the groups and the order and writes nothing. A job that fails at run time does not stop
the others: the run finishes them, names the failed job, exits 1, and --resume reruns only it. Every
input is still checked before any job computes (exit 2, nothing written)."""
import os
import shutil

from rdtest import *

d = scratch("schedule")
AUTO = {"RMDIAG_RANKS_PER_JOB": "auto"}
rng = np.random.default_rng(5)

# cm: small and large inputs (the planner sees different costs)
for name, P, R in (("cm_small.h5", 300, 6), ("cm_big.h5", 6000, 12)):
    users = rng.integers(0, 40, P)
    flags = (rng.random((40, R)) < 0.7).astype(np.uint8)[users]
    rc = rng.normal(0.5, 1, (P, R))
    write_cm(os.path.join(d, name), rc, rng.normal(0, 1, (P, R)), flags, users)
# probe: two small tasks
with h5py.File(os.path.join(d, "probe.h5"), "w") as f:
    for t in ("a", "b"):
        lab = rng.integers(0, 2, 400).astype(np.int32)
        f[f"probe/{t}/X"] = (rng.normal(0, 1, (400, 16)) + lab[:, None]).astype(np.float32)
        f[f"probe/{t}/label"] = lab
        f[f"probe/{t}/split"] = rng.choice(3, 400, p=[0.7, 0.15, 0.15]).astype(np.uint8)

jobs = []
for i in range(10):
    jobs.append({"name": f"cm-s{i}", "kind": "cm", "input": "cm_small.h5", "bootstrap": 200 + 10 * i})
for i in range(3):
    jobs.append({"name": f"cm-b{i}", "kind": "cm", "input": "cm_big.h5", "bootstrap": 300})
for i in range(4):
    jobs.append({"name": f"probe{i}", "kind": "probe", "input": "probe.h5", "lr_grid": [1e-2, 1e-3],
                 "seeds": [i], "kmeans": False, "tasks": {"a": {"classes": [[0], [1]]}, "b": {"classes": [[0], [1]]}}})


def outputs(folder):
    got = {}
    for j in jobs:
        rep = load_report(os.path.join(d, folder, j["name"] + ".json"))
        with open(os.path.join(d, folder, j["name"] + ".h5"), "rb") as f:
            got[j["name"]] = (json.dumps(rep["result"], sort_keys=True), f.read())
    return got


jp = write_job(os.path.join(d, "plain.json"), jobs, output_dir="out_plain", seed=7)
code, ref_out, err = run(["run", jp])
check(code == 0, f"plain process: exit {code} ({err[-300:]})")
ref = outputs("out_plain")

for ranks in (2, 3, 4):
    jp = write_job(os.path.join(d, f"r{ranks}.json"), jobs, output_dir=f"out_{ranks}", seed=7)
    code, out, err = run(["run", jp, "--plan"], ranks=ranks, env=AUTO)
    check(code == 0 and "groups:" in out and f"on {ranks} ranks" in out and "cm-b0" in out,
          f"{ranks} ranks: --plan prints the groups and the order ({code}: {out[:400]} {err[-200:]})")
    check(not os.path.exists(os.path.join(d, f"out_{ranks}")), f"{ranks} ranks: --plan writes nothing")
    if ranks == 4:
        check("groups of" in out, f"4 ranks and 17 small jobs: the planner cuts the ranks into groups ({out[:300]})")
    code, out, err = run(["run", jp], ranks=ranks, env=AUTO)
    check(code == 0, f"{ranks} ranks: exit {code} ({err[-300:]})")
    got = outputs(f"out_{ranks}")
    for j in jobs:
        n = j["name"]
        check(got[n][0] == ref[n][0], f"{ranks} ranks: {n} result identical to the plain process")
        check(got[n][1] == ref[n][1], f"{ranks} ranks: {n} .h5 bytes identical to the plain process")
    check(out == ref_out, f"{ranks} ranks: stdout (every job's table, in job-file order) identical to the plain process")
    check(f"[{len(jobs)}/{len(jobs)} jobs" in err, f"{ranks} ranks: progress covers the whole file ({err[-400:]})")

# Groups wider than one rank (2 ranks per job: on 3 ranks one group of 3, on 4 ranks two groups of 2).
for ranks in (3, 4):
    jp = write_job(os.path.join(d, f"w2_{ranks}.json"), jobs, output_dir=f"out_w2_{ranks}", seed=7)
    code, out, err = run(["run", jp, "--plan", "--ranks-per-job", "2"], ranks=ranks)
    want = "one group of all 3 ranks" if ranks == 3 else "2 groups of 2 ranks"
    check(code == 0 and want in out, f"{ranks} ranks, 2 per job: {want} ({out[:300]})")
    code, out, err = run(["run", jp, "--ranks-per-job", "2"], ranks=ranks)
    check(code == 0 and "on 2 ranks" in err if ranks == 4 else code == 0, f"{ranks} ranks, 2 per job: exit {code} ({err[-300:]})")
    got = outputs(f"out_w2_{ranks}")
    check(all(got[j["name"]] == ref[j["name"]] for j in jobs), f"{ranks} ranks, 2 per job: every report identical to the plain process")
    check(out == ref_out, f"{ranks} ranks, 2 per job: stdout identical to the plain process")
code, out, err = run(["run", jp, "--ranks-per-job", "0"], ranks=2)
check(code == 2 and "--ranks-per-job must be a positive integer, all or auto" in err, f"--ranks-per-job 0: {code} {err}")

# Two tiers: one job much larger than the others runs on a wide group while single ranks take the rest.
P2, R2 = 120000, 20
u2 = rng.integers(0, 500, P2)
write_cm(os.path.join(d, "cm_huge.h5"), rng.normal(0.5, 1, (P2, R2)), rng.normal(0, 1, (P2, R2)),
         (rng.random((500, R2)) < 0.7).astype(np.uint8)[u2], u2)
mix = [{"name": "huge", "kind": "cm", "input": "cm_huge.h5", "bootstrap": 0}] + jobs[:10]
jp = write_job(os.path.join(d, "mix_plain.json"), mix, output_dir="out_mix_plain", seed=7)
code, mix_out, err = run(["run", jp])
check(code == 0, f"mixed file, plain process: exit {code} ({err[-200:]})")
jp = write_job(os.path.join(d, "mix4.json"), mix, output_dir="out_mix4", seed=7)
code, out, err = run(["run", jp, "--plan"], ranks=4, env=AUTO)
check(code == 0 and "for the 1 largest job" in out and "single ranks for the others" in out,
      f"one large job among small ones: a wide group for it, single ranks for the rest ({out[:400]})")
code, out, err = run(["run", jp], ranks=4, env=AUTO)
check(code == 0 and "huge (cm) done" in err and "huge (cm) done in" in err and " on 1 rank" in err,
      f"mixed file on 4 ranks: exit {code} ({err[-300:]})")
check(any(l.startswith("rmdiag: huge (cm) done") and " on 1 rank " not in l for l in err.splitlines()),
      f"the large job ran on a wide group ({[l for l in err.splitlines() if 'huge' in l]})")
check(out == mix_out, "mixed file: stdout identical to the plain process")
for j in mix:
    for ext in (".json", ".h5"):
        a_ = os.path.join(d, "out_mix_plain", j["name"] + ext)
        b_ = os.path.join(d, "out_mix4", j["name"] + ext)
        if ext == ".json":
            check(load_report(a_)["result"] == load_report(b_)["result"], f"mixed file: {j['name']} result identical")
        else:
            with open(a_, "rb") as f1, open(b_, "rb") as f2:
                check(f1.read() == f2.read(), f"mixed file: {j['name']} .h5 identical")

# A job that fails at run time (its report cannot be written): the others finish, it is named, exit 1;
# --resume then reruns only it.
jp = write_job(os.path.join(d, "fault.json"), jobs, output_dir="out_fault", seed=7)
for ranks in (0, 3):
    shutil.rmtree(os.path.join(d, "out_fault"), ignore_errors=True)
    code, out, err = run(["run", jp, "--force"], ranks=ranks, env=dict(AUTO, RMDIAG_FAULT="commit:cm-s3"))
    check(code == 1, f"{ranks} ranks: a failed job makes the run exit 1 (got {code})")
    check("job cm-s3 failed" in err and "injected fault" in err and "--resume reruns only the failed one" in err,
          f"{ranks} ranks: the failed job is named ({err[-500:]})")
    names = set(os.listdir(os.path.join(d, "out_fault")))
    check("cm-s3.json" not in names and "cm-s3.h5" not in names, f"{ranks} ranks: nothing of the failed job is left")
    check(not any(".tmp." in n for n in names), f"{ranks} ranks: no temporary file is left ({sorted(names)[:5]})")
    others = [j["name"] for j in jobs if j["name"] != "cm-s3"]
    check(all(f"{n}.json" in names and f"{n}.h5" in names for n in others), f"{ranks} ranks: every other job finished")
    code, out, err = run(["run", jp, "--resume"], ranks=ranks, env=AUTO)
    check(code == 0 and "cm-s3 (cm) done" in err and err.count("is up to date") == len(jobs) - 1,
          f"{ranks} ranks: --resume reruns only the failed job ({code}: {err[-400:]})")
    got = outputs("out_fault")
    check(all(got[j["name"]] == ref[j["name"]] for j in jobs), f"{ranks} ranks: after --resume every report equals the plain run's")

# Every input is checked before any job computes, on the groups too: a bad value in the last job
# (NaN reward) is exit 2 and nothing is written.
bad = os.path.join(d, "cm_bad.h5")
shutil.copy(os.path.join(d, "cm_small.h5"), bad)
with h5py.File(bad, "r+") as f:
    v = f["cm/reward_chosen"][...]
    v[120, 2] = np.nan
    f["cm/reward_chosen"][...] = v
jobs_bad = jobs + [{"name": "last-bad", "kind": "cm", "input": "cm_bad.h5", "bootstrap": 10}]
msgs = []
for ranks in (0, 3, 4):
    folder = f"out_bad{ranks}"
    jp = write_job(os.path.join(d, f"bad{ranks}.json"), jobs_bad, output_dir=folder, seed=7)
    code, out, err = run(["run", jp], ranks=ranks, env=AUTO)
    check(code == 2 and "/cm/reward_chosen[120, 2] = nan" in err, f"{ranks} ranks: bad input found first, exit 2 ({code}: {err[-300:]})")
    check(not os.path.exists(os.path.join(d, folder)), f"{ranks} ranks: nothing written")
    msgs.append([l for l in err.splitlines() if l.startswith("rmdiag: error:")])
check(msgs[0] == msgs[1] == msgs[2], f"the same message for every rank count: {msgs}")
done()
