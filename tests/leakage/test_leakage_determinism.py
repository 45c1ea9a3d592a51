"""Bit-for-bit determinism of the leakage report: `result` and the output HDF5 bytes are identical for a
plain process and 1, 2, 3, 4 ranks (oversubscribed), and for every instruction set of the draw generator
(AVX-512, AVX2, scalar): the bootstrap replicates and factor-shuffle draws are a function of (seed, job,
purpose, replicate, draw) only. The input has shuffled rows, chunked + compressed datasets, a fictional
series, months without truth and every optional group. Up to 4 ranks the bootstrap and null tasks are
whole cells (at least 8 per rank) reduced on their rank; on 8 ranks they are chunks cut across cells,
whose replicates rank 0 reduces: the same numbers either way."""
import os

from leakdata import gen_panel
from rdtest import *

d = scratch("leak_determinism")
gen_panel(os.path.join(d, "in.h5"), seed=11)
job = {"name": "det", "kind": "leakage", "input": "in.h5", "bootstrap": 301, "null_permutations": 257,
       "family": ["S0", "S1", "S2", "S3", "S4"], "holdout_from": 199801, "signal_series": "S0"}
outs = {}
for key, ranks, env in (("p", 0, None), ("1", 1, None), ("2", 2, None), ("3", 3, None), ("4", 4, None),
                        ("8", 8, None), ("2-avx2", 2, {"RMDIAG_RNG_ISA": "avx2"}),
                        ("1-scalar", 1, {"RMDIAG_RNG_ISA": "scalar"})):
    write_job(os.path.join(d, f"job{key}.json"), [job], output_dir=f"out{key}", seed=7)
    code, _, err = run(["run", os.path.join(d, f"job{key}.json"), "--quiet", "--backend", "cpu"], ranks=ranks, env=env)
    check(code == 0, f"{key}: exit {code} ({err})")
    rep = load_report(os.path.join(d, f"out{key}", "det.json"))
    with open(os.path.join(d, f"out{key}", "det.h5"), "rb") as f:
        outs[key] = (json.dumps(rep["result"], sort_keys=True), f.read())
res = json.loads(outs["p"][0])
for key in outs:
    check(outs[key][0] == outs["p"][0], f"{key}: result identical to the plain process")
    check(outs[key][1] == outs["p"][1], f"{key}: output HDF5 bytes identical to the plain process")
check(len(res["cells"]) == 5 * 5 * 2, "cells of the real series")
boot_cells = sum(1 for c in res["cells"] if c["n_scored"] >= 1)
check(32 <= boot_cells < 64, f"{boot_cells} cells with scored rows: whole cells per task up to 4 ranks, chunks on 8")
check(all(c["r_ci95"] is not None and c["null_within"] is not None for c in res["cells"] if c["n_scored"] >= 3),
      "bootstrap and null ran")
check(all(k in res for k in ("fictional", "holdout", "ranking", "residualisation", "defense")), "every control present")
# a different job seed changes the draws (and only the draws)
write_job(os.path.join(d, "jobs8.json"), [job], output_dir="outs8", seed=8)
code, _, err = run(["run", os.path.join(d, "jobs8.json"), "--quiet"], ranks=2)
r8 = load_report(os.path.join(d, "outs8", "det.json"))["result"]
check(r8["cells"][0]["r_ci95"] != res["cells"][0]["r_ci95"] and r8["cells"][0]["r"] == res["cells"][0]["r"],
      "seed 8: other intervals, same point estimates")
done()
