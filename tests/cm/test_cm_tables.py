"""cm for readers: the stdout summary, `rmdiag table` in md, csv and latex on a hand-checked input (the strata
intervals worked out by hand), the CSV read back equal to the report's numbers bit for bit, the join datasets
(/cm/pair_id, /cm/user_index), and each cm warning triggered by a crafted input and absent on a clean one."""
import csv
import io
import math
import os

from rdtest import *

d = scratch("cm_tables")
L3 = math.log(3.0)  # sigma(ln 3) = 0.75, sigma(-ln 3) = 0.25

# 4 pairs of users a, a, b, c; 2 runs. run 0 trains a and c, run 1 trains b.
# TM/TG by hand: pair0 0.75/0.5, pair1 0.5/0.25, pair2 0.75/0.5, pair3 0.75/0.75.
margins = [[L3, 0.0], [0.0, -L3], [0.0, L3], [L3, L3]]
in_train = [[1, 0], [1, 0], [0, 1], [1, 0]]
rc = margins
rr = [[0.0, 0.0] for _ in margins]
clean = write_cm(os.path.join(d, "clean.h5"), rc, rr, in_train, ["a", "a", "b", "c"],
                 covariates={"src": [1.0, 1.0, 2.0, 2.0]})
import h5py
with h5py.File(clean, "a") as f:
    f.create_dataset("cm/pair_id", data=["p-10", "p-11", "p-12", "p-13"], dtype=h5py.string_dtype("utf-8"))

write_job(os.path.join(d, "clean.json"), [
    {"name": "t", "kind": "cm", "input": "clean.h5", "bootstrap": 0,
     "strata": [{"covariate": "src", "categorical": True}]}])
code, out, err = run(["run", os.path.join(d, "clean.json")])
check(code == 0, f"clean run: exit {code} ({err.strip()})")
rep = load_report(os.path.join(d, "out", "t.json"))
res = rep["result"]
check(res["warnings"] == [], f"clean input: no warnings ({res['warnings']})")
check("warning" not in err, f"clean input: nothing on stderr about warnings ({err.strip()})")

# ---- the summary on stdout ----
lines = out.splitlines()
check(lines[0] == "cm t: 4 pairs, 3 users, 2 runs", f"heading: {lines[0]!r}")
check(lines[1] == "Memorization summary", f"summary title: {lines[1]!r}")
# TM mean 0.6875, TG 0.5, CM 0.1875 (no interval: bootstrap 0), medians 0.75, 0.5, 0.25
check(lines[3].split() == ["TM", "0.6875", "0.7500", "0.1250", "4"], f"TM row: {lines[3]!r}")
check(lines[4].split() == ["TG", "0.5000", "0.5000", "0.2041", "4"], f"TG row: {lines[4]!r}")
check(lines[5].split() == ["CM", "0.1875", "0.2500", "0.1250", "4"], f"CM row: {lines[5]!r}")
check("  no intervals: bootstrap 0" in lines, "the reason for the missing intervals is printed")
check("Strata" in lines and "Most memorized pairs" in lines, "strata and top pairs on stdout")

# ---- strata intervals by hand: src=2 holds users b (CM 0.25) and c (CM 0): m = 0.125,
# se = sqrt(2/1 * (0.125^2 + 0.125^2)) / 2 = 0.125, ci = 0.125 -+ 1.959963984540054 * 0.125
s1, s2 = res["strata"]
check(s1["n_users"] == 1 and s1["cm_ci95"] is None, f"one user: no interval ({s1})")
check(s2["n_users"] == 2, "stratum 2 has two users")
z = 1.959963984540054
close(s2["cm_ci95"], [0.125 - z * 0.125, 0.125 + z * 0.125], "stratum 2 CM interval", rel=1e-12, abs_=1e-15)
close(s2["tm_ci95"], [0.75, 0.75], "stratum 2 TM interval (both users 0.75)", rel=1e-12, abs_=1e-15)

# ---- top memorized pairs: CM descending, ties to the lower pair ----
top = res["top_memorized"]
with h5py.File(os.path.join(d, "out", "t.h5")) as f:
    cmv = f["cm/cm"][...]
    pid = [x.decode() if isinstance(x, bytes) else x for x in f["cm/pair_id"][...]]
    uidx = f["cm/user_index"][...].tolist()
want = sorted(range(4), key=lambda p: (-cmv[p], p))
check([t["pair"] for t in top] == want, f"top pairs by CM, ties to the lower pair: {[t['pair'] for t in top]} vs {want}")
check([t["pair_id"] for t in top] == [f"p-1{p}" for p in want], "top pairs carry the input's pair ids")
check(top[0]["user"] in ("a", "b") and top[0]["n_train"] + top[0]["n_held"] == 2, f"top pair's user and runs: {top[0]}")
check(pid == ["p-10", "p-11", "p-12", "p-13"], f"/cm/pair_id copies the input's pair_id: {pid}")
check(uidx == [0, 0, 1, 2], f"/cm/user_index numbers users by first appearance: {uidx}")

# ---- rmdiag table: markdown, csv, latex ----
code, md, err = run(["table", os.path.join(d, "out", "t.json"), "--table", "summary"])
check(code == 0, f"table md: exit {code} ({err.strip()})")
want_md = ("**Memorization summary** (`summary`)\n\n"
           "|  | mean [95% CI] | median | sd | pairs defined |\n"
           "|---|---:|---:|---:|---:|\n"
           "| TM | 0.6875 | 0.7500 | 0.1250 | 4 |\n"
           "| TG | 0.5000 | 0.5000 | 0.2041 | 4 |\n"
           "| CM | 0.1875 | 0.2500 | 0.1250 | 4 |\n")
check(md.startswith(want_md), f"markdown summary, hand-checked:\n{md}")

code, tex, err = run(["table", os.path.join(d, "out", "t.json"), "--table", "strata", "--format", "latex", "--digits", "3"])
check(code == 0, f"table latex: exit {code} ({err.strip()})")
check("\\toprule" in tex and "\\midrule" in tex and "\\bottomrule" in tex and "\\begin{tabular}{llrrrrrrr}" in tex,
      f"booktabs rules and column alignment:\n{tex}")
check("src & 2 & 2.000 & 2.000 & 2 & 2 & 0.750 [0.750, 0.750] & 0.625 [0.380, 0.870] & 0.125 [$-$0.120, 0.370] \\\\" in tex,
      f"LaTeX row of stratum 2 with intervals and a math minus:\n{tex}")
check("src & 1 & 1.000 & 1.000 & 2 & 1 & 0.625 & 0.375 & 0.250 \\\\" in tex, f"stratum 1 without intervals:\n{tex}")

# CSV: one row per entity, every numeric field, exactly the report's numbers
code, text, err = run(["table", os.path.join(d, "out", "t.json"), "--table", "strata", "--format", "csv"])
rows = list(csv.DictReader(io.StringIO(text)))
check(len(rows) == 2, f"csv: one row per stratum ({len(rows)})")
for row, s in zip(rows, res["strata"]):
    for key in ("lo", "hi", "n", "users", "tm", "tg", "cm"):
        jkey = {"users": "n_users"}.get(key, key)
        check(float(row[key]) == s[jkey], f"csv {key} {row[key]} reads back as the report's {s[jkey]!r}")
    for q in ("tm", "tg", "cm"):
        ci = s[q + "_ci95"]
        if ci is None:
            check(row[q + "_lo"] == "" and row[q + "_hi"] == "", f"csv: no interval is empty ({row})")
        else:
            check(float(row[q + "_lo"]) == ci[0] and float(row[q + "_hi"]) == ci[1], f"csv {q} interval exact")
code, text, err = run(["table", os.path.join(d, "out", "t.json"), "--table", "summary", "--format", "csv"])
rows = list(csv.DictReader(io.StringIO(text)))
for row, q in zip(rows, ("tm", "tg", "cm")):
    for k in ("mean", "median", "sd", "q05", "q25", "q75", "q95"):
        check(float(row[k]) == res[q][k], f"csv summary {q}.{k} exact")
    check(float(row["user_macro"]) == res["user_macro"][q], f"csv {q} user_macro exact")

code, text, err = run(["table", os.path.join(d, "out", "t.json"), "--table", "nope"])
check(code == 2 and "no table \"nope\"" in err and "summary, strata, top_memorized" in err, f"unknown table: {err}")

# ---- without pair_id in the input: /cm/pair_id holds the row index ----
write_cm(os.path.join(d, "noid.h5"), rc, rr, in_train, [7, 7, 8, 9])
write_job(os.path.join(d, "noid.json"), [{"name": "n", "kind": "cm", "input": "noid.h5", "bootstrap": 0}])
code, out, err = run(["run", os.path.join(d, "noid.json")])
with h5py.File(os.path.join(d, "out", "n.h5")) as f:
    check(f["cm/pair_id"][...].tolist() == [0, 1, 2, 3] and f["cm/pair_id"].dtype == np.int64,
          "no pair_id in the input: the pair's row index")
top = load_report(os.path.join(d, "out", "n.json"))["result"]["top_memorized"]
check(top[0]["user"] in (7, 8), f"integer user ids stay integers: {top[0]}")

# ---- warnings: CM defined for a minority, and replicates dropped ----
# users a, b, c are trained in both runs (no TG); only d's pair has CM; bootstrap replicates without d drop
write_cm(os.path.join(d, "bad.h5"), rc, rr, [[1, 1], [1, 1], [1, 1], [1, 0]], ["a", "b", "c", "d"])
write_job(os.path.join(d, "bad.json"), [{"name": "b", "kind": "cm", "input": "bad.h5", "bootstrap": 50}])
code, out, err = run(["run", os.path.join(d, "bad.json"), "--quiet"])
w = load_report(os.path.join(d, "out", "b.json"))["result"]["warnings"]
drop = load_report(os.path.join(d, "out", "b.json"))["result"]["bootstrap"]["dropped"]
check(any("CM is defined for 1 of 4 pairs only" in x for x in w), f"minority warning: {w}")
check(drop["cm"] > 0 and any(f"{drop['cm']} of 50 bootstrap replicates drew no user with a defined CM" in x for x in w),
      f"dropped-replicates warning: {w} {drop}")
check(drop["tm"] == 0 and not any("defined TM" in x for x in w), "no TM warning: every replicate has a TM")
check(drop["tg"] == drop["cm"] and any("drew no user with a defined TG" in x for x in w), f"TG drops alike: {w}")
check(err.count("rmdiag: warning: b: ") == len(w) and len(w) == 3, f"--quiet still prints the warnings:\n{err}")
check("3 warnings (on stderr" in out, "the summary counts the warnings")
done()
