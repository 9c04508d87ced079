"""A ninth set of programs written from the documentation alone.

Domains the earlier sets (tests/newuser_programs.py ... tests/newuser8_programs.py)
leave out: numerical linear algebra and ODEs written as recurrences (a Thomas
tridiagonal solve, forward sweep and back substitution; FitzHugh-Nagumo and a
birth-death master equation by explicit Euler steps; overdamped Langevin dynamics
with given noise; the Lyapunov exponent of the logistic map), dynamic programming
and control (value iteration with a hard max over actions, dynamic time warping with a
hard minimum of three neighbours, REINFORCE with returns and generalised advantage
estimation computed by backward recurrences through i64 actions), statistics (Cox
partial likelihood with Breslow ties by value comparisons, an MA(2) residual
recurrence, group lasso through a label table, a Mahalanobis distance through the lower
triangle of a Cholesky factor, a mixture density network, soft k-means), signal and
image processing (a Catmull-Rom spline, a 3-D valid convolution over derived ranges,
blur then stride-2 downsampling over a derived size, 2x linear upsampling by parity
brackets), physics and test functions (a Morse potential with a distance cutoff,
Rosenbrock, Ackley), and learning (bilinear pooling, multinomial logistic regression
with a smoothed L1 penalty).  Each entry has the shape of the other sets: the program
text (the function to test is named like the entry), the sizes of the test inputs,
`make(rng, **sizes)`, an independent NumPy version `ref(**inputs)` and a note.
tests/test_newuser9_programs.py checks them.
"""
import numpy as np
from scipy.special import logsumexp as _lse

from newuser2_programs import _normal


# ------------------------------------------------------------------ recurrences
def thomas_ref(a, b, c, rhs, w):
    n = len(b)
    cp, dp = np.zeros(n), np.zeros(n)
    cp[0], dp[0] = c[0] / b[0], rhs[0] / b[0]
    for i in range(1, n):
        den = b[i] - a[i] * cp[i - 1]
        cp[i] = c[i] / den
        dp[i] = (rhs[i] - a[i] * dp[i - 1]) / den
    x = np.zeros(n)
    x[n - 1] = dp[n - 1]
    for i in range(n - 2, -1, -1):
        x[i] = dp[i] - cp[i] * x[i + 1]
    return float(np.sum(w * x ** 2))


def fitzhugh_ref(v0, w0, I, a, b, eps, dt, T1):
    T = len(T1)
    v, w = np.zeros((T, len(v0))), np.zeros((T, len(v0)))
    v[0], w[0] = v0, w0
    for t in range(1, T):
        v[t] = v[t - 1] + dt * (v[t - 1] - v[t - 1] ** 3 / 3 - w[t - 1] + I)
        w[t] = w[t - 1] + dt * eps * (v[t - 1] + a - b * w[t - 1])
    return float(np.sum(v[T - 1] ** 2) + np.sum(w[T - 1]))


def birth_death_ref(p0, lam, mu, dt, T1, target):
    T, N = len(T1), len(p0)
    p = np.zeros((T, N))
    p[0] = p0
    for t in range(1, T):
        q = p[t - 1]
        new = q.copy()
        for k in range(N):
            out = (lam[k] if k + 1 < N else 0.0) + (mu[k] if k >= 1 else 0.0)
            inflow = (lam[k - 1] * q[k - 1] if k >= 1 else 0.0) + \
                (mu[k + 1] * q[k + 1] if k + 1 < N else 0.0)
            new[k] = q[k] + dt * (inflow - out * q[k])
        p[t] = new
    return float(np.sum((p[T - 1] - target) ** 2))


def langevin_ref(x0, c, s, noise, dt):
    T, n = noise.shape
    x = np.zeros((T, n))
    x[0] = x0
    for t in range(1, T):
        grad = 4 * x[t - 1] * (x[t - 1] ** 2 - c) + s * x[t - 1]
        x[t] = x[t - 1] - dt * grad + np.sqrt(2 * dt) * noise[t]
    return float(np.mean(x[T - 1] ** 2))


def lyapunov_ref(r, x0, T1):
    T = len(T1)
    x = np.zeros((T, len(r)))
    x[0] = x0
    for t in range(1, T):
        x[t] = r * x[t - 1] * (1 - x[t - 1])
    return float(np.sum(np.log(np.abs(r * (1 - 2 * x))) / T))


def vi_max_ref(R, P, gamma, K1):
    K = len(K1)
    S, A = R.shape
    V = np.zeros((K, S))
    for k in range(1, K):
        Q = R + gamma * np.einsum("sat,t->sa", P, V[k - 1])
        V[k] = Q.max(axis=1)
    return float(np.sum(V[K - 1]))


def dtw_ref(x, y):
    n, m = len(x), len(y)
    D = (x[:, None] - y[None, :]) ** 2
    R = np.zeros((n, m))
    for i in range(n):
        for j in range(m):
            if i == 0 and j == 0:
                R[i, j] = D[i, j]
            elif i == 0:
                R[i, j] = D[i, j] + R[i, j - 1]
            elif j == 0:
                R[i, j] = D[i, j] + R[i - 1, j]
            else:
                R[i, j] = D[i, j] + min(R[i - 1, j - 1], R[i - 1, j], R[i, j - 1])
    return float(R[n - 1, m - 1])


def reinforce_ref(theta, feat, act, rew, gamma):
    T = len(rew)
    logits = feat @ theta                      # T x A
    logp = logits - _lse(logits, axis=1, keepdims=True)
    G = np.zeros(T)
    for t in range(T - 1, -1, -1):
        G[t] = rew[t] + (gamma * G[t + 1] if t + 1 < T else 0.0)
    return float(-np.sum(logp[np.arange(T), act] * G))


def gae_ref(wv, feat, rew, gamma, lam):
    T = len(rew)
    v = feat @ wv
    delta = rew + gamma * np.append(v[1:], 0.0) - v
    adv = np.zeros(T)
    for t in range(T - 1, -1, -1):
        adv[t] = delta[t] + (gamma * lam * adv[t + 1] if t + 1 < T else 0.0)
    return float(np.sum(adv ** 2))


def ma2_ref(y, th1, th2):
    T = len(y)
    e = np.zeros(T)
    for t in range(T):
        e[t] = y[t] - (th1 * e[t - 1] if t >= 1 else 0.0) - (th2 * e[t - 2] if t >= 2 else 0.0)
    return float(0.5 * np.sum(e ** 2))


# ------------------------------------------------------------------ statistics
def cox_ties_ref(X, beta, time, event):
    eta = X @ beta
    ll = 0.0
    for i in range(len(time)):
        if event[i] > 0.5:
            ll += eta[i] - np.log(np.sum(np.exp(eta) * (time >= time[i])))
    return float(-ll)


def group_lasso_ref(X, y, w, grp, lam, G1):
    G = len(G1)
    r = X @ w - y
    pen = sum(np.sqrt(np.sum(w[grp == g] ** 2) + 1e-6) for g in range(G))
    return float(0.5 * np.sum(r ** 2) + lam * pen)


def mahal_chol_ref(X, mu, L):
    Lt = np.tril(L)
    Z = (X - mu) @ Lt
    return float(0.5 * np.sum(Z ** 2) - len(X) * np.sum(np.log(np.abs(np.diag(L)))))


def mdn_ref(x, y, Wp, Wm, Ws):
    logits, mus, logs = x @ Wp, x @ Wm, x @ Ws
    logw = logits - _lse(logits, axis=1, keepdims=True)
    comp = logw - 0.5 * ((y[:, None] - mus) / np.exp(logs)) ** 2 - logs - 0.5 * np.log(2 * np.pi)
    return float(-np.sum(_lse(comp, axis=1)))


def softkmeans_ref(X, C, beta):
    D = np.sum((X[:, None, :] - C[None, :, :]) ** 2, axis=2)
    return float(-np.sum(_lse(-beta * D, axis=1)) / beta)


# ------------------------------------------------------------------ signal and image
def catmull_ref(P, u):
    n = len(P)
    out = 0.0
    for s in range(n - 3):
        for t in u:
            p0, p1, p2, p3 = P[s], P[s + 1], P[s + 2], P[s + 3]
            val = 0.5 * (2 * p1 + (-p0 + p2) * t + (2 * p0 - 5 * p1 + 4 * p2 - p3) * t ** 2
                         + (-p0 + 3 * p1 - 3 * p2 + p3) * t ** 3)
            out += np.sum(val ** 2)
    return float(out)


def conv3d_ref(V, K):
    a, b, c = V.shape
    k = K.shape[0]
    out = np.zeros((a - k + 1, b - k + 1, c - k + 1))
    for i in range(k):
        for j in range(k):
            for l in range(k):
                out += K[i, j, l] * V[i:i + a - k + 1, j:j + b - k + 1, l:l + c - k + 1]
    return float(np.sum(np.tanh(out)))


def blur_down_ref(x, tgt):
    b = 0.5 * x + 0.25 * np.append(x[1:], 0.0) + 0.25 * np.append(0.0, x[:-1])
    d = b[0::2]
    return float(np.sum((d - tgt) ** 2))


def upsample2_ref(x, tgt):
    n = len(x)
    y = np.zeros(2 * n)
    y[0::2] = x
    y[1::2] = 0.5 * (x + np.append(x[1:], x[-1]))
    return float(np.sum((y[:len(tgt)] - tgt) ** 2))


# ------------------------------------------------------------------ physics, test functions
def morse_ref(X, D0, a, r0, rc):
    n = len(X)
    e = 0.0
    for i in range(n):
        for j in range(n):
            if i != j:
                r = np.sqrt(np.sum((X[i] - X[j]) ** 2))
                if r < rc:
                    e += D0 * (1 - np.exp(-a * (r - r0))) ** 2
    return float(0.5 * e)


def rosenbrock_ref(x):
    return float(np.sum((1 - x[:-1]) ** 2 + 100 * (x[1:] - x[:-1] ** 2) ** 2))


def ackley_ref(x):
    n = len(x)
    return float(-20 * np.exp(-0.2 * np.sqrt(np.sum(x ** 2) / n))
                 - np.exp(np.sum(np.cos(2 * np.pi * x)) / n) + 20 + np.e)


# ------------------------------------------------------------------ learning
def multinom_l1_ref(X, W, lab, lam):
    Z = X @ W
    ll = np.sum(Z[np.arange(len(lab)), lab] - _lse(Z, axis=1))
    return float(-ll + lam * np.sum(np.sqrt(W ** 2 + 1e-4)))


def _rand_tridiag(rng, n):
    return dict(a=0.3 * _normal(rng, n), b=3.0 + rng.random(n), c=0.3 * _normal(rng, n),
                rhs=_normal(rng, n), w=rng.random(n) + 0.5)


PROGRAMS = {
    "thomas": dict(src="""
# a tridiagonal solve by the Thomas algorithm: a forward elimination sweep, then
# back substitution running the other way; the loss weighs the solution's squares
def thomas(a: f64[n], b: f64[n], c: f64[n], rhs: f64[n], w: f64[n]) -> f64:
    cp[i: n] = [i == 0] * c[0] / b[0] + [i >= 1] * c[i] / (b[i] - a[i] * cp[i - 1])
    dp[i: n] = [i == 0] * rhs[0] / b[0] + [i >= 1] * (rhs[i] - a[i] * dp[i - 1]) / (b[i] - a[i] * cp[i - 1])
    x[i: n] = dp[i] - [i + 1 < n] * cp[i] * x[i + 1]
    return sum[i](w[i] * x[i] ** 2)
""", sizes=dict(n=7), make=lambda rng, n: _rand_tridiag(rng, n),
        ref=thomas_ref, note="a forward group and a backward recurrence reading it"),

    "fitzhugh": dict(src="""
# FitzHugh-Nagumo neurons, explicit Euler: two members of one group per step
def fitzhugh(v0: f64[n], w0: f64[n], I: f64, a: f64, b: f64, eps: f64, dt: f64, T1: f64[T]) -> f64:
    v[t: T, i: n] = [t == 0] * v0[i] + [t >= 1] * (v[t - 1, i] + dt * (v[t - 1, i] - v[t - 1, i] ** 3 / 3.0 - w[t - 1, i] + I))
    w[t: T, i: n] = [t == 0] * w0[i] + [t >= 1] * (w[t - 1, i] + dt * eps * (v[t - 1, i] + a - b * w[t - 1, i]))
    return sum[i](v[T - 1, i] ** 2) + sum[i](w[T - 1, i])
""", sizes=dict(n=3, T=6), make=lambda rng, n, T: dict(
            v0=_normal(rng, n), w0=_normal(rng, n), I=0.5, a=0.7, b=0.8, eps=0.08, dt=0.1,
            T1=np.zeros(T)),
        ref=fitzhugh_ref, note="a cubic in a two-member step"),

    "birth_death": dict(src="""
# a birth-death chain's master equation by explicit Euler: probability flows up at
# rate lam[k] and down at rate mu[k]; no flow beyond the ends
def birth_death(p0: f64[N], lam: f64[N], mu: f64[N], dt: f64, T1: f64[T], target: f64[N]) -> f64:
    p[t: T, k: N] = [t == 0] * p0[k] + [t >= 1] * (p[t - 1, k] + dt * ([k >= 1] * lam[k - 1] * p[t - 1, k - 1]
        + [k + 1 < N] * mu[k + 1] * p[t - 1, k + 1] - ([k + 1 < N] * lam[k] + [k >= 1] * mu[k]) * p[t - 1, k]))
    return sum[k]((p[T - 1, k] - target[k]) ** 2)
""", sizes=dict(N=5, T=6), make=lambda rng, N, T: dict(
            p0=rng.dirichlet(np.ones(N)), lam=rng.random(N), mu=rng.random(N), dt=0.2,
            T1=np.zeros(T), target=rng.dirichlet(np.ones(N))),
        ref=birth_death_ref, note="neighbour reads inside a step, rates at shifted indices"),

    "langevin": dict(src="""
# overdamped Langevin dynamics in a double well, the noise given; the loss is the
# mean square position at the end
def langevin(x0: f64[n], c: f64, s: f64, noise: f64[T, n], dt: f64) -> f64:
    x[t: T, i: n] = [t == 0] * x0[i] + [t >= 1] * (x[t - 1, i] - dt * (4.0 * x[t - 1, i] * (x[t - 1, i] ** 2 - c) + s * x[t - 1, i]) + sqrt(2.0 * dt) * noise[t, i])
    return sum[i](x[T - 1, i] ** 2) / n
""", sizes=dict(n=4, T=6), make=lambda rng, n, T: dict(
            x0=_normal(rng, n), c=1.0, s=0.3, noise=0.3 * _normal(rng, T, n), dt=0.05),
        ref=langevin_ref, note="a step with a square root of a parameter"),

    "lyapunov": dict(src="""
# the Lyapunov exponent of the logistic map along an orbit, one orbit per rate
def lyapunov(r: f64[m], x0: f64[m], T1: f64[T]) -> f64:
    x[t: T, i: m] = [t == 0] * x0[i] + [t >= 1] * r[i] * x[t - 1, i] * (1.0 - x[t - 1, i])
    return sum[t, i](log(abs(r[i] * (1.0 - 2.0 * x[t, i])))) / T
""", sizes=dict(m=3, T=6), make=lambda rng, m, T: dict(
            r=3.6 + 0.3 * rng.random(m), x0=0.2 + 0.3 * rng.random(m), T1=np.zeros(T)),
        ref=lyapunov_ref, note="log of abs of every state"),

    "vi_max": dict(src="""
# value iteration with a hard max over actions, K sweeps from zero
def vi_max(R: f64[S, A], P: f64[S, A, S], gamma: f64, K1: f64[K]) -> f64:
    V[k: K, s: S] = [k >= 1] * max[a](R[s, a] + gamma * sum[u](P[s, a, u] * V[k - 1, u]))
    return sum[s](V[K - 1, s])
""", sizes=dict(S=4, A=3, K=5), make=lambda rng, S, A, K: dict(
            R=_normal(rng, S, A), P=rng.dirichlet(np.ones(S), size=(S, A)), gamma=0.9,
            K1=np.zeros(K)),
        ref=vi_max_ref, note="a max over actions inside a recurrence"),

    "dtw_hard": dict(src="""
# dynamic time warping with the hard minimum of three neighbours
def dtw_hard(x: f64[n], y: f64[m]) -> f64:
    D[i, j] = (x[i] - y[j]) ** 2
    R[i: n, j: m] = (D[i, j] + [i >= 1 and j >= 1] * min(R[i - 1, j - 1], min(R[i - 1, j], R[i, j - 1]))
        + [i == 0 and j >= 1] * R[i, j - 1] + [i >= 1 and j == 0] * R[i - 1, j])
    return R[n - 1, m - 1]
""", sizes=dict(n=5, m=4), make=lambda rng, n, m: dict(x=_normal(rng, n), y=_normal(rng, m)),
        ref=dtw_ref, note="min of three neighbours over two leading indices"),

    "reinforce": dict(src="""
# REINFORCE: a softmax policy over features, returns by a backward recurrence, the
# log-probability of the action taken gathered through an i64 table
def reinforce(theta: f64[d, A], feat: f64[T, d], act: i64[T], rew: f64[T], gamma: f64) -> f64:
    z[t, a] = sum[k](feat[t, k] * theta[k, a])
    lp[t] = z[t, act[t]] - logsumexp[a](z[t, a])
    G[t] = rew[t] + [t + 1 < T] * gamma * G[t + 1]
    return -sum[t](lp[t] * G[t])
""", sizes=dict(d=3, A=4, T=6), make=lambda rng, d, A, T: dict(
            theta=_normal(rng, d, A), feat=_normal(rng, T, d), act=rng.integers(0, A, T),
            rew=_normal(rng, T), gamma=0.95),
        ref=reinforce_ref, note="a gathered log-softmax times a backward return"),

    "gae": dict(src="""
# generalised advantage estimation with a linear value function: TD residuals, then
# a backward recurrence with factor gamma * lam
def gae(wv: f64[d], feat: f64[T, d], rew: f64[T], gamma: f64, lam: f64) -> f64:
    v[t] = sum[k](feat[t, k] * wv[k])
    delta[t] = rew[t] + [t + 1 < T] * gamma * v[t + 1] - v[t]
    adv[t] = delta[t] + [t + 1 < T] * gamma * lam * adv[t + 1]
    return sum[t](adv[t] ** 2)
""", sizes=dict(d=3, T=7), make=lambda rng, d, T: dict(
            wv=_normal(rng, d), feat=_normal(rng, T, d), rew=_normal(rng, T), gamma=0.9,
            lam=0.8),
        ref=gae_ref, note="a backward recurrence with a product of two parameters"),

    "ma2": dict(src="""
# the residuals of an MA(2) model: each reads the two before it
def ma2(y: f64[T], th1: f64, th2: f64) -> f64:
    e[t] = y[t] - [t >= 1] * th1 * e[t - 1] - [t >= 2] * th2 * e[t - 2]
    return 0.5 * sum[t](e[t] ** 2)
""", sizes=dict(T=8), make=lambda rng, T: dict(y=_normal(rng, T), th1=0.4, th2=-0.2),
        ref=ma2_ref, note="a scalar recurrence two steps deep"),

    # ------------------------------------------------------------ statistics
    "cox_ties": dict(src="""
# Cox partial likelihood with Breslow's ties: the risk set of subject i is every
# subject whose (whole-day) time is at least i's, compared by value
def cox_ties(X: f64[n, p], beta: f64[p], time: i64[n], event: f64[n]) -> f64:
    eta[i] = sum[k](X[i, k] * beta[k])
    risk[i] = sum[j]([time[j] >= time[i]] * exp(eta[j]))
    return -sum[i](event[i] * (eta[i] - log(risk[i])))
""", sizes=dict(n=7, p=3), make=lambda rng, n, p: dict(
            X=_normal(rng, n, p), beta=0.5 * _normal(rng, p),
            time=rng.integers(1, 4, n), event=(rng.random(n) < 0.7).astype(float)),
        ref=cox_ties_ref, note="a risk set by comparing data values, with ties"),

    "group_lasso": dict(src="""
# least squares with a group lasso penalty, the groups given by an i64 label per feature
def group_lasso(X: f64[n, p], y: f64[n], w: f64[p], grp: i64[p], lam: f64, G1: f64[G]) -> f64:
    r[i] = sum[k](X[i, k] * w[k]) - y[i]
    norm2[g: G] = sum[k]([grp[k] == g] * w[k] ** 2)
    return 0.5 * sum[i](r[i] ** 2) + lam * sum[g](sqrt(norm2[g] + 1e-6))
""", sizes=dict(n=6, p=5, G=3), make=lambda rng, n, p, G: dict(
            X=_normal(rng, n, p), y=_normal(rng, n), w=_normal(rng, p),
            grp=np.arange(p) % G, lam=0.3, G1=np.zeros(G)),
        ref=group_lasso_ref, note="a label compared with an index"),

    "mahal_chol": dict(src="""
# Gaussian negative log-likelihood through a Cholesky factor of the precision: only
# its lower triangle is read, by a bracket
def mahal_chol(X: f64[n, d], mu: f64[d], L: f64[d, d]) -> f64:
    z[s, j] = sum[i]([i >= j] * (X[s, i] - mu[i]) * L[i, j])
    return 0.5 * sum[s, j](z[s, j] ** 2) - n * sum[j](log(abs(L[j, j])))
""", sizes=dict(n=5, d=3), make=lambda rng, n, d: dict(
            X=_normal(rng, n, d), mu=_normal(rng, d),
            L=np.tril(0.3 * _normal(rng, d, d)) + 2.0 * np.eye(d)),
        ref=mahal_chol_ref, note="a triangle by a bracket and a log-determinant"),

    "mdn": dict(src="""
# a mixture density network with linear heads: mixture weights by a log-softmax,
# means and log-scales per component, the loss a logsumexp over components
def mdn(x: f64[n, d], y: f64[n], Wp: f64[d, K], Wm: f64[d, K], Ws: f64[d, K]) -> f64:
    lg[s, c] = sum[k](x[s, k] * Wp[k, c])
    mu[s, c] = sum[k](x[s, k] * Wm[k, c])
    ls[s, c] = sum[k](x[s, k] * Ws[k, c])
    comp[s, c] = lg[s, c] - logsumexp[e](lg[s, e]) - 0.5 * ((y[s] - mu[s, c]) / exp(ls[s, c])) ** 2 - ls[s, c] - 0.9189385332046727
    return -sum[s](logsumexp[c](comp[s, c]))
""", sizes=dict(n=5, d=3, K=4), make=lambda rng, n, d, K: dict(
            x=_normal(rng, n, d), y=_normal(rng, n), Wp=_normal(rng, d, K),
            Wm=_normal(rng, d, K), Ws=0.3 * _normal(rng, d, K)),
        ref=mdn_ref, note="a log-softmax inside a logsumexp"),

    "softkmeans": dict(src="""
# the soft k-means energy: a soft minimum over centres of squared distances
def softkmeans(X: f64[n, d], C: f64[K, d], beta: f64) -> f64:
    D[s, c] = sum[k]((X[s, k] - C[c, k]) ** 2)
    return -sum[s](logsumexp[c](-beta * D[s, c])) / beta
""", sizes=dict(n=6, d=2, K=3), make=lambda rng, n, d, K: dict(
            X=_normal(rng, n, d), C=_normal(rng, K, d), beta=2.0),
        ref=softkmeans_ref, note="a temperature dividing a logsumexp"),

    # ------------------------------------------------------------ signal and image
    "catmull": dict(src="""
# a Catmull-Rom spline through control points, sampled at u in each segment; the
# loss is the curve's squared length in every sample
def catmull(P: f64[n, d], u: f64[m]) -> f64:
    c[s: n - 3, q, k] = 0.5 * (2.0 * P[s + 1, k] + (P[s + 2, k] - P[s, k]) * u[q]
        + (2.0 * P[s, k] - 5.0 * P[s + 1, k] + 4.0 * P[s + 2, k] - P[s + 3, k]) * u[q] ** 2
        + (3.0 * P[s + 1, k] - P[s, k] - 3.0 * P[s + 2, k] + P[s + 3, k]) * u[q] ** 3)
    return sum[s, q, k](c[s, q, k] ** 2)
""", sizes=dict(n=6, d=2, m=4), make=lambda rng, n, d, m: dict(
            P=_normal(rng, n, d), u=np.linspace(0, 1, m)),
        ref=catmull_ref, note="four neighbours over a derived range, powers of a sample"),

    "conv3d": dict(src="""
# a valid 3-D convolution with a cubic kernel, then tanh
def conv3d(V: f64[a, b, c], K: f64[k, k, k]) -> f64:
    y[i: a - k + 1, j: b - k + 1, l: c - k + 1] = sum[p, q, r](K[p, q, r] * V[i + p, j + q, l + r])
    return sum[i, j, l](tanh(y[i, j, l]))
""", sizes=dict(a=5, b=4, c=6, k=2), make=lambda rng, a, b, c, k: dict(
            V=_normal(rng, a, b, c), K=0.5 * _normal(rng, k, k, k)),
        ref=conv3d_ref, note="three derived ranges with one kernel size"),

    "blur_down": dict(src="""
# a [1 2 1] / 4 blur with zero borders, then every second sample
def blur_down(x: f64[n], tgt: f64[n / 2]) -> f64:
    b[i: n] = 0.5 * x[i] + 0.25 * [i + 1 < n] * x[i + 1] + 0.25 * [i >= 1] * x[i - 1]
    return sum[i: n / 2]((b[2 * i] - tgt[i]) ** 2)
""", sizes=dict(n=8), make=lambda rng, n: dict(x=_normal(rng, n), tgt=_normal(rng, n // 2)),
        ref=blur_down_ref, note="a stride-2 read over a derived size"),

    "upsample2": dict(src="""
# 2x linear upsampling: even outputs copy, odd ones average two neighbours (the last
# repeats the end); written over the input's index and a parity
def upsample2(x: f64[n], tgt: f64[n, 2]) -> f64:
    y[i, e: 2] = [e == 0] * x[i] + [e == 1] * 0.5 * (x[i] + [i + 1 < n] * x[i + 1] + [i + 1 == n] * x[i])
    return sum[i, e]((y[i, e] - tgt[i, e]) ** 2)
""", sizes=dict(n=5), make=lambda rng, n: dict(x=_normal(rng, n), tgt=_normal(rng, n, 2)),
        ref=lambda x, tgt: upsample2_ref(x, tgt.reshape(-1)), note="parity as an index of range 2"),

    # ------------------------------------------------------------ physics, test functions
    "morse": dict(src="""
# a Morse potential over all pairs within a cutoff distance
def morse(X: f64[n, 3], D0: f64, a: f64, r0: f64, rc: f64) -> f64:
    r[i, j] = sqrt(sum[k]((X[i, k] - X[j, k]) ** 2) + 1e-12)
    return 0.5 * sum[i, j]([i != j] * [r[i, j] < rc] * D0 * (1.0 - exp(-a * (r[i, j] - r0))) ** 2)
""", sizes=dict(n=6), make=lambda rng, n: dict(
            X=1.5 * _normal(rng, n, 3), D0=1.0, a=1.2, r0=1.0, rc=2.5),
        ref=morse_ref, note="a value comparison as a cutoff"),

    "rosenbrock": dict(src="""
# the n-dimensional Rosenbrock function
def rosenbrock(x: f64[n]) -> f64:
    return sum[i]([i + 1 < n] * ((1.0 - x[i]) ** 2 + 100.0 * (x[i + 1] - x[i] ** 2) ** 2))
""", sizes=dict(n=6), make=lambda rng, n: dict(x=_normal(rng, n)),
        ref=rosenbrock_ref, note="a neighbour read under a guard"),

    "ackley": dict(src="""
# the Ackley test function
def ackley(x: f64[n]) -> f64:
    return -20.0 * exp(-0.2 * sqrt(sum[i](x[i] ** 2) / n)) - exp(sum[i](cos(6.283185307179586 * x[i])) / n) + 20.0 + 2.718281828459045
""", sizes=dict(n=5), make=lambda rng, n: dict(x=_normal(rng, n)),
        ref=ackley_ref, note="exp of sqrt of a sum divided by a size"),

    # ------------------------------------------------------------ learning
    "bilinear_pool": dict(src="""
# bilinear pooling of two feature maps, a signed square root, a linear classifier
# and the logistic loss
def bilinear_pool(F: f64[S, P, A], G: f64[S, P, B], W: f64[A, B], y: f64[S]) -> f64:
    M[s, a, b] = sum[q](F[s, q, a] * G[s, q, b])
    z[s, a, b] = M[s, a, b] / sqrt(abs(M[s, a, b]) + 1e-6)
    sc[s] = sum[a, b](z[s, a, b] * W[a, b])
    return sum[s](softplus(-y[s] * sc[s]))
""", sizes=dict(S=3, P=4, A=2, B=3), make=lambda rng, S, P, A, B: dict(
            F=_normal(rng, S, P, A), G=_normal(rng, S, P, B), W=_normal(rng, A, B),
            y=np.sign(_normal(rng, S))),
        ref=lambda F, G, W, y: bilinear_pool_ref(F, G, W, y),
        note="an outer product per sample and a signed square root"),

    "multinom_l1": dict(src="""
# multinomial logistic regression with a smoothed L1 penalty on the weights
def multinom_l1(X: f64[n, d], W: f64[d, C], lab: i64[n], lam: f64) -> f64:
    Z[s, c] = sum[k](X[s, k] * W[k, c])
    return -sum[s](Z[s, lab[s]] - logsumexp[c](Z[s, c])) + lam * sum[k, c](sqrt(W[k, c] ** 2 + 1e-4))
""", sizes=dict(n=6, d=3, C=4), make=lambda rng, n, d, C: dict(
            X=_normal(rng, n, d), W=_normal(rng, d, C), lab=rng.integers(0, C, n), lam=0.1),
        ref=multinom_l1_ref, note="a gathered logit and a smooth absolute value"),
}


def bilinear_pool_ref(F, G, W, y):
    """bilinear_pool's value: M / sqrt(|M| + eps) is the signed square root up to eps."""
    M = np.einsum("sqa,sqb->sab", F, G)
    z = M / np.sqrt(np.abs(M) + 1e-6)
    s = np.einsum("sab,ab->s", z, W)
    return float(np.sum(np.logaddexp(0.0, -y * s)))


REJECTED = {
    # a filtered sum whose filter reads the summed index's own value as a number:
    # indices are not values (a table of times is)
    "time_as_index": ("""
def time_as_index(h: f64[T], x: f64[T]) -> f64:
    return sum[t](h[t] * exp(-0.1 * t) * x[t])
""", "TLTypeError", "index t used as a value", 3),
    # an upsampling written as y[2 * i] = ...: the left side binds plain indices only
    "strided_target": ("""
def strided_target(x: f64[n]) -> f64:
    y[2 * i] = x[i]
    return sum[i](y[i])
""", "TLSyntaxError", "the left side binds index names", 3),
}
