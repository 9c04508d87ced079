"""A second set of programs written from the documentation alone.

Longer programs than tests/newuser_programs.py: several functions of one file
calling each other, recurrences that read two steps back, recurrences over two
indices, recurrence groups whose steps gather through i64 edge lists, reductions
of reductions, ranges from size arithmetic, integer-literal dimensions and
size-1 tensors.  Each entry has the same shape as there: the program text (its
function to test is named like the entry), the sizes of the test inputs,
`make(rng, **sizes)`, an independent NumPy version `ref(**inputs)` and a note.
tests/test_newuser2_programs.py checks them.
"""
import numpy as np
from scipy.special import logsumexp as _lse


def _normal(rng, *shape):
    return rng.standard_normal(shape)


def _softplus(z):
    return np.logaddexp(0.0, z)


def _softmax(Z, axis=-1):
    return np.exp(Z - _lse(Z, axis=axis, keepdims=True))


# ------------------------------------------------------------------ simulation and control
def iir2_ref(x, a1, a2, b, tgt):
    T = len(x)
    y = np.zeros(T)
    for t in range(T):
        y[t] = b * x[t] + (a1 * y[t - 1] if t >= 1 else 0.0) + (a2 * y[t - 2] if t >= 2 else 0.0)
    return float(np.sum((y - tgt) ** 2) / T)


def lqr_ref(A, B, x0, U, Q, R):
    T = len(U)
    x = x0.copy()
    c = float(np.sum(Q * x ** 2))
    for t in range(T):
        x = A @ x + B @ U[t]
        c += float(np.sum(Q * x ** 2))
    return c + float(np.sum(R[None, :] * U ** 2))


def spring_chain_ref(q0, p0, k, src, dst, h, steps, tgt):
    q, p = q0.copy(), p0.copy()

    def force(q):
        F = np.zeros_like(q)
        d = q[dst] - q[src]
        np.add.at(F, src, k * d)
        np.add.at(F, dst, -k * d)
        return F
    for _ in range(1, len(steps)):
        p = p + h * force(q)
        q = q + h * p
    return float(np.sum((q - tgt) ** 2))


def pendulum_ref(th0, om0, gl, h, obs):
    th, om = np.zeros(len(obs)), np.zeros(len(obs))
    th[0], om[0] = th0, om0
    for t in range(1, len(obs)):
        thm = th[t - 1] + 0.5 * h * om[t - 1]
        omm = om[t - 1] - 0.5 * h * gl * np.sin(th[t - 1])
        th[t] = th[t - 1] + h * omm
        om[t] = om[t - 1] - h * gl * np.sin(thm)
    return float(np.sum((th - obs) ** 2))


def rk4_ref(y0, r, K, h, obs):
    f = lambda y: r * y * (1.0 - y / K)  # noqa: E731
    y = np.zeros(len(obs))
    y[0] = y0
    for t in range(1, len(obs)):
        k1 = f(y[t - 1])
        k2 = f(y[t - 1] + 0.5 * h * k1)
        k3 = f(y[t - 1] + 0.5 * h * k2)
        k4 = f(y[t - 1] + h * k3)
        y[t] = y[t - 1] + h / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
    return float(np.sum((y - obs) ** 2))


def neural_ode_ref(z0, W, c, h, steps, tgt):
    z = z0.copy()
    for _ in range(1, len(steps)):
        z = z + h * np.tanh(W @ z + c)
    return float(np.sum((z - tgt) ** 2))


def heat2d_ref(u0, a, obs):
    u = u0.copy()
    loss = np.sum((u - obs[0]) ** 2)
    for t in range(1, len(obs)):
        p = np.pad(u, 1)
        u = u + a * (p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:] - 4.0 * u)
        loss += np.sum((u - obs[t]) ** 2)
    return float(loss)


# ------------------------------------------------------------------ machine learning
def _layernorm(X, g, b):
    mu = X.mean(axis=1, keepdims=True)
    var = ((X - mu) ** 2).mean(axis=1, keepdims=True)
    return g * (X - mu) / np.sqrt(var + 1e-5) + b


def transformer_ref(X, Wq, Wk, Wv, Wo, W1, W2, g1, b1, g2, b2, T):
    e = Wq.shape[2]
    s = X.shape[0]
    Q = np.einsum("ij,hja->hia", X, Wq)
    K = np.einsum("ij,hja->hia", X, Wk)
    V = np.einsum("ij,hja->hia", X, Wv)
    S = np.einsum("hia,hka->hik", Q, K) / np.sqrt(e)
    S = np.where(np.tril(np.ones((s, s), bool))[None], S, -np.inf)
    P = _softmax(S, axis=2)
    O = np.einsum("hik,hka->hia", P, V)
    A = np.einsum("hia,haj->ij", O, Wo)
    N1 = _layernorm(X + A, g1, b1)
    Hd = np.maximum(N1 @ W1, 0.0)
    N2 = _layernorm(N1 + Hd @ W2, g2, b2)
    return float(np.sum(N2 * T))


def moe_ref(X, Wg, We, T):
    G = _softmax(X @ Wg, axis=1)
    Y = np.tanh(np.einsum("sj,xjc->sxc", X, We))
    out = np.einsum("sx,sxc->sc", G, Y)
    return float(np.sum((out - T) ** 2) / len(X))


def sgns_ref(Win, Wout, cen, ctx, neg):
    pos = np.sum(Win[cen] * Wout[ctx], axis=1)
    ng = np.einsum("sc,sqc->sq", Win[cen], Wout[neg])
    return float(np.sum(_softplus(-pos)) + np.sum(_softplus(ng)))


def bag_ref(E, tok, off, W, y):
    out = 0.0
    for s in range(len(off) - 1):
        rows = E[tok[off[s]:off[s + 1]]] if off[s + 1] > off[s] else np.zeros((0, E.shape[1]))
        mean = rows.sum(axis=0) / max(len(rows), 1.0)
        out += (mean @ W - y[s]) ** 2
    return float(out)


def listmle_ref(S, perm):
    out = 0.0
    for r in range(S.shape[0]):
        z = S[r, perm[r]]
        for i in range(len(z)):
            out += _lse(z[i:]) - z[i]
    return float(out)


def listnet_ref(S, Y):
    return float(-np.sum(_softmax(Y, 1) * (S - _lse(S, axis=1, keepdims=True))))


def pinball_ref(P, y, tau, lam):
    r = y[:, None] - P
    loss = np.sum(np.maximum(tau * r, (tau - 1.0) * r)) / len(y)
    return float(loss + lam * np.sum(np.maximum(P[:, :-1] - P[:, 1:], 0.0)))


def gumbel_ref(Z, G, tau, V, T):
    Y = _softmax((Z + G) / tau, axis=1)
    return float(np.sum((Y @ V - T) ** 2))


def gcn2_ref(X, W1, W2, src, dst, y):
    n = len(X)
    deg = 1.0 + np.bincount(dst, minlength=n)
    dinv = 1.0 / np.sqrt(deg)

    def prop(H):
        out = dinv[:, None] * H
        np.add.at(out, dst, dinv[src][:, None] * H[src])
        return dinv[:, None] * out
    H1 = np.maximum(prop(X) @ W1, 0.0)
    Z = prop(H1) @ W2
    return float(np.mean(_lse(Z, axis=1) - Z[np.arange(n), y]))


def birnn_ref(x, Wf, Uf, Wb, Ub, v, y):
    T, h = len(x), Wf.shape[0]
    hf, hb = np.zeros((T, h)), np.zeros((T, h))
    for t in range(T):
        hf[t] = np.tanh(Wf @ x[t] + (Uf @ hf[t - 1] if t >= 1 else 0.0))
    for t in reversed(range(T)):
        hb[t] = np.tanh(Wb @ x[t] + (Ub @ hb[t + 1] if t + 1 < T else 0.0))
    o = hf @ v[0] + hb @ v[1]
    return float(np.sum((o - y) ** 2))


# ------------------------------------------------------------------ statistics and optimisation
def enet_ref(X, y, w, l1, l2):
    r = X @ w - y
    return float(0.5 * np.sum(r ** 2) / len(y) + l1 * np.sum(np.sqrt(w ** 2 + 1e-8)) + 0.5 * l2 * np.sum(w ** 2))


def nmf_ref(V, A, B, lam):
    W, H = _softplus(A), _softplus(B)
    WH = W @ H
    return float(np.sum(V * np.log(V / WH) - V + WH) + lam * np.sum(W))


def gp_ref(X, y, Kinv, lell, lsf, lsn):
    D2 = np.sum((X[:, None, :] - X[None, :, :]) ** 2, axis=2)
    K = np.exp(2 * lsf - 0.5 * D2 * np.exp(-2 * lell)) + np.eye(len(X)) * np.exp(2 * lsn)
    al = Kinv @ y
    return float(0.5 * np.sum((Kinv - np.outer(al, al)) * K))


def rpca_ref(M, U, V, d, lam):
    R = M - U @ V.T
    return float(np.sum(d * d * (np.sqrt(1.0 + (R / d) ** 2) - 1.0)) + lam * (np.sum(U ** 2) + np.sum(V ** 2)))


def potts_ref(L, U, beta):
    P = _softmax(L, axis=2)
    k = L.shape[2]
    off = 1.0 - np.eye(k)
    pw = (np.einsum("rcq,ql,rcl->", P[:-1], off, P[1:])
          + np.einsum("rcq,ql,rcl->", P[:, :-1], off, P[:, 1:]))
    return float(np.sum(P * U) + beta * pw + np.sum(P * np.log(P)))


def iwae_ref(x, mu, ls, eps, W, sig):
    z = mu[:, None, :] + np.exp(ls)[:, None, :] * eps
    xh = z @ W
    logp = -0.5 * np.sum((x[:, None, :] - xh) ** 2, axis=2) / sig ** 2 - 0.5 * np.sum(z ** 2, axis=2)
    logq = -0.5 * np.sum(eps ** 2, axis=2) - np.sum(ls, axis=1)[:, None]
    K = eps.shape[1]
    return float(np.mean(_lse(logp - logq, axis=1) - np.log(K)))


def hmm2_ref(p0, Araw, Braw, obs):
    logA = Araw - _lse(Araw, axis=1, keepdims=True)
    logB = Braw - _lse(Braw, axis=1, keepdims=True)
    al = p0 - _lse(p0) + logB[:, obs[0]]
    for t in range(1, len(obs)):
        al = logB[:, obs[t]] + _lse(al[:, None] + logA, axis=0)
    return float(-_lse(al))


def group_dro_ref(X, y, w, grp, G):
    l = (X @ w - y) ** 2
    k = len(G)
    gl = np.array([np.sum(l[grp == g]) / (1.0 + np.sum(grp == g)) for g in range(k)])
    return float(np.max(gl) + 0.1 * _lse(G * gl))


def rot2_ref(th, P, Q, s):
    R = np.array([[np.cos(th), -np.sin(th)], [np.sin(th), np.cos(th)]])
    return float(np.sum((s[0] * P @ R.T - Q) ** 2))


# ------------------------------------------------------------------ dynamic programs and signals
def sdtw_band_ref(x, y, g):
    n, m = len(x), len(y)
    R = np.full((n, m), np.inf)
    for i in range(n):
        for j in range(m):
            if abs(i - j) > 2:
                continue
            c = (x[i] - y[j]) ** 2
            if i == 0 and j == 0:
                R[i, j] = c
                continue
            prev = [R[i - 1, j - 1] if i >= 1 and j >= 1 else np.inf,
                     R[i - 1, j] if i >= 1 else np.inf, R[i, j - 1] if j >= 1 else np.inf]
            prev = np.array([p for p in prev if np.isfinite(p)])
            R[i, j] = c - g * _lse(-prev / g)
    return float(R[n - 1, m - 1])


def soft_lcs_ref(x, y, g):
    n, m = len(x), len(y)
    S = x @ y.T
    L = np.zeros((n + 1, m + 1))
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            L[i, j] = g * np.log(np.exp((L[i - 1, j - 1] + S[i - 1, j - 1]) / g)
                                 + np.exp(L[i - 1, j] / g) + np.exp(L[i, j - 1] / g))
    return float(L[n, m])


def cumlse_ref(x, w):
    return float(np.sum(w * np.logaddexp.accumulate(x)))


def sat_ref(A, T):
    n, m = A.shape
    box = np.array([[A[i:i + 3, j:j + 3].sum() for j in range(m - 2)] for i in range(n - 2)])
    return float(np.sum((box / 9.0 - T) ** 2))


def interp_ref(G, r0, c0, r1, c1, fr, fc, t):
    v = ((1 - fr) * (1 - fc) * G[r0, c0] + fr * (1 - fc) * G[r1, c0]
         + (1 - fr) * fc * G[r0, c1] + fr * fc * G[r1, c1])
    return float(np.sum((v - t) ** 2))


def savgol_ref(x, c, y, lam):
    s = np.convolve(x, c[::-1], mode="valid")
    d2 = s[2:] - 2 * s[1:-1] + s[:-2]
    return float(np.sum((s - y) ** 2) + lam * np.sum(d2 ** 2))


def _interp_inputs(rng, h, w, q):
    r0, c0 = rng.integers(0, h - 1, q), rng.integers(0, w - 1, q)
    return dict(G=_normal(rng, h, w), r0=r0, c0=c0, r1=r0 + 1, c1=c0 + 1, fr=rng.random(q),
                fc=rng.random(q), t=_normal(rng, q))


def _bag_inputs(rng, v, d, L, m):
    cuts = np.sort(rng.integers(0, L + 1, m - 2))
    off = np.concatenate([[0], cuts, [L]])
    return dict(E=_normal(rng, v, d), tok=rng.integers(0, v, L), off=off, W=_normal(rng, d),
                y=_normal(rng, m - 1))


def _edges(rng, n, m):
    src = rng.integers(0, n, m)
    return src, (src + 1 + rng.integers(0, n - 1, m)) % n


PROGRAMS = {
    "iir2": dict(src="""
# a second-order IIR filter fitted to a target: each output reads the two before it
def iir2(x: f64[T], a1: f64, a2: f64, b: f64, tgt: f64[T]) -> f64:
    y[t] = b * x[t] + [t >= 1] * a1 * y[t - 1] + [t >= 2] * a2 * y[t - 2]
    return sum[t]((y[t] - tgt[t]) ** 2) / T
""", sizes=dict(T=9), make=lambda rng, T: dict(x=_normal(rng, T), a1=0.5, a2=-0.3, b=0.8, tgt=_normal(rng, T)),
        ref=iir2_ref, note="recurrence two steps back"),

    "lqr": dict(src="""
# LQR rollout cost: x[t + 1] = A x[t] + B u[t], T controls give T + 1 states
def lqr(A: f64[n, n], B: f64[n, m], x0: f64[n], U: f64[T, m], Q: f64[n], R: f64[m]) -> f64:
    X[t: T + 1, i: n] = [t == 0] * x0[i] + [t >= 1] * (sum[j](A[i, j] * X[t - 1, j]) + sum[k](B[i, k] * U[t - 1, k]))
    return sum[t, i](Q[i] * X[t, i] ** 2) + sum[t, k](R[k] * U[t, k] ** 2)
""", sizes=dict(n=3, m=2, T=5), make=lambda rng, n, m, T: dict(
            A=0.5 * _normal(rng, n, n), B=_normal(rng, n, m), x0=_normal(rng, n), U=_normal(rng, T, m),
            Q=rng.random(n), R=rng.random(m)),
        ref=lqr_ref, note="matrix-vector recurrence over T + 1 states"),

    "spring_chain": dict(src="""
# masses on a line joined by springs from an edge list (src, dst), stepped by
# semi-implicit Euler: momenta from the forces of the previous positions, then positions
def spring_chain(q0: f64[n], p0: f64[n], k: f64[m], src: i64[m], dst: i64[m], h: f64, steps: f64[T], tgt: f64[n]) -> f64:
    F[t: T, i: n] = sum[e](k[e] * ([src[e] == i] - [dst[e] == i]) * (q[t, dst[e]] - q[t, src[e]]))
    p[t: T, i: n] = [t == 0] * p0[i] + [t >= 1] * (p[t - 1, i] + h * F[t - 1, i])
    q[t: T, i: n] = [t == 0] * q0[i] + [t >= 1] * (q[t - 1, i] + h * p[t, i])
    return sum[i]((q[T - 1, i] - tgt[i]) ** 2)
""", sizes=dict(n=5, m=6, T=5), make=lambda rng, n, m, T: dict(
            q0=_normal(rng, n), p0=_normal(rng, n), k=rng.random(m) + 0.5,
            **dict(zip(("src", "dst"), _edges(rng, n, m))), h=0.1, steps=np.zeros(T), tgt=_normal(rng, n)),
        ref=spring_chain_ref, note="recurrence group whose step gathers through an edge list"),

    "pendulum": dict(src="""
# a pendulum integrated by the midpoint rule (RK2), fitted to observed angles
def pendulum(th0: f64, om0: f64, gl: f64, h: f64, obs: f64[T]) -> f64:
    th[t: T] = [t == 0] * th0 + [t >= 1] * (th[t - 1] + h * omm[t])
    om[t: T] = [t == 0] * om0 + [t >= 1] * (om[t - 1] - h * gl * sin(thm[t]))
    thm[t: T] = [t >= 1] * (th[t - 1] + 0.5 * h * om[t - 1])
    omm[t: T] = [t >= 1] * (om[t - 1] - 0.5 * h * gl * sin(th[t - 1]))
    return sum[t]((th[t] - obs[t]) ** 2)
""", sizes=dict(T=8), make=lambda rng, T: dict(th0=0.7, om0=-0.2, gl=9.0, h=0.1, obs=0.3 * _normal(rng, T)),
        ref=pendulum_ref, note="four statements per step, scalar state"),

    "rk4": dict(src="""
# logistic growth integrated by classical Runge-Kutta, fitted to observations
def rk4(y0: f64, r: f64, K: f64, h: f64, obs: f64[T]) -> f64:
    k1[t: T] = [t >= 1] * r * y[t - 1] * (1.0 - y[t - 1] / K)
    k2[t: T] = [t >= 1] * r * (y[t - 1] + 0.5 * h * k1[t]) * (1.0 - (y[t - 1] + 0.5 * h * k1[t]) / K)
    k3[t: T] = [t >= 1] * r * (y[t - 1] + 0.5 * h * k2[t]) * (1.0 - (y[t - 1] + 0.5 * h * k2[t]) / K)
    k4[t: T] = [t >= 1] * r * (y[t - 1] + h * k3[t]) * (1.0 - (y[t - 1] + h * k3[t]) / K)
    y[t: T] = [t == 0] * y0 + [t >= 1] * (y[t - 1] + h / 6.0 * (k1[t] + 2.0 * k2[t] + 2.0 * k3[t] + k4[t]))
    return sum[t]((y[t] - obs[t]) ** 2)
""", sizes=dict(T=7), make=lambda rng, T: dict(y0=0.2, r=1.3, K=2.0, h=0.3, obs=1.0 + 0.3 * _normal(rng, T)),
        ref=rk4_ref, note="RK4 stages as a recurrence group"),

    "neural_ode": dict(src="""
def neural_ode(z0: f64[d], W: f64[d, d], c: f64[d], h: f64, steps: f64[T], tgt: f64[d]) -> f64:
    z[t: T, i: d] = [t == 0] * z0[i] + [t >= 1] * (z[t - 1, i] + h * tanh(sum[j](W[i, j] * z[t - 1, j]) + c[i]))
    return sum[i]((z[T - 1, i] - tgt[i]) ** 2)
""", sizes=dict(d=3, T=6), make=lambda rng, d, T: dict(z0=_normal(rng, d), W=_normal(rng, d, d), c=_normal(rng, d),
                                                        h=0.2, steps=np.zeros(T), tgt=_normal(rng, d)),
        ref=neural_ode_ref, note="Euler steps of a neural ODE"),

    "heat2d": dict(src="""
# 2-D heat equation, zero outside the grid, fitted to observations at every step
def heat2d(u0: f64[H, W], a: f64, obs: f64[T, H, W]) -> f64:
    u[t: T, r: H, c: W] = [t == 0] * u0[r, c] + [t >= 1] * (u[t - 1, r, c] + a * ([r >= 1] * u[t - 1, r - 1, c]
        + [r + 1 < H] * u[t - 1, r + 1, c] + [c >= 1] * u[t - 1, r, c - 1] + [c + 1 < W] * u[t - 1, r, c + 1]
        - 4.0 * u[t - 1, r, c]))
    return sum[t, r, c]((u[t, r, c] - obs[t, r, c]) ** 2)
""", sizes=dict(H=4, W=5, T=4), make=lambda rng, H, W, T: dict(u0=_normal(rng, H, W), a=0.1, obs=_normal(rng, T, H, W)),
        ref=heat2d_ref, note="5-point stencil stepped in time"),

    "transformer": dict(src="""
def layernorm(X: f64[s, d], g: f64[d], b: f64[d]) -> f64[s, d]:
    mu[i] = sum[j](X[i, j]) / d
    var[i] = sum[j]((X[i, j] - mu[i]) ** 2) / d
    Y[i, j] = g[j] * (X[i, j] - mu[i]) / sqrt(var[i] + 1e-5) + b[j]
    return Y

# causal multi-head self-attention with a head index
def mha(X: f64[s, d], Wq: f64[H, d, e], Wk: f64[H, d, e], Wv: f64[H, d, e], Wo: f64[H, e, d]) -> f64[s, d]:
    Q[h, i, a] = sum[j](X[i, j] * Wq[h, j, a])
    K[h, i, a] = sum[j](X[i, j] * Wk[h, j, a])
    V[h, i, a] = sum[j](X[i, j] * Wv[h, j, a])
    S[h, i, k] = sum[a](Q[h, i, a] * K[h, k, a]) / sqrt(e)
    P[h, i, k] = [k <= i] * exp(S[h, i, k] - logsumexp[l | l <= i](S[h, i, l]))
    O[h, i, a] = sum[k](P[h, i, k] * V[h, k, a])
    Y[i, j] = sum[h, a](O[h, i, a] * Wo[h, a, j])
    return Y

# a post-norm transformer block: attention, residual, norm, ReLU MLP, residual, norm
def transformer(X: f64[s, d], Wq: f64[H, d, e], Wk: f64[H, d, e], Wv: f64[H, d, e], Wo: f64[H, e, d],
                W1: f64[d, f], W2: f64[f, d], g1: f64[d], b1: f64[d], g2: f64[d], b2: f64[d], T: f64[s, d]) -> f64:
    A = mha(X, Wq, Wk, Wv, Wo)
    R1[i, j] = X[i, j] + A[i, j]
    N1 = layernorm(R1, g1, b1)
    Hd[i, q] = max(sum[j](N1[i, j] * W1[j, q]), 0.0)
    R2[i, j] = N1[i, j] + sum[q](Hd[i, q] * W2[q, j])
    N2 = layernorm(R2, g2, b2)
    return sum[i, j](N2[i, j] * T[i, j])
""", sizes=dict(s=4, d=4, H=2, e=2, f=5), make=lambda rng, s, d, H, e, f: dict(
            X=_normal(rng, s, d), Wq=_normal(rng, H, d, e), Wk=_normal(rng, H, d, e), Wv=_normal(rng, H, d, e),
            Wo=_normal(rng, H, e, d), W1=_normal(rng, d, f), W2=_normal(rng, f, d), g1=1.0 + 0.1 * _normal(rng, d),
            b1=0.1 * _normal(rng, d), g2=1.0 + 0.1 * _normal(rng, d), b2=0.1 * _normal(rng, d), T=_normal(rng, s, d)),
        ref=transformer_ref, note="transformer block through two called functions, filtered logsumexp"),

    "moe": dict(src="""
# mixture of experts with softmax gating
def moe(X: f64[b, d], Wg: f64[d, E], We: f64[E, d, k], T: f64[b, k]) -> f64:
    z[s, x] = sum[j](X[s, j] * Wg[j, x])
    G[s, x] = exp(z[s, x] - logsumexp[y](z[s, y]))
    Y[s, x, c] = tanh(sum[j](X[s, j] * We[x, j, c]))
    out[s, c] = sum[x](G[s, x] * Y[s, x, c])
    return sum[s, c]((out[s, c] - T[s, c]) ** 2) / b
""", sizes=dict(b=5, d=3, E=3, k=2), make=lambda rng, b, d, E, k: dict(
            X=_normal(rng, b, d), Wg=_normal(rng, d, E), We=_normal(rng, E, d, k), T=_normal(rng, b, k)),
        ref=moe_ref, note="mixture of experts"),

    "sgns": dict(src="""
# word2vec skip-gram with negative sampling
def sgns(Win: f64[v, d], Wout: f64[v, d], cen: i64[b], ctx: i64[b], neg: i64[b, K]) -> f64:
    pos[s] = sum[c](Win[cen[s], c] * Wout[ctx[s], c])
    ng[s, q] = sum[c](Win[cen[s], c] * Wout[neg[s, q], c])
    return sum[s](softplus(-pos[s])) + sum[s, q](softplus(ng[s, q]))
""", sizes=dict(v=7, d=3, b=5, K=3), make=lambda rng, v, d, b, K: dict(
            Win=_normal(rng, v, d), Wout=_normal(rng, v, d), cen=rng.integers(0, v, b), ctx=rng.integers(0, v, b),
            neg=rng.integers(0, v, (b, K))),
        ref=sgns_ref, note="gathers of centre, context and negatives"),

    "bag": dict(src="""
# mean embedding bags over i64 offsets (bag s holds tokens off[s] .. off[s + 1] - 1), a linear readout
def bag(E: f64[v, d], tok: i64[L], off: i64[m], W: f64[d], y: f64[m - 1]) -> f64:
    cnt[s: m - 1] = sum[t: L]([off[s] <= t and t < off[s + 1]])
    B[s: m - 1, c: d] = sum[t]([off[s] <= t and t < off[s + 1]] * E[tok[t], c]) / max(cnt[s], 1.0)
    return sum[s]((sum[c](B[s, c] * W[c]) - y[s]) ** 2)
""", sizes=dict(v=6, d=3, L=10, m=5), make=_bag_inputs, ref=bag_ref, note="segment mean over offsets, m - 1 bags"),

    "listmle": dict(src="""
# ListMLE: the likelihood of the true order perm[r] under Plackett-Luce
def listmle(S: f64[q, n], perm: i64[q, n]) -> f64:
    return sum[r, i](logsumexp[j | j >= i](S[r, perm[r, j]]) - S[r, perm[r, i]])
""", sizes=dict(q=3, n=5), make=lambda rng, q, n: dict(S=_normal(rng, q, n),
                                                        perm=np.array([rng.permutation(n) for _ in range(q)])),
        ref=listmle_ref, note="suffix logsumexp of a gather"),

    "listnet": dict(src="""
def logsoftmax(Z: f64[a, c]) -> f64[a, c]:
    L[i, j] = Z[i, j] - logsumexp[l](Z[i, l])
    return L

# ListNet: cross-entropy between top-one probabilities of the labels and of the scores
def listnet(S: f64[q, n], Y: f64[q, n]) -> f64:
    LS = logsoftmax(S)
    LY = logsoftmax(Y)
    return -sum[r, i](exp(LY[r, i]) * LS[r, i])
""", sizes=dict(q=3, n=5), make=lambda rng, q, n: dict(S=_normal(rng, q, n), Y=_normal(rng, q, n)),
        ref=listnet_ref, note="one function called twice"),

    "pinball": dict(src="""
# quantile regression: pinball loss per quantile plus a penalty on crossing quantiles
def pinball(P: f64[n, Q], y: f64[n], tau: f64[Q], lam: f64) -> f64:
    r[i, q] = y[i] - P[i, q]
    return sum[i, q](max(tau[q] * r[i, q], (tau[q] - 1.0) * r[i, q])) / n + lam * sum[i, q]([q + 1 < Q] * max(P[i, q] - P[i, q + 1], 0.0))
""", sizes=dict(n=6, Q=3), make=lambda rng, n, Q: dict(P=_normal(rng, n, Q), y=_normal(rng, n),
                                                        tau=np.linspace(0.1, 0.9, Q), lam=0.5),
        ref=pinball_ref, note="pinball loss via max"),

    "gumbel": dict(src="""
# Gumbel-softmax relaxation with given noise, decoded through a codebook
def gumbel(Z: f64[b, k], G: f64[b, k], tau: f64, V: f64[k, d], T: f64[b, d]) -> f64:
    Y[s, c] = exp((Z[s, c] + G[s, c]) / tau - logsumexp[l]((Z[s, l] + G[s, l]) / tau))
    E[s, e] = sum[c](Y[s, c] * V[c, e])
    return sum[s, e]((E[s, e] - T[s, e]) ** 2)
""", sizes=dict(b=4, k=3, d=2), make=lambda rng, b, k, d: dict(
            Z=_normal(rng, b, k), G=-np.log(-np.log(rng.random((b, k)))), tau=0.7, V=_normal(rng, k, d),
            T=_normal(rng, b, d)),
        ref=gumbel_ref, note="Gumbel-softmax"),

    "gcn2": dict(src="""
# symmetric normalised propagation D^-1/2 (A + I) D^-1/2 X over an edge list
def propagate(X: f64[n, f], src: i64[m], dst: i64[m], dinv: f64[n]) -> f64[n, f]:
    P[u: n, c: f] = dinv[u] * (dinv[u] * X[u, c] + sum[e]([dst[e] == u] * dinv[src[e]] * X[src[e], c]))
    return P

def gcn2(X: f64[n, f], W1: f64[f, h], W2: f64[h, k], src: i64[m], dst: i64[m], y: i64[n]) -> f64:
    deg[u: n] = 1.0 + sum[e]([dst[e] == u])
    dinv[u] = 1.0 / sqrt(deg[u])
    A1 = propagate(X, src, dst, dinv)
    H1[u, q] = max(sum[c](A1[u, c] * W1[c, q]), 0.0)
    A2 = propagate(H1, src, dst, dinv)
    Z[u, r] = sum[q](A2[u, q] * W2[q, r])
    return sum[u](logsumexp[r](Z[u, r]) - Z[u, y[u]]) / n
""", sizes=dict(n=6, f=3, h=4, k=2, m=9), make=lambda rng, n, f, h, k, m: dict(
            X=_normal(rng, n, f), W1=_normal(rng, f, h), W2=_normal(rng, h, k),
            **dict(zip(("src", "dst"), _edges(rng, n, m))), y=rng.integers(0, k, n)),
        ref=gcn2_ref, note="two GCN layers, degrees computed in the program, a called function"),

    "birnn": dict(src="""
# a bidirectional RNN: one forward and one backward recurrence, read together
def birnn(x: f64[T, d], Wf: f64[h, d], Uf: f64[h, h], Wb: f64[h, d], Ub: f64[h, h], v: f64[2, h], y: f64[T]) -> f64:
    hf[t: T, i: h] = tanh(sum[j](Wf[i, j] * x[t, j]) + [t >= 1] * sum[l](Uf[i, l] * hf[t - 1, l]))
    hb[t: T, i: h] = tanh(sum[j](Wb[i, j] * x[t, j]) + [t + 1 < T] * sum[l](Ub[i, l] * hb[t + 1, l]))
    o[t] = sum[i](v[0, i] * hf[t, i] + v[1, i] * hb[t, i])
    return sum[t]((o[t] - y[t]) ** 2)
""", sizes=dict(T=5, d=3, h=4), make=lambda rng, T, d, h: dict(
            x=_normal(rng, T, d), Wf=0.5 * _normal(rng, h, d), Uf=0.5 * _normal(rng, h, h), Wb=0.5 * _normal(rng, h, d),
            Ub=0.5 * _normal(rng, h, h), v=_normal(rng, 2, h), y=_normal(rng, T)),
        ref=birnn_ref, note="two recurrences in opposite directions, a literal dimension"),

    "enet": dict(src="""
def enet(X: f64[n, p], y: f64[n], w: f64[p], l1: f64, l2: f64) -> f64:
    r[i] = sum[j](X[i, j] * w[j]) - y[i]
    return 0.5 * sum[i](r[i] ** 2) / n + l1 * sum[j](sqrt(w[j] ** 2 + 1e-8)) + 0.5 * l2 * sum[j](w[j] ** 2)
""", sizes=dict(n=7, p=3), make=lambda rng, n, p: dict(X=_normal(rng, n, p), y=_normal(rng, n), w=_normal(rng, p),
                                                        l1=0.3, l2=0.2),
        ref=enet_ref, note="elastic net with a smooth abs"),

    "nmf": dict(src="""
# KL non-negative matrix factorisation, factors kept positive by softplus
def nmf(V: f64[n, m], A: f64[n, r], B: f64[r, m], lam: f64) -> f64:
    W[i, k] = softplus(A[i, k])
    H[k, j] = softplus(B[k, j])
    WH[i, j] = sum[k](W[i, k] * H[k, j])
    return sum[i, j](V[i, j] * log(V[i, j] / WH[i, j]) - V[i, j] + WH[i, j]) + lam * sum[i, k](W[i, k])
""", sizes=dict(n=5, m=4, r=2), make=lambda rng, n, m, r: dict(V=rng.random((n, m)) + 0.1, A=_normal(rng, n, r),
                                                                B=_normal(rng, r, m), lam=0.1),
        ref=nmf_ref, note="KL-NMF"),

    "gp": dict(src="""
# the GP likelihood's gradient surrogate: 0.5 tr((K^-1 - a a^T) K) with a = K^-1 y and K^-1 given
def gp(X: f64[n, d], y: f64[n], Kinv: f64[n, n], lell: f64, lsf: f64, lsn: f64) -> f64:
    K[i, j] = exp(2.0 * lsf - 0.5 * sum[c]((X[i, c] - X[j, c]) ** 2) * exp(-2.0 * lell)) + [i == j] * exp(2.0 * lsn)
    al[i] = sum[j](Kinv[i, j] * y[j])
    return 0.5 * sum[i, j]((Kinv[i, j] - al[i] * al[j]) * K[i, j])
""", sizes=dict(n=5, d=2), make=lambda rng, n, d: dict(X=_normal(rng, n, d), y=_normal(rng, n),
                                                        Kinv=np.linalg.inv(np.eye(n) + 0.1 * np.ones((n, n))),
                                                        lell=0.1, lsf=0.2, lsn=-1.0),
        ref=gp_ref, note="kernel matrix built in the program"),

    "rpca": dict(src="""
# robust low-rank fit with a pseudo-Huber penalty on the residual
def rpca(M: f64[n, m], U: f64[n, r], V: f64[m, r], d: f64, lam: f64) -> f64:
    R[i, j] = M[i, j] - sum[k](U[i, k] * V[j, k])
    return sum[i, j](d * d * (sqrt(1.0 + (R[i, j] / d) ** 2) - 1.0)) + lam * (sum[i, k](U[i, k] ** 2) + sum[j, k](V[j, k] ** 2))
""", sizes=dict(n=5, m=4, r=2), make=lambda rng, n, m, r: dict(M=_normal(rng, n, m), U=_normal(rng, n, r),
                                                                V=_normal(rng, m, r), d=0.7, lam=0.1),
        ref=rpca_ref, note="pseudo-Huber robust PCA"),

    "potts": dict(src="""
# mean-field free energy of a Potts model on a grid: unary, pairwise disagreement, entropy
def potts(L: f64[h, w, k], U: f64[h, w, k], beta: f64) -> f64:
    P[r, c, q] = exp(L[r, c, q] - logsumexp[l](L[r, c, l]))
    un = sum[r, c, q](P[r, c, q] * U[r, c, q])
    pw = sum[r, c, q, l]([q != l] * P[r, c, q] * ([r + 1 < h] * P[r + 1, c, l] + [c + 1 < w] * P[r, c + 1, l]))
    ent = sum[r, c, q](P[r, c, q] * log(P[r, c, q]))
    return un + beta * pw + ent
""", sizes=dict(h=3, w=4, k=3), make=lambda rng, h, w, k: dict(L=_normal(rng, h, w, k), U=_normal(rng, h, w, k), beta=0.8),
        ref=potts_ref, note="grid neighbours by brackets, label disagreement"),

    "iwae": dict(src="""
# importance-weighted ELBO of a linear-Gaussian decoder with reparameterised samples
def iwae(x: f64[b, D], mu: f64[b, d], ls: f64[b, d], eps: f64[b, K, d], W: f64[d, D], sig: f64) -> f64:
    z[s, k, j] = mu[s, j] + exp(ls[s, j]) * eps[s, k, j]
    xh[s, k, o] = sum[j](z[s, k, j] * W[j, o])
    logp[s, k] = -0.5 * sum[o]((x[s, o] - xh[s, k, o]) ** 2) / sig ** 2 - 0.5 * sum[j](z[s, k, j] ** 2)
    logq[s, k] = -0.5 * sum[j](eps[s, k, j] ** 2) - sum[j](ls[s, j])
    return sum[s](logsumexp[k](logp[s, k] - logq[s, k]) - log(K)) / b
""", sizes=dict(b=3, D=4, d=2, K=5), make=lambda rng, b, D, d, K: dict(
            x=_normal(rng, b, D), mu=_normal(rng, b, d), ls=0.3 * _normal(rng, b, d), eps=_normal(rng, b, K, d),
            W=_normal(rng, d, D), sig=0.8),
        ref=iwae_ref, note="IWAE bound with logsumexp over samples"),

    "hmm2": dict(src="""
def logsoftmax_rows(R: f64[a, c]) -> f64[a, c]:
    L[i, j] = R[i, j] - logsumexp[l](R[i, l])
    return L

# HMM negative log-likelihood with unconstrained parameters (log-softmax rows), discrete emissions
def hmm2(p0: f64[K], Araw: f64[K, K], Braw: f64[K, V], obs: i64[T]) -> f64:
    logA = logsoftmax_rows(Araw)
    logB = logsoftmax_rows(Braw)
    lpi[j] = p0[j] - logsumexp[l](p0[l])
    al[t: T, j: K] = logB[j, obs[t]] + [t == 0] * lpi[j] + [t >= 1] * logsumexp[i](al[t - 1, i] + logA[i, j])
    return -logsumexp[j](al[T - 1, j])
""", sizes=dict(K=3, V=4, T=6), make=lambda rng, K, V, T: dict(p0=_normal(rng, K), Araw=_normal(rng, K, K),
                                                                Braw=_normal(rng, K, V), obs=rng.integers(0, V, T)),
        ref=hmm2_ref, note="forward algorithm over computed log-probabilities and a gather"),

    "group_dro": dict(src="""
# group DRO: the worst group's mean squared error, plus a soft maximum over weighted groups
def group_dro(X: f64[b, p], y: f64[b], w: f64[p], grp: i64[b], G: f64[k]) -> f64:
    l[s] = (sum[j](X[s, j] * w[j]) - y[s]) ** 2
    gl[g: k] = sum[s]([grp[s] == g] * l[s]) / (1.0 + sum[s]([grp[s] == g]))
    return max[g](gl[g]) + 0.1 * logsumexp[g](G[g] * gl[g])
""", sizes=dict(b=8, p=3, k=3), make=lambda rng, b, p, k: dict(X=_normal(rng, b, p), y=_normal(rng, b), w=_normal(rng, p),
                                                                grp=rng.integers(0, k, b), G=rng.random(k) + 0.5),
        ref=group_dro_ref, note="reductions of reductions, label comparisons"),

    "rot2": dict(src="""
# similarity Procrustes in the plane: a 2 x 2 rotation built from brackets, a size-1 scale
def rot2(th: f64, P: f64[n, 2], Q: f64[n, 2], s: f64[1]) -> f64:
    R[a: 2, b: 2] = [a == 0] * [b == 0] * cos(th) - [a == 0] * [b == 1] * sin(th) + [a == 1] * [b == 0] * sin(th) + [a == 1] * [b == 1] * cos(th)
    return sum[i, a]((s[0] * sum[b](R[a, b] * P[i, b]) - Q[i, a]) ** 2)
""", sizes=dict(n=5), make=lambda rng, n: dict(th=0.4, P=_normal(rng, n, 2), Q=_normal(rng, n, 2), s=np.array([1.3])),
        ref=rot2_ref, note="integer-literal dimensions, a size-1 tensor"),

    "sdtw_band": dict(src="""
# soft-DTW restricted to a Sakoe-Chiba band of width 2: the soft minimum runs over the
# neighbours inside the band only (a filter), cells outside it are 0 and never read
def sdtw_band(x: f64[n], y: f64[m], g: f64) -> f64:
    R[i: n, j: m] = [i - j <= 2 and j - i <= 2] * ((x[i] - y[j]) ** 2 + [i >= 1 or j >= 1] * -g * logsumexp[c: 3 | (c == 0 and i >= 1 and j >= 1) or (c == 1 and i >= 1 and j - i + 1 <= 2) or (c == 2 and j >= 1 and i - j + 1 <= 2)](
        -([c == 0] * [i >= 1 and j >= 1] * R[i - 1, j - 1] + [c == 1] * [i >= 1] * R[i - 1, j] + [c == 2] * [j >= 1] * R[i, j - 1]) / g))
    return R[n - 1, m - 1]
""", sizes=dict(n=6, m=5), make=lambda rng, n, m: dict(x=_normal(rng, n), y=_normal(rng, m), g=0.5),
        ref=sdtw_band_ref, note="two-index recurrence, band bracket, filtered logsumexp"),

    "soft_lcs": dict(src="""
# a smoothed longest-common-subsequence score (max-plus softened by g) over n + 1 by m + 1 cells
def soft_lcs(x: f64[n, d], y: f64[m, d], g: f64) -> f64:
    S[i, j] = sum[k](x[i, k] * y[j, k])
    L[i: n + 1, j: m + 1] = [i >= 1 and j >= 1] * g * log(exp((L[i - 1, j - 1] + S[i - 1, j - 1]) / g) + exp(L[i - 1, j] / g) + exp(L[i, j - 1] / g))
    return L[n, m]
""", sizes=dict(n=4, m=3, d=2), make=lambda rng, n, m, d: dict(x=0.5 * _normal(rng, n, d), y=0.5 * _normal(rng, m, d), g=0.7),
        ref=soft_lcs_ref, note="two-index soft-max recurrence"),

    "cumlse": dict(src="""
# a running log-sum-exp
def cumlse(x: f64[n], w: f64[n]) -> f64:
    c[i] = [i == 0] * x[0] + [i >= 1] * logsumexp[q: 2]([q == 0] * c[i - 1] + [q == 1] * x[i])
    return sum[i](w[i] * c[i])
""", sizes=dict(n=7), make=lambda rng, n: dict(x=_normal(rng, n), w=_normal(rng, n)),
        ref=cumlse_ref, note="logsumexp of two choices in a recurrence"),

    "sat": dict(src="""
# 3 x 3 box means through a summed-area table (a two-index recurrence), fitted to T
def sat(A: f64[n, m], T: f64[n - 2, m - 2]) -> f64:
    S[i, j] = A[i, j] + [i >= 1] * S[i - 1, j] + [j >= 1] * S[i, j - 1] - [i >= 1 and j >= 1] * S[i - 1, j - 1]
    box[i: n - 2, j: m - 2] = S[i + 2, j + 2] - [i >= 1] * S[i - 1, j + 2] - [j >= 1] * S[i + 2, j - 1] + [i >= 1 and j >= 1] * S[i - 1, j - 1]
    return sum[i, j]((box[i, j] / 9.0 - T[i, j]) ** 2)
""", sizes=dict(n=5, m=6), make=lambda rng, n, m: dict(A=_normal(rng, n, m), T=_normal(rng, n - 2, m - 2)),
        ref=sat_ref, note="summed-area table, derived sizes in a parameter"),

    "interp": dict(src="""
# bilinear interpolation at query points with i64 corner indices, fitted to targets
def interp(G: f64[h, w], r0: i64[q], c0: i64[q], r1: i64[q], c1: i64[q], fr: f64[q], fc: f64[q], t: f64[q]) -> f64:
    v[s] = ((1.0 - fr[s]) * (1.0 - fc[s]) * G[r0[s], c0[s]] + fr[s] * (1.0 - fc[s]) * G[r1[s], c0[s]]
        + (1.0 - fr[s]) * fc[s] * G[r0[s], c1[s]] + fr[s] * fc[s] * G[r1[s], c1[s]])
    return sum[s]((v[s] - t[s]) ** 2)
""", sizes=dict(h=4, w=5, q=6), make=_interp_inputs, ref=interp_ref, note="four gathers per point"),

    "savgol": dict(src="""
# a 5-tap smoothing filter (valid part, n - 4 outputs) fitted to y, with a curvature penalty
def savgol(x: f64[n], c: f64[5], y: f64[n - 4], lam: f64) -> f64:
    s[i: n - 4] = sum[j](c[j] * x[i + j])
    d2[i: n - 6] = s[i + 2] - 2.0 * s[i + 1] + s[i]
    return sum[i]((s[i] - y[i]) ** 2) + lam * sum[i](d2[i] ** 2)
""", sizes=dict(n=11), make=lambda rng, n: dict(x=_normal(rng, n), c=np.array([-3.0, 12.0, 17.0, 12.0, -3.0]) / 35.0,
                                                 y=_normal(rng, n - 4), lam=0.3),
        ref=savgol_ref, note="integer-literal window, ranges n - 4 and n - 6"),
}
