"""Dense contractions and strided sums that go to NumPy instead of a loop nest.

A statement that is one plain dense contraction (a matrix product, a
matrix-vector product, a dot or outer product, any transposes, products of
three-index tensors with matrices, any coefficient) becomes one NumPy call in
the generated driver: ``@`` or ``np.outer`` for vectors and matrices
(``blas_call``), ``contract2`` (one ``np.matmul``, batched where the output
asks for it) for the rest; ``split_dense_terms`` first gives such a term of a
longer statement a statement of its own.  A statement that sums one tensor over
an axis that is not its last (``b[c] = sum[s](Z[s, c])``, a column sum) is one
``np.sum`` (``strided_sum``): a loop nest would walk memory with a stride.

Only accesses whose every index runs over the whole axis it indexes qualify
(``sum[k: 3](A[i, k] * x[k])`` with ``A: f64[n, 5]`` stays a loop nest: a NumPy
call would sum all five columns).
"""
from __future__ import annotations

from dataclasses import replace

from ..ssa.ir import Access, Affine, IdxCmp, IndexVar, Program, Stmt, Term
from ..ssa.names import unique_name
from ..ssa.recur import group_of


def dense_contraction(s, shapes: dict | None = None) -> str | None:
    """einsum subscripts when a statement is one pred-free product of two plain accesses.

    With the program's `shapes`, every index must also run over the whole axis it
    indexes (the backend always passes them; without, only the form is checked)."""
    if len(s.body) != 1:
        return None
    t = s.body[0]
    if t.pred or len(t.factors) != 2 or any(p != 1 for _, p in t.factors):
        return None
    letters = {}
    subs = []
    for f, _ in t.factors:
        if not isinstance(f, Access) or not f.idx:
            return None
        sub = ""
        for a in f.idx:
            if len(a.terms) != 1 or a.const != 0 or a.terms[0][1] != 1 \
                    or not isinstance(a.terms[0][0], IndexVar):
                return None
            v = a.terms[0][0].name
            letters.setdefault(v, "abcdefghijklmnopqrstuvwxyz"[len(letters)])
            sub += letters[v]
        if len(set(sub)) != len(sub):
            return None
        subs.append(sub)
    gens = [n for n, _ in s.indices]
    if any(g not in letters for g in gens):
        return None
    if not t.sums and set(subs[0]) & set(subs[1]):
        return None               # an elementwise product: the loop kernel is as good
    if shapes is not None and not _whole_axes(s, t, shapes):
        return None
    out = "".join(letters[g] for g in gens)
    return f"{subs[0]},{subs[1]}->{out}"


def _whole_axes(s, t, shapes: dict) -> bool:
    """Does every index of the term's accesses run over exactly the axis it indexes?"""
    ranges = dict(s.indices) | dict(t.sums)
    for f, _ in t.factors:
        dims = shapes.get(f.name, (None, None))[1]
        if dims is None or len(dims) != len(f.idx):
            return False
        for a, d in zip(f.idx, dims):
            if ranges.get(a.terms[0][0].name) != d:
                return False
    return True


def shifted_contraction(s, shapes: dict, facts) -> tuple | None:
    """(einsum subscripts, windows, output window) when a statement is one product of two
    accesses that reads its indices at constant shifts, under guards that bound single
    indices by sizes: ``W_bar[k, l] = sum[m]([m >= 1] * h[m - 1, l] * g[m, k])`` is the
    product of the windows ``h[0:T - 1]`` and ``g[1:T]`` (one GEMM over time, not a loop
    nest), and ``y[k, j] = sum[l]([k >= 1] * A[l, j] * z[k, l])`` the product of
    ``z[1:T]`` and ``A``, written to rows 1 to T of a zeroed ``y``.

    `windows` holds, per operand, per axis, None (the whole axis) or (lo, hi, empty):
    the axis is read from lo up to but excluding hi, both affine in sizes, and `empty`
    says whether hi < lo is possible at some sizes (then the window is read up to
    max(lo, hi): empty, and the product zero).  The output window is None (the product
    is the whole output) or, per output axis, None or (lo, hi, empty) likewise: the
    entries outside it are zero (their guard fails).  Each guard must bound one index
    by sizes; each window is proved to lie inside its axis from the size facts."""
    if len(s.body) != 1:
        return None
    t = s.body[0]
    if not t.sums or len(t.factors) != 2 or any(p != 1 for _, p in t.factors):
        return None
    gens = {n: d for n, d in s.indices}
    bounded = {n for n, _ in t.sums} | set(gens)
    if any(not isinstance(a, IdxCmp) or a.op != ">=" or a.mod
           or not a.aff.index_vars() <= bounded for a in t.pred):
        return None
    full = {v: (Affine(0), Affine.dim(d)) for v, d in (*t.sums, *s.indices)}
    span = _guarded_spans(t.pred, dict(full), facts)
    if span is None:
        return None
    letters: dict = {}
    subs, windows, shifted = [], [], bool(t.pred)
    for f, _ in t.factors:
        if not isinstance(f, Access) or not f.idx or f.name == s.name:
            return None               # (reading itself: a recurrence, step by step)
        dims = shapes.get(f.name, (None, None))[1]
        if dims is None or len(dims) != len(f.idx):
            return None
        sub, win = "", []
        for a, d in zip(f.idx, dims):
            if len(a.terms) != 1 or a.terms[0][1] != 1 or not isinstance(a.terms[0][0], IndexVar):
                return None
            v = a.terms[0][0].name
            if v not in span:
                return None
            letters.setdefault(v, "abcdefghijklmnopqrstuvwxyz"[len(letters)])
            sub += letters[v]
            lo, hi = span[v][0].shift(a.const), span[v][1].shift(a.const)
            if not (facts.proves(lo) and facts.proves(Affine.dim(d) - hi)):
                return None
            whole = lo == Affine(0) and hi == Affine.dim(d)
            shifted |= not whole
            win.append(None if whole else (lo, hi, not facts.proves(hi - lo)))
        if len(set(sub)) != len(sub):
            return None
        subs.append(sub)
        windows.append(tuple(win))
    if not shifted or any(g not in letters for g in gens):
        return None                   # nothing shifted: dense_contraction's case
    out_window = tuple(None if span[g] == full[g] else
                       (*span[g], not facts.proves(span[g][1] - span[g][0])) for g in gens)
    out = "".join(letters[g] for g in gens)
    return (f"{subs[0]},{subs[1]}->{out}", tuple(windows),
            out_window if any(out_window) else None)


def _guarded_spans(pred, span: dict, facts) -> dict | None:
    """`span` (index -> [lo, hi) in sizes) narrowed by guards that each bound one index by
    sizes; None when a guard bounds several indices or is neither tighter nor looser than
    the span at every size."""
    from ..loops import single_var_bound
    for atom in pred:
        found = [(v, b) for v in span for b in [single_var_bound(atom, v)] if b]
        if len(found) != 1:
            return None
        v, (side, bound) = found[0]
        lo, hi = span[v]
        if side == "lo" and facts.proves(bound - lo):
            span[v] = (bound, hi)
        elif side == "hi" and facts.proves(hi - bound.shift(1)):
            span[v] = (lo, bound.shift(1))
        elif not facts.proves(lo - bound if side == "lo" else bound.shift(1) - hi):
            return None               # neither tighter nor looser at every size
    return span


def strided_sum(s, shapes: dict) -> tuple | None:
    """(operand, summed axes, output permutation or None, coefficient) when a statement
    sums one plain access over whole axes, one of which comes before a kept axis (a
    column sum: a loop nest would read down the columns).  A sum over trailing axes
    only (row sums, a total) stays a loop nest, which reads memory in order and can
    be fused with its producer or consumer."""
    if len(s.body) != 1 or not s.indices:
        return None
    t = s.body[0]
    if t.pred or not t.sums or len(t.factors) != 1 or t.factors[0][1] != 1:
        return None
    f = t.factors[0][0]
    if not isinstance(f, Access) or not f.idx:
        return None
    names = []
    for a in f.idx:
        if len(a.terms) != 1 or a.const != 0 or a.terms[0][1] != 1 \
                or not isinstance(a.terms[0][0], IndexVar):
            return None
        names.append(a.terms[0][0].name)
    gens = [n for n, _ in s.indices]
    summed = [n for n, _ in t.sums]
    if len(set(names)) != len(names) or set(names) != set(gens) | set(summed) \
            or set(gens) & set(summed) or not _whole_axes(s, t, shapes):
        return None
    axes = tuple(k for k, n in enumerate(names) if n in summed)
    kept = [n for n in names if n not in summed]
    if axes == tuple(range(len(names) - len(axes), len(names))):
        return None                     # trailing axes: the loop nest reads in order
    perm = None if kept == gens else tuple(kept.index(g) for g in gens)
    return f.name, axes, perm, t.coeff


def sum_axes(a, axes: tuple, perm: tuple | None):
    """np.sum over `axes`, then the kept axes permuted by `perm`, C-contiguous (a new
    array; from the pool, pool.py, when large)."""
    import numpy as np
    from .pool import empty
    kept = tuple(d for k, d in enumerate(a.shape) if k not in axes)
    if not kept:
        return np.sum(a, axis=axes)
    if perm is None:
        return np.sum(a, axis=axes, out=empty(kept))
    out = empty(tuple(kept[p] for p in perm))
    np.copyto(out, np.sum(a, axis=axes).transpose(perm))
    return out


def contract2(spec: str, a, b):
    """np.einsum(spec, a, b) for a two-operand contraction, as one np.matmul.

    `spec` is `sa,sb->out`.  The output's indices are split into a leading group L
    and the rest, which must be the free indices of one operand followed by those of
    the other (the rows and the columns of a matrix product).  An index of L is a
    batch index of the product, broadcast over the operand that lacks it; a summed
    index may be a batch index too, its products then added up afterwards.  Each
    operand is transposed and reshaped to (batch..., rows, summed) or (batch...,
    summed, columns), a copy when it is not laid out so.  Of the possible splits the
    one that moves the fewest entries is taken (`_plan_cost`), and the product comes
    out C-contiguous in the output's order: no path search per call (which is what
    einsum(optimize=True) spends its first microseconds on) and no strided result.

    The product may also be formed in another order of the output's indices (`order`),
    written by np.matmul through a transposed view of the C-contiguous result: a batch
    index that is not the output's first (`y[i, k, r] = sum[c](L[k, r, c] * x[i, k, c])`)
    then batches K products of n rows instead of n K products of one row.  When every
    product would be a dot (no rows, no columns: `s[k, j] = sum[i](a[i, k, j] *
    b[i, k, j])`), NumPy's own summation loop (einsum without a path search) reads each
    operand once, where a product would first copy both.  Falls back to einsum for what
    this form cannot express (an index summed in one operand only)."""
    import numpy as np
    from .pool import empty
    layout = (a.flags.c_contiguous, b.flags.c_contiguous)
    key = (spec, a.shape, b.shape, layout)
    plan = _PLANS.get(key, False)
    if plan is False:
        plan = _PLANS[key] = _plan2(spec, a.shape, b.shape, layout)
    if plan is None:
        return np.einsum(spec, a, b, optimize=True)
    sa, sb = spec.split("->")[0].split(",")
    size = dict(zip(sa, a.shape)) | dict(zip(sb, b.shape))
    out_spec = spec.split("->")[1]
    if plan == "einsum" and not out_spec:
        return np.einsum(spec, a, b)
    if plan == "einsum":
        res = empty([size[c] for c in out_spec])
        np.einsum(spec, a, b, out=res)
        return res
    swap, lead, red, rows, cols, summed, order = plan
    (left, sl), (right, sr) = ((b, sb), (a, sa)) if swap else ((a, sa), (b, sb))

    def arrange(x, sx, first, second):
        perm = [sx.index(c) for c in lead + red if c in sx] + [sx.index(c) for c in first + second]
        shape = [size[c] if c in sx else 1 for c in lead + red]
        shape += [_prod(size[c] for c in first), _prod(size[c] for c in second)]
        x = x.transpose(perm)
        if _copied(sx, first, second):
            x = np.ascontiguousarray(x)
        return x.reshape(shape)

    if order != out_spec or not red:  # written through a view of the result in the product's order
        res = empty([size[c] for c in out_spec])
        view = res.transpose([out_spec.index(c) for c in order])
        view = view.reshape([size[c] for c in lead] + [_prod(size[c] for c in rows),
                                                       _prod(size[c] for c in cols)], copy=False)
        np.matmul(arrange(left, sl, rows, summed), arrange(right, sr, summed, cols), out=view)
        return res
    out = np.matmul(arrange(left, sl, rows, summed), arrange(right, sr, summed, cols))
    if red:
        out = out.sum(axis=tuple(range(len(lead), len(lead) + len(red))))
    return out.reshape([size[c] for c in lead + rows + cols])


def _prod(xs) -> int:
    p = 1
    for x in xs:
        p *= x
    return p


_PLANS: dict = {}          # (spec, shape, shape, layout) -> plan


def _plan2(spec: str, shape_a: tuple, shape_b: tuple, layout: tuple = (True, True)):
    """(swap, lead, red, rows, cols, summed, order) for contract2, "einsum", or None: `red`
    are the summed indices run as batch indices, `summed` the others, `order` the order of
    the output's indices in which the product is formed.  Of all the ways to split the
    output, the cheapest by `_plan_cost`; "einsum" when NumPy's summation loop costs less
    (`EINSUM_COST` an operation) than the best product (`BLAS_COST` an operation on top of
    its plan's cost).  `layout`: whether each operand is C-contiguous; one that is not (a
    window u[0:T - 1, 1:n] of a recurrence's weight gradient) is copied by any product,
    while einsum reads it where it lies (a dot of two such windows took 5.7 ms, einsum
    0.6 ms)."""
    from itertools import combinations, permutations
    ins, out = spec.split("->")
    sa, sb = ins.split(",")
    if not all(c in out or (c in sa and c in sb) for c in sa + sb):
        return None
    size = dict(zip(sa, shape_a)) | dict(zip(sb, shape_b))
    summed_all = "".join(c for c in sa if c in sb and c not in out)
    free_a = {c for c in sa if c not in sb}
    free_b = {c for c in sb if c not in sa}
    found = []
    orders = [out] + ([o for o in map("".join, permutations(out)) if o != out]
                      if len(out) <= 5 else [])
    for po in orders:
        for k in range(len(po) + 1):
            lead, rest = po[:k], po[k:]
            if any(c in sa and c in sb for c in rest):
                continue
            for m in range(len(summed_all) + 1):
                for red in map("".join, combinations(summed_all, m)):
                    if po != out and red:
                        continue
                    summed = "".join(c for c in summed_all if c not in red)
                    for cut in range(len(rest) + 1):
                        x, y = rest[:cut], rest[cut:]
                        if po != out and not _writable(out, x, y):
                            continue
                        for order in dict.fromkeys((summed, "".join(c for c in sb if c in summed))):
                            if set(x) <= free_a and set(y) <= free_b:
                                found.append((False, lead, red, x, y, order, po))
                            if set(x) <= free_b and set(y) <= free_a:
                                found.append((True, lead, red, x, y, order, po))
    best = min(found, key=lambda p: _plan_cost(p, sa, sb, size, layout), default=None)
    if best is None:
        return best
    ops = _prod(size.values())
    if EINSUM_COST * ops < _plan_cost(best, sa, sb, size, layout) + BLAS_COST * ops:
        return "einsum"
    return best


def _writable(out: str, rows: str, cols: str) -> bool:
    """Can a product whose rows are indexed by `rows` and columns by `cols` be written by
    BLAS through a transposed view of a C-contiguous array indexed `out`?  Each group
    must be adjacent and in order in `out` (to merge into one axis of the view), and the
    product's last axis must be the array's last (unit stride)."""
    if not rows and not cols:
        return False
    if (rows and rows not in out) or (cols and cols not in out):
        return False
    return (cols or rows)[-1] == out[-1]


# One matrix product of a batch costs about as much as moving this many entries
# (a BLAS call's fixed cost of a microsecond or two against a nanosecond an entry).
PRODUCT_COST = 2000
# A multiply-add costs, in the same unit, this much inside a BLAS product and this much
# in NumPy's einsum loop (which needs no copies and no per-product call).
BLAS_COST = 0.1
EINSUM_COST = 1.0


def _plan_cost(plan, sa: str, sb: str, size: dict, layout: tuple = (True, True)) -> float:
    """Entries contract2 moves under `plan` besides the product itself (operands copied,
    batched products added up), plus PRODUCT_COST per matrix product.  An operand that is
    not C-contiguous (`layout`) counts as copied."""
    swap, lead, red, rows, cols, summed = plan[:6]
    (sl, sr), (cl, cr) = ((sb, sa), layout[::-1]) if swap else ((sa, sb), layout)
    copied = sum(_prod(size[c] for c in sx)
                 for sx, first, second, contiguous in ((sl, rows, summed, cl),
                                                       (sr, summed, cols, cr))
                 if not contiguous or _copied(sx, first, second))
    added = _prod(size[c] for c in lead + red + rows + cols) if red else 0
    return copied + added + PRODUCT_COST * _prod(size[c] for c in lead + red)


def _copied(sx: str, first: str, second: str) -> bool:
    """Must an operand with subscripts `sx` (C-contiguous) be copied to be read as the
    matrices (first, second) of a product?  A group of indices merges into one axis
    without a copy when they are adjacent in `sx` and in the same order, and BLAS needs
    one of the two axes to be the operand's last (unit stride)."""
    def merges(group):
        return not group or group in sx
    return not (merges(first) and merges(second)
                and sx[-1] in (first[-1:] + second[-1:]))


def blas_call(spec: str, a: str, b: str, pooled: bool = False) -> str | None:
    """A direct NumPy call for a two-operand contraction of vectors and matrices.

    `np.einsum(..., optimize=True)` reaches BLAS too, but searches for a
    contraction path on every call (some 15 us, which dominates small sizes).
    Matrix and vector products become `@` on (transposed) views, whose result
    NumPy returns C-contiguous; outer and dot products call `np.outer` and `@`.
    With `pooled`, products with an array result call `tl_matmul` and `tl_outer`
    instead (pool.py: the result's memory recycled between calls; for a generated
    driver, not for code inside Numba).
    None for anything else (the caller keeps einsum)."""
    ins, out = spec.split("->")
    sa, sb = ins.split(",")
    if len(sa) > 2 or len(sb) > 2:
        return None
    shared = set(sa) & set(sb)
    if shared & set(out):
        return None                           # a batch index: not a plain product
    if not shared:
        if len(sa) == len(sb) == 1:
            fn = "tl_outer" if pooled else "np.outer"
            return f"{fn}({a}, {b})" if out == sa + sb else f"{fn}({b}, {a})"
        return None
    if len(shared) != 1:
        return None
    (c,) = shared
    if len(sa) == 1 and len(sb) == 1:
        return f"({a} @ {b})"

    def as_left(x, sx):                       # shape (free, c), or (c,) for a vector
        return x if sx[-1] == c else f"{x}.T"

    def as_right(x, sx):                      # shape (c, free), or (c,)
        return x if sx[0] == c else f"{x}.T"

    def product(x, y):
        return f"tl_matmul({x}, {y})" if pooled and out else f"({x} @ {y})"

    fa, fb = sa.replace(c, ""), sb.replace(c, "")
    if out == fa + fb:
        return product(as_left(a, sa), as_right(b, sb))
    if out == fb + fa:
        return product(as_left(b, sb), as_right(a, sa))
    return None


def split_dense_terms(prog: Program) -> Program:
    """Give each dense-contraction term of a multi-term statement a statement of its own
    (shifted windows included, see `shifted_contraction`), and each sum of exponentials
    that is a shifted matrix product (expproduct.py).

    `x_bar[k] = sum[l](A[l, k] * x[l]) + y[k]` becomes `c[k] = sum[l](A[l, k] * x[l])`
    (one BLAS call) and `x_bar[k] = c[k] + y[k]`: the loop nest would otherwise walk
    A down its columns.  Likewise a CRF's transition gradient, the sum over steps of
    exp(P[k, l] + a[m - 1, k] - z[m, l]) weights less a count of the gold transitions:
    one exponential per (k, l, m) as a kernel term, one matrix product on its own.
    Only a code-generation choice; the program's meaning is unchanged.
    """
    from ..bounds import size_facts
    from .expproduct import exp_product
    used = {p.name for p in prog.params} | {st.name for st in prog.stmts}
    shapes = prog.shapes()
    facts = size_facts(prog)
    members = group_of(prog)      # a step of a recurrence is computed as one statement
    stmts = []
    changed = False
    for st in prog.stmts:
        if len(st.body) < 2 or st.name in members:
            stmts.append(st)
            continue
        rest = []
        for t in st.body:
            single = Stmt(st.name, st.indices, (Term(1.0, t.sums, t.pred, t.factors),))
            if t.sums and (dense_contraction(single, shapes) is not None
                           or shifted_contraction(single, shapes, facts) is not None
                           or exp_product(single) is not None):
                name = unique_name(f"{st.name}_dot", used)
                used.add(name)
                stmts.append(Stmt(name, st.indices, (Term(1.0, t.sums, t.pred, t.factors),),
                                  checked_labels=st.checked_labels))
                idx = tuple(Affine.of(IndexVar(n)) for n, _ in st.indices)
                rest.append(Term(t.coeff, (), (), ((Access(name, idx), 1.0),)))
                changed = True
            else:
                rest.append(t)
        stmts.append(replace(st, body=tuple(rest)))
    if not changed:
        return prog
    return Program(prog.name, prog.params, tuple(stmts), prog.outputs, prog.tuple_return)
