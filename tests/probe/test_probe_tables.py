"""probe for readers: the default mode's silent underfit is caught. Small positive features whose classes differ by an
offset: mode mrmbench (linear heads without bias, tiny learning rates) predicts one class for every row at every rate,
so its test accuracy is at or below the majority baseline and the validation grid is flat: both are warnings; mode
lbfgs (with a bias) separates the classes, and `rmdiag report` over both reports warns that the modes disagree. A
clean input gives none of these. Also the accuracy table hand-checked in md, csv read back exactly, latex rules."""
import csv
import io
import os

from rdtest import *

d = scratch("probe_tables")
rng = np.random.default_rng(7)


def write_probe(path, X, label, split):
    with h5py.File(path, "w") as f:
        g = f.create_group("probe/t")
        g["X"] = np.asarray(X, np.float32)
        g["label"] = np.asarray(label, np.int32)
        g["split"] = np.asarray(split, np.uint8)
    return path


n = 600
split = np.array([0] * 400 + [1] * 100 + [2] * 100)
# underfit: x > 0 everywhere, class 0 in [1, 2], class 1 in [3, 4] (more class-1 rows): no line through 0 separates
y = (rng.random(n) < 0.6).astype(np.int32)
x = np.where(y == 1, 3.0, 1.0) + rng.random(n)
write_probe(os.path.join(d, "small.h5"), x[:, None], y, split)
tasks = {"t": {"classes": [[0], [1]]}}
write_job(os.path.join(d, "bad.json"), [
    {"name": "mrm", "kind": "probe", "input": "small.h5", "tasks": tasks, "init": "zeros", "lr_grid": [1e-5, 2e-5],
     "kmeans": False},
    {"name": "lbf", "kind": "probe", "input": "small.h5", "tasks": tasks, "mode": "lbfgs", "standardize": True,
     "kmeans": False}])
code, out, err = run(["run", os.path.join(d, "bad.json")])
check(code == 0, f"run: exit {code} ({err.strip()})")
mrm = load_report(os.path.join(d, "out", "mrm.json"))["result"]
lbf = load_report(os.path.join(d, "out", "lbf.json"))["result"]
t = mrm["tasks"]["t"]
base = t["test"]["majority_baseline"]
check(t["accuracy_mean"] <= base, f"mrmbench underfits: {t['accuracy_mean']} vs baseline {base}")
check(len({g["val_accuracy"] for g in t["grid"]}) == 1, f"flat grid: {t['grid']}")
check(lbf["tasks"]["t"]["accuracy_mean"] > 0.95, f"lbfgs separates the classes: {lbf['tasks']['t']['accuracy_mean']}")
w = mrm["warnings"]
check(any(x.startswith(f"task t: test accuracy {t['accuracy_mean']:.3f} is at or below the majority baseline {base:.3f}")
          and "compare mode lbfgs" in x for x in w), f"baseline warning: {w}")
check(any(x.startswith("task t: every learning rate of the grid gave the same validation accuracy") for x in w),
      f"flat-grid warning: {w}")
check(len(w) == 2 and lbf["warnings"] == [], f"lbfgs: no warning (its l2 grid being flat is not flagged): {lbf['warnings']}")
check(err.count("rmdiag: warning: mrm: task t:") == 2, f"warnings on stderr:\n{err}")

# the summary: accuracy against the baseline, hand-checked against the report
acc_line = out.split("probe lbf:", 1)[1].split("Probe accuracy\n", 1)[1].splitlines()[1].split()
lt = lbf["tasks"]["t"]
check(acc_line == ["t", f"{lt['accuracy_mean']:.3f}", f"{lt['test']['majority_baseline']:.3f}",
                   f"{lt['test']['macro_f1']:.3f}", "0.0001", f"{lt['grid'][0]['val_accuracy']:.3f}", "400", "100", "100"],
      f"lbfgs accuracy row: {acc_line}")
check("  no interval: one seed (mode lbfgs has none)" in out, "the reason for the missing interval")

# across reports: the two modes on the same features disagree
code, rout, rerr = run(["report", os.path.join(d, "out"), "-o", os.path.join(d, "r.html")])
check(code == 0, f"report: exit {code} ({rerr.strip()})")
gap = [l for l in rerr.splitlines() if "mode mrmbench (mrm) reaches" in l and "mode lbfgs (lbf)" in l]
check(len(gap) == 1, f"mode-gap warning on stderr: {rerr}")
html = open(os.path.join(d, "r.html")).read()
check("Across reports" in html and "mode mrmbench (mrm) reaches" in html, "the mode-gap warning is on the page")

# tables: md hand-checked, csv exact, latex rules
code, md, err = run(["table", os.path.join(d, "out", "lbf.json"), "--table", "accuracy"])
check(md.splitlines()[2] == "| task | accuracy [95% CI] | baseline | macro-F1 | selected l2 | val acc | train | val | "
      "test |", f"md header:\n{md}")
check(md.splitlines()[4] == "| t | " + " | ".join(acc_line[1:]) + " |", f"md row:\n{md}")
code, text, err = run(["table", os.path.join(d, "out", "mrm.json"), "--table", "accuracy", "--format", "csv"])
row = list(csv.DictReader(io.StringIO(text)))[0]
check(float(row["accuracy"]) == t["accuracy_mean"] and float(row["majority_baseline"]) == base
      and float(row["macro_f1"]) == t["test"]["macro_f1"] and float(row["lr"]) == t["selected"]["lr"]
      and row["accuracy_lo"] == "" and float(row["test_accuracy"]) == t["test"]["accuracy"], f"csv exact: {row}")
code, tex, err = run(["table", os.path.join(d, "out", "mrm.json"), "--table", "grid", "--format", "latex"])
check(tex.count("\\toprule") == 1 and "t & 1e-05 &" in tex and "t & 2e-05 &" in tex, f"latex grid:\n{tex}")

# ---- clean: separable through the origin, a grid of different rates: no warnings ----
yc = (rng.random(n) < 0.5).astype(np.int32)
Xc = np.stack([np.where(yc == 1, 1.5, -1.5) + rng.normal(0, 0.7, n), rng.normal(0, 1, n)], axis=1)
write_probe(os.path.join(d, "clean.h5"), Xc, yc, split)
write_job(os.path.join(d, "clean.json"), [
    {"name": "c", "kind": "probe", "input": "clean.h5", "tasks": tasks, "lr_grid": [1.0, 0.01, 0.0001], "kmeans": False}])
code, out, err = run(["run", os.path.join(d, "clean.json")])
res = load_report(os.path.join(d, "out", "c.json"))["result"]
check(code == 0 and res["warnings"] == [] and "warning" not in err, f"clean: no warnings {res.get('warnings')} {err}")
check(res["tasks"]["t"]["accuracy_mean"] > res["tasks"]["t"]["test"]["majority_baseline"], "clean: above the baseline")
done()
