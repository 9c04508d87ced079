"""Sums that evaluate one per-point factor, computed in one pass over their points.

A derivative often evaluates the same weight at every point of one space in several
statements.  The adjoint of a soft Bellman backup `V[i, s] = tau * logsumexp[a](q[i, s,
a] / tau)` needs the softmax weight `exp(q / tau - V_logsumexp)` at every (step, state,
action) for the adjoint of the rewards, summed over the steps, and again for the
adjoint of the discount, summed over the actions:

    R_bar_sum[l: S, m: A] = sum[p: k](V_lse_bar[p, l] * exp(R[l, m] / tau - V_lse[p, l] + ...))
    g_bar_sum[l: k, m: S] = sum[a: A]([l >= 1] * V[l - 1, nxt[m, a]] * exp(R[m, a] / tau + ...))

Written as two statements, each evaluates the exponential at each of its points.  Run
as one loop nest over the points of the first (its *host*), the weight is evaluated once
per point into a local, and each statement adds its own product of the local into its
own output: the host into `R_bar_sum[l, m]`, the other (`joined`) into `g_bar_sum[p, l]`
where `[p >= 1]` holds.  Storing the weights instead would hold k S A numbers, where
the function holds k S and S A.

A **shared pass** is a host statement and the statements joined to it.  Each is one
term (a sum, or a map, or both) whose points, its generators with its sums, range over
the same sizes as the host's; the shared factor is a call or a parenthesised body that
mentions every point index and binds none of its own.  A statement joins when, with its
indices renamed onto the host's (the renaming is found from the factor, never from
names):
- its factor equals the host's at each of its points: both equal once the brackets its
  own term's brackets and ranges prove are dropped from inside them (`[p >= 1] * V[p -
  1, ...]` inside the host's exponential is `V[p - 1, ...]` where the joined term's
  `[p >= 1]` holds);
- its points are among the host's: its brackets prove each of the host's brackets on
  indices, and it has every other bracket of the host's as it is;
- neither reads the other, directly or through other statements, so one pass can
  compute both.
Only statements outside recurrence groups, with no max, min or logsumexp inside and not
summing a maximum's ties (ties.py, which has a pass of its own), take part.

    shared_passes(prog) -> tuple[SharedPass, ...]

The cost model counts a joined statement without its factor (costs.scheduled_cost),
the instrumented loop runner likewise, and the Numba backend runs each pass as one
kernel (backend/numba_module.py).  The NumPy interpreter and the JAX emission compute
each statement as written: the same values.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import permutations, product

from .bounds import Facts, size_facts
from .memo import Memo
from .ssa import build as B
from .ssa import traverse as T
from .ssa.ir import (Access, Affine, Apply, Group, IdxCmp, IndexVar, Program, Reduce, Stmt, Term,
                     dim_key)
from .ssa.names import unique_name
from .ssa.recur import recurrences
from .ties import tie_sums

# Renamings tried per pair of statements: the points of a statement are a handful of
# indices, a few of one size at most (3! * 3! = 36); beyond this the pair is skipped.
MAX_RENAMINGS = 720


@dataclass(frozen=True)
class Joined:
    name: str
    rename: tuple            # (its index, the host's index), every point index
    factor: object           # its shared factor, as it writes it (in its own names)


@dataclass(frozen=True)
class SharedPass:
    host: str
    factor: object           # the factor, as the host writes it
    points: tuple            # the host's generators, then its term's sums: (name, dim)
    joined: tuple            # Joined, in program order

    @property
    def names(self) -> tuple:
        return (self.host,) + tuple(j.name for j in self.joined)

    def describe(self) -> str:
        """One line for `tensorlang explain`."""
        from .ssa.printer import fmt_body, fmt_dim
        points = ", ".join(f"{n}: {fmt_dim(d)}" for n, d in self.points)
        factor = fmt_body((Term(1.0, (), (), ((self.factor, 1.0),)),))
        return (f"one pass (shared factor, tensorlang/shared.py): {', '.join(self.names)} "
                f"evaluate {factor} once at each point of [{points}]")


@dataclass(frozen=True)
class _Shape:
    stmt: Stmt
    term: Term
    points: tuple
    factors: tuple           # candidate shared factors of the term


def _shape(st: Stmt) -> _Shape | None:
    """The one term of `st` with its points and the factors it could share, or None."""
    if len(st.body) != 1:
        return None
    t = st.body[0]
    points = tuple(st.indices) + tuple(t.sums)
    names = [n for n, _ in points]
    if not points or len(set(names)) != len(names):
        return None
    if any(n.__class__ is Reduce for n in T.iter_nodes(t)):
        return None
    factors = tuple(f for f, _ in t.factors
                    if f.__class__ in (Apply, Group) and not T.sums_or_reduces(f)
                    and T.index_names(f) >= set(names))
    return _Shape(st, t, points, factors) if factors else None


def _renamings(joined: tuple, host: tuple):
    """Bijections of the joined statement's point indices onto the host's that keep
    each index's range: {its name: the host's name}."""
    classes: dict[str, tuple[list, list]] = {}
    for n, d in joined:
        classes.setdefault(dim_key(d), ([], []))[0].append(n)
    for n, d in host:
        if dim_key(d) not in classes:
            return
        classes[dim_key(d)][1].append(n)
    parts = list(classes.values())
    if any(len(a) != len(b) for a, b in parts):
        return
    count = 1
    for a, _ in parts:
        for q in range(2, len(a) + 1):
            count *= q
    if count > MAX_RENAMINGS:
        return
    for choice in product(*(permutations(b) for _, b in parts)):
        mapping = {}
        for (a, _), perm in zip(parts, choice):
            mapping.update(zip(a, perm))
        yield mapping


def normal_under(f, facts: Facts) -> tuple:
    """Factor f as a canonical body, with the `>=` index brackets inside it that the
    facts prove dropped."""
    def drop(t: Term, _ctx):
        kept = tuple(a for a in t.pred if not (a.__class__ is IdxCmp and a.op == ">="
                                               and facts.proves(a.aff)))
        # (always a new term: the body is then put in canonical order)
        return [Term(t.coeff, t.sums, kept, t.factors)]
    return T.map_terms_in_body(B.factor_body(f), drop, None, lambda ctx, t: ctx, B.canon_body)


def _proves(facts: Facts, atom, literal: set) -> bool:
    """Does every point where `facts` hold satisfy the host's bracket `atom`?  (A
    bracket the joined term has as it is, or an index bracket the facts imply.)"""
    if atom in literal:
        return True
    if atom.__class__ is IdxCmp and atom.op == ">=":
        return facts.proves(atom.aff)
    if atom.__class__ is IdxCmp and atom.op == "==":
        return facts.proves(atom.aff) and facts.proves(atom.aff.scale(-1))
    return False


def _join(host: _Shape, other: _Shape, base: Facts) -> tuple | None:
    """(`other` as joined to `host`'s pass, the host's factor it shares) when the
    module's rules join them, or None; remembered by the two statements (a shape is
    made from its statement alone): the simplifier asks for the passes of every
    program it costs, which mostly differ from the one before in a statement or two,
    and each asks whether every pair of statements joins (a plume's gradient asked
    52,746 times in 124 programs)."""
    return _JOINS.compute((host.stmt, other.stmt, base.key()),
                          lambda: _compute_join(host, other, base))


_JOINS = Memo(50_000)


def _compute_join(host: _Shape, other: _Shape, base: Facts) -> tuple | None:
    for f_host in host.factors:
        for mapping in _renamings(other.points, host.points):
            sub = {n: Affine.of(IndexVar(h)) for n, h in mapping.items()}
            # (in canonical form again: renamed, `[k != y]` is `[l != k]`, which the
            # host, by the order of its names, writes `[k != l]`)
            pred = B.canon_pred([T.substitute(a, sub) for a in other.term.pred])
            if pred is None:
                continue
            pred = tuple(pred)
            facts = base.with_ranges(host.points).with_pred(
                tuple(a for a in pred if a.__class__ is IdxCmp))
            literal = set(pred)
            if not all(_proves(facts, a, literal) for a in host.term.pred):
                continue
            want = normal_under(f_host, facts)
            for f in other.factors:
                if normal_under(T.substitute(f, sub), facts) == want:
                    return Joined(other.stmt.name, tuple(sorted(mapping.items())), f), f_host
    return None


def _depends(prog: Program) -> dict:
    """{statement: the statements it reads, directly or through others}.  A recurrence
    group's members read one another and later members, so the sets are grown to
    their fixed point rather than in one pass in program order."""
    defined = {st.name for st in prog.stmts}
    out = {st.name: {n for n in T.statement_reads(st) if n in defined} for st in prog.stmts}
    changed = True
    while changed:
        changed = False
        for name, reads in out.items():
            grown = reads.union(*(out[n] for n in reads))
            if len(grown) != len(reads):
                out[name] = grown
                changed = True
    return {name: frozenset(reads) for name, reads in out.items()}


_PASSES = Memo(4096)


def shared_passes(prog: Program, outside: frozenset = frozenset()) -> tuple:
    """The shared passes of `prog` (see the module's docstring), remembered;
    `outside`: statements that take no part (a backend runs them otherwise)."""
    return _PASSES.compute((prog, outside), lambda: _shared_passes(prog, outside))


def _excluded(prog: Program) -> set | None:
    """The statements no pass takes: recurrence members and tie sums with the maxima
    they sum the ties of; None when the program's recurrences are not well founded."""
    try:
        groups = recurrences(prog)
    except ValueError:
        return None
    excluded = {m for g in groups for m in g.members}
    for c, (m, _) in tie_sums(prog).items():
        excluded |= {c, m}
    return excluded


def _shared_passes(prog: Program, outside: frozenset) -> tuple:
    excluded = _excluded(prog)
    if excluded is None:
        return ()
    excluded |= outside
    shapes = [s for s in (_shape(st) for st in prog.stmts if st.name not in excluded) if s]
    if len(shapes) < 2:
        return ()
    base = size_facts(prog)
    depends = _depends(prog)
    buckets: dict[tuple, list] = {}
    for s in shapes:
        buckets.setdefault(tuple(sorted(dim_key(d) for _, d in s.points)), []).append(s)
    order = {st.name: q for q, st in enumerate(prog.stmts)}
    passes = []
    for members in buckets.values():
        free = list(members)
        while len(free) >= 2:
            best = None
            for host in free:
                got, factor = [], None
                for other in free:
                    if other is host:
                        continue
                    found = _join(host, other, base)
                    if found is None or (factor is not None and found[1] != factor):
                        continue
                    names = [host.stmt.name] + [j.name for j in got] + [other.stmt.name]
                    if any(a in depends[b] for a in names for b in names):
                        continue
                    got.append(found[0])
                    factor = found[1]
                if got and (best is None or len(got) > len(best[1])):
                    best = (host, got, factor)
            if best is None:
                break
            host, got, factor = best
            joined = tuple(sorted(got, key=lambda j: order[j.name]))
            passes.append(SharedPass(host.stmt.name, factor, host.points, joined))
            taken = {host.stmt.name} | {j.name for j in joined}
            free = [s for s in free if s.stmt.name not in taken]
    return tuple(sorted(passes, key=lambda p: order[p.host]))


# ------------------------------------------------------------ terms split into passes
def split_terms_into_passes(prog: Program) -> Program:
    """`prog` with terms of statements of several terms moved into statements of their
    own where that lets them join a shared pass and the program's scheduled cost
    drops (costs.scheduled_cost, lower at some sampled size and higher at none).

    A pass takes whole statements of one term.  An adjoint often adds a sum that
    evaluates a shared weight to another contribution: unbalanced transport's

        la_bar[k: m] = sum[l: K, p: n]([l >= 1] * g_lse_bar[l, p] * exp(w[l, k, p])) + sum[q: n](...)

    evaluates the weight `exp(w)` that `C_bar_sum[k, p]` sums over the steps.  As
    `la_bar_sum[k: m] = sum[l: K, p: n](...)` the first term joins C_bar_sum's pass and
    `la_bar[k] = la_bar_sum[k] + sum[q: n](...)` stores m more numbers.  Each kept
    split is one whose new statement is in a pass of the split program; splits that
    are not are undone until none is left out (undoing one can leave another
    without its partner).  Not remembered: programs equal but for their source
    spans (one function in two files) must keep their own statements."""
    excluded = _excluded(prog)
    if excluded is None:
        return prog
    candidates = [(st.name, q) for st in prog.stmts
                  if len(st.body) >= 2 and st.name not in excluded
                  for q, t in enumerate(st.body)
                  if _shape(Stmt(st.name, st.indices, (t,))) is not None]
    if not candidates:
        return prog
    keep = set(candidates)
    while keep:
        split, made = _split(prog, keep)
        in_passes = pass_statements(split)
        still = {c for c in keep if made[c] in in_passes}
        if still == keep:
            break
        keep = still
    if not keep:
        return prog
    from .costs import scheduled_cost
    from .opt.engine import cheaper_cost
    if not cheaper_cost(scheduled_cost(split), scheduled_cost(prog), strictly=True):
        return prog
    return split


def _split(prog: Program, which: set) -> tuple[Program, dict]:
    """`prog` with each (statement, term position) of `which` moved into a new
    statement over the generators the term mentions, read where the term was;
    and {(statement, position): the new statement's name}."""
    used = {p.name for p in prog.params} | {s.name for s in prog.stmts} | set(prog.sizes())
    made, stmts = {}, []
    for st in prog.stmts:
        body = list(st.body)
        for q, t in enumerate(st.body):
            if (st.name, q) not in which:
                continue
            name = unique_name(f"{st.name}_sum", used)
            used.add(name)
            mentioned = T.index_names(t)
            gens = tuple((n, d) for n, d in st.indices if n in mentioned)
            stmts.append(Stmt(name, gens, (t,), st.span))
            read = Access(name, tuple(Affine.of(IndexVar(n)) for n, _ in gens))
            body[q] = Term(1.0, (), (), ((read, 1.0),))
            made[(st.name, q)] = name
        changed = body != list(st.body)
        stmts.append(Stmt(st.name, st.indices, B.canon_body(body), st.span) if changed else st)
    return Program(prog.name, prog.params, tuple(stmts), prog.outputs, prog.tuple_return), made


def pass_statements(prog: Program, outside: frozenset = frozenset()) -> set[str]:
    """Every statement of the shared passes of `prog` (the backend runs them in their
    passes' kernels, not in row groups, sibling groups or fused into readers)."""
    return {n for p in shared_passes(prog, outside) for n in p.names}


def joined_factors(prog: Program) -> dict:
    """{joined statement: its shared factor}: what the pass computes for it."""
    return {j.name: j.factor for p in shared_passes(prog) for j in p.joined}


__all__ = ["SharedPass", "Joined", "shared_passes", "pass_statements", "joined_factors",
           "normal_under", "split_terms_into_passes"]
