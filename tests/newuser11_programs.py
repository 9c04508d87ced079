"""An eleventh set of programs written from the documentation alone.

Domains the earlier sets (tests/newuser_programs.py ... tests/newuser10_programs.py)
leave out: celestial mechanics and robotics (Kepler's equation solved by Newton steps
as a recurrence, a Denavit-Hartenberg arm whose recurrence carries a 4x4 transform,
gyroscope attitude propagation of a unit quaternion renormalised at every step, a
damped pendulum under controls integrated by RK4 with its ten stage statements in one
recurrence group), molecular mechanics (bond stretches and triple-periodic dihedral
torsions through i64 pair and quadruple tables, cross products by a function),
signal processing (a lattice filter over stages and time, the Levinson-Durbin
recursion carrying its coefficient vector, a two-level Haar transform calling one
function twice over halved sizes, a stride-2 transposed convolution onto a derived
length), vision (Lucas-Kanade flow from central differences and 3x3 box sums
through a function over derived sizes, sub-pixel upsampling by a pixel shuffle
written as strided equality brackets), sequence alignment and transport (the
discrete Frechet distance by hard max/min over two leading indices, Needleman-Wunsch
through a substitution table gathered by i64 residues, Gumbel-Sinkhorn normalisation
unrolled as a recurrence over whole matrices, a Gromov-Wasserstein discrepancy over
four indices), learning (banded local attention with a learned relative-position
bias under a filtered logsumexp, the pseudo-likelihood of an RBM with every bit
flipped, a batch-hard triplet loss whose filters compare labels with labels, a GIN
layer with a per-graph readout through i64 node-to-graph labels, an unbiased MMD of
an affine generator) and statistics and econometrics (ordered logit with increasing
cutpoints and label arithmetic in comparisons, complementary log-log binomial
regression with an exposure offset, EGARCH(1,1), a Merton jump-diffusion density as
a truncated Poisson mixture under logsumexp, the Cormack-Jolly-Seber capture-recapture
likelihood through first and last capture labels).  Each entry has the shape of the
other sets: the program text (the function to test is named like the entry), the
sizes of the test inputs, `make(rng, **sizes)`, an independent NumPy version
`ref(**inputs)` and a note.  tests/test_newuser11_programs.py checks them, and the API
around them.
"""
import numpy as np
from scipy.special import logsumexp as _lse

from newuser2_programs import _normal


def _sig(z):
    return 1.0 / (1.0 + np.exp(-z))


def _softplus(z):
    return np.logaddexp(0.0, z)


# ------------------------------------------------------------ mechanics and robotics
def kepler_ref(t, n0, M0, e, a, steps, obs):
    Mn = M0 + n0 * t
    E = Mn.copy()
    for _ in range(len(steps) - 1):
        E = E - (E - e * np.sin(E) - Mn) / (1.0 - e * np.cos(E))
    P = np.stack([a * (np.cos(E) - e), a * np.sqrt(1.0 - e ** 2) * np.sin(E)], axis=1)
    return float(0.5 * np.sum((P - obs) ** 2))


def _dh(th, d, a, al):
    ct, st, ca, sa = np.cos(th), np.sin(th), np.cos(al), np.sin(al)
    return np.array([[ct, -st * ca, st * sa, a * ct],
                     [st, ct * ca, -ct * sa, a * st],
                     [0.0, sa, ca, d],
                     [0.0, 0.0, 0.0, 1.0]])


def dh_chain_ref(th, d, a, al, target):
    T = np.eye(4)
    for j in range(len(th)):
        T = T @ _dh(th[j], d[j], a[j], al[j])
    return float(np.sum((T[:3, 3] - target) ** 2) + 0.01 * np.sum(th ** 2))


def attitude_ref(g, bias, q0, qm, dt):
    T = len(g)
    q = np.zeros((T, 4))
    q[0] = q0 / np.linalg.norm(q0)
    for t in range(1, T):
        w = g[t - 1] - bias
        p = q[t - 1]
        dq = 0.5 * np.array([-(p[1] * w[0] + p[2] * w[1] + p[3] * w[2]),
                             p[0] * w[0] + p[2] * w[2] - p[3] * w[1],
                             p[0] * w[1] - p[1] * w[2] + p[3] * w[0],
                             p[0] * w[2] + p[1] * w[1] - p[2] * w[0]])
        u = p + dt * dq
        q[t] = u / np.linalg.norm(u)
    return float(np.sum(1.0 - np.sum(q * qm, axis=1) ** 2))


def pendulum_rk4_ref(u, th0, w0, dt, cdamp, target):
    T = len(u)
    th, w = np.zeros(T), np.zeros(T)
    th[0], w[0] = th0, w0

    def f(a, b, c):
        return b, -9.81 * np.sin(a) - cdamp * b + c

    for t in range(1, T):
        a, b, c = th[t - 1], w[t - 1], u[t - 1]
        k1 = f(a, b, c)
        k2 = f(a + 0.5 * dt * k1[0], b + 0.5 * dt * k1[1], c)
        k3 = f(a + 0.5 * dt * k2[0], b + 0.5 * dt * k2[1], c)
        k4 = f(a + dt * k3[0], b + dt * k3[1], c)
        th[t] = a + dt / 6.0 * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0])
        w[t] = b + dt / 6.0 * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1])
    return float(np.sum((th - target) ** 2) + 0.01 * np.sum(u ** 2) + w[-1] ** 2)


# ------------------------------------------------------------ molecular mechanics
def dihedral_ff_ref(X, bonds, kb, r0, quad, kt):
    Eb = 0.0
    for (i, j), k in zip(bonds, kb):
        Eb += k * (np.linalg.norm(X[i] - X[j]) - r0) ** 2
    Et = 0.0
    for (a, b, c, d), k in zip(quad, kt):
        b1, b2, b3 = X[b] - X[a], X[c] - X[b], X[d] - X[c]
        n1, n2 = np.cross(b1, b2), np.cross(b2, b3)
        cphi = n1 @ n2 / (np.linalg.norm(n1) * np.linalg.norm(n2))
        Et += k * (1.0 + np.cos(3.0 * np.arccos(cphi)))
    return float(Eb + Et)


# ------------------------------------------------------------ signal processing
def lattice_ref(x, refl):
    T, M = len(x), len(refl)
    f, b = x.copy(), x.copy()
    for m in range(M):
        bd = np.concatenate([[0.0], b[:-1]])
        f, b = f + refl[m] * bd, refl[m] * f + bd
    return float(np.sum(f ** 2 + b ** 2) / T)


def levinson_ref(x, w):
    T, P = len(x), len(w)
    r = np.array([np.sum(x[:T - l] * x[l:]) / T for l in range(P + 1)])
    a = np.zeros(0)
    E = r[0]
    for m in range(1, P + 1):
        kap = -(r[m] + np.sum(a * r[m - 1:0:-1])) / E
        a = np.concatenate([a + kap * a[::-1], [kap]])
        E = E * (1.0 - kap ** 2)
    return float(np.sum(w * a) + np.log(E))


def _haar(x):
    return (x[0::2] + x[1::2]) / np.sqrt(2.0), (x[0::2] - x[1::2]) / np.sqrt(2.0)


def haar2_ref(x, y, lam):
    a1, d1 = _haar(x)
    a2, d2 = _haar(a1)
    return float(0.5 * np.sum((x - y) ** 2)
                 + lam * (np.sum(np.sqrt(d1 ** 2 + 0.01)) + np.sum(np.sqrt(d2 ** 2 + 0.01)))
                 + 0.1 * np.sum(a2 ** 2))


def conv_transpose_ref(x, w, target):
    n, k = len(x), len(w)
    y = np.zeros(2 * n + k - 2)
    for i in range(n):
        y[2 * i:2 * i + k] += x[i] * w
    return float(np.sum((np.tanh(y) - target) ** 2))


# ------------------------------------------------------------ vision
def _box3(A):
    p, q = A.shape
    return np.array([[A[r:r + 3, c:c + 3].sum() for c in range(q - 2)] for r in range(p - 2)])


def lucas_kanade_ref(I0, I1, U, Vt, eps):
    Ix = 0.5 * (I0[1:-1, 2:] - I0[1:-1, :-2])
    Iy = 0.5 * (I0[2:, 1:-1] - I0[:-2, 1:-1])
    It = I1[1:-1, 1:-1] - I0[1:-1, 1:-1]
    Sxx, Syy, Sxy = _box3(Ix * Ix) + eps, _box3(Iy * Iy) + eps, _box3(Ix * Iy)
    Sxt, Syt = _box3(Ix * It), _box3(Iy * It)
    det = Sxx * Syy - Sxy ** 2
    u = (-Syy * Sxt + Sxy * Syt) / det
    v = (Sxy * Sxt - Sxx * Syt) / det
    return float(np.sum((u - U) ** 2 + (v - Vt) ** 2))


def subpixel_ref(F, Wt, target):
    h, w, _ = F.shape
    X = np.einsum("pq,rcq->prc", Wt, F)
    Y = np.zeros((2 * h, 2 * w))
    for a in range(2):
        for b in range(2):
            Y[a::2, b::2] = X[2 * a + b]
    return float(np.sum((Y - target) ** 2))


# ------------------------------------------------------------ alignment and transport
def frechet_ref(P, Q):
    n, m = len(P), len(Q)
    D = np.sqrt(((P[:, None, :] - Q[None, :, :]) ** 2).sum(-1))
    R = np.zeros((n, m))
    for i in range(n):
        for j in range(m):
            if i == 0 and j == 0:
                R[i, j] = D[0, 0]
            elif i == 0:
                R[i, j] = max(D[i, j], R[i, j - 1])
            elif j == 0:
                R[i, j] = max(D[i, j], R[i - 1, j])
            else:
                R[i, j] = max(D[i, j], min(R[i - 1, j], R[i - 1, j - 1], R[i, j - 1]))
    return float(R[-1, -1])


def needleman_ref(S, sa, sb, gap):
    n, m = len(sa), len(sb)
    H = np.zeros((n + 1, m + 1))
    H[:, 0] = -gap * np.arange(n + 1)
    H[0, :] = -gap * np.arange(m + 1)
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            H[i, j] = max(H[i - 1, j - 1] + S[sa[i - 1], sb[j - 1]],
                          H[i - 1, j] - gap, H[i, j - 1] - gap)
    return float(H[n, m])


def sinkhorn_match_ref(X, C, tau, steps):
    R = X / tau
    R = R - _lse(R, axis=1, keepdims=True)
    for _ in range(len(steps) - 1):
        R = R - _lse(R, axis=0, keepdims=True)
        R = R - _lse(R, axis=1, keepdims=True)
    return float(np.sum(np.exp(R) * C))


def gromov_ref(X, Y, G):
    n = len(X)
    C1 = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    C2 = ((Y[:, None, :] - Y[None, :, :]) ** 2).sum(-1)
    T = np.exp(G - _lse(G))
    L = (C1[:, None, :, None] - C2[None, :, None, :]) ** 2
    gw = np.einsum("ijkl,ij,kl->", L, T, T)
    return float(gw + np.sum((T.sum(1) - 1.0 / n) ** 2))


# ------------------------------------------------------------ learning
def local_attn_ref(Q, K, V, rel, target):
    n, d = Q.shape
    W = len(rel)
    O = np.zeros_like(Q)
    for i in range(n):
        js = [j for j in range(n) if 0 <= i - j < W]
        s = np.array([Q[i] @ K[j] / np.sqrt(d) + rel[i - j] for j in js])
        p = np.exp(s - _lse(s))
        O[i] = p @ V[js]
    return float(np.sum((O - target) ** 2))


def rbm_pl_ref(V, W, bv, bh):
    def free(v):
        return -v @ bv - np.sum(_softplus(bh + v @ W))

    total = 0.0
    for v in V:
        F = free(v)
        for i in range(len(v)):
            u = v.copy()
            u[i] = 1.0 - u[i]
            total += -np.log(_sig(free(u) - F))
    return float(total / len(V))


def triplet_hard_ref(X, W, lab, margin):
    Z = X @ W
    D = np.sqrt(((Z[:, None, :] - Z[None, :, :]) ** 2).sum(-1) + 1e-9)
    out = 0.0
    for s in range(len(X)):
        same = (lab == lab[s]) & (np.arange(len(X)) != s)
        pos = D[s, same].max()
        neg = D[s, lab != lab[s]].min()
        out += _softplus(margin + pos - neg)
    return float(out / len(X))


def gin_readout_ref(H0, W1, W2, src, dst, graph, y, eps):
    agg = (1.0 + eps) * H0
    for s, t in zip(src, dst):
        agg[t] = agg[t] + H0[s]
    H1 = np.maximum(agg @ W1, 0.0)
    G = len(y)
    pool = np.zeros((G, W1.shape[1]))
    for u, q in enumerate(graph):
        pool[q] += H1[u]
    Z = pool @ W2
    return float(np.mean(_lse(Z, axis=1) - Z[np.arange(G), y]))


def _kmat(P, Q, bw):
    return np.exp(-((P[:, None, :] - Q[None, :, :]) ** 2).sum(-1) / (2.0 * bw ** 2))


def mmd_ref(X, Zn, A, mu, bw):
    Y = Zn @ A + mu
    n, m = len(X), len(Y)
    Kxx, Kyy, Kxy = _kmat(X, X, bw), _kmat(Y, Y, bw), _kmat(X, Y, bw)
    return float((Kxx.sum() - np.trace(Kxx)) / (n * (n - 1))
                 + (Kyy.sum() - np.trace(Kyy)) / (m * (m - 1)) - 2.0 * Kxy.mean())


# ------------------------------------------------------------ statistics and econometrics
def ordered_logit_ref(X, w, c0, dl, y):
    C = len(dl)
    cut = c0 + np.concatenate([[0.0], np.cumsum(np.exp(dl[1:]))])
    eta = X @ w
    cdf = np.concatenate([_sig(cut[None, :] - eta[:, None]), np.ones((len(y), 1))], axis=1)
    lower = np.concatenate([np.zeros((len(y), 1)), cdf[:, :C]], axis=1)
    prob = cdf[np.arange(len(y)), y] - lower[np.arange(len(y)), y]
    return float(-np.sum(np.log(prob)))


def cloglog_ref(X, w, b0, y, trials, logexp):
    eta = b0 + logexp + X @ w
    mu = np.exp(eta)
    logp = np.log(-np.expm1(-mu))
    return float(-np.sum(y * logp - (trials - y) * mu) + 0.5 * np.sum(w ** 2))


def egarch_ref(r, om, al, ga, be, ls0):
    T = len(r)
    ls, z = np.zeros(T), np.zeros(T)
    for t in range(T):
        ls[t] = ls0 if t == 0 else (om + be * ls[t - 1]
                                    + al * (abs(z[t - 1]) - np.sqrt(2.0 / np.pi)) + ga * z[t - 1])
        z[t] = r[t] * np.exp(-0.5 * ls[t])
    return float(0.5 * np.sum(ls + z ** 2))


def merton_jump_ref(r, mu, lsig, lam, muj, lsj, steps):
    K = len(steps)
    k = np.arange(K)
    lfact = np.concatenate([[0.0], np.cumsum(np.log(np.arange(1, K)))])
    var = np.exp(2 * lsig) + k * np.exp(2 * lsj)
    lp = (k * np.log(lam) - lam - lfact)[None, :] - 0.5 * np.log(2 * np.pi * var)[None, :] \
        - (r[:, None] - mu - k[None, :] * muj) ** 2 / (2 * var[None, :])
    return float(-np.sum(_lse(lp, axis=1)))


def cjs_ref(Hc, first, last, lphi, lp):
    T = Hc.shape[1]
    phi, p = _sig(lphi), _sig(lp)
    chi = np.ones(T)
    for t in range(T - 2, -1, -1):
        chi[t] = (1.0 - phi[t]) + phi[t] * (1.0 - p[t + 1]) * chi[t + 1]
    ll = 0.0
    for s in range(len(Hc)):
        for t in range(first[s] + 1, last[s] + 1):
            ll += np.log(phi[t - 1]) + Hc[s, t] * np.log(p[t]) + (1 - Hc[s, t]) * np.log(1 - p[t])
        ll += np.log(chi[last[s]])
    return float(-ll)


# ------------------------------------------------------------ input makers
def _quads(rng, N, m):
    return np.array([rng.choice(N, 4, replace=False) for _ in range(m)])


def _cjs_inputs(rng, I, T):
    first = rng.integers(0, T - 1, I)
    last = np.array([rng.integers(f, T) for f in first])
    Hc = np.zeros((I, T))
    for s in range(I):
        Hc[s, first[s]] = 1.0
        Hc[s, last[s]] = 1.0
        for t in range(first[s] + 1, last[s]):
            Hc[s, t] = float(rng.random() < 0.5)
    return dict(Hc=Hc, first=first, last=last, lphi=1.0 + 0.3 * _normal(rng, T),
                lp=0.3 * _normal(rng, T))


def _graphs(rng, v, G):
    graph = np.sort(rng.integers(0, G, v))
    graph[:G] = np.arange(G)                    # every graph has a node
    graph = np.sort(graph)
    src, dst = [], []
    for u in range(v):
        for w in range(v):
            if u != w and graph[u] == graph[w] and rng.random() < 0.6:
                src.append(u)
                dst.append(w)
    return graph, np.array(src), np.array(dst)


def _gin_inputs(rng, v, f, g, k, G):
    graph, src, dst = _graphs(rng, v, G)
    return dict(H0=_normal(rng, v, f), W1=0.5 * _normal(rng, f, g), W2=0.5 * _normal(rng, g, k),
                src=src, dst=dst, graph=graph, y=rng.integers(0, k, G), eps=0.1)


PROGRAMS = {
    # ------------------------------------------------------------ mechanics and robotics
    "kepler": dict(src="""
# Kepler's equation M = E - e sin E, solved for the eccentric anomaly E by K - 1
# Newton steps (the number of steps is the length of `steps`, as in examples/power.tl)
def eccentric_anomaly(Mn: f64[m], e: f64, steps: f64[K]) -> f64[m]:
    E[k: K, s: m] = [k == 0] * Mn[s] + [k >= 1] * (E[k - 1, s]
        - (E[k - 1, s] - e * sin(E[k - 1, s]) - Mn[s]) / (1.0 - e * cos(E[k - 1, s])))
    Ef[s] = E[K - 1, s]
    return Ef

# the position in the orbital plane at the observation times, fitted to observations
def kepler(t: f64[m], n0: f64, M0: f64, e: f64, a: f64, steps: f64[K], obs: f64[m, 2]) -> f64:
    Mn[s] = M0 + n0 * t[s]
    E = eccentric_anomaly(Mn, e, steps)
    P[s, c: 2] = a * ([c == 0] * (cos(E[s]) - e) + [c == 1] * sqrt(1.0 - e ** 2) * sin(E[s]))
    return 0.5 * sum[s, c]((P[s, c] - obs[s, c]) ** 2)
""", sizes=dict(m=5, K=6), make=lambda rng, m, K: dict(
            t=np.sort(rng.random(m)) * 3.0, n0=1.3, M0=0.2, e=0.3, a=1.5, steps=np.zeros(K),
            obs=_normal(rng, m, 2)),
        ref=kepler_ref, note="Newton iterations as a recurrence over the iteration index"),

    "dh_chain": dict(src="""
# Denavit-Hartenberg links: one 4x4 homogeneous transform per joint
def dh_link(th: f64[J], d: f64[J], a: f64[J], al: f64[J]) -> f64[J, 4, 4]:
    A[j, r: 4, c: 4] = ([r == 0 and c == 0] * cos(th[j]) - [r == 0 and c == 1] * sin(th[j]) * cos(al[j])
        + [r == 0 and c == 2] * sin(th[j]) * sin(al[j]) + [r == 0 and c == 3] * a[j] * cos(th[j])
        + [r == 1 and c == 0] * sin(th[j]) + [r == 1 and c == 1] * cos(th[j]) * cos(al[j])
        - [r == 1 and c == 2] * cos(th[j]) * sin(al[j]) + [r == 1 and c == 3] * a[j] * sin(th[j])
        + [r == 2 and c == 1] * sin(al[j]) + [r == 2 and c == 2] * cos(al[j])
        + [r == 2 and c == 3] * d[j] + [r == 3 and c == 3])
    return A

# forward kinematics: the chain of transforms as a recurrence over the joints, the
# end effector's position against a target, a small penalty on the joint angles
def dh_chain(th: f64[J], d: f64[J], a: f64[J], al: f64[J], target: f64[3]) -> f64:
    A = dh_link(th, d, a, al)
    T[j: J, r: 4, c: 4] = [j == 0] * A[0, r, c] + [j >= 1] * sum[q](T[j - 1, r, q] * A[j, q, c])
    return sum[r: 3]((T[J - 1, r, 3] - target[r]) ** 2) + 0.01 * sum[j](th[j] ** 2)
""", sizes=dict(J=4), make=lambda rng, J: dict(
            th=_normal(rng, J), d=0.3 * rng.random(J), a=0.5 + 0.5 * rng.random(J),
            al=_normal(rng, J), target=np.array([0.5, 0.8, 0.2])),
        ref=dh_chain_ref, note="a recurrence carrying a matrix, literal dimensions"),

    "attitude": dict(src="""
# gyroscope integration of a unit quaternion (w, x, y, z): an Euler step of
# dq/dt = q * (0, omega) / 2 with the bias removed from the rate, renormalised at every
# step; scored by 1 - <q, q_measured>^2, which ignores the sign of a quaternion
def attitude(g: f64[T, 3], bias: f64[3], q0: f64[4], qm: f64[T, 4], dt: f64) -> f64:
    om[t, c] = g[t, c] - bias[c]
    u[t: T, a: 4] = [t == 0] * q0[a] + [t >= 1] * (q[t - 1, a] + 0.5 * dt * (
          [a == 0] * -(q[t - 1, 1] * om[t - 1, 0] + q[t - 1, 2] * om[t - 1, 1] + q[t - 1, 3] * om[t - 1, 2])
        + [a == 1] * (q[t - 1, 0] * om[t - 1, 0] + q[t - 1, 2] * om[t - 1, 2] - q[t - 1, 3] * om[t - 1, 1])
        + [a == 2] * (q[t - 1, 0] * om[t - 1, 1] - q[t - 1, 1] * om[t - 1, 2] + q[t - 1, 3] * om[t - 1, 0])
        + [a == 3] * (q[t - 1, 0] * om[t - 1, 2] + q[t - 1, 1] * om[t - 1, 1] - q[t - 1, 2] * om[t - 1, 0])))
    q[t: T, a: 4] = u[t, a] / sqrt(sum[b](u[t, b] ** 2))
    return sum[t](1.0 - sum[a](q[t, a] * qm[t, a]) ** 2)
""", sizes=dict(T=6), make=lambda rng, T: dict(
            g=0.5 * _normal(rng, T, 3), bias=0.05 * _normal(rng, 3),
            q0=np.array([0.9, 0.1, -0.3, 0.2]),
            qm=(lambda Q: Q / np.linalg.norm(Q, axis=1, keepdims=True))(
                np.array([1.0, 0.0, 0.0, 0.0]) + 0.3 * _normal(rng, T, 4)), dt=0.1),
        ref=attitude_ref, note="two members, the normalisation read at offset 0"),

    "pendulum_rk4": dict(src="""
# a damped pendulum driven by a torque per step, integrated by the classical RK4: the
# four stages of both state variables are statements of one recurrence group; the
# trajectory should stay near a target angle and stop at the end
def pendulum_rk4(u: f64[T], th0: f64, w0: f64, dt: f64, cdamp: f64, target: f64) -> f64:
    th[t: T] = [t == 0] * th0 + [t >= 1] * (th[t - 1] + dt / 6.0 * (k1a[t - 1] + 2.0 * k2a[t - 1] + 2.0 * k3a[t - 1] + k4a[t - 1]))
    w[t: T] = [t == 0] * w0 + [t >= 1] * (w[t - 1] + dt / 6.0 * (k1b[t - 1] + 2.0 * k2b[t - 1] + 2.0 * k3b[t - 1] + k4b[t - 1]))
    k1a[t: T] = w[t]
    k1b[t: T] = -9.81 * sin(th[t]) - cdamp * w[t] + u[t]
    k2a[t: T] = w[t] + 0.5 * dt * k1b[t]
    k2b[t: T] = -9.81 * sin(th[t] + 0.5 * dt * k1a[t]) - cdamp * (w[t] + 0.5 * dt * k1b[t]) + u[t]
    k3a[t: T] = w[t] + 0.5 * dt * k2b[t]
    k3b[t: T] = -9.81 * sin(th[t] + 0.5 * dt * k2a[t]) - cdamp * (w[t] + 0.5 * dt * k2b[t]) + u[t]
    k4a[t: T] = w[t] + dt * k3b[t]
    k4b[t: T] = -9.81 * sin(th[t] + dt * k3a[t]) - cdamp * (w[t] + dt * k3b[t]) + u[t]
    return sum[t]((th[t] - target) ** 2) + 0.01 * sum[t](u[t] ** 2) + w[T - 1] ** 2
""", sizes=dict(T=7), make=lambda rng, T: dict(
            u=_normal(rng, T), th0=0.3, w0=-0.2, dt=0.1, cdamp=0.4, target=0.5),
        ref=pendulum_rk4_ref, note="ten statements in one group, eight read at offset 0"),

    # ------------------------------------------------------------ molecular mechanics
    "dihedral_ff": dict(src="""
# the cross product of corresponding rows
def cross_rows(u: f64[m, 3], v: f64[m, 3]) -> f64[m, 3]:
    w[q, a: 3] = ([a == 0] * (u[q, 1] * v[q, 2] - u[q, 2] * v[q, 1])
                + [a == 1] * (u[q, 2] * v[q, 0] - u[q, 0] * v[q, 2])
                + [a == 2] * (u[q, 0] * v[q, 1] - u[q, 1] * v[q, 0]))
    return w

# a force field of harmonic bonds over an i64 pair table and threefold torsions
# k (1 + cos 3 phi) = k (1 + 4 cos^3 phi - 3 cos phi) over an i64 quadruple table,
# cos phi from the normals of the two planes
def dihedral_ff(X: f64[N, 3], bonds: i64[B, 2], kb: f64[B], r0: f64, quad: i64[m, 4], kt: f64[m]) -> f64:
    eb = sum[p](kb[p] * (sqrt(sum[c]((X[bonds[p, 0], c] - X[bonds[p, 1], c]) ** 2)) - r0) ** 2)
    b1[q, c: 3] = X[quad[q, 1], c] - X[quad[q, 0], c]
    b2[q, c: 3] = X[quad[q, 2], c] - X[quad[q, 1], c]
    b3[q, c: 3] = X[quad[q, 3], c] - X[quad[q, 2], c]
    n1 = cross_rows(b1, b2)
    n2 = cross_rows(b2, b3)
    cphi[q] = sum[c](n1[q, c] * n2[q, c]) / sqrt(sum[c](n1[q, c] ** 2) * sum[c](n2[q, c] ** 2))
    return eb + sum[q](kt[q] * (1.0 + 4.0 * cphi[q] ** 3 - 3.0 * cphi[q]))
""", sizes=dict(N=6, B=5, m=3), make=lambda rng, N, B, m: dict(
            X=_normal(rng, N, 3), bonds=np.stack([np.arange(B), np.arange(1, B + 1)], axis=1),
            kb=1.0 + rng.random(B), r0=1.2, quad=_quads(rng, N, m), kt=0.5 + rng.random(m)),
        ref=dihedral_ff_ref, note="gathers through 2-D i64 tables, a tensor-valued call twice"),

    # ------------------------------------------------------------ signal processing
    "lattice": dict(src="""
# a lattice (analysis) filter: stage m turns the forward and backward prediction
# errors of stage m - 1 into its own with the reflection coefficient refl[m]; stage
# 0 reads the signal.  The forward and backward errors of the last stage are the
# Burg criterion.
def lattice(x: f64[T], refl: f64[M]) -> f64:
    f[m: M, t: T] = ([m == 0] * x[t] + [m >= 1] * f[m - 1, t]
                     + refl[m] * [t >= 1] * ([m == 0] * x[t - 1] + [m >= 1] * b[m - 1, t - 1]))
    b[m: M, t: T] = (refl[m] * ([m == 0] * x[t] + [m >= 1] * f[m - 1, t])
                     + [t >= 1] * ([m == 0] * x[t - 1] + [m >= 1] * b[m - 1, t - 1]))
    return sum[t](f[M - 1, t] ** 2 + b[M - 1, t] ** 2) / T
""", sizes=dict(T=9, M=3), make=lambda rng, T, M: dict(
            x=_normal(rng, T), refl=0.8 * (rng.random(M) - 0.5)),
        ref=lattice_ref, note="a group over stages whose other index reads one step back"),

    "levinson": dict(src="""
# the Levinson-Durbin recursion: from the autocorrelation of a signal to the
# coefficients a[p, k] of the order p + 1 predictor (zero above k = p), with the
# reflection coefficient kap[p] and the prediction error E[p]; three statements of
# one group over the order
def levinson(x: f64[T], w: f64[P]) -> f64:
    r[l: P + 1] = sum[t]([t + l < T] * x[t] * x[t + l]) / T
    kap[p: P] = -(r[p + 1] + [p >= 1] * sum[k | k < p](a[p - 1, k] * r[p - k])) / ([p == 0] * r[0] + [p >= 1] * E[p - 1])
    a[p: P, k: P] = [p >= 1 and k < p] * (a[p - 1, k] + kap[p] * a[p - 1, p - 1 - k]) + [k == p] * kap[p]
    E[p: P] = ([p == 0] * r[0] + [p >= 1] * E[p - 1]) * (1.0 - kap[p] ** 2)
    return sum[k](w[k] * a[P - 1, k]) + log(E[P - 1])
""", sizes=dict(T=12, P=3), make=lambda rng, T, P: dict(
            x=np.sin(0.7 * np.arange(T)) + 0.5 * _normal(rng, T), w=_normal(rng, P)),
        ref=levinson_ref, note="a range P + 1, a reversed read p - 1 - k inside a group"),

    "haar2": dict(src="""
# one level of the Haar transform: averages and details, each of half the length
def haar(x: f64[n]) -> (f64[n / 2], f64[n / 2]):
    av[i: n / 2] = (x[2 * i] + x[2 * i + 1]) / sqrt(2.0)
    dt[i: n / 2] = (x[2 * i] - x[2 * i + 1]) / sqrt(2.0)
    return av, dt

# wavelet denoising: fit the data, with a smoothed l1 penalty on the details of two
# levels (the second level transforms the first level's averages) and a ridge on the
# coarsest averages
def haar2(x: f64[n], y: f64[n], lam: f64) -> f64:
    a1, d1 = haar(x)
    a2, d2 = haar(a1)
    return (0.5 * sum[i]((x[i] - y[i]) ** 2)
            + lam * (sum[i](sqrt(d1[i] ** 2 + 0.01)) + sum[i](sqrt(d2[i] ** 2 + 0.01)))
            + 0.1 * sum[i](a2[i] ** 2))
""", sizes=dict(n=8), make=lambda rng, n: dict(x=_normal(rng, n), y=_normal(rng, n), lam=0.3),
        ref=haar2_ref, note="a tuple-returning call applied to its own halved output"),

    "conv_transpose": dict(src="""
# a stride-2 transposed convolution (a decoder's upsampling): input i adds w[t] at
# output 2 i + t, so the output has 2 n + k - 2 entries; a tanh and a squared error
def conv_transpose(x: f64[n], w: f64[k], target: f64[2 * n + k - 2]) -> f64:
    y[o: 2 * n + k - 2] = sum[i, t]([o == 2 * i + t] * w[t] * x[i])
    return sum[o]((tanh(y[o]) - target[o]) ** 2)
""", sizes=dict(n=5, k=3), make=lambda rng, n, k: dict(
            x=_normal(rng, n), w=_normal(rng, k), target=0.5 * _normal(rng, 2 * n + k - 2)),
        ref=conv_transpose_ref, note="a strided equality bracket onto a derived length"),

    # ------------------------------------------------------------ vision
    "lucas_kanade": dict(src="""
# sums over every 3x3 window that fits
def box3(A: f64[p, q]) -> f64[p - 2, q - 2]:
    S[r: p - 2, c: q - 2] = sum[u: 3, v: 3](A[r + u, c + v])
    return S

# Lucas-Kanade optical flow: central differences inside the border, the structure
# tensor and the mixed terms summed over 3x3 windows, the 2x2 system per pixel solved
# by Cramer's rule (regularised by eps), the flow against a reference flow
def lucas_kanade(I0: f64[h, w], I1: f64[h, w], U: f64[h - 4, w - 4], Vt: f64[h - 4, w - 4], eps: f64) -> f64:
    Ix[r: h - 2, c: w - 2] = 0.5 * (I0[r + 1, c + 2] - I0[r + 1, c])
    Iy[r: h - 2, c: w - 2] = 0.5 * (I0[r + 2, c + 1] - I0[r, c + 1])
    It[r: h - 2, c: w - 2] = I1[r + 1, c + 1] - I0[r + 1, c + 1]
    xx[r, c] = Ix[r, c] ** 2
    yy[r, c] = Iy[r, c] ** 2
    xy[r, c] = Ix[r, c] * Iy[r, c]
    xt[r, c] = Ix[r, c] * It[r, c]
    yt[r, c] = Iy[r, c] * It[r, c]
    Sxx = box3(xx)
    Syy = box3(yy)
    Sxy = box3(xy)
    Sxt = box3(xt)
    Syt = box3(yt)
    det[r, c] = (Sxx[r, c] + eps) * (Syy[r, c] + eps) - Sxy[r, c] ** 2
    fu[r, c] = (-(Syy[r, c] + eps) * Sxt[r, c] + Sxy[r, c] * Syt[r, c]) / det[r, c]
    fv[r, c] = (Sxy[r, c] * Sxt[r, c] - (Sxx[r, c] + eps) * Syt[r, c]) / det[r, c]
    return sum[r, c]((fu[r, c] - U[r, c]) ** 2 + (fv[r, c] - Vt[r, c]) ** 2)
""", sizes=dict(h=7, w=8), make=lambda rng, h, w: dict(
            I0=_normal(rng, h, w), I1=_normal(rng, h, w), U=0.1 * _normal(rng, h - 4, w - 4),
            Vt=0.1 * _normal(rng, h - 4, w - 4), eps=0.5),
        ref=lucas_kanade_ref, note="five calls over derived sizes h - 2 -> h - 4"),

    "subpixel": dict(src="""
# depth to space: four channels of an h x w map become one 2h x 2w image, channel
# 2 a + b going to the pixels of parity (a, b)
def pixel_shuffle(X: f64[4, h, w]) -> f64[2 * h, 2 * w]:
    Y[R: 2 * h, C: 2 * w] = sum[r, c, a: 2, b: 2]([R == 2 * r + a and C == 2 * c + b] * X[2 * a + b, r, c])
    return Y

# a sub-pixel convolution layer (a 1x1 convolution to four channels, then the
# shuffle) fitted to a high-resolution target
def subpixel(F: f64[h, w, k], Wt: f64[4, k], target: f64[2 * h, 2 * w]) -> f64:
    X[p, r, c] = sum[q](Wt[p, q] * F[r, c, q])
    Y = pixel_shuffle(X)
    return sum[R, C]((Y[R, C] - target[R, C]) ** 2)
""", sizes=dict(h=3, w=4, k=2), make=lambda rng, h, w, k: dict(
            F=_normal(rng, h, w, k), Wt=_normal(rng, 4, k), target=_normal(rng, 2 * h, 2 * w)),
        ref=subpixel_ref, note="two strided equalities in one bracket, a doubled size"),

    # ------------------------------------------------------------ alignment and transport
    "frechet": dict(src="""
# the discrete Frechet distance between two polylines: R[i, j] is the smallest, over
# monotone couplings of P[0..i] and Q[0..j], of the largest distance of a coupled pair
def frechet(P: f64[n, 2], Q: f64[m, 2]) -> f64:
    D[i, j] = sqrt(sum[c]((P[i, c] - Q[j, c]) ** 2))
    R[i: n, j: m] = ([i == 0 and j == 0] * D[i, j]
                     + [i == 0 and j >= 1] * max(D[i, j], R[i, j - 1])
                     + [i >= 1 and j == 0] * max(D[i, j], R[i - 1, j])
                     + [i >= 1 and j >= 1] * max(D[i, j], min(min(R[i - 1, j], R[i - 1, j - 1]), R[i, j - 1])))
    return R[n - 1, m - 1]
""", sizes=dict(n=5, m=6), make=lambda rng, n, m: dict(
            P=np.cumsum(_normal(rng, n, 2), axis=0), Q=np.cumsum(_normal(rng, m, 2), axis=0)),
        ref=frechet_ref, note="hard max and min builtins over two leading indices"),

    "needleman": dict(src="""
# Needleman-Wunsch global alignment score with a linear gap penalty; residues are i64
# labels into a substitution table.  The gap costs of the first row and column are
# running sums, so no index is used as a value.
def needleman(S: f64[A, A], sa: i64[n], sb: i64[m], gap: f64) -> f64:
    sub[i, j] = S[sa[i], sb[j]]
    rowg[i: n] = gap + [i >= 1] * rowg[i - 1]
    colg[j: m] = gap + [j >= 1] * colg[j - 1]
    H[i: n, j: m] = max(max(
        sub[i, j] + [i >= 1 and j >= 1] * H[i - 1, j - 1] - [i == 0 and j >= 1] * colg[j - 1]
            - [i >= 1 and j == 0] * rowg[i - 1],
        [i >= 1] * H[i - 1, j] - [i == 0] * colg[j] - gap),
        [j >= 1] * H[i, j - 1] - [j == 0] * rowg[i] - gap)
    return H[n - 1, m - 1]
""", sizes=dict(A=4, n=5, m=6), make=lambda rng, A, n, m: dict(
            S=_normal(rng, A, A) + 2.0 * np.eye(A), sa=rng.integers(0, A, n),
            sb=rng.integers(0, A, m), gap=1.1),
        ref=needleman_ref, note="a 2-D max recurrence over gathered scores"),

    "sinkhorn_match": dict(src="""
# Gumbel-Sinkhorn: the rows of X / tau normalised in log space, then L - 1 rounds of
# column and row normalisation, as a recurrence over the rounds carrying the whole
# matrix; the soft permutation's expected matching cost
def sinkhorn_match(X: f64[n, n], C: f64[n, n], tau: f64, steps: f64[L]) -> f64:
    A[l: L, i: n, j: n] = [l == 0] * X[i, j] / tau + [l >= 1] * (R[l - 1, i, j] - logsumexp[k](R[l - 1, k, j]))
    R[l: L, i: n, j: n] = A[l, i, j] - logsumexp[k](A[l, i, k])
    return sum[i, j](exp(R[L - 1, i, j]) * C[i, j])
""", sizes=dict(n=4, L=4), make=lambda rng, n, L: dict(
            X=_normal(rng, n, n), C=rng.random((n, n)), tau=0.5, steps=np.zeros(L)),
        ref=sinkhorn_match_ref, note="logsumexps over columns and rows inside a group"),

    "gromov": dict(src="""
# a Gromov-Wasserstein discrepancy between two point clouds for a coupling given by
# a softmax over all pairs, written as the four-index sum of its definition; a
# penalty keeps the coupling's first marginal uniform
def gromov(X: f64[n, d], Y: f64[m, e], G: f64[n, m]) -> f64:
    C1[i, k] = sum[c]((X[i, c] - X[k, c]) ** 2)
    C2[j, l] = sum[c]((Y[j, c] - Y[l, c]) ** 2)
    T[i, j] = exp(G[i, j] - logsumexp[p, q](G[p, q]))
    gw = sum[i, j, k, l]((C1[i, k] - C2[j, l]) ** 2 * T[i, j] * T[k, l])
    return gw + sum[i]((sum[j](T[i, j]) - 1.0 / n) ** 2)
""", sizes=dict(n=4, d=2, m=5, e=3), make=lambda rng, n, d, m, e: dict(
            X=_normal(rng, n, d), Y=_normal(rng, m, e), G=_normal(rng, n, m)),
        ref=gromov_ref, note="a four-index sum, a logsumexp over two indices"),

    # ------------------------------------------------------------ learning
    "local_attn": dict(src="""
# causal attention within a window of the last W positions, with a learned bias per
# relative position; the band is a filter of the logsumexp and of the weighted sum
def local_attn(Q: f64[n, d], K: f64[n, d], V: f64[n, d], rel: f64[W], target: f64[n, d]) -> f64:
    lse[i] = logsumexp[j | 0 <= i - j < W](sum[c](Q[i, c] * K[j, c]) / sqrt(d) + rel[i - j])
    O[i, c] = sum[j | 0 <= i - j < W](exp(sum[e](Q[i, e] * K[j, e]) / sqrt(d) + rel[i - j] - lse[i]) * V[j, c])
    return sum[i, c]((O[i, c] - target[i, c]) ** 2)
""", sizes=dict(n=7, d=3, W=3), make=lambda rng, n, d, W: dict(
            Q=_normal(rng, n, d), K=_normal(rng, n, d), V=_normal(rng, n, d), rel=_normal(rng, W),
            target=_normal(rng, n, d)),
        ref=local_attn_ref, note="a band filter guarding the read rel[i - j]"),

    "rbm_pl": dict(src="""
# the pseudo-log-likelihood of a binary RBM: the free energy of each visible vector
# against that of the vector with bit i flipped, -log sigmoid(F(flip) - F(v))
def rbm_pl(V: f64[b, n], W: f64[n, h], bv: f64[n], bh: f64[h]) -> f64:
    act[s, j] = bh[j] + sum[i](V[s, i] * W[i, j])
    lin[s] = sum[i](bv[i] * V[s, i])
    fv[s] = -lin[s] - sum[j](softplus(act[s, j]))
    ff[s, i] = -(lin[s] + bv[i] * (1.0 - 2.0 * V[s, i])) - sum[j](softplus(act[s, j] + (1.0 - 2.0 * V[s, i]) * W[i, j]))
    return sum[s, i](softplus(fv[s] - ff[s, i])) / b
""", sizes=dict(b=4, n=5, h=3), make=lambda rng, b, n, h: dict(
            V=(rng.random((b, n)) < 0.5).astype(float), W=0.5 * _normal(rng, n, h),
            bv=0.3 * _normal(rng, n), bh=0.3 * _normal(rng, h)),
        ref=rbm_pl_ref, note="a b x n x h intermediate of flipped activations"),

    "triplet_hard": dict(src="""
# batch-hard triplet loss on a linear embedding: for each anchor the farthest
# positive (same label, not itself) and the nearest negative, by filtered max and min
def triplet_hard(X: f64[b, d], W: f64[d, e], lab: i64[b], margin: f64) -> f64:
    Z[s, c] = sum[f](X[s, f] * W[f, c])
    D[s, t] = sqrt(sum[c]((Z[s, c] - Z[t, c]) ** 2) + 1e-9)
    pos[s] = max[t | lab[t] == lab[s] and t != s](D[s, t])
    neg[s] = min[t | lab[t] != lab[s]](D[s, t])
    return sum[s](softplus(margin + pos[s] - neg[s])) / b
""", sizes=dict(b=8, d=4, e=3), make=lambda rng, b, d, e: dict(
            X=_normal(rng, b, d), W=_normal(rng, d, e), lab=rng.permutation(np.arange(b) % 3),
            margin=0.5),
        ref=triplet_hard_ref, note="labels compared with labels in reduction filters"),

    "gin_readout": dict(src="""
# one GIN layer over a batch of graphs (an edge list src -> dst), a sum readout per
# graph through the node-to-graph labels, and a graph classifier's cross-entropy
def gin_readout(H0: f64[v, f], W1: f64[f, g], W2: f64[g, k], src: i64[m], dst: i64[m],
                graph: i64[v], y: i64[G], eps: f64) -> f64:
    agg[u, c] = (1.0 + eps) * H0[u, c] + sum[e]([dst[e] == u] * H0[src[e], c])
    H1[u, j] = max(sum[c](agg[u, c] * W1[c, j]), 0.0)
    pool[q: G, j] = sum[u]([graph[u] == q] * H1[u, j])
    Z[q, t] = sum[j](pool[q, j] * W2[j, t])
    return sum[q](logsumexp[t](Z[q, t]) - Z[q, y[q]]) / G
""", sizes=dict(v=7, f=3, g=4, k=3, G=2), make=_gin_inputs,
        ref=gin_readout_ref, note="a scatter over edges and a scatter over graphs"),

    "mmd": dict(src="""
# the mean of a Gaussian kernel over all pairs of rows of P and Q
def kmean(P: f64[a, d], Q: f64[b, d], bw: f64) -> f64:
    return sum[i, j](exp(-sum[c]((P[i, c] - Q[j, c]) ** 2) / (2.0 * bw ** 2))) / (a * b)

# the same over the pairs of distinct rows of one sample
def kmean_off(P: f64[a, d], bw: f64) -> f64:
    return sum[i, j]([i != j] * exp(-sum[c]((P[i, c] - P[j, c]) ** 2) / (2.0 * bw ** 2))) / (a * (a - 1))

# the unbiased squared MMD between data and an affine generator's samples
def mmd(X: f64[n, d], Zn: f64[m, r], A: f64[r, d], mu: f64[d], bw: f64) -> f64:
    Y[s, c] = sum[f](Zn[s, f] * A[f, c]) + mu[c]
    return kmean_off(X, bw) + kmean_off(Y, bw) - 2.0 * kmean(X, Y, bw)
""", sizes=dict(n=6, d=2, m=5, r=3), make=lambda rng, n, d, m, r: dict(
            X=_normal(rng, n, d), Zn=_normal(rng, m, r), A=_normal(rng, r, d), mu=_normal(rng, d),
            bw=1.3),
        ref=mmd_ref, note="products of sizes as values, three scalar calls"),

    # ------------------------------------------------------------ statistics and econometrics
    "ordered_logit": dict(src="""
# increasing cutpoints: the first free, then positive increments exp(dl[k])
def cutpoints(c0: f64, dl: f64[C]) -> f64[C]:
    cut[k] = [k == 0] * c0 + [k >= 1] * (cut[k - 1] + exp(dl[k]))
    return cut

# ordered logistic regression with C + 1 ordered classes 0 .. C: the probability of
# class y is F(cut[y] - eta) - F(cut[y - 1] - eta), with F(+inf) = 1 and F(-inf) = 0
def ordered_logit(X: f64[N, p], w: f64[p], c0: f64, dl: f64[C], y: i64[N]) -> f64:
    cut = cutpoints(c0, dl)
    eta[s] = sum[f](X[s, f] * w[f])
    up[s] = [y[s] == C] + sum[k]([k == y[s]] * sigmoid(cut[k] - eta[s]))
    lo[s] = sum[k]([k + 1 == y[s]] * sigmoid(cut[k] - eta[s]))
    return -sum[s](log(up[s] - lo[s]))
""", sizes=dict(N=9, p=2, C=3), make=lambda rng, N, p, C: dict(
            X=_normal(rng, N, p), w=_normal(rng, p), c0=-1.0, dl=0.3 * _normal(rng, C),
            y=rng.integers(0, C + 1, N)),
        ref=ordered_logit_ref, note="labels compared with a size and with k + 1"),

    "cloglog": dict(src="""
# binomial regression with the complementary log-log link and a log-exposure offset:
# p = 1 - exp(-exp(eta)), so log(1 - p) = -exp(eta); a ridge penalty on the slopes
def cloglog(X: f64[N, p], w: f64[p], b0: f64, y: f64[N], trials: f64[N], logexp: f64[N]) -> f64:
    eta[s] = b0 + logexp[s] + sum[f](X[s, f] * w[f])
    ll[s] = y[s] * log1p(-exp(-exp(eta[s]))) - (trials[s] - y[s]) * exp(eta[s])
    return -sum[s](ll[s]) + 0.5 * sum[f](w[f] ** 2)
""", sizes=dict(N=10, p=3), make=lambda rng, N, p: dict(
            X=0.5 * _normal(rng, N, p), w=0.3 * _normal(rng, p), b0=-1.0,
            y=rng.integers(0, 6, N).astype(float), trials=np.full(N, 6.0),
            logexp=0.2 * _normal(rng, N)),
        ref=cloglog_ref, note="log1p of a nested exp"),

    "egarch": dict(src="""
# EGARCH(1,1): the log variance responds to the size and the sign of the last
# standardised return; the Gaussian negative log-likelihood up to a constant
def egarch(r: f64[T], om: f64, al: f64, ga: f64, be: f64, ls0: f64) -> f64:
    ls[t: T] = [t == 0] * ls0 + [t >= 1] * (om + be * ls[t - 1] + al * (abs(z[t - 1]) - 0.7978845608028654) + ga * z[t - 1])
    z[t: T] = r[t] * exp(-0.5 * ls[t])
    return 0.5 * sum[t](ls[t] + z[t] ** 2)
""", sizes=dict(T=10), make=lambda rng, T: dict(
            r=_normal(rng, T), om=-0.1, al=0.2, ga=-0.1, be=0.9, ls0=0.0),
        ref=egarch_ref, note="abs of a group member one step back"),

    "merton_jump": dict(src="""
# the Merton jump-diffusion density of returns as a Poisson mixture over 0 .. K - 1
# jumps, each a normal; the jump count k and log k! are running recurrences, so no
# index is used as a value
def merton_jump(r: f64[N], mu: f64, lsig: f64, lam: f64, muj: f64, lsj: f64, steps: f64[K]) -> f64:
    kv[k: K] = [k >= 1] * (kv[k - 1] + 1.0)
    lf[k: K] = [k >= 1] * (lf[k - 1] + log(kv[k]))
    vr[k] = exp(2.0 * lsig) + kv[k] * exp(2.0 * lsj)
    lp[s, k] = (kv[k] * log(lam) - lam - lf[k] - 0.5 * log(2.0 * 3.141592653589793 * vr[k])
                - (r[s] - mu - kv[k] * muj) ** 2 / (2.0 * vr[k]))
    return -sum[s](logsumexp[k](lp[s, k]))
""", sizes=dict(N=8, K=5), make=lambda rng, N, K: dict(
            r=0.5 * _normal(rng, N), mu=0.05, lsig=-1.0, lam=0.8, muj=-0.2, lsj=-1.2,
            steps=np.zeros(K)),
        ref=merton_jump_ref, note="a log of a bracketed-out zero, logsumexp over a mixture"),

    "cjs": dict(src="""
# the Cormack-Jolly-Seber capture-recapture likelihood: survival phi[t] from occasion
# t to t + 1 and capture probability p[t]; chi[t] is the probability of never being
# seen after t (a backward recurrence); each animal contributes its history between
# its first and last capture (labels compared with the occasion) and chi at its last
def cjs(Hc: f64[I, T], first: i64[I], last: i64[I], lphi: f64[T], lp: f64[T]) -> f64:
    phi[t] = sigmoid(lphi[t])
    p[t] = sigmoid(lp[t])
    chi[t] = [t + 1 == T] + [t + 1 < T] * ((1.0 - phi[t]) + phi[t] * (1.0 - p[t + 1]) * chi[t + 1])
    ll[s] = (sum[t]([t >= 1 and first[s] < t and t <= last[s]] * (log(phi[t - 1]) + Hc[s, t] * log(p[t])
                                                                    + (1.0 - Hc[s, t]) * log(1.0 - p[t])))
             + log(chi[last[s]]))
    return -sum[s](ll[s])
""", sizes=dict(I=6, T=5), make=_cjs_inputs,
        ref=cjs_ref, note="label comparisons as bounds of a sum, a gather of a recurrence"),
}


REJECTED = {
    # a target declared at twice the size of nothing else: n would have to be solved for
    "upsample_target": ("""
def upsample_target(y: f64[2 * n]) -> f64:
    return sum[i](y[i] ** 2)
""", "TLNameError", "size n is not bound", 2),
    # an alignment table that steps back along i but forward along j in one read and
    # back along j in another: two directions along one leading index
    "two_way_dp": ("""
def two_way_dp(x: f64[n, m]) -> f64:
    a[i: n, j: m] = x[i, j] + [i >= 1 and j + 1 < m] * a[i - 1, j + 1] + [j >= 1] * a[i, j - 1]
    return a[n - 1, m - 1]
""", "TLRecurrenceError", "reads a later step along j", 3),
}
