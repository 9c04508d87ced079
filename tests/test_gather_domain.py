"""A derivative rejects exactly the labels its function rejects.

Where f raises a located TLBoundsError for a label outside its tensor, every
derivative of f (grad, value_and_grad, vjp, jvp, hvp, hessian, jacobian) raises
the very same error, on the interpreter, the Numba backend and the JAX
emission's eager call: a label too big or negative, at the outer and the inner
level of a nested gather, inside a comparison, in a relation, inside a
recurrence, in a term the derivative does not otherwise need.  Labels that a
bracket excludes stay legal, and with valid labels the values are those of the
derivative (finite differences and the identities between the kinds).  Data
are seeded.
"""
import os
import sys
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tensorlang as tl
from tensorlang.domain import label_checks

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from derivcheck import as_printed, check_close, directional_fd  # noqa: E402

KINDS = ("grad", "value_and_grad", "vjp", "jvp", "hvp", "hessian", "jacobian")


def fn(src):
    return tl.parse(src, filename="g.tl")["f"]


def derivative(kind, f, wrt):
    """tl.<kind>(f, wrt); a certificate warning must not be about the label checks
    (the scatter case's Hessian has one of its own, m^2 q for pairs of edges)."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always", tl.TLCostWarning)
        d = getattr(tl, kind)(f, wrt=wrt)
    for w in seen:
        assert "statement labels" not in str(w.message), str(w.message)
    return d


def extra_args(kind, f, wrt, args, rng):
    """The arguments a derivative takes besides f's: a tangent or a cotangent."""
    if kind in ("jvp", "hvp"):
        return {f"d_{wrt}": rng.standard_normal(np.shape(args[wrt]))}
    if kind == "vjp":
        return {"d_out": 1.0}
    return {}


class Case:
    def __init__(self, src, wrt, good, bad=(), legal=()):
        self.f = fn(src)
        self.wrt = wrt
        self.good = good            # rng -> valid arguments
        self.bad = bad              # (what, args -> args with a bad label) f rejects
        self.legal = legal          # (what, args -> args) with a label f never reads


def replace(name, pos, value):
    def edit(args):
        out = dict(args)
        out[name] = np.array(args[name]).copy()
        out[name][pos] = value
        return out
    return edit


def edges(rng, **more):
    """Arguments of the edge-list cases: P and Q over 3 x 4 nodes, 6 edges, weights."""
    return dict(P=rng.standard_normal((3, 4)), Q=rng.standard_normal((3, 4)),
                src=rng.integers(0, 4, 6), dst=rng.integers(0, 4, 6),
                w=rng.standard_normal(6), **more)


CASES = {
    "gather": Case(
        "def f(X: f64[n], y: i64[m]) -> f64:\n"
        "    return sum[s](X[y[s]] ** 2)\n",
        "X",
        lambda rng: dict(X=rng.standard_normal(3), y=rng.integers(0, 3, 5)),
        bad=(("too big", replace("y", 1, 3)), ("negative", replace("y", 4, -1)))),
    "nested": Case(
        "def f(E: f64[v, d], y: i64[b], z: i64[c], w: f64[c, d]) -> f64:\n"
        "    return sum[s, k](E[y[z[s]], k] ** 2 * w[s, k])\n",
        "E",
        lambda rng: dict(E=rng.standard_normal((4, 2)), y=rng.integers(0, 4, 3),
                         z=rng.integers(0, 3, 5), w=rng.standard_normal((5, 2))),
        bad=(("outer too big", replace("y", 0, 4)), ("outer negative", replace("y", 2, -3)),
             ("inner too big", replace("z", 3, 3)), ("inner negative", replace("z", 1, -1)))),
    "comparison": Case(
        "def f(P: f64[b, v], y: i64[m], z: i64[b]) -> f64:\n"
        "    return sum[s, t]([t == y[z[s]]] * P[s, t] ** 2)\n",
        "P",
        lambda rng: dict(P=rng.standard_normal((4, 3)), y=rng.integers(0, 3, 2),
                         z=rng.integers(0, 2, 4)),
        bad=(("inner too big", replace("z", 2, 2)), ("inner negative", replace("z", 0, -1))),
        # the compared label itself is no index: one outside 0 .. v - 1 matches no t
        legal=(("compared label too big", replace("y", 1, 7)),
               ("compared label negative", replace("y", 0, -4)))),
    "relation": Case(
        "def f(M: bool[v, d], y: i64[b], x: f64[b, d]) -> f64:\n"
        "    return sum[s, c]([M[y[s], c]] * x[s, c] ** 2)\n",
        "x",
        lambda rng: dict(M=rng.random((3, 2)) < 0.6, y=rng.integers(0, 3, 4),
                         x=rng.standard_normal((4, 2))),
        bad=(("too big", replace("y", 3, 3)), ("negative", replace("y", 1, -2)))),
    "not differentiated": Case(
        "def f(X: f64[n], E: f64[v], y: i64[m]) -> f64:\n"
        "    return sum[i](X[i] ** 3) + sum[s](E[y[s]])\n",
        "X",
        lambda rng: dict(X=rng.standard_normal(3), E=rng.standard_normal(4),
                         y=rng.integers(0, 4, 5)),
        bad=(("too big", replace("y", 2, 4)), ("negative", replace("y", 0, -1)))),
    "scatter": Case(
        "def f(X: f64[v, q], src: i64[m], dst: i64[m], w: f64[n, q]) -> f64:\n"
        "    agg[u: n, c: q] = sum[e]([u == dst[e]] * X[src[e], c])\n"
        "    return sum[u, c](agg[u, c] ** 2 * w[u, c])\n",
        "X",
        lambda rng: dict(X=rng.standard_normal((4, 2)), src=rng.integers(0, 4, 6),
                         dst=rng.integers(0, 3, 6), w=rng.standard_normal((3, 2))),
        bad=(("source too big", replace("src", 2, 4)),),
        # an edge whose destination is no node reads nothing at its source
        legal=(("source of an edge to no node", lambda a: replace("src", 1, 9)(
            replace("dst", 1, 3)(a))),)),
    "masked": Case(
        "def f(E: f64[v], y: i64[b], z: i64[c], w: f64[c]) -> f64:\n"
        "    return sum[s]([z[s] >= 0] * E[y[z[s]]] ** 2 * w[s])\n",
        "E",
        lambda rng: dict(E=rng.standard_normal(4), y=rng.integers(0, 4, 3),
                         z=rng.integers(0, 3, 6), w=rng.standard_normal(6)),
        bad=(("inner too big", replace("z", 4, 3)), ("outer too big", replace("y", 1, 4))),
        legal=(("masked inner", replace("z", 2, -1)), ("masked far", replace("z", 5, -9)))),
    "value guard": Case(
        "def f(A: f64[b, d], E: f64[v], y: i64[b]) -> f64:\n"
        "    h[s] = sum[c](A[s, c])\n"
        "    return sum[s]([h[s] > 0.0] * E[y[s]] * h[s] ** 2)\n",
        "A",
        lambda rng: dict(A=np.array([[1.0, 0.5], [-2.0, 0.25], [0.75, 0.5], [-1.0, -1.0]]),
                         E=rng.standard_normal(3), y=rng.integers(0, 3, 4)),
        bad=(("read where the guard holds", replace("y", 0, 3)),),
        legal=(("where the guard is false", replace("y", 1, 5)),
               ("negative where the guard is false", replace("y", 3, -1)))),
    "recurrence": Case(
        "def f(E: f64[v, d], y: i64[T], h0: f64[d]) -> f64:\n"
        "    h[t: T, i: d] = tanh(E[y[t], i] + [t == 0] * h0[i] + [t >= 1] * h[t - 1, i])\n"
        "    return sum[i](h[T - 1, i] ** 2)\n",
        "E",
        lambda rng: dict(E=rng.standard_normal((3, 2)) * 0.5, y=rng.integers(0, 3, 4),
                         h0=rng.standard_normal(2) * 0.5),
        bad=(("too big", replace("y", 2, 3)), ("negative", replace("y", 0, -1)))),
    # a recurrence group whose step gathers through an edge list: the check reads a
    # member of the group, so it must stand after the whole group, and the values it
    # reads do not matter (no copy of the recurrence is made for it)
    "edge recurrence": Case(
        "def f(x0: f64[n], w: f64[m], src: i64[m], dst: i64[m], steps: f64[T]) -> f64:\n"
        "    F[t: T, i: n] = sum[e]([dst[e] == i] * w[e] * a[t, src[e]])\n"
        "    a[t: T, i: n] = [t == 0] * x0[i] + [t >= 1] * tanh(a[t - 1, i] + F[t - 1, i])\n"
        "    return sum[i](a[T - 1, i] ** 2)\n",
        "w",
        lambda rng: dict(x0=rng.standard_normal(3), w=rng.standard_normal(5) * 0.5,
                         src=rng.integers(0, 3, 5), dst=rng.integers(0, 3, 5), steps=np.zeros(4)),
        bad=(("source too big", replace("src", 3, 3)),)),
    # The w-gradient's sum over s is contracted apart from the scalar c and from the
    # range check of the eliminated comparison; the check must go with the sum, which
    # reads Q through dst (an edge to no node reads nothing).
    "compared label beside a scalar": Case(
        "def f(P: f64[k, n], Q: f64[k, n], src: i64[E], dst: i64[E], w: f64[E], c: f64) -> f64:\n"
        "    y[s: k, i: n] = sum[e]([dst[e] == i] * c * w[e] * P[s, src[e]])\n"
        "    return sum[s, i](y[s, i] * Q[s, i])\n",
        "w",
        lambda rng: edges(rng, c=0.7),
        bad=(("source too big", replace("src", 3, 4)),),
        legal=(("destination of no node", replace("dst", 2, 9)),
               ("negative destination", replace("dst", 0, -2)))),
    # The same edges, but the function also reads Q through every destination: any
    # destination out of range is rejected, so the derivatives' range brackets on dst
    # always hold after the check that rejects it, and go (drop_enforced_label_guards).
    "compared label read elsewhere": Case(
        "def f(P: f64[k, n], Q: f64[k, n], src: i64[E], dst: i64[E], w: f64[E]) -> f64:\n"
        "    y[s: k, i: n] = sum[e]([dst[e] == i] * w[e] * P[s, src[e]])\n"
        "    r[e] = sum[s](Q[s, dst[e]] * w[e])\n"
        "    return sum[s, i](y[s, i] * Q[s, i]) + sum[e](r[e] ** 2)\n",
        "w",
        edges,
        bad=(("destination too big", replace("dst", 2, 4)),
             ("negative destination", replace("dst", 5, -1)),
             ("source too big", replace("src", 1, 4)))),
    # y is read at the constant label z[0] only where some z[e] names a row s: the
    # gradient reads it outside the sum over e (2 [l == y[z[0]]] * E_bar_sum[p]), so
    # that read carries z[0]'s range check (guard_reads_the_function_skips); with no
    # z[e] in range the function reads nothing through y.
    "constant label under a scatter": Case(
        "def f(E: f64[k, m], y: i64[n], z: i64[n]) -> f64:\n"
        "    o[s: n, c: m] = sum[e: n]([s == z[e]] * E[y[z[0]], c])\n"
        "    return sum[s, c](o[s, c] ** 2)\n",
        "E",
        lambda rng: dict(E=rng.standard_normal((3, 2)), y=rng.integers(0, 3, 4),
                         z=rng.integers(0, 4, 4)),
        bad=(("constant label negative where an edge matches",
              lambda a: replace("z", 1, 2)(replace("z", 0, -1)(a))),
             ("constant label too big where an edge matches",
              lambda a: replace("z", 1, 2)(replace("z", 0, 4)(a))),
             ("row of the constant label too big", replace("y", 0, 3))),
        legal=(("no edge matches", lambda a: dict(a, z=np.array([-1, 4, 7, -3]))),)),
    # The same read beside a sum the function's own program splits off: the factor
    # E[y[z[0]]] uses no index and stayed outside the sum over e, so the function
    # itself read y at z[0] with no z[e] in range (opt/contract.py keeps it inside).
    "constant label beside a scatter sum": Case(
        "def f(x: f64[n], E: f64[k], y: i64[n], z: i64[n]) -> f64:\n"
        "    return sum[s, e: n]([s == z[e]] * E[y[z[0]]] * x[s] ** 2)\n",
        "x",
        lambda rng: dict(x=rng.standard_normal(3), E=rng.standard_normal(2),
                         y=rng.integers(0, 2, 3), z=rng.integers(0, 3, 3)),
        bad=(("constant label negative where an edge matches",
              lambda a: replace("z", 1, 2)(replace("z", 0, -1)(a))),),
        legal=(("no edge matches", lambda a: dict(a, z=np.array([-1, 3, 5]))),)),
    # The same with the read over an index of its own: E[y[z[0]], c] was an operand
    # summed over c apart from the sum over e (`sum[e]([0 <= z[e] < n] * ...) *
    # sum[c](E[y[z[0]], c])`), so the function read y at z[0] with no z[e] in range
    # (the gathers fuzzer's scalar outputs).
    "constant label over its own index beside a scatter sum": Case(
        "def f(x: f64[n], E: f64[k, m], y: i64[n], z: i64[n]) -> f64:\n"
        "    return sum[s, e: n, c: m]([s == z[e]] * E[y[z[0]], c] * x[s] ** 2)\n",
        "x",
        lambda rng: dict(x=rng.standard_normal(3), E=rng.standard_normal((2, 2)),
                         y=rng.integers(0, 2, 3), z=rng.integers(0, 3, 3)),
        bad=(("constant label negative where an edge matches",
              lambda a: replace("z", 1, 2)(replace("z", 0, -1)(a))),),
        legal=(("no edge matches", lambda a: dict(a, z=np.array([-1, 3, 5]))),)),
    # `[e != y[z[t]]]` reads y at z[t] for every e.  The check summed e away into
    # `[m >= 2 or y[z[t]] != 0]`, which passes without that read wherever m >= 2, so
    # no derivative raised for a bad z[t] (the gathers fuzzer's derivatives).
    "label read inside a difference": Case(
        "def f(E: f64[k, m], y: i64[n], z: i64[n], x: f64[n]) -> f64:\n"
        "    return sum[t, e]([e != y[z[t]]] * E[y[t], e]) + sum[t](x[t] ** 2)\n",
        "x",
        lambda rng: dict(E=rng.standard_normal((2, 3)), y=rng.integers(0, 2, 3),
                         z=rng.integers(0, 3, 3), x=rng.standard_normal(3)),
        bad=(("inner negative", replace("z", 1, -3)), ("inner too big", replace("z", 2, 3)))),
}

BAD = [(name, what) for name, case in CASES.items() for what, _ in case.bad]
LEGAL = [(name, what) for name, case in CASES.items() for what, _ in case.legal]


def edited(case, what, table):
    return dict(table)[what](case.good(np.random.default_rng(7)))


def error_of(call) -> str:
    with pytest.raises(tl.TLBoundsError) as info:
        call()
    return str(info.value)


def rejects_like_f(case, kind, args, backend):
    want = error_of(lambda: case.f.compile(backend)(**args))
    assert want.startswith("g.tl:") and "gathered index" in want, want
    d = derivative(kind, case.f, case.wrt).compile(backend)
    more = extra_args(kind, case.f, case.wrt, args, np.random.default_rng(1))
    got = error_of(lambda: d(**args, **more))
    assert got == want


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name,what", BAD)
def test_a_derivative_rejects_the_label_f_rejects(name, what, kind):
    case = CASES[name]
    rejects_like_f(case, kind, edited(case, what, case.bad), "numpy")


# Numba: every kind on the nested and the masked gather, the first bad label of each
# other case for the gradient (each derivative is a module to compile).
NUMBA = ([("nested", what, kind) for what, _ in CASES["nested"].bad[::3] for kind in KINDS]
         + [("masked", CASES["masked"].bad[0][0], kind) for kind in KINDS]
         + [(name, case.bad[0][0], "grad") for name, case in CASES.items()
            if name not in ("nested", "masked")])


@pytest.mark.parametrize("name,what,kind", NUMBA)
def test_a_compiled_derivative_rejects_the_label_f_rejects(name, what, kind):
    case = CASES[name]
    rejects_like_f(case, kind, edited(case, what, case.bad), "numba")


@pytest.mark.parametrize("kind", KINDS)
def test_the_eager_jax_call_rejects_the_label_f_rejects(kind):
    pytest.importorskip("jax")
    for name in ("nested", "not differentiated", "recurrence"):
        case = CASES[name]
        for what, _ in case.bad:
            rejects_like_f(case, kind, edited(case, what, case.bad), "jax")


def values(case, args, backend="numpy"):
    """Every kind's result at args, checked against the others and against finite
    differences of f."""
    rng = np.random.default_rng(3)
    f, w = case.f.compile(backend), case.wrt
    d = {kind: derivative(kind, case.f, w).compile(backend) for kind in KINDS}
    value = f(**args)
    grad = d["grad"](**args)
    direction = rng.standard_normal(np.shape(args[w]))
    fd = directional_fd(f, args, {w: direction})
    check_close(np.sum(grad * direction), fd, "grad along a direction")
    v, g = d["value_and_grad"](**args)
    check_close(v, value, "value")
    check_close(g, grad, "value_and_grad", rtol=1e-12, atol=1e-12)
    check_close(d["vjp"](**args, d_out=1.0), grad, "vjp", rtol=1e-12, atol=1e-12)
    check_close(d["jacobian"](**args), grad, "jacobian", rtol=1e-12, atol=1e-12)
    out, tangent = d["jvp"](**args, **{f"d_{w}": direction})
    check_close(out, value, "jvp value")
    check_close(tangent, np.sum(grad * direction), "jvp tangent", rtol=1e-10, atol=1e-10)
    hessian = d["hessian"](**args)
    hvp = d["hvp"](**args, **{f"d_{w}": direction})
    k = direction.size
    check_close(hvp, hessian.reshape(k, k) @ direction.ravel(), "hvp", rtol=1e-10, atol=1e-10)
    fd_grad = directional_fd(d["grad"], args, {w: direction})
    check_close(hvp, fd_grad, "hvp against differences of the gradient")
    return grad


@pytest.mark.parametrize("name", CASES)
def test_valid_labels_give_the_derivatives_values(name):
    case = CASES[name]
    values(case, case.good(np.random.default_rng(11)))


@pytest.mark.parametrize("name,what", LEGAL)
def test_a_label_f_never_reads_stays_legal_for_every_derivative(name, what):
    case = CASES[name]
    args = edited(case, what, case.legal)
    case.f.compile("numpy")(**args)                 # f accepts it ...
    values(case, args)                              # ... and so does every derivative


@pytest.mark.parametrize("name,what", [LEGAL[0], LEGAL[2], LEGAL[4]])
def test_a_label_f_never_reads_stays_legal_when_compiled(name, what):
    case = CASES[name]
    args = edited(case, what, case.legal)
    want = derivative("grad", case.f, case.wrt).compile("numpy")(**args)
    got = derivative("grad", case.f, case.wrt).compile("numba")(**args)
    check_close(got, want, "compiled gradient", rtol=1e-12, atol=1e-12)


def test_a_derivative_of_a_derivative_keeps_the_labels_checks():
    """jvp of a gradient, and a jvp of a jvp: the checks travel with each derivative,
    so the second one has them too."""
    case = CASES["nested"]
    args = edited(case, "outer too big", case.bad)
    want = error_of(lambda: case.f(**args))
    g = tl.grad(case.f, wrt="E")
    hv = tl.jvp(g, wrt="E")
    d_E = np.ones_like(args["E"])
    assert error_of(lambda: hv(**args, d_E=d_E)) == want
    twice = tl.jvp(tl.jvp(case.f, wrt="E"), wrt="w")
    d_w = np.ones_like(args["w"])
    assert error_of(lambda: twice(**args, d_E=d_E, d_w=d_w)) == want


def test_the_checks_cost_one_operation_per_label_read():
    """The gradient of sum_s X[y[s]]^2 gains m + 1 operations (an addition per label
    and the write); value_and_grad reads every label in its value and gains nothing."""
    f = CASES["gather"].f
    g = tl.grad(f, wrt="X")
    unchecked = g.program.stmts[1:]
    assert [s.name for s in g.program.stmts] == ["labels"] + [s.name for s in unchecked]
    from tensorlang.costs import program_cost
    from tensorlang.ssa.ir import Program
    p = g.program
    bare = Program(p.name, p.params, tuple(unchecked), p.outputs, p.tuple_return)
    assert str(program_cost(p) - program_cost(bare)) == "m + 1"
    vg = tl.value_and_grad(f, wrt="X")
    assert all(s.name != "labels" for s in vg.program.stmts)
    assert label_checks(f.optimized_program(), vg.program) is vg.program


def test_a_compiled_check_reads_the_labels_not_the_values():
    """The Numba kernel of a check range-checks each label and takes nothing through it
    (backend/labelcheck.py): a pass over y, not a random read of X per label."""
    from tensorlang.backend.numba_backend import module_source
    g = tl.grad(CASES["gather"].f, wrt="X")
    text = module_source(g.program)
    check = text[text.index("# statement labels"):text.index("return v_labels")]
    assert "v_y[" in check and "v_X.shape[0]" in check and "v_X[" not in check, check
    assert "v_X[" in text[text.index("# statement X_bar"):]


def check_cost(g):
    """The cost of a derivative's label checks (its statements no output reads)."""
    from tensorlang.costs import program_cost
    from tensorlang.ssa.ir import Program
    from tensorlang.opt.simplify import remove_dead_statements
    p = g.program
    return program_cost(p) - program_cost(remove_dead_statements(
        Program(p.name, p.params, p.stmts, p.outputs, p.tuple_return)))


@pytest.mark.parametrize("src,wrt,labels", [
    # a scatter: the equality with the output index holds for some u when dst[e] is in range
    ("def f(X: f64[n, q], src: i64[m], dst: i64[m], v: f64[n, q]) -> f64:\n"
     "    agg[u: n, c: q] = sum[e]([u == dst[e]] * X[src[e], c])\n"
     "    return sum[u, c](agg[u, c] * v[u, c] ** 2)\n", "X", "m"),
    # a disequality with a class index: some c differs from any label
    ("def f(Z: f64[b, k], y: i64[b]) -> f64:\n"
     "    return sum[s, c]([c != y[s]] * max(0.0, 1.0 + Z[s, c] - Z[s, y[s]]))\n", "Z", "b"),
    # a reduction over a row read through a label: its positions are fixed
    ("def f(W: f64[v, v], tok: i64[T]) -> f64:\n"
     "    return sum[t]([t + 1 < T] * (logsumexp[q](W[tok[t], q]) - W[tok[t], tok[t + 1]]))\n",
     "W", "T"),
    # a gather inside a recurrence group (the member read is not copied: a second run of
    # the recurrence would cost T * n for m labels)
    ("def f(x0: f64[n], w: f64[m], src: i64[m], dst: i64[m], steps: f64[T]) -> f64:\n"
     "    F[t: T, i: n] = sum[e]([dst[e] == i] * w[e] * a[t, src[e]])\n"
     "    a[t: T, i: n] = [t == 0] * x0[i] + [t >= 1] * tanh(a[t - 1, i] + F[t - 1, i])\n"
     "    return sum[i](a[T - 1, i] ** 2)\n", "w", "m"),
])
def test_a_check_costs_a_few_operations_per_label(src, wrt, labels):
    f = fn(src)
    c = check_cost(tl.grad(f, wrt=wrt))
    assert c.symbols() == [labels] and c.degree() == 1, str(c)
    assert c.evaluate(**{labels: 1000}) <= 3 * 1000 + 2, str(c)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", CASES)
def test_a_printed_derivative_with_checks_parses_back_to_itself(name, kind):
    """The statements, as printed; not what the planner was told about the labels
    (`Stmt.checked_labels`), which no source text states: a derivative's statement
    after its checks knows its labels in range, the same statement parsed does not."""
    case = CASES[name]
    d = derivative(kind, case.f, case.wrt)
    parsed = tl.parse(d.source, "g.tl")[d.name].program
    assert parsed == as_printed(d.program), d.source


@pytest.mark.parametrize("name", CASES)
def test_the_checks_do_not_depend_on_index_names(name):
    """The costs of f's derivatives, checks included, with every index renamed
    (test_rename_invariance.py's permutations)."""
    from test_rename_invariance import costs, permutations
    from tensorlang.ssa.names import rename_binders
    from tensorlang.ssa.printer import print_program
    f = CASES[name].f
    want = costs(f)
    for how, mapping in permutations(f.program).items():
        prog = rename_binders(f.program, lambda n, m=mapping: m.get(n, n))
        got = costs(tl.parse(print_program(prog))["f"])
        assert got == want, (how, print_program(prog))


# ------------------------------------------------------------ property: random gathers
# The `gathers` fuzzer's programs (tests/fuzz/gathers.py): nested gathers, guarded
# ones, comparisons and relations through labels, half of them with a bad label.
LOSS = ("def L(y: i64[n], z: i64[n], w: i64[k], E: f64[k, m], x: f64[k], v: f64[n], "
        "R: bool[k, m]) -> f64:\n"
        "    o = gat(y, z, w, E, x, v, R)\n"
        "    return {}\n")


def outcome(call):
    """('ok', value) or ('bounds', the line a bad gathered label's error points at;
    None for a label refused with the arguments, before anything runs)."""
    try:
        return "ok", call()
    except tl.TLBoundsError as exc:
        shown = str(exc)
        return "bounds", shown.split(":")[:2] if "gathered index" in shown else None


@settings(max_examples=60, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2 ** 31 - 1))
def test_random_gathers_derivatives_reject_what_f_rejects(seed):
    from fuzz.gathers import make
    case = make(seed, output="tensor")        # (the loss below sums its tensor)
    two_d = "c: m" in case.source
    total = "sum[s: n, c: m](o[s, c] ** 2)" if two_d else "sum[s: n](o[s] ** 2)"
    try:
        mod = tl.parse(case.source + LOSS.format(total), "g.tl")
    except tl.TLError:
        return                                    # a form the language may refuse
    f, loss = mod["gat"], mod["L"]
    args = case.inputs
    d_out = np.ones((len(args["y"]), args["E"].shape[1]) if two_d else len(args["y"]))
    want_f = outcome(lambda: f(**args))
    want_loss = outcome(lambda: loss(**args))
    assert want_loss[0] == want_f[0]
    for wrt in ("E", "x", "v"):
        for kind in ("grad", "jvp", "hvp"):
            d = derivative(kind, loss, wrt)
            more = extra_args(kind, loss, wrt, args, np.random.default_rng(seed))
            got = outcome(lambda: d(**args, **more))
            assert got[0] == want_loss[0], (kind, wrt, case.source, case.note)
            if got[0] == "bounds":
                assert got[1] == want_loss[1], (kind, wrt, case.source, case.note)
        got = outcome(lambda: tl.vjp(f, wrt=wrt)(**args, d_out=d_out))
        assert got[0] == want_f[0], ("vjp", wrt, case.source, case.note)
        if got[0] == "bounds":
            assert got[1] == want_f[1], ("vjp", wrt, case.source, case.note)


def test_a_copied_statement_runs_after_the_statements_it_shares():
    """The check of lp[a, ch[a]] needs lp, which the gradient does not compute; its
    copy reads IV, which the gradient computes: the copy stands after IV, not
    before every statement (where it read IV before IV was written)."""
    f = fn("""
def f(V: f64[N, J], lam: f64[G], nest: i64[J], ch: i64[N]) -> f64:
    IV[a: N, g: G] = logsumexp[j | nest[j] == g](V[a, j] / lam[g])
    lp[a, j] = V[a, j] / lam[nest[j]] + IV[a, nest[j]]
    return -sum[a](lp[a, ch[a]])
""")
    rng = np.random.default_rng(0)
    args = dict(V=rng.standard_normal((3, 4)), lam=rng.random(2) + 0.5,
                nest=np.array([0, 1, 0, 1]), ch=np.array([1, 2, 3]))
    g = tl.grad(f, wrt=("V", "lam"))
    names = [s.name for s in g.program.stmts]
    assert names.index("lp") > names.index("IV")
    dirs = {w: rng.standard_normal(np.shape(args[w])) for w in ("V", "lam")}
    for backend in ("numpy", "numba"):
        gV, glam = g.compile(backend)(**args)
        check_close(np.sum(gV * dirs["V"]) + np.sum(glam * dirs["lam"]),
                    directional_fd(f, args, dirs), f"gradient on {backend}")
    bad = dict(args, ch=np.array([1, 2, 4]))
    assert error_of(lambda: g(**bad)) == error_of(lambda: f(**bad))


def test_a_scatters_check_is_not_repeated_over_another_terms_index():
    """The check of `sum[e]([s == z[e]] * E[y[e], c])` is `[0 <= z[e] < n] * E[y[e], 0]`
    over e alone, even where another term of the statement keeps s for its equality
    (`[y[s] == y[0]]`): the checks cost n, not n^2, and raise no warning of their own."""
    from tensorlang.costs import program_cost
    from tensorlang.ssa.ir import Program
    f = fn("def f(E: f64[k, m], y: i64[n], z: i64[n]) -> f64:\n"
           "    o[s: n, c: m] = sum[e: n]([s == z[e]] * E[y[e], c]) + [y[s] == y[0]] * E[y[s], c]\n"
           "    return sum[s, c](o[s, c] ** 2)\n")
    p = derivative("grad", f, "E").program
    checks = tuple(s for s in p.stmts if s.name.startswith("labels"))
    assert checks
    cost = program_cost(Program(p.name, p.params, checks, (), False))
    assert "n^2" not in str(cost), str(cost)


# ------------------------------------------------------------ checks the call makes already
def label_brackets(prog, label):
    """The statements of prog with a range bracket on `label` (`[dst[l] < n]`)."""
    from tensorlang.domain import holds_label
    from tensorlang.ssa.ir import IdxCmp
    from tensorlang.ssa.traverse import gathered_tensors, iter_nodes
    return sorted(s.name for s in prog.stmts
                  if any(n.__class__ is IdxCmp and n.op == ">=" and holds_label(n.aff)
                         and gathered_tensors(n) == {label} for n in iter_nodes(s.body)))


def test_a_range_bracket_the_call_enforces_goes():
    """The function reads Q[s, dst[e]] at every edge, so every derivative that runs
    that read, or its check, before its own statements needs no range bracket on dst
    after it: the w-gradient reads Q[m, dst[l]] bare (2 E cheaper)."""
    f = CASES["compared label read elsewhere"].f
    g = derivative("grad", f, "w")
    assert label_brackets(g.program, "dst") == ["labels"], g.source
    assert str(tl.cost(g)) == "3*E*k + 12*E + 2", str(tl.cost(g))


QUOTIENT = ("def f(x: f64[V], F: i64[n, 2]) -> f64:\n"
            "    return sum[q](x[F[q, 1]] / x[F[q, 0]])\n")


def test_a_scatter_after_the_label_check_tests_no_range():
    """The gradient's check statement reads x[F[q, 0]] and x[F[q, 1]] at every q and
    runs whole before the adjoint, so the adjoint's scatters, solving k = F[q, 0] and
    k = F[q, 1], know both labels in 0 .. V - 1 (Stmt.checked_labels): no range test
    in the plan, the kernels or the cost (`V + 11*n + 1`, over the certificate's
    `4*V + 8*n + 8`, with them; the check itself costs an addition per label, as its
    kernel runs it, costs.as_label_check).  A bad label still raises, at the check."""
    from tensorlang.loops import plan_statement
    from tensorlang.bounds import size_facts
    f = fn(QUOTIENT)
    g = derivative("grad", f, "x")
    assert str(tl.cost(g)) == "V + 6*n + 1", str(tl.cost(g))
    prog = g.optimized_program()
    adjoint = prog.stmt("x_bar")
    assert adjoint.checked_labels
    for tp in plan_statement(adjoint, size_facts(prog)).scatter_terms:
        assert not tp.filters and not tp.staged, tp
    rng = np.random.default_rng(5)
    x, F = rng.uniform(1.0, 2.0, 4), rng.integers(0, 4, (6, 2))
    check_close(g.compile("numba")(x, F), g.compile("numpy")(x, F), "grad",
                rtol=1e-13, atol=1e-13)
    assert g.count_ops(x, F) <= tl.cost(g).evaluate(V=4, n=6)
    for bad, where in ((4, (2, 0)), (-1, (5, 1)), (9, (0, 1))):
        F_bad = F.copy()
        F_bad[where] = bad
        for backend in ("numba", "numpy"):
            with pytest.raises(tl.TLBoundsError, match=f"= {bad} is out of range"):
                g.compile(backend)(x, F_bad)


def test_only_statements_run_whole_tell_the_planner_a_label_is_in_range():
    """A statement another one reads may be fused into its reader and run at part of
    its points only (backend/fuse.py), so its reads tell later scatters nothing; the
    check statements and the outputs run whole.  `h` reads X[y[s]] at every s: as an
    output it tells the scatter after it that y lies in 0 .. n - 1, as a statement
    only the scatter reads it does not."""
    from tensorlang.domain import drop_enforced_label_guards
    from tensorlang.loops import plan_statement
    from tensorlang.bounds import size_facts
    text = ("def g(X: f64[n], y: i64[m], w: f64[m]) -> {}:\n"
            "    h[s: m] = w[s] * X[y[s]]\n"
            "    out[k: n] = sum[s]([k == y[s]] * h[s])\n"
            "    return {}\n")
    tests = {}
    for returns, result in (("h, out", "(f64[m], f64[n])"), ("out", "f64[n]")):
        prog = tl.parse(text.format(result, returns), "g.tl")["g"].program
        prog = drop_enforced_label_guards(prog)
        (scatter,) = plan_statement(prog.stmt("out"), size_facts(prog)).scatter_terms
        tests[returns] = len(scatter.filters) + len(scatter.staged)
    assert tests == {"h, out": 0, "out": 2}, tests


def test_a_compared_label_stays_guarded_where_it_is_read():
    """The function only compares dst ([dst[e] == i]): an edge to no node is legal, so
    the sum the gradient splits off (which reads Q[m, dst[l]]) keeps its range bracket;
    the term that multiplies that sum by c does not repeat it (the sum is 0 where it
    fails): 2 E cheaper than with the bracket in both."""
    f = CASES["compared label beside a scalar"].f
    g = derivative("grad", f, "w")
    assert label_brackets(g.program, "dst") == ["labels", "w_bar_sum"], g.source
    assert str(tl.cost(g)) == "2*E*k + 9*E + 1", str(tl.cost(g))


def test_a_bracket_before_the_read_that_enforces_it_stays():
    """Only statements after an unguarded read may count on its label being in range:
    a bracket before it would otherwise let a later statement's read raise first (with
    its own message).  Inside a recurrence group a read covers its own step only, so
    it counts after the group."""
    from tensorlang.domain import drop_enforced_label_guards
    straight = ("def f(X: f64[n], y: i64[m]) -> f64[m]:\n"
                "    a[s: m] = [y[s] >= 0 and y[s] < n] * 2.0\n"
                "    b[s: m] = X[y[s]] + a[s]\n"
                "    c[s: m] = [y[s] >= 0 and y[s] < n] * 3.0 * b[s]\n"
                "    return c\n")
    recurrence = ("def f(X: f64[n], y: i64[T]) -> f64[T]:\n"
                  "    g[t: T] = X[y[t]] + [t >= 1] * h[t - 1]\n"
                  "    h[t: T] = sum[j: T]([y[j] >= 0 and y[j] < n] * X[y[j]]) * g[t]\n"
                  "    c[t: T] = [y[t] >= 0 and y[t] < n] * h[t]\n"
                  "    return c\n")
    for src, before, after in ((straight, ["a", "c"], ["a"]), (recurrence, ["c", "h"], ["h"])):
        prog = fn(src).program
        assert label_brackets(prog, "y") == before
        assert label_brackets(drop_enforced_label_guards(prog), "y") == after, src


def test_the_newuser_graph_derivatives_cost_what_they_did_before_the_copied_guards():
    """gat reads Wh[dst[k]] and Wh[src[k]] at every edge, so no range bracket of its
    derivatives on either label is needed after the check of those reads (the gradient
    wrt H costs 31 E, a difference of the two ends' reads stored apart from the scatters
    that read it, opt/factor.py; 33 E before that, 43 E while its scatters still range-tested the labels the check
    had read, 50 E before the range checks travelled with the operands and 52 E with
    them).  pagerank only compares dst: the gradient wrt w keeps the
    bracket in the sum that reads p_bar through dst, and its product with d does not
    repeat it (7 E, as before).  Its Hessian tests the bracket in the pair statement
    d_w_bar_sum[l, m] once per pair and term (4 E^2; 2 E^2 before the guard travelled,
    when that statement read p_bar[q, dst[l]] at any label)."""
    from newuser4_programs import PROGRAMS
    mod = {name: tl.parse(PROGRAMS[name]["src"], name + ".tl")[name] for name in ("gat", "pagerank")}
    want = {
        ("gat", "grad", "H"): "4*c*d*n + 26*E*c + 6*E*n + 13*c*n + d*n + 31*E + 5*n + 1",
        ("pagerank", "grad", "w"): "16*E*k + 9*k*n + 7*E + 2*n + 2",
        ("pagerank", "hessian", "w"):
            "3*E*k*n + 10*E^2*k + 34*E*k + 2*E*n + 4*E^2 + 9*k*n + 3*E + 2*n + 2",
    }
    for (name, kind, wrt), cost in want.items():
        d = getattr(tl, kind)(mod[name], wrt=wrt)
        assert str(tl.cost(d)) == cost, (name, kind, str(tl.cost(d)))
    g = tl.grad(mod["pagerank"], wrt="w")
    assert label_brackets(g.program, "dst") == ["labels", "p_bar", "w_bar_sum"], g.source


# ------------------------------------------------------------ reads the function skips
def test_a_constant_label_read_outside_its_sum_is_guarded():
    """`sum[e: n]([s == z[e]] * E[y[z[0]], c])` reads y at z[0] only where some z[e]
    names a row; the gradient reads it outside the sum over e, so with every z[e] out
    of range (the function reads nothing through y) it raised for z[0] = -1.  On both
    backends every kind now gives the function's derivatives there, and the read keeps
    its place outside the sum: the gradient costs k m + m n, not k m n."""
    case = CASES["constant label under a scatter"]
    args = dict(E=np.random.default_rng(2).standard_normal((3, 2)), y=np.array([0]),
                z=np.array([-1]))
    assert case.f(**args) == 0.0
    values(case, args)
    for backend in ("numpy", "numba"):
        g = derivative("grad", case.f, "E").compile(backend)
        check_close(g(**args), np.zeros((3, 2)), f"gradient on {backend}")
    cost = tl.cost(derivative("grad", case.f, "E"))
    assert "k*m*n" not in str(cost), str(cost)


def test_a_derivative_reads_a_compared_label_only_where_it_is_in_range():
    """The function compares the target y[s] with the classes ([t == y[s]], [t != y[s]])
    and reads nothing through it, so a target of no class is legal.  Its Hessian read
    W2[j, y[l]] in a statement of pairs with no bracket and raised for it; the read now
    carries y[l]'s range check (and the term that multiplies that statement by its
    other factors does not repeat it)."""
    case = Case(
        "def f(X: f64[b, d], W1: f64[d, h], W2: f64[h, k], y: i64[b]) -> f64:\n"
        "    a[s, j] = max(sum[l](X[s, l] * W1[l, j]), 0.0)\n"
        "    z[s, t] = sum[j](a[s, j] * W2[j, t])\n"
        "    return sum[s, t]([t == y[s]] * (z[s, t] - 1.0) ** 2 + [t != y[s]] * z[s, t] ** 2)\n",
        "X",
        lambda rng: dict(X=rng.standard_normal((3, 2)), W1=rng.standard_normal((2, 4)),
                         W2=rng.standard_normal((4, 3)), y=np.array([2, 7, -1])))
    args = case.good(np.random.default_rng(5))
    values(case, args)
    got = derivative("hessian", case.f, "X").compile("numba")(**args)
    check_close(got, derivative("hessian", case.f, "X")(**args), "compiled Hessian",
                rtol=1e-12, atol=1e-12)


def test_an_edge_to_no_node_changes_no_derivative():
    """gcn2 (tests/newuser2_programs.py) reads a source's degree only where the edge's
    destination names a node; its Hessian read dinv[src[e]] for every pair (u, e) and
    raised for the source of an edge to no node.  Such an edge contributes nothing, so
    every derivative equals the one without it."""
    from newuser2_programs import PROGRAMS
    f = tl.parse(PROGRAMS["gcn2"]["src"], "gcn2.tl")["gcn2"]
    rng = np.random.default_rng(4)
    args = dict(X=rng.standard_normal((4, 2)), W1=rng.standard_normal((2, 3)),
                W2=rng.standard_normal((3, 2)), src=np.array([0, 1, 2, 3, 9]),
                dst=np.array([1, 2, 3, 0, -1]), y=np.array([0, 1, 1, 0]))
    fewer = dict(args, src=args["src"][:4], dst=args["dst"][:4])
    for kind in ("grad", "hessian"):
        d = derivative(kind, f, "X")
        check_close(d(**args), d(**fewer), kind, rtol=1e-12, atol=1e-12)


def test_a_stored_zero_divided_by_a_stored_zero_keeps_its_bracket():
    """The tangent of `[u < y[s]] * log(1 - x[s, u])` divides the argument's tangent by
    the argument, both stored with the bracket inside (0 where it fails).  A stored
    0 is no strong zero: dropping the bracket because the tangent is 0 there made
    the jvp 0 / 0 = NaN at every u >= y[s]."""
    f = tl.parse("""
def hazard(x: f64[m, n], y: i64[m]) -> f64:
    ll[s] = sum[u]([u < y[s]] * log(1.0 - x[s, u]))
    return sum[s](ll[s])
""")["hazard"]
    rng = np.random.default_rng(0)
    x, y, d_x = 0.5 * rng.random((3, 4)), np.array([1, 3, 0]), rng.standard_normal((3, 4))
    out, d_out = tl.jvp(f, wrt="x")(x=x, y=y, d_x=d_x)
    assert np.isfinite(d_out)
    check_close(d_out, directional_fd(f, dict(x=x, y=y), {"x": d_x}), "jvp of hazard")


# ------------------------------------------------------------ values a check compares
COMPARED_THROUGH_A_LABEL = {
    # the check's own bracket compares a value read through a label
    "bracket": ("def f(x: f64[n], z: i64[m], X: f64[k], y: i64[m], W: f64[m, m], "
                "c: f64[m]) -> f64:\n"
                "    return sum[i]([x[z[i]] > 0.0] * X[y[i]]) + sum[i](c[i] * x[z[i]])\n"),
    # the check compares a copy of the function's statement, which reads through a label
    "copy": ("def f(x: f64[n], z: i64[m], X: f64[k], y: i64[m], W: f64[m, m], "
             "c: f64[m]) -> f64:\n"
             "    h[i: m] = sum[j](W[i, j] * x[z[j]])\n"
             "    return sum[i]([h[i] > 0.0] * X[y[i]]) + sum[i]([h[i] > 0.5] * X[y[i]] ** 2)"
             " + sum[i](c[i] * h[i])\n"),
}


@pytest.mark.parametrize("name", COMPARED_THROUGH_A_LABEL)
def test_a_check_compares_the_values_the_function_compares(name):
    """The Numba kernel of a label check takes each read through a label as 1.0 (it
    runs for the labels, backend/labelcheck.py), but a value it compares decides which
    labels it meets: read as 1.0, `[x[z[i]] > 0.0]` held at every i and the gradient
    raised for a label the function never reads (y[1] = 5 where x[z[1]] < 0).  Reads
    in a comparison, and the copies a check compares, are computed as written."""
    f = fn(COMPARED_THROUGH_A_LABEL[name])
    g = derivative("grad", f, "c")
    x, z, X = np.array([1.0, -1.0, 2.0]), np.array([0, 1, 2]), np.ones(2)
    W = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    c = np.ones(3)
    fine, bad = np.array([0, 5, 1]), np.array([5, 0, 1])
    for backend in ("numba", "numpy"):
        d = g.compile(backend)
        check_close(d(x, z, X, fine, W, c), g.compile("numpy")(x, z, X, fine, W, c),
                    f"{name} on {backend}", rtol=1e-13, atol=1e-13)
        with pytest.raises(tl.TLBoundsError, match="the label is y\\[0\\]"):
            d(x, z, X, bad, W, c)
    f(x, z, X, fine, W, c)                        # the function accepts these labels
    _, sizes = g.prepare((x, z, X, fine, W, c), {})
    assert g.count_ops(x, z, X, fine, W, c) <= tl.cost(g).evaluate(**sizes)
