"""A sum a statement takes at several points, stored once and read at each.

The adjoint of a recurrence whose step reads its state at two neighbouring points
sums one cotangent twice, at points a constant apart.  Revenue management's value
function reads `V[t + 1, x]` and `V[t + 1, x - 1]` under a sum over fare classes,
so the adjoint of the state is

    V_bar[k, l] = ... + sum[p]([l + 1 < X and k >= 1] * V_arg_bar[k - 1, l + 1, p])
                      - sum[p]([k >= 1 and l >= 1] * V_arg_bar[k - 1, l, p])

two passes over the fares per state where one would do:

    V_bar_sum[a, b] = sum[p](V_arg_bar[a, b, p])
    V_bar[k, l]     = ... + [l + 1 < X and k >= 1] * V_bar_sum[k - 1, l + 1]
                          - [k >= 1 and l >= 1] * V_bar_sum[k - 1, l]

The law is only that a sum is a function of the points it is taken at.  A term's
*core* is what uses its summed indices: the factors and brackets that mention them,
with its sums.  When every subscript of the core's reads is either free of summed
indices (a *slot*, an affine expression of the statement's generators) or free of
generators, and its brackets mention summed indices only, the core is a function of
its slots' values.  A slot must be one generator moved by a constant, and no two
slots may move the same one, so that the new statement, one generator per distinct
slot with the dimension the slot indexes, has as many elements as the points the
term takes it at, and the term becomes its factors and brackets that do not use the
sums times a read of the new statement at the slots.  Two or more terms of one
statement whose cores are equal up to the slots (compared by the keys
share_common_statements uses, blind to names) share one statement (terms that take
one sum at one point are left to factoring, opt/factor.py, which shares the rest of
their products too).  The reads keep their terms' brackets, so a stored sum is read
only where the sums were taken; it is computed over the whole of its dimensions, so
the core may hold only reads (to non-negative integer powers): nothing that could
fail where no term looked.

Inside a recurrence group the stored sum is a member of the group when it reads
one (the engine puts it in step order); the rewrite is kept only when the groups
keep their steps and it makes the program cheaper.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..costs import program_cost
from ..ssa import build as B
from ..ssa import traverse as T
from ..ssa.ir import Access, Affine, Gather, IdxCmp, IndexVar, Program, Stmt, Term
from ..ssa.names import fresh, unique_name
from ..ssa.recur import group_of
from .engine import cheaper_cost
from .factor import _in_bounds, _trades_sizes
from .hoist import finite_everywhere

# At most this many summed terms of one statement are looked at.
TERM_LIMIT = 24


def store_shifted_sums(prog: Program) -> Program:
    """sum_S e(a) and sum_S e(b) in one statement -> h[a] and h[b], h[z] = sum_S e(z) a
    new statement (see the module docstring), where the program gets cheaper."""
    shapes = cost = None
    for k, s in enumerate(prog.stmts):
        if sum(1 for t in s.body[:TERM_LIMIT] if t.sums) < 2:
            continue
        if shapes is None:
            shapes, cost = prog.shapes(), program_cost(prog)
        cores: dict = {}
        for j, t in enumerate(s.body[:TERM_LIMIT]):
            core = _core(t, s, shapes)
            if core is not None:
                cores.setdefault(core.key, []).append((j, core))
        for hits in cores.values():
            # (terms that take the sum at one point are F * a + F * b: factoring's)
            if len({core.slots for _, core in hits}) < 2:
                continue
            trial = _stored(prog, k, hits, cost)
            if trial is not None:
                return trial
    return prog


@dataclass(frozen=True)
class _Core:
    """A summed term split into what uses its sums (`stmt`, over one generator per
    slot; `key`, its statement key) and what does not (`outer`, `outer_pred`)."""
    key: tuple
    stmt: Stmt
    slots: tuple
    outer: tuple
    outer_pred: tuple


def _core(t: Term, s: Stmt, shapes: dict) -> _Core | None:
    if not t.sums:
        return None
    summed = {n for n, _ in t.sums}
    gens = {n for n, _ in s.indices}
    inner, outer = [], []
    for f, p in t.factors:
        (inner if T.index_names(f) & summed else outer).append((f, p))
    # A factor left outside is computed where the core's brackets may all be false:
    # only reads, and calls finite wherever their reads are.
    if not inner or not all(f.__class__ is Access or finite_everywhere(f) for f, _ in outer):
        return None
    inner_pred, outer_pred = [], []
    for a in t.pred:
        used = T.index_names(a)
        if not used & summed:
            outer_pred.append(a)
        elif a.__class__ is IdxCmp and used <= summed and _plain(a.aff):
            inner_pred.append(a)
        else:
            return None
    # Reads the stored sum may compute anywhere in its dimensions.
    if not all(f.__class__ is Access and p >= 1 and float(p).is_integer() for f, p in inner):
        return None
    slots: list = []            # distinct generator subscripts, in order of first use
    dims: list = []
    place: dict = {}            # generator subscript -> the new statement's generator
    inner.sort(key=lambda fp: (fp[0].name, fp[1], _pattern(fp[0], summed)))
    rewritten = []
    for f, p in inner:
        idx = []
        for q, a in enumerate(f.idx):
            if not _plain(a):
                return None
            names = {v.name for v, _ in a.terms}
            if names & summed:
                if names & gens:
                    return None
                idx.append(a)
                continue
            if not names:
                idx.append(a)
                continue
            # A slot is one generator moved by a constant, and no two slots move one
            # generator: the stored sum then has as many elements as the points the term
            # takes it at (`p[k, m] * q[k + 1, m]` would store a k x k table for its
            # diagonal).
            if len(a.terms) != 1 or a.terms[0][1] != 1:
                return None
            if a not in place and any(a.terms[0][0] == b.terms[0][0] for b in slots):
                return None
            dims_of = shapes[f.name][1] if f.name in shapes else ()
            if q >= len(dims_of):
                return None
            dim = dims_of[q]
            if a not in place:
                place[a] = f"%z{len(slots)}"
                slots.append(a)
                dims.append(dim)
            elif dims[slots.index(a)] != dim:
                return None
            idx.append(Affine.of(IndexVar(place[a])))
        rewritten.append((Access(f.name, tuple(idx)), p))
    if not slots:
        return None
    indices = tuple((place[a], d) for a, d in zip(slots, dims))
    body = B.canon_body([Term(1.0, t.sums, tuple(inner_pred), tuple(rewritten))])
    stmt = Stmt("stored sum", indices, body)
    from .simplify import _compute_statement_key
    return _Core(_compute_statement_key(stmt), stmt, tuple(slots), tuple(outer),
                 tuple(outer_pred))


def _plain(a: Affine) -> bool:
    """An affine expression of indices and sizes only (no gathered label)."""
    return all(v.__class__ is not Gather for v, _ in a.terms)


def _pattern(f: Access, summed: set) -> tuple:
    """Where a read's subscripts use summed indices, blind to the generator ones (two
    terms' cores list their reads in one order whatever their slots)."""
    return tuple(a.sort_key() if {v.name for v, _ in a.terms} & summed else ()
                 for a in f.idx)


def _stored(prog: Program, k: int, hits: list, old_cost) -> Program | None:
    """prog with statement k's terms in `hits` reading one new statement, when that
    keeps its groups and is cheaper than `old_cost`, prog's."""
    s = prog.stmts[k]
    used = {p.name for p in prog.params} | {st.name for st in prog.stmts} | set(prog.sizes())
    name = unique_name(f"{s.name}_sum", used)
    first = hits[0][1].stmt
    # (named after the generators of the first term's slots, for the printed program;
    # a slot is one generator moved by a constant)
    gens = tuple((fresh(a.terms[0][0].name), d)
                 for a, (_, d) in zip(hits[0][1].slots, first.indices))
    mapping = {g: Affine.of(IndexVar(n)) for (g, _), (n, _) in zip(first.indices, gens)}
    stored = Stmt(name, gens, B.canon_body([T.substitute_term(t, mapping)
                                            for t in first.body]))
    taken = {j for j, _ in hits}
    body = [t for j, t in enumerate(s.body) if j not in taken]
    for j, core in hits:
        t = s.body[j]
        read = Access(name, core.slots)
        body.append(Term(t.coeff, (), core.outer_pred, core.outer + ((read, 1.0),)))
    new = Stmt(s.name, s.indices, B.canon_body(body), s.span, s.checked_labels)
    stmts = prog.stmts[:k] + (stored, new) + prog.stmts[k + 1:]
    trial = Program(prog.name, prog.params, stmts, prog.outputs, prog.tuple_return)
    if not _in_bounds(prog, k, stored) or not _same_groups(prog, trial, name):
        return None
    # (the engine puts a new member of a group in step order: keep_recurrences)
    new_cost = program_cost(trial)
    if not cheaper_cost(new_cost, old_cost, strictly=True) or _trades_sizes(new_cost, old_cost):
        return None
    return trial


def _same_groups(prog: Program, trial: Program, name: str) -> bool:
    """Do trial's recurrence groups step as prog's do, the new statement at most joining
    one of them?"""
    try:
        before, after = group_of(prog), group_of(trial)
    except ValueError:
        return False
    for m, g in before.items():
        h = after.get(m)
        if h is None or (h.lead, h.steps) != (g.lead, g.steps) \
                or set(h.members) - {name} != set(g.members):
            return False
    return set(after) <= set(before) | {name}
