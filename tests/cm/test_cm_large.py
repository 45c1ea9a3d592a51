"""The full cm report on an input of realistic size (137,000 pairs x 25 runs, 2,000 users),
run on 2 ranks, cross-checked against an independent numpy computation of every number:
per-pair values, summaries, user macro means, strata, and the cluster-bootstrap intervals
(the bootstrap draws are replayed with an independent Philox in rdtest.py)."""
import os

from gen_cm import make_cm, oracle_cm
from rdtest import *

P, R, U, B, SEED = 137000, 25, 2000, 200, 11
d = scratch("cm_large")
rc, rr, flags, user, cov = make_cm(P, R, U)
write_cm(os.path.join(d, "in.h5"), rc, rr, flags, user, cov, dtype="float32")
write_job(os.path.join(d, "job.json"), [{
    "name": "large", "kind": "cm", "input": "in.h5", "bootstrap": B,
    "strata": [{"covariate": "length", "bins": 5}, {"covariate": "source", "categorical": True}]}], seed=SEED)
code, out, err = run(["run", os.path.join(d, "job.json"), "--force", "--quiet"], ranks=2)
check(code == 0, f"run exits 0 (got {code}: {err})")
r = load_report(os.path.join(d, "out", "large.json"))["result"]

tm, tg, cm, ntr, nh = oracle_cm(rc, rr, flags, user)
with h5py.File(os.path.join(d, "out", "large.h5")) as f:
    close(list(np.nanmax(np.abs(f["cm/tm"][...] - tm), keepdims=True)), [0.0], "max |TM - oracle|", abs_=1e-14)
    close(list(np.nanmax(np.abs(f["cm/tg"][...] - tg), keepdims=True)), [0.0], "max |TG - oracle|", abs_=1e-14)
    check(np.array_equal(np.isnan(f["cm/cm"][...]), np.isnan(cm)), "CM undefined exactly where the oracle's is")
    check(np.array_equal(f["cm/n_train"][...], ntr) and np.array_equal(f["cm/n_held"][...], nh), "run counts")

uids, first, inv = np.unique(user, return_index=True, return_inverse=True)
check(r["n_pairs"] == P and r["n_runs"] == R and r["n_users"] == uids.size, "sizes")
for name, v in (("tm", tm), ("tg", tg), ("cm", cm)):
    x = v[~np.isnan(v)]
    check(r[f"n_{name}_defined"] == x.size, f"n_{name}_defined")
    q = np.quantile(x, [0.05, 0.25, 0.5, 0.75, 0.95])
    for key, val in (("mean", x.mean()), ("sd", x.std(ddof=1)), ("q05", q[0]), ("q25", q[1]), ("median", q[2]),
                     ("q75", q[3]), ("q95", q[4])):
        close(r[name][key], val, f"{name}.{key}", rel=1e-11, abs_=1e-14)
close(r["cm_negative_fraction"], (cm[~np.isnan(cm)] < 0).mean(), "cm_negative_fraction")

# user macro and the bootstrap, with users numbered in order of first appearance (rmdiag's order)
order = np.argsort(first)                     # user ranks by first appearance
uid_of_pair = np.empty(uids.size, np.int64)
uid_of_pair[order] = np.arange(uids.size)
k = uid_of_pair[inv]                          # pair -> user number
sums = []
for v in (tm, tg, cm):
    ok = ~np.isnan(v)
    sums.append((np.bincount(k[ok], weights=v[ok], minlength=uids.size), np.bincount(k[ok], minlength=uids.size)))
for name, (s, n) in zip(("tm", "tg", "cm"), sums):
    with np.errstate(invalid="ignore"):
        means = s / n
    close(r["user_macro"][name], np.nanmean(means), f"user_macro.{name}", rel=1e-11)
boot = np.empty((B, 3))
for b in range(B):
    draw = draws_below(SEED, "large", "cm.bootstrap.users", b, uids.size, uids.size)
    for j, (s, n) in enumerate(sums):
        boot[b, j] = s[draw].sum() / n[draw].sum()
for j, name in enumerate(("tm", "tg", "cm")):
    lo, hi = np.quantile(boot[:, j], [0.025, 0.975])
    close(r[name]["ci95"], [lo, hi], f"{name}.ci95 (replayed draws)", rel=1e-10)
check(r["bootstrap"] == {"resamples": B, "unit": "user", "dropped": {"tm": 0, "tg": 0, "cm": 0}}, "bootstrap block")

# strata: 5 quantile bins of length (NaN excluded), categorical source
L = cov["length"]
fin = ~np.isnan(L)
edges = np.unique(np.quantile(L[fin], np.linspace(0, 1, 6)))
bins = np.clip(np.searchsorted(edges, L[fin], side="right") - 1, 0, edges.size - 2)
got = [s for s in r["strata"] if s["covariate"] == "length"]
check(len(got) == edges.size - 1, f"{len(got)} length bins")
check(r["strata_excluded"]["length"] == int((~fin).sum()), "non-finite covariate values excluded and counted")
for b, s in enumerate(got):
    sel = np.flatnonzero(fin)[bins == b]
    check(s["bin"] == b and s["n"] == sel.size, f"length bin {b}: n {s['n']} vs {sel.size}")
    close([s["lo"], s["hi"]], [edges[b], edges[b + 1]], f"length bin {b} edges")
    for name, v in (("tm", tm), ("tg", tg), ("cm", cm)):
        close(s[name], np.nanmean(v[sel]), f"length bin {b} {name}", rel=1e-11)
src = cov["source"]
got = [s for s in r["strata"] if s["covariate"] == "source"]
check([s["bin"] for s in got] == sorted(set(src.tolist())), "one categorical stratum per value, ascending")
for s in got:
    sel = src == s["bin"]
    check(s["n"] == sel.sum(), f"source {s['bin']} n")
    close(s["cm"], np.nanmean(cm[sel]), f"source {s['bin']} cm", rel=1e-11)
done()
