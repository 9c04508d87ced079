"""A seventh set of programs written from the documentation alone.

Domains the earlier sets (tests/newuser_programs.py ... tests/newuser6_programs.py)
leave out: sequence models (a profile HMM's match/insert/delete group over two
leading indices with derived ranges, an explicit-duration HMM whose state counts
the steps spent, forward-backward posteriors from two recurrences in one
function, the WKV recurrence of RWKV, a selective state-space scan), survival and
statistics (a Gompertz hazard with censoring brackets, a discrete-time hazard
whose labels are compared and gathered in one statement, leave-one-out kernel
density, expectile regression with a non-crossing penalty, one EM step of a
Gaussian mixture unrolled), numerics (power iteration with a normalisation inside
the step, red-black Gauss-Seidel, 2-D Jacobi sweeps, conjugate gradients unrolled,
Chebyshev polynomials forwards and Clenshaw's sum backwards, a Richardson table,
a matrix-product-state contraction), ranking (a smooth NDCG, a pairwise hinge
over i64 pairs, ColBERT's max-sim), physics and graphics (a bond and angle force
field over i64 tuples, a soft triangle rasteriser, radiosity, a shallow-water
step of two fields), finance (an Asian option and a CIR bond by Monte Carlo
paths), and edge cases (a recurrence over a derived range of one step, a forward
filter feeding a backward one, reductions over derived and empty ranges, a chain
of six calls, three results of a call, seven indices, a parameter as exponent
and divisor, labels compared with labels).  Each entry has the shape of the other
sets: the program text (the function to test is named like the entry), the sizes
of the test inputs, `make(rng, **sizes)`, an independent NumPy version
`ref(**inputs)` and a note.  tests/test_newuser7_programs.py checks them.
"""
import numpy as np
from scipy.special import expit as _sigmoid
from scipy.special import logsumexp as _lse

from newuser2_programs import _normal, _softplus

NEG = -np.inf


# ------------------------------------------------------------------ sequence models
def profile_hmm_ref(em, ei, tr):
    T, K = em.shape
    M = np.full((T + 1, K + 1), NEG)
    I = np.full((T + 1, K + 1), NEG)
    D = np.full((T + 1, K + 1), NEG)
    M[0, 0] = 0.0
    for i in range(T + 1):
        for k in range(K + 1):
            if i >= 1 and k >= 1:
                M[i, k] = em[i - 1, k - 1] + _lse([M[i - 1, k - 1] + tr[0, 0], I[i - 1, k - 1] + tr[1, 0],
                                                    D[i - 1, k - 1] + tr[2, 0]])
            if i >= 1:
                I[i, k] = ei[i - 1] + _lse([M[i - 1, k] + tr[0, 1], I[i - 1, k] + tr[1, 1],
                                            D[i - 1, k] + tr[2, 1]])
            if k >= 1:
                D[i, k] = _lse([M[i, k - 1] + tr[0, 2], I[i, k - 1] + tr[1, 2], D[i, k - 1] + tr[2, 2]])
    return float(-_lse([M[T, K], I[T, K], D[T, K]]))


def hsmm_ref(e, A, pi, hz):
    T, J = e.shape
    D = hz.shape[1]
    lc = np.log(_sigmoid(hz))
    le = np.log(_sigmoid(-hz))
    a = np.full((T, J, D), NEG)
    a[0, :, 0] = e[0] + pi
    for t in range(1, T):
        for j in range(J):
            a[t, j, 0] = e[t, j] + _lse(a[t - 1] + le + A[:, j][:, None])
            for d in range(1, min(D, t + 1)):
                a[t, j, d] = e[t, j] + a[t - 1, j, d - 1] + lc[j, d - 1]
    return float(-_lse(a[T - 1]))


def fwdbwd_ref(E, A, pi, y):
    T, K = E.shape
    al = np.zeros((T, K))
    be = np.zeros((T, K))
    al[0] = pi + E[0]
    for t in range(1, T):
        al[t] = E[t] + _lse(al[t - 1][:, None] + A, axis=0)
    for t in range(T - 2, -1, -1):
        be[t] = _lse(A + (E[t + 1] + be[t + 1])[None, :], axis=1)
    Z = _lse(al[T - 1])
    g = al + be - Z
    return float(-np.sum(g[np.arange(T), y]))


def rwkv_ref(k, v, w, u, tgt):
    T, C = k.shape
    num = np.zeros(C)
    den = np.zeros(C)
    out = 0.0
    for t in range(T):
        eu = np.exp(u + k[t])
        wkv = (num + eu * v[t]) / (den + eu)
        out += np.sum((wkv - tgt[t]) ** 2)
        num = np.exp(-np.exp(w)) * num + np.exp(k[t]) * v[t]
        den = np.exp(-np.exp(w)) * den + np.exp(k[t])
    return float(out)


def ssm_ref(x, A, B, Cm, Wd, tgt):
    T, C = x.shape
    S = A.shape[1]
    h = np.zeros((C, S))
    out = 0.0
    for t in range(T):
        dt = _softplus(Wd * x[t])
        h = np.exp(dt[:, None] * A) * h + dt[:, None] * B[t][None, :] * x[t][:, None]
        y = h @ Cm[t]
        out += np.sum((y - tgt[t]) ** 2)
    return float(out)


# ------------------------------------------------------------------ survival and statistics
def gompertz_ref(X, beta, la, b, tt, d):
    eta = X @ beta
    H = np.exp(la) / b * (np.exp(b * tt) - 1.0) * np.exp(eta)
    return float(-np.sum(np.where(d > 0.5, la + b * tt + eta, 0.0) - H))


def dthazard_ref(X, b, a, tt, ev):
    N = X.shape[0]
    h = _sigmoid(a[None, :] + (X @ b)[:, None])
    out = 0.0
    for s in range(N):
        out += np.sum(np.log(1 - h[s, :tt[s]]))
        out += ev[s] * np.log(h[s, tt[s]]) + (1 - ev[s]) * np.log(1 - h[s, tt[s]])
    return float(-out)


def kde_ref(X, lh):
    n, d = X.shape
    h = np.exp(lh)
    D2 = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    L = -D2 / (2 * h * h)
    np.fill_diagonal(L, -np.inf)
    lp = _lse(L, axis=1) - np.log(n - 1) - d * (lh + 0.5 * np.log(2 * np.pi))
    return float(-np.mean(lp))


def expectile_ref(X, W, y, taus, lam):
    F = W @ X.T
    R = y[None, :] - F
    wts = np.where(R < 0, 1 - taus[:, None], taus[:, None])
    return float(np.sum(wts * R ** 2) + lam * np.sum(_softplus(F[:-1] - F[1:])))


def emstep_ref(x, mu, ls, lw):
    s2 = np.exp(2 * ls)
    lpk = lw - _lse(lw) - (x[:, None] - mu[None, :]) ** 2 / (2 * s2) - ls - 0.5 * np.log(2 * np.pi)
    r = np.exp(lpk - _lse(lpk, axis=1, keepdims=True))
    Nk = r.sum(0)
    mu1 = (r * x[:, None]).sum(0) / Nk
    v1 = (r * (x[:, None] - mu1[None, :]) ** 2).sum(0) / Nk + 1e-3
    w1 = Nk / len(x)
    lp1 = np.log(w1) - (x[:, None] - mu1) ** 2 / (2 * v1) - 0.5 * np.log(v1) - 0.5 * np.log(2 * np.pi)
    return float(-np.sum(_lse(lp1, axis=1)))


# ------------------------------------------------------------------ numerics
def power_iter_ref(A, v0, K1):
    v = v0
    for _ in range(len(K1)):
        w = A @ v
        v = w / np.sqrt(w @ w)
    return float(v @ A @ v)


def redblack_ref(f, u0, K1, h2, tgt):
    n = len(f)
    u = u0.copy()
    for _ in range(len(K1)):
        r = u.copy()
        for i in range(0, n, 2):
            r[i] = 0.5 * (h2 * f[i] + (u[i - 1] if i >= 1 else 0) + (u[i + 1] if i + 1 < n else 0))
        for i in range(1, n, 2):
            r[i] = 0.5 * (h2 * f[i] + r[i - 1] + (r[i + 1] if i + 1 < n else 0))
        u = r
    return float(np.sum((u - tgt) ** 2))


def jacobi2d_ref(f, K1, tgt):
    u = np.zeros_like(f)
    for _ in range(len(K1)):
        p = np.pad(u, 1)
        u = 0.25 * (p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:] + f)
    return float(np.sum((u - tgt) ** 2))


def cg_ref(A, b, K1, xt):
    x = np.zeros_like(b)
    r = b.copy()
    p = r.copy()
    rr = r @ r
    for k in range(len(K1) - 1):
        Ap = A @ p
        al = rr / (p @ Ap)
        x = x + al * p
        r = r - al * Ap
        rr1 = r @ r
        p = r + rr1 / rr * p
        rr = rr1
    return float(np.sum((x - xt) ** 2))


def _cg_make(rng, n, K):
    M = _normal(rng, n, n)
    return dict(A=M @ M.T / n + np.eye(n), b=_normal(rng, n), K1=np.zeros(K), xt=_normal(rng, n))


def chebyshev_ref(c, x, y):
    return float(np.sum((np.polynomial.chebyshev.chebval(x, c) - y) ** 2))


def clenshaw_ref(c, x, y):
    return chebyshev_ref(c, x, y)


def richardson_ref(a, w, x0, hs, q4):
    K = len(hs)

    def g(x):
        return np.sum(a * np.sin(w * x))
    R = np.zeros((K, K))
    for k in range(K):
        R[k, 0] = (g(x0 + hs[k]) - g(x0 - hs[k])) / (2 * hs[k])
        for j in range(1, k + 1):
            R[k, j] = R[k, j - 1] + (R[k, j - 1] - R[k - 1, j - 1]) / q4[j]
    return float(R[K - 1, K - 1])


def _richardson_make(rng, M, K):
    return dict(a=_normal(rng, M), w=1 + rng.random(M), x0=0.3, hs=0.4 / 2.0 ** np.arange(K),
                q4=4.0 ** np.arange(K) - 1.0)


def mps_ref(A, v, l0):
    S = A.shape[0]
    e = l0
    out = 0.0
    for s in range(S):
        u = np.einsum("a,apb,p->b", e, A[s], v[s])
        nr = np.sqrt(u @ u)
        out += np.log(nr)
        e = u / nr
    return float(out)


# ------------------------------------------------------------------ ranking
def ndcg_ref(S, G, tau, idcg):
    q, n = S.shape
    out = 0.0
    for a in range(q):
        P = _sigmoid((S[a][None, :] - S[a][:, None]) / tau)
        np.fill_diagonal(P, 0.0)
        rk = 1.0 + P.sum(1)
        out += np.sum(G[a] * np.log(2.0) / np.log(1.0 + rk)) / idcg[a]
    return float(1.0 - out / q)


def pair_hinge_ref(X, w, pa, pb, pw, m):
    s = X @ w
    return float(np.sum(pw * np.maximum(m - s[pa] + s[pb], 0.0)) + 0.5 * w @ w)


def maxsim_ref(Q, D):
    sc = np.einsum("bik,cjk->bcij", Q, D).max(axis=3).sum(axis=2)
    return float(-np.sum(np.diag(sc) - _lse(sc, axis=1)))


# ------------------------------------------------------------------ physics and graphics
def angle_ff_ref(P, bd, r0, kb, ang, c0, ka):
    ln = np.sqrt(((P[bd[:, 0]] - P[bd[:, 1]]) ** 2).sum(1))
    u = P[ang[:, 0]] - P[ang[:, 1]]
    v = P[ang[:, 2]] - P[ang[:, 1]]
    cs = (u * v).sum(1) / np.sqrt((u * u).sum(1) * (v * v).sum(1))
    return float(kb * np.sum((ln - r0) ** 2) + ka * np.sum((cs - c0) ** 2))


def _angle_make(rng, n, m, q):
    return dict(P=_normal(rng, n, 3), bd=np.stack([np.arange(m) % n, (np.arange(m) + 1) % n], 1),
                r0=1.0 + 0.1 * rng.random(m), kb=2.0,
                ang=np.stack([np.arange(q) % n, (np.arange(q) + 1) % n, (np.arange(q) + 2) % n], 1),
                c0=-0.3 + 0.1 * rng.random(q), ka=0.7)


def softras_ref(V, F, px, py, s, img):
    out = np.zeros(len(px))
    for f in range(F.shape[0]):
        cov = np.ones(len(px))
        for e in range(3):
            a, b = V[F[f, e]], V[F[f, (e + 1) % 3]]
            cov *= _sigmoid(((b[0] - a[0]) * (py - a[1]) - (b[1] - a[1]) * (px - a[0])) / s)
        out += np.log1p(-0.99 * cov)
    return float(np.sum((1.0 - np.exp(out) - img) ** 2))


def _softras_make(rng, nv, nf, P):
    V = rng.random((nv, 2)) * 4
    F = np.array([[(3 * f) % nv, (3 * f + 1) % nv, (3 * f + 2) % nv] for f in range(nf)])
    # orient every triangle counter-clockwise
    for f in range(nf):
        a, b, c = V[F[f]]
        if (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0]) < 0:
            F[f, 1], F[f, 2] = F[f, 2], F[f, 1]
    return dict(V=V, F=F, px=rng.random(P) * 4, py=rng.random(P) * 4, s=0.3, img=rng.random(P))


def radiosity_ref(Em, rho, F, K1, tgt):
    B = Em.copy()
    for _ in range(len(K1) - 1):
        B = Em + rho * (F @ B)
    return float(np.sum((B - tgt) ** 2))


def swater_ref(h0, q0, K1, dt, g, tgt):
    h, q = h0.copy(), q0.copy()

    def nb(a):
        return np.concatenate([a[:1], a[:-1]]), np.concatenate([a[1:], a[-1:]])
    for _ in range(len(K1) - 1):
        f2 = q ** 2 / h + 0.5 * g * h ** 2
        hl, hr = nb(h)
        ql, qr = nb(q)
        fl, fr = nb(f2)
        h, q = 0.5 * (hl + hr) - 0.5 * dt * (qr - ql), 0.5 * (ql + qr) - 0.5 * dt * (fr - fl)
    return float(np.sum((h - tgt) ** 2))


# ------------------------------------------------------------------ finance
def asian_ref(S0, sig, r, dt, Z, Kst, tau):
    P, T = Z.shape
    S = S0 * np.exp(np.cumsum((r - 0.5 * sig ** 2) * dt + sig * np.sqrt(dt) * Z, axis=1))
    avg = S.mean(1)
    return float(np.exp(-r * T * dt) * np.mean(tau * _softplus((avg - Kst) / tau)))


def cir_ref(r0, ka, th, sg, dt, Z):
    T, P = Z.shape
    r = np.full(P, r0)
    tot = r.copy()
    for t in range(1, T):
        r = r + ka * (th - r) * dt + sg * np.sqrt(np.maximum(r, 1e-8)) * np.sqrt(dt) * Z[t]
        tot = tot + r
    return float(np.mean(np.exp(-dt * tot)))


# ------------------------------------------------------------------ edge cases
def onestep_ref(x, w):
    n, k = len(x), len(w)
    s = np.zeros(n - k + 1)
    for t in range(n - k + 1):
        s[t] = w @ x[t:t + k] + (0.9 * s[t - 1] if t >= 1 else 0.0)
    return float(np.sum(s ** 2))


def filtfilt_ref(x, a, tgt):
    T = len(x)
    y = np.zeros(T)
    z = np.zeros(T)
    for t in range(T):
        y[t] = (1 - a) * x[t] + (a * y[t - 1] if t >= 1 else 0.0)
    for t in range(T - 1, -1, -1):
        z[t] = (1 - a) * y[t] + (a * z[t + 1] if t + 1 < T else 0.0)
    return float(np.sum((z - tgt) ** 2))


def derived_red_ref(x, w):
    n, k = len(x), len(w)
    c = np.array([w @ x[i:i + k] for i in range(n - k + 1)])
    mn = c[1:].min() if n > k else 0.0
    ls = _lse(c[:n - k]) if n > k else 0.0
    return float(c.max() - mn + ls + _lse(c[::2]))


def calls6_ref(x, y):
    def d1(v):
        return v[1:] - v[:-1]
    a = d1(x)
    b = np.tanh(a)
    c = d1(b)
    d = 0.5 * (c[1:] + c[:-1])
    return float(np.sum((d - y[:len(d)]) ** 2))


def tuple3_ref(X, W):
    m = X.mean(0)
    Xc = X - m
    C = Xc.T @ Xc / X.shape[0]
    tr = np.trace(C)
    return float(np.sum(W * C) + m @ m + np.log(tr))


def idx7_ref(X, u, v, wb, Y):
    Z = np.einsum("abcdefg,a,g->abcdefg", X, u, v)
    return float(np.sum((Z - Y) ** 2) + np.einsum("abcdefg,a,b->", X, u, wb) ** 2)


def powmean_ref(x, w, p):
    m = (np.sum(np.where(x > 0, w * np.abs(x) ** p, 0.0)) / np.sum(w)) ** (1.0 / p)
    return float(m + np.sum(np.where(x > 0, 1.0 / (np.abs(x) + p) ** 2, 0.0)))


def labcmp_ref(E, y, z, W, b):
    S = len(y)
    tgt = E[y, z]
    same = (y == z).astype(float)
    H = E[y] * (1.0 + same[:, None])
    L = H @ W
    return float(np.sum(_lse(L, axis=1) - L[np.arange(S), z]) + np.sum((tgt - b) ** 2))


PROGRAMS = {
    # -------------------------------------------------------------- sequence models
    "profile_hmm": dict(src="""
# a profile HMM's log-likelihood: match, insert and delete states over (sequence
# position i, model position k), both one longer than the data; each state is
# reached only from the states that exist, which the filters of its logsumexp say
def profile_hmm(em: f64[T, K], ei: f64[T], tr: f64[3, 3]) -> f64:
    M[i: T + 1, k: K + 1] = [i >= 1] * [k >= 1] * (em[i - 1, k - 1] + logsumexp[c: 3 | c == 0 and (i == 1 and k == 1 or i >= 2 and k >= 2) or c == 1 and i >= 2 or c == 2 and k >= 2](
        [c == 0] * (M[i - 1, k - 1] + tr[0, 0]) + [c == 1] * (I[i - 1, k - 1] + tr[1, 0]) + [c == 2] * (D[i - 1, k - 1] + tr[2, 0])))
    I[i: T + 1, k: K + 1] = [i >= 1] * (ei[i - 1] + logsumexp[c: 3 | c == 0 and (i == 1 and k == 0 or i >= 2 and k >= 1) or c == 1 and i >= 2 or c == 2 and k >= 1](
        [c == 0] * (M[i - 1, k] + tr[0, 1]) + [c == 1] * (I[i - 1, k] + tr[1, 1]) + [c == 2] * (D[i - 1, k] + tr[2, 1])))
    D[i: T + 1, k: K + 1] = [k >= 1] * logsumexp[c: 3 | c == 0 and (i == 0 and k == 1 or i >= 1 and k >= 2) or c == 1 and i >= 1 or c == 2 and k >= 2](
        [c == 0] * (M[i, k - 1] + tr[0, 2]) + [c == 1] * (I[i, k - 1] + tr[1, 2]) + [c == 2] * (D[i, k - 1] + tr[2, 2]))
    return -logsumexp[c: 3]([c == 0] * M[T, K] + [c == 1] * I[T, K] + [c == 2] * D[T, K])
""", sizes=dict(T=3, K=2), make=lambda rng, T, K: dict(
            em=_normal(rng, T, K), ei=-1.0 + 0.3 * _normal(rng, T), tr=-1.0 + 0.5 * _normal(rng, 3, 3)),
        ref=profile_hmm_ref, note="a group of three over two leading derived ranges, or-filters"),

    "hsmm": dict(src="""
# an explicit-duration HMM: a[t, j, d] is in state j whose segment has lasted d + 1
# steps; a segment goes on with probability sigmoid(hz[j, d]) or ends and jumps
def hsmm(e: f64[T, J], A: f64[J, J], pi: f64[J], hz: f64[J, D]) -> f64:
    lc[j, d] = -softplus(-hz[j, d])
    le[j, d] = -softplus(hz[j, d])
    a[t: T, j: J, d: D] = [d <= t] * (e[t, j] + [d == 0] * ([t == 0] * pi[j] + [t >= 1] * logsumexp[i, u | u + 1 <= t](a[t - 1, i, u] + le[i, u] + A[i, j]))
        + [d >= 1] * [t >= 1] * (a[t - 1, j, d - 1] + lc[j, d - 1]))
    return -logsumexp[j, d | d <= T - 1](a[T - 1, j, d])
""", sizes=dict(T=6, J=2, D=3), make=lambda rng, T, J, D: dict(
            e=_normal(rng, T, J), A=_normal(rng, J, J), pi=_normal(rng, J), hz=_normal(rng, J, D)),
        ref=hsmm_ref, note="a reduction over the previous step filtered by the leading index"),

    "fwdbwd": dict(src="""
# forward-backward: the posterior log-marginals from a forward and a backward
# recurrence in one function; the loss is minus those of a label path
def fwdbwd(E: f64[T, K], A: f64[K, K], pi: f64[K], y: i64[T]) -> f64:
    al[t: T, j: K] = E[t, j] + [t == 0] * pi[j] + [t >= 1] * logsumexp[i](al[t - 1, i] + A[i, j])
    be[t: T, i: K] = [t + 1 < T] * logsumexp[j](A[i, j] + E[t + 1, j] + be[t + 1, j])
    Z = logsumexp[j](al[T - 1, j])
    return -sum[t](al[t, y[t]] + be[t, y[t]] - Z)
""", sizes=dict(T=5, K=3), make=lambda rng, T, K: dict(
            E=_normal(rng, T, K), A=_normal(rng, K, K), pi=_normal(rng, K), y=np.arange(T) % K),
        ref=fwdbwd_ref, note="two recurrences opposite ways, gathers of both by labels"),

    "rwkv": dict(src="""
# RWKV's WKV: a decayed running numerator and denominator per channel, with a bonus
# u for the current token
def rwkv(k: f64[T, C], v: f64[T, C], w: f64[C], u: f64[C], tgt: f64[T, C]) -> f64:
    num[t: T, c: C] = [t >= 1] * (exp(-exp(w[c])) * num[t - 1, c] + exp(k[t - 1, c]) * v[t - 1, c])
    den[t: T, c: C] = [t >= 1] * (exp(-exp(w[c])) * den[t - 1, c] + exp(k[t - 1, c]))
    wkv[t, c] = (num[t, c] + exp(u[c] + k[t, c]) * v[t, c]) / (den[t, c] + exp(u[c] + k[t, c]))
    return sum[t, c]((wkv[t, c] - tgt[t, c]) ** 2)
""", sizes=dict(T=6, C=3), make=lambda rng, T, C: dict(
            k=_normal(rng, T, C), v=_normal(rng, T, C), w=_normal(rng, C), u=_normal(rng, C),
            tgt=_normal(rng, T, C)),
        ref=rwkv_ref, note="a quotient of two recurrences"),

    "ssm": dict(src="""
# a selective state-space scan (Mamba): a per-token step size dt = softplus(Wd x)
# discretises a diagonal A; the state has a channel and a state index
def ssm(x: f64[T, C], A: f64[C, S], B: f64[T, S], Cm: f64[T, S], Wd: f64[C], tgt: f64[T, C]) -> f64:
    dt[t, c] = softplus(Wd[c] * x[t, c])
    h[t: T, c: C, s: S] = [t >= 1] * exp(dt[t, c] * A[c, s]) * h[t - 1, c, s] + dt[t, c] * B[t, s] * x[t, c]
    y[t, c] = sum[s](Cm[t, s] * h[t, c, s])
    return sum[t, c]((y[t, c] - tgt[t, c]) ** 2)
""", sizes=dict(T=5, C=3, S=2), make=lambda rng, T, C, S: dict(
            x=_normal(rng, T, C), A=-rng.random((C, S)), B=_normal(rng, T, S), Cm=_normal(rng, T, S),
            Wd=_normal(rng, C), tgt=_normal(rng, T, C)),
        ref=ssm_ref, note="a three-index state, exp of a product of two computed values"),

    # -------------------------------------------------------------- survival and statistics
    "gompertz": dict(src="""
# a Gompertz proportional-hazards model with right censoring: events (d = 1) add
# the log hazard, every subject subtracts its cumulative hazard
def gompertz(X: f64[N, p], beta: f64[p], la: f64, b: f64, tt: f64[N], d: f64[N]) -> f64:
    eta[s] = sum[j](X[s, j] * beta[j])
    return -sum[s]([d[s] > 0.5] * (la + b * tt[s] + eta[s]) - exp(la) / b * (exp(b * tt[s]) - 1.0) * exp(eta[s]))
""", sizes=dict(N=8, p=3), make=lambda rng, N, p: dict(
            X=_normal(rng, N, p), beta=0.3 * _normal(rng, p), la=-1.0, b=0.3, tt=2 * rng.random(N),
            d=(rng.random(N) < 0.6).astype(float)),
        ref=gompertz_ref, note="a censoring bracket on data; a parameter as divisor"),

    "dthazard": dict(src="""
# a discrete-time hazard model: survive every period before tt[s], then the event
# or censoring at tt[s] (labels compared and gathered in one statement)
def dthazard(X: f64[N, p], b: f64[p], a: f64[T], tt: i64[N], ev: f64[N]) -> f64:
    h[s, u] = sigmoid(a[u] + sum[j](X[s, j] * b[j]))
    ll[s] = sum[u]([u < tt[s]] * log(1.0 - h[s, u])) + ev[s] * log(h[s, tt[s]]) + (1.0 - ev[s]) * log(1.0 - h[s, tt[s]])
    return -sum[s](ll[s])
""", sizes=dict(N=7, p=2, T=4), make=lambda rng, N, p, T: dict(
            X=_normal(rng, N, p), b=_normal(rng, p), a=_normal(rng, T), tt=rng.integers(0, T, N),
            ev=(rng.random(N) < 0.5).astype(float)),
        ref=dthazard_ref, note="a label as a bound and as a gather in one statement"),

    "kde": dict(src="""
# leave-one-out log-likelihood of a Gaussian kernel density with bandwidth exp(lh);
# the dimension d is used as a value
def kde(X: f64[n, d], lh: f64) -> f64:
    D2[i, j] = sum[c]((X[i, c] - X[j, c]) ** 2)
    lp[i] = logsumexp[j | j != i](-D2[i, j] / (2.0 * exp(2.0 * lh))) - log(n - 1.0) - d * (lh + 0.5 * log(2.0 * 3.141592653589793))
    return -sum[i](lp[i]) / n
""", sizes=dict(n=7, d=2), make=lambda rng, n, d: dict(X=_normal(rng, n, d), lh=-0.3),
        ref=kde_ref, note="a filtered logsumexp; sizes as values"),

    "expectile": dict(src="""
# expectile regression at several levels (asymmetric squares chosen by a value
# bracket) with a soft penalty on crossing expectiles
def expectile(X: f64[N, p], W: f64[Q, p], y: f64[N], taus: f64[Q], lam: f64) -> f64:
    F[q, s] = sum[j](W[q, j] * X[s, j])
    R[q, s] = y[s] - F[q, s]
    return sum[q, s]((taus[q] + (1.0 - 2.0 * taus[q]) * [R[q, s] < 0.0]) * R[q, s] ** 2) + lam * sum[q, s]([q + 1 < Q] * softplus(F[q, s] - F[q + 1, s]))
""", sizes=dict(N=8, p=3, Q=3), make=lambda rng, N, p, Q: dict(
            X=_normal(rng, N, p), W=_normal(rng, Q, p), y=_normal(rng, N), taus=np.array([0.2, 0.5, 0.8][:Q]),
            lam=0.5),
        ref=expectile_ref, note="a value bracket on a computed residual"),

    "emstep": dict(src="""
# one EM step of a 1-D Gaussian mixture unrolled: responsibilities, the M-step's
# weighted means, variances and weights, and the log-likelihood under the new ones
def emstep(x: f64[n], mu: f64[K], ls: f64[K], lw: f64[K]) -> f64:
    lpk[i, k] = lw[k] - logsumexp[c](lw[c]) - (x[i] - mu[k]) ** 2 / (2.0 * exp(2.0 * ls[k])) - ls[k] - 0.9189385332046727
    r[i, k] = exp(lpk[i, k] - logsumexp[c](lpk[i, c]))
    Nk[k] = sum[i](r[i, k])
    mu1[k] = sum[i](r[i, k] * x[i]) / Nk[k]
    v1[k] = sum[i](r[i, k] * (x[i] - mu1[k]) ** 2) / Nk[k] + 0.001
    lp1[i, k] = log(Nk[k] / n) - (x[i] - mu1[k]) ** 2 / (2.0 * v1[k]) - 0.5 * log(v1[k]) - 0.9189385332046727
    return -sum[i](logsumexp[k](lp1[i, k]))
""", sizes=dict(n=9, K=2), make=lambda rng, n, K: dict(
            x=np.concatenate([_normal(rng, n // 2) - 1, _normal(rng, n - n // 2) + 1]),
            mu=np.linspace(-1, 1, K), ls=np.zeros(K), lw=np.zeros(K)),
        ref=emstep_ref, note="weighted means of weights computed from the parameters"),

    # -------------------------------------------------------------- numerics
    "power_iter": dict(src="""
# power iteration unrolled K times, normalising inside each step; the Rayleigh
# quotient of the last iterate
def power_iter(A: f64[n, n], v0: f64[n], K1: f64[K]) -> f64:
    w[k: K, i: n] = sum[j](A[i, j] * ([k == 0] * v0[j] + [k >= 1] * v[k - 1, j]))
    v[k: K, i: n] = w[k, i] / sqrt(sum[j](w[k, j] ** 2))
    return sum[i, j](v[K - 1, i] * A[i, j] * v[K - 1, j])
""", sizes=dict(n=4, K=5), make=lambda rng, n, K: dict(
            A=_normal(rng, n, n) + 2 * np.eye(n), v0=_normal(rng, n), K1=np.zeros(K)),
        ref=power_iter_ref, note="a norm of the same step inside the group"),

    "redblack": dict(src="""
# red-black Gauss-Seidel sweeps for -u'' = f: the even points from the last sweep,
# then the odd points from the new even ones
def redblack(f: f64[n], u0: f64[n], K1: f64[K], h2: f64, tgt: f64[n]) -> f64:
    r[t: K, i: n] = 0.5 * (h2 * f[i] + [i >= 1] * ([t == 0] * u0[i - 1] + [t >= 1] * u[t - 1, i - 1]) + [i + 1 < n] * ([t == 0] * u0[i + 1] + [t >= 1] * u[t - 1, i + 1]))
    u[t: K, i: n] = [i % 2 == 0] * r[t, i] + [i % 2 != 0] * 0.5 * (h2 * f[i] + [i >= 1] * r[t, i - 1] + [i + 1 < n] * r[t, i + 1])
    return sum[i]((u[K - 1, i] - tgt[i]) ** 2)
""", sizes=dict(n=7, K=3), make=lambda rng, n, K: dict(
            f=_normal(rng, n), u0=_normal(rng, n), K1=np.zeros(K), h2=0.1, tgt=_normal(rng, n)),
        ref=redblack_ref, note="divisibility brackets on an index; a same-step neighbour read"),

    "jacobi2d": dict(src="""
# Jacobi sweeps for the 2-D Poisson equation with zero boundary values
def jacobi2d(f: f64[h, w], K1: f64[K], tgt: f64[h, w]) -> f64:
    u[t: K, r: h, c: w] = 0.25 * (f[r, c] + [t >= 1] * ([r >= 1] * u[t - 1, r - 1, c] + [r + 1 < h] * u[t - 1, r + 1, c]
        + [c >= 1] * u[t - 1, r, c - 1] + [c + 1 < w] * u[t - 1, r, c + 1]))
    return sum[r, c]((u[K - 1, r, c] - tgt[r, c]) ** 2)
""", sizes=dict(h=4, w=5, K=4), make=lambda rng, h, w, K: dict(
            f=_normal(rng, h, w), K1=np.zeros(K), tgt=_normal(rng, h, w)),
        ref=jacobi2d_ref, note="a stencil recurrence over a 2-D state"),

    "cg": dict(src="""
# conjugate gradients for A x = b unrolled K - 1 steps from x = 0: scalars per step
# (the step length and the ratio of residual norms) inside the recurrence group
def cg(A: f64[n, n], b: f64[n], K1: f64[K], xt: f64[n]) -> f64:
    r[k: K, i: n] = [k == 0] * b[i] + [k >= 1] * (r[k - 1, i] - al[k - 1] * Ap[k - 1, i])
    rr[k: K] = sum[i](r[k, i] ** 2)
    p[k: K, i: n] = r[k, i] + [k >= 1] * rr[k] / rr[k - 1] * p[k - 1, i]
    Ap[k: K, i: n] = sum[j](A[i, j] * p[k, j])
    al[k: K] = rr[k] / sum[i](p[k, i] * Ap[k, i])
    x[k: K, i: n] = [k >= 1] * (x[k - 1, i] + al[k - 1] * p[k - 1, i])
    return sum[i]((x[K - 1, i] - xt[i]) ** 2)
""", sizes=dict(n=4, K=4), make=_cg_make, ref=cg_ref,
        note="a group of six with per-step scalars read one step back"),

    "chebyshev": dict(src="""
# a Chebyshev series by the three-term recurrence T[k] = 2 x T[k - 1] - T[k - 2]
def chebyshev(c: f64[K], x: f64[n], y: f64[n]) -> f64:
    T[k: K, i: n] = [k == 0] + [k == 1] * x[i] + [k >= 2] * (2.0 * x[i] * T[k - 1, i] - T[k - 2, i])
    return sum[i]((sum[k](c[k] * T[k, i]) - y[i]) ** 2)
""", sizes=dict(K=5, n=6), make=lambda rng, K, n: dict(
            c=_normal(rng, K), x=2 * rng.random(n) - 1, y=_normal(rng, n)),
        ref=chebyshev_ref, note="a recurrence two steps back, a bracket as a whole term"),

    "clenshaw": dict(src="""
# the same series by Clenshaw's backward recurrence b[k] = c[k] + 2 x b[k + 1] - b[k + 2]
def clenshaw(c: f64[K], x: f64[n], y: f64[n]) -> f64:
    b[k: K, i: n] = c[k] + [k + 1 < K] * 2.0 * x[i] * b[k + 1, i] - [k + 2 < K] * b[k + 2, i]
    p[i] = b[0, i] - [K >= 2] * x[i] * b[1, i]
    return sum[i]((p[i] - y[i]) ** 2)
""", sizes=dict(K=5, n=6), make=lambda rng, K, n: dict(
            c=_normal(rng, K), x=2 * rng.random(n) - 1, y=_normal(rng, n)),
        ref=clenshaw_ref, note="a backward recurrence two steps; a size-only guard on a read"),

    "richardson": dict(src="""
# Richardson extrapolation of central differences of g(x) = sum a sin(w x) with
# steps hs[k] = h / 2^k; q4[j] = 4^j - 1
def richardson(a: f64[M], w: f64[M], x0: f64, hs: f64[K], q4: f64[K]) -> f64:
    D[k] = sum[m](a[m] * (sin(w[m] * (x0 + hs[k])) - sin(w[m] * (x0 - hs[k])))) / (2.0 * hs[k])
    R[k: K, j: K] = [j == 0] * D[k] + [j >= 1] * [k >= 1] * (R[k, j - 1] + (R[k, j - 1] - R[k - 1, j - 1]) / q4[j])
    return R[K - 1, K - 1]
""", sizes=dict(M=3, K=4), make=_richardson_make, ref=richardson_ref,
        note="a table over two leading indices read at the same row"),

    "mps": dict(src="""
# the overlap of a matrix product state with a product state, contracted site by
# site with the environment normalised at each site (the log norms add up)
def mps(A: f64[S, D, P, D], v: f64[S, P], l0: f64[D]) -> f64:
    u[s: S, b: D] = sum[a, p](([s == 0] * l0[a] + [s >= 1] * e[s - 1, a]) * A[s, a, p, b] * v[s, p])
    nr[s: S] = sqrt(sum[b](u[s, b] ** 2))
    e[s: S, b: D] = u[s, b] / nr[s]
    return sum[s](log(nr[s]))
""", sizes=dict(S=4, D=3, P=2), make=lambda rng, S, D, P: dict(
            A=_normal(rng, S, D, P, D), v=_normal(rng, S, P), l0=_normal(rng, D)),
        ref=mps_ref, note="a four-index tensor with a repeated size; a norm inside the group"),

    # -------------------------------------------------------------- ranking
    "ndcg": dict(src="""
# a smooth NDCG: each document's rank is one plus the sigmoids of how far the others
# score above it; gains over log2(1 + rank), normalised by the ideal DCG
def ndcg(S: f64[q, n], G: f64[q, n], tau: f64, idcg: f64[q]) -> f64:
    rk[a, i] = 1.0 + sum[j | j != i](sigmoid((S[a, j] - S[a, i]) / tau))
    return 1.0 - sum[a, i](G[a, i] * 0.6931471805599453 / log(1.0 + rk[a, i]) / idcg[a]) / q
""", sizes=dict(q=3, n=5), make=lambda rng, q, n: dict(
            S=_normal(rng, q, n), G=rng.integers(0, 4, (q, n)).astype(float), tau=0.5,
            idcg=1.0 + rng.random(q)),
        ref=ndcg_ref, note="a filtered sum of pairwise sigmoids"),

    "pair_hinge": dict(src="""
# a pairwise hinge ranking loss with a margin over i64 pairs (pa[t] above pb[t])
def pair_hinge(X: f64[N, p], w: f64[p], pa: i64[P], pb: i64[P], pw: f64[P], m: f64) -> f64:
    s[i] = sum[j](X[i, j] * w[j])
    return sum[t](pw[t] * max(m - s[pa[t]] + s[pb[t]], 0.0)) + 0.5 * sum[j](w[j] ** 2)
""", sizes=dict(N=6, p=3, P=8), make=lambda rng, N, p, P: dict(
            X=_normal(rng, N, p), w=_normal(rng, p), pa=rng.integers(0, N, P), pb=rng.integers(0, N, P),
            pw=rng.random(P), m=1.0),
        ref=pair_hinge_ref, note="two gathers of a computed vector into a kink"),

    "maxsim": dict(src="""
# ColBERT late interaction: each query token's best match in a document, summed,
# and a softmax over the documents of the batch (the matching one is on the diagonal)
def maxsim(Q: f64[B, L, d], D: f64[B, M, d]) -> f64:
    sc[b, c] = sum[i](max[j](sum[k](Q[b, i, k] * D[c, j, k])))
    return -sum[b](sc[b, b] - logsumexp[c](sc[b, c]))
""", sizes=dict(B=3, L=2, M=4, d=3), make=lambda rng, B, L, M, d: dict(
            Q=_normal(rng, B, L, d), D=_normal(rng, B, M, d)),
        ref=maxsim_ref, note="a max over a contraction inside a sum"),

    # -------------------------------------------------------------- physics and graphics
    "angle_ff": dict(src="""
# a bond and angle force field over i64 index pairs and triples
def angle_ff(P: f64[n, 3], bd: i64[m, 2], r0: f64[m], kb: f64, ang: i64[q, 3], c0: f64[q], ka: f64) -> f64:
    ln[e] = sqrt(sum[c]((P[bd[e, 0], c] - P[bd[e, 1], c]) ** 2))
    u[a, c] = P[ang[a, 0], c] - P[ang[a, 1], c]
    v[a, c] = P[ang[a, 2], c] - P[ang[a, 1], c]
    cs[a] = sum[c](u[a, c] * v[a, c]) / sqrt(sum[c](u[a, c] ** 2) * sum[c](v[a, c] ** 2))
    return kb * sum[e]((ln[e] - r0[e]) ** 2) + ka * sum[a]((cs[a] - c0[a]) ** 2)
""", sizes=dict(n=5, m=5, q=4), make=_angle_make, ref=angle_ff_ref,
        note="gathers through literal columns of index tables"),

    "softras": dict(src="""
# a soft rasteriser: each pixel's coverage by a triangle is the product of the
# sigmoids of its three edge functions; triangles combine as 1 - prod(1 - 0.99 cov)
def edge(V: f64[nv, 2], F: i64[nf, 3], px: f64[P], py: f64[P], s: f64) -> f64[nf, 3, P]:
    E[f, e: 3, t] = ([e == 0] * ((V[F[f, 1], 0] - V[F[f, 0], 0]) * (py[t] - V[F[f, 0], 1]) - (V[F[f, 1], 1] - V[F[f, 0], 1]) * (px[t] - V[F[f, 0], 0]))
        + [e == 1] * ((V[F[f, 2], 0] - V[F[f, 1], 0]) * (py[t] - V[F[f, 1], 1]) - (V[F[f, 2], 1] - V[F[f, 1], 1]) * (px[t] - V[F[f, 1], 0]))
        + [e == 2] * ((V[F[f, 0], 0] - V[F[f, 2], 0]) * (py[t] - V[F[f, 2], 1]) - (V[F[f, 0], 1] - V[F[f, 2], 1]) * (px[t] - V[F[f, 2], 0])))
    return E

def softras(V: f64[nv, 2], F: i64[nf, 3], px: f64[P], py: f64[P], s: f64, img: f64[P]) -> f64:
    E = edge(V, F, px, py, s)
    cov[f, t] = sigmoid(E[f, 0, t] / s) * sigmoid(E[f, 1, t] / s) * sigmoid(E[f, 2, t] / s)
    out[t] = 1.0 - exp(sum[f](log1p(-0.99 * cov[f, t])))
    return sum[t]((out[t] - img[t]) ** 2)
""", sizes=dict(nv=6, nf=3, P=7), make=_softras_make, ref=softras_ref,
        note="a tensor-valued call; many gathers of vertices by faces"),

    "radiosity": dict(src="""
# radiosity by repeated light transport: B = E + rho F B, K - 1 bounces
def radiosity(Em: f64[n], rho: f64[n], F: f64[n, n], K1: f64[K], tgt: f64[n]) -> f64:
    B[t: K, i: n] = Em[i] + [t >= 1] * rho[i] * sum[j](F[i, j] * B[t - 1, j])
    return sum[i]((B[K - 1, i] - tgt[i]) ** 2)
""", sizes=dict(n=5, K=4), make=lambda rng, n, K: dict(
            Em=rng.random(n), rho=0.5 * rng.random(n), F=rng.random((n, n)) / n, K1=np.zeros(K),
            tgt=rng.random(n)),
        ref=radiosity_ref, note="a matrix-vector product per step"),

    "swater": dict(src="""
# the 1-D shallow-water equations by Lax-Friedrichs with copied boundary values:
# height h and discharge q step together, the momentum flux a third member
def swater(h0: f64[n], q0: f64[n], K1: f64[K], dt: f64, g: f64, tgt: f64[n]) -> f64:
    h[t: K, i: n] = [t == 0] * h0[i] + [t >= 1] * (0.5 * ([i >= 1] * h[t - 1, i - 1] + [i == 0] * h[t - 1, i] + [i + 1 < n] * h[t - 1, i + 1] + [i + 1 == n] * h[t - 1, i])
        - 0.5 * dt * ([i + 1 < n] * q[t - 1, i + 1] + [i + 1 == n] * q[t - 1, i] - [i >= 1] * q[t - 1, i - 1] - [i == 0] * q[t - 1, i]))
    q[t: K, i: n] = [t == 0] * q0[i] + [t >= 1] * (0.5 * ([i >= 1] * q[t - 1, i - 1] + [i == 0] * q[t - 1, i] + [i + 1 < n] * q[t - 1, i + 1] + [i + 1 == n] * q[t - 1, i])
        - 0.5 * dt * ([i + 1 < n] * fx[t - 1, i + 1] + [i + 1 == n] * fx[t - 1, i] - [i >= 1] * fx[t - 1, i - 1] - [i == 0] * fx[t - 1, i]))
    fx[t: K, i: n] = q[t, i] ** 2 / h[t, i] + 0.5 * g * h[t, i] ** 2
    return sum[i]((h[K - 1, i] - tgt[i]) ** 2)
""", sizes=dict(n=6, K=4), make=lambda rng, n, K: dict(
            h0=1.0 + 0.2 * rng.random(n), q0=0.1 * _normal(rng, n), K1=np.zeros(K), dt=0.1, g=9.81,
            tgt=1.0 + 0.1 * rng.random(n)),
        ref=swater_ref, note="a group of three, one of them read at the same step"),

    # -------------------------------------------------------------- finance
    "asian": dict(src="""
# an arithmetic Asian call by Monte Carlo: geometric Brownian paths stepping along t,
# a smoothed payoff (softplus with temperature tau), discounted
def asian(S0: f64, sig: f64, r: f64, dt: f64, Z: f64[P, T], Kst: f64, tau: f64) -> f64:
    S[t: T, p: P] = ([t == 0] * S0 + [t >= 1] * S[t - 1, p]) * exp((r - 0.5 * sig ** 2) * dt + sig * sqrt(dt) * Z[p, t])
    avg[p] = sum[t](S[t, p]) / T
    return exp(-r * T * dt) * sum[p](tau * softplus((avg[p] - Kst) / tau)) / P
""", sizes=dict(P=6, T=5), make=lambda rng, P, T: dict(
            S0=100.0, sig=0.2, r=0.03, dt=0.1, Z=_normal(rng, P, T), Kst=100.0, tau=0.5),
        ref=asian_ref, note="scalar greeks through a recurrence; a transposed noise read"),

    "cir": dict(src="""
# a zero-coupon bond under the CIR short rate by Euler paths (the rate floored
# under its square root)
def cir(r0: f64, ka: f64, th: f64, sg: f64, dt: f64, Z: f64[T, P]) -> f64:
    r[t: T, p: P] = [t == 0] * r0 + [t >= 1] * (r[t - 1, p] + ka * (th - r[t - 1, p]) * dt + sg * sqrt(max(r[t - 1, p], 0.00000001)) * sqrt(dt) * Z[t, p])
    return sum[p](exp(-dt * sum[t](r[t, p]))) / P
""", sizes=dict(T=6, P=5), make=lambda rng, T, P: dict(
            r0=0.05, ka=0.8, th=0.04, sg=0.1, dt=0.1, Z=_normal(rng, T, P)),
        ref=cir_ref, note="max inside sqrt inside a recurrence"),

    # -------------------------------------------------------------- edge cases
    "onestep": dict(src="""
# a leaky running correlation over a derived range; at the test sizes (n = k) the
# recurrence has exactly one step
def onestep(x: f64[n], w: f64[k]) -> f64:
    s[t: n - k + 1] = sum[j](w[j] * x[t + j]) + [t >= 1] * 0.9 * s[t - 1]
    return sum[t](s[t] ** 2)
""", sizes=dict(n=4, k=4), make=lambda rng, n, k: dict(x=_normal(rng, n), w=_normal(rng, k)),
        ref=onestep_ref, note="a recurrence of one step over a derived range"),

    "filtfilt": dict(src="""
# zero-phase smoothing: a forward exponential filter, then a backward one over its output
def filtfilt(x: f64[T], a: f64, tgt: f64[T]) -> f64:
    y[t] = (1.0 - a) * x[t] + [t >= 1] * a * y[t - 1]
    z[t] = (1.0 - a) * y[t] + [t + 1 < T] * a * z[t + 1]
    return sum[t]((z[t] - tgt[t]) ** 2)
""", sizes=dict(T=7), make=lambda rng, T: dict(x=_normal(rng, T), a=0.6, tgt=_normal(rng, T)),
        ref=filtfilt_ref, note="a forward recurrence feeding a backward one"),

    "derived_red": dict(src="""
# reductions over a derived range: a max, a min that is empty when n = k (zeroed by a
# size bracket), a logsumexp of all but the last, and one over the even positions
def derived_red(x: f64[n], w: f64[k]) -> f64:
    c[i: n - k + 1] = sum[j](w[j] * x[i + j])
    mx = max[i: n - k + 1](c[i])
    mn = min[i: n - k + 1 | i >= 1](c[i])
    ls = logsumexp[i: n - k + 1 | i + k < n](c[i])
    ev = logsumexp[i: n - k + 1 | i % 2 == 0](c[i])
    return mx - [n > k] * mn + [n > k] * ls + ev
""", sizes=dict(n=7, k=3), make=lambda rng, n, k: dict(x=_normal(rng, n), w=_normal(rng, k)),
        ref=derived_red_ref, note="filters over a derived range, one a divisibility guard"),

    "calls6": dict(src="""
# a chain of six calls through derived sizes
def d1(v: f64[n]) -> f64[n - 1]:
    r[i: n - 1] = v[i + 1] - v[i]
    return r

def lvl2(x: f64[n]) -> f64[n - 1]:
    a = d1(x)
    b[i] = tanh(a[i])
    return b

def lvl3(x: f64[n]) -> f64[n - 2]:
    b = lvl2(x)
    c = d1(b)
    return c

def lvl4(x: f64[n]) -> f64[n - 3]:
    c = lvl3(x)
    d[i: n - 3] = 0.5 * (c[i] + c[i + 1])
    return d

def lvl5(x: f64[n], y: f64[n]) -> f64:
    d = lvl4(x)
    return sum[i: n - 3]((d[i] - y[i]) ** 2)

def calls6(x: f64[n], y: f64[n]) -> f64:
    return lvl5(x, y)
""", sizes=dict(n=8), make=lambda rng, n: dict(x=_normal(rng, n), y=_normal(rng, n)),
        ref=calls6_ref, note="six functions deep, a read of a longer vector within a shorter range"),

    "tuple3": dict(src="""
# a call returning a vector, a matrix and a scalar, taken apart
def stats(X: f64[N, d]) -> (f64[d], f64[d, d], f64):
    m[j] = sum[s](X[s, j]) / N
    C[j, l] = sum[s]((X[s, j] - m[j]) * (X[s, l] - m[l])) / N
    return m, C, sum[j](C[j, j])

def tuple3(X: f64[N, d], W: f64[d, d]) -> f64:
    m, C, tr = stats(X)
    return sum[j, l](W[j, l] * C[j, l]) + sum[j](m[j] ** 2) + log(tr)
""", sizes=dict(N=6, d=3), make=lambda rng, N, d: dict(X=_normal(rng, N, d), W=_normal(rng, d, d)),
        ref=tuple3_ref, note="three results of different ranks"),

    "idx7": dict(src="""
# seven indices in one statement and one sum
def idx7(X: f64[a, b, c, d, e, f, g], u: f64[a], v: f64[g], wb: f64[b], Y: f64[a, b, c, d, e, f, g]) -> f64:
    Z[i1, i2, i3, i4, i5, i6, i7] = X[i1, i2, i3, i4, i5, i6, i7] * u[i1] * v[i7]
    s = sum[i1, i2, i3, i4, i5, i6, i7](X[i1, i2, i3, i4, i5, i6, i7] * u[i1] * wb[i2])
    return sum[i1, i2, i3, i4, i5, i6, i7]((Z[i1, i2, i3, i4, i5, i6, i7] - Y[i1, i2, i3, i4, i5, i6, i7]) ** 2) + s ** 2
""", sizes=dict(a=2, b=3, c=1, d=2, e=1, f=2, g=3), make=lambda rng, a, b, c, d, e, f, g: dict(
            X=_normal(rng, a, b, c, d, e, f, g), u=_normal(rng, a), v=_normal(rng, g), wb=_normal(rng, b),
            Y=_normal(rng, a, b, c, d, e, f, g)),
        ref=idx7_ref, note="a 7-index output and a 7-index sum"),

    "powmean": dict(src="""
# a weighted power mean with the exponent a parameter, over the positive entries,
# plus a penalty whose divisor holds the exponent
def powmean(x: f64[n], w: f64[n], p: f64) -> f64:
    m = (sum[i]([x[i] > 0.0] * w[i] * x[i] ** p) / sum[i](w[i])) ** (1.0 / p)
    return m + sum[i]([x[i] > 0.0] * 1.0 / (x[i] + p) ** 2)
""", sizes=dict(n=7), make=lambda rng, n: dict(x=_normal(rng, n) + 0.5, w=rng.random(n) + 0.1, p=1.7),
        ref=powmean_ref, note="a parameter as exponent, reciprocal exponent and in a divisor"),

    "labcmp": dict(src="""
# labels compared with labels and gathered with a comparison in one statement:
# an embedding doubled where the two labels agree, a classifier on it, and the
# embedding entry of the target class pulled to a bias
def labcmp(E: f64[v, d], y: i64[S], z: i64[S], W: f64[d, d], b: f64) -> f64:
    H[s, c] = E[y[s], c] * (1.0 + [y[s] == z[s]])
    L[s, c] = sum[j](H[s, j] * W[j, c])
    tg[s] = sum[c]([c == z[s]] * E[y[s], c])
    return sum[s](logsumexp[c](L[s, c]) - L[s, z[s]]) + sum[s]((tg[s] - b) ** 2)
""", sizes=dict(v=5, d=3, S=6), make=lambda rng, v, d, S: dict(
            E=_normal(rng, v, d), y=np.array([0, 1, 2, 1, 4, 2][:S]), z=np.array([0, 2, 2, 1, 1, 0][:S]),
            W=_normal(rng, d, d), b=0.3),
        ref=labcmp_ref, note="a comparison of two labels; z gathers and compares"),
}

# What the language refuses by design (LANGUAGE.md), each a located error.
REJECTED = {
    # the inside algorithm of a PCFG reads every shorter span: the step along the span
    # length is a triangle, not a constant (section 10)
    "pcfg_inside": ("""
def pcfg_inside(R: f64[N, N, N], em: f64[n, N]) -> f64:
    b[w: n, i: n, A: N] = [w == 0] * em[i, A] + [w >= 1] * logsumexp[k, B, C | k < w and i + w < n](R[A, B, C] + b[k, i, B] + b[w - k - 1, i + k + 1, C])
    return b[n - 1, 0, 0]
""", "TLRecurrenceError", "does not step by a constant along w", 3),
    # lexicographic Gauss-Seidel reads u[t, i - 1] and u[t - 1, i + 1]: both ways
    # along i (redblack writes the sweep in two colours instead)
    "gs_lex": ("""
def gs_lex(f: f64[n], K1: f64[K]) -> f64:
    u[t: K, i: n] = 0.5 * (f[i] + [i >= 1] * u[t, i - 1] + [t >= 1] * [i + 1 < n] * u[t - 1, i + 1])
    return sum[i](u[K - 1, i] ** 2)
""", "TLRecurrenceError", "reads a later step along i", 3),
    # a segment model reading a[t - d - 1] for every duration d: not a constant step
    # (hsmm counts the duration in the state instead)
    "semimarkov_var": ("""
def semimarkov_var(sc: f64[T, D]) -> f64:
    a[t: T] = logsumexp[d: D | d <= t](sc[t, d] + [d + 1 <= t] * a[t - d - 1])
    return a[T - 1]
""", "TLRecurrenceError", "does not step by a constant along t", 3),
    # there is no lgamma builtin (a Dirichlet-multinomial needs it: sum logs of a + m
    # over the counts instead)
    "no_lgamma": ("""
def no_lgamma(a: f64[k]) -> f64:
    return sum[j](lgamma(a[j]))
""", "TLNameError", "lgamma", 3),
    # a tensor named like a builtin
    "shadow_exp": ("""
def shadow_exp(x: f64[n]) -> f64:
    exp[i] = x[i] * 2.0
    return sum[i](exp[i])
""", "TLNameError", "exp", 3),
}
