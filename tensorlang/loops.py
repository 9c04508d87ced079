"""Loop-nest plans: how each Tensor SSA statement runs as loops.

This is the contract between the cost model, the instrumented counter and the
compiled backend.  A statement ``y[G] = t_1 + ... + t_m`` runs as

* a zero-filled output when some term scatters (see below);
* one loop nest over the generators ``G`` in which every *gather* term adds its
  value into a local accumulator (its own sums are inner loops), then the
  element is written once;
* for every *scatter* term, a separate loop nest over its remaining indices
  that computes the solved generators and adds into ``y`` at that position.
  The loops the solved generators are computed from run outermost, and the
  generators, with the index brackets that need nothing deeper (their range
  checks), are computed there: the adjoint of ``U[user[q], c]`` finds
  ``k = user[q]`` and checks it once per ``q``, then adds a whole row.

A term scatters when one of its equalities fixes a generator index from
indices it does not loop over itself, e.g. ``[k == l]`` (the diagonal of a
Hessian: only n of the n^2 entries are visited) or ``[k == y[s]]`` (the adjoint
of a gather: each label sends its row to one place), and when a band between
generators bounds the loop of one by another with a width in sizes
(``[k - 1 <= l <= k + 1]``: only the band is visited).  Equalities involving a
summed index are never solved here: eliminating them is the simplifier's job,
and the naive derivative must show the cost of not doing so.

Guards on a summed index become that loop's bounds whenever they bound it by
an affine expression of sizes and of indices bound outside the loop:
``[v + i < n]`` gives ``v <= n - 1 - i``, a band ``[0 <= l - v < k]`` gives
``l - k + 1 <= v <= l``, and a strided guard ``[2 * v <= l]`` gives
``v <= floor(l / 2)``.  The loop runs from the largest lower bound to the
smallest upper bound (its range included).  An equality with a stride,
``[2 * v == l]``, is the pair of bounds ``ceil(l / 2) <= v <= floor(l / 2)``:
at most one iteration, and none when 2 does not divide l.  (An equality with
coefficient +-1 is not a bound: eliminating it is the simplifier's job, and
the naive derivative must show the cost of not doing so.)  Every other
bracket is a filter tested on each iteration.  A guard tying two summed indices
bounds only the inner one's loop, so the order of the summed loops matters there:
each order is planned and the cheapest taken (`_cheapest_sum_order`).

The cost model counts a loop's iterations by a polynomial in the sizes: the
range, or, when the bounds that depend on outer indices differ by sizes only
(a band of width k), that width; either way an upper bound on the true trip
count, exact when the bounds are sizes only.  A band that ties a summed index to one
generator of the statement bounds the pairs of the two, whatever the
generator's range: in ``x_bar[l: n] = sum[j: k]([0 <= l - j < m] ...)`` at most
m values of l meet each j, so the term runs at most k * m times in all, not
n * min(k, m) (``Loop.pairs``; the cost model picks the cheaper count).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from .bounds import Facts, size_facts
from .memo import Memo
from .ssa.ir import (Affine, AnyOf, IdxCmp, IndexVar, Program, Rel, SizeVar, Stmt, Term,
                     ValCmp)
from .ssa.traverse import index_names


@dataclass(frozen=True)
class Bound:
    """``var >= ceil(aff / q)`` as a lower bound, ``var <= floor(aff / q)`` as an upper one."""
    aff: Affine
    q: int = 1


@dataclass(frozen=True)
class Loop:
    var: str
    lo: Affine          # inclusive, in size symbols and constants
    hi: Affine          # inclusive
    lows: tuple[Bound, ...] = ()     # further lower bounds, in enclosing indices too
    highs: tuple[Bound, ...] = ()    # further upper bounds
    # With lows or highs: the upper bounds on the trip count that the cost model
    # chooses from, each (d, q) standing for d / q + 1 with d in sizes only (the
    # range, a band's width); none of them provably wider than another.
    widths: tuple[tuple[Affine, int], ...] = ()
    # (g, d, c): a generator g of the enclosing statement, bound outside this term,
    # that this loop's bounds tie to its index by a band: for any value of the
    # index (and of every other index) at most floor(d / c) + 1 values of g pass
    # both bounds, d in sizes only.  g appears in the bounds of no other loop of
    # the term, so counting the pairs instead of g's range times the width is
    # an upper bound on the term's iterations summed over the statement.
    pairs: tuple[tuple[str, Affine, int], ...] = ()
    # Looser candidates, for the cost model only: trip counts (d, q) that bounds
    # moving with outer indices leave at those indices' extremes (or a strided
    # bound against the range), and pairs (g, d, c) that one bound alone leaves.
    # Planning ignores them (`banded` looks at `widths` only).
    loose: tuple[tuple[Affine, int], ...] = ()
    loose_pairs: tuple[tuple[str, Affine, int], ...] = ()
    # Counts the model does not take by itself but that bound the same loop all the
    # same: the looser candidates of a plan kept for counting its ranges alone
    # (`_cheaper_plan`); the certificate may try them (costs.choosing).
    spare: tuple[tuple[Affine, int], ...] = ()

    @property
    def exact(self) -> bool:
        """Do lo and hi alone bound the loop (so hi - lo + 1 is its trip count)?"""
        return not self.lows and not self.highs

    @property
    def banded(self) -> bool:
        """Do the bounds that move with an outer index give a width in sizes?"""
        return any(w != (self.hi - self.lo, 1) for w in self.widths)


@dataclass(frozen=True)
class TermPlan:
    term: Term
    loops: tuple[Loop, ...]                 # outermost first (gather terms: sums only)
    solved: tuple[tuple[str, Affine], ...]  # scatter terms: generator := affine
    filters: tuple                          # atoms tested each iteration
    scatter: bool
    # Index guards that use none of the term's loop indices: tested once, before
    # the loops (`[2 * i + 1 < h]` on a term summing over a window at i).
    outer_filters: tuple = ()
    # A scatter whose solved generators need only its first `stage` loops computes
    # them there, and tests the index brackets `staged` that need nothing deeper,
    # once per iteration of those loops: `k = user[q]` and its range check once
    # per label, not once per column of the row it adds.  None: innermost.
    stage: int | None = None
    staged: tuple = ()
    # Loops over indices the plan makes up itself, (name, dim): the offset into a
    # strided window (`[0 <= k - 2 * r <= 1]` runs as k = 2 * r + o, o in 0 .. 1).
    fresh: tuple = ()

    @property
    def solve_depth(self) -> int:
        """How many of the loops are open where the solved generators are computed."""
        return len(self.loops) if self.stage is None else self.stage


@dataclass(frozen=True)
class StmtPlan:
    stmt: Stmt
    gather_terms: tuple[TermPlan, ...]
    scatter_terms: tuple[TermPlan, ...]
    # The scatter terms in passes: the terms of one pass share the loops their
    # solved generators are computed from (see fuse_scatters).  Empty: one each.
    scatter_passes: tuple[tuple[TermPlan, ...], ...] = ()

    @property
    def passes(self) -> tuple[tuple[TermPlan, ...], ...]:
        return self.scatter_passes or tuple((tp,) for tp in self.scatter_terms)


def single_var_bound(atom, var: str):
    """For `atom` = (c*var + rest >= 0) with rest in sizes/constants: ('lo'|'hi', bound)."""
    if not (isinstance(atom, IdxCmp) and atom.op == ">="):
        return None
    coef = 0
    rest = []
    for a, c in atom.aff.terms:
        if isinstance(a, IndexVar) and a.name == var:
            coef = c
        elif isinstance(a, SizeVar):
            rest.append((a, c))
        else:
            return None
    if abs(coef) != 1:
        return None
    r = Affine.make(atom.aff.const, rest)
    if coef == 1:
        return "lo", r.scale(-1)            # var >= -rest
    return "hi", r                          # var <= rest


def _unit_solutions(atom, gens: set[str]):
    """Each (g, expr) with g a generator of unit coefficient in equality `atom`,
    solved: `atom` holds exactly where g == expr."""
    if not (isinstance(atom, IdxCmp) and atom.op == "=="):
        return
    for a, c in atom.aff.terms:
        if isinstance(a, IndexVar) and a.name in gens and abs(c) == 1:
            rest = Affine.make(atom.aff.const, [(b, k) for b, k in atom.aff.terms if b != a])
            yield a.name, rest.scale(-c)


def _generator_solutions(atom, gens: set[str], looped: set[str]) -> list:
    """Every (g, expr) such that equality `atom` fixes generator g from non-summed quantities."""
    return [(g, expr) for g, expr in _unit_solutions(atom, gens)
            if not ({b.name for b, _ in expr.terms if isinstance(b, IndexVar)} & looped
                    or g in expr.index_vars())]


def _pick_generator(cands, gens: tuple):
    """Which generator to solve first: the one whose loop is largest (the loops
    over the others remain), then the earliest in the statement's order; never
    by name.  `cands` holds (position in pred, atom, g, expr)."""
    from .opt.engine import COST_SAMPLE_SIZES
    dims = dict(gens)
    order = [g for g, _ in gens]

    def size(g, n):
        d = dims[g]
        return d if isinstance(d, int) else n
    return min(range(len(cands)),
               key=lambda k: (tuple(-size(cands[k][2], n) for n in sorted(COST_SAMPLE_SIZES)[::-1]),
                              order.index(cands[k][2]), cands[k][0]))


def _strided(expr: Affine, summed: set[str]) -> bool:
    """Does `expr` (a generator's solution) read summed indices, each with a stride
    (coefficient other than +-1), and no gathered label?  Such an equality is not the
    simplifier's to eliminate (no summed index has a unit coefficient)."""
    found = False
    for a, c in expr.terms:
        if isinstance(a, IndexVar) and a.name in summed:
            if abs(c) == 1:
                return False
            found = True
        elif not isinstance(a, (IndexVar, SizeVar)):
            return False
    return found


def _strided_solutions(atom, gens: set[str], summed: set[str], solved: set[str]) -> list:
    """Every (g, expr) such that equality `atom` fixes generator g as a strided
    position of summed indices (`[k == 2 * l]`: k = 2 * l)."""
    return [(g, expr) for g, expr in _unit_solutions(atom, gens)
            if _strided(expr, summed) and not (expr.index_vars() & (solved | {g}))]


def _strided_window(pred: list, gens: tuple, summed: set[str], solved: set[str], taken: set[str]):
    """A generator g that two guards hold in a window at a strided position,
    `[0 <= g - E <= W]` with E reading summed indices with strides only (`E = 2 * r`,
    a pooling window) and W a constant: (positions of the two guards, g, E, offset
    name, offset dim), or None.  The window runs as g = E + o with o over 0 .. W, a
    loop of its own.  (A window as wide as a size, the k taps of a strided
    convolution's adjoint, stays a gather: its bounds, computed once per output, serve
    k / stride terms, and the cost model counts its band by the pairs it meets.)"""
    names = {g for g, _ in gens} - solved
    for i, lo in enumerate(pred):
        if not (isinstance(lo, IdxCmp) and lo.op == ">="):
            continue
        for g in (n for n, _ in gens if n in names):
            c, rest = _split(lo.aff, g)
            if c != 1:
                continue
            start = rest.scale(-1)                    # g >= start
            if not _strided(start, summed) or start.index_vars() & solved:
                continue
            for j, hi in enumerate(pred):
                if j == i or not (isinstance(hi, IdxCmp) and hi.op == ">="):
                    continue
                ch, top = _split(hi.aff, g)             # g <= top
                width = top - start
                if ch != -1 or not width.is_const or width.const < 0:
                    continue
                dim = width.const + 1
                k = 0
                while f"{g}_o{k}" in taken:
                    k += 1
                return i, j, g, start, f"{g}_o{k}", dim
    return None


def _residue_class(atom, remaining: set[str]):
    """For `[g % q == 0]`-like `atom` (`(+-g + K) % q == 0`, g a generator, K a
    constant, q >= 2): (g, q, r) with g = q * o + r, 0 <= r < q; else None."""
    if not (isinstance(atom, IdxCmp) and atom.op == "%" and atom.mod >= 2
            and len(atom.aff.terms) == 1):
        return None
    (a, c), = atom.aff.terms
    if not (isinstance(a, IndexVar) and a.name in remaining and abs(c) == 1):
        return None
    return a.name, atom.mod, (-atom.aff.const * c) % atom.mod


def affine_bounds(atom, var: str, later: set[str]):
    """The bounds `atom` puts on loop index `var` in terms of sizes and indices bound
    outside it: a list of ('lo' | 'hi', Bound), empty when it puts none (it mentions
    an index of a loop inside this one, a gather, or `var` with coefficient +-1 in
    an equality)."""
    if not isinstance(atom, IdxCmp) or atom.op not in (">=", "=="):
        return []
    coef = 0
    rest = []
    for a, c in atom.aff.terms:
        if isinstance(a, IndexVar) and a.name == var:
            coef = c
        elif isinstance(a, SizeVar) or (isinstance(a, IndexVar) and a.name not in later):
            rest.append((a, c))
        else:
            return []
    if coef == 0:
        return []
    r = Affine.make(atom.aff.const, rest)
    q = abs(coef)
    # coef * var + r >= 0:  var >= -r / coef  (coef > 0)  or  var <= r / q  (coef < 0)
    if atom.op == ">=":
        return [("lo", Bound(r.scale(-1), q))] if coef > 0 else [("hi", Bound(r, q))]
    if q == 1:
        return []
    # coef * var + r == 0: var = -r / coef, an integer only where q divides r
    solution = r.scale(-1) if coef > 0 else r
    return [("lo", Bound(solution, q)), ("hi", Bound(solution, q))]


def _sizes_only(a: Affine) -> bool:
    return all(isinstance(x, SizeVar) for x, _ in a.terms)


def _band_widths(lo: Affine, hi: Affine, lows, highs, facts: Facts) -> tuple:
    """Upper bounds on the trip count, (d, q) standing for d / q + 1 with d in sizes
    only: the range (hi - lo, 1) and every pair of a lower and an upper bound whose
    difference is in sizes only, less those another is provably no wider than.

    Which of the rest is tightest may depend on the sizes (a band of width k in a
    range n); the cost model picks among them (costs.loop_count).  Each candidate
    counts only if d / q + 1 >= 0 for all sizes, which is checked."""
    cands = [(hi - lo, 1)]
    for k, lb in enumerate((Bound(lo),) + tuple(lows)):
        for m, hb in enumerate((Bound(hi),) + tuple(highs)):
            if (k, m) == (0, 0) or lb.q != hb.q:
                continue                              # the range itself; unlike strides
            d = hb.aff - lb.aff
            if not _sizes_only(d):
                continue
            if d.is_const:
                d = Affine(d.const // lb.q * lb.q)    # floor(d / q) is exact here
            if facts.proves(d.shift(lb.q)) and (d, lb.q) not in cands:   # d / q + 1 >= 0
                cands.append((d, lb.q))
    return _narrowest(cands, facts)


def _narrowest(cands: list, facts: Facts, known=()) -> tuple:
    """`cands` less those another (of cands or `known`) is provably no wider than
    (of two equal ones the earlier is kept)."""
    everything = list(known) + list(cands)
    kept = []
    for k, (d, q) in enumerate(everything):
        if k < len(known):
            continue
        # (d2, q2) is no wider than (d, q) when d * q2 - d2 * q >= 0
        if any(facts.proves(d.scale(q2) - d2.scale(q))
               and (j < k or not facts.proves(d2.scale(q) - d.scale(q2)))
               for j, (d2, q2) in enumerate(everything) if j != k):
            continue
        kept.append((d, q))
    return tuple(kept)


def _loose_widths(lo: Affine, hi: Affine, lows, highs, dims: dict, widths, facts: Facts) -> tuple:
    """Further upper bounds on the trip count, (d, q) as in `_band_widths`, from
    bounds that `_band_widths` cannot pair: a bound that moves with indices of known
    range (`dims`) taken where they loosen it most (`v <= n - 1 - 2 * i` with
    `i >= 0` gives `v <= n - 1`), and a strided bound in sizes only
    (`2 * v <= m - 1`), each against the other end of the range (over the product
    of the strides where these differ: floor(h / qh) - ceil(l / ql) + 1 is at
    most (ql * h - qh * l) / (ql * qh) + 1).  None provably wider than `widths`."""
    ends = []
    for side, group in (("lo", lows), ("hi", highs)):
        for b in group:
            e = b.aff if _sizes_only(b.aff) else _extreme(b.aff, dims, side == "hi")
            if e is not None:
                ends.append((Bound(e, b.q), Bound(hi)) if side == "lo"
                            else (Bound(lo), Bound(e, b.q)))
    cands = []
    for lb, hb in ends:
        d, q = hb.aff.scale(lb.q) - lb.aff.scale(hb.q), lb.q * hb.q
        if d.is_const:
            d = Affine(d.const // q * q)
        if facts.proves(d.shift(q)) and (d, q) not in cands and (d, q) not in widths:
            cands.append((d, q))
    return _narrowest(cands, facts, widths)


def _extreme(aff: Affine, dims: dict, largest: bool):
    """`aff` at the end of every index's range that makes it largest (smallest):
    an affine form in sizes only, or None when an index's range is not in `dims`
    (or `aff` reads a gather)."""
    const, rest = aff.const, []
    for a, c in aff.terms:
        if isinstance(a, SizeVar):
            rest.append((a, c))
        elif isinstance(a, IndexVar) and a.name in dims:
            if (c > 0) == largest:                    # at the top of the range, dim - 1
                top = Affine.dim(dims[a.name]).shift(-1).scale(c)
                const += top.const
                rest.extend(top.terms)
        else:
            return None
    return Affine.make(const, rest)


def _split(aff: Affine, g: str):
    """(coefficient of index g in aff, aff without it)."""
    c = sum(k for a, k in aff.terms if isinstance(a, IndexVar) and a.name == g)
    return c, Affine.make(aff.const, [(a, k) for a, k in aff.terms
                                      if not (isinstance(a, IndexVar) and a.name == g)])


def _band_pairs(lo: Affine, hi: Affine, lows, highs, outer: dict, dims: dict,
                facts: Facts) -> tuple[tuple, tuple]:
    """(two-sided, one-sided): (g, d, c) for generators g in `outer` ((index, dim)
    of the statement's generators) that the loop's bounds tie to its index v: for
    each v, at most floor(d / c) + 1 values of g pass, d in sizes only.

    Two bounds that move with g at the same rate, q * v >= c * g + A and
    q * v <= c * g + B, leave B - A over |c| (a band: two-sided).  One bound
    alone leaves what it allows of g's range at v's extreme: from
    q * v <= c * g + B with c < 0, |c| * g <= B - q * lo; with c > 0, g runs
    from (q * lo - B) / c to the top of its range (and alike for a lower bound).
    Other indices in A and B are taken at the ends of their ranges (`dims`)."""
    two, one = [], []

    def add(out, g, d, c):
        if d is None or not _sizes_only(d):
            return
        d = Affine(d.const // c * c) if d.is_const else d
        if facts.proves(d.shift(c)) and (g, d, c) not in two + one:   # d / c + 1 >= 0
            out.append((g, d, c))
    for g in sorted(outer):
        top = Affine.dim(outer[g]).shift(-1)
        for lb in lows:
            cl, A = _split(lb.aff, g)
            for hb in highs:
                ch, B = _split(hb.aff, g)
                if cl and cl == ch and lb.q == hb.q:
                    add(two, g, B - A, abs(cl))
    for g in sorted(outer):
        top = Affine.dim(outer[g]).shift(-1)
        for lb in lows:
            c, A = _split(lb.aff, g)
            amin = _extreme(A, dims, False)
            if c and amin is not None:
                # q * v >= c * g + A:  c * g <= q * hi - A, or |c| * g >= A - q * hi
                d = hi.scale(lb.q) - amin
                add(one, g, d if c > 0 else top.scale(-c) + d, abs(c))
        for hb in highs:
            c, B = _split(hb.aff, g)
            bmax = _extreme(B, dims, True)
            if c and bmax is not None:
                # q * v <= c * g + B:  |c| * g <= B - q * lo, or c * g >= q * lo - B
                d = bmax - lo.scale(hb.q)
                add(one, g, d if c < 0 else top.scale(c) + d, abs(c))
    return tuple(two), tuple(one)


def plan_loops(var_dims, pred, facts: Facts, inner=frozenset(), outer=()):
    """Loops over (var, dim) pairs, outermost first, with bounds taken from guards.

    `inner` names indices computed inside the innermost loop (a scatter's solved
    generators): no bound may use them.  `outer` holds the (index, dim) pairs of
    the statement's generators, bound outside these loops: a band tying one of
    them to a loop gives `Loop.pairs`."""
    loops = []
    outer = dict(outer)
    dims = dict(outer)                   # the indices of known range bound outside each loop
    used = set()
    names = [v for v, _ in var_dims]
    for pos, (var, dim) in enumerate(var_dims):
        lo, hi = Affine(0), Affine.dim(dim).shift(-1)
        for k, atom in enumerate(pred):
            b = single_var_bound(atom, var)
            if b is None:
                continue
            side, bound = b
            # A bound is taken when it is tighter than the range and leaves a
            # trip count hi - lo + 1 that is never negative, so the polynomial
            # stays exact for every size >= 1.
            if side == "lo" and facts.proves(bound - lo) and facts.proves(hi - bound + Affine(1)):
                lo = bound
                used.add(k)
            elif side == "hi" and facts.proves(hi - bound) and facts.proves(bound - lo + Affine(1)):
                hi = bound
                used.add(k)
        later = set(names[pos + 1:]) | set(inner)
        lows, highs = [], []
        for k, atom in enumerate(pred):
            if k in used:
                continue
            found = affine_bounds(atom, var, later)
            for side, bound in found:
                (lows if side == "lo" else highs).append(bound)
            if found:
                used.add(k)
        widths = _band_widths(lo, hi, lows, highs, facts) if lows or highs else ()
        loose = (_loose_widths(lo, hi, lows, highs, dims, widths, facts)
                 if lows or highs else ())
        pairs, loose_pairs = (_band_pairs(lo, hi, lows, highs, outer, dims, facts)
                              if outer and (lows or highs) else ((), ()))
        loops.append(Loop(var, lo, hi, tuple(lows), tuple(highs), widths, pairs, loose,
                          loose_pairs))
        dims[var] = dim
    if any(lp.pairs or lp.loose_pairs for lp in loops):
        # a generator may be paired with a loop only if no other loop's bounds move with it
        def moves(lp):
            return {v for b in lp.lows + lp.highs for v in b.aff.index_vars()}

        def alone(lp, pairs):
            return tuple(p for p in pairs
                         if not any(p[0] in moves(o) for o in loops if o is not lp))
        loops = [Loop(lp.var, lp.lo, lp.hi, lp.lows, lp.highs, lp.widths, alone(lp, lp.pairs),
                      lp.loose, alone(lp, lp.loose_pairs)) for lp in loops]
    filters = tuple(a for k, a in enumerate(pred) if k not in used)
    return tuple(loops), order_filters(filters)


def order_filters(atoms) -> tuple:
    """Affine guards first: they make the reads in the other filters safe."""
    return tuple(sorted(atoms, key=lambda a: 0 if isinstance(a, IdxCmp) else 1))


def plan_term(t: Term, gens: tuple, facts: Facts, top: bool) -> TermPlan:
    """Plan one term; `gens` are the statement's generators (empty for nested bodies).

    A term whose generators are solved at strided positions (see `_plan_term`) keeps
    that plan when it costs no more than the plan without them at every size
    assignment of `costs.sample_points` (its loops counted as planned or by their
    ranges alone), and takes the other otherwise (a strided
    scatter's coarse loop counts its range, or what a strided bound leaves of the
    output's, where the gather's loop may count its band's pairs).  So the choice
    never makes a derivative's cost polynomial larger anywhere it is compared."""
    tp = _plan_as_written(t, gens, facts, top)
    # (a top-level plan that does not scatter is made again with the generators'
    # ranges, top False: that one is the statement's)
    if (tp.scatter or not top) and _linked_sums(t):
        return _cheapest_sum_order(t, gens, facts, top, tp)
    return tp


def _plan_as_written(t: Term, gens: tuple, facts: Facts, top: bool) -> TermPlan:
    """`plan_term` with t's summed loops in the order t lists them."""
    tp, strided = _plan_term(t, gens, facts, top, True)
    if not strided:
        return tp
    from .costs import choosing
    with choosing(None):             # the plan is chosen with the model's own counts
        return _cheaper_plan(t, gens, facts, top, tp)


# Terms with more summed indices than this keep their order (24 orders of four).
MAX_ORDERED_SUMS = 4


def _linked_sums(t: Term) -> bool:
    """Does a guard of t tie two of its summed indices together (so that the loop of
    one may be bounded by the other, depending on which runs outside)?"""
    if not 2 <= len(t.sums) <= MAX_ORDERED_SUMS:
        return False
    summed = {n for n, _ in t.sums}
    return any(a.__class__ is IdxCmp and len(a.aff.index_vars() & summed) >= 2
               for a in t.pred)


def _cheapest_sum_order(t: Term, gens: tuple, facts: Facts, top: bool,
                        tp: TermPlan) -> TermPlan:
    """The plan of t (planned as written: `tp`) with its summed loops in the order
    the cost model finds cheapest.  A guard tying two summed indices bounds the loop
    of the inner one by the outer: in `sum[r, c]([C + 2 * R == 2 * c + l + 4 * r and
    0 <= C - 2 * c <= 1] ...)` (a pixel shuffle's Jacobian) the band leaves c's loop
    one iteration and the strided equality then leaves r's one, when c runs outside;
    with r outside, r runs its whole range.  Every order is planned (as a gather or
    as a scatter, as t was); among those that cost no more than the written one at
    any size assignment of `costs.sample_points`, the cheapest by `costs.rank_costs`
    (a key no name decides) is taken, the written order on a tie.  So the choice
    never raises a cost anywhere it is compared, and where one order is the
    cheapest everywhere, no spelling of the sums changes the cost.  A gather's
    `facts` hold the generators' ranges, a scatter's do not (`plan_statement`)."""
    from itertools import permutations

    from .costs import Cost, CostModel, choosing, element_count, nowhere_costlier, rank_costs
    model = CostModel(None, facts)
    inside = facts.with_ranges(gens) if top else facts
    elements = element_count(gens)

    def cost(plan: TermPlan) -> Cost:
        if plan.scatter:
            return model.term(plan, inside, dims=gens)
        if gens:
            return model.term_total(plan, facts, gens, elements)
        return model.term(plan, facts)
    with choosing(None):            # ordered by the model's own counts
        plans, costs = [tp], [cost(tp)]
        for order in permutations(t.sums):
            if order != t.sums:
                alt = _plan_as_written(replace(t, sums=order), gens, facts, top)
                if alt.scatter == tp.scatter:
                    c = cost(alt)
                    if nowhere_costlier(c, costs[0]):
                        plans.append(replace(alt, term=t))
                        costs.append(c)
        if len(plans) == 1:
            return tp
        keys = rank_costs(costs)
    return plans[min(range(len(plans)), key=lambda k: (keys[k], k))]


def _cheaper_plan(t: Term, gens: tuple, facts: Facts, top: bool, tp: TermPlan) -> TermPlan:
    from .costs import CostModel, element_count, nowhere_costlier
    model = CostModel(None, facts)
    inside = facts.with_ranges(gens)
    alt, _ = _plan_term(t, gens, facts, top, False)
    if alt.scatter:
        other = model.term(alt, inside)
    else:
        other = model.term_total(_plan_term(t, gens, inside, False, False)[0], inside, gens,
                                 element_count(gens))
    # The scatter's loops as planned (the cost model may count a strided bound's looser
    # count), or counting their ranges only (as the function's loops over the same
    # indices may): whichever is nowhere dearer.
    # (Its looser counts stay as spares: they bound the same loops, so the certificate
    # may count by them; the model's own count is the range.)
    strict = replace(tp, loops=tuple(replace(lp, loose=(), loose_pairs=(), spare=lp.loose)
                                     for lp in tp.loops))
    for mine in (tp, strict):
        if nowhere_costlier(model.term(mine, inside), other):
            return mine
    return alt


def _solve_generators(pred: list, gens: tuple, solved: list, remaining: set, solutions):
    """Solve generators from the atoms of pred while any atom gives a solution
    (`solutions(atom)` lists (generator, expression) pairs): each solved generator is
    appended to solved and dropped from remaining, its atom deleted from pred (all
    three updated in place); among several candidates _pick_generator chooses."""
    while True:
        cands = [(k, atom, g, expr) for k, atom in enumerate(pred)
                 for g, expr in solutions(atom)]
        if not cands:
            return
        k, _, g, expr = cands[_pick_generator(cands, gens) if len(cands) > 1 else 0]
        solved.append((g, expr))
        remaining.discard(g)
        del pred[k]


def _plan_term(t: Term, gens: tuple, facts: Facts, top: bool, stride: bool):
    """(the plan of one term, whether it solves generators at strided positions)."""
    gen_names = {g for g, _ in gens}
    summed = {n for n, _ in t.sums}
    pred = list(t.pred)
    solved = []
    fresh, strided = [], False
    if top:
        remaining = set(gen_names)
        _solve_generators(pred, gens, solved, remaining,
                          lambda atom: _generator_solutions(atom, remaining, summed))
        plain = len(solved)
        if not stride:
            remaining = set()
        # A generator at a strided position of summed indices (`[k == 2 * l]`, the
        # adjoint of a strided read) is solved too: the loops run over the coarse
        # indices and write the strided positions, where a loop over every output
        # element would find its at most one term through floor divisions.  A
        # strided window (`[0 <= k - 2 * r <= 1]`, pooling) likewise, with a loop
        # of its own over the offset into the window.
        _solve_generators(pred, gens, solved, remaining,
                          lambda atom: _strided_solutions(atom, remaining, summed,
                                                          {g for g, _ in solved}))
        fresh = []
        taken = index_names(t) | gen_names
        while stride:
            window = _strided_window(pred, gens, summed, {g for g, _ in solved}, taken)
            if window is None:
                break
            i, j, g, start, offset, dim = window
            solved.append((g, start + Affine.of(IndexVar(offset))))
            fresh.append((offset, dim, start.index_vars()))
            taken.add(offset)
            remaining.discard(g)
            # a window that starts past the output's end has nothing to add: that
            # bounds the coarse loops (the offset loop's own check bounds the offset)
            inside = Affine.dim(dict(gens)[g]).shift(-1) - start
            pred = [a for k, a in enumerate(pred) if k not in (i, j)]
            known = facts.with_ranges(t.sums).with_pred([a for a in pred
                                                         if isinstance(a, IdxCmp)])
            if not known.proves(inside):
                pred.append(IdxCmp(">=", inside))
        # A generator in a residue class (`[k % 2 == 0]`, the simplifier's form of
        # a strided equality) runs as k = 2 * o + r, o a loop of its own.  Of several,
        # the one of the outermost generator (the brackets' order follows the names).
        position = {g: n for n, (g, _) in enumerate(gens)}
        classes = sorted((position.get(found[0], len(position)), k, found) for k, found in
                         ((k, _residue_class(atom, remaining)) for k, atom in enumerate(pred))
                         if found is not None)
        if classes:
            _, k, (g, q, r) = classes[0]
            n = 0
            while f"{g}_o{n}" in taken:
                n += 1
            offset = f"{g}_o{n}"
            solved.append((g, Affine.make(r, [(IndexVar(offset), q)])))
            fresh.append((offset, dict(gens)[g], {g}))
            taken.add(offset)
            remaining.discard(g)
            pred = pred[:k] + pred[k + 1:]
        strided = len(solved) > plain
    if solved:
        solved_names = {g for g, _ in solved}
        loop_vars = [(g, d) for g, d in gens if g not in solved_names] + list(t.sums)
        for offset, dim, anchor in fresh:
            if anchor <= solved_names:
                # a residue class: where its generator's loop was
                at = sum(1 for g, _ in gens if g not in solved_names
                         and [n for n, _ in gens].index(g) < [n for n, _ in gens].index(
                             next(iter(anchor))))
                loop_vars.insert(at, (offset, dim))
                continue
            # right inside the last loop of the window's start: the window's rows in order
            at = max(k for k, (v, _) in enumerate(loop_vars) if v in anchor)
            loop_vars.insert(at + 1, (offset, dim))
        fresh = tuple((offset, dim) for offset, dim, _ in fresh)
        # The loops the solved generators are computed from go outermost (in
        # their order), so that the generators, and the brackets that need
        # nothing else, are computed once per iteration of those loops only.
        needed = set()
        for _, expr in solved:
            needed |= expr.index_vars()
        first = [v for v in loop_vars if v[0] in needed]
        if len(first) < len(loop_vars):
            ordered = first + [v for v in loop_vars if v[0] not in needed]
            staged = _scatter_plan(t, gens, ordered, pred, solved, facts, len(first),
                                   strided, fresh)
            if staged is not None:
                return staged, strided
        return _scatter_plan(t, gens, loop_vars, pred, solved, facts, None, strided,
                             fresh), strided
    if top and len(gens) > 1:
        # A band between generators ([k - 1 <= l <= k + 1]) bounds the loop of the
        # later one by the earlier: the term visits only the band of a zero-filled
        # output instead of testing every element.
        loop_vars = list(gens) + list(t.sums)
        loops, filters = plan_loops(loop_vars, pred, facts.with_ranges(loop_vars))
        if any(lp.banded for lp in loops[:len(gens)]):
            return TermPlan(t, loops, (), filters, True), False
    inner_facts = facts.with_ranges(t.sums)
    loops, filters = plan_loops(list(t.sums), pred, inner_facts, outer=gens)
    if loops:
        # A plain index guard reads nothing, so testing it before the loops is safe;
        # any other atom stays where its guards are (the bounds proof relies on them).
        looped = {lp.var for lp in loops}
        outer = tuple(a for a in filters
                      if isinstance(a, IdxCmp) and not (a.aff.index_vars() & looped))
        if outer:
            inside = tuple(a for a in filters if not any(a is b for b in outer))
            return TermPlan(t, loops, (), inside, False, outer), False
    return TermPlan(t, loops, (), filters, False), False


def reduce_plan(f, facts: Facts) -> TermPlan:
    """The loops of a reduction (ir.Reduce): its domain planned like a nested sum (its
    filter's guards become loop bounds, the rest are tested per point), with the
    body as the one factor evaluated at each point."""
    from .ssa.ir import Group
    dom = f.domain()
    return plan_term(Term(1.0, dom.sums, dom.pred, ((Group(f.body), 1.0),)), (), facts,
                     top=False)


def _scatter_plan(t: Term, gens: tuple, loop_vars: list, pred: list, solved: list,
                  facts: Facts, stage: int | None, strided: bool = False,
                  fresh: tuple = ()) -> TermPlan | None:
    """A scatter term's plan with loops over `loop_vars`, its generators solved as
    `solved` after the first `stage` loops (None: innermost), or None when some
    bracket that they do not need must wait for a deeper loop.  With `strided`
    (generators at strided positions of the loops), the checks that keep a solved
    generator inside the output bound the loops where they can (`2 * l <= n - 1`
    stops the loop over l), instead of being tested on every iteration."""
    solved_names = {g for g, _ in solved}
    loop_facts = facts.with_ranges(loop_vars)
    # A solved generator must land inside the output; keep the check unless proven.
    dims = dict(gens)
    guard_facts = loop_facts.with_pred([a for a in pred if isinstance(a, IdxCmp)])
    checks = []
    for g, expr in solved:
        if not guard_facts.proves(expr):
            checks.append(IdxCmp(">=", expr))
        upper = Affine.dim(dims[g]).shift(-1) - expr
        if not guard_facts.proves(upper):
            checks.append(IdxCmp(">=", upper))
    if strided:
        # the solutions are affine in the loop indices: each check is a bound (or a filter)
        loops, filters = plan_loops(loop_vars, checks + list(pred), loop_facts, solved_names)
        checks = []
    else:
        loops, filters = plan_loops(loop_vars, pred, loop_facts, solved_names)
    tests = order_filters(tuple(checks) + filters)
    # A generator's expression may read generators solved after it (k = 2 * l,
    # then l = n - 3) but never one solved before it: compute them in reverse.
    order = tuple(reversed(solved))
    if stage is None:
        return TermPlan(t, loops, order, tests, True, fresh=fresh)
    staged = _staged(tests, loops[:stage], solved_names)
    if staged is None:
        return None
    rest = tuple(a for a in tests if not any(a is b for b in staged))
    return TermPlan(t, loops, order, rest, True, stage=stage, staged=staged, fresh=fresh)


def _staged(tests, outer_loops, solved_names: set):
    """The brackets of a scatter that can be tested where its solved generators are
    computed, after `outer_loops`: index comparisons and relations using only those
    loops' indices and the solved generators.  None when some index bracket that does
    not use the generators needs a deeper loop: every such bracket is tested before the
    generators are computed (it may be what keeps a nested label in range).  A value
    comparison guards no read (bounds are proven from index brackets only, and the
    kernels test value comparisons last), so it waits in the deeper loop: the tie
    indicator `[Q[y[m], l] == r[m]]` of a max over a gathered row is tested per column
    while `k = y[m]` and its range checks are computed once per row."""
    known = {lp.var for lp in outer_loops} | solved_names
    staged = []
    for a in tests:
        names = index_names(a)
        if isinstance(a, (IdxCmp, Rel)) and names <= known:
            staged.append(a)
        elif not names & solved_names and not isinstance(a, ValCmp):
            return None
    return tuple(staged)


def group_by_filters(plans) -> list[list]:
    """Gather term plans in order, loop-free ones with equal brackets put together
    (at the place of the first of them); every other plan alone.

    A gradient has several terms per bracket (one per factor the bracket
    multiplied); the kernel tests each bracket once per element for the whole
    group, and the cost model and the op counter count it so."""
    groups: list[list] = []
    shared: dict = {}
    for tp in plans:
        if tp.loops or tp.solved or not tp.filters:
            groups.append([tp])
            continue
        key = frozenset(tp.filters)
        if key in shared:
            shared[key].append(tp)
        else:
            shared[key] = [tp]
            groups.append(shared[key])
    return groups


def plan_statement(s: Stmt, base: Facts) -> StmtPlan:
    if s.checked_labels:
        base = base.with_checked_labels(s.checked_labels)
    facts = base.with_ranges(s.indices)
    gathers, scatters = [], []
    for t in s.body:
        p = plan_term(t, s.indices, base, top=True)
        if p.scatter:
            scatters.append(p)
        else:
            gathers.append(plan_term(t, s.indices, facts, top=False))
    passes = fuse_scatters(scatters, s.indices, base)
    return StmtPlan(s, tuple(gathers), tuple(tp for group in passes for tp in group),
                    passes if len(passes) < len(scatters) else ())


def fuse_scatters(plans, gens: tuple, base: Facts) -> tuple:
    """Scatter plans grouped into passes: one pass runs the loops its terms'
    solved generators are computed from once, and each term computes its own
    generators and adds its value inside.  The adjoint of a tensor gathered
    through two label lists, `x[src[e]]` and `x[dst[e]]`, is then one pass over
    the edges that reads the shared cotangent once per edge, not one pass per
    term.  A term joins a pass when its loops up to its generators are those of
    the pass's first term once its summed indices take that term's names."""
    passes: list[list[TermPlan]] = []
    for tp in plans:
        depth = tp.solve_depth
        if depth == 0:              # no loops to share: a pass of its own
            passes.append([tp])
            continue
        for group in passes:
            head = group[0]
            if head.solve_depth != depth:
                continue
            key = (tp.term, tuple(lp.var for lp in tp.loops[:depth]), head.loops[:depth],
                   gens, base.key())
            again = _JOINED.compute(key, lambda: _joined(tp, head, depth, gens, base))
            if again is not None:
                group.append(again)
                break
        else:
            passes.append([tp])
    return tuple(tuple(g) for g in passes)


def _joined(tp: TermPlan, head: TermPlan, depth: int, gens: tuple, base: Facts):
    """tp planned again with its first `depth` loops named as those of `head`, the
    first term of a pass, when that gives it head's loops there (it joins the pass);
    else None."""
    renamed = _loops_renamed(tp, head, depth, {g for g, _ in gens})
    if renamed is None:
        return None
    again = plan_term(renamed, gens, base, top=True)
    if again.solve_depth == depth and again.loops[:depth] == head.loops[:depth]:
        return again
    return None


# `_joined` by all it reads: tp's term and the names of its first `depth` loops, head's
# first `depth` loops, the generators and the facts' constraints (FactsKey, all a plan
# reads).  A cost-guarded rewrite costs statements that keep most of their scatter
# terms (a factoring trial takes two or three out), and each costing fuses them again.
_JOINED = Memo(50_000)


def _loops_renamed(tp: TermPlan, head: TermPlan, depth: int, gens: set) -> Term | None:
    """tp's term with the summed indices of its first `depth` loops named as head's,
    or None when that cannot be done without a clash."""
    from .ssa.traverse import substitute_term
    t = tp.term
    mapping = {}
    for mine, theirs in zip(tp.loops[:depth], head.loops[:depth]):
        if mine.var == theirs.var:
            continue
        if mine.var in gens or theirs.var in gens:
            return None
        mapping[mine.var] = theirs.var
    if not mapping:
        return t
    if set(mapping.values()) & index_names(t):
        return None
    body = substitute_term(Term(t.coeff, (), t.pred, t.factors),
                           {a: Affine.of(IndexVar(b)) for a, b in mapping.items()})
    sums = tuple((mapping.get(n, n), d) for n, d in t.sums)
    return Term(t.coeff, sums, body.pred, body.factors)



def plan_program(prog: Program) -> list[StmtPlan]:
    base = size_facts(prog)
    return [plan_statement(s, base) for s in prog.stmts]




__all__ = ["Bound", "Loop", "TermPlan", "StmtPlan", "group_by_filters", "plan_program", "plan_term",
           "plan_loops", "AnyOf"]


# ------------------------------------------------------------ printing, for `explain`
def format_program_plan(prog: Program) -> str:
    from .ssa.printer import fmt_affine, fmt_atom, fmt_body
    lines = []

    def product(t) -> str:
        return fmt_body((Term(t.coeff, (), (), t.factors),))

    def bound_text(first: Affine, more, ceil: bool) -> str:
        parts = [fmt_affine(first)]
        for b in more:
            if b.q == 1:
                parts.append(fmt_affine(b.aff))
            else:
                num = fmt_affine(b.aff)
                num = num if len(b.aff.terms) + bool(b.aff.const) <= 1 else f"({num})"
                parts.append(f"{'ceil' if ceil else 'floor'}({num} / {b.q})")
        if len(parts) == 1:
            return parts[0]
        return f"{'max' if ceil else 'min'}({', '.join(parts)})"

    def loops_text(loops, indent):
        out = []
        for lp in loops:
            out.append("  " * indent + f"for {lp.var} in {bound_text(lp.lo, lp.lows, True)} .. "
                                       f"{bound_text(lp.hi, lp.highs, False)}:")
            indent += 1
        return out, indent

    def filt(tp):
        return " and ".join(fmt_atom(a) for a in tp.filters)

    for sp in plan_program(prog):
        s = sp.stmt
        gens = [Loop(n, Affine(0), Affine.dim(d).shift(-1)) for n, d in s.indices]
        target = s.name + (f"[{', '.join(n for n, _ in s.indices)}]" if s.indices else "")
        lines.append(f"{target}:")
        if sp.scatter_terms:
            lines.append(f"  {s.name} = 0")
        if sp.gather_terms or not sp.scatter_terms:
            body, ind = loops_text(gens, 1)
            lines += body
            lines.append("  " * ind + "acc = 0")
            for tp in sp.gather_terms:
                k = ind
                if tp.outer_filters:
                    lines.append("  " * k + "if " + " and ".join(fmt_atom(a) for a in tp.outer_filters)
                                 + ":")
                    k += 1
                inner, k = loops_text(tp.loops, k)
                lines += inner
                if tp.filters:
                    lines.append("  " * k + f"if {filt(tp)}:")
                    k += 1
                lines.append("  " * k + f"acc += {product(tp.term)}")
            lines.append("  " * ind + f"{target} = acc")
        for group in sp.passes:
            inner, top = loops_text(group[0].loops[:group[0].solve_depth], 1)
            lines += inner
            for tp in group:
                k = top
                for g, e in tp.solved:
                    lines.append("  " * k + f"{g} = {fmt_affine(e)}")
                if tp.staged:
                    lines.append("  " * k + "if " + " and ".join(fmt_atom(a) for a in tp.staged)
                                 + ":")
                    k += 1
                inner, k = loops_text(tp.loops[tp.solve_depth:], k)
                lines += inner
                if tp.filters:
                    lines.append("  " * k + f"if {filt(tp)}:")
                    k += 1
                lines.append("  " * k + f"{target} += {product(tp.term)}")
    return "\n".join(lines)
