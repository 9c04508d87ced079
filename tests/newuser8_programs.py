"""An eighth set of programs written from the documentation alone.

Domains the earlier sets (tests/newuser_programs.py ... tests/newuser7_programs.py)
leave out: audio (a framed magnitude-spectrum loss through cos/sin tables at a hop
of four over a derived frame count, a Karplus-Strong string whose feedback reads
three and four steps back, an attack/release envelope follower with kinks in the
step, mu-law companding with a sign made of brackets, the soft argmax of a
cross-correlation's lag), vision and geometry (bundle adjustment with radial
distortion through camera and point tables, a homography's transfer error, the
Sampson error of a fundamental matrix, a chamfer distance by min over points,
bilinear sampling through four i64 corner tables, a soft grey-scale dilation by
a filtered logsumexp over a 3x3 window), scientific ML (a physics-informed
residual of a reaction-diffusion equation, Darcy flow with a log-permeability
field, a leapfrog integrator whose half and full momentum steps are three
statements of one group, Allen-Cahn on a periodic grid, an upwind advection with
a minmod flux limiter, GraphSAGE's mean aggregation with in-degrees counted by
brackets), probabilistic models (a von Mises mixture whose Bessel normaliser is a
series, a reparameterised ELBO, a Gaussian process likelihood whose triangular
solve is a recurrence carrying the whole vector, skew-normal regression through
erf, the generalised extreme value likelihood with a parameter exponent),
optimisation (a soft top-k through pairwise sigmoids, a log-barrier LP objective,
a soft facility location, a Huberised quantile loss, a tandem queue's departure
times as a max over two leading indices), attention (multi-query attention, causal
linear attention as a prefix-sum recurrence, a tied-embedding language model,
T5-style relative position buckets through a 2-D i64 table, a pointer-generator
mixture whose copy term compares labels with labels), and edge cases (an index
used three times in one read, reads at shifts from -5 to +3 near both ends, a
scalar-only program, a piecewise-constant result, two results of a call where one
is the sum of the other, a label gathered and compared, every size 1, size symbols
swapped between parameters, a chain of twelve calls, a 2-D grid RNN).  Each entry
has the shape of the other sets: the program text (the function to test is named
like the entry), the sizes of the test inputs, `make(rng, **sizes)`, an
independent NumPy version `ref(**inputs)` and a note.
tests/test_newuser8_programs.py checks them.
"""
import numpy as np
from scipy.linalg import solve_triangular
from scipy.special import erf as _erf
from scipy.special import expit as _sigmoid
from scipy.special import i0 as _i0
from scipy.special import logsumexp as _lse

from newuser2_programs import _normal, _softplus

PI = np.pi


def _softmax(Z, axis=-1):
    return np.exp(Z - _lse(Z, axis=axis, keepdims=True))


# ------------------------------------------------------------------ audio
def stft_mag_ref(x, win, C, S, tgt):
    n, W = len(x), len(win)
    F = (n - W) // 4 + 1
    fr = np.stack([x[4 * f:4 * f + W] * win for f in range(F)])
    re, im = fr @ C, fr @ S
    return float(np.sum((np.sqrt(re ** 2 + im ** 2 + 1e-8) - tgt) ** 2))


def _stft_make(rng, n, W, K):
    F = (n - W) // 4 + 1
    t = np.arange(W)[:, None]
    k = np.arange(K)[None, :]
    return dict(x=_normal(rng, n), win=0.5 - 0.5 * np.cos(2 * PI * np.arange(W) / W),
                C=np.cos(2 * PI * t * k / W), S=-np.sin(2 * PI * t * k / W),
                tgt=np.abs(_normal(rng, F, K)))


def karplus_ref(x, g, tgt):
    T = len(x)
    y = np.zeros(T)
    for t in range(T):
        y[t] = x[t] + g * 0.5 * ((y[t - 3] if t >= 3 else 0.0) + (y[t - 4] if t >= 4 else 0.0))
    return float(np.sum((y - tgt) ** 2))


def envelope_ref(x, att, rel, tgt):
    a = np.abs(x)
    e = np.zeros(len(x))
    e[0] = a[0]
    for t in range(1, len(x)):
        e[t] = (e[t - 1] + _sigmoid(att) * max(a[t] - e[t - 1], 0.0)
                - _sigmoid(rel) * max(e[t - 1] - a[t], 0.0))
    return float(np.sum((e - tgt) ** 2))


def mulaw_ref(x, mu, y):
    c = np.log1p(mu * np.abs(x)) / np.log1p(mu) * np.sign(x)
    return float(np.sum((c - y) ** 2))


def softlag_ref(x, y, lag, tau):
    n = len(x)
    r = np.array([sum(x[i] * y[i + l - n + 1] for i in range(n) if 0 <= i + l - n + 1 < n)
                  for l in range(2 * n - 1)])
    return float(np.sum(_softmax(r / tau) * lag))


# ------------------------------------------------------------------ vision and geometry
def bundle_ref(P, R, tr, fk, cam, pt, uv):
    Xc = np.einsum("sab,sb->sa", R[cam], P[pt]) + tr[cam]
    pn = Xc[:, :2] / Xc[:, 2:3]
    r2 = np.sum(pn ** 2, axis=1)
    dist = 1.0 + fk[cam, 1] * r2 + fk[cam, 2] * r2 ** 2
    return float(np.sum((fk[cam, 0][:, None] * dist[:, None] * pn - uv) ** 2))


def _bundle_make(rng, m, c, o):
    R = np.eye(3)[None] + 0.1 * _normal(rng, c, 3, 3)
    tr = np.concatenate([0.3 * _normal(rng, c, 2), 5.0 + np.zeros((c, 1))], axis=1)
    return dict(P=_normal(rng, m, 3), R=R, tr=tr,
                fk=np.stack([1.0 + 0.1 * rng.random(c), 0.1 * _normal(rng, c), 0.01 * _normal(rng, c)], 1),
                cam=rng.integers(0, c, o), pt=rng.integers(0, m, o), uv=0.2 * _normal(rng, o, 2))


def homog_ref(H, p, q):
    h = p @ H[:, :2].T + H[:, 2]
    return float(np.sum((h[:, :2] / h[:, 2:3] - q) ** 2) / len(p))


def sampson_ref(F, p, q):
    Fp = p @ F.T
    Fq = q @ F
    e = np.sum(q * Fp, axis=1)
    return float(np.sum(e ** 2 / (Fp[:, 0] ** 2 + Fp[:, 1] ** 2 + Fq[:, 0] ** 2 + Fq[:, 1] ** 2)))


def _homogeneous(rng, n):
    return np.concatenate([_normal(rng, n, 2), np.ones((n, 1))], axis=1)


def chamfer_ref(P, Q):
    D = np.sum((P[:, None, :] - Q[None, :, :]) ** 2, axis=2)
    return float(D.min(axis=1).mean() + D.min(axis=0).mean())


def bilin_ref(img, y0, y1, x0, x1, fy, fx, tgt):
    v = ((1 - fy) * ((1 - fx) * img[y0, x0] + fx * img[y0, x1])
         + fy * ((1 - fx) * img[y1, x0] + fx * img[y1, x1]))
    return float(np.sum((v - tgt) ** 2))


def _bilin_make(rng, h, w, p):
    py = rng.random(p) * (h - 1)
    px = rng.random(p) * (w - 1)
    y0 = np.floor(py).astype(np.int64)
    x0 = np.floor(px).astype(np.int64)
    return dict(img=_normal(rng, h, w), y0=y0, y1=np.minimum(y0 + 1, h - 1), x0=x0,
                x1=np.minimum(x0 + 1, w - 1), fy=py - y0, fx=px - x0, tgt=_normal(rng, p))


def softdilate_ref(img, beta, tgt):
    h, w = img.shape
    d = np.zeros((h, w))
    for r in range(h):
        for c in range(w):
            win = img[max(r - 1, 0):r + 2, max(c - 1, 0):c + 2]
            d[r, c] = _lse(beta * win) / beta
    return float(np.sum((d - tgt) ** 2))


# ------------------------------------------------------------------ scientific ML
def pinn1d_ref(u, k, f, h, ua, ub):
    n = len(u)
    lap = np.zeros(n)
    r = np.zeros(n)
    lap[1:-1] = (u[:-2] - 2 * u[1:-1] + u[2:]) / h ** 2
    r[1:-1] = lap[1:-1] + k * u[1:-1] * (1 - u[1:-1]) - f[1:-1]
    return float(np.sum(r ** 2) / n + (u[0] - ua) ** 2 + (u[-1] - ub) ** 2)


def darcy_ref(k, u, f):
    n = len(u)
    q = np.zeros(n)
    q[:-1] = np.exp(0.5 * (k[:-1] + k[1:])) * (u[1:] - u[:-1])
    r = np.zeros(n)
    r[1:-1] = q[1:-1] - q[:-2] + f[1:-1]
    return float(np.sum(r ** 2))


def hmc_lf_ref(q0, p0, P, eps, K1):
    q, p = q0.copy(), p0.copy()
    for _ in range(len(K1)):
        ph = p - 0.5 * eps * P @ q
        q = q + eps * ph
        p = ph - 0.5 * eps * P @ q
    return float(0.5 * p @ p + 0.5 * q @ P @ q)


def _spd(rng, d):
    A = _normal(rng, d, d)
    return A @ A.T / d + np.eye(d)


def allen_cahn_ref(u0, K1, dt, eps2, tgt):
    u = u0.copy()
    for _ in range(len(K1) - 1):
        u = u + dt * (eps2 * (np.roll(u, 1) + np.roll(u, -1) - 2 * u) + u - u ** 3)
    return float(np.sum((u - tgt) ** 2))


def minmod_ref(u0, K1, c, tgt):
    n = len(u0)
    u = u0.copy()

    def flux(u):
        sl = np.zeros(n)
        a, b = u[1:-1] - u[:-2], u[2:] - u[1:-1]
        sl[1:-1] = np.maximum(np.minimum(a, b), 0.0) + np.minimum(np.maximum(a, b), 0.0)
        return u + 0.5 * (1 - c) * sl

    for _ in range(len(K1) - 1):
        fl = flux(u)
        u = u - c * (fl - np.concatenate([[0.0], fl[:-1]]))
    return float(np.sum((u - tgt) ** 2))


def sage_ref(X, src, dst, Ws, Wn, y):
    v = X.shape[0]
    deg = np.bincount(dst, minlength=v).astype(float)
    agg = np.zeros_like(X)
    np.add.at(agg, dst, X[src])
    agg /= np.maximum(deg, 1.0)[:, None]
    H = np.maximum(X @ Ws + agg @ Wn, 0.0)
    return float(np.sum(_lse(H, axis=1) - H[np.arange(v), y]) / v)


# ------------------------------------------------------------------ probabilistic models
def vonmises_ref(x, mu, lk, lw, mm, lf):
    kap = np.exp(lk)
    logp = (lw - _lse(lw))[None, :] + kap[None, :] * np.cos(x[:, None] - mu[None, :]) \
        - np.log(2 * PI * _i0(kap))[None, :]
    return float(-np.sum(_lse(logp, axis=1)))


def _vonmises_make(rng, n, K, M):
    m = np.arange(M, dtype=float)
    lf = np.cumsum(np.log(np.maximum(m, 1.0)))
    return dict(x=rng.uniform(-PI, PI, n), mu=_normal(rng, K), lk=0.3 * _normal(rng, K),
                lw=_normal(rng, K), mm=m, lf=lf)


def elbo_ref(m, ls, eps, X, y):
    S = eps.shape[0]
    w = m[None] + np.exp(ls)[None] * eps
    z = w @ X.T
    ll = np.sum(y[None] * z - _softplus(z)) / S
    return float(-(ll - 0.5 * np.sum(w ** 2) / S + np.sum(ls)))


def gp_tri_ref(L, y):
    z = solve_triangular(np.tril(L), y, lower=True)
    return float(0.5 * z @ z + np.sum(np.log(np.diag(L))))


def _gp_make(rng, n):
    A = _normal(rng, n, n)
    K = A @ A.T / n + np.eye(n)
    return dict(L=np.linalg.cholesky(K), y=_normal(rng, n))


def skewnorm_ref(X, b, ls, al, y):
    z = (y - X @ b) / np.exp(ls)
    return float(-np.sum(np.log(2.0) - 0.5 * z ** 2 - 0.5 * np.log(2 * PI) - ls
                         + np.log(0.5 * (1 + _erf(al * z / np.sqrt(2.0))))))


def gev_ref(y, mu, ls, xi):
    t = 1.0 + xi * (y - mu) / np.exp(ls)
    return float(np.sum(ls + (1.0 + 1.0 / xi) * np.log(t) + t ** (-1.0 / xi)))


# ------------------------------------------------------------------ optimisation
def softtopk_ref(s, v, k, tau):
    r = np.sum(_sigmoid((s[None, :] - s[:, None]) / tau), axis=1)
    return float(-np.sum(_sigmoid((k - r) / tau) * v))


def logbarrier_ref(x, c, A, b, mu):
    return float(c @ x - mu * np.sum(np.log(b - A @ x)) - mu * np.sum(np.log(x)))


def facility_ref(C, S, o, tau, fc):
    D = np.sqrt(np.sum((C[:, None, :] - S[None, :, :]) ** 2, axis=2) + 1e-9)
    return float(-tau * np.sum(_lse(-(D - np.log(_sigmoid(o))[None]) / tau, axis=1))
                 + fc * np.sum(_sigmoid(o)))


def huberq_ref(X, W, y, taus, kap):
    u = y[:, None] - X @ W.T
    hb = np.where(np.abs(u) <= kap, 0.5 * u ** 2 / kap, np.abs(u) - 0.5 * kap)
    return float(np.sum(np.abs(taus[None] - (u < 0)) * hb) / len(y))


def tandem_ref(S, a):
    N, K = S.shape
    D = np.zeros((N, K))
    for i in range(N):
        for k in range(K):
            first = a[i] if k == 0 else D[i, k - 1]
            D[i, k] = max(first, D[i - 1, k] if i >= 1 else 0.0) + S[i, k]
    return float(np.sum(D[:, K - 1] - a) / N)


# ------------------------------------------------------------------ attention
def mqa_ref(X, Wq, Wk, Wv, Wo):
    T = X.shape[0]
    e = Wk.shape[1]
    Q = np.einsum("tj,hja->hta", X, Wq)
    K, V = X @ Wk, X @ Wv
    s = np.einsum("hta,ua->htu", Q, K) / np.sqrt(e)
    s = np.where(np.tril(np.ones((T, T)))[None] > 0, s, -np.inf)
    P = _softmax(s, axis=2)
    O = np.einsum("htu,ua,haj->tj", P, V, Wo)
    return float(np.sum(O ** 2) / T)


def linattn_ref(q, k, v, tgt):
    fq, fk = _softplus(q), _softplus(k)
    S = np.cumsum(fk[:, :, None] * v[:, None, :], axis=0)
    Z = np.cumsum(fk, axis=0)
    o = np.einsum("ti,tij->tj", fq, S) / np.sum(fq * Z, axis=1)[:, None]
    return float(np.sum((o - tgt) ** 2))


def tied_lm_ref(E, W, x, y):
    h = np.tanh(E[x] @ W)
    lg = h @ E.T
    return float(np.sum(_lse(lg, axis=1) - lg[np.arange(len(y)), y]) / len(y))


def relbias_ref(Q, K, bk, bb, V):
    s = Q @ K.T + bb[bk]
    return float(np.sum((_softmax(s, axis=1) @ V) ** 2))


def _relbias_make(rng, T, d, B):
    rel = np.arange(T)[None, :] - np.arange(T)[:, None]
    bk = np.clip(rel + B // 2, 0, B - 1).astype(np.int64)
    return dict(Q=_normal(rng, T, d), K=_normal(rng, T, d), bk=bk, bb=_normal(rng, B), V=_normal(rng, T, d))


def pointer_ref(Lg, At, gz, src, y):
    T = len(y)
    pv = _softmax(Lg, axis=1)[np.arange(T), y]
    pa = _softmax(At, axis=1)
    g = _sigmoid(gz)
    p = g * pv + (1 - g) * np.sum(pa * (src[None, :] == y[:, None]), axis=1)
    return float(-np.sum(np.log(p)))


# ------------------------------------------------------------------ edge cases
def triple_idx_ref(A, x):
    n = len(x)
    d = A[np.arange(n), np.arange(n), np.arange(n)] * x
    return float(np.sum(d ** 2) + np.einsum("iji,j->", A, x))


def negshift_ref(x, w):
    n = len(x)
    y = np.zeros(n)
    for i in range(n):
        y[i] = w[2] * x[i]
        if i >= 2:
            y[i] += w[0] * x[i - 2]
        if i >= 1:
            y[i] += w[1] * x[i - 1]
        if i + 1 < n:
            y[i] += w[3] * x[i + 1]
        if i + 3 < n:
            y[i] += w[4] * x[i + 3]
        if i >= 5 and i + 2 < n:
            y[i] += w[5] * x[i - 5] * x[i + 2]
    return float(np.sum(y ** 2))


def scalar_only_ref(a, b, c):
    d = a * b - c
    e = np.exp(-d ** 2) + np.log1p(a ** 2) * np.tanh(b)
    return float(e / (1 + c ** 2) + max(a, c) * min(b, 0.5))


def const_out_ref(x, y):
    return float(2.0 * np.sum(x > 0) + 3.0)


def two_out_ref(x, w):
    v = w * x ** 2
    return float(np.sum(v) ** 2 - np.sum(v * x))


def label_both_ref(E, y, z):
    S = len(y)
    d = E.shape[1]
    return float(np.sum(z[np.arange(S), y] * E[y, 0]) + np.sum(E[y, d - 1] * z[np.arange(S), y]))


def ones_ref(A, x, h0, K1):
    h = h0.copy()
    for _ in range(len(K1)):
        h = np.tanh(h + A @ x)
    return float(np.sum(h ** 2) + x[-1] * h0[0])


def sizes_reused_ref(A, B, u, v):
    C = A @ B
    return float(v @ C @ v + np.einsum("kl,lk,k->", B, A, u))


def deep_calls_ref(x):
    y = np.tanh(x)
    for level in range(1, 12):
        a = y
        if level % 2:
            y = a + 0.5 * np.concatenate([[0.0], a[:-1]])
        else:
            y = a * (1.0 - 0.1 * a)
    return float(np.sum(y ** 2))


def grid_rnn_ref(x, U, V):
    n, m, c = x.shape
    h = np.zeros((n, m, c))
    for i in range(n):
        for j in range(m):
            s = x[i, j].copy()
            if i >= 1:
                s += U @ h[i - 1, j]
            if j >= 1:
                s += V @ h[i, j - 1]
            h[i, j] = np.tanh(s)
    return float(np.sum(h[n - 1, m - 1] ** 2) + 0.1 * np.sum(h))


def _deep_calls_src():
    lines = ["# a chain of twelve functions, each calling the one before",
             "def f0(x: f64[n]) -> f64[n]:", "    y[i] = tanh(x[i])", "    return y"]
    for level in range(1, 12):
        body = ("    y[i] = a[i] + 0.5 * [i >= 1] * a[i - 1]" if level % 2
                else "    y[i] = a[i] * (1.0 - 0.1 * a[i])")
        lines += [f"def f{level}(x: f64[n]) -> f64[n]:", f"    a = f{level - 1}(x)", body, "    return y"]
    lines += ["def deep_calls(x: f64[n]) -> f64:", "    y = f11(x)", "    return sum[i](y[i] ** 2)"]
    return "\n".join(lines) + "\n"


PROGRAMS = {
    # -------------------------------------------------------------- audio
    "stft_mag": dict(src="""
# a magnitude-spectrum loss: Hann-windowed frames at a hop of 4 (a derived frame
# count), real and imaginary parts through cos/sin tables, a smoothed magnitude
def stft_mag(x: f64[n], win: f64[W], C: f64[W, K], S: f64[W, K], tgt: f64[(n - W) / 4 + 1, K]) -> f64:
    re[f: (n - W) / 4 + 1, k: K] = sum[t](win[t] * x[4 * f + t] * C[t, k])
    im[f: (n - W) / 4 + 1, k: K] = sum[t](win[t] * x[4 * f + t] * S[t, k])
    mag[f, k] = sqrt(re[f, k] ** 2 + im[f, k] ** 2 + 1e-8)
    return sum[f, k]((mag[f, k] - tgt[f, k]) ** 2)
""", sizes=dict(n=20, W=8, K=5), make=_stft_make, ref=stft_mag_ref,
        note="strided frames over a derived count, a sqrt of a sum of squares"),

    "karplus": dict(src="""
# a Karplus-Strong string: the feedback averages the samples three and four steps
# back (a low-pass inside the loop)
def karplus(x: f64[T], g: f64, tgt: f64[T]) -> f64:
    y[t: T] = x[t] + g * 0.5 * ([t >= 3] * y[t - 3] + [t >= 4] * y[t - 4])
    return sum[t]((y[t] - tgt[t]) ** 2)
""", sizes=dict(T=14), make=lambda rng, T: dict(x=_normal(rng, T), g=0.9, tgt=_normal(rng, T)),
        ref=karplus_ref, note="a recurrence reading 3 and 4 steps back"),

    "envelope": dict(src="""
# an attack/release envelope follower: rises towards |x| at rate sigmoid(att) and
# falls at rate sigmoid(rel)
def envelope(x: f64[T], att: f64, rel: f64, tgt: f64[T]) -> f64:
    a[t] = abs(x[t])
    e[t: T] = [t == 0] * a[0] + [t >= 1] * (e[t - 1] + sigmoid(att) * max(a[t] - e[t - 1], 0.0) - sigmoid(rel) * max(e[t - 1] - a[t], 0.0))
    return sum[t]((e[t] - tgt[t]) ** 2)
""", sizes=dict(T=12), make=lambda rng, T: dict(x=_normal(rng, T), att=0.5, rel=-1.0, tgt=_normal(rng, T)),
        ref=envelope_ref, note="two kinks of the previous step in the step"),

    "mulaw": dict(src="""
# mu-law companding: the sign is a difference of two value brackets
def mulaw(x: f64[n], mu: f64, y: f64[n]) -> f64:
    c[i] = log1p(mu * abs(x[i])) / log1p(mu) * ([x[i] > 0.0] - [x[i] < 0.0])
    return sum[i]((c[i] - y[i]) ** 2)
""", sizes=dict(n=9), make=lambda rng, n: dict(x=_normal(rng, n), mu=5.0, y=0.5 * _normal(rng, n)),
        ref=mulaw_ref, note="a parameter inside log1p as a divisor"),

    "softlag": dict(src="""
# the soft argmax of the lag of a full cross-correlation (2 n - 1 lags)
def softlag(x: f64[n], y: f64[n], lag: f64[2 * n - 1], tau: f64) -> f64:
    r[l: 2 * n - 1] = sum[i]([0 <= i + l - n + 1 < n] * x[i] * y[i + l - n + 1])
    z = logsumexp[l](r[l] / tau)
    return sum[l](exp(r[l] / tau - z) * lag[l])
""", sizes=dict(n=6), make=lambda rng, n: dict(
            x=_normal(rng, n), y=_normal(rng, n), lag=np.arange(2 * n - 1) - (n - 1.0), tau=0.7),
        ref=softlag_ref, note="a derived range 2 n - 1 and a two-sided guard"),

    # -------------------------------------------------------------- vision and geometry
    "bundle": dict(src="""
# bundle adjustment: each observation gathers its camera (rotation, translation,
# focal length and two radial distortion coefficients) and its point
def bundle(P: f64[m, 3], R: f64[c, 3, 3], tr: f64[c, 3], fk: f64[c, 3], cam: i64[o], pt: i64[o], uv: f64[o, 2]) -> f64:
    Xc[s, a] = sum[b](R[cam[s], a, b] * P[pt[s], b]) + tr[cam[s], a]
    pn[s, a: 2] = Xc[s, a] / Xc[s, 2]
    r2[s] = pn[s, 0] ** 2 + pn[s, 1] ** 2
    dist[s] = 1.0 + fk[cam[s], 1] * r2[s] + fk[cam[s], 2] * r2[s] ** 2
    return sum[s, a]((fk[cam[s], 0] * dist[s] * pn[s, a] - uv[s, a]) ** 2)
""", sizes=dict(m=5, c=2, o=8), make=_bundle_make, ref=bundle_ref,
        note="gathers of several parameters by one table, a perspective division"),

    "homog": dict(src="""
# the transfer error of a homography
def homog(H: f64[3, 3], p: f64[n, 2], q: f64[n, 2]) -> f64:
    h[s, a: 3] = sum[b: 2](H[a, b] * p[s, b]) + H[a, 2]
    return sum[s, a: 2]((h[s, a] / h[s, 2] - q[s, a]) ** 2) / n
""", sizes=dict(n=7), make=lambda rng, n: dict(
            H=np.eye(3) + 0.1 * _normal(rng, 3, 3), p=_normal(rng, n, 2), q=_normal(rng, n, 2)),
        ref=homog_ref, note="a constant column read beside a contraction"),

    "sampson": dict(src="""
# the Sampson error of a fundamental matrix over homogeneous correspondences
def sampson(F: f64[3, 3], p: f64[n, 3], q: f64[n, 3]) -> f64:
    Fp[s, a] = sum[b](F[a, b] * p[s, b])
    Fq[s, b] = sum[a](F[a, b] * q[s, a])
    e[s] = sum[a](q[s, a] * Fp[s, a])
    return sum[s](e[s] ** 2 / (Fp[s, 0] ** 2 + Fp[s, 1] ** 2 + Fq[s, 0] ** 2 + Fq[s, 1] ** 2))
""", sizes=dict(n=6), make=lambda rng, n: dict(
            F=_normal(rng, 3, 3), p=_homogeneous(rng, n), q=_homogeneous(rng, n)),
        ref=sampson_ref, note="a quotient of a square by four constant-index squares"),

    "chamfer": dict(src="""
# the symmetric chamfer distance: mean nearest squared distance both ways
def chamfer(P: f64[n, d], Q: f64[m, d]) -> f64:
    D[i, j] = sum[k]((P[i, k] - Q[j, k]) ** 2)
    return sum[i](min[j](D[i, j])) / n + sum[j](min[i](D[i, j])) / m
""", sizes=dict(n=6, m=5, d=3), make=lambda rng, n, m, d: dict(P=_normal(rng, n, d), Q=_normal(rng, m, d)),
        ref=chamfer_ref, note="min over each index of one stored tensor"),

    "bilin": dict(src="""
# bilinear sampling of an image at points given by their corner rows/columns
# (i64 tables) and fractional offsets
def bilin(img: f64[h, w], y0: i64[p], y1: i64[p], x0: i64[p], x1: i64[p], fy: f64[p], fx: f64[p], tgt: f64[p]) -> f64:
    v[s] = (1.0 - fy[s]) * ((1.0 - fx[s]) * img[y0[s], x0[s]] + fx[s] * img[y0[s], x1[s]]) + fy[s] * ((1.0 - fx[s]) * img[y1[s], x0[s]] + fx[s] * img[y1[s], x1[s]])
    return sum[s]((v[s] - tgt[s]) ** 2)
""", sizes=dict(h=4, w=5, p=7), make=_bilin_make, ref=bilin_ref,
        note="four 2-D gathers through four tables"),

    "softdilate": dict(src="""
# a soft grey-scale dilation: logsumexp over the 3x3 window inside the image
def softdilate(img: f64[h, w], beta: f64, tgt: f64[h, w]) -> f64:
    d[r: h, c: w] = logsumexp[a: 3, b: 3 | 0 <= r + a - 1 < h and 0 <= c + b - 1 < w](beta * img[r + a - 1, c + b - 1]) / beta
    return sum[r, c]((d[r, c] - tgt[r, c]) ** 2)
""", sizes=dict(h=4, w=5), make=lambda rng, h, w: dict(img=_normal(rng, h, w), beta=3.0, tgt=_normal(rng, h, w)),
        ref=softdilate_ref, note="a filtered logsumexp over a window, divided by a parameter"),

    # -------------------------------------------------------------- scientific ML
    "pinn1d": dict(src="""
# a physics-informed loss on a grid: u'' + k u (1 - u) = f inside, u = ua, ub at the ends
def pinn1d(u: f64[n], k: f64, f: f64[n], h: f64, ua: f64, ub: f64) -> f64:
    lap[i] = [1 <= i < n - 1] * (u[i - 1] - 2.0 * u[i] + u[i + 1]) / h ** 2
    r[i] = [1 <= i < n - 1] * (lap[i] + k * u[i] * (1.0 - u[i]) - f[i])
    return sum[i](r[i] ** 2) / n + (u[0] - ua) ** 2 + (u[n - 1] - ub) ** 2
""", sizes=dict(n=9), make=lambda rng, n: dict(
            u=_normal(rng, n), k=1.5, f=_normal(rng, n), h=0.3, ua=0.2, ub=-0.4),
        ref=pinn1d_ref, note="a chain guard and a parameter squared as divisor"),

    "darcy": dict(src="""
# Darcy flow residual with a log-permeability field between neighbours
def darcy(k: f64[n], u: f64[n], f: f64[n]) -> f64:
    q[i] = [i + 1 < n] * exp(0.5 * (k[i] + k[i + 1])) * (u[i + 1] - u[i])
    r[i] = [1 <= i] * [i + 1 < n] * (q[i] - q[i - 1] + f[i])
    return sum[i](r[i] ** 2)
""", sizes=dict(n=8), make=lambda rng, n: dict(k=0.3 * _normal(rng, n), u=_normal(rng, n), f=_normal(rng, n)),
        ref=darcy_ref, note="a flux at half points, its difference"),

    "hmc_lf": dict(src="""
# leapfrog for H = p.p / 2 + q.P.q / 2: a half momentum step, a position step and a
# second half step, one group of three statements; K1 only gives the step count
def hmc_lf(q0: f64[d], p0: f64[d], P: f64[d, d], eps: f64, K1: f64[K]) -> f64:
    ph[t: K, i: d] = [t == 0] * p0[i] + [t >= 1] * pf[t - 1, i] - 0.5 * eps * sum[j](P[i, j] * ([t == 0] * q0[j] + [t >= 1] * q[t - 1, j]))
    q[t: K, i: d] = [t == 0] * q0[i] + [t >= 1] * q[t - 1, i] + eps * ph[t, i]
    pf[t: K, i: d] = ph[t, i] - 0.5 * eps * sum[j](P[i, j] * q[t, j])
    return 0.5 * sum[i](pf[K - 1, i] ** 2) + 0.5 * sum[i, j](q[K - 1, i] * P[i, j] * q[K - 1, j])
""", sizes=dict(d=3, K=5), make=lambda rng, d, K: dict(
            q0=_normal(rng, d), p0=_normal(rng, d), P=_spd(rng, d), eps=0.2, K1=np.zeros(K)),
        ref=hmc_lf_ref, note="three statements of a group, offsets 0 and 1, an unused parameter"),

    "allen_cahn": dict(src="""
# Allen-Cahn on a periodic grid: the wrap-around neighbours are brackets at the ends
def allen_cahn(u0: f64[n], K1: f64[K], dt: f64, eps2: f64, tgt: f64[n]) -> f64:
    u[t: K, i: n] = [t == 0] * u0[i] + [t >= 1] * (u[t - 1, i] + dt * (eps2 * ([i >= 1] * u[t - 1, i - 1] + [i == 0] * u[t - 1, n - 1] + [i + 1 < n] * u[t - 1, i + 1] + [i == n - 1] * u[t - 1, 0] - 2.0 * u[t - 1, i]) + u[t - 1, i] - u[t - 1, i] ** 3))
    return sum[i]((u[K - 1, i] - tgt[i]) ** 2)
""", sizes=dict(n=7, K=5), make=lambda rng, n, K: dict(
            u0=0.5 * _normal(rng, n), K1=np.zeros(K), dt=0.1, eps2=0.5, tgt=0.5 * _normal(rng, n)),
        ref=allen_cahn_ref, note="periodic neighbours of the previous step"),

    "minmod": dict(src="""
# upwind advection with a minmod-limited slope (MUSCL) and zero inflow
def minmod(u0: f64[n], K1: f64[K], c: f64, tgt: f64[n]) -> f64:
    u[t: K, i: n] = [t == 0] * u0[i] + [t >= 1] * (u[t - 1, i] - c * (fl[t - 1, i] - [i >= 1] * fl[t - 1, i - 1]))
    sl[t: K, i: n] = [1 <= i < n - 1] * (max(min(u[t, i] - u[t, i - 1], u[t, i + 1] - u[t, i]), 0.0) + min(max(u[t, i] - u[t, i - 1], u[t, i + 1] - u[t, i]), 0.0))
    fl[t: K, i: n] = u[t, i] + 0.5 * (1.0 - c) * sl[t, i]
    return sum[i]((u[K - 1, i] - tgt[i]) ** 2)
""", sizes=dict(n=8, K=4), make=lambda rng, n, K: dict(
            u0=_normal(rng, n), K1=np.zeros(K), c=0.4, tgt=_normal(rng, n)),
        ref=minmod_ref, note="nested max/min of neighbour differences inside a group"),

    "sage": dict(src="""
# GraphSAGE: a mean over in-neighbours (degrees counted by brackets), ReLU, and a
# cross-entropy over node labels
def sage(X: f64[v, d], src: i64[e], dst: i64[e], Ws: f64[d, k], Wn: f64[d, k], y: i64[v]) -> f64:
    deg[a: v] = sum[s]([dst[s] == a])
    agg[a: v, j: d] = sum[s]([dst[s] == a] * X[src[s], j]) / max(deg[a], 1.0)
    H[a, c] = max(sum[j](X[a, j] * Ws[j, c] + agg[a, j] * Wn[j, c]), 0.0)
    return sum[a](logsumexp[c](H[a, c]) - H[a, y[a]]) / v
""", sizes=dict(v=5, d=3, k=4, e=8), make=lambda rng, v, d, k, e: dict(
            X=_normal(rng, v, d), src=rng.integers(0, v, e), dst=rng.integers(0, v, e),
            Ws=_normal(rng, d, k), Wn=_normal(rng, d, k), y=rng.integers(0, k, v)),
        ref=sage_ref, note="a scatter by comparison, a count as divisor, ReLU"),

    # -------------------------------------------------------------- probabilistic models
    "vonmises": dict(src="""
# a mixture of von Mises densities; log I0(kappa) is its series, m! from a table
def vonmises(x: f64[n], mu: f64[K], lk: f64[K], lw: f64[K], mm: f64[M], lf: f64[M]) -> f64:
    li0[c] = logsumexp[m](2.0 * mm[m] * (lk[c] - log(2.0)) - 2.0 * lf[m])
    lp[s, c] = lw[c] + exp(lk[c]) * cos(x[s] - mu[c]) - li0[c] - log(2.0 * 3.141592653589793)
    return -sum[s](logsumexp[c](lp[s, c]) - logsumexp[c](lw[c]))
""", sizes=dict(n=7, K=3, M=30), make=_vonmises_make, ref=vonmises_ref,
        note="a series by logsumexp, a reduction under a sum that does not depend on it"),

    "elbo": dict(src="""
# the ELBO of a diagonal Gaussian posterior for logistic regression, with the
# reparameterisation noise passed in
def elbo(m: f64[d], ls: f64[d], eps: f64[S, d], X: f64[n, d], y: f64[n]) -> f64:
    w[s, j] = m[j] + exp(ls[j]) * eps[s, j]
    z[s, i] = sum[j](X[i, j] * w[s, j])
    ll = sum[s, i](y[i] * z[s, i] - softplus(z[s, i])) / S
    prior = -0.5 * sum[s, j](w[s, j] ** 2) / S
    return -(ll + prior + sum[j](ls[j]))
""", sizes=dict(d=3, S=4, n=6), make=lambda rng, d, S, n: dict(
            m=_normal(rng, d), ls=-1.0 + 0.2 * _normal(rng, d), eps=_normal(rng, S, d),
            X=_normal(rng, n, d), y=(rng.random(n) > 0.5).astype(float)),
        ref=elbo_ref, note="reparameterised samples, softplus likelihood"),

    "gp_tri": dict(src="""
# a GP negative log-likelihood (up to a constant) from a Cholesky factor: forward
# substitution as a recurrence that carries the whole solution vector
def gp_tri(L: f64[n, n], y: f64[n]) -> f64:
    z[t: n, i: n] = [i == t] * (y[t] - [t >= 1] * sum[j]([j < t] * L[t, j] * z[t - 1, j])) / L[t, t] + [i != t] * [t >= 1] * z[t - 1, i]
    return 0.5 * sum[i](z[n - 1, i] ** 2) + sum[i](log(L[i, i]))
""", sizes=dict(n=5), make=lambda rng, n: _gp_make(rng, n), ref=gp_tri_ref,
        note="a diagonal bracket against the leading index in a recurrence"),

    "skewnorm": dict(src="""
# skew-normal regression: log 2 + log phi(z) + log Phi(alpha z) - log sigma
def skewnorm(X: f64[n, p], b: f64[p], ls: f64, al: f64, y: f64[n]) -> f64:
    z[i] = (y[i] - sum[j](X[i, j] * b[j])) / exp(ls)
    return -sum[i](log(2.0) - 0.5 * z[i] ** 2 - 0.5 * log(2.0 * 3.141592653589793) - ls + log(0.5 * (1.0 + erf(al * z[i] / sqrt(2.0)))))
""", sizes=dict(n=8, p=3), make=lambda rng, n, p: dict(
            X=_normal(rng, n, p), b=0.3 * _normal(rng, p), ls=0.2, al=1.5, y=0.5 * _normal(rng, n)),
        ref=skewnorm_ref, note="erf of a scaled residual"),

    "gev": dict(src="""
# the negative log-likelihood of the generalised extreme value distribution (xi > 0)
def gev(y: f64[n], mu: f64, ls: f64, xi: f64) -> f64:
    t[i] = 1.0 + xi * (y[i] - mu) / exp(ls)
    return sum[i](ls + (1.0 + 1.0 / xi) * log(t[i]) + t[i] ** (-1.0 / xi))
""", sizes=dict(n=8), make=lambda rng, n: dict(y=np.abs(_normal(rng, n)), mu=0.1, ls=0.0, xi=0.3),
        ref=gev_ref, note="a power whose exponent is a function of a parameter"),

    # -------------------------------------------------------------- optimisation
    "softtopk": dict(src="""
# a soft top-k: soft ranks from pairwise sigmoids, a soft indicator of rank < k
def softtopk(s: f64[n], v: f64[n], k: f64, tau: f64) -> f64:
    r[i] = sum[j](sigmoid((s[j] - s[i]) / tau))
    w[i] = sigmoid((k - r[i]) / tau)
    return -sum[i](w[i] * v[i])
""", sizes=dict(n=7), make=lambda rng, n: dict(s=_normal(rng, n), v=_normal(rng, n), k=3.0, tau=0.5),
        ref=softtopk_ref, note="pairwise sigmoids divided by a temperature"),

    "logbarrier": dict(src="""
# a log-barrier objective of the LP min c.x, A x <= b, x >= 0
def logbarrier(x: f64[n], c: f64[n], A: f64[m, n], b: f64[m], mu: f64) -> f64:
    sl[i] = b[i] - sum[j](A[i, j] * x[j])
    return sum[j](c[j] * x[j]) - mu * sum[i](log(sl[i])) - mu * sum[j](log(x[j]))
""", sizes=dict(n=4, m=6), make=lambda rng, n, m: dict(
            x=0.5 + rng.random(n), c=_normal(rng, n), A=_normal(rng, m, n), b=10.0 + rng.random(m), mu=0.3),
        ref=logbarrier_ref, note="logs of slacks"),

    "facility": dict(src="""
# soft facility location: each customer's soft-min distance over open sites (a
# gate sigmoid(o) per site) plus an opening cost
def facility(C: f64[m, 2], S: f64[k, 2], o: f64[k], tau: f64, fc: f64) -> f64:
    D[i, s] = sqrt((C[i, 0] - S[s, 0]) ** 2 + (C[i, 1] - S[s, 1]) ** 2 + 1e-9)
    return -tau * sum[i](logsumexp[s](-(D[i, s] - log(sigmoid(o[s]))) / tau)) + fc * sum[s](sigmoid(o[s]))
""", sizes=dict(m=6, k=3), make=lambda rng, m, k: dict(
            C=_normal(rng, m, 2), S=_normal(rng, k, 2), o=_normal(rng, k), tau=0.3, fc=0.5),
        ref=facility_ref, note="a soft-min scaled by a parameter, constant-column reads"),

    "huberq": dict(src="""
# a Huberised quantile (check) loss for Q quantiles
def huberq(X: f64[n, p], W: f64[Q, p], y: f64[n], taus: f64[Q], kap: f64) -> f64:
    u[i, q] = y[i] - sum[j](X[i, j] * W[q, j])
    hb[i, q] = [abs(u[i, q]) <= kap] * 0.5 * u[i, q] ** 2 / kap + [abs(u[i, q]) > kap] * (abs(u[i, q]) - 0.5 * kap)
    return sum[i, q](abs(taus[q] - [u[i, q] < 0.0]) * hb[i, q]) / n
""", sizes=dict(n=8, p=3, Q=3), make=lambda rng, n, p, Q: dict(
            X=_normal(rng, n, p), W=0.5 * _normal(rng, Q, p), y=_normal(rng, n),
            taus=np.array([0.1, 0.5, 0.9])[:Q], kap=0.4),
        ref=huberq_ref, note="value brackets on abs, a bracket inside abs"),

    "tandem": dict(src="""
# departure times of a tandem queue: customer i leaves station k after it left
# station k - 1 and customer i - 1 left station k
def tandem(S: f64[N, K], a: f64[N]) -> f64:
    D[i: N, k: K] = max([k == 0] * a[i] + [k >= 1] * D[i, k - 1], [i >= 1] * D[i - 1, k]) + S[i, k]
    return sum[i](D[i, K - 1] - a[i]) / N
""", sizes=dict(N=6, K=3), make=lambda rng, N, K: dict(
            S=0.5 + rng.random((N, K)), a=np.cumsum(0.3 + rng.random(N))),
        ref=tandem_ref, note="max of two neighbours over two stepping leading indices"),

    # -------------------------------------------------------------- attention
    "mqa": dict(src="""
# causal multi-query attention: H query heads share one key and one value projection
def mqa(X: f64[T, d], Wq: f64[H, d, e], Wk: f64[d, e], Wv: f64[d, e], Wo: f64[H, e, d]) -> f64:
    Q[h, t, a] = sum[j](X[t, j] * Wq[h, j, a])
    Kk[t, a] = sum[j](X[t, j] * Wk[j, a])
    V[t, a] = sum[j](X[t, j] * Wv[j, a])
    s[h, t, u] = sum[a](Q[h, t, a] * Kk[u, a]) / sqrt(e)
    P[h, t, u] = [u <= t] * exp(s[h, t, u] - logsumexp[v | v <= t](s[h, t, v]))
    O[t, j] = sum[h, u, a](P[h, t, u] * V[u, a] * Wo[h, a, j])
    return sum[t, j](O[t, j] ** 2) / T
""", sizes=dict(T=5, d=4, H=2, e=3), make=lambda rng, T, d, H, e: dict(
            X=_normal(rng, T, d), Wq=0.5 * _normal(rng, H, d, e), Wk=0.5 * _normal(rng, d, e),
            Wv=0.5 * _normal(rng, d, e), Wo=0.5 * _normal(rng, H, e, d)),
        ref=mqa_ref, note="shared keys, a size as a value, a causal filter"),

    "linattn": dict(src="""
# causal linear attention: prefix sums of phi(k) v^T and phi(k) as recurrences
def linattn(q: f64[T, a], k: f64[T, a], v: f64[T, b], tgt: f64[T, b]) -> f64:
    S[t: T, i: a, j: b] = [t >= 1] * S[t - 1, i, j] + softplus(k[t, i]) * v[t, j]
    Z[t: T, i: a] = [t >= 1] * Z[t - 1, i] + softplus(k[t, i])
    o[t, j] = sum[i](softplus(q[t, i]) * S[t, i, j]) / sum[i](softplus(q[t, i]) * Z[t, i])
    return sum[t, j]((o[t, j] - tgt[t, j]) ** 2)
""", sizes=dict(T=6, a=3, b=2), make=lambda rng, T, a, b: dict(
            q=_normal(rng, T, a), k=_normal(rng, T, a), v=_normal(rng, T, b), tgt=_normal(rng, T, b)),
        ref=linattn_ref, note="two prefix-sum recurrences, a quotient of contractions"),

    "tied_lm": dict(src="""
# a one-layer language model whose output layer is the input embedding (tied)
def tied_lm(E: f64[V, d], W: f64[d, d], x: i64[T], y: i64[T]) -> f64:
    h[t, j] = tanh(sum[c](E[x[t], c] * W[c, j]))
    lg[t, w] = sum[j](h[t, j] * E[w, j])
    return sum[t](logsumexp[w](lg[t, w]) - lg[t, y[t]]) / T
""", sizes=dict(V=7, d=3, T=5), make=lambda rng, V, d, T: dict(
            E=_normal(rng, V, d), W=_normal(rng, d, d), x=rng.integers(0, V, T), y=rng.integers(0, V, T)),
        ref=tied_lm_ref, note="one parameter gathered by labels and contracted whole"),

    "relbias": dict(src="""
# attention with T5-style relative position biases: a 2-D i64 table of buckets
def relbias(Q: f64[T, d], K: f64[T, d], bk: i64[T, T], bb: f64[B], V: f64[T, d]) -> f64:
    s[t, u] = sum[c](Q[t, c] * K[u, c]) + bb[bk[t, u]]
    A[t, u] = exp(s[t, u] - logsumexp[v](s[t, v]))
    return sum[t, c](sum[u](A[t, u] * V[u, c]) ** 2)
""", sizes=dict(T=5, d=3, B=4), make=_relbias_make, ref=relbias_ref,
        note="a gather through a 2-D label table"),

    "pointer": dict(src="""
# a pointer-generator: a gate mixes the vocabulary softmax with the attention mass
# on source positions holding the target word (labels compared with labels)
def pointer(Lg: f64[T, V], At: f64[T, S], gz: f64[T], src: i64[S], y: i64[T]) -> f64:
    pv[t, w] = exp(Lg[t, w] - logsumexp[c](Lg[t, c]))
    pa[t, u] = exp(At[t, u] - logsumexp[c](At[t, c]))
    p[t] = sigmoid(gz[t]) * pv[t, y[t]] + (1.0 - sigmoid(gz[t])) * sum[u]([src[u] == y[t]] * pa[t, u])
    return -sum[t](log(p[t]))
""", sizes=dict(T=4, V=6, S=5), make=lambda rng, T, V, S: dict(
            Lg=_normal(rng, T, V), At=_normal(rng, T, S), gz=_normal(rng, T),
            src=rng.integers(0, V, S), y=rng.integers(0, V, T)),
        ref=pointer_ref, note="a softmax entry gathered, a copy mass by label equality"),

    # -------------------------------------------------------------- edge cases
    "triple_idx": dict(src="""
# one index three times in one read, and twice in another
def triple_idx(A: f64[n, n, n], x: f64[n]) -> f64:
    d[i] = A[i, i, i] * x[i]
    return sum[i](d[i] ** 2) + sum[i, j](A[i, j, i] * x[j])
""", sizes=dict(n=4), make=lambda rng, n: dict(A=_normal(rng, n, n, n), x=_normal(rng, n)),
        ref=triple_idx_ref, note="A[i, i, i]"),

    "negshift": dict(src="""
# reads from five back to three ahead, guarded at both ends, and a product of two
# shifted reads under two guards
def negshift(x: f64[n], w: f64[6]) -> f64:
    y[i] = [i >= 2] * w[0] * x[i - 2] + [i >= 1] * w[1] * x[i - 1] + w[2] * x[i] + [i + 1 < n] * w[3] * x[i + 1] + [i + 3 < n] * w[4] * x[i + 3] + [i >= 5] * [i + 2 < n] * w[5] * x[i - 5] * x[i + 2]
    return sum[i](y[i] ** 2)
""", sizes=dict(n=8), make=lambda rng, n: dict(x=_normal(rng, n), w=_normal(rng, 6)),
        ref=negshift_ref, note="guards near both ends"),

    "scalar_only": dict(src="""
# no tensors at all
def scalar_only(a: f64, b: f64, c: f64) -> f64:
    d = a * b - c
    e = exp(-d ** 2) + log1p(a ** 2) * tanh(b)
    return e / (1.0 + c ** 2) + max(a, c) * min(b, 0.5)
""", sizes=dict(), make=lambda rng: dict(a=0.7, b=-0.3, c=0.2),
        ref=scalar_only_ref, note="scalars, max and min of scalars"),

    "const_out": dict(src="""
# a piecewise-constant result: twice the number of positive entries plus 3; y unused
def const_out(x: f64[n], y: f64[n]) -> f64:
    z[i: n] = 2.0
    return sum[i](z[i] * [x[i] > 0.0]) + 3.0
""", sizes=dict(n=6), make=lambda rng, n: dict(x=_normal(rng, n), y=_normal(rng, n)),
        ref=const_out_ref, note="derivatives that are zero everywhere"),

    "two_out": dict(src="""
# a call returning a tensor and its sum, taken apart
def parts(x: f64[n], w: f64[n]) -> (f64[n], f64):
    v[i] = w[i] * x[i] ** 2
    return v, sum[i](v[i])

def two_out(x: f64[n], w: f64[n]) -> f64:
    v, s = parts(x, w)
    return s * s - sum[i](v[i] * x[i])
""", sizes=dict(n=5), make=lambda rng, n: dict(x=_normal(rng, n), w=_normal(rng, n)),
        ref=two_out_ref, note="two results, one the sum of the other"),

    "label_both": dict(src="""
# a label gathered and compared in one term, and gathered twice in another
def label_both(E: f64[K, d], y: i64[n], z: f64[n, K]) -> f64:
    return sum[s, c]([c == y[s]] * z[s, c] * E[y[s], 0]) + sum[s](E[y[s], d - 1] * z[s, y[s]])
""", sizes=dict(K=4, d=3, n=6), make=lambda rng, K, d, n: dict(
            E=_normal(rng, K, d), y=rng.integers(0, K, n), z=_normal(rng, n, K)),
        ref=label_both_ref, note="a label as an index and in a comparison"),

    "ones": dict(src="""
# every size 1: a recurrence of one step over a vector of one
def ones(A: f64[n, m], x: f64[m], h0: f64[n], K1: f64[T]) -> f64:
    h[t: T, i: n] = tanh([t == 0] * h0[i] + [t >= 1] * h[t - 1, i] + sum[j](A[i, j] * x[j]))
    return sum[i](h[T - 1, i] ** 2) + x[m - 1] * h0[0]
""", sizes=dict(n=1, m=1, T=1), make=lambda rng, n, m, T: dict(
            A=_normal(rng, n, m), x=_normal(rng, m), h0=_normal(rng, n), K1=np.zeros(T)),
        ref=ones_ref, note="sizes of one"),

    "sizes_reused": dict(src="""
# the same size symbols in swapped positions of two parameters
def sizes_reused(A: f64[n, m], B: f64[m, n], u: f64[m], v: f64[n]) -> f64:
    C[i, j] = sum[k](A[i, k] * B[k, j])
    return sum[i, j](C[i, j] * v[i] * v[j]) + sum[k, l](B[k, l] * A[l, k] * u[k])
""", sizes=dict(n=3, m=5), make=lambda rng, n, m: dict(
            A=_normal(rng, n, m), B=_normal(rng, m, n), u=_normal(rng, m), v=_normal(rng, n)),
        ref=sizes_reused_ref, note="A and B transposed to each other"),

    "deep_calls": dict(src=_deep_calls_src(), sizes=dict(n=6),
                       make=lambda rng, n: dict(x=_normal(rng, n)), ref=deep_calls_ref,
                       note="a chain of twelve calls"),

    "grid_rnn": dict(src="""
# a 2-D grid RNN: each cell reads the state above and to the left
def grid_rnn(x: f64[n, m, c], U: f64[c, c], V: f64[c, c]) -> f64:
    h[i: n, j: m, a: c] = tanh(x[i, j, a] + [i >= 1] * sum[b](U[a, b] * h[i - 1, j, b]) + [j >= 1] * sum[b](V[a, b] * h[i, j - 1, b]))
    return sum[a](h[n - 1, m - 1, a] ** 2) + 0.1 * sum[i, j, a](h[i, j, a])
""", sizes=dict(n=3, m=4, c=2), make=lambda rng, n, m, c: dict(
            x=_normal(rng, n, m, c), U=0.5 * _normal(rng, c, c), V=0.5 * _normal(rng, c, c)),
        ref=grid_rnn_ref, note="two stepping leading indices with a vector state"),
}

REJECTED = {
    # forward substitution written directly: the step reads every earlier entry, a
    # triangle, not a constant step (section 10); gp_tri carries the vector instead
    "trisolve": ("""
def trisolve(L: f64[n, n], y: f64[n]) -> f64:
    z[t: n] = (y[t] - sum[j]([j < t] * L[t, j] * z[j])) / L[t, t]
    return sum[i](z[i] ** 2)
""", "TLRecurrenceError", "does not step by a constant along t", 3),
    # an index is not a number (only sizes are): a lag value needs a table (softlag)
    "index_value": ("""
def index_value(x: f64[n], y: f64[n]) -> f64:
    return sum[l](x[l] * y[l] * l)
""", "TLTypeError", "index l used as a value", 3),
    # a window's output indices have no plain use: every read is shifted (softdilate
    # writes d[r: h, c: w])
    "window_no_range": ("""
def window_no_range(img: f64[h, w]) -> f64:
    d[r, c] = logsumexp[a: 3, b: 3 | 0 <= r + a - 1 < h and 0 <= c + b - 1 < w](img[r + a - 1, c + b - 1])
    return sum[r, c](d[r, c])
""", "TLShapeError", "cannot infer the range of index r", 3),
    # one index given two sizes: a 3x3 homography read with 2-D points (homog sums
    # over b: 2 and adds the third column apart)
    "homog_sizes": ("""
def homog_sizes(H: f64[3, 3], p: f64[n, 2]) -> f64:
    h[s, a: 3] = sum[b](H[a, b] * p[s, b])
    return sum[s, a](h[s, a])
""", "TLShapeError", "index b has conflicting ranges", 3),
}
