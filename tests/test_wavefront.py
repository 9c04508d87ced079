"""Recurrences over two leading indices whose cells are scalars: the Numba kernel runs
them by anti-diagonals (numba_module.wavefront), in both directions and for the
adjoint recurrence of a gradient.  Values against the NumPy interpreter (the suite
runs with TENSORLANG_VERIFY=1) and a loop written here, derivatives by finite
differences and the dot-product identity; the other recurrences keep their order."""
from __future__ import annotations

import numpy as np
import pytest

import tensorlang as tl
from tensorlang.backend import numba_backend

from derivcheck import dot_product_identity, grad_matches_fd

SOURCE = """
def back2(a: f64[n, m], c: f64) -> f64:
    P[i: n, j: m] = a[i, j] + [i >= 1 and j >= 2] * c * exp(-Q[i - 1, j - 2] ** 2) + [j >= 1] * 0.5 * tanh(P[i, j - 1]) + [i >= 2] * 0.3 * log(1 + Q[i - 2, j] ** 2)
    Q[i: n, j: m] = sin(P[i, j]) + [i >= 1 and j >= 1] * 0.25 * Q[i - 1, j - 1]
    return sum[i, j](P[i, j] * Q[i, j])

def fwd2(a: f64[n, m], c: f64) -> f64:
    B[i: n, j: m] = a[i, j] + [i + 1 < n] * 0.5 * tanh(B[i + 1, j]) + [j + 1 < m] * c * exp(-B[i, j + 1] ** 2) + [i + 1 < n and j + 1 < m] * logsumexp[k: 2]([k == 0] * B[i + 1, j + 1] + [k == 1] * a[i, j])
    return sum[i, j](B[i, j] ** 2)

def mixed(a: f64[n, m], c: f64) -> f64[n, m]:
    M[i: n, j: m] = a[i, j] + [i >= 1 and j + 1 < m] * c * tanh(M[i - 1, j + 1]) + [j + 1 < m] * 0.5 * exp(-M[i, j + 1] ** 2) + [i >= 3] * 0.1 * M[i - 3, j]
    return M

def mixed_loss(a: f64[n, m], c: f64) -> f64:
    M = mixed(a, c)
    return sum[i, j](M[i, j] ** 2)

def cube(a: f64[p, n, m], c: f64) -> f64:
    C[t: p, i: n, j: m] = a[t, i, j] + [t >= 1] * 0.5 * tanh(C[t - 1, i, j]) + [i >= 1] * c * exp(-C[t, i - 1, j] ** 2) + [j >= 1] * 0.2 * log(1 + C[t, i, j - 1] ** 2)
    return sum[t, i, j](C[t, i, j] ** 2)
"""

MOD = tl.parse(SOURCE)


@pytest.fixture(autouse=True)
def _compiled(monkeypatch):
    # every call on the Numba kernels (not the interpreter's first tier)
    monkeypatch.setenv("TENSORLANG_TIERS", "0")
SHAPES = [(7, 5), (5, 9), (1, 6), (6, 1), (1, 1), (2, 2), (40, 23)]


def back2_ref(a, c):
    n, m = a.shape
    P, Q = np.zeros((n, m)), np.zeros((n, m))
    for i in range(n):
        for j in range(m):
            p = a[i, j]
            if i >= 1 and j >= 2:
                p += c * np.exp(-Q[i - 1, j - 2] ** 2)
            if j >= 1:
                p += 0.5 * np.tanh(P[i, j - 1])
            if i >= 2:
                p += 0.3 * np.log(1 + Q[i - 2, j] ** 2)
            P[i, j] = p
            Q[i, j] = np.sin(p) + (0.25 * Q[i - 1, j - 1] if i >= 1 and j >= 1 else 0.0)
    return float(np.sum(P * Q))


def fwd2_ref(a, c):
    n, m = a.shape
    B = np.zeros((n, m))
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            b = a[i, j]
            if i + 1 < n:
                b += 0.5 * np.tanh(B[i + 1, j])
            if j + 1 < m:
                b += c * np.exp(-B[i, j + 1] ** 2)
            if i + 1 < n and j + 1 < m:
                b += np.logaddexp(B[i + 1, j + 1], a[i, j])
            B[i, j] = b
    return float(np.sum(B ** 2))


def mixed_ref(a, c):
    n, m = a.shape
    M = np.zeros((n, m))
    for i in range(n):
        for j in range(m - 1, -1, -1):
            v = a[i, j]
            if i >= 1 and j + 1 < m:
                v += c * np.tanh(M[i - 1, j + 1])
            if j + 1 < m:
                v += 0.5 * np.exp(-M[i, j + 1] ** 2)
            if i >= 3:
                v += 0.1 * M[i - 3, j]
            M[i, j] = v
    return M


def cube_ref(a, c):
    C = np.zeros_like(a)
    for t, i, j in np.ndindex(*a.shape):
        v = a[t, i, j]
        if t >= 1:
            v += 0.5 * np.tanh(C[t - 1, i, j])
        if i >= 1:
            v += c * np.exp(-C[t, i - 1, j] ** 2)
        if j >= 1:
            v += 0.2 * np.log(1 + C[t, i, j - 1] ** 2)
        C[t, i, j] = v
    return float(np.sum(C ** 2))


def _wavefronts(fn) -> int:
    prog = fn.optimized_program() if hasattr(fn, "optimized_program") else fn.program
    return numba_backend.module_source(prog).count("# wavefront:")


@pytest.mark.parametrize("n,m", SHAPES)
def test_values_against_loops_and_the_interpreter(n, m):
    rng = np.random.default_rng(n * 100 + m)
    a, c = rng.standard_normal((n, m)), 0.7
    for backend in ("numba", "numpy"):
        assert np.isclose(MOD.back2.compile(backend=backend)(a=a, c=c), back2_ref(a, c),
                          rtol=1e-12)
        assert np.isclose(MOD.fwd2.compile(backend=backend)(a=a, c=c), fwd2_ref(a, c),
                          rtol=1e-12)
        np.testing.assert_allclose(MOD.mixed.compile(backend=backend)(a=a, c=c),
                                   mixed_ref(a, c), rtol=1e-12, atol=1e-13)


def test_three_leading_indices_run_the_last_two_by_anti_diagonals():
    rng = np.random.default_rng(3)
    f = MOD.cube
    for shape in ((3, 5, 4), (1, 6, 2), (2, 1, 1)):
        a = rng.standard_normal(shape)
        assert np.isclose(f.compile(backend="numba")(a=a, c=0.4), cube_ref(a, 0.4), rtol=1e-12)
    assert _wavefronts(f) == 1 and _wavefronts(tl.grad(f, wrt=("a", "c"))) == 2


@pytest.mark.parametrize("name", ["back2", "fwd2", "mixed_loss", "cube"])
def test_derivatives_by_finite_differences(name):
    rng = np.random.default_rng(len(name))
    f = MOD[name]
    for n, m in ((6, 4), (1, 3), (5, 1)):
        shape = (3, n, m) if name == "cube" else (n, m)
        a = dict(a=0.5 * rng.standard_normal(shape), c=0.6)
        grad_matches_fd(f, ("a", "c"), a, rng)
        dot_product_identity(f, ("a", "c"), a, rng)
        g = tl.grad(f, wrt=("a", "c"))
        for got, want in zip(g.compile(backend="numba")(**a), g.compile(backend="numpy")(**a)):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_forward_and_adjoint_recurrences_run_by_anti_diagonals():
    for name in ("back2", "fwd2", "mixed"):
        assert _wavefronts(MOD[name]) == 1, name
    for name in ("back2", "fwd2", "mixed_loss"):
        g = tl.grad(MOD[name], wrt=("a", "c"))
        assert _wavefronts(g) == 2, name
    src = numba_backend.module_source(MOD.back2.program)
    steps = src.split("# wavefront:", 1)[1]
    # cells read the members from rings of recent anti-diagonals, exp and log in the
    # form that vectorises, array indices unsigned
    assert "_ring[np.uint64(" in steps and "tl_vexp(" in steps and "tl_vlog(" in steps
    assert "np.exp(" not in steps.split("\n    return 0", 1)[0]


def test_soft_dtw_value_and_gradient_run_by_anti_diagonals():
    f = tl.load("examples/soft_dtw.tl").soft_dtw
    assert _wavefronts(f) == 1
    assert _wavefronts(tl.value_and_grad(f, wrt=("x", "y"))) == 2


@pytest.mark.parametrize("path,name", [("examples/rnn.tl", "rnn_loss"),
                                       ("examples/hmm.tl", "hmm_loglik"),
                                       ("examples/lstm.tl", "lstm_loss"),
                                       ("examples/cumsum.tl", "cumsum_rows"),
                                       ("examples/returns.tl", "returns_loss")])
def test_other_recurrences_keep_their_order(path, name):
    f = tl.load(path)[name]
    assert _wavefronts(f) == 0
    wrt = [p for p in (f.program.params) if p.elem == "f64" and p.dims][:1]
    if wrt:
        assert _wavefronts(tl.grad(f, wrt=(wrt[0].name,))) == 0
