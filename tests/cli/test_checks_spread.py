"""The checks before a run, spread over the ranks. With several jobs each rank checks a share of them
(job i on rank i mod ranks: the layout, the spec hash, the estimate), and one exchange gives every
rank what the others found. This must not show: the error reported is the first failing job's in
job-file order, word for word the one a plain process reports, whichever rank checked it and whatever
the other ranks found (a later bad layout, a later missing file); nothing is written. The decisions on
outputs already there (write, skip with --resume, or stop) are spread the same way: the job that must
stop first in file order is the one named, and --resume skips exactly the finished jobs, whichever rank
looked at them. And what a
job's checks derived from its input (benchmark: the scheme from the input's source attribute) reaches
every rank, so the job computes the same report whichever rank checked it and whichever group runs it."""
import os

from rdtest import *
from benchutil import rb2_hand_rows

d = scratch("checks_spread")
rng = np.random.default_rng(5)


def cm_input(name, drop=None, P=400, R=6):
    path = os.path.join(d, name)
    user = np.repeat(np.arange(P // 4), 4)
    flags = np.repeat((rng.random((P // 4, R)) < 0.6).astype(np.uint8), 4, axis=0)
    rr = rng.normal(0, 1, (P, R))
    write_cm(path, rr + rng.normal(0.3, 1, (P, R)), rr, flags, user)
    if drop:
        with h5py.File(path, "a") as f:
            del f["cm/" + drop]
    return name


good = cm_input("good.h5")
no_rej = cm_input("no_rejected.h5", drop="reward_rejected")
no_user = cm_input("no_user.h5", drop="user")


def cm_job(name, inp):
    return {"name": name, "kind": "cm", "input": inp, "bootstrap": 0}


RANKS = (0, 1, 2, 3, 4)
# (what, jobs, the first failing job's words)
cases = [
    ("a bad layout on rank 2 of 3 (job 2), then a missing file and another bad layout",
     [cm_job("a", good), cm_job("b", good), cm_job("c", no_rej), cm_job("d", "missing.h5"), cm_job("e", no_user)],
     ["no_rejected.h5: dataset /cm/reward_rejected is missing"]),
    ("a missing file (job 1) before a bad layout (job 2): the inputs beyond it are not looked at",
     [cm_job("a", good), cm_job("b", "missing.h5"), cm_job("c", no_rej)],
     ['jobs[1] ("b").input', "missing.h5"]),
    ("the first failure on rank 0's share (job 3) after a later one on rank 1's (job 4)",
     [cm_job("a", good), cm_job("b", good), cm_job("c", good), cm_job("d", no_user), cm_job("e", no_rej)],
     ["no_user.h5: dataset /cm/user is missing"]),
    ("every job fails: the first",
     [cm_job("a", no_user), cm_job("b", no_rej), cm_job("c", "missing.h5")],
     ["no_user.h5: dataset /cm/user is missing"]),
]
for k, (what, jobs, words) in enumerate(cases):
    out = os.path.join(d, f"out{k}")
    jp = write_job(os.path.join(d, f"case{k}.json"), jobs, output_dir=out)
    msgs = expect_input_error(what, ["run", jp], words, ranks=RANKS, out_dir=out)
    msgs_v = expect_input_error(what + " (validate)", ["validate", jp], words, ranks=(0, 3))
    check(msgs[0] == msgs_v[0], f"{what}: run and validate give the same message ({msgs[0]!r} / {msgs_v[0]!r})")

# ---- existing outputs: decided on the rank that checked the job --------------------------------------
# Five jobs run once; then jobs 2 and 4 change (another seed), so their reports no longer match. Without
# --force every rank count names job 2's report (the first in file order, decided on rank 2 of 3 or rank 0
# of 2) and leaves every file as it was; with --resume --force the three unchanged jobs are skipped and
# only 2 and 4 rewritten; with --force alone all five are.
dec_out = os.path.join(d, "dec_out")
dec_jobs = [cm_job(f"j{i}", good) for i in range(5)]
jp = write_job(os.path.join(d, "dec.json"), dec_jobs, output_dir=dec_out)
code, _, err = run(["run", jp, "--quiet"])
check(code == 0, f"first run of the five jobs ({err.strip()[-300:]})")


def files_now():
    got = {}
    for name in sorted(os.listdir(dec_out)):
        with open(os.path.join(dec_out, name), "rb") as f:
            got[name] = (os.stat(os.path.join(dec_out, name)).st_mtime_ns, f.read())
    return got


before = files_now()
changed = [dict(j, seed=7) if i in (2, 4) else j for i, j in enumerate(dec_jobs)]
jp2 = write_job(os.path.join(d, "dec2.json"), changed, output_dir=dec_out)
msgs = expect_input_error("outputs made from other specs", ["run", jp2], ["j2.json exists and was made from a "
                          "different job spec", "--force"], ranks=(0, 2, 3, 4))
check(files_now() == before, "no file changed by the refused runs")
for ranks in (3, 2):
    if ranks == 2:  # jobs 2 and 4 back to their first spec
        code, _, err = run(["run", jp, "--quiet", "--resume", "--force"])
        check(code == 0, f"back to the first specs ({err.strip()[-300:]})")
        before = files_now()
    code, _, err = run(["run", jp2, "--quiet", "--resume", "--force"], ranks=ranks)
    check(code == 0, f"--resume --force on {ranks} ranks ({err.strip()[-300:]})")
    now = files_now()
    rewritten = sorted(n for n in now if now[n][0] != before[n][0])
    check(rewritten == ["j2.h5", "j2.json", "j4.h5", "j4.json"],
          f"--resume --force on {ranks} ranks rewrote exactly jobs 2 and 4 ({rewritten})")
    before = now
code, _, err = run(["run", jp2, "--quiet", "--force"], ranks=3)
now = files_now()
check(code == 0 and all(now[n][0] != before[n][0] for n in now), f"--force on 3 ranks rewrote all ten files "
      f"({[n for n in now if now[n][0] == before[n][0]]} unchanged)")

# ---- what a job's checks derive from its input reaches every rank --------------------------------------
# A RewardBench 2 import says so in its source attribute; jobs without "scheme" take rewardbench-v2 from
# it. Here such jobs are checked on ranks 1 and 2 (jobs 1 and 2 of 3) and run by groups led by other ranks.
with open(os.path.join(d, "m.jsonl"), "w") as f:
    f.write("".join(json.dumps(r) + "\n" for r in rb2_hand_rows()))
code, _, err = run(["import", "rewardbench2", os.path.join(d, "m.jsonl"), "-o", os.path.join(d, "rb2.h5")])
check(code == 0, f"rewardbench2 import ({err.strip()})")
jobs = [cm_job("cm0", good)]
jobs += [{"name": f"rb{i}", "kind": "benchmark", "input": "rb2.h5", "bootstrap": 200, "allow_missing": True}
         for i in range(1, 5)]


def reports(folder):
    out = {}
    for j in jobs:
        rep = load_report(os.path.join(folder, j["name"] + ".json"))
        for key in ("ranks", "seconds"):
            rep["rmdiag"].pop(key, None)
        with open(os.path.join(folder, j["name"] + ".h5"), "rb") as f:
            out[j["name"]] = (json.dumps(rep, sort_keys=True), f.read())
    return out


base = None
for ranks, extra in ((0, []), (3, ["--ranks-per-job", "all"]), (3, ["--ranks-per-job", "1"]), (4, []), (2, [])):
    tag = f"{ranks} ranks {' '.join(extra)}".strip()
    out = os.path.join(d, f"rb_out_{ranks}_{len(extra)}_{extra[-1] if extra else ''}")
    jp = write_job(os.path.join(d, f"rb_{ranks}_{len(extra)}.json"), jobs, output_dir=out)
    code, _, err = run(["run", jp, "--quiet"] + extra, ranks=ranks)
    check(code == 0, f"{tag}: exit {code} ({err.strip()[-400:]})")
    if code != 0:
        continue
    for j in jobs[1:]:
        rep = load_report(os.path.join(out, j["name"] + ".json"))
        check(rep["rmdiag"]["options"]["scheme"] == "rewardbench-v2",
              f"{tag}: {j['name']} took the scheme from the input ({rep['rmdiag']['options'].get('scheme')})")
        close(rep["result"]["models"][0]["score"], 0.65, f"{tag}: {j['name']} score (0.5 + 1 + 0 + 1 + 0.75) / 5")
    got = reports(out)
    if base is None:
        base = got
    else:
        same = [n for n in base if got[n] == base[n]]
        check(len(same) == len(base), f"{tag}: reports and .h5 identical to the plain process "
              f"(differ: {[n for n in base if n not in same]})")
done()
