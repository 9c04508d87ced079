"""tl.jacobian: the dense Jacobian out.shape + x.shape, from forward mode with one-hot
tangents, at a cost that follows the structure (an elementwise map: O(n) plus the fill)."""
import warnings

import numpy as np
import pytest

import tensorlang as tl

SOURCE = """
def fmap(x: f64[n]) -> f64[n]:
    y[i] = x[i] * sin(x[i]) + sigmoid(x[i])
    return y

def mv(A: f64[m, n], x: f64[n]) -> f64[m]:
    y[i] = sum[j](A[i, j] * tanh(x[j]))
    return y

def shift(x: f64[n]) -> f64[n]:
    d[i] = [i + 1 < n] * x[i + 1] - x[i]
    return d

def scale(s: f64, x: f64[n]) -> f64[n]:
    y[i] = exp(s) * x[i]
    return y

def energy(x: f64[n]) -> f64:
    return sum[i](x[i] ** 4)

def two(x: f64[n]) -> (f64[n], f64):
    y[i] = 2.0 * x[i]
    return y, sum[i](x[i])
"""


@pytest.fixture(scope="module")
def mod():
    return tl.parse(SOURCE, "jac.tl")


def numeric_jacobian(f, args: dict, wrt: str, eps=1e-6):
    x = np.asarray(args[wrt], dtype=float)
    out = np.asarray(f(**args))
    J = np.zeros(out.shape + x.shape)
    for k in np.ndindex(x.shape or ()):
        e = np.zeros_like(x)
        e[k] = eps
        plus = np.asarray(f(**dict(args, **{wrt: x + e if x.shape else float(x + e)})))
        minus = np.asarray(f(**dict(args, **{wrt: x - e if x.shape else float(x - e)})))
        J[(Ellipsis,) + tuple(k)] = (plus - minus) / (2 * eps)
    return J


def jacobian_quietly(f, wrt):
    with warnings.catch_warnings():
        warnings.simplefilter("error", tl.TLCostWarning)
        return tl.jacobian(f, wrt=wrt)


@pytest.mark.parametrize("name, wrt", [("fmap", "x"), ("mv", "x"), ("mv", "A"),
                                       ("shift", "x"), ("scale", "s"), ("scale", "x"),
                                       ("energy", "x")])
def test_jacobian_matches_finite_differences(mod, name, wrt):
    f = mod[name]
    rng = np.random.default_rng(3)
    args = {"x": rng.standard_normal(5), "A": rng.standard_normal((3, 5)), "s": 0.3}
    args = {p: args[p] for p in f.params}
    J = jacobian_quietly(f, wrt)
    got = np.asarray(J(**args))
    want = numeric_jacobian(f, args, wrt)
    assert got.shape == want.shape
    assert np.allclose(got, want, rtol=1e-6, atol=1e-7)
    # the derived program is .tl that parses back to the same values
    again = tl.parse(J.source)[J.name]
    assert np.allclose(np.asarray(again(**args)), got, rtol=1e-14, atol=0)


def test_a_scalar_function_has_its_gradient_as_jacobian(mod):
    x = np.random.default_rng(4).standard_normal(6)
    J = jacobian_quietly(mod.energy, "x")
    assert np.allclose(J(x), tl.grad(mod.energy, wrt="x")(x), rtol=1e-14)


def test_a_scalar_functions_jacobian_costs_its_gradient():
    """The Jacobian of a scalar is its gradient, built by reverse mode: for a graph
    layer's loss (a gather and a scatter over an edge list) forward mode with one-hot
    tangents cost 7 f g n^2 against the gradient's O(f g n + f m), and missed the
    certificate."""
    f = tl.parse("""
def gcn(X: f64[n, f], W: f64[f, g], src: i64[m], dst: i64[m], v: f64[n, g]) -> f64:
    agg[u: n, c: f] = sum[e]([dst[e] == u] * X[src[e], c])
    H[u, q] = max(sum[c](agg[u, c] * W[c, q]), 0.0)
    return sum[u, q](H[u, q] * v[u, q])
""")["gcn"]
    J = jacobian_quietly(f, "X")
    assert tl.cost(J) == tl.cost(tl.grad(f, wrt="X"))
    assert tl.cost(J).degree("n") == 1
    rng = np.random.default_rng(7)
    args = dict(X=rng.standard_normal((5, 3)), W=rng.standard_normal((3, 2)),
                src=rng.integers(0, 5, 8), dst=rng.integers(0, 5, 8),
                v=rng.standard_normal((5, 2)))
    assert np.allclose(J(**args), numeric_jacobian(f, args, "X"), rtol=1e-6, atol=1e-7)


def test_an_elementwise_map_costs_its_diagonal_plus_the_fill(mod):
    c = tl.cost(jacobian_quietly(mod.fmap, "x"))
    assert c.degree("n") == 2
    assert str(c.leading()) == "n^2"           # the zero fill; the derivative itself is O(n)
    assert c.evaluate(n=1000) - 1000 ** 2 <= 20 * 1000
    band = tl.cost(jacobian_quietly(mod.shift, "x"))
    assert str(band.leading()) == "n^2" and band.evaluate(n=1000) - 1000 ** 2 <= 10 * 1000


def test_the_jacobian_of_a_product_with_a_matrix_is_the_matrix_scaled(mod):
    rng = np.random.default_rng(5)
    A, x = rng.standard_normal((4, 7)), rng.standard_normal(7)
    J = jacobian_quietly(mod.mv, "x")
    assert np.allclose(J(A, x), A * (1 - np.tanh(x) ** 2)[None, :], rtol=1e-13)
    assert tl.cost(J).degree() == 2


def test_jacobian_needs_one_parameter_and_one_output(mod):
    with pytest.raises(tl.TLError, match="one parameter"):
        tl.jacobian(mod.mv, wrt=("A", "x"))
    with pytest.raises(tl.TLError, match="one output"):
        tl.jacobian(mod.two, wrt="x")


def test_the_naive_jacobian_agrees(mod):
    x = np.random.default_rng(6).standard_normal(5)
    fast = tl.jacobian(mod.fmap, wrt="x")
    naive = tl.jacobian(mod.fmap, wrt="x", optimize=False)
    assert np.allclose(naive(x), fast(x), rtol=1e-13)
    assert tl.cost(naive, optimize=False).evaluate(n=100) >= tl.cost(fast).evaluate(n=100)


def test_the_command_line_prints_the_jacobian(tmp_path, capsys):
    from tensorlang.cli import main
    path = tmp_path / "jac.tl"
    path.write_text(SOURCE)
    assert main(["grad", str(path), "-f", "fmap", "--wrt", "x", "--mode", "jacobian"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("def fmap_jacobian(x: f64[n]) -> f64[n, n]:")
    assert "[i == l]" in out


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_the_jacobian_of_a_returned_parameter_is_the_identity(backend):
    """A function that returns a parameter as it is: its tangent output is the
    tangent parameter itself, which the one-hot seeds replace (this was a KeyError
    for the parameter's tangent, and an internal error on Numba)."""
    m = tl.parse("def f(x: f64[n], A: f64[n, m]) -> f64[n, m]:\n    return A\n"
                 "def g(x: f64[n]) -> f64[n]:\n    return x\n")
    A = np.arange(6.0).reshape(2, 3)
    J = tl.jacobian(m.f, wrt="A").compile(backend)(np.ones(2), A)
    assert J.shape == (2, 3, 2, 3)
    np.testing.assert_array_equal(J.reshape(6, 6), np.eye(6))
    np.testing.assert_array_equal(tl.jacobian(m.f, wrt="x").compile(backend)(np.ones(2), A),
                                  np.zeros((2, 3, 2)))
    np.testing.assert_array_equal(tl.jacobian(m.g, wrt="x").compile(backend)(np.ones(4)), np.eye(4))
    assert str(tl.cost(tl.jacobian(m.g, wrt="x"))) == "n^2 + n"
