"""examples/digits_mlp.py: the tensorlang network on the scikit-learn digits.

A short seeded run: the loss and gradient agree with NumPy and with finite differences, the
flat parameter vector round-trips, and a few L-BFGS-B iterations lower the loss.  Runs on the
backend the suite selects (the interpreter, see conftest.py).
"""
from __future__ import annotations

import importlib.util
import pathlib

import numpy as np
import pytest

pytest.importorskip("sklearn")

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def dm():
    spec = importlib.util.spec_from_file_location("digits_mlp", ROOT / "examples" / "digits_mlp.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def data(dm):
    Xtr, Xte, ytr, yte = dm.load_data()
    # a slice of the training set keeps the interpreter fast
    return Xtr[:300], ytr[:300], Xte, yte


def test_split_is_fixed_and_complete(dm):
    Xtr, Xte, ytr, yte = dm.load_data()
    again = dm.load_data()
    assert len(ytr) + len(yte) == 1797 and Xtr.shape[1] == 64
    assert np.array_equal(ytr, again[2]) and np.array_equal(Xte, again[1])
    assert set(np.unique(yte)) == set(range(10))
    assert 0.0 <= Xtr.min() and Xtr.max() <= 1.0


def test_flatten_round_trip(dm):
    p = dm.init_params(64, dm.HIDDEN, 10)
    theta = dm.flatten(p)
    assert theta.size == 64 * dm.HIDDEN + dm.HIDDEN + dm.HIDDEN * 10 + 10
    back = dm.unflatten(theta, dm.param_shapes(64, dm.HIDDEN, 10))
    for name in dm.PARAM_NAMES:
        assert np.array_equal(back[name], p[name])
    assert np.array_equal(dm.flatten(dm.init_params(64, dm.HIDDEN, 10)), theta)   # seeded


def test_value_and_gradient_match_numpy_and_finite_differences(dm, data):
    X, y, _, _ = data
    rng = np.random.default_rng(3)
    theta = dm.flatten(dm.init_params(64, dm.HIDDEN, 10)) + 0.1 * rng.standard_normal(2410)
    fun = dm.tl_loss_and_grad(X, y, lam=0.01)
    value, grad = fun(theta)
    assert np.isclose(value, dm.numpy_loss(theta, X, y, lam=0.01), rtol=1e-12, atol=1e-12)
    assert grad.shape == theta.shape
    eps = 1e-6
    for _ in range(3):
        direction = rng.standard_normal(theta.size)
        fd = (dm.numpy_loss(theta + eps * direction, X, y, lam=0.01)
              - dm.numpy_loss(theta - eps * direction, X, y, lam=0.01)) / (2 * eps)
        assert np.isclose(grad @ direction, fd, rtol=1e-6, atol=1e-8), (grad @ direction, fd)
    # a few single coordinates, one in each parameter block
    for index in (5, 64 * dm.HIDDEN + 3, 64 * dm.HIDDEN + dm.HIDDEN + 7, theta.size - 1):
        e = np.zeros_like(theta)
        e[index] = 1.0
        fd = (dm.numpy_loss(theta + eps * e, X, y, lam=0.01)
              - dm.numpy_loss(theta - eps * e, X, y, lam=0.01)) / (2 * eps)
        assert np.isclose(grad[index], fd, rtol=1e-5, atol=1e-8), (index, grad[index], fd)


def test_short_training_run_lowers_the_loss(dm, data):
    X, y, Xte, yte = data
    theta0 = dm.flatten(dm.init_params(64, dm.HIDDEN, 10))
    fun = dm.tl_loss_and_grad(X, y)
    start = fun(theta0)[0]
    res = dm.train(fun, theta0, maxiter=15)
    assert res.fun < 0.5 * start
    assert dm.accuracy(res.x, Xte, yte) > dm.accuracy(theta0, Xte, yte)
    # seeded and deterministic: the same run gives the same parameters
    again = dm.train(fun, theta0, maxiter=15)
    assert np.array_equal(res.x, again.x)
