"""Checks of tests/newuser10_programs.py with the helpers of
tests/test_newuser_programs.py (values, gradients, jvp against vjp, the certificate,
the refused programs), then the API around a program as a user reads it in
docs/api.md: dense Hessians and Hessian-vector products against finite differences
of the gradient, Jacobians of the vector-valued programs against finite differences
of the function, the JAX and PyTorch bridges, the command line on a file, and two
programs on the Numba backend.
"""
import os
import subprocess
import sys
from functools import partial

import numpy as np
import pytest

import tensorlang as tl
from derivcheck import fd_jacobian, strict
from newuser10_programs import PROGRAMS, REJECTED
from test_newuser_programs import (corpus_tests, hessian_builder, check_dense_hessian,
                                   check_hvp_against_differences,
                                   check_hvp_is_the_hessian_times_the_direction,
                                   check_on_numba, function as _function, inputs as _inputs,
                                   module)

# Derivatives that miss the certificate today (the values are checked all the same).
KNOWN_MISSES: dict = {}

# Derivatives left out of test_derivatives to keep this module within its time.
SLOW_TO_BUILD: dict = {}

function = partial(_function, programs=PROGRAMS)
inputs = partial(_inputs, programs=PROGRAMS)

# the value, derivative and rejection tests every corpus module runs
globals().update(corpus_tests(PROGRAMS, minimum=24, known_misses=KNOWN_MISSES,
                              slow_to_build=SLOW_TO_BUILD, rejected=REJECTED))


_module = partial(module, programs=PROGRAMS)


_hessian = hessian_builder(PROGRAMS)


# ------------------------------------------------------------ Hessians
# Dense Hessians left out of the test below for their build time alone: their values
# match finite differences and their cost keeps the certificate, but the simplifier
# takes 25x the gradient's time over them (most of it in inline_sparse_statements of
# the forward-over-reverse pass; a pair energy without the sigmoid switch builds in
# 2.4 s).  Their first derivatives are test_derivatives'.
SLOW_HESSIANS = {"lj_cluster": "X: 15 s to build, the gradient 0.5 s, the hvp 1.1 s",
                 "newton_logreg": "w: 9 s to build, the gradient 0.7 s"}


@pytest.mark.parametrize("name, w", [("gauss_newton", "p"), ("student_t", "w"),
                                     ("toeplitz_qform", "x")])
def test_dense_hessian_against_differences_of_the_gradient(name, w):
    """tl.hessian, shape x.shape + x.shape, is the finite difference of tl.grad, and
    symmetric; a Gauss-Newton step written in the program is differentiated twice
    through its 2x2 inverse."""
    check_dense_hessian(name, w, _hessian, PROGRAMS, symmetry_rtol=1e-9)


def test_toeplitz_hessian_is_the_matrix_twice():
    """The quadratic form's Hessian in x is 2 T, exactly (no rounding but the sums)."""
    args = inputs("toeplitz_qform")
    c = args["c"]
    n = len(c)
    T = np.array([[c[abs(r - q)] for q in range(n)] for r in range(n)])
    assert np.allclose(_hessian("toeplitz_qform", "x")(**args), 2 * T, rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize("name, w", [("local_level", "y"), ("bootstrap", "c")])
def test_hvp_against_differences_of_the_gradient(name, w):
    """tl.hvp through a Kalman gain inside a recurrence and through a two-statement
    recurrence group."""
    check_hvp_against_differences(name, w, PROGRAMS)


def test_hvp_is_the_hessian_times_the_direction():
    check_hvp_is_the_hessian_times_the_direction("toeplitz_qform", "x", _hessian,
                                                 PROGRAMS, rtol=1e-12)


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
    J = np.asarray(strict(tl.jacobian, f, wrt=w)(**args))
    out = np.asarray(f(**args))
    assert J.shape == out.shape + np.shape(args[w])
    assert np.allclose(J, fd_jacobian(f, args, w), rtol=1e-5, atol=1e-6)


def test_jacobians_with_closed_forms():
    """A softmax's Jacobian is (diag(p) - p p^T) / tau; a circulant product's Jacobian
    in x is the circulant matrix; a tanh layer's Jacobian in the bias is zero across
    output columns."""
    sm = _module("softmax_brier")["softmax_vec"]
    z, tau = np.array([0.3, -1.0, 2.0, 0.5]), 0.7
    p = sm(z=z, tau=tau)
    assert np.allclose(strict(tl.jacobian, sm, wrt="z")(z=z, tau=tau),
                       (np.diag(p) - np.outer(p, p)) / tau, rtol=1e-12, atol=1e-14)
    circ = _module("circulant_fit")["circulant"]
    c, x = np.arange(1.0, 6.0), np.ones(5)
    C = np.array([[c[(r - q) % 5] for q in range(5)] for r in range(5)])
    assert np.array_equal(strict(tl.jacobian, circ, wrt="x")(c=c, x=x), C)
    lay = _module("layer_loss")["tanh_layer"]
    args = {k: v for k, v in inputs("layer_loss").items() if k != "T"}
    J = strict(tl.jacobian, lay, wrt="bias")(**args)           # [b, h, h]
    Y = lay(**args)
    for u in range(J.shape[1]):
        for v in range(J.shape[2]):
            expect = (1 - Y[:, u] ** 2) if u == v else np.zeros(J.shape[0])
            assert np.allclose(J[:, u, v], expect, rtol=1e-12, atol=1e-14)


# ------------------------------------------------------------ JAX
def _jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)    # the docs: tensorlang's values are float64
    return jax


@pytest.mark.parametrize("name", ["center_loss", "ewm_var"])
def test_to_jax_under_jit_grad_and_vmap(name):
    """tl.to_jax(f) under jax.jit is f's value, jax.grad is tl.grad, and jax.vmap over
    a batch of the first parameter is f row by row (to 1e-10): an i64 gather into two
    tables, and a recurrence pair."""
    jax = _jax()
    import jax.numpy as jnp
    f = function(name)
    args = inputs(name, seed=8)
    names = [p.name for p in f.program.params]
    F = tl.to_jax(f)
    pos = [jnp.asarray(args[k]) for k in names]
    assert np.allclose(float(jax.jit(F)(*pos)), f(**args), rtol=1e-10, atol=1e-10)
    first = names[0]
    g_jax = jax.jit(jax.grad(F, argnums=0))(*pos)
    g_tl = tl.grad(f, wrt=first)(**args)
    assert np.allclose(np.asarray(g_jax), g_tl, rtol=1e-10, atol=1e-10)
    rng = np.random.default_rng(9)
    batch = np.stack([np.asarray(args[first]) + 0.1 * rng.standard_normal(np.shape(args[first]))
                      for _ in range(3)])
    vals = jax.jit(jax.vmap(F, in_axes=(0,) + (None,) * (len(names) - 1)))(jnp.asarray(batch), *pos[1:])
    want = [f(**{**args, first: b}) for b in batch]
    assert np.allclose(np.asarray(vals), want, rtol=1e-10, atol=1e-10)


def test_to_jax_of_a_vector_valued_map_and_its_jacobian():
    """jax.jacfwd of a tl.to_jax vector field is tl.jacobian."""
    jax = _jax()
    import jax.numpy as jnp
    f = _module("glv_step")["glv_rhs"]
    args = {k: v for k, v in inputs("glv_step").items() if k in ("x", "r", "A")}
    F = tl.to_jax(f)
    J = jax.jacfwd(F, argnums=0)(jnp.asarray(args["x"]), jnp.asarray(args["r"]),
                                 jnp.asarray(args["A"]))
    assert np.allclose(np.asarray(J), tl.jacobian(f, wrt="x")(**args), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["tree_prior"])
def test_compile_on_jax(name):
    """f.compile(backend="jax") gives f's value and gradient."""
    _jax()
    f = function(name)
    args = inputs(name)
    assert np.allclose(f.compile(backend="jax")(**args), f(**args), rtol=1e-10, atol=1e-12)
    w = [p.name for p in f.program.params if p.elem == "f64"][0]
    g = tl.grad(f, wrt=w)
    assert np.allclose(g.compile(backend="jax")(**args), g(**args), rtol=1e-10, atol=1e-12)


# ------------------------------------------------------------ PyTorch
@pytest.mark.parametrize("name", ["student_t", "tukey", "cvar_softmax"])
def test_to_torch_forward_and_backward(name):
    """tl.to_torch(f): the value is f's and loss.backward() leaves tl.grad in .grad, for
    every float64 parameter that asks for one (a scalar among them)."""
    torch = pytest.importorskip("torch")
    f = function(name)
    args = inputs(name, seed=11)
    names = [p.name for p in f.program.params]
    wrt = [p.name for p in f.program.params if p.elem == "f64"][:2]
    ts = {k: torch.tensor(np.asarray(v, dtype=float), dtype=torch.float64,
                          requires_grad=k in wrt) for k, v in args.items()}
    loss = tl.to_torch(f)(*[ts[k] for k in names])
    assert abs(loss.item() - f(**args)) <= 1e-10 * max(1.0, abs(f(**args)))
    loss.backward()
    for k, want in zip(wrt, tl.grad(f, wrt=tuple(wrt))(**args)):
        assert np.allclose(ts[k].grad.numpy(), want, rtol=1e-10, atol=1e-12), k


# ------------------------------------------------------------ the command line
def _cli(*argv, cwd):
    return subprocess.run([sys.executable, "-m", "tensorlang", *map(str, argv)], cwd=cwd,
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": ROOT + os.pathsep
                               + os.environ.get("PYTHONPATH", "")})


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_command_line_on_a_file(tmp_path):
    """check, run, grad, cost and explain on a file that
    holds a vector field and a step of it; then check on a broken copy."""
    src = PROGRAMS["glv_step"]["src"]
    path = tmp_path / "glv.tl"
    path.write_text(src)
    r = _cli("check", path, cwd=tmp_path)
    assert r.returncode == 0 and "ok (2 functions: glv_rhs, glv_step)" in r.stdout, r
    r = _cli("run", path, "-f", "glv_step", "dt=0.1", "--size", "n=5", "-o", tmp_path / "v.npy",
             cwd=tmp_path)
    assert r.returncode == 0 and "glv_step = " in r.stdout and "time:" in r.stdout, r
    assert np.shape(np.load(tmp_path / "v.npy")) == ()
    r = _cli("grad", path, "-f", "glv_step", "--wrt", "x", cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.lstrip().startswith("def "), r
    derived = tl.parse(r.stdout)                    # the printed program is a program
    assert len(derived.names) >= 1
    r = _cli("cost", path, "-f", "glv_step", "--wrt", "x,A", cwd=tmp_path)
    assert r.returncode == 0 and "certificate" in r.stdout and " ok" in r.stdout, r
    assert "EXCEEDED" not in r.stdout
    r = _cli("explain", path, "-f", "glv_step", "--wrt", "A", cwd=tmp_path)
    assert r.returncode == 0 and "Tensor SSA" in r.stdout, r
    bad = tmp_path / "bad.tl"
    bad.write_text(src.replace("x[i] + dt * dx[i]", "x[i + 1] + dt * dx[i]"))
    r = _cli("check", bad, cwd=tmp_path)
    assert r.returncode == 1 and "error:" in r.stdout + r.stderr
    assert "Traceback" not in r.stdout + r.stderr
    assert "bad.tl:" in r.stdout + r.stderr and "hint: guard it with [i + 1 < n]" in r.stdout + r.stderr


# ------------------------------------------------------------ Numba
def test_a_handful_on_numba():
    """The values and gradients of a two-statement recurrence group with an offset-0
    read and of a gather through a parent table (its gradient a scatter) are the
    interpreter's on the compiled backend (two programs that compile in about two
    seconds each, for this module's time)."""
    check_on_numba(("bootstrap", "tree_prior"), PROGRAMS)
