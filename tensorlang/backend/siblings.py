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
    nests: tuple              # Nest, each of two or more terms
    alone: tuple              # (member position, TermPlan): the terms in no nest

    @property
    def stop(self) -> int:
        return self.start + len(self.names)


def canonical(tp: TermPlan, base) -> TermPlan | None:
    """The plan of tp's term with its summed indices named by loop position (`'f0`
    outermost), or None when the term is no plain sum (a solved generator, an index
    of the plan's own) or the planner orders the renamed loops otherwise."""
    t = tp.term
    order = [lp.var for lp in tp.loops]
    if tp.solved or tp.fresh or not order or sorted(order) != sorted(n for n, _ in t.sums):
        return None
    new = {v: f"'f{q}" for q, v in enumerate(order)}
    bare = T.substitute_term(Term(t.coeff, (), t.pred, t.factors),
                             {v: Affine.of(IndexVar(n)) for v, n in new.items()})
    renamed = Term(t.coeff, tuple((new[n], d) for n, d in t.sums), bare.pred, bare.factors)
    ctp = plan_term(renamed, (), base, top=False)
    if [lp.var for lp in ctp.loops] != list(new.values()) or ctp.solved or ctp.fresh:
        return None
    return ctp


def nest_key(ctp: TermPlan) -> tuple:
    return ctp.loops, frozenset(ctp.outer_filters)


def tensor_reads(ctp: TermPlan) -> set:
    """The tensor elements a canonical term reads: (name, subscripts)."""
    return {(n.name, n.idx) for n in iter_nodes(ctp.term) if n.__class__ is Access and n.idx}


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


def _looped(st: Stmt) -> list[Term]:
    return [t for t in st.body if t.sums]


class _Terms:
    """The canonical looped terms of each eligible statement, computed once."""

    def __init__(self, prog: Program, eligible):
        self.base = size_facts(prog)
        self.eligible = eligible
        self.cache: dict[str, list] = {}

    def of(self, st: Stmt) -> list:
        got = self.cache.get(st.name)
        if got is None:
            got = []
            if not st.indices and self.eligible(st):
                for t in _looped(st):
                    ctp = canonical(plan_term(t, (), self.base, top=False), self.base)
                    if ctp is not None:
                        got.append(ctp)
            self.cache[st.name] = got
        return got


def _pairs(a: list, b: list) -> bool:
    """Does some term of a fuse with some term of b (equal loops, a shared read)?"""
    return any(nest_key(x) == nest_key(y) and tensor_reads(x) & tensor_reads(y)
               for x in a for y in b)


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
        looped = _looped(st)
        mine = terms.of(st)
        if (not mine or len(looped) == len(st.body)
                or not any(_pairs(mine, terms.of(o)) for o in prog.stmts if o is not st)):
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
    """Statements reordered so that each sibling group is contiguous: a scalar
    statement whose sums fuse with those of an earlier run of siblings moves to the end
    of that run when it reads nothing defined from the run's start on (any order in
    which every statement follows what it reads is the program)."""
    terms = _Terms(prog, eligible)
    out: list[Stmt] = []
    runs: list[list[str]] = []          # runs of siblings, by member name
    for st in prog.stmts:
        mine = terms.of(st)
        placed = False
        for run in runs if mine else ():
            start = next(q for q, s in enumerate(out) if s.name == run[0])
            later = {s.name for s in out[start:]}
            if statement_reads(st) & later:
                continue
            if any(_pairs(mine, terms.of(s)) for s in out[start:start + len(run)]):
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


def sibling_groups(prog: Program, plans, eligible) -> list[SiblingGroup]:
    """The sibling groups of a prepared program (plans: loops.plan_program's)."""
    terms = _Terms(prog, eligible)
    groups = []
    k = 0
    while k < len(prog.stmts):
        if not terms.of(prog.stmts[k]):
            k += 1
            continue
        j = k + 1
        names = {prog.stmts[k].name}
        while j < len(prog.stmts):
            st = prog.stmts[j]
            if not terms.of(st) or statement_reads(st) & names or not any(
                    _pairs(terms.of(st), terms.of(prog.stmts[q])) for q in range(k, j)):
                break
            names.add(st.name)
            j += 1
        if j - k >= 2:
            groups.append(_group(k, plans[k:j], terms.base))
        k = j
    return groups


def _group(start: int, plans, base) -> SiblingGroup:
    """The nests of a run of sibling statements: the connected sets of their terms
    under `_pairs`, of two terms or more."""
    items = []                          # (member, plan, canonical plan or None)
    for m, sp in enumerate(plans):
        for tp in sp.gather_terms:
            items.append((m, tp, canonical(tp, base) if tp.loops else None))
    parent = list(range(len(items)))

    def root(a):
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for a, (_, _, x) in enumerate(items):
        for b in range(a):
            y = items[b][2]
            if x is not None and y is not None and _pairs([x], [y]):
                parent[root(a)] = root(b)
    members: dict[int, list[int]] = {}
    for a in range(len(items)):
        members.setdefault(root(a), []).append(a)
    nests, alone = [], []
    for a, (m, tp, ctp) in enumerate(items):
        together = members[root(a)]
        if len(together) < 2:
            alone.append((m, tp))
        elif together[0] == a:
            lead = items[a][2]
            nests.append(Nest(lead.loops, frozenset(lead.outer_filters),
                              tuple((items[b][0], items[b][2]) for b in together)))
    names = tuple(sp.stmt.name for sp in plans)
    return SiblingGroup(start, names, tuple(nests), tuple(alone))


__all__ = ["SiblingGroup", "Nest", "split_sibling_sums", "order_siblings", "sibling_groups",
           "factor_key", "worth_sharing"]
