"""`rmdiag import numleak` options on a small hand-made panel: nested dotted paths, months as YYYY-MM,
YYYYMM (text or number) and "Month YYYY", seeds absent -> 0, --set and --map, --where with alternatives,
error rows -> status 2, duplicates by key keeping the newest non-error record by ts (not line order), the
raw replies kept, entropy from the first two tokens' top log-probabilities (with the rest bucket), and the
ranking, signal and defense roles."""
import math
import os

from rdtest import *

d = scratch("leak_import_options")
truth = os.path.join(d, "truth.csv")
with open(truth, "w") as f:
    f.write("month,value\n2020-01,1.0\n2020-02,2.0\n2020-03,3.0\n")
lines = [
    # key k1: an error record (newest) and two good ones: the good one with the larger ts wins (line 3)
    '{"q": {"m": "A", "f": "x"}, "when": "2020-01", "r": "1.5%", "error": null, "key": "k1", "ts": 10.0}',
    '{"q": {"m": "A", "f": "x"}, "when": "2020-01", "r": null, "error": "429 Too Many Requests", "key": "k1", "ts": 30.0}',
    '{"q": {"m": "A", "f": "x"}, "when": "2020-01", "r": "1.25%", "error": null, "key": "k1", "ts": 20.0}',
    # key k2: equal ts: the first seen stays
    '{"q": {"m": "A", "f": "x"}, "when": 202002, "r": "2.0", "error": null, "key": "k2", "ts": 5}',
    '{"q": {"m": "A", "f": "x"}, "when": 202002, "r": "9.0", "error": null, "key": "k2", "ts": 5}',
    # key k3: only an error record: kept as status 2
    '{"q": {"m": "B", "f": "x"}, "when": "March 2020", "r": null, "error": "timeout", "key": "k3", "ts": 1}',
    # no key: kept; a seed; a refusal; a renamed model
    '{"q": {"m": "b-old", "f": "x"}, "when": "202001", "r": "I do not know.", "error": null, "seed": 4}',
    # filtered out by --where
    '{"q": {"m": "A", "f": "x", "skip": true}, "when": "2020-01", "r": "5%", "error": null}',
]
panel = os.path.join(d, "p.jsonl")
with open(panel, "w") as f:
    f.write("\n".join(lines) + "\n")
lp = [math.log(0.5), math.log(0.25), math.log(0.125), math.log(0.0625), math.log(0.03125)]
tok = lambda: [{"token": "x", "logprob": lp[0], "top_logprobs": [{"token": "y", "logprob": v} for v in lp]},
               {"token": "z", "logprob": 0.0, "top_logprobs": [{"token": "z", "logprob": 0.0}]},
               {"token": "w", "logprob": 0.0, "top_logprobs": [{"token": "w", "logprob": -5.0}]}]
probe = os.path.join(d, "probe.jsonl")
with open(probe, "w") as f:
    f.write(json.dumps({"factor": "x", "month": "2020-03", "response": "3.0", "tokens": tok()}) + "\n")
rank = os.path.join(d, "rank.jsonl")
with open(rank, "w") as f:
    f.write(json.dumps({"model_name": "A", "month": "2020-01", "m2": "2020-03", "response": "March 2020 was higher."}) + "\n")
    f.write(json.dumps({"model_name": "A", "month": "2020-01", "m2": "2020-03", "response": "I cannot answer that."}) + "\n")
sig = os.path.join(d, "sig.jsonl")
with open(sig, "w") as f:
    f.write(json.dumps({"model_name": "A", "month": "2020-02", "response": "0.4", "recall": 2.1}) + "\n")
dfn = os.path.join(d, "def.jsonl")
with open(dfn, "w") as f:
    f.write(json.dumps({"model_name": "A", "month": "2020-02", "defense": "soft", "adv_idx": -1, "response": "2.0%"}) + "\n")
    f.write(json.dumps({"model_name": "A", "month": "2020-02", "defense": "soft", "adv_idx": 3, "response": "No."}) + "\n")
out = os.path.join(d, "o.h5")
code, _, err = run(["import", "numleak", "--truth", f"x={truth}",
                    "--panel", panel, "--field", "model=q.m", "--field", "series=q.f", "--field", "month=when",
                    "--field", "reply=r", "--field", "key=key", "--map", "model:b-old=B", "--where", "q.skip=null|false",
                    "--set", "variant=V1",
                    "--panel", probe, "--set", "model=A", "--field", "logprobs=tokens", "--set", "variant=V1",
                    "--panel", rank, "--as", "rank", "--set", "series=x", "--field", "month_b=m2",
                    "--panel", sig, "--as", "signal", "--field", "recall=recall",
                    "--panel", dfn, "--as", "defense", "--field", "attack=adv_idx", "--map", "attack:-1=benign",
                    "-o", out])
check(code == 0, f"import ({err})")
check("8 rows; kept 4" in err and "dropped 4: 3 duplicates by key (--field key), 1 not matching --where" in err and "1 error rows among them (status 2)" in err,
      f"the log counts duplicates and errors: {err}")
with h5py.File(out) as f:
    g = f["leak"]
    models = list(g["model_names"].asstr()[...])
    check(models == ["A", "B"], f"models {models} (b-old mapped to B)")
    check(list(g["variant_names"].asstr()[...]) == ["V1"], "the set variant")
    check(list(g["row_line"][...]) == [3, 4, 6, 7, 1], f"rows kept: lines {list(g['row_line'][...])}")
    check(list(g["row_source"][...]) == [0, 0, 0, 0, 1], "sources")
    check(list(g["month"][...]) == [202001, 202002, 202003, 202001, 202003], "month formats")
    check(list(g["seed"][...]) == [0, 0, 0, 4, 0], "seed absent -> 0")
    st, v = g["status"][...], g["value"][...]
    check(list(st) == [0, 0, 2, 1, 0], f"status {list(st)}")
    check(v[0] == 1.25 and v[1] == 2.0 and np.isnan(v[2]) and np.isnan(v[3]) and v[4] == 3.0, f"values {v}")
    check(list(g["reply"].asstr()[...]) == ["1.25%", "2.0", "", "I do not know.", "3.0"], "raw replies kept")
    e = g["entropy_bits"][...]
    # token 1: 1/2 .. 1/32 plus rest 1/32 -> 1.9375 bits; token 2: p = 1 -> 0; the third token is not used
    close(e[4], (1.9375 + 0.0) / 2, "entropy of the first two tokens")
    check(np.isnan(e[:4]).all(), "no tokens -> NaN")
    check(list(g["truth_month"][...]) == [202001, 202002, 202003], "truth months")
    check(list(g["rank/pick"][...]) == [1, -1] and list(g["rank/month_b"][...]) == [202003, 202003], "ranking picks")
    check(g["signal/signal"][0] == 0.4 and g["signal/recall"][0] == 2.1, "signal row")
    check(list(g["defense/blocked"][...]) == [0, 1], "defense: parsed = leaked, no number = blocked")
    check(list(g["defense/attack_names"].asstr()[...]) == ["benign", "3"], "attack names (mapped -1)")
    check(g["value"].chunks is not None and g["value"].compression == "gzip", "chunked, compressed datasets")
# --no-replies; --group
code, _, err = run(["import", "numleak", "--truth", f"x={truth}", "--no-replies", "--group", "/other",
                    "--panel", probe, "--set", "model=A", "-o", out])
with h5py.File(out) as f:
    check("other/reply" not in f and "other/value" in f and "leak" not in f, "--no-replies, --group")
# A % hit of more than 308 digits reads as inf (Python's float() too; -inf and inf average to NaN): the
# importer stores it as no number (status 1, NaN; signal NaN; defense blocked) and counts it, so the
# report accepts the panel.
big = "1" * 400
ovf = os.path.join(d, "ovf.jsonl")
with open(ovf, "w") as f:
    for month, reply in (("2020-01", big + "%"), ("2020-02", "-" + "9" * 320 + "% or " + "9" * 320 + "%"),
                         ("2020-03", "2.5%")):
        f.write(json.dumps({"model_name": "A", "factor": "x", "month": month, "response": reply}) + "\n")
ovf_sig = os.path.join(d, "ovf_sig.jsonl")
with open(ovf_sig, "w") as f:
    f.write(json.dumps({"model_name": "A", "month": "2020-02", "response": big + " bps", "recall": 1.0}) + "\n")
    f.write(json.dumps({"model_name": "A", "month": "2020-03", "response": "0.5", "recall": 2.0}) + "\n")
ovf_def = os.path.join(d, "ovf_def.jsonl")
with open(ovf_def, "w") as f:
    f.write(json.dumps({"model_name": "A", "month": "2020-02", "defense": "soft", "adv_idx": 3,
                        "response": big + " percent"}) + "\n")
    f.write(json.dumps({"model_name": "A", "month": "2020-03", "defense": "soft", "adv_idx": 3, "response": "1%"}) + "\n")
out2 = os.path.join(d, "ovf.h5")
code, _, err = run(["import", "numleak", "--truth", f"x={truth}", "--panel", ovf,
                    "--panel", ovf_sig, "--as", "signal", "--field", "recall=recall",
                    "--panel", ovf_def, "--as", "defense", "--field", "attack=adv_idx", "-o", out2])
check(code == 0, f"import with overflowing numbers ({err})")
log = {role: next((l for l in err.splitlines() if f"({role})" in l), "") for role in ("cells", "signal", "defense")}
check("1 parsed, 2 with a number beyond float64 (no number)" in log["cells"], f"cells log: {log['cells']}")
check("1 parsed, 1 with a number beyond float64 (no number)" in log["signal"], f"signal log: {log['signal']}")
check("1 parsed, 1 with a number beyond float64 (no number)" in log["defense"], f"defense log: {log['defense']}")
with h5py.File(out2) as f:
    g = f["leak"]
    st, v = g["status"][...], g["value"][...]
    check(list(st) == [1, 1, 0] and np.isnan(v[:2]).all() and v[2] == 2.5, f"overflow -> status 1, NaN: {st} {v}")
    sg = g["signal/signal"][...]
    check(np.isnan(sg[0]) and sg[1] == 0.5, f"signal overflow -> NaN: {sg}")
    check(list(g["defense/blocked"][...]) == [1, 0], "defense overflow -> no number (blocked)")
jp = write_job(os.path.join(d, "ovf.json"), [{"name": "ovf", "kind": "leakage", "input": "ovf.h5", "bootstrap": 0,
                                              "null_permutations": 0, "signal_series": "x"}])
code, _, err = run(["run", jp, "--quiet"])
check(code == 0, f"the report accepts the imported panel ({code} {err})")
if code == 0:
    cell = load_report(os.path.join(d, "out", "ovf.json"))["result"]["cells"][0]
    check(cell["n_rows"] == 3 and cell["n_parsed"] == 1, f"3 rows, 1 parsed: {cell['n_rows']} {cell['n_parsed']}")
done()
