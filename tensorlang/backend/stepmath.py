"""Compiled helpers that recurrence step loops call: a log-sum-exp of a vector plus a
matrix that stays the same from step to step, as a shifted matrix-vector product, and
its adjoint's form, a sum over m of v[m] exp(M[l, m] + X[l] + Y[m]), as another; and
the same shifts for a whole statement, X[k, l] = sum[m](G exp(P[k, l] + Q[m, k] +
R[m, l])), as one matrix product (`expproduct`, see its section below).

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
from numba import njit, types
from numba.extending import overload

from .vmath import vexp

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


# ------------------------------------------------------------------ exp-products
# A statement X[k, l] = coeff * sum[m](F[k, l, m] exp(P[k, l] + Q[m, k] + R[m, l])), with
# F = Go[k, l] Gk[m, k] Gl[m, l] (the factors outside the exponential, split by the
# indices they read), is one exponential per (k, l, m) as written.  Shifted, it is a
# matrix product (backend/expproduct.py recognises the form and builds the operands):
#
#     c[m] = max_k Q[m, k]                 W[m, k] = Gk[m, k] / gk[k] * exp(Q[m, k] - c[m])
#     d[l] = max_m (c[m] + R[m, l])        Z[m, l] = Gl[m, l] / gl[l] * exp(c[m] + R[m, l] - d[l])
#     X[k, l] = coeff Go[k, l] gk[k] gl[l] exp(P[k, l] + d[l]) (W^T Z)[k, l]
#
# with gk[k], gl[l] the largest magnitudes of Gk's column k and Gl's column l.  Both
# exponents are at most 0 and both quotients at most 1 in magnitude, so for any finite
# inputs no entry of W or Z overflows, and every entry is either a normal number or was
# rounded below 2^-1022 (absolute error at most 2^-1074 each).  The product's
# terms so lost add up to below M 2^-1072, so a sum (W^T Z)[k, l] of at least TINY in
# magnitude has the precision of the terms as written.  The only exponential left that
# can overflow or underflow is exp(P[k, l] + d[l]), an upper bound of the entry's
# largest term: an entry is taken from the product when it lies in [TINY, inf), the
# sum passes the test above and the result is finite and at least TINY (or exactly 0
# from a zero factor).  Every other entry, and every entry of a column k of Q or Gk (or l
# of R or Gl) holding +inf or NaN, or whose P or Go is not finite, is summed as written
# (`_expproduct_exact`), so special values come out as they would in a kernel.  Entries
# whose every term is 0 times a finite number are 0 without summing: P[k, l] = -inf,
# d[l] = -inf, or a zero column of Gk or Gl under a finite exp(P[k, l] + d[l]).
# The cost: M (K1 + K2) + K1 K2 exponentials and one (K1 x M) @ (M x K2) product.


def factor(G, m, k):
    """G[m, k], or 1.0 when G is None (an operand without factors, see expproduct)."""
    return 1.0 if G is None else G[m, k]


@overload(factor, inline="always")
def _factor(G, m, k):
    if isinstance(G, types.NoneType):
        return lambda G, m, k: 1.0
    return lambda G, m, k: G[m, k]


@njit(**JIT)
def _column_scan(Q, G, c):
    """One pass over Q[m, k] and G[m, k]: per column k, whether every entry is usable
    by the product (Q below +inf and not NaN, G finite) and the largest |G|; per row
    m, c[m] raised to the largest entry of Q's row below +inf (NaN fails every test)."""
    M, K = Q.shape
    ok = np.ones(K, dtype=np.bool_)
    big = np.zeros(K)
    for m in range(M):
        top = c[m]
        for k in range(K):
            q = Q[m, k]
            g = factor(G, m, k)
            ok[k] &= (q < np.inf) & np.isfinite(g)
            big[k] = max(big[k], abs(g))
            if q < np.inf and q > top:
                top = q
        c[m] = top
    return ok, big


@njit(**JIT)
def _inverse(big):
    """1 / big, and 0 where big is 0 (a column of zero factors)."""
    out = np.zeros(big.shape[0])
    for k in range(big.shape[0]):
        if big[k] > 0.0:
            out[k] = 1.0 / big[k]
    return out


@njit(**JIT)
def expproduct_factors(Q, R, Gk, Gl):
    """(W, Z, d, rowok, colok, gk, gl) of the shifted product above.  c[m] is taken
    over the entries of Q's row below +inf, also in columns that are not usable (a
    larger shift is as valid; those columns' entries of the product are not used).
    A row m whose c[m] is -inf has every usable Q[m, k] at -inf: every term of that row
    is 0 in the entries the product gives, and its row of Z is 0."""
    M, K1 = Q.shape
    K2 = R.shape[1]
    c = np.full(M, -np.inf)
    rowok, gk = _column_scan(Q, Gk, c)
    colok, gl = _column_scan(R, Gl, np.full(M, -np.inf))
    d = np.full(K2, -np.inf)
    for m in range(M):
        if c[m] > -np.inf:
            for l in range(K2):
                e = c[m] + R[m, l]
                if e < np.inf and e > d[l]:
                    d[l] = e
    for l in range(K2):
        colok[l] &= d[l] < np.inf       # c + R overflowed: summed as written
    ik = _inverse(gk)
    il = _inverse(gl)
    dl = np.where(d > -np.inf, d, 0.0)
    W = np.empty((M, K1))
    Z = np.empty((M, K2))
    for m in range(M):
        # exp(Q - c) and exp(c + R - d) are at most 1 in the usable columns; in a row of
        # c[m] = -inf, W's usable entries are exp(-inf) = 0 and Z's row is exp(-inf)
        cw = c[m] if c[m] > -np.inf else 0.0
        cm = c[m]
        for k in range(K1):
            W[m, k] = factor(Gk, m, k) * ik[k] * vexp(Q[m, k] - cw)
        for l in range(K2):
            Z[m, l] = factor(Gl, m, l) * il[l] * vexp(cm + R[m, l] - dl[l])
    return W, Z, d, rowok, colok, gk, gl


@njit(**JIT)
def _expproduct_exact(P, Q, R, Gk, Gl, Go, coeff, k, l):
    acc = 0.0
    for m in range(Q.shape[0]):
        acc += factor(Go, k, l) * factor(Gk, m, k) * factor(Gl, m, l) * np.exp(P[k, l] + Q[m, k] + R[m, l])
    return coeff * acc


@njit(**JIT)
def expproduct_finish(P, Q, R, Gk, Gl, Go, coeff, S, d, rowok, colok, gk, gl, out):
    """out[k, l] from the product S = W^T Z where the tests above accept it, else
    summed as written."""
    K1, K2 = P.shape
    for k in range(K1):
        for l in range(K2):
            p = P[k, l]
            go = factor(Go, k, l)
            if rowok[k] and colok[l] and np.isfinite(go) and p < np.inf:
                if p == -np.inf or d[l] == -np.inf:
                    # every term is 0 times a finite number (d[l] = -inf: each m has
                    # Q[m, k] = -inf or R[m, l] = -inf, with P finite)
                    out[k, l] = 0.0
                    continue
                # exp(p + d[l]) bounds every term's exponential: finite, they all are
                e = np.exp(p + d[l])
                if e < np.inf and (gk[k] == 0.0 or gl[l] == 0.0):
                    out[k, l] = 0.0
                    continue
                s = S[k, l]
                if e >= TINY and e < np.inf and abs(s) >= TINY and np.isfinite(s):
                    v = coeff * go * (gk[k] * gl[l]) * e * s
                    if np.isfinite(v) and (abs(v) >= TINY or coeff * go == 0.0):
                        out[k, l] = v
                        continue
            out[k, l] = _expproduct_exact(P, Q, R, Gk, Gl, Go, coeff, k, l)
    return out


# Below this many terms (K1 K2 M) a statement's own kernel is faster: the product's
# NumPy calls and their operands cost some 30-40 microseconds, the exponentials of an
# HMM's transition gradient at T = 200, K = 8 (12,800 terms) about as much.
PRODUCT_MIN_TERMS = 16384


def product_pays(terms: int) -> bool:
    """Does a statement of `terms` terms run as the product (else as its kernel)?"""
    return terms >= PRODUCT_MIN_TERMS


def take(x, idx, axis: int):
    """x's entries at the increasing or decreasing indices idx along an axis: a view
    when they are consecutive and increasing (the rows a guard like [m >= 1] keeps)."""
    n = idx.shape[0]
    if n and idx[n - 1] - idx[0] == n - 1:
        return x[(slice(None),) * axis + (slice(idx[0], idx[0] + n),)]
    return np.take(x, idx, axis=axis)


def operand(value, shape):
    """A C-contiguous float64 array of `shape` from `value` (a number, or an array
    broadcast to it): the array itself when it is one already, so an operand of one
    read of consecutive rows costs no copy.  (A broadcast view would be cheaper to
    make, but the compiled loops over it are not vectorised: 2-5 times slower.)"""
    return np.ascontiguousarray(np.broadcast_to(np.asarray(value, dtype=np.float64), shape))


def expproduct(P, Q, R, Gk, Gl, Go, coeff, out):
    """out[k, l] = coeff * sum_m Go[k, l] Gk[m, k] Gl[m, l] exp(P[k, l] + Q[m, k] +
    R[m, l]) (P, Go: K1 x K2; Q, Gk: M x K1; R, Gl: M x K2; a G that is None is all
    ones), as the shifted matrix product above: the product is NumPy's (BLAS), the
    rest compiled."""
    W, Z, d, rowok, colok, gk, gl = expproduct_factors(Q, R, Gk, Gl)
    with np.errstate(all="ignore"):        # NaN or inf only in the unused columns
        S = W.T @ Z
    return expproduct_finish(P, Q, R, Gk, Gl, Go, float(coeff), S, d, rowok, colok,
                             gk, gl, out)


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
