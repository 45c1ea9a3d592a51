"""`rmdiag import rewardbench` / `rewardbench2` on the shapes RewardBench writes: the v2 object of
parallel arrays and JSONL with plain-number scores; a JSON list of rows; per-item files of one model
split in two (core set + prior sets) merged by model name; rows with only `results` (credits given
directly, 0.5 for an unparsed judgement) scored without a Wilson interval; the rewardbench CLI's
summary with `extra_results`; --group; the written layout (float64, chunked, compressed)."""
import json
import os

from benchutil import *
from rdtest import *

d = scratch("import_rewardbench")


def write(name, text):
    p = os.path.join(d, name)
    with open(p, "w") as f:
        f.write(text)
    return p


# ---- v2: parallel arrays (official eval-set-scores shape) and JSONL with plain numbers ----------
items = [("0", "Math", 1, [2.0, 1.0, 2.0, 0.0]), ("1", "Math", 1, [3.0, 1.0, 1.0, 1.0]),
         ("tied:0", "Ties", 2, [5.0, 4.0, 1.0]), ("ref:0", "Ties", 1, [3.0, 2.0])]
pa = write("x.json", json.dumps({"chat_template": "t", "id": [i[0] for i in items], "model": "org/X",
                                 "model_type": "Seq. Classifier", "num_correct": [i[2] for i in items],
                                 "results": [1, 0, None, None], "scores": [[[v] for v in i[3]] for i in items],
                                 "subset": [i[1] for i in items], "text": [["t"] * len(i[3]) for i in items]},
                                indent=4, sort_keys=True))
rows = [{"id": i[0], "subset": i[1], "num_correct": i[2], "scores": [v + 1 for v in i[3]]} for i in items[::-1]]
jl = write("y.jsonl", "\n".join(json.dumps(r) for r in rows) + "\n")   # no metadata line: named after the file
out = os.path.join(d, "v2.h5")
code, so, err = run(["import", "rewardbench2", pa, jl, "--group", "/rb2", "-o", out])
check(code == 0, f"v2 import: exit {code} ({err.strip()})")
with h5py.File(out) as f:
    g = f["rb2"]
    check(list(g["model_names"].asstr()[...]) == ["org/X", "y"], "model names: the file's \"model\", else its name")
    check(list(g["subset_names"].asstr()[...]) == ["Math", "Ties"], "subsets in order of appearance")
    check(g["item_offset"][...].tolist() == [0, 4, 8, 11, 13], "offsets from the numbers of scores")
    check(g["item_n_correct"][...].tolist() == [1, 1, 2, 1], "num_correct kept")
    check(g["scores"].dtype == np.float64 and g["scores"].compression == "gzip", "float64 scores, compressed")
    sc = g["scores"][...]
    check(sc[0].tolist() == [v for i in items for v in i[3]], "model X's scores in item order")
    check(sc[1].tolist() == [v + 1 for i in items for v in i[3]], "model y aligned by (subset, id), not by row order")
    check(list(g["item_id"].asstr()[...]) == [i[0] for i in items], "item ids kept")
    check("given_credit" not in g, "no given credits in v2")
write_job(os.path.join(d, "v2.json"), [{"name": "v2", "kind": "benchmark", "input": "v2.h5", "group": "/rb2",
                                        "bootstrap": 0, "scheme": {"sections": {"Math": {"Math": 1},
                                                                                "Ties": {"Ties": 1}},
                                                                   "item_rule": "tie-credit", "ties_subset": "Ties"}}])
code, so, err = run(["run", os.path.join(d, "v2.json")])
check(code == 0, f"v2 run: exit {code} ({err.strip()})")
r = load_report(os.path.join(d, "out", "v2.json"))["result"]
# Math: [2, 1, 2, 0] -> 1/2 and [3, 1, 1, 1] -> 1: 3/4. Ties (one prompt with both rows): tied gap 4-1 = 3,
# spread 1, accurate; ref gap 1; 0.3 + 0.3 + 0.2 [3 > 1] + 0.2 [min(1, 3) > 1: no] + 0.01 tanh(1/1 - 1 = 0)
close(r["models"][0]["subsets"]["Math"]["score"], 0.75, "Math 3/4")
close(r["models"][0]["subsets"]["Ties"]["score"], 0.3 + 0.3 + 0.2 + 0.0 + 0.0, "Ties composite via ties_subset")

# ---- v1: one model split in two files (core + prior sets), rows with only results, a JSON list ---
core = [{"id": 1, "subset": "hep-go", "scores_chosen": 2.0, "scores_rejected": 1.0},
        {"id": 2, "subset": "hep-go", "scores_chosen": [1.0], "scores_rejected": [1.0]}]
prior = [{"id": 7, "subset": "shp", "scores_chosen": 0.5, "scores_rejected": 0.0}]
f1 = write("a-core.jsonl", json.dumps({"_record": "metadata", "model": "A"}) + "\n" + "\n".join(map(json.dumps, core)))
f2 = write("a-prior.json", json.dumps([dict(r, model="A") for r in prior], indent=2))  # a JSON list of rows
gen = [{"id": 1, "subset": "hep-go", "results": 1}, {"id": 2, "subset": "hep-go", "results": 0.5},
       {"id": 7, "subset": "shp", "results": 0}]
f3 = write("judge.jsonl", json.dumps({"_record": "metadata", "model": "J"}) + "\n" + "\n".join(map(json.dumps, gen)))
out = os.path.join(d, "v1.h5")
code, so, err = run(["import", "rewardbench", f1, f2, f3, "-o", out])
check(code == 0, f"v1 import: exit {code} ({err.strip()})")
check("3 files -> 2 models" in err, f"import summary on stderr: {err.strip()}")
with h5py.File(out) as f:
    g = f["bench"]
    check(list(g["model_names"].asstr()[...]) == ["A", "J"], "files of model A merged")
    check(g["scores"][...].tolist() == [[2, 1, 1, 1, 0.5, 0], [0, 0, 0, 0, 0, 0]], "scores (0 where only results)")
    gc = g["given_credit"][...]
    check(np.isnan(gc[0]).all() and gc[1].tolist() == [1, 0.5, 0], "given_credit: NaN where scores decide")
write_job(os.path.join(d, "v1.json"), [{"name": "v1", "kind": "benchmark", "input": "v1.h5", "bootstrap": 0,
                                        "allow_missing": True, "prior_sets": True}])
code, so, err = run(["run", os.path.join(d, "v1.json")])
check(code == 0, f"v1 run: exit {code} ({err.strip()})")
r = load_report(os.path.join(d, "out", "v1.json"))["result"]
A, J = r["models"]
close(A["subsets"]["hep-go"]["score"], 0.5, "A hep-go: 1 right, 1 tie (wrong)")
close(J["subsets"]["hep-go"]["score"], 0.75, "J hep-go: credits 1 and 0.5 given directly")
check(J["subsets"]["hep-go"]["wilson95"] is None and A["subsets"]["hep-go"]["wilson95"] is not None,
      "Wilson only for 0/1 credits")
close(A["sections"]["Prior Sets"]["score"], 1.0, "A Prior Sets from the merged file")
# score with Prior Sets: A Reasoning = hep-go 1/2 (the only Reasoning subset present); (2 * 0.5 + 1) / 3
close(A["score"], (2 * 0.5 + 1.0) / 3, "A score = (2 Reasoning + Prior Sets) / 3 over the sections present")

# ---- per-subset accuracies: the rewardbench CLI summary with extra_results --------------------------
cli = write("cli.json", json.dumps({"accuracy": 0.8, "num_prompts": 2985, "model": "C", "ref_model": None,
                                    "extra_results": {"hep-go": 0.75, "shp": 1}}))
plain = write("plain.json", json.dumps({"hep-go": 0.5, "chat_template": "tulu"}))
out = os.path.join(d, "acc.h5")
code, so, err = run(["import", "rewardbench", cli, plain, "-o", out])
check(code == 0, f"accuracy import: exit {code} ({err.strip()})")
with h5py.File(out) as f:
    g = f["bench"]
    check(list(g["model_names"].asstr()[...]) == ["C", "plain"], "models")
    a = g["subset_accuracy"][...]
    check(list(g["subset_names"].asstr()[...]) == ["hep-go", "shp"] and a[0].tolist() == [0.75, 1.0] and
          a[1, 0] == 0.5 and np.isnan(a[1, 1]), f"accuracies, NaN where a model has none: {a.tolist()}")
code, so, err = run(["import", "rewardbench2", "--help"])
check(code == 0 and "num_correct" in so and "metadata" in so, "import rewardbench2 --help")
code, so, err = run(["import", "--help"])
check(code == 0 and "rewardbench2" in so and "rewardbench " in so, "import --help lists the formats")
done()
