"""The cheap-derivative certificate (tensorlang/certificate.py): checked on every
optimised derivative the API builds, a TLCostWarning naming the statement and
term when it fails, and a marked row in `tensorlang cost`."""
import re
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tensorlang as tl
from tensorlang.certificate import (bounds_for, check, sample_sizes, unbounded_monomial,
                                    violations_of)
from tensorlang.cli import main
from tensorlang.costs import Cost

QFORM = """
def qform(x: f64[n], A: f64[n, n]) -> f64:
    y[i] = sum[j](A[i, j] * x[j])
    return sum[i](x[i] * y[i])
"""


def poly(**terms) -> Cost:
    """Cost from keyword monomials: poly(n2=3, kn=1, c=5) = 3 n^2 + k n + 5."""
    out = Cost()
    for name, c in terms.items():
        term = Cost.const(c)
        if name != "c":
            for ch in name:
                if ch.isalpha():
                    term = term * Cost.symbol(ch)
                else:
                    for _ in range(int(ch) - 1):
                        term = term * Cost.symbol(name[name.index(ch) - 1])
        out = out + term
    return out


def no_cost_warning(make):
    with warnings.catch_warnings():
        warnings.simplefilter("error", tl.TLCostWarning)
        return make()


def test_monomial_rule_is_divisibility():
    assert poly(n2=1) == Cost.symbol("n") * Cost.symbol("n")
    bound = poly(kn=12, n=16, c=8)
    assert unbounded_monomial(poly(kn=3, n=5), bound) is None
    assert unbounded_monomial(poly(kn=3, n2=4, n=5), bound) == (("n", 2),)
    assert unbounded_monomial(poly(k=1), poly(kn=1)) is None     # k divides k*n
    assert unbounded_monomial(poly(c=7), poly(n=1)) is None


def test_a_derived_size_of_one_symbol_grows_as_that_symbol():
    """n + 1, n - 1 and n / 2 lie between constant multiples of n; n - k + 1 is its own
    size (it can be 1 while n and k grow), and a derived size never hides a higher
    power of its symbol."""
    S = Cost.symbol
    table = S("n + 1") * S("m + 1")
    assert unbounded_monomial(S("m") * S("n + 1") + S("n"), table) is None
    assert unbounded_monomial(S("n / 2") * S("m - 1"), S("n") * S("m")) is None
    assert unbounded_monomial(S("n") * S("n + 1"), table) == (("n", 1), ("n + 1", 1))
    assert unbounded_monomial(S("n") * S("k"), S("n - k + 1") * S("k")) == \
        (("k", 1), ("n", 1))


def test_a_cost_written_in_the_symbols_of_a_derived_size_is_compared_in_it():
    """n - 2 k + 2 ties n to k: a loop count in n and k that equals one in the derived
    size (the x-gradient of a dilated convolution, 2 k n - 4 k^2 + 4 k + n, is
    2 k (n - 2 k + 2) + (n - 2 k + 2) + 2 k - 2) grows no faster than the function's
    k (n - 2 k + 2); k n alone does (at n - 2 k + 2 = 1 it is about 2 k^2)."""
    S, C = Cost.symbol, Cost.const
    d = S("n - 2 * k + 2")
    forward = C(2) * S("k") * d + C(3) * d + C(1) + S("n")
    gradient = C(2) * S("k") * S("n") - C(4) * S("k") * S("k") + C(4) * S("k") + S("n")
    assert unbounded_monomial(gradient, forward) is None
    assert unbounded_monomial(S("k") * S("n") + S("k") * S("k"), forward) is not None
    f = tl.parse("def f(x: f64[n], w: f64[k], g: f64[n - 2 * k + 2]) -> f64:\n"
                 "    return sum[i: n - 2 * k + 2, t](g[i] * w[t] * x[i + 2 * t])\n")["f"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", tl.TLCostWarning)
        tl.grad(f, wrt="x")


def test_the_soft_edit_distance_gradient_is_certified():
    """Its table R[i: n + 1, j: m + 1] bounds adjoints over m * (n + 1) and (m + 1) * n."""
    f = tl.parse("def sed(x: f64[n], y: f64[m], g: f64) -> f64:\n"
                 "    R[i: n + 1, j: m + 1] = ([i == 0] * [j >= 1] * (R[i, j - 1] + 1.0)\n"
                 "        + [i >= 1] * [j == 0] * (R[i - 1, j] + 1.0)\n"
                 "        + [i >= 1] * [j >= 1] * -g * logsumexp[c: 3](-([c == 0] * (R[i - 1, j - 1]\n"
                 "            + (x[i - 1] - y[j - 1]) ** 2) + [c == 1] * (R[i - 1, j] + 1.0)\n"
                 "            + [c == 2] * (R[i, j - 1] + 1.0)) / g))\n"
                 "    return R[n, m]\n")["sed"]
    g = no_cost_warning(lambda: tl.grad(f, wrt=("x", "y", "g")))
    rng = np.random.default_rng(4)
    args = dict(x=rng.standard_normal(4), y=rng.standard_normal(5), g=0.7)
    from tests.derivcheck import grad_matches_fd
    grad_matches_fd(f, ("x", "y", "g"), args, rng)
    assert g is not None


def test_sizes_are_sampled_equal_and_skewed():
    samples = sample_sizes({"n", "k"})
    assert {"n": 8, "k": 8} in samples and {"n": 65536, "k": 65536} in samples
    assert {"n": 65536, "k": 8} in samples and {"n": 8, "k": 65536} in samples


def test_no_size_is_sampled_where_a_derived_size_is_below_one():
    """`n - k + 1` is no call's size at k = 65536, n = 8: there the cost of a filtered
    logsumexp over a correlation, `2 k (n - k + 1) - 5 k + 5 n + ...`, is negative,
    the bound with it, and every gradient of the program warned."""
    points = sample_sizes({"n", "k", "n - k + 1"})
    assert points and all(p["n"] >= p["k"] for p in points)
    f = tl.parse("""
def f(x: f64[n], w: f64[k]) -> f64:
    c[i: n - k + 1] = sum[j](w[j] * x[i + j])
    return logsumexp[i: n - k + 1 | i + k < n](c[i])
""")["f"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", tl.TLCostWarning)
        for wrt in ("x", "w", ("x", "w")):
            tl.grad(f, wrt=wrt)


def test_the_api_warns_naming_statement_and_term(monkeypatch):
    import tensorlang.certificate as certificate
    monkeypatch.setattr(certificate, "FACTOR", 1)      # a bound the quadratic form misses
    f = tl.parse(QFORM, "qform.tl")["qform"]
    with pytest.warns(tl.TLCostWarning) as caught:
        tl.grad(f, wrt="x")
    message = str(caught[0].message)
    # (x_bar has no span of its own: the warning is located at the return it comes from)
    assert message.startswith("qform.tl:4:12: warning: tl.grad(qform, wrt='x') costs 4*n^2")
    assert "1 * (cost(f) + |wrt| + |out|)" in message
    assert "most of it is statement x_bar[" in message and ", term " in message


@pytest.mark.parametrize("derive", [tl.grad, tl.vjp, tl.jvp])
def test_every_transform_locates_its_warning_in_the_source(derive, monkeypatch):
    """A warning names the source line of the statement responsible, or of the forward
    statement whose name it extends, or else of the function's last statement, so
    reverse mode's adjoints, which have no span of their own, are located too."""
    import tensorlang.certificate as certificate
    monkeypatch.setattr(certificate, "FACTOR", 1)
    f = tl.parse(QFORM, "qform.tl")["qform"]
    with pytest.warns(tl.TLCostWarning) as caught:
        derive(f, wrt="x")
    assert re.match(r"qform\.tl:[34]:\d+: warning: tl\.", str(caught[0].message)), \
        str(caught[0].message)


def test_a_made_up_expensive_derivative_is_reported():
    f = tl.parse(QFORM)["qform"]
    fwd = f.optimized_program()
    # the quadratic form's *naive* gradient has a cubic term: certified against the forward
    naive = tl.grad(f, wrt="x", optimize=False).program
    v = violations_of("grad", "qform", fwd, "x", naive)
    assert v is not None and v.monomial == (("n", 3),)
    assert "n^3" in v.message() and v.statement.split("[")[0] in {s.name for s in naive.stmts}
    assert v.render().startswith(("warning:", "<string>:"))
    # the optimised one passes
    assert violations_of("grad", "qform", fwd, "x", tl.grad(f, wrt="x").program) is None


def test_constant_factors_are_checked_at_sampled_sizes():
    bound = poly(n=4)
    v = check("d", tl.parse(QFORM)["qform"].optimized_program(), bound, poly(n2=1))
    assert v is not None and v.sizes is not None and v.monomial is None


@pytest.mark.parametrize("kind", ["grad", "vjp", "jvp", "hvp", "hessian", "value_and_grad"])
def test_the_quadratic_form_keeps_every_certificate(kind):
    f = tl.parse(QFORM)["qform"]
    no_cost_warning(lambda: getattr(tl, kind)(f, wrt="x"))


def test_dense_hessians_are_held_to_the_column_by_column_bound():
    f = tl.parse(QFORM)["qform"]
    fwd = f.optimized_program()
    grad_cost = tl.cost(tl.grad(f, wrt="x"))
    bound, reference, rule = bounds_for("hessian", fwd, ("x",), grad_cost)
    assert "|wrt|" in rule
    # n hvps of the O(n^2) gradient, plus the n^2 elements
    assert bound.degree("n") == 3 and reference.degree("n") == 3
    assert tl.cost(tl.hessian(f, wrt="x")).degree("n") == 2


def test_the_unoptimised_derivative_is_not_checked():
    f = tl.parse(QFORM)["qform"]
    no_cost_warning(lambda: tl.grad(f, wrt="x", optimize=False))


def test_cost_command_marks_the_row(tmp_path, capsys, monkeypatch):
    import tensorlang.certificate as certificate
    path = tmp_path / "qform.tl"
    path.write_text(QFORM)
    assert main(["cost", str(path), "--wrt", "x"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[-1] == "certificate" and lines[1].split()[-1] == "ok"
    monkeypatch.setattr(certificate, "FACTOR", 1)
    assert main(["cost", str(path), "--wrt", "x"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[1].split()[-1] == "EXCEEDED"
    assert "warning: tl.grad(qform, wrt='x')" in out


# ------------------------------------------------------------ property: realistic losses
# The `cheap` fuzzer's programs (tests/fuzz/cheap.py: stencils, correlations, strides,
# bands, three-factor products, gathers, random index names); `python -m tests.fuzz
# --only cheap` runs thousands, this runs a sample of them in the suite.
@settings(max_examples=150, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2 ** 31 - 1))
def test_realistic_losses_keep_the_certificate(seed):
    from fuzz.cheap import generate, inputs_for
    source, params = generate(seed)
    f = tl.parse(source, "cheap.tl")["f"]
    wrt = tuple(name for name, typ in params.items() if typ.startswith("f64"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", tl.TLCostWarning)
        g, j, v = tl.grad(f, wrt=wrt), tl.jvp(f, wrt=wrt), tl.vjp(f, wrt=wrt)
    args = inputs_for(params, seed)
    rng = np.random.default_rng(seed)
    dirs = [rng.standard_normal(np.shape(args[w])) for w in wrt]
    grads = g(**args)
    _, tangent = j(**args, **{f"d_{w}": d for w, d in zip(wrt, dirs)})
    bars = v(**args, d_out=1.0)
    lhs = sum(float(np.sum(b * d)) for b, d in zip(grads, dirs))
    assert np.isclose(lhs, tangent, rtol=1e-9, atol=1e-9)
    assert all(np.allclose(a, b, rtol=1e-12, atol=1e-12) for a, b in zip(grads, bars))
    # and the gradient is the derivative: central differences along the direction
    eps = 1e-6
    plus = dict(args, **{w: args[w] + eps * d for w, d in zip(wrt, dirs)})
    minus = dict(args, **{w: args[w] - eps * d for w, d in zip(wrt, dirs)})
    fd = (f(**plus) - f(**minus)) / (2 * eps)
    assert np.isclose(fd, lhs, rtol=1e-5, atol=1e-6)


DILATED = """
def conv1d_dilated(x: f64[n], w: f64[k]) -> f64:
    y[i: n] = sum[j]([i + 2 * j < n] * w[j] * x[i + 2 * j])
    return sum[i](y[i] ** 2)
"""


def test_a_loop_count_is_any_of_its_bounds():
    """The dense w-Hessian of a dilated correlation sums, per (l, m) in k x k, over the
    p < n - 2 l of a band: its polynomial counts those pairs as k n^2 / 2 (the cheaper
    with all sizes equal), which no monomial of the column-by-column bound allows,
    while k^2 n, the other bound on the same loop nest, keeps the certificate.  A
    bound that no combination of counts meets still fails."""
    from tensorlang.costs import program_cost
    f = tl.parse(DILATED)["conv1d_dilated"]
    h = no_cost_warning(lambda: tl.hessian(f, wrt="w"))
    d = h.program
    grad_cost = tl.cost(tl.grad(f, wrt="w"))
    bound, reference, _ = bounds_for("hessian", f.optimized_program(), ("w",), grad_cost)
    assert unbounded_monomial(program_cost(d), reference) is not None   # as counted
    assert check("h", d, bound, reference) is None                      # another count holds
    v = check("h", d, poly(kn=64, k2=64), poly(kn=1, k2=1))             # too small for any
    assert v is not None and v.monomial is not None


EDGE_PRODUCT = """
def pairs(w: f64[n], x: i64[b], y: i64[b]) -> f64:
    return sum[s](w[y[s]] * w[x[s]])
"""


@pytest.mark.parametrize("names", [("w", "x", "y", "s"), ("q", "src", "dst", "e")])
def test_a_scalar_functions_vjp_scales_its_gradient_when_that_keeps_the_certificate(names):
    """Seeded with d_out, each of w's two scatter sums multiplies by d_out per edge
    (10 b + n with the label checks, over the bound 8 b + 4 n + 8); the gradient
    seeded with 1 and scaled by d_out once per entry of w meets it.  The choice is
    by the certificate, whatever the names."""
    w, x, y, s = names
    src = EDGE_PRODUCT.replace("w[", f"{w}[").replace("w:", f"{w}:").replace(
        "x[", f"{x}[").replace("x:", f"{x}:").replace("y[", f"{y}[").replace(
        "y:", f"{y}:").replace("[s]", f"[{s}]").replace("sum[s]", f"sum[{s}]")
    f = tl.parse(src)["pairs"]
    vjp = no_cost_warning(lambda: tl.vjp(f, wrt=w))
    sizes = dict(b=10 ** 6, n=10)           # many edges, few nodes: d_out per edge shows
    assert tl.cost(vjp).evaluate(**sizes) <= 4 * (tl.cost(f).evaluate(**sizes) + 10 + 1)
    rng = np.random.default_rng(7)
    args = {w: rng.standard_normal(6), x: rng.integers(0, 6, 40), y: rng.integers(0, 6, 40)}
    grad = tl.grad(f, wrt=w)(**args)
    np.testing.assert_allclose(vjp(**args, d_out=-2.5), -2.5 * grad, rtol=1e-13)
    with pytest.raises(tl.TLError, match="out of range"):
        vjp(**{**args, x: np.full(40, 6)}, d_out=1.0)
