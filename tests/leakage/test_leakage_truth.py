"""Truth files of `rmdiag import numleak`: Kenneth French layouts (a preamble with commas, CR LF lines, the
header line, -99.99 and -999 missing markers, the annual block and the footer that must not be read, a
file with one column), FRED files (observation_date,VALUE with empty and "." cells) with the CPI 12-month
% change, plain month,value files in every month format, and the real CPI series against the formula.
Rows whose month has no truth are counted by the report (n_no_truth), never dropped."""
import math
import os

from leakdata import *
from rdtest import *

d = scratch("leak_truth")
french = ("This file, made for a test, was created using the 202602 CRSP database.\r\n"
          "Missing data are indicated by -99.99 or -999.\r\n\r\n"
          ",Mkt-RF,SMB,HML,RF\r\n"
          "202001,   1.10,  -0.20, -99.99,   0.10\r\n"
          "202002,  -2.25,   0.00,   0.30,   0.12\r\n"
          "202003,-999,       0.50,   0.40,   0.13\r\n"
          "202004,   3.33,  -1.75,  -0.05,   0.11\r\n"
          "\r\n"
          " Annual Factors: January-December \r\n"
          ",Mkt-RF,SMB,HML,RF\r\n"
          "  2020,  20.00,  1.00, -2.00,  0.50\r\n"
          "  2021,  21.00,  2.00, -3.00,  0.40\r\n"
          "\r\nCopyright 2026 Eugene F. Fama and Kenneth R. French\r\n")
mom = "Momentum preamble\n\n,Mom\n202001, 0.57\n202002, -99.99\n202003, 1.5\n\nAnnual Factors:\n,Mom\n  2020, 9.0\n"
fred = "observation_date,CPIAUCSL\n" + "".join(
    f"{2019 + i // 12}-{i % 12 + 1:02d}-01,{'' if i == 14 else '.' if i == 20 else f'{100 + 0.37 * i + 0.01 * (i % 5):.3f}'}\n"
    for i in range(30))
plain = "month,tavg_f,other\n2020-01,31.5,x\n202002,33.25,y\nMarch 2020,40.0,z\nApr 2020,,w\n"
paths = {}
for name, text in (("ff3.csv", french), ("mom.csv", mom), ("cpi.csv", fred), ("noaa.csv", plain)):
    paths[name] = os.path.join(d, name)
    with open(paths[name], "w", newline="") as f:
        f.write(text)
rows = []
for s, months in (("Mkt-RF", ["2020-01", "2020-02", "2020-03", "2020-04", "2020-05"]), ("HML", ["2020-01", "2020-02"]),
                  ("Mom", ["2020-02", "2020-03"]), ("CPI", ["2020-03", "2021-03", "2021-06"]), ("NOAA", ["2020-04", "2020-03"])):
    for m in months:
        rows.append(f'{{"model_name": "m", "factor": "{s}", "month": "{m}", "response": "1.0%"}}')
panel = os.path.join(d, "p.jsonl")
with open(panel, "w") as f:
    f.write("\n".join(rows) + "\n")
out = os.path.join(d, "t.h5")
code, _, err = run(["import", "numleak", "--truth", f"Mkt-RF={paths['ff3.csv']}", "--truth", f"HML={paths['ff3.csv']},HML",
                    "--truth", f"SMB={paths['ff3.csv']}", "--truth", f"Mom={paths['mom.csv']}",
                    "--truth", f"CPI={paths['cpi.csv']},CPIAUCSL,yoy", "--truth", f"NOAA={paths['noaa.csv']},tavg_f",
                    "--panel", panel, "-o", out])
check(code == 0, f"import ({err})")
with h5py.File(out) as f:
    g = f["leak"]
    names = list(g["series_names"].asstr()[...])
    T = {}
    for s, m, v in zip(g["truth_series"][...], g["truth_month"][...], g["truth_value"][...]):
        T.setdefault(names[s], {})[int(m)] = float(v)
check(T["Mkt-RF"] == {202001: 1.10, 202002: -2.25, 202004: 3.33}, f"Mkt-RF: -999 missing, annual rows ignored: {T['Mkt-RF']}")
check(T["HML"] == {202002: 0.30, 202003: 0.40, 202004: -0.05}, f"HML: -99.99 missing: {T['HML']}")
check(T["SMB"] == {202001: -0.20, 202002: 0.0, 202003: 0.50, 202004: -1.75}, f"SMB (a zero kept): {T['SMB']}")
check(T["Mom"] == {202001: 0.57, 202003: 1.5}, f"a one-column file: {T['Mom']}")
check(T["NOAA"] == {202001: 31.5, 202002: 33.25, 202003: 40.0}, f"month formats, the named column, an empty cell: {T['NOAA']}")
# CPI: (x_t / x_{t-12} - 1) * 100, missing where either level is missing (the empty and "." cells)
level = {}
for i in range(30):
    if i not in (14, 20):
        level[(2019 + i // 12) * 100 + i % 12 + 1] = float(f"{100 + 0.37 * i + 0.01 * (i % 5):.3f}")
want = {m: (level[m] / level[m - 100] - 1) * 100 for m in level if m - 100 in level}
check(sorted(T["CPI"]) == sorted(want), f"CPI yoy months {sorted(T['CPI'])} vs {sorted(want)}")
check(all(T["CPI"][m] == want[m] for m in want), "CPI yoy values exact")

# every row counts: months without truth are n_no_truth, inside n_rows and the parse rate
jp = write_job(os.path.join(d, "job.json"), [{"name": "t", "kind": "leakage", "input": "t.h5", "bootstrap": 0}])
code, _, err = run(["run", jp, "--quiet"])
check(code == 0, f"run ({err})")
cells = {c["series"]: c for c in load_report(os.path.join(d, "out", "t.json"))["result"]["cells"]}
# Mkt-RF asks 2020-01..05: no truth for 03 (-999) and 05 (after the file)
check((cells["Mkt-RF"]["n_rows"], cells["Mkt-RF"]["n_no_truth"], cells["Mkt-RF"]["n_scored"]) == (5, 2, 3), f"{cells['Mkt-RF']}")
close(cells["Mkt-RF"]["parse_rate"], 1.0, "rows without truth still count toward the parse rate")
check((cells["CPI"]["n_rows"], cells["CPI"]["n_no_truth"]) == (3, 2), f"CPI: 2020-03 and 2021-03 have no yoy ({cells['CPI']})")
check(cells["HML"]["n_no_truth"] == 1 and cells["Mom"]["n_no_truth"] == 1, "HML 2020-01 and Mom 2020-02 missing")

# the real CPI series: the 12-month change of every month, bit for bit (the formula NumLeak's script uses)
if os.path.isdir(DATA):
    code, _, err = run(["import", "numleak", "--truth", f"CPI={DATA}/macro/CPIAUCSL.csv,CPIAUCSL,yoy",
                        "--panel", os.path.join(RES, "cpi_baseline.jsonl"), "--set", "series=CPI", "--field", "truth=truth",
                        "-o", os.path.join(d, "cpi.h5")])
    check(code == 0, f"real CPI with its inline truth ({err})")
    lv = {}
    for line in open(os.path.join(DATA, "macro", "CPIAUCSL.csv")).read().splitlines()[1:]:
        date, v = line.split(",")
        if v:
            lv[int(date[:4]) * 100 + int(date[5:7])] = float(v)
    want = {m: (lv[m] / lv[m - 100] - 1) * 100 for m in lv if m - 100 in lv}
    with h5py.File(os.path.join(d, "cpi.h5")) as f:
        got = {int(m): float(v) for m, v in zip(f["leak/truth_month"][...], f["leak/truth_value"][...])}
    check(got == want, f"real CPI yoy: {len(got)} months equal the formula ({len(want)}); 2025-10 missing: {202510 not in got}")
else:
    print("SKIP (part): no NumLeak data for the real CPI check")
# ---- strictness: truth cells are decimal numbers as float() reads them, whole; messages name the line ----
one = os.path.join(d, "one.jsonl")
with open(one, "w") as f:
    f.write('{"model_name": "m", "factor": "S", "month": "2020-01", "response": "1.0%"}\n')


def truth_import(name, text, expect_code, expect=()):
    path = os.path.join(d, name)
    with open(path, "w", newline="") as f:
        f.write(text)
    o = os.path.join(d, name + ".h5")
    code, _, err = run(["import", "numleak", "--truth", f"S={path}", "--panel", one, "-o", o])
    check(code == expect_code, f"{name}: exit {code}, expected {expect_code} ({err.strip()})")
    for e in expect:
        check(e in err, f"{name}: message should contain {e!r}: {err.strip()}")
    if code != 0:
        check(not os.path.exists(o), f"{name}: nothing written")
        return None
    with h5py.File(o) as f:
        return {int(m): float(v) for m, v in zip(f["leak/truth_month"][...], f["leak/truth_value"][...])}


got = truth_import("exp.csv", "month,value\n2020-01,1.5e1\n2020-02,-.5\n2020-03,+2.\n", 0)
check(got == {202001: 15.0, 202002: -0.5, 202003: 2.0}, f"exponent, leading dot, trailing dot read as float() does: {got}")
truth_import("hex.csv", "observation_date,X\n2020-01-01,1\n2020-02-01,0x10\n", 2, ['hex.csv: line 3: value "0x10"'])
truth_import("hexp.csv", "month,value\n2020-01,0x1p3\n", 2, ['line 2: value "0x1p3"'])
# a 131-character value is refused (not cut to its first characters); a short one padded with spaces is not
truth_import("long.csv", "month,value\n2020-01," + "0" * 130 + "5\n", 2, ["long.csv: line 2: a value cell of 131 characters"])
got = truth_import("padded.csv", "month,value\n2020-01," + " " * 300 + "2.5" + " " * 300 + "\n", 0)
check(got == {202001: 2.5}, f"a padded cell: {got}")
# blank lines and a quoted newline do not shift the line named in a message
truth_import("blank.csv", 'month,value,note\n2020-01,1,"two\nlines"\n\n\n2020-02,x,n\n', 2,
             ['blank.csv: line 6: value "x"'])
truth_import("nofield.csv", "month,value\n2020-01,1\n2020-02\n", 2, ["nofield.csv: line 3: 1 field, expected at least 2"])
# French files: lines of any length are read whole
got = truth_import("ffwide.csv", "preamble\n\n,S\n202001," + " " * 5000 + "1.25\n\n", 0)
check(got == {202001: 1.25}, f"a French line longer than 4096 bytes: {got}")

# ---- panels: names are UTF-8 text of bounded length, and no string may hide a NUL ----
def panel_import(name, raw, expect):
    path = os.path.join(d, name)
    with open(path, "wb") as f:
        f.write(raw)
    o = os.path.join(d, name + ".h5")
    code, _, err = run(["import", "numleak", "--truth", f"S={paths['noaa.csv']},tavg_f", "--panel", path, "-o", o])
    check(code == 2 and expect in err and not os.path.exists(o), f"{name}: exit {code}, {expect!r} in {err.strip()}")


panel_import("u8.jsonl", b'{"model_name": "m\xff", "factor": "S", "month": "2020-01", "response": "1%"}\n',
             'u8.jsonl: line 1: model ("model_name") is not valid UTF-8 text')
panel_import("nul.jsonl", b'{"model_name": "m", "factor": "S", "month": "2020-01", "response": "1%"}\n'
             b'{"model_name": "m\\u0000x", "factor": "S", "month": "2020-01", "response": "1%"}\n',
             "nul.jsonl: line 2, column 18: a \\u0000 escape (NUL)")
panel_import("dupkey.jsonl", b'{"model_name": "m", "factor": "S", "month": "2020-01", "response": "1%", '
             b'"response": "7%"}\n', 'dupkey.jsonl: line 1: key "response" appears twice in one object')
panel_import("longname.jsonl", ('{"model_name": "' + "m" * 2000 + '", "factor": "S", "month": "2020-01", '
                                '"response": "1%"}\n').encode(), "is a name of 2000 bytes, expected at most 1023")
done()
