"""A fifth set of programs written from the documentation alone.

Domains the earlier sets (tests/newuser_programs.py ... tests/newuser4_programs.py)
leave out: optimisation written inside the program (unrolled ISTA with a soft
threshold by max/min, Newton steps, mirror descent on the simplex, heavy-ball
momentum), operations and finance (CVaR with a smooth plus, an (s, S) inventory,
Lindley's queue, Black-Scholes through erf), geometry and robotics (a planar arm's
forward kinematics, Procrustes with an orthogonality penalty, point-to-plane ICP
through correspondences, a 2-D pose graph, de Casteljau's Bezier, a soft distance
transform swept both ways), language and recommendation (monotonic attention, a
factorisation machine, a two-tower retrieval loss, a sampled softmax, hashed
bigrams by label arithmetic in a comparison), science (Gray-Scott with periodic
boundaries, Beer-Lambert attenuation, a Leslie population, mass-action kinetics by
RK2, a Schrodinger-like symplectic step, mean-field Ising, an SEIR epidemic) and
statistics (a zero-truncated Poisson, stick-breaking weights, a Kalman filter with
its RTS smoother, GARCH-in-mean, a regime-switching state space, a tobit model, a
1-D Wasserstein distance), plus feature combinations (a minimax value iteration,
reductions of reductions, tuple returns and size-1 and literal dimensions).  Each
entry has the shape of the other sets: the program text (the function to test is
named like the entry), the sizes of the test inputs, `make(rng, **sizes)`, an
independent NumPy version `ref(**inputs)` and a note.
tests/test_newuser5_programs.py checks them.
"""
import numpy as np
from scipy.special import erf as _erf
from scipy.special import expit as _sigmoid
from scipy.special import logsumexp as _lse

from newuser2_programs import _normal, _softplus


def _soft(v, t):
    return np.maximum(v - t, 0.0) + np.minimum(v + t, 0.0)


# ------------------------------------------------------------------ optimisation in the program
def ista_ref(A, b, lam, lr, xs, K1):
    x = np.zeros(A.shape[1])
    for _ in range(1, len(K1)):
        x = _soft(x - lr * A.T @ (A @ x - b), lr * lam)
    return float(0.5 * np.sum((x - xs) ** 2))


def newton_ref(a, tgt, K1):
    z = np.zeros_like(a)
    for _ in range(1, len(K1)):
        z = z - (np.exp(z) + z - a) / (np.exp(z) + 1.0)
    return float(np.sum((z - tgt) ** 2))


def mirror_ref(Q, c, eta, K1):
    n = len(c)
    lp = np.full(n, -np.log(n))
    for _ in range(1, len(K1)):
        g = Q @ np.exp(lp) + c
        s = lp - eta * g
        lp = s - _lse(s)
    p = np.exp(lp)
    return float(0.5 * p @ Q @ p + c @ p)


def heavyball_ref(A, b, lr, mu, K1):
    x = np.zeros(A.shape[1])
    v = np.zeros_like(x)
    for _ in range(1, len(K1)):
        v = mu * v - lr * A.T @ (A @ x - b)
        x = x + v
    return float(0.5 * np.sum((A @ x - b) ** 2))


def _psd(rng, n):
    M = _normal(rng, n, n)
    return M @ M.T / n + np.eye(n)


# ------------------------------------------------------------------ operations and finance
def cvar_ref(w, R, al, beta, tau):
    L = -R @ w
    return float(al + np.sum(tau * _softplus((L - al) / tau)) / ((1 - beta) * len(L)))


def inventory_ref(D, sl, Su, I0, h, pb, tau):
    Ip = I0
    tot = 0.0
    for t in range(len(D)):
        q = _sigmoid((sl - Ip) / tau) * (Su - Ip)
        I = Ip + q - D[t]
        tot += h * tau * _softplus(I / tau) + pb * tau * _softplus(-I / tau)
        Ip = I
    return float(tot / len(D))


def lindley_ref(s, a):
    w = np.zeros(len(s))
    for t in range(1, len(s)):
        w[t] = max(0.0, w[t - 1] + s[t - 1] - a[t])
    return float(np.mean(w))


def bs_ref(sig, S, K, tau, r, price):
    sd = sig * np.sqrt(tau)
    d1 = (np.log(S / K) + (r + 0.5 * sig ** 2) * tau) / sd
    N = lambda z: 0.5 * (1 + _erf(z / np.sqrt(2)))  # noqa: E731
    c = S * N(d1) - K * np.exp(-r * tau) * N(d1 - sd)
    return float(np.sum((c - price) ** 2))


# ------------------------------------------------------------------ geometry and robotics
def arm_ref(th, L, tx, ty):
    phi = np.cumsum(th, axis=0)
    px = np.sum(L[:, None] * np.cos(phi), axis=0)
    py = np.sum(L[:, None] * np.sin(phi), axis=0)
    return float(np.sum((px - tx) ** 2 + (py - ty) ** 2))


def procrustes_ref(X, Y, A, t, lam):
    Z = X @ A + t - Y
    G = A.T @ A - np.eye(len(t))
    return float(np.sum(Z ** 2) / len(X) + lam * np.sum(G ** 2))


def icp_ref(src, dst, nrm, cor, W, t):
    q = src + np.cross(W, src) + t
    r = np.sum(nrm[cor] * (q - dst[cor]), axis=1)
    return float(np.sum(np.sqrt(1.0 + r ** 2) - 1.0))


def posegraph_ref(P, src, dst, Z, wt):
    dx = P[dst, 0] - P[src, 0]
    dy = P[dst, 1] - P[src, 1]
    c, s = np.cos(P[src, 2]), np.sin(P[src, 2])
    ex = c * dx + s * dy - Z[:, 0]
    ey = -s * dx + c * dy - Z[:, 1]
    et = np.sin(P[dst, 2] - P[src, 2] - Z[:, 2])
    return float(np.sum(wt[0] * ex ** 2 + wt[1] * ey ** 2 + wt[2] * et ** 2) + np.sum(P[0] ** 2))


def _casteljau(C, u):
    b = np.repeat(C[:, None], len(u), axis=1)
    for _ in range(1, len(C)):
        b = (1 - u) * b[:-1] + u * b[1:]
    return b[0]


def bezier_ref(Cx, Cy, u, X, Y):
    return float(np.sum((_casteljau(Cx, u) - X) ** 2 + (_casteljau(Cy, u) - Y) ** 2))


def _softmin2(a, b, g):
    return -g * np.logaddexp(-a / g, -b / g)


def softdist_ref(C, g):
    h, w = C.shape
    F = np.zeros_like(C)
    B = np.zeros_like(C)
    for i in range(h):
        for j in range(w):
            if i == 0 and j == 0:
                F[i, j] = C[i, j]
            elif i == 0:
                F[i, j] = C[i, j] + F[i, j - 1]
            elif j == 0:
                F[i, j] = C[i, j] + F[i - 1, j]
            else:
                F[i, j] = C[i, j] + _softmin2(F[i - 1, j], F[i, j - 1], g)
    for i in reversed(range(h)):
        for j in reversed(range(w)):
            if i == h - 1 and j == w - 1:
                B[i, j] = C[i, j]
            elif i == h - 1:
                B[i, j] = C[i, j] + B[i, j + 1]
            elif j == w - 1:
                B[i, j] = C[i, j] + B[i + 1, j]
            else:
                B[i, j] = C[i, j] + _softmin2(B[i + 1, j], B[i, j + 1], g)
    return float(np.sum(_softmin2(F, B - C, g)) / (h * w))


# ------------------------------------------------------------------ language and recommendation
def monotonic_ref(E, tgt):
    p = _sigmoid(E)
    I, J = E.shape
    q = np.zeros((I, J))
    al = np.zeros((I, J))
    for i in range(I):
        for j in range(J):
            v = 0.0
            if j >= 1:
                v += (1 - p[i, j - 1]) * q[i, j - 1]
            if i == 0 and j == 0:
                v += 1.0
            if i >= 1:
                v += al[i - 1, j]
            q[i, j] = v
            al[i, j] = p[i, j] * v
    return float(np.sum((al - tgt) ** 2))


def fm_ref(X, y, w0, w, V):
    xv = X @ V
    x2v2 = (X ** 2) @ (V ** 2)
    z = w0 + X @ w + 0.5 * np.sum(xv ** 2 - x2v2, axis=1)
    return float(np.mean(_softplus(-y * z)))


def twotower_ref(Xu, Wu, Xi, Wi, tau):
    U, V = np.tanh(Xu @ Wu), np.tanh(Xi @ Wi)
    S = U @ V.T / tau
    return float(np.mean(_lse(S, axis=1) - np.diag(S)))


def sampsm_ref(H, E, y, neg, lq):
    zp = np.sum(H * E[y], axis=1) - lq[y]
    zn = np.einsum("sc,skc->sk", H, E[neg]) - lq[neg]
    Z = np.concatenate([zp[:, None], zn], axis=1)
    return float(np.mean(_lse(Z, axis=1) - zp))


def bigram_ref(a, E, w, tgt):
    n = len(a)
    V = E.shape[0]
    h = np.zeros((n, E.shape[1]))
    for i in range(n - 1):
        v = 4 * a[i] + a[i + 1]
        if 0 <= v < V:
            h[i] = E[v]
    return float(np.sum((h @ w - tgt) ** 2))


# ------------------------------------------------------------------ science
def _lap_periodic(u):
    return np.roll(u, 1, 0) + np.roll(u, -1, 0) + np.roll(u, 1, 1) + np.roll(u, -1, 1) - 4 * u


def grayscott_ref(u0, v0, F, k, Du, Dv, dt, T1, tgt):
    u, v = u0.copy(), v0.copy()
    for _ in range(1, len(T1)):
        u, v = (u + dt * (Du * _lap_periodic(u) - u * v ** 2 + F * (1 - u)),
                v + dt * (Dv * _lap_periodic(v) + u * v ** 2 - (F + k) * v))
    return float(np.sum((v - tgt) ** 2))


def beer_ref(eps, conc, dz, I0, meas):
    mu = eps @ conc
    Tr = np.exp(-np.sum(mu, axis=1) * dz)
    return float(np.sum((np.log(I0 * Tr) - np.log(meas)) ** 2))


def leslie_ref(f, s, n0, obs):
    N = n0.copy()
    tot = 0.0
    for t in range(len(obs)):
        if t >= 1:
            N = np.concatenate([[f @ N], s[:-1] * N[:-1]])
        tot += (np.log(np.sum(N)) - np.log(obs[t])) ** 2
    return float(tot)


def _rates(lk, y):
    return np.exp(lk) * np.array([y[0] * y[1], y[2], y[2]])


def kinetics_ref(lk, S, c0, dt, obs):
    y = c0.copy()
    tot = 0.0
    for t in range(len(obs)):
        if t >= 1:
            m = y + 0.5 * dt * S @ _rates(lk, y)
            y = y + dt * S @ _rates(lk, m)
        tot += np.sum((y - obs[t]) ** 2)
    return float(tot)


def _hdir(p, V):
    lp = np.zeros_like(p)
    lp[1:] += p[:-1]
    lp[:-1] += p[1:]
    return -0.5 * (lp - 2 * p) + V * p


def schrod_ref(pr0, pi0, V, dt, T1, lo):
    pr, pim = pr0.copy(), pi0.copy()
    for _ in range(1, len(T1)):
        pr = pr + dt * _hdir(pim, V)
        pim = pim - dt * _hdir(pr, V)
    return float(np.sum(lo * (pr ** 2 + pim ** 2)))


def meanfield_ref(J, hf, beta, dmp, K1):
    m = np.zeros(len(hf))
    for _ in range(1, len(K1)):
        m = (1 - dmp) * m + dmp * np.tanh(beta * (J @ m + hf))
    E = -0.5 * m @ J @ m - hf @ m
    pp, pm = (1 + m) / 2, (1 - m) / 2
    S = -np.sum(pp * np.log(pp) + pm * np.log(pm))
    return float(E - S / beta)


def seir_ref(lb, ls, lg, N0, I0, cases):
    b, sg, gm = np.exp(lb), np.exp(ls), np.exp(lg)
    S, E, I = N0 - I0, 0.0, I0
    tot = 0.0
    for t in range(len(cases)):
        if t >= 1:
            nw = b * S * I / N0
            S, E, I = S - nw, E + nw - sg * E, I + sg * E - gm * I
        lam = sg * E + 0.1
        tot += lam - cases[t] * np.log(lam)
    return float(tot)


# ------------------------------------------------------------------ statistics
def ztp_ref(X, w, y):
    eta = X @ w
    lam = np.exp(eta)
    return float(-np.sum(y * eta - lam - np.log1p(-np.exp(-lam))))


def stick_ref(a, mu, ls, x):
    v = _sigmoid(a)
    K = len(a)
    rem = np.concatenate([[1.0], np.cumprod(1 - v[:-1])])
    lw = np.log(rem) + np.where(np.arange(K) + 1 < K, np.log(v), 0.0)
    ll = _lse(lw[None, :] - 0.5 * ((x[:, None] - mu[None, :]) / np.exp(ls)[None, :]) ** 2
              - ls[None, :], axis=1)
    return float(-np.mean(ll))


def rts_ref(y, q, r, m0, P0, truth):
    T = len(y)
    mp, Pp, mf, Pf = (np.zeros(T) for _ in range(4))
    for t in range(T):
        mp[t] = m0 if t == 0 else mf[t - 1]
        Pp[t] = P0 if t == 0 else Pf[t - 1] + q
        K = Pp[t] / (Pp[t] + r)
        mf[t] = mp[t] + K * (y[t] - mp[t])
        Pf[t] = (1 - K) * Pp[t]
    ms = np.zeros(T)
    ms[T - 1] = mf[T - 1]
    for t in reversed(range(T - 1)):
        ms[t] = mf[t] + Pf[t] / Pp[t + 1] * (ms[t + 1] - mp[t + 1])
    return float(np.sum((ms - truth) ** 2))


def garchm_ref(y, mu, lam, wr, ar, br, h0):
    om, a = _softplus(wr), _sigmoid(ar)
    b = _sigmoid(br) * (1 - a)
    h = h0
    e = 0.0
    tot = 0.0
    for t in range(len(y)):
        if t >= 1:
            h = om + a * e ** 2 + b * h
        e = y[t] - mu - lam * np.sqrt(h)
        tot += np.log(h) + e ** 2 / h
    return float(0.5 * tot)


def regime_ref(A, u, reg, x0, obs):
    x = x0.copy()
    tot = 0.0
    for t in range(len(reg)):
        if t >= 1:
            x = A[reg[t]] @ x + u[t]
        tot += np.sum((x - obs[t]) ** 2)
    return float(tot)


def tobit_ref(X, w, ls, y, cen):
    z = (y - X @ w) / np.exp(ls)
    Phi = 0.5 * (1 + _erf(z / np.sqrt(2)))
    return float(-np.sum((1 - cen) * (-0.5 * z ** 2 - ls) + cen * np.log(Phi)))


def wass_ref(a, b):
    p = np.exp(a - _lse(a))
    q = np.exp(b - _lse(b))
    d = np.cumsum(p - q)
    return float(np.sum(np.sqrt(d ** 2 + 1e-4)))


# ------------------------------------------------------------------ feature combinations
def minimax_ref(R, P, gm, K1):
    V = np.zeros(R.shape[0])
    for _ in range(1, len(K1)):
        V = np.max(np.min(R, axis=2) + gm * np.einsum("saq,q->sa", P, V), axis=1)
    return float(np.sum(V))


def redred_ref(X, w):
    inner = np.max(np.einsum("ijc,c->ij", X, w), axis=1)
    return float(_lse(inner) + np.min(_lse(X[:, :, 0], axis=1)))


def zscore_ref(a, b, w):
    ma, va = a[0].mean(), a[0].var()
    mb, vb = b.mean(), b.var()
    return float(w[0] * va + w[1] * vb + w[2] * (ma - mb) ** 2)


def quat_ref(q, X, Y):
    u = q / np.sqrt(np.sum(q ** 2))
    w, x, y, z = u
    R = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                  [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                  [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])
    return float(np.sum((X @ R.T - Y) ** 2))


PROGRAMS = {
    # -------------------------------------------------------------- optimisation in the program
    "ista": dict(src="""
# unrolled ISTA for a lasso: x <- soft(x - lr A^T (A x - b), lr lam), the soft
# threshold written with max and min; K1 has one entry per iterate (x[0] = 0)
def ista(A: f64[m, n], b: f64[m], lam: f64, lr: f64, xs: f64[n], K1: f64[K]) -> f64:
    r[k: K, p: m] = sum[j](A[p, j] * x[k, j]) - b[p]
    v[k: K, j: n] = [k >= 1] * (x[k - 1, j] - lr * sum[p](A[p, j] * r[k - 1, p]))
    x[k: K, j: n] = max(v[k, j] - lr * lam, 0.0) + min(v[k, j] + lr * lam, 0.0)
    return 0.5 * sum[j]((x[K - 1, j] - xs[j]) ** 2)
""", sizes=dict(m=6, n=5, K=6), make=lambda rng, m, n, K: dict(
            A=_normal(rng, m, n) / 2, b=_normal(rng, m), lam=0.3, lr=0.4, xs=_normal(rng, n),
            K1=np.zeros(K)),
        ref=ista_ref, note="a group of three statements; max/min kinks inside the steps"),

    "newton": dict(src="""
# Newton's method on exp(z) + z = a for each entry, unrolled K - 1 times from 0
def newton(a: f64[n], tgt: f64[n], K1: f64[K]) -> f64:
    z[k: K, i: n] = [k >= 1] * (z[k - 1, i] - (exp(z[k - 1, i]) + z[k - 1, i] - a[i]) / (exp(z[k - 1, i]) + 1.0))
    return sum[i]((z[K - 1, i] - tgt[i]) ** 2)
""", sizes=dict(n=5, K=5), make=lambda rng, n, K: dict(a=rng.random(n) * 3, tgt=_normal(rng, n),
                                                        K1=np.zeros(K)),
        ref=newton_ref, note="a division by the step's own derivative inside a recurrence"),

    "mirror": dict(src="""
# exponentiated-gradient (mirror) descent on the simplex for 0.5 p^T Q p + c^T p,
# kept in log space; the normaliser is a logsumexp over the step's own entries
def mirror(Q: f64[n, n], c: f64[n], eta: f64, K1: f64[K]) -> f64:
    g[k: K, j: n] = sum[l](Q[j, l] * p[k, l]) + c[j]
    s[k: K, j: n] = [k >= 1] * (lp[k - 1, j] - eta * g[k - 1, j])
    lp[k: K, j: n] = s[k, j] - logsumexp[l](s[k, l])
    p[k: K, j: n] = exp(lp[k, j])
    return 0.5 * sum[j, l](p[K - 1, j] * Q[j, l] * p[K - 1, l]) + sum[j](c[j] * p[K - 1, j])
""", sizes=dict(n=5, K=5), make=lambda rng, n, K: dict(Q=_psd(rng, n), c=_normal(rng, n), eta=0.5,
                                                        K1=np.zeros(K)),
        ref=mirror_ref, note="a logsumexp of the step's own statement inside a four-statement group"),

    "heavyball": dict(src="""
# heavy-ball momentum on least squares, the gradient A^T (A x - b) written by hand
def heavyball(A: f64[m, n], b: f64[m], lr: f64, mu: f64, K1: f64[K]) -> f64:
    r[k: K, p: m] = sum[j](A[p, j] * x[k, j]) - b[p]
    v[k: K, j: n] = [k >= 1] * (mu * v[k - 1, j] - lr * sum[p](A[p, j] * r[k - 1, p]))
    x[k: K, j: n] = [k >= 1] * (x[k - 1, j] + v[k, j])
    return 0.5 * sum[p](r[K - 1, p] ** 2)
""", sizes=dict(m=6, n=4, K=6), make=lambda rng, m, n, K: dict(
            A=_normal(rng, m, n) / 2, b=_normal(rng, m), lr=0.3, mu=0.5, K1=np.zeros(K)),
        ref=heavyball_ref, note="two states and a residual in one group, offset-0 reads ordered"),

    # -------------------------------------------------------------- operations and finance
    "cvar": dict(src="""
# Rockafellar-Uryasev CVaR of a portfolio's losses over N scenarios, the plus smoothed
def cvar(w: f64[n], R: f64[N, n], al: f64, beta: f64, tau: f64) -> f64:
    L[s] = -sum[i](R[s, i] * w[i])
    return al + sum[s](tau * softplus((L[s] - al) / tau)) / ((1.0 - beta) * N)
""", sizes=dict(n=4, N=9), make=lambda rng, n, N: dict(
            w=rng.random(n), R=_normal(rng, N, n), al=0.2, beta=0.8, tau=0.1),
        ref=cvar_ref, note="a size as a value inside a product divisor"),

    "inventory": dict(src="""
# an (s, S) inventory policy with a smooth order decision; holding and backlog
# costs by smooth plus parts
def inventory(D: f64[T], sl: f64, Su: f64, I0: f64, h: f64, pb: f64, tau: f64) -> f64:
    q[t: T] = sigmoid((sl - Ip[t]) / tau) * (Su - Ip[t])
    Ip[t: T] = [t == 0] * I0 + [t >= 1] * I[t - 1]
    I[t: T] = Ip[t] + q[t] - D[t]
    return sum[t](h * tau * softplus(I[t] / tau) + pb * tau * softplus(-I[t] / tau)) / T
""", sizes=dict(T=10), make=lambda rng, T: dict(
            D=rng.random(T) * 3, sl=2.0, Su=6.0, I0=4.0, h=0.5, pb=2.0, tau=0.5),
        ref=inventory_ref, note="statements read before their definition, in any order"),

    "lindley": dict(src="""
# waiting times of a single-server queue by Lindley's recurrence
def lindley(s: f64[T], a: f64[T]) -> f64:
    w[t] = [t >= 1] * max(0.0, w[t - 1] + s[t - 1] - a[t])
    return sum[t](w[t]) / T
""", sizes=dict(T=12), make=lambda rng, T: dict(s=rng.random(T) + 0.3, a=rng.random(T) + 0.4),
        ref=lindley_ref, note="max with a constant first argument inside a scalar recurrence"),

    "bs": dict(src="""
# calibrating per-option volatilities to call prices by Black-Scholes, N(z) by erf
def bs(sig: f64[n], S: f64[n], K: f64[n], tau: f64[n], r: f64, price: f64[n]) -> f64:
    sd[i] = sig[i] * sqrt(tau[i])
    d1[i] = (log(S[i] / K[i]) + (r + 0.5 * sig[i] ** 2) * tau[i]) / sd[i]
    c[i] = S[i] * 0.5 * (1.0 + erf(d1[i] / sqrt(2.0))) - K[i] * exp(-r * tau[i]) * 0.5 * (1.0 + erf((d1[i] - sd[i]) / sqrt(2.0)))
    return sum[i]((c[i] - price[i]) ** 2)
""", sizes=dict(n=6), make=lambda rng, n: dict(
            sig=0.1 + 0.3 * rng.random(n), S=90 + 20 * rng.random(n), K=np.full(n, 100.0),
            tau=0.2 + rng.random(n), r=0.02, price=5 + 5 * rng.random(n)),
        ref=bs_ref, note="erf, log of a quotient, a constant sqrt"),

    # -------------------------------------------------------------- geometry and robotics
    "arm": dict(src="""
# forward kinematics of B planar arms of K links: cumulative joint angles, then the
# tip as a running sum of link vectors; squared distance to targets
def arm(th: f64[K, B], L: f64[K], tx: f64[B], ty: f64[B]) -> f64:
    phi[k: K, b: B] = th[k, b] + [k >= 1] * phi[k - 1, b]
    px[k: K, b: B] = L[k] * cos(phi[k, b]) + [k >= 1] * px[k - 1, b]
    py[k: K, b: B] = L[k] * sin(phi[k, b]) + [k >= 1] * py[k - 1, b]
    return sum[b]((px[K - 1, b] - tx[b]) ** 2 + (py[K - 1, b] - ty[b]) ** 2)
""", sizes=dict(K=4, B=3), make=lambda rng, K, B: dict(
            th=_normal(rng, K, B), L=rng.random(K) + 0.5, tx=_normal(rng, B), ty=_normal(rng, B)),
        ref=arm_ref, note="three scans over the links, cos and sin of a scan"),

    "procrustes": dict(src="""
# an affine alignment with an orthogonality penalty on A
def procrustes(X: f64[N, d], Y: f64[N, d], A: f64[d, d], t: f64[d], lam: f64) -> f64:
    Z[p, c] = sum[e](X[p, e] * A[e, c]) + t[c] - Y[p, c]
    G[a, c] = sum[e](A[e, a] * A[e, c]) - [a == c]
    return sum[p, c](Z[p, c] ** 2) / N + lam * sum[a, c](G[a, c] ** 2)
""", sizes=dict(N=7, d=3), make=lambda rng, N, d: dict(
            X=_normal(rng, N, d), Y=_normal(rng, N, d), A=np.eye(d) + 0.1 * _normal(rng, d, d),
            t=_normal(rng, d), lam=0.5),
        ref=procrustes_ref, note="A^T A minus the identity bracket"),

    "icp": dict(src="""
# point-to-plane ICP residuals through correspondences, a small-angle rotation
# written as a cross product with integer-literal dimensions, a pseudo-Huber loss
def icp(src: f64[N, 3], dst: f64[M, 3], nrm: f64[M, 3], cor: i64[N], W: f64[3], t: f64[3]) -> f64:
    q[p, c] = src[p, c] + t[c] + [c == 0] * (W[1] * src[p, 2] - W[2] * src[p, 1]) + [c == 1] * (W[2] * src[p, 0] - W[0] * src[p, 2]) + [c == 2] * (W[0] * src[p, 1] - W[1] * src[p, 0])
    r[p] = sum[c](nrm[cor[p], c] * (q[p, c] - dst[cor[p], c]))
    return sum[p](sqrt(1.0 + r[p] ** 2) - 1.0)
""", sizes=dict(N=6, M=5), make=lambda rng, N, M: dict(
            src=_normal(rng, N, 3), dst=_normal(rng, M, 3), nrm=_normal(rng, M, 3),
            cor=rng.integers(0, M, N), W=0.1 * _normal(rng, 3), t=0.1 * _normal(rng, 3)),
        ref=icp_ref, note="gathers of rows through i64 correspondences, constant columns"),

    "posegraph": dict(src="""
# a 2-D pose graph: relative pose residuals in the frame of the edge's source,
# gathered through an edge list, and a prior on the first pose
def posegraph(P: f64[n, 3], src: i64[E], dst: i64[E], Z: f64[E, 3], wt: f64[3]) -> f64:
    dx[e] = P[dst[e], 0] - P[src[e], 0]
    dy[e] = P[dst[e], 1] - P[src[e], 1]
    c[e] = cos(P[src[e], 2])
    s[e] = sin(P[src[e], 2])
    ex[e] = c[e] * dx[e] + s[e] * dy[e] - Z[e, 0]
    ey[e] = -s[e] * dx[e] + c[e] * dy[e] - Z[e, 1]
    et[e] = sin(P[dst[e], 2] - P[src[e], 2] - Z[e, 2])
    return sum[e](wt[0] * ex[e] ** 2 + wt[1] * ey[e] ** 2 + wt[2] * et[e] ** 2) + sum[j](P[0, j] ** 2)
""", sizes=dict(n=5, E=7), make=lambda rng, n, E: dict(
            P=_normal(rng, n, 3), src=rng.integers(0, n, E), dst=rng.integers(0, n, E),
            Z=_normal(rng, E, 3), wt=np.array([1.0, 1.0, 0.5])),
        ref=posegraph_ref, note="gathers at constant columns, sin of a difference of gathers"),

    "bezier": dict(src="""
# fitting a Bezier curve's control points by de Casteljau's algorithm, a recurrence
# over the levels l (entries with i + l >= n are never read)
def bezier(Cx: f64[n], Cy: f64[n], u: f64[m], X: f64[m], Y: f64[m]) -> f64:
    bx[l: n, i: n, s: m] = [l == 0] * Cx[i] + [l >= 1] * [i + 1 < n] * ((1.0 - u[s]) * bx[l - 1, i, s] + u[s] * bx[l - 1, i + 1, s])
    by[l: n, i: n, s: m] = [l == 0] * Cy[i] + [l >= 1] * [i + 1 < n] * ((1.0 - u[s]) * by[l - 1, i, s] + u[s] * by[l - 1, i + 1, s])
    return sum[s]((bx[n - 1, 0, s] - X[s]) ** 2 + (by[n - 1, 0, s] - Y[s]) ** 2)
""", sizes=dict(n=4, m=6), make=lambda rng, n, m: dict(
            Cx=_normal(rng, n), Cy=_normal(rng, n), u=np.sort(rng.random(m)), X=_normal(rng, m),
            Y=_normal(rng, m)),
        ref=bezier_ref, note="a recurrence whose step reads a shifted free index"),

    "softdist": dict(src="""
# a soft distance transform: soft-minimal path costs swept from the top-left and
# from the bottom-right corner (two recurrences running opposite ways), combined
def softdist(C: f64[h, w], g: f64) -> f64:
    F[i: h, j: w] = C[i, j] + [i >= 1] * [j >= 1] * -g * logsumexp[c: 2](-([c == 0] * F[i - 1, j] + [c == 1] * F[i, j - 1]) / g) + [i == 0] * [j >= 1] * F[i, j - 1] + [i >= 1] * [j == 0] * F[i - 1, j]
    B[i: h, j: w] = C[i, j] + [i + 1 < h] * [j + 1 < w] * -g * logsumexp[c: 2](-([c == 0] * B[i + 1, j] + [c == 1] * B[i, j + 1]) / g) + [i == h - 1] * [j + 1 < w] * B[i, j + 1] + [i + 1 < h] * [j == w - 1] * B[i + 1, j]
    return sum[i, j](-g * logsumexp[c: 2](-([c == 0] * F[i, j] + [c == 1] * (B[i, j] - C[i, j])) / g)) / (h * w)
""", sizes=dict(h=4, w=5), make=lambda rng, h, w: dict(C=rng.random((h, w)) + 0.5, g=0.3),
        ref=softdist_ref, note="two two-index recurrences, one forward and one backward"),

    # -------------------------------------------------------------- language and recommendation
    "monotonic": dict(src="""
# the expected alignment of hard monotonic attention (Raffel et al.), by its
# recurrence over output steps i and input positions j: q = alpha / p
def monotonic(E: f64[I, J], tgt: f64[I, J]) -> f64:
    p[i, j] = sigmoid(E[i, j])
    q[i: I, j: J] = [j >= 1] * (1.0 - p[i, j - 1]) * q[i, j - 1] + [i == 0] * [j == 0] + [i >= 1] * al[i - 1, j]
    al[i: I, j: J] = p[i, j] * q[i, j]
    return sum[i, j]((al[i, j] - tgt[i, j]) ** 2)
""", sizes=dict(I=4, J=5), make=lambda rng, I, J: dict(E=_normal(rng, I, J), tgt=rng.random((I, J)) / 2),
        ref=monotonic_ref, note="a two-index group, each read stepping back along one index"),

    "fm": dict(src="""
# a factorisation machine with the O(k d) identity for the pairwise term, logistic loss
def fm(X: f64[N, d], y: f64[N], w0: f64, w: f64[d], V: f64[d, k]) -> f64:
    xv[s, f] = sum[j](X[s, j] * V[j, f])
    x2v2[s, f] = sum[j](X[s, j] ** 2 * V[j, f] ** 2)
    z[s] = w0 + sum[j](w[j] * X[s, j]) + 0.5 * sum[f](xv[s, f] ** 2 - x2v2[s, f])
    return sum[s](softplus(-y[s] * z[s])) / N
""", sizes=dict(N=8, d=5, k=3), make=lambda rng, N, d, k: dict(
            X=_normal(rng, N, d), y=np.sign(_normal(rng, N)), w0=0.1, w=_normal(rng, d) / 2,
            V=_normal(rng, d, k) / 2),
        ref=fm_ref, note="a contraction of squares beside a squared contraction"),

    "twotower": dict(src="""
# a two-tower retrieval model with an in-batch softmax; one tower function called
# for both sides with different input widths
def tower(X: f64[b, d], W: f64[d, e]) -> f64[b, e]:
    H[s, c] = tanh(sum[j](X[s, j] * W[j, c]))
    return H

def twotower(Xu: f64[b, du], Wu: f64[du, e], Xi: f64[b, di], Wi: f64[di, e], tau: f64) -> f64:
    U = tower(Xu, Wu)
    V = tower(Xi, Wi)
    S[s, r] = sum[c](U[s, c] * V[r, c]) / tau
    return sum[s](logsumexp[r](S[s, r]) - S[s, s]) / b
""", sizes=dict(b=5, du=4, e=3, di=6), make=lambda rng, b, du, e, di: dict(
            Xu=_normal(rng, b, du), Wu=_normal(rng, du, e) / 2, Xi=_normal(rng, b, di),
            Wi=_normal(rng, di, e) / 2, tau=0.5),
        ref=twotower_ref, note="one function called twice with different shapes, a diagonal read"),

    "sampsm": dict(src="""
# a sampled softmax: the positive and K sampled negatives gathered through i64
# tables, corrected by the log sampling probabilities
def sampsm(H: f64[B, d], E: f64[V, d], y: i64[B], neg: i64[B, K], lq: f64[V]) -> f64:
    zp[s] = sum[c](H[s, c] * E[y[s], c]) - lq[y[s]]
    zn[s, k] = sum[c](H[s, c] * E[neg[s, k], c]) - lq[neg[s, k]]
    return sum[s](logsumexp[k: K + 1]([k == 0] * zp[s] + [k >= 1] * zn[s, k - 1]) - zp[s]) / B
""", sizes=dict(B=4, d=3, V=7, K=3), make=lambda rng, B, d, V, K: dict(
            H=_normal(rng, B, d), E=_normal(rng, V, d), y=rng.integers(0, V, B),
            neg=rng.integers(0, V, (B, K)), lq=np.log(rng.dirichlet(np.ones(V)))),
        ref=sampsm_ref, note="a logsumexp over a derived range K + 1 mixing two statements"),

    "bigram": dict(src="""
# hashed character bigrams of an alphabet of 4: the bigram's row is picked by a
# comparison with label arithmetic (an out-of-table id picks nothing)
def bigram(a: i64[n], E: f64[V, d], w: f64[d], tgt: f64[n]) -> f64:
    h[i: n, c: d] = [i + 1 < n] * sum[v]([v == 4 * a[i] + a[i + 1]] * E[v, c])
    return sum[i]((sum[c](w[c] * h[i, c]) - tgt[i]) ** 2)
""", sizes=dict(n=7, V=12, d=3), make=lambda rng, n, V, d: dict(
            a=rng.integers(0, 4, n), E=_normal(rng, V, d), w=_normal(rng, d), tgt=_normal(rng, n)),
        ref=bigram_ref, note="label arithmetic over two labels in a comparison, some ids beyond V"),

    # -------------------------------------------------------------- science
    "grayscott": dict(src="""
# Gray-Scott reaction-diffusion, two coupled fields on a torus: periodic neighbours
# by brackets, explicit Euler steps; T1 has one entry per state
def grayscott(u0: f64[h, w], v0: f64[h, w], F: f64, k: f64, Du: f64, Dv: f64, dt: f64, T1: f64[T], tgt: f64[h, w]) -> f64:
    Lu[t: T, i: h, j: w] = [i >= 1] * u[t, i - 1, j] + [i == 0] * u[t, h - 1, j] + [i + 1 < h] * u[t, i + 1, j] + [i == h - 1] * u[t, 0, j] + [j >= 1] * u[t, i, j - 1] + [j == 0] * u[t, i, w - 1] + [j + 1 < w] * u[t, i, j + 1] + [j == w - 1] * u[t, i, 0] - 4.0 * u[t, i, j]
    Lv[t: T, i: h, j: w] = [i >= 1] * v[t, i - 1, j] + [i == 0] * v[t, h - 1, j] + [i + 1 < h] * v[t, i + 1, j] + [i == h - 1] * v[t, 0, j] + [j >= 1] * v[t, i, j - 1] + [j == 0] * v[t, i, w - 1] + [j + 1 < w] * v[t, i, j + 1] + [j == w - 1] * v[t, i, 0] - 4.0 * v[t, i, j]
    u[t: T, i: h, j: w] = [t == 0] * u0[i, j] + [t >= 1] * (u[t - 1, i, j] + dt * (Du * Lu[t - 1, i, j] - u[t - 1, i, j] * v[t - 1, i, j] ** 2 + F * (1.0 - u[t - 1, i, j])))
    v[t: T, i: h, j: w] = [t == 0] * v0[i, j] + [t >= 1] * (v[t - 1, i, j] + dt * (Dv * Lv[t - 1, i, j] + u[t - 1, i, j] * v[t - 1, i, j] ** 2 - (F + k) * v[t - 1, i, j]))
    return sum[i, j]((v[T - 1, i, j] - tgt[i, j]) ** 2)
""", sizes=dict(h=4, w=5, T=4), make=lambda rng, h, w, T: dict(
            u0=1.0 - 0.2 * rng.random((h, w)), v0=0.3 * rng.random((h, w)), F=0.04, k=0.06,
            Du=0.2, Dv=0.1, dt=0.5, T1=np.zeros(T), tgt=0.3 * rng.random((h, w))),
        ref=grayscott_ref, note="periodic boundaries by brackets in a four-statement group"),

    "beer": dict(src="""
# Beer-Lambert attenuation through Z slabs at L wavelengths: the transmission is a
# running product along the depth (the second index); fitting concentrations
def beer(eps: f64[L, C], conc: f64[C, Z], dz: f64, I0: f64[L], meas: f64[L]) -> f64:
    mu[l, z] = sum[c](eps[l, c] * conc[c, z])
    Tr[l: L, z: Z] = exp(-mu[l, z] * dz) * ([z == 0] + [z >= 1] * Tr[l, z - 1])
    return sum[l]((log(I0[l] * Tr[l, Z - 1]) - log(meas[l])) ** 2)
""", sizes=dict(L=4, C=2, Z=6), make=lambda rng, L, C, Z: dict(
            eps=rng.random((L, C)), conc=rng.random((C, Z)), dz=0.1, I0=rng.random(L) + 1,
            meas=rng.random(L) + 0.5),
        ref=beer_ref, note="a running product along the second index"),

    "leslie": dict(src="""
# an age-structured population by Leslie matrix steps (fecundities into age 0,
# survival into the next age); log totals fitted to counts
def leslie(f: f64[A], s: f64[A], n0: f64[A], obs: f64[T]) -> f64:
    N[t: T, a: A] = [t == 0] * n0[a] + [t >= 1] * ([a == 0] * sum[b](f[b] * N[t - 1, b]) + [a >= 1] * s[a - 1] * N[t - 1, a - 1])
    return sum[t]((log(sum[a](N[t, a])) - log(obs[t])) ** 2)
""", sizes=dict(A=4, T=6), make=lambda rng, A, T: dict(
            f=rng.random(A), s=0.5 + 0.4 * rng.random(A), n0=rng.random(A) + 0.5,
            obs=rng.random(T) + 1.0),
        ref=leslie_ref, note="a step that sums the previous state and reads it shifted"),

    "kinetics": dict(src="""
# mass-action kinetics A + B <-> C, C -> D (stoichiometry S) by the midpoint rule;
# rates from log constants, states fitted to observations
def kinetics(lk: f64[3], S: f64[4, 3], c0: f64[4], dt: f64, obs: f64[T, 4]) -> f64:
    r[t: T, q: 3] = exp(lk[q]) * ([q == 0] * y[t, 0] * y[t, 1] + [q >= 1] * y[t, 2])
    m[t: T, s: 4] = y[t, s] + 0.5 * dt * sum[q](S[s, q] * r[t, q])
    rm[t: T, q: 3] = exp(lk[q]) * ([q == 0] * m[t, 0] * m[t, 1] + [q >= 1] * m[t, 2])
    y[t: T, s: 4] = [t == 0] * c0[s] + [t >= 1] * (y[t - 1, s] + dt * sum[q](S[s, q] * rm[t - 1, q]))
    return sum[t, s]((y[t, s] - obs[t, s]) ** 2)
""", sizes=dict(T=5), make=lambda rng, T: dict(
            lk=np.log(np.array([0.8, 0.3, 0.4])),
            S=np.array([[-1.0, 1.0, 0.0], [-1.0, 1.0, 0.0], [1.0, -1.0, -1.0], [0.0, 0.0, 1.0]]),
            c0=np.array([1.0, 0.8, 0.1, 0.0]), dt=0.2, obs=rng.random((T, 4))),
        ref=kinetics_ref, note="RK2 stages as statements of one group, literal dimensions"),

    "schrod": dict(src="""
# a Schrodinger-like equation i psi' = H psi on a line with walls, real and imaginary
# parts stepped symplectically (the imaginary part reads the new real part)
def schrod(pr0: f64[n], pi0: f64[n], V: f64[n], dt: f64, T1: f64[T], lo: f64[n]) -> f64:
    pr[t: T, i: n] = [t == 0] * pr0[i] + [t >= 1] * (pr[t - 1, i] + dt * Hi[t - 1, i])
    Hr[t: T, i: n] = -0.5 * ([i >= 1] * pr[t, i - 1] + [i + 1 < n] * pr[t, i + 1] - 2.0 * pr[t, i]) + V[i] * pr[t, i]
    pim[t: T, i: n] = [t == 0] * pi0[i] + [t >= 1] * (pim[t - 1, i] - dt * Hr[t, i])
    Hi[t: T, i: n] = -0.5 * ([i >= 1] * pim[t, i - 1] + [i + 1 < n] * pim[t, i + 1] - 2.0 * pim[t, i]) + V[i] * pim[t, i]
    return sum[i](lo[i] * (pr[T - 1, i] ** 2 + pim[T - 1, i] ** 2))
""", sizes=dict(n=6, T=5), make=lambda rng, n, T: dict(
            pr0=_normal(rng, n), pi0=_normal(rng, n), V=rng.random(n), dt=0.1, T1=np.zeros(T),
            lo=(np.arange(n) < n // 2).astype(float)),
        ref=schrod_ref, note="an offset-0 chain pr -> Hr -> pim inside a step"),

    "meanfield": dict(src="""
# damped mean-field iterations of an Ising model, then its variational free energy
def meanfield(J: f64[n, n], hf: f64[n], beta: f64, dmp: f64, K1: f64[K]) -> f64:
    m[k: K, i: n] = [k >= 1] * ((1.0 - dmp) * m[k - 1, i] + dmp * tanh(beta * (sum[j](J[i, j] * m[k - 1, j]) + hf[i])))
    mm[i: n] = m[K - 1, i]
    pp[i: n] = 0.5 * (1.0 + mm[i])
    pm[i: n] = 0.5 * (1.0 - mm[i])
    E = -0.5 * sum[i, j](J[i, j] * mm[i] * mm[j]) - sum[i](hf[i] * mm[i])
    return E + sum[i](pp[i] * log(pp[i]) + pm[i] * log(pm[i])) / beta
""", sizes=dict(n=5, K=5), make=lambda rng, n, K: dict(
            J=(lambda M: (M + M.T) / 4)(_normal(rng, n, n)), hf=_normal(rng, n) / 2, beta=1.2,
            dmp=0.6, K1=np.zeros(K)),
        ref=meanfield_ref, note="a last step named by a statement, entropies of it"),

    "seir": dict(src="""
# an SEIR epidemic by Euler steps, Poisson likelihood of the daily onsets
def seir(lb: f64, ls: f64, lg: f64, N0: f64, I0: f64, cases: f64[T]) -> f64:
    b = exp(lb)
    sg = exp(ls)
    gm = exp(lg)
    S[t: T] = [t == 0] * (N0 - I0) + [t >= 1] * (S[t - 1] - nw[t - 1])
    E[t: T] = [t >= 1] * (E[t - 1] + nw[t - 1] - sg * E[t - 1])
    I[t: T] = [t == 0] * I0 + [t >= 1] * (I[t - 1] + sg * E[t - 1] - gm * I[t - 1])
    nw[t: T] = b * S[t] * I[t] / N0
    lam[t: T] = sg * E[t] + 0.1
    return sum[t](lam[t] - cases[t] * log(lam[t]))
""", sizes=dict(T=10), make=lambda rng, T: dict(
            lb=np.log(0.6), ls=np.log(0.3), lg=np.log(0.2), N0=1000.0, I0=5.0,
            cases=rng.integers(0, 20, T).astype(float)),
        ref=seir_ref, note="four scalar states, scalars computed before the group"),

    # -------------------------------------------------------------- statistics
    "ztp": dict(src="""
# zero-truncated Poisson regression (the log y! term is a constant and left out)
def ztp(X: f64[N, d], w: f64[d], y: f64[N]) -> f64:
    eta[s] = sum[j](X[s, j] * w[j])
    return -sum[s](y[s] * eta[s] - exp(eta[s]) - log1p(-exp(-exp(eta[s]))))
""", sizes=dict(N=8, d=3), make=lambda rng, N, d: dict(
            X=_normal(rng, N, d) / 2, w=_normal(rng, d) / 2, y=rng.integers(1, 6, N).astype(float)),
        ref=ztp_ref, note="log1p of minus an exponential of an exponential"),

    "stick": dict(src="""
# a truncated stick-breaking mixture of K Gaussians: weights from the running product
# of (1 - v) (the last stick takes the rest)
def stick(a: f64[K], mu: f64[K], ls: f64[K], x: f64[N]) -> f64:
    v[k] = sigmoid(a[k])
    rem[k: K] = [k == 0] + [k >= 1] * rem[k - 1] * (1.0 - v[k - 1])
    lw[k: K] = [k + 1 < K] * log(v[k]) + log(rem[k])
    ll[s] = logsumexp[k](lw[k] - 0.5 * ((x[s] - mu[k]) / exp(ls[k])) ** 2 - ls[k])
    return -sum[s](ll[s]) / N
""", sizes=dict(K=4, N=9), make=lambda rng, K, N: dict(
            a=_normal(rng, K), mu=_normal(rng, K) * 2, ls=_normal(rng, K) / 3, x=_normal(rng, N) * 2),
        ref=stick_ref, note="a running product, then a logsumexp over its logarithm"),

    "rts": dict(src="""
# a local-level Kalman filter forward and its Rauch-Tung-Striebel smoother backward:
# two recurrences running opposite ways in one program
def rts(y: f64[T], q: f64, r: f64, m0: f64, P0: f64, truth: f64[T]) -> f64:
    Pp[t: T] = [t == 0] * P0 + [t >= 1] * (Pf[t - 1] + q)
    mp[t: T] = [t == 0] * m0 + [t >= 1] * mf[t - 1]
    Kg[t: T] = Pp[t] / (Pp[t] + r)
    mf[t: T] = mp[t] + Kg[t] * (y[t] - mp[t])
    Pf[t: T] = (1.0 - Kg[t]) * Pp[t]
    G[t: T] = [t + 1 < T] * Pf[t] / Pp[t + 1]
    ms[t: T] = [t == T - 1] * mf[T - 1] + [t + 1 < T] * (mf[t] + G[t] * (ms[t + 1] - mp[t + 1]))
    return sum[t]((ms[t] - truth[t]) ** 2)
""", sizes=dict(T=8), make=lambda rng, T: dict(
            y=np.cumsum(_normal(rng, T)), q=0.5, r=1.0, m0=0.0, P0=2.0, truth=np.cumsum(_normal(rng, T))),
        ref=rts_ref, note="a forward group, then a backward one reading it"),

    "garchm": dict(src="""
# GARCH(1, 1)-in-mean: the mean depends on the same step's variance
def garchm(y: f64[T], mu: f64, lam: f64, wr: f64, ar: f64, br: f64, h0: f64) -> f64:
    om = softplus(wr)
    a = sigmoid(ar)
    b = sigmoid(br) * (1.0 - a)
    h[t: T] = [t == 0] * h0 + [t >= 1] * (om + a * e[t - 1] ** 2 + b * h[t - 1])
    e[t: T] = y[t] - mu - lam * sqrt(h[t])
    return 0.5 * sum[t](log(h[t]) + e[t] ** 2 / h[t])
""", sizes=dict(T=10), make=lambda rng, T: dict(
            y=_normal(rng, T), mu=0.1, lam=0.2, wr=-1.0, ar=-1.0, br=1.0, h0=1.0),
        ref=garchm_ref, note="a group whose members read each other at offsets 0 and 1"),

    "regime": dict(src="""
# a linear state space whose transition matrix is gathered by the step's regime id
def regime(A: f64[R, d, d], u: f64[T, d], reg: i64[T], x0: f64[d], obs: f64[T, d]) -> f64:
    x[t: T, i: d] = [t == 0] * x0[i] + [t >= 1] * (sum[j](A[reg[t], i, j] * x[t - 1, j]) + u[t, i])
    return sum[t, i]((x[t, i] - obs[t, i]) ** 2)
""", sizes=dict(R=3, d=3, T=6), make=lambda rng, R, d, T: dict(
            A=_normal(rng, R, d, d) / 2, u=_normal(rng, T, d), reg=rng.integers(0, R, T),
            x0=_normal(rng, d), obs=_normal(rng, T, d)),
        ref=regime_ref, note="a gathered matrix inside a recurrence step"),

    "tobit": dict(src="""
# a tobit regression, left-censored at 0: the normal density where observed, the
# normal CDF (by erf) where censored
def tobit(X: f64[N, d], w: f64[d], ls: f64, y: f64[N], cen: f64[N]) -> f64:
    z[s] = (y[s] - sum[j](X[s, j] * w[j])) / exp(ls)
    return -sum[s]((1.0 - cen[s]) * (-0.5 * z[s] ** 2 - ls) + cen[s] * log(0.5 * (1.0 + erf(z[s] / sqrt(2.0)))))
""", sizes=dict(N=9, d=3), make=lambda rng, N, d: (lambda y: dict(
            X=_normal(rng, N, d), w=_normal(rng, d) / 2, ls=-0.2, y=np.maximum(y, 0.0),
            cen=(y <= 0).astype(float)))(_normal(rng, N) + 0.3),
        ref=tobit_ref, note="erf inside a log, weighted by a censoring indicator"),

    "wass": dict(src="""
# the 1-D Wasserstein distance of two softmax histograms on one grid: the CDFs by a
# running sum, a smooth absolute value
def wass(a: f64[n], b: f64[n]) -> f64:
    p[i] = exp(a[i] - logsumexp[j](a[j]))
    q[i] = exp(b[i] - logsumexp[j](b[j]))
    d[i: n] = p[i] - q[i] + [i >= 1] * d[i - 1]
    return sum[i](sqrt(d[i] ** 2 + 0.0001))
""", sizes=dict(n=7), make=lambda rng, n: dict(a=_normal(rng, n), b=_normal(rng, n)),
        ref=wass_ref, note="a scan of softmaxes"),

    # -------------------------------------------------------------- feature combinations
    "minimax": dict(src="""
# value iteration of a zero-sum game with a maximiser a and minimiser b: a max of a
# min inside a recurrence step
def minimax(R: f64[S, A, B], P: f64[S, A, S], gm: f64, K1: f64[K]) -> f64:
    V[k: K, s: S] = [k >= 1] * max[a](min[b](R[s, a, b]) + gm * sum[q](P[s, a, q] * V[k - 1, q]))
    return sum[s](V[K - 1, s])
""", sizes=dict(S=4, A=3, B=2, K=4), make=lambda rng, S, A, B, K: dict(
            R=_normal(rng, S, A, B), P=rng.dirichlet(np.ones(S), (S, A)), gm=0.9, K1=np.zeros(K)),
        ref=minimax_ref, note="reductions of reductions inside a step"),

    "redred": dict(src="""
# a logsumexp over rows of a max over columns, plus the min over rows of a logsumexp
def redred(X: f64[n, m, k], w: f64[k]) -> f64:
    return logsumexp[i](max[j](sum[c](X[i, j, c] * w[c]))) + min[i](logsumexp[j](X[i, j, 0]))
""", sizes=dict(n=3, m=4, k=2), make=lambda rng, n, m, k: dict(X=_normal(rng, n, m, k), w=_normal(rng, k)),
        ref=redred_ref, note="nested reductions in a return expression"),

    "zscore": dict(src="""
# a tuple-returning helper called on a size-1 row and on a vector, literal dimensions
def stats(x: f64[n]) -> (f64, f64):
    mu = sum[i](x[i]) / n
    return mu, sum[i]((x[i] - mu) ** 2) / n

def zscore(a: f64[1, n], b: f64[m], w: f64[3]) -> f64:
    row[i: n] = a[0, i]
    ma, va = stats(row)
    mb, vb = stats(b)
    return w[0] * va + w[1] * vb + w[2] * (ma - mb) ** 2
""", sizes=dict(n=5, m=4), make=lambda rng, n, m: dict(a=_normal(rng, 1, n), b=_normal(rng, m),
                                                        w=rng.random(3)),
        ref=zscore_ref, note="destructured tuple calls at two shapes, a size-1 dimension"),

    "quat": dict(src="""
# rotating points by a unit quaternion (normalised from free parameters) to fit targets
def quat(q: f64[4], X: f64[N, 3], Y: f64[N, 3]) -> f64:
    nq = sqrt(sum[c](q[c] ** 2))
    w = q[0] / nq
    x = q[1] / nq
    y = q[2] / nq
    z = q[3] / nq
    R[r: 3, c: 3] = [r == 0] * ([c == 0] * (1.0 - 2.0 * (y * y + z * z)) + [c == 1] * 2.0 * (x * y - w * z) + [c == 2] * 2.0 * (x * z + w * y)) + [r == 1] * ([c == 0] * 2.0 * (x * y + w * z) + [c == 1] * (1.0 - 2.0 * (x * x + z * z)) + [c == 2] * 2.0 * (y * z - w * x)) + [r == 2] * ([c == 0] * 2.0 * (x * z - w * y) + [c == 1] * 2.0 * (y * z + w * x) + [c == 2] * (1.0 - 2.0 * (x * x + y * y)))
    return sum[p, r]((sum[c](R[r, c] * X[p, c]) - Y[p, r]) ** 2)
""", sizes=dict(N=6), make=lambda rng, N: dict(q=_normal(rng, 4), X=_normal(rng, N, 3), Y=_normal(rng, N, 3)),
        ref=quat_ref, note="a 3 x 3 matrix of scalars by brackets"),
}


# What the language rejects by design (docs/language.md), each a located error:
# name -> (source, error class, part of the message, line)
REJECTED = {
    # no lgamma among the builtins: a beta-binomial needs its log-normaliser as data
    "betabinom": ("""
def betabinom(a: f64, b: f64, k: f64[N], m: f64[N]) -> f64:
    return -sum[s](lgamma(k[s] + a) + lgamma(m[s] - k[s] + b) - lgamma(m[s] + a + b))
""", "TLNameError", "unknown function lgamma", 3),
    # arithmetic on gathered labels inside an index (bigram compares instead)
    "hashgram": ("""
def hashgram(a: i64[n], E: f64[V, d]) -> f64:
    return sum[i, c]([i + 1 < n] * E[4 * a[i] + a[i + 1], c] ** 2)
""", "TLTypeError", "the gather a[...] must stand alone as an index", 3),
    # no wrap-around: periodic neighbours are written with brackets (grayscott)
    "periodic_mod": ("""
def periodic_mod(u: f64[n]) -> f64:
    return sum[i](u[(i + 1) % n] * u[i])
""", "TLTypeError", "% may only appear in a divisibility guard", 3),
    # a step through a call: arguments are whole tensors (arm writes the step out)
    "scan_call": ("""
def cell(h: f64[d], W: f64[d, d]) -> f64[d]:
    o[i] = tanh(sum[j](W[i, j] * h[j]))
    return o

def scan_call(h0: f64[d], W: f64[d, d], T1: f64[T]) -> f64:
    u = cell(h[T - 1], W)
    h[t: T, i: d] = [t == 0] * h0[i] + [t >= 1] * u[i]
    return sum[i](h[T - 1, i])
""", "TLTypeError", "argument h of cell must be a whole tensor", 7),
    # an index is not a value: a binomial tree's prices S0 u^j d^(t - j) come by a recurrence
    "tree_power": ("""
def tree_power(S0: f64, u: f64, d: f64, T1: f64[T]) -> f64:
    return sum[t: T, j: T]([j <= t] * S0 * u ** j * d ** (t - j))
""", "TLTypeError", "index j used as a value", 3),
    # a step through a gathered label is not a constant step
    "label_step": ("""
def label_step(x: f64[n], k: i64[n]) -> f64:
    c[i: n] = x[i] + [i >= 1] * c[k[i]]
    return c[n - 1]
""", "TLRecurrenceError", "does not step by a constant along i", 3),
}
