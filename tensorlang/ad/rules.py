"""The builtins' derivative rules as the derivative modes apply them.

The rules themselves are records of the builtin table (tensorlang.builtins).
A rule may use the builtin's output; this module decides what body stands for
it.  When a statement's whole body is one builtin call, as in
``a[i] = tanh(x[i])``, the output is a read of that statement, so the
derivative ``1 - a[l] ** 2`` reads the stored value instead of calling
``tanh`` again; anywhere else it is the call itself.

Conventions at kinks and ties (LANGUAGE.md section 5) are stated in the table:
``max``/``min`` pass the whole derivative to the first argument on ties, and
``abs'(0) = 0``.  Every rule is checked against finite differences in the tests.
"""
from __future__ import annotations

import functools

from ..builtins import BUILTINS
from ..ssa import build as B
from ..ssa import names as N
from ..ssa import traverse as T
from ..ssa.ir import Access, Affine, Apply, IndexVar, Reduce, Term, ValCmp

# Known outputs: pairs (call, body equal to the call's value) in the current scope.
Known = tuple


def stored_calls(name: str, indices, body) -> Known:
    """The call that `body`, the body of statement `name` over `indices`, stores.

    It must be the statement's whole body: one term with coefficient 1, no
    sums, one factor to the first power.  A bracket on the term does not
    matter: where it is false the term, and so any derivative through it, is
    zero anyway."""
    if len(body) != 1:
        return ()
    t = body[0]
    if t.coeff != 1 or t.sums or len(t.factors) != 1:
        return ()
    f, p = t.factors[0]
    if p != 1 or not isinstance(f, (Apply, Reduce)):
        return ()
    read = Access(name, tuple(Affine.of(IndexVar(n)) for n, _ in indices))
    return ((f, B.factor_body(read)),)


def output_of(f, known: Known = ()) -> tuple:
    """A body equal to the output of call (or reduction) `f`: a stored value if one
    is known."""
    for call, value in known:
        if call == f:
            return value
    return B.factor_body(f)


def partials(f: Apply, known: Known = ()) -> list:
    """One body per argument of `f`: the partial derivative with respect to it."""
    return BUILTINS[f.fn].partials(output_of(f, known), *f.args)


def is_own_derivative(f) -> bool:
    """Is f a call of a builtin that is its own derivative (exp)?  Then
    d(f ** p) = p * f ** (p - 1) * f * d(arg), which `with_powers_added` writes as
    p * f ** p * d(arg)."""
    if f.__class__ is not Apply or BUILTINS[f.fn].arity != 1:
        return False
    return _own_derivative(f.fn)


@functools.lru_cache(maxsize=None)
def _own_derivative(fn: str) -> bool:
    value = B.factor_body(Access("__value__", ()))
    return [tuple(b) for b in BUILTINS[fn].partials(value, value)] == [value]


def with_powers_added(body, f) -> tuple:
    """`body` with the powers of factor f in each term added into one.  The
    canonical form keeps x * x ** -2 apart (at x = 0 or inf it is NaN, not x ** -1);
    for the derivative of a power of a builtin that is its own derivative the two
    powers come from one product rule, so their sum is the derivative's value, also
    where the call underflows to 0 or overflows (exp(ls) ** -1's derivative at
    ls = 800 is 0, not inf * 0)."""
    out = []
    for t in body:
        total = sum(p for g, p in t.factors if g == f)
        if sum(1 for g, _ in t.factors if g == f) < 2:
            out.append(t)
            continue
        rest = tuple((g, p) for g, p in t.factors if g != f)
        out.append(Term(t.coeff, t.sums, t.pred, rest + (((f, total),) if total else ())))
    return B.canon_body(out)


def alone_where_nonzero(t: Term, body, facts) -> bool:
    """Is t, a term of a statement's `body` without sums, the statement's whole value
    wherever it is non-zero: does every other term have brackets that contradict
    t's (`[k == 0] * x0 + [k >= 1] * a * B[k - 1] / g[k]`)?  Then t = [t's brackets]
    * s at the statement's own point, and the partial of t with respect to a factor
    f ** p is p * [t's brackets] * s / f (see `quotient_partial`)."""
    if t.sums:
        return False
    return all(u is t or facts.with_pred(t.pred + u.pred).proves(Affine(-1)) for u in body)


def quotient_partial(t: Term, k: int, itself: Access) -> tuple | None:
    """The partial of t (alone where non-zero in statement s, read `itself` at t's
    point) with respect to its factor k = f ** p, p < 0, as p * [brackets] * s / f:
    a divisor's partial reads the quotient the statement holds instead of the
    term's other factors again (build.partial_of_term), when it has at least two
    of them; None otherwise."""
    f, p = t.factors[k]
    if p >= 0 or len(t.factors) < 3:
        return None
    return (Term(p, (), t.pred, ((itself, 1.0), (f, -1.0))),)


def fresh_copy(body) -> tuple:
    """body with every internal binder renamed to a fresh one: a copy that can stand
    next to the original (binders stay unique, ssa/names.py)."""
    return N._rename_body(body, lambda n: N.fresh(n) if N.is_internal(n) else n, {})


def _entries(f: Reduce):
    """(fresh index pairs, the filter and the body at them): one more copy of the
    reduction's points, under binders of the supply."""
    over = tuple((N.fresh(n), d) for n, d in f.over)
    mapping = {n: Affine.of(IndexVar(m)) for (n, _), (m, _) in zip(f.over, over)}
    where = tuple(T.substitute(a, mapping) for a in f.where)
    return over, where, fresh_copy(T.substitute_body(f.body, mapping))


def reduction_partial(f: Reduce, known: Known = (), split: bool = False):
    """The derivative of a reduction as a weighted sum of its entries' derivatives:
    (index pairs S, weight W, entry E) with d f = sum_S W * d E.

    * max / min (JAX's rule): W = [where] * [E == f] / (the number of points where
      the entry equals f, at least 1), so the derivative is split equally among
      ties; the count is a sum of brackets, whose derivative is zero, as is a value
      bracket's;
    * logsumexp: W = [where] * exp(E - f), the softmax.

    f's value is the stored statement when `known` has it (rules.stored_calls),
    else a copy of the reduction itself.  With `split`, the result is
    (S, W without the division, E, the reciprocal count or None): reverse mode
    divides the reduction's cotangent once instead of every entry's."""
    over, where, entry = _entries(f)

    def value():
        return fresh_copy(output_of(f, known))
    if f.op in ("max", "min"):
        c_over, c_where, c_entry = _entries(f)
        count = B.canon_body([Term(1.0, c_over, c_where + (ValCmp("==", c_entry, value()),), ())])
        hits = B.canon_body([Term(1.0, (), where + (ValCmp("==", entry, value()),), ())])
        # 1 / max(count, 1): where some entry equals f the count is at least 1; where
        # none does (no point, a NaN) the indicator is 0 everywhere, and 0 / 0 must not
        # appear when a rewrite takes the division out of the sum over the entries.
        inverse = B.factor_body(Apply("max", (count, B.const(1.0))), -1.0)
        if split:
            return over, hits, entry, inverse
        return over, B.mul(hits, inverse, set()), entry
    shifted = B.sub(entry, value())
    weight = B.canon_body([Term(1.0, (), where, ((Apply("exp", (shifted,)), 1.0),))])
    return (over, weight, entry, None) if split else (over, weight, entry)


__all__ = ["partials", "stored_calls", "output_of", "reduction_partial", "fresh_copy"]
