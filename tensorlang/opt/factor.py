"""Common factors of a statement's terms: F * a + F * b -> F * h, h = a + b stored.

Derivatives multiply sums out.  The chain rule through ``1 / (1 + tanh(z) ** 2)``
gives ``tanh'(z) = 1 - tanh(z) ** 2`` times everything else in the term, and
the normal form expands that into two terms which repeat every other factor:

    x_bar[k] = ... - 2 * w[k] * y[k] * exp(a[k]) * tanh(z[k]) / g[k] ** 2
                   + 2 * w[k] * y[k] * exp(a[k]) * tanh(z[k]) ** 3 / g[k] ** 2

A parenthesised sum to the first power cannot stay in a term (parsing
distributes it, and the normal form must agree with parsing), so the factored
form is written with a statement of its own:

    x_bar_fac[k] = -1.0 + tanh(z[k]) ** 2
    x_bar[k] = ... + 2 * w[k] * y[k] * exp(a[k]) * tanh(z[k]) / g[k] ** 2 * x_bar_fac[k]

The law is distributivity, F * a + F * b = F * (a + b): the same move that
contraction ordering makes when a factor leaves a sum it does not use
(``sum_j F * a(j) = F * sum_j a(j)``), and like it, it can change a result only
where a monomial is inf * 0.  The rule looks at the terms of a statement that
have no sums of their own (sums are contraction ordering's business, and
bracket elimination's), groups those with the same brackets (so every strong
zero stays exactly where it was), and takes as F the factors that two of them
share, each to the smaller power (integer powers of one sign only: that is
when canon_term would merge them back).  Every term of the group holding F
gives one term of the new statement.  The new statement ranges over the
generators its terms use; the group's brackets go with it only when its reads
need them to be provably in range.  The rewrite is kept only when it makes
the program cheaper (``engine.cheaper``); among several choices of F in one
statement the cheapest program wins (``costs.rank_costs``), ties going to the
earlier candidate in an order that no index name decides.
"""
from __future__ import annotations

from ..check import BoundsChecker
from ..costs import program_cost, rank_costs
from ..errors import ErrorSink
from ..ssa import build as B
from ..ssa import traverse as T
from ..ssa.ir import Access, Affine, Apply, Group, IndexVar, Program, Reduce, Stmt, Term
from ..ssa.names import unique_name
from .engine import cheaper

# At most this many terms of one statement are compared pairwise.
PAIR_LIMIT = 24


def _powers(t: Term) -> dict:
    return {f: p for f, p in t.factors}


def _common_power(p: float, q: float) -> float | None:
    """The power of a factor both terms can give up: the one nearer zero, when
    both are integers of one sign."""
    if not (float(p).is_integer() and float(q).is_integer()) or (p > 0) != (q > 0):
        return None
    return min(p, q) if p > 0 else max(p, q)


def _shared(a: Term, b: Term) -> tuple:
    """The factors a and b share, each to the power both can give up, in a's order."""
    pb = _powers(b)
    out = []
    for f, p in a.factors:
        if f in pb:
            c = _common_power(p, pb[f])
            if c is not None:
                out.append((f, c))
    return tuple(out)


def _holds(t: Term, common: tuple) -> bool:
    pt = _powers(t)
    for f, p in common:
        q = pt.get(f)
        if q is None or _common_power(p, q) != p:
            return False
    return True


def _rest(t: Term, common: tuple) -> tuple:
    """t's factors with `common` divided out."""
    take = dict(common)
    out = []
    for f, p in t.factors:
        q = p - take.get(f, 0.0)
        if q != 0:
            out.append((f, q))
    return tuple(out)


def _worth_sharing(common: tuple) -> bool:
    """Does F hold more than one multiplication's worth of work?"""
    return len(common) >= 2 or any(isinstance(f, (Apply, Group, Reduce)) or p not in (1.0, -1.0)
                                   for f, p in common)


def _candidates(s: Stmt) -> list[tuple]:
    """(F, the terms holding it) for every F two loop-free terms with equal brackets share."""
    plain = [t for t in s.body if not t.sums][:PAIR_LIMIT]
    seen = {}
    for k, a in enumerate(plain):
        for b in plain[k + 1:]:
            if a.pred != b.pred:
                continue
            common = _shared(a, b)
            if not common or not _worth_sharing(common):
                continue
            key = frozenset(common)
            if key in seen:
                continue
            members = tuple(t for t in s.body
                            if not t.sums and t.pred == a.pred and _holds(t, common))
            seen[key] = (common, members)
    return list(seen.values())


def _rewrite(prog: Program, k: int, common: tuple, members: tuple, used: set) -> Program | None:
    """prog with statement k's `members` replaced by F * h and h stored before it."""
    s = prog.stmts[k]
    pred = members[0].pred
    scale = abs(members[0].coeff)
    if any(abs(t.coeff) != scale for t in members):
        scale = 1.0
    name = unique_name(f"{s.name}_fac", used)
    for guarded in (False, True):
        terms = [Term(t.coeff / scale, (), pred if guarded else (), _rest(t, common))
                 for t in members]
        body = B.canon_body(terms)
        if len(body) < 2:
            return None            # the remainders merged: like-term merging's job
        # A gathered label is checked where it is read, and a bracket may exclude
        # it (`[y[s] < k] * P[s, y[s]]` takes any label): such reads keep their
        # brackets.  Others go without them when they are provably in range.
        if not guarded and T.gathered_tensors(body):
            continue
        free = T.index_names(body)
        indices = tuple((n, d) for n, d in s.indices if n in free)
        held = Stmt(name, indices, body)
        if _in_bounds(prog, k, held):
            break
    else:
        return None
    read = Access(name, tuple(Affine.of(IndexVar(n)) for n, _ in indices))
    kept = [t for t in s.body if not any(t is m for m in members)]
    main = Term(scale, (), pred, common + ((read, 1.0),))
    new = Stmt(s.name, s.indices, B.canon_body(kept + [main]), s.span)
    return Program(prog.name, prog.params, prog.stmts[:k] + (held, new) + prog.stmts[k + 1:],
                   prog.outputs, prog.tuple_return)


def _in_bounds(prog: Program, k: int, stmt: Stmt) -> bool:
    # the statements after k stay in the trial: a recurrence step reads members defined later
    trial = Program(prog.name, prog.params, prog.stmts[:k] + (stmt,) + prog.stmts[k:],
                    (stmt.name,), False)
    sink = ErrorSink()
    checker = BoundsChecker(trial, sink)
    checker.body(stmt.body, checker.base.with_ranges(stmt.indices), dict(stmt.indices))
    return not sink


def factor_common_products(prog: Program) -> Program:
    """F * a + F * b -> F * h with h = a + b a new statement, where cheaper (see the
    module docstring); one statement per application."""
    used = ({p.name for p in prog.params} | {s.name for s in prog.stmts} | set(prog.sizes()))
    for k, s in enumerate(prog.stmts):
        trials = []
        for common, members in _candidates(s):
            new = _rewrite(prog, k, common, members, used)
            if new is not None and cheaper(new, prog, strictly=True):
                trials.append(new)
        if trials:
            keys = rank_costs([program_cost(p) for p in trials])
            return trials[min(range(len(trials)), key=lambda j: (keys[j], j))]
    return prog
