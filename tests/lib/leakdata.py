"""Helpers for the leakage tests: where the real NumLeak data lives, the importer options of every real
panel, and independent restatements (Python's re and unicodedata, numpy) of NumLeak's reply parser,
the Kenneth French loader and the report's statistics, used as oracles."""
import math
import os
import re
import sys
import unicodedata

from rdtest import SKIP, np

SHARED = os.environ.get("RMDIAG_SHARED") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared")
DATA = os.path.join(SHARED, "data", "numleak")
RES = os.path.join(DATA, "results")
FF = os.path.join(DATA, "ff")


def need_data():
    if not os.path.isdir(RES):
        print(f"SKIP: the NumLeak data folder {DATA} is absent (set RMDIAG_SHARED)")
        sys.exit(SKIP)


# ---- importer options of every real panel (one entry per --panel; see README "Importing NumLeak") ----
SWEEP = ["--field", "model=query.model_name", "--field", "series=query.factor", "--field", "variant=query.variant",
         "--field", "month=query.month", "--field", "key=key"]
BASELINE = ["--field", "series=probe", "--map", "series:mktrf=Mkt-RF", "--field", "truth=truth"]
PANELS = {
    "sweep.jsonl": [SWEEP + ["--where", "query.variant=A|B"],
                    SWEEP + ["--as", "rank", "--field", "month_b=query.month2", "--where", "query.variant=C"]],
    "camera_ready_multiseed.jsonl": [[]],
    "multiseed.jsonl": [[]],
    "opus_baselines.jsonl": [BASELINE],
    "gpt54_baselines.jsonl": [BASELINE],
    "gpt55_baselines.jsonl": [BASELINE],          # needs --nan-truth missing (NaN nasdaq truths)
    "llama_baselines.jsonl": [BASELINE],
    "more_baselines.jsonl": [BASELINE],
    "opus_factors.jsonl": [["--field", "truth=truth"]],
    "gpt54_factors.jsonl": [["--field", "truth=truth"]],
    "gpt55_factors.jsonl": [["--field", "truth=truth"]],
    "llama_factors.jsonl": [["--field", "truth=truth"]],
    "more_factors.jsonl": [["--field", "truth=truth"]],
    "blind_query.jsonl": [["--set", "series=Mkt-RF", "--set", "variant=blind"]],
    "snp500_baseline.jsonl": [["--set", "series=snp500"]],
    "nasdaq_baseline.jsonl": [["--set", "series=nasdaq"]],
    "controls.jsonl": [["--field", "series=kind", "--fictional"]],
    "fabricated_expanded.jsonl": [["--field", "series=name", "--fictional"]],
    "logprobs_probe.jsonl": [["--set", "model=gpt-5.4", "--field", "logprobs=tokens", "--where", "cond=Mkt-RF|RMW"],
                             ["--set", "model=gpt-5.4", "--field", "logprobs=tokens", "--where", "cond=Fabricated",
                              "--fictional"]],
    "transmission.jsonl": [["--as", "signal", "--field", "recall=recall_estimate"]],
    "transmission_placebo.jsonl": [["--field", "series=probe", "--map", "series:recall_mktrf=Mkt-RF",
                                    "--where", "probe=recall_mktrf", "--field", "truth=truth_mktrf"],
                                   ["--field", "series=probe", "--where", "probe=sentiment"]],
    "transmission_scrambled.jsonl": [["--as", "signal", "--field", "month=orig_month", "--field", "recall=recall_orig"]],
    "mitigation_stress.jsonl": [["--as", "defense", "--where", "kind=recall_benign|recall_adv",
                                 "--field", "attack=adv_idx", "--map", "attack:-1=benign"]],
    "mitigation_prompt.jsonl": [["--set", "series=Mkt-RF", "--field", "variant=condition", "--field", "truth=truth"]],
    "post_cutoff_holdout.jsonl": [["--set", "series=Mkt-RF", "--field", "truth=truth"]],
    "cpi_baseline.jsonl": [["--set", "series=CPI", "--field", "truth=truth"]],
    "unrate_baseline.jsonl": [["--set", "series=UNRATE", "--field", "truth=truth"]],
    "noaa_temperature.jsonl": [["--set", "series=NOAA", "--field", "truth=truth_f"]],
    "coverage_matched.jsonl": [["--field", "series=series", "--field", "truth=truth"]],
    "phrasing_perturbation.jsonl": [["--set", "series=Mkt-RF", "--field", "variant=phrasing", "--field", "truth=truth"]],
    "in_context_contradiction.jsonl": [["--set", "series=Mkt-RF", "--field", "variant=condition",
                                        "--field", "truth=truth"]],
    "variant_d.jsonl": [["--set", "variant=D"]],
    "variant_e_temperature.jsonl": [["--set", "variant=E", "--field", "seed=draw"]],
    "variantc_forced_choice.jsonl": [["--as", "rank", "--set", "series=Mkt-RF", "--field", "month=month1",
                                      "--field", "month_b=month2"]],
    "verbatim_extraction.jsonl": [["--set", "series=verbatim", "--field", "variant=template",
                                   "--field", "month=start_month"]],
}
# truth options every import gets; panels' extra global options
TRUTH = ["--truth-numleak", FF, "--truth", f"CPI={DATA}/macro/CPIAUCSL.csv,CPIAUCSL,yoy",
         "--truth", f"UNRATE={DATA}/macro/UNRATE.csv", "--truth", f"NOAA={DATA}/noaa/noaa_us_tavg.csv",
         "--no-truth", "snp500", "--no-truth", "nasdaq", "--no-truth", "verbatim", "--no-truth", "sentiment",
         "--nan-truth", "missing"]
# files in results/ that are not model-reply panels (derived tables, judge agreement, white-box ranks)
NOT_PANELS = {"camera_ready_multiseed_stats.json", "post_cutoff_holdout.csv", "cross_mirror_cache.csv",
              "cross_mirror_score.jsonl", "famous_random_split.jsonl", "mitigation_judge_replication.jsonl",
              "71b_logprob_ranking.jsonl"}


def panel_args(name, extra_global=()):
    """Import arguments for one real panel file (every --panel entry of it)."""
    args = list(TRUTH) + list(extra_global)
    for opts in PANELS[name]:
        args += ["--panel", os.path.join(RES, name)] + opts
    return args


def load_jsonl(path):
    import json
    rows = []
    with open(path) as f:
        for line in f:
            if line.strip():
                rows.append(json.loads(line))
    return rows


# ---- an independent statement of the reply parser (docs/reference.md, 'Import formats') ----
_DASH = {0x2212: "-", 0x2013: "-", 0x2014: "-", 0x2010: "-"}
_NUM = r"[-+]?\d+(?:\.\d+)?"
_PCT = re.compile(rf"({_NUM})\s*%")
_PERCENT = re.compile(rf"({_NUM})\s*percent\b", re.I)
_BPS = re.compile(rf"({_NUM})\s*(?:bps|basis\s*points?)\b", re.I)
_BARE = re.compile(rf"(?<![A-Za-z])({_NUM})(?![A-Za-z])")


def parse_numeric(text):
    if text is None:
        return None
    s = unicodedata.normalize("NFKC", text).translate(_DASH).strip()
    if not s:
        return None
    hits = [float(m.group(1)) for m in _PCT.finditer(s)] + [float(m.group(1)) for m in _PERCENT.finditer(s)]
    hits += [float(m.group(1)) / 100.0 for m in _BPS.finditer(s)]
    if hits:
        return sum(hits) / len(hits)
    if len(s) > 30:
        return None
    m = _BARE.search(s)
    if not m:
        return None
    v = float(m.group(1))
    return None if abs(v) > 100 else v


_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December"]
_MA = "|".join(_MONTHS)
_MY = re.compile(rf"\b({_MA})\b\s*,?\s*(\d{{4}})", re.I)
_SE = re.compile(rf"(?:my\s+answer\s+is|answer\s*[:\-]|answer\s+is|i\s+(?:pick|picked|choose|chose|select)|"
                 rf"the\s+(?:pick|answer|higher|winner)\s+is|higher\s+return\s+was\s+in|had\s+the\s+higher\s+return\s+in)"
                 rf"\s+({_MA})\s*,?\s*(\d{{4}})", re.I)
_ECHO = re.compile(r"^\s*(between|comparing|compared\s+to|the\s+two\s+months|of\s+(?:the|these)\s+two|"
                   r"of\s+the\s+two\s+months|looking\s+at|considering)\b", re.I)
_REF = re.compile(r"(?:i\s+(?:do\s+not|don['\u2019]?t|cannot|can['\u2019]?t|am\s+not|'m\s+not|don['\u2019]?t\s+have|"
                  r"do\s+not\s+have)\s+(?:access|the|have|know|enough|specific|reliable|sufficient|exact|historical|"
                  r"confident|sure|precise|memorized|memoriz|that)|no\s+access\s+to|unable\s+to|not\s+able\s+to|"
                  r"don['\u2019]?t\s+have\s+access|i\s+don['\u2019]?t\s+have|i\s+cannot\s+(?:reliably|determine|provide|"
                  r"recall|answer|give)|cannot\s+reliably|would\s+require\s+access|without\s+access|beyond\s+my\s+knowledge|"
                  r"outside\s+(?:of\s+)?my\s+training|i['\u2019]?m\s+not\s+able|i\s+can['\u2019]?t\s+answer|"
                  r"i\s+need\s+to\s+be\s+(?:careful|straightforward|honest)|cannot\s+provide|unavailable|not\s+available)",
                  re.I)


def parse_comparative(text, a, b):
    """0 (month a), 1 (month b) or -1 (no pick); a and b are YYYYMM."""
    if text is None:
        return -1
    s = unicodedata.normalize("NFKC", text).translate(_DASH).strip()
    key = lambda m: int(m.group(2)) * 100 + _MONTHS.index(m.group(1).title()) + 1
    valid = [(m.start(), key(m)) for m in _MY.finditer(s) if key(m) in (a, b)]
    if not valid:
        return -1
    se = _SE.search(s)
    if _REF.search(s) and se is None:
        return -1
    if len({k for _, k in valid}) == 1:
        k = valid[0][1]
    elif se and key(se) in (a, b):
        k = key(se)
    elif _ECHO.match(s):
        k = valid[-1][1]
    elif valid[0][0] <= 5:
        k = valid[0][1]
    else:
        k = valid[-1][1]
    return 0 if k == a else 1


def load_french(path):
    """{column: {YYYYMM: value}} of a Kenneth French file's monthly block (-99.99/-999 missing)."""
    with open(path, encoding="latin-1") as f:
        lines = f.read().splitlines()
    h = next(i for i, l in enumerate(lines) if re.match(r"^\s*,\s*[A-Za-z]", l))
    cols = [c.strip() for c in lines[h].split(",")][1:]
    out = {c: {} for c in cols}
    started = False
    for l in lines[h + 1:]:
        s = l.strip()
        if not s:
            if started:
                break
            continue
        p = [x.strip() for x in s.split(",")]
        if not re.fullmatch(r"\d{6}", p[0]):
            break
        started = True
        for c, v in zip(cols, p[1:]):
            x = float(v)
            if x not in (-99.99, -999.0):
                out[c][int(p[0])] = x
    return out


def numleak_truth():
    """{series: {YYYYMM: value}} by NumLeak's convention (FF3: Mkt-RF SMB HML; FF5: RMW CMA; Mom)."""
    f3 = load_french(os.path.join(FF, "F-F_Research_Data_Factors.csv"))
    f5 = load_french(os.path.join(FF, "F-F_Research_Data_5_Factors_2x3.csv"))
    fm = load_french(os.path.join(FF, "F-F_Momentum_Factor.csv"))
    return {"Mkt-RF": f3["Mkt-RF"], "SMB": f3["SMB"], "HML": f3["HML"], "RMW": f5["RMW"], "CMA": f5["CMA"],
            "Mom": fm["Mom"]}


def month_int(s):
    s = str(s)
    return int(s[:4]) * 100 + int(s[5:7]) if "-" in s else int(s)


def pearson(x, y):
    x, y = np.asarray(x, float), np.asarray(y, float)
    if x.size < 3:
        return None
    dx, dy = x - x.mean(), y - y.mean()
    sxx, syy = (dx * dx).sum(), (dy * dy).sum()
    return None if sxx == 0 or syy == 0 else float((dx * dy).sum() / math.sqrt(sxx * syy))


def gen_panel(path, M=5, S=6, V=2, K=3, T=240, seed=0, fictional=True, controls=True, chunked=True):
    """A synthetic panel in the leakage input layout: strong / partial / no recall cells, refusals, excluded
    rows, exact zeros in truth and estimates, |est - truth| = 0.25 exactly, months without truth, a
    fictional series, entropy, and ranking, signal and defense rows. Returns the arrays used."""
    import h5py
    rng = np.random.default_rng(seed)
    months = np.array([199001 + 100 * (t // 12) + t % 12 for t in range(T)], np.int32)
    truth = np.round(rng.normal(0.3, 3.0, (S, T)), 2)
    truth[rng.random((S, T)) < 0.01] = 0.0
    mm, ss, vv, kk, tt = (a.ravel() for a in np.meshgrid(np.arange(M), np.arange(S), np.arange(V), np.arange(K),
                                                           np.arange(T), indexing="ij"))
    Q = mm.size
    kind = rng.integers(0, 3, (M, S))
    y = truth[ss, tt]
    k = kind[mm, ss]
    est = np.where(k == 0, y + rng.normal(0, 0.15, Q), np.where(k == 1, 0.5 * y + rng.normal(0, 2, Q),
                                                                  rng.normal(0.3, 3, Q)))
    u = rng.random(Q)
    est = np.where(u < 0.05, y + np.where(u < 0.025, 0.25, -0.25), est)
    est = np.round(np.where(u > 0.99, 0.0, est), 2)
    v = rng.random(Q)
    status = np.where(v < 0.03, 2, np.where(v < 0.15, 1, 0)).astype(np.uint8)
    fict = np.zeros(S, np.uint8)
    if fictional:
        fict[S - 1] = 1
    value = np.where(status == 0, est, np.nan)
    ent = np.where(rng.random(Q) < 0.1, np.nan, rng.gamma(2, 0.3, Q))
    order = rng.permutation(Q)
    kw = dict(chunks=True, compression="gzip", compression_opts=1) if chunked else {}
    with h5py.File(path, "w") as f:
        g = f.create_group("leak")
        st = h5py.string_dtype("utf-8")
        g.create_dataset("model_names", data=[f"model-{i}" for i in range(M - 1)] + ["modèle-ü"], dtype=st)
        g.create_dataset("series_names", data=[f"S{i}" for i in range(S)], dtype=st)
        g.create_dataset("variant_names", data=[chr(65 + i) for i in range(V)], dtype=st)
        g["series_fictional"] = fict
        for name, a in (("model", mm), ("series", ss), ("variant", vv), ("seed", kk + 1), ("month", months[tt])):
            g.create_dataset(name, data=a[order].astype(np.int32), **kw)
        g.create_dataset("value", data=value[order], **kw)
        g.create_dataset("status", data=status[order], **kw)
        g.create_dataset("entropy_bits", data=ent[order], **kw)
        keep = np.ones((S, T), bool)
        keep[:, :3] = False                      # the first months have no truth
        keep[S - 1] = False                      # the fictional series has none
        ts, tm = np.nonzero(keep)
        g["truth_series"], g["truth_month"], g["truth_value"] = ts.astype(np.int32), months[tm], truth[ts, tm]
        if controls:
            n = 400
            r = f.create_group("leak/rank")
            r["model"], r["series"] = rng.integers(0, M, n).astype(np.int32), rng.integers(0, S - 1, n).astype(np.int32)
            r["month_a"], r["month_b"] = months[rng.integers(0, T, n)], months[rng.integers(0, T, n)]
            r["pick"] = rng.integers(-1, 2, n).astype(np.int8)
            s = f.create_group("leak/signal")
            ti = rng.integers(0, T, n)
            s["model"], s["month"] = rng.integers(0, M, n).astype(np.int32), months[ti]
            s["recall"] = truth[0, ti] + rng.normal(0, 0.5, n)
            s["signal"] = np.where(rng.random(n) < 0.05, np.nan, 0.1 * s["recall"][...] + rng.normal(0, 0.3, n))
            e = f.create_group("leak/defense")
            e["defense"], e["attack"] = rng.integers(0, 3, n).astype(np.int32), rng.integers(0, 4, n).astype(np.int32)
            e["model"], e["month"] = rng.integers(0, M, n).astype(np.int32), months[rng.integers(0, 20, n)]
            e["blocked"] = (rng.random(n) < 0.7).astype(np.uint8)
            e.create_dataset("defense_names", data=["none", "soft", "strong"], dtype=st)
            e.create_dataset("attack_names", data=["benign", "a0", "a1", "a2"], dtype=st)
    return dict(order=order, truth=truth, months=months, fict=fict, keep=keep)
