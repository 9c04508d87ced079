"""Realistic programs (tests/realistic_programs.py) in the cost regression suite.

For each program: the cost polynomials of the function and of its gradient with
respect to every f64 parameter alone and to all of them together match
tests/golden/realistic/<name>.txt (rewrite them with --update-golden); the value
matches an independent NumPy version; the gradient matches central finite
differences; jvp and vjp satisfy the dot-product identity; no derivative the API
builds (grad, jvp, vjp) misses the certificate (a TLCostWarning is an error
here); and renaming every index leaves every gradient's cost as it was.
"""
import pathlib
import warnings

import numpy as np
import pytest

import tensorlang as tl
from derivcheck import check_close, dot_product_identity, f64_params, grad_matches_fd
from realistic_programs import PROGRAMS
from tensorlang.inputs import random_inputs
from tensorlang.ssa.names import binder_names_of, rename_binders
from tensorlang.ssa.printer import print_program

GOLDEN = pathlib.Path(__file__).resolve().parent / "golden" / "realistic"
NAMES = sorted(PROGRAMS)


def function(name):
    return tl.parse(PROGRAMS[name]["src"], filename=f"{name}.tl")[name]


def choices(f):
    """Every f64 parameter alone, then all of them together (when there are several)."""
    params = f64_params(f)
    return [(p,) for p in params] + ([tuple(params)] if len(params) > 1 else [])


def inputs(name, seed=0):
    return random_inputs(function(name), {}, PROGRAMS[name]["sizes"], seed=seed)


def cost_text(f) -> str:
    lines = [f"f: {tl.cost(f)}"]
    for wrt in choices(f):
        g = tl.grad(f, wrt=wrt[0] if len(wrt) == 1 else wrt)
        lines.append(f"grad {', '.join(wrt)}: {tl.cost(g)}")
    return "\n".join(lines) + "\n"


@pytest.fixture
def strict():
    """A certificate miss fails the test."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", tl.TLCostWarning)
        yield


def test_at_least_twelve_programs():
    assert len(PROGRAMS) >= 12


@pytest.mark.parametrize("name", NAMES)
def test_costs_match_golden(name, matches_golden, strict):
    matches_golden(GOLDEN / f"{name}.txt", cost_text(function(name)))


@pytest.mark.parametrize("name", NAMES)
def test_every_derivative_keeps_the_certificate(name, strict):
    """grad, jvp and vjp for each f64 parameter alone and all together build with no
    TLCostWarning; and, checked here again from the polynomials, no monomial of the
    gradient grows faster than those of cost(f) + |wrt|."""
    f = function(name)
    bound_f = tl.cost(f) + 1
    dims = {p.name: p.dims for p in f.program.params}
    for wrt in choices(f):
        g = tl.grad(f, wrt=wrt)
        tl.jvp(f, wrt=wrt)
        tl.vjp(f, wrt=wrt)
        bound = bound_f
        for w in wrt:
            e = tl.Cost.const(1)
            for d in dims[w]:
                e = e * (tl.Cost.const(d) if isinstance(d, int) else tl.Cost.symbol(d))
            bound = bound + e
        tops = [m for m, c in bound.terms.items() if c > 0]
        for mono in tl.cost(g).terms:
            assert any(all(dict(t).get(s, 0) >= e for s, e in mono) for t in tops), \
                (name, wrt, mono, str(tl.cost(g)), str(bound))


@pytest.mark.parametrize("name", NAMES)
def test_value_matches_numpy(name):
    f = function(name)
    args = inputs(name)
    want = PROGRAMS[name]["ref"](**args)
    check_close(f(**args), want, f"{name} against NumPy", rtol=1e-11, atol=1e-11)


@pytest.mark.parametrize("name", NAMES)
def test_gradient_matches_finite_differences(name):
    f = function(name)
    grad_matches_fd(f, f64_params(f), inputs(name, seed=1), np.random.default_rng(2))


@pytest.mark.parametrize("name", NAMES)
def test_jvp_and_vjp_are_adjoint(name):
    f = function(name)
    dot_product_identity(f, f64_params(f), inputs(name, seed=3), np.random.default_rng(4))


def renamed(f):
    """f with every index binder renamed onto fresh names in the reverse of their
    sorted order (so every comparison of two names goes the other way), printed
    and parsed back."""
    prog = f.program
    taken = ({p.name for p in prog.params} | {s.name for s in prog.stmts} | set(prog.sizes()))
    names = sorted(binder_names_of(prog))
    pool = [a + b for a in "abcdefghijklmnopqrstuvwxyz" for b in "abcdefghijklmnopqrstuvwxyz"]
    pool = [p for p in pool if p not in taken and p not in names
            and p not in ("as", "if", "in", "is", "or")][:len(names)]
    mapping = dict(zip(names, reversed(pool)))
    text = print_program(rename_binders(prog, lambda n: mapping.get(n, n)))
    return tl.parse(text)[f.name], mapping


@pytest.mark.parametrize("name", NAMES)
def test_gradient_costs_do_not_depend_on_index_names(name):
    f = function(name)
    g, mapping = renamed(f)
    assert set(mapping) == set(binder_names_of(f.program))
    assert set(binder_names_of(g.program)).isdisjoint(mapping)
    assert cost_text(g) == cost_text(f), (name, mapping)


@pytest.mark.parametrize("name, wrt, model, spare", [
    # d_y[l, p] = sum[i]([2 i + p == l] x[i]): the loop over i runs min(n, (m - p + 1) / 2)
    # times; the model counts n (the plan counts ranges alone, as the gather it was compared
    # with), and the certificate may count (m - 1) / 2 + 1, which bounds the same loop.
    ("conv_transposed", "w", "k^2*m + 4*k*m + k*n + 2*k^2",
     "k^2*m + (9/2)*k*m + 2*k^2 + (1/2)*k"),
    ("conv2d_transposed", "K", "(279/4)*m*m2 + 9*n*n2 + (243/4)*m + (243/4)*m2 + (567/4)",
     None),
])
def test_transposed_convolution_kernel_hessians_count_their_strided_loops_either_way(
        name, wrt, model, spare, strict):
    from tensorlang.costs import Choices, choosing, program_cost
    f = function(name)
    H = tl.hessian(f, wrt=wrt)                     # no TLCostWarning (strict)
    assert str(tl.cost(H)) == model
    probe = Choices()
    with choosing(probe):
        program_cost(H.program)
    # the strided scatter's loops offer their range and the output's half as counts
    assert any(c >= 2 for c in probe.seen), probe.seen
    if spare is not None:
        costs = set()
        for k in range(probe.seen[0]):
            with choosing(Choices((k,))):
                costs.add(str(program_cost(H.program)))
        assert spare in costs, costs
    # the values: each column of H is the gradient's directional derivative
    args = inputs(name, seed=5)
    g = tl.grad(f, wrt=wrt)
    w0 = args[wrt]
    got = H(**args)
    eps = 1e-6
    for idx in np.ndindex(w0.shape):
        e = np.zeros_like(w0)
        e[idx] = eps
        col = (g(**{**args, wrt: w0 + e}) - g(**{**args, wrt: w0 - e})) / (2 * eps)
        check_close(got[(...,) + idx] if got.ndim > w0.ndim else got[idx], col,
                    f"{name} Hessian column {idx}", rtol=1e-6, atol=1e-6)
