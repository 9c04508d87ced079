"""The order of a term's summed loops is chosen by cost, not by how they are written.

A guard that ties two summed indices bounds the loop of whichever runs inside by the
one outside.  In `sum[r, c]([C + 2 * R == 2 * c + 4 * r + 1 and 0 <= C - 2 * c <= 1]
...)` the band leaves c one value per output column and the strided equality then
leaves r one value, when c runs outside; with r outside, r runs its whole range and
the term costs h per output element.  The written order used to decide, so one of
two spellings of the same program (or a renaming that reorders the sums) cost an
extra power of the size.  Each case checks the cost polynomials of both spellings,
the values on both backends, and that the instrumented run stays within the count.
"""
import warnings

import numpy as np
import pytest

import tensorlang as tl
from tensorlang.loops import plan_program

# Y[2 r, 2 c + 1] = F[r, c]: an upsampling written as one equation in two summed indices
UPSAMPLE = """
def f(F: f64[h, w], t: f64[2 * h, 2 * w]) -> f64:
    Y[R: 2 * h, C: 2 * w] = sum[{order}]([C + 2 * R == 2 * c + 4 * r + 1 and 0 <= C - 2 * c <= 1] * F[r, c])
    return sum[R, C]((Y[R, C] - t[R, C]) ** 2)
"""

# Three summed indices, two of them tied to the third by bands of width 3:
# a 3 x 3 neighbourhood sum read at a position the outer index picks
NEIGHBOURS = """
def f(A: f64[n, n], v: f64[n], t: f64[m]) -> f64:
    y[i: m] = sum[{order}]([0 <= p - j <= 2 and 0 <= q - p <= 2 and j == 2 * i] * A[p, q] * v[j])
    return sum[i]((y[i] - t[i]) ** 2)
"""


def spell(src, order):
    return tl.parse(src.format(order=order))["f"]


def monomials(c) -> set:
    return {tuple(sorted(dict(m).items())) for m, coef in c.terms.items() if coef}


def quiet_grad(f, wrt):
    with warnings.catch_warnings():
        warnings.simplefilter("error", tl.TLCostWarning)
        return tl.grad(f, wrt=wrt)


@pytest.mark.parametrize("src, orders, wrt", [
    (UPSAMPLE, ("r, c", "c, r"), "F"),
    (NEIGHBOURS, ("j, p, q", "q, p, j", "p, q, j", "q, j, p"), "A"),
], ids=["upsample", "neighbours"])
def test_every_spelling_costs_the_same(src, orders, wrt):
    fs = [spell(src, o) for o in orders]
    assert len({str(tl.cost(f)) for f in fs}) == 1, [str(tl.cost(f)) for f in fs]
    assert len({str(tl.cost(quiet_grad(f, wrt))) for f in fs}) == 1


def test_the_upsampling_costs_its_output_not_its_output_times_a_side():
    for order in ("r, c", "c, r"):
        f = spell(UPSAMPLE, order)
        for c in (tl.cost(f), tl.cost(quiet_grad(f, "F"))):
            assert c.degree() == 2, str(c)


def test_the_cheaper_order_is_the_plan_the_kernels_run():
    f = spell(UPSAMPLE, "r, c")
    (y,) = [sp for sp in plan_program(f.optimized_program()) if sp.stmt.name == "Y"]
    (tp,) = y.gather_terms
    assert [lp.var for lp in tp.loops] == ["c", "r"]
    assert tp.term.sums == (("r", "h"), ("c", "w"))     # the term itself as written
    assert not tp.filters


@pytest.mark.parametrize("src, order, wrt, sizes", [
    (UPSAMPLE, "r, c", "F", dict(h=4, w=3)),
    (UPSAMPLE, "c, r", "F", dict(h=2, w=5)),
    (NEIGHBOURS, "j, p, q", "A", dict(n=9, m=4)),
    (NEIGHBOURS, "q, j, p", "v", dict(n=7, m=5)),
])
def test_values_counts_and_backends_agree(src, order, wrt, sizes):
    f = spell(src, order)
    g = quiet_grad(f, wrt)
    rng = np.random.default_rng(sum(sizes.values()))
    dims = dict(sizes)
    args = {p.name: rng.standard_normal(tuple(eval(d, {}, dims) if isinstance(d, str) else d
                                              for d in p.dims))
            for p in f.program.params}
    want = reference(src, **args)
    assert np.isclose(f(**args), want, rtol=1e-12)
    assert np.isclose(f.compile("numba")(**args), want, rtol=1e-12)
    assert np.allclose(g.compile("numba")(**args), g(**args), rtol=1e-12, atol=1e-12)
    assert f.count_ops(**args) <= tl.cost(f).evaluate(**sizes)
    assert g.count_ops(**args) <= tl.cost(g).evaluate(**sizes)


def reference(src, **args):
    if src is UPSAMPLE:
        F, t = args["F"], args["t"]
        Y = np.zeros_like(t)
        Y[0::2, 1::2] = F
        return float(np.sum((Y - t) ** 2))
    A, v, t = args["A"], args["v"], args["t"]
    n = len(v)
    y = np.zeros(len(t))
    for i in range(len(t)):
        j = 2 * i
        if j < n:
            y[i] = v[j] * sum(A[p, q] for p in range(j, min(j + 3, n))
                              for q in range(p, min(p + 3, n)))
    return float(np.sum((y - t) ** 2))
