"""Import guardrails: each importer recognises another format's files and refuses them naming the importer
that reads them (RewardBench v1 vs 2 by their keys and, where keys say nothing, by subset names; NumLeak
panels vs RewardBench files, pretty-printed ones included), exit 2 and nothing written; every importer
prints what it kept and what it dropped, and dropping needs an option (rewardbench --drop-incomplete, with
per-model counts); a benchmark job without "scheme" on a RewardBench 2 import takes rewardbench-v2 from
the input's source attribute (hand-checked scores on 1 and 3 ranks, the scheme in the report's options and
in the spec, --resume), and an explicit scheme that does not fit says which one does."""
import json
import os

from rdtest import *
from benchutil import rb2_hand_rows

d = scratch("import_guardrails")


def write(name, text):
    p = os.path.join(d, name)
    with open(p, "w") as f:
        f.write(text)
    return p


def jsonl(name, rows):
    return write(name, "".join(json.dumps(r) + "\n" for r in rows))


OUT = os.path.join(d, "o", "out.h5")
os.makedirs(os.path.dirname(OUT), exist_ok=True)

# ---- files of each format ---------------------------------------------------------------------------
# RewardBench 2 as its runner saves them: parallel arrays (pretty-printed) and JSONL after a metadata row,
# both carrying "results" (a v1 importer used to read those as given credits and drop every score)
v2_items = [("0", "Math", 1, [2.0, 1.0, 2.0, 0.0]), ("1", "Factuality", 1, [3.0, 1.0, 1.0, 1.0])]
v2_arrays = write("v2_arrays.json", json.dumps({
    "id": [i[0] for i in v2_items], "model": "org/X", "num_correct": [i[2] for i in v2_items], "results": [1, 0],
    "scores": [i[3] for i in v2_items], "subset": [i[1] for i in v2_items]}, indent=4))
v2_rows = jsonl("v2_rows.jsonl", [{"_record": "metadata", "model": "Y"}] +
                [{"id": i[0], "subset": i[1], "num_correct": i[2], "scores": i[3], "results": 1} for i in v2_items])
v2_acc = write("v2_acc.json", json.dumps({"Factuality": 0.8, "Math": 0.5, "model": "Z", "model_type": "x"}))
v1_rows = jsonl("v1_rows.jsonl", [{"id": k, "subset": "hep-go", "scores_chosen": 2.0, "scores_rejected": 1.0}
                                  for k in range(3)])
v1_arrays = write("v1_arrays.json", json.dumps({"id": [1, 2], "subset": ["hep-go", "hep-go"],
                                                "scores_chosen": [1.0, 2.0], "scores_rejected": [0.0, 3.0],
                                                "results": [1, 0], "model": "A"}, indent=2))
v1_acc = write("v1_acc.json", json.dumps({"alpacaeval-easy": 0.9, "hep-go": 0.5, "model": "W"}))
# a generative judge's v1-style rows (only "results": no keys tell the version) naming RewardBench 2 subsets
v2_judge = jsonl("v2_judge.jsonl", [{"id": 1, "subset": "Focus", "results": 1}, {"id": 2, "subset": "Ties", "results": 0}])
v1_judge = jsonl("v1_judge.jsonl", [{"id": 1, "subset": "hep-go", "results": 1}])
panel = jsonl("panel.jsonl", [{"model_name": "A", "factor": "HML", "month": "2020-01", "response": "1.5%"},
                              {"model_name": "A", "factor": "HML", "month": "2020-02", "response": "no idea"}])

# ---- RewardBench v1 <-> 2 ----------------------------------------------------------------------------
cases = [
    ("v2 arrays to rewardbench", ["rewardbench", v2_arrays],
     [v2_arrays + ': key "num_correct" marks RewardBench 2 results, which rmdiag import rewardbench does not read '
      "(it reads RewardBench v1 results); import this file with rmdiag import rewardbench2 " + v2_arrays]),
    ("v2 rows to rewardbench", ["rewardbench", v1_rows, v2_rows],
     [v2_rows + ': line 2: key "num_correct" marks RewardBench 2 results',
      "import this file with rmdiag import rewardbench2 " + v2_rows]),
    ("v1 rows to rewardbench2", ["rewardbench2", v1_rows],
     [v1_rows + ': line 1: key "scores_chosen" marks RewardBench v1 results, which rmdiag import rewardbench2 does '
      "not read (it reads RewardBench 2 results); import this file with rmdiag import rewardbench " + v1_rows]),
    ("v1 arrays to rewardbench2", ["rewardbench2", v1_arrays],
     [v1_arrays + ': key "scores_chosen" marks RewardBench v1 results', "rmdiag import rewardbench " + v1_arrays]),
    ("v2 accuracies to rewardbench", ["rewardbench", v2_acc],
     [v2_acc + ': key "Factuality": subset "Factuality" is a RewardBench 2 subset and the file names no RewardBench '
      "v1 subset: it holds RewardBench 2 results, which rmdiag import rewardbench does not read; import this file "
      "with rmdiag import rewardbench2 " + v2_acc]),
    ("v1 accuracies to rewardbench2", ["rewardbench2", v1_acc],
     [v1_acc + ': key "alpacaeval-easy": subset "alpacaeval-easy" is a RewardBench v1 subset and the file names no '
      "RewardBench 2 subset", "import this file with rmdiag import rewardbench " + v1_acc]),
    ("results-only rows of v2 subsets to rewardbench", ["rewardbench", v2_judge],
     [v2_judge + ': line 1: subset "Focus" is a RewardBench 2 subset', "rmdiag import rewardbench2 " + v2_judge]),
    ("results-only rows of v1 subsets to rewardbench2", ["rewardbench2", v1_judge],
     [v1_judge + ': line 1: subset "hep-go" is a RewardBench v1 subset and the row has no "num_correct" or "scores": '
      "it holds RewardBench v1 results", "import this file with rmdiag import rewardbench " + v1_judge]),
    # ---- NumLeak panels and RewardBench files crossed ----
    ("panel to rewardbench", ["rewardbench", panel],
     [panel + ': line 1: key "model_name" marks a NumLeak panel, which rmdiag import rewardbench does not read',
      "import this file with rmdiag import numleak --panel " + panel]),
    ("panel to rewardbench2", ["rewardbench2", panel],
     [panel + ': line 1: key "model_name" marks a NumLeak panel', "rmdiag import numleak --panel " + panel]),
    ("v2 rows to numleak", ["numleak", "--no-truth", "HML", "--panel", v2_rows],
     [v2_rows + ': line 2: key "num_correct" marks RewardBench 2 results, not a NumLeak panel (no month field '
      '"month"); import this file with rmdiag import rewardbench2 ' + v2_rows]),
    # pretty-printed over many lines: not JSONL, recognised anyway instead of a JSON syntax error
    ("v2 arrays to numleak", ["numleak", "--no-truth", "HML", "--panel", v2_arrays],
     [v2_arrays + ': line 1: key "num_correct" marks RewardBench 2 results, not a NumLeak panel',
      "rmdiag import rewardbench2 " + v2_arrays]),
    ("v1 rows to numleak (model set)", ["numleak", "--no-truth", "HML", "--panel", v1_rows, "--set", "model=A"],
     [v1_rows + ': line 1: key "scores_chosen" marks RewardBench v1 results', "rmdiag import rewardbench " + v1_rows]),
    ("v1 accuracies to numleak", ["numleak", "--no-truth", "HML", "--panel", v1_acc],
     [v1_acc + ': line 1: key "alpacaeval-easy" marks RewardBench v1 results', "rmdiag import rewardbench " + v1_acc]),
]
for name, args, expect in cases:
    expect_input_error(name, ["import"] + args + ["-o", OUT], expect, out_file=OUT)

# the right importers take the same files
for fmt, files in (("rewardbench2", [v2_arrays, v2_rows]), ("rewardbench", [v1_rows]), ("rewardbench2", [v2_acc]),
                   ("rewardbench", [v1_acc])):
    code, _, err = run(["import", fmt] + files + ["-o", OUT])
    check(code == 0, f"{fmt} {files}: exit {code} ({err.strip()})")
    os.remove(OUT)
code, _, err = run(["import", "numleak", "--no-truth", "HML", "--panel", panel, "-o", OUT])
check(code == 0, f"the panel imports with numleak ({err.strip()})")
os.remove(OUT)
# keys decide when they are there: v1 pairs of a custom benchmark whose subset is called "Math"
custom = jsonl("custom_v1.jsonl", [{"id": 1, "subset": "Math", "scores_chosen": 1.0, "scores_rejected": 0.0}])
code, _, err = run(["import", "rewardbench", custom, "-o", OUT])
check(code == 0, f"v1 keys with a v2-like subset name are v1 results ({err.strip()})")
os.remove(OUT)

# ---- what was kept and what was dropped, on every importer -------------------------------------------
code, _, err = run(["import", "rewardbench2", v2_arrays, v2_rows, "-o", OUT])
check("rmdiag import rewardbench2: kept all 2 items of every model; dropped none; \"results\" of 4 items not used "
      "(credits are recomputed from the scores)" in err, f"rewardbench2 kept/dropped line: {err}")
os.remove(OUT)
code, _, err = run(["import", "rewardbench", v1_acc, "-o", OUT])
check("rmdiag import rewardbench: kept every accuracy of every file; dropped none" in err, f"accuracies: {err}")
os.remove(OUT)
csv = write("pairs.csv", "run,pair,user,reward_chosen,reward_rejected,in_train,len\n0,1,u,1,0,1,3\n0,2,v,1,0,0,\n")
code, _, err = run(["import", "cm-csv", csv, "-o", OUT])
check(code == 0 and "rmdiag import cm-csv: kept every row; dropped none; covariate len: numeric, 1 pairs missing"
      in err, f"cm-csv kept/dropped line: {err}")
os.remove(OUT)
np.save(os.path.join(d, "x.npy"), np.arange(6, dtype=np.float32).reshape(3, 2))
labels = write("l.csv", "label,split\n1,train\n,test\nnan,test\n")
code, _, err = run(["import", "features", "--task", "t", os.path.join(d, "x.npy"), labels, "-o", OUT])
check(code == 0 and f"labels from {labels}: train 1, validation 0, test 2 rows, 2 labels missing (stored as -1); "
      "kept every row; dropped none" in err, f"features kept/dropped line: {err}")
os.remove(OUT)
# numleak: a ranking panel drops its error rows (counted, with the option that keeps them)
rank = jsonl("rank.jsonl", [{"model_name": "A", "month": "2020-01", "m2": "2020-03", "response": "March 2020.",
                             "error": "timeout"},
                            {"model_name": "A", "month": "2020-01", "m2": "2020-03", "response": "January 2020."}])
code, _, err = run(["import", "numleak", "--no-truth", "HML", "--panel", panel, "--panel", rank, "--as", "rank",
                    "--set", "series=HML", "--field", "month_b=m2", "-o", OUT])
check(code == 0, f"numleak with a ranking panel ({err.strip()})")
check(f"{panel} (cells): 2 rows; kept 2, 0 error rows among them (status 2), 1 parsed, 0 with a number beyond "
      "float64 (no number); dropped none" in err, f"cells panel line: {err}")
check(f"{rank} (rank): 2 rows; kept 1, 1 parsed, 0 with a number beyond float64 (no number); dropped 1: 0 duplicates "
      "by key (--field key), 0 not matching --where, 1 error rows (error field \"error\"; --field error= keeps them)"
      in err, f"rank panel line: {err}")
with h5py.File(OUT) as f:
    check(f["leak/rank/pick"].shape == (1,), "the error row is not written")
os.remove(OUT)

# ---- rewardbench --drop-incomplete ------------------------------------------------------------------
a = jsonl("a.jsonl", [{"id": k, "subset": "hep-go", "scores_chosen": float(k), "scores_rejected": 0.5, "model": "A"}
                      for k in (0, 1, 2)])
b = jsonl("b.jsonl", [{"id": k, "subset": "hep-go", "scores_chosen": 10.0 + k, "scores_rejected": 0.5, "model": "B"}
                      for k in (1, 2, 3)])
expect_input_error("a missing item without --drop-incomplete", ["import", "rewardbench", a, b, "-o", OUT],
                   [b + ': line 3: model "B" has item (subset "hep-go", id "3"), which model "A" (' + a + ") lacks",
                    "(--drop-incomplete keeps only the items every model has)"], out_file=OUT)
code, _, err = run(["import", "rewardbench", a, b, "--drop-incomplete", "-o", OUT])
check(code == 0, f"--drop-incomplete imports ({err.strip()})")
check("rmdiag import rewardbench: kept 2 items every model has; dropped 2 of 4 items (subset, id) that some model "
      'lacks (--drop-incomplete): model "A" lacks 1, model "B" lacks 1' in err, f"dropped items counted: {err}")
with h5py.File(OUT) as f:
    g = f["bench"]
    check(list(g["item_id"].asstr()[...]) == ["1", "2"], f"the common items in A's order: {g['item_id'][...]}")
    check(g["scores"][...].tolist() == [[1.0, 0.5, 2.0, 0.5], [11.0, 0.5, 12.0, 0.5]], "their scores, aligned")
os.remove(OUT)
c = jsonl("c.jsonl", [{"id": 9, "subset": "hep-go", "scores_chosen": 1.0, "scores_rejected": 0.5, "model": "C"}])
expect_input_error("nothing in common", ["import", "rewardbench", a, c, "--drop-incomplete", "-o", OUT],
                   ["rmdiag import rewardbench --drop-incomplete: no item (subset, id) is present for every model"],
                   out_file=OUT)

# ---- benchmark: the scheme from the input's source attribute ----------------------------------------
# one model; credits (num_correct 1, strict win of the first score): Factuality 1/2, Precise IF 1, Math 0/2,
# Safety 1, Focus 3/4; Ties absent (allow_missing). Score = mean of the five sections = 0.65.
rb2 = jsonl("m.jsonl", rb2_hand_rows())
code, _, err = run(["import", "rewardbench2", rb2, "-o", os.path.join(d, "rb2.h5")])
check(code == 0, f"rewardbench2 import ({err.strip()})")
with h5py.File(os.path.join(d, "rb2.h5")) as f:
    check(f["bench"].attrs["source"] == "rewardbench2", "the importer writes source = rewardbench2")
jp = write_job(os.path.join(d, "auto.json"), [{"name": "auto", "kind": "benchmark", "input": "rb2.h5",
                                               "bootstrap": 0, "allow_missing": True}])
specs = set()
for ranks in (0, 3):
    code, so, err = run(["run", jp, "--force"], ranks=ranks)
    check(code == 0, f"no scheme on a RewardBench 2 input, {ranks} ranks: exit {code} ({err.strip()})")
    rep = load_report(os.path.join(d, "out", "auto.json"))
    check(rep["rmdiag"]["options"]["scheme"] == "rewardbench-v2", f"options show the scheme used: {rep['rmdiag']['options']}")
    r = rep["result"]["models"][0]
    for s, v in (("Factuality", 0.5), ("Precise IF", 1.0), ("Math", 0.0), ("Safety", 1.0), ("Focus", 0.75)):
        close(r["sections"][s]["score"], v, f"{s} ({ranks} ranks)")
    close(r["score"], 0.65, f"score = (0.5 + 1 + 0 + 1 + 0.75) / 5 ({ranks} ranks)")
    specs.add(rep["rmdiag"]["spec_sha256"])
check(len(specs) == 1, "the same spec for every rank count")
code, _, err = run(["run", jp, "--resume"])
check(code == 0 and "auto is up to date (same spec), skipped" in err, f"--resume finds the same spec: {err}")
# the scheme is part of the spec: naming it gives the same spec, naming the other does not fit
jp2 = write_job(os.path.join(d, "named.json"), [{"name": "auto", "kind": "benchmark", "input": "rb2.h5",
                                                 "bootstrap": 0, "allow_missing": True, "scheme": "rewardbench-v2"}])
code, _, err = run(["run", jp2, "--resume"])
check(code == 0 and "auto is up to date (same spec), skipped" in err,
      f"the scheme taken from the input and the same scheme named are one spec: {err}")
jp3 = write_job(os.path.join(d, "v1.json"), [{"name": "v1", "kind": "benchmark", "input": "rb2.h5",
                                              "bootstrap": 0, "scheme": "rewardbench-v1"}], output_dir="out_v1")
expect_input_error("v1 scheme named on a RewardBench 2 input", ["run", jp3], [
    'names subset "Factuality", which is not a subset of scheme rewardbench-v1 (the input\'s source attribute says '
    'rewardbench2: use "scheme": "rewardbench-v2", or leave "scheme" out to take it from the input)'],
    ranks=(0, 3), out_dir=os.path.join(d, "out_v1"))
jp4 = write_job(os.path.join(d, "prior.json"), [{"name": "p", "kind": "benchmark", "input": "rb2.h5",
                                                 "bootstrap": 0, "prior_sets": True}], output_dir="out_p")
expect_input_error("prior_sets with the scheme from the input", ["run", jp4], [
    '"prior_sets" applies to the rewardbench-v1 scheme only, and the scheme is rewardbench-v2: the job names no '
    '"scheme" and the input\'s source attribute says rewardbench2'], out_dir=os.path.join(d, "out_p"))
# a v1 import, and an input without the attribute, keep the rewardbench-v1 default
code, _, err = run(["import", "rewardbench", v1_rows, "-o", os.path.join(d, "rb1.h5")])
with h5py.File(os.path.join(d, "rb1.h5"), "a") as f:
    check(f["bench"].attrs["source"] == "rewardbench", "the v1 importer writes source = rewardbench")
    f.copy("bench", "plain")
    del f["plain"].attrs["source"]
for grp in ("/bench", "/plain"):
    jp5 = write_job(os.path.join(d, "v1default.json"), [{"name": "d", "kind": "benchmark", "input": "rb1.h5",
                                                         "group": grp, "bootstrap": 0, "allow_missing": True}],
                    output_dir="out_d")
    code, _, err = run(["run", jp5, "--force"])
    check(code == 0, f"{grp}: v1 default ({err.strip()})")
    rep = load_report(os.path.join(d, "out_d", "d.json"))
    check(rep["rmdiag"]["options"]["scheme"] == "rewardbench-v1", f"{grp}: {rep['rmdiag']['options']}")
    close(rep["result"]["models"][0]["subsets"]["hep-go"]["score"], 1.0, f"{grp}: hep-go 3/3")
done()
