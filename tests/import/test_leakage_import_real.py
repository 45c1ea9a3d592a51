"""`rmdiag import numleak` on every real panel in the NumLeak results folder, each with the options the
README lists (no code per file). For every imported row the parsed value and status are checked against an
independent statement of the reply parser (Python's re + unicodedata) applied to the raw JSON, ranking
picks against a restatement of parse_comparative (and the forced-choice file's own inline picks), and the
truth table against an independent Kenneth French loader. Inline truths are checked by the importer
itself (a disagreement with the truth files is an error), so an exit status 0 also says that every
inline truth equals the French, FRED (CPI as the 12-month % change) and NOAA values bit for bit."""
import json
import os

from leakdata import *
from rdtest import *

need_data()
d = scratch("leak_import_real")
files = sorted(f for f in os.listdir(RES) if f not in NOT_PANELS)
check(set(files) == set(PANELS), f"every panel in results/ has import options: missing {set(files) - set(PANELS)}")
truth = numleak_truth()
n_rows = n_checked = 0
for name in files:
    out = os.path.join(d, name.replace(".jsonl", ".h5"))
    code, _, err = run(["import", "numleak"] + panel_args(name) + ["-o", out])
    check(code == 0, f"{name}: import exits 0 ({err.strip()[-400:]})")
    if code:
        continue
    raw = {}
    with open(os.path.join(RES, name)) as f:
        for i, line in enumerate(f, 1):
            if line.strip():
                raw[i] = json.loads(line)
    with h5py.File(out) as h:
        g = h["leak"]
        lines, status, value = g["row_line"][...], g["status"][...], g["value"][...]
        replies = g["reply"].asstr()[...]
        bad = 0
        for q in range(lines.size):
            obj = raw[int(lines[q])]
            resp = obj.get("response")
            if obj.get("error"):
                ok = status[q] == 2 and np.isnan(value[q])
            else:
                v = parse_numeric(resp)
                ok = (status[q] == 1 and np.isnan(value[q])) if v is None else (status[q] == 0 and value[q] == v)
            ok = ok and replies[q] == (resp or "")
            bad += not ok
            if not ok and bad < 4:
                print(f"  {name} line {lines[q]}: status {status[q]} value {value[q]!r} for reply {resp!r}")
        check(bad == 0, f"{name}: {bad} of {lines.size} rows disagree with the reference parser")
        n_rows += lines.size
        n_checked += lines.size - bad
        if "rank" in g:
            a, b, pick = g["rank/month_a"][...], g["rank/month_b"][...], g["rank/pick"][...]
            rr = g["rank/reply"].asstr()[...]
            want = [parse_comparative(t, int(x), int(y)) for t, x, y in zip(rr, a, b)]
            check(list(pick) == want, f"{name}: ranking picks agree with the reference parse_comparative")
            n_rows += pick.size
            if name == "variantc_forced_choice.jsonl":
                inline = [0 if r["model_choice"] == "m1" else 1 for r in raw.values()]
                check(list(pick) == inline, "forced choice: picks equal the file's own model_choice on all rows")
        if "signal" in g:
            sig = g["signal/signal"][...]
            want = [parse_numeric(t) for t in g["signal/reply"].asstr()[...]]
            check(all((w is None and np.isnan(s)) or s == w for s, w in zip(sig, want)), f"{name}: signal values")
            n_rows += sig.size
        if "defense" in g:
            bl = g["defense/blocked"][...]
            want = [parse_numeric(t) is None for t in g["defense/reply"].asstr()[...]]
            check(list(bl.astype(bool)) == want, f"{name}: defense rows blocked = no number")
            n_rows += bl.size
        if name == "camera_ready_multiseed.jsonl":
            names = list(g["series_names"].asstr()[...])
            ts, tm, tv = g["truth_series"][...], g["truth_month"][...], g["truth_value"][...]
            for s in ("Mkt-RF", "SMB", "HML", "RMW", "CMA", "Mom"):
                k = names.index(s)
                got = {int(m): float(v) for m, v in zip(tm[ts == k], tv[ts == k])}
                check(got == truth[s], f"truth of {s}: {len(got)} months equal the reference French loader "
                      f"({len(truth[s])})")
print(f"{n_rows} rows of {len(files)} panels imported and checked")
check(n_rows > 13000, f"{n_rows} rows imported and checked (cells, ranking, signal, defense)")

# the sweep's de-duplicated release gives the same cells as the raw sweep de-duplicated by key
rel = os.path.join(DATA, "release", "sweep.jsonl")
code, _, err = run(["import", "numleak", "--truth-numleak", FF, "--panel", rel] + PANELS["sweep.jsonl"][0] +
                   ["-o", os.path.join(d, "release.h5")])
check(code == 0, f"release/sweep.jsonl imports ({err.strip()[-300:]})")


def keyed(path, drop_errors):
    with h5py.File(path) as h:
        g = h["leak"]
        mn, sn, vn = (list(g[k + "_names"].asstr()[...]) for k in ("model", "series", "variant"))
        keep = g["status"][...] != 2 if drop_errors else np.ones(g["status"].shape, bool)
        return sorted((mn[m], sn[s], vn[v], int(t), repr(float(x))) for m, s, v, t, x, k in
                      zip(g["model"][...], g["series"][...], g["variant"][...], g["month"][...], g["value"][...], keep) if k)


if code == 0:
    ka, kb = keyed(os.path.join(d, "release.h5"), False), keyed(os.path.join(d, "sweep.h5"), True)
    check(len(ka) == 2784 - 720 and str(ka) == str(kb), f"release rows ({len(ka)}) = non-error sweep A/B rows ({len(kb)})")
done()
