"""What every importer shares: the option tables (one parser: unknown options with the nearest known one,
missing values, repeats, panel options before any --panel; the usage printed from the table), the JSONL
reader's one policy for Python's NaN / Infinity / -Infinity tokens (read as non-finite numbers; a field
that needs a finite number refuses them naming file, line and key; inside strings they are text), its
line/column messages, and the features importer's name rule (the probe report's: at most 200 bytes)."""
import json
import os

from rdtest import *

d = scratch("import_common")


def write(name, text):
    p = os.path.join(d, name)
    with open(p, "w") as f:
        f.write(text)
    return p


def fails(what, args, expect):
    out = os.path.join(d, "out.h5")
    code, _, err = run(["import"] + args + ["-o", out])
    check(code == 2, f"{what}: exit {code}, expected 2 ({err.strip()})")
    for e in expect:
        check(e in err, f"{what}: message should contain {e!r}: {err.strip()}")
    check(not os.path.exists(out), f"{what}: nothing written")


truth = write("truth.csv", "month,value\n2020-01,1.0\n2020-02,2.0\n")
row = {"model_name": "A", "factor": "x", "month": "2020-01", "response": "1.5%"}
panel = write("p.jsonl", json.dumps(row) + "\n")
rb = write("rb.jsonl", json.dumps({"id": 1, "subset": "hep-go", "scores_chosen": 1.0, "scores_rejected": 0.5}) + "\n")

# ---- the option tables ---------------------------------------------------------------------------
fails("unknown option, a slip", ["numleak", "--truth", f"x={truth}", "--panel", panel, "--feild", "a=b"],
      ['rmdiag import numleak: unknown option "--feild" (did you mean --field?'])
fails("unknown option, far from all", ["cm-csv", truth, "--frobnicate"],
      ['rmdiag import cm-csv: unknown option "--frobnicate" (see rmdiag import cm-csv --help)'])
fails("missing value", ["rewardbench", rb, "--group"], ["rmdiag import rewardbench: --group needs a value (G;"])
fails("missing values", ["features", "--task", "t", "x.npy"],
      ["rmdiag import features: --task needs 3 values (TASK FEATURES LABELS;"])
fails("given twice", ["rewardbench2", rb, "--group", "/a", "--group", "/b"],
      ["rmdiag import rewardbench2: --group given twice (it may be given once)"])
fails("twice for one panel", ["numleak", "--panel", panel, "--as", "rank", "--as", "signal"],
      ["rmdiag import numleak: --as given twice for one --panel"])
fails("panel option first", ["numleak", "--fictional", "--panel", panel],
      ["rmdiag import numleak: --fictional applies to the --panel before it: put it after --panel FILE"])
fails("one operand", ["cm-csv", truth, truth], [f'rmdiag import cm-csv: unexpected argument "{truth}" (one INPUT.csv'])
fails("no operands", ["numleak", "--panel", panel, "stray"], ['rmdiag import numleak: unexpected argument "stray"'])
# a panel option may be given again after the next --panel
out = os.path.join(d, "two.h5")
code, _, err = run(["import", "numleak", "--truth", f"x={truth}", "--panel", panel, "--as", "cells",
                    "--panel", panel, "--as", "cells", "--set", "variant=b", "-o", out])
check(code == 0, f"--as once per panel: exit {code} ({err.strip()})")
# values are taken as they are, even when they look like options
code, _, err = run(["import", "numleak", "--truth", f"x={truth}", "--panel", panel, "--set", "model=-m", "-o", out])
check(code == 0, f"a value starting with '-': exit {code} ({err.strip()})")
with h5py.File(out) as f:
    check(list(f["leak/model_names"].asstr()[...]) == ["-m"], "the value kept")

# usage printed from each table: every option of the table appears with its value names
for fmt, needles in (("cm-csv", ["rmdiag import cm-csv INPUT.csv", "INPUT.csv", "--group G", "exactly once"]),
                     ("rewardbench", ["FILE", "--group G", "scores_chosen"]),
                     ("numleak", ["Options:", "--panel FILE", "--truth SERIES=FILE[,COLUMN[,TRANSFORM]]",
                                  "--truth-numleak DIR", "--no-truth SERIES", "--nan-truth error|missing",
                                  "--no-replies", "Panel options (they apply to the --panel before them):",
                                  "--as cells|rank|signal|defense", "--field NAME=PATH", "--set NAME=VALUE",
                                  "--map NAME:FROM=TO", "--where PATH=V[|V...]", "--fictional"]),
                     ("features", ["--task TASK FEATURES LABELS", "--infer FEATURES", "--model RM", "--tensor NAME",
                                   "FEATURES", "LABELS", "200 bytes"])):
    code, so, err = run(["import", fmt, "--help"])
    check(code == 0 and all(n in so for n in needles),
          f"{fmt} --help: exit {code}, missing {[n for n in needles if n not in so]}")
code, so, err = run(["import", "numleak"])
check(code == 2 and "missing -o OUT.h5" in err and "--panel FILE" in err, f"missing -o shows the usage: {err[:200]}")

# ---- the JSONL reader: Python's non-finite tokens ---------------------------------------------------
# a truth of NaN / Infinity is refused (or missing with --nan-truth missing); the tokens inside strings are text
for tok in ("NaN", "Infinity", "-Infinity"):
    p = write(f"t_{tok}.jsonl", json.dumps(row) + "\n" + '{"model_name": "A", "factor": "x", "month": "2020-02", '
              f'"response": "NaN Infinity", "truth": {tok}}}\n')
    fails(f"truth {tok}", ["numleak", "--panel", p, "--field", "truth=truth"],
          [f't_{tok}.jsonl: line 2: truth ("truth") is not a finite number'])
    out = os.path.join(d, f"t_{tok}.h5")
    code, _, err = run(["import", "numleak", "--nan-truth", "missing", "--panel", p, "--field", "truth=truth",
                        "-o", out])
    check(code == 0, f"truth {tok} with --nan-truth missing: exit {code} ({err.strip()})")
    with h5py.File(out) as f:
        check(list(f["leak/reply"].asstr()[...]) == ["1.5%", "NaN Infinity"], f"{tok}: the tokens in strings are text")
        check(f["leak/truth_month"][...].tolist() == [], f"{tok}: no truth value")
# recall reads a non-finite value as missing; an entropy and a time stamp must be finite
sig = write("sig.jsonl", '{"model_name": "A", "month": "2020-01", "response": "0.5", "recall": Infinity}\n'
            '{"model_name": "A", "month": "2020-02", "response": "0.7", "recall": NaN}\n'
            '{"model_name": "A", "month": "2020-02", "response": "0.7", "recall": -1.5}\n')
out = os.path.join(d, "sig.h5")
code, _, err = run(["import", "numleak", "--truth", f"x={truth}", "--panel", panel,
                    "--panel", sig, "--as", "signal", "--field", "recall=recall", "-o", out])
check(code == 0, f"non-finite recall: exit {code} ({err.strip()})")
with h5py.File(out) as f:
    r = f["leak/signal/recall"][...]
    check(np.isnan(r[0]) and np.isnan(r[1]) and r[2] == -1.5, f"recall: non-finite -> NaN: {r}")
ent = write("ent.jsonl", json.dumps(row) + "\n" + json.dumps(row)[:-1] + ', "H": NaN}\n')
fails("entropy NaN", ["numleak", "--truth", f"x={truth}", "--panel", ent, "--field", "entropy=H"],
      ['ent.jsonl: line 2: entropy ("H") = NaN, expected a finite entropy >= 0'])
ts = write("ts.jsonl", json.dumps(dict(row, k=1, ts=1.0)) + "\n" + json.dumps(dict(row, k=1))[:-1] + ', "ts": NaN}\n')
fails("ts NaN", ["numleak", "--truth", f"x={truth}", "--panel", ts, "--field", "key=k"],
      ['ts.jsonl: line 2: ts ("ts") is NaN, expected a finite number'])
# -Infinity is a log-probability (of probability 0); NaN is not
lp = lambda v: {"token": "x", "logprob": 0.0, "top_logprobs": [{"token": "x", "logprob": 0.0}, {"token": "y", "logprob": v}]}
good_lp = write("lp.jsonl", json.dumps(dict(row, tokens=[lp(-1.0)])).replace("-1.0", "-Infinity") + "\n")
out = os.path.join(d, "lp.h5")
code, _, err = run(["import", "numleak", "--truth", f"x={truth}", "--panel", good_lp, "--field", "logprobs=tokens",
                    "-o", out])
check(code == 0, f"-Infinity logprob: exit {code} ({err.strip()})")
with h5py.File(out) as f:
    check(f["leak/entropy_bits"][0] == 0.0, f"p = 1 and 0: entropy 0, got {f['leak/entropy_bits'][0]}")
bad_lp = write("lpn.jsonl", json.dumps(dict(row, tokens=[lp(-1.0)])).replace("-1.0", "NaN") + "\n")
fails("NaN logprob", ["numleak", "--truth", f"x={truth}", "--panel", bad_lp, "--field", "logprobs=tokens"],
      ['lpn.jsonl: line 1: logprobs ("tokens")[0]: expected at most 32 alternatives with a logprob <= 0'])
# rewardbench: scores, results and accuracies must be finite
rbn = write("rbn.jsonl", '{"_record": "metadata", "model": "M"}\n'
            '{"id": 1, "subset": "hep-go", "scores_chosen": 1.0, "scores_rejected": [-Infinity]}\n')
fails("rewardbench -Infinity", ["rewardbench", rbn],
      ['rbn.jsonl: line 2: key "scores_rejected": expected a finite number or a one-element list, got a one-element '
       'list holding an infinity'])
acc = write("acc.json", '{"model": "M", "hep-go": NaN}')
fails("accuracy NaN", ["rewardbench", acc], ['acc.json: key "hep-go": expected an accuracy between 0 and 1', "got NaN"])
arr = write("arr.json", json.dumps({"id": [1, 2], "subset": ["a", "a"], "num_correct": [1, 1],
                                    "scores": [[2.0, 1.0], [1.0, "X"]]}).replace('"X"', "Infinity"))
fails("v2 array Infinity", ["rewardbench2", arr],
      ['arr.json: item 1 of the parallel arrays: key "scores"[1]: expected a finite number or a one-element list, '
       "got Infinity"])
# features: a label or split must be a finite number (null is the missing label)
lab = write("lab.jsonl", '{"label": 1, "split": 0}\n{"label": NaN, "split": 1}\n')
npy = os.path.join(d, "x.npy")
np.save(npy, np.zeros((2, 3), np.float32))
fails("label NaN", ["features", "--task", "t", npy, lab], ["lab.jsonl: line 2: label = NaN, expected an integer"])
lab2 = write("lab2.jsonl", '{"label": 1, "split": 0}\n\n  \n{"label": null, "split": -Infinity}\n')
fails("split -Infinity", ["features", "--task", "t", npy, lab2], ["lab2.jsonl: line 4: split = -Infinity, expected 0/train"])
# not Python's tokens: lower case, a sign before NaN, a word that starts like one
for name, text, col in (("nan", '{"label": nan, "split": 0}', 11), ("neg", '{"label": -NaN, "split": 0}', 11),
                        ("word", '{"label": NaNa, "split": 0}', 11)):
    fails(f"not a token: {name}", ["features", "--task", "t", npy, write(f"{name}.jsonl", '{"label": 1, "split": 0}\n'
                                                                           + text + "\n")],
          [f"{name}.jsonl: line 2, column", "malformed JSON (expected one JSON object per line)"])

# ---- the JSONL reader: lines and columns ---------------------------------------------------------------
fails("NUL byte", ["numleak", "--truth", f"x={truth}", "--panel", write("nb.jsonl", json.dumps(row) + "\n" + '{"a": "b\0"}\n')],
      ["nb.jsonl: line 2, column 9: a NUL byte (expected JSON text)"])
fails("two values on a line", ["numleak", "--truth", f"x={truth}", "--panel", write("tv.jsonl", json.dumps(row) + " {}\n")],
      [f"tv.jsonl: line 1, column {len(json.dumps(row)) + 2}: unexpected text after the end of the JSON value"])
fails("a scalar", ["numleak", "--truth", f"x={truth}", "--panel", write("sc.jsonl", "\n  \n7\n")],
      ["sc.jsonl: line 3: a JSON scalar, expected one object per line"])
# a pretty-printed RewardBench document spans lines: the line of a bad value is where it is
pretty = json.dumps({"id": [1], "subset": ["a"], "scores_chosen": [1.0], "scores_rejected": [0.0], "model": "M"},
                    indent=2).replace('"model"', '"model" "x"')
fails("pretty-printed", ["rewardbench", write("pretty.json", pretty)], ["pretty.json: line 14, column 11: malformed JSON"])
# a byte order mark before the first line is not part of it
bom = os.path.join(d, "bom.jsonl")
with open(bom, "w", encoding="utf-8-sig") as f:
    f.write(json.dumps(row) + "\n")
code, _, err = run(["import", "numleak", "--truth", f"x={truth}", "--panel", bom, "-o", os.path.join(d, "bom.h5")])
check(code == 0, f"byte order mark: exit {code} ({err.strip()})")

# ---- names: the features importer takes the probe report's names (at most 200 bytes) -------------------
labels = write("lab3.csv", "label,split\n0,0\n1,1\n")
for name, ok in (("t" * 200, True), ("t" * 201, False), (".t", False), ("infer", False), ("a/b", False)):
    out = os.path.join(d, "names.h5")
    code, _, err = run(["import", "features", "--task", name, npy, labels, "-o", out])
    check((code == 0) == ok, f"task name of {len(name)} bytes {name[:8]!r}: exit {code} ({err.strip()[:160]})")
    if not ok:
        check("1 to 200 bytes" in err, f"the rule in the message: {err.strip()[:200]}")
    code, _, err = run(["import", "features", "--model", name, "--task", "t", npy, labels, "-o", out])
    check((code == 0) == ok, f"model name of {len(name)} bytes {name[:8]!r}: exit {code} ({err.strip()[:160]})")
done()
