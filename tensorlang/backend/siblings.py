"""Sibling sums: scalar sums over the same loops, reading the same arrays, in one pass.

A gradient often takes several scalar sums over one set of points: the adjoints of a
scalar parameter that multiplies several factors of one term (option's `disc_bar_sum`
and `disc_bar_sum1`, both `sum[k, l]` over the triangle, reading `V` and `V_arg1_bar`),
a dot product beside the sum it came from (sinkhorn's `eps_bar_sum1`, `eps_bar_sum3`
and `eps_bar_dot` over (K, m), each reading `g_logsumexp_bar`).  As statements each is
a kernel of its own, one pass over the arrays it reads: the same large arrays streamed
from memory once per sum, and a factor they share (a softmax weight, a whole product)
computed once per sum.

A **sibling group** is a run of consecutive scalar statements whose gather terms
fall into *nests*: terms whose loops are the same once their summed indices are named
by loop position (`canonical`: the loop plans, bounds and all, are then equal), and
which read a tensor at the same position.  The group's kernel (`KernelWriter.siblings`)
keeps one accumulator per statement, runs each nest's loops once, tests the brackets
of its terms once per distinct set, computes each factor two terms share (equal up to
the names of the indices summed inside it) into a local, and adds each term into its
statement's accumulator; the members' other terms run after it as in their own
kernels.  The parallel form runs each nest's outer loop with `prange`, every
accumulator a per-thread sum, as a scalar reduction's kernel does.

The rule, and why: two terms are fused only when their loops are equal (a fused nest
has no test a separate one lacks) and they share a read (each point then loads those
elements once instead of once per sum, and a factor they share is computed once).
Unrelated sums over the same loops are left apart: fusing them saves no traffic,
while each sum alone keeps the partial sums of its innermost loop (`unrolled`), which
a loop with several accumulators does without.  No statement of the group may read
another (each is complete only after the pass).  Two preparation passes make the
groups (`split_sibling_sums`, `order_siblings`).  Only a code-generation choice: the
program's meaning and its cost polynomial (which counts every term, an upper bound)
are unchanged.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..bounds import size_facts
from ..loops import TermPlan, plan_term
from ..ssa.ir import Access, Affine, IndexVar, Program, SizeValue, Stmt, Term
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
    renamed = Term(t.coeff, tuple((new[n], d) for n, d in t.sums), bare.pred, bare.factors)
    plan = plan_term(renamed, gens, facts, top=False)
    if [lp.var for lp in plan.loops] != list(new.values()) or plan.solved or plan.fresh:
        return None
    reads = frozenset((n.name, n.idx) for n in iter_nodes(plan.term)
                      if n.__class__ is Access and n.idx)
    return Canon(plan, (tuple(d for _, d in gens), plan.loops, frozenset(plan.outer_filters)),
                 reads)


def factor_key(f):
    """The factor with every index it sums or reduces over named by order of
    appearance: equal for factors that differ only in those names."""
    seen: dict[str, str] = {}
    prog = Program("", (), (Stmt("'k", (), (Term(1.0, (), (), ((f, 1.0),)),)),), ())
    renamed = rename_binders(prog, lambda n: seen.setdefault(n, f"'b{len(seen)}"))
    return renamed.stmts[0].body[0].factors[0][0]


def worth_sharing(f) -> bool:
    """A factor that costs a load or more (a scalar read or a size costs nothing)."""
    return not (f.__class__ is Access and not f.idx) and f.__class__ is not SizeValue


class _Terms:
    """Per eligible statement, its terms in canonical form (None for a term that has
    none), computed once.  A scalar statement offers its sums (its loop-free terms
    run after the nests); a tensor statement all its terms or none (each element is
    written once, after all of them)."""

    def __init__(self, prog: Program, eligible):
        self.base = size_facts(prog)
        self.eligible = eligible
        self.cache: dict[str, list] = {}

    def of(self, st: Stmt) -> list:
        got = self.cache.get(st.name)
        if got is None:
            got = []
            if self.eligible(st):
                got = [canonical(t, st.indices, self.base) if t.sums or st.indices else None
                       for t in st.body]
                if st.indices and None in got:
                    got = []
            self.cache[st.name] = got
        return got

    def fusible(self, st: Stmt) -> list:
        return [c for c in self.of(st) if c is not None]


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
        mine = terms.fusible(st)
        if (st.indices or not mine or len(looped) == len(st.body)
                or not any(_pairs(mine, terms.fusible(o)) for o in prog.stmts if o is not st)):
            stmts.append(st)
            continue
        name = unique_name(f"{st.name}'sums", used)
        used.add(name)
        stmts.append(Stmt(name, (), tuple(looped)))
        rest = [t for t in st.body if not t.sums]
        rest.append(Term(1.0, (), (), ((Access(name, ()), 1.0),)))
        stmts.append(Stmt(st.name, (), tuple(rest), st.span))
        changed = True
    if not changed:
        return prog
    return Program(prog.name, prog.params, tuple(stmts), prog.outputs, prog.tuple_return)


def order_siblings(prog: Program, eligible) -> Program:
    """Statements reordered so that each sibling group is contiguous: a statement
    whose terms fuse with those of an earlier run of siblings moves to the end of that
    run when it reads nothing defined from the run's start on (any order in which
    every statement follows what it reads is the program)."""
    terms = _Terms(prog, eligible)
    out: list[Stmt] = []
    runs: list[list[str]] = []          # runs of siblings, by member name
    for st in prog.stmts:
        mine = terms.fusible(st)
        placed = False
        for run in runs if mine else ():
            start = next(q for q, s in enumerate(out) if s.name == run[0])
            if not any(_pairs(mine, terms.fusible(s)) for s in out[start:start + len(run)]):
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
            if mine:
                runs.append([st.name])
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
        while j < len(prog.stmts):
            st = prog.stmts[j]
            if statement_reads(st) & names or not any(
                    _pairs(terms.fusible(st), terms.fusible(prog.stmts[q]))
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
    items = []                          # (member, term, Canon or None)
    for m, st in enumerate(stmts):
        items += [(m, t, c) for t, c in zip(st.body, terms.of(st))]
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
    gens = generators_of(stmts[0].dims)
    return SiblingGroup(start, tuple(st.name for st in stmts), gens, tuple(nests),
                        tuple(alone))


__all__ = ["SiblingGroup", "Nest", "Canon", "generators_of", "canonical", "connected",
           "nest_of", "split_sibling_sums", "order_siblings", "sibling_groups", "factor_key",
           "worth_sharing"]
