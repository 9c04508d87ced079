"""Summed terms that read one operand, merged before their contractions are ordered.

An adjoint often sums one operand against several cotangents.  Leapfrog's matrix P
is read at step t, against the position of that step, and at step t - 1, so P's
adjoint is

    P_bar[k, l] = -0.5 * eps * sum[m](pf_bar[m, k] * q[m, l])
                  - 0.5 * eps * sum[m]([m >= 1] * ph_bar[m, k] * q[m - 1, l])

Contraction order (opt/contract.py) takes one term at a time: two passes of K d^2.
Moving the second sum's index by one (m := m + 1, which its bracket allows: the
term is 0 at m = 0, the point the move takes out of range) lines its read of q up
with the first's, and distributivity leaves one pass over a remainder stored over
(m, k) alone:

    P_bar_fac[m, k] = pf_bar[m, k] + [m + 1 < K] * ph_bar[m + 1, k]
    P_bar[k, l]     = -0.5 * eps * sum[m](q[m, l] * P_bar_fac[m, k])

The same holds without a shift (a weight read twice against one input).  The rule
is factoring (opt/factor.py builds the stored remainder and its reader) with two
differences.  Two summed terms are aligned under a renaming of their sums that keeps
ranges *and a constant shift* of each summed index, taken from reads of one tensor
whose subscripts differ by a constant; a shift by c is allowed where the shifted
term's brackets make it 0 at the c points the shift moves out of the range, and the
term gains the bracket that keeps it in.  And the choice is costed after ordering
the contractions of both sides as order_contractions would (reads of contractions
earlier statements store included), since a term not yet ordered costs more than it
will run and any factoring would look cheaper than it.  Only a factoring whose remainder leaves
out an index of the term is tried: it then saves a power of a size.

It runs before order_contractions, which would otherwise split each term into a
statement of its own, and like factoring, only in programs that run: a program that
is differentiated further keeps its terms multiplied out
(simplify._BEFORE_DERIVATIVE_NOT).  Chosen that early, a merge can take from the later
rules (shared passes, stored products read, sparse statements substituted) a cheaper
program than it makes; simplify therefore compares a run in which merges were made
with the same run without any (`merges_off`) and keeps the cheaper.
"""
from __future__ import annotations

from contextlib import contextmanager

from ..bounds import Facts, size_facts
from ..costs import rank_costs
from ..memo import Memo
from ..ssa import build as B
from ..ssa import traverse as T
from ..ssa.ir import Access, Affine, IdxCmp, IndexVar, Program, Stmt, Term, splice
from ..ssa.recur import group_of
from .engine import cheaper_cost
from .factor import (pair_seeds, _factoring, _holds, _index_brackets, _rest, _shared,
                     _trades_sizes, sum_renamings)

# At most this many shift combinations are tried per renaming of two terms' sums.
SHIFT_LIMIT = 8
# At most this many candidates are costed per statement.
CANDIDATE_LIMIT = 12


def merge_summed_terms(prog: Program) -> Program:
    """sum_S F a + sum_S F' b -> sum_S F h, h = a + b' stored over fewer indices, where
    b' is b with its sums renamed to a's and moved by constants (F' = F there), when the
    statement so factored, its contractions ordered, is cheaper (see the module
    docstring).  Recurrence steps and sums over a maximum's ties are left alone."""
    from ..ties import tie_sums
    if _STATE["off"]:
        return prog
    skip = set(group_of(prog)) | set(tie_sums(prog))
    used = {p.name for p in prog.params} | {s.name for s in prog.stmts} | set(prog.sizes())
    base, shapes, sparse = None, None, None
    k = 0
    while k < len(prog.stmts):
        s = prog.stmts[k]
        if s.name in skip or sum(1 for t in pair_seeds(s) if t.sums) < 2:
            k += 1
            continue
        if shapes is None:
            shapes, sparse = prog.shapes(), _sparse_statements(prog)
        # (the engine applies the rule every round: a statement it left alone is found
        # again by what its choice depends on, the shapes of what it reads and which of
        # those are sparse)
        reads = sorted(T.tensor_reads(s.body) | T.gathered_tensors(s.body))
        unmerged = (s, tuple((n, shapes.get(n), n in sparse) for n in reads),
                    tuple(prog.sizes()))
        if _UNMERGED.get(unmerged):
            k += 1
            continue
        if base is None:
            base = size_facts(prog)
        put = _best_merge(prog, k, used, base, sparse)
        if put is None:
            _UNMERGED.put(unmerged, True)
            k += 1
            continue
        prog = splice(prog, k, k + 1, put)
        used |= {st.name for st in put}
        base, shapes, sparse = None, None, None
        note_merge()
    return prog


# Whether merges are made, and how many were (simplify compares a program simplified
# with merges against one without: simplify._cheapest_with_or_without_merges).
_STATE = {"off": False, "made": 0}


def merging() -> bool:
    return not _STATE["off"]


def merges_made() -> int:
    return _STATE["made"]


def note_merge() -> None:
    _STATE["made"] += 1


@contextmanager
def merges_off():
    """No merge is made within (the rule leaves every program as it is)."""
    was = _STATE["off"]
    _STATE["off"] = True
    try:
        yield
    finally:
        _STATE["off"] = was


_UNMERGED = Memo(20_000)


def _sparse_statements(prog: Program) -> frozenset:
    from .simplify import _has_diagonal_term
    return frozenset(st.name for st in prog.stmts if _has_diagonal_term(st))


def _best_merge(prog: Program, k: int, used: set, base: Facts,
                sparse: frozenset) -> tuple | None:
    """The statements to put in place of statement k by its cheapest merge, or None.
    A merge is taken when the terms it makes (h and the merged term, their contractions
    ordered) cost strictly less than the terms it takes (ordered alike); the rest of the
    statement is the same on both sides, and ordering it for every candidate made a
    Hessian of large statements a hundred times as slow to build."""
    s = prog.stmts[k]
    candidates = _candidates(s, base, sparse)
    if not candidates:
        return None
    from ..costs import program_cost
    from .contract import _Orderer
    orderer = _Orderer(prog)
    done = list(prog.stmts[:k])
    whole = program_cost(prog)
    trials, costs = [], []
    shapes = prog.shapes()
    for common, members in candidates:
        put = _factoring(prog, k, common, members, used, shapes)
        if put is None:
            continue
        held, merged = put
        taken = [t for t, _ in members]
        kept = [t for t in s.body if not any(t is m for m in taken)]
        made = _without(merged.body, kept)
        if made is None:
            continue
        before = _ordered_cost(orderer, done, Stmt(s.name, s.indices, tuple(taken)), ())
        after = _ordered_cost(orderer, done, Stmt(s.name, s.indices, made), (held,))
        if cheaper_cost(after, before, strictly=True) and not _trades_sizes(after, before):
            trials.append(put)
            costs.append(whole - before + after)
    if not trials:
        return None
    keys = rank_costs(costs)
    return trials[min(range(len(trials)), key=lambda j: (keys[j], j))]


def _without(body: tuple, kept: list) -> tuple | None:
    """The terms of `body` besides those of `kept` (compared by value, each once), or
    None when body lacks one of them (the factored statement's normal form merged a
    kept term with a made one: not a comparison of the taken terms alone)."""
    rest = list(body)
    for t in kept:
        at = next((j for j, u in enumerate(rest) if u is t), None)
        if at is None:
            at = next((j for j, u in enumerate(rest) if u == t), None)
        if at is None:
            return None
        del rest[at]
    return tuple(rest)


def _ordered_cost(orderer, done: list, st: Stmt, before: tuple):
    """The cost of the statements `before` and `st`, each summed term of st split into
    the contractions order_contractions would choose for it (the statements before
    it, `done`, may hold some of them)."""
    out: list = list(before)
    body = []
    for t in st.body:
        res = orderer.order_term(st, t, done + out)
        if res is None:
            body.append(t)
            continue
        extra, root = res
        out.extend(extra)
        body.append(root)
    return orderer.cost(out, Stmt(st.name, st.indices, B.canon_body(body), st.span))


def _candidates(s: Stmt, base: Facts, sparse: frozenset) -> list[tuple]:
    """(F, members) for each F two summed terms of s share once aligned (`_alignments`)
    whose remainders leave out an index of a size (`_saves_a_power`); members are (term,
    term aligned to the first) for every term of s that holds F under some alignment.
    Terms that read a statement of `sparse` (one with a diagonal term, which
    inline_sparse_statements may substitute into them, turning a pass over a matrix into
    one over its diagonal) are not merged: stored in a remainder, it would stay dense.
    Nor are terms under a bracket on values: a sum over a maximum's ties or a kink runs
    in a pass of its own (tensorlang/ties.py, shared.py), which a remainder would split."""
    body = tuple(t for t in pair_seeds(s)
                 if _index_brackets(t) and not T.tensor_reads(t) & sparse)
    facts = base.with_ranges(s.indices)
    aligned: dict = {}

    def alignments(a: Term, t: Term) -> list:
        key = (id(a), id(t))
        if key not in aligned:
            aligned[key] = [a] if t is a else _alignments(a, t, s.indices, facts)
        return aligned[key]
    seen: dict = {}
    tried: set = set()
    # (both ways round: a move that one term's brackets allow, the other's may not)
    for a in body:
        if not a.sums:
            continue
        for b in body:
            if b is a:
                continue
            for b2 in alignments(a, b):
                common = _shared(a, b2)
                if not common or not _saves_a_power((a, b2), common, s.indices):
                    continue
                if (frozenset(common), id(a)) in tried:
                    continue
                tried.add((frozenset(common), id(a)))
                members = []
                for t in body:
                    t2 = next((u for u in alignments(a, t) if _holds(u, common)), None)
                    if t2 is not None:
                        members.append((t, t2))
                # (every term holding F is a member: h must leave the index out for all;
                # the same F over the same terms from another first term is one candidate)
                key = (frozenset(common), frozenset(id(t) for t, _ in members))
                if len(members) >= 2 and key not in seen and _saves_a_power(
                        [u for _, u in members], common, s.indices):
                    seen[key] = (common, tuple(members))
    # (the most terms and the largest F first: a Hessian's statement of fifty terms has
    # scores of candidates, each costed by ordering its terms)
    ranked = sorted(seen.values(), key=lambda c: (-len(c[1]), -len(c[0])))
    return ranked[:CANDIDATE_LIMIT]


def _saves_a_power(terms, common: tuple, gens: tuple) -> bool:
    """Do `terms` (with the sums of the first) hold F beside parts that leave out an index
    whose range is a size, not a constant?  Then h, their sum, is stored over fewer
    indices than F * h runs over by a power of that size; a constant range (the 2 of a
    point's coordinates) saves a constant factor only, for a tensor stored."""
    used = set()
    for t in terms:
        used |= T.index_names(Term(1.0, (), (), _rest(t, common)))
    return any(n not in used and not isinstance(d, int) for n, d in tuple(gens) + tuple(terms[0].sums))


def _alignments(a: Term, b: Term, indices: tuple, facts: Facts) -> list[Term]:
    """b written over a's sums: each renaming of b's sums to a's of equal ranges, with
    each summed index moved by the constants that line a read of b up with a read of
    the same tensor in a (no move first), where b is 0 at the points a move takes out
    of range; the moved term gains the bracket keeping it in range, and loses the
    brackets the ranges then imply.  (Both terms' brackets are on indices only.)"""
    if not a.sums:
        return []
    out: list = []
    for perm, inner in sum_renamings(a, b):
        for shifts in _shift_options(a, inner):
            moved = _moved(inner, shifts, a.sums, b, perm, indices, facts)
            if moved is not None and moved not in out:
                out.append(moved)
    return out


def _shift_options(a: Term, b: Term) -> list[dict]:
    """Constant moves (a's summed index -> c) under which a read of b, `x[.., v + q, ..]`,
    becomes a's `x[.., v + p, ..]` (c = p - q); no move first, at most SHIFT_LIMIT."""
    from .simplify import _subscript_offsets
    summed = [n for n, _ in a.sums]
    options: dict = {n: {0} for n in summed}
    mine = [f for f, _ in a.factors if f.__class__ is Access]
    theirs = [f for f, _ in b.factors if f.__class__ is Access]
    for i, j, d in _subscript_offsets(mine, theirs):
        if i == j and i in options:
            options[i].add(-d)
    combos: list = [{}]
    for n in summed:
        combos = [dict(c, **{n: d}) for c in combos for d in sorted(options[n], key=abs)]
        combos = combos[:SHIFT_LIMIT]
    return sorted(combos, key=lambda c: sum(abs(d) for d in c.values()))


def _moved(inner: Term, shifts: dict, sums: tuple, b: Term, perm: tuple, indices: tuple,
           facts: Facts) -> Term | None:
    """`inner` (b renamed, without sums) with each of a's summed indices v put at v + c,
    over `sums`, guarded to keep v + c in range; None when b is not 0 at the points the
    move leaves out (b's own index over [0, c) for c > 0, [N + c, N) for c < 0) or the
    moved term is 0."""
    moves = {n: c for n, c in shifts.items() if c}
    guards = []
    for j, (n, dim) in enumerate(sums):
        c = moves.get(n)
        if not c:
            continue
        own = Affine.of(IndexVar(b.sums[perm[j]][0]))
        # b's index outside the window the move keeps: u <= c - 1, or u >= N + c
        outside = (IdxCmp(">=", own.scale(-1).shift(c - 1)) if c > 0
                   else IdxCmp(">=", own - Affine.dim(dim).shift(c)))
        if not facts.with_ranges(b.sums).with_pred(b.pred + (outside,)).proves(Affine(-1)):
            return None
        v = Affine.of(IndexVar(n)).shift(c)
        guards.append(IdxCmp(">=", Affine.dim(dim).shift(-1) - v) if c > 0 else IdxCmp(">=", v))
    if not moves:
        return Term(inner.coeff, sums, inner.pred, inner.factors)
    at = {n: Affine.of(IndexVar(n)).shift(c) for n, c in moves.items()}
    moved = T.substitute_term(inner, at)
    term = Term(moved.coeff, sums, tuple(moved.pred) + tuple(guards), moved.factors)
    from .simplify import drop_implied_guards_in_term
    kept = drop_implied_guards_in_term(term, dict(indices), facts)
    return kept[0] if kept else None
