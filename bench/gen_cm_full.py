#!/usr/bin/python3
"""A full-size cm input written in slices (memory stays near one slice): P pairs x R runs, U users
with skewed sizes and scattered pairs, float32 (or float64) rewards, contiguous datasets (so rmdiag
maps them), a numeric covariate `length` (1 % missing) and a categorical one `source`.

usage: bench/gen_cm_full.py OUT.h5 [--pairs 4000000] [--runs 50] [--users 40000] [--dtype float32]"""
import argparse

import h5py
import numpy as np

ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("out")
ap.add_argument("--pairs", type=int, default=4_000_000)
ap.add_argument("--runs", type=int, default=50)
ap.add_argument("--users", type=int, default=40_000)
ap.add_argument("--dtype", default="float32")
ap.add_argument("--seed", type=int, default=5)
a = ap.parse_args()
P, R, U = a.pairs, a.runs, a.users
rng = np.random.default_rng(a.seed)
w = 1.0 / np.arange(1, U + 1) ** 0.8
uidx = np.concatenate([np.arange(U), rng.choice(U, P - U, p=w / w.sum())])[rng.permutation(P)]
ids = rng.choice(10**12, U, replace=False).astype(np.int64)
split = rng.random((U, R)) < 0.75
split[0, :], split[1, :] = True, False
SLICE = 200_000
with h5py.File(a.out, "w") as f:
    g = f.create_group("cm")
    rc_d = g.create_dataset("reward_chosen", (P, R), dtype=a.dtype)
    rr_d = g.create_dataset("reward_rejected", (P, R), dtype=a.dtype)
    fl_d = g.create_dataset("in_train", (P, R), dtype=np.uint8)
    g["user"] = ids[uidx]
    for lo in range(0, P, SLICE):
        hi = min(P, lo + SLICE)
        flags = split[uidx[lo:hi]].astype(np.uint8)
        margin = rng.normal(0.5, 1.0, hi - lo)[:, None] + 0.4 * flags + rng.normal(0, 0.7, (hi - lo, R))
        rr = rng.normal(0, 2, (hi - lo, R))
        rc_d[lo:hi] = (rr + margin).astype(a.dtype)
        rr_d[lo:hi] = rr.astype(a.dtype)
        fl_d[lo:hi] = flags
    length = np.round(rng.normal(0, 150, P))
    length[rng.random(P) < 0.01] = np.nan
    g["covariates/length"] = length
    g["covariates/source"] = rng.integers(0, 7, P).astype(np.int32)
