"""Fusion in code generation: which producers are inlined, and that values do not change.

A producer is fused only when it is read at one place, by loops that visit each
of its elements exactly once; anything else would recompute it or reorder a
scatter.  The compiled values of fused programs are checked against the
reference interpreter, at sizes that take both the serial and the parallel
kernels.
"""
import numpy as np
import pytest

import tensorlang as tl
from derivcheck import inputs_for
from tensorlang.backend.fuse import fuse_single_use
from tensorlang.backend.blas import dense_contraction
from tensorlang.backend.numba_module import generate


def fused_names(src: str, name: str = "f"):
    prog = tl.parse(src)[name].optimized_program()
    after, names = fuse_single_use(prog, keep=lambda s: dense_contraction(s) is not None)
    assert {s.name for s in after.stmts} == {s.name for s in prog.stmts} - set(names)
    return names


CHAIN = """
def f(x: f64[n]) -> f64:
    a[i] = exp(x[i])
    b[i] = log1p(a[i]) * [x[i] > 0.0]
    return sum[i](b[i] ** 2)
"""


def test_a_pointwise_chain_fuses_into_its_reduction():
    assert fused_names(CHAIN) == ["a", "b"]


@pytest.mark.parametrize("src", [
    # read at a shifted index: each element is still read once, but not where the
    # consumer's loop is, so the stencil would need its own loop
    "def f(x: f64[n]) -> f64[n]:\n    d[i] = 2.0 * x[i] + 1.0\n"
    "    y[i: n] = [i >= 1] * d[i - 1]\n    return y\n",
    # read inside a loop over another index: inlining would recompute it n times
    "def f(x: f64[n], A: f64[n, n]) -> f64[n, n]:\n    t[i] = exp(x[i])\n"
    "    M[i, j] = t[i] * A[i, j]\n    return M\n",
    # read twice
    "def f(x: f64[n]) -> f64[n]:\n    t[i] = exp(x[i])\n    y[i] = t[i] * x[i] + t[i]\n"
    "    return y\n",
    # an output is always stored
    "def f(x: f64[n]) -> f64[n]:\n    t[i] = exp(x[i])\n    return t\n",
    # a dense contraction stays a BLAS call
    "def f(A: f64[n, n], x: f64[n]) -> f64:\n    y[i] = sum[j](A[i, j] * x[j])\n"
    "    return sum[i](exp(y[i]))\n",
])
def test_producers_that_would_cost_more_are_not_fused(src):
    assert fused_names(src) == []


def test_the_blur_energy_never_stores_the_blurred_image():
    blur = tl.load("examples/blur.tl").blur_energy
    prog = blur.optimized_program()
    names = [s.name for s in prog.stmts]
    assert fuse_single_use(prog)[1] == [names[1]]          # the column pass
    src = generate(prog, "test", "")
    assert f"env[{names[1]!r}]" not in src


@pytest.mark.parametrize("size", [1, 2, 3, 700])
def test_fused_kernels_compute_what_the_interpreter_computes(size):
    f = tl.parse(CHAIN)["f"]
    g = tl.grad(f, wrt="x")
    inputs = inputs_for(f, size=size, seed=4)
    for fn in (f, g):
        want = np.asarray(fn.compile("numpy")(**inputs))
        got = np.asarray(fn.compile("numba")(**inputs))
        assert np.allclose(got, want, rtol=1e-12, atol=1e-12)


STENCIL = """
def f(u: f64[h, w]) -> f64:
    v[r, c] = [r >= 1] * u[r - 1, c] + [c + 1 < w] * u[r, c + 1] - 2.0 * u[r, c]
    return sum[r, c](sin(v[r, c]) ** 2)
"""


@pytest.mark.parametrize("h,w", [(1, 1), (1, 5), (5, 1), (2, 2), (400, 401)])
def test_guards_on_every_generator_are_peeled_correctly(h, w):
    f = tl.parse(STENCIL)["f"]
    g = tl.grad(f, wrt="u")
    u = np.random.default_rng(5).standard_normal((h, w))
    for fn in (f, g):
        want = np.asarray(fn.compile("numpy")(u=u))
        got = np.asarray(fn.compile("numba")(u=u))
        assert np.allclose(got, want, rtol=1e-12, atol=1e-12)
    # each parallel statement kernel has one prange loop: the bulk of its outermost
    # generator (a row group's loop, rows.py, splits its rows and inlines serial kernels);
    # a kernel with sin or cos has its nest again after `if tl_wide > 0:`, the same loops
    # with NumPy's functions (kernels.KernelWriter.statement)
    kernels = generate(g.optimized_program(), "test", "").split("\n\n\n")
    parallel = [k.split("    if tl_wide > 0:\n")[0] for k in kernels
                if k.startswith("@njit(parallel=True") and "_rows_par(" not in k.splitlines()[1]]
    assert parallel and all(k.count("prange(") == 1 for k in parallel)
    assert all("else:" not in k for k in parallel)        # the guarded fallback is serial
