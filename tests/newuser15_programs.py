"""A fifteenth set of programs written from the documentation alone.

Domains the earlier sets (tests/newuser_programs.py ... tests/newuser14_programs.py)
leave out: epidemiology on networks (a discrete-time SIS model whose infection
pressure gathers the previous step's prevalence through an i64 edge list inside the
recurrence), pharmacokinetics (a three-compartment model by Euler steps with bolus
doses placed by comparing the time index with dose-time labels, concentrations
gathered at sample-time labels), seismology (earthquake location from phase picks
through event, station and phase labels with station corrections; first-arrival
travel times by one Godunov sweep of the eikonal equation, a two-index recurrence
that chooses its update by value brackets), geodesy (a GPS fix from pseudoranges,
geodetic to ECEF through a called function, a tropospheric delay over the sine of the
elevation), splines (the Cox-de Boor recursion over the degree, knots from a
cumulative sum and degree-0 bases from value brackets), tree ensembles (a soft
decision tree whose path probabilities are a recurrence over depth, children found by
strided equality brackets), mixture of experts (top-2 gating by a hard max and a
max filtered by the value of the first, with a load-balancing term), attention
(sliding-window attention with global tokens, a filter that combines a band with a
relation under `or`; gated attention pooling of multiple-instance bags by a logsumexp
filtered by bag labels), contrastive learning (the supervised contrastive loss, its
positives picked by labels compared with labels), associative memory (retrieval in a
modern Hopfield network as a three-statement recurrence with a softmax), fluids
(a D1Q3 lattice Boltzmann scheme of seven statements with periodic streaming;
shallow-ice glacier flow with a staggered flux and a thickness floor), crystallography
(a structure factor with Cromer-Mann form factors through an atom-type table),
water networks (Hazen-Williams pipe flows with a fractional power and node balances
scattered by pipe labels), marketing (Bass diffusion with advertising), computational
psychiatry (Q-learning fitted to choices with a perseveration bonus), operations (a
serial supply chain with lead times, a two-index recurrence with an order-up-to kink),
control (a PID loop with back-calculation anti-windup on a plant with dead time),
finite elements (a P1 triangle mesh through a connectivity table, lumped masses
scattered to the nodes), optimal transport (the Sinkhorn divergence, one log-domain
Sinkhorn function called three times), network science (a degree-corrected stochastic
block model with the block rates gathered at two labels), quantitative finance (SVI
volatility smiles of several expiries with Durrleman's butterfly condition as a
penalty; CDS par spreads from piecewise-constant hazards through bucket and maturity
labels), state estimation (an extended Kalman filter for a pendulum with its 2x2
covariance as tensors of the recurrence), astronomy (the generalised Lomb-Scargle
periodogram through a helper returning two values, a soft peak frequency) and
magnetic resonance (Bloch simulation of isochromats by Rodrigues rotations with a
Levi-Civita tensor built from brackets, and relaxation).  Each entry has the shape of
the other sets: the program text (the function to test is named like the entry), the
sizes of the test inputs, `make(rng, **sizes)`, an independent NumPy version
`ref(**inputs)` and a note.  REJECTED holds programs such a user writes first that
the language refuses, each with its located error.  tests/test_newuser15_programs.py
checks them, and the API around them.
"""
import numpy as np
from scipy.special import logsumexp as _lse

from newuser2_programs import _normal
from newuser14_programs import _sig, _softmax, _softplus


# ------------------------------------------------------------ epidemiology on networks
def sis_network_ref(p0, src, dst, w, lb, lg, obs):
    T = len(obs)
    N = len(p0)
    beta, gam = np.exp(lb), _sig(lg)
    P = np.zeros((T, N))
    P[0] = p0
    for t in range(1, T):
        press = np.zeros(N)
        for e in range(len(src)):
            press[dst[e]] += w[e] * P[t - 1, src[e]]
        P[t] = (1 - gam) * P[t - 1] + (1 - P[t - 1]) * (1 - np.exp(-beta * press))
    prev = P.mean(axis=1)
    return float(np.sum((np.log(prev) - np.log(obs)) ** 2))


def _sis_network_inputs(rng, N, E, T):
    src = rng.integers(0, N, E)
    dst = (src + rng.integers(1, N, E)) % N
    return dict(p0=rng.uniform(0.05, 0.3, N), src=src, dst=dst, w=rng.uniform(0.5, 1.5, E),
                lb=np.log(0.4), lg=-1.0, obs=rng.uniform(0.1, 0.5, T))


# ------------------------------------------------------------ pharmacokinetics
def pk3_dosing_ref(lk, dt, dose_t, amt, infus, st, cobs, lV, ls):
    k10, k12, k21, k13, k31 = np.exp(lk)
    T = len(infus)
    bol = np.zeros(T)
    for d in range(len(dose_t)):
        bol[dose_t[d]] += amt[d]
    A = np.zeros((T, 3))
    A[0, 0] = bol[0]
    for t in range(1, T):
        a1, a2, a3 = A[t - 1]
        A[t, 0] = a1 + dt * (infus[t - 1] - (k10 + k12 + k13) * a1 + k21 * a2 + k31 * a3) + bol[t]
        A[t, 1] = a2 + dt * (k12 * a1 - k21 * a2)
        A[t, 2] = a3 + dt * (k13 * a1 - k31 * a3)
    c = A[st, 0] / np.exp(lV)
    S = len(st)
    return float(np.sum((np.log(c) - np.log(cobs)) ** 2) / (2 * np.exp(2 * ls)) + S * ls)


def _pk3_inputs(rng, T, D, S):
    dose_t = np.sort(rng.choice(np.arange(1, T - 2), D - 1, replace=False))
    return dict(lk=np.log([0.15, 0.2, 0.1, 0.05, 0.03]) + 0.1 * _normal(rng, 5), dt=0.5,
                dose_t=np.r_[0, dose_t], amt=rng.uniform(50.0, 100.0, D),
                infus=np.where(rng.uniform(size=T) < 0.3, 10.0, 0.0),
                st=np.sort(rng.choice(np.arange(1, T), S, replace=False)),
                cobs=rng.uniform(1.0, 5.0, S), lV=np.log(20.0), ls=-1.0)


# ------------------------------------------------------------ seismology
def seismic_locate_ref(hyp, t0, sta, lv, corr, pev, pst, pph, tobs, sc):
    v = np.exp(lv)
    dist = np.sqrt(np.sum((hyp[pev] - sta[pst]) ** 2, axis=1) + 0.01)
    pred = t0[pev] + dist / v[pph] + corr[pst, pph]
    res = pred - tobs
    return float(np.sum(np.log(1 + (res / sc) ** 2)) + 0.1 * np.sum(corr ** 2))


def _seismic_inputs(rng, Ev, St, P):
    sta = np.c_[rng.uniform(-20, 20, (St, 2)), np.zeros(St)]
    hyp = np.c_[rng.uniform(-10, 10, (Ev, 2)), rng.uniform(3, 12, Ev)]
    pev, pst, pph = rng.integers(0, Ev, P), rng.integers(0, St, P), rng.integers(0, 2, P)
    v = np.array([6.0, 3.5])
    d = np.sqrt(np.sum((hyp[pev] - sta[pst]) ** 2, axis=1))
    t0 = rng.uniform(0, 5, Ev)
    return dict(hyp=hyp + _normal(rng, Ev, 3), t0=t0, sta=sta, lv=np.log(v) + 0.05 * _normal(rng, 2),
                corr=0.1 * _normal(rng, St, 2), pev=pev, pst=pst, pph=pph,
                tobs=t0[pev] + d / v[pph] + 0.2 * _normal(rng, P), sc=0.5)


def eikonal_sweep_ref(ls, h, rcv, tobs):
    n, m = ls.shape
    s = np.exp(ls)
    T = np.zeros((n, m))
    for i in range(n):
        for j in range(m):
            hs = h * s[i, j]
            if i == 0 and j == 0:
                T[i, j] = 0.0
            elif i == 0:
                T[i, j] = T[i, j - 1] + hs
            elif j == 0:
                T[i, j] = T[i - 1, j] + hs
            else:
                a, b = T[i - 1, j], T[i, j - 1]
                if abs(a - b) >= hs:
                    T[i, j] = min(a, b) + hs
                else:
                    T[i, j] = 0.5 * (a + b + np.sqrt(2 * hs ** 2 - (a - b) ** 2))
    return float(np.sum((T[rcv[:, 0], rcv[:, 1]] - tobs) ** 2))


def _eikonal_inputs(rng, n, m, R):
    ls = np.log(0.5) + 0.3 * _normal(rng, n, m)
    ls[0, 2:] += 1.5                          # a slow strip along the first row
    return dict(ls=ls, h=1.0, rcv=np.c_[rng.integers(1, n, R), rng.integers(1, m, R)],
                tobs=rng.uniform(1.0, 4.0, R))


# ------------------------------------------------------------ geodesy
def _ecef(lat, lon, h):
    a, e2 = 6378.137, 0.00669437999014
    N = a / np.sqrt(1 - e2 * np.sin(lat) ** 2)
    return np.array([(N + h) * np.cos(lat) * np.cos(lon), (N + h) * np.cos(lat) * np.sin(lon),
                     (N * (1 - e2) + h) * np.sin(lat)])


def gps_fix_ref(lat, lon, h, b, tz, sat, rho, sig):
    r = _ecef(lat, lon, h)
    up = np.array([np.cos(lat) * np.cos(lon), np.cos(lat) * np.sin(lon), np.sin(lat)])
    d = sat - r[None, :]
    g = np.sqrt(np.sum(d ** 2, axis=1))
    se = d @ up / g
    pred = g + b + tz / se
    return float(np.sum(((pred - rho) / sig) ** 2))


def _gps_inputs(rng, K):
    lat, lon, h = 0.8, 0.2, 0.3
    r = _ecef(lat, lon, h)
    up = np.array([np.cos(lat) * np.cos(lon), np.cos(lat) * np.sin(lon), np.sin(lat)])
    east = np.array([-np.sin(lon), np.cos(lon), 0.0])
    north = np.cross(up, east)
    el = rng.uniform(0.3, 1.4, K)
    az = rng.uniform(0, 2 * np.pi, K)
    dirs = (np.cos(el)[:, None] * (np.cos(az)[:, None] * north + np.sin(az)[:, None] * east)
            + np.sin(el)[:, None] * up)
    sat = r + 21000.0 * dirs
    rho = 21000.0 + 0.003 + 0.0025 / np.sin(el) + 0.01 * _normal(rng, K)
    # a first guess some hundreds of metres off, as an iterative solver starts
    return dict(lat=lat + 1e-4, lon=lon - 2e-4, h=0.8, b=0.3, tz=0.0024, sat=sat, rho=rho,
                sig=rng.uniform(0.5, 1.0, K))


# ------------------------------------------------------------ splines
def cox_de_boor_ref(t0, dk, x, C, y):
    M = len(dk)
    kn = t0 + np.r_[0.0, np.cumsum(np.exp(dk[1:]))]
    S = len(x)
    B = np.zeros((4, S, M - 1))
    for i in range(M - 1):
        B[0, :, i] = (kn[i] <= x) & (x < kn[i + 1])
    for p in range(1, 4):
        for i in range(M - 1 - p):
            B[p, :, i] = ((x - kn[i]) / (kn[i + p] - kn[i]) * B[p - 1, :, i]
                          + (kn[i + p + 1] - x) / (kn[i + p + 1] - kn[i + 1]) * B[p - 1, :, i + 1])
    f = B[3, :, :M - 4] @ C
    return float(np.sum((f - y) ** 2))


def _cox_de_boor_inputs(rng, M, S):
    t0 = -0.5
    dk = np.log(rng.uniform(0.5, 1.5, M))
    kn = t0 + np.r_[0.0, np.cumsum(np.exp(dk[1:]))]
    x = []
    while len(x) < S:                         # well inside (kn[3], kn[M - 4]), away from knots
        v = rng.uniform(kn[3], kn[M - 4])
        if np.min(np.abs(kn - v)) > 0.02:
            x.append(v)
    x = np.array(x)
    return dict(t0=t0, dk=dk, x=x, C=_normal(rng, M - 4), y=np.sin(x))


# ------------------------------------------------------------ tree ensembles
def soft_tree_ref(X, W, b, leaf, y):
    S = X.shape[0]
    L, N, _ = W.shape
    mu = np.zeros((S, N))
    mu[:, 0] = 1.0
    for d in range(L):
        z = X @ W[d].T + b[d][None, :]
        new = np.zeros((S, N))
        for u in range(N):
            if 2 * u < N:
                new[:, 2 * u] += mu[:, u] * _sig(z[:, u])
            if 2 * u + 1 < N:
                new[:, 2 * u + 1] += mu[:, u] * _sig(-z[:, u])
        mu = new
    out = mu @ leaf
    return float(np.sum(_lse(out, axis=1) - out[np.arange(S), y]) / S)


def _soft_tree_inputs(rng, S, F, L, C):
    N = 2 ** L
    return dict(X=_normal(rng, S, F), W=_normal(rng, L, N, F), b=0.3 * _normal(rng, L, N),
                leaf=2.0 * _normal(rng, N, C), y=rng.integers(0, C, S))


# ------------------------------------------------------------ mixture of experts
def moe_top2_ref(X, Wg, We, Y, alpha):
    B = X.shape[0]
    E = Wg.shape[1]
    g = X @ Wg
    srt = np.sort(g, axis=1)
    m1, m2 = srt[:, -1], srt[:, -2]
    sel = g >= m2[:, None]
    gate = sel * np.exp(g - m1[:, None]) / (1 + np.exp(m2 - m1))[:, None]
    out = np.einsum("se,sd,edk->sk", gate, X, We)
    imp = _softmax(g, axis=1).mean(axis=0)
    load = sel.mean(axis=0)
    return float(np.sum((out - Y) ** 2) / B + alpha * E * np.sum(imp * load))


def _moe_top2_inputs(rng, B, D, E, K):
    return dict(X=_normal(rng, B, D), Wg=_normal(rng, D, E), We=0.5 * _normal(rng, E, D, K),
                Y=_normal(rng, B, K), alpha=0.1)


# ------------------------------------------------------------ attention
def longformer_ref(X, Wq, Wk, Wv, glob, Y):
    n = X.shape[0]
    e = Wq.shape[1]
    Q, K, V = X @ Wq, X @ Wk, X @ Wv
    S = Q @ K.T / np.sqrt(e)
    i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    allow = (np.abs(i - j) <= 2) | glob[:, None] | glob[None, :]
    P = _softmax(np.where(allow, S, -np.inf), axis=1)
    return float(np.sum((P @ V - Y) ** 2) / n)


def _longformer_inputs(rng, n, d, e):
    glob = np.zeros(n, dtype=bool)
    glob[[0, n - 2]] = True
    return dict(X=_normal(rng, n, d), Wq=0.5 * _normal(rng, d, e), Wk=0.5 * _normal(rng, d, e),
                Wv=0.5 * _normal(rng, d, e), glob=glob, Y=_normal(rng, n, e))


def mil_attention_ref(X, bag, V, U, w, c, c0, yb):
    B = len(yb)
    a = (np.tanh(X @ V) * _sig(X @ U)) @ w
    lg = np.zeros(B)
    for b in range(B):
        m = bag == b
        al = _softmax(a[m])
        lg[b] = c @ (al @ X[m]) + c0
    return float(np.sum(_softplus(lg) - yb * lg) / B)


def _mil_inputs(rng, N, D, H, B):
    bag = np.r_[np.arange(B), rng.integers(0, B, N - B)]
    return dict(X=_normal(rng, N, D), bag=rng.permutation(bag), V=0.5 * _normal(rng, D, H),
                U=0.5 * _normal(rng, D, H), w=_normal(rng, H), c=_normal(rng, D), c0=0.1,
                yb=rng.integers(0, 2, B).astype(float))


# ------------------------------------------------------------ contrastive learning
def supcon_ref(H, W, y, lt):
    n = H.shape[0]
    Z = H @ W
    U = Z / np.linalg.norm(Z, axis=1, keepdims=True)
    Sm = np.exp(-lt) * U @ U.T
    tot = 0.0
    for i in range(n):
        others = np.arange(n) != i
        den = _lse(Sm[i, others])
        pos = others & (y == y[i])
        tot += np.sum(Sm[i, pos] - den) / pos.sum()
    return float(-tot / n)


def _supcon_inputs(rng, n, d, k):
    y = rng.permutation(np.r_[np.arange(3), np.arange(3), rng.integers(0, 3, n - 6)])
    return dict(H=_normal(rng, n, d), W=_normal(rng, d, k), y=y, lt=np.log(0.5))


# ------------------------------------------------------------ associative memory
def hopfield_ref(Xm, q0, lbeta, tgt):
    beta = np.exp(lbeta)
    xi = q0.copy()
    for _ in range(3):
        a = beta * xi @ Xm.T
        xi = _softmax(a, axis=1) @ Xm
    return float(np.sum((xi - Xm[tgt]) ** 2) / q0.shape[0])


def _hopfield_inputs(rng, M, d, B):
    Xm = _normal(rng, M, d) / np.sqrt(d)
    tgt = rng.integers(0, M, B)
    return dict(Xm=Xm, q0=Xm[tgt] + 0.3 * _normal(rng, B, d) / np.sqrt(d), lbeta=np.log(2.0), tgt=tgt)


# ------------------------------------------------------------ fluids
def lbm_d1q3_ref(rho0, u, ltau, obs):
    T, n = obs.shape
    om = 1.0 / (0.5 + np.exp(ltau))
    F0, F1, F2 = 2 / 3 * rho0, rho0 * (1 + 3 * u) / 6, rho0 * (1 - 3 * u) / 6
    tot = 0.0
    for t in range(T):
        rho = F0 + F1 + F2
        tot += np.sum((rho - obs[t]) ** 2)
        C0 = F0 - om * (F0 - 2 / 3 * rho)
        C1 = F1 - om * (F1 - rho * (1 + 3 * u) / 6)
        C2 = F2 - om * (F2 - rho * (1 - 3 * u) / 6)
        F0, F1, F2 = C0, np.roll(C1, 1), np.roll(C2, -1)
    return float(tot)


def _lbm_inputs(rng, T, n):
    x = np.arange(n)
    return dict(rho0=1.0 + 0.5 * np.exp(-0.5 * (x - n / 3) ** 2), u=0.1, ltau=np.log(0.4),
                obs=1.0 + 0.1 * _normal(rng, T, n))


def glacier_sia_ref(H0, bed, lgam, beta, ela, dt, dx, Hobs):
    T, n = Hobs.shape
    gam = np.exp(lgam)
    H = H0.copy()
    tot = np.sum((H - Hobs[0]) ** 2)
    for t in range(1, T):
        s = bed + H
        q = np.zeros(n)
        q[:-1] = -gam * (0.5 * (H[:-1] + H[1:])) ** 5 * ((s[1:] - s[:-1]) / dx) ** 3
        qm = np.r_[0.0, q[:-1]]
        H = np.maximum(H + dt * (np.minimum(beta * (s - ela), 2.0) - (q - qm) / dx), 0.0)
        tot += np.sum((H - Hobs[t]) ** 2)
    return float(tot)


def _glacier_inputs(rng, n, T):
    x = np.arange(n)
    bed = 3.0 - 0.4 * x
    H0 = np.maximum(2.0 - 0.35 * x, 0.0) + 0.05 * rng.uniform(size=n)
    return dict(H0=H0, bed=bed, lgam=np.log(0.05), beta=0.1, ela=1.5, dt=0.5, dx=1.0,
                Hobs=np.maximum(H0[None, :] + 0.1 * _normal(rng, T, n), 0.0))


# ------------------------------------------------------------ crystallography
def structure_factor_ref(pos, typ, Bi, ca, cb, cc, hkl, la, lsc, Fobs):
    s2 = np.sum(hkl ** 2, axis=1) / (4 * np.exp(2 * la))
    ff = (np.einsum("ak,rak->ra", ca[typ], np.exp(-cb[typ][None, :, :] * s2[:, None, None]))
          + cc[typ][None, :]) * np.exp(-Bi[None, :] * s2[:, None])
    ph = 2 * np.pi * hkl @ pos.T
    Fr, Fi = np.sum(ff * np.cos(ph), axis=1), np.sum(ff * np.sin(ph), axis=1)
    Fc = np.exp(lsc) * np.sqrt(Fr ** 2 + Fi ** 2)
    return float(np.sum((Fc - Fobs) ** 2))


def _structure_factor_inputs(rng, A, Ty, R):
    hkl = np.array([[1, 0, 0], [1, 1, 0], [1, 1, 1], [2, 0, 0], [2, 1, 0], [2, 1, 1],
                    [2, 2, 0], [3, 1, 0], [2, 2, 1], [3, 1, 1]], dtype=float)[:R]
    return dict(pos=rng.uniform(0, 1, (A, 3)), typ=np.r_[np.arange(Ty), rng.integers(0, Ty, A - Ty)],
                Bi=rng.uniform(0.2, 1.0, A), ca=rng.uniform(1.0, 6.0, (Ty, 4)),
                cb=rng.uniform(0.5, 20.0, (Ty, 4)), cc=rng.uniform(0.1, 1.0, Ty), hkl=hkl,
                la=np.log(0.4), lsc=0.0, Fobs=rng.uniform(2.0, 20.0, R))


# ------------------------------------------------------------ water networks
def water_network_ref(hd, H0, a, b, lr, dem):
    H = hd.copy()
    H[0] = H0
    dh = H[a] - H[b]
    q = np.sign(dh) * (np.abs(dh) * np.exp(-lr)) ** 0.54
    res = -dem.copy()
    np.add.at(res, b, q)
    np.add.at(res, a, -q)
    return float(np.sum(res[1:] ** 2))


def _water_inputs(rng, V, E):
    a = np.r_[np.arange(V - 1), rng.integers(0, V, E - V + 1)]
    b = np.r_[np.arange(1, V), (a[V - 1:] + rng.integers(1, V, E - V + 1)) % V]
    return dict(hd=50.0 - 5.0 * np.arange(V) + rng.uniform(0, 3, V), H0=60.0, a=a, b=b,
                lr=rng.uniform(0.0, 1.0, E), dem=rng.uniform(0.5, 1.5, V))


# ------------------------------------------------------------ marketing
def bass_ref(lp, lq, lm, beta, adv, y):
    p, q, m = np.exp(lp), np.exp(lq), np.exp(lm)
    N = 0.0
    tot = 0.0
    for t in range(len(y)):
        nn = (p + q * N / m) * (m - N) * (1 + beta * adv[t])
        N += nn
        tot += nn - y[t] * np.log(nn)
    return float(tot)


def _bass_inputs(rng, T):
    return dict(lp=np.log(0.03), lq=np.log(0.4), lm=np.log(100.0), beta=0.2,
                adv=rng.uniform(0.0, 1.0, T), y=rng.uniform(2.0, 15.0, T))


# ------------------------------------------------------------ computational psychiatry
def qlearn_ref(act, r, la, lbeta, kap, q0):
    T = len(act)
    al, beta = _sig(la), np.exp(lbeta)
    Q = q0.copy()
    tot = 0.0
    for t in range(T):
        u = beta * Q.copy()
        if t >= 1:
            u[act[t - 1]] += kap
        tot += _lse(u) - u[act[t]]
        Q[act[t]] += al * (r[t] - Q[act[t]])
    return float(tot)


def _qlearn_inputs(rng, T, K):
    act = rng.integers(0, K, T)
    return dict(act=act, r=(rng.uniform(size=T) < 0.3 + 0.2 * act).astype(float), la=0.0,
                lbeta=np.log(3.0), kap=0.3, q0=np.full(K, 0.5) + 0.1 * _normal(rng, K))


# ------------------------------------------------------------ operations
def beer_game_ref(dem, I0, S, th, hc, bc):
    T, L = len(dem), len(I0)
    I = np.zeros((T, L))
    o = np.zeros((T, L))
    for t in range(T):
        for l in range(L):
            inc = dem[t] if l == 0 else o[t, l - 1]
            I[t, l] = (I0[l] if t == 0 else I[t - 1, l]) + (o[t - 2, l] if t >= 2 else 0.0) - inc
            pipe = o[t - 1, l] if t >= 1 else 0.0
            o[t, l] = max(inc + th[l] * (S[l] - I[t, l] - pipe), 0.0)
    return float(np.sum(hc * np.maximum(I, 0.0) + bc * np.maximum(-I, 0.0)))


def _beer_inputs(rng, T, L):
    return dict(dem=rng.uniform(3.0, 6.0, T), I0=rng.uniform(8.0, 12.0, L),
                S=rng.uniform(10.0, 16.0, L), th=rng.uniform(0.3, 0.7, L), hc=0.5, bc=2.0)


# ------------------------------------------------------------ control
def pid_ref(r, lkp, lki, lkd, kb, a, g, dt, lo, hi):
    T = len(r)
    Kp, Ki, Kd = np.exp([lkp, lki, lkd])
    y, e, ui, ur, us = (np.zeros(T) for _ in range(5))
    for t in range(T):
        y[t] = (a * y[t - 1] if t >= 1 else 0.0) + (g * us[t - 3] if t >= 3 else 0.0)
        e[t] = r[t] - y[t]
        ui[t] = ui[t - 1] + dt * (Ki * e[t] + kb * (us[t - 1] - ur[t - 1])) if t >= 1 else 0.0
        ur[t] = Kp * e[t] + ui[t] + (Kd * (e[t] - e[t - 1]) / dt if t >= 1 else 0.0)
        us[t] = min(max(ur[t], lo), hi)
    return float(np.sum(e ** 2) * dt + 0.01 * np.sum(us ** 2) * dt)


def _pid_inputs(rng, T):
    return dict(r=np.where(np.arange(T) < 2, 0.0, 1.0) + 0.05 * _normal(rng, T), lkp=np.log(1.2),
                lki=np.log(0.8), lkd=np.log(0.05), kb=0.5, a=0.8, g=0.3, dt=0.5, lo=-1.0, hi=1.3)


# ------------------------------------------------------------ finite elements
def fem2d_ref(u, P, tri, lk, f, bnd, pen):
    p0, p1, p2 = P[tri[:, 0]], P[tri[:, 1]], P[tri[:, 2]]
    x1, y1 = (p1 - p0).T
    x2, y2 = (p2 - p0).T
    det = x1 * y2 - x2 * y1
    du1, du2 = u[tri[:, 1]] - u[tri[:, 0]], u[tri[:, 2]] - u[tri[:, 0]]
    gx = (y2 * du1 - y1 * du2) / det
    gy = (x1 * du2 - x2 * du1) / det
    mass = np.zeros(len(u))
    for c in range(3):
        np.add.at(mass, tri[:, c], det / 6)
    E = np.sum(0.25 * np.exp(lk) * det * (gx ** 2 + gy ** 2))
    return float(E + np.sum(mass * (0.25 * u ** 4 - f * u)) + pen * np.sum(bnd * u ** 2))


def _fem2d_inputs(rng, V, Tn):
    nx = int(round(np.sqrt(V)))
    idx = np.arange(V).reshape(nx, nx)
    tri = []
    for i in range(nx - 1):
        for j in range(nx - 1):
            a, b, c, d = idx[i, j], idx[i, j + 1], idx[i + 1, j], idx[i + 1, j + 1]
            tri += [[a, b, d], [a, d, c]]
    gx, gy = np.meshgrid(np.arange(nx, dtype=float), np.arange(nx, dtype=float), indexing="ij")
    P = np.c_[gy.ravel(), gx.ravel()] + 0.1 * rng.uniform(-1, 1, (V, 2))
    bnd = np.ones((nx, nx), dtype=bool)
    bnd[1:-1, 1:-1] = False
    return dict(u=_normal(rng, V), P=P, tri=np.array(tri), lk=0.3 * _normal(rng, Tn),
                f=_normal(rng, V), bnd=bnd.ravel(), pen=10.0)


# ------------------------------------------------------------ optimal transport
def _ot_eps(a, x, b, y, eps):
    C = np.sum((x[:, None, :] - y[None, :, :]) ** 2, axis=2)
    g = np.zeros(len(b))
    for t in range(8):
        f = -eps * _lse(np.log(b)[None, :] + ((g if t >= 1 else 0 * g)[None, :] - C) / eps, axis=1)
        g = -eps * _lse(np.log(a)[:, None] + (f[:, None] - C) / eps, axis=0)
    return a @ f + b @ g


def sinkhorn_div_ref(a, x, b, y, eps):
    return float(_ot_eps(a, x, b, y, eps) - 0.5 * _ot_eps(a, x, a, x, eps) - 0.5 * _ot_eps(b, y, b, y, eps))


def _sinkhorn_div_inputs(rng, n, m, d):
    a, b = rng.uniform(0.5, 1.5, n), rng.uniform(0.5, 1.5, m)
    return dict(a=a / a.sum(), x=_normal(rng, n, d), b=b / b.sum(), y=0.5 + _normal(rng, m, d), eps=0.5)


# ------------------------------------------------------------ network science
def sbm_ref(A, z, lth, lw):
    n = len(z)
    w = np.exp(0.5 * (lw + lw.T))
    lam = np.exp(lth[:, None] + lth[None, :]) * w[z][:, z]
    iu = np.triu(np.ones((n, n), dtype=bool), 1)
    return float(np.sum((lam - A * np.log(lam))[iu]) + np.sum(lth) ** 2)


def _sbm_inputs(rng, n, K):
    z = np.r_[np.arange(K), rng.integers(0, K, n - K)]
    A = rng.poisson(np.where(z[:, None] == z[None, :], 2.0, 0.3)).astype(float)
    A = np.triu(A, 1) + np.triu(A, 1).T
    return dict(A=A, z=z, lth=0.2 * _normal(rng, n), lw=0.3 * _normal(rng, K, K))


# ------------------------------------------------------------ quantitative finance
def svi_ref(kq, wobs, vw, ex, a, lb, rr, mm, ls, lam):
    b, rho, sg = np.exp(lb)[ex], np.tanh(rr)[ex], np.exp(ls)[ex]
    km = kq - mm[ex]
    rt = np.sqrt(km ** 2 + sg ** 2)
    w = a[ex] + b * (rho * km + rt)
    w1 = b * (rho + km / rt)
    w2 = b * sg ** 2 / rt ** 3
    g = (1 - kq * w1 / (2 * w)) ** 2 - w1 ** 2 / 4 * (1 / w + 0.25) + w2 / 2
    return float(np.sum(vw * (w - wobs) ** 2) + lam * np.sum(np.minimum(g, 0.0) ** 2))


def _svi_inputs(rng, Q, E):
    ex = np.r_[np.arange(E), rng.integers(0, E, Q - E)]
    kq = rng.uniform(-1.0, 1.0, Q)
    return dict(kq=kq, wobs=0.04 * (1 + ex) + 0.05 * kq ** 2 + 0.005 * _normal(rng, Q),
                vw=rng.uniform(0.5, 1.5, Q), ex=ex, a=np.full(E, 0.02) + 0.01 * np.arange(E),
                lb=np.log(0.9) + 0.1 * _normal(rng, E), rr=-0.3 + 0.1 * _normal(rng, E),
                mm=0.05 * _normal(rng, E), ls=np.log(0.2) + 0.1 * _normal(rng, E), lam=5.0)


def cds_ref(lh, bk, mat, spr, tg, r, dt, rec):
    lam = np.exp(lh)[bk]
    Q = np.exp(-np.cumsum(lam * dt))
    Qp = np.r_[1.0, Q[:-1]]
    D = np.exp(-r * tg)
    out = 0.0
    for c in range(len(mat)):
        sel = np.arange(len(tg)) <= mat[c]
        prot = (1 - rec) * np.sum(D[sel] * (Qp[sel] - Q[sel]))
        rpv = np.sum(dt * D[sel] * 0.5 * (Q[sel] + Qp[sel]))
        out += (1e4 * prot / rpv - spr[c]) ** 2
    return float(out)


def _cds_inputs(rng, N, Kb, C):
    bk = np.minimum(np.arange(N) * Kb // N, Kb - 1)
    return dict(lh=np.log(0.02) + 0.2 * _normal(rng, Kb), bk=bk,
                mat=np.array([N // 4 - 1, N // 2 - 1, N - 1])[:C], spr=rng.uniform(100.0, 160.0, C),
                tg=0.25 * np.arange(1, N + 1), r=0.03, dt=0.25, rec=0.4)


# ------------------------------------------------------------ state estimation
def ekf_ref(y, m0, P0, lgl, c, dt, lq, lr):
    gl, R = np.exp(lgl), np.exp(lr)
    Qn = np.diag(np.exp(lq))
    m, P = m0.copy(), P0.copy()
    tot = 0.0
    for t in range(len(y)):
        if t >= 1:
            F = np.array([[1.0, dt], [-dt * gl * np.cos(m[0]), 1 - dt * c]])
            m = np.array([m[0] + dt * m[1], m[1] - dt * gl * np.sin(m[0]) - dt * c * m[1]])
            P = F @ P @ F.T + Qn
        S = np.cos(m[0]) ** 2 * P[0, 0] + R
        v = y[t] - np.sin(m[0])
        K = P[:, 0] * np.cos(m[0]) / S
        m = m + K * v
        P = P - np.outer(K, K) * S
        tot += 0.5 * (np.log(S) + v ** 2 / S)
    return float(tot + 0.5 * len(y) * np.log(2 * np.pi))


def _ekf_inputs(rng, T):
    th, om = 0.6, 0.0
    ys = []
    for _ in range(T):
        ys.append(np.sin(th) + 0.05 * rng.standard_normal())
        th, om = th + 0.1 * om, om - 0.1 * 9.0 * np.sin(th)
    return dict(y=np.array(ys), m0=np.array([0.5, 0.1]), P0=np.array([[0.1, 0.01], [0.01, 0.2]]),
                lgl=np.log(9.0), c=0.1, dt=0.1, lq=np.log([1e-3, 1e-2]), lr=np.log(0.05 ** 2))


# ------------------------------------------------------------ astronomy
def lomb_scargle_ref(tt, y, wt, om, tau):
    w = wt / wt.sum()
    yb = w @ y
    Y = y - yb
    YY = w @ Y ** 2
    cs, sn = np.cos(np.outer(om, tt)), np.sin(np.outer(om, tt))
    C, S = cs @ w, sn @ w
    YC, YS = cs @ (w * Y), sn @ (w * Y)
    CC = (cs ** 2) @ w - C ** 2
    SS = (sn ** 2) @ w - S ** 2
    CS = (cs * sn) @ w - C * S
    p = (SS * YC ** 2 + CC * YS ** 2 - 2 * CS * YC * YS) / (YY * (CC * SS - CS ** 2))
    q = _softmax(p / tau)
    return float(q @ om + 0.1 * np.log(YY))


def _lomb_inputs(rng, S, F):
    tt = np.sort(rng.uniform(0, 10, S))
    return dict(tt=tt, y=np.sin(1.7 * tt) + 0.3 * _normal(rng, S), wt=rng.uniform(0.5, 2.0, S),
                om=np.linspace(0.8, 2.6, F) + 0.02 * _normal(rng, F), tau=0.1)


# ------------------------------------------------------------ magnetic resonance
def bloch_ref(b1, df, lT1, lT2, lk, dt, sig):
    T, V = b1.shape[0], len(df)
    E1, E2 = np.exp(-dt * np.exp(-lT1)), np.exp(-dt * np.exp(-lT2))
    M = np.zeros((V, 3))
    M[:, 2] = 1.0
    tot = 0.0
    for t in range(T):
        B = np.c_[np.exp(lk) * np.tile(b1[t], (V, 1)), df]
        nb = np.linalg.norm(B, axis=1)
        k = B / nb[:, None]
        th = nb * dt
        R = (M * np.cos(th)[:, None] + np.sin(th)[:, None] * np.cross(k, M)
             + k * np.sum(k * M, axis=1, keepdims=True) * (1 - np.cos(th))[:, None])
        M = np.c_[E2 * R[:, :2], 1 + (R[:, 2] - 1) * E1]
        tot += np.sum((M[:, :2].mean(axis=0) - sig[t]) ** 2)
    return float(tot)


def _bloch_inputs(rng, T, V):
    return dict(b1=0.5 * _normal(rng, T, 2), df=rng.uniform(-1.0, 1.0, V), lT1=np.log(5.0),
                lT2=np.log(1.0), lk=0.0, dt=0.3, sig=0.3 * _normal(rng, T, 2))


# ------------------------------------------------------------ the programs
PROGRAMS = {
    # ------------------------------------------------------------ epidemiology on networks
    "sis_network": dict(src="""
# discrete-time SIS on a weighted contact network given as an edge list (src -> dst):
# each node's probability of being infected; the infection pressure on v sums the
# previous step's probabilities of its sources; the log prevalence fitted to surveys
def sis_network(p0: f64[N], src: i64[E], dst: i64[E], w: f64[E], lb: f64, lg: f64, obs: f64[T]) -> f64:
    beta = exp(lb)
    gam = sigmoid(lg)
    P[t: T, v: N] = [t == 0] * p0[v] + [t >= 1] * ((1.0 - gam) * P[t - 1, v]
        + (1.0 - P[t - 1, v]) * (1.0 - exp(-beta * sum[e]([dst[e] == v] * w[e] * P[t - 1, src[e]]))))
    prev[t] = sum[v](P[t, v]) / N
    return sum[t]((log(prev[t]) - log(obs[t])) ** 2)
""", sizes=dict(N=5, E=8, T=6), make=_sis_network_inputs,
        ref=sis_network_ref, note="a gather and a scatter of the previous step inside a recurrence"),

    # ------------------------------------------------------------ pharmacokinetics
    "pk3_dosing": dict(src="""
# a three-compartment mammillary model (central, shallow and deep peripheral) by Euler
# steps of dt under an infusion, with bolus doses amt[d] at the steps dose_t[d]; the
# central concentration at the sampling steps st[s] against log-normal measurements
def pk3_dosing(lk: f64[5], dt: f64, dose_t: i64[D], amt: f64[D], infus: f64[T], st: i64[S], cobs: f64[S], lV: f64, ls: f64) -> f64:
    k10 = exp(lk[0])
    k12 = exp(lk[1])
    k21 = exp(lk[2])
    k13 = exp(lk[3])
    k31 = exp(lk[4])
    bol[t: T] = sum[d]([t == dose_t[d]] * amt[d])
    A1[t: T] = [t >= 1] * (A1[t - 1] + dt * (infus[t - 1] - (k10 + k12 + k13) * A1[t - 1] + k21 * A2[t - 1] + k31 * A3[t - 1])) + bol[t]
    A2[t: T] = [t >= 1] * (A2[t - 1] + dt * (k12 * A1[t - 1] - k21 * A2[t - 1]))
    A3[t: T] = [t >= 1] * (A3[t - 1] + dt * (k13 * A1[t - 1] - k31 * A3[t - 1]))
    c[s] = A1[st[s]] / exp(lV)
    return sum[s]((log(c[s]) - log(cobs[s])) ** 2) / (2.0 * exp(2.0 * ls)) + S * ls
""", sizes=dict(T=12, D=3, S=5), make=_pk3_inputs,
        ref=pk3_dosing_ref, note="doses placed by comparing the step with labels; a gathered recurrence"),

    # ------------------------------------------------------------ seismology
    "seismic_locate": dict(src="""
# joint earthquake location: each phase pick p names its event, station and phase
# (0 = P, 1 = S); the predicted arrival is the origin time plus the straight-ray
# distance over the phase velocity plus a station correction; a Cauchy misfit and a
# small penalty on the corrections
def seismic_locate(hyp: f64[Ev, 3], t0: f64[Ev], sta: f64[St, 3], lv: f64[2], corr: f64[St, 2], pev: i64[P], pst: i64[P], pph: i64[P], tobs: f64[P], sc: f64) -> f64:
    v[q] = exp(lv[q])
    dist[p] = sqrt(sum[c]((hyp[pev[p], c] - sta[pst[p], c]) ** 2) + 0.01)
    pred[p] = t0[pev[p]] + dist[p] / v[pph[p]] + corr[pst[p], pph[p]]
    res[p] = pred[p] - tobs[p]
    return sum[p](log(1.0 + (res[p] / sc) ** 2)) + 0.1 * sum[s, q](corr[s, q] ** 2)
""", sizes=dict(Ev=3, St=4, P=12), make=_seismic_inputs,
        ref=seismic_locate_ref, note="three label arrays; a table gathered at two labels"),

    "eikonal_sweep": dict(src="""
# first-arrival travel times from a source in the corner by one Godunov sweep of the
# eikonal equation |grad T| = s on a grid of spacing h: the one-sided update where the
# two upwind neighbours differ by at least h s, the two-sided one elsewhere; the times
# at the receivers fitted to picks
def eikonal_sweep(ls: f64[n, m], h: f64, rcv: i64[R, 2], tobs: f64[R]) -> f64:
    s[i, j] = exp(ls[i, j])
    Tt[i: n, j: m] = ([i == 0] * [j >= 1] * (Tt[i, j - 1] + h * s[i, j])
        + [i >= 1] * [j == 0] * (Tt[i - 1, j] + h * s[i, j])
        + [i >= 1] * [j >= 1] * ([abs(Tt[i - 1, j] - Tt[i, j - 1]) >= h * s[i, j]] * (min(Tt[i - 1, j], Tt[i, j - 1]) + h * s[i, j])
            + [abs(Tt[i - 1, j] - Tt[i, j - 1]) < h * s[i, j]] * 0.5 * (Tt[i - 1, j] + Tt[i, j - 1]
                + sqrt(2.0 * h ** 2 * s[i, j] ** 2 - (Tt[i - 1, j] - Tt[i, j - 1]) ** 2))))
    return sum[r]((Tt[rcv[r, 0], rcv[r, 1]] - tobs[r]) ** 2)
""", sizes=dict(n=4, m=5, R=4), make=_eikonal_inputs,
        ref=eikonal_sweep_ref, note="a two-index recurrence choosing its update by value brackets"),

    # ------------------------------------------------------------ geodesy
    "gps_fix": dict(src="""
# WGS84 geodetic coordinates (radians, km) to Earth-centred Cartesian ones
def ecef(lat: f64, lon: f64, h: f64) -> f64[3]:
    a = 6378.137
    e2 = 0.00669437999014
    N = a / sqrt(1.0 - e2 * sin(lat) ** 2)
    r[c: 3] = ([c == 0] * (N + h) * cos(lat) * cos(lon) + [c == 1] * (N + h) * cos(lat) * sin(lon)
        + [c == 2] * (N * (1.0 - e2) + h) * sin(lat))
    return r

# a GPS fix: the receiver's latitude, longitude and height, its clock bias b (km) and a
# zenith tropospheric delay tz mapped by 1 / sin(elevation), against pseudoranges
def gps_fix(lat: f64, lon: f64, h: f64, b: f64, tz: f64, sat: f64[K, 3], rho: f64[K], sig: f64[K]) -> f64:
    r = ecef(lat, lon, h)
    up[c: 3] = [c == 0] * cos(lat) * cos(lon) + [c == 1] * cos(lat) * sin(lon) + [c == 2] * sin(lat)
    d[k, c] = sat[k, c] - r[c]
    g[k] = sqrt(sum[c](d[k, c] ** 2))
    se[k] = sum[c](d[k, c] * up[c]) / g[k]
    pred[k] = g[k] + b + tz / se[k]
    return sum[k](((pred[k] - rho[k]) / sig[k]) ** 2)
""", sizes=dict(K=6), make=lambda rng, K: _gps_inputs(rng, K),
        ref=gps_fix_ref, note="a called function of scalars returning a 3-vector"),

    # ------------------------------------------------------------ splines
    "cox_de_boor": dict(src="""
# a cubic B-spline fitted to samples: knots from t0 and positive gaps exp(dk), the
# basis by the Cox-de Boor recursion over the degree p (degree 0 an indicator of the
# knot span, by value brackets), M - 4 control values
def cox_de_boor(t0: f64, dk: f64[M], x: f64[S], C: f64[M - 4], y: f64[S]) -> f64:
    kn[i: M] = [i == 0] * t0 + [i >= 1] * (kn[i - 1] + exp(dk[i]))
    B[p: 4, s: S, i: M - 1] = ([p == 0] * [kn[i] <= x[s]] * [x[s] < kn[i + 1]]
        + [p >= 1] * [i + p + 1 < M] * ((x[s] - kn[i]) / (kn[i + p] - kn[i]) * B[p - 1, s, i]
            + (kn[i + p + 1] - x[s]) / (kn[i + p + 1] - kn[i + 1]) * B[p - 1, s, i + 1]))
    f[s] = sum[j: M - 4](C[j] * B[3, s, j])
    return sum[s]((f[s] - y[s]) ** 2)
""", sizes=dict(M=9, S=7), make=_cox_de_boor_inputs,
        ref=cox_de_boor_ref, note="a recurrence over the degree reading knots at i + p; a derived size"),

    # ------------------------------------------------------------ tree ensembles
    "soft_tree": dict(src="""
# a soft (sigmoid-gated) decision tree of depth L with N = 2^L leaves: the probability
# of reaching node v of level d is a recurrence over depth; node u of level d - 1 sends
# the share sigmoid(z) to child 2u and the rest to 2u + 1; leaves hold class logits
def soft_tree(X: f64[S, F], W: f64[L, N, F], b: f64[L, N], leaf: f64[N, C], y: i64[S]) -> f64:
    z[d, s, u] = sum[f](W[d, u, f] * X[s, f]) + b[d, u]
    mu[d: L + 1, s: S, v: N] = [d == 0] * [v == 0] + [d >= 1] * sum[u]([2 * u == v] * mu[d - 1, s, u] * sigmoid(z[d - 1, s, u])
        + [2 * u + 1 == v] * mu[d - 1, s, u] * sigmoid(-z[d - 1, s, u]))
    out[s, c] = sum[v](mu[L, s, v] * leaf[v, c])
    return sum[s](logsumexp[c](out[s, c]) - out[s, y[s]]) / S
""", sizes=dict(S=5, F=3, L=3, C=3), make=_soft_tree_inputs,
        ref=soft_tree_ref, note="a recurrence over L + 1 levels with strided equality brackets",
    ),

    # ------------------------------------------------------------ mixture of experts
    "moe_top2": dict(src="""
# a top-2 mixture of linear experts: the router's best and second-best logits (a max,
# then a max filtered to the logits below the best), the two gates renormalised, and
# the Switch load-balancing term (routing probability times the share routed)
def moe_top2(X: f64[B, D], Wg: f64[D, E], We: f64[E, D, K], Y: f64[B, K], alpha: f64) -> f64:
    g[s, e] = sum[d](X[s, d] * Wg[d, e])
    m1[s] = max[e](g[s, e])
    m2[s] = max[e | g[s, e] < m1[s]](g[s, e])
    gate[s, e] = [g[s, e] >= m2[s]] * exp(g[s, e] - m1[s]) / (1.0 + exp(m2[s] - m1[s]))
    out[s, k] = sum[e, d](gate[s, e] * X[s, d] * We[e, d, k])
    imp[e] = sum[s](exp(g[s, e] - logsumexp[c](g[s, c]))) / B
    load[e] = sum[s]([g[s, e] >= m2[s]]) / B
    return sum[s, k]((out[s, k] - Y[s, k]) ** 2) / B + alpha * E * sum[e](imp[e] * load[e])
""", sizes=dict(B=6, D=3, E=4, K=2), make=_moe_top2_inputs,
        ref=moe_top2_ref, note="a max filtered by the value of another max"),

    # ------------------------------------------------------------ attention
    "longformer": dict(src="""
# Longformer-style attention: each query attends to keys within two positions and to
# every global token, and global tokens attend everywhere (a band or a relation, under
# `or`, as the filter of the softmax)
def longformer(X: f64[n, d], Wq: f64[d, e], Wk: f64[d, e], Wv: f64[d, e], glob: bool[n], Y: f64[n, e]) -> f64:
    Q[i, a] = sum[c](X[i, c] * Wq[c, a])
    K[j, a] = sum[c](X[j, c] * Wk[c, a])
    V[j, a] = sum[c](X[j, c] * Wv[c, a])
    S[i, j] = sum[a](Q[i, a] * K[j, a]) / sqrt(e)
    lse[i] = logsumexp[j | (i - 2 <= j and j <= i + 2) or glob[i] or glob[j]](S[i, j])
    O[i, a] = sum[j | (i - 2 <= j and j <= i + 2) or glob[i] or glob[j]](exp(S[i, j] - lse[i]) * V[j, a])
    return sum[i, a]((O[i, a] - Y[i, a]) ** 2) / n
""", sizes=dict(n=7, d=3, e=2), make=_longformer_inputs,
        ref=longformer_ref, note="a band or a relation in a filter under `or`"),

    "mil_attention": dict(src="""
# gated attention pooling for multiple-instance learning (Ilse et al.): instance i
# belongs to bag bag[i]; its attention score is softmaxed within its bag, the bag
# embedding is the weighted mean of its instances, and a logistic head scores it
def mil_attention(X: f64[N, D], bag: i64[N], V: f64[D, H], U: f64[D, H], w: f64[H], c: f64[D], c0: f64, yb: f64[B]) -> f64:
    a[i] = sum[h](w[h] * tanh(sum[d](X[i, d] * V[d, h])) * sigmoid(sum[d](X[i, d] * U[d, h])))
    lse[b: B] = logsumexp[i | bag[i] == b](a[i])
    z[b, d] = sum[i]([bag[i] == b] * exp(a[i] - lse[b]) * X[i, d])
    lg[b] = sum[d](c[d] * z[b, d]) + c0
    return sum[b](softplus(lg[b]) - yb[b] * lg[b]) / B
""", sizes=dict(N=9, D=3, H=4, B=3), make=_mil_inputs,
        ref=mil_attention_ref, note="a logsumexp filtered by a bag label"),

    # ------------------------------------------------------------ contrastive learning
    "supcon": dict(src="""
# the supervised contrastive loss (Khosla et al.): normalised projections, and for
# each anchor the mean log-probability of its positives (the other samples of its
# class) against all the other samples, at temperature exp(lt)
def supcon(H: f64[n, d], W: f64[d, k], y: i64[n], lt: f64) -> f64:
    Z[i, c] = sum[j](H[i, j] * W[j, c])
    nz[i] = sqrt(sum[c](Z[i, c] ** 2))
    U[i, c] = Z[i, c] / nz[i]
    Sm[i, a] = exp(-lt) * sum[c](U[i, c] * U[a, c])
    den[i] = logsumexp[a | a != i](Sm[i, a])
    npos[i] = sum[p]([p != i and y[p] == y[i]])
    l[i] = sum[p]([p != i and y[p] == y[i]] * (Sm[i, p] - den[i])) / npos[i]
    return -sum[i](l[i]) / n
""", sizes=dict(n=8, d=4, k=3), make=_supcon_inputs,
        ref=supcon_ref, note="labels compared with labels; a filter excluding the diagonal"),

    # ------------------------------------------------------------ associative memory
    "hopfield": dict(src="""
# retrieval in a modern Hopfield network (Ramsauer et al.): three updates
# xi <- Xm' softmax(beta Xm xi) from noisy queries, scored against the stored patterns
def hopfield(Xm: f64[M, d], q0: f64[B, d], lbeta: f64, tgt: i64[B]) -> f64:
    beta = exp(lbeta)
    a[t: 4, s: B, m: M] = beta * sum[c](Xm[m, c] * xi[t, s, c])
    lse[t: 4, s: B] = logsumexp[m](a[t, s, m])
    xi[t: 4, s: B, c: d] = [t == 0] * q0[s, c] + [t >= 1] * sum[m](exp(a[t - 1, s, m] - lse[t - 1, s]) * Xm[m, c])
    return sum[s, c]((xi[3, s, c] - Xm[tgt[s], c]) ** 2) / B
""", sizes=dict(M=5, d=4, B=3), make=_hopfield_inputs,
        ref=hopfield_ref, note="a three-statement recurrence with a logsumexp per step"),

    # ------------------------------------------------------------ fluids
    "lbm_d1q3": dict(src="""
# a D1Q3 lattice Boltzmann scheme for advection-diffusion on a periodic line: rest,
# right and left populations, BGK collision towards w_k rho (1 + 3 c_k u) at the rate
# 1 / (1/2 + exp(ltau)), then streaming; the density fitted to snapshots
def lbm_d1q3(rho0: f64[n], u: f64, ltau: f64, obs: f64[T, n]) -> f64:
    om = 1.0 / (0.5 + exp(ltau))
    rho[t: T, x: n] = F0[t, x] + F1[t, x] + F2[t, x]
    C0[t: T, x: n] = F0[t, x] - om * (F0[t, x] - 2.0 / 3.0 * rho[t, x])
    C1[t: T, x: n] = F1[t, x] - om * (F1[t, x] - rho[t, x] * (1.0 + 3.0 * u) / 6.0)
    C2[t: T, x: n] = F2[t, x] - om * (F2[t, x] - rho[t, x] * (1.0 - 3.0 * u) / 6.0)
    F0[t: T, x: n] = [t == 0] * 2.0 / 3.0 * rho0[x] + [t >= 1] * C0[t - 1, x]
    F1[t: T, x: n] = ([t == 0] * rho0[x] * (1.0 + 3.0 * u) / 6.0
        + [t >= 1] * ([x >= 1] * C1[t - 1, x - 1] + [x == 0] * C1[t - 1, n - 1]))
    F2[t: T, x: n] = ([t == 0] * rho0[x] * (1.0 - 3.0 * u) / 6.0
        + [t >= 1] * ([x + 1 < n] * C2[t - 1, x + 1] + [x == n - 1] * C2[t - 1, 0]))
    return sum[t, x]((rho[t, x] - obs[t, x]) ** 2)
""", sizes=dict(T=5, n=6), make=_lbm_inputs,
        ref=lbm_d1q3_ref, note="a seven-statement group with periodic streaming"),

    "glacier_sia": dict(src="""
# a flowline glacier under the shallow-ice approximation (Glen's n = 3): the flux
# between cells x and x + 1 is -gam H^5 (ds/dx)^3 with H averaged there and none
# through the right end; the mass balance grows with the surface height above the
# equilibrium line, capped; thickness never goes below zero
def glacier_sia(H0: f64[n], bed: f64[n], lgam: f64, beta: f64, ela: f64, dt: f64, dx: f64, Hobs: f64[T, n]) -> f64:
    gam = exp(lgam)
    s[t: T, x: n] = bed[x] + H[t, x]
    q[t: T, x: n] = [x + 1 < n] * -gam * (0.5 * (H[t, x] + H[t, x + 1])) ** 5 * ((s[t, x + 1] - s[t, x]) / dx) ** 3
    H[t: T, x: n] = [t == 0] * H0[x] + [t >= 1] * max(H[t - 1, x] + dt * (min(beta * (s[t - 1, x] - ela), 2.0)
        - (q[t - 1, x] - [x >= 1] * q[t - 1, x - 1]) / dx), 0.0)
    return sum[t, x]((H[t, x] - Hobs[t, x]) ** 2)
""", sizes=dict(n=6, T=5), make=_glacier_inputs,
        ref=glacier_sia_ref, note="a staggered flux with a fifth power, min and max kinks"),

    # ------------------------------------------------------------ crystallography
    "structure_factor": dict(src="""
# structure-factor amplitudes of a cubic cell (lattice constant exp(la)) with atoms at
# fractional positions pos, of types typ: Cromer-Mann form factors from a table and an
# isotropic temperature factor per atom; a scale fitted to observed amplitudes
def structure_factor(pos: f64[A, 3], typ: i64[A], Bi: f64[A], ca: f64[Ty, 4], cb: f64[Ty, 4], cc: f64[Ty], hkl: f64[R, 3], la: f64, lsc: f64, Fobs: f64[R]) -> f64:
    s2[r] = sum[c](hkl[r, c] ** 2) / (4.0 * exp(2.0 * la))
    ff[r, a] = (sum[k](ca[typ[a], k] * exp(-cb[typ[a], k] * s2[r])) + cc[typ[a]]) * exp(-Bi[a] * s2[r])
    ph[r, a] = 6.283185307179586 * sum[c](hkl[r, c] * pos[a, c])
    Fr[r] = sum[a](ff[r, a] * cos(ph[r, a]))
    Fi[r] = sum[a](ff[r, a] * sin(ph[r, a]))
    Fc[r] = exp(lsc) * sqrt(Fr[r] ** 2 + Fi[r] ** 2)
    return sum[r]((Fc[r] - Fobs[r]) ** 2)
""", sizes=dict(A=4, Ty=2, R=8), make=_structure_factor_inputs,
        ref=structure_factor_ref, note="tables gathered by atom type inside sums"),

    # ------------------------------------------------------------ water networks
    "water_network": dict(src="""
# steady flow in a water distribution network: pipe e runs from node a[e] to b[e] and
# carries q = sign(dh) (|dh| / r)^0.54 (Hazen-Williams) for the head difference dh;
# node 0 is a reservoir at head H0; the other nodes' mass balances are the residuals
def water_network(hd: f64[V], H0: f64, a: i64[E], b: i64[E], lr: f64[E], dem: f64[V]) -> f64:
    H[v] = [v == 0] * H0 + [v >= 1] * hd[v]
    dh[e] = H[a[e]] - H[b[e]]
    q[e] = sign(dh[e]) * (abs(dh[e]) * exp(-lr[e])) ** 0.54
    res[v] = sum[e]([b[e] == v] * q[e]) - sum[e]([a[e] == v] * q[e]) - dem[v]
    return sum[v]([v >= 1] * res[v] ** 2)
""", sizes=dict(V=5, E=7), make=_water_inputs,
        ref=water_network_ref, note="a fractional power of abs with sign; scatters by two labels"),

    # ------------------------------------------------------------ marketing
    "bass_diffusion": dict(src="""
# the generalised Bass diffusion model: new adopters (p + q N / m)(m - N) scaled by
# advertising effort, N the cumulative adopters before the period; a Poisson
# likelihood of the observed sales
def bass_diffusion(lp: f64, lq: f64, lm: f64, beta: f64, adv: f64[T], y: f64[T]) -> f64:
    p = exp(lp)
    q = exp(lq)
    m = exp(lm)
    nn[t: T] = (p + q * [t >= 1] * N[t - 1] / m) * (m - [t >= 1] * N[t - 1]) * (1.0 + beta * adv[t])
    N[t: T] = [t >= 1] * N[t - 1] + nn[t]
    return sum[t](nn[t] - y[t] * log(nn[t]))
""", sizes=dict(T=10), make=lambda rng, T: _bass_inputs(rng, T),
        ref=bass_ref, note="a two-statement scalar recurrence read inside a product"),

    # ------------------------------------------------------------ computational psychiatry
    "qlearn_choices": dict(src="""
# Q-learning fitted to a subject's choices act[t] with rewards r[t]: the chosen arm's
# value moves towards the reward at the learning rate sigmoid(la); choices are a
# softmax at inverse temperature exp(lbeta) with a bonus kap for repeating a choice
def qlearn_choices(act: i64[T], r: f64[T], la: f64, lbeta: f64, kap: f64, q0: f64[K]) -> f64:
    al = sigmoid(la)
    beta = exp(lbeta)
    Q[t: T, k: K] = [t == 0] * q0[k] + [t >= 1] * (Q[t - 1, k] + al * [k == act[t - 1]] * (r[t - 1] - Q[t - 1, k]))
    u[t, k] = beta * Q[t, k] + kap * [t >= 1] * [k == act[t - 1]]
    return sum[t](logsumexp[k](u[t, k]) - u[t, act[t]])
""", sizes=dict(T=10, K=3), make=_qlearn_inputs,
        ref=qlearn_ref, note="a label one step back compared inside a recurrence"),

    # ------------------------------------------------------------ operations
    "beer_game": dict(src="""
# a serial supply chain (stage 0 the retailer): each stage receives its downstream
# neighbour's order, receives its own order of two periods ago, and orders up to S
# with a smoothing th against inventory and the order in transit; holding and
# backlog costs
def beer_game(dem: f64[T], I0: f64[L], S: f64[L], th: f64[L], hc: f64, bc: f64) -> f64:
    inc[t: T, l: L] = [l == 0] * dem[t] + [l >= 1] * o[t, l - 1]
    I[t: T, l: L] = [t == 0] * I0[l] + [t >= 1] * I[t - 1, l] + [t >= 2] * o[t - 2, l] - inc[t, l]
    o[t: T, l: L] = max(inc[t, l] + th[l] * (S[l] - I[t, l] - [t >= 1] * o[t - 1, l]), 0.0)
    return sum[t, l](hc * max(I[t, l], 0.0) + bc * max(-I[t, l], 0.0))
""", sizes=dict(T=8, L=3), make=_beer_inputs,
        ref=beer_game_ref, note="a two-index group reading two steps back, with kinks"),

    # ------------------------------------------------------------ control
    "pid_antiwindup": dict(src="""
# a PID loop with back-calculation anti-windup: the plant is first order with a dead
# time of three steps, the actuator saturates at lo and hi, and the integrator is
# pulled back by kb times the saturation excess; integral squared error plus effort
def pid_antiwindup(r: f64[T], lkp: f64, lki: f64, lkd: f64, kb: f64, a: f64, g: f64, dt: f64, lo: f64, hi: f64) -> f64:
    Kp = exp(lkp)
    Ki = exp(lki)
    Kd = exp(lkd)
    y[t: T] = [t >= 1] * a * y[t - 1] + [t >= 3] * g * us[t - 3]
    e[t: T] = r[t] - y[t]
    ui[t: T] = [t >= 1] * (ui[t - 1] + dt * (Ki * e[t] + kb * (us[t - 1] - ur[t - 1])))
    ur[t: T] = Kp * e[t] + ui[t] + Kd * [t >= 1] * (e[t] - e[t - 1]) / dt
    us[t: T] = min(max(ur[t], lo), hi)
    return sum[t](e[t] ** 2) * dt + 0.01 * sum[t](us[t] ** 2) * dt
""", sizes=dict(T=12), make=lambda rng, T: _pid_inputs(rng, T),
        ref=pid_ref, note="a five-statement scalar group with saturation kinks"),

    # ------------------------------------------------------------ finite elements
    "fem2d_poisson": dict(src="""
# the energy of a P1 finite-element field u on a triangle mesh (node coordinates P,
# connectivity tri): a conductivity per element, lumped nodal masses scattered from
# the elements, a quartic reaction and a source, Dirichlet nodes by a penalty
def fem2d_poisson(u: f64[V], P: f64[V, 2], tri: i64[Tn, 3], lk: f64[Tn], f: f64[V], bnd: bool[V], pen: f64) -> f64:
    x1[e] = P[tri[e, 1], 0] - P[tri[e, 0], 0]
    y1[e] = P[tri[e, 1], 1] - P[tri[e, 0], 1]
    x2[e] = P[tri[e, 2], 0] - P[tri[e, 0], 0]
    y2[e] = P[tri[e, 2], 1] - P[tri[e, 0], 1]
    det[e] = x1[e] * y2[e] - x2[e] * y1[e]
    du1[e] = u[tri[e, 1]] - u[tri[e, 0]]
    du2[e] = u[tri[e, 2]] - u[tri[e, 0]]
    gx[e] = (y2[e] * du1[e] - y1[e] * du2[e]) / det[e]
    gy[e] = (x1[e] * du2[e] - x2[e] * du1[e]) / det[e]
    mass[v: V] = sum[e, c]([tri[e, c] == v] * det[e]) / 6.0
    En = sum[e](0.25 * exp(lk[e]) * det[e] * (gx[e] ** 2 + gy[e] ** 2))
    return En + sum[v](mass[v] * (0.25 * u[v] ** 4 - f[v] * u[v])) + pen * sum[v]([bnd[v]] * u[v] ** 2)
""", sizes=dict(V=9, Tn=8), make=_fem2d_inputs,
        ref=fem2d_ref, note="gathers through a connectivity table and a scatter to nodes"),

    # ------------------------------------------------------------ optimal transport
    "sinkhorn_div": dict(src="""
# entropic optimal transport by eight log-domain Sinkhorn iterations, its dual value
def ot_eps(a: f64[n], x: f64[n, d], b: f64[m], y: f64[m, d], eps: f64) -> f64:
    C[i, j] = sum[k]((x[i, k] - y[j, k]) ** 2)
    f[t: 8, i: n] = -eps * logsumexp[j](log(b[j]) + ([t >= 1] * g[t - 1, j] - C[i, j]) / eps)
    g[t: 8, j: m] = -eps * logsumexp[i](log(a[i]) + (f[t, i] - C[i, j]) / eps)
    return sum[i](a[i] * f[7, i]) + sum[j](b[j] * g[7, j])

# the debiased Sinkhorn divergence between two weighted point clouds
def sinkhorn_div(a: f64[n], x: f64[n, d], b: f64[m], y: f64[m, d], eps: f64) -> f64:
    return ot_eps(a, x, b, y, eps) - 0.5 * ot_eps(a, x, a, x, eps) - 0.5 * ot_eps(b, y, b, y, eps)
""", sizes=dict(n=4, m=5, d=2), make=_sinkhorn_div_inputs,
        ref=sinkhorn_div_ref, note="one recurrence function called three times with other sizes"),

    # ------------------------------------------------------------ network science
    "sbm_poisson": dict(src="""
# a degree-corrected stochastic block model with known blocks z: the expected number
# of edges between i and j is exp(lth[i] + lth[j]) w[z[i], z[j]], w symmetric; a
# Poisson likelihood over pairs and a constraint pinning the degree parameters' sum
def sbm_poisson(A: f64[n, n], z: i64[n], lth: f64[n], lw: f64[K, K]) -> f64:
    w[k, l] = exp(0.5 * (lw[k, l] + lw[l, k]))
    lam[i, j] = exp(lth[i] + lth[j]) * w[z[i], z[j]]
    return sum[i, j]([i < j] * (lam[i, j] - A[i, j] * log(lam[i, j]))) + sum[i](lth[i]) ** 2
""", sizes=dict(n=7, K=3), make=_sbm_inputs,
        ref=sbm_ref, note="a statement gathered at two labels"),

    # ------------------------------------------------------------ quantitative finance
    "svi_smile": dict(src="""
# SVI total-variance smiles w(k) = a + b (rho (k - m) + sqrt((k - m)^2 + sig^2)) for
# several expiries, quote q belonging to expiry ex[q]; a vega-weighted fit plus a
# penalty where Durrleman's butterfly condition g(k) >= 0 fails
def svi_smile(kq: f64[Q], wobs: f64[Q], vw: f64[Q], ex: i64[Q], a: f64[E], lb: f64[E], rr: f64[E], mm: f64[E], ls: f64[E], lam: f64) -> f64:
    b[x] = exp(lb[x])
    rho[x] = tanh(rr[x])
    sg[x] = exp(ls[x])
    km[q] = kq[q] - mm[ex[q]]
    rt[q] = sqrt(km[q] ** 2 + sg[ex[q]] ** 2)
    w[q] = a[ex[q]] + b[ex[q]] * (rho[ex[q]] * km[q] + rt[q])
    w1[q] = b[ex[q]] * (rho[ex[q]] + km[q] / rt[q])
    w2[q] = b[ex[q]] * sg[ex[q]] ** 2 / rt[q] ** 3
    g[q] = (1.0 - kq[q] * w1[q] / (2.0 * w[q])) ** 2 - w1[q] ** 2 / 4.0 * (1.0 / w[q] + 0.25) + w2[q] / 2.0
    return sum[q](vw[q] * (w[q] - wobs[q]) ** 2) + lam * sum[q](min(g[q], 0.0) ** 2)
""", sizes=dict(Q=12, E=3), make=_svi_inputs,
        ref=svi_ref, note="per-expiry parameters gathered by label; a min kink"),

    "cds_pricing": dict(src="""
# CDS par spreads from piecewise-constant hazard rates: period t (ending at tg[t]) lies
# in hazard bucket bk[t]; survival is a running product; the protection leg pays 1 - rec
# on default, the premium leg accrues on average survival, up to each maturity period
def cds_pricing(lh: f64[Kb], bk: i64[N], mat: i64[C], spr: f64[C], tg: f64[N], r: f64, dt: f64, rec: f64) -> f64:
    lam[k] = exp(lh[k])
    Q[t: N] = ([t == 0] + [t >= 1] * Q[t - 1]) * exp(-lam[bk[t]] * dt)
    Qp[t: N] = [t == 0] + [t >= 1] * Q[t - 1]
    D[t] = exp(-r * tg[t])
    prot[c] = (1.0 - rec) * sum[t]([t <= mat[c]] * D[t] * (Qp[t] - Q[t]))
    rpv[c] = sum[t]([t <= mat[c]] * dt * D[t] * 0.5 * (Q[t] + Qp[t]))
    return sum[c]((10000.0 * prot[c] / rpv[c] - spr[c]) ** 2)
""", sizes=dict(N=12, Kb=3, C=3), make=_cds_inputs,
        ref=cds_ref, note="an index compared with a maturity label; a gathered hazard"),

    # ------------------------------------------------------------ state estimation
    "ekf_pendulum": dict(src="""
# an extended Kalman filter for a damped pendulum (angle, rate) observed through the
# sine of its angle: the Jacobian F of the Euler step at the previous estimate, the
# predicted covariance F P F' + Q, the scalar innovation and its variance, the gain;
# the negative log-likelihood of the innovations
def ekf_pendulum(y: f64[T], m0: f64[2], P0: f64[2, 2], lgl: f64, c: f64, dt: f64, lq: f64[2], lr: f64) -> f64:
    gl = exp(lgl)
    R = exp(lr)
    mp[t: T, a: 2] = [t == 0] * m0[a] + [t >= 1] * ([a == 0] * (m[t - 1, 0] + dt * m[t - 1, 1])
        + [a == 1] * (m[t - 1, 1] - dt * gl * sin(m[t - 1, 0]) - dt * c * m[t - 1, 1]))
    F[t: T, a: 2, b: 2] = ([a == 0] * ([b == 0] + [b == 1] * dt)
        + [a == 1] * ([b == 0] * -dt * gl * [t >= 1] * cos(m[t - 1, 0]) + [b == 1] * (1.0 - dt * c)))
    Pp[t: T, a: 2, b: 2] = [t == 0] * P0[a, b] + [t >= 1] * (sum[k, l](F[t, a, k] * P[t - 1, k, l] * F[t, b, l]) + [a == b] * exp(lq[a]))
    S[t: T] = cos(mp[t, 0]) ** 2 * Pp[t, 0, 0] + R
    v[t: T] = y[t] - sin(mp[t, 0])
    K[t: T, a: 2] = Pp[t, a, 0] * cos(mp[t, 0]) / S[t]
    m[t: T, a: 2] = mp[t, a] + K[t, a] * v[t]
    P[t: T, a: 2, b: 2] = Pp[t, a, b] - K[t, a] * K[t, b] * S[t]
    return 0.5 * sum[t](log(S[t]) + v[t] ** 2 / S[t]) + 0.5 * T * log(6.283185307179586)
""", sizes=dict(T=8), make=lambda rng, T: _ekf_inputs(rng, T),
        ref=ekf_ref, note="an eight-statement group carrying a 2x2 covariance"),

    # ------------------------------------------------------------ astronomy
    "lomb_scargle": dict(src="""
# the generalised (floating-mean) Lomb-Scargle periodogram of Zechmeister and Kuerster
# at trial angular frequencies om, with the weighted variance of the data
def gls(tt: f64[S], y: f64[S], wt: f64[S], om: f64[F]) -> (f64[F], f64):
    W = sum[s](wt[s])
    w[s] = wt[s] / W
    yb = sum[s](w[s] * y[s])
    YY = sum[s](w[s] * (y[s] - yb) ** 2)
    cs[f, s] = cos(om[f] * tt[s])
    sn[f, s] = sin(om[f] * tt[s])
    C[f] = sum[s](w[s] * cs[f, s])
    Sn[f] = sum[s](w[s] * sn[f, s])
    YC[f] = sum[s](w[s] * (y[s] - yb) * cs[f, s])
    YS[f] = sum[s](w[s] * (y[s] - yb) * sn[f, s])
    CC[f] = sum[s](w[s] * cs[f, s] ** 2) - C[f] ** 2
    SS[f] = sum[s](w[s] * sn[f, s] ** 2) - Sn[f] ** 2
    CS[f] = sum[s](w[s] * cs[f, s] * sn[f, s]) - C[f] * Sn[f]
    p[f] = (SS[f] * YC[f] ** 2 + CC[f] * YS[f] ** 2 - 2.0 * CS[f] * YC[f] * YS[f]) / (YY * (CC[f] * SS[f] - CS[f] ** 2))
    return p, YY

# a soft peak frequency of the periodogram (softmax of the powers at temperature tau)
def lomb_scargle(tt: f64[S], y: f64[S], wt: f64[S], om: f64[F], tau: f64) -> f64:
    p, YY = gls(tt, y, wt, om)
    q[f] = exp(p[f] / tau - logsumexp[g](p[g] / tau))
    return sum[f](q[f] * om[f]) + 0.1 * log(YY)
""", sizes=dict(S=15, F=6), make=_lomb_inputs,
        ref=lomb_scargle_ref, note="a helper returning a tensor and a scalar, taken apart"),

    # ------------------------------------------------------------ magnetic resonance
    "bloch_sim": dict(src="""
# Bloch simulation of V isochromats (off-resonance df) under an RF pulse b1 (x and y,
# scaled by exp(lk)): each step rotates the magnetisation about the effective field by
# Rodrigues' formula (a Levi-Civita tensor built from brackets), then relaxes it with
# T1 = exp(lT1) and T2 = exp(lT2); the mean transverse signal fitted to a measurement
def bloch_sim(b1: f64[T, 2], df: f64[V], lT1: f64, lT2: f64, lk: f64, dt: f64, sig: f64[T, 2]) -> f64:
    lc[i: 3, j: 3, k: 3] = ([i == 0 and j == 1 and k == 2] + [i == 1 and j == 2 and k == 0] + [i == 2 and j == 0 and k == 1]
        - [i == 0 and j == 2 and k == 1] - [i == 2 and j == 1 and k == 0] - [i == 1 and j == 0 and k == 2])
    E1 = exp(-dt * exp(-lT1))
    E2 = exp(-dt * exp(-lT2))
    B[t: T, v: V, c: 3] = [c < 2] * exp(lk) * b1[t, c] + [c == 2] * df[v]
    nb[t, v] = sqrt(sum[c](B[t, v, c] ** 2))
    kk[t, v, c] = B[t, v, c] / nb[t, v]
    th[t, v] = nb[t, v] * dt
    Mi[t: T, v: V, c: 3] = [t == 0] * [c == 2] + [t >= 1] * M[t - 1, v, c]
    R[t: T, v: V, c: 3] = (Mi[t, v, c] * cos(th[t, v]) + sin(th[t, v]) * sum[a, b](lc[c, a, b] * kk[t, v, a] * Mi[t, v, b])
        + kk[t, v, c] * sum[a](kk[t, v, a] * Mi[t, v, a]) * (1.0 - cos(th[t, v])))
    M[t: T, v: V, c: 3] = [c < 2] * E2 * R[t, v, c] + [c == 2] * (1.0 + (R[t, v, c] - 1.0) * E1)
    return sum[t, c: 2]((sum[v](M[t, v, c]) / V - sig[t, c]) ** 2)
""", sizes=dict(T=6, V=3), make=_bloch_inputs,
        ref=bloch_ref, note="a Levi-Civita tensor from brackets; rotations inside a recurrence"),
}


REJECTED = {
    # the CKY inside algorithm over spans: a span of length l combines a shorter span
    # k < l with the rest, a read that does not step by a constant along l (a
    # triangle, which the recurrence rules exclude)
    "cky_inside": ("""
def cky_inside(lr: f64[A, A, A], le: f64[n, A]) -> f64:
    b[l: n, i: n, a: A] = [l == 0] * exp(le[i, a]) + [l >= 1] * [i + l < n] * sum[k, p, q]([k < l] * exp(lr[a, p, q]) * b[k, i, p] * b[l - k - 1, i + k + 1, q])
    return log(b[n - 1, 0, 0])
""", "TLRecurrenceError", "does not step by a constant along l", 3),
    # the lumped mass scattered to the nodes: v appears only in the comparison with a
    # label, so its range must be written ("fem2d_poisson" writes mass[v: V])
    "fem_mass_range": ("""
def fem_mass_range(P: f64[V, 2], tri: i64[Tn, 3], u: f64[V]) -> f64:
    det[e] = (P[tri[e, 1], 0] - P[tri[e, 0], 0]) * (P[tri[e, 2], 1] - P[tri[e, 0], 1]) - (P[tri[e, 2], 0] - P[tri[e, 0], 0]) * (P[tri[e, 1], 1] - P[tri[e, 0], 1])
    mass[v] = sum[e, c]([tri[e, c] == v] * det[e]) / 6.0
    return sum[v](mass[v] * u[v] ** 2)
""", "TLShapeError", "cannot infer the range of index v", 4),
    # the spline's control values (M - 2 of them) against the basis (M - 1 columns):
    # two plain uses give j two sizes ("cox_de_boor" writes sum[j: M - 4])
    "cox_de_boor_range": ("""
def cox_de_boor_range(kn: f64[M], x: f64[S], C: f64[M - 2], y: f64[S]) -> f64:
    B[p: 2, s: S, i: M - 1] = ([p == 0] * [kn[i] <= x[s]] * [x[s] < kn[i + 1]]
        + [p >= 1] * [i + 2 < M] * ((x[s] - kn[i]) / (kn[i + 1] - kn[i]) * B[p - 1, s, i]
            + (kn[i + 2] - x[s]) / (kn[i + 2] - kn[i + 1]) * B[p - 1, s, i + 1]))
    f[s] = sum[j](C[j] * B[1, s, j])
    return sum[s]((f[s] - y[s]) ** 2)
""", "TLShapeError", "index j has conflicting ranges", 6),
    # a long statement continued on the next line without an open parenthesis
    "lbm_continuation": ("""
def lbm_continuation(rho0: f64[n], obs: f64[T, n]) -> f64:
    F1[t: T, x: n] = [t == 0] * rho0[x] / 6.0
        + [t >= 1] * ([x >= 1] * F1[t - 1, x - 1] + [x == 0] * F1[t - 1, n - 1])
    return sum[t, x]((F1[t, x] - obs[t, x]) ** 2)
""", "TLSyntaxError", "unexpected indent", 4),
    # a tensor-valued call used inside an expression ("gps_fix" names it first)
    "gps_inline": ("""
def ecef(lat: f64, lon: f64, h: f64) -> f64[3]:
    r[c: 3] = [c == 0] * (6378.137 + h) * cos(lat) * cos(lon) + [c == 1] * (6378.137 + h) * cos(lat) * sin(lon) + [c == 2] * (6378.137 + h) * sin(lat)
    return r

def gps_inline(lat: f64, lon: f64, h: f64, sat: f64[K, 3], rho: f64[K]) -> f64:
    d[k, c] = sat[k, c] - ecef(lat, lon, h)
    return sum[k]((sqrt(sum[c](d[k, c] ** 2)) - rho[k]) ** 2)
""", "TLShapeError", "cannot be used inside an expression", 7),
    # a lead time given as a size: a recurrence steps by constants only ("beer_game"
    # writes the lead time of two periods as o[t - 2, l])
    "beer_leadtime": ("""
def beer_leadtime(dem: f64[T], S: f64[L], lead: f64[Lt]) -> f64:
    inc[t: T, l: L] = [l == 0] * dem[t] + [l >= 1] * o[t, l - 1]
    I[t: T, l: L] = [t >= 1] * I[t - 1, l] + [t >= Lt] * o[t - Lt, l] - inc[t, l]
    o[t: T, l: L] = max(inc[t, l] + S[l] - I[t, l], 0.0)
    return sum[t, l](max(I[t, l], 0.0))
""", "TLRecurrenceError", "does not step by a constant along t", 4),
    # the payment time as the period index times dt: an index is not a number
    # ("cds_pricing" takes the times tg as data)
    "cds_index_value": ("""
def cds_index_value(lh: f64[N], r: f64, dt: f64) -> f64:
    D[t: N] = exp(-r * dt * (t + 1))
    return sum[t](D[t] * exp(lh[t]))
""", "TLTypeError", "index t used as a value", 3),
    # a scatter written on the left-hand side ("water_network" compares the node with
    # the label inside a sum)
    "water_scatter_lhs": ("""
def water_scatter_lhs(q: f64[E], b: i64[E], dem: f64[V]) -> f64:
    inflow[b[e]] = q[e]
    return sum[v]((inflow[v] - dem[v]) ** 2)
""", "TLSyntaxError", "unexpected '['", 3),
    # a tree node's parent as v / 2 ("soft_tree" sums over parents u with
    # [2 * u == v] and [2 * u + 1 == v])
    "soft_tree_div": ("""
def soft_tree_div(z: f64[L, S, N]) -> f64:
    mu[d: L + 1, s: S, v: N] = [d == 0] * [v == 0] + [d >= 1] * mu[d - 1, s, v / 2] * sigmoid(z[d - 1, s, v / 2])
    return sum[s, v](mu[L, s, v])
""", "TLTypeError", "operator / is not allowed in an index", 3),
    # a band written with abs of an index difference ("longformer" writes two
    # comparisons)
    "longformer_abs": ("""
def longformer_abs(S: f64[n, n]) -> f64:
    lse[i] = logsumexp[j | abs(i - j) <= 2](S[i, j])
    return sum[i](lse[i])
""", "TLTypeError", "abs of an index expression is not an index", 3),
    # dose times given as floats and compared with the step index
    "pk3_f64_dose": ("""
def pk3_f64_dose(dose_t: f64[D], amt: f64[D], k: f64, infus: f64[T]) -> f64:
    bol[t: T] = sum[d]([t == dose_t[d]] * amt[d])
    A[t: T] = [t >= 1] * A[t - 1] * (1.0 - k) + bol[t] + infus[t]
    return sum[t](A[t])
""", "TLTypeError", "cannot be compared with an index", 3),
    # the attention logits over three steps beside the state over four: a group's
    # statements share their leading ranges ("hopfield" gives both t: 4)
    "hopfield_ranges": ("""
def hopfield_ranges(Xm: f64[M, d], q0: f64[B, d], beta: f64) -> f64:
    a[t: 3, s: B, m: M] = beta * sum[c](Xm[m, c] * xi[t, s, c])
    xi[t: 4, s: B, c: d] = [t == 0] * q0[s, c] + [t >= 1] * sum[m](exp(a[t - 1, s, m] - logsumexp[p](a[t - 1, s, p])) * Xm[m, c])
    return sum[s, c](xi[3, s, c] ** 2)
""", "TLRecurrenceError", "are in one recurrence group", 4),
    # the Q-learning update as an assignment to the chosen entry ("qlearn_choices"
    # writes it with [k == act[t - 1]])
    "qlearn_update": ("""
def qlearn_update(act: i64[T], r: f64[T], al: f64, q0: f64[K]) -> f64:
    Q[t: T, k: K] = [t == 0] * q0[k] + [t >= 1] * Q[t - 1, k]
    Q[t, act[t]] = Q[t - 1, act[t]] + al * (r[t] - Q[t - 1, act[t]])
    return sum[t](Q[t, act[t]])
""", "TLSyntaxError", "unexpected '['", 4),
}
