"""Learning-rate selection ties exactly. Two learning rates whose per-seed validation accuracies are the
same numbers in a different seed order ([0.7, 0.6, 0.4] and [0.7, 0.4, 0.6]: 17 of 30 rows each) have
equal mean validation accuracy, so the selection (docs/reference.md, 'Selection and metrics') picks the
first grid entry; summing the per-seed fractions in seed order would make the second one larger by one
ulp. The input is fixed by a seeded generator; the test first checks that the tie really is there (so it
cannot pass vacuously), then the selection, the equal grid values, and that accuracy_mean is the exact
fraction of correct test rows over seeds. Also near ties (docs/reference.md, 'Near-tie rule':
predictions within 1e-9 of a tie, which another backend may decide the other way, are counted): all-zero
feature rows have logit exactly 0 without a bias, so each is one."""
import os
from fractions import Fraction

from rdtest import *

d = scratch("probe_ties")
rng = np.random.default_rng(114)
D, N = 4, 300
lab = rng.integers(0, 2, N)
X = (rng.normal(0, 1, (N, D)) + 0.4 * np.outer(2 * lab - 1, rng.normal(size=D))).astype(np.float32)
split = np.array([0] * 280 + [1] * 10 + [2] * 10, np.uint8)
with h5py.File(os.path.join(d, "in.h5"), "w") as f:
    f["probe/t/X"] = X
    f["probe/t/label"] = lab
    f["probe/t/split"] = split
lrs = [0.230409, 0.002818]
job = write_job(os.path.join(d, "job.json"), [{"name": "tie", "kind": "probe", "input": "in.h5", "seeds": [0, 1, 2],
                                             "lr_grid": lrs, "kmeans": False,
                                             "tasks": {"t": {"classes": [[0], [1]]}}}], seed=1)
for ranks in (0, 2):
    code, out, err = run(["run", job, "--force"], ranks=ranks)
    check(code == 0, f"run on {ranks} ranks ({err})")
    t = load_report(os.path.join(d, "out", "tie.json"))["result"]["tasks"]["t"]
    # the precondition, from a run that reports every grid entry's seeds: the second entry's per-seed
    # accuracies are a reordering of the first's
    per = []
    for i, lr in enumerate(lrs):  # same job name: the same batch orders and initial weights per seed
        one = write_job(os.path.join(d, f"one{i}.json"), [
            {"name": "tie", "kind": "probe", "input": "in.h5", "seeds": [0, 1, 2], "lr_grid": [lr], "kmeans": False,
             "tasks": {"t": {"classes": [[0], [1]]}}}], output_dir=f"out{i}", seed=1)
        code, out, err = run(["run", one, "--force"], ranks=ranks)
        check(code == 0, f"single-rate run {lr} ({err})")
        rep = load_report(os.path.join(d, f"out{i}", "tie.json"))["result"]["tasks"]["t"]
        per.append([e["val_accuracy"] for e in rep["per_seed"]])
    check(sorted(per[0]) == sorted(per[1]) and per[0] != per[1],
          f"the fixture has the reordered tie it is meant to have: {per}")
    check(sum(per[0]) != sum(per[1]), "summing the fractions in seed order would break the tie (the fixture tests it)")
    g = [e["val_accuracy"] for e in t["grid"]]
    check(g[0] == g[1] == float(Fraction(round(sum(per[0]) * 10), 30)), f"equal grid means: {g}")
    check(t["selected"]["lr"] == lrs[0], f"ties go to the first grid entry: selected {t['selected']}")
    correct = sum(sum(row[i] for i, row in enumerate(s["test"]["confusion"])) for s in t["per_seed"])
    n_te = sum(sum(row) for row in t["per_seed"][0]["test"]["confusion"])
    check(t["accuracy_mean"] == float(Fraction(correct, 3 * n_te)),
          f"accuracy_mean {t['accuracy_mean']} is {correct}/(3*{n_te})")
# near ties: 3 validation and 2 test rows of zeros (logit 0 for every head: no bias in mrmbench)
Xz = X.copy()
zero_rows = [281, 284, 289, 291, 297]
Xz[zero_rows] = 0
with h5py.File(os.path.join(d, "zeros.h5"), "w") as f:
    f["probe/t/X"] = Xz
    f["probe/t/label"] = lab
    f["probe/t/split"] = split
for ranks in (0, 3):
    jz = write_job(os.path.join(d, "zeros.json"), [{"name": "z", "kind": "probe", "input": "zeros.h5", "seeds": [0, 1, 2],
                                                   "lr_grid": lrs, "kmeans": False,
                                                   "tasks": {"t": {"classes": [[0], [1]]}}}], output_dir="outz", seed=1)
    code, out, err = run(["run", jz, "--force"], ranks=ranks)
    check(code == 0, f"zeros run on {ranks} ranks ({err})")
    nt = load_report(os.path.join(d, "outz", "z.json"))["result"]["tasks"]["t"]["near_ties"]
    check(nt == {"validation": 3 * 3 * 2, "test": 2 * 3, "margin": 1e-9},
          f"near ties: 3 validation rows x 3 seeds x 2 rates, 2 test rows x 3 seeds: {nt}")
check(t["near_ties"] == {"validation": 0, "test": 0, "margin": 1e-9}, f"no near ties in the random task: {t['near_ties']}")
done()
