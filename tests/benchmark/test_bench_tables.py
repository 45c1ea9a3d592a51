"""benchmark for readers: the leaderboard and comparisons on stdout, `rmdiag table` (md, csv, latex) hand-checked on
a custom scheme, the CSV read back equal to the report, p-values printed as a bound with their resolution, and the
warnings (subsets with few items; missing subsets) triggered by crafted inputs and absent on a clean one."""
import csv
import io
import os

from rdtest import *
from benchutil import write_bench, items_from_lists

d = scratch("bench_tables")


def items(sub, credits_a, credits_b):
    """Items of subset `sub`: one preferred and one rejected completion; credit 1 when the preferred scores higher."""
    return [(sub, 1, [[1.0, 0.0] if a else [0.0, 1.0], [1.0, 0.0] if b else [0.0, 1.0]])
            for a, b in zip(credits_a, credits_b)]


def run_job(name, per_item, subsets, scheme, models=("A", "B"), **opts):
    isub, off, nc, sc = items_from_lists(per_item)
    write_bench(os.path.join(d, name + ".h5"), list(models), subsets, isub, off, nc, sc)
    job = {"name": name, "kind": "benchmark", "input": name + ".h5", "scheme": scheme}
    job.update(opts)
    write_job(os.path.join(d, name + ".json"), [job])
    code, out, err = run(["run", os.path.join(d, name + ".json")])
    check(code == 0, f"{name}: exit {code} ({err.strip()})")
    return load_report(os.path.join(d, "out", name + ".json")), out, err


scheme = {"sections": {"S": {"a": 1, "b": 1}}, "item_rule": "strict"}
# small: a has 2 items (A: 1 1, B: 0 1), b has 3 (A: 1 0 1, B: 0 0 1).
# A: a = 1, b = 2/3, S = 5/6 = 0.8333; B: a = 0.5, b = 1/3, S = 5/12 = 0.4167; diff 5/12 = 0.4167.
rep, out, err = run_job("small", items(0, [1, 1], [0, 1]) + items(1, [1, 0, 1], [0, 0, 1]), ["a", "b"], scheme,
                        bootstrap=200, compare=[["A", "B"]])
res = rep["result"]
w = res["warnings"]
check(len(w) == 1 and w[0].startswith("2 subsets with fewer than 20 items") and "a (2), b (3)" in w[0],
      f"few-items warning names the subsets and their sizes: {w}")
check(err.count("rmdiag: warning: small: 2 subsets with fewer than 20 items") == 1, f"warning on stderr: {err}")

lines = out.splitlines()
check(lines[0] == "benchmark small: custom, 2 models, 5 items", f"heading {lines[0]!r}")
lb = out.split("Leaderboard\n", 1)[1].splitlines()
check(lb[1].split()[:3] == ["1", "A", "0.8333"] and lb[2].split()[:3] == ["2", "B", "0.4167"], f"leaderboard rows:\n{out}")
cmp_rows = out.split("Paired comparisons\n", 1)[1].splitlines()
c = res["comparisons"][0]
check(c["p_resolution"] == 0.01 and c["resamples"] == 200, f"p resolution = 2 / resamples: {c}")
ptxt = "< 0.01" if c["p"] == 0 else f"{c['p']:.3g}"
import re
check(cmp_rows[1].split()[:3] == ["A", "B", "0.4167"] and re.search(re.escape(ptxt) + r" +200$", cmp_rows[1]),
      f"comparison row prints p as {ptxt!r}: {cmp_rows[1]!r}")

# markdown, hand-checked (the section column is an interval in md)
code, md, err = run(["table", os.path.join(d, "out", "small.json"), "--table", "leaderboard", "--digits", "3"])
sci = res["models"][0]["sections"]["S"]["ci95"]
mci = res["models"][0]["score_ci95"]
row_a = f"| 1 | A | 0.833 [{mci[0]:.3f}, {mci[1]:.3f}] | 0.833 [{sci[0]:.3f}, {sci[1]:.3f}] |"
check(md.splitlines()[2] == "| rank | model | score [95% CI] | S |" and md.splitlines()[3] == "|---:|---|---:|---:|"
      and md.splitlines()[4] == row_a, f"markdown leaderboard:\n{md}")

# latex: booktabs, p as a bound when 0
code, tex, err = run(["table", os.path.join(d, "out", "small.json"), "--table", "comparisons", "--format", "latex"])
check("\\toprule\na & b & diff [95\\% CI] & p & resamples \\\\\n\\midrule" in tex, f"latex header:\n{tex}")
check(f"A & B & 0.4167 [" in tex and ("$<$ 0.01" in tex if c["p"] == 0 else f"& {c['p']:.3g} &" in tex), f"latex row:\n{tex}")

# csv: every numeric field, exactly the report's numbers (subsets: one row per model and subset)
code, text, err = run(["table", os.path.join(d, "out", "small.json"), "--table", "subsets", "--format", "csv"])
rows = list(csv.DictReader(io.StringIO(text)))
check([(r["model"], r["subset"]) for r in rows] == [("A", "a"), ("A", "b"), ("B", "a"), ("B", "b")], f"csv rows {rows}")
for r in rows:
    s = next(m for m in res["models"] if m["model"] == r["model"])["subsets"][r["subset"]]
    check(float(r["score"]) == s["score"] and float(r["n"]) == s["n"] and float(r["credit"]) == s["credit"],
          f"csv subset {r['model']}/{r['subset']} exact")
    check(float(r["score_lo"]) == s["wilson95"][0] and float(r["score_hi"]) == s["wilson95"][1], "csv Wilson exact")
code, text, err = run(["table", os.path.join(d, "out", "small.json"), "--table", "comparisons", "--format", "tsv"])
row = text.splitlines()[1].split("\t")
check(row[:2] == ["A", "B"] and float(row[2]) == c["diff"] and float(row[3]) == c["ci95"][0] and float(row[5]) == c["p"]
      and float(row[6]) == 0.01, f"tsv comparison row exact: {row}")

# ---- clean: 20 items per subset, nothing missing: no warnings (and a model name that CSV must quote and
# LaTeX escape) ----
odd = 'B_x, "big" & 50%'
rep, out, err = run_job("clean", items(0, [1] * 20, [0, 1] * 10) + items(1, [1, 0] * 10, [0] * 20), ["a", "b"], scheme,
                        models=("A", odd), bootstrap=0)
code, text, err2 = run(["table", os.path.join(d, "out", "clean.json"), "--table", "leaderboard", "--format", "csv"])
rows = list(csv.DictReader(io.StringIO(text)))
check([r["model"] for r in rows] == ["A", odd] and '"B_x, ""big"" & 50%"' in text, f"csv quoting: {text}")
code, tex, err2 = run(["table", os.path.join(d, "out", "clean.json"), "--table", "leaderboard", "--format", "latex"])
check('2 & B\\_x, "big" \\& 50\\% & 0.2500 & 0.2500 \\\\' in tex, f"latex escapes _, & and %:\n{tex}")
check(rep["result"]["warnings"] == [] and "warning" not in err, f"clean: no warnings {rep['result']['warnings']} {err}")
c = rep["result"]["comparisons"]
check(c == [], "no comparisons asked")
check("no intervals: bootstrap 0" in out, f"the reason for missing intervals is printed:\n{out}")

# ---- a scheme subset missing (allow_missing) is a warning ----
scheme3 = {"sections": {"S": {"a": 1, "b": 1, "zz": 1}}}
rep, out, err = run_job("miss", items(0, [1] * 20, [0] * 20) + items(1, [1] * 20, [0] * 20), ["a", "b"], scheme3,
                        bootstrap=0, allow_missing=True)
w = rep["result"]["warnings"]
check(len(w) == 1 and "missing from the input (allow_missing): zz" in w[0], f"missing-subset warning: {w}")
done()
