"""Inference-time probing (docs/reference.md, 'Inference-time probing (kmeans)') against numpy:
centroids per class of each task from its validation rows (class means for k_per_class = 1; k-means++
replayed from the counter-based generator, then Lloyd, for k > 1), the nearest centroid's task (ties to
the first task in job order), d_min (plain Euclidean; 1 - cos for cosine; Mahalanobis with a Ledoit-Wolf
shrunk pooled within-class covariance), kept with a fixed tau or a quantile tau over the validation
rows' d_min, and reliance fractions over kept rows; per-row outputs in HDF5."""
import math
import os

from rdtest import *  # first: it skips (77) when numpy or h5py is missing
import probe_oracle as po

d = scratch("probe_kmeans")
rng = np.random.default_rng(8)
D = 12
tasks = {"alpha": [[0], [1]], "beta": [[0, 1], [2]]}
data = {}
with h5py.File(os.path.join(d, "in.h5"), "w") as f:
    for i, task in enumerate(tasks):
        N = 400
        lab = rng.integers(0, 3, N)
        off = rng.normal(0, 2.0, D)
        X = (rng.normal(0, 1, (N, D)) * rng.uniform(0.5, 2, D) + off + lab[:, None] * 0.8).astype(np.float32)
        split = rng.choice(3, N, p=[0.5, 0.3, 0.2]).astype(np.uint8)
        f[f"probe/{task}/X"] = X
        f[f"probe/{task}/label"] = lab.astype(np.int32)
        f[f"probe/{task}/split"] = split
        data[task] = (X, lab, split)
        # a twin of the task (same rows): every inference row is equally near both, ties go first
        f[f"twin/{task}/X"] = X
        f[f"twin/{task}/label"] = lab.astype(np.int32)
        f[f"twin/{task}/split"] = split
        f[f"twin/{task}2/X"] = X
        f[f"twin/{task}2/label"] = lab.astype(np.int32)
        f[f"twin/{task}2/split"] = split
    XI = np.vstack([data["alpha"][0][:60] + rng.normal(0, 0.3, (60, D)).astype(np.float32),
                    data["beta"][0][:60], rng.normal(0, 6, (30, D)).astype(np.float32)]).astype(np.float32)
    f["probe/infer/X"] = XI
    f["twin/infer/X"] = XI

base = {"kind": "probe", "input": "in.h5", "lr_grid": [1e-3], "tasks": {t: {"classes": c} for t, c in tasks.items()}}
jobs = [dict(base, name="eu", kmeans={"tau": {"quantile": 0.9}}),
        dict(base, name="eu3", kmeans={"k_per_class": 3, "iters": 30, "tau": 4.5}),
        dict(base, name="cos", kmeans={"distance": "cosine", "tau": {"quantile": 0.5}}),
        dict(base, name="maha", kmeans={"distance": "mahalanobis", "tau": {"quantile": 0.8}}),
        dict(base, name="twin", group="/twin", tasks={"alpha": {"classes": tasks["alpha"]}, "alpha2": {"classes": tasks["alpha"]}})]
write_job(os.path.join(d, "job.json"), jobs, output_dir="out", seed=4)
code, _, err = run(["run", os.path.join(d, "job.json"), "--quiet"], ranks=2)
check(code == 0, f"exit {code} ({err})")


def val_rows(task):
    X, lab, split = data[task]
    y = po.class_of(lab, tasks[task])
    va = np.flatnonzero((split == 1) & (y >= 0))
    return X[va].astype(np.float64), y[va]


def kmeans_ref(Y, k, iters, task, c):
    """k-means++ (draw 0 uniform, draw j proportional to D^2) then Lloyd; empty clusters take the farthest row."""
    n = Y.shape[0]
    w = po.words(4, "eu3", "probe.kmeans.." + task, c, k)
    C = np.empty((k, Y.shape[1]))
    first = (w[0] * n) >> 64
    used = np.zeros(n, bool)
    C[0] = Y[first]
    used[first] = True
    best = ((Y - C[0]) ** 2).sum(1)
    for j in range(1, k):
        u = po.uniform(w[j]) * best.sum()
        cs = np.cumsum(best)
        pick = int(np.flatnonzero((cs > u) & (best > 0))[0])
        used[pick] = True
        C[j] = Y[pick]
        best = np.minimum(best, ((Y - C[j]) ** 2).sum(1))
    lab = np.full(n, -1)
    for _ in range(iters):
        D2 = ((Y[:, None, :] - C[None]) ** 2).sum(2)
        new = D2.argmin(1)
        if np.array_equal(new, lab):
            break
        lab = new
        for j in range(k):
            if (lab == j).any():
                C[j] = Y[lab == j].mean(0)
    return C


def check_job(name, space, dist, tau_rule, cents):
    rep = load_report(os.path.join(d, "out", name + ".json"))["result"]
    inf = rep["inference"]
    h5 = h5py.File(os.path.join(d, "out", name + ".h5"), "r")
    C = np.vstack([c for _, c, _ in cents])
    owner = np.concatenate([[ti] * len(c) for ti, c, _ in cents])
    for ti, c, cls in cents:
        task = list(tasks)[ti]
        got = h5[f"probe/{task}/centroids"][...]
        close(got.reshape(-1).tolist(), c.reshape(-1).tolist(), f"{name}: centroids of {task}", rel=1e-9, abs_=1e-12)
        check(h5[f"probe/{task}/centroid_class"][...].tolist() == list(cls), f"{name}: centroid classes of {task}")
    vd = np.concatenate([dist(space(val_rows(t)[0]), C).min(1) for t in tasks])
    tau = np.quantile(vd, tau_rule) if isinstance(tau_rule, float) and tau_rule <= 1 else tau_rule
    close(inf["tau"], tau, f"{name}: tau", rel=1e-9)
    DI = dist(space(XI.astype(np.float64)), C)
    near = DI.argmin(1)
    dmin = DI[np.arange(len(near)), near]
    kept = dmin <= inf["tau"]
    check(np.array_equal(h5["probe/infer/nearest_task"][...], owner[near]), f"{name}: nearest task per row")
    close(h5["probe/infer/d_min"][...].tolist(), dmin.tolist(), f"{name}: d_min per row", rel=1e-9, abs_=1e-12)
    check(np.array_equal(h5["probe/infer/kept"][...], kept.astype(np.uint8)), f"{name}: kept per row")
    check(inf["n"] == len(XI) and inf["n_kept"] == int(kept.sum()), f"{name}: counts")
    close(inf["kept_fraction"], kept.mean(), f"{name}: kept fraction")
    for ti, task in enumerate(tasks):
        close(inf["reliance"][task], (owner[near][kept] == ti).mean(), f"{name}: reliance on {task}")
    h5.close()
    return inf


def euclid(Y, C):
    return np.sqrt(((Y[:, None, :] - C[None]) ** 2).sum(2))


ident = lambda Y: Y
means = []
for ti, task in enumerate(tasks):
    Y, y = val_rows(task)
    means.append((ti, np.vstack([Y[y == c].mean(0) for c in range(len(tasks[task]))]), range(len(tasks[task]))))
check_job("eu", ident, euclid, 0.9, means)

k3 = []
for ti, task in enumerate(tasks):
    Y, y = val_rows(task)
    cs = [kmeans_ref(Y[y == c], 3, 30, task, c) for c in range(len(tasks[task]))]
    k3.append((ti, np.vstack(cs), [c for c in range(len(tasks[task])) for _ in range(3)]))
inf = check_job("eu3", ident, euclid, 4.5, k3)
check(inf["tau_rule"] == "fixed" and inf["n_centroids"] == 12, f"eu3: {inf}")

norm = lambda Y: Y / np.linalg.norm(Y, axis=1, keepdims=True)
cosd = lambda Y, C: 1.0 - (Y @ C.T) / np.linalg.norm(C, axis=1)[None]
cm = []
for ti, task in enumerate(tasks):
    Y, y = val_rows(task)
    cm.append((ti, np.vstack([norm(Y[y == c]).mean(0) for c in range(len(tasks[task]))]), range(len(tasks[task]))))
check_job("cos", norm, cosd, 0.5, cm)

# Mahalanobis: rows centred by their class mean (all tasks' validation rows pooled), Ledoit-Wolf
cen = []
for task in tasks:
    Y, y = val_rows(task)
    for c in range(len(tasks[task])):
        cen.append(Y[y == c] - Y[y == c].mean(0))
Sig, shrink = po.ledoit_wolf_pooled(np.vstack(cen))
L = np.linalg.cholesky(Sig)
white = lambda Y: np.linalg.solve(L, Y.T).T
mm = []
for ti, task in enumerate(tasks):
    Y, y = val_rows(task)
    mm.append((ti, np.vstack([white(Y[y == c]).mean(0) for c in range(len(tasks[task]))]), range(len(tasks[task]))))
inf = check_job("maha", white, euclid, 0.8, mm)
close(inf["shrinkage"], shrink, "Ledoit-Wolf shrinkage reported", rel=1e-9)
check(0 < shrink < 1, f"shrinkage strictly between 0 and 1 here ({shrink})")

# ties: twin tasks have identical centroids, so every row's nearest task is the first one
with h5py.File(os.path.join(d, "out", "twin.h5"), "r") as f:
    check(np.all(f["probe/infer/nearest_task"][...] == 0), "ties go to the first task in job order")
rep = load_report(os.path.join(d, "out", "twin.json"))["result"]
check(rep["inference"]["reliance"]["alpha2"] in (0, None), "the second twin is never relied on")

# an empty cluster: class 0's validation rows are 4 copies of A and one B, k = 3. k-means++ can only
# draw A and B (other rows have D^2 = 0), its third centre is another copy; Lloyd then leaves one of
# the two equal centres empty (ties go to the lower index), and the empty one is re-seeded at the
# farthest row: the centroids are {A, A, B} whatever the draws.
A, B = np.full(4, 1.0), np.array([5.0, -2.0, 0.0, 3.0])
Xd = np.vstack([A, A, A, A, B, [0, 0, 0, 1], [0, 0, 1, 0], [0, 1, 0, 0], A, B, [1, 1, 1, 1], [0, 0, 0, 1]])
labd = [0, 0, 0, 0, 0, 1, 1, 1, 0, 0, 1, 1]
spld = [1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 2]
with h5py.File(os.path.join(d, "dup.h5"), "w") as f:
    f["probe/dup/X"] = Xd.astype(np.float32)
    f["probe/dup/label"] = np.array(labd, np.int32)
    f["probe/dup/split"] = np.array(spld, np.uint8)
jp = write_job(os.path.join(d, "dup.json"), [{"name": "dup", "kind": "probe", "input": "dup.h5",
                                               "tasks": {"dup": {"classes": [[0], [1]]}}, "lr_grid": [1e-3],
                                               "kmeans": {"k_per_class": 3}}], output_dir="out", seed=4)
code, _, err = run(["run", jp, "--quiet"])
check(code == 0, f"empty-cluster case: exit {code} ({err})")
with h5py.File(os.path.join(d, "out", "dup.h5"), "r") as f:
    cen, ccl = f["probe/dup/centroids"][...], f["probe/dup/centroid_class"][...]
check(ccl.tolist() == [0, 0, 0, 1, 1, 1], f"3 centroids per class: {ccl}")
got = sorted(map(tuple, cen[:3].tolist()))
check(got == sorted([tuple(A), tuple(A), tuple(B)]), f"empty cluster re-seeded: {got}")
check(sorted(map(tuple, cen[3:].tolist())) == sorted(map(tuple, Xd[5:8].tolist())), "k = n: every row a centroid")
# kept = d_min <= tau, the boundary included: centroids (0, 0) and (100, 100) from the validation rows;
# inference row (3, 4) is at distance exactly 5 = tau (kept), (3, 4.5) beyond it (not kept)
with h5py.File(os.path.join(d, "edge.h5"), "w") as f:
    Xe = np.vstack([np.random.default_rng(9).normal(size=(20, 2)), [[0, 0], [0, 0], [100, 100], [100, 100]], [[1, 1]] * 2])
    f["probe/e/X"] = Xe.astype(np.float32)
    f["probe/e/label"] = np.array([i % 2 for i in range(20)] + [0, 0, 1, 1, 0, 1], np.int32)
    f["probe/e/split"] = np.array([0] * 20 + [1] * 4 + [2] * 2, np.uint8)
    f["probe/infer/X"] = np.array([[3, 4], [3, 4.5]], np.float32)
jp = write_job(os.path.join(d, "edge.json"), [{"name": "edge", "kind": "probe", "input": "edge.h5",
                                                "tasks": {"e": {"classes": [[0], [1]]}}, "lr_grid": [1e-3],
                                                "kmeans": {"tau": 5}}], output_dir="out", seed=4)
code, _, err = run(["run", jp, "--quiet"])
check(code == 0, f"boundary case: exit {code} ({err})")
with h5py.File(os.path.join(d, "out", "edge.h5"), "r") as f:
    check(f["probe/infer/d_min"][...].tolist() == [5.0, math.hypot(3, 4.5)], f"d_min: {f['probe/infer/d_min'][...]}")
    check(f["probe/infer/kept"][...].tolist() == [1, 0], f"kept at d_min = tau, not beyond: {f['probe/infer/kept'][...]}")
done()
