"""A tenth set of programs written from the documentation alone.

Domains the earlier sets (tests/newuser_programs.py ... tests/newuser9_programs.py)
leave out, chosen to exercise the API around the language as much as the language:
second-order methods written in the program (one Newton step of two-feature logistic
regression through an explicit 2x2 inverse, one Gauss-Newton step of an exponential
decay fit), energies whose Hessians are the point (a chain of springs under gravity,
a Lennard-Jones cluster with a smooth cutoff), vector-valued maps whose Jacobians are
the point (a generalised Lotka-Volterra right-hand side, a tanh layer, polar to
Cartesian coordinates, planar gravitational accelerations, a softmax), structured
matrices (a symmetric Toeplitz quadratic form and a circulant product by index
brackets, a Kronecker product applied without forming it), robust statistics (Huber,
Student-t and Tukey's biweight by value brackets), finance (a Nelson-Siegel yield
curve priced against bonds, discount factors bootstrapped from par rates by a
two-statement recurrence, a long-only portfolio's smoothed CVaR through softmax
weights), geometry (a rotation from three Euler angles built by calls, a polygon's
signed area and perimeter returned together and combined by a caller), small
recurrences (an exponentially weighted mean and variance, a local-level Kalman filter
whose gain is part of the step), and i64 labels used in gathers (a center loss with a
cross-entropy through class tables, a Gaussian tree prior through a parent table).
Each entry has the shape of the other sets: the program text (the function to test
is named like the entry), the sizes of the test inputs, `make(rng, **sizes)`, an
independent NumPy version `ref(**inputs)` and a note.
tests/test_newuser10_programs.py checks them, and the API around them.
"""
import numpy as np
from scipy.special import logsumexp as _lse

from newuser2_programs import _normal


def _sig(z):
    return 1.0 / (1.0 + np.exp(-z))


def _softplus(z):
    return np.logaddexp(0.0, z)


# ------------------------------------------------------------ second-order methods
def newton_logreg_ref(X, y, w, lam):
    z = X @ w
    p = _sig(z)
    g = X.T @ (p - y) + lam * w
    H = X.T @ (X * (p * (1 - p))[:, None]) + lam * np.eye(2)
    w1 = w - np.linalg.solve(H, g)
    z1 = X @ w1
    return float(np.sum(_softplus(z1) - y * z1) + 0.5 * lam * np.sum(w1 ** 2))


def gauss_newton_ref(t, y, p):
    a, b = p
    e = np.exp(-b * t)
    r = a * e - y
    J = np.stack([e, -a * t * e], axis=1)
    step = np.linalg.solve(J.T @ J, J.T @ r)
    a1, b1 = p - step
    return float(0.5 * np.sum((a1 * np.exp(-b1 * t) - y) ** 2))


# ------------------------------------------------------------ energies
def spring_chain_ref(X, k, L, m, g):
    d = X[1:] - X[:-1]
    ln = np.sqrt(np.sum(d ** 2, axis=1))
    return float(0.5 * np.sum(k * (ln - L) ** 2) + g * np.sum(m * X[:, 1]))


def lj_cluster_ref(X, sigma, rc):
    n = len(X)
    E = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            r2 = np.sum((X[i] - X[j]) ** 2)
            s6 = (sigma ** 2 / r2) ** 3
            E += 4 * (s6 ** 2 - s6) * _sig(10.0 * (rc ** 2 - r2))
    return float(E)


# ------------------------------------------------------------ vector-valued maps
def glv_rhs_ref(x, r, A):
    return x * (r + A @ x)


def tanh_layer_ref(X, W, b):
    return np.tanh(X @ W + b)


def polar_ref(rad, ang):
    return np.stack([rad * np.cos(ang), rad * np.sin(ang)], axis=1)


def gravity_acc_ref(X, mass, eps):
    n = len(X)
    acc = np.zeros_like(X)
    for i in range(n):
        for j in range(n):
            if i != j:
                d = X[j] - X[i]
                acc[i] += mass[j] * d / (np.sum(d ** 2) + eps) ** 1.5
    return acc


def softmax_vec_ref(z, tau):
    e = np.exp(z / tau - np.max(z / tau))
    return e / e.sum()


# ------------------------------------------------------------ structured matrices
def toeplitz_qform_ref(c, x):
    n = len(x)
    T = np.array([[c[abs(i - j)] for j in range(n)] for i in range(n)])
    return float(x @ T @ x)


def circulant_ref(c, x):
    n = len(x)
    C = np.array([[c[(i - j) % n] for j in range(n)] for i in range(n)])
    return C @ x


def kron_mv_ref(A, B, X, Y):
    n, p = X.shape
    v = np.kron(A, B) @ X.reshape(-1)            # row-major vec matches kron(A, B)
    return float(0.5 * np.sum((v - Y.reshape(-1)) ** 2))


# ------------------------------------------------------------ robust statistics
def huber_reg_ref(X, y, w, delta):
    r = X @ w - y
    a = np.abs(r)
    return float(np.sum(np.where(a <= delta, 0.5 * r ** 2, delta * (a - 0.5 * delta))))


def student_t_ref(X, y, w, logs, nu):
    r = X @ w - y
    s = np.exp(logs)
    return float(np.sum(0.5 * (nu + 1) * np.log1p((r / s) ** 2 / nu)) + len(y) * logs)


def tukey_ref(X, y, w, c):
    r = X @ w - y
    inside = np.abs(r) < c
    rho = np.where(inside, c ** 2 / 6 * (1 - (1 - (r / c) ** 2) ** 3), c ** 2 / 6)
    return float(np.sum(rho))


# ------------------------------------------------------------ finance
def nelson_siegel_ref(beta, lam, tau, cf, price):
    x = tau / lam
    f1 = (1 - np.exp(-x)) / x
    yld = beta[0] + beta[1] * f1 + beta[2] * (f1 - np.exp(-x))
    D = np.exp(-yld * tau)
    model = cf @ D
    return float(np.sum((model - price) ** 2))


def bootstrap_ref(c, w):
    T = len(c)
    D = np.zeros(T)
    A = 0.0
    for t in range(T):
        D[t] = (1 - c[t] * A) / (1 + c[t])
        A += D[t]
    return float(np.sum(w * D))


def cvar_softmax_ref(theta, R, alpha, beta, tau):
    wts = np.exp(theta - theta.max())
    wts /= wts.sum()
    loss = -R @ wts
    S = len(loss)
    return float(alpha + np.sum(tau * _softplus((loss - alpha) / tau)) / ((1 - beta) * S))


# ------------------------------------------------------------ geometry
def _rot(a):
    cz, sz = np.cos(a[0]), np.sin(a[0])
    cy, sy = np.cos(a[1]), np.sin(a[1])
    cx, sx = np.cos(a[2]), np.sin(a[2])
    Rz = np.array([[cz, -sz, 0], [sz, cz, 0], [0, 0, 1]])
    Ry = np.array([[cy, 0, sy], [0, 1, 0], [-sy, 0, cy]])
    Rx = np.array([[1, 0, 0], [0, cx, -sx], [0, sx, cx]])
    return Rz @ Ry @ Rx


def euler_fit_ref(ang, P, Q):
    R = _rot(ang)
    return float(np.sum((P @ R.T - Q) ** 2))


def polygon_ref(P):
    Pn = np.roll(P, -1, axis=0)
    area = 0.5 * np.sum(P[:, 0] * Pn[:, 1] - Pn[:, 0] * P[:, 1])
    per = np.sum(np.sqrt(np.sum((Pn - P) ** 2, axis=1)))
    return float(4 * np.pi * area / per ** 2)


# ------------------------------------------------------------ small recurrences
def ewm_var_ref(x, a):
    T = len(x)
    m, v = np.zeros(T), np.zeros(T)
    m[0], v[0] = x[0], 1.0
    for t in range(1, T):
        d = x[t] - m[t - 1]
        m[t] = m[t - 1] + a * d
        v[t] = (1 - a) * (v[t - 1] + a * d ** 2)
    z2 = (x[1:] - m[:-1]) ** 2 / v[:-1]
    return float(np.sum(0.5 * z2 + 0.5 * np.log(v[:-1])))


def local_level_ref(y, q, r):
    T = len(y)
    m, P = 0.0, 10.0
    nll = 0.0
    for t in range(T):
        Pp = P + q
        S = Pp + r
        e = y[t] - m
        nll += 0.5 * (np.log(S) + e ** 2 / S)
        K = Pp / S
        m = m + K * e
        P = (1 - K) * Pp
    return float(nll)


# ------------------------------------------------------------ i64 gathers
def center_loss_ref(F, W, C, lab, lam):
    Z = F @ W
    ce = _lse(Z, axis=1) - Z[np.arange(len(lab)), lab]
    return float(np.sum(ce) + 0.5 * lam * np.sum((F - C[lab]) ** 2))


def tree_prior_ref(theta, parent, obs, tau):
    diff = theta[1:] - theta[parent[1:]]
    return float(0.5 * np.sum(diff ** 2) / tau ** 2 + 0.5 * theta[0] ** 2
                 + 0.5 * np.sum((obs - theta) ** 2))


def hist_lookup_ref(bins, val, lo, width, target):
    n = len(target)
    counts = np.zeros(n)
    for b, v in zip(bins, val):
        counts[b] += v
    return float(np.sum((counts / (lo + width) - target) ** 2))


PROGRAMS = {
    # ------------------------------------------------------------ second-order methods
    "newton_logreg": dict(src="""
# one Newton step of L2-regularised logistic regression with two features: the
# gradient and the 2x2 Hessian are functions of their own, the inverse is explicit
def logloss(X: f64[n, 2], y: f64[n], w: f64[2], lam: f64) -> f64:
    z[s] = sum[a](X[s, a] * w[a])
    return sum[s](log(1.0 + exp(z[s])) - y[s] * z[s]) + 0.5 * lam * sum[a](w[a] ** 2)

def gradient(X: f64[n, 2], y: f64[n], w: f64[2], lam: f64) -> f64[2]:
    p[s] = sigmoid(sum[a](X[s, a] * w[a]))
    g[a] = sum[s](X[s, a] * (p[s] - y[s])) + lam * w[a]
    return g

def hess2(X: f64[n, 2], w: f64[2], lam: f64) -> f64[2, 2]:
    p[s] = sigmoid(sum[a](X[s, a] * w[a]))
    H[a, b] = sum[s](p[s] * (1.0 - p[s]) * X[s, a] * X[s, b]) + lam * [a == b]
    return H

def newton_logreg(X: f64[n, 2], y: f64[n], w: f64[2], lam: f64) -> f64:
    g = gradient(X, y, w, lam)
    H = hess2(X, w, lam)
    det = H[0, 0] * H[1, 1] - H[0, 1] * H[1, 0]
    step[a: 2] = ([a == 0] * (H[1, 1] * g[0] - H[0, 1] * g[1])
                  + [a == 1] * (H[0, 0] * g[1] - H[1, 0] * g[0])) / det
    w1[a] = w[a] - step[a]
    return logloss(X, y, w1, lam)
""", sizes=dict(n=8), make=lambda rng, n: dict(
            X=_normal(rng, n, 2), y=(rng.random(n) < 0.5).astype(float),
            w=0.3 * _normal(rng, 2), lam=0.5),
        ref=newton_logreg_ref, note="four functions, a 2x2 solve by Cramer's rule"),

    "gauss_newton": dict(src="""
# one Gauss-Newton step of the fit y ~ a exp(-b t): the Jacobian columns, the normal
# equations and their 2x2 solve, then the loss at the new parameters
def gauss_newton(t: f64[n], y: f64[n], p: f64[2]) -> f64:
    e[s] = exp(-p[1] * t[s])
    r[s] = p[0] * e[s] - y[s]
    J[s, c: 2] = [c == 0] * e[s] - [c == 1] * p[0] * t[s] * e[s]
    N[c, d] = sum[s](J[s, c] * J[s, d])
    v[c] = sum[s](J[s, c] * r[s])
    det = N[0, 0] * N[1, 1] - N[0, 1] * N[1, 0]
    q[c: 2] = p[c] - ([c == 0] * (N[1, 1] * v[0] - N[0, 1] * v[1])
                      + [c == 1] * (N[0, 0] * v[1] - N[1, 0] * v[0])) / det
    return 0.5 * sum[s]((q[0] * exp(-q[1] * t[s]) - y[s]) ** 2)
""", sizes=dict(n=7), make=lambda rng, n: dict(
            t=np.linspace(0.0, 3.0, n), y=2.0 * np.exp(-0.7 * np.linspace(0.0, 3.0, n))
            + 0.05 * _normal(rng, n), p=np.array([1.6, 0.5])),
        ref=gauss_newton_ref, note="a derivative written by hand inside the program"),

    # ------------------------------------------------------------ energies
    "spring_chain": dict(src="""
# a hanging chain: springs of rest length L between neighbours, gravity on each mass
def spring_chain(X: f64[n, 2], k: f64[n], L: f64, m: f64[n], g: f64) -> f64:
    d2[i] = [i + 1 < n] * sum[c]((X[i + 1, c] - X[i, c]) ** 2)
    e[i] = [i + 1 < n] * k[i] * (sqrt(d2[i] + [i + 1 == n]) - L) ** 2
    return 0.5 * sum[i](e[i]) + g * sum[i](m[i] * X[i, 1])
""", sizes=dict(n=6), make=lambda rng, n: dict(
            X=np.stack([np.arange(n) * 1.0, 0.3 * _normal(rng, n)], axis=1),
            k=1.0 + rng.random(n), L=0.8, m=1.0 + rng.random(n), g=9.81),
        ref=lambda X, k, L, m, g: spring_chain_ref(X, k[:-1], L, m, g),
        note="the last spring's sqrt kept off zero by a bracket"),

    "lj_cluster": dict(src="""
# a Lennard-Jones cluster, each pair once, switched off smoothly beyond rc
def lj_cluster(X: f64[n, 3], sigma: f64, rc: f64) -> f64:
    r2[i, j] = sum[c]((X[i, c] - X[j, c]) ** 2) + [i == j]
    s6[i, j] = (sigma ** 2 / r2[i, j]) ** 3
    return sum[i, j]([i < j] * 4.0 * (s6[i, j] ** 2 - s6[i, j]) * sigmoid(10.0 * (rc ** 2 - r2[i, j])))
""", sizes=dict(n=5), make=lambda rng, n: dict(
            X=1.3 * np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 1.0]])[:n]
            + 0.05 * _normal(rng, n, 3), sigma=1.0, rc=2.5),
        ref=lj_cluster_ref, note="pairs by [i < j], the diagonal kept off zero"),

    # ------------------------------------------------------------ vector-valued maps
    "glv_step": dict(src="""
# the right-hand side of a generalised Lotka-Volterra system, and one explicit Euler
# step of it scored against a target state
def glv_rhs(x: f64[n], r: f64[n], A: f64[n, n]) -> f64[n]:
    dx[i] = x[i] * (r[i] + sum[j](A[i, j] * x[j]))
    return dx

def glv_step(x: f64[n], r: f64[n], A: f64[n, n], dt: f64, target: f64[n]) -> f64:
    dx = glv_rhs(x, r, A)
    return 0.5 * sum[i]((x[i] + dt * dx[i] - target[i]) ** 2)
""", sizes=dict(n=4), make=lambda rng, n: dict(
            x=1.0 + rng.random(n), r=_normal(rng, n), A=0.3 * _normal(rng, n, n), dt=0.1,
            target=1.0 + rng.random(n)),
        ref=lambda x, r, A, dt, target: float(
            0.5 * np.sum((x + dt * glv_rhs_ref(x, r, A) - target) ** 2)),
        note="a vector field (its Jacobian is tested), then a step"),

    "layer_loss": dict(src="""
# a dense layer with a bias and tanh, and its squared error against targets
def tanh_layer(X: f64[b, d], W: f64[d, h], bias: f64[h]) -> f64[b, h]:
    Y[s, u] = tanh(sum[k](X[s, k] * W[k, u]) + bias[u])
    return Y

def layer_loss(X: f64[b, d], W: f64[d, h], bias: f64[h], T: f64[b, h]) -> f64:
    Y = tanh_layer(X, W, bias)
    return sum[s, u]((Y[s, u] - T[s, u]) ** 2) / b
""", sizes=dict(b=3, d=4, h=2), make=lambda rng, b, d, h: dict(
            X=_normal(rng, b, d), W=0.5 * _normal(rng, d, h), bias=_normal(rng, h),
            T=0.5 * _normal(rng, b, h)),
        ref=lambda X, W, bias, T: float(np.sum((tanh_layer_ref(X, W, bias) - T) ** 2) / len(X)),
        note="a layer's outputs (Jacobian tested), then a loss divided by a size"),

    "polar_fit": dict(src="""
# polar to Cartesian coordinates, one point per row, fitted to measured points
def polar(rad: f64[n], ang: f64[n]) -> f64[n, 2]:
    P[p, c: 2] = rad[p] * ([c == 0] * cos(ang[p]) + [c == 1] * sin(ang[p]))
    return P

def polar_fit(rad: f64[n], ang: f64[n], Q: f64[n, 2]) -> f64:
    P = polar(rad, ang)
    return sum[p, c]((P[p, c] - Q[p, c]) ** 2)
""", sizes=dict(n=5), make=lambda rng, n: dict(rad=1.0 + rng.random(n), ang=_normal(rng, n),
                                                Q=_normal(rng, n, 2)),
        ref=lambda rad, ang, Q: float(np.sum((polar_ref(rad, ang) - Q) ** 2)),
        note="a literal output dimension by brackets (Jacobian tested)"),

    "gravity_power": dict(src="""
# softened gravitational accelerations of n bodies in the plane; the power they
# deliver at given velocities
def gravity_acc(X: f64[n, 2], mass: f64[n], eps: f64) -> f64[n, 2]:
    r2[i, j] = sum[c]((X[j, c] - X[i, c]) ** 2) + eps
    acc[i, c] = sum[j]([j != i] * mass[j] * (X[j, c] - X[i, c]) / r2[i, j] ** 1.5)
    return acc

def gravity_power(X: f64[n, 2], mass: f64[n], eps: f64, V: f64[n, 2]) -> f64:
    acc = gravity_acc(X, mass, eps)
    return sum[i, c](mass[i] * acc[i, c] * V[i, c])
""", sizes=dict(n=4), make=lambda rng, n: dict(
            X=_normal(rng, n, 2), mass=1.0 + rng.random(n), eps=0.01, V=_normal(rng, n, 2)),
        ref=lambda X, mass, eps, V: float(np.sum(mass[:, None] * gravity_acc_ref(X, mass, eps) * V)),
        note="pairwise forces excluding self by a bracket (Jacobian tested)"),

    "softmax_brier": dict(src="""
# a softmax with temperature, and its Brier score against a target distribution
def softmax_vec(z: f64[n], tau: f64) -> f64[n]:
    p[i] = exp(z[i] / tau - logsumexp[j](z[j] / tau))
    return p

def softmax_brier(z: f64[n], tau: f64, q: f64[n]) -> f64:
    p = softmax_vec(z, tau)
    return sum[i]((p[i] - q[i]) ** 2)
""", sizes=dict(n=5), make=lambda rng, n: dict(z=_normal(rng, n), tau=0.7,
                                                q=rng.dirichlet(np.ones(n))),
        ref=lambda z, tau, q: float(np.sum((softmax_vec_ref(z, tau) - q) ** 2)),
        note="a dense Jacobian diag(p) - p p^T (tested) under a loss"),

    # ------------------------------------------------------------ structured matrices
    "toeplitz_qform": dict(src="""
# the quadratic form of a symmetric Toeplitz matrix given by its first column
def toeplitz_qform(c: f64[n], x: f64[n]) -> f64:
    T[r: n, q: n] = [r >= q] * c[r - q] + [r < q] * c[q - r]
    return sum[r, q](x[r] * T[r, q] * x[q])
""", sizes=dict(n=5), make=lambda rng, n: dict(c=_normal(rng, n), x=_normal(rng, n)),
        ref=toeplitz_qform_ref, note="a matrix from a vector by two brackets"),

    "circulant_fit": dict(src="""
# a circulant matrix times a vector, the wrap-around written as a second bracket;
# a deconvolution residual
def circulant(c: f64[n], x: f64[n]) -> f64[n]:
    y[r: n] = sum[q](([r >= q] * c[r - q] + [r < q] * c[r - q + n]) * x[q])
    return y

def circulant_fit(c: f64[n], x: f64[n], obs: f64[n]) -> f64:
    y = circulant(c, x)
    return 0.5 * sum[r]((y[r] - obs[r]) ** 2)
""", sizes=dict(n=5), make=lambda rng, n: dict(c=_normal(rng, n), x=_normal(rng, n),
                                                obs=_normal(rng, n)),
        ref=lambda c, x, obs: float(0.5 * np.sum((circulant_ref(c, x) - obs) ** 2)),
        note="a cyclic convolution (Jacobian tested)"),

    "kron_mv": dict(src="""
# (A kron B) vec(X) without forming the Kronecker product: B X^T A^T in index form
def kron_mv(A: f64[m, n], B: f64[q, p], X: f64[n, p], Y: f64[m, q]) -> f64:
    Z[i, k] = sum[j, l](A[i, j] * B[k, l] * X[j, l])
    return 0.5 * sum[i, k]((Z[i, k] - Y[i, k]) ** 2)
""", sizes=dict(m=3, n=2, q=4, p=3), make=lambda rng, m, n, q, p: dict(
            A=_normal(rng, m, n), B=_normal(rng, q, p), X=_normal(rng, n, p),
            Y=_normal(rng, m, q)),
        ref=kron_mv_ref, note="a double contraction"),

    # ------------------------------------------------------------ robust statistics
    "huber_reg": dict(src="""
# Huber regression: quadratic inside delta, linear outside
def huber_reg(X: f64[n, p], y: f64[n], w: f64[p], delta: f64) -> f64:
    r[s] = sum[k](X[s, k] * w[k]) - y[s]
    return sum[s]([abs(r[s]) <= delta] * 0.5 * r[s] ** 2
                  + [abs(r[s]) > delta] * delta * (abs(r[s]) - 0.5 * delta))
""", sizes=dict(n=9, p=3), make=lambda rng, n, p: dict(
            X=_normal(rng, n, p), y=2.0 * _normal(rng, n), w=_normal(rng, p), delta=1.0),
        ref=huber_reg_ref, note="two value brackets on a residual"),

    "student_t": dict(src="""
# Student-t regression with a log scale
def student_t(X: f64[n, p], y: f64[n], w: f64[p], logs: f64, nu: f64) -> f64:
    r[s] = (sum[k](X[s, k] * w[k]) - y[s]) / exp(logs)
    return sum[s](0.5 * (nu + 1.0) * log1p(r[s] ** 2 / nu)) + n * logs
""", sizes=dict(n=8, p=3), make=lambda rng, n, p: dict(
            X=_normal(rng, n, p), y=_normal(rng, n), w=_normal(rng, p), logs=0.2, nu=4.0),
        ref=student_t_ref, note="log1p and a size as a value"),

    "tukey": dict(src="""
# Tukey's biweight: a smooth redescending loss, constant beyond c
def tukey(X: f64[n, p], y: f64[n], w: f64[p], c: f64) -> f64:
    u[s] = (sum[k](X[s, k] * w[k]) - y[s]) / c
    return c ** 2 / 6.0 * sum[s]([abs(u[s]) < 1.0] * (1.0 - (1.0 - u[s] ** 2) ** 3) + [abs(u[s]) >= 1.0])
""", sizes=dict(n=9, p=2), make=lambda rng, n, p: dict(
            X=_normal(rng, n, p), y=2.0 * _normal(rng, n), w=_normal(rng, p), c=2.0),
        ref=tukey_ref, note="a bracket alone as a term"),

    # ------------------------------------------------------------ finance
    "nelson_siegel": dict(src="""
# a Nelson-Siegel yield curve, discount factors at the payment times, bond prices as
# cash flows times discount factors, fitted to quoted prices
def ns_yield(beta: f64[3], lam: f64, tau: f64[m]) -> f64[m]:
    f1[t] = (1.0 - exp(-tau[t] / lam)) / (tau[t] / lam)
    yl[t] = beta[0] + beta[1] * f1[t] + beta[2] * (f1[t] - exp(-tau[t] / lam))
    return yl

def nelson_siegel(beta: f64[3], lam: f64, tau: f64[m], cf: f64[b, m], price: f64[b]) -> f64:
    yl = ns_yield(beta, lam, tau)
    D[t] = exp(-yl[t] * tau[t])
    return sum[k]((sum[t](cf[k, t] * D[t]) - price[k]) ** 2)
""", sizes=dict(m=6, b=3), make=lambda rng, m, b: dict(
            beta=np.array([0.04, -0.01, 0.02]), lam=1.5, tau=np.arange(1.0, m + 1.0),
            cf=np.triu(np.full((b, m), 0.05)) + np.eye(b, m), price=0.9 + 0.1 * rng.random(b)),
        ref=nelson_siegel_ref, note="a tensor-valued call, then a contraction"),

    "bootstrap": dict(src="""
# discount factors bootstrapped from par rates: D[t] needs the annuity of the earlier
# ones, kept as a running sum in the same recurrence group
def bootstrap(c: f64[T], w: f64[T]) -> f64:
    D[t: T] = (1.0 - c[t] * [t >= 1] * A[t - 1]) / (1.0 + c[t])
    A[t: T] = [t >= 1] * A[t - 1] + D[t]
    return sum[t](w[t] * D[t])
""", sizes=dict(T=6), make=lambda rng, T: dict(c=0.02 + 0.03 * rng.random(T), w=_normal(rng, T)),
        ref=bootstrap_ref, note="a two-statement group with an offset-0 read"),

    "cvar_softmax": dict(src="""
# a long-only portfolio by softmax weights; CVaR of its scenario losses smoothed by a
# softplus of temperature tau
def cvar_softmax(theta: f64[a], R: f64[S, a], alpha: f64, beta: f64, tau: f64) -> f64:
    wt[k] = exp(theta[k] - logsumexp[j](theta[j]))
    loss[s] = -sum[k](R[s, k] * wt[k])
    sp[s] = tau * (max((loss[s] - alpha) / tau, 0.0) + log1p(exp(-abs((loss[s] - alpha) / tau))))
    return alpha + sum[s](sp[s]) / ((1.0 - beta) * S)
""", sizes=dict(a=4, S=10), make=lambda rng, a, S: dict(
            theta=_normal(rng, a), R=0.05 * _normal(rng, S, a), alpha=0.02, beta=0.9, tau=0.01),
        ref=cvar_softmax_ref, note="a stable softplus by max and abs"),

    # ------------------------------------------------------------ geometry
    "euler_fit": dict(src="""
# a rotation from three Euler angles (z, y, x), each factor a function of a scalar,
# fitted to point correspondences
def rot_z(a: f64) -> f64[3, 3]:
    R[r: 3, c: 3] = [r == 2 and c == 2] + [r < 2 and c < 2] * ([r == c] * cos(a) + [r == 1 and c == 0] * sin(a) - [r == 0 and c == 1] * sin(a))
    return R

def rot_y(a: f64) -> f64[3, 3]:
    R[r: 3, c: 3] = [r == 1 and c == 1] + [r != 1 and c != 1] * ([r == c] * cos(a) + [r == 0 and c == 2] * sin(a) - [r == 2 and c == 0] * sin(a))
    return R

def rot_x(a: f64) -> f64[3, 3]:
    R[r: 3, c: 3] = [r == 0 and c == 0] + [r > 0 and c > 0] * ([r == c] * cos(a) + [r == 2 and c == 1] * sin(a) - [r == 1 and c == 2] * sin(a))
    return R

def euler_fit(ang: f64[3], P: f64[n, 3], Q: f64[n, 3]) -> f64:
    a0 = ang[0]
    a1 = ang[1]
    a2 = ang[2]
    Rz = rot_z(a0)
    Ry = rot_y(a1)
    Rx = rot_x(a2)
    M[r, c] = sum[e, f](Rz[r, e] * Ry[e, f] * Rx[f, c])
    return sum[p, r]((sum[c](M[r, c] * P[p, c]) - Q[p, r]) ** 2)
""", sizes=dict(n=4), make=lambda rng, n: dict(
            ang=_normal(rng, 3), P=_normal(rng, n, 3), Q=_normal(rng, n, 3)),
        ref=euler_fit_ref, note="three calls with scalar arguments"),

    "polygon": dict(src="""
# the signed area (shoelace) and perimeter of a closed polygon, returned together;
# the caller forms the isoperimetric ratio 4 pi A / P^2
def area_perimeter(P: f64[n, 2]) -> (f64, f64):
    nx[i: n, c: 2] = [i + 1 < n] * P[i + 1, c] + [i + 1 == n] * P[0, c]
    area = 0.5 * sum[i](P[i, 0] * nx[i, 1] - nx[i, 0] * P[i, 1])
    per = sum[i](sqrt(sum[c]((nx[i, c] - P[i, c]) ** 2)))
    return area, per

def polygon(P: f64[n, 2]) -> f64:
    A, L = area_perimeter(P)
    return 4.0 * 3.141592653589793 * A / L ** 2
""", sizes=dict(n=6), make=lambda rng, n: dict(
            P=np.stack([np.cos(np.linspace(0, 2 * np.pi, n, endpoint=False)),
                        np.sin(np.linspace(0, 2 * np.pi, n, endpoint=False))], axis=1)
            * (1.0 + 0.2 * rng.random((n, 1)))),
        ref=polygon_ref, note="a tuple destructured by a caller, wrap-around by brackets"),

    # ------------------------------------------------------------ small recurrences
    "ewm_var": dict(src="""
# an exponentially weighted mean and variance; each observation is scored against the
# forecast of the step before
def ewm_var(x: f64[T], a: f64) -> f64:
    m[t: T] = [t == 0] * x[0] + [t >= 1] * (m[t - 1] + a * (x[t] - m[t - 1]))
    v[t: T] = [t == 0] + [t >= 1] * (1.0 - a) * (v[t - 1] + a * (x[t] - m[t - 1]) ** 2)
    return sum[t]([t >= 1] * (0.5 * (x[t] - m[t - 1]) ** 2 / v[t - 1] + 0.5 * log(v[t - 1])))
""", sizes=dict(T=8), make=lambda rng, T: dict(x=_normal(rng, T), a=0.3),
        ref=ewm_var_ref, note="two members reading the step before"),

    "local_level": dict(src="""
# the local-level model's Kalman filter: predicted variance, gain, update; the
# negative log-likelihood of the innovations
def local_level(y: f64[T], q: f64, r: f64) -> f64:
    Pp[t: T] = [t == 0] * 10.0 + [t >= 1] * (1.0 - K[t - 1]) * Pp[t - 1] + q
    K[t: T] = Pp[t] / (Pp[t] + r)
    m[t: T] = [t >= 1] * (m[t - 1] + K[t - 1] * (y[t - 1] - m[t - 1]))
    return 0.5 * sum[t](log(Pp[t] + r) + (y[t] - m[t]) ** 2 / (Pp[t] + r))
""", sizes=dict(T=7), make=lambda rng, T: dict(y=np.cumsum(_normal(rng, T)), q=0.5, r=0.8),
        ref=local_level_ref, note="a gain computed inside the step"),

    # ------------------------------------------------------------ i64 gathers
    "center_loss": dict(src="""
# softmax cross-entropy plus a center loss: the label picks a logit and a class centre
def center_loss(F: f64[n, d], W: f64[d, k], C: f64[k, d], lab: i64[n], lam: f64) -> f64:
    Z[s, c] = sum[e](F[s, e] * W[e, c])
    ce = sum[s](logsumexp[c](Z[s, c]) - Z[s, lab[s]])
    return ce + 0.5 * lam * sum[s, e]((F[s, e] - C[lab[s], e]) ** 2)
""", sizes=dict(n=6, d=3, k=4), make=lambda rng, n, d, k: dict(
            F=_normal(rng, n, d), W=_normal(rng, d, k), C=_normal(rng, k, d),
            lab=rng.integers(0, k, n), lam=0.3),
        ref=center_loss_ref, note="one label gathers from two tables"),

    "tree_prior": dict(src="""
# a Gaussian prior along a tree given by a parent table (node 0 is the root), plus
# a unit-variance likelihood of one observation per node
def tree_prior(theta: f64[n], parent: i64[n], obs: f64[n], tau: f64) -> f64:
    edge = 0.5 * sum[v]([v >= 1] * (theta[v] - theta[parent[v]]) ** 2) / tau ** 2
    return edge + 0.5 * theta[0] ** 2 + 0.5 * sum[v]((obs[v] - theta[v]) ** 2)
""", sizes=dict(n=7), make=lambda rng, n: dict(
            theta=_normal(rng, n), parent=np.array([0] + [rng.integers(0, v) for v in range(1, n)]),
            obs=_normal(rng, n), tau=0.7),
        ref=tree_prior_ref, note="a gather through a parent table, guarded by the root"),

    "hist_lookup": dict(src="""
# soft counts: values added into bins named by labels (a scatter), then scaled
def hist_lookup(bins: i64[m], val: f64[m], lo: f64, width: f64, target: f64[n]) -> f64:
    cnt[b: n] = sum[s]([bins[s] == b] * val[s])
    return sum[b]((cnt[b] / (lo + width) - target[b]) ** 2)
""", sizes=dict(m=9, n=4), make=lambda rng, m, n: dict(
            bins=rng.integers(0, n, m), val=rng.random(m), lo=0.5, width=1.5,
            target=rng.random(n)),
        ref=hist_lookup_ref, note="a label compared with an output index"),
}


REJECTED = {
    # a tuple-valued call used inside an expression: it must be destructured first
    "tuple_in_expr": ("""
def two(x: f64[n]) -> (f64, f64):
    return sum[i](x[i]), sum[i](x[i] ** 2)

def tuple_in_expr(x: f64[n]) -> f64:
    return 1.0 + two(x)
""", "TLShapeError", "cannot be used inside an expression", 6),
    # three names for a call that returns two values
    "wrong_arity": ("""
def two(x: f64[n]) -> (f64, f64):
    return sum[i](x[i]), sum[i](x[i] ** 2)

def wrong_arity(x: f64[n]) -> f64:
    a, b, c = two(x)
    return a + b + c
""", "TLTypeError", "returns 2 value(s) but 3 names are given", 6),
    # an i64 label used as a number
    "label_as_value": ("""
def label_as_value(y: i64[n], x: f64[n]) -> f64:
    return sum[s](x[s] * y[s])
""", "TLTypeError", "integer tensor y used as a value", 3),
    # a call with an argument that depends on an enclosing statement's index
    "call_per_row": ("""
def sq(a: f64) -> f64:
    return a * a

def call_per_row(x: f64[n]) -> f64[n]:
    y[i] = sq(x[i])
    return y
""", "TLTypeError", "argument a of sq depends on index i", 6),
}
