"""Feature datasets that one rank cannot map: whether a dataset is mapped decides the schedule
(groups of ranks, segments of batches under a memory budget, and so which collective calls each rank
makes), so it is agreed by all ranks: when mmap of the input fails on one rank only (an LD_PRELOAD
shim that fails mmap of the input file, loaded by that rank alone in an MPMD launch), every rank
reads the features through HDF5 instead. The run completes (no rank waits forever) and writes the
same result and the same HDF5 bytes as a plain process. Skips (77) without a C compiler."""
import os
import shutil
import signal

from rdtest import *

d = scratch("probe_mmap_fallback")
cc = shutil.which("cc") or shutil.which("gcc")
if not cc:
    print("SKIP: no C compiler to build the mmap-failing shim")
    sys.exit(SKIP)

# fails mmap(2) with ENOMEM for any file descriptor whose path contains $FAILMMAP
SHIM = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <unistd.h>
void *mmap(void *a, size_t l, int prot, int flags, int fd, off_t off) {
  static void *(*real)(void *, size_t, int, int, int, off_t);
  if (!real) real = (void *(*)(void *, size_t, int, int, int, off_t))dlsym(RTLD_NEXT, "mmap");
  const char *pat = getenv("FAILMMAP");
  if (pat && *pat && fd >= 0) {
    char link[64], target[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, target, sizeof target - 1);
    if (n > 0) {
      target[n] = 0;
      if (strstr(target, pat)) { errno = ENOMEM; return MAP_FAILED; }
    }
  }
  return real(a, l, prot, flags, fd, off);
}
"""
with open(os.path.join(d, "shim.c"), "w") as f:
    f.write(SHIM)
shim = os.path.join(d, "failmmap.so")
p = subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", shim, os.path.join(d, "shim.c"), "-ldl"],
                   capture_output=True, text=True)
if p.returncode != 0:
    print(f"SKIP: cannot build the shim with {cc}: {p.stderr.strip()}")
    sys.exit(SKIP)

rng = np.random.default_rng(11)
# 2600 x 600 float32 = 6.2 MB: more than a 1 MB budget, so unmapped features are streamed in
# segments (mrmbench) and the L-BFGS rows need several ranks per group
N, D = 2600, 600
lab = rng.integers(0, 3, N)
mu = rng.normal(0, 0.5, (3, D))
X = (rng.normal(0, 1, (N, D)) + mu[lab]).astype(np.float32)
split = rng.choice(3, N, p=[0.7, 0.15, 0.15]).astype(np.uint8)
inp = os.path.join(d, "feats_in.h5")
with h5py.File(inp, "w") as f:
    f["probe/w/X"] = X
    f["probe/w/label"] = lab.astype(np.int32)
    f["probe/w/split"] = split
    f["probe/infer/X"] = rng.normal(0, 1, (300, D)).astype(np.float32)
tasks = {"w": {"classes": [[0], [1], [2]]}}
jobs = [
    {"name": "seg", "kind": "probe", "input": "feats_in.h5", "tasks": tasks, "lr_grid": [1e-2], "max_memory_mb": 1,
     "kmeans": False},
    {"name": "lb", "kind": "probe", "input": "feats_in.h5", "tasks": tasks, "mode": "lbfgs", "l2_grid": [1e-2],
     "max_memory_mb": 1, "kmeans": False},
    {"name": "inmem", "kind": "probe", "input": "feats_in.h5", "tasks": tasks, "lr_grid": [1e-2, 1e-3],
     "kmeans": {"k_per_class": 2, "iters": 10}},
]


def outputs(folder):
    res = {}
    for j in jobs:
        rep = load_report(os.path.join(d, folder, j["name"] + ".json"))
        with open(os.path.join(d, folder, j["name"] + ".h5"), "rb") as f:
            res[j["name"]] = (json.dumps(rep["result"], sort_keys=True), f.read())
    return res


jp = write_job(os.path.join(d, "plain.json"), jobs, output_dir="plain")
code, _, err = run(["run", jp, "--quiet"])
check(code == 0, f"plain process: exit {code} ({err})")
want = outputs("plain")

for failing in (1, 0):
    folder = f"mpmd_fail{failing}"
    jp = write_job(os.path.join(d, f"{folder}.json"), jobs, output_dir=folder)
    plain = [RMDIAG, "run", jp, "--quiet"]
    shimmed = ["env", "FAILMMAP=feats_in.h5", "LD_PRELOAD=" + shim] + plain
    apps = [plain, shimmed] if failing == 1 else [shimmed, plain]
    cmd = [MPIEXEC, "-n", "1"] + apps[0] + [":", "-n", "1"] + apps[1]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        _, err = proc.communicate(timeout=60)
        code = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        code, err = None, "timed out after 60 s (ranks waiting on each other)"
    check(code == 0, f"mmap failing on rank {failing}: exit {code} ({err.strip()})")
    if code != 0:
        continue
    got = outputs(folder)
    for j in jobs:
        check(got[j["name"]][0] == want[j["name"]][0], f"{j['name']}, mmap failing on rank {failing}: same result")
        check(got[j["name"]][1] == want[j["name"]][1],
              f"{j['name']}, mmap failing on rank {failing}: same output HDF5 bytes")
done()
