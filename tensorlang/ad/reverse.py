"""Reverse mode by transposition: adjoints read off <L dx, ybar> = <dx, L^T ybar>.

Input: a Program, the parameters to differentiate, and the cotangent of its
(single) output: either a new parameter ``d_out`` (vjp) or the constant 1
(grad of a scalar).  Output: a Program whose statements are the primal ones
followed by one adjoint statement ``<name>_bar`` per tensor that lies on a
path from a differentiated input to the output, in reverse order.

For a use of ``x`` at ``x[a(I, S)]`` inside a term of ``y[I] = ...`` with
cotangent ``ybar``, the transposition rule gives the contribution

    x_bar[K] = sum_{I, S} [K == a(I, S)] * [P] * c * ybar[I] * (the other factors)

and all contributions to one tensor are added as an explicit sum: no ``+=``,
no tape.  Factors under a builtin are handled by the chain rule: the builtin's
argument is transposed with the cotangent ``ybar * f'(args) * (the others)``.
The brackets ``[K == a]`` are what simplification then eliminates.

A compound factor (a parenthesised sum raised to a power, a builtin's argument)
whose terms reach differentiated tensors more than once can instead have its
cotangent stored in a statement of its own, ``<stmt>_part_bar``, over the
indices the factor uses: ``g[i] = 2 * wt[i] * (x[i + 1] - x[i])`` once, then
``x_bar[k] = [k >= 1] * g[k - 1] - [k + 1 < n] * g[k]``, where multiplying the
cotangent out would evaluate the other factors once per monomial.  Which of the
two is cheaper shows only after simplification, so ``vjp_candidates`` gives
both and the driver keeps the cheaper (``driver.transpose_by_cost``).
"""
from __future__ import annotations

from itertools import combinations

from ..builtins import BUILTINS
from ..errors import TLError
from ..ssa import build as B
from ..ssa.ir import (Access, Affine, Apply, Gather, Group, IdxCmp, IndexVar, Param, Program,
                      Reduce, SizeValue, Stmt, Term, ValCmp)
from ..ssa.build import norm_cmp
from ..ssa.names import fresh, position, rewind_past, rewind_to, unique_name
from ..ssa import traverse as T
from ..ssa.traverse import UnknownNode, index_names, statement_reads, substitute_term
from ..bounds import size_facts
from ..opt.simplify import elimination_steps, solve_unit
from ..ssa.recur import group_of, order_statements
from . import chain
from .forward import all_names, check_wrt, common_divisor, zero_stmt
from .rules import (alone_where_nonzero, is_own_derivative, output_of, partials,
                    quotient_partial, reduction_partial, stored_calls, with_powers_added)

INDEX_POOL = ("k", "l", "p", "q", "r", "s", "t", "u", "v", "w", "a", "b", "c", "e", "g", "h")


def program_index_names(prog: Program) -> set[str]:
    names = set()
    for s in prog.stmts:
        names |= {n for n, _ in s.indices}
        names |= index_names(s.body)
    return names


class Transposer:
    def __init__(self, prog: Program, needs: set[str]):
        self.prog = prog
        self.needs = needs                # tensors whose adjoint we want contributions to
        self.shapes = prog.shapes()
        self.contrib: dict[str, list[Term]] = {}
        self.targets: dict[str, tuple] = {}   # name -> adjoint generator indices
        # store(indices, body) -> name: adds a statement to the derivative (None:
        # every cotangent is multiplied into the terms it reaches)
        self.store = None
        # prefix and suffix products of many-factor terms (see ad/chain.py), or None
        self.products = None
        # While a recurrence group is transposed: its members and leading indices,
        # and the names of the leading indices in the terms being transposed.
        self.group = None
        self.steps: frozenset = frozenset()
        self.facts = size_facts(prog)

    def target_indices(self, name: str) -> tuple:
        """Fresh generator names for name's adjoint (the supply's: bound nowhere else)."""
        if name not in self.targets:
            dims = self.shapes[name][1]
            self.targets[name] = tuple((fresh(INDEX_POOL[k % len(INDEX_POOL)]), d)
                                       for k, d in enumerate(dims))
        return self.targets[name]

    def depends(self, f) -> bool:
        if isinstance(f, Access):
            return f.name in self.needs
        if isinstance(f, Apply):
            return any(self.body_depends(a) for a in f.args)
        if isinstance(f, Group):
            return self.body_depends(f.body)
        if isinstance(f, SizeValue):
            return False
        if isinstance(f, Reduce):
            return self.body_depends(f.body)      # a filter's derivative is zero
        raise UnknownNode("factor", f)

    def body_depends(self, body) -> bool:
        return any(self.depends(f) for t in body for f, _ in t.factors)

    def term(self, t: Term, cot, bound: tuple, known=(), held=None, itself=None):
        """Send cotangent `cot` (a body over `bound`) back through term t.

        `known`: builtin outputs already stored (see rules.stored_calls); they can
        only be t's own factors, so the terms of arguments are sent back without.
        `held`: a factor (f, p) whose adjoint the caller sends itself (see
        `divisor_adjoint`).  `itself`: (a read of the statement t is a term of, at
        t's point, the statement's terms), for a divisor's partial that reads the
        quotient (rules.quotient_partial)."""
        bound2 = bound + t.sums
        scope = {n for n, _ in bound2}
        dependent = [k for k, (f, p) in enumerate(t.factors)
                     if self.depends(f) and (f, p) != held]
        parts = chain.partials(t, dependent, bound2, scope, self.products, cot=cot)
        alone = itself is not None and parts is None and alone_where_nonzero(
            t, itself[1], self.facts.with_ranges(bound))
        for k in dependent:
            f, p = t.factors[k]
            quotient = quotient_partial(t, k, itself[0]) if alone else None
            if parts is not None:
                mult = parts[0][k]            # multiplied by cot already
            elif quotient is not None:
                mult = B.mul(quotient, cot, scope)
            else:
                mult = B.mul(B.partial_of_term(t, k, scope), cot, scope)
            if isinstance(f, Access):
                self.emit(f, mult, bound2)
            elif isinstance(f, Apply):
                own = p != 1 and is_own_derivative(f)
                for arg, part in zip(f.args, partials(f, known)):
                    if self.body_depends(arg):
                        m = B.mul(mult, part, scope)
                        self.body(arg, with_powers_added(m, f) if own else m, bound2, t.pred)
            elif isinstance(f, Group):
                self.body(f.body, mult, bound2, t.pred)
            elif isinstance(f, Reduce):
                # red[j](e) sends w(j) * cot to each entry e(j) (reduction_partial);
                # a max's cotangent divided by its count of ties may be stored once
                over, weight, entry, inverse = reduction_partial(f, known, split=True)
                cot_f, at = mult, bound2
                if inverse is not None:
                    cot_f = B.mul(mult, inverse, scope)
                    # over the indices f uses and those its stored value is read at
                    used = T.free_index_names(f) | T.index_names(output_of(f, known))
                    stored = self.shared_cotangent((), cot_f, bound2, t.pred, used=used)
                    if stored is not None:
                        cot_f, at = stored
                inner = {n for n, _ in at} | {n for n, _ in over}
                self.body(entry, B.mul(cot_f, weight, inner), at + over, t.pred)
            else:
                raise UnknownNode("factor", f)

    def body(self, body, cot, bound: tuple, pred: tuple):
        """Send `cot` back through every term of a compound factor's body.

        When it leads back to differentiated tensors in several places (several
        terms, or several factors of one: `tanh(x[i] * y[i])`), each would
        receive its own copy of `cot`, and the copies multiply out into
        monomials (the adjoint of `(x[i + 1] - x[i]) ** 2` evaluated twice per
        use of x).  Instead `cot` is stored once, as the adjoint of the body
        seen as a tensor over the indices it uses (summed over the rest), and
        each term receives a read of it."""
        shared = self.shared_cotangent(body, cot, bound, pred)
        if shared is None:
            for u in body:
                self.term(u, cot, bound)
            return
        cot, bound = shared
        for u in body:
            self.term(u, cot, bound)

    def shared_cotangent(self, body, cot, bound: tuple, pred: tuple, used=None):
        """(a read of a new statement holding `cot`, the indices it is read at), or
        None when `cot` is better sent to the terms of `body` as it is.  `used`: the
        indices to store it over (a reduction's free indices), in place of the
        indices `body` uses when it reaches more than one of its terms."""
        if self.store is None:
            return None
        dependent = [u for u in body if any(self.depends(f) for f, _ in u.factors)]
        given = used is not None
        if used is None:
            if sum(1 for u in dependent for f, _ in u.factors if self.depends(f)) < 2:
                return None           # one use: the cotangent reaches one term, once
            used = T.index_names(Group(body))
        inner = [(n, d) for n, d in bound if n in used]
        outer = [(n, d) for n, d in bound if n not in used]
        names = {n for n, _ in inner}
        if self.group is not None and not self.steps <= names:
            # Inside a recurrence group the stored cotangent is a member of the adjoint
            # group, computed step by step: it must range over the steps.
            return None
        # The body's reads are proven in range under the term's brackets on its
        # own indices; a bracket that ties them to the others cannot go with them.
        if any(T.index_names(a) & names and T.index_names(a) - names for a in pred):
            return None
        gens = tuple((fresh(n), d) for n, d in inner)
        sums = tuple((fresh(n), d) for n, d in outer)
        rename = {n: Affine.of(IndexVar(m)) for (n, _), (m, _) in zip(inner + outer, gens + sums)}
        held = []
        for u in cot:
            v = substitute_term(u, rename)
            held.append(Term(v.coeff, sums + v.sums, v.pred, v.factors))
        name = self.store(gens, B.canon_body(held))
        read = Access(name, tuple(Affine.of(IndexVar(n)) for n, _ in inner))
        # `cot` is a strong zero where the term's brackets are false; a read of it
        # times a factor that is inf or NaN there would not be, so the brackets go
        # with every term that multiplies the read by more than a constant.
        plain = not given and all(not u.sums and len(u.factors) == 1
                                  and isinstance(u.factors[0][0], Access)
                                  and u.factors[0][1] == 1 for u in dependent)
        keep = () if plain else tuple(a for a in pred if T.index_names(a) <= names)
        if not plain and may_be_singular(dependent):
            # So do the brackets of `cot` itself (a filtered logsumexp's weights are
            # zero where the filter is false, and log(x)' is inf there), where a
            # partial can be inf or NaN at a finite point (value brackets cost a read).
            finite_only = not may_be_singular(dependent, at_finite_points=True)
            keep += tuple(a for a in cotangent_support(cot, inner, self.facts)
                          if a not in keep and (not finite_only
                                                or _at_the_element(a, names, False)))
        return B.canon_body([Term(1.0, (), keep, ((read, 1.0),))]), tuple(inner)

    def emit(self, f: Access, mult, bound: tuple):
        gens = self.target_indices(f.name)
        eqs = tuple(norm_cmp("==", Affine.of(IndexVar(g)), a) for (g, _), a in zip(gens, f.idx))
        lst = self.contrib.setdefault(f.name, [])
        inside = self.group is not None and f.name in self.group.members
        for m in mult:
            t = Term(m.coeff, bound + m.sums, eqs + m.pred, m.factors)
            if inside:
                t = self.step_back(t, f, gens)
                if t is None:
                    continue
            lst.append(t)

    def step_back(self, t: Term, f: Access, gens: tuple) -> Term | None:
        """A contribution from one member of a recurrence group to another (or
        itself), the read f = x[t + c, ...] transposed: the equalities on the
        leading indices are solved at once, so the adjoint reads the reader's
        cotangent at ``k - c`` (the step the read came from) and is itself a
        recurrence running the other way (None: the contribution is empty)."""
        for p in range(self.group.lead):
            v = next(iter(f.idx[p].index_vars()))
            expr = Affine.of(IndexVar(gens[p][0])) - (f.idx[p] - Affine.of(IndexVar(v)))
            atom = norm_cmp("==", Affine.of(IndexVar(gens[p][0])), f.idx[p])
            if atom not in t.pred:
                continue
            t = solve_unit(t, atom, v, expr, self.facts)
            if t is None:
                return None
        return t


def divisor_adjoint(tr: Transposer, name: str, gens: tuple, terms: tuple, cot):
    """When a factor f ** p (p < 0) of every term of statement `name`, some of which
    sum, is a differentiated tensor read at the statement's own indices
    (forward.common_divisor), send f its adjoint p * cot * s / f, reading the
    statement s, and return (f, p) for the terms to leave out; None otherwise.

    By the product rule term by term, f's adjoint would be the cotangent times every
    term divided by f once more: each term again, or each point of a term's sums
    again (a row's scatter sum over a coordinate list divided by the row's degree
    sums the degree's adjoint over the row's entries), where s holds their sum."""
    if not any(t.sums for t in terms):
        # (terms without sums: f's adjoint is one term per term at the statement's
        # points either way, and multiplied out it may be a contraction of adjoints
        # stored already, neuralsort's temperature)
        return None
    held = common_divisor(Stmt(name, gens, terms), tr.needs)
    if held is None:
        return None
    f, p = held
    scope = {n for n, _ in gens}
    itself = Access(name, tuple(Affine.of(IndexVar(g)) for g, _ in gens))
    partial = B.canon_body([Term(p, (), (), ((f, -1.0), (itself, 1.0)))])
    tr.emit(f, B.mul(partial, cot, scope), gens)
    return held


def may_be_singular(body, at_finite_points: bool = False) -> bool:
    """Can a partial derivative of `body` be inf or NaN where its reads are finite?
    A builtin's whose slope is unbounded (sqrt' and log' at 0, exp' overflowing), or a
    negative or fractional power's (`1 / x` at 0); a polynomial in reads, sums and
    the reductions of one (a logsumexp's softmax weights, a maximum's tie
    indicator) and the bounded builtins of one have finite partials.  With
    `at_finite_points`, only where the partial is inf at a finite point such as 0:
    a builtin whose slope only overflows (exp) counts as bounded."""
    for t in body:
        for f, p in t.factors:
            if p < 0 or not float(p).is_integer():
                return True
            if isinstance(f, Apply):
                b = BUILTINS[f.fn]
                if not (b.bounded_slope or at_finite_points and b.slope_overflows_only) \
                        or any(may_be_singular(a, at_finite_points) for a in f.args):
                    return True
            elif isinstance(f, Group) and may_be_singular(f.body, at_finite_points):
                return True
            elif isinstance(f, Reduce) and may_be_singular(f.body, at_finite_points):
                return True
    return False


# An adjoint whose terms share no bracket is read under the disjunction of theirs
# when it has at most this many alternatives (each is tested per element).
MAX_SUPPORT_ALTERNATIVES = 4


def cotangent_support(body, gens: tuple, facts, reads: bool = True,
                      known: dict | None = None) -> tuple:
    """Brackets on the generators `gens` outside which the adjoint `body` is
    zero: those every term of it holds once its equalities are solved (`x_bar[k, l]
    = sum[i, j]([i == k and j == l and i < j] * ...)` holds [k < l]), or when they
    share none, the disjunction of each term's own.

    The adjoint is a strong zero there, since nothing read the tensor there; but
    stored, it is a plain 0.0, and the chain rule multiplies it by the partials of
    the tensor's own body, which may be inf or NaN exactly where the function's
    brackets kept them out (sqrt' at 0 on the diagonal of a distance matrix read
    under [i < j]).  Read under these brackets, the product is a strong zero again,
    so the derivative of a term the function multiplies by a false bracket is 0.
    Brackets that read tensors (labels, values) only with `reads`: each costs a read
    per element of every term that reads the adjoint, so reverse mode pays it only
    where a partial can be inf at a finite point (`may_be_singular`), not where it
    can only overflow (an index bracket costs no read and is kept for both).
    `known` maps adjoints to (generator names, their brackets of this kind): a term
    that reads one of them at its own indices holds its brackets too (`sl_arg_bar[l]
    = sl[l] * sl_bar[l]` is zero where sl_bar is)."""
    names = {g for g, _ in gens}
    facts = facts.with_ranges(gens)
    alts = []
    for u in body:
        t = u
        while t is not None:
            steps = elimination_steps(t, facts)
            if not steps:
                break
            t = steps[0]
        if t is None:
            continue                    # a term shown zero guards nothing
        pred = t.pred + _read_supports(t, known) if known else t.pred
        mine = tuple(a for a in pred if _at_the_element(a, names, reads))
        if not mine:
            return ()                   # a term that may be non-zero anywhere
        if mine not in alts:
            alts.append(mine)
    if not alts:
        return ()
    common = tuple(a for a in alts[0] if all(a in alt for alt in alts[1:]))
    if common or len(alts) > MAX_SUPPORT_ALTERNATIVES \
            or not all(any(a.__class__ is not IdxCmp or _reads_labels(a) for a in alt)
                       for alt in alts) \
            or any(_complementary(a, b) for (a,), (b,) in combinations(
                [alt for alt in alts if len(alt) == 1], 2)):
        return common
    # no bracket common to every term, each under its own label or value bracket: the
    # adjoint is zero where all of theirs fail (a tensor read under [ty[i] == 0] by one
    # term and under [ty[i] == 1] by another is read under [ty[i] == 0 or ty[i] == 1]).
    # (Index brackets alone are left out: the cases of a recurrence's first row and
    # column, [i == 0], [i >= 1 and j == 0], ..., together cover every element, which
    # the disjunction would test at every element for nothing; so do a bracket and its
    # complement, the two branches of a Huber loss, [m <= d] and [m > d].)
    either = B.any_of(alts)
    return () if either is True or either is False else (either,)


_COMPLEMENT = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}


def _complementary(a, b) -> bool:
    """Is bracket b the negation of bracket a, as written (so one of them holds at
    every element)?"""
    if a.__class__ is IdxCmp and b.__class__ is IdxCmp:
        return B.negate_atom(a) == b or B.negate_atom(b) == a
    if a.__class__ is ValCmp and b.__class__ is ValCmp:
        op = _COMPLEMENT[a.op]
        return ((b.op, b.left, b.right) == (op, a.left, a.right)
                or (b.op, b.left, b.right) == (B.MIRRORED_OP[op], a.right, a.left))
    return False


def _reads_labels(atom: IdxCmp) -> bool:
    return any(x.__class__ is Gather for x, _ in atom.aff.terms)


def _read_supports(t: Term, known: dict) -> tuple:
    """The brackets of the adjoints in `known` that term t reads, at the indices it
    reads them."""
    out = ()
    for f, p in t.factors:
        if f.__class__ is Access and f.name in known and p > 0:
            gens, atoms = known[f.name]
            guard = substitute_term(Term(1.0, (), atoms, ()), dict(zip(gens, f.idx)))
            out += guard.pred
    return out


def _at_the_element(atom, names: set, reads: bool) -> bool:
    """Can `atom`, a bracket of an adjoint's term, be tested at one element of the
    adjoint: does it use some of the generators `names` and no other index, and hold
    no sum or reduction?  Index brackets, label brackets (`[c[k] == 0]`, the label read
    at the element) and value brackets (`[x[k] > 0.0]`, a maximum's tie indicator
    `[e[k, l] == r[k]]`) alike: a false one is as much a strong zero as the others."""
    if atom.__class__ is IdxCmp:
        used = atom.aff.index_vars()
        return bool(used) and used <= names and (reads or not _reads_labels(atom))
    if not reads:
        return False
    used = index_names(atom)
    if not used or not used <= names:
        return False
    return not any(n.__class__ is Reduce or n.__class__ is Term and n.sums
                   for n in T.iter_nodes(atom))


def vjp_program(prog: Program, wrt, *, seed: str = "param", name: str | None = None,
                keep_outputs: bool = False, share: bool = False,
                products: bool = False) -> Program:
    """Reverse mode.

    seed="param": a cotangent parameter ``d_out`` is appended (vjp).
    seed="one":   the output must be a scalar; its cotangent is 1 (grad).
    keep_outputs: the primal outputs come first (value_and_grad).
    share:        the cotangent of a compound factor is stored once for all the
                  terms it reaches (see `Transposer.body`).
    products:     the partials of terms with three or more differentiated factors
                  are built from stored prefix and suffix products (ad/chain.py).
    """
    return _vjp(prog, wrt, seed, name, keep_outputs, share, products)[0]


def vjp_candidates(prog: Program, wrt, **how) -> list[Program]:
    """The reverse-mode programs to choose from: cotangents multiplied out; when
    some compound factor's cotangent reaches several terms, stored once; and when
    some term has three or more differentiated factors, the latter with partials
    from prefix and suffix products.  All are built from the same position of the
    name supply (only one is kept)."""
    start = position()
    shared, stored = _vjp(prog, wrt, share=True, **how)
    out = [shared]
    ends = [position()]
    if stored:
        rewind_to(start)
        out.insert(0, _vjp(prog, wrt, share=False, **how)[0])
        ends.append(position())
    rewind_to(start)
    product, stored2 = _vjp(prog, wrt, share=True, products=True, **how)
    if stored2 > stored:
        out.append(product)
        ends.append(position())
    if how.get("seed", "param") == "param" and prog.returns_scalar():
        rewind_to(start)
        out.append(_vjp(prog, wrt, share=True, scale_last=True, **how)[0])
        ends.append(position())
    rewind_past(ends)
    return out


def _vjp(prog: Program, wrt, seed: str = "param", name: str | None = None,
         keep_outputs: bool = False, share: bool = False,
         products: bool = False, scale_last: bool = False,
         in_groups: bool = True) -> tuple[Program, int]:
    """(the reverse-mode program, how many statements it stores).

    `in_groups` (with `share`): a cotangent several terms of a recurrence member
    share is stored as a member of the adjoint group too.  Not for a gradient that is
    differentiated further: forward mode through such a member makes the Hessian's
    steps dearer (a Sinkhorn Hessian 24 -> 29 K m^2 n^2) than the gradient's saving.

    `scale_last` (a scalar output's vjp): the cotangent d_out is a scalar factor of
    every term of every adjoint, so the adjoints are the gradient's, seeded with 1,
    and each parameter's cotangent is d_out times its gradient at the end.  Seeded
    with d_out, the factor is multiplied in once per term and loop iteration:
    `sum[s](w[y[s]] * w[x[s]])` has two scatter sums over s in w's adjoint, and each
    multiplies by d_out per s where the scaled gradient multiplies once per entry
    of w."""
    wrt = check_wrt(prog, wrt, what="grad" if seed == "one" else "vjp")
    if len(prog.outputs) != 1:
        raise TLError(f"{'grad' if seed == 'one' else 'vjp'}: {prog.name} returns "
                      f"{len(prog.outputs)} values; differentiate a function with one output")
    out = prog.outputs[0]
    shapes = prog.shapes()
    out_dims = shapes[out][1]
    if seed == "one" and out_dims:
        raise TLError(f"grad: {prog.name} returns a tensor of shape "
                      f"[{', '.join(map(str, out_dims))}]; grad needs a scalar output "
                      "(use vjp for tensor outputs)")
    used = all_names(prog)
    params = list(prog.params)

    # Which tensors lie on a path from wrt to the output?  (A recurrence group
    # reads its later members: repeat until nothing changes.)
    reach = set(wrt)
    back = {out}
    while True:
        size = len(reach) + len(back)
        for s in prog.stmts:
            if any(n in reach for n in statement_reads(s)):
                reach.add(s.name)
        for s in reversed(prog.stmts):
            if s.name in back:
                back |= statement_reads(s)
        if len(reach) + len(back) == size:
            break
    needs = reach & back

    tr = Transposer(prog, needs)
    adj_name: dict[str, str] = {}

    def adjoint_name(n):
        if n not in adj_name:
            adj_name[n] = unique_name(f"{n}_bar", used)
            used.add(adj_name[n])
        return adj_name[n]

    if seed == "param":
        d_out = unique_name("d_out", used)
        used.add(d_out)
        params.append(Param(d_out, "f64", out_dims))
    stmts = list(prog.stmts)
    adj_stmts = []
    # adjoint -> (its generators' names, the brackets outside which it is zero)
    supports: dict = {}
    owner = [out]
    stored = []

    def store(indices, body):
        part = unique_name(f"{owner[0]}_part_bar", used)
        used.add(part)
        adj_stmts.append(Stmt(part, indices, body))
        stored.append(part)
        # A stored cotangent is zero where its terms' brackets are false, as an adjoint
        # is: an adjoint that reads it at its own indices (a plain copy, which keeps no
        # bracket) is zero there too, and is read under those brackets where its
        # partials can be inf (sqrt' at a point the function's bracket left out).
        support = cotangent_support(body, indices, tr.facts, known=supports)
        if support:
            supports[part] = (tuple(g for g, _ in indices), support)
        return part
    if share:
        tr.store = store
    if products:
        def emit(indices, body):
            part = unique_name(f"{owner[0]}_prod", used)
            used.add(part)
            adj_stmts.append(Stmt(part, indices, body))
            stored.append(part)
            return part
        # the stored products may read the cotangents too (chain.partials carries a
        # term's cotangent in its prefix products): d_out and each adjoint statement
        # as it is made
        tr.products = chain.ProductStore(Program(prog.name, tuple(params), prog.stmts,
                                                 prog.outputs, prog.tuple_return), emit)

    def transpose_group(g):
        """The adjoints of a recurrence group's members: every member's body is
        transposed with its cotangent before any adjoint is complete, since they
        read each other (the contributions between members step the other way,
        see Transposer.step_back).  A cotangent several terms share is stored apart
        only over the steps (a member of the adjoint group, computed step by step
        with the others: Transposer.shared_cotangent); prefix and suffix products
        are not stored inside a group."""
        members = [m for m in g.members if m in needs]
        if not any(m in tr.contrib for m in members):
            return
        tr.group = g
        keep_products, tr.products = tr.products, None
        keep_store = tr.store
        if not in_groups:
            tr.store = None
        bars = []
        for m in reversed(members):
            st = prog.stmt(m)
            bar = adjoint_name(m)
            bars.append((st, tr.target_indices(m), bar))
            # A member may read itself: its terms are transposed over indices of
            # their own, apart from the generators its adjoint is defined over.
            gens = tuple((fresh(n), d) for n, d in tr.target_indices(m))
            rename = {n: Affine.of(IndexVar(q)) for (n, _), (q, _) in zip(st.indices, gens)}
            cot = B.factor_body(Access(bar, tuple(Affine.of(IndexVar(q)) for q, _ in gens)))
            terms = tuple(substitute_term(t, rename) for t in st.body)
            known = stored_calls(st.name, gens, terms)
            tr.steps = frozenset(n for n, _ in gens[:g.lead])
            # (a divisor's partial reads the quotient in a recurrence's steps only:
            # outside one, the multiplied-out partial may separate into contractions
            # of fewer indices, which a read of the statement would tie together)
            itself = (Access(st.name, tuple(Affine.of(IndexVar(q)) for q, _ in gens)), terms)
            for t in terms:
                tr.term(t, cot, gens, known, itself=itself if share else None)
        tr.group, tr.steps = None, frozenset()
        tr.products, tr.store = keep_products, keep_store
        for st, gens, bar in bars:
            body = B.canon_body(tr.contrib.pop(st.name, []))
            adj_stmts.append(Stmt(bar, gens, body, st.span) if body
                             else zero_stmt(bar, st.dims))

    if out in needs:
        # (When the output is a parameter itself, this seed is its whole adjoint.)
        gens = tr.target_indices(out)
        if seed == "param" and not scale_last:
            cot_body = B.factor_body(Access(d_out, tuple(Affine.of(IndexVar(g)) for g, _ in gens)))
        else:
            cot_body = B.const(1.0)
        tr.contrib[out] = [Term(t.coeff, (), t.pred, t.factors) for t in cot_body]
    groups = group_of(prog)
    for s in reversed(prog.stmts):
        if s.name in groups:
            g = groups[s.name]
            if s.name == g.members[-1]:
                owner[0] = s.name
                transpose_group(g)
            continue
        if s.name not in needs or s.name not in tr.contrib:
            continue
        gens = tr.target_indices(s.name)
        body = B.canon_body(tr.contrib.pop(s.name))
        if not body:
            continue
        bar = adjoint_name(s.name)
        adj_stmts.append(Stmt(bar, gens, body, s.span))
        if tr.products is not None:
            tr.products.extra.append(adj_stmts[-1])
        # Express s's terms over the adjoint's generator names, then transpose.
        rename = {n: Affine.of(IndexVar(g)) for (n, _), (g, _) in zip(s.indices, gens)}
        cot = B.factor_body(Access(bar, tuple(Affine.of(IndexVar(g)) for g, _ in gens)))
        terms = tuple(substitute_term(t, rename) for t in s.body)
        # Where the adjoint is zero, whether or not its reads are guarded by it here: an
        # adjoint that reads this one (through exp, whose reads are not guarded by
        # labels) is zero there too, and may need the brackets where its partials can
        # be inf at a finite point.
        support = cotangent_support(body, gens, tr.facts, known=supports)
        if support:
            supports[bar] = (tuple(g for g, _ in gens), support)
        if support and may_be_singular(terms):
            names = {g for g, _ in gens}
            if not may_be_singular(terms, at_finite_points=True):
                support = tuple(a for a in support if _at_the_element(a, names, False))
            if support:
                cot = B.canon_body([Term(1.0, (), support, cot[0].factors)])
        known = stored_calls(s.name, gens, terms)
        owner[0] = s.name
        held = divisor_adjoint(tr, s.name, gens, terms, cot) if share else None
        for t in terms:
            tr.term(t, cot, gens, known, held)
    outs = []
    for w in wrt:
        gens = tr.target_indices(w)
        body = B.canon_body(tr.contrib.pop(w, []))
        bar = adjoint_name(w)
        if scale_last and body:
            unscaled = unique_name(f"{w}_grad", used)
            used.add(unscaled)
            adj_stmts.append(Stmt(unscaled, gens, body))
            read = Access(unscaled, tuple(Affine.of(IndexVar(g)) for g, _ in gens))
            body = B.canon_body([Term(1.0, (), (), ((Access(d_out, ()), 1.0), (read, 1.0)))])
        if body:
            adj_stmts.append(Stmt(bar, gens, body))
        else:
            adj_stmts.append(zero_stmt(bar, shapes[w][1]))
        outs.append(bar)
    outputs = (prog.outputs if keep_outputs else ()) + tuple(outs)
    suffix = "grad" if seed == "one" else "vjp"
    result = Program(name or f"{prog.name}_{suffix}", tuple(params), tuple(stmts + adj_stmts),
                     outputs, keep_outputs or len(outs) > 1)
    if groups:
        # An adjoint group's members read each other: put them in step order.
        result = order_statements(result)
    return result, len(stored)


__all__ = ["vjp_program", "vjp_candidates", "SizeValue"]
