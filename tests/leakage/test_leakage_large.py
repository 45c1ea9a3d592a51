"""The leakage report on a synthetic panel (43,200 rows, 60 cells) against an independent numpy oracle:
every cell's pooled and per-seed counts, parse rate, r, MAE, within (decimal, <=), sign, slope and
intercept, Wilson intervals and entropy; the holdout split; and, replaying rmdiag's documented draws
(Philox4x32-10, four 32-bit words per block, integer = word * n >> 32) in numpy, the bootstrap intervals
of r and MAE of two cells and the factor-shuffle null of two targets."""
import math
import os

from leakdata import gen_panel
from rdtest import *

d = scratch("leak_large")
path = os.path.join(d, "in.h5")
gen_panel(path, seed=5, controls=False)
FAM = ["S0", "S1", "S2", "S3", "S4"]
B, P, SEED = 400, 300, 3
job = {"name": "big", "kind": "leakage", "input": "in.h5", "bootstrap": B, "null_permutations": P, "family": FAM,
       "holdout_from": 199701}
write_job(os.path.join(d, "job.json"), [job], seed=SEED)
code, _, err = run(["run", os.path.join(d, "job.json"), "--quiet"], ranks=2)
check(code == 0, f"run ({err})")
rep = load_report(os.path.join(d, "out", "big.json"))["result"]

with h5py.File(path) as f:
    g = f["leak"]
    model, series, variant, seed, month = (g[k][...].astype(np.int64) for k in ("model", "series", "variant", "seed", "month"))
    value, status, ent = g["value"][...], g["status"][...], g["entropy_bits"][...]
    fict = g["series_fictional"][...]
    tmap = {(int(s), int(m)): v for s, m, v in zip(g["truth_series"][...], g["truth_month"][...], g["truth_value"][...])}
    names = {k: list(g[k + "_names"].asstr()[...]) for k in ("model", "series", "variant")}
S, V = len(names["series"]), len(names["variant"])
truth = np.array([tmap.get((int(s), int(m)), np.nan) for s, m in zip(series, month)])
Z = 1.959963984540054


def wilson(k, n):
    if n == 0:
        return None
    p, den = k / n, 1 + Z * Z / n
    c, h = (p + Z * Z / (2 * n)) / den, Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / den
    return [max(0.0, c - h), min(1.0, c + h)]


def within(e, t):
    return np.abs(np.round(e * 1e6).astype(np.int64) - np.round(t * 1e6).astype(np.int64)) <= 250000


def oracle(idx):
    """Metrics of the rows idx (in row order)."""
    st, e, t = status[idx], value[idx], truth[idx]
    live = st != 2
    sc = (st == 0) & ~np.isnan(t)
    e, t = e[sc], t[sc]
    n = e.size
    o = dict(n_rows=int(live.sum()), n_parsed=int((st == 0).sum()), n_no_truth=int((live & np.isnan(truth[idx])).sum()),
             n_scored=n)
    o["parse_rate"] = o["n_parsed"] / o["n_rows"] if o["n_rows"] else None
    o["parse_rate_wilson95"] = wilson(o["n_parsed"], o["n_rows"])
    if n:
        w = within(e, t)
        o["mae"], o["within"], o["within_wilson95"] = np.abs(e - t).mean(), w.mean(), wilson(int(w.sum()), n)
        ok = np.sign(e) == np.sign(t)
        o["sign_acc"], o["sign_wilson95"] = ok.mean(), wilson(int(ok.sum()), n)
    if n >= 2:
        de, dt = e - e.mean(), t - t.mean()
        if (dt * dt).sum() > 0:
            o["slope"] = (de * dt).sum() / (dt * dt).sum()
            o["intercept"] = e.mean() - o["slope"] * t.mean()
        if n >= 3:
            o["r"] = (de * dt).sum() / math.sqrt((de * de).sum() * (dt * dt).sum())
    return o


keys = sorted({(int(m) * S + int(s)) * V + int(v) for m, s, v in zip(model, series, variant) if not fict[s]})
check(len(rep["cells"]) == len(keys), f"{len(rep['cells'])} cells, oracle {len(keys)}")
ckey = (model * S + series) * V + variant
worst = 0.0
for ci, key in enumerate(keys):
    c = rep["cells"][ci]
    m, s, v = key // V // S, key // V % S, key % V
    check((c["model"], c["series"], c["variant"]) == (names["model"][m], names["series"][s], names["variant"][v]),
          f"cell {ci} order")
    idx = np.flatnonzero(ckey == key)
    want = oracle(idx)
    for k, x in want.items():
        close(c[k], x, f"cell {ci} {k}", rel=1e-11, abs_=1e-13)
        if isinstance(x, float) and c[k] is not None:
            worst = max(worst, abs(c[k] - x))
    for ps in c["per_seed"]:
        sw = oracle(idx[seed[idx] == ps["seed"]])
        for k, x in sw.items():
            close(ps[k], x, f"cell {ci} seed {ps['seed']} {k}", rel=1e-11, abs_=1e-13)
    e_idx = idx[(status[idx] != 2) & np.isfinite(ent[idx])]
    close(c["entropy_mean"], ent[e_idx].mean() if e_idx.size else None, f"cell {ci} entropy mean", rel=1e-12)
    close(c["entropy_median"], float(np.median(ent[e_idx])) if e_idx.size else None, f"cell {ci} entropy median")
    h = rep["holdout"][ci]
    for side, sel in (("before", month[idx] < 199701), ("from", month[idx] >= 199701)):
        hw = oracle(idx[sel])
        for k in ("n_rows", "n_parsed", "parse_rate", "r", "n_scored", "mae", "within"):
            close(h[side][k], hw.get(k), f"cell {ci} holdout {side} {k}", rel=1e-11, abs_=1e-13)
print(f"worst difference of the deterministic metrics: {worst:.3g}")

# ---- replaying the draws ----
def leak_below(key, rep_id, count, n):
    """rd_rng_below_u32 for draws 0..count-1: word j % 4 of Philox block j // 4, times n, high 32 bits."""
    nb = (count + 3) // 4
    blocks = np.arange(nb, dtype=np.uint64)
    w = philox4x32_10(blocks, np.zeros_like(blocks), np.full_like(blocks, rep_id & 0xFFFFFFFF),
                      np.full_like(blocks, rep_id >> 32), *key)
    words = np.stack(w, axis=1).reshape(-1)[:count]
    return ((words * np.uint64(n)) >> np.uint64(32)).astype(np.int64)


kb = stream_key(SEED, "big", "leak.bootstrap")
for ci in (0, 17):
    c = rep["cells"][ci]
    idx = np.flatnonzero(ckey == keys[ci])
    sc = idx[(status[idx] == 0) & ~np.isnan(truth[idx])]
    e, t = value[sc], truth[sc]
    n = e.size
    de, dt = e - np.cumsum(e)[-1] / n, t - np.cumsum(t)[-1] / n   # means of sequential sums, as rmdiag
    rows = np.stack([de, dt, de * de, dt * dt, de * dt, np.abs(e - t)], axis=1)
    rs, ms = [], []
    for b in range(B):
        draws = leak_below(kb, (ci << 32) | b, n, n)
        s = np.cumsum(rows[draws], axis=0)[-1]         # sequential sums in draw order
        vx, vy, cxy = n * s[2] - s[0] * s[0], n * s[3] - s[1] * s[1], n * s[4] - s[0] * s[1]
        ok = vx > 1e-12 * n * s[2] and vy > 1e-12 * n * s[3]
        rs.append(min(1.0, max(-1.0, cxy / math.sqrt(vx * vy))) if ok else np.nan)
        ms.append(s[5] / n)
    rs = np.array(rs)
    close(c["r_ci95"], list(np.quantile(rs[~np.isnan(rs)], [0.025, 0.975])), f"cell {ci} r_ci95 replayed", rel=1e-12)
    close(c["mae_ci95"], list(np.quantile(ms, [0.025, 0.975])), f"cell {ci} mae_ci95 replayed", rel=1e-12)
    check(c["r_bootstrap_dropped"] == int(np.isnan(rs).sum()), "dropped replicates counted")

kn = stream_key(SEED, "big", "leak.null")
fam = [names["series"].index(x) for x in FAM]
for ci in (3, 40):
    c = rep["cells"][ci]
    key = keys[ci]
    m, s, v = key // V // S, key // V % S, key % V
    idx = np.flatnonzero(ckey == key)
    sc = idx[(status[idx] == 0) & ~np.isnan(truth[idx])]
    months = np.unique(month[sc])
    sibs = [j for j in fam if j != s]
    # mean parsed estimate of each sibling and month for (model, variant), seeds pooled
    mean = {}
    for j in sibs:
        sel = (model == m) & (variant == v) & (series == j) & (status == 0)
        for mo in np.unique(month[sel]):
            vals = value[sel & (month == mo)]
            mean[(j, int(mo))] = np.cumsum(vals)[-1] / vals.size
    tr = np.array([tmap[(s, int(mo))] for mo in months])
    vals = []
    for p in range(P):
        pick = leak_below(kn, (ci << 32) | p, months.size, len(sibs))
        used = hits = 0
        for i, mo in enumerate(months):
            x = mean.get((sibs[pick[i]], int(mo)))
            if x is None:
                continue
            used += 1
            hits += bool(within(np.array([x]), np.array([tr[i]]))[0])
        if used:
            vals.append(hits / used)
    close(c["null_within"], float(np.cumsum(vals)[-1] / len(vals)), f"cell {ci} null replayed", rel=1e-12)
    check(c["null_draws_used"] == len(vals), "null draws used")
done()
