"""cm on a case small enough to work by hand: 3 users, 4 runs, 5 pairs, two covariates.

Margins are chosen so every σ is a simple fraction: σ(ln 9) = 0.9, σ(ln 3) = 0.75, σ(0) = 0.5,
σ(-ln 3) = 0.25, σ(ln 4) = 0.8, σ(-ln 4) = 0.2, σ(-ln 9) = 0.1. User A is in train for runs 0-1
only, user B in every run (never held out), user C in none (always held out).

  pair user  in_train  σ per run             TM      TG      CM
  0    A     1 1 0 0   .9  .75 .5  .25       0.825   0.375   0.45
  1    B     1 1 1 1   .75 .75 .9  .5        0.725   —       —
  2    A     1 1 0 0   .5  .25 .75 .9        0.375   0.825  -0.45   (a negative CM)
  3    B     1 1 1 1   .8  .2  .8  .2        0.5     —       —
  4    C     0 0 0 0   .9  .9  .1  .5        —       0.6     —
"""
import math
import os

from rdtest import *

L3, L9, L4 = math.log(3), math.log(9), math.log(4)
margins = [[L9, L3, 0, -L3], [L3, L3, L9, 0], [0, -L3, L3, L9], [L4, -L4, L4, -L4], [L9, L9, -L9, 0]]
flags = [[1, 1, 0, 0], [1, 1, 1, 1], [1, 1, 0, 0], [1, 1, 1, 1], [0, 0, 0, 0]]
users = ["A", "B", "A", "B", "C"]
rr = np.full((5, 4), 1.5)
rc = rr + np.array(margins)
cov = {"len": np.array([10.0, -5.0, 30.0, 20.0, np.nan]),   # K = 2 bins: edges -5, 15, 30; pair 4 excluded
       "src": np.array([1, 2, 1, 2, 2], dtype=np.int32),      # categorical
       "ties": np.array([1.0, 1.0, 1.0, 1.0, 2.0])}          # K = 4: edges 1,1,1,1,2 merge into one bin

d = scratch("cm_hand")
write_cm(os.path.join(d, "in.h5"), rc, rr, flags, users, cov)
write_job(os.path.join(d, "job.json"), [{
    "name": "hand", "kind": "cm", "input": "in.h5", "bootstrap": 0,
    "strata": [{"covariate": "len", "bins": 2}, {"covariate": "src", "categorical": True},
               {"covariate": "ties", "bins": 4}]}])

for ranks in (0, 2):
    code, out, err = run(["run", os.path.join(d, "job.json"), "--force"], ranks=ranks)
    check(code == 0, f"run with {ranks} ranks exits 0 (got {code}: {err})")
    check("cm hand: 5 pairs, 3 users, 4 runs" in out and "pairs with CM < 0: 50.0 %" in out, f"summary table: {out}")
    rep = load_report(os.path.join(d, "out", "hand.json"))
    r = rep["result"]
    check(rep["rmdiag"]["kind"] == "cm" and rep["rmdiag"]["job"] == "hand", "envelope names the job")
    check(rep["rmdiag"]["ranks"] == (ranks or 1), "envelope counts the ranks")
    for k, v in dict(n_pairs=5, n_users=3, n_runs=4, n_tm_defined=4, n_tg_defined=3, n_cm_defined=2).items():
        check(r[k] == v, f"{k} = {r[k]}, expected {v}")
    # TM over pairs 0-3: 0.825 0.725 0.375 0.5 -> sorted .375 .5 .725 .825
    tm_sd = math.sqrt((0.21875**2 + 0.11875**2 + 0.23125**2 + 0.10625**2) / 3)
    expect = {
        "tm": dict(mean=0.60625, sd=tm_sd, q05=0.39375, q25=0.46875, median=0.6125, q75=0.75, q95=0.81),
        "tg": dict(mean=0.6, sd=0.225, q05=0.3975, q25=0.4875, median=0.6, q75=0.7125, q95=0.8025),
        "cm": dict(mean=0.0, sd=math.sqrt(0.405), q05=-0.405, q25=-0.225, median=0.0, q75=0.225, q95=0.405),
    }
    for q, stats in expect.items():
        for s, v in stats.items():
            close(r[q][s], v, f"{ranks} ranks: {q}.{s}")
        check(r[q]["ci95"] is None, f"{q}.ci95 is null with bootstrap 0")
    close(r["cm_negative_fraction"], 0.5, "cm_negative_fraction")
    close(r["user_macro"]["tm"], 0.60625, "user_macro.tm (A 0.6, B 0.6125)")
    close(r["user_macro"]["tg"], 0.6, "user_macro.tg (A 0.6, C 0.6)")
    close(r["user_macro"]["cm"], 0.0, "user_macro.cm (A only)")
    strata = [(s["covariate"], s["bin"], s["lo"], s["hi"], s["n"], s["tm"], s["tg"], s["cm"]) for s in r["strata"]]
    want = [("len", 0, -5.0, 15.0, 2, 0.775, 0.375, 0.45),
            ("len", 1, 15.0, 30.0, 2, 0.4375, 0.825, -0.45),
            ("src", 1, 1, 1, 2, 0.6, 0.6, 0.0),
            ("src", 2, 2, 2, 3, 0.6125, 0.6, None),
            ("ties", 0, 1.0, 2.0, 5, 0.60625, 0.6, 0.0)]
    check(len(strata) == len(want), f"{len(strata)} strata, expected {len(want)}: {strata}")
    for got, exp in zip(strata, want):
        check(got[:2] == exp[:2] and got[4] == exp[4], f"stratum {got[:2]} n={got[4]}, expected {exp[:2]} n={exp[4]}")
        close(list(got[2:4]), list(exp[2:4]), f"stratum {exp[:2]} edges")
        close(list(got[5:]), list(exp[5:]), f"stratum {exp[:2]} tm/tg/cm")
    check(r["strata_excluded"] == {"len": 1, "src": 0, "ties": 0}, f"strata_excluded {r['strata_excluded']}")
    with h5py.File(os.path.join(d, "out", "hand.h5")) as f:
        close(list(f["cm/tm"][...]), [0.825, 0.725, 0.375, 0.5, float("nan")], "h5 tm")
        close(list(f["cm/tg"][...]), [0.375, float("nan"), 0.825, float("nan"), 0.6], "h5 tg")
        close(list(f["cm/cm"][...]), [0.45, float("nan"), -0.45, float("nan"), float("nan")], "h5 cm")
        check(list(f["cm/n_train"][...]) == [2, 4, 2, 4, 0], "h5 n_train")
        check(list(f["cm/n_held"][...]) == [2, 0, 2, 0, 4], "h5 n_held")
        check(f["cm/tm"].dtype == np.float64 and f["cm/n_train"].dtype == np.int32, "h5 dtypes")
        check(f.attrs["spec_sha256"] == rep["rmdiag"]["spec_sha256"], "h5 carries the report's spec_sha256")

# The sigmoid is stable at huge margins: no NaN, no overflow, never clipped.
write_cm(os.path.join(d, "ext.h5"), [[800.0, -800.0, 30.0, -30.0]], [[0.0, 0.0, 0.0, 0.0]], [[1, 1, 0, 0]], [7])
write_job(os.path.join(d, "ext.json"), [{"name": "ext", "kind": "cm", "input": "ext.h5", "bootstrap": 0}])
code, out, err = run(["run", os.path.join(d, "ext.json"), "--force"])
check(code == 0, f"extreme margins run (got {code}: {err})")
with h5py.File(os.path.join(d, "out", "ext.h5")) as f:
    close(f["cm/tm"][0], 0.5, "TM of σ(800) and σ(-800) is (1 + 0)/2")
    close(f["cm/tg"][0], 0.5, "TG of σ(30) and σ(-30) is 1/2 (symmetric)", rel=1e-15)
# Dropped bootstrap replicates (docs/reference.md 'Statistics': undefined replicates are dropped and counted). Users by first
# appearance: 0 = A (TM and TG defined), 1 = B (never held out: no TG), 2 = C (always held out: no
# TM). A replicate drawing no A and no C has no TG (and no CM); one drawing only B and C has no CM;
# one drawing no A and no B has no TM. The counts come from the draws replayed independently.
B = 300
write_job(os.path.join(d, "drop.json"), [{"name": "drop", "kind": "cm", "input": "in.h5", "bootstrap": B}], seed=5)
code, out, err = run(["run", os.path.join(d, "drop.json"), "--force"])
check(code == 0, f"bootstrap run ({err})")
got = load_report(os.path.join(d, "out", "drop.json"))["result"]["bootstrap"]["dropped"]
want = {"tm": 0, "tg": 0, "cm": 0}
for b in range(B):
    drawn = set(draws_below(5, "drop", "cm.bootstrap.users", b, 3, 3).tolist())
    want["tm"] += not (drawn & {0, 1})
    want["tg"] += not (drawn & {0, 2})
    want["cm"] += 0 not in drawn
check(want["cm"] > 0 and want["tg"] > 0, f"the fixture drops replicates: {want}")
check(got == want, f"dropped replicates {got}, replayed {want}")
done()
