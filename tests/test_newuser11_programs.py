"""Checks of tests/newuser11_programs.py with the helpers of
tests/test_newuser_programs.py (values, gradients, jvp against vjp, the certificate,
the refused programs), then the API around the programs as docs/api.md describes it:
dense Hessians and Hessian-vector products against finite differences of the
gradient, Jacobians of the vector-valued helper functions against finite differences
and closed forms, and two programs on the Numba backend.
"""
import functools
import warnings
from functools import partial

import numpy as np
import pytest

import tensorlang as tl
from derivcheck import fd_jacobian, strict
from newuser11_programs import PROGRAMS, REJECTED
from test_newuser_programs import (corpus_tests, check_dense_hessian,
                                   check_hvp_against_differences,
                                   check_hvp_is_the_hessian_times_the_direction,
                                   check_on_numba, function as _function, inputs as _inputs,
                                   module)

# Derivatives that miss the certificate today (the values are checked all the same).
KNOWN_MISSES: dict = {
    # (dihedral_ff's vjp with respect to all four parameters cost 78*B + 3*N + 262*m + 4
    # against 76*B + 12*N + 392*m + 20: its bond adjoint computed again a sum that another
    # of its statements stores; with simplify.reuse_stored_sums it reads it, 69*B + ...
    # The bond term alone differentiated with respect to (X, kb) cost 78*B + 3*N + 1
    # against 76*B + 12*N + 8 while (X, kb, r0) cost 67*B: without r0's adjoint to store
    # it, the factor (sqrt(...) - r0) was multiplied out over the two gathered rows.  It
    # is now stored over the bonds alone (factor_common_products takes one shared read
    # when the rest needs fewer indices, in a derivative over its bound) and its
    # negation read as such
    # (share_common_statements): 69*B + 3*N + 1.)
}

# Derivatives left out of test_derivatives to keep this module within its time.
SLOW_TO_BUILD: dict = {}

# Dense Hessians left out of the tests below for their build time alone (the values
# match finite differences of the gradient).  The adjoints of the cross products hold
# dozens of products with common factors (`b2[k, 1] + b3[k, 1]`); when
# factor_common_products made one factoring per application, the simplifier stopped
# after 60 rounds with the RoundLimit warning, at 402*N*m + 9*N^2 + 524*B + 1814*m + 4.
# Now one application factors every statement it can and the Hessian reaches its fixed
# point, 243*N*m + 9*N^2 + 524*B + 3417*m + 4, in about twice the time (inline_sparse_
# statements' trials, each a simplification of the whole Hessian, are most of it).
# The gradient builds in 0.3 s, the hvp in 0.2 s.
SLOW_HESSIANS = {"dihedral_ff": "X: 16 s to build (25 s before equal IR trees were linked)"}

function = partial(_function, programs=PROGRAMS)
inputs = partial(_inputs, programs=PROGRAMS)

# the value, derivative and rejection tests every corpus module runs
globals().update(corpus_tests(PROGRAMS, minimum=24, known_misses=KNOWN_MISSES,
                              slow_to_build=SLOW_TO_BUILD, rejected=REJECTED))


_module = partial(module, programs=PROGRAMS)


# ------------------------------------------------------------ Hessians
@functools.lru_cache(maxsize=None)
def _hessian(name, w, certified=True):
    """tl.hessian of an entry, built once; a certificate warning is an error unless
    `certified` is False (then it is not shown)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error" if certified else "ignore", tl.TLCostWarning)
        return tl.hessian(function(name), wrt=w)


@pytest.mark.parametrize("name, w", [("pendulum_rk4", "u"), ("levinson", "x"),
                                     ("cloglog", "w")])
def test_dense_hessian_against_differences_of_the_gradient(name, w):
    """tl.hessian, of shape x.shape + x.shape, is the finite difference of tl.grad and
    symmetric: controls through ten RK4 stage statements, a signal through its
    autocorrelation and the Levinson-Durbin group, a GLM's slopes."""
    check_dense_hessian(name, w, _hessian, PROGRAMS)


def test_cloglog_hessian_in_closed_form():
    """The slopes' Hessian of the penalised cloglog likelihood is -X^T diag(l'') X + I,
    with l'' the second derivative in eta of y log(1 - e^-mu) - (trials - y) mu,
    mu = e^eta, worked out by hand."""
    args = inputs("cloglog", seed=3)
    X, w, y, tr = args["X"], args["w"], args["y"], args["trials"]
    mu = np.exp(args["b0"] + args["logexp"] + X @ w)
    q = np.exp(-mu)
    # d/deta of y log(1 - q) - (tr - y) mu is y mu q / (1 - q) - (tr - y) mu
    d2 = y * (mu * q / (1 - q) - mu ** 2 * q / (1 - q) ** 2) - (tr - y) * mu
    want = -(X.T * d2) @ X + np.eye(len(w))
    assert np.allclose(_hessian("cloglog", "w")(**args), want, rtol=1e-10, atol=1e-10)


def test_subpixel_hessian_values():
    """The loss is quadratic in the 1x1 convolution's weights: its Hessian is
    2 [p == p'] sum over pixels of F F^T, whatever the pixel shuffle does."""
    args = inputs("subpixel", seed=3)
    F = args["F"]
    G = 2.0 * np.einsum("rcq,rcs->qs", F, F)
    want = np.einsum("pt,qs->pqts", np.eye(4), G)
    assert np.allclose(_hessian("subpixel", "Wt")(**args), want,
                       rtol=1e-10, atol=1e-10)


# Reading Wt[2 * a + b] merges [R == 2 * r + a and C == 2 * c + b] into the one equality
# C + 2 * R == 2 * c + l + 4 * r, which no summed index can be eliminated by.  With the
# loop over c outside (the band 0 <= C - 2 * c <= 1 leaves one c) the equality leaves
# one r; with r outside, as written, each of the (2h)(2w)4k entries of the pixel
# shuffle's Jacobian summed over all h rows (4*(2 * h)*h*k*w).  So the order of the
# summed loops is chosen by cost (loops._cheapest_sum_order).
def test_subpixel_hessian_keeps_the_certificate():
    strict(tl.hessian, function("subpixel"), wrt="Wt")


@pytest.mark.parametrize("name, w", [("attitude", "bias"), ("needleman", "gap"),
                                     ("gin_readout", "W1")])
def test_hvp_against_differences_of_the_gradient(name, w):
    """tl.hvp through a renormalised quaternion recurrence, a max recurrence over
    two leading indices, and a ReLU layer with scatters over edges and graphs."""
    check_hvp_against_differences(name, w, PROGRAMS)


def test_hvp_is_the_hessian_times_the_direction():
    check_hvp_is_the_hessian_times_the_direction("pendulum_rk4", "u", _hessian,
                                                 PROGRAMS)


# ------------------------------------------------------------ Jacobians
_rng = np.random.default_rng(12)
JACOBIAN_CASES = {
    "eccentric_anomaly/Mn": ("kepler", "eccentric_anomaly", "Mn",
                             dict(Mn=3.0 * _rng.random(4), e=0.4, steps=np.zeros(6))),
    "eccentric_anomaly/e": ("kepler", "eccentric_anomaly", "e",
                            dict(Mn=3.0 * _rng.random(4), e=0.4, steps=np.zeros(6))),
    "cutpoints/dl": ("ordered_logit", "cutpoints", "dl", dict(c0=-1.0, dl=_rng.standard_normal(4))),
    "dh_link/th": ("dh_chain", "dh_link", "th",
                   dict(th=_rng.standard_normal(3), d=_rng.random(3), a=_rng.random(3),
                        al=_rng.standard_normal(3))),
    "cross_rows/u": ("dihedral_ff", "cross_rows", "u",
                     dict(u=_rng.standard_normal((3, 3)), v=_rng.standard_normal((3, 3)))),
    "box3/A": ("lucas_kanade", "box3", "A", dict(A=_rng.standard_normal((5, 6)))),
    "pixel_shuffle/X": ("subpixel", "pixel_shuffle", "X", dict(X=_rng.standard_normal((4, 2, 3)))),
}


@pytest.mark.parametrize("case", sorted(JACOBIAN_CASES))
def test_jacobian_against_differences_of_the_function(case):
    """tl.jacobian of a vector-valued helper: shape out.shape + x.shape, the finite
    difference of the function, built within the certificate."""
    entry, fn, w, args = JACOBIAN_CASES[case]
    f = _module(entry)[fn]
    J = np.asarray(strict(tl.jacobian, f, wrt=w)(**args))
    out = np.asarray(f(**args))
    assert J.shape == out.shape + np.shape(args[w])
    assert np.allclose(J, fd_jacobian(f, args, w), rtol=1e-5, atol=1e-6)


def test_jacobians_with_closed_forms():
    """Kepler's solution depends on each mean anomaly alone, so dE/dM is diagonal,
    1 / (1 - e cos E) at convergence; a cross product's Jacobian in u is -[v]x; the
    pixel shuffle's is a permutation matrix; the box sum's entries are 0 or 1 with
    nine ones per output."""
    _, fn, _, args = JACOBIAN_CASES["eccentric_anomaly/Mn"]
    ecc = _module("kepler")[fn]
    J = strict(tl.jacobian, ecc, wrt="Mn")(**args)
    E = ecc(**args)
    assert np.allclose(J, np.diag(1.0 / (1.0 - args["e"] * np.cos(E))), rtol=1e-8, atol=1e-12)
    cross = _module("dihedral_ff")["cross_rows"]
    u, v = JACOBIAN_CASES["cross_rows/u"][3].values()
    J = strict(tl.jacobian, cross, wrt="u")(u=u, v=v)          # [m, 3, m, 3]
    for q in range(len(u)):
        vx = np.array([[0, -v[q, 2], v[q, 1]], [v[q, 2], 0, -v[q, 0]], [-v[q, 1], v[q, 0], 0]])
        assert np.allclose(J[q, :, q, :], -vx, rtol=0, atol=1e-15)
        assert not np.any(np.delete(J[q], q, axis=1))
    shuf = _module("subpixel")["pixel_shuffle"]
    X = JACOBIAN_CASES["pixel_shuffle/X"][3]["X"]
    P = strict(tl.jacobian, shuf, wrt="X")(X=X).reshape(X.size, X.size)
    assert np.array_equal(P @ P.T, np.eye(X.size))
    box = _module("lucas_kanade")["box3"]
    A = JACOBIAN_CASES["box3/A"][3]["A"]
    B = strict(tl.jacobian, box, wrt="A")(A=A)
    assert set(np.unique(B)) == {0.0, 1.0}
    assert np.array_equal(B.reshape(-1, A.size).sum(axis=1), np.full(B[..., 0, 0].size, 9.0))


def test_jacobian_of_a_tuple_valued_helper_is_refused():
    """docs/api.md: tl.jacobian takes a function with one output; haar returns two."""
    haar = _module("haar2")["haar"]
    with pytest.raises(tl.TLShapeError) as err:
        tl.jacobian(haar, wrt="x")
    assert "returns 2 values" in str(err.value)
    assert str(err.value).startswith("haar2.tl:3:")


# ------------------------------------------------------------ Numba
def test_a_pair_on_numba():
    """The values and gradients of a recurrence with abs of a member one step back and
    of a tuple-returning call applied to its own halved output are the interpreter's on
    the compiled backend (two programs that compile in about two seconds each)."""
    check_on_numba(("egarch", "haar2"), PROGRAMS)
