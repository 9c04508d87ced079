"""Contraction order: a product summed over shared indices, computed pairwise.

A term ``sum[i, j, l, p](A[i, j] * B[j, l] * C[l, p] * v[p])`` runs as one
loop nest over all four indices: n^4 work for what is a column sum and two
matrix-vector products.  This rule splits such a term into a tree of
contractions, each a statement of its own that multiplies two operands and
sums the indices nothing outside it uses::

    out_sum[j]  = sum[i](A[i, j])
    out_sum1[l] = sum[j](B[j, l] * out_sum[j])
    out_sum2[p] = sum[l](C[l, p] * out_sum1[l])
    out         = sum[p](out_sum2[p] * v[p])

The law is distributivity of the product over the sums (and associativity of
the product): sum_{j,k} a(j) b(j, k) c(k) = sum_k (sum_j a(j) b(j, k)) c(k).
Independent sums, sum_{j,l} a(j) b(l) = (sum_j a(j)) (sum_l b(l)), are the
simplest case, and a factor that does not use a sum ends up outside it.

**Operands.**  Every factor that uses an index of the term is an operand: a
tensor read (a gather included: ``E[y[s], c]`` uses s and c), a builtin call
or a parenthesised group (opaque: its free indices are its index set), each
with its power.  Factors without indices and the coefficient stay in the term
that replaces the original (the *root*), except a factor that reads through a
label, which goes with the operand carrying the brackets (the root runs once,
the term reads it only where its brackets hold), and so do brackets on generators
only; an index comparison among those is copied into a new statement too when
one of its reads is provably in bounds only under it (a bracket is 0 or 1, so
a copy changes nothing where the root keeps it).  A bracket on summed indices
goes with the operands that use all of them (``[j <= l]`` with ``B[j, l]``),
so the guard runs where those indices are looped over and the reads it
protects stay in its scope.  When no single operand uses them all, it is an
operand of its own, a 0-1 tensor (``[M[i, j]]`` beside ``U[i, a] * V[j, a] *
U[i, b] * V[j, b]``); if no such split keeps every read provably in bounds,
the operands sharing its summed indices become one instead.  An equality that fixes a generator (a
diagonal ``[k == l]``, the adjoint of a gather ``[k == y[s]]``) stays in the
root with the sums it reads: the loop plan computes that generator instead of
looping over it.  Terms with an equality on a summed index (bracket
elimination's) or a sum no factor uses (free-sum collapse's) are left alone.

**Unary reductions.**  An operand with a summed index that no other operand
uses (``A[i, j]`` with i summed, above) may be summed over it on its own
first.

**The search.**  The order is chosen by an estimate of the cost polynomial of
``tensorlang.costs`` (loop trips times the operations per trip, plus one write
per element stored), evaluated at sampled size assignments: all sizes equal
(small and large, the engine's ``COST_SAMPLE_SIZES``) and skewed ones (each
size symbol large among small ones, and small among large ones).  At each
sample an exact dynamic programme over subsets of operands finds the cheapest
binary tree (up to ``EXACT_LIMIT`` operands; a greedy pairing beyond), with
and without unary reductions and copied brackets.  The distinct trees found
are built as statements and compared by their real cost polynomials at all
samples; the one with the smallest geometric mean is kept, and only when it
is no costlier than the term as it is at every sample (so also at the
engine's) and cheaper at one, and every read of the new statements and of
the root is provably in bounds.  Operands are numbered by a refinement of their structure
(kind, power, the sizes and roles of their indices, then their neighbours'),
never by names, so equally cheap trees are told apart by structure first.

**Stored contractions.**  A node of a tree equal to a statement the program
already stores before the term (up to the names and order of its generators, the
keys share_common_statements compares) is a read of that statement, and the
search counts a pair of operands whose node is one as free.  An adjoint often sums
a product whose partial sums another adjoint or the function stores: gamma's
adjoint in value iteration, ``sum[k, l, p, u](P[l, p, u] * V[k - 1, u] *
V_bar[k, l, p])``, is ``sum(P * P_bar_sum)`` once P's adjoint is stored, where the
cheapest order of the four factors alone is a pass of the step's size per step.
In a program that is differentiated further the reads are not made
(order_contractions_recomputing): a read is factoring, and its tangent brings
back the terms it holds.
"""
from __future__ import annotations

from ..ssa.recur import group_of
import itertools
import math
from dataclasses import dataclass

from .. import sizexpr
from ..bounds import project_out, size_facts
from ..builtins import BUILTINS
from ..check import BoundsChecker
from ..costs import CostModel, alternative_costs, program_cost
from ..errors import ErrorSink
from ..memo import Memo
from ..ssa import build as B
from ..ssa import traverse as T
from ..ssa.ir import (Access, Affine, Apply, Gather, Group, IdxCmp, IndexVar, Param, Program,
                      Reduce, SizeValue, Stmt, Term, ValCmp, dim_key)
from ..ssa.names import fresh, is_internal, unique_name
from .engine import COST_SAMPLE_SIZES
from ..ties import tie_sums
from .hoist import finite_everywhere

# Exact search over subsets costs 3^k steps per sample; beyond this many
# operands the greedy pairing is used.
EXACT_LIMIT = 7
LOW, HIGH = COST_SAMPLE_SIZES

# Decisions per term (a tree or None), remembered: the engine offers every
# unsplit term again in each round.
_CHOICES = Memo(20_000)
_MISSING = object()
# Statements none of whose terms is split: every term's choice above is None, and
# those choices depend only on what the key below holds (the statement, the shapes
# of what it reads, the program's sizes), so the statement is passed over whole.
_UNSPLIT = Memo(20_000)
_READ_NAMES = Memo(50_000)


def _read_names(s: Stmt) -> tuple[str, ...]:
    """The tensors a statement reads, as values or as gathers, sorted (remembered)."""
    return _READ_NAMES.compute(s, lambda: tuple(sorted({
        n.name for n in T.iter_nodes(s.body) if n.__class__ is Access or n.__class__ is Gather})))


def _read_names_set(s: Stmt) -> frozenset:
    return frozenset(_read_names(s))


def _stored_twin(new: Stmt, available: tuple):
    """(statement of `available`, order) when `new` equals it up to the names and the
    order of its generators: new's generator order[j] is the statement's j-th.  The
    keys are share_common_statements' (simplify._key_in_order), so a twin found here
    is one that rule would merge."""
    if not available:
        return None
    from .simplify import _key_in_order, _statement_key, alpha_key
    dims = sorted(dim_key(d) for _, d in new.indices)
    reads = _read_names(new)
    keys: dict = {}         # new's key with its generators in each order, made once
    for e in available:
        # (twins read the same tensors: a test that spares the keys, which rename and
        # sort every term, for the statements that cannot be)
        if len(e.indices) != len(new.indices) or _read_names(e) != reads \
                or sorted(dim_key(d) for _, d in e.indices) != dims:
            continue
        want = _statement_key(e)
        for order in itertools.permutations(range(len(new.indices))):
            if not all(dim_key(new.indices[k][1]) == dim_key(d)
                       for k, (_, d) in zip(order, e.indices)):
                continue
            if order not in keys:
                keys[order] = _key_in_order(new, order, alpha_key)
            if keys[order] == want:
                return e, order
    return None


def _twin_keys(available: tuple) -> frozenset:
    """What a choice made with `available` depends on: its statements up to their names."""
    if not available:
        return frozenset()
    from .simplify import _statement_key
    return frozenset(_statement_key(e) for e in available)


# ------------------------------------------------------------ the term as operands
@dataclass
class Unit:
    """An operand: factors (with powers) and the brackets glued to them."""
    factors: list
    atoms: list
    mask: int = 0          # bit k: the k-th index of the term's scope is used


@dataclass
class Network:
    """A term seen as operands over the indices in scope (generators, then sums)."""
    scope: list            # index names: the statement's generators, then the term's sums
    dims: list             # their ranges
    gens: int              # mask of the generators
    summed: int            # mask of the summed indices
    units: list            # Unit, in a structural order
    extras: list           # (factor, power) without indices: they stay in the root
    root_atoms: list       # brackets on generators only: they stay in the root
    copies: list           # (atom, mask): index comparisons copied into new statements
    pinned: int = 0        # summed indices the root's brackets read: summed in the root
    solved: int = 0        # generators the root's equalities fix (no loop over them)

    @property
    def need(self) -> int:
        """Indices every new statement keeps when it uses them."""
        return self.gens | self.pinned


def _mask(names, pos: dict) -> int:
    m = 0
    for n in names:
        k = pos.get(n)
        if k is not None:
            m |= 1 << k
    return m


def _solved_generator(atom: IdxCmp, gens: set, summed: set) -> str | None:
    """The generator an equality fixes from other quantities (the loop plan then
    computes it instead of looping over it; see loops.py), or None."""
    for a, c in atom.aff.terms:
        if isinstance(a, IndexVar) and a.name in gens and abs(c) == 1:
            rest = [b.name for b, _ in atom.aff.terms if isinstance(b, IndexVar) and b != a]
            if not set(rest) & summed:
                return a.name
    return None


def _plain_index(atom: IdxCmp) -> bool:
    """Does the comparison name an index outside a label?  An equality of labels alone
    (`[q[j] == q[k]]`, two items of one group) fixes no index: it is a 0-1 tensor
    on the indices its labels read, like any other bracket."""
    return any(isinstance(v, IndexVar) for v, _ in atom.aff.terms)


def _gathers(x) -> set:
    """The gathered labels (Gather nodes) anywhere in x."""
    return {n for n in T.iter_nodes(x) if n.__class__ is Gather}


def _guard_labels_where_read(units: list, root_atoms: list, pos: dict) -> None:
    """A root bracket that compares a label (`[dst[e] < n]`) also guards every read
    the label indexes (`p[m, dst[e]]`): an operand reading through that label takes
    the bracket with it into the statement it may become, or that statement would use
    a label the term excludes as an index, which the call-time check rejects (the
    derivative would refuse inputs its function accepts; docs/language.md, gathers).
    Only a bracket on the operand's own indices can go with it (an equality that
    fixes a generator, `[l == src[e]]`, stays in the root).  A bracket is 0 or 1, so
    repeating it changes no value."""
    guards = [(a, _gathers(a), _mask(T.index_names(a), pos))
              for a in root_atoms if a.__class__ is IdxCmp]
    guards = [g for g in guards if g[1]]
    if not guards:
        return
    for u in units:
        read = set()
        for f, _ in u.factors:
            read |= _gathers(f)
        for a, labels, m in guards:
            if labels & read and m & ~u.mask == 0 and a not in u.atoms:
                u.atoms.append(a)


def _reads_label(f) -> bool:
    """Does factor f read a tensor at a label it holds (`E[y[z[0]]]`)?"""
    return any(n.__class__ in (Access, Gather) and any(_gathers(a) for a in n.idx)
               for n in T.iter_nodes(f))


def _reads_constant_label(f) -> bool:
    """Does factor f read a tensor at a label that uses no index (`E[y[z[0]], c]`)?"""
    return any(n.__class__ in (Access, Gather)
               and any(_gathers(a) and not T.index_names(a) for a in n.idx)
               for n in T.iter_nodes(f))


def _reads_through_labels_stay_guarded(units: list, extras: list) -> bool:
    """A factor without indices stays in the root, which runs once, but the term reads
    it only where its brackets hold at some point of its sums.  For a read through a
    label (checked at the call) that matters: `sum[e]([0 <= z[e] < n] * x[z[e]]) *
    E[y[z[0]]]` reads y at z[0] where no z[e] is in range, which the term does not
    (a function of `sum[s, e]([s == z[e]] * E[y[z[0]]] * x[s])` refused z = [-1]).
    Such a factor goes into the one operand that carries brackets (there it is read
    where they hold); with brackets in several operands the term is left alone
    (False).  Factors that read nothing through a label stay in the root.

    An operand without brackets that reads at a constant label is summed apart from
    the bracketed one just as the root is (`sum[e]([0 <= z[e] < n]) *
    sum[c](E[y[z[0]], c])`), so it joins the bracketed operand in the same way.
    (One whose labels vary over its own indices stays apart: joining it would
    store what the function never holds, n x E for an edge list.)"""
    guarded = [u for u in units if u.atoms]
    if not guarded:
        return True
    labelled = [x for x in extras if _reads_label(x[0])]
    readers = [u for u in units
               if not u.atoms and any(_reads_constant_label(f) for f, _ in u.factors)]
    if not labelled and not readers:
        return True
    if len(guarded) > 1:
        return False
    home = guarded[0]
    home.factors.extend(labelled)
    extras[:] = [x for x in extras if not any(x is y for y in labelled)]
    for u in readers:
        home.factors.extend(u.factors)
        home.mask |= u.mask
    units[:] = [u for u in units if not any(u is r for r in readers)]
    return True


def network(s: Stmt, t: Term, glue: bool, facts, infinite: "_Infinities") -> Network | None:
    """The operands of term t of statement s, or None when t is left alone.

    A bracket on summed indices that no single operand uses all of is an
    operand of its own (a 0-1 tensor: ``[M[i, j]]`` next to ``U[i, a] * V[j, a]``
    keeps the products over a pairwise), or, with `glue`, joins the operands
    that share its summed indices into one (the fallback when a read needs
    the bracket to be provably in bounds)."""
    if not t.sums:
        return None
    scope = [n for n, _ in s.indices] + [n for n, _ in t.sums]
    dims = [d for _, d in s.indices] + [d for _, d in t.sums]
    pos = {n: k for k, n in enumerate(scope)}
    gens = (1 << len(s.indices)) - 1
    summed = ((1 << len(scope)) - 1) & ~gens
    gen_names, sum_names = {n for n, _ in s.indices}, {n for n, _ in t.sums}
    units, extras = [], []
    for f, p in t.factors:
        m = _mask(T.index_names(f), pos)
        if m:
            units.append(Unit([(f, p)], [], m))
        else:
            extras.append((f, p))
    root_atoms, copies, glued = [], [], []
    pinned = solved = 0
    for a in t.pred:
        m = _mask(T.index_names(a), pos)
        if isinstance(a, IdxCmp) and a.op == "==" and _plain_index(a):
            # An equality that fixes a summed index is bracket elimination's; one
            # that fixes a generator (a diagonal, the adjoint of a gather) stays in
            # the root, with the sums it reads (``[k == y[s]]`` keeps s there).
            if any(isinstance(v, IndexVar) and v.name in sum_names for v, _ in a.aff.terms):
                return None
            g = _solved_generator(a, gen_names, sum_names)
            if g is None:
                return None
            solved |= 1 << pos[g]
            pinned |= m & summed
            root_atoms.append(a)
        elif m & summed:
            glued.append((a, m))
        else:
            root_atoms.append(a)
            if isinstance(a, IdxCmp):
                copies.append((a, m))
    for a, m in glued:
        # A bracket on summed indices goes with the operands that use all of them
        # and grow least by taking its other indices (a bracket is 0 or 1, so it
        # may be repeated).  One on sums the root keeps (those an equality on a
        # generator reads: `[k == y[p - 1]]`) stays in the root as well, where it
        # guards the root's own reads (`y[p - 1]` needs `[p >= 1]`).
        if isinstance(a, IdxCmp) and m & summed & ~pinned == 0:
            root_atoms.append(a)
        homes = [u for u in units if u.factors and u.mask & m & summed == m & summed]
        if homes:
            growth = min(bin(m & ~u.mask).count("1") for u in homes)
            for u in homes:
                if bin(m & ~u.mask).count("1") == growth:
                    u.atoms.append(a)
                    u.mask |= m
            continue
        if not glue:
            units.append(Unit([], [a], m))
            continue
        linked = [u for u in units if u.mask & m & summed]
        merged = Unit([], [a], m)
        for u in linked:
            merged.factors += u.factors
            merged.atoms += u.atoms
            merged.mask |= u.mask
        units = [u for u in units if not any(u is v for v in linked)] + [merged]
    _guard_labels_where_read(units, root_atoms, pos)
    if not _reads_through_labels_stay_guarded(units, extras):
        return None
    if not _infinite_operands_stay_where_sums_are_not_empty(t, units, root_atoms, copies, scope,
                                                            pos, summed, facts, infinite):
        return None
    used = pinned
    for u in units:
        used |= u.mask
    if summed & ~used:
        return None                      # a sum no factor uses: collapse it first
    if not units:
        return None
    net = Network(scope, dims, gens, summed, units, extras, root_atoms, copies, pinned, solved)
    net.units = _structural_order(net)
    return net


class _Infinities:
    """Which factors and statements of a program may be inf where its inputs are finite:
    a negative power of something that may be 0, a `log` or `pow` call, a maximum,
    minimum or logsumexp over a filter that may hold nowhere (-inf or +inf), and
    anything that reads one.

    Zero is ruled out only by structure: `max(x, c)` with a constant c > 0, an
    exponential (0 only where it underflows, as its slope is inf only where it
    overflows: builtins.Builtin.slope_overflows_only), a statement that is a
    positive constant plus terms that are never negative or one product of such
    factors.  A reduction's filter on indices is projected onto the free indices
    (bounds.project_out) and never empty when the ranges prove the projection; one
    on values may hold nowhere.  A point left out by [j != i] or a stride is not
    counted (the filter is empty then only in a range of one or two points)."""

    def __init__(self, prog: Program):
        from .simplify import bounded_away_from_zero
        self.prog = prog
        self.stmts = {st.name: st for st in prog.stmts}
        self.positive = lambda name: bounded_away_from_zero(name, self.stmts)
        self._names: frozenset | None = None

    @property
    def names(self) -> frozenset:
        """The statements that may be inf, found when first asked (most applications
        of order_contractions split nothing and never ask)."""
        if self._names is None:
            base, names = size_facts(self.prog), set()
            self._names = frozenset()
            for _ in range(2):          # a recurrence's members read later ones: twice
                for st in self.prog.stmts:
                    if self.body(st.body, base.with_ranges(st.indices)):
                        names.add(st.name)
                        self._names = frozenset(names)
        return self._names

    def body(self, body, facts, reads: bool = True) -> bool:
        for t in body:
            scope = facts.with_ranges(t.sums)
            if any(self.factor(f, p, scope, reads) for f, p in t.factors):
                return True
        return False

    def factor(self, f, p, facts, reads: bool = True) -> bool:
        """May f ** p be inf?  (Without `reads`: itself, not through a statement it
        reads.)"""
        if p < 0 and self.may_be_zero(f):
            return True
        cls = f.__class__
        if cls is Access:
            return reads and f.name in self.names
        if cls is Apply:
            return BUILTINS[f.fn].infinite_value or any(self.body(a, facts, reads)
                                                        for a in f.args)
        if cls is Group:
            return self.body(f.body, facts, reads)
        if cls is Reduce:
            return self.may_be_empty(f, facts) or self.body(f.body, facts.with_ranges(f.over),
                                                            reads)
        return False

    def divides_by_bracketed(self, f, p) -> bool:
        """Is f ** p a division by (or the log of) a statement every term of which
        is under a bracket, so that the brackets, not the data, make it 0?"""
        if f.__class__ is Apply and BUILTINS[f.fn].infinite_value:
            return any(self.divides_by_bracketed(g, -1.0) for a in f.args for t in a
                       for g, _ in t.factors)
        if p >= 0 or f.__class__ is not Access or f.name not in self.stmts:
            return False
        return all(t.pred for t in self.stmts[f.name].body)

    def may_be_zero(self, f, depth: int = 4) -> bool:
        if f.__class__ is SizeValue:
            return False                    # a size is at least 1
        if f.__class__ is Apply:
            return not (f.fn == "exp" or finite_everywhere(f))
        if f.__class__ is Access and f.name in self.stmts:
            if self.positive(f.name):
                return False
            # one product without brackets or sums of factors none of which is 0
            body = self.stmts[f.name].body
            return depth == 0 or not (
                len(body) == 1 and body[0].coeff != 0 and not body[0].sums
                and not body[0].pred
                and not any(self.may_be_zero(g, depth - 1) for g, _ in body[0].factors))
        return True

    def may_be_empty(self, r: Reduce, facts) -> bool:
        if not all(isinstance(a, IdxCmp) for a in r.where):
            return True                     # a filter on values
        domain = _range_bounds(r.over) + [b for a in r.where for b in _bounds(a)]
        projected = project_out(domain, [n for n, _ in r.over])
        return projected is None or not all(
            aff.is_const and aff.const >= 0 or facts.proves(aff) for aff in projected)


def _infinite_operands_stay_where_sums_are_not_empty(t: Term, units: list, root_atoms: list,
                                                     copies: list, scope: list, pos: dict,
                                                     summed: int, facts,
                                                     infinite: "_Infinities") -> bool:
    """Give each operand that may be inf (`_Infinities`) the brackets under which
    the rest of the term's sums are not empty; False when they cannot be said.

    In ``sum[k | k < p](a[p - 1, k] * r[p - k] / D[p])`` the division is evaluated
    only for p >= 1: at p = 0 the sum has no element and the term is 0, whatever
    D[0] is.  Taken out of the sum, ``/ D[p]`` multiplies an empty sum, 0 * inf =
    NaN where D[0] = 0 (a recursion's prediction error at its first step).  So the
    operand takes [p >= 1], the projection of the sums' domain onto the indices it
    keeps (bounds.project_out), less what the ranges and its brackets already
    prove.  An operand that reads every summed index stays inside all of them."""
    for u in list(units):
        if not any(u is w for w in units) \
                or not any(infinite.factor(f, p, facts) for f, p in u.factors):
            continue                    # (merged into another, or finite)
        joined = False
        while True:
            gone = [n for k, n in enumerate(scope) if summed >> k & 1 and not u.mask >> k & 1]
            domain, data = _sum_domain(t, gone)
            if joined or not data or not any(infinite.divides_by_bracketed(f, p)
                                             and not _nonzero_under(f, root_atoms)
                                             for f, p in u.factors):
                break
            # A filter on values or on labels read at a summed index (`[m[i, j] > 0]`,
            # `[k == dst[s]]`) empties the sum for some data: an operand that divides by
            # a statement its brackets make 0 (`/ c[i]`, the count of a masked mean) is
            # computed with the operands the filter is on, inside their sums, so an
            # empty row stays 0.  (A division by data, `1 / (hi[k] - lo[k])`, is inf
            # where the data make it so, in the program as written too.)
            _join_with_filters(u, units, data)
            joined = True
        if not gone:
            continue
        projected = project_out(domain, gone)
        if projected is None:
            return False
        known = facts.with_pred(tuple(u.atoms) + tuple(root_atoms))
        for aff in projected:
            if aff.is_const and aff.const >= 0 or known.proves(aff):
                continue
            guard = IdxCmp(">=", aff)
            m = _mask(T.index_names(guard), pos)
            if m & summed:
                u.atoms.append(guard)
                u.mask |= m
            else:
                # On output indices and sizes only, it is the root's: where it fails the
                # root reads nothing, and the operand keeps its own indices, so the
                # order of the contractions is what it would be without it.
                root_atoms.append(guard)
                copies.append((guard, m))
    return True


def _sum_domain(t: Term, gone: list) -> tuple[list, list]:
    """(the bounds on the summed indices `gone` as constraints `aff >= 0`, the brackets
    on them that filter by data).  [j != i] and strides are in neither: they empty a
    sum in a range of one or two points only."""
    domain = _range_bounds([(n, d) for n, d in t.sums if n in gone])
    data = []
    for a in t.pred:
        if not _reads_any(a, gone):
            continue
        if isinstance(a, IdxCmp) and a.op in (">=", "==") and not _gathers_any(a, gone):
            domain += _bounds(a)
        elif not (isinstance(a, IdxCmp) and a.op in ("!=", "%")):
            data.append(a)
    return domain, data


def _range_bounds(indices) -> list:
    """0 <= v and v <= d - 1 for each (v, d), as constraints `aff >= 0`."""
    out = []
    for n, d in indices:
        v = Affine.of(IndexVar(n))
        out += [v, Affine.dim(d) - v - Affine(1)]
    return out


def _bounds(atom: IdxCmp) -> list:
    """Index comparison `atom` as constraints `aff >= 0` (none for != and strides)."""
    if atom.op == ">=":
        return [atom.aff]
    if atom.op == "==" and not atom.mod:
        return [atom.aff, atom.aff.scale(-1)]
    return []


def _nonzero_under(f, atoms) -> bool:
    """Does a bracket among `atoms` say that factor f is not 0 (`[cnt[b] > 0]`,
    a guard the user wrote)?  The root reads nothing where it is false."""
    zero = B.const(0.0)
    for a in atoms:
        if isinstance(a, ValCmp):
            for mine, other, op in ((a.left, a.right, a.op), (a.right, a.left, B.MIRRORED_OP[a.op])):
                if other == zero and op in (">", "<", "!=") and len(mine) == 1 \
                        and mine[0].coeff == 1.0 and not mine[0].sums and not mine[0].pred \
                        and mine[0].factors == ((f, 1.0),):
                    return True
    return False


def _join_with_filters(u: Unit, units: list, data: list) -> None:
    """Merge operand u into the operands holding the brackets `data` (in place)."""
    for w in [w for w in units if w is not u and any(a in w.atoms for a in data)]:
        u.factors += w.factors
        u.atoms += [a for a in w.atoms if a not in u.atoms]
        u.mask |= w.mask
        units.remove(w)


def _gathers_any(atom: IdxCmp, gone: list) -> bool:
    """Does a label read in `atom` depend on one of the indices `gone`?"""
    return any(isinstance(a, Gather) and _reads_any(a, gone) for a, _ in atom.aff.terms)


def _reads_any(atom, gone: list) -> bool:
    return any(n in gone for n in T.index_names(atom))


def _structural_order(net: Network) -> list:
    """Units sorted by a name-free description, refined by their neighbours'.

    The description of a unit is its factors' kinds, powers and index
    patterns, with each index given by its range and its role (which output
    position it is, or summed); each round adds the sorted descriptions of the
    units sharing each of its indices.  Units equal after refinement keep the
    term's (canonical) order: they are interchangeable as far as cost goes."""
    ngen = bin(net.gens).count("1")

    def role(k: int) -> tuple:
        return (0, k) if k < ngen else (1, 0)

    pos = {n: k for k, n in enumerate(net.scope)}

    def affine_key(a: Affine) -> tuple:
        out = []
        for atom, c in a.terms:
            if isinstance(atom, IndexVar) and atom.name in pos:
                k = pos[atom.name]
                out.append((0, role(k), dim_key(net.dims[k]), c))
            else:
                out.append((1, (9, 0), (9, 0, ""), c))
        return (a.const, tuple(sorted(out)))

    def factor_key(f, p) -> tuple:
        if isinstance(f, Access):
            return (0, "", p, tuple(affine_key(a) for a in f.idx))
        fn = f.fn if isinstance(f, Apply) else ""
        kind = 1 if isinstance(f, Apply) else 2
        k = tuple(sorted((role(pos[n]), dim_key(net.dims[pos[n]]))
                         for n in T.index_names(f) if n in pos))
        return (kind, fn, p, ((0, k),))

    def bits(m):
        return [k for k in range(len(net.scope)) if m >> k & 1]

    colors = [(tuple(sorted(factor_key(f, p) for f, p in u.factors)), len(u.atoms),
               tuple(sorted((role(k), dim_key(net.dims[k])) for k in bits(u.mask))))
              for u in net.units]
    ranks = _ranks(colors)
    for _ in range(len(net.units)):
        colors = []
        for a, u in enumerate(net.units):
            around = tuple(sorted(
                (role(k), dim_key(net.dims[k]),
                 tuple(sorted(ranks[b] for b, v in enumerate(net.units)
                              if b != a and v.mask >> k & 1)))
                for k in bits(u.mask)))
            colors.append((ranks[a], around))
        new = _ranks(colors)
        if len(set(new)) == len(set(ranks)):
            break
        ranks = new
    order = sorted(range(len(net.units)), key=lambda a: (ranks[a], a))
    return [net.units[a] for a in order]


def _ranks(keys: list) -> list:
    distinct = sorted(set(keys))
    at = {k: r for r, k in enumerate(distinct)}
    return [at[k] for k in keys]


# ------------------------------------------------------------ trees
# A tree is a nested tuple over unit numbers:
#   ("leaf", u, reduced)     operand u, summed over its private indices first if reduced
#   ("node", left, right)    a new statement: the product of two subtrees, summed
#                            over the indices nothing outside it uses
#   ("root", child, ...)     the term that replaces the original (one or two children)


class Estimate:
    """The cost estimate of trees at one size sample (plain floats)."""

    def __init__(self, net: Network, sample: dict, unit_ops: list, root_ops: float,
                 copies: bool, stored: frozenset = frozenset()):
        self.net = net
        # pairs of units (as sets) whose product the program stores already: free
        self.stored = stored
        self.copies = [m for _, m in net.copies] if copies else []
        self.size = [float(d) if isinstance(d, int) else float(sample[d]) for d in net.dims]
        self.unit_ops = unit_ops
        self.root_ops = root_ops
        self.full = (1 << len(net.units)) - 1
        self.masks = [u.mask for u in net.units]
        self._loops: dict = {}
        self._union: dict = {}
        others = []
        for a in range(len(net.units)):
            m = 0
            for b, u in enumerate(net.units):
                if b != a:
                    m |= u.mask
            others.append(m)
        self.private = [u.mask & net.summed & ~net.pinned & ~others[a]
                        for a, u in enumerate(net.units)]

    def loops(self, m: int) -> float:
        v = self._loops.get(m)
        if v is None:
            v = 1.0
            rest, k = m, 0
            while rest:
                if rest & 1:
                    v *= self.size[k]
                rest >>= 1
                k += 1
            self._loops[m] = v
        return v

    def union(self, s: int) -> int:
        """Indices used by the units in set s."""
        v = self._union.get(s)
        if v is None:
            v = 0
            for a, m in enumerate(self.masks):
                if s >> a & 1:
                    v |= m
            self._union[s] = v
        return v

    def kept(self, s: int) -> int:
        """Indices a node over units s must keep: generators and those used outside it."""
        return self.union(s) & (self.net.need | self.union(self.full & ~s))

    # An item is (cost so far, indices it loops over, factors it brings, ops per trip).
    def leaf(self, a: int, reduce: bool):
        u = self.net.units[a]
        nf = len(u.factors)
        if reduce and self.private[a]:
            keep = u.mask & ~self.private[a]
            cost = self.loops(keep) + self.loops(u.mask) * (max(nf - 1, 0) + self.unit_ops[a]
                                                             + self.tests(keep) + 1)
            return cost, keep, 1, 0.0
        return 0.0, u.mask, nf, self.unit_ops[a]

    def step(self, x, y, s: int):
        """Materialise the product of items x and y (over unit set s)."""
        keep = self.kept(s)
        trips = self.loops(x[1] | y[1])
        cost = x[0] + y[0] + self.loops(keep) + trips * (max(x[2] + y[2] - 1, 0) + x[3] + y[3]
                                                          + self.tests(keep) + 1)
        return cost, keep, 1, 0.0

    def tests(self, keep: int) -> int:
        """Brackets on generators copied into a statement over `keep`."""
        return sum(1 for m in self.copies if m & ~keep == 0)

    def root(self, items) -> float:
        extra = len(self.net.extras)
        m = self.net.gens | self.net.pinned
        nf, ops, cost = extra, self.root_ops, 0.0
        for it in items:
            cost += it[0]
            m |= it[1]
            nf += it[2]
            ops += it[3]
        return cost + self.loops(m & ~self.net.solved) * (max(nf - 1, 0) + ops + 1)


def _splits(s: int):
    """Each split of set s into two non-empty parts, once (the lowest member goes left)."""
    low = s & -s
    rest = s & ~low
    sub = rest
    while True:
        left = low | (rest & ~sub)
        right = sub
        if right:
            yield left, right
        if sub == 0:
            break
        sub = (sub - 1) & rest


def exact_tree(est: Estimate, reduce: bool):
    """The cheapest tree at this sample by dynamic programming over subsets."""
    n = len(est.net.units)
    best: dict = {}
    for a in range(n):
        best[1 << a] = (est.leaf(a, reduce), ("leaf", a, bool(reduce and est.private[a])))
    for s in est.stored:
        a, b = (k for k in range(n) if s >> k & 1)
        best[s] = ((0.0, est.kept(s), 1, 0.0), ("node", ("leaf", a, False), ("leaf", b, False)))
    for s in sorted(range(1, est.full + 1), key=lambda s: (bin(s).count("1"), s)):
        if s in best:
            continue
        choice = None
        for left, right in _splits(s):
            x, tx = best[left]
            y, ty = best[right]
            item = est.step(x, y, s)
            if choice is None or item[0] < choice[0][0]:
                choice = (item, ("node", tx, ty))
        best[s] = choice
    return _best_root(est, best)


def _best_root(est: Estimate, best: dict):
    full = est.full
    options = []
    if bin(full).count("1") == 1:
        item, tree = best[full]
        options.append((est.root([item]), ("root", tree)))
    else:
        whole, tree = best[full]
        options.append((est.root([whole]), ("root", tree)))
        for left, right in _splits(full):
            x, tx = best[left]
            y, ty = best[right]
            options.append((est.root([x, y]), ("root", tx, ty)))
    return min(options, key=lambda o: o[0])[1]


def greedy_tree(est: Estimate, reduce: bool):
    """Pair the two items whose contraction is cheapest (preferring ones that share
    an index) until two remain; then the cheaper root."""
    items = [(1 << a, est.leaf(a, reduce), ("leaf", a, bool(reduce and est.private[a])))
             for a in range(len(est.net.units))]
    while len(items) > 2:
        choice = None
        for p in range(len(items)):
            for q in range(p + 1, len(items)):
                sp, x, tx = items[p]
                sq, y, ty = items[q]
                item = est.step(x, y, sp | sq)
                key = (not (x[1] & y[1]), item[0] - x[0] - y[0], est.loops(item[1]))
                if choice is None or key < choice[0]:
                    choice = (key, p, q, (sp | sq, item, ("node", tx, ty)))
        _, p, q, merged = choice
        items = [it for k, it in enumerate(items) if k not in (p, q)] + [merged]
    (_, x, tx), (_, y, ty) = items
    whole = est.step(x, y, est.full)
    options = [(est.root([x, y]), ("root", tx, ty)),
               (est.root([whole]), ("root", ("node", tx, ty)))]
    return min(options, key=lambda o: o[0])[1]


# ------------------------------------------------------------ building statements
class _Builder:
    """Statements for one tree of one term (new tensor names avoid `used`)."""

    def __init__(self, s: Stmt, t: Term, net: Network, used: set, copies: bool,
                 flatten: bool = False, available: tuple = ()):
        self.s, self.t, self.net = s, t, net
        self.copies = copies
        self.flatten = flatten
        self.used = set(used)
        self.stmts: list[Stmt] = []
        self.full = (1 << len(net.units)) - 1
        self.available = available
        self.reused: list[Stmt] = []     # earlier statements read instead of a new one

    def union(self, units: int) -> int:
        m = 0
        for a, u in enumerate(self.net.units):
            if units >> a & 1:
                m |= u.mask
        return m

    def names(self, m: int) -> list:
        return [n for k, n in enumerate(self.net.scope) if m >> k & 1]

    def statement(self, keep: int, sums: int, atoms: list, factors: list) -> tuple:
        """A new statement over the indices `keep`, summing `sums`; the item reading it."""
        net = self.net
        if self.copies:
            atoms = list(atoms) + [a for a, m in net.copies if m & ~keep == 0]
        gens = self.names(keep)
        # Inside the recipes every binder gets a name of its own (ssa/names.py);
        # a user's names are kept (each statement binds its own indices).
        renamed = {n: fresh(n) if is_internal(n) else n for n in gens}
        body = Term(1.0, tuple((n, net.dims[net.scope.index(n)]) for n in self.names(sums)),
                    tuple(atoms), tuple(factors))
        body = T.substitute_term(body, {n: Affine.of(IndexVar(renamed[n])) for n in gens})
        name = unique_name(f"{self.s.name}_sum", self.used)
        new = Stmt(name, tuple((renamed[n], net.dims[net.scope.index(n)]) for n in gens),
                   B.canon_body([body]))
        twin = _stored_twin(new, self.available)
        if twin is not None:
            stored, order = twin
            if stored not in self.reused:
                self.reused.append(stored)
            read = Access(stored.name, tuple(Affine.of(IndexVar(gens[k])) for k in order))
            return [], [(read, 1.0)], keep
        self.used.add(name)
        self.stmts.append(new)
        read = Access(name, tuple(Affine.of(IndexVar(n)) for n in gens))
        return [], [(read, 1.0)], keep

    def item(self, tree) -> tuple:
        """(atoms, factors, index mask) that the parent multiplies in, units covered."""
        if tree[0] == "leaf":
            _, a, reduced = tree
            u = self.net.units[a]
            if reduced:
                private = (u.mask & self.net.summed & ~self.net.pinned
                           & ~self.union(self.full & ~(1 << a)))
                return self.statement(u.mask & ~private, private, u.atoms, u.factors), 1 << a
            return (u.atoms, u.factors, u.mask), 1 << a
        _, left, right = tree
        (xa, xf, xm), sx = self.item(left)
        (ya, yf, ym), sy = self.item(right)
        s = sx | sy
        keep = self.union(s) & (self.net.need | self.union(self.full & ~s))
        loops = xm | ym
        if self.flatten and not loops & ~keep:
            return (xa + ya, xf + yf, loops), s  # a plain product: computed where it is read
        return self.statement(keep, loops & ~keep, xa + ya, xf + yf), s

    def root(self, tree) -> Term:
        atoms, factors, m = list(self.net.root_atoms), list(self.net.extras), self.net.pinned
        for child in tree[1:]:
            (ca, cf, cm), _ = self.item(child)
            atoms += ca
            factors += cf
            m |= cm
        sums = tuple((n, d) for n, d in self.t.sums
                     if m >> self.net.scope.index(n) & 1)
        return Term(self.t.coeff, sums, tuple(atoms), tuple(factors))


# ------------------------------------------------------------ the samples
def size_samples(symbols) -> list[dict]:
    """All sizes equal (small, large), then each symbol large among small ones and
    small among large ones: a set that is the same whatever the symbols are called."""
    symbols, derived = sizexpr.split(symbols)
    out = [{z: LOW for z in symbols}, {z: HIGH for z in symbols}]
    if len(symbols) > 1:
        for z in symbols:
            out.append({y: HIGH if y == z else LOW for y in symbols})
            out.append({y: LOW if y == z else HIGH for y in symbols})
    return [sizexpr.complete(p, derived) for p in out]


def _values(cost, samples) -> list[float]:
    """The polynomial at each sample, in floats (only compared, never printed)."""
    terms = [(float(c), mono) for mono, c in cost.terms.items()]
    out = []
    for smp in samples:
        total = 0.0
        for c, mono in terms:
            for z, e in mono:
                c *= float(smp[z]) ** e
            total += c
        out.append(total)
    return out


# Combinations of loop counts tried per cost in `_least_values`; beyond, each
# decision's candidates alone.
COUNT_CHOICES = 16


def _least_values(compute, samples) -> list[float] | None:
    """At each sample, the least of the upper bounds the cost model gives for
    `compute()` under its choices of loop counts (costs.alternative_costs), or None
    when it has no choice to make."""
    costs = alternative_costs(compute, COUNT_CHOICES)
    if len(costs) == 1:
        return None
    return [min(col) for col in zip(*(_values(c, samples) for c in costs))]


def _beats(new: list, old: list) -> bool:
    """No costlier at any sample and cheaper at one."""
    return all(x <= y for x, y in zip(new, old)) and any(x < y for x, y in zip(new, old))


def _score(values) -> float:
    return sum(math.log(max(v, 1.0)) for v in values)


# ------------------------------------------------------------ the rule
class _Orderer:
    def __init__(self, prog: Program, twins: bool = True):
        self.prog = prog
        self.twins = twins
        self.model = CostModel(prog)
        self.base = size_facts(prog)
        self.used = ({p.name for p in prog.params} | {s.name for s in prog.stmts}
                     | set(prog.sizes()))
        self.shapes = prog.shapes()
        self.sizes = tuple(prog.sizes())
        self.infinite = _Infinities(prog)
        self.members = group_of(prog)

    def facts(self, s: Stmt, t: Term):
        return self.base.with_ranges(s.indices).with_ranges(t.sums)

    def stored_pairs(self, net: Network, s: Stmt, t: Term, copies: bool,
                     available: tuple) -> frozenset:
        """The pairs of units (bit sets) whose product, summed as a tree's node sums it,
        is a statement of `available` (`_stored_twin`); the search takes them as free."""
        if not available or len(net.units) > EXACT_LIMIT:
            return frozenset()
        pairs = set()
        n = len(net.units)
        for a in range(n):
            for b in range(a + 1, n):
                builder = _Builder(s, t, net, self.used, copies, False, available)
                builder.item(("node", ("leaf", a, False), ("leaf", b, False)))
                if builder.reused and not builder.stmts:
                    pairs.add((1 << a) | (1 << b))
        return frozenset(pairs)

    def candidates(self, net: Network, s: Stmt, t: Term, samples: list,
                   available: tuple = ()) -> list:
        facts = self.facts(s, t)
        def ops_of(factors, atoms):
            """The operations of evaluating these factors and tests (None for none)."""
            parts = [self.model.product(Term(1.0, (), (), ((f, p),)), facts) for f, p in factors]
            parts += [self.model.atom(a, facts) for a in atoms]
            return sum(parts[1:], parts[0]) if parts else None

        unit_ops = [ops_of(u.factors, u.atoms) for u in net.units]
        root = ops_of(net.extras, net.root_atoms)
        stored = {c: self.stored_pairs(net, s, t, c, available)
                  for c in ((False, True) if net.copies else (False,))}
        trees = []
        for smp in samples:
            ops = [(_values(c, [smp])[0] if c is not None else 0.0) for c in unit_ops]
            rops = _values(root, [smp])[0] if root is not None else 0.0
            rops += 0 if t.coeff in (1.0, -1.0) else 1
            search = exact_tree if len(net.units) <= EXACT_LIMIT else greedy_tree
            for copies in (False, True) if net.copies else (False,):
                est = Estimate(net, smp, ops, rops, copies, stored[copies])
                for reduce in (False, True):
                    tree = search(est, reduce)
                    if tree not in trees:
                        trees.append(tree)
        return trees

    def choose(self, net: Network, s: Stmt, t: Term, done: list, available: tuple = ()):
        """(tree, copies, flatten) for the cheapest tree that beats the term as it is
        at every sample and whose reads are provably in bounds, or None.

        Brackets on generators are copied into the new statements only when a
        read needs them (elsewhere they would be tests in inner loops for
        nothing: the root keeps them).  A node that sums nothing (a plain
        product, such as an outer product or a bracket times a statement) may
        be computed where it is read instead of stored (`flatten`): the search
        counts it as a statement, so both are built and costed."""
        as_is = Stmt(s.name, s.indices, (t,))
        before = self.cost((), as_is)
        # every size of the program: a candidate's cost may name one the term's omits
        samples = size_samples(set(before.symbols()) | set(self.prog.sizes()))
        old = _values(before, samples)
        # A loop bounded by a band or a triangle has several bounds on its trips, and
        # the polynomial takes one by all sizes equal: the term and a tree may take
        # different ones (k < H beside k < t: H*T pairs in one, T^2 / 2 in the other),
        # and a skewed sample then charges one of them for a count the other is spared.
        # A tree the polynomials turn down gets a second comparison, of the least of
        # each side's bounds at each sample (found once for the term, when first needed),
        # when its polynomial is no costlier with all sizes equal (the first two samples),
        # so that what tl.cost prints does not grow where the engine compares.
        least_old = _MISSING
        best = None
        for tree in self.candidates(net, s, t, samples, available):
            seen = set()
            for flatten in (False, True):
                for copies in (False, True) if net.copies else (False,):
                    b = _Builder(s, t, net, self.used, copies, flatten, available)
                    root = b.root(tree)
                    shape = (len(b.stmts), len(b.reused), copies)
                    if not (b.stmts or b.reused) or shape in seen:
                        break                 # the term as it is, or built already
                    seen.add(shape)
                    last = Stmt(s.name, s.indices, (root,))
                    new = _values(self.cost(b.stmts, last, b.reused), samples)
                    if not _beats(new, old):
                        if new[0] > old[0] or new[1] > old[1]:
                            continue
                        if least_old is _MISSING:
                            least_old = _least_values(lambda: self.cost((), as_is), samples)
                        if least_old is None or not _beats(
                                _least_values(lambda: self.cost(b.stmts, last, b.reused),
                                              samples) or new,
                                least_old):
                            continue
                    # Equal scores fall to the tree's structure (units are numbered
                    # structurally), not to the order the samples found them in.
                    key = (_score(new), tree, flatten, copies)
                    if best is not None and key >= best[0]:
                        continue
                    if self.in_bounds(b.stmts + [Stmt(s.name, s.indices, (root,))], done):
                        best = (key, (tree, copies, flatten))
                        break
        return None if best is None else best[1]

    def cost(self, stmts, last: Stmt, reused=()):
        """The cost of `stmts` and `last`, reading the statements `reused` as inputs."""
        params = self.prog.params + tuple(Param(r.name, "f64", r.dims) for r in reused)
        return program_cost(Program(self.prog.name, params, tuple(stmts) + (last,),
                                    (last.name,), False))

    def order_term(self, s: Stmt, t: Term, done: list) -> tuple | None:
        """(new statements, replacement term) for term t of s, or None."""
        if not t.sums or len(t.factors) + len(t.pred) < 2:
            return None                      # nothing to move out of the sum
        # The choice depends on the term, its generators and the shapes of what it
        # reads; the engine asks again every round for terms it did not split.
        # `done` is not part of the key: in_bounds checks the new statements'
        # reads against shapes and size facts only (check.BoundsChecker never
        # looks at how an earlier statement was defined), and those are keyed.
        reads = sorted(T.tensor_reads(t) | T.gathered_tensors(t))
        available = self.available(s, frozenset(reads), done)
        key = (t, s.indices, tuple((r, self.shapes.get(r)) for r in reads), self.sizes,
               _twin_keys(available))
        choice = _CHOICES.get(key, _MISSING)
        if choice is _MISSING:
            choice = _CHOICES.put(key, self.choose_network(s, t, done, available))
        if choice is None:
            return None
        glue, tree, copies, flatten = choice
        b = _Builder(s, t, network(s, t, glue, self.facts(s, t), self.infinite),
                     self.used, copies, flatten, available)
        root = b.root(tree)
        self.used |= {st.name for st in b.stmts}
        return b.stmts, root

    def available(self, s: Stmt, reads: frozenset, done: list) -> tuple:
        """The statements before s whose contraction a tree of s's term may read instead
        of computing it again: one summed term over tensors the term reads too, and
        not of s's own recurrence group (whose members are computed step by step
        beside s).  A twin ends up a read either way (share_common_statements), but
        only a read known here lets the search count it as one."""
        if not self.twins:
            return ()
        group = self.members.get(s.name)
        return tuple(e for e in done
                     if len(e.body) == 1 and e.body[0].sums and e.indices
                     and (group is None or self.members.get(e.name) != group)
                     and _read_names_set(e) <= reads)

    def choose_network(self, s: Stmt, t: Term, done: list, available: tuple = ()):
        """(glue, tree, copies, flatten), or None: brackets as operands of their own
        if that gives a valid split, else glued to the operands they link."""
        for glue in (False, True):
            net = network(s, t, glue, self.facts(s, t), self.infinite)
            if net is None or not _worth_trying(net):
                return None
            choice = self.choose(net, s, t, done, available)
            if choice is not None:
                return (glue,) + choice
            if all(u.factors for u in net.units):
                return None                  # gluing would change nothing
        return None

    def in_bounds(self, stmts: list, done: list) -> bool:
        """Are the reads of `stmts` (the new statements, then the root's term in
        a statement of its own) provably in bounds?"""
        # (the statements after it too: a recurrence step reads members defined later,
        # and the checker looks up the shapes of everything read)
        made = {st.name for st in done} | {st.name for st in stmts}
        later = tuple(st for st in self.prog.stmts if st.name not in made)
        trial = Program(self.prog.name, self.prog.params, tuple(done) + tuple(stmts) + later,
                        (stmts[-1].name,), False)
        sink = ErrorSink()
        checker = BoundsChecker(trial, sink)
        for st in stmts:
            checker.body(st.body, checker.base.with_ranges(st.indices), dict(st.indices))
        return not sink


def _worth_trying(net: Network) -> bool:
    """Could a split move work out of a loop?  Only with three or more operands,
    two of which one sums an index of its own, or something in the root that
    does not depend on the sums (a factor without indices, a bracket on
    generators)."""
    if len(net.units) >= 3 or net.extras or net.root_atoms:
        return True
    if len(net.units) == 2:
        a, b = net.units
        return bool((a.mask ^ b.mask) & net.summed)
    return False


def order_contractions(prog: Program, constant_steps: bool = False,
                       twins: bool = True) -> Program:
    """sum_{j,k} a(j) b(j, k) c(k) -> sum_k (sum_j a(j) b(j, k)) c(k), each pairwise
    contraction a statement, in the order of least cost (see the module docstring).
    A recurrence's step is split only where that lowers a power of a size, and with
    `constant_steps` also where it makes the program cheaper (order_recurrence_steps).
    With `twins`, a contraction that an earlier statement stores is read, and the
    search counts it so (`_Orderer.available`)."""
    orderer = _Orderer(prog, twins)
    stmts: list[Stmt] = []
    changed = False
    members = group_of(prog)
    ties = tie_sums(prog)
    for s in prog.stmts:
        unsplit = (s, tuple((r, orderer.shapes.get(r)) for r in _read_names(s)), orderer.sizes,
                   _twin_keys(orderer.available(s, _read_names_set(s), stmts)))
        if _UNSPLIT.get(unsplit):
            stmts.append(s)
            continue
        body = []
        extra: list[Stmt] = []
        split = False
        for t in s.body:
            res = orderer.order_term(s, t, stmts + extra)
            if res is None:
                body.append(t)
                continue
            split = True
            new_stmts, root = res
            extra.extend(new_stmts)
            body.append(root)
            changed = True
        if not split:
            _UNSPLIT.put(unsplit, True)
        elif s.name in ties and not _pays(prog, s, extra, body):
            # A sum over a maximum's ties runs in the maximum's pass (tensorlang/ties.py),
            # which the term's own cost above does not see: split only when the whole
            # program gets cheaper.
            extra, split = [], False
        elif s.name in members and not _steps_still(prog, members[s.name], s, extra, body,
                                                     constant_steps):
            extra, split = [], False
        stmts.extend(extra)
        stmts.append(Stmt(s.name, s.indices, B.canon_body(body), s.span) if split else s)
    if not changed or all(a is b for a, b in zip(stmts, prog.stmts)) and len(stmts) == len(prog.stmts):
        return prog
    return Program(prog.name, prog.params, tuple(stmts), prog.outputs, prog.tuple_return)


def order_contractions_recomputing(prog: Program) -> Program:
    """order_contractions computing every contraction it makes, for a program that is
    differentiated further: a read of a stored contraction is factoring, and the
    tangent of the read brings back the terms the contraction holds (a Hessian's
    forward mode through a gradient that read one came out dearer, 18 -> 22 b d h)."""
    return order_contractions(prog, twins=False)


def order_recurrence_steps(prog: Program) -> Program:
    """order_contractions, splitting a recurrence's step also where that saves a
    constant factor: `z[t, i] = z[t - 1, i] * sum[j](A[i, j] * z[t - 1, j]) / d[i]`
    multiplies z[t - 1, i] / d[i] into every point of the sum; split, once per (t, i).
    A late rule (opt.engine): it runs once the others, the factoring above all, have
    finished, and splits only where the split beats what they made of the step.  Not
    in the program a derivative is taken of (simplify._FOR_RUNNING): the tangent
    steps of a Sinkhorn iteration, split into sums that no longer shared their
    exponential weight, came out a quarter dearer (uot's jvp)."""
    return order_contractions(prog, constant_steps=True)


def _steps_still(prog: Program, group, s: Stmt, extra: list, body: list,
                 constant: bool = False) -> bool:
    """A recurrence step split like any statement (`P[t, i, j] = sum[k, l](A[k, i] *
    P[t - 1, k, l] * A[l, j])` into `P_sum[t, i, l]`, a member of its own reading
    P[t - 1], and P reading P_sum[t]): does the split lower the program's cost by a
    power of some size (n^4 per step to n^3 here) and raise none, and does the program
    so split still form well-founded groups, with every new statement that reads a
    member of s's group one of the members (its leading indices first)?  With
    `constant`, a split that raises no power and makes the program cheaper (at equal
    sizes, engine.cheaper) counts too (order_recurrence_steps says when)."""
    from ..costs import program_cost, splice_cost
    from ..ssa.recur import recurrences
    # (costed from the statements the split changes, costs.splice_cost: the engine
    # asks again every round for a split it turned down, and the rest of a large
    # derivative is costed once per program, not once per trial)
    trial = _with_split(prog, s, extra, body)
    k = next(j for j, st in enumerate(prog.stmts) if st.name == s.name)
    put = trial.stmts[k:k + len(extra) + 1]
    before, after = program_cost(prog), splice_cost(prog, k, put)
    sizes = set(before.base_sizes()) | set(after.base_sizes())
    if any(after.degree(z) > before.degree(z) for z in sizes):
        return False
    if not any(after.degree(z) < before.degree(z) for z in sizes):
        from .engine import cheaper_cost
        if not (constant and cheaper_cost(after, before, strictly=True)):
            return False
    try:
        groups = recurrences(trial)
    except ValueError:
        return False
    mine = next((g for g in groups if s.name in g.members), None)
    if mine is None or (mine.lead, mine.steps) != (group.lead, group.steps):
        return False
    inside = set(group.members)
    return all(st.name in mine.members for st in extra if set(_read_names(st)) & inside)


def _with_split(prog: Program, s: Stmt, extra: list, body: list) -> Program:
    """prog with statement s split into the statements `extra` and s with `body`."""
    stmts = []
    for st in prog.stmts:
        if st.name == s.name:
            stmts.extend(extra)
            stmts.append(Stmt(s.name, s.indices, B.canon_body(body), s.span))
        else:
            stmts.append(st)
    return Program(prog.name, prog.params, tuple(stmts), prog.outputs, prog.tuple_return)


def _pays(prog: Program, s: Stmt, extra: list, body: list) -> bool:
    """Is `prog` with statement s split into `extra` and s with `body` strictly cheaper?"""
    from .engine import cheaper
    return cheaper(_with_split(prog, s, extra, body), prog, strictly=True)

