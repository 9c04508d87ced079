"""The statements the backend hands to NumPy instead of a loop nest (backend/blas.py):
two-operand contractions as one np.matmul (`contract2`), column sums as np.sum
(`strided_sum`), and the rule that only whole-axis accesses qualify."""
import itertools
import re

import numpy as np
import pytest

import tensorlang as tl
from tensorlang.backend.blas import contract2, dense_contraction, strided_sum
from tensorlang.backend.numba_backend import module_source

SPECS = ["abc,dc->dab", "ab,cbd->acd", "ab,cdb->cad", "ab,cad->cdb", "ab,acd->cbd",
         "ab,acd->cdb", "abc,dac->db", "abc,acd->bd", "abc,dab->dc", "ab,bc->ac", "ab,cb->ca",
         "ab,b->a", "a,ab->b", "a,b->ab", "abc,abd->cd", "abc,abc->", "abc,cd->abd",
         "abc,dbc->ad", "abc,bd->adc", "ab,c->abc", "abc,b->ac", "abcd,cd->ab", "abc,acb->",
         "abc,adc->bd", "abcd,bd->ac", "abc,abd->cdb", "ab,ab->", "ab,ab->a",
         "abc,cbd->ad", "abc,dac->dab", "abc,dab->dac", "abc,abc->bc", "abc,abd->bdc"]


@pytest.mark.parametrize("spec", SPECS)
def test_contract2_equals_einsum_and_is_contiguous(spec):
    ins, out = spec.split("->")
    rng = np.random.default_rng(len(spec))
    for dims in ((2, 3, 4, 5), (5, 1, 3, 2), (7, 6, 1, 4)):
        size = dict(zip("abcd", dims))
        a, b = (rng.standard_normal([size[c] for c in s]) for s in ins.split(","))
        got, want = contract2(spec, a, b), np.einsum(spec, a, b)
        assert got.shape == want.shape
        assert np.allclose(got, want, rtol=1e-13, atol=1e-13)
        assert np.ndim(got) == 0 or got.flags["C_CONTIGUOUS"]


def test_contract2_batches_over_an_inner_output_index_and_sums_dots_in_one_pass():
    """y[i, k, r] = sum[c](L[k, r, c] * x[i, k, c]) batches K products of n rows, written
    through a view of the C-contiguous result (not n K one-row products); a batch of dots
    is one einsum loop.  Both equal einsum, C-contiguous."""
    from tensorlang.backend.blas import _plan2
    rng = np.random.default_rng(5)
    L, x, z = (rng.standard_normal(s) for s in ((3, 8, 8), (400, 3, 8), (400, 3, 8)))
    plan = _plan2("abc,dac->dab", L.shape, x.shape)
    assert plan[1] == "a" and plan[-1] != "dab"
    assert _plan2("abc,abc->bc", x.shape, z.shape) == "einsum"
    for spec, a, b in (("abc,dac->dab", L, x), ("abc,dab->dac", L, x), ("abc,abc->bc", x, z)):
        got = contract2(spec, a, b)
        assert np.allclose(got, np.einsum(spec, a, b), rtol=1e-13, atol=1e-13)
        assert got.flags["C_CONTIGUOUS"]


def test_contract2_accepts_any_layout():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((6, 5, 4)).transpose(2, 0, 1)       # a strided view
    b = np.asfortranarray(rng.standard_normal((5, 3)))
    for spec in ("abc,cd->abd", "abc,cd->dab", "abc,cd->bad"):
        assert np.allclose(contract2(spec, a, b), np.einsum(spec, a, b), rtol=1e-13)


def test_a_dot_of_windows_reads_them_where_they_lie():
    """The weight gradient of a stencil recurrence, sum[t, i]([t >= 1 and i >= 1] *
    u[t - 1, i - 1] * g[t, i]), is a dot of two windows that are not C-contiguous: a
    product would copy both (5.7 ms against 0.6 ms at 500 x 2000), einsum reads them
    in place.  Contiguous operands still take the product."""
    from tensorlang.backend.blas import _plan2
    rng = np.random.default_rng(6)
    u, g = rng.standard_normal((500, 2000)), rng.standard_normal((500, 2000))
    a, b = u[:-1, :-1], g[1:, 1:]
    assert _plan2("ab,ab->", a.shape, b.shape, (False, False)) == "einsum"
    assert _plan2("ab,ab->", a.shape, b.shape) != "einsum"
    assert np.isclose(contract2("ab,ab->", a, b), np.sum(a * b), rtol=1e-12)
    assert np.isclose(contract2("ab,ab->", u, g), np.sum(u * g), rtol=1e-12)


def program(src):
    return tl.parse(src)["f"].program


def test_a_sum_over_part_of_an_axis_is_not_a_blas_call():
    """`sum[k: 3]` over an axis of 5: a NumPy product would sum all five columns."""
    src = ("def f(A: f64[n, 5], x: f64[5]) -> f64[n]:\n"
           "    y[i] = sum[k: 3](A[i, k] * x[k])\n    return y\n")
    prog = program(src)
    st = prog.stmts[0]
    assert dense_contraction(st) is not None               # the form alone
    assert dense_contraction(st, prog.shapes()) is None    # but not the whole axis
    f = tl.parse(src)["f"]
    rng = np.random.default_rng(0)
    A, x = rng.standard_normal((4, 5)), rng.standard_normal(5)
    want = A[:, :3] @ x[:3]
    assert np.allclose(f.compile("numpy")(A, x), want, rtol=1e-13)
    assert np.allclose(f.compile("numba")(A, x), want, rtol=1e-13)


COLUMN_SUM = "def f(Z: f64[b, k]) -> f64[k]:\n    c[j] = sum[s](Z[s, j])\n    return c\n"
ROW_SUM = "def f(Z: f64[b, k]) -> f64[b]:\n    r[s] = sum[j](Z[s, j])\n    return r\n"
MIDDLE = ("def f(T: f64[n, m, p]) -> f64[p, n]:\n"
          "    y[k, i] = 0.5 * sum[j](T[i, j, k])\n    return y\n")


def test_column_sums_are_numpy_sums_and_row_sums_loop_nests():
    assert strided_sum(program(COLUMN_SUM).stmts[0], program(COLUMN_SUM).shapes()) == \
        ("Z", (0,), None, 1.0)
    assert strided_sum(program(ROW_SUM).stmts[0], program(ROW_SUM).shapes()) is None
    name, axes, perm, c = strided_sum(program(MIDDLE).stmts[0], program(MIDDLE).shapes())
    assert (name, axes, perm, c) == ("T", (1,), (1, 0), 0.5)
    assert "tl_sum(env['Z'], (0,), None)" in module_source(program(COLUMN_SUM))
    assert "tl_sum(" not in module_source(program(ROW_SUM))


@pytest.mark.parametrize("src,shape", [(COLUMN_SUM, (7, 5)), (ROW_SUM, (7, 5)),
                                       (MIDDLE, (3, 4, 5))])
def test_sums_match_the_interpreter(src, shape):
    f = tl.parse(src)["f"]
    x = np.random.default_rng(1).standard_normal(shape)
    got, want = f.compile("numba")(x), f.compile("numpy")(x)
    assert got.flags["C_CONTIGUOUS"]
    assert np.allclose(got, want, rtol=1e-13, atol=1e-14)


TUCKER = """
def f(G: f64[r1, r2, r3], U: f64[n1, r1], V: f64[n2, r2], W: f64[n3, r3],
      T: f64[n1, n2, n3]) -> f64:
    X[i, j, k] = sum[a, b, c](G[a, b, c] * U[i, a] * V[j, b] * W[k, c])
    return sum[i, j, k]((X[i, j, k] - T[i, j, k]) ** 2)
"""

BIAS = """
def f(X: f64[b, d], W: f64[d, h], c: f64[h]) -> f64:
    Z[s, j] = sum[i](X[s, i] * W[i, j]) + c[j]
    return sum[s, j](tanh(Z[s, j]) ** 2)
"""


@pytest.mark.parametrize("src", [TUCKER, BIAS])
def test_programs_of_numpy_calls_match_the_interpreter(src):
    """Forward and gradient on the compiled backend (contract2 steps with three-index
    tensors, a bias gradient as a column sum) against the interpreter."""
    f = tl.parse(src)["f"]
    wrt = tuple(p.name for p in f.program.params if p.name not in ("T", "X"))
    g = tl.grad(f, wrt=wrt)
    sizes = dict(zip(f.program.sizes(), itertools.cycle((5, 3, 4, 6, 7, 2))))
    rng = np.random.default_rng(2)
    args = {p.name: rng.standard_normal(tuple(sizes[d] if isinstance(d, str) else d
                                              for d in p.dims))
            for p in f.program.params}
    assert np.isclose(f.compile("numba")(**args), f.compile("numpy")(**args), rtol=1e-12)
    for got, want in zip(g.compile("numba")(**args), g.compile("numpy")(**args)):
        assert np.allclose(got, want, rtol=1e-11, atol=1e-12)
    text = module_source(g.optimized_program())
    assert "np.einsum" not in text


# Contractions over an index read at a constant shift, under guards on that index only: one
# product of windows (blas.shifted_contraction), whatever the shift, the axis or the names.
SHIFTED = [
    ("def f(P: f64[T, a], Q: f64[T, b]) -> f64[b, a]:\n"
     "    G[k, l] = sum[m]([m >= 1] * P[m - 1, l] * Q[m, k])\n    return G\n",
     lambda P, Q: Q[1:].T @ P[:-1]),
    ("def f(U: f64[n, p], V: f64[n, q]) -> f64[p, q]:\n"
     "    Z[r, s] = 2.0 * sum[z]([z + 2 < n] * U[z + 2, r] * V[z, s])\n    return Z\n",
     lambda U, V: 2.0 * U[2:].T @ V[:-2]),
    ("def f(A: f64[p, n], B: f64[q, n]) -> f64[p, q]:\n"
     "    C[i, j] = sum[t]([t >= 3] * A[i, t - 3] * B[j, t])\n    return C\n",
     lambda A, B: A[:, :-3] @ B[:, 3:].T),
    ("def f(x: f64[n], y: f64[n]) -> f64:\n"
     "    return sum[u]([u >= 1] * x[u] * y[u - 1])\n",
     lambda x, y: x[1:] @ y[:-1]),
]


@pytest.mark.parametrize("case", range(len(SHIFTED)))
def test_shifted_contractions_are_products_of_windows(case):
    from tensorlang.backend.blas import shifted_contraction
    from tensorlang.bounds import size_facts
    src, want = SHIFTED[case]
    prog = program(src)
    st = next(s for s in prog.stmts if s.body and s.body[0].sums)
    assert dense_contraction(st, prog.shapes()) is None
    assert shifted_contraction(st, prog.shapes(), size_facts(prog)) is not None
    source = module_source(prog)
    assert not re.search(r"\n\s+for ", source.split("def run")[1])   # no loop in the driver ...
    assert "@njit" not in source                           # ... and no kernel at all
    f = tl.parse(src)["f"]
    rng = np.random.default_rng(case)
    for n in (1, 2, 3, 5, 9):                # n <= shift: an empty window, a zero product
        shapes = {"T": n, "n": n, "a": 3, "b": 4, "p": 3, "q": 2}
        args = [rng.standard_normal([shapes.get(d, n) if not d.isdigit() else int(d)
                                     for d in p.dims]) for p in prog.params]
        got = f.compile("numba")(*args)
        assert np.allclose(got, want(*args), rtol=1e-12, atol=1e-12)
        assert np.allclose(got, f.compile("numpy")(*args), rtol=1e-12, atol=1e-12)


# Guards that bound an output index by sizes: the product of the windows where they hold,
# written into that part of a zeroed output (the guard fails elsewhere), whatever the names,
# the side of the bound, the offset, the axis or the operand's orientation.
GUARDED_OUTPUT = [
    ("def f(A: f64[n, p], Z: f64[T, n]) -> f64[T, p]:\n"
     "    Y[k, j] = sum[l]([k >= 1] * A[l, j] * Z[k, l])\n    return Y\n",
     lambda A, Z: np.vstack([np.zeros((min(1, len(Z)), A.shape[1])), Z[1:] @ A])),
    ("def f(B: f64[p, n], Z: f64[T, n]) -> f64[T, p]:\n"
     "    W[r: T, s] = 3.0 * sum[u]([r + 1 < T] * B[s, u] * Z[r + 1, u])\n    return W\n",
     lambda B, Z: np.vstack([3.0 * Z[1:] @ B.T, np.zeros((min(1, len(Z)), B.shape[0]))])),
    ("def f(C: f64[T, q], D: f64[n, q]) -> f64[n, T]:\n"
     "    V[a, b] = sum[c]([b >= 2] * [a + 1 < n] * D[a, c] * C[b, c])\n    return V\n",
     lambda C, D: np.pad(D[:-1] @ C[2:].T, ((0, min(1, len(D))), (min(2, len(C)), 0)))),
    ("def f(P: f64[T, a], Q: f64[T, b]) -> f64[b, a]:\n"
     "    G[k, l] = sum[m]([k >= 1] * [m >= 1] * P[m - 1, l] * Q[m, k])\n    return G\n",
     lambda P, Q: np.vstack([np.zeros((min(1, Q.shape[1]), P.shape[1])), Q[1:, 1:].T @ P[:-1]])),
    ("def f(B: f64[T, T], g: f64[T]) -> f64[T]:\n"
     "    x[k] = sum[l]([l >= 1 and k + 2 < T] * B[l - 1, k] * g[l])\n    return x\n",
     lambda B, g: _placed(len(g), B[:len(g) - 1, :max(len(g) - 2, 0)].T @ g[1:])),
]


def _placed(n, head):
    """A vector of n entries: `head`, then zeros."""
    out = np.zeros(n)
    out[:len(head)] = head
    return out


@pytest.mark.parametrize("case", range(len(GUARDED_OUTPUT)))
def test_a_guard_on_an_output_index_is_a_product_on_its_window(case):
    from tensorlang.backend.blas import shifted_contraction
    from tensorlang.bounds import size_facts
    src, want = GUARDED_OUTPUT[case]
    prog = program(src)
    st = prog.stmts[0]
    found = shifted_contraction(st, prog.shapes(), size_facts(prog))
    assert found is not None and found[2] is not None         # an output window
    source = module_source(prog)
    assert "@njit" not in source                               # no loop kernel at all
    assert re.search(r"= tl_zeros\(\([^)]*\)\); env\['\w+'\]\[", source)
    f = tl.parse(src)["f"]
    rng = np.random.default_rng(case)
    for t in (1, 2, 3, 5, 9):                # t <= the bound: an empty window, all zero
        shapes = {"T": t, "n": 4, "p": 3, "q": 5, "a": 3, "b": 4}
        if case == 2:
            shapes["n"] = t
        args = [rng.standard_normal([shapes[d] for d in p.dims]) for p in prog.params]
        got = f.compile("numba")(*args)
        assert got.shape == want(*args).shape
        assert np.allclose(got, want(*args), rtol=1e-12, atol=1e-12)
        assert np.allclose(got, f.compile("numpy")(*args), rtol=1e-12, atol=1e-12)


def test_a_scaled_index_a_guard_on_two_indices_or_a_recurrence_is_no_window():
    from tensorlang.backend.blas import shifted_contraction
    from tensorlang.bounds import size_facts
    for src in ("def f(P: f64[T, a], Q: f64[T, b]) -> f64[b, a]:\n"
                "    G[k, l] = sum[m]([m >= k] * P[m, l] * Q[m, k])\n"
                "    return G\n",
                "def f(A: f64[n, n], S: f64[T]) -> f64[T, n]:\n"
                "    x[t: T, i] = sum[j]([t >= 1] * A[i, j] * x[t - 1, j])\n    return x\n",
                "def f(P: f64[T, a], Q: f64[n, b]) -> f64[b, a]:\n"
                "    G[k, l] = sum[m: T]([2 * m < n] * P[m, l] * Q[2 * m, k])\n    return G\n"):
        prog = program(src)
        st = prog.stmts[0]
        assert shifted_contraction(st, prog.shapes(), size_facts(prog)) is None


def test_a_guarded_product_in_a_gradient_stays_a_product():
    """A gradient's term [k >= 1] * sum[p](M[l, p] * Z[k, p]) (row 0 fails the guard)
    is one product on rows 1 to R, stored (not fused into the dot product over k that
    reads it, where it would be a loop per entry), and the values are the
    interpreter's.  (The adjoint of an unrolled recurrence had such a term, until it
    became a shifted read of the state's adjoint, simplify.share_shifted_statements.)"""
    src = ("def f(M: f64[m, m], Z: f64[R, m], c: f64[m]) -> f64:\n"
           "    return sum[k, q]([k >= 1] * c[q] * Z[k - 1, q] * sum[l](M[q, l] * Z[k, l]))\n")
    f = tl.parse(src)["f"]
    g = tl.grad(f, wrt=("M", "c"))
    source = module_source(g.optimized_program())
    assert re.search(r"= tl_zeros\(\([^)]*\)\); env\['\w+'\]\[1:", source)
    rng = np.random.default_rng(3)
    m, R = 70, 6                      # m above rows.MAX_PRODUCT_SUM: the products run
    args = dict(M=0.1 * rng.standard_normal((m, m)), Z=rng.standard_normal((R, m)),
                c=rng.standard_normal(m))
    for got, want in zip(g.compile("numba")(**args), g.compile("numpy")(**args)):
        assert np.allclose(got, want, rtol=1e-10, atol=1e-12)
