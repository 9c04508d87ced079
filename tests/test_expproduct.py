"""Statements X[k, l] = sum[m](G * exp(P[k, l] + Q[m, k] + R[m, l])) run on the Numba
backend as a shifted matrix product (backend/expproduct.py, stepmath.expproduct): the
values of the sum as written -- special values, underflow and overflow included --
whatever the names, the index order, the guards and the signs; statements outside the
form keep their kernels.  The HMM's gradient with respect to its transitions is the
motivating case."""
from pathlib import Path

import numpy as np
import pytest

import tensorlang as tl
from tensorlang.backend import stepmath
from tensorlang.backend.expproduct import exp_product
from tensorlang.backend.numba_backend import module_source

ROOT = Path(__file__).resolve().parent.parent
CALL = "tl_expproduct("


@pytest.fixture(autouse=True)
def every_size_takes_the_product(monkeypatch):
    """The driver runs the product from stepmath.PRODUCT_MIN_TERMS terms on (the kernel
    below): here from one term, so that small cases test the product."""
    monkeypatch.setattr(stepmath, "PRODUCT_MIN_TERMS", 1)


def direct(P, Q, R, Gk, Gl, Go, coeff, magnitudes=False):
    """The sum as written, over a (k, l, m) array; with `magnitudes`, the sum of the
    terms' magnitudes (the scale an error is measured against)."""
    M, K1 = Q.shape
    K2 = R.shape[1]
    Gk = np.ones((M, K1)) if Gk is None else Gk
    Gl = np.ones((M, K2)) if Gl is None else Gl
    Go = np.ones((K1, K2)) if Go is None else Go
    with np.errstate(all="ignore"):
        e = np.exp(P[:, :, None] + Q.T[:, None, :] + R.T[None, :, :])
        terms = Go[:, :, None] * Gk.T[:, None, :] * Gl.T[None, :, :] * e
        return coeff * np.sum(np.abs(terms) if magnitudes else terms, axis=2)


def assert_same(got, want, scale, rtol):
    """The same special values in the same places, and the finite entries within rtol
    of the sum of the terms' magnitudes (a signed sum's rounding is relative to that)."""
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert np.array_equal(np.isposinf(got), np.isposinf(want))
    assert np.array_equal(np.isneginf(got), np.isneginf(want))
    ok = np.isfinite(want)
    assert np.all(np.abs(got[ok] - want[ok]) <= rtol * np.abs(scale[ok]))


def _operands(rng, case):
    M, K1, K2 = 40, 6, 5
    P = rng.standard_normal((K1, K2))
    Q = rng.standard_normal((M, K1))
    R = rng.standard_normal((M, K2))
    Gk = rng.standard_normal((M, K1))
    Gl = rng.standard_normal((M, K2))
    Go = rng.standard_normal((K1, K2))
    if case == "huge negative":
        Q[:, 2] -= 1000.0
        R[:20, 1] -= 800.0
        P[3, :] -= 1000.0
    elif case == "huge positive":
        P += 300.0
        Q[:, 1] += 400.0
        R[:, 4] += 700.0
    elif case == "wide range":
        P, Q, R = P * 1000.0, Q * 1000.0, R * 1000.0
    elif case == "-inf":
        P[1, :] = -np.inf
        Q[5, :] = -np.inf
        Q[:, 3] = -np.inf
        R[:, 2] = -np.inf
    elif case == "+inf and nan":
        Q[7, 0] = np.inf
        R[3, 4] = np.nan
        Gk[2, 2] = np.inf
        Go[0, 1] = np.nan
    elif case == "zero factors":
        Gk[:, 1] = 0.0
        Gl[:, 0] = 0.0
        Q[:, 1] = 800.0
    elif case == "no rows":
        Q, R, Gk, Gl = Q[:0], R[:0], Gk[:0], Gl[:0]
    return P, Q, R, Gk, Gl, Go


@pytest.mark.parametrize("case", ["plain", "huge negative", "huge positive", "wide range",
                                  "-inf", "+inf and nan", "zero factors", "no rows"])
def test_expproduct_is_the_sum_as_written(case):
    P, Q, R, Gk, Gl, Go = _operands(np.random.default_rng(len(case)), case)
    for gk, go in ((Gk, Go), (None, None)):
        got = stepmath.expproduct(P, Q, R, gk, Gl, go, -2.0, np.empty(P.shape))
        assert_same(got, direct(P, Q, R, gk, Gl, go, -2.0),
                    direct(P, Q, R, gk, Gl, go, -2.0, magnitudes=True), 1e-12)


def test_entries_past_the_range_of_doubles_are_summed_as_written():
    # The bound exp(P[k, l] + d[l]) takes the row's largest Q, here at the other k: for
    # k = 1 it overflows although the term is e^600, and for (0, 1) it is below TINY
    # (e^-700): both entries are summed term by term
    P = np.array([[0.0, -1000.0], [600.0, 0.0]])
    Q = np.array([[300.0, 0.0]])
    R = np.array([[0.0, 0.0]])
    got = stepmath.expproduct(P, Q, R, None, None, None, 1.0, np.empty((2, 2)))
    want = direct(P, Q, R, None, None, None, 1.0)
    assert np.isfinite(want).all() and 0.0 < want[0, 1] < 1e-300
    assert np.allclose(got, want, rtol=1e-13, atol=0)


HMM = tl.load(ROOT / "examples" / "hmm.tl").hmm_loglik


def _hmm_inputs(rng, T, K, regime):
    pi = np.log(rng.dirichlet(np.ones(K)))
    A = np.log(rng.dirichlet(np.ones(K), size=K))
    E = rng.standard_normal((T, K))
    if regime == "huge negative":         # states almost never entered or seen
        A[:, 1 % K] -= 1000.0
        E[:, 2 % K] -= 1000.0
    elif regime == "-inf transitions":    # a left-to-right chain
        A = np.where(np.arange(K)[:, None] <= np.arange(K)[None, :], A, -np.inf)
        pi = np.where(np.arange(K) == 0, 0.0, -np.inf)
    elif regime == "huge positive":
        E = E + 700.0 * (rng.random((T, K)) < 0.3)
    return pi, A, E


@pytest.mark.parametrize("regime", ["plain", "huge negative", "-inf transitions",
                                    "huge positive"])
def test_hmm_transition_gradient_on_both_backends(regime):
    g = tl.grad(HMM, wrt="A")
    assert CALL in module_source(g.program)
    rng = np.random.default_rng(5)
    for T, K in ((1, 3), (2, 2), (40, 5)):
        args = _hmm_inputs(rng, T, K, regime)
        got, want = g.compile("numba")(*args), g.compile("numpy")(*args)
        assert np.array_equal(np.isnan(got), np.isnan(want))
        ok = ~np.isnan(want)
        assert np.allclose(got[ok], want[ok], rtol=1e-11, atol=1e-14)


@pytest.mark.parametrize("regime", ["plain", "huge negative", "-inf transitions"])
def test_hmm_transition_gradient_against_finite_differences(regime):
    pi, A, E = _hmm_inputs(np.random.default_rng(11), 30, 4, regime)
    got = tl.grad(HMM, wrt="A").compile("numba")(pi, A, E)
    f = HMM.compile("numpy")
    h = 1e-6
    for k in range(4):
        for l in range(4):
            if not np.isfinite(A[k, l]):
                # exp(-inf) moves no probability: the derivative is 0
                assert got[k, l] == 0.0
                continue
            up, down = A.copy(), A.copy()
            up[k, l] += h
            down[k, l] -= h
            fd = (f(pi, up, E) - f(pi, down, E)) / (2 * h)
            assert abs(got[k, l] - fd) <= 1e-6 * max(1.0, abs(fd))


# A linear-chain CRF: the gradient with respect to the transitions is the product's sum
# less a count of the gold transitions, two terms of one statement.
CRF = """def crf(U: f64[T, K], P: f64[K, K], lab: i64[T]) -> f64:
    a[t: T, j: K] = U[t, j] + [t >= 1] * logsumexp[i](a[t - 1, i] + P[i, j])
    score = sum[t](U[t, lab[t]]) + sum[t]([t >= 1] * P[lab[t - 1], lab[t]])
    return logsumexp[j](a[T - 1, j]) - score
"""


def test_a_product_term_of_a_statement_of_several_terms_takes_the_product():
    """The term is split off into a statement of its own (blas.split_dense_terms)."""
    g = tl.grad(tl.parse(CRF)["crf"], wrt=("U", "P"))
    assert CALL in module_source(g.optimized_program())
    rng = np.random.default_rng(3)
    for T, K in ((1, 3), (2, 2), (30, 5)):
        args = (rng.standard_normal((T, K)), rng.standard_normal((K, K)),
                rng.integers(0, K, T))
        for got, want in zip(g.compile("numba")(*args), g.compile("numpy")(*args)):
            assert np.allclose(got, want, rtol=1e-11, atol=1e-14)


# The HMM with names of its own, the transition matrix read transposed and the
# emissions in the other orientation: the same form, found from its structure.
RENAMED = """def chain(p0: f64[S], W: f64[S, S], obs: f64[S, L]) -> f64:
    z[n: L, y: S] = obs[y, n] + [n == 0] * p0[y] + [n >= 1] * logsumexp[x](z[n - 1, x] + W[y, x])
    return logsumexp[y](z[L - 1, y])
"""


def test_renamed_and_transposed_hmm_takes_the_product():
    f = tl.parse(RENAMED)["chain"]
    g = tl.grad(f, wrt="W")
    assert CALL in module_source(g.program)
    rng = np.random.default_rng(2)
    for L, S in ((1, 2), (25, 4)):
        args = (rng.standard_normal(S), rng.standard_normal((S, S)) - 1.0,
                rng.standard_normal((S, L)))
        assert np.allclose(g.compile("numba")(*args), g.compile("numpy")(*args),
                           rtol=1e-11, atol=1e-14)


# The general form with everything it admits: factors over (m, k), (m, l) and m alone,
# exponent terms over (k, l), k alone, m alone, scaled and negated, two guards, shifted
# and transposed reads, the output's indices in the other order.
GENERAL = """def f(B: f64[n, n], w: f64[N, n], v: f64[N, n], g: f64[N, n], h: f64[N, n], s: f64[n], u: f64[N]) -> f64[n, n]:
    X[q: n, p: n] = sum[r: N]([r >= 2] * [r + 1 < N] * g[r, q] * h[r - 1, p] * u[r] * exp(2.0 * B[p, q] - w[r - 2, p] + v[r, q] + s[p] - u[r]))
    return X
"""

# Rows picked by a guard that leaves gaps and a stride (np.take rather than a view),
# and two exponentials in one term.
STRIDED = """def f(a: f64[N, n], b: f64[N, n], c: f64[n, n]) -> f64[n, n]:
    X[k: n, l: n] = sum[m: N]([m != 1] * [2 * m < N] * exp(c[k, l]) * exp(a[2 * m, k] - 0.5 * b[m, l]))
    return X
"""


@pytest.mark.parametrize("src", [GENERAL, STRIDED])
def test_general_form_matches_the_interpreter(src):
    f = tl.parse(src)["f"]
    assert CALL in module_source(f.optimized_program())
    rng = np.random.default_rng(9)
    n, N = 4, 9
    if src is GENERAL:
        args = [rng.standard_normal((n, n)), rng.standard_normal((N, n)),
                rng.standard_normal((N, n)), rng.standard_normal((N, n)),
                rng.standard_normal((N, n)), rng.standard_normal(n), rng.standard_normal(N)]
        args[1][:, 0] -= 900.0                        # shifted reads far apart in scale
        args[2][3] += 700.0
    else:
        args = [rng.standard_normal((N, n)), rng.standard_normal((N, n)),
                rng.standard_normal((n, n))]
        args[1][:, 2] = -np.inf                       # exp(+inf): inf terms
    got, want = f.compile("numba")(*args), f.compile("numpy")(*args)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert np.array_equal(np.isinf(got), np.isinf(want))
    ok = np.isfinite(want)
    assert np.allclose(got[ok], want[ok], rtol=1e-12, atol=0)


# Exponent terms over all three indices, or a guard on an output index: not the form.
NOT_THE_FORM = {
    "term over k, l and m": """def f(A: f64[K, K], w: f64[T, K], v: f64[T, K], g: f64[T, K]) -> f64[K, K]:
    X[k: K, l: K] = sum[m: T](g[m, l] * exp(A[k, l] + w[m, k] * v[m, l]))
    return X
""",
    "guard on an output index": """def f(A: f64[K, K], w: f64[T, K], v: f64[T, K]) -> f64[K, K]:
    X[k: K, l: K] = sum[m: T]([m >= k] * exp(A[k, l] + w[m, k] - v[m, l]))
    return X
""",
    "one output index": """def f(w: f64[T, K], v: f64[T]) -> f64[K]:
    X[k: K] = sum[m: T](exp(w[m, k] - v[m]))
    return X
""",
}


@pytest.mark.parametrize("name", NOT_THE_FORM)
def test_statements_outside_the_form_keep_their_kernels(name):
    f = tl.parse(NOT_THE_FORM[name])["f"]
    prog = f.optimized_program()
    assert all(exp_product(st) is None for st in prog.stmts)
    assert CALL not in module_source(prog)
    rng = np.random.default_rng(4)
    K, T = 3, 7
    shapes = {"A": (K, K), "w": (T, K), "v": (T, K) if name != "one output index" else (T,),
              "g": (T, K)}
    args = [rng.standard_normal(shapes[p.name]) for p in prog.params]
    assert np.allclose(f.compile("numba")(*args), f.compile("numpy")(*args), rtol=1e-12)


GENERAL_RENAMED = """def f(Tr: f64[d, d], lf: f64[D, d], rt: f64[D, d], g2: f64[D, d], h2: f64[D, d], s2: f64[d], u2: f64[D]) -> f64[d, d]:
    Out[i: d, j: d] = sum[t: D]([t >= 2] * [t + 1 < D] * g2[t, i] * h2[t - 1, j] * u2[t] * exp(2.0 * Tr[j, i] - lf[t - 2, j] + rt[t, i] + s2[j] - u2[t]))
    return Out
"""


def test_the_form_does_not_depend_on_names():
    # the same statement with every name changed is split the same way
    a = exp_product(tl.parse(GENERAL)["f"].optimized_program().stmts[-1])
    b = exp_product(tl.parse(GENERAL_RENAMED)["f"].optimized_program().stmts[-1])
    assert a is not None and b is not None
    assert sorted((op, c) for op, c, _ in a.exponent) == sorted((op, c) for op, c, _ in b.exponent)
    assert sorted(op for op, _, _ in a.factors) == sorted(op for op, _, _ in b.factors)


def test_small_statements_keep_their_kernel_and_agree(monkeypatch):
    # T K^2 = 500 terms: below the threshold the kernel runs, above it the product
    g = tl.grad(HMM, wrt="A")
    args = _hmm_inputs(np.random.default_rng(8), 20, 5, "huge negative")
    calls = []
    real = stepmath.expproduct_factors

    def counted(*a):
        calls.append(1)
        return real(*a)
    monkeypatch.setattr(stepmath, "expproduct_factors", counted)
    fn = g.compile("numba")
    results = {}
    for threshold in (10 ** 9, 1):
        monkeypatch.setattr(stepmath, "PRODUCT_MIN_TERMS", threshold)
        before = len(calls)
        results[threshold] = fn(*args)
        assert (len(calls) > before) == (threshold == 1)
    assert np.allclose(results[1], results[10 ** 9], rtol=1e-12, atol=1e-15)
