"""Row groups (backend/rows.py): statements over a shared leading extent run as one loop
over its rows, with the intermediates only that loop reads kept to one row.

The fused form must compute what the interpreter computes (serially and with a chunk of
rows per thread), be chosen for the statements it applies to, and never allocate a
contracted intermediate whole.
"""
import tracemalloc

import numpy as np
import pytest

import tensorlang as tl
from derivcheck import as_flat
from tensorlang.backend import numba_backend, numba_module, rows

# A mixture-like objective: per point i, a centred copy per component, a matrix-vector
# product per component, a log-sum-exp over components; sums over the points.
MIXTURE = """
def f(w: f64[C], mu: f64[C, E], A: f64[C, E, E], X: f64[P, E]) -> f64:
    d[a, c, e] = X[a, e] - mu[c, e]
    y[a, c, e] = sum[h](A[c, e, h] * d[a, c, h]) + d[a, c, e]
    s[a, c] = w[c] - 0.5 * sum[e](y[a, c, e] ** 2)
    return sum[a](logsumexp[c](s[a, c])) - P * logsumexp[c](w[c])
"""

# Other names, another order of dimensions and a tanh layer: the leading extent is the
# second size of the signature, the row statement has three indices.
LAYER = """
def g(V: f64[q, r], B: f64[q], Z: f64[m, r, 2]) -> f64:
    u[t, v, b] = tanh(sum[x](V[v, x] * Z[t, x, b]) + B[v])
    o[t] = sum[v, b](u[t, v, b] ** 2) + Z[t, 0, 1]
    return sum[t](o[t] * o[t]) + sum[v](B[v])
"""

CASES = {"mixture": (MIXTURE, "f", ("w", "mu", "A"), {"P": 37, "C": 3, "E": 4}),
         "layer": (LAYER, "g", ("V", "B"), {"m": 29, "q": 5, "r": 3})}


def _inputs(fn, sizes, seed):
    rng = np.random.default_rng(seed)
    out = {}
    for p in fn.program.params:
        shape = tuple(d if isinstance(d, int) else sizes[d] for d in p.dims)
        out[p.name] = 0.5 * rng.standard_normal(shape)
    return out


def _functions(case):
    src, name, wrt, sizes = CASES[case]
    f = tl.parse(src)[name]
    return f, tl.grad(f, wrt=wrt), sizes


@pytest.fixture
def always_fused(monkeypatch):
    monkeypatch.setattr(rows, "MIN_BYTES", 0)


@pytest.mark.parametrize("case", sorted(CASES))
def test_fused_rows_agree_with_the_interpreter(case, always_fused):
    for fn in _functions(case)[:2]:
        inputs = _inputs(fn, CASES[case][3], 3)
        want = as_flat(fn.compile("numpy")(**inputs))
        got = as_flat(fn.compile("numba")(**inputs))
        assert np.allclose(got, want, rtol=1e-12, atol=1e-12), (fn.name, got, want)


@pytest.mark.parametrize("case", sorted(CASES))
def test_gradient_forms_a_row_group(case):
    f, g, _ = _functions(case)
    prog = numba_module.prepare(g.optimized_program())
    groups = rows.row_groups(prog)
    assert groups, "no row group"
    big = max(groups, key=lambda gr: len(gr.contracted))
    shapes = {st.name: st.dims for st in prog.stmts}
    # the contracted intermediates are the ones over the points, with the reductions
    # over the points (the gradients) in the same group
    assert any(len(shapes[n]) >= 2 for n in big.contracted)
    assert big.reductions
    source = numba_backend.module_source(g.optimized_program())
    assert f"def k{big.start}_rows(" in source and f"def k{big.start}_rows_par(" in source
    # the fused branch of the driver allocates none of the contracted tensors
    fused = source.split("if tl_rows.fused(", 1)[1].split("    else:", 1)[0]
    for n in big.contracted:
        assert f"env[{n!r}] =" not in fused


def _peak_during(fn, inputs):
    fn(**inputs)                                # compile first
    tracemalloc.start()
    try:
        fn(**inputs)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_contracted_intermediate_is_never_allocated_whole(monkeypatch):
    """NumPy reports its allocations to tracemalloc: the statement-by-statement form
    allocates the P x C x E intermediates, the fused form only rows of them."""
    f, g, _ = _functions("mixture")
    sizes = {"P": 20000, "C": 4, "E": 5}          # one intermediate: 3.2 MB
    inputs = _inputs(g, sizes, 4)
    whole = 8 * sizes["P"] * sizes["C"] * sizes["E"]
    fn = g.compile("numba")
    monkeypatch.setattr(rows, "MIN_BYTES", 1 << 62)
    ordinary = _peak_during(fn, inputs)
    monkeypatch.setattr(rows, "MIN_BYTES", 0)
    fused = _peak_during(fn, inputs)
    assert ordinary >= whole
    assert fused < whole / 4
    assert np.allclose(as_flat(fn(**inputs)), as_flat(g.compile("numpy")(**inputs)),
                       rtol=1e-12, atol=1e-12)


def test_parallel_chunks_agree(monkeypatch, always_fused):
    """The prange form (one chunk of rows per thread, partial sums added after) gives
    the serial form's values."""
    f, g, sizes = _functions("mixture")
    inputs = _inputs(g, {**sizes, "P": 4000}, 5)     # above threads.MIN_WORK
    want = as_flat(g.compile("numpy")(**inputs))
    fn = g.compile("numba")
    fn(**inputs)
    module = numba_backend.load_module(g.optimized_program())
    prog = numba_module.prepare(g.optimized_program())
    k = max(rows.row_groups(prog), key=lambda gr: len(gr.contracted)).start
    serial, parallel = getattr(module, f"k{k}_rows"), getattr(module, f"k{k}_rows_par")
    parallel.compile(serial.signatures[0])
    class Threads:                  # the driver's thread policy, told that threads pay
        def pays(self, *a, **kw):
            return True

        def observe_parallel(self, *a):
            pass

        def observe(self, *a, **kw):
            return False

    monkeypatch.setattr(module, "tl_times", Threads())
    monkeypatch.setattr(module.tl_threads, "thread_count", lambda: 3)
    calls = []

    def counted(*a):
        calls.append(a[0])
        return parallel(*a)
    counted.signatures = parallel.signatures
    monkeypatch.setattr(module, f"k{k}_rows_par", counted)
    got = as_flat(fn(**inputs))
    assert calls == [3]
    assert np.allclose(got, want, rtol=1e-12, atol=1e-12)


def test_derivatives_through_fused_rows(always_fused):
    from derivcheck import dot_product_identity, grad_matches_fd
    f, _, sizes = _functions("layer")
    inputs = _inputs(f, sizes, 6)
    grad_matches_fd(f.compile("numba"), ("V", "B"), inputs, np.random.default_rng(7))
    f, _, sizes = _functions("mixture")
    dot_product_identity(f.compile("numba"), ("mu", "A"), _inputs(f, sizes, 8),
                         np.random.default_rng(9))


def test_a_long_product_keeps_its_blas_form(monkeypatch, always_fused):
    """A row statement that is a BLAS product summing over more than MAX_PRODUCT_SUM
    elements keeps the statement-by-statement form; a short one runs fused."""
    f, g, sizes = _functions("layer")
    module = numba_backend.load_module(g.optimized_program())
    prog = numba_module.prepare(g.optimized_program())
    k = max(rows.row_groups(prog), key=lambda gr: len(gr.contracted)).start
    fused = getattr(module, f"k{k}_rows")
    calls = []

    def counted(*a):
        calls.append(a[1:])
        return fused(*a)
    counted.signatures = fused.signatures
    monkeypatch.setattr(module, f"k{k}_rows", counted)
    fn = g.compile("numba")
    for r, runs_fused in ((3, True), (rows.MAX_PRODUCT_SUM + 1, False)):
        calls.clear()
        inputs = _inputs(g, {**sizes, "r": r}, 10)
        got = as_flat(fn(**inputs))
        assert bool(calls) == runs_fused, r
        assert np.allclose(got, as_flat(g.compile("numpy")(**inputs)), rtol=1e-12, atol=1e-12)


# A product of many vectors: its gradient's prefix and suffix products are one value per
# element, and every statement is elementwise over the same extent.
PRODUCT = """
def h(a: f64[z], b: f64[z], c: f64[z], d: f64[z], e: f64[z], u: f64[z], v: f64[z]) -> f64:
    return sum[o](a[o] * b[o] * c[o] * d[o] * e[o] * u[o] * tanh(v[o]))
"""


def test_an_elementwise_gradient_runs_as_one_loop(always_fused):
    """The statements of a many-factor product's gradient (prefix and suffix products,
    one partial per factor) form one row group although each row is one value; the
    loop reads each input once per row (a local loaded at the top of the row); the
    values and the derivatives agree with the interpreter and finite differences."""
    from derivcheck import grad_matches_fd
    f = tl.parse(PRODUCT)["h"]
    wrt = tuple(p.name for p in f.program.params)
    g = tl.grad(f, wrt=wrt)
    prog = numba_module.prepare(g.optimized_program())
    groups = rows.row_groups(prog)
    assert len(groups) == 1 and groups[0].contracted
    names = {st.name for st in prog.stmts[groups[0].start:groups[0].stop]}
    assert {f"{p}_bar" for p in wrt} <= names
    source = numba_backend.module_source(g.optimized_program())
    loop = source.split(f"def k{groups[0].start}_rows(", 1)[1].split("\n\n", 1)[0]
    for p in wrt:
        # the one read of each input at the row is the local's load
        assert loop.count(f"v_{p}[") == 1, (p, loop)
    inputs = _inputs(f, {"z": 41}, 12)
    want = as_flat(g.compile("numpy")(**inputs))
    got = as_flat(g.compile("numba")(**inputs))
    assert np.allclose(got, want, rtol=1e-13, atol=1e-15)
    grad_matches_fd(f, wrt, inputs, np.random.default_rng(13))


def test_an_elementwise_group_takes_no_scatter():
    """A one-value-per-row group never includes a sum over the rows: here that sum is
    the adjoint of a gather, a scatter into x_bar, which per row would pass over all
    of x_bar."""
    src = """
def energy(x: f64[v], w: f64[e], src: i64[e], dst: i64[e]) -> f64:
    return sum[k](w[k] * (x[src[k]] - x[dst[k]]) ** 2)
"""
    f = tl.parse(src)["energy"]
    prog = numba_module.prepare(tl.grad(f, wrt=("x", "w")).optimized_program())
    shapes = {st.name: st.dims for st in prog.stmts}
    for gr in rows.row_groups(prog):
        assert any(len(shapes[n]) >= 2 for n in gr.contracted) or not gr.reductions


def test_a_row_group_takes_no_scatter_into_a_table(always_fused):
    """The gradient of a batch of embedding lookups sums, over the batch, rows of the
    embedding table chosen by labels (`[k == h[m]] * part[m, l]`). In a row loop over
    the batch that sum cleared and added a whole table's buffer per row (a TransE
    gradient ran 2000 times its function); it runs as its own scatter instead."""
    src = """
def f(E: f64[ne, d], h: i64[B], t: i64[B]) -> f64:
    o[s] = sqrt(sum[k]((E[h[s], k] - E[t[s], k]) ** 2) + 0.000000001)
    return sum[s](o[s])
"""
    f = tl.parse(src)["f"]
    g = tl.grad(f, wrt="E")
    prog = numba_module.prepare(g.optimized_program())
    byname = {st.name: st for st in prog.stmts}
    for gr in rows.row_groups(prog):
        for name, _ in gr.reductions:
            outs = {n for n, _ in byname[name].indices}
            assert not any(getattr(a, "op", None) == "==" and outs & a.aff.index_vars()
                           for t in byname[name].body for a in t.pred), name
    rng = np.random.default_rng(2)
    a = dict(E=rng.standard_normal((7, 5)), h=rng.integers(0, 7, 40), t=rng.integers(0, 7, 40))
    assert np.allclose(g.compile("numba")(**a), g.compile("numpy")(**a), rtol=1e-12, atol=1e-12)
