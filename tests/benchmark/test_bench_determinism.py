"""Bit-for-bit determinism of the benchmark report: `result` and the output HDF5 bytes are identical
for a plain process and 1, 2, 3 and 4 ranks (oversubscribed). The input has more items than one
item block (9020 items, blocks of 4096), so ranks split rows of the models x item-block tiles mid-row; a Ties
subset with prompts present only as ref or only as tied; bootstrap replicates and all paired
comparisons. The same scores stored as contiguous float32 (mapped from the file), as chunked
compressed float64 (read through HDF5) and with mapping turned off give the same bytes too; so do 17
replicates on 4 ranks, where some ranks take no block of replicates."""
import os

from benchutil import *
from rdtest import *

d = scratch("bench_determinism")
rng = np.random.default_rng(5)
M = 7
sizes = {"Factuality": 2400, "Precise IF": 1600, "Math": 1500, "Safety": 1800, "Focus": 1100}
per_item = []
for s, n in sizes.items():
    for _ in range(n):
        per_item.append((V2_SUBSETS.index(s), 1, 4, None))
ids = [str(i) for i in range(len(per_item))]
for p in range(320):                       # prompts 0..299 both rows, 300..309 ref only, 310..319 tied only
    if p < 300 or p >= 310:
        k = int(rng.integers(2, 6))
        per_item.append((5, k, k + int(rng.integers(2, 9)), None))
        ids.append(f"tied:{p}")
    if p < 310:
        per_item.append((5, 1, int(rng.integers(3, 10)), None))
        ids.append(f"ref:{p}")
order = rng.permutation(len(per_item))     # items not grouped by subset
per_item = [per_item[i] for i in order]
ids = [ids[i] for i in order]
isub = [x[0] for x in per_item]
nc = [x[1] for x in per_item]
off = np.concatenate([[0], np.cumsum([x[2] for x in per_item])])
C = int(off[-1])
scores = np.round(rng.normal(0, 1, (M, C)) * 4) / 4          # multiples of 1/4: exact in float32, many ties
pref = np.concatenate([np.arange(x[2]) < x[1] for x in per_item])
scores[:, pref] += np.round(rng.uniform(0, 1.5, (M, 1)) * 4) / 4
models = [f"m{k}" for k in range(M)]
write_bench(os.path.join(d, "f32.h5"), models, V2_SUBSETS, isub, off, nc, scores, item_id=ids, dtype="float32")
write_bench(os.path.join(d, "f64z.h5"), models, V2_SUBSETS, isub, off, nc, scores, item_id=ids, chunked=True)
check(len(per_item) == 9020 and len(per_item) > 2 * 4096, f"{len(per_item)} items, more than two blocks")

job = {"kind": "benchmark", "scheme": "rewardbench-v2", "bootstrap": 150, "compare": "all"}
outs = {}
for inp in ("f32", "f64z"):
    for ranks, env in ((0, None), (1, None), (2, None), (3, None), (4, None), (2, {"RMDIAG_NO_MMAP": "1"})):
        if inp == "f64z" and ranks in (1, 3):
            continue
        key = f"{inp}-{ranks}{'-nomap' if env else ''}"
        write_job(os.path.join(d, key + ".json"), [dict(job, name="det", input=inp + ".h5")], output_dir="o" + key,
                  seed=9)
        code, _, err = run(["run", os.path.join(d, key + ".json"), "--quiet", "--backend", "cpu"], ranks=ranks, env=env)
        check(code == 0, f"{key}: exit {code} ({err.strip()})")
        rep = load_report(os.path.join(d, "o" + key, "det.json"))
        check(rep["rmdiag"]["ranks"] == max(ranks, 1), f"{key}: envelope records the rank count")
        with open(os.path.join(d, "o" + key, "det.h5"), "rb") as f:
            outs[key] = (json.dumps(rep["result"], sort_keys=True), f.read())
ref = outs["f32-0"]
for key, v in outs.items():
    check(v[0] == ref[0], f"{key}: result identical to the plain process on float32")
    # the file records the spec hash, which covers the input file: bytes compare per input
    check(v[1] == outs[key.split("-")[0] + "-0"][1], f"{key}: output HDF5 bytes identical to the plain process")
cr = {}
for key in ("f32-0", "f64z-0"):
    with h5py.File(os.path.join(d, "o" + key, "det.h5")) as f:
        cr[key] = f["bench/item_credit"][...]
check(np.array_equal(cr["f32-0"], cr["f64z-0"]), "float32 mapped and float64 compressed inputs: the same credits")
# replicates are handed out in blocks of 16: with 17 of them on 4 ranks two ranks take none and one takes
# a block of 1; the rank 0 that starts late with the report takes none or one
few = {}
for ranks in (0, 4):
    key = f"few-{ranks}"
    write_job(os.path.join(d, key + ".json"), [dict(job, name="det", input="f32.h5", bootstrap=17)],
              output_dir="o" + key, seed=9)
    code, _, err = run(["run", os.path.join(d, key + ".json"), "--quiet", "--backend", "cpu"], ranks=ranks)
    check(code == 0, f"{key}: exit {code} ({err.strip()})")
    with open(os.path.join(d, "o" + key, "det.h5"), "rb") as f:
        few[ranks] = (json.dumps(load_report(os.path.join(d, "o" + key, "det.json"))["result"], sort_keys=True), f.read())
check(few[4] == few[0], "17 replicates on 4 ranks (ranks without a block): report and HDF5 identical to one process")
check(json.loads(few[0][0])["bootstrap"]["resamples"] == 17, "17 replicates")
r = json.loads(ref[0])
check(r["models"][0]["subsets"]["Ties"]["composite"]["n_prompts_both"] == 300, "Ties: 300 prompts with both rows")
check(r["models"][0]["score_ci95"] is not None and len(r["comparisons"]) == 21, "bootstrap and comparisons ran")
done()
