#!/usr/bin/env python3
"""The polynomial of rmdiag's exponential (include/rmdiag/kernels/fastmath.h), reproduced.

e^r on |r| <= ln2/2 is written 1 + r + r^2 q(r) with q of degree 9, so that the last two Horner
steps add exact ones and e^0 = 1 exactly; q is evaluated as its even and odd halves in r^2. q solves the equal-ripple system of the relative error of
e^r at eleven Chebyshev points (the first step of a Remez exchange), in 60-digit decimal arithmetic.
The coefficients are then rounded to doubles and the polynomial with those doubles is checked, still
in 60 digits, on 20,001 points of the interval: its largest relative error must stay below 1e-17
(a float64 ulp is 1.1e-16), as small as the degree-13 Taylor polynomial's truncation.

usage: scripts/fit_exp_poly.py        prints the C lines (the header's, in its order) and the largest error;
                                      standard library only
"""
from decimal import Decimal as D, getcontext

getcontext().prec = 60
A = D("0.34658")  # just above ln2/2 = 0.346573..., the reduced argument's bound
DEG = 9           # degree of q: e^r is then of degree 11
PI = D("3.14159265358979323846264338327950288419716939937510582097494")


def cos(x):
    getcontext().prec += 2
    i, last, s, fact, num, sign = 0, 0, D(1), 1, D(1), 1
    while s != last:
        last = s
        i += 2
        fact *= i * (i - 1)
        num *= x * x
        sign = -sign
        s += num / fact * sign
    getcontext().prec -= 2
    return +s


def g(r):
    """(e^r - 1 - r) / r^2, the function q approximates."""
    if r == 0:
        return D(1) / 2
    return (r.exp() - 1 - r) / (r * r)


def solve(m, b):
    """Gauss-Jordan elimination with partial pivoting."""
    n = len(b)
    a = [row[:] + [b[i]] for i, row in enumerate(m)]
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(a[r][c]))
        a[c], a[p] = a[p], a[c]
        for r in range(n):
            if r != c:
                f = a[r][c] / a[c][c]
                a[r] = [a[r][k] - f * a[c][k] for k in range(n + 1)]
    return [a[i][n] / a[i][i] for i in range(n)]


def main():
    n = DEG + 1
    pts = sorted(A * cos(PI * (2 * i + 1) / (2 * (n + 1))) for i in range(n + 1))
    # relative error of e^r at r_i: r_i^2 (q(r_i) - g(r_i)) / e^(r_i) = (-1)^i E
    rows, rhs = [], []
    for i, r in enumerate(pts):
        w = r * r / r.exp()
        rows.append([w * r ** k for k in range(n)] + [-D((-1) ** i)])
        rhs.append(w * g(r))
    q = [float(c) for c in solve(rows, rhs)[:n]]
    worst = D(0)
    for i in range(20001):
        r = -A + 2 * A * i / 20000
        p = D(0)
        for c in reversed(q):
            p = p * r + D(c)
        worst = max(worst, abs((1 + r + r * r * p) / r.exp() - 1))
    # q in its even and odd halves, each a Horner chain in r^2: two chains half as long, which the
    # CPU runs side by side; their rounding errors reach e^r multiplied by r^2 <= 0.12
    print("  double r2 = r * r;")
    print("  double qe = %.17g;" % q[8])
    for k in (6, 4, 2, 0):
        print("  qe = qe * r2 + %.17g;" % q[k])
    print("  double qo = %.17g;" % q[9])
    for k in (7, 5, 3, 1):
        print("  qo = qo * r2 + %.17g;" % q[k])
    print("  double p = qo * r + qe;\n  p = p * r + 1.0;\n  p = p * r + 1.0;")
    print("largest relative error with the rounded coefficients: %.3g" % worst)
    if worst >= D("1e-17"):
        raise SystemExit("the fit is not accurate enough")


if __name__ == "__main__":
    main()
