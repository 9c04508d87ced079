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
where a monomial is inf * 0.  The rule groups the terms of a statement that
have the same brackets (so every strong zero stays exactly where it was) and
the same sums: terms with sums of equal ranges are compared with the sums of
one renamed to the other's, in every order that maps each range to an equal
one, and match when that makes their brackets equal (so ``sum[r, c](F * a)`` and
``sum[s, e](F * b)`` give ``sum[r, c](F * h[r, c])``).  It takes as F the factors
that two of them share, each to the smaller power (integer powers of one sign
only: that is when canon_term would merge them back), when they hold more than one
multiplication's work, or, in a derivative that misses its certificate's bound, when
the parts beside F leave out an index of the statement, so that h is stored over
fewer indices than F * h runs over (``X[e, c] * s[e] - X[e, c] * r0`` gives
``h[e] = s[e] - r0``).  Every term of the group
holding F gives one term of the new statement.  The new statement ranges over
the generators and sums its terms use; the group's brackets go with it only
when its reads need them to be provably in range.  The rewrite is kept only when it makes
the program cheaper (``engine.cheaper``); among several choices of F in one
statement the cheapest program wins (``costs.rank_costs``), ties going by the
structure of the statements each puts in place (their keys with generators by
position, `_first_by_shape`): the candidates come in the order of the statement's terms,
which their canonical order sorts by index names.
"""
from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from itertools import permutations

from ..check import BoundsChecker
from ..costs import Cost, program_cost, rank_costs, splice_cost
from ..errors import ErrorSink
from .. import sizexpr
from ..ssa import build as B
from ..ssa import traverse as T
from ..bounds import Facts, covers, size_facts
from ..domain import reads_labels_read_unguarded
from ..shared import normal_under
from ..memo import Memo
from ..ssa.ir import (Access, Affine, Apply, Gather, Group, IdxCmp, IndexVar, Program, Reduce, Rel,
                      Stmt, Term, order_key, splice)
from ..ssa.names import fresh, unique_name
from .engine import cheaper_cost

# At most this many terms of one statement are compared pairwise.
PAIR_LIMIT = 24
# Terms with more sums than this are not aligned with each other.
MAX_SUMS = 4


def _powers(t: Term) -> dict:
    """t's powers by (factor, sign): a factor may stand twice in a term, to a positive
    and to a negative power (``e / e ** 3``: powers of two signs are never merged),
    and only a power of one sign may be divided out of the power of that sign."""
    return {(f, p > 0): p for f, p in t.factors}


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
        if (f, p > 0) in pb:
            c = _common_power(p, pb[f, p > 0])
            if c is not None:
                out.append((f, c))
    return tuple(out)


def _spelled_as(a: Term, b: Term, indices) -> Term:
    """b with each call or group factor that equals one of a's wherever b's index
    brackets hold written as a's: `exp(... + [l >= 1] * V[l - 1, ...])` in a and
    `exp(... + V[l - 1, ...])` in a term of b under `[l >= 1]` are one factor there
    (compared by shared.normal_under, which drops the brackets the facts prove from
    inside both).  b with a's sums (`_aligned`)."""
    if not b.pred:
        return b
    theirs = {f for f, _ in a.factors}
    compound = [f for f, _ in b.factors if f.__class__ in (Apply, Group) and f not in theirs]
    if not compound:
        return b
    facts = Facts().with_ranges(tuple(indices) + tuple(b.sums)).with_pred(
        tuple(x for x in b.pred if x.__class__ is IdxCmp))
    mine = {}
    for f, _ in a.factors:
        if f.__class__ in (Apply, Group):
            mine.setdefault(normal_under(f, facts), f)
    if not mine:
        return b
    factors = tuple((mine.get(normal_under(f, facts), f) if f in compound else f, p)
                    for f, p in b.factors)
    return b if factors == b.factors else Term(b.coeff, b.sums, b.pred, factors)


def _holds(t: Term, common: tuple) -> bool:
    pt = _powers(t)
    for f, p in common:
        q = pt.get((f, p > 0))
        if q is None or _common_power(p, q) != p:
            return False
    return True


def _rest(t: Term, common: tuple) -> tuple:
    """t's factors with `common` divided out."""
    take = _powers(Term(1.0, (), (), common))
    out = []
    for f, p in t.factors:
        q = p - take.get((f, p > 0), 0.0)
        if q != 0:
            out.append((f, q))
    return tuple(out)


def _worth_sharing(common: tuple) -> bool:
    """Does F hold more than one multiplication's worth of work?"""
    return len(common) >= 2 or any(isinstance(f, (Apply, Group, Reduce)) or p not in (1.0, -1.0)
                                   for f, p in common)


def _leaves_fewer_indices(a: Term, b: Term, common: tuple, gens: tuple) -> bool:
    """Do a and b (with a's sums) hold F only beside parts that leave out one of the
    statement's generators or of their sums?  Then h = a + b is stored over fewer
    indices than F * h runs over, and one read of F is worth sharing: in
    `X[e, c] * s[e] - X[e, c] * r0` over (e, c), h[e] = s[e] - r0 is computed once per
    e, not once per (e, c)."""
    used = set()
    for t in (a, b):
        used |= T.index_names(Term(1.0, (), (), _rest(t, common)))
    return not ({g for g, _ in gens} | {n for n, _ in a.sums}) <= used


def _aligned(a: Term, b: Term, loose: bool = False):
    """b with its sums renamed to a's so that its brackets are a's (a's sums in
    their order, each renamed sum of b's range), or None when no renaming does it.
    Only renamings that keep the ranges are tried; of those that match, the one
    under which the two share the most factors.  `loose`: the brackets may differ
    (b keeps its own, renamed) when those of both are index brackets."""
    if len(a.sums) != len(b.sums):
        return None
    if loose and not (_index_brackets(a) and _index_brackets(b)):
        return None
    if not a.sums:
        return b if loose or a.pred == b.pred else None
    want = frozenset(a.pred)
    best, most = None, -1
    for _, inner in sum_renamings(a, b):
        if loose or frozenset(inner.pred) == want:
            out = Term(inner.coeff, a.sums, a.pred if not loose else inner.pred, inner.factors)
            shared = len(_shared(a, out))
            if shared > most:        # the renaming that shares the most factors
                best, most = out, shared
    return best


def sum_renamings(a: Term, b: Term):
    """(perm, b renamed) for each renaming of b's sums to a's that keeps every range: b's
    sum perm[j] becomes a's sum j; b renamed has no sums (a's are its own).  None for
    terms of other numbers or ranges of sums, or of more than MAX_SUMS."""
    if len(a.sums) != len(b.sums) or len(a.sums) > MAX_SUMS or \
            sorted(map(str, (d for _, d in a.sums))) != sorted(map(str, (d for _, d in b.sums))):
        return
    for perm in permutations(range(len(b.sums))):
        if any(b.sums[perm[j]][1] != a.sums[j][1] for j in range(len(a.sums))):
            continue
        rename = {b.sums[perm[j]][0]: Affine.of(IndexVar(a.sums[j][0]))
                  for j in range(len(a.sums))}
        yield perm, T.substitute_term(Term(b.coeff, (), b.pred, b.factors), rename)


def pair_seeds(s: Stmt) -> tuple:
    """The terms of s that a rule compares pairwise: all of them, or of a statement
    longer than PAIR_LIMIT the first PAIR_LIMIT in an order no index name decides
    (`simplify.terms_by_structure`).  Canonical order sorts by the names, and taking
    its first terms made a circuit's jvp cost 2945 or 2913 L as its qubits' indices
    were named."""
    if len(s.body) <= PAIR_LIMIT:
        return s.body
    from .simplify import terms_by_structure
    return terms_by_structure(s)[:PAIR_LIMIT]


def _index_brackets(t: Term) -> bool:
    return all(isinstance(x, (IdxCmp, Rel)) for x in t.pred)


def _candidates(s: Stmt, single_reads: bool = False) -> list[tuple]:
    """`_candidates_of(s, single_reads)`, remembered for the statement object itself:
    the members are s's own terms (the rewrite keeps the others by identity), and
    every application of the rule asks again for the statements it did not factor,
    which a program carries over as they are."""
    return _CANDIDATES.for_object(s, (s, single_reads), lambda: _candidates_of(s, single_reads))


_CANDIDATES = Memo(4096)


def _candidates_of(s: Stmt, single_reads: bool = False) -> list[tuple]:
    """(F, the terms holding it) for every F two terms with equal sums share: terms
    with equal brackets (a term's sums renamed to the other's where that makes them
    equal), and terms whose index brackets differ (`[i == 0] * a[i] * F + [i >= 1] *
    b[i] * F`, a bracketed sum times F), each keeping its own.  The terms returned are
    so renamed, with the sums of the first.  With `single_reads`, also one shared
    plain read whose terms leave out an index of s beside it (`_leaves_fewer_indices`)."""
    body = pair_seeds(s)
    seen = {}

    def as_a(a: Term, t: Term, loose: bool):
        """t with a's sums and spelling (None when they do not align), computed once
        per pair (`_SPELLED`): every candidate of a term looks through all the others,
        and a factoring leaves the other terms of the statement it rewrites as they
        were, so the next search pairs them again."""
        return _SPELLED.compute((a, t, loose, s.indices),
                                lambda: _spelling(a, t, loose, s.indices))
    for loose in (False, True):
        for k, a in enumerate(body):
            for b in body[k + 1:]:
                b2 = as_a(a, b, loose)
                if b2 is None or (loose and b2.pred == a.pred):
                    continue
                common = _shared(a, b2)
                if not common or not (_worth_sharing(common) or single_reads and
                                      _leaves_fewer_indices(a, b2, common, s.indices)):
                    continue
                key = (frozenset(common), a.sums, None if loose else a.pred)
                if key in seen:
                    continue
                members = []
                for t in s.body:
                    t2 = t if t is a else as_a(a, t, loose)
                    if t2 is not None and _holds(t2, common):
                        members.append((t, t2))
                seen[key] = (common, tuple(members))
    return list(seen.values())


def _spelling(a: Term, t: Term, loose: bool, indices) -> Term | None:
    t2 = _aligned(a, t, loose)
    return None if t2 is None else _spelled_as(a, t2, indices)


_SPELLED = Memo(50_000)


def _rewrite(prog: Program, k: int, common: tuple, members: tuple, used: set) -> Program | None:
    """prog with statement k's `members` ((term, term with the first's sums) pairs)
    replaced by sum_S F * h[..., S] and h stored before it."""
    put = _factoring(prog, k, common, members, used, prog.shapes())
    return None if put is None else splice(prog, k, k + 1, put)


def _factoring(prog: Program, k: int, common: tuple, members: tuple, used: set,
               shapes: dict) -> tuple | None:
    """(h, statement k factored) of `_rewrite`, or None (`shapes`: prog.shapes()).

    The two statements depend on statement k (its place in the source included),
    the candidate, h's name, the shapes of what k reads and the sizes only; every
    application of the rule tries the statements it did not factor again, so they
    are remembered by those."""
    s = prog.stmts[k]
    name = unique_name(f"{s.name}_fac", used)
    key = (s, s.span, common, members, name,
           tuple((n, shapes.get(n)) for n in _read_names(s)), tuple(prog.sizes()))
    return _TRIALS.compute(key, lambda: _factored(prog, k, common, members, name))


# Factored statements by what they depend on (see _factoring).
_TRIALS = Memo(20_000)


def _read_names(s: Stmt) -> tuple:
    """The tensors s reads, gathered labels and relations included, sorted: what the
    bounds proofs of its factored statements look up (see `_reads_in_bounds`)."""
    return _READ_NAMES.compute(s, lambda: tuple(sorted(
        {n.name for n in T.iter_nodes(s.body) if n.__class__ in (Access, Gather, Rel)})))


_READ_NAMES = Memo(20_000)


def _factored(prog: Program, k: int, common: tuple, members: tuple, name: str) -> tuple | None:
    """(h, statement k factored) for `_factoring`, or None."""
    s = prog.stmts[k]
    stored = _stored(prog, k, common, members, name)
    if stored is None:
        return None
    gens, body, indices, pred, outer, scale = stored
    held = Stmt(name, gens, body)
    read = Access(name, tuple(Affine.of(IndexVar(n)) for n, _ in indices))
    kept = [t for t in s.body if not any(t is m for m, _ in members)]
    main = Term(scale, members[0][1].sums, pred + outer, common + ((read, 1.0),))
    new = Stmt(s.name, s.indices, _body_with(s, kept, main), s.span)
    out = splice(prog, k, k + 1, (held, new))
    if any(t.pred != pred for _, t in members) and not _reads_in_bounds(out, new):
        return None            # F is read under the weaker bracket: provably in range?
    return held, new


def _body_with(s: Stmt, kept: list, main: Term) -> tuple:
    """B.canon_body(kept + [main]), `kept` being s's terms but the factored ones.

    When s's body is in normal form term by term (`_normal_keys`) and main's normal
    form is one term like none of s's, that is s's kept terms as they are with main's
    normal form put where sorting puts it (after the terms whose order key equals
    its: the sort is stable): the kept terms stay the same objects, so what is
    remembered of them (plans, costs, proofs) is found by identity.  Otherwise it is
    put together from the kept terms' remembered parts."""
    keys = _normal_keys(s)
    parts = B.term_parts(main)
    if keys is not None and len(parts) == 1 and parts[0][1] != 0 and parts[0][0] not in keys:
        (sums, pred, factors), coeff = parts[0]
        term = Term(coeff, sums, pred, factors)
        at = bisect_right(kept, order_key(term), key=order_key)
        return tuple(kept[:at]) + (term,) + tuple(kept[at:])
    return B.merged_body([part for t in kept for part in _parts(t)] + parts)


def _normal_keys(s: Stmt) -> frozenset | None:
    """The (sums, brackets, factors) of s's terms when canon_body would give s's body
    back term for term (each term its own normal form, made of the same atoms and
    factors, with a nonzero float coefficient; all unlike; sorted), else None;
    remembered for the statement object."""
    return _NORMAL_KEYS.for_object(s, s, lambda: _normal_keys_of(s.body))


_NORMAL_KEYS = Memo(4096)


def _normal_keys_of(body: tuple) -> frozenset | None:
    if not B.zero_terms_dropped_silently():
        return None
    keys = set()
    last = None
    for t in body:
        parts = _parts(t)
        if len(parts) != 1 or t.coeff.__class__ is not float or t.coeff == 0:
            return None
        (sums, pred, factors), coeff = parts[0]
        if coeff.__class__ is not float or coeff != t.coeff or sums is not t.sums \
                or len(pred) != len(t.pred) or any(a is not b for a, b in zip(pred, t.pred)) \
                or len(factors) != len(t.factors) \
                or any(f is not g or p.__class__ is not q.__class__ or p != q
                       for (f, p), (g, q) in zip(factors, t.factors)):
            return None
        key = order_key(t)
        if last is not None and key < last:
            return None
        last = key
        keys.add((sums, pred, factors))
    return frozenset(keys) if len(keys) == len(body) else None


def _parts(t: Term) -> list:
    """B.term_parts(t), remembered for the term object itself: the statement a rule
    factors keeps all its terms but two or three, by identity, in every trial and in
    the statement it becomes.  (It depends on t alone outside lowering, where the
    rules run; while lowering, on `zero_terms` too, and it is not remembered.)"""
    if not B.zero_terms_dropped_silently():
        return B.term_parts(t)
    return _PARTS.for_object(t, t, lambda: B.term_parts(t))


_PARTS = Memo(50_000)


def _stored(prog: Program, k: int, common: tuple, members: tuple, name: str) -> tuple | None:
    """(generators, body, indices read, shared brackets, outer bracket, scale) of the
    statement h that `_factored` stores, or None when there is none.

    It depends on the candidate's aligned members and common factor, statement k's
    indices, the shapes of what the members read and the sizes only: not on the
    statement's other terms nor on h's name (`name`, which prog does not use).  A statement factored once is tried
    again with most of its candidates as they were, so this is remembered by those,
    where the program has no derived size (then the trial programs' sizes, which
    the bounds proofs read, are the program's).  A remembered h keeps the
    generator names drawn when it was first built."""
    if any(sizexpr.is_derived(z) for z in prog.sizes()):
        return _store(prog, k, common, members, name)
    shapes = prog.shapes()
    aligned = tuple(t for _, t in members)
    read = sorted({n for t in aligned for n in _term_reads(t)})
    key = (common, aligned, prog.stmts[k].indices, tuple((n, shapes.get(n)) for n in read),
           tuple(prog.sizes()))
    return _STORED.compute(key, lambda: _store(prog, k, common, members, name))


_STORED = Memo(20_000)


def _store(prog: Program, k: int, common: tuple, members: tuple, name: str) -> tuple | None:
    """`_stored`, computed (`name`: h's, a name prog does not use)."""
    s = prog.stmts[k]
    first = members[0][1]
    sums = first.sums
    # The brackets all members share guard the product; each keeps the rest of its
    # own in the stored sum, and the product is guarded by their disjunction unless
    # it always holds (so every strong zero stays where it was).
    pred = tuple(x for x in first.pred if all(x in t.pred for _, t in members))
    own = [tuple(x for x in t.pred if x not in pred) for _, t in members]
    outer = ()
    if all(own) and not covers(own, size_facts(prog).with_ranges(tuple(s.indices) + sums)
                                .with_pred(pred)):
        either = B.any_of(own)
        if not isinstance(either, bool):
            outer = (either,)
    scale = abs(first.coeff)
    if any(abs(t.coeff) != scale for _, t in members):
        scale = 1.0
    ranges = tuple(s.indices) + tuple(sums)
    for guarded in (False, True):
        terms = [Term(t.coeff / scale, (), mine + (pred if guarded else ()), _rest(t, common))
                 for (_, t), mine in zip(members, own)]
        body = B.canon_body(terms)
        if len(body) < 2:
            return None            # the remainders merged: like-term merging's job
        # A gathered label is checked where it is read, and a bracket may exclude
        # it (`[y[s] < k] * P[s, y[s]]` takes any label): such reads keep their
        # brackets, unless the program reads the same labels into the same
        # dimensions outside any bracket (domain.labels_read_unguarded), so that a
        # call with a label outside stops there.  Others go without them when they
        # are provably in range.
        if not guarded and T.gathered_tensors(body) \
                and not reads_labels_read_unguarded(body, dict(ranges), prog):
            continue
        free = T.index_names(body)
        indices = tuple((n, d) for n, d in ranges if n in free)
        gens = tuple((fresh(n), d) for n, d in indices)
        rename = {n: Affine.of(IndexVar(m)) for (n, _), (m, _) in zip(indices, gens)}
        held_body = B.canon_body([T.substitute_term(u, rename) for u in body])
        # Proved with the indices named as statement k names them, not as h's fresh
        # generators: a renaming of indices one for one changes no range nor bracket,
        # and the same remainders come back in the candidates of later applications
        # (each time with other fresh names), where a term's proof, remembered by the
        # term (`_reads_in_bounds`), is then found.  (The proof does not read h's
        # name, only that no other statement has it.)
        if _in_bounds(prog, k, Stmt(name, indices, body)):
            return gens, held_body, indices, pred, outer, scale
    return None


def _in_bounds(prog: Program, k: int, stmt: Stmt) -> bool:
    # the statements after k stay in the trial: a recurrence step reads members defined later
    trial = splice(prog, k, k, (stmt,), (stmt.name,), False)
    return _reads_in_bounds(trial, stmt)


def _reads_in_bounds(trial: Program, stmt: Stmt) -> bool:
    """Are the reads of stmt (whose tensors trial defines) provably in range?

    The bounds stage checks each term of a statement alone (check.BoundsChecker.term:
    the statement's generators and the size facts, then the term's own sums and
    brackets), so the statement's reads are in range when each term's are.  A term's
    proof depends on the term, the statement's indices, the shapes of what the term
    reads and the size symbols only; it is remembered by them, since the rule builds
    the same trial statements again in every round until one of them is taken, and
    the statements it factors keep all their terms but the two or three it takes out."""
    shapes = trial.shapes()
    sizes = tuple(trial.sizes())
    for t in stmt.body:
        # (not the statement's name: a trial of another round names it afresh)
        key = (stmt.indices, t, tuple((n, shapes.get(n)) for n in _term_reads(t)), sizes)
        if not _PROVEN.compute(key, lambda t=t: _prove_term(trial, stmt.indices, t)):
            return False
    return True


_PROVEN = Memo(50_000)


def _term_reads(t: Term) -> tuple:
    """The tensors term t reads, gathered labels and relations included, sorted."""
    return _TERM_READS.compute(t, lambda: tuple(sorted(
        {n.name for n in T.iter_nodes(t) if n.__class__ in (Access, Gather, Rel)})))


_TERM_READS = Memo(50_000)


def _prove_term(trial: Program, indices: tuple, t: Term) -> bool:
    sink = ErrorSink()
    checker = BoundsChecker(trial, sink)
    checker.term(t, checker.base.with_ranges(indices), dict(indices))
    return not sink


def _trades_sizes(new: Cost, old: Cost, allowed: tuple = ()) -> bool:
    """Does cost `new` have a monomial that divides none of `old`'s, nor any of `allowed`?
    Storing h can cost more than it saves where sizes differ: the symmetrised kernel
    A[j, p] + A[p, j] of a band sum costs k^2 where the terms it shares cost k m n,
    which is cheaper with all sizes equal but not for a large kernel over a short
    signal.  A derivative may still take such a trade when its certificate allows
    the new monomial anyway (`allowed`, see `FactorWithin`)."""
    from ..certificate import unbounded_monomial
    reach = old + Cost({m: 1 for m in allowed})
    return unbounded_monomial(new, reach) is not None


def factor_common_products(prog: Program, allowed: tuple = (), budget=None) -> Program:
    """F * a + F * b -> F * h with h = a + b a new statement, where cheaper (see the
    module docstring).  One application factors every statement it can, in order,
    each against the program the factorings before it left, and looks again at the
    two statements a factoring puts in place (h, and the statement it factored, may
    have common factors of their own): one factoring per application took a round
    of the engine each, and a Hessian whose expanded partials hold dozens of them
    ran out of rounds.  `allowed`: monomials (as in `Cost.terms`) a rewrite may add
    besides those of `prog`'s cost.  `budget` (hoist.Budget, for a derivative): an h
    larger than every tensor the function holds is stored only when the program
    misses the budget's bound without it."""
    used = ({p.name for p in prog.params} | {s.name for s in prog.stmts} | set(prog.sizes()))
    at, k = _Program.of(prog), 0
    while k < len(prog.stmts):
        put = _best_factoring(at, k, used, allowed, budget)
        if put is None:
            k += 1
            continue
        prog = splice(prog, k, k + 1, put)
        used |= {st.name for st in put}
        at = _Program.of(prog)
    return prog


@dataclass(frozen=True)
class _Program:
    """A program with what every factoring trial of its statements reads."""
    prog: Program
    cost: Cost
    stored: set
    shapes: dict

    @staticmethod
    def of(prog: Program) -> "_Program":
        return _Program(prog, program_cost(prog), {s.name for s in prog.stmts}, prog.shapes())


def _best_factoring(at: _Program, k: int, used: set, allowed: tuple,
                    budget) -> tuple | None:
    """The statements to put in place of statement k by its cheapest factoring that
    leaves the program strictly cheaper, or None."""
    prog, before = at.prog, at.cost
    small_only = budget is not None and budget.allows(before)
    # One shared read beside parts of fewer indices is factored only in a derivative
    # that misses its certificate's bound: each such factoring saves a constant
    # factor, and the trials it adds made a pose graph's Hessian 4.6 times as long
    # to build, for a fifth less work.
    single_reads = budget is not None and not small_only
    trials, costs = [], []
    for common, members in _candidates(prog.stmts[k], single_reads):
        put = _factoring(prog, k, common, members, used, at.shapes)
        if put is None or small_only and any(
                st.name not in at.stored and budget.larger_than_held(st.dims) for st in put):
            continue
        # (a trial is costed from the two statements it puts in place of s, and
        # made a program only when it is kept)
        cost = splice_cost(prog, k, put)
        if cheaper_cost(cost, before, strictly=True) \
                and not _trades_sizes(cost, before, allowed):
            trials.append(put)
            costs.append(cost)
    if not trials:
        return None
    keys = rank_costs(costs)
    best = min(keys)
    tied = [j for j in range(len(trials)) if keys[j] == best]
    if len(tied) == 1:
        return trials[tied[0]]
    # Equally cheap choices go by their structure, not by the order of the candidates,
    # which follows the statement's terms in canonical order and so the index names
    # (a Bloch simulation's jvp, 475 or 502 T V as its indices were named).
    return trials[tied[_first_by_shape([trials[j] for j in tied])]]


def _first_by_shape(puts: list) -> int:
    """The place in `puts` (each the statements a factoring puts in place of one
    statement) of the first by a key no index name decides: each statement's
    generators by position, its sums by structure (simplify._key_in_order),
    compared statement by statement.  The keys are computed one statement at a
    time and only for the puts still tied: the statement factored is often long
    (a Hessian's expanded partials, a hundred terms), and its key is needed only
    when the stored factors tie."""
    from .simplify import _compute_statement_key
    alive = list(range(len(puts)))
    for place in range(max(len(put) for put in puts)):
        if len(alive) == 1:
            break
        # (as text: the keys hold nodes of several kinds, which need not compare)
        keys = {j: repr(_compute_statement_key(puts[j][place])) if place < len(puts[j])
                else "" for j in alive}
        least = min(keys.values())
        alive = [j for j in alive if keys[j] == least]
    return alive[0]


@dataclass(frozen=True)
class FactorWithin:
    """factor_common_products for a derivative, which may trade sizes for the
    monomials its certificate allows (`allowed`, the monomials of the certificate's
    reference, `certificate.reference_for`): the jvp of a quadratic band form with
    respect to A as well reads the k^2 elements of A's tangent, so storing the
    symmetrised kernel (k^2) to save a k m n term is within what it may cost, where
    the jvp with respect to y alone may not.  A value (hashable by its monomials), so
    that simplifications with equal rules are remembered as one."""
    allowed: tuple
    budget: object = None       # hoist.Budget: see factor_common_products

    def __call__(self, prog: Program) -> Program:
        return factor_common_products(prog, self.allowed, self.budget)
