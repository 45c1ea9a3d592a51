"""Bad probe inputs and options: each exits with status 2, prints one message naming the file, the
dataset or key, the index and what was expected, and writes nothing; the message names the lowest
offending index whatever the rank count. Rows whose label is in no class list are not errors: they
are dropped and counted (and a NaN in such a row is not looked at)."""
import os

from rdtest import *

d = scratch("probe_bad")
rng = np.random.default_rng(3)
N, D = 300, 8


def base():
    lab = rng.integers(0, 3, N).astype(np.int32)
    split = np.array([0] * 200 + [1] * 50 + [2] * 50, np.uint8)
    return {"t": {"X": rng.normal(size=(N, D)).astype(np.float32), "label": lab, "split": split},
            "u": {"X": rng.normal(size=(N, D)).astype(np.float32), "label": lab.copy(), "split": split.copy()}}


TASKS = {"t": {"classes": [[0], [1]]}, "u": {"classes": [[0], [1], [2]]}}


def case(name, mutate=None, job_extra=None, expect=(), ranks=(0,), infer=None, drop=()):
    cd = os.path.join(d, name)
    os.makedirs(cd, exist_ok=True)
    a = base()
    if mutate:
        mutate(a)
    with h5py.File(os.path.join(cd, "in.h5"), "w") as f:
        for t, ds in a.items():
            for k, v in ds.items():
                if (t, k) not in drop:
                    f[f"probe/{t}/{k}"] = v
        if infer is not None:
            f["probe/infer/X"] = infer
    job = {"name": "bad", "kind": "probe", "input": "in.h5", "tasks": TASKS, "lr_grid": [1e-2]}
    job.update(job_extra or {})
    jp = write_job(os.path.join(cd, "job.json"), [job], output_dir="out")
    return expect_input_error(name, ["run", jp], expect, ranks=ranks, out_dir=os.path.join(cd, "out"))


def empty_class(a):
    a["t"]["label"][:200][a["t"]["label"][:200] == 1] = 0      # class 1 only in validation and test


case("empty_class", empty_class, expect=["in.h5", 'task "t" (/probe/t): class 1 (raw labels 1) has no training rows'])


def maha_degenerate(a):
    # validation rows m_c +- v with one v for both classes: the centred rows are +-v, so the covariance
    # has rank 1 and the Ledoit-Wolf shrinkage is exactly 0 (nothing to shrink with)
    v = (rng.integers(1, 8, D) / 8).astype(np.float32)          # dyadic: m +- v and the class means exact
    m = (rng.integers(-8, 8, (2, D)) / 4).astype(np.float32)
    X, lab, sp = a["t"]["X"], a["t"]["label"], a["t"]["split"]
    sp[200:250] = 2
    for i, (c, sgn) in enumerate(((0, 1), (0, -1), (1, 1), (1, -1))):
        X[200 + i], lab[200 + i], sp[200 + i] = m[c] + sgn * v, c, 1
    del a["u"]


case("mahalanobis_degenerate", maha_degenerate, job_extra={"tasks": {"t": TASKS["t"]}, "kmeans": {"distance": "mahalanobis"}},
     expect=["in.h5: mahalanobis distance", "not positive definite", "Ledoit-Wolf shrinkage is 0", "use distance euclidean"])


def d_mismatch(a):
    a["u"]["X"] = rng.normal(size=(N, D + 1)).astype(np.float32)


case("d_mismatch", d_mismatch, expect=["/probe/u/X has 9 features per row", 'task "t" of the same model has 8'])


def nans(a):
    a["u"]["X"][250, 5] = np.nan      # rank 2 or 3's rows
    a["t"]["X"][260, 2] = np.inf      # lower key (task t comes first): reported
    a["t"]["label"][260] = 1
    a["t"]["label"][10] = 7           # a dropped row: its NaN is not looked at
    a["t"]["X"][10, 0] = np.nan


msgs = case("nan_feature", nans, ranks=(0, 3), expect=["/probe/t/X[260, 2] = inf", "expected finite features"])
check(msgs[0] == msgs[1], "NaN message identical for 1 and 3 ranks")


def nan_f16(a):
    a["u"]["X"] = a["u"]["X"].astype(np.float16)
    a["u"]["X"][123, 7] = np.nan


case("nan_float16", nan_f16, ranks=(0, 2), expect=["/probe/u/X[123, 7] = nan"])
case("nan_infer", infer=np.vstack([np.zeros((5, D)), [[0] * 7 + [np.inf]]]).astype(np.float32),
     expect=["/probe/infer/X[5, 7] = inf", "an inference row"])
case("infer_d", infer=np.zeros((5, D + 2), np.float32), expect=["/probe/infer/X has 10 features per row"])
case("missing_split", drop=[("u", "split")], expect=["in.h5: dataset /probe/u/split is missing"])
case("missing_task", drop=[("u", "X"), ("u", "label"), ("u", "split")], expect=['task "u" has no group /probe/u'])


def split3(a):
    a["t"]["split"][77] = 3


case("split_value", split3, expect=["/probe/t/split[77] = 3, expected 0 (train), 1 (validation) or 2 (test)"])


def no_test(a):
    a["t"]["split"][a["t"]["split"] == 2] = 0


case("no_test", no_test, expect=['task "t": /probe/t/split has no test rows'])


def shape(a):
    a["t"]["label"] = a["t"]["label"][:-1]


case("label_rows", shape, expect=["in.h5: /probe/t/label has shape [299] but /probe/t/X has [300, 8]; "
                                  "expected the same number of rows (N)"])


def float_labels(a):
    a["t"]["label"] = a["t"]["label"].astype(np.float64)


case("float_labels", float_labels, expect=["/probe/t/label has float type, expected integer labels"])

# options
case("lr_in_lbfgs", job_extra={"mode": "lbfgs"}, expect=['"lr_grid" applies to mode "mrmbench", not "lbfgs"'])
case("l2_in_mrm", job_extra={"l2_grid": [1.0]}, expect=['"l2_grid" applies to mode "lbfgs"'])
case("unknown_key", job_extra={"lr": 0.1}, expect=['unknown key "lr"'])
case("dup_label", job_extra={"tasks": {"t": {"classes": [[0, 1], [1]]}}}, expect=["tasks.t: label 1 appears twice"])
case("one_class", job_extra={"tasks": {"t": {"classes": [[0, 1]]}}}, expect=["at least 2 classes"])
case("neg_label", job_extra={"tasks": {"t": {"classes": [[-1], [1]]}}}, expect=["classes[0][0] must be a non-negative"])
case("task_infer", job_extra={"tasks": {"infer": {"classes": [[0], [1]]}}}, expect=['task name "infer"'])
case("bad_lr", job_extra={"lr_grid": [0.1, 0]}, expect=['"lr_grid"[1] must be a positive number'])
case("dup_seed", job_extra={"seeds": [1, 2, 1]}, expect=["seeds[2] = 1 appears twice"])
case("bad_tau", job_extra={"kmeans": {"tau": -1}}, expect=['"tau" must be a non-negative number'])
case("bad_quantile", job_extra={"kmeans": {"tau": {"quantile": 1.5}}}, expect=['"quantile" = 1.5 is out of range'])
case("bad_distance", job_extra={"kmeans": {"distance": "manhattan"}}, expect=['"distance" = "manhattan" is not allowed'])
case("models_missing", job_extra={"models": ["rm1"]}, expect=['models[0] = "rm1" but group /probe/rm1 is missing'])
case("bad_init", job_extra={"init": "xavier"}, expect=['"init" = "xavier" is not allowed'])

# dropped rows are counted, not errors (and validate accepts the layout)
cd = os.path.join(d, "dropped")
os.makedirs(cd, exist_ok=True)
a = base()
a["t"]["label"][:40] = 9
a["t"]["label"][40:45] = -1
with h5py.File(os.path.join(cd, "in.h5"), "w") as f:
    for t, ds in a.items():
        for k, v in ds.items():
            f[f"probe/{t}/{k}"] = v
jp = write_job(os.path.join(cd, "job.json"), [{"name": "ok", "kind": "probe", "input": "in.h5", "tasks": TASKS,
                                                "lr_grid": [1e-2]}], output_dir="out")
code, out, err = run(["validate", jp])
check(code == 0 and "valid" in out, f"validate: {code} {out} {err}")
code, _, err = run(["run", jp, "--quiet"], ranks=2)
check(code == 0, f"dropped rows: exit {code} ({err})")
r = load_report(os.path.join(cd, "out", "ok.json"))["result"]["tasks"]["t"]
lab = a["t"]["label"]
check(r["dropped"] == {"missing_label": 5, "label_in_no_class": int(((lab != 0) & (lab != 1) & (lab != -1)).sum())},
      f"dropped rows counted: {r['dropped']}")
check(r["n_train"] + r["n_val"] + r["n_test"] == int(np.isin(lab, [0, 1]).sum()), "only rows with a class are used")

# unreadable data: a compressed chunk zeroed in the file (rows 128..191, in scan block 0 = rows 0..511) and a NaN at
# row 1700 (scan block 3). The read error comes first in the global order, so it is the error
# reported for any rank count (with 2 ranks the NaN is found by the second rank as well).
cd = os.path.join(d, "corrupt_chunk")
os.makedirs(cd, exist_ok=True)
Nc = 2000
Xc = rng.normal(size=(Nc, D)).astype(np.float32)
Xc[1700, 5] = np.nan
with h5py.File(os.path.join(cd, "in.h5"), "w") as f:
    f.create_dataset("probe/t/X", data=Xc, chunks=(64, D), compression="gzip")
    f["probe/t/label"] = rng.integers(0, 2, Nc).astype(np.int32)
    f["probe/t/split"] = np.repeat(np.array([0, 1, 2], np.uint8), [1400, 300, 300])
    info = f["probe/t/X"].id.get_chunk_info(2)
    check(info.chunk_offset == (128, 0), f"chunk 2 holds rows 128..191 ({info.chunk_offset})")
    off, size = info.byte_offset, info.size
with open(os.path.join(cd, "in.h5"), "r+b") as f:
    f.seek(off)
    f.write(bytes(size))
jp = write_job(os.path.join(cd, "job.json"), [{"name": "bad", "kind": "probe", "input": "in.h5",
                                                "tasks": {"t": {"classes": [[0], [1]]}}, "lr_grid": [1e-2]}],
               output_dir="out")
msgs = []
for n in (0, 2, 3):
    code, _, err = run(["run", jp], ranks=n)
    check(code == 2, f"corrupt chunk ({n} ranks): exit {code}, expected 2 ({err.strip()})")
    lines = [l for l in err.splitlines() if l.startswith("rmdiag: error:")]
    check(len(lines) == 1, f"corrupt chunk ({n} ranks): one error line, got {err!r}")
    check("in.h5: reading rows 0..511 of /probe/t/X failed" in err,
          f"corrupt chunk ({n} ranks): the lowest unreadable rows are reported: {err.strip()}")
    check(outputs_in(os.path.join(cd, "out")) == [], f"corrupt chunk ({n} ranks): nothing written")
    msgs.append("\n".join(lines))
check(len(set(msgs)) == 1, f"corrupt chunk: the same message for 1, 2 and 3 ranks: {msgs}")
# Several jobs: a probe input found bad (a NaN feature, or a Mahalanobis covariance that cannot be
# factored) stops the run before the earlier cm job writes anything; validate finds it too.
cd = os.path.join(d, "multi_job")
os.makedirs(cd, exist_ok=True)
write_cm(os.path.join(cd, "cm.h5"), [[1.0, 0.5]], [[0.0, 0.0]], [[1, 0]], [0])
a = base()
a["t"]["X"][230, 3] = np.nan
a["t"]["label"][230] = 1  # a row with a class: its features are checked
with h5py.File(os.path.join(cd, "nan.h5"), "w") as f:
    for k, v in a["t"].items():
        f[f"probe/t/{k}"] = v
a = base()
maha_degenerate(a)
with h5py.File(os.path.join(cd, "sing.h5"), "w") as f:
    for k, v in a["t"].items():
        f[f"probe/t/{k}"] = v
for name, inp, extra, msg in (("nan", "nan.h5", {}, "/probe/t/X[230, 3] = nan"),
                              ("sing", "sing.h5", {"kmeans": {"distance": "mahalanobis"}}, "Ledoit-Wolf shrinkage is 0")):
    jobs = [{"name": "first", "kind": "cm", "input": "cm.h5", "bootstrap": 0},
            dict({"name": "second", "kind": "probe", "input": inp, "tasks": {"t": TASKS["t"]}, "lr_grid": [1e-2]}, **extra)]
    jp = write_job(os.path.join(cd, name + ".json"), jobs, output_dir="out_" + name)
    for cmd, n in (("validate", 0), ("run", 0), ("run", 3)):
        code, _, err = run([cmd, jp], ranks=n)
        check(code == 2 and msg in err, f"multi-job {name} {cmd} ({n} ranks): exit {code} ({err.strip()})")
        check(outputs_in(os.path.join(cd, "out_" + name)) == [], f"multi-job {name} {cmd}: nothing written")
done()
