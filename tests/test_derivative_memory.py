"""What derivatives hold (issue 12: a gradient's memory within a small factor of its
function's).  A named intermediate of a gradient, vjp or jvp larger than every tensor its
function holds is computed where it is read when the derivative keeps the certificate's
bound (or costs no more) doing so (simplify.inline_pointwise_statements with a
hoist.Budget), and factoring does not store one then (factor.FactorWithin)."""
import warnings

import numpy as np

import tensorlang as tl
from tensorlang.api import Function
from tensorlang.costs import Cost
from tensorlang.inputs import random_inputs
from tensorlang.opt.factor import factor_common_products
from tensorlang.opt.hoist import Budget, held_dims
from tensorlang.opt.simplify import derivative_rules, inline_pointwise_statements, simplify
from tensorlang.ssa import build as B
from tensorlang.ssa.verify import verify

from derivcheck import check_close, f64_params, grad_matches_fd
from newuser6_programs import PROGRAMS as NEWUSER6
from newuser_programs import PROGRAMS as NEWUSER

KURAMOTO = NEWUSER6["kuramoto"]


def function(entry, name):
    return tl.parse(entry["src"], filename=f"{name}.tl")[name]


def ratio(g, f, **sizes):
    return float(tl.memory(g).evaluate(**sizes)) / float(tl.memory(f).evaluate(**sizes))


def test_memory_counts_parameters_and_statements():
    f = tl.parse("""
def f(x: f64[n], A: f64[n, m]) -> f64:
    y[i: n] = sum[j: m](A[i, j] * x[i])
    return sum[i: n](y[i] ** 2)
""")["f"]
    assert tl.memory(f) == Cost.symbol("m") * Cost.symbol("n") + Cost.symbol("n") * 3 + 1
    assert "memory" in tl.__all__


def test_kuramoto_gradient_holds_no_pairs_per_step():
    """`sum[j](sin(th[t - 1, j] - th[t - 1, i]))` in a recurrence over t: the sine's
    argument and its cotangent were stored as T x n x n tensors (16 GB at n = T = 1000,
    where the function holds T x n); recomputed in each step of the forward and of the
    adjoint, the gradient holds T x n tensors only, and meets its certificate (the
    step's guard taken out of the sine again, simplify.pull_brackets_out_of_calls:
    15 -> 13 T n^2)."""
    f = function(KURAMOTO, "kuramoto")
    with warnings.catch_warnings():
        warnings.simplefilter("error", tl.TLCostWarning)
        g = tl.grad(f, wrt=tuple(f64_params(f)))
        prog = g.optimized_program()
    assert all(len(st.dims) <= 2 for st in prog.stmts), g.source
    assert ratio(g, f, n=200, T=200) <= 3.0
    assert ratio(g, f, n=1000, T=1000) <= 3.0
    cost = tl.cost(g)
    assert cost.degree() == 3 and cost.degree("n") == 2
    args = KURAMOTO["make"](np.random.default_rng(1), n=5, T=6)
    grad_matches_fd(f, f64_params(f), args, np.random.default_rng(2))
    check_close(g.compile("numba")(**args), g.compile("numpy")(**args), "kuramoto's gradient",
                rtol=1e-9, atol=1e-10)


def test_viterbi_gradient_recomputes_the_entries_of_its_maximum():
    """A max recurrence's entries `v[t - 1, i] + A[i, j]` (T K^2) are read by the
    maximum, its ties and its indicator: computed in each (one addition) they cost no
    more than stored, so the gradient does not store them (its cotangent stays: the
    gradient misses the certificate by a constant already, and recomputing it costs
    more)."""
    f = function(NEWUSER["viterbi"], "viterbi")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tl.TLCostWarning)
        g = tl.grad(f, wrt=tuple(f64_params(f)))
        prog = g.optimized_program()
    assert sum(len(st.dims) == 3 for st in prog.stmts) == 1, g.source
    assert ratio(g, f, K=200, T=200) < 60
    args = NEWUSER["viterbi"]["make"](np.random.default_rng(1), K=4, T=6)
    check_close(g.compile("numba")(**args), g.compile("numpy")(**args), "viterbi's gradient",
                rtol=1e-9, atol=1e-10)


SRC = """
def f(x: f64[n], y: f64[n], w: f64[n]) -> f64[n]:
    a[i: n, j: n] = x[i] * y[j] - x[j] * y[i]
    b[i: n] = sum[j: n](w[j] * cos(a[i, j])) + sum[j: n](sin(a[i, j])) + sum[j: n](exp(a[i, j]))
    return b
"""


def budget(factor: int, *held) -> Budget:
    bound = Cost.symbol("n") * Cost.symbol("n") * factor
    return Budget(tuple(sorted(bound.terms.items())), tuple(held))


def test_a_statement_larger_than_held_is_computed_where_summed_within_the_bound():
    """`a[i, j] = x[i] * y[j] - x[j] * y[i]` (n^2, where the function holds n) read in
    three sums, under builtins: with a budget it is computed in each sum; without one, or when its
    readers would then exceed the bound, or when the function holds n x n tensors
    itself, it stays stored (computing it three times costs more than once and a write)."""
    fn = tl.parse(SRC, filename="<mem>")["f"]
    prog = fn.program
    roomy = budget(20, ("n",))
    after = B.separate_program_binders(inline_pointwise_statements(prog, roomy))
    verify(after)
    assert [s.name for s in after.stmts] == ["b"], Function(after).source
    want = Function(prog, backend="numpy")
    got = Function(after, backend="numpy")
    want.optimize = got.optimize = False
    args = random_inputs(want, {}, {"n": 6}, seed=4)
    np.testing.assert_allclose(got(**args), want(**args), rtol=1e-12, atol=1e-12)
    for kept in (inline_pointwise_statements(prog),
                 inline_pointwise_statements(prog, budget(1, ("n",))),
                 inline_pointwise_statements(prog, budget(20, ("n", "n")))):
        assert "a" in {s.name for s in kept.stmts}, Function(kept).source
    assert "a" in {s.name for s in simplify(prog, derivative_rules(())).stmts}
    assert [s.name for s in simplify(prog, derivative_rules((), roomy)).stmts] == ["b"]


FACTOR_SRC = """
def f(x: f64[n], y: f64[n], u: f64[n], v: f64[n]) -> f64[n]:
    b[i: n] = sum[j: n](u[j] * exp(x[i] + y[j])) + sum[j: n](v[i] * exp(x[i] + y[j]))
    return b
"""


def test_factoring_in_a_derivative_stores_no_tensor_larger_than_held_within_the_bound():
    """`sum[j](u[j] * e) + sum[j](v[i] * e)` factors into `sum[j](h[i, j] * e)` with
    `h[i, j] = u[j] + v[i]` (one exp instead of two); with a budget whose bound the
    program keeps without it, the n x n h is not stored where the function holds
    vectors, and it is when the program misses the bound."""
    prog = tl.parse(FACTOR_SRC, filename="<fac>")["f"].program
    assert len(factor_common_products(prog).stmts) == 2
    assert len(factor_common_products(prog, (), budget(20, ("n",))).stmts) == 1
    assert len(factor_common_products(prog, (), budget(1, ("n",))).stmts) == 2
    assert len(factor_common_products(prog, (), budget(20, ("n", "n"))).stmts) == 2


def test_an_hmm_jvp_neither_stores_nor_oscillates():
    """The jvp of the HMM likelihood with respect to A factored the tangent
    `d_A[i, j] + d_a[t - 1, i]` out of two sums into a T x K x K statement; the budget
    had it computed in both sums again and factoring stored it again, round after round
    (a RoundLimit warning).  Within the bound it stays unstored."""
    f = tl.load("examples/hmm.tl")["hmm_loglik"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        j = tl.jvp(f, wrt="A")
        prog = j.optimized_program()
    assert all(len(st.dims) <= 2 for st in prog.stmts), j.source
    assert held_dims(prog)


def test_a_stored_call_is_not_stored_again_once_computed_where_read():
    """Richardson's gradient: store_repeated_calls stored a sine over the K x M pairs of
    steps and frequencies (the function holds K x K and vectors), the budget had it
    computed where read, round after round (a RoundLimit warning); a storing rule now
    leaves such a statement out while the program keeps the bound without it."""
    from newuser7_programs import PROGRAMS as NEWUSER7
    f = function(NEWUSER7["richardson"], "richardson")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = tl.grad(f, wrt=tuple(f64_params(f)))
        g.optimized_program()
    args = NEWUSER7["richardson"]["make"](np.random.default_rng(1), M=3, K=4)
    grad_matches_fd(f, f64_params(f), args, np.random.default_rng(2))


def test_larger_than_held_means_growing_faster_than_every_held_tensor():
    """A constant multiple of a held tensor (a 3 x 3 window over an image, the two
    coordinates of each edge) is not larger: recomputing it in every reader (the
    semi-Markov jvp's `d_prefix_P[t] + d_w[d]` over T x 3) cost a third more operations
    to save a constant factor of memory."""
    b = budget(20, ("h", "w"), ("M",), ())
    assert not b.larger_than_held(("h", "w", 3, 3))
    assert not b.larger_than_held(("M", 2))
    assert b.larger_than_held(("M", "h"))
    assert b.larger_than_held(("h", "w", "w"))
