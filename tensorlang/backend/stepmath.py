"""Compiled helpers that recurrence step loops call: a log-sum-exp of a vector plus a
matrix that stays the same from step to step, as a shifted matrix-vector product, and
its adjoint's form, a sum over m of v[m] exp(M[l, m] + X[l] + Y[m]), as another.

``out[j] = logsumexp[i](u[i] + M[i, j])`` costs an exponential per (i, j) when
evaluated as written.  With ``top[j] = max_i M[i, j]``, ``P[i, j] = exp(M[i, j] -
top[j])`` (once, before the steps) and ``mu = max_i u[i]``, it is
``mu + top[j] + log(sum_i exp(u[i] - mu) P[i, j])``: n exponentials, one BLAS
matrix-vector product and m logarithms a step.  Every term of the sum is at most
one, and the sum is accepted when it is at least ``TINY``: the terms that underflow
are then below 1e-28 of it, so the result has the precision of the max-shifted form.
Where the sum is smaller, not finite, or ``top[j]`` or ``mu`` is not finite (a
column or a state of -inf, an inf, a NaN), that entry is computed as written, with
the same one-pass rule as a kernel's logsumexp (backend/kernels.py), so every
special value comes out as it would there.
"""
from __future__ import annotations

import numpy as np
from numba import njit

TINY = 1e-280

JIT = dict(cache=True, error_model="numpy", nogil=True)


@njit(**JIT)
def lse_prepare(M):
    """(P, top) of a matrix M[i, j] reduced over i: top[j] = max_i M[i, j] (-inf
    for a column without a number greater than -inf) and P[i, j] = exp(M[i, j] - top[j])."""
    n, m = M.shape
    top = np.full(m, -np.inf)
    for i in range(n):
        for j in range(m):
            if M[i, j] > top[j]:
                top[j] = M[i, j]
    P = np.empty((n, m))
    for i in range(n):
        for j in range(m):
            P[i, j] = np.exp(M[i, j] - top[j])
    return P, top


@njit(**JIT)
def _lse_exact(M, u, j):
    r = -np.inf
    q = 0.0
    for i in range(u.shape[0]):
        e = u[i] + M[i, j]
        if e > r:
            q = q * np.exp(r - e) + 1.0
            r = e
        elif e < r:
            q += np.exp(e - r)
        elif e == r:
            q += 1.0
        else:
            r = r + e
    return r + np.log(q)


@njit(**JIT)
def lse_matvec(P, top, M, u, out):
    """out[j] = logsumexp[i](u[i] + M[i, j]), (P, top) = lse_prepare(M)."""
    n = u.shape[0]
    mu = -np.inf
    for i in range(n):
        if u[i] > mu:
            mu = u[i]
    if not np.isfinite(mu):
        for j in range(out.shape[0]):
            out[j] = _lse_exact(M, u, j)
        return out
    w = np.empty(n)
    for i in range(n):
        w[i] = np.exp(u[i] - mu)
    s = w @ P
    for j in range(out.shape[0]):
        if s[j] >= TINY and s[j] < np.inf and np.isfinite(top[j]):
            out[j] = mu + top[j] + np.log(s[j])
        else:
            out[j] = _lse_exact(M, u, j)
    return out


@njit(**JIT)
def _expdot_exact(M, X, Y, v, l):
    acc = 0.0
    for m in range(v.shape[0]):
        acc += v[m] * np.exp(M[l, m] + X[l] + Y[m])
    return acc


@njit(**JIT)
def expdot_matvec(P, top, M, X, Y, v, out):
    """out[l] = sum_m v[m] exp(M[l, m] + X[l] + Y[m]), (P, top) = lse_prepare(M)
    (top[m] = max_l M[l, m]): with xm = max_l X[l], out[l] = exp(X[l] - xm)
    sum_m P[l, m] z[m], z[m] = v[m] exp(Y[m] + top[m] + xm), one matrix-vector
    product.  An entry is taken from it when every z is finite and both exp(X[l] - xm)
    and the sum are at least TINY in magnitude (what underflowed is then below 1e-25
    of it); otherwise it is summed as written."""
    n = X.shape[0]
    xm = -np.inf
    for l in range(n):
        if X[l] > xm:
            xm = X[l]
    ok = np.isfinite(xm)
    if ok:
        z = np.empty(v.shape[0])
        for m in range(v.shape[0]):
            z[m] = v[m] * np.exp(Y[m] + top[m] + xm)
            if not np.isfinite(z[m]):
                ok = False
    if not ok:
        for l in range(n):
            out[l] = _expdot_exact(M, X, Y, v, l)
        return out
    s = P @ z
    for l in range(n):
        e = np.exp(X[l] - xm)
        if e >= TINY and abs(s[l]) >= TINY and np.isfinite(s[l]):
            out[l] = e * s[l]
        else:
            out[l] = _expdot_exact(M, X, Y, v, l)
    return out


@njit(**JIT)
def wave_span(a, b, mid, f, slope, op):
    """The cells [a, b) around `mid` on which a bracket keeps its value at `mid`, cut
    down from [a, b): the bracket is `f(u) op 0` with f affine in the cell u,
    f(mid) = f and f(u + 1) - f(u) = slope; op 0 is ==, 1 !=, 2 >=, 3 >, 4 <=, 5 <.
    A recurrence's anti-diagonal loop (numba_module._wavefront_cells) runs the cells
    of [a, b) with the brackets' values at mid, the others with the brackets tested."""
    if slope == 0:
        return a, b
    if op <= 1:
        # the value changes only where f is 0: at mid (then mid alone keeps it) or at
        # mid - f / slope when that is a whole number
        if f == 0:
            return max(a, mid), min(b, mid + 1)
        if f % slope != 0:
            return a, b
        z = mid - f // slope
        if z < mid:
            return max(a, z + 1), b
        return a, min(b, z)
    # g(u) = g0 + s (u - mid) >= 0, the bracket as a test of g >= 0
    if op == 2:
        g0, s = f, slope
    elif op == 3:
        g0, s = f - 1, slope
    elif op == 4:
        g0, s = -f, -slope
    else:
        g0, s = -f - 1, -slope
    if s > 0:
        c = mid - (g0 // s)             # the first u with g(u) >= 0: mid + ceil(-g0 / s)
        if g0 >= 0:
            return max(a, c), b
        return a, min(b, c)
    c = mid + (g0 // -s)                # the last u with g(u) >= 0
    if g0 >= 0:
        return a, min(b, c + 1)
    return max(a, c + 1), b
