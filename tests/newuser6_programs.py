"""A sixth set of programs written from the documentation alone.

Domains the earlier sets (tests/newuser_programs.py ... tests/newuser5_programs.py)
leave out: audio (Goertzel's two-step recurrence, a Schroeder all-pass and comb
reverb, overlap-add of windowed frames into a derived length, an autocorrelation
pitch estimate by a soft argmax over lags), vision (a soft histogram, a soft
census stereo cost, the Shi-Tomasi corner response, Huber total variation, soft
keypoints by a 2-D soft argmax, a soft rasteriser compositing discs by a
recurrence), probabilistic models (a banded Cholesky of a GMRF precision written
as a three-statement recurrence, a wrapped Cauchy mixture, probit regression
through erf, NeuralSort), engineering and science (a cell transmission traffic
model by min fluxes, Kuramoto oscillators, unicycle odometry, AC power flow
mismatches, a truss's energy over an i64 member list, a Gibbs free energy, a
two-compartment pharmacokinetic model), learning (top-1 mixture of experts by a
max tie, a gated linear unit stack, multi-head causal attention with a
temperature, distillation, a hypernetwork), operations research (a soft shortest
path over a layered DAG, unbalanced entropic transport, a newsvendor, a soft
knapsack, a Markov chain's n-step law, Almgren-Chriss execution, Elo ratings
whose steps gather the players of each game, soft Smith-Waterman), and feature
combinations (calls three deep through derived sizes, pooling twice through a
call, reductions over empty ranges, labels in arithmetic comparisons, three
returns taken apart, powers with negative, fractional and parameter exponents
under value guards).  Each entry has the shape of the other sets: the program
text (the function to test is named like the entry), the sizes of the test
inputs, `make(rng, **sizes)`, an independent NumPy version `ref(**inputs)` and a
note.  tests/test_newuser6_programs.py checks them.
"""
import numpy as np
from scipy.special import erf as _erf
from scipy.special import expit as _sigmoid
from scipy.special import logsumexp as _lse

from newuser2_programs import _normal, _softplus


def _log_softmax(Z, axis=-1):
    return Z - _lse(Z, axis=axis, keepdims=True)


# ------------------------------------------------------------------ audio
def goertzel_ref(x, w, tgt):
    T = len(x)
    out = 0.0
    for f in range(len(w)):
        c = 2 * np.cos(w[f])
        s1 = s2 = 0.0
        for t in range(T):
            s1, s2 = x[t] + c * s1 - s2, s1
        pw = s1 ** 2 + s2 ** 2 - c * s1 * s2
        out += (pw / T - tgt[f]) ** 2
    return float(out)


def allpass_ref(x, g, fb, tgt):
    T = len(x)
    a = np.zeros(T)
    y = np.zeros(T)
    for t in range(T):
        a[t] = -g * x[t] + (x[t - 3] + g * a[t - 3] if t >= 3 else 0.0)
        y[t] = a[t] + (fb * y[t - 5] if t >= 5 else 0.0)
    return float(np.sum((y - tgt) ** 2) / T)


def ola_ref(frames, win, tgt):
    F, L = frames.shape
    y = np.zeros(2 * F + L - 2)
    nrm = np.zeros_like(y)
    for f in range(F):
        y[2 * f:2 * f + L] += win * frames[f]
        nrm[2 * f:2 * f + L] += win ** 2
    return float(np.sum((y / (nrm + 1e-3) - tgt) ** 2))


def pitch_ref(x, lagv, tau, p0):
    n, L = len(x), len(lagv)
    r = np.array([x[:n - l] @ x[l:] for l in range(L)]) / (x @ x)
    z = r[2:] / tau
    p = np.exp(z - _lse(z))
    return float((p @ lagv[2:] - p0) ** 2)


# ------------------------------------------------------------------ vision
def softhist_ref(x, centers, bw, tgt):
    W = np.exp(-0.5 * ((x[:, None] - centers[None, :]) / bw) ** 2)
    W = W / W.sum(axis=1, keepdims=True)
    p = W.sum(axis=0) / len(x)
    return float(np.sum(tgt * (np.log(tgt) - np.log(p + 1e-9))))


def census_ref(L, R, t):
    h, w = L.shape
    out = 0.0
    for r in range(h):
        for c in range(w):
            for a in range(3):
                for b in range(3):
                    cl = _sigmoid((L[r + a - 1, c + b - 1] - L[r, c]) / t) \
                        if 1 <= r < h - 1 and 1 <= c < w - 1 else 0.0
                    cr = _sigmoid((R[r + a - 1, c + b - 2] - R[r, c - 1]) / t) \
                        if 1 <= r < h - 1 and 2 <= c < w - 1 else 0.0
                    out += (cl - cr) ** 2
    return float(out)


def shitomasi_ref(I, eps):
    h, w = I.shape
    gx = np.zeros_like(I)
    gy = np.zeros_like(I)
    gx[:, 1:-1] = 0.5 * (I[:, 2:] - I[:, :-2])
    gy[1:-1, :] = 0.5 * (I[2:, :] - I[:-2, :])

    def box(M):
        return sum(M[u:u + h - 2, v:v + w - 2] for u in range(3) for v in range(3))
    a, b, d = box(gx * gx), box(gx * gy), box(gy * gy)
    lam = 0.5 * (a + d) - np.sqrt(0.25 * (a - d) ** 2 + b ** 2 + eps)
    return float(np.sum(_softplus(lam)))


def tvhuber_ref(u, f, lam, dl):
    gx = np.zeros_like(u)
    gy = np.zeros_like(u)
    gx[:, :-1] = u[:, 1:] - u[:, :-1]
    gy[:-1, :] = u[1:, :] - u[:-1, :]
    m = np.sqrt(gx ** 2 + gy ** 2 + 1e-12)
    hub = np.where(m <= dl, m ** 2 / (2 * dl), m - 0.5 * dl)
    return float(0.5 * np.sum((u - f) ** 2) + lam * np.sum(hub))


def keypoints_ref(Hm, xs, ys, tx, ty, beta):
    K = Hm.shape[0]
    out = 0.0
    for k in range(K):
        P = np.exp(beta * Hm[k] - _lse(beta * Hm[k]))
        ex = np.sum(P * xs[None, :])
        ey = np.sum(P * ys[:, None])
        out += (ex - tx[k]) ** 2 + (ey - ty[k]) ** 2
    return float(out)


def raster_ref(cx, cy, rad, col, px, py, s, img, bg):
    C = np.full(len(px), bg)
    for k in range(len(cx)):
        a = _sigmoid((rad[k] ** 2 - (px - cx[k]) ** 2 - (py - cy[k]) ** 2) / s)
        C = a * col[k] + (1 - a) * C
    return float(np.sum((C - img) ** 2))


# ------------------------------------------------------------------ probabilistic models
def gmrf_ref(A0, A1, A2, x):
    n = len(x)
    Q = np.diag(A0)
    for i in range(1, n):
        Q[i, i - 1] = Q[i - 1, i] = A1[i]
    for i in range(2, n):
        Q[i, i - 2] = Q[i - 2, i] = A2[i]
    sign, logdet = np.linalg.slogdet(Q)
    assert sign > 0
    return float(-0.5 * logdet + 0.5 * x @ Q @ x + 0.5 * n * np.log(2 * np.pi))


def _gmrf_make(rng, n):
    return dict(A0=4.0 + rng.random(n), A1=0.5 * _normal(rng, n), A2=0.3 * _normal(rng, n),
                x=_normal(rng, n))


def wcauchy_ref(x, mu, rl, lw):
    rho = _sigmoid(rl)
    lwn = lw - _lse(lw)
    lp = (lwn[None, :] + np.log(1 - rho ** 2)[None, :]
          - np.log(1 + rho ** 2 - 2 * rho * np.cos(x[:, None] - mu[None, :])) - np.log(2 * np.pi))
    return float(-np.sum(_lse(lp, axis=1)))


def probit_ref(X, w, y):
    Phi = 0.5 * (1 + _erf(X @ w / np.sqrt(2)))
    return float(-np.sum(y * np.log(Phi) + (1 - y) * np.log(1 - Phi)) + 0.5 * w @ w)


def neuralsort_ref(s, coef, perm, tau):
    n = len(s)
    A1 = np.abs(s[:, None] - s[None, :]).sum(axis=1)
    lg = (coef[:, None] * s[None, :] - A1[None, :]) / tau
    ls = _log_softmax(lg, axis=1)
    return float(-np.sum(ls[np.arange(n), perm]) / n)


# ------------------------------------------------------------------ engineering and science
def ctm_ref(rho0, vf, wb, qmax, rhoj, dt, K1, obs):
    rho = rho0.copy()
    for _ in range(1, len(K1)):
        dem = np.minimum(vf * rho, qmax)
        sup = np.minimum(qmax, wb * (rhoj - rho))
        fl = np.zeros_like(rho)
        fl[:-1] = np.minimum(dem[:-1], sup[1:])
        inflow = np.concatenate([[0.0], fl[:-1]])
        rho = rho + dt * (inflow - fl)
    return float(np.sum((rho - obs) ** 2))


def kuramoto_ref(th0, om, Kc, dt, T1):
    th = th0.copy()
    n = len(th)
    for _ in range(1, len(T1)):
        th = th + dt * (om + Kc / n * np.sin(th[None, :] - th[:, None]).sum(axis=1))
    re, im = np.cos(th).mean(), np.sin(th).mean()
    return float(-(re ** 2 + im ** 2))


def unicycle_ref(v, om, dt, wx, wy):
    T = len(v)
    th = np.zeros(T)
    px = np.zeros(T)
    py = np.zeros(T)
    for t in range(1, T):
        th[t] = th[t - 1] + dt * om[t - 1]
        px[t] = px[t - 1] + dt * v[t - 1] * np.cos(th[t - 1])
        py[t] = py[t - 1] + dt * v[t - 1] * np.sin(th[t - 1])
    return float(np.sum((px - wx) ** 2 + (py - wy) ** 2) + 0.1 * np.sum(np.diff(v) ** 2))


def acflow_ref(V, th, G, B, Ps, Qs):
    D = th[:, None] - th[None, :]
    P = V * ((G * np.cos(D) + B * np.sin(D)) @ V)
    Q = V * ((G * np.sin(D) - B * np.cos(D)) @ V)
    return float(np.sum((P - Ps) ** 2 + (Q - Qs) ** 2))


def truss_ref(u, X, ea, a, b, f):
    d = X[b] - X[a]
    L = np.sqrt(np.sum(d ** 2, axis=1))
    st = np.sum(d * (u[b] - u[a]), axis=1) / L ** 2
    return float(0.5 * np.sum(ea * L * st ** 2) - np.sum(f * u))


def _truss_make(rng, N, M):
    a = rng.integers(0, N, M)
    b = (a + 1 + rng.integers(0, N - 1, M)) % N      # never a member from a node to itself
    return dict(u=0.1 * _normal(rng, N, 2), X=_normal(rng, N, 2), ea=1 + rng.random(M), a=a, b=b,
                f=_normal(rng, N, 2))


def gibbs_ref(nl, mu, Am, bel, lam):
    nn = np.exp(nl)
    G = np.sum(nn * (mu + np.log(nn / nn.sum())))
    return float(G + lam * np.sum((Am @ nn - bel) ** 2))


def pk2_ref(dose, ka, k12, k21, ke, dt, obs, V):
    T = len(dose)
    g = np.zeros(T)
    c1 = np.zeros(T)
    c2 = np.zeros(T)
    for t in range(1, T):
        g[t] = g[t - 1] * (1 - dt * ka) + dose[t - 1]
        c1[t] = c1[t - 1] + dt * (ka * g[t - 1] - (k12 + ke) * c1[t - 1] + k21 * c2[t - 1])
        c2[t] = c2[t - 1] + dt * (k12 * c1[t - 1] - k21 * c2[t - 1])
    return float(np.sum((np.log(1 + c1 / V) - np.log(1 + obs)) ** 2))


# ------------------------------------------------------------------ learning
def top1moe_ref(X, Wg, We, y):
    z = X @ Wg
    P = np.exp(_log_softmax(z))
    gate = np.where(z >= z.max(axis=1, keepdims=True), P, 0.0)
    out = np.einsum("se,ejk,sj->sk", gate, We, X)
    return float(np.sum((out - y) ** 2) / len(X))


def glu_ref(X, W1, V1, W2, V2, y):
    h1 = X + (X @ W1) * _sigmoid(X @ V1)
    h2 = h1 + (h1 @ W2) * _sigmoid(h1 @ V2)
    return float(-np.mean(_log_softmax(h2)[np.arange(len(y)), y]))


def mha_ref(X, Wq, Wk, Wv, Wo, temp):
    T = X.shape[0]
    out = np.zeros_like(X)
    mask = np.tril(np.ones((T, T), dtype=bool))
    for h in range(Wq.shape[0]):
        q, k, v = X @ Wq[h], X @ Wk[h], X @ Wv[h]
        S = np.where(mask, q @ k.T / temp, -np.inf)
        P = np.exp(S - _lse(S, axis=1, keepdims=True))
        out += (P @ v) @ Wo[h]
    return float(np.sum((out - X) ** 2))


def distill_ref(S, Tt, y, tau, al):
    ls = _log_softmax(S / tau)
    lt = _log_softmax(Tt / tau)
    kl = np.sum(np.exp(lt) * (lt - ls)) * tau ** 2 / len(y)
    ce = -np.mean(_log_softmax(S)[np.arange(len(y)), y])
    return float(al * kl + (1 - al) * ce)


def hypernet_ref(z, H, hb, X, Y):
    W = np.tanh(H @ z + hb)
    return float(np.sum((X @ W - Y) ** 2) / len(X))


# ------------------------------------------------------------------ operations research
def softpath_ref(C, s0, tau):
    V = s0.copy()
    for l in range(1, C.shape[0]):
        V = -tau * _lse(-(V[:, None] + C[l]) / tau, axis=0)
    return float(-tau * _lse(-V / tau))


def uot_ref(C, la, lb, eps, rho, K1):
    m, n = C.shape
    fac = rho / (rho + eps)
    f = np.zeros(m)
    g = np.zeros(n)
    for _ in range(1, len(K1)):
        f = -fac * eps * _lse((g[None, :] - C) / eps + lb[None, :], axis=1)
        g = -fac * eps * _lse((f[:, None] - C) / eps + la[:, None], axis=0)
    P = np.exp(la[:, None] + lb[None, :] + (f[:, None] + g[None, :] - C) / eps)
    return float(np.sum(P * C))


def newsvendor_ref(q, D, price, cost, hold, budget, mu):
    sold = np.minimum(q[None, :], D)
    left = np.maximum(q[None, :] - D, 0.0)
    profit = np.sum(price * sold - hold * left) / len(D) - cost @ q
    over = max(cost @ q - budget, 0.0)
    return float(-profit + mu * over ** 2)


def knapsack_ref(z, v, wt, cap, lam, tau):
    p = _sigmoid(z / tau)
    ent = -np.sum(p * np.log(p) + (1 - p) * np.log(1 - p))
    return float(-v @ p + lam * _softplus(wt @ p - cap) ** 2 - 0.01 * ent)


def markov_ref(Lg, p0, tgt, K1):
    P = np.exp(_log_softmax(Lg))
    p = p0.copy()
    for _ in range(1, len(K1)):
        p = p @ P
    return float(np.sum(tgt * (np.log(tgt) - np.log(p))))


def execution_ref(u, X0, eta, gam, lam, sig):
    tr = X0 * np.exp(u - _lse(u))
    inv = X0 - np.cumsum(tr)
    return float(eta * np.sum(tr ** 2) + 0.5 * gam * X0 ** 2 + lam * sig ** 2 * np.sum(inv ** 2))


def elo_ref(a, b, out, r0, kf):
    r = r0.copy()
    loss = 0.0
    for t in range(len(a)):
        pr = _sigmoid(r[a[t]] - r[b[t]])
        loss -= out[t] * np.log(pr) + (1 - out[t]) * np.log(1 - pr)
        upd = kf * (out[t] - pr)
        r = r.copy()
        r[a[t]] += upd
        r[b[t]] -= upd
    return float(loss)


def _elo_make(rng, G, P):
    a = rng.integers(0, P, G)
    b = (a + 1 + rng.integers(0, P - 1, G)) % P        # two different players per game
    return dict(a=a, b=b, out=rng.random(G), r0=0.3 * _normal(rng, P), kf=0.4)


def softsw_ref(S, gap, g):
    n, m = S.shape
    H = np.zeros((n, m))
    for i in range(n):
        for j in range(m):
            diag = S[i, j] + (H[i - 1, j - 1] if i >= 1 and j >= 1 else 0.0)
            up = (H[i - 1, j] if i >= 1 else 0.0) - gap
            left = (H[i, j - 1] if j >= 1 else 0.0) - gap
            H[i, j] = g * _lse(np.array([0.0, diag, up, left]) / g)
    return float(g * _lse(H / g))


# ------------------------------------------------------------------ feature combinations
def chain3_ref(x, lam, y):
    c = np.diff(x, 2)
    return float(np.sum((x - y) ** 2) + lam * np.sum(c ** 2))


def pool4_ref(x):
    a = np.maximum(x[0::2], x[1::2])
    b = np.maximum(a[0::2], a[1::2])
    return float(np.sum(b ** 2))


def runmax_ref(x, w):
    n = len(x)
    out = 0.0
    for i in range(1, n):
        out += w[i] * max(x[i] - x[:i].max(), 0.0)
    return float(out)


def nbsmooth_ref(Z, y):
    b, k = Z.shape
    T = np.zeros((b, k))
    for s in range(b):
        T[s, y[s]] += 0.8
        if y[s] + 1 < k:
            T[s, y[s] + 1] += 0.1
        if y[s] >= 1:
            T[s, y[s] - 1] += 0.1
    return float(-np.sum(T * _log_softmax(Z)) / b)


def robust_ref(x, p):
    m = x.mean()
    v = np.mean((x - m) ** 2)
    z = (x - m) * v ** -0.5
    pos = np.where(x > 0.0, np.abs(x) ** -0.5, 0.0)
    return float(np.sum((1 + z ** 2) ** (p / 2)) + v ** 1.5 - m ** 2 + np.sum(pos))


PROGRAMS = {
    # -------------------------------------------------------------- audio
    "goertzel": dict(src="""
# Goertzel's recurrence s[t] = x[t] + c s[t - 1] - s[t - 2], c = 2 cos(w), one per
# frequency; the power at each frequency from the last two states, fitted to a target
def goertzel(x: f64[T], w: f64[F], tgt: f64[F]) -> f64:
    c[f] = 2.0 * cos(w[f])
    s[t: T, f: F] = x[t] + [t >= 1] * c[f] * s[t - 1, f] - [t >= 2] * s[t - 2, f]
    pw[f] = s[T - 1, f] ** 2 + [T >= 2] * (s[T - 2, f] ** 2 - c[f] * s[T - 1, f] * s[T - 2, f])
    return sum[f]((pw[f] / T - tgt[f]) ** 2)
""", sizes=dict(T=9, F=3), make=lambda rng, T, F: dict(
            x=_normal(rng, T), w=rng.random(F) * 3, tgt=rng.random(F)),
        ref=goertzel_ref, note="a recurrence two steps back; a size-only bracket [T >= 2]"),

    "allpass": dict(src="""
# a Schroeder all-pass of delay 3 into a feedback comb of delay 5
def allpass(x: f64[T], g: f64, fb: f64, tgt: f64[T]) -> f64:
    a[t] = -g * x[t] + [t >= 3] * (x[t - 3] + g * a[t - 3])
    y[t] = a[t] + [t >= 5] * fb * y[t - 5]
    return sum[t]((y[t] - tgt[t]) ** 2) / T
""", sizes=dict(T=14), make=lambda rng, T: dict(x=_normal(rng, T), g=0.6, fb=0.4,
                                                 tgt=_normal(rng, T)),
        ref=allpass_ref, note="two chained recurrences with long constant steps"),

    "ola": dict(src="""
# overlap-add of windowed frames with a hop of 2, normalised by the summed squared window
def ola(frames: f64[F, L], win: f64[L], tgt: f64[2 * F + L - 2]) -> f64:
    y[i: 2 * F + L - 2] = sum[f, j]([i == 2 * f + j] * win[j] * frames[f, j])
    nrm[i: 2 * F + L - 2] = sum[f: F, j]([i == 2 * f + j] * win[j] ** 2)
    return sum[i]((y[i] / (nrm[i] + 1e-3) - tgt[i]) ** 2)
""", sizes=dict(F=4, L=5), make=lambda rng, F, L: dict(
            frames=_normal(rng, F, L), win=0.5 + rng.random(L), tgt=_normal(rng, 2 * F + L - 2)),
        ref=ola_ref, note="a scatter by an equality with a strided index into a derived size"),

    "pitch": dict(src="""
# normalised autocorrelation over lags, a soft argmax over the lags from 2 on
# (lagv holds each lag's value), against a pitch target
def pitch(x: f64[n], lagv: f64[L], tau: f64, p0: f64) -> f64:
    r[l: L] = sum[t]([t + l < n] * x[t] * x[t + l]) / sum[t](x[t] ** 2)
    z = logsumexp[l | l >= 2](r[l] / tau)
    est = sum[l | l >= 2](lagv[l] * exp(r[l] / tau - z))
    return (est - p0) ** 2
""", sizes=dict(n=12, L=5), make=lambda rng, n, L: dict(
            x=np.sin(np.arange(n) * 1.3) + 0.2 * _normal(rng, n), lagv=np.arange(L, dtype=float),
            tau=0.2, p0=3.0),
        ref=pitch_ref, note="a filtered logsumexp and a filtered sum over lags"),

    # -------------------------------------------------------------- vision
    "softhist": dict(src="""
# a soft histogram: each value shares a unit of mass among Gaussian bins; the KL
# divergence of a target histogram from it
def softhist(x: f64[n], centers: f64[B], bw: f64, tgt: f64[B]) -> f64:
    wgt[i, b] = exp(-0.5 * ((x[i] - centers[b]) / bw) ** 2)
    z[i] = sum[c](wgt[i, c])
    p[b] = sum[i](wgt[i, b] / z[i]) / n
    return sum[b](tgt[b] * (log(tgt[b]) - log(p[b] + 1e-9)))
""", sizes=dict(n=10, B=4), make=lambda rng, n, B: dict(
            x=_normal(rng, n), centers=np.linspace(-1.5, 1.5, B), bw=0.7,
            tgt=(lambda t: t / t.sum())(0.2 + rng.random(B))),
        ref=softhist_ref, note="a per-point normaliser read by a sum over points"),

    "census": dict(src="""
# a soft census transform of each 3 x 3 neighbourhood in two images, the right one
# shifted by a disparity of 1, and the squared difference of the two codes
def census(L: f64[h, w], R: f64[h, w], t: f64) -> f64:
    cl[r: h, c: w, a: 3, b: 3] = [1 <= r < h - 1 and 1 <= c < w - 1] * sigmoid((L[r + a - 1, c + b - 1] - L[r, c]) / t)
    cr[r: h, c: w, a: 3, b: 3] = [1 <= r < h - 1 and 2 <= c < w - 1] * sigmoid((R[r + a - 1, c + b - 2] - R[r, c - 1]) / t)
    return sum[r, c, a, b]((cl[r, c, a, b] - cr[r, c, a, b]) ** 2)
""", sizes=dict(h=5, w=6), make=lambda rng, h, w: dict(L=_normal(rng, h, w), R=_normal(rng, h, w),
                                                        t=0.5),
        ref=census_ref, note="four-index statements under chained range brackets"),

    "shitomasi": dict(src="""
# central-difference gradients, the structure tensor summed over 3 x 3 windows
# (valid part only) and the smaller eigenvalue, softly rectified and summed
def shitomasi(I: f64[h, w], eps: f64) -> f64:
    gx[r, c: w] = [1 <= c < w - 1] * 0.5 * (I[r, c + 1] - I[r, c - 1])
    gy[r: h, c] = [1 <= r < h - 1] * 0.5 * (I[r + 1, c] - I[r - 1, c])
    a[r: h - 2, c: w - 2] = sum[u: 3, v: 3](gx[r + u, c + v] ** 2)
    b[r: h - 2, c: w - 2] = sum[u: 3, v: 3](gx[r + u, c + v] * gy[r + u, c + v])
    d[r: h - 2, c: w - 2] = sum[u: 3, v: 3](gy[r + u, c + v] ** 2)
    lam[r, c] = 0.5 * (a[r, c] + d[r, c]) - sqrt(0.25 * (a[r, c] - d[r, c]) ** 2 + b[r, c] ** 2 + eps)
    return sum[r, c](softplus(lam[r, c]))
""", sizes=dict(h=6, w=7), make=lambda rng, h, w: dict(I=_normal(rng, h, w), eps=1e-3),
        ref=shitomasi_ref, note="window sums over derived ranges; a sqrt of a discriminant"),

    "tvhuber": dict(src="""
# total-variation denoising with a Huber-smoothed gradient magnitude
def tvhuber(u: f64[h, w], f: f64[h, w], lam: f64, dl: f64) -> f64:
    gx[r, c] = [c + 1 < w] * (u[r, c + 1] - u[r, c])
    gy[r, c] = [r + 1 < h] * (u[r + 1, c] - u[r, c])
    m[r, c] = sqrt(gx[r, c] ** 2 + gy[r, c] ** 2 + 1e-12)
    hub[r, c] = [m[r, c] <= dl] * m[r, c] ** 2 / (2.0 * dl) + [m[r, c] > dl] * (m[r, c] - 0.5 * dl)
    return 0.5 * sum[r, c]((u[r, c] - f[r, c]) ** 2) + lam * sum[r, c](hub[r, c])
""", sizes=dict(h=5, w=6), make=lambda rng, h, w: dict(u=_normal(rng, h, w), f=_normal(rng, h, w),
                                                        lam=0.3, dl=0.8),
        ref=tvhuber_ref, note="value brackets choosing a branch of a stored statement"),

    "keypoints": dict(src="""
# a 2-D soft argmax per heatmap: the expected pixel coordinates under a softmax
# with inverse temperature beta, against target keypoints
def keypoints(Hm: f64[K, h, w], xs: f64[w], ys: f64[h], tx: f64[K], ty: f64[K], beta: f64) -> f64:
    lz[k] = logsumexp[r, c](beta * Hm[k, r, c])
    ex[k] = sum[r, c](xs[c] * exp(beta * Hm[k, r, c] - lz[k]))
    ey[k] = sum[r, c](ys[r] * exp(beta * Hm[k, r, c] - lz[k]))
    return sum[k]((ex[k] - tx[k]) ** 2 + (ey[k] - ty[k]) ** 2)
""", sizes=dict(K=2, h=4, w=5), make=lambda rng, K, h, w: dict(
            Hm=_normal(rng, K, h, w), xs=np.linspace(0, 1, w), ys=np.linspace(0, 1, h),
            tx=rng.random(K), ty=rng.random(K), beta=2.0),
        ref=keypoints_ref, note="a logsumexp over two indices; one softmax read by two sums"),

    "raster": dict(src="""
# soft discs composited front to back over a background by the over operator: a
# recurrence over the layers; pixel coordinates are data
def raster(cx: f64[K], cy: f64[K], rad: f64[K], col: f64[K], px: f64[P], py: f64[P], s: f64, img: f64[P], bg: f64) -> f64:
    a[k, p] = sigmoid((rad[k] ** 2 - (px[p] - cx[k]) ** 2 - (py[p] - cy[k]) ** 2) / s)
    C[k, p] = a[k, p] * col[k] + (1.0 - a[k, p]) * ([k == 0] * bg + [k >= 1] * C[k - 1, p])
    return sum[p]((C[K - 1, p] - img[p]) ** 2)
""", sizes=dict(K=3, P=8), make=lambda rng, K, P: dict(
            cx=rng.random(K), cy=rng.random(K), rad=0.3 + 0.2 * rng.random(K), col=rng.random(K),
            px=rng.random(P), py=rng.random(P), s=0.05, img=rng.random(P), bg=0.1),
        ref=raster_ref, note="a recurrence whose range comes from a statement before it"),

    # -------------------------------------------------------------- probabilistic models
    "gmrf": dict(src="""
# the negative log-density of a Gaussian Markov random field whose precision has
# five bands (A0 the diagonal, A1[i] = Q[i, i - 1], A2[i] = Q[i, i - 2]); its log
# determinant from a banded Cholesky factor written as a recurrence of three
# statements (the third reads the first two at the same step)
def gmrf(A0: f64[n], A1: f64[n], A2: f64[n], x: f64[n]) -> f64:
    g[i: n] = [i >= 2] * A2[i] / d[i - 2]
    e[i: n] = [i >= 1] * (A1[i] - [i >= 2] * g[i] * e[i - 1]) / d[i - 1]
    d[i: n] = sqrt(A0[i] - e[i] ** 2 - g[i] ** 2)
    quad = sum[i](A0[i] * x[i] ** 2 + 2.0 * [i >= 1] * A1[i] * x[i] * x[i - 1] + 2.0 * [i >= 2] * A2[i] * x[i] * x[i - 2])
    return -sum[i](log(d[i])) + 0.5 * quad + 0.5 * n * log(2.0 * 3.141592653589793)
""", sizes=dict(n=7), make=_gmrf_make, ref=gmrf_ref,
        note="a banded Cholesky as a recurrence group ordered by offset-0 reads"),

    "wcauchy": dict(src="""
# a mixture of wrapped Cauchy distributions on the circle
def wcauchy(x: f64[N], mu: f64[K], rl: f64[K], lw: f64[K]) -> f64:
    rho[k] = sigmoid(rl[k])
    lp[s, k] = lw[k] - logsumexp[c](lw[c]) + log(1.0 - rho[k] ** 2) - log(1.0 + rho[k] ** 2 - 2.0 * rho[k] * cos(x[s] - mu[k])) - log(2.0 * 3.141592653589793)
    return -sum[s](logsumexp[k](lp[s, k]))
""", sizes=dict(N=9, K=3), make=lambda rng, N, K: dict(
            x=rng.random(N) * 6 - 3, mu=_normal(rng, K), rl=_normal(rng, K), lw=_normal(rng, K)),
        ref=wcauchy_ref, note="a logsumexp hoisted out of a two-index statement"),

    "probit": dict(src="""
# probit regression through erf, with a ridge penalty
def probit(X: f64[N, d], w: f64[d], y: f64[N]) -> f64:
    z[s] = sum[j](X[s, j] * w[j])
    Phi[s] = 0.5 * (1.0 + erf(z[s] / sqrt(2.0)))
    return -sum[s](y[s] * log(Phi[s]) + (1.0 - y[s]) * log(1.0 - Phi[s])) + 0.5 * sum[j](w[j] ** 2)
""", sizes=dict(N=10, d=3), make=lambda rng, N, d: dict(
            X=_normal(rng, N, d) / 2, w=_normal(rng, d) / 2, y=(rng.random(N) < 0.5).astype(float)),
        ref=probit_ref, note="a builtin of a constant (sqrt(2.0)) as a divisor"),

    "neuralsort": dict(src="""
# NeuralSort's relaxed permutation matrix (coef[i] = n - 1 - 2 i as data) and the
# log-likelihood of the true ranking under it
def neuralsort(s: f64[n], coef: f64[n], perm: i64[n], tau: f64) -> f64:
    A1[j] = sum[l](abs(s[j] - s[l]))
    lg[i: n, j: n] = (coef[i] * s[j] - A1[j]) / tau
    return -sum[i](lg[i, perm[i]] - logsumexp[j](lg[i, j])) / n
""", sizes=dict(n=6), make=lambda rng, n: dict(
            s=_normal(rng, n), coef=n - 1 - 2.0 * np.arange(n), perm=rng.permutation(n), tau=0.7),
        ref=neuralsort_ref, note="abs of pairwise differences (abs'(0) on the diagonal); a gather"),

    # -------------------------------------------------------------- engineering and science
    "ctm": dict(src="""
# the cell transmission model of traffic: the flux from cell i to i + 1 is the
# smaller of the sending cell's demand and the receiving cell's supply
def ctm(rho0: f64[n], vf: f64, wb: f64, qmax: f64, rhoj: f64, dt: f64, K1: f64[K], obs: f64[n]) -> f64:
    dem[k: K, i: n] = min(vf * rho[k, i], qmax)
    sup[k: K, i: n] = min(qmax, wb * (rhoj - rho[k, i]))
    fl[k: K, i: n] = [i + 1 < n] * min(dem[k, i], sup[k, i + 1])
    rho[k: K, i: n] = [k == 0] * rho0[i] + [k >= 1] * (rho[k - 1, i] + dt * ([i >= 1] * fl[k - 1, i - 1] - fl[k - 1, i]))
    return sum[i]((rho[K - 1, i] - obs[i]) ** 2)
""", sizes=dict(n=7, K=6), make=lambda rng, n, K: dict(
            rho0=0.2 + 0.6 * rng.random(n), vf=1.0, wb=0.5, qmax=0.3, rhoj=1.0, dt=0.4,
            K1=np.zeros(K), obs=rng.random(n)),
        ref=ctm_ref, note="a four-statement group with min kinks and a neighbour read"),

    "kuramoto": dict(src="""
# Kuramoto oscillators by explicit Euler; the loss is minus the squared order parameter
def kuramoto(th0: f64[n], om: f64[n], Kc: f64, dt: f64, T1: f64[T]) -> f64:
    th[t: T, i: n] = [t == 0] * th0[i] + [t >= 1] * (th[t - 1, i] + dt * (om[i] + Kc / n * sum[j](sin(th[t - 1, j] - th[t - 1, i]))))
    re = sum[i](cos(th[T - 1, i])) / n
    im = sum[i](sin(th[T - 1, i])) / n
    return -(re ** 2 + im ** 2)
""", sizes=dict(n=5, T=6), make=lambda rng, n, T: dict(
            th0=rng.random(n) * 6, om=0.3 * _normal(rng, n), Kc=1.2, dt=0.2, T1=np.zeros(T)),
        ref=kuramoto_ref, note="all-pairs coupling inside the steps"),

    "unicycle": dict(src="""
# unicycle odometry from speeds and turn rates, against waypoints, with a
# smoothness penalty on the speeds
def unicycle(v: f64[T], om: f64[T], dt: f64, wx: f64[T], wy: f64[T]) -> f64:
    th[t: T] = [t >= 1] * (th[t - 1] + dt * om[t - 1])
    px[t: T] = [t >= 1] * (px[t - 1] + dt * v[t - 1] * cos(th[t - 1]))
    py[t: T] = [t >= 1] * (py[t - 1] + dt * v[t - 1] * sin(th[t - 1]))
    return sum[t]((px[t] - wx[t]) ** 2 + (py[t] - wy[t]) ** 2) + 0.1 * sum[t]([t >= 1] * (v[t] - v[t - 1]) ** 2)
""", sizes=dict(T=8), make=lambda rng, T: dict(
            v=1 + 0.2 * _normal(rng, T), om=0.5 * _normal(rng, T), dt=0.3, wx=_normal(rng, T),
            wy=_normal(rng, T)),
        ref=unicycle_ref, note="three one-index recurrences with trigonometry"),

    "acflow": dict(src="""
# AC power flow mismatches: the active and reactive injections of every bus
def acflow(V: f64[n], th: f64[n], G: f64[n, n], B: f64[n, n], Ps: f64[n], Qs: f64[n]) -> f64:
    P[i] = V[i] * sum[j](V[j] * (G[i, j] * cos(th[i] - th[j]) + B[i, j] * sin(th[i] - th[j])))
    Q[i] = V[i] * sum[j](V[j] * (G[i, j] * sin(th[i] - th[j]) - B[i, j] * cos(th[i] - th[j])))
    return sum[i]((P[i] - Ps[i]) ** 2 + (Q[i] - Qs[i]) ** 2)
""", sizes=dict(n=5), make=lambda rng, n: dict(
            V=1 + 0.05 * _normal(rng, n), th=0.1 * _normal(rng, n), G=_normal(rng, n, n),
            B=_normal(rng, n, n), Ps=_normal(rng, n), Qs=_normal(rng, n)),
        ref=acflow_ref, note="trigonometry of pairwise differences, n^2 per statement"),

    "truss": dict(src="""
# the potential energy of a pin-jointed truss under small displacements; members
# join nodes a[e] and b[e], the axial strain is the displacement along the member
def truss(u: f64[N, 2], X: f64[N, 2], ea: f64[M], a: i64[M], b: i64[M], f: f64[N, 2]) -> f64:
    L[e] = sqrt(sum[c: 2]((X[b[e], c] - X[a[e], c]) ** 2))
    st[e] = sum[c: 2]((X[b[e], c] - X[a[e], c]) * (u[b[e], c] - u[a[e], c])) / L[e] ** 2
    return 0.5 * sum[e](ea[e] * L[e] * st[e] ** 2) - sum[q, c](f[q, c] * u[q, c])
""", sizes=dict(N=5, M=7), make=_truss_make, ref=truss_ref,
        note="gathers through two i64 member lists; a literal dimension"),

    "gibbs": dict(src="""
# the Gibbs free energy of an ideal mixture in log amounts, with element balances
# as a quadratic penalty
def gibbs(nl: f64[S], mu: f64[S], Am: f64[E, S], bel: f64[E], lam: f64) -> f64:
    nn[i] = exp(nl[i])
    tot = sum[i](nn[i])
    G = sum[i](nn[i] * (mu[i] + log(nn[i] / tot)))
    r[e] = sum[i](Am[e, i] * nn[i]) - bel[e]
    return G + lam * sum[e](r[e] ** 2)
""", sizes=dict(S=5, E=2), make=lambda rng, S, E: dict(
            nl=_normal(rng, S), mu=_normal(rng, S), Am=rng.random((E, S)), bel=rng.random(E), lam=2.0),
        ref=gibbs_ref, note="a log of a ratio with a scalar total"),

    "pk2": dict(src="""
# a two-compartment pharmacokinetic model with a gut depot, by Euler steps; the
# misfit of log concentrations
def pk2(dose: f64[T], ka: f64, k12: f64, k21: f64, ke: f64, dt: f64, obs: f64[T], V: f64) -> f64:
    g[t: T] = [t >= 1] * (g[t - 1] * (1.0 - dt * ka) + dose[t - 1])
    c1[t: T] = [t >= 1] * (c1[t - 1] + dt * (ka * g[t - 1] - (k12 + ke) * c1[t - 1] + k21 * c2[t - 1]))
    c2[t: T] = [t >= 1] * (c2[t - 1] + dt * (k12 * c1[t - 1] - k21 * c2[t - 1]))
    return sum[t]((log(1.0 + c1[t] / V) - log(1.0 + obs[t])) ** 2)
""", sizes=dict(T=10), make=lambda rng, T: dict(
            dose=rng.random(T), ka=0.8, k12=0.3, k21=0.2, ke=0.25, dt=0.5, obs=rng.random(T), V=2.0),
        ref=pk2_ref, note="a three-state linear system; scalar rates in every step"),

    # -------------------------------------------------------------- learning
    "top1moe": dict(src="""
# top-1 mixture of experts: the gate keeps the experts whose logit equals the row's
# maximum, scaled by their softmax probability
def top1moe(X: f64[b, d], Wg: f64[d, E], We: f64[E, d, o], y: f64[b, o]) -> f64:
    z[s, e] = sum[j](X[s, j] * Wg[j, e])
    zm[s] = max[e](z[s, e])
    gate[s, e] = [z[s, e] >= zm[s]] * exp(z[s, e] - logsumexp[c](z[s, c]))
    out[s, k] = sum[e, j](gate[s, e] * We[e, j, k] * X[s, j])
    return sum[s, k]((out[s, k] - y[s, k]) ** 2) / b
""", sizes=dict(b=6, d=3, E=3, o=2), make=lambda rng, b, d, E, o: dict(
            X=_normal(rng, b, d), Wg=_normal(rng, d, E), We=_normal(rng, E, d, o), y=_normal(rng, b, o)),
        ref=top1moe_ref, note="a value bracket against a max reduction; a softmax gate"),

    "glu": dict(src="""
# two gated linear unit blocks with residuals, then softmax cross-entropy
def glu(X: f64[b, d], W1: f64[d, d], V1: f64[d, d], W2: f64[d, d], V2: f64[d, d], y: i64[b]) -> f64:
    h1[s, i] = X[s, i] + sum[j](X[s, j] * W1[j, i]) * sigmoid(sum[j](X[s, j] * V1[j, i]))
    h2[s, i] = h1[s, i] + sum[j](h1[s, j] * W2[j, i]) * sigmoid(sum[j](h1[s, j] * V2[j, i]))
    return sum[s](logsumexp[c](h2[s, c]) - h2[s, y[s]]) / b
""", sizes=dict(b=5, d=4), make=lambda rng, b, d: dict(
            X=_normal(rng, b, d), W1=_normal(rng, d, d) / 2, V1=_normal(rng, d, d) / 2,
            W2=_normal(rng, d, d) / 2, V2=_normal(rng, d, d) / 2, y=rng.integers(0, d, b)),
        ref=glu_ref, note="two sums multiplied inside one statement"),

    "mha": dict(src="""
# multi-head causal self-attention with a temperature, reconstructing its input
def mha(X: f64[T, d], Wq: f64[H, d, e], Wk: f64[H, d, e], Wv: f64[H, d, e], Wo: f64[H, e, d], temp: f64) -> f64:
    q[h, t, a] = sum[j](X[t, j] * Wq[h, j, a])
    k[h, t, a] = sum[j](X[t, j] * Wk[h, j, a])
    v[h, t, a] = sum[j](X[t, j] * Wv[h, j, a])
    sc[h, t, u] = sum[a](q[h, t, a] * k[h, u, a]) / temp
    lse[h, t] = logsumexp[u | u <= t](sc[h, t, u])
    ctx[h, t, a] = sum[u | u <= t](exp(sc[h, t, u] - lse[h, t]) * v[h, u, a])
    o[t, j] = sum[h, a](ctx[h, t, a] * Wo[h, a, j])
    return sum[t, j]((o[t, j] - X[t, j]) ** 2)
""", sizes=dict(T=5, d=4, H=2, e=3), make=lambda rng, T, d, H, e: dict(
            X=_normal(rng, T, d), Wq=_normal(rng, H, d, e) / 2, Wk=_normal(rng, H, d, e) / 2,
            Wv=_normal(rng, H, d, e) / 2, Wo=_normal(rng, H, e, d) / 2, temp=1.5),
        ref=mha_ref, note="three-index heads; causal filters on a logsumexp and a sum"),

    "distill": dict(src="""
# knowledge distillation: the tempered KL from teacher to student, plus the hard
# cross-entropy of the student
def distill(S: f64[b, k], Tt: f64[b, k], y: i64[b], tau: f64, al: f64) -> f64:
    ls[s, c] = S[s, c] / tau - logsumexp[j](S[s, j] / tau)
    lt[s, c] = Tt[s, c] / tau - logsumexp[j](Tt[s, j] / tau)
    kl = sum[s, c](exp(lt[s, c]) * (lt[s, c] - ls[s, c])) * tau ** 2 / b
    ce = sum[s](logsumexp[c](S[s, c]) - S[s, y[s]]) / b
    return al * kl + (1.0 - al) * ce
""", sizes=dict(b=5, k=4), make=lambda rng, b, k: dict(
            S=_normal(rng, b, k), Tt=_normal(rng, b, k), y=rng.integers(0, k, b), tau=2.0, al=0.7),
        ref=distill_ref, note="two logsumexps of one tensor at two temperatures; tau ** 2"),

    "hypernet": dict(src="""
# a hypernetwork: the weights of a linear layer are a tanh of a linear map of a code z
def hypernet(z: f64[m], H: f64[d, o, m], hb: f64[d, o], X: f64[N, d], Y: f64[N, o]) -> f64:
    W[j, k] = tanh(sum[l](H[j, k, l] * z[l]) + hb[j, k])
    return sum[s, k]((sum[j](X[s, j] * W[j, k]) - Y[s, k]) ** 2) / N
""", sizes=dict(m=3, d=4, o=2, N=6), make=lambda rng, m, d, o, N: dict(
            z=_normal(rng, m), H=_normal(rng, d, o, m) / 2, hb=_normal(rng, d, o) / 2,
            X=_normal(rng, N, d), Y=_normal(rng, N, o)),
        ref=hypernet_ref, note="a contraction inside a power inside a sum"),

    # -------------------------------------------------------------- operations research
    "softpath": dict(src="""
# the soft shortest path through a layered DAG (layer l's edges C[l, i, j] from
# node i of layer l - 1 to node j of layer l), by a soft-min recurrence over layers
def softpath(C: f64[L, W, W], s0: f64[W], tau: f64) -> f64:
    V[l: L, j: W] = [l == 0] * s0[j] + [l >= 1] * -tau * logsumexp[i](-(V[l - 1, i] + C[l, i, j]) / tau)
    return -tau * logsumexp[j](-V[L - 1, j] / tau)
""", sizes=dict(L=4, W=3), make=lambda rng, L, W: dict(
            C=rng.random((L, W, W)) * 2, s0=rng.random(W), tau=0.5),
        ref=softpath_ref, note="a soft-min recurrence over layers with a scalar temperature"),

    "uot": dict(src="""
# unbalanced entropic optimal transport (KL-relaxed marginals, strength rho) by
# scaled Sinkhorn steps in log space; the transport cost of the final plan
def uot(C: f64[m, n], la: f64[m], lb: f64[n], eps: f64, rho: f64, K1: f64[K]) -> f64:
    f[k: K, i: m] = [k >= 1] * -(rho / (rho + eps)) * eps * logsumexp[j]((g[k - 1, j] - C[i, j]) / eps + lb[j])
    g[k: K, j: n] = [k >= 1] * -(rho / (rho + eps)) * eps * logsumexp[i]((f[k, i] - C[i, j]) / eps + la[i])
    return sum[i, j](exp(la[i] + lb[j] + (f[K - 1, i] + g[K - 1, j] - C[i, j]) / eps) * C[i, j])
""", sizes=dict(m=4, n=5, K=4), make=lambda rng, m, n, K: dict(
            C=rng.random((m, n)), la=np.log(rng.dirichlet(np.ones(m))), lb=np.log(rng.dirichlet(np.ones(n))),
            eps=0.3, rho=1.0, K1=np.zeros(K)),
        ref=uot_ref, note="a two-statement group; the second reads the first at offset 0"),

    "newsvendor": dict(src="""
# a multi-product newsvendor over demand scenarios with a budget penalty
def newsvendor(q: f64[m], D: f64[N, m], price: f64[m], cost: f64[m], hold: f64[m], budget: f64, mu: f64) -> f64:
    sold[s, i] = min(q[i], D[s, i])
    left[s, i] = max(q[i] - D[s, i], 0.0)
    spend = sum[i](cost[i] * q[i])
    profit = sum[s, i](price[i] * sold[s, i] - hold[i] * left[s, i]) / N - spend
    over = max(spend - budget, 0.0)
    return -profit + mu * over ** 2
""", sizes=dict(m=3, N=8), make=lambda rng, m, N: dict(
            q=1 + rng.random(m), D=2 * rng.random((N, m)), price=2 + rng.random(m),
            cost=1 + rng.random(m) / 2, hold=rng.random(m) / 3, budget=2.0, mu=0.5),
        ref=newsvendor_ref, note="max of scalar statements; min and max of data"),

    "knapsack": dict(src="""
# a soft knapsack: inclusion probabilities sigmoid(z / tau), a smooth capacity
# penalty and an entropy bonus
def knapsack(z: f64[n], v: f64[n], wt: f64[n], cap: f64, lam: f64, tau: f64) -> f64:
    p[i] = sigmoid(z[i] / tau)
    load = sum[i](wt[i] * p[i])
    ent = -sum[i](p[i] * log(p[i]) + (1.0 - p[i]) * log(1.0 - p[i]))
    return -sum[i](v[i] * p[i]) + lam * softplus(load - cap) ** 2 - 0.01 * ent
""", sizes=dict(n=7), make=lambda rng, n: dict(
            z=_normal(rng, n), v=rng.random(n), wt=rng.random(n), cap=1.5, lam=3.0, tau=0.8),
        ref=knapsack_ref, note="a softplus of a scalar statement, squared"),

    "markov": dict(src="""
# a Markov chain's law after K - 1 steps, transitions a softmax of logits; the KL
# divergence of a target law from it
def markov(Lg: f64[S, S], p0: f64[S], tgt: f64[S], K1: f64[K]) -> f64:
    P[i, j] = exp(Lg[i, j] - logsumexp[l](Lg[i, l]))
    p[k: K, j: S] = [k == 0] * p0[j] + [k >= 1] * sum[i](p[k - 1, i] * P[i, j])
    return sum[j](tgt[j] * (log(tgt[j]) - log(p[K - 1, j])))
""", sizes=dict(S=4, K=5), make=lambda rng, S, K: dict(
            Lg=_normal(rng, S, S), p0=rng.dirichlet(np.ones(S)), tgt=rng.dirichlet(np.ones(S)),
            K1=np.zeros(K)),
        ref=markov_ref, note="a vector-matrix recurrence with a softmax matrix"),

    "execution": dict(src="""
# Almgren-Chriss optimal execution: trades a softmax share of X0, inventory the
# running remainder, cost temporary impact plus risk
def execution(u: f64[N], X0: f64, eta: f64, gam: f64, lam: f64, sig: f64) -> f64:
    lz = logsumexp[k](u[k])
    tr[k] = X0 * exp(u[k] - lz)
    inv[k: N] = [k == 0] * X0 + [k >= 1] * inv[k - 1] - tr[k]
    return eta * sum[k](tr[k] ** 2) + 0.5 * gam * X0 ** 2 + lam * sig ** 2 * sum[k](inv[k] ** 2)
""", sizes=dict(N=8), make=lambda rng, N: dict(
            u=_normal(rng, N), X0=2.0, eta=0.1, gam=0.05, lam=0.3, sig=0.5),
        ref=execution_ref, note="a running sum as a recurrence; scalar parameters squared"),

    "elo": dict(src="""
# Elo ratings: game t between players a[t] and b[t] with outcome out[t] moves both
# ratings; the log-loss of predicting each game from the ratings before it
def elo(a: i64[G], b: i64[G], out: f64[G], r0: f64[P], kf: f64) -> f64:
    r[t: G, p: P] = [t == 0] * r0[p] + [t >= 1] * (r[t - 1, p] + kf * ([p == a[t - 1]] - [p == b[t - 1]]) * (out[t - 1] - sigmoid(r[t - 1, a[t - 1]] - r[t - 1, b[t - 1]])))
    pr[t] = sigmoid(r[t, a[t]] - r[t, b[t]])
    return -sum[t](out[t] * log(pr[t]) + (1.0 - out[t]) * log(1.0 - pr[t]))
""", sizes=dict(G=7, P=4), make=_elo_make, ref=elo_ref,
        note="a recurrence whose steps gather through labels at a shifted position"),

    "softsw": dict(src="""
# soft Smith-Waterman local alignment: each cell a soft maximum of a restart (0),
# a match and two gaps; the score a soft maximum over all cells
def softsw(S: f64[n, m], gap: f64, g: f64) -> f64:
    H[i: n, j: m] = g * logsumexp[c: 4](([c == 1] * (S[i, j] + [i >= 1 and j >= 1] * H[i - 1, j - 1])
                                       + [c == 2] * ([i >= 1] * H[i - 1, j] - gap)
                                       + [c == 3] * ([j >= 1] * H[i, j - 1] - gap)) / g)
    return g * logsumexp[i, j](H[i, j] / g)
""", sizes=dict(n=4, m=5), make=lambda rng, n, m: dict(S=_normal(rng, n, m), gap=0.5, g=0.7),
        ref=softsw_ref, note="a two-index recurrence; a bracket-selected logsumexp over four choices"),

    # -------------------------------------------------------------- feature combinations
    "chain3": dict(src="""
# first differences, second differences through two calls of the first, and a
# smoothing penalty: calls three deep, every size derived from n
def diff1(x: f64[n]) -> f64[n - 1]:
    d[i: n - 1] = x[i + 1] - x[i]
    return d

def diff2(x: f64[n]) -> f64[n - 2]:
    a = diff1(x)
    b = diff1(a)
    return b

def chain3(x: f64[n], lam: f64, y: f64[n]) -> f64:
    c = diff2(x)
    return sum[i]((x[i] - y[i]) ** 2) + lam * sum[i](c[i] ** 2)
""", sizes=dict(n=7), make=lambda rng, n: dict(x=_normal(rng, n), lam=0.5, y=_normal(rng, n)),
        ref=chain3_ref, note="a derived size of a derived size through a call"),

    "pool4": dict(src="""
# max pooling by 2, applied twice through a call: a size n / 2 / 2
def pool2(x: f64[n]) -> f64[n / 2]:
    p[i: n / 2] = max(x[2 * i], x[2 * i + 1])
    return p

def pool4(x: f64[n]) -> f64:
    a = pool2(x)
    b = pool2(a)
    return sum[i](b[i] ** 2)
""", sizes=dict(n=12), make=lambda rng, n: dict(x=_normal(rng, n)),
        ref=pool4_ref, note="a division of a division by a call"),

    "runmax": dict(src="""
# the gain of each value over the running maximum before it (a max over an empty
# range at i = 0, which the bracket zeroes)
def runmax(x: f64[n], w: f64[n]) -> f64:
    pm[i: n] = max[j | j < i](x[j])
    gain[i] = [i >= 1] * max(x[i] - pm[i], 0.0)
    return sum[i](w[i] * gain[i])
""", sizes=dict(n=7), make=lambda rng, n: dict(x=_normal(rng, n), w=rng.random(n)),
        ref=runmax_ref, note="-inf from an empty reduction under a strong zero"),

    "nbsmooth": dict(src="""
# label smoothing onto the neighbouring classes (ordinal labels): 0.8 on the
# label, 0.1 on each neighbour that exists
def nbsmooth(Z: f64[b, k], y: i64[b]) -> f64:
    lp[s, c] = Z[s, c] - logsumexp[j](Z[s, j])
    return -sum[s, c]((0.8 * [c == y[s]] + 0.1 * [c == y[s] + 1] + 0.1 * [c == y[s] - 1]) * lp[s, c]) / b
""", sizes=dict(b=6, k=4), make=lambda rng, b, k: dict(
            Z=_normal(rng, b, k), y=(3 * np.arange(b)) % k),
        ref=nbsmooth_ref, note="label arithmetic in comparisons at the edges of the classes"),

    "robust": dict(src="""
# three results taken apart; powers with negative, fractional and parameter
# exponents, one under a value guard where its base is negative
def moments(x: f64[n]) -> (f64, f64, f64[n]):
    m = sum[i](x[i]) / n
    v = sum[i]((x[i] - m) ** 2) / n
    z[i] = (x[i] - m) * v ** -0.5
    return m, v, z

def robust(x: f64[n], p: f64) -> f64:
    m, v, z = moments(x)
    return sum[i]((1.0 + z[i] ** 2) ** (p / 2.0)) + v ** 1.5 - m ** 2 + sum[i]([x[i] > 0.0] * x[i] ** -0.5)
""", sizes=dict(n=6), make=lambda rng, n: dict(x=_normal(rng, n) + 0.3, p=1.3),
        ref=robust_ref, note="a power of a negative base under a bracket that excludes it"),
}

# What the language refuses by design (LANGUAGE.md), each a located error.
REJECTED = {
    # a dense Cholesky reads the columns before j through a triangle sum: not a
    # constant step (gmrf writes the banded factor as a recurrence instead)
    "chol_triangle": ("""
def chol_triangle(A: f64[n, n]) -> f64:
    L[j: n, i: n] = [i >= j] * (A[i, j] - sum[k]([k < j] * L[k, i] * L[k, j])) / sqrt(A[j, j] - sum[k]([k < j] * L[k, j] ** 2))
    return sum[j](log(L[j, j]))
""", "TLRecurrenceError", "does not step by a constant along j", 3),
    # a comb filter whose delay is a size: a recurrence steps by integer constants
    # (allpass writes its delays as literals)
    "delay_param": ("""
def delay_param(x: f64[T], g: f64, D1: f64[D]) -> f64:
    y[t] = x[t] + [t >= D] * g * y[t - D]
    return sum[t](y[t] ** 2)
""", "TLRecurrenceError", "y[t - D] in y does not step by a constant along t", 3),
    # an index used only in a filter has no range (runmax writes pm[i: n])
    "runmax_norange": ("""
def runmax_norange(x: f64[n], w: f64[n]) -> f64:
    pm[i] = max[j | j < i](x[j])
    return sum[i](w[i] * pm[i])
""", "TLShapeError", "cannot infer the range of index i", 3),
    # a group steps one way along its leading index
    "two_way_group": ("""
def two_way_group(x: f64[T]) -> f64:
    a[t: T] = x[t] + [t >= 1] * b[t - 1]
    b[t: T] = a[t] + [t + 1 < T] * a[t + 1]
    return b[T - 1]
""", "TLRecurrenceError", "a[t + 1] reads a later step along t", 4),
}
