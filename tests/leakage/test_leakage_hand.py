"""The leakage report on a panel small enough to work by hand (docs/reference.md, 'leakage report'): every
metric of a cell pooled and per seed, the tolerance rules and comparisons, the sign rules, rows without truth,
excluded rows, entropy, holdout, a factor-shuffle null that is deterministic (a family of two series: the only
sibling is always drawn), fictional series, ranking, residualisation and defenses, and the per-row outputs.

Truth: X 2020-01..04 = 1.0, -2.0, 3.78, 0.0 (2020-05 none); Y 2020-01..03 = 0.5, 1.5, 0.5.
Cell (m-a, X, A), rows:            est     truth  |d|                      seed
  r0 2020-01                        1.25    1.0    0.25 (exact in float)    1
  r1 2020-02                       -1.0    -2.0    1.0                      1
  r2 2020-03                        4.03    3.78   0.25 in decimal, 0.25000000000000044 in float   1
  r3 2020-04                        0.5     0.0    0.5  (sign: + vs 0)      2
  r4 2020-01  no number (status 1)                                          2
  r5 2020-02  excluded (status 2)                                           2
  r6 2020-05                        2.0     none   (parsed, no truth)       2
  n_rows 6, n_parsed 5, parse 5/6, n_no_truth 1, scored 4; mae (0.25+1+0.25+0.5)/4 = 0.5;
  within le/decimal 2/4 (r0, r2), le/float 1/4 (r0), lt 0/4; sign include 3/4, exclude-zero 3/3.
Cell (m-a, Y, A): y0 2020-01 est 1.0 (seed 1), y1 2020-01 est 1.4 (seed 2), y2 2020-02 est -1.0,
  y3 2020-03 no number, y4 2020-04 est 0.25 (no Y truth then).
Null, target X: months with a scored X row 2020-01..04; Y's month means 1.2, -1.0, none, 0.25 against X's
  truth 1.0, -2.0, 3.78, 0.0: used 3 months, within 2 (|0.2|, |0.25|) -> null 2/3 in every draw,
  selectivity 0.5 / (2/3) = 0.75. Target Y: months 2020-01, 02; X's means 1.25, -1.0 against 0.5, 1.5:
  0 of 2 -> null 0, selectivity null.
"""
import math
import os

from rdtest import *

NAN = float("nan")
d = scratch("leak_hand")
rows = [  # model, series, variant, seed, month, value, status, entropy
    (0, 0, 0, 1, 202001, 1.25, 0, 0.1), (0, 0, 0, 1, 202002, -1.0, 0, 0.3), (0, 0, 0, 1, 202003, 4.03, 0, NAN),
    (0, 0, 0, 2, 202004, 0.5, 0, 0.2), (0, 0, 0, 2, 202001, NAN, 1, 1.0), (0, 0, 0, 2, 202002, NAN, 2, 5.0),
    (0, 0, 0, 2, 202005, 2.0, 0, 0.4),
    (0, 1, 0, 1, 202001, 1.0, 0, NAN), (0, 1, 0, 2, 202001, 1.4, 0, NAN), (0, 1, 0, 1, 202002, -1.0, 0, NAN),
    (0, 1, 0, 1, 202003, NAN, 1, NAN), (0, 1, 0, 1, 202004, 0.25, 0, NAN),
    # fictional series "ghost": m-a answers 1 of 2, m-b 1 of 1 (its second row is excluded)
    (0, 2, 0, 0, 202001, NAN, 1, 2.0), (0, 2, 0, 0, 202002, 2.0, 0, 1.0), (1, 2, 0, 0, 202001, 1.0, 0, NAN),
    (1, 2, 0, 0, 202002, NAN, 2, NAN),
    # variant B of (m-a, X): est = truth + 0.5 in every month -> every resample has mae 0.5, r 1
    (0, 0, 1, 0, 202001, 1.5, 0, NAN), (0, 0, 1, 0, 202002, -1.5, 0, NAN), (0, 0, 1, 0, 202003, 4.28, 0, NAN),
    (0, 0, 1, 0, 202004, 0.5, 0, NAN),
]
cols = list(zip(*rows))
truth = [(0, 202001, 1.0), (0, 202002, -2.0), (0, 202003, 3.78), (0, 202004, 0.0), (1, 202001, 0.5),
         (1, 202002, 1.5), (1, 202003, 0.5)]
rank = [  # model, series, month_a, month_b, pick
    (1, 0, 202001, 202002, 0),   # 1.0 > -2.0: a is right
    (1, 0, 202003, 202001, 0),   # 3.78 > 1.0: right
    (1, 0, 202002, 202003, 0),   # -2.0 < 3.78: wrong
    (1, 0, 202001, 202005, 1),   # no truth for 2020-05
    (1, 0, 202002, 202003, -1),  # no pick
    (1, 1, 202001, 202003, 1)]   # Y 0.5 vs 0.5: a tie, skipped
sig_S = [2.1, -4.1, 7.26, 0.1, NAN, 1.0]
sig_R = [1.0, -2.0, 3.78, 0.3, 1.0, 2.0]
sig_M = [202001, 202002, 202003, 202004, 202001, 202005]   # the last two drop out (NaN signal, no truth)
defense = [  # defense, attack, model, month, blocked; attacks: 0 benign, 1 a0, 2 a1
    (0, 0, 0, 202001, 0), (0, 1, 0, 202001, 0), (0, 2, 0, 202001, 1), (0, 1, 0, 202002, 1), (0, 2, 0, 202002, 1),
    (1, 1, 0, 202001, 1), (1, 2, 0, 202001, 1), (1, 1, 1, 202001, 0)]

with h5py.File(os.path.join(d, "in.h5"), "w") as f:
    g = f.create_group("leak")
    S = h5py.string_dtype("utf-8")
    g.create_dataset("model_names", data=["m-a", "m-b"], dtype=S)
    g.create_dataset("series_names", data=["X", "Y", "ghost"], dtype=S)
    g.create_dataset("variant_names", data=["A", "B"], dtype=S)
    g["series_fictional"] = np.array([0, 0, 1], np.uint8)
    for name, k, dt in (("model", 0, np.int32), ("series", 1, np.int16), ("variant", 2, np.int64), ("seed", 3, np.int32),
                        ("month", 4, np.int32), ("value", 5, np.float64), ("status", 6, np.uint8),
                        ("entropy_bits", 7, np.float64)):
        g[name] = np.array(cols[k], dtype=dt)
    g.create_dataset("reply", data=["r"] * len(rows), dtype=S)
    g["truth_series"], g["truth_month"], g["truth_value"] = (np.array(c) for c in zip(*truth))
    r = f.create_group("leak/rank")
    for name, k, dt in (("model", 0, np.int32), ("series", 1, np.int32), ("month_a", 2, np.int32),
                        ("month_b", 3, np.int32), ("pick", 4, np.int8)):
        r[name] = np.array([x[k] for x in rank], dt)
    s = f.create_group("leak/signal")
    s["model"], s["month"] = np.ones(6, np.int32), np.array(sig_M, np.int32)
    s["signal"], s["recall"] = np.array(sig_S), np.array(sig_R)
    e = f.create_group("leak/defense")
    for name, k, dt in (("defense", 0, np.int32), ("attack", 1, np.int32), ("model", 2, np.int32),
                        ("month", 3, np.int32), ("blocked", 4, np.uint8)):
        e[name] = np.array([x[k] for x in defense], dt)
    e.create_dataset("defense_names", data=["none", "soft"], dtype=S)
    e.create_dataset("attack_names", data=["benign", "a0", "a1"], dtype=S)

base = {"kind": "leakage", "input": "in.h5", "family": ["X", "Y"], "null_permutations": 50, "holdout_from": 202003,
        "signal_series": "X"}
jobs = [dict(base, name="dec", bootstrap=2000), dict(base, name="flt", bootstrap=0, tolerance_compare="float"),
        dict(base, name="lt", bootstrap=0, tolerance_rule="lt", sign_zero="exclude_zero_truth")]
jp = write_job(os.path.join(d, "job.json"), jobs)
code, out, err = run(["run", jp, "--force"], ranks=2)
check(code == 0, f"run exits 0 ({err})")
R = {j["name"]: load_report(os.path.join(d, "out", j["name"] + ".json"))["result"] for j in jobs}
check("m-a" in out and "select" in out, f"a table on stdout: {out!r}")


def cell(res, m, s, v="A"):
    return [c for c in res["cells"] if (c["model"], c["series"], c["variant"]) == (m, s, v)][0]


def wilson(k, n, z=1.959963984540054):
    p = k / n
    den = 1 + z * z / n
    c = (p + z * z / (2 * n)) / den
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return [max(0.0, c - h), min(1.0, c + h)]


r = R["dec"]
check(r["n_rows_total"] == len(rows) and r["n_excluded"] == 2 and r["n_fictional_rows"] == 4, f"totals {r['n_excluded']}")
check([(c["model"], c["series"], c["variant"]) for c in r["cells"]] ==
      [("m-a", "X", "A"), ("m-a", "X", "B"), ("m-a", "Y", "A")], "cells in (model, series, variant) order; fictional rows are not cells")
x = cell(r, "m-a", "X")
for k, v in dict(n_rows=6, n_parsed=5, n_no_truth=1, n_scored=4, n_within=2, n_sign=4).items():
    check(x[k] == v, f"X.{k} = {x[k]}, expected {v}")
close(x["parse_rate"], 5 / 6, "parse rate 5/6")
close(x["parse_rate_wilson95"], wilson(5, 6), "parse rate Wilson")
e, t = np.array([1.25, -1.0, 4.03, 0.5]), np.array([1.0, -2.0, 3.78, 0.0])
de, dt = e - e.mean(), t - t.mean()
close(x["r"], (de * dt).sum() / math.sqrt((de * de).sum() * (dt * dt).sum()), "r (two-pass)")
close(x["mae"], 0.5, "mae")
close(x["within"], 0.5, "within le/decimal 2/4")
close(x["within_wilson95"], wilson(2, 4), "within Wilson")
close(x["sign_acc"], 0.75, "sign include-zero 3/4")
close(x["sign_wilson95"], wilson(3, 4), "sign Wilson")
close(x["slope"], (de * dt).sum() / (dt * dt).sum(), "slope of est on truth")
close(x["intercept"], e.mean() - x["slope"] * t.mean(), "intercept")
close(x["entropy_mean"], 0.4, "entropy mean of 0.1 0.3 0.2 1.0 0.4 (excluded row and NaN left out)")
close(x["entropy_median"], 0.3, "entropy median")
check(x["n_entropy"] == 5, "entropy rows")
close(x["null_within"], 2 / 3, "null within: the only sibling is always drawn")
close(x["selectivity"], 0.75, "selectivity 0.5 / (2/3)")
check(x["null_draws_used"] == 50, "every null draw used")
check(x["r_ci95"] is not None and -1 <= x["r_ci95"][0] <= x["r_ci95"][1] <= 1, f"r interval {x['r_ci95']}")
check(x["mae_ci95"][0] >= 0.25 - 1e-12 and x["mae_ci95"][1] <= 1.0 + 1e-12, f"mae interval within [0.25, 1]: {x['mae_ci95']}")
s1, s2 = x["per_seed"]
check((s1["seed"], s2["seed"]) == (1, 2), "seeds ascending")
check((s1["n_rows"], s1["n_parsed"], s1["n_scored"], s1["n_within"]) == (3, 3, 3, 2), f"seed 1: {s1}")
close(s1["mae"], 0.5, "seed 1 mae (0.25 + 1 + 0.25) / 3")
close(s1["sign_acc"], 1.0, "seed 1 sign")
check((s2["n_rows"], s2["n_parsed"], s2["n_no_truth"], s2["n_scored"]) == (3, 2, 1, 1), f"seed 2 counts: {s2}")
check(s2["r"] is None and s2["slope"] is None and s2["sign_acc"] == 0.0 and s2["within"] == 0.0, f"seed 2: {s2}")
y = cell(r, "m-a", "Y")
check(y["null_within"] == 0 and y["selectivity"] is None and y["within"] == 0, f"Y: null 0, selectivity null: {y}")
check(y["n_scored"] == 3 and y["n_no_truth"] == 1 and y["entropy_mean"] is None, "Y: 3 scored, 1 without truth")
close(y["mae"], (0.5 + 0.9 + 2.5) / 3, "Y mae")
b = cell(r, "m-a", "X", "B")
check(b["mae_ci95"] == [0.5, 0.5] or max(abs(v - 0.5) for v in b["mae_ci95"]) < 1e-12, f"B: every resample's mae is 0.5 {b['mae_ci95']}")
close(b["r_ci95"], [1.0, 1.0], "B: every defined resample has r = 1", rel=1e-12)
# a resample of one repeated row has no spread: P = 4 (1/4)^4 = 1/64, about 31 of 2000
check(10 <= b["r_bootstrap_dropped"] <= 60, f"B: {b['r_bootstrap_dropped']} undefined resamples dropped (~31)")
# rules
check(cell(R["flt"], "m-a", "X")["n_within"] == 1, "float comparison: 4.03 vs 3.78 is not within")
check(cell(R["lt"], "m-a", "X")["n_within"] == 0, "lt: |d| = 0.25 is not within")
lt = cell(R["lt"], "m-a", "X")
check(lt["n_sign"] == 3 and lt["sign_acc"] == 1.0, "exclude_zero_truth: 3/3")
check(lt["r_ci95"] is None and lt["mae_ci95"] is None, "bootstrap 0: intervals null")
close(cell(R["flt"], "m-a", "X")["null_within"], 2 / 3, "null under float (0.2 and 0.25 exact)")
close(cell(R["lt"], "m-a", "X")["null_within"], 1 / 3, "null under lt: |0.2| within, |0.25| and |1.0| not")
# holdout from 2020-03
h = [h for h in r["holdout"] if h["series"] == "X" and h["variant"] == "A"][0]
check((h["before"]["n_rows"], h["before"]["n_parsed"], h["before"]["n_scored"]) == (3, 2, 2), f"before: {h['before']}")
close(h["before"]["parse_rate"], 2 / 3, "before parse rate")
check(h["before"]["r"] is None and (h["from"]["n_rows"], h["from"]["n_parsed"], h["from"]["n_scored"]) == (3, 3, 2),
      f"from: {h['from']}")
# fictional
fic = {f["model"]: f for f in r["fictional"]}
check((fic["m-a"]["n_rows"], fic["m-a"]["n_parsed"], fic["m-b"]["n_rows"], fic["m-b"]["n_parsed"]) == (2, 1, 1, 1),
      f"fictional: {fic}")
close(fic["m-a"]["parse_rate_wilson95"], wilson(1, 2), "fictional Wilson")
close(fic["m-a"]["entropy_mean"], 1.5, "fictional entropy mean (2.0, 1.0)")
# ranking
rk = {(x["model"], x["series"]): x for x in r["ranking"]}
x = rk[("m-b", "X")]
check((x["n_rows"], x["n_picked"], x["n_scored"], x["n_correct"], x["n_no_truth"], x["n_tie"]) == (5, 4, 3, 2, 1, 0), f"ranking X: {x}")
close(x["parse_rate"], 0.8, "ranking parse rate 4/5")
close(x["accuracy"], 2 / 3, "ranking accuracy 2/3")
close(x["accuracy_wilson95"], wilson(2, 3), "ranking Wilson")
y = rk[("m-b", "Y")]
check(y["n_tie"] == 1 and y["n_scored"] == 0 and y["accuracy"] is None, f"a tie is skipped: {y}")
# residualisation (population moments) over the 4 complete rows
S_, R_, T_ = np.array(sig_S[:4]), np.array(sig_R[:4]), np.array([1.0, -2.0, 3.78, 0.0])
gamma = ((S_ - S_.mean()) * (R_ - R_.mean())).mean() / ((R_ - R_.mean()) ** 2).mean()
U = S_ - gamma * R_
rs, ru = np.corrcoef(S_, T_)[0, 1], np.corrcoef(U, T_)[0, 1]
res = r["residualisation"][0]
check(res["model"] == "m-b" and res["n"] == 4, f"residualisation rows: {res}")
close(res["gamma"], gamma, "gamma", rel=1e-12)
close(res["r_signal_truth"], rs, "r(signal, truth)", rel=1e-12)
close(res["r_residual_truth"], ru, "r(residual, truth)", rel=1e-9, abs_=1e-12)
close(res["leak_share"], 1 - ru ** 2 / rs ** 2, "LeakShare", rel=1e-9)
close(res["r_signal_recall"], np.corrcoef(S_, R_)[0, 1], "r(signal, recall)", rel=1e-12)
check(r["n_cells"] == len({(c["model"], c["series"], c["variant"]) for c in r["cells"]}) == 3,
      f"n_cells counts the cells (m-a X A, m-a Y A, m-a X B; the fictional series is no cell): {r['n_cells']}")
# defenses: the benign attack counts apart
dd = {(x["defense"], x["model"]): x for x in r["defense"]}
x = dd[("none", "m-a")]
check((x["n"], x["blocked"], x["n_months"], x["n_months_leaked"], x["n_benign"], x["n_benign_parsed"]) == (4, 3, 2, 1, 1, 1), f"none/m-a: {x}")
close(x["blocked_fraction"], 0.75, "blocked 3/4")
close(x["blocked_wilson95"], wilson(3, 4), "blocked Wilson")
close(x["worst_case_leaked_fraction"], 0.5, "worst case: 2020-01 leaked by a0, 2020-02 blocked")
check(dd[("soft", "m-a")]["worst_case_leaked_fraction"] == 0 and dd[("soft", "m-b")]["worst_case_leaked_fraction"] == 1,
      "soft: m-a never leaks, m-b leaks its month")
pool = {x["defense"]: x for x in r["defense_pooled"]}
check((pool["soft"]["n"], pool["soft"]["blocked"], pool["soft"]["n_months"], pool["soft"]["n_months_leaked"]) == (3, 2, 2, 1),
      f"pooled soft: {pool['soft']}")
# per-row outputs
with h5py.File(os.path.join(d, "out", "dec.h5")) as f:
    ae, wi = f["leak/abs_error"][...], f["leak/within"][...]
    check(f["leak/abs_error"].dtype == np.float64 and f["leak/within"].dtype == np.uint8, "output dtypes")
    close(list(ae[:7]), [0.25, 1.0, 4.03 - 3.78, 0.5, NAN, NAN, NAN], "abs_error of X's rows (NaN where not scored)")
    check(list(wi[:7]) == [1, 0, 1, 0, 0, 0, 0], f"within flags {list(wi[:7])}")
# ranking near ties (docs/reference.md, 'Controls': truths closer than 1e-9 are a tie, skipped): X at 2020-06 =
# 0.5, 2020-07 = 0.5 + 1e-10 (a tie), 2020-08 = 0.5 + 1e-8 (scored)
import shutil
shutil.copy(os.path.join(d, "in.h5"), os.path.join(d, "tie.h5"))
with h5py.File(os.path.join(d, "tie.h5"), "r+") as f:
    ts, tm, tv = (list(f["leak/" + k][...]) for k in ("truth_series", "truth_month", "truth_value"))
    for m, v in ((202006, 0.5), (202007, 0.5 + 1e-10), (202008, 0.5 + 1e-8)):
        ts.append(0), tm.append(m), tv.append(v)
    for k, v in (("truth_series", ts), ("truth_month", tm), ("truth_value", tv)):
        dt = f["leak/" + k].dtype
        del f["leak/" + k]
        f["leak/" + k] = np.array(v, dt)
    del f["leak/rank"]
    rg = f.create_group("leak/rank")
    rg["model"], rg["series"] = np.zeros(2, np.int32), np.zeros(2, np.int32)
    rg["month_a"], rg["month_b"] = np.array([202006, 202008], np.int32), np.array([202007, 202006], np.int32)
    rg["pick"] = np.array([0, 0], np.int8)
jt = write_job(os.path.join(d, "tie.json"), [dict(base, name="tie", input="tie.h5", bootstrap=0)])
code, out, err = run(["run", jt, "--force"])
check(code == 0, f"ranking near-tie run ({err})")
x = {(y["model"], y["series"]): y for y in load_report(os.path.join(d, "out", "tie.json"))["result"]["ranking"]}[("m-a", "X")]
check((x["n_picked"], x["n_tie"], x["n_scored"], x["n_correct"]) == (2, 1, 1, 1),
      f"truths 1e-10 apart are a tie, 1e-8 apart are scored: {x}")
done()
