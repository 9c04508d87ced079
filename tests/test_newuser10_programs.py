"""Checks of tests/newuser10_programs.py with the helpers of
tests/test_newuser_programs.py (values, gradients, jvp against vjp, the certificate,
the refused programs), then the API around a program as a user reads it in
docs/api.md: dense Hessians and Hessian-vector products against finite differences
of the gradient, Jacobians of the vector-valued programs against finite differences
of the function, the JAX and PyTorch bridges, the command line on a file, and a
handful on the Numba backend.
"""
import warnings
from functools import partial

import numpy as np
import pytest

import tensorlang as tl
from derivcheck import hvp_matches_fd
from newuser10_programs import PROGRAMS, REJECTED
from test_newuser_programs import (corpus_tests, check_on_numba, function as _function,
                                   inputs as _inputs)

# Derivatives that miss the certificate today (the values are checked all the same).
KNOWN_MISSES: dict = {}

# Derivatives left out of test_derivatives to keep this module within its time.
SLOW_TO_BUILD: dict = {}

function = partial(_function, programs=PROGRAMS)
inputs = partial(_inputs, programs=PROGRAMS)

# the value, derivative and rejection tests every corpus module runs
globals().update(corpus_tests(PROGRAMS, minimum=24, known_misses=KNOWN_MISSES,
                              slow_to_build=SLOW_TO_BUILD, rejected=REJECTED))


def _module(name):
    return tl.parse(PROGRAMS[name]["src"], filename=f"{name}.tl")


def _quiet(build, *args, **kw):
    """A derivative built with certificate warnings turned into errors: every program
    here is cheap to differentiate, so a warning is a finding."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", tl.TLCostWarning)
        return build(*args, **kw)


EPS = 1e-6


def _fd_jacobian(fn, args, w):
    """Central differences of fn (any output shape) along each entry of args[w]:
    shape out.shape + w.shape."""
    x = np.asarray(args[w], dtype=float)
    cols = []
    for k in range(x.size):
        e = np.zeros(x.size)
        e[k] = EPS
        plus, minus = dict(args), dict(args)
        plus[w] = x + e.reshape(x.shape)
        minus[w] = x - e.reshape(x.shape)
        cols.append((np.asarray(fn(**plus)) - np.asarray(fn(**minus))) / (2 * EPS))
    J = np.stack(cols, axis=-1)
    return J.reshape(J.shape[:-1] + x.shape)


# ------------------------------------------------------------ Hessians
@pytest.mark.parametrize("name, w", [("newton_logreg", "w"), ("gauss_newton", "p"),
                                     ("spring_chain", "X"), ("lj_cluster", "X"),
                                     ("toeplitz_qform", "x")])
def test_dense_hessian_against_differences_of_the_gradient(name, w):
    """tl.hessian, shape x.shape + x.shape, is the finite difference of tl.grad, and
    symmetric; a Newton step written in the program is differentiated twice through
    its 2x2 inverse."""
    f = function(name)
    args = inputs(name, seed=3)
    H = np.asarray(_quiet(tl.hessian, f, wrt=w)(**args))
    shape = np.shape(args[w])
    assert H.shape == shape + shape
    fd = _fd_jacobian(tl.grad(f, wrt=w), args, w)
    assert np.allclose(H, fd, rtol=1e-5, atol=1e-6), np.max(np.abs(H - fd))
    n = int(np.prod(shape))
    assert np.allclose(H.reshape(n, n), H.reshape(n, n).T, rtol=1e-9, atol=1e-9)


def test_toeplitz_hessian_is_the_matrix_twice():
    """The quadratic form's Hessian in x is 2 T, exactly (no rounding but the sums)."""
    f = function("toeplitz_qform")
    args = inputs("toeplitz_qform")
    c = args["c"]
    n = len(c)
    T = np.array([[c[abs(r - q)] for q in range(n)] for r in range(n)])
    assert np.allclose(_quiet(tl.hessian, f, wrt="x")(**args), 2 * T, rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize("name, w", [("euler_fit", "ang"), ("local_level", "y"),
                                     ("bootstrap", "c")])
def test_hvp_against_differences_of_the_gradient(name, w):
    """tl.hvp through three calls of rotation factors, through a Kalman gain inside a
    recurrence, and through a two-statement recurrence group."""
    f = function(name)
    with warnings.catch_warnings():
        warnings.simplefilter("error", tl.TLCostWarning)
        hvp_matches_fd(f, w, inputs(name, seed=5), np.random.default_rng(6),
                       f"hvp of {name} along {w}")


def test_hvp_is_the_hessian_times_the_direction():
    f = function("gauss_newton")
    args = inputs("gauss_newton", seed=2)
    d = np.array([0.3, -1.1])
    H = _quiet(tl.hessian, f, wrt="p")(**args)
    hv = _quiet(tl.hvp, f, wrt="p")(**args, d_p=d)
    assert np.allclose(hv, H @ d, rtol=1e-10, atol=1e-12)


# ------------------------------------------------------------ Jacobians
@pytest.mark.parametrize("name, fn, w", [
    ("glv_step", "glv_rhs", "x"), ("glv_step", "glv_rhs", "A"),
    ("layer_loss", "tanh_layer", "W"), ("polar_fit", "polar", "ang"),
    ("gravity_power", "gravity_acc", "X"), ("softmax_brier", "softmax_vec", "z"),
    ("circulant_fit", "circulant", "x")])
def test_jacobian_against_differences_of_the_function(name, fn, w):
    """tl.jacobian of the vector-valued helper of an entry: shape out.shape + x.shape,
    the finite difference of the function."""
    f = _module(name)[fn]
    args = {k: v for k, v in inputs(name, seed=4).items()
            if k in [p.name for p in f.program.params]}
    J = np.asarray(_quiet(tl.jacobian, f, wrt=w)(**args))
    out = np.asarray(f(**args))
    assert J.shape == out.shape + np.shape(args[w])
    assert np.allclose(J, _fd_jacobian(f, args, w), rtol=1e-5, atol=1e-6)


def test_jacobians_with_closed_forms():
    """A softmax's Jacobian is (diag(p) - p p^T) / tau; a circulant product's Jacobian
    in x is the circulant matrix; a tanh layer's Jacobian in the bias is zero across
    output columns."""
    sm = _module("softmax_brier")["softmax_vec"]
    z, tau = np.array([0.3, -1.0, 2.0, 0.5]), 0.7
    p = sm(z=z, tau=tau)
    assert np.allclose(_quiet(tl.jacobian, sm, wrt="z")(z=z, tau=tau),
                       (np.diag(p) - np.outer(p, p)) / tau, rtol=1e-12, atol=1e-14)
    circ = _module("circulant_fit")["circulant"]
    c, x = np.arange(1.0, 6.0), np.ones(5)
    C = np.array([[c[(r - q) % 5] for q in range(5)] for r in range(5)])
    assert np.array_equal(_quiet(tl.jacobian, circ, wrt="x")(c=c, x=x), C)
    lay = _module("layer_loss")["tanh_layer"]
    args = {k: v for k, v in inputs("layer_loss").items() if k != "T"}
    J = _quiet(tl.jacobian, lay, wrt="bias")(**args)           # [b, h, h]
    Y = lay(**args)
    for u in range(J.shape[1]):
        for v in range(J.shape[2]):
            expect = (1 - Y[:, u] ** 2) if u == v else np.zeros(J.shape[0])
            assert np.allclose(J[:, u, v], expect, rtol=1e-12, atol=1e-14)
