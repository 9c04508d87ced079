"""The cheap-derivative certificate, checked on every derivative the API builds.

The promise (docs/language.md, *The certificate*): a derivative costs at most
four times what it has to read and what the function costs,

    cost(d) <= 4 * (cost(f) + |wrt| + |out|)                  grad, vjp, jvp

where |wrt| is the number of elements differentiated and |out| the number
of elements of f's outputs (the cotangent a vjp reads, the tangent a jvp
writes), and no monomial of cost(d) is outside those of the right-hand side:
every monomial of cost(d) divides one of them, so no size symbol's degree, nor
any product of symbols, grows.  A Hessian-vector product is forward mode over
the gradient and is held to the same factor over the gradient's bound; a dense
Hessian, built one direction at a time, is held to |wrt| times that (plus its
own |wrt|^2 elements), which is what computing it column by column costs.

Inequalities between polynomials are checked at sampled size assignments (all
sizes equal and small, medium and large, then each size large with the others
small and the reverse); the monomial rule is exact.  A loop with several bounds
on its trip count is counted by any of them: the derivative passes when one
combination of counts keeps the monomial rule and, at each sampled size, some
combination keeps the inequality (`_another_count_holds`).  A violation names the
statement and the term of the derivative that cost the most at the sampled
sizes where the bound failed, or that hold the monomial the rule rejects.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from . import sizexpr
from .costs import Cost, CostModel, scheduled_cost
from .loops import plan_statement
from .ssa.ir import Program
from .ssa.printer import fmt_body, fmt_dim
from .ties import tie_sums

FACTOR = 4
SMALL, MEDIUM, LARGE = 8, 256, 65536


@dataclass(frozen=True)
class Violation:
    derivative: str          # e.g. "tl.grad(corr, wrt='x')"
    cost: Cost               # cost of the derivative
    bound: Cost              # what the certificate allows (before the sampled check)
    sizes: dict | None       # a size assignment where cost > bound, if any
    monomial: tuple | None   # a monomial of cost outside the bound's, if any
    statement: str           # the statement of the derivative most responsible
    term: str                # its term most responsible
    span: object             # the statement's source span, when known
    rule: str                # the bound in words

    def message(self) -> str:
        what = [f"{self.derivative} costs {self.cost}, more than the certificate's "
                f"{self.rule} = {self.bound}"]
        if self.sizes is not None:
            at = ", ".join(f"{k}={v}" for k, v in sorted(self.sizes.items()))
            what.append(f"at {at} it is {float(self.cost.evaluate(**self.sizes)):.4g} against "
                        f"{float(self.bound.evaluate(**self.sizes)):.4g}")
        if self.monomial is not None:
            what.append(f"its monomial {_fmt_mono(self.monomial)} grows faster than any of "
                        f"the bound's")
        return ("; ".join(what) + f"; most of it is statement {self.statement}, "
                f"term {self.term}")

    def render(self) -> str:
        where = f"{self.span}: " if self.span is not None else ""
        return f"{where}warning: {self.message()}"


def elements(prog: Program, names) -> Cost:
    """Number of elements of the named parameters, as a polynomial."""
    total = Cost()
    dims_of = {p.name: p.dims for p in prog.params}
    for n in names:
        total = total + _count(dims_of[n])
    return total


def stored_elements(prog: Program) -> Cost:
    """The elements `prog` holds if every statement is stored whole: its parameters'
    and its statements', as a polynomial (`tl.memory`)."""
    total = Cost()
    for dims in [p.dims for p in prog.params] + [s.dims for s in prog.stmts]:
        total = total + _count(dims)
    return total


def _count(dims) -> Cost:
    out = Cost.const(1)
    for d in dims:
        out = out * (Cost.const(d) if isinstance(d, int) else Cost.symbol(d))
    return out


def output_elements(prog: Program) -> Cost:
    dims = {s.name: tuple(d for _, d in s.indices) for s in prog.stmts}
    dims.update({p.name: p.dims for p in prog.params})
    total = Cost()
    for o in prog.outputs:
        total = total + _count(dims.get(o, ()))
    return total


def _fmt_mono(mono) -> str:
    if not mono:
        return "1"
    return "*".join(s if e == 1 else f"{s}^{e}" for s, e in mono)


def _divides(small, big) -> bool:
    have = dict(big)
    return all(have.get(s, 0) >= e for s, e in small)


def _growth(mono) -> tuple:
    """A monomial with every derived size of one symbol (``n + 1``, ``n - 1``,
    ``n / 2``, ``(2 * n - 1) / 3``: a positive multiple of that symbol, plus a
    constant, over a divisor) replaced by the symbol.  Such a size d is at least
    1, so it lies between constant multiples of its symbol s (c1 * s <= d <= c2 * s
    for every admissible s): as far as growth goes, d is s.  A size of several
    symbols (``n - k + 1``) stays an atom of its own."""
    out: dict = {}
    for name, e in mono:
        d = sizexpr.parse(name)
        if d is not None and len(d.terms) == 1 and d.terms[0][1] > 0:
            name = d.terms[0][0]
        out[name] = out.get(name, 0) + e
    return tuple(sorted(out.items()))


def unbounded_monomial(cost: Cost, bound: Cost):
    """A monomial of `cost` that divides no monomial of `bound` (None when all do),
    both taken up to derived sizes of one symbol (``_growth``): the soft edit
    distance's table over ``(n + 1) * (m + 1)`` bounds an adjoint over ``m * (n + 1)``.

    A derived size of several symbols (`n - 2 * k + 2`) ties its symbols: of n, k
    and it, two are free and the third follows.  A polynomial may be written in
    either pair (a loop count in n and k, `2*k*n - 4*k^2`, is `2*k*(n - 2 * k + 2)
    - 4*k` written in k and the derived size), and growth is a question about the
    free sizes: so when the monomials fail as written, they are compared again with
    a symbol of such a size written in terms of it and the others (`_in_derived`),
    and the first monomial that fails in every such basis is returned."""
    found = _first_unbounded(cost, bound)
    if found is None:
        return None
    for in_basis in _derived_bases(set(cost.symbols()) | set(bound.symbols())):
        if _first_unbounded(in_basis(cost), in_basis(bound)) is None:
            return None
    return found


def _first_unbounded(cost: Cost, bound: Cost):
    tops = [_growth(m) for m, c in bound.terms.items() if c > 0]
    for mono, c in sorted(cost.terms.items()):
        if c > 0 and not any(_divides(_growth(mono), t) for t in tops):
            return mono
    return None


def _derived_bases(symbols) -> list:
    """For each derived size of several symbols with a symbol s of coefficient +-1
    and no divisor (`n - 2 * k + 2`: n = (n - 2 * k + 2) + 2 k - 2), a function
    rewriting a polynomial with s replaced by its value in that size and the others
    (`_in_derived`); every combination of one such choice per derived size."""
    import itertools
    options = []
    for name in sorted(symbols):
        d = sizexpr.parse(name)
        if d is None or d.den != 1 or len(d.terms) < 2:
            continue
        mine = []
        for s, c in d.terms:
            if abs(c) == 1:
                # s = c * (d - const - sum of the others)
                rest = Cost.const(-d.const) + Cost.symbol(name)
                for t, q in d.terms:
                    if t != s:
                        rest = rest - Cost.symbol(t) * q
                mine.append((s, rest * c))
        if mine:
            options.append(mine)
    out = []
    for choice in itertools.product(*options):
        names = [s for s, _ in choice]
        if len(set(names)) == len(names):
            out.append(lambda c, choice=choice: _in_derived(c, dict(choice)))
        if len(out) >= 16:
            break
    return out


def _in_derived(c: Cost, values: dict) -> Cost:
    """Polynomial c with each symbol of `values` replaced by its polynomial there."""
    out = Cost()
    for mono, coef in c.terms.items():
        term = Cost.const(coef)
        for s, e in mono:
            factor = values.get(s, Cost.symbol(s))
            for _ in range(e):
                term = term * factor
        out = out + term
    return out


def sample_sizes(symbols) -> list[dict]:
    """Every size at 8, 256 and 65536, then each large with the others small and
    small with the others medium; but for points no call can have, where a derived
    size would be below 1 (k large and n small for `n - k + 1`: there the function's
    own cost polynomial can be negative, and so the bound)."""
    symbols, derived = sizexpr.split(symbols)
    out = [{s: n for s in symbols} for n in (SMALL, MEDIUM, LARGE)]
    for s in symbols:
        if len(symbols) > 1:
            out.append({t: (LARGE if t == s else SMALL) for t in symbols})
            out.append({t: (SMALL if t == s else MEDIUM) for t in symbols})
    out = [p for p in out if sizexpr.admissible(p, derived)] or out
    return [sizexpr.complete(p, derived) for p in out]


def exceeded(cost: Cost, bound: Cost, symbols):
    """The first sampled sizes where cost > bound (None when it holds at all)."""
    for sizes in sample_sizes(symbols):
        if cost.evaluate(**sizes) > bound.evaluate(**sizes):
            return sizes
    return None


def _responsible(prog: Program, sizes: dict | None, monomial) -> tuple[str, str, object]:
    """The statement and term of `prog` with the largest cost at `sizes`, or the
    largest coefficient of `monomial`."""
    model = CostModel(prog)
    facts = model.base

    def weight(c: Cost) -> Fraction:
        if monomial is not None:
            return c.terms.get(monomial, Fraction(0))
        return Fraction(c.evaluate(**sizes)) if sizes else Fraction(0)

    best = None
    ties = tie_sums(prog)
    for s in prog.stmts:
        sp = plan_statement(s, facts)
        c = (model.tie_sum(s, prog.stmt(ties[s.name][0]), ties[s.name][1]) if s.name in ties
             else model.statement(sp))
        if best is None or weight(c) > best[0]:
            best = (weight(c), s, sp)
    if best is None:
        return "-", "-", None
    _, s, sp = best
    inner = facts.with_ranges(s.indices)
    elements_of = _count(tuple(d for _, d in s.indices))
    terms = [(model.term_total(tp, inner, s.indices, elements_of), tp) for tp in sp.gather_terms]
    terms += [(model.term(tp, inner), tp) for tp in sp.scatter_terms]
    head = s.name + ("[" + ", ".join(f"{n}: {fmt_dim(d)}" for n, d in s.indices) + "]"
                     if s.indices else "")
    if not terms:
        return head, "(its writes)", s.span
    _, tp = max(terms, key=lambda ct: weight(ct[0]))
    return head, fmt_body((tp.term,)), s.span


def check(derivative: str, d: Program, bound: Cost, reference: Cost,
          rule: str = f"{FACTOR} * (cost(f) + |wrt| + |out|)",
          costed: Program | None = None, forward: Program | None = None) -> Violation | None:
    """Does `d` keep within `bound` at the sampled sizes, and its monomials within
    those of `reference`?  The violation, with the statement responsible, if not.
    `costed`: d before its binders were renamed, whose (equal) cost the simplifier
    has already computed; `forward`: the function d is taken of, where a statement
    without a span of its own is located (`_forward_span`)."""
    cost = scheduled_cost(d if costed is None else costed)
    symbols = set(d.sizes()) | set(bound.symbols()) | set(cost.symbols())
    sizes = exceeded(cost, bound, symbols)
    mono = unbounded_monomial(cost, reference)
    if sizes is None and mono is None:
        return None
    if _another_count_holds(d, bound, reference, symbols):
        return None
    statement, term, span = _responsible(d, sizes, mono)
    if span is None and forward is not None:
        span = _forward_span(statement.split("[")[0], forward)
    return Violation(derivative, cost, bound, sizes, mono, statement, term, span, rule)


def _forward_span(name: str, forward: Program):
    """Where in the source a derivative's statement `name` comes from, when it has no
    span of its own: the forward statement whose name it extends (`out_part_bar_fac`
    and `d_out` from `out`), the longest such; else the function's last statement
    (an adjoint of a parameter, `X_bar`).  Every certificate warning is then located,
    whichever transform made the statement."""
    stem = name[2:] if name.startswith("d_") else name
    spans = {st.name: st.span for st in forward.stmts if st.span is not None}
    fits = [n for n in spans if stem == n or stem.startswith(n + "_")]
    if fits:
        return spans[max(fits, key=len)]
    return next(reversed(spans.values()), None)


# At most this many combinations of loop counts are tried one by one (see
# _another_count_holds); beyond, each decision's candidates are tried alone.
MAX_COUNT_CHOICES = 64


def _another_count_holds(d: Program, bound: Cost, reference: Cost, symbols) -> bool:
    """Does the derivative keep within the bound with other choices of its loop counts?

    A loop whose bounds move with an outer index has several upper bounds on its trip
    count, none provably the least (a band of width k inside a range n runs at most
    min(k, n) times), and the cost polynomial takes one of them (costs.loop_count and
    loop_total: the cheapest with all sizes equal; costs.CostModel.guarded: the range).
    Each of them bounds the same loop nest, so every combination of them is an upper
    bound on the derivative's operations at every size.  The promise holds when one
    combination keeps every monomial within the reference's, and at each sampled size
    some combination (not necessarily the same) keeps within the bound: the least of
    upper bounds is one.  The sizes are independent in the certificate, so no one count
    need be the least everywhere (`k n^2 / 2` against `k^2 n`)."""
    from .costs import cost_with_counts, count_choices, count_decisions
    own, counts = count_decisions(lambda: scheduled_cost(d))
    if not counts:
        return False

    def cost_of(combo):
        return cost_with_counts(lambda: scheduled_cost(d), combo)
    combos, every = count_choices(counts, MAX_COUNT_CHOICES)
    if every:
        costs = [cost_of(combo) for combo in combos]
    else:
        # each decision's candidates alone, then, for each goal, every change that
        # helps it alone made at once (the decisions mostly count different loops)
        flips = [(len(combo) - 1, combo[-1], cost_of(combo)) for combo in combos]
        costs = [own] + [c for _, _, c in flips]

        def together(metric):
            combo, best = [-1] * len(counts), [metric(own)] * len(counts)
            for k, o, c in flips:
                m = metric(c)
                if m < best[k]:
                    combo[k], best[k] = o, m
            return cost_of(combo)
        costs.append(together(lambda c: _excess(c, reference)))
        for z in sample_sizes(set(symbols) | set(own.symbols())):
            costs.append(together(lambda c, z=z: Fraction(c.evaluate(**z))))
        if not any(_excess(c, reference) == 0 for c in costs):
            costs.append(_descend(cost_of, counts, lambda c: _excess(c, reference)))
    if not any(unbounded_monomial(c, reference) is None for c in costs):
        return False
    for z in sample_sizes(set(symbols).union(*(c.symbols() for c in costs))):
        if not any(c.evaluate(**z) <= bound.evaluate(**z) for c in costs):
            return False
    return True


# Rounds of the one-decision-at-a-time search (see _descend).
COUNT_ROUNDS = 3


def _descend(cost_of, counts, metric) -> Cost:
    """From the model's own counts, change one decision at a time to the candidate that
    lowers `metric` most, a few rounds over all decisions; the cost reached."""
    combo = [-1] * len(counts)
    best_cost = cost_of(combo)
    best = metric(best_cost)
    for _ in range(COUNT_ROUNDS):
        moved = False
        for k, c in enumerate(counts):
            for option in range(c):
                if option == combo[k]:
                    continue
                trial = combo[:k] + [option] + combo[k + 1:]
                cost = cost_of(trial)
                score = metric(cost)
                if score < best:
                    combo, best, best_cost, moved = trial, score, cost, True
        if not best or not moved:
            break
    return best_cost


def _excess(cost: Cost, reference: Cost) -> Fraction:
    """The coefficients of the monomials of `cost` that divide none of `reference`'s."""
    tops = [t for t, k in reference.terms.items() if k > 0]
    return sum((Fraction(c) for mono, c in cost.terms.items()
                if c > 0 and not any(_divides(mono, t) for t in tops)), Fraction(0))


def bounds_for(kind: str, f: Program, wrt: tuple[str, ...],
               gradient_cost: Cost | None = None) -> tuple[Cost, Cost, str]:
    """(bound, reference, rule) for derivative `kind` of the optimised forward program
    `f`: the sampled inequality's right-hand side, the monomial rule's, and the
    bound in words."""
    inputs = elements(f, wrt)
    base = scheduled_cost(f) + inputs + output_elements(f)
    reference = reference_for(kind, f, wrt)
    if kind in ("grad", "value_and_grad", "vjp", "jvp"):
        return Cost.const(FACTOR) * base, reference, f"{FACTOR} * (cost(f) + |wrt| + |out|)"
    if kind in ("hvp", "hessian"):
        if gradient_cost is None:
            raise ValueError(f"{kind} is certified against its gradient's cost")
        hvp = Cost.const(FACTOR) * (gradient_cost + inputs + inputs)
        if kind == "hvp":
            return hvp, reference, f"{FACTOR} * (cost(grad) + 2 |wrt|)"
        return (inputs * hvp + inputs * inputs, reference,
                f"|wrt| * {FACTOR} * (cost(grad) + 2 |wrt|) + |wrt|^2")
    # jacobian: one forward-mode column per element of wrt, and every element of the result
    outs = output_elements(f)
    return (inputs * Cost.const(FACTOR) * base + outs * inputs, reference,
            f"|wrt| * {FACTOR} * (cost(f) + |wrt| + |out|) + |out| * |wrt|")


def reference_for(kind: str, f: Program, wrt: tuple[str, ...]) -> Cost:
    """The right-hand side of the monomial rule for derivative `kind` of the optimised
    forward program `f`: every monomial of the derivative's cost must divide one of
    its monomials.  The simplifier asks for it too (driver.rules_for_derivative), since a
    rewrite may trade sizes only for monomials the derivative is allowed anyway."""
    inputs = elements(f, wrt)
    base = scheduled_cost(f) + inputs + output_elements(f)
    if kind in ("grad", "value_and_grad", "vjp", "jvp", "hvp"):
        return base
    if kind == "hessian":
        return inputs * base + inputs * inputs
    if kind == "jacobian":
        return inputs * base + output_elements(f) * inputs
    raise ValueError(f"no certificate for {kind!r}")


def violations_of(kind: str, name: str, f: Program, wrt, d: Program,
                  gradient: Program | None = None,
                  costed: Program | None = None,
                  located_by: Program | None = None) -> Violation | None:
    """Check derivative `d` (of `kind`, of optimised forward `f`) against the certificate
    (`costed`: d with other binder names, see ``check``)."""
    wrt = (wrt,) if isinstance(wrt, str) else tuple(wrt)
    label = (f"tl.{kind}({name}, wrt={wrt[0]!r})" if len(wrt) == 1
             else f"tl.{kind}({name}, wrt={wrt!r})")
    grad_cost = scheduled_cost(gradient) if gradient is not None else None
    bound, reference, rule = bounds_for(kind, f, wrt, grad_cost)
    return check(label, d, bound, reference, rule, costed,
                 forward=f if located_by is None else located_by)
