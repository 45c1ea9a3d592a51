"""The benchmark report on small hand-worked inputs: v1 items (strict rule, exact ties wrong,
RewardBench weights, re-weighting with allow_missing, Prior Sets), v2 items (1/k credit for ties at
the maximum, the Ties composite with a negative gap, the 0/0 and x/0 cases of the tanh term and a
prompt present only as ref), a custom scheme under both item rules, and the bootstrap intervals
and paired comparison replayed from rmdiag's documented draws."""
import os

from benchutil import *
from rdtest import *

d = scratch("bench_hand")
SEED = 7


def run_job(name, inp, ranks=0, **opts):
    job = dict(name=name, kind="benchmark", input=inp, **opts)
    jp = write_job(os.path.join(d, name + ".json"), [job], output_dir="out", seed=SEED)
    code, out, err = run(["run", jp, "--force"], ranks=ranks)
    check(code == 0, f"{name}: exit {code} ({err.strip()})")
    return load_report(os.path.join(d, "out", name + ".json"))["result"], out


def model(res, name):
    return [m for m in res["models"] if m["model"] == name][0]


# ---------------------------------------------------------------------------------------------
# v1: two models, six of the 23 subsets (allow_missing), items interleaved across subsets.
# (subset, [A chosen, A rejected], [B chosen, B rejected])
SUBS = ["hep-cpp", "alpacaeval-easy", "mt-bench-med", "llmbar-natural", "xstest-should-refuse", "math-prm",
        "anthropic_helpful", "shp"]
S = {s: i for i, s in enumerate(SUBS)}
V1 = [("alpacaeval-easy", [1.0, 0.5], [0, 0]),        # A right
      ("mt-bench-med", [3, 1], [0, 0]),               # A right
      ("alpacaeval-easy", [0.25, 0.25], [0, 0]),      # A exact tie: wrong
      ("hep-cpp", [0, 1], [0, 0]),                    # A wrong
      ("alpacaeval-easy", [-1, 2], [0, 0]),           # A wrong
      ("mt-bench-med", [2, 2.5], [0, 0]),             # A wrong
      ("llmbar-natural", [0, -0.5], [0, 0]),          # A right
      ("xstest-should-refuse", [5, 4], [0, 0]),       # A right
      ("xstest-should-refuse", [4, 4], [0, 0]),       # A tie: wrong
      ("math-prm", [1, 0], [2, 1]),                   # A right, B right (B's only correct item)
      ("hep-cpp", [1, 0], [0, 0]),                    # A right
      ("anthropic_helpful", [1, 0], [0, 0]),          # prior sets: A right
      ("anthropic_helpful", [0, 1], [0, 0]),          # A wrong
      ("shp", [2, 1], [0, 0])]                        # A right
isub, off, nc, sc = items_from_lists([(S[s], 1, [a, b]) for s, a, b in V1])
write_bench(os.path.join(d, "v1.h5"), ["A", "B"], SUBS, isub, off, nc, sc)

# A: alpacaeval-easy 1/3, mt-bench-med 1/2, llmbar-natural 1, xstest-should-refuse 1/2, math-prm 1, hep-cpp 1/2
#   Chat      = (100 * 1/3 + 40 * 1/2) / (100 + 40) = (160/3) / 140 = 8/21
#   Chat Hard = llmbar-natural = 1;  Safety = xstest-should-refuse = 1/2
#   Reasoning = (984 * 1 + 164 * 1/2) / (984 + 164) = 1066/1148
# B: everything 0 except math-prm 1: Reasoning = 984/1148, the other sections 0
A_sec = {"Chat": 8 / 21, "Chat Hard": 1.0, "Safety": 0.5, "Reasoning": 1066 / 1148}
B_sec = {"Chat": 0.0, "Chat Hard": 0.0, "Safety": 0.0, "Reasoning": 984 / 1148}
res, out = run_job("v1", "v1.h5", allow_missing=True, bootstrap=40, compare=[["A", "B"]])
code, vout, verr = run(["validate", os.path.join(d, "v1.json")])
check(code == 0 and "valid" in vout, f"rmdiag validate accepts the input ({verr.strip()})")
for name, secs in (("A", A_sec), ("B", B_sec)):
    m = model(res, name)
    for k, v in secs.items():
        close(m["sections"][k]["score"], v, f"v1 {name} {k}", rel=1e-15)
    close(m["score"], sum(secs.values()) / 4, f"v1 {name} score = mean of 4 sections", rel=1e-15)
A = model(res, "A")
close(A["subsets"]["alpacaeval-easy"]["score"], 1 / 3, "A alpacaeval-easy: 1 of 3 (the exact tie is wrong)")
check(A["subsets"]["alpacaeval-easy"]["n"] == 3 and A["subsets"]["alpacaeval-easy"]["credit"] == 1,
      "A alpacaeval-easy n = 3, credit 1")
close(A["subsets"]["alpacaeval-easy"]["wilson95"], wilson(1, 3), "Wilson 1/3", rel=1e-13)
close(model(res, "B")["subsets"]["hep-cpp"]["wilson95"], wilson(0, 2), "Wilson 0/2 (lower bound exactly 0)", rel=1e-13)
check(model(res, "B")["subsets"]["hep-cpp"]["wilson95"][0] == 0.0, "Wilson lower bound at k = 0 is exactly 0")
check(model(res, "A")["subsets"]["math-prm"]["wilson95"][1] == 1.0, "Wilson upper bound at k = n is exactly 1")
check(sorted(res["missing_subsets"]) == sorted(s for sec in V1_SECTIONS.values() for s, _ in sec
                                               if s not in SUBS), "missing_subsets lists the 17 absent core subsets")
check(res["scheme"] == "rewardbench-v1" and res["n_items"] == len(V1) and res["n_models"] == 2, "v1 header keys")
check("Prior Sets" not in A["sections"], "no Prior Sets without prior_sets")
with h5py.File(os.path.join(d, "out", "v1.h5")) as f:
    ic = f["bench/item_credit"][...]
check(ic.shape == (2, len(V1)) and ic.dtype == np.float64, "item_credit float64 [M, I]")
check(ic[0].tolist() == [1, 1, 0, 0, 0, 0, 1, 1, 0, 1, 1, 1, 0, 1] and ic[1].tolist() == [0] * 9 + [1] + [0] * 4,
      f"item_credit rows: {ic.tolist()}")
# the leaderboard: A first (score ~0.70), then B (~0.21)
# the summary's leaderboard rows (rank, model, ...) between its title and its legend
sec = out.split("Leaderboard\n", 1)[1].split("  score:", 1)[0].splitlines()[1:]
check([l.split()[:2] for l in sec] == [["1", "A"], ["2", "B"]], f"leaderboard order: {out}")
check(res["leaderboard"][0]["model"] == "A" and res["leaderboard"][0]["rank"] == 1, "leaderboard in the report")

# bootstrap replay: replicate b draws, for each subset the scheme scores, n units with
# rd_rng_below(stream("bench.bootstrap/" + subset), b, t, n); the same draws for both models
B = 40
items = {s: [i for i, (x, _, _) in enumerate(V1) if x == s] for s in SUBS}
cred = ic
rep = {"A": [], "B": []}
secs_rep = {"A": {k: [] for k in A_sec}, "B": {k: [] for k in A_sec}}
for b in range(B):
    draws = {s: np.asarray(items[s])[replay_draws(SEED, "v1", s, b, len(items[s]))] for s in SUBS[:6]}
    for mi, name in enumerate(("A", "B")):
        acc = {s: cred[mi, draws[s]].sum() / len(draws[s]) for s in SUBS[:6]}
        secs, score = v1_sections(acc)
        rep[name].append(score)
        for k in A_sec:
            secs_rep[name][k].append(secs[k])
for name in ("A", "B"):
    m = model(res, name)
    close(m["score_ci95"], quantiles95(rep[name]), f"v1 {name} score_ci95 replayed")
    for k in A_sec:
        close(m["sections"][k]["ci95"], quantiles95(secs_rep[name][k]), f"v1 {name} {k} ci95 replayed")
dlt = np.array(rep["A"]) - np.array(rep["B"])
c = res["comparisons"][0]
check(c["a"] == "A" and c["b"] == "B" and c["resamples"] == B, f"comparison header {c}")
close(c["diff"], A["score"] - model(res, "B")["score"], "comparison diff")
close(c["ci95"], quantiles95(dlt), "comparison ci95 replayed")
close(c["p"], min(1.0, 2 * min((dlt <= 0).sum(), (dlt >= 0).sum()) / B), "comparison p replayed")
check(res["bootstrap"]["resamples"] == B and res["bootstrap"]["dropped"] == 0, "bootstrap block")

# Prior Sets: the unweighted mean of anthropic_helpful (A 1/2) and shp (A 1); score = (2 sum + prior) / 9
res, _ = run_job("v1p", "v1.h5", allow_missing=True, prior_sets=True, bootstrap=0)
A = model(res, "A")
close(A["sections"]["Prior Sets"]["score"], 0.75, "A Prior Sets = (1/2 + 1) / 2")
close(A["score"], (2 * sum(A_sec.values()) + 0.75) / 9, "A score with Prior Sets = (2 sum + 0.75) / 9", rel=1e-15)
close(model(res, "B")["score"], (2 * sum(B_sec.values()) + 0.0) / 9, "B score with Prior Sets 0", rel=1e-15)
check(A["score_ci95"] is None and A["sections"]["Chat"]["ci95"] is None, "bootstrap 0: intervals null")

# ---------------------------------------------------------------------------------------------
# v2: non-Ties items with 4 completions (preferred first), Ties rows with ids ref:n / tied:n.
V2 = [("Factuality", "0", 1, [2, 2, 1, 0]),      # preferred tied at the max with 1 other: 1/2
      ("Factuality", "1", 1, [3, 3, 3, 1]),      # 3 at the max: 1/3
      ("Precise IF", "2", 1, [1, 0, 0, 0]),      # 1
      ("Math", "3", 1, [0, 1, 0, 0]),            # preferred not at the max: 0
      ("Safety", "4", 1, [5, 5, 5, 5]),          # 4 at the max: 1/4
      ("Focus", "5", 1, [-1, -2, -3, -1]),       # 1/2
      ("Ties", "tied:0", 2, [10, 8, 5, 7]),      # gap 8-7 = 1, spread 2, accurate
      ("Ties", "ref:0", 1, [9, 6, 3]),           # gap 3, accurate
      ("Ties", "tied:1", 2, [4, 3, 5]),          # negative gap 3-5 = -2, spread 1
      ("Ties", "ref:1", 1, [2, 1]),              # gap 1
      ("Ties", "tied:2", 2, [5, 5, 5]),          # gap 0, spread 0
      ("Ties", "ref:2", 1, [1, 1]),              # gap 0 (not accurate)
      ("Ties", "ref:5", 1, [1, 0]),              # present only as ref: counts for ref accuracy only
      ("Ties", "tied:3", 2, [6, 6, 2]),          # gap 4, spread 0
      ("Ties", "ref:3", 1, [3, 1]),              # gap 2
      ("Ties", "tied:4", 2, [1, 1, 3]),          # gap -2, spread 0
      ("Ties", "ref:4", 1, [2, 0])]              # gap 2
isub, off, nc, sc = items_from_lists([(V2_SUBSETS.index(s), k, [v, [0] * len(v)]) for s, _, k, v in V2])
write_bench(os.path.join(d, "v2.h5"), ["M1", "zero"], V2_SUBSETS, isub, off, nc, sc, item_id=[x[1] for x in V2])
# Ties for M1:
#   tied accuracy over prompts 0-4: [1, 0, 0, 1, 0] = 2/5; ref accuracy over prompts 0-5: [1, 1, 0, 1, 1, 1] = 5/6
#   prompts 0-4 are present as both: [gap_t > spread]   = [1>2, -2>1, 0>0, 4>0, -2>0] = 1/5
#                                    [min gap > spread] = [1>2, -2>1, 0>0, 2>0, -2>0] = 1/5
#   tanh(min gap / spread - 1) = [tanh(-0.5), tanh(-3), 0/0 -> 0, 2/0 -> +1, -2/0 -> -1]
ties_m1 = 0.30 * (2 / 5) + 0.30 * (5 / 6) + 0.20 * (1 / 5) + 0.20 * (1 / 5) + 0.01 * (
    (math.tanh(-0.5) + math.tanh(-3.0) + 0.0 + 1.0 - 1.0) / 5)
m1 = {"Factuality": (1 / 2 + 1 / 3) / 2, "Precise IF": 1.0, "Math": 0.0, "Safety": 0.25, "Focus": 0.5, "Ties": ties_m1}
# "zero" scores every completion 0: 1/4 on the four-completion items; every Ties gap and spread is 0
# (no accuracy, 0/0 terms) -> Ties 0
zero = {"Factuality": 0.25, "Precise IF": 0.25, "Math": 0.25, "Safety": 0.25, "Focus": 0.25, "Ties": 0.0}
res, out = run_job("v2", "v2.h5", scheme="rewardbench-v2", bootstrap=30, compare="all")
for name, exp in (("M1", m1), ("zero", zero)):
    m = model(res, name)
    for s, v in exp.items():
        close(m["subsets"][s]["score"], v, f"v2 {name} {s}", rel=1e-14)
        close(m["sections"][s]["score"], v, f"v2 {name} section {s}", rel=1e-14)
    close(m["score"], sum(exp.values()) / 6, f"v2 {name} score = mean of the six", rel=1e-14)
M1 = model(res, "M1")
comp = M1["subsets"]["Ties"]["composite"]
check((comp["n_prompts_tied"], comp["n_prompts_ref"], comp["n_prompts_both"]) == (5, 6, 5), f"Ties prompt counts {comp}")
close(comp["tied_accuracy"], 2 / 5, "tied accuracy")
close(comp["ref_accuracy"], 5 / 6, "ref accuracy (includes the ref-only prompt)")
close(comp["margin"], (math.tanh(-0.5) + math.tanh(-3.0)) / 5, "tanh term with 0/0 -> 0 and x/0 -> +-1", rel=1e-14)
check(M1["subsets"]["Ties"]["wilson95"] is None and M1["subsets"]["Factuality"]["wilson95"] is None,
      "no Wilson interval for the Ties composite or for fractional credits")
close(M1["subsets"]["Precise IF"]["wilson95"], wilson(1, 1), "Wilson 1/1")
close(M1["subsets"]["Math"]["wilson95"], wilson(0, 1), "Wilson 0/1")
check(M1["subsets"]["Ties"]["n"] == 11, "Ties n counts its rows")
with h5py.File(os.path.join(d, "out", "v2.h5")) as f:
    ic = f["bench/item_credit"][...]
    ss = f["bench/subset_score"][...]
exp_row = [1 / 2, 1 / 3, 1, 0, 1 / 4, 1 / 2] + [1, 1, 0, 1, 0, 0, 1, 1, 1, 0, 1]  # Ties rows: their accuracy
close(list(ic[0]), exp_row, "item_credit of M1 (Ties rows: min(correct) > max(incorrect))", rel=1e-15)
close(list(ic[1]), [0.25] * 6 + [0] * 11, "item_credit of zero")
close(list(ss[0]), [m1[s] for s in V2_SUBSETS], "subset_score [M, S]", rel=1e-14)
# replay: Ties prompts (0..5, ascending) are drawn with their ref and tied rows together
rows_m1 = [(i, k, v) for s, i, k, v in V2 if s == "Ties"]
rows_zero = [(i, k, [0] * len(v)) for s, i, k, v in V2 if s == "Ties"]
stats = {"M1": ties_prompt_stats(rows_m1), "zero": ties_prompt_stats(rows_zero)}
check(abs(ties_score(*stats["M1"]) - ties_m1) < 1e-15, "the oracle agrees with the hand value")
cred = {"M1": ic[0], "zero": ic[1]}
reps = {"M1": [], "zero": []}
for b in range(30):
    tp = replay_draws(SEED, "v2", "Ties", b, 6)
    mult = {p: int((tp == p).sum()) for p in range(6)}
    for name in ("M1", "zero"):
        vals = []
        for s in V2_SUBSETS[:5]:
            its = [i for i, x in enumerate(V2) if x[0] == s]
            dr = np.asarray(its)[replay_draws(SEED, "v2", s, b, len(its))]
            vals.append(sum(cred[name][dr]) / len(dr))
        vals.append(ties_score(*stats[name], mult=mult))
        reps[name].append(sum(vals) / 6)
for name in ("M1", "zero"):
    close(model(res, name)["score_ci95"], quantiles95(reps[name]), f"v2 {name} score_ci95 replayed", rel=1e-12)
dl = np.array(reps["M1"]) - np.array(reps["zero"])
close(res["comparisons"][0]["p"], min(1.0, 2 * min((dl <= 0).sum(), (dl >= 0).sum()) / 30), "v2 comparison p")

# ---------------------------------------------------------------------------------------------
# custom scheme, both item rules; two preferred completions per item in subset "a"
CU = [("a", 2, [3, 3, 3, 1]),   # strict: min(3, 3) > 3? no -> 0;  tie-credit: 2 preferred of 3 at the max -> 2/3
      ("a", 2, [5, 4, 1, 2]),   # strict: 4 > 2 -> 1;              tie-credit: 1 of 1 -> 1
      ("b", 1, [0, 1]),         # 0 and 0
      ("b", 1, [2, 1, 2])]      # strict 0; tie-credit 1/2
isub, off, nc, sc = items_from_lists([(["a", "b"].index(s), k, [v]) for s, k, v in CU])
write_bench(os.path.join(d, "cu.h5"), ["only"], ["a", "b"], isub, off, nc, sc)
secs = {"S1": {"a": 3, "b": 1}, "S2": {"b": 1}, "S3": {"c": 1}}
for rule, a, b in (("strict", 0.5, 0.0), ("tie-credit", (2 / 3 + 1) / 2, 0.25)):
    res, _ = run_job("cu-" + rule, "cu.h5", scheme={"sections": secs, "item_rule": rule}, allow_missing=True,
                     bootstrap=0)
    m = res["models"][0]
    s1, s2 = (3 * a + b) / 4, b  # S1 = (3 a + 1 b) / 4, S2 = b; S3 names only the absent subset "c"
    close(m["sections"]["S1"]["score"], s1, f"custom {rule} S1")
    close(m["sections"]["S2"]["score"], s2, f"custom {rule} S2")
    check(m["sections"]["S3"]["score"] is None, f"custom {rule}: a section with no subset present is null")
    close(m["score"], (s1 + s2) / 2, f"custom {rule} score = mean of the sections present")
    check(res["missing_subsets"] == ["c"] and res["item_rule"] == rule and res["scheme"] == "custom",
          f"custom {rule} header")
# Ties with scores near the float64 limits: the tied prompt's spread overflows to +inf and its gap to
# -inf; numpy's -inf / inf is NaN, which upstream's nan_to_num makes 0 (not a NaN composite).
big = 1.7e308
V2B = [(s, str(k), 1, [1, 0]) for k, s in enumerate(V2_SUBSETS[:5])] + [
    ("Ties", "tied:0", 2, [big, -big, big]),     # correct [big, -big] (spread inf), incorrect [big] (gap -inf)
    ("Ties", "ref:0", 1, [1, 0])]                # gap 1, accurate
isub, off, nc, sc = items_from_lists([(V2_SUBSETS.index(s), k, [v]) for s, _, k, v in V2B])
write_bench(os.path.join(d, "v2big.h5"), ["big"], V2_SUBSETS, isub, off, nc, sc, item_id=[x[1] for x in V2B])
res, _ = run_job("v2big", "v2big.h5", scheme="rewardbench-v2", bootstrap=0)
comp = model(res, "big")["subsets"]["Ties"]["composite"]
check(comp["margin"] == 0.0, f"-inf / inf in the tanh term counts 0: {comp}")
close(model(res, "big")["subsets"]["Ties"]["score"], 0.30 * 0 + 0.30 * 1 + 0.20 * 0 + 0.20 * 0 + 0.01 * 0,
      "Ties = 0.3 (ref accurate only)", rel=1e-15)
close(model(res, "big")["score"], (5 + 0.3) / 6, "score with the overflowing Ties prompt", rel=1e-15)
# Ties composite parts that differ, dropped replicates, leaderboard ties and n_subsets. Prompt 0 is
# present as both: tied [10, 9 | 6] (spread 1, gap 3: preferred) and ref [7 | 6.5] (gap 0.5: min gap
# 0.5 is not above the spread, so not preferred-hard); prompt 1 only as ref. Models "z-first" and
# "a-second" score alike, "top" better on the five other subsets. A replicate whose two Ties draws are
# both prompt 1 has no prompt present as both: its composite is undefined and it is dropped.
V2C = [(s, str(k), 1, [1, 0]) for k, s in enumerate(V2_SUBSETS[:5])] + [
    ("Ties", "tied:0", 2, [10, 9, 6]), ("Ties", "ref:0", 1, [7, 6.5]), ("Ties", "ref:1", 1, [1, 0])]
names = ["z-first", "a-second", "top"]
per_item = []
for s_, _, k, v in V2C:
    worse = v if s_ == "Ties" else v[::-1]
    per_item.append((V2_SUBSETS.index(s_), k, [worse, worse, v]))
isub, off, nc, sc = items_from_lists(per_item)
write_bench(os.path.join(d, "v2c.h5"), names, V2_SUBSETS, isub, off, nc, sc, item_id=[x[1] for x in V2C])
Bc = 200
res, out = run_job("v2c", "v2c.h5", scheme="rewardbench-v2", bootstrap=Bc)
comp = model(res, "top")["subsets"]["Ties"]["composite"]
check((comp["correctness_preferred"], comp["correctness_preferred_hard"]) == (1.0, 0.0),
      f"preferred (gap_tied 3 > spread 1) and not preferred-hard (min gap 0.5): {comp}")
close(model(res, "top")["subsets"]["Ties"]["score"], 0.30 * 1 + 0.30 * 1 + 0.20 * 1 + 0.20 * 0 + 0.01 * math.tanh(0.5 - 1),
      "Ties = 0.3 tied acc + 0.3 ref acc + 0.2 preferred + 0.01 tanh(0.5/1 - 1)", rel=1e-15)
check([x["model"] for x in res["leaderboard"]] == ["top", "z-first", "a-second"],
      f"leaderboard: equal scores keep the input order: {res['leaderboard']}")
check(res["n_subsets"] == 6, f"n_subsets: {res['n_subsets']}")
want = sum(all(p == 1 for p in replay_draws(SEED, "v2c", "Ties", b, 2)) for b in range(Bc))
check(want > 0 and res["bootstrap"]["dropped"] == want,
      f"dropped replicates: {res['bootstrap']['dropped']}, replayed {want}")
done()
