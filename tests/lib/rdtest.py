"""Helpers for rmdiag's end-to-end tests: launching rmdiag (as a singleton or under mpiexec),
building HDF5 inputs, and collecting check failures into the exit status.

Environment (set by CTest): RMDIAG (the binary), MPIEXEC, RMDIAG_TEST_TMP (scratch folder)."""
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

SKIP = 77

try:
    import numpy as np
    import h5py
except ImportError as e:  # pragma: no cover
    print(f"SKIP: numpy and h5py are needed for this test ({e}); apt-get install python3-numpy python3-h5py")
    sys.exit(SKIP)

RMDIAG = os.environ.get("RMDIAG", "rmdiag")
# The source tree and the shared data folder beside it (set by CTest; the defaults suit a run from
# the source tree).
REPO = os.environ.get("RMDIAG_SOURCE") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SHARED = os.environ.get("RMDIAG_SHARED") or os.path.join(REPO, "..", "shared")
MPIEXEC = os.environ.get("MPIEXEC", "mpiexec")

_failures = []
_checks = 0


def check(cond, what):
    """Records one assertion; the test fails at the end if any failed."""
    global _checks
    _checks += 1
    if not cond:
        _failures.append(what)
        print("FAIL:", what)


def close(a, b, what, rel=1e-12, abs_=1e-15):
    """a and b agree within rel * max(|a|, |b|) + abs_ (None matches None)."""
    if a is None or b is None:
        check(a is None and b is None, f"{what}: {a!r} vs {b!r}")
        return
    if isinstance(a, (list, tuple)):
        check(isinstance(b, (list, tuple)) and len(a) == len(b), f"{what}: {a!r} vs {b!r}")
        if isinstance(b, (list, tuple)) and len(a) == len(b):
            for i, (x, y) in enumerate(zip(a, b)):
                close(x, y, f"{what}[{i}]", rel, abs_)
        return
    a, b = float(a), float(b)
    if math.isnan(a) or math.isnan(b):
        check(math.isnan(a) and math.isnan(b), f"{what}: {a!r} vs {b!r}")
        return
    check(abs(a - b) <= rel * max(abs(a), abs(b)) + abs_, f"{what}: {a!r} vs {b!r} (diff {a - b:.3g})")


def done():
    """Prints a summary and exits with the test's status."""
    if _failures:
        print(f"{len(_failures)} of {_checks} checks failed")
        sys.exit(1)
    print(f"all {_checks} checks passed")
    sys.exit(0)


def scratch(name):
    base = os.environ.get("RMDIAG_TEST_TMP") or tempfile.gettempdir()
    d = os.path.join(base, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d


def run(args, ranks=0, cwd=None, env=None, timeout=600):
    """Runs rmdiag with `args`: ranks=0 as a plain process (MPI singleton), else under mpiexec -n ranks.
    Returns (exit status, stdout, stderr)."""
    cmd = [RMDIAG] + list(args)
    if ranks:
        cmd = [MPIEXEC, "-n", str(ranks)] + cmd
    e = dict(os.environ)
    # Under mpiexec every job runs on all ranks unless a test asks otherwise: most tests check what a
    # job computes on N ranks; the scheduler's own tests set RMDIAG_RANKS_PER_JOB=auto.
    e.setdefault("RMDIAG_RANKS_PER_JOB", "all")
    if env:
        e.update(env)
    p = subprocess.run(cmd, cwd=cwd, env=e, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def write_job(path, jobs, output_dir="out", seed=0, **extra):
    doc = {"output_dir": output_dir, "seed": seed, "jobs": jobs}
    doc.update(extra)
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    return path


def load_report(path):
    with open(path) as f:
        return json.load(f)


def write_cm(path, rc, rr, in_train, user, covariates=None, group="cm", dtype="float64"):
    """A cm input in the cm input layout."""
    with h5py.File(path, "w") as f:
        g = f.require_group(group)
        g["reward_chosen"] = np.asarray(rc, dtype=dtype)
        g["reward_rejected"] = np.asarray(rr, dtype=dtype)
        g["in_train"] = np.asarray(in_train, dtype=np.uint8)
        u = list(user)
        if u and isinstance(u[0], str):
            g.create_dataset("user", data=u, dtype=h5py.string_dtype("utf-8"))
        else:
            g["user"] = np.asarray(u, dtype=np.int64)
        for name, vals in (covariates or {}).items():
            g["covariates/" + name] = np.asarray(vals)
    return path


def outputs_in(folder):
    """Every file in `folder` (temporary files included), or [] when it does not exist."""
    return sorted(os.listdir(folder)) if os.path.isdir(folder) else []


def expect_input_error(name, args, expect=(), ranks=(0,), out_dir=None, out_file=None, exact_folder=True, timeout=600):
    """The bad-input check every kind's tests share: `rmdiag ARGS` on each rank count (0: a plain process)
    exits 2 with exactly one error line containing every string of `expect`, writes nothing (no file in
    `out_dir` and, with exact_folder, not even the folder; `out_file` and its temporaries absent), and
    gives the same message for every rank count. Returns the error lines, one string per rank count."""
    msgs = []
    for n in ranks:
        code, _, err = run(args, ranks=n, timeout=timeout)
        tag = f"{name} ({n} ranks)"
        check(code == 2, f"{tag}: exit status {code}, expected 2 ({err.strip()[-400:]})")
        lines = [l for l in err.splitlines() if l.startswith("rmdiag: error:")]
        check(len(lines) == 1, f"{tag}: exactly one error line, got {len(lines)}: {err[-600:]!r}")
        for e in expect:
            check(e in err, f"{tag}: message should contain {e!r}: {err.strip()[-400:]}")
        if out_dir is not None:
            if exact_folder:
                check(not os.path.exists(out_dir), f"{tag}: nothing written, not even the folder {out_dir} "
                      f"({outputs_in(out_dir)})")
            else:
                check(outputs_in(out_dir) == [], f"{tag}: nothing written in {out_dir} ({outputs_in(out_dir)})")
        if out_file is not None:
            folder = os.path.dirname(out_file) or "."
            left = [x for x in outputs_in(folder) if x == os.path.basename(out_file)
                    or x.startswith("." + os.path.basename(out_file))]
            check(not left, f"{tag}: {out_file} not written ({left})")
        msgs.append("\n".join(lines))
    if len(msgs) > 1:
        check(all(m == msgs[0] for m in msgs), f"{name}: the same message for every rank count: {msgs}")
    return msgs


# ---- an independent Philox4x32-10 and rmdiag's stream keys, for replaying bootstrap draws ----
MASK32 = np.uint64(0xFFFFFFFF)


def stream_key(seed, job, purpose):
    import hashlib
    h = hashlib.sha256(b"rmdiag-rng-v1\0" + str(seed).encode() + b"\0" + job.encode() + b"\0"
                       + purpose.encode() + b"\0").digest()
    return int.from_bytes(h[0:4], "little"), int.from_bytes(h[4:8], "little")


def philox4x32_10(c0, c1, c2, c3, k0, k1):
    c = [np.asarray(x, dtype=np.uint64) & MASK32 for x in (c0, c1, c2, c3)]
    k0, k1 = np.uint64(k0), np.uint64(k1)
    for r in range(10):
        if r:
            k0 = (k0 + np.uint64(0x9E3779B9)) & MASK32
            k1 = (k1 + np.uint64(0xBB67AE85)) & MASK32
        p0 = np.uint64(0xD2511F53) * c[0]
        p1 = np.uint64(0xCD9E8D57) * c[2]
        c = [((p1 >> np.uint64(32)) ^ c[1] ^ k0) & MASK32, p1 & MASK32,
             ((p0 >> np.uint64(32)) ^ c[3] ^ k1) & MASK32, p0 & MASK32]
    return c


def draws_below(seed, job, purpose, rep, count, n):
    """Draws 0..count-1 of replicate `rep` as integers in [0, n): floor(u64 * n / 2^64)."""
    blocks = np.arange((count + 1) // 2, dtype=np.uint64)
    key = stream_key(seed, job, purpose)
    w = philox4x32_10(blocks, blocks >> np.uint64(32), np.full_like(blocks, rep & 0xFFFFFFFF),
                      np.full_like(blocks, rep >> 32), *key)
    words = np.empty(2 * blocks.size, dtype=object)
    words[0::2] = [(int(h) << 32) | int(l) for h, l in zip(w[1], w[0])]
    words[1::2] = [(int(h) << 32) | int(l) for h, l in zip(w[3], w[2])]
    return np.array([(int(x) * n) >> 64 for x in words[:count]], dtype=np.int64)
