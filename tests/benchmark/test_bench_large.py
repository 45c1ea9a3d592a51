"""Full-size cross-checks against an independent numpy computation:
- a generated per-item RewardBench v1 set (2985 items, the real subset names and sizes, items in
  shuffled order, scores rounded so that exact ties occur), written in the shapes RewardBench uses
  (objects of parallel arrays with integer ids and one-element-list scores, JSON rows with a metadata
  line, rows in another order, rows with only `results` as generative judges write, 0.5 included),
  imported with `rmdiag import rewardbench` and scored under rewardbench-v1 on 2 ranks: credits,
  subset accuracies, Wilson intervals, sections, scores, and the bootstrap intervals and paired
  comparisons replayed from rmdiag's draws;
- the generated RewardBench 2 set of the shared generator (50 models x 1865 items, Ties prompts):
  every subset score (Ties composite included) and every model's score."""
import json
import os
import subprocess

from benchutil import *
from rdtest import *

d = scratch("bench_large")
rng = np.random.default_rng(11)
SEED = 3

# ---- v1 per-item files ---------------------------------------------------------------------------
names = [s for sec in V1_SECTIONS.values() for s, _ in sec]
sub = np.repeat(np.arange(len(names)), [V1_SIZES[s] for s in names])
perm = rng.permutation(sub.size)
sub = sub[perm]
I = sub.size
ids = rng.choice(100000, I, replace=False)          # the dataset's own integer ids, not 0..I-1
M = 6
skill = np.array([0.9, 0.5, 0.2, 1.4, 0.7, 0.0])
ch = np.round(rng.normal(0, 1, (M, I)) + skill[:, None], 1)
rj = np.round(rng.normal(0, 1, (M, I)), 1)           # rounding to 0.1 makes exact ties
ch[5] = rj[5] = 0.25                                 # a constant model: every item a tie
results_only = rng.random(I) < 0.3                   # model 4: a generative judge on 30 % of the items
gen = rng.choice([0.0, 0.5, 1.0], I)
check(int((ch == rj).sum()) > 100, "the generated data has exact ties")
models = [f"org/rm-{k}" for k in range(M)]
paths = []
for k in range(M):
    p = os.path.join(d, f"m{k}.json" if k < 2 else f"m{k}.jsonl")
    paths.append(p)
    if k < 2:   # one object of parallel arrays, as run_rm.py saves it (sorted keys, indent 4)
        obj = {"chat_template": "tulu", "id": ids.tolist(), "model": models[k], "model_type": "Seq. Classifier",
               "results": (ch[k] > rj[k]).astype(int).tolist(), "subset": [names[s] for s in sub],
               "scores_chosen": [[x] if k == 1 else x for x in ch[k].tolist()],
               "scores_rejected": [[x] if k == 1 else x for x in rj[k].tolist()],
               "text_chosen": ["..."] * I, "text_rejected": ["..."] * I}
        with open(p, "w") as f:
            json.dump(obj, f, indent=4, sort_keys=True)
        continue
    order = np.arange(I) if k != 3 else rng.permutation(I)   # model 3's rows in another order
    with open(p, "w") as f:
        if k != 4:
            f.write(json.dumps({"_record": "metadata", "model": models[k], "model_type": "Seq. Classifier"}) + "\n")
        for i in order:
            row = {"id": int(ids[i]), "subset": names[sub[i]]}
            if k == 4 and results_only[i]:
                row.update(results=gen[i], model=models[k])
            else:
                row.update(scores_chosen=ch[k, i], scores_rejected=rj[k, i], model=models[k])
            f.write(json.dumps(row) + "\n")
h5 = os.path.join(d, "v1.h5")
code, _, err = run(["import", "rewardbench"] + paths + ["-o", h5])
check(code == 0, f"import: exit {code} ({err.strip()})")
with h5py.File(h5) as f:
    g = f["bench"]
    check(g["scores"].dtype == np.float64 and g["scores"].compression == "gzip" and g["scores"].chunks is not None,
          "scores stored as float64, chunked and compressed")
    check(list(g["model_names"].asstr()[...]) == models, "one model per file, in file order")
    check(g["given_credit"].shape == (M, I), "given_credit for the results-only rows")
    check([int(x) for x in g["item_id"].asstr()[...]] == ids.tolist(), "items in the first model's order, ids kept")

B = 60
write_job(os.path.join(d, "v1.json"), [{"name": "v1", "kind": "benchmark", "input": "v1.h5", "bootstrap": B,
                                        "compare": "all"}], seed=SEED)
code, out, err = run(["run", os.path.join(d, "v1.json")], ranks=2)
check(code == 0, f"v1 run: exit {code} ({err.strip()})")
res = load_report(os.path.join(d, "out", "v1.json"))["result"]
cred = (ch > rj).astype(np.float64)
cred[4, results_only] = gen[results_only]
with h5py.File(os.path.join(d, "out", "v1.h5")) as f:
    check(np.array_equal(f["bench/item_credit"][...], cred), "item_credit = the numpy credits (ties wrong)")
point = {}
for k, m in enumerate(res["models"]):
    check(m["model"] == models[k], "model order")
    acc = {}
    for j, s in enumerate(names):
        sel = sub == j
        acc[s] = cred[k, sel].sum() / sel.sum()
        x = m["subsets"][s]
        check(x["n"] == V1_SIZES[s], f"{s} n")
        close(x["score"], acc[s], f"{models[k]} {s}", rel=1e-15)
        binary = np.all((cred[k, sel] == 0) | (cred[k, sel] == 1))
        if binary:
            close(x["wilson95"], wilson(cred[k, sel].sum(), sel.sum()), f"{models[k]} {s} Wilson", rel=1e-12)
        else:
            check(x["wilson95"] is None, f"{models[k]} {s}: 0.5 credits, no Wilson interval")
    secs, score = v1_sections(acc)
    for s in secs:
        close(m["sections"][s]["score"], secs[s], f"{models[k]} {s}", rel=1e-15)
    close(m["score"], score, f"{models[k]} score", rel=1e-15)
    point[k] = score
check(res["models"][5]["score"] == 0, "constant model: every item a tie, score 0")
# replay the bootstrap: per replicate and subset, draws over the subset's items (item order)
members = {s: np.flatnonzero(sub == j) for j, s in enumerate(names)}
reps = np.empty((B, M))
for b in range(B):
    acc = [{} for _ in range(M)]
    for s in names:
        dr = members[s][replay_draws(SEED, "v1", s, b, members[s].size)]
        for k in range(M):
            acc[k][s] = cred[k, dr].sum() / dr.size
    for k in range(M):
        reps[b, k] = v1_sections(acc[k])[1]
for k in range(M - 1):
    close(res["models"][k]["score_ci95"], quantiles95(reps[:, k]), f"{models[k]} score_ci95 replayed", rel=1e-12)
comps = {(c["a"], c["b"]): c for c in res["comparisons"]}
check(len(comps) == M * (M - 1) // 2, "compare all: every pair once")
for a in range(M):
    for b in range(a + 1, M):
        c = comps[(models[a], models[b])]
        dl = reps[:, a] - reps[:, b]
        close(c["diff"], point[a] - point[b], f"diff {a}-{b}", rel=1e-12, abs_=1e-15)
        close(c["ci95"], quantiles95(dl), f"ci95 {a}-{b}", rel=1e-12, abs_=1e-15)
        close(c["p"], min(1.0, 2 * min((dl <= 0).sum(), (dl >= 0).sum()) / B), f"p {a}-{b}")

# ---- many models: every lane layout (0/1 credits in bytes, fractions in int16, others in float64) ----
# 150 models (lanes in blocks of 64 and 128); subset "bin" has 0/1 credits (strict), "frac" partial
# tie credits (tie-credit over 4 completions with many ties), "free" credits given directly as
# arbitrary fractions (not p/k with small k: summed as float64 in draw order)
M2, per = 150, {"bin": 140, "frac": 90, "free": 60}
rows = []
for s_, n in per.items():
    for _ in range(n):
        v = rng.normal(0, 1, (M2, 4))
        rows.append((list(per).index(s_), 1, np.round(v * 2) / 2 if s_ == "frac" else v))  # ties only in "frac"
isub2, off2, nc2, sc2 = items_from_lists([(a, k, list(v)) for a, k, v in rows])
I2 = len(rows)
given = np.full((M2, I2), np.nan)
free = np.flatnonzero(np.asarray(isub2) == 2)
given[:, free] = rng.uniform(0, 1, (M2, free.size))
names2 = [f"m{k:03d}" for k in range(M2)]
write_bench(os.path.join(d, "lanes.h5"), names2, list(per), isub2, off2, nc2, sc2, given=given)
sch = {"sections": {"A": {"bin": 2, "frac": 1}, "B": {"free": 1}}, "item_rule": "tie-credit"}
write_job(os.path.join(d, "lanes.json"), [{"name": "lanes", "kind": "benchmark", "input": "lanes.h5",
                                           "scheme": sch, "bootstrap": 20}], seed=SEED)
code, out, err = run(["run", os.path.join(d, "lanes.json"), "--quiet"], ranks=2)
check(code == 0, f"lanes: exit {code} ({err.strip()})")
r = load_report(os.path.join(d, "out", "lanes.json"))["result"]
cr2 = credits(sc2, off2, nc2, "tie-credit")
cr2[:, free] = given[:, free]
check(0 < ((cr2 > 0) & (cr2 < 1))[:, np.asarray(isub2) == 1].sum(), "partial tie credits present")
check(np.isin(cr2[:, np.asarray(isub2) == 0], [0, 1]).all(), "subset bin: 0/1 credits only")
memb = {j: np.flatnonzero(np.asarray(isub2) == j) for j in range(3)}
reps2 = np.empty((20, M2))
for b in range(20):
    dr = {j: memb[j][replay_draws(SEED, "lanes", s_, b, memb[j].size)] for j, s_ in enumerate(per)}
    for k in range(M2):
        acc = {s_: cr2[k, dr[j]].sum() / dr[j].size for j, s_ in enumerate(per)}
        reps2[b, k] = custom_sections(acc, sch["sections"])[1]
for k, m in enumerate(r["models"]):
    acc = {s_: cr2[k, memb[j]].sum() / memb[j].size for j, s_ in enumerate(per)}
    for s_ in per:
        close(m["subsets"][s_]["score"], acc[s_], f"lanes {names2[k]} {s_}", rel=1e-13)
    close(m["score"], custom_sections(acc, sch["sections"])[1], f"lanes {names2[k]} score", rel=1e-13)
    close(m["score_ci95"], quantiles95(reps2[:, k]), f"lanes {names2[k]} score_ci95 replayed", rel=1e-12)

# ---- the shared generator's RewardBench 2 set (and its v1 set, float32, mapped from the file) -----
shared = SHARED
gen_py = os.path.join(shared, "peers", "gen_inputs.py")
if not os.path.isfile(gen_py):
    print(f"SKIP (part): {gen_py} not found")
    done()
gi = os.path.join(d, "gen.h5")
subprocess.run([sys.executable, gen_py, gi, "--kinds", "bench,bench2"], check=True, stdout=subprocess.DEVNULL)
write_job(os.path.join(d, "gen.json"), [
    {"name": "g2", "kind": "benchmark", "input": "gen.h5", "group": "/bench2", "scheme": "rewardbench-v2", "bootstrap": 0},
    {"name": "g1", "kind": "benchmark", "input": "gen.h5", "bootstrap": 0}])
code, out, err = run(["run", os.path.join(d, "gen.json")], ranks=3)
check(code == 0, f"generated inputs: exit {code} ({err.strip()})")
with h5py.File(gi) as f:
    for grp, job, scheme in (("bench2", "g2", "v2"), ("bench", "g1", "v1")):
        g = f[grp]
        subs = list(g["subset_names"].asstr()[...])
        isub, off, nc = g["item_subset"][...], g["item_offset"][...], g["item_n_correct"][...]
        S_ = g["scores"][...].astype(np.float64)
        ids2 = list(g["item_id"].asstr()[...]) if "item_id" in g else None
        r = load_report(os.path.join(d, "out", job + ".json"))["result"]
        cr = credits(S_, off, nc, "tie-credit" if scheme == "v2" else "strict")
        for k, m in enumerate(r["models"]):
            acc = {}
            for j, s in enumerate(subs):
                sel = np.flatnonzero(isub == j)
                if s == "Ties" and scheme == "v2":
                    rows = [(ids2[i], nc[i], S_[k, off[i]:off[i + 1]].tolist()) for i in sel]
                    acc[s] = ties_score(*ties_prompt_stats(rows))
                else:
                    acc[s] = cr[k, sel].sum() / sel.size
                close(m["subsets"][s]["score"], acc[s], f"{job} {m['model']} {s}", rel=1e-12)
            score = sum(acc.values()) / 6 if scheme == "v2" else v1_sections(acc)[1]
            close(m["score"], score, f"{job} {m['model']} score", rel=1e-12)
done()
