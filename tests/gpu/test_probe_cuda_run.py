"""The CUDA backend against the CPU backend on whole probe runs (mode mrmbench, binary and softmax
heads, data-parallel over 2 ranks): trained weights agree within 1e-4 in relative L2 norm (docs/reference.md, 'Statistics')
and the reports agree except on predictions within rounding of a tie. Skips (77) without an NVIDIA
driver or without a CUDA build (and only then: a backend that does not start on a machine with a driver,
and any other failure of the CUDA run, fail the test)."""
import os

from rdtest import *

d = scratch("probe_cuda")
rng = np.random.default_rng(2)
N, D = 2000, 300
with h5py.File(os.path.join(d, "in.h5"), "w") as f:
    for task in ("a", "b"):
        lab = rng.integers(0, 3, N)
        mu = rng.normal(0, 0.4, (3, D))
        f[f"probe/{task}/X"] = (rng.normal(0, 1, (N, D)) + mu[lab]).astype(np.float32)
        f[f"probe/{task}/label"] = lab.astype(np.int32)
        f[f"probe/{task}/split"] = rng.choice(3, N, p=[0.8, 0.1, 0.1]).astype(np.uint8)
job = {"name": "gpu", "kind": "probe", "input": "in.h5", "lr_grid": [1e-2, 1e-3], "kmeans": False,
       "tasks": {"a": {"classes": [[0], [1, 2]]}, "b": {"classes": [[0], [1], [2]]}}}
jp = write_job(os.path.join(d, "cuda.json"), [job], output_dir="cuda")
code, _, err = run(["run", jp, "--quiet", "--backend", "cuda"], ranks=2)
# skip only without a CUDA build or without an NVIDIA driver; with a driver, a backend that does not
# start (a module that cannot be loaded or does not match) and any failure of the run fail the test
driver = os.path.exists("/proc/driver/nvidia/version") or os.path.exists("/dev/nvidiactl")
if code != 0 and ("built without CUDA" in err or ("no usable GPU" in err and not driver)):
    print(f"SKIP: the CUDA backend is not available here: {err.strip()}")
    sys.exit(77)
check(code == 0, f"cuda run: exit {code} ({err})")
jp = write_job(os.path.join(d, "cpu.json"), [job], output_dir="cpu")
code, _, err = run(["run", jp, "--quiet", "--backend", "cpu"], ranks=2)
check(code == 0, f"cpu run: exit {code} ({err})")
rg = load_report(os.path.join(d, "cuda", "gpu.json"))
rc = load_report(os.path.join(d, "cpu", "gpu.json"))
check(rg["rmdiag"]["backend"] == "cuda", f"backend recorded: {rg['rmdiag']['backend']}")
with h5py.File(os.path.join(d, "cuda", "gpu.h5"), "r") as fg, h5py.File(os.path.join(d, "cpu", "gpu.h5"), "r") as fc:
    for task in ("a", "b"):
        Wg, Wc = fg[f"probe/{task}/W"][...], fc[f"probe/{task}/W"][...]
        rel = np.linalg.norm(Wg - Wc) / np.linalg.norm(Wc)
        check(rel <= 1e-4, f"{task}: weights within 1e-4 relative L2 ({rel:.3g})")
        diff = int((fg[f"probe/{task}/test_pred"][...] != fc[f"probe/{task}/test_pred"][...]).sum())
        near = rg["result"]["tasks"][task]["near_ties"]["test"] + rc["result"]["tasks"][task]["near_ties"]["test"]
        check(diff <= near, f"{task}: test predictions agree except near ties ({diff} differ, {near} near ties)")
        check(rg["result"]["tasks"][task]["selected"] == rc["result"]["tasks"][task]["selected"], f"{task}: same selection")
done()
