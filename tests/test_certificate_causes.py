"""Derivatives that missed the cheap-gradient certificate, one per cause that was fixed
(benchmarks/results/cost_warnings.md): each warned before its mechanism and must not
now, at the cost polynomial given; each is checked against finite differences and the
dot-product identity."""
import re
import warnings

import numpy as np
import pytest

import tensorlang as tl
from derivcheck import (check_close, dot_product_identity, f64_params, grad_matches_fd,
                        inputs_for, jvp_matches_fd, of_terms_multiplied_out, sizes_for)
from test_cost_regressions import product_of

# A maximum over entries that are products of several reads, symmetric in the two
# indices it runs over.
PRODUCT_MAX = """
def f(A: f64[k, m], y: f64[n]) -> f64[k, n]:
    z[r, i: n] = max[j: m, v: m](A[r, j] * A[r, v] * y[n - 1 - i])
    return z
"""

# The same entries under a smooth sum: the adjoint's two partial sums over the
# symmetric entries are one statement read in two orders.
PRODUCT_SUM = """
def f(A: f64[k, m], y: f64[n]) -> f64[k, n]:
    z[r, i: n] = sum[j: m, v: m](exp(A[r, j] * A[r, v] * y[n - 1 - i]))
    return z
"""

# Two statements that are transposes of each other.
TRANSPOSED = """
def f(x: f64[n, m], w: f64[m, n]) -> f64:
    a[i, j] = exp(x[i, j]) * w[j, i]
    b[j, i] = exp(x[i, j]) * w[j, i]
    return sum[i, j](a[i, j] * x[i, j]) + sum[i, j](b[j, i] * w[j, i])
"""


def _quiet(make):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", tl.TLCostWarning)
        out = make()
    return out, [w for w in caught if issubclass(w.category, tl.TLCostWarning)]


def test_a_tangent_read_once_is_the_weight_of_the_sum_over_the_ties():
    """The jvp stored the entries' tangent and then summed it over the ties
    (`17 k m^2 n` against the bound's `16 k m^2 n`); substituted into the sum's
    weight (opt/simplify.py inline_tie_weights), which runs in the maximum's pass,
    it is never stored.  (14, not 16: the maximum's entries, k x m^2 x n where the
    function holds k x n at most, are computed where the maximum, its ties and the
    tangent's sum read them, which also costs less than storing them:
    simplify.inline_pointwise_statements with a budget.)"""
    f = tl.parse(PRODUCT_MAX)["f"]
    j, caught = _quiet(lambda: tl.jvp(f, wrt="A"))
    assert not caught, caught[0].message
    assert str(tl.cost(j)) == "14*k*m^2*n + 10*k*n"
    assert "d_z_arg[" not in j.source
    rng = np.random.default_rng(11)
    for seed in (1, 2):
        inputs = inputs_for(f, seed=seed)
        jvp_matches_fd(f, ["A"], inputs, rng)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", tl.TLCostWarning)
            dot_product_identity(f, ["A"], inputs, rng)


def test_statements_equal_up_to_a_symmetry_of_what_they_read_are_shared():
    """`A_bar_sum1[l, p, q] = sum[r](A[l, r] * z_bar[l, q, p, r])` is A_bar_sum, which
    reads z_bar in the other order of its last two indices, where z_bar (like the
    entries it is made of) is symmetric: one statement (`13 k m^2 n` before; 11 before the
    entries, k x m^2 x n where the function holds k x n at most, were computed where read,
    simplify.inline_pointwise_statements with a budget)."""
    f = tl.parse(PRODUCT_SUM)["f"]
    v, caught = _quiet(lambda: tl.vjp(f, wrt="A"))
    assert not caught
    assert str(tl.cost(v)) == "9*k*m^2*n + k*m"
    assert "A_bar_sum1" not in v.source
    rng = np.random.default_rng(5)
    dot_product_identity(f, ["A"], inputs_for(f, seed=4), rng)


def test_a_symmetry_seen_through_a_tie_test_is_not_used():
    """The ties of a maximum are where computed entries are equal: a backend may round
    the two orders of a product differently, so the indicator of the ties is not
    taken to be symmetric, and the reverse mode of PRODUCT_MAX keeps both sums (an
    element whose two mirrored entries differ in the last bit still gets its whole
    derivative)."""
    f = tl.parse(PRODUCT_MAX)["f"]
    v, _ = _quiet(lambda: tl.vjp(f, wrt="A"))
    assert "A_bar_sum1" in v.source
    inputs = inputs_for(f, seed=1)
    A, y = inputs["A"], inputs["y"]
    rng = np.random.default_rng(2)
    bar = rng.standard_normal((A.shape[0], y.shape[0]))
    got = v(**inputs, d_out=bar)
    # reference: each element's cotangent to the first of its best pairs' two reads
    # and its mirror, split over the pairs that tie in the interpreter's own values
    entries = A[:, None, :, None] * A[:, None, None, :] * y[::-1][None, :, None, None]
    want = np.zeros_like(A)
    n = y.shape[0]
    for r in range(A.shape[0]):
        for i in range(n):
            ties = np.argwhere(entries[r, i] == entries[r, i].max())
            for j, u in ties:
                want[r, j] += bar[r, i] * A[r, u] * y[n - 1 - i] / len(ties)
                want[r, u] += bar[r, i] * A[r, j] * y[n - 1 - i] / len(ties)
    check_close(got, want, "vjp of a maximum over products")


def test_statements_equal_up_to_the_order_of_their_indices_are_shared():
    """`b[j, i]` is `a[i, j]`: one exponential per element, not two (`14*m*n + 1`)."""
    f = tl.parse(TRANSPOSED)["f"]
    assert str(tl.cost(f)) == "9*m*n + 1"
    inputs = inputs_for(f, seed=7)
    x, w = inputs["x"], inputs["w"]
    want = np.sum(np.exp(x) * w.T * x) + np.sum(np.exp(x).T * w * w)
    check_close(f(**inputs), want, "shared transposed statement")
    grad_matches_fd(f, ["x", "w"], inputs, np.random.default_rng(3))


@pytest.mark.parametrize("wrt", ["A", ("A", "y")])
def test_numba_sums_a_weight_of_several_terms_over_the_ties(wrt):
    f = tl.parse(PRODUCT_MAX)["f"]
    j, _ = _quiet(lambda: tl.jvp(f, wrt=wrt))
    inputs = inputs_for(f, seed=3)
    rng = np.random.default_rng(1)
    names = (wrt,) if isinstance(wrt, str) else wrt
    d = {f"d_{w}": rng.standard_normal(inputs[w].shape) for w in names}
    a = j.compile(backend="numpy")(**inputs, **d)
    b = j.compile(backend="numba")(**inputs, **d)
    check_close(b[1], a[1], "numba against the interpreter")


# A builtin of several reads that reverse mode writes into every adjoint its output
# meets (a fuzz program of tests/test_derivative_fuzz.py).
REPEATED_CALL = """
def f(x: f64[n], y: f64[n], w: f64[n]) -> f64:
    return sum[i](w[i] * exp(sin(x[i]) * y[i]) / (1.0 + tanh(x[i] * y[i]) ** 2))
"""


def test_a_builtin_of_several_reads_is_stored_once():
    """`tanh(x[i] * y[i])` was evaluated by five statements of the vjp (`70*n` against
    the bound's `68*n + 8`); stored once (store_repeated_calls), `60*n`; `55*n` with
    the adjoints reading the products other adjoints store (reuse_stored_products);
    `52*n` with the two adjoints that divide by `1 + tanh(x[i] * y[i]) ** 2` computing
    it once, in one pass (tensorlang/shared.py); `50*n` with tanh' the one factor
    tanh_slope(tanh(..))."""
    f = tl.parse(REPEATED_CALL)["f"]
    v, caught = _quiet(lambda: tl.vjp(f, wrt=("x", "y", "w")))
    assert not caught, caught[0].message
    assert str(tl.cost(v)) == "50*n"
    assert sum("tanh(" in line for line in v.source.splitlines()[1:]) == 1
    inputs = inputs_for(f, seed=2)
    grad_matches_fd(f, ["x", "y", "w"], inputs, np.random.default_rng(9))
    dot_product_identity(f, ["x", "y", "w"], inputs, np.random.default_rng(10))


# Perona-Malik diffusion as a recurrence: each step divides the flux by
# 1 + (difference / kap) ** 2.
DIFFUSION = """
def pm(x0: f64[n], kap: f64) -> f64:
    U[s: K, r: n] = [s == 0] * x0[r] + [s >= 1] * (U[s - 1, r] + [r >= 1] * (U[s - 1, r - 1]
        - U[s - 1, r]) / (1.0 + ((U[s - 1, r - 1] - U[s - 1, r]) / kap) ** 2))
    return sum[r](U[K - 1, r] ** 2)
"""


def test_a_parenthesised_sum_several_adjoints_divide_by_is_stored_once():
    """The gradient in kap evaluated the denominator `(1.0 + (U[k, l] / kap - U[k, l + 1]
    / kap) ** 2.0)` in eight terms (four of the adjoint step, four sums of kap's adjoint):
    `127*K*n - ...` against the bound's `96*K*n - ...`.  Stored once after the forward
    group (store_repeated_calls, parenthesised sums as builtins of several reads) it was
    `101*K*n - ...`, kap's adjoint multiplying out the cube of the difference (four sums,
    one per monomial).  The cotangent the quotient's terms share is now stored once per
    step, a member of the adjoint recurrence (Transposer.shared_cotangent): `77*K*n`,
    within the bound.  tl.grad takes the program as it runs, whose step stores the
    difference and the quotient's denominator: `62*K*n`."""
    f = tl.parse(DIFFUSION.replace("f64[n], kap", "f64[n], its: f64[K], kap"))["pm"]
    g, caught = _quiet(lambda: of_terms_multiplied_out("grad", f, "kap"))
    assert not caught, caught[0].message
    body = g.source.splitlines()[1:]
    assert sum("(1.0 + (" in line for line in body) == 1, g.source   # the forward's own
    assert str(tl.cost(g)) == "77*K*n - 8*K - 55*n + 21"
    g, caught = _quiet(lambda: tl.grad(f, wrt="kap"))
    assert not caught, caught[0].message
    assert str(tl.cost(g)) == "62*K*n - 4*K - 38*n + 13"
    inputs = inputs_for(f, seed=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tl.TLCostWarning)
        grad_matches_fd(f, ["kap", "x0"], inputs, np.random.default_rng(5))


def test_a_sum_dividing_by_an_entry_is_not_stored_where_it_is_not_evaluated():
    """Only a sum that is finite wherever its reads are is stored over its whole domain:
    one that divides by an entry (0 where no bracket lets it be read) is not."""
    from tensorlang.opt.simplify import _total_group
    from tensorlang.ssa.ir import Group
    def group(src):
        prog = tl.parse(src)["f"].program
        return next(f for t in prog.stmts[0].body for f, _ in t.factors
                    if f.__class__ is Group)
    total = group("def f(u: f64[n], kap: f64) -> f64[n]:\n"
                  "    y[i] = 1.0 / (1.0 + (u[i] / kap) ** 2)\n    return y\n")
    partial = group("def f(u: f64[n], v: f64[n]) -> f64[n]:\n"
                    "    y[i] = 1.0 / (1.0 + u[i] / v[i])\n    return y\n")
    assert _total_group(total) and not _total_group(partial)


# A fuzz program whose adjoint scatters `t1_bar[k, l]` from `[k == l + 1]`.
DIAGONAL_SCATTER = """
def fz(x: f64[n], y: f64[n], A: f64[n, m], s: f64) -> f64[n, n]:
    t1[i, j] = [n > j + 1] * A[j + 1, j] * x[i]
    t2[r: n, v: n] = [m > 2 * v] * A[v, 2 * v] * (min(0.0, s + y[n - 1]) * y[r])
    t3[j: n, r: n] = max[i: n, v: m](A[r, v] * ((t2[r, j] + 1.0) * ([0 <= i - 1 < m] * t1[i, i - 1])))
    return t3
"""


def test_a_scatter_counts_the_range_of_the_generator_it_solves():
    """`t1_bar[k: n, l: m] = sum[p, q, r]([k == l + 1] * ...)` scatters over l and
    works only where k = l + 1 < n: at most n times as well as m times.  The model
    counts m (`3*m^2*n^2`, a monomial the forward's `10*m*n^3` does not bound when m
    is large), the certificate may take n (costs._solved_counts)."""
    from tensorlang.costs import Choices, choosing, program_cost
    f = tl.parse(DIAGONAL_SCATTER)["fz"]
    v, caught = _quiet(lambda: tl.vjp(f, wrt="A"))
    assert not caught, caught[0].message
    # (8*m^2*n^2 before a contraction read a product the program stores; 13*m*n^3
    # before two sums reading one operand were merged, opt/summerge.py)
    assert str(tl.cost(v)) == ("12*m*n^3 + 7*m^2*n^2 + 2*m*n^2 + 2*m^2*n + 5*m*n + 20*n^2 + "
                               "2*m + 4*n + 7")
    probe = Choices()
    with choosing(probe):
        program_cost(v.program)
    assert len(probe.seen) >= 3
    # the count really is an upper bound: the op counter at sizes where n < m
    inputs = inputs_for(f, seed=5)
    d = np.random.default_rng(4).standard_normal((inputs["x"].shape[0],) * 2)
    ops = v.count_ops(**inputs, d_out=d)
    n, m = inputs["A"].shape
    cheapest = None
    for k in range(len(probe.seen)):
        for o in range(probe.seen[k]):
            with choosing(Choices([-1] * k + [o])):
                c = program_cost(v.program).evaluate(n=n, m=m)
            cheapest = c if cheapest is None else min(cheapest, c)
    assert ops <= cheapest
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tl.TLCostWarning)
        dot_product_identity(f, ["A"], inputs, np.random.default_rng(6))


# A fuzz program whose adjoint tests a band between its two generators.
GENERATOR_BAND = """
def h(u: f64[q], w: f64[q], B: f64[q, p], c: f64) -> f64[p]:
    t1[j: p] = min[i: p, r: q]([i + j < q and j + r < q] * B[i + j, i] * u[j + r])
    return t1
"""


def _every_single_choice(prog):
    from tensorlang.costs import Choices, choosing, program_cost
    probe = Choices()
    with choosing(probe):
        program_cost(prog)
    out = []
    for k, count in enumerate(probe.seen):
        for o in range(count):
            with choosing(Choices([-1] * k + [o])):
                out.append(program_cost(prog))
    return out


@pytest.mark.parametrize("sizes", [(3, 7), (6, 4)])
def test_a_band_between_two_generators_bounds_their_pairs(sizes):
    """`B_bar[k: q, l: p] = sum[r: q]([0 <= k - l < p and ...] ...)` tests the band at
    every element and works only inside it: at most p values of k meet each l, so the
    work is bounded by p * p pairs as well as by the q * p elements (costs.py,
    CostModel._generator_bands).  The model counts the elements (`2*p*q^2`, a monomial
    the forward's `5*p^2*q` does not bound), the certificate may take the pairs; the op
    counter stays within every one of the counts."""
    f = tl.parse(GENERATOR_BAND)["h"]
    v, caught = _quiet(lambda: tl.vjp(f, wrt="B"))
    assert not caught, caught[0].message
    assert str(tl.cost(v)) == "2*p*q^2 + 14*p^2*q + 3*p*q + 9*p"
    p, q = sizes
    rng = np.random.default_rng(p * q)
    inputs = {"u": rng.standard_normal(q), "w": rng.standard_normal(q),
              "B": rng.standard_normal((q, p)), "c": 0.5}
    ops = v.count_ops(**inputs, d_out=rng.standard_normal(p))
    for c in _every_single_choice(v.program):
        assert ops <= c.evaluate(p=p, q=q)


def test_a_bracket_through_a_gather_is_no_band():
    """`[k >= lab[l]]` mentions both generators, one only through the gather: no band."""
    f = tl.parse("""
def f(x: f64[n], lab: i64[n]) -> f64[n, n]:
    y[k, l] = [k >= lab[l]] * x[k]
    return y
""")["f"]
    assert str(tl.cost(f)) == "3*n^2"


# A fuzz program of tests/test_derivative_fuzz.py: a maximum over products of two reads of A.
FUZZ_PRODUCT_MAX = """
def fz(x: f64[n], y: f64[n], A: f64[n, m], s: f64, lab: i64[n], E: f64[k, m]) -> f64[n, n]:
    t1[i: m] = s * y[n - 1]
    t2[r: m] = max[i: n](k)
    t3[r: n, i: n] = A[r, 0] * x[i] * max[j: m, v: m](A[r, j] * A[r, v] * y[n - i - 1])
    return t3
"""


def test_a_partial_sum_and_its_transpose_are_one_statement():
    """The vjp sums the indicator over the rows first, `A_bar_sum[l, p, q]`, and reads it
    once as it is and once transposed, where it stored the transpose as a statement of
    its own (`17*m^2*n^2 + ...` against the bound's `16*m^2*n^2 + ...`); the jvp sums the
    tangent over the ties in the maximum's pass (`17*m^2*n^2 + 21*n^2` before).  (The vjp
    was 15 m^2 n^2 before its indicator times the cotangent was read where it is used,
    simplify.inline_bracketed_copies.  The jvp was 16 m^2 n^2 before the maximum's
    entries, n^2 m^2, larger than anything the function holds, were computed where read.)"""
    f = tl.parse(FUZZ_PRODUCT_MAX)["fz"]
    v, caught = _quiet(lambda: tl.vjp(f, wrt="A"))
    assert not caught, caught[0].message
    assert str(tl.cost(v)) == "13*m^2*n^2 + 5*m^2*n + m*n + 16*n^2"
    j, caught = _quiet(lambda: tl.jvp(f, wrt="A"))
    assert not caught, caught[0].message
    assert str(tl.cost(j)) == "14*m^2*n^2 + 21*n^2"
    inputs = inputs_for(f, seed=8)
    dot_product_identity(f, ["A"], inputs, np.random.default_rng(8))
    jvp_matches_fd(f, ["A"], inputs, np.random.default_rng(9))


def test_the_cotangent_rides_in_the_prefix_products():
    """The vjp of a product of sixteen factors multiplied every partial by d_out
    once more (`130*n` against the bound's `128*n + 8`); carried in the prefix
    products (ad/chain.py), it is multiplied once, into the first of them, and
    every partial that reads a prefix has it already."""
    f = tl.parse(product_of(16))["f"]
    wrt = tuple(p.name for p in f.program.params)
    v, caught = _quiet(lambda: tl.vjp(f, wrt=wrt))
    assert not caught, caught[0].message
    assert str(tl.cost(v)) == "117*n"
    rng = np.random.default_rng(12)
    xs = [rng.standard_normal(5) for _ in wrt]
    got = v(*xs, 1.7)
    for k in range(len(wrt)):
        want = 1.7 * np.prod([x for q, x in enumerate(xs) if q != k], axis=0)
        check_close(got[k], want, f"cotangent {k}", rtol=1e-12, atol=1e-14)
    inputs = inputs_for(f, seed=3)
    grad_matches_fd(f, list(wrt), inputs, np.random.default_rng(13))
    dot_product_identity(f, list(wrt), inputs, np.random.default_rng(14))


# A quadratic band form: y appears twice, so its tangent has two terms that are one
# with the kernel symmetrised.
BAND_FORM = """
def f(A: f64[k, k], y: f64[m], z: f64[n]) -> f64:
    x[l: n] = z[l] * sum[j: k, p: k]([0 <= l - j < m and 0 <= l - p < m]
                                     * A[j, p] * y[l - j] * y[l - p])
    return sum[l](x[l])
"""


def test_factoring_may_add_a_monomial_the_certificate_allows():
    """The jvp of the band form with respect to A (and y) reads A's tangent, k^2
    elements, so its certificate allows k^2: storing `A[j, p] + A[p, j]` to make the
    two tangent terms of y one is kept (`20*k*m*n` against the bound's `16*k*m*n`
    before).  With respect to y alone it is not (tests/test_cost_regressions.py)."""
    f = tl.parse(BAND_FORM)["f"]
    costs = {}
    for wrt in (("A", "y", "z"), ("A", "y")):
        j, caught = _quiet(lambda: tl.jvp(f, wrt=wrt))
        assert not caught, caught[0].message
        costs[wrt] = str(tl.cost(j))
        rng = np.random.default_rng(31)
        inputs = {"A": rng.standard_normal((3, 3)), "y": rng.standard_normal(4),
                  "z": rng.standard_normal(6)}
        jvp_matches_fd(f, list(wrt), inputs, rng)
        dot_product_identity(f, list(wrt), inputs, rng)
    assert costs == {("A", "y", "z"): "16*k*m*n + 3*k^2 + 4*n + 2",
                     ("A", "y"): "12*k*m*n + 3*k^2 + 4*n + 2"}


# A maximum over a column gathered through labels (the table's row index first), as
# in tests/newuser3_programs.py's fqi with other names and the index order swapped.
GATHERED_COLUMN_MAX = """
def f(T: f64[c, h], lab: i64[b], wt: f64[b]) -> f64:
    best[r] = max[o](T[o, lab[r]])
    return sum[r](wt[r] * best[r] ** 2)
"""


def test_a_tie_indicator_waits_in_the_loop_along_the_gathered_column():
    """The adjoint scatters `sum[m]([l == lab[m] and T[k, lab[m]] == best[m]] * ...)`:
    the tie test needs the loop over k, and it kept `l = lab[m]` and its two range
    checks inside that loop, for every (m, k) (`10*b*c` against the bound's `8*b*c`).
    A value comparison guards no read, so it waits in the deeper loop and the label is
    solved once per m (loops._staged); the Numba kernels and the op counter agree.  The
    statement before it reads T[k, lab[m]] at every m, so the two range checks are not
    made at all (Stmt.checked_labels; they were staged once per m, `16*b`)."""
    from tensorlang.loops import plan_statement
    from tensorlang.bounds import size_facts
    f = tl.parse(GATHERED_COLUMN_MAX)["f"]
    g, caught = _quiet(lambda: tl.grad(f, wrt="T"))
    assert not caught, caught[0].message
    assert str(tl.cost(g)) == "8*b*c + c*h + 14*b + 1"
    prog = g.optimized_program()
    adjoint = next(s for s in prog.stmts if s.name == "T_bar")
    (scatter,) = plan_statement(adjoint, size_facts(prog)).scatter_terms
    assert scatter.stage == 1 and not scatter.staged and len(scatter.filters) == 1
    inputs = inputs_for(f, seed=3)
    grad_matches_fd(f, ["T"], inputs, np.random.default_rng(12))
    _, sizes = g.prepare((), inputs)
    assert g.count_ops(**inputs) <= tl.cost(g).evaluate(**sizes)
    check_close(g.compile("numba")(**inputs), g.compile("numpy")(**inputs), "grad",
                rtol=1e-12, atol=1e-12)


# An element energy k (du)^2 / h as in tests/newuser3_programs.py's fem1d, with other
# names, the connectivity stored column by column and the difference the other way.
ELEMENT_ENERGY = """
def f(p: f64[v], L: f64[v], E: i64[2, m], c: f64[m]) -> f64:
    w[r] = L[E[1, r]] - L[E[0, r]]
    return 0.25 * sum[r](c[r] * (p[E[0, r]] - p[E[1, r]]) ** 2 / w[r])
"""


def test_an_adjoint_reads_the_product_another_adjoint_stores():
    """The element length's adjoint `-c (dp)^2 / w^2` repeated every factor of the
    stiffness's `(dp)^2 / w` (`42*m` against the bound's `40*m`); it now reads that
    statement, moved before it, times `-c / w` (simplify.reuse_stored_products)."""
    f = tl.parse(ELEMENT_ENERGY)["f"]
    v, caught = _quiet(lambda: tl.vjp(f, wrt=("p", "L", "c")))
    assert not caught, caught[0].message
    assert str(tl.cost(v)) == "29*m + 2*v + 4"
    assert "w_bar[k: m] = -c[k] * c_bar[k] / w[k]" in v.source
    inputs = {"p": np.array([0.3, -1.2, 0.8, 2.0]), "L": np.array([0.0, 1.1, 2.5, 3.2]),
              "E": np.array([[0, 1, 2], [1, 2, 3]]), "c": np.array([1.5, 0.7, 2.2])}
    grad_matches_fd(f, ["p", "L", "c"], inputs, np.random.default_rng(13))
    dot_product_identity(f, ["p", "L", "c"], inputs, np.random.default_rng(14))


# A spring network (tests/newuser_programs.py's springs with other names, the edge
# list stored column by column and the difference the other way).
SPRINGS = """
def f(P: f64[v, c], S: i64[2, b], r0: f64[b], kk: f64[b]) -> f64:
    ln[q] = sqrt(sum[j]((P[S[1, q], j] - P[S[0, q], j]) ** 2))
    return sum[q](0.5 * kk[q] * (ln[q] - r0[q]) ** 2)
"""


def test_a_stored_product_is_read_only_where_the_finished_program_is_cheaper():
    """Interleaved with the other rules, the Hessian read `-0.5 * L_bar / L ** 2` as
    `-L_arg_bar / L` (cheaper then), and the `2` of a tangent no longer cancelled: eight
    terms of the Hessian's scatter gained a multiplication (`40*b*c^2` against
    `32*b*c^2`).  The reads are now tried on the program the other rules finished with
    and kept only when it ends cheaper (simplify._share_stored_products).  (The scatters
    after the label check test no range: `35*b*c + 89*b` before Stmt.checked_labels.)"""
    f = tl.parse(SPRINGS)["f"]
    h, _ = _quiet(lambda: tl.hessian(f, wrt="P"))
    assert str(tl.cost(h)) == "c^2*v^2 + 32*b*c^2 + 19*b*c + 25*b + 1"


# A builtin of a table's entries read only through labels, in several adjoints.
GATHERED_CALLS = """
def f(u: f64[b], v: f64[n], pos: i64[b]) -> f64:
    return sum[t](u[t] * sigmoid(v[pos[t]])) - sum[r](sigmoid(v[pos[r]]) ** 3)
"""


def test_a_call_read_at_a_few_labels_is_not_stored_over_the_whole_table():
    """`sigmoid(v[pos[t]])` was stored as `v_sigmoid[i: n]`, every entry of v, for the
    b entries the adjoints read: cheaper when b = n, but `5*n` where the bound allows
    `4*n` when the table is larger.  Storing must not cost more at the skewed sizes
    either (simplify._storing_pays), so the calls stay where they are read.  Against
    tl.cost(f) (`7*b + 5`: the function as it runs sums both terms in one pass, one
    sigmoid per label) the gradient missed by 2 b where b is large, `34*b + n`: its four
    scatter terms each evaluated the sigmoid.  The sum of their remainders reads
    v[pos[r]], which the program reads at every r outside any bracket, so it is stored
    over r apart from the scatter's bracket (opt/factor.py): one scatter, `27*b + n`;
    `19*b + n` with sigmoid' the one factor sigmoid_slope(sigmoid(..))."""
    f = tl.parse(GATHERED_CALLS)["f"]
    g, caught = _quiet(lambda: tl.grad(f, wrt=("v", "u")))
    assert not caught, caught[0].message
    assert str(tl.cost(g)) == "19*b + n"
    inputs = {"u": np.array([0.5, -1.0, 2.0]), "v": np.array([0.1, -0.7, 1.3, 0.4, -2.0]),
              "pos": np.array([3, 0, 3])}
    grad_matches_fd(f, ["v", "u"], inputs, np.random.default_rng(15))


# A maximum over entries under brackets of their own, each entry a product of three
# differentiated reads (fuzz programs of tests/test_numba_fuzz.py, renamed), alone and
# under a guard that bounds the statement's index by another size.
BRACKETED_MAX = """
def fz(q: f64[a, b], c: f64, lab: i64[p], u: f64[p]) -> f64[p]:
    best[t: p] = max[g: a, h: a]([g + 1 < b and t + g < p and g - lab[t + g] <= 0]
                                 * q[h, b - 1] * q[g, g + 1] * c)
    return best
"""
BRACKETED_MAX_REORDERED = """
def fz(c: f64, q: f64[a, b], lab: i64[p]) -> f64[p]:
    best[t: p] = max[h: a, g: a]([t + g < p and g - lab[t + g] <= 0 and g + 1 < b]
                                 * c * q[g, g + 1] * q[h, b - 1])
    return best
"""
GUARDED_MAX = """
def fz(w: f64[a, b], c: f64, lab: i64[p], v: f64[p, b]) -> f64[p, p]:
    best[t: p, u: p] = [t >= 2 and t <= b + 1] * max[g: a, h: p](
        [g + 1 < b and t + 1 < b and u + g < p and g - lab[u + g] <= 0] * w[g, g + 1] * c
        * v[h, t + 1])
    return best
"""


@pytest.mark.parametrize("source,cost", [
    (BRACKETED_MAX, "24*a^2*p + 10*p"),
    (BRACKETED_MAX_REORDERED, "24*a^2*p + 10*p"),
    (GUARDED_MAX, "26*a*b*p^2 + 6*b*p + 4*p^2")], ids=["plain", "reordered", "guarded"])
def test_the_tangent_over_the_ties_of_a_bracketed_maximum_is_one_sum_in_its_pass(source, cost):
    """The jvp multiplied the entries' tangent out and summed each of its three terms
    over the ties in a statement of its own, each comparing every entry with the
    maximum again (`24 a b p + 9 a^2 p` against the bound's `28 a^2 p`, `41 a b p^2`
    against `32 a b p^2`); the entries' brackets, which the tangent carries, kept
    them from being recognised as sums over the ties (tensorlang/ties.py).  Now such a
    sum is recognised with the brackets in its weight, tested once for all of a
    statement's terms; forward mode may store the tangent's sum over the ties whole
    (ad/forward.py, `tangent_over_ties`), one sum in the maximum's pass; and that pass
    is counted over the elements the maximum's own plan visits (`t <= b + 1`)."""
    f = tl.parse(source)["fz"]
    wrt = tuple(f64_params(f))
    j, caught = _quiet(lambda: tl.jvp(f, wrt=wrt))
    assert not caught, caught[0].message
    assert str(tl.cost(j)) == cost
    rng = np.random.default_rng(4)
    for seed in (1, 2):
        jvp_matches_fd(f, list(wrt), inputs_for(f, seed=seed), rng)


@pytest.mark.parametrize("source", [BRACKETED_MAX, GUARDED_MAX], ids=["plain", "guarded"])
def test_numba_sums_a_bracketed_weight_over_the_ties(source):
    f = tl.parse(source)["fz"]
    wrt = tuple(f64_params(f))
    j, _ = _quiet(lambda: tl.jvp(f, wrt=wrt))
    rng = np.random.default_rng(6)
    for seed in (1, 2):
        inputs = inputs_for(f, seed=seed)
        d = {f"d_{w}": rng.standard_normal(np.shape(inputs[w])) for w in wrt}
        a = j.compile(backend="numpy")(**inputs, **d)
        b = j.compile(backend="numba")(**inputs, **d)
        check_close(b[1], a[1], "numba against the interpreter")
        assert j.count_ops(**inputs, **d) <= tl.cost(j).evaluate(
            **sizes_for(f))


# Grey-level erosion: the minimum over a window of a signal minus a per-output offset.
EROSION = """
def f(x: f64[n], k: f64[n]) -> f64:
    e[i: n] = min[j | j - i <= 2 and i - j <= 2](x[j] - k[i])
    return sum[i](e[i] ** 2)
"""


@pytest.mark.parametrize("derive, cost", [(tl.grad, "64*n"), (tl.vjp, "67*n")])
def test_an_adjoint_summing_the_ties_reads_their_count(derive, cost):
    """The offset's adjoint `k_bar[l] = -sum[m]([window and x[m] - k[l] == e[l]] * w[l])`
    compared the window's entries with the minimum again, where the number of ties it
    sums is stored already for the tie rule (`87*n` against the bound's `84*n + 8`);
    it now reads that count, `-count[l] * w[l]` (simplify.reuse_stored_sums)."""
    f = tl.parse(EROSION)["f"]
    d, caught = _quiet(lambda: derive(f, wrt=("x", "k")))
    assert not caught, caught[0].message
    assert str(tl.cost(d)) == cost
    k_bar = next(line for line in d.source.splitlines() if line.lstrip().startswith("k_bar"))
    assert "sum[" not in k_bar, d.source
    inputs = inputs_for(f, size=9, seed=21)
    grad_matches_fd(f, ["x", "k"], inputs, np.random.default_rng(22))
    dot_product_identity(f, ["x", "k"], inputs, np.random.default_rng(23))


# The harmonic bond energy of a force field over an i64 pair table.
BOND = """
def f(X: f64[N, 3], bonds: i64[B, 2], kb: f64[B], r0: f64) -> f64:
    return sum[p](kb[p] * (sqrt(sum[c]((X[bonds[p, 0], c] - X[bonds[p, 1], c]) ** 2)) - r0) ** 2)
"""


@pytest.mark.parametrize("wrt, cost", [("X", "57*B + 3*N + 1"), (("X", "kb"), "65*B + 3*N + 1")])
def test_a_factor_of_fewer_indices_is_stored_over_them(wrt, cost):
    """The adjoint of the bond length multiplies (sqrt(d2) - r0) / sqrt(d2) by the
    difference of the two gathered rows.  Where r0 is not differentiated nothing else
    stores that factor, and the normal form multiplied it out over the rows
    (`X0 * s - X0 * r0 - X1 * s + X1 * r0` per bond and axis; (X, kb) cost `78*B`
    against the bound's `76*B`).  In a derivative over its bound factor_common_products
    now takes a single shared read when the rest needs fewer indices (`s - r0` per
    bond), and share_common_statements reads `r0 - s` as minus that.  With respect to X
    alone the gradient is within its bound (`72*B + 12*N + 8`): 67 B, and 57 B since the
    difference of the two rows, which the program reads at every bond unguarded, is
    stored apart from the scatters' brackets."""
    f = tl.parse(BOND)["f"]
    d, caught = _quiet(lambda: tl.grad(f, wrt=wrt))
    assert not caught, caught[0].message
    assert str(tl.cost(d)) == cost
    inputs = inputs_for(f, size=5, seed=31)
    inputs["bonds"] = np.array([[0, 1], [1, 2], [3, 1], [4, 0], [2, 4]])
    names = [wrt] if isinstance(wrt, str) else list(wrt)
    grad_matches_fd(f, names, inputs, np.random.default_rng(32))
    dot_product_identity(f, names, inputs, np.random.default_rng(33))


def _checked(f, g, wrt, inputs, seed):
    """g = tl.grad(f, wrt) against finite differences and the dot-product identity, and
    its Numba kernels against the interpreter."""
    grad_matches_fd(f, wrt, inputs, np.random.default_rng(seed))
    dot_product_identity(f, wrt, inputs, np.random.default_rng(seed + 1))
    args = [inputs[p] for p in f.params]
    for a, b in zip(g.compile("numba")(*args), g(*args)):
        check_close(a, b, "numba against the interpreter", rtol=1e-12, atol=1e-12)


# Value iteration with a hard maximum: the discount gamma multiplies a contraction of
# the step.
VALUE_ITERATION = """
def vi(R: f64[S, A], P: f64[S, A, S], gamma: f64, K1: f64[K]) -> f64:
    V[k: K, s: S] = [k >= 1] * max[a](R[s, a] + gamma * sum[u](P[s, a, u] * V[k - 1, u]))
    return sum[s](V[K - 1, s])
"""


def test_a_contraction_order_reads_a_product_the_program_stores():
    """gamma's adjoint sums P[l, p, u] * V[k - 1, u] * V_arg_bar[k, l, p] over all four
    indices; ordered as if every pair cost a pass, it summed P * V_arg_bar over (l, p)
    at every step (2 A K S^2), where V[k - 1, u] * V_arg_bar[k, l, p] summed over the
    steps is P's own adjoint, stored already: `sum(P * P_bar_sum)`, 2 A S^2.  The
    search takes a pair of operands that a statement stores as free
    (contract._stored_twin); `8*A*K*S^2 - 2*A*S^2 + ...` against the bound's
    `8*A*K*S^2 - 4*A*S^2 + ...` before."""
    f = tl.parse(VALUE_ITERATION)["vi"]
    wrt = ["R", "P", "gamma"]
    g, caught = _quiet(lambda: tl.grad(f, wrt=tuple(wrt)))
    assert not caught, caught[0].message
    assert str(tl.cost(g)) == "6*A*K*S^2 + 20*A*K*S - 9*A*S + 19*K*S - 7*S + 1"
    rng = np.random.default_rng(41)
    inputs = {"R": rng.normal(size=(4, 3)), "P": rng.dirichlet(np.ones(4), size=(4, 3)),
              "gamma": 0.9, "K1": np.zeros(5)}
    _checked(f, g, wrt, inputs, seed=42)


# A matrix product state contracted site by site: the adjoint of the site tensor at
# step k multiplies what the adjoint of step k + 1 stored.
MPS = """
def mps(A: f64[S, D, P, D], v: f64[S, P], l0: f64[D]) -> f64:
    u[s: S, b: D] = sum[a, p](([s == 0] * l0[a] + [s >= 1] * e[s - 1, a]) * A[s, a, p, b] * v[s, p])
    nr[s: S] = sqrt(sum[b](u[s, b] ** 2))
    e[s: S, b: D] = u[s, b] / nr[s]
    return sum[s](log(nr[s]))
"""


def test_a_product_stored_by_the_next_step_is_read_shifted():
    """A_bar[k, l, p, q] = [k >= 1] * e[k - 1, l] * u_bar[k, q] * v[k, p] holds the
    product `e_bar_sum[k, m, p] = [k + 1 < S] * u_bar[k + 1, m] * v[k + 1, p]` at
    k - 1, where k >= 1 puts the read in bounds and makes its bracket true:
    simplify.reuse_stored_products reads it shifted (11 D^2 P S -> 10 D^2 P S, over the
    bound at D = S = 8 with P large before).  tl.grad takes the program as it runs,
    whose step contracts A with v first (u_sum[s, a, b] = sum[p](A v)): 7 D^2 P S."""
    f = tl.parse(MPS)["mps"]
    wrt = ["A", "v", "l0"]
    g, caught = _quiet(lambda: of_terms_multiplied_out("grad", f, tuple(wrt)))
    assert not caught, caught[0].message
    assert str(tl.cost(g)).startswith("10*D^2*P*S + ")
    assert "e_bar_sum[k - 1, " in g.source
    _checked(f, g, wrt, {"A": np.random.default_rng(44).normal(size=(4, 3, 2, 3)),
                         "v": np.random.default_rng(45).normal(size=(4, 2)),
                         "l0": np.random.default_rng(46).normal(size=3)}, seed=45)
    g, caught = _quiet(lambda: tl.grad(f, wrt=tuple(wrt)))
    assert not caught, caught[0].message
    assert str(tl.cost(g)).startswith("7*D^2*P*S + "), str(tl.cost(g))
    rng = np.random.default_rng(44)
    inputs = {"A": rng.normal(size=(4, 3, 2, 3)), "v": rng.normal(size=(4, 2)),
              "l0": rng.normal(size=3)}
    _checked(f, g, wrt, inputs, seed=45)


# A gated recurrence: the state is read at t - 1 through a matrix and through the
# gate's dot product.
GATED = """
def gate2(x: f64[T, d], u: f64[d], W: f64[d, d]) -> f64:
    g[t: T] = sigmoid(sum[i](u[i] * x[t, i]) + [t >= 1] * sum[i](u[i] * s[t - 1, i]))
    s[t: T, i: d] = g[t] * x[t, i] + (1.0 - g[t]) * [t >= 1] * sum[j](W[i, j] * s[t - 1, j])
    return sum[t, i](s[t, i] ** 2)
"""


def test_a_step_reads_the_sum_the_step_before_computed():
    """The adjoint step k sums `W[m, l] * s_bar[k + 1, m]` over m for the state's
    cotangent and `W[l, j] * s_bar[k, l]` over l for the gate's: the first is the
    second one step later, which the backward steps computed before
    (simplify.share_shifted_statements): `10*T*d^2` -> `8*T*d^2`, within the bound;
    and W's adjoint, two sums over the steps of s_bar against s at the step before, is
    one (opt/summerge.py): `6*T*d^2`.  (tl.grad takes the program as it runs, whose
    step stores the product of the state before and 1 - g: `6*T*d^2` too, with fewer
    T*d terms.)"""
    f = tl.parse(GATED)["gate2"]
    wrt = ["x", "u", "W"]
    g, caught = _quiet(lambda: of_terms_multiplied_out("grad", f, tuple(wrt)))
    assert not caught, caught[0].message
    assert str(tl.cost(g)).startswith("6*T*d^2 + "), str(tl.cost(g))
    assert "g_bar_sum[k + 1, l]" in g.source, g.source
    rng = np.random.default_rng(47)
    _checked(f, g, wrt, {"x": rng.normal(size=(6, 3)), "u": rng.normal(size=3),
                         "W": 0.5 * rng.normal(size=(3, 3))}, seed=48)
    g, caught = _quiet(lambda: tl.grad(f, wrt=tuple(wrt)))
    assert not caught, caught[0].message
    assert str(tl.cost(g)).startswith("6*T*d^2 + "), str(tl.cost(g))
    rng = np.random.default_rng(47)
    inputs = {"x": rng.normal(size=(6, 3)), "u": rng.normal(size=3),
              "W": 0.5 * rng.normal(size=(3, 3))}
    _checked(f, g, wrt, inputs, seed=48)


# Leapfrog steps for H = p.p / 2 + q.P.q / 2: P is read against the position of the
# step and of the step before.
LEAPFROG = """
def leap(q0: f64[d], p0: f64[d], P: f64[d, d], eps: f64, K1: f64[K]) -> f64:
    ph[t: K, i: d] = [t == 0] * p0[i] + [t >= 1] * pf[t - 1, i] - 0.5 * eps * sum[j](P[i, j] * ([t == 0] * q0[j] + [t >= 1] * q[t - 1, j]))
    q[t: K, i: d] = [t == 0] * q0[i] + [t >= 1] * q[t - 1, i] + eps * ph[t, i]
    pf[t: K, i: d] = ph[t, i] - 0.5 * eps * sum[j](P[i, j] * q[t, j])
    return 0.5 * sum[i](pf[K - 1, i] ** 2) + 0.5 * sum[i, j](q[K - 1, i] * P[i, j] * q[K - 1, j])
"""


def test_an_adjoint_summing_one_operand_at_two_steps_is_one_pass():
    """P's adjoint sums `pf_bar[m, k] * q[m, l]` and `[m >= 1] * ph_bar[m, k] * q[m - 1, l]`
    over the steps; with m - 1 renamed m the two read one q and are one pass over
    `pf_bar[m, k] + [m + 1 < K] * ph_bar[m + 1, k]` (opt/summerge.py), which the
    position's adjoint stores already: 8 K d^2 -> 6 K d^2, under the bound's d^2 terms
    where K is small (it missed them before)."""
    f = tl.parse(LEAPFROG)["leap"]
    wrt = ["q0", "p0", "P", "eps"]
    g, caught = _quiet(lambda: tl.grad(f, wrt=tuple(wrt)))
    assert not caught, caught[0].message
    assert str(tl.cost(g)).startswith("6*K*d^2 + "), str(tl.cost(g))
    p_bar = next(line for line in g.source.splitlines() if line.strip().startswith("P_bar["))
    assert len(re.findall(r"P_bar_sum\d*\[", p_bar)) == 1, g.source
    rng = np.random.default_rng(50)
    a = rng.normal(size=(3, 3))
    inputs = {"q0": rng.normal(size=3), "p0": rng.normal(size=3), "P": a @ a.T + np.eye(3),
              "eps": 0.2, "K1": np.zeros(5)}
    _checked(f, g, wrt, inputs, seed=51)


# A pin-jointed truss: each member's strain reads the displacements and positions of
# both of its end nodes through two label lists.
TRUSS = """
def truss(u: f64[N, 2], X: f64[N, 2], ea: f64[M], a: i64[M], b: i64[M]) -> f64:
    L[e] = sqrt(sum[c: 2]((X[b[e], c] - X[a[e], c]) ** 2))
    st[e] = sum[c: 2]((X[b[e], c] - X[a[e], c]) * (u[b[e], c] - u[a[e], c])) / L[e] ** 2
    return 0.5 * sum[e](ea[e] * L[e] * st[e] ** 2)
"""


def test_a_scatter_reads_a_difference_of_labelled_reads_stored_once():
    """X's adjoint scatters `st_bar[m] / L[m]^2 * u[a[m], l]` and the same times
    `u[b[m], l]` to both ends, four terms; the difference `u[a[m], l] - u[b[m], l]`
    is a remainder of two of them, but it reads labels that only the scatter's bracket
    `[k == a[m]]` kept in range, so it was stored over k too, or not at all.  The
    program reads `X[a[e], c]` and `X[b[e], c]` at every member, outside any bracket,
    so a call with a label outside 0 .. N - 1 stops there: the difference is stored
    over (m, l) (domain.labels_read_unguarded).  The gradient, 171 M against the
    bound's 168 M, was 151 M (124 M now that L's adjoint through the division of st's
    sum reads st, reverse.divisor_adjoint); a label out of range still raises on both
    backends."""
    f = tl.parse(TRUSS)["truss"]
    wrt = ["u", "X", "ea"]
    g, caught = _quiet(lambda: tl.grad(f, wrt=tuple(wrt)))
    assert not caught, caught[0].message
    assert str(tl.cost(g)) == "124*M + 4*N + 1", str(tl.cost(g))
    # (the difference either way round: the factorings tie, and go by structure)
    assert re.search(r"_fac\[l: 2, k: M\] = (u\[a\[k\], l\] - u\[b\[k\], l\]|"
                     r"-u\[a\[k\], l\] \+ u\[b\[k\], l\])\n", g.source), g.source
    rng = np.random.default_rng(53)
    X = rng.normal(size=(5, 2))
    a, b = np.array([0, 1, 2, 3, 0, 1]), np.array([1, 2, 3, 4, 2, 4])
    inputs = {"u": 0.1 * rng.normal(size=(5, 2)), "X": X, "ea": rng.uniform(1, 2, 6),
              "a": a, "b": b}
    _checked(f, g, wrt, inputs, seed=54)
    for bad in (5, -1):
        wrong = dict(inputs, a=np.where(np.arange(6) == 3, bad, a))
        for backend in ("numba", "numpy"):
            with pytest.raises(tl.TLBoundsError, match=f"= {bad} is out of range"):
                g.compile(backend)(*[wrong[p] for p in f.params])


def test_a_label_read_only_under_brackets_keeps_them_in_a_stored_difference():
    """Where the program reads the labels only under a bracket that may exclude them
    (`[a[e] < N]`), the stored difference keeps the scatter's bracket: no label is read
    that the function skips."""
    src = """
def f(u: f64[N, 2], w: f64[M], a: i64[M], b: i64[M]) -> f64:
    return sum[e, c]([a[e] < N and b[e] < N] * w[e] * (u[b[e], c] - u[a[e], c]) ** 2)
"""
    f = tl.parse(src)["f"]
    g, _ = _quiet(lambda: tl.grad(f, wrt="u"))
    assert not re.search(r"_fac\[[^\]]*\] = u\[a\[", g.source), g.source
    rng = np.random.default_rng(55)
    inputs = {"u": rng.normal(size=(3, 2)), "w": rng.uniform(1, 2, 3),
              "a": np.array([0, 7, 2]), "b": np.array([1, 2, 0])}
    grad_matches_fd(f, ["u"], inputs, np.random.default_rng(56))
    args = [inputs[p] for p in f.params]
    check_close(g.compile("numba")(*args), g.compile("numpy")(*args), "grad",
                rtol=1e-12, atol=1e-12)


# A sparse row sum (coordinate list) divided by the row's degree.
ROW_MEAN = """
def f(val: f64[E], row: i64[E], col: i64[E], x: f64[n], dg: f64[n]) -> f64:
    y[i: n] = sum[e]([row[e] == i] * val[e] * x[col[e]]) / dg[i]
    return sum[i](y[i] ** 2)
"""


def test_the_tangent_of_a_divisor_of_a_sum_reads_the_quotient():
    """y[i] = sum[e]([i == row[e]] * val[e] * x[col[e]] / dg[i]) is one term that sums;
    its tangent in dg, by the product rule inside the sum, was
    -sum[e]([i == row[e]] * d_dg[i] * val[e] * x[col[e]] / dg[i] ** 2), 7 operations per
    entry of the list (the jvp in (val, dg, x) 25 E + 7 n + 3 against 24 E + 20 n + 8).
    The divisor does not depend on e: its tangent is -d_dg[i] / dg[i] * y[i], once per
    row (ad/forward.common_divisor).  A Jacobi sweep over such a list, a recurrence,
    is the same inside its step (tests/newuser14_programs.py, coo_jacobi).  Reverse
    mode summed dg's adjoint over the entries too (grad 31 E + 3 n + 1 against
    20 E + ...); it is -y_bar[k] * y[k] / dg[k] now (ad/reverse.divisor_adjoint)."""
    f = tl.parse(ROW_MEAN)["f"]
    wrt = ("val", "dg", "x")
    g, caught = _quiet(lambda: tl.jvp(f, wrt=wrt))
    assert not caught, caught[0].message
    assert str(tl.cost(g)) == "18*E + 10*n + 3", str(tl.cost(g))
    assert re.search(r"d_dg\[i\] \* y\[i\] / dg\[i\]", g.source), g.source
    for derive, cost in ((tl.grad, "23*E + 7*n + 1"), (tl.vjp, "21*E + 10*n + 1")):
        d, caught = _quiet(lambda: derive(f, wrt=wrt))
        assert not caught, caught[0].message
        assert str(tl.cost(d)) == cost, str(tl.cost(d))
        assert re.search(r"dg_bar\[k: n\] = -[^\n]*y\[k\][^\n]*/ dg\[k\]\n", d.source), \
            d.source
    rng = np.random.default_rng(57)
    inputs = {"val": rng.normal(size=7), "row": np.array([0, 1, 2, 3, 0, 1, 3]),
              "col": np.array([1, 2, 3, 0, 2, 0, 1]), "x": rng.normal(size=4),
              "dg": rng.uniform(1, 2, 4)}
    jvp_matches_fd(f, list(wrt), inputs, np.random.default_rng(58))
    dot_product_identity(f, list(wrt), inputs, np.random.default_rng(59))
    args = [inputs[p] for p in f.params] + [rng.normal(size=np.shape(inputs[w])) for w in wrt]
    for a, b in zip(g.compile("numba")(*args), g(*args)):
        check_close(a, b, "numba against the interpreter", rtol=1e-12, atol=1e-12)


def test_the_derivative_of_a_power_of_exp_adds_its_powers():
    """d(exp(x) ** -1) = -exp(x) ** -2 * exp(x) * dx by the product rule; the canonical
    form keeps the two powers apart (x * x ** -2 is NaN at x = 0 or inf, x ** -1 is
    not), so the derivative was NaN where exp overflows (x = 800) and each of its
    terms carried both powers (stick's jvp, 67 K N against the bound's 52 K N).  The
    powers come from one product rule and are added (ad/rules.with_powers_added)."""
    f = tl.parse("""
def f(x: f64[n], y: f64[n]) -> f64:
    return sum[i](y[i] / exp(x[i]))
""")["f"]
    x, y = np.array([800.0, 0.0, 1.0]), np.array([2.0, 3.0, 5.0])
    want = -y * np.exp(-x)
    for backend in ("numpy", "numba"):
        gx, gy = tl.grad(f, wrt=("x", "y")).compile(backend)(x=x, y=y)
        check_close(gx, want, "grad in x", rtol=1e-14, atol=0)
        _, dout = tl.jvp(f, wrt="x").compile(backend)(x=x, y=y, d_x=np.ones(3))
        check_close(dout, want.sum(), "jvp in x", rtol=1e-14, atol=0)
    for derive in (tl.grad, tl.jvp):
        assert not re.search(r"exp\([^)]*\) \*\* -2|/ exp\([^)]*\) \*\* 2", derive(f, wrt="x").source)
    rng = np.random.default_rng(61)
    inputs = {"x": rng.normal(size=4), "y": rng.normal(size=4)}
    grad_matches_fd(f, ["x", "y"], inputs, np.random.default_rng(62))
    jvp_matches_fd(f, ["x", "y"], inputs, np.random.default_rng(63))


ERLANG = """
def erl(a: f64, kk: f64[K]) -> f64:
    B[k: K] = [k == 0] + [k >= 1] * a * B[k - 1] / (kk[k] + a * B[k - 1])
    return B[K - 1]
"""


def test_a_quotients_adjoint_in_a_recurrence_reads_the_quotient():
    """Erlang B's recursion divides by kk[k] + a B[k - 1]: the adjoint multiplied the
    quotient's derivative out into B_bar's step (a ** 2 * B[k] / g ** 2, 41 K against
    the bound's 40 K).  The denominator's cotangent, shared by kk and a B[k - 1], is a
    member of the adjoint recurrence (Transposer.shared_cotangent), and since the
    other term [k == 0] is 0 wherever [k >= 1] holds, the partial of the divisor is
    -[k >= 1] * B[k] / g[k], the quotient the statement holds (rules.quotient_partial)."""
    f = tl.parse(ERLANG)["erl"]
    g, caught = _quiet(lambda: tl.grad(f, wrt=("a", "kk")))
    assert not caught, caught[0].message
    assert str(tl.cost(g)) == "35*K - 16", str(tl.cost(g))
    assert re.search(r"_part_bar\[k: K\] = -\[k >= 1\] \* B\[k\] \* B_bar\[k\] / B_a_sum\[k\]\n",
                     g.source), g.source
    rng = np.random.default_rng(64)
    inputs = {"a": 0.7, "kk": rng.uniform(1, 2, 6)}
    _checked(f, g, ["a", "kk"], inputs, seed=65)


def test_the_derivative_of_abs_is_one_factor():
    """abs'(a) was [a > 0] - [a < 0]: in a product of abs calls each of the two bracketed
    terms carried the rest of the product, so every adjoint computed it twice
    (50 n^2 against the bound's 48 n^2 for a LambdaRank-style pair weight).  It is the
    one factor sign(a) now (sign(0) = 0 keeps abs'(0) = 0)."""
    f = tl.parse("""
def f(g: f64[n], d: f64[n], s: f64[n]) -> f64:
    return sum[i, j](abs(g[i] - g[j]) * abs(d[i] - d[j]) * softplus(s[j] - s[i]))
""")["f"]
    wrt = ("g", "d", "s")
    g, caught = _quiet(lambda: tl.grad(f, wrt=wrt))
    assert not caught, caught[0].message
    assert str(tl.cost(g)) == "42*n^2 + 3*n", str(tl.cost(g))
    assert "sign(g[" in g.source and "> 0.0]" not in g.source, g.source
    rng = np.random.default_rng(66)
    inputs = {"g": rng.normal(size=5), "d": rng.normal(size=5), "s": rng.normal(size=5)}
    inputs["g"][3] = inputs["g"][1]                    # a tie: abs'(0) = 0 there
    _checked(f, g, list(wrt), inputs, seed=67)


def test_a_term_under_an_equality_and_its_negation_is_zero():
    """[r != 1] * ([r == 1] * a + [r == 0] * b) leaves the term [r != 1 and r == 1] * a,
    which is zero everywhere; it was kept, and counted (a rotation about one axis built
    from brackets, newuser10's euler_fit).  The normal form drops it (build.canon_pred)."""
    f = tl.parse("""
def f(a: f64[3], b: f64[3]) -> f64:
    m[r: 3] = [r != 1] * ([r == 1] * a[r] + [r == 0] * b[r])
    return sum[r](m[r] ** 2)
""")["f"]
    assert "a[" not in f.source and "r == 1" not in f.source, f.source
    x, y = np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0])
    assert f(a=x, b=y) == 16.0
    gx, gy = tl.grad(f, wrt=("a", "b"))(a=x, b=y)
    assert np.array_equal(gx, np.zeros(3)) and np.array_equal(gy, [8.0, 0.0, 0.0])


# A booking-control value function: each state reads its neighbour one seat down, under
# a sum over fare classes.
BOOKING_DP = """
def dp(lam: f64[T, F], pr: f64[F], sal: f64[X]) -> f64:
    V[t: T + 1, x: X] = [t == T] * sal[x] + [t < T] * (V[t + 1, x]
        + [x >= 1] * sum[f](lam[t, f] * max(pr[f] - (V[t + 1, x] - V[t + 1, x - 1]), 0.0)))
    return V[0, X - 1]
"""


def test_a_sum_a_step_takes_at_two_points_is_stored_once():
    """The state's adjoint summed the fare-class cotangent twice per state, at (k - 1,
    l + 1) and at (k - 1, l): 24 F (T + 1) X in the leading term, the whole bound's
    worth, missed by lower-order terms.  The sum is stored once per step as a member
    of the adjoint recurrence and read at both points (opt/shiftsum.py)."""
    f = tl.parse(BOOKING_DP)["dp"]
    wrt = ("lam", "pr", "sal")
    g, caught = _quiet(lambda: tl.grad(f, wrt=wrt))
    assert not caught, caught[0].message
    assert str(tl.cost(g)).startswith("6*F*T*X + 16*F*(T + 1)*X"), str(tl.cost(g))
    assert re.search(r"V_bar_sum\[k - 1, l \+ 1\].*V_bar_sum\[k - 1, l\]", g.source), g.source
    rng = np.random.default_rng(68)
    inputs = {"lam": rng.uniform(0.1, 0.5, (5, 3)), "pr": rng.uniform(1, 3, 3),
              "sal": np.sort(rng.uniform(0, 1, 4))}
    _checked(f, g, list(wrt), inputs, seed=69)


def test_two_shifted_sums_of_one_tensor_are_one_pass():
    """Outside recurrences too: `sum[j](A[i + 1, j]) - sum[j](A[i, j])` is one row sum
    read at two rows, in the function and in its gradient."""
    f = tl.parse("""
def g(A: f64[n, m], w: f64[n]) -> f64:
    y[i: n] = [i + 1 < n] * sum[j](A[i + 1, j]) - sum[j](A[i, j])
    return sum[i](w[i] * y[i] ** 2)
""")["g"]
    assert str(tl.cost(f)) == "m*n + 8*n + 1", str(tl.cost(f))
    g, caught = _quiet(lambda: tl.grad(f, wrt=("A", "w")))
    assert not caught and str(tl.cost(g)) == "3*m*n + 16*n", str(tl.cost(g))
    rng = np.random.default_rng(70)
    _checked(f, g, ["A", "w"], {"A": rng.normal(size=(5, 3)), "w": rng.normal(size=5)},
             seed=71)
