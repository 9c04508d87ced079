"""Sums over the ties of a maximum that run in the same pass as the maximum.

The derivative of ``r[i] = max[j | P](E)`` splits the cotangent equally among the
entries that equal the maximum (LANGUAGE.md, sections 5 and 11), so reverse mode
writes the number of those entries as a statement of its own (ad/rules.py,
``reduction_partial``), and forward mode also the sum of the entries' tangents
over them:

    c[k] = sum[j]([P(k, j)] * [E(k, j) == r[k]])
    s[k] = sum[j]([P(k, j)] * [E(k, j) == r[k]] * dE(k, j))

Evaluated as written, each is a second pass over every point of the reduction,
which evaluates and compares each entry again.  A kernel that keeps the best
value so far can keep such sums over the entries equal to it at the cost of one
more comparison and one addition per point (plus the weight, evaluated only at
entries that tie or beat the best so far), restarting them when the best value
changes, so ``c`` and ``s`` are computed by ``r``'s kernel, and the cost model
counts them that way.  This module recognises such statements by structure
alone, never by names: the body must be exactly a sum of a weight over the
points of ``r``'s reduction where the entry equals ``r`` at the statement's own
element, up to the names of the indices, and the weight may read only what is
ready before ``r`` runs.

    tie_sums(prog) -> {statement: (max statement, weight term)}

The NumPy interpreter and the JAX emission compute these statements as written
(the same values, summed in another order); the Numba backend
(backend/kernels.py, backend/numba_module.py), the op counter
(backend/loop_interp.py) and the cost model (costs.py) run them in the
maximum's pass.
"""
from __future__ import annotations

from itertools import permutations

from .memo import Memo
from .ssa import build as B
from .ssa import traverse as T
from .ssa.ir import (Access, Affine, Group, IdxCmp, IndexVar, Program, Reduce, Stmt, Term,
                     ValCmp)

# Per point of the maximum's domain, each sum over its ties adds an equality test and
# an addition to the pass, besides its weight (costs.py and loop_interp.py use this).
TIE_OPS = 2

_PAIRS = Memo(1024)


def reduction_of(s: Stmt) -> Reduce | None:
    """The max or min that statement `s` stores as its whole body, under brackets on
    its own indices at most (`r[i] = [i + 2 < m] * max[j](...)`), or None."""
    if len(s.body) != 1:
        return None
    t = s.body[0]
    if t.coeff != 1 or t.sums or len(t.factors) != 1:
        return None
    if any(not isinstance(a, IdxCmp) for a in t.pred):
        return None
    f, p = t.factors[0]
    if p != 1 or not isinstance(f, Reduce) or f.op not in ("max", "min"):
        return None
    return f


def guarded(s: Stmt) -> bool:
    """Whether the max statement `s` (see reduction_of) has brackets: where they are
    false it is 0 and its kernel writes none of the sums over its ties, whose arrays
    must then start zeroed (the sums are 0 there too, having the same brackets)."""
    return bool(s.body[0].pred)


def _tie_weight(c: Stmt, m: Stmt, f: Reduce, before: set):
    """When c's body is a sum, over the points of m's reduction f at c's element, of
    a weight W at the points whose entry equals m's value there (`W = 1`: the count
    of ties), the term `coeff * W` in m's index names (its sums gone), else None.
    W may read only tensors in `before` (those ready before m runs).  A body of
    several such sums over the same ties is one sum whose weight is the group of
    theirs (`sum[j]([e == r] * a) + sum[j]([e == r] * b)`, weight `(a + b)`)."""
    if not c.body or len(c.indices) != len(m.indices):
        return None
    weights = []
    for t in c.body:
        w = _term_weight(c, t, m, f, before)
        if w is None:
            return None
        weights.append(w)
    if len(weights) == 1:
        return weights[0]
    return Term(1.0, (), (), ((Group(tuple(weights)), 1.0),))


def _term_weight(c: Stmt, t: Term, m: Stmt, f: Reduce, before: set):
    """The weight of one term of c (see _tie_weight), or None."""
    if len(t.sums) != len(f.over) or len(f.over) > 3:
        return None
    if any(dc != dm for (_, dc), (_, dm) in zip(c.indices, m.indices)):
        return None
    weight = Term(t.coeff, (), (), t.factors)
    if not T.tensor_reads((weight,)) <= before:
        return None
    outer = {n: Affine.of(IndexVar(k)) for (n, _), (k, _) in zip(m.indices, c.indices)}
    read = B.factor_body(Access(m.name, tuple(Affine.of(IndexVar(k)) for k, _ in c.indices)))
    want = B.canon_body([Term(1.0, t.sums, t.pred, ())])
    # m's brackets, at c's element: c must have them too (where they are false, m is 0
    # and c sums nothing)
    guard = tuple(T.substitute(a, outer) for a in m.body[0].pred)
    for order in permutations(t.sums):
        if any(d != e for (_, d), (_, e) in zip(order, f.over)):
            continue
        mapping = dict(outer)
        mapping.update({n: Affine.of(IndexVar(k)) for (n, _), (k, _) in zip(f.over, order)})
        where = tuple(T.substitute(a, mapping) for a in f.where)
        entry = T.substitute_body(f.body, mapping)
        for cmp in (ValCmp("==", entry, read), ValCmp("==", read, entry)):
            if B.canon_body([Term(1.0, tuple(order), guard + where + (cmp,), ())]) == want:
                back = {k: Affine.of(IndexVar(n)) for (n, _), (k, _) in zip(m.indices, c.indices)}
                back.update({k: Affine.of(IndexVar(n)) for (n, _), (k, _) in zip(f.over, order)})
                return T.substitute(weight, back)
    return None


def _find(prog: Program) -> dict:
    reductions = {}
    pairs = {}
    ready = {p.name for p in prog.params}
    for s in prog.stmts:
        f = reduction_of(s)
        if f is not None:
            reductions[s.name] = (s, f, set(ready))
        elif s.body and reductions:     # (nothing to pair with before a reduction)
            for name in sorted(T.tensor_reads(s.body)):
                if name not in reductions:
                    continue
                m, f, before = reductions[name]
                weight = _tie_weight(s, m, f, before)
                if weight is not None:
                    pairs[s.name] = (name, weight)
                    break
        ready.add(s.name)
    return pairs


def weighted(weight: Term) -> bool:
    """Whether a tie sum's weight is more than a count's constant 1 (and so is evaluated
    at the points it sums over)."""
    return bool(weight.factors) or weight.coeff != 1


def tie_sums(prog: Program) -> dict:
    """{statement: (max statement, weight term)} for every sum over the ties of a stored
    max / min that runs in its pass (the weight a term without sums in the max
    statement's index names, 1 for a count).  Statements of recurrence groups are
    left out: their steps run member by member."""
    def compute():
        from .ssa.recur import recurrences
        pairs = _find(prog)
        if not pairs:
            return pairs
        try:
            members = {n for g in recurrences(prog) for n in g.members}
        except ValueError:
            members = set()
        return {c: mw for c, mw in pairs.items() if c not in members and mw[0] not in members}
    return _PAIRS.compute(prog, compute)


def tie_counts(prog: Program) -> dict:
    """{statement: max statement} for the statements of `tie_sums`."""
    return {c: mw[0] for c, mw in tie_sums(prog).items()}


__all__ = ["tie_sums", "tie_counts", "reduction_of", "guarded", "weighted", "TIE_OPS"]
