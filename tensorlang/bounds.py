"""What is known about integer index expressions, and how it is proven.

Linear facts (``Facts``): the ranges of the indices in scope (``0 <= i <= n - 1``),
``size >= 1`` for every size symbol, and affine brackets.  To prove ``e >= 0``
we show that the facts together with ``e <= -1`` have no rational solution, by
Fourier-Motzkin elimination with integer tightening (dividing by the
coefficient gcd and rounding the constant down).  That is sound for integers,
and complete enough for affine guards of the kind programs write.  The bounds
checker (check.py), the simplifier, the loop planner and the cost model all
ask their questions here.

Integer overflow.  The compiled backend evaluates index arithmetic in int64,
so every size symbol is at most ``MAX_SIZE`` (checked when a function is
called) and ``magnitude`` bounds an index expression, and each partial sum of
it, from the ranges alone; the checker keeps them within ``INDEX_LIMIT``
(2^62, half of int64, which leaves the code generator room for the sums it
forms itself).
"""
from __future__ import annotations

import itertools
import math

from . import sizexpr
from .memo import Memo
from .ssa.ir import Affine, AnyOf, Gather, IdxCmp, IndexVar, Program, SizeVar

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
# At most this many cases are tried to show that brackets cover every point (covers).
COVER_CASES = 64


def _key(atom) -> str:
    if isinstance(atom, IndexVar):
        return "i:" + atom.name
    if isinstance(atom, SizeVar):
        return "s:" + atom.name
    return "g:" + repr(atom.sort_key())


def constraint(aff: Affine):
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
        live = []
        for coefs, k in cons:
            if not coefs:
                if k < 0:
                    return True
                continue
            live.append((coefs, k))
        if not live:
            return False
        # Eliminate the variable that makes the fewest new constraints (pos * neg
        # pairs replace pos + neg), the first in name order on a tie.
        pos: dict = {}
        neg: dict = {}
        for coefs, _ in live:
            for v, c in coefs:                  # (no zero coefficients, each name once)
                side = pos if c > 0 else neg
                side[v] = side.get(v, 0) + 1
        best, best_cost = None, None
        for v in sorted(pos.keys() | neg.keys()):
            p, n = pos.get(v, 0), neg.get(v, 0)
            cost = p * n - p - n
            if best_cost is None or cost < best_cost:
                best, best_cost = v, cost
        v = best
        ups, downs, new = [], [], set()
        for coefs, k in live:
            d = dict(coefs)
            c = d.get(v, 0)
            if c > 0:
                ups.append((d, k, c))
            elif c < 0:
                downs.append((d, k, c))
            else:
                new.add((tuple(sorted(coefs)), k))
        for dp, kp, cp in ups:
            for dn, kn, cn in downs:
                a, b = -cn, cp            # a*p + b*n eliminates v
                coefs = {}
                for var in dp.keys() | dn.keys():
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
    """Linear facts in scope: index ranges, sizes >= 1, affine brackets, and the
    label ranges a statement before this one has checked (``with_checked_labels``).

    Extending a set of facts is lazy: the constraints are only built when a
    proof asks for them, because passes create a scope for every term they
    visit and most scopes are never asked anything.
    """

    __slots__ = ("_items", "_parent", "_ranges", "_pred", "_split", "_key", "_checked", "_up")

    def __init__(self, items=(), parent=None, ranges=(), pred=(), checked=None):
        self._items = tuple(items) if parent is None else None
        self._parent = parent
        self._ranges = tuple(ranges)
        self._pred = tuple(pred)
        self._split = None
        self._key = None
        if checked is None:
            checked = parent._checked if parent is not None else ()
        self._checked = checked
        # (the enclosing scope, kept for its index ranges when label ranges are known:
        # `_parent` is let go once the constraints are built)
        self._up = parent if checked else None

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

    def with_checked_labels(self, checked: tuple) -> "Facts":
        """These facts where every label of a form in `checked` ((label form, dim)
        pairs, `label_form`) lies in 0 .. dim - 1: a statement that runs whole before
        the one planned here has read those labels into that dimension, and a call
        with one outside it has stopped there with its error (domain.py)."""
        checked = tuple(sorted(set(self._checked) | set(checked), key=repr))
        return self if checked == self._checked else Facts(parent=self, checked=checked)

    def key(self) -> "FactsKey":
        """These facts as a dictionary key: their constraints, which are all a proof
        reads, so results that depend on a scope's facts can be remembered by it."""
        if self._key is None:
            self._key = FactsKey(self.items, self._checked)
        return self._key

    def proves(self, aff: Affine) -> bool:
        """Do the facts imply aff >= 0?"""
        goal = constraint(aff.scale(-1).shift(-1))                      # aff <= -1
        if self._split is None:
            items = self.items
            self._split = _SPLITS.compute(items, lambda: _Split(items))
        if self._checked:
            known = self._label_ranges(aff)
            if known:
                return self._split.infeasible_with(goal, known)
        return self._split.infeasible_with(goal)

    def _label_ranges(self, aff: Affine) -> tuple:
        """The constraints `0 <= g <= d - 1` on each label g that aff reads directly
        whose form over the indices in scope is checked into dimension d."""
        labels = [a for a, _ in aff.terms if a.__class__ is Gather]
        if not labels:
            return ()
        ranges: dict = {}
        scope = self
        while scope is not None:
            for name, d in scope._ranges:
                ranges.setdefault(name, d)
            scope = scope._up
        out = []
        for g in labels:
            form = label_form(Affine.of(g), ranges)
            for checked_form, d in self._checked:
                if checked_form == form:
                    out.append(constraint(Affine.of(g)))
                    out.append(constraint(Affine.dim(d).shift(-1) - Affine.of(g)))
        return tuple(out)


def label_form(aff: Affine, ranges: dict):
    """Index form `aff` with each index replaced by its range, so that two forms
    equal here take the same values over their ranges whatever their indices are
    called; None when an index occurs twice or has no known range."""
    seen: list[str] = []

    def shape(a: Affine):
        parts = []
        for atom, c in a.terms:
            cls = atom.__class__
            if cls is IndexVar:
                seen.append(atom.name)
                parts.append((("index", ranges.get(atom.name)), c))
            elif cls is SizeVar:
                parts.append((("size", atom.name), c))
            else:
                parts.append((("label", atom.name, tuple(shape(x) for x in atom.idx)), c))
        return (a.const, tuple(sorted(parts, key=repr)))

    form = shape(aff)
    if len(seen) != len(set(seen)) or any(ranges.get(n) is None for n in seen):
        return None
    return form


class FactsKey:
    """The constraints of a set of facts, hashed once (a scope's facts key every
    statement cost remembered in it)."""

    __slots__ = ("items", "checked", "_h")

    def __init__(self, items: tuple, checked: tuple = ()):
        self.items = items
        self.checked = checked
        self._h = hash((items, checked)) if checked else hash(items)

    def __hash__(self):
        return self._h

    def __eq__(self, other):
        return self is other or (other.__class__ is FactsKey and self._h == other._h
                                 and self.items == other.items
                                 and self.checked == other.checked)


def _range_constraints(indices) -> tuple:
    extra = []
    for name, dim in indices:
        v = Affine.of(IndexVar(name))
        extra.append(constraint(v))                                   # i >= 0
        extra.append(constraint(Affine.dim(dim) - v - Affine(1)))     # i <= d - 1
    return tuple(extra)


def _pred_constraints(pred) -> tuple:
    extra = []
    for atom in pred:
        if isinstance(atom, IdxCmp):
            if atom.op in (">=", "=="):
                extra.append(constraint(atom.aff))
            if atom.op == "==":
                extra.append(constraint(atom.aff.scale(-1)))
        elif isinstance(atom, AnyOf) and len(atom.alts) == 1:
            extra.extend(_pred_constraints(atom.alts[0]))
    return tuple(extra)


_PROOFS = Memo(50_000)


def _infeasible_group(group: frozenset) -> bool:
    return _PROOFS.compute(group, lambda: infeasible(group))


class _Split:
    """A scope's facts partitioned into independent groups, once per scope.

    Constraints that share no variable (directly or through others) can be
    decided apart: the system is infeasible exactly when one group is.  The
    groups a goal does not touch are the same for every question asked in one
    scope, so they are decided once (``_PROOFS``); the goal's group, the goal with
    the groups it shares a variable with, stays small even when a statement has
    hundreds of indices (Fourier-Motzkin is quadratic or worse in the number of
    variables it eliminates).  The groups are exactly those of the facts and the
    goal partitioned together."""

    __slots__ = ("where", "groups", "constant")

    def __init__(self, constraints):
        groups = _independent_groups(constraints)
        self.constant = frozenset()
        if groups and not next(iter(groups[-1]))[0]:
            self.constant = groups.pop()
        self.groups = groups
        self.where = {v: k for k, g in enumerate(groups) for c in g for v, _ in c[0]}

    def infeasible_with(self, goal, more: tuple = ()) -> bool:
        """Are the facts infeasible together with the constraint `goal` (and the
        constraints `more`, which join the goal's group)?"""
        coefs = goal[0]
        if not coefs and not more:
            touched = set()
            constant = self.constant | {goal}
        else:
            touched = {self.where[v] for c in (goal,) + more for v, _ in c[0]
                       if v in self.where}
            constant = self.constant
        for k, g in enumerate(self.groups):
            if k not in touched and _infeasible_group(g):
                return True
        if coefs or more:
            merged = frozenset().union(*(self.groups[k] for k in touched), (goal,), more)
            if _infeasible_group(merged):
                return True
        return bool(constant) and _infeasible_group(constant)


# Scopes' partitions by their facts (the same scope is entered by every pass).
_SPLITS = Memo(20_000)


def _independent_groups(constraints) -> list[frozenset]:
    """The constraints partitioned by the variables they share (union-find)."""
    parent: dict = {}

    def find(v):
        while parent[v] != v:
            parent[v] = parent[parent[v]]
            v = parent[v]
        return v

    constant = []
    for coefs, k in constraints:
        if not coefs:
            constant.append((coefs, k))
            continue
        first = coefs[0][0]
        parent.setdefault(first, first)
        for v, _ in coefs[1:]:
            parent.setdefault(v, v)
            a, b = find(first), find(v)
            if a != b:
                parent[a] = b
    groups: dict = {}
    for c in constraints:
        if c[0]:
            groups.setdefault(find(c[0][0][0]), set()).add(c)
    out = [frozenset(g) for g in groups.values()]
    if constant:
        out.append(frozenset(constant))
    return out


def project_out(constraints, names) -> list[Affine] | None:
    """Constraints (each `aff >= 0`) on the other variables that hold exactly where
    some integer values of the indices `names` satisfy all of `constraints`; None
    when that cannot be said exactly.

    Fourier-Motzkin elimination, one index at a time.  A lower bound `a v + A >= 0`
    and an upper bound `-b v + B >= 0` leave `b A + a B >= 0`, which is exact for
    integers when a or b is 1: with a = 1, v >= -A is an integer and v <= B / b has
    an integer solution above it exactly when -A <= B / b.  (With both above 1,
    2 v >= 1 and 2 v <= 1 have a real solution and no integer one: None.)  A
    constraint that reads an index through a gather depends on values: None."""
    cons = list(constraints)
    for name in names:
        v = IndexVar(name)
        lows, highs, rest = [], [], []
        for aff in cons:
            c = 0
            for a, k in aff.terms:
                if a == v:
                    c = k
                elif isinstance(a, Gather) and any(name in x.index_vars() for x in a.idx):
                    return None
            if c == 0:
                rest.append(aff)
            else:
                (lows if c > 0 else highs).append((aff, abs(c)))
        for lo, a in lows:
            for hi, b in highs:
                if a != 1 and b != 1:
                    return None
                rest.append(lo.scale(b) + hi.scale(a))        # v cancels
        cons = rest
    return cons


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


def value_range(aff: Affine, ranges: dict, facts: "Facts | None" = None
                ) -> tuple[Affine, Affine] | None:
    """Bounds of aff from index ranges (None with gathers) and, with `facts`, from the
    brackets among them that bound one index by sizes: under `[i < 2]`, `i + n - 2`
    ranges over `n - 2 .. n - 1`, not up to `2 * n - 3`.  Each index takes, of its
    range's end and its brackets' bounds, the one smallest with all sizes large (any
    of them is a bound; a message shows the one a reader recognises as the range)."""
    lo = Affine(aff.const)
    hi = Affine(aff.const)
    for atom, c in aff.terms:
        if isinstance(atom, Gather):
            return None
        if isinstance(atom, SizeVar):
            lo = lo + Affine.of(atom).scale(c)
            hi = hi + Affine.of(atom).scale(c)
            continue
        low, top = Affine(0), Affine.dim(ranges[atom.name]).shift(-1)
        if facts is not None:
            low, top = _bracket_bounds(atom.name, low, top, facts)
        if c > 0:
            lo, hi = lo + low.scale(c), hi + top.scale(c)
        else:
            lo, hi = lo + top.scale(c), hi + low.scale(c)
    return lo, hi


def _bracket_bounds(name: str, low: Affine, top: Affine, facts: "Facts") -> tuple:
    """Index `name`'s lower and upper bounds, `low` and `top` or a tighter one of the
    facts' constraints `+-name + (sizes) >= 0`, compared with all sizes large."""
    from .opt.engine import COST_SAMPLE_SIZES
    big = max(COST_SAMPLE_SIZES)

    def at_large(b: Affine) -> int:
        return b.const + sum(c * big for _, c in b.terms)
    lows, highs = [low], [top]
    key = "i:" + name
    for coefs, const in facts.items:
        mine = dict(coefs)
        a = mine.pop(key, 0)
        if abs(a) != 1 or any(not k.startswith("s:") for k in mine):
            continue
        rest = Affine.make(const, [(SizeVar(k[2:]), q) for k, q in mine.items()])
        # a * v + rest >= 0: v >= -rest, or v <= rest
        (lows if a > 0 else highs).append(rest.scale(-1) if a > 0 else rest)
    return max(lows, key=at_large), min(highs, key=at_large)


def covers(alternatives, facts: "Facts") -> bool:
    """Does one of the conjunctions of index brackets hold wherever the facts do?
    (Its negation, a conjunction of disjunctions of negated atoms, is infeasible in
    every one of its cases; at most COVER_CASES of them are tried.)"""
    choices = []
    for alt in alternatives:
        negated = []
        for x in alt:
            if not isinstance(x, IdxCmp) or x.op == "%":
                return False
            if x.op == ">=":
                negated.append((x.aff.scale(-1).shift(-1),))              # aff <= -1
            elif x.op == "==":
                negated += [(x.aff.shift(-1),), (x.aff.scale(-1).shift(-1),)]
            else:                                                          # aff == 0
                negated.append((x.aff, x.aff.scale(-1)))
        choices.append(negated)
    cases = 1
    for c in choices:
        cases *= len(c)
    if cases > COVER_CASES:
        return False
    for case in itertools.product(*choices):
        atoms = tuple(IdxCmp(">=", aff) for part in case for aff in part)
        if not facts.with_pred(atoms).proves(Affine(-1)):
            return False
    return True


# Facts of a program's size symbols, by the symbols: every pass over every program
# a rewrite builds asks for them, and the programs of one function share them.
_SIZE_FACTS = Memo(4096)


def size_facts(prog: Program) -> Facts:
    """size >= 1 for every size symbol of the program, and each derived size's
    definition (``den * d == numerator``, as two inequalities)."""
    sizes = tuple(prog.sizes())
    return _SIZE_FACTS.compute(sizes, lambda: _size_facts(sizes))


def _size_facts(sizes: tuple) -> Facts:
    facts = []
    for s in sizes:
        facts.append(constraint(Affine.of(SizeVar(s)).shift(-1)))
        e = sizexpr.parse(s)
        if e is not None:
            num = Affine.make(e.const, [(SizeVar(b), c) for b, c in e.terms])
            gap = Affine.of(SizeVar(s)).scale(e.den) - num
            facts.append(constraint(gap))
            facts.append(constraint(gap.scale(-1)))
    return Facts(facts)

