"""Bad inputs for the leakage report and for `rmdiag import numleak`: each exits with status 2, prints one
message naming the file, the dataset / JSON field / option, the row or line and what was expected, and
writes nothing. The report's value errors name the lowest offending row for any rank count."""
import os
import subprocess

from leakdata import gen_panel
from rdtest import *

d = scratch("leak_bad")
base = os.path.join(d, "base.h5")
gen_panel(base, M=3, S=4, V=1, K=2, T=60, seed=2, chunked=False)
with h5py.File(base) as f:
    status = f["leak/status"][...]
    value = f["leak/value"][...]
first_parsed = int(np.flatnonzero(status == 0)[0])
first_unparsed = int(np.flatnonzero(status == 1)[0])


def expect_fail(name, args, expect, ranks=0, outdir=None, out_file=None):
    msgs = expect_input_error(name, args, expect, ranks=(ranks,), out_dir=outdir, out_file=out_file,
                              exact_folder=False, timeout=120)
    return msgs[0].splitlines()


def case(name, mutate=None, job_extra=None, expect=(), ranks=(0,)):
    cd = os.path.join(d, name)
    os.makedirs(cd, exist_ok=True)
    path = os.path.join(cd, "in.h5")
    with h5py.File(base) as src, h5py.File(path, "w") as dst:
        for k in src:
            src.copy(src[k], dst, name=k)
        if mutate:
            mutate(dst["leak"])
    job = {"name": "bad", "kind": "leakage", "input": "in.h5", "bootstrap": 5, "null_permutations": 5, "signal_series": "S0"}
    job.update(job_extra or {})
    jp = write_job(os.path.join(cd, "job.json"), [job])
    expect_input_error(name, ["run", jp], expect, ranks=ranks, out_dir=os.path.join(cd, "out"), exact_folder=False)


def setv(ds, i, v):
    def m(g):
        a = g[ds][...]
        a[i] = v
        del g[ds]
        g[ds] = a
    return m


def both(*ms):
    def m(g):
        for x in ms:
            x(g)
    return m


# the unchanged input runs (so each failure below comes from its own change)
cd = os.path.join(d, "good")
os.makedirs(cd, exist_ok=True)
jp = write_job(os.path.join(cd, "job.json"), [{"name": "ok", "kind": "leakage", "input": base, "bootstrap": 5,
                                               "null_permutations": 5, "signal_series": "S0", "family": ["S0", "S1"]}])
code, _, err = run(["run", jp, "--quiet"])
check(code == 0, f"the unchanged input runs ({err})")
# status/value consistency: the lowest offending row is reported whichever rank count
later = first_parsed + 1000
case("parsed_nan", both(setv("value", later, np.nan), setv("value", first_parsed, np.nan)), ranks=(0, 3),
     expect=["in.h5", "/leak/value", f"row {first_parsed}:", "finite value with status 0"])
case("unparsed_value", setv("value", first_unparsed, 1.5),
     expect=["/leak/value", f"row {first_unparsed}:", "NaN with status 1"])
case("status_3", setv("status", 7, 3), expect=["/leak/status", "row 7:", "0 (parsed), 1 (no number) or 2"])
case("bad_month", setv("month", 11, 202013), expect=["/leak/month", "row 11:", "YYYYMM", "202013"])
case("model_range", setv("model", 5, 3), expect=["/leak/model", "row 5:", "index into model_names (0..2)"])
case("nan_truth", setv("truth_value", 4, np.nan), expect=["/leak/truth_value", "truth row 4", "finite value"])


def dup_truth(g):
    for k in ("truth_series", "truth_month", "truth_value"):
        a = g[k][...]
        a[9] = a[8]
        del g[k]
        g[k] = a


with h5py.File(base) as f:
    dup_series = f["leak/series_names"].asstr()[f["leak/truth_series"][8]]
case("duplicate_truth", dup_truth, expect=["/leak/truth_month: truth rows 8 and 9", f'series "{dup_series}", month',
                                           "one truth value per (series, month)"])


def month64(ds, i, v):
    """Sets ds[i] = v in an int64 copy of the dataset (a value beyond int32)."""
    def m(g):
        a = g[ds][...].astype(np.int64)
        a[i] = v
        del g[ds]
        g[ds] = a
    return m


# a month beyond int32 is reported as it is in the file (not as a placeholder)
case("month_int64", month64("month", 13, 2**40), ranks=(0, 2),
     expect=["/leak/month: row 13:", "a month YYYYMM (MM 01-12), got 1099511627776"])
case("truth_month_int64", month64("truth_month", 6, -2**35),
     expect=["/leak/truth_month: truth row 6:", "got -34359738368"])
case("rank_month_int64", month64("rank/month_b", 2, 2**33), expect=["/leak/rank: row 2:", "month_b", "got 8589934592"])
case("unknown_family", job_extra={"family": ["S0", "S9"]}, expect=['"family" names series "S9"', "series_names"])
case("bad_rule", job_extra={"tolerance_rule": "leq"}, expect=['"tolerance_rule" = "leq" is not allowed', '"le", "lt"'])
case("bad_holdout", job_extra={"holdout_from": 202013}, expect=['"holdout_from" = 202013 is not a month'])
case("bad_option", job_extra={"tolerence": 0.5}, expect=['unknown key "tolerence"'])
case("pick_2", setv("rank/pick", 3, 2), expect=["/leak/rank: row 3", "pick (0 = month_a, 1 = month_b, -1 = no pick)"])
case("signal_series", job_extra={"signal_series": "SPX"}, expect=['"signal_series" = "SPX"', "not in /leak/series_names"])


def drop(name):
    def m(g):
        del g[name]
    return m


def shorten(name):
    def m(g):
        a = g[name][...]
        del g[name]
        g[name] = a[:-1]
    return m


def empty(g):
    for k in ("model", "series", "variant", "seed", "month", "status"):
        del g[k]
        g[k] = np.zeros(0, np.int32)
    for k in ("value", "entropy_bits"):
        del g[k]
        g[k] = np.zeros(0)
    for k in ("rank", "signal", "defense"):
        del g[k]


case("missing_truth_value", drop("truth_value"), expect=["dataset /leak/truth_value is missing"])
expect_fail("validate: missing dataset", ["validate", os.path.join(d, "missing_truth_value", "job.json")],
            ["dataset /leak/truth_value is missing", "float64 truth values [T]"])
case("short_value", shorten("value"), expect=["in.h5: /leak/value has shape [1439] but /leak/model has [1440]",
                                              "expected the same number of panel rows (Q)"])
case("short_fictional", shorten("series_fictional"),
     expect=["in.h5: /leak/series_fictional has shape [3] but /leak/series_names has [4]",
             "expected the same number of series (S)"])
case("short_signal", shorten("signal/recall"),
     expect=["in.h5: /leak/signal/recall has shape [399] but /leak/signal/model has [400]",
             "expected the same number of signal/ rows (G)"])
case("missing_pick", drop("rank/pick"),
     expect=["in.h5: dataset /leak/rank/pick is missing (expected int8 picks 0/1/-1 [R])"])
case("missing_group", job_extra={"group": "/nope"},
     expect=["in.h5: group /nope is missing", "(expected the leakage input layout: see docs/reference.md, "
             "'leakage input layout')"])
case("empty_panel", empty, expect=["/leak/model is empty", "at least one panel row"])

# ---- several jobs: a bad value in a later job is found before any job writes ----
cd = os.path.join(d, "multi_job")
os.makedirs(cd, exist_ok=True)
with h5py.File(base) as src:
    for name, mutate in (("nan.h5", both(setv("value", first_parsed + 1000, np.nan), setv("value", first_parsed, np.nan))),
                         ("dup.h5", dup_truth), ("mismatch.h5", setv("value", first_unparsed, 1.5))):
        with h5py.File(os.path.join(cd, name), "w") as dst:
            for k in src:
                src.copy(src[k], dst, name=k)
            mutate(dst["leak"])
good_job = {"name": "a", "kind": "leakage", "input": base, "bootstrap": 5, "null_permutations": 5, "signal_series": "S0",
            "family": ["S0", "S1"]}
for bad_in, msg, ranks in (("nan.h5", f"/leak/value: row {first_parsed}: expected a finite value with status 0", (0, 3)),
                           ("dup.h5", f'/leak/truth_month: truth rows 8 and 9 are both for series "{dup_series}"', (0, 2)),
                           ("mismatch.h5", f"/leak/value: row {first_unparsed}: expected NaN with status 1", (0,))):
    jp = write_job(os.path.join(cd, "job.json"), [good_job, dict(good_job, name="b", input=bad_in)])
    for n in ranks:
        expect_fail(f"multi_job {bad_in} ({n} ranks)", ["run", jp], [os.path.join(cd, bad_in) + ": " + msg], ranks=n)
        check(not os.path.exists(os.path.join(cd, "out")), f"multi_job {bad_in} ({n} ranks): nothing written, not "
                                                           "even the folder")
jp = write_job(os.path.join(cd, "job.json"), [good_job, dict(good_job, name="b", input="nan.h5")])
for n in (0, 2):
    expect_fail(f"validate reads the values ({n} ranks)", ["validate", jp],
                [f"nan.h5: /leak/value: row {first_parsed}:", "finite value with status 0"], ranks=n)
check(not os.path.exists(os.path.join(cd, "out")), "validate writes nothing")

# ---- replicates that could not be gathered are refused before any is drawn ----
# a panel of 8 models x 15 real series x 2 variants = 240 cells, every one with scored rows (21 months with truth,
# 85 % parsed); 1e7 resamples (the most the option allows) make 2 x 240 x 1e7 = 4.8e9 values, 1e7 permutations of
# the 240 cells (all null targets with the 15 real series as the family) 2.4e9 draws, both more than 2e9.
cd = os.path.join(d, "too_many")
os.makedirs(cd, exist_ok=True)
small = os.path.join(cd, "small.h5")
gen_panel(small, M=8, S=16, V=2, K=1, T=24, seed=5, controls=False, chunked=False)
with h5py.File(small) as f:
    g = f["leak"]
    tk = set(zip(g["truth_series"][...].tolist(), g["truth_month"][...].tolist()))
    scored = {(m, s, v) for m, s, v, mo, st in zip(g["model"][...], g["series"][...], g["variant"][...], g["month"][...],
                                                   g["status"][...]) if st == 0 and (int(s), int(mo)) in tk}
check(len(scored) == 240, f"the panel has 240 cells with scored rows ({len(scored)})")
small_job = {"name": "big", "kind": "leakage", "input": "small.h5", "bootstrap": 0, "null_permutations": 0}
family = [f"S{i}" for i in range(15)]
for opt, extra, what in (("bootstrap", {"bootstrap": 10000000}, "10000000 resamples x 240 cells with scored rows"),
                         ("null_permutations", {"null_permutations": 10000000, "family": family},
                          "10000000 permutations x 240 null target cells")):
    jp = write_job(os.path.join(cd, opt + ".json"), [dict(small_job, **extra)])
    for cmd in ("run", "validate"):
        try:
            expect_fail(f"{opt} too large ({cmd})", [cmd, jp], [f'"{opt}" = 10000000 is too large for this input', what,
                        "more than the 2000000000 that can be gathered"], outdir=os.path.join(cd, "out"))
        except subprocess.TimeoutExpired:
            check(False, f"{opt} too large ({cmd}): refused at once, not after computing the replicates")
    check(not os.path.exists(os.path.join(cd, "out")), f"{opt} too large: no output folder")
# 2 x 240 x 4e6 = 1.92e9 values fit (validate computes nothing)
jp = write_job(os.path.join(cd, "ok.json"), [dict(small_job, bootstrap=4000000)])
code, _, err = run(["validate", jp], timeout=60)
check(code == 0, f"4e6 resamples of 240 cells (1.92e9 values) pass ({code} {err})")
# the option's own range comes first: 1e8 resamples are refused as out of range
jp = write_job(os.path.join(cd, "range.json"), [dict(small_job, bootstrap=100000000)])
expect_fail("bootstrap out of range", ["validate", jp],
            ['"bootstrap" = 100000000 is out of range (expected 0..10000000)'])

# ---- importer ----
ff = os.path.join(d, "ff.csv")
with open(ff, "w") as f:
    f.write("Preamble text\r\n\r\n,Mkt-RF,SMB\r\n202001,  1.00,  2.00\r\n202002, -1.50,  0.50\r\n\r\n Annual\r\n,Mkt-RF,SMB\r\n  2020,  3.0, 4.0\r\n")


def panel(name, lines):
    p = os.path.join(d, name)
    with open(p, "w") as f:
        f.write("".join(l + "\n" for l in lines))
    return p


good = '{"model_name": "m", "factor": "Mkt-RF", "month": "2020-01", "response": "1.0%", "error": null}'
out = os.path.join(d, "imp.h5")
T = ["--truth", f"Mkt-RF={ff}", "--truth", f"SMB={ff}"]
expect_fail("unparseable month", ["import", "numleak"] + T + ["--panel", panel("m.jsonl", [good, good.replace("2020-01", "2020/03")]),
            "-o", out], ["m.jsonl: line 2: month (\"month\") = \"2020/03\"", "YYYY-MM, YYYYMM or \"Month YYYY\""], out_file=out)
expect_fail("NaN inline truth", ["import", "numleak"] + T + ["--panel", panel("n.jsonl", [good, good.replace('"error"', '"truth": NaN, "error"')]),
            "--field", "truth=truth", "-o", out], ["n.jsonl: line 2: truth (\"truth\") is not a finite number"], out_file=out)
code, _, err = run(["import", "numleak", "--nan-truth", "missing"] + T + ["--panel", os.path.join(d, "n.jsonl"),
                    "--field", "truth=truth", "-o", out])
check(code == 0, f"--nan-truth missing accepts it ({err})")
os.remove(out)
expect_fail("empty panel", ["import", "numleak"] + T + ["--panel", panel("e.jsonl", ["", "  "]), "-o", out],
            ["e.jsonl: the panel has no rows"], out_file=out)
expect_fail("where empties", ["import", "numleak"] + T + ["--panel", panel("w.jsonl", [good]), "--where", "factor=SMB",
            "-o", out], ["w.jsonl: no row passes the --where filters"], out_file=out)
expect_fail("no truth mapping", ["import", "numleak", "--truth", f"Mkt-RF={ff}", "--panel",
            panel("s.jsonl", [good, good, good.replace("Mkt-RF", "HML")]), "-o", out],
            ["s.jsonl: line 3: series \"HML\" has no truth mapping", "--no-truth HML"], out_file=out)
expect_fail("malformed json", ["import", "numleak"] + T + ["--panel", panel("j.jsonl", [good, '{"model_name": "m",']),
            "-o", out], ["j.jsonl: line 2, column 19: malformed JSON"], out_file=out)
expect_fail("not an object", ["import", "numleak"] + T + ["--panel", panel("a.jsonl", [good, "[1, 2]"]), "-o", out],
            ["a.jsonl: line 2: a JSON list, expected one object per line"], out_file=out)
expect_fail("inline truth disagrees", ["import", "numleak"] + T + ["--panel",
            panel("t.jsonl", [good.replace('"error"', '"truth": 1.25, "error"')]), "--field", "truth=truth", "-o", out],
            ["t.jsonl: line 1: inline truth 1.25 for series \"Mkt-RF\", month 202001 disagrees with 1", "ff.csv"], out_file=out)
expect_fail("missing model", ["import", "numleak"] + T + ["--panel", panel("mm.jsonl", [good.replace('"model_name": "m", ', "")]),
            "-o", out], ["mm.jsonl: line 1: model (\"model_name\") is absent", "--set model=VALUE"], out_file=out)
expect_fail("reply object", ["import", "numleak"] + T + ["--panel", panel("r.jsonl", [good.replace('"1.0%"', '{"a": 1}')]),
            "-o", out], ["r.jsonl: line 1: reply (\"response\") is an object, expected a string"], out_file=out)
expect_fail("bad seed", ["import", "numleak"] + T + ["--panel", panel("sd.jsonl", [good.replace('"error"', '"seed": "x1", "error"')]),
            "-o", out], ["sd.jsonl: line 1: seed (\"seed\") = x1, expected an integer"], out_file=out)
expect_fail("unknown option", ["import", "numleak", "--panel", os.path.join(d, "m.jsonl"), "--feld", "a=b", "-o", out],
            ['unknown option "--feld"'], out_file=out)
expect_fail("unknown field", ["import", "numleak", "--panel", os.path.join(d, "m.jsonl"), "--field", "modle=x", "-o", out],
            ['unknown field "modle"'], out_file=out)
expect_fail("rank without month_b", ["import", "numleak", "--panel", os.path.join(d, "m.jsonl"), "--as", "rank", "-o", out],
            ["--as rank) needs --field month_b=PATH"], out_file=out)
bad_csv = os.path.join(d, "bad.csv")
with open(bad_csv, "w") as f:
    f.write("month,value\n2020-01,1.0\n2020-02,NaN\n")
expect_fail("NaN in a truth file", ["import", "numleak", "--truth", f"Mkt-RF={bad_csv}", "--panel", os.path.join(d, "w.jsonl"),
            "-o", out], ["bad.csv: line 3: value \"NaN\", expected a number"], out_file=out)
bad_ff = os.path.join(d, "bad_ff.csv")
with open(bad_ff, "w") as f:
    f.write("Text\n,Mkt-RF\n202001, 1.0\n202002, abc\n")
expect_fail("text in a French file", ["import", "numleak", "--truth", f"Mkt-RF={bad_ff}", "--panel", os.path.join(d, "w.jsonl"),
            "-o", out], ["bad_ff.csv: line 4: Mkt-RF = \"abc\", expected a number"], out_file=out)
expect_fail("French column", ["import", "numleak", "--truth", f"HML={ff}", "--panel", os.path.join(d, "w.jsonl"),
            "--set", "series=HML", "-o", out], ["ff.csv: line 3: no column \"HML\"", "\"Mkt-RF\", \"SMB\""], out_file=out)
done()
