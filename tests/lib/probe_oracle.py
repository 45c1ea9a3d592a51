"""An independent numpy implementation of the probe report's procedures (docs/reference.md, 'probe report'), for the tests:
rmdiag's counter-based draws replayed with the Philox of rdtest.py (batch order, Kaiming init,
validation holdout, k-means++), MRMBench's AdamW loop in plain float64 numpy, a Newton solver for
multinomial logistic regression, test metrics, Ledoit-Wolf shrinkage and nearest centroids."""
import math

import rdtest  # noqa: F401 (first: it skips the test (77) when numpy or h5py is missing)
import numpy as np

from rdtest import philox4x32_10, stream_key


def words(seed, job, purpose, rep, count):
    """64-bit words 0..count-1 of replicate `rep` (as Python ints)."""
    if count <= 0:
        return []
    blocks = np.arange((count + 1) // 2, dtype=np.uint64)
    key = stream_key(seed, job, purpose)
    w = philox4x32_10(blocks, blocks >> np.uint64(32), np.full_like(blocks, rep & 0xFFFFFFFF),
                      np.full_like(blocks, rep >> 32), *key)
    out = []
    for i in range(blocks.size):
        out.append((int(w[1][i]) << 32) | int(w[0][i]))
        out.append((int(w[3][i]) << 32) | int(w[2][i]))
    return out[:count]


def uniform(u):
    return (u >> 11) * 2.0 ** -53


def split_range(n, parts, part):
    base, rem = divmod(n, parts)
    lo = part * base + min(part, rem)
    return lo, lo + base + (1 if part < rem else 0)


def class_of(labels, classes):
    y = np.full(len(labels), -1, np.int64)
    for c, raws in enumerate(classes):
        y[np.isin(labels, raws)] = c
    return y


def lists(seed, job, task, y, split):
    """Train, validation and test rows (ascending) with the 10 % holdout when there is no validation."""
    tr, va, te = (np.flatnonzero((y >= 0) & (split == s)) for s in (0, 1, 2))
    holdout = False
    if va.size == 0 and tr.size >= 2:
        n = tr.size
        nh = max(1, (n + 5) // 10)
        w = words(seed, job, "probe.holdout." + task, 0, n)
        order = sorted(range(n), key=lambda i: (w[i], i))
        pick = np.zeros(n, bool)
        pick[order[:nh]] = True
        tr, va = tr[~pick], tr[pick]
        holdout = True
    return tr, va, te, holdout


def batch_order(seed, job, task, s, tr):
    perm = list(tr)
    n = len(perm)
    w = words(seed, job, "probe.order." + task, s, max(n - 1, 0))
    for k, i in enumerate(range(n - 1, 0, -1)):
        j = (w[k] * (i + 1)) >> 64
        perm[i], perm[j] = perm[j], perm[i]
    return np.array(perm, np.int64)


def kaiming(seed, job, task, s, K, d):
    w = words(seed, job, "probe.init." + task, s, K * d)
    bound = 1.0 / math.sqrt(d)
    return np.array([np.float32(-bound + 2.0 * bound * uniform(u)) for u in w], np.float64).reshape(K, d)


def sigmoid(z):
    return np.where(z >= 0, 1.0 / (1.0 + np.exp(-np.abs(z))), np.exp(-np.abs(z)) / (1.0 + np.exp(-np.abs(z))))


def train_mrmbench(X, y, K, lr, W0, batch=128, wd=0.1, b1=0.9, b2=0.95, eps=1e-8):
    """X [n, d] in batch order, y classes; one head; returns W [K, d] (float64)."""
    n = X.shape[0]
    T = -(-n // batch)
    W = W0.astype(np.float64).copy()
    m = np.zeros_like(W)
    v = np.zeros_like(W)
    for t in range(T):
        Xb = X[t * batch:(t + 1) * batch].astype(np.float64)
        yb = y[t * batch:(t + 1) * batch]
        b = Xb.shape[0]
        Z = Xb @ W.T
        if K == 1:
            R = sigmoid(Z[:, 0]) - yb
            R = R[:, None]
        else:
            E = np.exp(Z - Z.max(1, keepdims=True))
            R = E / E.sum(1, keepdims=True)
            R[np.arange(b), yb] -= 1.0
        G = (R / b).T @ Xb
        norm = math.sqrt(float((G * G).sum()))
        c = 1.0 / (norm + 1e-6)
        if c < 1.0:
            G = G * c
        lr_t = lr * 0.5 * (1.0 + math.cos(math.pi * t / T))
        W = W * (1.0 - lr_t * wd)
        m = b1 * m + (1 - b1) * G
        v = b2 * v + (1 - b2) * G * G
        W = W - (lr_t / (1 - b1 ** (t + 1))) * (m / (np.sqrt(v) / math.sqrt(1 - b2 ** (t + 1)) + eps))
    return W


def predict(X, W, b=None):
    Z = X.astype(np.float64) @ W.T
    if b is not None:
        Z = Z + b
    if W.shape[0] == 1:
        return (Z[:, 0] > 0).astype(np.int64)
    return Z.argmax(1)


def metrics(pred, y, C, y_train):
    conf = np.zeros((C, C), np.int64)
    np.add.at(conf, (y, pred), 1)
    tp = np.diag(conf)
    den = 2 * tp + (conf.sum(0) - tp) + (conf.sum(1) - tp)
    f1 = np.where(den > 0, 2 * tp / np.maximum(den, 1), 0.0)
    maj = int(np.argmax(np.bincount(y_train, minlength=C)))
    return dict(accuracy=float((pred == y).mean()), macro_f1=float(f1.mean()), confusion=conf.tolist(),
                majority_baseline=float((y == maj).mean()))


def newton_logreg(X, y, C, l2, iters=100):
    """Multinomial logistic regression with bias: minimises mean CE + l2/2 ||W||^2 by Newton's method
    with a backtracking line search; returns W [C, d], b [C] (b centred: sum 0)."""
    n, d = X.shape
    Xa = np.hstack([X.astype(np.float64), np.ones((n, 1))])
    Y = np.zeros((n, C))
    Y[np.arange(n), y] = 1.0
    theta = np.zeros((C, d + 1))
    pen = np.ones(d + 1)
    pen[-1] = 0.0

    def f_g(th):
        Z = Xa @ th.T
        mx = Z.max(1, keepdims=True)
        lse = mx[:, 0] + np.log(np.exp(Z - mx).sum(1))
        P = np.exp(Z - lse[:, None])
        f = (lse - Z[np.arange(n), y]).mean() + 0.5 * l2 * (th[:, :d] ** 2).sum()
        g = (P - Y).T @ Xa / n + l2 * th * pen
        return f, g, P

    for _ in range(iters):
        f, g, P = f_g(theta)
        if np.abs(g).max() < 1e-13:
            break
        # Hessian of the mean CE: sum_i (diag(p_i) - p_i p_i^T) kron x_i x_i^T / n, plus the penalty
        H = np.zeros((C * (d + 1), C * (d + 1)))
        for a in range(C):
            for c in range(C):
                w = P[:, a] * ((a == c) - P[:, c])
                H[a * (d + 1):(a + 1) * (d + 1), c * (d + 1):(c + 1) * (d + 1)] = (Xa * w[:, None]).T @ Xa / n
        H += np.diag(np.tile(l2 * pen, C))
        # the softmax is invariant to a common shift of the biases: fix it with a tiny ridge on b
        H += np.diag(np.tile(np.r_[np.zeros(d), 1e-12], C))
        step = np.linalg.solve(H, g.reshape(-1)).reshape(C, d + 1)
        a = 1.0
        while a > 1e-10:
            fn = f_g(theta - a * step)[0]
            if fn <= f - 1e-4 * a * (g * step).sum():
                break
            a /= 2
        theta = theta - a * step
    W, b = theta[:, :d], theta[:, d]
    return W, b - b.mean()


def ledoit_wolf_pooled(Xc):
    """Ledoit-Wolf shrinkage of S = Xc^T Xc / n (Xc already centred): returns (Sigma_hat, s)."""
    n, p = Xc.shape
    S = Xc.T @ Xc / n
    mu = np.trace(S) / p
    fro = (S ** 2).sum()
    delta = (fro - 2 * mu * np.trace(S) + p * mu * mu) / p
    beta = ((np.sum(Xc ** 2, 1) ** 2).sum() / n - fro) / (p * n)
    beta = min(beta, delta)
    s = 0.0 if delta == 0 else beta / delta
    return (1 - s) * S + s * mu * np.eye(p), s
