"""Bit-for-bit determinism of the probe report: the `result` JSON and the output HDF5 bytes (trained
weights included) are identical for a plain process and 1, 2, 3 and 4 ranks (oversubscribed), in
every arrangement the scheduler makes: configurations spread over groups of one rank, one
configuration trained data-parallel by a group of several ranks, its learning-rate grid split over
two groups (10 ranks), L-BFGS with a fixed tree over
row blocks, several reward models, k-means with each distance, features streamed in segments under
a small memory budget (same bytes as in memory), float16 and chunked + compressed inputs, a feature
count that is not a multiple of 8 and row counts that are not multiples of the batch."""
import os

from rdtest import *

d = scratch("probe_determinism")
rng = np.random.default_rng(5)


def task_data(N, D, C=5):
    lab = rng.integers(0, C, N)
    lab[rng.random(N) < 0.01] = -1
    mu = rng.normal(0, 0.7, (C, D))
    X = (rng.normal(0, 1, (N, D)) + mu[np.maximum(lab, 0)]).astype(np.float32)
    split = rng.choice(3, N, p=[0.7, 0.15, 0.15]).astype(np.uint8)
    return X, lab.astype(np.int32), split


D = 37
path = os.path.join(d, "in.h5")
with h5py.File(path, "w") as f:
    for name, kw, dt in (("a", {}, np.float32), ("b", {}, np.float16),
                         ("c", dict(chunks=(100, D), compression="gzip", compression_opts=1), np.float32)):
        X, lab, split = task_data(1300 + 17 * len(name) + ord(name[0]), D)
        f.create_dataset(f"probe/{name}/X", data=X.astype(dt), **kw)
        f[f"probe/{name}/label"] = lab
        f[f"probe/{name}/split"] = split
        for rm in ("rmA", "rmB"):
            Xm = X + rng.normal(0, 0.5 if rm == "rmB" else 0.1, X.shape).astype(np.float32)
            f.create_dataset(f"rms/{rm}/{name}/X", data=Xm, **kw)
            f[f"rms/{rm}/{name}/label"] = lab
            f[f"rms/{rm}/{name}/split"] = split
    f["probe/infer/X"] = rng.normal(0, 1.2, (333, D)).astype(np.float32)
    f["rms/rmA/infer/X"] = rng.normal(0, 1.2, (100, D)).astype(np.float32)
# a wider input for the memory budget: 2600 x 600 float32 = 6.2 MB > 1 MB per rank
with h5py.File(os.path.join(d, "wide.h5"), "w") as f:
    X, lab, split = task_data(2600, 600, 3)
    f["probe/w/X"] = X
    f["probe/w/label"] = lab
    f["probe/w/split"] = split

tasks3 = {"a": {"classes": [[0, 1], [3, 4]]}, "b": {"classes": [[0, 1], [2], [3, 4]]}, "c": {"classes": [[0], [4]]}}
jobs = [
    {"name": "spread", "kind": "probe", "input": "in.h5", "tasks": tasks3, "seeds": [0, 1], "lr_grid": [3e-2, 1e-3, 1e-4],
     "kmeans": {"k_per_class": 2, "iters": 20}},
    {"name": "dp", "kind": "probe", "input": "in.h5", "tasks": {"b": tasks3["b"]}, "lr_grid": [3e-2, 1e-3],
     "kmeans": {"distance": "cosine", "tau": 0.3}},
    {"name": "lbfgs", "kind": "probe", "input": "in.h5", "tasks": {"a": tasks3["a"], "c": tasks3["c"]}, "mode": "lbfgs",
     "l2_grid": [1e-3, 1e-1], "standardize": True, "kmeans": {"distance": "mahalanobis", "k_per_class": 3}},
    {"name": "models", "kind": "probe", "input": "in.h5", "group": "/rms", "models": ["rmA", "rmB"], "tasks": tasks3,
     "lr_grid": [1e-2], "kmeans": {"tau": 6.0}},
    {"name": "budget", "kind": "probe", "input": "wide.h5", "tasks": {"w": {"classes": [[0], [1], [2]]}},
     "lr_grid": [1e-2, 1e-3], "max_memory_mb": 1},
    {"name": "budget_lb", "kind": "probe", "input": "wide.h5", "tasks": {"w": {"classes": [[0], [1], [2]]}},
     "mode": "lbfgs", "l2_grid": [1e-2], "max_memory_mb": 1, "kmeans": False},
]
outs = {}
for ranks in (0, 1, 2, 3, 4):
    jp = write_job(os.path.join(d, f"job{ranks}.json"), jobs, output_dir=f"out{ranks}", seed=9)
    code, _, err = run(["run", jp, "--quiet"], ranks=ranks)
    check(code == 0, f"{ranks} ranks: exit {code} ({err})")
    for j in jobs:
        rep = load_report(os.path.join(d, f"out{ranks}", j["name"] + ".json"))
        with open(os.path.join(d, f"out{ranks}", j["name"] + ".h5"), "rb") as f:
            outs[ranks, j["name"]] = (json.dumps(rep["result"], sort_keys=True), f.read())
for j in jobs:
    for ranks in (1, 2, 3, 4):
        a, b = outs[ranks, j["name"]], outs[0, j["name"]]
        check(a[0] == b[0], f"{j['name']}: result with {ranks} ranks identical to the plain process")
        check(a[1] == b[1], f"{j['name']}: output HDF5 bytes with {ranks} ranks identical to the plain process")

# 10 ranks: more ranks than one configuration can use (8 units per batch), so the learning-rate
# grid of "dp" is cut into chunks trained by two groups of 5 ranks: still the same bytes
jp = write_job(os.path.join(d, "job10.json"), [jobs[1]], output_dir="out10", seed=9)
code, _, err = run(["run", jp, "--quiet"], ranks=10, env={"OMPI_MCA_mpi_yield_when_idle": "1"})
check(code == 0, f"10 ranks: exit {code} ({err})")
rep = load_report(os.path.join(d, "out10", "dp.json"))
with open(os.path.join(d, "out10", "dp.h5"), "rb") as f:
    check((json.dumps(rep["result"], sort_keys=True), f.read()) == outs[0, "dp"], "dp: 10 ranks (grid split over groups) identical")

# the memory budget changes how rows are read, not the bytes: the same jobs with the whole rows in
# memory (mapped) and without mapping (read in pieces, RMDIAG_NO_MMAP=1)
big = [dict(j, max_memory_mb=4096) for j in jobs if j["name"].startswith("budget")]
jp = write_job(os.path.join(d, "jobbig.json"), big, output_dir="outbig", seed=9)
code, _, err = run(["run", jp, "--quiet"], ranks=2)
check(code == 0, f"in-memory run: exit {code} ({err})")
jp = write_job(os.path.join(d, "jobnomap.json"), jobs[4:], output_dir="outnomap", seed=9)
code, _, err = run(["run", jp, "--quiet"], ranks=3, env={"RMDIAG_NO_MMAP": "1"})
check(code == 0, f"unmapped run: exit {code} ({err})")
def datasets(path):
    out = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda k, v: out.__setitem__(k, v[...].tobytes()) if isinstance(v, h5py.Dataset) else None)
    return out


for name in ("budget", "budget_lb"):
    ref = outs[0, name]
    # same spec (and so the same bytes) without mapping; another max_memory_mb changes the spec hash
    # stored in the file, so there the datasets are compared
    rep = load_report(os.path.join(d, "outnomap", name + ".json"))
    with open(os.path.join(d, "outnomap", name + ".h5"), "rb") as f:
        check((json.dumps(rep["result"], sort_keys=True), f.read()) == ref, f"{name}: unmapped run identical")
    rep = load_report(os.path.join(d, "outbig", name + ".json"))
    check(json.dumps(rep["result"], sort_keys=True) == ref[0], f"{name}: in-memory result identical to the streamed one")
    check(datasets(os.path.join(d, "outbig", name + ".h5")) == datasets(os.path.join(d, "out0", name + ".h5")),
          f"{name}: in-memory datasets identical to the streamed ones")

# the reports are meaningful, not trivially equal
r = json.loads(outs[0, "spread"][0])
check(r["tasks"]["b"]["accuracy_mean"] > 0.5 and r["inference"]["n"] == 333, "spread: trained and inferred")
r = json.loads(outs[0, "models"][0])
check(set(r["models"]) == {"rmA", "rmB"} and r["comparison"]["a"]["ranking"][0] in ("rmA", "rmB"), "models compared")
check(r["models"]["rmB"]["inference"]["n"] == 0 and r["models"]["rmA"]["inference"]["n"] == 100, "per-model inference")
r = json.loads(outs[0, "lbfgs"][0])
check(all(g["status"] == "converged" for t in r["tasks"].values() for g in t["grid"]), "lbfgs converged")
done()
