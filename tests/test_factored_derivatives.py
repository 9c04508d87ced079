"""Factored derivatives: stored tangents of compound factors (ad/forward.py), prefix and
suffix products (ad/chain.py, also tests/test_cost_regressions.py), and common factors
of terms with sums (opt/factor.py).  Values against finite differences and the
dot-product identity; costs against the certificate and against the written-out form."""
import warnings

import numpy as np
import pytest

import tensorlang as tl
from derivcheck import check_close, dot_product_identity, inputs_for, jvp_matches_fd

SQUARES = """
def f(u: f64[h, w], v: f64[h, w], th: f64[h, w]) -> f64:
    co[r, c] = cos(th[r, c])
    return sum[r, c]([c + 1 < w] * (u[r, c + 1] - u[r, c] - co[r, c]) ** 2) + sum[r, c]([r + 1 < h] * (v[r + 1, c] - v[r, c] + co[r, c] * u[r, c]) ** 2)
"""

SMOOTH = """
def f(img: f64[h, w], g: f64[h, w], s: f64) -> f64:
    return sum[r: h, c: w, a: 3, q: 3]([1 <= r + a < h + 1 and 1 <= c + q < w + 1] * exp(-s * (g[r + a - 1, c + q - 1] - g[r, c]) ** 2) * (img[r + a - 1, c + q - 1] - img[r, c]) ** 2)
"""


@pytest.fixture
def strict():
    with warnings.catch_warnings():
        warnings.simplefilter("error", tl.TLCostWarning)
        yield


@pytest.mark.parametrize("src", [SQUARES, SMOOTH], ids=["squares", "smooth"])
def test_jvp_of_squared_differences_stores_value_and_tangent(src, strict):
    """The tangent of (a - b - c) ** 2 is 2 * g * dg with g and dg stored, not nine
    monomials: the jvp with respect to every parameter keeps the certificate and is
    cheaper than the multiplied-out form."""
    f = tl.parse(src)["f"]
    wrt = tuple(p.name for p in f.program.params)
    j = tl.jvp(f, wrt=wrt)
    assert any("_part" in s.name for s in j.program.stmts), j.source
    bound = 4 * (tl.cost(f) + tl.Cost.symbol("h") * tl.Cost.symbol("w") * 3)
    for n in (8, 100, 1000):
        assert tl.cost(j).evaluate(h=n, w=n) <= bound.evaluate(h=n, w=n)
    rng = np.random.default_rng(4)
    inputs = inputs_for(f, size=5)
    jvp_matches_fd(f, wrt, inputs, rng)
    dot_product_identity(f, wrt, inputs, rng)


def test_terms_with_sums_share_their_common_factors():
    """sum[i, j](F * a) + sum[p, q](F * b) -> sum[i, j](F * h[i, j]): the sums are matched
    whatever they are called, and the result is the same."""
    src = """
def f(x: f64[n, k], y: f64[n, k], w: f64[n, k]) -> f64:
    return sum[i, j]([i + 1 < n] * w[i, j] * exp(y[i, j]) * x[i + 1, j]) + sum[p, q]([p + 1 < n] * w[p, q] * exp(y[p, q]) * x[p, q] ** 2)
"""
    f = tl.parse(src)["f"]
    prog = f.optimized_program()
    assert len(prog.stmts) == 2 and prog.stmts[0].name.endswith("_fac")
    (term,) = prog.stmts[1].body
    assert len(term.sums) == 2
    assert tl.cost(f).evaluate(n=100, k=100) < tl.cost(f, optimize=False).evaluate(n=100, k=100)
    renamed = tl.parse(src.replace("p, q", "b, a").replace("[p", "[b").replace("p + 1", "b + 1")
                       .replace(", q]", ", a]"))["f"]
    assert tl.cost(renamed) == tl.cost(f)
    rng = np.random.default_rng(9)
    x, y, w = (rng.standard_normal((5, 4)) for _ in range(3))
    want = np.sum(w[:-1] * np.exp(y[:-1]) * x[1:]) + np.sum(w[:-1] * np.exp(y[:-1]) * x[:-1] ** 2)
    check_close(f(x, y, w), want, "factored value", rtol=1e-12, atol=1e-12)


def test_a_factor_to_powers_of_both_signs_is_divided_out_of_its_own_sign():
    """The gradient of sum[i, c](((x[i] - m[c]) / exp(s[c])) ** 2) with respect to s has
    terms A * e / e ** 3 (e = exp(s[c]); powers of two signs are never merged).  Taking
    out the common factor e must leave A / e ** 3, not subtract e's power from e ** -3
    too (which gave A / e ** 4 and a wrong gradient)."""
    src = """
def f(x: f64[n], m: f64[k], s: f64[k]) -> f64:
    return sum[i, c](((x[i] - m[c]) / exp(s[c])) ** 2)
"""
    f = tl.parse(src)["f"]
    inputs = inputs_for(f, size=3)
    x, m, s = inputs["x"], inputs["m"], inputs["s"]
    want = -2.0 * np.sum((x[:, None] - m[None, :]) ** 2, axis=0) * np.exp(-2.0 * s)
    check_close(tl.grad(f, wrt="s")(**inputs), want, "gradient with respect to s",
                rtol=1e-10, atol=1e-12)
    check_close(tl.grad(f, wrt=("m", "s"))(**inputs)[1], want, "gradient with respect to m, s",
                rtol=1e-10, atol=1e-12)
