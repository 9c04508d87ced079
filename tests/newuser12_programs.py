"""A twelfth set of programs written from the documentation alone.

Domains the earlier sets (tests/newuser_programs.py ... tests/newuser11_programs.py)
leave out: quantitative finance (Heston paths by Euler steps with full truncation of
the variance, a down-and-out call on an explicit trinomial lattice whose barrier is a
value bracket and whose spot node is the middle of an odd size, Hagan's SABR implied
volatility calibrated to a smile with parameter exponents), physics (Lorenz-96 with
periodic neighbours and a mask of observations, a Fermi-Pasta-Ulam-Tsingou chain by
velocity Verlet with its bonds over n + 1 springs, a classical Heisenberg magnet with
a Dzyaloshinskii-Moriya term on a periodic lattice, screened Coulomb and repulsive
pair energies through an i64 type table), signal processing (a digital phase-locked
loop, a CIC decimator whose integrators are recurrences and whose comb runs on n / 4
samples, an LMS adaptive filter carrying its taps through time), vision (a
morphological gradient and top-hat by hard max and min windows through functions,
the guided filter from integral images over derived sizes, bilinear demosaicing of a
Bayer mosaic by divisibility brackets), language (a soft Damerau-Levenshtein distance
whose transpositions read two steps back under label comparisons, IBM Model 1
alignment through two gathers), graphs (a soft Bellman-Ford over an edge list by a
filtered logsumexp, label propagation with a symmetric degree normalisation),
statistics (a site-occupancy model with a never-detected bracket on a count label,
a two-parameter IRT model, the Dawid-Skene annotator model, the Lee-Carter mortality
model, an LDA log-likelihood), optimisation (Adam unrolled for a meta-learned step
size) and geometry and robotics (point-to-polyline distances with clamped
projections and a hard minimum, inverse kinematics by Jacobian-transpose steps with
cumulative joint angles).  Each entry has the shape of the other sets: the program
text (the function to test is named like the entry), the sizes of the test inputs,
`make(rng, **sizes)`, an independent NumPy version `ref(**inputs)` and a note.
tests/test_newuser12_programs.py checks them, and the API around them.
"""
import numpy as np
from scipy.special import logsumexp as _lse

from newuser2_programs import _normal


def _sig(z):
    return 1.0 / (1.0 + np.exp(-z))


def _softplus(z):
    return np.logaddexp(0.0, z)


# ------------------------------------------------------------ finance
def heston_ref(Z1, Z2, S0, v0, kap, th, xi, rho, r, dt, K):
    T, P = Z1.shape
    x, v = np.full(P, np.log(S0)), np.full(P, v0)
    for t in range(1, T):
        vp = np.maximum(v, 0.0)
        x, v = (x + (r - 0.5 * vp) * dt + np.sqrt(vp * dt) * Z1[t - 1],
                v + kap * (th - vp) * dt
                + xi * np.sqrt(vp * dt) * (rho * Z1[t - 1] + np.sqrt(1 - rho ** 2) * Z2[t - 1]))
    return float(np.exp(-r * dt * (T - 1)) * np.mean(_softplus(np.exp(x) - K)))


def trinomial_barrier_ref(xg, steps, K, lb, sig, r, dt, dx):
    T, M = len(steps), len(xg)
    nu = r - 0.5 * sig ** 2
    pu = 0.5 * dt * ((sig / dx) ** 2 + nu / dx)
    pd = 0.5 * dt * ((sig / dx) ** 2 - nu / dx)
    pm = 1.0 - dt * (sig / dx) ** 2
    alive = (xg > lb).astype(float)
    V = alive * _softplus(10.0 * (np.exp(xg) - K)) / 10.0
    for _ in range(T - 1):
        up = np.concatenate([V[1:], [0.0]])
        dn = np.concatenate([[0.0], V[:-1]])
        V = alive * np.exp(-r * dt) * (pm * V + pu * up + pd * dn)
    return float(V[(M - 1) // 2])


def _sabr_vol(f, K, T, beta, alpha, rho, nu):
    fk = f * K
    lfk = np.log(f / K)
    ob = 1.0 - beta
    z = nu / alpha * fk ** (ob / 2) * lfk
    xz = np.log((np.sqrt(1 - 2 * rho * z + z ** 2) + z - rho) / (1 - rho))
    den = fk ** (ob / 2) * (1 + ob ** 2 / 24 * lfk ** 2 + ob ** 4 / 1920 * lfk ** 4)
    corr = 1 + (ob ** 2 / 24 * alpha ** 2 / fk ** ob + 0.25 * rho * beta * nu * alpha / fk ** (ob / 2)
                + (2 - 3 * rho ** 2) / 24 * nu ** 2) * T
    return alpha / den * z / xz * corr


def sabr_ref(Ks, vol, f, T, beta, la, rr, lnu):
    s = _sabr_vol(f, Ks, T, beta, np.exp(la), np.tanh(rr), np.exp(lnu))
    return float(np.sum((s - vol) ** 2))


# ------------------------------------------------------------ physics
def lorenz96_ref(x0, F, dt, steps, obs, mask):
    T, n = obs.shape
    X = np.zeros((T, n))
    X[0] = x0
    for t in range(1, T):
        p = X[t - 1]
        X[t] = p + dt * ((np.roll(p, -1) - np.roll(p, 2)) * np.roll(p, 1) - p + F)
    return float(0.5 * np.sum(mask * (X - obs) ** 2))


def fput_ref(q0, p0, beta, dt, steps, mode, w1):
    T = len(steps)

    def force(q):
        d = np.concatenate([q, [0.0]]) - np.concatenate([[0.0], q])   # n + 1 bonds
        f = d + beta * d ** 3
        return f[1:] - f[:-1]

    q, p = q0.copy(), p0.copy()
    F = force(q)
    for _ in range(1, T):
        q = q + dt * p + 0.5 * dt ** 2 * F
        Fn = force(q)
        p = p + 0.5 * dt * (F + Fn)
        F = Fn
    Q, P = mode @ q, mode @ p
    return float(0.5 * (P ** 2 + w1 ** 2 * Q ** 2))


def heisenberg_ref(M, J, D, Ku, B):
    S = M / np.linalg.norm(M, axis=2, keepdims=True)
    R = np.roll(S, -1, axis=1)
    U = np.roll(S, -1, axis=0)
    ex = np.sum(S * (R + U))
    dmi = np.sum(S[..., 0] * R[..., 1] - S[..., 1] * R[..., 0])
    return float(-J * ex + D * dmi - Ku * np.sum(S[..., 2] ** 2) - np.sum(S @ B))


def yukawa_ref(X, typ, q, A, kappa):
    E = 0.0
    N = len(X)
    for i in range(N):
        for j in range(i + 1, N):
            r = np.linalg.norm(X[i] - X[j])
            E += q[typ[i]] * q[typ[j]] * np.exp(-kappa * r) / r + A[typ[i], typ[j]] / r ** 12
    return float(E)


# ------------------------------------------------------------ signal processing
def pll_ref(y, w0, kp, ki, ph0):
    T = len(y)
    ph, I, e = np.zeros(T), np.zeros(T), np.zeros(T)
    for t in range(T):
        if t == 0:
            ph[t], I[t] = ph0, 0.0
        else:
            ph[t] = ph[t - 1] + w0 + kp * e[t - 1] + I[t - 1]
            I[t] = I[t - 1] + ki * e[t - 1]
        e[t] = -y[t] * np.sin(ph[t])
    return float(np.sum((y - np.cos(ph)) ** 2) / T)


def cic_ref(x, w, target):
    i2 = np.cumsum(np.cumsum(x))
    dd = i2[3::4]
    c1 = dd - np.concatenate([[0.0], dd[:-1]])
    c2 = (c1 - np.concatenate([[0.0], c1[:-1]])) / 16.0
    z = np.correlate(c2, w, mode="valid")
    return float(np.sum((z - target) ** 2))


def lms_ref(x, d, w0, mu):
    T, L = len(x), len(w0)
    w = w0.copy()
    err = np.zeros(T)
    for t in range(T):
        xs = np.array([x[t - k] if t - k >= 0 else 0.0 for k in range(L)])
        err[t] = d[t] - w @ xs
        w = w + mu * err[t] * xs
    return float(np.sum(err ** 2) / T)


# ------------------------------------------------------------ vision
def _window(A, fn):
    h, w = A.shape
    out = np.zeros_like(A)
    for r in range(h):
        for c in range(w):
            out[r, c] = fn(A[max(r - 1, 0):r + 2, max(c - 1, 0):c + 2])
    return out


def morph_grad_ref(img, edges, lam):
    D = _window(img, np.max)
    E = _window(img, np.min)
    O = _window(E, np.max)
    return float(np.sum((D - E - edges) ** 2) + lam * np.sum((img - O) ** 2))


def _boxmean(A):
    h, w = A.shape
    return np.array([[A[r:r + 3, c:c + 3].mean() for c in range(w - 2)] for r in range(h - 2)])


def guided_ref(I, p, eps, target):
    mI, mp = _boxmean(I), _boxmean(p)
    a = (_boxmean(I * p) - mI * mp) / (_boxmean(I * I) - mI ** 2 + eps)
    b = mp - a * mI
    q = _boxmean(a) * I[2:-2, 2:-2] + _boxmean(b)
    return float(np.sum((q - target) ** 2))


def demosaic_ref(raw, gr, gg, tg, tr):
    h, w = raw.shape
    G = np.zeros((h - 2, w - 2))
    R = np.zeros((h - 2, w - 2))
    for r0 in range(1, h - 1):
        for c0 in range(1, w - 1):
            nb4 = (raw[r0 - 1, c0] + raw[r0 + 1, c0] + raw[r0, c0 - 1] + raw[r0, c0 + 1]) / 4
            G[r0 - 1, c0 - 1] = raw[r0, c0] if (r0 + c0) % 2 == 1 else nb4
            if r0 % 2 == 0 and c0 % 2 == 0:
                R[r0 - 1, c0 - 1] = raw[r0, c0]
            elif r0 % 2 == 0:
                R[r0 - 1, c0 - 1] = (raw[r0, c0 - 1] + raw[r0, c0 + 1]) / 2
            elif c0 % 2 == 0:
                R[r0 - 1, c0 - 1] = (raw[r0 - 1, c0] + raw[r0 + 1, c0]) / 2
            else:
                R[r0 - 1, c0 - 1] = (raw[r0 - 1, c0 - 1] + raw[r0 - 1, c0 + 1]
                                     + raw[r0 + 1, c0 - 1] + raw[r0 + 1, c0 + 1]) / 4
    return float(np.sum((gg * G - tg) ** 2 + (gr * R - tr) ** 2))


# ------------------------------------------------------------ language
def soft_damerau_ref(Cs, a, b, gap, tc, g):
    n, m = len(a), len(b)

    def smin(vals):
        vals = np.array(vals)
        return -g * _lse(-vals / g)

    D = np.zeros((n + 1, m + 1))
    for i in range(n + 1):
        for j in range(m + 1):
            if i == 0 and j == 0:
                continue
            if i == 0:
                D[i, j] = D[i, j - 1] + gap
            elif j == 0:
                D[i, j] = D[i - 1, j] + gap
            else:
                opts = [D[i - 1, j] + gap, D[i, j - 1] + gap,
                        D[i - 1, j - 1] + Cs[a[i - 1], b[j - 1]]]
                if i >= 2 and j >= 2 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                    opts.append(D[i - 2, j - 2] + tc)
                D[i, j] = smin(opts)
    return float(D[n, m])


def ibm1_ref(Tl, e, f):
    lt = Tl - _lse(Tl, axis=1, keepdims=True)
    S, Le = e.shape
    total = 0.0
    for s in range(S):
        for fj in f[s]:
            total += _lse(lt[e[s], fj]) - np.log(Le)
    return float(-total)


# ------------------------------------------------------------ graphs
def bellman_ford_ref(lw, src, dst, d0, g, rounds, target):
    n = len(d0)
    d = d0.copy()
    w = np.exp(lw)
    for _ in range(len(rounds) - 1):
        nd = np.zeros(n)
        for v in range(n):
            es = np.nonzero(dst == v)[0]
            nd[v] = -g * _lse(-(d[src[es]] + w[es]) / g)
        d = nd
    return float(np.sum((d - target) ** 2))


def label_prop_ref(lw, src, dst, Y0, la, steps, lab, msk):
    n, C = Y0.shape
    w = np.exp(lw)
    deg = np.zeros(n)
    np.add.at(deg, dst, w)
    deg = deg + 1e-3
    nw = w / np.sqrt(deg[src] * deg[dst])
    al = _sig(la)
    F = Y0.copy()
    for _ in range(len(steps) - 1):
        agg = np.zeros_like(F)
        np.add.at(agg, dst, nw[:, None] * F[src])
        F = al * agg + (1 - al) * Y0
    Z = 5.0 * F
    return float(-np.sum(msk * (Z[np.arange(n), lab] - _lse(Z, axis=1))))


# ------------------------------------------------------------ statistics
def occupancy_ref(Y, X, Wv, be, a0, a1, nd):
    psi = _sig(X @ be)
    q = a0 + a1 * Wv
    lp = np.sum(Y * q - _softplus(q), axis=1)
    return float(-np.sum(np.log(psi * np.exp(lp) + (nd == 0) * (1 - psi))))


def irt2pl_ref(th, la, b, person, item, y):
    z = np.exp(la[item]) * (th[person] - b[item])
    return float(np.sum(_softplus(z) - y * z) + 0.5 * np.sum(th ** 2) + 0.5 * np.sum(la ** 2))


def dawid_skene_ref(pl, Cl, item, ann, lab, wt):
    lpi = pl - _lse(pl)
    lth = Cl - _lse(Cl, axis=2, keepdims=True)
    I = len(wt)
    sc = np.tile(lpi, (I, 1))
    for i_, a_, l_ in zip(item, ann, lab):
        sc[i_] += lth[a_, :, l_]
    return float(-np.sum(wt * _lse(sc, axis=1)))


def lee_carter_ref(Dth, Ex, a, b, k, drift, lam):
    eta = a[:, None] + b[:, None] * k[None, :]
    ll = np.sum(Dth * (eta + np.log(Ex)) - Ex * np.exp(eta))
    rw = np.sum((np.diff(k) - drift) ** 2)
    return float(-ll + lam * rw + (b.sum() - 1) ** 2 + k.sum() ** 2)


def lda_loglik_ref(Nc, Th, Ph, alpha, eta):
    lt = Th - _lse(Th, axis=1, keepdims=True)
    lp = Ph - _lse(Ph, axis=1, keepdims=True)
    lw = _lse(lt[:, :, None] + lp[None, :, :], axis=1)
    return float(-np.sum(Nc * lw) - (alpha - 1) * lt.sum() - (eta - 1) * lp.sum())


# ------------------------------------------------------------ optimisation
def adam_unroll_ref(X, y, Xv, yv, w0, llr, b1, b2, steps):
    T = len(steps)
    w = w0.copy()
    m = np.zeros_like(w)
    v = np.zeros_like(w)
    for t in range(1, T):
        g = X.T @ (X @ w - y) / len(y)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g ** 2
        w = w - np.exp(llr) * (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + 1e-8)
    return float(0.5 * np.sum((Xv @ w - yv) ** 2) / len(yv))


# ------------------------------------------------------------ geometry and robotics
def seg_dist_ref(P, V, lam):
    E = V[1:] - V[:-1]
    L2 = np.sum(E ** 2, axis=1)
    total = 0.0
    for p in P:
        t = np.clip(np.sum((p - V[:-1]) * E, axis=1) / L2, 0.0, 1.0)
        d2 = np.sum((p - V[:-1] - t[:, None] * E) ** 2, axis=1)
        total += d2.min()
    return float(total + lam * np.sum(np.sqrt(L2)))


def ik_jt_ref(th0, Lk, gx, gy, alpha, iters):
    th = th0.copy()

    def fk(th):
        phi = np.cumsum(th)
        return phi, Lk @ np.cos(phi), Lk @ np.sin(phi)

    for _ in range(len(iters) - 1):
        phi, px, py = fk(th)
        ex, ey = gx - px, gy - py
        jt = Lk * (np.cos(phi) * ey - np.sin(phi) * ex)
        th = th + alpha * np.cumsum(jt[::-1])[::-1]
    _, px, py = fk(th)
    return float((gx - px) ** 2 + (gy - py) ** 2)


# ------------------------------------------------------------ input makers
def _trinomial_inputs(rng, M, T):
    dx = 0.08
    xg = np.log(1.0) + (np.arange(M) - (M - 1) // 2) * dx
    return dict(xg=xg, steps=np.zeros(T), K=1.02, lb=np.log(0.83), sig=0.25, r=0.03,
                dt=0.02, dx=dx)


def _sabr_inputs(rng, k):
    f = 0.03
    Ks = f * np.exp(np.linspace(-0.4, 0.45, k))
    vol = _sabr_vol(f, Ks, 1.5, 0.5, 0.2, -0.3, 0.45) + 0.002 * _normal(rng, k)
    return dict(Ks=Ks, vol=vol, f=f, T=1.5, beta=0.5, la=np.log(0.17), rr=-0.2, lnu=np.log(0.5))


def _yukawa_inputs(rng, N, C):
    # points on a jittered grid, so no pair is too close
    g = np.array([[i, j, k] for i in range(2) for j in range(2) for k in range(2)], float)
    X = 1.2 * g[:N] + 0.1 * _normal(rng, N, 3)
    return dict(X=X, typ=rng.integers(0, C, N), q=_normal(rng, C), A=0.1 * rng.random((C, C)),
                kappa=0.7)


def _pll_inputs(rng, T):
    y = np.cos(0.6 * np.arange(T) + 0.4) + 0.1 * _normal(rng, T)
    return dict(y=y, w0=0.55, kp=0.2, ki=0.02, ph0=0.1)


def _soft_damerau_inputs(rng, A, n, m):
    a = rng.integers(0, A, n)
    b = rng.integers(0, A, m)
    a[1], a[2] = 0, 1                 # at least one transposition to take
    b[1], b[2] = 1, 0
    return dict(Cs=1.0 - np.eye(A) + 0.2 * rng.random((A, A)), a=a, b=b, gap=1.0, tc=0.7,
                g=0.3)


def _graph_edges(rng, n, E, self_loops):
    src = list(rng.integers(0, n, E))
    dst = list(rng.integers(0, n, E))
    if self_loops:
        src += list(range(n))
        dst += list(range(n))
    return np.array(src), np.array(dst)


def _bellman_inputs(rng, n, E, K):
    src, dst = _graph_edges(rng, n, E, True)
    d0 = np.full(n, 6.0)
    d0[0] = 0.0
    return dict(lw=0.5 * _normal(rng, len(src)), src=src, dst=dst, d0=d0, g=0.5,
                rounds=np.zeros(K), target=2.0 * rng.random(n))


def _label_prop_inputs(rng, n, E, C, K):
    # a ring both ways, then random chords
    ring = np.arange(n)
    src = np.concatenate([ring, (ring + 1) % n, rng.integers(0, n, E - 2 * n)])
    dst = np.concatenate([(ring + 1) % n, ring, rng.integers(0, n, E - 2 * n)])
    Y0 = np.zeros((n, C))
    known = np.arange(n) % 2 == 0
    Y0[known, rng.integers(0, C, known.sum())] = 1.0
    return dict(lw=0.3 * _normal(rng, E), src=src, dst=dst, Y0=Y0, la=0.5, steps=np.zeros(K),
                lab=rng.integers(0, C, n), msk=(~known).astype(float))


def _occupancy_inputs(rng, I, J, p):
    Y = (rng.random((I, J)) < 0.4).astype(float)
    Y[0] = 0.0                          # a site never detected
    return dict(Y=Y, X=_normal(rng, I, p), Wv=_normal(rng, I, J), be=0.5 * _normal(rng, p),
                a0=-0.3, a1=0.4, nd=Y.sum(axis=1).astype(np.int64))


def _irt_inputs(rng, P, Q, N):
    person, item = rng.integers(0, P, N), rng.integers(0, Q, N)
    return dict(th=_normal(rng, P), la=0.3 * _normal(rng, Q), b=_normal(rng, Q), person=person,
                item=item, y=(rng.random(N) < 0.5).astype(float))


def _dawid_skene_inputs(rng, I, A, K, N):
    return dict(pl=0.3 * _normal(rng, K), Cl=2.0 * np.eye(K)[None] + 0.5 * _normal(rng, A, K, K),
                item=rng.integers(0, I, N), ann=rng.integers(0, A, N), lab=rng.integers(0, K, N),
                wt=np.ones(I))


def _lee_carter_inputs(rng, X, T):
    a = np.linspace(-5.0, -2.0, X)
    b = np.full(X, 1.0 / X) + 0.02 * _normal(rng, X)
    k = np.linspace(1.0, -1.0, T)
    Ex = 1000.0 * (1.0 + rng.random((X, T)))
    Dth = rng.poisson(Ex * np.exp(a[:, None] + b[:, None] * k[None, :])).astype(float)
    return dict(Dth=Dth, Ex=Ex, a=a + 0.1 * _normal(rng, X), b=b, k=k + 0.1 * _normal(rng, T),
                drift=-0.3, lam=2.0)


def _adam_inputs(rng, N, p, M, T):
    wt = _normal(rng, p)
    X, Xv = _normal(rng, N, p), _normal(rng, M, p)
    return dict(X=X, y=X @ wt + 0.1 * _normal(rng, N), Xv=Xv, yv=Xv @ wt + 0.1 * _normal(rng, M),
                w0=np.zeros(p) + 0.1 * _normal(rng, p), llr=np.log(0.1), b1=0.9, b2=0.99,
                steps=np.zeros(T))


def _seg_inputs(rng, n, m):
    V = np.stack([np.linspace(0.0, 3.0, m), 0.5 * _normal(rng, m)], axis=1)
    P = np.stack([3.0 * rng.random(n), 0.8 * _normal(rng, n)], axis=1)
    return dict(P=P, V=V, lam=0.1)


PROGRAMS = {
    # ------------------------------------------------------------ finance
    "heston": dict(src="""
# Heston stochastic volatility by Euler steps over P paths: log price x and variance v,
# the variance truncated at zero wherever it is used (full truncation); the draws are
# given, correlated by rho; a smoothed call payoff, discounted
def heston(Z1: f64[T, P], Z2: f64[T, P], S0: f64, v0: f64, kap: f64, th: f64, xi: f64,
           rho: f64, r: f64, dt: f64, K: f64) -> f64:
    x[t: T, p: P] = [t == 0] * log(S0) + [t >= 1] * (x[t - 1, p] + (r - 0.5 * max(v[t - 1, p], 0.0)) * dt
        + sqrt(max(v[t - 1, p], 0.0) * dt) * Z1[t - 1, p])
    v[t: T, p: P] = [t == 0] * v0 + [t >= 1] * (v[t - 1, p] + kap * (th - max(v[t - 1, p], 0.0)) * dt
        + xi * sqrt(max(v[t - 1, p], 0.0) * dt) * (rho * Z1[t - 1, p] + sqrt(1.0 - rho ** 2) * Z2[t - 1, p]))
    return exp(-r * dt * (T - 1)) * sum[p](softplus(exp(x[T - 1, p]) - K)) / P
""", sizes=dict(T=6, P=5), make=lambda rng, T, P: dict(
            Z1=_normal(rng, T, P), Z2=_normal(rng, T, P), S0=1.0, v0=0.09, kap=1.5, th=0.09,
            xi=0.2, rho=-0.6, r=0.02, dt=0.05, K=1.0),
        ref=heston_ref, note="two members through max builtins, a size minus one as a value"),

    "trinomial_barrier": dict(src="""
# a down-and-out call on an explicit trinomial lattice in log price (the node log
# prices xg are given, dx apart); the option is dead at nodes at or below the barrier
# lb (a value bracket); the spot is the middle node of an odd number of nodes
def trinomial_barrier(xg: f64[M], steps: f64[T], K: f64, lb: f64, sig: f64, r: f64, dt: f64,
                      dx: f64) -> f64:
    nu = r - 0.5 * sig ** 2
    pu = 0.5 * dt * ((sig / dx) ** 2 + nu / dx)
    pd = 0.5 * dt * ((sig / dx) ** 2 - nu / dx)
    pm = 1.0 - dt * (sig / dx) ** 2
    V[t: T, j: M] = [xg[j] > lb] * ([t + 1 == T] * softplus(10.0 * (exp(xg[j]) - K)) / 10.0
        + [t + 1 < T] * exp(-r * dt) * (pm * V[t + 1, j] + [j + 1 < M] * pu * V[t + 1, j + 1]
                                        + [j >= 1] * pd * V[t + 1, j - 1]))
    return V[0, (M - 1) / 2]
""", sizes=dict(M=9, T=5), make=_trinomial_inputs,
        ref=trinomial_barrier_ref, note="a backward recurrence under a value bracket, (M - 1) / 2 as an index"),

    "sabr": dict(src="""
# Hagan's SABR implied volatility (0 < beta < 1, strikes away from the forward)
# calibrated to a smile: alpha and nu positive through exp, rho in (-1, 1) through tanh
def sabr(Ks: f64[k], vol: f64[k], f: f64, T: f64, beta: f64, la: f64, rr: f64, lnu: f64) -> f64:
    al = exp(la)
    rho = tanh(rr)
    nu = exp(lnu)
    ob = 1.0 - beta
    lfk[s] = log(f / Ks[s])
    fkb[s] = (f * Ks[s]) ** (ob / 2.0)
    z[s] = nu / al * fkb[s] * lfk[s]
    xz[s] = log((sqrt(1.0 - 2.0 * rho * z[s] + z[s] ** 2) + z[s] - rho) / (1.0 - rho))
    den[s] = fkb[s] * (1.0 + ob ** 2 / 24.0 * lfk[s] ** 2 + ob ** 4 / 1920.0 * lfk[s] ** 4)
    cor[s] = 1.0 + (ob ** 2 / 24.0 * al ** 2 / fkb[s] ** 2 + 0.25 * rho * beta * nu * al / fkb[s]
                    + (2.0 - 3.0 * rho ** 2) / 24.0 * nu ** 2) * T
    sv[s] = al / den[s] * z[s] / xz[s] * cor[s]
    return sum[s]((sv[s] - vol[s]) ** 2)
""", sizes=dict(k=7), make=_sabr_inputs,
        ref=sabr_ref, note="a parameter exponent, scalars through tanh and exp"),

    # ------------------------------------------------------------ physics
    "lorenz96": dict(src="""
# Lorenz-96 by explicit Euler steps on a ring of n >= 4 variables,
# dx_i/dt = (x_{i+1} - x_{i-2}) x_{i-1} - x_i + F, the neighbours wrapped around by
# brackets; a 4D-Var cost of the initial state against masked observations
def lorenz96(x0: f64[n], F: f64, dt: f64, steps: f64[T], obs: f64[T, n], mask: bool[T, n]) -> f64:
    X[t: T, i: n] = [t == 0] * x0[i] + [t >= 1] * (X[t - 1, i] + dt * (
        (([i + 1 < n] * X[t - 1, i + 1] + [i + 1 == n] * X[t - 1, 0])
         - ([i >= 2] * X[t - 1, i - 2] + [i < 2 and i + n >= 2] * X[t - 1, i + n - 2]))
        * ([i >= 1] * X[t - 1, i - 1] + [i == 0] * X[t - 1, n - 1])
        - X[t - 1, i] + F))
    return 0.5 * sum[t, i]([mask[t, i]] * (X[t, i] - obs[t, i]) ** 2)
""", sizes=dict(n=6, T=6), make=lambda rng, n, T: dict(
            x0=8.0 + _normal(rng, n), F=8.0, dt=0.01, steps=np.zeros(T),
            obs=8.0 + _normal(rng, T, n), mask=rng.random((T, n)) < 0.6),
        ref=lorenz96_ref, note="periodic neighbours by brackets, a relation mask"),

    "fput": dict(src="""
# the Fermi-Pasta-Ulam-Tsingou beta chain with fixed ends by velocity Verlet: n masses,
# n + 1 springs whose stretches d are a member of the group; the energy left in the
# lowest normal mode (its shape given as `mode`, its frequency w1) at the end
def fput(q0: f64[n], p0: f64[n], beta: f64, dt: f64, steps: f64[T], mode: f64[n], w1: f64) -> f64:
    q[t: T, i: n] = [t == 0] * q0[i] + [t >= 1] * (q[t - 1, i] + dt * p[t - 1, i] + 0.5 * dt ** 2 * F[t - 1, i])
    d[t: T, b: n + 1] = [b < n] * q[t, b] - [b >= 1] * q[t, b - 1]
    F[t: T, i: n] = d[t, i + 1] + beta * d[t, i + 1] ** 3 - d[t, i] - beta * d[t, i] ** 3
    p[t: T, i: n] = [t == 0] * p0[i] + [t >= 1] * (p[t - 1, i] + 0.5 * dt * (F[t - 1, i] + F[t, i]))
    Qm = sum[i](mode[i] * q[T - 1, i])
    Pm = sum[i](mode[i] * p[T - 1, i])
    return 0.5 * (Pm ** 2 + w1 ** 2 * Qm ** 2)
""", sizes=dict(n=5, T=6), make=lambda rng, n, T: dict(
            q0=np.sqrt(2.0 / (n + 1)) * np.sin(np.pi * np.arange(1, n + 1) / (n + 1)) + 0.05 * _normal(rng, n),
            p0=0.1 * _normal(rng, n), beta=0.3, dt=0.2, steps=np.zeros(T),
            mode=np.sqrt(2.0 / (n + 1)) * np.sin(np.pi * np.arange(1, n + 1) / (n + 1)),
            w1=2.0 * np.sin(np.pi / (2 * (n + 1)))),
        ref=fput_ref, note="a member over n + 1 bonds, a force read at offset 0 and 1"),

    "heisenberg": dict(src="""
# a classical Heisenberg magnet on an h x w periodic lattice: unit spins from free
# vectors, exchange with the right and lower neighbours, a Dzyaloshinskii-Moriya term
# (z component of S x S_right), easy-axis anisotropy and a Zeeman field
def heisenberg(M: f64[h, w, 3], J: f64, D: f64, Ku: f64, B: f64[3]) -> f64:
    S[r, c, a] = M[r, c, a] / sqrt(sum[b](M[r, c, b] ** 2))
    R[r: h, c: w, a: 3] = [c + 1 < w] * S[r, c + 1, a] + [c + 1 == w] * S[r, 0, a]
    U[r: h, c: w, a: 3] = [r + 1 < h] * S[r + 1, c, a] + [r + 1 == h] * S[0, c, a]
    ex = sum[r, c, a](S[r, c, a] * (R[r, c, a] + U[r, c, a]))
    dmi = sum[r, c](S[r, c, 0] * R[r, c, 1] - S[r, c, 1] * R[r, c, 0])
    return -J * ex + D * dmi - Ku * sum[r, c](S[r, c, 2] ** 2) - sum[r, c, a](B[a] * S[r, c, a])
""", sizes=dict(h=3, w=4), make=lambda rng, h, w: dict(
            M=_normal(rng, h, w, 3), J=1.0, D=0.3, Ku=0.2, B=np.array([0.0, 0.1, 0.3])),
        ref=heisenberg_ref, note="periodic wrap by brackets, literal components"),

    "yukawa": dict(src="""
# screened Coulomb (Yukawa) and r^-12 repulsion energies over pairs i < j, the charges
# and repulsion strengths read through each particle's i64 type
def yukawa(X: f64[N, 3], typ: i64[N], q: f64[C], A: f64[C, C], kappa: f64) -> f64:
    r[i, j] = sqrt(sum[c]((X[i, c] - X[j, c]) ** 2))
    return sum[i, j]([i < j] * (q[typ[i]] * q[typ[j]] * exp(-kappa * r[i, j]) / r[i, j]
                                + A[typ[i], typ[j]] / r[i, j] ** 12))
""", sizes=dict(N=6, C=3), make=_yukawa_inputs,
        ref=yukawa_ref, note="a distance that is 0 on the bracketed-out diagonal, 2-D gathers"),

    # ------------------------------------------------------------ signal processing
    "pll": dict(src="""
# a digital phase-locked loop tracking a noisy sinusoid: a mixer phase detector, a
# proportional-integral loop filter and a numerically controlled oscillator
def pll(y: f64[T], w0: f64, kp: f64, ki: f64, ph0: f64) -> f64:
    ph[t: T] = [t == 0] * ph0 + [t >= 1] * (ph[t - 1] + w0 + kp * e[t - 1] + I[t - 1])
    I[t: T] = [t >= 1] * (I[t - 1] + ki * e[t - 1])
    e[t: T] = -y[t] * sin(ph[t])
    return sum[t]((y[t] - cos(ph[t])) ** 2) / T
""", sizes=dict(T=12), make=_pll_inputs,
        ref=pll_ref, note="three members, one read at offset 0"),

    "cic": dict(src="""
# a two-stage CIC decimator by 4 (two integrators, keep every fourth sample, two
# combs, gain 16), followed by a compensation FIR fitted to a target
def cic(x: f64[n], w: f64[k], target: f64[n / 4 - k + 1]) -> f64:
    i1[t] = x[t] + [t >= 1] * i1[t - 1]
    i2[t] = i1[t] + [t >= 1] * i2[t - 1]
    dd[m: n / 4] = i2[4 * m + 3]
    c1[m] = dd[m] - [m >= 1] * dd[m - 1]
    c2[m] = (c1[m] - [m >= 1] * c1[m - 1]) / 16.0
    z[m: n / 4 - k + 1] = sum[j](w[j] * c2[m + j])
    return sum[m]((z[m] - target[m]) ** 2)
""", sizes=dict(n=24, k=3), make=lambda rng, n, k: dict(
            x=_normal(rng, n), w=_normal(rng, k), target=_normal(rng, n // 4 - k + 1)),
        ref=cic_ref, note="recurrences, a stride-4 read into n / 4, n / 4 - k + 1"),

    "lms": dict(src="""
# an LMS adaptive filter identifying an unknown system: the taps w[t] are updated by
# the previous step's error times the previous input window
def lms(x: f64[T], d: f64[T], w0: f64[L], mu: f64) -> f64:
    y[t: T] = sum[k]([t - k >= 0] * w[t, k] * x[t - k])
    e[t: T] = d[t] - y[t]
    w[t: T, k: L] = [t == 0] * w0[k] + [t >= 1] * (w[t - 1, k] + mu * e[t - 1] * [t - 1 - k >= 0] * x[t - 1 - k])
    return sum[t](e[t] ** 2) / T
""", sizes=dict(T=10, L=3), make=lambda rng, T, L: dict(
            x=_normal(rng, T), d=np.convolve(_normal(rng, T), [0.5, -0.3, 0.2])[:T],
            w0=0.1 * _normal(rng, L), mu=0.1),
        ref=lms_ref, note="a recurrence carrying a tap vector, windows under guards"),

    # ------------------------------------------------------------ vision
    "morph_grad": dict(src="""
# grey-scale dilation and erosion by a 3x3 square (the window clipped at the border)
def dilate3(A: f64[h, w]) -> f64[h, w]:
    D[r: h, c: w] = max[a: 3, b: 3 | 0 <= r + a - 1 < h and 0 <= c + b - 1 < w](A[r + a - 1, c + b - 1])
    return D

def erode3(A: f64[h, w]) -> f64[h, w]:
    E[r: h, c: w] = min[a: 3, b: 3 | 0 <= r + a - 1 < h and 0 <= c + b - 1 < w](A[r + a - 1, c + b - 1])
    return E

# the morphological gradient (dilation minus erosion) fitted to an edge map, and the
# white top-hat (the image minus its opening) kept small
def morph_grad(img: f64[h, w], edges: f64[h, w], lam: f64) -> f64:
    Dl = dilate3(img)
    Er = erode3(img)
    Op = dilate3(Er)
    return sum[r, c]((Dl[r, c] - Er[r, c] - edges[r, c]) ** 2) + lam * sum[r, c]((img[r, c] - Op[r, c]) ** 2)
""", sizes=dict(h=5, w=6), make=lambda rng, h, w: dict(
            img=_normal(rng, h, w), edges=rng.random((h, w)), lam=0.5),
        ref=morph_grad_ref, note="filtered max/min over two indices, an opening by two calls"),

    "guided": dict(src="""
# the mean over every 3x3 window inside the image, from an integral image
def boxmean(A: f64[h, w]) -> f64[h - 2, w - 2]:
    S[r, c] = A[r, c] + [r >= 1] * S[r - 1, c] + [c >= 1] * S[r, c - 1] - [r >= 1 and c >= 1] * S[r - 1, c - 1]
    B[r: h - 2, c: w - 2] = (S[r + 2, c + 2] - [r >= 1] * S[r - 1, c + 2] - [c >= 1] * S[r + 2, c - 1]
                             + [r >= 1 and c >= 1] * S[r - 1, c - 1]) / 9.0
    return B

# the guided filter of p with guide I (3x3 windows), on the pixels two away from the
# border, fitted to a target
def guided(I: f64[h, w], p: f64[h, w], eps: f64, target: f64[h - 4, w - 4]) -> f64:
    mI = boxmean(I)
    mp = boxmean(p)
    II[r, c] = I[r, c] * I[r, c]
    Ip[r, c] = I[r, c] * p[r, c]
    mII = boxmean(II)
    mIp = boxmean(Ip)
    a[r, c] = (mIp[r, c] - mI[r, c] * mp[r, c]) / (mII[r, c] - mI[r, c] ** 2 + eps)
    b[r, c] = mp[r, c] - a[r, c] * mI[r, c]
    ma = boxmean(a)
    mb = boxmean(b)
    q[r, c] = ma[r, c] * I[r + 2, c + 2] + mb[r, c]
    return sum[r, c]((q[r, c] - target[r, c]) ** 2)
""", sizes=dict(h=7, w=8), make=lambda rng, h, w: dict(
            I=rng.random((h, w)), p=rng.random((h, w)), eps=0.05, target=rng.random((h - 4, w - 4))),
        ref=guided_ref, note="six calls of a 2-D recurrence, sizes h - 2 then h - 4"),

    "demosaic": dict(src="""
# bilinear demosaicing of an RGGB Bayer mosaic (red where row and column are even,
# blue where both are odd, green elsewhere) on the interior pixels: green and red
# planes, each with a white-balance gain, fitted to the true planes
def demosaic(raw: f64[h, w], gr: f64, gg: f64, tg: f64[h - 2, w - 2], tr: f64[h - 2, w - 2]) -> f64:
    G[r: h - 2, c: w - 2] = gg * ([(r + c) % 2 != 0] * raw[r + 1, c + 1]
        + [(r + c) % 2 == 0] * 0.25 * (raw[r, c + 1] + raw[r + 2, c + 1] + raw[r + 1, c] + raw[r + 1, c + 2]))
    R[r: h - 2, c: w - 2] = gr * ([(r + 1) % 2 == 0 and (c + 1) % 2 == 0] * raw[r + 1, c + 1]
        + [(r + 1) % 2 == 0 and c % 2 == 0] * 0.5 * (raw[r + 1, c] + raw[r + 1, c + 2])
        + [r % 2 == 0 and (c + 1) % 2 == 0] * 0.5 * (raw[r, c + 1] + raw[r + 2, c + 1])
        + [r % 2 == 0 and c % 2 == 0] * 0.25 * (raw[r, c] + raw[r, c + 2] + raw[r + 2, c] + raw[r + 2, c + 2]))
    return sum[r, c]((G[r, c] - tg[r, c]) ** 2 + (R[r, c] - tr[r, c]) ** 2)
""", sizes=dict(h=6, w=7), make=lambda rng, h, w: dict(
            raw=rng.random((h, w)), gr=1.3, gg=0.9, tg=rng.random((h - 2, w - 2)),
            tr=rng.random((h - 2, w - 2))),
        ref=demosaic_ref, note="divisibility brackets on two indices"),

    # ------------------------------------------------------------ language
    "soft_damerau": dict(src="""
# a soft Damerau-Levenshtein distance between two label sequences: D[i, j] aligns
# a[0..i-1] with b[0..j-1]; insertions and deletions cost gap, substitutions Cs[x, y],
# an adjacent transposition tc where the two labels are swapped; the soft minimum is
# -g logsumexp(-v / g), the transposition taking part only where it applies
def soft_damerau(Cs: f64[A, A], a: i64[n], b: i64[m], gap: f64, tc: f64, g: f64) -> f64:
    D[i: n + 1, j: m + 1] = ([i == 0 and j >= 1] * (D[i, j - 1] + gap) + [i >= 1 and j == 0] * (D[i - 1, j] + gap)
        + [i >= 1 and j >= 1] * -g * logsumexp[c: 4 | c < 3 or (i >= 2 and j >= 2 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1])](
            -([c == 0] * (D[i - 1, j] + gap) + [c == 1] * (D[i, j - 1] + gap)
              + [c == 2] * (D[i - 1, j - 1] + Cs[a[i - 1], b[j - 1]])
              + [c == 3 and i >= 2 and j >= 2] * (D[i - 2, j - 2] + tc)) / g))
    return D[n, m]
""", sizes=dict(A=3, n=5, m=4), make=_soft_damerau_inputs,
        ref=soft_damerau_ref, note="two steps back along both indices, labels compared with labels"),

    "ibm1": dict(src="""
# IBM Model 1: the translation table t(f | e) is a softmax over target words of
# logits Tl[e, f]; every target word of a sentence aligns uniformly to one of its Le
# source words (position 0 holding the NULL word)
def ibm1(Tl: f64[V, W], e: i64[S, Le], f: i64[S, Lf]) -> f64:
    lz[v] = logsumexp[u](Tl[v, u])
    ll[s, j] = logsumexp[i](Tl[e[s, i], f[s, j]] - lz[e[s, i]]) - log(Le)
    return -sum[s, j](ll[s, j])
""", sizes=dict(V=5, W=6, S=3, Le=4, Lf=5), make=lambda rng, V, W, S, Le, Lf: dict(
            Tl=_normal(rng, V, W), e=np.concatenate([np.zeros((S, 1), int), rng.integers(1, V, (S, Le - 1))], axis=1),
            f=rng.integers(0, W, (S, Lf))),
        ref=ibm1_ref, note="two gathers in one read, a size as a value under log"),

    # ------------------------------------------------------------ graphs
    "bellman_ford": dict(src="""
# soft Bellman-Ford: K - 1 rounds of relaxing every edge (src -> dst, length
# exp(lw)), each node's distance the soft minimum over its incoming edges (every node
# has a self-loop, a small waiting cost); distances fitted to targets
def bellman_ford(lw: f64[E], src: i64[E], dst: i64[E], d0: f64[n], g: f64, rounds: f64[K],
                 target: f64[n]) -> f64:
    d[k: K, v: n] = [k == 0] * d0[v] + [k >= 1] * -g * logsumexp[e | dst[e] == v](-(d[k - 1, src[e]] + exp(lw[e])) / g)
    return sum[v]((d[K - 1, v] - target[v]) ** 2)
""", sizes=dict(n=5, E=9, K=4), make=_bellman_inputs,
        ref=bellman_ford_ref, note="a logsumexp filtered by a label inside a recurrence step"),

    "label_prop": dict(src="""
# label propagation: class scores spread along weighted edges with the symmetric
# normalisation 1 / sqrt(deg(src) deg(dst)), mixed with the known labels Y0 at every
# round; cross-entropy of the last round's scores on the held-out nodes (msk)
def label_prop(lw: f64[E], src: i64[E], dst: i64[E], Y0: f64[n, C], la: f64, steps: f64[K],
               lab: i64[n], msk: f64[n]) -> f64:
    w[e] = exp(lw[e])
    deg[v: n] = sum[e]([dst[e] == v] * w[e]) + 1e-3
    nw[e] = w[e] / sqrt(deg[src[e]] * deg[dst[e]])
    al = sigmoid(la)
    F[k: K, v: n, c: C] = [k == 0] * Y0[v, c] + [k >= 1] * (al * sum[e]([dst[e] == v] * nw[e] * F[k - 1, src[e], c])
                                                           + (1.0 - al) * Y0[v, c])
    return -sum[v](msk[v] * (5.0 * F[K - 1, v, lab[v]] - logsumexp[c](5.0 * F[K - 1, v, c])))
""", sizes=dict(n=6, E=15, C=3, K=4), make=_label_prop_inputs,
        ref=label_prop_ref, note="gathers of a computed degree, a scatter inside a step"),

    # ------------------------------------------------------------ statistics
    "occupancy": dict(src="""
# a site-occupancy model: site s is occupied with probability psi[s] (logistic in site
# covariates) and an occupied site is detected on visit j with probability
# sigmoid(q[s, j]); a site never detected (nd[s] == 0 detections) may also be empty
def occupancy(Y: f64[I, J], X: f64[I, p], Wv: f64[I, J], be: f64[p], a0: f64, a1: f64,
              nd: i64[I]) -> f64:
    psi[s] = sigmoid(sum[f](X[s, f] * be[f]))
    q[s, j] = a0 + a1 * Wv[s, j]
    lp[s] = sum[j](Y[s, j] * q[s, j] - softplus(q[s, j]))
    return -sum[s](log(psi[s] * exp(lp[s]) + [nd[s] == 0] * (1.0 - psi[s])))
""", sizes=dict(I=6, J=4, p=2), make=_occupancy_inputs,
        ref=occupancy_ref, note="a count label compared with 0"),

    "irt2pl": dict(src="""
# the two-parameter logistic IRT model: response y of a person to an item, with
# discrimination exp(la[item]) and difficulty b[item]; standard normal priors on the
# abilities and the log discriminations
def irt2pl(th: f64[P], la: f64[Q], b: f64[Q], person: i64[N], item: i64[N], y: f64[N]) -> f64:
    z[s] = exp(la[item[s]]) * (th[person[s]] - b[item[s]])
    return sum[s](softplus(z[s]) - y[s] * z[s]) + 0.5 * sum[u](th[u] ** 2) + 0.5 * sum[v](la[v] ** 2)
""", sizes=dict(P=5, Q=4, N=14), make=_irt_inputs,
        ref=irt2pl_ref, note="three gathers through two label tables"),

    "dawid_skene": dict(src="""
# the Dawid-Skene model of noisy annotators: each item's true class has prior softmax
# pl, annotator a reports class l for true class k with probability softmax_l Cl[a, k, l];
# the marginal log-likelihood of the annotations (item, annotator, label) per item
def dawid_skene(pl: f64[K], Cl: f64[A, K, K], item: i64[N], ann: i64[N], lab: i64[N],
                wt: f64[I]) -> f64:
    lpi[k] = pl[k] - logsumexp[c](pl[c])
    lth[a, k, l] = Cl[a, k, l] - logsumexp[u](Cl[a, k, u])
    sc[i: I, k] = lpi[k] + sum[t]([item[t] == i] * lth[ann[t], k, lab[t]])
    return -sum[i](wt[i] * logsumexp[k](sc[i, k]))
""", sizes=dict(I=4, A=3, K=3, N=12), make=_dawid_skene_inputs,
        ref=dawid_skene_ref, note="a scatter by item of a gather by annotator and label"),

    "lee_carter": dict(src="""
# the Lee-Carter mortality model: log m[x, t] = a[x] + b[x] k[t], Poisson deaths
# against exposures, a random walk with drift on the period index k, and the usual
# constraints sum b = 1, sum k = 0 as penalties
def lee_carter(Dth: f64[X, T], Ex: f64[X, T], a: f64[X], b: f64[X], k: f64[T], drift: f64,
               lam: f64) -> f64:
    eta[x, t] = a[x] + b[x] * k[t]
    ll = sum[x, t](Dth[x, t] * (eta[x, t] + log(Ex[x, t])) - Ex[x, t] * exp(eta[x, t]))
    rw = sum[t]([t >= 1] * (k[t] - k[t - 1] - drift) ** 2)
    return -ll + lam * rw + (sum[x](b[x]) - 1.0) ** 2 + sum[t](k[t]) ** 2
""", sizes=dict(X=5, T=6), make=_lee_carter_inputs,
        ref=lee_carter_ref, note="a rank-one log-rate, a first difference penalty"),

    "lda_loglik": dict(src="""
# the log-likelihood of word counts under LDA with document-topic and topic-word
# distributions as softmaxes of free parameters, with Dirichlet priors
def lda_loglik(Nc: f64[D, V], Th: f64[D, K], Ph: f64[K, V], alpha: f64, eta: f64) -> f64:
    lt[d, k] = Th[d, k] - logsumexp[c](Th[d, c])
    lp[k, v] = Ph[k, v] - logsumexp[u](Ph[k, u])
    lw[d, v] = logsumexp[k](lt[d, k] + lp[k, v])
    return -sum[d, v](Nc[d, v] * lw[d, v]) - (alpha - 1.0) * sum[d, k](lt[d, k]) - (eta - 1.0) * sum[k, v](lp[k, v])
""", sizes=dict(D=4, V=7, K=3), make=lambda rng, D, V, K: dict(
            Nc=rng.poisson(2.0, (D, V)).astype(float), Th=_normal(rng, D, K), Ph=_normal(rng, K, V),
            alpha=1.1, eta=1.05),
        ref=lda_loglik_ref, note="a logsumexp of a sum of two normalised tables"),

    # ------------------------------------------------------------ optimisation
    "adam_unroll": dict(src="""
# T - 1 steps of Adam on a least-squares training loss, unrolled; the validation loss
# of the last iterate as a function of the log step size (and of everything else)
def adam_unroll(X: f64[N, p], y: f64[N], Xv: f64[M, p], yv: f64[M], w0: f64[p], llr: f64,
                b1: f64, b2: f64, steps: f64[T]) -> f64:
    pw1[t: T] = [t == 0] + [t >= 1] * b1 * pw1[t - 1]
    pw2[t: T] = [t == 0] + [t >= 1] * b2 * pw2[t - 1]
    res[t: T, s: N] = sum[j](X[s, j] * w[t, j]) - y[s]
    g[t: T, j: p] = sum[s](X[s, j] * res[t, s]) / N
    m[t: T, j: p] = [t >= 1] * (b1 * m[t - 1, j] + (1.0 - b1) * g[t - 1, j])
    v[t: T, j: p] = [t >= 1] * (b2 * v[t - 1, j] + (1.0 - b2) * g[t - 1, j] ** 2)
    w[t: T, j: p] = [t == 0] * w0[j] + [t >= 1] * (w[t - 1, j]
        - exp(llr) * m[t, j] / (1.0 - pw1[t]) / (sqrt(v[t, j] / (1.0 - pw2[t])) + 1e-8))
    return 0.5 * sum[s]((sum[j](Xv[s, j] * w[T - 1, j]) - yv[s]) ** 2) / M
""", sizes=dict(N=8, p=3, M=5, T=5), make=_adam_inputs,
        ref=adam_unroll_ref, note="five members, bias corrections by a recurrence, 0/0 under a bracket"),

    # ------------------------------------------------------------ geometry and robotics
    "seg_dist": dict(src="""
# fitting a polyline to points: each point's squared distance to its nearest segment
# (the projection clamped to the segment), plus a penalty on the polyline's length
def seg_dist(P: f64[n, 2], V: f64[m, 2], lam: f64) -> f64:
    E[j: m - 1, c: 2] = V[j + 1, c] - V[j, c]
    L2[j] = sum[c](E[j, c] ** 2)
    tt[i, j: m - 1] = max(0.0, min(1.0, sum[c]((P[i, c] - V[j, c]) * E[j, c]) / L2[j]))
    d2[i, j: m - 1] = sum[c]((P[i, c] - V[j, c] - tt[i, j] * E[j, c]) ** 2)
    return sum[i](min[j](d2[i, j])) + lam * sum[j](sqrt(L2[j]))
""", sizes=dict(n=7, m=5), make=_seg_inputs,
        ref=seg_dist_ref, note="clamps by max/min builtins, a hard min over m - 1 segments"),

    "ik_jt": dict(src="""
# inverse kinematics of a planar arm by Jacobian-transpose steps: absolute link
# angles are cumulative sums of the joint angles, the end effector's error drives
# every joint through the links after it
def ik_jt(th0: f64[J], Lk: f64[J], gx: f64, gy: f64, alpha: f64, iters: f64[T]) -> f64:
    phi[t: T, j: J] = sum[l | l <= j](th[t, l])
    px[t: T] = sum[j](Lk[j] * cos(phi[t, j]))
    py[t: T] = sum[j](Lk[j] * sin(phi[t, j]))
    th[t: T, j: J] = [t == 0] * th0[j] + [t >= 1] * (th[t - 1, j] + alpha * sum[l | l >= j](Lk[l] * (
        cos(phi[t - 1, l]) * (gy - py[t - 1]) - sin(phi[t - 1, l]) * (gx - px[t - 1]))))
    return (gx - px[T - 1]) ** 2 + (gy - py[T - 1]) ** 2
""", sizes=dict(J=3, T=5), make=lambda rng, J, T: dict(
            th0=0.5 * _normal(rng, J), Lk=0.5 + rng.random(J), gx=1.0, gy=0.8, alpha=0.2,
            iters=np.zeros(T)),
        ref=ik_jt_ref, note="triangular sums inside a recurrence step"),
}


REJECTED = {
    # Lorenz-96's wrap-around written with [i < 2] alone: at n = 1 the read i + n - 2 is
    # -1, so the bracket must also say i + n >= 2 (as "lorenz96" above does)
    "ring_wrap": ("""
def ring_wrap(x0: f64[n], F: f64, dt: f64, steps: f64[T]) -> f64:
    X[t: T, i: n] = [t == 0] * x0[i] + [t >= 1] * (X[t - 1, i] + dt * (
        (([i + 1 < n] * X[t - 1, i + 1] + [i + 1 == n] * X[t - 1, 0])
         - ([i >= 2] * X[t - 1, i - 2] + [i < 2] * X[t - 1, i + n - 2]))
        * ([i >= 1] * X[t - 1, i - 1] + [i == 0] * X[t - 1, n - 1])
        - X[t - 1, i] + F))
    return sum[i](X[T - 1, i] ** 2)
""", "TLBoundsError", "index 1 of X may be out of range: i + n - 2 ranges over n - 2", 5),
    # a phase-locked loop whose oscillator uses the error of its own step, which is
    # computed from the phase of that step: a cycle with no delay
    "pll_nodelay": ("""
def pll_nodelay(y: f64[T], w0: f64, kp: f64, ph0: f64) -> f64:
    ph[t: T] = [t == 0] * ph0 + [t >= 1] * (ph[t - 1] + w0 + kp * e[t])
    e[t: T] = -y[t] * sin(ph[t])
    return sum[t]((y[t] - cos(ph[t])) ** 2) / T
""", "TLRecurrenceError", "cycle ph -> e -> ph has offset 0 along t", 3),
}
