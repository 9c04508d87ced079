"""The workloads: sizes, seeded inputs and NumPy references (hand-derived derivatives).

Nothing here imports JAX, PyTorch or tensorlang: the worker of every system imports this module
to build its inputs, and the driver to compute the reference each result is checked against.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass, field

import numpy as np

WORKLOADS = "benchmarks/workloads"


@dataclass
class Case:
    key: str                 # "W5b": one table and one curve set
    wid: str                 # "W5": the workload of the spec (one plot file)
    title: str
    size_name: str           # the swept size, as shown in tables and on the x axis
    full: list
    quick: list
    target: str              # "order" (tensorlang >= 10x faster), "constant" (<= 1.25x), or
    #                          "bounds": extra["bounds"], a list of (systems or None for every
    #                          peer, factor, "within" | "faster"): tensorlang within `factor` of
    #                          the best of those peers, or `factor` times faster than it
    derivative: str          # what is timed, e.g. "grad A"
    fixed: str = ""          # the sizes that do not change along the sweep
    ref_kind: str = "dense"  # "dense": arrays compared entry by entry; "diag": a diagonal matrix
    note: str = ""
    extra: dict = field(default_factory=dict)

    def sizes(self, quick: bool) -> list:
        return self.quick if quick else self.full


def _sigmoid(z):
    return 0.5 * (1.0 + np.tanh(0.5 * z))


# ====================================================================== inputs
def inputs(key: str, size, seed: int = 0) -> dict:
    """The inputs of case `key` at `size`, in parameter order; identical in every process."""
    rng = np.random.default_rng([seed, zlib.crc32(key.encode())])
    g = rng.standard_normal
    if key == "W1":
        n = size
        return dict(A=g((n, n)), B=g((n, n)), W=g((n, n)))
    if key == "W2":
        b, d, h, k = size, 784, 256, 10
        return dict(X=g((b, d)), W1=g((d, h)) / np.sqrt(d), c1=0.1 * g(h),
                    W2=g((h, k)) / np.sqrt(h), c2=0.1 * g(k), y=rng.integers(0, k, size=b))
    if key == "W3":
        v, d, b = size, 64, 1024
        return dict(E=g((v, d)), T=g((b, d)), y=rng.integers(0, v, size=b))
    if key == "W4":
        v, d, b = size, 32, 512
        uniq = rng.choice(v, size=int(round(0.7 * b)), replace=False)
        idx = np.concatenate([uniq, rng.choice(uniq, size=b - uniq.size)])
        rng.shuffle(idx)
        return dict(E=g((v, d)), T=g((b, d)), idx=idx.astype(np.int64))
    if key == "W5a":
        n = CASES["W5a"].extra["n"]
        return dict(A=g((n, n)))
    if key == "W5b":
        n = size
        return dict(A=g((n, n)), B=g((n, n)))
    if key == "W6":
        return dict(x=g(size))
    if key in ("W7a", "W7b"):
        n = size
        out = dict(x=g(n), A=g((n, n)))
        if key == "W7b":
            out["v"] = g(n)
        return out
    if key == "W8":
        m = n = size
        r = 10
        return dict(U=g((m, r)), V=g((n, r)), R=g((m, n)), M=rng.random((m, n)) < 0.5)
    if key == "W9":
        N = size
        X = g((N, 3))
        D = rng.random((N, N)) * 6.0
        return dict(X=X, D=0.5 * (D + D.T))
    if key == "W10a":
        n, K = size, 16
        return dict(x=g(n), w=g(K), T=g(n))
    if key == "W10b":
        h = size
        return dict(img=g((h, h)), w=g((5, 5)) / 5.0, T=g((h, h)))
    if key == "W11":
        h = w = size
        rr, cc = np.mgrid[0:h, 0:w]
        # a disc-shaped region with a rectangular hole: the mask of a shape in the image
        disc = (rr - h / 2) ** 2 + (cc - w / 2) ** 2 < (0.45 * h) ** 2
        hole = (abs(rr - h / 2) < h / 10) & (abs(cc - 0.6 * w) < w / 8)
        return dict(ux=cc + 0.3 * g((h, w)), uy=rr + 0.3 * g((h, w)),
                    theta=0.2 * g((h, w)), M=disc & ~hole)
    if key == "W12":
        m, n = 4000, size
        X = g((m, n)) / np.sqrt(n)
        w = g(n)
        t = (rng.random(m) < _sigmoid(X @ w)).astype(np.float64)
        return dict(w=0.5 * g(n), X=X, t=t)
    if key == "W13":
        T, d = CASES["W13"].extra["T"], size
        return dict(x=g((T, d)), W=g((d, d)) / np.sqrt(d), h0=g(d))
    if key == "W14":
        n = m = size
        d = CASES["W14"].extra["d"]
        return dict(x=g((n, d)), y=g((m, d)), g=np.float64(1.0))
    if key == "W15":
        T, K = size, CASES["W15"].extra["K"]
        return dict(pi=np.log(rng.dirichlet(np.ones(K))),
                    A=np.log(rng.dirichlet(np.ones(K), size=K)), E=g((T, K)))
    raise KeyError(key)


# ====================================================================== NumPy: forward and derivative
# Each function takes the inputs by name and returns the forward value, or the derivative as a
# tuple of arrays (the reference every system is checked against; the NumPy rows of W1, W2,
# W5, W10 and W12 time these same functions).
def _w1_f(A, B, W):
    return float(np.vdot(W, A @ B))


def _w1_d(A, B, W):
    return (W @ B.T,)


def _w2_parts(X, W1, c1, W2, c2, y):
    h = X @ W1 + c1
    a = np.maximum(h, 0.0)
    z = a @ W2 + c2
    zmax = z.max(axis=1, keepdims=True)
    e = np.exp(z - zmax)
    s = e.sum(axis=1, keepdims=True)
    lse = np.log(s) + zmax
    return h, a, z, e / s, lse


def _w2_f(X, W1, c1, W2, c2, y):
    _, _, z, _, lse = _w2_parts(X, W1, c1, W2, c2, y)
    b = X.shape[0]
    return float(np.mean(lse[:, 0] - z[np.arange(b), y]))


def _w2_d(X, W1, c1, W2, c2, y):
    h, a, z, p, _ = _w2_parts(X, W1, c1, W2, c2, y)
    b = X.shape[0]
    dz = p
    dz[np.arange(b), y] -= 1.0
    dz /= b
    da = dz @ W2.T
    da *= h > 0.0
    return X.T @ da, da.sum(axis=0), a.T @ dz, dz.sum(axis=0)


def _w3_f(E, T, y):
    return 0.5 * float(np.sum((E[y] - T) ** 2))


def _w3_d(E, T, y):
    G = np.zeros_like(E)
    np.add.at(G, y, E[y] - T)
    return (G,)


def _w4_f(E, T, idx):
    return _w3_f(E, T, idx)


def _w4_d(E, T, idx):
    return _w3_d(E, T, idx)


def _w5a_f(A, k):
    return k * float(np.trace(A))


def _w5a_d(A, k):
    G = np.zeros_like(A)
    np.fill_diagonal(G, float(k))
    return (G,)


def _w5b_f(A, B):
    return float(np.vdot(A, B.T))


def _w5b_d(A, B):
    return B.T.copy(), A.T.copy()


def _w6_fmap(x):
    return x * np.sin(x) + _sigmoid(x)


def _w6_diag(x):
    s = _sigmoid(x)
    return np.sin(x) + x * np.cos(x) + s * (1.0 - s)


def _w7_f(x, A, v=None):
    return float(x @ (A @ x))


def _w7a_d(x, A):
    return (A + A.T,)


def _w7b_d(x, A, v):
    return (A @ v + A.T @ v,)


def _w8_f(U, V, R, M):
    P = U @ V.T
    return 0.5 * float(np.sum(M * (P - R) ** 2))


def _w8_d(U, V, R, M):
    m, r = U.shape
    H = np.zeros((m, r, m, r))
    Mf = M.astype(np.float64)
    blocks = np.einsum("ij,ja,jb->iab", Mf, V, V)
    H[np.arange(m), :, np.arange(m), :] = blocks
    return (H,)


def _w9_f(X, D):
    diff = X[:, None, :] - X[None, :, :]
    q = np.sum(diff ** 2, axis=2)
    off = ~np.eye(X.shape[0], dtype=bool)
    return 0.25 * float(np.sum(((q - D) ** 2)[off]))


def _w9_d(X, D):
    """H[p, :, j, :] = -4 d d^T - 2 r I for j != p (d = x_p - x_j, r = |d|^2 - D_pj), and the
    diagonal block is minus the sum of the others (D symmetric)."""
    N = X.shape[0]
    diff = X[:, None, :] - X[None, :, :]
    r = np.sum(diff ** 2, axis=2) - D
    H = -4.0 * diff[:, :, :, None] * diff[:, :, None, :] - 2.0 * r[:, :, None, None] * np.eye(3)
    H[np.arange(N), np.arange(N)] = 0.0
    H[np.arange(N), np.arange(N)] = -H.sum(axis=1)
    return (H.transpose(0, 2, 1, 3).copy(),)


def _w10a_y(x, w):
    K = w.size
    xp = np.concatenate([x, np.zeros(K - 1)])
    return np.correlate(xp, w, mode="valid"), xp


def _w10a_f(x, w, T):
    y, _ = _w10a_y(x, w)
    return 0.5 * float(np.sum((y - T) ** 2))


def _w10a_d(x, w, T):
    y, xp = _w10a_y(x, w)
    g = y - T
    gx = np.convolve(g, w)[: x.size]
    gw = np.correlate(xp, g, mode="valid")
    return gx, gw


def _w10b_y(img, w):
    h, v = img.shape
    P = np.pad(img, 2)
    y = np.zeros_like(img)
    for p in range(5):
        for q in range(5):
            y += w[p, q] * P[p:p + h, q:q + v]
    return y, P


def _w10b_f(img, w, T):
    y, _ = _w10b_y(img, w)
    return 0.5 * float(np.sum((y - T) ** 2))


def _w10b_d(img, w, T):
    h, v = img.shape
    y, P = _w10b_y(img, w)
    g = y - T
    G = np.pad(g, 2)
    gimg = np.zeros_like(img)
    gw = np.empty((5, 5))
    for p in range(5):
        for q in range(5):
            gimg += w[p, q] * G[4 - p:4 - p + h, 4 - q:4 - q + v]
            gw[p, q] = np.vdot(g, P[p:p + h, q:q + v])
    return gimg, gw


def _w11_terms(ux, uy, theta, M):
    co, si = np.cos(theta), np.sin(theta)
    # (mask, dx, dy, slices of p and q): q - p rotated is (co, si) right, (-co, -si) left,
    # (-si, co) down, (si, -co) up
    mr = M[:, :-1] & M[:, 1:]
    mv = M[:-1, :] & M[1:, :]
    right = (mr, ux[:, 1:] - ux[:, :-1] - co[:, :-1], uy[:, 1:] - uy[:, :-1] - si[:, :-1])
    left = (mr, ux[:, :-1] - ux[:, 1:] + co[:, 1:], uy[:, :-1] - uy[:, 1:] + si[:, 1:])
    down = (mv, ux[1:, :] - ux[:-1, :] + si[:-1, :], uy[1:, :] - uy[:-1, :] - co[:-1, :])
    up = (mv, ux[:-1, :] - ux[1:, :] - si[1:, :], uy[:-1, :] - uy[1:, :] + co[1:, :])
    return right, left, down, up


def _w11_f(ux, uy, theta, M):
    return float(sum(np.sum(m * (dx ** 2 + dy ** 2)) for m, dx, dy in _w11_terms(ux, uy, theta, M)))


def _w11_d(ux, uy, theta, M):
    right, left, down, up = _w11_terms(ux, uy, theta, M)
    gx, gy = np.zeros_like(ux), np.zeros_like(uy)
    # each term (u_q - u_p - R e)^2 adds 2 e to q and -2 e to p
    for (m, dx, dy), q, p in [
            (right, np.s_[:, 1:], np.s_[:, :-1]), (left, np.s_[:, :-1], np.s_[:, 1:]),
            (down, np.s_[1:, :], np.s_[:-1, :]), (up, np.s_[:-1, :], np.s_[1:, :])]:
        ex, ey = 2.0 * m * dx, 2.0 * m * dy
        gx[q] += ex
        gx[p] -= ex
        gy[q] += ey
        gy[p] -= ey
    return gx, gy


def _w12_f(w, X, t):
    z = X @ w
    return float(np.mean(np.logaddexp(0.0, z) - t * z))


def _w12_d(w, X, t):
    s = _sigmoid(X @ w)
    d = s * (1.0 - s) / X.shape[0]
    return (X.T @ (d[:, None] * X),)


def _w13_f(x, W, h0):
    h = h0
    for t in range(len(x)):
        h = np.tanh(x[t] + W @ h)
    return float(h @ h)


def _w13_d(x, W, h0):
    """Back-propagation through time by hand: the states are kept, then walked back."""
    T = len(x)
    hs = np.empty((T + 1, len(h0)))
    hs[0] = h0
    for t in range(T):
        hs[t + 1] = np.tanh(x[t] + W @ hs[t])
    gW = np.zeros_like(W)
    hb = 2.0 * hs[T]
    for t in range(T, 0, -1):
        ab = hb * (1.0 - hs[t] ** 2)
        gW += np.outer(ab, hs[t - 1])
        hb = W.T @ ab
    return (gW,)


def _sdtw_diagonals(D, g):
    """Soft-DTW's R matrix (padded: R[0, 0] = 0, the rest of row and column 0 infinite),
    one anti-diagonal i + j = s at a time."""
    n, m = D.shape
    R = np.full((n + 2, m + 2), np.inf)
    R[0, 0] = 0.0
    for s in range(2, n + m + 1):
        i = np.arange(max(1, s - m), min(n, s - 1) + 1)
        j = s - i
        v = np.stack([R[i - 1, j - 1], R[i - 1, j], R[i, j - 1]])
        top = -v.min(axis=0)
        R[i, j] = D[i - 1, j - 1] - g * (top + np.log(np.exp(-v / g - top / g).sum(axis=0)))
    return R


def _sdtw_D(x, y):
    return ((x[:, None, :] - y[None, :, :]) ** 2).sum(axis=2)


def _w14_f(x, y, g):
    D = _sdtw_D(x, y)
    return float(_sdtw_diagonals(D, g)[len(x), len(y)])


def _w14_d(x, y, g):
    """Value and gradient: the R matrix forward, the E matrix (dvalue / dR) backward, each
    one anti-diagonal at a time, then dD = E chained through D[i, j] = |x_i - y_j|^2."""
    D = _sdtw_D(x, y)
    n, m = D.shape
    R = _sdtw_diagonals(D, g)
    Dp = np.zeros((n + 2, m + 2))
    Dp[1:n + 1, 1:m + 1] = D
    R[n + 1, :] = -np.inf
    R[:, m + 1] = -np.inf
    R[n + 1, m + 1] = R[n, m]
    E = np.zeros((n + 2, m + 2))
    E[n + 1, m + 1] = 1.0
    for s in range(n + m, 1, -1):
        i = np.arange(max(1, s - m), min(n, s - 1) + 1)
        j = s - i
        a = np.exp((R[i + 1, j] - R[i, j] - Dp[i + 1, j]) / g)
        b = np.exp((R[i, j + 1] - R[i, j] - Dp[i, j + 1]) / g)
        c = np.exp((R[i + 1, j + 1] - R[i, j] - Dp[i + 1, j + 1]) / g)
        E[i, j] = E[i + 1, j] * a + E[i, j + 1] * b + E[i + 1, j + 1] * c
    G = E[1:n + 1, 1:m + 1]
    gx = 2.0 * (x * G.sum(axis=1)[:, None] - G @ y)
    gy = 2.0 * (y * G.sum(axis=0)[:, None] - G.T @ x)
    return np.float64(R[n, m]), gx, gy


def _lse_cols(M):
    top = M.max(axis=0)
    return top + np.log(np.exp(M - top).sum(axis=0))


def _w15_f(pi, A, E):
    a = pi + E[0]
    for t in range(1, len(E)):
        a = _lse_cols(a[:, None] + A) + E[t]
    top = a.max()
    return float(top + np.log(np.exp(a - top).sum()))


def _w15_d(pi, A, E):
    """Posterior marginals by the forward and backward recursions in log space (as the .tl
    program: a max-shifted log-sum-exp of a K x K matrix per step and direction)."""
    T, K = E.shape
    alpha, beta = np.empty((T, K)), np.zeros((T, K))
    alpha[0] = pi + E[0]
    for t in range(1, T):
        alpha[t] = _lse_cols(alpha[t - 1][:, None] + A) + E[t]
    At = A.T
    for t in range(T - 2, -1, -1):
        beta[t] = _lse_cols((E[t + 1] + beta[t + 1])[:, None] + At)
    top = alpha[-1].max()
    ll = top + np.log(np.exp(alpha[-1] - top).sum())
    return (np.exp(alpha + beta - ll),)


def _w15_scaled(pi, A, E):
    """Posterior marginals in probability space (Rabiner's scaled forward-backward):
    exp(A) once, then a matrix-vector product per step and direction, each step's
    forward variable rescaled to sum to one."""
    _, _, alpha, beta, _ = scaled_passes(pi, A, E)
    return (alpha * beta,)


def scaled_passes(pi, A, E):
    """(exp(A), the emissions scaled per step, alpha, beta, the scales) of the scaled
    forward-backward (benchmarks/hmm.py builds the expected transition counts on them)."""
    T, K = E.shape
    P = np.exp(A)
    e = np.exp(E - E.max(axis=1, keepdims=True))
    alpha, beta, scale = np.empty((T, K)), np.empty((T, K)), np.empty(T)
    a = np.exp(pi) * e[0]
    scale[0] = a.sum()
    alpha[0] = a / scale[0]
    for t in range(1, T):
        a = (alpha[t - 1] @ P) * e[t]
        scale[t] = a.sum()
        alpha[t] = a / scale[t]
    beta[-1] = 1.0
    for t in range(T - 2, -1, -1):
        beta[t] = P @ (e[t + 1] * beta[t + 1]) / scale[t + 1]
    return P, e, alpha, beta, scale


NUMPY = {
    "W1": (_w1_f, _w1_d), "W2": (_w2_f, _w2_d), "W3": (_w3_f, _w3_d), "W4": (_w4_f, _w4_d),
    "W5a": (_w5a_f, _w5a_d), "W5b": (_w5b_f, _w5b_d),
    "W6": (_w6_fmap, None), "W7a": (_w7_f, _w7a_d), "W7b": (_w7_f, _w7b_d),
    "W8": (_w8_f, _w8_d), "W9": (_w9_f, _w9_d), "W10a": (_w10a_f, _w10a_d),
    "W10b": (_w10b_f, _w10b_d), "W11": (_w11_f, _w11_d), "W12": (_w12_f, _w12_d),
    "W13": (_w13_f, _w13_d), "W14": (_w14_f, _w14_d), "W15": (_w15_f, _w15_d),
}
# further hand-written NumPy rows: (case, variant) -> (forward, derivative)
NUMPY_VARIANTS = {("W15", "scaled"): (_w15_f, _w15_scaled)}


def call_args(key: str, size, inp: dict) -> dict:
    """The inputs plus the per-call constants a function takes (k of W5a)."""
    if key == "W5a":
        return dict(inp, k=size)
    return inp


def reference(key: str, size, inp: dict):
    """The derivative every system must reproduce: a tuple of arrays, or for ref_kind "diag"
    the diagonal of the (otherwise zero) matrix."""
    if key == "W6":
        return (_w6_diag(inp["x"]),)
    f, d = NUMPY[key]
    return d(**call_args(key, size, inp))


def forward_reference(key: str, size, inp: dict):
    f, _ = NUMPY[key]
    return f(**call_args(key, size, inp))


# ====================================================================== the cases
CASES = {c.key: c for c in [
    Case("W1", "W1", "C = A B, L = sum W * C, gradient in A", "n",
         [256, 512, 1024], [256], "constant", "grad A",
         note="A, B, W are n x n; the gradient is W B^T (one matrix product)"),
    Case("W2", "W2", "2-layer MLP + softmax cross-entropy with a label bracket", "b",
         [256, 1024, 4096], [256], "constant", "grad W1, c1, W2, c2",
         fixed="784 -> 256 -> 10"),
    Case("W3", "W3", "one-hot matmul Y[s,c] = sum[u]([u == y[s]] E[u,c]), gradient in E", "v",
         [10_000, 30_000, 100_000], [10_000], "order", "grad E", fixed="d = 64, b = 1024"),
    Case("W4", "W4", "embedding gather with 30 % duplicate indices, gradient in E", "v",
         [10_000, 100_000, 1_000_000], [100_000], "order", "grad E",
         fixed="d = 32, b = 512"),
    Case("W5a", "W5", "k copies of trace(A) added one by one, gradient in A", "k",
         [1, 8, 64], [64], "order", "grad A", fixed="n = 1024", extra={"n": 1024}),
    Case("W5b", "W5", "trace product: sum[i,j](A[i,j] B[j,i]) in tl, trace(A @ B) in peers, "
         "gradient in A and B", "n", [256, 1024, 2048], [512], "order", "grad A, B"),
    Case("W6", "W6", "Jacobian of the elementwise map f(x) = x sin x + sigmoid(x)", "n",
         [1000, 4000, 16000], [500], "order", "dense Jacobian (n x n)",
         ref_kind="diag"),
    Case("W7a", "W7", "Hessian of x^T A x", "n", [250, 1000, 2000], [250], "order",
         "dense Hessian (n x n)"),
    Case("W7b", "W7", "one Hessian-vector product of x^T A x", "n", [250, 1000, 2000],
         [250], "constant-info", "H v"),
    Case("W8", "W8", "Hessian of a masked matrix-factorisation loss in U", "m = n",
         [100, 200, 400], [50], "order", "dense Hessian (m r x m r)", fixed="r = 10"),
    Case("W9", "W9", "Hessian of a pairwise-distance (stress) energy of N points in 3-D", "N",
         [100, 200, 400], [50], "order", "dense Hessian (3N x 3N)"),
    Case("W10a", "W10", "1-D correlation with K taps, gradient in input and taps", "n",
         [100_000, 300_000, 1_000_000], [100_000], "constant", "grad x, w", fixed="K = 16"),
    Case("W10b", "W10", "2-D 5x5 stencil (correlation, zero padding), gradient in image and "
         "weights", "h = w", [256, 512, 1024], [256], "constant", "grad img, w"),
    Case("W11", "W11", "image ARAP energy gradient (mask, per-pixel rotations, 4 neighbours)",
         "h = w", [256, 512, 1024], [256], "constant", "grad ux, uy"),
    Case("W12", "W12", "logistic-regression loss Hessian", "n", [100, 300, 1000],
         [100], "constant", "dense Hessian (n x n)", fixed="m = 4000"),
    Case("W13", "W13", "tanh RNN (examples/rnn.tl), gradient of the last state's squared "
         "norm in W", "d", [64, 128, 256], [64], "bounds", "grad W", fixed="T = 1000",
         extra={"T": 1000, "bounds": [(None, 1.0, "within")]}),
    Case("W14", "W14", "soft-DTW (examples/soft_dtw.tl), value and gradient in both "
         "sequences", "n = m", [250, 500, 1000], [250], "bounds", "value and grad x, y",
         fixed="d = 8, gamma = 1", extra={"d": 8, "bounds": [(("numba",), 1.5, "within"),
                                                             (("jax",), 10.0, "faster")]}),
    Case("W15", "W15", "HMM forward-backward: posterior marginals as the gradient of the "
         "log-likelihood (examples/hmm.tl) in the emission log-probabilities", "T",
         [1000, 3000, 10_000], [1000], "bounds", "grad E", fixed="K = 64",
         extra={"K": 64, "bounds": [(None, 1.0, "within")]}),
]}

# Which parameters the derivative is taken with respect to (all systems)
WRT = {
    "W1": ("A",), "W2": ("W1", "c1", "W2", "c2"), "W3": ("E",), "W4": ("E",), "W5a": ("A",),
    "W5b": ("A", "B"), "W6": ("x",), "W7a": ("x",), "W7b": ("x",), "W8": ("U",), "W9": ("X",),
    "W10a": ("x", "w"), "W10b": ("img", "w"), "W11": ("ux", "uy"), "W12": ("w",),
    "W13": ("W",), "W14": ("x", "y"), "W15": ("E",),
}


def size_label(case: Case, size) -> str:
    if isinstance(size, int) and size >= 10_000 and size % 1000 == 0:
        m = size
        e = 0
        while m % 10 == 0:
            m //= 10
            e += 1
        return f"{m}e{e}" if m < 10 else f"{size:,}".replace(",", " ")
    return str(size)


def flat_numpy(out) -> tuple:
    """A system's result as a tuple of NumPy arrays: one output, a tuple of outputs, or
    value_and_grad's (value, (grad, ...)) flattened."""
    parts = out if isinstance(out, tuple) else (out,)
    flat = []
    for p in parts:
        flat += list(p) if isinstance(p, tuple) else [p]
    return tuple(np.asarray(p) for p in flat)
