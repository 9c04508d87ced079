"""Shared passes (tensorlang/shared.py): statements that evaluate one per-point factor
at the same points run in one pass, the factor evaluated once per point.

The rule must join exactly the statements it says (the factor equal at the joined
statement's points, those points among the host's, neither reading the other), never by
names; the cost model, the certificate and the instrumented count must charge the
factor once per point; the Numba kernel must compute what the interpreter computes,
serially and in its prange form, and refuse a bad label with the located error.
"""
import sys
import warnings

import numpy as np
import pytest

import tensorlang as tl
from derivcheck import as_flat
from tensorlang.costs import pass_savings, program_cost
from tensorlang.backend.numba_module import generate, prepare
from tensorlang.shared import shared_passes
from test_numba_backend import always_parallel

# a, b and c evaluate tanh(f[p, i] * C[i, j] + g[p, j]) at every (i, j, p): a keeps
# (i, j), b keeps (p, j) and c keeps (p, j) where p >= 1 (its points are among a's);
# d reads a, so it cannot be computed in a's pass; e's factor is another function.
SHARED = """
def sp(C: f64[n, m], f: f64[k, n], g: f64[k, m]) -> (f64[n, m], f64[k, m], f64[k, m], f64[k, m], f64[k, m]):
    a[i: n, j: m] = sum[p: k](g[p, j] * tanh(f[p, i] * C[i, j] + g[p, j]))
    b[p: k, j: m] = sum[i: n](C[i, j] * tanh(f[p, i] * C[i, j] + g[p, j]))
    c[p: k, j: m] = sum[i: n]([p >= 1] * f[p - 1, i] * tanh(f[p, i] * C[i, j] + g[p, j]))
    d[p: k, j: m] = sum[i: n](a[i, j] * tanh(f[p, i] * C[i, j] + g[p, j]))
    e[p: k, j: m] = sum[i: n](C[i, j] * sigmoid(f[p, i] * C[i, j] + g[p, j]))
    return a, b, c, d, e
"""


def _inputs(n, m, k, seed=0):
    rng = np.random.default_rng(seed)
    return dict(C=rng.standard_normal((n, m)), f=rng.standard_normal((k, n)) * 0.5,
                g=rng.standard_normal((k, m)))


def _passes(prog):
    return [(p.host, tuple(j.name for j in p.joined)) for p in shared_passes(prog)]


def test_statements_with_one_factor_at_the_same_points_share_a_pass():
    fn = tl.parse(SHARED)["sp"]
    assert _passes(fn.optimized_program()) == [("a", ("b", "c"))]
    # renamed onto the host's indices: b's p is a's p, its i a's i
    p, = shared_passes(fn.optimized_program())
    assert dict(p.joined[0].rename) == {"p": "p", "i": "i", "j": "j"}


def test_remembered_joins_give_the_passes_found_afresh():
    """Whether two statements join is remembered by the two statements (shared._join):
    the passes of a program whose other statements changed, asked after the joins of
    its unchanged pairs were remembered, are those found with nothing remembered."""
    from tensorlang import shared
    from tensorlang.ssa.ir import Program
    prog = tl.parse(SHARED)["sp"].optimized_program()
    fewer = Program(prog.name, prog.params, tuple(s for s in prog.stmts if s.name != "e"),
                    tuple(o for o in prog.outputs if o != "e"), prog.tuple_return)
    for first, then in ((prog, fewer), (fewer, prog)):
        shared._PASSES.clear()
        shared._JOINS.clear()
        afresh = shared_passes(then)
        shared._PASSES.clear()
        shared._JOINS.clear()
        shared_passes(first)
        assert shared._JOINS.table               # the pairs of `first`, remembered
        shared._PASSES.clear()
        assert shared_passes(then) == afresh


def test_the_host_is_a_statement_whose_points_hold_the_others():
    """c (p >= 1) first in the program: its points do not hold a's, so it cannot host."""
    src = SHARED.replace(
        "    a[i: n, j: m] = sum[p: k](g[p, j] * tanh(f[p, i] * C[i, j] + g[p, j]))\n", "")
    src = src.replace("    d[p: k", "    a[i: n, j: m] = sum[p: k](g[p, j] * tanh(f[p, i] * C[i, j] + g[p, j]))\n    d[p: k")
    fn = tl.parse(src)["sp"]
    (host, joined), = _passes(fn.optimized_program())
    assert host != "c" and {host, *joined} == {"a", "b", "c"}


def test_what_is_not_joined():
    src = """
def apart(C: f64[n, m], f: f64[k, n], g: f64[k, m]) -> (f64[n, m], f64[k, m], f64[k, m]):
    a[i: n, j: m] = sum[p: k](g[p, j] * tanh(f[p, i] * C[i, j] + g[p, j]))
    b[p: k, j: m] = sum[i: n](C[i, j] * tanh(f[p, i] * C[i, j] - g[p, j]))
    c[p: k, j: m] = sum[i: n](a[i, j] * tanh(f[p, i] * C[i, j] + g[p, j]))
    return a, b, c
def wider(C: f64[n, m], f: f64[k, n], g: f64[k, m]) -> (f64[n, m], f64[k, m]):
    a[i: n, j: m] = sum[p: k]([p >= 1] * g[p, j] * tanh(f[p, i] * C[i, j] + g[p, j]))
    b[p: k, j: m] = sum[i: n]([i >= 1] * C[i, j] * tanh(f[p, i] * C[i, j] + g[p, j]))
    return a, b
"""
    mod = tl.parse(src)
    # another factor (b), a statement reading the host (c)
    assert _passes(mod["apart"].optimized_program()) == []
    # neither's points hold the other's
    assert _passes(mod["wider"].optimized_program()) == []


def test_cost_charges_the_factor_once_per_point():
    fn = tl.parse(SHARED)["sp"]
    prog = fn.optimized_program()
    saved = pass_savings(prog)
    # b and c each skip tanh's argument (a product and a sum) and the tanh: the same
    # per point as a's evaluation of it, over k n m and (k - 1) n m points
    assert str(saved) != "0"
    assert tl.cost(fn) == program_cost(prog) - saved
    assert saved.degree() == 3
    inputs = _inputs(4, 3, 5)
    assert fn.count_ops(**inputs) <= tl.cost(fn).evaluate(n=4, m=3, k=5)


def test_cost_does_not_depend_on_index_names():
    renamed = (SHARED.replace("[i", "[u").replace("i]", "u]").replace("i: n", "u: n")
               .replace(", i]", ", u]").replace("p", "q").replace("sq", "sp"))
    a, b = tl.parse(SHARED)["sp"], tl.parse(renamed)["sp"]
    assert "q" in renamed and "u: n" in renamed
    assert tl.cost(a) == tl.cost(b)
    assert len(shared_passes(b.optimized_program())) == 1


@pytest.mark.parametrize("sizes", [(1, 1, 1), (2, 3, 4), (7, 5, 3)])
def test_the_numba_pass_computes_what_the_interpreter_computes(sizes):
    fn = tl.parse(SHARED)["sp"]
    source = generate(fn.optimized_program(), "test", "")
    assert "# statements a, b, c in one pass" in source
    inputs = _inputs(*sizes, seed=sum(sizes))
    got, want = fn.compile("numba")(**inputs), fn.compile("numpy")(**inputs)
    assert np.allclose(as_flat(got), as_flat(want), rtol=1e-12, atol=1e-13)


def test_the_parallel_pass_computes_what_the_interpreter_computes(monkeypatch):
    always_parallel(monkeypatch)
    src = SHARED.replace("def sp(", "def spp(")
    fn = tl.parse(src)["spp"]
    source = generate(fn.optimized_program(), "test", "")
    kernel = source.split("# statements a, b, c in one pass", 2)[2].split("\n\n", 1)[0]
    assert "prange(" in kernel
    inputs = _inputs(9, 6, 4, seed=2)
    want = fn.compile("numpy")(**inputs)
    run = fn.compile("numba")
    from tensorlang.backend import threads
    for _ in range(1 + threads.MIN_SAMPLES):
        assert np.allclose(as_flat(run(**inputs)), as_flat(want), rtol=1e-12, atol=1e-13)


def _program(module, name):
    sys.path.insert(0, "tests")
    programs = __import__(module).PROGRAMS
    return tl.parse(programs[name]["src"], filename=f"{name}.tl")[name], programs[name]


def test_soft_value_iteration_gradient_certifies():
    """gridvi's gradient evaluated the softmax weight of its backup in two sums outside
    the adjoint recurrence: 43 A S k against the certificate's 40 A S k; the two sums
    shared one pass that evaluated it (40 A S k).  The weight, times the step's
    cotangent, is now stored once per step as a member of the adjoint recurrence
    (reverse.Transposer.shared_cotangent), and both sums read it: 30 A S k, no pass."""
    f, entry = _program("newuser3_programs", "gridvi")
    with warnings.catch_warnings():
        warnings.simplefilter("error", tl.TLCostWarning)
        g = tl.grad(f, wrt=("R", "g"))
    assert str(tl.cost(g)).startswith("30*A*S*k + "), str(tl.cost(g))
    assert sum("exp(" in line for line in g.source.splitlines()) == 1, g.source
    args = entry["make"](np.random.default_rng(0), **entry["sizes"])
    got, want = g.compile("numba")(**args), g.compile("numpy")(**args)
    assert np.allclose(as_flat(got), as_flat(want), rtol=1e-12, atol=1e-13)
    assert g.count_ops(**args) <= tl.cost(g).evaluate(**entry["sizes"])


def test_sinkhorn_gradient_with_the_temperature_certifies():
    """Sinkhorn's gradient with respect to the cost matrix and the temperature: four
    sums over (step, row, column) each evaluated a softmax weight (85 K m n against
    68 K m n); two passes evaluated each of the two weights once (58 K m n).  Three of
    the four sums are now reads of what C's adjoint stores (contraction order reads
    stored contractions, contract._stored_twin, 52 K m n), and one pass shared its
    weight with the fourth; with the adjoint steps' sums read from the adjoint
    recurrence (reverse.Transposer.shared_cotangent) no pass is left to share:
    50 K m n."""
    f, entry = _program("newuser_programs", "sinkhorn")
    with warnings.catch_warnings():
        warnings.simplefilter("error", tl.TLCostWarning)
        g = tl.grad(f, wrt=("C", "eps"))
    assert str(tl.cost(g)).startswith("50*K*m*n + "), str(tl.cost(g))
    args = entry["make"](np.random.default_rng(1), **entry["sizes"])
    got, want = g.compile("numba")(**args), g.compile("numpy")(**args)
    assert np.allclose(as_flat(got), as_flat(want), rtol=1e-12, atol=1e-13)


def test_a_bad_label_in_a_pass_is_the_located_error_of_the_interpreter():
    f, entry = _program("newuser3_programs", "gridvi")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tl.TLCostWarning)
        g = tl.grad(f, wrt=("R", "g"))
    args = entry["make"](np.random.default_rng(0), **entry["sizes"])
    args["nxt"] = args["nxt"].copy()
    args["nxt"][1, 2] = entry["sizes"]["S"]
    messages = []
    for backend in ("numpy", "numba"):
        with pytest.raises(tl.TLBoundsError) as err:
            g.compile(backend)(**args)
        messages.append(str(err.value))
    assert messages[0] == messages[1]
    assert "gridvi.tl:" in messages[0]


def test_explain_lists_the_pass(tmp_path, capsys):
    from tensorlang.cli import main
    path = tmp_path / "sp.tl"
    path.write_text(SHARED)
    assert main(["explain", str(path), "-f", "sp"]) == 0
    out = capsys.readouterr().out
    assert "one pass (shared factor, tensorlang/shared.py): a, b, c evaluate tanh(" in out


def test_prepared_program_keeps_the_pass():
    fn = tl.parse(SHARED)["sp"]
    assert _passes(prepare(fn.optimized_program())) == [("a", ("b", "c"))]


def test_a_statement_reading_the_host_through_a_recurrence_is_not_joined():
    """b's factor is a's, but b reads h1, whose group reads a through its later member
    h2: b needs a complete, so no pass holds both (the dependence through a member that
    reads a later one counts: a kalman smoother's gradient had such a pass, and its
    statements could not be ordered)."""
    src = """
def thru(C: f64[n, m], f: f64[k, n], g: f64[k, m], T0: f64[t]) -> (f64[n, m], f64[k, m]):
    a[i: n, j: m] = sum[p: k](g[p, j] * tanh(f[p, i] * C[i, j] + g[p, j]))
    h1[s: t, i: n] = [s == 0] * 1.0 + [s >= 1] * h2[s - 1, i]
    h2[s: t, i: n] = 0.5 * h1[s, i] + [s == 0] * a[i, 0]
    b[p: k, j: m] = sum[i: n](h1[t - 1, i] * C[i, j] * tanh(f[p, i] * C[i, j] + g[p, j]))
    return a, b
"""
    fn = tl.parse(src)["thru"]
    assert _passes(fn.optimized_program()) == []
    rng = np.random.default_rng(4)
    inputs = dict(_inputs(3, 4, 2, seed=4), T0=rng.standard_normal(3))
    got, want = fn.compile("numba")(**inputs), fn.compile("numpy")(**inputs)
    assert np.allclose(as_flat(got), as_flat(want), rtol=1e-12, atol=1e-13)


# b's sum evaluates a's factor at each of its points, beside a term of its own (h^2):
# the sum is split into a statement of its own (b_sum), which joins a's pass.
SPLIT = """
def st(C: f64[n, m], f: f64[k, n], g: f64[k, m], h: f64[n]) -> (f64[n, m], f64[n]):
    a[i: n, j: m] = sum[p: k](g[p, j] * tanh(f[p, i] * C[i, j] + g[p, j]))
    b[i: n] = sum[p: k, j: m](sigmoid(f[p, i] - C[i, j]) * tanh(f[p, i] * C[i, j] + g[p, j])) + h[i] * h[i]
    return a, b
"""


def _unsplit(fn):
    """fn's program simplified, without the split (the stage before it)."""
    from tensorlang.driver import run_recipe, simplify_stage
    return run_recipe(fn.program, (simplify_stage("simplify"),))


def test_a_term_beside_others_is_split_off_to_join_a_pass():
    from tensorlang.costs import scheduled_cost
    fn = tl.parse(SPLIT)["st"]
    prog = fn.optimized_program()
    (host, (joined,)), = _passes(prog)
    assert host == "a"
    split = prog.stmt(joined)
    assert len(split.body) == 1 and joined in {a.name for a in _reads(prog.stmt("b"))}
    before = _unsplit(fn)
    assert len(before.stmt("b").body) == 2 and _passes(before) == []
    # the tanh and its argument once per point instead of twice, for n more stores
    saved = scheduled_cost(before) - tl.cost(fn)
    assert saved.evaluate(n=5, m=4, k=3) > 0 and saved.degree() == 3


def _reads(st):
    from tensorlang.ssa import traverse as T
    return [a for t in st.body for a in T.term_accesses(t)]


def test_a_term_with_a_factor_of_its_own_stays():
    """b's tanh differs from a's (a sign): no pass would take its sum, so b keeps it."""
    fn = tl.parse(SPLIT.replace("f[p, i] * C[i, j] + g[p, j])) + h", "f[p, i] * C[i, j] - g[p, j])) + h"))["st"]
    prog = fn.optimized_program()
    assert _passes(prog) == [] and prog == _unsplit(fn)


def test_the_split_does_not_depend_on_index_names():
    renamed = SPLIT.replace("p: k", "z: k").replace("[p, ", "[z, ").replace("i: n", "r: n") \
        .replace(", i]", ", r]").replace("[i, ", "[r, ").replace("h[i]", "h[r]").replace("[i: n", "[r: n")
    assert "i]" not in renamed.split("\n", 2)[2]
    a, b = tl.parse(SPLIT)["st"], tl.parse(renamed)["st"]
    assert tl.cost(a) == tl.cost(b)
    assert len(_passes(b.optimized_program())) == 1


@pytest.mark.parametrize("sizes", [(1, 1, 1), (3, 4, 2)])
def test_the_split_runs_on_numba_as_the_interpreter(sizes):
    fn = tl.parse(SPLIT)["st"]
    n, m, k = sizes
    inputs = dict(_inputs(n, m, k, seed=7), h=np.linspace(-1.0, 1.0, n))
    got, want = fn.compile("numba")(**inputs), fn.compile("numpy")(**inputs)
    assert np.allclose(as_flat(got), as_flat(want), rtol=1e-12, atol=1e-13)


def test_unbalanced_transport_gradient_certifies():
    """Unbalanced transport's gradient evaluated its two softmax weights in the sums of
    la_bar and lb_bar too, each a term beside another (82 K m n against 72 K m n
    with passes of whole statements only)."""
    f, entry = _program("newuser6_programs", "uot")
    with warnings.catch_warnings():
        warnings.simplefilter("error", tl.TLCostWarning)
        g = tl.grad(f, wrt=("C", "la", "lb", "eps", "rho"))
    joined = {j for _, js in _passes(g.optimized_program()) for j in js}
    assert {"la_bar_sum", "lb_bar_sum"} <= joined
    args = entry["make"](np.random.default_rng(2), **entry["sizes"])
    got, want = g.compile("numba")(**args), g.compile("numpy")(**args)
    assert np.allclose(as_flat(got), as_flat(want), rtol=1e-12, atol=1e-13)


# a is a sum of exponentials of separable terms, which the backend runs as a matrix
# product (backend/expproduct.py); b and c evaluate its exponential too, each summed
# over two indices beside a call of all three (no product form, nothing to contract first)
EXP_HOST = """
def ep(C: f64[n, m], f: f64[k, n], g: f64[k, m]) -> (f64[n, m], f64[n], f64[m]):
    a[i: n, j: m] = sum[p: k](g[p, j] * exp(f[p, i] - C[i, j] + g[p, j]))
    b[i: n] = sum[p: k, j: m](tanh(f[p, i] * C[i, j] * g[p, j]) * exp(f[p, i] - C[i, j] + g[p, j]))
    c[j: m] = sum[p: k, i: n](sin(f[p, i] * C[i, j] * g[p, j]) * exp(f[p, i] - C[i, j] + g[p, j]))
    return a, b, c
"""


def test_a_host_run_as_a_product_leaves_the_others_one_pass():
    """The model counts one pass of a, b and c; the backend runs a as its product and
    b and c as one pass among themselves (before, all three ran alone, each
    evaluating the exponential at every point)."""
    from tensorlang.backend.expproduct import exp_product, passes_as_run
    fn = tl.parse(EXP_HOST)["ep"]
    prog = fn.optimized_program()
    (host, joined), = _passes(prog)
    assert exp_product(prog.stmt(host)) is not None and {host, *joined} == {"a", "b", "c"}
    (p,), = [passes_as_run(prepare(prog))]
    assert set(p.names) == {"b", "c"}
    assert "# statements b, c in one pass" in generate(prog, "test", "")
    for sizes in ((1, 1, 1), (40, 30, 20)):       # the kernel, then the product
        inputs = _inputs(*sizes, seed=3)
        got, want = fn.compile("numba")(**inputs), fn.compile("numpy")(**inputs)
        assert np.allclose(as_flat(got), as_flat(want), rtol=1e-11, atol=1e-12)
