"""A fourteenth set of programs written from the documentation alone.

Domains the earlier sets (tests/newuser_programs.py ... tests/newuser13_programs.py)
leave out: transformer layers (RMSNorm through a called function in front of a SwiGLU
block with a residual; group normalisation over a four-index activation; grouped-query
causal attention whose query heads gather their key/value head through an i64 table),
generative models (planar normalising flows whose layers are a recurrence with the
log-determinant read one layer ahead; RealNVP checkerboard couplings by divisibility
brackets; a DDPM noise-prediction loss whose cumulative noise schedule is a recurrence
gathered at sampled time steps), reinforcement learning (V-trace targets with clipped
importance weights as a backward recurrence through action labels), actuarial science
(the chain-ladder reserve on a run-off triangle, the projection a two-index recurrence
over the lower-right half), information retrieval (BM25 with term frequencies counted
by comparing token labels with query labels, a learned k1, b and temperature), graphs
(soft modularity maximisation), plasma physics (the Boris particle pusher with cross
products through a Levi-Civita tensor), mechanics (1-D elastoplastic return mapping
with linear hardening, a sign made of value brackets), hydrology (Muskingum routing
through reaches in series, a two-index recurrence whose reach reads its upstream
neighbour in the same step), queueing (the Erlang B recursion for several centres,
gathered at each centre's capacity label), revenue management (a single-leg airline
booking DP backwards over time with a bid-price kink), portfolio risk (a running peak
as a max recurrence, the maximum drawdown as a hard max, a Sortino ratio with downside
brackets), neuroscience (a Hodgkin-Huxley-type neuron with Boltzmann gates by Euler
steps), macroeconomics (a Ramsey-Cass-Koopmans path with Cobb-Douglas output at a
parameter exponent and a discount factor as its own recurrence), colour science
(sRGB to CIELAB through two called functions with piecewise value brackets, mean
Delta E of a colour-correction matrix), computer animation (linear blend skinning
through an i64 bone table of two columns), causal inference (the augmented inverse
propensity weighted estimator, nuisance models from a function returning three
tensors), language modelling (an interpolated bigram model with counts by label
comparisons and a gather at a label one step back), astronomy (a transit light curve
with quadratic limb darkening), electromagnetics (a 1-D FDTD Yee scheme with a source
and probe given as one-entry label arrays), climate (a Budyko-Sellers energy balance
model with ice-albedo feedback), fisheries (a Schaefer surplus-production model with
a biomass floor), statistics (Clayton copulas on pairs of columns gathered by label;
Dirichlet-multinomial regression whose Gamma-function ratios are sums bounded by count
labels), sparse linear algebra (Jacobi sweeps on a matrix in coordinate format, the
previous iterate gathered by column label inside the recurrence), robotics (a planar
quadrotor whose six state components are picked by brackets) and metric learning
(ArcFace's additive angular margin).  Each entry has the shape of the other sets: the
program text (the function to test is named like the entry), the sizes of the test
inputs, `make(rng, **sizes)`, an independent NumPy version `ref(**inputs)` and a note.
REJECTED holds programs such a user writes first that the language refuses, each with
its located error.  tests/test_newuser14_programs.py checks them, and the API around
them.
"""
import numpy as np
from scipy.special import logsumexp as _lse

from newuser2_programs import _normal


def _sig(z):
    return 1.0 / (1.0 + np.exp(-z))


def _softplus(z):
    return np.logaddexp(0.0, z)


def _softmax(z, axis=-1):
    return np.exp(z - _lse(z, axis=axis, keepdims=True))


# ------------------------------------------------------------ transformer layers
def rmsnorm_swiglu_ref(x, g, W1, W3, W2, tg):
    def rms(a):
        return g[None, :] * a / np.sqrt(np.mean(a ** 2, axis=1, keepdims=True) + 1e-6)
    h = rms(x)
    a, v = h @ W1, h @ W3
    o = x + (a * _sig(a) * v) @ W2
    return float(np.sum((rms(o) - tg) ** 2) / x.shape[0])


def _rmsnorm_swiglu_inputs(rng, b, d, f):
    return dict(x=_normal(rng, b, d), g=1.0 + 0.1 * _normal(rng, d),
                W1=0.4 * _normal(rng, d, f), W3=0.4 * _normal(rng, d, f),
                W2=0.4 * _normal(rng, f, d), tg=_normal(rng, b, d))


def group_norm_ref(x, gam, bet, w, y):
    b, G, K, P = x.shape
    mu = x.mean(axis=(2, 3), keepdims=True)
    var = ((x - mu) ** 2).mean(axis=(2, 3), keepdims=True)
    z = gam[None, :, :, None] * (x - mu) / np.sqrt(var + 1e-5) + bet[None, :, :, None]
    act = z * _sig(1.702 * z)
    f = np.einsum("sgkp,gk->s", act, w) / P
    return float(np.sum(_softplus(f) - y * f) / b)


def _group_norm_inputs(rng, b, G, K, P):
    return dict(x=1.0 + 2.0 * _normal(rng, b, G, K, P), gam=1.0 + 0.2 * _normal(rng, G, K),
                bet=0.1 * _normal(rng, G, K), w=_normal(rng, G, K),
                y=rng.integers(0, 2, b).astype(float))


def gqa_ref(X, Wq, Wk, Wv, kv, Wo, Y):
    n, d = X.shape
    H, _, e = Wq.shape
    Q = np.einsum("ic,hca->hia", X, Wq)
    K = np.einsum("jc,gca->gja", X, Wk)
    V = np.einsum("jc,gca->gja", X, Wv)
    Z = np.zeros((n, d))
    mask = np.tril(np.ones((n, n), dtype=bool))
    for h in range(H):
        S = Q[h] @ K[kv[h]].T / np.sqrt(e)
        S = np.where(mask, S, -np.inf)
        Pr = _softmax(S, axis=1)
        Z += (Pr @ V[kv[h]]) @ Wo[h]
    return float(np.sum((Z - Y) ** 2) / n)


def _gqa_inputs(rng, n, d, e, H, G):
    return dict(X=_normal(rng, n, d), Wq=0.5 * _normal(rng, H, d, e), Wk=0.5 * _normal(rng, G, d, e),
                Wv=0.5 * _normal(rng, G, d, e), kv=np.arange(H) // (H // G),
                Wo=0.5 * _normal(rng, H, e, d), Y=_normal(rng, n, d))


# ------------------------------------------------------------ generative models
def planar_flow_ref(eps, mu, ls, U, W, bb, m1, m2):
    S, D = eps.shape
    K = U.shape[0]
    z = mu[None, :] + np.exp(ls)[None, :] * eps
    ld = np.zeros(S)
    for k in range(K):
        a = z @ W[k] + bb[k]
        ld += np.log(np.abs(1.0 + (1.0 - np.tanh(a) ** 2) * (U[k] @ W[k])))
        z = z + U[k][None, :] * np.tanh(a)[:, None]
    lp = _lse(np.stack([-0.5 * np.sum((z - m1) ** 2, axis=1), -0.5 * np.sum((z - m2) ** 2, axis=1)]), axis=0)
    lq0 = -np.sum(ls) - 0.5 * np.sum(eps ** 2) / S
    return float(lq0 - np.sum(ld) / S - np.sum(lp) / S)


def _planar_flow_inputs(rng, S, D, K):
    return dict(eps=_normal(rng, S, D), mu=0.3 * _normal(rng, D), ls=0.1 * _normal(rng, D),
                U=0.5 * _normal(rng, K, D), W=0.5 * _normal(rng, K, D), bb=0.2 * _normal(rng, K),
                m1=np.full(D, 1.5), m2=np.full(D, -1.0))


def realnvp_ref(X, Ws1, Wt1, Ws2, Wt2):
    n, D = X.shape
    ev = (np.arange(D) % 2 == 0).astype(float)
    od = 1.0 - ev
    s1 = od[None, :] * np.tanh((X * ev) @ Ws1.T)
    t1 = od[None, :] * ((X * ev) @ Wt1.T)
    Y1 = X * np.exp(s1) + t1
    s2 = ev[None, :] * np.tanh((Y1 * od) @ Ws2.T)
    t2 = ev[None, :] * ((Y1 * od) @ Wt2.T)
    Y2 = Y1 * np.exp(s2) + t2
    return float(np.sum(0.5 * Y2 ** 2 - s1 - s2) / n)


def _realnvp_inputs(rng, n, D):
    return dict(X=_normal(rng, n, D), Ws1=0.4 * _normal(rng, D, D), Wt1=0.4 * _normal(rng, D, D),
                Ws2=0.4 * _normal(rng, D, D), Wt2=0.4 * _normal(rng, D, D))


def ddpm_ref(x0, noise, ts, lbeta, E, W1, W2):
    beta = 0.2 * _sig(lbeta)
    ab = np.cumprod(1.0 - beta)
    a = ab[ts][:, None]
    xt = np.sqrt(a) * x0 + np.sqrt(1.0 - a) * noise
    hid = np.tanh(xt @ W1 + E[ts])
    return float(np.sum((hid @ W2 - noise) ** 2) / x0.shape[0])


def _ddpm_inputs(rng, b, d, T, h):
    return dict(x0=_normal(rng, b, d), noise=_normal(rng, b, d), ts=rng.integers(0, T, b),
                lbeta=np.linspace(-3.0, 0.0, T) + 0.1 * _normal(rng, T), E=0.3 * _normal(rng, T, h),
                W1=0.4 * _normal(rng, d, h), W2=0.4 * _normal(rng, h, d))


# ------------------------------------------------------------ reinforcement learning
def vtrace_ref(lp, lmu, act, r, V, g, rbar, cbar):
    T = len(r)
    lpi = lp[np.arange(T), act] - _lse(lp, axis=1)
    ratio = np.exp(lpi - lmu)
    rho, c = np.minimum(ratio, rbar), np.minimum(ratio, cbar)
    dv = rho * (r + g * V[1:] - V[:-1])
    dl = np.zeros(T)
    for t in reversed(range(T)):
        dl[t] = dv[t] + (g * c[t] * dl[t + 1] if t + 1 < T else 0.0)
    nxt = np.append(dl[1:], 0.0)
    adv = r + g * (V[1:] + nxt) - V[:-1]
    return float(0.5 * np.sum(dl ** 2) - np.sum(rho * lpi * adv))


def _vtrace_inputs(rng, T, A):
    lp = _normal(rng, T, A)
    act = rng.integers(0, A, T)
    lmu = lp[np.arange(T), act] - _lse(lp, axis=1) + 0.6 * _normal(rng, T)
    return dict(lp=lp, lmu=lmu, act=act, r=_normal(rng, T), V=_normal(rng, T + 1), g=0.9,
                rbar=1.0, cbar=0.95)


# ------------------------------------------------------------ actuarial science
def chain_ladder_ref(C, w):
    n = C.shape[0]
    f = np.ones(n)
    for j in range(1, n):
        rows = np.arange(n - j)
        f[j] = C[rows, j].sum() / C[rows, j - 1].sum()
    P = C.copy()
    for i in range(n):
        for j in range(n):
            if i + j >= n:
                P[i, j] = P[i, j - 1] * f[j]
    latest = C[np.arange(n), n - 1 - np.arange(n)]
    return float(np.sum(w * (P[:, n - 1] - latest)))


def _chain_ladder_inputs(rng, n):
    prem = 100.0 * (1.0 + 0.2 * rng.random(n))
    dev = np.cumsum(np.r_[0.5, 0.25, 0.12, 0.07, 0.04, 0.02][:n])
    C = prem[:, None] * dev[None, :] * np.exp(0.05 * _normal(rng, n, n))
    C = np.where(np.add.outer(np.arange(n), np.arange(n)) < n, C, 0.0)
    return dict(C=C, w=1.0 + rng.random(n))


# ------------------------------------------------------------ information retrieval
def bm25_ref(tok, q, rel, lk1, lb, ltau):
    D, L = tok.shape
    R, Q = q.shape
    k1, b, tau = np.exp(lk1), _sig(lb), np.exp(ltau)
    dl = (tok >= 0).sum(axis=1).astype(float)
    avg = dl.sum() / D
    total = 0.0
    for r in range(R):
        tf = np.array([[np.sum(tok[d] == q[r, u]) for u in range(Q)] for d in range(D)], dtype=float)
        df = (tf > 0.5).sum(axis=0)
        idf = np.log((D - df + 0.5) / (df + 0.5) + 1.0)
        sc = np.sum(idf[None, :] * tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * dl[:, None] / avg)), axis=1)
        total += _lse(tau * sc) - tau * sc[rel[r]]
    return float(total / R)


def _bm25_inputs(rng, D, L, R, Q):
    tok = rng.integers(0, 12, (D, L))
    for d in range(D):
        tok[d, L - d % 3:] = -1                  # documents of different lengths, padded with -1
    q = rng.integers(0, 12, (R, Q))
    return dict(tok=tok, q=q, rel=rng.integers(0, D, R), lk1=np.log(1.2), lb=0.3, ltau=0.0)


# ------------------------------------------------------------ graphs
def modularity_ref(A, Z, lam):
    k = A.sum(axis=1)
    m2 = k.sum()
    S = _softmax(Z, axis=1)
    B = A - np.outer(k, k) / m2
    Q = np.sum((S.T @ B) * S.T) / m2
    return float(-Q - lam * np.sum(S * np.log(S)) / A.shape[0])


def _modularity_inputs(rng, n, C):
    A = (rng.random((n, n)) < 0.4).astype(float) * (0.5 + rng.random((n, n)))
    A = np.triu(A, 1)
    return dict(A=A + A.T + 0.1, Z=_normal(rng, n, C), lam=0.05)


# ------------------------------------------------------------ plasma physics
def _levi_civita():
    e = np.zeros((3, 3, 3))
    for i, j, k in [(0, 1, 2), (1, 2, 0), (2, 0, 1)]:
        e[i, j, k], e[i, k, j] = 1.0, -1.0
    return e


def boris_ref(x0, v0, Ef, Bf, eps, qm, dt, target):
    h = 0.5 * qm * dt
    x, v = x0.copy(), v0.copy()
    for t in range(len(Ef)):
        vm = v + h * Ef[t]
        tt = h * Bf[t]
        ss = 2.0 * tt / (1.0 + tt @ tt)
        vq = vm + np.einsum("ijk,j,k->i", eps, vm, tt)
        v = vm + np.einsum("ijk,j,k->i", eps, vq, ss) + h * Ef[t]
        x = x + dt * v
    return float(np.sum((x - target) ** 2) + 0.01 * v @ v)


def _boris_inputs(rng, T):
    return dict(x0=np.zeros(3), v0=np.array([1.0, 0.0, 0.3]), Ef=0.3 * _normal(rng, T, 3),
                Bf=np.array([0.0, 0.0, 2.0]) + 0.2 * _normal(rng, T, 3), eps=_levi_civita(),
                qm=1.5, dt=0.2, target=np.array([0.5, 0.5, 0.5]))


# ------------------------------------------------------------ mechanics
def plasticity_ref(eps, sig_obs, lE, sy, Hh):
    E = np.exp(lE)
    ep = al = 0.0
    out = np.zeros(len(eps))
    for t in range(len(eps)):
        s = E * (eps[t] - ep)
        f = abs(s) - (sy + Hh * al)
        dg = max(f, 0.0) / (E + Hh)
        ep += dg * np.sign(s)
        al += dg
        out[t] = s - E * dg * np.sign(s)
    return float(np.sum((out - sig_obs) ** 2))


def _plasticity_inputs(rng, T):
    path = np.r_[np.linspace(0.0, 0.012, T // 2 + 1)[1:], np.linspace(0.012, -0.006, T - T // 2 + 1)[1:]]
    eps = path + 0.0002 * _normal(rng, T)
    return dict(eps=eps, sig_obs=np.clip(200.0 * eps, -1.2, 1.2) + 0.05 * _normal(rng, T),
                lE=np.log(200.0), sy=1.0, Hh=10.0)


# ------------------------------------------------------------ hydrology
def muskingum_ref(inflow, lK, xr, dt, obs):
    T, R = len(inflow), len(lK)
    K = np.exp(lK)
    X = 0.5 * _sig(xr)
    den = 2 * K * (1 - X) + dt
    c0, c1, c2 = (dt - 2 * K * X) / den, (dt + 2 * K * X) / den, (2 * K * (1 - X) - dt) / den
    I = inflow.copy()
    for r in range(R):
        O = np.zeros(T)
        O[0] = I[0]
        for t in range(1, T):
            O[t] = c0[r] * I[t] + c1[r] * I[t - 1] + c2[r] * O[t - 1]
        I = O
    return float(np.sum((I - obs) ** 2))


def _muskingum_inputs(rng, T, R):
    tt = np.arange(T)
    inflow = 10.0 + 40.0 * np.exp(-0.5 * ((tt - 3.0) / 1.5) ** 2)
    return dict(inflow=inflow, lK=np.log(1.5 + rng.random(R)), xr=0.3 * _normal(rng, R), dt=1.0,
                obs=10.0 + 30.0 * np.exp(-0.5 * ((tt - 5.0) / 2.0) ** 2) + _normal(rng, T))


# ------------------------------------------------------------ queueing
def erlang_b_ref(la, kk, cap, cost, pen):
    C, K = len(la), len(kk)
    a = np.exp(la)
    total = 0.0
    for c in range(C):
        B = np.zeros(K)
        B[0] = 1.0
        for k in range(1, K):
            B[k] = a[c] * B[k - 1] / (k + a[c] * B[k - 1])
        total += pen * a[c] * B[cap[c]] + cost[c] * cap[c]
    return float(total)


def _erlang_b_inputs(rng, C, K):
    return dict(la=np.log(2.0 + 4.0 * rng.random(C)), kk=np.arange(K, dtype=float),
                cap=rng.integers(2, K, C), cost=0.5 + rng.random(C), pen=3.0)


# ------------------------------------------------------------ revenue management
def revenue_dp_ref(lam, pr, sal):
    T, F = lam.shape
    X = len(sal)
    V = sal.copy()
    for t in reversed(range(T)):
        nv = V.copy()
        for x in range(1, X):
            nv[x] = V[x] + np.sum(lam[t] * np.maximum(pr - (V[x] - V[x - 1]), 0.0))
        V = nv
    return float(V[X - 1])


def _revenue_dp_inputs(rng, T, F, X):
    return dict(lam=0.25 * rng.random((T, F)) / F * 2.0, pr=np.sort(50.0 + 150.0 * rng.random(F)),
                sal=5.0 * np.arange(X) + rng.random(X))


# ------------------------------------------------------------ portfolio risk
def drawdown_ref(R, w, mar, lam):
    p = _softmax(w)
    r = R @ p
    lv = np.cumsum(r)
    pk = np.maximum.accumulate(np.maximum(lv, 0.0))
    dd = np.max(pk - lv)
    down = np.sqrt(np.sum(np.where(r < mar, (r - mar) ** 2, 0.0)) / len(r))
    return float(-(r.mean() - mar) / down + lam * dd)


def _drawdown_inputs(rng, T, A):
    return dict(R=0.002 + 0.02 * _normal(rng, T, A), w=0.5 * _normal(rng, A), mar=0.001, lam=5.0)


# ------------------------------------------------------------ neuroscience
def hh_ref(I, Vobs, lg, dt, V0):
    gNa, gK, gL = np.exp(lg)
    V = V0
    m, h, n = _sig((V0 + 40.0) / 9.0), _sig(-(V0 + 62.0) / 7.0), _sig((V0 + 53.0) / 15.0)
    out = [V]
    for t in range(1, len(I)):
        Vn = V + dt * (I[t] - gNa * m ** 3 * h * (V - 50.0) - gK * n ** 4 * (V + 77.0) - gL * (V + 54.4))
        m, h, n = (m + dt * (_sig((V + 40.0) / 9.0) - m) / 0.2,
                   h + dt * (_sig(-(V + 62.0) / 7.0) - h) / 1.0,
                   n + dt * (_sig((V + 53.0) / 15.0) - n) / 2.0)
        V = Vn
        out.append(V)
    return float(np.sum((np.array(out) - Vobs) ** 2) / len(I))


def _hh_inputs(rng, T):
    I = np.where((np.arange(T) >= 3) & (np.arange(T) < 12), 15.0, 0.0) + _normal(rng, T)
    return dict(I=I, Vobs=-65.0 + 10.0 * _normal(rng, T), lg=np.log([120.0, 36.0, 0.3]) + 0.1 * _normal(rng, 3),
                dt=0.05, V0=-65.0)


# ------------------------------------------------------------ macroeconomics
def ramsey_ref(sr, k0, lal, delta, beta, A):
    T = len(sr)
    al = _sig(lal)
    s = _sig(sr)
    k = np.zeros(T)
    y = np.zeros(T)
    k[0] = k0
    for t in range(T):
        if t >= 1:
            k[t] = (1.0 - delta) * k[t - 1] + s[t - 1] * y[t - 1]
        y[t] = A[t] * k[t] ** al
    D = beta ** np.arange(T)
    return float(-np.sum(D * np.log((1.0 - s) * y)) - D[-1] * beta / (1.0 - beta) * np.log(k[-1]))


def _ramsey_inputs(rng, T):
    return dict(sr=-1.0 + 0.3 * _normal(rng, T), k0=2.0, lal=np.log(0.33 / 0.67), delta=0.08,
                beta=0.95, A=1.0 + 0.05 * _normal(rng, T))


# ------------------------------------------------------------ colour science
_WP = np.array([0.95047, 1.0, 1.08883])


def _srgb_lin(c):
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def _lab(X, wp):
    r = X / wp
    eps = (6.0 / 29.0) ** 3
    f = np.where(r > eps, np.cbrt(np.where(r > eps, r, 1.0)), r * (29.0 / 6.0) ** 2 / 3.0 + 4.0 / 29.0)
    return np.stack([116.0 * f[:, 1] - 16.0, 500.0 * (f[:, 0] - f[:, 1]), 200.0 * (f[:, 1] - f[:, 2])], axis=1)


def delta_e_ref(raw, M, Mx, wp, lt):
    X = _srgb_lin(raw) @ M.T @ Mx.T
    return float(np.mean(np.sqrt(np.sum((_lab(X, wp) - lt) ** 2, axis=1))))


_SRGB_XYZ = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]])


def _delta_e_inputs(rng, n):
    raw = rng.random((n, 3))
    raw[: max(1, n // 4)] *= 0.06                  # dark patches: both branches of both curves
    M = np.eye(3) + 0.05 * _normal(rng, 3, 3)
    lt = _lab(_srgb_lin(np.clip(raw + 0.02 * _normal(rng, n, 3), 0.0, 1.0)) @ _SRGB_XYZ.T, _WP)
    return dict(raw=raw, M=M, Mx=_SRGB_XYZ.copy(), wp=_WP.copy(), lt=lt)


# ------------------------------------------------------------ computer animation
def skinning_ref(V, bi, wl, th, tr, tgt):
    P, J = bi.shape
    B = len(th)
    R = np.zeros((B, 3, 3))
    R[:, 0, 0], R[:, 0, 1], R[:, 1, 0], R[:, 1, 1], R[:, 2, 2] = np.cos(th), -np.sin(th), np.sin(th), np.cos(th), 1.0
    w = _softmax(wl, axis=1)
    X = np.zeros((P, 3))
    for p in range(P):
        for j in range(J):
            X[p] += w[p, j] * (R[bi[p, j]] @ V[p] + tr[bi[p, j]])
    return float(np.sum((X - tgt) ** 2))


def _skinning_inputs(rng, P, J, B):
    return dict(V=_normal(rng, P, 3), bi=rng.integers(0, B, (P, J)), wl=_normal(rng, P, J),
                th=0.5 * _normal(rng, B), tr=0.3 * _normal(rng, B, 3), tgt=_normal(rng, P, 3))


# ------------------------------------------------------------ causal inference
def aipw_ref(X, tr, yo, wp, w1, w0):
    e = _sig(X @ wp)
    m1, m0 = X @ w1, X @ w0
    t1 = tr == 1
    fit = (-np.sum(np.where(t1, np.log(e), np.log(1.0 - e)))
           + np.sum(np.where(t1, (yo - m1) ** 2, (yo - m0) ** 2)))
    ate = np.mean(m1 - m0 + np.where(t1, (yo - m1) / e, 0.0) - np.where(t1, 0.0, (yo - m0) / (1.0 - e)))
    return float(fit / len(yo) + ate ** 2)


def _aipw_inputs(rng, n, d):
    X = _normal(rng, n, d)
    tr = (rng.random(n) < _sig(X[:, 0])).astype(np.int64)
    return dict(X=X, tr=tr, yo=X @ np.linspace(1.0, -1.0, d) + 0.5 * tr + 0.3 * _normal(rng, n),
                wp=0.3 * _normal(rng, d), w1=0.3 * _normal(rng, d), w0=0.3 * _normal(rng, d))


# ------------------------------------------------------------ language modelling
def bigram_ref(tr, te, lal, lmix, u):
    V = len(u)
    cnt = np.zeros((V, V))
    for a, b in zip(tr[:-1], tr[1:]):
        cnt[a, b] += 1.0
    ctx = cnt.sum(axis=1)
    pu = _softmax(u)
    al, lam = np.exp(lal), _sig(lmix)
    lp = [np.log(lam * (cnt[a, b] + al * pu[b]) / (ctx[a] + al) + (1.0 - lam) * pu[b])
          for a, b in zip(te[:-1], te[1:])]
    return float(-np.sum(lp) / (len(te) - 1))


def _bigram_inputs(rng, N, M, V):
    return dict(tr=rng.integers(0, V, N), te=rng.integers(0, V, M), lal=0.0, lmix=0.5,
                u=0.3 * _normal(rng, V))


# ------------------------------------------------------------ astronomy
def transit_ref(tt, flux, t0, lP, la, b, lk, u1, u2, w):
    P, a, k = np.exp(lP), np.exp(la), np.exp(lk)
    ph = 2.0 * np.pi * (tt - t0) / P
    z = np.sqrt(a ** 2 * np.sin(ph) ** 2 + b ** 2 * np.cos(ph) ** 2)
    mu = np.sqrt(np.maximum(1.0 - z ** 2, 0.0) + 1e-9)
    Iz = 1.0 - u1 * (1.0 - mu) - u2 * (1.0 - mu) ** 2
    cov = _sig((1.0 - z) / w) * (np.cos(ph) > 0.0)
    model = 1.0 - k ** 2 * Iz / (1.0 - u1 / 3.0 - u2 / 6.0) * cov
    return float(1e4 * np.sum((model - flux) ** 2))


def _transit_inputs(rng, n):
    tt = np.linspace(-0.15, 0.15, n) + 0.002 * _normal(rng, n)
    return dict(tt=tt, flux=1.0 - 0.01 * (np.abs(tt) < 0.06) + 0.001 * _normal(rng, n), t0=0.005,
                lP=np.log(3.0), la=np.log(8.0), b=0.3, lk=np.log(0.1), u1=0.4, u2=0.25, w=0.03)


# ------------------------------------------------------------ electromagnetics
def fdtd_ref(src, leps, c, probe, s0, pr):
    T, n = len(src), len(leps)
    E, H = np.zeros(n), np.zeros(n)
    E[s0[0]] += src[0]
    out = [E[pr[0]]]
    for t in range(1, T):
        Hn = H + c * (np.append(E[1:], 0.0) - E)
        En = E + c * np.exp(-leps) * (Hn - np.r_[0.0, Hn[:-1]])
        En[s0[0]] += src[t]
        E, H = En, Hn
        out.append(E[pr[0]])
    return float(np.sum((np.array(out) - probe) ** 2))


def _fdtd_inputs(rng, T, n):
    tt = np.arange(T)
    return dict(src=np.exp(-0.5 * ((tt - 2.0) / 1.0) ** 2), leps=0.5 * rng.random(n), c=0.5,
                probe=0.2 * _normal(rng, T), s0=np.array([1]), pr=np.array([n - 2]))


# ------------------------------------------------------------ climate
def ebm_ref(Q, lat_w, T0, Tobs, A, B, lD, a_ice, a_free, dt, steps):
    S, J = len(steps), len(Q)
    Tm = T0.copy()
    D = np.exp(lD)
    for s in range(1, S):
        al = a_ice + (a_free - a_ice) * _sig((Tm + 10.0) / 2.0)
        lap = np.zeros(J)
        lap[1:] += Tm[:-1] - Tm[1:]
        lap[:-1] += Tm[1:] - Tm[:-1]
        Tm = Tm + dt * (Q * (1.0 - al) - (A + B * Tm) + D * lap)
    return float(np.sum(lat_w * (Tm - Tobs) ** 2))


def _ebm_inputs(rng, J, S):
    lat = np.linspace(-80.0, 80.0, J) * np.pi / 180.0
    Q = 340.0 * (1.0 - 0.48 * 0.5 * (3.0 * np.sin(lat) ** 2 - 1.0))
    return dict(Q=Q, lat_w=np.cos(lat), T0=20.0 * np.cos(lat) - 5.0 + _normal(rng, J),
                Tobs=28.0 * np.cos(lat) - 12.0, A=203.0, B=2.0, lD=np.log(0.6), a_ice=0.62,
                a_free=0.3, dt=0.05, steps=np.zeros(S))


def advect_ref(c0, uw, kap, dt, obs, steps):
    T = len(steps)
    u = np.tanh(uw)
    C = c0.copy()
    for t in range(1, T):
        left, right = np.roll(C, 1), np.roll(C, -1)
        C = (C - dt * np.where(u > 0.0, u * (C - left), 0.0) - dt * np.where(u <= 0.0, u * (right - C), 0.0)
             + dt * kap * (left - 2.0 * C + right))
    return float(np.sum((C - obs) ** 2))


def _advect_inputs(rng, n, T):
    x = np.arange(n)
    return dict(c0=np.exp(-0.5 * ((x - n / 3.0) / 1.5) ** 2), uw=0.8 * _normal(rng, n), kap=0.2,
                dt=0.4, obs=np.exp(-0.5 * ((x - n / 2.0) / 2.0) ** 2), steps=np.zeros(T))


# ------------------------------------------------------------ fisheries
def schaefer_ref(Cat, Iobs, lr, lK, lq, lsig, p0):
    T = len(Cat)
    r, K = np.exp(lr), np.exp(lK)
    B = np.zeros(T)
    B[0] = p0 * K
    for t in range(1, T):
        B[t] = max(B[t - 1] + r * B[t - 1] * (1.0 - B[t - 1] / K) - Cat[t - 1], 0.01 * K)
    res = np.log(Iobs) - lq - np.log(B)
    return float(np.sum(res ** 2) / (2.0 * np.exp(2.0 * lsig)) + T * lsig)


def _schaefer_inputs(rng, T):
    Cat = np.r_[np.linspace(50.0, 260.0, T - 3), [420.0, 380.0, 60.0]][:T] * (1.0 + 0.05 * rng.random(T))
    return dict(Cat=Cat, Iobs=np.exp(_normal(rng, T) * 0.2) * np.linspace(0.8, 0.2, T), lr=np.log(0.4),
                lK=np.log(1000.0), lq=np.log(1e-3), lsig=np.log(0.3), p0=0.9)


# ------------------------------------------------------------ statistics
def clayton_ref(U, pa, pb, lt):
    th = np.exp(lt)
    ua, ub = U[:, pa], U[:, pb]
    s = ua ** (-th) + ub ** (-th) - 1.0
    ll = np.log(1.0 + th) - (1.0 + th) * (np.log(ua) + np.log(ub)) - (2.0 + 1.0 / th) * np.log(s)
    return float(-np.sum(ll) / U.shape[0])


def _clayton_inputs(rng, n, d, P):
    U = (rng.random((n, d)) + 0.05) / 1.1
    pa = np.arange(P) % d
    return dict(U=U, pa=pa, pb=(pa + 1 + np.arange(P) // d) % d, lt=0.3 * _normal(rng, P))


def dirmult_ref(cnt, kk, X, Bc, tot):
    N, C = cnt.shape
    al = np.exp(X @ Bc)
    A = al.sum(axis=1)
    ll = 0.0
    for i in range(N):
        for c in range(C):
            ll += np.sum(np.log(al[i, c] + np.arange(cnt[i, c])))
        ll -= np.sum(np.log(A[i] + np.arange(tot[i])))
    return float(-ll / N)


def _dirmult_inputs(rng, N, C, K, d):
    cnt = rng.integers(0, 3, (N, C))
    cnt[0, 0] = 0
    return dict(cnt=cnt, kk=np.arange(K, dtype=float), X=_normal(rng, N, d), Bc=0.3 * _normal(rng, d, C),
                tot=cnt.sum(axis=1))


# ------------------------------------------------------------ sparse linear algebra
def coo_jacobi_ref(row, col, val, dg, b, xs, steps):
    n, T = len(dg), len(steps)
    A = np.zeros((n, n))
    np.add.at(A, (row, col), val)
    x = b / dg
    for _ in range(1, T):
        x = (b - A @ x) / dg
    return float(np.sum((x - xs) ** 2))


def _coo_jacobi_inputs(rng, n, E, T):
    row = rng.integers(0, n, E)
    col = (row + 1 + rng.integers(0, n - 1, E)) % n        # off the diagonal
    return dict(row=row, col=col, val=_normal(rng, E), dg=3.0 + rng.random(n), b=_normal(rng, n),
                xs=_normal(rng, n), steps=np.zeros(T))


# ------------------------------------------------------------ robotics
def quadrotor_ref(u1, u2, s0, m, Iz, dt, goal):
    s = s0.copy()
    for t in range(1, len(u1)):
        d = np.array([s[3], s[4], s[5], -u1[t - 1] / m * np.sin(s[2]),
                      u1[t - 1] / m * np.cos(s[2]) - 9.81, u2[t - 1] / Iz])
        s = s + dt * d
    return float(np.sum((s - goal) ** 2) + 1e-3 * np.sum(u1 ** 2 + u2 ** 2))


def _quadrotor_inputs(rng, T):
    return dict(u1=9.81 * 0.5 + _normal(rng, T), u2=0.1 * _normal(rng, T), s0=np.zeros(6), m=0.5,
                Iz=0.02, dt=0.1, goal=np.array([1.0, 1.0, 0.0, 0.0, 0.0, 0.0]))


# ------------------------------------------------------------ metric learning
def arcface_ref(X, W, y, sc, mg):
    cs = (X / np.linalg.norm(X, axis=1, keepdims=True)) @ (W / np.linalg.norm(W, axis=1, keepdims=True)).T
    b = X.shape[0]
    lg = sc * cs
    idx = np.arange(b)
    c = cs[idx, y]
    lg[idx, y] = sc * (c * np.cos(mg) - np.sqrt(1.0 - c ** 2) * np.sin(mg))
    return float(np.sum(_lse(lg, axis=1) - lg[idx, y]) / b)


def _arcface_inputs(rng, b, d, C):
    return dict(X=_normal(rng, b, d), W=_normal(rng, C, d), y=rng.integers(0, C, b), sc=8.0, mg=0.3)


# ------------------------------------------------------------ self-supervised learning
def nt_xent_ref(Z1, Z2, tau):
    B = Z1.shape[0]
    Z = np.vstack([Z1, Z2])
    Zn = Z / np.linalg.norm(Z, axis=1, keepdims=True)
    S = Zn @ Zn.T / tau
    pos = np.r_[S[np.arange(B), np.arange(B) + B], S[np.arange(B) + B, np.arange(B)]]
    np.fill_diagonal(S, -np.inf)
    return float(np.sum(_lse(S, axis=1) - pos) / (2 * B))


def _nt_xent_inputs(rng, B, d):
    Z1 = _normal(rng, B, d)
    return dict(Z1=Z1, Z2=Z1 + 0.5 * _normal(rng, B, d), tau=0.5)


# ------------------------------------------------------------ image editing
def seam_ref(img, g):
    h, w = img.shape
    gx = np.zeros((h, w))
    gy = np.zeros((h, w))
    gx[:, 1:-1] = img[:, 2:] - img[:, :-2]
    gy[1:-1, :] = img[2:, :] - img[:-2, :]
    E = np.sqrt(gx ** 2 + gy ** 2 + 1e-6)
    M = E[0].copy()
    for r in range(1, h):
        nm = np.zeros(w)
        for c in range(w):
            nb = [M[c + k - 1] for k in range(3) if 0 <= c + k - 1 < w]
            nm[c] = E[r, c] - g * _lse(-np.array(nb) / g)
        M = nm
    return float(-g * _lse(-M / g))


def _seam_inputs(rng, h, w):
    return dict(img=rng.random((h, w)), g=0.1)


# ------------------------------------------------------------ Gaussian processes
def lu_gp_ref(x, y, ll, lsf, lsn):
    n = len(x)
    K = np.exp(2 * lsf - 0.5 * (x[:, None] - x[None, :]) ** 2 / np.exp(2 * ll)) + np.eye(n) * np.exp(2 * lsn)
    sign, ld = np.linalg.slogdet(K)
    return float(0.5 * y @ np.linalg.solve(K, y) + 0.5 * ld)


def _lu_gp_inputs(rng, n):
    x = np.sort(rng.random(n) * 4.0)
    return dict(x=x, y=np.sin(x) + 0.1 * _normal(rng, n), ll=np.log(0.8), lsf=0.0, lsn=np.log(0.3))


# ------------------------------------------------------------ array signal processing
def beamform_ref(x, dl, w, tgt):
    M, T = x.shape
    y = np.zeros(T)
    for m in range(M):
        for t in range(T):
            if 0 <= t - dl[m] < T:
                y[t] += w[m] * x[m, t - dl[m]]
    return float(np.sum((y - tgt) ** 2))


def _beamform_inputs(rng, M, T):
    return dict(x=_normal(rng, M, T), dl=rng.integers(0, 3, M), w=np.full(M, 1.0 / M) + 0.1 * _normal(rng, M),
                tgt=_normal(rng, T))


# ------------------------------------------------------------ Bayesian optimisation
def ei_ref(Xc, X, Ki, alpha, fbest, ll, sf):
    from scipy.special import erf
    d2 = ((Xc[:, None, :] - X[None, :, :]) ** 2 / np.exp(2 * ll)).sum(axis=2)
    ks = sf * np.exp(-0.5 * d2)
    mu = ks @ alpha
    v = np.maximum(sf - np.einsum("ai,ij,aj->a", ks, Ki, ks), 1e-9)
    sd = np.sqrt(v)
    z = (fbest - mu) / sd
    return float(-np.sum(sd * (z * 0.5 * (1 + erf(z / np.sqrt(2))) + np.exp(-0.5 * z ** 2) / np.sqrt(2 * np.pi))))


def _ei_inputs(rng, m, n, d):
    X = rng.random((n, d))
    ll = np.log(np.full(d, 0.4))
    K = np.exp(-0.5 * (((X[:, None] - X[None]) ** 2) / np.exp(2 * ll)).sum(axis=2)) + 0.01 * np.eye(n)
    y = np.sin(3 * X).sum(axis=1)
    Ki = np.linalg.inv(K)
    return dict(Xc=rng.random((m, d)), X=X, Ki=Ki, alpha=Ki @ y, fbest=float(y.min()), ll=ll, sf=1.0)


# ------------------------------------------------------------ structured prediction
def ssvm_ref(F, W, A, y):
    T = F.shape[0]
    E = F @ W.T
    K = W.shape[0]
    a = E[0] + (np.arange(K) != y[0])
    for t in range(1, T):
        a = E[t] + (np.arange(K) != y[t]) + np.max(a[:, None] + A, axis=0)
    gold = E[np.arange(T), y].sum() + A[y[:-1], y[1:]].sum()
    return float(np.max(a) - gold)


def _ssvm_inputs(rng, T, d, K):
    return dict(F=_normal(rng, T, d), W=0.5 * _normal(rng, K, d), A=0.5 * _normal(rng, K, K),
                y=rng.integers(0, K, T))


# ------------------------------------------------------------ word embeddings
def glove_ref(ci, cj, X, W, Wt, bw, bt, xmax):
    f = np.minimum((X / xmax) ** 0.75, 1.0)
    return float(np.sum(f * (np.sum(W[ci] * Wt[cj], axis=1) + bw[ci] + bt[cj] - np.log(X)) ** 2))


def _glove_inputs(rng, P, V, d):
    return dict(ci=rng.integers(0, V, P), cj=rng.integers(0, V, P), X=1.0 + rng.integers(0, 60, P) + 0.5 * rng.random(P),
                W=0.3 * _normal(rng, V, d), Wt=0.3 * _normal(rng, V, d), bw=0.1 * _normal(rng, V),
                bt=0.1 * _normal(rng, V), xmax=30.0)


# ------------------------------------------------------------ visualisation
def sammon_ref(Y, D):
    n = Y.shape[0]
    iu = np.triu_indices(n, 1)
    dy = np.sqrt(((Y[:, None] - Y[None]) ** 2).sum(axis=2))[iu]
    dd = D[iu]
    return float(np.sum((dd - dy) ** 2 / dd) / np.sum(dd))


def _sammon_inputs(rng, n, q):
    P = _normal(rng, n, 4)
    D = np.sqrt(((P[:, None] - P[None]) ** 2).sum(axis=2))
    return dict(Y=_normal(rng, n, q), D=D)


# ------------------------------------------------------------ image processing
def hist_eq_ref(img, ctr, wd, tgt):
    a = np.exp(-(img[:, None] - ctr[None, :]) ** 2 / (2 * wd ** 2))
    a = a / a.sum(axis=1, keepdims=True)
    h = a.sum(axis=0) / len(img)
    cdf = np.cumsum(h)
    return float(np.sum((a @ cdf - tgt) ** 2))


def _hist_eq_inputs(rng, P, B):
    img = rng.random(P) ** 2
    return dict(img=img, ctr=np.linspace(0.0, 1.0, B), wd=0.12, tgt=np.sqrt(img))


# ------------------------------------------------------------ biomedical signals
def unet1d_ref(x, k1, k2, k3, a, tgt):
    n = len(x)
    def conv3(v, k):
        m = len(v)
        out = np.zeros(m)
        for i in range(m):
            for t in range(3):
                if 0 <= i + t - 1 < m:
                    out[i] += k[t] * v[i + t - 1]
        return out
    e1 = np.tanh(conv3(x, k1))
    d1 = 0.5 * (e1[0::2] + e1[1::2])
    e2 = np.tanh(conv3(d1, k2))
    d2 = 0.5 * (e2[0::2] + e2[1::2])
    u2 = np.repeat(d2, 2)
    m2 = e2 + a * u2
    u1 = np.repeat(m2, 2)
    out = conv3(e1 + u1, k3)
    return float(np.sum((out - tgt) ** 2) / n)


def _unet1d_inputs(rng, n):
    tt = np.arange(n)
    clean = np.sin(tt * 0.7) + (tt % 8 == 3) * 2.0
    return dict(x=clean + 0.3 * _normal(rng, n), k1=np.array([0.3, 0.5, 0.2]) + 0.1 * _normal(rng, 3),
                k2=np.array([0.2, 0.6, 0.2]) + 0.1 * _normal(rng, 3), k3=np.array([0.25, 0.5, 0.25]),
                a=0.5, tgt=clean)


PROGRAMS = {
    # ------------------------------------------------------------ transformer layers
    "rmsnorm_swiglu": dict(src="""
# RMS normalisation with a learned gain, as a function used twice
def rmsnorm(x: f64[b, d], g: f64[d]) -> f64[b, d]:
    r[s] = sqrt(sum[j](x[s, j] ** 2) / d + 1e-6)
    y[s, j] = g[j] * x[s, j] / r[s]
    return y

# a pre-norm SwiGLU feed-forward block with a residual, then the final norm, fitted
# to targets
def rmsnorm_swiglu(x: f64[b, d], g: f64[d], W1: f64[d, f], W3: f64[d, f], W2: f64[f, d], tg: f64[b, d]) -> f64:
    h = rmsnorm(x, g)
    a[s, k] = sum[j](h[s, j] * W1[j, k])
    v[s, k] = sum[j](h[s, j] * W3[j, k])
    o[s, j] = x[s, j] + sum[k](a[s, k] * sigmoid(a[s, k]) * v[s, k] * W2[k, j])
    on = rmsnorm(o, g)
    return sum[s, j]((on[s, j] - tg[s, j]) ** 2) / b
""", sizes=dict(b=3, d=4, f=5), make=_rmsnorm_swiglu_inputs,
        ref=rmsnorm_swiglu_ref, note="a function called twice on different tensors"),

    "group_norm": dict(src="""
# group normalisation of activations laid out as (batch, group, channel in group,
# position), a GELU (sigmoid form), a pooled linear read-out and a logistic loss
def group_norm(x: f64[b, G, K, P], gam: f64[G, K], bet: f64[G, K], w: f64[G, K], y: f64[b]) -> f64:
    mu[s, g] = sum[k, p](x[s, g, k, p]) / (K * P)
    var[s, g] = sum[k, p]((x[s, g, k, p] - mu[s, g]) ** 2) / (K * P)
    z[s, g, k, p] = gam[g, k] * (x[s, g, k, p] - mu[s, g]) / sqrt(var[s, g] + 1e-5) + bet[g, k]
    f[s] = sum[g, k, p](w[g, k] * z[s, g, k, p] * sigmoid(1.702 * z[s, g, k, p])) / P
    return sum[s](softplus(f[s]) - y[s] * f[s]) / b
""", sizes=dict(b=2, G=2, K=3, P=4), make=_group_norm_inputs,
        ref=group_norm_ref, note="a product of two sizes as a value"),

    "gqa": dict(src="""
# grouped-query causal self-attention: H query heads share G key/value heads, query
# head h reading key/value head kv[h]; the output projection summed over heads
def gqa(X: f64[n, d], Wq: f64[H, d, e], Wk: f64[G, d, e], Wv: f64[G, d, e], kv: i64[H], Wo: f64[H, e, d], Y: f64[n, d]) -> f64:
    Q[h, i, a] = sum[c](X[i, c] * Wq[h, c, a])
    K[g, j, a] = sum[c](X[j, c] * Wk[g, c, a])
    V[g, j, a] = sum[c](X[j, c] * Wv[g, c, a])
    S[h, i, j] = sum[a](Q[h, i, a] * K[kv[h], j, a]) / sqrt(e)
    L[h, i] = logsumexp[j | j <= i](S[h, i, j])
    O[h, i, a] = sum[j | j <= i](exp(S[h, i, j] - L[h, i]) * V[kv[h], j, a])
    Z[i, c] = sum[h, a](O[h, i, a] * Wo[h, a, c])
    return sum[i, c]((Z[i, c] - Y[i, c]) ** 2) / n
""", sizes=dict(n=4, d=3, e=2, H=4, G=2), make=_gqa_inputs,
        ref=gqa_ref, note="gathers of a head table inside a filtered logsumexp"),

    # ------------------------------------------------------------ generative models
    "planar_flow": dict(src="""
# variational inference with K planar flows z' = z + u tanh(w . z + b) on a diagonal
# Gaussian base (reparameterised by eps), towards a two-component Gaussian target; the
# log-determinant of layer k reads the pre-activation a of layer k + 1 of the recurrence
def planar_flow(eps: f64[S, D], mu: f64[D], ls: f64[D], U: f64[K, D], W: f64[K, D], bb: f64[K], m1: f64[D], m2: f64[D]) -> f64:
    z[k: K + 1, s: S, i: D] = ([k == 0] * (mu[i] + exp(ls[i]) * eps[s, i])
                               + [k >= 1] * (z[k - 1, s, i] + U[k - 1, i] * tanh(a[k, s])))
    a[k: K + 1, s: S] = [k >= 1] * (sum[j](W[k - 1, j] * z[k - 1, s, j]) + bb[k - 1])
    ld[k: K, s: S] = log(abs(1.0 + (1.0 - tanh(a[k + 1, s]) ** 2) * sum[j](U[k, j] * W[k, j])))
    lp[s] = logsumexp[c: 2](-0.5 * sum[i]([c == 0] * (z[K, s, i] - m1[i]) ** 2 + [c == 1] * (z[K, s, i] - m2[i]) ** 2))
    lq0 = -sum[i](ls[i]) - 0.5 * sum[s, i](eps[s, i] ** 2) / S
    return lq0 - sum[k, s](ld[k, s]) / S - sum[s](lp[s]) / S
""", sizes=dict(S=4, D=2, K=3), make=_planar_flow_inputs,
        ref=planar_flow_ref, note="a recurrence over layers of K + 1 and a reader over K"),

    "realnvp": dict(src="""
# two RealNVP affine couplings with checkerboard masks (even coordinates condition the
# odd ones, then the other way), the negative log-likelihood under a standard normal
# up to its constant
def realnvp(X: f64[n, D], Ws1: f64[D, D], Wt1: f64[D, D], Ws2: f64[D, D], Wt2: f64[D, D]) -> f64:
    s1[i, d] = [d % 2 != 0] * tanh(sum[e]([e % 2 == 0] * Ws1[d, e] * X[i, e]))
    t1[i, d] = [d % 2 != 0] * sum[e]([e % 2 == 0] * Wt1[d, e] * X[i, e])
    Y1[i, d] = X[i, d] * exp(s1[i, d]) + t1[i, d]
    s2[i, d] = [d % 2 == 0] * tanh(sum[e]([e % 2 != 0] * Ws2[d, e] * Y1[i, e]))
    t2[i, d] = [d % 2 == 0] * sum[e]([e % 2 != 0] * Wt2[d, e] * Y1[i, e])
    Y2[i, d] = Y1[i, d] * exp(s2[i, d]) + t2[i, d]
    return sum[i, d](0.5 * Y2[i, d] ** 2 - s1[i, d] - s2[i, d]) / n
""", sizes=dict(n=3, D=4), make=_realnvp_inputs,
        ref=realnvp_ref, note="divisibility brackets on output and summed indices"),

    "ddpm": dict(src="""
# the DDPM training loss: a learned noise schedule beta in (0, 0.2), the cumulative
# product of 1 - beta as a recurrence, noised samples at sampled steps ts, and a
# one-hidden-layer noise predictor with a learned time-step embedding
def ddpm(x0: f64[b, d], noise: f64[b, d], ts: i64[b], lbeta: f64[T], E: f64[T, h], W1: f64[d, h], W2: f64[h, d]) -> f64:
    beta[t] = 0.2 * sigmoid(lbeta[t])
    ab[t: T] = [t == 0] * (1.0 - beta[0]) + [t >= 1] * ab[t - 1] * (1.0 - beta[t])
    xt[s, j] = sqrt(ab[ts[s]]) * x0[s, j] + sqrt(1.0 - ab[ts[s]]) * noise[s, j]
    hid[s, k] = tanh(sum[j](xt[s, j] * W1[j, k]) + E[ts[s], k])
    return sum[s, j]((sum[k](hid[s, k] * W2[k, j]) - noise[s, j]) ** 2) / b
""", sizes=dict(b=4, d=3, T=5, h=4), make=_ddpm_inputs,
        ref=ddpm_ref, note="a recurrence's result gathered at labels"),

    # ------------------------------------------------------------ reinforcement learning
    "vtrace": dict(src="""
# V-trace (IMPALA): truncated importance weights rho = min(pi / mu, rbar) and
# c = min(pi / mu, cbar) of the actions taken, the corrections dl[t] = v_s - V[t] as a
# backward recurrence, a value loss and the policy-gradient surrogate
def vtrace(lp: f64[T, A], lmu: f64[T], act: i64[T], r: f64[T], V: f64[T + 1], g: f64, rbar: f64, cbar: f64) -> f64:
    lpi[t] = lp[t, act[t]] - logsumexp[a](lp[t, a])
    rho[t] = min(exp(lpi[t] - lmu[t]), rbar)
    c[t] = min(exp(lpi[t] - lmu[t]), cbar)
    dl[t: T] = rho[t] * (r[t] + g * V[t + 1] - V[t]) + [t + 1 < T] * g * c[t] * dl[t + 1]
    adv[t: T] = r[t] + g * (V[t + 1] + [t + 1 < T] * dl[t + 1]) - V[t]
    return 0.5 * sum[t](dl[t] ** 2) - sum[t](rho[t] * lpi[t] * adv[t])
""", sizes=dict(T=6, A=3), make=_vtrace_inputs,
        ref=vtrace_ref, note="a backward recurrence with min kinks; V over T + 1"),

    # ------------------------------------------------------------ actuarial science
    "chain_ladder": dict(src="""
# the chain-ladder reserve: C[i, j] are the cumulative claims of accident year i after
# j development years, known where i + j < n; development factors are ratios of
# column sums over the rows known in both columns; the lower-right triangle is
# projected by a recurrence along j; the reserve is the projected ultimate minus the
# latest diagonal, weighted per year
def chain_ladder(C: f64[n, n], w: f64[n]) -> f64:
    num[j: n] = [j >= 1] * sum[i]([i + j < n] * C[i, j])
    den[j: n] = [j >= 1] * sum[i]([i + j < n] * C[i, j - 1])
    P[i: n, j: n] = [i + j < n] * C[i, j] + [i + j >= n] * P[i, j - 1] * num[j] / den[j]
    return sum[i](w[i] * (P[i, n - 1] - C[i, n - 1 - i]))
""", sizes=dict(n=5), make=_chain_ladder_inputs,
        ref=chain_ladder_ref, note="0/0 at j = 0 under a bracket false there"),

    # ------------------------------------------------------------ information retrieval
    "bm25": dict(src="""
# BM25 scores of D documents (token labels, -1 pads) for R queries of Q terms, with k1,
# b and a softmax temperature learned from one relevant document per query
def bm25(tok: i64[D, L], q: i64[R, Q], rel: i64[R], lk1: f64, lb: f64, ltau: f64) -> f64:
    k1 = exp(lk1)
    bb = sigmoid(lb)
    dl[d] = sum[p]([tok[d, p] >= 0])
    avg = sum[d](dl[d]) / D
    tf[r, d, u] = sum[p]([tok[d, p] == q[r, u]])
    df[r, u] = sum[d]([tf[r, d, u] > 0.5])
    idf[r, u] = log((D - df[r, u] + 0.5) / (df[r, u] + 0.5) + 1.0)
    sc[r, d] = exp(ltau) * sum[u](idf[r, u] * tf[r, d, u] * (k1 + 1.0) / (tf[r, d, u] + k1 * (1.0 - bb + bb * dl[d] / avg)))
    return sum[r](logsumexp[d](sc[r, d]) - sc[r, rel[r]]) / R
""", sizes=dict(D=5, L=6, R=2, Q=3), make=_bm25_inputs,
        ref=bm25_ref, note="labels compared with labels; value brackets on counts"),

    # ------------------------------------------------------------ graphs
    "modularity": dict(src="""
# soft community detection: softmax memberships S maximise Newman's modularity of a
# weighted graph, with an entropy penalty
def modularity(A: f64[n, n], Z: f64[n, C], lam: f64) -> f64:
    k[i] = sum[j](A[i, j])
    m2 = sum[i](k[i])
    S[i, c] = exp(Z[i, c] - logsumexp[e](Z[i, e]))
    Q = sum[i, j, c]((A[i, j] - k[i] * k[j] / m2) * S[i, c] * S[j, c]) / m2
    return -Q - lam * sum[i, c](S[i, c] * log(S[i, c])) / n
""", sizes=dict(n=5, C=3), make=_modularity_inputs,
        ref=modularity_ref, note="a three-index sum whose rank-one part factors"),

    # ------------------------------------------------------------ plasma physics
    "boris": dict(src="""
# the Boris pusher for a charged particle in time-varying E and B fields: half an
# electric kick, a magnetic rotation by two cross products (through the Levi-Civita
# tensor eps), the other half kick, then the drift; the miss distance of the final
# position plus a little kinetic energy
def boris(x0: f64[3], v0: f64[3], Ef: f64[T, 3], Bf: f64[T, 3], eps: f64[3, 3, 3], qm: f64, dt: f64, target: f64[3]) -> f64:
    hq = 0.5 * qm * dt
    tt[t, i] = hq * Bf[t, i]
    ss[t, i] = 2.0 * tt[t, i] / (1.0 + sum[j](tt[t, j] ** 2))
    vm[t: T, i: 3] = [t == 0] * v0[i] + [t >= 1] * v[t - 1, i] + hq * Ef[t, i]
    vq[t: T, i: 3] = vm[t, i] + sum[j, k](eps[i, j, k] * vm[t, j] * tt[t, k])
    v[t: T, i: 3] = vm[t, i] + sum[j, k](eps[i, j, k] * vq[t, j] * ss[t, k]) + hq * Ef[t, i]
    x[t: T, i: 3] = [t == 0] * x0[i] + [t >= 1] * x[t - 1, i] + dt * v[t, i]
    return sum[i]((x[T - 1, i] - target[i]) ** 2) + 0.01 * sum[i](v[T - 1, i] ** 2)
""", sizes=dict(T=5), make=_boris_inputs,
        ref=boris_ref, note="a four-member group with offset-0 reads in order"),

    # ------------------------------------------------------------ mechanics
    "plasticity": dict(src="""
# 1-D elastoplasticity with linear isotropic hardening under a strain history: the
# elastic trial stress, the yield function, the plastic multiplier by a max, the
# plastic strain and hardening variable carried as a recurrence, the return-mapped
# stress fitted to measurements (E = exp(lE), yield stress sy, hardening modulus Hh)
def plasticity(eps: f64[T], sig_obs: f64[T], lE: f64, sy: f64, Hh: f64) -> f64:
    E = exp(lE)
    st[t: T] = E * (eps[t] - [t >= 1] * ep[t - 1])
    fy[t: T] = abs(st[t]) - sy - [t >= 1] * Hh * al[t - 1]
    dg[t: T] = max(fy[t], 0.0) / (E + Hh)
    ep[t: T] = [t >= 1] * ep[t - 1] + dg[t] * ([st[t] > 0.0] - [st[t] < 0.0])
    al[t: T] = [t >= 1] * al[t - 1] + dg[t]
    sg[t] = st[t] - E * dg[t] * ([st[t] > 0.0] - [st[t] < 0.0])
    return sum[t]((sg[t] - sig_obs[t]) ** 2)
""", sizes=dict(T=10), make=_plasticity_inputs,
        ref=plasticity_ref, note="a sign of brackets and a max kink in a recurrence"),

    # ------------------------------------------------------------ hydrology
    "muskingum": dict(src="""
# Muskingum routing of a flood hydrograph through R reaches in series, each with its
# storage constant K = exp(lK) and weight X = sigmoid(xr) / 2; reach r's inflow is reach
# r - 1's outflow at the same step; each reach starts in steady state
def muskingum(inflow: f64[T], lK: f64[R], xr: f64[R], dt: f64, obs: f64[T]) -> f64:
    K[r] = exp(lK[r])
    X[r] = 0.5 * sigmoid(xr[r])
    den[r] = 2.0 * K[r] * (1.0 - X[r]) + dt
    c0[r] = (dt - 2.0 * K[r] * X[r]) / den[r]
    c1[r] = (dt + 2.0 * K[r] * X[r]) / den[r]
    c2[r] = (2.0 * K[r] * (1.0 - X[r]) - dt) / den[r]
    I[t: T, r: R] = [r == 0] * inflow[t] + [r >= 1] * O[t, r - 1]
    O[t: T, r: R] = [t == 0] * I[t, r] + [t >= 1] * (c0[r] * I[t, r] + c1[r] * I[t - 1, r] + c2[r] * O[t - 1, r])
    return sum[t]((O[t, R - 1] - obs[t]) ** 2)
""", sizes=dict(T=8, R=3), make=_muskingum_inputs,
        ref=muskingum_ref, note="a two-index group stepping back along both"),

    # ------------------------------------------------------------ queueing
    "erlang_b": dict(src="""
# Erlang B blocking probabilities of C call centres with offered loads a = exp(la) by
# the recursion B(k) = a B(k - 1) / (k + a B(k - 1)), kk[k] = k; the cost of each centre
# at its capacity label: the lost traffic a B(cap) and the servers
def erlang_b(la: f64[C], kk: f64[K], cap: i64[C], cost: f64[C], pen: f64) -> f64:
    a[c] = exp(la[c])
    B[c: C, k: K] = [k == 0] + [k >= 1] * a[c] * B[c, k - 1] / (kk[k] + a[c] * B[c, k - 1])
    return sum[c](pen * a[c] * B[c, cap[c]] + cost[c] * kk[cap[c]])
""", sizes=dict(C=3, K=8), make=_erlang_b_inputs,
        ref=erlang_b_ref, note="a recurrence along its second index, gathered at labels"),

    # ------------------------------------------------------------ revenue management
    "revenue_dp": dict(src="""
# single-leg airline revenue management: V[t, x] is the expected revenue from period
# t on with x seats left; in each period a request of fare class f arrives with
# probability lam[t, f] and is accepted when its fare beats the seat's marginal value;
# unsold seats are salvaged at sal[x]
def revenue_dp(lam: f64[T, F], pr: f64[F], sal: f64[X]) -> f64:
    V[t: T + 1, x: X] = [t == T] * sal[x] + [t < T] * (V[t + 1, x]
        + [x >= 1] * sum[f](lam[t, f] * max(pr[f] - (V[t + 1, x] - V[t + 1, x - 1]), 0.0)))
    return V[0, X - 1]
""", sizes=dict(T=6, F=3, X=4), make=_revenue_dp_inputs,
        ref=revenue_dp_ref, note="a backward recurrence over T + 1 steps with a max kink"),

    # ------------------------------------------------------------ portfolio risk
    "drawdown": dict(src="""
# a long-only portfolio (softmax weights) of assets with log-returns R: the running
# peak of log wealth as a max recurrence, the maximum drawdown, and the Sortino ratio
# over the minimum acceptable return mar
def drawdown(R: f64[T, A], w: f64[A], mar: f64, lam: f64) -> f64:
    p[a] = exp(w[a] - logsumexp[c](w[c]))
    r[t] = sum[a](p[a] * R[t, a])
    lv[t: T] = r[t] + [t >= 1] * lv[t - 1]
    pk[t: T] = [t == 0] * max(lv[0], 0.0) + [t >= 1] * max(pk[t - 1], lv[t])
    dd = max[t](pk[t] - lv[t])
    down = sqrt(sum[t]([r[t] < mar] * (r[t] - mar) ** 2) / T)
    return -(sum[t](r[t]) / T - mar) / down + lam * dd
""", sizes=dict(T=12, A=3), make=_drawdown_inputs,
        ref=drawdown_ref, note="a max recurrence then a hard max reduction"),

    # ------------------------------------------------------------ neuroscience
    "hh": dict(src="""
# a Hodgkin-Huxley-type neuron with Boltzmann gates m, h, n relaxing to their steady
# states, integrated by explicit Euler steps under an injected current; the log
# conductances of sodium, potassium and leak fitted to a voltage trace
def hh(I: f64[T], Vobs: f64[T], lg: f64[3], dt: f64, V0: f64) -> f64:
    gNa = exp(lg[0])
    gK = exp(lg[1])
    gL = exp(lg[2])
    m[t: T] = [t == 0] * sigmoid((V0 + 40.0) / 9.0) + [t >= 1] * (m[t - 1] + dt * (sigmoid((V[t - 1] + 40.0) / 9.0) - m[t - 1]) / 0.2)
    h[t: T] = [t == 0] * sigmoid(-(V0 + 62.0) / 7.0) + [t >= 1] * (h[t - 1] + dt * (sigmoid(-(V[t - 1] + 62.0) / 7.0) - h[t - 1]))
    nn[t: T] = [t == 0] * sigmoid((V0 + 53.0) / 15.0) + [t >= 1] * (nn[t - 1] + dt * (sigmoid((V[t - 1] + 53.0) / 15.0) - nn[t - 1]) / 2.0)
    V[t: T] = [t == 0] * V0 + [t >= 1] * (V[t - 1] + dt * (I[t] - gNa * m[t - 1] ** 3 * h[t - 1] * (V[t - 1] - 50.0)
                                                         - gK * nn[t - 1] ** 4 * (V[t - 1] + 77.0) - gL * (V[t - 1] + 54.4)))
    return sum[t]((V[t] - Vobs[t]) ** 2) / T
""", sizes=dict(T=16), make=_hh_inputs,
        ref=hh_ref, note="a four-member group with integer powers"),

    # ------------------------------------------------------------ macroeconomics
    "ramsey": dict(src="""
# a Ramsey-Cass-Koopmans path: saving rates s = sigmoid(sr) per period, Cobb-Douglas
# output A k ** alpha, capital accumulation with depreciation, discounted log
# consumption (the discount factor its own recurrence) and a terminal value of capital
def ramsey(sr: f64[T], k0: f64, lal: f64, delta: f64, beta: f64, A: f64[T]) -> f64:
    al = sigmoid(lal)
    s[t] = sigmoid(sr[t])
    y[t: T] = A[t] * k[t] ** al
    k[t: T] = [t == 0] * k0 + [t >= 1] * ((1.0 - delta) * k[t - 1] + s[t - 1] * y[t - 1])
    Dc[t: T] = [t == 0] + [t >= 1] * beta * Dc[t - 1]
    return -sum[t](Dc[t] * log((1.0 - s[t]) * y[t])) - Dc[T - 1] * beta / (1.0 - beta) * log(k[T - 1])
""", sizes=dict(T=8), make=_ramsey_inputs,
        ref=ramsey_ref, note="a parameter exponent inside a recurrence"),

    # ------------------------------------------------------------ colour science
    "delta_e": dict(src="""
# sRGB decoding: linear below 0.04045, a 2.4 power above
def srgb_lin(c: f64[n, 3]) -> f64[n, 3]:
    l[i, a] = [c[i, a] <= 0.04045] * c[i, a] / 12.92 + [c[i, a] > 0.04045] * ((c[i, a] + 0.055) / 1.055) ** 2.4
    return l

# CIE XYZ to CIELAB relative to the white point wp (a cube root above (6/29)^3, linear below)
def lab(X: f64[n, 3], wp: f64[3]) -> f64[n, 3]:
    ft[i, a] = ([X[i, a] / wp[a] > 0.008856451679035631] * (X[i, a] / wp[a]) ** (1.0 / 3.0)
                + [X[i, a] / wp[a] <= 0.008856451679035631] * (X[i, a] / wp[a] * 7.787037037037037 + 0.13793103448275862))
    L[i, b: 3] = [b == 0] * (116.0 * ft[i, 1] - 16.0) + [b == 1] * 500.0 * (ft[i, 0] - ft[i, 1]) + [b == 2] * 200.0 * (ft[i, 1] - ft[i, 2])
    return L

# a camera's colour-correction matrix M judged by the mean CIE76 Delta E of the
# corrected patches against their reference Lab values
def delta_e(raw: f64[n, 3], M: f64[3, 3], Mx: f64[3, 3], wp: f64[3], lt: f64[n, 3]) -> f64:
    lin = srgb_lin(raw)
    X[i, a] = sum[b, c](Mx[a, b] * M[b, c] * lin[i, c])
    L = lab(X, wp)
    return sum[i](sqrt(sum[a]((L[i, a] - lt[i, a]) ** 2))) / n
""", sizes=dict(n=8), make=_delta_e_inputs,
        ref=delta_e_ref, note="value brackets choose the branch; a NaN branch is zeroed"),

    # ------------------------------------------------------------ computer animation
    "skinning": dict(src="""
# linear blend skinning: each vertex is moved by J bones of a table bi, with softmax
# weights; bone b rotates about z by th[b] and translates by tr[b]
def skinning(V: f64[P, 3], bi: i64[P, J], wl: f64[P, J], th: f64[B], tr: f64[B, 3], tgt: f64[P, 3]) -> f64:
    R[b, c: 3, d: 3] = ([c == 0 and d == 0] * cos(th[b]) - [c == 0 and d == 1] * sin(th[b])
                        + [c == 1 and d == 0] * sin(th[b]) + [c == 1 and d == 1] * cos(th[b]) + [c == 2 and d == 2])
    w[p, j] = exp(wl[p, j] - logsumexp[k](wl[p, k]))
    X[p, c] = sum[j](w[p, j] * (sum[d](R[bi[p, j], c, d] * V[p, d]) + tr[bi[p, j], c]))
    return sum[p, c]((X[p, c] - tgt[p, c]) ** 2)
""", sizes=dict(P=5, J=2, B=3), make=_skinning_inputs,
        ref=skinning_ref, note="gathers through a two-column table; a bare bracket as a value"),

    # ------------------------------------------------------------ causal inference
    "aipw": dict(src="""
# the nuisance models: a logistic propensity and a linear outcome model per arm
def nuisances(X: f64[n, d], wp: f64[d], w1: f64[d], w0: f64[d]) -> (f64[n], f64[n], f64[n]):
    e[i] = sigmoid(sum[j](X[i, j] * wp[j]))
    m1[i] = sum[j](X[i, j] * w1[j])
    m0[i] = sum[j](X[i, j] * w0[j])
    return e, m1, m0

# the augmented inverse propensity weighted estimate of the average treatment effect
# (tr the treatment label), with the nuisances' fit: a loss whose minimiser fits the
# nuisances and pulls the estimate to zero
def aipw(X: f64[n, d], tr: i64[n], yo: f64[n], wp: f64[d], w1: f64[d], w0: f64[d]) -> f64:
    e, m1, m0 = nuisances(X, wp, w1, w0)
    fit = (-sum[i]([tr[i] == 1] * log(e[i]) + [tr[i] == 0] * log(1.0 - e[i]))
           + sum[i]([tr[i] == 1] * (yo[i] - m1[i]) ** 2 + [tr[i] == 0] * (yo[i] - m0[i]) ** 2))
    ate = sum[i](m1[i] - m0[i] + [tr[i] == 1] * (yo[i] - m1[i]) / e[i] - [tr[i] == 0] * (yo[i] - m0[i]) / (1.0 - e[i])) / n
    return fit / n + ate ** 2
""", sizes=dict(n=10, d=3), make=_aipw_inputs,
        ref=aipw_ref, note="three results taken apart; label brackets"),

    # ------------------------------------------------------------ language modelling
    "bigram": dict(src="""
# an interpolated bigram language model: bigram counts of a training text by label
# comparisons, add-alpha smoothing towards a learned unigram distribution, mixed with
# it by lam; the per-token negative log-likelihood of a test text
def bigram(tr: i64[N], te: i64[M], lal: f64, lmix: f64, u: f64[V]) -> f64:
    cnt[a: V, b: V] = sum[t | t >= 1]([tr[t - 1] == a and tr[t] == b])
    ctx[a] = sum[b](cnt[a, b])
    pu[b] = exp(u[b] - logsumexp[c](u[c]))
    al = exp(lal)
    lam = sigmoid(lmix)
    lp[t: M] = [t >= 1] * log(lam * (cnt[te[t - 1], te[t]] + al * pu[te[t]]) / (ctx[te[t - 1]] + al) + (1.0 - lam) * pu[te[t]])
    return -sum[t](lp[t]) / (M - 1)
""", sizes=dict(N=20, M=8, V=4), make=_bigram_inputs,
        ref=bigram_ref, note="a gather at a label one step back, under a guard"),

    # ------------------------------------------------------------ astronomy
    "transit": dict(src="""
# a planetary transit: the sky-projected separation z (in stellar radii) on a circular
# orbit of period exp(lP), semi-major axis exp(la) and impact parameter b; the
# blocked flux of a small planet of radius ratio exp(lk) under quadratic limb
# darkening, with a soft edge of width w and only on the near side of the orbit
def transit(tt: f64[n], flux: f64[n], t0: f64, lP: f64, la: f64, b: f64, lk: f64, u1: f64, u2: f64, w: f64) -> f64:
    ph[i] = 6.283185307179586 * (tt[i] - t0) / exp(lP)
    z[i] = sqrt(exp(2.0 * la) * sin(ph[i]) ** 2 + b ** 2 * cos(ph[i]) ** 2)
    mu[i] = sqrt(max(1.0 - z[i] ** 2, 0.0) + 1e-9)
    Iz[i] = 1.0 - u1 * (1.0 - mu[i]) - u2 * (1.0 - mu[i]) ** 2
    model[i] = 1.0 - exp(2.0 * lk) * Iz[i] / (1.0 - u1 / 3.0 - u2 / 6.0) * sigmoid((1.0 - z[i]) / w) * [cos(ph[i]) > 0.0]
    return 1e4 * sum[i]((model[i] - flux[i]) ** 2)
""", sizes=dict(n=16), make=_transit_inputs,
        ref=transit_ref, note="a max kink under a sqrt, a value bracket on a cosine"),

    # ------------------------------------------------------------ electromagnetics
    "fdtd": dict(src="""
# a 1-D FDTD (Yee) scheme: H on the half cells from E's forward differences, then E
# from H's backward differences divided by the permittivity exp(leps); a soft source at
# cell s0[0]; the field at the probe cell pr[0] fitted to a recording
def fdtd(src: f64[T], leps: f64[n], c: f64, probe: f64[T], s0: i64[1], pr: i64[1]) -> f64:
    H[t: T, i: n] = [t >= 1] * (H[t - 1, i] + c * ([i + 1 < n] * E[t - 1, i + 1] - E[t - 1, i]))
    E[t: T, i: n] = [t >= 1] * (E[t - 1, i] + c * exp(-leps[i]) * (H[t, i] - [i >= 1] * H[t, i - 1])) + [i == s0[0]] * src[t]
    return sum[t]((E[t, pr[0]] - probe[t]) ** 2)
""", sizes=dict(T=8, n=6), make=_fdtd_inputs,
        ref=fdtd_ref, note="a group whose members read each other at the same step"),

    # ------------------------------------------------------------ climate
    "ebm": dict(src="""
# a Budyko-Sellers energy balance model on J latitude bands: absorbed sunlight with an
# albedo that falls smoothly from a_ice to a_free around -10 C, outgoing longwave
# A + B T, and diffusion between neighbouring bands (no flux past the poles); S steps
# of forward Euler, the last state fitted to observations weighted by band area
def ebm(Q: f64[J], lat_w: f64[J], T0: f64[J], Tobs: f64[J], A: f64, B: f64, lD: f64, a_ice: f64, a_free: f64, dt: f64, steps: f64[S]) -> f64:
    al[s: S, j: J] = a_ice + (a_free - a_ice) * sigmoid((Tm[s, j] + 10.0) / 2.0)
    Tm[s: S, j: J] = [s == 0] * T0[j] + [s >= 1] * (Tm[s - 1, j] + dt * (Q[j] * (1.0 - al[s - 1, j]) - A - B * Tm[s - 1, j]
        + exp(lD) * ([j >= 1] * (Tm[s - 1, j - 1] - Tm[s - 1, j]) + [j + 1 < J] * (Tm[s - 1, j + 1] - Tm[s - 1, j]))))
    return sum[j](lat_w[j] * (Tm[S - 1, j] - Tobs[j]) ** 2)
""", sizes=dict(J=6, S=6), make=_ebm_inputs,
        ref=ebm_ref, note="a size bound by a dummy parameter; a diagnostic read at offset 0"),

    "advect": dict(src="""
# a tracer on a periodic 1-D ring advected by a bounded wind tanh(uw) with first-order
# upwinding (the upwind side chosen by a value bracket on the wind) and diffused
def advect(c0: f64[n], uw: f64[n], kap: f64, dt: f64, obs: f64[n], steps: f64[T]) -> f64:
    u[i] = tanh(uw[i])
    C[t: T, i: n] = [t == 0] * c0[i] + [t >= 1] * (C[t - 1, i]
        - dt * [u[i] > 0.0] * u[i] * (C[t - 1, i] - [i >= 1] * C[t - 1, i - 1] - [i == 0] * C[t - 1, n - 1])
        - dt * [u[i] <= 0.0] * u[i] * ([i + 1 < n] * C[t - 1, i + 1] + [i == n - 1] * C[t - 1, 0] - C[t - 1, i])
        + dt * kap * ([i >= 1] * C[t - 1, i - 1] + [i == 0] * C[t - 1, n - 1] - 2.0 * C[t - 1, i]
                      + [i + 1 < n] * C[t - 1, i + 1] + [i == n - 1] * C[t - 1, 0]))
    return sum[i]((C[T - 1, i] - obs[i]) ** 2)
""", sizes=dict(n=7, T=5), make=_advect_inputs,
        ref=advect_ref, note="periodic wrap by brackets at both ends"),

    # ------------------------------------------------------------ fisheries
    "schaefer": dict(src="""
# the Schaefer surplus-production model: logistic growth of biomass less the catch,
# floored at 1 % of the carrying capacity; a lognormal abundance index with
# catchability exp(lq)
def schaefer(Cat: f64[T], Iobs: f64[T], lr: f64, lK: f64, lq: f64, lsig: f64, p0: f64) -> f64:
    r = exp(lr)
    K = exp(lK)
    Bm[t: T] = [t == 0] * p0 * K + [t >= 1] * max(Bm[t - 1] + r * Bm[t - 1] * (1.0 - Bm[t - 1] / K) - Cat[t - 1], 0.01 * K)
    res[t] = log(Iobs[t]) - lq - log(Bm[t])
    return sum[t](res[t] ** 2) / (2.0 * exp(2.0 * lsig)) + T * lsig
""", sizes=dict(T=10), make=_schaefer_inputs,
        ref=schaefer_ref, note="a max floor inside a recurrence; a size as a value"),

    # ------------------------------------------------------------ statistics
    "clayton": dict(src="""
# Clayton copulas on P pairs of columns (pa[p], pb[p]) of pseudo-observations U, one
# parameter theta = exp(lt) per pair: the negative mean log copula density
def clayton(U: f64[n, d], pa: i64[P], pb: i64[P], lt: f64[P]) -> f64:
    th[p] = exp(lt[p])
    s[i, p] = U[i, pa[p]] ** (-th[p]) + U[i, pb[p]] ** (-th[p]) - 1.0
    return -sum[i, p](log(1.0 + th[p]) - (1.0 + th[p]) * (log(U[i, pa[p]]) + log(U[i, pb[p]]))
                      - (2.0 + 1.0 / th[p]) * log(s[i, p])) / n
""", sizes=dict(n=6, d=3, P=4), make=_clayton_inputs,
        ref=clayton_ref, note="gathered bases under parameter exponents"),

    "dirmult": dict(src="""
# Dirichlet-multinomial regression: concentrations exp(X Bc); the ratios of Gamma
# functions Gamma(a + c) / Gamma(a) as sums of log(a + k) over k < c, bounded by the
# count labels (kk[k] = k, K above every total)
def dirmult(cnt: i64[N, C], kk: f64[K], X: f64[N, d], Bc: f64[d, C], tot: i64[N]) -> f64:
    al[i, c] = exp(sum[j](X[i, j] * Bc[j, c]))
    A[i] = sum[c](al[i, c])
    lnum[i] = sum[c, k]([k < cnt[i, c]] * log(al[i, c] + kk[k]))
    lden[i] = sum[k]([k < tot[i]] * log(A[i] + kk[k]))
    return -sum[i](lnum[i] - lden[i]) / N
""", sizes=dict(N=4, C=3, K=7, d=2), make=_dirmult_inputs,
        ref=dirmult_ref, note="index compared with labels bounds a sum"),

    # ------------------------------------------------------------ sparse linear algebra
    "coo_jacobi": dict(src="""
# Jacobi sweeps x <- (b - (A - D) x) / D on a matrix whose off-diagonal entries are a
# coordinate list (row, col, val) and whose diagonal is dg; the previous iterate is
# read through the column labels
def coo_jacobi(row: i64[E], col: i64[E], val: f64[E], dg: f64[n], b: f64[n], xs: f64[n], steps: f64[T]) -> f64:
    x[t: T, i: n] = [t == 0] * b[i] / dg[i] + [t >= 1] * (b[i] - sum[e]([row[e] == i] * val[e] * x[t - 1, col[e]])) / dg[i]
    return sum[i]((x[T - 1, i] - xs[i]) ** 2)
""", sizes=dict(n=5, E=9, T=4), make=_coo_jacobi_inputs,
        ref=coo_jacobi_ref, note="a gather of the previous step at a free index"),

    # ------------------------------------------------------------ robotics
    "quadrotor": dict(src="""
# a planar quadrotor (x, z, pitch and their rates) under thrust u1 and torque u2,
# explicit Euler steps; each component of the state picked by a bracket on k; the
# terminal miss and the control effort
def quadrotor(u1: f64[T], u2: f64[T], s0: f64[6], m: f64, Iz: f64, dt: f64, goal: f64[6]) -> f64:
    s[t: T, k: 6] = [t == 0] * s0[k] + [t >= 1] * (s[t - 1, k] + dt * ([k == 0] * s[t - 1, 3] + [k == 1] * s[t - 1, 4]
        + [k == 2] * s[t - 1, 5] - [k == 3] * u1[t - 1] / m * sin(s[t - 1, 2])
        + [k == 4] * (u1[t - 1] / m * cos(s[t - 1, 2]) - 9.81) + [k == 5] * u2[t - 1] / Iz))
    return sum[k]((s[T - 1, k] - goal[k]) ** 2) + 0.001 * sum[t](u1[t] ** 2 + u2[t] ** 2)
""", sizes=dict(T=8), make=_quadrotor_inputs,
        ref=quadrotor_ref, note="reads of constant components of the previous state"),

    # ------------------------------------------------------------ metric learning
    "arcface": dict(src="""
# ArcFace: cosine logits between normalised embeddings and class weights, the target
# class's angle increased by a margin mg, cos(theta + mg) = cos cos(mg) - sin sin(mg)
def arcface(X: f64[b, d], W: f64[C, d], y: i64[b], sc: f64, mg: f64) -> f64:
    xn[s] = sqrt(sum[j](X[s, j] ** 2))
    wn[c] = sqrt(sum[j](W[c, j] ** 2))
    cs[s, c] = sum[j](X[s, j] * W[c, j]) / (xn[s] * wn[c])
    lg[s, c] = sc * ([c != y[s]] * cs[s, c] + [c == y[s]] * (cs[s, c] * cos(mg) - sqrt(1.0 - cs[s, c] ** 2) * sin(mg)))
    return sum[s](logsumexp[c](lg[s, c]) - lg[s, y[s]]) / b
""", sizes=dict(b=4, d=3, C=5), make=_arcface_inputs,
        ref=arcface_ref, note="a label bracket choosing the margin's entry"),

    # ------------------------------------------------------------ self-supervised learning
    "nt_xent": dict(src="""
# SimCLR's NT-Xent loss: the two views of B examples stacked into 2 B rows, cosine
# similarities at temperature tau, each row's positive the other view of its example,
# its negatives every other row
def nt_xent(Z1: f64[B, d], Z2: f64[B, d], tau: f64) -> f64:
    Z[i: 2 * B, c: d] = [i < B] * Z1[i, c] + [i >= B] * Z2[i - B, c]
    nr[i] = sqrt(sum[c](Z[i, c] ** 2))
    S[i, j] = sum[c](Z[i, c] * Z[j, c]) / (nr[i] * nr[j] * tau)
    pos[i: 2 * B] = [i < B] * S[i, i + B] + [i >= B] * S[i, i - B]
    return sum[i](logsumexp[j | j != i](S[i, j]) - pos[i]) / (2 * B)
""", sizes=dict(B=3, d=4), make=_nt_xent_inputs,
        ref=nt_xent_ref, note="a range 2 * B; a filter j != i in a logsumexp"),

    # ------------------------------------------------------------ image editing
    "seam": dict(src="""
# seam carving made soft: the gradient-magnitude energy of an image, the cumulative
# minimal energy of a vertical seam by a soft minimum (temperature g) over the three
# pixels above, fewer at the borders, and the soft minimum over the last row
def seam(img: f64[h, w], g: f64) -> f64:
    gx[r: h, c: w] = [c >= 1 and c + 1 < w] * (img[r, c + 1] - img[r, c - 1])
    gy[r: h, c: w] = [r >= 1 and r + 1 < h] * (img[r + 1, c] - img[r - 1, c])
    E[r, c] = sqrt(gx[r, c] ** 2 + gy[r, c] ** 2 + 1e-6)
    M[r: h, c: w] = E[r, c] + [r >= 1] * -g * logsumexp[k: 3 | 0 <= c + k - 1 < w](-M[r - 1, c + k - 1] / g)
    return -g * logsumexp[c](-M[h - 1, c] / g)
""", sizes=dict(h=4, w=5), make=_seam_inputs,
        ref=seam_ref, note="a filtered logsumexp over neighbours one row back"),

    # ------------------------------------------------------------ Gaussian processes
    "lu_gp": dict(src="""
# the negative log marginal likelihood of a GP with a squared-exponential kernel
# (up to its constant) by Gaussian elimination without pivoting on K augmented with y:
# U[k] has the first k columns eliminated; then K = L D L' with D the pivots, log det K
# is the sum of their logs and y' inv(K) y = sum of c[k] ** 2 / D[k], c the
# eliminated last column
def lu_gp(x: f64[n], y: f64[n], ll: f64, lsf: f64, lsn: f64) -> f64:
    K[i, j] = exp(2.0 * lsf - 0.5 * (x[i] - x[j]) ** 2 / exp(2.0 * ll)) + [i == j] * exp(2.0 * lsn)
    Aug[i: n, j: n + 1] = [j < n] * K[i, j] + [j == n] * y[i]
    U[k: n, i: n, j: n + 1] = [k == 0] * Aug[i, j] + [k >= 1] * (U[k - 1, i, j]
        - [i >= k] * U[k - 1, i, k - 1] * U[k - 1, k - 1, j] / U[k - 1, k - 1, k - 1])
    return 0.5 * sum[k: n](U[n - 1, k, n] ** 2 / U[n - 1, k, k]) + 0.5 * sum[k: n](log(U[n - 1, k, k]))
""", sizes=dict(n=5), make=_lu_gp_inputs,
        ref=lu_gp_ref, note="a recurrence carrying a whole matrix, reading its pivot column"),

    # ------------------------------------------------------------ array signal processing
    "beamform": dict(src="""
# a delay-and-sum beamformer: microphone m is delayed by dl[m] whole samples (zero
# before the recording starts) and weighted by w[m]; the sum is fitted to a target
def beamform(x: f64[M, T], dl: i64[M], w: f64[M], tgt: f64[T]) -> f64:
    y[t: T] = sum[m, s]([s == t - dl[m]] * w[m] * x[m, s])
    return sum[t]((y[t] - tgt[t]) ** 2)
""", sizes=dict(M=3, T=7), make=_beamform_inputs,
        ref=beamform_ref, note="arithmetic on a label inside a comparison"),

    # ------------------------------------------------------------ Bayesian optimisation
    "ei": dict(src="""
# the expected improvement of a GP surrogate at m candidate points (for minimisation),
# from its training inputs X, the inverse kernel matrix Ki and the weights
# alpha = Ki y, summed as the acquisition to maximise over the candidates
def ei(Xc: f64[m, d], X: f64[n, d], Ki: f64[n, n], alpha: f64[n], fbest: f64, ll: f64[d], sf: f64) -> f64:
    ks[a, i] = sf * exp(-0.5 * sum[c]((Xc[a, c] - X[i, c]) ** 2 / exp(2.0 * ll[c])))
    mu[a] = sum[i](ks[a, i] * alpha[i])
    v[a] = max(sf - sum[i, j](ks[a, i] * Ki[i, j] * ks[a, j]), 1e-9)
    sd[a] = sqrt(v[a])
    z[a] = (fbest - mu[a]) / sd[a]
    return -sum[a](sd[a] * (z[a] * 0.5 * (1.0 + erf(z[a] / 1.4142135623730951)) + exp(-0.5 * z[a] ** 2) / 2.5066282746310002))
""", sizes=dict(m=3, n=5, d=2), make=_ei_inputs,
        ref=ei_ref, note="erf, a max floor on a quadratic form"),

    # ------------------------------------------------------------ structured prediction
    "ssvm": dict(src="""
# a structured SVM for sequence labelling: loss-augmented Viterbi (one unit of Hamming
# loss at every wrong label) by a max recurrence, minus the score of the gold path
def ssvm(F: f64[T, d], W: f64[K, d], A: f64[K, K], y: i64[T]) -> f64:
    E[t, j] = sum[c](F[t, c] * W[j, c])
    a[t: T, j: K] = E[t, j] + [j != y[t]] + [t >= 1] * max[i](a[t - 1, i] + A[i, j])
    gold = sum[t](E[t, y[t]]) + sum[t | t >= 1](A[y[t - 1], y[t]])
    return max[j](a[T - 1, j]) - gold
""", sizes=dict(T=5, d=3, K=3), make=_ssvm_inputs,
        ref=ssvm_ref, note="a max recurrence with a label bracket as a value"),

    # ------------------------------------------------------------ word embeddings
    "glove": dict(src="""
# GloVe's weighted least squares over the nonzero co-occurrences (ci[p], cj[p], X[p]),
# the weight min((X / xmax) ** 0.75, 1)
def glove(ci: i64[P], cj: i64[P], X: f64[P], W: f64[V, d], Wt: f64[V, d], bw: f64[V], bt: f64[V], xmax: f64) -> f64:
    f[p] = min((X[p] / xmax) ** 0.75, 1.0)
    return sum[p](f[p] * (sum[c](W[ci[p], c] * Wt[cj[p], c]) + bw[ci[p]] + bt[cj[p]] - log(X[p])) ** 2)
""", sizes=dict(P=8, V=4, d=3), make=_glove_inputs,
        ref=glove_ref, note="gathers of two tables through a pair list"),

    # ------------------------------------------------------------ visualisation
    "sammon": dict(src="""
# Sammon's mapping: the stress between the given distances D and the distances of the
# embedding Y over the pairs i < j, each relative to its distance
def sammon(Y: f64[n, q], D: f64[n, n]) -> f64:
    dy[i, j] = sqrt(sum[c]((Y[i, c] - Y[j, c]) ** 2))
    return sum[i, j]([i < j] * (D[i, j] - dy[i, j]) ** 2 / D[i, j]) / sum[i, j]([i < j] * D[i, j])
""", sizes=dict(n=5, q=2), make=_sammon_inputs,
        ref=sammon_ref, note="0 / 0 on the diagonal under a false bracket"),

    # ------------------------------------------------------------ image processing
    "hist_eq": dict(src="""
# soft histogram equalisation: soft assignments of pixels to B bins, the histogram's
# cumulative sum as a recurrence, each pixel mapped to the CDF of its bins
def hist_eq(img: f64[P], ctr: f64[B], wd: f64, tgt: f64[P]) -> f64:
    a[p, b] = exp(-(img[p] - ctr[b]) ** 2 / (2.0 * wd ** 2) - logsumexp[c](-(img[p] - ctr[c]) ** 2 / (2.0 * wd ** 2)))
    hh[b] = sum[p](a[p, b]) / P
    cdf[b] = hh[b] + [b >= 1] * cdf[b - 1]
    return sum[p]((sum[b](a[p, b] * cdf[b]) - tgt[p]) ** 2)
""", sizes=dict(P=10, B=4), make=_hist_eq_inputs,
        ref=hist_eq_ref, note="a cumulative sum recurrence between two reductions"),

    # ------------------------------------------------------------ biomedical signals
    "unet1d": dict(src="""
# a same-size 3-tap convolution with zero padding
def conv3(v: f64[m], k: f64[3]) -> f64[m]:
    y[i: m] = sum[t]([0 <= i + t - 1 < m] * k[t] * v[i + t - 1])
    return y

# average pooling by two
def pool2(v: f64[m]) -> f64[m / 2]:
    p[i: m / 2] = 0.5 * (v[2 * i] + v[2 * i + 1])
    return p

# a two-level 1-D U-Net denoising a signal: encoder convolutions and poolings, the
# bottom upsampled by repetition (parity by strided equalities) and added to the skip
# connections on the way up
def unet1d(x: f64[n], k1: f64[3], k2: f64[3], k3: f64[3], a: f64, tgt: f64[n]) -> f64:
    c1 = conv3(x, k1)
    e1[i] = tanh(c1[i])
    d1 = pool2(e1)
    c2 = conv3(d1, k2)
    e2[i] = tanh(c2[i])
    d2 = pool2(e2)
    m2[i: n / 2] = e2[i] + a * sum[j]([2 * j == i or 2 * j + 1 == i] * d2[j])
    s1[i: n] = e1[i] + sum[j]([2 * j == i or 2 * j + 1 == i] * m2[j])
    out = conv3(s1, k3)
    return sum[i]((out[i] - tgt[i]) ** 2) / n
""", sizes=dict(n=8), make=_unet1d_inputs,
        ref=unet1d_ref, note="sizes n / 2 and n / 4 through calls; or in an equality bracket"),
}


REJECTED = {
    # single precision: every value is float64; f32 is not a type
    "rmsnorm_f32": ("""
def rmsnorm_f32(x: f32[b, d], g: f32[d]) -> f32:
    r[s] = sqrt(sum[j](x[s, j] ** 2) / d + 1e-6)
    return sum[s, j](g[j] * x[s, j] / r[s])
""", "TLTypeError", "unknown type f32", 2),
    # a periodic neighbour by a remainder in an index ("advect" writes the wrap with
    # brackets at both ends)
    "advect_modulo": ("""
def advect_modulo(c0: f64[n], u: f64[n], dt: f64, steps: f64[T]) -> f64:
    C[t: T, i: n] = [t == 0] * c0[i] + [t >= 1] * (C[t - 1, i] - dt * u[i] * (C[t - 1, i] - C[t - 1, (i + n - 1) % n]))
    return sum[i](C[T - 1, i] ** 2)
""", "TLTypeError", "% may only appear in a divisibility guard", 3),
    # the odd coordinates as a remainder of 1: a divisibility guard compares with 0
    # ("realnvp" writes [d % 2 != 0])
    "realnvp_odd": ("""
def realnvp_odd(X: f64[n, D], Ws: f64[D, D]) -> f64:
    s1[i, d] = [d % 2 == 1] * tanh(sum[e]([e % 2 == 0] * Ws[d, e] * X[i, e]))
    return sum[i, d](s1[i, d])
""", "TLTypeError", "a remainder may only be compared with 0", 3),
    # the Gamma-function ratio as a sum whose range is a count label ("dirmult" bounds
    # a sum over a fixed range by a comparison with the label)
    "dirmult_range": ("""
def dirmult_range(cnt: i64[N, C], la: f64[C], kk: f64[K]) -> f64:
    lnum[i] = sum[c](sum[k: cnt[i, c]](log(exp(la[c]) + kk[k])))
    return -sum[i](lnum[i])
""", "TLSyntaxError", "this expression cannot be a dimension", 3),
    # V has T + 1 entries and r has T: the plain uses V[t] and r[t] give t two sizes
    # ("vtrace" gives dl and adv the explicit range t: T)
    "vtrace_ranges": ("""
def vtrace_ranges(r: f64[T], V: f64[T + 1], g: f64) -> f64:
    dl[t] = r[t] + g * V[t + 1] - V[t] + [t + 1 < T] * g * dl[t + 1]
    return sum[t](dl[t] ** 2)
""", "TLShapeError", "index t has conflicting ranges: T (line 3) and T + 1", 3),
    # the output index t is only compared with a label, never read plainly: it needs a
    # range (the hint proposes t: M, the first size of the function, where the
    # comparison with s would say T)
    "beamform_range": ("""
def beamform_range(x: f64[M, T], dl: i64[M], w: f64[M], tgt: f64[T]) -> f64:
    y[t] = sum[m, s]([s == t - dl[m]] * w[m] * x[m, s])
    return sum[t]((y[t] - tgt[t]) ** 2)
""", "TLShapeError", "cannot infer the range of index t", 3),
    # the delay as arithmetic on a gathered label inside an index ("beamform" compares
    # a new index with it instead)
    "beamform_gather": ("""
def beamform_gather(x: f64[M, T], dl: i64[M], w: f64[M], tgt: f64[T]) -> f64:
    y[t: T] = sum[m]([t >= dl[m]] * w[m] * x[m, t - dl[m]])
    return sum[t]((y[t] - tgt[t]) ** 2)
""", "TLTypeError", "the gather dl[...] must stand alone as an index", 3),
    # the booking DP without saying that no seat is left to sell at x = 0
    "revenue_guard": ("""
def revenue_guard(lam: f64[T, F], pr: f64[F], sal: f64[X]) -> f64:
    V[t: T + 1, x: X] = [t == T] * sal[x] + [t < T] * (V[t + 1, x]
        + sum[f](lam[t, f] * max(pr[f] - (V[t + 1, x] - V[t + 1, x - 1]), 0.0)))
    return V[0, X - 1]
""", "TLBoundsError", "index 1 of V may be out of range: x - 1 ranges over -1 .. X - 2", 4),
    # the depth of each node of a tree through its parent label: a recurrence cannot
    # step through a gather
    "tree_depth": ("""
def tree_depth(par: i64[n], bl: f64[n]) -> f64:
    dep[v: n] = [v >= 1] * (dep[par[v]] + bl[v])
    return sum[v](dep[v])
""", "TLRecurrenceError", "dep[par[v]] in dep does not step by a constant along v", 3),
    # both views of NT-Xent as one parameter of 2 B rows: B would have to be solved for
    "nt_xent_type": ("""
def nt_xent_type(Z: f64[2 * B, d], tau: f64) -> f64:
    S[i, j] = sum[c](Z[i, c] * Z[j, c]) / tau
    return sum[i](logsumexp[j | j != i](S[i, j]))
""", "TLNameError", "size B is not bound", 2),
    # a tensor-valued call indexed where it stands
    "unet_row": ("""
def conv3(v: f64[m], k: f64[3]) -> f64[m]:
    y[i: m] = sum[t]([0 <= i + t - 1 < m] * k[t] * v[i + t - 1])
    return y

def unet_row(x: f64[n], k: f64[3]) -> f64:
    return sum[i](conv3(x, k)[i] ** 2)
""", "TLSyntaxError", "only a named tensor can be indexed", 7),
    # an implicit diffusion step written as a Gauss-Seidel sweep that reads the new
    # values on both sides
    "ebm_two_ways": ("""
def ebm_two_ways(T0: f64[J], D: f64, steps: f64[S]) -> f64:
    Tm[s: S, j: J] = [s == 0] * T0[j] + [s >= 1] * (Tm[s - 1, j] + D * ([j >= 1] * Tm[s, j - 1] + [j + 1 < J] * Tm[s, j + 1] - 2.0 * Tm[s - 1, j]))
    return sum[j](Tm[S - 1, j])
""", "TLRecurrenceError", "Tm[s, j + 1] reads a later step along j, but Tm[s, j - 1] in Tm reads an earlier one", 3),
}
