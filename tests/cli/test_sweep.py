"""Sweeps: a job with "sweep": {KEY: [values...]} expands into one job per combination, named
NAME.KEY-I... (I the value's position, the first key varying slowest); each is a job like any other
(its report equals that of the same job written by hand), and NAME.summary.json gives, per headline
number, the mean, sd and 95 % t-interval across the seeds, one group per combination of the other
keys (checked here against numpy and Student-t quantiles from a table). Validation, --resume and the
scheduler treat the expanded jobs like any other."""
import math
import os
import shutil

from rdtest import *

d = scratch("sweep")
rng = np.random.default_rng(3)
with h5py.File(os.path.join(d, "probe.h5"), "w") as f:
    for t in ("a", "b"):
        lab = rng.integers(0, 2, 300).astype(np.int32)
        f[f"probe/{t}/X"] = (rng.normal(0, 1, (300, 12)) + 0.7 * lab[:, None]).astype(np.float32)
        f[f"probe/{t}/label"] = lab
        f[f"probe/{t}/split"] = rng.choice(3, 300, p=[0.7, 0.15, 0.15]).astype(np.uint8)
P, R = 400, 5
users = rng.integers(0, 30, P)
write_cm(os.path.join(d, "cm.h5"), rng.normal(0.4, 1, (P, R)), rng.normal(0, 1, (P, R)),
         (rng.random((30, R)) < 0.6).astype(np.uint8)[users], users)

base = {"kind": "probe", "input": "probe.h5", "lr_grid": [1e-2, 1e-3], "kmeans": False,
        "tasks": {"a": {"classes": [[0], [1]]}, "b": {"classes": [[0], [1]]}}}
sweep_job = dict(base, name="pr", sweep={"seed": [11, 12, 13], "init": ["kaiming", "zeros"]})
jobs = [sweep_job, {"name": "c", "kind": "cm", "input": "cm.h5", "sweep": {"seed": [1, 2]}}]
jp = write_job(os.path.join(d, "sweep.json"), jobs, output_dir="out", seed=9)
code, out, err = run(["run", jp])
check(code == 0, f"sweep run: exit {code} ({err[-300:]})")
names = [f"pr.seed-{s}.init-{i}" for s in range(3) for i in range(2)]
for n in names + ["c.seed-0", "c.seed-1"]:
    check(os.path.exists(os.path.join(d, "out", n + ".json")) and os.path.exists(os.path.join(d, "out", n + ".h5")),
          f"job {n} written")
rep = load_report(os.path.join(d, "out", "pr.seed-1.init-1.json"))
check(rep["rmdiag"]["seed"] == 12 and rep["rmdiag"]["options"]["init"] == "zeros",
      f"a swept job carries its seed and its value ({rep['rmdiag']['seed']}, {rep['rmdiag']['options'].get('init')})")
check("pr.summary" in err and "c.summary" in err, f"summaries announced ({err[-300:]})")

# the same jobs written by hand (same names, seeds and options) give the same reports
hand = [dict(base, name=f"pr.seed-{s}.init-{i}", seed=[11, 12, 13][s], init=["kaiming", "zeros"][i])
        for s in range(3) for i in range(2)]
jh = write_job(os.path.join(d, "hand.json"), hand, output_dir="out_hand", seed=9)
code, _, err = run(["run", jh])
check(code == 0, f"hand-written jobs: exit {code} ({err[-200:]})")
for n in names:
    a = load_report(os.path.join(d, "out", n + ".json"))
    b = load_report(os.path.join(d, "out_hand", n + ".json"))
    check(a["result"] == b["result"], f"{n}: the swept job's result equals the hand-written job's")
    with open(os.path.join(d, "out", n + ".h5"), "rb") as f1, open(os.path.join(d, "out_hand", n + ".h5"), "rb") as f2:
        check(f1.read() == f2.read(), f"{n}: .h5 bytes equal the hand-written job's")

# the summary against numpy: mean, sd (n - 1) and mean +- t(0.975, n - 1) sd / sqrt(n)
T975 = {1: 12.706204736174707, 2: 4.302652729911275}  # Student t quantiles (table values)
summ = load_report(os.path.join(d, "out", "pr.summary.json"))
check(summ["rmdiag"]["job"] == "pr.summary" and summ["rmdiag"]["kind"] == "probe", "summary envelope: job and kind")
res = summ["result"]
check(res["sweep"]["summarized_over"] == "seed" and res["sweep"]["keys"] == sweep_job["sweep"], "summary: the sweep")
check([g["values"] for g in res["groups"]] == [{"init": "kaiming"}, {"init": "zeros"}], f"one group per init: {res['groups']}")
for gi, g in enumerate(res["groups"]):
    members = [f"pr.seed-{s}.init-{gi}" for s in range(3)]
    check(g["jobs"] == members, f"group {gi}: its jobs {g['jobs']}")
    heads = {h["name"]: h for h in g["headlines"]}
    check(set(heads) >= {"tasks.a.accuracy_mean", "tasks.b.accuracy_mean", "average"}, f"headlines: {sorted(heads)}")
    for name, key in (("tasks.a.accuracy_mean", ("a",)), ("tasks.b.accuracy_mean", ("b",)), ("average", None)):
        vals = []
        for m in members:
            r = load_report(os.path.join(d, "out", m + ".json"))["result"]
            vals.append(r["tasks"][key[0]]["accuracy_mean"] if key else r["average"])
        h = heads[name]
        v = np.array(vals)
        check(h["values"] == vals and h["n"] == 3, f"group {gi} {name}: values {h['values']} vs {vals}")
        close(h["mean"], v.mean(), f"group {gi} {name}: mean", rel=1e-12)
        close(h["sd"], v.std(ddof=1), f"group {gi} {name}: sd", rel=1e-9, abs_=1e-15)
        half = T975[2] * v.std(ddof=1) / math.sqrt(3)
        close(h["ci95"][0] if h["ci95"] else None, v.mean() - half if half > 0 else v.mean(), f"group {gi} {name}: ci lo",
              rel=1e-9, abs_=1e-14)
        close(h["ci95"][1] if h["ci95"] else None, v.mean() + half if half > 0 else v.mean(), f"group {gi} {name}: ci hi",
              rel=1e-9, abs_=1e-14)
check(any(h["sd"] and h["sd"] > 0 for g in res["groups"] for h in g["headlines"]),
      "the seeds make a difference somewhere (the summary is not trivially constant)")
cs = load_report(os.path.join(d, "out", "c.summary.json"))["result"]
h = {x["name"]: x for x in cs["groups"][0]["headlines"]}
check(h["cm.mean"]["n"] == 2 and h["cm.mean"]["sd"] == 0, f"cm summary over 2 seeds: {h.get('cm.mean')}")

# on 3 ranks with the scheduler: the same reports and the same summary (but the envelope's timing)
jp3 = write_job(os.path.join(d, "sweep3.json"), jobs, output_dir="out3", seed=9)
code, _, err = run(["run", jp3], ranks=3, env={"RMDIAG_RANKS_PER_JOB": "auto"})
check(code == 0, f"3 ranks: exit {code} ({err[-300:]})")
for n in ("pr.summary", "c.summary"):
    a = load_report(os.path.join(d, "out", n + ".json"))
    b = load_report(os.path.join(d, "out3", n + ".json"))
    check(a["result"] == b["result"] and a["rmdiag"]["spec_sha256"] == b["rmdiag"]["spec_sha256"],
          f"{n}: identical on 3 ranks")

# --resume: every job up to date; the summaries are written again, the same
code, _, err = run(["run", jp, "--resume"])
check(code == 0 and err.count("is up to date") == 8 and "pr.summary" in err, f"--resume: {code} {err[-300:]}")
check(load_report(os.path.join(d, "out", "pr.summary.json"))["result"] == res, "--resume: the same summary")

# a sweep job that fails: its summary is not written, the other sweep's is
jf = write_job(os.path.join(d, "fail.json"), jobs, output_dir="out_fail", seed=9)
code, _, err = run(["run", jf], env={"RMDIAG_FAULT": "commit:pr.seed-1.init-0"})
check(code == 1 and "pr.summary not written: job pr.seed-1.init-0" in err, f"failed member: {code} {err[-400:]}")
check(not os.path.exists(os.path.join(d, "out_fail", "pr.summary.json")) and
      os.path.exists(os.path.join(d, "out_fail", "c.summary.json")), "only the complete sweep is summarized")

# errors: exit 2, nothing written, the job and key named
for tag, job, want in (
        ("both", dict(base, name="x", seed=3, sweep={"seed": [1, 2]}), '"seed" is both given and swept'),
        ("empty", dict(base, name="x", sweep={"seed": []}), '"sweep"."seed" must be a non-empty list'),
        ("twice", dict(base, name="x", sweep={"seed": [1, 1]}), '"sweep"."seed" lists a value twice'),
        ("notobj", dict(base, name="x", sweep=[1, 2]), '"sweep" must be an object'),
        ("unknown", dict(base, name="x", sweep={"bootstrap": [1, 2]}), 'jobs[0] ("x.bootstrap-0"): unknown key "bootstrap"'),
        ("name", dict(base, name="x", sweep={"name": ["a"]}), '"name" cannot be swept'),
        ("badvalue", dict(base, name="x", sweep={"init": ["kaiming", "ones"]}), 'jobs[0] ("x.init-1")')):
    j = write_job(os.path.join(d, f"bad_{tag}.json"), [job], output_dir=f"out_bad_{tag}")
    code, _, err = run(["validate", j])
    check(code == 2 and want in err, f"{tag}: exit {code}, message should contain {want!r}: {err.strip()[-300:]}")
    code, _, err = run(["run", j])
    check(code == 2 and not os.path.exists(os.path.join(d, f"out_bad_{tag}")), f"{tag}: run exits 2, writes nothing")
clash = write_job(os.path.join(d, "clash.json"), [dict(base, name="x", sweep={"seed": [1]}),
                                                    dict(base, name="x.summary")], output_dir="out_clash")
code, _, err = run(["validate", clash])
check(code == 2 and 'has the name of the summary of the sweep of jobs[0]' in err, f"summary name clash: {code} {err}")
done()
