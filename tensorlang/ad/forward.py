"""Forward mode: the tangent program, by the product rule over contraction terms.

Input: a Program and the names of the parameters to differentiate.
Output: a Program with one extra parameter ``d_<x>`` per differentiated
parameter (same type), whose outputs are the original outputs followed by
their tangents.  Each statement ``y`` that depends on a differentiated input
gets a tangent statement ``d_y`` right after it, over the same indices, so the
tangent program keeps the primal's loop structure and its sharing.

For a term ``c * sum_S [P] * prod_k f_k^p_k`` the tangent is
``sum_k c * sum_S [P] * p_k f_k^(p_k - 1) * D(f_k) * prod_{j != k} f_j^p_j``.
Brackets and value predicates pass through unchanged (their derivative is 0).
"""
from __future__ import annotations

from ..errors import TLError, TLTypeError, article
from ..ssa import build as B
from ..ssa import traverse as T
from ..ssa.ir import (Access, Affine, Apply, Group, IndexVar, Param, Program, Reduce, SizeValue,
                      Stmt, Term)
from ..ssa.names import fresh, unique_name
from ..ssa.traverse import UnknownNode
from ..ssa.recur import group_of, order_statements
from .rules import (is_own_derivative, partials, reduction_partial, stored_calls,
                    with_powers_added)


def check_wrt(prog: Program, wrt, *, what: str) -> tuple[str, ...]:
    names = (wrt,) if isinstance(wrt, str) else tuple(wrt)
    if not names:
        raise TLError(f"{what}: wrt must name at least one parameter")
    params = {p.name: p for p in prog.params}
    for w in names:
        if w not in params:
            raise TLError(f"{what}: {prog.name} has no parameter {w!r}; its parameters are "
                          f"{', '.join(params)}")
        if params[w].elem != "f64":
            raise TLTypeError(f"{what}: cannot differentiate with respect to {w}, "
                              f"{article(params[w].elem)} tensor (only f64 parameters have derivatives)")
    if len(set(names)) != len(names):
        raise TLError(f"{what}: wrt names a parameter twice")
    return names


class Tangents:
    """Differentiates bodies given which tensors have tangents."""

    def __init__(self, tangent: dict[str, str]):
        self.tangent = tangent
        # prefix and suffix products of many-factor terms (ad/chain.py), or None;
        # `bound`: (name, dim) of the indices around the term being differentiated
        self.products = None
        self.bound: tuple = ()
        self.pred: tuple = ()       # the brackets of the term being differentiated
        # the terms of the statement being differentiated, and what they become
        # when written with the stored products and compound factors
        self.top: tuple = ()
        self.values: dict[int, Term] = {}
        # stores a compound factor's value and tangent as statements (a ProductStore),
        # or None: see `shared_groups`
        self.share = None
        # a factor of every term of the statement being differentiated whose tangent
        # is written once for the whole statement (see `common_divisor`), or None
        self.held = None

    def shared_groups(self, t: Term, dependent, dfs, bound) -> Term:
        """t with each compound factor whose tangent has several terms read from
        statements: `(a - b - c) ** 2` has the tangent `2 * (a - b - c) * (da - db - dc)`,
        which multiplied out is nine monomials, each times every other factor of the
        term; stored, the value `g = a - b - c` and the tangent `dg = da - db - dc` make
        it one, `2 * g * dg`.  `dfs` (the tangents by factor position) is updated."""
        factors = list(t.factors)
        for k in dependent:
            f, p = factors[k]
            if not isinstance(f, Group) or len(dfs[k]) < 2:
                continue
            read = self.share.body(dfs[k], t.pred, bound)
            if read is None:
                continue
            dfs[k] = B.factor_body(read)
            if p != 1 and len(f.body) >= 2:
                value = self.share.body(f.body, t.pred, bound)
                if value is not None:
                    factors[k] = (value, p)
        if tuple(factors) == t.factors:
            return t
        return Term(t.coeff, t.sums, t.pred, tuple(factors))

    def tangent_over_ties(self, f: Reduce, scope: set[str], known=()) -> tuple | None:
        """The tangent of max / min `f` whose entries' tangent has several terms, with
        the sum of that tangent over the ties stored as a statement of its own,
        divided by the count of ties where it is read: multiplied out, each term
        divided by the count is a sum of its own over the ties, which the simplifier
        stores apart (one pass over the maximum's points each, or one sum over its
        ties each, tensorlang/ties.py, testing the entry's brackets again in each);
        stored whole it is one sum over the ties whose weight is the whole tangent.
        None when the tangent has one term or the statement cannot be stored."""
        over, hits, entry, inverse = reduction_partial(f, known, split=True)
        inner = set(scope) | {n for n, _ in over}
        dentry = self.body(entry, inner)
        if len(dentry) < 2:
            return None
        summed = B.canon_body([Term(u.coeff, over + u.sums, u.pred, u.factors)
                               for u in B.mul(hits, dentry, inner)])
        # under the brackets of the term the maximum is a factor of (its guard, which
        # a sum over its ties has too: tensorlang/ties.py)
        read = self.share.body(summed, self.pred, self.bound)
        if read is None:
            return None
        return B.mul(B.factor_body(read), inverse, set(scope))

    def body(self, body, scope: set[str], known=()) -> tuple:
        """`known`: builtin outputs already stored (see rules.stored_calls); they
        can only be the body's own factors, so arguments are differentiated without."""
        out = []
        for t in body:
            out.extend(self.term(t, scope, known))
        return B.canon_body(out)

    def term(self, t: Term, scope: set[str], known=()) -> list[Term]:
        inner = set(scope) | {n for n, _ in t.sums}
        outer, around, held = self.bound, self.pred, self.held
        # the held factor is held in the statement's own terms only, not inside
        # their compound factors
        self.bound, self.pred, self.held = outer + t.sums, t.pred, None
        try:
            dfs = {k: self.factor(f, inner, known) for k, (f, _) in enumerate(t.factors)}
        finally:
            self.bound, self.pred, self.held = outer, around, held
        if held is not None:
            dfs.update({k: () for k, fp in enumerate(t.factors) if fp == held})
        dependent = [k for k in range(len(t.factors)) if dfs[k]]
        top = [j for j, u in enumerate(self.top) if u is t]
        if self.share is not None:
            t = self.shared_groups(t, dependent, dfs, outer + t.sums)
            for j in top:
                self.values[j] = t
        parts = None
        if self.products is not None:
            from . import chain
            parts = chain.partials(t, dependent, outer + t.sums, inner, self.products)
            if parts is not None:
                for j in top:
                    self.values[j] = parts[1]
        result = []
        for k in dependent:
            part = parts[0][k] if parts is not None else B.partial_of_term(t, k, inner)
            prod = B.mul(part, dfs[k], inner)
            f, p = t.factors[k]
            if p != 1 and is_own_derivative(f):
                prod = with_powers_added(prod, f)
            result.extend(Term(u.coeff, t.sums + u.sums, u.pred, u.factors) for u in prod)
        return result

    def factor(self, f, scope: set[str], known=()) -> tuple:
        if isinstance(f, Access):
            name = self.tangent.get(f.name)
            return B.factor_body(Access(name, f.idx, f.span)) if name else ()
        if isinstance(f, Apply):
            dargs = [self.body(a, scope) for a in f.args]
            if not any(dargs):
                return ()
            total = ()
            for part, darg in zip(partials(f, known), dargs):
                if darg:
                    total = B.add(total, B.mul(part, darg, scope))
            return total
        if isinstance(f, Group):
            return self.body(f.body, scope)
        if isinstance(f, SizeValue):
            return ()
        if isinstance(f, Reduce):
            if self.share is not None and f.op in ("max", "min"):
                stored = self.tangent_over_ties(f, scope, known)
                if stored is not None:
                    return stored
            # d red[j](e) = sum[j](w(j) * d e(j)), w the weights of reduction_partial
            over, weight, entry = reduction_partial(f, known)
            inner = set(scope) | {n for n, _ in over}
            # the reduced indices are bound around the entry as a term's sums are
            # (a compound factor of the entry stored by `shared_groups` ranges over them)
            outer = self.bound
            self.bound = outer + over
            try:
                dentry = self.body(entry, inner)
            finally:
                self.bound = outer
            if not dentry:
                return ()
            prod = B.mul(weight, dentry, inner)
            return B.canon_body([Term(u.coeff, over + u.sums, u.pred, u.factors) for u in prod])
        raise UnknownNode("factor", f)


def common_divisor(s: Stmt, tangent):
    """(f, p): a factor f ** p with p < 0 of every term of s (two or more terms, or
    one that sums), f a tensor with a tangent (a name in `tangent`) read at s's own
    indices; or None.  (Reverse mode takes its adjoint the same way.)

    Then s = f ** p * r for the sum r of the terms without it, and
    d_s = f ** p * d_r + p * d_f / f * s: the divisor's tangent is one term reading s,
    where the product rule term by term writes it once per term (a pairwise statement
    over a temperature, (S[j] - S[i]) / tau, would store every term again, divided by
    tau ** 2, in its tangent), or once per point of a term's sums (a row's scatter
    sum divided by the row's degree, sum[e]([i == row[e]] * val[e] * x[col[e]] /
    dg[i]), would sum its divisor's tangent over the row's entries)."""
    if not s.body or len(s.body) < 2 and not s.body[0].sums:
        return None
    gens = {n for n, _ in s.indices}
    for f, p in s.body[0].factors:
        if p >= 0 or not isinstance(f, Access) or f.name not in tangent:
            continue
        if any(not isinstance(a, IndexVar) or a.name not in gens
               for aff in f.idx for a in aff.atoms()):
            continue
        if all((f, p) in t.factors for t in s.body[1:]):
            return f, p
    return None


def divisor_tangent(s: Stmt, held, diff: "Tangents") -> Term:
    """The term p * d_f * f ** -1 * s[...] of `common_divisor`'s identity."""
    f, p = held
    df = Access(diff.tangent[f.name], f.idx, f.span)
    itself = Access(s.name, tuple(Affine.of(IndexVar(n)) for n, _ in s.indices), s.span)
    return Term(p, (), (), ((df, 1.0), (f, -1.0), (itself, 1.0)))


def zero_stmt(name: str, dims) -> Stmt:
    """name[...] = 0 over dims, with fresh generator names."""
    return Stmt(name, tuple((fresh("i"), d) for d in dims), ())


def all_names(prog: Program) -> set[str]:
    names = {p.name for p in prog.params} | {s.name for s in prog.stmts} | set(prog.sizes())
    return names


def jvp_program(prog: Program, wrt, name: str | None = None, products: bool = False) -> Program:
    """The tangent program: outputs (outs..., d_outs...).  `products`: the partials
    of terms with four or more differentiated factors come from stored prefix and
    suffix products (ad/chain.py)."""
    return _jvp(prog, wrt, name, products)[0]


def jvp_candidates(prog: Program, wrt, name: str | None = None) -> list[Program]:
    """The tangent programs to choose from: partials multiplied out; when some
    compound factor's tangent has several terms, with its value and tangent stored
    (`Tangents.shared_groups`); and when some term has four or more differentiated
    factors, also with prefix and suffix products.  All are built from the same
    position of the name supply (only one is kept); a candidate that stores nothing
    is the first one and is left out."""
    from ..ssa.names import position, rewind_past, rewind_to
    start = position()
    plain = _jvp(prog, wrt, name, False)[0]
    ends = [position()]
    out = [plain]
    for how in (dict(share=True), dict(share=True, products=True)):
        rewind_to(start)
        program, stored = _jvp(prog, wrt, name, **how)
        if stored and not any(program == p for p in out):
            out.append(program)
            ends.append(position())
    rewind_past(ends)
    return out


def _jvp(prog: Program, wrt, name: str | None, products: bool = False,
         share: bool = False) -> tuple[Program, int]:
    wrt = check_wrt(prog, wrt, what="jvp")
    used = all_names(prog)
    params = {p.name: p for p in prog.params}
    tangent: dict[str, str] = {}
    new_params = list(prog.params)
    for w in wrt:
        t = unique_name(f"d_{w}", used)
        used.add(t)
        tangent[w] = t
        new_params.append(Param(t, "f64", params[w].dims))
    diff = Tangents(tangent)
    pending: list[Stmt] = []
    owner = [""]
    store = None
    if products or share:
        from . import chain

        def emit(indices, body):
            part = unique_name(f"{owner[0]}_part", used)
            used.add(part)
            pending.append(Stmt(part, indices, body))
            return part
        store = chain.ProductStore(Program(prog.name, tuple(new_params), prog.stmts, prog.outputs,
                                           prog.tuple_return), emit)
        diff.products = store if products else None
        diff.share = store if share else None
    stmts = []
    stored = 0
    groups = group_of(prog)
    for s in prog.stmts:
        if s.name in groups:
            if s.name == groups[s.name].members[0]:
                # no prefix or suffix products inside a recurrence step; a compound
                # factor's value and tangent are stored over the steps only (see
                # _group_tangents)
                keep = diff.products
                diff.products = None
                diff.top, diff.values = (), {}
                owner[0] = s.name
                made = _group_tangents(prog, groups[s.name], diff, tangent, used,
                                       divisors=diff.share is not None)
                stmts.extend(made)
                stmts.extend(pending)
                stored += len(pending)
                pending.clear()
                diff.products = keep
                if store is not None:
                    store.extra.extend(x for x in made if x.name not in groups)
            continue
        owner[0] = s.name
        diff.bound = tuple(s.indices)
        diff.top = s.body
        diff.values = {}
        # (only among the candidates that store parts: the statement is then read by
        # its tangent, which the multiplied-out candidate, compared with it, avoids)
        db, divided = _statement_tangent(diff, s, tangent, diff.share is not None)
        stored += divided
        # the stored products read what s reads, and s reads its last prefix; a sum
        # over the ties of the maximum s stores reads s (tangent_over_ties)
        after = [p for p in pending if s.name in T.tensor_reads(p.body)]
        stmts.extend(p for p in pending if p not in after)
        stored += len(pending)
        pending.clear()
        if diff.values:
            body = tuple(diff.values.get(j, u) for j, u in enumerate(s.body))
            s = Stmt(s.name, s.indices, B.canon_body(body), s.span)
        stmts.append(s)
        stmts.extend(after)
        if db:
            t = unique_name(f"d_{s.name}", used)
            used.add(t)
            tangent[s.name] = t
            stmts.append(Stmt(t, s.indices, db, s.span))
            if store is not None:
                store.extra.append(stmts[-1])
    shapes = prog.shapes()
    outs = []
    for o in prog.outputs:
        if o in tangent:
            outs.append(tangent[o])
        else:
            z = unique_name(f"d_{o}", used)
            used.add(z)
            stmts.append(zero_stmt(z, shapes[o][1]))
            outs.append(z)
    result = Program(name or f"{prog.name}_jvp", tuple(new_params), tuple(stmts),
                     prog.outputs + tuple(outs), True)
    # A tangent group runs the same way as its primal group; put it in step order.
    return (order_statements(result) if groups else result), stored


def _statement_tangent(diff: "Tangents", s: Stmt, tangent: dict, divisors: bool,
                       steps: set = frozenset()) -> tuple:
    """(the tangent body of statement s, whether a common divisor's tangent was
    written once for it: `common_divisor`, when `divisors`).  `steps`: index names
    every statement stored apart meanwhile must range over (a recurrence's)."""
    held = common_divisor(s, tangent) if divisors else None
    diff.held = held
    store = diff.share
    if store is not None:
        store.must_use = set(steps)
    try:
        db = diff.body(s.body, {n for n, _ in s.indices},
                       stored_calls(s.name, s.indices, s.body))
    finally:
        diff.held = None
        if store is not None:
            store.must_use = set()
    if held is not None:
        db = B.canon_body(db + (divisor_tangent(s, held, diff),))
    return db, held is not None


def _dependent_members(members, tangent: dict) -> set[str]:
    """The members of a group that depend on the inputs differentiated: those that read
    a tensor with a tangent, or a member that does (a fixed point over the group's
    reads).  A member that reads neither, such as a tridiagonal solve's elimination
    coefficients when only the right-hand side is differentiated, has a zero tangent."""
    reads = {s.name: T.tensor_reads(s.body) for s in members}
    dependent: set[str] = set()
    grew = True
    while grew:
        grew = False
        for s in members:
            if s.name not in dependent and any(r in tangent or r in dependent
                                               for r in reads[s.name]):
                dependent.add(s.name)
                grew = True
    return dependent


def _group_tangents(prog: Program, g, diff: "Tangents", tangent: dict, used: set,
                    divisors: bool = False) -> list:
    """A recurrence group and its tangents: the members read each other, so every
    tangent is named before any is derived.  Only members that depend on the inputs
    differentiated have one; if none does, the group has no tangents.  `divisors`:
    a member's `common_divisor` has its tangent written once, reading the member at
    its own step (nothing is stored apart)."""
    members = [prog.stmt(m) for m in g.members]
    dependent = _dependent_members(members, tangent)
    differentiated = [s for s in members if s.name in dependent]
    names = {}
    for s in differentiated:
        names[s.name] = unique_name(f"d_{s.name}", used)
        used.add(names[s.name])
    tangent.update(names)
    store = diff.share
    if store is not None:
        # A compound factor's value and tangent stored apart are computed step by
        # step with the group (the tangent reads the members' tangents a step back,
        # and the members' tangents read it), so they range over the steps; their
        # reads are checked against the tangents' shapes.
        shapes = [Stmt(names[s.name], s.indices, ()) for s in differentiated]
        store.extra.extend(shapes)
    bodies = []
    for s in differentiated:
        diff.bound = tuple(s.indices)
        steps = {n for n, _ in s.indices[:g.lead]}
        bodies.append(_statement_tangent(diff, s, tangent, divisors, steps)[0])
    if store is not None:
        for placeholder in shapes:
            store.extra.remove(placeholder)
    if not any(bodies):
        for s in differentiated:
            del tangent[s.name]
        return members
    out = list(members)
    for s, db in zip(differentiated, bodies):
        out.append(Stmt(names[s.name], s.indices, db, s.span))
    return out


__all__ = ["jvp_program", "jvp_candidates", "Tangents", "check_wrt", "Affine", "IndexVar"]
