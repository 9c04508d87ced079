"""NumPy references: the three objectives' values, written from the definitions in the data
directory's README, and their derivatives by the complex step.

The complex step (f(x + i h) has imaginary part h f'(x) + O(h^3)) gives derivatives to rounding
error with no subtraction, so with h = 1e-30 it is a reference at the 1e-9 level for any
function built from analytic operations; comparisons (the maximum of a logsumexp, the |r| = 0
branch of the rotation) look at real parts only.  Each function below therefore accepts complex
arrays.  A derivative costs one evaluation per seed: the GMM gradient one per parameter (use it on
small instances), the BA Jacobian 15 evaluations in all, because an observation depends on one
camera, one point and one weight, so one seed per local parameter (all cameras' column c at once)
gives a column of every observation's block.  Where even that is too slow (GMM at 2.5 million
points), the GMM gradient is also written out by hand (`gmm_gradient_by_hand`), checked against
the complex step in the tests.
"""
from __future__ import annotations

import math

import numpy as np

H = 1e-30


# ---------------------------------------------------------------------------- GMM
def lower_pairs(d: int) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cols) of the strict lower triangle in the order of the packed `l`: column by
    column, column j taking rows j+1 .. d-1."""
    rows = [r for c in range(d) for r in range(c + 1, d)]
    cols = [c for c in range(d) for r in range(c + 1, d)]
    return np.array(rows, dtype=np.int64), np.array(cols, dtype=np.int64)


def _logsumexp(a: np.ndarray, axis: int) -> np.ndarray:
    mx = np.max(a.real, axis=axis, keepdims=True)
    return np.log(np.sum(np.exp(a - mx), axis=axis)) + np.squeeze(mx, axis)


def multigammaln(a: float, d: int) -> float:
    return 0.25 * d * (d - 1) * math.log(math.pi) + sum(math.lgamma(a - 0.5 * j) for j in range(d))


def _factor_parts(icf, d: int):
    """(q, the packed strict lower triangle l, exp(q), lower_pairs(d)) of the icf rows."""
    q = icf[:, :d]
    return q, icf[:, d:], np.exp(q), lower_pairs(d)


def gmm_objective(alphas, means, icf, x, gamma: float, m: int, chunk: int = 1 << 20) -> float:
    """E of the README (a real or complex scalar); points are taken in chunks so n x K x D
    intermediates stay small."""
    n, d = x.shape
    k = alphas.shape[0]
    q, lpacked, qdiag, (rows, cols) = _factor_parts(icf, d)
    L = np.zeros((k, d, d), dtype=np.result_type(icf, x))
    L[:, rows, cols] = lpacked
    sum_q = np.sum(q, axis=1)
    per = max(1, chunk // (k * d))
    total = 0.0
    for i0 in range(0, n, per):
        xc = x[i0:i0 + per, None, :] - means[None, :, :]           # (b, K, D)
        z = qdiag[None] * xc + np.einsum("kij,bkj->bki", L, xc)
        beta = alphas[None] + sum_q[None] - 0.5 * np.sum(z * z, axis=2)
        total = total + np.sum(_logsumexp(beta, axis=1))
    nprime = d + m + 1
    prior = np.sum(0.5 * gamma ** 2 * (np.sum(qdiag * qdiag, axis=1) + np.sum(lpacked * lpacked, axis=1))
                   - m * sum_q)
    const = -n * d * 0.5 * math.log(2 * math.pi)
    wishart_const = k * (nprime * d * math.log(gamma / math.sqrt(2.0)) - multigammaln(0.5 * nprime, d))
    return const + total - n * _logsumexp(alphas[None], axis=1)[0] + prior - wishart_const


def gmm_gradient(alphas, means, icf, x, gamma: float, m: int):
    """(dE/dalphas, dE/dmeans, dE/dicf) by the complex step, one evaluation per parameter."""
    out = []
    args = [np.asarray(alphas, complex), np.asarray(means, complex), np.asarray(icf, complex)]
    for which in range(3):
        g = np.empty(args[which].shape)
        for idx in np.ndindex(*args[which].shape):
            a = list(args)
            a[which] = args[which].copy()
            a[which][idx] += 1j * H
            g[idx] = gmm_objective(a[0], a[1], a[2], x, gamma, m).imag / H
        out.append(g)
    return tuple(out)



def gmm_gradient_by_hand(alphas, means, icf, x, gamma: float, m: int, chunk: int = 1 << 22):
    """(dE/dalphas, dE/dmeans, dE/dicf) derived by hand, for instances where the complex step
    (one objective per parameter) is too slow: an independent check of the same gradient.

    With Q_k = diag(exp(q_k)) + L_k, z = Q_k (x_i - mu_k), beta_ik = alpha_k + sum(q_k)
    - |z|^2 / 2 and r_ik = softmax_k(beta_ik):
      dE/dalpha_k = sum_i r_ik - n softmax(alpha)_k,
      dE/dmu_k    = Q_k^T sum_i r_ik z_ik,
      dE/dQ_k     = -G_k with G_k = sum_i r_ik z_ik (x_i - mu_k)^T, of which the diagonal
                    (times exp(q_k), plus sum_i r_ik) gives dE/dq_k and the strict lower
                    triangle dE/dl_k; the prior adds gamma^2 exp(2 q) - m and gamma^2 l.
    Points are taken in chunks; every product over them is a batched matrix product."""
    n, d = x.shape
    k = alphas.shape[0]
    q, lpacked, qdiag, (rows, cols) = _factor_parts(icf, d)
    Q = np.zeros((k, d, d))
    Q[:, rows, cols] = lpacked
    Q[:, np.arange(d), np.arange(d)] = qdiag
    QT = np.ascontiguousarray(np.transpose(Q, (0, 2, 1)))
    sum_q = np.sum(q, axis=1)
    r_sum = np.zeros(k)
    rz_sum = np.zeros((k, d))
    G = np.zeros((k, d, d))
    per = max(1, chunk // (k * d))
    for i0 in range(0, n, per):
        xc = x[None, i0:i0 + per, :] - means[:, None, :]            # (K, b, D)
        z = np.matmul(xc, QT)                                          # z[k, b] = Q_k xc[k, b]
        beta = (alphas + sum_q)[:, None] - 0.5 * np.einsum("kbi,kbi->kb", z, z)
        beta -= np.max(beta, axis=0, keepdims=True)
        r = np.exp(beta)
        r /= np.sum(r, axis=0, keepdims=True)                          # (K, b)
        rz = r[:, :, None] * z
        r_sum += np.sum(r, axis=1)
        rz_sum += np.sum(rz, axis=1)
        G += np.matmul(np.transpose(rz, (0, 2, 1)), xc)                # sum_b rz xc^T
    soft_alpha = np.exp(alphas - np.max(alphas))
    soft_alpha /= np.sum(soft_alpha)
    d_alphas = r_sum - n * soft_alpha
    d_means = np.einsum("kji,kj->ki", Q, rz_sum)                      # Q_k^T (sum r z)
    d_q = r_sum[:, None] - G[:, np.arange(d), np.arange(d)] * qdiag + gamma ** 2 * qdiag ** 2 - m
    d_l = -G[:, rows, cols] + gamma ** 2 * lpacked
    return d_alphas, d_means, np.concatenate([d_q, d_l], axis=1)

# ---------------------------------------------------------------------------- BA
def _cross(a, b):
    return np.stack([a[:, 1] * b[:, 2] - a[:, 2] * b[:, 1],
                     a[:, 2] * b[:, 0] - a[:, 0] * b[:, 2],
                     a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0]], axis=1)


def rodrigues(r, Y):
    t2 = np.sum(r * r, axis=1)
    nz = t2.real != 0
    t = np.sqrt(np.where(nz, t2, 1.0))[:, None]
    u = r / t
    c, s = np.cos(t), np.sin(t)
    big = Y * c + _cross(u, Y) * s + u * np.sum(u * Y, axis=1, keepdims=True) * (1 - c)
    small = Y + _cross(r, Y)
    return np.where(nz[:, None], big, small)


def ba_residuals(cams, X, w, feats, obs):
    """(reproj (p, 2), werr (p,)) as in the README."""
    cam = cams[obs[:, 0]]
    Yr = rodrigues(cam[:, 0:3], X[obs[:, 1]] - cam[:, 3:6])
    q = Yr[:, 0:2] / Yr[:, 2:3]
    s = np.sum(q * q, axis=1, keepdims=True)
    q = q * (1 + cam[:, 9:10] * s + cam[:, 10:11] * s * s)
    reproj = w[:, None] * (cam[:, 6:7] * q + cam[:, 7:9] - feats)
    return reproj, 1 - w * w


def ba_jacobian_blocks(cams, X, w, feats, obs):
    """(J (p, 2, 15), dwerr (p,)): each observation's reprojection block over its local
    parameters (camera 11, point 3, weight 1) and the weight residual's derivative."""
    p = w.shape[0]
    J = np.empty((p, 2, 15))
    cc, Xc, wc = cams.astype(complex), X.astype(complex), w.astype(complex)
    for c in range(15):
        a, b, v = cc.copy(), Xc.copy(), wc.copy()
        if c < 11:
            a[:, c] += 1j * H
        elif c < 14:
            b[:, c - 11] += 1j * H
        else:
            v += 1j * H
        J[:, :, c] = ba_residuals(a, b, v, feats, obs)[0].imag / H
    return J, -2.0 * w


def ba_csr(J, dwerr, obs, n: int, m: int):
    """ADBench's sparse Jacobian: rows 2i, 2i+1 hold observation i's reprojection block (the 11
    columns of its camera, the 3 of its point, the one of its weight), row 2p + i the weight
    residual's derivative; nrows = 3p, ncols = 11n + 3m + p, 31 non-zeros per observation.
    Column indices within a row are increasing (camera, point, weight)."""
    import scipy.sparse
    p = obs.shape[0]
    i = np.arange(p, dtype=np.int64)
    cols = np.empty((p, 15), dtype=np.int64)
    cols[:, :11] = 11 * obs[:, :1] + np.arange(11)
    cols[:, 11:14] = 11 * n + 3 * obs[:, 1:2] + np.arange(3)
    cols[:, 14] = 11 * n + 3 * m + i
    indices = np.concatenate([np.repeat(cols[:, None, :], 2, axis=1).ravel(), 11 * n + 3 * m + i])
    data = np.concatenate([np.ascontiguousarray(J, dtype=np.float64).ravel(), dwerr])
    indptr = np.concatenate([np.arange(0, 30 * p + 1, 15, dtype=np.int64),
                             30 * p + 1 + i])
    return scipy.sparse.csr_matrix((data, indices, indptr), shape=(3 * p, 11 * n + 3 * m + p))


# ---------------------------------------------------------------------------- LSTM
def _sigmoid(a):
    return 1.0 / (1.0 + np.exp(-a))


def lstm_objective(main_params, extra_params, state, sequence) -> float:
    """The README's loss: -total / count over the steps t = 0 .. c-2 (with the benchmark's
    `2 +` inside the log-normaliser)."""
    layers = main_params.shape[0] // 2
    c, b = sequence.shape
    h = [state[2 * j].copy() for j in range(layers)]
    s = [state[2 * j + 1].copy() for j in range(layers)]
    total = 0.0
    for t in range(c - 1):
        x = sequence[t] * extra_params[0]
        for j in range(layers):
            W, B = main_params[2 * j], main_params[2 * j + 1]
            g = np.concatenate([x, h[j], x, h[j]]) * W + B
            forget, ingate = _sigmoid(g[:b]), _sigmoid(g[b:2 * b])
            outgate, change = _sigmoid(g[2 * b:3 * b]), np.tanh(g[3 * b:])
            s[j] = s[j] * forget + ingate * change
            h[j] = outgate * np.tanh(s[j])
            x = h[j]
        y = x * extra_params[1] + extra_params[2]
        ynorm = y - np.log(2.0 + np.sum(np.exp(y)))
        total = total + np.sum(sequence[t + 1] * ynorm)
    return -total / ((c - 1) * b)


def lstm_gradient(main_params, extra_params, state, sequence):
    """(d/d main_params, d/d extra_params) by the complex step (one evaluation per parameter)."""
    out = []
    args = [np.asarray(main_params, complex), np.asarray(extra_params, complex)]
    for which in range(2):
        g = np.empty(args[which].shape)
        for idx in np.ndindex(*args[which].shape):
            a = list(args)
            a[which] = args[which].copy()
            a[which][idx] += 1j * H
            g[idx] = lstm_objective(a[0], a[1], state, sequence).imag / H
        out.append(g)
    return tuple(out)
