"""Features stored in chunks of whole rows, unfiltered (as a program appending rows batch by batch
writes them), are mapped from the file chunk by chunk instead of read through HDF5, as contiguous
features are. Chunks that split rows, compressed chunks and RMDIAG_NO_MMAP=1 keep the read path. Which path a dataset takes changes how rows are reached, never
the bytes: the same job on the chunked file (plain process and 3 ranks), on the same values stored
contiguous, and with mapping turned off gives the same result and the same output datasets, under a
memory budget small enough that read rows are streamed in segments."""
import os

from rdtest import *

d = scratch("probe_chunk_map")
rng = np.random.default_rng(21)
N, D = 2600, 600  # 6.2 MB of float32 per task: more than the 1 MB budget below


def task_data(C=3):
    lab = rng.integers(0, C, N).astype(np.int32)
    X = (rng.normal(0, 1, (N, D)) + rng.normal(0, 0.8, (C, D))[lab]).astype(np.float32)
    return X, lab, rng.choice(3, N, p=[0.7, 0.15, 0.15]).astype(np.uint8)


data = {t: task_data() for t in ("t", "u", "v")}
infer = rng.normal(0, 1.1, (300, D)).astype(np.float32)

for name, chunked in (("chunk.h5", True), ("contig.h5", False)):
    with h5py.File(os.path.join(d, name), "w") as f:
        for t, (X, lab, split) in data.items():
            if not chunked:
                f[f"probe/{t}/X"] = X
            elif t == "t":    # whole rows, 64 a chunk: mapped
                f.create_dataset("probe/t/X", data=X, chunks=(64, D))
            elif t == "u":    # chunks that split rows: read
                f.create_dataset("probe/u/X", data=X, chunks=(50, 100))
            else:             # whole rows, compressed: read
                f.create_dataset("probe/v/X", data=X, chunks=(64, D), compression="gzip", compression_opts=1)
            f[f"probe/{t}/label"] = lab
            f[f"probe/{t}/split"] = split
        f["probe/infer/X"] = infer

job = {"name": "layout", "kind": "probe", "tasks": {t: {"classes": [[0], [1], [2]]} for t in data},
       "lr_grid": [1e-2, 1e-3], "max_memory_mb": 1, "kmeans": {"k_per_class": 2}}


def outputs(folder):
    rep = load_report(os.path.join(d, folder, "layout.json"))
    got = {}
    with h5py.File(os.path.join(d, folder, "layout.h5"), "r") as f:
        f.visititems(lambda k, v: got.__setitem__(k, v[...].tobytes()) if isinstance(v, h5py.Dataset) else None)
    return json.dumps(rep["result"], sort_keys=True), got


def run_all(job, cases):
    """Runs `job` on each (label, input, ranks, env, "k of n" datasets mapped); the outputs by label."""
    got = {}
    for label, inp, ranks, env, mapped in cases:
        folder = "out_" + "".join(c for c in label if c.isalnum())
        jp = write_job(os.path.join(d, folder + ".json"), [dict(job, input=inp)], output_dir=folder, seed=4)
        code, _, err = run(["run", jp, "--quiet"], ranks=ranks, env=dict(env, RMDIAG_TIMING="1"))
        check(code == 0, f"{label}: exit {code} ({err[-300:]})")
        check(f"features: {mapped} mapped" in err, f"{label}: {mapped} feature datasets mapped "
              f"({[l for l in err.splitlines() if 'features:' in l]})")
        if code == 0:
            got[label] = outputs(folder)
    return got


runs = run_all(job, (("chunked", "chunk.h5", 0, {}, "2 of 4"), ("chunked, 3 ranks", "chunk.h5", 3, {}, "2 of 4"),
                     ("contiguous", "contig.h5", 0, {}, "4 of 4"),
                     ("chunked, RMDIAG_NO_MMAP=1", "chunk.h5", 0, {"RMDIAG_NO_MMAP": "1"}, "0 of 4")))

ref = runs.get("chunked")
for label, got in runs.items():
    if label == "chunked":
        continue
    check(got[0] == ref[0], f"{label}: the result is the chunked file's, mapped")
    check(got[1] == ref[1], f"{label}: every output dataset is the chunked file's, byte for byte")
check(len(ref[1]) > 5 if ref else False, f"the output has its datasets ({sorted(ref[1]) if ref else None})")

# Many small chunks: HDF5 1.10 finds a chunk's address by walking the chunk index from its start, so n
# chunks cost about n^2/2 steps; the ranks share the walk, and a dataset whose share passes about
# 67 million steps (a second) is read through HDF5 instead. 12,000 one-row chunks: 72 million steps on
# one rank (read), 36 and 24 million a rank on two and three (mapped, the offsets gathered from both
# or all three); the same bytes every way, and the same as the values stored contiguous.
N2, D2 = 12000, 8
lab2 = rng.integers(0, 2, N2).astype(np.int32)
X2 = (rng.normal(0, 1, (N2, D2)) + rng.normal(0, 1, (2, D2))[lab2]).astype(np.float32)
split2 = rng.choice(3, N2, p=[0.8, 0.1, 0.1]).astype(np.uint8)
for name, chunks in (("many.h5", (1, D2)), ("many_contig.h5", None)):
    with h5py.File(os.path.join(d, name), "w") as f:
        f.create_dataset("probe/w/X", data=X2, chunks=chunks)
        f["probe/w/label"] = lab2
        f["probe/w/split"] = split2
job2 = {"name": "layout", "kind": "probe", "tasks": {"w": {"classes": [[0], [1]]}}, "lr_grid": [1e-2]}
runs2 = run_all(job2, (("many chunks", "many.h5", 0, {}, "0 of 1"), ("many chunks, 2 ranks", "many.h5", 2, {}, "1 of 1"),
                       ("many chunks, 3 ranks", "many.h5", 3, {}, "1 of 1"),
                       ("many chunks, contiguous", "many_contig.h5", 0, {}, "1 of 1")))
ref2 = runs2.get("many chunks")
for label, got in runs2.items():
    check(ref2 is not None and got == ref2, f"{label}: the report and every output dataset are the read file's")
check(len(runs2) == 4, f"all four runs finished ({sorted(runs2)})")
done()
