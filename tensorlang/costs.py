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

Loops are exact where their bounds are exact, so the polynomial is exact for
programs whose brackets all became loop bounds, and an upper bound when a
bracket filters inside a loop (the filtered work is counted as if it ran).
``Function.count_ops`` runs the same loops for real and must match or stay below.
"""
from __future__ import annotations

from fractions import Fraction

from .builtins import BUILTINS
from .memo import Memo
from .bounds import Facts
from .bounds import size_facts
from .loops import TermPlan, plan_statement, plan_term
from .ssa.ir import (Access, Affine, AnyOf, Apply, Group, IdxCmp, NotAtom, Program, Rel, SizeValue,
                     SizeVar, ValCmp)
from .ssa.traverse import UnknownNode


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
        return max(dict(m).get(symbol, 0) for m in self.terms)

    def evaluate(self, /, **sizes) -> float:
        total = 0
        for m, c in self.terms.items():
            v = c
            for s, e in m:
                if s not in sizes:
                    raise KeyError(f"evaluate needs a value for size {s}")
                x = sizes[s]
                v *= (x if isinstance(x, int) else Fraction(x)) ** e
            total += v
        return int(total) if total.denominator == 1 else float(total)

    def leading(self) -> "Cost":
        d = self.degree()
        return Cost({m: c for m, c in self.terms.items() if sum(e for _, e in m) == d})

    def symbols(self) -> list[str]:
        return sorted({s for m in self.terms for s, _ in m})

    def __str__(self) -> str:
        if not self.terms:
            return "0"
        order = sorted(self.terms.items(), key=lambda mc: (-sum(e for _, e in mc[0]), mc[0]))
        out = ""
        for k, (m, c) in enumerate(order):
            neg = c < 0
            c = -c if neg else c
            mono = "*".join(s if e == 1 else f"{s}^{e}" for s, e in m)
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


def loop_count(plan: TermPlan) -> Cost:
    out = Cost.const(1)
    for lp in plan.loops:
        out = out * (Cost.of_affine(lp.hi) - Cost.of_affine(lp.lo) + 1)
    return out


# A statement's cost depends only on the statement and the program's size
# symbols; cost-guarded rewrites compare whole programs that differ in a few
# statements, so the others are remembered.
_STATEMENT_COSTS = Memo(20_000)


def forget_cached_costs() -> None:
    """Drop remembered statement costs (needed only if the builtin table's weights change)."""
    _STATEMENT_COSTS.clear()


class CostModel:
    def __init__(self, prog: Program):
        self.prog = prog
        self.base = size_facts(prog)

    def program(self) -> Cost:
        total = Cost()
        sizes = tuple(self.prog.sizes())
        for s in self.prog.stmts:
            total = total + _STATEMENT_COSTS.compute(
                (s, sizes), lambda s=s: self.statement(plan_statement(s, self.base)))
        return total

    def statement(self, sp) -> Cost:
        s = sp.stmt
        elements = Cost.const(1)
        for _, d in s.indices:
            elements = elements * Cost.of_affine(Affine.dim(d))
        facts = self.base.with_ranges(s.indices)
        total = elements                                  # one write per element
        for tp in sp.gather_terms:
            total = total + elements * self.term(tp, facts)
        for tp in sp.scatter_terms:
            total = total + self.term(tp, self.base.with_ranges(s.indices))
        return total

    def term(self, tp: TermPlan, facts: Facts) -> Cost:
        """Cost of all iterations of one planned term (per enclosing iteration)."""
        t = tp.term
        inner = facts.with_ranges(t.sums).with_pred(t.pred)
        per = Cost()
        for atom in tp.filters:
            per = per + self.atom(atom, inner)
        per = per + self.product(t, inner) + 1             # + accumulate
        return loop_count(tp) * per

    def product(self, t, facts: Facts) -> Cost:
        out = Cost.const(product_ops(t))
        for f, p in t.factors:
            out = out + power_ops(p)
            if isinstance(f, Apply):
                out = out + BUILTINS[f.fn].cost
                for a in f.args:
                    out = out + self.body(a, facts)
            elif isinstance(f, Group):
                out = out + self.body(f.body, facts)
            elif not isinstance(f, (Access, SizeValue)):
                raise UnknownNode("factor", f)
        return out

    def body(self, body, facts: Facts) -> Cost:
        total = Cost()
        for t in body:
            total = total + self.term(plan_term(t, (), facts, top=False), facts)
        # A body of k terms adds k values; the accumulate per term already counts them.
        return total

    def atom(self, atom, facts: Facts) -> Cost:
        if isinstance(atom, (IdxCmp, Rel)):
            return Cost.const(1)
        if isinstance(atom, ValCmp):
            return 1 + self.body(atom.left, facts) + self.body(atom.right, facts)
        if isinstance(atom, NotAtom):
            return self.atom(atom.atom, facts)
        if isinstance(atom, AnyOf):
            total = Cost()
            for alt in atom.alts:
                for a in alt:
                    total = total + self.atom(a, facts)
            return total
        raise UnknownNode("predicate", atom)


def program_cost(prog: Program) -> Cost:
    return CostModel(prog).program()
