"""Contraction order (opt/contract.py): products of several factors summed over
shared indices run as trees of pairwise contractions.

Each program below checks the degree its ordered form reaches, that its
gradient keeps the cheap-gradient certificate at sampled sizes, that function
and gradient compute what the program as written computes (interpreter, Numba
and finite differences), and that renaming tensors or indices changes nothing
in the cost.
"""
import re

import numpy as np
import pytest

import tensorlang as tl
from derivcheck import as_flat, grad_matches_fd, inputs_for
from tensorlang.api import Function
from tensorlang.backend.blas import dense_contraction
from tensorlang.backend.numba_module import prepare
from tensorlang.costs import Cost, CostModel
from tensorlang.loops import plan_program
from tensorlang.opt import contract, simplify

CHAIN_VECTOR = """
def f(A: f64[n, n], B: f64[n, n], C: f64[n, n], v: f64[n]) -> f64:
    return sum[i, j, l, p](A[i, j] * B[j, l] * C[l, p] * v[p])
"""

CHAIN_MATRIX = """
def f(A: f64[n, n], B: f64[n, n], C: f64[n, n], D: f64[n, n]) -> f64[n, n]:
    X[i, q] = sum[j, l, p](A[i, j] * B[j, l] * C[l, p] * D[p, q])
    return X
"""

# A scalar function of the matrix chain, for its gradient.
CHAIN_MATRIX_LOSS = """
def f(A: f64[n, n], B: f64[n, n], C: f64[n, n], D: f64[n, n], Y: f64[n, n]) -> f64:
    X[i, q] = sum[j, l, p](A[i, j] * B[j, l] * C[l, p] * D[p, q])
    return sum[i, q](X[i, q] * Y[i, q])
"""

TUCKER = """
def f(G: f64[r1, r2, r3], U: f64[n1, r1], V: f64[n2, r2], W: f64[n3, r3],
      Y: f64[n1, n2, n3]) -> f64:
    X[i, j, k] = sum[a, b, c](G[a, b, c] * U[i, a] * V[j, b] * W[k, c])
    return sum[i, j, k]((X[i, j, k] - Y[i, j, k]) ** 2)
"""

TUCKER_SQUARE = """
def f(G: f64[r, r, r], U: f64[n, r], V: f64[n, r], W: f64[n, r]) -> f64[n, n, n]:
    X[i, j, k] = sum[a, b, c](G[a, b, c] * U[i, a] * V[j, b] * W[k, c])
    return X
"""

TRACE3 = """
def f(A: f64[n, n], B: f64[n, n], C: f64[n, n]) -> f64:
    return sum[i, j, l](A[i, j] * B[j, l] * C[l, i])
"""

# <x (x) y (x) z (x) w, TT> for a tensor train of four cores: eight factors, so the
# greedy pairing chooses the order (the exact search stops at contract.EXACT_LIMIT).
TENSOR_TRAIN = """
def f(G1: f64[n, r], G2: f64[r, n, r], G3: f64[r, n, r], G4: f64[r, n],
      x: f64[n], y: f64[n], z: f64[n], w: f64[n]) -> f64:
    return sum[i, j, k, l, a, b, c](x[i] * G1[i, a] * y[j] * G2[a, j, b] * z[k] * G3[b, k, c]
                                    * w[l] * G4[c, l])
"""

TENSOR_TRAIN_FULL = """
def f(G1: f64[n, r], G2: f64[r, n, r], G3: f64[r, n, r], G4: f64[r, n]) -> f64[n, n, n, n]:
    X[i, j, k, l] = sum[a, b, c](G1[i, a] * G2[a, j, b] * G3[b, k, c] * G4[c, l])
    return X
"""

# What the operands may be: brackets (on summed indices and on generators), a
# gather, builtins, powers, coefficients and scalars, generator-only factors.
BAND = """
def f(A: f64[n, n], B: f64[n, n], x: f64[n]) -> f64:
    y[i] = sum[j, l]([j >= 1] * A[i, j] * B[j - 1, l] * x[l])
    return sum[i](y[i] * y[i])
"""

TRIANGLE = """
def f(A: f64[n, n], B: f64[n, n], x: f64[n]) -> f64:
    y[i] = sum[j, l]([j <= l] * A[i, j] * B[j, l] * x[l])
    return sum[i](y[i] * y[i])
"""

SHIFTED_OUTPUT = """
def f(A: f64[n, n], B: f64[n, n], x: f64[n]) -> f64:
    y[i: n] = sum[j, l]([i >= 1] * A[i - 1, j] * B[j, l] * x[l])
    return sum[i](y[i] * y[i])
"""

GATHER = """
def f(E: f64[v, d], W: f64[d, c], V: f64[b, c], y: i64[b]) -> f64:
    return sum[s, e, k](E[y[s], e] * W[e, k] * V[s, k])
"""

BUILTINS_AND_POWERS = """
def f(A: f64[n, n], B: f64[n, n], x: f64[n], s: f64) -> f64:
    return 2.0 * s * sum[i, j, l](exp(A[i, j]) * B[j, l] ** 2 * tanh(x[l]) ** 3)
"""

VALUE_BRACKET = """
def f(A: f64[n, n], B: f64[n, n], x: f64[n]) -> f64:
    y[i] = sum[j, l]([x[l] > 0.0] * A[i, j] * B[j, l] * x[l])
    return sum[i](y[i] * y[i])
"""

# A relation bracket on two summed indices that no factor uses together is an operand
# of its own: the products over a and over b become (shared) m x n statements.
MASKED_SQUARE = """
def f(U: f64[m, r], V: f64[n, r], M: bool[m, n]) -> f64:
    return sum[i, j, a, b]([M[i, j]] * U[i, a] * V[j, a] * U[i, b] * V[j, b])
"""

OUTER = """
def f(a: f64[n], b: f64[m], C: f64[m, k], d: f64[k]) -> f64[n, m]:
    y[i, j] = sum[l, p](a[i] * b[j] * C[j, l] * d[l] * C[j, p])
    return y
"""

SCALAR = {
    "chain_vector": CHAIN_VECTOR, "chain_matrix_loss": CHAIN_MATRIX_LOSS, "tucker": TUCKER,
    "trace3": TRACE3, "tensor_train": TENSOR_TRAIN, "band": BAND, "triangle": TRIANGLE,
    "shifted_output": SHIFTED_OUTPUT, "gather": GATHER, "builtins_and_powers": BUILTINS_AND_POWERS,
    "value_bracket": VALUE_BRACKET, "masked_square": MASKED_SQUARE,
}
TENSOR = {"chain_matrix": CHAIN_MATRIX, "tucker_square": TUCKER_SQUARE,
          "tensor_train_full": TENSOR_TRAIN_FULL, "outer": OUTER}


def fn(src):
    return tl.parse(src)["f"]


def wrt_of(f):
    return tuple(p.name for p in f.program.params if p.elem == "f64")


def samples(f):
    return contract.size_samples(f.program.sizes())


def written(f):
    """The function exactly as written: no simplification, no ordering."""
    g = Function(f.program, backend="numpy")
    g.optimize = False
    return g


# ------------------------------------------------------------ degrees
def test_chain_with_a_vector_is_quadratic():
    c = tl.cost(fn(CHAIN_VECTOR))
    assert c.degree("n") == 2, str(c)
    assert tl.cost(fn(CHAIN_VECTOR), optimize=False).degree("n") == 4


def test_chain_of_four_matrices_is_cubic():
    c = tl.cost(fn(CHAIN_MATRIX))
    assert c.degree("n") == 3, str(c)
    # Three matrix products: 2 n^3 each (a multiplication and an addition per trip).
    assert str(c.leading()) == "6*n^3"


def test_tucker_reconstruction_costs_n_cubed_r():
    c = tl.cost(fn(TUCKER_SQUARE))
    assert c.degree() == 4 and c.degree("n") == 3, str(c)
    # n^3 appears only with r (the last mode product), never with r^2 or r^3.
    assert max(dict(m).get("r", 0) for m in c.terms if dict(m).get("n") == 3) == 1, str(c)
    # With six size symbols, no step multiplies more than four of them.
    general = tl.cost(fn(TUCKER))
    assert general.degree() == 4, str(general)


def test_trace_of_a_triple_product_is_one_matrix_product():
    f = fn(TRACE3)
    c = tl.cost(f)
    assert str(c.leading()) == "2*n^3", str(c)         # was 3 n^3: one loop over three indices
    prog = prepare(f.optimized_program())
    cubic = [s for s in prog.stmts if _statement_degree(prog, s) == 3]
    assert cubic and all(dense_contraction(s) is not None for s in cubic)


def _statement_degree(prog, s):
    model = CostModel(prog)
    plan = [p for p in plan_program(prog) if p.stmt is s][0]
    return model.statement(plan).degree("n")


def test_a_mask_on_two_summed_indices_is_an_operand_of_its_own():
    c = tl.cost(fn(MASKED_SQUARE))
    assert c.degree() == 3 and c.degree("r") == 1, str(c)     # was m n r^2


def test_tensor_train_contraction_is_linear_in_the_mode_size():
    c = tl.cost(fn(TENSOR_TRAIN))
    assert c.degree("n") == 1 and c.degree("r") == 2, str(c)
    full = tl.cost(fn(TENSOR_TRAIN_FULL))
    # The output has n^4 elements; each costs one pairwise product over one rank index.
    assert str(full.leading()) == "2*n^4*r", str(full)


@pytest.mark.parametrize("name", sorted(SCALAR) + sorted(TENSOR))
def test_ordering_never_costs_more_than_the_term_as_written(name):
    f = fn({**SCALAR, **TENSOR}[name])
    ordered, plain = tl.cost(f), tl.cost(f, optimize=False)
    for smp in samples(f):
        assert ordered.evaluate(**smp) < plain.evaluate(**smp), (name, smp)


def test_every_dense_pairwise_step_is_a_blas_call():
    for src in (CHAIN_VECTOR, CHAIN_MATRIX, TRACE3):
        prog = prepare(fn(src).optimized_program())
        for s in prog.stmts:
            t = s.body[0]
            plain = all(f.__class__.__name__ == "Access" for f, _ in t.factors)
            if len(s.body) == 1 and len(t.factors) == 2 and t.sums and not t.pred and plain:
                assert dense_contraction(s) is not None, s


# ------------------------------------------------------------ gradients
def _elements(f, wrt):
    params = {p.name: p for p in f.program.params}
    total = Cost()
    for w in wrt:
        term = Cost.const(1)
        for d in params[w].dims:
            term = term * (d if isinstance(d, int) else Cost.symbol(d))
        total = total + term
    return total


@pytest.mark.parametrize("name", sorted(SCALAR))
def test_gradient_keeps_the_certificate(name):
    f = fn(SCALAR[name])
    wrt = wrt_of(f)
    cf, cg = tl.cost(f), tl.cost(tl.grad(f, wrt=wrt))
    bound = (cf + _elements(f, wrt)) * 4
    for smp in samples(f):
        assert cg.evaluate(**smp) <= bound.evaluate(**smp), (name, smp, str(cg), str(cf))


def test_gradient_of_a_matvec_chain_is_quadratic():
    f = fn(CHAIN_VECTOR)
    assert tl.cost(tl.grad(f, wrt=wrt_of(f))).degree("n") == 2


def test_gradient_of_a_matrix_chain_is_cubic():
    f = fn(CHAIN_MATRIX_LOSS)
    g = tl.cost(tl.grad(f, wrt=("A", "B", "C", "D")))
    assert g.degree("n") == 3, str(g)


def test_derivatives_of_an_ordered_program_are_ordered_too():
    """Reverse mode transposes the intermediate statements, so no adjoint statement
    of a chain contracts more than two operands."""
    f = fn(CHAIN_MATRIX_LOSS)
    g = tl.grad(f, wrt=("A", "B", "C", "D")).optimized_program()
    for s in g.stmts:
        for t in s.body:
            assert len(t.factors) <= 2 or not t.sums, s


def test_an_adjoint_that_copies_an_intermediate_takes_its_place():
    """The adjoint of A in trace(ABC) is the intermediate (BC)^T the ordered forward
    stores: the gradient computes it under A's adjoint's name (transposed if need
    be) rather than computing it and copying it, whichever factor was paired first."""
    for src in (TRACE3, _renamed(TRACE3, {"A": "C", "C": "A", "i": "l", "l": "i"})):
        g = tl.grad(fn(src), wrt=("A", "B", "C")).optimized_program()
        for s in g.stmts:
            t = s.body[0]
            assert not (len(s.body) == 1 and not t.sums and len(t.factors) == 1
                        and t.factors[0][0].__class__.__name__ == "Access"), s
        assert str(tl.cost(Function(g))) == "6*n^3 + 3*n^2"


# ------------------------------------------------------------ values
@pytest.mark.parametrize("name", sorted(SCALAR) + sorted(TENSOR))
def test_values_are_those_of_the_program_as_written(name):
    f = fn({**SCALAR, **TENSOR}[name])
    inputs = inputs_for(f, size=4, seed=3)
    want = as_flat(written(f)(**inputs))
    assert np.allclose(as_flat(f(**inputs)), want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("name", sorted(SCALAR))
def test_gradients_match_finite_differences_and_the_naive_gradient(name):
    f = fn(SCALAR[name])
    wrt = wrt_of(f)
    inputs = inputs_for(f, size=4, seed=4)
    grads = grad_matches_fd(f, wrt, inputs, np.random.default_rng(5))
    naive = tl.grad(f, wrt=wrt, optimize=False)(**inputs)
    assert np.allclose(as_flat(grads), as_flat(naive), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("name", sorted(SCALAR) + sorted(TENSOR))
def test_numba_backend_computes_the_ordered_values(name):
    f = fn({**SCALAR, **TENSOR}[name])
    inputs = inputs_for(f, size=5, seed=6)
    want = as_flat(written(f)(**inputs))
    got = as_flat(f.compile(backend="numba")(**inputs))
    assert np.allclose(got, want, rtol=1e-10, atol=1e-10)
    if name in SCALAR:
        g = tl.grad(f, wrt=wrt_of(f))
        naive = as_flat(tl.grad(f, wrt=wrt_of(f), optimize=False)(**inputs))
        assert np.allclose(as_flat(g.compile(backend="numba")(**inputs)), naive,
                           rtol=1e-9, atol=1e-9)


def test_the_greedy_pairing_agrees_with_the_exact_search(monkeypatch):
    """Beyond EXACT_LIMIT operands the greedy pairing chooses; on the chain it finds
    an order of the same degree (remembered choices and simplified programs are
    dropped so that the search runs again)."""
    exact = tl.cost(fn(CHAIN_VECTOR))
    monkeypatch.setattr(contract, "EXACT_LIMIT", 1)
    calls = []
    greedy = contract.greedy_tree
    monkeypatch.setattr(contract, "greedy_tree", lambda *a: calls.append(1) or greedy(*a))
    contract._CHOICES.clear()
    simplify._SIMPLIFIED.clear()
    try:
        f = fn(CHAIN_VECTOR)
        assert tl.cost(f).degree("n") == exact.degree("n")
        assert calls
        inputs = inputs_for(f, size=4, seed=8)
        assert np.allclose(f(**inputs), written(f)(**inputs))
    finally:
        contract._CHOICES.clear()
        simplify._SIMPLIFIED.clear()


# ------------------------------------------------------------ names do not choose
def _renamed(src: str, mapping: dict) -> str:
    return re.sub(r"\b[A-Za-z_][A-Za-z0-9_]*\b", lambda m: mapping.get(m.group(0), m.group(0)),
                  src)


RENAMINGS = {
    "chain_vector": (CHAIN_VECTOR, {"A": "D", "D": "A", "C": "Z", "v": "a", "i": "p", "p": "i",
                                    "j": "l", "l": "j"}),
    "chain_matrix": (CHAIN_MATRIX, {"A": "D", "D": "A", "B": "C", "C": "B", "i": "q", "q": "i",
                                    "j": "p", "p": "j"}),
    "tucker": (TUCKER, {"U": "W", "W": "U", "G": "Z", "a": "c", "c": "a", "i": "k", "k": "i"}),
    "trace3": (TRACE3, {"A": "C", "C": "A", "i": "l", "l": "i"}),
    "tensor_train": (TENSOR_TRAIN, {"G1": "G4", "G4": "G1", "x": "w", "w": "x", "a": "c",
                                    "c": "a", "i": "l", "l": "i"}),
    "gather": (GATHER, {"E": "Z", "W": "A", "V": "B", "s": "k", "k": "s"}),
}


@pytest.mark.parametrize("name", sorted(RENAMINGS))
def test_renaming_tensors_and_indices_keeps_the_cost(name):
    src, mapping = RENAMINGS[name]
    a, b = fn(src), fn(_renamed(src, mapping))
    assert str(tl.cost(a)) == str(tl.cost(b))
    assert str(tl.cost(tl.grad(a, wrt=wrt_of(a)) if name in SCALAR else a)) == \
        str(tl.cost(tl.grad(b, wrt=wrt_of(b)) if name in SCALAR else b))


def test_the_search_sees_every_size_symbol_alike():
    """The sampled sizes are the same set whatever the symbols are called."""
    one = contract.size_samples(["n", "r"])
    other = contract.size_samples(["r", "n"])
    key = lambda s: sorted(tuple(sorted(d.items())) for d in s)  # noqa: E731
    assert key(one) == key(other)
    assert {tuple(sorted(d.values())) for d in one} == {(16, 16), (1024, 1024), (16, 1024)}


def test_a_guard_the_root_gather_needs_stays_in_the_root():
    """`[k == y[p - 1]]` (the adjoint of a gather at p - 1) keeps the sum over p in
    the root while the split moves `[p >= 1]` into the new statement with the
    other operands: the root then read y at -1 (a read outside y on the compiled
    backend, a TLBoundsError from count_ops, and a printed program the checker
    rejects). The guard stays in the root as well, and every split's root is
    checked like its new statements."""
    src = """
def f(A: f64[n, m + 1], B: f64[n, m + 1], y: i64[m], e: f64[a], g: f64) -> f64[a]:
    r[k: a] = sum[l: n, p: m + 1]([k == y[p - 1] and l >= 1 and p >= 1] * B[l, p] * exp(A[l, p] + e[y[p - 1]]) / g)
    return r
"""
    f = tl.parse(src, filename="ct.tl")["f"]
    prog = f.optimized_program()
    assert len(prog.stmts) == 2                      # still split
    from tensorlang.ssa.printer import print_program
    again = tl.parse(print_program(prog), filename="again.tl")["f"]   # in bounds as printed
    rng = np.random.default_rng(0)
    args = dict(A=rng.standard_normal((3, 5)), B=rng.standard_normal((3, 5)),
                y=np.array([2, 0, 2, 1]), e=rng.standard_normal(3), g=0.5)
    want = np.zeros(3)
    for p in range(1, 5):
        want[args["y"][p - 1]] += sum(args["B"][l, p] * np.exp(args["A"][l, p] + args["e"][args["y"][p - 1]])
                                      for l in range(1, 3)) / 0.5
    assert np.allclose(f(**args), want, rtol=1e-12)
    assert np.allclose(again(**args), want, rtol=1e-12)
    assert f.count_ops(**args) <= tl.cost(f).evaluate(n=3, m=4, a=3)


def test_a_factor_that_may_be_infinite_leaves_a_sum_only_under_the_sums_guard():
    """`[p >= 1] * sum[k | k < p](a[p - 1, k] * r[p - k]) / D[p]` with D[0] = 0 (the
    Levinson recursion's prediction error, read only for p >= 1): within the sum,
    [p >= 1] is implied by k < p and dropped; ordering moves / D[p] out of the sum,
    which is empty at p = 0, so it takes [p >= 1] with it (0 * inf is NaN where the
    program's value is finite)."""
    src = """
def f(a: f64[P, P], r: f64[P], E: f64[P]) -> f64[P]:
    kap[p: P] = -(r[p] + [p >= 1] * sum[k | k < p](a[p - 1, k] * r[p - k])) / ([p == 0] * r[0] + [p >= 1] * E[p - 1])
    return kap
"""
    rng = np.random.default_rng(12)
    args = dict(a=rng.random((4, 4)), r=rng.random(4) + 1.0, E=rng.random(4) + 1.0)
    plain = tl.parse(src)["f"]
    plain.optimize = False
    want = plain(**args)
    assert np.isfinite(want).all()
    f = tl.parse(src)["f"]
    for backend in ("numpy", "numba"):
        np.testing.assert_allclose(f.compile(backend)(**args), want, rtol=1e-12)


@pytest.mark.parametrize("body, zero_at", [
    # a division by an input that is 0 where the sum is empty
    ("y[p: P] = sum[k | k < p](x[k] * w[p, k] / d[p])", "d"),
    # a log of one, and a sum over two indices whose domain is empty at p = 0 and p = 1
    ("y[p: P] = sum[k, l | k < l and l < p](x[k] * w[l, k] * log(d[p]))", "d"),
    # the operand that may be inf reads a summed index the others do not exhaust
    ("y[p: P] = sum[k, l | k < l and l < p](x[k] * w[p, k] / d[l])", "d"),
])
def test_an_operand_that_may_be_infinite_is_not_evaluated_where_its_sum_is_empty(body, zero_at):
    """The program's value at p is 0 where the sum has no element, whatever the
    factors would be there; the optimised program must not read them as inf * 0."""
    src = f"""
def f(x: f64[P], w: f64[P, P], d: f64[P]) -> f64:
    {body}
    return sum[p](y[p] * y[p])
"""
    rng = np.random.default_rng(7)
    args = dict(x=rng.random(5), w=rng.random((5, 5)), d=rng.random(5) + 0.5)
    args[zero_at][0] = 0.0
    plain = tl.parse(src)["f"]
    plain.optimize = False
    want = plain(**args)
    assert np.isfinite(want)
    f = tl.parse(src)["f"]
    np.testing.assert_allclose(f.compile("numpy")(**args), want, rtol=1e-12)
    g = tl.grad(f, wrt="x")
    assert np.isfinite(g(**args)).all()


def test_a_masked_mean_is_zero_on_an_empty_row():
    """`sum[j]([m[i, j] > 0] * x[j] / c[i])` with c the count of the row's mask: on a
    row with no entry the sum has no element and is 0, though c[i] is 0 there.  The
    division is by a statement its brackets make 0, and the filter is on values, so
    no bracket on indices can say where the sum is empty: the division stays inside
    the sum, with the filter (a division per element, not per row)."""
    src = """
def f(m: f64[n, n], x: f64[n]) -> f64[n]:
    c[i] = sum[j]([m[i, j] > 0.0])
    y[i] = sum[j]([m[i, j] > 0.0] * x[j] / c[i])
    return y
"""
    m = np.array([[1.0, 0.0, 1.0], [0.0, 0.0, 0.0], [1.0, 1.0, 1.0]])
    x = np.array([1.0, 2.0, 3.0])
    f = tl.parse(src)["f"]
    for backend in ("numpy", "numba"):
        np.testing.assert_allclose(f.compile(backend)(m=m, x=x), [2.0, 0.0, 2.0])
    g = tl.vjp(f, wrt="x")
    np.testing.assert_allclose(g(m=m, x=x, d_out=np.ones(3)), [1.0 / 2 + 1.0 / 3, 1.0 / 3, 1.0 / 2 + 1.0 / 3])


def test_a_division_by_data_outside_an_empty_sum_is_kept_out_by_its_guard():
    """docs/language.md (Sums): a division by data is moved out of a sum its filter may
    empty; the guard the docs suggest keeps the row whose divisor is 0 at 0."""
    src = """
def f(w: f64[n, n], x: f64[n], hi: f64[n], lo: f64[n]) -> f64[n]:
    y[i] = [hi[i] > lo[i]] * sum[j]([w[i, j] > 0.0] * x[j] / (hi[i] - lo[i]))
    return y
"""
    args = dict(w=np.array([[1.0, 0.0, 1.0], [0.0, 0.0, 0.0], [1.0, 1.0, 1.0]]),
                x=np.array([0.0, 1.0, 2.0]), hi=np.array([2.0, 1.0, 3.0]),
                lo=np.array([1.0, 1.0, 1.0]))
    f = tl.parse(src)["f"]
    for backend in ("numpy", "numba"):
        np.testing.assert_allclose(f.compile(backend)(**args), [2.0, 0.0, 1.5])
