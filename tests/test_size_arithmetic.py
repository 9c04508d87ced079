"""Ranges from size arithmetic (LANGUAGE.md section 13): `y[i: n - k + 1]` for a valid
correlation, `p[i: n / 2]` for stride-2 pooling, exact division checked at call time."""
import warnings

import numpy as np
import pytest

import tensorlang as tl
from tensorlang import sizexpr
from tensorlang.costs import MissingSizeError, SizeValueError
from tensorlang.inputs import random_inputs

from derivcheck import dot_product_identity, grad_matches_fd, jvp_matches_fd

SOURCE = """
def corr(x: f64[n], w: f64[k]) -> f64[n - k + 1]:
    y[i: n - k + 1] = sum[j](w[j] * x[i + j])
    return y

def corr_loss(x: f64[n], w: f64[k]) -> f64:
    y[i: n - k + 1] = sum[j](w[j] * x[i + j])
    return sum[i](y[i] ** 2)

def avgpool(x: f64[n]) -> f64[n / 2]:
    p[i: n / 2] = 0.5 * (x[2 * i] + x[2 * i + 1])
    return p

def pool_loss(x: f64[n], t: f64[n / 2]) -> f64:
    p[i: n / 2] = 0.5 * (x[2 * i] + x[2 * i + 1])
    return sum[i]((p[i] - t[i]) ** 2)

def conv2(img: f64[h, w], K: f64[a, b]) -> f64:
    out[r: h - a + 1, c: w - b + 1] = sum[u, v](K[u, v] * img[r + u, c + v])
    return sum[r, c](tanh(out[r, c]))

def strided(x: f64[n], w: f64[k]) -> f64:
    y[i: (n - k) / 3 + 1] = sum[j](w[j] * x[3 * i + j])
    return sum[i](y[i] ** 2)

def upper_half(x: f64[n]) -> f64:
    return sum[i]([i >= n / 2] * x[i] ** 2)

def caller(a: f64[p], b: f64[3], c: f64[p / 2]) -> f64:
    z = corr(a, b)
    u = avgpool(a)
    return sum[i](z[i] ** 2) + sum[i](u[i] * c[i])
"""


@pytest.fixture(scope="module")
def mod():
    return tl.parse(SOURCE)


def rng():
    return np.random.default_rng(20261130)


# ------------------------------------------------------------ names of derived sizes
@pytest.mark.parametrize("text, expected", [
    ("n - k + 1", "n - k + 1"),
    ("1 + n - k", "n - k + 1"),
    ("-(k - n - 1)", "n - k + 1"),
    ("n / 2", "n / 2"),
    ("(n - k) / 3 + 1", "(n - k + 3) / 3"),
    ("(2 * n) / 2", "n"),
    ("n / 2 / 2", "n / 4"),
    ("((n - k) / 2 + 1) / 2", "(n - k + 2) / 4"),
    ("3 - 1", 2),
    ("2 * (n + 1)", "2 * n + 2"),
])
def test_equal_spellings_give_one_size(text, expected):
    prog = tl.parse(f"def f(x: f64[n], y: f64[k]) -> f64:\n"
                    f"    z[i: {text}] = 1.0\n    return sum[i](z[i])\n")["f"].program
    assert prog.stmts[0].indices[0][1] == expected


def test_names_carry_their_definitions():
    for name in ("n - k + 1", "(n - 1) / 2", "2 * n - 3 * m + 4", "-k + 5"):
        e = sizexpr.parse(name)
        assert sizexpr.canonical(dict(e.terms), e.const, e.den) == name
    assert sizexpr.parse("n") is None
    assert sizexpr.value("n - k + 1", {"n": 10, "k": 3}) == 8
    assert sizexpr.substitute("n - k + 1", {"n": "p / 2", "k": 3}) == "(p - 4) / 2"


# ------------------------------------------------------------ values
def test_values_match_numpy_on_both_backends(mod):
    r = rng()
    x, w = r.standard_normal(11), r.standard_normal(4)
    img, K = r.standard_normal((7, 9)), r.standard_normal((3, 2))
    expect_corr = np.correlate(x, w, mode="valid")
    out = np.array([[np.sum(K * img[i:i + 3, j:j + 2]) for j in range(8)] for i in range(5)])
    xs = r.standard_normal(13)
    ys = np.array([np.dot(w, xs[3 * i:3 * i + 4]) for i in range(4)])
    for backend in ("numpy", "numba"):
        np.testing.assert_allclose(mod["corr"].compile(backend)(x, w), expect_corr, rtol=1e-12)
        np.testing.assert_allclose(mod["avgpool"].compile(backend)(x[:10]),
                                   0.5 * (x[0:10:2] + x[1:10:2]), rtol=1e-12)
        assert mod["conv2"].compile(backend)(img, K) == pytest.approx(np.sum(np.tanh(out)))
        assert mod["strided"].compile(backend)(xs, w) == pytest.approx(np.sum(ys ** 2))
        assert mod["upper_half"].compile(backend)(x[:10]) == pytest.approx(np.sum(x[5:10] ** 2))


def test_a_range_of_one_works(mod):
    x, w = np.arange(4.0), np.ones(4)
    np.testing.assert_allclose(mod["corr"](x, w), [6.0])
    np.testing.assert_allclose(mod["avgpool"](np.array([1.0, 3.0])), [2.0])


def test_calls_map_derived_sizes_into_the_caller(mod):
    r = rng()
    a, b, c = r.standard_normal(10), r.standard_normal(3), r.standard_normal(5)
    expect = np.sum(np.correlate(a, b, "valid") ** 2) + np.dot(0.5 * (a[0::2] + a[1::2]), c)
    assert mod["caller"](a, b, c) == pytest.approx(expect, rel=1e-12)
    assert "corr_y[i: p - 2]" in mod["caller"].source


# ------------------------------------------------------------ derivatives
@pytest.mark.parametrize("name, sizes", [
    ("corr_loss", {"n": 9, "k": 3}),
    ("pool_loss", {"n": 8}),
    ("conv2", {"h": 6, "w": 5, "a": 2, "b": 3}),
    ("strided", {"n": 11, "k": 2}),
    ("upper_half", {"n": 6}),
    ("caller", {"p": 8}),
])
def test_derivatives(mod, name, sizes):
    fn = mod[name]
    inputs = random_inputs(fn, {}, sizes, seed=3)
    wrt = [p.name for p in fn.program.params]
    with warnings.catch_warnings():
        warnings.simplefilter("error", tl.TLCostWarning)     # the certificate holds
        grad_matches_fd(fn, wrt, inputs, rng())
        jvp_matches_fd(fn, wrt, inputs, rng())
        dot_product_identity(fn, wrt, inputs, rng())


def test_derivative_source_round_trips(mod):
    r = rng()
    x, w = r.standard_normal(9), r.standard_normal(3)
    for fn, args in ((mod["corr_loss"], (x, w)), (mod["strided"], (x, w)),
                     (mod["upper_half"], (x[:8],))):
        g = tl.grad(fn, wrt=fn.program.params[0].name)
        again = tl.parse(g.source)[g.name]
        np.testing.assert_allclose(again(*args), g(*args), rtol=1e-12)
        assert tl.parse(again.source)[g.name].source == again.source


# Derived sizes in ranges, in brackets and in index expressions, of the functions and of
# every derivative: the adjoint's range guards compare with a derived size (`k < n - 1`
# for a read of y[k] with y of size n - 1), a callee's sizes become the caller's.
ROUND_TRIP = """
def diffs(x: f64[n]) -> f64:
    y[i: n - 1] = x[i + 1] * x[i]
    return sum[i]([i < n - 2] * y[i + 1] * y[i]) + y[n - 2] + sum[i](y[i]) / (n - 1)

def halves(x: f64[n], w: f64[k]) -> f64:
    p[i: n / 2] = 0.5 * (x[2 * i] + x[2 * i + 1])
    q[i: n / 2 - 1] = p[i + 1] - p[i]
    y[i: (n - k) / 3 + 1] = sum[j](w[j] * x[3 * i + j])
    return sum[i](q[i] ** 2) + sum[i]([i >= n / 4] * y[i] ** 2) + x[n / 2] * y[(n - k) / 3]

def corr(x: f64[n], w: f64[k]) -> f64[n - k + 1]:
    y[i: n - k + 1] = sum[j](w[j] * x[i + j])
    return y

def diff(x: f64[n]) -> f64[n - 1]:
    y[i: n - 1] = x[i + 1] - x[i]
    return y

def caller(a: f64[p], b: f64[3]) -> f64:
    z = corr(a, b)
    u = diff(z)
    return sum[i](u[i] ** 2) + u[p - 4] * z[0]
"""


@pytest.mark.parametrize("name", ["diffs", "halves", "caller", "diff"])
def test_round_trip_with_derived_sizes_gives_the_same_program(name):
    from tensorlang.ssa.verify import verify
    fn = tl.parse(ROUND_TRIP)[name]
    wrt = fn.program.params[0].name
    if name == "diff":
        derived = [fn, tl.vjp(fn, wrt=wrt), tl.jvp(fn, wrt=wrt)]
    else:
        derived = [fn, tl.grad(fn, wrt=wrt), tl.jvp(fn, wrt=wrt), tl.hessian(fn, wrt=wrt)]
    for g in derived:
        verify(g.program)       # no derived size without a division in index arithmetic
        again = tl.parse(g.source)[g.name]
        assert again.program == g.program, g.source
        assert again.source == g.source
        assert tl.cost(again) == tl.cost(g)


def test_index_arithmetic_writes_derived_sizes_in_their_sizes():
    from tensorlang.ssa.ir import Affine, IndexVar, SizeVar
    aff = Affine.make(-1, [(IndexVar("i"), 1), (SizeVar("n - k + 1"), -1), (SizeVar("n / 2"), 2)])
    assert aff.in_plain_sizes() == Affine.make(-2, [(IndexVar("i"), 1), (SizeVar("n"), -1),
                                                    (SizeVar("k"), 1), (SizeVar("n / 2"), 2)])
    plain = Affine.make(3, [(IndexVar("i"), 1), (SizeVar("n"), 1)])
    assert plain.in_plain_sizes() is plain


# ------------------------------------------------------------ cost
def test_cost_keeps_derived_sizes_whole(mod):
    c = tl.cost(mod["corr_loss"])
    assert str(c) == "2*k*(n - k + 1) + 3*(n - k + 1) + 1"
    assert c.evaluate(n=10, k=3) == 2 * 3 * 8 + 3 * 8 + 1
    # k appears in k and in n - k + 1: degree 2 in k (as written), 1 in n
    assert c.degree() == 2 and c.degree("n") == 1 and c.degree("k") == 2
    assert tl.cost(mod["avgpool"]).evaluate(n=100) == 5 * 50     # five operations per output element
    with pytest.raises(ValueError, match="whole number"):
        tl.cost(mod["avgpool"]).evaluate(n=7)
    # a derived size with no value is a shape error too, saying which range and why
    with pytest.raises(tl.TLShapeError, match="n - k \\+ 1 is -2") as bad:
        c.evaluate(n=2, k=5)
    assert isinstance(bad.value, SizeValueError) and isinstance(bad.value, ValueError)
    # a size left out is named, a size a derived one is made of too; the hint lists
    # every size the cost is written in, and the error is both a KeyError and a TLCallError
    assert c.base_sizes() == ["k", "n"]
    for given in ({"k": 3}, {"n": 10}, {}):
        missing = ", ".join(sorted({"k", "n"} - set(given)))
        with pytest.raises(KeyError, match=f"evaluate needs a value for sizes? {missing}\n") as e:
            c.evaluate(**given)
        assert isinstance(e.value, tl.TLCallError) and isinstance(e.value, MissingSizeError)
        assert e.value.first.hint == "this cost is written in k, n; call evaluate(k=..., n=...)"


def test_count_ops_matches_the_polynomial(mod):
    r = rng()
    x, w = r.standard_normal(12), r.standard_normal(4)
    assert mod["corr_loss"].count_ops(x, w) <= tl.cost(mod["corr_loss"]).evaluate(n=12, k=4)


# ------------------------------------------------------------ bounds
def test_reads_are_proven_from_the_definition():
    ok = "def f(x: f64[n], w: f64[k]) -> f64[n - k + 1]:\n" \
         "    y[i: n - k + 1] = w[k - 1] * x[i + k - 1]\n    return y\n"
    tl.parse(ok)
    off_by_one = ok.replace("x[i + k - 1]", "x[i + k]")
    with pytest.raises(tl.TLBoundsError, match="may be out of range"):
        tl.parse(off_by_one)
    tl.parse("def g(x: f64[n]) -> f64[n / 2]:\n    p[i: n / 2] = x[2 * i + 1]\n    return p\n")


def test_out_of_range_messages_write_derived_sizes_in_their_sizes():
    """The range a bad read reaches is printed in the user's sizes: over `i: n - k + 1`
    and `j: k`, `i + j + 1` reaches `n`, not `(n - k + 1) + k - 1`; a divided size
    stays whole."""
    src = ("def f(x: f64[n], w: f64[k]) -> f64:\n"
           "    y[i: n - k + 1] = sum[j](w[j] * x[i + j + 1])\n    return sum[i](y[i])\n")
    with pytest.raises(tl.TLBoundsError) as err:
        tl.parse(src)
    assert "i + j + 1 ranges over 1 .. n, but x has size n" in str(err.value)
    halves = "def g(x: f64[n]) -> f64[n / 2]:\n    p[i: n / 2] = x[2 * i + 2]\n    return p\n"
    with pytest.raises(tl.TLBoundsError) as err:
        tl.parse(halves)
    assert "2 * i + 2 ranges over 2 .. 2 * (n / 2), but x has size n" in str(err.value)


# ------------------------------------------------------------ bad input
@pytest.mark.parametrize("dim, message", [
    ("n * k", "a product of two sizes"),
    ("n / k", "divided by a positive integer"),
    ("n / 0", "divided by a positive integer"),
    ("n / 2 + k / 2", "divide only once"),
    ("2 * (n / 3)", "may not multiply a division"),
    ("n % 2", "cannot be a dimension"),
    ("3 / 2", "not an integer"),
])
def test_bad_dimensions_are_located_syntax_errors(dim, message):
    src = f"def f(x: f64[n], y: f64[k]) -> f64:\n    z[i: {dim}] = 1.0\n    return sum[i](z[i])\n"
    with pytest.raises(tl.TLSyntaxError, match=message) as exc:
        tl.parse(src)
    assert "<string>:2:" in str(exc.value)          # located on the dimension


def test_unknown_and_unbound_sizes():
    with pytest.raises(tl.TLNameError, match="unknown size q"):
        tl.parse("def f(x: f64[n]) -> f64:\n    z[i: n - q] = 1.0\n    return sum[i](z[i])\n")
    with pytest.raises(tl.TLNameError, match="size m is not bound"):
        tl.parse("def f(x: f64[2 * m]) -> f64:\n    return sum[i](x[i])\n")


def test_call_time_errors_name_the_sizes(mod):
    with pytest.raises(tl.TLShapeError, match=r"n / 2 is not a whole number at n = 7") as exc:
        mod["avgpool"](np.zeros(7))
    assert "avgpool(x: f64[n])" in str(exc.value)            # located at the parameter
    with pytest.raises(tl.TLShapeError, match=r"the range n - k \+ 1 is 0 at k = 5, n = 4"):
        mod["corr"](np.zeros(4), np.zeros(5))
    with pytest.raises(tl.TLShapeError, match=r"needs dim 0 == n / 2 = 4"):
        mod["pool_loss"](np.zeros(8), np.zeros(3))


def test_a_call_must_pass_the_declared_derived_size(mod):
    src = SOURCE + ("\ndef bad(a: f64[p], c: f64[q]) -> f64:\n"
                    "    return pool_loss(a, c)\n")
    with pytest.raises(tl.TLShapeError, match=r"needs a dimension of size p / 2 \(n / 2\), got q"):
        tl.parse(src)


def test_random_inputs_follow_the_definitions(mod):
    got = random_inputs(mod["pool_loss"], {}, {"n": 6, "n / 2": 99}, seed=0)
    assert got["t"].shape == (3,)
    with pytest.raises(tl.TLShapeError, match="whole number"):
        random_inputs(mod["pool_loss"], {}, {"n": 5}, seed=0)


def test_a_reduction_over_a_derived_range_knows_its_definition():
    """A max or logsumexp over `k: K + 1` binds K + 1 as a sum over it does: its
    reads are proven in range from the definition (z[k - 1] under [k >= 1] is at
    most K - 1), and the interpreter knows the size when no other part of the
    program names it."""
    import scipy.special
    mod = tl.parse("""
def shifted(z: f64[K], a: f64) -> f64:
    return logsumexp[k: K + 1]([k == 0] * a + [k >= 1] * z[k - 1])

def padded(z: f64[K], a: f64) -> f64:
    return max[k: K + 1]([k < K] * z[k] + [k == K] * a)
""")
    z, a = np.array([1.0, 2.0, 3.0]), 0.5
    for backend in ("numpy", "numba"):
        assert np.isclose(mod.shifted.compile(backend)(z, a),
                          scipy.special.logsumexp(np.append(a, z)), rtol=1e-13)
        assert mod.padded.compile(backend)(z, 5.0) == 5.0
    assert "(K + 1)" in str(tl.cost(mod.padded))


POOL_OF_STRIDE = """
def pool_of_stride(x: f64[n], w: f64[K]) -> f64:
    y[i: (n - K) / 2 + 1] = sum[k](w[k] * x[2 * i + k])
    z[i: ((n - K) / 2 + 1) / 2] = 0.5 * (y[2 * i] + y[2 * i + 1])
    return sum[i](z[i] ** 2)
"""


def test_a_division_of_a_division_is_one_division():
    """A pooling of a stride-2 filter's output halves a size that is already halved:
    `((n - K) / 2 + 1) / 2` is `(n - K + 2) / 4`, exact exactly when both divisions
    are (a user wrote it, and it used to be refused).  Values against NumPy, the
    gradient by differences and within the certificate, and a call where the inner
    division leaves a remainder is a shape error naming it."""
    f = tl.parse(POOL_OF_STRIDE, filename="pool.tl")["pool_of_stride"]
    assert "z[i: (n - K + 2) / 4]" in f.source
    rng = np.random.default_rng(31)
    x, w = rng.standard_normal(13), rng.standard_normal(3)
    y = np.array([w @ x[2 * i:2 * i + 3] for i in range(6)])
    want = np.sum((0.5 * (y[0::2] + y[1::2])) ** 2)
    assert np.isclose(f(x=x, w=w), want, rtol=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("error", tl.TLCostWarning)
        grad_matches_fd(f, ["x", "w"], {"x": x, "w": w}, rng)
    for bad in (12, 15):        # (12 - 3) / 2 is not whole; (15 - 3) / 2 + 1 = 7 is odd
        with pytest.raises(tl.TLShapeError, match="not a whole number"):
            f(x=x[:bad] if bad <= 13 else rng.standard_normal(bad), w=w)
