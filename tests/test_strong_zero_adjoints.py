"""A false bracket is a strong zero in derivatives too.

`sum[i, j]([i < j] * r[i, j])` never reads r on the diagonal, so its derivative owes
nothing to r there, even where r's own partials are inf or NaN (sqrt' at 0, 1 / y at
y = 0, log' at 0).  Reverse mode stores r's adjoint, 0.0 outside [k < l], and the
chain rule multiplies it by those partials: 0 * inf is NaN.  The adjoint is now read
under the brackets outside which it is zero (reverse.cotangent_support), so the
product is a strong zero again.  Each case checks the gradient against its closed
form on both backends, and that the jvp, the hvp and the Hessian are finite and agree
with differences of the gradient.
"""
import warnings

import numpy as np
import pytest

import tensorlang as tl
from tensorlang.builtins import BUILTINS

# sum over pairs i < j of |x_i - x_j|, through a square root that is 0 on the diagonal
PAIRS = """
def f(x: f64[n]) -> f64:
    r[i, j] = sqrt((x[i] - x[j]) ** 2)
    return sum[i, j]([i < j] * r[i, j])
"""

# a ratio read only where its divisor is not the zero it holds at i = 0
RATIO = """
def f(x: f64[n], y: f64[n]) -> f64:
    q[i] = x[i] / y[i] + log(y[i])
    return sum[i]([i >= 1] * q[i] ** 2)
"""


def pairs_grad(x):
    return np.array([np.sum(np.sign(x[k] - x)) for k in range(len(x))])


def ratio_grads(x, y):
    with np.errstate(divide="ignore", invalid="ignore"):
        return _ratio_grads(x, y)


def _ratio_grads(x, y):
    q = x / y + np.log(y)
    q[0] = 0.0
    gx = 2 * q / y
    gy = 2 * q * (-x / y ** 2 + 1 / y)
    gx[0] = gy[0] = 0.0
    return gx, gy


def quiet(derive, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tl.TLCostWarning)
        return derive(*args, **kw)


@pytest.mark.parametrize("optimize", [True, False])
def test_the_pair_sum_has_the_gradient_of_its_absolute_values(optimize):
    f = tl.parse(PAIRS)["f"]
    x = np.array([0.0, 1.0, 3.0, -2.0])
    g = quiet(tl.grad, f, wrt="x", optimize=optimize)
    np.testing.assert_allclose(g(x=x), pairs_grad(x), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(g.compile("numba")(x=x), pairs_grad(x), rtol=1e-12, atol=1e-12)


def test_the_ratio_has_finite_derivatives_where_its_divisor_is_zero():
    f = tl.parse(RATIO)["f"]
    rng = np.random.default_rng(5)
    x = rng.standard_normal(5)
    y = np.abs(rng.standard_normal(5)) + 0.5
    y[0] = 0.0
    assert np.isfinite(f(x=x, y=y))
    g = quiet(tl.grad, f, wrt=("x", "y"))
    want = ratio_grads(x, y)
    for got in (g(x=x, y=y), g.compile("numba")(x=x, y=y)):
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("src, wrt", [(PAIRS, "x"), (RATIO, "x"), (RATIO, "y")])
def test_second_derivatives_are_finite_and_match_differences(src, wrt):
    f = tl.parse(src)["f"]
    rng = np.random.default_rng(6)
    args = {"x": np.array([0.0, 1.0, 3.0, -2.0])}
    if "y" in src.split("->")[0]:
        args = {"x": rng.standard_normal(4), "y": np.abs(rng.standard_normal(4)) + 0.5}
        args["y"][0] = 0.0
    grad = quiet(tl.grad, f, wrt=wrt)
    H = quiet(tl.hessian, f, wrt=wrt)(**args)
    assert np.all(np.isfinite(H))
    eps = 1e-6
    cols = []
    for e in np.eye(len(args[wrt])):
        up = dict(args, **{wrt: args[wrt] + eps * e})
        down = dict(args, **{wrt: args[wrt] - eps * e})
        if wrt == "y":
            up[wrt][0] = down[wrt][0] = 0.0       # the divisor's zero stays where it is
        cols.append((grad(**up) - grad(**down)) / (2 * eps))
    fd = np.array(cols).T
    if wrt == "y":
        fd[:, 0] = fd[0, :] = 0.0
    np.testing.assert_allclose(H, fd, rtol=1e-5, atol=1e-5)
    d = rng.standard_normal(len(args[wrt]))
    hvp = quiet(tl.hvp, f, wrt=wrt)(**args, **{f"d_{wrt}": d})
    assert np.all(np.isfinite(hvp))
    np.testing.assert_allclose(hvp, H @ d, rtol=1e-9, atol=1e-9)
    value, tangent = quiet(tl.jvp, f, wrt=wrt)(**args, **{f"d_{wrt}": d})
    assert value == f(**args)
    np.testing.assert_allclose(tangent, grad(**args) @ d, rtol=1e-9, atol=1e-9)


def test_a_cotangent_without_such_brackets_is_read_as_it_is():
    """Only an adjoint with a support bracket, read by a body whose partials may be
    singular, gains the bracket: a polynomial's adjoints are unchanged."""
    f = tl.parse("""
def f(x: f64[n]) -> f64:
    r[i, j] = (x[i] - x[j]) ** 2
    return sum[i, j]([i < j] * r[i, j])
""")["f"]
    g = quiet(tl.grad, f, wrt="x", optimize=False)
    r_arg_lines = [line for line in g.source.splitlines() if line.lstrip().startswith("x_bar")]
    assert r_arg_lines and "l - m <= -1" not in r_arg_lines[0], g.source


@pytest.mark.parametrize("name", sorted(n for n, b in BUILTINS.items() if b.bounded_slope))
def test_a_builtin_said_to_have_a_bounded_slope_has_one(name):
    """Builtin.bounded_slope lets reverse mode leave a zero adjoint unguarded: the
    gradient of such a builtin is finite at zero, at huge arguments and at the
    largest finite float."""
    call = f"{name}(x[i], 0.5)" if BUILTINS[name].arity == 2 else f"{name}(x[i])"
    f = tl.parse(f"def f(x: f64[n]) -> f64:\n    return sum[i]({call})\n")["f"]
    x = np.array([0.0, -0.0, 1e300, -1e300, np.finfo(float).max, -np.finfo(float).max, 0.5])
    with np.errstate(all="ignore"):
        assert np.all(np.isfinite(quiet(tl.grad, f, wrt="x")(x=x)))


@pytest.mark.parametrize("name", ["sqrt", "log", "exp"])
def test_a_builtin_without_a_bounded_slope_is_not_said_to_have_one(name):
    assert not BUILTINS[name].bounded_slope
    f = tl.parse(f"def f(x: f64[n]) -> f64:\n    return sum[i]({name}(x[i]))\n")["f"]
    x = np.array([0.0, 1000.0])
    with np.errstate(all="ignore"):
        assert not np.all(np.isfinite(quiet(tl.grad, f, wrt="x")(x=x)))


@pytest.mark.parametrize("name", sorted(n for n, b in BUILTINS.items() if b.slope_overflows_only))
def test_a_builtin_whose_slope_only_overflows_has_a_finite_one_where_its_value_is(name):
    """Builtin.slope_overflows_only: the gradient is finite at every argument where the
    value is (so a label bracket need not guard its zero adjoints at finite points), and
    the builtin is not also said to have a bounded slope."""
    assert not BUILTINS[name].bounded_slope
    f = tl.parse(f"def f(x: f64[n]) -> f64:\n    return sum[i]({name}(x[i]))\n")["f"]
    x = np.array([0.0, -0.0, -1e300, -700.0, 700.0, 1.0, -np.finfo(float).max])
    with np.errstate(all="ignore"):
        value = BUILTINS[name].numpy(x)
    assert np.all(np.isfinite(value))
    with np.errstate(all="ignore"):
        assert np.all(np.isfinite(quiet(tl.grad, f, wrt="x")(x=x)))


def test_a_label_bracket_is_not_put_on_reads_whose_partials_only_overflow():
    """exp' is inf only where exp overflows: the adjoint of e = exp(...), read under
    label brackets only, is read as it is (a label read per element would be the
    cost), where log's is read under them."""
    src = """
def f(x: f64[n], c: i64[n]) -> f64:
    e[i] = FN(x[i])
    return sum[i]([c[i] == 0] * e[i]) + sum[i]([c[i] == 1] * e[i])
"""
    f = tl.parse(src.replace("FN", "log"))["f"]
    g = quiet(tl.grad, f, wrt="x", optimize=False)
    x_bar = [line for line in g.source.splitlines() if line.lstrip().startswith("x_bar")]
    assert x_bar and "c[" in x_bar[0], g.source
    f = tl.parse(src.replace("FN", "exp"))["f"]
    g = quiet(tl.grad, f, wrt="x", optimize=False)
    x_bar = [line for line in g.source.splitlines() if line.lstrip().startswith("x_bar")]
    assert x_bar and "c[" not in x_bar[0], g.source


# x ** k and log(x) are read only where a label or a value bracket holds; at x = 0,
# outside it, their derivatives in k and x are 0 * -inf and 1 / 0
UNDER_LABELS_AND_VALUES = {
    "label": """
def f(x: f64[n], c: i64[n], k: f64) -> f64:
    s[i] = x[i] ** k + k * log(x[i])
    return sum[i]([c[i] == 0] * s[i])
""",
    "value": """
def f(x: f64[n], c: i64[n], k: f64) -> f64:
    s[i] = x[i] ** k + k * log(x[i])
    return sum[i]([x[i] > 0.0] * s[i])
""",
    # the adjoint of a maximum's entries is read under its tie indicator
    "tie": """
def f(x: f64[n], c: i64[n], k: f64) -> f64:
    s[i] = x[i] ** k + k * log(x[i])
    return max[i](s[i])
""",
}


@pytest.mark.parametrize("optimize", [True, False])
@pytest.mark.parametrize("kind", sorted(UNDER_LABELS_AND_VALUES))
def test_label_and_value_brackets_are_strong_zeros_in_derivatives(kind, optimize):
    """The gradients in k and x match their closed forms, which owe nothing to x[0] = 0,
    on both backends; the second derivative in k is finite and matches differences of
    the gradient."""
    f = tl.parse(UNDER_LABELS_AND_VALUES[kind], filename=f"{kind}.tl")["f"]
    x, c, k = np.array([0.0, 2.0, 0.5]), np.array([1, 0, 0]), 1.5
    live = np.array([False, True, kind != "tie"])          # the tie: x[1] alone
    gk = np.sum((x[live] ** k * np.log(x[live]) + np.log(x[live])))
    gx = np.zeros(3)
    gx[live] = k * x[live] ** (k - 1) + k / x[live]
    g = quiet(tl.grad, f, wrt=("k", "x"), optimize=optimize)
    for got in (g(x=x, c=c, k=k), g.compile("numba")(x=x, c=c, k=k)):
        np.testing.assert_allclose(got[0], gk, rtol=1e-12)
        np.testing.assert_allclose(got[1], gx, rtol=1e-12, atol=1e-12)
    hk = quiet(tl.hessian, f, wrt="k", optimize=optimize)(x=x, c=c, k=k)
    gk_at = quiet(tl.grad, f, wrt="k")
    eps = 1e-6
    fd = (gk_at(x=x, c=c, k=k + eps) - gk_at(x=x, c=c, k=k - eps)) / (2 * eps)
    assert np.isfinite(hk) and np.isclose(hk, fd, rtol=1e-6), (hk, fd)


@pytest.mark.parametrize("src, guarded", [
    # read under [c == 0] by one term and [c == 1] by another: the adjoint is zero
    # where both fail, and is read under their disjunction
    ("""
def f(x: f64[n], c: i64[n]) -> f64:
    s[i] = sqrt(x[i])
    return sum[i]([c[i] == 0] * s[i] + [c[i] == 1] * s[i] ** 2)
""", True),
    # a Huber loss's two branches, [s <= 1] and [s > 1]: one of them holds everywhere
    ("""
def f(x: f64[n], c: i64[n]) -> f64:
    s[i] = sqrt(x[i])
    return sum[i]([s[i] <= 1.0] * s[i] ** 2 + [s[i] > 1.0] * (2.0 * s[i] - 1.0))
""", False),
    # index brackets alone: a first element and the rest cover every element
    ("""
def f(x: f64[n], c: i64[n]) -> f64:
    s[i] = sqrt(x[i])
    return sum[i]([i == 0] * s[i] + [i >= 1] * s[i] ** 2)
""", False),
])
def test_an_adjoint_is_read_under_a_disjunction_only_where_it_can_fail(src, guarded):
    """cotangent_support gives a disjunction of its terms' brackets only when each
    alternative holds a label or value bracket and no two complement each other; the
    labelled gradient is its closed form, 0 at x[0] = 0 where no term reads s (sqrt' is
    inf there), 1 at the others (s ** 2 = x, and sqrt(x)' = 1 at x = 0.25)."""
    f = tl.parse(src)["f"]
    g = quiet(tl.grad, f, wrt="x", optimize=False)
    reads = [line for line in g.source.splitlines() if line.lstrip().startswith("x_bar")]
    assert reads and (" or " in reads[0]) == guarded, g.source
    if guarded:
        x, c = np.array([0.0, 4.0, 0.25]), np.array([2, 1, 0])
        for optimize in (True, False):
            got = quiet(tl.grad, f, wrt="x", optimize=optimize)(x=x, c=c)
            np.testing.assert_allclose(got, [0.0, 1.0, 1.0], rtol=1e-12)
