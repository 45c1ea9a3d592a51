"""Bad inputs: each must exit with status 2, print one message that names the problem (file,
dataset or key, index, what was expected), and leave no output file behind. Errors found inside
the parallel phases name the lowest offending index, whichever rank found it."""
import os

from rdtest import *

d = scratch("cm_bad")
rng = np.random.default_rng(1)
P, R = 10000, 3
users = rng.integers(0, 400, P)
split = rng.random((400, R)) < 0.5
base = dict(rc=rng.normal(size=(P, R)), rr=rng.normal(size=(P, R)), flags=split[users].astype(np.uint8), user=users)


def case(name, job_extra=None, mutate=None, raw_job=None, ranks=(0,), expect=(), inp="in.h5", make_input=True):
    """Writes the input (mutated), runs it with each rank count, asserts exit 2, the message and
    that the output folder stays empty; returns the messages."""
    cd = os.path.join(d, name)
    os.makedirs(cd, exist_ok=True)
    if make_input:
        a = {k: np.array(v, copy=True) for k, v in base.items()}
        if mutate:
            mutate(a)
        write_cm(os.path.join(cd, "in.h5"), a["rc"], a["rr"], a["flags"], a["user"])
    jp = os.path.join(cd, "job.json")
    if raw_job is not None:
        with open(jp, "w") as f:
            f.write(raw_job)
    else:
        job = {"name": "bad", "kind": "cm", "input": inp, "bootstrap": 10}
        job.update(job_extra or {})
        write_job(jp, [job], output_dir="out")
    return expect_input_error(name, ["run", jp], expect, ranks=ranks, out_dir=os.path.join(cd, "out"))


case("malformed_json", raw_job='{"output_dir": "out",\n  "jobs": [ {"name": "x" ]}', make_input=False,
     expect=["job.json: malformed JSON at line 2"])
case("unknown_key", job_extra={"bootstraps": 5}, expect=['jobs[0] ("bad"): unknown key "bootstraps"'])
case("wrong_type", job_extra={"bootstrap": "many"}, expect=['"bootstrap" must be an integer, got a string'])
case("missing_input", inp="nope.h5", make_input=False, expect=["nope.h5", "No such file"])


def drop(name):
    def m(a):
        a.pop(name)
    return m


# missing dataset: write a file without reward_rejected
cd = os.path.join(d, "missing_dataset")
os.makedirs(cd, exist_ok=True)
with h5py.File(os.path.join(cd, "in.h5"), "w") as f:
    f["cm/reward_chosen"] = base["rc"]
    f["cm/in_train"] = base["flags"]
    f["cm/user"] = base["user"]
case("missing_dataset", make_input=False, expect=["in.h5: dataset /cm/reward_rejected is missing"])


def shape(a):
    a["rr"] = a["rr"][:, :2]


case("shape_mismatch", mutate=shape, expect=["/cm/reward_rejected has shape [10000, 2]", "[10000, 3]"])


def nan_reward(a):
    a["rc"][7000, 1] = np.nan


msgs = case("nan_reward", mutate=nan_reward, ranks=(0, 3),
            expect=["/cm/reward_chosen[7000, 1] = nan", "expected a finite reward"])
check(msgs[0] == msgs[1], "NaN message identical for 1 and 3 ranks")


def flag2(a):
    a["flags"][8500, 2] = 2


case("in_train_2", mutate=flag2, ranks=(0, 4), expect=["/cm/in_train[8500, 2] = 2, expected 0 or 1"])


def lowest(a):
    a["flags"][9000, 0] = 5      # rank 3 of 4
    a["rr"][7000, 2] = np.inf    # rank 2 of 4: the lower index wins


msgs = case("lowest_index", mutate=lowest, ranks=(0, 4), expect=["/cm/reward_rejected[7000, 2] = inf"])
check(msgs[0] == msgs[1], "lowest-index message identical for 1 and 4 ranks")


def split_bad(a):
    u = a["user"]
    for p in (4500, 9000):       # rank 1 and rank 3 of 4 (blocks of 2048 pairs)
        a["flags"][p, 1] = 1 - a["flags"][p, 1]


msgs = case("user_split", mutate=split_bad, ranks=(0, 4), expect=["is split inconsistently in run 1: pair 4500"])
first = int(np.flatnonzero(base["user"] == base["user"][4500])[0])
check(f"pair {first} (the user's first pair)" in msgs[0] and f"user {base['user'][4500]}" in msgs[0],
      f"split message names the user and the user's first pair {first}: {msgs[0]}")
check(msgs[0] == msgs[1], "split message identical for 1 and 4 ranks")

case("missing_covariate", job_extra={"strata": [{"covariate": "len", "bins": 3}]},
     expect=['strata[0] names covariate "len"', "/cm/covariates/len is missing"])


cd = os.path.join(d, "float_flags")
os.makedirs(cd, exist_ok=True)
with h5py.File(os.path.join(cd, "in.h5"), "w") as f:
    f["cm/reward_chosen"] = base["rc"]
    f["cm/reward_rejected"] = base["rr"]
    f["cm/in_train"] = base["flags"].astype(np.float32)
    f["cm/user"] = base["user"]
case("float_flags", make_input=False, expect=["/cm/in_train has float type, expected uint8"])
cd = os.path.join(d, "not_hdf5")
os.makedirs(cd, exist_ok=True)
with open(os.path.join(cd, "in.h5"), "w") as f:
    f.write("run,pair\n")
case("not_hdf5", make_input=False, expect=["in.h5: not an HDF5 file"])

case("repeated_covariate", job_extra={"strata": [{"covariate": "len", "bins": 2}, {"covariate": "len", "categorical": True}]},
     make_input=False, expect=['strata[1]: covariate "len" is already stratified by strata[0]'])

# integer categories that float64 cannot tell apart (2^53 and 2^53 + 1) are an error, not merged
for name, dt, vals in (("big_category", np.int64, (2**53, 2**53 + 1, 2**62 + 1)),
                       ("big_category_u64", np.uint64, (2**53, 2**64 - 1, 3))):
    cd = os.path.join(d, name)
    os.makedirs(cd, exist_ok=True)
    cov = np.zeros(P, dt)
    cov[40:43] = np.array(vals, dt)
    write_cm(os.path.join(cd, "in.h5"), base["rc"], base["rr"], base["flags"], base["user"], covariates={"mid": cov})
    case(name, job_extra={"strata": [{"covariate": "mid", "categorical": True}]}, make_input=False, ranks=(0, 2),
         expect=[f"/cm/covariates/mid[41] = {vals[1]}",
                 "within +-2^53"])
# the same values binned by quantile are fine (bins compare values, float64 is enough)
cd = os.path.join(d, "big_category")
jp = write_job(os.path.join(cd, "bins.json"), [{"name": "ok", "kind": "cm", "input": "in.h5", "bootstrap": 0,
                                                 "strata": [{"covariate": "mid", "bins": 2}]}], output_dir="out_bins")
code, _, err = run(["run", jp])
check(code == 0, f"quantile bins of large integers run ({err.strip()})")

# A corrupt compressed chunk (rows 6000..6999 of reward_chosen): the error names the first block of
# rows that cannot be read, the same for any rank count; a bad value before it still comes first.
for name, nan_at in (("corrupt_chunk", None), ("corrupt_chunk_after_nan", (100, 0))):
    cd = os.path.join(d, name)
    os.makedirs(cd, exist_ok=True)
    Pc = 9000
    rc = base["rc"][:Pc].copy()
    if nan_at:
        rc[nan_at] = np.nan
    path = os.path.join(cd, "in.h5")
    with h5py.File(path, "w") as f:
        f.create_dataset("cm/reward_chosen", data=rc, chunks=(1000, R), compression="gzip")
        f.create_dataset("cm/reward_rejected", data=base["rr"][:Pc], chunks=(1000, R), compression="gzip")
        f["cm/in_train"] = base["flags"][:Pc]
        f["cm/user"] = base["user"][:Pc]
        info = f["cm/reward_chosen"].id.get_chunk_info_by_coord((6000, 0))
    with open(path, "r+b") as f:
        f.seek(info.byte_offset)
        f.write(bytes(range(256)) * (info.size // 256) + bytes(info.size % 256))
    msgs = case(name, make_input=False, ranks=(0, 3, 4) if nan_at is None else (0, 4),
                expect=(["in.h5: /cm/reward_chosen[100, 0] = nan"] if nan_at else
                        ["in.h5: reading rows 4096..6143 of dataset /cm/reward_chosen failed"]))
    check(len(set(msgs)) == 1, f"{name}: the same message for every rank count: {msgs}")

# String users whose global heap is corrupt (an object size of about 1 GB in a heap of 4 KB): HDF5
# would copy past its buffers reading them; rmdiag finds the corrupt heap before HDF5 reads it and
# exits 2 naming the dataset, on any rank count (more heap cases: tests/cli/test_h5_hostile.py).
cd = os.path.join(d, "corrupt_heap")
os.makedirs(cd, exist_ok=True)
Ph = 40
write_cm(os.path.join(cd, "in.h5"), base["rc"][:Ph], base["rr"][:Ph], base["flags"][:Ph],
         [f"user{u}" for u in base["user"][:Ph]])
raw = bytearray(open(os.path.join(cd, "in.h5"), "rb").read())
gcol = raw.find(b"GCOL")
check(gcol > 0, "the string users live in a global heap collection")
raw[gcol + 16 + 8 + 3] = 0x40   # first object's size (after index, reference count, reserved): byte 3
with open(os.path.join(cd, "in.h5"), "wb") as f:
    f.write(raw)
case("corrupt_heap", make_input=False, ranks=(0, 2), expect=["in.h5: dataset /cm/user"])

# A nested output_dir whose folders this run would create: a failure leaves none of them
cd = os.path.join(d, "nested_out")
os.makedirs(cd, exist_ok=True)
bad_rc = base["rc"].copy()
bad_rc[8500, 2] = np.nan
write_cm(os.path.join(cd, "in.h5"), bad_rc, base["rr"], base["flags"], base["user"])
jp = write_job(os.path.join(cd, "job.json"), [{"name": "bad", "kind": "cm", "input": "in.h5", "bootstrap": 0}],
               output_dir="fresh/x/y")
for n in (0, 2):
    code, _, err = run(["run", jp], ranks=n)
    check(code == 2 and "= nan" in err, f"nested output_dir ({n} ranks): exit {code} ({err.strip()})")
    check(not os.path.exists(os.path.join(cd, "fresh")), f"nested output_dir ({n} ranks): no folder left behind")
# only the folders the run created go, however output_dir is written; the user's own folder stays
os.makedirs(os.path.join(cd, "pre"), exist_ok=True)
for out_dir, gone, kept in (("pre/a//b", "pre/a", "pre"), ("nb/b/", "nb", None), ("nc/d/" + "x" * 300, "nc", None)):
    jp = write_job(os.path.join(cd, "job2.json"), [{"name": "bad", "kind": "cm", "input": "in.h5", "bootstrap": 0}],
                   output_dir=out_dir)
    code, _, err = run(["run", jp])
    check(code in (1, 2), f"output_dir {out_dir[:20]}: fails ({code}: {err.strip()[:200]})")
    check(not os.path.exists(os.path.join(cd, gone)), f"output_dir {out_dir[:20]}: {gone} (made by the run) removed")
    if kept:
        check(os.path.isdir(os.path.join(cd, kept)), f"output_dir {out_dir[:20]}: {kept} (the user's) kept")

# Several jobs: a bad input in a later job is found before any job writes anything.
cd = os.path.join(d, "multi_job")
os.makedirs(cd, exist_ok=True)
write_cm(os.path.join(cd, "good.h5"), base["rc"], base["rr"], base["flags"], base["user"])
bad_rc = base["rc"].copy()
bad_rc[9999, 2] = np.nan
write_cm(os.path.join(cd, "bad.h5"), bad_rc, base["rr"], base["flags"], base["user"])
jp = write_job(os.path.join(cd, "job.json"), [{"name": "a", "kind": "cm", "input": "good.h5", "bootstrap": 10},
                                              {"name": "b", "kind": "cm", "input": "bad.h5", "bootstrap": 10}])
for n in (0, 3):
    code, _, err = run(["run", jp], ranks=n)
    check(code == 2 and "bad.h5: /cm/reward_chosen[9999, 2] = nan" in err, f"multi-job ({n} ranks): {code} {err}")
    check(not os.path.exists(os.path.join(cd, "out")), f"multi-job ({n} ranks): nothing written, not even the folder")
code, out, err = run(["validate", jp])
check(code == 2 and "[9999, 2] = nan" in err, f"validate reads the values too: {code} {err}")

# uint64 user ids above 2^63 stay distinct users
cd = os.path.join(d, "uint64_users")
os.makedirs(cd, exist_ok=True)
big = np.array([2**63 + 1, 2**63 + 5, 2**64 - 1], dtype=np.uint64)
with h5py.File(os.path.join(cd, "in.h5"), "w") as f:
    f["cm/reward_chosen"] = base["rc"][:6]
    f["cm/reward_rejected"] = base["rr"][:6]
    f["cm/in_train"] = np.array([[1, 0, 1], [1, 0, 1], [0, 1, 1], [0, 1, 1], [1, 1, 0], [1, 1, 0]], np.uint8)
    f["cm/user"] = big[[0, 0, 1, 1, 2, 2]]
jp = write_job(os.path.join(cd, "job.json"), [{"name": "u", "kind": "cm", "input": "in.h5", "bootstrap": 0}])
code, _, err = run(["run", jp])
check(code == 0 and load_report(os.path.join(cd, "out", "u.json"))["result"]["n_users"] == 3,
      f"uint64 ids: 3 users ({code} {err})")
with h5py.File(os.path.join(cd, "in.h5"), "r+") as f:
    f["cm/in_train"][5, 2] = 1
code, _, err = run(["run", jp, "--force"])
check(code == 2 and "user 18446744073709551615 is split inconsistently in run 2: pair 5" in err, f"uint64 label: {err}")

# A dataset behind an external link lives in another file: read through HDF5, never mapped
# from the input file at the other file's offset.
cd = os.path.join(d, "external_link")
os.makedirs(cd, exist_ok=True)
with h5py.File(os.path.join(cd, "data.h5"), "w") as f:
    f["pad"] = np.zeros(5000)
    f["rc"] = base["rc"]
with h5py.File(os.path.join(cd, "in.h5"), "w") as f:
    f["cm/reward_chosen"] = h5py.ExternalLink("data.h5", "/rc")
    f["cm/reward_rejected"] = base["rr"]
    f["cm/in_train"] = base["flags"]
    f["cm/user"] = base["user"]
jp = write_job(os.path.join(cd, "job.json"), [{"name": "x", "kind": "cm", "input": "in.h5", "bootstrap": 0}])
code, _, err = run(["run", jp], cwd=cd)
code2, _, err2 = run(["run", jp, "--force"], cwd=cd, env={"RMDIAG_NO_MMAP": "1"})
check(code == 0 and code2 == 0, f"external link runs ({err} {err2})")
if code == 0:
    r = load_report(os.path.join(cd, "out", "x.json"))["result"]
    p_ = 1 / (1 + np.exp(-(base["rc"] - base["rr"])))
    m = base["flags"].astype(bool)
    with np.errstate(invalid="ignore"):
        tm = (p_ * m).sum(1) / m.sum(1)
    close(r["tm"]["mean"], np.nanmean(tm), "external link: TM mean from the linked data", rel=1e-9)

# An output may not overwrite an input, even with --force.
cd = os.path.join(d, "over_input")
os.makedirs(cd, exist_ok=True)
write_cm(os.path.join(cd, "data.h5"), base["rc"], base["rr"], base["flags"], base["user"])
jp = write_job(os.path.join(cd, "job.json"), [{"name": "data", "kind": "cm", "input": "data.h5", "bootstrap": 0}],
               output_dir=".")
before = open(os.path.join(cd, "data.h5"), "rb").read()
code, _, err = run(["run", jp, "--force"])
check(code == 2 and "would write" in err and "over the input of jobs[0]" in err, f"output over input: {err}")
check(open(os.path.join(cd, "data.h5"), "rb").read() == before, "the input is untouched")

# An existing output made from another spec is not overwritten without --force.
cd = os.path.join(d, "other_spec")
os.makedirs(cd, exist_ok=True)
write_cm(os.path.join(cd, "in.h5"), base["rc"], base["rr"], base["flags"], base["user"])
jp = write_job(os.path.join(cd, "job.json"), [{"name": "j", "kind": "cm", "input": "in.h5", "bootstrap": 10}])
code, _, err = run(["run", jp])
check(code == 0, f"first run succeeds ({err})")
before = {n: open(os.path.join(cd, "out", n), "rb").read() for n in outputs_in(os.path.join(cd, "out"))}
check(sorted(before) == ["j.h5", "j.json"], f"outputs {sorted(before)}")
jp = write_job(os.path.join(cd, "job.json"), [{"name": "j", "kind": "cm", "input": "in.h5", "bootstrap": 20}])
code, _, err = run(["run", jp], ranks=2)
check(code == 2, f"a different spec without --force exits 2 (got {code})")
check("j.json exists and was made from a different job spec" in err and "--force" in err, f"message: {err}")
after = {n: open(os.path.join(cd, "out", n), "rb").read() for n in outputs_in(os.path.join(cd, "out"))}
check(after == before, "the earlier outputs are untouched, no temporary file left")
code, _, err = run(["run", jp, "--force"], ranks=2)
check(code == 0 and load_report(os.path.join(cd, "out", "j.json"))["rmdiag"]["options"]["bootstrap"] == 20,
      "--force overwrites")
done()
