"""mode lbfgs against an independent solver: multinomial logistic regression with a bias, objective
mean cross-entropy + (l2/2)|W|^2, minimised by Newton's method in numpy (tests/lib/probe_oracle.py).
rmdiag's L-BFGS must reach the same optimum (weights within 1e-4 relative L2, biases up to the
softmax's common shift), the same validation and test accuracy, report convergence (max-norm
gradient <= tol) and iterations, select l2 on validation, and handle `standardize` (train mean and
sd, ddof 0) with weights reported in raw feature units. Also the 2-class softmax head and a
max_iter stop. Standardization keeps its precision when the features' mean is far from zero in
units of their sd (mean 3e4, sd 0.5): the fit converges to tol and predicts as a fit on the same
features standardized beforehand."""
import os

from rdtest import *  # first: it skips (77) when numpy or h5py is missing
import probe_oracle as po

d = scratch("probe_lbfgs")
rng = np.random.default_rng(21)
N, D = 700, 9
data = {}
with h5py.File(os.path.join(d, "in.h5"), "w") as f:
    for task, C, scale in (("three", 3, 1.0), ("two", 2, 25.0)):
        lab = rng.integers(0, C, N)
        mu = rng.normal(0, 0.8, (C, D))
        sc = np.ones(D)
        sc[0] = scale                      # one feature on another scale (for standardize)
        X = ((rng.normal(0, 1, (N, D)) + mu[lab]) * sc + 3.0).astype(np.float32)
        split = rng.choice(3, N, p=[0.7, 0.15, 0.15]).astype(np.uint8)
        f[f"probe/{task}/X"] = X
        f[f"probe/{task}/label"] = lab.astype(np.int32)
        f[f"probe/{task}/split"] = split
        data[task] = (X, lab, split, C)

l2s = [1e-2, 3e-1]
jobs = [{"name": f"lb{int(std)}", "kind": "probe", "input": "in.h5", "mode": "lbfgs", "l2_grid": l2s,
         "standardize": std, "kmeans": False,
         "tasks": {"three": {"classes": [[0], [1], [2]]}, "two": {"classes": [[0], [1]]}}} for std in (False, True)]
jobs.append({"name": "short", "kind": "probe", "input": "in.h5", "mode": "lbfgs", "l2_grid": [1e-2], "max_iter": 3,
             "kmeans": False, "tasks": {"three": {"classes": [[0], [1], [2]]}}})
# a tolerance below float64 rounding: the line search stops finding decrease before max_iter
jobs.append({"name": "tiny", "kind": "probe", "input": "in.h5", "mode": "lbfgs", "l2_grid": [1e-2], "tol": 1e-30,
             "max_iter": 100000, "kmeans": False, "tasks": {"three": {"classes": [[0], [1], [2]]}}})
write_job(os.path.join(d, "job.json"), jobs, output_dir="out", seed=1)
code, _, err = run(["run", os.path.join(d, "job.json"), "--quiet"], ranks=3)
check(code == 0, f"exit {code} ({err})")

for std in (False, True):
    rep = load_report(os.path.join(d, "out", f"lb{int(std)}.json"))["result"]
    h5 = h5py.File(os.path.join(d, "out", f"lb{int(std)}.h5"), "r")
    check(rep["mode"] == "lbfgs", "mode reported")
    for task in ("three", "two"):
        X, lab, split, C = data[task]
        y = lab.astype(np.int64)
        tr, va, te = (np.flatnonzero(split == s) for s in (0, 1, 2))
        Xt = X[tr].astype(np.float64)
        mu = Xt.mean(0) if std else np.zeros(D)
        sd = Xt.std(0) if std else np.ones(D)     # ddof 0, as documented
        r = rep["tasks"][task]
        vals, sols = [], []
        for k, l2 in enumerate(l2s):
            Ws, bs = po.newton_logreg((Xt - mu) / sd, y[tr], C, l2)
            W = Ws / sd
            b = bs - (Ws / sd) @ mu
            sols.append((W, b))
            vals.append((po.predict(X[va], W, b) == y[va]).mean())
            g = r["grid"][k]
            check(g["l2"] == l2 and g["status"] == "converged", f"{task} std={std} l2={l2}: {g}")
            check(g["grad_norm"] <= 1e-8 and g["iterations"] > 0, f"{task} std={std}: converged to tol: {g}")
            close(g["val_accuracy"], vals[-1], f"{task} std={std} l2={l2}: validation accuracy equal")
        sel = int(np.argmax(vals))
        check(r["selected"]["l2"] == l2s[sel], f"{task} std={std}: l2 chosen on validation")
        W, b = sols[sel]
        Wg, bg = h5[f"probe/{task}/W"][...], h5[f"probe/{task}/b"][...]
        check(Wg.shape == (C, D) and bg.shape == (C,), f"{task}: softmax head with a bias, one row per class")
        relW = np.linalg.norm(Wg - W) / np.linalg.norm(W)
        check(relW < 1e-4, f"{task} std={std}: weights vs Newton: relative L2 {relW:.3g}")
        relb = np.linalg.norm((bg - bg.mean()) - b) / max(np.linalg.norm(b), 1e-12)
        check(relb < 1e-4, f"{task} std={std}: biases (centred) vs Newton: relative L2 {relb:.3g}")
        m = po.metrics(po.predict(X[te], W, b), y[te], C, y[tr])
        close(r["test"]["accuracy"], m["accuracy"], f"{task} std={std}: test accuracy equal")
        check(r["test"]["confusion"] == m["confusion"], f"{task} std={std}: confusion equal")
        check(r["accuracy_ci95"] is None and len(r["per_seed"]) == 1, "lbfgs is deterministic: one fit")
        check("seed" in r["per_seed"][0] and r["per_seed"][0]["seed"] is None, "lbfgs per_seed: seed null")
    h5.close()

r = load_report(os.path.join(d, "out", "short.json"))["result"]["tasks"]["three"]["grid"][0]
check(r["status"] == "max_iter" and r["iterations"] == 3 and r["grad_norm"] > 1e-8, f"max_iter stop reported: {r}")
r = load_report(os.path.join(d, "out", "tiny.json"))["result"]["tasks"]["three"]["grid"][0]
check(r["status"] == "line_search_stalled" and 0 < r["iterations"] < 100000 and r["grad_norm"] < 1e-6,
      f"a stalled line search is reported as such (at the optimum within rounding): {r}")

# ---- a large offset: mean 3e4, sd 0.5 (|mean|/sd = 6e4) ----
N2, D2, C2 = 1500, 8, 3
lab2 = rng.integers(0, C2, N2)
mu2 = rng.normal(0, 0.8, (C2, D2))
Z2 = rng.normal(0, 1, (N2, D2)) + mu2[lab2]
X2 = (3e4 + 0.5 * Z2).astype(np.float32)
split2 = rng.choice(3, N2, p=[0.7, 0.15, 0.15]).astype(np.uint8)
tr2, te2 = np.flatnonzero(split2 == 0), np.flatnonzero(split2 == 2)
Xt2 = X2[tr2].astype(np.float64)
m2, s2 = Xt2.mean(0), Xt2.std(0)
Xs2 = ((X2.astype(np.float64) - m2) / s2).astype(np.float32)       # standardized beforehand
with h5py.File(os.path.join(d, "offset.h5"), "w") as f:
    for name, XX in (("raw", X2), ("pre", Xs2)):
        f[f"probe/{name}/X"] = XX
        f[f"probe/{name}/label"] = lab2.astype(np.int32)
        f[f"probe/{name}/split"] = split2
ojobs = [{"name": name, "kind": "probe", "input": "offset.h5", "mode": "lbfgs", "l2_grid": [1e-2], "kmeans": False,
          "standardize": name == "raw", "tasks": {name: {"classes": [[0], [1], [2]]}}} for name in ("raw", "pre")]
write_job(os.path.join(d, "offset.json"), ojobs, output_dir="offset", seed=1)
code, _, err = run(["run", os.path.join(d, "offset.json"), "--quiet"], ranks=2)
check(code == 0, f"offset: exit {code} ({err})")
g = {n: load_report(os.path.join(d, "offset", n + ".json"))["result"]["tasks"][n]["grid"][0] for n in ("raw", "pre")}
for n in ("raw", "pre"):
    check(g[n]["status"] == "converged" and g[n]["grad_norm"] <= 1e-8, f"offset {n}: converged to tol: {g[n]}")
with h5py.File(os.path.join(d, "offset", "raw.h5"), "r") as fr, h5py.File(os.path.join(d, "offset", "pre.h5"), "r") as fp:
    Wr, br, Wp, bp = fr["probe/raw/W"][...], fr["probe/raw/b"][...], fp["probe/pre/W"][...], fp["probe/pre/b"][...]
    # the standardized-space weights of the raw fit are W_raw * sd
    rel = np.linalg.norm(Wr * s2 - Wp) / np.linalg.norm(Wp)
    check(rel < 1e-5, f"offset: weights match the pre-standardized fit (relative L2 {rel:.3g})")
    # both against Newton on the standardized features in float64
    Wn, bn = po.newton_logreg((Xt2 - m2) / s2, lab2[tr2], C2, 1e-2)
    rel = np.linalg.norm(Wr * s2 - Wn) / np.linalg.norm(Wn)
    check(rel < 1e-5, f"offset: weights match Newton's (relative L2 {rel:.3g})")
    pr, pp = fr["probe/raw/test_pred"][...], fp["probe/pre/test_pred"][...]
    zs = (X2[te2].astype(np.float64) - m2) / s2 @ Wn.T + bn
    want = zs.argmax(1)
    zs.sort(1)
    sure = zs[:, -1] - zs[:, -2] >= 1e-6      # rows not within rounding of a tie
    check(sure.sum() > 0.99 * len(te2), f"offset: few near-ties ({int((~sure).sum())})")
    check(np.array_equal(pr[sure], pp[sure]), f"offset: test predictions match the pre-standardized fit "
          f"({int((pr[sure] != pp[sure]).sum())} differ)")
    check(np.array_equal(pr[sure], want[sure]), f"offset: test predictions match Newton's "
          f"({int((pr[sure] != want[sure]).sum())} differ)")
done()
