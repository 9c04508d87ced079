"""Every record of the builtin table, checked on its own; a new record is tested automatically.

For each builtin: each partial derivative against central finite differences
of its NumPy implementation, at points of its domain and on both sides of its
kinks, through reverse mode with the call stored in a statement (the rule
reads the stored output) and inline (the rule recomputes it), and through
forward mode; the documented partials at the kinks themselves; the dot-product
identity and second derivatives; the NumPy and Numba backends on values and
derivatives, special values included; the parser's arity; the cost weight;
the docs.  A few composite expressions are checked the same way.
"""
import dataclasses
import pathlib

import numpy as np
import pytest

import tensorlang as tl
from tensorlang.costs import forget_cached_costs
from derivcheck import check_close, dot_product_identity, grad_matches_fd
from tensorlang.builtins import BUILTINS

ARGS = ("x", "y")
STEP = 1e-6           # central difference step
KINK_SIDE = 1e-3      # distance from a kink of the points on either side of it
SPECIALS = np.array([0.0, -0.0, 40.0, -40.0, 800.0, -800.0, np.inf, -np.inf, np.nan])

NAMES = list(BUILTINS)
SMOOTH = [name for name in NAMES if not BUILTINS[name].kinks]
WITH_KINKS = [name for name in NAMES if BUILTINS[name].kinks]


# ------------------------------------------------------------ programs and points
def arg_names(b) -> tuple:
    return ARGS[:b.arity]


def call_text(b) -> str:
    return f"{b.name}({', '.join(f'{a}[i]' for a in arg_names(b))})"


def params_text(b) -> str:
    return ", ".join(f"{a}: f64[n]" for a in arg_names(b))


def stored_call(b):
    """The call is a statement's whole body, so derivatives read its output."""
    return tl.parse(f"def f({params_text(b)}) -> f64[n]:\n"
                    f"    r[i] = {call_text(b)}\n    return r\n")["f"]


def reduced_call(b):
    """The call inside a weighted sum, so derivatives recompute its output."""
    return tl.parse(f"def f({params_text(b)}, w: f64[n]) -> f64:\n"
                    f"    return sum[i](w[i] * {call_text(b)})\n")["f"]


def domain_points(b, n=6, seed=0) -> list:
    rng = np.random.default_rng(seed)
    lo, hi = b.domain
    return [rng.uniform(lo, hi, n) for _ in range(b.arity)]


def kink_sides(b) -> list:
    """Points on both sides of every kink, moving one argument at a time."""
    columns = [[] for _ in range(b.arity)]
    for kink in b.kinks:
        for k in range(b.arity):
            for side in (-KINK_SIDE, KINK_SIDE):
                for j in range(b.arity):
                    columns[j].append(kink.at[j] + (side if j == k else 0.0))
    return [np.array(c) for c in columns]


def sample_points(b) -> list:
    sides = kink_sides(b)
    return [np.concatenate([d] + ([sides[k]] if b.kinks else []))
            for k, d in enumerate(domain_points(b))]


def fd_partials(b, points) -> list:
    """Central differences of the NumPy implementation, one array per argument."""
    out = []
    for k in range(b.arity):
        plus = [p + (STEP if j == k else 0.0) for j, p in enumerate(points)]
        minus = [p - (STEP if j == k else 0.0) for j, p in enumerate(points)]
        out.append((b.numpy(*plus) - b.numpy(*minus)) / (2 * STEP))
    return out


def as_tuple(v) -> tuple:
    return v if isinstance(v, tuple) else (v,)


def reverse_stored(b, points, optimize) -> list:
    f = stored_call(b)
    ones = np.ones_like(points[0])
    return list(as_tuple(tl.vjp(f, wrt=arg_names(b), optimize=optimize)(*points, ones)))


def reverse_reduced(b, points, optimize) -> list:
    f = reduced_call(b)
    ones = np.ones_like(points[0])
    return list(as_tuple(tl.grad(f, wrt=arg_names(b), optimize=optimize)(*points, ones)))


def forward_stored(b, points, optimize) -> list:
    j = tl.jvp(stored_call(b), wrt=arg_names(b), optimize=optimize)
    out = []
    for k in range(b.arity):
        tangents = [np.full_like(p, 1.0 if j == k else 0.0) for j, p in enumerate(points)]
        out.append(j(*points, *tangents)[1])
    return out


MODES = {"reverse, stored": reverse_stored, "reverse, inline": reverse_reduced,
         "forward, stored": forward_stored}


# ------------------------------------------------------------ derivatives
@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("name", NAMES)
def test_partials_match_finite_differences(name, mode):
    b = BUILTINS[name]
    points = sample_points(b)
    want = fd_partials(b, points)
    for optimize in (True, False):
        got = MODES[mode](b, points, optimize)
        for k, (g, w) in enumerate(zip(got, want)):
            check_close(g, w, f"d{name}/d{ARGS[k]} ({mode}, optimize={optimize})",
                        rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("name", WITH_KINKS)
def test_partials_at_kinks_follow_the_convention(name, mode):
    b = BUILTINS[name]
    points = [np.array([k.at[j] for k in b.kinks]) for j in range(b.arity)]
    for optimize in (True, False):
        got = MODES[mode](b, points, optimize)
        for j in range(b.arity):
            want = [k.partials[j] for k in b.kinks]
            check_close(got[j], want, f"d{name}/d{ARGS[j]} at its kinks ({mode})",
                        rtol=0, atol=0)


@pytest.mark.parametrize("name", NAMES)
def test_vjp_and_jvp_agree(name):
    b = BUILTINS[name]
    inputs = dict(zip(arg_names(b), domain_points(b, seed=3)))
    inputs["w"] = np.random.default_rng(4).standard_normal(len(inputs["x"]))
    dot_product_identity(reduced_call(b), arg_names(b) + ("w",), inputs,
                         np.random.default_rng(5))


def finite_difference_hessian(f, inputs) -> np.ndarray:
    g = tl.grad(f, wrt="x")
    n = len(inputs["x"])
    fd = np.zeros((n, n))
    for k in range(n):
        plus, minus = dict(inputs), dict(inputs)
        plus["x"] = inputs["x"] + STEP * np.eye(n)[k]
        minus["x"] = inputs["x"] - STEP * np.eye(n)[k]
        fd[:, k] = (g(**plus) - g(**minus)) / (2 * STEP)
    return fd


def check_hessian(f, inputs, what):
    H = tl.hessian(f, wrt="x")(**inputs)
    check_close(H, finite_difference_hessian(f, inputs), f"Hessian of {what}",
                rtol=1e-5, atol=1e-6)
    check_close(H, H.T, f"symmetry of the Hessian of {what}", rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("stored", [True, False], ids=["stored", "inline"])
@pytest.mark.parametrize("name", SMOOTH)
def test_second_derivatives(name, stored):
    b = BUILTINS[name]
    w = np.random.default_rng(6).standard_normal(6)
    inputs = dict(zip(arg_names(b), domain_points(b, seed=2)), w=w)
    if stored:
        src = (f"def f({params_text(b)}, w: f64[n]) -> f64:\n"
               f"    r[i] = {call_text(b)}\n    return sum[i](w[i] * r[i] * r[i])\n")
        check_hessian(tl.parse(src)["f"], inputs, f"{name} (stored)")
    else:
        check_hessian(reduced_call(b), inputs, name)


# ------------------------------------------------------------ backends
def special_points(b) -> list:
    """Domain points, kinks, and infinities, NaN, zeros and large values in every argument."""
    base = sample_points(b)
    kinks = [np.array([k.at[j] for k in b.kinks]) for j in range(b.arity)]
    specials = [np.roll(np.tile(SPECIALS, b.arity), j) for j in range(b.arity)]
    return [np.concatenate([base[j], kinks[j], specials[j]]) for j in range(b.arity)]


@pytest.mark.parametrize("name", NAMES)
def test_numpy_and_numba_agree(name):
    b = BUILTINS[name]
    j = tl.jvp(stored_call(b), wrt=arg_names(b))
    points = special_points(b)
    rng = np.random.default_rng(7)
    tangents = [rng.standard_normal(len(points[0])) for _ in points]
    with np.errstate(all="ignore"):
        want = j.compile("numpy")(*points, *tangents)
        got = j.compile("numba")(*points, *tangents)
    for what, g, w in zip(("value", "tangent"), got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=0, equal_nan=True,
                                   err_msg=f"{what} of {name}")


def test_a_generated_module_defines_only_the_helpers_it_calls():
    from tensorlang.backend.numba_backend import module_source
    helpers = {n: f"def tl_{n}(" for n, b in BUILTINS.items() if b.numba_helper}
    for name, b in BUILTINS.items():
        source = module_source(stored_call(b).optimized_program())
        defined = {n for n, text in helpers.items() if text in source}
        assert defined == ({name} if b.numba_helper else set()), (name, defined)


# ------------------------------------------------------------ front end, cost, docs
@pytest.mark.parametrize("name", NAMES)
def test_the_parser_accepts_exactly_the_arity(name):
    b = BUILTINS[name]
    stored_call(b)     # `arity` arguments: accepted

    def with_args(k):
        args = ", ".join("x[i]" for _ in range(k))
        return tl.parse(f"def f(x: f64[n]) -> f64[n]:\n    r[i] = {name}({args})\n    return r\n")
    for k in {b.arity - 1, b.arity + 1} - {0}:
        with pytest.raises(tl.TLCallError, match=f"{name} takes {b.arity} argument"):
            with_args(k)


@pytest.mark.parametrize("name", NAMES)
def test_cost_counts_the_weight_of_each_call(name, monkeypatch, request):
    # Statement costs are remembered; the changed weight must not outlive the test.
    request.addfinalizer(forget_cached_costs)
    b = BUILTINS[name]
    assert isinstance(b.cost, int) and b.cost > 0
    points = domain_points(b)
    f = stored_call(b)
    cost, ops = tl.cost(f), f.count_ops(*points)
    assert ops == cost.evaluate(n=len(points[0]))
    monkeypatch.setitem(BUILTINS, name, dataclasses.replace(b, cost=b.cost + 2))
    forget_cached_costs()
    assert tl.cost(f) - cost == 2 * tl.Cost.symbol("n")
    assert f.count_ops(*points) - ops == 2 * len(points[0])


def test_every_builtin_is_in_the_language_docs():
    docs = (pathlib.Path(__file__).parent.parent / "docs" / "language.md").read_text()
    table = docs.split("## Builtin functions", 1)[1].split("\n## ", 1)[0]
    for name, b in BUILTINS.items():
        assert f"`{name}(" in table, f"{name} is not in docs/language.md's builtin table"
        if b.convention:
            assert b.convention in table, f"{name}'s convention is not in the docs"


# ------------------------------------------------------------ composite expressions
COMPOSITES = {
    "power-constant": "x[i] ** 3",
    "power-fraction": "x[i] ** 1.5",
    "power-negative": "x[i] ** -2",
    "power-variable": "x[i] ** y[i]",
    "divide": "x[i] / (y[i] + x[i] * x[i])",
    "nested": "exp(sin(x[i]) * y[i]) / (1.0 + tanh(x[i] * y[i]) ** 2)",
    "softplus-of-erf": "softplus(3.0 * erf(x[i] * y[i]))",
}


def composite(expr: str):
    return tl.parse(f"def f(x: f64[n], y: f64[n], w: f64[n]) -> f64:\n"
                    f"    return sum[i](w[i] * {expr})\n")["f"]


def positive_inputs(seed=0, n=6):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.3, 1.3, n)
    y = rng.uniform(0.3, 1.3, n)
    return {"x": x, "y": y, "w": rng.standard_normal(n)}


@pytest.mark.parametrize("name", list(COMPOSITES))
def test_composite_matches_finite_differences(name):
    f = composite(COMPOSITES[name])
    rng = np.random.default_rng(1)
    inputs = positive_inputs()
    wrt = ["x", "y", "w"]
    grad_matches_fd(f, wrt, inputs, rng)
    grad_matches_fd(f, wrt, inputs, rng, optimize=False)
    dot_product_identity(f, wrt, inputs, rng)
    check_hessian(f, positive_inputs(seed=2), name)


def test_value_predicates_pass_through_with_zero_derivative():
    f = tl.parse("def f(x: f64[n]) -> f64:\n    return sum[i]([x[i] > 0.0] * x[i] ** 2)\n")["f"]
    x = np.array([-1.0, 2.0, -0.5, 3.0])
    assert np.array_equal(tl.grad(f, wrt="x")(x), np.where(x > 0, 2 * x, 0.0))


def test_derivatives_read_a_stored_output_instead_of_calling_again():
    f = tl.parse("def f(x: f64[n], w: f64[n]) -> f64:\n"
                 "    a[i] = tanh(x[i])\n    return sum[i](w[i] * a[i])\n")["f"]
    for optimize in (True, False):
        # (tanh' is tanh_slope of the stored value)
        for d in (tl.grad(f, optimize=optimize), tl.jvp(f, optimize=optimize)):
            assert d.source.count("tanh(") == 1 and "tanh_slope(a[" in d.source, d.source
