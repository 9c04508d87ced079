"""Numba rows: kernels written by hand for a workload, where that is what a practitioner
would write (soft-DTW: the R matrix forward and the E matrix backward of Cuturi and
Blondel's algorithm, one cell at a time)."""
from __future__ import annotations

import numpy as np

from .spec import flat_numpy

FORMULATION = {
    "W14": "hand-written @njit kernels (serial): D, the R matrix forward, the E matrix "
           "backward, then the chain rule through D",
}


def rows(key):
    return [("hand", FORMULATION[key])] if key in FORMULATION else []


def _kernels():
    from numba import njit

    @njit(cache=True)
    def sq_dist(x, y):
        n, m, d = x.shape[0], y.shape[0], x.shape[1]
        D = np.empty((n, m))
        for i in range(n):
            for j in range(m):
                s = 0.0
                for k in range(d):
                    t = x[i, k] - y[j, k]
                    s += t * t
                D[i, j] = s
        return D

    @njit(cache=True)
    def forward(D, g):
        n, m = D.shape
        R = np.full((n + 2, m + 2), np.inf)
        R[0, 0] = 0.0
        for i in range(1, n + 1):
            for j in range(1, m + 1):
                r0 = -R[i - 1, j - 1] / g
                r1 = -R[i - 1, j] / g
                r2 = -R[i, j - 1] / g
                top = max(max(r0, r1), r2)
                s = np.exp(r0 - top) + np.exp(r1 - top) + np.exp(r2 - top)
                R[i, j] = D[i - 1, j - 1] - g * (np.log(s) + top)
        return R

    @njit(cache=True)
    def backward(D, R, g):
        n, m = D.shape
        Dp = np.zeros((n + 2, m + 2))
        Dp[1:n + 1, 1:m + 1] = D
        E = np.zeros((n + 2, m + 2))
        E[n + 1, m + 1] = 1.0
        for i in range(1, n + 1):
            R[i, m + 1] = -np.inf
        for j in range(1, m + 1):
            R[n + 1, j] = -np.inf
        R[n + 1, m + 1] = R[n, m]
        for i in range(n, 0, -1):          # row by row: C order (the published code runs
            for j in range(m, 0, -1):      # down the columns; both respect the dependencies)
                a = np.exp((R[i + 1, j] - R[i, j] - Dp[i + 1, j]) / g)
                b = np.exp((R[i, j + 1] - R[i, j] - Dp[i, j + 1]) / g)
                c = np.exp((R[i + 1, j + 1] - R[i, j] - Dp[i + 1, j + 1]) / g)
                E[i, j] = E[i + 1, j] * a + E[i, j + 1] * b + E[i + 1, j + 1] * c
        return E[1:n + 1, 1:m + 1]

    @njit(cache=True)
    def chain(G, x, y):
        """gx[i] = 2 sum_j G[i, j] (x[i] - y[j]), gy[j] = 2 sum_i G[i, j] (y[j] - x[i])."""
        n, m, d = x.shape[0], y.shape[0], x.shape[1]
        gx = np.zeros((n, d))
        gy = np.zeros((m, d))
        for i in range(n):
            for j in range(m):
                w = 2.0 * G[i, j]
                for k in range(d):
                    t = w * (x[i, k] - y[j, k])
                    gx[i, k] += t
                    gy[j, k] -= t
        return gx, gy

    return sq_dist, forward, backward, chain


def build(key: str, variant: str, size, inp: dict):
    if key != "W14":
        raise KeyError(key)
    sq_dist, forward, backward, chain = _kernels()
    x, y, g = inp["x"], inp["y"], float(inp["g"])
    n, m = len(x), len(y)

    def value():
        return forward(sq_dist(x, y), g)[n, m]

    def value_and_grad():
        D = sq_dist(x, y)
        R = forward(D, g)
        v = R[n, m]
        gx, gy = chain(backward(D, R, g), x, y)
        return v, gx, gy

    return value, value_and_grad


to_numpy = flat_numpy
