"""Paired comparisons per section and the Holm adjustment (docs/reference.md, 'benchmark report',
*Bootstrap and comparisons*): with "compare_sections" every pair also compares each section, with the
interval and p-value replayed here from rmdiag's documented draws; with "adjust": "holm" every p-value
of the comparisons (scores and sections, one family) gets p_holm, checked against an independent
statement of Holm's step-down procedure; results are the same on 1 and 3 ranks; without the new options
the comparisons and the effective options are exactly those of a job that never had them; misuse is
refused (exit 2)."""
import os

from benchutil import *
from rdtest import *

d = scratch("bench_cmp_sections")
SEED = 11
B = 60
rng = np.random.default_rng(4)
# three models on six v1 subsets (every section has one), 0/1 credits from random scores
SUBS = ["alpacaeval-easy", "llmbar-natural", "xstest-should-refuse", "math-prm", "hep-cpp", "mt-bench-med"]
per_item = []
for s in range(len(SUBS)):
    for _ in range(5 + 2 * s):
        per_item.append((s, 1, [list(rng.integers(0, 4, 2).astype(float)) for _ in range(3)]))
isub, off, nc, sc = items_from_lists(per_item)
write_bench(os.path.join(d, "in.h5"), ["A", "B", "C"], SUBS, isub, off, nc, sc)


def run_job(tag, ranks=0, **opts):
    """The job "cs" (every variant has the same name, so the same draws) into out_TAG."""
    job = dict(name="cs", kind="benchmark", input="in.h5", allow_missing=True, bootstrap=B)
    job.update(opts)
    jp = write_job(os.path.join(d, tag + ".json"), [job], output_dir="out_" + tag, seed=SEED)
    code, out, err = run(["run", jp], ranks=ranks)
    check(code == 0, f"{tag}: exit {code} ({err.strip()})")
    return load_report(os.path.join(d, "out_" + tag, "cs.json")) if code == 0 else None


rep = run_job("cs", compare="all", compare_sections=True, adjust="holm")
rep3 = run_job("cs3", ranks=3, compare="all", compare_sections=True, adjust="holm")
check(rep and rep3 and rep["result"] == rep3["result"], "the same result on 1 and 3 ranks")
res = rep["result"]
check(rep["rmdiag"]["options"]["compare_sections"] is True and rep["rmdiag"]["options"]["adjust"] == "holm",
      f"the new options are in the effective options: {rep['rmdiag']['options']}")

# replay: section and score replicates of every model from the documented draws
with h5py.File(os.path.join(d, "out_cs", "cs.h5")) as f:
    cred = f["bench/item_credit"][...]
items = {s: [i for i, (x, _, _) in enumerate(per_item) if x == k] for k, s in enumerate(SUBS)}
SECS = list(V1_SECTIONS)
reps = {m: {k: [] for k in SECS + ["score"]} for m in range(3)}
for b in range(B):
    draws = {s: np.asarray(items[s])[replay_draws(SEED, "cs", s, b, len(items[s]))] for s in SUBS}
    for m in range(3):
        secs, score = v1_sections({s: cred[m, draws[s]].sum() / len(draws[s]) for s in SUBS})
        for k in SECS:
            reps[m][k].append(secs[k])
        reps[m]["score"].append(score)
names = {"A": 0, "B": 1, "C": 2}
points = {m["model"]: m for m in res["models"]}
pairs = [("A", "B"), ("A", "C"), ("B", "C")]
check([(c["a"], c["b"]) for c in res["comparisons"]] == pairs, "compare all: the pairs in input order")
family = []
for c in res["comparisons"]:
    a, b = names[c["a"]], names[c["b"]]
    check(list(c) == ["a", "b", "diff", "ci95", "p", "p_holm", "resamples", "p_resolution", "sections"], f"keys {list(c)}")
    check(list(c["sections"]) == SECS, f"sections in scheme order: {list(c['sections'])}")
    for k, x in [("score", c)] + [(k, c["sections"][k]) for k in SECS]:
        pa = points[c["a"]]["score"] if k == "score" else points[c["a"]]["sections"][k]["score"]
        pb = points[c["b"]]["score"] if k == "score" else points[c["b"]]["sections"][k]["score"]
        close(x["diff"], pa - pb, f"{c['a']}-{c['b']} {k} diff")
        dl = np.array(reps[a][k]) - np.array(reps[b][k])
        close(x["ci95"], quantiles95(dl), f"{c['a']}-{c['b']} {k} ci95 replayed")
        close(x["p"], min(1.0, 2 * min((dl <= 0).sum(), (dl >= 0).sum()) / B), f"{c['a']}-{c['b']} {k} p replayed")
        check(x["resamples"] == B, f"{k} resamples")
        family.append((x["p"], x["p_holm"]))


def holm(ps):
    """Holm (1979), as usually stated: reject H_(1..k) while p_(i) <= alpha / (m - i + 1); the adjusted
    p-value of the i-th smallest is the smallest alpha at which it is rejected."""
    m = len(ps)
    order = sorted(range(m), key=lambda i: ps[i])
    out = [None] * m
    for rank, i in enumerate(order):
        out[i] = min(1.0, max((m - j) * ps[order[j]] for j in range(rank + 1)))
    return out


want = holm([p for p, _ in family])
for (p, ph), w in zip(family, want):
    close(ph, w, f"p_holm of p = {p}", rel=1e-15)
    check(ph >= p, "p_holm >= p")
check(res["adjustment"] == {"method": "holm", "family": 15}, f"adjustment: {res.get('adjustment')}")
check(len(set(p for p, _ in family)) > 3 and min(p for p, _ in family) < 0.5, f"the p-values vary: {family}")
# Holm on a hand-worked family: p = 0.01, 0.04, 0.03, 0.2 -> 0.04, 0.09, 0.09, 0.2 (ties get equal values)
close(holm([0.01, 0.04, 0.03, 0.2]), [0.04, 0.09, 0.09, 0.2], "the oracle on a hand-worked family", rel=1e-15)

# sections without adjustment, adjustment without sections
r = run_job("s_only", compare=[["C", "A"]], compare_sections=True)["result"]
c = r["comparisons"][0]
check("p_holm" not in c and "adjustment" not in r and list(c["sections"]) == SECS, f"sections only: {c}")
dl = np.array(reps[2]["Safety"]) - np.array(reps[0]["Safety"])
close(c["sections"]["Safety"]["ci95"], quantiles95(dl), "C-A Safety ci95 (the listed order)")
r = run_job("h_only", compare="all", adjust="holm")["result"]
check(all("sections" not in c for c in r["comparisons"]) and r["adjustment"]["family"] == 3, f"holm only: {r}")
tot = [c["p"] for c in r["comparisons"]]
close([c["p_holm"] for c in r["comparisons"]], holm(tot), "holm over the three score comparisons", rel=1e-15)

# without the new options the comparisons are exactly the old ones; "adjust": "none" is the default
plain = run_job("plain", compare="all")
r = plain["result"]
check(all(list(c) == ["a", "b", "diff", "ci95", "p", "resamples", "p_resolution"] for c in r["comparisons"]) and "adjustment" not in r,
      f"no new keys without the options: {r['comparisons'][0]}")
check("compare_sections" not in plain["rmdiag"]["options"] and "adjust" not in plain["rmdiag"]["options"],
      "the effective options (and so spec_sha256) are unchanged without them")
for c0, c1 in zip(r["comparisons"], res["comparisons"]):
    check({k: c0[k] for k in c0} == {k: c1[k] for k in c0}, f"the score comparison is the same with sections: {c0}")
none = run_job("none", compare="all", adjust="none")
check(none["result"]["comparisons"] == r["comparisons"] and "adjustment" not in none["result"],
      "adjust none: no p_holm")

# bootstrap 0: differences only, p and p_holm null, an empty family
r = run_job("b0", compare="all", compare_sections=True, adjust="holm", bootstrap=0)["result"]
c = r["comparisons"][0]
check(c["p"] is None and c["p_holm"] is None and c["sections"]["Chat"]["ci95"] is None
      and c["sections"]["Chat"]["diff"] is not None and r["adjustment"]["family"] == 0, f"bootstrap 0: {c}")

# misuse: the options without comparisons, an unknown method
for opts, msg in (({"compare_sections": True}, '"compare_sections" applies to comparisons'),
                  ({"adjust": "holm"}, '"adjust" applies to comparisons'),
                  ({"adjust": "bonferroni", "compare": "all"}, '"adjust"')):
    job = dict(name="bad", kind="benchmark", input="in.h5", **opts)
    code, _, err = run(["validate", write_job(os.path.join(d, "bad.json"), [job])])
    check(code == 2 and msg in err, f"{opts}: exit 2 naming the problem: {code} {err}")

done()
