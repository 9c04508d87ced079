"""Prefix and suffix products: the m partials of an m-factor term in about 3m multiplications.

A term ``c * [P] * g0 * g1 * ... * gr`` (g0 the factors that do not depend on
what is differentiated, g1 ... gr those that do) has one partial per dependent
factor, ``c * [P] * g0 * ... * g(k-1) * gk' * g(k+1) * ... * gr``.  Written out,
the r partials repeat r - 1 factors each: r^2 multiplications, and the
cheap-gradient constant grows with the number of factors.  With the prefix
products ``Q(j) = g0 * g1 * ... * gj`` and the suffix products
``S(j) = gj * ... * gr`` stored as statements (each one multiplication from the
one before), the partial of gk is ``c * [P] * Q(k-1) * gk' * S(k+1)``: two
reads and one product.  The prefixes and suffixes are taken over blocks of two
factors (``BLOCK``): a stored statement costs a write and an addition besides
its multiplication, so one per block (the partial reading the other factor of
its block too) comes to about 7 operations per factor, where one per factor
comes to 9 and the written-out partials to m.  Reverse mode multiplies each
partial by the cotangent and forward mode by the tangent of gk, so both build
them here.

A stored product ranges over the indices its factors use (the term's loop
indices and sums), keeps the term's brackets on those indices, and is kept
only when its reads are provably in range; otherwise, and for terms with fewer
than four dependent factors, the partials are the plain ones
(``build.partial_of_term``).  Whether the stored form is cheaper shows only after
simplification, so the driver builds both and keeps the cheaper.
"""
from __future__ import annotations

from ..check import BoundsChecker
from ..errors import ErrorSink
from ..ssa import build as B
from ..ssa import traverse as T
from ..ssa.ir import Access, Affine, IndexVar, Program, Stmt, Term
from ..ssa.names import fresh
from ..ssa.traverse import substitute_term

MIN_FACTORS = 4
BLOCK = 2


class ProductStore:
    """Stores products as statements of a derivative program.

    `prog`: the primal program (the stored products read only its tensors);
    `emit(name_hint, indices, body) -> name` adds a statement and names it."""

    def __init__(self, prog: Program, emit):
        self.prog = prog
        self.emit = emit
        self.stored: list[Stmt] = []
        # statements of the derivative the stored ones may also read (tangents)
        self.extra: list[Stmt] = []
        # index names a stored statement must range over (a recurrence's steps,
        # while its members are differentiated), or empty
        self.must_use: set[str] = set()

    def product(self, factors, pred, bound) -> list | None:
        """A read of a new statement holding the product of `factors` (over the
        indices of `bound` they use) as a one-factor list, or None when it cannot
        be stored."""
        read = self.body((Term(1.0, (), (), tuple(factors)),), pred, bound, single=True)
        return None if read is None else [(read, 1.0)]

    def body(self, terms, pred, bound, single: bool = False) -> Access | None:
        """A read of a new statement holding the sum `terms` over the indices of
        `bound` they use, under the brackets of `pred` on those indices; None when
        its reads cannot be proven in range (or, with `single`, the terms do not
        stay one term)."""
        names = T.index_names(tuple(terms))
        used = [(n, d) for n, d in bound if n in names]
        keep = set(n for n, _ in used)
        if not self.must_use <= keep:
            return None
        brackets = tuple(a for a in pred if T.index_names(a) <= keep)
        gens = tuple((fresh(n), d) for n, d in used)
        rename = {n: Affine.of(IndexVar(m)) for (n, _), (m, _) in zip(used, gens)}
        body = B.canon_body([substitute_term(Term(u.coeff, u.sums, brackets + u.pred, u.factors),
                                             rename) for u in terms])
        if not body or (single and len(body) != 1):
            return None
        if not _in_bounds(self.prog, self.extra + self.stored, Stmt("_", gens, body)):
            return None
        name = self.emit(gens, body)
        self.stored.append(Stmt(name, gens, body))
        return Access(name, tuple(Affine.of(IndexVar(n)) for n, _ in used))


def _in_bounds(prog: Program, stored, stmt: Stmt) -> bool:
    trial = Program(prog.name, prog.params, prog.stmts + tuple(stored) + (stmt,),
                    (stmt.name,), False)
    sink = ErrorSink()
    checker = BoundsChecker(trial, sink)
    checker.body(stmt.body, checker.base.with_ranges(stmt.indices), dict(stmt.indices))
    return not sink


def partials(t: Term, dependent: list[int], bound: tuple, scope: set[str],
             store: ProductStore | None, cot=None) -> tuple[dict[int, tuple], Term | None] | None:
    """({k: the partial of t with respect to factor k (as ``build.partial_of_term``)}
    for every k in `dependent`, t itself as the product of its last prefix and last
    factor), from stored prefix and suffix products; None when they are not worth
    building or cannot be stored.  `bound`: (name, dim) of every index t's factors
    may use (t's own sums included).

    `cot` (reverse mode): a body every partial is to be multiplied by; the partials
    returned are then already multiplied by it, and t itself is not returned (None).
    A cotangent that is one plain term over indices the first stored prefix uses
    anyway is carried in the prefix products (`_carried`), so that every partial
    multiplies by it once, through its prefix, rather than each partial once more."""
    if store is None or len(dependent) < MIN_FACTORS:
        return None
    dep = set(dependent)
    g0 = [fp for k, fp in enumerate(t.factors) if k not in dep]
    # the dependent factors in blocks of BLOCK: a prefix or suffix statement costs
    # a write and an addition besides its multiplication, so storing one per block
    # rather than per factor is cheaper (7 operations per factor instead of 9)
    blocks = [dependent[j:j + BLOCK] for j in range(0, len(dependent), BLOCK)]
    r = len(blocks)
    g = [None] + [[t.factors[k] for k in b] for b in blocks]        # g[1..r]
    coeff = t.coeff
    carried = _carried(cot, g0 + g[1])
    if carried is not None:
        g0 = list(carried.factors) + g0
        coeff *= carried.coeff
    pred = t.pred
    prefix = [list(g0)]                                     # prefix[j] = Q(j)
    for j in range(1, r):
        q = prefix[j - 1] + g[j]
        if j <= r - 2 and len(q) >= 2:
            q = store.product(q, pred, bound)
            if q is None:
                return None
        prefix.append(q)
    suffix = {r + 1: [], r: list(g[r])}                     # suffix[j] = S(j)
    for j in range(r - 1, 1, -1):
        s = g[j] + suffix[j + 1]
        if j >= 3 and len(s) >= 2:
            s = store.product(s, pred, bound)
            if s is None:
                return None
        suffix[j] = s
    out = {}
    for pos, block in enumerate(blocks, start=1):
        for k in block:
            f, p = t.factors[k]
            others = tuple(t.factors[q] for q in block if q != k)
            rest = (Term(coeff * p, (), pred,
                         tuple(prefix[pos - 1]) + others + tuple(suffix[pos + 1])),)
            if p != 1:
                rest = B.mul(rest, B.factor_power(f, p - 1.0), scope)
            if cot is not None and carried is None:
                rest = B.mul(rest, cot, scope)
            out[k] = rest
    if cot is not None:
        return out, None
    value = Term(t.coeff, t.sums, pred, tuple(prefix[r - 1]) + tuple(g[r]))
    return out, value


def _carried(cot, first: list) -> Term | None:
    """The one term of `cot` when the prefix products can carry it: no sums and
    no brackets (the prefixes keep only the term's own), and no index that the
    first prefix, the independent factors and the first block, does not already
    range over (else every prefix would range over more indices).  Carried, it
    costs one multiplication in the first stored prefix and saves one in every
    partial that reads a stored prefix."""
    if cot is None:
        return None
    carry = B.single_simple_term(cot)
    if carry is None:
        return None
    used = T.index_names(Term(1.0, (), (), tuple(first)))
    return carry if T.index_names(carry) <= used else None
