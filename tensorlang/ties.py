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
alone, never by names: the body must be a sum of a weight over the points of
``r``'s reduction where the entry equals ``r`` at the statement's own element, up
to the names of the indices, and the weight may read only what is ready before
``r`` runs.  The sum may carry index brackets of its own that imply ``r``'s (a
tangent's ``[P]`` in ``max[j]([P] * e)``, which the simplifier then drops from the
entry it compares, ``[P and e == r]``, or a bracket on the element it moved out of
the entry): they join the weight, which is 0 where they fail.

    tie_sums(prog) -> {statement: (max statement, weight term)}

The NumPy interpreter and the JAX emission compute these statements as written
(the same values, summed in another order); the Numba backend
(backend/kernels.py, backend/numba_module.py), the op counter
(backend/loop_interp.py) and the cost model (costs.py) run them in the
maximum's pass.
"""
from __future__ import annotations

from itertools import permutations

from .bounds import Facts, size_facts
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


def _tie_weight(c: Stmt, m: Stmt, f: Reduce, before: set, facts: Facts):
    """When c's body is a sum, over the points of m's reduction f at c's element, of
    a weight W at the points whose entry equals m's value there (`W = 1`: the count
    of ties), the term `coeff * W` in m's index names (its sums gone), else None.
    W may read only tensors in `before` (those ready before m runs).  A body of
    several such sums over the same ties is one sum whose weight is the group of
    theirs (`sum[j]([e == r] * a) + sum[j]([e == r] * b)`, weight `(a + b)`); brackets
    that every one of them carries (see _bracketed_weight) are tested once,
    `[X] * (a + b)`."""
    if not c.body or len(c.indices) != len(m.indices):
        return None
    parts = []
    for t in c.body:
        w = _term_weight(c, t, m, f, before, facts)
        if w is None:
            return None
        parts.append(w)
    shared = parts[0][0]
    if all(x == shared for x, _ in parts):
        weights = [w for _, w in parts]
    else:
        shared = ()
        weights = [_bracketed(x, w) for x, w in parts]
    if len(weights) > 1:
        weights = [Term(1.0, (), (), ((Group(tuple(weights)), 1.0),))]
    return _bracketed(shared, weights[0])


def _bracketed(brackets: tuple, weight: Term) -> Term:
    """`[brackets] * weight` as a weight: a product whose one factor is that term."""
    if not brackets:
        return weight
    inner = Term(weight.coeff, (), brackets, weight.factors)
    return Term(1.0, (), (), ((Group((inner,)), 1.0),))


def _term_weight(c: Stmt, t: Term, m: Stmt, f: Reduce, before: set, facts: Facts):
    """(brackets, weight) of one term of c (see _tie_weight), or None."""
    if len(t.sums) != len(f.over) or len(f.over) > 3:
        return None
    if any(dc != dm for (_, dc), (_, dm) in zip(c.indices, m.indices)):
        return None
    exact = _exact_weight(c, t, m, f, before)
    if exact is not None:
        return (), exact
    return _bracketed_weight(c, t, m, f, before, facts)


def _alignments(c: Stmt, t: Term, m: Stmt, f: Reduce):
    """For each order of t's sums that matches f's indices range by range: (the order,
    f's filter and entry in c's and those sums' names, the renaming back to m's and
    f's names)."""
    outer = {n: Affine.of(IndexVar(k)) for (n, _), (k, _) in zip(m.indices, c.indices)}
    for order in permutations(t.sums):
        if any(d != e for (_, d), (_, e) in zip(order, f.over)):
            continue
        mapping = dict(outer)
        mapping.update({n: Affine.of(IndexVar(k)) for (n, _), (k, _) in zip(f.over, order)})
        back = {k: Affine.of(IndexVar(n)) for (n, _), (k, _) in zip(m.indices, c.indices)}
        back.update({k: Affine.of(IndexVar(n)) for (n, _), (k, _) in zip(f.over, order)})
        yield (order, tuple(T.substitute(a, mapping) for a in f.where),
               T.substitute_body(f.body, mapping), back)


def _guard_at(c: Stmt, m: Stmt) -> tuple:
    """m's brackets at c's element."""
    outer = {n: Affine.of(IndexVar(k)) for (n, _), (k, _) in zip(m.indices, c.indices)}
    return tuple(T.substitute(a, outer) for a in m.body[0].pred)


def _exact_weight(c: Stmt, t: Term, m: Stmt, f: Reduce, before: set):
    """The weight of a term whose brackets are exactly m's and the tie test's."""
    weight = Term(t.coeff, (), (), t.factors)
    if not T.tensor_reads((weight,)) <= before:
        return None
    read = B.factor_body(Access(m.name, tuple(Affine.of(IndexVar(k)) for k, _ in c.indices)))
    want = B.canon_body([Term(1.0, t.sums, t.pred, ())])
    # m's brackets, at c's element: c must have them too (where they are false, m is 0
    # and c sums nothing)
    guard = _guard_at(c, m)
    for order, where, entry, back in _alignments(c, t, m, f):
        for cmp in (ValCmp("==", entry, read), ValCmp("==", read, entry)):
            if B.canon_body([Term(1.0, tuple(order), guard + where + (cmp,), ())]) == want:
                return T.substitute(weight, back)
    return None


def _bracketed_weight(c: Stmt, t: Term, m: Stmt, f: Reduce, before: set, facts: Facts):
    """The weight of a term `sum[S]([X and L == r] * W)` whose index brackets X imply
    m's guard and f's filter, and under which the compared value L is f's entry (the
    entry with the brackets X imply dropped, on both sides): the sum is then, over
    the ties of m, `[X'] * W`, X' the brackets of X that m's guard and filter do not
    imply (0 where they fail), which must be brackets of the entry itself:
    (X', W), both in m's index names.  None otherwise."""
    read = B.factor_body(Access(m.name, tuple(Affine.of(IndexVar(k)) for k, _ in c.indices)))
    tests = [a for a in t.pred if a.__class__ is ValCmp]
    if len(tests) != 1 or tests[0].op != "==" or read not in (tests[0].left, tests[0].right):
        return None
    test = tests[0]
    compared = test.right if test.left == read else test.left
    brackets = tuple(a for a in t.pred if a is not test)
    if any(a.__class__ is not IdxCmp for a in brackets):
        return None
    guard = _guard_at(c, m)
    scope = facts.with_ranges(c.indices).with_ranges(t.sums)
    under_x = _implied_by(brackets, scope.with_pred(brackets))
    weight = Term(t.coeff, (), (), t.factors)
    for _, where, entry, back in _alignments(c, t, m, f):
        if not all(under_x(a) for a in guard + where):
            continue
        if _without(entry, under_x) != _without(compared, under_x):
            continue
        under_m = _implied_by(guard + where, scope.with_pred(guard + where))
        extra = tuple(a for a in brackets if not under_m(a))
        # the weight's brackets are the entry's own (a sum over part of the points is
        # a sum over another domain, not over the maximum's ties)
        if any(a not in u.pred for a in extra for u in entry):
            continue
        if not T.tensor_reads((_bracketed(extra, weight),)) <= before:
            return None
        return tuple(T.substitute(a, back) for a in extra), T.substitute(weight, back)
    return None


def _implied_by(atoms: tuple, facts: Facts):
    """atom -> does it follow from `atoms` (one of them, or an index comparison the
    facts, which hold them, prove)?"""
    def implied(a) -> bool:
        return a in atoms or (a.__class__ is IdxCmp and a.op == ">=" and facts.proves(a.aff))
    return implied


def _without(body, implied) -> tuple:
    """body with the brackets of its terms that `implied` says hold dropped."""
    return B.canon_body([Term(t.coeff, t.sums, tuple(a for a in t.pred if not implied(a)),
                              t.factors) for t in body])


def _find(prog: Program) -> dict:
    reductions = {}
    pairs = {}
    facts = size_facts(prog)
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
                weight = _tie_weight(s, m, f, before, facts)
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
