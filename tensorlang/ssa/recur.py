"""Recurrence groups: statements that read themselves or each other in a cycle.

A body is a set of equations, so a statement may read a statement defined
after it, or itself.  The strongly connected components of the read graph with
a cycle are the program's *recurrence groups* (LANGUAGE.md section 10).  A group
is well founded when

* its members share their first ``lead`` indices, with the same ranges;
* every read of a member inside the group gives each of those indices as the
  reader's own index plus an integer constant (``t - 1``, ``t``, ``t + 2``);
* along each leading index all nonzero offsets have one sign (the group steps
  back, reading ``t - c`` and running ``t`` upwards, or forward, reading
  ``t + c`` and running ``t`` downwards);
* the reads with offset 0 along every leading index form no cycle (they fix the
  order of the members inside one step).

With one sign per index, every cycle that is not all zero offsets moves
strictly back in the lexicographic order of the steps, so the last condition is
exactly well-foundedness.  ``lead`` is the smallest number of leading indices
that makes a group well founded: the remaining indices of a step are free and
are evaluated as a whole, in parallel.

The group is not stored in the IR: it is a function of the statements, found
again by :func:`recurrences` wherever a pass needs it, so no pass can leave it
stale.  What a pass must keep is checked by ``verify``: each group is
contiguous in ``Program.stmts``, its members in an order of one step, and still
well founded.  The front end establishes that order (:func:`check_and_order`).
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import chain

from ..memo import Memo
from .ir import Access, Affine, IndexVar, Param, Program, Reduce, SizeVar, Stmt, Term
from .traverse import iter_nodes, statement_reads, substitute, term_accesses


@dataclass(frozen=True)
class Recurrence:
    """One recurrence group of a program.

    members: the statement names, in the order they are evaluated inside a step.
    lead: how many leading indices the members share (the step indices).
    steps: per leading index, -1 when reads look back (``t - c``; ``t`` runs
        upwards) and +1 when they look forward (``t + c``; ``t`` runs downwards).
    """
    members: tuple[str, ...]
    lead: int
    steps: tuple[int, ...]

    def step_order(self, stmt: Stmt) -> list[tuple[str, object, int]]:
        """(index name, range, direction) of stmt's leading indices."""
        return [(n, d, s) for (n, d), s in zip(stmt.indices[:self.lead], self.steps)]


@dataclass(frozen=True)
class Problem:
    """Why a group is not well founded: a span to point at, a message, a hint."""
    span: object
    message: str
    hint: str | None = None


@dataclass(frozen=True)
class _Read:
    reader: str
    target: str
    access: Access


# ------------------------------------------------------------ the read graph
def _reads(prog: Program, exact: bool = True) -> dict[str, list[_Read]]:
    """reader -> its reads of statements (every access, nested bodies included).

    Not `exact`: a statement's accesses may come from an equal statement seen
    before, whose spans may differ (spans take no part in equality); for the
    callers that report no span."""
    defined = {s.name for s in prog.stmts}
    out: dict[str, list[_Read]] = {}
    for s in prog.stmts:
        if exact:
            found = [_Read(s.name, n.name, n) for n in iter_nodes(s.body) if n.__class__ is Access]
        else:
            found = _accesses(s)
        out[s.name] = [r for r in found if r.target in defined]
    return out


# A statement's reads of every tensor, in walk order, by the statement (see ``_reads``).
_ACCESSES = Memo(20_000)


def _accesses(s: Stmt) -> tuple[_Read, ...]:
    return _ACCESSES.compute(s, lambda: tuple(
        chain.from_iterable(_term_reads(s.name, t) for t in s.body)))


def _term_reads(reader: str, t: Term) -> tuple[_Read, ...]:
    """The reads of term t in statement `reader`, remembered by both: a rewrite keeps
    most of a statement's terms (a factoring trial all but two or three)."""
    return _TERM_READS.compute((reader, t), lambda: tuple(
        _Read(reader, n.name, n) for n in term_accesses(t)))


_TERM_READS = Memo(50_000)


def accesses_of(s: Stmt, names) -> frozenset:
    """The reads (Access nodes) of s of the statements `names`: a group's edges out of
    s, which with its members' leading indices decide the group's analysis."""
    return frozenset(r.access for r in _accesses(s) if r.target in names)


def access_targets(s: Stmt) -> frozenset:
    """The names s reads by plain accesses: its edges in the read graph, whichever of
    them the program defines."""
    return frozenset(r.target for r in _accesses(s))


def _components(names: list[str], succ: dict[str, list[str]]) -> list[list[str]]:
    """Strongly connected components (Tarjan's algorithm, iterative), each in
    the order of ``names``."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    comps: list[list[str]] = []
    counter = 0
    for root in names:
        if root in index:
            continue
        work = [(root, iter(succ.get(root, ())))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(succ.get(w, ()))))
                    advanced = True
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                pos = {n: k for k, n in enumerate(names)}
                comps.append(sorted(comp, key=pos.__getitem__))
    return comps


# ------------------------------------------------------------ one group
def _offset(read: _Read, stmts: dict[str, Stmt], p: int) -> int | None:
    """The constant c when the read gives leading index p as (reader's index p) + c."""
    own = IndexVar(stmts[read.reader].indices[p][0])
    at = read.access.idx[p]
    # (at - own is constant when the coefficients of at, own's less one, are all zero;
    # summed here rather than by building the difference, for every read of a group)
    coeffs: dict = {own: -1}
    for atom, c in at.terms:
        coeffs[atom] = coeffs.get(atom, 0) + c
    return int(at.const) if not any(coeffs.values()) else None


def _fmt_access(a: Access) -> str:
    from .printer import fmt_affine
    return f"{a.name}[{', '.join(fmt_affine(x) for x in a.idx)}]" if a.idx else a.name


def _cycle_text(cycle: list[str]) -> str:
    return " -> ".join(cycle + [cycle[0]])


def _find_cycle(members: list[str], edges: dict[str, list[_Read]]) -> list[_Read] | None:
    """A cycle in the graph given by edges (reads), as its reads, or None."""
    colour = {m: 0 for m in members}
    for root in members:
        if colour[root]:
            continue
        path: list[_Read] = []
        work = [(root, iter(edges.get(root, ())))]
        colour[root] = 1
        while work:
            v, it = work[-1]
            nxt = next(it, None)
            if nxt is None:
                colour[v] = 2
                work.pop()
                if path:
                    path.pop()
                continue
            w = nxt.target
            if colour[w] == 1:
                # the cycle is the part of the path from w on, closed by nxt
                start = 0
                full = path + [nxt]
                for k, r in enumerate(full):
                    if r.reader == w:
                        start = k
                        break
                return full[start:]
            if colour[w] == 0:
                colour[w] = 1
                path.append(nxt)
                work.append((w, iter(edges.get(w, ()))))
    return None


def _zero_order(members: list[str], edges: dict[str, list[_Read]]) -> list[str]:
    """Members ordered so that every zero-offset read comes after what it reads
    (a stable topological order; the graph is acyclic)."""
    deps = {m: {r.target for r in edges.get(m, ()) if r.target != m} for m in members}
    order: list[str] = []
    done: set[str] = set()
    while len(order) < len(members):
        for m in members:
            if m not in done and deps[m] <= done:
                order.append(m)
                done.add(m)
                break
        else:                                   # pragma: no cover - acyclic by check
            raise ValueError("zero-offset reads form a cycle")
    return order


def _analyse_group(members: list[str], reads: list[_Read], stmts: dict[str, Stmt]):
    """(Recurrence, None) for a well-founded group, else (None, Problem)."""
    names = list(members)
    member_set = set(members)
    inner = [r for r in reads if r.target in member_set]
    rank = min(len(stmts[m].indices) for m in members)
    first = stmts[members[0]]
    any_cycle = _find_cycle(members, _by_reader(inner))
    cycle_names = [r.reader for r in any_cycle] if any_cycle else names

    # The longest prefix of positions the members share and every read steps by a constant.
    offsets: dict[int, list[int]] = {}
    lb, why = 0, None
    while lb < rank:
        p = lb
        bad = next((m for m in members if stmts[m].indices[p][1] != first.indices[p][1]), None)
        if bad is not None:
            why = Problem(stmts[bad].span,
                          f"{first.name} and {bad} are in one recurrence group (cycle "
                          f"{_cycle_text(cycle_names)}) but their indices at position {p} "
                          f"({first.indices[p][0]} of {first.name}, {stmts[bad].indices[p][0]} of "
                          f"{bad}) range over {first.indices[p][1]} and {stmts[bad].indices[p][1]}",
                          "the statements of a group share their leading indices and ranges")
            break
        offs = []
        for r in inner:
            c = _offset(r, stmts, p)
            if c is None:
                own = stmts[r.reader].indices[p][0]
                why = Problem(r.access.span or stmts[r.reader].span,
                              f"{_fmt_access(r.access)} in {r.reader} does not step by a constant "
                              f"along {own} (cycle {_cycle_text(_cycle_with(r, inner))})",
                              f"inside a recurrence group, give the index at {own}'s place "
                              f"as {own} - c or {own} + c with an integer c >= 0")
                break
            offs.append(c)
        else:
            offsets[p] = offs
            lb += 1
            continue
        break

    mixed = zero_cycle = cycle = None
    position = {id(r): k for k, r in enumerate(inner)}
    for lead in range(1, lb + 1):
        mixed = _mixed_direction(inner, offsets, lead, stmts)
        if mixed is not None:
            # a longer prefix keeps the same mixture; but where the cycle of the
            # shorter prefix does not move along this index at all, no direction
            # along it could break the cycle, so the cycle is what to report
            if cycle is not None and all(offsets[lead - 1][position[id(r)]] == 0
                                         for r in cycle):
                mixed = None
            break
        zero = {m: [] for m in members}
        for k, r in enumerate(inner):
            if all(offsets[p][k] == 0 for p in range(lead)):
                zero[r.reader].append(r)
        cycle = _find_cycle(members, zero)
        if cycle is None:
            steps = tuple(-1 if all(c <= 0 for c in offsets[p]) else 1 for p in range(lead))
            return Recurrence(tuple(_zero_order(members, zero)), lead, steps), None
        zero_cycle = _zero_cycle_problem(cycle, stmts, lead, why)
    if mixed is not None:
        return None, mixed
    if zero_cycle is not None:
        return None, zero_cycle
    if why is not None:
        return None, why
    # no index at all to step along (scalars, or rank 0 somewhere)
    flat = next((m for m in members if not stmts[m].indices), None)
    mixed_ranks = any(stmts[m].indices for m in members)
    through = _cycle_through(flat, _by_reader(inner)) if flat and mixed_ranks else None
    if through is not None and len(through) > 1:
        # name the cycle that the statement without indices is part of (another one,
        # such as h[t - 1] inside h, may step along an index perfectly well)
        r = through[-1]
        return None, Problem(r.access.span or stmts[r.reader].span,
                             f"{flat} has no index, so the cycle "
                             f"{_cycle_text([x.reader for x in through])} has no index to "
                             f"step along",
                             f"a statement that reads every step of a recurrence is computed "
                             f"after it: {r.reader} cannot read {flat} inside its steps")
    r = any_cycle[0] if any_cycle else None
    span = (r.access.span if r else None) or first.span
    return None, Problem(span, f"cycle {_cycle_text(cycle_names)} has no index to step along",
                         "a statement may read itself or a later one only at an earlier (or "
                         "later) step of a leading index, e.g. h[t - 1, i] inside h[t, i]")


def _cycle_through(m: str, edges: dict[str, list[_Read]]) -> list[_Read] | None:
    """A shortest cycle of reads that starts and ends at m, or None."""
    came_by: dict[str, _Read] = {}
    queue = [m]
    for v in queue:
        for r in edges.get(v, ()):
            if r.target == m:
                cycle = [r]
                while v != m:
                    cycle.append(came_by[v])
                    v = came_by[v].reader
                return cycle[::-1]
            if r.target not in came_by:
                came_by[r.target] = r
                queue.append(r.target)
    return None


def _cycle_with(read: _Read, inner: list[_Read]) -> list[str]:
    """The statements of a shortest cycle that goes through `read` (its reader, then
    a shortest way of reads from what it reads back to it): the cycle the read
    closes, not some other cycle of its group."""
    came_from: dict[str, str] = {read.target: read.target}
    queue = [read.target]
    edges = _by_reader(inner)
    for v in queue:
        if v == read.reader:
            break
        for r in edges.get(v, ()):
            if r.target not in came_from:
                came_from[r.target] = v
                queue.append(r.target)
    if read.reader not in came_from:
        return [read.reader, read.target]
    path = [read.reader]
    while path[-1] != read.target:
        path.append(came_from[path[-1]])
    return [read.reader] + path[1:][::-1] if len(path) > 1 else [read.reader]


def _by_reader(reads: list[_Read]) -> dict[str, list[_Read]]:
    out: dict[str, list[_Read]] = {}
    for r in reads:
        out.setdefault(r.reader, []).append(r)
    return out


def _mixed_direction(inner, offsets, lead, stmts) -> Problem | None:
    for p in range(lead):
        back = next((r for r, c in zip(inner, offsets[p]) if c < 0), None)
        fwd = next((r for r, c in zip(inner, offsets[p]) if c > 0), None)
        if back is not None and fwd is not None:
            own = stmts[fwd.reader].indices[p][0]
            return Problem(fwd.access.span or stmts[fwd.reader].span,
                           f"{_fmt_access(fwd.access)} reads a later step along {own}, but "
                           f"{_fmt_access(back.access)} in {back.reader} reads an earlier one",
                           "along each leading index a recurrence group steps one way: all "
                           "reads of its members give it as t - c, or all as t + c")
    return None


def _zero_cycle_problem(cycle: list[_Read], stmts, lead, why: Problem | None) -> Problem:
    names = [r.reader for r in cycle]
    first = stmts[names[0]]
    along = ", ".join(n for n, _ in first.indices[:lead])
    r = cycle[0]
    hint = ("every cycle of reads must step strictly back (or forward) along the leading "
            "indices, e.g. read h[t - 1, ...] inside h[t, ...] under a guard [t >= 1]")
    if why is not None:
        hint = f"{why.message}, so it cannot be a leading index; " + hint
    return Problem(r.access.span or stmts[r.reader].span,
                   f"cycle {_cycle_text(names)} has offset 0 along {along}", hint)


# ------------------------------------------------------------ whole programs
def analyse(prog: Program, exact: bool = True
            ) -> tuple[list[Recurrence], list[Problem], list[list[str]]]:
    """The groups, the problems of ill-founded ones, and the components of the
    read graph in a topological order (what is read before its readers).

    Not `exact`: the problems' spans may be those of an equal statement seen
    before, and a group whose members are statements seen before in that order
    is not analysed again (a rule's trial rewrites one statement of a program)."""
    reads = _reads(prog, exact)
    names = [s.name for s in prog.stmts]
    stmts = {s.name: s for s in prog.stmts}
    succ = {n: list(dict.fromkeys(r.target for r in reads[n])) for n in names}
    comps = _components(names, succ)       # Tarjan yields reverse topological order of reads
    groups, problems = [], []
    for comp in comps:
        if len(comp) == 1 and comp[0] not in succ[comp[0]]:
            continue
        member_set = set(comp)
        inner = [r for m in comp for r in reads[m] if r.target in member_set]
        if exact:
            g, problem = _analyse_group(comp, inner, stmts)
        else:
            # a group depends only on its members (names, in order, and statements)
            key = tuple(stmts[m] for m in comp)
            g = _GROUPS.get(key)
            problem = None
            if g is None:
                g, problem = _analyse_group(comp, inner, stmts)
                if g is not None:
                    _GROUPS.put(key, g)
        if g is not None:
            groups.append(g)
        else:
            problems.append(problem)
    return groups, problems, comps


# Well-founded groups by their member statements (see ``analyse``).
_GROUPS = Memo(4096)


def _ordered(prog: Program, groups: list[Recurrence], comps: list[list[str]]) -> Program:
    """Statements in an order that evaluates what is read first: each component
    after the components it reads, earliest written first; a group contiguous, its
    members in step order."""
    reads = _reads(prog, exact=False)          # names only
    pos = {s.name: k for k, s in enumerate(prog.stmts)}
    comp_of = {n: k for k, c in enumerate(comps) for n in c}
    inside = {g.members[0]: g.members for g in groups}
    deps = {k: {comp_of[r.target] for n in c for r in reads[n]} - {k}
            for k, c in enumerate(comps)}
    order: list[int] = []
    done: set[int] = set()
    pending = sorted(range(len(comps)), key=lambda k: min(pos[n] for n in comps[k]))
    while pending:
        for k in pending:
            if deps[k] <= done:
                order.append(k)
                done.add(k)
                pending.remove(k)
                break
    byname = {s.name: s for s in prog.stmts}
    names: list[str] = []
    for k in order:
        comp = comps[k]
        members = next((inside[m] for m in comp if m in inside), None)
        names.extend(members if members is not None else comp)
    stmts = tuple(byname[n] for n in names)
    if stmts == prog.stmts:
        return prog
    return Program(prog.name, prog.params, stmts, prog.outputs, prog.tuple_return)


def check_and_order(prog: Program) -> tuple[Program, list[Problem]]:
    """The front end's check: the problems of every ill-founded group, and the
    program with its statements in evaluation order (unchanged when it has none)."""
    if _acyclic(prog):
        return prog, []                 # already in evaluation order, no group
    groups, problems, comps = analyse(prog)
    if problems:
        return prog, problems
    return _ordered(prog, groups, comps), []


def order_statements(prog: Program) -> Program:
    """Statements in evaluation order after a pass that built a program without
    regard to it (reverse mode emits adjoints in reverse order).  Raises
    ValueError when a group is not well founded."""
    if _acyclic(prog):
        return prog
    groups, problems, comps = analyse(prog, exact=False)
    if problems:
        raise ValueError(problems[0].message)
    return _ordered(prog, groups, comps)


_MEMO = Memo(4096)


def recurrences(prog: Program) -> tuple[Recurrence, ...]:
    """The program's recurrence groups, in statement order (memoised by value)."""
    def compute():
        if _acyclic(prog):
            return ()
        groups, problems, _ = analyse(prog, exact=False)
        if problems:
            raise ValueError(problems[0].message)
        pos = {s.name: k for k, s in enumerate(prog.stmts)}
        return tuple(sorted(groups, key=lambda g: pos[g.members[0]]))
    return _MEMO.compute(prog, compute)


def _acyclic(prog: Program) -> bool:
    """True when every statement reads only statements written before it: then the
    read graph has no cycle, so no group (the common case, decided without it)."""
    later = {s.name for s in prog.stmts}
    for s in prog.stmts:
        later.discard(s.name)
        reads = statement_reads(s)
        if s.name in reads or not later.isdisjoint(reads):
            return False
    return True


def group_of(prog: Program) -> dict[str, Recurrence]:
    """statement name -> its recurrence group, for members of one."""
    return {m: g for g in recurrences(prog) for m in g.members}


def is_ordered(prog: Program) -> str | None:
    """None when every statement reads only earlier statements or members of its
    own group, each group contiguous and in step order; else what is wrong."""
    groups = recurrences(prog)
    member = {m: g for g in groups for m in g.members}
    seen: set[str] = set()
    reads = _reads(prog, exact=False)          # names only
    stmts = list(prog.stmts)
    k = 0
    while k < len(stmts):
        s = stmts[k]
        g = member.get(s.name)
        if g is None:
            late = [r.target for r in reads[s.name] if r.target not in seen]
            if late:
                return f"{s.name} reads {late[0]}, which is not defined before it"
            seen.add(s.name)
            k += 1
            continue
        block = [t.name for t in stmts[k:k + len(g.members)]]
        if block != list(g.members):
            return (f"recurrence group {', '.join(g.members)} is not contiguous in step order "
                    f"(found {', '.join(block)})")
        group_set = set(g.members)
        for n in block:
            late = [r.target for r in reads[n] if r.target not in seen and r.target not in group_set]
            if late:
                return f"{n} reads {late[0]}, which is not defined before its group"
        seen.update(block)
        k += len(block)
    return None


def step_program(prog: Program, g: Recurrence, symbols: list[str]) -> Program:
    """One step of a group as a program of its own, for the backends: each member
    with its leading indices t_q replaced by ``S_q - 1``, where S_q is the size-like
    symbol ``symbols[q]`` that the caller sets to 1 + the step's index (so all it
    may assume is S_q >= 1, as for any size).  A member's step statement, named
    ``<member>'step``, ranges over the member's remaining indices; every whole
    tensor it reads (the members included) is a parameter."""
    byname = {st.name: st for st in prog.stmts}
    stmts = [step_statement(byname[name], g.lead, symbols) for name in g.members]
    params = prog.params + tuple(Param(st.name, "f64", st.dims) for st in prog.stmts)
    return Program(prog.name, params, tuple(stmts), tuple(st.name for st in stmts))


def step_statement(st: Stmt, lead: int, symbols) -> Stmt:
    """A member's statement of one step (see `step_program`), remembered."""
    return _STEPS.compute((st, st.span, lead, tuple(symbols)),
                          lambda: _step_statement(st, lead, symbols))


# Step statements by member statement (span included), lead and symbols: a rule's
# trial rewrites one member, and the others' steps are the same.
_STEPS = Memo(4096)


def _step_statement(st: Stmt, lead: int, symbols) -> Stmt:
    pairs = tuple((n, sym) for (n, _), sym in zip(st.indices[:lead], symbols))
    fix = {n: Affine.of(SizeVar(sym)).shift(-1) for n, sym in pairs}
    return Stmt(f"{st.name}'step", st.indices[lead:], tuple(_step_term(t, pairs, fix)
                                                           for t in st.body), st.span)


def _step_term(t: Term, pairs: tuple, fix: dict) -> Term:
    """t with `fix` substituted, remembered for the term object itself and the
    (index, symbol) pairs fixed: a rule's trial rewrites two or three terms of a
    member and keeps the others as they are, whose step terms are then the same
    objects too (what is remembered of them downstream, plans and costs, is found
    by identity instead of comparing them whole).  By identity, not by value: equal
    terms may carry different source spans, which a label error quotes."""
    return _STEP_TERMS.for_object(t, (t, pairs), lambda: substitute(t, fix))


_STEP_TERMS = Memo(50_000)


def step_sum(st: Stmt, g: Recurrence, lead: tuple, symbols) -> Stmt | None:
    """What one step adds to a statement that sums over the steps of group g (a scalar,
    or a tensor each of whose elements does, `lam_bar[k] = sum[t](p[t - 1, k] *
    p_bar[t, k])`), as a statement of the step program over the statement's own
    indices (``<name>'step``, see `step_program`): each
    term's sums over the steps' indices dropped and those indices fixed at
    ``S_q - 1``, as `step_statement` fixes a member's.  `lead` is the group's step
    indices with their ranges (its first member's).  None unless every term sums
    over each step index with the group's range and reads the members at that
    step, or at steps the group computes before it (a member read at t - c by a
    group running upwards): then the steps' loop can add each step's part while the
    step's values are at hand, instead of a pass over the stored members after it.
    A term with nested binders (a sum inside a builtin's argument, a reduction) is
    none: an index bound there could shadow a step index."""
    members = set(g.members)
    if not st.body:
        return None
    terms = []
    for t in st.body:
        if any(n is not t and ((n.__class__ is Term and n.sums) or n.__class__ is Reduce)
               for n in iter_nodes(t)):
            return None
        reads = [a for a in iter_nodes(t) if a.__class__ is Access and a.name in members]
        if not reads:
            return None
        fix = {}
        for q, ((_, dim), step) in enumerate(zip(lead, g.steps)):
            at = reads[0].idx[q]
            if len(at.terms) != 1 or at.terms[0][1] != 1 \
                    or at.terms[0][0].__class__ is not IndexVar:
                return None
            var = at.terms[0][0].name
            if (var, dim) not in t.sums or var in fix:
                return None
            for a in reads:
                pos = a.idx[q]
                # computed by the time the step ends: this step's row, or an earlier
                # step's (t - c upwards, t + c downwards)
                if pos.terms != at.terms or pos.const * step < 0:
                    return None
            fix[var] = Affine.of(SizeVar(symbols[q])).shift(-1)
        rest = tuple((n, d) for n, d in t.sums if n not in fix)
        terms.append(substitute((Term(t.coeff, rest, t.pred, t.factors),), fix)[0])
    return Stmt(f"{st.name}'step", st.indices, tuple(terms), st.span)
