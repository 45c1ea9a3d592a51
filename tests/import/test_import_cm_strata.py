"""Categorical strata end to end, from a CSV with a string and a numeric categorical covariate through
`rmdiag import cm-csv` and `rmdiag run` on 1 and 3 ranks: string categories in name order with their names
in the report ("category"), missing ones excluded; numeric categories unchanged (bin = lo = hi = the
value, no "category"); every stratum's n, TM, TG, CM checked against values worked out by hand. Then a
string covariate with quantile bins, and a user split the cm kind finds (an input made without cm-csv)
named by the input's own pair and run ids on 1 and 3 ranks, or by indices when it has none."""
import os

from rdtest import *

d = scratch("import_cm_strata")


def write(name, text):
    p = os.path.join(d, name)
    with open(p, "w", newline="") as f:
        f.write(text)
    return p


# Two runs. Users A and B are trained on in run 0 and held out in run 1, user C the reverse, so every pair
# has one training run and one held-out run: TM = sigma(margin in the training run), TG = sigma(margin in
# the held-out run). Margins 0 give 0.5; margin m = ln 3 gives 0.75, -ln 3 gives 0.25.
L3 = "1.0986122886681098"      # ln 3 as Python prints it
pairs = [  # pair, user, margin in run 0, margin in run 1, source, grade
    ("1", "A", L3, "0", "human", "2"),        # TM 0.75 TG 0.5  CM 0.25
    ("2", "A", "0", "0", "gpt-4, turbo", "1"),  # TM 0.5  TG 0.5  CM 0
    ("3", "B", L3, "-" + L3, "human", "1"),  # TM 0.75 TG 0.25 CM 0.5
    ("4", "C", "0", L3, "llama", "2"),        # C trained in run 1: TM 0.75 TG 0.5 CM 0.25
    ("5", "C", L3, "0", "", "2"),             # TM 0.5 TG 0.75 CM -0.25; source missing
    ("6", "B", "0", "0", "human", "NA"),      # TM 0.5 TG 0.5 CM 0; grade missing
]
train = {"A": (1, 0), "B": (1, 0), "C": (0, 1)}
rows = ["run,pair,user,reward_chosen,reward_rejected,in_train,source,grade"]
for r in (0, 1):
    for p, u, m0, m1, src, gr in pairs:
        m = m0 if r == 0 else m1
        rows.append(f'{r},{p},{u},{m},0,{train[u][r]},"{src}",{gr}')
csv = write("pairs.csv", "\n".join(rows) + "\n")
h5 = os.path.join(d, "pairs.h5")
code, _, err = run(["import", "cm-csv", csv, "-o", h5])
check(code == 0, f"import ({err.strip()})")

# by hand, per stratum: n, mean TM, mean TG, mean CM over the pairs
source_expect = [  # name order: "gpt-4, turbo" < "human" < "llama"
    ("gpt-4, turbo", 1, 0.5, 0.5, 0.0),  # users: A (1), A and B (2), C (1)
    ("human", 3, (0.75 + 0.75 + 0.5) / 3, (0.5 + 0.25 + 0.5) / 3, (0.25 + 0.5 + 0.0) / 3),
    ("llama", 1, 0.75, 0.5, 0.25),
]
grade_expect = [  # numeric categories 1 < 2
    (1.0, 2, (0.5 + 0.75) / 2, (0.5 + 0.25) / 2, (0.0 + 0.5) / 2),
    (2.0, 3, (0.75 + 0.75 + 0.5) / 3, (0.5 + 0.5 + 0.75) / 3, (0.25 + 0.25 - 0.25) / 3),
]
jp = write_job(os.path.join(d, "job.json"), [{"name": "s", "kind": "cm", "input": "pairs.h5", "bootstrap": 0,
                                               "strata": [{"covariate": "source", "categorical": True},
                                                          {"covariate": "grade", "categorical": True}]}])
for ranks in (0, 3):
    code, _, err = run(["run", jp, "--force"], ranks=ranks)
    check(code == 0, f"run on {ranks} ranks ({err.strip()})")
    if code:
        continue
    res = load_report(os.path.join(d, "out", "s.json"))["result"]
    close(res["tm"]["mean"], (0.75 + 0.5 + 0.75 + 0.75 + 0.5 + 0.5) / 6, f"TM mean ({ranks} ranks)")
    st = res["strata"]
    src = [s for s in st if s["covariate"] == "source"]
    check(len(src) == 3, f"three source strata: {src}")
    for b, (s, (name, n, tm, tg, cm)) in enumerate(zip(src, source_expect)):
        check(list(s) == ["covariate", "bin", "category", "lo", "hi", "n", "tm", "tg", "cm", "n_users", "tm_ci95",
                          "tg_ci95", "cm_ci95"], f"keys {list(s)}")
        check(s["n_users"] == (2 if name == "human" else 1), f"{name} n_users: {s['n_users']}")
        if name != "human":
            check(s["tm_ci95"] is None, f"{name}: no interval from one user: {s['tm_ci95']}")
        else:  # users A (TM 0.75) and B (0.75, 0.5): m = 2/3, residual sums +-1/12, se^2 = 2 * 2/144 / 9
            half = 1.959963984540054 * (2 * 2 / 144 / 9) ** 0.5
            close(s["tm_ci95"][0], 2 / 3 - half, "human tm_ci95 lo")
            close(s["tm_ci95"][1], 2 / 3 + half, "human tm_ci95 hi")
        check(s["bin"] == b and s["category"] == name and s["lo"] is None and s["hi"] is None and s["n"] == n,
              f"source stratum {b} ({ranks} ranks): {s}")
        close(s["tm"], tm, f"{name} tm")
        close(s["tg"], tg, f"{name} tg")
        close(s["cm"], cm, f"{name} cm", abs_=1e-15)
    gr = [s for s in st if s["covariate"] == "grade"]
    check(len(gr) == 2, f"two grade strata: {gr}")
    for s, (v, n, tm, tg, cm) in zip(gr, grade_expect):
        check(list(s) == ["covariate", "bin", "lo", "hi", "n", "tm", "tg", "cm", "n_users", "tm_ci95", "tg_ci95",
                          "cm_ci95"], f"numeric keys unchanged: {list(s)}")
        check(s["n_users"] == 2, f"grade {v} n_users (A, B / A, C): {s['n_users']}")
        check(s["bin"] == v and s["lo"] == v and s["hi"] == v and s["n"] == n, f"grade stratum {v}: {s}")
        close(s["tm"], tm, f"grade {v} tm")
        close(s["tg"], tg, f"grade {v} tg")
        close(s["cm"], cm, f"grade {v} cm", abs_=1e-15)
    check(res["strata_excluded"] == {"source": 1, "grade": 1}, f"excluded: {res['strata_excluded']}")
    # the table names a string covariate's categories and says why pairs are left out
    code, out, err = run(["table", os.path.join(d, "out", "s.json")])
    check(code == 0 and "| source | human | - | - | 3 | 2 |" in out and "| grade | 1 | 1.0000 | 1.0000 | 2 | 2 |" in out,
          f"strata table ({err.strip()}): {out}")
    check("source: 1 pairs left out (an empty category name)" in out and
          "grade: 1 pairs left out (covariate not finite)" in out, f"strata table notes: {out}")

# a string covariate written with h5py: the same strata; all missing: no strata, every pair excluded
with h5py.File(h5, "a") as f:
    g = f["cm"]
    g.create_dataset("covariates/fixed", data=np.array([b"b", b"a", b"b", b"", b"a", b"b"], dtype="S1"))
    g.create_dataset("covariates/none", data=[""] * 6, dtype=h5py.string_dtype("utf-8"))
jp2 = write_job(os.path.join(d, "fixed.json"), [{"name": "f", "kind": "cm", "input": "pairs.h5", "bootstrap": 0,
                                                 "strata": [{"covariate": "fixed", "categorical": True},
                                                            {"covariate": "none", "categorical": True}]}])
code, _, err = run(["run", jp2], ranks=3)
check(code == 0, f"fixed-length strings ({err.strip()})")
if code == 0:
    res = load_report(os.path.join(d, "out", "f.json"))["result"]
    check([(s["category"], s["n"]) for s in res["strata"]] == [("a", 2), ("b", 3)], f"{res['strata']}")
    check(res["strata_excluded"] == {"fixed": 1, "none": 6}, f"{res['strata_excluded']}")

# quantile bins need numbers
jp3 = write_job(os.path.join(d, "bins.json"), [{"name": "b", "kind": "cm", "input": "pairs.h5", "bootstrap": 0,
                                                "strata": [{"covariate": "source", "bins": 2}]}], output_dir="out_b")
expect_input_error("bins of a string covariate", ["run", jp3], [
    "pairs.h5: /cm/covariates/source holds strings (category names): quantile bins need numbers; give strata[0] "
    '"categorical": true (see docs/reference.md, \'cm input layout\')'], ranks=(0, 3),
    out_dir=os.path.join(d, "out_b"))
with h5py.File(h5, "a") as f:
    f["cm"].create_dataset("covariates/bad", data=np.array([b"ok", b"\xff", b"ok", b"ok", b"ok", b"ok"], dtype="S2"))
jp4 = write_job(os.path.join(d, "bad.json"), [{"name": "x", "kind": "cm", "input": "pairs.h5", "bootstrap": 0,
                                               "strata": [{"covariate": "bad", "categorical": True}]}],
                output_dir="out_x")
expect_input_error("a category that is not UTF-8", ["run", jp4], ["/cm/covariates/bad[1] is not valid UTF-8 text"],
                   ranks=(0, 3), out_dir=os.path.join(d, "out_x"))

# ---- the user split found by the cm kind, named by the input's own ids -------------------------------------
# 5000 pairs (blocks of 2048 pairs: on 3 ranks the bad pair and its user's first pair are on different ranks),
# 3 runs; user "u-first" owns pairs 10 and 4500, whose flags differ in run 2
P, R = 5000, 3
rng = np.random.default_rng(7)
users = [f"u{i % 97}" for i in range(P)]
users[10] = users[4500] = "u-first"
split = {u: rng.random(R) < 0.5 for u in set(users)}
flags = np.array([split[u] for u in users], dtype=np.uint8)
flags[4500, 2] = 1 - flags[10, 2]
rc, rr = rng.normal(size=(P, R)), rng.normal(size=(P, R))
for name, ids in (("strings", "strings"), ("integers", "integers"), ("indices", None)):
    path = write_cm(os.path.join(d, f"split_{name}.h5"), rc, rr, flags, users)
    if ids:
        with h5py.File(path, "a") as f:
            if ids == "strings":
                f["cm"].create_dataset("pair_id", data=[f"p{i}" for i in range(P)], dtype=h5py.string_dtype("utf-8"))
                f["cm"].create_dataset("run_id", data=["r0", "r1", "r2"], dtype=h5py.string_dtype("utf-8"))
            else:
                f["cm"]["pair_id"] = np.arange(P, dtype=np.int64) * 10 + 7
    jp5 = write_job(os.path.join(d, f"split_{name}.json"), [{"name": "sp", "kind": "cm", "input": os.path.basename(path),
                                                             "bootstrap": 0}], output_dir=f"out_{name}")
    f0, f1 = int(flags[4500, 2]), int(flags[10, 2])
    expect = {
        "strings": f'user "u-first" is split inconsistently in run "r2" (index 2): pair "p4500" (index 4500) has '
                   f'in_train = {f0} but pair "p10" (index 10; the user\'s first pair) has {f1}',
        "integers": f'user "u-first" is split inconsistently in run 2: pair 45007 (index 4500) has in_train = {f0} '
                    f"but pair 107 (index 10; the user's first pair) has {f1}",
        "indices": f'user "u-first" is split inconsistently in run 2: pair 4500 has in_train = {f0} but pair 10 (the '
                   f"user's first pair) has {f1}",
    }[name]
    expect_input_error(f"split named by {name}", ["run", jp5], [expect, "within a run all pairs of a user must share "
                                                                 "in_train"], ranks=(0, 3),
                       out_dir=os.path.join(d, f"out_{name}"))
done()
