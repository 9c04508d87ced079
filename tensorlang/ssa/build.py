"""Canonical construction of Tensor SSA bodies.

Bodies are kept in one normal form: factors sorted with equal factors merged
into powers, predicate atoms normalised, sorted and de-duplicated, constant
atoms folded, like terms merged and terms sorted.  Every constructor here
returns canonical output, so structural equality means "the same expression"
and printing is deterministic.
"""
from __future__ import annotations

import math
from contextlib import contextmanager
from contextvars import ContextVar

from . import names as N
from . import traverse as T
from .ir import Affine, AnyOf, Group, IdxCmp, NotAtom, Reduce, Term, order_key

# Products of sums are expanded into sums of products up to this many terms;
# beyond it the factor is kept as a Group so a long product cannot explode.
EXPANSION_LIMIT = 64


# ------------------------------------------------------------------ zero terms
class ZeroTerms:
    """What the builder does with a term whose coefficient is zero, while the front
    end lowers a module.

    A zero coefficient is a strong zero, so the normal form drops such a term, and
    with it every read it holds.  The language still requires every read the source
    writes to be proven inside its tensor, so the bounds stage must see those reads:
    lowering notes in `dropped` that a term which reads something went away, and
    then lowers the module once more with `keep` set, for the bounds stage alone.
    """

    def __init__(self, keep: bool):
        self.keep = keep
        self.dropped = False


# Unset outside lowering: the simplifier and the derivative recipes drop zero
# terms silently (a context variable, so a compilation in another thread is not
# affected).
_ZERO_TERMS: ContextVar[ZeroTerms | None] = ContextVar("zero_terms", default=None)


@contextmanager
def zero_terms(keep: bool):
    """Lowering inside: zero terms dropped (noting it) or kept, as `keep` says."""
    mode = ZeroTerms(keep)
    token = _ZERO_TERMS.set(mode)
    try:
        yield mode
    finally:
        _ZERO_TERMS.reset(token)


def zero_terms_dropped_silently() -> bool:
    """Outside lowering: the normal form is then a function of the terms alone."""
    return _ZERO_TERMS.get() is None


def _note_dropped(reads: bool) -> None:
    """While lowering, note that something which may read a tensor (`reads`) was
    dropped as zero."""
    mode = _ZERO_TERMS.get()
    if mode is not None and reads:
        mode.dropped = True


def _keeps_zero(reads: bool) -> bool:
    """Must a zero term (or a factor raised to the power 0) stay?  Only in the
    bounds stage's copy of the program; a drop is noted otherwise."""
    mode = _ZERO_TERMS.get()
    if mode is not None and mode.keep:
        return True
    _note_dropped(reads)
    return False


def _reads(t: Term) -> bool:
    return bool(t.factors or t.pred)


# ------------------------------------------------------------------ index atoms
def norm_cmp(op: str, left: Affine, right: Affine, span=None):
    """`left op right` over integers as one canonical IdxCmp, or True/False."""
    d = left - right
    if op == ">=":
        atom = IdxCmp(">=", d, span)
    elif op == ">":
        atom = IdxCmp(">=", d.shift(-1), span)
    elif op == "<=":
        atom = IdxCmp(">=", d.scale(-1), span)
    elif op == "<":
        atom = IdxCmp(">=", d.scale(-1).shift(-1), span)
    elif op in ("==", "!="):
        if d.terms and d.terms[0][1] < 0:
            d = d.scale(-1)
        atom = IdxCmp(op, d, span)
    else:
        raise ValueError(op)
    return fold_idxcmp(atom)


def _gcd_normalise(atom: IdxCmp):
    """Divide by the gcd of the coefficients (integers: floor the constant for >=)."""
    if not atom.aff.terms:
        return atom
    if atom.op == "%":
        return _normalise_divisibility(atom)
    g = 0
    for _, c in atom.aff.terms:
        g = math.gcd(g, abs(c))
    if g <= 1:
        return atom
    terms = tuple((a, c // g) for a, c in atom.aff.terms)
    if atom.op == ">=":
        return IdxCmp(">=", Affine(atom.aff.const // g, terms), atom.span)
    if atom.aff.const % g != 0:
        return atom.op == "!="       # g*x == c has no integer solution
    return IdxCmp(atom.op, Affine(atom.aff.const // g, terms), atom.span)


def _normalise_divisibility(atom: IdxCmp):
    """aff % q == 0 with coefficients and constant reduced mod q (sign made canonical)."""
    q = atom.mod
    terms = [(a, c % q) for a, c in atom.aff.terms]
    aff = Affine.make(atom.aff.const % q, terms)
    if aff.is_const:
        return aff.const % q == 0
    g = q
    for _, c in aff.terms:
        g = math.gcd(g, c)
    if aff.const % g != 0:
        return False
    if g > 1:
        q //= g
        aff = Affine(aff.const // g, tuple((a, c // g) for a, c in aff.terms))
        if q == 1:
            return True
    return IdxCmp("%", aff, atom.span, q)


def fold_idxcmp(atom: IdxCmp):
    aff = atom.aff.in_plain_sizes()
    if aff is not atom.aff:
        atom = IdxCmp(atom.op, aff, atom.span, atom.mod)
    if atom.op in ("==", "!=") and atom.aff.terms and atom.aff.terms[0][1] < 0:
        # Renaming (of sizes when inlining, of indices when substituting) can
        # change which atom sorts first; the first coefficient stays positive.
        atom = IdxCmp(atom.op, atom.aff.scale(-1), atom.span, atom.mod)
    atom = _gcd_normalise(atom)
    if isinstance(atom, bool):
        return atom
    if atom.aff.is_const:
        k = atom.aff.const
        return {">=": k >= 0, "==": k == 0, "!=": k != 0}[atom.op]
    return atom


# The comparison that holds exactly where a given one does with its sides swapped:
# `0.0 < x` is `x > 0.0` everywhere, NaN included.
MIRRORED_OP = {"<": ">", ">": "<", "<=": ">=", ">=": "<=", "==": "==", "!=": "!="}


def negate_atom(atom):
    """The atom's negation, kept as a single atom."""
    if isinstance(atom, IdxCmp) and atom.op == "%":
        return NotAtom(atom)
    if isinstance(atom, IdxCmp):
        if atom.op == ">=":
            return IdxCmp(">=", atom.aff.scale(-1).shift(-1), atom.span)
        return IdxCmp("!=" if atom.op == "==" else "==", atom.aff, atom.span)
    if isinstance(atom, NotAtom):
        return atom.atom
    if isinstance(atom, AnyOf):
        # not (A or B) = not A and not B: a conjunction, returned as AnyOf of one alt.
        conj = []
        for alt in atom.alts:
            conj.append(negate_conj(alt))
        return conj_all(conj)
    return NotAtom(atom)


def negate_conj(pred):
    """not (a and b and ...) as a single atom (a disjunction), or a bool."""
    if not pred:
        return False
    alts = [(negate_atom(a),) for a in pred]
    return any_of(alts)


def any_of(alts):
    """A disjunction of conjunctions, simplified: returns an atom, True or False."""
    flat = []
    for alt in alts:
        # (a or b) or c: an alternative that is itself one disjunction is spliced in.
        if len(alt) == 1 and isinstance(alt[0], AnyOf):
            flat.extend(alt[0].alts)
        else:
            flat.append(alt)
    clean = []
    for alt in flat:
        alt = canon_pred(alt)
        if alt is None:
            continue            # a false alternative
        if alt == ():
            return True
        if alt not in clean:
            clean.append(alt)
    if not clean:
        return False
    if len(clean) == 1 and len(clean[0]) == 1:
        return clean[0][0]
    clean.sort(key=lambda alt: tuple(order_key(a) for a in alt))
    return AnyOf(tuple(clean))


def conj_all(atoms):
    """A conjunction of atoms (or bools) as one atom: an AnyOf with a single alternative."""
    pred = canon_pred(tuple(a for a in atoms))
    if pred is None:
        return False
    if pred == ():
        return True
    if len(pred) == 1:
        return pred[0]
    return AnyOf((pred,))


def canon_pred(atoms):
    """Flatten, fold and sort a conjunction; None when it is false."""
    out = []
    stack = list(atoms)
    while stack:
        a = stack.pop(0)
        if a is True:
            continue
        if a is False:
            return None
        if isinstance(a, IdxCmp):
            a = fold_idxcmp(a)
            if a is True:
                continue
            if a is False:
                return None
        if isinstance(a, AnyOf) and len(a.alts) == 1:
            stack = list(a.alts[0]) + stack
            continue
        if isinstance(a, AnyOf):
            # Substitution may have changed the alternatives: put them back in order.
            a = any_of(list(a.alts))
            if a is True:
                continue
            if a is False:
                return None
            if not isinstance(a, AnyOf):
                stack.insert(0, a)
                continue
        if a not in out:
            out.append(a)
    # [e == 0] and [e != 0] of one index form together are false (a rotation written
    # with [r != 1] * ([r == 1] * ...) leaves such terms, computed for nothing)
    unequal = [a.aff for a in out if a.__class__ is IdxCmp and a.op == "!="]
    if unequal and any(a.__class__ is IdxCmp and a.op == "==" and a.aff in unequal
                       for a in out):
        return None
    out.sort(key=order_key)
    return tuple(out)


# ------------------------------------------------------------------ terms and bodies
def canon_term(t: Term) -> Term | None:
    """Sorted, merged factors and a canonical predicate; None for a zero term."""
    if t.coeff == 0 and not _keeps_zero(_reads(t)):
        return None
    pred = canon_pred(t.pred)
    if pred is None:
        return None
    # Powers of one factor add only when that keeps every IEEE result (only a
    # zero coefficient is a strong zero, nothing else is rewritten away):
    # - of the same sign: x * x ** -1 is NaN where x is 0, inf or NaN, never 1;
    # - integer with integer: x ** 0.5 is NaN for x < 0, so x ** 0.5 * x ** 0.5 is
    #   not x, and x * x ** 0.5 is -inf at -inf where x ** 1.5 is inf;
    # - non-integer powers only to a non-integer total (NaN for x < 0 either way).
    powers: dict = {}
    order = []
    for f, p in t.factors:
        if p == 0 and not _keeps_zero(True):
            continue
        key = (f, p > 0, float(p).is_integer())
        if key not in powers:
            powers[key] = []
            order.append(key)
        powers[key].append(p)
    factors = []
    for key in order:
        ps = powers[key]
        total = math.fsum(ps)
        if key[2] or len(ps) == 1 or not total.is_integer():
            factors.append((key[0], total))
        else:
            factors.extend((key[0], p) for p in ps)
    factors.sort(key=lambda fp: (order_key(fp[0]), fp[1]))
    return Term(float(t.coeff), t.sums, pred, tuple(factors))


def _expand_unit_groups(t: Term) -> list[Term] | None:
    """Multiply out the groups a term holds to the first power, as parsing would.

    Parsing distributes `c * (a + b)` unless the product of the group sizes
    exceeds EXPANSION_LIMIT, so the normal form must do exactly the same or a
    printed program would not parse back to itself.  None when nothing changes.
    """
    groups = [k for k, (f, p) in enumerate(t.factors) if isinstance(f, Group) and p == 1]
    if not groups:
        return None
    size = 1
    for k in groups:
        size *= max(len(t.factors[k][0].body), 1)
    if size > EXPANSION_LIMIT:
        return None
    rest = Term(t.coeff, t.sums, t.pred,
                tuple(fp for k, fp in enumerate(t.factors) if k not in groups))
    out = [rest]
    for k in groups:
        body = t.factors[k][0].body
        out = [mul_terms(a, u, set()) for a in out for u in body]
    return out


def canon_body(terms) -> tuple:
    return merged_body(part for t in terms for part in term_parts(t))


def term_parts(t: Term) -> list:
    """What `canon_body` adds to a body for term t, in order: ((sums, pred, factors),
    coefficient) of its canonical form, or of each term its unit groups multiply out
    to; nothing for a zero term.  It depends on t alone (and, while lowering, on
    `zero_terms`), so a rule that builds many bodies from one statement's terms may
    remember it per term."""
    out = []
    pending = [t]
    while pending:
        t = canon_term(pending.pop(0))
        if t is None:
            continue
        expanded = _expand_unit_groups(t)
        if expanded is not None:
            pending = expanded + pending
            continue
        out.append(((t.sums, t.pred, t.factors), t.coeff))
    return out


def merged_body(parts) -> tuple:
    """The canonical body of `term_parts` in order: like terms merged (coefficients
    added in order), zero terms dropped, sorted."""
    merged: dict = {}
    order = []
    for key, coeff in parts:
        if key in merged:
            merged[key] += coeff
        else:
            merged[key] = coeff
            order.append(key)
    out = []
    for key in order:
        c = merged[key]
        sums, pred, factors = key
        if c == 0 and not _keeps_zero(bool(factors or pred)):
            continue
        out.append(Term(c, sums, pred, factors))
    out.sort(key=order_key)
    return tuple(out)


def const(value: float) -> tuple:
    return canon_body([Term(float(value))])


def factor_body(f, power: float = 1.0) -> tuple:
    return (Term(1.0, (), (), ((f, float(power)),)),)


def pred_body(pred) -> tuple:
    return canon_body([Term(1.0, (), tuple(pred), ())])


def add(a, b) -> tuple:
    return canon_body(a + b)


def scale(a, k: float) -> tuple:
    return canon_body([Term(t.coeff * k, t.sums, t.pred, t.factors) for t in a])


def neg(a) -> tuple:
    return scale(a, -1.0)


def sub(a, b) -> tuple:
    return add(a, neg(b))


def with_pred(body, pred) -> tuple:
    return canon_body([Term(t.coeff, t.sums, tuple(pred) + t.pred, t.factors) for t in body])


# ------------------------------------------------------------------ index renaming
def rename_sums_apart(t: Term, avoid: set[str]) -> Term:
    """Rename t's summed indices that collide with `avoid`."""
    clash = {n for n, _ in t.sums if n in avoid}
    return T.rename_sums(t, clash, set(avoid) | T.index_names(t)) if clash else t


def mul_terms(a: Term, b: Term, scope: set[str]) -> Term:
    """The product of two terms; b's summed indices are renamed apart first.

    Free indices of either term are in `scope` and no binder reuses a scope
    name.  b's binders, nested ones included, that also occur in a or in the
    scope are renamed: b may be a copy of a part of a (squaring a body), and
    the product must not bind one name twice along a path.
    """
    avoid = set(scope) | T.index_names(a)
    clash = T.binder_names(b) & avoid
    if clash:
        if any(N.is_internal(n) for n in clash):
            b = N.freshen(b, clash)
        else:
            b = rename_sums_apart(b, avoid)
    return Term(a.coeff * b.coeff, a.sums + b.sums, a.pred + b.pred, a.factors + b.factors)


def mul(a, b, scope: set[str]) -> tuple:
    """Product of two bodies, expanded into a sum of products when small enough."""
    if not a or not b:
        # An empty body is a zero: a false bracket or, outside the bounds stage's
        # copy of the program, a zero coefficient.
        _note_dropped(any(_reads(t) for t in a + b))
        return ()
    if len(a) * len(b) > EXPANSION_LIMIT:
        if len(a) > 1:
            a = factor_body(Group(a))
        if len(b) > 1:
            b = factor_body(Group(b))
    return canon_body([mul_terms(x, y, scope) for x in a for y in b])


def single_simple_term(body) -> Term | None:
    """The only term of a body when it has no sums and no predicate."""
    if len(body) == 1 and not body[0].sums and not body[0].pred:
        return body[0]
    return None


def _distributes(t: Term, p: float) -> bool:
    """Is (c * f1 ** q1 * ...) ** p the same, at every input, as c ** p * f1 ** (q1 * p) * ...?

    For an integer p it is, unless some x ** q is NaN for negative x (q not an
    integer) while x ** (q * p) is not (q * p an integer): (x ** 0.5) ** 2 is not x;
    or both powers are negative: 1 / (1 / x) is 0 where 1 / x overflows, not x.
    A non-integer p distributes only over c * x with c > 0: (x * y) ** 0.5 is real
    where x and y are both negative, x ** 0.5 * y ** 0.5 is NaN, and (x ** 2) ** 0.5
    is |x|, not x.
    """
    if float(p).is_integer():
        return all((float(q).is_integer() or not float(q * p).is_integer())
                   and (q > 0 or p > 0) for _, q in t.factors)
    return t.coeff > 0 and len(t.factors) <= 1 and all(q == 1 for _, q in t.factors)


def power(base, p: float) -> tuple:
    """base ** p for a constant p."""
    if p == 0:
        if _keeps_zero(any(_reads(t) for t in base)):
            # x ** 0 is 1 even where x is NaN, but x is still read as written.
            return add(const(1.0), scale(base, 0.0))
        return const(1.0)
    if p == 1:
        return base
    t = single_simple_term(base)
    if t is not None and _distributes(t, p):
        c = t.coeff
        try:
            cp = c ** p
        except (OverflowError, ZeroDivisionError):
            cp = None
        if cp is not None and isinstance(cp, float) and math.isfinite(cp):
            return canon_body([Term(cp, (), (), tuple((f, q * p) for f, q in t.factors))])
    if not base and p > 0:
        return ()
    return factor_body(Group(base), p)


def factor_power(f, p: float) -> tuple:
    """f ** p as a body; a group raised to the first power is expanded in place,
    so derivatives never leave a `(a + b) ** 1.0` that parsing would distribute."""
    if isinstance(f, Group):
        return power(f.body, p)
    return factor_body(f, p)


def partial_of_term(t: Term, k: int, scope: set[str]) -> tuple:
    """d t / d f_k without its sums: c * p * [P] * f_k^(p-1) * (the other factors).

    The one place forward mode (which multiplies it by the tangent of f_k) and
    reverse mode (which multiplies it by the cotangent) build it.
    """
    f, p = t.factors[k]
    others = t.factors[:k] + t.factors[k + 1:]
    rest = (Term(t.coeff * p, (), t.pred, others),)
    if p != 1:
        rest = mul(rest, factor_power(f, p - 1.0), scope)
    return rest


def divide(a, b, scope: set[str]) -> tuple:
    return mul(a, power(b, -1.0), scope)


# ------------------------------------------------------------ scope hygiene
def _has_inner_shadowing(body, scope: frozenset) -> bool:
    """Does some sum or reduction in body bind a name already bound around it?"""
    for t in body:
        names = [n for n, _ in t.sums]
        if not scope.isdisjoint(names):
            return True
        inner = scope.union(names)
        for f, _ in t.factors:
            if isinstance(f, Reduce):
                over = [n for n, _ in f.over]
                if not inner.isdisjoint(over) or _has_inner_shadowing(
                        f.body, inner.union(over)) or any(
                        _has_inner_shadowing(b, inner.union(over))
                        for b in T.nested_bodies(f.domain())):
                    return True
        if any(_has_inner_shadowing(b, inner) for b in T.nested_bodies(t)):
            return True
    return False


def _binders_distinct(body, scope) -> bool:
    """Does every sum and reduction in body bind names no other binder in it, nor
    the scope, uses?  Then nothing shadows (a quick test, one walk)."""
    seen = set(scope)
    count = len(seen)
    for n in T.iter_nodes(body):
        cls = n.__class__
        if cls is Term or cls is Reduce:
            for name, _ in T.binders_of(n):
                seen.add(name)
                count += 1
                if len(seen) != count:
                    return False
    return True


def separate_binders(body, scope: set[str]) -> tuple:
    """Rename summed indices so that no binder shadows one in an enclosing scope.

    Only the front end needs this: a user may write `sum[i](x[i]) / sum[i](y[i])`,
    which puts one sum over i inside a group the other binds around.  Inside the
    derivative recipes binders are unique (names.py) and nothing shadows.
    """
    if _binders_distinct(body, scope) or not _has_inner_shadowing(body, frozenset(scope)):
        return body
    out = []
    for t in body:
        t = rename_sums_apart(t, scope)
        inner = set(scope) | {n for n, _ in t.sums}
        out.append(T.map_term_children(t, lambda b, inner=inner: separate_binders(b, inner),
                                       T.keep,
                                       lambda r, inner=inner: _separate_reduce(r, inner)))
    return canon_body(out)


def _separate_reduce(r: Reduce, scope: set[str]) -> Reduce:
    """A reduction whose indices clash with the enclosing scope renamed apart, and the
    sums inside it separated from everything bound around them."""
    clash = {n for n, _ in r.over} & scope
    if clash:
        r = T.rename_reduce(r, clash, set(scope) | T.index_names(r))
    inner = set(scope) | {n for n, _ in r.over}
    return T.map_reduce_scoped(r, lambda b: separate_binders(b, inner), T.keep)


def map_atom_bodies(a, fn):
    """The atom with fn applied to every body it holds (the sides of value comparisons)."""
    return T.map_atom(a, fn, T.keep)


def separate_program_binders(prog):
    """separate_binders on every statement (statement indices are the outer scope)."""
    from .ir import Program, Stmt
    stmts = []
    for s in prog.stmts:
        body = separate_binders(s.body, {n for n, _ in s.indices})
        stmts.append(s if body is s.body else Stmt(s.name, s.indices, body, s.span))
    if all(a is b for a, b in zip(stmts, prog.stmts)):
        return prog
    return Program(prog.name, prog.params, tuple(stmts), prog.outputs, prog.tuple_return)
