"""Symbolic cost: exact polynomials in the size symbols.

``cost(program)`` counts, for the loop nests of ``tensorlang.loops``, the
scalar operations executed plus one per tensor element written:

* each iteration of a term: one comparison per filter bracket, then the
  product ``c * n1 * ... * nk / d1 / ... / dm``, the d being the factors of
  negative power (k - 1 multiplications, the coefficient being an item
  unless it is +-1, and m divisions, the first one ``1.0 / d1`` when k is 0;
  a factor raised to an integer power p with 2 <= |p| <= 8 costs |p| - 1
  multiplications, to any other power but +-1 one operation), each builtin
  call its weight in the builtin table (one operation for every builtin
  today) plus the cost of its arguments, and one addition into the
  accumulator;
* each element of a statement's output: one write.

Loops are exact where their bounds are sizes only; a loop bounded by an outer
index (a band, a stride) counts the width of its bounds, an upper bound; and a
bracket that filters inside a loop counts the filtered work as if it ran.  So
the polynomial is exact for programs whose brackets all became loop bounds in
sizes, and an upper bound otherwise.
``Function.count_ops`` runs the same loops for real and must match or stay below.
"""
from __future__ import annotations

from dataclasses import replace
from collections import Counter
from contextlib import contextmanager
from contextvars import ContextVar
from fractions import Fraction
from functools import lru_cache

from . import sizexpr
from .builtins import BUILTINS
from .memo import Memo
from .bounds import Facts
from .bounds import constraint, size_facts
from .domain import holds_label
from .errors import TLCallError, TLShapeError
from .loops import (TermPlan, fuse_scatters, group_by_filters, plan_statement, plan_term,
                    reduce_plan)
from .ssa.ir import (Access, Affine, AnyOf, Apply, Group, IdxCmp, IndexVar, NotAtom, Program,
                     Reduce, Rel, SizeValue, SizeVar, Term, ValCmp, order_key)
from .ssa.traverse import UnknownNode, check_statements
from .ties import TIE_OPS, reduction_of, tie_sums, weighted


class MissingSizeError(TLCallError, KeyError):
    """Cost.evaluate was not given a size the polynomial is written in.  Also a
    KeyError, which is what a missing size raised before it had a name."""


class SizeValueError(TLShapeError, ValueError):
    """Cost.evaluate was given sizes at which a derived size has no value."""


class Cost:
    """A polynomial in size symbols with rational coefficients (ints where integral,
    which keeps the arithmetic of the cost-guarded rewrites fast)."""

    __slots__ = ("terms",)

    def __init__(self, terms=None):
        clean: dict = {}
        for mono, c in (terms or {}).items():
            if c != 0:
                clean[mono] = clean.get(mono, 0) + _coef(c)
        self.terms = {m: c for m, c in clean.items() if c != 0}

    @classmethod
    def _of(cls, terms: dict) -> "Cost":
        """From terms already merged; zero coefficients are dropped here."""
        out = cls.__new__(cls)
        out.terms = {m: _coef(c) for m, c in terms.items() if c != 0}
        return out

    # ---------------------------------------------------------- construction
    @staticmethod
    def const(c) -> "Cost":
        return Cost._of({(): c})

    @staticmethod
    def symbol(name: str) -> "Cost":
        return Cost._of({((name, 1),): 1})

    @staticmethod
    def of_affine(a: Affine) -> "Cost":
        terms = {(): a.const} if a.const else {}
        for atom, c in a.terms:
            if not isinstance(atom, SizeVar):
                raise ValueError("a loop bound must be in size symbols only")
            key = ((atom.name, 1),)
            terms[key] = terms.get(key, 0) + c
        return Cost._of(terms)

    # ---------------------------------------------------------- arithmetic
    def __add__(self, other) -> "Cost":
        other = _as_cost(other)
        if not other.terms:
            return self
        if not self.terms:
            return other
        terms = dict(self.terms)
        for m, c in other.terms.items():
            terms[m] = terms.get(m, 0) + c
        return Cost._of(terms)

    __radd__ = __add__

    def __mul__(self, other) -> "Cost":
        other = _as_cost(other)
        if len(other.terms) == 1 and () in other.terms:
            k = other.terms[()]
            return self if k == 1 else Cost._of({m: c * k for m, c in self.terms.items()})
        terms: dict = {}
        for m1, c1 in self.terms.items():
            for m2, c2 in other.terms.items():
                m = _mono_mul(m1, m2) if m1 and m2 else (m1 or m2)
                terms[m] = terms.get(m, 0) + c1 * c2
        return Cost._of(terms)

    __rmul__ = __mul__

    def __sub__(self, other) -> "Cost":
        return self + _as_cost(other) * -1

    def __eq__(self, other) -> bool:
        if isinstance(other, (int, float, Fraction)):
            other = Cost.const(other)
        return isinstance(other, Cost) and self.terms == other.terms

    def __hash__(self):
        return hash(tuple(sorted(self.terms.items())))

    # ---------------------------------------------------------- queries
    def degree(self, symbol: str | None = None) -> int:
        if not self.terms:
            return 0
        if symbol is None:
            return max(sum(e for _, e in m) for m in self.terms)
        # a derived size (n - k + 1, n / 2) has degree one in each size it is written in
        return max(sum(e for s, e in m if symbol in sizexpr.base_symbols(s))
                   for m in self.terms)

    def evaluate(self, /, **sizes) -> float:
        """The polynomial at these sizes; derived sizes are computed from their
        definitions unless given.  A size that is needed and not given (a size a
        derived one is made of too) raises MissingSizeError, which is also a KeyError;
        a derived size with no value at these sizes (`n / 2` at an odd n, `n - k`
        below 1) raises SizeValueError, which is also a ValueError."""
        missing = sorted({b for s in self.symbols() if s not in sizes
                          for b in sizexpr.base_symbols(s) if b not in sizes})
        if missing:
            needed = self.base_sizes()
            raise MissingSizeError(
                f"Cost.evaluate needs a value for size{'s' if len(missing) > 1 else ''} "
                f"{', '.join(missing)}",
                hint=f"this cost is written in {', '.join(needed) or 'no sizes'}; call "
                     f"evaluate({', '.join(f'{b}=...' for b in needed)})")
        try:
            sizes = sizexpr.bind(self.symbols(), sizes)
        except ValueError as e:
            raise SizeValueError(f"Cost.evaluate: {e}",
                                 hint="a derived size must be a whole number of at least 1 "
                                      "at the sizes given") from None
        total = 0
        for m, c in self.terms.items():
            v = c
            for s, e in m:
                x = sizes[s]
                v *= (x if isinstance(x, int) else Fraction(x)) ** e
            total += v
        return int(total) if total.denominator == 1 else float(total)

    def leading(self) -> "Cost":
        d = self.degree()
        return Cost({m: c for m, c in self.terms.items() if sum(e for _, e in m) == d})

    def symbols(self) -> list[str]:
        return sorted({s for m in self.terms for s, _ in m})

    def base_sizes(self) -> list[str]:
        """The user's sizes this cost is written in: a derived size such as `n - k + 1`
        contributes n and k (what `evaluate` asks for)."""
        return sorted({b for s in self.symbols() for b in sizexpr.base_symbols(s)})

    def __str__(self) -> str:
        if not self.terms:
            return "0"
        order = sorted(self.terms.items(), key=lambda mc: (-sum(e for _, e in mc[0]), mc[0]))
        out = ""
        for k, (m, c) in enumerate(order):
            neg = c < 0
            c = -c if neg else c
            mono = "*".join(sizexpr.display(s) if e == 1 else f"{sizexpr.display(s)}^{e}"
                            for s, e in m)
            cs = str(c) if c.denominator == 1 else f"({c})"
            if not mono:
                text = cs
            elif c == 1:
                text = mono
            else:
                text = f"{cs}*{mono}"
            if k == 0:
                out = ("-" if neg else "") + text
            else:
                out += (" - " if neg else " + ") + text
        return out

    def __repr__(self) -> str:
        return f"Cost({self})"


def _as_cost(x) -> Cost:
    return x if isinstance(x, Cost) else Cost.const(x)


def _coef(c):
    """An exact coefficient: an int when integral, else a Fraction."""
    if type(c) is int:
        return c
    f = c if type(c) is Fraction else Fraction(c)
    return f.numerator if f.denominator == 1 else f


def _mono_mul(a, b):
    d = dict(a)
    for s, e in b:
        d[s] = d.get(s, 0) + e
    return tuple(sorted(d.items()))


# ------------------------------------------------------------ the model
# Operations of a reduction beyond one comparison per point, as (per point, once):
# logsumexp's running sum adds exp(v - m) (a subtraction, an exp, an addition) at each
# point and ends with m + log(s) (a log, an addition).
REDUCTION_OPS = {"max": (0, 0), "min": (0, 0), "logsumexp": (3, 2)}


def power_ops(p: float) -> int:
    """Raising a factor to p; a negative power divides by the factor to the power -p
    (the division itself is counted by product_ops)."""
    p = abs(p)
    if p == 1:
        return 0
    if float(p).is_integer() and 2 <= p <= 8:
        return int(p) - 1
    return 1


def product_ops(term) -> int:
    """Joining a term's items: `c * n1 * ... * nk / d1 / ... / dm` costs k - 1
    multiplications (the coefficient is an item unless it is +-1) and m divisions;
    with no numerator item the first division is `1.0 / d1`."""
    num = sum(1 for _, p in term.factors if p > 0) + (0 if term.coeff in (1.0, -1.0) else 1)
    den = sum(1 for _, p in term.factors if p < 0)
    return max(num - 1, 0) + den


def as_label_check(t):
    """Term t of a statement nothing reads (a derivative's label check, domain.py;
    ssa.traverse.check_statements) as its kernel evaluates it (backend/labelcheck.py):
    each read through a label is range-checked and taken as 1.0, not read, so the
    product and powers of those reads are constants and cost nothing; what is left
    counts as any term's."""
    kept = tuple((f, p) for f, p in t.factors
                 if not (f.__class__ is Access and any(holds_label(x) for x in f.idx)))
    return t if len(kept) == len(t.factors) else Term(1.0, t.sums, t.pred, kept)


def _trips(d: Affine, q: int) -> Cost:
    return Cost.of_affine(d) * Fraction(1, q) + 1


class Choices:
    """The count `_cheapest` takes at each of its decisions, in the order the cost
    model makes them: `forced[k]` at the k-th (when it names a candidate; -1 for
    its own), its own choice after; `seen` records how many candidates each decision had."""

    def __init__(self, forced=()):
        self.forced = tuple(forced)
        self.seen: list[int] = []

    def pick(self, count: int, default: int) -> int:
        k = len(self.seen)
        self.seen.append(count)
        if k < len(self.forced) and 0 <= self.forced[k] < count:
            return self.forced[k]
        return default


_CHOICES: ContextVar = ContextVar("tensorlang_cost_choices", default=None)


@contextmanager
def choosing(choices: "Choices | None"):
    """Count loops with `choices` (None: the model's own) while the block runs.  Every
    candidate of a loop count bounds the iterations of the same loop nest, so any
    combination is an upper bound on the program's operations; plans are made, and
    statement costs remembered, only with the model's own choices."""
    token = _CHOICES.set(choices)
    try:
        yield
    finally:
        _CHOICES.reset(token)


def count_decisions(compute) -> tuple["Cost", list[int]]:
    """`compute()` (a cost computed by this model) with the model's own loop counts,
    and how many candidate counts each of its decisions had, in the order it made them
    (empty when no loop has more than one bound on its trips)."""
    probe = Choices()
    with choosing(probe):
        own = compute()
    return own, probe.seen


def cost_with_counts(compute, combo) -> "Cost":
    """`compute()` with the k-th loop-count decision forced to `combo[k]` (-1: the
    model's own)."""
    with choosing(Choices(combo)):
        return compute()


def count_choices(counts: list[int], limit: int) -> tuple[list[list[int]], bool]:
    """The choices of loop counts to try for decisions with `counts` candidates each
    (`count_decisions`), as `Choices` takes them, and whether they are all of them:
    every combination when there are at most `limit`, else each decision's candidates
    alone (`[-1] * k + [o]`, the model's own count everywhere but at decision k)."""
    from itertools import product
    total = 1
    for c in counts:
        total *= c
    if total <= limit:
        return [list(combo) for combo in product(*(range(c) for c in counts))], True
    return [[-1] * k + [o] for k, c in enumerate(counts) for o in range(c)], False


def alternative_costs(compute, limit: int) -> list["Cost"]:
    """`compute()` under other choices of its loop counts, the model's own first
    (`count_choices`).  Every one is an upper bound on the same operations, so at any
    size the least of them is the tightest bound the model gives (a band of width k in
    a range n counts k or n; which is less depends on the sizes, and a polynomial must
    take one)."""
    own, counts = count_decisions(compute)
    combos, every = count_choices(counts, limit)
    if every and len(combos) <= 1:
        return [own]
    return [own] + [cost_with_counts(compute, combo) for combo in combos]


def _cheapest(totals: list[Cost], ties: list, loose: list[bool], spare: int = 0) -> int:
    """The count the model takes among `totals`; the last `spare` of them (Loop.spare)
    only when `choosing` forces them."""
    own = len(totals) - spare
    best = _cheapest_by_rank(totals[:own], ties[:own], loose[:own])
    choices = _CHOICES.get()
    if choices is None or len(totals) < 2:
        return best
    return choices.pick(len(totals), best)


def _cheapest_by_rank(totals: list[Cost], ties: list, loose: list[bool]) -> int:
    """The position of the cheapest of `totals`: by `rank_costs` among the candidates
    that are not `loose` (`ties[k]` breaking ties; `ties[k][0]` is 0 for a band's
    pairs, 1 for a width, 2 for a loose count), unless a loose one is cheaper
    still with all sizes equal and large, of no higher degree nor power of one
    size.  A loose count trades one size for another (`v <= n - 1 - i` counts n
    where the range is k); it is taken for what it saves, a stride's half, never
    to break a tie, so a program and its adjoints count a loop nest alike."""
    strict = [k for k in range(len(totals)) if not loose[k]]
    if len(strict) == 1:
        best = strict[0]
    else:
        keys = rank_costs([totals[k] for k in strict])
        if any(ties[k][0] == 0 for k in strict):
            # A band's pairs count the loop nest as the statement it mirrors does;
            # a square there is the program's own (K[a, b] summed over a, b: k^2),
            # so the power of one size does not decide against them.
            keys = [key[:1] + key[2:] for key in keys]
        best = strict[min(range(len(strict)), key=lambda j: (keys[j], ties[strict[j]]))]
    others = [k for k in range(len(totals)) if loose[k]]
    if not others:
        return best
    # all sizes equal and large, or the nearest point a call can have (sample_points)
    point = sample_points({z for k in range(len(totals)) for z in totals[k].symbols()})[0]

    def at(c: Cost):
        return Fraction(c.evaluate(**point))
    shape = (totals[best].degree(), max_power(totals[best]))
    better = [k for k in others
              if totals[k].degree() <= shape[0] and max_power(totals[k]) <= shape[1]
              and at(totals[k]) < at(totals[best])]
    if not better:
        return best
    return min(better, key=lambda k: (at(totals[k]), ties[k]))


def loop_count(plan: TermPlan, context: Cost | None = None, depth: int | None = None) -> Cost:
    """The iterations of a term's loops: exact for loops bounded by sizes, an upper
    bound for loops whose bounds move with an outer index.

    Such a loop has several bounds on its trip count, none provably the least (a
    band of width k inside a range n: k when k <= n, else n).  Each is chosen to
    make the iterations of the enclosing loops (`context`) times this term's
    loops cheapest by `rank_costs`: a correlation tap loop counts its k taps
    inside a loop over n, a band of width b inside a loop over n counts b.
    The looser candidates (`Loop.loose`) come last on a tie."""
    out = Cost.const(1)
    outer = Cost.const(1) if context is None else context
    for lp in plan.loops[:depth]:
        if not lp.widths:
            out = out * (Cost.of_affine(lp.hi) - Cost.of_affine(lp.lo) + 1)
            continue
        options = ([(_trips(d, q), (1, order_key(d), q)) for d, q in lp.widths]
                   + [(_trips(d, q), (2, order_key(d), q)) for d, q in lp.loose]
                   + [(_trips(d, q), (3, order_key(d), q)) for d, q in lp.spare])
        # ties go by the width's own structure (sizes and numbers), never by the
        # order the guards happened to come in
        pick = _cheapest([outer * out * c for c, _ in options], [t for _, t in options],
                         [t[0] >= 2 for _, t in options], len(lp.spare))
        out = out * options[pick][0]
    return out


def loop_total(plan: TermPlan, gens: tuple) -> Cost:
    """The iterations of a gather term's loops summed over every element of its
    statement (generators `gens`, (name, dim) pairs): the elements times
    `loop_count`, except that a loop tied to a generator (`Loop.pairs`,
    `Loop.loose_pairs`) may count its pairs with that generator instead, its range
    times what it leaves of the generator's, in place of the generator's range
    times its own trips.  Each loop takes the cheapest count by `rank_costs`; on a
    tie a band's pairs come first (the summed index of an adjoint runs over the
    generator of the statement it was transposed from, whose count that is),
    then the widths, then the looser candidates, then by structure."""
    remaining = {g: Cost.of_affine(Affine.dim(d)) for g, d in gens}
    order = [g for g, _ in gens]
    out = Cost.const(1)

    def free(skip=None) -> Cost:
        c = Cost.const(1)
        for g in order:
            if g in remaining and g != skip:
                c = c * remaining[g]
        return c
    for lp in plan.loops:
        span = Cost.of_affine(lp.hi) - Cost.of_affine(lp.lo) + 1
        if not lp.widths:
            out = out * span
            continue
        options = [(span * _trips(d, c), g, (0, order_key(d), c, order.index(g)))
                   for g, d, c in lp.pairs if g in remaining]
        options += [(_trips(d, q), None, (1, order_key(d), q)) for d, q in lp.widths]
        options += [(_trips(d, q), None, (2, order_key(d), q)) for d, q in lp.loose]
        options += [(span * _trips(d, c), g, (2, order_key(d), c, order.index(g)))
                    for g, d, c in lp.loose_pairs if g in remaining]
        pick = _cheapest([free(g) * out * trips for trips, g, _ in options],
                         [t for _, _, t in options], [t[0] == 2 for _, _, t in options])
        trips, g, _ = options[pick]
        out = out * trips
        if g is not None:
            del remaining[g]
    return free() * out


def max_power(c: Cost) -> int:
    """The highest power of any single size symbol in c (n^2 -> 2, n*k -> 1)."""
    return max((e for m in c.terms for _, e in m), default=0)


def sample_points(symbols) -> list[dict]:
    """Size assignments at which costs are compared: all sizes equal and large, each
    size large with the others small and each small with the others large, all
    equal and small.  As a set it is the same whatever the sizes are called.

    Each is a point a call can have: where a derived size would be below 1 there
    (`n - 2 * k + 2` with n = k), the sizes it is written in are scaled up, each by
    1 to 4, the least in all (`admissible_near`), and a point that cannot be so
    mended is left out.  At such a point a count in the derived size and one in
    its symbols disagree (the first clamped to 1, the second negative), and a band
    of width k inside a range n - 2 * k + 2 looked wider than the range."""
    symbols, derived = sizexpr.split(symbols)
    return _SAMPLE_POINTS.compute((tuple(symbols), tuple(derived)),
                                  lambda: _sample_points(symbols, derived))


def _sample_points(symbols: list, derived: list) -> list[dict]:
    from .opt.engine import COST_SAMPLE_SIZES
    small, large = min(COST_SAMPLE_SIZES), max(COST_SAMPLE_SIZES)
    points = [{z: large for z in symbols}]
    for s in symbols:
        points.append({z: (large if z == s else small) for z in symbols})
        points.append({z: (small if z == s else large) for z in symbols})
    points.append({z: small for z in symbols})
    if derived:
        mended = []
        for p in points:
            mended.extend([p] if sizexpr.admissible(p, derived) else admissible_near(p, derived))
        points = mended or points
    # Derived sizes follow the sizes they are written in (see sizexpr.complete).
    return [sizexpr.complete(p, derived) for p in points]


def admissible_near(point: dict, derived: list, most: int = 4) -> list[dict]:
    """`point` with the sizes the derived sizes are written in multiplied by 1 to 4
    each, the least multipliers in sum that make every derived size at least 1: every
    such point, in the order of the multipliers with the sizes by name (a caller that
    compares costs takes them all, so no name settles a tie); none when no
    multipliers do (or more than `most` sizes would vary)."""
    import itertools
    moving = sorted({s for d in derived for s in sizexpr.parse(d).symbols()})
    if len(moving) > most:
        return []
    found: dict = {}
    for scales in itertools.product(range(1, 5), repeat=len(moving)):
        trial = dict(point)
        trial.update({s: point[s] * q for s, q in zip(moving, scales)})
        if sizexpr.admissible(trial, derived):
            found.setdefault(sum(scales), []).append(trial)
    return found[min(found)] if found else []


# sample_points by the sizes, plain and derived.
_SAMPLE_POINTS = Memo(4096)


def nowhere_costlier(a: Cost, b: Cost) -> bool:
    """Is cost `a` no more than `b` at every size assignment of `sample_points` (skewed
    ones included)?"""
    points = sample_points(set(a.symbols()) | set(b.symbols()))
    return all(a.evaluate(**p) <= b.evaluate(**p) for p in points)


def rank_costs(costs: list[Cost]) -> list[tuple]:
    """A sort key per candidate cost polynomial, cheapest first, that no name decides.

    In order: the total degree; the highest power of a single size (n * k before
    n^2: the sizes are independent, and a derivative should not square one the
    program only multiplied); the value with all sizes equal and large; the worst
    ratio to the best candidate over the skewed assignments of `sample_points`;
    the value with all sizes small.  Equal keys mean candidates no comparison
    here can tell apart; callers break such ties by structure."""
    symbols = set()
    for c in costs:
        symbols |= set(c.symbols())
    points = sample_points(symbols)
    values = [[Fraction(c.evaluate(**p)) for p in points] for c in costs]
    best = [min(v[k] for v in values) for k in range(len(points))]

    def worst_ratio(v) -> Fraction:
        out = Fraction(1)
        for x, b in zip(v, best):
            if b > 0:
                out = max(out, x / b)
            elif x > 0:
                out = max(out, Fraction(10 ** 18))
        return out
    return [(c.degree(), max_power(c), v[0], worst_ratio(v), v[-1])
            for c, v in zip(costs, values)]


# A statement's cost depends only on the statement and the program's size
# symbols; cost-guarded rewrites compare whole programs that differ in a few
# statements, so the others are remembered.
_STATEMENT_COSTS = Memo(20_000)
# Within a statement, its terms' plans and the costs of its groups of terms, by the
# terms, the generators and the size facts (see CostModel.statement_of).
_TERM_PLANS = Memo(50_000)
_TERM_COSTS = Memo(50_000)
# CostModel.scatter_loop_names by statement (object) and size facts.
_LOOP_NAMES = Memo(4096)


def forget_cached_costs() -> None:
    """Drop remembered statement costs (needed only if the builtin table's weights change)."""
    _STATEMENT_COSTS.clear()
    _PROGRAM_COSTS.clear()
    _TERM_PLANS.clear()         # (a strided plan is chosen by cost)
    _TERM_COSTS.clear()
    _LOOP_NAMES.clear()
    _PASS_SAVINGS.clear()


def element_count(indices) -> Cost:
    """The number of elements of a statement with these (index, dim) pairs."""
    elements = Cost.const(1)
    for _, d in indices:
        elements = elements * Cost.of_affine(Affine.dim(d))
    return elements


# Step programs' facts, by their sizes, step symbols and leading ranges: one Facts
# object for every costing of a group, as size_facts gives one per set of sizes.
_STEP_FACTS = Memo(4096)


def step_facts(step_prog: Program, symbols, dims) -> Facts:
    """The size facts of a recurrence's step program with what a step symbol is: the
    step S of leading range d lies in 1 .. d.  Without them a guard that bounds an
    index by the step (`[p <= S - 1]`) leaves no box the certificate may count by
    (CostModel.guarded needs S >= 1 to prove the box's width)."""
    base = size_facts(step_prog)

    def compute():
        extra = []
        for sym, d in zip(symbols, dims):
            step = Affine.of(SizeVar(sym))
            extra += [constraint(step.shift(-1)), constraint(Affine.dim(d) - step)]
        return Facts(base.items + tuple(extra))
    return _STEP_FACTS.compute((tuple(step_prog.sizes()), tuple(symbols), tuple(dims)), compute)


class CostModel:
    def __init__(self, prog: Program | None, base: Facts | None = None):
        self.prog = prog
        self.base = size_facts(prog) if base is None else base

    def program(self) -> Cost:
        from .ssa.recur import recurrences
        total = Cost()
        sizes = tuple(self.prog.sizes())
        try:
            groups = recurrences(self.prog)
        except ValueError:
            # (a rule's trial that breaks a group, which the engine then rejects)
            groups = ()
        members = {m for g in groups for m in g.members}
        forced = _CHOICES.get() is not None
        ties = tie_sums(self.prog)
        checks = check_statements(self.prog)
        for s in self.prog.stmts:
            if s.name in members:
                continue
            if s.name in checks:
                s = replace(s, body=tuple(as_label_check(t) for t in s.body))
            if s.name in ties:
                m, weight = ties[s.name]
                m = self.prog.stmt(m)
                total = total + (self.tie_sum(s, m, weight) if forced else _STATEMENT_COSTS.compute(
                    ("ties", s, m, sizes), lambda s=s, m=m, w=weight: self.tie_sum(s, m, w)))
                continue
            if forced:
                total = total + self.statement(plan_statement(s, self.base))
                continue
            total = total + _STATEMENT_COSTS.compute((s, sizes), lambda s=s: self.statement_of(s))
        for g in groups:
            if forced:
                total = total + self.recurrence(g)
                continue
            key = (tuple(self.prog.stmt(m) for m in g.members), g.lead, g.steps, sizes)
            total = total + _STATEMENT_COSTS.compute(key, lambda g=g: self.recurrence(g))
        return total

    def recurrence(self, g) -> Cost:
        """A recurrence group, counted as the backends run it: step by step, each
        step every member's step statement (recur.step_program) with the loop plans
        of that program, which the Numba step kernels and the op counter share.

        A guard on the leading indices alone (`[t == 0]`, `[t >= 1]`, a test of the
        step symbol S = t + 1 in a step) is tested where the step kernel tests it,
        at each element of every step, but the work it guards runs only in the
        steps where it holds: that work is counted over those steps (`_step_box`),
        not over all of them. A step's cost is a polynomial in the sizes and the
        step symbols, which appear only where a loop bound moves with the step; the
        sum over the steps adds their powers up exactly (`_sum_over_steps`)."""
        from .ssa.recur import step_program
        symbols = [f"step'{q}" for q in range(g.lead)]
        prog = step_program(self.prog, g, symbols)
        dims = tuple(d for _, d in self.prog.stmt(g.members[0]).indices[:g.lead])
        model = CostModel(prog, step_facts(prog, symbols, dims))
        total = Cost()
        if _CHOICES.get() is not None or self.base is not size_facts(self.prog):
            for st in prog.stmts:
                total = total + self.step_member(model, st, symbols, dims)
            return total
        # A member's share depends only on its step statement, the step symbols, the
        # leading ranges and the size symbols (which give both programs' size facts):
        # a rewrite of one member leaves the others' shares as they were.
        context = (tuple(symbols), dims, tuple(prog.sizes()), tuple(self.prog.sizes()))
        for st in prog.stmts:
            total = total + _STATEMENT_COSTS.compute(
                ("step", st, context),
                lambda st=st: self.step_member(model, st, symbols, dims))
        return total

    def step_member(self, model: "CostModel", st, symbols, dims) -> Cost:
        """One member's share of its group's cost (see ``recurrence``): its step
        statement `st` of the step program that `model` costs, over every step."""
        from .loops import StmtPlan
        ranges = [Affine.dim(d) for d in dims]
        everywhere = [(Affine(1), top) for top in ranges]
        total = Cost()
        if _CHOICES.get() is None:
            gathers = model._plans_of(st)[0]
            total = total + _sum_over_steps(model.statement_of(st), symbols, everywhere)
        else:
            sp = plan_statement(st, model.base)
            gathers = sp.gather_terms
            total = total + _sum_over_steps(model.statement(sp), symbols, everywhere)
        elements = element_count(st.indices)
        for gate, plans in _step_gated(gathers, symbols).items():
            box = _step_box(gate, symbols, ranges, self.base)
            if box is None:
                continue
            # Without the step guards, the work the steps where they hold do: the
            # term's other filters (a value comparison `[w[a] > 0.0]` beside `[t ==
            # T - 1]`) are tested in those steps only too.
            bare = tuple(replace(tp, filters=tuple(a for a in tp.filters if a not in gate),
                                 outer_filters=tuple(a for a in tp.outer_filters
                                                     if a not in gate))
                         for tp in plans)
            if _CHOICES.get() is None:
                work = model.unfiltered_work(st, bare, elements)
            else:
                work = model.statement(StmtPlan(st, bare, ())) - elements
            total = total - _sum_over_steps(work, symbols, everywhere) \
                + _sum_over_steps(work, symbols, box)
        return total

    def tie_sum(self, s, m, weight) -> Cost:
        """Statement `s`, a sum of `weight` over the ties of max statement `m`
        (ties.tie_sums), computed in m's pass: one write per element and, per point
        of m's reduction, `TIE_OPS` (an equality test and an addition) and the
        weight's product (counted at every point, an upper bound: the kernel
        evaluates it where the entry ties or beats the best so far)."""
        elements = Cost.const(1)
        for _, d in m.indices:
            elements = elements * Cost.of_affine(Affine.dim(d))
        f = reduction_of(m)
        # The pass runs where m's brackets hold: at the elements its own plan visits
        # when they bound its loops (`[v >= 2 and v <= m + 1] * max[..](..)` over
        # v: n visits m values of v), its reduction planned under them.
        runs = elements
        sp = plan_statement(m, self.base)
        if sp.scatter_terms and not sp.gather_terms:
            runs = loop_count(sp.scatter_terms[0])
        facts = self.base.with_ranges(m.indices).with_pred(m.body[0].pred)
        tp = reduce_plan(f, facts)
        points = loop_count(tp, runs)
        per = Cost.const(TIE_OPS)
        if weighted(weight):
            inner = facts.with_ranges(f.over).with_pred(f.where)
            per = per + self.product(weight, inner, runs * points)
        return elements + runs * points * per

    def statement(self, sp) -> Cost:
        s = sp.stmt
        elements = element_count(s.indices)
        facts = self.base.with_ranges(s.indices)
        total = elements                                  # one write per element
        for group in group_by_filters(sp.gather_terms):
            total = total + self.gather_group(group, facts, s.indices, elements)
        for tp in sp.scatter_terms:
            total = total + self.term(tp, self.base.with_ranges(s.indices), dims=s.indices)
        return total

    def gather_group(self, group, facts: Facts, gens: tuple, elements: Cost) -> Cost:
        """The cost of a group of gather term plans (`group_by_filters`) over all
        `elements` of their statement (generators `gens`, their ranges in `facts`)."""
        boxed = self.guarded(group, facts, gens, elements)
        if boxed is not None:
            return boxed
        if len(group) == 1:
            return self.term_total(group[0], facts, gens, elements)
        # loop-free terms under the same brackets: the brackets are tested once
        inner = facts.with_pred(group[0].term.pred)
        per = Cost()
        for atom in group[0].filters:
            per = per + self.atom(atom, inner, elements)
        for tp in group:
            per = per + self.product(tp.term, inner, elements) + 1
        return elements * per

    def statement_of(self, s) -> Cost:
        """`statement(plan_statement(s, self.base))`, from remembered parts.

        A cost-guarded rewrite costs statements that differ from ones costed before
        in a few terms (a factoring trial keeps every term of the statement it
        factors but the ones it takes out), so a statement's cost is put together
        from the costs of its groups of gather terms and of its scatter terms, each
        remembered.  A term's plan is a function of the term, the statement's
        generators and the size facts (`self.base`), and so is a group's or a
        scatter term's cost given the terms: the keys are those (the terms by
        value; their spans, which no cost reads, are not compared).  With loop
        counts forced (`choosing`) nothing is remembered."""
        if _CHOICES.get() is not None:
            return self.statement(plan_statement(s, self.base))
        if s.checked_labels:
            checked = self.base.with_checked_labels(s.checked_labels)
            if checked is not self.base:
                return CostModel(self.prog, checked).statement_of(s)
        base, gens = self.base.key(), s.indices
        facts = self.base.with_ranges(gens)
        gathers, scatters = self._plans_of(s)
        elements = element_count(gens)
        total = elements                                  # one write per element
        for group in group_by_filters(gathers):
            total = total + _TERM_COSTS.compute(
                (tuple(tp.term for tp in group), gens, base),
                lambda group=group: self.gather_group(group, facts, gens, elements))
        if scatters:
            inside = self.base.with_ranges(gens)
            for passed in fuse_scatters(scatters, gens, self.base):
                for tp in passed:
                    # (a plan fuse_scatters made again is that of its renamed term)
                    total = total + _TERM_COSTS.compute(
                        ("scatter", tp.term, gens, base),
                        lambda tp=tp: self.term(tp, inside, dims=gens))
        return total

    def term_share(self, t, gens: tuple):
        """(the cost term t adds to `statement_of` of a statement with generators
        `gens`, the names of the loops its generators are computed in: (depth, names)
        or None), or None when the cost depends on the statement's other terms.

        A gather term with loops, solved generators or no filters is a group of its own
        (`group_by_filters`); a gather term with filters only shares them.  A scatter
        term is costed in the pass `fuse_scatters` puts it in, planned again with the
        loops its generators are computed in named as the pass's first term names
        them; where every scatter term of the statement with those loops names them
        alike (`scatter_loop_names`), that is its own plan, whichever pass it is in.
        Costed and remembered as `statement_of` costs them."""
        if _CHOICES.get() is not None:
            return None
        base = self.base.key()
        facts = self.base.with_ranges(gens)
        tp = self._plan_of(t, gens)
        if tp.scatter:
            depth = tp.solve_depth
            names = (depth, tuple(lp.var for lp in tp.loops[:depth])) if depth else None
            return _TERM_COSTS.compute(("scatter", tp.term, gens, base),
                                       lambda: self.term(tp, facts, dims=gens)), names
        if tp.filters and not tp.loops and not tp.solved:
            return None
        elements = element_count(gens)
        return _TERM_COSTS.compute(((tp.term,), gens, base),
                                   lambda: self.gather_group([tp], facts, gens, elements)), None

    def shared_filters(self, t, gens: tuple) -> frozenset | None:
        """The brackets a gather term t with filters only (no loops, no solved
        generators) shares with the statement's other such terms (`group_by_filters`
        groups them by these), or None for any other term."""
        if _CHOICES.get() is not None:
            return None
        tp = self._plan_of(t, gens)
        if tp.scatter or tp.loops or tp.solved or not tp.filters:
            return None
        return frozenset(tp.filters)

    def filter_group_cost(self, s, filters: frozenset) -> Cost:
        """What `statement_of(s)` adds for the group of s's gather terms under the
        brackets `filters` (`shared_filters`): nothing when there is none.  The group
        is its terms in s's order, as `group_by_filters` makes it, and its cost is
        remembered under the key `statement_of` uses."""
        gens = s.indices
        group = []
        for t in s.body:
            tp = self._plan_of(t, gens)
            if not (tp.scatter or tp.loops or tp.solved) and tp.filters \
                    and frozenset(tp.filters) == filters:
                group.append(tp)
        if not group:
            return Cost()
        facts = self.base.with_ranges(gens)
        return _TERM_COSTS.compute(
            (tuple(tp.term for tp in group), gens, self.base.key()),
            lambda: self.gather_group(group, facts, gens, element_count(gens)))

    def scatter_loop_names(self, s) -> tuple | None:
        """((depth, loop names), ...) of s's scatter terms that compute their generators
        inside loops, one per depth, when all of a depth name their loops alike (then no
        term is renamed to join a pass); else None.  Remembered for the statement object
        and the size facts."""
        return _LOOP_NAMES.for_object(s, (s, self.base.key()), lambda: self._loop_names_of(s))

    def _loop_names_of(self, s) -> tuple | None:
        """`scatter_loop_names`, computed."""
        out: dict = {}
        for t in s.body:
            tp = self._plan_of(t, s.indices)
            depth = tp.solve_depth if tp.scatter else 0
            if depth and out.setdefault(depth, tuple(lp.var for lp in tp.loops[:depth])) \
                    != tuple(lp.var for lp in tp.loops[:depth]):
                return None
        return tuple(out.items())

    def _plan_of(self, t, gens: tuple):
        """t's plan in a statement with generators `gens`, remembered (`_plans_of`)."""
        return _TERM_PLANS.compute(
            (t, gens, self.base.key()),
            lambda: self._plan_in_statement(t, gens, self.base.with_ranges(gens)))

    def unfiltered_work(self, s, bare: tuple, elements: Cost) -> Cost:
        """`statement(StmtPlan(s, bare, ())) - elements`: the work of s's gather term
        plans `bare` with their filters taken off (`step_member`), each alone in its
        group (no filters to share), its cost remembered by its term as in
        `statement_of`."""
        base, gens = self.base.key(), s.indices
        facts = self.base.with_ranges(gens)
        total = Cost()
        for tp in bare:
            total = total + _TERM_COSTS.compute(
                ("unfiltered", tp.term, gens, base),
                lambda tp=tp: self.gather_group([tp], facts, gens, elements))
        return total

    def _plans_of(self, s) -> tuple[list, list]:
        """The plans of s's gather terms and of its scatter terms (before fusion), in
        order, as `plan_statement(s, self.base)` makes them, each remembered (see
        `statement_of`)."""
        base, gens = self.base.key(), s.indices
        facts = self.base.with_ranges(gens)
        gathers, scatters = [], []
        for t in s.body:
            tp = _TERM_PLANS.compute((t, gens, base),
                                     lambda t=t: self._plan_in_statement(t, gens, facts))
            (scatters if tp.scatter else gathers).append(tp)
        return gathers, scatters

    def _plan_in_statement(self, t, gens: tuple, facts: Facts):
        """t's plan as `plan_statement` makes it in a statement with generators `gens`
        (their ranges in `facts`)."""
        tp = plan_term(t, gens, self.base, top=True)
        return tp if tp.scatter else plan_term(t, gens, facts, top=False)

    def guarded(self, group, facts: Facts, gens: tuple, elements: Cost) -> Cost | None:
        """Gather terms (a group with the same brackets, or one term) under guards that
        bound a generator by other sizes (`[k >= 2 and k <= m + 1]` on `x_bar[k: n]`,
        the adjoint of the shifted read x[i + 2]; `[2 * k < n]` on `P_bar[k: T]`): the
        kernel tests the guards at every element and does the work only where they
        hold, so the work is bounded by the box of generator values they leave, `m`
        here, as well as by the range.  Neither is provably the least (m may exceed
        n): the model counts the range, and `choosing` may take the box (the
        certificate tries it, see certificate._another_count_holds).  A box that
        differs from the range by a constant only (`[k >= 1]`) is not offered.  None
        when no guard leaves a box (or a term counts band pairs)."""
        from .loops import Bound, affine_bounds
        first = group[0]
        atoms = first.filters + first.outer_filters
        if len(group) > 1 and any(tp.loops or tp.outer_filters for tp in group):
            return None
        # A loop that counts band pairs with a generator (Loop.pairs) is counted by
        # loop_total, which the box cannot follow: there the boxes are only spares the
        # certificate may take, and the model's own count is the ordinary one (None).
        paired_loops = any(lp.pairs or lp.loose_pairs for tp in group for lp in tp.loops)
        ends = self.base
        guards, options = [], []
        for g, d in gens:
            lows, highs, mine = [], [], []
            for a in atoms:
                if a.__class__ is not IdxCmp or a.op != ">=" or a.aff.index_vars() != {g}:
                    continue
                for side, b in affine_bounds(a, g, set()):
                    (lows if side == "lo" else highs).append(b)
                mine.append(a)
            if not mine:
                continue
            top = Affine.dim(d)
            # a guard's end where it is provably inside the range, else both ends
            lows = [b for b in lows if ends.proves(b.aff)] or lows + [Bound(Affine(0))]
            highs = ([b for b in highs if ends.proves(top.shift(-1).scale(b.q) - b.aff)]
                     or highs + [Bound(top.shift(-1))])
            found = []
            for lb in lows:
                for hb in highs:
                    # floor(h / qh) - ceil(l / ql) + 1 <= (ql h - qh l) / (ql qh) + 1
                    q = lb.q * hb.q
                    width = hb.aff.scale(lb.q) - lb.aff.scale(hb.q)
                    count = Cost.of_affine(width) * Fraction(1, q) + 1
                    if (count - Cost.of_affine(top)).degree() == 0 \
                            or not ends.proves(width.shift(q)) or count in found:
                        continue
                    found.append(count)
            if found:
                guards.extend(a for a in mine if not any(a is x for x in guards))
                options.append((g, found))
        bands = self._generator_bands(atoms, gens, {g for g, _ in options})
        for _, _, mine, _ in bands:
            guards.extend(a for a in mine if not any(a is x for x in guards))
        if not options and not bands:
            return None
        rest = tuple(a for a in atoms if not any(a is x for x in guards))
        tests = Cost()
        for a in guards:
            tests = tests + self.atom(a, facts, elements)
        stripped = [replace(tp, filters=tuple(a for a in tp.filters if a in rest),
                            outer_filters=tuple(a for a in tp.outer_filters if a in rest))
                    for tp in group]
        inner = facts.with_pred(first.term.pred)

        def work(box: Cost) -> Cost:
            if len(group) == 1:
                return box * self.term(stripped[0], facts, box)
            per = Cost()
            for a in rest:
                per = per + self.atom(a, inner, box)
            for tp in stripped:
                per = per + self.product(tp.term, inner, box) + 1
            return box * per
        chosen = {g: Cost.of_affine(Affine.dim(d)) for g, d in gens}

        paired = {}

        def box() -> Cost:
            c = Cost.const(1)
            for g, _ in gens:
                c = c * chosen[g]
            for pair in paired.values():
                c = c * pair
            return c
        boxed = False
        for g, counts in options:
            # the range is the model's own count, the boxes spares (so no totals to rank)
            counts = [chosen[g]] + counts
            pick = _cheapest([Cost()] * len(counts), [(1,)] * len(counts),
                             [False] * len(counts), len(counts) - 1)
            chosen[g] = counts[pick]
            boxed = boxed or pick > 0
        for g1, g2, _, counts in bands:
            counts = [chosen[g1] * chosen[g2]] + counts
            pick = _cheapest([Cost()] * len(counts), [(1,)] * len(counts),
                             [False] * len(counts), len(counts) - 1)
            if pick:
                paired[(g1, g2)] = counts[pick]
                chosen[g1] = chosen[g2] = Cost.const(1)
                boxed = True
        if (paired_loops or not options) and not boxed:
            return None             # (the model's own count, as without the bands)
        return elements * tests + work(box())

    def _generator_bands(self, atoms, gens: tuple, alone: set) -> list:
        """[(g1, g2, guards, counts)] for guards `[L <= g1 - g2 <= U]` between two
        generators (`[0 <= k - l < p]` on `B_bar[k: q, l: p]`), U - L in sizes: at most
        U - L + 1 values of either meet each value of the other, so the pairs where
        the guards hold number at most that times either one's range (the counts,
        spares of `guarded`).  Generators boxed alone (`alone`) are left out."""
        out = []
        used = set(alone)
        for x, (g1, d1) in enumerate(gens):
            for g2, d2 in gens[x + 1:]:
                if g1 in used or g2 in used:
                    continue
                lows, highs, mine = [], [], []
                for a in atoms:
                    if a.__class__ is not IdxCmp or a.op != ">=" \
                            or a.aff.index_vars() != {g1, g2}:
                        continue
                    coeff = {x.name: c for x, c in a.aff.terms if x.__class__ is IndexVar}
                    rest = [(x, c) for x, c in a.aff.terms if x.__class__ is not IndexVar]
                    if set(coeff) != {g1, g2} \
                            or abs(coeff[g1]) != 1 or coeff[g1] + coeff[g2] != 0 \
                            or any(x.__class__ is not SizeVar for x, _ in rest):
                        continue
                    rest = Affine.make(a.aff.const, rest)
                    # c (g1 - g2) + rest >= 0
                    (lows if coeff[g1] > 0 else highs).append(
                        rest.scale(-1) if coeff[g1] > 0 else rest)
                    mine.append(a)
                counts = []
                for lo in lows:
                    for hi in highs:
                        width = hi - lo
                        if not self.base.proves(width):
                            continue
                        per = Cost.of_affine(width) + 1
                        for d in (d2, d1):
                            c = per * Cost.of_affine(Affine.dim(d))
                            if c not in counts:
                                counts.append(c)
                if counts:
                    out.append((g1, g2, mine, counts))
                    used |= {g1, g2}
        return out

    def term(self, tp: TermPlan, facts: Facts, context: Cost | None = None,
             dims: tuple = ()) -> Cost:
        """Cost of all iterations of one planned term (per enclosing iteration);
        `context` counts the enclosing iterations (see loop_count); `dims`, the
        (generator, dim) pairs of a scatter term's statement (see _solved_counts)."""
        t = tp.term
        inner = facts.with_ranges(t.sums).with_pred(t.pred)
        solved = _solved_counts(tp, dims) if dims and tp.scatter else ()
        if solved:
            first = tp.loops[0]
            rest = loop_count(replace(tp, loops=tp.loops[1:]), context)
            options = [(Cost.of_affine(first.hi) - Cost.of_affine(first.lo) + 1) * rest]
            options += [c * rest for c in solved]
            # the range is the model's own count, the solved generators' spares
            loops = options[_cheapest([Cost()] * len(options), [(1,)] * len(options),
                                      [False] * len(options), len(options) - 1)]
        else:
            loops = loop_count(tp, context)
        within = loops if context is None else context * loops
        per = Cost()
        for atom in tp.filters:
            per = per + self.atom(atom, inner, within)
        per = per + self.product(t, inner, within) + 1     # + accumulate
        once = Cost()
        for atom in tp.outer_filters:
            once = once + self.atom(atom, facts, context)
        if tp.staged:
            # tested once per iteration of the loops the solved generators need
            outer = loop_count(tp, context, tp.solve_depth)
            staged = Cost()
            for atom in tp.staged:
                staged = staged + self.atom(atom, inner, outer)
            once = once + outer * staged
        return once + loops * per

    def term_total(self, tp: TermPlan, facts: Facts, gens: tuple, elements: Cost) -> Cost:
        """Cost of a gather term over all `elements` of its statement (generators
        `gens`, their ranges in `facts`): `elements * term(...)`, with its loops
        counted by `loop_total`."""
        if not any(lp.pairs or lp.loose_pairs for lp in tp.loops):
            return elements * self.term(tp, facts, elements)
        t = tp.term
        inner = facts.with_ranges(t.sums).with_pred(t.pred)
        loops = loop_total(tp, gens)
        per = Cost()
        for atom in tp.filters:
            per = per + self.atom(atom, inner, loops)
        per = per + self.product(t, inner, loops) + 1     # + accumulate
        once = Cost()
        for atom in tp.outer_filters:
            once = once + self.atom(atom, facts, elements)
        return elements * once + loops * per

    def product(self, t, facts: Facts, context: Cost | None = None) -> Cost:
        out = Cost.const(product_ops(t))
        for f, p in t.factors:
            out = out + power_ops(p)
            if isinstance(f, Apply):
                out = out + BUILTINS[f.fn].cost
                for a in f.args:
                    out = out + self.body(a, facts, context)
            elif isinstance(f, Group):
                out = out + self.body(f.body, facts, context)
            elif isinstance(f, Reduce):
                out = out + self.reduction(f, facts, context)
            elif not isinstance(f, (Access, SizeValue)):
                raise UnknownNode("factor", f)
        return out

    def reduction(self, f: Reduce, facts: Facts, context: Cost | None = None) -> Cost:
        """A reduction counts like a sum over its points (`loops.reduce_plan`): per point
        its filters, its body and one comparison (where a sum adds); logsumexp adds a
        subtraction, an exp and an addition per point and a log and an addition at the
        end (`REDUCTION_OPS`)."""
        tp = reduce_plan(f, facts)
        total = self.term(tp, facts, context)
        per_point, once = REDUCTION_OPS[f.op]
        if per_point or once:
            total = total + loop_count(tp, context) * per_point + once
        return total

    def body(self, body, facts: Facts, context: Cost | None = None) -> Cost:
        total = Cost()
        for t in body:
            total = total + self.term(plan_term(t, (), facts, top=False), facts, context)
        # A body of k terms adds k values; the accumulate per term already counts them.
        return total

    def atom(self, atom, facts: Facts, context: Cost | None = None) -> Cost:
        if isinstance(atom, (IdxCmp, Rel)):
            return Cost.const(1)
        if isinstance(atom, ValCmp):
            return 1 + self.body(atom.left, facts, context) + self.body(atom.right, facts, context)
        if isinstance(atom, NotAtom):
            return self.atom(atom.atom, facts, context)
        if isinstance(atom, AnyOf):
            total = Cost()
            for alt in atom.alts:
                for a in alt:
                    total = total + self.atom(a, facts, context)
            return total
        raise UnknownNode("predicate", atom)

    def term_where_it_stands(self, t, gens: tuple, facts: Facts, context: Cost) -> Cost:
        """What term t costs in all: at the top of a statement with generators `gens`
        (a scatter's own loops, or every element's), or, with gens empty, nested
        where `context` counts the enclosing iterations and `facts` holds them.

        Remembered (unless loop counts are forced, `choosing`): the choices between
        eliminations of equality brackets cost the same terms again in the programs
        that reverse and forward mode's candidates make.  The key is what the cost
        reads: the term, the generators, the size facts and `context`, and the facts
        of a nested term's scope."""
        if _CHOICES.get() is not None:
            return self._term_where_it_stands(t, gens, facts, context)
        scope = facts.key() if not gens else None
        return _TERM_COSTS.compute(
            ("where it stands", t, gens, self.base.key(), scope, context),
            lambda: self._term_where_it_stands(t, gens, facts, context))

    def _term_where_it_stands(self, t, gens: tuple, facts: Facts, context: Cost) -> Cost:
        if gens:
            tp = plan_term(t, gens, self.base, top=True)
            if tp.scatter:
                return self.term(tp, self.base.with_ranges(gens))
            inside = self.base.with_ranges(gens)
            return self.term_total(plan_term(t, gens, inside, top=False), inside, gens, context)
        return context * self.term(plan_term(t, (), facts, top=False), facts, context)


def _solved_counts(tp: TermPlan, dims: tuple) -> list:
    """Other counts of a scatter term's iterations: a scatter that solves a generator
    g = c * v + a from its outermost loop's index v alone (c != 0, `k = l + 1` for
    `[k == l + 1]`) finds a different g at every v, and works only at those v whose g
    lies in g's range (the staged check, or a proof that it always does), so the loops
    inside run at most g's range times per enclosing iteration, as well as v's range
    times.  Neither is provably the least: the model counts v's range and `choosing`
    may take g's (the certificate tries it).  Empty when no generator is solved so."""
    if tp.solve_depth != 1 or not tp.loops or tp.fresh or not tp.loops[0].exact:
        return []
    v = tp.loops[0].var
    ranges = dict(dims)
    out = []
    for g, expr in tp.solved:
        coeff = [c for x, c in expr.terms if x.__class__ is IndexVar and x.name == v]
        if g not in ranges or len(coeff) != 1 or coeff[0] == 0 \
                or any(x.__class__ is not SizeVar for x, _ in expr.terms
                       if not (x.__class__ is IndexVar and x.name == v)):
            continue
        out.append(Cost.of_affine(Affine.dim(ranges[g])))
    return out


# Whole-program costs: a cost-guarded rule compares against the program it started
# from, and a candidate derivative is costed where it is chosen and again where it
# is certified.
_PROGRAM_COSTS = Memo(4096)


def program_cost(prog: Program) -> Cost:
    if _CHOICES.get() is not None:      # another choice of loop counts (`choosing`):
        return CostModel(prog).program()    # not the model's cost, so not remembered
    return _PROGRAM_COSTS.compute(prog, lambda: CostModel(prog).program())


# What the shared passes of a program save (shared.py), by program.
_PASS_SAVINGS = Memo(4096)


def pass_savings(prog: Program) -> Cost:
    """The evaluations of shared factors that the shared passes of `prog` save: for
    each statement joined to a pass, its cost with the factor against its cost with a
    read of a local in its place (the pass evaluates the factor once per point, in
    the host's product; each joined statement reads it)."""
    from .shared import shared_passes

    def compute():
        passes = shared_passes(prog)
        if not passes:
            return Cost()
        model = CostModel(prog)
        total = Cost()
        for p in passes:
            for j in p.joined:
                st = prog.stmt(j.name)
                total = total + model.statement_of(st) - model.statement_of(
                    without_factor(st, j.factor))
        return total
    if _CHOICES.get() is not None:
        return compute()
    return _PASS_SAVINGS.compute(prog, compute)


# The name of the local a pass keeps the shared factor in, as a scalar read (a read of
# a scalar costs nothing, so a statement with it costs what the statement adds to the
# pass); not a name a program can have.
SHARED_LOCAL = "'shared"


def without_factor(st, factor):
    """Statement `st` (one term) with the shared factor read from the pass's local."""
    t = st.body[0]
    local = Access(SHARED_LOCAL, ())
    factors = tuple((local if f == factor else f, q) for f, q in t.factors)
    return replace(st, body=(Term(t.coeff, t.sums, t.pred, factors),))


def scheduled_cost(prog: Program) -> Cost:
    """The cost of `prog` as the backends schedule it: `program_cost`, less what its
    shared passes save (shared.py).  The certificate, `tl.cost` and `tensorlang cost`
    report it; the simplifier's rewrites compare `program_cost`, each statement on
    its own (the passes are formed after them, from the program they leave)."""
    saved = pass_savings(prog)
    return program_cost(prog) - saved if saved.terms else program_cost(prog)


# Programs whose cost is the sum of their statements' own costs: no recurrence group
# (every statement reads only statements before it) and no stored max or min, so no
# tie sum (ties.tie_sums); see `rewrite_cost`.
_STATEMENTWISE = Memo(4096)


def statementwise(prog: Program) -> bool:
    """Is prog's cost the sum of its statements' own costs (see `rewrite_cost`)?"""
    from .ssa.recur import recurrences
    def compute():
        try:
            if recurrences(prog):
                return False
        except ValueError:
            return False
        return all(reduction_of(s) is None for s in prog.stmts)
    return _STATEMENTWISE.compute(prog, compute)


def rewrite_cost(old: Program, rewritten: dict, dropped: tuple = ()) -> Cost | None:
    """cost(new) - cost(old) for a program `new` made from `old` (whose cost is a sum
    over its statements, `statementwise`) by rewriting statements in place
    (`rewritten`: old statement -> its new version, same name and place) and dropping
    others (`dropped`); None when that does not follow from the statements changed.

    A rule that substitutes one statement into its readers asks whether the program
    got cheaper once per statement it could substitute; costing the whole program
    for each would make the rule quadratic in the length of a long program.  The cost
    of `new` is a sum over its statements too if every rewritten statement reads only
    what its old version or a dropped statement it read did (all of it written before
    it, so still no group) and none is a max or min; when no statement taken out or
    put in uses a derived size, the sizes, and with them every statement's cost, stay
    as they were.  Then cost(new) is cost(old) minus the costs of the statements
    taken out plus those of the ones put in: the polynomial `program_cost(new)`
    would add up.  (`old` may be any program with the sizes of the one changed.)"""
    from .ssa.ir import _statement_sizes
    from .ssa.traverse import statement_reads
    if _CHOICES.get() is not None:
        return None
    out = tuple(rewritten) + tuple(dropped)
    put = tuple(rewritten.values())
    if any(_statement_sizes(st) for st in out + put) or any(reduction_of(a) is not None
                                                           for a in put):
        return None
    for before, after in rewritten.items():
        allowed = set(statement_reads(before))
        allowed |= {n for d in dropped if d.name in allowed for n in statement_reads(d)}
        if before.name != after.name or not statement_reads(after) <= allowed:
            return None
    sizes = tuple(old.sizes())
    model = CostModel(old)
    total = Cost()
    for st in out:
        total = total - _STATEMENT_COSTS.compute((st, sizes), lambda st=st: model.statement_of(st))
    for st in put:
        total = total + _STATEMENT_COSTS.compute((st, sizes), lambda st=st: model.statement_of(st))
    return total


def splice_cost(old: Program, k: int, put: tuple) -> Cost:
    """The cost of the program `old` with its statement k replaced by the statements
    `put` (ir.splice): one of them its new version (same name), the others new
    statements that read only what it read or each other (a factored term stored,
    opt/factor.py).  Costed from the statements it changes where that gives the
    polynomial costing the new program whole would (`splice_delta`), else whole."""
    from .ssa.ir import splice
    delta = splice_delta(old, k, put)
    if delta is None:
        return program_cost(splice(old, k, k + 1, put))
    return program_cost(old) + delta


def splice_delta(old: Program, k: int, put: tuple) -> Cost | None:
    """cost(new) - cost(old) for the splice of `splice_cost`, or None when that does
    not follow from the statements changed.

    The program's cost is the sum of its statements' costs outside recurrence
    groups and of each group's cost, which is the sum of its members' shares
    (`CostModel.recurrence`: a share depends on the member's step statement, the
    group's lead and leading ranges and the sizes), when no statement is a max or
    min (no tie sums).  Let s be statement k and A its group's members (s alone
    outside groups).  Every read of a statement of `put` is a read of s or of
    another of `put` (checked), so mapping `put` onto s maps each cycle of reads of
    `new` onto a cycle of `old`: the groups without s are those of `old`, unchanged,
    and the statements of `put` are in a group only with each other and A.  The
    read graph on A - s plus `put` is analysed alone (recur.recurrences of those
    statements; not at all when the group is plainly A's, `_keeps_group`); when it
    gives one group holding every member of A with A's lead and steps (or, s
    outside groups, no group at all), and no statement changed uses a derived size
    or a size the parameters do not declare (so the sizes, the size
    facts and the step programs' sizes stay those of `old`), then cost(new) is
    cost(old) minus s's share (or cost) plus each statement of `put`'s share in the
    group, or its own cost outside it.  Outside groups a derived size may be used
    too, when the new program's sizes are old's: each statement's cost depends on
    the statement and the sizes only (`_own_cost`)."""
    from .ssa.ir import _statement_sizes, splice
    from .ssa.recur import access_targets, recurrences
    if _CHOICES.get() is not None:
        return None
    s = old.stmts[k]
    facts = _splice_facts(old)
    if facts is None:
        return None
    byname, sizes, groups = facts
    fresh = {st.name for st in put}
    if len(fresh) != len(put) or s.name not in fresh or len(fresh & byname.keys()) != 1:
        return None
    reach = access_targets(s) | fresh
    for st in (s,) + tuple(put):
        if not {d for d in st.dims if isinstance(d, str)} <= set(sizes) \
                or reduction_of(st) is not None:
            return None
    if any(not access_targets(st) <= reach for st in put):
        return None
    group = next((g for g in groups if s.name in g.members), None)
    if any(_statement_sizes(st) for st in (s,) + tuple(put)):
        # A derived size: the new program's sizes are found again (they must be old's,
        # in their order); a group's step programs would have to be too, so a
        # statement of a group is costed whole.
        if group is not None or tuple(splice(old, k, k + 1, put).sizes()) != sizes:
            return None
    if group is not None and _keeps_group(s, put, group, fresh):
        members = set(group.members)
    else:
        inside = [byname[m] for m in group.members] if group is not None else [s]
        at = next(j for j, st in enumerate(inside) if st.name == s.name)
        around = Program(old.name, (), tuple(inside[:at]) + tuple(put) + tuple(inside[at + 1:]),
                         ())
        try:
            found = recurrences(around)
        except ValueError:
            return None
        if group is None:
            if found:
                return None
            return sum((_own_cost(st, old, s) for st in put), Cost()) - _own_cost(s, old)
        if len(found) != 1 or found[0].lead != group.lead or found[0].steps != group.steps \
                or not set(group.members) <= set(found[0].members):
            return None
        members = set(found[0].members)
    share = _member_share(old, group)
    total = Cost() - share(s)
    for st in put:
        total = total + (share(st) if st.name in members else _own_cost(st, old))
    return total


def _keeps_group(s, put, group, fresh: set) -> bool:
    """Is `group` with s replaced by its new version in `put` the group of the new
    program, unanalysed?  It is when the new version reads the members exactly as s
    did (the same accesses: the same edges, offsets and cycles) and the other
    statements of `put` read no member nor each other (no cycle through them)."""
    from .ssa.recur import access_targets, accesses_of
    members = set(group.members)
    for st in put:
        if st.name == s.name:
            if accesses_of(st, members) != accesses_of(s, members):
                return False
        elif access_targets(st) & (members | fresh):
            return False
    return True


def _splice_facts(old: Program):
    """(statements by name, sizes, recurrence groups) of `old` for `splice_delta`, or None
    when its cost is not a sum of statement costs and group shares (a max or min, an
    ill-founded group)."""
    from .ssa.recur import recurrences

    def compute():
        if any(reduction_of(st) is not None for st in old.stmts):
            return None
        try:
            groups = recurrences(old)
        except ValueError:
            return None
        return {st.name: st for st in old.stmts}, tuple(old.sizes()), groups
    return _SPLICE_FACTS.compute(old, compute)


_SPLICE_FACTS = Memo(256)


def _own_cost(st, prog: Program, before=None) -> Cost:
    """The cost of statement st outside recurrence groups in a program with prog's sizes
    (as `CostModel.program` adds it up, and remembers it); `before`: a statement st
    replaces, which it may be costed from (`_cost_from_changes`)."""
    sizes = tuple(prog.sizes())
    # (by its indices and body: a statement's cost does not read its name, and a
    # factoring trial's stored statement is tried again under another name)
    key = ("own", st.indices, st.body, sizes)
    if before is not None and _STATEMENT_COSTS.get(key) is None:
        cost = _cost_from_changes(before, st, prog)
        if cost is not None:
            return _STATEMENT_COSTS.put(key, cost)
    return _STATEMENT_COSTS.compute(key, lambda: CostModel(prog).statement_of(st))


def _cost_from_changes(before, after, prog: Program) -> Cost | None:
    """`statement_of(after)` from before's cost, when after has before's indices and
    keeps most of its terms as they are (the same objects: a factoring trial keeps
    all of them but the two or three it takes out), and each term one of them has
    and the other has not adds the same cost to either (`CostModel.term_share`), or
    is a gather term with filters only, whose group (the statement's gather terms
    under its brackets, `group_by_filters`) is then costed in both as it stands there
    (`CostModel.filter_group_cost`: the group's cost changes with its members, and
    only that group's).  A statement's cost is the writes of its elements plus the
    costs of its groups of gather terms and of its scatter terms as their passes plan
    them, a sum in exact arithmetic; None where that is not known to change by those
    terms' and groups' costs alone."""
    if _CHOICES.get() is not None or after.indices != before.indices:
        return None
    had = Counter(map(id, before.body))
    has = Counter(map(id, after.body))
    removed = [t for t in before.body if had[id(t)] > has[id(t)]]
    added = [t for t in after.body if has[id(t)] > had[id(t)]]
    if len(removed) + len(added) >= len(after.body) or len(had) != len(before.body) \
            or len(has) != len(after.body):
        return None           # (few shared terms, or a term object twice: cost it whole)
    model = CostModel(prog)
    loops = model.scatter_loop_names(before)
    if loops is None:
        return None
    loops = dict(loops)
    total = _own_cost(before, prog)
    regrouped = set()           # the brackets of filtered gather terms removed or added
    for terms, sign in ((removed, -1), (added, 1)):
        for t in terms:
            share = model.term_share(t, after.indices)
            if share is None:
                shared = model.shared_filters(t, after.indices)
                if shared is None:
                    return None
                regrouped.add(shared)
                continue
            cost, names = share
            if names is not None:
                depth, var_names = names
                if loops.setdefault(depth, var_names) != var_names:
                    return None
            total = total + cost * sign
    for filters in regrouped:
        total = total + model.filter_group_cost(after, filters) \
            - model.filter_group_cost(before, filters)
    return total


def _member_share(prog: Program, g):
    """statement -> its share of group g's cost as a member (`CostModel.recurrence`),
    in prog and in any program with its sizes where the group has g's lead, steps
    and leading ranges."""
    from .ssa.recur import step_program, step_statement

    def compute():
        symbols = [f"step'{q}" for q in range(g.lead)]
        steps = step_program(prog, g, symbols)
        dims = tuple(d for _, d in prog.stmt(g.members[0]).indices[:g.lead])
        context = (tuple(symbols), dims, tuple(steps.sizes()), tuple(prog.sizes()))
        # (the step program costed under the step facts, as `CostModel.recurrence`
        # costs it: the shares it remembers under the same keys must be its own)
        return symbols, dims, context, CostModel(steps, step_facts(steps, symbols, dims)), \
            CostModel(prog)
    symbols, dims, context, step_model, model = _SHARE_CONTEXTS.compute((prog, g), compute)

    def share(st) -> Cost:
        step = step_statement(st, g.lead, symbols)
        return _STATEMENT_COSTS.compute(
            ("step", step, context), lambda: model.step_member(step_model, step, symbols, dims))
    return share


_SHARE_CONTEXTS = Memo(256)


def _step_gated(plans, symbols) -> dict:
    """The gather term plans that a guard on step symbols alone filters, by that
    set of guards (IdxCmp atoms without index variables that mention a symbol)."""
    out: dict = {}
    for tp in plans:
        gate = frozenset(a for a in tp.filters + tp.outer_filters
                         if a.__class__ is IdxCmp and not a.aff.index_vars()
                         and any(x.__class__ is SizeVar and x.name in symbols
                                 for x in a.aff.atoms()))
        if gate:
            out.setdefault(gate, []).append(tp)
    return out


def _step_box(gate, symbols, ranges, facts: Facts):
    """[(lo_q, hi_q)] per step symbol: the steps 1 <= S_q <= range_q where every guard
    of `gate` holds, each bound affine in sizes and provably no tighter than the
    range's and no emptier than empty (hi - lo + 1 >= 0); None when the guards are
    not of that form (then their work is counted at every step, an upper bound)."""
    box = [(Affine(1), top) for top in ranges]
    for atom in gate:
        steps = [(q, c) for q, sym in enumerate(symbols) for x, c in atom.aff.terms
                 if x.__class__ is SizeVar and x.name == sym]
        if len(steps) != 1 or abs(steps[0][1]) != 1 or atom.op not in (">=", "=="):
            return None
        q, c = steps[0]
        rest = Affine.make(atom.aff.const, [(x, k) for x, k in atom.aff.terms
                                            if not (x.__class__ is SizeVar and x.name == symbols[q])])
        at = rest.scale(-c)              # c * S + rest (op) 0:  S (op') -rest / c
        # Written in the range's own size where it differs from it by a constant (T - 2
        # under a range T - 1 is (T - 1) - 1), so the polynomial keeps the range's symbols.
        gap = (at - ranges[q]).in_plain_sizes()
        if gap.is_const:
            at = ranges[q].shift(gap.const)
        lo, hi = box[q]
        sides = ("lo", "hi") if atom.op == "==" else (("lo",) if c > 0 else ("hi",))
        for side in sides:
            if side == "lo":
                if facts.proves(at - lo):
                    lo = at
                elif not facts.proves(lo - at):
                    return None
            else:
                if facts.proves(hi - at):
                    hi = at
                elif not facts.proves(at - hi):
                    return None
        box[q] = (lo, hi)
    for lo, hi in box:
        if not facts.proves(hi - lo + Affine(1)):
            return None
    return box


def _sum_over_steps(c: Cost, symbols, box) -> Cost:
    """c summed over each step symbol S_q from lo_q to hi_q (box, affine in sizes)."""
    total = Cost()
    for mono, k in c.terms.items():
        term = Cost._of({tuple((s, e) for s, e in mono if s not in symbols): k})
        powers = dict(mono)
        for sym, (lo, hi) in zip(symbols, box):
            e = powers.get(sym, 0)
            term = term * (_power_sum(e, Cost.of_affine(hi))
                           - _power_sum(e, Cost.of_affine(lo.shift(-1))))
        total = total + term
    return total


def _power_sum(e: int, n: Cost) -> Cost:
    """sum of S^e for S = 1 .. n, as a polynomial in n (Faulhaber's formula:
    (1 / (e + 1)) sum_j C(e + 1, j) B_j n^(e + 1 - j), with B_1 = +1/2)."""
    if e == 0:                  # the common case: work that does not move with the step
        return n
    total = Cost()
    for j, coeff in enumerate(_faulhaber(e)):
        power = Cost.const(1)
        for _ in range(e + 1 - j):
            power = power * n
        total = total + power * coeff
    return total


@lru_cache(maxsize=None)
def _faulhaber(e: int) -> tuple:
    """The coefficients of n^(e + 1), n^e, ..., n in the sum of S^e for S = 1 .. n."""
    from math import comb
    bern = [Fraction(1)]
    for m in range(1, e + 1):
        bern.append(1 - sum(comb(m, j) * bern[j] / (m - j + 1) for j in range(m)))
    return tuple(Fraction(comb(e + 1, j)) * bern[j] / (e + 1) for j in range(e + 1))

