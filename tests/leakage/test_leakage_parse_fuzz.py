"""Differential test of the reply parsers: 6,000 replies assembled at random from the pieces that matter
(signed and unsigned numbers, %, percent, percentage, bps, basis points, ranges, the four dashes and other
dash-like characters, fullwidth and superscript digits, Arabic-Indic digits, no-break and exotic spaces,
letters touching numbers, refusal phrases, long and short texts around the 30-code-point limit; month names
and years for the ranking parser) are imported with `rmdiag import numleak`, and every parsed value,
status and pick must equal the reference statement of the rules (Python's re and unicodedata)."""
import os
import random

from leakdata import parse_comparative, parse_numeric
from rdtest import *

d = scratch("leak_parse_fuzz")
rnd = random.Random(20261130)
pieces = ["%", " %", "percent", " percent", "PERCENT", "percentage", " bps", "bps", " basis points", "basispoint",
          " bp", "-", "+", "\u2212", "\u2013", "\u2014", "\u2010", "\u2012", "\u2011", "\uff0d", "\u207b", ".", ",", " ",
          "\u00a0", "\u2009", "\u3000", "\u2028", "\t", "\n", "x", "Q", "abc", "approximately ", "about ", "to ", "and ",
          "between ", "I don't know", "I cannot provide that", "N/A", "\uff15", "\u00b9", "\u0663", "\u0665", "\u00bd",
          "(", ")", "~", "*", "\"", "\u2026", "\ufeff", "\u200b", "\u212a"]


def number():
    s = rnd.choice(["", "", "-", "+", "\u2212"]) + str(rnd.randint(0, 200 if rnd.random() < 0.3 else 20))
    if rnd.random() < 0.6:
        s += "." + str(rnd.randint(0, 999)).zfill(rnd.randint(1, 3))
    return s


def reply():
    k = rnd.randint(1, 9)
    parts = [number() if rnd.random() < 0.45 else rnd.choice(pieces) for _ in range(k)]
    s = "".join(parts)
    if rnd.random() < 0.2:   # pad to lengths around the 30-code-point limit
        s = s + " " * max(0, rnd.randint(26, 34) - len(s)) + rnd.choice(["", ".", "!"])
    return s


def rank_reply(a, b):
    parts = []
    for _ in range(rnd.randint(1, 6)):
        c = rnd.random()
        if c < 0.35:
            m = rnd.choice([a, b, 199910])
            name = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
                    "November", "December"][m % 100 - 1]
            parts.append(rnd.choice([name, name.lower(), name.upper(), name[:3]]) + rnd.choice([" ", ", ", ",", "  "]) + str(m // 100))
        else:
            parts.append(rnd.choice(["My answer is ", "Between ", "I don't have ", "The higher was ", "unavailable",
                                     "answer: ", "I pick ", " and ", " was higher. ", "Looking at ", "i can\u2019t answer",
                                     "Honestly ", "x", " "]))
    return "".join(parts)


N = 6000
lines, want = [], []
for i in range(N):
    r = reply()
    lines.append(json.dumps({"model_name": "m", "factor": "s", "month": "2020-01", "response": r}))
    want.append(parse_numeric(r))
rank_lines, rank_want = [], []
for i in range(2000):
    a, b = rnd.choice([(202003, 200810), (199901, 201212), (200012, 200001)])
    r = rank_reply(a, b)
    rank_lines.append(json.dumps({"model_name": "m", "factor": "s", "month": f"{a // 100}-{a % 100:02d}",
                                  "month2": f"{b // 100}-{b % 100:02d}", "response": r}))
    rank_want.append(parse_comparative(r, a, b))
with open(os.path.join(d, "p.jsonl"), "w") as f:
    f.write("\n".join(lines) + "\n")
with open(os.path.join(d, "r.jsonl"), "w") as f:
    f.write("\n".join(rank_lines) + "\n")
out = os.path.join(d, "o.h5")
code, _, err = run(["import", "numleak", "--no-truth", "s", "--panel", os.path.join(d, "p.jsonl"),
                    "--panel", os.path.join(d, "r.jsonl"), "--as", "rank", "--field", "month_b=month2", "-o", out])
check(code == 0, f"import ({err})")
with h5py.File(out) as f:
    st, v = f["leak/status"][...], f["leak/value"][...]
    pick = f["leak/rank/pick"][...]
bad = 0
for i, w in enumerate(want):
    ok = (st[i] == 1 and np.isnan(v[i])) if w is None else (st[i] == 0 and v[i] == w)
    if not ok:
        bad += 1
        if bad <= 5:
            print(f"  reply {json.loads(lines[i])['response']!r}: status {st[i]} value {v[i]!r}, expected {w!r}")
check(bad == 0, f"{bad} of {N} numeric replies differ from the reference")
check(sum(w is not None for w in want) > 1500 and sum(w is None for w in want) > 1500, "both outcomes well covered")
rb = sum(int(p) != w for p, w in zip(pick, rank_want))
check(rb == 0, f"{rb} of {len(rank_want)} ranking replies differ from the reference")
check(len({int(p) for p in pick}) == 3, "picks of a, b and none all occur")
done()
