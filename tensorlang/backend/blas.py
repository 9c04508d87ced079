"""Dense contractions that go to BLAS instead of a loop nest.

A statement that is one plain dense contraction (a matrix product, a
matrix-vector product, a dot or outer product, any transposes, any
coefficient) becomes one NumPy call (``@``, ``np.outer``, or ``einsum`` for
other shapes) in the generated driver; ``split_dense_terms`` first gives such a
term of a longer statement a statement of its own.
"""
from __future__ import annotations

from ..ssa.ir import Access, Affine, IndexVar, Program, Stmt, Term
from ..ssa.names import unique_name


def dense_contraction(s) -> str | None:
    """einsum subscripts when a statement is one pred-free product of two plain accesses."""
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
    out = "".join(letters[g] for g in gens)
    return f"{subs[0]},{subs[1]}->{out}"


def blas_call(spec: str, a: str, b: str) -> str | None:
    """A direct NumPy call for a two-operand contraction of vectors and matrices.

    `np.einsum(..., optimize=True)` reaches BLAS too, but searches for a
    contraction path on every call (some 15 us, which dominates small sizes).
    Matrix and vector products become `@` on (transposed) views, whose result
    NumPy returns C-contiguous; outer and dot products call `np.outer` and `@`.
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
            return f"np.outer({a}, {b})" if out == sa + sb else f"np.outer({b}, {a})"
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

    fa, fb = sa.replace(c, ""), sb.replace(c, "")
    if out == fa + fb:
        return f"({as_left(a, sa)} @ {as_right(b, sb)})"
    if out == fb + fa:
        return f"({as_left(b, sb)} @ {as_right(a, sa)})"
    return None


def split_dense_terms(prog: Program) -> Program:
    """Give each dense-contraction term of a multi-term statement a statement of its own.

    `x_bar[k] = sum[l](A[l, k] * x[l]) + y[k]` becomes `c[k] = sum[l](A[l, k] * x[l])`
    (one BLAS call) and `x_bar[k] = c[k] + y[k]`: the loop nest would otherwise walk
    A down its columns.  Only a code-generation choice; the program's meaning is unchanged.
    """
    used = {p.name for p in prog.params} | {st.name for st in prog.stmts}
    stmts = []
    changed = False
    for st in prog.stmts:
        if len(st.body) < 2:
            stmts.append(st)
            continue
        rest = []
        for t in st.body:
            single = Stmt(st.name, st.indices, (Term(1.0, t.sums, t.pred, t.factors),))
            if t.sums and dense_contraction(single) is not None:
                name = unique_name(f"{st.name}_dot", used)
                used.add(name)
                stmts.append(Stmt(name, st.indices, (Term(1.0, t.sums, t.pred, t.factors),)))
                idx = tuple(Affine.of(IndexVar(n)) for n, _ in st.indices)
                rest.append(Term(t.coeff, (), (), ((Access(name, idx), 1.0),)))
                changed = True
            else:
                rest.append(t)
        stmts.append(Stmt(st.name, st.indices, tuple(rest), st.span))
    if not changed:
        return prog
    return Program(prog.name, prog.params, tuple(stmts), prog.outputs, prog.tuple_return)
