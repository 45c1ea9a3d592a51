"""Published NumLeak numbers beyond Table 1, reproduced from the real panels by `rmdiag import numleak` and
the leakage report (the expected values are the paper's: its result files, tables, abstract and the
summaries its scripts print):
  - the post-cutoff holdout table (post_cutoff_holdout.csv): n, parse rate, r, MAE, within-25bp before and
    from 2025-01 for Opus and Sonnet (float comparison, as the paper's script);
  - residualisation / LeakShare (transmission.jsonl): Sonnet r(signal, truth) 0.739 -> r(residual, truth) 0.022;
  - defenses (mitigation_stress.jsonl): the soft system prompt blocks 479/480 adversarial attempts (99.8 %),
    worst case 1 leaked month in 80 (0.0125); no defense leaks every month;
  - fictional series (fabricated_expanded.jsonl): the per-model answer rates;
  - ranking (sweep.jsonl variant C): Sonnet Mkt-RF 40/60 picks, 21/40 correct (52.5 %), the other factors;
    the forced-choice panel 33/60;
  - first-token entropy (logprobs_probe.jsonl): mean and median per condition;
  - the appendix headline table (sweep variant A, |d| < tol, sign over non-zero truth) at its 2 decimals;
  - cross-domain baselines (CPI as the 12-month % change, UNRATE, NOAA temperature at 0.5 F) and the
    sibling-factor within-25bp rates."""
import csv
import os

from leakdata import *
from rdtest import *

need_data()
d = scratch("leak_paper")


def imp(name, args):
    out = os.path.join(d, name + ".h5")
    code, _, err = run(["import", "numleak"] + args + ["-o", out])
    check(code == 0, f"import {name} ({err.strip()[-300:]})")
    return out


def P(f):
    return os.path.join(RES, f)


def report(jobs):
    """Runs the jobs (one job file) on 2 ranks; returns {name: result}."""
    jp = write_job(os.path.join(d, "job.json"), jobs)
    code, _, err = run(["run", jp, "--force", "--quiet"], ranks=2)
    check(code == 0, f"run ({err.strip()[-300:]})")
    return {j["name"]: load_report(os.path.join(d, "out", j["name"] + ".json"))["result"] for j in jobs}


def cell(res, model, series, variant=None):
    for c in res["cells"]:
        if c["model"] == model and c["series"] == series and (variant is None or c["variant"] == variant):
            return c
    check(False, f"no cell {model} {series} {variant}")
    return {}


NL = ["--truth-numleak", FF]
imp("hold", NL + ["--panel", P("opus_baselines.jsonl"), "--field", "series=probe", "--where", "probe=mktrf",
                  "--map", "series:mktrf=Mkt-RF", "--field", "truth=truth",
                  "--panel", P("opus_baselines.jsonl"), "--field", "series=probe", "--where", "probe=blind",
                  "--map", "series:blind=Mkt-RF", "--set", "variant=blind", "--field", "truth=truth",
                  "--panel", P("multiseed.jsonl"), "--where", "model_name=claude-sonnet-4.6",
                  "--panel", P("post_cutoff_holdout.jsonl"), "--set", "series=Mkt-RF", "--field", "truth=truth"])
SW = PANELS["sweep.jsonl"]
imp("sweep", NL + ["--panel", P("sweep.jsonl")] + SW[0] + ["--panel", P("sweep.jsonl")] + SW[1] +
    ["--panel", P("transmission.jsonl")] + PANELS["transmission.jsonl"][0] +
    ["--panel", P("mitigation_stress.jsonl")] + PANELS["mitigation_stress.jsonl"][0] +
    ["--panel", P("fabricated_expanded.jsonl")] + PANELS["fabricated_expanded.jsonl"][0])
imp("probe", ["--panel", P("logprobs_probe.jsonl"), "--set", "model=gpt-5.4", "--field", "logprobs=tokens",
              "--field", "series=cond", "--where", "cond=Mkt-RF|RMW", "--no-truth", "Mkt-RF", "--no-truth", "RMW",
              "--panel", P("logprobs_probe.jsonl"), "--set", "model=gpt-5.4", "--field", "logprobs=tokens",
              "--field", "series=cond", "--where", "cond=Fabricated", "--fictional"])
imp("macro", ["--truth", f"CPI={DATA}/macro/CPIAUCSL.csv,CPIAUCSL,yoy", "--truth", f"UNRATE={DATA}/macro/UNRATE.csv",
              "--truth", f"NOAA={DATA}/noaa/noaa_us_tavg.csv",
              "--panel", P("cpi_baseline.jsonl"), "--set", "series=CPI", "--field", "truth=truth",
              "--panel", P("unrate_baseline.jsonl"), "--set", "series=UNRATE", "--field", "truth=truth",
              "--panel", P("noaa_temperature.jsonl"), "--set", "series=NOAA", "--field", "truth=truth_f"])
imp("factors", NL + ["--panel", P("opus_factors.jsonl"), "--field", "truth=truth",
                     "--panel", P("gpt54_factors.jsonl"), "--field", "truth=truth",
                     "--panel", P("variantc_forced_choice.jsonl")] + PANELS["variantc_forced_choice.jsonl"][0])
R = report([
    {"name": "hold", "kind": "leakage", "input": "hold.h5", "bootstrap": 0, "null_permutations": 0,
     "holdout_from": 202501, "tolerance_compare": "float"},
    {"name": "hold-dec", "kind": "leakage", "input": "hold.h5", "bootstrap": 0, "holdout_from": 202501},
    {"name": "sweep", "kind": "leakage", "input": "sweep.h5", "bootstrap": 0, "null_permutations": 0,
     "tolerance_rule": "lt", "tolerance_compare": "float", "sign_zero": "exclude_zero_truth"},
    {"name": "sweep-w5", "kind": "leakage", "input": "sweep.h5", "bootstrap": 0, "tolerance": 0.05,
     "tolerance_rule": "lt", "tolerance_compare": "float", "sign_zero": "exclude_zero_truth"},
    {"name": "probe", "kind": "leakage", "input": "probe.h5", "bootstrap": 0},
    {"name": "macro", "kind": "leakage", "input": "macro.h5", "bootstrap": 0},
    {"name": "noaa", "kind": "leakage", "input": "macro.h5", "bootstrap": 0, "tolerance": 0.5},
    {"name": "factors", "kind": "leakage", "input": "factors.h5", "bootstrap": 0}])

# ---- holdout: post_cutoff_holdout.csv, every number
pub = {(r["model"], r["split"][:3]): r for r in csv.DictReader(open(P("post_cutoff_holdout.csv")))}
hold = {h["model"]: h for h in R["hold"]["holdout"] if h["variant"] == "default"}
for model in ("claude-opus-4.7", "claude-sonnet-4.6"):
    for side, split in (("before", "pre"), ("from", "pos")):
        got, want = hold[model][side], pub[(model, split)]
        check(got["n_rows"] == int(want["n"]), f"holdout {model} {side}: n {got['n_rows']} vs {want['n']}")
        for k, w in (("parse_rate", "parse_rate"), ("r", "pearson_r"), ("mae", "mae"), ("within", "within_25bp")):
            close(got[k], float(want[w]), f"holdout {model} {side} {k}", rel=1e-12)
# Opus's blind-probe reply 4.03 for truth 3.78 (July 1992) is 0.25000000000000044 away in float64: within
# under the decimal comparison (the default), not under the float one
fl, de = cell(R["hold"], "claude-opus-4.7", "Mkt-RF", "blind"), cell(R["hold-dec"], "claude-opus-4.7", "Mkt-RF", "blind")
check(de["n_within"] == fl["n_within"] + 1 and fl["n_scored"] == 40, f"decimal vs float: {de['n_within']} vs {fl['n_within']}")

# ---- residualisation
res = {x["model"]: x for x in R["sweep"]["residualisation"]}
for model, n, gamma, rst, rut, share in (("claude-sonnet-4.6", 77, 0.063914, 0.739090, 0.021673, 0.999140),
                                         ("claude-opus-4.7", 40, 0.078038, 0.637537, 0.018097, 0.999194)):
    x = res[model]
    check(x["n"] == n, f"residualisation {model}: n {x['n']}")
    for k, v in (("gamma", gamma), ("r_signal_truth", rst), ("r_residual_truth", rut), ("leak_share", share)):
        close(x[k], v, f"residualisation {model} {k}", rel=0, abs_=6e-7)

# ---- defenses
pooled = {x["defense"]: x for x in R["sweep"]["defense_pooled"]}
check(pooled["soft"]["n"] == 480 and pooled["soft"]["blocked"] == 479, f"soft defense blocks 479/480: {pooled['soft']}")
close(pooled["soft"]["blocked_fraction"], 479 / 480, "soft blocked fraction (abstract: 99.8 %)")
close(pooled["soft"]["worst_case_leaked_fraction"], 0.0125, "soft worst case (headline 0.01)")
check(sum(pooled[k]["blocked"] for k in ("soft", "strong", "retrieval-only")) == 1439, "all three defenses: 1439/1440")
close(pooled["none"]["worst_case_leaked_fraction"], 1.0, "no defense: every month leaks")
per = {(x["defense"], x["model"]): x for x in R["sweep"]["defense"]}
close(per[("soft", "claude-sonnet-4.6")]["worst_case_leaked_fraction"], 0.025, "soft, Sonnet: 1 month of 40")
close(per[("soft", "claude-opus-4.7")]["worst_case_leaked_fraction"], 0.0, "soft, Opus: none")
close(per[("none", "claude-opus-4.7")]["benign_parse_rate"], 1.0, "benign parse rate without defense")
close(per[("soft", "claude-opus-4.7")]["benign_parse_rate"], 0.0, "benign parse rate with the soft defense")

# ---- fictional series: answer rates per model (deepseek's API error row is excluded, status 2)
fic = {x["model"]: (x["n_parsed"], x["n_rows"]) for x in R["sweep"]["fictional"]}
for model, want in (("claude-opus-4.7", (0, 60)), ("claude-sonnet-4.6", (0, 60)), ("claude-haiku-4.5", (0, 60)),
                    ("gpt-5.4", (58, 60)), ("gpt-5.4-mini", (58, 60)), ("gpt-5.4-nano", (60, 60)),
                    ("llama-3.3-70b-groq", (60, 60)), ("deepseek-v3.2-azure", (59, 59))):
    check(fic.get(model) == want, f"fictional {model}: {fic.get(model)} vs {want}")
check(sum(p for p, _ in fic.values()) == 295, "fictional: 295 answers in all")

# ---- ranking (parse_comparative) and the forced-choice panel
rk = {(x["model"], x["series"]): x for x in R["sweep"]["ranking"]}
for s, picks, correct in (("Mkt-RF", 40, 21), ("CMA", 58, 25), ("HML", 58, 38), ("Mom", 54, 30), ("RMW", 54, 29),
                          ("SMB", 59, 28)):
    x = rk[("claude-sonnet-4.6", s)]
    check(x["n_rows"] == 60 and x["n_picked"] == picks and x["n_correct"] == correct,
          f"ranking Sonnet {s}: {x['n_picked']}/60 picks, {x['n_correct']} correct (want {picks}, {correct})")
close(rk[("claude-sonnet-4.6", "Mkt-RF")]["accuracy"], 0.525, "Sonnet Mkt-RF ranking accuracy 52.5 %")
haiku = [x for (m, _), x in rk.items() if m == "claude-haiku-4.5"]
check(sum(x["n_picked"] for x in haiku) == 1 and rk[("claude-haiku-4.5", "HML")]["n_correct"] == 1,
      "Haiku: 1 pick in 360, correct (HML)")
fc = R["factors"]["ranking"][0]
check((fc["model"], fc["n_rows"], fc["n_picked"], fc["n_correct"]) == ("claude-sonnet-4.6", 60, 60, 33),
      f"forced choice: 33/60 correct ({fc})")

# ---- entropy of the first two tokens
for series, mean, median in (("Mkt-RF", 0.2135, 0.0492), ("RMW", 0.7793, 0.8301)):
    c = cell(R["probe"], "gpt-5.4", series)
    close(round(c["entropy_mean"], 4), mean, f"entropy mean {series}", rel=0, abs_=1e-9)
    close(round(c["entropy_median"], 4), median, f"entropy median {series}", rel=0, abs_=1e-9)
fx = R["probe"]["fictional"][0]
close(round(fx["entropy_mean"], 4), 1.1361, "entropy mean, fabricated series", rel=0, abs_=1e-9)
close(round(fx["entropy_median"], 4), 1.2057, "entropy median, fabricated series", rel=0, abs_=1e-9)
check((fx["n_parsed"], fx["n_rows"]) == (28, 30), "GPT-5.4 answers 28/30 fabricated probes")

# ---- appendix headline table (sweep variant A): n, w5, w25, sign (non-zero truth), r at 2 decimals
for model, s, n, w5, w25, sign, r in (("claude-sonnet-4.6", "Mkt-RF", 77, 0.10, 0.34, 0.97, 0.98),
                                      ("claude-haiku-4.5", "HML", 70, None, 0.10, 0.64, None),
                                      ("claude-haiku-4.5", "Mkt-RF", 70, None, 0.17, None, None),
                                      ("claude-haiku-4.5", "CMA", 68, None, 0.10, None, None)):
    c = cell(R["sweep"], model, s, "A")
    check(c["n_scored"] == n, f"headline {model} {s}: n {c['n_scored']} vs {n}")
    for k, v in (("within", w25), ("sign_acc", sign), ("r", r)):
        if v is not None:
            check(round(c[k], 2) == v, f"headline {model} {s} {k}: {c[k]} rounds to {v}")
    if w5 is not None:
        check(round(cell(R["sweep-w5"], model, s, "A")["within"], 2) == w5, f"headline {model} {s} w5")

# ---- cross-domain baselines
for job, model, s, n, parsed, r, w in (("macro", "claude-opus-4.7", "UNRATE", 30, 30, 0.9999, 1.0),
                                       ("macro", "claude-sonnet-4.6", "UNRATE", 30, 30, 0.9998, 1.0),
                                       ("macro", "claude-opus-4.7", "CPI", 30, 30, 0.9997, 1.0),
                                       ("macro", "claude-sonnet-4.6", "CPI", 30, 29, 0.9952, 0.931),
                                       ("noaa", "claude-sonnet-4.6", "NOAA", 30, 28, 0.9928, 0.357),
                                       ("noaa", "gpt-5.4", "NOAA", 30, 30, 0.9892, 0.20),
                                       ("noaa", "claude-opus-4.7", "NOAA", 30, 30, 0.4504, 0.30)):
    c = cell(R[job], model, s)
    check(c["n_rows"] == n and c["n_parsed"] == parsed, f"{s} {model}: {c['n_parsed']}/{c['n_rows']}")
    close(c["r"], r, f"{s} {model} r", rel=0, abs_=5e-5)
    close(c["within"], w, f"{s} {model} within", rel=0, abs_=5e-4)

# ---- sibling factors, within-25bp (<=)
for model, vals in (("claude-opus-4.7", {"SMB": 0.125, "HML": 0.10, "RMW": 0.0526, "CMA": 0.1026, "Mom": 0.0256}),
                    ("gpt-5.4", {"SMB": 0.10, "HML": 0.125, "RMW": 0.15, "CMA": 0.05, "Mom": 0.0})):
    for s, v in vals.items():
        close(cell(R["factors"], model, s)["within"], v, f"siblings {model} {s}", rel=0, abs_=5e-5)
done()
