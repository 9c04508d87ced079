"""Recurrence steps whose log-sum-exp of a vector plus a fixed matrix (and its adjoint, a
sum of v[m] exp(M[l, m] + x[l] + y[m])) run as shifted matrix-vector products
(backend/stepmath.py): the same values as the expressions as written, special values
and underflow included, whatever the names and the matrix's orientation."""
import numpy as np
import pytest

import tensorlang as tl
from tensorlang.backend import stepmath
from tensorlang.backend.numba_backend import module_source


def lse_direct(M, u):
    with np.errstate(all="ignore"):
        E = u[:, None] + M
        top = np.max(E, axis=0)
        safe = np.where(np.isfinite(top), top, 0.0)
        return safe + np.log(np.sum(np.exp(E - safe), axis=0))


def expdot_direct(M, X, Y, v):
    with np.errstate(all="ignore"):
        return np.sum(v[None, :] * np.exp(M + X[:, None] + Y[None, :]), axis=1)


CASES = {
    "plain": lambda r: (r.standard_normal((5, 4)), r.standard_normal(5)),
    "a column of -inf": lambda r: (np.where(np.arange(4) == 2, -np.inf,
                                            r.standard_normal((5, 4))), r.standard_normal(5)),
    "a state of -inf": lambda r: (r.standard_normal((5, 4)),
                                  np.where(np.arange(5) == 1, -np.inf, r.standard_normal(5))),
    "every state -inf": lambda r: (r.standard_normal((5, 4)), np.full(5, -np.inf)),
    "nan and inf": lambda r: (np.where(np.arange(4) == 0, np.nan, r.standard_normal((5, 4))),
                              np.where(np.arange(5) == 3, np.inf, r.standard_normal(5))),
    "underflow": lambda r: (np.array([[-1000.0, 0.0], [0.0, 3.0]]), np.array([0.0, -1000.0])),
}


@pytest.mark.parametrize("case", CASES)
def test_lse_matvec_is_the_logsumexp(case):
    M, u = CASES[case](np.random.default_rng(len(case)))
    P, top = stepmath.lse_prepare(M)
    got = stepmath.lse_matvec(P, top, M, u, np.empty(M.shape[1]))
    want = lse_direct(M, u)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    assert np.allclose(got[ok], want[ok], rtol=1e-13, atol=0)


@pytest.mark.parametrize("case", ["plain", "a column of -inf", "underflow", "nan and inf"])
def test_expdot_matvec_is_the_sum(case):
    rng = np.random.default_rng(7)
    M, x = CASES[case](rng)
    M = M.T                                   # l over the rows, m over the columns
    X = x[: M.shape[0]] if x.size >= M.shape[0] else rng.standard_normal(M.shape[0])
    Y = -rng.random(M.shape[1]) * (800.0 if case == "underflow" else 1.0)
    v = rng.standard_normal(M.shape[1])
    P, top = stepmath.lse_prepare(M)
    got = stepmath.expdot_matvec(P, top, M, X, Y, v, np.empty(M.shape[0]))
    want = expdot_direct(M, X, Y, v)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    assert np.allclose(got[ok], want[ok], rtol=1e-12, atol=1e-300)


# A forward recurrence with the matrix read transposed (Q[s, r]: reduced over its second
# axis), an extra per-step vector, and names of its own.
SRC = """def chain(z0: f64[n], Q: f64[n, n], b: f64[T, n]) -> f64:
    z[t: T, s: n] = [t == 0] * z0[s] + [t >= 1] * (b[t, s] + logsumexp[r](z[t - 1, r] + Q[s, r]))
    return logsumexp[s](z[T - 1, s])
"""


def test_a_logsumexp_recurrence_and_its_gradient_use_the_products():
    f = tl.parse(SRC)["chain"]
    g = tl.grad(f, wrt=("z0", "b"))
    assert "tl_lse_matvec(" in module_source(f.optimized_program())
    assert "tl_expdot_matvec(" in module_source(g.program)
    rng = np.random.default_rng(3)
    for T, n in ((1, 3), (2, 1), (7, 5)):
        args = (rng.standard_normal(n), rng.standard_normal((n, n)) - 2.0,
                rng.standard_normal((T, n)))
        assert np.allclose(f.compile("numba")(*args), f.compile("numpy")(*args), rtol=1e-12)
        for got, want in zip(g.compile("numba")(*args), g.compile("numpy")(*args)):
            assert np.allclose(got, want, rtol=1e-11, atol=1e-14)
