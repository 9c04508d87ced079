"""Hoist reductions out of nonlinear positions into statements of their own.

``z[s, c] = max(sum[j](X[s, j] * W[j, c]), 0.0)`` becomes

    z_arg[s, c] = sum[j](X[s, j] * W[j, c])
    z[s, c] = max(z_arg[s, c], 0.0)

The forward work is unchanged (the sum was computed once per (s, c) before
and still is), but every derivative now reads ``z_arg[s, c]`` where it would
otherwise recompute the sum inside its own, possibly larger, loop nest: the
chain rule puts ``[arg >= 0]`` (for max), ``f'(arg)`` or ``2 * arg`` next to
other factors, and a sum there multiplies the derivative's cost by its range.

Applies to sums under a builtin, inside a parenthesised group raised to a
power, on either side of a value comparison, and in the body of a max / min /
logsumexp reduction.  The new statement ranges
over the indices the sum uses; brackets of the enclosing term that mention
only those indices go with it, and the move is made only when every access
of the new statement is still provably in bounds.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..bounds import covers, size_facts
from ..check import BoundsChecker
from ..costs import Cost, sample_points
from ..errors import ErrorSink
from ..ssa import build as B
from ..memo import Memo
from ..ssa import traverse as T
from ..ssa.names import unique_name
from .engine import keep_recurrences
from ..ssa.ir import (Access, Affine, Apply, Group, IdxCmp, IndexVar, Program, Reduce, Rel, Stmt,
                      Term, ValCmp)


def _guards_on(pred, free) -> tuple:
    """The index brackets of pred that mention only the indices `free`."""
    return tuple(a for a in pred if isinstance(a, (IdxCmp, Rel)) and _atom_vars(a) <= set(free))


def _has_sum(body) -> bool:
    return any(t.sums for t in body)


def _atom_vars(a) -> set[str]:
    return T.index_names(a)


class _Hoister:
    def __init__(self, prog: Program):
        self.prog = prog
        self.original = prog
        self.used = ({p.name for p in prog.params} | {s.name for s in prog.stmts}
                     | set(prog.sizes()))
        self.new: list[Stmt] = []

    def fresh(self, base: str) -> str:
        name = unique_name(base, self.used)
        self.used.add(name)
        return name

    def hoist_body(self, body, owner: str, ranges: dict, order: list, pred,
                   suffix: str = "arg", guards=None, invariant: bool = False) -> tuple | None:
        """A new statement computing `body` (under `guards`, by default the brackets
        of `pred` on its indices); returns the access replacing it, or None.
        `invariant`: a loop-invariant factor (see the edge guards below)."""
        free = T.index_names(body)
        free = [n for n in order if n in free]
        indices = tuple((n, ranges[n]) for n in free)
        name = self.fresh(f"{owner}_{suffix}")
        if guards is None:
            guards = _guards_on(pred, free)
            # A loop-invariant factor defined and finite wherever its reads are needs
            # no edge guard when its reads are in range without it: the reader keeps
            # its brackets, and the terms of one statement that hoist the same call
            # under different brackets (`[i >= 1] * exp(-e[i])` and `exp(-e[i])`) then
            # hoist one statement whichever comes first, an order that follows the
            # index names.  (The entries of a reduction keep theirs: stored without,
            # viterbi's gradient got dearer.)
            if invariant and guards and _total(body) \
                    and all(_edge_guard(a, ranges) for a in guards) \
                    and self.in_bounds(Stmt(name, indices, body)):
                guards = ()
        new_body = B.with_pred(body, guards) if guards else body
        stmt = Stmt(name, indices, new_body)
        if not self.in_bounds(stmt):
            self.used.discard(name)
            return None
        self.new.append(stmt)
        return B.factor_body(Access(name, tuple(Affine.of(IndexVar(n)) for n in free)))

    def in_bounds(self, stmt: Stmt) -> bool:
        # statements not yet rewritten stay in the trial: a recurrence group reads
        # members defined after the statement being rewritten (or the statement itself)
        done = {s.name for s in self.prog.stmts} | {s.name for s in self.new} | {stmt.name}
        later = tuple(s for s in self.original.stmts if s.name not in done)
        trial = Program(self.prog.name, self.prog.params,
                        self.prog.stmts + tuple(self.new) + (stmt,) + later, (stmt.name,), False)
        sink = ErrorSink()
        checker = BoundsChecker(trial, sink)
        checker.body(stmt.body, checker.base.with_ranges(stmt.indices), dict(stmt.indices))
        return not sink

    def term(self, t: Term, owner: str, ranges: dict, order: list) -> Term:
        ranges = {**ranges, **dict(t.sums)}
        order = order + [n for n, _ in t.sums]
        factors = []
        for f, p in t.factors:
            if isinstance(f, Apply) and any(_has_sum(a) for a in f.args):
                args = []
                for a in f.args:
                    rep = self.hoist_body(a, owner, ranges, order, t.pred) if _has_sum(a) else None
                    args.append(rep if rep is not None else a)
                f = Apply(f.fn, tuple(args))
            elif isinstance(f, Reduce) and _has_sum(f.body):
                # The entries of a reduction: its derivative compares each entry with
                # the result (or subtracts it), and would sum again where it reads them.
                dom = f.domain()
                inner_ranges = {**ranges, **dict(dom.sums)}
                rep = self.hoist_body(f.body, owner, inner_ranges,
                                      order + [n for n, _ in dom.sums], t.pred + dom.pred)
                if rep is not None:
                    f = Reduce(f.op, f.over, f.where, rep)
            elif isinstance(f, Group) and (p != 1) and _has_sum(f.body):
                rep = self.hoist_body(f.body, owner, ranges, order, t.pred)
                if rep is not None:
                    (only,) = rep
                    f, q = only.factors[0]
                    factors.append((f, p * q))
                    continue
            factors.append((f, p))
        pred = []
        for a in t.pred:
            if isinstance(a, ValCmp) and (_has_sum(a.left) or _has_sum(a.right)):
                others = [x for x in t.pred if x is not a]
                left = (self.hoist_body(a.left, owner, ranges, order, others)
                        if _has_sum(a.left) else None) or a.left
                right = (self.hoist_body(a.right, owner, ranges, order, others)
                         if _has_sum(a.right) else None) or a.right
                a = ValCmp(a.op, left, right)
            pred.append(a)
        return Term(t.coeff, t.sums, tuple(pred), tuple(factors))


def hoist_nested_reductions(prog: Program) -> Program:
    """A sum inside a builtin's argument, a powered group or a value comparison
    becomes a statement of its own, read where the sum was (see the module
    docstring: derivatives multiply such sums by the other factors)."""
    h = _Hoister(prog)
    stmts = []
    for at, s in enumerate(prog.stmts):
        if not any(_nested_sum(t) for t in s.body):
            stmts.append(s)
            continue
        # the statements so far and the rest, for the bounds checks of what is hoisted
        # out of s (a recurrence reads itself and later statements: all need shapes)
        h.prog = Program(prog.name, prog.params, tuple(stmts) + prog.stmts[at:], prog.outputs,
                         prog.tuple_return)
        ranges = dict(s.indices)
        order = [n for n, _ in s.indices]
        start = len(h.new)
        body = B.canon_body([h.term(t, s.name, ranges, order) for t in s.body])
        stmts.extend(h.new[start:])
        h.prog = Program(prog.name, prog.params, tuple(stmts), prog.outputs, prog.tuple_return)
        stmts.append(Stmt(s.name, s.indices, body, s.span))
        h.prog = Program(prog.name, prog.params, tuple(stmts), prog.outputs, prog.tuple_return)
        h.new = []
    if len(stmts) == len(prog.stmts):
        return prog
    return Program(prog.name, prog.params, tuple(stmts), prog.outputs, prog.tuple_return)


def hoist_reductions(prog: Program) -> Program:
    """A max / min / logsumexp that is not the whole body of its statement becomes a
    statement of its own over the indices it uses, read where it stood.

    Inside a loop over other indices (`exp(x[i] - max[j](x[j]))`) it would be
    evaluated again at every iteration; stored, it is evaluated once per value of
    its own free indices.  And stored, its derivatives read it: the weights of
    ad/rules.reduction_partial compare each entry with the stored maximum or
    subtract the stored logsumexp.  Brackets of the enclosing terms that mention
    only those indices go with it (a strong zero guards its reads there too), and
    the move is made only when its reads stay provably in bounds.  Innermost
    reductions move first."""
    h = _Hoister(prog)
    stmts = []
    changed = False
    for s in prog.stmts:
        if not _holds_reduction(s):
            _place(h, prog, stmts, s, s.body)       # (nothing to hoist: s as it is)
            continue
        whole = _whole_reduction(s)

        def at(t, ctx, s=s, whole=whole):
            top = ctx[3]
            ranges, order, pred, _ = enter(ctx, t)
            factors = []
            moved = False
            for f, p in t.factors:
                if isinstance(f, Reduce) and not (top and t is whole):
                    rep = h.hoist_body(B.factor_body(f), s.name, ranges, order, pred,
                                       suffix=f.op)
                    if rep is not None:
                        (only,) = rep
                        factors.append((only.factors[0][0], p))
                        moved = True
                        continue
                factors.append((f, p))
            return [Term(t.coeff, t.sums, t.pred, tuple(factors)) if moved else t]

        def enter(ctx, t):
            ranges, order, pred, top = ctx
            return ({**ranges, **dict(t.sums)}, order + [n for n, _ in t.sums],
                    tuple(pred) + t.pred, False)
        ctx = (dict(s.indices), [n for n, _ in s.indices], (), True)
        body = T.map_terms_in_body(s.body, at, ctx, enter, B.canon_body)
        changed = _place(h, prog, stmts, s, body) or changed
    if not changed:
        return prog
    return Program(prog.name, prog.params, tuple(stmts), prog.outputs, prog.tuple_return)


def _holds_reduction(s: Stmt) -> bool:
    """Is there a max / min / logsumexp anywhere in s?  Remembered by value: every
    round asks again about the statements no rule changed."""
    return _REDUCTIONS.compute(s, lambda: any(n.__class__ is Reduce
                                              for n in T.iter_nodes(s.body)))


_REDUCTIONS = Memo(50_000)


def _whole_reduction(s: Stmt):
    """The term of a statement whose whole body is one reduction (`m[i] = max[j](...)`,
    possibly under brackets, as a hoisted one is), which stays where it is; else None."""
    if len(s.body) != 1:
        return None
    t = s.body[0]
    if t.coeff != 1 or t.sums or len(t.factors) != 1:
        return None
    f, p = t.factors[0]
    return t if p == 1 and isinstance(f, Reduce) else None


def _nested_sum(t: Term) -> bool:
    """Does `t` have a sum where ``_Hoister.term`` moves one out?"""
    for f, p in t.factors:
        if isinstance(f, Apply) and any(_has_sum(a) for a in f.args):
            return True
        if isinstance(f, Group) and p != 1 and _has_sum(f.body):
            return True
        if isinstance(f, Reduce) and _has_sum(f.body):
            return True
    return any(isinstance(a, ValCmp) and (_has_sum(a.left) or _has_sum(a.right))
               for a in t.pred)


def _loop_invariant(f, p: float, loop_vars: set[str]) -> bool:
    """Is factor `f` a computation (a builtin call or a powered group) that does not
    depend on every loop variable of its term?"""
    if not (isinstance(f, Apply) or (isinstance(f, Group) and p != 1)):
        return False
    names = T.index_names(f)
    if not names < loop_vars:
        return False
    # A gathered read could be out of range where the term's brackets would have
    # skipped it; such factors stay where they are.
    return not _reads_gather(f)


def _reads_gather(f) -> bool:
    """Does the factor index anything through a gathered label?"""
    return bool(T.gathered_tensors(f))


def hoist_invariant_factors(prog: Program) -> Program:
    """Compute a builtin or powered group once per value of the indices it uses.

    In ``d[k, l] = X[k, l] * exp(z[k]) / (1.0 + exp(z[k])) ** 2`` the two factors
    depend on k alone, yet the loop nest evaluates them for every (k, l): they
    become statements ``d_arg[k] = exp(z[k])`` and ``d_arg1[k] = (1.0 + ...)``,
    read by the original term.  Each is then evaluated once per k, which removes
    a factor of the range of l from their cost (this is loop-invariant code
    motion, decided on index sets).  In a term whose brackets test values only a
    factor finite at every point is moved (``finite_everywhere``), so a factor
    guarded by, say, ``[x[i] > 0.0]`` is never evaluated where the guard is false;
    the division by the number of ties of a maximum's derivative,
    ``[e[k, l, p] == m[k, l]] * m_bar[k, l] / max(count[k, l], 1.0)``, is moved."""
    def rewrite(h, s, t, ranges, order):
        # An equality will be eliminated first (it removes a loop, so the factor may
        # then be invariant of nothing).
        if any(isinstance(a, IdxCmp) and a.op == "==" for a in t.pred):
            return t
        # Value brackets could guard the factor's domain.  Under them, a factor that
        # varies with every generator of the statement, invariant of summed indices
        # alone, stays: factoring takes it out of the sum, where it is computed once
        # per element without a statement of its own.
        valued = any(not isinstance(a, (IdxCmp, Rel)) for a in t.pred)
        loop_vars = set(order)
        gens = {n for n, _ in s.indices}
        factors = []
        for f, p in t.factors:
            if _loop_invariant(f, p, loop_vars) and (not valued or (
                    finite_everywhere(f) and not gens <= T.index_names(f))):
                body = B.factor_body(f) if isinstance(f, Apply) else f.body
                rep = h.hoist_body(body, s.name, ranges, order, t.pred, invariant=True)
                if rep is not None:
                    (only,) = rep
                    factors.append((only.factors[0][0], p))
                    continue
            factors.append((f, p))
        return Term(t.coeff, t.sums, t.pred, tuple(factors))
    return _hoist_in_terms(prog, rewrite)


def _edge_guard(atom, ranges: dict) -> bool:
    """Does `atom` leave out only a constant number of points at an end of one index's
    range (`[i >= 1]`, `[i + 2 < n]` with i in 0 .. n - 1), so that computing without
    it costs lower-order terms only?  A bound by another size (`[t <= b + 1]`) is not."""
    if atom.__class__ is not IdxCmp or atom.op != ">=":
        return False
    names = atom.aff.index_vars()
    if len(names) != 1:
        return False
    (v,) = names
    coef = dict(atom.aff.terms).get(IndexVar(v))
    if coef not in (1, -1) or len(atom.aff.terms) > 2:
        return False
    rest = Affine.make(0, [(a, c) for a, c in atom.aff.terms if a != IndexVar(v)])
    return not rest.terms or coef == -1 and rest == Affine.dim(ranges[v])


def _total(body) -> bool:
    """Is `body` finite wherever its reads are, but for overflow: sums, products and
    whole powers of reads, constants and builtins of TOTAL_BUILTINS, no division?"""
    from .simplify import TOTAL_BUILTINS
    for n in T.iter_nodes(body):
        if n.__class__ is Term and any(p < 0 or not float(p).is_integer() for _, p in n.factors):
            return False
        if n.__class__ is Apply and n.fn not in TOTAL_BUILTINS:
            return False
        if n.__class__ is Reduce:
            return False
    return True


def finite_everywhere(f) -> bool:
    """Is every power of factor `f` finite wherever its reads are, so that computing it
    where its term's value brackets are false cannot overflow or divide by zero?
    `max(x, c)` with a constant c > 0 is: it is at least c."""
    if not (isinstance(f, Apply) and f.fn == "max" and len(f.args) == 2):
        return False
    return any(_positive_constant(a) for a in f.args)


def _positive_constant(body) -> bool:
    return len(body) == 1 and not (body[0].sums or body[0].pred or body[0].factors) \
        and body[0].coeff > 0


def _hoist_in_terms(prog: Program, rewrite) -> Program:
    """Run `rewrite(hoister, stmt, term, ranges, loop order) -> term` over every
    term; statements it hoists go just before the statement they came from."""
    h = _Hoister(prog)
    stmts = []
    changed = False
    for s in prog.stmts:
        terms = []
        for t in s.body:
            ranges = {**dict(s.indices), **dict(t.sums)}
            order = [n for n, _ in s.indices] + [n for n, _ in t.sums]
            terms.append(rewrite(h, s, t, ranges, order))
        body = B.canon_body(terms) if h.new else s.body
        changed = _place(h, prog, stmts, s, body) or changed
    if not changed:
        return prog
    # a statement hoisted out of a recurrence group's member that does not read the
    # group goes before the group, which stays contiguous in step order
    return keep_recurrences(Program(prog.name, prog.params, tuple(stmts), prog.outputs,
                                    prog.tuple_return), prog)


def _place(h, prog: Program, stmts: list, s: Stmt, body) -> bool:
    """Append the statements the hoister stored while rewriting `s`, then `s` with its
    new `body`; the hoister then sees the program up to here.  Did it store any?"""
    stored = bool(h.new)
    stmts.extend(h.new)
    stmts.append(s if body is s.body else Stmt(s.name, s.indices, body, s.span))
    h.prog = Program(prog.name, prog.params, tuple(stmts), prog.outputs, prog.tuple_return)
    h.new = []
    return stored


def _compound(body) -> bool:
    """More than a single read or constant: naming it saves re-expanding it."""
    if not body:
        return False                    # the constant 0
    if len(body) != 1:
        return True
    t = body[0]
    return bool(t.sums or t.pred) or len(t.factors) > 1 or \
        any(not isinstance(f, Access) or p != 1 for f, p in t.factors)


def name_nonlinear_arguments(prog: Program) -> Program:
    """Name compound arguments (see `_name_arguments_once`) until none is left:
    a named argument may itself hold one, as in ``log1p((x[i + 1] - x[i]) ** 2)``."""
    named: set[str] = set()
    for _ in range(8):
        before = {st.name for st in prog.stmts}
        after = _name_arguments_once(prog, named)
        if after is prog:
            break
        named = {st.name for st in after.stmts} - before
        prog = after
    return prog


def _name_arguments_once(prog: Program, group_owners: set[str]) -> Program:
    """Give the compound argument of a builtin (or entry of a reduction) a statement.

    Differentiating ``log1p((x[i + 1] - x[i]) ** 2)`` in place multiplies the
    derivative ``1 / (1 + (x[i + 1] - x[i]) ** 2)`` into every term of the inner
    derivative, and the equality brackets then spread the copies over shifted
    indices: the gradient ends up evaluating the argument four times per
    element.  With ``t[i] = (x[i + 1] - x[i]) ** 2`` named first, the adjoint of
    ``t`` is computed once per i and the rest of the chain reads it.  Run before
    differentiation only: the forward program is unchanged in meaning, and code
    generation fuses a named argument back into its single reader."""
    shared: dict = {}

    def rewrite(h, s, t, ranges, order):
        if any(not isinstance(a, (IdxCmp, Rel)) for a in t.pred):
            return t

        def named(body):
            if not _compound(body) or _reads_gather(Group(body)):
                return None
            # The same argument in several terms under different brackets (a bracketed
            # sum times sigmoid(...), which parsing distributes) is named once, guarded
            # by what the terms' brackets have in common and by their disjunction
            # unless it always holds: one statement, which the derivative reads once.
            key = (s.name, body)
            if key in shared:
                return shared[key]
            free = [n for n in order if n in T.index_names(body)]
            if _tied_by_equality(t.pred, free) \
                    and not no_larger_than_held(h.original, [ranges[n] for n in free]):
                # exp(e[k] - lz[v]) under [v == dst[k]], in a sum over the edges k for
                # every node v, is needed at E pairs (v, k) only: named, it would be a
                # dense n x E statement where the function holds n and E entries (16 GB
                # at 20000 nodes and 100000 edges).  Left in place, its derivative
                # evaluates it where the equality holds.
                return None
            alts = [_guards_on(u.pred, free) for u in s.body
                    if all(isinstance(a, (IdxCmp, Rel)) for a in u.pred)
                    and _holds_argument(u, body)]
            rep = None
            if len(set(alts)) > 1:
                rep = h.hoist_body(body, s.name, ranges, order, t.pred,
                                   guards=_either(alts, h.prog, ranges, free))
            rep = rep or h.hoist_body(body, s.name, ranges, order, t.pred)
            if rep is not None and len(set(alts)) > 1:
                shared[key] = rep
            return rep
        factors = []
        for f, p in t.factors:
            if isinstance(f, Reduce):
                # The derivative of a max or min reads each entry twice more (the count
                # of ties and the indicator): a compound entry is stored.  (A
                # logsumexp's softmax reads it once; storing it would cost a write.)
                dom = f.domain()
                if f.op != "logsumexp" and _compound(f.body) \
                        and not _reads_gather(Group(f.body)):
                    rep = h.hoist_body(f.body, s.name, {**ranges, **dict(dom.sums)},
                                       order + [n for n, _ in dom.sums], t.pred + dom.pred)
                    if rep is not None:
                        f = Reduce(f.op, f.over, f.where, rep)
            elif isinstance(f, Apply):
                f = Apply(f.fn, tuple(named(a) or a for a in f.args))
            elif isinstance(f, Group) and p != 1 and s.name in group_owners:
                # A powered group on its own differentiates into a polynomial
                # that is cheap to expand; inside a named argument it sits
                # under the builtin's derivative, so it is named as well.
                rep = named(f.body)
                if rep is not None:
                    (only,) = rep
                    f = only.factors[0][0]
            factors.append((f, p))
        return Term(t.coeff, t.sums, t.pred, tuple(factors))
    return _hoist_in_terms(prog, rewrite)


def _tied_by_equality(pred, free) -> bool:
    """Does an equality bracket of `pred` relate two of the indices `free` (`[v ==
    dst[k]]`, `[i == j + 1]`)?  Then the term needs only the pairs where it holds."""
    return any(a.__class__ is IdxCmp and a.op == "==" and len(_atom_vars(a) & set(free)) >= 2
               for a in pred)


def _holds_argument(t: Term, body) -> bool:
    """Is `body` the argument of a builtin that is a factor of t?"""
    return any(isinstance(f, Apply) and body in f.args for f, _ in t.factors)


def _either(alts, prog: Program, ranges: dict, free) -> tuple:
    """Guards under which a value needed under any of the bracket conjunctions `alts`
    is computed: what they share, and their disjunction unless it always holds."""
    common = tuple(a for a in alts[0] if all(a in alt for alt in alts))
    rest = [tuple(a for a in alt if a not in common) for alt in alts]
    facts = size_facts(prog).with_ranges(tuple((n, ranges[n]) for n in free)).with_pred(common)
    if not all(rest) or covers(rest, facts):
        return common
    either = B.any_of(rest)
    return common if isinstance(either, bool) else common + (either,)


def no_larger_than_held(prog: Program, dims) -> bool:
    """Would a tensor of `dims` be no larger, at every sampled size, than one that
    `prog` already holds (a parameter or a statement)?  Storing a call trades its
    evaluations for a tensor's writes and reads; the operation counts may favour a
    tensor a size larger than anything the program keeps (an HMM's softmax weights over
    every step, K^2 T entries where the forward holds T K and K^2), which multiplies a
    derivative's memory by that size and, memory-bound, runs slower than the
    evaluations it saves.  Such a call is left where it is (simplify.store_repeated_calls),
    and such an argument is not named (`_name_arguments_once`)."""
    return no_larger_than(held_dims(prog), dims)


def held_dims(prog: Program) -> tuple:
    """The dims of every tensor `prog` holds (its parameters and statements)."""
    return tuple(q.dims for q in prog.params) + tuple(st.dims for st in prog.stmts)


def no_larger_than(held, dims) -> bool:
    """Is a tensor of `dims` no larger, at every sampled size, than the largest of
    the tensors of dims `held`?"""
    held = list(held)
    symbols = sorted({d for ds in held + [dims] for d in ds if isinstance(d, str)})

    def count(ds, at):
        return math.prod(at[d] if isinstance(d, str) else d for d in ds)
    return all(count(dims, at) <= max((count(ds, at) for ds in held), default=1)
               for at in sample_points(symbols))


def _elements(dims) -> Cost:
    """The element count of a tensor of `dims`, its constant extents left out."""
    out = Cost.const(1)
    for d in dims:
        if isinstance(d, str):
            out = out * Cost.symbol(d)
    return out


@dataclass(frozen=True)
class Budget:
    """What a derivative may spend to hold less than a tensor larger than every one
    its function holds: `bound`, the certificate's right-hand side as (monomial,
    coefficient) pairs, and `held`, the dims of the function's tensors (`held_dims`).
    Within the bound, such a tensor is computed where it is read rather than stored
    (simplify.inline_pointwise_statements) and not made to save operations
    (factor.FactorWithin).  A value, so that simplifications with equal rules are
    remembered as one."""
    bound: tuple
    held: tuple

    def larger_than_held(self, dims) -> bool:
        """Does a tensor of `dims` grow faster with the sizes than every tensor the
        function holds (its count's monomial divides none of theirs, as in the
        certificate's monomial rule)?  A constant multiple (a 3 x 3 window over an
        image, the two coordinates of each edge) is not: storing it multiplies memory
        by a constant, and recomputing it in every reader may cost more than that."""
        from ..certificate import unbounded_monomial
        return unbounded_monomial(_elements(dims), sum((_elements(ds) for ds in self.held),
                                                       Cost())) is not None

    def allows(self, cost: Cost) -> bool:
        """Does `cost` keep within the bound as the certificate checks it: no monomial
        that divides none of the bound's, and no more at any of its sampled sizes?"""
        from ..certificate import exceeded, unbounded_monomial
        bound = Cost(dict(self.bound))
        return unbounded_monomial(cost, bound) is None \
            and exceeded(cost, bound, set(cost.symbols()) | set(bound.symbols())) is None
