"""Every aggregate of the cm report to the last bit, against a plain sequential reading of its
definition (docs/design.md, 'Determinism'): fixed-block sums (blocks of 4096 values added left to
right), each user's and each stratum's sums over its pairs in pair order, numpy-linear quantiles of
the sorted values, bootstrap replicates summed in eight lanes by user index modulo 8. The report's
numbers read back as the exact doubles (cJSON prints 17 digits when 15 do not read back), so `==`
compares bits. Runs on 1-4 ranks, where the ranks' parts cut the 4096-value blocks at other places,
and on inputs whose users are numbered where they are (contiguous int64 ids, mapped) and read by
HDF5 (chunked int32 ids); the smallest input leaves ranks without pairs."""
import bisect
import math
import os

from rdtest import *

BLOCK = 4096


def rd_sum(xs):
    total = 0.0
    for b in range(0, len(xs), BLOCK):
        s = 0.0
        for v in xs[b:b + BLOCK]:
            s += v
        total += s
    return total


def lerp(a, b, g):
    d = b - a
    return b - d * (1.0 - g) if g >= 0.5 else a + d * g


def quantile(xs, q):
    h = (len(xs) - 1) * q
    k = min(math.floor(h), len(xs) - 1)
    g = h - k
    a = xs[k]
    b = xs[k + 1] if k + 1 < len(xs) else a
    return a if g == 0.0 else lerp(a, b, g)


def summary(vals):
    x = [v for v in vals if not math.isnan(v)]
    n = len(x)
    m = rd_sum(x) / n
    sq = rd_sum([(v - m) * (v - m) for v in x])
    s = sorted(x)
    return dict(n=n, mean=m, sd=math.sqrt(sq / (n - 1)), q05=quantile(s, 0.05), q25=quantile(s, 0.25),
                median=quantile(s, 0.5), q75=quantile(s, 0.75), q95=quantile(s, 0.95))


def make(P, R, U, seed):
    rng = np.random.default_rng(seed)
    uidx = rng.integers(0, U, P)
    uidx[:U] = rng.permutation(U)  # every user has a pair
    split = rng.random((U, R)) < 0.7
    split[:20, :] = True   # users always in train: TG undefined
    split[20:35, :] = False  # users always held out: TM undefined
    flags = split[uidx].astype(np.uint8)
    rc = rng.normal(0.3, 1.5, (P, R)).astype(np.float32)
    rr = rng.normal(0.0, 1.5, (P, R)).astype(np.float32)
    ids = rng.choice(10**9, U, replace=False).astype(np.int64)
    length = np.round(rng.normal(40, 30, P)) + 0.5  # no -0.0: Python's sort keeps input order of zeros
    length[rng.random(P) < 0.02] = np.nan
    source = rng.integers(0, 6, P).astype(np.int32)
    return rc, rr, flags, ids[uidx], {"length": length, "source": source}


def reference(d, name, user, cov, seed, B, bins):
    """The report's aggregates computed from the per-pair values of the .h5, sequentially."""
    with h5py.File(os.path.join(d, "out", name + ".h5")) as f:
        tm, tg, cm = (f["cm/" + k][...].tolist() for k in ("tm", "tg", "cm"))
    order = {}
    uof = [order.setdefault(u, len(order)) for u in user.tolist()]
    U = len(order)
    F = [[0.0] * U for _ in range(6)]
    for p in range(len(tm)):
        for j, v in enumerate((tm[p], tg[p], cm[p])):
            if not math.isnan(v):
                F[2 * j][uof[p]] += v
                F[2 * j + 1][uof[p]] += 1.0
    ref = {k: summary(v) for k, v in (("tm", tm), ("tg", tg), ("cm", cm))}
    ref["user_macro"] = {}
    for j, k in enumerate(("tm", "tg", "cm")):
        means = [F[2 * j][u] / F[2 * j + 1][u] for u in range(U) if F[2 * j + 1][u] > 0]
        ref["user_macro"][k] = rd_sum(means) / len(means)
    # bootstrap: lanes by user index modulo 8, combined ((0+1)+(2+3))+((4+5)+(6+7))
    boot = [[], [], []]
    for b in range(B):
        c = np.bincount(draws_below(seed, name, "cm.bootstrap.users", b, U, U), minlength=U).tolist()
        acc = []
        for k in range(6):
            lane = [0.0] * 8
            for u in range(U):
                lane[u % 8] += float(c[u]) * F[k][u]
            acc.append(((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7])))
        for q in range(3):
            boot[q].append(acc[2 * q] / acc[2 * q + 1])
    for q, k in enumerate(("tm", "tg", "cm")):
        s = sorted(boot[q])
        ref[k]["ci95"] = [quantile(s, 0.025), quantile(s, 0.975)]
    # strata: quantile bins of length, categories of source, per-bin sums in pair order
    strata = []
    x = cov["length"].tolist()
    fin = sorted(v for v in x if math.isfinite(v))
    edges = [quantile(fin, i / bins) for i in range(bins + 1)]
    merged = [edges[0]] + [e for i, e in enumerate(edges[1:]) if e != edges[i]]
    nb = len(merged) - 1
    groups = [("length", merged, [max(0, bisect.bisect_right(merged, v, 0, nb) - 1) if math.isfinite(v) else None
                                   for v in x], True)]
    src = cov["source"].tolist()
    cats = sorted(set(src))
    groups.append(("source", cats, [cats.index(v) for v in src], False))
    for name_, edges_, bin_of, quant in groups:
        nbins = len(edges_) - 1 if quant else len(edges_)
        acc = [[0.0] * 7 for _ in range(nbins)]
        for p, b in enumerate(bin_of):
            if b is None:
                continue
            a = acc[b]
            a[0] += 1.0
            for j, v in enumerate((tm[p], tg[p], cm[p])):
                if not math.isnan(v):
                    a[1 + 2 * j] += v
                    a[2 + 2 * j] += 1.0
        for b, a in enumerate(acc):
            strata.append(dict(covariate=name_, bin=b if quant else float(edges_[b]), lo=edges_[b],
                               hi=edges_[b + 1] if quant else edges_[b], n=a[0], tm=a[1] / a[2], tg=a[3] / a[4],
                               cm=a[5] / a[6]))
    ref["strata"] = strata
    ref["neg"] = sum(1 for v in cm if not math.isnan(v) and v < 0) / ref["cm"]["n"]
    return ref


def compare(r, ref, label):
    for k in ("tm", "tg", "cm"):
        check(r[f"n_{k}_defined"] == ref[k]["n"], f"{label}: n_{k}_defined")
        for f in ("mean", "sd", "q05", "q25", "median", "q75", "q95"):
            check(r[k][f] == ref[k][f], f"{label}: {k}.{f} {r[k][f]!r} == {ref[k][f]!r}")
        check(r[k]["ci95"] == ref[k]["ci95"], f"{label}: {k}.ci95 {r[k]['ci95']} == {ref[k]['ci95']}")
        check(r["user_macro"][k] == ref["user_macro"][k], f"{label}: user_macro.{k}")
    check(r["cm_negative_fraction"] == ref["neg"], f"{label}: cm_negative_fraction")
    check(len(r["strata"]) == len(ref["strata"]), f"{label}: {len(r['strata'])} strata")
    for got, want in zip(r["strata"], ref["strata"]):
        check(all(got[f] == want[f] for f in want), f"{label}: stratum {got} == {want}")


d = scratch("cm_exact")
SEED, B, BINS = 13, 24, 6
cases = [("mapped", 20011, 5, 700, False, (0, 2, 4)), ("read", 20011, 5, 700, True, (0, 3)),
         ("tiny", 2500, 4, 90, True, (0, 4))]
for name, P, R, U, chunked, rank_counts in cases:
    rc, rr, flags, user, cov = make(P, R, U, seed=len(name))
    path = os.path.join(d, name + ".h5")
    with h5py.File(path, "w") as f:
        f["cm/reward_chosen"], f["cm/reward_rejected"], f["cm/in_train"] = rc, rr, flags
        if chunked:  # not mappable: every rank reads its rows of ids through HDF5
            f.create_dataset("cm/user", data=user.astype(np.int32), chunks=(1000,), compression="gzip")
        else:
            f["cm/user"] = user
        for k, v in cov.items():
            f["cm/covariates/" + k] = v
    job = {"name": name, "kind": "cm", "input": name + ".h5", "bootstrap": B,
           "strata": [{"covariate": "length", "bins": BINS}, {"covariate": "source", "categorical": True}]}
    write_job(os.path.join(d, "job.json"), [job], seed=SEED)
    ref = None
    for ranks in rank_counts:
        code, _, err = run(["run", os.path.join(d, "job.json"), "--force", "--quiet"], ranks=ranks)
        check(code == 0, f"{name}, {ranks} ranks: exit {code} ({err})")
        if ref is None:
            ref = reference(d, name, user, cov, SEED, B, BINS)
        compare(load_report(os.path.join(d, "out", name + ".json"))["result"], ref, f"{name}, {ranks} ranks")
done()
