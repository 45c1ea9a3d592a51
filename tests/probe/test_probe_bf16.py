"""2-byte float features by their bit layout: a bfloat16 dataset (an HDF5 custom float: sign 15,
exponent 7..14 with bias 127, mantissa 0..6), little- or big-endian, is widened exactly and gives the
same report and datasets as the same values stored as float32; IEEE float16 stays float16; any other
2-byte float layout is a bad input (exit 2, naming the dataset, nothing written)."""
import os

from rdtest import *

d = scratch("probe_bf16")
rng = np.random.default_rng(21)
N, D = 900, 19


def custom_float(fields, ebias, big=False):
    t = h5py.h5t.IEEE_F32LE.copy()
    t.set_fields(*fields)
    t.set_size(2)
    t.set_ebias(ebias)
    t.set_precision(16)
    if big:
        t.set_order(h5py.h5t.ORDER_BE)
    return t


def write_raw16(g, name, bits, tid):
    """Dataset `name` of type tid holding the 16-bit patterns `bits` (written as stored)."""
    space = h5py.h5s.create_simple(bits.shape)
    ds = h5py.h5d.create(g.id, name.encode(), tid, space)
    mt = tid.copy()
    mt.set_order(h5py.h5t.ORDER_LE)
    ds.write(h5py.h5s.ALL, h5py.h5s.ALL, np.ascontiguousarray(bits.astype("<u2")), mtype=mt)


lab = rng.integers(0, 3, N).astype(np.int32)
mu = rng.normal(0, 0.8, (3, D))
X = (rng.normal(0, 1, (N, D)) * 3.0 + mu[lab]).astype(np.float32)
bits = (X.view(np.uint32) >> 16).astype(np.uint16)           # bfloat16 by truncation
Xbf = (bits.astype(np.uint32) << 16).view(np.float32)        # its exact float32 value
check(not np.array_equal(Xbf, X), "the bfloat16 values differ from the float32 ones (the test has teeth)")
split = rng.choice(3, N, p=[0.7, 0.15, 0.15]).astype(np.uint8)
inf_bits = (rng.normal(0, 1, (120, D)).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
inf_f32 = (inf_bits.astype(np.uint32) << 16).view(np.float32)


def write_input(path, kind):
    with h5py.File(path, "w") as f:
        g = f.require_group("probe/t")
        gi = f.require_group("probe/infer")
        if kind == "f32":
            g["X"] = Xbf
            gi["X"] = inf_f32
        elif kind == "bf16le":
            write_raw16(g, "X", bits, custom_float((15, 7, 8, 0, 7), 127))
            write_raw16(gi, "X", inf_bits, custom_float((15, 7, 8, 0, 7), 127))
        elif kind == "bf16be":
            write_raw16(g, "X", bits, custom_float((15, 7, 8, 0, 7), 127, big=True))
            write_raw16(gi, "X", inf_bits, custom_float((15, 7, 8, 0, 7), 127, big=True))
        elif kind == "odd":
            g["X"] = Xbf
            gi["X"] = inf_f32
            del g["X"]
            write_raw16(g, "X", bits, custom_float((15, 9, 6, 0, 9), 31))      # a 6-bit exponent: neither
        g["label"] = lab
        g["split"] = split
    return path


job = {"name": "p", "kind": "probe", "input": "in.h5", "tasks": {"t": {"classes": [[0], [1], [2]]}},
       "lr_grid": [1e-2, 1e-3], "kmeans": {"k_per_class": 2, "iters": 10}}
res = {}
for kind in ("f32", "bf16le", "bf16be"):
    cd = os.path.join(d, kind)
    os.makedirs(cd)
    write_input(os.path.join(cd, "in.h5"), kind)
    if kind != "f32":
        with h5py.File(os.path.join(cd, "in.h5"), "r") as f:
            check(f["probe/t/X"].id.get_type().get_size() == 2, f"{kind}: stored in 2 bytes")
            # HDF5's own conversion of the custom type agrees with the values meant
            check(np.array_equal(f["probe/t/X"][...], Xbf), f"{kind}: HDF5 reads the bfloat16 values")
    jp = write_job(os.path.join(cd, "job.json"), [job], output_dir="out")
    for ranks in (0, 2):
        code, _, err = run(["run", jp, "--quiet"], ranks=ranks)
        check(code == 0, f"{kind}, {ranks} ranks: exit {code} ({err})")
        rep = load_report(os.path.join(cd, "out", "p.json"))
        with h5py.File(os.path.join(cd, "out", "p.h5"), "r") as f:
            dsets = {}
            f.visititems(lambda name, o: dsets.__setitem__(name, o[...]) if isinstance(o, h5py.Dataset) else None)
        res[kind, ranks] = (json.dumps(rep["result"], sort_keys=True), dsets)
ref_json, ref_ds = res["f32", 0]
check(len(ref_ds) >= 4, f"reference datasets present: {sorted(ref_ds)}")
for key, (js, ds) in res.items():
    check(js == ref_json, f"{key}: result identical to the same values stored as float32")
    check(sorted(ds) == sorted(ref_ds), f"{key}: same datasets")
    for name in ref_ds:
        check(name in ds and np.array_equal(ds[name], ref_ds[name]), f"{key}: {name} identical to float32's")

# any other 2-byte float layout is refused, naming the dataset
cd = os.path.join(d, "odd")
os.makedirs(cd)
write_input(os.path.join(cd, "in.h5"), "odd")
jp = write_job(os.path.join(cd, "job.json"), [job], output_dir="out")
for ranks in (0, 2):
    code, _, err = run(["run", jp], ranks=ranks)
    check(code == 2, f"odd 2-byte float, {ranks} ranks: exit {code}, expected 2 ({err.strip()})")
    lines = [l for l in err.splitlines() if l.startswith("rmdiag: error:")]
    check(len(lines) == 1, f"odd 2-byte float, {ranks} ranks: one error line: {err!r}")
    for e in ("in.h5", "/probe/t/X", "exponent bits 9..14 (bias 31)", "expected IEEE float16", "bfloat16"):
        check(e in err, f"odd 2-byte float: message names {e!r}: {err.strip()}")
    check(outputs_in(os.path.join(cd, "out")) == [], f"odd 2-byte float, {ranks} ranks: nothing written")
code, _, err = run(["validate", jp])
check(code == 2 and "/probe/t/X" in err, f"validate refuses the odd 2-byte float too: exit {code} ({err.strip()})")
done()
