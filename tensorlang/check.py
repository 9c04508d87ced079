"""Bounds proofs: every affine access is inside its tensor, given its brackets.

Input: a lowered :class:`Program` (accesses carry their source spans).
Output: nothing, or diagnostics in an :class:`ErrorSink`.

The facts available at an access are the ranges of the indices in scope
(``0 <= i <= n - 1``), ``size >= 1`` for every size symbol, and the affine
brackets of every enclosing term (a bracket is a strong zero, so the access is
only evaluated where they hold).  To prove ``e >= 0`` we show that the facts
together with ``e <= -1`` have no rational solution, by Fourier-Motzkin
elimination with integer tightening (dividing by the coefficient gcd and
rounding the constant down).  That is sound for integers, and complete enough
for affine guards of the kind programs write; a failed proof is reported with
the possible range and the bracket that would guard the access.

Gathers through i64 tensors cannot be proven statically; they are checked
at call time by the backends.

Integer overflow.  The compiled backend evaluates index arithmetic in int64,
so the checker also proves that no index expression (nor any partial sum of
it, in any order) can leave ``-INDEX_LIMIT .. INDEX_LIMIT``, given that every
size symbol lies in ``1 .. MAX_SIZE`` (checked when a function is called) and
every index in ``0 .. dim - 1``.  ``INDEX_LIMIT`` is 2^62, half of int64, which
leaves the code generator room for the sums it forms itself (a loop's bound
plus one, the distance between two breakpoints).  A gathered label stands for
an index of the tensor it addresses (it is range-checked before use); inside a
comparison a label is an arbitrary int64 and only the gather-free part of the
expression is bounded.
"""
from __future__ import annotations

import math

from .errors import ErrorSink, TLBoundsError
from .ssa.ir import (Access, Affine, AnyOf, Apply, Gather, Group, IdxCmp, IndexVar, NotAtom,
                     Program, Rel, SizeVar, Term, ValCmp)
from .ssa.printer import fmt_affine, fmt_idxcmp

# Beyond this many constraints Fourier-Motzkin gives up (the proof fails safe).
MAX_CONSTRAINTS = 4000

# Every size symbol is at most MAX_SIZE (checked at call time, see api.Function.prepare).
# 2^48 bytes is the whole virtual address space of a 64-bit process with 4-level
# paging, so no array NumPy can hand over has a longer dimension in practice; the
# bound is what makes the int64 proof below sound.
MAX_SIZE = 2 ** 48
# Every index expression, and every partial sum of it, stays within +-INDEX_LIMIT.
INDEX_LIMIT = 2 ** 62
INT64_MAX = 2 ** 63 - 1


def _key(atom) -> str:
    if isinstance(atom, IndexVar):
        return "i:" + atom.name
    if isinstance(atom, SizeVar):
        return "s:" + atom.name
    return "g:" + repr(atom.sort_key())


def _constraint(aff: Affine):
    coefs = {}
    for atom, c in aff.terms:
        k = _key(atom)
        coefs[k] = coefs.get(k, 0) + c
    return _tighten({k: c for k, c in coefs.items() if c}, aff.const)


def _tighten(coefs: dict, const: int):
    g = 0
    for c in coefs.values():
        g = math.gcd(g, abs(c))
    if g > 1:
        coefs = {k: c // g for k, c in coefs.items()}
        const = const // g        # floor: sound for integer solutions
    return (tuple(sorted(coefs.items())), const)


def infeasible(constraints) -> bool:
    """True when the constraints (each `sum c*v + k >= 0`) have no solution."""
    cons = set(constraints)
    while True:
        live = set()
        for coefs, k in cons:
            if not coefs:
                if k < 0:
                    return True
                continue
            live.add((coefs, k))
        cons = live
        if not cons:
            return False
        variables = {v for coefs, _ in cons for v, _ in coefs}
        best, best_cost = None, None
        for v in sorted(variables):
            pos = sum(1 for coefs, _ in cons if dict(coefs).get(v, 0) > 0)
            neg = sum(1 for coefs, _ in cons if dict(coefs).get(v, 0) < 0)
            cost = pos * neg - pos - neg
            if best_cost is None or cost < best_cost:
                best, best_cost = v, cost
        v = best
        pos, neg, rest = [], [], []
        for coefs, k in cons:
            c = dict(coefs).get(v, 0)
            (pos if c > 0 else neg if c < 0 else rest).append((dict(coefs), k, c))
        new = {(tuple(sorted(d.items())), k) for d, k, _ in rest}
        for dp, kp, cp in pos:
            for dn, kn, cn in neg:
                a, b = -cn, cp            # a*p + b*n eliminates v
                coefs = {}
                for var in set(dp) | set(dn):
                    if var == v:
                        continue
                    c = a * dp.get(var, 0) + b * dn.get(var, 0)
                    if c:
                        coefs[var] = c
                new.add(_tighten(coefs, a * kp + b * kn))
        if len(new) > MAX_CONSTRAINTS:
            return False
        cons = new


class Facts:
    """Linear facts in scope: index ranges, sizes >= 1, affine brackets.

    Extending a set of facts is lazy: the constraints are only built when a
    proof asks for them, because passes create a scope for every term they
    visit and most scopes are never asked anything.
    """

    __slots__ = ("_items", "_parent", "_ranges", "_pred")

    def __init__(self, items=(), parent=None, ranges=(), pred=()):
        self._items = tuple(items) if parent is None else None
        self._parent = parent
        self._ranges = tuple(ranges)
        self._pred = tuple(pred)

    @property
    def items(self) -> tuple:
        if self._items is None:
            self._items = (self._parent.items + _range_constraints(self._ranges)
                           + _pred_constraints(self._pred))
            self._parent = None
        return self._items

    def with_ranges(self, indices) -> "Facts":
        return Facts(parent=self, ranges=indices) if indices else self

    def with_pred(self, pred) -> "Facts":
        return Facts(parent=self, pred=pred) if pred else self

    def proves(self, aff: Affine) -> bool:
        """Do the facts imply aff >= 0?"""
        goal = _constraint(aff.scale(-1).shift(-1))                      # aff <= -1
        return _infeasible_memo(self.items + (goal,))


def _range_constraints(indices) -> tuple:
    extra = []
    for name, dim in indices:
        v = Affine.of(IndexVar(name))
        extra.append(_constraint(v))                                   # i >= 0
        extra.append(_constraint(Affine.dim(dim) - v - Affine(1)))     # i <= d - 1
    return tuple(extra)


def _pred_constraints(pred) -> tuple:
    extra = []
    for atom in pred:
        if isinstance(atom, IdxCmp):
            if atom.op in (">=", "=="):
                extra.append(_constraint(atom.aff))
            if atom.op == "==":
                extra.append(_constraint(atom.aff.scale(-1)))
        elif isinstance(atom, AnyOf) and len(atom.alts) == 1:
            extra.extend(_pred_constraints(atom.alts[0]))
    return tuple(extra)


_PROOFS: dict = {}


def _infeasible_memo(constraints: tuple) -> bool:
    """infeasible, remembered: the simplifier asks the same questions every round."""
    key = frozenset(constraints)
    hit = _PROOFS.get(key)
    if hit is None:
        if len(_PROOFS) > 50_000:
            _PROOFS.clear()
        hit = _PROOFS[key] = infeasible(key)
    return hit


def dim_bound(d) -> int:
    """The largest value a dimension can take: its literal, or MAX_SIZE for a symbol."""
    return d if isinstance(d, int) else MAX_SIZE


def magnitude(aff: Affine, ranges: dict, labels: bool = False) -> int:
    """A bound on |aff| and on |every partial sum of its terms|, from the ranges alone.

    Indices range over 0 .. dim - 1 (unknown ones over 0 .. MAX_SIZE - 1), sizes over
    1 .. MAX_SIZE.  A gathered label counts as an index of the tensor it addresses when
    `labels` is true (it is range-checked before use); otherwise it is left out."""
    total = abs(aff.const)
    for atom, c in aff.terms:
        if isinstance(atom, IndexVar):
            top = dim_bound(ranges[atom.name]) - 1 if atom.name in ranges else MAX_SIZE - 1
        elif isinstance(atom, SizeVar):
            top = MAX_SIZE
        elif labels:
            top = MAX_SIZE - 1
        else:
            top = 0
        total += abs(c) * max(top, 0)
    return total


def value_range(aff: Affine, ranges: dict) -> tuple[Affine, Affine] | None:
    """Bounds of aff from index ranges alone (brackets ignored); None with gathers."""
    lo = Affine(aff.const)
    hi = Affine(aff.const)
    for atom, c in aff.terms:
        if isinstance(atom, Gather):
            return None
        if isinstance(atom, SizeVar):
            lo = lo + Affine.of(atom).scale(c)
            hi = hi + Affine.of(atom).scale(c)
            continue
        top = Affine.dim(ranges[atom.name]).shift(-1)
        if c > 0:
            hi = hi + top.scale(c)
        else:
            lo = lo + top.scale(c)
    return lo, hi


class BoundsChecker:
    def __init__(self, prog: Program, sink: ErrorSink):
        self.prog = prog
        self.sink = sink
        self.shapes = prog.shapes()
        base = []
        for s in prog.sizes():
            base.append(_constraint(Affine.of(SizeVar(s)).shift(-1)))
        self.base = Facts(base)
        self.proven: list[str] = []          # one line per access, for `explain`
        self._overflow_seen: set = set()

    def run(self) -> None:
        for st in self.prog.stmts:
            facts = self.base.with_ranges(st.indices)
            self.body(st.body, facts, dict(st.indices))

    def body(self, body, facts: Facts, ranges: dict):
        for t in body:
            self.term(t, facts, ranges)

    def term(self, t: Term, facts: Facts, ranges: dict):
        ranges = {**ranges, **dict(t.sums)}
        facts = facts.with_ranges(t.sums).with_pred(t.pred)
        for atom in t.pred:
            self.atom(atom, facts, ranges)
        for f, _ in t.factors:
            if isinstance(f, Access):
                self.access(f.name, f.idx, f.span, facts, ranges)
            elif isinstance(f, Apply):
                for b in f.args:
                    self.body(b, facts, ranges)
            elif isinstance(f, Group):
                self.body(f.body, facts, ranges)

    def atom(self, atom, facts, ranges):
        if isinstance(atom, IdxCmp):
            self.overflow(atom.aff, atom.span, ranges, f"the comparison [{fmt_idxcmp(atom)}] computes")
            if atom.op == "%" and atom.mod > INDEX_LIMIT:
                self.sink.add(TLBoundsError, atom.span,
                              f"the modulus {atom.mod} is beyond the 64-bit integer range of "
                              f"index arithmetic (at most 2^{INDEX_LIMIT.bit_length() - 1})",
                              "use a smaller modulus")
            self.gathers(atom.aff, atom.span, facts, ranges)
        elif isinstance(atom, Rel):
            self.access(atom.name, atom.idx, atom.span, facts, ranges)
        elif isinstance(atom, ValCmp):
            self.body(atom.left, facts, ranges)
            self.body(atom.right, facts, ranges)
        elif isinstance(atom, NotAtom):
            self.atom(atom.atom, facts, ranges)
        elif isinstance(atom, AnyOf):
            for alt in atom.alts:
                # An alternative is only looked at when the index-only alternatives
                # are false (the backends test those first), so their negations hold.
                others = [negated_index_guard(o) for o in atom.alts if o is not alt]
                inner = facts.with_pred(alt).with_pred([g for g in others if g is not None])
                for a in alt:
                    self.atom(a, inner, ranges)

    def overflow(self, aff: Affine, span, ranges, what: str) -> bool:
        """Report an index expression whose int64 evaluation could overflow; True if fine."""
        bound = magnitude(aff, ranges)
        if bound <= INDEX_LIMIT:
            return True
        key = (span, aff)
        if key in self._overflow_seen:
            return False
        self._overflow_seen.add(key)
        self.sink.add(
            TLBoundsError, span,
            f"{what} {fmt_affine(aff)}, whose magnitude can reach about 2^{bound.bit_length()}: "
            f"index arithmetic must stay within 2^{INDEX_LIMIT.bit_length() - 1} (it is done in "
            f"64-bit integers, and a size may be up to 2^{MAX_SIZE.bit_length() - 1})",
            "use smaller coefficients and constants in index expressions")
        return False

    def gathers(self, aff: Affine, span, facts, ranges):
        for atom, _ in aff.terms:
            if isinstance(atom, Gather):
                self.access(atom.name, atom.idx, span, facts, ranges)

    def access(self, name, idx, span, facts: Facts, ranges):
        dims = self.shapes[name][1]
        shown = f"{name}[{', '.join(fmt_affine(a) for a in idx)}]"
        proved = []
        for k, (aff, dim) in enumerate(zip(idx, dims)):
            self.gathers(aff, span, facts, ranges)
            if not self.overflow(aff, span, ranges, f"index {k} of {name} is"):
                continue
            if any(isinstance(a, Gather) for a in aff.atoms()):
                proved.append(f"dim {k} gathered, checked at call time")
                continue
            upper = Affine.dim(dim).shift(-1) - aff          # aff <= dim - 1
            low_ok = facts.proves(aff)
            high_ok = facts.proves(upper)
            if low_ok and high_ok:
                if not (aff.terms == ((IndexVar(ranges_key(aff)), 1),) and aff.const == 0
                        and ranges.get(ranges_key(aff)) == dim):
                    proved.append(f"0 <= {fmt_affine(aff)} < {dim}")
                continue
            self.report(name, k, aff, dim, span, ranges, low_ok, high_ok)
        if proved:
            self.proven.append(f"{shown}: " + "; ".join(proved))

    def report(self, name, k, aff, dim, span, ranges, low_ok, high_ok):
        text = fmt_affine(aff)
        if not aff.index_vars():
            # No index to guard: the position is fixed, and outside the tensor.
            self.sink.add(
                TLBoundsError, span,
                f"index {k} of {name} is {text}, which can lie outside 0 .. {dim} - 1 "
                f"(dimension {k} of {name} has size {dim})",
                f"the last position of dimension {k} is {fmt_affine(Affine.dim(dim).shift(-1))}")
            return
        rng = value_range(aff, ranges)
        where = ""
        if rng is not None:
            where = f": {text} ranges over {fmt_affine(rng[0])} .. {fmt_affine(rng[1])}"
        guards = []
        if not low_ok:
            guards.append(fmt_idxcmp(IdxCmp(">=", aff)))
        if not high_ok:
            guards.append(fmt_idxcmp(IdxCmp(">=", Affine.dim(dim).shift(-1) - aff)))
        self.sink.add(
            TLBoundsError, span,
            f"index {k} of {name} may be out of range{where}, but {name} has size {dim} "
            f"in dimension {k}",
            f"guard it with [{' and '.join(guards)}]")


def negated_index_guard(alt):
    """The negation of a one-atom alternative `aff >= 0` as a fact (`-aff - 1 >= 0`)."""
    if len(alt) == 1 and isinstance(alt[0], IdxCmp) and alt[0].op == ">=":
        return IdxCmp(">=", alt[0].aff.scale(-1).shift(-1))
    return None


def index_only_first(alts) -> list:
    """Disjunction alternatives in evaluation order: pure index comparisons first."""
    return sorted(alts, key=lambda alt: 0 if all(isinstance(a, IdxCmp) for a in alt) else 1)


def ranges_key(aff: Affine) -> str | None:
    """The index name of a plain `i` access position, else None."""
    if len(aff.terms) == 1 and isinstance(aff.terms[0][0], IndexVar):
        return aff.terms[0][0].name
    return None

