"""How the cost model counts a loop tied to the statement's generators.

A summed index bounded by a band around a generator (`x_bar[l: n] =
sum[j: k]([0 <= l - j < m] ...)`, the adjoint of a valid correlation of output
size m) runs at most k * m times over the whole statement, whatever n is: at
most m values of l meet each j.  Counting it as n times the band's width
(n * min(k, m)) gave the gradient a k*n monomial the function does not have,
and the certificate rejected it.  Bounds that move with a generator on one side
only (`[2 * i + l < m]`) leave, at the generator's extreme, a count in sizes
(i <= (m - 1) / 2) that the function's own count of the same loop nest uses.

Each case checks the cost, that the instrumented run stays within it at sizes
far from equal (the counts are upper bounds), and that the loop plans the
backend runs are unchanged.
"""
import warnings

import numpy as np
import pytest

import tensorlang as tl
from tensorlang.bounds import size_facts
from tensorlang.loops import plan_loops, plan_program

VALID = """
def f(x: f64[n], w: f64[k], t: f64[m]) -> f64:
    y[i: m] = sum[j]([i + j < n] * w[j] * x[i + j])
    return sum[i]((y[i] - t[i]) ** 2)
"""

STRIDED = """
def f(x: f64[n], w: f64[k], t: f64[m]) -> f64:
    y[i: m] = sum[j]([2 * i + j < n] * w[j] * x[2 * i + j])
    return sum[i]((y[i] - t[i]) ** 2)
"""

TRANSPOSED = """
def f(x: f64[n], w: f64[k], t: f64[m]) -> f64:
    y[l: m] = sum[i, j]([l == 2 * i + j] * w[j] * x[i])
    return sum[l]((y[l] - t[l]) ** 2)
"""

POOL = """
def f(img: f64[h, w], T: f64[m, q]) -> f64:
    p[i: m, j: q] = [2 * i + 1 < h and 2 * j + 1 < w] * 0.25 * (
        img[2 * i, 2 * j] + img[2 * i + 1, 2 * j] + img[2 * i, 2 * j + 1]
        + img[2 * i + 1, 2 * j + 1])
    return sum[i, j]((p[i, j] - T[i, j]) ** 2)
"""

VALID_2D = """
def f(K: f64[k, k], img: f64[h, w], T: f64[m, q]) -> f64:
    y[r: m, c: q] = sum[a, b]([r + a < h and c + b < w] * K[a, b] * img[r + a, c + b])
    return sum[r, c]((y[r, c] - T[r, c]) ** 2)
"""


def fn(src):
    return tl.parse(src)["f"]


def monomials(c) -> set:
    return {tuple(sorted(dict(m).items())) for m, coef in c.terms.items() if coef}


def grad(src, wrt):
    with warnings.catch_warnings():
        warnings.simplefilter("error", tl.TLCostWarning)
        return tl.grad(fn(src), wrt=wrt)


@pytest.mark.parametrize("src,wrt,absent", [
    (VALID, "x", ("k", "n")),
    (STRIDED, "x", ("m", "n")),
    (TRANSPOSED, "x", ("k", "n")),
    (TRANSPOSED, "w", ("k", "n")),
    (POOL, "img", ("h", "m")),
    (VALID_2D, "img", ("k", "m", "q", "w")),
], ids=["valid-x", "strided-x", "transposed-x", "transposed-w", "pool-img", "valid2d-img"])
def test_the_gradient_has_no_product_of_sizes_the_function_lacks(src, wrt, absent):
    c = tl.cost(grad(src, wrt))
    assert tuple((s, 1) for s in absent) not in monomials(c), str(c)


def test_a_valid_correlation_gradient_counts_the_band_pairs():
    # x_bar[l: n]: n writes, k * m multiply-adds (each tap meets m outputs)
    assert str(tl.cost(grad(VALID, "x"))) == "4*k*m + 6*m + n"


def test_a_function_and_its_adjoint_count_one_loop_nest_alike():
    """The transposed convolution's forward counts its band as k / 2 per output;
    both adjoints count the same loop nest so, neither takes n."""
    f = fn(TRANSPOSED)
    assert str(tl.cost(f)) == "k*m + 6*m + 1"
    assert str(tl.cost(grad(TRANSPOSED, "w"))) == "2*k*m + 2*k + 7*m"
    assert str(tl.cost(grad(TRANSPOSED, "x"))) == "2*k*m + 8*m + n"


CASES = [(VALID, "x", dict(n=30, k=3, m=4)), (VALID, "x", dict(n=5, k=4, m=9)),
         (VALID, "w", dict(n=30, k=3, m=4)),
         (STRIDED, "x", dict(n=31, k=3, m=4)), (STRIDED, "w", dict(n=9, k=5, m=12)),
         (TRANSPOSED, "x", dict(n=12, k=3, m=5)), (TRANSPOSED, "w", dict(n=3, k=4, m=20)),
         (POOL, "img", dict(h=20, w=9, m=2, q=3)), (POOL, "img", dict(h=5, w=4, m=6, q=5)),
         (VALID_2D, "img", dict(k=2, h=9, w=8, m=3, q=2))]


@pytest.mark.parametrize("src,wrt,sizes", CASES)
def test_the_instrumented_run_stays_within_the_count(src, wrt, sizes):
    f = fn(src)
    g = grad(src, wrt)
    rng = np.random.default_rng(sum(sizes.values()))
    args = {p.name: rng.standard_normal(tuple(sizes[d] if isinstance(d, str) else d
                                              for d in p.dims))
            for p in f.program.params}
    assert g.count_ops(**args) <= tl.cost(g).evaluate(**sizes), str(tl.cost(g))
    assert f.count_ops(**args) <= tl.cost(f).evaluate(**sizes), str(tl.cost(f))


@pytest.mark.parametrize("src,wrt", [(VALID, "x"), (STRIDED, "x"), (TRANSPOSED, "w"),
                                     (POOL, "img"), (VALID_2D, "img")])
def test_pair_counts_leave_the_loop_plans_alone(src, wrt):
    """Pairs and loose counts are for the cost model: the bounds the kernels run
    between, the widths, the filters and which terms scatter are those the
    guards give without them."""
    for prog in (fn(src).optimized_program(), grad(src, wrt).optimized_program()):
        base = size_facts(prog)
        for sp in plan_program(prog):
            s = sp.stmt
            facts = base.with_ranges(s.indices)
            for tp in sp.gather_terms:
                t = tp.term
                loops, filters = plan_loops(list(t.sums), list(t.pred), facts.with_ranges(t.sums))
                assert [(lp.var, lp.lo, lp.hi, lp.lows, lp.highs, lp.widths) for lp in loops] \
                    == [(lp.var, lp.lo, lp.hi, lp.lows, lp.highs, lp.widths) for lp in tp.loops]
                assert set(filters) == set(tp.filters) | set(tp.outer_filters)
                assert all(not lp.pairs and not lp.loose_pairs for lp in loops)


def test_the_valid_correlation_adjoint_runs_between_its_band_bounds():
    g = grad(VALID, "x").optimized_program()
    (x_bar,) = [sp for sp in plan_program(g) if sp.stmt.name == "x_bar"]
    (tp,) = x_bar.gather_terms
    (loop,) = tp.loops
    assert loop.pairs and not x_bar.scatter_terms
    assert loop.lows and loop.highs and not tp.filters


def test_a_band_pair_is_not_taken_when_the_generator_bounds_another_loop():
    """[0 <= l - j < m and 0 <= l - p < m]: l moves both loops, so neither may count
    its pairs with l in place of l's range."""
    src = """
def f(A: f64[k, k], y: f64[m], z: f64[n]) -> f64:
    x[l: n] = z[l] * sum[j: k, p: k]([0 <= l - j < m and 0 <= l - p < m]
                                     * A[j, p] * y[l - j] * y[l - p])
    return sum[l](x[l])
"""
    f = fn(src)
    prog = f.optimized_program()
    for sp in plan_program(prog):
        for tp in sp.gather_terms:
            for lp in tp.loops:
                assert not lp.pairs and not lp.loose_pairs, lp
    rng = np.random.default_rng(0)
    for k, m, n in ((3, 2, 9), (2, 5, 4)):
        args = dict(A=rng.standard_normal((k, k)), y=rng.standard_normal(m),
                    z=rng.standard_normal(n))
        assert f.count_ops(**args) <= tl.cost(f).evaluate(k=k, m=m, n=n)
