"""mode mrmbench against an independent numpy implementation (tests/lib/probe_oracle.py): the batch
order, the Kaiming init and the 10 % validation holdout are replayed from the counter-based
generator, MRMBench's AdamW loop is re-run in plain float64 numpy, and every reported number
(validation accuracy per learning rate and seed, the selection, test accuracy, macro-F1,
confusion, majority baseline, mean and t-interval over seeds, the average over tasks) is compared.
Also: the learning rate is selected on validation only, never on test (a task whose test labels
prefer another learning rate)."""
import math
import os

from rdtest import *  # first: it skips (77) when numpy or h5py is missing
import probe_oracle as po

d = scratch("probe_oracle")
rng = np.random.default_rng(11)
N, D = 1500, 24
path = os.path.join(d, "in.h5")
truth = {}
with h5py.File(path, "w") as f:
    for task, with_val in (("harm", True), ("help", False)):
        lab = rng.integers(0, 5, N)
        lab[rng.random(N) < 0.02] = -1
        mu = rng.normal(0, 0.6, (5, D))
        X = (rng.normal(0, 1, (N, D)) + mu[np.maximum(lab, 0)]).astype(np.float32)
        split = rng.choice(3, N, p=[0.75, 0.12, 0.13]).astype(np.uint8)
        if not with_val:
            split[split == 1] = 0          # no validation split: the 10 % holdout applies
        f[f"probe/{task}/X"] = X
        f[f"probe/{task}/label"] = lab.astype(np.int16)
        f[f"probe/{task}/split"] = split
        truth[task] = (X, lab, split)
    # selection: test labels are the opposite of the pattern that train and validation share
    n = 900
    yy = rng.integers(0, 2, n)
    u = rng.normal(size=D)
    Xs = (rng.normal(0, 1, (n, D)) + 1.5 * np.outer(2 * yy - 1, u) / np.linalg.norm(u)).astype(np.float32)
    ss = np.array([0] * 600 + [1] * 150 + [2] * 150, np.uint8)
    lab_s = yy.copy()
    lab_s[ss == 2] = 1 - lab_s[ss == 2]
    f["probe/sel/X"] = Xs
    f["probe/sel/label"] = lab_s.astype(np.int64)
    f["probe/sel/split"] = ss
    truth["sel"] = (Xs, lab_s, ss)

classes = {"harm": [[0, 1], [3, 4]], "help": [[0, 1], [2], [3, 4]], "sel": [[0], [1]]}
lrs = [5e-2, 2e-3, 1e-4]
seeds = [0, 3, 8]
job = {"name": "orc", "kind": "probe", "input": "in.h5", "kmeans": False, "lr_grid": lrs, "seeds": seeds,
       "tasks": {t: {"classes": classes[t]} for t in ("harm", "help")}}
job_sel = {"name": "sel", "kind": "probe", "input": "in.h5", "kmeans": False, "lr_grid": [5e-2, 1e-9],
           "tasks": {"sel": {"classes": classes["sel"]}}}
write_job(os.path.join(d, "job.json"), [job, job_sel], output_dir="out", seed=2024)
code, _, err = run(["run", os.path.join(d, "job.json"), "--quiet"], ranks=2)
check(code == 0, f"exit {code} ({err})")
rep = load_report(os.path.join(d, "out", "orc.json"))["result"]
h5 = h5py.File(os.path.join(d, "out", "orc.h5"), "r")

accs_all = []
for task in ("harm", "help"):
    X, lab, split = truth[task]
    C = len(classes[task])
    K = 1 if C == 2 else C
    y = po.class_of(lab, classes[task])
    tr, va, te, holdout = po.lists(2024, "orc", task, y, split)
    r = rep["tasks"][task]
    check(r["n_train"] == tr.size and r["n_val"] == va.size and r["n_test"] == te.size,
          f"{task}: counts {r['n_train']}/{r['n_val']}/{r['n_test']} vs {tr.size}/{va.size}/{te.size}")
    check((r["validation"] != "split") == holdout, f"{task}: holdout reported ({r['validation']})")
    check(r["dropped"]["missing_label"] == int((lab == -1).sum()), f"{task}: missing labels counted")
    check(r["dropped"]["label_in_no_class"] == int(((y < 0) & (lab != -1)).sum()), f"{task}: other labels counted")
    W = {}
    val = np.zeros((len(seeds), len(lrs)))
    for si, s in enumerate(seeds):
        order = po.batch_order(2024, "orc", task, s, tr)
        W0 = po.kaiming(2024, "orc", task, s, K, D)
        for li, lr in enumerate(lrs):
            W[si, li] = po.train_mrmbench(X[order], y[order], K, lr, W0)
            val[si, li] = (po.predict(X[va], W[si, li]) == y[va]).mean()
    mean_val = val.mean(0)
    for li in range(len(lrs)):
        close(r["grid"][li]["val_accuracy"], mean_val[li], f"{task}: val accuracy lr {lrs[li]}", rel=1e-12)
    sel = int(np.argmax(mean_val))
    check(r["selected"]["lr"] == lrs[sel], f"{task}: selected {r['selected']} vs {lrs[sel]}")
    Wout = h5[f"probe/{task}/W"][...]
    rel = np.linalg.norm(Wout - W[0, sel]) / np.linalg.norm(W[0, sel])
    check(rel < 1e-9, f"{task}: weights vs numpy AdamW: relative L2 {rel:.3g}")
    if len(seeds) > 1:
        Ws = h5[f"probe/{task}/W_seeds"][...]
        for si in range(len(seeds)):
            rel = np.linalg.norm(Ws[si] - W[si, sel]) / np.linalg.norm(W[si, sel])
            check(rel < 1e-9, f"{task}: seed {seeds[si]} weights relative L2 {rel:.3g}")
    accs = []
    for si, s in enumerate(seeds):
        m = po.metrics(po.predict(X[te], W[si, sel]), y[te], C, y[tr])
        got = r["per_seed"][si]
        check(got["seed"] == s, "per_seed order")
        close(got["val_accuracy"], val[si, sel], f"{task}: seed {s} val accuracy")
        check(got["test"]["confusion"] == m["confusion"], f"{task}: seed {s} confusion {got['test']['confusion']} vs {m['confusion']}")
        for k in ("accuracy", "macro_f1", "majority_baseline"):
            close(got["test"][k], m[k], f"{task}: seed {s} {k}")
        accs.append(m["accuracy"])
    check(r["test"] == r["per_seed"][0]["test"], f"{task}: 'test' is the first seed's")
    am, sd = float(np.mean(accs)), float(np.std(accs, ddof=1))
    close(r["accuracy_mean"], am, f"{task}: accuracy mean")
    close(r["accuracy_sd"], sd, f"{task}: accuracy sd")
    # t quantile with 2 degrees of freedom: 4.302652729749464
    half = 4.302652729749464 * sd / math.sqrt(len(seeds))
    close(r["accuracy_ci95"], [am - half, am + half], f"{task}: t-interval over seeds", rel=1e-9)
    check(np.array_equal(h5[f"probe/{task}/test_row"][...], te), f"{task}: test rows")
    check(np.array_equal(h5[f"probe/{task}/test_pred"][...], po.predict(X[te], W[0, sel])), f"{task}: test predictions")
    accs_all.append(am)
close(rep["average"], float(np.mean(accs_all)), "average over tasks")
check(rep["mode"] == "mrmbench" and len(rep["differences_from_released_code"]) == 3, "differences stated")
h5.close()

# ---- the learning rate follows validation, never test -----------------------------------------------
rs = load_report(os.path.join(d, "out", "sel.json"))["result"]["tasks"]["sel"]
X, lab, split = truth["sel"]
y = po.class_of(lab, classes["sel"])
tr, va, te, _ = po.lists(2024, "sel", "sel", y, split)
order = po.batch_order(2024, "sel", "sel", 0, tr)
W0 = po.kaiming(2024, "sel", "sel", 0, 1, D)
test_acc = []
val_acc = []
for lr in (5e-2, 1e-9):
    Wl = po.train_mrmbench(X[order], y[order], 1, lr, W0)
    val_acc.append((po.predict(X[va], Wl) == y[va]).mean())
    test_acc.append((po.predict(X[te], Wl) == y[te]).mean())
check(val_acc[0] > val_acc[1] + 0.2 and test_acc[1] > test_acc[0] + 0.2,
      f"the generated task separates validation and test preferences: val {val_acc}, test {test_acc}")
check(rs["selected"]["lr"] == 5e-2, f"selected on validation: {rs['selected']}")
close(rs["test"]["accuracy"], test_acc[0], "reported test accuracy is that of the validation choice")
check(rs["grid"][0]["val_accuracy"] > rs["grid"][1]["val_accuracy"], "grid shows the validation preference")
done()
