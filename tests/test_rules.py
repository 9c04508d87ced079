"""Every simplifier rule, applied once to a program it rewrites: before and after.

Each rule in the registry has a case here (a test fails when a rule is added
without one).  The printed program after one application is a golden file
(tests/golden/rules/<rule>.txt, rewritten by ``pytest --update-golden``), and
the rewritten program must compute the same values as the original on seeded
random inputs.
"""
import pathlib

import numpy as np
import pytest

import tensorlang as tl
from tensorlang.api import Function
from tensorlang.inputs import random_inputs
from tensorlang.opt.simplify import RULES, RULES_BY_NAME
from tensorlang.ssa import build as B
from tensorlang.ssa import traverse as T
from tensorlang.ssa.ir import Access, Apply
from tensorlang.ssa.verify import verify

GOLDEN = pathlib.Path(__file__).resolve().parent / "golden" / "rules"

CASES = {
    "hoist_nested_reductions": """
def f(x: f64[n]) -> f64[n]:
    y[i] = exp(sum[j](x[j])) * x[i]
    return y
""",
    "hoist_reductions": """
def f(x: f64[n]) -> f64[n]:
    y[i] = exp(x[i] - max[j](x[j]))
    return y
""",
    "hoist_invariant_factors": """
def f(A: f64[n, m], v: f64[n]) -> f64[n, m]:
    y[i, j] = A[i, j] * exp(v[i])
    return y
""",
    "order_contractions": """
def f(A: f64[n, n], B: f64[n, n], x: f64[n]) -> f64[n]:
    y[i] = sum[j, l](A[i, j] * B[j, l] * x[l])
    return y
""",
    "order_recurrence_steps": """
def f(x0: f64[n], A: f64[n, n], d: f64[n], steps: f64[T]) -> f64[T, n]:
    z[t: T, i: n] = [t == 0] * x0[i] + [t >= 1] * z[t - 1, i] * sum[j](A[i, j] * z[t - 1, j]) / d[i]
    return z
""",
    "eliminate_equality_brackets": """
def f(x: f64[n]) -> f64[n]:
    y[i: n] = sum[j]([j == i + 1] * x[j])
    return y
""",
    "collapse_free_sums": """
def f(x: f64[n], w: f64[m]) -> f64[n]:
    y[i] = sum[j: m](x[i])
    return y
""",
    "drop_implied_guards": """
def f(x: f64[n]) -> f64[n]:
    y[i] = [i + 1 < n] * [i + 2 <= n + 5] * x[i]
    return y
""",
    "fold_constants": """
def f(x: f64[n]) -> f64[n]:
    y[i] = log(exp(2.0)) * x[i]
    return y
""",
    "merge_like_terms": """
def f(A: f64[n, n]) -> f64[n]:
    y[i] = sum[j](A[i, j]) + 2.0 * sum[k](A[i, k])
    return y
""",
    "share_powers": """
def f(x: f64[n], q: f64) -> f64[n]:
    a[i] = 1.0 + x[i] ** 2
    y[i] = q * pow(a[i], q - 1.0) * x[i] + log(a[i]) * pow(a[i], q)
    return y
""",
    "propagate_copies": """
def f(x: f64[n]) -> f64[n]:
    t[i] = x[i]
    y[i] = t[i] * t[i]
    return y
""",
    "factor_common_products": """
def f(x: f64[n], y: f64[n], w: f64[n]) -> f64[n]:
    g[i] = w[i] * exp(y[i]) * tanh(x[i]) - w[i] * exp(y[i]) * tanh(x[i]) ** 3
    return g
""",
    "share_common_statements": """
def f(x: f64[n]) -> f64[n]:
    a[i] = exp(x[i])
    b[i] = exp(x[i])
    y[i] = a[i] * b[i]
    return y
""",
    "reuse_computed_values": """
def f(x: f64[n]) -> f64[n]:
    a[i] = tanh(x[i])
    y[j] = a[j] * tanh(x[j])
    return y
""",
    "store_repeated_calls": """
def f(x: f64[n], w: f64[n]) -> f64[n]:
    a[i] = sigmoid(x[i]) * w[i]
    y[j] = a[j] * sigmoid(x[j]) + w[j] * sigmoid(x[j])
    return y
""",
    "remove_dead_statements": """
def f(x: f64[n]) -> f64[n]:
    unused[i] = 2.0 * x[i]
    y[i] = x[i] + 1.0
    return y
""",
    "inline_sparse_statements": """
def f(G: f64[n, n], v: f64[n]) -> f64[n, n]:
    M[l: n, p: n] = [l == p] * 2.0 + v[l] * v[p]
    H[k: n, p: n] = sum[l](G[l, k] * M[l, p])
    return H
""",
    "merge_symmetric_terms": """
def f(A: f64[n, m], a: f64[m], b: f64[m]) -> f64[n]:
    z[r, j, v] = A[r, j] * A[r, v]
    y[r] = sum[j, v](z[r, j, v] * a[j] * b[v]) + sum[j, v](z[r, j, v] * a[v] * b[j])
    return y
""",
    "reuse_stored_products": """
def f(x: f64[n], w: f64[n], d: f64[n]) -> (f64[n], f64[n]):
    a[i] = 0.5 * x[i] ** 2 / d[i]
    b[i] = -0.5 * w[i] * x[i] ** 2 / d[i] ** 2
    return a, b
""",
    "reuse_stored_sums": """
def f(x: f64[n], k: f64[n], w: f64[n]) -> (f64[n], f64[n]):
    c[l] = sum[j]([j - l <= 1 and l - j <= 1 and x[j] > k[l]])
    y[i] = -sum[m]([i - m <= 1 and m - i <= 1 and x[m] > k[i]] * w[i] * c[i])
    return c, y
""",
    "share_shifted_statements": """
def f(W: f64[d, d], s: f64[T, d]) -> (f64[T, d], f64[T, d]):
    g[k: T, j: d] = sum[l](W[l, j] * s[k, l])
    h[k: T, l: d] = sum[m]([k + 1 < T] * W[m, l] * s[k + 1, m])
    y[k: T, l: d] = h[k, l] * g[k, l]
    return g, y
""",
    "pull_brackets_out_of_calls": """
def f(x: f64[T, n]) -> f64[T, n]:
    y[t: T, i: n] = (sum[j](tanh(-[t >= 1] * x[t - 1, i] + [t >= 1] * x[t - 1, j]))
        + sum[j]([i != j] * sigmoid([i != j] * x[t, j] - [i != j] * x[t, i])))
    return y
""",
    "store_shifted_sums": """
def f(A: f64[n, m], w: f64[n]) -> f64[n]:
    y[i: n] = [i + 1 < n] * sum[j](A[i + 1, j] * w[i]) - sum[j](A[i, j])
    return y
""",
    "merge_summed_terms": """
def f(A: f64[K, d], B: f64[K, d], q: f64[K, d], e: f64) -> f64[d, d]:
    S[k: d, l: d] = e * sum[m](A[m, k] * q[m, l]) + e * sum[m]([m >= 1] * B[m, k] * q[m - 1, l])
    return S
""",
    "split_step_scatters": """
def f(W: f64[d, d], g: f64[m, d], ts: i64[m], x: f64[T]) -> f64[T, d]:
    b[k: T, l: d] = sum[p]([k == ts[p]] * g[p, l]) + [k + 1 < T] * sum[q](W[q, l] * b[k + 1, q])
    return b
""",
    "inline_tie_weights": """
def f(E: f64[n, m], D: f64[n, m]) -> f64[n]:
    e[i, j] = E[i, j] * E[i, j]
    w[i, j] = D[i, j] * E[i, j] + E[i, j]
    r[i] = max[j](e[i, j])
    s[i] = sum[j]([e[i, j] == r[i]] * w[i, j])
    return s
""",
}


def test_every_rule_has_a_case():
    assert set(CASES) == {r.name for r in RULES}


def test_every_rule_states_its_law():
    for r in RULES:
        assert r.law and r.apply.__doc__, r.name


def _interpreted(*progs) -> list:
    """Each program as a NumPy-interpreted function run as it is (not simplified
    again), so that a rewrite's result is compared with its input."""
    out = [Function(p, backend="numpy") for p in progs]
    for f in out:
        f.optimize = False
    return out


def _apply_once(name: str):
    fn = tl.parse(CASES[name], filename=f"<{name}>")["f"]
    before = fn.program
    after = B.separate_program_binders(RULES_BY_NAME[name].apply(before))
    return fn, before, after


@pytest.mark.parametrize("name", sorted(CASES))
def test_rule_rewrites_its_case_as_recorded(name, matches_golden):
    fn, before, after = _apply_once(name)
    assert after != before, f"{name} did not fire on its case"
    verify(after)
    text = f"# {name}: {RULES_BY_NAME[name].law}\n# before\n{fn.source}# after\n" \
           f"{Function(after).source}"
    matches_golden(GOLDEN / f"{name}.txt", text)


@pytest.mark.parametrize("name", sorted(CASES))
def test_rule_keeps_the_values(name):
    fn, before, after = _apply_once(name)
    want, got = _interpreted(before, after)
    args = random_inputs(want, {}, {s: 5 for s in before.sizes()}, seed=7)
    np.testing.assert_allclose(got(**args), want(**args), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("stored, reader, read", [
    # the indices of the stored sum matched in another order, its sums renamed
    ("s[a, b] = sum[j](A[a, j] * B[j, b])", "z[u, v] = w[v] * sum[q](B[q, v] * A[u, q])", True),
    ("s[a, b] = -sum[j](A[a, j] * B[j, b])", "z[u, v] = w[v] * sum[q](B[q, v] * A[u, q])", True),
    # a factor that may be infinite where no term of the sum is taken stays inside
    ("s[a, b] = sum[j](A[a, j] * B[j, b])", "z[u, v] = log(w[v]) * sum[q](B[q, v] * A[u, q])",
     False),
    # another coefficient would move where the sum overflows
    ("s[a, b] = 2.0 * sum[j](A[a, j] * B[j, b])", "z[u, v] = w[v] * sum[q](B[q, v] * A[u, q])",
     False),
    # a sum of another range is another sum
    ("s[a, b] = sum[j]([j >= 1] * A[a, j] * B[j, b])",
     "z[u, v] = w[v] * sum[q](B[q, v] * A[u, q])", False),
])
def test_a_stored_sum_is_read_where_a_term_sums_the_same(stored, reader, read):
    """reuse_stored_sums: a term whose summed part is a statement's body (up to the
    names of both statements' indices, coefficient +-1) reads the statement, times what
    does not use its summed indices."""
    src = ("def f(A: f64[n, m], B: f64[m, n], w: f64[n]) -> (f64[n, n], f64[n, n]):\n"
           f"    {stored}\n    {reader}\n    return s, z\n")
    fn = tl.parse(src)["f"]
    after = B.separate_program_binders(RULES_BY_NAME["reuse_stored_sums"].apply(fn.program))
    verify(after)
    z = after.stmt("z")
    assert (not any(t.sums for t in z.body)) == read, Function(after).source
    want, got = _interpreted(fn.program, after)
    args = random_inputs(want, {}, {"n": 4, "m": 3}, seed=9)
    args["w"] = np.abs(args["w"]) + 0.5
    np.testing.assert_allclose(got(**args), want(**args), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("reader, read", [
    # the reader makes the stored term's comparison: it reads the product
    ("b[i] = -0.5 * [x[i] > 0.0] * w[i] * x[i] ** 2 / d[i] ** 2", True),
    # ... written the other way round, the same comparison
    ("b[i] = -0.5 * [0.0 < x[i]] * w[i] * x[i] ** 2 / d[i] ** 2", True),
    # without it, the stored product is zero where x[i] <= 0 and the term is not
    ("b[i] = -0.5 * w[i] * x[i] ** 2 / d[i] ** 2", False),
    # another comparison is another bracket
    ("b[i] = -0.5 * [x[i] > 1.0] * w[i] * x[i] ** 2 / d[i] ** 2", False),
])
def test_a_product_stored_under_a_value_bracket_is_read_under_the_same_one(reader, read):
    """reuse_stored_products: a stored product may compare values (an adjoint under a
    kink); a term holding its factors reads it only where it makes the same comparison,
    and keeps its brackets."""
    src = ("def f(x: f64[n], w: f64[n], d: f64[n]) -> (f64[n], f64[n]):\n"
           "    a[i] = [x[i] > 0.0] * 0.5 * x[i] ** 2 / d[i]\n"
           f"    {reader}\n    return a, b\n")
    fn = tl.parse(src)["f"]
    after = B.separate_program_binders(RULES_BY_NAME["reuse_stored_products"].apply(fn.program))
    verify(after)
    b = after.stmt("b")
    assert any(f.__class__ is Access and f.name == "a" for t in b.body for f, _ in t.factors) \
        == read, Function(after).source
    want, got = _interpreted(fn.program, after)
    args = random_inputs(want, {}, {"n": 6}, seed=4)
    args["d"] = np.abs(args["d"]) + 0.5
    args["x"][:2] = [-0.5, 0.0]                  # where the comparison fails
    np.testing.assert_allclose(got(**args), want(**args), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("brackets, covered", [
    ("[i < 2] * a[i], [i >= 2] * b[i]", True),        # the brackets cover every i
    ("[i < 1] * a[i], [i >= 2] * b[i]", False),       # a guard keeps the strong zero
])
def test_common_products_are_factored_across_different_brackets(brackets, covered):
    """F * [P] * a + F * [Q] * b -> F * h with h = [P] * a + [Q] * b; the product is
    guarded by [P or Q] unless that always holds, so F's NaN at i = 1 stays out."""
    first, second = brackets.split(", ")
    src = ("def f(a: f64[n], b: f64[n], x: f64[n], w: f64[n]) -> f64[n]:\n"
           f"    g[i] = {first} * w[i] * log(x[i]) * exp(w[i]) + {second} * w[i] * log(x[i]) * exp(w[i])\n"
           "    return g\n")
    fn = tl.parse(src)["f"]
    after = B.separate_program_binders(RULES_BY_NAME["factor_common_products"].apply(fn.program))
    verify(after)
    main = after.stmts[-1]
    assert [s.name for s in after.stmts] == ["g_fac", "g"] and len(main.body) == 1
    assert bool(main.body[0].pred) != covered
    rng = np.random.default_rng(8)
    args = {k: rng.standard_normal(4) for k in ("a", "b", "w")}
    args["x"] = np.array([2.0, -1.0, 3.0, 0.5])         # log is NaN at i = 1
    want, got = _interpreted(fn.program, after)
    np.testing.assert_allclose(got(**args), want(**args), rtol=1e-12)
    if covered:
        assert np.isnan(got(**args)[1])
    else:
        assert got(**args)[1] == 0.0


def test_a_gated_recurrence_evaluates_each_gate_once_in_its_gradient():
    """store_repeated_calls on a gradient: the gate sigmoid(g) of a recurrence is evaluated
    by the step, its derivative factor and the adjoints it multiplies (one of them a step
    later); stored once it is read everywhere, and the gradient still matches finite
    differences and the dot-product identity."""
    from tensorlang.ssa.ir import Apply
    from tensorlang.ssa import traverse as T
    from tests.derivcheck import dot_product_identity, grad_matches_fd
    src = """
def f(w: f64[b], u: f64[b], x: f64[T, b]) -> f64:
    g[t: T, i: b] = w[i] * x[t, i] + [t >= 1] * u[i] * h[t - 1, i]
    h[t: T, i: b] = sigmoid(g[t, i]) * tanh(x[t, i]) + [t >= 1] * sigmoid(g[t, i]) * h[t - 1, i]
    return sum[t, i](h[t, i] ** 2)
"""
    fn = tl.parse(src)["f"]
    grad = tl.grad(fn, wrt=("w", "u"))
    calls = [n for st in grad.optimized_program().stmts for n in T.iter_nodes(st.body)
             if isinstance(n, Apply) and n.fn == "sigmoid"]
    assert len(calls) == 1, calls
    rng = np.random.default_rng(11)
    inputs = {"w": rng.standard_normal(3), "u": rng.standard_normal(3),
              "x": rng.standard_normal((6, 3))}
    grad_matches_fd(fn, ("w", "u"), inputs, rng)
    dot_product_identity(fn, ("w", "u"), inputs, rng)


def test_a_call_repeated_at_shifted_indices_is_stored_once():
    """store_repeated_calls for the softmax weights of a recurrence's adjoint: the same
    call read at the step and at the step after (`t + 1`), with the bracket that keeps
    `a[t - 1]` in range inside the call, outside it or implied by the ranges, is one
    statement; a call whose bracket differs where it matters (`[t >= 2]`) is left
    as it is, and the values stay those of the program as written."""
    from tensorlang.ssa.ir import Apply
    from tensorlang.ssa import traverse as T
    src = """
def f(a: f64[T, n], b: f64[T, n], c: f64[T, n]) -> f64[T, n]:
    y[t: T, i: n] = a[t, i] * b[t, i]
    p[t: T, i: n] = c[t, i] * exp(y[t, i] + [t >= 1] * a[t - 1, i])
    q[t: T, i: n] = [t >= 1] * c[t, i] * exp(a[t - 1, i] + y[t, i])
    r[t: T, i: n] = [t + 1 < T] * b[t, i] * exp(a[t, i] + y[t + 1, i])
    s[t: T, i: n] = b[t, i] * exp(y[t, i] + [t >= 2] * a[t - 1, i])
    z[t: T, i: n] = p[t, i] + q[t, i] + r[t, i] + s[t, i]
    return z
"""
    fn = tl.parse(src)["f"]
    after = B.separate_program_binders(RULES_BY_NAME["store_repeated_calls"].apply(fn.program))
    verify(after)
    calls = {st.name: [n for n in T.iter_nodes(st.body) if isinstance(n, Apply)]
             for st in after.stmts}
    stored = [name for name, found in calls.items() if name not in "ypqrsz" and found]
    assert len(stored) == 1, Function(after).source
    assert not calls["p"] and not calls["q"] and not calls["r"], Function(after).source
    assert len(calls["s"]) == 1, Function(after).source
    want, got = _interpreted(fn.program, after)
    args = random_inputs(want, {}, {"T": 5, "n": 3}, seed=9)
    np.testing.assert_allclose(got(**args), want(**args), rtol=1e-12, atol=1e-12)


def test_a_sum_repeated_under_brackets_on_its_generators_is_read_under_them():
    """b is a's sum under a bracket on b's own index: b's readers read a under the
    bracket, and b's sums are not computed twice (gradients that eliminate a label
    comparison keep its range check on one copy of a sum and not on the other)."""
    fn = tl.parse("""
def f(A: f64[n, m], x: f64[m], y: i64[n]) -> f64[n]:
    a[i] = sum[j](A[i, j] * x[j])
    b[i] = sum[j]([y[i] >= 0 and y[i] < n] * A[i, j] * x[j])
    out[i] = a[i] * b[i] + b[i]
    return out
""", filename="<outer>")["f"]
    before = fn.program
    after = B.separate_program_binders(RULES_BY_NAME["share_common_statements"].apply(before))
    verify(after)
    assert [s.name for s in after.stmts] == ["a", "out"], Function(after).source
    want, got = _interpreted(before, after)
    args = random_inputs(want, {}, {"n": 5, "m": 4}, seed=7)
    args["y"] = np.array([0, -1, 4, 7, 2])
    np.testing.assert_allclose(got(**args), want(**args), rtol=1e-12, atol=1e-12)


def test_a_call_equal_where_its_term_holds_is_factored_with_the_other():
    """`exp(y[j] + [i >= 1] * y[j] * z[i - 1])` and, in a term under `[i >= 1]`, the same
    exponential written without the bracket are one factor where that term holds:
    factored, the exponential is evaluated once per point (gridvi's tangent step
    evaluated its softmax weight in two sums over the actions)."""
    src = ("def f(x: f64[n], y: f64[n], z: f64[n]) -> f64[n]:\n"
           "    r[i: n] = sum[j: n](x[j] * exp(y[j] + [i >= 1] * z[i - 1] * y[j]))"
           " + sum[j: n]([i >= 1] * z[j] * exp(y[j] + z[i - 1] * y[j]))\n"
           "    return r\n")
    fn = tl.parse(src)["f"]
    after = B.separate_program_binders(RULES_BY_NAME["factor_common_products"].apply(fn.program))
    verify(after)
    main = after.stmts[-1]
    assert [s.name for s in after.stmts] == ["r_fac", "r"] and len(main.body) == 1
    assert sum(isinstance(n, Apply) and n.fn == "exp" for n in T.iter_nodes(main.body)) == 1
    rng = np.random.default_rng(9)
    args = {k: rng.standard_normal(6) for k in ("x", "y", "z")}
    want, got = _interpreted(fn.program, after)
    np.testing.assert_allclose(got(**args), want(**args), rtol=1e-12)
    assert str(tl.cost(fn)) == "11*n^2 + n"


def test_a_copy_under_brackets_is_substituted_where_that_is_no_costlier():
    """inline_bracketed_copies (a rule of derivatives) on `t = [x > 0] * y` (the adjoint
    of a kink, its indicator times a cotangent): read once at each of its own points it
    goes into the reader, brackets and all (shifted with the read), saving the write;
    read inside a sum over another index it stays stored (the comparison would run at
    every point of the sum).  propagate_copies leaves it alone."""
    from tensorlang.opt.simplify import inline_bracketed_copies
    fn = tl.parse("""
def f(x: f64[n], y: f64[n], A: f64[n, n]) -> (f64[n], f64[n]):
    t[i] = [x[i] > 0.0 and i >= 1] * y[i]
    u[i] = [i + 1 < n] * t[i + 1] * x[i]
    v[i] = sum[j](A[i, j] * t[j])
    return u, v
""", filename="<bracketed>")["f"]
    after = B.separate_program_binders(inline_bracketed_copies(fn.program))
    verify(after)
    assert [s.name for s in after.stmts] == ["t", "u", "v"], Function(after).source
    alone = tl.parse("""
def f(x: f64[n], y: f64[n]) -> f64[n]:
    t[i] = [x[i] > 0.0 and i >= 1] * y[i]
    u[i] = [i + 1 < n] * t[i + 1] * x[i]
    return u
""", filename="<bracketed>")["f"]
    assert RULES_BY_NAME["propagate_copies"].apply(alone.program) is alone.program
    after = B.separate_program_binders(inline_bracketed_copies(alone.program))
    verify(after)
    assert [s.name for s in after.stmts] == ["u"], Function(after).source
    assert "x[i + 1] > 0.0" in Function(after).source, Function(after).source
    want, got = _interpreted(alone.program, after)
    args = random_inputs(want, {}, {"n": 6}, seed=5)
    np.testing.assert_allclose(got(**args), want(**args), rtol=1e-12, atol=1e-12)


def test_powers_are_shared_only_where_the_base_cannot_be_zero():
    """share_powers reads pow(a, q) and pow(a, q - 1) from one statement where a is a
    positive constant plus squares (robust's `(1 + z ** 2) ** (p / 2)`, whose gradient
    with respect to z and to p needs both powers); where a can be 0 (a square alone)
    both powers stay, since pow(a, q) / a is NaN at 0 where pow(a, q - 1) need not be."""
    rule = RULES_BY_NAME["share_powers"]
    src = """
def f(x: f64[n], q: f64) -> f64[n]:
    a[i] = {base}
    y[i] = q * pow(a[i], q - 1.0) * x[i] + log(a[i]) * pow(a[i], q)
    return y
"""
    for base, shared in (("1.0 + x[i] ** 2", True), ("0.5 + 2.0 * exp(x[i]) + x[i] ** 4", True),
                         ("x[i] ** 2", False), ("1.0 - x[i] ** 2", False),
                         ("1.0 + x[i]", False)):
        fn = tl.parse(src.format(base=base), filename="<powers>")["f"]
        after = B.separate_program_binders(rule.apply(fn.program))
        verify(after)
        calls = [n for st in after.stmts for n in T.iter_nodes(st.body)
                 if isinstance(n, Apply) and n.fn == "pow"]
        assert len(calls) == (1 if shared else 2), (base, Function(after).source)
        want, got = _interpreted(fn.program, after)
        args = random_inputs(want, {}, {"n": 6}, seed=3)
        args["x"][0] = 0.0
        args["q"] = 0.7
        np.testing.assert_allclose(got(**args), want(**args), rtol=1e-12, atol=1e-12)


def test_a_named_argument_read_in_a_kink_bracket_is_computed_where_it_is_read():
    """inline_pointwise_statements, a rule of derivatives only: `x_arg = x * w` named for
    `max(x_arg, 0)` and read again in the kink's bracket of the derivative is computed in
    both places (one multiplication each, against one and a write); read as a plain
    factor or under a sum it stays stored, and so it does in a program that runs as its
    author wrote it."""
    from tensorlang.opt.simplify import derivative_rules, simplify
    src = """
def f(x: f64[n], w: f64[n], y: f64[n], A: f64[n, n]) -> (f64[n], f64[n]):
    a[i] = x[i] * w[i]
    r[i] = max(a[i], 0.0)
    g[i] = [a[i] > 0.0] * y[i]
    return r, g
"""
    fn = tl.parse(src, filename="<arg>")["f"]
    after = B.separate_program_binders(simplify(fn.program, derivative_rules(())))
    verify(after)
    assert [s.name for s in after.stmts] == ["r", "g"], Function(after).source
    assert [s.name for s in simplify(fn.program).stmts] == ["a", "r", "g"]
    want, got = _interpreted(fn.program, after)
    args = random_inputs(want, {}, {"n": 6}, seed=4)
    np.testing.assert_allclose(got(**args), want(**args), rtol=1e-12, atol=1e-12)
    for other in ("    g[i] = a[i] * y[i]\n", "    g[i] = sum[j](A[i, j] * [a[j] > 0.0])\n"):
        fn = tl.parse(src.replace("    g[i] = [a[i] > 0.0] * y[i]\n", other), filename="<arg>")["f"]
        kept = simplify(fn.program, derivative_rules(()))
        assert "a" in {s.name for s in kept.stmts}, Function(kept).source


def test_a_statement_equal_to_minus_another_is_read_as_minus_that_one():
    """share_common_statements: b's body is minus a's (up to the names of the sums), so
    b's readers read -a[i] and b is dropped; a statement merely proportional to
    another by any other factor is left alone."""
    fn = tl.parse("""
def f(A: f64[n, m], x: f64[m], r: f64) -> f64[n]:
    a[i] = sum[j](A[i, j] * x[j]) - r
    b[i] = r - sum[l](x[l] * A[i, l])
    c[i] = 2.0 * r - 2.0 * sum[j](A[i, j] * x[j])
    out[i] = a[i] * exp(b[i]) + b[i] ** 3 + c[i]
    return out
""")["f"]
    before = fn.program
    after = B.separate_program_binders(RULES_BY_NAME["share_common_statements"].apply(before))
    verify(after)
    assert [s.name for s in after.stmts] == ["a", "c", "out"], Function(after).source
    want, got = _interpreted(before, after)
    args = random_inputs(want, {}, {"n": 5, "m": 4}, seed=3)
    np.testing.assert_allclose(got(**args), want(**args), rtol=1e-12, atol=1e-12)


def test_a_transposed_table_inside_a_builtin_is_read_from_the_first():
    """share_common_statements: b[i, j] = abs(-g[i] + g[j]) is a[j, i] for a[i, j] =
    abs(g[i] - g[j]), and d the transpose of c likewise.  With the indices exchanged
    the argument's terms come in the other order, and the keys compared were not put
    back in canonical order inside the call, so the pairwise tables of a ranking loss's
    gradient were stored twice.  Whatever the indices are called."""
    template = """
def f(g: f64[n], s: f64[n]) -> f64[n, n]:
    a[I, J] = abs(g[I] - g[J])
    b[I, J] = abs(-g[I] + g[J])
    c[I, J] = softplus(s[I] - s[J])
    d[I, J] = softplus(-s[I] + s[J])
    out[I: n, J: n] = a[I, J] * b[I, J] + c[I, J] * d[I, J]
    return out
"""
    for first, second in (("i", "j"), ("v", "c0")):
        fn = tl.parse(template.replace("I", first).replace("J", second))["f"]
        before = fn.program
        after = B.separate_program_binders(
            RULES_BY_NAME["share_common_statements"].apply(before))
        verify(after)
        assert [s.name for s in after.stmts] == ["a", "c", "out"], Function(after).source
        want, got = _interpreted(before, after)
        args = random_inputs(want, {}, {"n": 5}, seed=3)
        np.testing.assert_allclose(got(**args), want(**args), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("body, bound, factored", [
    # h[e] = s[e] - r is stored over e alone: one subtraction per e, not per (e, c), in a
    # derivative that misses its bound (here 1 * B)
    ("X[e, c] * s[e] - X[e, c] * r", 1, True),
    # within its bound (1000 * B), a single read is not worth a round of factoring
    ("X[e, c] * s[e] - X[e, c] * r", 1000, False),
    # h would range over (e, c) like g: one read of X is not worth a statement
    ("X[e, c] * s[e] - X[e, c] * Y[e, c]", 1, False),
])
def test_one_shared_read_is_factored_when_the_rest_needs_fewer_indices(body, bound, factored):
    """factor_common_products takes a single plain read as F only in a derivative that
    misses its certificate's bound, and only when the parts beside it leave out an index
    of the statement, so that h is smaller than F * h."""
    from tensorlang.opt.factor import FactorWithin
    from tensorlang.opt.hoist import Budget
    src = ("def f(X: f64[B, 3], Y: f64[B, 3], s: f64[B], r: f64) -> f64[B, 3]:\n"
           f"    g[e, c] = {body}\n    return g\n")
    fn = tl.parse(src)["f"]
    budget = Budget(((((("B", 1),)), bound),), (("B", 3),))
    after = B.separate_program_binders(FactorWithin((), budget)(fn.program))
    verify(after)
    assert (len(after.stmts) == 2) == factored, Function(after).source
    if factored:
        assert [d for _, d in after.stmts[0].indices] == ["B"], Function(after).source
    assert RULES_BY_NAME["factor_common_products"].apply(fn.program) is fn.program
    want, got = _interpreted(fn.program, after)
    args = random_inputs(want, {}, {"B": 6}, seed=4)
    np.testing.assert_allclose(got(**args), want(**args), rtol=1e-12, atol=1e-12)


def test_one_application_factors_every_statement_it_can_and_the_factors_again():
    """factor_common_products factors every statement of the program in one application,
    and looks again at what a factoring puts in place: g's terms share w * exp(y), and
    what is left, tanh(x) * cos(y) - tanh(x) ** 3 * cos(y), shares tanh(x) * cos(y) in
    turn; q, a later statement, shares sin(x) * g.  One factoring per application took
    a round of the engine each, and a SABR Hessian ran out of rounds (96 k^2 of work
    left where it needs k^2, the fill of its diagonal)."""
    fn = tl.parse("""
def f(x: f64[n], y: f64[n], w: f64[n]) -> f64[n]:
    g[i] = w[i] * exp(y[i]) * tanh(x[i]) * cos(y[i]) - w[i] * exp(y[i]) * tanh(x[i]) ** 3 * cos(y[i]) + w[i] * exp(y[i]) * x[i] ** 2
    q[i] = sin(x[i]) * g[i] * exp(x[i]) + sin(x[i]) * g[i] * cos(x[i])
    return q
""")["f"]
    after = B.separate_program_binders(RULES_BY_NAME["factor_common_products"].apply(fn.program))
    verify(after)
    text = Function(after).source
    assert [s.name for s in after.stmts] == ["g_fac_fac", "g_fac", "g", "q_fac", "q"], text
    assert RULES_BY_NAME["factor_common_products"].apply(after) == after, text
    want, got = _interpreted(fn.program, after)
    args = random_inputs(want, {}, {"n": 7}, seed=5)
    np.testing.assert_allclose(got(**args), want(**args), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("h, read", [
    # h at k is g at k + 1 where k + 1 < 4, and 0 (its bracket) at k = 3
    ("h[k: 4, l: d] = sum[m]([k + 1 < 4] * W[m, l] * s[k + 1, m])", True),
    # at k = 3 h reads row 4 of s, which g (over 4 rows) never computes: not a read of g
    ("h[k: 4, l: d] = sum[m](W[m, l] * s[k + 1, m])", False),
    # g one step back (k - 1), the first row 0
    ("h[k: 4, l: d] = sum[m]([k >= 1] * W[m, l] * s[k - 1, m])", True),
    # another matrix order is another sum
    ("h[k: 4, l: d] = sum[m]([k + 1 < 4] * W[l, m] * s[k + 1, m])", False),
])
def test_a_statement_is_read_shifted_only_where_it_is_the_other_one(h, read):
    """share_shifted_statements: h becomes `[0 <= k + c < 4] * g[k + c, l]` only when its
    body is g's at k + c wherever both are in range and 0 wherever k + c is not."""
    src = ("def f(W: f64[d, d], s: f64[5, d]) -> (f64[4, d], f64[4, d]):\n"
           "    g[k: 4, j: d] = sum[q](W[q, j] * s[k, q])\n"
           f"    {h}\n    y[k: 4, l: d] = h[k, l] * g[k, l]\n    return g, y\n")
    fn = tl.parse(src)["f"]
    after = RULES_BY_NAME["share_shifted_statements"].apply(fn.program)
    verify(after)
    assert (T.tensor_reads(after.stmt("h").body[0]) == {"g"}) == read, Function(after).source
    want, got = _interpreted(fn.program, after)
    args = random_inputs(want, {}, {"d": 3}, seed=12)
    np.testing.assert_allclose(got(**args), want(**args), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("body, merged", [
    # one operand read twice over the same sum
    ("e * sum[m](A[m, k] * q[m, l]) + e * sum[m](B[m, k] * q[m, l])", True),
    # ... at the step before, where the bracket makes the term 0 at m = 0
    ("sum[m](A[m, k] * q[m, l]) - 2.0 * sum[m]([m >= 1] * B[m, k] * q[m - 1, l])", True),
    # ... at the step after, 0 at m = K - 1
    ("sum[m](A[m, k] * q[m, l]) + sum[m]([m + 1 < K] * B[m, k] * q[m + 1, l])", True),
    # ... two steps along, both terms bracketed
    ("sum[m]([m >= 1] * A[m, k] * q[m, l]) + sum[m]([m >= 3] * B[m, k] * q[m - 2, l])", True),
    # sums of other ranges share nothing to merge over
    ("sum[m](A[m, k] * q[m, l]) + sum[j](C[j, k] * C[j, l])", False),
    # the rest of each term needs every index: merging would save a multiplication only
    ("sum[m](A[m, k] * q[m, l] * C[k, l]) + sum[m](B[m, k] * q[m, l] * C[l, k])", False),
])
def test_summed_terms_reading_one_operand_are_merged_over_a_moved_sum(body, merged):
    """merge_summed_terms: two summed terms that read one operand, their sums renamed
    and moved by a constant where the moved term is 0 at the points it leaves, are one
    sum over a remainder stored over fewer indices; the values stay those of the terms
    as written."""
    src = ("def f(A: f64[K, d], B: f64[K, d], q: f64[K, d], C: f64[d, d], e: f64) -> f64[d, d]:\n"
           f"    S[k: d, l: d] = {body}\n    return S\n")
    fn = tl.parse(src)["f"]
    after = B.separate_program_binders(RULES_BY_NAME["merge_summed_terms"].apply(fn.program))
    verify(after)
    assert (len(after.stmts) == 2) == merged, Function(after).source
    if merged:
        assert sum(1 for t in after.stmt("S").body if t.sums) == 1, Function(after).source
    want, got = _interpreted(fn.program, after)
    args = random_inputs(want, {}, {"K": 5, "d": 3}, seed=13)
    np.testing.assert_allclose(got(**args), want(**args), rtol=1e-12, atol=1e-12)


def test_summed_terms_stay_apart_in_a_program_that_is_differentiated_further():
    """Merging is factoring: not among the rules for a program a derivative is taken of,
    and the simplified program runs one pass where the terms as written ran two."""
    from tensorlang.opt.simplify import RULES_BEFORE_DERIVATIVE
    assert "merge_summed_terms" not in {r.name for r in RULES_BEFORE_DERIVATIVE}
    f = tl.parse(CASES["merge_summed_terms"])["f"]
    assert str(tl.cost(f)).startswith("2*K*d^2 + "), str(tl.cost(f))
