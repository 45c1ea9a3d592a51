"""leakage for readers: the cells on stdout with the reasons for blanks, `rmdiag table` (md, csv, latex) hand-checked,
the CSV read back equal to the report, the join datasets (/leak/estimate, /leak/month), and the warnings (a null rate
of 0, a low parse rate) triggered by a crafted input and absent on a clean one."""
import csv
import io
import math
import os

from rdtest import *

d = scratch("leakage_tables")
NAN = float("nan")


def write_leak(path, rows):
    """rows: (model, series, month, value, status); truth: A = 1..4, B = 100..400 for months 202001..202004."""
    s = h5py.string_dtype("utf-8")
    with h5py.File(path, "w") as f:
        g = f.create_group("leak")
        g.create_dataset("model_names", data=["m", "m2"], dtype=s)
        g.create_dataset("series_names", data=["A", "B"], dtype=s)
        g.create_dataset("variant_names", data=["default"], dtype=s)
        g["model"] = np.array([r[0] for r in rows], np.int32)
        g["series"] = np.array([r[1] for r in rows], np.int32)
        g["variant"] = np.zeros(len(rows), np.int32)
        g["seed"] = np.zeros(len(rows), np.int32)
        g["month"] = np.array([r[2] for r in rows], np.int32)
        g["value"] = np.array([r[3] for r in rows], np.float64)
        g["status"] = np.array([r[4] for r in rows], np.uint8)
        months = [202001, 202002, 202003, 202004]
        g["truth_series"] = np.array([0] * 4 + [1] * 4, np.int32)
        g["truth_month"] = np.array(months * 2, np.int32)
        g["truth_value"] = np.array([1.0, 2.0, 3.0, 4.0, 100.0, 200.0, 300.0, 400.0])
    return path


exact = [(0, 0, 202001 + k, float(k + 1), 0) for k in range(4)] + \
        [(0, 1, 202001 + k, 100.0 * (k + 1), 0) for k in range(4)]
refusing = [(1, 0, 202001, 1.0, 0)] + [(1, 0, 202002 + k, NAN, 1) for k in range(3)]

# ---- clean: exact answers, no null: no warnings, blanks explained ----
write_leak(os.path.join(d, "clean.h5"), exact)
write_job(os.path.join(d, "clean.json"), [{"name": "c", "kind": "leakage", "input": "clean.h5", "bootstrap": 0}])
code, out, err = run(["run", os.path.join(d, "clean.json")])
check(code == 0, f"clean run: exit {code} ({err.strip()})")
res = load_report(os.path.join(d, "out", "c.json"))["result"]
check(res["warnings"] == [] and "warning" not in err, f"clean: no warnings ({res['warnings']})")
lines = out.splitlines()
check(lines[0] == "leakage c: 2 cells, 8 rows (0 excluded, 0 on fictional series)", f"heading {lines[0]!r}")
check(lines[2].split() == ["model", "series", "variant", "n", "parse", "scored", "r", "MAE", "within", "sign", "null",
                           "select"], f"column labels {lines[2]!r}")
check(lines[3].split() == ["m", "A", "default", "4", "1.000", "4", "1.000", "0.000", "1.000", "1.000", "-", "-"],
      f"cell m/A, hand-checked: {lines[3]!r}")
check(any(l.startswith("  null -: no null (family needs 2+ series") for l in lines)
      and any(l.startswith("  select -: null rate 0 (undefined, see warnings) or no null") for l in lines),
      f"why null and select are blank:\n{out}")

with h5py.File(os.path.join(d, "out", "c.h5")) as f:
    check(f["leak/estimate"][...].tolist() == [1, 2, 3, 4, 100, 200, 300, 400], "/leak/estimate holds the parsed values")
    check(f["leak/month"][...].tolist() == [202001, 202002, 202003, 202004] * 2, "/leak/month")
    check(f["leak/cell"][...].tolist() == [0] * 4 + [1] * 4, "/leak/cell indexes result.cells")

code, md, err = run(["table", os.path.join(d, "out", "c.json"), "--table", "cells"])
mdl = md.splitlines()
check(mdl[2] == "| model | series | variant | n | parse | scored | r | MAE | within | sign | null | select |"
      and mdl[4] == "| m | A | default | 4 | 1.000 [0.510, 1.000] | 4 | 1.000 | 0.000 | 1.000 [0.510, 1.000] | "
                    "1.000 [0.510, 1.000] | - | - |", f"markdown cells (Wilson of 4 of 4 = [0.510, 1]):\n{md}")
code, text, err = run(["table", os.path.join(d, "out", "c.json"), "--table", "cells", "--format", "csv"])
rows = list(csv.DictReader(io.StringIO(text)))
for row, cell in zip(rows, res["cells"]):
    for k, v in cell.items():
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            check(k in row and float(row[k]) == v, f"csv {k}: {row.get(k)!r} vs {v!r}")
        elif v is None and k in row:
            check(row[k] == "", f"csv {k}: null is empty")
    check(float(row["parse_rate_lo"]) == cell["parse_rate_wilson95"][0], "csv Wilson exact")
code, tex, err = run(["table", os.path.join(d, "out", "c.json"), "--table", "cells", "--format", "latex", "--digits", "2"])
check("m & B & default & 4 & 1.00 [0.51, 1.00] & 4 & 1.00 & 0.00 & 1.00 [0.51, 1.00] & 1.00 [0.51, 1.00] & -- & -- \\\\"
      in tex and "\\bottomrule" in tex, f"latex cells:\n{tex}")

# ---- crafted: a null of 0 on both target cells, and a cell with 1 of 4 replies parsed ----
write_leak(os.path.join(d, "bad.h5"), exact + refusing)
write_job(os.path.join(d, "bad.json"), [{"name": "b", "kind": "leakage", "input": "bad.h5", "bootstrap": 0,
                                          "family": ["A", "B"], "null_permutations": 50}])
code, out, err = run(["run", os.path.join(d, "bad.json")])
res = load_report(os.path.join(d, "out", "b.json"))["result"]
w = res["warnings"]
nulls = [c["null_within"] for c in res["cells"]]
check(nulls[:2] == [0, 0] and nulls[2] is None, f"null rates: {nulls}")
check(any(x.startswith("2 cells with a null rate of 0") and "m / A; m / B" in x for x in w), f"null-0 warning: {w}")
check(any(x.startswith("1 cell with a parse rate below 0.5") and "m2 / A" in x for x in w), f"parse warning: {w}")
check(len(w) == 2 and err.count("rmdiag: warning: b: ") == 2, f"both warnings on stderr:\n{err}")
done()
