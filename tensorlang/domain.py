"""A derivative's domain is its function's: the label checks a derivative keeps.

A function checks at call time every label it reads through (``E[y[s]]``, each
level of ``E[y[z[s]]]``, a relation ``M[y[s], c]``, the inner label of
``[t == y[z[s]]]``), wherever the brackets around the read hold, and raises a
located TLBoundsError for one outside its tensor.  Its derivatives must raise
there too.  Taking the derivative loses such reads: reverse mode turns
``X[y[s]]`` into the comparison ``[k == y[s]]`` with the adjoint's index, and a
label outside 0 .. n - 1 then matches no k, so its contribution is dropped; a
term that does not depend on the differentiated parameter disappears with its
reads.

So the obligations are kept apart from the derivative's arithmetic.  From the
program the function runs, each term with a label read that its brackets do not
prove in range becomes a *check term*: the same brackets, the same label reads
(nested as in the function, so each is met under the brackets it is met under
there), every other factor dropped and each position of a read that holds no
label set to 0 (sizes are at least 1, so 0 is in range).  The check terms of
one statement form a statement over the indices they still use, placed before
the derivative's own statements.  No output reads it, but the derivative is
never simplified again, and every backend runs every statement it is given: the
interpreter, the Numba kernels and the JAX emission's label flag meet the reads
as they meet the function's, with the function's spans, so the error shows the
function's line.

Why statements and not a flag on the comparisons reverse mode makes: a flag
would have to survive every rewrite of a bracket (elimination, merging,
contraction ordering, the kernels' scatter solutions), and a term that vanishes
from the derivative leaves no bracket to carry it.  A check statement costs what
its reads cost, counted by ``tl.cost`` and the certificate like any statement:
a term reading m labels adds O(m) (the sums over positions without labels go),
never more than the function's own term.  No check is made for a read the
derivative makes itself everywhere: a read in an output statement of the
derivative, outside any bracket, of the same labels over the same ranges
(``value_and_grad`` and ``jvp`` keep the forward value; a gradient of an edge
weight reads both ends of every edge).  Brackets that compare values
(``[h[i] > 0]``) need the values they compare: the statements they read are
copied from the function's program (or shared, when the derivative has them
unchanged).
"""
from __future__ import annotations

import itertools

from .bounds import Facts, label_form, size_facts
from .ssa.ir import (Access, Affine, AnyOf, Apply, Gather, Group, IdxCmp, IndexVar, NotAtom,
                     Program, Reduce, Rel, Stmt, Term, ValCmp)
from .memo import Memo
from .ssa.build import canon_body
from .ssa.names import unique_name
from .ssa.recur import recurrences
from .ssa.traverse import substitute as index_substitute
from .ssa.traverse import (check_statements, index_names, iter_nodes, live_statements,
                            map_terms_in_body, statement_reads, tensor_reads)


def holds_label(aff: Affine) -> bool:
    """Is the index form read from a label (``y[s]``, ``y[s] + 1``)?"""
    return any(a.__class__ is Gather for a, _ in aff.terms)


def reads_through_labels(aff: Affine) -> bool:
    """Does the index form read a tensor at a label (``y[z[s]]``, a read whose range
    a call checks)?"""
    return any(a.__class__ is Gather and any(holds_label(i) for i in a.idx)
               for a, _ in aff.terms)


class Obligations:
    """The label reads of one program that its brackets do not prove in range.

    Each is keyed by what it reads (`key`): the tensor, the position, and the label
    form with its indices replaced by their ranges, so two reads of the same labels
    over the same ranges have one key whatever their indices are called."""

    def __init__(self, prog: Program):
        self.dims = {name: dims for name, (_, dims) in prog.shapes().items()}
        self.facts = size_facts(prog)

    def in_statement(self, st: Stmt) -> Facts:
        return self.facts.with_ranges(st.indices)

    # ------------------------------------------------------------ which reads are open
    def open_positions(self, name: str, idx: tuple, facts: Facts) -> list[int]:
        """Positions of a read of `name` at `idx` whose label (or a label inside it)
        may lie outside its range where `facts` hold."""
        out = []
        for k, aff in enumerate(idx):
            if not holds_label(aff):
                continue
            top = Affine.dim(self.dims[name][k]).shift(-1) - aff
            if not (facts.proves(aff) and facts.proves(top)) or self.affine_open(aff, facts):
                out.append(k)
        return out

    def affine_open(self, aff: Affine, facts: Facts) -> bool:
        return any(a.__class__ is Gather and self.open_positions(a.name, a.idx, facts)
                   for a, _ in aff.terms)

    def term_open(self, t: Term, facts: Facts) -> bool:
        inner = facts.with_ranges(t.sums).with_pred(t.pred)
        return (any(self.atom_open(a, inner) for a in t.pred)
                or any(self.factor_open(f, inner) for f, _ in t.factors))

    def body_open(self, body: tuple, facts: Facts) -> bool:
        return any(self.term_open(t, facts) for t in body)

    def atom_open(self, a, facts: Facts) -> bool:
        cls = a.__class__
        if cls is IdxCmp:
            return self.affine_open(a.aff, facts)
        if cls is Rel:
            return bool(self.open_positions(a.name, a.idx, facts))
        if cls is ValCmp:
            return self.body_open(a.left, facts) or self.body_open(a.right, facts)
        if cls is NotAtom:
            return self.atom_open(a.atom, facts)
        if cls is AnyOf:
            return any(self.atom_open(x, facts.with_pred(alt)) for alt in a.alts for x in alt)
        return False

    def factor_open(self, f, facts: Facts) -> bool:
        cls = f.__class__
        if cls is Access:
            return bool(self.open_positions(f.name, f.idx, facts))
        if cls is Apply:
            return any(self.body_open(b, facts) for b in f.args)
        if cls is Group:
            return self.body_open(f.body, facts)
        if cls is Reduce:
            inner = facts.with_ranges(f.over).with_pred(f.where)
            return (any(self.atom_open(a, inner) for a in f.where)
                    or self.body_open(f.body, inner))
        return False

    # ------------------------------------------------------------ check terms
    def checked_terms(self, t: Term, facts: Facts) -> list[Term]:
        """Term t's open label reads under t's own brackets, as terms summed over the
        sums they and the brackets still use; [] when t has none.  In the canonical
        form parsing gives (groups multiplied out, `build.canon_body`), so a printed
        derivative parses back to itself; each read then costs one addition."""
        if not self.term_open(t, facts):
            return []
        inner = facts.with_ranges(t.sums).with_pred(t.pred)
        factors = tuple((g, 1.0) for g in (self.checked_factor(f, inner) for f, _ in t.factors)
                        if g is not None)
        return list(canon_body([_drop_unused_sums(Term(1.0, t.sums, t.pred, factors))]))

    def checked_body(self, body: tuple, facts: Facts) -> tuple:
        return tuple(c for t in body for c in self.checked_terms(t, facts))

    def checked_factor(self, f, facts: Facts):
        """Factor f reduced to its open label reads (a builtin's arguments as a
        group: the value of a check does not matter), or None when it has none."""
        if not self.factor_open(f, facts):
            return None
        cls = f.__class__
        if cls is Access:
            keep = set(self.open_positions(f.name, f.idx, facts))
            return Access(f.name, tuple(a if k in keep else Affine(0)
                                        for k, a in enumerate(f.idx)), f.span)
        if cls is Apply:
            return Group(tuple(c for b in f.args for c in self.checked_body(b, facts)))
        if cls is Group:
            return Group(self.checked_body(f.body, facts))
        # a reduction meets its body where its filter holds, as a sum does
        return Group(tuple(self.checked_terms(Term(1.0, f.over, f.where, ((Group(f.body), 1.0),)),
                                              facts)))

    # ------------------------------------------------------------ what a term reads
    def keys(self, t: Term, facts: Facts, ranges: dict) -> list:
        """The keys of the open label reads of check term t (None for one that has
        no key: an index used twice in its label form)."""
        out: list = []
        self._collect(t, facts, dict(ranges), out)
        return out

    def _collect(self, x, facts: Facts, ranges: dict, out: list):
        cls = x.__class__
        if cls is tuple:
            for t in x:
                self._collect(t, facts, ranges, out)
        elif cls is Term or cls is Reduce:
            binders = x.sums if cls is Term else x.over
            pred = x.pred if cls is Term else x.where
            ranges.update(binders)
            inner = facts.with_ranges(binders).with_pred(pred)
            for a in pred:
                self._collect(a, inner, ranges, out)
            if cls is Term:
                for f, _ in x.factors:
                    self._collect(f, inner, ranges, out)
            else:
                self._collect(x.body, inner, ranges, out)
        elif cls is Access or cls is Rel or cls is Gather:
            for k in self.open_positions(x.name, x.idx, facts):
                out.append(_key(x.name, k, x.idx[k], ranges))
            for aff in x.idx:
                self._collect(aff, facts, ranges, out)
        elif cls is Affine:
            for a, _ in x.terms:
                if a.__class__ is Gather:
                    self._collect(a, facts, ranges, out)
        elif cls is IdxCmp:
            self._collect(x.aff, facts, ranges, out)
        elif cls is ValCmp:
            self._collect(x.left, facts, ranges, out)
            self._collect(x.right, facts, ranges, out)
        elif cls is NotAtom:
            self._collect(x.atom, facts, ranges, out)
        elif cls is AnyOf:
            for alt in x.alts:
                for a in alt:
                    self._collect(a, facts.with_pred(alt), ranges, out)
        elif cls is Apply:
            for b in x.args:
                self._collect(b, facts, ranges, out)
        elif cls is Group:
            self._collect(x.body, facts, ranges, out)

    def made_everywhere(self, prog: Program) -> set:
        """Keys of the label reads `prog` makes at every point of their ranges: reads
        in an output statement outside any bracket (outputs are computed whole on
        every backend; another statement may be fused into a reader that needs only
        part of it)."""
        out: set = set()
        outputs = set(prog.outputs)
        for st in prog.stmts:
            if st.name in outputs:
                self._unguarded(st.body, self.in_statement(st), dict(st.indices), out)
        return out

    def _unguarded(self, body: tuple, facts: Facts, ranges: dict, out: set):
        """The keys of `body`'s reads that no bracket or filter guards."""
        for f, inner, scope in _unguarded_reads(body, facts, ranges):
            keys: list = []
            self._collect(f, inner, scope, keys)
            out.update(k for k in keys if k is not None)


def _unguarded_reads(body: tuple, facts: Facts, ranges: dict):
    """(read, facts, index ranges) of each read in `body` that is made at every point
    of its ranges: no bracket, filter or zero coefficient around it."""
    for t in body:
        if t.pred or t.coeff == 0:
            continue
        inner = facts.with_ranges(t.sums)
        scope = {**ranges, **dict(t.sums)}
        for f, _ in t.factors:
            cls = f.__class__
            if cls is Access:
                yield f, inner, scope
            elif cls is Apply:
                for b in f.args:
                    yield from _unguarded_reads(b, inner, scope)
            elif cls is Group:
                yield from _unguarded_reads(f.body, inner, scope)
            elif cls is Reduce and not f.where:
                yield from _unguarded_reads(f.body, inner.with_ranges(f.over),
                                            {**scope, **dict(f.over)})


def _key(name: str, k: int, aff: Affine, ranges: dict):
    """What a label read reads, whatever its indices are called: the tensor, the
    position, and the label form with each index replaced by its range (None when
    an index occurs twice: then the form's values are not fixed by the ranges)."""
    form = label_form(aff, ranges)
    return None if form is None else (name, k, form)


def _as_statements(indices: tuple, terms: list) -> list[tuple[tuple, list]]:
    """The indices and terms of the check statements of a statement over `indices`.

    A check needs no element per point, so every index is summed, and an index that
    only one comparison mentions is summed away: the reads under it happen where
    some value of it passes the comparison (`existential`), so `[u == dst[e]]`
    becomes `[0 <= dst[e] < n]`.  An index that an equality still mentions stays an
    index of the statement, where the loop planner can solve the equality for it
    (a scatter's `[k == y[s]]` runs once per label).  Only the terms whose
    equalities mention an index keep it: consecutive terms that keep the same
    indices make one statement, so a term summed down to its labels is not repeated
    over an index another term keeps (n^2 checks beside a scatter `[s == z[e]]`)."""
    out = []
    for t in terms:
        used = index_names(t)
        t = Term(t.coeff, tuple((n, d) for n, d in indices if n in used) + t.sums,
                 t.pred, t.factors)
        t = _sums_as_existentials(t)
        if t is not None:
            out.append(t)
    groups: list[tuple[tuple, list]] = []
    for t in canon_body(out):
        guarded: set[str] = set()
        for n in iter_nodes(t):
            if n.__class__ is IdxCmp and n.op == "==":
                guarded |= index_names(n)
        kept = tuple((n, d) for n, d in indices if n in guarded)   # (guarded: t's own)
        names = {n for n, _ in kept}
        t = Term(t.coeff, tuple((n, d) for n, d in t.sums if n not in names), t.pred, t.factors)
        if groups and groups[-1][0] == kept:
            groups[-1][1].append(t)
        else:
            groups.append((kept, [t]))
    return groups


def _sums_as_existentials(t: Term) -> Term | None:
    """t with each sum index that one top-level comparison alone mentions replaced
    by the comparison's `existential`; None when one of them can never hold.  Two
    such indices in one comparison (`[u == j + y[s]]`) are left alone: which one
    went first would decide the result, and index names must decide nothing."""
    alone = {}
    for name, dim in t.sums:
        uses = [a for a in t.pred if name in index_names(a)]
        rest = tuple(a for a in t.pred if a is not uses[0]) if len(uses) == 1 else ()
        if (len(uses) == 1 and uses[0].__class__ is IdxCmp
                and name not in index_names(rest + tuple(f for f, _ in t.factors))):
            alone[name] = (uses[0], rest, dim)
    for name, (atom, rest, dim) in alone.items():
        if any(other in index_names(atom) for other in alone if other != name):
            continue
        atoms = existential(atom, name, dim)
        if atoms is None:
            continue
        if atoms is False:
            return None
        pred = rest + atoms
        sums = tuple((n, d) for n, d in t.sums if n != name)
        return _sums_as_existentials(Term(t.coeff, sums, pred, t.factors))
    return t


def existential(atom: IdxCmp, name: str, dim) -> tuple | None | bool:
    """Atoms that hold where some value of index `name` in 0 .. dim - 1 satisfies
    `atom` (in which `name` occurs once, outside any label): () for always, False
    for never, None when there is no such form at hand (a stride, a modulus)."""
    from .ssa.build import norm_cmp
    coef = dict(atom.aff.terms).get(IndexVar(name))
    if coef is None or name in index_names(tuple(a for a, _ in atom.aff.terms
                                                 if a.__class__ is Gather)):
        return None
    rest = Affine.make(atom.aff.const, [(a, c) for a, c in atom.aff.terms
                                        if a != IndexVar(name)])
    top = Affine.dim(dim).shift(-1)
    if atom.op == ">=":           # the largest of coef * u + rest over the range
        forms = [(">=", rest + top.scale(coef) if coef > 0 else rest)]
    elif atom.op == "==" and abs(coef) == 1:     # u = -coef * rest, inside the range
        u = rest.scale(-coef)
        forms = [(">=", u), (">=", top - u)]
    elif atom.op == "!=":         # two values of u differ, so one passes unless dim is 1
        first = norm_cmp(">=", Affine.dim(dim).shift(-2), Affine(0), atom.span)
        second = norm_cmp("!=", rest, Affine(0), atom.span)
        if second is True:
            return ()
        if first is not False and reads_through_labels(rest):
            # `[u != y[z[s]]]` reads y at z[s] for every u: `dim >= 2 or y[z[s]] != 0`
            # would pass without that read, and skip its range check
            return None
        if first is True:
            return ()
        alts = tuple((a,) for a in (first, second) if a is not False)
        return (AnyOf(alts),) if alts else False
    else:
        return None
    out = []
    for op, aff in forms:
        a = norm_cmp(op, aff.in_plain_sizes(), Affine(0), atom.span)
        if a is False:
            return False
        if a is not True:
            out.append(a)
    return tuple(out)


def _drop_unused_sums(t: Term) -> Term:
    used = index_names(t.pred + tuple(f for f, _ in t.factors))
    return Term(t.coeff, tuple((n, d) for n, d in t.sums if n in used), t.pred, t.factors)


def _statements_read(x, defined: dict) -> set[str]:
    """The statements of `defined` that x reads, directly or through others."""
    out: set[str] = set()
    todo = [n for n in tensor_reads(x) if n in defined]
    while todo:
        name = todo.pop()
        if name not in out:
            out.add(name)
            todo.extend(n for n in statement_reads(defined[name]) if n in defined)
    return out


def label_checks(runs: Program, derivative: Program) -> Program:
    """`derivative` with the label checks of `runs` (the program its function runs)
    that it does not make itself: a statement of check terms per statement of `runs`
    that needs one, after copies of the statements those terms read (see the module
    docstring)."""
    need = Obligations(runs)
    made = Obligations(derivative).made_everywhere(derivative)
    defined = {s.name: s for s in runs.stmts}
    have = {s.name: s for s in derivative.stmts}
    checks: list[tuple[tuple, list]] = []      # (indices, check terms) per statement
    needed: set[str] = set()
    for st in runs.stmts:
        facts = need.in_statement(st)
        terms = []
        for t in st.body:
            checks_of_t = need.checked_terms(t, facts)
            if not checks_of_t or _computed_alike(derivative, st, t, defined, have):
                continue
            keys = [k for c in checks_of_t for k in need.keys(c, facts, dict(st.indices))]
            if all(k is not None and k in made for k in keys):
                continue
            terms.extend(checks_of_t)
        if not terms:
            continue
        for indices, part in _as_statements(st.indices, terms):
            checks.append((indices, part))
            needed |= _statements_needed(part, defined, have)
    if not checks:
        return derivative
    taken = {p.name for p in derivative.params} | set(have) | set(derivative.sizes())
    rename: dict[str, str] = {}
    copies: list[Stmt] = []
    shared = _shared_statements(runs, defined, needed, have)
    shared |= {name for name in tensor_reads(tuple(t for _, ts in checks for t in ts))
               if name in defined and name not in needed}
    for st in runs.stmts:                   # (in the function's order: reads come first)
        if st.name not in needed or st.name in shared:
            continue
        name = unique_name(st.name, taken)
        taken.add(name)
        rename[st.name] = name
        copies.append(st)
    position = _positions_after_groups(derivative)
    anchor = _copy_anchors(runs, copies, rename, position)
    first: list[Stmt] = []
    after: dict[int, list[Stmt]] = {}       # a copy or a check that reads a statement the
    for st in copies:                                         # derivative shares follows it
        at = anchor[st.name]
        (first if at < 0 else after.setdefault(at, [])).append(_renamed(st, rename))
    copied = {rename[st.name]: anchor[st.name] for st in copies}
    for indices, terms in checks:
        name = unique_name("labels", taken)
        taken.add(name)
        # (in the function's order, so the first bad label found is the one it finds)
        body = tuple(_renamed(Stmt(name, (), (t,)), rename).body[0] for t in terms)
        check = Stmt(name, indices, body)
        at = max((copied[n] if n in copied else position.get(n, -1)
                  for n in tensor_reads(body)), default=-1)
        (first if at < 0 else after.setdefault(at, [])).append(check)
    stmts = list(first)
    for k, s in enumerate(derivative.stmts):
        stmts.append(s)
        stmts.extend(after.get(k, ()))
    return Program(derivative.name, derivative.params, tuple(stmts),
                   derivative.outputs, derivative.tuple_return)


def _copy_anchors(runs: Program, copies: list[Stmt], rename: dict,
                  position: dict[str, int]) -> dict[str, int]:
    """name -> the position in the derivative after which each copied statement
    may stand (-1: before everything): after the last statement of the derivative
    it reads, directly or through other copies (a copy that reads the forward
    statements the derivative shares must not run before them).  The members of
    a recurrence group take their latest one, so the group stays together."""
    anchor = {st.name: -1 for st in copies}
    groups = [g.members for g in recurrences(runs) if any(m in anchor for m in g.members)]
    changed = True
    while changed:
        changed = False
        for st in copies:
            reads = statement_reads(st)
            at = max([anchor[n] if n in anchor else position.get(n, -1)
                      for n in reads if n != st.name] + [anchor[st.name]])
            if at != anchor[st.name]:
                anchor[st.name] = at
                changed = True
        for members in groups:
            at = max(anchor[m] for m in members if m in anchor)
            for m in members:
                if m in anchor and anchor[m] != at:
                    anchor[m] = at
                    changed = True
    return anchor


def _statements_needed(terms: list, defined: dict, have: dict) -> set[str]:
    """The statements of the function the check terms need computed: those whose
    values a value comparison reads (with everything they read), and those they
    read as factors that the derivative has no statement of the same shape for
    (with everything those read).  A factor's value does not matter to a check,
    which exists for the labels it reads: a statement of the derivative with the
    same name and ranges (its forward value, written differently) serves, where
    a copy could be a whole recurrence run a second time for one label read."""
    compared = tuple(n for n in iter_nodes(tuple(terms)) if n.__class__ is ValCmp)
    out = _statements_read(compared, defined)
    for name in tensor_reads(tuple(terms)):
        if name in defined and name not in out and not _same_shape(have.get(name), defined[name]):
            out |= {name} | _statements_read(defined[name].body, defined)
    return out


def _same_shape(a: Stmt | None, b: Stmt) -> bool:
    return a is not None and tuple(d for _, d in a.indices) == tuple(d for _, d in b.indices)


def _shared_statements(runs: Program, defined: dict, needed: set[str], have: dict) -> set[str]:
    """The statements of `needed` the checks may read from the derivative: those it
    has unchanged.  A recurrence group is shared whole or copied whole, since a
    copy of one member that read the derivative's other members (which read the
    derivative's copy of it, not this one) would be a cycle broken in two, and a
    group split across two programs is no longer a group."""
    same = {name for name in needed if have.get(name) == defined[name]}
    for g in recurrences(runs):
        if any(m in needed and m not in same for m in g.members):
            same -= set(g.members)
    return same


def _positions_after_groups(prog: Program) -> dict[str, int]:
    """name -> the position after which a statement reading it may stand: its own,
    or for a member of a recurrence group the group's last (a group stays
    contiguous: nothing may stand between the members of one step)."""
    position = {s.name: k for k, s in enumerate(prog.stmts)}
    for g in recurrences(prog):
        last = max(position[m] for m in g.members)
        position.update((m, last) for m in g.members)
    return position


def _computed_alike(derivative: Program, st: Stmt, t: Term, defined: dict, have: dict) -> bool:
    """Does an output of the derivative compute term t of statement st as the function
    does (an equal term, over the same indices, reading statements equal in both)?
    Then it meets t's label reads under t's brackets: a masked read needs no check."""
    if any(have.get(name) != defined[name] for name in _statements_read(t, defined)):
        return False
    outputs = set(derivative.outputs)
    return any(s.name in outputs and s.indices == st.indices and t in s.body
               for s in derivative.stmts)


def _renamed(s: Stmt, rename: dict) -> Stmt:
    """s with the statements it reads (and its own name) renamed by `rename`."""
    if not rename:
        return s
    from .ssa.inline import rename_stmt
    return rename_stmt(s, rename, {})


# ------------------------------------------------------------ checks a call makes already
def drop_enforced_label_guards(prog: Program) -> Program:
    """`prog` (a derivative with its label checks) without the label range brackets
    and check terms that a statement before them makes redundant.

    A statement that reads a label with no bracket around the read (`Wh[dst[k], o]`
    at every k: the function's own statement, or a check of its read) raises for a
    label outside the dimension it indexes.  The interpreter runs the statements in
    order, and every other backend hands a call that meets a bad label to it for the
    error, so a statement after that one meets only labels inside that dimension:
    a range bracket on the same label form over the same ranges (`[0 <= dst[l] < n]`
    with l over the range of k, in any of its printed forms, or one the range
    implies by the size facts) always holds there and goes, and so does a term of a
    check statement whose every label read lies in such ranges (it can no longer
    raise).  The values at labels the function accepts are unchanged, and a label it
    rejects is still found where it was found before: at the earlier statement, which
    is kept as it was.  A label the function only compares (`[dst[e] == i]`, an edge
    to no node) stays guarded: no statement reads it into a dimension.  A member of a
    recurrence group reads one step at a time, so its reads count after the group.
    Copies the removed checks alone read go with them.

    A range bracket also goes from a term that a statement it multiplies by makes 0
    wherever the bracket fails (`[0 <= dst[l] < n] * d * w_bar_sum[l]`, each term of
    w_bar_sum carrying the bracket: contraction ordering copies a label's range
    check into the sum it splits off, `opt/contract._guard_labels_where_read`), when
    the term reads and compares those labels nowhere else.

    Each statement also learns which labels the statements that run whole before it
    (outputs and checks: no backend fuses them into a reader that needs part of them)
    have read into a dimension (`Stmt.checked_labels`): the loop planner then solves a
    scatter's generator as such a label without testing its range (memory safety rests
    on the call having stopped at the earlier statement for a label outside it)."""
    need = Obligations(prog)
    position = _positions_after_groups(prog)
    live = live_statements(prog)
    check_names = check_statements(prog)
    enforced: dict = {}                 # label form -> the dimensions it indexes
    pending: dict[int, dict] = {}       # reads of a group's members, by the group's end
    # The same, from the statements every backend runs whole (outputs, and those no
    # statement reads: the checks); what the planner may take as known (`_checked`).
    whole: dict = {}
    whole_pending: dict[int, dict] = {}
    outputs = set(prog.outputs)
    stmts, dropped = [], False
    defined = {s.name: s for s in prog.stmts}     # (each as rewritten, once it is)
    cycle = {m: g.members for g in recurrences(prog) for m in g.members}
    for k, st in enumerate(prog.stmts):
        facts = need.in_statement(st)
        is_check = st.name in check_names
        # (not a statement its own value depends on: that would be reasoning in a circle)
        others = {n: s for n, s in defined.items() if n not in cycle.get(st.name, (st.name,))}
        body = _without_enforced_guards(st.body, dict(st.indices), facts, enforced, others)
        if is_check:
            open_terms = tuple(t for t in body if need.term_open(
                t, facts.with_pred(_known_ranges(t, dict(st.indices), enforced))))
            body = body if len(open_terms) == len(body) else open_terms
        if is_check and not body:
            dropped = True
        else:
            checked = _checked(st, whole)
            if body is not st.body or checked != st.checked_labels:
                st = Stmt(st.name, st.indices, body, st.span, checked)
                defined[st.name] = st
            stmts.append(st)
            reads = pending.setdefault(position[st.name], {})
            runs_whole = whole_pending.setdefault(position[st.name], {}) \
                if (is_check or st.name in outputs) and st.name not in cycle else None
            for f, _, scope in _unguarded_reads(st.body, facts, dict(st.indices)):
                _labels_read(f.name, f.idx, scope, need.dims, reads)
                if runs_whole is not None:
                    _labels_read(f.name, f.idx, scope, need.dims, runs_whole)
        for form, dims in pending.pop(k, {}).items():
            enforced.setdefault(form, set()).update(dims)
        for form, dims in whole_pending.pop(k, {}).items():
            whole.setdefault(form, set()).update(dims)
    if dropped:
        kept = {s.name for s in stmts}
        checks = [s for s in stmts if s.name in check_names]
        wanted = live | {s.name for s in checks} | _statements_read(
            tuple(t for s in checks for t in s.body), {s.name: s for s in stmts})
        stmts = [s for s in stmts if s.name in wanted and s.name in kept]
    if not dropped and all(a is b for a, b in zip(stmts, prog.stmts)):
        return prog
    return Program(prog.name, prog.params, tuple(stmts), prog.outputs, prog.tuple_return)


def labels_read_unguarded(prog: Program) -> frozenset:
    """The (label form, dimension) pairs that statements of `prog` read outside any
    bracket.  A call checks every label its program reads where the brackets around the
    read hold (this module's docstring; a derivative's checks are its function's), so a
    call whose labels leave such a dimension stops there: another statement may read the
    same labels into the same dimension without the bracket that kept them in range
    (opt/factor.py stores `u[a[m], l] - u[b[m], l]` apart from the scatter's
    `[k == a[m]]` when the program reads `u[a[e], c]` or `X[a[e], c]` over an N rows)."""
    return _LABELS_READ.compute(prog, lambda: _labels_read_unguarded(prog))


def _labels_read_unguarded(prog: Program) -> frozenset:
    dims = {name: d for name, (_, d) in prog.shapes().items()}
    out: dict = {}
    for st in prog.stmts:
        for f, _, scope in _unguarded_reads(st.body, Facts(), dict(st.indices)):
            _labels_read(f.name, f.idx, scope, dims, out)
    return frozenset((form, d) for form, ds in out.items() for d in ds)


_LABELS_READ = Memo(4096)


def reads_labels_read_unguarded(body: tuple, ranges: dict, prog: Program) -> bool:
    """Does every gathered index in `body` (terms over `ranges` and their own sums) read a
    label, alone, into a dimension `labels_read_unguarded(prog)` has it read into?"""
    known = labels_read_unguarded(prog)
    dims = {name: d for name, (_, d) in prog.shapes().items()}
    for t in body:
        scope = {**ranges, **dict(t.sums)}
        for n in iter_nodes(t):
            if n.__class__ is Reduce and any(a.__class__ is Gather for a in iter_nodes(n)):
                return False            # (a label under a sum of its own: not followed)
            if n.__class__ is not Access or n.name not in dims:
                continue
            for k, aff in enumerate(n.idx):
                if not any(a.__class__ is Gather for a, _ in aff.terms):
                    continue
                if aff.const != 0 or len(aff.terms) != 1 or aff.terms[0][1] != 1:
                    return False
                form = label_form(aff, scope)
                if form is None or (form, dims[n.name][k]) not in known:
                    return False
    return True


def _checked(st: Stmt, whole: dict) -> tuple:
    """The (label form, dimension) pairs of `whole` (labels that statements run whole
    before st have read into a dimension) for the labels st reads, in a fixed order."""
    names = {n.name for n in iter_nodes(st.body) if n.__class__ is Gather}
    if not names:
        return ()
    out = {(form, d) for form, dims in whole.items() for d in dims
           if _label_read(form) in names}
    return tuple(sorted(out, key=repr))


def _label_read(form) -> str:
    """The label tensor of a form `_labels_read` records: the form of a label read as
    a whole index (`y[s]`: constant 0, one term `("label", "y", ...)` of coefficient 1)."""
    _, ((label, _),) = form
    return label[1]


def _labels_read(name: str, idx: tuple, ranges: dict, dims: dict, out: dict):
    """Add to `out` (label form -> dimensions) each label read at a position of
    `name[idx]` (nested ones too) alone, as the whole index."""
    for k, aff in enumerate(idx):
        for a, _ in aff.terms:
            if a.__class__ is Gather:
                _labels_read(a.name, a.idx, ranges, dims, out)
        if aff.const == 0 and len(aff.terms) == 1 and aff.terms[0][1] == 1 \
                and aff.terms[0][0].__class__ is Gather:
            form = label_form(aff, ranges)
            if form is not None:
                out.setdefault(form, set()).add(dims[name][k])


def _known_ranges(x, ranges: dict, enforced: dict) -> tuple:
    """Brackets `0 <= g <= d - 1` for each label g in x whose form (over `ranges`,
    with x's own sums and reductions) an earlier statement has read into a
    dimension d.  An index bound twice in x with different ranges has no range."""
    bound: dict = dict(ranges)
    clash = set()
    for n in iter_nodes(x):
        cls = n.__class__
        if cls is Term or cls is Reduce:
            for name, d in (n.sums if cls is Term else n.over):
                if bound.setdefault(name, d) != d:
                    clash.add(name)
    for name in clash:
        bound.pop(name)
    out = []
    for g in {n for n in iter_nodes(x) if n.__class__ is Gather}:
        label = Affine.of(g)
        for d in enforced.get(label_form(label, bound), ()):
            out.append(IdxCmp(">=", label))
            out.append(IdxCmp(">=", Affine.dim(d).shift(-1) - label))
    return tuple(out)


def _without_enforced_guards(body: tuple, ranges: dict, facts: Facts, enforced: dict,
                             defined: dict) -> tuple:
    """`body` without the range brackets on labels that `enforced` implies, or that
    a statement the term multiplies by implies (`_zero_outside`)."""
    def at(t, ctx):
        ranges, facts = ctx
        labels = [a for a in t.pred if a.__class__ is IdxCmp and a.op == ">="
                  and holds_label(a.aff)]
        if not labels:
            return [t]
        inside = facts.with_ranges(t.sums)
        known = _known_ranges(tuple(labels), {**ranges, **dict(t.sums)}, enforced)
        if known:
            checked = inside.with_pred(known)
            labels = [a for a in labels if not checked.proves(a.aff)]
        labels = _guarding(labels, t, inside, defined)
        pred = tuple(a for a in t.pred if not (a.__class__ is IdxCmp and a.op == ">="
                                               and holds_label(a.aff)) or a in labels)
        return [t] if len(pred) == len(t.pred) else [Term(t.coeff, t.sums, pred, t.factors)]

    def enter(ctx, t):
        ranges, facts = ctx
        return {**ranges, **dict(t.sums)}, facts.with_ranges(t.sums).with_pred(t.pred)

    return map_terms_in_body(body, at, (ranges, facts), enter, canon_body)


def _guarding(labels: list, t: Term, facts: Facts, defined: dict) -> list:
    """The label range brackets of `labels` (of term t) that t needs: those without
    which t could be non-zero (`_zero_outside`), and those whose labels t also reads
    or compares elsewhere (there they may guard a read)."""
    spare = [a for a in labels if _zero_outside(a, t, facts, defined)]
    while spare:
        rest = tuple(a for a in t.pred if a not in spare) + tuple(f for f, _ in t.factors)
        used = {n for n in iter_nodes(rest) if n.__class__ is Gather}
        keep = [a for a in spare if not used.isdisjoint(
            b for b, _ in a.aff.terms if b.__class__ is Gather)]
        if not keep:
            break
        spare = [a for a in spare if a not in keep]
    return [a for a in labels if a not in spare]


def _zero_outside(atom: IdxCmp, t: Term, facts: Facts, defined: dict) -> bool:
    """Is term t 0 wherever `atom`, one of its label range brackets, fails, because a
    statement it multiplies by is 0 there (each of its terms carries a bracket on
    its own indices that implies `atom` at the element read)?  A contraction copies
    such a bracket into the statement of a sum it splits off (`w_bar_sum[l]` reads
    `p_bar[m, dst[l]]`), and the term that multiplies the sum by its other factors
    keeps it as well.

    A stored 0 is no strong zero: a term that also divides or takes a builtin
    (`d_arg[s, u] / arg[s, u]`, the tangent of a log whose argument carries the
    bracket, 0 / 0 where it fails) keeps its bracket."""
    if any(p < 0 or f.__class__ is Apply for f, p in t.factors):
        return False
    for f, p in t.factors:
        st = defined.get(f.name) if f.__class__ is Access else None
        if st is None or not p > 0 or not st.body:
            continue
        gens = {n for n, _ in st.indices}
        at = {n: a for (n, _), a in zip(st.indices, f.idx)}
        if all(facts.with_pred(tuple(
                index_substitute(b, at) for b in u.pred
                if b.__class__ is IdxCmp and b.op in (">=", "==") and index_names(b) <= gens
        )).proves(atom.aff) for u in st.body):
            return True
    return False


# ------------------------------------------------------------ reads the function skips
def guard_reads_the_function_skips(runs: Program, derivative: Program) -> Program:
    """`derivative` with a range bracket on each label it reads through where the
    function may not read it: a read whose brackets neither prove the label in range
    nor imply the brackets under which `runs` (the program the function runs) reads
    the same label into a dimension no larger.

    Simplifying a derivative may move a read through a label out of the sum whose
    brackets made it conditional: `sum[e: n]([s == z[e]] * E[y[z[0]], c])` reads
    y at z[0] only where some z[e] matches an s, but its gradient
    `2 [l == y[z[0]]] * E_bar_sum[p]` (E_bar_sum summing over e under the range
    check of z[e]) reads it at every l.  With every z[e] out of range the function
    accepts z[0] = -1 and reads nothing, the gradient raised.  Keeping such a read
    inside its sum would cost a factor (k m n for k m + m n); the bracket costs a
    comparison or two where the read is.  It changes no value where the function
    reads the label (there it is in range), and where the function does not read it
    the derivative's term is 0 (it stands for contributions of reads the function does
    not make); a label the function rejects is still rejected by the function's check
    (`label_checks`, which runs after this and sees the bracketed read as one the
    derivative does not make).  The brackets under which the function reads a label
    are its term's and the enclosing ones.  A read of ours implies them when they hold
    with the other indices summed away where one comparison alone mentions them
    (`_sums_as_existentials`; `c != y[s]` over c: `y[s] != 0 or k >= 2`), or where the
    label is in range wherever they fail, or when they hold as they stand with each
    other index taken as one of ours over the same range or as its first or last
    value (a tangent's term repeating the function's brackets).  `some e with z[e] in
    range` is none of these, and the gradient's read above is guarded."""
    where = _read_conditions(runs)
    facts = size_facts(derivative)
    defined = {s.name: s for s in runs.stmts}
    dims = _dims(runs, derivative)
    stmts, changed = [], False
    for st in derivative.stmts:
        if defined.get(st.name) == st:
            stmts.append(st)                # the function's own statement reads as it does
            continue
        alike = {t for s in runs.stmts if s.indices == st.indices for t in s.body}

        def at(t, ctx, alike=alike, dims=dims):
            ranges, scope, atoms = ctx
            if t in alike:
                return [t]
            inner = {**ranges, **dict(t.sums)}
            guards = []
            for site, atom in _read_sites(t):
                name, k, aff = site
                others = tuple(a for a in t.pred if a is not atom)
                known = scope.with_ranges(t.sums).with_pred(others)
                top = Affine.dim(dims[name][k]).shift(-1) - aff
                if known.proves(aff) and known.proves(top):
                    continue
                # (the brackets as they stand and, summed away as the function's are,
                # their index comparisons: `c != y[l]` under a sum over c; fewer
                # brackets hold in more places, so what they imply the term implies)
                mine = _condition(aff, inner, tuple(a for a in atoms + others
                                                    if a.__class__ is IdxCmp)) or ()
                if _implies_a_read(where, aff, dims[name][k], known, facts,
                                   atoms + others + mine, inner):
                    continue
                for g in (IdxCmp(">=", aff), IdxCmp(">=", top)):
                    if g not in guards and g not in t.pred:
                        guards.append(g)
            if not guards:
                return [t]
            return [Term(t.coeff, t.sums, t.pred + tuple(guards), t.factors)]

        def enter(ctx, t):
            ranges, scope, atoms = ctx
            return ({**ranges, **dict(t.sums)}, scope.with_ranges(t.sums).with_pred(t.pred),
                    atoms + t.pred)

        body = map_terms_in_body(st.body, at, (dict(st.indices), facts.with_ranges(st.indices),
                                               ()), enter, canon_body)
        if body is not st.body:
            st = Stmt(st.name, st.indices, body, st.span)
            changed = True
        stmts.append(st)
    if not changed:
        return derivative
    return Program(derivative.name, derivative.params, tuple(stmts), derivative.outputs,
                   derivative.tuple_return)


def _dims(*progs: Program) -> dict:
    out: dict = {}
    for p in progs:
        out.update((name, dims) for name, (_, dims) in p.shapes().items())
    return out


def _read_sites(t: Term) -> list:
    """((tensor, position, index form), atom or None) for each position of a read
    made directly by term t (not inside its nested bodies) that holds a label: the
    reads of its factors and, inside its brackets, the reads of labels through
    labels (`y` at `z[0]` in `[l == y[z[0]]]`), with the bracket that makes them."""
    out: list = []

    def reads(name, idx, atom):
        for k, aff in enumerate(idx):
            for a, _ in aff.terms:
                if a.__class__ is Gather:
                    reads(a.name, a.idx, atom)
            if holds_label(aff):
                out.append(((name, k, aff), atom))

    for a in t.pred:
        cls = a.__class__
        if cls is IdxCmp:
            for g, _ in a.aff.terms:
                if g.__class__ is Gather:
                    reads(g.name, g.idx, a)
        elif cls is Rel:
            reads(a.name, a.idx, a)
    for f, _ in t.factors:
        if f.__class__ is Access:
            reads(f.name, f.idx, None)
    return out


def _read_conditions(prog: Program) -> dict:
    """label shape -> [(dimension, the index form read, the atoms over its indices
    (their ranges included) under which `prog` reads it there, or None when that
    condition keeps another index; the brackets as they stand, and the other indices
    they mention with their ranges)] for every read through a label `prog` makes."""
    out: dict = {}
    dims = _dims(prog)

    def visit(body, ranges, atoms):
        for t in body:
            inner = {**ranges, **dict(t.sums)}
            for (name, k, aff), atom in _read_sites(t):
                shape = _label_shape(aff)
                if shape is None:
                    continue
                raw = atoms + tuple(a for a in t.pred if a is not atom)
                others = tuple((n, d) for n, d in inner.items()
                               if n not in index_names(aff) and n in index_names(raw))
                out.setdefault(shape, []).append(
                    (dims[name][k], aff, _condition(aff, inner, raw),
                     raw + _spans(index_names(aff), inner), others))
            scoped = atoms + t.pred
            for a in t.pred:
                if a.__class__ is ValCmp:
                    visit(a.left, inner, scoped)
                    visit(a.right, inner, scoped)
            for f, _ in t.factors:
                cls = f.__class__
                if cls is Apply:
                    for b in f.args:
                        visit(b, inner, scoped)
                elif cls is Group:
                    visit(f.body, inner, scoped)
                elif cls is Reduce:
                    visit((f.domain(),), inner, scoped)
                    visit(f.body, {**inner, **dict(f.over)}, scoped + f.where)

    for st in prog.stmts:
        visit(st.body, dict(st.indices), ())
    return out


def _condition(aff: Affine, ranges: dict, atoms: tuple):
    """`atoms` with every index but those of `aff` summed away where one comparison
    alone mentions it, and the ranges of those of `aff`; None when another index
    remains (or when it can never hold: then it implies nothing of use)."""
    own = index_names(aff)
    t = Term(1.0, tuple((n, d) for n, d in ranges.items() if n not in own), atoms, ())
    t = _sums_as_existentials(_drop_unused_sums(t))
    if t is None:
        return None
    t = _drop_unused_sums(t)
    return None if t.sums else t.pred + _spans(own, ranges)


def _spans(names, ranges: dict) -> tuple:
    """The range brackets `0 <= i < n` of the indices `names` (over `ranges`)."""
    return tuple(a for n in sorted(names) if n in ranges
                 for a in (IdxCmp(">=", Affine.of(IndexVar(n))),
                           IdxCmp(">=", Affine.dim(ranges[n]).shift(-1) - Affine.of(IndexVar(n)))))


def _implies_a_read(where: dict, aff: Affine, dim, known: Facts, sizes: Facts,
                    atoms: tuple, ranges: dict) -> bool:
    """Does the function read the label `aff` into a dimension no larger than `dim`
    wherever the facts `known` and the brackets `atoms` hold (over `ranges`)?  Either
    its condition over the label's indices holds (or the label is in range where it
    fails), or its brackets as they stand hold with its other indices taken as
    indices of ours over the same ranges (a tangent's term that repeats the brackets
    of the function's: `[off[s] <= t and t < off[s + 1]] * d_E[tok[t], c]`)."""
    for their_dim, their_aff, cond, raw, others in where.get(_label_shape(aff), ()):
        if not sizes.proves(Affine.dim(dim) - Affine.dim(their_dim)):
            continue
        mapping = _index_map(their_aff, aff)
        if mapping is None:
            continue
        if cond is not None and all(
                _holds(index_substitute(a, mapping), known, atoms)
                or _in_range_unless(index_substitute(a, mapping), known, aff, dim)
                for a in cond):
            return True
        if any(all(_holds(index_substitute(a, witness), known, atoms) for a in raw)
               for witness in _witnesses(mapping, others, ranges)):
            return True
    return False


WITNESS_LIMIT = 64      # assignments of the function's other indices tried per read


def _witnesses(mapping: dict, others: tuple, ranges: dict):
    """`mapping` extended by each assignment of the indices `others` ((name, range))
    to an index of `ranges` with the same range, or to the first or last value of the
    range (at most WITNESS_LIMIT of them)."""
    choices = [[Affine.of(IndexVar(m)) for m, e in ranges.items() if e == d]
               + [Affine(0), Affine.dim(d).shift(-1)] for _, d in others]
    for values in itertools.islice(itertools.product(*choices), WITNESS_LIMIT):
        yield {**mapping, **dict(zip((n for n, _ in others), values))}


def _in_range_unless(atom, known: Facts, aff: Affine, dim) -> bool:
    """Is `aff` in 0 .. dim - 1 wherever `known` holds and `atom` fails?  Then the
    function, reading the label where `atom` holds, leaves no label out of range
    unread there (`[c != y[s]]` for some c fails only where k = 1 and y[s] = 0)."""
    cases = _negation(atom)
    top = Affine.dim(dim).shift(-1) - aff
    return cases is not None and all(
        known.with_pred(case).proves(aff) and known.with_pred(case).proves(top)
        for case in cases)


def _negation(atom) -> list | None:
    """Where `atom` fails, as cases (each a conjunction of index comparisons), or
    None when there is no such form at hand."""
    if atom.__class__ is IdxCmp and atom.op == ">=":
        return [(IdxCmp(">=", atom.aff.scale(-1).shift(-1)),)]
    if atom.__class__ is IdxCmp and atom.op == "!=":
        return [(IdxCmp("==", atom.aff),)]
    if atom.__class__ is IdxCmp and atom.op == "==":
        return [(IdxCmp(">=", atom.aff.shift(-1)),), (IdxCmp(">=", atom.aff.scale(-1).shift(-1)),)]
    if atom.__class__ is AnyOf:
        cases = [()]
        for alt in atom.alts:
            if len(alt) != 1:
                return None
            fails = _negation(alt[0])
            if fails is None:
                return None
            cases = [c + f for c in cases for f in fails]
        return cases
    return None


def _holds(atom, known: Facts, atoms: tuple) -> bool:
    """Does `atom` hold where `known` and `atoms` do (a comparison of indices proven, any
    other bracket one of `atoms`)?"""
    if atom in atoms:
        return True
    if atom.__class__ is AnyOf:
        return any(all(_holds(a, known, atoms) for a in alt) for alt in atom.alts)
    if atom.__class__ is IdxCmp and atom.op == ">=":
        return known.proves(atom.aff)
    if atom.__class__ is IdxCmp and atom.op == "==":
        return known.proves(atom.aff) and known.proves(atom.aff.scale(-1))
    return False


def _label_shape(aff: Affine):
    """The labels an index form reads, nested, without their indices (`("x", (None,))`
    for `x[i - 1]`); None unless the form is one label alone."""
    if aff.const != 0 or len(aff.terms) != 1 or aff.terms[0][1] != 1:
        return None
    g = aff.terms[0][0]
    if g.__class__ is not Gather:
        return None
    return (g.name, tuple(_label_shape(a) for a in g.idx))


def _index_map(theirs: Affine, ours: Affine) -> dict | None:
    """index name -> Affine taking the index form `theirs` to `ours` (both one label
    alone, of the same shape): each position of a label without labels in it solved
    for its one index (`x[i - 1]` to `x[k]`: i = k + 1), or equal when it has none;
    None when that fails or two positions disagree."""
    mapping: dict = {}

    def match(a: Affine, b: Affine) -> bool:
        if holds_label(a):
            if _label_shape(a) is None or _label_shape(a) != _label_shape(b):
                return False
            x, y = a.terms[0][0], b.terms[0][0]
            return all(match(p, q) for p, q in zip(x.idx, y.idx))
        if holds_label(b):
            return False
        names = [v for v, _ in a.terms if v.__class__ is IndexVar]
        if not names:
            return a == b
        coef = dict(a.terms)[names[0]]
        if len(names) != 1 or abs(coef) != 1:
            return False
        value = (b - (a - Affine.make(0, [(names[0], coef)]))).scale(coef)
        return mapping.setdefault(names[0].name, value) == value
    return mapping if match(theirs, ours) else None
