"""The two ways a group of ranks combines its gradients give the same bytes: through a window of
shared memory (the default when the group's ranks share a node; the weights then live in a shared
window too and each rank applies AdamW to its share of them) and through MPI_Allgatherv
(RMDIAG_PROBE_SHM=0, as for a group spread over nodes). MRMBench training data-parallel over 2 and
3 ranks (units of one batch split unevenly), with a softmax and a one-logit task, a feature count
that is not a multiple of 8 and a last batch of a few rows, and L-BFGS over row blocks: the result
JSON and the output HDF5 bytes equal those of a plain process either way."""
import os

from rdtest import *

d = scratch("probe_exchange")
rng = np.random.default_rng(11)
D = 203
path = os.path.join(d, "in.h5")
with h5py.File(path, "w") as f:
    for name, N in (("s", 1163), ("b", 1290)):
        lab = rng.integers(0, 3, N).astype(np.int32)
        mu = rng.normal(0, 0.4, (3, D))
        X = (rng.normal(0, 1, (N, D)) + mu[lab]).astype(np.float32)
        f[f"probe/{name}/X"] = X
        f[f"probe/{name}/label"] = lab
        f[f"probe/{name}/split"] = rng.choice(3, N, p=[0.8, 0.1, 0.1]).astype(np.uint8)

jobs = [
    {"name": "soft", "kind": "probe", "input": "in.h5", "tasks": {"s": {"classes": [[0], [1], [2]]}},
     "lr_grid": [3e-2, 1e-3, 1e-4], "kmeans": False},
    {"name": "bin", "kind": "probe", "input": "in.h5", "tasks": {"b": {"classes": [[0], [1, 2]]}},
     "lr_grid": [1e-2, 1e-3], "seeds": [3], "kmeans": False},
    {"name": "lb", "kind": "probe", "input": "in.h5", "tasks": {"s": {"classes": [[0], [1], [2]]}}, "mode": "lbfgs",
     "l2_grid": [1e-2], "kmeans": False},
]


def outputs(tag, ranks, env=None, exchange=None):
    jp = write_job(os.path.join(d, f"job_{tag}.json"), jobs, output_dir=f"out_{tag}", seed=4)
    code, _, err = run(["run", jp, "--quiet"], ranks=ranks, env=dict(env or {}, RMDIAG_TIMING="1"))
    check(code == 0, f"{tag}: exit {code} ({err})")
    if exchange:  # the path under test is the one taken (RMDIAG_TIMING names it)
        check(f"exchange: {exchange}" in err, f"{tag}: the {exchange} exchange ran ({err[:300]})")
    got = {}
    for j in jobs:
        rep = load_report(os.path.join(d, f"out_{tag}", j["name"] + ".json"))
        with open(os.path.join(d, f"out_{tag}", j["name"] + ".h5"), "rb") as f:
            got[j["name"]] = (json.dumps(rep["result"], sort_keys=True), f.read())
    return got


ref = outputs("plain", 0)
for tag, ranks, env in (("shm2", 2, None), ("shm3", 3, None), ("ag2", 2, {"RMDIAG_PROBE_SHM": "0"}),
                        ("ag3", 3, {"RMDIAG_PROBE_SHM": "0"})):
    got = outputs(tag, ranks, env, "MPI_Allgatherv" if env else "shared memory")
    for j in jobs:
        check(got[j["name"]][0] == ref[j["name"]][0], f"{j['name']}: result with {tag} identical to the plain process")
        check(got[j["name"]][1] == ref[j["name"]][1], f"{j['name']}: HDF5 bytes with {tag} identical to the plain process")

# trained, not trivially equal
r = json.loads(ref["soft"][0])
check(max(g["val_accuracy"] for g in r["tasks"]["s"]["grid"]) > 0.5, "softmax probe learned")
done()
