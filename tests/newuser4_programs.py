"""A fourth set of programs written from the documentation alone.

Domains the earlier sets (tests/newuser_programs.py, tests/newuser2_programs.py,
tests/newuser3_programs.py) leave out: audio filters (a biquad cascade, LPC
residuals, filterbank energies, a dilated causal stack, spectral magnitudes of
strided frames), vision (SSIM with box means, an image pyramid, bilinear
sampling through i64 tables, volume rendering, a Harris response, GIoU and dice
losses), sequence models (RNN-T, Gotoh's affine-gap alignment, an attention
decoder, ALiBi and relative-position biases, rotary embeddings, capsule routing,
PageRank), graphs (graph attention, message passing with edge features, a
Laplacian penalty), physics (velocity Verlet, Lotka-Volterra by midpoint steps,
upwind Burgers with periodic boundaries, a beam's energy, SPH densities) and
statistics (negative binomial, Plackett-Luce, stochastic volatility, nested
logit, a bivariate normal, non-crossing quantiles, a hierarchical model,
Holt-Winters).  Each entry has the shape of the other sets: the program text
(the function to test is named like the entry), the sizes of the test inputs,
`make(rng, **sizes)`, an independent NumPy version `ref(**inputs)` and a note.
tests/test_newuser4_programs.py checks them.
"""
import numpy as np
from scipy.special import expit as _sigmoid
from scipy.special import logsumexp as _lse

from newuser2_programs import _normal, _softplus


def _log_softmax(Z, axis=-1):
    return Z - _lse(Z, axis=axis, keepdims=True)


# ------------------------------------------------------------------ signals and audio
def _biquad(x, b, a):
    y = np.zeros_like(x)
    for t in range(len(x)):
        v = b[0] * x[t]
        if t >= 1:
            v += b[1] * x[t - 1] - a[0] * y[t - 1]
        if t >= 2:
            v += b[2] * x[t - 2] - a[1] * y[t - 2]
        y[t] = v
    return y


def biquad_ref(x, b1, a1, b2, a2, tgt):
    y = _biquad(_biquad(x, b1, a1), b2, a2)
    return float(np.sum((y - tgt) ** 2))


def lpc_ref(x, a):
    p = len(a)
    n = len(x)
    e = np.array([x[t + p] - sum(a[k] * x[t + p - 1 - k] for k in range(p)) for t in range(n - p)])
    return float(np.sum(e ** 2) / (n - p))


def fbank_ref(x, C, S, M, tgt):
    P = (C @ x) ** 2 + (S @ x) ** 2
    E = np.log(M @ P + 1e-3)
    return float(np.sum((E - tgt) ** 2))


def _dil(h, w, d):
    T = h.shape[1]
    out = np.zeros_like(h)
    for t in range(T):
        out[:, t] = w[:, :, 0] @ h[:, t]
        if t >= d:
            out[:, t] += w[:, :, 1] @ h[:, t - d]
    return out


def wavenet_ref(x, W1, W2, W3, v):
    h = x
    for W, d in ((W1, 1), (W2, 2), (W3, 4)):
        z = _dil(h, W, d)
        h = h + np.tanh(z) * _sigmoid(z)
    return float(np.sum(v[:, None] * h) ** 2 / h.shape[1])


def spec_ref(x, C, S, tgt):
    n = len(x)
    W = C.shape[1]
    F = (n - W) // 2 + 1
    fr = np.array([x[2 * f: 2 * f + W] for f in range(F)])
    mag = np.sqrt((fr @ C.T) ** 2 + (fr @ S.T) ** 2 + 1e-6)
    return float(np.sum(np.abs(np.log(mag) - np.log(tgt))))


def dilconv_ref(x, w):
    K = len(w)
    n = len(x)
    y = np.array([sum(w[k] * x[t - 2 * k] for k in range(K) if t - 2 * k >= 0) for t in range(n)])
    return float(np.sum(np.tanh(y) ** 2))


def _fb_tables(F, W):
    f = np.arange(F)[:, None]
    t = np.arange(W)[None, :]
    win = 0.5 - 0.5 * np.cos(2 * np.pi * t / W)
    return np.cos(2 * np.pi * f * t / W) * win, np.sin(2 * np.pi * f * t / W) * win


def _fbank_inputs(rng, n, F, m):
    C, S = _fb_tables(F, n)
    return dict(x=_normal(rng, n), C=C, S=S, M=rng.random((m, F)), tgt=_normal(rng, m))


def _spec_inputs(rng, n, W, F):
    C, S = _fb_tables(F, W)
    return dict(x=_normal(rng, n), C=C, S=S, tgt=rng.random(((n - W) // 2 + 1, F)) + 0.5)


def holt_ref(y, al, be, ga, l0, b0, s0):
    T = len(y)
    m = len(s0)
    lev, tr, se = np.zeros(T), np.zeros(T), np.zeros(T)
    err = 0.0
    for t in range(T):
        lp = l0 if t == 0 else lev[t - 1]
        bp = b0 if t == 0 else tr[t - 1]
        sp = s0[t] if t < m else se[t - m]
        err += (y[t] - (lp + bp + sp)) ** 2
        lev[t] = al * (y[t] - sp) + (1 - al) * (lp + bp)
        tr[t] = be * (lev[t] - lp) + (1 - be) * bp
        se[t] = ga * (y[t] - lev[t]) + (1 - ga) * sp
    return float(err)


def iir2d_ref(x, a, b, c, d):
    h, w = x.shape
    y = np.zeros_like(x)
    for i in range(h):
        for j in range(w):
            v = x[i, j]
            if i >= 1:
                v += a * y[i - 1, j]
            if j >= 1:
                v += b * y[i, j - 1]
            if i >= 1 and j >= 1:
                v -= c * y[i - 1, j - 1]
            if i >= 2 and j >= 2:
                v += d * y[i - 2, j - 2]
            y[i, j] = v
    return float(np.sum(y ** 2))


# ------------------------------------------------------------------ vision and graphics
def _box(x, k):
    h, w = x.shape
    return np.array([[x[i:i + k, j:j + k].mean() for j in range(w - k + 1)] for i in range(h - k + 1)])


def ssim_ref(x, y, win):
    k = win.shape[0]
    box = lambda z: np.array([[np.sum(win * z[i:i + k, j:j + k])  # noqa: E731
                               for j in range(z.shape[1] - k + 1)] for i in range(z.shape[0] - k + 1)])
    mx, my = box(x), box(y)
    sxx = box(x * x) - mx ** 2
    syy = box(y * y) - my ** 2
    sxy = box(x * y) - mx * my
    c1, c2 = 1e-2, 3e-2
    s = (2 * mx * my + c1) * (2 * sxy + c2) / ((mx ** 2 + my ** 2 + c1) * (sxx + syy + c2))
    return float(1.0 - s.mean())


def _down(x):
    return 0.25 * (x[0::2, 0::2] + x[1::2, 0::2] + x[0::2, 1::2] + x[1::2, 1::2])


def pyramid_ref(img, t1, t2):
    p1 = _down(img)
    p2 = _down(p1)
    return float(np.sum((p1 - t1) ** 2) + 4.0 * np.sum((p2 - t2) ** 2))


def stn_ref(img, y0, y1, x0, x1, fy, fx):
    v = ((1 - fy) * (1 - fx) * img[y0, x0] + fy * (1 - fx) * img[y0 + 1, x0]
         + (1 - fy) * fx * img[y0, x0 + 1] + fy * fx * img[y0 + 1, x0 + 1])
    return float(np.sum(v ** 2))


def _stn_inputs(rng, h, w, P):
    y0 = rng.integers(0, h - 1, P)
    x0 = rng.integers(0, w - 1, P)
    return dict(img=_normal(rng, h, w), y0=y0, y1=y0 + 1, x0=x0, x1=x0 + 1,
                fy=rng.random(P), fx=rng.random(P))


def volrender_ref(sigma, rgb, delta, tgt):
    R, S = sigma.shape
    alpha = 1 - np.exp(-sigma * delta[None, :])
    T = np.ones((R, S))
    for s in range(1, S):
        T[:, s] = T[:, s - 1] * (1 - alpha[:, s - 1])
    col = np.einsum("rs,rs,rsc->rc", T, alpha, rgb)
    return float(np.sum((col - tgt) ** 2))


def harris_ref(img, kap):
    h, w = img.shape
    Ix = np.zeros_like(img)
    Iy = np.zeros_like(img)
    Ix[:, 1:-1] = 0.5 * (img[:, 2:] - img[:, :-2])
    Iy[1:-1, :] = 0.5 * (img[2:, :] - img[:-2, :])

    def box3(z):
        out = np.zeros_like(z)
        for i in range(h):
            for j in range(w):
                out[i, j] = z[max(i - 1, 0):i + 2, max(j - 1, 0):j + 2].sum()
        return out
    A, B, C = box3(Ix * Ix), box3(Iy * Iy), box3(Ix * Iy)
    R = A * B - C * C - kap * (A + B) ** 2
    return float(np.sum(_softplus(R)))


def giou_ref(P, G):
    x1 = np.maximum(P[:, 0], G[:, 0])
    y1 = np.maximum(P[:, 1], G[:, 1])
    x2 = np.minimum(P[:, 2], G[:, 2])
    y2 = np.minimum(P[:, 3], G[:, 3])
    inter = np.maximum(x2 - x1, 0) * np.maximum(y2 - y1, 0)
    ap = (P[:, 2] - P[:, 0]) * (P[:, 3] - P[:, 1])
    ag = (G[:, 2] - G[:, 0]) * (G[:, 3] - G[:, 1])
    union = ap + ag - inter
    cw = np.maximum(P[:, 2], G[:, 2]) - np.minimum(P[:, 0], G[:, 0])
    ch = np.maximum(P[:, 3], G[:, 3]) - np.minimum(P[:, 1], G[:, 1])
    hull = cw * ch
    giou = inter / union - (hull - union) / hull
    return float(np.mean(1 - giou))


def _boxes(rng, N):
    lo = rng.random((N, 2))
    return np.concatenate([lo, lo + 0.3 + rng.random((N, 2))], axis=1)


def dice_ref(Z, y):
    P = np.exp(_log_softmax(Z))
    K = Z.shape[1]
    Y = np.eye(K)[y]
    num = 2 * np.sum(P * Y, axis=0) + 1.0
    den = np.sum(P, axis=0) + np.sum(Y, axis=0) + 1.0
    return float(np.mean(1 - num / den))


# ------------------------------------------------------------------ sequence models
def rnnt_ref(Z, y):
    lp = _log_softmax(Z)
    T, U1, _ = Z.shape
    a = np.zeros((T, U1))
    for t in range(T):
        for u in range(U1):
            c = []
            if t >= 1:
                c.append(a[t - 1, u] + lp[t - 1, u, 0])
            if u >= 1:
                c.append(a[t, u - 1] + lp[t, u - 1, y[u - 1]])
            a[t, u] = _lse(c) if c else 0.0
    return float(-(a[T - 1, U1 - 1] + lp[T - 1, U1 - 1, 0]))


def gotoh_ref(A, B, go, ge, g):
    n, m = len(A), len(B)
    S = A @ B.T
    NEG = -1e4
    M = np.zeros((n, m))
    X = np.zeros((n, m))
    Y = np.zeros((n, m))
    sm = lambda v: g * _lse(np.array(v) / g)  # noqa: E731
    for i in range(n):
        for j in range(m):
            if i == 0 and j == 0:
                M[i, j] = S[0, 0]
            elif i >= 1 and j >= 1:
                M[i, j] = S[i, j] + sm([M[i - 1, j - 1], X[i - 1, j - 1], Y[i - 1, j - 1]])
            else:
                M[i, j] = NEG
            X[i, j] = sm([M[i - 1, j] - go, X[i - 1, j] - ge]) if i >= 1 else NEG
            Y[i, j] = sm([M[i, j - 1] - go, Y[i, j - 1] - ge]) if j >= 1 else NEG
    return float(sm([M[n - 1, m - 1], X[n - 1, m - 1], Y[n - 1, m - 1]]))


def attdec_ref(enc, Wa, Ws, Wc, s0, tgt):
    T = tgt.shape[0]
    d = s0.shape[0]
    s = np.zeros((T, d))
    ctx = np.zeros((T, enc.shape[1]))
    loss = 0.0
    prev = s0
    for t in range(T):
        sc = enc @ (Wa.T @ prev)
        a = np.exp(sc - _lse(sc))
        ctx[t] = a @ enc
        s[t] = np.tanh(Ws @ prev + Wc @ ctx[t])
        prev = s[t]
        loss += np.sum((s[t] - tgt[t]) ** 2)
    return float(loss)


def alibi_ref(Q, K, V, pos, slope, rel):
    n, d = Q.shape
    S = Q @ K.T / np.sqrt(d)
    out = np.zeros_like(V)
    for i in range(n):
        sc = np.array([S[i, j] - slope * (i - j) + rel[i - j + n - 1] for j in range(i + 1)])
        p = np.exp(sc - _lse(sc))
        out[i] = p @ V[:i + 1]
    return float(np.sum(out ** 2))


def _rope(X, cos, sin):
    e, o = X[:, 0::2], X[:, 1::2]
    out = np.empty_like(X)
    out[:, 0::2] = e * cos - o * sin
    out[:, 1::2] = e * sin + o * cos
    return out


def rope_ref(Q, K, cs, sn):
    q, k = _rope(Q, cs, sn), _rope(K, cs, sn)
    S = q @ k.T
    return float(np.sum(_lse(S, axis=1)) - np.trace(S))


def _rope_inputs(rng, n, d):
    pos = np.arange(n)[:, None]
    freq = 1.0 / 10.0 ** (np.arange(d // 2)[None, :] / (d // 2))
    return dict(Q=_normal(rng, n, d), K=_normal(rng, n, d), cs=np.cos(pos * freq), sn=np.sin(pos * freq))


def pagerank_ref(src, dst, w, d, tgt, K):
    n = len(tgt)
    p = np.full(n, 1.0 / n)
    for k in range(len(K)):
        if k >= 1:
            q = np.zeros(n)
            np.add.at(q, dst, w * p[src])
            p = (1 - d) / n + d * q
    return float(np.sum((p - tgt) ** 2))


def _graph(rng, n, E):
    src = rng.integers(0, n, E)
    dst = rng.integers(0, n, E)
    src[:n] = np.arange(n)           # a self loop each: every node has an incoming edge
    dst[:n] = np.arange(n)
    return src, dst


def _pagerank_inputs(rng, n, E, k):
    src, dst = _graph(rng, n, E)
    return dict(src=src, dst=dst, w=rng.random(E) / 2, d=0.85, tgt=rng.random(n) / n, K=np.zeros(k))


def capsule_ref(U, R):
    Ni, Nj, D = U.shape
    b = np.zeros((Ni, Nj))
    for r in range(len(R)):
        c = np.exp(b - _lse(b, axis=1, keepdims=True))
        s = np.einsum("ij,ijd->jd", c, U)
        n2 = np.sum(s ** 2, axis=1, keepdims=True)
        v = n2 / (1 + n2) * s / np.sqrt(n2 + 1e-9)
        b = b + np.einsum("ijd,jd->ij", U, v)
    return float(np.sum(v ** 2))


# ------------------------------------------------------------------ graphs
def gat_ref(H, W, a1, a2, src, dst):
    Wh = H @ W
    e = Wh[src] @ a1 + Wh[dst] @ a2
    e = np.where(e > 0, e, 0.2 * e)
    n = H.shape[0]
    out = np.zeros((n, W.shape[1]))
    for i in range(n):
        ks = np.where(dst == i)[0]
        al = np.exp(e[ks] - _lse(e[ks]))
        out[i] = al @ Wh[src[ks]]
    return float(np.sum(np.tanh(out) ** 2))


def _gat_inputs(rng, n, E, d, c):
    src, dst = _graph(rng, n, E)
    return dict(H=_normal(rng, n, d), W=_normal(rng, d, c) / 2, a1=_normal(rng, c), a2=_normal(rng, c),
                src=src, dst=dst)


def mpnn_ref(H, ef, Wm, We, src, dst, v):
    def layer(h):
        m = np.maximum(h[src] @ Wm.T + ef @ We.T, 0.0)
        agg = np.zeros_like(h)
        np.add.at(agg, dst, m)
        return np.tanh(h + agg)
    h2 = layer(layer(H))
    return float(np.sum(h2 @ v))


def _mpnn_inputs(rng, n, E, d, f):
    src, dst = _graph(rng, n, E)
    return dict(H=_normal(rng, n, d), ef=_normal(rng, E, f), Wm=_normal(rng, d, d) / 2,
                We=_normal(rng, d, f) / 2, src=src, dst=dst, v=_normal(rng, d))


def lapeig_ref(Y, src, dst, w, mu):
    sm = np.sum(w[:, None] * (Y[src] - Y[dst]) ** 2)
    G = Y.T @ Y
    return float(sm + mu * np.sum((G - np.eye(Y.shape[1])) ** 2))


# ------------------------------------------------------------------ physics and engineering
def verlet_ref(x0, v0, kk, dt, T):
    def acc(x):
        a = -2 * x
        a[1:] += x[:-1]
        a[:-1] += x[1:]
        return kk * a
    x, v = x0.copy(), v0.copy()
    a = acc(x)
    for _ in range(len(T) - 1):
        x = x + dt * v + 0.5 * dt ** 2 * a
        an = acc(x)
        v = v + 0.5 * dt * (a + an)
        a = an
    return float(0.5 * np.sum(v ** 2) - 0.5 * np.sum(x * a))


def lotka_ref(u0, v0, th, h, T):
    a, b, c, d = np.exp(th)
    u, v = u0, v0
    us = [u]
    for _ in range(len(T) - 1):
        um = u + 0.5 * h * (a * u - b * u * v)
        vm = v + 0.5 * h * (d * u * v - c * v)
        u, v = u + h * (a * um - b * um * vm), v + h * (d * um * vm - c * vm)
        us.append(u)
    return float(np.sum(np.array(us) ** 2) + v ** 2)


def burgers_ref(u0, nu, dt, T):
    n = len(u0)
    u = u0.copy()
    for _ in range(len(T) - 1):
        um = np.roll(u, 1)
        up = np.roll(u, -1)
        adv = np.where(u > 0, u * (u - um), u * (up - u))
        u = u - dt * adv + nu * dt * (up - 2 * u + um)
    return float(np.sum(u ** 2) / n)


def beam_ref(w, EI, q, hh):
    curv = w[:-2] - 2 * w[1:-1] + w[2:]
    return float(0.5 * EI * np.sum(curv ** 2) / hh ** 3 - hh * np.sum(q * w) + 100.0 * (w[0] ** 2 + w[-1] ** 2))


def sph_ref(X, m, pi, pj, hh, rho0):
    r2 = np.sum((X[pi] - X[pj]) ** 2, axis=1)
    wk = np.maximum(hh ** 2 - r2, 0.0) ** 3
    rho = m * hh ** 6
    np.add.at(rho, pi, m[pj] * wk)
    return float(np.sum((rho - rho0) ** 2))


def _sph_inputs(rng, n, P):
    pi = rng.integers(0, n, P)
    pj = rng.integers(0, n, P)
    return dict(X=rng.random((n, 2)), m=rng.random(n) + 0.5, pi=pi, pj=pj, hh=0.9, rho0=0.5)


# ------------------------------------------------------------------ statistics and economics
def negbin_ref(X, w, rho, y):
    mu = np.exp(X @ w)
    r = _softplus(rho)
    lg = np.array([sum(np.log(r + k) for k in range(yy)) for yy in y])
    ll = lg + r * np.log(r / (r + mu)) + y * np.log(mu / (r + mu))
    return float(-np.sum(ll))


def plackett_ref(s, rank):
    N, m = rank.shape
    tot = 0.0
    for a in range(N):
        v = s[rank[a]]
        for p in range(m):
            tot += v[p] - _lse(v[p:])
    return float(-tot)


def _plackett_inputs(rng, I, N, m):
    return dict(s=_normal(rng, I), rank=np.array([rng.permutation(I)[:m] for _ in range(N)]))


def stochvol_ref(y, eps, mu, phi, sig):
    T = len(y)
    h = np.zeros(T)
    for t in range(T):
        h[t] = mu + sig * eps[t] + (phi * (h[t - 1] - mu) if t >= 1 else 0.0)
    return float(np.sum(0.5 * h + 0.5 * y ** 2 * np.exp(-h)) + 0.5 * np.sum(eps ** 2))


def nlogit_ref(X, beta, lam, nest, ch):
    V = X @ beta
    N, J = V.shape
    G = len(lam)
    IV = np.array([[_lse(V[n, nest == g] / lam[g]) for g in range(G)] for n in range(N)])
    top = _lse(lam[None, :] * IV, axis=1)
    lp = V / lam[nest][None, :] - IV[:, nest] + lam[nest][None, :] * IV[:, nest] - top[:, None]
    return float(-np.sum(lp[np.arange(N), ch]))


def _nlogit_inputs(rng, N, J, p, G):
    nest = np.arange(J) % G
    return dict(X=_normal(rng, N, J, p), beta=_normal(rng, p), lam=0.5 + 0.4 * rng.random(G),
                nest=nest, ch=rng.integers(0, J, N))


def binorm_ref(x, y, mx, my, lsx, lsy, z):
    r = np.tanh(z)
    sx, sy = np.exp(lsx), np.exp(lsy)
    a = (x - mx) / sx
    b = (y - my) / sy
    q = (a ** 2 - 2 * r * a * b + b ** 2) / (1 - r ** 2)
    return float(np.sum(lsx + lsy + 0.5 * np.log(1 - r ** 2) + 0.5 * q))


def quantreg_ref(X, W, y, tau, s):
    Q = X @ W
    r = y[:, None] - Q
    pin = tau[None, :] * r + s * _softplus(-r / s)
    pen = np.maximum(Q[:, :-1] - Q[:, 1:], 0.0) ** 2
    return float(np.sum(pin) / len(y) + 10.0 * np.sum(pen))


def hier_ref(y, grp, mu, theta, ltau, lsig):
    tau, sig = np.exp(ltau), np.exp(lsig)
    lp = -0.5 * np.sum((y - theta[grp]) ** 2) / sig ** 2 - len(y) * lsig
    lp += -0.5 * np.sum((theta - mu) ** 2) / tau ** 2 - len(theta) * ltau
    lp += -0.5 * mu ** 2 - 0.5 * tau ** 2 - 0.5 * sig ** 2 + ltau + lsig
    return float(-lp)


def hausdorff_ref(A, B):
    D = np.sum((A[:, None, :] - B[None, :, :]) ** 2, axis=2)
    return float(max(D.min(axis=1).max(), D.min(axis=0).max()) + _lse(-D.min(axis=1)))


def strided_ref(x, w):
    K, n = len(w), len(x)
    y = np.array([np.dot(w, x[2 * i:2 * i + K]) for i in range((n - K) // 2 + 1)])
    return float(np.sum(y ** 2) + np.sum(x[1::2] * x[0::2]))


def vae_ref(X, We, Wmu, Wlv, Wd, eps):
    h = np.tanh(X @ We)
    mu = h @ Wmu
    lv = h @ Wlv
    z = mu + np.exp(0.5 * lv) * eps
    xr = _sigmoid(z @ Wd)
    rec = -np.sum(X * np.log(xr) + (1 - X) * np.log(1 - xr))
    kl = -0.5 * np.sum(1 + lv - mu ** 2 - np.exp(lv))
    return float((rec + kl) / X.shape[0])


PROGRAMS = {
    # -------------------------------------------------------------- signals and audio
    "biquad": dict(src="""
# a cascade of two biquad sections (direct form I), each a second-order recurrence
def section(x: f64[T], b: f64[3], a: f64[2]) -> f64[T]:
    y[t: T] = b[0] * x[t] + [t >= 1] * (b[1] * x[t - 1] - a[0] * y[t - 1]) + [t >= 2] * (b[2] * x[t - 2] - a[1] * y[t - 2])
    return y

def cascade(x: f64[T], b1: f64[3], a1: f64[2], b2: f64[3], a2: f64[2]) -> f64[T]:
    y1 = section(x, b1, a1)
    y2 = section(y1, b2, a2)
    return y2

def biquad(x: f64[T], b1: f64[3], a1: f64[2], b2: f64[3], a2: f64[2], tgt: f64[T]) -> f64:
    y = cascade(x, b1, a1, b2, a2)
    return sum[t]((y[t] - tgt[t]) ** 2)
""", sizes=dict(T=12), make=lambda rng, T: dict(
            x=_normal(rng, T), b1=np.array([0.3, 0.4, 0.2]), a1=np.array([-0.5, 0.2]),
            b2=np.array([0.5, -0.1, 0.3]), a2=np.array([0.3, 0.1]), tgt=_normal(rng, T)),
        ref=biquad_ref, note="two calls of a second-order recurrence, chained"),

    "lpc": dict(src="""
# the residual energy of a linear predictor of order p: ranges n - p
def lpc(x: f64[n], a: f64[p]) -> f64:
    e[t: n - p] = x[t + p] - sum[k](a[k] * x[t + p - 1 - k])
    return sum[t](e[t] ** 2) / (n - p)
""", sizes=dict(n=14, p=3), make=lambda rng, n, p: dict(x=_normal(rng, n), a=_normal(rng, p) / 3),
        ref=lpc_ref, note="range n - p, reads t + p - 1 - k"),

    "fbank": dict(src="""
# log filterbank energies of a windowed DFT given by cos/sin tables
def power(x: f64[n], C: f64[F, n], S: f64[F, n]) -> f64[F]:
    re[f] = sum[t](C[f, t] * x[t])
    im[f] = sum[t](S[f, t] * x[t])
    P[f] = re[f] ** 2 + im[f] ** 2
    return P

def fbank(x: f64[n], C: f64[F, n], S: f64[F, n], M: f64[m, F], tgt: f64[m]) -> f64:
    P = power(x, C, S)
    E[b] = log(sum[f](M[b, f] * P[f]) + 0.001)
    return sum[b]((E[b] - tgt[b]) ** 2)
""", sizes=dict(n=16, F=6, m=4), make=_fbank_inputs, ref=fbank_ref, note="log of a matrix-vector product of a power spectrum"),

    "wavenet": dict(src="""
# a WaveNet-style stack of gated dilated causal convolutions with residuals (dilations 1, 2, 4)
def gated(h: f64[c, T], W: f64[c, c, 2], z: f64[c, T]) -> f64[c, T]:
    o[i, t] = h[i, t] + tanh(z[i, t]) * sigmoid(z[i, t])
    return o

def wavenet(x: f64[c, T], W1: f64[c, c, 2], W2: f64[c, c, 2], W3: f64[c, c, 2], v: f64[c]) -> f64:
    z1[i, t] = sum[j](W1[i, j, 0] * x[j, t] + [t >= 1] * W1[i, j, 1] * x[j, t - 1])
    h1 = gated(x, W1, z1)
    z2[i, t] = sum[j](W2[i, j, 0] * h1[j, t] + [t >= 2] * W2[i, j, 1] * h1[j, t - 2])
    h2 = gated(h1, W2, z2)
    z3[i, t] = sum[j](W3[i, j, 0] * h2[j, t] + [t >= 4] * W3[i, j, 1] * h2[j, t - 4])
    h3 = gated(h2, W3, z3)
    return sum[i, t](v[i] * h3[i, t]) ** 2 / T
""", sizes=dict(c=3, T=10), make=lambda rng, c, T: dict(
            x=_normal(rng, c, T), W1=_normal(rng, c, c, 2) / 2, W2=_normal(rng, c, c, 2) / 2,
            W3=_normal(rng, c, c, 2) / 2, v=_normal(rng, c)),
        ref=wavenet_ref, note="three dilations as separate statements, a call with an unused parameter"),

    "spec": dict(src="""
# log-magnitude spectral loss of strided frames (hop 2) through windowed cos/sin tables
def spec(x: f64[n], C: f64[F, W], S: f64[F, W], tgt: f64[(n - W) / 2 + 1, F]) -> f64:
    re[f: (n - W) / 2 + 1, b: F] = sum[t](C[b, t] * x[2 * f + t])
    im[f: (n - W) / 2 + 1, b: F] = sum[t](S[b, t] * x[2 * f + t])
    mag[f, b] = sqrt(re[f, b] ** 2 + im[f, b] ** 2 + 0.000001)
    return sum[f, b](abs(log(mag[f, b]) - log(tgt[f, b])))
""", sizes=dict(n=17, W=5, F=3), make=_spec_inputs, ref=spec_ref,
        note="a derived size in a parameter type and in ranges, a strided read"),

    "dilconv": dict(src="""
# a dilated causal filter written with the dilation inside the index, x[t - 2 * k]
def dilconv(x: f64[n], w: f64[K]) -> f64:
    y[t: n] = sum[k]([t - 2 * k >= 0] * w[k] * x[t - 2 * k])
    return sum[t](tanh(y[t]) ** 2)
""", sizes=dict(n=11, K=3), make=lambda rng, n, K: dict(x=_normal(rng, n), w=_normal(rng, K)),
        ref=dilconv_ref, note="dilated read guarded by a bracket"),

    "holt4": dict(src="""
# Holt-Winters with a season of 4 written as a constant: three states stepping together
def holt4(y: f64[T], al: f64, be: f64, ga: f64, l0: f64, b0: f64, s0: f64[4]) -> f64:
    lp[t: T] = [t == 0] * l0 + [t >= 1] * lev[t - 1]
    bp[t: T] = [t == 0] * b0 + [t >= 1] * tr[t - 1]
    sp[t: T] = [t < 4] * s0[t] + [t >= 4] * se[t - 4]
    lev[t: T] = al * (y[t] - sp[t]) + (1.0 - al) * (lp[t] + bp[t])
    tr[t: T] = be * (lev[t] - lp[t]) + (1.0 - be) * bp[t]
    se[t: T] = ga * (y[t] - lev[t]) + (1.0 - ga) * sp[t]
    return sum[t]((y[t] - lp[t] - bp[t] - sp[t]) ** 2)
""", sizes=dict(T=12), make=lambda rng, T: dict(
            y=_normal(rng, T), al=0.3, be=0.2, ga=0.4, l0=0.1, b0=0.05, s0=_normal(rng, 4) / 2),
        ref=holt_ref, note="six statements in one group, reads one and four steps back"),

    "iir2d": dict(src="""
# a 2-D recursive filter reading one and two steps back along both axes
def iir2d(x: f64[h, w], a: f64, b: f64, c: f64, d: f64) -> f64:
    y[i: h, j: w] = x[i, j] + [i >= 1] * a * y[i - 1, j] + [j >= 1] * b * y[i, j - 1] - [i >= 1 and j >= 1] * c * y[i - 1, j - 1] + [i >= 2 and j >= 2] * d * y[i - 2, j - 2]
    return sum[i, j](y[i, j] ** 2)
""", sizes=dict(h=6, w=7), make=lambda rng, h, w: dict(x=_normal(rng, h, w), a=0.4, b=0.3, c=0.1, d=0.05),
        ref=iir2d_ref, note="two-index recurrence, two back along both"),

    # -------------------------------------------------------------- vision and graphics
    "ssim": dict(src="""
# 1 - mean SSIM with weighted local means over k x k windows (valid ranges h - k + 1)
def boxmean(x: f64[h, w], win: f64[k, k]) -> f64[h - k + 1, w - k + 1]:
    m[i: h - k + 1, j: w - k + 1] = sum[a, b](win[a, b] * x[i + a, j + b])
    return m

def ssim(x: f64[h, w], y: f64[h, w], win: f64[k, k]) -> f64:
    mx = boxmean(x, win)
    my = boxmean(y, win)
    xx[i, j] = x[i, j] * x[i, j]
    yy[i, j] = y[i, j] * y[i, j]
    xy[i, j] = x[i, j] * y[i, j]
    mxx = boxmean(xx, win)
    myy = boxmean(yy, win)
    mxy = boxmean(xy, win)
    s[i, j] = (2.0 * mx[i, j] * my[i, j] + 0.01) * (2.0 * (mxy[i, j] - mx[i, j] * my[i, j]) + 0.03) / ((mx[i, j] ** 2 + my[i, j] ** 2 + 0.01) * (mxx[i, j] - mx[i, j] ** 2 + myy[i, j] - my[i, j] ** 2 + 0.03))
    return 1.0 - sum[i, j](s[i, j]) / ((h - k + 1) * (w - k + 1))
""", sizes=dict(h=7, w=8, k=3), make=lambda rng, h, w, k: dict(
            x=rng.random((h, w)), y=rng.random((h, w)), win=np.full((k, k), 1.0 / k ** 2)),
        ref=ssim_ref, note="five calls returning a derived-size tensor, a derived size as a value"),

    "pyramid": dict(src="""
# a two-level 2x2 average pyramid, each level matched to a target
def down(x: f64[n, m]) -> f64[n / 2, m / 2]:
    p[i: n / 2, j: m / 2] = 0.25 * (x[2 * i, 2 * j] + x[2 * i + 1, 2 * j] + x[2 * i, 2 * j + 1] + x[2 * i + 1, 2 * j + 1])
    return p

def pyramid(img: f64[h, w], t1: f64[h / 2, w / 2], t2: f64[h / 4, w / 4]) -> f64:
    p1 = down(img)
    p2 = down(p1)
    return sum[i, j]((p1[i, j] - t1[i, j]) ** 2) + 4.0 * sum[i, j]((p2[i, j] - t2[i, j]) ** 2)
""", sizes=dict(h=8, w=12), make=lambda rng, h, w: dict(
            img=_normal(rng, h, w), t1=_normal(rng, h // 2, w // 2), t2=_normal(rng, h // 4, w // 4)),
        ref=pyramid_ref, note="a call of a call with n / 2: (h / 2) / 2 against h / 4"),

    "stn": dict(src="""
# bilinear sampling at given points through i64 tables of the corner rows and columns
def stn(img: f64[h, w], y0: i64[P], y1: i64[P], x0: i64[P], x1: i64[P], fy: f64[P], fx: f64[P]) -> f64:
    v[p] = (1.0 - fy[p]) * (1.0 - fx[p]) * img[y0[p], x0[p]] + fy[p] * (1.0 - fx[p]) * img[y1[p], x0[p]] + (1.0 - fy[p]) * fx[p] * img[y0[p], x1[p]] + fy[p] * fx[p] * img[y1[p], x1[p]]
    return sum[p](v[p] ** 2)
""", sizes=dict(h=5, w=6, P=9), make=_stn_inputs, ref=stn_ref, note="four two-level gathers"),

    "volrender": dict(src="""
# volume rendering along rays: transmittance as a cumulative product, alpha compositing
def volrender(sigma: f64[R, S], rgb: f64[R, S, 3], delta: f64[S], tgt: f64[R, 3]) -> f64:
    alpha[r, s] = 1.0 - exp(-sigma[r, s] * delta[s])
    Tr[s: S, r: R] = [s == 0] + [s >= 1] * Tr[s - 1, r] * (1.0 - alpha[r, s - 1])
    col[r, c] = sum[s](Tr[s, r] * alpha[r, s] * rgb[r, s, c])
    return sum[r, c]((col[r, c] - tgt[r, c]) ** 2)
""", sizes=dict(R=4, S=7), make=lambda rng, R, S: dict(
            sigma=rng.random((R, S)) * 2, rgb=rng.random((R, S, 3)), delta=rng.random(S) * 0.5,
            tgt=rng.random((R, 3))),
        ref=volrender_ref, note="a product recurrence, a literal dimension"),

    "harris": dict(src="""
# a Harris corner response: central differences, a 3 x 3 box sum of the structure tensor
def box3(z: f64[h, w]) -> f64[h, w]:
    b[i: h, j: w] = sum[a: 3, c: 3]([0 <= i + a - 1 < h and 0 <= j + c - 1 < w] * z[i + a - 1, j + c - 1])
    return b

def harris(img: f64[h, w], kap: f64) -> f64:
    Ix[i: h, j: w] = [1 <= j and j + 1 < w] * 0.5 * (img[i, j + 1] - img[i, j - 1])
    Iy[i: h, j: w] = [1 <= i and i + 1 < h] * 0.5 * (img[i + 1, j] - img[i - 1, j])
    ixx[i, j] = Ix[i, j] * Ix[i, j]
    iyy[i, j] = Iy[i, j] * Iy[i, j]
    ixy[i, j] = Ix[i, j] * Iy[i, j]
    A = box3(ixx)
    B = box3(iyy)
    C = box3(ixy)
    return sum[i, j](softplus(A[i, j] * B[i, j] - C[i, j] ** 2 - kap * (A[i, j] + B[i, j]) ** 2))
""", sizes=dict(h=6, w=7), make=lambda rng, h, w: dict(img=_normal(rng, h, w), kap=0.05),
        ref=harris_ref, note="box sums guarded by chained brackets, softplus"),

    "giou": dict(src="""
# the generalized IoU loss of predicted and ground-truth boxes (x1, y1, x2, y2)
def area(B: f64[N, 4]) -> f64[N]:
    a[i] = (B[i, 2] - B[i, 0]) * (B[i, 3] - B[i, 1])
    return a

def giou(P: f64[N, 4], G: f64[N, 4]) -> f64:
    ap = area(P)
    ag = area(G)
    iw[i] = max(min(P[i, 2], G[i, 2]) - max(P[i, 0], G[i, 0]), 0.0)
    ih[i] = max(min(P[i, 3], G[i, 3]) - max(P[i, 1], G[i, 1]), 0.0)
    inter[i] = iw[i] * ih[i]
    uni[i] = ap[i] + ag[i] - inter[i]
    hull[i] = (max(P[i, 2], G[i, 2]) - min(P[i, 0], G[i, 0])) * (max(P[i, 3], G[i, 3]) - min(P[i, 1], G[i, 1]))
    return sum[i](1.0 - inter[i] / uni[i] + (hull[i] - uni[i]) / hull[i]) / N
""", sizes=dict(N=6), make=lambda rng, N: dict(P=_boxes(rng, N), G=_boxes(rng, N)),
        ref=giou_ref, note="nested min/max builtins on literal columns"),

    "dice": dict(src="""
# soft multi-class dice loss of softmax probabilities against i64 labels
def dice(Z: f64[N, K], y: i64[N]) -> f64:
    P[p, c] = exp(Z[p, c] - logsumexp[j](Z[p, j]))
    num[c] = 2.0 * sum[p]([c == y[p]] * P[p, c]) + 1.0
    den[c] = sum[p](P[p, c] + [c == y[p]]) + 1.0
    return sum[c](1.0 - num[c] / den[c]) / K
""", sizes=dict(N=9, K=3), make=lambda rng, N, K: dict(Z=_normal(rng, N, K), y=rng.integers(0, K, N)),
        ref=dice_ref, note="a bracket on a label as a value inside a sum"),

    # -------------------------------------------------------------- sequence models
    "rnnt": dict(src="""
# the RNN-T loss: a recurrence over (t, u) whose emission reads the label y[u - 1]
def log_softmax3(Z: f64[T, V, K]) -> f64[T, V, K]:
    lp[t, u, k] = Z[t, u, k] - logsumexp[j](Z[t, u, j])
    return lp

def rnnt(Z: f64[T, U + 1, K], y: i64[U]) -> f64:
    lp = log_softmax3(Z)
    a[t: T, u: U + 1] = [t >= 1 or u >= 1] * logsumexp[c: 2 | (c == 0 and t >= 1) or (c == 1 and u >= 1)]([c == 0 and t >= 1] * (a[t - 1, u] + lp[t - 1, u, 0]) + [c == 1 and u >= 1] * (a[t, u - 1] + lp[t, u - 1, y[u - 1]]))
    return -(a[T - 1, U] + lp[T - 1, U, 0])
""", sizes=dict(T=5, U=3, K=4), make=lambda rng, T, U, K: dict(
            Z=_normal(rng, T, U + 1, K), y=rng.integers(1, K, U)),
        ref=rnnt_ref, note="U + 1 in a parameter type, a gather at u - 1 in a two-index recurrence"),

    "gotoh": dict(src="""
# soft Gotoh alignment: match, gap-in-x and gap-in-y matrices stepping together with
# affine gap costs (open go, extend ge) and a soft maximum of temperature g
def gotoh(A: f64[n, d], B: f64[m, d], go: f64, ge: f64, g: f64) -> f64:
    S[i, j] = sum[k](A[i, k] * B[j, k])
    M[i: n, j: m] = [i == 0 and j == 0] * S[0, 0] + [i >= 1 and j >= 1] * (S[i, j] + g * logsumexp[c: 3]([c == 0] * M[i - 1, j - 1] / g + [c == 1] * X[i - 1, j - 1] / g + [c == 2] * Y[i - 1, j - 1] / g)) + [(i == 0 or j == 0) and i + j >= 1] * -10000.0
    X[i: n, j: m] = [i >= 1] * g * logsumexp[c: 2]([c == 0] * (M[i - 1, j] - go) / g + [c == 1] * (X[i - 1, j] - ge) / g) + [i == 0] * -10000.0
    Y[i: n, j: m] = [j >= 1] * g * logsumexp[c: 2]([c == 0] * (M[i, j - 1] - go) / g + [c == 1] * (Y[i, j - 1] - ge) / g) + [j == 0] * -10000.0
    return g * logsumexp[c: 3]([c == 0] * M[n - 1, m - 1] / g + [c == 1] * X[n - 1, m - 1] / g + [c == 2] * Y[n - 1, m - 1] / g)
""", sizes=dict(n=5, m=6, d=3), make=lambda rng, n, m, d: dict(
            A=_normal(rng, n, d), B=_normal(rng, m, d), go=1.0, ge=0.3, g=0.7),
        ref=gotoh_ref, note="three coupled two-index recurrences with logsumexp in each step"),

    "attdec": dict(src="""
# an attention decoder unrolled over T steps: the state attends over the encoder
# outputs with a bilinear score, and the context feeds the next state
def attdec(enc: f64[L, e], Wa: f64[d, e], Ws: f64[d, d], Wc: f64[d, e], s0: f64[d], tgt: f64[T, d]) -> f64:
    prev[t: T, i: d] = [t == 0] * s0[i] + [t >= 1] * s[t - 1, i]
    q[t: T, j: e] = sum[i](Wa[i, j] * prev[t, i])
    sc[t: T, l: L] = sum[j](enc[l, j] * q[t, j])
    lz[t: T] = logsumexp[l](sc[t, l])
    ctx[t: T, j: e] = sum[l](exp(sc[t, l] - lz[t]) * enc[l, j])
    s[t: T, i: d] = tanh(sum[j](Ws[i, j] * prev[t, j]) + sum[j](Wc[i, j] * ctx[t, j]))
    return sum[t, i]((s[t, i] - tgt[t, i]) ** 2)
""", sizes=dict(L=5, e=4, d=4, T=4), make=lambda rng, L, e, d, T: dict(
            enc=_normal(rng, L, e), Wa=_normal(rng, d, e) / 2, Ws=_normal(rng, d, d) / 2,
            Wc=_normal(rng, d, e) / 2, s0=_normal(rng, d), tgt=_normal(rng, T, d) / 2),
        ref=attdec_ref, note="a six-statement group with a logsumexp and softmax in the step"),

    "alibi": dict(src="""
# causal attention with an ALiBi slope and a learned relative-position bias gathered by i - j
def alibi(Q: f64[n, d], K: f64[n, d], V: f64[n, d], pos: f64[n], slope: f64, rel: f64[2 * n - 1]) -> f64:
    S[i, j] = sum[c](Q[i, c] * K[j, c]) / sqrt(d)
    B[i, j] = [j <= i] * (S[i, j] - slope * (pos[i] - pos[j]) + rel[i - j + n - 1])
    lz[i: n] = logsumexp[j | j <= i](B[i, j])
    O[i, c] = sum[j]([j <= i] * exp(B[i, j] - lz[i]) * V[j, c])
    return sum[i, c](O[i, c] ** 2)
""", sizes=dict(n=6, d=3), make=lambda rng, n, d: dict(
            Q=_normal(rng, n, d), K=_normal(rng, n, d), V=_normal(rng, n, d), pos=np.arange(n, dtype=float), slope=0.3,
            rel=_normal(rng, 2 * n - 1) / 2),
        ref=alibi_ref, note="2 * n - 1 as a parameter size, indices as values (i - j)"),

    "rope": dict(src="""
# rotary position embeddings on pairs (2 i, 2 i + 1), then a contrastive loss of the scores
def rotate(X: f64[n, d], cs: f64[n, d / 2], sn: f64[n, d / 2]) -> f64[n, d]:
    R[t: n, c: d] = sum[i: d / 2]([c == 2 * i] * (X[t, 2 * i] * cs[t, i] - X[t, 2 * i + 1] * sn[t, i]) + [c == 2 * i + 1] * (X[t, 2 * i] * sn[t, i] + X[t, 2 * i + 1] * cs[t, i]))
    return R

def rope(Q: f64[n, d], K: f64[n, d], cs: f64[n, d / 2], sn: f64[n, d / 2]) -> f64:
    q = rotate(Q, cs, sn)
    k = rotate(K, cs, sn)
    S[i, j] = sum[c](q[i, c] * k[j, c])
    return sum[i](logsumexp[j](S[i, j]) - S[i, i])
""", sizes=dict(n=5, d=6), make=_rope_inputs, ref=rope_ref,
        note="strided pairs selected by brackets over a d / 2 sum"),

    "pagerank": dict(src="""
# personalised PageRank by power iteration over an edge list: each step gathers the
# previous iterate through the i64 source table and scatters by a label comparison
def pagerank(src: i64[E], dst: i64[E], w: f64[E], d: f64, tgt: f64[n], K: f64[k]) -> f64:
    p[s: k, i: n] = [s == 0] / n + [s >= 1] * ((1.0 - d) / n + d * sum[e]([dst[e] == i] * w[e] * p[s - 1, src[e]]))
    return sum[i]((p[k - 1, i] - tgt[i]) ** 2)
""", sizes=dict(n=5, E=12, k=4), make=_pagerank_inputs, ref=pagerank_ref,
        note="a recurrence step gathering through an i64 table under a label bracket"),

    "capsule": dict(src="""
# dynamic routing between capsules for R iterations: logits, coupling softmax,
# squashed outputs and the agreement update step together
def capsule(U: f64[I, J, D], R: f64[r]) -> f64:
    b[k: r, i: I, j: J] = [k >= 1] * (b[k - 1, i, j] + sum[c](U[i, j, c] * v[k - 1, j, c]))
    cc[k: r, i: I, j: J] = exp(b[k, i, j] - logsumexp[l](b[k, i, l]))
    s[k: r, j: J, c: D] = sum[i](cc[k, i, j] * U[i, j, c])
    n2[k: r, j: J] = sum[c](s[k, j, c] ** 2)
    v[k: r, j: J, c: D] = n2[k, j] / (1.0 + n2[k, j]) * s[k, j, c] / sqrt(n2[k, j] + 0.000000001)
    return sum[j, c](v[r - 1, j, c] ** 2)
""", sizes=dict(I=4, J=3, D=2, r=3), make=lambda rng, I, J, D, r: dict(U=_normal(rng, I, J, D), R=np.zeros(r)),
        ref=capsule_ref, note="five-statement group, softmax over a non-leading index"),

    # -------------------------------------------------------------- graphs
    "gat": dict(src="""
# one graph-attention layer over an edge list: a leaky-ReLU score per edge, a softmax
# over the edges that enter each node (a filtered logsumexp), the weighted messages
def gat(H: f64[n, d], W: f64[d, c], a1: f64[c], a2: f64[c], src: i64[E], dst: i64[E]) -> f64:
    Wh[v, o] = sum[j](H[v, j] * W[j, o])
    raw[k] = sum[o](a1[o] * Wh[src[k], o] + a2[o] * Wh[dst[k], o])
    e[k] = max(raw[k], 0.2 * raw[k])
    lz[v: n] = logsumexp[k | dst[k] == v](e[k])
    out[v: n, o: c] = sum[k]([dst[k] == v] * exp(e[k] - lz[v]) * Wh[src[k], o])
    return sum[v, o](tanh(out[v, o]) ** 2)
""", sizes=dict(n=5, E=11, d=3, c=2), make=_gat_inputs, ref=gat_ref,
        note="segment logsumexp by a label filter, gathers of a computed tensor"),

    "mpnn": dict(src="""
# two rounds of message passing with edge features; a layer is a function called twice
def layer(h: f64[n, d], ef: f64[E, f], Wm: f64[d, d], We: f64[d, f], src: i64[E], dst: i64[E]) -> f64[n, d]:
    m[k, c] = max(sum[j](Wm[c, j] * h[src[k], j]) + sum[g](We[c, g] * ef[k, g]), 0.0)
    agg[v: n, c: d] = sum[k]([dst[k] == v] * m[k, c])
    o[v, c] = tanh(h[v, c] + agg[v, c])
    return o

def mpnn(H: f64[n, d], ef: f64[E, f], Wm: f64[d, d], We: f64[d, f], src: i64[E], dst: i64[E], v: f64[d]) -> f64:
    h1 = layer(H, ef, Wm, We, src, dst)
    h2 = layer(h1, ef, Wm, We, src, dst)
    return sum[i, c](h2[i, c] * v[c])
""", sizes=dict(n=5, E=10, d=3, f=2), make=_mpnn_inputs, ref=mpnn_ref,
        note="a layer called twice, gathers and scatters by label"),

    "lapeig": dict(src="""
# a Laplacian-eigenmap objective: weighted edge smoothness plus an orthonormality penalty
def lapeig(Y: f64[n, k], src: i64[E], dst: i64[E], w: f64[E], mu: f64) -> f64:
    G[a, b] = sum[i](Y[i, a] * Y[i, b])
    return sum[e, c](w[e] * (Y[src[e], c] - Y[dst[e], c]) ** 2) + mu * sum[a, b]((G[a, b] - [a == b]) ** 2)
""", sizes=dict(n=6, k=2, E=9), make=lambda rng, n, k, E: dict(
            Y=_normal(rng, n, k), src=rng.integers(0, n, E), dst=rng.integers(0, n, E), w=rng.random(E), mu=0.5),
        ref=lapeig_ref, note="gathered differences and a Gram matrix against the identity"),

    # -------------------------------------------------------------- physics and engineering
    "verlet": dict(src="""
# velocity Verlet for a chain of unit masses with fixed ends: position, acceleration
# and velocity step together (the acceleration reads the same step's position)
def verlet(x0: f64[n], v0: f64[n], kk: f64, dt: f64, T: f64[S]) -> f64:
    x[t: S, i: n] = [t == 0] * x0[i] + [t >= 1] * (x[t - 1, i] + dt * v[t - 1, i] + 0.5 * dt * dt * a[t - 1, i])
    a[t: S, i: n] = kk * (-2.0 * x[t, i] + [i >= 1] * x[t, i - 1] + [i + 1 < n] * x[t, i + 1])
    v[t: S, i: n] = [t == 0] * v0[i] + [t >= 1] * (v[t - 1, i] + 0.5 * dt * (a[t - 1, i] + a[t, i]))
    return 0.5 * sum[i](v[S - 1, i] ** 2) - 0.5 * sum[i](x[S - 1, i] * a[S - 1, i])
""", sizes=dict(n=5, S=8), make=lambda rng, n, S: dict(
            x0=_normal(rng, n) / 2, v0=_normal(rng, n) / 2, kk=1.3, dt=0.1, T=np.zeros(S)),
        ref=verlet_ref, note="a coupled group, offset-0 reads ordered by the compiler"),

    "lotka": dict(src="""
# Lotka-Volterra integrated by the explicit midpoint rule; the rates come from a function
def rates(th: f64[4]) -> f64[4]:
    r[c] = exp(th[c])
    return r

def lotka(u0: f64, v0: f64, th: f64[4], h: f64, T: f64[S]) -> f64:
    k = rates(th)
    um[t: S] = u[t] + 0.5 * h * (k[0] * u[t] - k[1] * u[t] * v[t])
    vm[t: S] = v[t] + 0.5 * h * (k[3] * u[t] * v[t] - k[2] * v[t])
    u[t: S] = [t == 0] * u0 + [t >= 1] * (u[t - 1] + h * (k[0] * um[t - 1] - k[1] * um[t - 1] * vm[t - 1]))
    v[t: S] = [t == 0] * v0 + [t >= 1] * (v[t - 1] + h * (k[3] * um[t - 1] * vm[t - 1] - k[2] * vm[t - 1]))
    return sum[t](u[t] ** 2) + v[S - 1] ** 2
""", sizes=dict(S=9), make=lambda rng, S: dict(
            u0=1.2, v0=0.8, th=np.log(np.array([1.1, 0.6, 0.9, 0.5])), h=0.1, T=np.zeros(S)),
        ref=lotka_ref, note="scalar recurrences over one index, a call's result read in the step"),

    "burgers": dict(src="""
# viscous Burgers by upwind differences on a periodic grid (wrap-around by brackets)
def burgers(u0: f64[n], nu: f64, dt: f64, T: f64[S]) -> f64:
    um[t: S, i: n] = [i >= 1] * u[t, i - 1] + [i == 0] * u[t, n - 1]
    up[t: S, i: n] = [i + 1 < n] * u[t, i + 1] + [i == n - 1] * u[t, 0]
    u[t: S, i: n] = [t == 0] * u0[i] + [t >= 1] * (u[t - 1, i] - dt * ([u[t - 1, i] > 0.0] * u[t - 1, i] * (u[t - 1, i] - um[t - 1, i]) + [u[t - 1, i] <= 0.0] * u[t - 1, i] * (up[t - 1, i] - u[t - 1, i])) + nu * dt * (up[t - 1, i] - 2.0 * u[t - 1, i] + um[t - 1, i]))
    return sum[i](u[S - 1, i] ** 2) / n
""", sizes=dict(n=8, S=6), make=lambda rng, n, S: dict(u0=_normal(rng, n), nu=0.1, dt=0.05, T=np.zeros(S)),
        ref=burgers_ref, note="periodic boundaries by brackets, value predicates in a step"),

    "beam": dict(src="""
# an Euler-Bernoulli beam's energy: second differences over n - 2 points, a load, soft clamps
def beam(w: f64[n], EI: f64, q: f64[n], hh: f64) -> f64:
    curv[i: n - 2] = w[i] - 2.0 * w[i + 1] + w[i + 2]
    return 0.5 * EI * sum[i](curv[i] ** 2) / hh ** 3 - hh * sum[i](q[i] * w[i]) + 100.0 * (w[0] ** 2 + w[n - 1] ** 2)
""", sizes=dict(n=9), make=lambda rng, n: dict(w=_normal(rng, n), EI=2.0, q=_normal(rng, n), hh=0.5),
        ref=beam_ref, note="range n - 2, fixed reads w[0], w[n - 1]"),

    "sph": dict(src="""
# SPH densities with a poly6-like kernel over neighbour pairs, and an equation-of-state energy
def sph(X: f64[n, 2], m: f64[n], pi: i64[P], pj: i64[P], hh: f64, rho0: f64) -> f64:
    r2[p] = sum[c]((X[pi[p], c] - X[pj[p], c]) ** 2)
    wk[p] = max(hh * hh - r2[p], 0.0) ** 3
    rho[i: n] = m[i] * hh ** 6 + sum[p]([pi[p] == i] * m[pj[p]] * wk[p])
    return sum[i]((rho[i] - rho0) ** 2)
""", sizes=dict(n=5, P=12), make=_sph_inputs, ref=sph_ref, note="a scatter by label, a gathered mass"),

    # -------------------------------------------------------------- statistics and economics
    "negbin": dict(src="""
# negative-binomial regression: log Gamma(y + r) - log Gamma(r) as a sum of log(r + k), k < y
def negbin(X: f64[N, p], w: f64[p], rho: f64, y: i64[N], kv: f64[K]) -> f64:
    eta[i] = sum[j](X[i, j] * w[j])
    r = softplus(rho)
    ll[i] = sum[k]([k < y[i]] * log(r + kv[k])) + r * (log(r) - log(r + exp(eta[i]))) + sum[k: K]([k < y[i]]) * (eta[i] - log(r + exp(eta[i])))
    return -sum[i](ll[i])
""", sizes=dict(N=8, p=3, K=8), make=lambda rng, N, p, K: dict(
            X=_normal(rng, N, p) / 2, w=_normal(rng, p) / 2, rho=0.3, y=rng.integers(0, K, N), kv=np.arange(K, dtype=float)),
        ref=lambda X, w, rho, y, kv: negbin_ref(X, w, rho, y),
        note="a label count as a sum of brackets, an index as a value inside log"),

    "plackett": dict(src="""
# the Plackett-Luce log-likelihood of top-m rankings given as i64 item tables
def plackett(s: f64[I], rank: i64[N, m]) -> f64:
    tail[a: N, p: m] = logsumexp[q | q >= p](s[rank[a, q]])
    return -sum[a, p](s[rank[a, p]] - tail[a, p])
""", sizes=dict(I=6, N=4, m=4), make=_plackett_inputs, ref=plackett_ref,
        note="a filtered logsumexp of gathers (a suffix logsumexp)"),

    "stochvol": dict(src="""
# a stochastic-volatility model's negative log joint with given standardised noise
def stochvol(y: f64[T], eps: f64[T], mu: f64, phi: f64, sig: f64) -> f64:
    h[t: T] = mu + sig * eps[t] + [t >= 1] * phi * (h[t - 1] - mu)
    return sum[t](0.5 * h[t] + 0.5 * y[t] ** 2 * exp(-h[t])) + 0.5 * sum[t](eps[t] ** 2)
""", sizes=dict(T=10), make=lambda rng, T: dict(y=_normal(rng, T), eps=_normal(rng, T), mu=-0.5, phi=0.9, sig=0.3),
        ref=stochvol_ref, note="a scalar AR(1) recurrence with scalar parameters"),

    "nlogit": dict(src="""
# nested logit: inclusive values per nest by a filtered logsumexp, nested in an outer one
def nlogit(X: f64[N, J, p], beta: f64[p], lam: f64[G], nest: i64[J], ch: i64[N]) -> f64:
    V[a, j] = sum[c](X[a, j, c] * beta[c])
    IV[a: N, g: G] = logsumexp[j | nest[j] == g](V[a, j] / lam[g])
    top[a: N] = logsumexp[g](lam[g] * IV[a, g])
    lp[a, j] = V[a, j] / lam[nest[j]] + (lam[nest[j]] - 1.0) * IV[a, nest[j]] - top[a]
    return -sum[a](lp[a, ch[a]])
""", sizes=dict(N=5, J=6, p=2, G=3), make=_nlogit_inputs, ref=nlogit_ref,
        note="a logsumexp of logsumexps, gathers by nest and by choice"),

    "binorm": dict(src="""
# a bivariate normal negative log-likelihood with per-point correlations tanh(z)
def binorm(x: f64[n], y: f64[n], mx: f64, my: f64, lsx: f64, lsy: f64, z: f64[n]) -> f64:
    r[i] = tanh(z[i])
    a[i] = (x[i] - mx) / exp(lsx)
    b[i] = (y[i] - my) / exp(lsy)
    return sum[i](lsx + lsy + 0.5 * log(1.0 - r[i] ** 2) + 0.5 * (a[i] ** 2 - 2.0 * r[i] * a[i] * b[i] + b[i] ** 2) / (1.0 - r[i] ** 2))
""", sizes=dict(n=7), make=lambda rng, n: dict(
            x=_normal(rng, n), y=_normal(rng, n), mx=0.1, my=-0.2, lsx=0.3, lsy=-0.1, z=_normal(rng, n) / 2),
        ref=binorm_ref, note="scalars mixed with tensors"),

    "quantreg": dict(src="""
# multi-quantile regression with a smoothed pinball loss and a non-crossing penalty
def quantreg(X: f64[N, p], W: f64[p, K], y: f64[N], tau: f64[K], s: f64) -> f64:
    Q[i, k] = sum[j](X[i, j] * W[j, k])
    r[i, k] = y[i] - Q[i, k]
    pen = sum[i, k]([k + 1 < K] * max(Q[i, k] - Q[i, k + 1], 0.0) ** 2)
    return sum[i, k](tau[k] * r[i, k] + s * softplus(-r[i, k] / s)) / N + 10.0 * pen
""", sizes=dict(N=8, p=3, K=4), make=lambda rng, N, p, K: dict(
            X=_normal(rng, N, p), W=_normal(rng, p, K), y=_normal(rng, N), tau=np.linspace(0.1, 0.9, K), s=0.2),
        ref=quantreg_ref, note="softplus, a squared hinge between neighbours"),

    "hier": dict(src="""
# a hierarchical normal model's negative log joint: group means gathered by i64 group ids
def hier(y: f64[N], grp: i64[N], mu: f64, theta: f64[G], ltau: f64, lsig: f64) -> f64:
    lik = -0.5 * sum[i]((y[i] - theta[grp[i]]) ** 2) / exp(2.0 * lsig) - N * lsig
    pri = -0.5 * sum[g]((theta[g] - mu) ** 2) / exp(2.0 * ltau) - G * ltau
    hyp = -0.5 * mu ** 2 - 0.5 * exp(2.0 * ltau) - 0.5 * exp(2.0 * lsig) + ltau + lsig
    return -(lik + pri + hyp)
""", sizes=dict(N=10, G=3), make=lambda rng, N, G: dict(
            y=_normal(rng, N), grp=rng.integers(0, G, N), mu=0.2, theta=_normal(rng, G), ltau=-0.3, lsig=0.1),
        ref=hier_ref, note="sizes as values, scalar statements"),

    "hausdorff": dict(src="""
# a symmetric Hausdorff distance plus a soft mean of nearest distances: reductions of reductions
def hausdorff(A: f64[n, d], B: f64[m, d]) -> f64:
    D[i, j] = sum[c]((A[i, c] - B[j, c]) ** 2)
    return max(max[i](min[j](D[i, j])), max[j](min[i](D[i, j]))) + logsumexp[i](-min[j](D[i, j]))
""", sizes=dict(n=5, m=6, d=2), make=lambda rng, n, m, d: dict(A=_normal(rng, n, d), B=_normal(rng, m, d)),
        ref=hausdorff_ref, note="max of min, logsumexp of min"),

    "vae": dict(src="""
# a VAE's negative ELBO with a given noise sample (the reparameterisation)
def vae(X: f64[N, D], We: f64[D, H], Wmu: f64[H, Z], Wlv: f64[H, Z], Wd: f64[Z, D], eps: f64[N, Z]) -> f64:
    h[a, k] = tanh(sum[j](X[a, j] * We[j, k]))
    mu[a, z] = sum[k](h[a, k] * Wmu[k, z])
    lv[a, z] = sum[k](h[a, k] * Wlv[k, z])
    zz[a, z] = mu[a, z] + exp(0.5 * lv[a, z]) * eps[a, z]
    xr[a, j] = sigmoid(sum[z](zz[a, z] * Wd[z, j]))
    rec = -sum[a, j](X[a, j] * log(xr[a, j]) + (1.0 - X[a, j]) * log(1.0 - xr[a, j]))
    kl = -0.5 * sum[a, z](1.0 + lv[a, z] - mu[a, z] ** 2 - exp(lv[a, z]))
    return (rec + kl) / N
""", sizes=dict(N=4, D=5, H=3, Z=2), make=lambda rng, N, D, H, Z: dict(
            X=(rng.random((N, D)) > 0.5).astype(float), We=_normal(rng, D, H) / 2, Wmu=_normal(rng, H, Z) / 2,
            Wlv=_normal(rng, H, Z) / 2, Wd=_normal(rng, Z, D) / 2, eps=_normal(rng, N, Z)),
        ref=vae_ref, note="a chain of dense layers with log of sigmoid"),
    "strided": dict(src="""
# a stride-2 valid filter, plus a product of the odd and even entries (n / 2 pairs)
def strided(x: f64[n], w: f64[K]) -> f64:
    y[i: (n - K) / 2 + 1] = sum[k](w[k] * x[2 * i + k])
    return sum[i](y[i] ** 2) + sum[i: n / 2](x[2 * i + 1] * x[2 * i])
""", sizes=dict(n=14, K=4), make=lambda rng, n, K: dict(x=_normal(rng, n), w=_normal(rng, K)),
        ref=strided_ref, note="two derived sizes with a division each"),
}

# Programs a user wrote from the documentation that the language rejects by design
# (LANGUAGE.md and docs/language.md say so): each must be a located error of the
# given class whose message says why.
REJECTED = {
    # a recurrence step of a size (season m) is not a constant step; holt4 writes 4
    "holt": ("""
def holt(y: f64[T], al: f64, l0: f64, s0: f64[m]) -> f64:
    lp[t: T] = [t == 0] * l0 + [t >= 1] * lev[t - 1]
    sp[t: T] = [t < m] * s0[t] + [t >= m] * se[t - m]
    lev[t: T] = al * (y[t] - sp[t]) + (1.0 - al) * lp[t]
    se[t: T] = al * (y[t] - lev[t]) + (1.0 - al) * sp[t]
    return sum[t]((y[t] - lp[t] - sp[t]) ** 2)
""", "TLRecurrenceError",
             "se[t - m] in sp does not step by a constant along t (cycle sp -> se -> sp)", 4),
    # an index is not a value (ALiBi's slope * (i - j)); alibi passes the positions
    "index_value": ("""
def index_value(S: f64[n, n], slope: f64) -> f64:
    return sum[i, j]([j <= i] * (S[i, j] - slope * (i - j)))
""", "TLTypeError", "index i used as a value", 3),
    # arithmetic on a gathered label inside an index (stn passes y0 + 1 as a table)
    "gather_plus_one": ("""
def gather_plus_one(img: f64[h, w], y0: i64[P], x0: i64[P]) -> f64:
    return sum[p]([y0[p] + 1 < h] * img[y0[p] + 1, x0[p]])
""", "TLTypeError", "the gather y0[...] must stand alone as an index", 3),
}
