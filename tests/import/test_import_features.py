"""`rmdiag import features`: .npy (format 1.0, 2.0 and 3.0; float32, float16, big-endian) and
.safetensors (F32, F16, BF16; several tensors) plus labels and splits from CSV or JSONL, written in
the probe layout, chunked and compressed; values round-trip exactly (bfloat16 widened exactly to
float32); the imported file runs as a probe job; bad files exit 2 naming the file, the line and what
was expected, and write nothing: among them shapes whose byte count overflows 64 bits, a .npy shape
with more than two dimensions, a .safetensors header with bytes after its JSON, and data offsets or
shapes that are not non-negative integers. A labels file may start with a UTF-8 byte order mark."""
import os
import struct

from rdtest import *

d = scratch("import_features")
rng = np.random.default_rng(17)
N, D = 57, 10


def npy(path, arr, version=None):
    with open(path, "wb") as f:
        np.lib.format.write_array(f, arr, version=version)
    return path


def safetensors(path, tensors, meta=True):
    """A .safetensors file written from its specification: u64 header length, JSON header, data."""
    header, blobs, pos = {}, [], 0
    if meta:
        header["__metadata__"] = {"format": "pt"}
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [pos, pos + len(raw)]}
        blobs.append(raw)
        pos += len(raw)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
    return path


def bf16_bits(x):
    """bfloat16 bits of float32 values (truncated mantissa), and the exact float32 they widen to."""
    b = (np.asarray(x, np.float32).view(np.uint32) >> 16).astype(np.uint16)
    return b, (b.astype(np.uint32) << 16).view(np.float32)


X32 = rng.normal(0, 3, (N, D)).astype(np.float32)
X32[0, :3] = [np.float32(1e-40), -0.0, np.float32(3.4e38)]       # subnormal, negative zero, near max
X16 = rng.normal(0, 3, (N, D)).astype(np.float16)
X16[1, :3] = [np.float16(6e-8), -0.0, np.float16(65504)]
bfb, Xbf = bf16_bits(rng.normal(0, 3, (N, D)))
XI = rng.normal(size=(9, D)).astype(np.float32)
lab = rng.integers(0, 4, N)
spl = rng.integers(0, 3, N)
names = np.array(["train", "validation", "test"])
with open(os.path.join(d, "labels.csv"), "w") as f:
    f.write('id,"label",note,split\n')
    for i in range(N):
        f.write(f'{i},{lab[i] if i != 5 else ""},"a, quoted note",{names[spl[i]] if i % 2 else spl[i]}\n')
with open(os.path.join(d, "labels.jsonl"), "w") as f:
    for i in range(N):
        f.write(json.dumps({"label": None if i == 7 else int(lab[i]), "split": int(spl[i]) if i % 3 else names[spl[i]],
                            "text": "x"}) + "\n")
exp_lab = lab.copy()
exp_lab_csv = exp_lab.copy()
exp_lab_csv[5] = -1
exp_lab_json = exp_lab.copy()
exp_lab_json[7] = -1

files = {
    "v1": npy(os.path.join(d, "v1.npy"), X32, (1, 0)),
    "v2": npy(os.path.join(d, "v2.npy"), X32, (2, 0)),
    "v3": npy(os.path.join(d, "v3.npy"), X32, (3, 0)),
    "f16": npy(os.path.join(d, "f16.npy"), X16),
    "be": npy(os.path.join(d, "be.npy"), X32.astype(">f4")),
    "st32": safetensors(os.path.join(d, "a.safetensors"), {"h": ("F32", (N, D), X32.tobytes())}),
    "st16": safetensors(os.path.join(d, "b.safetensors"), {"h": ("F16", (N, D), X16.tobytes())}, meta=False),
    "stbf": safetensors(os.path.join(d, "c.safetensors"), {"other": ("F32", (2, 2), np.zeros(4, np.float32).tobytes()),
                                                          "hidden": ("BF16", (N, D), bfb.tobytes())}),
    "inf": npy(os.path.join(d, "infer.npy"), XI),
}
out = os.path.join(d, "feat.h5")
args = ["import", "features", "--task", "v1", files["v1"], os.path.join(d, "labels.csv"),
        "--task", "v2", files["v2"], os.path.join(d, "labels.jsonl"),
        "--task", "v3", files["v3"], os.path.join(d, "labels.csv"),
        "--task", "f16", files["f16"], os.path.join(d, "labels.csv"),
        "--task", "be", files["be"], os.path.join(d, "labels.csv"),
        "--task", "st32", files["st32"], os.path.join(d, "labels.csv"),
        "--task", "st16", files["st16"], os.path.join(d, "labels.jsonl"),
        "--tensor", "hidden", "--task", "stbf", files["stbf"], os.path.join(d, "labels.csv"),
        "--infer", files["inf"], "-o", out]
code, so, err = run(args)
check(code == 0, f"import: exit {code} ({err})")
with h5py.File(out, "r") as f:
    for t, exp, lab_exp in (("v1", X32, exp_lab_csv), ("v2", X32, exp_lab_json), ("v3", X32, exp_lab_csv),
                            ("f16", X16, exp_lab_csv), ("be", X32, exp_lab_csv), ("st32", X32, exp_lab_csv),
                            ("st16", X16, exp_lab_json), ("stbf", Xbf, exp_lab_csv)):
        X = f[f"probe/{t}/X"]
        check(X.dtype == exp.dtype and X.shape == (N, D), f"{t}: dtype {X.dtype} shape {X.shape}")
        check(X[...].tobytes() == np.ascontiguousarray(exp).tobytes(), f"{t}: features round-trip bit for bit")
        check(X.chunks is not None and X.compression == "gzip" and X.shuffle, f"{t}: chunked and compressed")
        check(np.array_equal(f[f"probe/{t}/label"][...], lab_exp), f"{t}: labels (missing = -1)")
        check(np.array_equal(f[f"probe/{t}/split"][...], spl), f"{t}: splits (names and numbers)")
        check(f[f"probe/{t}/split"].dtype == np.uint8 and f[f"probe/{t}/label"].dtype == np.int32, f"{t}: label/split types")
    check(np.array_equal(f["probe/infer/X"][...], XI), "inference rows")
    check(np.float32(Xbf[0, 0]) == Xbf[0, 0] and f["probe/stbf/X"].dtype == np.float32, "bfloat16 widened to float32")

# several reward models in one file, then a probe job on the imported file (float16 and compressed)
out2 = os.path.join(d, "models.h5")
code, _, err = run(["import", "features", "--model", "rmA", "--task", "t", files["f16"], os.path.join(d, "labels.csv"),
                    "--model", "rmB", "--task", "t", files["st32"], os.path.join(d, "labels.jsonl"),
                    "--infer", files["inf"], "-o", out2])
check(code == 0, f"import of two models: exit {code} ({err})")
jp = write_job(os.path.join(d, "job.json"), [{"name": "p", "kind": "probe", "input": "models.h5", "models": ["rmA", "rmB"],
                                              "tasks": {"t": {"classes": [[0, 1], [2, 3]]}}, "lr_grid": [1e-2]}],
               output_dir="out")
code, _, err = run(["run", jp, "--quiet"], ranks=2)
check(code == 0, f"probe on imported features: exit {code} ({err})")
rep = load_report(os.path.join(d, "out", "p.json"))["result"]
check(rep["models"]["rmB"]["inference"]["n"] == 9 and rep["models"]["rmA"]["inference"]["n"] == 0, "per-model infer rows")
check(rep["models"]["rmA"]["inference"]["n_kept"] == 0 and rep["models"]["rmA"]["inference"]["kept_fraction"] is None,
      "no inference rows: n_kept 0, kept_fraction null")
check(rep["models"]["rmA"]["tasks"]["t"]["dropped"]["missing_label"] == 1, "the missing label is dropped and counted")


# ---- bad inputs ----------------------------------------------------------------------------------------------
def bad(name, extra_args, expect, labels=os.path.join(d, "labels.csv"), feature=None):
    o = os.path.join(d, f"bad_{name}.h5")
    a = ["import", "features"] + (["--task", "t", feature, labels] if feature else []) + extra_args + ["-o", o]
    code, _, err = run(a)
    check(code == 2, f"{name}: exit {code}, expected 2 ({err.strip()})")
    for e in expect:
        check(e in err, f"{name}: message should contain {e!r}: {err.strip()}")
    check(not os.path.exists(o) and not [x for x in os.listdir(d) if x.startswith(".bad_")], f"{name}: nothing written")


bad("fortran", [], ["Fortran order"], feature=npy(os.path.join(d, "fo.npy"), np.asfortranarray(X32)))
bad("one_dim", [], ["shape (57,)", "expected 2 dimensions"], feature=npy(os.path.join(d, "1d.npy"), X32[:, 0].copy()))
bad("int_dtype", [], ["dtype '<i4'", "expected float32"], feature=npy(os.path.join(d, "i4.npy"), lab.astype(np.int32).reshape(N, 1)))
with open(os.path.join(d, "trunc.npy"), "wb") as f:
    f.write(open(files["v1"], "rb").read()[:-7])
bad("truncated", [], ["trunc.npy", "expected"], feature=os.path.join(d, "trunc.npy"))
with open(os.path.join(d, "junk.npy"), "wb") as f:
    f.write(b"not an array at all")
bad("magic", [], ["not a .npy file"], feature=os.path.join(d, "junk.npy"))
bad("many_tensors", [], ["2 tensors", "--tensor"], feature=files["stbf"])
code, _, err = run(["import", "features", "--tensor", "nope", "--task", "t", files["stbf"], os.path.join(d, "labels.csv"),
                    "-o", os.path.join(d, "bad_nt.h5")])
check(code == 2 and 'no tensor "nope"' in err, f"unknown tensor: {code} {err}")
gap = safetensors(os.path.join(d, "gap.safetensors"), {"h": ("F32", (N, D), X32.tobytes())})
raw = open(gap, "rb").read()
with open(gap, "wb") as f:
    f.write(raw + b"\0\0\0\0")
bad("trailing_bytes", [], ["the tensors end at byte"], feature=gap)
wrong = safetensors(os.path.join(d, "wrong.safetensors"), {"h": ("F32", (N, D + 1), X32.tobytes())})
bad("offsets", [], ["dtype, shape and data_offsets do not agree"], feature=wrong)
bad("i64_tensor", [], ["dtype I64", "expected F32, F16 or BF16"],
    feature=safetensors(os.path.join(d, "i64.safetensors"), {"h": ("I64", (N, 1), lab.astype(np.int64).tobytes())}))
with open(os.path.join(d, "short.csv"), "w") as f:
    f.write("label,split\n" + "".join(f"{lab[i]},{spl[i]}\n" for i in range(N - 1)))
bad("row_count", [], ["56 label rows but", "has 57 feature rows"], labels=os.path.join(d, "short.csv"), feature=files["v1"])
with open(os.path.join(d, "badsplit.csv"), "w") as f:
    f.write("label,split\n" + "".join(f"{lab[i]},{'holdout' if i == 30 else spl[i]}\n" for i in range(N)))
bad("split_value", [], ["badsplit.csv: row 32: split = \"holdout\"", "expected 0/train"], labels=os.path.join(d, "badsplit.csv"),
    feature=files["v1"])
with open(os.path.join(d, "nolabel.csv"), "w") as f:
    f.write("y,split\n" + "".join(f"{lab[i]},{spl[i]}\n" for i in range(N)))
bad("no_label_column", [], ['expected columns "label" and "split"'], labels=os.path.join(d, "nolabel.csv"), feature=files["v1"])
with open(os.path.join(d, "bad.jsonl"), "w") as f:
    f.write("".join(json.dumps({"label": 1.5 if i == 3 else int(lab[i]), "split": int(spl[i])}) + "\n" for i in range(N)))
bad("jsonl_label", [], ["bad.jsonl: line 4: label = \"?\"", "expected an integer"], labels=os.path.join(d, "bad.jsonl"),
    feature=files["v1"])
bad("task_twice", ["--task", "t", files["v1"], os.path.join(d, "labels.csv")], ['task "t" given twice'], feature=files["v1"])
bad("nothing", [], ["nothing to import"])


# ---- malformed headers that must not be read as something else ----
def npy_header(path, header, data=b""):
    """A .npy 1.0 file with a hand-written header dict (padded to 64 bytes) and `data`."""
    h = header.encode("latin1")
    h += b" " * (-(10 + len(h) + 1) % 64) + b"\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h + data)
    return path


def safetensors_raw(path, header, data):
    """A .safetensors file with the header bytes given as they are (spaces appended to 8 bytes)."""
    header += b" " * (-len(header) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header + data)
    return path


with open(os.path.join(d, "labels3.csv"), "w") as f:
    f.write("label,split\n0,0\n1,1\n0,2\n")
with open(os.path.join(d, "labels0.csv"), "w") as f:
    f.write("label,split\n")
lab3 = os.path.join(d, "labels3.csv")
# N*d*4 = 2^62 * 4 * 4 = 2^66 wraps to 0 in 64 bits: with no data bytes the wrapped size would match
bad("npy_overflow", [], ["huge.npy: shape (4611686018427387904, 4) of 4-byte values is larger than any file"],
    feature=npy_header(os.path.join(d, "huge.npy"), "{'descr': '<f4', 'fortran_order': False, "
                                                     "'shape': (4611686018427387904, 4), }"))
# a 3-dimensional array of 3 x 4 x 1 has the bytes of (3, 4): the whole shape must be read
bad("npy_3d", [], ["three.npy: shape (3, 4, 1)", "expected 2 dimensions"], labels=lab3,
    feature=npy(os.path.join(d, "three.npy"), np.zeros((3, 4, 1), np.float32)))
bad("npy_shape_junk", [], ["junkshape.npy: shape (3, 4 x)", "expected 2 dimensions"], labels=lab3,
    feature=npy_header(os.path.join(d, "junkshape.npy"), "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4 x), }",
                       bytes(48)))
# still accepted: a trailing comma
ok3 = npy_header(os.path.join(d, "comma.npy"), "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4,), }",
                 np.arange(12, dtype="<f4").tobytes())
code, _, err = run(["import", "features", "--task", "t", ok3, lab3, "-o", os.path.join(d, "comma.h5")])
check(code == 0, f"shape (3, 4,) accepted: exit {code} ({err.strip()})")
if code == 0:
    with h5py.File(os.path.join(d, "comma.h5"), "r") as f:
        check(np.array_equal(f["probe/t/X"][...], np.arange(12, dtype=np.float32).reshape(3, 4)), "shape (3, 4,) read")
X3 = np.arange(12, dtype="<f4").tobytes()
hdr = b'{"h": {"dtype": "F32", "shape": [3, 4], "data_offsets": [0, 48]}}'
bad("st_after_json", [], ["after.safetensors: the .safetensors header has bytes after its JSON object "
                          f"(byte {8 + len(hdr)})",
                          "expected only spaces"], labels=lab3,
    feature=safetensors_raw(os.path.join(d, "after.safetensors"), hdr + b"xyz", X3))
bad("st_offsets_null", [], ['nulloff.safetensors: tensor "h": data_offsets[0] is not a non-negative integer'],
    labels=lab3, feature=safetensors_raw(os.path.join(d, "nulloff.safetensors"),
                                         b'{"h": {"dtype": "F32", "shape": [3, 4], "data_offsets": [null, 48]}}', X3))
bad("st_offsets_frac", [], ['fracoff.safetensors: tensor "h": data_offsets[1] is not a non-negative integer'],
    labels=lab3, feature=safetensors_raw(os.path.join(d, "fracoff.safetensors"),
                                         b'{"h": {"dtype": "F32", "shape": [3, 4], "data_offsets": [0, 48.5]}}', X3))
bad("st_shape_frac", [], ['fracshape.safetensors: tensor "h": shape[0] is not a non-negative integer'],
    labels=lab3, feature=safetensors_raw(os.path.join(d, "fracshape.safetensors"),
                                         b'{"h": {"dtype": "F32", "shape": [3.5, 4], "data_offsets": [0, 56]}}',
                                         bytes(56)))
bad("st_shape_huge", [], ['hugeshape.safetensors: tensor "h": shape[1] is not a non-negative integer (at most 2^53)'],
    labels=os.path.join(d, "labels0.csv"),
    feature=safetensors_raw(os.path.join(d, "hugeshape.safetensors"),
                            b'{"h": {"dtype": "F32", "shape": [0, 1152921504606846976], "data_offsets": [0, 0]}}', b""))

# a UTF-8 byte order mark before the header (as spreadsheet programs write) is not part of "label"
with open(os.path.join(d, "bom.csv"), "w", encoding="utf-8-sig") as f:
    f.write("label,split\n" + "".join(f"{lab[i]},{spl[i]}\n" for i in range(N)))
with open(os.path.join(d, "bom.jsonl"), "w", encoding="utf-8-sig") as f:
    f.write("".join(json.dumps({"label": int(lab[i]), "split": int(spl[i])}) + "\n" for i in range(N)))
for name in ("bom.csv", "bom.jsonl"):
    with open(os.path.join(d, name), "rb") as f:
        check(f.read(3) == b"\xef\xbb\xbf", f"{name} starts with a byte order mark")
    o = os.path.join(d, name + ".h5")
    code, _, err = run(["import", "features", "--task", "t", files["v1"], os.path.join(d, name), "-o", o])
    check(code == 0, f"{name}: exit {code} ({err.strip()})")
    if code == 0:
        with h5py.File(o, "r") as f:
            check(np.array_equal(f["probe/t/label"][...], lab) and np.array_equal(f["probe/t/split"][...], spl),
                  f"{name}: labels and splits read")

# a JSONL line is one JSON document: a second object (or junk) after it is an error, not ignored
with open(os.path.join(d, "two.jsonl"), "w") as f:
    f.write("".join(json.dumps({"label": int(lab[i]), "split": int(spl[i])}) + ("{\"label\": 1, \"split\": 0}" if i == 2 else "")
                    + "\n" for i in range(N)))
with open(os.path.join(d, "dupkey.jsonl"), "w") as f:
    f.write("".join(('{"label": 0, "label": 1, "split": 0}' if i == 4 else json.dumps({"label": int(lab[i]), "split": int(spl[i])}))
                    + "\n" for i in range(N)))
bad("jsonl_duplicate_key", [], ['dupkey.jsonl: line 5: key "label" appears twice in one object'],
    labels=os.path.join(d, "dupkey.jsonl"), feature=files["v1"])
bad("jsonl_two_objects", [], ["two.jsonl: line 3", "unexpected text after the end"], labels=os.path.join(d, "two.jsonl"),
    feature=files["v1"])
with open(os.path.join(d, "nul.csv"), "wb") as f:
    f.write(b"label,split\n" + b"".join((b"0\0" if i == 1 else str(lab[i]).encode()) + b"," + str(spl[i]).encode() + b"\n"
                                        for i in range(N)))
bad("csv_nul", [], ["nul.csv: row 3, field 1: a NUL byte"], labels=os.path.join(d, "nul.csv"), feature=files["v1"])
with open(os.path.join(d, "big.csv"), "w") as f:
    f.write("label,split\n" + "".join(f"{99999999999 if i == 4 else lab[i]},{spl[i]}\n" for i in range(N)))
bad("label_32_bits", [], ["big.csv: row 6: label 99999999999 does not fit 32 bits"], labels=os.path.join(d, "big.csv"),
    feature=files["v1"])
# a model named like a task given without a model would put its tasks inside that task's group
bad("model_task_clash", ["--task", "x", files["v1"], os.path.join(d, "labels.csv"), "--model", "x", "--task", "X",
                         files["v1"], os.path.join(d, "labels.csv")],
    ['--model "x" has the name of a task given without a model'])

# repeats among many: 20,000 tasks with the repeat last, a clash named at the first model that clashes, and a
# safetensors header of 40,000 tensors whose last name repeats (the checks sort: a pairwise scan took seconds)
lab_v = os.path.join(d, "labels.csv")
for short, full in (("f.npy", files["v1"]), ("l.csv", lab_v)):
    if not os.path.exists(os.path.join(d, short)):
        os.symlink(full, os.path.join(d, short))
many = [a for k in range(20000) for a in ("--task", f"t{k}", "f.npy", "l.csv")]
code, _, err = run(["import", "features"] + many + ["--task", "t7", "f.npy", "l.csv", "-o", "many.h5"], cwd=d)
check(code == 2 and 'task "t7" given twice' in err and not os.path.exists(os.path.join(d, "many.h5")),
      f"20,000 tasks, the last repeating one: {code} {err.strip()[-300:]}")
bad("many_infer_repeat", ["--model", "m", "--infer", files["v1"], "--infer", files["v1"]], ["--infer given twice for model m"])
bad("model_task_clash_order", ["--task", "b", files["v1"], lab_v, "--task", "a", files["v1"], lab_v,
                               "--model", "b", "--task", "u", files["v1"], lab_v, "--model", "a", "--task", "u",
                               files["v1"], lab_v], ['--model "b" has the name of a task given without a model'])
hdr = "{" + ",".join(f'"w{k}": {{"dtype": "F32", "shape": [0], "data_offsets": [0, 0]}}' for k in range(40000))
hdr += ', "w123": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]}}'
bad("safetensors_many_repeat", [], ['tensor "w123" appears twice'],
    feature=safetensors_raw(os.path.join(d, "many.safetensors"), hdr.encode(), b""))

# an empty tensor at the same offset as the features: valid whatever the order of the header's keys
lab6 = os.path.join(d, "labels6.csv")
with open(lab6, "w") as f:
    f.write("label,split\n" + "".join(f"{i % 2},{i % 3}\n" for i in range(6)))
X6 = np.arange(18, dtype="<f4").reshape(6, 3)
for order in ("E_first", "X_first"):
    ent = {"E": {"dtype": "F32", "shape": [0, 3], "data_offsets": [0, 0]},
           "X": {"dtype": "F32", "shape": [6, 3], "data_offsets": [0, 72]}}
    keys = ["E", "X"] if order == "E_first" else ["X", "E"]
    hdr = ("{" + ", ".join(f'"{k}": {json.dumps(ent[k])}' for k in keys) + "}").encode()
    fe = safetensors_raw(os.path.join(d, f"empty_{order}.safetensors"), hdr, X6.tobytes())
    o = os.path.join(d, f"empty_{order}.h5")
    code, _, err = run(["import", "features", "--tensor", "X", "--task", "t", fe, lab6, "-o", o])
    check(code == 0, f"empty tensor, {order}: exit {code} ({err.strip()})")
    if code == 0:
        with h5py.File(o, "r") as f:
            check(np.array_equal(f["probe/t/X"][...], X6), f"empty tensor, {order}: the features read")
done()
