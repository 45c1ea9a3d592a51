"""Bit-for-bit determinism: the cm report's `result` and its output HDF5 file are byte-identical
for 1, 2, 3 and 4 ranks (oversubscribed) and for a plain process. The input has a pair count that
is not a multiple of the block size, string user ids, chunked + compressed float64 datasets."""
import os

from gen_cm import make_cm
from rdtest import *

d = scratch("cm_determinism")
rc, rr, flags, user, cov = make_cm(P=30011, R=7, U=900, seed=3, dtype="float64")
path = os.path.join(d, "in.h5")
with h5py.File(path, "w") as f:
    kw = dict(chunks=True, compression="gzip", compression_opts=1)
    f.create_dataset("cm/reward_chosen", data=rc, **kw)
    f.create_dataset("cm/reward_rejected", data=rr, **kw)
    f.create_dataset("cm/in_train", data=flags.astype(bool))  # h5py enum booleans
    f.create_dataset("cm/user", data=[f"user-{u}" for u in user], dtype=h5py.string_dtype("utf-8"))
    f.create_dataset("cm/covariates/length", data=cov["length"])
    f.create_dataset("cm/covariates/source", data=cov["source"].astype(np.int16))
job = {"name": "det", "kind": "cm", "input": "in.h5", "bootstrap": 333,
       "strata": [{"covariate": "length", "bins": 7}, {"covariate": "source", "categorical": True}]}
reports, h5s = {}, {}
for ranks in (0, 1, 2, 3, 4):
    out = f"out{ranks}"
    write_job(os.path.join(d, f"job{ranks}.json"), [job], output_dir=out, seed=5)
    code, _, err = run(["run", os.path.join(d, f"job{ranks}.json"), "--quiet", "--backend", "cpu"], ranks=ranks)
    check(code == 0, f"{ranks} ranks: exit {code} ({err})")
    rep = load_report(os.path.join(d, out, "det.json"))
    check(rep["rmdiag"]["ranks"] == max(ranks, 1), "envelope records the rank count")
    reports[ranks] = json.dumps(rep["result"], sort_keys=True)
    with open(os.path.join(d, out, "det.h5"), "rb") as f:
        h5s[ranks] = f.read()
for ranks in (1, 2, 3, 4):
    check(reports[ranks] == reports[0], f"result with {ranks} ranks identical to the plain process")
    check(h5s[ranks] == h5s[0], f"output HDF5 bytes with {ranks} ranks identical to the plain process")
check(json.loads(reports[0])["n_users"] == 900, "string user ids numbered")

# The same with contiguous float32 datasets, which workers map from the file instead of reading
# through HDF5; and with mapping turned off (RMDIAG_NO_MMAP=1): the same bytes either way.
path2 = os.path.join(d, "contig.h5")
write_cm(path2, rc.astype(np.float32), rr.astype(np.float32), flags, user, cov, dtype="float32")
job2 = dict(job, name="det2", input="contig.h5")
outs = {}
for ranks, env in ((0, None), (2, None), (3, None), (4, None), (2, {"RMDIAG_NO_MMAP": "1"})):
    key = f"c{ranks}{'n' if env else ''}"
    write_job(os.path.join(d, key + ".json"), [job2], output_dir="out" + key, seed=5)
    code, _, err = run(["run", os.path.join(d, key + ".json"), "--quiet"], ranks=ranks, env=env)
    check(code == 0, f"contiguous input, {ranks} ranks {env or ''}: exit {code} ({err})")
    rep = load_report(os.path.join(d, "out" + key, "det2.json"))
    with open(os.path.join(d, "out" + key, "det2.h5"), "rb") as f:
        outs[key] = (json.dumps(rep["result"], sort_keys=True), f.read())
for key in outs:
    check(outs[key] == outs["c0"], f"contiguous input: {key} identical to the plain process")
check(json.loads(reports[0])["tm"]["ci95"] is not None, "bootstrap ran")
done()
