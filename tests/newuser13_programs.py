"""A thirteenth set of programs written from the documentation alone.

Domains the earlier sets (tests/newuser_programs.py ... tests/newuser12_programs.py)
leave out: epidemiology (the renewal equation with a shift register of past incidence
under a random-walk reproduction number), hydrology (an HBV-like snow, soil and
reservoir model with degree-day melt, a parameter exponent and min/max kinks),
chemistry (pseudo-Voigt peaks on a Horner baseline), biology (Felsenstein's pruning
on a balanced binary tree, levels as a recurrence reading nodes 2 v and 2 v + 1;
both-strand position weight matrix scanning with the reverse complement as label
arithmetic in a comparison), neuroscience (a Poisson GLM of coupled neurons whose
history filters are a three-factor chain over a guarded shifted read), time series (a
Prophet-style trend with changepoints by value brackets between two parameters and a
relation mask of observed days), ranking (a LambdaRank-style loss over pairs of one
query by label equality and label order, discounts at smooth ranks), graphs (a
relational GCN with a basis decomposition, per-relation in-degree counts gathered as
divisors and a nested gather of node types), optics (Snell refraction and Fresnel
transmittance through layers, with a helper returning two tensors taken apart;
paraxial ABCD matrices of a lens stack carried through a recurrence), control (a
backward Riccati recursion feeding a forward closed-loop rollout), economics (BLP's
share inversion unrolled with the outside good as a bracket-zero point of a logsumexp
over J + 1; a nested CES production function with shares normalised within nests by a
filter comparing labels with labels), mechanics and geoscience (a neo-Hookean
triangle mesh through a vertex table, straight-ray tomography with first arrivals as
a hard minimum filtered by pick labels, a spherical variogram fitted to binned pairs
with a B + 1 parameter and 0/0 kept out by a value bracket), factorisation (Lee and
Seung's multiplicative NMF updates unrolled), audio (MFCCs from strided frames over a
derived size, triangular mel filters by value brackets in a called function),
survival (a mixture cure model with interval, left and right censoring by a code
label), population genetics (diploid selection and migration between demes), traffic
(the intelligent driver model, each car reading its leader in the same step), batteries
(a Thevenin circuit with RC relaxations and a Horner open-circuit voltage as a second
recurrence), game theory (smoothed fictitious play towards logit responses) and
vision (a depthwise dilated stride-2 convolution over derived sizes).  Each entry has
the shape of the other sets: the program text (the function to test is named like the
entry), the sizes of the test inputs, `make(rng, **sizes)`, an independent NumPy
version `ref(**inputs)` and a note.  REJECTED holds programs such a user writes first
that the language refuses, each with its located error.
tests/test_newuser13_programs.py checks them, and the API around them.
"""
import numpy as np
from scipy.special import logsumexp as _lse

from newuser2_programs import _normal


def _sig(z):
    return 1.0 / (1.0 + np.exp(-z))


def _softplus(z):
    return np.logaddexp(0.0, z)


# ------------------------------------------------------------ epidemiology
def renewal_ref(lr, w, i0, cases, rho, sig):
    T, S = len(lr), len(w)
    inc = np.zeros(T)
    inc[0] = i0
    for t in range(1, T):
        past = [inc[t - 1 - s] if t - 1 - s >= 0 else 0.0 for s in range(S)]
        inc[t] = np.exp(lr[t]) * np.dot(w, past)
    mu = rho * inc
    ll = np.sum(cases * np.log(mu) - mu)
    return float(-ll + np.sum(np.diff(lr) ** 2) / (2 * sig ** 2))


# ------------------------------------------------------------ hydrology
def hbv_ref(P, Tm, Ep, TT, cfmax, lfc, beta, lp, k1, sp0, sm0, suz0, Qo):
    T = len(P)
    fc = np.exp(lfc)
    sp, sm, suz = sp0, sm0, suz0
    Q = np.zeros(T)
    for t in range(1, T):
        sf = P[t] if Tm[t] < TT else 0.0
        rain = P[t] - sf
        melt = min(cfmax * max(Tm[t] - TT, 0.0), sp + sf)
        inflow = rain + melt
        rech = inflow * (sm / fc) ** beta
        et = Ep[t] * min(sm / (lp * fc), 1.0)
        q = k1 * (suz + rech)
        sp, sm, suz = sp + sf - melt, sm + inflow - rech - et, suz + rech - q
        Q[t] = q
    return float(np.sum((Q[1:] - Qo[1:]) ** 2) / np.sum((Qo[1:] - Qo[1:].mean()) ** 2))


# ------------------------------------------------------------ chemistry
def voigt_ref(x, y, A, c, lw, eta, b):
    w = np.exp(lw)
    u = (x[:, None] - c[None, :]) / w[None, :]
    L = 1.0 / (1.0 + u ** 2)
    G = np.exp(-np.log(2.0) * u ** 2)
    et = _sig(eta)
    model = np.polyval(b[::-1], x) + (A * (et * L + (1 - et) * G)).sum(axis=1)
    return float(np.sum((model - y) ** 2))


# ------------------------------------------------------------ biology
def felsenstein_ref(lt, seq, eps, lpi):
    D = len(lt)
    S, n = seq.shape
    total = 0.0
    lpn = lpi - _lse(lpi)
    for s in range(S):
        # partial likelihoods (not logs) level by level
        part = np.where(np.arange(4)[None, :] == seq[s][:, None], 1.0 - eps, eps / 3.0)
        for l in range(D):
            e = np.exp(-4.0 / 3.0 * np.exp(lt[l]))
            Pm = np.full((4, 4), 0.25 - 0.25 * e) + np.eye(4) * e
            up = part @ Pm.T                      # up[v, a] = sum_b P[a, b] part[v, b]
            part = up[0::2] * up[1::2]
        total += np.log(np.exp(lpn) @ part[0])
    return float(-total)


def pwm_scan_ref(W, seq, y, b):
    S, n = seq.shape
    L = W.shape[0]
    z = np.zeros(S)
    for s in range(S):
        scores = []
        for p in range(n - L + 1):
            win = seq[s, p:p + L]
            scores.append(sum(W[k, win[k]] for k in range(L)))
            rc = 3 - win[::-1]                  # the reverse complement of the window
            scores.append(sum(W[k, rc[k]] for k in range(L)))
        z[s] = _lse(scores) + b
    return float(np.sum(_softplus(z) - y * z))


# ------------------------------------------------------------ neuroscience
def spike_glm_ref(Y, X, K, A, Bf, bias, dt, lam):
    T, N = Y.shape
    H = Bf.shape[0]
    C = np.einsum("jim,km->jik", A, Bf)           # coupling filters, lag k + 1
    eta = bias[None, :] + X @ K.T
    for t in range(T):
        for k in range(H):
            if t - 1 - k >= 0:
                eta[t] += C[:, :, k] @ Y[t - 1 - k]
    return float(np.sum(np.exp(eta) * dt - Y * eta) + lam * np.sum(A ** 2))


# ------------------------------------------------------------ time series
def prophet_ref(y, tt, obs, s, k, m, dl, a, bb, fr, per, tau):
    on = (tt[:, None] >= s[None, :]).astype(float)
    trend = (k + on @ dl) * tt + m - on @ (s * dl)
    ang = 2 * np.pi * fr[None, :] * tt[:, None] / per
    seas = np.cos(ang) @ a + np.sin(ang) @ bb
    return float(np.sum(obs * (y - trend - seas) ** 2) + tau * np.sum(np.abs(dl)))


# ------------------------------------------------------------ ranking and graphs
def lambdarank_ref(X, w, qid, rel, gain, idcg, tau):
    s = X @ w
    n = len(s)
    pos = np.ones(n)
    for i in range(n):
        for j in range(n):
            if j != i and qid[j] == qid[i]:
                pos[i] += _sig((s[j] - s[i]) / tau)
    disc = 1.0 / np.log(1.0 + pos)
    total = 0.0
    for i in range(n):
        for j in range(n):
            if qid[i] == qid[j] and rel[i] > rel[j]:
                total += (abs(gain[i] - gain[j]) * abs(disc[i] - disc[j]) / idcg[qid[i]]
                          * _softplus(s[j] - s[i]))
    return float(total)


def rgcn_ref(Xn, ntype, src, dst, et, Bs, co, Temb, W0, Wo, lab):
    n = len(Xn)
    R = co.shape[0]
    Wr = np.einsum("rq,qab->rab", co, Bs)
    cnt = np.zeros((n, R))
    np.add.at(cnt, (dst, et), 1.0)
    agg = Xn @ W0
    for e in range(len(src)):
        agg[dst[e]] += (Xn[src[e]] @ Wr[et[e]] + Temb[ntype[src[e]]]) / cnt[dst[e], et[e]]
    H = np.maximum(agg, 0.0)
    Z = H @ Wo
    return float(np.mean(_lse(Z, axis=1) - Z[np.arange(n), lab]))


# ------------------------------------------------------------ optics
def snell_ref(nl, d, th0, n0, ox, oT):
    sn = n0 * np.sin(th0)[:, None] / nl[None, :]
    cs = np.sqrt(1 - sn ** 2)
    x = (d[None, :] * sn / cs).sum(1)
    nn = np.concatenate([[n0], nl])
    cc = np.concatenate([np.cos(th0)[:, None], cs], axis=1)
    a, b = nn[None, :-1] * cc[:, :-1], nn[None, 1:] * cc[:, 1:]
    rf = (a - b) / (a + b)
    lT = np.log(1 - rf ** 2).sum(1)
    return float(np.sum((x - ox) ** 2 + (lT - oT) ** 2))


def abcd_lens_ref(P, g, v0, Pt, ap, lam):
    K = len(P)
    M = np.eye(2)
    v = v0.copy()
    pen = 0.0
    for k in range(K):
        S = np.array([[1.0, g[k]], [0.0, 1.0]]) @ np.array([[1.0, 0.0], [-P[k], 1.0]])
        pen += np.sum(_softplus(10.0 * (v[:, 0] ** 2 - ap ** 2)) / 10.0)
        M = S @ M
        v = v @ S.T
    return float((-M[1, 0] - Pt) ** 2 + np.sum(v[:, 0] ** 2) + lam * pen)


# ------------------------------------------------------------ control
def riccati_ref(A, B, Q, R, Qf, x0, T):
    P = Qf.copy()
    Ks = [None] * T
    for t in range(T - 1, -1, -1):
        PB = P @ B
        Kt = (PB @ A) / (R + B @ PB)
        Ks[t] = Kt
        P = Q + A.T @ P @ A - np.outer(A.T @ PB, Kt)
    x = x0.copy()
    J = 0.0
    for t in range(T):
        u = -Ks[t] @ x
        J += x @ Q @ x + R * u ** 2
        x = A @ x + B * u
    return float(J + x @ Qf @ x)


# ------------------------------------------------------------ economics
def blp_ref(sh, pr, nu, X, Z, Wg, be, sig, its):
    K = len(its)
    s0 = 1.0 - sh.sum()
    dl = np.log(sh) - np.log(s0)
    for _ in range(K - 1):
        u = dl[None, :] + sig * nu[:, None] * pr[None, :]          # N x J
        den = 1.0 + np.exp(u).sum(1)
        pred = (np.exp(u) / den[:, None]).mean(0)
        dl = dl + np.log(sh) - np.log(pred)
    xi = dl - X @ be
    gm = Z.T @ xi
    return float(gm @ Wg @ gm)


def ces_ref(X, nest, ly, lA, al, bl, r1, r2):
    G = len(bl)
    a = np.zeros_like(al)
    for g in range(G):
        idx = nest == g
        a[idx] = np.exp(al[idx] - _lse(al[idx]))
    b = np.exp(bl - _lse(bl))
    inner = np.stack([(X[:, nest == g] ** r1 @ a[nest == g]) ** (1 / r1) for g in range(G)], 1)
    q = lA + np.log(inner ** r2 @ b) / r2
    return float(np.sum((q - ly) ** 2))


# ------------------------------------------------------------ mechanics and geoscience
def neo_hookean_ref(x, tri, Bm, vol, mu, lam, fx):
    E = 0.0
    for t in range(len(tri)):
        Ds = np.stack([x[tri[t, 1]] - x[tri[t, 0]], x[tri[t, 2]] - x[tri[t, 0]]], axis=1)
        F = Ds @ Bm[t]
        J = np.linalg.det(F)
        E += vol[t] * (0.5 * mu * (np.sum(F ** 2) - 2) - mu * np.log(J) + 0.5 * lam * np.log(J) ** 2)
    return float(E - np.sum(fx * x))


def tomography_ref(ls, cr, cc, ray, sl, pick, tobs, lam):
    R = len(pick)
    tt = np.zeros(R)
    np.add.at(tt, ray, sl * np.exp(ls[cr, cc]))
    first = np.array([tt[pick == g].min() for g in range(len(tobs))])
    sm = np.sum(np.diff(ls, axis=0) ** 2) + np.sum(np.diff(ls, axis=1) ** 2)
    return float(np.sum((first - tobs) ** 2) + lam * sm)


def variogram_ref(P, z, be, hb, ln, lsl, la):
    n = len(z)
    B = len(hb)
    cnt, acc = np.zeros(B), np.zeros(B)
    for i in range(n):
        for j in range(i + 1, n):
            h = np.linalg.norm(P[i] - P[j])
            for b in range(B):
                if be[b] <= h < be[b + 1]:
                    cnt[b] += 1
                    acc[b] += 0.5 * (z[i] - z[j]) ** 2
    ge = np.where(cnt > 0, acc / np.maximum(cnt, 1), 0.0)
    nug, sill, a = np.exp(ln), np.exp(lsl), np.exp(la)
    u = hb / a
    gm = nug + sill * np.where(hb < a, 1.5 * u - 0.5 * u ** 3, 1.0)
    return float(np.sum(cnt * (ge / gm - 1.0) ** 2))


# ------------------------------------------------------------ factorisation
def nmf_mu_ref(V, W0, H0, its):
    W, H = W0.copy(), H0.copy()
    for _ in range(len(its) - 1):
        H = H * (W.T @ V) / (W.T @ W @ H)
        W = W * (V @ H.T) / (W @ H @ H.T)
    return float(np.sum((V - W @ H) ** 2))


# ------------------------------------------------------------ audio
def melspec_ref(Pw, fb, lo, ce, hi):
    Wm = np.zeros((len(lo), len(fb)))
    for m in range(len(lo)):
        for k, f in enumerate(fb):
            if lo[m] < f <= ce[m]:
                Wm[m, k] = (f - lo[m]) / (ce[m] - lo[m])
            elif ce[m] < f < hi[m]:
                Wm[m, k] = (hi[m] - f) / (hi[m] - ce[m])
    return Pw @ Wm.T


def mfcc_ref(x, win, Cs, Sn, fb, lo, ce, hi, Dc, target):
    L = len(win)
    nF = (len(x) - L) // 2 + 1
    fr = np.stack([x[2 * f:2 * f + L] * win for f in range(nF)])
    Pw = (fr @ Cs.T) ** 2 + (fr @ Sn.T) ** 2
    E = melspec_ref(Pw, fb, lo, ce, hi)
    cc = np.log(E + 1e-6) @ Dc.T
    return float(np.sum((cc - target) ** 2))


# ------------------------------------------------------------ survival
def interval_cure_ref(X, Z, lo, hi, ty, be, ga, lk):
    k = np.exp(lk)
    pc = _sig(Z @ ga)
    lam = np.exp(X @ be)
    sl = np.exp(-(lo / lam) ** k)
    sh = np.exp(-(hi / lam) ** k)
    L = np.where(ty == 0, pc + (1 - pc) * sl,
                 np.where(ty == 1, (1 - pc) * (sl - sh), (1 - pc) * (1 - sh)))
    return float(-np.sum(np.log(L)))


# ------------------------------------------------------------ population genetics
def wright_fisher_ref(p0, s, hd, lm, k, nn):
    T, D = k.shape
    Mg = np.exp(lm - _lse(lm, axis=1, keepdims=True))
    p = np.zeros((T, D))
    p[0] = p0
    for t in range(1, T):
        q = p[t - 1]
        num = q ** 2 * (1 + s) + q * (1 - q) * (1 + hd * s)
        wbar = q ** 2 * (1 + s) + 2 * q * (1 - q) * (1 + hd * s) + (1 - q) ** 2
        p[t] = Mg @ (num / wbar)
    return float(-np.sum(k * np.log(p) + (nn - k) * np.log(1 - p)))


# ------------------------------------------------------------ traffic
def idm_ref(x0, v0s, vl, la, lb, Th, s0, vd, dt, obs, Lc):
    T, N = obs.shape
    am, bc = np.exp(la), np.exp(lb)
    x, v = np.zeros((T, N)), np.zeros((T, N))
    x[0], v[0] = x0, v0s
    for t in range(1, T):
        xp, vp = x[t - 1], v[t - 1]
        acc = np.zeros(N)
        for i in range(1, N):
            gap = xp[i - 1] - xp[i] - Lc
            ss = s0 + vp[i] * Th + vp[i] * (vp[i] - vp[i - 1]) / (2 * np.sqrt(am * bc))
            acc[i] = am * (1 - (vp[i] / vd) ** 4 - (ss / gap) ** 2)
        x[t] = xp + dt * vp
        v[t] = np.maximum(vp + dt * acc, 0.0)
        v[t, 0] = vl[t]
    return float(np.sum((x[:, 1:] - obs[:, 1:]) ** 2))


# ------------------------------------------------------------ batteries
def battery_ecm_ref(I, Vo, soc0, lQ, R0, lR, lC, oc, dt):
    T = len(I)
    Q = np.exp(lQ)
    Rk, Ck = np.exp(lR), np.exp(lC)
    a = np.exp(-dt / (Rk * Ck))
    soc = np.zeros(T)
    vr = np.zeros((T, len(Rk)))
    soc[0] = soc0
    for t in range(1, T):
        soc[t] = soc[t - 1] - dt * I[t - 1] / Q
        vr[t] = a * vr[t - 1] + Rk * (1 - a) * I[t - 1]
    ocv = np.polyval(oc[::-1], soc)
    V = ocv - R0 * I - vr.sum(1)
    return float(np.sum((V - Vo) ** 2))


# ------------------------------------------------------------ games
def logit_qre_ref(A, B, ll, al, its, fx, fy):
    m, n = A.shape
    lam = np.exp(ll)
    x, y = np.full(m, 1.0 / m), np.full(n, 1.0 / n)
    for _ in range(len(its) - 1):
        ux, uy = lam * A @ y, lam * B.T @ x
        x, y = ((1 - al) * x + al * np.exp(ux - _lse(ux)),
                (1 - al) * y + al * np.exp(uy - _lse(uy)))
    return float(-fx @ np.log(x) - fy @ np.log(y))


# ------------------------------------------------------------ vision
def mobile_block_ref(X, Kd, Wp, Wc, y):
    B, C, h, w = X.shape
    oh, ow = (h - 5) // 2 + 1, (w - 5) // 2 + 1
    D = np.zeros((B, C, oh, ow))
    for r in range(oh):
        for q in range(ow):
            patch = X[:, :, 2 * r:2 * r + 5:2, 2 * q:2 * q + 5:2]        # dilation 2, stride 2
            D[:, :, r, q] = np.einsum("scab,cab->sc", patch, Kd)
    P = np.maximum(np.einsum("scrq,ce->serq", D, Wp), 0.0)
    g = P.mean(axis=(2, 3))
    Zl = g @ Wc
    return float(np.mean(_lse(Zl, axis=1) - Zl[np.arange(B), y]))


# ------------------------------------------------------------ input makers
def _renewal_inputs(rng, T, S):
    w = np.array([0.2, 0.4, 0.25, 0.15])[:S]
    lr = np.log(1.3) - 0.05 * np.arange(T) + 0.05 * _normal(rng, T)
    return dict(lr=lr, w=w / w.sum(), i0=10.0, cases=rng.poisson(8.0, T).astype(float) + 1.0,
                rho=0.6, sig=0.2)


def _hbv_inputs(rng, T):
    Tm = np.array([-3.0, -1.5, 2.5, -0.4, 4.0, 3.1, 1.2, 6.0, 5.3, 0.8])[:T] + 0.1 * _normal(rng, T)
    P = np.abs(3.0 * _normal(rng, T)) + 0.5
    Ep = 0.5 + 0.5 * rng.random(T)
    Qo = 0.5 + rng.random(T)
    return dict(P=P, Tm=Tm, Ep=Ep, TT=0.3, cfmax=2.5, lfc=np.log(150.0), beta=2.0, lp=0.7,
                k1=0.15, sp0=20.0, sm0=60.0, suz0=5.0, Qo=Qo)


def _voigt_inputs(rng, n, K, B):
    x = np.linspace(0.0, 10.0, n)
    c = np.linspace(2.0, 8.0, K) + 0.2 * _normal(rng, K)
    A = 1.0 + rng.random(K)
    lw = np.log(0.6 + 0.4 * rng.random(K))
    eta = 0.5 * _normal(rng, K)
    b = 0.1 * _normal(rng, B)
    return dict(x=x, y=voigt_model(x, A, c, lw, eta, b) + 0.05 * _normal(rng, n), A=A,
                c=c + 0.1, lw=lw, eta=eta, b=b)


def voigt_model(x, A, c, lw, eta, b):
    w = np.exp(lw)
    u = (x[:, None] - c[None, :]) / w[None, :]
    et = _sig(eta)
    return np.polyval(b[::-1], x) + (A * (et / (1 + u ** 2) + (1 - et) * 2.0 ** (-u ** 2))).sum(1)


def _felsenstein_inputs(rng, D, S):
    n = 2 ** D
    root = rng.integers(0, 4, S)
    seq = np.tile(root[:, None], (1, n))
    flip = rng.random((S, n)) < 0.3
    seq[flip] = rng.integers(0, 4, flip.sum())
    return dict(lt=np.log(0.1 + 0.2 * rng.random(D)), seq=seq, eps=0.02,
                lpi=0.2 * _normal(rng, 4))


def _pwm_inputs(rng, S, n, L):
    seq = rng.integers(0, 4, (S, n))
    motif = np.array([0, 2, 3, 1, 1])[:L]
    y = (np.arange(S) % 2 == 0).astype(float)
    for s in range(0, S, 2):
        p = rng.integers(0, n - L + 1)
        seq[s, p:p + L] = motif
    return dict(W=0.5 * _normal(rng, L, 4), seq=seq, y=y, b=-1.0)


def _spike_inputs(rng, T, N, F, H, M):
    lag = np.arange(H)
    Bf = np.stack([np.exp(-0.5 * ((lag - c) / 1.2) ** 2) for c in np.linspace(0, H - 1, M)], 1)
    return dict(Y=rng.poisson(0.8, (T, N)).astype(float), X=_normal(rng, T, F),
                K=0.3 * _normal(rng, N, F), A=0.2 * _normal(rng, N, N, M), Bf=Bf,
                bias=np.log(0.8) + 0.1 * _normal(rng, N), dt=1.0, lam=0.1)


def _prophet_inputs(rng, T, C, F):
    tt = np.linspace(0.0, 4.0, T)
    y = 0.5 * tt + np.sin(2 * np.pi * tt) + 0.1 * _normal(rng, T)
    s = np.linspace(0.6, 3.4, C) + 0.013          # no changepoint on a time stamp
    return dict(y=y, tt=tt, obs=rng.random(T) < 0.8, s=s, k=0.4, m=0.1, dl=0.1 * _normal(rng, C) + 0.05,
                a=0.3 * _normal(rng, F), bb=0.3 * _normal(rng, F), fr=np.arange(1.0, F + 1),
                per=1.0, tau=0.5)


def _lambdarank_inputs(rng, n, p, Q):
    qid = np.sort(rng.integers(0, Q, n))
    qid[:Q] = np.arange(Q)
    qid = np.sort(qid)
    rel = rng.integers(0, 3, n)
    gain = 2.0 ** rel - 1.0
    idcg = np.array([np.sum(np.sort(gain[qid == q])[::-1] / np.log2(2 + np.arange((qid == q).sum())))
                     + 1.0 for q in range(Q)])
    return dict(X=_normal(rng, n, p), w=0.5 * _normal(rng, p), qid=qid, rel=rel, gain=gain,
                idcg=idcg, tau=0.5)


def _rgcn_inputs(rng, n, E, d, h, R, NB, C, Ty):
    return dict(Xn=_normal(rng, n, d), ntype=rng.integers(0, Ty, n), src=rng.integers(0, n, E),
                dst=rng.integers(0, n, E), et=rng.integers(0, R, E), Bs=0.4 * _normal(rng, NB, d, h),
                co=_normal(rng, R, NB), Temb=0.3 * _normal(rng, Ty, h),
                W0=0.4 * _normal(rng, d, h), Wo=0.5 * _normal(rng, h, C), lab=rng.integers(0, C, n))


def _snell_inputs(rng, M, R):
    nl = 1.3 + 0.4 * rng.random(M)
    return dict(nl=nl, d=0.5 + rng.random(M), th0=np.linspace(0.1, 0.9, R), n0=1.0,
                ox=rng.random(R), oT=-0.1 * rng.random(R))


def _abcd_inputs(rng, K, R):
    v0 = np.stack([np.linspace(-1.0, 1.0, R), np.zeros(R)], 1)
    return dict(P=0.2 + 0.1 * rng.random(K), g=1.0 + rng.random(K), v0=v0, Pt=0.35, ap=0.9,
                lam=0.5)


def _riccati_inputs(rng, n, T):
    A = np.eye(n) + 0.1 * _normal(rng, n, n)
    Lq = 0.3 * _normal(rng, n, n)
    return dict(A=A, B=_normal(rng, n), Q=Lq @ Lq.T + np.eye(n), R=0.5, Qf=2.0 * np.eye(n),
                x0=_normal(rng, n), steps=np.zeros(T))


def _blp_inputs(rng, J, N, p, q, K):
    sh = 0.6 * rng.dirichlet(np.ones(J))
    X = np.concatenate([np.ones((J, 1)), _normal(rng, J, p - 1)], 1)
    Z = np.concatenate([X, _normal(rng, J, q - p)], 1)
    return dict(sh=sh, pr=1.0 + rng.random(J), nu=_normal(rng, N), X=X, Z=Z, Wg=np.eye(q),
                be=0.3 * _normal(rng, p), sig=0.5, its=np.zeros(K))


def _ces_inputs(rng, F, m, G):
    nest = np.arange(m) % G
    X = np.exp(0.5 * _normal(rng, F, m))
    return dict(X=X, nest=nest, ly=0.3 * _normal(rng, F) + 0.5, lA=0.2, al=0.3 * _normal(rng, m),
                bl=0.3 * _normal(rng, G), r1=0.4, r2=-0.6)


def _mesh(rng, a, b):
    """an a x b grid of vertices cut into triangles, jittered"""
    V = np.array([[i, j] for j in range(b) for i in range(a)], float)
    tri = []
    for j in range(b - 1):
        for i in range(a - 1):
            v = j * a + i
            tri += [[v, v + 1, v + a + 1], [v, v + a + 1, v + a]]
    return V + 0.05 * _normal(rng, len(V), 2), np.array(tri)


def _neo_hookean_inputs(rng, a, b):
    Xr, tri = _mesh(rng, a, b)
    Dm = np.stack([np.stack([Xr[t[1]] - Xr[t[0]], Xr[t[2]] - Xr[t[0]]], 1) for t in tri])
    return dict(x=1.1 * Xr + 0.03 * _normal(rng, len(Xr), 2), tri=tri, Bm=np.linalg.inv(Dm),
                vol=0.5 * np.abs(np.linalg.det(Dm)), mu=1.0, lam=4.0,
                fx=0.1 * _normal(rng, len(Xr), 2))


def _tomography_inputs(rng, h, w):
    cr, cc, ray, sl = [], [], [], []
    r = 0
    for i in range(h):                      # horizontal rays
        cr += [i] * w; cc += list(range(w)); ray += [r] * w; sl += [1.0] * w; r += 1
    for j in range(w):                      # vertical rays
        cr += list(range(h)); cc += [j] * h; ray += [r] * h; sl += [1.0] * h; r += 1
    for o in range(-1, 2):                  # three diagonals
        cells = [(i, i + o) for i in range(h) if 0 <= i + o < w]
        cr += [c[0] for c in cells]; cc += [c[1] for c in cells]
        ray += [r] * len(cells); sl += [np.sqrt(2.0)] * len(cells); r += 1
    pick = np.arange(r) % ((r + 1) // 2)          # one or two candidate paths per pick
    tobs = 2.0 + rng.random(pick.max() + 1)
    return dict(ls=np.full((h, w), np.log(0.5)) + 0.1 * _normal(rng, h, w), cr=np.array(cr),
                cc=np.array(cc), ray=np.array(ray), sl=np.array(sl), pick=pick, tobs=tobs, lam=0.3)


def _variogram_inputs(rng, n, B):
    P = 4.0 * rng.random((n, 2))
    z = np.sin(P[:, 0]) + 0.5 * np.cos(1.3 * P[:, 1]) + 0.2 * _normal(rng, n)
    be = np.linspace(0.0, 4.0, B + 1) + 0.0137
    be[0] = 0.0
    return dict(P=P, z=z, be=be, hb=0.5 * (be[1:] + be[:-1]), ln=np.log(0.05), lsl=np.log(0.5),
                la=np.log(2.0))


def _nmf_inputs(rng, n, m, r, K):
    V = rng.random((n, r)) @ rng.random((r, m)) + 0.1 * rng.random((n, m))
    return dict(V=V, W0=0.5 + rng.random((n, r)), H0=0.5 + rng.random((r, m)), its=np.zeros(K))


def _mfcc_inputs(rng, n, L, K, M, Q):
    fb = np.arange(K) / (2.0 * (K - 1))       # bin frequencies 0 .. 1/2 cycles per sample
    l_ = np.arange(L)
    Cs = np.cos(2 * np.pi * fb[:, None] * l_[None, :])
    Sn = np.sin(2 * np.pi * fb[:, None] * l_[None, :])
    edges = np.linspace(0.0, 0.5, M + 2) + 0.011
    edges[0] = -0.01
    Dc = np.cos(np.pi / M * (np.arange(M)[None, :] + 0.5) * np.arange(Q)[:, None])
    nF = (n - L) // 2 + 1
    return dict(x=_normal(rng, n), win=0.5 - 0.5 * np.cos(2 * np.pi * (l_ + 0.5) / L), Cs=Cs,
                Sn=Sn, fb=fb, lo=edges[:-2], ce=edges[1:-1], hi=edges[2:], Dc=Dc,
                target=_normal(rng, nF, Q))


def _cure_inputs(rng, N, p, q):
    X = np.concatenate([np.ones((N, 1)), _normal(rng, N, p - 1)], 1)
    Z = np.concatenate([np.ones((N, 1)), _normal(rng, N, q - 1)], 1)
    ty = np.arange(N) % 3
    lo = np.where(ty == 2, 0.0, 0.2 + rng.random(N))     # left-censored: no lower bound
    hi = lo + 0.3 + rng.random(N)
    return dict(X=X, Z=Z, lo=lo, hi=hi, ty=ty, be=0.3 * _normal(rng, p), ga=0.3 * _normal(rng, q),
                lk=np.log(1.4))


def _wf_inputs(rng, T, D):
    nn = np.full((T, D), 20.0)
    return dict(p0=0.2 + 0.6 * rng.random(D), s=0.1 * _normal(rng, D), hd=0.4,
                lm=2.0 * np.eye(D) + 0.3 * _normal(rng, D, D), k=rng.binomial(20, 0.4, (T, D)).astype(float),
                nn=nn)


def _idm_inputs(rng, T, N):
    x0 = -np.arange(N) * 20.0
    v0s = 10.0 + 0.5 * _normal(rng, N)
    vl = 10.0 + np.sin(np.arange(T))
    obs = x0[None, :] + 10.0 * np.arange(T)[:, None] * 0.5 + 0.5 * _normal(rng, T, N)
    return dict(x0=x0, v0s=v0s, vl=vl, la=np.log(1.2), lb=np.log(1.8), Th=1.4, s0=2.0, vd=25.0,
                dt=0.5, obs=obs, Lc=4.5)


def _battery_inputs(rng, T, NR, C):
    I = 2.0 + np.sin(0.7 * np.arange(T)) + 0.3 * _normal(rng, T)
    oc = np.array([3.2, 0.9, -0.4, 0.3])[:C]
    return dict(I=I, Vo=3.6 + 0.05 * _normal(rng, T), soc0=0.9, lQ=np.log(3600.0 * 2.0 / 10.0),
                R0=0.02, lR=np.log(np.array([0.015, 0.03]))[:NR], lC=np.log(np.array([200.0, 2000.0]))[:NR],
                oc=oc, dt=10.0)


def _qre_inputs(rng, m, n, K):
    fx, fy = rng.dirichlet(np.ones(m)), rng.dirichlet(np.ones(n))
    return dict(A=_normal(rng, m, n), B=_normal(rng, m, n), ll=0.3, al=0.5, its=np.zeros(K), fx=fx,
                fy=fy)


def _mobile_inputs(rng, Bt, C, h, w, E, Q):
    return dict(X=_normal(rng, Bt, C, h, w), Kd=0.4 * _normal(rng, C, 3, 3), Wp=0.5 * _normal(rng, C, E),
                Wc=_normal(rng, E, Q), y=rng.integers(0, Q, Bt))


PROGRAMS = {
    # ------------------------------------------------------------ epidemiology
    "renewal": dict(src="""
# the renewal equation of an epidemic: incidence at t is R_t times the past incidence
# weighted by the serial interval w (w[s] for a lag of s + 1 steps), R_t = exp(lr[t]) on
# a random walk; H[t, s] holds the incidence s steps before t (a shift register, since
# a recurrence cannot read I[t - 1 - s] with s summed); Poisson reports with ascertainment rho
def renewal(lr: f64[T], w: f64[S], i0: f64, cases: f64[T], rho: f64, sig: f64) -> f64:
    I[t: T] = [t == 0] * i0 + [t >= 1] * exp(lr[t]) * sum[s](w[s] * H[t - 1, s])
    H[t: T, s: S] = [s == 0] * I[t] + [s >= 1 and t >= 1] * H[t - 1, s - 1]
    mu[t] = rho * I[t]
    return -sum[t](cases[t] * log(mu[t]) - mu[t]) + sum[t]([t >= 1] * (lr[t] - lr[t - 1]) ** 2) / (2.0 * sig ** 2)
""", sizes=dict(T=8, S=4), make=_renewal_inputs,
        ref=renewal_ref, note="a shift register over lags inside the recurrence"),

    # ------------------------------------------------------------ hydrology
    "hbv": dict(src="""
# a conceptual rainfall-runoff model (HBV-like): a snow pack fed below the threshold
# temperature TT and melted by degree days, a soil box whose recharge grows as
# (SM / FC) ** beta and whose evaporation is capped at the potential, and a linear
# upper reservoir; 1 - Nash-Sutcliffe efficiency of the discharge after the first step
def hbv(P: f64[T], Tm: f64[T], Ep: f64[T], TT: f64, cfmax: f64, lfc: f64, beta: f64, lp: f64,
        k1: f64, sp0: f64, sm0: f64, suz0: f64, Qo: f64[T]) -> f64:
    fc = exp(lfc)
    sf[t: T] = [Tm[t] < TT] * P[t]
    melt[t: T] = [t >= 1] * min(cfmax * max(Tm[t] - TT, 0.0), SP[t - 1] + sf[t])
    inflow[t: T] = P[t] - sf[t] + melt[t]
    rech[t: T] = [t >= 1] * inflow[t] * (SM[t - 1] / fc) ** beta
    et[t: T] = [t >= 1] * Ep[t] * min(SM[t - 1] / (lp * fc), 1.0)
    q[t: T] = [t >= 1] * k1 * (SUZ[t - 1] + rech[t])
    SP[t: T] = [t == 0] * sp0 + [t >= 1] * (SP[t - 1] + sf[t] - melt[t])
    SM[t: T] = [t == 0] * sm0 + [t >= 1] * (SM[t - 1] + inflow[t] - rech[t] - et[t])
    SUZ[t: T] = [t == 0] * suz0 + [t >= 1] * (SUZ[t - 1] + rech[t] - q[t])
    qm = sum[t]([t >= 1] * Qo[t]) / (T - 1)
    return sum[t]([t >= 1] * (q[t] - Qo[t]) ** 2) / sum[t]([t >= 1] * (Qo[t] - qm) ** 2)
""", sizes=dict(T=10), make=_hbv_inputs,
        ref=hbv_ref, note="a six-member group with min/max kinks and value brackets"),

    # ------------------------------------------------------------ chemistry
    "voigt": dict(src="""
# a spectrum fitted by K pseudo-Voigt peaks (a mix of a Lorentzian and a Gaussian of the
# same half width exp(lw), the mix sigmoid(eta)) on a polynomial baseline evaluated by
# Horner's rule, b[0] the constant term
def voigt(x: f64[n], y: f64[n], A: f64[K], c: f64[K], lw: f64[K], eta: f64[K], b: f64[B]) -> f64:
    u[i, k] = (x[i] - c[k]) / exp(lw[k])
    hb[j: B, i: n] = b[B - 1 - j] + [j >= 1] * x[i] * hb[j - 1, i]
    model[i] = hb[B - 1, i] + sum[k](A[k] * (sigmoid(eta[k]) / (1.0 + u[i, k] ** 2)
                                            + (1.0 - sigmoid(eta[k])) * exp(-0.6931471805599453 * u[i, k] ** 2)))
    return sum[i]((model[i] - y[i]) ** 2)
""", sizes=dict(n=12, K=3, B=3), make=_voigt_inputs,
        ref=voigt_ref, note="Horner's rule as a recurrence beside the peaks"),

    # ------------------------------------------------------------ biology
    "felsenstein": dict(src="""
# Felsenstein's pruning on a balanced binary tree of n = 2 ** D leaves under the
# Jukes-Cantor model, one branch length exp(lt[l]) per level; LL[l, s, v, a] is the log
# partial likelihood of node v of level l (the children of v are 2 v and 2 v + 1 of the
# level below) at site s for state a; the leaves read with an error rate eps
def felsenstein(lt: f64[D], seq: i64[S, n], eps: f64, lpi: f64[4]) -> f64:
    e[l] = exp(-4.0 / 3.0 * exp(lt[l]))
    lP[l, a: 4, b: 4] = log([a == b] * (0.25 + 0.75 * e[l]) + [a != b] * (0.25 - 0.25 * e[l]))
    LL[l: D + 1, s: S, v: n, a: 4] = ([l == 0] * log([a == seq[s, v]] * (1.0 - eps) + [a != seq[s, v]] * eps / 3.0)
        + [l >= 1 and 2 * v + 1 < n] * (logsumexp[b](lP[l - 1, a, b] + LL[l - 1, s, 2 * v, b])
                                       + logsumexp[b](lP[l - 1, a, b] + LL[l - 1, s, 2 * v + 1, b])))
    lpn[a] = lpi[a] - logsumexp[c](lpi[c])
    return -sum[s](logsumexp[a](lpn[a] + LL[D, s, 0, a]))
""", sizes=dict(D=3, S=4), make=_felsenstein_inputs,
        ref=felsenstein_ref, note="a recurrence over tree levels reading 2 v and 2 v + 1, labels compared"),

    "pwm_scan": dict(src="""
# a position weight matrix scanned along DNA (labels 0..3 for A, C, G, T) on both
# strands: the reverse complement of base c is 3 - c, so the other strand's score of a
# window compares c with 3 - seq (a gather must stand alone); a soft maximum over
# positions and strands is the logit of the sequence holding the motif
def pwm_scan(W: f64[L, 4], seq: i64[S, n], y: f64[S], b: f64) -> f64:
    fw[s, p: n - L + 1] = sum[k: L](W[k, seq[s, p + k]])
    rc[s, p: n - L + 1] = sum[k: L, c: 4]([c == 3 - seq[s, p + L - 1 - k]] * W[k, c])
    z[s] = logsumexp[p, d: 2]([d == 0] * fw[s, p] + [d == 1] * rc[s, p]) + b
    return sum[s](softplus(z[s]) - y[s] * z[s])
""", sizes=dict(S=4, n=9, L=4), make=_pwm_inputs,
        ref=pwm_scan_ref, note="a gather at an offset, label arithmetic in a comparison, a two-index logsumexp"),

    # ------------------------------------------------------------ neuroscience
    "spike_glm": dict(src="""
# a Poisson GLM of N neurons' spike counts: stimulus filters K and coupling/history
# filters between every pair of neurons spanned by M basis functions Bf over H lags
# (lag k + 1 reads the counts k + 1 bins back); a ridge penalty on the basis weights
def spike_glm(Y: f64[T, N], X: f64[T, F], K: f64[N, F], A: f64[N, N, M], Bf: f64[H, M],
              bias: f64[N], dt: f64, lam: f64) -> f64:
    eta[t, j] = (bias[j] + sum[f](K[j, f] * X[t, f])
        + sum[i, k, m]([t >= k + 1] * A[j, i, m] * Bf[k, m] * Y[t - 1 - k, i]))
    return sum[t, j](exp(eta[t, j]) * dt - Y[t, j] * eta[t, j]) + lam * sum[j, i, m](A[j, i, m] ** 2)
""", sizes=dict(T=9, N=3, F=2, H=4, M=2), make=_spike_inputs,
        ref=spike_glm_ref, note="a three-factor chain with a guarded shifted read"),

    # ------------------------------------------------------------ time series
    "prophet": dict(src="""
# a Prophet-style decomposition: a piecewise linear trend whose slope changes by dl[c]
# at changepoints s[c] (kept continuous by the offsets -s[c] dl[c]), Fourier terms of
# period per at harmonics fr, and a Laplace prior on the slope changes; the days
# without an observation (obs false) left out of the fit
def prophet(y: f64[T], tt: f64[T], obs: bool[T], s: f64[C], k: f64, m: f64, dl: f64[C], a: f64[F], bb: f64[F],
            fr: f64[F], per: f64, tau: f64) -> f64:
    tr[t] = (k + sum[c]([tt[t] >= s[c]] * dl[c])) * tt[t] + m - sum[c]([tt[t] >= s[c]] * s[c] * dl[c])
    se[t] = sum[f](a[f] * cos(6.283185307179586 * fr[f] * tt[t] / per) + bb[f] * sin(6.283185307179586 * fr[f] * tt[t] / per))
    return sum[t]([obs[t]] * (y[t] - tr[t] - se[t]) ** 2) + tau * sum[c](abs(dl[c]))
""", sizes=dict(T=12, C=3, F=2), make=_prophet_inputs,
        ref=prophet_ref, note="value brackets between two parameters' entries, abs"),
    # ------------------------------------------------------------ ranking and graphs
    "lambdarank": dict(src="""
# a LambdaRank-style pairwise loss over documents grouped by query: each pair of one
# query ordered by relevance (labels compared with labels) costs a logistic loss on the
# score difference, weighted by the gain difference times the discount difference at
# smooth ranks (1 + a sigmoid count of the query's documents scored above), / ideal DCG
def lambdarank(X: f64[n, p], w: f64[p], qid: i64[n], rel: i64[n], gain: f64[n], idcg: f64[Q],
               tau: f64) -> f64:
    s[i] = sum[f](X[i, f] * w[f])
    pos[i] = 1.0 + sum[j]([qid[j] == qid[i] and j != i] * sigmoid((s[j] - s[i]) / tau))
    disc[i] = 1.0 / log(1.0 + pos[i])
    return sum[i, j]([qid[i] == qid[j] and rel[i] > rel[j]] * abs(gain[i] - gain[j]) * abs(disc[i] - disc[j])
                     / idcg[qid[i]] * softplus(s[j] - s[i]))
""", sizes=dict(n=9, p=3, Q=3), make=_lambdarank_inputs,
        ref=lambdarank_ref, note="pairs within a query by label equality and label order"),

    "rgcn": dict(src="""
# one relational graph convolution (R-GCN) with a basis decomposition of the relation
# weights, an embedding of the source node's type added to each message, messages
# normalised by the count of the target's incoming edges of the same relation, a
# self-connection, ReLU and a softmax classifier of the nodes
def rgcn(Xn: f64[n, d], ntype: i64[n], src: i64[E], dst: i64[E], et: i64[E], Bs: f64[NB, d, h],
         co: f64[R, NB], Temb: f64[Ty, h], W0: f64[d, h], Wo: f64[h, C], lab: i64[n]) -> f64:
    Wr[r, a, b] = sum[q](co[r, q] * Bs[q, a, b])
    cnt[v: n, r: R] = sum[e]([dst[e] == v and et[e] == r])
    msg[e, b] = (sum[a](Xn[src[e], a] * Wr[et[e], a, b]) + Temb[ntype[src[e]], b]) / cnt[dst[e], et[e]]
    H[v, b] = max(sum[a](Xn[v, a] * W0[a, b]) + sum[e]([dst[e] == v] * msg[e, b]), 0.0)
    Z[v, c] = sum[b](H[v, b] * Wo[b, c])
    return sum[v](logsumexp[c](Z[v, c]) - Z[v, lab[v]]) / n
""", sizes=dict(n=6, E=12, d=3, h=4, R=3, NB=2, C=3, Ty=2), make=_rgcn_inputs,
        ref=rgcn_ref, note="a count table by two label comparisons gathered as a divisor, a nested gather"),

    # ------------------------------------------------------------ optics
    "snell": dict(src="""
# the sine and cosine of each ray's angle in each layer (indices nl) by Snell's law
# sin(theta_m) = n0 sin(th0) / nl[m], for rays entering from a medium of index n0
def refract(nl: f64[M], th0: f64[R], n0: f64) -> (f64[R, M], f64[R, M]):
    sn[r, m] = n0 * sin(th0[r]) / nl[m]
    cs[r, m] = sqrt(1.0 - sn[r, m] ** 2)
    return sn, cs

# rays through a stack of flat layers of thicknesses d: the lateral shift at the exit
# and the log transmittance through every interface (s-polarised Fresnel coefficients)
# fitted to measurements, inverting for the layers' indices
def snell(nl: f64[M], d: f64[M], th0: f64[R], n0: f64, ox: f64[R], oT: f64[R]) -> f64:
    sn, cs = refract(nl, th0, n0)
    x[r] = sum[m](d[m] * sn[r, m] / cs[r, m])
    rf[r, m] = ([m == 0] * (n0 * cos(th0[r]) - nl[0] * cs[r, 0]) / (n0 * cos(th0[r]) + nl[0] * cs[r, 0])
        + [m >= 1] * (nl[m - 1] * cs[r, m - 1] - nl[m] * cs[r, m]) / (nl[m - 1] * cs[r, m - 1] + nl[m] * cs[r, m]))
    lT[r] = sum[m](log(1.0 - rf[r, m] ** 2))
    return sum[r]((x[r] - ox[r]) ** 2 + (lT[r] - oT[r]) ** 2)
""", sizes=dict(M=4, R=5), make=_snell_inputs,
        ref=snell_ref, note="a bracket picking the first interface, reads one layer back"),

    "abcd_lens": dict(src="""
# paraxial design of a stack of K thin lenses of powers P, each followed by a gap g:
# the system's 2x2 ray transfer matrix as a recurrence over the lenses, the traced rays
# (height, angle) beside it; the system's power against a target, the spot size of
# parallel rays at the end, and a soft aperture penalty on the heights at every lens
def abcd_lens(P: f64[K], g: f64[K], v0: f64[R, 2], Pt: f64, ap: f64, lam: f64) -> f64:
    S[k, a: 2, b: 2] = ([a == 0 and b == 0] * (1.0 - g[k] * P[k]) + [a == 0 and b == 1] * g[k]
                        - [a == 1 and b == 0] * P[k] + [a == 1 and b == 1])
    M[k: K, a: 2, b: 2] = [k == 0] * S[0, a, b] + [k >= 1] * sum[c: 2](S[k, a, c] * M[k - 1, c, b])
    v[k: K, r: R, a: 2] = sum[c: 2](S[k, a, c] * ([k == 0] * v0[r, c] + [k >= 1] * v[k - 1, r, c]))
    h[k: K, r: R] = [k == 0] * v0[r, 0] + [k >= 1] * v[k - 1, r, 0]
    return ((-M[K - 1, 1, 0] - Pt) ** 2 + sum[r](v[K - 1, r, 0] ** 2)
            + lam * sum[k, r](softplus(10.0 * (h[k, r] ** 2 - ap ** 2)) / 10.0))
""", sizes=dict(K=3, R=4), make=_abcd_inputs,
        ref=abcd_lens_ref, note="a 2x2 matrix carried through a recurrence"),

    # ------------------------------------------------------------ control
    "riccati": dict(src="""
# finite-horizon LQR with one input: the Riccati recursion runs backwards from
# P[T] = Qf (gains Kg[t] = (R + B' P B)^-1 B' P A), then the closed loop u = -Kg x runs
# forwards from x0; the quadratic cost of that rollout, as a function of the model
def riccati(A: f64[n, n], B: f64[n], Q: f64[n, n], R: f64, Qf: f64[n, n], x0: f64[n],
            steps: f64[T]) -> f64:
    PB[t: T + 1, i: n] = [t < T] * sum[j](P[t + 1, i, j] * B[j])
    den[t: T + 1] = R + [t < T] * sum[i](B[i] * PB[t, i])
    Kg[t: T + 1, j: n] = [t < T] * sum[i](PB[t, i] * A[i, j]) / den[t]
    P[t: T + 1, i: n, j: n] = [t == T] * Qf[i, j] + [t < T] * (Q[i, j]
        + sum[k, l](A[k, i] * P[t + 1, k, l] * A[l, j]) - sum[k](A[k, i] * PB[t, k]) * Kg[t, j])
    x[t: T + 1, i: n] = [t == 0] * x0[i] + [t >= 1] * sum[j]((A[i, j] - B[i] * Kg[t - 1, j]) * x[t - 1, j])
    u[t: T] = -sum[j](Kg[t, j] * x[t, j])
    return (sum[t: T, i, j](x[t, i] * Q[i, j] * x[t, j]) + R * sum[t](u[t] ** 2)
            + sum[i, j](x[T, i] * Qf[i, j] * x[T, j]))
""", sizes=dict(n=3, T=5), make=_riccati_inputs,
        ref=lambda A, B, Q, R, Qf, x0, steps: riccati_ref(A, B, Q, R, Qf, x0, len(steps)),
        note="a backward matrix recurrence feeding a forward one, T + 1 steps"),

    # ------------------------------------------------------------ economics
    "blp": dict(src="""
# BLP demand estimation in one market: mean utilities dl are recovered from observed
# shares by K - 1 steps of the contraction dl <- dl + log(sh) - log(predicted shares),
# consumers drawn with a random price coefficient sig nu[i] (the outside good's utility
# 0 is the c == J point of a logsumexp over J + 1); the GMM objective of the residuals
def blp(sh: f64[J], pr: f64[J], nu: f64[N], X: f64[J, p], Z: f64[J, q], Wg: f64[q, q], be: f64[p],
        sig: f64, its: f64[K]) -> f64:
    s0 = 1.0 - sum[j](sh[j])
    lden[k: K, i: N] = logsumexp[c: J + 1]([c < J] * (dl[k, c] + sig * nu[i] * pr[c]))
    ls[k: K, j: J] = logsumexp[i](dl[k, j] + sig * nu[i] * pr[j] - lden[k, i]) - log(N)
    dl[k: K, j: J] = [k == 0] * (log(sh[j]) - log(s0)) + [k >= 1] * (dl[k - 1, j] + log(sh[j]) - ls[k - 1, j])
    xi[j] = dl[K - 1, j] - sum[f](X[j, f] * be[f])
    gm[a] = sum[j](Z[j, a] * xi[j])
    return sum[a, b](gm[a] * Wg[a, b] * gm[b])
""", sizes=dict(J=4, N=6, p=2, q=3, K=4), make=_blp_inputs,
        ref=blp_ref, note="a contraction unrolled, logsumexp over J + 1 with a bracket as the outside good"),

    "ces": dict(src="""
# a nested CES production function (inputs grouped into G nests by a label table):
# inner CES aggregates with exponent r1 and shares a softmax within each nest, an outer
# CES over the nests with exponent r2; log output fitted by least squares
def ces(X: f64[F, m], nest: i64[m], ly: f64[F], lA: f64, al: f64[m], bl: f64[G], r1: f64, r2: f64) -> f64:
    a[i] = exp(al[i] - logsumexp[c | nest[c] == nest[i]](al[c]))
    b[g] = exp(bl[g] - logsumexp[h](bl[h]))
    inner[f, g: G] = sum[i]([nest[i] == g] * a[i] * X[f, i] ** r1) ** (1.0 / r1)
    q[f] = lA + log(sum[g](b[g] * inner[f, g] ** r2)) / r2
    return sum[f]((q[f] - ly[f]) ** 2)
""", sizes=dict(F=6, m=5, G=2), make=_ces_inputs,
        ref=ces_ref, note="a logsumexp filtered by labels compared with labels, parameter exponents"),
    # ------------------------------------------------------------ mechanics and geoscience
    "neo_hookean": dict(src="""
# the elastic energy of a deformed triangle mesh under a compressible neo-Hookean law:
# per triangle the deformation gradient F = Ds Bm (Ds the deformed edge vectors through
# the vertex table, Bm the inverse rest edge matrix), W = mu/2 (|F|^2 - 2) - mu log J
# + lam/2 log(J)^2 with J = det F; minus the work of external vertex forces
def neo_hookean(x: f64[V, 2], tri: i64[Tn, 3], Bm: f64[Tn, 2, 2], vol: f64[Tn], mu: f64, lam: f64,
                fx: f64[V, 2]) -> f64:
    Ds[t, a: 2, c: 2] = x[tri[t, c + 1], a] - x[tri[t, 0], a]
    F[t, a: 2, b: 2] = sum[c: 2](Ds[t, a, c] * Bm[t, c, b])
    J[t] = F[t, 0, 0] * F[t, 1, 1] - F[t, 0, 1] * F[t, 1, 0]
    W[t] = 0.5 * mu * (sum[a, b](F[t, a, b] ** 2) - 2.0) - mu * log(J[t]) + 0.5 * lam * log(J[t]) ** 2
    return sum[t](vol[t] * W[t]) - sum[v, a](fx[v, a] * x[v, a])
""", sizes=dict(a=3, b=2), make=_neo_hookean_inputs,
        ref=neo_hookean_ref, note="gathers at an offset label column, a determinant, log J squared"),

    "tomography": dict(src="""
# straight-ray travel-time tomography: each ray is a list of segments (cell row, cell
# column, length) in the slowness grid exp(ls); a picked first arrival is the fastest
# of its candidate rays (pick[r] names the pick of ray r); arrivals fitted to the picks,
# with a smoothness penalty on neighbouring cells
def tomography(ls: f64[h, w], cr: i64[E], cc: i64[E], ray: i64[E], sl: f64[E], pick: i64[R],
               tobs: f64[G], lam: f64) -> f64:
    tt[r: R] = sum[e]([ray[e] == r] * sl[e] * exp(ls[cr[e], cc[e]]))
    first[g: G] = min[r | pick[r] == g](tt[r])
    sm = sum[i, j]([i + 1 < h] * (ls[i + 1, j] - ls[i, j]) ** 2 + [j + 1 < w] * (ls[i, j + 1] - ls[i, j]) ** 2)
    return sum[g]((first[g] - tobs[g]) ** 2) + lam * sm
""", sizes=dict(h=4, w=5), make=_tomography_inputs,
        ref=tomography_ref, note="a scatter by ray of a two-label gather, a min filtered by a label"),

    "variogram": dict(src="""
# fitting a spherical variogram (nugget, sill, range as logs) to the empirical
# semivariogram of scattered data: the pairs i < j binned by distance between the edges
# be (value brackets), the empty bins kept out by a value bracket on the count; Cressie's
# weighted least squares at the bin centres hb
def variogram(P: f64[n, 2], z: f64[n], be: f64[B + 1], hb: f64[B], ln: f64, lsl: f64, la: f64) -> f64:
    d[i, j] = sqrt(sum[c]((P[i, c] - P[j, c]) ** 2))
    cnt[b: B] = sum[i, j]([i < j and be[b] <= d[i, j] and d[i, j] < be[b + 1]])
    ge[b: B] = [cnt[b] > 0.0] * sum[i, j]([i < j and be[b] <= d[i, j] and d[i, j] < be[b + 1]]
                                          * 0.5 * (z[i] - z[j]) ** 2) / cnt[b]
    a = exp(la)
    gm[b] = exp(ln) + exp(lsl) * ([hb[b] < a] * (1.5 * hb[b] / a - 0.5 * (hb[b] / a) ** 3) + [hb[b] >= a])
    return sum[b](cnt[b] * (ge[b] / gm[b] - 1.0) ** 2)
""", sizes=dict(n=8, B=4), make=_variogram_inputs,
        ref=variogram_ref, note="index and value comparisons in one bracket, a size B + 1 parameter, 0/0 under a value bracket"),

    # ------------------------------------------------------------ factorisation
    "nmf_mu": dict(src="""
# non-negative matrix factorisation by K - 1 rounds of Lee and Seung's multiplicative
# updates (H first, then W with the new H), unrolled; the final reconstruction error as
# a function of the initial factors (and of the data)
def nmf_mu(V: f64[n, m], W0: f64[n, r], H0: f64[r, m], its: f64[K]) -> f64:
    H[k: K, a: r, j: m] = ([k == 0] * H0[a, j] + [k >= 1] * H[k - 1, a, j] * sum[i](W[k - 1, i, a] * V[i, j])
                           / sum[b](WtW[k - 1, a, b] * H[k - 1, b, j]))
    WtW[k: K, a: r, b: r] = sum[i](W[k, i, a] * W[k, i, b])
    W[k: K, i: n, a: r] = ([k == 0] * W0[i, a] + [k >= 1] * W[k - 1, i, a] * sum[j](V[i, j] * H[k, a, j])
                           / sum[b](W[k - 1, i, b] * HHt[k, b, a]))
    HHt[k: K, a: r, b: r] = sum[j](H[k, a, j] * H[k, b, j])
    return sum[i, j]((V[i, j] - sum[a](W[K - 1, i, a] * H[K - 1, a, j])) ** 2)
""", sizes=dict(n=5, m=4, r=2, K=4), make=_nmf_inputs,
        ref=nmf_mu_ref, note="four members over whole matrices, quotients of sums in a step"),

    # ------------------------------------------------------------ audio
    "mfcc": dict(src="""
# mel energies: triangular filters over the bin frequencies fb, rising from lo[m] to the
# centre ce[m] and falling to hi[m] (value brackets), applied to a power spectrogram
def melspec(Pw: f64[F, K], fb: f64[K], lo: f64[M], ce: f64[M], hi: f64[M]) -> f64[F, M]:
    Wm[m, k] = ([lo[m] < fb[k] and fb[k] <= ce[m]] * (fb[k] - lo[m]) / (ce[m] - lo[m])
                + [ce[m] < fb[k] and fb[k] < hi[m]] * (hi[m] - fb[k]) / (hi[m] - ce[m]))
    E[f, m] = sum[k](Wm[m, k] * Pw[f, k])
    return E

# MFCCs of frames of L samples at a hop of 2 (windowed, a real DFT by cos/sin tables),
# the log mel energies through a DCT table, fitted to target coefficients
def mfcc(x: f64[n], win: f64[L], Cs: f64[K, L], Sn: f64[K, L], fb: f64[K], lo: f64[M], ce: f64[M],
         hi: f64[M], Dc: f64[Q, M], target: f64[(n - L) / 2 + 1, Q]) -> f64:
    fr[f: (n - L) / 2 + 1, l: L] = x[2 * f + l] * win[l]
    Pw[f, k] = sum[l](Cs[k, l] * fr[f, l]) ** 2 + sum[l](Sn[k, l] * fr[f, l]) ** 2
    E = melspec(Pw, fb, lo, ce, hi)
    cc[f, q] = sum[m](Dc[q, m] * log(E[f, m] + 1e-6))
    return sum[f, q]((cc[f, q] - target[f, q]) ** 2)
""", sizes=dict(n=14, L=6, K=4, M=3, Q=3), make=_mfcc_inputs,
        ref=mfcc_ref, note="strided frames over a derived size, triangles by value brackets, a call"),

    # ------------------------------------------------------------ survival
    "interval_cure": dict(src="""
# a mixture cure model with interval censoring: subject i is cured with probability
# sigmoid(Z ga), else its event time is Weibull (shape exp(lk), scale exp(X be)); ty is 0
# for right-censored at lo, 1 for an event in (lo, hi], 2 for an event before hi
def interval_cure(X: f64[N, p], Z: f64[N, q], lo: f64[N], hi: f64[N], ty: i64[N], be: f64[p],
                  ga: f64[q], lk: f64) -> f64:
    k = exp(lk)
    pc[i] = sigmoid(sum[c](Z[i, c] * ga[c]))
    sc[i] = exp(-sum[c](X[i, c] * be[c]))
    sl[i] = exp(-(lo[i] * sc[i]) ** k)
    sh[i] = exp(-(hi[i] * sc[i]) ** k)
    lik[i] = ([ty[i] == 0] * (pc[i] + (1.0 - pc[i]) * sl[i]) + [ty[i] == 1] * (1.0 - pc[i]) * (sl[i] - sh[i])
              + [ty[i] == 2] * (1.0 - pc[i]) * (1.0 - sh[i]))
    return -sum[i](log(lik[i]))
""", sizes=dict(N=9, p=2, q=2), make=_cure_inputs,
        ref=interval_cure_ref, note="a censoring code compared with constants, a parameter exponent"),

    # ------------------------------------------------------------ population genetics
    "wright_fisher": dict(src="""
# deterministic allele frequencies in D demes: diploid selection (fitnesses 1 + s,
# 1 + hd s, 1) then migration by a row-stochastic matrix (softmax of lm), per
# generation; binomial samples of k alleles out of nn in every deme and generation
def wright_fisher(p0: f64[D], s: f64[D], hd: f64, lm: f64[D, D], k: f64[T, D], nn: f64[T, D]) -> f64:
    Mg[d, e] = exp(lm[d, e] - logsumexp[c](lm[d, c]))
    ps[t: T, d: D] = ((p[t, d] ** 2 * (1.0 + s[d]) + p[t, d] * (1.0 - p[t, d]) * (1.0 + hd * s[d]))
        / (p[t, d] ** 2 * (1.0 + s[d]) + 2.0 * p[t, d] * (1.0 - p[t, d]) * (1.0 + hd * s[d]) + (1.0 - p[t, d]) ** 2))
    p[t: T, d: D] = [t == 0] * p0[d] + [t >= 1] * sum[e](Mg[d, e] * ps[t - 1, e])
    return -sum[t, d](k[t, d] * log(p[t, d]) + (nn[t, d] - k[t, d]) * log(1.0 - p[t, d]))
""", sizes=dict(T=6, D=3), make=_wf_inputs,
        ref=wright_fisher_ref, note="a ratio of polynomials inside a step, a matrix mixing demes"),

    # ------------------------------------------------------------ traffic
    "idm": dict(src="""
# the intelligent driver model: car 0 follows a given speed profile, car i > 0 follows
# car i - 1 (gap less the car length Lc), accelerating by
# am (1 - (v / vd) ** 4 - (s* / gap) ** 2), s* = s0 + v Th + v dv / (2 sqrt(am bc));
# speeds kept non-negative; positions fitted to trajectories (explicit Euler steps)
def idm(x0: f64[N], v0s: f64[N], vl: f64[T], la: f64, lb: f64, Th: f64, s0: f64, vd: f64, dt: f64,
        obs: f64[T, N], Lc: f64) -> f64:
    am = exp(la)
    bc = exp(lb)
    acc[t: T, i: N] = [i >= 1] * am * (1.0 - (v[t, i] / vd) ** 4
        - ((s0 + v[t, i] * Th + v[t, i] * (v[t, i] - v[t, i - 1]) / (2.0 * sqrt(am * bc)))
           / (x[t, i - 1] - x[t, i] - Lc)) ** 2)
    v[t: T, i: N] = [t == 0] * v0s[i] + [t >= 1] * ([i == 0] * vl[t] + [i >= 1] * max(v[t - 1, i] + dt * acc[t - 1, i], 0.0))
    x[t: T, i: N] = [t == 0] * x0[i] + [t >= 1] * (x[t - 1, i] + dt * v[t - 1, i])
    return sum[t, i]([i >= 1] * (x[t, i] - obs[t, i]) ** 2)
""", sizes=dict(T=7, N=4), make=_idm_inputs,
        ref=idm_ref, note="a follower reading its leader in the same step, a ReLU on speeds"),

    # ------------------------------------------------------------ batteries
    "battery_ecm": dict(src="""
# a Thevenin equivalent circuit of a cell: state of charge by coulomb counting, NR RC
# pairs relaxing with exp(-dt / (R C)), the open-circuit voltage a polynomial in the
# state of charge (Horner's rule over the coefficients, oc[0] the constant); the
# terminal voltage fitted to measurements
def battery_ecm(I: f64[T], Vo: f64[T], soc0: f64, lQ: f64, R0: f64, lR: f64[NR], lC: f64[NR],
                oc: f64[C], dt: f64) -> f64:
    soc[t: T] = [t == 0] * soc0 + [t >= 1] * (soc[t - 1] - dt * I[t - 1] / exp(lQ))
    al[j] = exp(-dt / exp(lR[j] + lC[j]))
    vr[t: T, j: NR] = [t >= 1] * (al[j] * vr[t - 1, j] + exp(lR[j]) * (1.0 - al[j]) * I[t - 1])
    hz[c: C, t: T] = oc[C - 1 - c] + [c >= 1] * soc[t] * hz[c - 1, t]
    V[t] = hz[C - 1, t] - R0 * I[t] - sum[j](vr[t, j])
    return sum[t]((V[t] - Vo[t]) ** 2)
""", sizes=dict(T=8, NR=2, C=4), make=_battery_inputs,
        ref=battery_ecm_ref, note="three recurrences, two along t and Horner's along c"),

    # ------------------------------------------------------------ games
    "logit_qre": dict(src="""
# smoothed fictitious play in a bimatrix game: each player moves a step al towards its
# logit best response (rationality exp(ll)) to the other's mixed strategy, from uniform
# play; the cross-entropy of observed play frequencies under the last strategies
def logit_qre(A: f64[m, n], B: f64[m, n], ll: f64, al: f64, its: f64[K], fx: f64[m], fy: f64[n]) -> f64:
    ux[k: K, i: m] = exp(ll) * sum[j](A[i, j] * y[k, j])
    uy[k: K, j: n] = exp(ll) * sum[i](B[i, j] * x[k, i])
    x[k: K, i: m] = [k == 0] / m + [k >= 1] * ((1.0 - al) * x[k - 1, i] + al * exp(ux[k - 1, i] - logsumexp[c](ux[k - 1, c])))
    y[k: K, j: n] = [k == 0] / n + [k >= 1] * ((1.0 - al) * y[k - 1, j] + al * exp(uy[k - 1, j] - logsumexp[c](uy[k - 1, c])))
    return -sum[i](fx[i] * log(x[K - 1, i])) - sum[j](fy[j] * log(y[K - 1, j]))
""", sizes=dict(m=3, n=4, K=5), make=_qre_inputs,
        ref=logit_qre_ref, note="softmaxes of the previous step, a bracket over a size"),

    # ------------------------------------------------------------ vision
    "mobile_block": dict(src="""
# a depthwise 3x3 convolution with dilation 2 and stride 2 (valid, so (h - 5) / 2 + 1
# rows), a pointwise 1x1 convolution with ReLU, global average pooling and a linear
# softmax classifier over a batch of C-channel images
def mobile_block(X: f64[Bt, C, h, w], Kd: f64[C, 3, 3], Wp: f64[C, E], Wc: f64[E, Q], y: i64[Bt]) -> f64:
    D[s, c, r: (h - 5) / 2 + 1, q: (w - 5) / 2 + 1] = sum[a, b](Kd[c, a, b] * X[s, c, 2 * r + 2 * a, 2 * q + 2 * b])
    P[s, e, r, q] = max(sum[c](Wp[c, e] * D[s, c, r, q]), 0.0)
    g[s, e] = sum[r, q](P[s, e, r, q]) / (((h - 5) / 2 + 1) * ((w - 5) / 2 + 1))
    Zl[s, k] = sum[e](g[s, e] * Wc[e, k])
    return sum[s](logsumexp[k](Zl[s, k]) - Zl[s, y[s]]) / Bt
""", sizes=dict(Bt=2, C=2, h=9, w=7, E=3, Q=3), make=_mobile_inputs,
        ref=mobile_block_ref, note="dilated strided reads over derived sizes, sizes as values"),
}


REJECTED = {
    # the renewal equation written as it is printed in papers, I[t] = R_t sum_s w[s]
    # I[t - 1 - s]: a recurrence's step must be a constant (hence the shift register
    # H of "renewal" above)
    "renewal_sum": ("""
def renewal_sum(lr: f64[T], w: f64[S], i0: f64) -> f64:
    I[t: T] = [t == 0] * i0 + [t >= 1] * exp(lr[t]) * sum[s]([t - 1 - s >= 0] * w[s] * I[t - 1 - s])
    return sum[t](I[t])
""", "TLRecurrenceError", "I[t - s - 1] in I does not step by a constant along t (cycle I -> I)", 3),
    # implicit Euler for the heat equation with the Thomas algorithm inside each time
    # step: the forward sweep runs up along i and the back substitution down, in one
    # recurrence group over (t, i)
    "heat_implicit": ("""
def heat_implicit(u0: f64[n], r: f64, steps: f64[T]) -> f64:
    cp[i: n] = -r / (1.0 + 2.0 * r + [i >= 1] * r * cp[i - 1])
    dp[t: T, i: n] = [t >= 1] * (u[t - 1, i] + [i >= 1] * r * dp[t, i - 1]) / (1.0 + 2.0 * r + [i >= 1] * r * cp[i - 1])
    u[t: T, i: n] = [t == 0] * u0[i] + [t >= 1] * (dp[t, i] - [i + 1 < n] * cp[i] * u[t, i + 1])
    return sum[i](u[T - 1, i] ** 2)
""", "TLRecurrenceError", "u[t, i + 1] reads a later step along i, but dp[t, i - 1] in dp reads an earlier one", 5),
    # the reverse complement as arithmetic on a gathered label inside an index (the
    # comparison [c == 3 - seq[...]] of "pwm_scan" is the allowed form)
    "pwm_rc_gather": ("""
def pwm_rc_gather(W: f64[L, 4], seq: i64[S, n], y: f64[S], b: f64) -> f64:
    rc[s, p: n - L + 1] = sum[k: L](W[k, 3 - seq[s, p + L - 1 - k]])
    z[s] = logsumexp[p](rc[s, p]) + b
    return sum[s](softplus(z[s]) - y[s] * z[s])
""", "TLTypeError", "the gather seq[...] must stand alone as an index", 3),
    # Felsenstein's pruning without saying what happens past the last node of a level
    "pruning_guard": ("""
def pruning_guard(lP: f64[D, 4, 4], leaf: f64[S, n, 4]) -> f64:
    LL[l: D + 1, s: S, v: n, a: 4] = ([l == 0] * leaf[s, v, a]
        + [l >= 1] * (logsumexp[b](lP[l - 1, a, b] + LL[l - 1, s, 2 * v, b])
                      + logsumexp[b](lP[l - 1, a, b] + LL[l - 1, s, 2 * v + 1, b])))
    return sum[s](logsumexp[a](LL[D, s, 0, a]))
""", "TLBoundsError", "index 2 of LL may be out of range: 2 * v ranges over 0 .. 2 * n - 2", 4),
    # Fourier harmonics taken from the index itself (an index is not a number; the
    # harmonics are the parameter fr of "prophet")
    "fourier_index": ("""
def fourier_index(y: f64[T], tt: f64[T], a: f64[F], per: f64) -> f64:
    se[t] = sum[f](a[f] * cos(6.283185307179586 * (f + 1) * tt[t] / per))
    return sum[t]((y[t] - se[t]) ** 2)
""", "TLTypeError", "index f used as a value", 3),
    # variogram counts per bin with no range for b: the plain use be[b] gives b the
    # B + 1 edges, so be[b + 1] reads past the last edge
    "variogram_bins": ("""
def variogram_bins(d: f64[n, n], be: f64[B + 1], hb: f64[B]) -> f64:
    cnt[b] = sum[i, j]([i < j and be[b] <= d[i, j] and d[i, j] < be[b + 1]])
    return sum[b: B](cnt[b] * hb[b])
""", "TLBoundsError", "index 0 of be may be out of range: b + 1 ranges over 1 .. B + 1", 3),
}
