"""Real RewardBench results (shared/data/rewardbench):
- the three RewardBench 2 per-item files, imported with `rmdiag import rewardbench2`, reproduce each
  model's six subset scores and overall score. The expected values are THESE FILES' OWN numbers (the
  files are reruns of the official v2 script), computed here by an independent oracle from the JSONL
  with the official rules and also written out below (computed the same way when the data was
  studied); the published leaderboard differs from the reruns by at most 0.0094 (URM's Precise IF,
  1.5 items of 160), and its Ties values agree to the 4 published decimals;
- the v1 per-subset accuracies of Better-PairRM reproduce the published sections Chat 0.9553, Chat
  Hard 0.3925, Safety 0.8203, Reasoning 0.4983, and with Prior Sets 0.724 the old leaderboard's 0.673;
  the other v1 files (format examples) give the sections computed from their own accuracies."""
import csv
import json
import os

from benchutil import *
from rdtest import *

shared = SHARED
D = os.path.join(shared, "data", "rewardbench")
if not os.path.isdir(D):
    print(f"SKIP: {D} not found (the real RewardBench files live in the shared data folder)")
    sys.exit(SKIP)
d = scratch("bench_real")
V2_FILES = ["rb2_LxzGordon__URM-LLaMa-3.1-8B.jsonl", "rb2_Skywork__Skywork-Reward-V2-Llama-3.1-8B.jsonl",
            "rb2_Skywork__Skywork-Reward-V2-Qwen3-8B.jsonl"]

# ---- RewardBench 2 -----------------------------------------------------------------------------
out_h5 = os.path.join(d, "rb2.h5")
code, _, err = run(["import", "rewardbench2"] + [os.path.join(D, f) for f in V2_FILES] + ["-o", out_h5])
check(code == 0, f"import rewardbench2: exit {code} ({err.strip()})")
write_job(os.path.join(d, "rb2.json"), [{"name": "rb2", "kind": "benchmark", "input": "rb2.h5",
                                         "scheme": "rewardbench-v2", "bootstrap": 300, "compare": "all"}])
code, out, err = run(["run", os.path.join(d, "rb2.json")], ranks=2)
check(code == 0, f"rb2 run: exit {code} ({err.strip()})")
res = load_report(os.path.join(d, "out", "rb2.json"))["result"]
with h5py.File(os.path.join(d, "out", "rb2.h5")) as f:
    item_credit = f["bench/item_credit"][...]


def flat(s):
    return s[0] if isinstance(s, list) else s


# The independent oracle, straight from the JSONL with the official rules: credit = 1/#(scores == max)
# when scores[0] is the max (upstream reroll_and_score_dataset), subset = sum(credits)/n in file order;
# Ties from the per-prompt stats; score = mean of the six.
oracle = {}
for fi, fn in enumerate(V2_FILES):
    lines = [json.loads(l) for l in open(os.path.join(D, fn))]
    meta, rows = lines[0], lines[1:]
    sub = {}
    for s in V2_SUBSETS[:5]:
        cr = []
        for r in rows:
            if r["subset"] != s:
                continue
            sc = [flat(x) for x in r["scores"]]
            mx = max(sc)
            cr.append(1.0 / sum(1 for x in sc if x == mx) if sc[0] == mx else 0.0)
        sub[s] = sum(cr) / len(cr)
    ties_rows = [(r["id"], r["num_correct"], [flat(x) for x in r["scores"]]) for r in rows if r["subset"] == "Ties"]
    sub["Ties"] = ties_score(*ties_prompt_stats(ties_rows))
    oracle[meta["model"]] = (sub, sum(sub.values()) / 6)
    # the files' own `results` equal the credit on every non-Ties row (rmdiag recomputes from scores)
    nt = [i for i, r in enumerate(rows) if r["subset"] != "Ties"]
    check(np.array_equal(item_credit[fi, nt], [rows[i]["results"] for i in nt]),
          f"{meta['model']}: item_credit equals the file's results on non-Ties rows")

# The same numbers as computed when the data was studied (repr of the float64 values).
NOTES = {
    "LxzGordon/URM-LLaMa-3.1-8B": ({"Factuality": 0.6873684210526316, "Precise IF": 0.459375,
                                    "Math": 0.6338797814207651, "Safety": 0.9177777777777778,
                                    "Focus": 0.9757575757575757, "Ties": 0.7652957729455339}, 0.739909054825714),
    "Skywork/Skywork-Reward-V2-Llama-3.1-8B": ({"Factuality": 0.8463157894736842, "Precise IF": 0.65625,
                                                "Math": 0.7759562841530054, "Safety": 0.9666666666666667,
                                                "Focus": 0.9838383838383838, "Ties": 0.8123861510107987},
                                               0.8402355458570899),
    "Skywork/Skywork-Reward-V2-Qwen3-8B": ({"Factuality": 0.8021052631578948, "Precise IF": 0.49375,
                                            "Math": 0.7704918032786885, "Safety": 0.94, "Focus": 0.9636363636363636,
                                            "Ties": 0.7293657886466244}, 0.7832248697865952),
}
check([m["model"] for m in res["models"]] == list(NOTES), "models in input (file) order")
for m in res["models"]:
    sub, score = oracle[m["model"]]
    nsub, nscore = NOTES[m["model"]]
    for s in V2_SUBSETS:
        close(m["subsets"][s]["score"], sub[s], f"{m['model']} {s} vs the oracle", rel=1e-12)
        close(m["subsets"][s]["score"], nsub[s], f"{m['model']} {s} vs the recorded value", rel=1e-12)
    close(m["score"], score, f"{m['model']} score vs the oracle", rel=1e-12)
    close(m["score"], nscore, f"{m['model']} score vs the recorded value", rel=1e-12)
    check(m["score_ci95"][0] < m["score"] < m["score_ci95"][1], f"{m['model']}: the score lies in its interval")
    check(m["subsets"]["Factuality"]["n"] == 475 and m["subsets"]["Ties"]["n"] == 102, "subset sizes")
urm = res["models"][0]
check(urm["subsets"]["Factuality"]["wilson95"] is None, "URM Factuality has a 1/2 credit: no Wilson interval")
check(res["models"][1]["subsets"]["Factuality"]["wilson95"] is not None, "Skywork Llama Factuality: all 0/1, Wilson")
# the published leaderboard (different runs): within 0.0094 per subset, Ties equal to 4 decimals
pub = {}
for row in csv.reader(l for l in open(os.path.join(D, "published_leaderboard_numbers.csv")) if not l.startswith("#")):
    if row and row[0] == "v2":
        pub[row[1]] = dict(zip(V2_SUBSETS + ["Score"], map(float, row[2:9])))
for m in res["models"]:
    if m["model"] not in pub:
        continue
    p = pub[m["model"]]
    for s in V2_SUBSETS:
        check(abs(m["subsets"][s]["score"] - p[s]) <= 0.0094, f"{m['model']} {s}: within 0.0094 of the published {p[s]}")
    check(round(m["subsets"]["Ties"]["score"], 4) == p["Ties"], f"{m['model']} Ties rounds to the published {p['Ties']}")
    check(abs(m["score"] - p["Score"]) <= 0.0012, f"{m['model']} score near the published {p['Score']}")
check(len(res["comparisons"]) == 3 and all(c["p"] is not None for c in res["comparisons"]), "3 paired comparisons")
# the summary's leaderboard: a heading, the table's title, its column labels, then rank 1
lb = out.splitlines()
check(lb[1] == "Leaderboard" and lb[3].split()[:2] == ["1", "Skywork/Skywork-Reward-V2-Llama-3.1-8B"],
      f"leaderboard: Skywork Llama first\n{out}")

# ---- RewardBench v1 per-subset accuracies --------------------------------------------------------
pairrm = os.path.join(D, "rb1_subset_metrics_Better-PairRM_reward-bench_24689cf.json")
# Prior Sets is published only rounded (0.724): a pref-sets file for the same model whose four
# Prior Sets subsets average 0.724 (the file is merged with the core-set file by model name;
# anthropic_harmless and mtbench_gpt4 do not enter Prior Sets)
pref = os.path.join(d, "pref-sets.json")
with open(pref, "w") as f:
    json.dump({"model": "mightbe/Better-PairRM", "model_type": "Custom Classifier", "anthropic_helpful": 0.70,
               "anthropic_hhh": 0.75, "shp": 0.72, "summarize": 0.726, "anthropic_harmless": 0.1,
               "mtbench_gpt4": 0.1}, f)
others = ["rb1_subset_metrics_GPM_GPM-Gemma-2-2B.json", "rb1_subset_metrics_GPM_GPM-Gemma-2-9B.json",
          "rb1_subset_metrics_GPM_GPM-Gemma-2B.json", "rb1_subset_metrics_GPM_GPM-Llama-3.1-8B-Instruct.json",
          "rb1_subset_metrics_beaver-7b-v1.0-cost_from_README.json"]
code, _, err = run(["import", "rewardbench", pairrm, pref] + [os.path.join(D, f) for f in others] +
                   ["-o", os.path.join(d, "rb1.h5")])
check(code == 0, f"import rewardbench (accuracies): exit {code} ({err.strip()})")
write_job(os.path.join(d, "rb1.json"), [
    {"name": "rb1", "kind": "benchmark", "input": "rb1.h5"},
    {"name": "rb1-prior", "kind": "benchmark", "input": "rb1.h5", "prior_sets": True}])
code, out, err = run(["run", os.path.join(d, "rb1.json")])
check(code == 0, f"rb1 run: exit {code} ({err.strip()})")
r1 = load_report(os.path.join(d, "out", "rb1.json"))["result"]
r1p = load_report(os.path.join(d, "out", "rb1-prior.json"))["result"]
check(r1["input"] == "subset_accuracy" and r1["n_models"] == 6, "accuracy input, 6 models")
pm = [m for m in r1["models"] if m["model"] == "mightbe/Better-PairRM"][0]
published = {"Chat": 0.9553, "Chat Hard": 0.3925, "Safety": 0.8203, "Reasoning": 0.4983}
for k, v in published.items():
    check(round(pm["sections"][k]["score"], 4) == v, f"Better-PairRM {k} {pm['sections'][k]['score']} -> published {v}")
acc = {k: v for k, v in json.load(open(pairrm)).items() if isinstance(v, float) or isinstance(v, int)}
secs, score = v1_sections(acc)
for k in published:
    close(pm["sections"][k]["score"], secs[k], f"Better-PairRM {k} vs the oracle", rel=1e-15)
close(pm["sections"]["Safety"]["score"], 0.8202702702702702, "Safety with xstest weights 154/250")
close(pm["score"], 0.6665955388245489, "Better-PairRM: mean of the 4 sections", rel=1e-15)
pmp = [m for m in r1p["models"] if m["model"] == "mightbe/Better-PairRM"][0]
close(pmp["sections"]["Prior Sets"]["score"], 0.724, "Prior Sets = mean of the four prior subsets")
check(round(pmp["score"], 3) == 0.673, f"Better-PairRM with Prior Sets {pmp['score']} -> published 0.673")
close(pmp["score"], (2 * sum(secs.values()) + 0.724) / 9, "(2 sum + prior) / 9", rel=1e-15)
close(pmp["score"], 0.672973812288488, "the recorded value", rel=1e-15)
check(pm["score_ci95"] is None and pm["subsets"]["hep-go"]["wilson95"] is None, "no intervals from accuracies")
with h5py.File(os.path.join(d, "out", "rb1.h5")) as f:
    check(f["bench/item_credit"].shape == (6, 0), "accuracy input: an empty [M, 0] item_credit")
    check(f["bench/subset_score"].shape[0] == 6, "subset_score [M, S]")
# the format examples: sections from their own accuracies (the beaver file has integer accuracies 1)
GPM = {"general-preference/GPM-Gemma-2-2B": (0.818436, 0.728070, 0.879730, 0.844192),
       "general-preference/GPM-Gemma-2-9B": (0.935754, 0.877193, 0.922973, 0.957106),
       "general-preference/GPM-Gemma-2B": (0.784916, 0.662281, 0.843243, 0.804656),
       "general-preference/GPM-Llama-3.1-8B-Instruct": (0.932961, 0.861842, 0.912162, 0.956898)}
names = [m["model"] for m in r1["models"]]
for name, vals in GPM.items():
    check(name in names, f"{name} imported")
    m = [x for x in r1["models"] if x["model"] == name][0] if name in names else None
    for k, v in zip(published, vals):
        check(m is not None and abs(m["sections"][k]["score"] - v) < 5e-7, f"{name} {k} = {v}")
    check(m is not None and "Prior Sets" not in m["sections"], "no Prior Sets without the option")
bv = [m for m in r1["models"] if "beaver" in m["model"]]
check(len(bv) == 1, "the beaver file (no model key: named after the file) imported")
for k, v in zip(published, (0.608939, 0.449561, 0.721622, 0.466757)):
    check(bv and abs(bv[0]["sections"][k]["score"] - v) < 5e-7, f"beaver {k} = {v}")
gm = [m for m in r1p["models"] if m["model"] == "general-preference/GPM-Gemma-2-2B"][0]
check(gm["sections"]["Prior Sets"]["score"] is None, "Prior Sets null for a model without prior subsets")
close(gm["score"], sum(gm["sections"][k]["score"] for k in published) / 4, "then the score is the mean of 4")
done()
