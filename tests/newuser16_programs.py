"""A sixteenth set of programs written from the documentation alone.

Domains the earlier sets (tests/newuser_programs.py ... tests/newuser15_programs.py)
leave out: quantum computing (a hardware-efficient variational circuit on four qubits,
rotations as a four-factor contraction and a CNOT chain as flips `1 - b` of an index,
the energy of a transverse-field Ising chain), coding theory (neural belief
propagation on a small LDPC code, messages along the edges of a check table gathered
and scattered inside a recurrence over iterations), communications (geometric
shaping of a constellation through a max-log demapper, minima filtered by a bit
relation), elections (the distribution of electoral votes by a dynamic program whose
step is each state's vote count, compared as arithmetic on a label), structural
econometrics (Rust's bus-engine replacement model, value iteration unrolled with a
logsumexp over two actions and a mileage shift clamped at the top), sports (the
Dixon-Coles football model with low-score corrections and goals counted from labels,
the rates from a helper returning two tensors), psychometrics (the DINA cognitive
diagnosis model, latent skill profiles as a relation), cognitive modelling (the
Wiener first-passage density of the drift-diffusion model by its large-time series,
the series' integers made by counting), materials (a Finnis-Sinclair many-body
potential with species gathered at two labels and value cutoffs), chemical
engineering (stage-by-stage distillation with relative volatilities, a composition
normalised inside each step), integrated assessment (a DICE-style climate-economy
model, capital, three carbon reservoirs and two temperatures in one recurrence group,
utility through a helper), fisheries (virtual population analysis by Pope's
approximation, a backward recurrence), nuclear physics (Bateman decay chains through
a parent table with -1 for the roots), particle physics (an extended unbinned fit of
a Breit-Wigner peak over an exponential background normalised by a trapezoid helper),
networking (a fluid model of TCP flows at a RED bottleneck with delayed feedback),
demand forecasting (Croston's method with the Syntetos-Boylan correction, updates by
value brackets), marketing (a media-mix model with adstock as a recurrence, Hill
saturation through a helper and a weekday effect by a divisibility guard),
earthquake engineering (a response spectrum by Newmark's average-acceleration
method, peaks by a hard max over time), air quality (a Gaussian plume with ground
reflection, upwind pairs kept out by a value bracket), machine translation (an
expected BLEU-2 with clipped counts, bigrams compared label against label), point
clouds (PointNet with a max over each cloud's points filtered by labels), survey
statistics (raking weights to two margins, group totals scattered and gathered in
a recurrence), econometrics (an event-study regression whose relative times are
arithmetic on adoption labels), education (Bayesian knowledge tracing with per-skill
parameters gathered at every step), radar (pulse compression decimated over a
derived size, then a cell-averaging CFAR over bands with guard cells), energy
storage (battery arbitrage by a backward dynamic program with a max filtered at the
ends of the charge grid), music information retrieval (dynamic-programming beat
tracking over four lags), emission tomography (MLEM iterations unrolled), spatial
epidemiology (Kulldorff's scan statistic over windows from prefix sums) and
political science (a NOMINATE-style spatial voting model).  Each entry has the shape
of the other sets: the program text (the function to test is named like the entry),
the sizes of the test inputs, `make(rng, **sizes)`, an independent NumPy version
`ref(**inputs)` and a note.  REJECTED holds programs such a user writes first that
the language refuses, each with its located error.  tests/test_newuser16_programs.py
checks them, and the API around them.
"""
import numpy as np
from scipy.special import erf as _erf
from scipy.special import logsumexp as _lse

from newuser2_programs import _normal
from newuser14_programs import _sig, _softmax, _softplus


# ------------------------------------------------------------ quantum computing
def _ry(theta):
    c, s = np.cos(theta / 2), np.sin(theta / 2)
    return np.array([[c, -s], [s, c]])


def _cnot(psi, ctl, tgt):
    out = psi.copy()
    idx = [slice(None)] * psi.ndim
    idx[ctl] = 1
    sub = psi[tuple(idx)]
    out[tuple(idx)] = np.flip(sub, axis=tgt - 1 if tgt > ctl else tgt)
    return out


def vqe_ising_ref(th, J, hx):
    psi = np.zeros((2, 2, 2, 2))
    psi[0, 0, 0, 0] = 1.0
    for layer in th:
        for q in range(4):
            psi = np.moveaxis(np.tensordot(_ry(layer[q]), psi, axes=(1, q)), 0, q)
        for q in range(3):
            psi = _cnot(psi, q, q + 1)
    z = np.array([1.0, -1.0])
    zz = 0.0
    for q in range(3):
        shape = [1, 1, 1, 1]
        shape[q] = 2
        za = z.reshape(shape)
        shape = [1, 1, 1, 1]
        shape[q + 1] = 2
        zb = z.reshape(shape)
        zz += np.sum(psi ** 2 * za * zb)
    xx = sum(np.sum(psi * np.flip(psi, axis=q)) for q in range(4))
    return float(-J * zz - hx * xx)


# ------------------------------------------------------------ coding theory
_LDPC_H = np.array([[0, 1, 2], [3, 4, 5], [0, 3, 4], [1, 2, 5]])


def ldpc_nbp_ref(llr, H, wc, wv, b):
    n = len(llr)
    u = np.zeros(H.shape)
    tot = np.zeros(n)
    for t in range(len(wc)):
        v = wc[t] * llr[H] + (wv[t] * (tot[H] - u) if t >= 1 else 0.0)
        th = np.tanh(0.5 * v)
        pr = np.stack([th[:, 1] * th[:, 2], th[:, 0] * th[:, 2], th[:, 0] * th[:, 1]], axis=1)
        u = np.log((1 + pr) / (1 - pr))
        tot = np.zeros(n)
        np.add.at(tot, H, u)
    post = llr + tot
    return float(np.sum(_softplus((2 * b - 1) * post)))


def _ldpc_inputs(rng, n, T):
    sig = 1.5
    y = 1.0 + sig * _normal(rng, n)            # the all-zero word sent as +1
    return dict(llr=2 * y / sig ** 2, H=_LDPC_H.copy(), wc=1.0 + 0.1 * _normal(rng, T),
                wv=1.0 + 0.1 * _normal(rng, T), b=np.zeros(n))


# ------------------------------------------------------------ communications
def _gray_bits(M, B):
    g = np.arange(M) ^ (np.arange(M) >> 1)
    return ((g[:, None] >> np.arange(B)[None, :]) & 1).astype(bool)


def qam_demap_ref(C, bits, tx, z, sig):
    Cn = C / np.sqrt(np.sum(C ** 2) / C.shape[0])
    y = Cn[tx] + sig * z
    D = np.sum((y[:, None, :] - Cn[None, :, :]) ** 2, axis=2)
    B = bits.shape[1]
    tot = 0.0
    for b in range(B):
        L = (D[:, bits[:, b]].min(axis=1) - D[:, ~bits[:, b]].min(axis=1)) / (2 * sig ** 2)
        tb = bits[tx, b]
        tot += np.sum(np.where(tb, _softplus(L), _softplus(-L)))
    return float(tot / len(tx))


def _qam_inputs(rng, M, B, R):
    ang = 2 * np.pi * np.arange(M) / M
    C = np.c_[np.cos(ang), np.sin(ang)] + 0.05 * _normal(rng, M, 2)
    bits = _gray_bits(M, B)                    # the symbol at angle 2 pi s / M carries gray(s)
    return dict(C=C, bits=bits, tx=rng.integers(0, M, R), z=_normal(rng, R, 2), sig=0.35)


# ------------------------------------------------------------ elections
def electoral_dp_ref(mu, h, lsd, e, maj):
    p = 0.5 * (1 + _erf((mu + h) / (np.sqrt(2) * np.exp(lsd))))
    V = len(maj)
    P = np.zeros(V)
    P[0] = 1.0
    for s in range(len(mu)):
        new = (1 - p[s]) * P
        new[e[s]:] += p[s] * P[:V - e[s]]
        P = new
    return float(np.log(np.sum(P[maj])))


def _electoral_inputs(rng, S):
    e = np.array([3, 1, 4, 2, 5, 2, 3])[:S]
    V = int(e.sum()) + 1
    return dict(mu=0.05 * _normal(rng, S), h=0.01, lsd=np.log(0.08), e=e,
                maj=np.arange(V) > e.sum() / 2)


# ------------------------------------------------------------ structural econometrics
def rust_bus_ref(th1, lrc, ap, beta, mil, xo, dobs, inc):
    X = len(mil)
    pi = _softmax(ap)
    RC = np.exp(lrc)
    W = None
    for k in range(12):
        if k == 0:
            v0, v1 = -th1 * mil, np.full(X, -RC)
        else:
            EW = np.array([sum(pi[j] * W[min(x + j, X - 1)] for j in range(3)) for x in range(X)])
            v0 = -th1 * mil + beta * EW
            v1 = np.full(X, -RC + beta * sum(pi[j] * W[j] for j in range(3)))
        W = np.logaddexp(v0, v1)
    ll = np.sum(np.where(dobs == 0, v0[xo], v1[xo]) - W[xo]) + np.sum(np.log(pi[inc]))
    return float(-ll / len(xo))


def _rust_inputs(rng, X, N):
    xo = rng.integers(0, X, N)
    return dict(th1=2.0, lrc=np.log(3.0), ap=np.log([0.35, 0.5, 0.15]) + 0.1 * _normal(rng, 3),
                beta=0.9, mil=np.linspace(0.0, 2.0, X), xo=xo,
                dobs=(rng.uniform(size=N) < 0.1 + 0.5 * xo / X).astype(int),
                inc=rng.integers(0, 3, N))


# ------------------------------------------------------------ sports
def dixon_coles_ref(att, dfn, home, rho, hm, aw, gh, ga, age, xi):
    lam = np.exp(home + att[hm] + dfn[aw])
    mu = np.exp(att[aw] + dfn[hm])
    tau = np.ones(len(hm))
    tau = np.where((gh == 0) & (ga == 0), 1 - lam * mu * rho, tau)
    tau = np.where((gh == 0) & (ga == 1), 1 + lam * rho, tau)
    tau = np.where((gh == 1) & (ga == 0), 1 + mu * rho, tau)
    tau = np.where((gh == 1) & (ga == 1), 1 - rho, tau)
    ll = np.log(tau) + gh * np.log(lam) - lam + ga * np.log(mu) - mu
    return float(-np.sum(np.exp(-xi * age) * ll) + np.sum(att) ** 2)


def _dixon_inputs(rng, Tm, G):
    hm = rng.integers(0, Tm, G)
    aw = (hm + rng.integers(1, Tm, G)) % Tm
    return dict(att=0.2 * _normal(rng, Tm), dfn=0.2 * _normal(rng, Tm), home=0.25, rho=-0.1,
                hm=hm, aw=aw, gh=rng.poisson(1.3, G), ga=rng.poisson(1.0, G),
                age=rng.uniform(0.0, 2.0, G), xi=0.3)


# ------------------------------------------------------------ psychometrics
def dina_ref(Y, Q, A, ls, lg, pc):
    eta = np.all(~Q[None, :, :] | A[:, None, :], axis=2)       # C x J
    p = np.where(eta, 1 - _sig(ls)[None, :], _sig(lg)[None, :])
    lp = (pc - _lse(pc))[None, :] + Y @ np.log(p).T + (1 - Y) @ np.log(1 - p).T
    return float(-np.sum(_lse(lp, axis=1)) / Y.shape[0])


def _dina_inputs(rng, N, J, K):
    A = ((np.arange(2 ** K)[:, None] >> np.arange(K)[None, :]) & 1).astype(bool)
    Q = np.zeros((J, K), dtype=bool)
    Q[np.arange(J), np.arange(J) % K] = True
    Q[J - 1, :] = True
    prof = A[rng.integers(0, 2 ** K, N)]
    eta = np.all(~Q[None, :, :] | prof[:, None, :], axis=2)
    Y = (rng.uniform(size=(N, J)) < np.where(eta, 0.85, 0.2)).astype(float)
    return dict(Y=Y, Q=Q, A=A, ls=np.full(J, -1.5) + 0.2 * _normal(rng, J),
                lg=np.full(J, -1.2) + 0.2 * _normal(rng, J), pc=0.3 * _normal(rng, 2 ** K))


# ------------------------------------------------------------ cognitive modelling
def ddm_wiener_ref(rt, resp, v, la, lw, lt0):
    a, w, t0 = np.exp(la), _sig(lw), np.exp(lt0)
    tot = 0.0
    k = np.arange(1, 13)
    for i in range(len(rt)):
        vv, ww = (v, w) if resp[i] == 0 else (-v, 1 - w)
        t = rt[i] - t0
        u = t / a ** 2
        ser = np.pi * np.sum(k * np.exp(-k ** 2 * np.pi ** 2 * u / 2) * np.sin(k * np.pi * ww))
        tot += -2 * la - vv * a * ww - vv ** 2 * t / 2 + np.log(ser)
    return float(-tot)


def _ddm_inputs(rng, N):
    return dict(rt=rng.uniform(0.65, 1.6, N), resp=rng.integers(0, 2, N), v=0.8, la=np.log(1.2),
                lw=0.1, lt0=np.log(0.2))


# ------------------------------------------------------------ materials
def eam_fs_ref(X, sp, eps, Am, rc, c):
    N = X.shape[0]
    r = np.sqrt(np.sum((X[:, None, :] - X[None, :, :]) ** 2, axis=2))
    off = ~np.eye(N, dtype=bool)
    rho = np.sum(np.where(off & (r < rc), (r - rc) ** 2, 0.0), axis=1)
    pair = np.where(off & (r < c), eps[sp[:, None], sp[None, :]] * (r - c) ** 2
                    * (1 - 1.5 * r + 0.6 * r ** 2), 0.0)
    return float(np.sum(0.5 * pair.sum(axis=1) - Am[sp] * np.sqrt(rho)))


def _eam_inputs(rng, N, S):
    X = np.array([[0.0, 0.0, 0.0], [1.0, 0.1, 0.0], [0.5, 0.9, 0.1], [1.6, 0.8, -0.2],
                  [2.3, 0.2, 0.3], [0.2, -0.9, 0.5], [1.1, -0.8, -0.4]])[:N]
    return dict(X=X + 0.05 * _normal(rng, N, 3), sp=np.arange(N) % S,
                eps=rng.uniform(0.5, 1.5, (S, S)), Am=rng.uniform(0.8, 1.2, S), rc=1.8, c=1.6)


# ------------------------------------------------------------ chemical engineering
def distill_column_ref(xD, la, lR, xm):
    al = np.exp(la)
    R = np.exp(lR)
    S = xm.shape[0]
    tot = 0.0
    y = xD.copy()
    for s in range(S):
        x = (y / al) / np.sum(y / al)         # the liquid of stage s
        tot += np.sum((x - xm[s]) ** 2)
        y = R / (R + 1) * x + xD / (R + 1)    # the vapour from the stage below
    return float(tot)


def _distill_inputs(rng, S, K):
    xD = np.array([0.9, 0.07, 0.03])[:K]
    la = np.log([2.5, 1.0, 0.6])[:K]
    xm = np.array(distill_column_stages(xD, la, np.log(3.0), S))
    return dict(xD=xD, la=la + 0.05 * _normal(rng, K), lR=np.log(2.5),
                xm=np.abs(xm + 0.01 * _normal(rng, S, K)))


def distill_column_stages(xD, la, lR, S):
    al, R = np.exp(la), np.exp(lR)
    out, y = [], xD.copy()
    for _ in range(S):
        x = (y / al) / np.sum(y / al)
        out.append(x)
        y = R / (R + 1) * x + xD / (R + 1)
    return out


# ------------------------------------------------------------ integrated assessment
def dice_climate_ref(zm, zs, A, Lp, sg, th1, Rd, phi, M0, K0, Tat0, Tlo0, alpha):
    T = len(zm)
    mu, sv = _sig(zm), _sig(zs)
    K, M, Ta, Tl = K0, M0.copy(), Tat0, Tlo0
    Y = E = F = 0.0
    U = 0.0
    for t in range(T):
        if t >= 1:
            Kn = 0.59049 * K + 5.0 * sv[t - 1] * Y
            Mn = phi @ M + np.array([5.0 * E / 3.666, 0.0, 0.0])
            Tan = Ta + 0.1005 * (F - 1.18 * Ta - 0.088 * (Ta - Tl))
            Tln = Tl + 0.025 * (Ta - Tl)
            K, M, Ta, Tl = Kn, Mn, Tan, Tln
        Yg = A[t] * K ** 0.3 * Lp[t] ** 0.7
        Y = Yg * (1 - th1[t] * mu[t] ** 2.6) / (1 + 0.00236 * Ta ** 2)
        E = sg[t] * (1 - mu[t]) * Yg + 0.5
        F = 3.6813 * np.log(M[0] / 588.0) / np.log(2.0) + 0.5
        C = (1 - sv[t]) * Y
        U += Rd[t] * Lp[t] * ((C / Lp[t]) ** (1 - alpha) - 1) / (1 - alpha)
    return float(-U)


def _dice_inputs(rng, T):
    t = np.arange(T)
    return dict(zm=-1.5 + 0.15 * t + 0.1 * _normal(rng, T), zs=-1.1 + 0.05 * _normal(rng, T),
                A=5.1 * 1.05 ** t, Lp=7.4 + 0.3 * t, sg=0.35 * 0.95 ** t,
                th1=0.07 * 0.97 ** t, Rd=1.015 ** (-5.0 * t),
                phi=np.array([[0.88, 0.196, 0.0], [0.12, 0.797, 0.001465],
                              [0.0, 0.007, 0.998535]]),
                M0=np.array([851.0, 460.0, 1740.0]), K0=223.0, Tat0=0.85, Tlo0=0.0068,
                alpha=1.45)


# ------------------------------------------------------------ fisheries
def vpa_cohort_ref(Cc, M, fT, fA, lq, Iobs):
    T, A = Cc.shape
    N = np.zeros((T, A))
    for t in range(T - 1, -1, -1):
        for a in range(A - 1, -1, -1):
            if t == T - 1 or a == A - 1:
                F = np.exp(fT[a]) if t == T - 1 else np.exp(fA[t])
                Z = F + M
                N[t, a] = Cc[t, a] * Z / (F * (1 - np.exp(-Z)))
            else:
                N[t, a] = N[t + 1, a + 1] * np.exp(M) + Cc[t, a] * np.exp(M / 2)
    return float(np.sum((np.log(Iobs) - lq[None, :] - np.log(N)) ** 2))


def _vpa_inputs(rng, T, A):
    M = 0.2
    F = 0.3 * np.exp(0.2 * _normal(rng, T, A))
    N = np.zeros((T, A))
    N[0] = 1000.0 * np.exp(-0.5 * np.arange(A))
    N[:, 0] = 1000.0 * np.exp(0.3 * _normal(rng, T))
    for t in range(1, T):
        N[t, 1:] = N[t - 1, :-1] * np.exp(-F[t - 1, :-1] - M)
    Z = F + M
    Cc = F / Z * N * (1 - np.exp(-Z))
    q = np.linspace(0.001, 0.003, A)
    return dict(Cc=Cc, M=M, fT=np.log(F[-1]), fA=np.log(F[:, -1]), lq=np.log(q),
                Iobs=q * N * np.exp(0.1 * _normal(rng, T, A)))


# ------------------------------------------------------------ nuclear physics
def bateman_chain_ref(ln0, ll, par, br, dt, det, Aobs):
    T = Aobs.shape[0]
    lam = np.exp(ll)
    N = np.exp(ln0)
    tot = 0.0
    for t in range(T):
        if t >= 1:
            feed = np.array([br[i] * lam[par[i]] * N[par[i]] if par[i] >= 0 else 0.0
                             for i in range(len(N))])
            N = N * (1 - dt * lam) + dt * feed
        tot += np.sum((np.log(lam[det] * N[det]) - np.log(Aobs[t])) ** 2)
    return float(tot)


def _bateman_inputs(rng, I, T, D):
    par = np.array([-1, 0, 0, 1, -1])[:I]
    br = np.array([1.0, 0.6, 0.4, 1.0, 1.0])[:I]
    ll = np.log([0.3, 0.2, 0.15, 0.1, 0.05])[:I]
    ln0 = np.log([100.0, 1.0, 1.0, 1.0, 50.0])[:I]
    det = np.array([1, 3, 4])[:D]
    A = np.exp(ll[det] + ln0[det])[None, :] * np.exp(0.3 * _normal(rng, T, D))
    return dict(ln0=ln0 + 0.1 * _normal(rng, I), ll=ll + 0.1 * _normal(rng, I), par=par, br=br,
                dt=0.5, det=det, Aobs=A)


# ------------------------------------------------------------ particle physics
def breit_wigner_ref(x, g, m0, lgam, b, lns, lnb):
    gam = np.exp(lgam)
    bw = lambda m: 1 / ((m - m0) ** 2 + gam ** 2 / 4)   # noqa: E731
    Is = np.sum(0.5 * (bw(g[1:]) + bw(g[:-1])) * np.diff(g))
    Ib = np.sum(0.5 * (np.exp(-b * g[1:]) + np.exp(-b * g[:-1])) * np.diff(g))
    dens = np.exp(lns) * bw(x) / Is + np.exp(lnb) * np.exp(-b * x) / Ib
    return float(np.exp(lns) + np.exp(lnb) - np.sum(np.log(dens)))


def _bw_inputs(rng, N, G):
    lo, hi = 80.0, 100.0
    sig = 91.0 + 2.5 * np.tan(np.pi * (rng.uniform(size=N // 2) - 0.5)) * 0.3
    sig = np.clip(sig, lo + 0.5, hi - 0.5)
    bkg = lo + rng.exponential(8.0, N - N // 2) % (hi - lo)
    return dict(x=np.r_[sig, bkg], g=np.linspace(lo, hi, G), m0=90.5, lgam=np.log(2.0),
                b=0.08, lns=np.log(N / 2), lnb=np.log(N / 2))


# ------------------------------------------------------------ networking
def tcp_fluid_ref(rtt, W0, cap, a, lb, qth, s, qmax, kq):
    T = len(cap)
    F = len(rtt)
    W = np.zeros((T, F))
    q = np.zeros(T)
    p = np.zeros(T)
    for t in range(T):
        if t == 0:
            W[t] = W0
        else:
            mark = p[t - 3] if t >= 3 else 0.0
            W[t] = np.maximum(W[t - 1] + a / rtt - _sig(lb) * W[t - 1] * mark, 1.0)
            q[t] = min(max(q[t - 1] + np.sum(W[t - 1] / rtt) - cap[t - 1], 0.0), qmax)
        p[t] = _sig((q[t] - qth) / s)
    x = W / (rtt[None, :] + q[:, None] / cap[:, None])
    return float(-np.sum(np.log(x)) + kq * np.sum(q))


def _tcp_inputs(rng, F, T):
    return dict(rtt=np.array([2.0, 3.0, 4.0, 2.5])[:F], W0=rng.uniform(8.0, 12.0, F),
                cap=rng.uniform(8.0, 10.0, T), a=1.0, lb=0.0, qth=8.0, s=2.0, qmax=30.0,
                kq=0.05)


# ------------------------------------------------------------ demand forecasting
def croston_sba_ref(y, la, lb, z0, p0):
    al, be = _sig(la), _sig(lb)
    z, p, q = z0, p0, 1.0
    f = np.zeros(len(y))
    for t in range(len(y)):
        if y[t] > 0.5:
            z = z + al * (y[t] - z)
            p = p + be * (q - p)
            q = 1.0
        else:
            q = q + 1.0
        f[t] = (1 - be / 2) * z / p
    return float(np.sum((y[1:] - f[:-1]) ** 2) / len(y))


def _croston_inputs(rng, T):
    occ = rng.uniform(size=T) < 0.35
    occ[0] = True
    return dict(y=np.where(occ, rng.integers(1, 10, T), 0).astype(float), la=-1.5, lb=-1.0,
                z0=4.0, p0=3.0)


# ------------------------------------------------------------ marketing
def mmm_adstock_ref(X, y, ld, ls, lk, bt, b0, tr, g, season, lsig):
    T, K = X.shape
    lam = _sig(ld)
    ad = np.zeros((T, K))
    for t in range(T):
        ad[t] = X[t] + (lam * ad[t - 1] if t >= 1 else 0.0)
    s, kap = np.exp(ls), np.exp(lk)
    h = ad ** s / (ad ** s + kap ** s)
    pred = b0 + g * tr + season[np.arange(T) % 7] + h @ bt
    return float(np.sum((y - pred) ** 2) / (2 * np.exp(2 * lsig)) + T * lsig
                 + 0.5 * np.sum(season ** 2))


def _mmm_inputs(rng, T, K):
    X = rng.uniform(0.1, 1.0, (T, K))
    tr = np.linspace(0.0, 1.0, T)
    return dict(X=X, y=2.0 + 0.5 * tr + rng.uniform(0.0, 1.5, T), ld=np.zeros(K),
                ls=np.log(1.5) + 0.1 * _normal(rng, K), lk=np.log(0.8) + 0.1 * _normal(rng, K),
                bt=rng.uniform(0.2, 0.8, K), b0=1.5, tr=tr, g=0.3, season=0.1 * _normal(rng, 7),
                lsig=np.log(0.4))


# ------------------------------------------------------------ earthquake engineering
def response_spectrum_ref(ag, s, Tp, zeta, dt, tgt):
    T = len(ag)
    om = 2 * np.pi / Tp
    c = 2 * zeta * om
    kh = om ** 2 + 2 * c / dt + 4 / dt ** 2
    u = np.zeros(len(Tp))
    v = np.zeros(len(Tp))
    a = -s * ag[0] * np.ones(len(Tp))
    peak = np.abs(u)
    for t in range(1, T):
        un = (-s * ag[t] + 4 / dt ** 2 * u + 4 / dt * v + a + c * (2 / dt * u + v)) / kh
        vn = 2 / dt * (un - u) - v
        an = 4 / dt ** 2 * (un - u) - 4 / dt * v - a
        u, v, a = un, vn, an
        peak = np.maximum(peak, np.abs(u))
    return float(np.sum((np.log(om ** 2 * peak) - np.log(tgt)) ** 2))


def _spectrum_inputs(rng, T, K):
    t = np.arange(T) * 0.02
    ag = np.sin(2 * np.pi * 3.0 * t) * np.exp(-((t - 0.3) / 0.2) ** 2) + 0.3 * _normal(rng, T)
    return dict(ag=ag, s=1.0, Tp=np.array([0.1, 0.2, 0.4, 0.8, 1.0])[:K], zeta=0.05, dt=0.02,
                tgt=rng.uniform(0.5, 3.0, K))


# ------------------------------------------------------------ air quality
def gaussian_plume_ref(xs, ys, hs, lq, xr, yr, zr, U, ay, by, az, bz, bg, obs):
    cn = np.zeros(len(xr))
    for r in range(len(xr)):
        for s in range(len(xs)):
            dx = xr[r] - xs[s]
            if dx <= 0:
                continue
            sy, sz = ay * dx ** by, az * dx ** bz
            cn[r] += (np.exp(lq[s]) / (2 * np.pi * U * sy * sz)
                      * np.exp(-(yr[r] - ys[s]) ** 2 / (2 * sy ** 2))
                      * (np.exp(-(zr[r] - hs[s]) ** 2 / (2 * sz ** 2))
                         + np.exp(-(zr[r] + hs[s]) ** 2 / (2 * sz ** 2))))
    return float(np.sum((np.log(cn + bg) - np.log(obs)) ** 2))


def _plume_inputs(rng, S, R):
    return dict(xs=np.array([0.0, 2.0, 4.5])[:S], ys=np.array([0.0, 1.0, -0.5])[:S],
                hs=rng.uniform(0.3, 0.8, S), lq=rng.uniform(0.0, 1.0, S),
                xr=rng.uniform(1.0, 9.0, R), yr=rng.uniform(-2.0, 2.0, R), zr=np.full(R, 0.02),
                U=3.0, ay=0.3, by=0.9, az=0.2, bz=0.8, bg=0.01, obs=rng.uniform(0.02, 0.2, R))


# ------------------------------------------------------------ machine translation
def expected_bleu_ref(Z, r):
    n = Z.shape[0]
    m = len(r)
    P = _softmax(Z, axis=1)
    p1 = 0.0
    for j in range(m):
        c1 = np.sum(r == r[j])
        p1 += min(P[:, r[j]].sum(), c1) / c1
    p1 /= n
    p2 = 0.0
    for j in range(m - 1):
        m2 = np.sum(P[:-1, r[j]] * P[1:, r[j + 1]])
        c2 = sum(1 for k in range(m - 1) if r[k] == r[j] and r[k + 1] == r[j + 1])
        p2 += min(m2, c2) / c2
    p2 /= n - 1
    bp = min(1.0, np.exp(1 - m / n))
    return float(-(np.log(bp) + 0.5 * np.log(p1) + 0.5 * np.log(p2)))


def _bleu_inputs(rng, n, V, m):
    r = np.array([0, 1, 2, 0, 1, 3, 4, 2])[:m]
    Z = 1.5 * _normal(rng, n, V)
    Z[np.arange(n), r[:n]] += 2.0
    return dict(Z=Z, r=r)


# ------------------------------------------------------------ point clouds
def pointnet_ref(X, cl, y, W1, b1, W2, b2, W3, b3):
    A1 = np.maximum(X @ W1 + b1, 0.0)
    A2 = np.maximum(A1 @ W2 + b2, 0.0)
    C = len(y)
    g = np.stack([A2[cl == c].max(axis=0) for c in range(C)])
    z = g @ W3 + b3
    return float(np.sum(_lse(z, axis=1) - z[np.arange(C), y]) / C)


def _pointnet_inputs(rng, N, C, H1, H2, Q):
    cl = rng.permutation(np.r_[np.arange(C), rng.integers(0, C, N - C)])
    return dict(X=_normal(rng, N, 3), cl=cl, y=rng.integers(0, Q, C), W1=_normal(rng, 3, H1),
                b1=0.1 * _normal(rng, H1), W2=_normal(rng, H1, H2) / np.sqrt(H1),
                b2=0.1 + 0.1 * _normal(rng, H2), W3=_normal(rng, H2, Q), b3=0.1 * _normal(rng, Q))


# ------------------------------------------------------------ survey statistics
def raking_ref(ld, ga, gr, ta, tr, y):
    w = np.exp(ld)
    for _ in range(4):
        sa = np.bincount(ga, weights=w, minlength=len(ta))
        w = w * ta[ga] / sa[ga]
        sr = np.bincount(gr, weights=w, minlength=len(tr))
        w = w * tr[gr] / sr[gr]
    return float(np.sum(w * y) / np.sum(w))


def _raking_inputs(rng, N, A, R):
    ga = rng.permutation(np.r_[np.arange(A), rng.integers(0, A, N - A)])
    gr = rng.permutation(np.r_[np.arange(R), rng.integers(0, R, N - R)])
    ta = rng.uniform(50.0, 150.0, A)
    tr = rng.uniform(0.5, 1.5, R)
    return dict(ld=rng.uniform(1.0, 2.0, N), ga=ga, gr=gr, ta=ta, tr=tr * ta.sum() / tr.sum(),
                y=rng.uniform(0.0, 10.0, N))


# ------------------------------------------------------------ econometrics
def _event_dummies(g, T):
    U = len(g)
    D = np.zeros((U, T, 7))
    for u in range(U):
        for t in range(T):
            k = t - g[u] + 3
            if 0 <= k < 7 and k != 2:
                D[u, t, k] = 1.0
    return D


def event_study_ref(Y, g, al, gm, beta, lam):
    D = _event_dummies(g, Y.shape[1])
    res = Y - al[:, None] - gm[None, :] - D @ beta
    return float(np.sum(res ** 2) + lam * (np.sum(al ** 2) + np.sum(gm ** 2) + np.sum(beta ** 2)))


def _event_inputs(rng, U, T):
    g = np.where(rng.uniform(size=U) < 0.3, 1000000, rng.integers(2, T - 1, U))
    g[0], g[1] = 3, 1000000
    D = _event_dummies(g, T)
    Y = _normal(rng, U)[:, None] + 0.1 * np.arange(T)[None, :] + D @ np.r_[0, 0, 0, 1, 1.5, 2, 2]
    return dict(Y=Y + 0.2 * _normal(rng, U, T), g=g, al=0.1 * _normal(rng, U),
                gm=0.1 * _normal(rng, T), beta=0.1 * _normal(rng, 7), lam=0.01)


# ------------------------------------------------------------ education
def bkt_ref(y, sk, l0, lt, lg, lsl):
    S, T = y.shape
    L0, Tr, G, Sl = _sig(l0), _sig(lt), _sig(lg), _sig(lsl)
    L = np.tile(L0, (S, 1))
    tot = 0.0
    for t in range(T):
        for s in range(S):
            k = sk[s, t]
            pc = L[s, k] * (1 - Sl[k]) + (1 - L[s, k]) * G[k]
            tot += y[s, t] * np.log(pc) + (1 - y[s, t]) * np.log(1 - pc)
            if y[s, t] == 1:
                po = L[s, k] * (1 - Sl[k]) / pc
            else:
                po = L[s, k] * Sl[k] / (1 - pc)
            L[s, k] = po + (1 - po) * Tr[k]
    return float(-tot)


def _bkt_inputs(rng, S, T, K):
    return dict(y=(rng.uniform(size=(S, T)) < np.linspace(0.4, 0.8, T)).astype(float),
                sk=rng.integers(0, K, (S, T)), l0=-0.5 + 0.2 * _normal(rng, K),
                lt=-1.0 + 0.2 * _normal(rng, K), lg=-1.5 + 0.2 * _normal(rng, K),
                lsl=-2.0 + 0.2 * _normal(rng, K))


# ------------------------------------------------------------ radar
def cfar_radar_ref(x, w, la, tau, tg):
    n, k = len(x), len(w)
    m = (n - k) // 2 + 1
    y = np.array([np.dot(w, x[2 * i:2 * i + k]) for i in range(m)])
    P = y ** 2
    d = np.zeros(m)
    for i in range(m):
        ref = [j for j in range(m) if 2 <= abs(i - j) <= 4]
        d[i] = _sig((P[i] - np.exp(la) * np.mean(P[ref])) / tau)
    return float(-np.sum(tg * np.log(d) + (1 - tg) * np.log(1 - d)))


def _cfar_inputs(rng, n, k):
    m = (n - k) // 2 + 1
    w = np.array([1.0, 1.0, 1.0, -1.0, 1.0])[:k]          # a Barker code of five chips
    tg = np.zeros(m)
    tg[[4, 10]] = 1.0
    x = 0.4 * _normal(rng, n)
    for i in (4, 10):
        x[2 * i:2 * i + k] += 1.2 * w
    return dict(x=x, w=w + 0.05 * _normal(rng, k), la=np.log(3.0), tau=2.0, tg=tg)


# ------------------------------------------------------------ energy storage
def battery_arb_ref(pr, sval, eta, cdeg):
    T, S = len(pr), len(sval)
    V = sval.copy()
    for t in range(T - 1, -1, -1):
        rw = np.array([eta * pr[t] - cdeg, 0.0, -pr[t] / eta - cdeg])
        new = np.full(S, -np.inf)
        for s in range(S):
            for a in range(3):
                if 0 <= s + a - 1 < S:
                    new[s] = max(new[s], rw[a] + V[s + a - 1])
        V = new
    return float(V[(S - 1) // 2])


def battery_path(pr, sval, eta, cdeg):
    """The net discharge (eta on a discharge, -1/eta on a charge) of each step of the
    optimal schedule from the middle of the grid: the gradient in the prices."""
    T, S = len(pr), len(sval)
    Vs = [sval.copy()]
    for t in range(T - 1, -1, -1):
        rw = np.array([eta * pr[t] - cdeg, 0.0, -pr[t] / eta - cdeg])
        V = Vs[0]
        Vs.insert(0, np.array([max(rw[a] + V[s + a - 1] for a in range(3) if 0 <= s + a - 1 < S)
                               for s in range(S)]))
    s = (S - 1) // 2
    out = np.zeros(T)
    for t in range(T):
        rw = np.array([eta * pr[t] - cdeg, 0.0, -pr[t] / eta - cdeg])
        cands = [(rw[a] + Vs[t + 1][s + a - 1], a) for a in range(3) if 0 <= s + a - 1 < S]
        a = max(cands)[1]
        out[t] = eta if a == 0 else (-1 / eta if a == 2 else 0.0)
        s = s + a - 1
    return out


def _battery_inputs(rng, T, S):
    t = np.arange(T)
    return dict(pr=30.0 + 15.0 * np.sin(2 * np.pi * t / 6) + 3.0 * _normal(rng, T),
                sval=np.sort(rng.uniform(0.0, 60.0, S)) + 25.0 * np.arange(S), eta=0.92, cdeg=2.0)


# ------------------------------------------------------------ music information retrieval
def beat_track_ref(O, P, al):
    T = len(O)
    pen = -al * np.log(np.arange(2, 6) / P) ** 2
    C = np.zeros(T)
    for t in range(T):
        C[t] = O[t]
        if t >= 2:
            C[t] += max(pen[c] + C[t - 2 - c] for c in range(4) if c + 2 <= t)
    return float(np.max(C[T - 4:]))


def beat_path(O, P, al):
    """The frames of the best beat sequence (1 on a beat): the gradient in O."""
    T = len(O)
    pen = -al * np.log(np.arange(2, 6) / P) ** 2
    C = np.zeros(T)
    back = np.full(T, -1)
    for t in range(T):
        C[t] = O[t]
        if t >= 2:
            best = max((pen[c] + C[t - 2 - c], t - 2 - c) for c in range(4) if c + 2 <= t)
            C[t] += best[0]
            back[t] = best[1]
    t = T - 4 + int(np.argmax(C[T - 4:]))
    out = np.zeros(T)
    while t >= 0:
        out[t] = 1.0
        t = back[t]
    return out


def _beat_inputs(rng, T):
    O = 0.3 * rng.uniform(size=T)
    beats = np.cumsum(rng.integers(2, 5, T))         # onsets 2 to 4 frames apart
    beats = beats[beats < T]
    O[beats] += 1.0 + 0.2 * rng.uniform(size=len(beats))
    return dict(O=O, P=3.2, al=2.0)


# ------------------------------------------------------------ emission tomography
def mlem_pet_ref(Asys, y, r, x0, xt):
    sens = Asys.sum(axis=0)
    x = x0.copy()
    for _ in range(4):
        x = x / sens * (Asys.T @ (y / (Asys @ x + r)))
    return float(np.sum((x - xt) ** 2))


def _mlem_inputs(rng, m, n):
    Asys = rng.uniform(0.0, 1.0, (m, n)) * (rng.uniform(size=(m, n)) < 0.7) + 0.05
    xt = rng.uniform(1.0, 5.0, n)
    r = np.full(m, 0.3)
    return dict(Asys=Asys, y=rng.poisson(Asys @ xt + r).astype(float) + 0.5, r=r,
                x0=np.full(n, 2.0) + 0.1 * rng.uniform(size=n), xt=xt)


# ------------------------------------------------------------ spatial epidemiology
def scan_stat_ref(c, le, wl, tau):
    n, L = len(c), len(wl)
    e = np.exp(le)
    Ct, Et = c.sum(), e.sum()
    vals = []
    for a in range(n):
        for l in range(L):
            if a + l >= n:
                continue
            C, E = c[a:a + l + 1].sum(), e[a:a + l + 1].sum()
            llr = (C * np.log(C / E) + (Ct - C) * np.log((Ct - C) / (Et - E)) - Ct * np.log(Ct / Et)
                   if C > E else 0.0)
            vals.append(llr / tau + wl[l])
    return float(tau * _lse(vals))


def _scan_inputs(rng, n, L):
    e = rng.uniform(2.0, 6.0, n)
    c = rng.poisson(e).astype(float)
    c[4:7] += 6.0
    return dict(c=c, le=np.log(e), wl=-0.2 * np.arange(L), tau=0.5)


# ------------------------------------------------------------ political science
def nominate_ref(x, yl, nl, lb, lw, leg, rc, yea):
    w2 = np.exp(2 * lw)
    dy = np.sum(w2 * (x[leg] - yl[rc]) ** 2, axis=1)
    dn = np.sum(w2 * (x[leg] - nl[rc]) ** 2, axis=1)
    u = np.exp(lb) * (np.exp(-0.5 * dy) - np.exp(-0.5 * dn))
    return float(np.sum(yea * _softplus(-u) + (1 - yea) * _softplus(u)) + 0.5 * np.sum(x ** 2))


def _nominate_inputs(rng, I, J, V):
    x = 0.7 * _normal(rng, I, 2)
    yl, nl = 0.7 * _normal(rng, J, 2), 0.7 * _normal(rng, J, 2)
    leg, rc = rng.integers(0, I, V), rng.integers(0, J, V)
    u = 2.0 * (np.exp(-0.5 * np.sum((x[leg] - yl[rc]) ** 2, 1))
               - np.exp(-0.5 * np.sum((x[leg] - nl[rc]) ** 2, 1)))
    return dict(x=x, yl=yl, nl=nl, lb=np.log(2.0), lw=np.zeros(2), leg=leg, rc=rc,
                yea=(rng.uniform(size=V) < _sig(u)).astype(float))


PROGRAMS = {
    # ------------------------------------------------------------ quantum computing
    "vqe_ising": dict(src="""
# a hardware-efficient variational circuit on four qubits: each layer turns every
# qubit by RY(th[l, q]) (one four-factor contraction), then a chain of CNOTs (a flip
# 1 - b of the target's index where the control is 1); the energy of the open
# transverse-field Ising chain -J sum Z_q Z_q+1 - hx sum X_q in the final state
def vqe_ising(th: f64[L, 4], J: f64, hx: f64) -> f64:
    co[l, q] = cos(0.5 * th[l, q])
    sn[l, q] = sin(0.5 * th[l, q])
    R[l, q, a: 2, p: 2] = [a == p] * co[l, q] + ([a == 1 and p == 0] - [a == 0 and p == 1]) * sn[l, q]
    pv[l: L, a: 2, b: 2, c: 2, d: 2] = [l == 0] * [a == 0 and b == 0 and c == 0 and d == 0] + [l >= 1] * s3[l - 1, a, b, c, d]
    r[l: L, a: 2, b: 2, c: 2, d: 2] = sum[p, q, u, v](R[l, 0, a, p] * R[l, 1, b, q] * R[l, 2, c, u] * R[l, 3, d, v] * pv[l, p, q, u, v])
    s1[l: L, a: 2, b: 2, c: 2, d: 2] = [a == 0] * r[l, a, b, c, d] + [a == 1] * r[l, a, 1 - b, c, d]
    s2[l: L, a: 2, b: 2, c: 2, d: 2] = [b == 0] * s1[l, a, b, c, d] + [b == 1] * s1[l, a, b, 1 - c, d]
    s3[l: L, a: 2, b: 2, c: 2, d: 2] = [c == 0] * s2[l, a, b, c, d] + [c == 1] * s2[l, a, b, c, 1 - d]
    ps[a: 2, b: 2, c: 2, d: 2] = s3[L - 1, a, b, c, d]
    zz = sum[a, b, c, d](ps[a, b, c, d] ** 2 * ([a == b] - [a != b] + [b == c] - [b != c] + [c == d] - [c != d]))
    xx = sum[a, b, c, d](ps[a, b, c, d] * (ps[1 - a, b, c, d] + ps[a, 1 - b, c, d] + ps[a, b, 1 - c, d] + ps[a, b, c, 1 - d]))
    return -J * zz - hx * xx
""", sizes=dict(L=3), make=lambda rng, L: dict(th=rng.uniform(-np.pi, np.pi, (L, 4)), J=1.0, hx=0.7),
        ref=vqe_ising_ref, note="a five-statement group over layers; flips 1 - b of an index"),

    # ------------------------------------------------------------ coding theory
    "ldpc_nbp": dict(src="""
# neural belief propagation on an LDPC code whose checks have three edges each (H[c, k]
# is the variable on edge k of check c): variable-to-check messages from the channel
# and the other checks' messages (weighted per iteration), check-to-variable messages
# by the tanh rule over the two other edges; the posterior's cross-entropy with the bits
def ldpc_nbp(llr: f64[n], H: i64[m, 3], wc: f64[T], wv: f64[T], b: f64[n]) -> f64:
    v[t: T, c: m, k: 3] = wc[t] * llr[H[c, k]] + [t >= 1] * wv[t] * (tot[t - 1, H[c, k]] - u[t - 1, c, k])
    th[t: T, c: m, k: 3] = tanh(0.5 * v[t, c, k])
    pr[t: T, c: m, k: 3] = [k == 0] * th[t, c, 1] * th[t, c, 2] + [k == 1] * th[t, c, 0] * th[t, c, 2] + [k == 2] * th[t, c, 0] * th[t, c, 1]
    u[t: T, c: m, k: 3] = log((1.0 + pr[t, c, k]) / (1.0 - pr[t, c, k]))
    tot[t: T, j: n] = sum[c, k]([H[c, k] == j] * u[t, c, k])
    post[j] = llr[j] + tot[T - 1, j]
    return sum[j](softplus((2.0 * b[j] - 1.0) * post[j]))
""", sizes=dict(n=6, T=4), make=_ldpc_inputs,
        ref=ldpc_nbp_ref, note="edge messages gathered and scattered through a check table"),

    # ------------------------------------------------------------ communications
    "qam_demap": dict(src="""
# the constellation scaled to unit mean energy
def unit_energy(C: f64[M, 2]) -> f64[M, 2]:
    e = sum[s, d](C[s, d] ** 2) / M
    Cn[s, d] = C[s, d] / sqrt(e)
    return Cn

# geometric shaping: symbols tx sent through Gaussian noise, a max-log demapper whose
# bit LLRs are differences of minima over the symbols carrying a 1 and a 0 in that bit,
# and the binary cross-entropy with the bits sent
def qam_demap(C: f64[M, 2], bits: bool[M, B], tx: i64[R], z: f64[R, 2], sig: f64) -> f64:
    Cn = unit_energy(C)
    y[r, d] = Cn[tx[r], d] + sig * z[r, d]
    D[r, s] = sum[d]((y[r, d] - Cn[s, d]) ** 2)
    L[r: R, b: B] = (min[s | bits[s, b]](D[r, s]) - min[s | not bits[s, b]](D[r, s])) / (2.0 * sig ** 2)
    return sum[r, b]([bits[tx[r], b]] * softplus(L[r, b]) + [not bits[tx[r], b]] * softplus(-L[r, b])) / R
""", sizes=dict(M=8, B=3, R=10), make=_qam_inputs,
        ref=qam_demap_ref, note="minima filtered by a relation; a relation gathered at a label"),

    # ------------------------------------------------------------ elections
    "electoral_dp": dict(src="""
# the probability of winning a majority of electoral votes: state s is won with
# probability Phi((mu[s] + h) / sd) and carries e[s] votes; P[s, v] is the probability
# of v votes from the first s + 1 states, its step a shift by the label e[s]
def electoral_dp(mu: f64[S], h: f64, lsd: f64, e: i64[S], maj: bool[V]) -> f64:
    p[s] = 0.5 * (1.0 + erf((mu[s] + h) / (1.4142135623730951 * exp(lsd))))
    P[s: S, v: V] = [s == 0] * ([v == 0] * (1.0 - p[0]) + [v == e[0]] * p[0]) + [s >= 1] * ((1.0 - p[s]) * P[s - 1, v] + p[s] * sum[u: V]([u == v - e[s]] * P[s - 1, u]))
    return log(sum[v]([maj[v]] * P[S - 1, v]))
""", sizes=dict(S=6), make=_electoral_inputs,
        ref=electoral_dp_ref, note="a recurrence whose shift is label arithmetic in a comparison"),

    # ------------------------------------------------------------ structural econometrics
    "rust_bus": dict(src="""
# Rust's bus-engine replacement: keep (a = 0, cost th1 * mileage) or replace (a = 1,
# cost RC, back to zero); mileage grows by j = 0, 1, 2 bins with probabilities pi,
# clamped at the last bin; twelve steps of value iteration with type-1 extreme value
# shocks (a logsumexp over the two actions), then the likelihood of the observed
# choices dobs at states xo and of the mileage increments inc
def rust_bus(th1: f64, lrc: f64, ap: f64[3], beta: f64, mil: f64[X], xo: i64[N], dobs: i64[N], inc: i64[N]) -> f64:
    pi[j] = exp(ap[j] - logsumexp[i](ap[i]))
    v0[k: 12, x: X] = -th1 * mil[x] + [k >= 1] * beta * sum[j: 3](pi[j] * ([x + j < X] * W[k - 1, x + j] + [x + j >= X] * W[k - 1, X - 1]))
    v1[k: 12, x: X] = -exp(lrc) + [k >= 1] * beta * sum[j: 3]([j < X] * pi[j] * W[k - 1, j])
    W[k: 12, x: X] = logsumexp[a: 2]([a == 0] * v0[k, x] + [a == 1] * v1[k, x])
    ll = sum[i]([dobs[i] == 0] * (v0[11, xo[i]] - W[11, xo[i]]) + [dobs[i] == 1] * (v1[11, xo[i]] - W[11, xo[i]]) + log(pi[inc[i]]))
    return -ll / N
""", sizes=dict(X=8, N=20), make=_rust_inputs,
        ref=rust_bus_ref, note="value iteration with a clamped shift and a logsumexp over actions"),

    # ------------------------------------------------------------ sports
    "dixon_coles": dict(src="""
# the scoring rates of home and away sides
def rates(att: f64[Tm], dfn: f64[Tm], hm: i64[G], aw: i64[G], home: f64) -> (f64[G], f64[G]):
    lam[g] = exp(home + att[hm[g]] + dfn[aw[g]])
    mu[g] = exp(att[aw[g]] + dfn[hm[g]])
    return lam, mu

# the Dixon-Coles model: independent Poisson goals corrected at 0-0, 0-1, 1-0 and 1-1
# by rho, older games down-weighted by exp(-xi age); the goals gh, ga are labels, the
# Poisson term counts them (log lam added once per goal); a sum-to-zero constraint on att
def dixon_coles(att: f64[Tm], dfn: f64[Tm], home: f64, rho: f64, hm: i64[G], aw: i64[G], gh: i64[G], ga: i64[G], age: f64[G], xi: f64) -> f64:
    lam, mu = rates(att, dfn, hm, aw, home)
    tau[g] = 1.0 - [gh[g] == 0 and ga[g] == 0] * lam[g] * mu[g] * rho + [gh[g] == 0 and ga[g] == 1] * lam[g] * rho + [gh[g] == 1 and ga[g] == 0] * mu[g] * rho - [gh[g] == 1 and ga[g] == 1] * rho
    ll[g] = log(tau[g]) + sum[k: 12]([k < gh[g]]) * log(lam[g]) - lam[g] + sum[k: 12]([k < ga[g]]) * log(mu[g]) - mu[g]
    return -sum[g](exp(-xi * age[g]) * ll[g]) + sum[k](att[k]) ** 2
""", sizes=dict(Tm=5, G=16), make=_dixon_inputs,
        ref=dixon_coles_ref, note="a helper returning two tensors; labels compared with constants"),

    # ------------------------------------------------------------ psychometrics
    "dina": dict(src="""
# the DINA model: item j needs the skills Q[j, .]; a student in latent class c (skill
# profile A[c, .]) answers right with probability 1 - slip if the profile has every
# skill the item needs, else with probability guess; the marginal likelihood over classes
def dina(Y: f64[N, J], Q: bool[J, K], A: bool[C, K], ls: f64[J], lg: f64[J], pc: f64[C]) -> f64:
    miss[c, j] = sum[k]([Q[j, k] and not A[c, k]])
    p[c, j] = [miss[c, j] < 0.5] * (1.0 - sigmoid(ls[j])) + [miss[c, j] > 0.5] * sigmoid(lg[j])
    lp[i, c] = pc[c] - logsumexp[q](pc[q]) + sum[j](Y[i, j] * log(p[c, j]) + (1.0 - Y[i, j]) * log(1.0 - p[c, j]))
    return -sum[i](logsumexp[c](lp[i, c])) / N
""", sizes=dict(N=12, J=6, K=2), make=_dina_inputs,
        ref=dina_ref, note="relations in a count; a value bracket on the count"),

    # ------------------------------------------------------------ cognitive modelling
    "ddm_wiener": dict(src="""
# the drift-diffusion model: the density of a response at the lower boundary after
# time t (Navarro and Fuss' large-time series of twelve terms), the upper boundary's by
# -v and 1 - w; boundary separation a, relative start w, non-decision time t0
def ddm_wiener(rt: f64[N], resp: i64[N], v: f64, la: f64, lw: f64, lt0: f64) -> f64:
    kk[k: 12] = sum[j: 12]([j <= k])
    a = exp(la)
    w = sigmoid(lw)
    sv[i] = [resp[i] == 0] - [resp[i] == 1]
    ww[i] = [resp[i] == 0] * w + [resp[i] == 1] * (1.0 - w)
    tt[i] = rt[i] - exp(lt0)
    ser[i] = sum[k](kk[k] * exp(-kk[k] ** 2 * 9.869604401089358 * tt[i] / (2.0 * a ** 2)) * sin(3.141592653589793 * kk[k] * ww[i]))
    lf[i] = -2.0 * la - sv[i] * v * a * ww[i] - v ** 2 * tt[i] / 2.0 + log(3.141592653589793 * ser[i])
    return -sum[i](lf[i])
""", sizes=dict(N=10), make=lambda rng, N: _ddm_inputs(rng, N),
        ref=ddm_wiener_ref, note="the series' integers counted by a bracket; a series in a log"),

    # ------------------------------------------------------------ materials
    "eam_fs": dict(src="""
# a Finnis-Sinclair potential: a pair term (r - c)^2 (1 - 1.5 r + 0.6 r^2) inside c with
# a strength for each pair of species, and a many-body term -A sqrt(rho), rho the sum of
# (r - rc)^2 over the neighbours inside rc
def eam_fs(X: f64[N, 3], sp: i64[N], eps: f64[S, S], Am: f64[S], rc: f64, c: f64) -> f64:
    r[i, j] = sqrt(sum[d]((X[i, d] - X[j, d]) ** 2))
    rho[i] = sum[j]([i != j] * [r[i, j] < rc] * (r[i, j] - rc) ** 2)
    pair[i, j] = [i != j] * [r[i, j] < c] * eps[sp[i], sp[j]] * (r[i, j] - c) ** 2 * (1.0 - 1.5 * r[i, j] + 0.6 * r[i, j] ** 2)
    return sum[i](0.5 * sum[j](pair[i, j]) - Am[sp[i]] * sqrt(rho[i]))
""", sizes=dict(N=6, S=2), make=_eam_inputs,
        ref=eam_fs_ref, note="a diagonal kept out by an index bracket; value cutoffs"),

    # ------------------------------------------------------------ chemical engineering
    "distill_column": dict(src="""
# the rectifying section of a column, stage by stage from the top (total condenser, the
# vapour leaving stage 0 has the distillate's composition xD): liquid in equilibrium by
# constant relative volatilities, the vapour from the stage below by the operating line
# with reflux ratio R; fitted to liquid samples xm of each stage
def distill_column(xD: f64[K], la: f64[K], lR: f64, xm: f64[S, K]) -> f64:
    al[k] = exp(la[k])
    Rr = exp(lR)
    y[s: S, k: K] = [s == 0] * xD[k] + [s >= 1] * (Rr / (Rr + 1.0) * x[s - 1, k] + xD[k] / (Rr + 1.0))
    x[s: S, k: K] = y[s, k] / al[k] / sum[j](y[s, j] / al[j])
    return sum[s, k]((x[s, k] - xm[s, k]) ** 2)
""", sizes=dict(S=6, K=3), make=_distill_inputs,
        ref=distill_column_ref, note="a normalisation over the free index inside each step"),

    # ------------------------------------------------------------ integrated assessment
    "dice_climate": dict(src="""
# utility of consumption per head (elasticity alpha), times population
def crra(C: f64[T], Lp: f64[T], alpha: f64) -> f64[T]:
    u[t] = Lp[t] * ((C[t] / Lp[t]) ** (1.0 - alpha) - 1.0) / (1.0 - alpha)
    return u

# a DICE-style model in five-year steps: Cobb-Douglas output with damages and an
# abatement cost in the control rate mu, emissions into a three-reservoir carbon cycle,
# forcing from atmospheric carbon, atmosphere and deep-ocean temperatures, capital from
# savings; the negative discounted welfare of the controls zm (abatement) and zs (savings)
def dice_climate(zm: f64[T], zs: f64[T], A: f64[T], Lp: f64[T], sg: f64[T], th1: f64[T], Rd: f64[T], phi: f64[3, 3], M0: f64[3], K0: f64, Tat0: f64, Tlo0: f64, alpha: f64) -> f64:
    mu[t] = sigmoid(zm[t])
    sv[t] = sigmoid(zs[t])
    Kc[t: T] = [t == 0] * K0 + [t >= 1] * (0.59049 * Kc[t - 1] + 5.0 * sv[t - 1] * Y[t - 1])
    Yg[t: T] = A[t] * Kc[t] ** 0.3 * Lp[t] ** 0.7
    Y[t: T] = Yg[t] * (1.0 - th1[t] * mu[t] ** 2.6) / (1.0 + 0.00236 * Tat[t] ** 2)
    E[t: T] = sg[t] * (1.0 - mu[t]) * Yg[t] + 0.5
    M[t: T, i: 3] = [t == 0] * M0[i] + [t >= 1] * (sum[j](phi[i, j] * M[t - 1, j]) + [i == 0] * 5.0 * E[t - 1] / 3.666)
    F[t: T] = 3.6813 * log(M[t, 0] / 588.0) / 0.6931471805599453 + 0.5
    Tat[t: T] = [t == 0] * Tat0 + [t >= 1] * (Tat[t - 1] + 0.1005 * (F[t - 1] - 1.18 * Tat[t - 1] - 0.088 * (Tat[t - 1] - Tlo[t - 1])))
    Tlo[t: T] = [t == 0] * Tlo0 + [t >= 1] * (Tlo[t - 1] + 0.025 * (Tat[t - 1] - Tlo[t - 1]))
    C[t] = (1.0 - sv[t]) * Y[t]
    u = crra(C, Lp, alpha)
    return -sum[t](Rd[t] * u[t])
""", sizes=dict(T=8), make=lambda rng, T: _dice_inputs(rng, T),
        ref=dice_climate_ref, note="an eight-statement group; parameter exponents; a helper"),

    # ------------------------------------------------------------ fisheries
    "vpa_cohort": dict(src="""
# virtual population analysis: numbers at age back-calculated from the catches by
# Pope's approximation N[t, a] = N[t + 1, a + 1] e^M + C[t, a] e^(M/2), a backward
# recurrence started from the catch equation at the last year (F = exp(fT[a])) and at
# the oldest age (F = exp(fA[t])); fitted to survey indices with catchabilities exp(lq)
def vpa_cohort(Cc: f64[T, A], M: f64, fT: f64[A], fA: f64[T], lq: f64[A], Iobs: f64[T, A]) -> f64:
    Ft[t: T, a: A] = [t + 1 == T] * exp(fT[a]) + [t + 1 < T] * exp(fA[t])
    term[t, a] = Cc[t, a] * (Ft[t, a] + M) / (Ft[t, a] * (1.0 - exp(-Ft[t, a] - M)))
    N[t: T, a: A] = [t + 1 == T or a + 1 == A] * term[t, a] + [t + 1 < T and a + 1 < A] * (N[t + 1, a + 1] * exp(M) + Cc[t, a] * exp(0.5 * M))
    return sum[t, a]((log(Iobs[t, a]) - lq[a] - log(N[t, a])) ** 2)
""", sizes=dict(T=6, A=5), make=_vpa_inputs,
        ref=vpa_cohort_ref, note="a backward recurrence along t reading a + 1"),

    # ------------------------------------------------------------ nuclear physics
    "bateman_chain": dict(src="""
# decay chains by Euler steps: nuclide i decays at rate lam[i] and is fed by its parent
# par[i] (-1 for a root) with branching ratio br[i]; the activities of the detected
# nuclides det fitted to measurements on a log scale
def bateman_chain(ln0: f64[I], ll: f64[I], par: i64[I], br: f64[I], dt: f64, det: i64[D], Aobs: f64[T, D]) -> f64:
    lam[i] = exp(ll[i])
    N[t: T, i: I] = [t == 0] * exp(ln0[i]) + [t >= 1] * (N[t - 1, i] * (1.0 - dt * lam[i]) + [par[i] >= 0] * dt * br[i] * lam[par[i]] * N[t - 1, par[i]])
    act[t, d] = lam[det[d]] * N[t, det[d]]
    return sum[t, d]((log(act[t, d]) - log(Aobs[t, d])) ** 2)
""", sizes=dict(I=5, T=12, D=3), make=_bateman_inputs,
        ref=bateman_chain_ref, note="a gather inside a recurrence behind a bracket excluding -1"),

    # ------------------------------------------------------------ particle physics
    "breit_wigner": dict(src="""
# the trapezoid rule on a grid
def trapz(f: f64[G], g: f64[G]) -> f64:
    return sum[k]([k >= 1] * 0.5 * (f[k] + f[k - 1]) * (g[k] - g[k - 1]))

# an extended unbinned likelihood: a Breit-Wigner peak (mass m0, width gam) over an
# exponential background, each shape normalised on the fit window by the trapezoid
# rule, with yields exp(lns) and exp(lnb)
def breit_wigner(x: f64[N], g: f64[G], m0: f64, lgam: f64, b: f64, lns: f64, lnb: f64) -> f64:
    gam = exp(lgam)
    bwg[k] = 1.0 / ((g[k] - m0) ** 2 + gam ** 2 / 4.0)
    exg[k] = exp(-b * g[k])
    Is = trapz(bwg, g)
    Ib = trapz(exg, g)
    dens[i] = exp(lns) / Is / ((x[i] - m0) ** 2 + gam ** 2 / 4.0) + exp(lnb) / Ib * exp(-b * x[i])
    return exp(lns) + exp(lnb) - sum[i](log(dens[i]))
""", sizes=dict(N=16, G=21), make=_bw_inputs,
        ref=breit_wigner_ref, note="a scalar helper called twice inside expressions"),

    # ------------------------------------------------------------ networking
    "tcp_fluid": dict(src="""
# a fluid model of TCP flows through one bottleneck: each window grows by a / rtt per
# step and is cut by the fraction sigmoid(lb) of the RED marking probability seen three
# steps earlier (the feedback delay); the queue integrates the excess rate, floored at 0
# and capped at qmax; log throughput of every flow against the queue's length
def tcp_fluid(rtt: f64[F], W0: f64[F], cap: f64[T], a: f64, lb: f64, qth: f64, s: f64, qmax: f64, kq: f64) -> f64:
    W[t: T, f: F] = [t == 0] * W0[f] + [t >= 1] * max(W[t - 1, f] + a / rtt[f] - sigmoid(lb) * W[t - 1, f] * [t >= 3] * p[t - 3], 1.0)
    q[t: T] = [t >= 1] * min(max(q[t - 1] + sum[f](W[t - 1, f] / rtt[f]) - cap[t - 1], 0.0), qmax)
    p[t: T] = sigmoid((q[t] - qth) / s)
    x[t, f] = W[t, f] / (rtt[f] + q[t] / cap[t])
    return -sum[t, f](log(x[t, f])) + kq * sum[t](q[t])
""", sizes=dict(F=3, T=20), make=_tcp_inputs,
        ref=tcp_fluid_ref, note="a read three steps back; min/max kinks in the step"),

    # ------------------------------------------------------------ demand forecasting
    "croston_sba": dict(src="""
# Croston's method with the Syntetos-Boylan correction: on a period with demand, the
# size estimate z moves towards the demand and the interval estimate p towards the
# periods since the last demand; the forecast (1 - be / 2) z / p; one-step squared errors
def croston_sba(y: f64[T], la: f64, lb: f64, z0: f64, p0: f64) -> f64:
    al = sigmoid(la)
    be = sigmoid(lb)
    qb[t: T] = [t == 0] + [t >= 1] * qa[t - 1]
    qa[t: T] = [y[t] > 0.5] + [y[t] < 0.5] * (qb[t] + 1.0)
    zb[t: T] = [t == 0] * z0 + [t >= 1] * z[t - 1]
    z[t: T] = zb[t] + [y[t] > 0.5] * al * (y[t] - zb[t])
    pb[t: T] = [t == 0] * p0 + [t >= 1] * p[t - 1]
    p[t: T] = pb[t] + [y[t] > 0.5] * be * (qb[t] - pb[t])
    f[t] = (1.0 - be / 2.0) * z[t] / p[t]
    return sum[t]([t >= 1] * (y[t] - f[t - 1]) ** 2) / T
""", sizes=dict(T=24), make=lambda rng, T: _croston_inputs(rng, T),
        ref=croston_sba_ref, note="updates selected by value brackets inside a recurrence"),

    # ------------------------------------------------------------ marketing
    "mmm_adstock": dict(src="""
# Hill saturation with shape exp(ls) and half-saturation exp(lk) per channel
def hill(a: f64[T, K], ls: f64[K], lk: f64[K]) -> f64[T, K]:
    h[t, k] = a[t, k] ** exp(ls[k]) / (a[t, k] ** exp(ls[k]) + exp(lk[k]) ** exp(ls[k]))
    return h

# a media-mix model: geometric adstock of each channel's spend, saturated, plus a base,
# a trend and a day-of-week effect (a divisibility guard); a Gaussian likelihood and a
# ridge on the weekday effects
def mmm_adstock(X: f64[T, K], y: f64[T], ld: f64[K], ls: f64[K], lk: f64[K], bt: f64[K], b0: f64, tr: f64[T], g: f64, season: f64[7], lsig: f64) -> f64:
    lam[k] = sigmoid(ld[k])
    ad[t: T, k: K] = X[t, k] + [t >= 1] * lam[k] * ad[t - 1, k]
    h = hill(ad, ls, lk)
    pred[t] = b0 + g * tr[t] + sum[d: 7]([(t - d) % 7 == 0] * season[d]) + sum[k](bt[k] * h[t, k])
    return sum[t]((y[t] - pred[t]) ** 2) / (2.0 * exp(2.0 * lsig)) + T * lsig + 0.5 * sum[d](season[d] ** 2)
""", sizes=dict(T=21, K=3), make=_mmm_inputs,
        ref=mmm_adstock_ref, note="a divisibility guard on t - d; a helper on a recurrence"),

    # ------------------------------------------------------------ earthquake engineering
    "response_spectrum": dict(src="""
# a response spectrum: oscillators of periods Tp and damping zeta under the ground
# acceleration s * ag, integrated by Newmark's average-acceleration method; the peak
# displacement of each by a max over time; log pseudo-accelerations against a target
def response_spectrum(ag: f64[T], s: f64, Tp: f64[K], zeta: f64, dt: f64, tgt: f64[K]) -> f64:
    om[k] = 6.283185307179586 / Tp[k]
    c[k] = 2.0 * zeta * om[k]
    kh[k] = om[k] ** 2 + 2.0 * c[k] / dt + 4.0 / dt ** 2
    u[t: T, k: K] = [t >= 1] * (-s * ag[t] + 4.0 / dt ** 2 * u[t - 1, k] + 4.0 / dt * v[t - 1, k] + a[t - 1, k] + c[k] * (2.0 / dt * u[t - 1, k] + v[t - 1, k])) / kh[k]
    v[t: T, k: K] = [t >= 1] * (2.0 / dt * (u[t, k] - u[t - 1, k]) - v[t - 1, k])
    a[t: T, k: K] = [t == 0] * -s * ag[0] + [t >= 1] * (4.0 / dt ** 2 * (u[t, k] - u[t - 1, k]) - 4.0 / dt * v[t - 1, k] - a[t - 1, k])
    sd[k] = max[t](abs(u[t, k]))
    return sum[k]((log(om[k] ** 2 * sd[k]) - log(tgt[k])) ** 2)
""", sizes=dict(T=40, K=4), make=_spectrum_inputs,
        ref=response_spectrum_ref, note="a three-statement group; a max over time of abs"),

    # ------------------------------------------------------------ air quality
    "gaussian_plume": dict(src="""
# a Gaussian plume: receptors downwind of a stack (along x, wind speed U) see its
# emission exp(lq) spread by power laws sy = ay dx^by and sz = az dx^bz, reflected at
# the ground; upwind pairs contribute nothing; log concentrations over a background
def gaussian_plume(xs: f64[S], ys: f64[S], hs: f64[S], lq: f64[S], xr: f64[R], yr: f64[R], zr: f64[R], U: f64, ay: f64, by: f64, az: f64, bz: f64, bg: f64, obs: f64[R]) -> f64:
    dx[r, s] = xr[r] - xs[s]
    sy[r, s] = [dx[r, s] > 0.0] * ay * dx[r, s] ** by
    sz[r, s] = [dx[r, s] > 0.0] * az * dx[r, s] ** bz
    cn[r] = sum[s]([dx[r, s] > 0.0] * exp(lq[s]) / (6.283185307179586 * U * sy[r, s] * sz[r, s]) * exp(-(yr[r] - ys[s]) ** 2 / (2.0 * sy[r, s] ** 2)) * (exp(-(zr[r] - hs[s]) ** 2 / (2.0 * sz[r, s] ** 2)) + exp(-(zr[r] + hs[s]) ** 2 / (2.0 * sz[r, s] ** 2))))
    return sum[r]((log(cn[r] + bg) - log(obs[r])) ** 2)
""", sizes=dict(S=3, R=8), make=_plume_inputs,
        ref=gaussian_plume_ref, note="a value bracket keeping out fractional powers of negatives"),

    # ------------------------------------------------------------ machine translation
    "expected_bleu": dict(src="""
# the rows of Z turned into distributions
def softmax_rows(Z: f64[n, V]) -> f64[n, V]:
    P[i, v] = exp(Z[i, v] - logsumexp[u](Z[i, u]))
    return P

# an expected BLEU-2 of a soft hypothesis (position i emits token v with probability
# P[i, v]) against a reference r: expected unigram and bigram matches clipped by the
# reference's counts (each reference n-gram j weighs 1 / its count, so each distinct
# n-gram counts once), the brevity penalty from the lengths
def expected_bleu(Z: f64[n, V], r: i64[m]) -> f64:
    P = softmax_rows(Z)
    m1[j] = sum[i](P[i, r[j]])
    c1[j] = sum[k: m]([r[k] == r[j]])
    m2[j: m] = [j + 1 < m] * sum[i]([i + 1 < n] * P[i, r[j]] * P[i + 1, r[j + 1]])
    c2[j: m] = sum[k: m]([k + 1 < m and j + 1 < m and r[k] == r[j] and r[k + 1] == r[j + 1]])
    p1 = sum[j](min(m1[j], c1[j]) / c1[j]) / n
    p2 = sum[j]([j + 1 < m] * min(m2[j], c2[j]) / c2[j]) / (n - 1)
    bp = min(1.0, exp(1.0 - m / n))
    return -(log(bp) + 0.5 * log(p1) + 0.5 * log(p2))
""", sizes=dict(n=6, V=5, m=7), make=_bleu_inputs,
        ref=expected_bleu_ref, note="labels compared with labels at a shift; sizes as values"),

    # ------------------------------------------------------------ point clouds
    "pointnet": dict(src="""
# a shared dense layer with ReLU
def dense_relu(X: f64[n, d], W: f64[d, h], b: f64[h]) -> f64[n, h]:
    Y[i, k] = max(sum[j](X[i, j] * W[j, k]) + b[k], 0.0)
    return Y

# PointNet: two shared layers on every point, a max over the points of each cloud
# (cl[p] is the cloud of point p), a linear classifier and the cross-entropy
def pointnet(X: f64[N, 3], cl: i64[N], y: i64[C], W1: f64[3, H1], b1: f64[H1], W2: f64[H1, H2], b2: f64[H2], W3: f64[H2, Q], b3: f64[Q]) -> f64:
    A1 = dense_relu(X, W1, b1)
    A2 = dense_relu(A1, W2, b2)
    g[c: C, k: H2] = max[p | cl[p] == c](A2[p, k])
    z[c, q] = sum[k](g[c, k] * W3[k, q]) + b3[q]
    return sum[c](logsumexp[q](z[c, q]) - z[c, y[c]]) / C
""", sizes=dict(N=14, C=3, H1=6, H2=5, Q=3), make=_pointnet_inputs,
        ref=pointnet_ref, note="a max filtered by a label; one helper called at two sizes"),

    # ------------------------------------------------------------ survey statistics
    "raking": dict(src="""
# raking design weights exp(ld) to the age totals ta and the region totals tr (unit i
# is in age group ga[i] and region gr[i]): four rounds of scaling each group to its
# total, the group sums scattered by label and gathered back; the raked mean of y
def raking(ld: f64[N], ga: i64[N], gr: i64[N], ta: f64[A], tr: f64[R], y: f64[N]) -> f64:
    w0[t: 4, i: N] = [t == 0] * exp(ld[i]) + [t >= 1] * w2[t - 1, i]
    sa[t: 4, g: A] = sum[i]([ga[i] == g] * w0[t, i])
    w1[t: 4, i: N] = w0[t, i] * ta[ga[i]] / sa[t, ga[i]]
    sr[t: 4, g: R] = sum[i]([gr[i] == g] * w1[t, i])
    w2[t: 4, i: N] = w1[t, i] * tr[gr[i]] / sr[t, gr[i]]
    return sum[i](w2[3, i] * y[i]) / sum[i](w2[3, i])
""", sizes=dict(N=12, A=3, R=2), make=_raking_inputs,
        ref=raking_ref, note="a scatter and a gather by labels in every step"),

    # ------------------------------------------------------------ econometrics
    "event_study": dict(src="""
# an event-study regression: unit and period effects and one effect per period relative
# to adoption (t - g[u] from -3 to 3, the period before adoption the reference), never
# adopters given a far label; least squares with a small ridge
def event_study(Y: f64[U, T], g: i64[U], al: f64[U], gm: f64[T], beta: f64[7], lam: f64) -> f64:
    eff[u, t: T] = sum[k]([k == t - g[u] + 3 and k != 2] * beta[k])
    res[u, t] = Y[u, t] - al[u] - gm[t] - eff[u, t]
    return sum[u, t](res[u, t] ** 2) + lam * (sum[u](al[u] ** 2) + sum[t](gm[t] ** 2) + sum[k](beta[k] ** 2))
""", sizes=dict(U=8, T=8), make=_event_inputs,
        ref=event_study_ref, note="an index compared with arithmetic on a label"),

    # ------------------------------------------------------------ education
    "bkt": dict(src="""
# Bayesian knowledge tracing: student s practises skill sk[s, t] at step t; the chance
# of a right answer from the mastery of that skill, slip and guess; the mastery updated
# by Bayes' rule on the answer, then by learning; other skills carry over
def bkt(y: f64[S, T], sk: i64[S, T], l0: f64[K], lt: f64[K], lg: f64[K], lsl: f64[K]) -> f64:
    L0[k] = sigmoid(l0[k])
    Tr[k] = sigmoid(lt[k])
    G[k] = sigmoid(lg[k])
    Sl[k] = sigmoid(lsl[k])
    Lb[t: T, s: S, k: K] = [t == 0] * L0[k] + [t >= 1] * La[t - 1, s, k]
    pc[t: T, s: S] = Lb[t, s, sk[s, t]] * (1.0 - Sl[sk[s, t]]) + (1.0 - Lb[t, s, sk[s, t]]) * G[sk[s, t]]
    po[t: T, s: S] = Lb[t, s, sk[s, t]] * (y[s, t] * (1.0 - Sl[sk[s, t]]) + (1.0 - y[s, t]) * Sl[sk[s, t]]) / (y[s, t] * pc[t, s] + (1.0 - y[s, t]) * (1.0 - pc[t, s]))
    La[t: T, s: S, k: K] = [k == sk[s, t]] * (po[t, s] + (1.0 - po[t, s]) * Tr[k]) + [k != sk[s, t]] * Lb[t, s, k]
    return -sum[t, s](y[s, t] * log(pc[t, s]) + (1.0 - y[s, t]) * log(1.0 - pc[t, s]))
""", sizes=dict(S=4, T=8, K=2), make=_bkt_inputs,
        ref=bkt_ref, note="a group member gathered at a label in its own step"),

    # ------------------------------------------------------------ radar
    "cfar_radar": dict(src="""
# pulse compression by the code w, keeping every second range cell, then a
# cell-averaging CFAR: the noise of cell i is the mean power of the cells 2 to 4 away on
# either side (one guard cell), a soft detection against exp(la) times it; the
# cross-entropy with the cells that hold a target
def cfar_radar(x: f64[n], w: f64[k], la: f64, tau: f64, tg: f64[(n - k) / 2 + 1]) -> f64:
    y[i: (n - k) / 2 + 1] = sum[j](w[j] * x[2 * i + j])
    P[i] = y[i] ** 2
    tc[i: (n - k) / 2 + 1] = sum[j]([2 <= i - j <= 4 or 2 <= j - i <= 4] * P[j])
    nc[i: (n - k) / 2 + 1] = sum[j: (n - k) / 2 + 1]([2 <= i - j <= 4 or 2 <= j - i <= 4])
    d[i] = sigmoid((P[i] - exp(la) * tc[i] / nc[i]) / tau)
    return -sum[i](tg[i] * log(d[i]) + (1.0 - tg[i]) * log(1.0 - d[i]))
""", sizes=dict(n=33, k=5), make=_cfar_inputs,
        ref=cfar_radar_ref, note="a strided correlation over a derived size; bands under or"),

    # ------------------------------------------------------------ energy storage
    "battery_arb": dict(src="""
# battery arbitrage: S charge levels, each step discharge (a = 0, sell at eta pr),
# idle or charge (a = 2, buy at pr / eta), a wear cost per move; the best profit from
# the middle level by a backward dynamic program, the levels after the last step
# worth sval; a max filtered so as not to leave the grid
def battery_arb(pr: f64[T], sval: f64[S], eta: f64, cdeg: f64) -> f64:
    rw[t, a: 3] = [a == 0] * eta * pr[t] - [a == 2] * pr[t] / eta - [a != 1] * cdeg
    V[t: T, s: S] = max[a: 3 | 0 <= s + a - 1 < S](rw[t, a] + [t + 1 < T] * V[t + 1, s + a - 1] + [t + 1 == T] * sval[s + a - 1])
    return V[0, (S - 1) / 2]
""", sizes=dict(T=8, S=5), make=_battery_inputs,
        ref=battery_arb_ref, note="a backward max recurrence; a derived size in an index"),

    # ------------------------------------------------------------ music information retrieval
    "beat_track": dict(src="""
# dynamic-programming beat tracking: the best score of a beat at frame t is its onset
# strength plus the best score of a previous beat 2 to 5 frames earlier, penalised by
# the squared log ratio of the interval to the tempo period P; the best final beat
def beat_track(O: f64[T], P: f64, al: f64) -> f64:
    pen[c: 4] = -al * log(([c == 0] * 2.0 + [c == 1] * 3.0 + [c == 2] * 4.0 + [c == 3] * 5.0) / P) ** 2
    C[t: T] = O[t] + [t >= 2] * max[c: 4 | c + 2 <= t](pen[c] + [c == 0] * C[t - 2] + [c == 1] * C[t - 3] + [c == 2] * C[t - 4] + [c == 3] * C[t - 5])
    return max[t | t + 4 >= T](C[t])
""", sizes=dict(T=30), make=lambda rng, T: _beat_inputs(rng, T),
        ref=beat_track_ref, note="a max recurrence over four lags picked by brackets"),

    # ------------------------------------------------------------ emission tomography
    "mlem_pet": dict(src="""
# MLEM for emission tomography: four multiplicative updates of the image x by the
# back-projected ratio of the counts y to the forward projection plus randoms r,
# normalised by the sensitivities; the last iterate against a reference image
def mlem_pet(Asys: f64[m, n], y: f64[m], r: f64[m], x0: f64[n], xt: f64[n]) -> f64:
    sens[j] = sum[i](Asys[i, j])
    x[k: 5, j: n] = [k == 0] * x0[j] + [k >= 1] * x[k - 1, j] / sens[j] * sum[i](Asys[i, j] * y[i] / prj[k - 1, i])
    prj[k: 5, i: m] = sum[j](Asys[i, j] * x[k, j]) + r[i]
    return sum[j]((x[4, j] - xt[j]) ** 2)
""", sizes=dict(m=10, n=6), make=_mlem_inputs,
        ref=mlem_pet_ref, note="a two-statement group of matrix-vector products with a division"),

    # ------------------------------------------------------------ spatial epidemiology
    "scan_stat": dict(src="""
# Kulldorff's scan statistic over windows of 1 to L consecutive regions: counts and
# expectations of each window from prefix sums, the Poisson log-likelihood ratio where
# the window has more cases than expected, and a soft maximum over the windows (with
# a prior wl on the window length)
def scan_stat(c: f64[n], le: f64[n], wl: f64[L], tau: f64) -> f64:
    e[i] = exp(le[i])
    Sc[i: n] = c[i] + [i >= 1] * Sc[i - 1]
    Se[i: n] = e[i] + [i >= 1] * Se[i - 1]
    Cw[a: n, l: L] = [a + l < n] * (Sc[a + l] - [a >= 1] * Sc[a - 1])
    Ew[a: n, l: L] = [a + l < n] * (Se[a + l] - [a >= 1] * Se[a - 1])
    Ct = Sc[n - 1]
    Et = Se[n - 1]
    llr[a: n, l: L] = [Cw[a, l] > Ew[a, l]] * (Cw[a, l] * log(Cw[a, l] / Ew[a, l]) + (Ct - Cw[a, l]) * log((Ct - Cw[a, l]) / (Et - Ew[a, l])) - Ct * log(Ct / Et))
    return tau * logsumexp[a, l | a + l < n](llr[a, l] / tau + wl[l])
""", sizes=dict(n=12, L=4), make=_scan_inputs,
        ref=scan_stat_ref, note="prefix sums as recurrences; a filtered two-index logsumexp"),

    # ------------------------------------------------------------ political science
    "nominate": dict(src="""
# a NOMINATE-style spatial voting model: legislator leg[v] votes on roll call rc[v];
# the utilities of the yea and nay outcomes are Gaussian in the weighted distances from
# the ideal point, their difference scaled by exp(lb) is the logit of a yea; a prior
def nominate(x: f64[I, 2], yl: f64[J, 2], nl: f64[J, 2], lb: f64, lw: f64[2], leg: i64[V], rc: i64[V], yea: f64[V]) -> f64:
    dy[v] = sum[d](exp(2.0 * lw[d]) * (x[leg[v], d] - yl[rc[v], d]) ** 2)
    dn[v] = sum[d](exp(2.0 * lw[d]) * (x[leg[v], d] - nl[rc[v], d]) ** 2)
    u[v] = exp(lb) * (exp(-0.5 * dy[v]) - exp(-0.5 * dn[v]))
    return sum[v](yea[v] * softplus(-u[v]) + (1.0 - yea[v]) * softplus(u[v])) + 0.5 * sum[i, d](x[i, d] ** 2)
""", sizes=dict(I=8, J=6, V=30), make=_nominate_inputs,
        ref=nominate_ref, note="gathers at two labels per vote"),
}


REJECTED = {
    # the vote shift written as a read at v - e[s] ("electoral_dp" compares a new index
    # u with v - e[s] instead)
    "electoral_shift": ("""
def electoral_shift(p: f64[S], e: i64[S], maj: bool[V]) -> f64:
    P[s: S, v: V] = [s == 0] * ([v == 0] * (1.0 - p[0]) + [v == e[0]] * p[0]) + [s >= 1] * ((1.0 - p[s]) * P[s - 1, v] + [v >= e[s]] * p[s] * P[s - 1, v - e[s]])
    return log(sum[v]([maj[v]] * P[S - 1, v]))
""", "TLTypeError", "the gather e[...] must stand alone as an index", 3),
    # the battery's moves without saying that the charge stays on the grid (a bracket
    # inside a max is a value, so "battery_arb" filters the moves)
    "battery_unguarded": ("""
def battery_unguarded(pr: f64[T], sval: f64[S], eta: f64) -> f64:
    rw[t, a: 3] = [a == 0] * eta * pr[t] - [a == 2] * pr[t] / eta
    V[t: T, s: S] = max[a: 3](rw[t, a] + [t + 1 < T] * V[t + 1, s + a - 1] + [t + 1 == T] * sval[s + a - 1])
    return V[0, (S - 1) / 2]
""", "TLBoundsError", "index 1 of V may be out of range: a + s - 1 ranges over -1 .. S", 4),
    # min-sum decoding with the messages' signs in a tensor called sign, a builtin
    "ldpc_sign": ("""
def ldpc_sign(llr: f64[n], H: i64[m, 3]) -> f64:
    v[c, k] = llr[H[c, k]]
    sign[c, k] = [v[c, k] > 0.0] - [v[c, k] < 0.0]
    mag[c, k] = abs(v[c, k])
    u[c, k: 3] = [k == 0] * sign[c, 1] * sign[c, 2] * min(mag[c, 1], mag[c, 2]) + [k == 1] * sign[c, 0] * sign[c, 2] * min(mag[c, 0], mag[c, 2]) + [k == 2] * sign[c, 0] * sign[c, 1] * min(mag[c, 0], mag[c, 1])
    return sum[c, k](u[c, k] ** 2)
""", "TLNameError", "sign is a builtin name and cannot be assigned", 4),
    # one raking round written as two updates of the same weights (each name is
    # assigned once; "raking" names w0, w1 and w2)
    "raking_twice": ("""
def raking_twice(d: f64[N], ga: i64[N], gr: i64[N], ta: f64[A], tr: f64[R]) -> f64:
    sa[g: A] = sum[i]([ga[i] == g] * d[i])
    w[i] = d[i] * ta[ga[i]] / sa[ga[i]]
    sr[g: R] = sum[i]([gr[i] == g] * w[i])
    w[i] = w[i] * tr[gr[i]] / sr[gr[i]]
    return sum[i](w[i])
""", "TLNameError", "w is already defined", 6),
    # the damage function called on the temperatures and read one step back inside the
    # temperature's own recurrence ("dice_climate" writes the damage in the step)
    "dice_call_step": ("""
def damage(Tat: f64[T]) -> f64[T]:
    om[t] = 1.0 / (1.0 + 0.00236 * Tat[t] ** 2)
    return om

def dice_call_step(Yg: f64[T], F: f64[T], Tat0: f64) -> f64:
    Tat[t: T] = [t == 0] * Tat0 + [t >= 1] * (Tat[t - 1] + 0.1 * (F[t - 1] - 1.18 * Tat[t - 1] - 0.01 * Yg[t - 1] * om[t - 1]))
    om = damage(Tat)
    return sum[t](Yg[t] * om[t])
""", "TLRecurrenceError", "om is read before it is defined, but it names a call result", 8),
    # the bit masks of the demapper used as numbers, a big penalty on the symbols that
    # do not carry the bit ("qam_demap" filters the minima by the relation)
    "qam_relation_value": ("""
def qam_relation_value(D: f64[R, M], bits: bool[M, B]) -> f64:
    L[r, b] = min[s](D[r, s] + 1000.0 * bits[s, b]) - min[s](D[r, s] + 1000.0 * (1.0 - bits[s, b]))
    return sum[r, b](softplus(L[r, b]))
""", "TLTypeError", "relation bits used as a value", 3),
    # the number of right answers so far summed over t inside a statement over t
    "bkt_shadow": ("""
def bkt_shadow(y: f64[S, T], L0: f64[S]) -> f64:
    Lb[t: T, s: S] = [t == 0] * L0[s] + [t >= 1] * Lb[t - 1, s] * 0.9
    seen[t: T, s: S] = sum[t]([y[s, t] > 0.5])
    return sum[t, s](Lb[t, s] * seen[t, s])
""", "TLNameError", "index t is already bound here", 4),
    # the main function first and its helper below it
    "dixon_later_helper": ("""
def dixon_later_helper(att: f64[Tm], dfn: f64[Tm], hm: i64[G], aw: i64[G], home: f64) -> f64:
    lam, mu = rates(att, dfn, hm, aw, home)
    return sum[g](lam[g] + mu[g])

def rates(att: f64[Tm], dfn: f64[Tm], hm: i64[G], aw: i64[G], home: f64) -> (f64[G], f64[G]):
    lam[g] = exp(home + att[hm[g]] + dfn[aw[g]])
    mu[g] = exp(att[aw[g]] + dfn[hm[g]])
    return lam, mu
""", "TLNameError", "rates is defined after dixon_later_helper", 3),
    # a seasonal period given by the size of the effects ("mmm_adstock" writes the
    # weekly period as the literal 7)
    "mmm_size_modulus": ("""
def mmm_size_modulus(y: f64[T], season: f64[D]) -> f64:
    pred[t: T] = sum[d]([(t - d) % D == 0] * season[d])
    return sum[t]((y[t] - pred[t]) ** 2)
""", "TLTypeError", "the modulus of % must be a positive integer", 3),
    # the windows flattened into one index of n * L entries
    "scan_product_range": ("""
def scan_product_range(Cw: f64[n, L], tau: f64) -> f64:
    flat[q: n * L] = Cw[q / L, q - L * (q / L)]
    return tau * logsumexp[q](flat[q] / tau)
""", "TLSyntaxError", "a product of two sizes cannot be a dimension", 3),
    # the state's shape as the return type of a function that returns the energy
    "vqe_annotation": ("""
def vqe_annotation(th: f64[4]) -> f64[2, 2, 2, 2]:
    amp[q] = cos(0.5 * th[q])
    psi[a: 2, b: 2, c: 2, d: 2] = [a == 0] * amp[0] * [b == 0] * amp[1] * [c == 0] * amp[2] * [d == 0] * amp[3]
    return sum[a, b, c, d](psi[a, b, c, d] ** 2)
""", "TLTypeError", "return type mismatch: declared f64[2, 2, 2, 2] but the function returns f64", 2),
    # the shared layer called without its bias
    "pointnet_missing_arg": ("""
def dense_relu(X: f64[n, d], W: f64[d, h], b: f64[h]) -> f64[n, h]:
    Y[i, k] = max(sum[j](X[i, j] * W[j, k]) + b[k], 0.0)
    return Y

def pointnet_missing_arg(X: f64[N, 3], W1: f64[3, H]) -> f64:
    A1 = dense_relu(X, W1)
    return sum[p, k](A1[p, k])
""", "TLCallError", "dense_relu takes 3 argument(s) but 2 were given", 7),
    # the beat's predecessor searched over a window of lags by a reduction index ("beat_track"
    # spells out the four lags under brackets)
    "beat_lag_window": ("""
def beat_lag_window(O: f64[T], pen: f64[4]) -> f64:
    C[t: T] = O[t] + [t >= 5] * max[c](pen[c] + C[t - c - 2])
    return C[T - 1]
""", "TLRecurrenceError", "does not step by a constant along t", 3),
}
