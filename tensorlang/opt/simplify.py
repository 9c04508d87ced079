"""Simplification: small named rules, each a pure Program -> Program pass,
run to a fixed point.  This is where derivatives become cheap.

Rules (each docstring states the law it uses):

* ``eliminate_equality_brackets``  sum_j [j == a] e  ->  e{j := a} [0 <= a < n_j]
                                   (which equality, which index: the cheapest by cost)
* ``merge_like_terms``             c1 t + c2 t  ->  (c1 + c2) t, up to renaming of sums
* ``collapse_free_sums``           sum_j e  ->  n_j * e   when e does not use j
* ``drop_implied_guards``          [p] e -> e  when the index ranges and the other brackets imply p
* ``fold_constants``               builtins of constants -> constants
* ``propagate_copies``             a statement that is a constant or a plain copy is replaced by it;
                                   a scaled copy when no costlier; an output that copies
                                   a statement takes its place (derivatives also substitute
                                   copies under brackets and pointwise arguments:
                                   inline_bracketed_copies, inline_pointwise_statements)
* ``share_common_statements``      two statements with equal bodies -> one, also up to the
                                   order of their indices and the symmetries of what they read
* ``merge_symmetric_terms``        c1 t + c2 u -> (c1 + c2) t, u equal to t up to the symmetries
                                   of the statements both read
* ``inline_tie_weights``           a statement read only as the weight of a sum over a maximum's
                                   ties is substituted there when cheaper (see tensorlang/ties.py)
* ``reuse_computed_values``        a builtin call a statement already stores -> a read of it
* ``share_powers``                 pow(x, e) and pow(x, e - 1) -> one stored power, the second
                                   divided by x, where x cannot be 0, when cheaper
* ``reuse_stored_products``        a product of factors a statement stores, inside another
                                   term -> a read of it times the rest, when the finished
                                   program is cheaper
* ``store_repeated_calls``         a builtin of one read, or of an elementwise expression of
                                   several (also at shifted indices), evaluated in several places
                                   -> stored once, when cheaper
* ``inline_sparse_statements``     a statement with a diagonal term is substituted into its
                                   readers when the cost polynomial drops
* ``remove_dead_statements``       statements no output depends on are dropped
* ``hoist_nested_reductions``      a sum under a builtin, a power or a comparison becomes
                                   a statement (see opt/hoist.py)
* ``hoist_invariant_factors``      a builtin or powered group that uses only some of its term's
                                   loop indices becomes a statement over those (opt/hoist.py)
* ``hoist_reductions``             a max / min / logsumexp that is not its statement's whole
                                   body becomes a statement over the indices it uses
                                   (opt/hoist.py)
* ``factor_common_products``       F * a + F * b -> F * h, h = a + b a new statement, when
                                   cheaper (see opt/factor.py)
* ``order_contractions``           a product summed over shared indices becomes a tree of
                                   pairwise contractions (statements) when cheaper; independent
                                   sums are its simplest case (see opt/contract.py)
* ``order_recurrence_steps``       the same for a recurrence's step where it saves a constant
                                   factor only (late; not before a derivative)

No rule inlines a statement into its consumers (beyond constants and copies):
merging intermediates eagerly is what turned O(n^2) programs into O(n^3) ones in
the earlier prototype, so sharing is kept.
"""
from __future__ import annotations

import functools
import itertools
import math

import numpy as np
from collections import Counter
from dataclasses import dataclass

from ..builtins import numpy_impl
from ..bounds import Facts, size_facts
from ..costs import (Cost, CostModel, nowhere_costlier, program_cost, rank_costs, rewrite_cost,
                     statementwise)
from ..ssa import build as B
from .engine import Rule, changed_statements, cheaper, cheaper_cost, run_rules
from ..memo import Memo
from ..ssa.names import _rename_body, advance_to, fresh, position, unique_name
from ..ssa.recur import group_of
from ..ssa import traverse as T
from ..ssa.ir import (Access, Affine, Apply, Gather, Group, IdxCmp, IndexVar, Program, Reduce,
                      Rel, SizeValue, Stmt, Term, body_const_value, body_key, dim_key, order_key,
                      ValCmp, term_shape_key, written_at)



# ------------------------------------------------------------ generic traversal
def map_terms(prog: Program, fn, remember=None) -> Program:
    """Apply fn(term, ranges, facts) -> list[Term] to every term, innermost first.

    Statements (and subtrees) that fn leaves alone are returned as they were,
    so an unchanged program comes back as the same object.  `remember` names a
    pure, module-level fn (or a tuple naming a pure fn and the values it was made
    from) whose results are kept per statement (see ``per_statement``)."""
    def rewrite(s: Stmt, base: Facts) -> Stmt:
        ctx = (dict(s.indices), base.with_ranges(s.indices))
        body = T.map_terms_in_body(s.body, at, ctx, enter, B.canon_body)
        return s if body is s.body else Stmt(s.name, s.indices, body, s.span)

    def at(t, ctx):
        return fn(t, ctx[0], ctx[1])

    def enter(ctx, t):
        ranges, facts = ctx
        return {**ranges, **dict(t.sums)}, facts.with_ranges(t.sums).with_pred(t.pred)

    return per_statement(prog, rewrite, remember)


# Results of statement-local rules by (rule, statement, the program's size symbols).
# The engine runs every rule in every round, over statements most of which no rule
# has touched since the last one, and a trial (inline_sparse_statements, reverse
# mode's candidates) simplifies copies of programs it has mostly seen already.
_STATEMENT_RESULTS = Memo(100_000)
_UNCHANGED = object()


def per_statement(prog: Program, rewrite, remember=None) -> Program:
    """rewrite(stmt, size facts) -> stmt applied to every statement; the same
    program back when no statement changed.

    With `remember` (a name for a rewrite that is a pure function of the statement
    and the size symbols), results are looked up first and kept; a result is kept
    only when computing it took no fresh name from the supply, since a name taken
    once must not appear again in another program built from the same position."""
    sizes = tuple(prog.sizes())
    base = None
    stmts = []
    changed = False
    for s in prog.stmts:
        key = (remember, s, s.span, sizes)      # equal statements of two files differ here
        out = _STATEMENT_RESULTS.get(key) if remember is not None else None
        if out is _UNCHANGED:
            out = s                  # this very object (an equal one may be remembered)
        elif out is None:
            if base is None:
                base = size_facts(prog)
            before = position() if remember is not None else None
            out = rewrite(s, base)
            if before is not None and position() == before:
                _STATEMENT_RESULTS.put(key, _UNCHANGED if out is s else out)
        changed = changed or out is not s
        stmts.append(out)
    if not changed:
        return prog
    return Program(prog.name, prog.params, tuple(stmts), prog.outputs, prog.tuple_return)


# ------------------------------------------------------------ bracket elimination
def _unit_solutions(atom, summed: set[str]):
    """Every (v, expr) such that `atom`, an equality, fixes summed index v as expr
    (v with coefficient +-1 and not in expr)."""
    if not (isinstance(atom, IdxCmp) and atom.op == "=="):
        return []
    out = []
    for var, c in atom.aff.terms:
        if isinstance(var, IndexVar) and var.name in summed and abs(c) == 1:
            rest = Affine.make(atom.aff.const,
                               [(a, k) for a, k in atom.aff.terms if a != var])
            # c*v + rest == 0  ->  v = -rest / c = -c * rest  (c is +-1)
            expr = rest.scale(-c)
            if var.name not in expr.index_vars():
                out.append((var.name, expr))
    return out


def _strided_solutions(atom, t: Term, summed: set[str]):
    """Every (v, q, rest) for q*v == rest with |q| > 1 where every use of v in t is a
    multiple of q*v."""
    if not (isinstance(atom, IdxCmp) and atom.op == "=="):
        return []
    out = []
    for var, c in atom.aff.terms:
        if isinstance(var, IndexVar) and var.name in summed and abs(c) > 1:
            q = abs(c)
            coefs = _coefficients_of(var.name, t, skip=atom)
            if coefs is None or any(k % q for k in coefs):
                continue
            rest = Affine.make(atom.aff.const, [(a, k) for a, k in atom.aff.terms if a != var])
            # c*v + rest == 0  ->  q*v = -sign(c) * rest
            qv = rest.scale(-1 if c > 0 else 1)
            if var.name not in qv.index_vars():
                out.append((var.name, q, qv))
    return out


def _coefficients_of(v: str, t: Term, skip) -> list[int] | None:
    """Every coefficient with which index v appears in t (None if under a builtin)."""
    found: list[int] = []

    def aff(a: Affine):
        for x, c in a.terms:
            if isinstance(x, IndexVar) and x.name == v:
                found.append(c)
            elif isinstance(x, Gather):
                for sub in x.idx:
                    if v in sub.index_vars():
                        found.append(1)   # inside a gather: not a clean multiple

    def atom(x):
        if x is skip:
            return
        if isinstance(x, IdxCmp):
            aff(x.aff)
        elif isinstance(x, Rel):
            for a in x.idx:
                aff(a)
        elif v in T.index_names(x):
            found.append(1)

    for x in t.pred:
        atom(x)
    for f, _ in t.factors:
        if isinstance(f, Access):
            for a in f.idx:
                aff(a)
        elif v in T.index_names(f):
            found.append(1)
    return found


def _scale_var(t: Term, v: str, q: int, qv: Affine) -> Term:
    """Replace every q*k*v in t by k*qv (all uses of v are multiples of q)."""
    def aff(a: Affine) -> Affine:
        acc = Affine(a.const)
        for x, c in a.terms:
            if isinstance(x, IndexVar) and x.name == v:
                acc = acc + qv.scale(c // q)
            else:
                acc = acc + Affine(0, ((x, c),))
        return acc

    def atom(x):
        if isinstance(x, IdxCmp):
            return IdxCmp(x.op, aff(x.aff), x.span, x.mod)
        if isinstance(x, Rel):
            return Rel(x.name, tuple(aff(a) for a in x.idx), x.span)
        return x

    pred = tuple(atom(x) for x in t.pred)
    factors = tuple(((Access(f.name, tuple(aff(a) for a in f.idx), f.span)
                      if isinstance(f, Access) else f), p) for f, p in t.factors)
    return Term(t.coeff, t.sums, pred, factors)


def _guards(expr: Affine, dim, facts: Facts, span=None):
    """[0 <= expr <= dim - 1], leaving out what the facts already imply."""
    out = []
    low = expr
    high = Affine.dim(dim).shift(-1) - expr
    if not facts.proves(low):
        out.append(IdxCmp(">=", low, span))
    if not facts.proves(high):
        out.append(IdxCmp(">=", high, span))
    return out


def _solve_unit(t: Term, atom, v: str, expr: Affine, facts: Facts) -> Term | None:
    """sum_v [v == expr] e -> [0 <= expr < n_v] e{v := expr}; None when it is zero."""
    dims = dict(t.sums)
    sums = tuple((n, d) for n, d in t.sums if n != v)
    rest_pred = tuple(a for a in t.pred if a is not atom)
    body = T.substitute_term(Term(t.coeff, (), rest_pred, t.factors), {v: expr})
    scope_facts = facts.with_ranges(sums).with_pred(body.pred)
    guards = _guards(expr, dims[v], scope_facts, getattr(atom, "span", None))
    return B.canon_term(Term(body.coeff, sums, tuple(guards) + body.pred, body.factors))


def _solve_strided(t: Term, atom, v: str, q: int, qv: Affine, facts: Facts) -> Term | None:
    """sum_v [q v == a] e(q v) -> [q | a] [0 <= a <= q (n_v - 1)] e(a)."""
    dims = dict(t.sums)
    sums = tuple((n, d) for n, d in t.sums if n != v)
    rest_pred = tuple(a for a in t.pred if a is not atom)
    body = _scale_var(Term(t.coeff, (), rest_pred, t.factors), v, q, qv)
    scope_facts = facts.with_ranges(sums).with_pred(body.pred)
    top = Affine.dim(dims[v]).shift(-1).scale(q)
    guards = [IdxCmp("%", qv, None, q)]
    if not scope_facts.proves(qv):
        guards.append(IdxCmp(">=", qv))
    if not scope_facts.proves(top - qv):
        guards.append(IdxCmp(">=", top - qv))
    return B.canon_term(Term(body.coeff, sums, tuple(guards) + body.pred, body.factors))


solve_unit = _solve_unit          # for reverse mode, which solves a recurrence's steps at once


def elimination_steps(t: Term, facts: Facts) -> list:
    """Every term one equality bracket of t gives when solved for one summed index
    (None for a step that shows the term is zero); empty when none is solvable."""
    summed = {n for n, _ in t.sums}
    out = []
    for atom in t.pred:
        for v, expr in _unit_solutions(atom, summed):
            out.append(_solve_unit(t, atom, v, expr, facts))
        for v, q, qv in _strided_solutions(atom, t, summed):
            out.append(_solve_strided(t, atom, v, q, qv, facts))
    return out


# Beyond this many terms explored for one term, each further choice is made
# looking one step ahead instead of at every complete order of eliminations.
ELIMINATION_SEARCH_LIMIT = 64


class _EliminationSearch:
    """Eliminate every solvable equality of a term, choosing by cost.

    When a term has several equalities, or an equality fixes several summed
    indices, the order and the choice decide what loops remain: `[l == p + j]`
    inside `sum[p: n, j: k]` must eliminate p, leaving the k-loop, not j, which
    leaves a loop over n.  Every complete sequence of eliminations is tried (up to
    ELIMINATION_SEARCH_LIMIT terms, then one step at a time) and the final terms
    are compared by their cost where the term stands (`costs.rank_costs`); equal
    costs prefer the term whose remaining sums have the smaller ranges (the
    largest range eliminated first), then the smaller structure key, which is
    blind to the names of summed indices (`alpha_key`).  Nothing here looks at
    an index's name or at the order names put atoms in."""

    def __init__(self, facts: Facts, cost_of):
        self.facts = facts
        self.cost_of = cost_of
        self.seen: dict = {}
        self.explored = 0

    def best(self, t: Term) -> Term | None:
        if t in self.seen:
            return self.seen[t]
        steps = elimination_steps(t, self.facts)
        self.explored += len(steps)
        if not steps:
            out = t
        elif any(u is None for u in steps):
            out = None                         # one exact rewrite shows the term is zero
        elif self.explored > ELIMINATION_SEARCH_LIMIT:
            out = self.best(self.choose(steps))
        else:
            finals = [self.best(u) for u in steps]
            out = None if any(u is None for u in finals) else self.choose(finals)
        self.seen[t] = out
        return out

    def choose(self, terms: list[Term]) -> Term:
        unique = list(dict.fromkeys(terms))
        if len(unique) == 1:
            return unique[0]
        costs = rank_costs([self.cost_of(u) for u in unique])
        loops = rank_costs([_sum_ranges(u.sums) for u in unique])
        keys = [(costs[k], loops[k], alpha_key(u)) for k, u in enumerate(unique)]
        return unique[min(range(len(unique)), key=lambda k: keys[k])]


def _sum_ranges(sums) -> Cost:
    """The product of the ranges of (index, dim) pairs."""
    out = Cost.const(1)
    for _, d in sums:
        out = out * Cost.of_affine(Affine.dim(d))
    return out


def eliminate_equality_brackets_in_term(t: Term, facts: Facts, cost_of) -> list[Term]:
    """sum_v [v == a] e  ->  [0 <= a < n_v] e{v := a}   (and strided: [q | a]).

    The equality must fix a summed index v.  With |coefficient| = 1 the solution
    is substituted everywhere.  With a stride q the index is solved only when
    every use of v is a multiple of q*v; then q*v := a, and the integer guard
    `a % q == 0` keeps exactly the positions the sum over v could reach.  (A
    stride with other uses stays a sum: the loop planner runs it between
    ceil(a / q) and floor(a / q), at most once.)  Which equality, and which
    index, is decided by cost (`_EliminationSearch`); `cost_of(term)` is what
    the term costs where it stands."""
    if not any(isinstance(a, IdxCmp) and a.op == "==" for a in t.pred) or not t.sums:
        return [t]
    out = _EliminationSearch(facts, cost_of).best(t)
    return [] if out is None else [out]


def eliminate_equality_brackets(prog: Program) -> Program:
    """Solve every equality bracket that fixes a summed index (see the term rule)."""
    def rewrite(s: Stmt, base: Facts) -> Stmt:
        model = CostModel(None, base)

        def at(t, ctx):
            facts, gens, enclosing = ctx
            return eliminate_equality_brackets_in_term(
                t, facts, lambda u: model.term_where_it_stands(u, gens, facts,
                                                               _sum_ranges(enclosing)))

        def enter(ctx, t):
            facts, _, enclosing = ctx
            return facts.with_ranges(t.sums).with_pred(t.pred), (), enclosing + t.sums

        ctx = (base.with_ranges(s.indices), s.indices, s.indices)
        body = T.map_terms_in_body(s.body, at, ctx, enter, B.canon_body)
        return s if body is s.body else Stmt(s.name, s.indices, body, s.span)
    return per_statement(prog, rewrite, "eliminate_equality_brackets")


# ------------------------------------------------------------ guards
def drop_implied_guards_in_term(t: Term, ranges: dict, facts: Facts) -> list[Term]:
    """[p] e -> e when p follows from the index ranges and the term's other brackets;
    a term whose index brackets no point of its ranges meets (`[k == -1]` over
    k: n) is 0 and goes (a kernel would solve k from it and test the solution's
    range after using it)."""
    scope = facts.with_ranges(t.sums)
    if scope.with_pred(t.pred).proves(Affine(-1)):
        return []
    kept = list(t.pred)
    for atom in list(t.pred):
        if not isinstance(atom, IdxCmp) or atom.op != ">=":
            continue
        others = Facts(scope.items).with_pred([a for a in kept if a is not atom])
        if others.proves(atom.aff):
            kept.remove(atom)
    if len(kept) == len(t.pred):
        return [t]
    return [Term(t.coeff, t.sums, tuple(kept), t.factors)]


@functools.lru_cache(maxsize=None)
def _keeps_zero(fn: str) -> bool:
    """Does builtin fn map 0 to 0, with finite values on both sides of it (so that its
    derivative there is finite too)?  sin, tan, tanh, erf, log1p, abs; not sqrt."""
    from ..builtins import BUILTINS
    b = BUILTINS.get(fn)
    if b is None or b.arity != 1:
        return False
    with np.errstate(all="ignore"):
        values = [float(b.numpy(np.float64(v))) for v in (0.0, 1e-6, -1e-6)]
    return values[0] == 0.0 and all(math.isfinite(v) for v in values)


def pull_brackets_out_of_calls_in_term(t: Term, ranges: dict, facts: Facts) -> list[Term]:
    """f([p] * a + [p] * b) -> [p] * f(a + b) for a builtin with f(0) = 0 (`_keeps_zero`)
    raised to a positive power, when every term of the argument holds bracket p and p
    tests no index the argument sums.  Naming a step's argument (hoist.
    name_nonlinear_arguments) puts the step's guard into each of its terms, where the
    reads need it, and computing the named argument where it is read brings it into the
    call: `sum[j](sin(-[t >= 1] * th[t - 1, i] + [t >= 1] * th[t - 1, j]))` tests and
    multiplies at every t, where `[t >= 1] * sin(...)` runs from t = 1 (kuramoto's
    gradient, 6 -> 4 T n^2 for the sum)."""
    factors, pulled = [], []
    for f, q in t.factors:
        if f.__class__ is Apply and t.pred:
            f = _without_outer_brackets(f, t.pred)
        if f.__class__ is Apply and q > 0 and len(f.args) == 1 and _keeps_zero(f.fn) \
                and f.args[0]:
            body = f.args[0]
            common = _held_by_every_term(body)
            if common:
                factors.append((Apply(f.fn, (_without_atoms(body, common),)), q))
                pulled += [a for a in common if a not in pulled and a not in t.pred]
                continue
        factors.append((f, q))
    if not pulled and all(a is b for (a, _), (b, _) in zip(factors, t.factors)):
        return [t]
    return [Term(t.coeff, t.sums, t.pred + tuple(pulled), tuple(factors))]


def _without_outer_brackets(call: Apply, pred: tuple) -> Apply:
    """The call with the index brackets of `pred` (its term's) that every term of an
    argument holds dropped from that argument, for any builtin: the term is 0 wherever
    they fail, and is not evaluated there, so inside it they hold.  Differentiating
    `sum[j | j != i](sigmoid(S[j] - S[i]))` names the argument `[i != j] * (S[j] -
    S[i])`, and a derivative that computes it where it reads it again tested the bracket
    twice at every pair."""
    args = []
    for body in call.args:
        common = [a for a in _held_by_every_term(body) if a in pred]
        args.append(_without_atoms(body, common) if common else body)
    return call if all(a is b for a, b in zip(args, call.args)) else Apply(call.fn, tuple(args))


def _held_by_every_term(body) -> list:
    """The index brackets every term of `body` holds, on no index a term sums."""
    if not body:
        return []
    return [a for a in body[0].pred if a.__class__ is IdxCmp
            and all(a in u.pred and not (T.index_names(a) & {n for n, _ in u.sums})
                    for u in body)]


def _without_atoms(body, atoms) -> tuple:
    """`body` with the brackets `atoms` taken out of every term."""
    return B.canon_body([Term(u.coeff, u.sums, tuple(a for a in u.pred if a not in atoms),
                              u.factors) for u in body])


def pull_brackets_out_of_calls(prog: Program) -> Program:
    """See pull_brackets_out_of_calls_in_term."""
    return map_terms(prog, pull_brackets_out_of_calls_in_term, "pull_brackets_out_of_calls")


def drop_implied_guards(prog: Program) -> Program:
    """Guards implied by the index ranges and the other brackets are dropped."""
    return map_terms(prog, drop_implied_guards_in_term, "drop_implied_guards")


# ------------------------------------------------------------ sums
def collapse_free_sums_in_term(t: Term, ranges: dict, facts: Facts) -> list[Term]:
    """sum_j e -> n_j * e when no part of e mentions j."""
    used = T.index_names(Term(1.0, (), t.pred, t.factors))
    free = [(n, d) for n, d in t.sums if n not in used]
    if not free:
        return [t]
    coeff = t.coeff
    factors = list(t.factors)
    for _, d in free:
        if isinstance(d, int):
            coeff *= d
        else:
            factors.append((SizeValue(d), 1.0))
    sums = tuple((n, d) for n, d in t.sums if n in used)
    return [Term(coeff, sums, t.pred, tuple(factors))]


def collapse_free_sums(prog: Program) -> Program:
    """Sums over indices their body does not use become factors of their ranges."""
    return map_terms(prog, collapse_free_sums_in_term, "collapse_free_sums")


# ------------------------------------------------------------ like terms
# A name no program can spell, for the placeholder binders of alpha_key.
_PLACEHOLDER = "\x00s"


def alpha_key(t: Term, prepare=None) -> tuple:
    """A key equal for terms that differ only in the names of their summed indices
    (the coefficient is not part of it).  `prepare`, when given, rewrites the term's
    body (after each renaming of the sums) before it is put in canonical form."""
    if not t.sums or len(t.sums) > 5:
        if prepare is None:
            return term_shape_key(t)
        body = B.canon_term(prepare(t))
        return term_shape_key(body) if body else ()
    best = None
    names = [n for n, _ in t.sums]
    for perm in _dim_sorted_placements(t.sums):
        mapping = {names[k]: Affine.of(IndexVar(f"{_PLACEHOLDER}{perm[k]}"))
                   for k in range(len(names))}
        sums = tuple(sorted(((f"{_PLACEHOLDER}{perm[k]}", d) for k, (_, d) in enumerate(t.sums)),
                            key=lambda nd: nd[0]))
        plain = T.substitute_term(Term(1.0, (), t.pred, t.factors), mapping)
        body = B.canon_term(prepare(plain) if prepare is not None else plain)
        key = term_shape_key(Term(1.0, sums, body.pred, body.factors)) if body else ()
        if best is None or key < best:
            best = key
    return best


def _dim_sorted_placements(sums) -> list[tuple[int, ...]]:
    """The placements (sum k -> placeholder perm[k]) that put the ranges of the
    placeholders in ascending order.  The key compares the sums first, placeholder
    by placeholder with its range, so only these can give the least key: with
    distinct ranges that is one placement where there are len(sums)! (a term of five
    sums over five sizes took 120 canonical forms per key)."""
    order = sorted(range(len(sums)), key=lambda k: dim_key(sums[k][1]))
    runs: list[list[int]] = []
    for k in order:
        if runs and dim_key(sums[runs[-1][0]][1]) == dim_key(sums[k][1]):
            runs[-1].append(k)
        else:
            runs.append([k])
    out = []
    for choice in itertools.product(*(itertools.permutations(run) for run in runs)):
        perm = [0] * len(sums)
        for slot, k in enumerate(k for run in choice for k in run):
            perm[k] = slot
        out.append(tuple(perm))
    return out


def _alpha_signature(t: Term) -> tuple:
    """Cheap and blind to binder names: terms with different signatures are never alike."""
    dims = tuple(sorted(dim_key(d) for _, d in t.sums))
    reads = tuple(sorted((type(f).__name__, getattr(f, "name", getattr(f, "fn", "")), p)
                         for f, p in t.factors))
    return dims, reads, len(t.pred)


def merge_like_terms_body(body) -> tuple:
    """Terms alike up to their sums' names become one term with the summed
    coefficient (a zero sum is dropped by canon_body).  Only terms whose cheap
    signature is shared need the costly alpha_key."""
    signatures = [_alpha_signature(t) for t in body]
    shared = Counter(signatures)
    if all(c == 1 for c in shared.values()):
        return body
    groups: dict[tuple, list[Term]] = {}
    for t, sig in zip(body, signatures):
        groups.setdefault((sig, alpha_key(t) if shared[sig] > 1 else t), []).append(t)
    return B.canon_body([Term(sum(x.coeff for x in ts), ts[0].sums, ts[0].pred, ts[0].factors)
                         for ts in groups.values()])


def merge_like_terms(prog: Program) -> Program:
    """c1 t + c2 t -> (c1 + c2) t, where t and its copy may name their sums differently."""
    def rewrite(s: Stmt, base: Facts) -> Stmt:
        body = _deep_bodies(s.body, merge_like_terms_body)
        return s if body is s.body else Stmt(s.name, s.indices, body, s.span)
    return per_statement(prog, rewrite, "merge_like_terms")


def _deep_bodies(body, fn):
    """fn applied to body and every body nested in it, innermost first."""
    inner = tuple(T.map_term_children(t, lambda b: _deep_bodies(b, fn), T.keep) for t in body)
    if not all(a is b for a, b in zip(inner, body)):
        body = B.canon_body(inner)
    return fn(body)


# ------------------------------------------------------------ constants
def fold_constants_in_term(t: Term, ranges: dict, facts: Facts) -> list[Term]:
    """f(c1, ...) -> f(c1, ...) evaluated; a Group of a constant -> the constant."""
    coeff = t.coeff
    factors = []
    changed = False
    for f, p in t.factors:
        val = None
        if isinstance(f, Apply):
            consts = [body_const_value(a) for a in f.args]
            if all(c is not None for c in consts):
                import numpy as np
                with np.errstate(all="ignore"):
                    val = float(numpy_impl(f.fn)(*[np.float64(c) for c in consts]))
        elif isinstance(f, Group):
            val = body_const_value(f.body)
        if val is not None:
            try:
                v = val ** p
            except (ZeroDivisionError, OverflowError):
                v = None
            if v is not None and isinstance(v, float) and math.isfinite(v) and (val != 0 or p > 0):
                coeff *= v
                changed = True
                continue
        factors.append((f, p))
    if not changed:
        return [t]
    return [Term(coeff, t.sums, t.pred, tuple(factors))]


def fold_constants(prog: Program) -> Program:
    """Builtins of constants and constant groups become numbers."""
    return map_terms(prog, fold_constants_in_term, "fold_constants")


# ------------------------------------------------------------ statements
_READS = Memo(50_000)


def _reads(s: Stmt) -> tuple[frozenset, frozenset]:
    """(tensors s reads, builtins s calls), remembered per statement."""
    def compute():
        nodes = list(T.iter_nodes(s.body))
        return (frozenset(n.name for n in nodes if n.__class__ is Access),
                frozenset(n.fn for n in nodes if n.__class__ is Apply))
    return _READS.compute(s, compute)


def _replace_access(prog: Program, name: str, make) -> Program:
    """Replace every Access of `name` by make(access) (a Body) in all statements."""
    return _replace_accesses(prog, frozenset((name,)), make)


def _replace_accesses(prog: Program, names: frozenset, make) -> Program:
    """Replace every Access of a tensor of `names` by make(access) (a Body) in all
    statements, in one rewrite of each reader."""
    readers = [s for s in prog.stmts if names & _reads(s)[0]]
    if not readers:
        return prog
    if len(readers) < len(prog.stmts):
        # only the readers are rewritten (their context is the same in a program of them)
        part = Program(prog.name, prog.params, tuple(readers), (), False)
        done = {s.name: s for s in _replace_access_in(part, names, make).stmts}
        return Program(prog.name, prog.params, tuple(done.get(s.name, s) for s in prog.stmts),
                       prog.outputs, prog.tuple_return)
    return _replace_access_in(prog, names, make)


def _replace_access_in(prog: Program, names: frozenset, make) -> Program:
    def fix_term(t: Term, ranges, facts):
        hit = any(f.__class__ is Access and f.name in names for f, _ in t.factors)
        if not hit:
            return [t]
        body = (Term(t.coeff, (), t.pred, ()),)
        scope = set(ranges) | {n for n, _ in t.sums}
        for f, p in t.factors:
            if f.__class__ is Access and f.name in names:
                body = B.mul(body, B.power(make(f), p), scope)
            else:
                body = B.mul(body, B.factor_body(f, p), scope)
        return [Term(u.coeff, t.sums + u.sums, u.pred, u.factors) for u in body]
    return map_terms(prog, fix_term)


def propagate_copies(prog: Program) -> Program:
    """A statement whose body is a constant, or a scaled copy c * x[i, j] of another
    tensor, is substituted into its uses.  A plain copy (c = 1) costs nothing where
    it is used; a scaled one adds a multiplication at a use whose term had none, so
    it is substituted only when the program's cost polynomial does not grow.  (Copies
    under brackets are substituted in derivatives: inline_bracketed_copies.)  An
    output that is a plain copy of a statement, possibly transposed (the adjoint of
    an operand that was contracted on its own first), takes that statement's place
    instead.

    Every copy is substituted in one application, in statement order, with the
    result of substituting them one at a time from the first: a chain of thousands
    of copies would otherwise take a round of every rule per copy (and stop at the
    round limit).  After a substitution the scan goes on where it was, since the
    statements before it are as they were, unless the substitution rewrote one of
    them (a recurrence reads later statements) or a reader of a scaled copy that was
    kept for its cost: then it starts again from the first statement."""
    work = _Copies(prog)
    k = 0
    kept: dict[str, frozenset] = {}     # scaled copies kept for cost -> their readers
    outputs = set(prog.outputs)
    while k < len(work.stmts):
        s = work.stmts[k]
        k += 1
        if s is None:
            continue
        if s.name in outputs:
            renamed = _output_takes_over_its_copy(work.program(), s)
            if renamed is not None:
                work, k, kept = _Copies(renamed), 0, {}
            continue
        c = body_const_value(s.body)
        if c is not None and not s.indices:
            rewritten = work.substitute(s, lambda f, c=c: B.const(c), False)
        else:
            copy = _scaled_copy(s)
            if copy is None:
                continue
            scale, src = copy
            rewritten = work.substitute(s, _copy_maker(s, src, scale), scale != 1)
            if rewritten is None:
                kept[s.name] = frozenset(r.name for r in work.readers(s.name))
                continue
        names = {r.name for r in rewritten}
        if any(work.place[n] < work.place[s.name] for n in names) \
                or any(readers & names for readers in kept.values()):
            work, k, kept = _Copies(work.program()), 0, {}
    return work.program()


class _Copies:
    """The program propagate_copies works on: statements are rewritten in place and
    dropped without building a Program for each substitution, and the cost of each
    trial comes from the statements it changes while the program's cost is a sum over
    its statements (costs.rewrite_cost); otherwise trials are costed whole.  Which
    statements read each tensor is kept up to date, so finding the readers of a copy
    does not scan the program either."""

    def __init__(self, prog: Program):
        self.start = prog
        self.stmts: list = list(prog.stmts)       # None where a statement was dropped
        self.place = {s.name: k for k, s in enumerate(prog.stmts)}
        self.readers_of: dict[str, set] = {}
        for s in prog.stmts:
            self._note(s)
        self.built: Program | None = prog
        self.cost = program_cost(prog) if statementwise(prog) else None

    def _note(self, s: Stmt) -> None:
        for n in _reads(s)[0]:
            self.readers_of.setdefault(n, set()).add(s.name)

    def _forget(self, s: Stmt) -> None:
        for n in _reads(s)[0]:
            self.readers_of[n].discard(s.name)

    def program(self) -> Program:
        if self.built is None:
            p = self.start
            self.built = Program(p.name, p.params, tuple(s for s in self.stmts if s is not None),
                                 p.outputs, p.tuple_return)
        return self.built

    def readers(self, name: str) -> list:
        """The statements reading `name`, in program order."""
        places = sorted(self.place[r] for r in self.readers_of.get(name, ()))
        return [self.stmts[k] for k in places]

    def substitute(self, s: Stmt, make, guarded: bool, everywhere: bool = False,
                   within: Budget | None = None) -> dict | None:
        """Every read of statement s replaced by make(access) and s dropped, unless
        `guarded` and that makes the program costlier (`everywhere`: at any of the
        skewed sizes of costs.sample_points too), or, given a budget `within`, unless
        the program's cost then exceeds its bound and grows; its readers, rewritten."""
        readers = self.readers(s.name)
        rewritten = {}
        if readers:
            p = self.start
            part = Program(p.name, p.params, tuple(readers), (), False)
            part = _replace_access_in(part, frozenset((s.name,)), make)
            if within is not None:
                # (a body recomputed in a reader brings its own brackets, which the
                # reader's often imply: `[t >= 1]` of a step's argument in the step)
                part = drop_implied_guards(part)
            done = {r.name: r for r in part.stmts}
            rewritten = {r: done[r.name] for r in readers}
        delta = None if self.cost is None else rewrite_cost(self.start, rewritten, (s,))
        cost = None if delta is None else self.cost + delta
        if within is not None:
            # (a derivative that misses the bound already may still save what costs
            # no more to compute than to store)
            new_cost = program_cost(self._with(s, rewritten)) if cost is None else cost
            old_cost = program_cost(self.program()) if self.cost is None else self.cost
            if not within.allows(new_cost) and not (
                    cheaper_cost(new_cost, old_cost, strictly=False)
                    and nowhere_costlier(new_cost, old_cost)):
                return None
        elif guarded and cost is not None:
            if not cheaper_cost(cost, self.cost, strictly=False) \
                    or everywhere and not nowhere_costlier(cost, self.cost):
                return None
        elif guarded:
            old, new = self.program(), self._with(s, rewritten)
            if not cheaper(new, old, strictly=False) or everywhere and not nowhere_costlier(
                    program_cost(new), program_cost(old)):
                return None
        self.cost = cost
        for before, after in rewritten.items():
            self._forget(before)
            self._note(after)
            self.stmts[self.place[after.name]] = after
        self._forget(s)
        self.stmts[self.place[s.name]] = None
        self.built = None
        return rewritten

    def _with(self, s: Stmt, rewritten: dict) -> Program:
        """The program with s dropped and its readers `rewritten`."""
        old = self.program()
        return Program(old.name, old.params, tuple(rewritten.get(t, t) for t in old.stmts
                                                   if t is not s),
                       old.outputs, old.tuple_return)


def _copy_maker(s: Stmt, src: Access, scale: float):
    """The body that stands for a read f of copy statement s (c * [P] * src): src read
    at f's indices, under s's brackets at them."""
    brackets = s.body[0].pred

    def make(f):
        mapping = {n: a for (n, _), a in zip(s.indices, f.idx)}
        read = Access(src.name, tuple(T.substitute_affine(a, mapping) for a in src.idx), f.span)
        if not brackets:
            return (Term(scale, (), (), ((read, 1.0),)),)
        moved = tuple(T.substitute(a, mapping) for a in brackets)
        return B.canon_body((Term(scale, (), moved, ((read, 1.0),)),))
    return make


def inline_bracketed_copies(prog: Program) -> Program:
    """A copy under brackets, c * [P] * x[i, j] (P binding no index and reading no label),
    is substituted into its readers, its brackets shifted with each read, when the
    program's cost polynomial does not grow (at equal sizes or skewed ones).

    For derivatives only (`derivative_rules`), as a late rule: the adjoint of `min` or
    `max` is its kink's indicator times a cotangent, `[a <= b] * y_bar`; stored (in a
    recurrence's adjoint, a member of its own, a K x n tensor) it costs a write and a
    pass where its reader can test the brackets itself.  In the program a derivative is
    taken of, the brackets would go into the terms the derivative differentiates (a
    Hessian's tangents of them cost more than the statement saved)."""
    def maker(work, s):
        if not s.body or not s.body[0].pred:
            return None
        copy = _scaled_copy(s, bracketed=True)
        if copy is None or copy[1].name == s.name:
            # (a bracketed copy of itself is a recurrence: x[k] = [k >= 1] * x[k - 1])
            return None
        return _copy_maker(s, copy[1], copy[0])
    return _substitute_where_no_costlier(prog, maker)


def _substitute_where_no_costlier(prog: Program, maker) -> Program:
    """Each statement s that is not an output, for which maker(copies, s) gives a body
    for each read (make(access)), substituted into its readers and dropped, where the
    program's cost grows at no sampled size; in statement order, from the first again
    after a substitution into an earlier statement (a recurrence reads later ones).
    The maker may give (make, budget) instead: then the substitution is made where the
    program's cost stays within the budget's bound (hoist.Budget) or does not grow."""
    work = _Copies(prog)
    outputs = set(prog.outputs)
    k = 0
    while k < len(work.stmts):
        s = work.stmts[k]
        k += 1
        make = None if s is None or s.name in outputs else maker(work, s)
        if make is None:
            continue
        make, budget = make if isinstance(make, tuple) else (make, None)
        rewritten = work.substitute(s, make, True, everywhere=True, within=budget)
        if rewritten is not None and any(work.place[r.name] < work.place[s.name]
                                         for r in rewritten):
            work, k = _Copies(work.program()), 0
    return work.program()


def inline_pointwise_statements(prog: Program, budget: "Budget | None" = None) -> Program:
    """A statement that is arithmetic of reads at its own point (`dem_arg[k, i] =
    rho[k, i] * vf`: no sums, calls or reductions, index brackets only), read only as a
    builtin's argument and in value comparisons (both), is substituted into its readers
    when each reads it at single points (in terms without sums) and the program's cost
    polynomial does not grow (at equal sizes or skewed ones).

    For derivatives only (`derivative_rules`): reverse mode takes its derivative of a
    program whose compound builtin arguments are statements (hoist.name_nonlinear_
    arguments), so that the chain rule reads an argument's value and cotangent once;
    the derivative then reads `min(dem_arg, qmax)`'s argument in the kink's bracket
    `[dem_arg <= qmax]` as well.  Where computing the argument again in each reader
    costs no more operations than storing it, it is computed there: the stored tensor
    was written in one pass and read back in another (in a recurrence, a K x n tensor
    for each such argument), which the operation count does not see.

    Given a `budget` (what the derivative may spend, hoist.Budget), a statement larger
    than every tensor the function holds is computed where it is read too, wherever
    read, when it is evaluated at its own point (builtins of reads included,
    `_recomputable`) and the derivative's cost stays within the certificate's bound:
    the argument of `sin(th[t - 1, j] - th[t - 1, i])` in a recurrence over t, named
    and stored with its cotangent, holds T n^2 elements where the function holds T n
    (16 GB at n = T = 1000), and recomputed in each step it costs what the forward's
    step paid for it."""
    def maker(work, s):
        readers = work.readers(s.name)
        if not readers:
            return None
        if budget is not None and _recomputable(s) and budget.larger_than_held(s.dims):
            return _body_at(s), budget
        if not _pointwise(s) or any(T.sums_or_reduces(t) for r in readers for t in r.body
                                    if any(a.name == s.name for a in T.term_accesses(t))):
            return None
        places = {where for r in readers for t in r.body for where in _read_places(t, s.name)}
        if places != {"call", "comparison"}:
            return None
        return _body_at(s)
    return _substitute_where_no_costlier(prog, maker)


def _body_at(s: Stmt):
    """The body that stands for a read f of statement s: s's body at f's indices."""
    def make(f):
        mapping = {n: a for (n, _), a in zip(s.indices, f.idx)}
        return B.canon_body(tuple(T.substitute_term(t, mapping) for t in s.body))
    return make


@dataclass(frozen=True)
class InlineWithin:
    """inline_pointwise_statements for a derivative with a `Budget` (hoist.Budget)."""
    budget: Budget

    def __call__(self, prog: Program) -> Program:
        return inline_pointwise_statements(prog, self.budget)


def _recomputable(s: Stmt) -> bool:
    """Is s, with indices, evaluated at its own point: a sum of terms under index
    brackets and comparisons of such bodies, each a coefficient times reads (no
    gathers, not of s itself), sizes and builtins of such bodies (no sums or
    reductions)?"""
    return bool(s.indices) and _at_its_point(s.body, s.name)


def _at_its_point(body, own: str) -> bool:
    for t in body:
        if t.sums or not all(a.__class__ is IdxCmp or a.__class__ is ValCmp
                             and _at_its_point(a.left, own) and _at_its_point(a.right, own)
                             for a in t.pred):
            return False
        for f, _ in t.factors:
            if f.__class__ is Access:
                if f.name == own or any(isinstance(a, Gather) for aff in f.idx
                                        for a in aff.atoms()):
                    return False
            elif f.__class__ is Apply:
                if not all(_at_its_point(a, own) for a in f.args):
                    return False
            elif f.__class__ is Group:
                if not _at_its_point(f.body, own):
                    return False
            elif f.__class__ is not SizeValue:
                return False
    return True


def _read_places(t: Term, name: str) -> set:
    """Where term t reads `name`: inside a value comparison ("comparison"), a builtin's
    argument ("call") or anywhere else ("factor")."""
    def reads(x) -> bool:
        return any(n.__class__ is Access and n.name == name for n in T.iter_nodes(x))
    places = {"comparison" for a in t.pred if a.__class__ is ValCmp and reads(a)}
    for f, _ in t.factors:
        if reads(f):
            places.add("call" if f.__class__ is Apply else "factor")
    return places


def _pointwise(s: Stmt) -> bool:
    """Is s, with indices, a sum of terms each a coefficient times reads (positive whole
    powers, no gathers, not of s itself) under index brackets?"""
    if not s.indices:
        return False
    for t in s.body:
        if t.sums or any(a.__class__ is not IdxCmp for a in t.pred):
            return False
        for f, p in t.factors:
            if f.__class__ is not Access or f.name == s.name or p < 1 or p != int(p) \
                    or any(isinstance(a, Gather) for aff in f.idx for a in aff.atoms()):
                return False
    return True


def _output_takes_over_its_copy(prog: Program, s: Stmt) -> Program | None:
    """`out[i, j] = x[i, j]` (or `x[j, i]`) with x a statement of the same shape that
    is not an output: x is computed under the name out, its generators listed in
    out's order, and the copy is dropped."""
    copy = _scaled_copy(s)
    if copy is None or copy[0] != 1 or copy[1].name in prog.outputs:
        return None
    src = copy[1]
    x = next((st for st in prog.stmts if st.name == src.name), None)
    gens = [n for n, _ in s.indices]
    # position[q]: the generator of x that out's q-th generator reads
    position = {}
    for p, a in enumerate(src.idx):
        if a.const or len(a.terms) != 1 or a.terms[0][1] != 1 \
                or not isinstance(a.terms[0][0], IndexVar) or a.terms[0][0].name not in gens:
            return None
        position[gens.index(a.terms[0][0].name)] = p
    if x is None or len(position) != len(gens) or len(src.idx) != len(gens):
        return None
    order = [position[q] for q in range(len(gens))]
    if tuple(x.dims[p] for p in order) != s.dims:
        return None
    # A recurrence member steps along its leading indices: stored in another order
    # it would no longer be a group (the step indices must lead), and the pass that
    # keeps recurrences would then throw away every substitution of this round.
    group = group_of(prog).get(x.name)
    if group is not None and any(order[q] != q for q in range(group.lead)):
        return None
    moved = Stmt(s.name, tuple(x.indices[p] for p in order), x.body, s.span)
    stmts = tuple(moved if st is x else st for st in prog.stmts if st is not s)
    prog = Program(prog.name, prog.params, stmts, prog.outputs, prog.tuple_return)
    return _replace_access(prog, x.name, lambda f: B.factor_body(
        Access(s.name, tuple(f.idx[p] for p in order), f.span)))


def _scaled_copy(s: Stmt, bracketed: bool = False):
    """(c, x[...]) when the statement's whole body is c * x[...] (no gathers), or, when
    `bracketed`, c * [P] * x[...] with brackets P that bind no index and read no label
    (a kink's indicator times a cotangent: the adjoint of `min` or `max`)."""
    if len(s.body) != 1:
        return None
    t = s.body[0]
    if t.sums or len(t.factors) != 1:
        return None
    if t.pred and (not bracketed or T.binder_names(t.pred)
                   or any(isinstance(a, Gather) for a in T.iter_nodes(t.pred))):
        return None
    f, p = t.factors[0]
    if p != 1 or not isinstance(f, Access):
        return None
    if any(isinstance(a, Gather) for aff in f.idx for a in aff.atoms()):
        return None
    if s.indices and not f.idx:
        return None
    return t.coeff, f


def _drop(prog: Program, names: str | frozenset) -> Program:
    """prog without the statement `names` (one name) or the statements it holds (a set)."""
    gone = {names} if isinstance(names, str) else names
    return Program(prog.name, prog.params, tuple(s for s in prog.stmts if s.name not in gone),
                   prog.outputs, prog.tuple_return)


def reuse_computed_values(prog: Program) -> Program:
    """A builtin that a statement already stores is read, not evaluated again.

    The derivative modes already read a stored output where they differentiate
    the statement that stores it (ad/rules.py).  Simplification can still bring
    the same call to another statement (a Hessian substitutes one derivative
    into another); when a statement's whole body is one builtin call, a later
    occurrence of that call (up to the names of its indices) becomes a read of
    the statement.  Nothing is recomputed, so the cost can only go down."""
    for k, s in enumerate(prog.stmts):
        call = _stored_call(s)
        if call is None:
            continue
        # only the later statements that call the builtin are looked at
        callers = [u for u in prog.stmts[k + 1:] if call.fn in _reads(u)[1]]
        if not callers:
            continue
        names = [n for n, _ in s.indices]

        def replace(t: Term, ranges, facts, call=call, names=names, s=s):
            factors = []
            for f, p in t.factors:
                factors.append((_as_read(f, call, names, s.name) or f, p))
            if all(a[0] is b[0] for a, b in zip(factors, t.factors)):
                return [t]          # (the same term: its body is not rebuilt)
            return [Term(t.coeff, t.sums, t.pred, tuple(factors))]
        later = Program(prog.name, prog.params, tuple(callers), (), False)
        # (a pure function of the statement, the call and the statement storing it:
        # remembered, as every round asks again about the same statements)
        mapped = map_terms(later, replace,
                           ("reuse_computed_values", call, tuple(names), s.name))
        if mapped is not later:
            done = {u.name: u for u in mapped.stmts}
            return Program(prog.name, prog.params,
                           prog.stmts[:k + 1] + tuple(done.get(u.name, u)
                                                      for u in prog.stmts[k + 1:]),
                           prog.outputs, prog.tuple_return)
    return prog


def _within(v: str, dim, ranges: dict, facts: Facts) -> bool:
    """Is index `v` (bound in `ranges`) below `dim` wherever it runs?"""
    if ranges.get(v) == dim:
        return True
    return v in ranges and facts.proves(Affine.dim(dim).shift(-1) - Affine.of(IndexVar(v)))


def reuse_stored_products(prog: Program) -> Program:
    """A product of factors that a statement stores is read where another term has it.

    The adjoints of one forward term share most of their factors: the term
    `0.5 * k[q] * D[q] ** 2 / h[q]` gives `k_bar[l] = 0.5 * d * D[l] ** 2 / h[l]` and
    `h_bar[l] = -0.5 * d * k[l] * D[l] ** 2 / h[l] ** 2`, which is `-k[l] * k_bar[l] / h[l]`.
    When a statement's body is one term without sums or brackets, c * F (F at least
    two factors), a term of another statement whose factors include F up to the names
    of its indices (each power of F's within the term's, of one sign and integral)
    reads the statement instead, times the rest of its factors and c' / c = +-1 (another
    constant would move where the product overflows: `2 * (x / y)` is finite where
    `2 * x / y`, which a user's quotient must give bit for bit, is not).  A term of
    an earlier statement may do so when the storing statement reads nothing at or after
    it: the statement then moves right before the first such reader.  Kept when
    cheaper.  `simplify` tries it on the program the other rules finished with
    (`_share_stored_products`).

    The stored term may test its generators (`e_sum[k, l, p] = [k + 1 < S] *
    u_bar[k + 1, l] * v[k + 1, p]`, an adjoint of step k + 1) and be read at shifted
    indices (`[k >= 1] * e[k - 1, l] * u_bar[k, q] * v[k, p]` holds it at k - 1) when
    the reader's brackets and ranges prove the read in bounds and the tests true
    (`_holding_product`).  It may compare values (`cn_part_bar[k, s] = [dx[k, s] > 0.0] *
    ...`, under a kink): a term making the same comparison holds it there, and keeps its
    own brackets, so where the comparison fails the term is a strong zero as before.
    A member of a recurrence group (computed step by step, but stored whole) is read
    only by later statements outside groups; no member reads a product another
    statement stores."""
    members = group_of(prog)
    where = {st.name: k for k, st in enumerate(prog.stmts)}
    for k, s in enumerate(prog.stmts):
        stored = _stored_product(s)
        if stored is None or len(stored.factors) < 2 or T.sums_or_reduces(stored):
            continue
        # the earliest position s could stand at: after every statement it reads
        earliest = max((where[n] + 1 for n in T.statement_reads(s) if n in where), default=0)
        names = [n for n, _ in s.indices]
        dims = dict(s.indices)
        needs = _reads(s)

        def replace(t: Term, ranges, facts, s=s, stored=stored, names=names, dims=dims):
            hit = _holding_product(t, stored, s, names, dims, ranges, facts)
            return [t] if hit is None else [hit]
        stmts = list(prog.stmts)
        first = None
        for j, st in enumerate(prog.stmts):
            if j == k or st.name in members or (j < k and (j < earliest or s.name in members)) \
                    or not all(a <= b for a, b in zip(needs, _reads(st))):
                continue
            one = Program(prog.name, prog.params, (st,), (), False)
            # (a pure function of the statement and the one storing the product)
            (new,) = map_terms(one, replace, ("reuse_stored_products", s)).stmts
            if new is not st:
                stmts[j] = new
                first = j if first is None else min(first, j)
        if first is None:
            continue
        if first < k:
            stmts = stmts[:first] + [s] + [st for j, st in enumerate(stmts[first:], first)
                                           if j != k]
        trial = Program(prog.name, prog.params, tuple(stmts), prog.outputs, prog.tuple_return)
        if cheaper(trial, prog, strictly=True):
            return trial
    return prog


def _stored_product(s: Stmt) -> Term | None:
    """The one term of s when it has no sums and its brackets test s's generators or
    compare values (a kink's `[dx[r, s] > 0.0]`, which a reader must hold as it is:
    `_holding_product`)."""
    if len(s.body) != 1 or s.body[0].sums:
        return None
    t = s.body[0]
    gens = {n for n, _ in s.indices}

    def storable(a) -> bool:
        if T.gathered_tensors(a):
            return False
        return a.__class__ is ValCmp or (a.__class__ is IdxCmp and a.op in (">=", "==")
                                         and not a.mod and a.aff.index_vars() <= gens)
    return t if all(storable(a) for a in t.pred) else None


def _holding_product(t: Term, stored: Term, s: Stmt, names: list, dims: dict, ranges: dict,
                     facts: Facts) -> Term | None:
    """t with the factors of `stored` (the body of `s`, its indices renamed to t's,
    each perhaps shifted by a constant) replaced by a read of `s`, or None when t does
    not hold them.  A shifted read must be in bounds, and the stored brackets must
    hold, wherever t's brackets do."""
    free = sorted(n for n in ranges if n in T.index_names(t))
    if len(free) < len(names) or len(free) > 5:
        return None
    if abs(t.coeff) != abs(stored.coeff):
        return None
    under = facts.with_pred(t.pred)
    for perm in itertools.permutations(free, len(names)):
        for shifts in _read_shifts(t, stored, names, perm):
            if not any(shifts.values()):
                if any(not _within(v, dims[n], ranges, facts) for n, v in zip(names, perm)):
                    continue
            elif not all(under.proves(Affine.of(IndexVar(v)).shift(shifts[n]))
                         and under.proves(Affine.dim(dims[n]).shift(-1 - shifts[n])
                                          - Affine.of(IndexVar(v)))
                         for n, v in zip(names, perm)):
                continue
            mapping = {n: Affine.of(IndexVar(v)).shift(shifts[n]) for n, v in zip(names, perm)}
            moved = T.substitute_term(stored, mapping)
            # (a value comparison the stored term makes, t makes too: where it fails, t
            # is a strong zero and keeps its brackets, so the read is never used there)
            if not all(_bracket_holds(a, under, t.pred) for a in moved.pred):
                continue
            rest = _without_factors(t.factors, moved.factors)
            if rest is not None:
                read = (Access(s.name, tuple(mapping[n] for n in names)), 1.0)
                return Term(t.coeff / stored.coeff, t.sums, t.pred, rest + (read,))
    return None


def _bracket_holds(atom, under: Facts, pred: tuple) -> bool:
    """Does a stored term's bracket `atom` (renamed to a reader's indices) hold wherever
    the reader's brackets `pred` do?  An index test when the facts prove it; a value
    comparison when the reader makes the same one."""
    if atom.__class__ is ValCmp:
        # (either way round: `0.0 < x` and `x > 0.0` agree everywhere, NaN included)
        mirrored = ValCmp(B.MIRRORED_OP[atom.op], atom.right, atom.left)
        return any(canon is not None and all(a in pred for a in canon)
                   for canon in (B.canon_pred((atom,)), B.canon_pred((mirrored,))))
    return under.proves(atom.aff) and (atom.op == ">=" or under.proves(atom.aff.scale(-1)))


def _read_shifts(t: Term, stored: Term, names: list, perm: tuple):
    """The constant shifts (generator -> offset) at which t's reads could hold stored's,
    its generators put at the indices `perm`: a stored read `x[n + a]` beside a read
    `x[v + b]` of t gives n -> b - a.  No shift first; at most eight candidates."""
    at = dict(zip(names, perm))
    options: dict = {n: {0} for n in names}
    reads = [f for f, _ in stored.factors if f.__class__ is Access]
    for n, v, d in _subscript_offsets(reads, [g for g, _ in t.factors if g.__class__ is Access]):
        if n in at and at[n] == v:
            options[n].add(d)
    combos = [{}]
    for n in names:
        combos = [dict(c, **{n: d}) for c in combos for d in sorted(options[n], key=abs)][:8]
    return sorted(combos, key=lambda c: sum(abs(d) for d in c.values()))


def _subscript_offsets(xs, ys):
    """(i, j, b - a) for each read x[.., i + a, ..] of `xs` and read of the same tensor
    y[.., j + b, ..] of `ys` with those subscripts at the same place (each one index with
    coefficient 1 and a constant): the shift that lines the two reads up there."""
    def plain(a: Affine):
        if len(a.terms) == 1 and a.terms[0][1] == 1 and a.terms[0][0].__class__ is IndexVar:
            return a.terms[0][0].name, a.const
        return None
    theirs: dict = {}
    for r in ys:
        for q, sub in enumerate(r.idx):
            u = plain(sub)
            if u is not None:
                theirs.setdefault((r.name, len(r.idx), q), []).append(u)
    for r in xs:
        for q, sub in enumerate(r.idx):
            u = plain(sub)
            if u is not None:
                for j, b in theirs.get((r.name, len(r.idx), q), ()):
                    yield u[0], j, b - u[1]


def _without_factors(factors: tuple, part: tuple) -> tuple | None:
    """`factors` divided by `part` (both (factor, power) pairs), or None unless each
    power of `part` is integral and within the matching one of `factors`, of one sign."""
    out = list(factors)
    for f, p in part:
        k = next((j for j, (g, _) in enumerate(out) if g == f), None)
        if k is None or p != int(p):
            return None
        q = out[k][1]
        if q != int(q) or q * p <= 0 or abs(q) < abs(p):
            return None
        if q == p:
            del out[k]
        else:
            out[k] = (f, q - p)
    return tuple(out)


def reuse_stored_sums(prog: Program) -> Program:
    """A sum that a statement stores is read where a later term sums the same.

    The adjoint of a maximum with respect to a tensor its entries read at the
    maximum's own indices sums the indicator of the ties over the reduced index,
    `k_bar[l] = -sum[m]([... and x[m] - k[l] == e[l]] * w[l])`, where the number of
    ties `c[l] = sum[j]([... and x[j] - k[l] == e[l]])` is already stored: the term
    is `-c[l] * w[l]`, and the pass over the window goes.  When a statement's body is
    one term with sums, coefficient +-1 (another constant would move where the sum
    overflows), a term whose factors and brackets that use its summed indices form
    that term, up to the names of both statements' indices, reads the statement
    instead, times the factors and brackets that do not (`_stored_sum_read`).  Kept
    when cheaper; statements of recurrence groups are left alone."""
    members = group_of(prog)
    for k, s in enumerate(prog.stmts):
        if s.name in members or len(s.body) != 1 or not s.indices \
                or len(s.indices) > SYMMETRY_LIMIT:
            continue
        stored = s.body[0]
        if not stored.sums or abs(stored.coeff) != 1:
            continue
        summed = {n for n, _ in stored.sums}
        if T.index_names(stored) - summed != {n for n, _ in s.indices}:
            continue                    # (a generator the body does not use matches anything)
        needs = _reads(s)
        stmts = list(prog.stmts)
        for j in range(k + 1, len(stmts)):
            st = stmts[j]
            if st.name in members or not needs <= _reads(st):
                continue
            one = Program(prog.name, prog.params, (st,), (), False)
            (new,) = map_terms(one, lambda t, ranges, facts, s=s: _stored_sum_read(
                t, s, ranges, facts)).stmts
            stmts[j] = new
        trial = Program(prog.name, prog.params, tuple(stmts), prog.outputs, prog.tuple_return)
        if any(a is not b for a, b in zip(stmts, prog.stmts)) \
                and cheaper(trial, prog, strictly=True):
            return trial
    return prog


def _stored_sum_read(t: Term, s: Stmt, ranges: dict, facts: Facts) -> list:
    """[t] with its sums read from statement `s` (see reuse_stored_sums), or [t]."""
    if not t.sums:
        return [t]
    summed = {n for n, _ in t.sums}
    inner_pred = tuple(a for a in t.pred if T.index_names(a) & summed)
    outer_pred = tuple(a for a in t.pred if not T.index_names(a) & summed)
    inner = tuple((f, p) for f, p in t.factors if T.index_names(f) & summed)
    outer = tuple((f, p) for f, p in t.factors if not T.index_names(f) & summed)
    # A factor taken out of the sum is computed where the summed brackets may all be
    # false: only reads, and calls finite wherever their reads are.
    if not all(f.__class__ in (Access, SizeValue) or finite_everywhere(f) for f, _ in outer):
        return [t]
    stored = s.body[0]
    free = sorted(T.index_names(Term(1, t.sums, inner_pred, inner)) - summed)
    if len(free) != len(s.indices):
        return [t]
    key = _statement_key(s)
    part = B.canon_body([Term(stored.coeff, t.sums, inner_pred, inner)])
    for perm in itertools.permutations(free):
        if any(not _within(v, d, ranges, facts) for v, (_, d) in zip(perm, s.indices)):
            continue
        same = Stmt(s.name, tuple((v, d) for v, (_, d) in zip(perm, s.indices)), part)
        if _compute_statement_key(same) == key:
            read = Access(s.name, tuple(Affine.of(IndexVar(v)) for v in perm))
            return [Term(t.coeff * stored.coeff, (), outer_pred, outer + ((read, 1.0),))]
    return [t]


# Builtins whose stored values may be computed where no reader looks: defined and finite
# for every finite argument but at most overflowing (a read of a tensor outside the part
# its readers use is then never an error).
TOTAL_BUILTINS = ("exp", "sigmoid", "tanh", "sin", "cos", "softplus", "erf", "abs",
                  "sigmoid_slope", "tanh_slope")


def store_repeated_calls(prog: Program) -> Program:
    """A builtin of one tensor that several statements evaluate is stored once.

    The chain rule puts f'(x) next to every factor that x's cotangent meets, and for the
    elementwise builtins f' is written with f: a gate `sigmoid(g[t, i])` of a recurrence
    is evaluated by the forward step, by its derivative `sigmoid(g) (1 - sigmoid(g))`
    and in every adjoint that the gate multiplies (at `g[t + 1, i]` in the step before).
    When calls `f(x[..])` of one tensor x (read with one index per axis) occur at least
    twice, `x_f[i1, .., in] = f(x[i1, .., in])` becomes a statement right after x (a
    member of x's recurrence group when a member reads it: the step computes the gate once
    and its adjoint step reads it) and the later occurrences become reads of it.  The new
    statement covers x's whole domain, so only builtins that are finite on every finite
    argument qualify (`TOTAL_BUILTINS`), and the rewrite is kept only when it is cheaper
    (`engine.cheaper`)."""
    shapes = ({q.name: q.dims for q in prog.params if q.elem == "f64"}
              | {st.name: st.dims for st in prog.stmts})
    counts: Counter = Counter()
    for st in prog.stmts:
        for n in T.iter_nodes(st.body):
            if n.__class__ is Apply and n.fn in TOTAL_BUILTINS:
                x = _read_of_whole(n, shapes)
                if x is not None:
                    counts[(n.fn, x)] += 1
    used = {q.name for q in prog.params} | {st.name for st in prog.stmts} | set(prog.sizes())
    for (fn, x), c in sorted(counts.items()):
        if c < 2:
            continue
        where = next((k + 1 for k, st in enumerate(prog.stmts) if st.name == x), 0)
        names = [fresh("i") for _ in shapes[x]]
        read = B.factor_body(Access(x, tuple(Affine.of(IndexVar(v)) for v in names)))
        stmt = Stmt(unique_name(f"{x}_{fn}", used), tuple(zip(names, shapes[x])),
                    B.factor_body(Apply(fn, (read,))))
        trial = Program(prog.name, prog.params,
                        prog.stmts[:where] + (stmt,) + prog.stmts[where:], prog.outputs,
                        prog.tuple_return)
        trial = _reuse_call_of(trial, where)
        readers = sum(1 for st in trial.stmts if stmt.name in _reads(st)[0])
        if readers >= 1 and _pays_everywhere(trial, prog):
            return trial
    return _store_repeated_compound_call(prog)


def share_powers(prog: Program) -> Program:
    """pow(x[a], e) and pow(x[a], e - 1) of one tensor with one exponent e (no index in
    it) are read from one statement x_pow[i] = pow(x[i], e): pow(x[a], e - 1) becomes
    x_pow[a] / x[a], when x is at least a positive constant everywhere
    (`bounded_away_from_zero`) and the program gets cheaper.

    The derivative of a ** b with respect to a is b * a ** (b - 1), not b * a ** b / a,
    which is NaN at a = 0 where the other is not (builtins.py); so a gradient that also
    needs a ** b (the partial with respect to b, a ** b * log a) evaluates both powers.
    Where a cannot be 0 the quotient is the same number up to rounding, and the two
    powers are one.  (At a = inf the quotient is NaN; such a base makes the derivatives
    around it inf or NaN anyway.)"""
    stmts = {st.name: st for st in prog.stmts}
    shapes = ({q.name: q.dims for q in prog.params if q.elem == "f64"}
              | {st.name: st.dims for st in prog.stmts})
    members = group_of(prog)
    powers: dict = {}                   # (x, exponent) -> occurrences
    for st in prog.stmts:
        for n in T.iter_nodes(st.body):
            if n.__class__ is Apply and n.fn == "pow" and not T.index_names(n.args[1]):
                x = _read_of_whole(Apply("pow", n.args[:1]), shapes)
                if x is not None and x not in members:
                    powers.setdefault((x, n.args[1]), []).append(st.name)
    used = {q.name for q in prog.params} | set(stmts) | set(prog.sizes())
    position = {st.name: k for k, st in enumerate(prog.stmts)}
    for (x, e), readers in sorted(powers.items(), key=lambda kv: (kv[0][0], body_key(kv[0][1]))):
        lower = B.add(e, B.const(-1.0))
        if (x, lower) not in powers or not bounded_away_from_zero(x, stmts):
            continue
        where = max([position[x] + 1 if x in position else 0]
                    + [position[r] + 1 for r in T.tensor_reads(e) if r in position])
        if any(r in members for r in T.tensor_reads(e)) \
                or any(position[r] < where for r in readers + powers[(x, lower)]):
            continue
        names = [fresh("i") for _ in shapes[x]]
        read = Access(x, tuple(Affine.of(IndexVar(v)) for v in names))
        stmt = Stmt(unique_name(f"{x}_pow", used), tuple(zip(names, shapes[x])),
                    B.factor_body(Apply("pow", (B.factor_body(read), e))))

        def replace(t: Term, ranges, facts, e=e, lower=lower, x=x, name=stmt.name):
            hits = [f.__class__ is Apply and f.fn == "pow" and f.args[1] in (e, lower)
                    and _read_of_whole(Apply("pow", f.args[:1]), shapes) == x
                    for f, _ in t.factors]
            if not any(hits):
                return [t]
            body = (Term(t.coeff, (), t.pred, ()),)
            scope = set(ranges) | {n for n, _ in t.sums}
            for (f, p), hit in zip(t.factors, hits):
                if hit:
                    base = f.args[0][0].factors[0][0]
                    part = ((Access(name, base.idx), 1.0),) + \
                        (((base, -1.0),) if f.args[1] == lower else ())
                    body = B.mul(body, B.power((Term(1.0, (), (), part),), p), scope)
                else:
                    body = B.mul(body, B.factor_body(f, p), scope)
            return [Term(u.coeff, t.sums + u.sums, u.pred, u.factors) for u in body]
        later = Program(prog.name, prog.params, prog.stmts[where:], (), False)
        trial = Program(prog.name, prog.params,
                        prog.stmts[:where] + (stmt,) + map_terms(later, replace).stmts,
                        prog.outputs, prog.tuple_return)
        if _pays_everywhere(trial, prog):
            return trial
    return prog


def bounded_away_from_zero(x: str, stmts: dict) -> bool:
    """Is statement x, at every element, a positive constant plus terms that are never
    negative (each a positive coefficient times even powers, exponentials and such
    statements, under any brackets)?  Then it is never 0, whatever its inputs (but NaN)."""
    st = stmts.get(x)
    if st is None:
        return False
    constants = [t.coeff for t in st.body if t.is_const]
    return any(c > 0 for c in constants) and all(
        t.is_const and t.coeff > 0 or _never_negative(t, stmts, 4) for t in st.body)


def _never_negative(t: Term, stmts: dict, depth: int) -> bool:
    if t.coeff < 0 or depth == 0:
        return False
    for f, p in t.factors:
        if p % 2 == 0 or f.__class__ is Apply and f.fn in ("exp", "abs", "sigmoid"):
            continue
        if f.__class__ is Access and f.name in stmts and not any(
                isinstance(a, Gather) for aff in f.idx for a in aff.atoms()) \
                and all(_never_negative(u, stmts, depth - 1) for u in stmts[f.name].body):
            continue
        return False
    return True


def _pays_everywhere(trial: Program, prog: Program) -> bool:
    """Is `trial` cheaper than `prog` with all sizes equal (engine.cheaper) and no
    costlier at any of the skewed sizes of costs.sample_points?  Equal sizes hide a
    stored call whose readers gather a few entries of a large tensor, `exp(e[y[s]])`
    in several adjoints: stored, it is evaluated at every entry of e, and when e is
    much larger than y the derivative costs more than the function allows it."""
    return cheaper(trial, prog, strictly=True) and \
        nowhere_costlier(program_cost(trial), program_cost(prog))


def _shifted_var(a: Affine):
    """(variable, offset) when `a` is one index variable plus a constant (`t - 1`), else None."""
    if len(a.terms) != 1:
        return None
    x, c = a.terms[0]
    return (x.name, a.const) if c == 1 and x.__class__ is IndexVar else None


class _Call:
    """A builtin of an elementwise expression, seen up to the names of its variables
    and a shift of each (see _elementwise_call).

    key        equal for calls equal up to the names of their variables, shifts of
               them and brackets on indices
    variables  the call's index variables, in the order the key numbers them
    shifts     per variable, its largest offset in a read: the call at v is the
               stored one at v + shift
    dims       per variable, its range"""
    __slots__ = ("key", "variables", "shifts", "dims")

    def __init__(self, key, variables, shifts, dims):
        self.key, self.variables, self.shifts, self.dims = key, variables, shifts, dims


def _elementwise_call(call: Apply, shapes: dict):
    """A _Call when `call` is a builtin of an expression that reads tensors at index
    variables plus constants, one variable per axis (`tanh(x[i] * y[i])`, `exp(a[i, j] -
    b[k - 1, j])`), with no sums or reductions and brackets on those variables only,
    and is more than a builtin of one read (store_repeated_calls takes those).  The
    key leaves out the brackets and shifts each variable so that its largest offset
    is 0: `exp(g[k, l] - f[k + 1, p])` and `exp(g[k - 1, j] - f[k, i])` are the same
    call at different steps, whatever brackets keep the reads in range where each
    is evaluated (`_stored_form`, `_is_instance` check those).  None otherwise."""
    if call.__class__ is Group:
        if not _total_group(call):
            return None
    elif call.fn not in TOTAL_BUILTINS or _read_of_whole(call, shapes) is not None:
        return None
    dims: dict = {}
    offsets: dict = {}
    bracketed: set = set()
    reads = 0
    for node in T.iter_nodes(call):
        cls = node.__class__
        if cls is Term:
            if node.sums:
                return None
            for atom in node.pred:
                if atom.__class__ is not IdxCmp:
                    return None
                bracketed |= atom.aff.index_vars()
        elif cls is Reduce or cls is Gather:
            return None
        elif cls is Access:
            if node.name not in shapes or len(node.idx) != len(shapes[node.name]):
                return None
            reads += 1
            for a, d in zip(node.idx, shapes[node.name]):
                vc = _shifted_var(a)
                if vc is None or dims.setdefault(vc[0], d) != d:
                    return None
                offsets[vc[0]] = max(offsets.get(vc[0], vc[1]), vc[1])
    names = sorted(dims)
    if not reads or not names or len(names) > SYMMETRY_LIMIT or not bracketed <= set(names):
        return None
    bare = _without_brackets(call)
    best = None
    for perm in itertools.permutations(names):
        mapping = {v: Affine.of(IndexVar(f"{_PLACEHOLDER}{k}")).shift(-offsets[v])
                   for k, v in enumerate(perm)}
        key = (tuple(dim_key(dims[v]) for v in perm),
               _unordered_key(T.substitute(bare, mapping)))
        if best is None or key < best[0]:
            best = (key, perm)
    perm = best[1]
    return _Call(best[0], perm, tuple(offsets[v] for v in perm), tuple(dims[v] for v in perm))


def _unordered_key(call) -> tuple:
    """order_key of a call or parenthesised sum with the terms of each argument taken
    as a set: the order of the terms follows the index names they read, so one call
    under two namings (`sigmoid(-s[i] + s[j])` and `sigmoid(s[i] - s[j])` with i and j
    swapped) would otherwise give two keys, and which occurrence reads a stored table
    would depend on the names."""
    if call.__class__ is Group:
        return ("sum", tuple(sorted(order_key(t) for t in call.body)))
    return (call.fn, tuple(tuple(sorted(order_key(t) for t in arg)) for arg in call.args))


def _map_call_terms(call, fn):
    """`call` (a builtin call or a parenthesised sum) with fn(term) -> term applied to
    every term inside it, innermost first."""
    if call.__class__ is Group:
        return Group(T.map_terms_in_body(call.body, lambda t, _: [fn(t)], None,
                                         lambda ctx, t: ctx, B.canon_body))
    body = T.map_terms_in_body(B.factor_body(call), lambda t, _: [fn(t)], None,
                               lambda ctx, t: ctx, B.canon_body)
    return body[0].factors[0][0]


def _total_group(g: Group) -> bool:
    """Is the parenthesised sum finite wherever its reads are finite, as the builtins
    of TOTAL_BUILTINS are: no division but by a scalar (which the sum divides by at
    every point it is evaluated, stored or not), no builtin outside TOTAL_BUILTINS?
    `(1.0 + ((u[i - 1] - u[i]) / kap) ** 2)`, the denominator of a diffusion step,
    is; `(a[i] / b[i] + 1.0)` is not: b may be 0 where the sum is never evaluated."""
    for node in T.iter_nodes(g.body):
        if node.__class__ is Term:
            for f, p in node.factors:
                if p < 0 and not (f.__class__ is Access and not f.idx):
                    return False
                if p != int(p) and f.__class__ is not Access:
                    return False
        elif node.__class__ is Apply and node.fn not in TOTAL_BUILTINS:
            return False
    return True


def _without_brackets(call: Apply) -> Apply:
    return _map_call_terms(call, lambda t: Term(t.coeff, t.sums, (), t.factors) if t.pred else t)


def _stored_form(call: Apply, hit: _Call, names: list) -> Apply:
    """The call to store over `names` (hit's variables, shifted by hit.shifts): its
    brackets dropped, and every term that reads below the start of a range (at
    `w - c`) under `[w - c >= 0]` instead, so it is defined at every element."""
    mapping = {v: Affine.of(IndexVar(w)).shift(-s)
               for v, w, s in zip(hit.variables, names, hit.shifts)}
    bare = T.substitute(_without_brackets(call), mapping)

    def guard(t: Term) -> Term:
        low = []
        for f, _ in t.factors:
            if f.__class__ is Access:
                low += [IdxCmp(">=", a) for a in f.idx if a.const < 0]
        return Term(t.coeff, t.sums, tuple(low), t.factors) if low else t
    return _map_call_terms(bare, guard)


def _without_implied(call: Apply, facts: Facts) -> Apply:
    """`call` without the brackets `[a >= 0]` the facts imply, every body in canonical
    order (a substitution may have left one out of it), so that equal calls compare equal."""
    def drop(t: Term) -> Term:
        kept = tuple(a for a in t.pred if not (a.__class__ is IdxCmp and a.op == ">="
                                               and facts.proves(a.aff)))
        return Term(t.coeff, t.sums, kept, t.factors)
    return _map_call_terms(call, drop)


def _is_instance(call: Apply, hit: _Call, stmt: Stmt, stored, facts: Facts) -> Access | None:
    """The read of `stmt` (which stores `stored`, a call or parenthesised sum under
    `_stored_form`) that equals `call` wherever the facts hold, or None: the read must
    be in range there, and the stored call at it and `call` must agree once the
    brackets the facts imply are dropped."""
    idx = tuple(Affine.of(IndexVar(v)).shift(s) for v, s in zip(hit.variables, hit.shifts))
    for a, (_, d) in zip(idx, stmt.indices):
        if not (facts.proves(a) and facts.proves(Affine.dim(d) - a - Affine(1))):
            return None
    at = T.substitute(stored, {w: a for (w, _), a in zip(stmt.indices, idx)})
    if _without_implied(at, facts) != _without_implied(call, facts):
        return None
    return Access(stmt.name, idx)


def _store_repeated_compound_call(prog: Program) -> Program:
    """store_repeated_calls for a builtin of an elementwise expression of several
    reads (`tanh(x[i] * y[i])`, which reverse mode writes into every adjoint the call's
    output meets, and its derivative `1 - tanh(x[i] * y[i]) ** 2` once more): when such a
    call, up to the names of its variables, occurs at least twice, it becomes a
    statement over its variables' ranges right after the last statement it reads, and
    every later occurrence a read of it; kept only when cheaper.

    Occurrences may read at shifted indices and carry brackets on them: the softmax
    weights of a recurrence's logsumexp, `exp(-C[i, j] / eps - F[k, i] + [k >= 1] *
    G[k - 1, j] / eps)`, appear in its adjoint step at `k + 1` (`exp(-C[p, l] / eps +
    G[k, l] / eps - F[k + 1, p])`) and in the parameters' adjoints under `[k >= 1]`, in
    or out of the call.  The statement then keeps the reads in range with brackets of
    its own (`_stored_form`), and an occurrence becomes a read only where it provably
    equals it (`_is_instance`).  A call that reads a recurrence group's members is
    stored after the whole group, so only statements after the group read it.

    A parenthesised sum raised to a power is such a call too, when it is finite
    wherever its reads are (`_total_group`): a diffusion step's denominator `(1.0 +
    (u[i - 1] / kap - u[i] / kap) ** 2)` appears in every adjoint of the step, to the
    powers -1 and -2.  It is stored as its terms, and kept only when the program is no
    costlier with its shared passes formed as well (`_no_dearer_in_passes`)."""
    shapes = ({q.name: q.dims for q in prog.params if q.elem == "f64"}
              | {st.name: st.dims for st in prog.stmts})
    members = group_of(prog)
    position = {st.name: k for k, st in enumerate(prog.stmts)}
    last = {}
    for k, st in enumerate(prog.stmts):
        g = members.get(st.name)
        last[st.name] = k if g is None else max(position[m] for m in g.members)
    found: dict = {}
    counts: Counter = Counter()
    for k, st in enumerate(prog.stmts):
        for n in T.iter_nodes(st.body):
            if n.__class__ is Apply and n.fn in TOTAL_BUILTINS or n.__class__ is Group:
                hit = _elementwise_call(n, shapes)
                if hit is None:
                    continue
                where = max((last[r] + 1 for r in T.tensor_reads(n) if r in last), default=0)
                if k >= where:
                    found.setdefault(hit.key, (n, hit, where))
                    counts[hit.key] += 1
    if not any(c >= 2 for c in counts.values()):
        return prog
    used = {q.name for q in prog.params} | {st.name for st in prog.stmts} | set(prog.sizes())
    for key, c in sorted(counts.items()):
        if c < 2:
            continue
        call, first, where = found[key]
        if not no_larger_than_held(prog, first.dims):
            continue
        read = sorted(T.tensor_reads(call))
        names = [fresh("i") for _ in first.variables]
        # (a parenthesised sum is stored as its terms: to the first power it is no factor)
        form = _stored_form(call, first, names)
        stmt = Stmt(unique_name("_".join(read[:2] + [getattr(call, "fn", "sum")]), used),
                    tuple(zip(names, first.dims)),
                    form.body if form.__class__ is Group else B.factor_body(form))

        def replace(t: Term, ranges, facts, key=key, stmt=stmt, form=form):
            factors = []
            inner = None
            for f, p in t.factors:
                if f.__class__ is call.__class__ and (f.__class__ is Group or f.fn == call.fn):
                    hit = _elementwise_call(f, shapes)
                    if hit is not None and hit.key == key:
                        if inner is None:
                            inner = facts.with_ranges(t.sums).with_pred(t.pred)
                        f = _is_instance(f, hit, stmt, form, inner) or f
                factors.append((f, p))
            if all(a[0] is b[0] for a, b in zip(factors, t.factors)):
                return [t]
            return [Term(t.coeff, t.sums, t.pred, tuple(factors))]
        later = Program(prog.name, prog.params, prog.stmts[where:], (), False)
        trial = Program(prog.name, prog.params,
                        prog.stmts[:where] + (stmt,) + map_terms(later, replace).stmts,
                        prog.outputs, prog.tuple_return)
        if cheaper(trial, prog, strictly=True) and (
                call.__class__ is not Group or _no_dearer_in_passes(trial, prog)):
            return trial
    return prog


def _no_dearer_in_passes(new: Program, old: Program) -> bool:
    """Is `new` no costlier than `old` as the backends schedule them, shared passes
    formed (shared.py)?  A divisor `(1 + t[i] ** 2)` of two adjoints is computed once
    in their shared pass, where storing it costs a write per element more."""
    from ..costs import scheduled_cost
    from ..shared import split_terms_into_passes
    return cheaper_cost(scheduled_cost(split_terms_into_passes(new)),
                        scheduled_cost(split_terms_into_passes(old)), strictly=False)


def _read_of_whole(call: Apply, shapes: dict) -> str | None:
    """x when `call` is f(x[a1, .., an]): one read of a tensor, one index per axis."""
    if len(call.args) != 1 or len(call.args[0]) != 1:
        return None
    t = call.args[0][0]
    if t.coeff != 1 or t.sums or t.pred or len(t.factors) != 1:
        return None
    f, p = t.factors[0]
    if p != 1 or f.__class__ is not Access or f.name not in shapes \
            or len(f.idx) != len(shapes[f.name]):
        return None
    return f.name


def _reuse_call_of(prog: Program, k: int) -> Program:
    """Every later f(x[a1, .., an]) read from statement k, x_f[i1, .., in] = f(x[i1, .., in]),
    as x_f[a1, .., an] (the same entries of the same domain)."""
    s = prog.stmts[k]
    (call, _), = s.body[0].factors
    x = call.args[0][0].factors[0][0].name
    shapes = {x: s.dims}

    def replace(t: Term, ranges, facts):
        factors = []
        for f, p in t.factors:
            if f.__class__ is Apply and f.fn == call.fn and _read_of_whole(f, shapes) == x:
                f = Access(s.name, f.args[0][0].factors[0][0].idx)
            factors.append((f, p))
        if all(a[0] is b[0] for a, b in zip(factors, t.factors)):
            return [t]
        return [Term(t.coeff, t.sums, t.pred, tuple(factors))]
    later = Program(prog.name, prog.params, prog.stmts[k + 1:], (), False)
    mapped = map_terms(later, replace).stmts
    return Program(prog.name, prog.params, prog.stmts[:k + 1] + mapped, prog.outputs,
                   prog.tuple_return)


def _stored_call(s: Stmt):
    """The builtin call that is a statement's whole body, using all its indices."""
    if len(s.body) != 1:
        return None
    t = s.body[0]
    if t.coeff != 1 or t.sums or t.pred or len(t.factors) != 1:
        return None
    f, p = t.factors[0]
    if p != 1 or not isinstance(f, Apply):
        return None
    if T.index_names(f) != {n for n, _ in s.indices}:
        return None
    return f


def _as_read(f, call: Apply, names: list, stmt: str):
    if not isinstance(f, Apply) or f.fn != call.fn:
        return None
    free = sorted(T.index_names(f))
    if len(free) != len(names) or len(names) > 4:
        return None
    for perm in itertools.permutations(free):
        mapping = {n: Affine.of(IndexVar(v)) for n, v in zip(names, perm)}
        if T.substitute(call, mapping) == f:
            return Access(stmt, tuple(mapping[n] for n in names))
    return None


def inline_sparse_statements(prog: Program) -> Program:
    """Substitute a statement with a diagonal term into its readers when that is cheaper.

    A Hessian built by forward-over-reverse stores matrices such as
    ``M[l, l1] = [l == l1] * c + d[l1] * v[l]`` (a scaled identity plus an outer
    product) and then contracts them, ``sum[l](G[l, k] * M[l, l1])``: p^3 work
    for what is ``c * G[l1, k] + d[l1] * sum[l](G[l, k] * v[l])`` once the
    equality is eliminated and the independent sum is split off.  Inlining
    eagerly is what makes other programs more expensive, so each candidate (a
    statement with an equality between its own indices) is substituted, the
    result simplified, and the change kept only when the cost polynomial drops."""
    outputs = set(prog.outputs)
    members = group_of(prog)
    for s in prog.stmts:
        if s.name in outputs or not s.indices or not _has_diagonal_term(s) or s.name in members:
            continue

        def make(f, s=s):
            # Substitution renames any sum of s that would capture an index of f.
            mapping = {n: a for (n, _), a in zip(s.indices, f.idx)}
            return T.substitute_body(s.body, mapping)
        trial = _drop(_replace_access(prog, s.name, make), s.name)
        # (Factoring and reading stored products and sums are left to the run this rule
        # is part of, which may exclude them.  Merging summed terms is not: what a
        # substitution makes cheaper is often a sum over a one-hot tangent that then
        # reads an operand another term reads, an MLP's Hessian 0.16 times as dear.)
        trial = simplify(trial, rules=tuple(r for r in RULES if r.apply not in
                                            (inline_sparse_statements, factor_common_products,
                                             reuse_stored_products,
                                             reuse_stored_sums)))
        if cheaper(trial, prog, strictly=True):
            return trial
    return prog


def _has_diagonal_term(s: Stmt) -> bool:
    gens = {n for n, _ in s.indices}
    return any(isinstance(a, IdxCmp) and a.op == "==" and a.aff.index_vars() <= gens
               and len(a.aff.index_vars()) == 2 for t in s.body for a in t.pred)


def share_common_statements(prog: Program) -> Program:
    """Two statements with equal indices and bodies: the later one reads the earlier.

    Every duplicate is resolved in one application (a sharing can make two
    readers equal in turn), so a program with many copies does not need as many
    rounds of the engine."""
    while True:
        shared = _share_duplicates(prog)
        if shared is prog:
            shared = _share_up_to_order(prog)
            if shared is prog:
                return prog
        prog = shared


def share_shifted_statements(prog: Program) -> Program:
    """A statement equal to another one read one or two steps along a generator: the
    later reads the earlier, shifted.

    The adjoint of a recurrence whose step reads `s[t - 1, j]` through a matrix sums
    `W[m, l] * s_bar[k + 1, m]` over m at step k, and the adjoint of another read of the
    state sums `W[l, j] * s_bar[k, l]` over l at every k: the first is the second at
    k + 1, `[k + 1 < T] * g_bar_sum[k + 1, l]`, a pass of d^2 per step less.  For two
    statements e and s over the same dimensions, reading the same tensors, s's body
    with generator k put at k - c is compared with e's (share_common_statements' keys)
    where both k and k - c are in range, after the brackets those ranges imply are
    dropped; when equal, s[.., k, ..] = [0 <= k + c < N] * e[.., k + c, ..].  Within a
    recurrence group k is a step index and the read must look at a step computed
    before (c in the direction the group steps); outside groups e must come before s
    (a member of a group then, stored whole, too).  Kept when cheaper."""
    members = group_of(prog)
    outputs = set(prog.outputs)
    base = size_facts(prog)
    where = {st.name: k for k, st in enumerate(prog.stmts)}
    by_shape: dict = {}
    for st in prog.stmts:
        if st.indices:
            by_shape.setdefault((tuple(dim_key(d) for _, d in st.indices), _reads(st)),
                                []).append(st)
    for s in prog.stmts:
        if s.name in outputs or not s.indices:
            continue
        group = members.get(s.name)
        for e in by_shape.get((tuple(dim_key(d) for _, d in s.indices), _reads(s)), ()):
            # (a member of another group is stored whole before a later statement runs)
            if e is s or (group is not None and members.get(e.name) is not group) \
                    or (group is None and where[e.name] > where[s.name]):
                continue
            aligned = _aligning_shifts(s, e)
            for p, c in _step_shifts(s, group):
                if (p, c) not in aligned \
                        or _shifted_key(s, p, c, c, base) != _shifted_key(e, p, 0, c, base) \
                        or not _vanishes_beyond(s, p, c, base):
                    continue
                trial = _with_shifted_read(prog, s, e, p, c)
                if trial is not None and cheaper(trial, prog, strictly=True):
                    return trial
    return prog


def _step_shifts(s: Stmt, group) -> list:
    """(generator position, shift) pairs a read of s's twin may take: along a step
    index of s's group, towards steps computed before (1 and 2 steps); along any
    generator outside groups."""
    if group is None:
        return [(p, c) for p in range(len(s.indices)) for c in (1, -1, 2, -2)]
    return [(p, c * step) for p, step in enumerate(group.steps) for c in (1, 2)]


def _aligning_shifts(s: Stmt, e: Stmt) -> set:
    """(generator position p, shift c) under which some read of s, `x[.., k + a, ..]` with
    k s's p-th generator, lines up with a read of e at the same place, `x[.., l + b, ..]`
    with l e's p-th: c = a - b.  Only these shifts can make the bodies equal (a cheap
    test before the keys, which prove brackets)."""
    mine = {n: k for k, (n, _) in enumerate(s.indices)}
    theirs = {n: k for k, (n, _) in enumerate(e.indices)}
    def reads(st: Stmt):
        return [n for n in T.iter_nodes(st.body) if n.__class__ is Access]
    return {(mine[i], -d) for i, j, d in _subscript_offsets(reads(s), reads(e))
            if d and i in mine and mine[i] == theirs.get(j)}


_SHIFTED_KEYS = Memo(20_000)


def _shifted_key(s: Stmt, p: int, by: int, within: int, base: Facts) -> tuple:
    """The key of s with generator p put at p - `by`, where p and p - `within` both lie
    in range, its brackets those ranges imply dropped (s is compared, shifted by c, with
    another statement unshifted: both within c)."""
    def compute():
        name, dim = s.indices[p]
        k = Affine.of(IndexVar(name))
        body = T.substitute_body(s.body, {name: k.shift(-by)}) if by else s.body
        # k - within in range: k >= within, or k - within <= dim - 1
        extra = (IdxCmp(">=", k.shift(-within)) if within > 0
                 else IdxCmp(">=", Affine.dim(dim).shift(-1 + within) - k),)
        facts = base.with_ranges(s.indices).with_pred(extra)
        ranges = dict(s.indices)
        terms = [u for t in body for u in drop_implied_guards_in_term(t, ranges, facts)]
        return _statement_key(Stmt(s.name, s.indices, B.canon_body(terms)))
    return _SHIFTED_KEYS.compute((s, p, by, within, base.key()), compute)


def _vanishes_beyond(s: Stmt, p: int, c: int, base: Facts) -> bool:
    """Is s's body 0 wherever generator p plus c leaves its range (every term's
    brackets infeasible there)?  The read that replaces it is guarded to the range."""
    name, dim = s.indices[p]
    k = Affine.of(IndexVar(name)).shift(c)
    outside = IdxCmp(">=", k - Affine.dim(dim)) if c > 0 else IdxCmp(">=", k.scale(-1).shift(-1))
    facts = base.with_ranges(s.indices).with_pred((outside,))
    return all(facts.with_ranges(t.sums).with_pred(t.pred).proves(Affine(-1)) for t in s.body)


def _with_shifted_read(prog: Program, s: Stmt, e: Stmt, p: int, c: int) -> Program | None:
    """prog with s's body `[0 <= k + c < N] * e[.., k + c, ..]`, or None when a group
    would no longer be the same group."""
    name, dim = s.indices[p]
    k = Affine.of(IndexVar(name)).shift(c)
    guard = (IdxCmp(">=", Affine.dim(dim).shift(-1) - k) if c > 0 else IdxCmp(">=", k))
    idx = tuple(k if j == p else Affine.of(IndexVar(n)) for j, (n, _) in enumerate(s.indices))
    body = B.canon_body([Term(1.0, (), (guard,), ((Access(e.name, idx), 1.0),))])
    trial = Program(prog.name, prog.params,
                    tuple(Stmt(s.name, s.indices, body, s.span) if st is s else st
                          for st in prog.stmts), prog.outputs, prog.tuple_return)
    before = group_of(prog).get(s.name)
    if before is not None:
        try:
            after = group_of(trial).get(s.name)
        except ValueError:
            return None
        if after is None or (after.lead, after.steps) != (before.lead, before.steps) \
                or set(after.members) != set(before.members):
            return None
    return trial


def _share_duplicates(prog: Program) -> Program:
    """Every statement equal to an earlier one (up to the names of its summed
    indices) reads that one instead, all in one rewrite: a derivative with hundreds
    of copies would otherwise be rewritten, and its keys looked up, once per copy.
    Only when there is none, the first statement equal to an earlier one but for
    brackets on its generators is shared (_share_under_outer_brackets)."""
    outputs = set(prog.outputs)
    # Statements that can be equal have the same dimensions and read and call the
    # same tensors and builtins; only those are compared by their full keys.
    buckets: dict = {}
    first_of: dict[str, str] = {}       # a duplicate -> the kept statement it equals
    bracketed = None                    # the first sharing under outer brackets
    negated = set()                     # duplicates whose body is minus the kept one's
    for s in prog.stmts:
        earlier = buckets.setdefault((tuple(dim_key(d) for _, d in s.indices), _reads(s)), [])
        if earlier and s.name not in outputs:
            # Equal up to the names of summed indices (sum[j](x[j]) and sum[l](x[l])).
            key = _statement_key(s)
            first = next((e.name for e in earlier if _statement_key(e) == key), None)
            if first is not None:
                first_of[s.name] = first
                continue                # dropped: later statements are not compared to it
            key = _negated_key(s)
            first = next((e.name for e in earlier if _statement_key(e) == key), None)
            if first is not None:
                first_of[s.name] = first
                negated.add(s.name)
                continue
            if bracketed is None and not first_of:
                bracketed = _share_under_outer_brackets(prog, s, buckets)
        earlier.append(s)
    if not first_of:
        return prog if bracketed is None else bracketed

    def make(f):
        body = B.factor_body(Access(first_of[f.name], f.idx, f.span))
        if f.name in negated:
            return tuple(Term(-t.coeff, t.sums, t.pred, t.factors) for t in body)
        return body
    duplicates = frozenset(first_of)
    return _drop(_replace_accesses(prog, duplicates, make), duplicates)


def _outer_brackets(s: Stmt) -> tuple:
    """The index brackets that every term of s holds and that read s's generators and
    nothing else (directly or through a label: `[dst[e] < n]` in a statement over e):
    they select which entries of s are non-zero, not what its sums add."""
    gens = {g for g, _ in s.indices}
    common = None
    for t in s.body:
        mine = [a for a in t.pred if a.__class__ is IdxCmp and a.op != "%"
                and a.aff.index_vars() and a.aff.index_vars() <= gens]
        common = mine if common is None else [a for a in common if a in mine]
        if not common:
            return ()
    return tuple(common or ())


def _share_under_outer_brackets(prog: Program, s: Stmt, buckets: dict) -> Program | None:
    """s equal to an earlier statement e but for brackets on its generators alone
    (`_outer_brackets`): s is `[those brackets] * e[...]`, a test and a read instead of
    its sums.  A gradient that eliminated a label comparison keeps
    the label's range check on one sum and not on another of the same terms
    (`[dst[e] < n and dst[e] >= 0] * sum[l](...)` beside `sum[l](...)`); its readers
    read e under the brackets, which they often hold already.  A statement that
    already is such a bracketed read is left alone."""
    outer = _outer_brackets(s)
    if not outer or _is_bracketed_read(s):
        return None
    stripped = Stmt(s.name, s.indices,
                    tuple(Term(t.coeff, t.sums, tuple(a for a in t.pred if a not in outer),
                               t.factors) for t in s.body), s.span)
    dims = tuple(dim_key(d) for _, d in s.indices)
    key = _statement_key(stripped)
    first = next((e for e in buckets.get((dims, _reads(stripped)), ())
                  if _statement_key(e) == key), None)
    if first is None:
        return None
    gens = [g for g, _ in s.indices]

    def make(f):
        mapping = dict(zip(gens, f.idx))
        guarded = Term(1.0, (), outer, ((Access(first.name, tuple(Affine.of(IndexVar(g))
                                                                  for g in gens), f.span), 1.0),))
        return B.canon_body([T.substitute_term(guarded, mapping)])
    return _drop(_replace_access(prog, s.name, make), s.name)


def _is_bracketed_read(s: Stmt) -> bool:
    """s is one term of brackets times one read, with no sums."""
    return (len(s.body) == 1 and not s.body[0].sums and len(s.body[0].factors) == 1
            and s.body[0].factors[0][0].__class__ is Access and s.body[0].factors[0][1] == 1.0)


_STATEMENT_KEYS = Memo(50_000)


def _statement_key(s: Stmt) -> tuple:
    """Equal for statements equal up to the names of their generators and sums
    (remembered: the rule runs every round over mostly unchanged statements)."""
    return _STATEMENT_KEYS.compute(s, lambda: _compute_statement_key(s))


_NEGATED_KEYS = Memo(50_000)


def _negated_key(s: Stmt) -> tuple:
    """The key (`_statement_key`) of the statement whose body is minus s's: a
    statement equal to an earlier one up to sign is read as minus that one (the
    factoring of `X0 * (s - r0) + X1 * (r0 - s)` stores both halves)."""
    def compute():
        body = B.canon_body([Term(-t.coeff, t.sums, t.pred, t.factors) for t in s.body])
        return _compute_statement_key(Stmt(s.name, s.indices, body, s.span))
    return _NEGATED_KEYS.compute(s, compute)


def terms_by_structure(s: Stmt) -> tuple:
    """s's terms in an order no index name decides: each keyed by its shape with s's
    generators named by their position and its sums blind to their names
    (`alpha_key`), its coefficient last.  A rule that looks at only some of a long
    statement's terms (factor.PAIR_LIMIT) takes the first in this order, so that
    which it looks at does not depend on what the indices are called; canonical
    order sorts by the names."""
    return _TERMS_BY_STRUCTURE.compute(s, lambda: _order_by_structure(s))


_TERMS_BY_STRUCTURE = Memo(4096)


def _order_by_structure(s: Stmt) -> tuple:
    mapping = {name: Affine.of(IndexVar(f"{_PLACEHOLDER}g{k}"))
               for k, (name, _) in enumerate(s.indices)}
    # (canonical again after the renaming: a bracket's conjuncts are sorted by name)
    keyed = [((repr(alpha_key(_calls_in_order(B.canon_term(T.substitute_term(t, mapping))))),
               t.coeff), k) for k, t in enumerate(s.body)]
    return tuple(s.body[k] for _, k in sorted(keyed))


def _compute_statement_key(s: Stmt) -> tuple:
    return _key_in_order(s, tuple(range(len(s.indices))), alpha_key)


def _key_in_order(s: Stmt, order: tuple, term_key) -> tuple:
    """s's generators renamed by their place in `order` (positions of s.indices), its
    reductions' indices by where they first appear (`max[j](x[i, j])` and
    `max[l](x[i, l])` are the same statement), and each term keyed by `term_key`
    (blind to the names of its sums)."""
    mapping = {s.indices[k][0]: Affine.of(IndexVar(f"{_PLACEHOLDER}g{j}"))
               for j, k in enumerate(order)}
    body = B.canon_body([_calls_in_order(T.substitute_term(t, mapping)) for t in s.body])
    reductions = [n for node in T.iter_nodes(body) if node.__class__ is Reduce
                  for n, _ in node.over]
    if reductions:
        names = {n: f"{_PLACEHOLDER}r{k}" for k, n in enumerate(dict.fromkeys(reductions))}
        body = _rename_body(body, lambda n: names.get(n, n), {})
    return (tuple(dim_key(s.indices[k][1]) for k in order),
            tuple(sorted((term_key(t), t.coeff) for t in body)))


def _calls_in_order(t: Term) -> Term:
    """t with the arguments of its builtin calls (and of calls inside them) in canonical
    order again: renaming the generators changes the order of an argument's terms
    (`abs(-g[j] + g[i])` with i and j exchanged is `abs(g[i] - g[j])`, written in the
    other order).  Value comparisons are left as they are: a tie test sees the order in
    which a backend rounds (see `_sorted_reads`)."""
    if not any(f.__class__ is Apply for f, _ in t.factors):
        return t
    factors = tuple((Apply(f.fn, tuple(B.canon_body([_calls_in_order(u) for u in a])
                                       for a in f.args)) if f.__class__ is Apply else f, p)
                    for f, p in t.factors)
    return Term(t.coeff, t.sums, t.pred, factors)


# ------------------------------------------------------------ sharing up to symmetry
# Statements of more generators than this are not searched for symmetries or
# permutations (the search tries pairs and orders of generators).
SYMMETRY_LIMIT = 4


def _sorted_reads(body, classes: dict) -> tuple:
    """`body` with the indices of every read of a tensor of `classes` (name -> its
    classes of exchangeable positions) sorted within each class by their structural
    order: equal for two reads of a symmetric tensor that differ only in the order
    of exchangeable indices.  Reads inside value comparisons stay as they are: a
    symmetry is one of the values' definitions, and the computed values may differ
    in their last bit where a backend rounds the two orders differently, which an
    equality test (a maximum's ties) would see."""
    def fix_body(b):
        new = tuple(fix_term(t) for t in b)
        return b if all(x is y for x, y in zip(new, b)) else new

    def fix_term(t: Term) -> Term:
        factors = tuple((T.map_factor(f, fix_body, T.keep), p) for f, p in t.factors)
        if any(a[0] is not b[0] for a, b in zip(factors, t.factors)):
            t = Term(t.coeff, t.sums, t.pred, factors)
        factors, changed = [], False
        for f, p in t.factors:
            if f.__class__ is Access and f.name in classes:
                idx = list(f.idx)
                for cls in classes[f.name]:
                    for k, v in zip(cls, sorted((idx[k] for k in cls), key=order_key)):
                        idx[k] = v
                if tuple(idx) != f.idx:
                    f, changed = Access(f.name, tuple(idx), f.span), True
            factors.append((f, p))
        return Term(t.coeff, t.sums, t.pred, tuple(factors)) if changed else t
    return fix_body(body)


def _alpha_key_sorted(t: Term, classes: dict) -> tuple:
    """alpha_key with the reads of symmetric tensors sorted (`_sorted_reads`) after
    each renaming of the sums: the least key over the renamings, so still blind to
    the sums' names."""
    return alpha_key(t, lambda body: _sorted_reads((body,), classes)[0])


_SYMMETRIC_KEYS = Memo(20_000)


def _symmetric_key(s: Stmt, classes: dict, order: tuple) -> tuple:
    """A key equal for statements equal up to the names of their indices and to the
    order of exchangeable indices of the symmetric tensors they read (`classes`,
    restricted to those s reads), s's generators taken in `order` (positions): equal
    keys of s in `order` and of e in its own order mean
    s[g_order[0], ..., g_order[k-1] := x_0, ..., x_k-1] = e[x_0, ..., x_k-1]."""
    return _SYMMETRIC_KEYS.compute(
        (s, tuple(sorted(classes.items())), order),
        lambda: _key_in_order(s, order, lambda t: _alpha_key_sorted(t, classes)))


def _profile(s: Stmt, g: str, classes: dict) -> tuple:
    """Where generator g occurs in s's reads (tensor, position or class of exchangeable
    positions, coefficient), sorted: two generators a symmetry exchanges have the
    same profile (a cheap test before the keys)."""
    out = []
    for node in T.iter_nodes(s.body):
        if node.__class__ is Access:
            cls = classes.get(node.name, ())
            for k, a in enumerate(node.idx):
                for x, c in a.terms:
                    if x.__class__ is IndexVar and x.name == g:
                        where = next((min(q) for q in cls if k in q), k)
                        out.append((node.name, where, c))
    return tuple(sorted(out))


def statement_symmetries(prog: Program) -> dict:
    """{statement: classes of positions of its indices that may be exchanged in any
    order} for the statements of `prog` whose value is unchanged when two of its
    indices are exchanged: by structure, the statement's body with the two
    generators swapped is the same body up to the names of its sums and to the
    exchangeable indices of the symmetric statements it reads (found first, in
    program order).  `z[r, i, j, v] = A[r, j] * A[r, v] * y[i]` is symmetric in its
    last two positions, and so is `[z[l, p, q, r] == m[l, p]] * w[l, p]`.  The
    exchanges found generate the classes (two of them that share a position let
    every order of the three)."""
    found: dict = {}
    for s in prog.stmts:
        k = len(s.indices)
        if k < 2 or k > SYMMETRY_LIMIT:
            continue
        reads = _reads(s)[0]
        classes = {n: c for n, c in found.items() if n in reads}
        cls = _SYMMETRIES.compute((s, tuple(sorted(classes.items()))),
                                  lambda s=s, classes=classes: _symmetries_of(s, classes))
        if cls:
            found[s.name] = cls
    return found


_SYMMETRIES = Memo(20_000)


def _symmetries_of(s: Stmt, classes: dict) -> tuple:
    """The classes of exchangeable positions of s's indices (see statement_symmetries),
    given those of the statements it reads."""
    k = len(s.indices)
    pairs = [(a, b) for a in range(k) for b in range(a + 1, k)
             if dim_key(s.indices[a][1]) == dim_key(s.indices[b][1])]
    if not pairs:
        return ()
    profiles = [_profile(s, g, classes) for g, _ in s.indices]
    own = None
    parent = list(range(k))

    def root(x):
        while parent[x] != x:
            x = parent[x]
        return x
    for a, b in pairs:
        if profiles[a] != profiles[b] or root(a) == root(b):
            continue
        if own is None:
            own = _symmetric_key(s, classes, tuple(range(k)))
        swap = list(range(k))
        swap[a], swap[b] = b, a
        if _symmetric_key(s, classes, tuple(swap)) == own:
            parent[root(b)] = root(a)
    groups: dict = {}
    for x in range(k):
        groups.setdefault(root(x), []).append(x)
    return tuple(tuple(g) for g in groups.values() if len(g) > 1)


def _share_up_to_order(prog: Program) -> Program:
    """The first statement equal to an earlier one with its indices in another order,
    or up to the symmetries of the statements both read (`statement_symmetries`):
    `t[l, p, q] = sum[r](A[l, r] * z[l, q, p, r])` is `u[l, p, q] = sum[r](A[l, r] *
    z[l, q, r, p])` when z is symmetric in its last two positions, and
    `w[a, b] = x[b, a] + 1` is `v[b, a]` for `v[i, j] = x[j, i] + 1`; its readers
    read the earlier one instead, with the indices permuted."""
    outputs = set(prog.outputs)
    buckets: dict = {}
    classes = None
    for s in prog.stmts:
        k = len(s.indices)
        key = (tuple(sorted(dim_key(d) for _, d in s.indices)), _reads(s))
        earlier = buckets.setdefault(key, [])
        if earlier and s.name not in outputs and k <= SYMMETRY_LIMIT:
            if classes is None:
                classes = statement_symmetries(prog)
            reads = _reads(s)[0]
            mine = {n: c for n, c in classes.items() if n in reads}
            for e in earlier:
                if k < 2 and not mine:
                    continue        # (the exact comparison has found what there is)
                want = _symmetric_key(e, mine, tuple(range(k)))
                for order in itertools.permutations(range(k)):
                    if any(dim_key(s.indices[order[j]][1]) != dim_key(e.indices[j][1])
                           for j in range(k)):
                        continue
                    if _symmetric_key(s, mine, order) != want:
                        continue

                    def make(f, first=e.name, order=order):
                        return B.factor_body(Access(first, tuple(f.idx[q] for q in order),
                                                    f.span))
                    return _drop(_replace_access(prog, s.name, make), s.name)
        earlier.append(s)
    return prog


def merge_symmetric_terms(prog: Program) -> Program:
    """c1 t + c2 u -> (c1 + c2) t where u is t up to the names of its sums and to the
    order of the exchangeable indices of the symmetric statements both read
    (`statement_symmetries`): with z symmetric in its last two positions,
    `sum[j, v]([z[r, j, v] == m[r]] * a[j] * b[v]) + sum[j, v]([z[r, j, v] == m[r]] *
    a[v] * b[j])` is twice the first term (the second with j and v renamed)."""
    classes = None
    stmts = list(prog.stmts)
    changed = False
    for k, s in enumerate(stmts):
        if len(s.body) < 2:
            continue
        if classes is None:
            classes = statement_symmetries(prog)
            if not classes:
                return prog
        reads = _reads(s)[0]
        mine = {n: c for n, c in classes.items() if n in reads}
        if not mine:
            continue
        groups: dict = {}
        for t in s.body:
            groups.setdefault((_alpha_signature(t), _alpha_key_sorted(t, mine)), []).append(t)
        if len(groups) == len(s.body):
            continue
        body = B.canon_body([Term(sum(x.coeff for x in ts), ts[0].sums, ts[0].pred, ts[0].factors)
                             for ts in groups.values()])
        stmts[k] = Stmt(s.name, s.indices, body, s.span)
        changed = True
    if not changed:
        return prog
    return Program(prog.name, prog.params, tuple(stmts), prog.outputs, prog.tuple_return)


def inline_tie_weights(prog: Program) -> Program:
    """A statement read only once, as a factor of the weight of a sum over a maximum's
    ties (tensorlang/ties.py), is substituted there when that is cheaper: the weight
    is evaluated in the maximum's pass at the points that tie or beat the best so
    far, so the statement (forward mode's tangent of the entries,
    `d_e[i, j] = a[i, j] * d_b[j] + ...` summed over the ties of `max[j](e[i, j])`)
    need not be stored first.  Each candidate is substituted, the result simplified
    (its terms may merge, `merge_symmetric_terms`) and kept only when the cost
    polynomial drops."""
    from ..ties import tie_sums
    ties = tie_sums(prog)
    if not ties:
        return prog
    outputs = set(prog.outputs)
    members = group_of(prog)
    stored = {s.name for s in prog.stmts}
    counts: dict = {}
    for s in prog.stmts:
        for node in T.iter_nodes(s.body):
            if node.__class__ is Access:
                counts[node.name] = counts.get(node.name, 0) + 1
    for c in prog.stmts:
        if c.name not in ties or c.name in members:
            continue
        _, weight = ties[c.name]
        for f, _ in weight.factors:
            if f.__class__ is not Access or counts.get(f.name) != 1 or f.name in outputs \
                    or f.name in members or f.name not in stored:
                continue
            p = prog.stmt(f.name)

            def make(read, p=p):
                mapping = {n: a for (n, _), a in zip(p.indices, read.idx)}
                return T.substitute_body(p.body, mapping)
            trial = _drop(_replace_access(prog, p.name, make), p.name)
            trial = simplify(trial, rules=tuple(r for r in RULES if r.apply not in
                                                (inline_tie_weights, inline_sparse_statements,
                                                 factor_common_products, reuse_stored_products,
                                                 reuse_stored_sums)))
            if cheaper(trial, prog, strictly=True):
                return trial
    return prog


def remove_dead_statements(prog: Program) -> Program:
    """Statements that no output reads (directly or not) are dropped."""
    live = T.live_statements(prog)
    stmts = tuple(s for s in prog.stmts if s.name in live)
    if len(stmts) == len(prog.stmts):
        return prog
    return Program(prog.name, prog.params, stmts, prog.outputs, prog.tuple_return)


from .contract import (order_contractions, order_contractions_recomputing,  # noqa: E402
                       order_recurrence_steps)
from .factor import FactorWithin, factor_common_products  # noqa: E402
from .hoist import (Budget, finite_everywhere, hoist_invariant_factors,  # noqa: E402
                    hoist_nested_reductions, hoist_reductions, no_larger_than_held)
from .scatter import split_step_scatters  # noqa: E402
from .shiftsum import store_shifted_sums  # noqa: E402
from .summerge import merge_summed_terms, merges_made, merges_off, merging, note_merge  # noqa: E402,E501

def _rule(fn, law: str, cost_guarded: bool = False, late: bool = False) -> Rule:
    return Rule(fn.__name__, fn, law, cost_guarded, late)


# The order matters only for speed: every rule runs until none applies.
RULES = (
    _rule(hoist_nested_reductions, "f(sum_j e) -> f(t[..]) with t[..] = sum_j e a new statement"),
    _rule(hoist_invariant_factors, "a factor using only some loop indices is stored over those"),
    _rule(hoist_reductions, "g(max_j e) -> g(t[..]) with t[..] = max_j e a new statement "
          "(min, logsumexp alike)"),
    _rule(eliminate_equality_brackets, "sum_j [j == a] e -> [0 <= a < n_j] e{j := a}"),
    _rule(collapse_free_sums, "sum_j e -> n_j e when e does not use j"),
    _rule(drop_implied_guards, "[p] e -> e when ranges and other brackets imply p; "
          "[p] e -> 0 when no point of the ranges meets p"),
    _rule(pull_brackets_out_of_calls, "f([p] a + [p] b) -> [p] f(a + b) for f(0) = 0; "
          "[p] f([p] a + [p] b) -> [p] f(a + b) for any f"),
    _rule(fold_constants, "f(c) -> its value for constant arguments"),
    _rule(merge_like_terms, "c1 t + c2 t -> (c1 + c2) t up to renaming of sums"),
    _rule(propagate_copies, "a constant or (scaled) copy statement is substituted into its readers",
          cost_guarded=True),
    # After the rules that clean a term up (its brackets decide how it splits), and
    # before contraction order, which would split each summed term on its own.
    _rule(merge_summed_terms, "sum_S F a + sum_S F b{S := S + c} -> sum_S F h with h = a + b "
          "a new statement over fewer indices", cost_guarded=True),
    _rule(order_contractions,
          "sum_{j,k} a(j) b(j, k) c(k) -> sum_k (sum_j a(j) b(j, k)) c(k), cheapest order first",
          cost_guarded=True),
    _rule(factor_common_products, "F * a + F * b -> F * h with h = a + b a new statement",
          cost_guarded=True),
    _rule(share_common_statements, "two statements with equal bodies -> one"),
    _rule(share_shifted_statements, "s[k] with the body of e at k + c -> [0 <= k + c < N] * "
          "e[k + c]", cost_guarded=True),
    _rule(split_step_scatters, "sum_p [t == y[p]] e in a recurrence's step -> a scatter "
          "statement before the group", cost_guarded=True),
    _rule(merge_symmetric_terms, "c1 t + c2 u -> (c1 + c2) t, u equal to t up to symmetries "
          "of the statements read"),
    _rule(reuse_computed_values, "a builtin call a statement stores -> a read of that statement"),
    _rule(reuse_stored_products,
          "c' F G with c F a statement's body, c' = +-c -> c' / c * (its read) G",
          cost_guarded=True, late=True),
    _rule(reuse_stored_sums, "c' sum_j e G with c sum_j e a statement's body, c' = +-c, G "
          "not using j -> c' / c * (its read) G", cost_guarded=True),
    _rule(store_shifted_sums, "sum_S e(a) + sum_S e(b) in one statement -> h[a] + h[b], "
          "h[z] = sum_S e(z) a new statement", cost_guarded=True),
    _rule(store_repeated_calls, "f(x[..]) in several statements -> x_f[..] = f(x[..]) stored once",
          cost_guarded=True, late=True),
    _rule(share_powers, "pow(x, e) and pow(x, e - 1) -> x_pow and x_pow / x, x_pow = pow(x, e) "
          "stored once, for x bounded away from 0", cost_guarded=True, late=True),
    _rule(remove_dead_statements, "statements no output reads are dropped"),
    _rule(inline_sparse_statements, "a statement with a diagonal term is substituted into its readers",
          cost_guarded=True, late=True),
    _rule(inline_tie_weights, "a statement read once as a tie sum's weight is substituted there",
          cost_guarded=True, late=True),
    _rule(order_recurrence_steps, "a recurrence step's factors that do not use a sum are "
          "taken out of it, where the program gets cheaper", cost_guarded=True, late=True),
)
RULES_BY_NAME = {r.name: r for r in RULES}
# For a program that will be differentiated: its terms stay multiplied out
# (driver.rules_for says why).
# (Rules are told apart by name: `derivative_rules` gives factoring another apply.)
# Reading a product another statement stores is factoring too: a tangent of the read
# (a Hessian's forward mode through a gradient) adds the terms the product held.
_FOR_RUNNING = frozenset({factor_common_products.__name__, store_repeated_calls.__name__,
                          order_recurrence_steps.__name__, share_shifted_statements.__name__,
                          reuse_stored_products.__name__, reuse_stored_sums.__name__,
                          share_powers.__name__,
                          inline_pointwise_statements.__name__, inline_bracketed_copies.__name__})
# (Contraction order there computes every contraction it makes: a read of one that a
# statement stores is factoring too, contract.order_contractions_recomputing.)
# Merging summed terms is factoring too, but it must come before contraction order
# splits the terms, so it is not among the rules run last.
_BEFORE_DERIVATIVE_NOT = _FOR_RUNNING | {merge_summed_terms.__name__}
RULES_BEFORE_DERIVATIVE = tuple(
    Rule(r.name, order_contractions_recomputing, r.law, r.cost_guarded, r.late)
    if r.name == order_contractions.__name__ else r
    for r in RULES if r.name not in _BEFORE_DERIVATIVE_NOT)
# Rules tried on the finished program only (see _share_stored_products).
_LAST = frozenset({reuse_stored_products.__name__, reuse_stored_sums.__name__})
_AFTER_SHARING = _LAST | {remove_dead_statements.__name__}


# Rules for derivatives only (derivative_rules): a program that runs as written keeps
# the statements its author wrote.
INLINE_POINTWISE = Rule(inline_pointwise_statements.__name__, inline_pointwise_statements,
                        "a pointwise statement read at single points -> its body there, "
                        "when no costlier", True, True)
INLINE_BRACKETED = Rule(inline_bracketed_copies.__name__, inline_bracketed_copies,
                        "a copy under brackets c * [P] * x -> substituted into its readers, "
                        "when no costlier", True, True)


def derivative_rules(allowed: tuple, budget: Budget | None = None) -> tuple:
    """RULES for a derivative whose certificate allows the monomials `allowed` (see
    factor.FactorWithin): factoring may store an intermediate that adds one of them;
    and named arguments computed where they are read when no costlier.  Given a
    `budget` (hoist.Budget), a tensor larger than every one the function holds is
    computed where it is read, and not stored to save operations, within the
    certificate's bound (inline_pointwise_statements, factor.FactorWithin,
    `StoreWithin`)."""
    inline = INLINE_POINTWISE if budget is None else Rule(
        INLINE_POINTWISE.name, InlineWithin(budget), INLINE_POINTWISE.law + "; one larger "
        "than every tensor of the function wherever read, within the certificate's bound",
        True, True)
    if not allowed and budget is None:
        return RULES + (INLINE_BRACKETED, inline)
    rules = []
    for r in RULES:
        if r.name == factor_common_products.__name__:
            r = Rule(r.name, FactorWithin(tuple(allowed), budget), r.law, r.cost_guarded, r.late)
        elif budget is not None and r.name in _STORING:
            r = Rule(r.name, StoreWithin(r.apply, budget), r.law, r.cost_guarded, r.late)
        rules.append(r)
    return tuple(rules) + (INLINE_BRACKETED, inline)


# Rules that store a new statement to save operations (factoring checks its own trials).
_STORING = frozenset({store_repeated_calls.__name__, share_powers.__name__,
                      order_contractions.__name__, order_recurrence_steps.__name__,
                      merge_summed_terms.__name__})


@dataclass(frozen=True)
class StoreWithin:
    """A rule of `_STORING` for a derivative with a budget (hoist.Budget): a rewrite that
    stores a statement larger than every tensor the function holds is not made while the
    program keeps the budget's bound without it.  Otherwise the rule and
    inline_pointwise_statements would undo each other round after round (a sine of
    Richardson's steps stored, then computed where read)."""
    rule: object
    budget: Budget

    def __call__(self, prog: Program) -> Program:
        out = self.rule(prog)
        if out is prog:
            return prog
        old = {st.name for st in prog.stmts}
        if any(st.name not in old and self.budget.larger_than_held(st.dims) for st in out.stmts) \
                and self.budget.allows(program_cost(prog)):
            return prog
        return out


_SIMPLIFIED = Memo(2_000)


def _share_stored_products(prog: Program, rules, fired: list) -> Program:
    """`prog`, which the other rules have finished with, with the products and sums
    other statements store read (reuse_stored_products, reuse_stored_sums, to a fixed
    point, dropping the statements no one reads then), when that is cheaper
    (`_pays_everywhere`).  A read hides the constant of the product it stands for:
    interleaved with the other rules (or in the trials of the inlining rules), a
    Hessian's `-0.5 * L_bar / L ** 2` read as `-L_arg_bar / L` no longer cancelled the
    `2` of a tangent, and every term of a larger statement gained a multiplication.
    A read of a sum takes a reader from the statement summed, and the factoring that
    followed then stored other products (a stick-breaking mixture's gradient, 39 K N
    -> 44 K N).  So the reads are made last, where no rule can carry a constant or a
    reader further."""
    shared, trace = prog, []
    for rule in (r for r in rules if r.name in _LAST):
        out = rule.apply(shared)
        trace += [(rule.name, s) for s in changed_statements(shared, out)]
        shared = out
    if shared is prog:
        return prog
    out = run_rules(shared, tuple(r for r in rules if r.name in _AFTER_SHARING), trace)
    if not _pays_everywhere(out, prog):
        return prog
    fired.extend(trace)
    return out


# How deep in simplify calls the program is (a rule's trials simplify too).
_DEPTH = [0]


def _cheapest_with_or_without_merges(prog: Program, rules, out: Program, fired: list) -> tuple:
    """(out, fired), or the program the rules give with no merge of summed terms, and
    its trace, when that one is cheaper at every sampled size.  A merge is chosen by the
    cost of its statement with the contractions ordered, early, before the rules that
    read stored products, share passes and substitute sparse statements have run, or in
    one of their trials: in a few programs it takes from them a cheaper program than it
    makes (sage's Hessian, 15 -> 21 n^4 at equal sizes).  So where one was made, in this
    run or in a rule's trial within it, the whole simplification is made again without
    and compared (for the outermost run only: the trials are part of it)."""
    alone: list = []
    with merges_off():
        other = simplify(prog, rules, alone)
    if cheaper(other, out, strictly=True):
        return other, alone
    return out, fired


def simplify(prog: Program, rules=RULES, trace=None) -> Program:
    """Run the rules to a fixed point (see opt.engine.run_rules).

    Results are remembered by program: a derivative recipe simplifies the same
    function again and again (grad, then hvp, then the Hessian of one f)."""
    # The names the rules would take from the supply are part of the result.  The
    # trace is kept too: reverse mode simplifies its candidates to compare them, and
    # the stage that follows (which records what fired) then finds its program here.
    key = (prog, written_at(prog), rules, position(), merging())
    hit = _SIMPLIFIED.get(key)
    if hit is not None:
        out, end, fired, merged = hit
        advance_to(end)
        if merged:
            note_merge()            # (an enclosing run compares it with none)
        if trace is not None:
            trace.extend(fired)
        return out
    fired: list = []
    start = merges_made()
    _DEPTH[0] += 1
    try:
        out = _simplified(prog, rules, fired)
    finally:
        _DEPTH[0] -= 1
    merged = merges_made() > start
    if merged and not _DEPTH[0]:
        out, fired = _cheapest_with_or_without_merges(prog, rules, out, fired)
    _SIMPLIFIED.put(key, (out, position(), tuple(fired), merged))
    if trace is not None:
        trace.extend(fired)
    return out


def _simplified(prog: Program, rules, fired: list) -> Program:
    """simplify's run of `rules` on `prog`, adding what fired to `fired`."""
    # Common products are factored out of a program the other rules have finished
    # with: factored early, a product's remainders can still merge into one term,
    # and the statement holding them is then only a cost; stored calls come last of
    # all, since a call the factoring leaves in one place needs none.  That first run
    # is the whole of simplifying with the rules for a program that will be
    # differentiated (driver.rules_for), so it is remembered as such: a Hessian's
    # gradient then finds what the gradient's own derivation computed.
    first = tuple(r for r in rules if r.name not in _FOR_RUNNING)
    main = tuple(r for r in rules if r.name not in _LAST)
    if len(first) < len(main):
        out = run_rules(simplify(prog, first, fired), main, fired)
    else:
        out = run_rules(prog, first, fired)
    if len(main) < len(rules):
        out = _share_stored_products(out, rules, fired)
    return out
