"""A generator of realistic cm inputs for the tests (independent of the peers' generator):
skewed user sizes, users whose pairs are scattered, a user always in train and one always held
out, saturated margins, a numeric and a categorical covariate."""
import numpy as np


def make_cm(P=137000, R=25, U=2000, seed=7, dtype="float32"):
    rng = np.random.default_rng(seed)
    w = 1.0 / np.arange(1, U + 1) ** 0.8
    uidx = np.concatenate([np.arange(U), rng.choice(U, P - U, p=w / w.sum())])[rng.permutation(P)]
    ids = rng.choice(10**12, U, replace=False).astype(np.int64)
    user = ids[uidx]
    split = rng.random((U, R)) < 0.75
    split[0, :], split[1, :] = True, False
    flags = split[uidx].astype(np.uint8)
    margin = rng.normal(0.5, 1.0, P)[:, None] + 0.4 * flags + rng.normal(0, 0.7, (P, R))
    ext = rng.choice(P, 8, replace=False)
    margin[ext] += np.array([760, -760, 40, -40, 720, -720, 100, -100])[:, None]
    rr = rng.normal(0, 2, (P, R))
    rc = (rr + margin).astype(dtype)
    rr = rr.astype(dtype)
    length = np.round(rng.normal(0, 150, P))
    length[rng.random(P) < 0.01] = np.nan
    source = rng.integers(0, 7, P).astype(np.int32)
    return rc, rr, flags, user, {"length": length, "source": source}


def oracle_cm(rc, rr, flags, user):
    """Per-pair TM, TG, CM in float64 with numpy (stable sigmoid via logaddexp)."""
    d = rc.astype(np.float64) - rr.astype(np.float64)
    p = np.exp(-np.logaddexp(0.0, -d))
    m = flags.astype(bool)
    ntr = m.sum(1)
    nh = flags.shape[1] - ntr
    with np.errstate(invalid="ignore", divide="ignore"):
        tm = np.where(ntr > 0, (p * m).sum(1) / ntr, np.nan)
        tg = np.where(nh > 0, (p * ~m).sum(1) / nh, np.nan)
    return tm, tg, tm - tg, ntr, nh
