"""Bad benchmark inputs, job options and importer inputs: each must exit with status 2, print one
message naming the file, the dataset or key, the index and what was expected, and leave no output
file behind. Errors found in the parallel phase name the lowest offending index for any rank count."""
import json
import os

from benchutil import *
from rdtest import *

d = scratch("bench_bad")
rng = np.random.default_rng(2)
M, I = 5, 3000
SUBS = [s for sec in V1_SECTIONS.values() for s, _ in sec]
isub0 = np.arange(I) % len(SUBS)
off0 = np.arange(0, 2 * I + 1, 2)
nc0 = np.ones(I, np.int32)
sc0 = np.round(rng.normal(0, 1, (M, 2 * I)), 1)
MODELS = [f"m{k}" for k in range(M)]


def expect_failure(name, args, expect, ranks=(0,), out_dir=None):
    return expect_input_error(name, args, expect, ranks=ranks, out_dir=out_dir, exact_folder=False)


def case(name, expect, mutate=None, job_extra=None, ranks=(0,), subsets=SUBS, models=MODELS, ids=None, raw=None):
    """Writes the v1-shaped input (mutated), runs it and checks the failure."""
    cd = os.path.join(d, name)
    os.makedirs(cd, exist_ok=True)
    a = dict(isub=isub0.copy(), off=off0.copy(), nc=nc0.copy(), sc=sc0.copy(), subsets=list(subsets),
             models=list(models), ids=ids)
    if mutate:
        mutate(a)
    if raw:
        raw(os.path.join(cd, "in.h5"))
    else:
        write_bench(os.path.join(cd, "in.h5"), a["models"], a["subsets"], a["isub"], a["off"], a["nc"], a["sc"],
                    item_id=a["ids"], given=a.get("given"))
    job = {"name": "bad", "kind": "benchmark", "input": "in.h5", "bootstrap": 5}
    job.update(job_extra or {})
    write_job(os.path.join(cd, "job.json"), [job], output_dir="out")
    expect_failure(name, ["run", os.path.join(cd, "job.json")], [os.path.join(cd, "in.h5")] + list(expect)
                   if not name.startswith("opt_") else list(expect), ranks=ranks, out_dir=os.path.join(cd, "out"))


# ---- the layout --------------------------------------------------------------------------------

def unknown_subset(a):
    a["subsets"][4] = "alpacaeval-easyy"


case("unknown_subset", ['/bench/item_subset[4] = 4 names subset "alpacaeval-easyy"',
                        "not a subset of scheme rewardbench-v1"], unknown_subset)
# `rmdiag validate` finds the same without computing anything
expect_failure("validate_unknown_subset", ["validate", os.path.join(d, "unknown_subset", "job.json")],
               ['names subset "alpacaeval-easyy"'], ranks=(0, 2))


def bad_index(a):
    a["isub"][1777] = 40


case("subset_index", ["/bench/item_subset[1777] = 40 (item 1777) is not a subset",
                      "expected an index into /bench/subset_names (0..22)"], bad_index)


def no_rejected(a):
    a["nc"][1234] = 2


case("no_rejected", ["/bench/item_n_correct[1234] = 2 but item 1234 has 2 completions",
                     "no rejected completion"], no_rejected)


def no_preferred(a):
    a["nc"][99] = 0


case("no_preferred", ["/bench/item_n_correct[99] = 0 (item 99)", "at least one preferred"], no_preferred)


def flat_offsets(a):
    a["off"][501] = a["off"][500]   # item 500 has no completions; later offsets unchanged


case("offsets_not_increasing", ["/bench/item_offset[501] = 1000 is not greater than /bench/item_offset[500] = 1000",
                                "item 500 has no completions"], flat_offsets)


def offsets_decrease(a):
    a["off"][2001] = 3


case("offsets_decrease", ["/bench/item_offset[2001] = 3 is not greater than /bench/item_offset[2000] = 4000"],
     offsets_decrease)


def offset_end(a):
    a["sc"] = a["sc"][:, :-1]


case("offset_end", ["/bench/item_offset[3000] = 6000, expected C = 5999"], offset_end)


def nan_scores(a):
    a["sc"][4, 10] = np.nan       # flat key 4 * 6000 + 10
    a["sc"][3, 5000] = np.inf     # flat key 3 * 6000 + 5000: the lowest


case("nonfinite_score", ["/bench/scores[3, 5000] = inf (model 3 \"m3\", item 2500, its completion 0)",
                         "expected a finite score"], nan_scores, ranks=(0, 2, 3, 4))


def corrupt_scores(nan_model):
    """/bench/scores chunked one model per chunk, model 3's chunk corrupted (and a NaN in an earlier model)."""
    def raw(path):
        sc = sc0.copy()
        if nan_model is not None:
            sc[nan_model, 7] = np.nan
        write_bench(path, MODELS, SUBS, isub0, off0, nc0, sc)
        with h5py.File(path, "r+") as f:
            del f["bench/scores"]
            f.create_dataset("bench/scores", data=sc, chunks=(1, sc.shape[1]), compression="gzip")
            info = f["bench/scores"].id.get_chunk_info_by_coord((3, 0))
        with open(path, "r+b") as f:
            f.seek(info.byte_offset)
            f.write(bytes(range(256)) * (info.size // 256) + bytes(info.size % 256))
    return raw


# a row that cannot be read: the first such model is named, for any rank count; a bad value before it wins
case("corrupt_row", ["reading rows 3..3 of dataset /bench/scores failed"], raw=corrupt_scores(None), ranks=(0, 2, 4))
case("corrupt_row_after_nan", ["/bench/scores[1, 7] = nan"], raw=corrupt_scores(1), ranks=(0, 4))


def nan_one(a):
    a["sc"][0, 5999] = np.nan


case("nan_score", ["/bench/scores[0, 5999] = nan (model 0 \"m0\", item 2999, its completion 1)"], nan_one, ranks=(0, 2))


def drop_math(a):
    keep = a["isub"] != SUBS.index("math-prm")
    a["isub"], a["nc"] = a["isub"][keep], a["nc"][keep]
    a["off"] = np.arange(0, 2 * keep.sum() + 1, 2)
    a["sc"] = a["sc"][:, np.repeat(keep, 2)]


case("missing_subset", ['subset "math-prm" (section "Reasoning" of the scheme) is absent from the input',
                        '"allow_missing": true'], drop_math)


def dup_model(a):
    a["models"][3] = "m1"


case("duplicate_model", ['/bench/model_names[3] = "m1" repeats /bench/model_names[1]'], dup_model)


def scores_rows(a):
    a["sc"] = a["sc"][:4]


case("scores_rows", ["/bench/scores has shape [4, 6000] but /bench/model_names has [5]",
                     "expected the same number of models (M)"], scores_rows)


def given_shape(a):
    a["given"] = np.full((M, I - 1), np.nan)


case("given_shape", ["/bench/given_credit has shape [5, 2999] but /bench/item_subset has [3000]",
                     "expected the same number of items (I)"], given_shape)


def offsets_short(a):
    a["off"] = a["off"][:-1]


case("offsets_short", ["/bench/item_offset has 3000 entries, expected I + 1 = 3001 (I = 3000 items in "
                       "/bench/item_subset)"], offsets_short)


def no_group(p):
    with h5py.File(p, "w") as f:
        f["other/model_names"] = np.array([b"a"])


case("no_group", ["group /bench is missing", "see docs/reference.md, 'benchmark input layout'"], raw=no_group)


def given_big(a):
    g = np.full((M, I), np.nan)
    g[2, 17] = 1.5
    a["given"] = g


case("given_credit", ["/bench/given_credit[2, 17] = 1.5", "expected a credit in [0, 1]"], given_big, ranks=(0, 2))


def missing_ds(p):
    with h5py.File(p, "w") as f:
        f["bench/model_names"] = np.array([b"a"])
        f["bench/subset_names"] = np.array([b"x"])


case("no_items", ["dataset /bench/item_subset is missing"], raw=missing_ds)

# ---- RewardBench 2 Ties ids ------------------------------------------------------------------------
V2 = [("Factuality", "0", 1, 4), ("Precise IF", "1", 1, 4), ("Math", "2", 1, 4), ("Safety", "3", 1, 4),
      ("Focus", "4", 1, 4), ("Ties", "tied:0", 2, 5), ("Ties", "ref:0", 1, 3), ("Ties", "tied:1", 2, 4),
      ("Ties", "ref:1", 1, 3)]


def v2_case(name, expect, ids, with_ids=True):
    rows = [(V2_SUBSETS.index(s), k, [list(np.arange(n, 0, -1.0))]) for s, _, k, n in V2]
    isub, off, nc, sc = items_from_lists(rows)
    cd = os.path.join(d, name)
    os.makedirs(cd, exist_ok=True)
    write_bench(os.path.join(cd, "in.h5"), ["only"], V2_SUBSETS, isub, off, nc, sc, item_id=ids if with_ids else None)
    write_job(os.path.join(cd, "job.json"), [{"name": "bad", "kind": "benchmark", "input": "in.h5",
                                              "scheme": "rewardbench-v2"}], output_dir="out")
    expect_failure(name, ["run", os.path.join(cd, "job.json")], expect, out_dir=os.path.join(cd, "out"))


ids = [x[1] for x in V2]
v2_case("ties_bad_id", ['/bench/item_id[7] = "tie:1" (item 7, subset "Ties")', 'expected "ref:<n>" or "tied:<n>"'],
        ids[:7] + ["tie:1"] + ids[8:])
v2_case("ties_dup_id", ['/bench/item_id[8] = "ref:0" repeats item 6 of subset "Ties"'], ids[:8] + ["ref:0"])
v2_case("ties_no_ids", ["dataset /bench/item_id is missing", "Ties composite"], ids, with_ids=False)
v2_case("ties_ids_short", ["/bench/item_id has shape [8] but /bench/item_subset has [9]",
                           "expected the same number of items (I)"], ids[:8])

# ---- job options -------------------------------------------------------------------------------
case("opt_scheme", ['"scheme" must be "rewardbench-v1", "rewardbench-v2" or'], job_extra={"scheme": "rewardbench-v3"})
case("opt_prior_v2", ['"prior_sets" applies to the rewardbench-v1 scheme only'],
     job_extra={"scheme": "rewardbench-v2", "prior_sets": True})
case("opt_weight", ['section "S", subset "a": the weight must be a positive number'],
     job_extra={"scheme": {"sections": {"S": {"a": -1}}}})
case("opt_rule", ['"item_rule" = "lenient" is not allowed'],
     job_extra={"scheme": {"sections": {"S": {"a": 1}}, "item_rule": "lenient"}})
case("opt_compare_self", ['"compare"[0] compares model "m1" with itself'], job_extra={"compare": [["m1", "m1"]]})
case("opt_compare_shape", ['"compare" must be "all" or a list of model-name pairs'], job_extra={"compare": "some"})
case("compare_unknown", ['"compare"[1]: model "nope" is not in', "/bench/model_names"],
     job_extra={"compare": [["m0", "m1"], ["m2", "nope"]]})
case("opt_unknown_key", ['unknown key "bootstraps"'], job_extra={"bootstraps": 3})


# accuracies: a model without a value for a scored subset
def acc_nan(p):
    acc = np.full((2, len(SUBS)), 0.5)
    acc[1, 3] = np.nan
    with h5py.File(p, "w") as f:
        s = h5py.string_dtype("utf-8")
        f.create_dataset("bench/model_names", data=["a", "b"], dtype=s)
        f.create_dataset("bench/subset_names", data=SUBS, dtype=s)
        f["bench/subset_accuracy"] = acc


case("accuracy_missing", ['/bench/subset_accuracy[1, 3] is NaN: model "b" has no value for subset "mt-bench-easy"'],
     raw=acc_nan)

# ---- several jobs: a bad value in a later job is found before any job writes ------------------------
# (the scores are checked by the ranks that own them: the lowest offending flat index, m * C + c, wins)
cd = os.path.join(d, "multi_job")
os.makedirs(cd, exist_ok=True)
write_bench(os.path.join(cd, "good.h5"), MODELS, SUBS, isub0, off0, nc0, sc0)
sc_bad = sc0.copy()
sc_bad[4, 10] = np.nan
sc_bad[3, 5000] = np.inf
write_bench(os.path.join(cd, "bad.h5"), MODELS, SUBS, isub0, off0, nc0, sc_bad)
nc_bad = nc0.copy()
nc_bad[1234] = 2
write_bench(os.path.join(cd, "bad_table.h5"), MODELS, SUBS, isub0, off0, nc_bad, sc0)
good_job = {"name": "a", "kind": "benchmark", "input": "good.h5", "bootstrap": 5}
for bad_in, msg in (("bad.h5", '/bench/scores[3, 5000] = inf (model 3 "m3", item 2500, its completion 0)'),
                    ("bad_table.h5", "/bench/item_n_correct[1234] = 2 but item 1234 has 2 completions")):
    jp = write_job(os.path.join(cd, "job.json"), [good_job, {"name": "b", "kind": "benchmark", "input": bad_in,
                                                             "bootstrap": 5}])
    expect_failure(f"multi_job {bad_in}", ["run", jp], [os.path.join(cd, bad_in) + ": " + msg], ranks=(0, 3))
    check(not os.path.exists(os.path.join(cd, "out")), f"multi_job {bad_in}: nothing written, not even the folder")
# `rmdiag validate` reads the values too
jp = write_job(os.path.join(cd, "job.json"), [good_job, {"name": "b", "kind": "benchmark", "input": "bad.h5"}])
expect_failure("validate_values", ["validate", jp], ["bad.h5: /bench/scores[3, 5000] = inf", "expected a finite score"],
               ranks=(0, 2))
check(not os.path.exists(os.path.join(cd, "out")), "validate writes nothing")
# the good job alone still runs
jp = write_job(os.path.join(cd, "good.json"), [good_job])
code, _, err = run(["run", jp, "--quiet"])
check(code == 0 and os.path.exists(os.path.join(cd, "out", "a.json")), f"the good job alone runs ({code} {err})")

# ---- importers -----------------------------------------------------------------------------------
idir = os.path.join(d, "import")
os.makedirs(idir, exist_ok=True)


def jsonl(name, rows, meta=None):
    p = os.path.join(idir, name)
    with open(p, "w") as f:
        if meta:
            f.write(json.dumps(meta) + "\n")
        for r in rows:
            f.write((r if isinstance(r, str) else json.dumps(r)) + "\n")
    return p


def v1rows(n, skip=None, extra=None):
    rows = [{"id": i, "subset": "alpacaeval-easy" if i % 2 else "hep-go", "scores_chosen": 1.0 + i,
             "scores_rejected": 0.5} for i in range(n) if i != skip]
    return rows + (extra or [])


def imp(name, fmt, files, expect):
    out = os.path.join(idir, name + ".h5")
    expect_failure(name, ["import", fmt] + files + ["-o", out], expect)
    check(not os.path.exists(out) and not [f for f in os.listdir(idir) if f.startswith("." + name)],
          f"{name}: no output file")


a = jsonl("a.jsonl", v1rows(10), {"_record": "metadata", "model": "A"})
b = jsonl("b.jsonl", v1rows(10, skip=7), {"_record": "metadata", "model": "B"})
imp("misaligned_missing", "rewardbench", [a, b],
    ['model "B" (', 'lacks item (subset "alpacaeval-easy", id "7") of model "A"', "a.jsonl: line 9"])
c = jsonl("c.jsonl", v1rows(10, extra=[{"id": 77, "subset": "hep-go", "scores_chosen": 1, "scores_rejected": 0}]),
          {"_record": "metadata", "model": "C"})
imp("misaligned_extra", "rewardbench", [a, c],
    ['c.jsonl: line 12: model "C" has item (subset "hep-go", id "77"), which model "A"', "lacks"])
dup = jsonl("dup.jsonl", v1rows(4) + [{"id": 2, "subset": "hep-go", "scores_chosen": 0, "scores_rejected": 0}])
imp("duplicate_item", "rewardbench", [dup],
    ['dup.jsonl: line 5: item (subset "hep-go", id "2") appears twice for model "dup" (first at', "dup.jsonl: line 3"])
nanf = jsonl("nan.jsonl", v1rows(3) + ['{"id": 9, "subset": "hep-go", "scores_chosen": NaN, "scores_rejected": 0}'])
# Python's NaN / Infinity tokens are read as non-finite numbers; a score must be finite: the message names
# the line and the key
imp("nan_json", "rewardbench", [nanf],
    ['nan.jsonl: line 4: key "scores_chosen": expected a finite number or a one-element list, got NaN'])
two = jsonl("two.jsonl", [{"id": 1, "subset": "hep-go", "scores_chosen": [1, 2], "scores_rejected": 0}])
imp("two_element_score", "rewardbench", [two],
    ['two.jsonl: line 1: key "scores_chosen": expected a finite number or a one-element list, got a list'])
nos = jsonl("nos.jsonl", [{"id": 1, "subset": "hep-go"}])
imp("no_scores", "rewardbench", [nos], ['nos.jsonl: line 1: item (subset "hep-go", id "1") has neither'])
acc = os.path.join(idir, "acc.json")
with open(acc, "w") as f:
    json.dump({"model": "A", "hep-go": 0.5}, f)
imp("mixed", "rewardbench", [a, acc], ["acc.json is a per-subset accuracy file but", "a.jsonl is a per-item file"])
r2a = jsonl("r2a.jsonl", [{"id": "0", "subset": "Math", "num_correct": 1, "scores": [[1.0], [0.5], [0.2], [0.1]]}],
            {"_record": "metadata", "model": "X"})
r2b = jsonl("r2b.jsonl", [{"id": "0", "subset": "Math", "num_correct": 1, "scores": [1.0, 0.5, 0.2]}],
            {"_record": "metadata", "model": "Y"})
imp("v2_misaligned_completions", "rewardbench2", [r2a, r2b],
    ['r2b.jsonl: line 2: item (subset "Math", id "0") of model "Y" has 3 completions (1 preferred) but model "X" has 4'])
r2c = jsonl("r2c.jsonl", [{"id": "0", "subset": "Math", "num_correct": 2, "scores": [1.0, 0.5]}])
imp("v2_no_rejected", "rewardbench2", [r2c], ["r2c.jsonl: line 1", "has 2 scores and num_correct = 2: no rejected"])
bad = jsonl("bad.jsonl", ['{"id": "0", "subset": "Math", "num_correct": 1, "scores": [1, 0]}', '{"id": "1", "subset"'])
imp("truncated_line", "rewardbench2", [bad], ["bad.jsonl: line 2, column", "malformed JSON"])
# names must be UTF-8 text (they go into the report's JSON) of bounded length; empty arrays and a first
# record row that is not metadata get their own messages
def raw_lines(name, lines):
    p = os.path.join(idir, name)
    with open(p, "wb") as f:
        f.write(b"\n".join(lines) + b"\n")
    return p


item = b'{"id": 1, "subset": "hep-go", "scores_chosen": 1, "scores_rejected": 0}'
imp("utf8_model", "rewardbench", [raw_lines("u8m.jsonl", [b'{"_record": "metadata", "model": "m\xff"}', item])],
    ['u8m.jsonl: key "model": the name is not valid UTF-8 text'])
imp("utf8_subset", "rewardbench", [raw_lines("u8s.jsonl", [b'{"id": 1, "subset": "hep\xc3", "scores_chosen": 1, '
                                                           b'"scores_rejected": 0}'])],
    ['u8s.jsonl: line 1: key "subset": not valid UTF-8 text'])
imp("nul_id", "rewardbench", [raw_lines("nul.jsonl", [item, b'{"id": "1\\u0000x", "subset": "hep-go", '
                                                   b'"scores_chosen": 1, "scores_rejected": 0}'])],
    ["nul.jsonl: line 2, column 10: a \\u0000 escape (NUL)"])
imp("duplicate_key", "rewardbench", [raw_lines("dupkey.jsonl", [b'{"id": 1, "id": 2, "subset": "hep-go", '
                                                                 b'"scores_chosen": 1, "scores_rejected": 0}'])],
    ['dupkey.jsonl: line 1: key "id" appears twice in one object'])
imp("long_model", "rewardbench", [jsonl("long.jsonl", v1rows(2), {"_record": "metadata", "model": "m" * 1500})],
    ['long.jsonl: key "model": a name of 1500 bytes, expected at most 1023'])
empty = os.path.join(idir, "empty.json")
with open(empty, "w") as f:
    json.dump({"id": [], "subset": [], "scores_chosen": [], "scores_rejected": [], "model": "A"}, f)
imp("empty_arrays", "rewardbench", [empty], ["empty.json: no items (the parallel arrays are empty)"])
imp("record_first", "rewardbench", [jsonl("rec.jsonl", v1rows(2), {"_record": "summary", "model": "A"})],
    ['rec.jsonl: line 1: key "_record": expected "metadata"'])
# a hand-made input with a name that is not UTF-8: the run says so instead of writing a broken report
cd = os.path.join(d, "utf8_h5")
os.makedirs(cd, exist_ok=True)
write_bench(os.path.join(cd, "in.h5"), MODELS, SUBS, isub0, off0, nc0, sc0)
with h5py.File(os.path.join(cd, "in.h5"), "r+") as f:
    del f["bench/model_names"]
    f.create_dataset("bench/model_names", data=np.array([b"m0", b"m1", b"m\xe92", b"m3", b"m4"], dtype="S4"))
write_job(os.path.join(cd, "job.json"), [{"name": "bad", "kind": "benchmark", "input": "in.h5", "bootstrap": 5}],
          output_dir="out")
expect_failure("utf8_h5", ["run", os.path.join(cd, "job.json")],
               ["/bench/model_names[2] is not valid UTF-8 text (byte 1 = 0xe9)"], out_dir=os.path.join(cd, "out"))
done()
