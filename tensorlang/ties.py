"""Tie counts that run in the same pass as their maximum.

The derivative of ``r[i] = max[j | P](E)`` splits the cotangent equally among the
entries that equal the maximum (LANGUAGE.md, sections 5 and 11), so reverse mode
writes the number of those entries as a statement of its own (ad/rules.py,
``reduction_partial``):

    c[k] = sum[j]([P(k, j)] * [E(k, j) == r[k]])

Evaluated as written, that is a second pass over every point of the reduction,
which evaluates and compares each entry again.  A kernel that keeps the best
value so far can count the entries equal to it at the cost of one more
comparison and one addition per point (reset to one when the best value
changes), so ``c`` is computed by ``r``'s kernel, and the cost model counts it
that way.  This module recognises such pairs by structure alone, never by
names: ``c``'s body must be exactly the count of ties of ``r``'s reduction at
``r``'s own element, up to the names of the indices.

    tie_counts(prog) -> {count statement: max statement}

The NumPy interpreter and the JAX emission compute ``c`` as written (the same
values); the Numba backend (backend/kernels.py, backend/numba_module.py), the
op counter (backend/loop_interp.py) and the cost model (costs.py) run the pair
as one pass.
"""
from __future__ import annotations

from itertools import permutations

from .memo import Memo
from .ssa import build as B
from .ssa import traverse as T
from .ssa.ir import Access, Affine, IndexVar, Program, Reduce, Stmt, Term, ValCmp

# Per point of the maximum's domain, the fused count adds an equality test and an
# addition (the kernel's running count; costs.py and loop_interp.py use this).
TIE_OPS = 2

_PAIRS = Memo(1024)


def reduction_of(s: Stmt) -> Reduce | None:
    """The max or min that statement `s` stores as its whole body, or None."""
    if len(s.body) != 1:
        return None
    t = s.body[0]
    if t.coeff != 1 or t.sums or t.pred or len(t.factors) != 1:
        return None
    f, p = t.factors[0]
    if p != 1 or not isinstance(f, Reduce) or f.op not in ("max", "min"):
        return None
    return f


def _is_count_of(c: Stmt, m: Stmt, f: Reduce) -> bool:
    """Whether c's body is the number of points of m's reduction f, at c's element,
    whose entry equals m's value there."""
    if len(c.body) != 1 or len(c.indices) != len(m.indices):
        return False
    t = c.body[0]
    if t.coeff != 1 or t.factors or len(t.sums) != len(f.over):
        return False
    if any(dc != dm for (_, dc), (_, dm) in zip(c.indices, m.indices)):
        return False
    outer = {n: Affine.of(IndexVar(k)) for (n, _), (k, _) in zip(m.indices, c.indices)}
    read = B.factor_body(Access(m.name, tuple(Affine.of(IndexVar(k)) for k, _ in c.indices)))
    want = B.canon_body(c.body)
    if len(f.over) > 3:
        return False
    for order in permutations(t.sums):
        if any(d != e for (_, d), (_, e) in zip(order, f.over)):
            continue
        mapping = dict(outer)
        mapping.update({n: Affine.of(IndexVar(k)) for (n, _), (k, _) in zip(f.over, order)})
        where = tuple(T.substitute(a, mapping) for a in f.where)
        entry = T.substitute_body(f.body, mapping)
        for cmp in (ValCmp("==", entry, read), ValCmp("==", read, entry)):
            got = B.canon_body([Term(1.0, tuple(order), where + (cmp,), ())])
            if got == want:
                return True
    return False


def _find(prog: Program) -> dict:
    reductions = {}
    pairs = {}
    for s in prog.stmts:
        f = reduction_of(s)
        if f is not None:
            reductions[s.name] = (s, f)
            continue
        if len(s.body) != 1 or s.body[0].factors:
            continue
        for name in sorted(T.tensor_reads(s.body)):
            if name in reductions and name not in pairs.values():
                m, f = reductions[name]
                if _is_count_of(s, m, f):
                    pairs[s.name] = name
                    break
    return pairs


def tie_counts(prog: Program) -> dict:
    """{count statement name: max statement name} for every tie count of `prog` that
    runs in its maximum's pass (at most one count per maximum).  Statements of
    recurrence groups are left out: their steps run member by member."""
    def compute():
        from .ssa.recur import recurrences
        pairs = _find(prog)
        if not pairs:
            return pairs
        try:
            members = {n for g in recurrences(prog) for n in g.members}
        except ValueError:
            members = set()
        return {c: m for c, m in pairs.items() if c not in members and m not in members}
    return _PAIRS.compute(prog, compute)


__all__ = ["tie_counts", "reduction_of", "TIE_OPS"]
