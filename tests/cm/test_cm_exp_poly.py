"""The exponential behind every sigmoid (include/rmdiag/kernels/fastmath.h) carries the polynomial
that scripts/fit_exp_poly.py fits: rerun the fit in 60-digit arithmetic and find its lines, in
order, in the header; the script itself fails when the rounded fit's relative error reaches 1e-17.
Then the header's lines themselves run as Python (each `double x = ...;` is a Python assignment in
plain IEEE doubles, no fused multiply-add, as the kernels are built) against math.exp on the reduced
interval: within one ulp, and e^0 = 1 exactly."""
import math
import os
import struct
import subprocess
import sys

from rdtest import *

fit = subprocess.run([sys.executable, os.path.join(REPO, "scripts", "fit_exp_poly.py")], capture_output=True, text=True)
check(fit.returncode == 0, "the fit runs and is accurate enough: " + fit.stderr.strip())
lines = [l.strip() for l in fit.stdout.splitlines() if l.startswith("  ")]
check(len(lines) == 14 and lines[-1] == "p = p * r + 1.0;", f"14 lines ending in p's last step, got {lines}")
with open(os.path.join(REPO, "include", "rmdiag", "kernels", "fastmath.h")) as f:
    body = [l.strip() for l in f]
start = body.index(lines[0]) if lines and lines[0] in body else -1
check(start >= 0 and body[start:start + len(lines)] == lines, "the header's polynomial is the fitted one, step by step")

code = "\n".join(" " + l[len("double "):].rstrip(";") if l.startswith("double ") else " " + l.rstrip(";")
                 for l in body[start:start + len(lines)])
env = {}
exec("def e_r(r):\n" + code + "\n return p\n", env)
e_r = env["e_r"]


def ulps(a, b):
    ia, ib = (struct.unpack("<q", struct.pack("<d", v))[0] for v in (a, b))
    return abs(ia - ib)


worst = max(ulps(e_r(r), math.exp(r)) for r in (-0.34657 + 0.69314 * i / 200000 for i in range(200001)))
check(worst <= 1, f"e^r within 1 ulp of math.exp on |r| <= ln2/2 (worst {worst})")
check(e_r(0.0) == 1.0 and e_r(-0.0) == 1.0, "e^0 = 1 exactly")
done()
