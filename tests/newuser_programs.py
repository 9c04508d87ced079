"""Programs written from the documentation alone, in domains the other corpora leave out.

Each entry holds the program text (its function to test is named like the entry;
other functions of the text may come before it and be called), the sizes of the
test inputs, `make(rng, **sizes)` that draws inputs in the program's domain, a
NumPy version written independently of tensorlang (`ref(**inputs)`, the same
value), and a note.  tests/test_newuser_programs.py checks values, derivatives
and the certificate.
"""
import numpy as np
from scipy.special import logsumexp as _lse


def _softplus(z):
    return np.logaddexp(0.0, z)


def _logsoftmax(Z):
    return Z - _lse(Z, axis=1, keepdims=True)


# ------------------------------------------------------------------ physics
def lj_energy_ref(X, s2, rc2):
    n = len(X)
    e = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            r2 = np.sum((X[i] - X[j]) ** 2)
            if r2 < rc2:
                q = s2 / r2
                e += 4.0 * (q ** 6 - q ** 3)
    return e


def coulomb_ref(X, q, eps):
    D = X[:, None, :] - X[None, :, :]
    R = np.sqrt(np.sum(D ** 2, axis=2) + eps ** 2)
    iu = np.triu_indices(len(X), 1)
    return float(np.sum((q[:, None] * q[None, :] / R)[iu]))


def springs_ref(X, E, rest, k):
    d = X[E[:, 0]] - X[E[:, 1]]
    L = np.sqrt(np.sum(d ** 2, axis=1))
    return float(np.sum(0.5 * k * (L - rest) ** 2))


def nbody_ref(X, m, soft):
    D = X[:, None, :] - X[None, :, :]
    R = np.sqrt(np.sum(D ** 2, axis=2) + soft)
    P = m[:, None] * m[None, :] / R
    np.fill_diagonal(P, 0.0)
    return float(-0.5 * np.sum(P))


def heat_ref(u0, alpha, obs):
    T, n = obs.shape
    u = u0.copy()
    loss = np.sum((u - obs[0]) ** 2)
    for t in range(1, T):
        left = np.concatenate([[0.0], u[:-1]])
        right = np.concatenate([u[1:], [0.0]])
        u = u + alpha * (left + right - 2.0 * u)
        loss += np.sum((u - obs[t]) ** 2)
    return loss


def wave_ref(u0, v0, c2, w):
    T, n = w.shape
    U = np.zeros((T, n))

    def lap(u):
        return np.concatenate([[0.0], u[:-1]]) + np.concatenate([u[1:], [0.0]]) - 2.0 * u
    U[0] = u0
    if T > 1:
        U[1] = u0 + v0 + 0.5 * c2 * lap(u0)
    for t in range(2, T):
        U[t] = 2.0 * U[t - 1] - U[t - 2] + c2 * lap(U[t - 1])
    return float(np.sum(w * U ** 2))


def ising_ref(s, J, hf):
    m = np.tanh(s)
    e = -J * (np.sum(m[1:, :] * m[:-1, :]) + np.sum(m[:, 1:] * m[:, :-1]))
    return e - hf * np.sum(m) + 0.1 * np.sum(s ** 2)


# ------------------------------------------------------------------ statistics
def chol_gauss_ref(X, mu, Lr):
    d = len(mu)
    L = np.tril(Lr, -1) + np.diag(np.exp(np.diag(Lr)))
    Z = (X - mu) @ L        # z[s, j] = sum_i (x - mu)[s, i] L[i, j]
    N = len(X)
    return float(N * np.sum(np.diag(Lr)) - 0.5 * np.sum(Z ** 2) - 0.5 * N * d * np.log(2 * np.pi))


def student_t_reg_ref(X, y, w, ls, nu):
    r = (y - X @ w) / np.exp(ls)
    return float(np.sum(0.5 * (nu + 1.0) * np.log1p(r ** 2 / nu) + ls))


def cauchy_ref(X, y, w, c):
    r = y - X @ w
    return float(np.sum(np.log1p((r / c) ** 2)))


def logistic_ref(X, y, w, b, lam):
    z = X @ w + b
    return float(np.mean(_softplus(z) - y * z) + 0.5 * lam * np.sum(w ** 2))


def poisson_ref(X, y, w, b):
    eta = X @ w + b
    return float(np.sum(np.exp(eta) - y * eta))


def softmax_reg_ref(X, W, c, y):
    Z = X @ W + c
    return float(-np.mean(_logsoftmax(Z)[np.arange(len(y)), y]))


def mixture1d_ref(x, a, mu, ls):
    lw = a - _lse(a)
    ll = lw[None, :] - 0.5 * ((x[:, None] - mu[None, :]) / np.exp(ls)[None, :]) ** 2 \
        - ls[None, :] - 0.5 * np.log(2 * np.pi)
    return float(-np.sum(_lse(ll, axis=1)))


def kalman_ref(y, a, q, r, m0, p0):
    m, P = m0, p0
    nll = 0.0
    for t in range(len(y)):
        mp = a * m
        Pp = a * a * P + q
        S = Pp + r
        nll += 0.5 * (np.log(S) + (y[t] - mp) ** 2 / S)
        K = Pp / S
        m = mp + K * (y[t] - mp)
        P = (1.0 - K) * Pp
    return nll


def ar_ref(x, a):
    T, p = len(x), len(a)
    e = np.array([x[t + p] - sum(a[k] * x[t + p - 1 - k] for k in range(p)) for t in range(T - p)])
    return float(np.sum(e ** 2))


def expsmooth_ref(x, z):
    al = 1.0 / (1.0 + np.exp(-z))
    s = np.zeros(len(x))
    s[0] = x[0]
    for t in range(1, len(x)):
        s[t] = al * x[t] + (1 - al) * s[t - 1]
    return float(np.sum((x[1:] - s[:-1]) ** 2))


# ------------------------------------------------------------------ ML
def layer_norm_ref(X, g, b, T):
    mu = X.mean(axis=1, keepdims=True)
    var = ((X - mu) ** 2).mean(axis=1, keepdims=True)
    Y = g * (X - mu) / np.sqrt(var + 1e-5) + b
    return float(np.sum((Y - T) ** 2))


def batch_norm_ref(X, g, b, W):
    mu = X.mean(axis=0)
    var = ((X - mu) ** 2).mean(axis=0)
    Y = g * (X - mu) / np.sqrt(var + 1e-5) + b
    return float(np.sum(np.tanh(Y) * W))


def gru_ref(x, Wz, Uz, Wr, Ur, Wh, Uh, h0):
    h = h0
    sig = lambda v: 1.0 / (1.0 + np.exp(-v))  # noqa: E731
    for t in range(len(x)):
        z = sig(Wz @ x[t] + Uz @ h)
        r = sig(Wr @ x[t] + Ur @ h)
        c = np.tanh(Wh @ x[t] + Uh @ (r * h))
        h = (1.0 - z) * h + z * c
    return float(np.sum(h ** 2))


def causal_conv_ref(x, W, v):
    ch, T = x.shape
    o, _, k = W.shape
    y = np.zeros((o, T))
    for a in range(o):
        for t in range(T):
            for c in range(ch):
                for j in range(k):
                    if t - 2 * j >= 0:
                        y[a, t] += W[a, c, j] * x[c, t - 2 * j]
    return float(np.sum(v * np.tanh(y)))


def infonce_ref(A, B, tau):
    S = A @ B.T / tau
    return float(np.mean(_lse(S, axis=1) - np.diag(S)))


def svm_ref(Z, y):
    b, k = Z.shape
    zy = Z[np.arange(b), y][:, None]
    M = np.maximum(0.0, 1.0 + Z - zy)
    M[np.arange(b), y] = 0.0
    return float(M.sum() / b)


def label_smooth_ref(Z, y, eps):
    b, k = Z.shape
    T = np.full((b, k), eps / k)
    T[np.arange(b), y] += 1.0 - eps
    return float(-np.sum(T * _logsoftmax(Z)) / b)


def focal_ref(Z, y, gam):
    lp = _logsoftmax(Z)[np.arange(len(y)), y]
    return float(-np.sum((1.0 - np.exp(lp)) ** gam * lp))


def gcn_ref(X, W, src, dst, v):
    agg = np.zeros_like(X)
    np.add.at(agg, dst, X[src])
    H = np.maximum(agg @ W, 0.0)
    return float(np.sum(H * v))


def triplet_ref(A, P, N, margin):
    dp = np.sum((A - P) ** 2, axis=1)
    dn = np.sum((A - N) ** 2, axis=1)
    return float(np.sum(np.maximum(dp - dn + margin, 0.0)))


def bradley_terry_ref(s, win, lose):
    return float(np.sum(_softplus(s[lose] - s[win])) + 0.5 * np.sum(s ** 2))


def huber_ref(X, y, w, delta):
    r = X @ w - y
    a = np.abs(r)
    return float(np.sum(np.where(a <= delta, 0.5 * r ** 2, delta * (a - 0.5 * delta))))


# ------------------------------------------------------------------ dynamic programs
def viterbi_ref(pi, A, E):
    d = pi + E[0]
    for t in range(1, len(E)):
        d = E[t] + np.max(d[:, None] + A, axis=0)
    return float(np.max(d))


def soft_edit_ref(x, y, g, gap):
    n, m = len(x), len(y)
    R = np.zeros((n + 1, m + 1))
    for i in range(n + 1):
        for j in range(m + 1):
            if i == 0 and j == 0:
                R[i, j] = 0.0
            elif i == 0:
                R[i, j] = R[i, j - 1] + gap
            elif j == 0:
                R[i, j] = R[i - 1, j] + gap
            else:
                v = np.array([R[i - 1, j - 1] + (x[i - 1] - y[j - 1]) ** 2,
                              R[i - 1, j] + gap, R[i, j - 1] + gap])
                R[i, j] = -g * _lse(-v / g)
    return float(R[n, m])


def binomial_ref(S0, K, a, p, disc, steps):
    N = len(steps)
    S = S0 * np.exp(a * (2.0 * np.arange(N) - (N - 1)))
    V = np.maximum(S - K, 0.0)
    for t in range(N - 2, -1, -1):
        V = disc * (p * V[1:t + 2] + (1 - p) * V[0:t + 1])
    return float(V[0])


def cummax_ref(x, w):
    return float(np.sum(w * np.maximum.accumulate(x)))


# ------------------------------------------------------------------ signal
def autocorr_ref(x, tgt):
    n, K = len(x), len(tgt)
    xc = x - x.mean()
    r = np.array([np.sum(xc[:n - k] * xc[k:]) / n for k in range(K)])
    return float(np.sum((r - tgt) ** 2))


def dft_ref(x, C, S):
    re = C @ x
    im = S @ x
    return float(np.sum(np.sqrt(re ** 2 + im ** 2 + 1e-12)))


def moving_avg_ref(x, t):
    n, m = len(x), len(t)
    k = n - m + 1
    y = np.array([x[i:i + k].mean() for i in range(m)])
    return float(np.sum((y - t) ** 2))


def horner_fit_ref(c, x, y):
    p = np.zeros_like(x)
    for s in range(len(c) - 1, -1, -1):
        p = c[s] + x * p
    return float(np.sum((p - y) ** 2))


def tridiag_logdet_ref(a, b, c):
    n = len(a)
    T = np.diag(a) + np.diag(b[:n - 1], 1) + np.diag(c[:n - 1], -1)
    return float(np.linalg.det(T))


# ------------------------------------------------------------------ more (calls, filters, gathers)
def mlp_calls_ref(X, W1, b1, W2, b2, T):
    H = np.tanh(X @ W1 + b1); Y = np.tanh(H @ W2 + b2)
    return float(np.mean((Y - T) ** 2))

def rank_ref(Z, M):
    pos = np.where(M, Z, np.inf).min(axis=1); neg = np.where(~M, Z, -np.inf).max(axis=1)
    return float(np.sum(np.maximum(0.0, 1.0 - pos + neg)))

def haar_ref(x, lam):
    a = (x[0::2] + x[1::2]) / np.sqrt(2); d = (x[0::2] - x[1::2]) / np.sqrt(2)
    return float(np.sum(a ** 2) + lam * np.sum(np.sqrt(d ** 2 + 1e-3)))

def zscore_ref(x, t):
    mu = x.mean(); var = ((x - mu) ** 2).mean()
    return float(np.sum(((x - mu) / np.sqrt(var + 1e-6) - t) ** 2))

def ctx_ref(E, tok, ctx, W, y):
    H = E[tok[ctx]].mean(axis=1)   # [b, w, d] -> [b, d]
    Z = H @ W
    return float(np.mean(_lse(Z, axis=1) - Z[np.arange(len(y)), y]))

def bigram_ref(W, tok):
    T = len(tok)
    return float(sum(_lse(W[tok[t]]) - W[tok[t], tok[t + 1]] for t in range(T - 1)))

def crf_ref(U, P, lab):
    T, K = U.shape
    a = U[0].copy()
    for t in range(1, T):
        a = U[t] + _lse(a[:, None] + P, axis=0)
    score = U[np.arange(T), lab].sum() + sum(P[lab[t - 1], lab[t]] for t in range(1, T))
    return float(_lse(a) - score)

def chamfer_ref(X, Y):
    D = ((X[:, None, :] - Y[None, :, :]) ** 2).sum(-1)
    return float(D.min(axis=1).sum() + D.min(axis=0).sum())

def kmeans_ref(X, mu):
    D = ((X[:, None, :] - mu[None, :, :]) ** 2).sum(-1)
    return float(D.min(axis=1).sum())

def down_ref(x, t):
    return float(np.sum((0.5 * (x[0::2] + x[1::2]) - t) ** 2))

def matpow_ref(A, steps):
    P = A.copy()
    for _ in range(len(steps) - 1): P = A @ P
    return float(np.trace(P))

def rosen_ref(x):
    return float(np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2))

def vander_ref(x, c, y):
    V = x[:, None] ** np.arange(len(c))[None, :]
    return float(np.sum((V @ c - y) ** 2))

def sinkhorn_ref(C, eps, steps):
    n, m = C.shape
    f = np.zeros(n); g = np.zeros(m)
    for _ in range(len(steps)):
        f = -eps * _lse((g[None, :] - C) / eps, axis=1)
        g = -eps * _lse((f[:, None] - C) / eps, axis=0)
    return float(f.sum() / n + g.sum() / m)


# ------------------------------------------------------------------ input makers
def _normal(rng, *shape):
    return rng.standard_normal(shape)


def _spread_points(rng, n, d):
    """Points on a jittered grid, so no two are close (well-conditioned 1/r terms)."""
    side = int(np.ceil(n ** (1.0 / d)))
    grid = np.stack(np.meshgrid(*[np.arange(side)] * d, indexing="ij"), -1).reshape(-1, d)
    return 1.1 * grid[rng.permutation(len(grid))[:n]] + 0.1 * rng.standard_normal((n, d))


def _edges(rng, n, m):
    """m edges between distinct points (a zero-length spring has no derivative)."""
    first = rng.integers(0, n, m)
    return np.stack([first, (first + rng.integers(1, n, m)) % n], 1)


PROGRAMS = {
    "lj_energy": dict(src="""
# Lennard-Jones energy of pairs i < j inside a cutoff: a value bracket on the squared distance
def lj_energy(X: f64[n, 3], s2: f64, rc2: f64) -> f64:
    r2[i, j] = sum[d]((X[i, d] - X[j, d]) ** 2)
    return sum[i, j]([j > i] * [r2[i, j] < rc2] * 4.0 * ((s2 / r2[i, j]) ** 6 - (s2 / r2[i, j]) ** 3))
""", sizes=dict(n=7), make=lambda rng, n: dict(X=_spread_points(rng, n, 3), s2=1.0, rc2=3.0),
        ref=lj_energy_ref, note="Lennard-Jones with a cutoff bracket"),

    "coulomb": dict(src="""
# softened Coulomb energy of charges q at positions X, each pair once
def coulomb(X: f64[n, d], q: f64[n], eps: f64) -> f64:
    r[i, j] = sqrt(sum[e]((X[i, e] - X[j, e]) ** 2) + eps ** 2)
    return sum[i, j | i < j](q[i] * q[j] / r[i, j])
""", sizes=dict(n=6, d=3), make=lambda rng, n, d: dict(X=_normal(rng, n, d), q=_normal(rng, n), eps=0.5),
        ref=coulomb_ref, note="softened Coulomb energy, pairs by a sum filter"),

    "springs": dict(src="""
# a spring network: edges as an i64 list of endpoint pairs
def springs(X: f64[n, d], E: i64[m, 2], rest: f64[m], k: f64[m]) -> f64:
    L[e] = sqrt(sum[c]((X[E[e, 0], c] - X[E[e, 1], c]) ** 2))
    return sum[e](0.5 * k[e] * (L[e] - rest[e]) ** 2)
""", sizes=dict(n=6, d=2, m=9),
        make=lambda rng, n, d, m: dict(
            X=_normal(rng, n, d),
            E=_edges(rng, n, m),
            rest=rng.uniform(0.5, 1.5, m), k=rng.uniform(0.5, 2.0, m)),
        ref=springs_ref, note="spring network over an i64 edge list"),

    "nbody": dict(src="""
# gravitational potential with softening, all ordered pairs i != j counted half
def nbody(X: f64[n, 3], m: f64[n], soft: f64) -> f64:
    R[i, j] = sqrt(sum[c]((X[i, c] - X[j, c]) ** 2) + soft)
    return -0.5 * sum[i, j]([i != j] * m[i] * m[j] / R[i, j])
""", sizes=dict(n=6), make=lambda rng, n: dict(X=_normal(rng, n, 3), m=rng.uniform(0.5, 2, n), soft=0.1),
        ref=nbody_ref, note="n-body potential with softening"),

    "heat": dict(src="""
# explicit heat equation stepped T - 1 times from u0, fitted to observations at every step
def heat(u0: f64[n], alpha: f64, obs: f64[T, n]) -> f64:
    u[t: T, i: n] = [t == 0] * u0[i] + [t >= 1] * (u[t - 1, i] + alpha * (
        [i >= 1] * u[t - 1, i - 1] + [i + 1 < n] * u[t - 1, i + 1] - 2.0 * u[t - 1, i]))
    return sum[t, i]((u[t, i] - obs[t, i]) ** 2)
""", sizes=dict(n=6, T=5), make=lambda rng, n, T: dict(u0=_normal(rng, n), alpha=0.2, obs=_normal(rng, T, n)),
        ref=heat_ref, note="heat equation as a recurrence over time"),

    "wave": dict(src="""
# leapfrog wave equation: a second-order recurrence (reads two steps back)
def wave(u0: f64[n], v0: f64[n], c2: f64, w: f64[T, n]) -> f64:
    lap0[i] = [i >= 1] * u0[i - 1] + [i + 1 < n] * u0[i + 1] - 2.0 * u0[i]
    U[t: T, i: n] = ([t == 0] * u0[i] + [t == 1] * (u0[i] + v0[i] + 0.5 * c2 * lap0[i])
        + [t >= 2] * (2.0 * U[t - 1, i] - U[t - 2, i] + c2 * ([i >= 1] * U[t - 1, i - 1]
        + [i + 1 < n] * U[t - 1, i + 1] - 2.0 * U[t - 1, i])))
    return sum[t, i](w[t, i] * U[t, i] ** 2)
""", sizes=dict(n=6, T=6), make=lambda rng, n, T: dict(u0=_normal(rng, n), v0=_normal(rng, n), c2=0.3,
                                                        w=_normal(rng, T, n)),
        ref=wave_ref, note="wave equation, two-step recurrence"),

    "ising": dict(src="""
# a smooth Ising-like energy on a grid: spins tanh(s), free boundaries by brackets
def ising(s: f64[h, w], J: f64, hf: f64) -> f64:
    m[r, c] = tanh(s[r, c])
    bonds = sum[r, c]([r + 1 < h] * m[r, c] * m[r + 1, c] + [c + 1 < w] * m[r, c] * m[r, c + 1])
    return -J * bonds - hf * sum[r, c](m[r, c]) + 0.1 * sum[r, c](s[r, c] ** 2)
""", sizes=dict(h=5, w=4), make=lambda rng, h, w: dict(s=_normal(rng, h, w), J=0.7, hf=0.3),
        ref=ising_ref, note="smooth Ising energy, free boundaries"),

    "chol_gauss": dict(src="""
# Gaussian log-likelihood with precision L L^T, L lower triangular with a log diagonal
def chol_gauss(X: f64[N, d], mu: f64[d], Lr: f64[d, d]) -> f64:
    L[i, j] = [j < i] * Lr[i, j] + [i == j] * exp(Lr[i, j])
    z[s, j] = sum[i]([i >= j] * (X[s, i] - mu[i]) * L[i, j])
    return N * sum[i](Lr[i, i]) - 0.5 * sum[s, j](z[s, j] ** 2) - 0.5 * N * d * log(2.0 * 3.141592653589793)
""", sizes=dict(N=7, d=4), make=lambda rng, N, d: dict(X=_normal(rng, N, d), mu=_normal(rng, d),
                                                        Lr=0.3 * _normal(rng, d, d)),
        ref=chol_gauss_ref, note="Gaussian log-likelihood, triangular Cholesky parameter"),

    "student_t_reg": dict(src="""
# robust linear regression with Student-t errors of scale exp(ls) and nu degrees of freedom
def student_t_reg(X: f64[n, p], y: f64[n], w: f64[p], ls: f64, nu: f64) -> f64:
    r[i] = (y[i] - sum[j](X[i, j] * w[j])) / exp(ls)
    return sum[i](0.5 * (nu + 1.0) * log1p(r[i] ** 2 / nu) + ls)
""", sizes=dict(n=8, p=3), make=lambda rng, n, p: dict(X=_normal(rng, n, p), y=_normal(rng, n),
                                                        w=_normal(rng, p), ls=0.2, nu=3.0),
        ref=student_t_reg_ref, note="Student-t regression"),

    "cauchy": dict(src="""
def cauchy(X: f64[n, p], y: f64[n], w: f64[p], c: f64) -> f64:
    return sum[i](log1p(((y[i] - sum[j](X[i, j] * w[j])) / c) ** 2))
""", sizes=dict(n=8, p=3), make=lambda rng, n, p: dict(X=_normal(rng, n, p), y=_normal(rng, n),
                                                        w=_normal(rng, p), c=1.3),
        ref=cauchy_ref, note="Cauchy loss regression"),

    "logistic": dict(src="""
def logistic(X: f64[n, p], y: f64[n], w: f64[p], b: f64, lam: f64) -> f64:
    z[i] = sum[j](X[i, j] * w[j]) + b
    return sum[i](softplus(z[i]) - y[i] * z[i]) / n + 0.5 * lam * sum[j](w[j] ** 2)
""", sizes=dict(n=8, p=3), make=lambda rng, n, p: dict(X=_normal(rng, n, p), y=(rng.random(n) < 0.5) * 1.0,
                                                        w=_normal(rng, p), b=0.1, lam=0.01),
        ref=logistic_ref, note="L2-regularised logistic regression"),

    "poisson": dict(src="""
def poisson(X: f64[n, p], y: f64[n], w: f64[p], b: f64) -> f64:
    eta[i] = sum[j](X[i, j] * w[j]) + b
    return sum[i](exp(eta[i]) - y[i] * eta[i])
""", sizes=dict(n=8, p=3), make=lambda rng, n, p: dict(X=_normal(rng, n, p), y=1.0 * rng.poisson(2.0, n),
                                                        w=0.3 * _normal(rng, p), b=0.5),
        ref=poisson_ref, note="Poisson regression"),

    "softmax_reg": dict(src="""
def softmax_reg(X: f64[b, d], W: f64[d, k], c: f64[k], y: i64[b]) -> f64:
    Z[s, t] = sum[j](X[s, j] * W[j, t]) + c[t]
    return sum[s](logsumexp[t](Z[s, t]) - Z[s, y[s]]) / b
""", sizes=dict(b=7, d=4, k=3), make=lambda rng, b, d, k: dict(X=_normal(rng, b, d), W=_normal(rng, d, k),
                                                                c=_normal(rng, k), y=rng.integers(0, k, b)),
        ref=softmax_reg_ref, note="softmax regression, logsumexp and gathered labels"),

    "mixture1d": dict(src="""
# 1-D Gaussian mixture: weights by a logsumexp-normalised softmax, per-component log scales
def mixture1d(x: f64[n], a: f64[k], mu: f64[k], ls: f64[k]) -> f64:
    lw[c] = a[c] - logsumexp[e](a[e])
    ll[i, c] = lw[c] - 0.5 * ((x[i] - mu[c]) / exp(ls[c])) ** 2 - ls[c] - 0.5 * log(2.0 * 3.141592653589793)
    return -sum[i](logsumexp[c](ll[i, c]))
""", sizes=dict(n=9, k=3), make=lambda rng, n, k: dict(x=_normal(rng, n), a=_normal(rng, k),
                                                        mu=_normal(rng, k), ls=0.3 * _normal(rng, k)),
        ref=mixture1d_ref, note="mixture log-likelihood with logsumexp"),

    "kalman": dict(src="""
# 1-D Kalman filter negative log-likelihood: mean m and variance P are coupled recurrences
def kalman(y: f64[T], a: f64, q: f64, r: f64, m0: f64, p0: f64) -> f64:
    mp[t: T] = a * ([t == 0] * m0 + [t >= 1] * m[t - 1])
    Pp[t: T] = a * a * ([t == 0] * p0 + [t >= 1] * P[t - 1]) + q
    K[t] = Pp[t] / (Pp[t] + r)
    m[t: T] = mp[t] + K[t] * (y[t] - mp[t])
    P[t: T] = (1.0 - K[t]) * Pp[t]
    return sum[t](0.5 * (log(Pp[t] + r) + (y[t] - mp[t]) ** 2 / (Pp[t] + r)))
""", sizes=dict(T=7), make=lambda rng, T: dict(y=_normal(rng, T), a=0.9, q=0.3, r=0.5, m0=0.1, p0=1.0),
        ref=kalman_ref, note="Kalman filter, a group of scalar recurrences"),

    "ar_resid": dict(src="""
# residual sum of squares of an AR(p) model with coefficients a
def ar_resid(x: f64[T], a: f64[p]) -> f64:
    e[t: T - p] = x[t + p] - sum[k](a[k] * x[t + p - 1 - k])
    return sum[t](e[t] ** 2)
""", sizes=dict(T=10, p=3), make=lambda rng, T, p: dict(x=_normal(rng, T), a=0.3 * _normal(rng, p)),
        ref=ar_ref, note="AR(p) residuals, range T - p"),

    "expsmooth": dict(src="""
# exponential smoothing with alpha = sigmoid(z); one-step-ahead squared error
def expsmooth(x: f64[T], z: f64) -> f64:
    s[t] = [t == 0] * x[0] + [t >= 1] * (sigmoid(z) * x[t] + (1.0 - sigmoid(z)) * s[t - 1])
    return sum[t]([t + 1 < T] * (x[t + 1] - s[t]) ** 2)
""", sizes=dict(T=9), make=lambda rng, T: dict(x=_normal(rng, T), z=0.4),
        ref=expsmooth_ref, note="exponential smoothing recurrence"),

    "layer_norm": dict(src="""
def layer_norm(X: f64[b, d], g: f64[d], be: f64[d], T: f64[b, d]) -> f64:
    mu[s] = sum[j](X[s, j]) / d
    var[s] = sum[j]((X[s, j] - mu[s]) ** 2) / d
    Y[s, j] = g[j] * (X[s, j] - mu[s]) / sqrt(var[s] + 1e-5) + be[j]
    return sum[s, j]((Y[s, j] - T[s, j]) ** 2)
""", sizes=dict(b=5, d=4), make=lambda rng, b, d: dict(X=_normal(rng, b, d), g=_normal(rng, d),
                                                        be=_normal(rng, d), T=_normal(rng, b, d)),
        ref=lambda X, g, be, T: layer_norm_ref(X, g, be, T), note="layer norm"),

    "batch_norm": dict(src="""
def batch_norm(X: f64[b, d], g: f64[d], be: f64[d], W: f64[b, d]) -> f64:
    mu[j] = sum[s](X[s, j]) / b
    var[j] = sum[s]((X[s, j] - mu[j]) ** 2) / b
    return sum[s, j](tanh(g[j] * (X[s, j] - mu[j]) / sqrt(var[j] + 1e-5) + be[j]) * W[s, j])
""", sizes=dict(b=6, d=3), make=lambda rng, b, d: dict(X=_normal(rng, b, d), g=_normal(rng, d),
                                                        be=_normal(rng, d), W=_normal(rng, b, d)),
        ref=lambda X, g, be, W: batch_norm_ref(X, g, be, W), note="batch norm over the batch axis"),

    "gru": dict(src="""
# a GRU over time: gates z, r and the candidate read the previous state h[t - 1]
def gru(x: f64[T, e], Wz: f64[d, e], Uz: f64[d, d], Wr: f64[d, e], Ur: f64[d, d],
        Wh: f64[d, e], Uh: f64[d, d], h0: f64[d]) -> f64:
    hp[t: T, i: d] = [t == 0] * h0[i] + [t >= 1] * h[t - 1, i]
    z[t: T, i: d] = sigmoid(sum[j](Wz[i, j] * x[t, j]) + sum[j](Uz[i, j] * hp[t, j]))
    r[t: T, i: d] = sigmoid(sum[j](Wr[i, j] * x[t, j]) + sum[j](Ur[i, j] * hp[t, j]))
    c[t: T, i: d] = tanh(sum[j](Wh[i, j] * x[t, j]) + sum[j](Uh[i, j] * r[t, j] * hp[t, j]))
    h[t: T, i: d] = (1.0 - z[t, i]) * hp[t, i] + z[t, i] * c[t, i]
    return sum[i](h[T - 1, i] ** 2)
""", sizes=dict(T=4, e=3, d=4),
        make=lambda rng, T, e, d: dict(x=_normal(rng, T, e), Wz=0.5 * _normal(rng, d, e), Uz=0.5 * _normal(rng, d, d),
                                       Wr=0.5 * _normal(rng, d, e), Ur=0.5 * _normal(rng, d, d),
                                       Wh=0.5 * _normal(rng, d, e), Uh=0.5 * _normal(rng, d, d), h0=_normal(rng, d)),
        ref=gru_ref, note="GRU over time"),

    "causal_conv": dict(src="""
# dilated (2) causal convolution over channels: output t reads x at t, t - 2, t - 4, ...
def causal_conv(x: f64[ch, T], W: f64[o, ch, k], v: f64[o, T]) -> f64:
    y[a, t: T] = sum[c, j]([t >= 2 * j] * W[a, c, j] * x[c, t - 2 * j])
    return sum[a, t](v[a, t] * tanh(y[a, t]))
""", sizes=dict(ch=2, T=9, o=3, k=3),
        make=lambda rng, ch, T, o, k: dict(x=_normal(rng, ch, T), W=_normal(rng, o, ch, k), v=_normal(rng, o, T)),
        ref=causal_conv_ref, note="dilated causal conv1d"),

    "infonce": dict(src="""
# InfoNCE: row i of A should match row i of B among all rows of B
def infonce(A: f64[b, d], B: f64[b, d], tau: f64) -> f64:
    S[i, j] = sum[e](A[i, e] * B[j, e]) / tau
    return sum[i](logsumexp[j](S[i, j]) - S[i, i]) / b
""", sizes=dict(b=6, d=4), make=lambda rng, b, d: dict(A=_normal(rng, b, d), B=_normal(rng, b, d), tau=0.5),
        ref=infonce_ref, note="contrastive InfoNCE loss"),

    "svm": dict(src="""
# Weston-Watkins multiclass hinge: every wrong class within a margin of the true one
def svm(Z: f64[b, k], y: i64[b]) -> f64:
    return sum[s, c]([c != y[s]] * max(0.0, 1.0 + Z[s, c] - Z[s, y[s]])) / b
""", sizes=dict(b=6, k=4), make=lambda rng, b, k: dict(Z=_normal(rng, b, k), y=rng.integers(0, k, b)),
        ref=svm_ref, note="multiclass hinge via max"),

    "label_smooth": dict(src="""
def label_smooth(Z: f64[b, k], y: i64[b], eps: f64) -> f64:
    lse[s] = logsumexp[c](Z[s, c])
    return -sum[s, c](((1.0 - eps) * [c == y[s]] + eps / k) * (Z[s, c] - lse[s])) / b
""", sizes=dict(b=6, k=4), make=lambda rng, b, k: dict(Z=_normal(rng, b, k), y=rng.integers(0, k, b), eps=0.1),
        ref=label_smooth_ref, note="label-smoothed cross-entropy"),

    "focal": dict(src="""
def focal(Z: f64[b, k], y: i64[b], gam: f64) -> f64:
    lp[s] = Z[s, y[s]] - logsumexp[c](Z[s, c])
    return -sum[s]((1.0 - exp(lp[s])) ** gam * lp[s])
""", sizes=dict(b=6, k=4), make=lambda rng, b, k: dict(Z=_normal(rng, b, k), y=rng.integers(0, k, b), gam=2.0),
        ref=focal_ref, note="focal loss"),

    "gcn": dict(src="""
# one graph-convolution layer: sum the features of in-neighbours over an edge list, then ReLU
def gcn(X: f64[n, f], W: f64[f, g], src: i64[m], dst: i64[m], v: f64[n, g]) -> f64:
    agg[u: n, c: f] = sum[e]([dst[e] == u] * X[src[e], c])
    H[u, q] = max(sum[c](agg[u, c] * W[c, q]), 0.0)
    return sum[u, q](H[u, q] * v[u, q])
""", sizes=dict(n=5, f=3, g=2, m=8),
        make=lambda rng, n, f, g, m: dict(X=_normal(rng, n, f), W=_normal(rng, f, g), src=rng.integers(0, n, m),
                                          dst=rng.integers(0, n, m), v=_normal(rng, n, g)),
        ref=gcn_ref, note="graph convolution over an i64 edge list"),

    "triplet": dict(src="""
def triplet(A: f64[b, d], P: f64[b, d], N: f64[b, d], margin: f64) -> f64:
    dp[s] = sum[j]((A[s, j] - P[s, j]) ** 2)
    dn[s] = sum[j]((A[s, j] - N[s, j]) ** 2)
    return sum[s](max(dp[s] - dn[s] + margin, 0.0))
""", sizes=dict(b=6, d=3), make=lambda rng, b, d: dict(A=_normal(rng, b, d), P=_normal(rng, b, d),
                                                        N=_normal(rng, b, d), margin=1.0),
        ref=triplet_ref, note="triplet margin loss"),

    "bradley_terry": dict(src="""
# Bradley-Terry ratings from games (winner, loser), with a Gaussian prior
def bradley_terry(s: f64[n], win: i64[g], lose: i64[g]) -> f64:
    return sum[q](softplus(s[lose[q]] - s[win[q]])) + 0.5 * sum[i](s[i] ** 2)
""", sizes=dict(n=5, g=9), make=lambda rng, n, g: dict(s=_normal(rng, n), win=rng.integers(0, n, g),
                                                        lose=rng.integers(0, n, g)),
        ref=bradley_terry_ref, note="pairwise comparison model, two gathers"),

    "huber": dict(src="""
def huber(X: f64[n, p], y: f64[n], w: f64[p], delta: f64) -> f64:
    r[i] = sum[j](X[i, j] * w[j]) - y[i]
    return sum[i]([abs(r[i]) <= delta] * 0.5 * r[i] ** 2 + [abs(r[i]) > delta] * delta * (abs(r[i]) - 0.5 * delta))
""", sizes=dict(n=8, p=3), make=lambda rng, n, p: dict(X=_normal(rng, n, p), y=_normal(rng, n),
                                                        w=_normal(rng, p), delta=0.8),
        ref=huber_ref, note="Huber loss by value brackets"),

    "viterbi": dict(src="""
# the score of the best state path: a max recurrence over time
def viterbi(pi: f64[K], A: f64[K, K], E: f64[T, K]) -> f64:
    v[t: T, j: K] = E[t, j] + [t == 0] * pi[j] + [t >= 1] * max[i](v[t - 1, i] + A[i, j])
    return max[j](v[T - 1, j])
""", sizes=dict(K=4, T=6), make=lambda rng, K, T: dict(pi=_normal(rng, K), A=_normal(rng, K, K), E=_normal(rng, T, K)),
        ref=viterbi_ref, note="Viterbi score"),

    "soft_edit": dict(src="""
# soft edit distance between two sequences: substitution (x - y)^2, insertion/deletion gap,
# the minimum softened by g; R[i, j] aligns the first i of x with the first j of y
def soft_edit(x: f64[n], y: f64[m], g: f64, gap: f64) -> f64:
    R[i: n + 1, j: m + 1] = ([i == 0] * [j >= 1] * (R[i, j - 1] + gap)
        + [i >= 1] * [j == 0] * (R[i - 1, j] + gap)
        + [i >= 1] * [j >= 1] * -g * logsumexp[c: 3](-([c == 0] * (R[i - 1, j - 1] + (x[i - 1] - y[j - 1]) ** 2)
            + [c == 1] * (R[i - 1, j] + gap) + [c == 2] * (R[i, j - 1] + gap)) / g))
    return R[n, m]
""", sizes=dict(n=4, m=5), make=lambda rng, n, m: dict(x=_normal(rng, n), y=_normal(rng, m), g=0.5, gap=1.0),
        ref=soft_edit_ref, note="soft edit distance, ranges n + 1"),

    "binomial": dict(src="""
# a European call priced on a binomial tree of N levels (N = the length of steps):
# terminal log prices by a forward recurrence, values by a backward one
def binomial(S0: f64, K: f64, a: f64, p: f64, disc: f64, steps: f64[N]) -> f64:
    ls[i: N] = [i == 0] * (log(S0) - (N - 1) * a) + [i >= 1] * (ls[i - 1] + 2.0 * a)
    V[t: N, i: N] = ([t == N - 1] * max(exp(ls[i]) - K, 0.0)
        + [t + 1 < N] * [i <= t] * disc * (p * V[t + 1, i + 1] + (1.0 - p) * V[t + 1, i]))
    return V[0, 0]
""", sizes=dict(N=6), make=lambda rng, N: dict(S0=100.0, K=98.0, a=0.05, p=0.52, disc=0.999, steps=np.zeros(N)),
        ref=binomial_ref, note="binomial option pricing, backward recurrence"),

    "cummax": dict(src="""
def cummax(x: f64[n], w: f64[n]) -> f64:
    cm[i] = [i == 0] * x[0] + [i >= 1] * max(x[i], cm[i - 1])
    return sum[i](w[i] * cm[i])
""", sizes=dict(n=8), make=lambda rng, n: dict(x=_normal(rng, n), w=_normal(rng, n)),
        ref=cummax_ref, note="cumulative max recurrence"),

    "autocorr": dict(src="""
# the first K autocorrelations of a centred series, fitted to targets
def autocorr(x: f64[n], tgt: f64[K]) -> f64:
    xc[t] = x[t] - sum[s](x[s]) / n
    r[k: K] = sum[t: n]([t + k < n] * xc[t] * xc[t + k]) / n
    return sum[k]((r[k] - tgt[k]) ** 2)
""", sizes=dict(n=9, K=4), make=lambda rng, n, K: dict(x=_normal(rng, n), tgt=_normal(rng, K)),
        ref=autocorr_ref, note="autocorrelation"),

    "dft_mag": dict(src="""
# DFT magnitudes from cosine and sine tables, smoothed at zero
def dft_mag(x: f64[n], C: f64[f, n], S: f64[f, n]) -> f64:
    re[q] = sum[t](C[q, t] * x[t])
    im[q] = sum[t](S[q, t] * x[t])
    return sum[q](sqrt(re[q] ** 2 + im[q] ** 2 + 1e-12))
""", sizes=dict(n=8, f=5), make=lambda rng, n, f: dict(
            x=_normal(rng, n), C=np.cos(2 * np.pi * np.outer(np.arange(f), np.arange(n)) / n),
            S=np.sin(2 * np.pi * np.outer(np.arange(f), np.arange(n)) / n)),
        ref=dft_ref, note="DFT magnitude from tables"),

    "moving_avg": dict(src="""
# a moving average of window k = n - m + 1 fitted to t
def moving_avg(x: f64[n], t: f64[m]) -> f64:
    y[i: m] = sum[j: n - m + 1](x[i + j]) / (n - m + 1)
    return sum[i]((y[i] - t[i]) ** 2)
""", sizes=dict(n=9, m=6), make=lambda rng, n, m: dict(x=_normal(rng, n), t=_normal(rng, m)),
        ref=moving_avg_ref, note="moving average, window from size arithmetic"),

    "horner_fit": dict(src="""
# least squares of a polynomial, evaluated at every point by Horner's rule (a backward recurrence)
def horner_fit(c: f64[k], x: f64[n], y: f64[n]) -> f64:
    p[s: k, i: n] = c[s] + [s + 1 < k] * x[i] * p[s + 1, i]
    return sum[i]((p[0, i] - y[i]) ** 2)
""", sizes=dict(k=4, n=7), make=lambda rng, k, n: dict(c=_normal(rng, k), x=_normal(rng, n), y=_normal(rng, n)),
        ref=horner_fit_ref, note="Horner recurrence over points"),

    "tridiag_det": dict(src="""
# determinant of a tridiagonal matrix by the continuant recurrence (two steps back)
def tridiag_det(a: f64[n], b: f64[n], c: f64[n]) -> f64:
    f[i] = a[i] * ([i == 0] + [i >= 1] * f[i - 1]) - [i >= 1] * b[i - 1] * c[i - 1] * ([i == 1] + [i >= 2] * f[i - 2])
    return f[n - 1]
""", sizes=dict(n=6), make=lambda rng, n: dict(a=2.0 + _normal(rng, n), b=_normal(rng, n), c=_normal(rng, n)),
        ref=tridiag_logdet_ref, note="continuant recurrence"),
 "mlp_calls": dict(src="""
def dense_tanh(X: f64[b, d], W: f64[d, h], c: f64[h]) -> f64[b, h]:
    H[s, j] = tanh(sum[l](X[s, l] * W[l, j]) + c[j])
    return H

def mse(Y: f64[b, k], T: f64[b, k]) -> f64:
    return sum[s, j]((Y[s, j] - T[s, j]) ** 2) / (b * k)

def mlp_calls(X: f64[b, d], W1: f64[d, h], b1: f64[h], W2: f64[h, k], b2: f64[k], T: f64[b, k]) -> f64:
    H = dense_tanh(X, W1, b1)
    Y = dense_tanh(H, W2, b2)
    return mse(Y, T)
""", sizes=dict(b=5, d=4, h=3, k=2), make=lambda rng, b, d, h, k: dict(X=_normal(rng, b, d), W1=_normal(rng, d, h), b1=_normal(rng, h), W2=_normal(rng, h, k), b2=_normal(rng, k), T=_normal(rng, b, k)),
  ref=mlp_calls_ref, note="two layers through one called function"),
 "rank_hinge": dict(src="""
# the worst positive must beat the best negative by a margin (filters with a relation)
def rank_hinge(Z: f64[b, k], M: bool[b, k]) -> f64:
    pos[s] = min[c | M[s, c]](Z[s, c])
    neg[s] = max[c | not M[s, c]](Z[s, c])
    return sum[s](max(0.0, 1.0 - pos[s] + neg[s]))
""", sizes=dict(b=5, k=4), make=lambda rng, b, k: dict(Z=_normal(rng, b, k), M=np.arange(k)[None, :] == rng.integers(0, k, b)[:, None]),
  ref=rank_ref, note="min/max with relation filters"),
 "haar": dict(src="""
def haar(x: f64[n], lam: f64) -> f64:
    a[i: n / 2] = (x[2 * i] + x[2 * i + 1]) / sqrt(2.0)
    d[i: n / 2] = (x[2 * i] - x[2 * i + 1]) / sqrt(2.0)
    return sum[i](a[i] ** 2) + lam * sum[i](sqrt(d[i] ** 2 + 1e-3))
""", sizes=dict(n=8), make=lambda rng, n: dict(x=_normal(rng, n), lam=0.5), ref=haar_ref, note="Haar step, n / 2"),
 "zscore": dict(src="""
def moments(x: f64[n]) -> (f64, f64):
    mu = sum[i](x[i]) / n
    return mu, sum[i]((x[i] - mu) ** 2) / n

def zscore(x: f64[n], t: f64[n]) -> f64:
    mu, var = moments(x)
    return sum[i]((( x[i] - mu) / sqrt(var + 1e-6) - t[i]) ** 2)
""", sizes=dict(n=7), make=lambda rng, n: dict(x=_normal(rng, n), t=_normal(rng, n)), ref=zscore_ref, note="tuple return, destructuring"),
 "ctx_embed": dict(src="""
# continuous bag of words: the mean embedding of w context tokens, a nested gather
def ctx_embed(E: f64[v, d], tok: i64[T], ctx: i64[b, w], W: f64[d, v], y: i64[b]) -> f64:
    H[s, c] = sum[j](E[tok[ctx[s, j]], c]) / w
    Z[s, q] = sum[c](H[s, c] * W[c, q])
    return sum[s](logsumexp[q](Z[s, q]) - Z[s, y[s]]) / b
""", sizes=dict(v=6, d=3, T=10, b=4, w=3), make=lambda rng, v, d, T, b, w: dict(E=_normal(rng, v, d), tok=rng.integers(0, v, T), ctx=rng.integers(0, T, (b, w)), W=_normal(rng, d, v), y=rng.integers(0, v, b)),
  ref=ctx_ref, note="nested gathers"),
 "bigram": dict(src="""
def bigram(W: f64[v, v], tok: i64[T]) -> f64:
    return sum[t]([t + 1 < T] * (logsumexp[q](W[tok[t], q]) - W[tok[t], tok[t + 1]]))
""", sizes=dict(v=5, T=9), make=lambda rng, v, T: dict(W=_normal(rng, v, v), tok=rng.integers(0, v, T)), ref=bigram_ref, note="gather at a shifted position under a guard"),
 "crf": dict(src="""
# linear-chain CRF negative log-likelihood of gold labels
def crf(U: f64[T, K], P: f64[K, K], lab: i64[T]) -> f64:
    a[t: T, j: K] = U[t, j] + [t >= 1] * logsumexp[i](a[t - 1, i] + P[i, j])
    score = sum[t](U[t, lab[t]]) + sum[t]([t >= 1] * P[lab[t - 1], lab[t]])
    return logsumexp[j](a[T - 1, j]) - score
""", sizes=dict(T=6, K=3), make=lambda rng, T, K: dict(U=_normal(rng, T, K), P=_normal(rng, K, K), lab=rng.integers(0, K, T)), ref=crf_ref, note="CRF"),
 "chamfer": dict(src="""
def chamfer(X: f64[n, d], Y: f64[m, d]) -> f64:
    D[i, j] = sum[e]((X[i, e] - Y[j, e]) ** 2)
    return sum[i](min[j](D[i, j])) + sum[j](min[i](D[i, j]))
""", sizes=dict(n=5, m=4, d=2), make=lambda rng, n, m, d: dict(X=_normal(rng, n, d), Y=_normal(rng, m, d)), ref=chamfer_ref, note="min reductions both ways"),
 "kmeans": dict(src="""
def kmeans(X: f64[n, d], mu: f64[k, d]) -> f64:
    return sum[i](min[c](sum[e]((X[i, e] - mu[c, e]) ** 2)))
""", sizes=dict(n=7, d=2, k=3), make=lambda rng, n, d, k: dict(X=_normal(rng, n, d), mu=_normal(rng, k, d)), ref=kmeans_ref, note="k-means objective"),
 "down": dict(src="""
def down(x: f64[n], t: f64[n / 2]) -> f64:
    return sum[i]((0.5 * (x[2 * i] + x[2 * i + 1]) - t[i]) ** 2)
""", sizes=dict(n=8), make=lambda rng, n: dict(x=_normal(rng, n), t=_normal(rng, n // 2)), ref=down_ref, note="derived size in a parameter"),
 "matpow": dict(src="""
# trace of A^k by a recurrence over k = len(steps)
def matpow(A: f64[n, n], steps: f64[k]) -> f64:
    P[s: k, i: n, j: n] = [s == 0] * A[i, j] + [s >= 1] * sum[l](A[i, l] * P[s - 1, l, j])
    return sum[i](P[k - 1, i, i])
""", sizes=dict(n=3, k=4), make=lambda rng, n, k: dict(A=0.5 * _normal(rng, n, n), steps=np.zeros(k)), ref=matpow_ref, note="matrix power recurrence"),
 "rosen": dict(src="""
def rosen(x: f64[n]) -> f64:
    return sum[i]([i + 1 < n] * (100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1.0 - x[i]) ** 2))
""", sizes=dict(n=6), make=lambda rng, n: dict(x=_normal(rng, n)), ref=rosen_ref, note="Rosenbrock"),
 "vander": dict(src="""
# polynomial features by a recurrence along the second index
def vander(x: f64[n], c: f64[p], y: f64[n]) -> f64:
    V[i: n, q: p] = [q == 0] + [q >= 1] * x[i] * V[i, q - 1]
    return sum[i]((sum[q](V[i, q] * c[q]) - y[i]) ** 2)
""", sizes=dict(n=6, p=4), make=lambda rng, n, p: dict(x=_normal(rng, n), c=_normal(rng, p), y=_normal(rng, n)), ref=vander_ref, note="recurrence along a second index"),
 "sinkhorn": dict(src="""
# log-domain Sinkhorn iterations (uniform marginals) and the dual objective
def sinkhorn(C: f64[n, m], eps: f64, steps: f64[K]) -> f64:
    f[k: K, i: n] = -eps * logsumexp[j](([k >= 1] * g[k - 1, j] - C[i, j]) / eps)
    g[k: K, j: m] = -eps * logsumexp[i]((f[k, i] - C[i, j]) / eps)
    return sum[i](f[K - 1, i]) / n + sum[j](g[K - 1, j]) / m
""", sizes=dict(n=4, m=3, K=3), make=lambda rng, n, m, K: dict(C=rng.random((n, m)), eps=0.5, steps=np.zeros(K)), ref=sinkhorn_ref, note="Sinkhorn, coupled recurrences with logsumexp"),
}
