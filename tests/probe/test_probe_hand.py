"""Hand-worked probe cases (docs/reference.md, 'mrmbench training'): two AdamW steps with clipping and
the cosine learning rate on the binary (one logit + BCE) path, one step on the softmax path, and the
Kaiming init replayed from the counter-based generator."""
import math
import os

from rdtest import *  # first: it skips (77) when numpy or h5py is missing
from probe_oracle import kaiming

d = scratch("probe_hand")


def make(path, X, label, split):
    with h5py.File(path, "w") as f:
        f["probe/t/X"] = np.asarray(X, np.float32)
        f["probe/t/label"] = np.asarray(label, np.int32)
        f["probe/t/split"] = np.asarray(split, np.uint8)


def run_job(name, X, label, split, **opts):
    make(os.path.join(d, name + ".h5"), X, label, split)
    job = {"name": name, "kind": "probe", "input": name + ".h5", "kmeans": False}
    job.update(opts)
    write_job(os.path.join(d, name + ".json"), [job], output_dir="out", seed=7)
    code, _, err = run(["run", os.path.join(d, name + ".json"), "--quiet", "--force"])
    check(code == 0, f"{name}: exit {code} ({err})")
    rep = load_report(os.path.join(d, "out", name + ".json"))["result"]
    with h5py.File(os.path.join(d, "out", name + ".h5"), "r") as f:
        W = f["probe/t/W"][...]
    return rep, W


# ---- binary path: 65 rows x = (3, 4) of class 1 and 64 rows -x of class 0, zero init, lr 0.1 --------
# Mirror rows contribute the same gradient at any W (W.(-x) = -W.x and sigma(-a) - 0 = -(sigma(a) - 1)),
# so every batch's gradient is that of a row (3, 4) of class 1 whatever the order.
# T = ceil(129/128) = 2 steps: a batch of 128 rows, then a batch of 1 row. Step 0: z = 0, sigma = 0.5,
# r = 0.5 - 1 = -0.5, g = r x = (-1.5, -2.0), |g| = 2.5 > 1, so g' = g / (2.5 + 1e-6); lr_0 = 0.1 *
# (1 + cos 0)/2 = 0.1; decay of a zero weight is zero; m = 0.1 g', v = 0.05 g'^2, bias corrections
# 0.1 and 0.05 give m^ = g', sqrt(v^) = |g'|, so W1 = -0.1 * g' / (|g'| + 1e-8).
# Step 1: z = W1 . x, r = sigma(z) - 1, g = r x (|g| ~ 1.66 > 1: clipped again); lr_1 = 0.1 * (1 +
# cos(pi/2))/2 = 0.05; W2 = W1 * (1 - 0.05 * 0.1) - (0.05 / (1 - 0.9^2)) * m / (sqrt(v) / sqrt(1 -
# 0.95^2) + 1e-8) with m = 0.9 m + 0.1 g', v = 0.95 v + 0.05 g'^2.
x = np.array([3.0, 4.0])
g = -0.5 * x
g1 = g / (2.5 + 1e-6)
m = 0.1 * g1
v = 0.05 * g1 * g1
W1 = -0.1 * (m / 0.1) / (np.sqrt(v / 0.05) + 1e-8)
check(abs(W1[0] - 0.1 * 0.59999976000009600 / (0.59999976000009600 + 1e-8)) < 1e-15, "hand step 0 arithmetic")
z = float(W1 @ x)
r = 1.0 / (1.0 + math.exp(-z)) - 1.0
g = r * x
g2 = g / (math.sqrt(float(g @ g)) + 1e-6)
m = 0.9 * m + 0.1 * g2
v = 0.95 * v + 0.05 * g2 * g2
W2 = W1 * (1 - 0.05 * 0.1) - (0.05 / (1 - 0.9 ** 2)) * m / (np.sqrt(v) / math.sqrt(1 - 0.95 ** 2) + 1e-8)
X = np.vstack([np.tile(x, (65, 1)), np.tile(-x, (64, 1)), [[3, 4], [-3, -4], [3, 4], [-3, -4], [3, 4]]])
label = [1] * 65 + [0] * 64 + [1, 0, 1, 0, 0]
split = [0] * 129 + [1, 1, 2, 2, 2]
rep, W = run_job("bce", X, label, split, tasks={"t": {"classes": [[0], [1]]}}, lr_grid=[0.1], init="zeros")
check(W.shape == (1, 2), f"binary head has one logit row: {W.shape}")
close(list(W[0]), list(W2), "two AdamW steps with clipping and the cosine lr (binary)", rel=1e-12)
t = rep["tasks"]["t"]
check(t["n_train"] == 129 and t["n_val"] == 2 and t["n_test"] == 3, "row counts")
# test rows (3,4) class 1, (-3,-4) class 0, (3,4) class 0: predictions 1, 0, 1 (logit > 0 is class 1)
check(t["test"]["confusion"] == [[1, 1], [0, 1]], f"confusion (rows = true class): {t['test']}")
close(t["test"]["accuracy"], 2 / 3, "accuracy 2/3")
# F1 class 0: tp 1, fp 0, fn 1 -> 2/3; class 1: tp 1, fp 1, fn 0 -> 2/3; macro 2/3
close(t["test"]["macro_f1"], 2 / 3, "macro-F1")
close(t["test"]["majority_baseline"], 1 / 3, "majority baseline: the train majority is class 1 (65 > 64), 1 of 3 test rows")
check(t["accuracy_ci95"] is None and len(t["per_seed"]) == 1, "one seed: no interval")
check(t["train_class_counts"] == [64, 65], f"train class counts: {t['train_class_counts']}")

# ---- metrics edge cases: validation and test rows of zeros have every logit 0 (no bias), so each is
# predicted class 0 (the first maximum). Train counts 4, 4, 2: the majority baseline's tie goes to the lowest class (0).
# Test rows: 3 of class 0, 1 of class 1, none of class 2 (never predicted either: its F1 is 0).
#   confusion [[3,0,0],[1,0,0],[0,0,0]]; F1: class 0 tp 3 fp 1 fn 0 -> 6/7, class 1 -> 0, class 2 -> 0;
#   macro-F1 = (6/7)/3 = 2/7; accuracy 3/4; majority baseline (class 0) 3/4. Every such logit is exactly
#   0: each prediction is a near tie (1 validation row, 4 test rows).
Xm = np.random.default_rng(4).normal(size=(15, 2))
Xm[10:] = 0.0
labm = [0] * 4 + [1] * 4 + [2] * 2 + [0] + [0, 0, 0, 1]
splm = [0] * 10 + [1] + [2] * 4
rep, _ = run_job("metrics", Xm, labm, splm, tasks={"t": {"classes": [[0], [1], [2]]}}, lr_grid=[1e-2])
t = rep["tasks"]["t"]
check(t["train_class_counts"] == [4, 4, 2], f"train class counts {t['train_class_counts']}")
check(t["test"]["confusion"] == [[3, 0, 0], [1, 0, 0], [0, 0, 0]], f"confusion: {t['test']['confusion']}")
close(t["test"]["macro_f1"], 2 / 7, "macro-F1: a class with no rows and no predictions counts F1 = 0")
close(t["test"]["majority_baseline"], 0.75, "majority baseline: the tie 4 = 4 goes to the lowest class")
check(t["near_ties"]["validation"] == 1 and t["near_ties"]["test"] == 4, f"near ties: {t['near_ties']}")

# ---- softmax path: 3 classes, rows (1, 0), (0, 1), (1, 3) of classes 0, 1, 2; zero init; lr 0.01 ---
# One batch of 3 rows, T = 1, lr_0 = 0.01. z = 0, p = 1/3: G[k] = (1/3) sum_i (1/3 - [y_i = k]) x_i
# = (1/3) ((1/3)(2, 4) - x_k): G = [[-1/9, 4/9], [2/9, 1/9], [-1/9, -5/9]]; |G|^2 = 48/81 < 1: no
# clipping. One Adam step (m^ = G, sqrt(v^) = |G|): W = -0.01 * G / (|G| + 1e-8) elementwise.
G = np.array([[-1 / 9, 4 / 9], [2 / 9, 1 / 9], [-1 / 9, -5 / 9]])
Wsm = -0.01 * G / (np.abs(G) + 1e-8)
rep, W = run_job("softmax", [[1, 0], [0, 1], [1, 3], [1, 3], [1, 0], [0, 1]], [0, 1, 2, 2, 0, 1], [0, 0, 0, 1, 2, 2],
                 tasks={"t": {"classes": [[0], [1], [2]]}}, lr_grid=[0.01], init="zeros")
check(W.shape == (3, 2), f"softmax head has one row per class: {W.shape}")
close(W.reshape(-1).tolist(), Wsm.reshape(-1).tolist(), "one AdamW step (softmax, no clipping)", rel=1e-13)

# ---- Kaiming init: a learning rate of 1e-300 leaves the init unchanged in float64 ------------------
# W = init * (1 - 1e-301) - 1e-300 * (about 1) = init exactly; init element (o, j) is float32(-b + 2 b u)
# with b = 1/sqrt(d), u = (word >> 11) * 2^-53 of draw o*d + j, replicate = seed, stream
# (job seed 7, job name, "probe.init.t").
rng = np.random.default_rng(0)
Xk = rng.normal(size=(40, 6))
lab = rng.integers(0, 3, 40)
spl = np.array([0] * 30 + [1] * 5 + [2] * 5)
rep, W = run_job("kaiming", Xk, lab, spl, tasks={"t": {"classes": [[0], [1], [2]]}}, lr_grid=[1e-300], seeds=[5])
ref = kaiming(7, "kaiming", "t", 5, 3, 6)
check(np.array_equal(W, ref), f"Kaiming init replayed exactly: max diff {np.abs(W - ref).max()}")
check(np.all(np.abs(W) <= 1 / math.sqrt(6)) and np.all(W == W.astype(np.float32)), "within the bound, float32 values")
rep2, W2 = run_job("kaiming2", Xk, lab, spl, tasks={"t": {"classes": [[0], [1], [2]]}}, lr_grid=[1e-300], seeds=[5])
# the same seed under another job name draws another init; the same job reproduces it
check(not np.array_equal(W2, W), "the init stream depends on the job name")
rep3, W3 = run_job("kaiming", Xk, lab, spl, tasks={"t": {"classes": [[0], [1], [2]]}}, lr_grid=[1e-300], seeds=[5])
check(np.array_equal(W3, W), "the same job reproduces its init")

# ---- the validation holdout's size: round(n/10) with halves rounded up, at least 1 ----------------------
# n training rows (no validation split) -> n_val = floor((n + 5)/10), at least 1:
#   n = 5: 0.5 -> 1;  n = 11: 1.1 -> 1 (not ceil = 2);  n = 14: 1.4 -> 1;  n = 15: 1.5 -> 2;
#   n = 25: 2.5 -> 3 (halves up, not to even);  n = 26: 2.6 -> 3
want_val = {5: 1, 11: 1, 14: 1, 15: 2, 25: 3, 26: 3}
with h5py.File(os.path.join(d, "holdout.h5"), "w") as f:
    for n in want_val:
        lab_h = np.array([i % 2 for i in range(n)] + [0, 1], np.int32)   # n train rows, then 2 test rows
        f[f"probe/n{n}/X"] = rng.normal(size=(n + 2, 3)).astype(np.float32)
        f[f"probe/n{n}/label"] = lab_h
        f[f"probe/n{n}/split"] = np.array([0] * n + [2, 2], np.uint8)
job = {"name": "holdout", "kind": "probe", "input": "holdout.h5", "kmeans": False, "lr_grid": [1e-2],
       "tasks": {f"n{n}": {"classes": [[0], [1]]} for n in want_val}}
write_job(os.path.join(d, "holdout.json"), [job], output_dir="out", seed=7)
code, _, err = run(["run", os.path.join(d, "holdout.json"), "--quiet", "--force"])
check(code == 0, f"holdout: exit {code} ({err})")
rep = load_report(os.path.join(d, "out", "holdout.json"))["result"]["tasks"]
for n, nv in want_val.items():
    r = rep[f"n{n}"]
    check(r["n_val"] == nv and r["n_train"] == n - nv and r["n_test"] == 2,
          f"{n} training rows: {nv} held out for validation (n_train {r['n_train']}, n_val {r['n_val']})")
    check(r["validation"].startswith("holdout"), f"{n} training rows: the holdout is reported ({r['validation']})")
done()
