"""No accepted program reads or writes outside its arrays on the Numba backend.

Every level of a nested gather is range-checked where it is used as an index
(a bad label is a TLBoundsError naming the access, as on the interpreter, never
a wild read), a label masked by an earlier bracket is not checked, disjunctions
with a reduction or a gather inside compile, the interpreter fallback for a
program the generator cannot compile is a warning and not an internal error,
and index arithmetic that could overflow int64 is rejected when the program is
checked.  Data are seeded and random.
"""
import warnings

import numpy as np
import pytest

import tensorlang as tl
from tensorlang.backend import kernels
from tensorlang.backend.numba_backend import module_source


def fn(src):
    return tl.parse(src, filename="g.tl")["f"]


def agree(f, **args):
    """Both backends give the same result, and the Numba one warns about nothing."""
    want = np.asarray(f.compile("numpy")(**args))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = np.asarray(f.compile("numba")(**args))
    assert np.allclose(got, want, rtol=1e-12, atol=1e-12), (got, want)
    return got


def rejects(f, **args):
    """Both backends refuse the call with a located TLBoundsError about a gathered index."""
    for backend in ("numba", "numpy"):
        with pytest.raises(tl.TLBoundsError, match="out of range") as info:
            f.compile(backend)(**args)
        assert "g.tl:" in str(info.value)


NESTED = fn("def f(E: f64[v], y: i64[b], z: i64[c]) -> f64[c]:\n"
            "    r[s] = E[y[z[s]]]\n"
            "    return r\n")
SELF = fn("def f(E: f64[v], y: i64[b]) -> f64[b]:\n"
          "    r[s] = E[y[y[s]]]\n"
          "    return r\n")
REL = fn("def f(M: bool[v, d], y: i64[b], x: f64[b, d]) -> f64[b]:\n"
         "    r[s] = sum[c]([M[y[s], c]] * x[s, c])\n"
         "    return r\n")
CMP = fn("def f(P: f64[b, v], y: i64[m], z: i64[b]) -> f64[b]:\n"
         "    r[s] = sum[t]([t == y[z[s]]] * P[s, t])\n"
         "    return r\n")


def test_nested_gathers_agree_with_the_interpreter():
    rng = np.random.default_rng(0)
    E = rng.standard_normal(7)
    y = rng.integers(0, 7, 5)
    z = rng.integers(0, 5, 9)
    got = agree(NESTED, E=E, y=y, z=z)
    assert np.array_equal(got, E[y[z]])
    y2 = rng.integers(0, 5, 5)
    assert np.array_equal(agree(SELF, E=E, y=y2), E[y2[y2]])
    M = rng.random((7, 4)) < 0.5
    x = rng.standard_normal((5, 4))
    assert np.allclose(agree(REL, M=M, y=y, x=x), np.sum(M[y] * x, axis=1))
    P = rng.standard_normal((9, 7))
    assert np.allclose(agree(CMP, P=P, y=y, z=z), P[np.arange(9), y[z]])


@pytest.mark.parametrize("bad", [-3, 9, 5_000_000, -(2 ** 63), 2 ** 63 - 1])
def test_a_bad_label_at_any_level_raises(bad):
    rng = np.random.default_rng(1)
    E = rng.standard_normal(7)
    y = rng.integers(0, 7, 5)
    z = np.array([0, bad, 1])
    rejects(NESTED, E=E, y=y, z=z)                      # the inner level
    rejects(NESTED, E=E, y=np.array([0, 1, bad if bad >= 7 or bad < 0 else 9]),
            z=np.array([0, 2]))                         # the outer level
    rejects(SELF, E=E, y=np.array([0, bad, 1]))
    M = np.ones((7, 4), dtype=bool)
    rejects(REL, M=M, y=np.array([0, bad]), x=np.ones((2, 4)))
    rejects(CMP, P=np.ones((3, 7)), y=y, z=z)


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_a_bad_label_in_a_derivative_shows_the_line_of_its_function(backend):
    """A derivative's spans are its function's: the error of a bad label names the
    access and shows its source line and caret, as a call of the function does."""
    f = fn("def f(X: f64[n], y: i64[m]) -> f64:\n"
           "    return sum[s](X[y[s]] ** 2)\n")
    args = dict(X=np.ones(3), y=np.array([0, 5]))
    for g, extra in ((tl.value_and_grad(f, wrt="X"), {}),
                     (tl.jvp(f, wrt="X"), {"d_X": np.ones(3)})):
        with pytest.raises(tl.TLBoundsError) as info:
            g.compile(backend)(**args, **extra)
        shown = str(info.value)
        assert shown.startswith("g.tl:2:19: error: gathered index y[s] = 5"), shown
        assert "    return sum[s](X[y[s]] ** 2)\n" in shown and "^^^^^^^" in shown, shown


def test_a_masked_label_is_legal():
    """-1 behind a bracket that excludes it is never used as an index, so never checked."""
    f = fn("def f(E: f64[v], y: i64[b], z: i64[c]) -> f64[c]:\n"
           "    r[s] = [z[s] >= 0] * E[y[z[s]]]\n"
           "    return r\n")
    E = np.arange(1.0, 5.0)
    y = np.array([2, 3, 0])
    z = np.array([0, -1, 1, 2, -5])
    assert np.array_equal(agree(f, E=E, y=y, z=z), [3.0, 0.0, 4.0, 1.0, 0.0])
    g = fn("def f(E: f64[v], y: i64[b]) -> f64[b]:\n"
           "    r[s] = [y[s] >= 0] * E[y[s]]\n"
           "    return r\n")
    assert np.array_equal(agree(g, E=E, y=np.array([1, -1, 3])), [2.0, 0.0, 4.0])


def test_the_gradient_of_a_nested_gather_scatters_safely():
    f = fn("def f(E: f64[v, d], y: i64[b], z: i64[c], w: f64[c, d]) -> f64:\n"
           "    return sum[s, k](E[y[z[s]], k] * w[s, k])\n")
    g = tl.grad(f, wrt="E")
    rng = np.random.default_rng(2)
    E = rng.standard_normal((6, 3))
    y = rng.integers(0, 6, 4)
    z = rng.integers(0, 4, 8)
    w = rng.standard_normal((8, 3))
    want = np.zeros_like(E)
    np.add.at(want, y[z], w)
    assert np.allclose(agree(g, E=E, y=y, z=z, w=w), want)
    for backend in ("numba", "numpy"):
        with pytest.raises(tl.TLBoundsError):
            g.compile(backend)(E=E, y=y, z=np.append(z[:-1], 4), w=w)
    # a bad outer label is only compared with the row index in the gradient's
    # scatter, but f reads E through it, so the gradient rejects it as f does
    y_bad = np.append(y[:-1], -1)
    z_all = np.arange(4).repeat(2)
    for backend in ("numba", "numpy"):
        for h in (f, g):
            with pytest.raises(tl.TLBoundsError, match=r"y\[z\[s\]\] = -1"):
                h.compile(backend)(E=E, y=y_bad, z=z_all, w=w)


def test_disjunctions_with_reductions_and_gathers_compile():
    """Once the interpreter fallback's only case; now compiled, with no warning."""
    rng = np.random.default_rng(3)
    f = fn("def f(A: f64[n, m]) -> f64[n]:\n"
           "    r[i] = [i == 0 or sum[j](A[i, j]) > 0.0] * A[i, 0]\n"
           "    return r\n")
    A = rng.standard_normal((9, 4))
    assert np.allclose(agree(f, A=A), np.where((np.arange(9) == 0) | (A.sum(1) > 0), A[:, 0], 0))
    h = fn("def f(A: f64[n, m], E: f64[v], y: i64[n], z: i64[n]) -> f64[n]:\n"
           "    r[i] = [i == 0 or sum[j](A[i, j]) > 0.0 or E[y[z[i]]] > 0.5] * A[i, 0]\n"
           "    return r\n")
    E = rng.standard_normal(5)
    y = rng.integers(0, 5, 9)
    z = rng.integers(0, 9, 9)
    agree(h, A=A, E=E, y=y, z=z)
    # a bad label behind an alternative that already holds is never read
    i_ok = np.flatnonzero((np.arange(9) == 0) | (A.sum(1) > 0))
    z_bad = z.copy()
    z_bad[i_ok[0]] = 99
    got = np.asarray(h.compile("numba")(A=A, E=E, y=y, z=z_bad))
    assert got[i_ok[0]] == A[i_ok[0], 0]


def test_the_fallback_is_a_warning_not_an_internal_error(monkeypatch):
    def refuse(*args, **kwargs):
        raise kernels.Unsupported("a construct made up for this test")
    monkeypatch.setattr(kernels.KernelWriter, "statement", refuse)
    f = fn("def f(x: f64[n]) -> f64[n]:\n    r[i] = 3.0 * x[i] + 0.25\n    return r\n")
    g = f.compile("numba")
    x = np.arange(4.0)
    with pytest.warns(UserWarning, match="made up for this test"):
        assert np.array_equal(g(x), 3.0 * x + 0.25)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.array_equal(g(x), 3.0 * x + 0.25)          # warned once


def test_guards_are_tested_before_the_reads_they_protect():
    """Whatever order the brackets are written in, a guard comes before the gathered
    read it makes safe (the bounds proof uses all of a conjunction's guards)."""
    f = fn("def f(P: f64[n, v], y: i64[n]) -> f64[n]:\n"
           "    r[i] = sum[c]([c == y[i + 1] and i + 1 < n] * P[i, c])\n"
           "    return r\n")
    guarded = module_source(f.program).split("else:")[1]     # the nest that tests the guard
    assert guarded.index("s_n - 2) >= 0") < guarded.index("v_y[")
    rng = np.random.default_rng(4)
    agree(f, P=rng.standard_normal((6, 3)), y=rng.integers(0, 3, 6))
    # in a disjunction, the plain index comparisons are tested first
    g = fn("def f(P: f64[n, v], y: i64[n]) -> f64[n]:\n"
           "    r[i] = sum[c]([y[i - 1] == c or i < 1] * P[i, c])\n"
           "    return r\n")
    line = next(ln for ln in module_source(g.program).splitlines() if " or " in ln and "v_y" in ln)
    assert line.index("-i_i >= 0") < line.index("v_y[")
    agree(g, P=rng.standard_normal((6, 3)), y=rng.integers(0, 3, 6))


@pytest.mark.parametrize("pred", ["c == 1 and y[s] != y[s - 2] and s >= 2",
                                  "c == 0 or y[s] != y[s - 2] and s >= 2"])
def test_the_instrumented_run_tests_guards_before_the_labels_they_protect(pred):
    """count_ops runs the loops one scalar at a time; it tests a conjunction's atoms
    and a disjunction's alternatives in the kernels' order, so the label y[s - 2]
    is never read where s >= 2 fails (it raised a TLBoundsError there), and it
    counts the same values as the interpreter computes (CTC's skip transition)."""
    f = fn("def f(x: f64[n], y: i64[n]) -> f64[n]:\n"
           f"    r[s] = logsumexp[c: 2 | {pred}](x[s] + [c == 1] * 1.0)\n"
           "    return r\n")
    y = np.array([0, 1, 1, 3, 0])
    x = np.arange(5.0)
    want = f.compile("numpy")(x=x, y=y)
    assert f.count_ops(x=x, y=y) <= tl.cost(f).evaluate(n=5)
    from tensorlang.backend.loop_interp import count_ops
    _, (got,) = count_ops(f.optimized_program(), {"x": x, "y": y}, {"n": 5})
    assert np.allclose(got, want, rtol=1e-12)

def test_the_instrumented_run_tests_guards_before_solving_a_scatter_by_a_label():
    """A scatter whose position is solved from a label read one step back
    (`[p == a[t - 1]]` under `[t >= 1]`, a rating update of an Elo recurrence): the
    instrumented run computed p = a[t - 1] before testing t >= 1 and raised a
    TLBoundsError at t = 0, where the kernels and the interpreter run."""
    f = fn("def f(a: i64[G], r0: f64[P]) -> f64:\n"
           "    r[t: G, p: P] = [t == 0] * r0[p] + [t >= 1] * (r[t - 1, p] + [p == a[t - 1]] * 2.0)\n"
           "    return sum[t, p](r[t, p])\n")
    a, r0 = np.array([0, 1, 2]), np.arange(3.0)
    assert f.count_ops(a=a, r0=r0) <= tl.cost(f).evaluate(G=3, P=3)
    from tensorlang.backend.loop_interp import count_ops
    _, (got,) = count_ops(f.optimized_program(), {"a": a, "r0": r0}, {"G": 3, "P": 3})
    assert got == f.compile("numpy")(a=a, r0=r0) == 15.0


@pytest.mark.parametrize("coef", ["4611687117939015680", "9223372036854775807", "70368744177664"])
def test_index_arithmetic_that_could_overflow_is_rejected(coef):
    src = (f"def f(x: f64[n]) -> f64[n]:\n"
           f"    y[i: n] = [{coef} * i < n] * x[{coef} * i]\n"
           f"    return y\n")
    with pytest.raises(tl.TLBoundsError) as info:
        fn(src)
    err = info.value
    assert "g.tl:2:" in str(err) and "64-bit" in str(err)
    assert all(d.span is not None and d.hint for d in err.diagnostics)


def test_large_but_safe_index_arithmetic_runs():
    f = fn("def f(x: f64[n]) -> f64[n]:\n"
           "    y[i: n] = [1000 * i + 7 < n] * x[1000 * i + 7]\n"
           "    return y\n")
    x = np.random.default_rng(5).standard_normal(3000)
    got = agree(f, x=x)
    assert np.array_equal(got[:3], x[[7, 1007, 2007]]) and not got[3:].any()
    # a constant near 2^62 in an index is refused too: with a size near the limit it overflows
    with pytest.raises(tl.TLBoundsError, match="64-bit"):
        fn("def f(x: f64[n]) -> f64:\n"
           "    return sum[i: n]([i + 4611686018427387000 < n] * x[i + 4611686018427387000])\n")


def test_sizes_above_the_limit_are_refused_at_call_time(monkeypatch):
    monkeypatch.setattr(tl.api, "MAX_SIZE", 4)
    f = fn("def f(x: f64[n]) -> f64:\n    return sum[i](x[i])\n")
    assert f(np.ones(4)) == 4.0
    with pytest.raises(tl.TLShapeError, match="largest size"):
        f(np.ones(5))


def test_an_index_constant_or_modulus_beyond_int64_is_a_located_error():
    for src in ("def f(x: f64[n]) -> f64:\n"
                "    return sum[i]([i % 100000000000000000000000 == 0] * x[i])\n",
                "def f(x: f64[n]) -> f64:\n"
                "    return sum[i: n]([i + 9223372036854775808 < n] * x[i + 9223372036854775808])\n"):
        with pytest.raises(tl.TLError) as info:
            fn(src)
        assert not isinstance(info.value, tl.TLInternalError)
        assert all(d.span is not None for d in info.value.diagnostics)


def test_a_scatter_reads_no_label_its_brackets_exclude():
    """The gradient of `[z[s] >= 0] * E[y[z[s]], k]` scatters to row y[z[s]] only where
    z[s] >= 0: the kernel tests the bracket before it reads y at z[s]."""
    f = fn("def f(E: f64[v, d], y: i64[b], z: i64[c], w: f64[c, d]) -> f64:\n"
           "    return sum[s, k]([z[s] >= 0] * E[y[z[s]], k] * w[s, k])\n")
    rng = np.random.default_rng(6)
    E = rng.standard_normal((4, 2))
    y = np.array([0, 3, 1])
    z = np.array([0, -1, 2, -7])
    w = rng.standard_normal((4, 2))
    want = np.zeros_like(E)
    want[0] += w[0]
    want[1] += w[2]
    got = tl.grad(f, wrt="E").compile("numba")(E=E, y=y, z=z, w=w)
    assert np.allclose(got, want, rtol=1e-12, atol=1e-12)


def test_a_bad_label_under_a_broadcast_mask_is_reported_not_crashed():
    """The interpreter's report of a bad label found through a mask of other axes
    used to index the labels with the mask's position (a raw IndexError)."""
    f = fn("def f(y: i64[n], z: i64[n], w: i64[k], E: f64[k, m]) -> f64[n, m]:\n"
           "    o[s: n, c: m] = [w[y[z[z[s]]]] < k] * E[w[y[z[z[s]]]], c]\n"
           "    return o\n")
    args = dict(y=np.array([2 ** 31, 0, 1]), z=np.array([0, 2, 0]), w=np.array([1, 1]),
                E=np.ones((2, 1)))
    rejects(f, **args)


def test_labels_beyond_the_index_range_are_rejected_at_the_call():
    f = fn("def f(x: f64[k], y: i64[n]) -> f64[n]:\n"
           "    o[s] = [y[s] < k] * x[y[s]]\n"
           "    return o\n")
    with pytest.raises(tl.TLBoundsError, match="out of range"):
        f.compile("numpy")(x=np.ones(3), y=np.array([-(2 ** 63), 1]))


@pytest.mark.parametrize("label", [np.array([0, 2 ** 50]), np.array([0, 2 ** 63], dtype=np.uint64),
                                   [0, 2 ** 63], np.array([0.0, 1e30])],
                         ids=["beyond the index range", "unsigned", "python int", "float"])
def test_a_label_refused_at_a_derivatives_call_is_located_as_fs(label):
    """A derivative's parameters are its function's: a label its conversion refuses
    (too large for the index range, or for i64) is the error f's call gives, located
    at the parameter's declaration in f's `def`, on every backend."""
    f = tl.parse("def g(y: f64[k]) -> f64:\n"
                 "    return sum[i](y[i])\n"
                 "def f(X: f64[n], y: i64[m]) -> f64:\n"
                 "    return sum[s](X[y[s]] ** 2)\n", filename="g.tl")["f"]
    args = dict(X=np.ones(3), y=label)
    with pytest.raises(tl.TLError) as info:
        f(**args)
    want = str(info.value)
    assert want.startswith("g.tl:3:18: error: y holds the label"), want
    for g, extra in ((tl.grad(f, wrt="X"), {}), (tl.jvp(f, wrt="X"), {"d_X": np.ones(3)}),
                     (tl.jacobian(tl.grad(f, wrt="X"), wrt="X"), {})):
        for backend in ("numpy", "numba"):
            with pytest.raises(type(info.value)) as got:
                g.compile(backend)(**args, **extra)
            assert str(got.value) == want
