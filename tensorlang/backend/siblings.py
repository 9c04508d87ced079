"""Sibling groups: statements over the same loops, reading the same arrays, in one pass.

A gradient often takes several sums over one set of points: the adjoints of a scalar
parameter that multiplies several factors of one term (option's `disc_bar_sum` and
`disc_bar_sum1`, both `sum[k, l]` over the triangle, reading `V` and `V_arg1_bar`), or
a map and a sum that the derivative wrote with the same sum inside (pagerank's
`w_bar[e] = d * sum[s](...)` and `d_bar`'s `sum[e](sum[s](...) * w[e])`).  As
statements each is a kernel of its own, one pass over the arrays it reads: the same
large arrays streamed from memory once per statement, and a factor they share (a
softmax weight, an inner sum, a whole product) computed once per statement.

A **sibling group** is a run of consecutive statements of one *kind*, the generators'
dims of its first member: scalars (kind `()`), or tensor statements over the same
generators, joined, over one generator, by scalars whose sums run their outermost loop
over it (`bound`: the sum's accumulator then runs across the generator's loop).  Their
terms fall into *nests*: terms whose loops are equal once generators and summed
indices are named by position (`canonical`: the loop plans, bounds and all, are then
equal) and which read a tensor at the same position.  The group's kernel
(`KernelWriter.siblings`) keeps one accumulator per member, runs each nest's loops once
(its innermost with partial sums, as one sum's loop runs), tests the brackets of its
terms once per distinct set, computes each factor two terms share (equal up to the
names of the indices summed inside it) into a local, fuses the one-term sums inside
the terms' factors that pair in the same way, and adds each term into its member's
accumulator; a tensor member writes each element once, after its terms.  The parallel
form runs the outermost loop with `prange`, the scalar accumulators per-thread sums.

The rule, and why: two terms are fused only when their loops are equal (a fused nest
has no test a separate one lacks) and they share a read (each point then loads those
elements once instead of once per statement, and a factor they share is computed
once).  Unrelated statements over the same loops are left apart: fusing them saves no
traffic.  No member may read another (each is complete only after the pass), and only
statements whose kernel is the plain nest join (see numba_module.sibling_eligible).
Two preparation passes make the groups (`split_sibling_sums`, `order_siblings`).  Only
a code-generation choice: the program's meaning and its cost polynomial (which counts
every term, an upper bound) are unchanged.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ..bounds import size_facts
from ..loops import TermPlan, plan_term
from ..ssa.ir import Access, Affine, Group, IndexVar, Program, SizeValue, Stmt, Term
from ..ssa.names import rename_binders, unique_name
from ..ssa import traverse as T
from ..ssa.traverse import iter_nodes, statement_reads


@dataclass(frozen=True)
class Nest:
    loops: tuple              # the shared loops (canonical index names)
    outer_filters: frozenset  # brackets tested once before them
    terms: tuple              # (member position, canonical TermPlan)


@dataclass(frozen=True)
class SiblingGroup:
    start: int                # index of the first member in prog.stmts
    names: tuple              # the members, in order
    generators: tuple         # the members' generators, canonical: (name, dim)
    nests: tuple              # Nest, each of two or more terms
    alone: tuple              # (member position, TermPlan): the terms in no nest
    # the members that are scalars in a group over generators: sums over the first
    # generator, their accumulators running across its loop
    scalars: tuple = ()

    @property
    def stop(self) -> int:
        return self.start + len(self.names)


def generators_of(dims) -> tuple:
    """Canonical generators over `dims`, named by position (`'g0` outermost)."""
    return tuple((f"'g{q}", d) for q, d in enumerate(dims))


@dataclass(frozen=True)
class Canon:
    """A term with its generators and summed indices named by position."""
    plan: TermPlan
    key: tuple                # equal for terms whose loops are equal
    reads: frozenset          # the tensor elements it reads: (name, subscripts)


def canonical(t: Term, indices, base, prefix: str = "'f") -> Canon | None:
    """Term t of a statement over `indices`, planned with the statement's generators
    named by position and its summed indices by loop position (`'f0` outermost); None
    when the term is no plain sum (a scatter, a solved generator, an index of the
    plan's own) or the planner orders the renamed loops otherwise.  (`prefix`: the
    stem of the summed indices' names, distinct for sums nested in another's point.)"""
    gens = generators_of(d for _, d in indices)
    facts = base.with_ranges(gens)
    if plan_term(t, indices, base, top=True).scatter:
        return None
    first = plan_term(t, indices, base.with_ranges(indices), top=False)
    order = [lp.var for lp in first.loops]
    if first.solved or first.fresh or sorted(order) != sorted(n for n, _ in t.sums):
        return None
    new = {v: f"{prefix}{q}" for q, v in enumerate(order)}
    mapping = {v: Affine.of(IndexVar(n)) for v, n in new.items()}
    mapping.update({v: Affine.of(IndexVar(g)) for (v, _), (g, _) in zip(indices, gens)})
    bare = T.substitute_term(Term(t.coeff, (), t.pred, t.factors), mapping)
    renamed = Term(t.coeff, tuple((new[n], d) for n, d in t.sums), bare.pred,
                   tuple((_without_implied(f, set(bare.pred)), p) for f, p in bare.factors))
    plan = plan_term(renamed, gens, facts, top=False)
    if [lp.var for lp in plan.loops] != list(new.values()) or plan.solved or plan.fresh:
        return None
    keyed = [factor_key(f) for f, _ in plan.term.factors]
    reads = frozenset((n.name, n.idx) for n in iter_nodes((plan.term.pred, *keyed))
                      if n.__class__ is Access and n.idx)
    return Canon(plan, (tuple(d for _, d in gens), plan.loops, frozenset(plan.outer_filters)),
                 reads)


def bound(t: Term, dim, base) -> Canon | None:
    """A scalar's sum seen as a term of a statement over one generator of range `dim`:
    its outermost loop, when that runs over the whole of `dim`, becomes the generator
    (a map over `dim` and the sum over `dim` of something at each of its points are
    then siblings, the sum's accumulator running across the generator's loop).  None
    when the term has no such loop."""
    plan = plan_term(t, (), base, top=False)
    if not plan.loops or plan.solved or plan.fresh:
        return None
    lp = plan.loops[0]
    ranges = dict(t.sums)
    if not lp.exact or ranges.get(lp.var) != dim or lp.lo != Affine(0) \
            or lp.hi != Affine.dim(dim).shift(-1):
        return None
    inner = Term(t.coeff, tuple((n, d) for n, d in t.sums if n != lp.var), t.pred, t.factors)
    return canonical(inner, ((lp.var, dim),), base)


def _without_implied(f, holds: set):
    """Factor f with the brackets of the one-term bodies of its groups that its own
    term's brackets (`holds`) already state dropped: the group is computed only where
    they hold (`[l >= 1 and dst[e] < n] * ...` inside a term under `[dst[e] < n]`), and
    two sums the derivative wrote under different but equivalent brackets become one."""
    if f.__class__ is not Group or len(f.body) != 1:
        return f
    t = f.body[0]
    pred = tuple(a for a in t.pred if a not in holds)
    return f if len(pred) == len(t.pred) else Group((Term(t.coeff, t.sums, pred, t.factors),))


def factor_key(f):
    """The factor as a body in canonical form, every index it sums or reduces over
    named by order of appearance: equal for factors that differ only in those names
    (and so for factors of equal value).  The whole body, not a factor taken out of
    it: canonical form may open a group of several terms into the body."""
    seen: dict[str, str] = {}
    prog = Program("", (), (Stmt("'k", (), (Term(1.0, (), (), ((f, 1.0),)),)),), ())
    renamed = rename_binders(prog, lambda n: seen.setdefault(n, f"'b{len(seen)}"))
    return renamed.stmts[0].body


def worth_sharing(f) -> bool:
    """A factor that costs a load or more (a scalar read or a size costs nothing)."""
    return not (f.__class__ is Access and not f.idx) and f.__class__ is not SizeValue


class _Terms:
    """Per eligible statement and kind of run (the generators' dims of the run's
    first member), its terms in canonical form (None for a term that has none),
    computed once.  In a run of scalars a scalar offers its sums (its loop-free terms
    run after the nests); in a run over generators a statement over them offers all
    its terms or none (each element is written once, after all of them), and a
    scalar, over one generator, its sums `bound` to it, all or none."""

    def __init__(self, prog: Program, eligible):
        self.base = size_facts(prog)
        self.eligible = eligible
        self.cache: dict[tuple, list] = {}

    def of(self, st: Stmt, kind=None) -> list:
        kind = st.dims if kind is None else kind
        got = self.cache.get((st.name, kind))
        if got is None:
            got = []
            if not self.eligible(st):
                pass
            elif st.dims == kind:
                got = [canonical(t, st.indices, self.base) if t.sums or st.indices else None
                       for t in st.body]
                if st.indices and None in got:
                    got = []
            elif not st.indices and len(kind) == 1:
                got = [bound(t, kind[0], self.base) for t in st.body]
                if None in got:
                    got = []
            self.cache[(st.name, kind)] = got
        return got

    def fusible(self, st: Stmt, kind=None) -> list:
        return [c for c in self.of(st, kind) if c is not None]


def _pairs(a: list, b: list) -> bool:
    """Does some term of a fuse with some term of b (equal loops, a shared read)?"""
    return any(x.key == y.key and x.reads & y.reads for x in a for y in b)


def split_sibling_sums(prog: Program, eligible) -> Program:
    """A scalar statement that adds sums to loop-free terms, whose sums would fuse
    with another statement's, gets its sums split into a statement of their own
    (`d'sums`), which can join that statement's group: `disc_bar = -disc_bar_sum * p
    + ... + sum[k, l](...)` reads `disc_bar_sum` whole, so it cannot, but its sum,
    the same as `disc_bar_sum`'s, can."""
    terms = _Terms(prog, eligible)
    used = {p.name for p in prog.params} | {st.name for st in prog.stmts}
    stmts, changed = [], False
    for st in prog.stmts:
        looped = [t for t in st.body if t.sums]
        if st.indices or not looped or len(looped) == len(st.body):
            stmts.append(st)
            continue
        name = unique_name(f"{st.name}'sums", used)
        sums = Stmt(name, (), tuple(looped), checked_labels=st.checked_labels)
        if not terms.eligible(st) or not any(
                _pairs(terms.fusible(sums, o.dims), terms.fusible(o))
                for o in prog.stmts if o is not st):
            stmts.append(st)
            continue
        used.add(name)
        stmts.append(sums)
        rest = [t for t in st.body if not t.sums]
        rest.append(Term(1.0, (), (), ((Access(name, ()), 1.0),)))
        stmts.append(replace(st, body=tuple(rest)))
        changed = True
    if not changed:
        return prog
    return Program(prog.name, prog.params, tuple(stmts), prog.outputs, prog.tuple_return)


def order_siblings(prog: Program, eligible) -> Program:
    """Statements reordered so that each sibling group is contiguous: a statement
    whose terms fuse with those of an earlier run of siblings (of the run's kind) moves
    to the end of that run, and what it reads that was defined from the run's start on
    moves before the run, when none of that reads a member (any order in which every
    statement follows what it reads is the program)."""
    terms = _Terms(prog, eligible)
    out: list[Stmt] = []
    runs: list[list[str]] = []          # runs of siblings, by member name
    kinds: dict[str, tuple] = {}        # a run's kind, by its first member
    for st in prog.stmts:
        placed = False
        for run in runs:
            kind = kinds[run[0]]
            mine = terms.fusible(st, kind)
            start = next(q for q, s in enumerate(out) if s.name == run[0])
            if not mine or not any(_pairs(mine, terms.fusible(s, kind))
                                   for s in out[start:start + len(run)]):
                continue
            needed = _needed_since(st, out[start:], set(run))
            if needed is None:
                continue
            # what st reads that the run does not moves before the run, in order
            out[start:] = ([s for s in out[start:] if s.name in needed]
                           + [s for s in out[start:] if s.name not in needed])
            start += len(needed)
            out.insert(start + len(run), st)
            run.append(st.name)
            placed = True
            break
        if not placed:
            out.append(st)
            if terms.fusible(st):
                runs.append([st.name])
                kinds[st.name] = st.dims
    if [s.name for s in out] == [s.name for s in prog.stmts]:
        return prog
    return Program(prog.name, prog.params, tuple(out), prog.outputs, prog.tuple_return)


def _needed_since(st: Stmt, since: list, run: set) -> set | None:
    """The statements of `since` (from a run's first member on) that st reads,
    directly or through one another, when none of them needs a member of the run
    (they can then all move before it); None when one does, or st reads a member."""
    defined = {s.name: s for s in since}
    needed: set[str] = set()
    todo = [n for n in statement_reads(st) if n in defined]
    while todo:
        n = todo.pop()
        if n in run:
            return None
        if n not in needed:
            needed.add(n)
            todo += [r for r in statement_reads(defined[n]) if r in defined]
    return needed


def sibling_groups(prog: Program, eligible) -> list[SiblingGroup]:
    """The sibling groups of a prepared program: maximal runs of consecutive
    statements, each reading no earlier member and fusing with one."""
    terms = _Terms(prog, eligible)
    groups = []
    k = 0
    while k < len(prog.stmts):
        if not terms.fusible(prog.stmts[k]):
            k += 1
            continue
        j = k + 1
        names = {prog.stmts[k].name}
        kind = prog.stmts[k].dims
        while j < len(prog.stmts):
            st = prog.stmts[j]
            if statement_reads(st) & names or not any(
                    _pairs(terms.fusible(st, kind), terms.fusible(prog.stmts[q], kind))
                    for q in range(k, j)):
                break
            names.add(st.name)
            j += 1
        if j - k >= 2:
            groups.append(_group(k, prog.stmts[k:j], terms))
        k = j
    return groups


def connected(canons: list) -> list[list[int]]:
    """The sets (positions, in order) of two or more of `canons` (None: a term that
    fuses with nothing) connected by `_pairs`."""
    parent = list(range(len(canons)))

    def root(a):
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for a, x in enumerate(canons):
        for b in range(a):
            y = canons[b]
            if x is not None and y is not None and _pairs([x], [y]):
                parent[root(a)] = root(b)
    sets: dict[int, list[int]] = {}
    for a in range(len(canons)):
        sets.setdefault(root(a), []).append(a)
    return [part for part in sets.values() if len(part) >= 2]


def nest_of(canons: list, part: list[int], targets: list[int]) -> Nest:
    """The nest of the terms `part` of `canons`, each adding into accumulator
    `targets[k]`."""
    lead = canons[part[0]].plan
    return Nest(lead.loops, frozenset(lead.outer_filters),
                tuple((m, canons[b].plan) for b, m in zip(part, targets)))


def _group(start: int, stmts, terms: _Terms) -> SiblingGroup:
    """The nests of a run of siblings: the connected sets of their terms under
    `_pairs`, of two terms or more; every other term runs alone."""
    kind = stmts[0].dims
    items = []                          # (member, term, Canon or None)
    for m, st in enumerate(stmts):
        items += [(m, t, c) for t, c in zip(st.body, terms.of(st, kind))]
    parts = connected([c for _, _, c in items])
    together = {a: part for part in parts for a in part}
    nests, alone = [], []
    for a, (m, t, c) in enumerate(items):
        if a in together:
            if together[a][0] == a:
                nests.append(nest_of([c for _, _, c in items], together[a],
                                     [items[b][0] for b in together[a]]))
        elif c is not None:
            alone.append((m, c.plan))
        else:                           # a scalar's loop-free term, as in its own kernel
            alone.append((m, plan_term(t, (), terms.base, top=False)))
    gens = generators_of(kind)
    scalars = tuple(m for m, st in enumerate(stmts) if not st.indices) if kind else ()
    return SiblingGroup(start, tuple(st.name for st in stmts), gens, tuple(nests),
                        tuple(alone), scalars)


__all__ = ["SiblingGroup", "Nest", "Canon", "generators_of", "canonical", "bound", "connected",
           "nest_of", "split_sibling_sums", "order_siblings", "sibling_groups", "factor_key",
           "worth_sharing"]
