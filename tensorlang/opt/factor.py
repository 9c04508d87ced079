"""Split a product of independent sums into separately computed sums.

Lowering multiplies ``sum[j](x[j]) * sum[l](y[l])`` out into one term
``sum[j, l](x[j] * y[l])``: n^2 work for what is two sums of n.  This rule
finds the summed indices that no factor or bracket links, and moves each
linked group (with its factors and brackets) into a statement of its own over
the free indices it uses:

    t[i] = sum[j, l](x[j] * A[i, l] * y[l])
    ->  t_sum[] = sum[j](x[j]);  t_sum1[i] = sum[l](A[i, l] * y[l]);  t[i] = t_sum * t_sum1[i]

The law is distributivity, sum_{j,l} a(j) b(l) = (sum_j a(j)) (sum_l b(l)); with
one linked group it is c * sum_j a(j) = c sum_j a(j) for factors c that do not use
j, which moves the reduction out of a loop over indices it does not use.
The split is made only when the cost model says it is cheaper and when every
read of a new statement is still provably in bounds (brackets on the free
indices go with it).
"""
from __future__ import annotations

from ..check import BoundsChecker
from .engine import cheaper
from ..errors import ErrorSink
from ..ssa import build as B
from ..ssa import traverse as T
from ..ssa.names import unique_name
from ..ssa.ir import Access, Affine, IdxCmp, IndexVar, Program, Stmt, Term


def _components(t: Term):
    """Groups of summed indices linked through a shared factor or bracket."""
    summed = [n for n, _ in t.sums]
    parent = {n: n for n in summed}

    def find(a):
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    items = [T.index_names(a) for a in t.pred] + [T.index_names(f) for f, _ in t.factors]
    for names in items:
        linked = [n for n in summed if n in names]
        for a in linked[1:]:
            parent[find(a)] = find(linked[0])
    groups: dict[str, list[str]] = {}
    for n in summed:
        groups.setdefault(find(n), []).append(n)
    return list(groups.values()), items


class _Splitter:
    def __init__(self, prog: Program):
        self.prog = prog
        self.used = ({p.name for p in prog.params} | {s.name for s in prog.stmts}
                     | set(prog.sizes()))

    def fresh(self, base: str) -> str:
        name = unique_name(base, self.used)
        self.used.add(name)
        return name

    def split(self, s: Stmt, t: Term, order: list[str], ranges: dict, done: list[Stmt]):
        """New statements and the replacement term, or None when not worth it."""
        groups, items = _components(t)
        if not groups:
            return None
        if len(groups) == 1:
            # One linked sum: worth a statement only when factors or brackets stay
            # outside it (``d[l1] * sum[l](G[l, k] * v[l])`` over (k, l1)).
            g = set(groups[0])
            if all(names & g for names in items):
                return None
            # An equality on a summed index is eliminated first (no loop at all).
            if any(isinstance(a, IdxCmp) and a.op == "==" and T.index_names(a) & g
                   for a in t.pred):
                return None
        new_stmts, factors = [], []
        taken = [False] * len(items)
        npred = len(t.pred)
        for group in groups:
            g = set(group)
            pred = [a for k, a in enumerate(t.pred) if items[k] & g]
            facs = [fp for k, fp in enumerate(t.factors) if items[npred + k] & g]
            for k, names in enumerate(items):
                if names & g:
                    taken[k] = True
            inner = Term(1.0, tuple((n, d) for n, d in t.sums if n in g), tuple(pred), tuple(facs))
            free = [n for n in order if n in T.index_names(inner) - g]
            # Brackets on these free indices alone guard the new statement's reads too.
            summed = {n for n, _ in t.sums}
            guards = tuple(a for a in t.pred if not (T.index_names(a) & summed)
                           and T.index_names(a) <= set(free))
            inner = Term(1.0, inner.sums, guards + inner.pred, inner.factors)
            name = self.fresh(f"{s.name}_sum")
            stmt = Stmt(name, tuple((n, ranges[n]) for n in free), B.canon_body([inner]))
            new_stmts.append(stmt)
            factors.append((Access(name, tuple(Affine.of(IndexVar(n)) for n in free)), 1.0))
        rest_pred = tuple(a for k, a in enumerate(t.pred) if not taken[k])
        rest_facs = tuple(fp for k, fp in enumerate(t.factors) if not taken[npred + k])
        new_term = Term(t.coeff, (), rest_pred, rest_facs + tuple(factors))
        trial = Program(self.prog.name, self.prog.params, tuple(done) + tuple(new_stmts),
                        (new_stmts[-1].name,), False)
        sink = ErrorSink()
        checker = BoundsChecker(trial, sink)
        for st in new_stmts:
            checker.body(st.body, checker.base.with_ranges(st.indices), dict(st.indices))
        if sink:
            return None
        return new_stmts, new_term


def factor_independent_sums(prog: Program) -> Program:
    """sum_{j,l} a(j) b(l) -> (sum_j a(j)) (sum_l b(l)), as statements, when cheaper."""
    sp = _Splitter(prog)
    stmts: list[Stmt] = []
    changed = False
    for s in prog.stmts:
        order = [n for n, _ in s.indices]
        new_body = []
        extra: list[Stmt] = []
        for t in s.body:
            ranges = {**dict(s.indices), **dict(t.sums)}
            res = sp.split(s, t, order + [n for n, _ in t.sums], ranges, stmts + extra) \
                if t.sums else None
            if res is None:
                new_body.append(t)
                continue
            new_stmts, new_term = res
            before = Program(prog.name, prog.params, (Stmt(s.name, s.indices, (t,)),),
                             (s.name,), False)
            after = Program(prog.name, prog.params,
                            tuple(new_stmts) + (Stmt(s.name, s.indices, (new_term,)),),
                            (s.name,), False)
            if not cheaper(after, before, strictly=True):
                new_body.append(t)
                continue
            extra.extend(new_stmts)
            new_body.append(new_term)
            changed = True
        stmts.extend(extra)
        stmts.append(Stmt(s.name, s.indices, B.canon_body(new_body), s.span))
    if not changed:
        return prog
    return Program(prog.name, prog.params, tuple(stmts), prog.outputs, prog.tuple_return)
