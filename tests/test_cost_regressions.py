"""The asymptotic-cost regression suite (degrees and ratios, never times).

Every case checks values against NumPy or finite differences and the bound
stated for it with tl.cost; the naive derivative's cost is part of each test id.
"""
import pathlib

import numpy as np
import pytest

import tensorlang as tl
from derivcheck import check_close, grad_matches_fd, inputs_for, jvp_matches_fd
from suite_programs import CASES

GOLDEN = pathlib.Path(__file__).resolve().parent / "golden" / "derivatives"


def fn(case):
    return tl.parse(CASES[case]["src"], filename=f"{case}.tl")["f"]


def wrt_of(case):
    w = CASES[case]["wrt"]
    return w[0] if len(w) == 1 else w


def costs(case):
    f = fn(case)
    return (tl.cost(f), tl.cost(tl.grad(f, wrt=wrt_of(case))),
            tl.cost(tl.grad(f, wrt=wrt_of(case), optimize=False), optimize=False))


def case_id(case):
    _, opt, naive = costs(case)
    return f"{case}-opt[{opt}]-naive[{naive}]".replace(" ", "")


ALL = [pytest.param(c, id=case_id(c)) for c in CASES]


@pytest.mark.parametrize("case", ALL)
def test_gradient_values_and_cheap_bound(case):
    f = fn(case)
    rng = np.random.default_rng(7)
    inputs = inputs_for(f, size=5)
    wrt = CASES[case]["wrt"]
    grad_matches_fd(f, wrt, inputs, rng)
    fwd, opt, naive = costs(case)
    for s in f.program.sizes():
        assert opt.degree(s) <= max(fwd.degree(s), _input_degree(f, wrt, s)), (s, str(opt))
    # The naive derivative is never cheaper, and the difference is what the rewrites buy.
    big = {s: 1000 for s in f.program.sizes()}
    assert naive.evaluate(**big) >= opt.evaluate(**big)


def _input_degree(f, wrt, s):
    params = {p.name: p for p in f.program.params}
    return max(sum(1 for d in params[w].dims if d == s) for w in wrt)


def test_T1_trace_gradient_is_a_bracket_without_sums():
    g = tl.grad(fn("T1"), wrt="A")
    (stmt,) = g.program.stmts
    (term,) = stmt.body
    assert not term.sums and not term.factors and term.coeff == 1.0
    assert "[k == l]" in g.source
    A = np.random.default_rng(0).standard_normal((6, 6))
    assert np.array_equal(g(A), np.eye(6))
    c = tl.cost(g)
    assert c.degree("n") == 2 and c.leading() == tl.Cost.symbol("n") * tl.Cost.symbol("n")


def copies_of_trace(k: int) -> str:
    names = "ijpqrstuvw"
    terms = " + ".join(f"sum[{names[c]}](A[{names[c]}, {names[c]}])" for c in range(k))
    return f"def f(A: f64[n, n]) -> f64:\n    return {terms}\n"


def test_T2_copies_of_the_trace_cost_the_same_as_one():
    opt, naive = {}, {}
    for k in (1, 2, 4, 10):
        f = tl.parse(copies_of_trace(k))["f"]
        g = tl.grad(f, wrt="A")
        A = np.random.default_rng(k).standard_normal((5, 5))
        assert np.array_equal(g(A), k * np.eye(5))
        opt[k] = tl.cost(g).evaluate(n=100)
        naive[k] = tl.cost(tl.grad(f, wrt="A", optimize=False), optimize=False).evaluate(n=100)
    base = tl.cost(tl.grad(fn("T1"), wrt="A")).evaluate(n=100)
    # Independent of the number of copies, and within a constant of T1.
    assert max(opt.values()) <= 2 * base
    assert opt[10] <= opt[2] + 100
    # The naive derivative grows with the copies.
    assert naive[10] > 4 * naive[2] > 8 * naive[1] / 2
    assert "4.0 * [k == l]" in tl.grad(fn("T2"), wrt="A").source


def test_T4_degrees_per_input():
    f = fn("T4")
    assert tl.cost(tl.grad(f, wrt="A")).degree("n") == 2
    assert tl.cost(tl.grad(f, wrt="w")).degree("n") == 1


def test_T5_adjoint_reads_both_neighbours_under_guards():
    g = tl.grad(fn("T5"), wrt="x")
    src = g.source
    assert "[k + 1 < n] * x[k + 1]" in src and "[k >= 1] * x[k - 1]" in src
    assert "sum[" not in src                       # no loop inside the loop
    assert tl.cost(g).degree("n") == 1


@pytest.mark.parametrize("case", ["T6a", "T6b", "T11", "T12"])
def test_gradient_within_four_times_the_forward(case):
    f = fn(case)
    fwd, opt, _ = costs(case)
    assert opt.degree() == fwd.degree()
    for n in (5, 20, 100, 1000):
        sizes = {s: n for s in f.program.sizes()}
        ratio = opt.evaluate(**sizes) / fwd.evaluate(**sizes)
        limit = 4 if case in ("T6a", "T6b") else 4 * 1.5
        assert ratio <= limit, (case, n, ratio)


def test_T9_intermediate_stays_a_statement():
    f = fn("T9")
    g = tl.grad(f, wrt=("x", "A"))
    assert "y" in [s.name for s in g.program.stmts]
    assert tl.cost(g).degree("n") == 2


def test_T10_adjoint_is_the_transpose():
    f = fn("T10")
    g = tl.grad(f, wrt="A")
    rng = np.random.default_rng(3)
    A, B = rng.standard_normal((5, 5)), rng.standard_normal((5, 5))
    assert np.array_equal(g(A, B), B.T)
    assert tl.cost(g).degree("n") == 2


def test_T15_hessian_of_the_quadratic_form():
    f = fn("T15")
    H = tl.hessian(f, wrt="x")
    rng = np.random.default_rng(4)
    x, A = rng.standard_normal(6), rng.standard_normal((6, 6))
    check_close(H(x, A), A + A.T, "Hessian", rtol=1e-12, atol=1e-12)
    assert tl.cost(H).degree("n") == 2
    memory = tl.Cost()
    for s in H.program.stmts:
        elems = tl.Cost.const(1)
        for _, d in s.indices:
            elems = elems * tl.Cost.symbol(d)
        memory = memory + elems
    assert memory.degree("n") == 2
    naive = tl.hessian(f, wrt="x", optimize=False)
    check_close(naive(x, A), A + A.T, "naive Hessian", rtol=1e-12, atol=1e-12)
    assert tl.cost(naive, optimize=False).degree("n") > 2


def test_T16_strided_gradient_keeps_its_divisibility_guard():
    g = tl.grad(fn("T16"), wrt="x")
    again = tl.parse(g.source)[g.name]
    for m in (1, 6, 7):
        x = np.random.default_rng(m).standard_normal(m)
        want = np.where(np.arange(m) % 2 == 0, 2 * x, 0.0)
        for h in (g, again):
            got = h(x)
            assert np.array_equal(got[1::2], np.zeros_like(got[1::2]))
            check_close(got, want, "strided gradient", rtol=1e-14, atol=0)


@pytest.mark.parametrize("case,rule", [
    ("T18min", lambda a, b: ((a <= b) * 1.0, (a > b) * 1.0)),
    ("T18max", lambda a, b: ((a >= b) * 1.0, (a < b) * 1.0)),
])
def test_T18_ties_go_to_the_first_argument(case, rule):
    g = tl.grad(fn(case), wrt=("a", "b"))
    a = np.array([1.0, 2.0, 3.0, -1.0, 0.5])
    b = np.array([1.0, 0.0, 4.0, -1.0, 0.5])           # ties at 0, 3 and 4
    ga, gb = g(a, b)
    wa, wb = rule(a, b)
    assert np.array_equal(ga, wa) and np.array_equal(gb, wb)


def test_T18_abs_has_zero_slope_at_zero():
    g = tl.grad(fn("T18abs"), wrt="a")
    a = np.array([-2.0, 0.0, 3.0, 0.0, -0.1])
    assert np.array_equal(g(a), np.sign(a))


def test_T19_one_hot_matmul_is_a_gather_and_its_adjoint_a_scatter():
    f = fn("T19")
    fwd = tl.cost(f)
    bdv = tl.Cost.symbol("b") * tl.Cost.symbol("d") * tl.Cost.symbol("v")
    assert fwd.degree("v") == 0                        # no loop over u
    g = tl.grad(f, wrt="E")
    grad_cost = tl.cost(g)
    assert all(dict(m) != {"b": 1, "d": 1, "v": 1} for m in grad_cost.terms), str(grad_cost)
    assert grad_cost.degree() == 2
    rng = np.random.default_rng(5)
    E, G = rng.standard_normal((4, 3)), rng.standard_normal((6, 3))
    y = np.array([0, 3, 3, 1, 0, 3])
    want = np.zeros_like(E)
    np.add.at(want, y, G)                              # duplicates summed
    check_close(g(E, G, y), want, "scatter adjoint", rtol=1e-14, atol=0)
    del bdv


def product_of(m: int) -> str:
    names = [f"x{k}" for k in range(m)]
    params = ", ".join(f"{v}: f64[n]" for v in names)
    return (f"def f({params}) -> f64:\n"
            f"    return sum[i]({' * '.join(f'{v}[i]' for v in names)})\n")


def test_many_factor_products_keep_a_constant_per_factor():
    """A product of m elementwise factors: the gradient and the jvp with respect to
    all of them cost at most 7.5 per factor and element (prefix and suffix products,
    ad/chain.py) where the partials written out cost m per factor; values checked
    against the products of the others."""
    rng = np.random.default_rng(11)
    for m in (4, 6, 10, 16):
        f = tl.parse(product_of(m))["f"]
        wrt = tuple(p.name for p in f.program.params)
        g = tl.grad(f, wrt=wrt)
        j = tl.jvp(f, wrt=wrt)
        for d in (g, j):
            per = tl.cost(d).evaluate(n=1000) / (1000 * m)
            assert per <= 7.5, (m, str(tl.cost(d)))
        naive = tl.cost(tl.grad(f, wrt=wrt, optimize=False), optimize=False)
        if m >= 10:
            assert naive.evaluate(n=1000) > tl.cost(g).evaluate(n=1000)
        xs = [rng.standard_normal(5) for _ in range(m)]
        got = g(*xs)
        for k in range(m):
            want = np.prod([x for q, x in enumerate(xs) if q != k], axis=0)
            check_close(got[k], want, f"adjoint {k} of {m}", rtol=1e-12, atol=1e-14)
        ts = [rng.standard_normal(5) for _ in range(m)]
        want = sum(np.sum(t * np.prod([x for q, x in enumerate(xs) if q != k], axis=0))
                   for k, t in enumerate(ts))
        check_close(j(*xs, *ts)[1], want, f"tangent of {m}", rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", list(CASES))
def test_printed_derivative_matches_golden(case, matches_golden):
    f = fn(case)
    text = tl.grad(f, wrt=wrt_of(case)).source
    if case == "T15":
        text += "\n" + tl.hessian(f, wrt="x").source
    matches_golden(GOLDEN / f"{case}.txt", text)


def test_a_builtin_of_a_compound_argument_keeps_the_gradient_cheap():
    """log1p of a squared difference: naming the argument before differentiating
    keeps the gradient within the certificate (it used to cost 41 n)."""
    f = tl.parse("def f(x: f64[n]) -> f64:\n"
                 "    return sum[i]([i + 1 < n] * log1p((x[i + 1] - x[i]) ** 2))\n")["f"]
    g = tl.grad(f, wrt="x")
    for n in (10, 100, 1000):
        assert tl.cost(g).evaluate(n=n) <= 4 * (tl.cost(f).evaluate(n=n) + n)
    x = np.random.default_rng(3).standard_normal(7)
    d = np.diff(x)
    want = np.zeros(7)
    want[:-1] -= 2 * d / (1 + d ** 2)
    want[1:] += 2 * d / (1 + d ** 2)
    assert np.allclose(g(x), want, rtol=1e-12)


def test_a_stored_builtin_is_read_by_the_derivative_not_recomputed():
    f = tl.parse("def f(x: f64[n]) -> f64:\n    a[i] = tanh(x[i])\n"
                 "    return sum[i](a[i] * a[i])\n")["f"]
    g = tl.grad(f, wrt="x")
    assert g.source.count("tanh(") == 1 and "tanh_slope(a[k])" in g.source, g.source
    x = np.random.default_rng(4).standard_normal(9)
    assert np.allclose(g(x), 2 * np.tanh(x) * (1 - np.tanh(x) ** 2), rtol=1e-12)


def test_a_loop_invariant_builtin_is_evaluated_once_per_index_it_uses():
    f = tl.parse("def f(w: f64[n], X: f64[m, n]) -> f64:\n"
                 "    z[s] = sum[j](X[s, j] * w[j])\n    return sum[s](log1p(exp(z[s])))\n")["f"]
    h = tl.hessian(f, wrt="w")
    # exp(z[s]) depends on s only; evaluated inside the (s, l) loop it would add
    # terms in m*n for every call
    c = tl.cost(h)
    assert c.degree() == 3
    # with the exponentials per (s, l) the m*n part was 28 m n; now one per s
    per_mn = (c.evaluate(m=1000, n=1000) - 2 * 1000 * 1000 ** 2 - 1000 ** 2) / 1000 ** 2
    assert per_mn < 20, str(c)


def test_the_rayleigh_quotient_hessian_costs_p_squared():
    """Forward over reverse stores c * I + d v^T and contracts it with G; substituting
    it and moving the reduction out of the loop over l1 gives O(p^2), not O(p^3)."""
    f = tl.load(pathlib.Path(__file__).resolve().parent.parent / "examples" / "calls.tl").rayleigh
    h = tl.hessian(f, wrt="v")
    assert tl.cost(h).degree() == 2, str(tl.cost(h))
    rng = np.random.default_rng(6)
    v, G = rng.standard_normal(5), rng.standard_normal((5, 5))
    eps, H_fd = 1e-6, np.empty((5, 5))
    g = tl.grad(f, wrt="v")
    for k in range(5):
        e = np.zeros(5)
        e[k] = eps
        H_fd[:, k] = (g(v + e, G) - g(v - e, G)) / (2 * eps)
    assert np.allclose(h(v, G), H_fd, rtol=1e-6, atol=1e-6)


# ------------------------------------------------------------ choices by cost, loops by guards
def monomials(c) -> set:
    """The monomials of a cost as {symbol: power} items, e.g. {(("n", 2),)} for n^2."""
    return {m for m, coef in c.terms.items() if coef}


def dominated(c, bound) -> bool:
    """Is every monomial of c at most (symbol by symbol) one of bound's?"""
    return all(any(all(dict(b).get(s, 0) >= e for s, e in m) for b in monomials(bound))
               for m in monomials(c))


def assert_cheap_gradient(f, wrt):
    """The certificate: cost(grad) <= 4 (cost(f) + |wrt|) at every sample size, and no
    monomial of cost(grad) above those of cost(f) + |wrt|."""
    g = tl.cost(tl.grad(f, wrt=wrt))
    bound = tl.cost(f) + _elements(f, wrt)
    assert dominated(g, bound), (str(g), str(bound))
    for n in (5, 20, 100, 1000):
        sizes = {s: n + k for k, s in enumerate(f.program.sizes())}
        assert g.evaluate(**sizes) <= 4 * bound.evaluate(**sizes), (n, str(g), str(bound))


def _elements(f, wrt):
    params = {p.name: p for p in f.program.params}
    total = tl.Cost()
    for w in (wrt,) if isinstance(wrt, str) else wrt:
        e = tl.Cost.const(1)
        for d in params[w].dims:
            e = e * (tl.Cost.const(d) if isinstance(d, int) else tl.Cost.symbol(d))
        total = total + e
    return total


def renamed(src: str, names: dict) -> str:
    """src with whole-word index names replaced (the sources below use each name once)."""
    import re
    return re.sub(r"\b(" + "|".join(names) + r")\b", lambda m: names[m.group(1)], src)


def test_T20_tap_gradient_has_no_n_squared_whatever_the_indices_are_called():
    src = CASES["T20"]["src"]
    seen = set()
    for names in ({}, {"j": "z"}, {"i": "z", "j": "a"}, {"i": "q", "j": "p"}):
        f = tl.parse(renamed(src, names) if names else src)["f"]
        c = tl.cost(tl.grad(f, wrt="x"))
        assert (("n", 2),) not in monomials(c), str(c)
        seen.add(str(c))
        assert_cheap_gradient(f, "x")
    assert len(seen) == 1, seen


def test_T21_a_strided_read_beside_a_plain_one_has_a_linear_gradient():
    f = fn("T21")
    c = tl.cost(tl.grad(f, wrt="x"))
    assert c.degree() == 1 and (("m", 1), ("n", 1)) not in monomials(c), str(c)
    assert_cheap_gradient(f, ("x", "t"))
    g = tl.grad(f, wrt="x")
    for n, m in ((7, 3), (8, 4), (5, 6)):
        rng = np.random.default_rng(n)
        x, t = rng.standard_normal(n), rng.standard_normal(m)
        want = np.zeros(n)
        for i in range(m):
            if 2 * i < n:
                want[2 * i] = 2 * (x[2 * i] - t[i])
        check_close(g(x, t), want, "strided gradient", rtol=1e-13, atol=0)
        assert g.count_ops(x, t) <= c.evaluate(n=n, m=m)


def test_T22_convolution_gradient_loops_over_the_taps_whatever_they_are_called():
    src = CASES["T22"]["src"]
    seen = set()
    for names in ({}, {"a": "u", "b": "v"}, {"a": "s", "b": "e", "r": "z", "c": "y0"}):
        f = tl.parse(renamed(src, names) if names else src)["f"]
        c = tl.cost(tl.grad(f, wrt="img"))
        assert c.degree() == 2 and dominated(c, tl.cost(f)), str(c)
        seen.add(str(c))
    assert len(seen) == 1, seen
    assert_cheap_gradient(fn("T22"), ("img", "K"))


def test_T23_pooling_gradient_visits_each_pixel_once():
    f = fn("T23")
    c = tl.cost(tl.grad(f, wrt="img"))
    assert dominated(c, tl.Cost.symbol("h") * tl.Cost.symbol("w")
                     + tl.Cost.symbol("m") * tl.Cost.symbol("q")), str(c)
    assert_cheap_gradient(f, "img")
    g = tl.grad(f, wrt="img")
    rng = np.random.default_rng(9)
    img, T = rng.standard_normal((7, 6)), rng.standard_normal((3, 4))
    p = np.zeros((3, 4))
    p[:3, :3] = 0.25 * img[:6, :6].reshape(3, 2, 3, 2).sum(axis=(1, 3))
    want = np.zeros((7, 6))
    want[:6, :6] = np.kron(0.5 * (p - T)[:3, :3], np.ones((2, 2)))
    check_close(g(img, T), want, "pooling gradient", rtol=1e-13, atol=1e-15)
    assert g.count_ops(img, T) <= c.evaluate(h=7, w=6, m=3, q=4)


def test_T24_a_band_is_a_loop_bound_not_a_test():
    f = fn("T24")
    fwd = tl.cost(f)
    nb = tl.Cost.symbol("n") * tl.Cost.symbol("b")
    assert fwd.degree("n") == 1 and dominated(fwd, nb + tl.Cost.symbol("n")), str(fwd)
    for w in ("x", "d"):
        c = tl.cost(tl.grad(f, wrt=w))
        assert dominated(c, nb + tl.Cost.symbol("n")), (w, str(c))
    assert_cheap_gradient(f, ("x", "d", "A"))
    rng = np.random.default_rng(2)
    n, b = 40, 3
    A, x, d = rng.standard_normal((n, n)), rng.standard_normal(n), rng.standard_normal(b)
    band = np.zeros((n, n))
    for k in range(b):
        band += np.diag(np.full(n - k, d[k]), -k)
    y = (band * A) @ x
    check_close(f(A, x, d), float(y @ y), "banded product", rtol=1e-12, atol=0)
    # The instrumented loops visit the band only: far fewer than n^2 iterations.
    ops = f.count_ops(A, x, d)
    assert ops <= fwd.evaluate(n=n, b=b) and ops < n * n, (ops, str(fwd))


def test_a_literal_band_costs_linear_time():
    f = tl.parse("def f(A: f64[n, n], x: f64[n]) -> f64[n]:\n"
                 "    y[i] = sum[j]([i - j <= 2 and j - i <= 2] * A[i, j] * x[j])\n"
                 "    return y\n")["f"]
    c = tl.cost(f)
    assert c.degree() == 1, str(c)
    rng = np.random.default_rng(1)
    A, x = rng.standard_normal((30, 30)), rng.standard_normal(30)
    check_close(f(A, x), (np.triu(np.tril(A, 2), -2)) @ x, "banded product", rtol=1e-12, atol=0)
    assert f.count_ops(A, x) <= c.evaluate(n=30)


ROOT = pathlib.Path(__file__).resolve().parent.parent
CERTIFIED = ([(p.relative_to(ROOT).as_posix(), p.read_text())
              for p in sorted((ROOT / "examples").glob("*.tl"))
              + sorted((ROOT / "benchmarks" / "workloads").glob("*.tl"))]
             + [(f"suite:{k}", c["src"]) for k, c in CASES.items()])


@pytest.mark.parametrize("label,src", CERTIFIED, ids=[label for label, _ in CERTIFIED])
def test_the_cheap_gradient_certificate_holds(label, src):
    """For every scalar function and every choice of f64 parameters (each alone, and all
    together): cost(grad) <= 4 (cost(f) + |wrt|) with all sizes equal and with each size
    three times the others, and no monomial of cost(grad) above those of cost(f) + |wrt|."""
    mod = tl.parse(src)
    for name in mod.names:
        f = mod[name]
        prog = f.program
        if len(prog.outputs) != 1 or prog.shapes()[prog.outputs[0]][1]:
            continue
        params = [p.name for p in prog.params if p.elem == "f64"]
        choices = [(p,) for p in params] + ([tuple(params)] if len(params) > 1 else [])
        for wrt in choices:
            g = tl.cost(tl.grad(f, wrt=wrt))
            bound = tl.cost(f) + _elements(f, wrt)
            assert dominated(g, bound), (name, wrt, str(g), str(bound))
            sizes = prog.sizes()
            for n in (5, 20, 100, 1000):
                for big in [None] + sizes:
                    at = {s: 3 * n if s == big else n for s in sizes}
                    assert g.evaluate(**at) <= 4 * bound.evaluate(**at), \
                        (name, wrt, at, str(g), str(bound))


# ------------------------------------------------------------ shared factors, one pass per label
def _poly(**coefs) -> tl.Cost:
    """A cost polynomial from {"n": 12, "b*d": 6, ...}."""
    out = tl.Cost()
    for mono, c in coefs.items():
        term = tl.Cost.const(c)
        for s in mono.split("_"):
            term = term * tl.Cost.symbol(s)
        out = out + term
    return out


def at_most(c, bound, samples=(5, 20, 100, 1000)) -> bool:
    syms = sorted(set(c.symbols()) | set(bound.symbols()))
    for n in samples:
        for big in [None] + syms:
            sizes = {s: 7 * n if s == big else n for s in syms}
            if c.evaluate(**sizes) > bound.evaluate(**sizes):
                return False
    return True


def test_T25_the_cotangent_of_a_square_is_stored_once_and_read_at_two_shifts():
    """[i + 1 < n] * wt[i] * (x[i + 1] - x[i]) ** 2 used to give a gradient of four
    monomials (15 n, three times the forward); the cotangent of the square is now
    one statement read at i = k and i = k - 1."""
    f = fn("T25wdiff")
    g = tl.grad(f, wrt="x")
    stmts = {s.name: s for s in g.program.stmts}
    assert set(stmts) == {"out_part_bar", "x_bar"}
    assert len(stmts["x_bar"].body) == 2
    c = tl.cost(g)
    assert at_most(c, _poly(n=12)), str(c)
    assert at_most(tl.cost(tl.grad(f, wrt=("x", "wt"))), _poly(n=18))
    for n in (100, 1000):
        assert c.evaluate(n=n) <= 2.5 * tl.cost(f).evaluate(n=n)
    assert_cheap_gradient(f, ("x", "wt"))
    rng = np.random.default_rng(11)
    x, wt = rng.standard_normal(9), rng.standard_normal(9)
    d = np.diff(x)
    want = np.zeros(9)
    want[1:] += 2 * wt[:-1] * d
    want[:-1] -= 2 * wt[:-1] * d
    check_close(g(x, wt), want, "weighted difference gradient", rtol=1e-13, atol=1e-14)


def test_T26_graph_laplacian_gradient_keeps_the_certificate_for_any_edge_count():
    """The x-gradient used to multiply the cotangent 2 w[e] (x[src] - x[dst]) out into
    four scatter terms (20 e + v): the certificate failed once e > 3 v + 8.  Now the
    cotangent is stored once per edge and both label lists scatter it in one pass."""
    from tensorlang.loops import plan_program
    f = fn("T26graph")
    g = tl.grad(f, wrt=("x", "w"))
    c = tl.cost(g)
    assert at_most(c, _poly(e=18, v=1)), str(c)
    # the x-gradient alone reads no label of f everywhere (its scatters skip a bad one),
    # so it checks them as f does: one addition per label read, 2 e + 1 in all
    assert at_most(tl.cost(tl.grad(f, wrt="x")), _poly(e=13 + 2, v=1) + tl.Cost.const(1))
    fwd = tl.cost(f)
    for e, v in ((10, 1000), (1000, 10), (10 ** 6, 10)):
        assert c.evaluate(e=e, v=v) <= 4 * (fwd.evaluate(e=e, v=v) + v + e + 1), (e, v)
    plans = {sp.stmt.name: sp for sp in plan_program(g.optimized_program())}
    (one_pass,) = plans["x_bar"].passes
    assert len(one_pass) == 2
    assert_cheap_gradient(f, ("x", "w"))
    rng = np.random.default_rng(12)
    x, w = rng.standard_normal(6), rng.standard_normal(15)
    src, dst = rng.integers(0, 6, 15), rng.integers(0, 6, 15)
    diff = x[src] - x[dst]
    want = np.zeros(6)
    np.add.at(want, src, 2 * w * diff)
    np.add.at(want, dst, -2 * w * diff)
    gx, gw = g(x, w, src, dst)
    check_close(gx, want, "Laplacian gradient", rtol=1e-13, atol=1e-14)
    check_close(gw, diff ** 2, "edge weight gradient", rtol=1e-13, atol=0)


def test_T27_recommender_gradient_is_two_b_d_per_gathered_factor():
    """The adjoint of U[user[s], c] scatters a row per rating; its label and range
    checks ran once per (rating, column), 4 b d per factor and 10 b d in all against
    the forward's 2 b d (4.7 x at MovieLens-1M sizes).  Then they ran once per rating;
    now the label check statement before the adjoints has range-checked user and item,
    so the scatters test nothing (Stmt.checked_labels)."""
    from tensorlang.loops import plan_program
    f = fn("T27recsys")
    g = tl.grad(f, wrt=("U", "V"))
    c = tl.cost(g)
    # (+ 2 b + 1: the labels f reads are checked as f checks them, domain.py)
    assert at_most(c, _poly(b_d=6, d_m=1, d_p=1, b=4 + 2) + tl.Cost.const(1)), str(c)
    ml = dict(b=1_000_209, m=6040, p=3706, d=32)
    assert c.evaluate(**ml) <= 3 * tl.cost(f).evaluate(**ml)
    for sp in plan_program(g.optimized_program()):
        for tp in sp.scatter_terms:
            assert tp.stage == 1 and not tp.staged and not tp.filters, sp.stmt.name
    assert_cheap_gradient(f, ("U", "V"))
    rng = np.random.default_rng(13)
    U, V = rng.standard_normal((5, 3)), rng.standard_normal((4, 3))
    user, item, r = rng.integers(0, 5, 11), rng.integers(0, 4, 11), rng.standard_normal(11)
    e = (U[user] * V[item]).sum(axis=1) - r
    wu, wv = np.zeros_like(U), np.zeros_like(V)
    np.add.at(wu, user, e[:, None] * V[item])
    np.add.at(wv, item, e[:, None] * U[user])
    gu, gv = g(U, V, user, item, r)
    check_close(gu, wu, "U gradient", rtol=1e-13, atol=1e-14)
    check_close(gv, wv, "V gradient", rtol=1e-13, atol=1e-14)
    assert g.count_ops(U, V, user, item, r) == c.evaluate(m=5, p=4, b=11, d=3)


def test_T28_bilateral_filter_gradient_within_three_times_the_forward():
    f = fn("T28bilateral")
    fwd = tl.cost(f)
    for wrt in ("img", ("img", "ref", "s")):
        c = tl.cost(tl.grad(f, wrt=wrt))
        for n in (8, 100, 1000):
            assert c.evaluate(h=n, w=n) <= 3 * fwd.evaluate(h=n, w=n), (wrt, str(c))
    assert_cheap_gradient(f, ("img", "ref", "s"))


def test_a_cotangent_stays_multiplied_out_where_that_is_cheaper():
    """Stored, the cotangent of (X[i, a] - X[j, a]) ** 2 has N^2 * 3 elements, while
    multiplied out, X[k, a] leaves the sum over the other point: reverse mode keeps
    whichever simplifies to the cheaper gradient."""
    f = tl.load(ROOT / "benchmarks" / "workloads" / "w09_pairwise.tl").stress
    g = tl.grad(f, wrt="X")
    assert not any(s.name.endswith("_part_bar") for s in g.program.stmts)
    assert at_most(tl.cost(g), _poly(N_N=39, N=23)), str(tl.cost(g))


def test_a_shared_product_of_builtins_is_evaluated_once():
    """The chain rule through 1 / (1 + tanh(x y) ** 2) multiplied the rest of the term
    into both monomials of tanh' = 1 - tanh ** 2 (61 n against 60 n + 8); factored into
    a statement, the gradient kept the certificate.  tanh' is now the one factor
    tanh_slope(tanh(x y)), read from the stored tanh: 38 n, and nothing to factor."""
    import warnings
    f = tl.parse("def f(x: f64[n], y: f64[n], w: f64[n]) -> f64:\n"
                 "    return sum[i](w[i] * exp(sin(x[i]) * y[i]) / (1.0 + tanh(x[i] * y[i]) ** 2))\n")["f"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", tl.TLCostWarning)
        g = tl.grad(f, wrt="x")
    assert str(tl.cost(g)) == "38*n", str(tl.cost(g))
    assert g.source.count("tanh(") == 1 and "tanh_slope(x_y_tanh[k])" in g.source, g.source
    rng = np.random.default_rng(14)
    x, y, w = rng.standard_normal(7), rng.standard_normal(7), rng.standard_normal(7)
    grad_matches_fd(f, ("x",), {"x": x, "y": y, "w": w}, rng)
    t = np.tanh(x * y)
    want = w * np.exp(np.sin(x) * y) * (np.cos(x) * y / (1 + t ** 2)
                                         - 2 * t * (1 - t ** 2) * y / (1 + t ** 2) ** 2)
    check_close(g(x, y, w), want, "factored gradient", rtol=1e-12, atol=1e-14)


def test_T31_a_bracketed_sum_times_a_builtin_shares_its_argument():
    """Parsing distributes ([i == 0] * a[i] + [i >= 1] * b[i]) * sigmoid(...); the
    argument of the sigmoid is named once for both brackets (which cover every i), so
    the derivatives read one stored argument (two, one per bracket, cost 37 n + 22), and
    store_repeated_calls stores its sigmoid once (30 n + 9 instead of 32 n + 15); the
    argument's adjoint reads the products a_bar and b_bar store under their brackets
    (simplify.reuse_stored_products: 28 n + 7).  The jvp: 30 n + 10, and 28 n + 11 with
    sigmoid' the one factor sigmoid_slope(sigmoid(..)) instead of two terms."""
    import warnings
    f = fn("T31bracketsig")
    with warnings.catch_warnings():
        warnings.simplefilter("error", tl.TLCostWarning)
        g = tl.grad(f, wrt=wrt_of("T31bracketsig"))
        j = tl.jvp(f, wrt=wrt_of("T31bracketsig"))
    for d in (g, j):
        # (y_arg_sigmoid, the stored sigmoid of the argument, is store_repeated_calls')
        args = [s for s in d.program.stmts if s.name.startswith("y_arg")
                and not s.name.endswith(("bar", "_sigmoid"))]
        assert len(args) == 1 and not args[0].body[0].pred, d.source
    n = tl.Cost.symbol("n")
    assert tl.cost(f) == n * 9 + 7
    assert tl.cost(g) == n * 28 + 7, str(tl.cost(g))
    assert tl.cost(j) == n * 28 + 11, str(tl.cost(j))
    rng = np.random.default_rng(15)
    inputs = {k: rng.standard_normal(6) for k in ("a", "b", "x", "w")}
    grad_matches_fd(f, ("a", "b", "x", "w"), inputs, rng)
    sig = 1 / (1 + np.exp(-(inputs["x"] * inputs["w"] + 1)))
    coef = np.where(np.arange(6) == 0, inputs["a"], inputs["b"])
    check_close(g(**inputs)[2], coef * sig * (1 - sig) * inputs["w"], "x_bar", rtol=1e-12,
                atol=1e-14)



def _counts(prog) -> list[str]:
    """The cost of prog under every choice of its first counted decision (costs.choosing)."""
    from tensorlang.costs import Choices, choosing, program_cost
    probe = Choices()
    with choosing(probe):
        program_cost(prog)
    out = []
    for k in range(probe.seen[0] if probe.seen else 1):
        with choosing(Choices((k,))):
            out.append(str(program_cost(prog)))
    return out


@pytest.mark.parametrize("src, fwd, model, box", [
    # x_bar[k: n] = [k >= 2 and k <= m + 1] * (...): the guard is tested at each of the n
    # elements, the work done at the m where it holds
    ("def f(x: f64[n], t: f64[m]) -> f64:\n"
     "    return sum[i]([i + 2 < n] * (x[i + 2] * t[i] - 1.0) ** 2)\n",
     "5*m + 1", "9*n", "6*m + 3*n"),
    ("def f(x: f64[n], w: f64[m]) -> f64:\n"
     "    return sum[i]([i + 2 < n] * w[i] * exp(x[i + 2]))\n",
     "4*m + 1", "7*n", "4*m + 3*n"),
])
def test_a_shifted_read_gradient_does_its_work_where_the_guard_holds(src, fwd, model, box):
    import warnings
    f = tl.parse(src)["f"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", tl.TLCostWarning)
        g = tl.grad(f, wrt="x")
    assert str(tl.cost(f)) == fwd
    assert _counts(g.program) == [model, box]     # the range (the model's) and the guard's box
    rng = np.random.default_rng(21)
    args = {"x": rng.standard_normal(9), f.program.params[1].name: rng.standard_normal(5)}
    grad_matches_fd(f, ("x",), args, rng)
    args[f.program.params[1].name] = rng.standard_normal(12)      # m + 2 > n: the box is cut
    grad_matches_fd(f, ("x",), args, rng)


def test_factoring_does_not_trade_a_product_of_sizes_for_a_square():
    """F * a + F * b -> F * h keeps only rewrites that gain no monomial: the jvp of a
    quadratic band form would otherwise store the symmetrised kernel A[j, p] + A[p, j]
    (k^2) to save a k m n term, cheaper with all sizes equal, not for a large kernel."""
    import warnings
    f = tl.parse("def f(A: f64[k, k], y: f64[m], z: f64[n]) -> f64:\n"
                 "    x[l: n] = z[l] * sum[j: k, p: k]([0 <= l - j < m and 0 <= l - p < m]\n"
                 "                                     * A[j, p] * y[l - j] * y[l - p])\n"
                 "    return sum[l](x[l])\n")["f"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", tl.TLCostWarning)
        j = tl.jvp(f, wrt="y")
    assert str(tl.cost(f)) == "4*k*m*n + 2*n + 1"
    assert str(tl.cost(j)) == "12*k*m*n + 4*n + 2"
    rng = np.random.default_rng(31)
    args = {"A": rng.standard_normal((3, 3)), "y": rng.standard_normal(4),
            "z": rng.standard_normal(6)}
    jvp_matches_fd(f, ("y",), args, rng)


def test_the_direct_jvp_of_a_max_pooling_is_certified_size_by_size():
    """Each tangent statement of a 2x2 max pooling (one nested max) does its work where
    [2 i + 1 < h and 2 j + 1 < w] holds: over the m q pooled pixels (the range) or
    about h w / 4 (the guard's box), whichever is less.  No one count is least at every
    sampled size (h small, m large; h large, m small), but at each size one of them keeps
    the bound, and every count is an upper bound at every size."""
    import warnings
    from tensorlang.certificate import bounds_for, check
    f = tl.parse("def mp(img: f64[h, w], T: f64[m, q]) -> f64:\n"
                 "    p[i: m, j: q] = [2 * i + 1 < h and 2 * j + 1 < w] * max(\n"
                 "        max(img[2 * i, 2 * j], img[2 * i + 1, 2 * j]),\n"
                 "        max(img[2 * i, 2 * j + 1], img[2 * i + 1, 2 * j + 1]))\n"
                 "    return sum[i, j]((p[i, j] - T[i, j]) ** 2)\n")["mp"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", tl.TLCostWarning)
        j = tl.jvp(f, wrt="img")
    assert str(tl.cost(f)) == "17*m*q + 1"
    assert str(tl.cost(j)) == "70*m*q + 2"           # the model counts the range
    # the model's count alone misses the bound where h is small and m large
    bound, reference, _ = bounds_for("jvp", f.optimized_program(), ("img",))
    assert tl.cost(j).evaluate(h=8, w=256, m=256, q=256) > bound.evaluate(h=8, w=256, m=256,
                                                                          q=256)
    assert check("jvp", j.program, bound, reference) is None
    rng = np.random.default_rng(23)
    args = {"img": rng.standard_normal((6, 8)), "T": rng.standard_normal((3, 4))}
    jvp_matches_fd(f, ("img",), args, rng)


def test_a_strided_guard_on_an_output_index_bounds_its_work():
    """P_bar[k: T, l: a] = sum[m]([2 k < n] Q[2 k, m] W[m, l]): the guard leaves about
    n / 2 of the T rows, where the forward's sum runs; counted over them the gradient
    keeps the certificate at T large and n small as well."""
    import warnings
    f = tl.parse("def f(P: f64[T, a], Q: f64[n, b], W: f64[b, a]) -> f64:\n"
                 "    G[k, l] = sum[m: T]([2 * m < n] * P[m, l] * Q[2 * m, k])\n"
                 "    return sum[k, l](W[k, l] * G[k, l])\n")["f"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", tl.TLCostWarning)
        g = tl.grad(f, wrt="P")
    assert str(tl.cost(f)) == "a*b*n + 4*a*b + 1"
    assert _counts(g.program) == ["2*T*a*b + 2*T*a", "a*b*n + 2*T*a + a*b"]
    rng = np.random.default_rng(41)
    args = {"P": rng.standard_normal((6, 3)), "Q": rng.standard_normal((7, 2)),
            "W": rng.standard_normal((2, 3))}
    grad_matches_fd(f, ("P",), args, rng)


def test_an_argument_over_more_indices_than_the_function_holds_is_not_stored():
    """A segment softmax over an edge list: exp(e[k] - lz[v]) under [v == dst[k]]
    inside a sum over the edges, for every node v.  Naming that argument made an
    n x E statement (and its exp another) in every derivative, where the function
    holds n and E entries: 16 GB of memory at 20000 nodes and 100000 edges.  The
    gradient holds nothing larger than the function does."""
    import math
    import warnings
    f = tl.parse("def f(e: f64[E], V: f64[n, c], dst: i64[E], src: i64[E]) -> f64:\n"
                 "    lz[v: n] = logsumexp[k | dst[k] == v](e[k])\n"
                 "    out[v: n, o: c] = sum[k]([dst[k] == v] * exp(e[k] - lz[v]) * V[src[k], o])\n"
                 "    return sum[v, o](tanh(out[v, o]) ** 2)\n")["f"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", tl.TLCostWarning)
        g = tl.grad(f, wrt=("e", "V"))
    sizes = {"E": 1000, "n": 100, "c": 4}

    def count(dims):
        return math.prod(sizes[d] if isinstance(d, str) else d for d in dims)
    held = max(count(d) for d in [p.dims for p in g.program.params])
    assert all(count(s.dims) <= held for s in g.program.stmts), \
        [(s.name, s.dims) for s in g.program.stmts if count(s.dims) > held]
    rng = np.random.default_rng(7)
    n, E = 5, 12
    dst = np.concatenate([np.arange(n), rng.integers(0, n, E - n)])
    args = {"e": rng.standard_normal(E), "V": rng.standard_normal((n, 3)), "dst": dst,
            "src": rng.integers(0, n, E)}
    grad_matches_fd(f, ("e", "V"), args, rng)


def test_costs_are_compared_at_sizes_a_call_can_have():
    """Stacked valid convolutions: `a` over n - k + 1, the output over n - 2 k + 2.  At
    n = k (the model's point with all sizes equal) n - 2 k + 2 is below 1, no call's
    size; there a band of width k looked wider than the range n - 2 k + 2 clamped to 1,
    and the gradient was counted over the range, `2*(n - 2 * k + 2)*(n - k + 1)`, a
    square the kernel does not run.  The model compares at n = 2 k instead
    (costs.sample_points) and counts the band."""
    from tensorlang.costs import Cost, sample_points
    f = tl.parse("def f(x: f64[n], w: f64[k], g: f64[n - 2 * k + 2]) -> f64:\n"
                 "    a[i: n - k + 1] = x[i] ** 2\n"
                 "    return sum[i: n - 2 * k + 2, j](g[i] * w[j] * a[i + j])\n")["f"]
    g = tl.grad(f, wrt="x")
    c = tl.cost(g)
    assert c.degree("n - k + 1") <= 1 and c.degree() == 2, str(c)
    assert c == Cost.symbol("k") * Cost.symbol("n - 2 * k + 2") * Cost.const(2) \
        + Cost.symbol("n") * Cost.const(5) + Cost.symbol("n - k + 1"), str(c)
    points = sample_points(["n - 2 * k + 2", "n - k + 1"])
    assert all(p["n - 2 * k + 2"] >= 1 and p["n"] - 2 * p["k"] + 2 == p["n - 2 * k + 2"]
               for p in points), points
