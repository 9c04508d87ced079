"""max[j], min[j] and logsumexp[j] reductions (docs/language.md, *Reductions*).

Values against NumPy on both backends (ties, filtered and empty domains, logits
large enough that a naive logsumexp overflows), derivatives against finite
differences away from ties and by the dot-product identity, the tie-splitting
rule, second derivatives (the softmax Jacobian), the printer's round trip, the
cost model against the instrumented count, the certificate, and that no rule
about sums reaches a reduction's indices.
"""
import warnings

import numpy as np
import pytest
import scipy.special

import tensorlang as tl
from derivcheck import (check_close, dot_product_identity, grad_matches_fd,
                        jvp_matches_fd)

SRC = """
def rowmax(x: f64[n, m]) -> f64[n]:
    r[i] = max[j](x[i, j])
    return r

def colmin(x: f64[n, m]) -> f64[m]:
    r[j] = min[i](x[i, j])
    return r

def lse(x: f64[n, m]) -> f64[n]:
    r[i] = logsumexp[j](x[i, j])
    return r

def lse_loss(x: f64[n, m], w: f64[n]) -> f64:
    return sum[i](w[i] * logsumexp[j](x[i, j] * w[i]))

def max_loss(x: f64[n, m], w: f64[n]) -> f64:
    return sum[i](w[i] * max[j](x[i, j] * w[i]) ** 2) + min[i](sum[j](x[i, j]))

def prefix_lse(x: f64[n]) -> f64[n]:
    r[i: n] = logsumexp[j | j <= i](x[j])
    return r

def prefix_max(x: f64[n]) -> f64[n]:
    r[i: n] = max[j | j < i](x[j])
    return r

def prefix_min(x: f64[n]) -> f64[n]:
    r[i: n] = min[j | j < i and x[j] > 0.0](x[j])
    return r

def masked(x: f64[n], k: f64) -> f64:
    return max[j]([j < 2] * x[j]) + k

def causal(x: f64[n]) -> f64:
    return sum[i](logsumexp[j | j <= i](x[i] * x[j]))

def nested(x: f64[n, m]) -> f64:
    return logsumexp[i](x[i, 0] - max[j](x[i, j]) + sum[j](x[i, j] * x[i, j]))
"""

BACKENDS = ("numpy", "numba")


@pytest.fixture(scope="module")
def mod():
    return tl.parse(SRC, "reductions.tl")


def call(fn, backend, *args):
    return fn.compile(backend)(*args)


def lse_ref(x, axis):
    return scipy.special.logsumexp(x, axis=axis)


# ------------------------------------------------------------------ values
@pytest.mark.parametrize("backend", BACKENDS)
def test_values_against_numpy(mod, backend):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 7))
    x[1, 2] = x[1, 5] = x[1].max() + 1.0           # a tie for the row max
    np.testing.assert_allclose(call(mod.rowmax, backend, x), x.max(axis=1), rtol=0, atol=0)
    np.testing.assert_allclose(call(mod.colmin, backend, x), x.min(axis=0), rtol=0, atol=0)
    np.testing.assert_allclose(call(mod.lse, backend, x), lse_ref(x, 1), rtol=1e-13)
    v = rng.standard_normal(6)
    want = [lse_ref(v[:i + 1], 0) for i in range(6)]
    np.testing.assert_allclose(call(mod.prefix_lse, backend, v), want, rtol=1e-13)
    # the filtered domain of i = 0 is empty: -inf for max, +inf for min
    want = [-np.inf] + [v[:i].max() for i in range(1, 6)]
    np.testing.assert_array_equal(call(mod.prefix_max, backend, v), want)
    pos = [v[:i][v[:i] > 0] for i in range(6)]
    want = [p.min() if p.size else np.inf for p in pos]
    np.testing.assert_array_equal(call(mod.prefix_min, backend, v), want)
    # a bracket inside is a 0/1 value: the entries j >= 2 are 0 and take part
    w = -np.abs(rng.standard_normal(5)) - 1.0
    assert call(mod.masked, backend, w, 0.5) == 0.5
    np.testing.assert_allclose(call(mod.nested, backend, x),
                               lse_ref(x[:, 0] - x.max(axis=1) + (x * x).sum(axis=1), 0),
                               rtol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_logsumexp_is_stable(mod, backend):
    x = np.array([[1000.0, 999.0, -1000.0], [-1000.0, -1001.0, -1e308], [0.0, 1e-300, 5.0]])
    with np.errstate(all="ignore"):
        naive = np.log(np.exp(x).sum(axis=1))
    assert not np.all(np.isfinite(naive))         # the naive formula overflows here
    got = call(mod.lse, backend, x)
    np.testing.assert_allclose(got, lse_ref(x, 1), rtol=1e-14)
    assert np.all(np.isfinite(got))


@pytest.mark.parametrize("backend", BACKENDS)
def test_infinite_and_nan_entries(mod, backend):
    x = np.array([[-np.inf, -np.inf], [np.inf, 1.0], [np.nan, 1.0], [1.0, np.nan]])
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(call(mod.lse, backend, x), lse_ref(x, 1))
    np.testing.assert_array_equal(call(mod.rowmax, backend, x), np.max(x, axis=1))


def test_huge_logits_in_the_examples():
    xent = tl.load("examples/softmax.tl").xent
    Z = np.array([[800.0, 0.0, -3.0], [1e3, 1e3, 0.0]])
    y = np.array([0, 2])
    want = float(np.mean(lse_ref(Z, 1) - Z[np.arange(2), y]))
    for backend in BACKENDS:
        got = xent.compile(backend)(Z, y)
        assert np.isfinite(got) and np.isclose(got, want, rtol=1e-14)


# ------------------------------------------------------------------ derivatives
def inputs(rng, fn):
    n, m = 4, 5
    shapes = {"x": (n, m), "w": (n,)}
    if fn.name in ("prefix_lse", "causal"):
        shapes["x"] = (n,)
    return {p.name: rng.standard_normal(shapes[p.name]) for p in fn.program.params}


@pytest.mark.parametrize("name", ["lse_loss", "max_loss", "causal", "nested"])
def test_derivatives_by_finite_differences(mod, name):
    fn = mod[name]
    rng = np.random.default_rng(3)
    args = inputs(rng, fn)            # continuous random data: no ties
    wrt = [p.name for p in fn.program.params]
    for optimize in (True, False):
        grad_matches_fd(fn, wrt, args, rng, optimize=optimize)
    jvp_matches_fd(fn, wrt, args, rng)
    dot_product_identity(fn, wrt, args, rng)
    # the compiled derivatives agree with the interpreter
    g = tl.grad(fn, wrt=tuple(wrt))
    check_close(g.compile("numba")(**args), g.compile("numpy")(**args), name, rtol=1e-12)


@pytest.mark.parametrize("name", ["rowmax", "lse", "prefix_lse"])
def test_vector_outputs_dot_product(mod, name):
    fn = mod[name]
    rng = np.random.default_rng(4)
    args = inputs(rng, fn)
    dot_product_identity(fn, ["x"], args, rng)


@pytest.mark.parametrize("op, pick", [("max", np.max), ("min", np.min)])
def test_ties_split_the_derivative_equally(op, pick):
    f = tl.parse(f"def f(x: f64[n]) -> f64:\n    return 3.0 * {op}[j](x[j])\n")["f"]
    x = np.array([0.5, 2.0, -1.0, 2.0, 2.0]) * (1 if op == "max" else -1)
    hit = (x == pick(x)).astype(float)
    for backend in BACKENDS:
        g = tl.grad(f, wrt="x").compile(backend)(x)
        np.testing.assert_array_equal(g, 3.0 * hit / hit.sum())
        out, d = tl.jvp(f, wrt="x").compile(backend)(x, np.ones(5))
        assert out == 3.0 * pick(x) and d == 3.0       # the tangent averages the ties
    assert np.all(tl.hessian(f, wrt="x")(x) == 0.0)


def test_second_derivative_of_logsumexp_is_the_softmax_jacobian():
    f = tl.parse("def f(x: f64[n]) -> f64:\n    return logsumexp[j](x[j])\n")["f"]
    x = np.random.default_rng(5).standard_normal(6) * 3
    p = scipy.special.softmax(x)
    np.testing.assert_allclose(tl.grad(f, wrt="x")(x), p, rtol=1e-13)
    want = np.diag(p) - np.outer(p, p)
    for backend in BACKENDS:
        np.testing.assert_allclose(tl.hessian(f, wrt="x").compile(backend)(x), want,
                                   rtol=1e-12, atol=1e-15)
    v = np.random.default_rng(6).standard_normal(6)
    np.testing.assert_allclose(tl.hvp(f, wrt="x")(x, v), want @ v, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(tl.jacobian(tl.grad(f, wrt="x"), wrt="x")(x), want,
                               rtol=1e-12, atol=1e-15)


def test_gradients_read_the_stored_reduction(mod):
    """The softmax weight subtracts the stored logsumexp (no reduction in the adjoint)."""
    src = tl.grad(tl.load("examples/softmax.tl").xent, wrt="Z").source
    adjoint = [line for line in src.splitlines() if line.strip().startswith("Z_bar")]
    assert adjoint and "logsumexp" not in adjoint[0] and "exp(" in adjoint[0], src


def test_certificate_holds(mod):
    """On logsumexp, on max / min of plain and computed entries (the count of ties in
    the maximum's pass), and in the examples."""
    plain = tl.parse("def f(x: f64[n, m]) -> f64:\n    return sum[i](max[j](x[i, j]) ** 2)\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error", tl.TLCostWarning)
        tl.grad(plain.f, wrt="x").program
        tl.vjp(mod.prefix_max, wrt="x").program
        tl.jvp(mod.prefix_max, wrt="x").program
        for name in ("lse_loss", "causal", "nested", "max_loss"):
            fn = mod[name]
            wrt = tuple(p.name for p in fn.program.params)
            tl.grad(fn, wrt=wrt).program
            tl.jvp(fn, wrt=wrt).program
        for fn in tl.load("examples/softmax.tl"):
            (tl.vjp if fn.name == "softmax" else tl.grad)(fn, wrt="Z").program
        w2 = tl.load("benchmarks/workloads/w02_mlp.tl").mlp_xent
        tl.grad(w2, wrt=("W1", "c1", "W2", "c2")).program


# ------------------------------------------------------------------ ties in one pass
def derived(fn, kind="grad"):
    d = getattr(tl, kind)(fn, wrt=tuple(p.name for p in fn.program.params
                                        if p.elem == "f64"))
    return d, d.optimized_program()


@pytest.mark.parametrize("name, kind, cost", [
    ("max_loss", "grad", "19*m*n + 26*n + 9"),
    ("prefix_max", "vjp", "8*n^2 + 6*n"),
    ("prefix_max", "jvp", "6*n^2 + 10*n"),
    ("prefix_min", "vjp", None),
    ("rowmax", "jvp", None),
])
def test_the_count_of_ties_runs_in_the_maximums_pass(mod, name, kind, cost):
    """The derivative's count of ties `sum[j]([E == r[k]])` (and the jvp's sum of
    tangents over them) is recognised as a sum over its maximum's ties
    (tensorlang/ties.py) and costs one write per element and 2 operations per
    point (plus the weight), not a second pass; the op counter counts the same;
    the Numba kernel of the maximum writes it (no kernel of its own) and agrees
    with the interpreter on ties, -inf and NaN entries."""
    from tensorlang.backend.numba_module import generate
    from tensorlang.ties import tie_counts
    fn = mod[name]
    d, prog = derived(fn, kind)
    pairs = tie_counts(prog)
    assert pairs and all(prog.stmt(m).body[0].factors[0][0].op in ("max", "min")
                         for m in pairs.values())
    if cost is not None:
        assert str(tl.cost(d)) == cost
    src = generate(prog, "test", "")
    for count in pairs:
        assert f"# statement {count}\n" not in src           # no kernel of its own
    rng = np.random.default_rng(11)
    n, m = 5, 4
    args = {"x": np.round(rng.standard_normal((n, m) if fn.program.params[0].dims[1:]
                                              else (n,)) * 2) / 2,   # many ties
            "w": np.round(rng.standard_normal(n))}
    args = {p.name: args[p.name] for p in fn.program.params}
    params = [p.name for p in d.program.params]
    extra = {q: rng.standard_normal(tuple(n if z == "n" else m for z in dims))
             for q, dims in ((p.name, p.dims) for p in d.program.params) if q not in args}
    flat = args["x"].reshape(-1)
    for case in ("ties", "inf", "nan"):
        if case == "inf":
            flat[:3] = -np.inf
            flat[-1] = np.inf
        if case == "nan":
            flat[1] = np.nan
        call_args = [{**args, **extra}[q] for q in params]
        want = d.compile("numpy")(*call_args)
        got = d.compile("numba")(*call_args)
        listed = (lambda v: list(v) if isinstance(v, (list, tuple)) else [v])
        for a, b in zip(listed(want), listed(got), strict=True):
            # (a sum over ties adds in the kernel's order, not einsum's)
            np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-13, atol=1e-15,
                                       err_msg=case)
    args["x"] = rng.standard_normal(args["x"].shape)
    counted = d.count_ops(**args, **extra)
    sizes = {"n": n, "m": m}
    static = tl.cost(d)
    bound = static.evaluate(**{z: sizes[z] for z in static.symbols()})
    assert counted <= bound, (counted, str(static))


def test_a_hand_written_count_of_ties_is_one_pass_too():
    """The pairing is by structure, not by names or by who wrote the program; a
    count over another domain, or of another maximum, is not paired."""
    from tensorlang.ties import tie_counts
    src = """
def f(x: f64[n, m]) -> f64[n]:
    best[i] = max[a](x[i, a] * 2.0)
    many[i] = sum[b]([x[i, b] * 2.0 == best[i]])
    other[i] = sum[b]([x[i, b] == best[i]])
    some[i] = sum[b]([b >= 1 and x[i, b] * 2.0 == best[i]])
    late[i] = x[i, 0] * 3.0
    wsum[i] = sum[b]([x[i, b] * 2.0 == best[i]] * x[i, b] * 3.0)
    wbad[i] = sum[b]([x[i, b] * 2.0 == best[i]] * late[i])
    low[i] = [i >= 2] * min[a](x[i, a])
    lows[i] = sum[b]([i >= 2 and x[i, b] == low[i]] * x[i, b])
    lown[i] = sum[b]([x[i, b] == low[i]])
    out[i] = many[i] + other[i] + some[i] + wsum[i] + wbad[i] + lows[i] + lown[i]
    return out
"""
    fn = tl.parse(src)["f"]
    # (a weight may read only what is ready before the maximum runs; a guarded
    # minimum pairs with sums under its guard, which are 0 where the minimum is)
    pairs = {"many": "best", "wsum": "best", "lows": "low"}
    assert tie_counts(fn.program) == pairs
    from tensorlang.backend.numba_module import generate
    prog = fn.optimized_program()
    src = generate(prog, "test", "")
    for name in tie_counts(prog):
        assert f"# statement {name}\n" not in src
    assert set(tie_counts(prog)) >= {"lows"}
    x = np.round(np.random.default_rng(2).standard_normal((6, 3)))
    np.testing.assert_allclose(fn.compile("numba")(x), fn.compile("numpy")(x), rtol=1e-14)
    assert fn.count_ops(x=x) <= tl.cost(fn).evaluate(n=6, m=3)


# ------------------------------------------------------------------ printer, cost
def test_round_trip(mod):
    for fn in mod:
        text = fn.source
        again = tl.parse(text)[fn.name]
        assert again.source == text
        for g in (tl.grad, tl.jvp):
            if g is tl.grad and fn.program.shapes()[fn.program.outputs[0]][1]:
                continue
            d = g(fn, wrt="x")
            assert tl.parse(d.source)[d.name].source == d.source


def test_cost_matches_count(mod):
    rng = np.random.default_rng(7)
    for name in ("rowmax", "lse", "lse_loss", "prefix_lse"):
        fn = mod[name]
        args = inputs(rng, fn)
        sizes = dict(zip(("n", "m"), np.shape(args["x"])))
        static = tl.cost(fn)
        counted = fn.count_ops(**args)
        bound = static.evaluate(**{s: sizes[s] for s in static.symbols()})
        assert counted <= bound
        if name != "prefix_lse":          # no filter: exact
            assert counted == bound, (name, counted, str(static))
    # a max over m entries counts like a sum over them (plus one write per row);
    # logsumexp adds a subtraction, an exp and an addition per entry and log + add once
    # (the per-row 2: the statement's accumulate and its write; logsumexp's log and add)
    assert str(tl.cost(mod.rowmax)) == "2*m*n + 2*n"
    assert str(tl.cost(mod.lse)) == "5*m*n + 4*n"


# ------------------------------------------------------------------ rules stay off
@pytest.mark.parametrize("body, ref", [
    ("max[j]([j == 2] * x[j])", lambda x: max(x[2], 0.0)),
    ("max[j: n](sum[k]([k == j] * x[k]))", lambda x: x.max()),
    ("sum[i: n](max[j]([i == j] * x[j]))", lambda x: sum(max(v, 0.0) for v in x)),
    ("max[j: n](2.0)", lambda x: 2.0),
    ("logsumexp[j: n](0.0)", lambda x: np.log(len(x))),
    ("sum[i](logsumexp[j](x[i] + x[j]))", lambda x: lse_ref(x[:, None] + x[None, :], 1).sum()),
    ("min[j](x[j] + 1.0) * min[j](x[j] - 1.0)", lambda x: (x.min() + 1) * (x.min() - 1)),
    ("max[j](x[j]) - max[k](x[k])", lambda x: 0.0),
])
def test_sum_rules_do_not_reach_reductions(body, ref):
    f = tl.parse(f"def f(x: f64[n]) -> f64:\n    return {body}\n")["f"]
    x = -np.abs(np.random.default_rng(8).standard_normal(5)) - 0.5
    for backend in BACKENDS:
        assert np.isclose(f.compile(backend)(x), ref(x), rtol=1e-13, atol=1e-15), body


# ------------------------------------------------------------------ errors
@pytest.mark.parametrize("src, kind, text", [
    ("    return logsumexp(x[0])", tl.TLCallError, "logsumexp is a reduction"),
    ("    return max[i](x[i] + sum[i](x[i]))", tl.TLNameError, "already bound"),
    ("    return max[i, i](x[i])", tl.TLNameError, "appears twice"),
    ("    return max[i](1.0)", tl.TLShapeError, "cannot infer the range of index i"),
    ("    return max[i](x[i + 1])", tl.TLShapeError, "cannot infer the range"),
    ("    return max[i: n](x[i + 1])", tl.TLBoundsError, "index 0 of x may be out of range"),
    ("    return max[i: n | i + 1 < n](x[i + 1])", None, None),
    ("    return max[i | x[i]](x[i])", tl.TLTypeError, "a bracket needs a predicate"),
    ("    logsumexp = x[0]\n    return logsumexp", tl.TLSyntaxError, "keyword"),
    ("    return max[i](x[i]", tl.TLSyntaxError, "never closed"),
    ("    return max[x](x[0])", tl.TLNameError, "index x has the name of a tensor"),
])
def test_misuse_is_a_located_error(src, kind, text):
    source = "def f(x: f64[n]) -> f64:\n" + src + "\n"
    if kind is None:
        tl.parse(source)
        return
    with pytest.raises(kind) as err:
        tl.parse(source, "bad.tl")
    assert text in str(err.value)
    assert str(err.value).startswith("bad.tl:")


def test_filtered_sum_is_a_bracket():
    a = tl.parse("def f(x: f64[n]) -> f64:\n    return sum[i, j | i < j](x[i] * x[j])\n")["f"]
    b = tl.parse("def f(x: f64[n]) -> f64:\n    return sum[i, j]([i < j] * x[i] * x[j])\n")["f"]
    assert a.source == b.source
    x = np.arange(1.0, 5.0)
    assert a(x) == sum(x[i] * x[j] for i in range(4) for j in range(i + 1, 4))


def test_derivative_over_no_point_is_zero():
    """A max over an empty filtered domain is -inf and sends nothing back (no 0 / 0)."""
    hinge = tl.load("examples/softmax.tl").hinge
    Z = np.random.default_rng(9).standard_normal((3, 1))      # one class: no wrong class
    y = np.zeros(3, dtype=np.int64)
    for backend in BACKENDS:
        assert hinge.compile(backend)(Z, y) == 0.0
        g = tl.grad(hinge, wrt="Z").compile(backend)(Z, y)
        np.testing.assert_array_equal(g, np.zeros((3, 1)))


def test_a_hoisted_reduction_under_a_bracket_stays_put():
    """The statement a guarded reduction is hoisted into keeps the guard and is not
    hoisted again (no chain of statements, no round limit)."""
    f = tl.parse("def f(A: f64[n, m]) -> f64[n, m]:\n"
                 "    t[i, j] = A[i, j] * [j + 1 < m] * max[r](A[r, j + 1])\n"
                 "    return t\n")["f"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        src = f.optimized_program()
        v = tl.vjp(f, wrt="A").program
    assert sum(1 for s in src.stmts if "max" in s.name) == 1
    assert sum(1 for s in v.stmts if s.name.endswith("_max")) == 1
    A = np.random.default_rng(10).standard_normal((3, 4))
    want = A * np.concatenate([A.max(axis=0)[1:], [0.0]])[None, :]
    for backend in BACKENDS:
        np.testing.assert_allclose(f.compile(backend)(A), want, rtol=1e-14)


def test_forward_mode_of_a_compound_entry_of_several_parameters():
    """The tangent of a reduction's entry `-(x[s] - mu[k]) ** 2` with respect to
    both x and mu has two terms, so forward mode may store the compound factor and
    its tangent as statements over the reduced index k (as it does over a sum's);
    it once built them without k's range and failed inside the bounds check."""
    f = tl.parse("""
def mix(x: f64[N], mu: f64[K]) -> f64:
    return sum[s](logsumexp[k](-(x[s] - mu[k]) ** 2))
""").mix
    rng = np.random.default_rng(0)
    args = dict(x=rng.standard_normal(5), mu=rng.standard_normal(3))
    with warnings.catch_warnings():
        warnings.simplefilter("error", tl.TLCostWarning)
        jvp_matches_fd(f, ("x", "mu"), args, rng)
        dot_product_identity(f, ("x", "mu"), args, rng)


def test_a_reduction_over_a_few_constant_points_is_written_point_by_point():
    """A max, min or logsumexp over an index of constant range 4 or less is compiled
    with no loop over it: its case brackets fold per point (no `[c == 1]` is tested
    at run time), a point whose filter folds to false is left out (all of them for
    `none`), and the values are the interpreter's, with -inf, +inf and NaN entries and
    where no point passes."""
    from tensorlang.backend.numba_module import generate
    src = """
def f(a: f64[n], b: f64[n], d: f64[n]) -> f64[n]:
    s[i] = logsumexp[c: 3 | c == 0 or c == 1 and i >= 1 or c == 2 and i >= 2]([c == 0] * a[i] + [c == 1 and i >= 1] * b[i - 1] + [c == 2 and i >= 2] * d[i - 2])
    lo[i] = min[c: 2 | c == 1 and i >= 3](a[i] * ([c == 0] + 2.0 * [c == 1]))
    hi[i] = max[c: 4](a[i] + [c == 3] * b[i] - [c == 1] * d[i])
    none[i] = logsumexp[c: 2 | c >= 5](a[i])
    out[i] = s[i] + [i >= 3] * lo[i] + hi[i] + max(none[i], -1.0)
    return out
"""
    fn = tl.parse(src)["f"]
    code = generate(fn.optimized_program(), "test", "")
    assert "for i_c in" not in code and "c - 1" not in code
    rng = np.random.default_rng(7)
    n = 6
    base = {k: rng.standard_normal(n) for k in "abd"}
    for case in ("plain", "-inf", "inf", "nan"):
        args = {k: v.copy() for k, v in base.items()}
        if case == "-inf":
            args["a"][:] = -np.inf
            args["b"][2] = -np.inf
        if case == "inf":
            args["b"][3] = np.inf
        if case == "nan":
            args["d"][1] = np.nan
        want = fn.compile("numpy")(**args)
        got = fn.compile("numba")(**args)
        np.testing.assert_allclose(got, want, rtol=1e-14, atol=0, err_msg=case)
    g = tl.grad(tl.parse(src.replace("-> f64[n]", "-> f64").replace(
        "return out", "return sum[i](out[i])"))["f"], wrt=("a", "b", "d"))
    for x, y in zip(g.compile("numba")(**base), g.compile("numpy")(**base)):
        np.testing.assert_allclose(x, y, rtol=1e-13)


def test_the_division_by_the_ties_is_hoisted_from_a_term_with_a_value_bracket():
    """A maximum's derivative divides each tied entry's cotangent by the number of
    ties, `max(count, 1.0)`, in a term whose bracket tests values.  That factor is
    finite wherever its reads are, so it is stored once per element of the maximum
    (hoist_invariant_factors); a call that could fail where the bracket is false,
    such as a log, stays in its term."""
    from tensorlang.api import Function
    from tensorlang.inputs import random_inputs
    from tensorlang.opt.hoist import hoist_invariant_factors
    prog = tl.parse("""
def f(x: f64[n, m], g: f64[n], c: f64[n], v: f64[n]) -> (f64[n, m], f64[n, m]):
    y[i, j] = [x[i, j] >= 0.5] * g[i] / max(c[i], 1.0)
    z[i, j] = [x[i, j] > 0.0] * g[i] * log(v[i])
    return y, z
""")["f"].program
    out = hoist_invariant_factors(prog)
    held = [st for st in out.stmts if st.name not in ("y", "z")]
    assert len(held) == 1 and [d for _, d in held[0].indices] == ["n"], out
    assert out.stmt("z") == prog.stmt("z")
    args = random_inputs(Function(prog), {}, {"n": 3, "m": 4})
    args["v"] = np.abs(args["v"]) + 0.1
    want = Function(prog).compile("numpy")(**args)
    got = Function(out).compile("numpy")(**args)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-14)


def test_a_max_recurrence_gradient_divides_by_its_ties_once_per_element():
    """Viterbi's gradient divides each tied entry's cotangent (T K^2 of them) by
    the number of ties of its maximum (T K): stored once per element of the
    maximum, the division costs 3 K^2 T less than at every entry."""
    f = tl.parse("""
def viterbi(pi: f64[K], A: f64[K, K], E: f64[T, K]) -> f64:
    v[t: T, j: K] = E[t, j] + [t == 0] * pi[j] + [t >= 1] * max[i](v[t - 1, i] + A[i, j])
    return max[j](v[T - 1, j])
""")["viterbi"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tl.TLCostWarning)
        g = tl.grad(f, wrt=("pi", "A", "E"))
        cost = tl.cost(g)
        assert cost.evaluate(K=1000, T=1000) < 19 * 1000 ** 3, cost
        rng = np.random.default_rng(4)
        grad_matches_fd(f, ("pi", "A", "E"), dict(pi=rng.standard_normal(4),
                        A=rng.standard_normal((4, 4)), E=rng.standard_normal((6, 4))), rng)
