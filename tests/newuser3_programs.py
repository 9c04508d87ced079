"""A third set of programs written from the documentation alone.

Domains the first two sets (tests/newuser_programs.py, tests/newuser2_programs.py)
leave out: sequence losses and dynamic programs (CTC, a semi-Markov model, soft
value iteration, fitted Q, a weighted soft edit distance), survival and count
statistics, finance and control (an American option on a binomial tree, an
unrolled gradient-descent inner loop), geometry over i64 faces and element
lists, and knowledge-graph and recommendation losses.  Most are several
functions of one file calling each other; many are recurrences that read two or
three steps back, two-index recurrences, recurrences that gather through i64
labels, reductions of reductions and ranges from size arithmetic.  Each entry
has the shape of the other sets: the program text (the function to test is
named like the entry), the sizes of the test inputs, `make(rng, **sizes)`, an
independent NumPy version `ref(**inputs)` and a note.
tests/test_newuser3_programs.py checks them.
"""
import numpy as np
from scipy.special import expit as _sigmoid
from scipy.special import logsumexp as _lse

from newuser2_programs import _normal, _softplus


def _log_softmax(Z, axis=-1):
    return Z - _lse(Z, axis=axis, keepdims=True)


# ------------------------------------------------------------------ sequence losses and dynamic programs
def ctc_ref(Z, ext):
    lp = _log_softmax(Z)
    T, S = len(Z), len(ext)
    a = np.zeros((T, S))
    for t in range(T):
        for s in range(S):
            if t == 0:
                a[t, s] = lp[0, ext[s]] + (0.0 if s < 2 else -1e5)
                continue
            c = [a[t - 1, s]]
            if s >= 1:
                c.append(a[t - 1, s - 1])
            if s >= 2 and ext[s] != ext[s - 2]:
                c.append(a[t - 1, s - 2])
            a[t, s] = lp[t, ext[s]] + _lse(c)
    return float(-_lse(a[T - 1, S - 2:]))


def _ctc_inputs(rng, T, C, L):
    lab = rng.integers(1, C, L)
    lab[1] = lab[0]                  # a repeat, which forbids the skip between them
    ext = np.zeros(2 * L + 1, dtype=np.int64)
    ext[1::2] = lab
    return dict(Z=_normal(rng, T, C), ext=ext)


def semimarkov_ref(x, w, gold):
    T = len(x)
    P = np.cumsum(x)
    Pm = lambda t: P[t] if t >= 0 else 0.0  # noqa: E731
    al = np.zeros(T)
    for t in range(T):
        c = []
        for d in range(3):
            if d <= t:
                c.append(w[d] + P[t] - Pm(t - d - 1) + (al[t - d - 1] if t - d - 1 >= 0 else 0.0))
        al[t] = _lse(c)
    return float(al[T - 1] - np.dot(gold, x))


def softvi_ref(R, P, g, tau, mu, K):
    S = R.shape[0]
    V = np.zeros(S)
    for k in range(len(K)):
        Q = R + (g * np.einsum("sau,u->sa", P, V) if k >= 1 else 0.0)
        V = tau * _lse(Q / tau, axis=1)
    return float(mu @ V)


def _softvi_inputs(rng, S, A, k):
    P = rng.random((S, A, S))
    return dict(R=_normal(rng, S, A), P=P / P.sum(axis=2, keepdims=True), g=0.9, tau=0.5,
                mu=rng.random(S), K=np.zeros(k))


def gridvi_ref(R, nxt, g, tau, K, goal):
    S = R.shape[0]
    V = np.zeros(S)
    for k in range(len(K)):
        Q = R + (g * V[nxt] if k >= 1 else 0.0)
        V = tau * _lse(Q / tau, axis=1)
    return float(np.sum((V - goal) ** 2))


def fqi_ref(phi, W, s0, act, rew, s1, live, g):
    Q = phi @ W
    tgt = rew + g * live * Q[s1].max(axis=1)
    return float(np.mean((tgt - Q[s0, act]) ** 2))


def _fqi_inputs(rng, S, d, A, N):
    return dict(phi=_normal(rng, S, d), W=_normal(rng, d, A), s0=rng.integers(0, S, N),
                act=rng.integers(0, A, N), rew=_normal(rng, N), s1=rng.integers(0, S, N),
                live=(rng.random(N) < 0.8).astype(float), g=0.95)


def wedit_ref(x, y, C, ins, dl, g):
    n, m = len(x), len(y)
    D = np.zeros((n + 1, m + 1))
    for i in range(n + 1):
        for j in range(m + 1):
            if i == 0 and j == 0:
                continue
            if i == 0:
                D[i, j] = D[i, j - 1] + ins[y[j - 1]]
            elif j == 0:
                D[i, j] = D[i - 1, j] + dl[x[i - 1]]
            else:
                v = np.array([D[i - 1, j - 1] + C[x[i - 1], y[j - 1]], D[i - 1, j] + dl[x[i - 1]],
                              D[i, j - 1] + ins[y[j - 1]]])
                D[i, j] = -g * _lse(-v / g)
    return float(D[n, m])


def _wedit_inputs(rng, n, m, a):
    return dict(x=rng.integers(0, a, n), y=rng.integers(0, a, m), C=rng.random((a, a)) + 0.1,
                ins=rng.random(a) + 0.5, dl=rng.random(a) + 0.5, g=0.3)


# ------------------------------------------------------------------ statistics
def cox_ref(X, beta, d, lam):
    eta = X @ beta
    n = len(eta)
    R = np.array([_lse(eta[i:]) for i in range(n)])
    return float(-np.sum(d * (eta - R)) + lam * np.sum(beta ** 2))


def garch_ref(r, wr, ar, br, v0):
    om, a, b = _softplus(wr), _sigmoid(ar), _sigmoid(br)
    T = len(r)
    s2 = np.zeros(T)
    for t in range(T):
        s2[t] = v0 if t == 0 else om + a * r[t - 1] ** 2 + b * s2[t - 1]
    return float(0.5 * np.sum(np.log(2 * np.pi * s2) + r ** 2 / s2))


def ordinal_ref(X, w, dth, y):
    eta = X @ w
    th = dth[0] + np.concatenate([[0.0], np.cumsum(_softplus(dth[1:]))])
    m = len(th)
    cdf = _sigmoid(th[None, :] - eta[:, None])
    up = np.where(y < m, cdf[np.arange(len(y)), np.minimum(y, m - 1)], 1.0)
    lo = np.where(y >= 1, cdf[np.arange(len(y)), np.maximum(y - 1, 0)], 0.0)
    return float(-np.sum(np.log(up - lo)))


def zip_ref(X, beta, gam, y, zero, lfy):
    lam = np.exp(X @ beta)
    pi = _sigmoid(X @ gam)
    ll = np.where(zero, np.log(pi + (1 - pi) * np.exp(-lam)),
                  np.log(1 - pi) - lam + y * np.log(lam) - lfy)
    return float(-np.sum(ll))


def _zip_inputs(rng, n, d):
    y = rng.poisson(1.0, n).astype(float)
    y[:2] = 0.0
    from scipy.special import gammaln
    return dict(X=0.5 * _normal(rng, n, d), beta=0.3 * _normal(rng, d), gam=0.3 * _normal(rng, d),
                y=y, zero=y == 0.0, lfy=gammaln(y + 1))


def dirmult_ref(la, cnt, tot, ar):
    a = np.exp(la)
    A = a.sum()
    ll = 0.0
    for s in range(cnt.shape[0]):
        for c in range(cnt.shape[1]):
            ll += np.sum(np.log(a[c] + ar[:cnt[s, c]]))
        ll -= np.sum(np.log(A + ar[:tot[s]]))
    return float(-ll)


def _dirmult_inputs(rng, b, K, M):
    cnt = rng.integers(0, 3, (b, K))
    cnt[0, 0] = 0
    return dict(la=0.3 * _normal(rng, K), cnt=cnt, tot=cnt.sum(axis=1), ar=np.arange(M, dtype=float))


def weibull_ref(X, beta, lk, t, d):
    k = np.exp(lk)
    lam = np.exp(X @ beta)
    z = t / lam
    return float(-np.sum(d * (np.log(k) - np.log(lam) + (k - 1) * np.log(z)) - z ** k))


def blr_ref(X, y, la, lb, Ainv, ldA):
    a, b = np.exp(la), np.exp(lb)
    N, M = X.shape
    m = b * Ainv @ (X.T @ y)
    E = b / 2 * np.sum((y - X @ m) ** 2) + a / 2 * np.sum(m ** 2)
    return float(M / 2 * la + N / 2 * lb - E - 0.5 * ldA - N / 2 * np.log(2 * np.pi))


def _blr_inputs(rng, N, M):
    X = _normal(rng, N, M)
    A = np.exp(0.1) * np.eye(M) + np.exp(0.4) * X.T @ X
    return dict(X=X, y=_normal(rng, N), la=0.1, lb=0.4, Ainv=np.linalg.inv(A),
                ldA=float(np.linalg.slogdet(A)[1]))


def gmmchol_ref(x, mu, L, wl):
    n, d = x.shape
    K = mu.shape[0]
    lw = _log_softmax(wl)
    comp = np.zeros((n, K))
    for k in range(K):
        Lk = np.tril(L[k])
        y = (x - mu[k]) @ Lk
        comp[:, k] = lw[k] - d / 2 * np.log(2 * np.pi) + np.sum(np.log(np.diag(Lk))) - 0.5 * np.sum(y ** 2, axis=1)
    return float(-np.sum(_lse(comp, axis=1)))


def _gmmchol_inputs(rng, n, d, K):
    L = 0.3 * _normal(rng, K, d, d)
    for k in range(K):
        L[k][np.diag_indices(d)] = 1.0 + rng.random(d)
    return dict(x=_normal(rng, n, d), mu=_normal(rng, K, d), L=L, wl=_normal(rng, K))


def hawkes_ref(tt, lmu, la, lb, Tend):
    mu, a, b = np.exp(lmu), np.exp(la), np.exp(lb)
    n = len(tt)
    A = np.zeros(n)
    for i in range(1, n):
        A[i] = np.exp(-b * (tt[i] - tt[i - 1])) * (1.0 + A[i - 1])
    return float(-(np.sum(np.log(mu + a * A)) - mu * Tend - a / b * np.sum(1 - np.exp(-b * (Tend - tt)))))


# ------------------------------------------------------------------ finance and control
def option_ref(S0, K, sig, r, dt, N1):
    N = len(N1) - 1
    u, dn = np.exp(sig * np.sqrt(dt)), np.exp(-sig * np.sqrt(dt))
    p = (np.exp(r * dt) - dn) / (u - dn)
    disc = np.exp(-r * dt)
    V = np.array([max(K - S0 * u ** k * dn ** (N - k), 0.0) for k in range(N + 1)])
    for t in range(N - 1, -1, -1):
        S = np.array([S0 * u ** k * dn ** (t - k) for k in range(t + 1)])
        V = np.maximum(K - S, disc * (p * V[1:t + 2] + (1 - p) * V[:t + 1]))
    return float(V[0])


def portfolio_ref(z, F, D, mu, w0, lam, kap):
    w = np.exp(_log_softmax(z))
    Sig = F @ F.T + np.diag(D)
    return float(lam * w @ Sig @ w - mu @ w + kap * np.sum(np.sqrt((w - w0) ** 2 + 1e-6)))


def metagd_ref(A, b, x0, lr, xs, T1):
    x = x0.copy()
    for _ in range(len(T1) - 1):
        x = x - lr * (A @ x - b)
    return float(0.5 * np.sum((x - xs) ** 2))


def mpc_ref(A, B, x0, V, Qd, P, rho, umax):
    U = np.tanh(V) * umax
    x = x0.copy()
    c = 0.0
    for t in range(len(U)):
        c += np.sum(Qd * x ** 2)
        x = A @ x + B @ U[t]
    c += x @ P @ x
    c += rho * np.sum((U[1:] - U[:-1]) ** 2)
    return float(c)


# ------------------------------------------------------------------ geometry, graphics and PDEs
def meshsmooth_ref(V, f, lam, tgt):
    n = V.shape[0]
    L = np.zeros_like(V)
    for a, b, c in f:
        for p, q in ((a, b), (b, c), (c, a)):
            L[p] += V[q] - V[p]
            L[q] += V[p] - V[q]
    V1 = V + lam * L
    return float(np.sum((V1 - tgt) ** 2) / n)


def _mesh_inputs(rng, n, F):
    f = np.array([rng.choice(n, 3, replace=False) for _ in range(F)], dtype=np.int64)
    return dict(V=_normal(rng, n, 3), f=f, lam=0.1, tgt=_normal(rng, n, 3))


def fem1d_ref(u, X, conn, k, fl):
    a, b = conn[:, 0], conn[:, 1]
    return float(0.5 * np.sum(k * (u[b] - u[a]) ** 2 / (X[b] - X[a])) - np.dot(fl, u))


def _fem_inputs(rng, n):
    X = np.cumsum(rng.random(n) + 0.5)
    conn = np.stack([np.arange(n - 1), np.arange(1, n)], axis=1)
    return dict(u=_normal(rng, n), X=X, conn=conn, k=rng.random(n - 1) + 0.5, fl=_normal(rng, n))


def cloth_ref(P, sp, L0, k, mass, pin, anchor, kp):
    d = P[sp[:, 0]] - P[sp[:, 1]]
    ln = np.sqrt(np.sum(d ** 2, axis=1) + 1e-12)
    return float(0.5 * np.sum(k * (ln - L0) ** 2) + 9.81 * np.sum(mass * P[:, 2])
                 + kp * np.sum((P[pin] - anchor) ** 2))


def _cloth_inputs(rng, n, m, q):
    sp = np.stack([rng.integers(0, n, m), rng.integers(0, n, m)], axis=1)
    sp[:, 1] = (sp[:, 0] + 1 + rng.integers(0, n - 1, m)) % n
    return dict(P=_normal(rng, n, 3), sp=sp, L0=rng.random(m) + 0.5, k=rng.random(m) + 1.0,
                mass=rng.random(n), pin=rng.integers(0, n, q), anchor=_normal(rng, q, 3), kp=10.0)


def hornschunck_ref(u, v, Ix, Iy, It, al):
    dat = np.sum((Ix * u + Iy * v + It) ** 2)
    reg = 0.0
    for w in (u, v):
        reg += np.sum((w[1:, :] - w[:-1, :]) ** 2) + np.sum((w[:, 1:] - w[:, :-1]) ** 2)
    return float(dat + al ** 2 * reg)


def tvl1_ref(u, f, lam, eps):
    dx = np.zeros_like(u)
    dy = np.zeros_like(u)
    dx[:, :-1] = u[:, 1:] - u[:, :-1]
    dy[:-1, :] = u[1:, :] - u[:-1, :]
    return float(np.sum(np.sqrt((u - f) ** 2 + eps)) + lam * np.sum(np.sqrt(dx ** 2 + dy ** 2 + eps)))


def _bspline_basis(u):
    return np.stack([(1 - u) ** 3, 3 * u ** 3 - 6 * u ** 2 + 4, -3 * u ** 3 + 3 * u ** 2 + 3 * u + 1,
                     u ** 3], axis=1) / 6.0


def bspline_ref(Cp, span, u, tgt):
    B = _bspline_basis(u)
    idx = span[:, None] + np.arange(4)[None, :]
    pts = np.einsum("sc,scd->sd", B, Cp[idx])
    return float(np.sum((pts - tgt) ** 2))


def _bspline_inputs(rng, m, q):
    span = rng.integers(0, m - 3, q)
    return dict(Cp=_normal(rng, m, 2), idx=span[:, None] + np.arange(4)[None, :], u=rng.random(q),
                tgt=_normal(rng, q, 2))


def _bspline_ref_idx(Cp, idx, u, tgt):
    return bspline_ref(Cp, idx[:, 0], u, tgt)


# ------------------------------------------------------------------ knowledge graphs and recommendation
def transe_ref(E, R, h, r, t, tn, margin):
    pos = np.sqrt(np.sum((E[h] + R[r] - E[t]) ** 2, axis=1) + 1e-9)
    neg = np.sqrt(np.sum((E[h] + R[r] - E[tn]) ** 2, axis=1) + 1e-9)
    return float(np.sum(np.maximum(margin + pos - neg, 0.0)) / len(h))


def _kg_inputs(rng, ne, nr, d, B):
    return dict(E=_normal(rng, ne, d), R=_normal(rng, nr, d), h=rng.integers(0, ne, B),
                r=rng.integers(0, nr, B), t=rng.integers(0, ne, B), tn=rng.integers(0, ne, B), margin=1.0)


def distmult_ref(E, R, h, r, t, lam):
    S = np.einsum("sd,sd,ed->se", E[h], R[r], E)
    return float(np.mean(_lse(S, axis=1) - S[np.arange(len(h)), t]) + lam * np.sum(E ** 2))


def _dm_inputs(rng, ne, nr, d, B):
    a = _kg_inputs(rng, ne, nr, d, B)
    del a["tn"], a["margin"]
    return dict(a, lam=0.01)


def mfbias_ref(P, Q, bu, bi, mu, us, it, y, lam):
    pred = mu + bu[us] + bi[it] + np.sum(P[us] * Q[it], axis=1)
    return float(np.sum((pred - y) ** 2) + lam * (np.sum(P ** 2) + np.sum(Q ** 2) + np.sum(bu ** 2) + np.sum(bi ** 2)))


def _mf_inputs(rng, U, I, d, N):
    return dict(P=0.5 * _normal(rng, U, d), Q=0.5 * _normal(rng, I, d), bu=0.1 * _normal(rng, U),
                bi=0.1 * _normal(rng, I), mu=0.3, us=rng.integers(0, U, N), it=rng.integers(0, I, N),
                y=_normal(rng, N), lam=0.05)


def bpr_ref(P, Q, us, pos, neg):
    xp = np.sum(P[us] * Q[pos], axis=1)
    xn = np.einsum("sd,skd->sk", P[us], Q[neg])
    return float(-np.mean(np.log(_sigmoid(xp[:, None] - xn))))


def _bpr_inputs(rng, U, I, d, B, K):
    return dict(P=_normal(rng, U, d), Q=_normal(rng, I, d), us=rng.integers(0, U, B),
                pos=rng.integers(0, I, B), neg=rng.integers(0, I, (B, K)))


def kgreach_ref(E, W, h, t, b1):
    # a reduction of reductions: the worst over relations of the best over entities
    S = np.einsum("sd,rde,ke->srk", E[h], W, E)
    best = S.max(axis=2)
    return float(np.sum(best.min(axis=1)) + np.sum(_lse(S[np.arange(len(h)), :, t] + b1[0], axis=1)))


# ------------------------------------------------------------------ more recurrences
def gate2_ref(x, u, W):
    T, d = x.shape
    s = np.zeros((T, d))
    for t in range(T):
        z = u @ x[t] + (u @ s[t - 1] if t >= 1 else 0.0)
        g = _sigmoid(z)
        s[t] = g * x[t] + (1.0 - g) * (W @ s[t - 1] if t >= 1 else 0.0)
    return float(np.sum(s ** 2))


def ar2_ref(A1, A2, x0, x1, obs):
    T = len(obs)
    x = np.zeros_like(obs)
    x[0], x[1] = x0, x1
    for t in range(2, T):
        x[t] = A1 @ x[t - 1] + A2 @ x[t - 2]
    return float(np.sum((x - obs) ** 2))


def masked_ref(lA, lE, M):
    T, K = lE.shape
    a = np.zeros((T, K))
    for t in range(T):
        a[t] = lE[t]
        if t >= 1:
            a[t] += _lse(np.where(M[t - 1][:, None], a[t - 1][:, None] + lA, -np.inf), axis=0)
    return float(_lse(a[T - 1][M[T - 1]]))


def _masked_inputs(rng, T, K):
    M = rng.random((T, K)) < 0.6
    M[:, 0] = True
    return dict(lA=_normal(rng, K, K), lE=_normal(rng, T, K), M=M)


def _ema(x, g):
    e = np.zeros_like(x)
    for t in range(len(x)):
        e[t] = x[0] if t == 0 else g * e[t - 1] + (1.0 - g) * x[t]
    return e


def macd_ref(x, g1, g2):
    h = _ema(x, g1) - _ema(x, g2)
    return float(np.sum((h - _ema(h, g1)) ** 2))


def tsne_ref(Y, P):
    D = np.sum((Y[:, None, :] - Y[None, :, :]) ** 2, axis=2)
    off = ~np.eye(len(Y), dtype=bool)
    lZ = _lse(-np.log1p(D[off]))
    return float(np.sum(P[off] * (np.log1p(D[off]) + lZ)))


def lif_ref(I, a, th):
    v = np.zeros_like(I)
    for t in range(len(I)):
        v[t] = I[t] + (a * np.where(v[t - 1] < th, v[t - 1], 0.0) if t >= 1 else 0.0)
    return float(np.sum(v ** 2))


PROGRAMS = {
    "ctc": dict(src="""
# CTC loss: the alpha recursion in log space over the label sequence with blanks
# interleaved (ext[s], S = 2L + 1), reading s - 1 and s - 2; the skip from s - 2
# is allowed only between different labels
def log_softmax(Z: f64[T, C]) -> f64[T, C]:
    lp[t, k] = Z[t, k] - logsumexp[j](Z[t, j])
    return lp

def ctc(Z: f64[T, C], ext: i64[S]) -> f64:
    lp = log_softmax(Z)
    a[t: T, s: S] = lp[t, ext[s]] + [t == 0] * [s >= 2] * -100000.0 + [t >= 1] * logsumexp[c: 3 | c == 0 or (c == 1 and s >= 1) or (c == 2 and s >= 2 and ext[s] != ext[s - 2])](
        [c == 0] * a[t - 1, s] + [c == 1 and s >= 1] * a[t - 1, s - 1] + [c == 2 and s >= 2] * a[t - 1, s - 2])
    return -logsumexp[s | s >= S - 2](a[T - 1, s])
""", sizes=dict(T=7, C=4, L=3), make=_ctc_inputs, ref=ctc_ref,
        note="recurrence reading s - 1, s - 2 through a gather, label comparison in a filter"),

    "semimarkov": dict(src="""
# a semi-Markov (segment) model with segments of length 1 to 3: the log partition
# over segmentations reads the three previous steps, minus a gold segmentation's score
def prefix(x: f64[T]) -> f64[T]:
    P[t] = x[t] + [t >= 1] * P[t - 1]
    return P

def semimarkov(x: f64[T], w: f64[3], gold: f64[T]) -> f64:
    P = prefix(x)
    al[t: T] = logsumexp[d: 3 | d <= t](w[d] + P[t] + [d == 0 and t >= 1] * (al[t - 1] - P[t - 1])
        + [d == 1 and t >= 2] * (al[t - 2] - P[t - 2]) + [d == 2 and t >= 3] * (al[t - 3] - P[t - 3]))
    return al[T - 1] - sum[t](gold[t] * x[t])
""", sizes=dict(T=8), make=lambda rng, T: dict(x=_normal(rng, T), w=_normal(rng, 3), gold=rng.random(T)),
        ref=semimarkov_ref, note="recurrence three steps back, a filter on the step"),

    "softvi": dict(src="""
# soft value iteration for k sweeps with a dense transition tensor; the value of a start distribution
def softvi(R: f64[S, A], P: f64[S, A, S], g: f64, tau: f64, mu: f64[S], K: f64[k]) -> f64:
    V[i: k, s: S] = tau * logsumexp[a]((R[s, a] + [i >= 1] * g * sum[u](P[s, a, u] * V[i - 1, u])) / tau)
    return sum[s](mu[s] * V[k - 1, s])
""", sizes=dict(S=4, A=3, k=5), make=_softvi_inputs, ref=softvi_ref,
        note="soft Bellman backup, a sum inside a logsumexp inside a recurrence"),

    "gridvi": dict(src="""
# soft value iteration on a deterministic world: the next state is an i64 table
def gridvi(R: f64[S, A], nxt: i64[S, A], g: f64, tau: f64, K: f64[k], goal: f64[S]) -> f64:
    V[i: k, s: S] = tau * logsumexp[a]((R[s, a] + [i >= 1] * g * V[i - 1, nxt[s, a]]) / tau)
    return sum[s]((V[k - 1, s] - goal[s]) ** 2)
""", sizes=dict(S=5, A=3, k=4), make=lambda rng, S, A, k: dict(
            R=_normal(rng, S, A), nxt=rng.integers(0, S, (S, A)), g=0.9, tau=0.7, K=np.zeros(k),
            goal=_normal(rng, S)),
        ref=gridvi_ref, note="recurrence reading the previous step through a gather"),

    "fqi": dict(src="""
# fitted-Q (TD) loss with linear features: target r + g * live * max_a Q(s', a)
def qvalues(phi: f64[S, d], W: f64[d, A]) -> f64[S, A]:
    Q[s, a] = sum[j](phi[s, j] * W[j, a])
    return Q

def fqi(phi: f64[S, d], W: f64[d, A], s0: i64[N], act: i64[N], rew: f64[N], s1: i64[N], live: f64[N], g: f64) -> f64:
    Q = qvalues(phi, W)
    tgt[i] = rew[i] + g * live[i] * max[a](Q[s1[i], a])
    return sum[i]((tgt[i] - Q[s0[i], act[i]]) ** 2) / N
""", sizes=dict(S=5, d=3, A=3, N=8), make=_fqi_inputs, ref=fqi_ref,
        note="max over a gathered row, a double gather"),

    "wedit": dict(src="""
# soft edit distance between two i64 sequences with substitution costs from a
# matrix and per-symbol insertion and deletion costs, over (n + 1) x (m + 1) cells
def wedit(x: i64[n], y: i64[m], C: f64[a, a], ins: f64[a], dl: f64[a], g: f64) -> f64:
    D[i: n + 1, j: m + 1] = ([i == 0 and j >= 1] * (D[i, j - 1] + ins[y[j - 1]])
        + [j == 0 and i >= 1] * (D[i - 1, j] + dl[x[i - 1]])
        + [i >= 1 and j >= 1] * -g * logsumexp[c: 3](-([c == 0] * (D[i - 1, j - 1] + C[x[i - 1], y[j - 1]])
            + [c == 1] * (D[i - 1, j] + dl[x[i - 1]]) + [c == 2] * (D[i, j - 1] + ins[y[j - 1]])) / g))
    return D[n, m]
""", sizes=dict(n=5, m=4, a=3), make=_wedit_inputs, ref=wedit_ref,
        note="two-index recurrence over n + 1 by m + 1 with gathers at i - 1 and j - 1"),

    "cox": dict(src="""
# Cox partial likelihood, times sorted ascending: the risk set of i is j >= i, a
# reverse cumulative logsumexp; d marks the observed events; ridge penalty
def linpred(X: f64[n, p], beta: f64[p]) -> f64[n]:
    eta[i] = sum[j](X[i, j] * beta[j])
    return eta

def cox(X: f64[n, p], beta: f64[p], d: f64[n], lam: f64) -> f64:
    eta = linpred(X, beta)
    R[i] = logsumexp[c: 2 | c == 0 or i + 1 < n]([c == 0] * eta[i] + [c == 1 and i + 1 < n] * R[i + 1])
    return -sum[i](d[i] * (eta[i] - R[i])) + lam * sum[j](beta[j] ** 2)
""", sizes=dict(n=7, p=3), make=lambda rng, n, p: dict(
            X=_normal(rng, n, p), beta=_normal(rng, p), d=(rng.random(n) < 0.7).astype(float), lam=0.1),
        ref=cox_ref, note="backward recurrence, logsumexp of two with a filter"),

    "garch": dict(src="""
# GARCH(1, 1) Gaussian negative log-likelihood with constrained parameters
def garch(r: f64[T], wr: f64, ar: f64, br: f64, v0: f64) -> f64:
    om = softplus(wr)
    a = sigmoid(ar)
    b = sigmoid(br)
    s2[t: T] = [t == 0] * v0 + [t >= 1] * (om + a * r[t - 1] ** 2 + b * s2[t - 1])
    return 0.5 * sum[t](log(2.0 * 3.141592653589793 * s2[t]) + r[t] ** 2 / s2[t])
""", sizes=dict(T=10), make=lambda rng, T: dict(r=_normal(rng, T), wr=-1.0, ar=-1.0, br=1.0, v0=1.0),
        ref=garch_ref, note="variance recurrence, scalar statements"),

    "ordinal": dict(src="""
# ordinal regression with cumulative logits: m increasing thresholds for m + 1 classes
def thresholds(dth: f64[m]) -> f64[m]:
    th[k: m] = dth[0] + sum[j: m]([1 <= j and j <= k] * softplus(dth[j]))
    return th

def ordinal(X: f64[b, p], w: f64[p], dth: f64[m], y: i64[b]) -> f64:
    th = thresholds(dth)
    eta[s] = sum[j](X[s, j] * w[j])
    cdf[s, k] = sigmoid(th[k] - eta[s])
    up[s] = sum[k]([k == y[s]] * cdf[s, k]) + [y[s] == m]
    lo[s] = sum[k]([k + 1 == y[s]] * cdf[s, k])
    return -sum[s](log(up[s] - lo[s]))
""", sizes=dict(b=9, p=3, m=3), make=lambda rng, b, p, m: dict(
            X=_normal(rng, b, p), w=_normal(rng, p), dth=_normal(rng, m),
            y=np.concatenate([np.arange(m + 1), rng.integers(0, m + 1, b - m - 1)])),
        ref=ordinal_ref, note="label arithmetic in brackets, a label compared with a size"),

    "zip": dict(src="""
# zero-inflated Poisson regression: a relation marks the zero counts
def zip(X: f64[n, d], beta: f64[d], gam: f64[d], y: f64[n], zero: bool[n], lfy: f64[n]) -> f64:
    lam[i] = exp(sum[j](X[i, j] * beta[j]))
    pi[i] = sigmoid(sum[j](X[i, j] * gam[j]))
    ll[i] = [zero[i]] * log(pi[i] + (1.0 - pi[i]) * exp(-lam[i])) + [not zero[i]] * (log(1.0 - pi[i]) - lam[i] + y[i] * log(lam[i]) - lfy[i])
    return -sum[i](ll[i])
""", sizes=dict(n=9, d=3), make=_zip_inputs, ref=zip_ref, note="a relation and its negation as branches"),

    "dirmult": dict(src="""
# Dirichlet-multinomial negative log-likelihood with integer counts: the gamma
# ratios are written as products log(a + j) for j below the count (ar[j] = j)
def dirmult(la: f64[K], cnt: i64[b, K], tot: i64[b], ar: f64[M]) -> f64:
    a[c] = exp(la[c])
    A = sum[c](a[c])
    num[s] = sum[c, j]([j < cnt[s, c]] * log(a[c] + ar[j]))
    den[s] = sum[j]([j < tot[s]] * log(A + ar[j]))
    return sum[s](den[s] - num[s])
""", sizes=dict(b=4, K=3, M=7), make=_dirmult_inputs, ref=dirmult_ref, note="label compared with a summed index, gamma ratios as sums"),

    "weibull": dict(src="""
# Weibull regression with right censoring: d[i] = 1 for an event, 0 for censored
def weibull(X: f64[n, p], beta: f64[p], lk: f64, t: f64[n], d: f64[n]) -> f64:
    k = exp(lk)
    llam[i] = sum[j](X[i, j] * beta[j])
    z[i] = t[i] * exp(-llam[i])
    return -sum[i](d[i] * (lk - llam[i] + (k - 1.0) * log(z[i])) - z[i] ** k)
""", sizes=dict(n=8, p=2), make=lambda rng, n, p: dict(
            X=0.5 * _normal(rng, n, p), beta=0.3 * _normal(rng, p), lk=0.2, t=rng.random(n) + 0.2,
            d=(rng.random(n) < 0.7).astype(float)),
        ref=weibull_ref, note="a power with a parameter exponent"),

    "blr": dict(src="""
# Bayesian linear regression log evidence, with the inverse of A and its log
# determinant given (computed outside at these hyperparameters)
def matvec(M: f64[r, c], v: f64[c]) -> f64[r]:
    o[i] = sum[j](M[i, j] * v[j])
    return o

def blr(X: f64[N, M], y: f64[N], la: f64, lb: f64, Ainv: f64[M, M], ldA: f64) -> f64:
    a = exp(la)
    b = exp(lb)
    Xty[j] = sum[i](X[i, j] * y[i])
    m0 = matvec(Ainv, Xty)
    fit = matvec(X, m0)
    E = b / 2.0 * sum[i]((y[i] - b * fit[i]) ** 2) + a / 2.0 * sum[j]((b * m0[j]) ** 2)
    return M / 2.0 * la + N / 2.0 * lb - E - 0.5 * ldA - N / 2.0 * log(2.0 * 3.141592653589793)
""", sizes=dict(N=8, M=3), make=_blr_inputs, ref=blr_ref, note="sizes as values, one function called twice"),

    "gmmchol": dict(src="""
# a Gaussian mixture with full covariances given by lower-triangular Cholesky
# factors of the precisions: y = L^T (x - mu) reads only j >= i
def gmmchol(x: f64[n, d], mu: f64[K, d], L: f64[K, d, d], wl: f64[K]) -> f64:
    lw[k] = wl[k] - logsumexp[c](wl[c])
    y[s, k, i] = sum[j]([j >= i] * L[k, j, i] * (x[s, j] - mu[k, j]))
    ld[k] = sum[i](log(L[k, i, i]))
    comp[s, k] = lw[k] - d / 2.0 * log(2.0 * 3.141592653589793) + ld[k] - 0.5 * sum[i](y[s, k, i] ** 2)
    return -sum[s](logsumexp[k](comp[s, k]))
""", sizes=dict(n=6, d=3, K=2), make=_gmmchol_inputs, ref=gmmchol_ref,
        note="triangular bracket, diagonal read, logsumexp of a sum of squares"),

    "hawkes": dict(src="""
# a Hawkes process with an exponential kernel: the excitation at each event is a
# recurrence over the sorted event times
def hawkes(tt: f64[n], lmu: f64, la: f64, lb: f64, Tend: f64) -> f64:
    mu = exp(lmu)
    a = exp(la)
    b = exp(lb)
    Ex[i] = [i >= 1] * exp(-b * (tt[i] - tt[i - 1])) * (1.0 + Ex[i - 1])
    return -(sum[i](log(mu + a * Ex[i])) - mu * Tend - a / b * sum[i](1.0 - exp(-b * (Tend - tt[i]))))
""", sizes=dict(n=8), make=lambda rng, n: dict(tt=np.sort(rng.random(n)) * 5.0, lmu=-0.5, la=-0.7, lb=0.3, Tend=5.5),
        ref=hawkes_ref, note="recurrence with a data-dependent decay"),

    "option": dict(src="""
# an American put on a binomial tree laid out as [t, k] with k <= t: the stock
# prices run forward, the option values backward, each the larger of exercise and hold
def option(S0: f64, K: f64, sig: f64, r: f64, dt: f64, N1: f64[N]) -> f64:
    u = exp(sig * sqrt(dt))
    dn = exp(-sig * sqrt(dt))
    p = (exp(r * dt) - dn) / (u - dn)
    disc = exp(-r * dt)
    S[t: N, k: N] = [t == 0 and k == 0] * S0 + [t >= 1 and k >= 1] * u * S[t - 1, k - 1] + [t >= 1 and k == 0] * dn * S[t - 1, 0]
    V[t: N, k: N] = [k <= t] * max(K - S[t, k], [t + 1 < N] * disc * (p * V[t + 1, k + 1] + (1.0 - p) * V[t + 1, k]))
    return V[0, 0]
""", sizes=dict(N=7), make=lambda rng, N: dict(S0=1.0, K=1.05, sig=0.3, r=0.02, dt=0.1, N1=np.zeros(N)),
        ref=option_ref, note="two recurrences over a triangular [t, k] tree, forward and backward"),

    "portfolio": dict(src="""
# mean-variance portfolio with softmax weights, a factor covariance and a smooth transaction cost
def qform(w: f64[n], F: f64[n, f], D: f64[n]) -> f64:
    Fw[q] = sum[i](F[i, q] * w[i])
    return sum[q](Fw[q] ** 2) + sum[i](D[i] * w[i] ** 2)

def portfolio(z: f64[n], F: f64[n, f], D: f64[n], mu: f64[n], w0: f64[n], lam: f64, kap: f64) -> f64:
    w[i] = exp(z[i] - logsumexp[j](z[j]))
    return lam * qform(w, F, D) - sum[i](mu[i] * w[i]) + kap * sum[i](sqrt((w[i] - w0[i]) ** 2 + 0.000001))
""", sizes=dict(n=6, f=2), make=lambda rng, n, f: dict(
            z=_normal(rng, n), F=_normal(rng, n, f), D=rng.random(n), mu=_normal(rng, n), w0=np.full(n, 1.0 / n),
            lam=2.0, kap=0.1),
        ref=portfolio_ref, note="a scalar call inside an expression"),

    "metagd": dict(src="""
# an unrolled inner loop of gradient descent on 0.5 x^T A x - b^T x (T1 has
# T + 1 entries: T steps); the final distance to xs is differentiated w.r.t. lr and A
def metagd(A: f64[n, n], b: f64[n], x0: f64[n], lr: f64, xs: f64[n], T1: f64[T]) -> f64:
    x[t: T, i: n] = [t == 0] * x0[i] + [t >= 1] * (x[t - 1, i] - lr * (sum[j](A[i, j] * x[t - 1, j]) - b[i]))
    return 0.5 * sum[i]((x[T - 1, i] - xs[i]) ** 2)
""", sizes=dict(n=4, T=6), make=lambda rng, n, T: dict(
            A=np.eye(n) + 0.2 * _normal(rng, n, n), b=_normal(rng, n), x0=_normal(rng, n), lr=0.3,
            xs=_normal(rng, n), T1=np.zeros(T)),
        ref=metagd_ref, note="meta-gradient through an unrolled recurrence"),

    "mpc": dict(src="""
# model-predictive control: squashed controls, a linear rollout, a stage cost, a
# terminal quadratic form and a smoothness penalty on successive controls
def squash(V: f64[T, m], umax: f64) -> f64[T, m]:
    U[t, k] = umax * tanh(V[t, k])
    return U

def mpc(A: f64[n, n], B: f64[n, m], x0: f64[n], V: f64[T, m], Qd: f64[n], P: f64[n, n], rho: f64, umax: f64) -> f64:
    U = squash(V, umax)
    x[t: T + 1, i: n] = [t == 0] * x0[i] + [t >= 1] * (sum[j](A[i, j] * x[t - 1, j]) + sum[k](B[i, k] * U[t - 1, k]))
    stage = sum[t: T, i](Qd[i] * x[t, i] ** 2)
    term = sum[i, j](x[T, i] * P[i, j] * x[T, j])
    return stage + term + rho * sum[t: T - 1, k]((U[t + 1, k] - U[t, k]) ** 2)
""", sizes=dict(n=3, m=2, T=5), make=lambda rng, n, m, T: dict(
            A=np.eye(n) + 0.1 * _normal(rng, n, n), B=_normal(rng, n, m), x0=_normal(rng, n), V=_normal(rng, T, m),
            Qd=rng.random(n), P=np.eye(n) + 0.1 * np.ones((n, n)), rho=0.5, umax=2.0),
        ref=mpc_ref, note="ranges T + 1 and T - 1, a read at a size index"),

    "meshsmooth": dict(src="""
# one step of umbrella (Laplacian) smoothing over triangle faces, written as a
# scatter through comparisons with the face corners, fitted to targets
def meshsmooth(V: f64[n, 3], f: i64[F, 3], lam: f64, tgt: f64[n, 3]) -> f64:
    L[v, k] = sum[t]([f[t, 0] == v] * (V[f[t, 1], k] + V[f[t, 2], k] - 2.0 * V[v, k])
        + [f[t, 1] == v] * (V[f[t, 0], k] + V[f[t, 2], k] - 2.0 * V[v, k])
        + [f[t, 2] == v] * (V[f[t, 0], k] + V[f[t, 1], k] - 2.0 * V[v, k]))
    return sum[v, k]((V[v, k] + lam * L[v, k] - tgt[v, k]) ** 2) / n
""", sizes=dict(n=6, F=5), make=_mesh_inputs, ref=meshsmooth_ref, note="scatter written as comparisons with face corners"),

    "fem1d": dict(src="""
# a 1-D finite-element energy assembled from element connectivity
def fem1d(u: f64[n], X: f64[n], conn: i64[e, 2], k: f64[e], fl: f64[n]) -> f64:
    h[q] = X[conn[q, 1]] - X[conn[q, 0]]
    return 0.5 * sum[q](k[q] * (u[conn[q, 1]] - u[conn[q, 0]]) ** 2 / h[q]) - sum[i](fl[i] * u[i])
""", sizes=dict(n=6), make=lambda rng, n: _fem_inputs(rng, n), ref=fem1d_ref,
        note="gathers at literal columns of an i64 table"),

    "cloth": dict(src="""
# cloth: springs with rest lengths, gravity, and pinned vertices pulled to anchors
def cloth(P: f64[n, 3], sp: i64[m, 2], L0: f64[m], k: f64[m], mass: f64[n], pin: i64[q], anchor: f64[q, 3], kp: f64) -> f64:
    ln[e] = sqrt(sum[c]((P[sp[e, 0], c] - P[sp[e, 1], c]) ** 2) + 0.000000000001)
    return 0.5 * sum[e](k[e] * (ln[e] - L0[e]) ** 2) + 9.81 * sum[v](mass[v] * P[v, 2]) + kp * sum[a, c]((P[pin[a], c] - anchor[a, c]) ** 2)
""", sizes=dict(n=6, m=8, q=2), make=_cloth_inputs, ref=cloth_ref, note="literal dimension 3 and a literal column"),

    "hornschunck": dict(src="""
# Horn-Schunck optical flow energy: brightness constancy and a smoothness term
def grad2(w: f64[h, v]) -> f64:
    return sum[r, c]([r + 1 < h] * (w[r + 1, c] - w[r, c]) ** 2 + [c + 1 < v] * (w[r, c + 1] - w[r, c]) ** 2)

def hornschunck(u: f64[h, w], v: f64[h, w], Ix: f64[h, w], Iy: f64[h, w], It: f64[h, w], al: f64) -> f64:
    return sum[r, c]((Ix[r, c] * u[r, c] + Iy[r, c] * v[r, c] + It[r, c]) ** 2) + al ** 2 * (grad2(u) + grad2(v))
""", sizes=dict(h=4, w=5), make=lambda rng, h, w: dict(
            u=_normal(rng, h, w), v=_normal(rng, h, w), Ix=_normal(rng, h, w), Iy=_normal(rng, h, w),
            It=_normal(rng, h, w), al=0.7),
        ref=hornschunck_ref, note="a scalar function called twice in one expression"),

    "tvl1": dict(src="""
# TV-L1 denoising energy with a smoothed absolute value and isotropic TV
def tvl1(u: f64[h, w], f: f64[h, w], lam: f64, eps: f64) -> f64:
    dx[r, c] = [c + 1 < w] * (u[r, c + 1] - u[r, c])
    dy[r, c] = [r + 1 < h] * (u[r + 1, c] - u[r, c])
    return sum[r, c](sqrt((u[r, c] - f[r, c]) ** 2 + eps)) + lam * sum[r, c](sqrt(dx[r, c] ** 2 + dy[r, c] ** 2 + eps))
""", sizes=dict(h=4, w=5), make=lambda rng, h, w: dict(u=_normal(rng, h, w), f=_normal(rng, h, w), lam=0.4, eps=0.01),
        ref=tvl1_ref, note="smooth abs"),

    "bspline": dict(src="""
# a uniform cubic B-spline curve evaluated at q parameters: idx[s, c] is the c-th
# control point of the knot span of point s (an i64 table with 4 columns)
def basis(u: f64[q]) -> f64[q, 4]:
    B[s, c: 4] = ([c == 0] * (1.0 - u[s]) ** 3 + [c == 1] * (3.0 * u[s] ** 3 - 6.0 * u[s] ** 2 + 4.0)
        + [c == 2] * (-3.0 * u[s] ** 3 + 3.0 * u[s] ** 2 + 3.0 * u[s] + 1.0) + [c == 3] * u[s] ** 3) / 6.0
    return B

def bspline(Cp: f64[m, 2], idx: i64[q, 4], u: f64[q], tgt: f64[q, 2]) -> f64:
    B = basis(u)
    pt[s, k] = sum[c](B[s, c] * Cp[idx[s, c], k])
    return sum[s, k]((pt[s, k] - tgt[s, k]) ** 2)
""", sizes=dict(m=7, q=6), make=_bspline_inputs, ref=_bspline_ref_idx,
        note="a 4-column i64 gather table, return type with a literal dimension"),

    "transe": dict(src="""
# TransE margin loss over i64 triples with one corrupted tail per triple
def dist(E: f64[ne, d], R: f64[nr, d], h: i64[B], r: i64[B], t: i64[B]) -> f64[B]:
    o[s] = sqrt(sum[k]((E[h[s], k] + R[r[s], k] - E[t[s], k]) ** 2) + 0.000000001)
    return o

def transe(E: f64[ne, d], R: f64[nr, d], h: i64[B], r: i64[B], t: i64[B], tn: i64[B], margin: f64) -> f64:
    pos = dist(E, R, h, r, t)
    neg = dist(E, R, h, r, tn)
    return sum[s](max(margin + pos[s] - neg[s], 0.0)) / B
""", sizes=dict(ne=6, nr=2, d=3, B=5), make=_kg_inputs, ref=transe_ref, note="one function called twice with different labels"),

    "distmult": dict(src="""
# DistMult with 1-N scoring: a softmax over every entity for each (head, relation)
def distmult(E: f64[ne, d], R: f64[nr, d], h: i64[B], r: i64[B], t: i64[B], lam: f64) -> f64:
    S[s, e] = sum[k](E[h[s], k] * R[r[s], k] * E[e, k])
    return sum[s](logsumexp[e](S[s, e]) - S[s, t[s]]) / B + lam * sum[e, k](E[e, k] ** 2)
""", sizes=dict(ne=6, nr=2, d=3, B=5), make=_dm_inputs, ref=distmult_ref, note="a gathered trilinear score"),

    "mfbias": dict(src="""
# matrix factorisation with user and item biases over observed (user, item) pairs
def mfbias(P: f64[U, d], Q: f64[I, d], bu: f64[U], bi: f64[I], mu: f64, us: i64[N], it: i64[N], y: f64[N], lam: f64) -> f64:
    pred[s] = mu + bu[us[s]] + bi[it[s]] + sum[k](P[us[s], k] * Q[it[s], k])
    return sum[s]((pred[s] - y[s]) ** 2) + lam * (sum[a, k](P[a, k] ** 2) + sum[b, k](Q[b, k] ** 2) + sum[a](bu[a] ** 2) + sum[b](bi[b] ** 2))
""", sizes=dict(U=4, I=5, d=2, N=9), make=_mf_inputs, ref=mfbias_ref, note="gathers of biases and factors"),

    "bpr": dict(src="""
# BPR with K sampled negatives per (user, positive) pair
def bpr(P: f64[U, d], Q: f64[I, d], us: i64[B], pos: i64[B], neg: i64[B, K]) -> f64:
    xp[s] = sum[k](P[us[s], k] * Q[pos[s], k])
    xn[s, j] = sum[k](P[us[s], k] * Q[neg[s, j], k])
    return -sum[s, j](log(sigmoid(xp[s] - xn[s, j]))) / (B * K)
""", sizes=dict(U=4, I=6, d=3, B=5, K=3), make=_bpr_inputs, ref=bpr_ref, note="a 2-D i64 table of negatives"),

    "kgreach": dict(src="""
# a reduction of reductions: for each query the worst relation's best entity,
# plus a logsumexp over relations of the score of the given tail; b1 has one entry
def kgreach(E: f64[ne, d], W: f64[nr, d, d], h: i64[B], t: i64[B], b1: f64[1]) -> f64:
    S[s, r, e] = sum[a, c](E[h[s], a] * W[r, a, c] * E[e, c])
    return sum[s](min[r](max[e](S[s, r, e]))) + sum[s](logsumexp[r](S[s, r, t[s]] + b1[0]))
""", sizes=dict(ne=5, nr=3, d=2, B=4), make=lambda rng, ne, nr, d, B: dict(
            E=_normal(rng, ne, d), W=_normal(rng, nr, d, d), h=rng.integers(0, ne, B), t=rng.integers(0, ne, B),
            b1=_normal(rng, 1)),
        ref=kgreach_ref, note="min of max, a size-1 parameter"),
    "gate2": dict(src="""
# a gated recurrence whose gate is a scalar per step read from the previous state
# (a dot product inside the step), next to a state vector of two members
def gate2(x: f64[T, d], u: f64[d], W: f64[d, d]) -> f64:
    g[t: T] = sigmoid(sum[i](u[i] * x[t, i]) + [t >= 1] * sum[i](u[i] * s[t - 1, i]))
    s[t: T, i: d] = g[t] * x[t, i] + (1.0 - g[t]) * [t >= 1] * sum[j](W[i, j] * s[t - 1, j])
    return sum[t, i](s[t, i] ** 2)
""", sizes=dict(T=6, d=3), make=lambda rng, T, d: dict(x=_normal(rng, T, d), u=_normal(rng, d), W=0.5 * _normal(rng, d, d)),
        ref=gate2_ref, note="scalar and vector members of one group, a scalar step product"),

    "ar2": dict(src="""
# a second-order vector autoregression: each state reads the two before it through matrices
def ar2(A1: f64[d, d], A2: f64[d, d], x0: f64[d], x1: f64[d], obs: f64[T, d]) -> f64:
    x[t: T, i: d] = [t == 0] * x0[i] + [t == 1] * x1[i] + [t >= 2] * (sum[j](A1[i, j] * x[t - 1, j]) + sum[j](A2[i, j] * x[t - 2, j]))
    return sum[t, i]((x[t, i] - obs[t, i]) ** 2)
""", sizes=dict(d=3, T=7), make=lambda rng, d, T: dict(
            A1=0.4 * _normal(rng, d, d), A2=0.3 * _normal(rng, d, d), x0=_normal(rng, d), x1=_normal(rng, d),
            obs=_normal(rng, T, d)),
        ref=ar2_ref, note="two step products per step, t - 1 and t - 2"),

    "masked": dict(src="""
# the forward algorithm over the states a relation allows at each step
def masked(lA: f64[K, K], lE: f64[T, K], M: bool[T, K]) -> f64:
    a[t: T, j: K] = lE[t, j] + [t >= 1] * logsumexp[i | M[t - 1, i]](a[t - 1, i] + lA[i, j])
    return logsumexp[j | M[T - 1, j]](a[T - 1, j])
""", sizes=dict(T=6, K=4), make=_masked_inputs, ref=masked_ref,
        note="a relation as the filter of a logsumexp in a recurrence"),

    "macd": dict(src="""
# MACD-style signal: a recurrence function called three times, once on a difference of two calls
def ema(x: f64[T], g: f64) -> f64[T]:
    e[t] = [t == 0] * x[0] + [t >= 1] * (g * e[t - 1] + (1.0 - g) * x[t])
    return e

def macd(x: f64[T], g1: f64, g2: f64) -> f64:
    f = ema(x, g1)
    s = ema(x, g2)
    h[t] = f[t] - s[t]
    sig = ema(h, g1)
    return sum[t]((h[t] - sig[t]) ** 2)
""", sizes=dict(T=9), make=lambda rng, T: dict(x=_normal(rng, T), g1=0.6, g2=0.85),
        ref=macd_ref, note="three inlined recurrences"),

    "tsne": dict(src="""
# a t-SNE objective: Student-t affinities normalised by a logsumexp over the pairs i != j
def tsne(Y: f64[n, 2], P: f64[n, n]) -> f64:
    D[i, j] = sum[c]((Y[i, c] - Y[j, c]) ** 2)
    lZ = logsumexp[i, j | i != j](-log1p(D[i, j]))
    return sum[i, j]([i != j] * P[i, j] * (log1p(D[i, j]) + lZ))
""", sizes=dict(n=5), make=lambda rng, n: dict(Y=_normal(rng, n, 2), P=rng.random((n, n)) / n ** 2),
        ref=tsne_ref, note="a logsumexp over two indices with a filter"),

    "lif": dict(src="""
# a leaky integrator that resets where the previous state reached a threshold
def lif(I: f64[T, d], a: f64, th: f64) -> f64:
    v[t: T, i: d] = I[t, i] + [t >= 1] * a * [v[t - 1, i] < th] * v[t - 1, i]
    return sum[t, i](v[t, i] ** 2)
""", sizes=dict(T=7, d=3), make=lambda rng, T, d: dict(I=_normal(rng, T, d), a=0.8, th=0.9),
        ref=lif_ref, note="a value predicate on the previous step"),
}
