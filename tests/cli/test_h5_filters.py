"""Compressed inputs as h5py users write them: gzip (with shuffle and fletcher32) and lzf (h5py's
own), and the plugin filters LZ4, Bitshuffle, Blosc and BZip2 (Debian's plugins, which
scripts/setup.sh installs; parts whose plugin is missing are skipped with a message). Each
compressed cm and probe input gives a result identical to the uncompressed input's, on 1 and 3
ranks, without HDF5_PLUGIN_PATH set (rmdiag finds Debian's plugin folders itself). A filter no
plugin provides, or one the user's HDF5_PLUGIN_PATH hides, is exit 2 naming the file, the dataset,
the filter and what to do, in validate and in run."""
import os
import subprocess
import sys

# rmdiag must find the plugins without help: the variable is set only for the writer below
PLUGINS_SERIAL = "/usr/lib/x86_64-linux-gnu/hdf5/serial/plugins"
WRITER = os.environ.pop("HDF5_PLUGIN_PATH", None)

from rdtest import *  # noqa: E402

N_CM, R_CM = 3000, 4
N_PR, D_PR = 600, 16
# name: (h5py keyword arguments, filter id or None when h5py itself provides it)
VARIANTS = {
    "none": ({}, None),
    "gzip": ({"compression": "gzip", "shuffle": True, "fletcher32": True}, None),
    "lzf": ({"compression": "lzf"}, None),
    "lz4": ({"compression": 32004, "compression_opts": (0,)}, 32004),
    "bitshuffle": ({"compression": 32008, "compression_opts": (0, 2)}, 32008),          # with LZ4 inside
    "blosc": ({"compression": 32001, "compression_opts": (0, 0, 0, 0, 5, 1, 1)}, 32001),  # lz4, byte shuffle
    "blosc-zstd": ({"compression": 32001, "compression_opts": (0, 0, 0, 0, 5, 2, 5)}, 32001),
    "bzip2": ({"compression": 307, "compression_opts": (9,)}, 307),
}


def cm_data():
    rng = np.random.default_rng(11)
    users = rng.integers(0, 150, N_CM)
    split = rng.random((150, R_CM)) < 0.5
    return (rng.normal(size=(N_CM, R_CM)).astype(np.float32), rng.normal(size=(N_CM, R_CM)).astype(np.float32),
            split[users].astype(np.uint8), users)


def probe_data():
    rng = np.random.default_rng(12)
    lab = rng.integers(0, 2, N_PR).astype(np.int32)
    X = rng.normal(size=(N_PR, D_PR)).astype(np.float32) + lab[:, None] * 0.4
    split = np.array([0] * 400 + [1] * 100 + [2] * 100, np.uint8)
    return X, lab, split


def write_inputs(folder):
    """Runs in a child with HDF5_PLUGIN_PATH set to Debian's serial plugins (h5py is serial): writes
    cm_<variant>.h5 and probe_<variant>.h5 for each variant whose filter h5py can use; prints the rest."""
    rc, rr, fl, users = cm_data()
    X, lab, split = probe_data()
    for name, (kw, fid) in VARIANTS.items():
        if fid is not None and not h5py.h5z.filter_avail(fid):
            print("missing", name)
            continue
        with h5py.File(os.path.join(folder, f"cm_{name}.h5"), "w") as f:
            ck = dict(kw, chunks=(512, R_CM)) if kw else {}
            f.create_dataset("cm/reward_chosen", data=rc, **ck)
            f.create_dataset("cm/reward_rejected", data=rr, **ck)
            f.create_dataset("cm/in_train", data=fl, **ck)
            f.create_dataset("cm/covariates/len", data=rc[:, 0] * 3, **(dict(kw, chunks=(500,)) if kw else {}))
            # string users compressed with h5py's own filters only (Debian's Blosc plugin faults on
            # variable-length data when writing; fletcher32 does not apply to it)
            ukw = {k: v for k, v in kw.items() if k != "fletcher32"}
            f.create_dataset("cm/user", data=[f"user-{u}" for u in users], dtype=h5py.string_dtype(),
                             **(dict(ukw, chunks=(700,)) if kw and fid is None else {}))
        with h5py.File(os.path.join(folder, f"probe_{name}.h5"), "w") as f:
            f.create_dataset("probe/t/X", data=X, **(dict(kw, chunks=(128, D_PR)) if kw else {}))
            f.create_dataset("probe/t/label", data=lab, **(dict(kw, chunks=(250,)) if kw else {}))
            f.create_dataset("probe/t/split", data=split, **(dict(kw, chunks=(250,)) if kw else {}))


if len(sys.argv) == 3 and sys.argv[1] == "--write":
    write_inputs(sys.argv[2])
    sys.exit(0)

d = scratch("h5_filters")
env = dict(os.environ, HDF5_PLUGIN_PATH=WRITER or PLUGINS_SERIAL)
p = subprocess.run([sys.executable, __file__, "--write", d], env=env, capture_output=True, text=True)
check(p.returncode == 0, f"writing the inputs: {p.stderr}")
missing = set(l.split()[1] for l in p.stdout.splitlines() if l.startswith("missing "))
for name in sorted(missing):
    print(f"SKIP part: the {name} filter is not installed here (scripts/setup.sh --tests installs it)")
for must in ("none", "gzip", "lzf"):
    check(must not in missing, f"h5py writes {must} itself")
names = [n for n in VARIANTS if n not in missing]

# the filters really are in the files (h5py reports each dataset's pipeline)
with h5py.File(os.path.join(d, "cm_lzf.h5"), "r") as f:
    check("lzf" in f["cm/reward_chosen"]._filters, "the lzf input is lzf-compressed")
    check("lzf" in f["cm/user"]._filters, "the string users are lzf-compressed too")

TASKS = {"t": {"classes": [[0], [1]]}}


def jobs_for(n):
    """The cm and probe jobs on variant n's inputs; nothing random in them (no bootstrap, L-BFGS
    probes), so that jobs of different names can be compared."""
    return [{"name": f"cm-{n}", "kind": "cm", "input": f"cm_{n}.h5", "bootstrap": 0,
             "strata": [{"covariate": "len", "bins": 3}]},
            {"name": f"probe-{n}", "kind": "probe", "input": f"probe_{n}.h5", "tasks": TASKS, "mode": "lbfgs",
             "l2_grid": [1e-3, 1e-1]}]


results = {}
jobs = [j for n in names for j in jobs_for(n)]
for ranks in (0, 3):
    jp = write_job(os.path.join(d, f"job{ranks}.json"), jobs, output_dir=f"out{ranks}")
    code, _, err = run(["validate", jp], ranks=ranks)
    check(code == 0, f"validate on {max(ranks, 1)} ranks: exit {code} ({err.strip()[-600:]})")
    code, _, err = run(["run", jp, "--quiet", "--backend", "cpu"], ranks=ranks)
    check(code == 0, f"run on {max(ranks, 1)} ranks: exit {code} ({err.strip()[-600:]})")
    for j in jobs:
        path = os.path.join(d, f"out{ranks}", j["name"] + ".json")
        if os.path.exists(path):
            results[(ranks, j["name"])] = json.dumps(load_report(path)["result"], sort_keys=True)
for kind in ("cm", "probe"):
    ref = results.get((0, f"{kind}-none"))
    check(ref is not None, f"{kind}: the uncompressed input has a report")
    for n in names:
        for ranks in (0, 3):
            check(results.get((ranks, f"{kind}-{n}")) == ref,
                  f"{kind}, {n}, {max(ranks, 1)} ranks: result identical to the uncompressed input's on 1 rank")
res = json.loads(results.get((0, "cm-none"), "{}"))
check(res.get("n_users") == 150 and len(res.get("strata", [])) == 3, "cm: the string users and the covariate are read")


def unknown_filter_file(path, kind, fid):
    """An input whose main dataset went through filter `fid` (set with h5py's low-level API as an
    optional filter, so HDF5 accepts it without a plugin; the chunk is then written as if filtered)."""
    rc, rr, fl, users = cm_data()
    X, lab, split = probe_data()
    with h5py.File(path, "w") as f:
        if kind == "cm":
            f["cm/reward_rejected"], f["cm/in_train"], f["cm/user"] = rr, fl, users
            group, name, data = "cm", b"reward_chosen", rc
        else:
            f["probe/t/label"], f["probe/t/split"] = lab, split
            group, name, data = "probe/t", b"X", X
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk(data.shape)
        dcpl.set_filter(fid, h5py.h5z.FLAG_OPTIONAL, (3,))
        ds = h5py.h5d.create(f[group].id, name, h5py.h5t.IEEE_F32LE, h5py.h5s.create_simple(data.shape), dcpl=dcpl)
        ds.write_direct_chunk((0, 0), data.tobytes(), filter_mask=0)


def expect_exit2(label, jp, expect, env=None):
    for cmd in ("validate", "run"):
        code, _, err = run([cmd, jp], env=env)
        check(code == 2, f"{label} ({cmd}): exit {code}, expected 2 ({err.strip()})")
        lines = [l for l in err.splitlines() if l.startswith("rmdiag: error:")]
        check(len(lines) == 1, f"{label} ({cmd}): one error line, got {err!r}")
        for e in expect:
            check(e in err, f"{label} ({cmd}): message should contain {e!r}: {err.strip()}")
        check(outputs_in(os.path.join(os.path.dirname(jp), "out")) == [], f"{label} ({cmd}): nothing written")


for kind, ds in (("cm", "/cm/reward_chosen"), ("probe", "/probe/t/X")):
    for fid, what in ((32123, ["filter 32123 (unnamed)", "install an HDF5 plugin for filter 32123"]),
                      (32015, ["filter 32015 (zstd)"])):
        cd = os.path.join(d, f"{kind}_filter{fid}")
        os.makedirs(cd, exist_ok=True)
        unknown_filter_file(os.path.join(cd, "in.h5"), kind, fid)
        job = {"name": "x", "kind": kind, "input": "in.h5"}
        job.update({"bootstrap": 0} if kind == "cm" else {"tasks": TASKS})
        jp = write_job(os.path.join(cd, "job.json"), [job], output_dir="out")
        expect_exit2(f"{kind} filter {fid}", jp, [f"in.h5: dataset {ds} is stored with HDF5 " + what[0],
                                                  "cannot be loaded here", 'compression="gzip"', "h5repack",
                                                  "see docs/reference.md, 'HDF5 inputs'"] + what[1:])

# The user's HDF5_PLUGIN_PATH wins over rmdiag's default folders: one that lacks the plugin hides
# the filter, and the message names the package and the variable.
if "lz4" in names:
    for kind, ds in (("cm", "/cm/reward_chosen"), ("probe", "/probe/t/X")):
        cd = os.path.join(d, f"{kind}_hidden")
        os.makedirs(cd, exist_ok=True)
        os.replace(os.path.join(d, f"{kind}_lz4.h5"), os.path.join(cd, "in.h5"))
        job = {"name": "x", "kind": kind, "input": "in.h5"}
        job.update({"bootstrap": 0} if kind == "cm" else {"tasks": TASKS})
        jp = write_job(os.path.join(cd, "job.json"), [job], output_dir="out")
        expect_exit2(f"{kind} lz4 hidden", jp, [f"in.h5: dataset {ds} is stored with HDF5 filter 32004 (lz4)",
                                                "apt-get install hdf5-filter-plugin",
                                                f"HDF5_PLUGIN_PATH={cd}/none"],
                     env={"HDF5_PLUGIN_PATH": os.path.join(cd, "none")})
done()
