"""Row groups (backend/rows.py): statements over a shared leading extent run as one loop
over its rows, with the intermediates only that loop reads kept to one row.

The fused form must compute what the interpreter computes (serially and with a chunk of
rows per thread), be chosen for the statements it applies to, and never allocate a
contracted intermediate whole.
"""
import re
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


def _in_three_chunks(monkeypatch, g, fn, inputs, k):
    """fn's values with the driver told that threads pay and that there are three (the
    group at statement k runs its prange form), and the chunk counts it was called with."""
    module = numba_backend.load_module(g.optimized_program())
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
    return as_flat(fn(**inputs)), calls


def test_parallel_chunks_agree(monkeypatch, always_fused):
    """The prange form (one chunk of rows per thread, partial sums added after) gives
    the serial form's values."""
    f, g, sizes = _functions("mixture")
    inputs = _inputs(g, {**sizes, "P": 4000}, 5)     # above threads.MIN_WORK
    want = as_flat(g.compile("numpy")(**inputs))
    fn = g.compile("numba")
    fn(**inputs)
    prog = numba_module.prepare(g.optimized_program())
    k = max(rows.row_groups(prog), key=lambda gr: len(gr.contracted)).start
    got, calls = _in_three_chunks(monkeypatch, g, fn, inputs, k)
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


def _row_loop(source, k):
    """The source of the serial row loop of the group starting at statement k."""
    return source.split(f"def k{k}_rows(", 1)[1].split("\n\n", 1)[0]


def _adds_in_place(loop, k):
    """Does a row loop add its sums' rows where they fall, never clearing a buffer of a
    whole output or adding one into a running sum per row?"""
    return "[...] = 0.0" not in loop and not re.search(rf"\br{k}_a\d+ \+=", loop)


def test_an_elementwise_group_adds_its_scatter_in_place(always_fused):
    """A one-value-per-row group may include a sum over the rows when it is a scatter
    (here the adjoint of a gather into x_bar): each row adds its terms at the positions
    it chooses into the running sum, never a pass over all of x_bar per row."""
    src = """
def energy(x: f64[v], w: f64[e], src: i64[e], dst: i64[e]) -> f64:
    return sum[k](w[k] * (x[src[k]] - x[dst[k]]) ** 2)
"""
    f = tl.parse(src)["energy"]
    g = tl.grad(f, wrt=("x", "w"))
    prog = numba_module.prepare(g.optimized_program())
    shapes = {st.name: st.dims for st in prog.stmts}
    source = numba_backend.module_source(g.optimized_program())
    for gr in rows.row_groups(prog):
        if gr.reductions and not any(len(shapes[n]) >= 2 for n in gr.contracted):
            assert _adds_in_place(_row_loop(source, gr.start), gr.start)
    rng = np.random.default_rng(4)
    a = dict(x=rng.standard_normal(9), w=rng.standard_normal(50),
             src=rng.integers(0, 9, 50), dst=rng.integers(0, 9, 50))
    for got, want in zip(g.compile("numba")(**a), g.compile("numpy")(**a)):
        assert np.allclose(got, want, rtol=1e-12, atol=1e-12)


def test_a_row_group_never_passes_over_a_table_per_row(always_fused):
    """The gradient of a batch of embedding lookups sums, over the batch, rows of the
    embedding table chosen by labels (`[k == h[m]] * part[m, l]`). In a row loop over
    the batch that sum once cleared and added a whole table's buffer per row (a TransE
    gradient ran 2000 times its function); a scatter in a row group adds each row's
    terms into the running sum where they fall, and any other sum that fixes an output
    index by a bracket runs as its own statement."""
    src = """
def f(E: f64[ne, d], h: i64[B], t: i64[B]) -> f64:
    o[s] = sqrt(sum[k]((E[h[s], k] - E[t[s], k]) ** 2) + 0.000000001)
    return sum[s](o[s])
"""
    f = tl.parse(src)["f"]
    g = tl.grad(f, wrt="E")
    prog = numba_module.prepare(g.optimized_program())
    byname = {st.name: st for st in prog.stmts}
    source = numba_backend.module_source(g.optimized_program())
    for gr in rows.row_groups(prog):
        for name, _ in gr.reductions:
            outs = {n for n, _ in byname[name].indices}
            if any(getattr(a, "op", None) == "==" and outs & a.aff.index_vars()
                   for t in byname[name].body for a in t.pred):
                assert rows.is_scatter(byname[name]), name
                assert _adds_in_place(_row_loop(source, gr.start), gr.start), name
    rng = np.random.default_rng(2)
    a = dict(E=rng.standard_normal((7, 5)), h=rng.integers(0, 7, 40), t=rng.integers(0, 7, 40))
    assert np.allclose(g.compile("numba")(**a), g.compile("numpy")(**a), rtol=1e-12, atol=1e-12)



# Bilinear interpolation at points with integer corners, and the same with other names,
# the grid read transposed and another loss: their gradients gather the corners per
# point, scatter into the grid, and write a partial per point.
def _corners(rng, rows_, cols, n):
    r, c = rng.integers(0, rows_ - 1, n), rng.integers(0, cols - 1, n)
    return r, c, r + 1, c + 1


def _interp_inputs(rng, h, w, q):
    r0, c0, r1, c1 = _corners(rng, h, w, q)
    return dict(G=rng.standard_normal((h, w)), r0=r0, c0=c0, r1=r1, c1=c1,
                fr=rng.random(q), fc=rng.random(q), t=rng.standard_normal(q))


def _warp_inputs(rng, a, b, p):
    xa, ya, xb, yb = _corners(rng, a, b, p)
    return dict(I=rng.standard_normal((a, b)), ya=ya, xa=xa, yb=yb, xb=xb,
                wy=rng.random(p), wx=rng.random(p), z=rng.standard_normal(p))


BILINEAR = {
    "interp": ("""
def interp(G: f64[h, w], r0: i64[q], c0: i64[q], r1: i64[q], c1: i64[q], fr: f64[q], fc: f64[q], t: f64[q]) -> f64:
    v[s] = ((1.0 - fr[s]) * (1.0 - fc[s]) * G[r0[s], c0[s]] + fr[s] * (1.0 - fc[s]) * G[r1[s], c0[s]]
        + (1.0 - fr[s]) * fc[s] * G[r0[s], c1[s]] + fr[s] * fc[s] * G[r1[s], c1[s]])
    return sum[s]((v[s] - t[s]) ** 2)
""", ("G", "fr", "fc", "t"), dict(h=6, w=5, q=300), _interp_inputs),
    "warp": ("""
def warp(I: f64[a, b], ya: i64[p], xa: i64[p], yb: i64[p], xb: i64[p], wy: f64[p], wx: f64[p], z: f64[p]) -> f64:
    val[n] = (1.0 - wx[n]) * ((1.0 - wy[n]) * I[xa[n], ya[n]] + wy[n] * I[xa[n], yb[n]]) + wx[n] * ((1.0 - wy[n]) * I[xb[n], ya[n]] + wy[n] * I[xb[n], yb[n]])
    return sum[n](z[n] * val[n]) + 0.5 * sum[n](val[n] ** 2)
""", ("I", "wy", "wx", "z"), dict(a=7, b=4, p=250), _warp_inputs),
}


def _bilinear(name, seed=0, scale=1):
    src, wrt, sizes, make = BILINEAR[name]
    f = tl.parse(src)[name]
    points = list(sizes)[-1]
    sizes = {**sizes, points: sizes[points] * scale}
    return f, tl.grad(f, wrt=wrt), make(np.random.default_rng(seed), **sizes)


@pytest.mark.parametrize("name", sorted(BILINEAR))
def test_a_gradient_over_points_runs_with_its_scatter_as_one_loop(name, always_fused):
    """The per-point statements of an interpolation's gradient and its scatter into the
    grid form one row group over the points (the scatter a reduction of the group); the
    loop adds the scatter's terms into the running sum where
    they fall; the values are the interpreter's (the terms are added in the order the
    statement-by-statement scatter adds them)."""
    f, g, a = _bilinear(name)
    prog = numba_module.prepare(g.optimized_program())
    groups = rows.row_groups(prog)
    assert len(groups) == 1, groups
    (scatter, _), = groups[0].reductions
    byname = {st.name: st for st in prog.stmts}
    assert rows.is_scatter(byname[scatter]) and len(byname[scatter].indices) == 2
    assert {st.name for st in prog.stmts} == set(groups[0].members)
    source = numba_backend.module_source(g.optimized_program())
    assert _adds_in_place(_row_loop(source, groups[0].start), groups[0].start)
    # threads, each with its own copy of the grid's adjoint, only while the copies
    # take fewer elements than the group's work
    assert re.search(r"work >= \d+ and s_\w+ \* s_\w+ <= work and ", source)
    want = as_flat(g.compile("numpy")(**a))
    got = as_flat(g.compile("numba")(**a))
    assert np.allclose(got, want, rtol=1e-12, atol=1e-13)


# the parallel twin gathers, and its label checks must not keep Numba from running it in
# parallel (kernels.deferred_label_checks)
@pytest.mark.filterwarnings("error::numba.core.errors.NumbaPerformanceWarning")
@pytest.mark.parametrize("name", sorted(BILINEAR))
def test_scatter_chunks_agree(monkeypatch, name, always_fused):
    """With a chunk of points per thread, each chunk scatters into its own copy of the
    grid's adjoint, added after the loop: the serial form's values."""
    f, g, a = _bilinear(name, seed=3, scale=100)    # work above threads.MIN_WORK
    want = as_flat(g.compile("numpy")(**a))
    fn = g.compile("numba")
    serial_values = as_flat(fn(**a))
    k = rows.row_groups(numba_module.prepare(g.optimized_program()))[0].start
    got, calls = _in_three_chunks(monkeypatch, g, fn, a, k)
    assert calls == [3]
    assert np.allclose(got, want, rtol=1e-12, atol=1e-12)
    assert np.allclose(got, serial_values, rtol=1e-12, atol=1e-12)

